//! `#[kernel]`: an OpenCL-model kernel written in Rust, compiled at build time to the
//! work-group function of `numatask-kernels` by work-item coalescing, and to a reference form
//! that runs each work-item on a thread of its own.
//!
//! The passes, each in its module: `prepare` inlines the kernel's `#[inline]` helpers and
//! gives every binding a name of its own; `analyze` splits the body into regions at
//! barriers, finds which variables are the same for every work-item of a group (uniform) and
//! which live across regions, and decides for each of those whether it is recomputed or kept
//! per work-item; `emit` writes the work-group function, its reference form and the report.
//! The analyses see tokens, not types: they are syntactic and conservative (what they cannot
//! prove uniform varies), and they report what they decided (`KernelInfo`).
//!
//! The language is documented on the `kernel` re-export of `numatask-kernels`.
//!
//! # Design notes
//!
//! - **Regions** are the statements between barriers at the top of a group-level block.
//!   Control flow that holds a barrier (or a jump out of a loop that does) stays at group
//!   level, its condition evaluated once, and must be uniform; each region becomes loops over
//!   the group's work-items, dimension 0 innermost. Uniform `let`s and assignments run once
//!   per group, in order: a uniform statement between two work-item statements splits the
//!   region (any schedule of a region's work-items is valid, so the split is too), unless it
//!   is a `let` whose value reads nothing that changes, which moves ahead of the region.
//! - **Uniformity** is a fixpoint over variables: a variable varies if a work-item function,
//!   or a varying variable, flows into it, or if work-item code assigns it. Local memory and
//!   buffers are not variables: an element read at a uniform index is uniform.
//! - **Expansion** follows the seed papers: only a varying variable used in more than one
//!   region needs a slot per work-item, and one that is an immutable arithmetic function of
//!   ids and immutable uniform values is recomputed in each region instead (as pocl does for
//!   ids). Within a region a kept variable lives in a local: loaded from its slot when the
//!   work-item starts the region, stored back when it ends it (or returns).
//! - **Bounds** (`bounds`): indices the range analysis bounds are checked once per region,
//!   before its loops, which then run with unchecked accesses (and vectorize); a checked copy
//!   of the loops runs when a bound fails, so an out-of-bounds work-item still panics. Inside a
//!   loop run once per group (around a barrier, or breadth-first), the loop's counter counts as
//!   known: the check is made at each iteration with its value then (Parboil's 7-point stencil,
//!   `a[(k * ny + j) * nx + i]` in a breadth-first loop over `k`: 4.7 ms instead of 19 on one
//!   core of the 2-core VM, where every access had been checked).
//! - **Splitting**: a region whose code compares the local id in dimension 0 with a value
//!   known before the loop (`if lid < s`, `if lid >= offset`) runs as two loops split where
//!   the comparison changes, each with the comparison replaced by its value and every `if`
//!   on it replaced by the branch it takes (else the indices of the branch a part never runs,
//!   `a[lid - offset]` below `offset`, failed its range check and sent the whole part to the
//!   checked copy: on one core of the 2-core VM, reduce took 10.4 ms before and 5.4 after,
//!   scan 22.6 and 20.0); one comparing it for equality (`if lid == local_size(0) - 1`, or
//!   `!=`, with any value of the group's) as three loops, below, at and above that work-item.
//!   A region that is one `if` with a uniform condition runs it once per group around two
//!   regions.
//! - **Loop order** (seed paper 000): a `for` inside a region over a range the same for the
//!   whole group runs breadth-first (each iteration for every work-item, the work-item loop
//!   inside it) where its accesses vote so: each access votes for the order whose innermost
//!   loop walks it with the smaller stride (the same element, consecutive ones, anything
//!   else; the loop's counter is the same for every work-item), each variable of the
//!   work-item's that the loop updates votes twice for depth-first (a slot load and store
//!   per iteration breadth-first, a register depth-first), and a tie stays depth-first.
//!   Where a breadth-first loop would make a variable live across regions that cannot be
//!   kept per work-item, every loop stays depth-first. A loop that updates such variables
//!   and that the accesses alone would run breadth-first runs in **strips** instead: the
//!   work-items of dimension 0 in strips of 16, each strip running the code before the loop,
//!   then each iteration for every work-item of the strip, then the code after it, the
//!   variables carried between those parts in arrays of 16 on the stack, which nothing else
//!   aliases: the loop over the strip vectorizes, a work-item per lane, its accumulators in
//!   vector registers (the tiled matrix multiply's `acc += a[ty][p] * b[p][tx]`, as a GPU
//!   or Intel's OpenCL compiler runs it). `#[kernel(depth_first)]` turns both off. The
//!   kernel's report (`KernelInfo::loops`, and `NUMATASK_KERNEL_INFO=1`) lists each loop so
//!   decided with its accesses' classes, the seed paper's W0/W1/WX along the work-items and
//!   L0/L1/LX along the loop, and the order it runs in.
//! - **Instruction sets**: the work-group function is compiled for the target's baseline and,
//!   on x86-64, for x86-64-v3 and v4 (`#[target_feature]` copies of one `#[inline(always)]`
//!   function), chosen at run time (`numatask_kernels::Isa`), as an OpenCL runtime compiles
//!   for the processor it runs on. Each copy runs a task's groups in one loop
//!   (`GroupRun::for_each`), so that the choice is made once per task and what does not
//!   change between groups (binding the arguments) can be hoisted out of it: a 2048 x 2048
//!   transpose through a tile, whose groups are short, took 3.0 - 6.7 ms instead of 9.1 - 14.3
//!   on one core of the 2-core VM (20% less at 4096 x 4096). With the loop the scan's last
//!   region (`if lid == local_size(0) - 1 { sums[g] = v }`) no longer vectorized; a region
//!   whose `if` tests the local id for equality with a value of the group is therefore cut in
//!   three, below, at and above that work-item, as one testing `<` is cut in two. The
//!   function is also instantiated for groups of one work-item in dimensions 1 and 2 (a launch
//!   of one dimension: `GroupRun::flat`), where its work-item loops are one loop with nothing
//!   around it to set up: reduce of 2^22 floats took 0.87 - 0.93 ms instead of 1.13 - 1.15 on
//!   one core of the 2-core VM, scan 3.04 - 3.24 instead of 3.22 - 3.41.
//! - **Soundness** rests on the analyses following names as rustc resolves them: a review
//!   that tried to break it found kernels without `unsafe` reaching unchecked accesses out of
//!   bounds (a destructuring assignment not seen as a write; a bound rebuilt from a variable
//!   that had changed; a fact about `local_id(d)` with `d` changing; a user type's `min`;
//!   user names equal to the generated code's; an item in an inner block shadowing a
//!   variable; a macro hiding an assignment or a store). Each is now refused at compile time
//!   or left checked, with a test; what the analyses cannot see (macros, inner items, `__`
//!   names, upper-case bindings) is refused rather than guessed.
//! - **What did not work**: keeping a kept variable in its slot for every access (a load and
//!   a store through the slot per use) left the tiled matrix multiply's inner loop no faster
//!   than with every index checked; checking every index cost about half the time of the
//!   barrier kernels (on one core: scan 135 ms checked, 71 ms unchecked; transpose 78 and
//!   50 ms); a tree reduction's `if lid < s` region stayed a loop with a branch per work-item
//!   (64 ms) until the region was split at `s` (15 ms); the tiled matrix multiply's loop over
//!   `k` run breadth-first by the stride vote alone (its two tile reads both vote so) took
//!   238 - 356 ms on one core against 184 - 198 depth-first: with 16 work-items a row, the
//!   work-item loop is two vector iterations, and the accumulator goes through its slot at
//!   every `k`; the accumulator's votes keep it depth-first. Run in strips it vectorizes;
//!   on one core of the 2-core VM it took 122 ms compiled for SSE2 and 66 ms for AVX-512
//!   (64 - 69 ms depth-first with AVX-512: the tile loads from memory bound it there).
//!   Non-temporal stores (`movnti`, then a fence at the end of the groups) for every plain
//!   store of 4 bytes: the 4096 x 4096 transpose through a tile took 28 - 32 ms on one core
//!   of the 2-core VM instead of 44 (no read for ownership of the lines it fills), but the
//!   scan's output loop no longer vectorized (22 ms against 19) and axpy, which reads `y`
//!   before writing it, took 200 ms against 14: not kept; a form that helps needs vector
//!   non-temporal stores of whole aligned lines, and a buffer the kernel does not read.

use proc_macro::TokenStream;
use proc_macro2::TokenStream as Tokens;
use quote::quote;
use syn::spanned::Spanned;
use syn::{Error, FnArg, GenericArgument, ItemFn, Pat, PathArguments, Type};

mod analyze;
mod bounds;
mod emit;
mod prepare;

/// Turns a function written as an OpenCL kernel into a kernel of `numatask-kernels`.
///
/// ```text
/// #[kernel]
/// pub fn reduce(input: &[f32], out: &mut [f32], scratch: Local<f32>) {
///     let lid = local_id(0);
///     scratch[lid] = input[global_id(0)];
///     barrier();
///     let mut s = local_size(0) / 2;
///     while s > 0 {
///         if lid < s {
///             scratch[lid] += scratch[lid + s];
///         }
///         barrier();
///         s /= 2;
///     }
///     if lid == 0 {
///         out[group_id(0)] = scratch[0];
///     }
/// }
/// // queue.launch(&reduce, NdRange::new([n]).local([256]))
/// //     .arg(&input).arg(&out).arg(Local::<f32>::new(256)).enqueue()?
/// ```
///
/// The function becomes a unit struct of the same name that dereferences to the `Kernel`
/// (built once), with `INFO`, a `KernelInfo`: what the transformation decided.
///
/// **Parameters**: `&[T]` a buffer the kernel reads; `&mut [T]` a buffer it writes (read-write;
/// `#[write] out: &mut [T]` write-only); `Local<T>` local memory given at launch; any other
/// type a scalar. No generics, no return value.
///
/// **Work-item functions**, called by name: `global_id(d)`, `local_id(d)`, `group_id(d)`,
/// `local_size(d)`, `enqueued_local_size(d)`, `num_groups(d)`, `global_size(d)`,
/// `global_offset(d)` (all `usize`; past three dimensions ids are 0 and sizes 1),
/// `work_dim()`, `global_linear_id()`, `local_linear_id()`, and `barrier()`, a work-group
/// barrier over local memory and buffers. `let tile = local_array::<T, LEN>();` at the top
/// level of the body declares local memory. `uniform(cond)` asserts that `cond` is the same
/// for the whole group (checked per work-item in debug builds).
///
/// **Barriers** are statements: at the top level, or in `if`/`else`, `for`, `while`, `loop`
/// and blocks whose conditions (and loop ranges) are the same for every work-item of the
/// group, nested at will, and in helpers declared in the kernel's body as `#[inline] fn`
/// and called as statements. Elsewhere, or under a condition that may differ between
/// work-items, the kernel does not compile, and the error points at the condition.
///
/// **Local memory and written buffers** are used by indexing one element: `a[i]`, `a[i] = v`,
/// `a[i] += v`, `a.len()`. A written buffer whose every index is the work-item's own element
/// (`global_linear_id()`, or `global_id(0)` in a one-dimensional launch, or a variable bound
/// to one) is read and written plainly; any other is read and written by relaxed atomic loads
/// and stores, so that work-items of different groups writing one element race on its value,
/// never into undefined behaviour (its elements must then be numbers of 1 to 8 bytes).
/// `#[kernel(unsafe(disjoint(out, ...)))]` promises that no element of those buffers is
/// touched by two work-items of a launch (a transpose's scattered store, a permutation): they
/// are then read and written plainly too, so that the loops over work-items vectorize (a
/// 4096 x 4096 transpose through a local tile took 4 - 11% less time on one core of the 2-core
/// VM, its column reads of the tile gathers, its stores vectors), and a broken promise
/// is a data race, undefined behaviour, as `unsafe` says. Every index is bounds-checked; a
/// kernel opts out with `unsafe { x.get_unchecked(i) }` on a read buffer. A panic fails the
/// launch's event.
///
/// **What it generates**: the work-group function runs each region (the code between
/// barriers) as loops over the group's work-items, dimension 0 innermost; control flow with a
/// barrier runs once per group, its condition evaluated once; values that do not depend on
/// the work-item (uniform) are scalars computed once per group. A variable that lives across
/// regions and differs between work-items is recomputed in each region when it is an
/// immutable arithmetic function of ids and uniform values, and otherwise kept per work-item
/// in slots of the group's arena (a structure of arrays), which needs its type written
/// (`let x: f32 = ...`, a type buffers may hold: numbers, `bool`, arrays of them); a borrow
/// of such a variable is refused. Items declared in the body (constants, types, functions)
/// are seen by every part of the generated code. A `for` loop inside a region over a range
/// the same for the whole group runs breadth-first (each iteration for every work-item) when
/// its accesses walk memory with smaller strides that way (the seed paper's rule), or in
/// strips of 16 work-items when it also updates a variable of the work-item's (an
/// accumulator, then held in a vector register), and depth-first otherwise;
/// `#[kernel(depth_first)]` keeps every loop depth-first. A variable bound before the loop
/// in its region and used in or after the loop is carried through a strip when its type is
/// written and is a number, `bool` or an array of at most 64 of them, and it is given a value
/// where it is declared (`let mut acc: f32 = 0.0;`); any other keeps the loop depth-first.
/// The work-group function is compiled for the target's baseline and, on x86-64, for
/// x86-64-v3 (AVX2, FMA) and x86-64-v4 (AVX-512) as well; a launch runs the best version the
/// processor has (`numatask_kernels::Isa`), with the same results.
/// `NUMATASK_KERNEL_INFO=1` prints each kernel's report when it is first used;
/// `NUMATASK_KERNEL_EXPAND=dir` at build time writes the code generated for each kernel to
/// `dir/<name>.rs`. The reference form
/// (`LaunchBuilder::reference`) runs the body as written, each work-item on its own thread
/// with a real barrier that detects work-items reaching different barriers.
///
/// Not supported: closures, `match`/`if let`/`while let` around a barrier, `?`, `async`,
/// a `return` before a barrier under a condition that varies, a work-item's `return` inside
/// control flow that holds a barrier, macros other than the standard library's assertions,
/// panics and printing (the analyses cannot see what a macro does with the names it is
/// given), items in inner blocks, upper-case variable names, and names starting with `__`
/// (the generated code's); an error says so.
#[proc_macro_attribute]
pub fn kernel(attr: TokenStream, item: TokenStream) -> TokenStream {
    match expand(attr.into(), item.into()) {
        Ok(tokens) => tokens.into(),
        Err(e) => e.to_compile_error().into(),
    }
}

/// How a kernel takes a parameter.
#[derive(Clone)]
pub(crate) enum ParamKind {
    /// `&[T]`: a buffer the kernel only reads.
    Read,
    /// `&mut [T]`: a buffer the kernel writes (`write_only`: `#[write]`, its old contents not
    /// needed).
    Written { write_only: bool },
    /// `Local<T>`: local memory given at launch.
    Local,
    /// Anything else: a value the same for every work-item.
    Scalar,
}

/// One parameter: its name, kind, element type (the whole type for a scalar) and position.
#[derive(Clone)]
pub(crate) struct Param {
    pub(crate) name: syn::Ident,
    pub(crate) kind: ParamKind,
    pub(crate) elem: Type,
    pub(crate) index: usize,
}

/// The work-item functions a kernel body calls by name, and whether their value differs
/// between the work-items of a group.
pub(crate) const VARYING_INTRINSICS: &[&str] = &[
    "local_id",
    "global_id",
    "global_linear_id",
    "local_linear_id",
];
pub(crate) const UNIFORM_INTRINSICS: &[&str] = &[
    "group_id",
    "local_size",
    "enqueued_local_size",
    "num_groups",
    "global_size",
    "global_offset",
    "work_dim",
];
/// Calls with a meaning of their own: a barrier, a local array's declaration, and a condition
/// the programmer asserts to be uniform.
pub(crate) const SPECIAL: &[&str] = &["barrier", "local_array", "uniform"];

pub(crate) fn is_intrinsic(name: &str) -> bool {
    VARYING_INTRINSICS.contains(&name)
        || UNIFORM_INTRINSICS.contains(&name)
        || SPECIAL.contains(&name)
}

/// What `#[kernel(...)]` says: `depth_first`, and `unsafe(disjoint(a, b))`, in any order.
struct Options {
    /// Whether loops inside regions may run breadth-first (or in strips): not with
    /// `depth_first`.
    breadth_first: bool,
    /// Written buffers the kernel promises each work-item writes at elements of its own.
    disjoint: Vec<syn::Ident>,
}

impl Options {
    fn parse(attr: Tokens) -> syn::Result<Options> {
        const USAGE: &str = "#[kernel] takes no arguments, or `depth_first` (no loop inside a \
                             region runs breadth-first) and `unsafe(disjoint(buffer, ...))` \
                             (written buffers whose elements no two work-items touch)";
        let mut options = Options {
            breadth_first: true,
            disjoint: Vec::new(),
        };
        let parser = |input: syn::parse::ParseStream<'_>| -> syn::Result<()> {
            while !input.is_empty() {
                if input.peek(syn::Token![unsafe]) {
                    input.parse::<syn::Token![unsafe]>()?;
                    let inner;
                    syn::parenthesized!(inner in input);
                    let what: syn::Ident = inner.parse()?;
                    if what != "disjoint" {
                        return Err(Error::new(what.span(), USAGE));
                    }
                    let names;
                    syn::parenthesized!(names in inner);
                    let list = names.parse_terminated(
                        <syn::Ident as syn::parse::Parse>::parse,
                        syn::Token![,],
                    )?;
                    if list.is_empty() {
                        return Err(Error::new(what.span(), "`disjoint` names no buffer"));
                    }
                    options.disjoint.extend(list);
                    if !inner.is_empty() {
                        return Err(inner.error(USAGE));
                    }
                } else {
                    let word: syn::Ident =
                        input.parse().map_err(|e| Error::new(e.span(), USAGE))?;
                    if word != "depth_first" {
                        return Err(Error::new(word.span(), USAGE));
                    }
                    options.breadth_first = false;
                }
                if !input.is_empty() {
                    input.parse::<syn::Token![,]>()?;
                }
            }
            Ok(())
        };
        syn::parse::Parser::parse2(parser, attr)?;
        Ok(options)
    }
}

/// The number of arguments an intrinsic takes.
pub(crate) fn intrinsic_arity(name: &str) -> usize {
    match name {
        "global_linear_id" | "local_linear_id" | "work_dim" | "barrier" | "local_array" => 0,
        _ => 1,
    }
}

/// A kernel's parameters take one bit each of a 64-bit mask, and the arena past them one more.
const MAX_PARAMS: usize = 63;

fn expand(attr: Tokens, item: Tokens) -> syn::Result<Tokens> {
    let options = Options::parse(attr)?;
    let f: ItemFn = syn::parse2(item)?;
    let sig = &f.sig;
    if let Some(c) = &sig.constness {
        return Err(Error::new(c.span(), "a kernel cannot be `const`"));
    }
    if let Some(a) = &sig.asyncness {
        return Err(Error::new(a.span(), "a kernel cannot be `async`"));
    }
    if let Some(u) = &sig.unsafety {
        return Err(Error::new(
            u.span(),
            "a kernel cannot be `unsafe fn`: write `unsafe { }` blocks inside it",
        ));
    }
    if !sig.generics.params.is_empty() || sig.generics.where_clause.is_some() {
        return Err(Error::new(
            sig.generics.span(),
            "a kernel cannot be generic: its parameters' types are checked at launch",
        ));
    }
    if let syn::ReturnType::Type(_, t) = &sig.output {
        return Err(Error::new(
            t.span(),
            "a kernel returns nothing: it writes its buffers",
        ));
    }
    if let Some(v) = &sig.variadic {
        return Err(Error::new(v.span(), "a kernel cannot be variadic"));
    }
    if sig.inputs.len() > MAX_PARAMS {
        return Err(Error::new(
            sig.inputs.span(),
            format!("a kernel takes at most {MAX_PARAMS} parameters"),
        ));
    }
    let mut params = Vec::new();
    for (index, input) in sig.inputs.iter().enumerate() {
        params.push(param(input, index)?);
    }
    for name in &options.disjoint {
        if !params
            .iter()
            .any(|p| p.name == *name && matches!(p.kind, ParamKind::Written { .. }))
        {
            return Err(Error::new(
                name.span(),
                format!("`{name}` is not a written buffer (`&mut [T]`) of this kernel"),
            ));
        }
    }
    let krate = crate_path();
    let body = prepare::prepare(&f.block, &params)?;
    let mut analysis = analyze::analyze(&body, &params, options.breadth_first)?;
    for name in &options.disjoint {
        // Only what would be atomic: a buffer written at the work-item's own element keeps
        // its view (and the launch check that makes `global_id(0)` the work-item's own).
        if let Some(w @ analyze::Written::Shared) = analysis.written.get_mut(&name.to_string()) {
            *w = analyze::Written::Disjoint;
        }
    }
    let out = emit::emit(&f, &params, &body, &analysis, &krate);
    // A debugging aid: the generated code, one file per kernel, for rustfmt and reading.
    if let Some(dir) = std::env::var_os("NUMATASK_KERNEL_EXPAND") {
        let path = std::path::Path::new(&dir).join(format!("{}.rs", f.sig.ident));
        if let Err(e) = std::fs::write(&path, out.to_string()) {
            return Err(Error::new(
                f.sig.ident.span(),
                format!(
                    "NUMATASK_KERNEL_EXPAND: cannot write {}: {e}",
                    path.display()
                ),
            ));
        }
    }
    Ok(out)
}

/// Parses one parameter.
fn param(input: &FnArg, index: usize) -> syn::Result<Param> {
    let FnArg::Typed(pt) = input else {
        return Err(Error::new(input.span(), "a kernel takes no `self`"));
    };
    let name = match &*pt.pat {
        Pat::Ident(p) if p.subpat.is_none() && p.by_ref.is_none() => {
            if let Some(m) = &p.mutability {
                return Err(Error::new(
                    m.span(),
                    "a kernel's parameters cannot be `mut`: copy one into a `let mut` variable",
                ));
            }
            p.ident.clone()
        }
        other => {
            return Err(Error::new(
                other.span(),
                "a kernel's parameter is a plain name (`x: &[f32]`)",
            ));
        }
    };
    if is_intrinsic(&name.to_string()) {
        return Err(Error::new(
            name.span(),
            format!("`{name}` is a work-item function in kernels: choose another name"),
        ));
    }
    let mut write_only = false;
    for a in &pt.attrs {
        if a.path().is_ident("write") {
            write_only = true;
        } else {
            return Err(Error::new(
                a.span(),
                "the only attribute of a kernel's parameter is #[write] (a buffer the kernel only writes)",
            ));
        }
    }
    let (kind, elem) = match &*pt.ty {
        Type::Reference(r) => match &*r.elem {
            Type::Slice(s) if r.lifetime.is_none() => {
                if r.mutability.is_some() {
                    (ParamKind::Written { write_only }, (*s.elem).clone())
                } else {
                    (ParamKind::Read, (*s.elem).clone())
                }
            }
            _ => {
                return Err(Error::new(
                    pt.ty.span(),
                    "a kernel takes buffers as `&[T]` (read) or `&mut [T]` (written), without lifetimes",
                ));
            }
        },
        Type::Path(p)
            if p.qself.is_none() && p.path.segments.last().is_some_and(|s| s.ident == "Local") =>
        {
            let seg = p.path.segments.last().expect("checked");
            match &seg.arguments {
                PathArguments::AngleBracketed(a) if a.args.len() == 1 => match &a.args[0] {
                    GenericArgument::Type(t) => (ParamKind::Local, t.clone()),
                    other => return Err(Error::new(other.span(), "`Local<T>` takes a type")),
                },
                _ => {
                    return Err(Error::new(
                        seg.span(),
                        "local memory is `Local<T>`, with the element type",
                    ));
                }
            }
        }
        other => (ParamKind::Scalar, other.clone()),
    };
    if write_only && !matches!(kind, ParamKind::Written { .. }) {
        return Err(Error::new(
            pt.span(),
            "#[write] is for written buffers (`&mut [T]`)",
        ));
    }
    Ok(Param {
        name,
        kind,
        elem,
        index,
    })
}

/// The path of the `numatask-kernels` crate as the crate being compiled names it: itself
/// (its tests), or through the `numatask` facade when only that is a dependency.
fn crate_path() -> Tokens {
    let manifest = std::env::var("CARGO_MANIFEST_DIR")
        .ok()
        .and_then(|d| std::fs::read_to_string(std::path::Path::new(&d).join("Cargo.toml")).ok())
        .unwrap_or_default();
    // `key = ...`, `key.workspace = true`, or a table `[dependencies.key]`.
    let names = |key: &str| {
        manifest.lines().any(|l| {
            let l = l.trim_start();
            (l.starts_with(key) && l[key.len()..].trim_start().starts_with(['=', '.']))
                || (l.starts_with('[') && l.trim_end().ends_with(&format!("dependencies.{key}]")))
        })
    };
    let is_package = manifest.lines().any(|l| {
        let l = l.trim();
        l.starts_with("name") && l.contains("\"numatask-kernels\"")
    });
    if is_package || names("numatask-kernels") || !names("numatask") {
        quote!(::numatask_kernels)
    } else {
        quote!(::numatask::kernels)
    }
}

#[cfg(test)]
mod tests {
    //! Errors at compile time: each names what is wrong and points at the offending code
    //! (checked by the line and column of its span, with `span-locations` in tests).

    use super::expand;
    use quote::quote;

    /// Expands `src` (a kernel function) and returns the error's message, and the line
    /// (from 1) and text of the source at its span's start.
    fn error(src: &str) -> (String, usize, String) {
        error_with("", src)
    }

    /// [`error`] with `attr` inside `#[kernel(...)]`.
    fn error_with(attr: &str, src: &str) -> (String, usize, String) {
        let item: proc_macro2::TokenStream = src.parse().expect("tokens");
        let attr: proc_macro2::TokenStream = attr.parse().expect("tokens");
        let err = expand(attr, item).expect_err("the kernel must not compile");
        let start = err.span().start();
        let line = src.lines().nth(start.line - 1).unwrap_or("");
        let at = line.get(start.column..).unwrap_or("").to_owned();
        (err.to_string(), start.line, at)
    }

    fn ok(src: &str) {
        let item: proc_macro2::TokenStream = src.parse().expect("tokens");
        if let Err(e) = expand(quote!(), item) {
            panic!("expected to compile: {e}");
        }
    }

    #[test]
    fn disjoint_names_written_buffers_behind_unsafe() {
        let src = "fn k(x: &[f32], y: &mut [f32], n: u32) {
                y[global_id(0) * 2] = x[0];
            }";
        let item: proc_macro2::TokenStream = src.parse().expect("tokens");
        expand(quote!(unsafe(disjoint(y)), depth_first), item).expect("y is written");
        let (msg, _, _) = error_with("unsafe(disjoint(x))", src);
        assert_eq!(
            msg,
            "`x` is not a written buffer (`&mut [T]`) of this kernel"
        );
        let (msg, _, _) = error_with("unsafe(disjoint(n, y))", src);
        assert!(msg.starts_with("`n` is not a written buffer"), "{msg}");
        let (msg, _, _) = error_with("disjoint(y)", src);
        assert!(msg.starts_with("#[kernel] takes no arguments"), "{msg}");
        let (msg, _, _) = error_with("unsafe(overlapping(y))", src);
        assert!(msg.starts_with("#[kernel] takes no arguments"), "{msg}");
        let (msg, _, _) = error_with("unsafe(disjoint())", src);
        assert_eq!(msg, "`disjoint` names no buffer");
        // A buffer written at the work-item's own element keeps its view and the launch check
        // that makes `global_id(0)` its own; a scattered one loses its atomics.
        let own = "fn k(y: &mut [f32], z: &mut [f32]) {
                y[global_id(0)] = 1.0;
                z[group_id(0)] = 2.0;
            }";
        let item: proc_macro2::TokenStream = own.parse().expect("tokens");
        let out = expand(quote!(unsafe(disjoint(y, z))), item)
            .expect("compiles")
            .to_string();
        assert!(out.contains("global_size (1) == 1"), "{out}");
        assert!(!out.contains("shared_mut"), "{out}");
        assert_eq!(
            out.matches("owned_mut").count(),
            4,
            "y and z, compiled and reference: {out}"
        );
    }

    #[test]
    fn barrier_under_varying_condition() {
        let (msg, line, at) = error(
            "fn k(x: &mut [f32]) {
                if local_id(0) < 4 {
                    barrier();
                }
            }",
        );
        assert!(
            msg.contains("barrier() under a condition that differs between work-items"),
            "{msg}"
        );
        assert_eq!((line, at.starts_with("local_id(0) < 4")), (2, true), "{at}");
    }

    #[test]
    fn barrier_in_loop_with_varying_bound() {
        let (msg, line, at) = error(
            "fn k(x: &mut [f32]) {
                let n = global_id(0);
                for i in 0..n {
                    barrier();
                }
            }",
        );
        assert!(msg.contains("differs between work-items"), "{msg}");
        assert_eq!(line, 3);
        assert!(at.starts_with("0..n"), "{at}");
    }

    #[test]
    fn variable_that_becomes_varying_through_assignment() {
        // `s` starts uniform but is assigned a work-item's value under a varying `if`.
        let (msg, line, _) = error(
            "fn k(x: &mut [f32]) {
                let mut s = 4;
                if local_id(0) == 0 { s = 2; }
                while s > 0 {
                    barrier();
                    s -= 1;
                }
            }",
        );
        assert!(msg.contains("differs between work-items"), "{msg}");
        assert_eq!(line, 4);
    }

    #[test]
    fn uniform_assertion_allows_the_barrier() {
        ok("fn k(flags: &[u32]) {
                if uniform(flags[local_id(0) * 0] > 0) {
                    barrier();
                }
            }");
    }

    #[test]
    fn borrow_of_a_variable_that_crosses_a_barrier() {
        let (msg, line, at) = error(
            "fn k(x: &mut [f32]) {
                let v: f32 = x[global_linear_id()];
                barrier();
                let r = &v;
                x[global_linear_id()] = *r;
            }",
        );
        assert!(msg.contains("a borrow of `v`"), "{msg}");
        assert_eq!(line, 4);
        assert!(at.starts_with("&v"), "{at}");
    }

    #[test]
    fn return_before_a_barrier() {
        let (msg, line, at) = error(
            "fn k(x: &mut [f32]) {
                if global_id(0) >= x.len() { return; }
                barrier();
            }",
        );
        assert!(msg.contains("differs between work-items"), "{msg}");
        assert_eq!(line, 2);
        assert!(at.starts_with("global_id(0) >= x.len()"), "{at}");
        // After the last barrier, a work-item may return on its own.
        ok("fn k(x: &mut [f32]) {
                barrier();
                if global_id(0) >= x.len() { return; }
                x[global_id(0)] = 1.0;
            }");
        // Under a uniform condition, the whole group returns.
        ok("fn k(x: &mut [f32]) {
                if group_id(0) > 3 { return; }
                barrier();
            }");
    }

    #[test]
    fn return_in_work_item_code_before_a_group_statement() {
        let (msg, line, _) = error(
            "fn k(x: &mut [f32]) {
                let mut s = 0;
                while s < 4 {
                    if local_id(0) == 0 { x[0] = 1.0; }
                    barrier();
                    s += 1;
                }
                if global_id(0) >= 10 { return; }
                x[global_id(0)] = 2.0;
                barrier();
            }",
        );
        assert!(msg.contains("differs between work-items"), "{msg}");
        assert_eq!(line, 8);
    }

    #[test]
    fn expanded_variable_needs_its_type() {
        let (msg, line, at) = error(
            "fn k(x: &mut [f32]) {
                let v = x[global_linear_id()] * 2.0;
                barrier();
                x[global_linear_id()] = v;
            }",
        );
        assert!(msg.contains("`v` lives across a barrier"), "{msg}");
        assert!(msg.contains("let v: T"), "{msg}");
        assert_eq!(line, 2);
        assert!(at.starts_with("v ="), "{at}");
    }

    #[test]
    fn unsupported_constructs() {
        let (msg, _, at) = error(
            "fn k(x: &mut [f32]) {
                let f = |a: f32| a * 2.0;
            }",
        );
        assert!(msg.contains("closures are not supported"), "{msg}");
        assert!(at.starts_with("|a"), "{at}");

        let (msg, line, _) = error(
            "fn k(x: &mut [f32]) {
                match group_id(0) {
                    0 => barrier(),
                    _ => {}
                }
            }",
        );
        assert!(msg.contains("inside `match` is not supported"), "{msg}");
        assert_eq!(line, 2);

        let (msg, _, _) = error(
            "fn k(x: &mut [f32]) {
                let y = { barrier(); 1 };
            }",
        );
        assert!(msg.contains("inside a `let`"), "{msg}");

        let (msg, _, at) = error(
            "fn k(x: &mut [f32]) {
                fn helper() { barrier(); }
                helper();
            }",
        );
        assert!(msg.contains("must be marked #[inline]"), "{msg}");
        assert!(at.starts_with("helper"), "{at}");

        let (msg, _, at) = error("fn k<T>(x: &mut [T]) {}");
        assert!(msg.contains("cannot be generic"), "{msg}");
        assert!(at.starts_with("<T>"), "{at}");
    }

    #[test]
    fn intrinsic_names_cannot_be_rebound() {
        let (msg, line, at) = error(
            "fn k(x: &mut [f32]) {
                let local_id = 3;
            }",
        );
        assert!(msg.contains("`local_id` is a work-item function"), "{msg}");
        assert_eq!(line, 2);
        assert!(at.starts_with("local_id"), "{at}");
        let (msg, _, _) = error("fn k(barrier: u32) {}");
        assert!(msg.contains("`barrier` is a work-item function"), "{msg}");
    }

    #[test]
    fn written_buffers_and_local_memory_are_used_by_indexing() {
        let (msg, line, at) = error(
            "fn k(x: &mut [f32]) {
                let s = &x[1..3];
            }",
        );
        assert!(msg.contains("a reference into `x`"), "{msg}");
        assert_eq!(line, 2);
        assert!(at.starts_with("&x[1..3]"), "{at}");
        let (msg, _, at) = error(
            "fn k(x: &mut [f32]) {
                let s = x.iter().sum::<f32>();
            }",
        );
        assert!(msg.contains("is used only by indexing"), "{msg}");
        assert!(at.starts_with("x.iter()"), "{at}");
        ok("fn k(x: &mut [f32], t: Local<f32>) {
                let n = x.len();
                t[local_id(0)] = 1.0;
                barrier();
                x[global_linear_id()] += t[0] + n as f32;
            }");
    }

    #[test]
    fn intrinsic_arity_is_checked() {
        let (msg, _, at) = error(
            "fn k(x: &mut [f32]) {
                let i = global_id();
            }",
        );
        assert!(
            msg.contains("`global_id` takes 1 argument(s), given 0"),
            "{msg}"
        );
        assert!(at.starts_with("global_id()"), "{at}");
    }

    #[test]
    fn what_the_analyses_cannot_follow_is_refused() {
        // Names of the generated code.
        let (msg, line, at) = error(
            "fn k(y: &mut [u32]) {
                let __items = 1usize;
                y[global_linear_id()] = 1;
            }",
        );
        assert!(
            msg.contains("names starting with `__` are reserved"),
            "{msg}"
        );
        assert_eq!(line, 2);
        assert!(at.starts_with("__items"), "{at}");
        let (msg, _, _) = error(
            "fn k(y: &mut [u32]) {
                y[__glb] = 1;
            }",
        );
        assert!(msg.contains("reserved"), "{msg}");
        // An item in an inner block could shadow a variable.
        let (msg, line, _) = error(
            "fn k(y: &mut [u32]) {
                let m = 0usize;
                {
                    const m: usize = 32;
                    y[m] = 1;
                }
            }",
        );
        assert!(
            msg.contains("items (constants, functions, types) are declared at the top level"),
            "{msg}"
        );
        assert_eq!(line, 4);
        // A macro could assign or bind what the analyses follow.
        let (msg, line, at) = error(
            "fn k(y: &mut [u32]) {
                let mut m = 0usize;
                set_to!(m, local_id(0));
                y[m] = 1;
            }",
        );
        assert!(msg.contains("macro `set_to!` in a kernel"), "{msg}");
        assert_eq!(line, 3);
        assert!(at.starts_with("set_to"), "{at}");
        ok("fn k(y: &mut [u32]) {
                let v: u32 = 3;
                assert!(v > 2, \"v is {v}\");
                y[global_linear_id()] = v;
            }");
        // An upper-case name in a `let` could be a binding or a constant.
        let (msg, line, at) = error(
            "fn k(y: &mut [u32]) {
                let N = local_id(0);
                y[N] = 1;
            }",
        );
        assert!(msg.contains("named in lower case"), "{msg}");
        assert_eq!(line, 2);
        assert!(at.starts_with("N"), "{at}");
    }
}
