//! The first pass: inlines the kernel's `#[inline]` helpers, gives every binding a name of
//! its own (a shadowing binding is renamed, so that later passes can follow variables by
//! name), takes out the local arrays' declarations, and refuses what the transformation does
//! not support.

use std::collections::{HashMap, HashSet};

use proc_macro2::{Span, TokenStream as Tokens};
use quote::ToTokens;
use syn::punctuated::Punctuated;
use syn::spanned::Spanned;
use syn::visit::Visit;
use syn::visit_mut::{self, VisitMut};
use syn::{
    Block, Error, Expr, GenericArgument, Ident, Item, ItemFn, Local, Pat, Stmt, Token, Type,
};

use crate::{Param, intrinsic_arity, is_intrinsic};

/// A kernel's body, ready for the analysis.
pub(crate) struct Body {
    pub(crate) stmts: Vec<Stmt>,
    /// Local arrays declared in the body, in order.
    pub(crate) local_arrays: Vec<LocalArray>,
    /// Every binding of the body, by its (unique) name.
    pub(crate) vars: HashMap<String, Var>,
    /// Items declared at the top level of the body (constants, types, plain functions):
    /// every part of the generated code sees them.
    pub(crate) items: Vec<Item>,
}

/// A local array declared in the kernel (`let tile = local_array::<f32, 256>();`).
pub(crate) struct LocalArray {
    pub(crate) name: Ident,
    pub(crate) elem: Type,
    pub(crate) len: Tokens,
}

/// A binding of the kernel's body.
pub(crate) struct Var {
    /// Its name in the source.
    pub(crate) original: String,
    pub(crate) mutable: bool,
    /// For `let x: T = e` and `let x = e` (a plain name): its type, if written, and initial
    /// value.
    pub(crate) ty: Option<Type>,
    pub(crate) init: Option<Expr>,
    /// Whether it is bound by a plain `let` (not a pattern, a `for` or a `match`).
    pub(crate) plain_let: bool,
    pub(crate) span: Span,
}

/// The macros a kernel may call: the standard library's that only read their arguments (and
/// format them); the analyses see their arguments as expressions.
const KNOWN_MACROS: &[&str] = &[
    "assert",
    "assert_eq",
    "assert_ne",
    "debug_assert",
    "debug_assert_eq",
    "debug_assert_ne",
    "panic",
    "unreachable",
    "print",
    "println",
    "eprint",
    "eprintln",
    "format",
];

/// How deep helpers may call helpers.
const MAX_INLINE_DEPTH: usize = 16;

pub(crate) fn prepare(block: &Block, params: &[Param]) -> syn::Result<Body> {
    let mut stmts = Vec::new();
    let mut helpers = HashMap::new();
    let mut items = Vec::new();
    for stmt in &block.stmts {
        match stmt {
            Stmt::Item(Item::Fn(f)) if f.attrs.iter().any(|a| a.path().is_ident("inline")) => {
                helpers.insert(f.sig.ident.to_string(), f.clone());
            }
            Stmt::Item(Item::Fn(f)) if calls_barrier(&f.block) => {
                return Err(Error::new(
                    f.sig.ident.span(),
                    "a helper that calls barrier() must be marked #[inline]: the kernel's \
                     transformation inlines it",
                ));
            }
            Stmt::Item(i) => items.push(i.clone()),
            _ => stmts.push(stmt.clone()),
        }
    }
    for f in helpers.values() {
        check_helper(f)?;
    }
    let mut inliner = Inliner {
        helpers: &helpers,
        depth: 0,
        err: None,
    };
    for s in &mut stmts {
        inliner.visit_stmt_mut(s);
    }
    if let Some(e) = inliner.err {
        return Err(e);
    }

    let mut renamer = Renamer {
        scopes: vec![HashMap::new()],
        used: params.iter().map(|p| p.name.to_string()).collect(),
        vars: HashMap::new(),
        local_arrays: Vec::new(),
        depth: 0,
        err: None,
    };
    let mut out = Vec::new();
    for mut s in stmts {
        if let Some(decl) = local_array_decl(&s)? {
            let name = renamer.bind_local_array(decl.0)?;
            renamer.local_arrays.push(LocalArray {
                name,
                elem: decl.1,
                len: decl.2,
            });
            continue;
        }
        renamer.visit_stmt_mut(&mut s);
        if let Some(e) = renamer.err.take() {
            return Err(e);
        }
        out.push(s);
    }
    Ok(Body {
        stmts: out,
        local_arrays: renamer.local_arrays,
        vars: renamer.vars,
        items,
    })
}

/// Whether `block` calls `barrier()`.
pub(crate) fn calls_barrier(block: &Block) -> bool {
    let mut f = FindCall {
        name: "barrier",
        found: false,
    };
    f.visit_block(block);
    f.found
}

/// Finds a call of an intrinsic by name (not inside nested items).
pub(crate) struct FindCall {
    pub(crate) name: &'static str,
    pub(crate) found: bool,
}

impl<'a> Visit<'a> for FindCall {
    fn visit_expr_call(&mut self, c: &'a syn::ExprCall) {
        if call_name(c).as_deref() == Some(self.name) {
            self.found = true;
        }
        syn::visit::visit_expr_call(self, c);
    }
    fn visit_item(&mut self, _: &'a Item) {}
    fn visit_macro(&mut self, m: &'a syn::Macro) {
        if let Some(args) = macro_args(m) {
            for a in &args {
                self.visit_expr(a);
            }
        }
    }
}

/// The name of a call of a plain function name (`f(..)`), as intrinsics are called.
pub(crate) fn call_name(c: &syn::ExprCall) -> Option<String> {
    match &*c.func {
        Expr::Path(p)
            if p.qself.is_none()
                && p.path.segments.len() == 1
                && p.path.leading_colon.is_none() =>
        {
            let seg = &p.path.segments[0];
            Some(seg.ident.to_string())
        }
        _ => None,
    }
}

/// A macro's arguments, when they are expressions separated by commas (`assert!(a < b)`,
/// `println!("{}", x)`): the passes see and rewrite them.
pub(crate) fn macro_args(m: &syn::Macro) -> Option<Punctuated<Expr, Token![,]>> {
    m.parse_body_with(Punctuated::<Expr, Token![,]>::parse_terminated)
        .ok()
}

/// The names a macro's format strings capture (`"{x}"`, `"{x:>8}"`).
pub(crate) fn format_names(m: &syn::Macro) -> Vec<String> {
    let mut out = Vec::new();
    if let Some(args) = macro_args(m) {
        for a in &args {
            if let Expr::Lit(syn::ExprLit {
                lit: syn::Lit::Str(s),
                ..
            }) = a
            {
                for (name, _) in captures(&s.value()) {
                    out.push(name);
                }
            }
        }
    }
    out
}

/// The identifiers captured by a format string, with their byte ranges.
fn captures(f: &str) -> Vec<(String, std::ops::Range<usize>)> {
    let mut out = Vec::new();
    let b = f.as_bytes();
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'{' {
            if b.get(i + 1) == Some(&b'{') {
                i += 2;
                continue;
            }
            let start = i + 1;
            let mut end = start;
            while end < b.len() && (b[end].is_ascii_alphanumeric() || b[end] == b'_') {
                end += 1;
            }
            if end > start && !b[start].is_ascii_digit() && matches!(b.get(end), Some(b'}' | b':'))
            {
                out.push((f[start..end].to_owned(), start..end));
            }
            i = end;
        } else {
            i += 1;
        }
    }
    out
}

/// `m` with its format strings' captured names renamed by `rename`.
fn rename_captures(
    args: &mut Punctuated<Expr, Token![,]>,
    rename: impl Fn(&str) -> Option<String>,
) {
    for a in args.iter_mut() {
        if let Expr::Lit(syn::ExprLit {
            lit: syn::Lit::Str(s),
            ..
        }) = a
        {
            let v = s.value();
            let mut out = String::new();
            let mut last = 0;
            for (name, r) in captures(&v) {
                if let Some(to) = rename(&name) {
                    out.push_str(&v[last..r.start]);
                    out.push_str(&to);
                    last = r.end;
                }
            }
            if last > 0 {
                out.push_str(&v[last..]);
                *s = syn::LitStr::new(&out, s.span());
            }
        }
    }
}

/// `let name = local_array::<T, N>();`: the name, element type and length.
fn local_array_decl(s: &Stmt) -> syn::Result<Option<(Ident, Type, Tokens)>> {
    let Stmt::Local(Local {
        pat,
        init: Some(init),
        ..
    }) = s
    else {
        return Ok(None);
    };
    let Expr::Call(c) = &*init.expr else {
        return Ok(None);
    };
    if call_name(c).as_deref() != Some("local_array") {
        return Ok(None);
    }
    let name = match pat {
        Pat::Ident(p) if p.subpat.is_none() => p.ident.clone(),
        other => {
            return Err(Error::new(
                other.span(),
                "a local array is bound to a plain name",
            ));
        }
    };
    let Expr::Path(f) = &*c.func else {
        unreachable!("call_name checked")
    };
    let usage = "a local array is declared as `let name = local_array::<T, LEN>();`";
    let syn::PathArguments::AngleBracketed(args) = &f.path.segments[0].arguments else {
        return Err(Error::new(c.span(), usage));
    };
    if args.args.len() != 2 || init.diverge.is_some() {
        return Err(Error::new(c.span(), usage));
    }
    let elem = match &args.args[0] {
        GenericArgument::Type(t) => t.clone(),
        other => return Err(Error::new(other.span(), usage)),
    };
    let len = match &args.args[1] {
        GenericArgument::Const(e) => e.to_token_stream(),
        GenericArgument::Type(t) => t.to_token_stream(),
        other => return Err(Error::new(other.span(), usage)),
    };
    Ok(Some((name, elem, len)))
}

fn check_helper(f: &ItemFn) -> syn::Result<()> {
    if !f.sig.generics.params.is_empty() {
        return Err(Error::new(
            f.sig.generics.span(),
            "a kernel's #[inline] helper cannot be generic",
        ));
    }
    for input in &f.sig.inputs {
        match input {
            syn::FnArg::Typed(pt) if matches!(&*pt.pat, Pat::Ident(p) if p.subpat.is_none()) => {}
            other => {
                return Err(Error::new(
                    other.span(),
                    "a kernel's #[inline] helper takes plain named parameters",
                ));
            }
        }
    }
    let mut r = FindReturn { found: None };
    r.visit_block(&f.block);
    if let Some(span) = r.found {
        return Err(Error::new(
            span,
            "`return` in a kernel's #[inline] helper: the helper is inlined into the kernel, \
             where it would end the work-item; end the helper with its value instead",
        ));
    }
    Ok(())
}

struct FindReturn {
    found: Option<Span>,
}

impl<'a> Visit<'a> for FindReturn {
    fn visit_expr_return(&mut self, r: &'a syn::ExprReturn) {
        self.found.get_or_insert(r.span());
    }
    fn visit_item(&mut self, _: &'a Item) {}
    fn visit_expr_closure(&mut self, _: &'a syn::ExprClosure) {}
}

/// Replaces calls of `#[inline]` helpers by their bodies: `h(a, b)` by
/// `{ let p = a; let q = b; body }`, a parameter given a plain name taking that name instead
/// (so that a helper reaches the kernel's local arrays and buffers by its own names).
struct Inliner<'h> {
    helpers: &'h HashMap<String, ItemFn>,
    depth: usize,
    err: Option<Error>,
}

impl VisitMut for Inliner<'_> {
    fn visit_expr_mut(&mut self, e: &mut Expr) {
        visit_mut::visit_expr_mut(self, e);
        let Expr::Call(c) = e else { return };
        let Some(name) = call_name(c) else { return };
        let Some(helper) = self.helpers.get(&name) else {
            return;
        };
        if self.depth >= MAX_INLINE_DEPTH {
            self.err.get_or_insert(Error::new(
                c.span(),
                format!("#[inline] helpers of a kernel nest more than {MAX_INLINE_DEPTH} deep (recursion?)"),
            ));
            return;
        }
        if c.args.len() != helper.sig.inputs.len() {
            self.err.get_or_insert(Error::new(
                c.span(),
                format!(
                    "`{name}` takes {} argument(s), given {}",
                    helper.sig.inputs.len(),
                    c.args.len()
                ),
            ));
            return;
        }
        let mut body = (*helper.block).clone();
        let mut lets: Vec<Stmt> = Vec::new();
        let mut temps: Vec<Stmt> = Vec::new();
        let mut subst = HashMap::new();
        // Whether an argument names one of the helper's parameters.
        let params: HashSet<String> = helper
            .sig
            .inputs
            .iter()
            .filter_map(|i| match i {
                syn::FnArg::Typed(pt) => match &*pt.pat {
                    Pat::Ident(p) => Some(p.ident.to_string()),
                    _ => None,
                },
                syn::FnArg::Receiver(_) => None,
            })
            .collect();
        let names_params = c.args.iter().any(|a| {
            let mut r = crate::analyze::Refs::default();
            r.visit_expr(a);
            r.names.iter().any(|n| params.contains(n))
        });
        for (input, arg) in helper.sig.inputs.iter().zip(&c.args) {
            let syn::FnArg::Typed(pt) = input else {
                continue;
            };
            let Pat::Ident(p) = &*pt.pat else { continue };
            // Local memory and buffers are rewritten by name: a helper's parameter of one
            // takes the name its caller gave. Any other parameter is a `let` of its value.
            let array = match &*pt.ty {
                Type::Reference(r) => matches!(&*r.elem, Type::Slice(_)),
                Type::Path(t) => t.path.segments.last().is_some_and(|s| s.ident == "Local"),
                _ => false,
            };
            match arg {
                Expr::Path(a)
                    if array
                        && p.mutability.is_none()
                        && a.qself.is_none()
                        && a.path.get_ident().is_some() =>
                {
                    subst.insert(p.ident.to_string(), a.path.segments[0].ident.clone());
                }
                _ if array => {
                    self.err.get_or_insert(Error::new(
                        arg.span(),
                        "local memory or a buffer is passed to an #[inline] helper by its name",
                    ));
                    return;
                }
                _ if names_params => {
                    // Every argument is evaluated before any parameter is bound, so that an
                    // argument naming a parameter (`h(b, a)`) reads the caller's variable.
                    let pat = &pt.pat;
                    let ty = &pt.ty;
                    let tmp = Ident::new(&format!("inline_arg_{}", temps.len()), arg.span());
                    temps.push(syn::parse_quote_spanned!(arg.span()=> let #tmp: #ty = #arg;));
                    lets.push(syn::parse_quote_spanned!(arg.span()=> let #pat: #ty = #tmp;));
                }
                _ => {
                    let pat = &pt.pat;
                    let ty = &pt.ty;
                    lets.push(syn::parse_quote_spanned!(arg.span()=> let #pat: #ty = #arg;));
                }
            }
        }
        Substitute { subst: &subst }.visit_block_mut(&mut body);
        temps.append(&mut lets);
        temps.append(&mut body.stmts);
        body.stmts = temps;
        self.depth += 1;
        self.visit_block_mut(&mut body);
        self.depth -= 1;
        *e = Expr::Block(syn::ExprBlock {
            attrs: Vec::new(),
            label: None,
            block: body,
        });
    }
}

/// Renames a helper's parameters to the names its call gave.
struct Substitute<'s> {
    subst: &'s HashMap<String, Ident>,
}

impl VisitMut for Substitute<'_> {
    fn visit_expr_path_mut(&mut self, p: &mut syn::ExprPath) {
        if p.qself.is_none()
            && let Some(id) = p.path.get_ident()
            && let Some(to) = self.subst.get(&id.to_string())
        {
            p.path.segments[0].ident = Ident::new(&to.to_string(), id.span());
        }
    }
    fn visit_macro_mut(&mut self, m: &mut syn::Macro) {
        if let Some(mut args) = macro_args(m) {
            for a in args.iter_mut() {
                self.visit_expr_mut(a);
            }
            m.tokens = args.to_token_stream();
        }
    }
    fn visit_item_mut(&mut self, _: &mut Item) {}
}

/// Gives each binding a name of its own and records it; checks intrinsic calls and refuses
/// constructs the kernel language does not have.
struct Renamer {
    scopes: Vec<HashMap<String, Ident>>,
    /// Every name bound so far (parameters included).
    used: HashSet<String>,
    vars: HashMap<String, Var>,
    local_arrays: Vec<LocalArray>,
    /// Nesting of blocks below the kernel's body.
    depth: usize,
    err: Option<Error>,
}

impl Renamer {
    fn fail(&mut self, span: Span, msg: impl std::fmt::Display) {
        self.err.get_or_insert(Error::new(span, msg));
    }

    fn fresh(&mut self, name: &str, span: Span) -> Ident {
        if name.starts_with("__") {
            self.fail(
                span,
                "names starting with `__` are reserved in kernels (the generated code's)",
            );
        }
        let mut candidate = name.to_owned();
        let mut k = 1;
        while self.used.contains(&candidate) {
            k += 1;
            candidate = format!("{name}__{k}");
        }
        self.used.insert(candidate.clone());
        Ident::new(&candidate, span)
    }

    fn bind_local_array(&mut self, name: Ident) -> syn::Result<Ident> {
        if is_intrinsic(&name.to_string()) {
            return Err(intrinsic_binding(&name));
        }
        let fresh = self.fresh(&name.to_string(), name.span());
        self.scopes
            .last_mut()
            .expect("a scope")
            .insert(name.to_string(), fresh.clone());
        Ok(fresh)
    }

    /// Binds the names of `pat` in the innermost scope (one fresh name per name, even where
    /// an or-pattern binds it twice), and records them.
    fn bind(&mut self, pat: &mut Pat, let_info: Option<(Option<Type>, Option<Expr>)>) {
        self.bind_in(pat, let_info, true)
    }

    /// Binds `pat`'s names; in a pattern that cannot fail (`let`, `for`), an upper-case name
    /// is refused (it could be a binding or a constant; in `match` arms it is taken as a
    /// constant, as Rust's style has them).
    fn bind_in(
        &mut self,
        pat: &mut Pat,
        let_info: Option<(Option<Type>, Option<Expr>)>,
        irrefutable: bool,
    ) {
        let mut names = Vec::new();
        let mut upper = Vec::new();
        collect_bindings(pat, &mut names, &mut upper);
        if irrefutable && let Some(&span) = upper.first() {
            self.fail(
                span,
                "a kernel's variables are named in lower case (an upper-case name in a `let` \
                 or `for` could be a binding or a constant)",
            );
            return;
        }
        let plain = matches!(pat, Pat::Ident(p) if p.subpat.is_none())
            || matches!(pat, Pat::Type(t) if matches!(&*t.pat, Pat::Ident(p) if p.subpat.is_none()));
        let mut map = HashMap::new();
        for (name, mutable, span) in names {
            if map.contains_key(&name) {
                continue;
            }
            if is_intrinsic(&name) {
                self.fail(span, intrinsic_binding(&Ident::new(&name, span)));
                return;
            }
            let fresh = self.fresh(&name, span);
            let (ty, init) = match (&let_info, plain) {
                (Some((ty, init)), true) => (ty.clone(), init.clone()),
                _ => (None, None),
            };
            self.vars.insert(
                fresh.to_string(),
                Var {
                    original: name.clone(),
                    mutable,
                    ty,
                    init,
                    plain_let: let_info.is_some() && plain,
                    span,
                },
            );
            map.insert(name, fresh);
        }
        RenamePat { map: &map }.visit_pat_mut(pat);
        let scope = self.scopes.last_mut().expect("a scope");
        scope.extend(map);
    }

    fn lookup(&self, name: &str) -> Option<&Ident> {
        self.scopes.iter().rev().find_map(|s| s.get(name))
    }

    fn scoped(&mut self, f: impl FnOnce(&mut Self)) {
        self.scopes.push(HashMap::new());
        self.depth += 1;
        f(self);
        self.depth -= 1;
        self.scopes.pop();
    }
}

fn intrinsic_binding(name: &Ident) -> Error {
    Error::new(
        name.span(),
        format!("`{name}` is a work-item function in kernels: choose another name"),
    )
}

/// The names a pattern binds: (name, mutable, span). An identifier starting with an upper-case
/// letter is taken as a constant or unit variant, as Rust's style has them.
fn collect_bindings(pat: &Pat, out: &mut Vec<(String, bool, Span)>, upper: &mut Vec<Span>) {
    struct Collect<'o>(&'o mut Vec<(String, bool, Span)>, &'o mut Vec<Span>);
    impl<'a> Visit<'a> for Collect<'_> {
        fn visit_pat_ident(&mut self, p: &'a syn::PatIdent) {
            let name = p.ident.to_string();
            if !name.starts_with(|c: char| c.is_uppercase()) {
                self.0.push((name, p.mutability.is_some(), p.ident.span()));
            } else {
                self.1.push(p.ident.span());
            }
            if let Some((_, sub)) = &p.subpat {
                self.visit_pat(sub);
            }
        }
        fn visit_expr(&mut self, _: &'a Expr) {}
        fn visit_type(&mut self, _: &'a Type) {}
    }
    Collect(out, upper).visit_pat(pat);
}

struct RenamePat<'m> {
    map: &'m HashMap<String, Ident>,
}

impl VisitMut for RenamePat<'_> {
    fn visit_pat_ident_mut(&mut self, p: &mut syn::PatIdent) {
        if let Some(to) = self.map.get(&p.ident.to_string()) {
            p.ident = Ident::new(&to.to_string(), p.ident.span());
        }
        if let Some((_, sub)) = &mut p.subpat {
            self.visit_pat_mut(sub);
        }
    }
    fn visit_expr_mut(&mut self, _: &mut Expr) {}
    fn visit_type_mut(&mut self, _: &mut Type) {}
}

impl VisitMut for Renamer {
    fn visit_block_mut(&mut self, b: &mut Block) {
        self.scoped(|r| {
            for s in &mut b.stmts {
                r.visit_stmt_mut(s);
            }
        });
    }

    fn visit_stmt_mut(&mut self, s: &mut Stmt) {
        match s {
            Stmt::Item(Item::Fn(f)) if calls_barrier(&f.block) => {
                let span = f.sig.ident.span();
                self.fail(
                    span,
                    "a helper that calls barrier() is declared in the kernel's body, marked #[inline]",
                );
            }
            Stmt::Item(i) => {
                // The body's top-level items are taken out before; one in an inner block
                // could shadow a variable the analyses follow by name.
                let span = i.span();
                self.fail(
                    span,
                    "items (constants, functions, types) are declared at the top level of the \
                     kernel's body",
                );
            }
            Stmt::Local(l) => {
                if let Some(init) = &mut l.init {
                    if let Expr::Call(c) = &*init.expr
                        && call_name(c).as_deref() == Some("local_array")
                    {
                        let span = c.span();
                        self.fail(
                            span,
                            "local arrays are declared at the top level of the kernel's body",
                        );
                        return;
                    }
                    self.visit_expr_mut(&mut init.expr);
                    if let Some((_, d)) = &mut init.diverge {
                        self.visit_expr_mut(d);
                    }
                }
                let (pat, ty) = match &mut l.pat {
                    Pat::Type(t) => (None, Some((*t.ty).clone())),
                    _ => (Some(()), None),
                };
                let _ = pat;
                let init = l.init.as_ref().map(|i| (*i.expr).clone());
                self.bind(&mut l.pat, Some((ty, init)));
            }
            Stmt::Expr(e, _) => self.visit_expr_mut(e),
            Stmt::Macro(m) => self.visit_macro_mut(&mut m.mac),
        }
    }

    fn visit_expr_mut(&mut self, e: &mut Expr) {
        match e {
            Expr::Closure(c) => self.fail(
                c.span(),
                "closures are not supported in kernels: a kernel's work-items are loops, and a \
                 closure could carry a work-item's values across them",
            ),
            Expr::Async(a) => self.fail(a.span(), "`async` is not supported in kernels"),
            Expr::Await(a) => self.fail(a.span(), "`.await` is not supported in kernels"),
            Expr::Try(t) => self.fail(
                t.question_token.span(),
                "`?` is not supported in kernels: a kernel returns nothing",
            ),
            Expr::Yield(y) => self.fail(y.span(), "`yield` is not supported in kernels"),
            Expr::ForLoop(f) => {
                self.visit_expr_mut(&mut f.expr);
                self.scoped(|r| {
                    r.bind(&mut f.pat, None);
                    r.visit_block_mut(&mut f.body);
                });
            }
            Expr::Match(m) => {
                self.visit_expr_mut(&mut m.expr);
                for arm in &mut m.arms {
                    self.scoped(|r| {
                        r.bind_in(&mut arm.pat, None, false);
                        if let Some((_, g)) = &mut arm.guard {
                            r.visit_expr_mut(g);
                        }
                        r.visit_expr_mut(&mut arm.body);
                    });
                }
            }
            Expr::If(i) => {
                if let Expr::Let(l) = &mut *i.cond {
                    self.visit_expr_mut(&mut l.expr);
                    let then = &mut i.then_branch;
                    let pat = &mut l.pat;
                    self.scoped(|r| {
                        r.bind(pat, None);
                        r.visit_block_mut(then);
                    });
                } else {
                    self.visit_expr_mut(&mut i.cond);
                    self.visit_block_mut(&mut i.then_branch);
                }
                if let Some((_, e)) = &mut i.else_branch {
                    self.visit_expr_mut(e);
                }
            }
            Expr::While(w) => {
                if let Expr::Let(l) = &mut *w.cond {
                    self.visit_expr_mut(&mut l.expr);
                    let body = &mut w.body;
                    let pat = &mut l.pat;
                    self.scoped(|r| {
                        r.bind(pat, None);
                        r.visit_block_mut(body);
                    });
                } else {
                    self.visit_expr_mut(&mut w.cond);
                    self.visit_block_mut(&mut w.body);
                }
            }
            Expr::Let(l) => self.fail(
                l.span(),
                "`let` in a condition is supported only as the whole condition of `if let` or \
                 `while let`",
            ),
            Expr::Path(p) => {
                if let Some(seg) = p.path.segments.first()
                    && seg.ident.to_string().starts_with("__")
                {
                    let span = seg.ident.span();
                    self.fail(
                        span,
                        "names starting with `__` are reserved in kernels (the generated code's)",
                    );
                    return;
                }
                if p.qself.is_none()
                    && let Some(id) = p.path.get_ident()
                    && let Some(to) = self.lookup(&id.to_string())
                {
                    p.path.segments[0].ident = Ident::new(&to.to_string(), id.span());
                }
            }
            Expr::Call(c) => {
                if let Some(name) = call_name(c)
                    && is_intrinsic(&name)
                    && self.lookup(&name).is_none()
                {
                    let arity = intrinsic_arity(&name);
                    if name == "local_array" {
                        let span = c.span();
                        self.fail(
                            span,
                            "local arrays are declared by a `let` at the top level of the kernel's body",
                        );
                        return;
                    }
                    if c.args.len() != arity {
                        let span = c.span();
                        self.fail(
                            span,
                            format!("`{name}` takes {arity} argument(s), given {}", c.args.len()),
                        );
                        return;
                    }
                    for a in &mut c.args {
                        self.visit_expr_mut(a);
                    }
                    return;
                }
                visit_mut::visit_expr_call_mut(self, c);
            }
            Expr::Struct(s) => {
                for f in &mut s.fields {
                    if f.colon_token.is_none() {
                        f.colon_token = Some(Default::default());
                    }
                }
                visit_mut::visit_expr_struct_mut(self, s);
            }
            _ => visit_mut::visit_expr_mut(self, e),
        }
    }

    fn visit_macro_mut(&mut self, m: &mut syn::Macro) {
        if !KNOWN_MACROS.iter().any(|k| m.path.is_ident(k)) || macro_args(m).is_none() {
            let span = m.path.span();
            self.fail(
                span,
                format!(
                    "macro `{}!` in a kernel: the analyses cannot see what a macro does with \
                     the variables it is given; kernels take only {}",
                    m.path.to_token_stream(),
                    KNOWN_MACROS
                        .iter()
                        .map(|k| format!("`{k}!`"))
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            );
            return;
        }
        if let Some(mut args) = macro_args(m) {
            for a in args.iter_mut() {
                self.visit_expr_mut(a);
            }
            rename_captures(&mut args, |n| {
                self.lookup(n).map(|i| i.to_string()).filter(|to| to != n)
            });
            m.tokens = args.to_token_stream();
        }
    }

    fn visit_item_mut(&mut self, _: &mut Item) {}
}
