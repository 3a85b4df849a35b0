//! Code generation: the work-group function (regions in work-item loops, control flow with
//! barriers once per group, expanded variables in slots of the group's arena), the reference
//! form (the body as written, one thread per work-item), and the kernel's item.

use std::collections::HashSet;

use proc_macro2::{Span, TokenStream as Tokens};
use quote::{ToTokens, format_ident, quote};
use syn::spanned::Spanned;
use syn::visit::Visit;
use syn::visit_mut::{self, VisitMut};
use syn::{BinOp, Expr, Ident, ItemFn, Stmt};

use crate::analyze::{Analysis, Else, Node, Refs, Written, counter_name, written_names};
use crate::bounds::{Bounds, Fact};
use crate::prepare::{Body, call_name, macro_args};
use crate::{Param, ParamKind, UNIFORM_INTRINSICS, VARYING_INTRINSICS};

pub(crate) fn emit(
    f: &ItemFn,
    params: &[Param],
    body: &Body,
    a: &Analysis,
    krate: &Tokens,
) -> Tokens {
    let name = &f.sig.ident;
    let name_str = name.to_string();
    let vis = &f.vis;
    let docs: Vec<_> = f
        .attrs
        .iter()
        .filter(|a| a.path().is_ident("doc"))
        .collect();
    let others: Vec<_> = f
        .attrs
        .iter()
        .filter(|a| !a.path().is_ident("doc"))
        .collect();

    let locals: HashSet<String> = params
        .iter()
        .filter(|p| matches!(p.kind, ParamKind::Local))
        .map(|p| p.name.to_string())
        .chain(body.local_arrays.iter().map(|l| l.name.to_string()))
        .collect();
    let written: HashSet<String> = a.written.keys().cloned().collect();

    // Parameters, as each form binds them.
    let mut param_decls = Vec::new();
    let mut ref_param_decls = Vec::new();
    let mut param_list = Vec::new();
    for p in params {
        let (n, t, i) = (&p.name, &p.elem, p.index);
        match &p.kind {
            ParamKind::Read => {
                param_list
                    .push(quote!(#krate::__rt::Param::buffer::<#t>(#krate::__rt::Mode::Read)));
                let d = quote!(let #n: &[#t] = __args.read::<#t>(#i););
                param_decls.push(d.clone());
                ref_param_decls.push(d);
            }
            ParamKind::Written { write_only } => {
                let mode = if *write_only {
                    quote!(Write)
                } else {
                    quote!(ReadWrite)
                };
                param_list
                    .push(quote!(#krate::__rt::Param::buffer::<#t>(#krate::__rt::Mode::#mode)));
                let d = match a.written[&n.to_string()] {
                    Written::Own { dim0 } => {
                        let check = dim0.then(|| {
                            let msg = format!(
                                "kernel '{name_str}' writes `{n}` at global_id(0), one element per work-item only in a launch of one dimension: launch it in one dimension, or index by global_linear_id()"
                            );
                            quote!(assert!(__grp.global_size(1) == 1 && __grp.global_size(2) == 1, #msg);)
                        });
                        quote! {
                            #check
                            // SAFETY: the macro checked that every index of this buffer in the
                            // kernel is the work-item's own (its global linear id, or its global
                            // id in a launch one item wide past dimension 0, checked above).
                            let #n = unsafe { __args.owned_mut::<#t>(#i) };
                        }
                    }
                    Written::Shared => quote!(let #n = __args.shared_mut::<#t>(#i);),
                    Written::Disjoint => quote! {
                        // SAFETY: the kernel's `unsafe(disjoint(..))` promise: no element of
                        // this buffer is accessed by two work-items of a launch.
                        let #n = unsafe { __args.owned_mut::<#t>(#i) };
                    },
                };
                param_decls.push(d.clone());
                ref_param_decls.push(d);
            }
            ParamKind::Local => {
                param_list.push(quote!(#krate::__rt::Param::local::<#t>()));
                param_decls.push(quote!(let #n = __args.local_array::<#t>(#i);));
                ref_param_decls.push(
                    quote!(let #n = #krate::__rt::OracleLocal::<#t>::new(__args.local_len(#i));),
                );
            }
            ParamKind::Scalar => {
                param_list.push(quote!(#krate::__rt::Param::scalar::<#t>()));
                let d = quote!(let #n: #t = __args.scalar::<#t>(#i););
                param_decls.push(d.clone());
                ref_param_decls.push(d);
            }
        }
        param_decls.push(quote!(let _ = &#n;));
        ref_param_decls.push(quote!(let _ = &#n;));
    }

    // Local arrays and expanded variables, carved from the arena in the order the launch
    // sized it.
    let mut carve = Vec::new();
    let mut ref_arrays = Vec::new();
    let mut local_sizes = Vec::new();
    for l in &body.local_arrays {
        let (n, t, len) = (&l.name, &l.elem, &l.len);
        carve.push(quote!(let #n = __carve.array::<#t>(#len); let _ = &#n;));
        ref_arrays.push(quote!(let #n = #krate::__rt::OracleLocal::<#t>::new(#len); let _ = &#n;));
        local_sizes.push(quote!(::core::mem::size_of::<#t>() * (#len)));
    }
    let mut slot_sizes = Vec::new();
    let mut expanded_info = Vec::new();
    for v in &a.expanded {
        let var = &body.vars[v];
        let t = var.ty.as_ref().expect("checked by the analysis");
        let slot = slot_name(v);
        carve.push(quote!(let #slot = __carve.array::<#t>(__items);));
        slot_sizes.push(quote!(::core::mem::size_of::<#t>()));
        let original = &var.original;
        expanded_info.push(
            quote!(#krate::Expanded { name: #original, bytes: ::core::mem::size_of::<#t>() }),
        );
    }
    let carver = (!carve.is_empty()).then(|| quote!(let mut __carve = __args.scratch();));

    let reads: HashSet<String> = params
        .iter()
        .filter(|p| matches!(p.kind, ParamKind::Read))
        .map(|p| p.name.to_string())
        .collect();
    let mut invariant: HashSet<String> = a.uniform.iter().cloned().collect();
    invariant.extend(
        params
            .iter()
            .filter(|p| matches!(p.kind, ParamKind::Scalar | ParamKind::Read))
            .map(|p| p.name.to_string()),
    );
    let changing = crate::analyze::changing_arrays(body, params);
    let mut g = Gen {
        a,
        body,
        locals: &locals,
        written: &written,
        reads: &reads,
        invariant: &invariant,
        changing: &changing,
        krate,
        strips: Vec::new(),
        counters: Vec::new(),
    };
    let group_code = g.nodes(&a.nodes);
    let strips = &g.strips;
    let mut ref_body: Vec<Stmt> = body.stmts.clone();
    let mut rw = Rewrite::new(&g, Mode::Reference, 0);
    for s in &mut ref_body {
        rw.visit_stmt_mut(s);
    }

    let uniform_names: Vec<&str> = a
        .uniform
        .iter()
        .map(|v| body.vars[v].original.as_str())
        .collect();
    let recomputed_names: Vec<&str> = a
        .recomputed
        .iter()
        .map(|v| body.vars[v].original.as_str())
        .collect();
    let breadth_first = &a.breadth_first;
    let class = |axis: &str, stride: u8| match stride {
        0 => format!("{axis}0"),
        1 => format!("{axis}1"),
        _ => format!("{axis}X"),
    };
    let loops = a.loops.iter().map(|l| {
        let counter = &l.counter;
        let order = if breadth_first.contains(counter) {
            "breadth-first"
        } else if strips.contains(counter) {
            "strips"
        } else {
            "depth-first"
        };
        let accesses = l.accesses.iter().map(|(text, w, lc)| {
            let (w, lc) = (class("W", *w), class("L", *lc));
            quote!((#text, #w, #lc))
        });
        quote! {
            #krate::LoopInfo { counter: #counter, accesses: &[#(#accesses),*], order: #order }
        }
    });
    let regions = a.regions;
    let items = &body.items;

    quote! {
        #(#docs)*
        #(#others)*
        #[allow(non_camel_case_types)]
        #[derive(Clone, Copy, Debug)]
        #vis struct #name;

        impl #name {
            /// What the `#[kernel]` macro made of this kernel.
            #[allow(dead_code)]
            pub const INFO: #krate::KernelInfo = #krate::KernelInfo {
                name: #name_str,
                regions: #regions,
                expanded: &[#(#expanded_info),*],
                bytes_per_item: { #(#items)* 0 #(+ #slot_sizes)* },
                uniform: &[#(#uniform_names),*],
                recomputed: &[#(#recomputed_names),*],
                breadth_first: &[#(#breadth_first),*],
                strips: &[#(#strips),*],
                loops: &[#(#loops),*],
                local_bytes: { #(#items)* 0 #(+ #local_sizes)* },
            };

            #[allow(unused_labels, unused_variables, unused_mut, unused_braces, unused_parens, non_snake_case, clippy::all)]
            fn __build() -> #krate::Kernel {
                #(#items)*
                const LOCAL_ARRAYS: &[usize] = &[#(#local_sizes),*];
                const EXPANDED: &[usize] = &[#(#slot_sizes),*];
                #krate::Kernel::__compiled(
                    &Self::INFO,
                    ::std::vec![#(#param_list),*],
                    LOCAL_ARRAYS,
                    EXPANDED,
                    |__run: &#krate::__rt::GroupRun<'_>| {
                        #[inline(always)]
                        fn __group<const __FLAT: bool>(__grp: &#krate::__rt::WorkGroup<'_>, __args: &#krate::__rt::GroupArgs<'_>) {
                            #[allow(unused_imports)]
                            use #krate::__rt::bound::{IsIndex as _, NotIndex as _};
                            #(#param_decls)*
                            let __ls0 = __grp.local_size(0);
                            let __ls1 = if __FLAT { 1 } else { __grp.local_size(1) };
                            let __ls2 = if __FLAT { 1 } else { __grp.local_size(2) };
                            let __items = __ls0 * __ls1 * __ls2;
                            let [__gb0, __gb1, __gb2] = __grp.global_id([0, 0, 0]);
                            let __glb = __grp.global_linear_id([0, 0, 0]);
                            let __gs0 = __grp.global_size(0);
                            let __gs1 = __grp.global_size(1);
                            #carver
                            #(#carve)*
                            #group_code
                        }
                        // The task's groups, one after the other, in one function: compiled
                        // also for x86-64-v3 and v4, run where the processor has them (see
                        // `numatask_kernels::Isa`), chosen once per task.
                        #[inline(always)]
                        fn __groups(__run: &#krate::__rt::GroupRun<'_>) {
                            if __run.flat() {
                                __run.for_each(
                                    #[inline(always)]
                                    |__grp, __args| __group::<true>(__grp, __args),
                                )
                            } else {
                                __run.for_each(
                                    #[inline(always)]
                                    |__grp, __args| __group::<false>(__grp, __args),
                                )
                            }
                        }
                        #[cfg(target_arch = "x86_64")]
                        {
                            #[target_feature(enable = "avx,avx2,fma,bmi1,bmi2,f16c,lzcnt,movbe")]
                            fn __groups_v3(__run: &#krate::__rt::GroupRun<'_>) {
                                __groups(__run)
                            }
                            #[target_feature(enable = "avx,avx2,fma,bmi1,bmi2,f16c,lzcnt,movbe,avx512f,avx512bw,avx512cd,avx512dq,avx512vl")]
                            fn __groups_v4(__run: &#krate::__rt::GroupRun<'_>) {
                                __groups(__run)
                            }
                            match #krate::__rt::kernel_isa() {
                                // SAFETY: `kernel_isa` returns V4 only where CPUID reports every
                                // feature `__groups_v4` is compiled with.
                                #krate::__rt::Isa::V4 => unsafe { __groups_v4(__run) },
                                // SAFETY: as above, for V3 and `__groups_v3`'s features.
                                #krate::__rt::Isa::V3 => unsafe { __groups_v3(__run) },
                                #krate::__rt::Isa::Baseline => __groups(__run),
                            }
                        }
                        #[cfg(not(target_arch = "x86_64"))]
                        __groups(__run)
                    },
                    |__grp: &#krate::__rt::WorkGroup<'_>, __args: &#krate::__rt::GroupArgs<'_>| {
                        #(#ref_param_decls)*
                        #(#ref_arrays)*
                        #krate::__rt::oracle_items(__grp, |__it: &#krate::__rt::ItemCtx<'_>| {
                            #(#ref_body)*
                        });
                    },
                )
            }
        }

        impl ::core::ops::Deref for #name {
            type Target = #krate::Kernel;
            fn deref(&self) -> &#krate::Kernel {
                static KERNEL: ::std::sync::OnceLock<#krate::Kernel> = ::std::sync::OnceLock::new();
                KERNEL.get_or_init(#name::__build)
            }
        }
    }
}

fn slot_name(v: &str) -> Ident {
    format_ident!("__slot_{}", v)
}

struct Gen<'g> {
    a: &'g Analysis,
    body: &'g Body,
    locals: &'g HashSet<String>,
    written: &'g HashSet<String>,
    /// Buffers the kernel reads.
    reads: &'g HashSet<String>,
    /// Names whose values are known before a region's loops (see `Bounds`).
    invariant: &'g HashSet<String>,
    /// Local memory and written buffers.
    changing: &'g HashSet<String>,
    krate: &'g Tokens,
    /// The counters of the loops run in strips, as written.
    strips: Vec<String>,
    /// The counters of the loops run once per group around what is being generated.
    counters: Vec<String>,
}

impl<'g> Gen<'g> {
    fn nodes(&mut self, nodes: &[Node]) -> Tokens {
        let mut out = Tokens::new();
        for n in nodes {
            out.extend(self.node(n));
        }
        out
    }

    fn group_expr(&self, e: &Expr) -> Tokens {
        let mut e = e.clone();
        Rewrite::new(self, Mode::Group, 0).visit_expr_mut(&mut e);
        e.to_token_stream()
    }

    fn node(&mut self, n: &Node) -> Tokens {
        match n {
            Node::Run { stmts, id } => self.run(stmts, *id),
            Node::Group(s) => {
                let mut s = s.clone();
                Rewrite::new(self, Mode::Group, 0).visit_stmt_mut(&mut s);
                s.to_token_stream()
            }
            Node::If { .. } => self.if_node(n),
            Node::For {
                label,
                pat,
                iter,
                body,
            } => {
                let iter = self.group_expr(iter);
                // The counter is the same for every work-item and known before the loops of
                // the regions inside: their indices may use it in checks made once.
                let counter = match pat {
                    syn::Pat::Ident(p)
                        if p.mutability.is_none() && p.subpat.is_none() && p.by_ref.is_none() =>
                    {
                        Some(p.ident.to_string())
                    }
                    _ => None,
                };
                let pushed = counter.map(|c| self.counters.push(c)).is_some();
                let body = self.nodes(body);
                if pushed {
                    self.counters.pop();
                }
                quote!(#label for #pat in (#iter) { #body })
            }
            Node::While { label, cond, body } => {
                let cond = self.group_expr(cond);
                let body = self.nodes(body);
                quote!(#label while (#cond) { #body })
            }
            Node::Loop { label, body } => {
                let body = self.nodes(body);
                quote!(#label loop { #body })
            }
            Node::Block(b) => {
                let b = self.nodes(b);
                quote!({ #b })
            }
            Node::Jump(s) => s.to_token_stream(),
        }
    }

    fn if_node(&mut self, n: &Node) -> Tokens {
        let Node::If { cond, then, els } = n else {
            unreachable!()
        };
        let cond = self.group_expr(cond);
        let then = self.nodes(then);
        let els = match els.as_deref() {
            None => Tokens::new(),
            Some(Else::Block(b)) => {
                let b = self.nodes(b);
                quote!(else { #b })
            }
            Some(Else::If(n)) => {
                let n = self.if_node(n);
                quote!(else #n)
            }
        };
        quote!(if (#cond) { #then } #els)
    }

    /// The statements recomputing what `names` needs of the recomputed variables (in their
    /// declaration order, dependences first), skipping those bound in `bound`.
    fn recompute(&self, names: &HashSet<String>, bound: &HashSet<String>) -> Tokens {
        let mut need: HashSet<String> = names
            .iter()
            .filter(|n| self.a.recomputed.contains(n) && !bound.contains(*n))
            .cloned()
            .collect();
        // Dependences of recomputed variables on others.
        loop {
            let before = need.len();
            for v in need.clone() {
                if let Some(init) = &self.body.vars[&v].init {
                    let mut r = Refs::default();
                    r.visit_expr(init);
                    need.extend(
                        r.names
                            .into_iter()
                            .filter(|n| self.a.recomputed.contains(n) && !bound.contains(n)),
                    );
                }
            }
            if need.len() == before {
                break;
            }
        }
        let mut out = Tokens::new();
        for v in &self.a.recomputed {
            if !need.contains(v) {
                continue;
            }
            let var = &self.body.vars[v];
            let mut init = var.init.clone().expect("recomputed variables have a value");
            Rewrite::new(self, Mode::Item, 0).visit_expr_mut(&mut init);
            let id = Ident::new(v, var.span);
            let ty = var.ty.as_ref().map(|t| quote!(: #t));
            out.extend(quote!(let #id #ty = #init;));
        }
        out
    }

    /// Loads of the variables kept per work-item that `names` holds (not `bound`), from their
    /// slots into locals for the work-item's code.
    fn loads(&self, names: &HashSet<String>, bound: &HashSet<String>) -> Tokens {
        let mut out = Tokens::new();
        for v in &self.a.expanded {
            if names.contains(v) && !bound.contains(v) {
                let id = Ident::new(v, self.body.vars[v].span);
                let slot = slot_name(v);
                // SAFETY: `__l` is a work-item's local linear id, below the group's size: the
                // slot array's length.
                out.extend(quote!(let mut #id = unsafe { #slot.get_unchecked(__l) };));
            }
        }
        out
    }

    /// A run: its statements in the work-item loops. A variable kept per work-item lives in a
    /// local for the work-item's code (loaded from its slot first, unless the run declares
    /// it) and goes back to its slot at the end, or at the work-item's `return`, if the run may
    /// change it.
    fn run(&mut self, stmts: &[Stmt], id: usize) -> Tokens {
        let mut binds = HashSet::new();
        for s in stmts {
            collect_bound(s, &mut binds);
        }
        let refs = &self.a.refs_of_run[&id];
        let recompute = self.recompute(refs, &binds);
        let loads = self.loads(refs, &binds);
        // Back to their slots: the kept variables the run may change (one it only reads
        // still holds its slot's value).
        let changed = written_names(stmts);
        let mut stores = Tokens::new();
        for v in &self.a.expanded {
            if refs.contains(v) && changed.contains(v) {
                let id = Ident::new(v, self.body.vars[v].span);
                let slot = slot_name(v);
                // SAFETY: as for the load.
                stores.extend(quote!(unsafe { #slot.set_unchecked(__l, #id) };));
            }
        }
        let parts = Parts {
            recompute: &recompute,
            loads: &loads,
            stores: &stores,
        };
        let Some((cond, x, at, holds)) = self.split(stmts) else {
            if let Some(&at) = self.a.strips.get(&id)
                && let Some(strips) = self.strips(stmts, at, refs, &parts)
            {
                return strips;
            }
            return self.run_part(stmts, &parts, quote!(0), quote!(__ls0), Vec::new());
        };
        let k = x.to_token_stream().to_string();
        // The work-items below `__split`, and those from `from` to the end, each part with
        // `cond` known, and the bound that gives to the local id.
        let below = |stmts: &[Stmt]| {
            self.run_part(
                stmts,
                &parts,
                quote!(0),
                quote!(__split),
                vec![(k.clone(), Some(quote!(__split.checked_sub(1))), None)],
            )
        };
        let above = |stmts: &[Stmt], from: Tokens| {
            self.run_part(
                stmts,
                &parts,
                from.clone(),
                quote!(__ls0),
                vec![(k.clone(), None, Some(quote!(Some(#from))))],
            )
        };
        let low_holds = match holds {
            Holds::Below(low_holds) => low_holds,
            Holds::At(at_holds) => {
                // `x == e` (or `!=`): the loop in three, below, at and above the work-item
                // `e`.
                let off = replace_cond(stmts, &cond, !at_holds);
                let on = replace_cond(stmts, &cond, at_holds);
                let low = below(&off);
                let mid = self.run_part(
                    &on,
                    &parts,
                    quote!(__split),
                    quote!(__next),
                    vec![(
                        k.clone(),
                        Some(quote!(Some(__split))),
                        Some(quote!(Some(__split))),
                    )],
                );
                let high = above(&off, quote!(__next));
                return quote!({
                    let __split: usize = #at;
                    let __next: usize = __ls0.min(__split.saturating_add(1));
                    #low
                    #mid
                    #high
                });
            }
        };
        // The loop over dimension 0 in two, at the work-item where `cond` changes.
        let low = below(&replace_cond(stmts, &cond, low_holds));
        let high = above(&replace_cond(stmts, &cond, !low_holds), quote!(__split));
        quote!({
            let __split: usize = #at;
            #low
            #high
        })
    }

    /// The loops of a region over work-items `start..end` of dimension 0, twice: with the
    /// indices the range analysis bounds unchecked (after one check of each bound, before the
    /// loops), and with every index checked.
    fn run_part(
        &self,
        stmts: &[Stmt],
        parts: &Parts<'_>,
        start: Tokens,
        end: Tokens,
        facts: Vec<Fact>,
    ) -> Tokens {
        let Parts {
            recompute,
            loads,
            stores,
        } = parts;
        let (fast, checks) = self.run_body(stmts, stores, Some(facts));
        let (checked, _) = self.run_body(stmts, stores, None);
        let loops = |body: &[Stmt]| {
            quote! {
                for __lz in 0..__ls2 {
                    for __ly in 0..__ls1 {
                        '__item: for __lx in #start..#end {
                            let __l = __lx + __ls0 * (__ly + __ls1 * __lz);
                            #recompute
                            #loads
                            #(#body)*
                            #stores
                        }
                    }
                }
            }
        };
        let checked = loops(&checked);
        if checks.is_empty() {
            return checked;
        }
        let fast = loops(&fast);
        quote! {
            if #(#checks)&&* {
                #fast
            } else {
                #checked
            }
        }
    }

    /// A run whose statement `at` is a loop that runs in strips (`Analysis::strips`): the
    /// work-items of dimension 0 in strips of `STRIP`, each strip running the statements
    /// before the loop for each of its work-items, then each iteration of the loop for each,
    /// then the statements after it. A variable the later parts use that the earlier ones
    /// bind or load from its slot lives between them in an array of one element per
    /// work-item of the strip, on the stack (no other memory aliases it, so the loop over the
    /// strip vectorizes, each work-item in a lane); the recomputed ones are recomputed in
    /// each part. Only the unchecked copy of the region runs in strips. `None` where the run
    /// cannot: a `return` in it, or such a variable of a type not known to be an `Element`.
    fn strips(
        &mut self,
        stmts: &[Stmt],
        at: usize,
        refs: &HashSet<String>,
        parts: &Parts<'_>,
    ) -> Option<Tokens> {
        const STRIP: usize = 16;
        struct HasReturn(bool);
        impl<'v> Visit<'v> for HasReturn {
            fn visit_expr_return(&mut self, _: &'v syn::ExprReturn) {
                self.0 = true;
            }
            fn visit_item(&mut self, _: &'v syn::Item) {}
        }
        let mut r = HasReturn(false);
        stmts.iter().for_each(|s| r.visit_stmt(s));
        if r.0 {
            return None;
        }
        let names_of = |ss: &[Stmt]| {
            let mut r = Refs::default();
            ss.iter().for_each(|s| r.visit_stmt(s));
            r.names
        };
        let later = names_of(&stmts[at..]);
        let (mut pre_binds, mut rest_binds) = (HashSet::new(), HashSet::new());
        for s in &stmts[..at] {
            collect_bound(s, &mut pre_binds);
        }
        for s in &stmts[at..] {
            collect_bound(s, &mut rest_binds);
        }
        // The variables carried from part to part, each with its type: the kept ones the run
        // loads from their slots or declares before the loop (a kept one declared after it
        // lives in the last part only), and the others declared before the loop and used in
        // or after it. Each must have a value from the first part on, and a type of a few
        // bytes (16 copies of it live on the stack).
        let mut carried: Vec<(Ident, syn::Type)> = Vec::new();
        let mut names: Vec<&String> = refs.iter().collect();
        names.sort();
        for v in names {
            let Some(var) = self.body.vars.get(v) else {
                continue;
            };
            let kept = self.a.expanded.contains(v);
            if kept && rest_binds.contains(v) && !pre_binds.contains(v) {
                continue;
            }
            let crosses =
                pre_binds.contains(v) && later.contains(v) && !self.a.recomputed.contains(v);
            if !kept && !crosses {
                continue;
            }
            let ty = var.ty.clone()?;
            if !small_primitive(&ty, 64) || (pre_binds.contains(v) && var.init.is_none()) {
                return None;
            }
            carried.push((Ident::new(v, var.span), ty));
        }
        let (fast, checks) = self.run_body(stmts, parts.stores, Some(Vec::new()));
        let (checked, _) = self.run_body(stmts, parts.stores, None);
        let Stmt::Expr(Expr::ForLoop(lp), _) = &fast[at] else {
            return None;
        };
        let (pat, iter, body) = (&lp.pat, &lp.expr, &lp.body.stmts);
        if let Stmt::Expr(Expr::ForLoop(f), _) = &stmts[at] {
            self.strips.push(counter_name(&f.pat, self.body));
        }
        let (pre, post) = (&fast[..at], &fast[at + 1..]);
        let krate = self.krate;
        let arrays: Vec<Ident> = carried
            .iter()
            .map(|(v, _)| format_ident!("__lanes_{}", v))
            .collect();
        let vars: Vec<&Ident> = carried.iter().map(|(v, _)| v).collect();
        let types: Vec<Tokens> = carried.iter().map(|(_, t)| quote!([#t; #STRIP])).collect();
        let loop_names = names_of(std::slice::from_ref(&stmts[at]));
        let post_names: HashSet<String> = names_of(&stmts[at + 1..])
            .into_iter()
            .chain(
                self.a
                    .expanded
                    .iter()
                    .filter(|v| refs.contains(*v))
                    .cloned(),
            )
            .collect();
        let mut loop_binds = HashSet::new();
        collect_bound(&stmts[at], &mut loop_binds);
        let recompute_loop = self.recompute(&loop_names, &loop_binds);
        let mut post_binds = HashSet::new();
        for s in &stmts[at + 1..] {
            collect_bound(s, &mut post_binds);
        }
        let recompute_post = self.recompute(&post_names, &post_binds);
        let Parts {
            recompute,
            loads,
            stores,
        } = parts;
        let strip = |n: Tokens| {
            quote! {
                #(let mut #arrays: #types = #krate::__rt::lanes();)*
                for __lane in 0..#n {
                    let __lx = __lx0 + __lane;
                    let __l = __lx + __ls0 * (__ly + __ls1 * __lz);
                    #recompute
                    #loads
                    #(#pre)*
                    #(#arrays[__lane] = #vars;)*
                }
                for #pat in #iter {
                    for __lane in 0..#n {
                        let __lx = __lx0 + __lane;
                        let __l = __lx + __ls0 * (__ly + __ls1 * __lz);
                        #recompute_loop
                        #(let mut #vars = #arrays[__lane];)*
                        #(#body)*
                        #(#arrays[__lane] = #vars;)*
                    }
                }
                for __lane in 0..#n {
                    let __lx = __lx0 + __lane;
                    let __l = __lx + __ls0 * (__ly + __ls1 * __lz);
                    #recompute_post
                    #(let mut #vars = #arrays[__lane];)*
                    #(#post)*
                    #stores
                }
            }
        };
        let (full, rest) = (strip(quote!(#STRIP)), strip(quote!(__n)));
        let fast = quote! {
            for __lz in 0..__ls2 {
                for __ly in 0..__ls1 {
                    let mut __lx0 = 0;
                    while __lx0 < __ls0 {
                        let __n = (__ls0 - __lx0).min(#STRIP);
                        if __n == #STRIP {
                            #full
                        } else {
                            #rest
                        }
                        __lx0 += #STRIP;
                    }
                }
            }
        };
        let checked = quote! {
            for __lz in 0..__ls2 {
                for __ly in 0..__ls1 {
                    '__item: for __lx in 0..__ls0 {
                        let __l = __lx + __ls0 * (__ly + __ls1 * __lz);
                        #recompute
                        #loads
                        #(#checked)*
                        #stores
                    }
                }
            }
        };
        Some(if checks.is_empty() {
            fast
        } else {
            quote! {
                if #(#checks)&&* {
                    #fast
                } else {
                    #checked
                }
            }
        })
    }

    /// The first condition of an `if` in the region that compares the local id in dimension
    /// 0 with a value known before the loop: (the condition, the id's expression, where the
    /// loop splits, where the condition holds).
    fn split(&self, stmts: &[Stmt]) -> Option<(Expr, Expr, Tokens, Holds)> {
        struct F<'a, 'g> {
            g: &'a Gen<'g>,
            found: Option<(Expr, Expr, Tokens, Holds)>,
        }
        impl<'v> Visit<'v> for F<'_, '_> {
            fn visit_expr_if(&mut self, i: &'v syn::ExprIf) {
                if self.found.is_none() {
                    self.found = self.g.split_at(&i.cond);
                }
                syn::visit::visit_expr_if(self, i);
            }
            fn visit_item(&mut self, _: &'v syn::Item) {}
        }
        let mut f = F {
            g: self,
            found: None,
        };
        for s in stmts {
            f.visit_stmt(s);
        }
        f.found
    }

    fn split_at(&self, cond: &Expr) -> Option<(Expr, Expr, Tokens, Holds)> {
        let Expr::Binary(c) = cond else { return None };
        // As `x OP e`, `x` the local id.
        let (x, e, op, flipped) = if self.is_local_id0(&c.left, 0) {
            (&*c.left, &*c.right, c.op, false)
        } else if self.is_local_id0(&c.right, 0) {
            (&*c.right, &*c.left, c.op, true)
        } else {
            return None;
        };
        // An equality's value may be any expression of the group's (`local_size(0) - 1`): it
        // is evaluated once before the loops, and the parts' bounds are given by `__split`.
        let bounds = self.bounds(Vec::new());
        let equality = matches!(op, BinOp::Eq(_) | BinOp::Ne(_));
        if !(bounds.is_simple_invariant(e) || equality && bounds.invariant(e)) {
            return None;
        }
        let e = group_level(e, self.krate);
        // `x < e` holds below `e`; `x <= e` below `e + 1`; `x >= e` and `x > e` above; `x ==
        // e` at `e` only, `x != e` everywhere but.
        let (holds, inclusive) = match (op, flipped) {
            (BinOp::Lt(_), false) | (BinOp::Gt(_), true) => (Holds::Below(true), false),
            (BinOp::Le(_), false) | (BinOp::Ge(_), true) => (Holds::Below(true), true),
            (BinOp::Ge(_), false) | (BinOp::Le(_), true) => (Holds::Below(false), false),
            (BinOp::Gt(_), false) | (BinOp::Lt(_), true) => (Holds::Below(false), true),
            (BinOp::Eq(_), _) => (Holds::At(true), false),
            (BinOp::Ne(_), _) => (Holds::At(false), false),
            _ => return None,
        };
        let at = if inclusive {
            quote!(__ls0.min(usize::saturating_add(#e, 1)))
        } else {
            quote!(__ls0.min(#e))
        };
        Some((cond.clone(), x.clone(), at, holds))
    }

    /// The range analysis of a region, knowing `facts`.
    fn bounds(&self, facts: Vec<Fact>) -> Bounds<'g> {
        Bounds {
            body: self.body,
            invariant: self.invariant,
            counters: self.counters.clone(),
            changing: self.changing,
            krate: self.krate,
            facts,
        }
    }

    /// Whether `e` is `local_id(0)`, or an immutable variable whose value is.
    fn is_local_id0(&self, e: &Expr, depth: usize) -> bool {
        match e {
            Expr::Paren(p) => self.is_local_id0(&p.expr, depth),
            Expr::Call(c) => {
                call_name(c).as_deref() == Some("local_id")
                    && matches!(c.args.first(), Some(Expr::Lit(syn::ExprLit { lit: syn::Lit::Int(i), .. })) if i.base10_digits() == "0")
            }
            Expr::Path(p) if depth < 8 => p
                .path
                .get_ident()
                .and_then(|id| self.body.vars.get(&id.to_string()))
                .filter(|v| !v.mutable && v.plain_let)
                .and_then(|v| v.init.as_ref())
                .is_some_and(|init| self.is_local_id0(init, depth + 1)),
            _ => false,
        }
    }

    /// A region's statements rewritten for its work-item loops; with `facts` (what is known
    /// of indices there), its unchecked copy and the bounds that copy relies on.
    fn run_body(
        &self,
        stmts: &[Stmt],
        stores: &Tokens,
        facts: Option<Vec<Fact>>,
    ) -> (Vec<Stmt>, Vec<Tokens>) {
        let mut body = Vec::new();
        let mut rw = Rewrite::new(self, Mode::Item, 0);
        rw.on_return = stores.clone();
        if let Some(facts) = facts {
            rw.bounds = Some(self.bounds(facts));
        }
        for s in stmts {
            let mut s = s.clone();
            rw.visit_stmt_mut(&mut s);
            // A tail expression of the kernel's body is a statement here, with more after it.
            if let Stmt::Expr(_, semi @ None) = &mut s {
                *semi = Some(Default::default());
            }
            body.push(s);
        }
        (body, rw.checks)
    }

    /// `uniform(c)` at group level: `c` for the group's first work-item, checked against every
    /// work-item's in debug builds.
    fn uniform_at_group(&self, c: &Expr) -> Tokens {
        let mut refs = Refs::default();
        refs.visit_expr(c);
        let mut recompute = self.recompute(&refs.names, &HashSet::new());
        recompute.extend(self.loads(&refs.names, &HashSet::new()));
        let mut c = c.clone();
        Rewrite::new(self, Mode::Item, 0).visit_expr_mut(&mut c);
        let msg = "uniform(..): the condition differs between work-items of group";
        quote! {{
            let __first = {
                let (__lx, __ly, __lz, __l) = (0usize, 0usize, 0usize, 0usize);
                #recompute
                #c
            };
            if cfg!(debug_assertions) {
                for __lz in 0..__ls2 {
                    for __ly in 0..__ls1 {
                        for __lx in 0..__ls0 {
                            let __l = __lx + __ls0 * (__ly + __ls1 * __lz);
                            #recompute
                            assert!((#c) == __first, "{} {:?}: work-item {:?}", #msg,
                                [__grp.group_id(0), __grp.group_id(1), __grp.group_id(2)], [__lx, __ly, __lz]);
                        }
                    }
                }
            }
            __first
        }}
    }
}

/// What every part of a region's loops starts and ends with.
struct Parts<'p> {
    recompute: &'p Tokens,
    loads: &'p Tokens,
    stores: &'p Tokens,
}

/// Where a split condition on the local id holds: below the split point (`Below(true)`) or
/// above it (`Below(false)`); at the split point alone (`At(true)`, `==`) or everywhere but
/// (`At(false)`, `!=`).
#[derive(Clone, Copy)]
enum Holds {
    Below(bool),
    At(bool),
}

/// `stmts` with every occurrence of the condition `cond` replaced by `holds`.
fn replace_cond(stmts: &[Stmt], cond: &Expr, holds: bool) -> Vec<Stmt> {
    struct R {
        key: String,
        holds: bool,
    }
    impl VisitMut for R {
        fn visit_expr_mut(&mut self, e: &mut Expr) {
            if e.to_token_stream().to_string() == self.key {
                let v = self.holds;
                *e = syn::parse_quote!(#v);
                return;
            }
            visit_mut::visit_expr_mut(self, e);
        }
        fn visit_item_mut(&mut self, _: &mut syn::Item) {}
    }
    // Then each `if` on a constant becomes the branch it takes, so that the range analysis
    // does not see the indices of the other (`a[lid - offset]` where `lid < offset`).
    struct Fold;
    impl VisitMut for Fold {
        fn visit_expr_mut(&mut self, e: &mut Expr) {
            visit_mut::visit_expr_mut(self, e);
            let Expr::If(i) = e else { return };
            let mut c = &*i.cond;
            while let Expr::Paren(p) = c {
                c = &p.expr;
            }
            let Expr::Lit(syn::ExprLit {
                lit: syn::Lit::Bool(b),
                ..
            }) = c
            else {
                return;
            };
            let taken: Expr = if b.value {
                let block = &i.then_branch;
                syn::parse_quote!(#block)
            } else {
                match &i.else_branch {
                    Some((_, els)) => (**els).clone(),
                    None => syn::parse_quote!({}),
                }
            };
            *e = taken;
        }
        fn visit_item_mut(&mut self, _: &mut syn::Item) {}
    }
    let mut r = R {
        key: cond.to_token_stream().to_string(),
        holds,
    };
    stmts
        .iter()
        .map(|s| {
            let mut s = s.clone();
            r.visit_stmt_mut(&mut s);
            Fold.visit_stmt_mut(&mut s);
            s
        })
        .collect()
}

/// Whether `ty` is a primitive number or `bool`, or an array of at most `elements` of them
/// (its length a literal): an `Element` of at most `elements * 16` bytes.
fn small_primitive(ty: &syn::Type, elements: usize) -> bool {
    match ty {
        syn::Type::Array(a) => {
            let syn::Expr::Lit(syn::ExprLit {
                lit: syn::Lit::Int(n),
                ..
            }) = &a.len
            else {
                return false;
            };
            n.base10_parse::<usize>()
                .is_ok_and(|n| n > 0 && n <= elements && small_primitive(&a.elem, elements / n))
        }
        syn::Type::Paren(p) => small_primitive(&p.elem, elements),
        syn::Type::Path(p) if p.qself.is_none() => p.path.get_ident().is_some_and(|id| {
            matches!(
                id.to_string().as_str(),
                "u8" | "u16"
                    | "u32"
                    | "u64"
                    | "u128"
                    | "usize"
                    | "i8"
                    | "i16"
                    | "i32"
                    | "i64"
                    | "i128"
                    | "isize"
                    | "f32"
                    | "f64"
                    | "bool"
            )
        }),
        _ => false,
    }
}

fn collect_bound(s: &Stmt, out: &mut HashSet<String>) {
    struct B<'o>(&'o mut HashSet<String>);
    impl<'a> Visit<'a> for B<'_> {
        fn visit_pat_ident(&mut self, p: &'a syn::PatIdent) {
            self.0.insert(p.ident.to_string());
            syn::visit::visit_pat_ident(self, p);
        }
        fn visit_item(&mut self, _: &'a syn::Item) {}
    }
    B(out).visit_stmt(s);
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Mode {
    /// Work-item code of the work-group function (inside the work-item loops).
    Item,
    /// Code run once per group.
    Group,
    /// The reference form's body (one thread per work-item).
    Reference,
}

/// Rewrites work-item functions, accesses to local memory and written buffers, and (in work-
/// item code) the variables kept per work-item.
struct Rewrite<'r, 'g> {
    g: &'r Gen<'g>,
    mode: Mode,
    /// Barrier sites numbered in the reference form.
    next_site: u32,
    /// What a work-item's `return` does first (in work-item code).
    on_return: Tokens,
    /// In the unchecked copy of a region: what is known of indices there.
    bounds: Option<Bounds<'g>>,
    /// The bounds that copy relies on, each checked once before its loops.
    checks: Vec<Tokens>,
}

/// A place an assignment writes: an element of an indexed array.
struct Root {
    array: Ident,
    index: Box<Expr>,
}

impl<'r, 'g> Rewrite<'r, 'g> {
    fn new(g: &'r Gen<'g>, mode: Mode, first_site: u32) -> Self {
        Rewrite {
            g,
            mode,
            next_site: first_site,
            on_return: Tokens::new(),
            bounds: None,
            checks: Vec::new(),
        }
    }

    fn is_indexed(&self, name: &str) -> bool {
        self.g.locals.contains(name) || self.g.written.contains(name)
    }

    /// Finds the root of place `e` and replaces it by `__t`.
    fn take_root(&self, e: &mut Expr) -> Option<Root> {
        match e {
            Expr::Index(i) => {
                if let Expr::Path(p) = &*i.expr
                    && let Some(id) = p.path.get_ident()
                    && self.is_indexed(&id.to_string())
                {
                    let root = Root {
                        array: id.clone(),
                        index: i.index.clone(),
                    };
                    *e = syn::parse_quote!(__t);
                    return Some(root);
                }
                self.take_root(&mut i.expr)
            }
            Expr::Field(f) => self.take_root(&mut f.base),
            Expr::Paren(p) => self.take_root(&mut p.expr),
            _ => None,
        }
    }

    /// `left op= right` (`op` None: `=`) with `left` rooted in an array element or slot.
    fn assign(
        &mut self,
        left: &Expr,
        op: Option<&BinOp>,
        right: &Expr,
        span: Span,
    ) -> Option<Expr> {
        let mut lhs = left.clone();
        let root = self.take_root(&mut lhs)?;
        let mut right = right.clone();
        self.visit_expr_mut(&mut right);
        let simple = matches!(lhs, Expr::Path(ref p) if p.path.is_ident("__t")) && op.is_none();
        let Root { array, mut index } = root;
        let unchecked = self.prove(&array, &index);
        self.visit_expr_mut(&mut index);
        let op = match op {
            Some(op) => op.to_token_stream(),
            None => quote!(=),
        };
        if unchecked && simple {
            return Some(syn::parse_quote_spanned!(span=> {
                let __v = #right;
                let __i = #index;
                // SAFETY: `__i` is below the array's length: its bound was checked before the
                // region's loops (range analysis).
                unsafe { #array.set_unchecked(__i, __v) }
            }));
        }
        if unchecked {
            return Some(syn::parse_quote_spanned!(span=> {
                let __v = #right;
                let __i = #index;
                // SAFETY: `__i` is below the array's length: its bound was checked before the
                // region's loops (range analysis).
                unsafe {
                    let mut __t = #array.get_unchecked(__i);
                    #lhs #op __v;
                    #array.set_unchecked(__i, __t);
                }
            }));
        }
        if simple {
            return Some(syn::parse_quote_spanned!(span=> #array.set(#index, #right)));
        }
        Some(syn::parse_quote_spanned!(span=> {
            let __v = #right;
            let __i = #index;
            let mut __t = #array.get(__i);
            #lhs #op __v;
            #array.set(__i, __t);
        }))
    }

    /// In the unchecked copy of a region: whether the range analysis bounds `index` (as
    /// written, before rewriting) of `array`; if so, the bound's check joins the region's.
    fn prove(&mut self, array: &Ident, index: &Expr) -> bool {
        let Some(b) = &self.bounds else { return false };
        match b.max(index) {
            Some(max) => {
                let k = self.g.krate;
                self.checks
                    .push(quote!(#k::__rt::bound::below(#max, #array.len())));
                true
            }
            None => false,
        }
    }

    fn intrinsic(&mut self, name: &str, c: &syn::ExprCall) -> Expr {
        let span = c.span();
        let mut args: Vec<Expr> = c.args.iter().cloned().collect();
        for a in &mut args {
            self.visit_expr_mut(a);
        }
        let krate = self.g.krate;
        if self.mode == Mode::Reference {
            let f = Ident::new(name, span);
            return match name {
                "barrier" => {
                    let site = self.next_site;
                    self.next_site += 1;
                    syn::parse_quote_spanned!(span=> __it.barrier(#site))
                }
                "uniform" => {
                    let c = &args[0];
                    syn::parse_quote_spanned!(span=> (#c))
                }
                _ => syn::parse_quote_spanned!(span=> __it.#f(#(#args),*)),
            };
        }
        let lit = |e: &Expr| match e {
            Expr::Lit(syn::ExprLit {
                lit: syn::Lit::Int(i),
                ..
            }) => i.base10_parse::<usize>().ok(),
            _ => None,
        };
        match name {
            "barrier" => syn::parse_quote_spanned!(span=> ()),
            "uniform" => {
                if self.mode == Mode::Group {
                    let t = self.g.uniform_at_group(&c.args[0]);
                    syn::parse_quote_spanned!(span=> #t)
                } else {
                    let c = &args[0];
                    syn::parse_quote_spanned!(span=> (#c))
                }
            }
            "work_dim" => syn::parse_quote_spanned!(span=> __grp.dims()),
            n if UNIFORM_INTRINSICS.contains(&n) => {
                let f = Ident::new(n, span);
                let d = &args[0];
                syn::parse_quote_spanned!(span=> __grp.#f(#d))
            }
            "local_id" => match lit(&args[0]) {
                Some(0) => syn::parse_quote_spanned!(span=> __lx),
                Some(1) => syn::parse_quote_spanned!(span=> __ly),
                Some(2) => syn::parse_quote_spanned!(span=> __lz),
                _ => {
                    let d = &args[0];
                    syn::parse_quote_spanned!(span=> #krate::__rt::pick3([__lx, __ly, __lz], #d, 0))
                }
            },
            "global_id" => match lit(&args[0]) {
                Some(0) => syn::parse_quote_spanned!(span=> (__gb0 + __lx)),
                Some(1) => syn::parse_quote_spanned!(span=> (__gb1 + __ly)),
                Some(2) => syn::parse_quote_spanned!(span=> (__gb2 + __lz)),
                _ => {
                    let d = &args[0];
                    syn::parse_quote_spanned!(span=> #krate::__rt::pick3([__gb0 + __lx, __gb1 + __ly, __gb2 + __lz], #d, 0))
                }
            },
            "global_linear_id" => {
                syn::parse_quote_spanned!(span=> (__glb + __lx + __gs0 * (__ly + __gs1 * __lz)))
            }
            "local_linear_id" => syn::parse_quote_spanned!(span=> __l),
            other => {
                debug_assert!(!VARYING_INTRINSICS.contains(&other));
                syn::parse_quote_spanned!(span=> ())
            }
        }
    }
}

impl VisitMut for Rewrite<'_, '_> {
    fn visit_expr_mut(&mut self, e: &mut Expr) {
        let span = e.span();
        match e {
            Expr::Call(c) => {
                if let Some(name) = call_name(c)
                    && crate::is_intrinsic(&name)
                {
                    *e = self.intrinsic(&name, c);
                    return;
                }
            }
            Expr::Assign(asg) => {
                if let Some(new) = self.assign(&asg.left.clone(), None, &asg.right.clone(), span) {
                    *e = new;
                    return;
                }
            }
            Expr::Binary(b) if crate::analyze::is_assign_op(&b.op) => {
                if let Some(new) =
                    self.assign(&b.left.clone(), Some(&b.op.clone()), &b.right.clone(), span)
                {
                    *e = new;
                    return;
                }
            }
            Expr::Index(i) => {
                if let Expr::Path(p) = &*i.expr
                    && let Some(id) = p.path.get_ident()
                {
                    let name = id.to_string();
                    let id = id.clone();
                    if self.is_indexed(&name) {
                        let unchecked = self.prove(&id, &i.index);
                        let mut index = (*i.index).clone();
                        self.visit_expr_mut(&mut index);
                        *e = if unchecked {
                            // SAFETY: the index's bound was checked before the region's loops.
                            syn::parse_quote_spanned!(span=> { let __i = #index; unsafe { #id.get_unchecked(__i) } })
                        } else {
                            syn::parse_quote_spanned!(span=> #id.get(#index))
                        };
                        return;
                    }
                    if self.g.reads.contains(&name)
                        && !matches!(&*i.index, Expr::Range(_))
                        && self.prove(&id, &i.index)
                    {
                        let mut index = (*i.index).clone();
                        self.visit_expr_mut(&mut index);
                        // SAFETY: the index's bound was checked before the region's loops.
                        *e = syn::parse_quote_spanned!(span=> (*{ let __i = #index; unsafe { #id.get_unchecked(__i) } }));
                        return;
                    }
                }
            }
            Expr::If(x) if self.bounds.is_some() => {
                let then_facts = self.bounds.as_ref().expect("some").facts_of(&x.cond, true);
                let else_facts = self.bounds.as_ref().expect("some").facts_of(&x.cond, false);
                self.visit_expr_mut(&mut x.cond);
                let n = then_facts.len();
                self.bounds.as_mut().expect("some").facts.extend(then_facts);
                self.visit_block_mut(&mut x.then_branch);
                let facts = &mut self.bounds.as_mut().expect("some").facts;
                facts.truncate(facts.len() - n);
                if let Some((_, els)) = &mut x.else_branch {
                    let n = else_facts.len();
                    self.bounds.as_mut().expect("some").facts.extend(else_facts);
                    self.visit_expr_mut(els);
                    let facts = &mut self.bounds.as_mut().expect("some").facts;
                    facts.truncate(facts.len() - n);
                }
                return;
            }
            Expr::ForLoop(f) if self.bounds.is_some() => {
                let facts = match &*f.pat {
                    syn::Pat::Ident(p) if p.mutability.is_none() && p.subpat.is_none() => self
                        .bounds
                        .as_ref()
                        .expect("some")
                        .facts_of_range(&p.ident.to_string(), &f.expr),
                    _ => Vec::new(),
                };
                self.visit_expr_mut(&mut f.expr);
                let n = facts.len();
                self.bounds.as_mut().expect("some").facts.extend(facts);
                self.visit_block_mut(&mut f.body);
                let facts = &mut self.bounds.as_mut().expect("some").facts;
                facts.truncate(facts.len() - n);
                return;
            }
            Expr::Return(_) if self.mode == Mode::Item => {
                // The work-item ends: its variables kept per work-item go back to their slots.
                let store = &self.on_return;
                *e = syn::parse_quote_spanned!(span=> { #store continue '__item });
                return;
            }
            _ => {}
        }
        visit_mut::visit_expr_mut(self, e);
    }

    fn visit_macro_mut(&mut self, m: &mut syn::Macro) {
        if let Some(mut args) = macro_args(m) {
            for a in args.iter_mut() {
                self.visit_expr_mut(a);
            }
            m.tokens = args.to_token_stream();
        }
    }

    fn visit_item_mut(&mut self, _: &mut syn::Item) {}
}

/// `e`, known before a region's loops (uniform values, scalars, read buffers at uniform
/// indices), as group-level code computes it: its work-item functions on the group.
pub(crate) fn group_level(e: &Expr, krate: &Tokens) -> Tokens {
    struct G;
    impl VisitMut for G {
        fn visit_expr_mut(&mut self, e: &mut Expr) {
            if let Expr::Call(c) = e
                && let Some(name) = call_name(c)
                && UNIFORM_INTRINSICS.contains(&name.as_str())
            {
                let f = Ident::new(&name, c.span());
                let mut args: Vec<Expr> = c.args.iter().cloned().collect();
                args.iter_mut().for_each(|a| self.visit_expr_mut(a));
                *e = if name == "work_dim" {
                    syn::parse_quote!(__grp.dims())
                } else {
                    syn::parse_quote!(__grp.#f(#(#args),*))
                };
                return;
            }
            visit_mut::visit_expr_mut(self, e);
        }
    }
    let _ = krate;
    let mut e = e.clone();
    G.visit_expr_mut(&mut e);
    e.to_token_stream()
}
