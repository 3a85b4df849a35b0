//! The analyses: region formation at barriers, uniformity, and which variables live across
//! regions (recomputed or kept per work-item).
//!
//! The body becomes a tree of [`Node`]s. A *run* is a sequence of statements between
//! barriers that every work-item executes: the code generator wraps it in the work-item
//! loops. Everything else runs once per group: statements that only compute uniform values,
//! and control flow that contains a barrier (or a jump out of a loop that does), whose
//! condition must then be uniform, evaluated once into a scalar (seed paper: "the control
//! structure kept outside the work-item loops").

use std::collections::{HashMap, HashSet};

use proc_macro2::Span;
use syn::spanned::Spanned;
use syn::visit::{self, Visit};
use syn::{BinOp, Error, Expr, Label, Pat, Stmt, UnOp};

use crate::prepare::{Body, FindCall, call_name, format_names, macro_args};
use crate::{Param, ParamKind, UNIFORM_INTRINSICS, VARYING_INTRINSICS};

/// Statements as the generated code nests them.
pub(crate) enum Node {
    /// Statements every work-item runs, in the work-item loops.
    Run {
        stmts: Vec<Stmt>,
        id: usize,
    },
    /// A statement run once per group (a uniform `let` or assignment).
    Group(Stmt),
    If {
        cond: Expr,
        then: Vec<Node>,
        els: Option<Box<Else>>,
    },
    For {
        label: Option<Label>,
        pat: Pat,
        iter: Expr,
        body: Vec<Node>,
    },
    While {
        label: Option<Label>,
        cond: Expr,
        body: Vec<Node>,
    },
    Loop {
        label: Option<Label>,
        body: Vec<Node>,
    },
    Block(Vec<Node>),
    /// `break`, `continue` or `return`, taken by the whole group.
    Jump(Stmt),
}

pub(crate) enum Else {
    Block(Vec<Node>),
    If(Box<Node>),
}

/// How a written buffer's elements are reached.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum Written {
    /// Only at the work-item's own element; `dim0`: some index is `global_id(0)`, which is
    /// one per work-item only in launches one item wide past dimension 0.
    Own { dim0: bool },
    /// At any element (atomically).
    Shared,
    /// At any element, which the kernel promises no other work-item touches
    /// (`#[kernel(unsafe(disjoint(name)))]`): plain loads and stores.
    Disjoint,
}

pub(crate) struct Analysis {
    pub(crate) nodes: Vec<Node>,
    /// Variables kept per work-item, in the order of their declarations.
    pub(crate) expanded: Vec<String>,
    /// Variables recomputed in each run that uses them, in the order of their declarations.
    pub(crate) recomputed: Vec<String>,
    /// Variables computed once per group.
    pub(crate) uniform: Vec<String>,
    pub(crate) regions: usize,
    /// The counters of the loops run breadth-first, as written.
    pub(crate) breadth_first: Vec<String>,
    /// Each written buffer parameter's access kind, by name.
    pub(crate) written: HashMap<String, Written>,
    /// Each run's id → the variables it references.
    pub(crate) refs_of_run: HashMap<usize, HashSet<String>>,
    /// Each run's id → the index of the statement of the run that is a loop to run in strips
    /// of work-items (see `strip_loop`), where it has one.
    pub(crate) strips: HashMap<usize, usize>,
    /// The loops inside regions whose order the accesses' strides decide (see `loop_votes`),
    /// in the order they were met.
    pub(crate) loops: Vec<LoopReport>,
}

/// A loop's accesses and their strides, for the kernel's report.
#[derive(Clone, Debug)]
pub(crate) struct LoopReport {
    /// The counter, as written.
    pub(crate) counter: String,
    /// Each access (`array[index]`, as written) with its stride along the work-items of
    /// dimension 0 and along the loop: 0 the same element, 1 consecutive ones, 2 any other.
    pub(crate) accesses: Vec<(String, u8, u8)>,
}

pub(crate) fn analyze(body: &Body, params: &[Param], breadth_first: bool) -> syn::Result<Analysis> {
    // Breadth-first loops make more variables live across regions; where one of them cannot
    // be kept per work-item (no type written, or borrowed), every loop stays depth-first.
    if !breadth_first {
        return analyze_with(body, params, false);
    }
    match analyze_with(body, params, true) {
        Ok(a) => Ok(a),
        Err(e) => match analyze_with(body, params, false) {
            Ok(a) => Ok(a),
            Err(_) => Err(e),
        },
    }
}

fn analyze_with(body: &Body, params: &[Param], breadth_first: bool) -> syn::Result<Analysis> {
    let mut a = Analyzer {
        body,
        params,
        varying: HashSet::new(),
        next_run: 0,
        refs_of_run: HashMap::new(),
        breadth_first,
        bfo_loops: Vec::new(),
        strips: HashMap::new(),
        loops: std::cell::RefCell::new(Vec::new()),
    };
    // Uniformity: a fixpoint, as marking one variable varying can make another vary.
    loop {
        let before = a.varying.len();
        a.mark(&body.stmts, true)?;
        if a.varying.len() == before {
            break;
        }
    }
    let nodes = a.build(&body.stmts, true)?;
    check_returns(&nodes)?;
    let mut runs_of: HashMap<String, HashSet<usize>> = HashMap::new();
    for (run, names) in &a.refs_of_run {
        for n in names {
            runs_of.entry(n.clone()).or_default().insert(*run);
        }
    }
    // Declaration order: the order of the names' spans is not available on stable, so
    // follow the order in which the body binds them.
    let order = declaration_order(&body.stmts);
    let crossing: Vec<String> = order
        .iter()
        .filter(|v| a.varying.contains(*v) && runs_of.get(*v).is_some_and(|r| r.len() > 1))
        .cloned()
        .collect();
    let mut recomputed: Vec<String> = Vec::new();
    for v in &crossing {
        let var = &body.vars[v];
        if var.plain_let
            && !var.mutable
            && var.init.as_ref().is_some_and(|e| a.cheap(e, &recomputed))
        {
            recomputed.push(v.clone());
        }
    }
    let mut expanded = Vec::new();
    for v in crossing {
        if recomputed.contains(&v) {
            continue;
        }
        let var = &body.vars[&v];
        if !var.plain_let {
            return Err(Error::new(
                var.span,
                format!(
                    "`{}` lives across a barrier and differs between work-items: it is kept per \
                     work-item, which needs a plain `let {}: T = ...` (not a pattern, `for` or `match`)",
                    var.original, var.original
                ),
            ));
        }
        if var.ty.is_none() {
            return Err(Error::new(
                var.span,
                format!(
                    "`{}` lives across a barrier (or across code run once per group) and differs \
                     between work-items: it is kept per work-item, which needs its type: \
                     `let {}: T = ...`",
                    var.original, var.original
                ),
            ));
        }
        expanded.push(v);
    }
    check_borrows(&nodes, &expanded, body)?;
    let uniform = order
        .iter()
        .filter(|v| !a.varying.contains(*v))
        .cloned()
        .collect();
    let written = written_kinds(body, params)?;
    let regions = count_runs(&nodes);
    Ok(Analysis {
        nodes,
        expanded,
        recomputed,
        uniform,
        regions,
        written,
        refs_of_run: a.refs_of_run,
        breadth_first: a.bfo_loops,
        strips: a.strips,
        loops: a.loops.into_inner().into_iter().map(|(_, r)| r).collect(),
    })
}

struct Analyzer<'b> {
    body: &'b Body,
    params: &'b [Param],
    varying: HashSet<String>,
    next_run: usize,
    refs_of_run: HashMap<usize, HashSet<String>>,
    /// Whether loops inside regions may run breadth-first.
    breadth_first: bool,
    bfo_loops: Vec<String>,
    strips: HashMap<usize, usize>,
    /// Keyed by the loop's code, so that a loop looked at twice is reported once.
    loops: std::cell::RefCell<Vec<(String, LoopReport)>>,
}

/// What a statement at group level is.
enum Kind {
    /// Contains a barrier or a jump the whole group must take: control flow at group level.
    Structural,
    /// Computes a uniform value once per group.
    Group,
    /// Runs per work-item.
    Item,
}

impl Analyzer<'_> {
    fn is_uniform(&self, e: &Expr) -> bool {
        let mut u = Uniformity {
            varying: &self.varying,
            uniform: true,
        };
        u.visit_expr(e);
        u.uniform
    }

    /// What each statement of a group-level block is. After a statement with a work-item's
    /// `return`, everything is work-item code: a work-item that returned must not see it run.
    fn kinds(&self, stmts: &[Stmt], top: bool) -> Vec<Kind> {
        let mut after_return = false;
        stmts
            .iter()
            .enumerate()
            .map(|(i, s)| {
                let k = if after_return && !has_barrier_stmt(s) {
                    Kind::Item
                } else {
                    self.kind(s, top, &stmts[i + 1..])
                };
                if matches!(k, Kind::Item) && returns(s) {
                    after_return = true;
                }
                k
            })
            .collect()
    }

    fn kind(&self, s: &Stmt, top: bool, rest: &[Stmt]) -> Kind {
        if has_barrier_stmt(s)
            || escapes(s)
            || (returns(s) && (!top || rest.iter().any(has_barrier_stmt)))
        {
            return Kind::Structural;
        }
        if self.breadth_first && self.breadth_first_loop(s) {
            return Kind::Structural;
        }
        if self.group_only(s) {
            return Kind::Group;
        }
        Kind::Item
    }

    /// Whether `s` only computes uniform values: a `let` of a plain name or an assignment of
    /// a uniform variable, with a uniform value, or an `if` with a uniform condition whose
    /// branches do only that.
    fn group_only(&self, s: &Stmt) -> bool {
        match s {
            Stmt::Local(l) if l.init.as_ref().is_some_and(|i| i.diverge.is_none()) => {
                let names = bound_names(&l.pat);
                let plain = matches!(&l.pat, Pat::Ident(p) if p.subpat.is_none() && p.by_ref.is_none())
                    || matches!(&l.pat, Pat::Type(t) if matches!(&*t.pat, Pat::Ident(p) if p.subpat.is_none() && p.by_ref.is_none()));
                let init = &l.init.as_ref().expect("checked").expr;
                plain && names.iter().all(|n| !self.varying.contains(n)) && self.is_uniform(init)
            }
            Stmt::Expr(Expr::If(i), _) => {
                !matches!(&*i.cond, Expr::Let(_))
                    && self.is_uniform(&i.cond)
                    && i.then_branch.stmts.iter().all(|s| self.group_assignment(s))
                    && match i.else_branch.as_ref().map(|(_, e)| &**e) {
                        None => true,
                        Some(Expr::Block(b)) => {
                            b.block.stmts.iter().all(|s| self.group_assignment(s))
                        }
                        Some(e @ Expr::If(_)) => self.group_only(&Stmt::Expr(e.clone(), None)),
                        Some(_) => false,
                    }
            }
            Stmt::Expr(e, Some(_)) => {
                self.group_assignment(s) && matches!(e, Expr::Assign(_) | Expr::Binary(_))
            }
            _ => false,
        }
    }

    /// An assignment of a uniform variable with a uniform value (inside a group-level `if`,
    /// also a nested such `if`).
    fn group_assignment(&self, s: &Stmt) -> bool {
        match s {
            Stmt::Expr(Expr::If(_), _) => self.group_only(s),
            Stmt::Expr(e, _) => match assign_target(e) {
                Some((target, rhs)) => {
                    self.body.vars.contains_key(&target)
                        && !self.varying.contains(&target)
                        && self.is_uniform(rhs)
                }
                None => false,
            },
            _ => false,
        }
    }

    /// One round of the uniformity fixpoint over a group-level block.
    fn mark(&mut self, stmts: &[Stmt], top: bool) -> syn::Result<()> {
        let kinds = self.kinds(stmts, top);
        for (s, kind) in stmts.iter().zip(kinds) {
            match kind {
                Kind::Structural => self.mark_structural(s)?,
                Kind::Group => {}
                Kind::Item => {
                    // Buffers and local arrays are not variables: writing an element of one
                    // makes nothing vary.
                    let vars = &self.body.vars;
                    self.varying.extend(
                        written_names(std::slice::from_ref(s))
                            .into_iter()
                            .filter(|n| vars.contains_key(n)),
                    );
                }
            }
        }
        Ok(())
    }

    fn mark_structural(&mut self, s: &Stmt) -> syn::Result<()> {
        let Stmt::Expr(e, _) = s else { return Ok(()) };
        match e {
            Expr::If(i) => {
                self.mark(&i.then_branch.stmts, false)?;
                let mut els = i.else_branch.as_ref().map(|(_, e)| &**e);
                while let Some(e) = els {
                    match e {
                        Expr::If(i) => {
                            self.mark(&i.then_branch.stmts, false)?;
                            els = i.else_branch.as_ref().map(|(_, e)| &**e);
                        }
                        Expr::Block(b) => {
                            self.mark(&b.block.stmts, false)?;
                            els = None;
                        }
                        _ => els = None,
                    }
                }
            }
            Expr::ForLoop(f) => {
                if !self.is_uniform(&f.expr) {
                    self.varying.extend(bound_names(&f.pat));
                }
                self.mark(&f.body.stmts, false)?;
            }
            Expr::While(w) => self.mark(&w.body.stmts, false)?,
            Expr::Loop(l) => self.mark(&l.body.stmts, false)?,
            Expr::Block(b) => self.mark(&b.block.stmts, false)?,
            _ => {}
        }
        Ok(())
    }

    fn new_run(&mut self, stmts: Vec<Stmt>) -> Node {
        let id = self.next_run;
        self.next_run += 1;
        let mut r = Refs::default();
        for s in &stmts {
            r.visit_stmt(s);
        }
        self.refs_of_run.insert(id, r.names);
        if self.breadth_first
            && let Some(at) = stmts.iter().position(|s| self.strip_loop(s))
        {
            self.strips.insert(id, at);
        }
        Node::Run { stmts, id }
    }

    /// A uniform condition that references work-item values through `uniform(..)` is
    /// evaluated in a work-item's context: it counts as a run of its own for liveness.
    fn note_condition(&mut self, cond: &Expr) {
        let mut r = Refs::default();
        r.visit_expr(cond);
        self.note_refs(r.names);
    }

    fn note_refs(&mut self, names: HashSet<String>) {
        if names.iter().any(|n| self.varying.contains(n)) {
            let id = self.next_run;
            self.next_run += 1;
            self.refs_of_run.insert(id, names);
        }
    }

    fn build(&mut self, stmts: &[Stmt], top: bool) -> syn::Result<Vec<Node>> {
        let mut nodes = Vec::new();
        let mut run: Vec<Stmt> = Vec::new();
        let mut hoisted: Vec<Stmt> = Vec::new();
        macro_rules! flush {
            () => {
                nodes.extend(hoisted.drain(..).map(Node::Group));
                if !run.is_empty() {
                    let stmts = std::mem::take(&mut run);
                    let r = match self.unswitch(&stmts)? {
                        Some(n) => n,
                        None => self.new_run(stmts),
                    };
                    nodes.push(r);
                }
            };
        }
        let kinds = self.kinds(stmts, top);
        for (s, kind) in stmts.iter().zip(kinds) {
            match kind {
                Kind::Item => run.push(s.clone()),
                Kind::Group => {
                    // `uniform(..)` of work-item values is evaluated for the group's first
                    // work-item: what it reads must be live there.
                    let asserted = {
                        let mut f = FindCall {
                            name: "uniform",
                            found: false,
                        };
                        f.visit_stmt(s);
                        f.found
                    };
                    if asserted {
                        let mut r = Refs::default();
                        r.visit_stmt(s);
                        self.note_refs(r.names);
                    }
                    let pure_let = !asserted
                        && matches!(s, Stmt::Local(l) if l.init.as_ref().is_some_and(|i| pure(&i.expr, self.body, self.params)));
                    if pure_let && !run.is_empty() {
                        hoisted.push(s.clone());
                    } else {
                        flush!();
                        nodes.push(Node::Group(s.clone()));
                    }
                }
                Kind::Structural => {
                    flush!();
                    if let Some(n) = self.structural(s)? {
                        nodes.push(n);
                    }
                }
            }
        }
        flush!();
        Ok(nodes)
    }

    /// A region that is one `if` with a uniform condition, which nothing in the region can
    /// change (no local memory or written buffer in it), runs that `if` once per group with
    /// a region in each branch: each branch's work-item loop then has no test in it.
    fn unswitch(&mut self, stmts: &[Stmt]) -> syn::Result<Option<Node>> {
        let [Stmt::Expr(whole @ Expr::If(i), _)] = stmts else {
            return Ok(None);
        };
        if matches!(&*i.cond, Expr::Let(_))
            || !self.is_uniform(&i.cond)
            || reads_memory(&i.cond, self.body, self.params)
        {
            return Ok(None);
        }
        let mut els = i.else_branch.as_ref().map(|(_, e)| &**e);
        while let Some(e) = els {
            match e {
                Expr::If(x) => {
                    if matches!(&*x.cond, Expr::Let(_))
                        || !self.is_uniform(&x.cond)
                        || reads_memory(&x.cond, self.body, self.params)
                    {
                        return Ok(None);
                    }
                    els = x.else_branch.as_ref().map(|(_, e)| &**e);
                }
                _ => els = None,
            }
        }
        Ok(Some(self.if_node(whole, "")?))
    }

    /// Whether the loop `s` (in a region) runs breadth-first: each iteration for every
    /// work-item before the next (the work-item loop inside it), rather than each work-item
    /// running it to the end (depth-first). Seed paper's rule, on the loop's accesses to
    /// arrays: each votes for the order whose innermost loop walks it with the smaller stride
    /// (the same element, consecutive elements, anything else), a tie to depth-first. Only a
    /// `for` over a range the same for every work-item and known before the region, without
    /// jumps or loops inside.
    fn breadth_first_loop(&self, s: &Stmt) -> bool {
        self.loop_votes(s)
            .is_some_and(|(bfo, dfo, carried)| bfo > dfo + 2 * carried)
    }

    /// Whether the loop `s` (in a run) runs in strips of work-items: each strip of
    /// consecutive work-items of dimension 0 runs the code before the loop, then each
    /// iteration of the loop for every work-item of the strip, then the code after it. The
    /// variables of the work-item's that the loop updates stay in arrays of one element per
    /// work-item of the strip, on the stack, so the votes of its accesses alone decide.
    fn strip_loop(&self, s: &Stmt) -> bool {
        self.loop_votes(s)
            .is_some_and(|(bfo, dfo, carried)| carried > 0 && bfo > dfo)
    }

    /// The votes of the loop `s`'s accesses for breadth-first and for depth-first order, and
    /// the number of variables of the work-item's that it updates; `None` where the loop
    /// cannot run breadth-first.
    fn loop_votes(&self, s: &Stmt) -> Option<(usize, usize, usize)> {
        let Stmt::Expr(Expr::ForLoop(f), _) = s else {
            return None;
        };
        let var = match &*f.pat {
            Pat::Ident(p) if p.mutability.is_none() && p.subpat.is_none() => p.ident.to_string(),
            _ => return None,
        };
        if !self.is_uniform(&f.expr) || reads_memory(&f.expr, self.body, self.params) {
            return None;
        }
        struct Body<'a> {
            arrays: &'a HashSet<String>,
            accesses: Vec<(&'a Expr, &'a Expr)>,
            blocked: bool,
        }
        impl<'a> Visit<'a> for Body<'a> {
            fn visit_expr(&mut self, e: &'a Expr) {
                match e {
                    Expr::ForLoop(_)
                    | Expr::While(_)
                    | Expr::Loop(_)
                    | Expr::Break(_)
                    | Expr::Continue(_)
                    | Expr::Return(_)
                    | Expr::Macro(_) => self.blocked = true,
                    Expr::Index(i) => {
                        if let Expr::Path(p) = &*i.expr
                            && p.path
                                .get_ident()
                                .is_some_and(|id| self.arrays.contains(&id.to_string()))
                        {
                            self.accesses.push((e, &i.index));
                        }
                        visit::visit_expr(self, e)
                    }
                    _ => visit::visit_expr(self, e),
                }
            }
            fn visit_item(&mut self, _: &'a syn::Item) {}
        }
        let mut arrays: HashSet<String> = self
            .params
            .iter()
            .filter(|p| !matches!(p.kind, ParamKind::Scalar))
            .map(|p| p.name.to_string())
            .collect();
        arrays.extend(self.body.local_arrays.iter().map(|l| l.name.to_string()));
        let mut b = Body {
            arrays: &arrays,
            accesses: Vec::new(),
            blocked: false,
        };
        b.visit_block(&f.body);
        if b.blocked {
            return None;
        }
        let (mut bfo, mut dfo) = (0, 0);
        // A variable of the work-item's that the loop updates stays in a register when each
        // work-item runs the loop to the end, and is loaded and stored from its slot at every
        // iteration when the loop runs breadth-first: two votes for depth-first (counted by
        // the caller).
        let mut inside = HashSet::new();
        {
            let mut r = Refs::default();
            for st in &f.body.stmts {
                if let Stmt::Local(l) = st {
                    r.visit_pat(&l.pat);
                }
            }
            inside.extend(r.names);
        }
        let mut w = Writes::default();
        w.visit_block(&f.body);
        let carried = w
            .names
            .iter()
            .filter(|n| self.body.vars.contains_key(*n) && !inside.contains(*n))
            .count();
        let mut report = Vec::new();
        for (access, index) in b.accesses {
            let w = self.stride(index, &var, None, 0);
            let l = self.stride(index, &var, Some(&var), 0);
            match w.cmp(&l) {
                std::cmp::Ordering::Less => bfo += 1,
                std::cmp::Ordering::Greater => dfo += 1,
                std::cmp::Ordering::Equal => {}
            }
            report.push((as_written(access, self.body), w, l));
        }
        // The last look decides: the first ones come while uniformity is still being found.
        let key = quote::quote!(#f).to_string();
        let report = LoopReport {
            counter: counter_name(&f.pat, self.body),
            accesses: report,
        };
        let mut loops = self.loops.borrow_mut();
        match loops.iter_mut().find(|(k, _)| *k == key) {
            Some((_, r)) => *r = report,
            None => loops.push((key, report)),
        }
        Some((bfo, dfo, carried))
    }

    /// The stride of index `e` along the work-items of dimension 0 (`var` None) or along the
    /// loop counter `var` (named `counter` in both cases): 0 the same element, 1 consecutive
    /// elements, 2 anything else.
    fn stride(&self, e: &Expr, counter: &str, var: Option<&str>, depth: usize) -> u8 {
        if depth > 8 {
            return 2;
        }
        let d = depth + 1;
        let lit = |e: &Expr| matches!(e, Expr::Lit(syn::ExprLit { lit: syn::Lit::Int(i), .. }) if i.base10_digits() == "1");
        match e {
            Expr::Lit(_) => 0,
            Expr::Paren(p) => self.stride(&p.expr, counter, var, d),
            Expr::Group(g) => self.stride(&g.expr, counter, var, d),
            Expr::Cast(c) => self.stride(&c.expr, counter, var, d),
            Expr::Path(p) => {
                let Some(id) = p.path.get_ident() else {
                    return 0;
                };
                let name = id.to_string();
                if name == counter {
                    // The loop's counter: the same for every work-item (its range is).
                    return u8::from(var.is_some());
                }
                match self.body.vars.get(&name) {
                    None => 0,
                    Some(v) if !self.varying.contains(&name) && !v.mutable => 0,
                    Some(v) if !v.mutable && v.plain_let => match &v.init {
                        Some(init) => self.stride(init, counter, var, d),
                        None => 2,
                    },
                    Some(_) => 2,
                }
            }
            Expr::Call(c) => match (call_name(c).as_deref(), var) {
                (Some("local_id" | "global_id"), None) => {
                    if matches!(c.args.first(), Some(Expr::Lit(syn::ExprLit { lit: syn::Lit::Int(i), .. })) if i.base10_digits() == "0")
                    {
                        1
                    } else if c.args.first().is_some_and(|a| matches!(a, Expr::Lit(_))) {
                        0
                    } else {
                        2
                    }
                }
                (Some("global_linear_id" | "local_linear_id"), None) => 1,
                (Some(n), _)
                    if VARYING_INTRINSICS.contains(&n) || UNIFORM_INTRINSICS.contains(&n) =>
                {
                    0
                }
                _ => 2,
            },
            Expr::Binary(b) => {
                let (l, r) = (
                    self.stride(&b.left, counter, var, d),
                    self.stride(&b.right, counter, var, d),
                );
                match b.op {
                    BinOp::Add(_) | BinOp::Sub(_) => match (l, r) {
                        (0, x) | (x, 0) => x,
                        _ => 2,
                    },
                    BinOp::Mul(_) => match (l, r) {
                        (0, 0) => 0,
                        (0, x) if lit(&b.left) => x,
                        (x, 0) if lit(&b.right) => x,
                        _ => 2,
                    },
                    _ => {
                        if l == 0 && r == 0 {
                            0
                        } else {
                            2
                        }
                    }
                }
            }
            _ => {
                let mut r = Refs::default();
                r.visit_expr(e);
                let mentions = match var {
                    Some(v) => r.names.contains(v),
                    None => !self.is_uniform(e),
                };
                if mentions { 2 } else { 0 }
            }
        }
    }

    fn require_uniform(&self, cond: &Expr, what: &str) -> syn::Result<()> {
        if self.is_uniform(cond) {
            Ok(())
        } else {
            Err(Error::new(
                cond.span(),
                format!(
                    "{what} under a condition that differs between work-items: every work-item \
                     of a group must reach the same barriers (if the condition is the same for \
                     the whole group, say so with `uniform(..)`)"
                ),
            ))
        }
    }

    fn structural(&mut self, s: &Stmt) -> syn::Result<Option<Node>> {
        let what = if has_barrier_stmt(s) {
            "barrier()"
        } else {
            "a jump out of a loop with a barrier, or a return before one,"
        };
        let e = match s {
            Stmt::Expr(e, _) => e,
            Stmt::Local(l) => {
                return Err(Error::new(
                    l.span(),
                    "barrier() inside a `let`'s value is not supported: call it as a statement",
                ));
            }
            Stmt::Macro(m) => {
                return Err(Error::new(
                    m.span(),
                    "barrier() inside a macro is not supported: call it as a statement",
                ));
            }
            Stmt::Item(i) => return Err(Error::new(i.span(), "unexpected item")),
        };
        match e {
            Expr::Call(c) if call_name(c).as_deref() == Some("barrier") => Ok(None),
            Expr::If(_) => Ok(Some(self.if_node(e, what)?)),
            Expr::ForLoop(f) => {
                self.require_uniform(&f.expr, what)?;
                self.note_condition(&f.expr);
                if !has_barrier_stmt(s) && !escapes(s) {
                    self.bfo_loops.push(counter_name(&f.pat, self.body));
                }
                if !matches!(&*f.pat, Pat::Ident(p) if p.subpat.is_none())
                    && !matches!(&*f.pat, Pat::Wild(_))
                {
                    return Err(Error::new(
                        f.pat.span(),
                        "a loop with a barrier binds a plain name (`for i in a..b`)",
                    ));
                }
                let body = self.build(&f.body.stmts, false)?;
                Ok(Some(Node::For {
                    label: f.label.clone(),
                    pat: (*f.pat).clone(),
                    iter: (*f.expr).clone(),
                    body,
                }))
            }
            Expr::While(w) => {
                if matches!(&*w.cond, Expr::Let(_)) {
                    return Err(Error::new(
                        w.cond.span(),
                        "`while let` around a barrier is not supported: use `loop` and `if`",
                    ));
                }
                self.require_uniform(&w.cond, what)?;
                self.note_condition(&w.cond);
                let body = self.build(&w.body.stmts, false)?;
                Ok(Some(Node::While {
                    label: w.label.clone(),
                    cond: (*w.cond).clone(),
                    body,
                }))
            }
            Expr::Loop(l) => {
                let body = self.build(&l.body.stmts, false)?;
                Ok(Some(Node::Loop {
                    label: l.label.clone(),
                    body,
                }))
            }
            Expr::Block(b) if b.label.is_none() => {
                Ok(Some(Node::Block(self.build(&b.block.stmts, false)?)))
            }
            Expr::Break(_) | Expr::Continue(_) | Expr::Return(_) => {
                if let Expr::Break(b) = e
                    && b.expr.is_some()
                {
                    return Err(Error::new(
                        b.span(),
                        "`break` with a value out of a loop with a barrier is not supported",
                    ));
                }
                if let Expr::Return(r) = e
                    && r.expr.is_some()
                {
                    return Err(Error::new(r.span(), "a kernel returns nothing"));
                }
                Ok(Some(Node::Jump(s.clone())))
            }
            Expr::Unsafe(u) => Err(Error::new(
                u.span(),
                "barrier() inside an `unsafe` block is not supported: end the block before the barrier",
            )),
            Expr::Match(m) => Err(Error::new(
                m.match_token.span(),
                "barrier() (or a jump out of a loop with one) inside `match` is not supported: use `if`",
            )),
            other => Err(Error::new(
                other.span(),
                "barrier() inside an expression is not supported: call it as a statement (in \
                 `if`, `for`, `while`, `loop` or a block)",
            )),
        }
    }

    fn if_node(&mut self, e: &Expr, what: &str) -> syn::Result<Node> {
        let Expr::If(i) = e else { unreachable!() };
        if matches!(&*i.cond, Expr::Let(_)) {
            return Err(Error::new(
                i.cond.span(),
                "`if let` around a barrier is not supported: use a condition",
            ));
        }
        self.require_uniform(&i.cond, what)?;
        self.note_condition(&i.cond);
        let then = self.build(&i.then_branch.stmts, false)?;
        let els = match i.else_branch.as_ref().map(|(_, e)| &**e) {
            None => None,
            Some(Expr::If(_)) => Some(Box::new(Else::If(Box::new(
                self.if_node(&i.else_branch.as_ref().expect("some").1, what)?,
            )))),
            Some(Expr::Block(b)) => Some(Box::new(Else::Block(self.build(&b.block.stmts, false)?))),
            Some(other) => return Err(Error::new(other.span(), "unexpected else branch")),
        };
        Ok(Node::If {
            cond: (*i.cond).clone(),
            then,
            els,
        })
    }

    /// Whether `e` is cheap enough to recompute in each run that needs it: literals,
    /// work-item functions, scalars and immutable uniform variables, already recomputed
    /// variables, and arithmetic on them.
    fn cheap(&self, e: &Expr, recomputed: &[String]) -> bool {
        match e {
            Expr::Lit(_) => true,
            Expr::Paren(p) => self.cheap(&p.expr, recomputed),
            Expr::Group(g) => self.cheap(&g.expr, recomputed),
            Expr::Cast(c) => self.cheap(&c.expr, recomputed),
            Expr::Unary(u) => {
                matches!(u.op, UnOp::Neg(_) | UnOp::Not(_)) && self.cheap(&u.expr, recomputed)
            }
            Expr::Binary(b) => {
                !is_assign_op(&b.op)
                    && self.cheap(&b.left, recomputed)
                    && self.cheap(&b.right, recomputed)
            }
            Expr::Call(c) => match call_name(c) {
                Some(n)
                    if VARYING_INTRINSICS.contains(&n.as_str())
                        || UNIFORM_INTRINSICS.contains(&n.as_str()) =>
                {
                    c.args.iter().all(|a| self.cheap(a, recomputed))
                }
                _ => false,
            },
            Expr::Path(p) => {
                let Some(id) = p.path.get_ident() else {
                    return true;
                };
                let n = id.to_string();
                if recomputed.contains(&n) {
                    return true;
                }
                if let Some(v) = self.body.vars.get(&n) {
                    return !self.varying.contains(&n) && !v.mutable;
                }
                // A parameter: a scalar is cheap, a buffer or local array is not an operand.
                self.params
                    .iter()
                    .any(|p| p.name == *id && matches!(p.kind, ParamKind::Scalar))
                    || !self.params.iter().any(|p| p.name == *id)
            }
            _ => false,
        }
    }
}

/// Whether `e` reads nothing that changes while the kernel runs: no local array, no written
/// buffer, no mutable variable, no macro (a uniform `let` of such an expression may move
/// ahead of the work-item loop that precedes it; functions and methods called on uniform
/// values are taken to depend only on their arguments).
fn pure(e: &Expr, body: &Body, params: &[Param]) -> bool {
    struct P {
        mutable: HashSet<String>,
        pure: bool,
    }
    impl<'v> Visit<'v> for P {
        fn visit_expr_path(&mut self, p: &'v syn::ExprPath) {
            if let Some(id) = p.path.get_ident()
                && self.mutable.contains(&id.to_string())
            {
                self.pure = false;
            }
        }
        fn visit_macro(&mut self, _: &'v syn::Macro) {
            self.pure = false;
        }
        fn visit_expr_call(&mut self, c: &'v syn::ExprCall) {
            if call_name(c).as_deref() == Some("uniform") {
                self.pure = false;
            }
            visit::visit_expr_call(self, c);
        }
    }
    let mut mutable = changing_arrays(body, params);
    mutable.extend(
        body.vars
            .iter()
            .filter(|(_, v)| v.mutable)
            .map(|(n, _)| n.clone()),
    );
    let mut p = P {
        mutable,
        pure: true,
    };
    p.visit_expr(e);
    p.pure
}

/// The kernel's arrays whose elements change while it runs: its local arrays, local
/// arguments and written buffers.
pub(crate) fn changing_arrays(body: &Body, params: &[Param]) -> HashSet<String> {
    let mut names: HashSet<String> = body
        .local_arrays
        .iter()
        .map(|l| l.name.to_string())
        .collect();
    names.extend(
        params
            .iter()
            .filter(|p| matches!(p.kind, ParamKind::Written { .. } | ParamKind::Local))
            .map(|p| p.name.to_string()),
    );
    names
}

/// Whether `e` reads local memory or a written buffer, or holds a macro.
fn reads_memory(e: &Expr, body: &Body, params: &[Param]) -> bool {
    struct R {
        changing: HashSet<String>,
        reads: bool,
    }
    impl<'v> Visit<'v> for R {
        fn visit_expr_path(&mut self, p: &'v syn::ExprPath) {
            if let Some(id) = p.path.get_ident()
                && self.changing.contains(&id.to_string())
            {
                self.reads = true;
            }
        }
        fn visit_macro(&mut self, _: &'v syn::Macro) {
            self.reads = true;
        }
    }
    let mut r = R {
        changing: changing_arrays(body, params),
        reads: false,
    };
    r.visit_expr(e);
    r.reads
}

pub(crate) fn is_assign_op(op: &BinOp) -> bool {
    matches!(
        op,
        BinOp::AddAssign(_)
            | BinOp::SubAssign(_)
            | BinOp::MulAssign(_)
            | BinOp::DivAssign(_)
            | BinOp::RemAssign(_)
            | BinOp::BitXorAssign(_)
            | BinOp::BitAndAssign(_)
            | BinOp::BitOrAssign(_)
            | BinOp::ShlAssign(_)
            | BinOp::ShrAssign(_)
    )
}

/// `x = e` or `x op= e` of a plain variable: its name and `e`.
fn assign_target(e: &Expr) -> Option<(String, &Expr)> {
    let (left, right) = match e {
        Expr::Assign(a) => (&*a.left, &*a.right),
        Expr::Binary(b) if is_assign_op(&b.op) => (&*b.left, &*b.right),
        _ => return None,
    };
    match left {
        Expr::Path(p) if p.qself.is_none() => p.path.get_ident().map(|i| (i.to_string(), right)),
        _ => None,
    }
}

/// Uniformity of an expression: nothing that depends on the local id.
struct Uniformity<'v> {
    varying: &'v HashSet<String>,
    uniform: bool,
}

impl<'a> Visit<'a> for Uniformity<'_> {
    fn visit_expr_call(&mut self, c: &'a syn::ExprCall) {
        match call_name(c).as_deref() {
            Some("uniform") => return,
            Some(n) if VARYING_INTRINSICS.contains(&n) => self.uniform = false,
            _ => {}
        }
        visit::visit_expr_call(self, c);
    }
    fn visit_expr_path(&mut self, p: &'a syn::ExprPath) {
        if let Some(id) = p.path.get_ident()
            && self.varying.contains(&id.to_string())
        {
            self.uniform = false;
        }
    }
    fn visit_macro(&mut self, m: &'a syn::Macro) {
        match macro_args(m) {
            Some(args) => args.iter().for_each(|a| self.visit_expr(a)),
            None => self.uniform = false,
        }
        if format_names(m).iter().any(|n| self.varying.contains(n)) {
            self.uniform = false;
        }
    }
    fn visit_item(&mut self, _: &'a syn::Item) {}
}

/// A `for` loop's counter as the kernel names it (`_` for a pattern), for the report.
/// `e` as the kernel wrote it: variables the macro renamed (shadowed names) by their names.
fn as_written(e: &Expr, body: &Body) -> String {
    fn walk(t: proc_macro2::TokenStream, body: &Body, out: &mut Vec<String>) {
        for tt in t {
            match tt {
                proc_macro2::TokenTree::Ident(i) => {
                    let n = i.to_string();
                    out.push(body.vars.get(&n).map_or(n, |v| v.original.clone()));
                }
                proc_macro2::TokenTree::Group(g) => {
                    let (open, close) = match g.delimiter() {
                        proc_macro2::Delimiter::Parenthesis => ("(", ")"),
                        proc_macro2::Delimiter::Bracket => ("[", "]"),
                        proc_macro2::Delimiter::Brace => ("{", "}"),
                        proc_macro2::Delimiter::None => ("", ""),
                    };
                    let mut inner = Vec::new();
                    walk(g.stream(), body, &mut inner);
                    out.push(format!("{open}{}{close}", inner.join(" ")));
                }
                other => out.push(other.to_string()),
            }
        }
    }
    let mut out = Vec::new();
    walk(quote::quote!(#e), body, &mut out);
    out.join(" ")
        .replace(" [", "[")
        .replace(" (", "(")
        .replace(" . ", ".")
        .replace(" ,", ",")
}

pub(crate) fn counter_name(pat: &Pat, body: &Body) -> String {
    match pat {
        Pat::Ident(p) => body
            .vars
            .get(&p.ident.to_string())
            .map_or_else(|| p.ident.to_string(), |v| v.original.clone()),
        _ => "_".to_owned(),
    }
}

/// The variables `stmts` may change: those they bind, assign, borrow mutably or call a
/// method on; every variable they name where they bind by `ref mut` or take a `&raw mut`
/// (which borrow what a pattern matches, not a name the visitor follows).
pub(crate) fn written_names(stmts: &[Stmt]) -> HashSet<String> {
    let mut w = Writes::default();
    stmts.iter().for_each(|s| w.visit_stmt(s));
    if w.borrows_by_pattern {
        let mut r = Refs::default();
        stmts.iter().for_each(|s| r.visit_stmt(s));
        w.names.extend(r.names);
    }
    w.names
}

/// The variables a statement run per work-item may change: those it binds, assigns, borrows
/// mutably or calls a method on.
#[derive(Default)]
struct Writes {
    names: HashSet<String>,
    /// A `ref mut` binding or a `&raw mut` was seen.
    borrows_by_pattern: bool,
}

fn root_name(e: &Expr) -> Option<String> {
    match e {
        Expr::Path(p) if p.qself.is_none() => p.path.get_ident().map(|i| i.to_string()),
        Expr::Index(i) => root_name(&i.expr),
        Expr::Field(f) => root_name(&f.base),
        Expr::Paren(p) => root_name(&p.expr),
        Expr::Unary(u) if matches!(u.op, UnOp::Deref(_)) => root_name(&u.expr),
        _ => None,
    }
}

impl<'a> Visit<'a> for Writes {
    fn visit_pat_ident(&mut self, p: &'a syn::PatIdent) {
        self.names.insert(p.ident.to_string());
        if p.by_ref.is_some() && p.mutability.is_some() {
            self.borrows_by_pattern = true;
        }
        visit::visit_pat_ident(self, p);
    }
    fn visit_expr_raw_addr(&mut self, r: &'a syn::ExprRawAddr) {
        if matches!(r.mutability, syn::PointerMutability::Mut(_)) {
            self.borrows_by_pattern = true;
            if let Some(n) = root_name(&r.expr) {
                self.names.insert(n);
            }
        }
        visit::visit_expr_raw_addr(self, r);
    }
    fn visit_expr_assign(&mut self, a: &'a syn::ExprAssign) {
        match root_name(&a.left) {
            Some(n) => {
                self.names.insert(n);
            }
            // A destructuring assignment (`(a, b) = ...`): every name on the left may change.
            None => {
                let mut r = Refs::default();
                r.visit_expr(&a.left);
                self.names.extend(r.names);
            }
        }
        visit::visit_expr_assign(self, a);
    }
    fn visit_expr_binary(&mut self, b: &'a syn::ExprBinary) {
        if is_assign_op(&b.op)
            && let Some(n) = root_name(&b.left)
        {
            self.names.insert(n);
        }
        visit::visit_expr_binary(self, b);
    }
    fn visit_expr_reference(&mut self, r: &'a syn::ExprReference) {
        if r.mutability.is_some()
            && let Some(n) = root_name(&r.expr)
        {
            self.names.insert(n);
        }
        visit::visit_expr_reference(self, r);
    }
    fn visit_expr_method_call(&mut self, m: &'a syn::ExprMethodCall) {
        if let Some(n) = root_name(&m.receiver) {
            self.names.insert(n);
        }
        visit::visit_expr_method_call(self, m);
    }
    fn visit_macro(&mut self, m: &'a syn::Macro) {
        if let Some(args) = macro_args(m) {
            args.iter().for_each(|a| self.visit_expr(a));
        }
    }
    fn visit_item(&mut self, _: &'a syn::Item) {}
}

/// The names an expression or statement references or binds.
#[derive(Default)]
pub(crate) struct Refs {
    pub(crate) names: HashSet<String>,
}

impl<'a> Visit<'a> for Refs {
    fn visit_expr_path(&mut self, p: &'a syn::ExprPath) {
        if let Some(id) = p.path.get_ident() {
            self.names.insert(id.to_string());
        }
    }
    fn visit_pat_ident(&mut self, p: &'a syn::PatIdent) {
        self.names.insert(p.ident.to_string());
        visit::visit_pat_ident(self, p);
    }
    fn visit_macro(&mut self, m: &'a syn::Macro) {
        if let Some(args) = macro_args(m) {
            args.iter().for_each(|a| self.visit_expr(a));
        }
        self.names.extend(format_names(m));
    }
    fn visit_item(&mut self, _: &'a syn::Item) {}
}

fn bound_names(p: &Pat) -> Vec<String> {
    let mut r = Refs::default();
    r.visit_pat(p);
    r.names.into_iter().collect()
}

/// The body's bindings in the order it binds them.
fn declaration_order(stmts: &[Stmt]) -> Vec<String> {
    #[derive(Default)]
    struct Order(Vec<String>);
    impl<'a> Visit<'a> for Order {
        fn visit_pat_ident(&mut self, p: &'a syn::PatIdent) {
            self.0.push(p.ident.to_string());
            visit::visit_pat_ident(self, p);
        }
        fn visit_macro(&mut self, m: &'a syn::Macro) {
            if let Some(args) = macro_args(m) {
                args.iter().for_each(|a| self.visit_expr(a));
            }
        }
        fn visit_item(&mut self, _: &'a syn::Item) {}
    }
    let mut o = Order::default();
    for s in stmts {
        o.visit_stmt(s);
    }
    let mut seen = HashSet::new();
    o.0.retain(|n| seen.insert(n.clone()));
    o.0
}

pub(crate) fn has_barrier_stmt(s: &Stmt) -> bool {
    let mut f = FindCall {
        name: "barrier",
        found: false,
    };
    f.visit_stmt(s);
    f.found
}

fn returns(s: &Stmt) -> bool {
    struct R(bool);
    impl<'a> Visit<'a> for R {
        fn visit_expr_return(&mut self, _: &'a syn::ExprReturn) {
            self.0 = true;
        }
        fn visit_item(&mut self, _: &'a syn::Item) {}
    }
    let mut r = R(false);
    r.visit_stmt(s);
    r.0
}

/// Whether `s` holds a `break` or `continue` that leaves it (to a loop around it).
fn escapes(s: &Stmt) -> bool {
    struct E {
        loops: usize,
        labels: Vec<String>,
        escapes: bool,
    }
    impl E {
        fn in_loop(&mut self, label: &Option<Label>, f: impl FnOnce(&mut Self)) {
            self.loops += 1;
            if let Some(l) = label {
                self.labels.push(l.name.ident.to_string());
            }
            f(self);
            if label.is_some() {
                self.labels.pop();
            }
            self.loops -= 1;
        }
        fn jump(&mut self, label: &Option<syn::Lifetime>) {
            match label {
                Some(l) => {
                    if !self.labels.contains(&l.ident.to_string()) {
                        self.escapes = true;
                    }
                }
                None => {
                    if self.loops == 0 {
                        self.escapes = true;
                    }
                }
            }
        }
    }
    impl<'a> Visit<'a> for E {
        fn visit_expr_for_loop(&mut self, f: &'a syn::ExprForLoop) {
            self.visit_expr(&f.expr);
            self.in_loop(&f.label, |e| e.visit_block(&f.body));
        }
        fn visit_expr_while(&mut self, w: &'a syn::ExprWhile) {
            self.in_loop(&w.label, |e| {
                e.visit_expr(&w.cond);
                e.visit_block(&w.body)
            });
        }
        fn visit_expr_loop(&mut self, l: &'a syn::ExprLoop) {
            self.in_loop(&l.label, |e| e.visit_block(&l.body));
        }
        fn visit_expr_block(&mut self, b: &'a syn::ExprBlock) {
            // A labeled block is a target of `break 'label` only.
            if let Some(l) = &b.label {
                self.labels.push(l.name.ident.to_string());
                self.visit_block(&b.block);
                self.labels.pop();
            } else {
                self.visit_block(&b.block);
            }
        }
        fn visit_expr_break(&mut self, b: &'a syn::ExprBreak) {
            self.jump(&b.label);
            visit::visit_expr_break(self, b);
        }
        fn visit_expr_continue(&mut self, c: &'a syn::ExprContinue) {
            self.jump(&c.label);
        }
        fn visit_item(&mut self, _: &'a syn::Item) {}
    }
    let mut e = E {
        loops: 0,
        labels: Vec::new(),
        escapes: false,
    };
    e.visit_stmt(s);
    e.escapes
}

/// A `return` in work-item code ends only that work-item: it must come after the last
/// barrier and the last statement run once per group.
fn check_returns(nodes: &[Node]) -> syn::Result<()> {
    fn walk(nodes: &[Node], last_allowed: bool) -> syn::Result<()> {
        for (i, n) in nodes.iter().enumerate() {
            let last = last_allowed && i + 1 == nodes.len();
            match n {
                Node::Run { stmts, .. } => {
                    if !last {
                        for s in stmts {
                            if let Some(span) = return_span(s) {
                                return Err(Error::new(
                                    span,
                                    "a `return` before a barrier (or before code that runs once \
                                     per group): every work-item must reach every barrier; \
                                     put the rest of the work-item's code under an `if` instead",
                                ));
                            }
                        }
                    }
                }
                Node::If { then, els, .. } => {
                    walk(then, false)?;
                    let mut e = els.as_deref();
                    while let Some(x) = e {
                        match x {
                            Else::Block(b) => {
                                walk(b, false)?;
                                e = None;
                            }
                            Else::If(n) if matches!(**n, Node::If { .. }) => {
                                let Node::If { then, els, .. } = &**n else {
                                    unreachable!()
                                };
                                walk(then, false)?;
                                e = els.as_deref();
                            }
                            Else::If(_) => e = None,
                        }
                    }
                }
                Node::For { body, .. } | Node::While { body, .. } | Node::Loop { body, .. } => {
                    walk(body, false)?
                }
                Node::Block(b) => walk(b, false)?,
                Node::Group(_) | Node::Jump(_) => {}
            }
        }
        Ok(())
    }
    walk(nodes, true)
}

fn return_span(s: &Stmt) -> Option<Span> {
    struct R(Option<Span>);
    impl<'a> Visit<'a> for R {
        fn visit_expr_return(&mut self, r: &'a syn::ExprReturn) {
            self.0.get_or_insert(r.span());
        }
        fn visit_item(&mut self, _: &'a syn::Item) {}
    }
    let mut r = R(None);
    r.visit_stmt(s);
    r.0
}

fn count_runs(nodes: &[Node]) -> usize {
    nodes
        .iter()
        .map(|n| match n {
            Node::Run { .. } => 1,
            Node::If { then, els, .. } => {
                count_runs(then)
                    + match els.as_deref() {
                        None => 0,
                        Some(Else::Block(b)) => count_runs(b),
                        Some(Else::If(n)) => count_runs(std::slice::from_ref(n)),
                    }
            }
            Node::For { body, .. } | Node::While { body, .. } | Node::Loop { body, .. } => {
                count_runs(body)
            }
            Node::Block(b) => count_runs(b),
            Node::Group(_) | Node::Jump(_) => 0,
        })
        .sum()
}

/// Refuses a borrow of a variable kept per work-item: the borrow would outlive the work-item
/// loop it was made in, or alias the slot.
fn check_borrows(nodes: &[Node], expanded: &[String], body: &Body) -> syn::Result<()> {
    struct B<'e> {
        expanded: &'e [String],
        err: Option<(Span, String)>,
    }
    impl<'a> Visit<'a> for B<'_> {
        fn visit_expr_reference(&mut self, r: &'a syn::ExprReference) {
            if let Some(n) = root_name(&r.expr)
                && self.expanded.contains(&n)
            {
                self.err.get_or_insert((r.span(), n));
            }
            visit::visit_expr_reference(self, r);
        }
        fn visit_macro(&mut self, m: &'a syn::Macro) {
            if let Some(args) = macro_args(m) {
                args.iter().for_each(|a| self.visit_expr(a));
            }
        }
        fn visit_item(&mut self, _: &'a syn::Item) {}
    }
    let mut b = B {
        expanded,
        err: None,
    };
    visit_nodes(nodes, &mut |s| b.visit_stmt(s));
    match b.err {
        Some((span, n)) => Err(Error::new(
            span,
            format!(
                "a borrow of `{}`, a variable that lives across a barrier: each work-item's \
                 value is kept in a slot between the work-item loops, which a borrow cannot \
                 follow; copy the value instead",
                body.vars[&n].original
            ),
        )),
        None => Ok(()),
    }
}

/// Calls `f` on every statement of every run.
pub(crate) fn visit_nodes(nodes: &[Node], f: &mut impl FnMut(&Stmt)) {
    for n in nodes {
        match n {
            Node::Run { stmts, .. } => stmts.iter().for_each(&mut *f),
            Node::If { then, els, .. } => {
                visit_nodes(then, f);
                match els.as_deref() {
                    None => {}
                    Some(Else::Block(b)) => visit_nodes(b, f),
                    Some(Else::If(n)) => visit_nodes(std::slice::from_ref(n), f),
                }
            }
            Node::For { body, .. } | Node::While { body, .. } | Node::Loop { body, .. } => {
                visit_nodes(body, f)
            }
            Node::Block(b) => visit_nodes(b, f),
            Node::Group(_) | Node::Jump(_) => {}
        }
    }
}

/// Each written buffer's access kind, and checks that written buffers and local arrays are
/// used only by indexing (and `len()`).
fn written_kinds(body: &Body, params: &[Param]) -> syn::Result<HashMap<String, Written>> {
    let written: HashSet<String> = params
        .iter()
        .filter(|p| matches!(p.kind, ParamKind::Written { .. }))
        .map(|p| p.name.to_string())
        .collect();
    let mut indexed: HashSet<String> = written.clone();
    indexed.extend(
        params
            .iter()
            .filter(|p| matches!(p.kind, ParamKind::Local))
            .map(|p| p.name.to_string()),
    );
    indexed.extend(body.local_arrays.iter().map(|l| l.name.to_string()));
    struct W<'a> {
        body: &'a Body,
        indexed: &'a HashSet<String>,
        kinds: HashMap<String, Written>,
        err: Option<Error>,
    }
    impl W<'_> {
        /// Whether index `e` is the work-item's own element: `Some(dim0)`.
        fn own(&self, e: &Expr, depth: usize) -> Option<bool> {
            match e {
                Expr::Paren(p) => self.own(&p.expr, depth),
                Expr::Call(c) => match call_name(c).as_deref() {
                    Some("global_linear_id") => Some(false),
                    Some("global_id") if matches!(&c.args[0], Expr::Lit(syn::ExprLit { lit: syn::Lit::Int(i), .. }) if i.base10_digits() == "0") => {
                        Some(true)
                    }
                    _ => None,
                },
                Expr::Path(p) if depth < 8 => {
                    let v = self.body.vars.get(&p.path.get_ident()?.to_string())?;
                    if v.mutable || !v.plain_let {
                        return None;
                    }
                    self.own(v.init.as_ref()?, depth + 1)
                }
                _ => None,
            }
        }
    }
    impl<'a> Visit<'a> for W<'_> {
        fn visit_expr(&mut self, e: &'a Expr) {
            match e {
                Expr::Reference(r)
                    if root_name(&r.expr).is_some_and(|n| self.indexed.contains(&n)) =>
                {
                    let n = root_name(&r.expr).expect("checked");
                    self.err.get_or_insert(Error::new(
                        r.span(),
                        format!(
                            "a reference into `{n}` (local memory or a written buffer), which \
                             is used only by indexing: copy the element (`{n}[i]`) instead"
                        ),
                    ));
                }
                Expr::Index(i)
                    if matches!(&*i.index, Expr::Range(_))
                        && root_name(&i.expr).is_some_and(|n| self.indexed.contains(&n)) =>
                {
                    self.err.get_or_insert(Error::new(
                        i.span(),
                        "local memory and written buffers are used only by indexing one element",
                    ));
                }
                Expr::Index(i) => {
                    if let Expr::Path(p) = &*i.expr
                        && let Some(id) = p.path.get_ident()
                        && self.indexed.contains(&id.to_string())
                    {
                        let name = id.to_string();
                        if let Some(k) = self.kinds.get(&name).copied() {
                            let next = match (k, self.own(&i.index, 0)) {
                                (Written::Own { dim0 }, Some(d)) => {
                                    Written::Own { dim0: dim0 || d }
                                }
                                _ => Written::Shared,
                            };
                            self.kinds.insert(name, next);
                        }
                        self.visit_expr(&i.index);
                        return;
                    }
                    visit::visit_expr_index(self, i);
                }
                Expr::MethodCall(m)
                    if matches!(&*m.receiver, Expr::Path(p) if p.path.get_ident().is_some_and(|id| self.indexed.contains(&id.to_string())))
                        && (m.method == "len" || m.method == "is_empty")
                        && m.args.is_empty() => {}
                Expr::Path(p) => {
                    if let Some(id) = p.path.get_ident()
                        && self.indexed.contains(&id.to_string())
                    {
                        self.err.get_or_insert(Error::new(
                            id.span(),
                            format!(
                                "`{id}` (local memory or a written buffer) is used only by \
                                 indexing: `{id}[i]`, `{id}[i] = v`, `{id}[i] += v`, `{id}.len()`"
                            ),
                        ));
                    }
                }
                _ => visit::visit_expr(self, e),
            }
        }
        fn visit_macro(&mut self, m: &'a syn::Macro) {
            if let Some(args) = macro_args(m) {
                args.iter().for_each(|a| self.visit_expr(a));
            }
        }
        fn visit_item(&mut self, _: &'a syn::Item) {}
    }
    let mut w = W {
        body,
        indexed: &indexed,
        kinds: written
            .iter()
            .map(|n| (n.clone(), Written::Own { dim0: false }))
            .collect(),
        err: None,
    };
    for s in &body.stmts {
        w.visit_stmt(s);
    }
    match w.err {
        Some(e) => Err(e),
        None => Ok(w.kinds),
    }
}
