//! `#[kernel]`: an OpenCL-model kernel written in Rust, compiled at build time to the
//! work-group function of `numatask-kernels` by work-item coalescing, and to a reference form
//! that runs each work-item on a thread of its own.
//!
//! The passes, each in its module: [`prepare`] inlines the kernel's `#[inline]` helpers and
//! gives every binding a name of its own; [`analyze`] splits the body into regions at
//! barriers, finds which variables are the same for every work-item of a group (uniform) and
//! which live across regions, and decides for each of those whether it is recomputed or kept
//! per work-item; [`emit`] writes the work-group function, its reference form and the report.
//! The analyses see tokens, not types: they are syntactic and conservative (what they cannot
//! prove uniform varies), and they report what they decided (`KernelInfo`).
//!
//! The language is documented on the `kernel` re-export of `numatask-kernels`.

use proc_macro::TokenStream;
use proc_macro2::TokenStream as Tokens;
use quote::quote;
use syn::spanned::Spanned;
use syn::{Error, FnArg, GenericArgument, ItemFn, Pat, PathArguments, Type};

mod analyze;
mod emit;
mod prepare;

/// Turns a kernel function into a kernel: see the `numatask-kernels` crate.
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
    if !attr.is_empty() {
        return Err(Error::new(attr.span(), "#[kernel] takes no arguments"));
    }
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
    let krate = crate_path();
    let body = prepare::prepare(&f.block, &params)?;
    let analysis = analyze::analyze(&body, &params)?;
    Ok(emit::emit(&f, &params, &body, &analysis, &krate))
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
    let names = |key: &str| {
        manifest.lines().any(|l| {
            let l = l.trim_start();
            l.starts_with(key) && l[key.len()..].trim_start().starts_with(['=', '.'])
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
