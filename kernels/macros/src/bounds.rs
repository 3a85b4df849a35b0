//! Range analysis of indices, for checking them once per region instead of once per access.
//!
//! In a region's work-item loops every index of local memory and of buffers is checked. For
//! an index that is a `usize` expression of work-item ids, uniform values and loop counters
//! (`ly * 16 + k`, `lid + s` under `if lid < s`), this pass builds, as code, the largest value
//! the index can take in the region (ids at their largest, loop counters at their last,
//! bounds narrowed by the comparisons of the `if`s around the access). The generated region
//! checks every such bound against its array's length once, before the loops, and then runs
//! a copy of the loops whose accesses go unchecked (they vectorize); if a bound cannot be
//! shown, the checked copy runs and the out-of-bounds work-item panics as it would anyway.
//!
//! The bounds are runtime expressions of type `Option<usize>` (`None`: unknown, or an
//! operation overflowed: the checked copy runs). Every step is conservative: sums and
//! products of unsigned values grow with their operands, a difference is bounded only where
//! it cannot go below zero, and nothing is concluded through a cast of a work-item value or
//! from a comparison of a type other than `usize`.

use std::collections::HashSet;

use proc_macro2::{Literal, TokenStream as Tokens};
use quote::{ToTokens, quote};
use syn::visit::Visit;
use syn::{BinOp, Expr, UnOp};

use crate::prepare::{Body, call_name};

/// A bound known of an expression: (its text, its largest value, its smallest value), each
/// as code of type `Option<usize>`.
pub(crate) type Fact = (String, Option<Tokens>, Option<Tokens>);

/// What is known where an access is: bounds of expressions (by their text), innermost last.
pub(crate) struct Bounds<'b> {
    pub(crate) body: &'b Body,
    /// Variables and parameters whose values are the same for the whole region and known
    /// before its loops (uniform variables, scalar parameters).
    pub(crate) invariant: &'b HashSet<String>,
    /// Counters of the loops run once per group around the region (`for k in 0..n` with a
    /// uniform range, not `mut`): known before the region's loops, inside the loop.
    pub(crate) counters: Vec<String>,
    /// Arrays whose elements change while the region runs (local memory, written buffers):
    /// an expression reading them is not known before the loops.
    pub(crate) changing: &'b HashSet<String>,
    pub(crate) krate: &'b Tokens,
    /// (expression text, largest value, smallest value).
    pub(crate) facts: Vec<Fact>,
}

const MAX_DEPTH: usize = 12;

/// Whether evaluating `e` before the loops cannot panic: a name, a literal, or a uniform
/// work-item function of literals.
fn simple(e: &Expr) -> bool {
    match e {
        Expr::Path(_) | Expr::Lit(_) => true,
        Expr::Paren(p) => simple(&p.expr),
        Expr::Call(c) => c.args.iter().all(|a| int(a).is_some()),
        _ => false,
    }
}

fn key(e: &Expr) -> String {
    e.to_token_stream().to_string()
}

fn int(e: &Expr) -> Option<usize> {
    match e {
        Expr::Lit(syn::ExprLit {
            lit: syn::Lit::Int(i),
            ..
        }) => i.base10_parse::<usize>().ok(),
        _ => None,
    }
}

impl Bounds<'_> {
    fn b(&self) -> Tokens {
        let k = self.krate;
        quote!(#k::__rt::bound)
    }

    /// Whether `e` can be evaluated before the region's loops, with the value it has in them.
    /// Whether `e` is known before the loops and evaluating it there cannot panic.
    fn known(&self, name: &str) -> bool {
        self.invariant.contains(name) || self.counters.iter().any(|c| c == name)
    }

    pub(crate) fn is_simple_invariant(&self, e: &Expr) -> bool {
        self.invariant(e) && simple(e)
    }

    /// Whether `e` is the same for every work-item of the group and its value can be taken
    /// once before the loops.
    pub(crate) fn invariant(&self, e: &Expr) -> bool {
        struct I<'a, 'b> {
            b: &'a Bounds<'b>,
            ok: bool,
        }
        impl<'v> Visit<'v> for I<'_, '_> {
            fn visit_expr(&mut self, e: &'v Expr) {
                match e {
                    Expr::Path(p) => match p.path.get_ident() {
                        Some(id) if self.b.known(&id.to_string()) => {}
                        _ => self.ok = false,
                    },
                    Expr::Call(c) => match call_name(c).as_deref() {
                        Some(n) if crate::UNIFORM_INTRINSICS.contains(&n) => {
                            c.args.iter().for_each(|a| self.visit_expr(a))
                        }
                        _ => self.ok = false,
                    },
                    Expr::Lit(_)
                    | Expr::Paren(_)
                    | Expr::Group(_)
                    | Expr::Cast(_)
                    | Expr::Binary(_) => {
                        if let Expr::Binary(b) = e
                            && crate::analyze::is_assign_op(&b.op)
                        {
                            self.ok = false;
                        }
                        syn::visit::visit_expr(self, e)
                    }
                    Expr::Unary(u) if !matches!(u.op, UnOp::Deref(_)) => {
                        syn::visit::visit_expr(self, e)
                    }
                    Expr::Index(i) => match &*i.expr {
                        Expr::Path(p)
                            if p.path.get_ident().is_some_and(|id| {
                                !self.b.changing.contains(&id.to_string())
                                    && self.b.known(&id.to_string())
                            }) =>
                        {
                            self.visit_expr(&i.index)
                        }
                        _ => self.ok = false,
                    },
                    _ => self.ok = false,
                }
            }
        }
        let mut i = I { b: self, ok: true };
        i.visit_expr(e);
        i.ok
    }

    fn fact(&self, e: &Expr) -> Option<&Fact> {
        let k = key(e);
        self.facts.iter().rev().find(|f| f.0 == k)
    }

    /// The variable `e` names, if it is one bound by an immutable `let` with a value.
    fn let_init(&self, e: &Expr) -> Option<&Expr> {
        let Expr::Path(p) = e else { return None };
        let v = self.body.vars.get(&p.path.get_ident()?.to_string())?;
        if v.mutable || !v.plain_let {
            return None;
        }
        let init = v.init.as_ref()?;
        // Its value was computed from what its initialiser read then: a mutable variable may
        // hold something else now.
        let mut r = crate::analyze::Refs::default();
        r.visit_expr(init);
        // (Names that are not the body's variables are parameters, work-item functions and
        // items: none of them changes.)
        if r.names
            .iter()
            .any(|n| self.body.vars.get(n).is_some_and(|v| v.mutable))
        {
            return None;
        }
        Some(init)
    }

    /// The largest value of `e` in the region, as code; `None` where nothing can be said.
    pub(crate) fn max(&self, e: &Expr) -> Option<Tokens> {
        self.max_at(e, 0)
    }

    fn max_at(&self, e: &Expr, depth: usize) -> Option<Tokens> {
        if depth > MAX_DEPTH {
            return None;
        }
        let b = self.b();
        let structural = self.max_structural(e, depth);
        match (self.fact(e).and_then(|f| f.1.clone()), structural) {
            (Some(f), Some(s)) => Some(quote!(#b::min(#f, #s))),
            (f, s) => f.or(s),
        }
    }

    fn max_structural(&self, e: &Expr, depth: usize) -> Option<Tokens> {
        let b = self.b();
        let d = depth + 1;
        if let Some(v) = int(e) {
            let v = Literal::usize_suffixed(v);
            return Some(quote!(Some(#v)));
        }
        match e {
            Expr::Paren(p) => self.max_at(&p.expr, d),
            Expr::Group(g) => self.max_at(&g.expr, d),
            Expr::Cast(c) if self.invariant(&c.expr) && simple(&c.expr) => {
                let e = self.group(&c.expr);
                Some(quote!(Some((#e) as usize)))
            }
            Expr::Path(p) => {
                let id = p.path.get_ident()?;
                if self.known(&id.to_string()) {
                    return Some(quote!((&#b::Probe(&#id)).index()));
                }
                let init = self.let_init(e)?;
                self.max_at(init, d)
            }
            Expr::Call(c) => self.intrinsic(c, true),
            Expr::Binary(x) => {
                let (l, r) = (&*x.left, &*x.right);
                match x.op {
                    BinOp::Add(_) => {
                        let (l, r) = (self.max_at(l, d)?, self.max_at(r, d)?);
                        Some(quote!(#b::add(#l, #r)))
                    }
                    BinOp::Mul(_) => {
                        let (l, r) = (self.max_at(l, d)?, self.max_at(r, d)?);
                        Some(quote!(#b::mul(#l, #r)))
                    }
                    BinOp::Sub(_) => {
                        let (lmax, lmin) = (self.max_at(l, d)?, self.min_at(l, d));
                        let (rmax, rmin) = (self.max_at(r, d)?, self.min_at(r, d));
                        Some(quote!(#b::sub(#lmax, #lmin, #rmax, #rmin)))
                    }
                    BinOp::Div(_) if int(r).is_some_and(|v| v > 0) => {
                        let (l, r) = (self.max_at(l, d)?, self.min_at(r, d));
                        Some(quote!(#b::div(#l, #r)))
                    }
                    BinOp::Rem(_) => {
                        let r = self.max_at(r, d)?;
                        let whole = self.max_at(l, d);
                        match whole {
                            Some(l) => Some(quote!(#b::min(#l, #b::rem(#r)))),
                            None => Some(quote!(#b::rem(#r))),
                        }
                    }
                    _ => None,
                }
            }
            // Only where both sides are bounded, that is built of what the analysis knows to be
            // `usize` values: `min` is then `Ord::min`.
            Expr::MethodCall(m) if m.method == "min" && m.args.len() == 1 => {
                let l = self.max_at(&m.receiver, d)?;
                let r = self.max_at(&m.args[0], d)?;
                Some(quote!(#b::min(#l, #r)))
            }
            _ => None,
        }
    }

    /// The smallest value of `e` in the region (a `usize` is at least zero).
    fn min_at(&self, e: &Expr, depth: usize) -> Tokens {
        let zero = quote!(Some(0usize));
        if depth > MAX_DEPTH {
            return zero;
        }
        if let Some(f) = self.fact(e).and_then(|f| f.2.clone()) {
            return f;
        }
        let b = self.b();
        let d = depth + 1;
        if let Some(v) = int(e) {
            let v = Literal::usize_suffixed(v);
            return quote!(Some(#v));
        }
        match e {
            Expr::Paren(p) => self.min_at(&p.expr, d),
            Expr::Group(g) => self.min_at(&g.expr, d),
            Expr::Cast(c) if self.invariant(&c.expr) && simple(&c.expr) => {
                let e = self.group(&c.expr);
                quote!(Some((#e) as usize))
            }
            Expr::Path(p) => {
                let Some(id) = p.path.get_ident() else {
                    return zero;
                };
                if self.known(&id.to_string()) {
                    return quote!((&#b::Probe(&#id)).index().or(Some(0usize)));
                }
                match self.let_init(e) {
                    Some(init) => self.min_at(init, d),
                    None => zero,
                }
            }
            Expr::Call(c) => self.intrinsic(c, false).unwrap_or(zero),
            Expr::Binary(x) => {
                let (l, r) = (&*x.left, &*x.right);
                match x.op {
                    BinOp::Add(_) => {
                        let (l, r) = (self.min_at(l, d), self.min_at(r, d));
                        quote!(#b::add(#l, #r).or(Some(0usize)))
                    }
                    BinOp::Mul(_) => {
                        let (l, r) = (self.min_at(l, d), self.min_at(r, d));
                        quote!(#b::mul(#l, #r).or(Some(0usize)))
                    }
                    BinOp::Sub(_) => match self.max_at(r, d) {
                        Some(rmax) => {
                            let lmin = self.min_at(l, d);
                            quote!(#b::sub(#lmin, #lmin, #rmax, #rmax).or(Some(0usize)))
                        }
                        None => zero,
                    },
                    _ => zero,
                }
            }
            _ => zero,
        }
    }

    /// A work-item function's largest (`max`) or smallest value in the region.
    fn intrinsic(&self, c: &syn::ExprCall, max: bool) -> Option<Tokens> {
        let name = call_name(c)?;
        let dim = c.args.first().and_then(int);
        let ls = |d: usize| quote::format_ident!("__ls{}", d);
        let gb = |d: usize| quote::format_ident!("__gb{}", d);
        match (name.as_str(), dim) {
            ("local_id", Some(d)) if d < 3 => {
                let l = ls(d);
                Some(if max {
                    quote!(Some(#l - 1))
                } else {
                    quote!(Some(0usize))
                })
            }
            ("global_id", Some(d)) if d < 3 => {
                let (l, g) = (ls(d), gb(d));
                Some(if max {
                    quote!(Some(#g + (#l - 1)))
                } else {
                    quote!(Some(#g))
                })
            }
            ("global_linear_id", _) => Some(if max {
                quote!(Some(
                    __glb + (__ls0 - 1) + __gs0 * ((__ls1 - 1) + __gs1 * (__ls2 - 1))
                ))
            } else {
                quote!(Some(__glb))
            }),
            ("local_linear_id", _) => Some(if max {
                quote!(Some(__items - 1))
            } else {
                quote!(Some(0usize))
            }),
            (n, _)
                if crate::UNIFORM_INTRINSICS.contains(&n)
                    && c.args.iter().all(|a| int(a).is_some()) =>
            {
                let e = self.group(&Expr::Call(c.clone()));
                Some(quote!(Some(#e)))
            }
            _ => None,
        }
    }

    /// `e` (known before the loops) as the group-level code computes it.
    fn group(&self, e: &Expr) -> Tokens {
        crate::emit::group_level(e, self.krate)
    }

    /// The facts a condition gives where it holds (`holds`) or where it does not.
    pub(crate) fn facts_of(
        &self,
        cond: &Expr,
        holds: bool,
    ) -> Vec<(String, Option<Tokens>, Option<Tokens>)> {
        let b = self.b();
        let mut out = Vec::new();
        match cond {
            Expr::Paren(p) => return self.facts_of(&p.expr, holds),
            Expr::Binary(x) if matches!(x.op, BinOp::And(_)) && holds => {
                out.extend(self.facts_of(&x.left, true));
                out.extend(self.facts_of(&x.right, true));
            }
            Expr::Unary(u) if matches!(u.op, UnOp::Not(_)) => {
                return self.facts_of(&u.expr, !holds);
            }
            Expr::Binary(x) => {
                // As `small < big` (strict) or `small <= big`.
                let (small, big, strict) = match (x.op, holds) {
                    (BinOp::Lt(_), true) | (BinOp::Ge(_), false) => (&*x.left, &*x.right, true),
                    (BinOp::Le(_), true) | (BinOp::Gt(_), false) => (&*x.left, &*x.right, false),
                    (BinOp::Gt(_), true) | (BinOp::Le(_), false) => (&*x.right, &*x.left, true),
                    (BinOp::Ge(_), true) | (BinOp::Lt(_), false) => (&*x.right, &*x.left, false),
                    _ => return out,
                };
                if self.keyable(small)
                    && let Some(bmax) = self.max(big)
                {
                    let m = if strict {
                        quote!(#b::sub(#bmax, #bmax, Some(1usize), Some(1usize)))
                    } else {
                        bmax
                    };
                    out.push((key(small), Some(m), None));
                }
                if self.keyable(big) {
                    let smin = self.min_at(small, 0);
                    let m = if strict {
                        quote!(#b::add(#smin, Some(1usize)))
                    } else {
                        smin
                    };
                    out.push((key(big), None, Some(m)));
                }
            }
            _ => {}
        }
        out
    }

    /// A `for` counter's facts: at least the range's start, at most its last value.
    pub(crate) fn facts_of_range(
        &self,
        name: &str,
        range: &Expr,
    ) -> Vec<(String, Option<Tokens>, Option<Tokens>)> {
        let b = self.b();
        let Expr::Range(r) = range else {
            return Vec::new();
        };
        let min = match &r.start {
            Some(s) => self.min_at(s, 0),
            None => quote!(Some(0usize)),
        };
        let max = r
            .end
            .as_ref()
            .and_then(|e| self.max(e))
            .map(|m| match r.limits {
                syn::RangeLimits::HalfOpen(_) => {
                    quote!(#b::sub(#m, #m, Some(1usize), Some(1usize)))
                }
                syn::RangeLimits::Closed(_) => m,
            });
        vec![(name.to_owned(), max, Some(min))]
    }

    /// Whether facts about `e` stay true while they hold: a work-item function, or a variable
    /// no statement changes.
    fn keyable(&self, e: &Expr) -> bool {
        match e {
            // Of literal dimensions only: `local_id(d)` with `d` a variable changes with it.
            Expr::Call(c) => {
                call_name(c).is_some_and(|n| crate::VARYING_INTRINSICS.contains(&n.as_str()))
                    && c.args.iter().all(|a| int(a).is_some())
            }
            Expr::Path(p) => p.path.get_ident().is_some_and(|id| {
                self.body
                    .vars
                    .get(&id.to_string())
                    .is_some_and(|v| !v.mutable)
            }),
            _ => false,
        }
    }
}
