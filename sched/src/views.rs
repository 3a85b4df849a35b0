//! The data a dependent task's body receives: one view type per kind of declaration, and the
//! tuples of them that a [`TaskBuilder`](crate::TaskBuilder) collects.
//!
//! A view is where a declared region's data is (a pointer and a length), not a reference:
//! only the runtime turns it into `&[T]` or `&mut [T]`, once the task's dependences are met
//! ([`Views::views`]). What kind of reference each view gives is in its type, and a view is
//! `Send` only when that reference may go to the thread that runs the task. The traits are
//! sealed: a view made elsewhere could hand out references the runtime does not order.

use std::marker::PhantomData;
use std::ops::Deref;
use std::ptr::NonNull;

use crate::depend::{Access, AccessKind};

/// The single views: one region, one reference.
macro_rules! views {
    ($($(#[$doc:meta])* $view:ident => $kind:ident, $out:ty, [$($send:tt)+];)*) => {$(
        $(#[$doc])*
        pub struct $view<T> {
            pub(crate) ptr: NonNull<T>,
            pub(crate) len: usize,
            /// Invariant in `T` (`NonNull<T>` alone is covariant): a view declared on data of
            /// type `X` must not pass for one of a supertype of `X`, or a body given
            /// `&mut [Y]` could store a `Y` where an `X` is read later (a `for<'a> fn(&'a
            /// str)` slot given a `fn(&'static str)` that keeps its argument, for instance).
            pub(crate) _invariant: PhantomData<fn(T) -> T>,
        }

        // SAFETY: the body on another thread gets the reference in the type's docs, which
        // may cross threads under this bound.
        unsafe impl<T: $($send)+> Send for $view<T> {}

        impl<T> sealed::Sealed for $view<T> {
            const LEN: usize = 1;

            fn count(&self) -> usize {
                1
            }

            fn describe(&self, out: &mut [Access], first: usize, intensive: u8) {
                let access = Access::new(
                    self.ptr.as_ptr() as usize,
                    self.len * size_of::<T>(),
                    AccessKind::$kind,
                );
                out[0] = if intensive & (1 << first) != 0 {
                    access.intensive()
                } else {
                    access
                };
            }
        }

        impl<'t, T: 't> Views<'t> for $view<T> {
            type Out = $out;

            unsafe fn views(self) -> $out {
                // SAFETY: the caller's promise (`Views::views`): the runtime orders the task
                // after every conflicting access, and the region lies in data borrowed for
                // the scope.
                unsafe { view_slice(self.ptr, self.len) }
            }
        }
    )*};
}

/// `&[T]` or `&mut [T]` from a region's pointer and length.
///
/// # Safety
///
/// As for [`std::slice::from_raw_parts_mut`] when `S` is `&mut [T]`, or `from_raw_parts`.
unsafe fn view_slice<'t, T, S: FromRaw<'t, T>>(ptr: NonNull<T>, len: usize) -> S {
    // SAFETY: the caller's promise.
    unsafe { S::from_raw(ptr, len) }
}

/// The two kinds of views.
trait FromRaw<'t, T> {
    /// # Safety
    ///
    /// `ptr` is valid for `len` elements for `'t`, with the aliasing the reference needs.
    unsafe fn from_raw(ptr: NonNull<T>, len: usize) -> Self;
}

impl<'t, T> FromRaw<'t, T> for &'t [T] {
    unsafe fn from_raw(ptr: NonNull<T>, len: usize) -> Self {
        // SAFETY: the caller's promise.
        unsafe { std::slice::from_raw_parts(ptr.as_ptr(), len) }
    }
}

impl<'t, T> FromRaw<'t, T> for &'t mut [T] {
    unsafe fn from_raw(ptr: NonNull<T>, len: usize) -> Self {
        // SAFETY: the caller's promise.
        unsafe { std::slice::from_raw_parts_mut(ptr.as_ptr(), len) }
    }
}

views! {
    /// A declared `in` access: the body gets `&[T]`.
    Read => In, &'t [T], [Sync];
    /// A declared `out` access: the body gets `&mut [T]`.
    Write => Out, &'t mut [T], [Send];
    /// A declared `inout` access: the body gets `&mut [T]`.
    Update => InOut, &'t mut [T], [Send];
    /// A declared `mutexinoutset` access: the body gets `&mut [T]`.
    MutexUpdate => MutexInOutSet, &'t mut [T], [Send];
    /// A declared `inoutset` access: the body gets `&[T]`.
    ConcurrentUpdate => InOutSet, &'t [T], [Sync];
}

/// Where the regions of an `_each` declaration are: as [`views!`], one access per region, and
/// the body gets a `Vec` of the references.
macro_rules! list_views {
    ($($(#[$doc:meta])* $list:ident => $kind:ident, $out:ty, [$($send:tt)+];)*) => {$(
        $(#[$doc])*
        pub struct $list<T> {
            pub(crate) parts: Vec<(NonNull<T>, usize)>,
            /// Invariant in `T`, as the single views are.
            pub(crate) _invariant: PhantomData<fn(T) -> T>,
        }

        // SAFETY: the body on another thread gets references of the kind in the type's docs,
        // which may cross threads under this bound.
        unsafe impl<T: $($send)+> Send for $list<T> {}

        impl<T> sealed::Sealed for $list<T> {
            const LEN: usize = 1;

            fn count(&self) -> usize {
                self.parts.len()
            }

            fn describe(&self, out: &mut [Access], first: usize, intensive: u8) {
                for (slot, &(ptr, len)) in out.iter_mut().zip(&self.parts) {
                    let access =
                        Access::new(ptr.as_ptr() as usize, len * size_of::<T>(), AccessKind::$kind);
                    *slot = if intensive & (1 << first) != 0 {
                        access.intensive()
                    } else {
                        access
                    };
                }
            }
        }

        impl<'t, T: 't> Views<'t> for $list<T> {
            type Out = Vec<$out>;

            unsafe fn views(self) -> Vec<$out> {
                self.parts
                    .into_iter()
                    // SAFETY: as for the single views; the regions of one list that give
                    // `&mut` do not overlap (`check_conflicts` refused the task otherwise).
                    .map(|(ptr, len)| unsafe { view_slice(ptr, len) })
                    .collect()
            }
        }
    )*};
}

list_views! {
    /// A declared list of `in` accesses: the body gets `Vec<&[T]>`.
    ReadEach => In, &'t [T], [Sync];
    /// A declared list of `out` accesses: the body gets `Vec<&mut [T]>`.
    WriteEach => Out, &'t mut [T], [Send];
    /// A declared list of `inout` accesses: the body gets `Vec<&mut [T]>`.
    UpdateEach => InOut, &'t mut [T], [Send];
    /// A declared list of `mutexinoutset` accesses: the body gets `Vec<&mut [T]>`.
    MutexUpdateEach => MutexInOutSet, &'t mut [T], [Send];
    /// A declared list of `inoutset` accesses: the body gets `Vec<&[T]>`.
    ConcurrentUpdateEach => InOutSet, &'t [T], [Sync];
}

/// A declared list of accesses of mixed kinds ([`TaskBuilder::accesses`](crate::TaskBuilder::accesses)):
/// the body gets `Vec<View<'t, T>>`, in the list's order.
pub struct Mixed<T> {
    pub(crate) parts: Vec<MixedPart<T>>,
    pub(crate) _invariant: PhantomData<fn(T) -> T>,
}

/// One region of a [`Mixed`] declaration.
pub(crate) struct MixedPart<T> {
    pub(crate) ptr: NonNull<T>,
    pub(crate) len: usize,
    /// The region's first element, counted in the data its `Blocks` cut.
    pub(crate) start: usize,
    pub(crate) kind: AccessKind,
}

// SAFETY: the body on another thread gets `&[T]` (needs `T: Sync`) or `&mut [T]` (needs
// `T: Send`) per region; both are required.
unsafe impl<T: Send + Sync> Send for Mixed<T> {}

impl<T> sealed::Sealed for Mixed<T> {
    const LEN: usize = 1;

    fn count(&self) -> usize {
        self.parts.len()
    }

    fn describe(&self, out: &mut [Access], first: usize, intensive: u8) {
        for (slot, part) in out.iter_mut().zip(&self.parts) {
            let access = Access::new(
                part.ptr.as_ptr() as usize,
                part.len * size_of::<T>(),
                part.kind,
            );
            *slot = if intensive & (1 << first) != 0 {
                access.intensive()
            } else {
                access
            };
        }
    }
}

impl<'t, T: 't> Views<'t> for Mixed<T> {
    type Out = Vec<View<'t, T>>;

    unsafe fn views(self) -> Vec<View<'t, T>> {
        self.parts
            .into_iter()
            .map(|part| {
                let data = if part.kind.gives_mut() {
                    // SAFETY: as for the single views; regions of the task that give `&mut`
                    // overlap none of its other regions (`check_conflicts`).
                    ViewData::Mut(unsafe { view_slice(part.ptr, part.len) })
                } else {
                    // SAFETY: as above, a shared reference.
                    ViewData::Shared(unsafe { view_slice(part.ptr, part.len) })
                };
                View {
                    start: part.start,
                    kind: part.kind,
                    data,
                }
            })
            .collect()
    }
}

/// The data of one region of an [`accesses`](crate::TaskBuilder::accesses) declaration, as
/// the task body gets it: the elements (through `Deref`, and [`get_mut`](View::get_mut) for
/// kinds that write), where the region starts in its data, and how it was declared.
pub struct View<'t, T> {
    start: usize,
    kind: AccessKind,
    data: ViewData<'t, T>,
}

enum ViewData<'t, T> {
    Shared(&'t [T]),
    Mut(&'t mut [T]),
}

impl<'t, T> View<'t, T> {
    /// The region's first element, counted in the data its [`Blocks`](crate::data::Blocks)
    /// cut (block `i` of blocks of `n` elements starts at `i * n`).
    pub fn start(&self) -> usize {
        self.start
    }

    /// How the region was declared.
    pub fn kind(&self) -> AccessKind {
        self.kind
    }

    /// The elements, mutable: `Some` for the kinds that give `&mut` (`Out`, `InOut`,
    /// `MutexInOutSet`), `None` for `In` and `InOutSet`.
    pub fn get_mut(&mut self) -> Option<&mut [T]> {
        match &mut self.data {
            ViewData::Mut(data) => Some(data),
            ViewData::Shared(_) => None,
        }
    }

    /// The elements as a mutable reference for the whole body call, as
    /// [`get_mut`](View::get_mut).
    pub fn into_mut(self) -> Option<&'t mut [T]> {
        match self.data {
            ViewData::Mut(data) => Some(data),
            ViewData::Shared(_) => None,
        }
    }
}

impl<T> Deref for View<'_, T> {
    type Target = [T];

    fn deref(&self) -> &[T] {
        match &self.data {
            ViewData::Mut(data) => data,
            ViewData::Shared(data) => data,
        }
    }
}

impl<T> std::fmt::Debug for View<'_, T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("View")
            .field("start", &self.start)
            .field("len", &self.len())
            .field("kind", &self.kind)
            .finish()
    }
}

pub(crate) mod sealed {
    use crate::depend::Access;

    /// Keeps [`Views`](super::Views) and [`Append`](super::Append) to this module's types:
    /// a view made elsewhere could hand out references the runtime does not order.
    pub trait Sealed {
        /// Number of declarations (of which an `_each` list is one).
        const LEN: usize;

        /// Number of accesses (a list has one per region).
        fn count(&self) -> usize;

        /// Writes the accesses, in declaration order, to `out[..self.count()]`; the first
        /// declaration is number `first`, and those whose bit is set in `intensive` are
        /// marked intensive.
        fn describe(&self, out: &mut [Access], first: usize, intensive: u8);
    }

    /// The declarations of a task with at least one data declaration (not `()`), whose body
    /// gets the data besides its `Scope`.
    pub trait Declared: Sealed {}
}

/// The data a task body gets for its declared accesses, for a body call of lifetime `'t`
/// (implemented for the access types and tuples of them; sealed).
///
/// A builder with more than [`MAX_ACCESSES`](crate::task::MAX_ACCESSES) declarations has none ([`TooManyAccesses`]):
/// its `spawn` does not compile, with a message that says why.
#[diagnostic::on_unimplemented(
    message = "a task makes at most 8 declarations (MAX_ACCESSES): `{Self}` has no body data",
    label = "this task declares more than 8 accesses",
    note = "declare lists of regions at once with reads_each, writes_each, updates_each, \
            mutex_updates_each or concurrent_updates_each: each counts as one declaration"
)]
pub trait Views<'t>: sealed::Sealed {
    /// The references the body gets.
    type Out;

    /// Makes the references.
    ///
    /// # Safety
    ///
    /// The runtime has ordered the task so that nothing else accesses the data in a
    /// conflicting way for `'t`.
    #[doc(hidden)]
    unsafe fn views(self) -> Self::Out;
}

/// Adds one access to a tuple of accesses (implemented for tuples of up to
/// [`MAX_ACCESSES`](crate::task::MAX_ACCESSES)` - 1` elements; a full tuple gives [`TooManyAccesses`]; sealed).
pub trait Append<V>: sealed::Sealed {
    /// The tuple with `V` added at the end.
    type Output;

    #[doc(hidden)]
    fn append(self, view: V) -> Self::Output;
}

impl sealed::Sealed for () {
    const LEN: usize = 0;

    fn count(&self) -> usize {
        0
    }

    fn describe(&self, _: &mut [Access], _: usize, _: u8) {}
}

impl<'t> Views<'t> for () {
    type Out = ();

    unsafe fn views(self) {}
}

impl<V> Append<V> for () {
    type Output = (V,);

    fn append(self, view: V) -> (V,) {
        (view,)
    }
}

macro_rules! tuples {
    ($(($($v:ident)+) => $next:ident;)*) => {$(
        impl<$($v: sealed::Sealed),+> sealed::Sealed for ($($v,)+) {
            const LEN: usize = 0 $(+ $v::LEN)+;

            #[allow(non_snake_case)]
            fn count(&self) -> usize {
                let ($($v,)+) = self;
                0 $(+ $v.count())+
            }

            #[allow(non_snake_case)]
            fn describe(&self, out: &mut [Access], first: usize, intensive: u8) {
                let ($($v,)+) = self;
                let (mut at, mut decl) = (0, first);
                $(
                    $v.describe(&mut out[at..], decl, intensive);
                    at += $v.count();
                    decl += $v::LEN;
                )+
                let _ = (at, decl);
            }
        }

        impl<$($v: sealed::Sealed),+> sealed::Declared for ($($v,)+) {}

        impl<'t, $($v: Views<'t>),+> Views<'t> for ($($v,)+) {
            type Out = ($($v::Out,)+);

            #[allow(non_snake_case)]
            unsafe fn views(self) -> Self::Out {
                let ($($v,)+) = self;
                // SAFETY: the caller's promise covers every element.
                unsafe { ($($v.views(),)+) }
            }
        }

        tuples!(@append ($($v)+) $next);
    )*};
    (@append ($($v:ident)+) none) => {
        impl<$($v: sealed::Sealed,)+ Next> Append<Next> for ($($v,)+) {
            type Output = TooManyAccesses;

            fn append(self, _: Next) -> TooManyAccesses {
                TooManyAccesses
            }
        }
    };
    (@append ($($v:ident)+) $next:ident) => {
        impl<$($v: sealed::Sealed,)+ $next> Append<$next> for ($($v,)+) {
            type Output = ($($v,)+ $next);

            #[allow(non_snake_case)]
            fn append(self, view: $next) -> Self::Output {
                let ($($v,)+) = self;
                ($($v,)+ view)
            }
        }
    };
}

/// The declarations of a [`TaskBuilder`](crate::TaskBuilder) given more than [`MAX_ACCESSES`](crate::task::MAX_ACCESSES): it takes more
/// (so that the error comes once, at `spawn`, rather than at each further declaration) but
/// cannot be spawned: see [`Views`].
#[derive(Debug)]
pub struct TooManyAccesses;

impl sealed::Sealed for TooManyAccesses {
    const LEN: usize = 0;

    fn count(&self) -> usize {
        0
    }

    fn describe(&self, _: &mut [Access], _: usize, _: u8) {}
}

impl sealed::Declared for TooManyAccesses {}

impl<V> Append<V> for TooManyAccesses {
    type Output = TooManyAccesses;

    fn append(self, _: V) -> TooManyAccesses {
        TooManyAccesses
    }
}

tuples! {
    (V1) => V2;
    (V1 V2) => V3;
    (V1 V2 V3) => V4;
    (V1 V2 V3 V4) => V5;
    (V1 V2 V3 V4 V5) => V6;
    (V1 V2 V3 V4 V5 V6) => V7;
    (V1 V2 V3 V4 V5 V6 V7) => V8;
    (V1 V2 V3 V4 V5 V6 V7 V8) => none;
}
