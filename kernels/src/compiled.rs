//! What the `#[kernel]` macro's generated code builds on: the report of what the macro did
//! ([`KernelInfo`]), and the views its work-group functions use for local memory, work-item
//! private slots and written buffers.
//!
//! Local memory and the slots of expanded variables are arrays of [`Cell`]s in the group's
//! arena: every work-item of a group runs on one thread, one after another, so shared
//! mutable access within the group needs no synchronisation, and a `Cell` array can neither
//! leave the group nor be shared with another thread. Written buffers are reached through two
//! views: [`OwnedMut`], for a buffer every access of which the macro proved to be the
//! work-item's own element (plain loads and stores, which vectorize), and [`SharedMut`], for
//! any other buffer (relaxed atomic loads and stores of each element, so that work-items of
//! different groups, on different threads, writing the same element is a race of values, as
//! on a GPU, and never undefined behaviour).

use std::cell::Cell;
use std::fmt;
use std::marker::PhantomData;
use std::sync::atomic::{
    AtomicI8, AtomicI16, AtomicI32, AtomicI64, AtomicIsize, AtomicU8, AtomicU16, AtomicU32,
    AtomicU64, AtomicUsize, Ordering,
};

use crate::buffer::Element;

/// What the `#[kernel]` macro made of a kernel: its regions, the variables it kept per
/// work-item, and the memory they take. Each kernel has it as an associated constant
/// (`my_kernel::INFO`); `NUMATASK_KERNEL_INFO=1` prints it when the kernel is first used.
#[derive(Clone, Copy, Debug)]
pub struct KernelInfo {
    /// The kernel's name.
    pub name: &'static str,
    /// Work-item loops of its work-group function: the parts between barriers (and between
    /// statements that run once per group).
    pub regions: usize,
    /// Variables kept per work-item (one slot each, as a structure of arrays in the group's
    /// arena): those that live across regions and differ between work-items.
    pub expanded: &'static [Expanded],
    /// Bytes per work-item of the expanded variables, together.
    pub bytes_per_item: usize,
    /// Variables computed once per group: those that do not depend on the work-item.
    pub uniform: &'static [&'static str],
    /// Variables that live across regions but are recomputed in each region that uses them
    /// (cheap functions of the work-item's ids), instead of being kept per work-item.
    pub recomputed: &'static [&'static str],
    /// Counters of the loops inside regions that run breadth-first: each iteration for every
    /// work-item of the group before the next (the loop over work-items inside the loop,
    /// where its accesses walk memory with smaller strides), rather than each work-item
    /// running the whole loop in turn.
    pub breadth_first: &'static [&'static str],
    /// Counters of the loops inside regions that run in strips of work-items: each strip of
    /// up to 16 consecutive work-items of dimension 0 runs each iteration for every
    /// work-item of the strip before the next (a work-item per vector lane), the variables
    /// the loop updates held in arrays of one element per work-item of the strip; chosen
    /// over breadth-first where the loop updates such variables.
    pub strips: &'static [&'static str],
    /// The loops inside regions whose order the strides of their accesses decided (the
    /// seed paper's classes), and the order each runs in.
    pub loops: &'static [LoopInfo],
    /// Bytes of the local arrays the kernel declares (`local_array`), not counting local
    /// arguments.
    pub local_bytes: usize,
}

/// A loop inside a region whose order (each work-item running it to the end, or each
/// iteration for every work-item) the strides of its array accesses decided: each access
/// votes for the order whose innermost loop walks it with the smaller stride, a tie staying
/// depth-first, and each variable the loop updates votes twice for depth-first.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LoopInfo {
    /// Its counter, as written.
    pub counter: &'static str,
    /// Each access to a buffer or local array in it, as written, with its stride along the
    /// work-items of dimension 0 (`W0` the same element for every work-item, `W1`
    /// consecutive elements, `WX` any other) and along the loop (`L0`, `L1`, `LX`).
    pub accesses: &'static [(&'static str, &'static str, &'static str)],
    /// `"breadth-first"`, `"strips"` (breadth-first over strips of 16 work-items) or
    /// `"depth-first"`.
    pub order: &'static str,
}

/// A variable kept per work-item.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Expanded {
    /// Its name in the kernel.
    pub name: &'static str,
    /// Its size: the bytes it takes per work-item.
    pub bytes: usize,
}

impl fmt::Display for KernelInfo {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "kernel '{}': {} region(s)", self.name, self.regions)?;
        if self.expanded.is_empty() {
            write!(f, "; no variable kept per work-item")?;
        } else {
            write!(f, "; kept per work-item ({} bytes):", self.bytes_per_item)?;
            for e in self.expanded {
                write!(f, " {} ({} bytes)", e.name, e.bytes)?;
            }
        }
        if !self.recomputed.is_empty() {
            write!(
                f,
                "; recomputed in each region: {}",
                self.recomputed.join(", ")
            )?;
        }
        if !self.uniform.is_empty() {
            write!(f, "; once per group: {}", self.uniform.join(", "))?;
        }
        if !self.breadth_first.is_empty() {
            write!(
                f,
                "; breadth-first loops: {}",
                self.breadth_first.join(", ")
            )?;
        }
        if !self.strips.is_empty() {
            write!(f, "; loops in strips: {}", self.strips.join(", "))?;
        }
        for l in self.loops {
            write!(f, "; loop {} ({}):", l.counter, l.order)?;
            for (access, w, lc) in l.accesses {
                write!(f, " {access} {w} {lc}")?;
            }
        }
        if self.local_bytes > 0 {
            write!(f, "; local arrays: {} bytes", self.local_bytes)?;
        }
        Ok(())
    }
}

/// The arena a compiled kernel needs besides its local arguments: its local arrays (bytes
/// each) and its expanded variables (bytes per work-item each), each array starting on a
/// cache line.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Scratch {
    pub(crate) fixed: &'static [usize],
    pub(crate) per_item: &'static [usize],
}

/// `bytes` rounded up to the arena's alignment.
pub(crate) fn round_line(bytes: usize) -> Option<usize> {
    bytes.checked_next_multiple_of(crate::launch::LOCAL_ALIGN)
}

impl Scratch {
    /// Bytes of the local arrays.
    pub(crate) fn fixed_bytes(&self) -> Option<usize> {
        self.fixed
            .iter()
            .try_fold(0usize, |acc, &b| acc.checked_add(round_line(b)?))
    }

    /// Bytes of the expanded variables' slots for groups of `items` work-items.
    pub(crate) fn slot_bytes(&self, items: usize) -> Option<usize> {
        self.per_item.iter().try_fold(0usize, |acc, &b| {
            acc.checked_add(round_line(b.checked_mul(items)?)?)
        })
    }
}

/// Hands out the arrays of a group's arena past its local arguments, in the order the
/// generated code asks for them (the order of [`Scratch`]'s lists).
#[doc(hidden)]
pub struct Carver<'a> {
    pub(crate) next: *mut u8,
    pub(crate) left: usize,
    pub(crate) _arena: PhantomData<&'a [Cell<u8>]>,
}

impl<'a> Carver<'a> {
    /// The next `len` elements of the arena, zeroed when the group started.
    #[inline]
    pub fn array<T: Element>(&mut self, len: usize) -> LocalArray<'a, T> {
        let bytes = std::mem::size_of::<T>()
            .checked_mul(len)
            .and_then(round_line)
            .filter(|&b| b <= self.left)
            .unwrap_or_else(|| {
                panic!(
                    "a kernel's arena has {} bytes left, {len} elements asked",
                    self.left
                )
            });
        assert!(std::mem::align_of::<T>() <= crate::launch::LOCAL_ALIGN);
        // SAFETY: `next` is aligned to a cache line (every array is rounded to one), at least
        // `T`'s alignment (checked); the `bytes` bytes from it are in the arena, which this
        // group owns while it runs and which was zeroed when it started (zero is a valid `T`:
        // `Element: Zeroable`); each array is handed out once (`next` moves past it). `Cell<T>`
        // has `T`'s layout.
        let cells = unsafe { std::slice::from_raw_parts(self.next.cast::<Cell<T>>(), len) };
        // SAFETY: within the arena, as just checked.
        self.next = unsafe { self.next.add(bytes) };
        self.left -= bytes;
        LocalArray { cells }
    }
}

/// An array in a group's local memory (or the slots of an expanded variable): read and
/// written by index by the group's work-items, which run on one thread.
#[doc(hidden)]
#[derive(Clone, Copy)]
pub struct LocalArray<'a, T> {
    cells: &'a [Cell<T>],
}

impl<'a, T: Copy> LocalArray<'a, T> {
    /// Element `i`; panics past the end.
    #[inline(always)]
    pub fn get(&self, i: usize) -> T {
        match self.cells.get(i) {
            Some(c) => c.get(),
            None => out_of_bounds("local memory", i, self.cells.len()),
        }
    }

    /// Sets element `i`; panics past the end.
    #[inline(always)]
    pub fn set(&self, i: usize, v: T) {
        match self.cells.get(i) {
            Some(c) => c.set(v),
            None => out_of_bounds("local memory", i, self.cells.len()),
        }
    }

    /// Element `i`, unchecked.
    ///
    /// # Safety
    /// `i < self.len()`.
    #[inline(always)]
    pub unsafe fn get_unchecked(&self, i: usize) -> T {
        // SAFETY: the caller's contract.
        unsafe { self.cells.get_unchecked(i) }.get()
    }

    /// Sets element `i`, unchecked.
    ///
    /// # Safety
    /// `i < self.len()`.
    #[inline(always)]
    pub unsafe fn set_unchecked(&self, i: usize, v: T) {
        // SAFETY: the caller's contract.
        unsafe { self.cells.get_unchecked(i) }.set(v)
    }

    /// Its length.
    #[inline(always)]
    pub fn len(&self) -> usize {
        self.cells.len()
    }

    /// Whether it is empty.
    #[inline(always)]
    pub fn is_empty(&self) -> bool {
        self.cells.is_empty()
    }

    pub(crate) fn from_cells(cells: &'a [Cell<T>]) -> Self {
        LocalArray { cells }
    }
}

#[cold]
#[inline(never)]
#[track_caller]
fn out_of_bounds(what: &str, i: usize, len: usize) -> ! {
    panic!("{what}: index {i} out of bounds for length {len}")
}

/// A written buffer each work-item of which touches only its own element (the macro proved
/// every index to be the work-item's global linear id, or its global id in a launch of one
/// dimension): plain loads and stores.
#[doc(hidden)]
pub struct OwnedMut<'a, T> {
    pub(crate) ptr: *mut T,
    pub(crate) len: usize,
    pub(crate) _borrow: PhantomData<&'a [Cell<T>]>,
}

// SAFETY: work-items on different threads (the reference executor's, or groups of one launch)
// touch different elements through it: the constructor's contract.
unsafe impl<T: Send> Sync for OwnedMut<'_, T> {}

impl<T: Copy> OwnedMut<'_, T> {
    /// Element `i`: the calling work-item's own.
    #[inline(always)]
    pub fn get(&self, i: usize) -> T {
        if i >= self.len {
            out_of_bounds("written buffer", i, self.len)
        }
        // SAFETY: in bounds (checked); only this work-item touches element `i` while the
        // launch runs (the constructor's contract), and no other command does (dependences).
        unsafe { self.ptr.add(i).read() }
    }

    /// Sets element `i`: the calling work-item's own.
    #[inline(always)]
    pub fn set(&self, i: usize, v: T) {
        if i >= self.len {
            out_of_bounds("written buffer", i, self.len)
        }
        // SAFETY: as in `get`.
        unsafe { self.ptr.add(i).write(v) }
    }

    /// Element `i`, unchecked.
    ///
    /// # Safety
    /// `i < self.len()`, and `i` is the calling work-item's own element.
    #[inline(always)]
    pub unsafe fn get_unchecked(&self, i: usize) -> T {
        // SAFETY: the caller's contract, and the constructor's.
        unsafe { self.ptr.add(i).read() }
    }

    /// Sets element `i`, unchecked.
    ///
    /// # Safety
    /// As [`OwnedMut::get_unchecked`].
    #[inline(always)]
    pub unsafe fn set_unchecked(&self, i: usize, v: T) {
        // SAFETY: the caller's contract, and the constructor's.
        unsafe { self.ptr.add(i).write(v) }
    }

    /// The buffer's length.
    #[inline(always)]
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether the buffer is empty.
    #[inline(always)]
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
}

/// A written buffer whose elements any work-item may read and write: each access a relaxed
/// atomic one.
#[doc(hidden)]
pub struct SharedMut<'a, T> {
    pub(crate) ptr: *mut T,
    pub(crate) len: usize,
    pub(crate) _borrow: PhantomData<&'a [Cell<T>]>,
}

// SAFETY: every access is atomic (`Scatter`), so threads may share it.
unsafe impl<T: Scatter> Sync for SharedMut<'_, T> {}

impl<T: Scatter> SharedMut<'_, T> {
    /// Element `i`.
    #[inline(always)]
    pub fn get(&self, i: usize) -> T {
        if i >= self.len {
            out_of_bounds("written buffer", i, self.len)
        }
        // SAFETY: in bounds (checked), aligned (a buffer's elements are), and every access to
        // the buffer while the launch runs is atomic (this view's).
        unsafe { T::load(self.ptr.add(i)) }
    }

    /// Sets element `i`.
    #[inline(always)]
    pub fn set(&self, i: usize, v: T) {
        if i >= self.len {
            out_of_bounds("written buffer", i, self.len)
        }
        // SAFETY: as in `get`.
        unsafe { T::store(self.ptr.add(i), v) }
    }

    /// Element `i`, unchecked.
    ///
    /// # Safety
    /// `i < self.len()`.
    #[inline(always)]
    pub unsafe fn get_unchecked(&self, i: usize) -> T {
        // SAFETY: the caller's contract; atomic as in `get`.
        unsafe { T::load(self.ptr.add(i)) }
    }

    /// Sets element `i`, unchecked.
    ///
    /// # Safety
    /// `i < self.len()`.
    #[inline(always)]
    pub unsafe fn set_unchecked(&self, i: usize, v: T) {
        // SAFETY: the caller's contract; atomic as in `get`.
        unsafe { T::store(self.ptr.add(i), v) }
    }

    /// The buffer's length.
    #[inline(always)]
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether the buffer is empty.
    #[inline(always)]
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
}

/// An element type a kernel may write at any index: one that loads and stores atomically
/// (numbers of 1 to 8 bytes). A buffer of other elements (arrays, structures) is written by
/// a kernel only at each work-item's own element.
#[diagnostic::on_unimplemented(
    message = "a kernel writes `{Self}` elements at indices other than the work-item's own",
    note = "scattered writes are atomic, which only numbers of 1 to 8 bytes are; index a buffer of `{Self}` by global_linear_id() (or global_id(0) in one dimension)"
)]
pub trait Scatter: Element {
    /// Loads `*p` (relaxed).
    ///
    /// # Safety
    /// `p` is valid, aligned, and every concurrent access to it is atomic.
    unsafe fn load(p: *mut Self) -> Self;
    /// Stores `v` to `*p` (relaxed).
    ///
    /// # Safety
    /// As [`Scatter::load`].
    unsafe fn store(p: *mut Self, v: Self);
}

macro_rules! scatter_int {
    ($($t:ty => $a:ty),*) => { $(
        impl Scatter for $t {
            #[inline(always)]
            unsafe fn load(p: *mut Self) -> Self {
                // SAFETY: the caller's contract; the atomic type has this type's layout.
                unsafe { <$a>::from_ptr(p) }.load(Ordering::Relaxed)
            }
            #[inline(always)]
            unsafe fn store(p: *mut Self, v: Self) {
                // SAFETY: as in `load`.
                unsafe { <$a>::from_ptr(p) }.store(v, Ordering::Relaxed)
            }
        }
    )* };
}
scatter_int!(u8 => AtomicU8, i8 => AtomicI8, u16 => AtomicU16, i16 => AtomicI16,
    u32 => AtomicU32, i32 => AtomicI32, u64 => AtomicU64, i64 => AtomicI64,
    usize => AtomicUsize, isize => AtomicIsize);

macro_rules! scatter_float {
    ($($t:ty => $a:ty, $bits:ty),*) => { $(
        impl Scatter for $t {
            #[inline(always)]
            unsafe fn load(p: *mut Self) -> Self {
                // SAFETY: the caller's contract; the float and its bits have one layout.
                <$t>::from_bits(unsafe { <$a>::from_ptr(p.cast::<$bits>()) }.load(Ordering::Relaxed))
            }
            #[inline(always)]
            unsafe fn store(p: *mut Self, v: Self) {
                // SAFETY: as in `load`.
                unsafe { <$a>::from_ptr(p.cast::<$bits>()) }.store(v.to_bits(), Ordering::Relaxed)
            }
        }
    )* };
}
scatter_float!(f32 => AtomicU32, u32, f64 => AtomicU64, u64);

/// An array of zeros of `T`, one element per work-item of a strip: where a loop run in strips
/// keeps the work-items' variables between its parts.
#[doc(hidden)]
#[inline(always)]
pub fn lanes<T: Element, const N: usize>() -> [T; N] {
    // SAFETY: all-zero bytes are a valid `T` (`Element: Zeroable`), hence a valid array of them.
    unsafe { std::mem::zeroed() }
}

/// `ids[d]`, or `past` for `d` past three dimensions (OpenCL's ids and sizes there).
#[doc(hidden)]
#[inline(always)]
pub fn pick3(ids: [usize; 3], d: usize, past: usize) -> usize {
    ids.get(d).copied().unwrap_or(past)
}

/// Bounds of indices, as the macro's range analysis computes them before a region's
/// work-item loops: `None` where an operation overflows (the region then runs with every
/// index checked).
#[doc(hidden)]
pub mod bound {
    #[inline(always)]
    pub fn add(a: Option<usize>, b: Option<usize>) -> Option<usize> {
        a?.checked_add(b?)
    }
    #[inline(always)]
    pub fn mul(a: Option<usize>, b: Option<usize>) -> Option<usize> {
        a?.checked_mul(b?)
    }
    /// The largest of `a - b` for `a` at most `a_max` and `b` at least `b_min`, if `a - b`
    /// cannot go below zero (`a_min >= b_max`).
    #[inline(always)]
    pub fn sub(
        a_max: Option<usize>,
        a_min: Option<usize>,
        b_max: Option<usize>,
        b_min: Option<usize>,
    ) -> Option<usize> {
        if a_min? < b_max? {
            return None;
        }
        a_max?.checked_sub(b_min?)
    }
    /// The largest of `a / b` for `b` a divisor at least `b_min > 0`.
    #[inline(always)]
    pub fn div(a: Option<usize>, b_min: Option<usize>) -> Option<usize> {
        a?.checked_div(b_min?)
    }
    /// The largest of `a % b` for `b` at most `b_max`.
    #[inline(always)]
    pub fn rem(b_max: Option<usize>) -> Option<usize> {
        b_max?.checked_sub(1)
    }
    #[inline(always)]
    pub fn min(a: Option<usize>, b: Option<usize>) -> Option<usize> {
        match (a, b) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, None) => a,
            (None, b) => b,
        }
    }
    /// Whether every index up to `max` is below `len`.
    #[inline(always)]
    pub fn below(max: Option<usize>, len: usize) -> bool {
        max.is_some_and(|m| m < len)
    }

    /// A value whose type the macro does not know: `(&Probe(&v)).index()` is `Some(v)` for a
    /// `usize`, `None` for anything else (the first impl is found without autoref, the
    /// second needs one).
    pub struct Probe<'a, T>(pub &'a T);

    pub trait IsIndex {
        fn index(&self) -> Option<usize>;
    }

    impl IsIndex for Probe<'_, usize> {
        #[inline(always)]
        fn index(&self) -> Option<usize> {
            Some(*self.0)
        }
    }

    pub trait NotIndex {
        #[inline(always)]
        fn index(&self) -> Option<usize> {
            None
        }
    }

    impl<T> NotIndex for &Probe<'_, T> {}
}
