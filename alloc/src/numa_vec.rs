//! [`NumaVec`]: an owned, fixed-length, NUMA-distributed array, the safe face of the allocator.

use std::fmt;
use std::marker::PhantomData;
use std::mem::{align_of, size_of};
use std::ops::{Deref, DerefMut};
use std::ptr::NonNull;

use crate::allocator::{omp_free, omp_malloc_on_node, omp_malloc_specific};
use crate::distribution::Distribution;
use crate::error::AllocError;
use crate::page_size;
use crate::registry::{NodeBytes, node_bytes};

/// Types for which all-zero bytes are a valid value, so [`NumaVec::zeroed`] can hand out the
/// kernel's zero pages without writing (and so without first-touching) them.
///
/// # Safety
///
/// The all-zero bit pattern must be a valid value of the type.
pub unsafe trait Zeroable {}

macro_rules! zeroable {
    ($($t:ty),*) => { $(
        // SAFETY: zero is a valid value of every primitive number type and of bool.
        unsafe impl Zeroable for $t {}
    )* };
}
zeroable!(
    u8, u16, u32, u64, u128, usize, i8, i16, i32, i64, i128, isize, f32, f64, bool
);
macro_rules! zeroable_atomic {
    ($($t:ident),*) => { $(
        // SAFETY: an atomic integer (or bool) has the layout of its plain type, for which zero
        // is a valid value.
        unsafe impl Zeroable for std::sync::atomic::$t {}
    )* };
}
zeroable_atomic!(
    AtomicU8,
    AtomicU16,
    AtomicU32,
    AtomicU64,
    AtomicUsize,
    AtomicI8,
    AtomicI16,
    AtomicI32,
    AtomicI64,
    AtomicIsize,
    AtomicBool
);
// SAFETY: an array of zeroable elements is zeroable.
unsafe impl<T: Zeroable, const N: usize> Zeroable for [T; N] {}

/// A fixed-length array whose pages are placed by a [`Distribution`] (or on one node).
///
/// It dereferences to a slice, frees its mapping when dropped, and is `Send`/`Sync` exactly when
/// `T` is. Length 0 (and zero-sized `T`) allocates nothing.
///
/// ```
/// use numatask_alloc::{Distribution, NumaVec};
/// let mut v = NumaVec::<f64>::zeroed(1 << 16, Distribution::Fine)?;
/// v[7] = 1.5;
/// assert_eq!(v.iter().sum::<f64>(), 1.5);
/// // Bytes per node of the first 64 KiB, as the scheduler sees them.
/// let d = v.node_bytes_of(0..8192);
/// assert_eq!(d.known() + d.unknown(), 65536);
/// # Ok::<(), numatask_alloc::AllocError>(())
/// ```
pub struct NumaVec<T> {
    ptr: NonNull<T>,
    len: usize,
    distribution: Distribution,
    /// Where it was asked to go (a clone goes there too).
    place: Place,
    owns_mapping: bool,
    _owns: PhantomData<T>,
}

// SAFETY: NumaVec owns its elements like Box<[T]>; moving it to another thread moves the Ts.
unsafe impl<T: Send> Send for NumaVec<T> {}
// SAFETY: &NumaVec only gives out &T (through Deref), so sharing it is sharing &[T].
unsafe impl<T: Sync> Sync for NumaVec<T> {}

/// Where a new NumaVec's pages go.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Place {
    /// By a distribution policy.
    Distributed(Distribution),
    /// Wholly on one node (topology index).
    OnNode(usize),
}

impl From<Distribution> for Place {
    fn from(d: Distribution) -> Self {
        Place::Distributed(d)
    }
}

impl<T> NumaVec<T> {
    /// Maps room for `len` elements, uninitialized but zero-filled by the kernel.
    fn map(len: usize, place: Place) -> Result<Self, AllocError> {
        let distribution = match place {
            Place::Distributed(d) => d,
            Place::OnNode(node) => {
                // Checked even for an empty vector: asking for a node that does not exist is
                // an error whatever the length.
                crate::topology::Topology::current()?.node(node)?;
                Distribution::Coarse
            }
        };
        // More bytes than a usize holds is more than the machine has: said as the allocator
        // says it for any other size too large.
        let bytes = len
            .checked_mul(size_of::<T>())
            .ok_or_else(|| AllocError::TooLarge {
                requested: len as u128 * size_of::<T>() as u128,
                available: crate::allocator::physical_memory(),
                what: "the machine".into(),
            })?;
        if bytes == 0 {
            return Ok(Self {
                ptr: NonNull::dangling(),
                len,
                distribution,
                place,
                owns_mapping: false,
                _owns: PhantomData,
            });
        }
        if align_of::<T>() > page_size() {
            return Err(AllocError::Alignment {
                align: align_of::<T>(),
                page: page_size(),
            });
        }
        let raw = match place {
            Place::Distributed(d) => omp_malloc_specific(bytes, d)?,
            Place::OnNode(node) => omp_malloc_on_node(bytes, node)?,
        };
        Ok(Self {
            ptr: raw.cast(),
            len,
            distribution,
            place,
            owns_mapping: true,
            _owns: PhantomData,
        })
    }

    /// `len` zeroes. Pages are not touched, so with [`Distribution::Standard`] each page still
    /// goes to the node of the thread that first writes it.
    pub fn zeroed(len: usize, place: impl Into<Place>) -> Result<Self, AllocError>
    where
        T: Zeroable,
    {
        Self::map(len, place.into())
    }

    /// `len` clones of `value`, written by the calling thread: with
    /// [`Distribution::Standard`] every page goes to that thread's node. To spread the first
    /// touch, take [`zeroed`](Self::zeroed) memory and write it from a parallel loop (the
    /// scheduler's `Scope::taskloop_mut`).
    pub fn filled(len: usize, value: T, place: impl Into<Place>) -> Result<Self, AllocError>
    where
        T: Clone,
    {
        Self::from_fn(len, place, |_| value.clone())
    }

    /// Element `i` is `f(i)`, written by the calling thread in index order (the first touch
    /// of every page, as for [`filled`](Self::filled)). The closure comes last, after the
    /// place, as closures do in this crate's constructors.
    pub fn from_fn(
        len: usize,
        place: impl Into<Place>,
        f: impl FnMut(usize) -> T,
    ) -> Result<Self, AllocError> {
        Self::from_iter_in((0..len).map(f), place)
    }

    /// The items of an exact-size iterator, written by the calling thread. Should the iterator
    /// yield fewer items than it announced, the array holds the items it did yield; should it
    /// break its `len` the other way, the items past the announced length are not taken (the
    /// iterator is dropped with them unread).
    pub fn from_iter_in<I>(items: I, place: impl Into<Place>) -> Result<Self, AllocError>
    where
        I: IntoIterator,
        I::IntoIter: ExactSizeIterator<Item = T>,
    {
        let items = items.into_iter();
        let mut v = Self::map(items.len(), place.into())?;
        // `len` counts initialized elements, so a panicking iterator drops exactly those.
        let capacity = std::mem::replace(&mut v.len, 0);
        for (i, item) in items.take(capacity).enumerate() {
            // SAFETY: i < capacity, the mapping has room for `capacity` elements, and slot i is
            // not initialized yet (nothing is overwritten or leaked).
            unsafe { v.ptr.as_ptr().add(i).write(item) };
            v.len = i + 1;
        }
        Ok(v)
    }

    /// The policy the memory was allocated with.
    pub fn distribution(&self) -> Distribution {
        self.distribution
    }

    /// Where the memory was asked to go: a policy, or one node.
    pub fn place(&self) -> Place {
        self.place
    }

    /// Bytes per node of the whole array.
    pub fn node_bytes(&self) -> NodeBytes {
        node_bytes(self.ptr.as_ptr().cast(), self.len * size_of::<T>())
    }

    /// Bytes per node of the elements in `range`.
    ///
    /// # Panics
    ///
    /// If `range` is not within `0..len()` or starts after it ends, as indexing the slice
    /// with it does: a range outside the vector is a bug in the caller.
    #[track_caller]
    pub fn node_bytes_of(&self, range: std::ops::Range<usize>) -> NodeBytes {
        assert!(
            range.start <= range.end && range.end <= self.len,
            "NumaVec::node_bytes_of: range {range:?} is not within 0..{} (the vector's length)",
            self.len
        );
        let slice = &self[range];
        node_bytes(slice.as_ptr().cast(), std::mem::size_of_val(slice))
    }
}

/// At most `left` items of `items`, announced as exactly that many ([`NumaVec::from_iter_in`]
/// keeps fewer if fewer come).
struct Announced<I> {
    items: I,
    left: usize,
}

impl<I: Iterator> Iterator for Announced<I> {
    type Item = I::Item;

    fn next(&mut self) -> Option<I::Item> {
        self.left = self.left.checked_sub(1)?;
        self.items.next()
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        (self.left, Some(self.left))
    }
}

impl<I: Iterator> ExactSizeIterator for Announced<I> {}

impl<T> NumaVec<T> {
    /// Moves the elements out into a `Vec`, leaving this array empty.
    fn take_all(&mut self) -> Vec<T> {
        let len = std::mem::replace(&mut self.len, 0);
        let mut out = Vec::with_capacity(len);
        // SAFETY: the first `len` slots are initialised and, with `len` now 0, no longer
        // owned by `self` (its drop will not touch them); `out` has room for `len` elements,
        // and the two allocations do not overlap.
        unsafe {
            std::ptr::copy_nonoverlapping(self.ptr.as_ptr(), out.as_mut_ptr(), len);
            out.set_len(len);
        }
        out
    }
}

/// The value, or a panic with the error's message reported at the caller's line: the
/// conveniences that panic where `Vec` would (collecting, cloning) are `#[track_caller]`, and a
/// closure (`unwrap_or_else(|e| panic!(..))`) would report its own line in this file instead.
#[track_caller]
fn or_panic<T>(result: Result<T, AllocError>) -> T {
    match result {
        Ok(value) => value,
        Err(e) => panic!("{e}"),
    }
}

impl<T> FromIterator<T> for NumaVec<T> {
    /// Collects with the process-wide distribution (`OMP_DATA_DISTRIBUTION`).
    ///
    /// # Panics
    ///
    /// If the allocation fails or the variable is invalid, with the error's message, as
    /// `Vec` does when it cannot allocate; [`NumaVec::from_iter_in`] returns the error instead.
    /// The panic names the line that called `NumaVec::from_iter`; through `Iterator::collect`
    /// it names a line of the standard library's, whose `collect` does not pass its caller's
    /// location on.
    ///
    /// An iterator that knows its exact length (its `size_hint` bounds are equal: ranges, maps
    /// of them, slices' iterators) is written straight into the array; any other goes through
    /// a `Vec` first, which costs a copy and twice the memory for a moment (as does one whose
    /// exact hint was short of the truth, which costs a second mapping too).
    #[track_caller]
    fn from_iter<I: IntoIterator<Item = T>>(items: I) -> Self {
        let place = or_panic(Distribution::from_env());
        let mut items = items.into_iter();
        let exact = match items.size_hint() {
            (lo, Some(hi)) if lo == hi => Some(lo),
            _ => None,
        };
        let Some(len) = exact else {
            let items: Vec<T> = items.collect();
            return or_panic(Self::from_iter_in(items, place));
        };
        let announced = Announced {
            items: items.by_ref(),
            left: len,
        };
        let mut v = or_panic(Self::from_iter_in(announced, place));
        // Fewer items than announced: the iterator ended (asked no further, as `collect`
        // would not). As many: it may hold more than it said.
        if v.len() < len {
            return v;
        }
        match items.next() {
            None => v,
            // The iterator yielded more than it announced: start over with everything (one
            // more mapping, and for coarse memory one more turn of the round robin).
            Some(extra) => {
                let mut all = v.take_all();
                drop(v);
                all.push(extra);
                all.extend(items);
                or_panic(Self::from_iter_in(all, place))
            }
        }
    }
}

impl<T> Deref for NumaVec<T> {
    type Target = [T];
    fn deref(&self) -> &[T] {
        // SAFETY: `ptr` is valid for `len` initialized elements (or dangling with len 0 / ZST).
        unsafe { std::slice::from_raw_parts(self.ptr.as_ptr(), self.len) }
    }
}

impl<T> DerefMut for NumaVec<T> {
    fn deref_mut(&mut self) -> &mut [T] {
        // SAFETY: as in `deref`, and `&mut self` makes the access unique.
        unsafe { std::slice::from_raw_parts_mut(self.ptr.as_ptr(), self.len) }
    }
}

impl<T> Drop for NumaVec<T> {
    fn drop(&mut self) {
        /// Frees the mapping when dropped: after the elements, and also while unwinding from
        /// an element's panicking destructor (as `Vec` frees its buffer then).
        struct FreeMapping(Option<NonNull<u8>>);
        impl Drop for FreeMapping {
            fn drop(&mut self) {
                if let Some(ptr) = self.0 {
                    // SAFETY: the mapping came from omp_malloc_*; its elements are dropped
                    // (or being abandoned by an unwinding destructor) and no reference
                    // outlives the vector.
                    let freed = unsafe { omp_free(ptr.as_ptr()) };
                    debug_assert!(
                        freed.is_ok(),
                        "NumaVec mapping was not registered: {freed:?}"
                    );
                }
            }
        }
        let _free = FreeMapping(self.owns_mapping.then(|| self.ptr.cast()));
        // SAFETY: the first `len` elements are initialized and owned; dropped exactly once here.
        unsafe {
            std::ptr::drop_in_place(std::ptr::slice_from_raw_parts_mut(
                self.ptr.as_ptr(),
                self.len,
            ))
        };
    }
}

impl<'a, T> IntoIterator for &'a NumaVec<T> {
    type Item = &'a T;
    type IntoIter = std::slice::Iter<'a, T>;
    fn into_iter(self) -> Self::IntoIter {
        self.iter()
    }
}

impl<'a, T> IntoIterator for &'a mut NumaVec<T> {
    type Item = &'a mut T;
    type IntoIter = std::slice::IterMut<'a, T>;
    fn into_iter(self) -> Self::IntoIter {
        self.iter_mut()
    }
}

impl<T> AsRef<[T]> for NumaVec<T> {
    fn as_ref(&self) -> &[T] {
        self
    }
}

impl<T> AsMut<[T]> for NumaVec<T> {
    fn as_mut(&mut self) -> &mut [T] {
        self
    }
}

/// Element by element, as slices compare: where the elements live does not matter.
impl<T: PartialEq<U>, U> PartialEq<NumaVec<U>> for NumaVec<T> {
    fn eq(&self, other: &NumaVec<U>) -> bool {
        self[..] == other[..]
    }
}

impl<T: Eq> Eq for NumaVec<T> {}

impl<T: PartialEq<U>, U> PartialEq<[U]> for NumaVec<T> {
    fn eq(&self, other: &[U]) -> bool {
        self[..] == *other
    }
}

impl<T: PartialEq<U>, U> PartialEq<&[U]> for NumaVec<T> {
    fn eq(&self, other: &&[U]) -> bool {
        self[..] == **other
    }
}

impl<T: PartialEq<U>, U> PartialEq<Vec<U>> for NumaVec<T> {
    fn eq(&self, other: &Vec<U>) -> bool {
        self[..] == other[..]
    }
}

impl<T: PartialEq<U>, U, const N: usize> PartialEq<[U; N]> for NumaVec<T> {
    fn eq(&self, other: &[U; N]) -> bool {
        self[..] == other[..]
    }
}

impl<T: PartialEq<U>, U> PartialEq<NumaVec<U>> for Vec<T> {
    fn eq(&self, other: &NumaVec<U>) -> bool {
        self[..] == other[..]
    }
}

impl<T: PartialEq<U>, U> PartialEq<NumaVec<U>> for [T] {
    fn eq(&self, other: &NumaVec<U>) -> bool {
        *self == other[..]
    }
}

impl<T: PartialEq<U>, U> PartialEq<NumaVec<U>> for &[T] {
    fn eq(&self, other: &NumaVec<U>) -> bool {
        **self == other[..]
    }
}

impl<T: PartialEq<U>, U, const N: usize> PartialEq<NumaVec<U>> for [T; N] {
    fn eq(&self, other: &NumaVec<U>) -> bool {
        self[..] == other[..]
    }
}

impl<T: PartialEq<U>, U, const N: usize> PartialEq<&[U; N]> for NumaVec<T> {
    fn eq(&self, other: &&[U; N]) -> bool {
        self[..] == other[..]
    }
}

impl<T: fmt::Debug> fmt::Debug for NumaVec<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list().entries(self.iter()).finish()
    }
}

impl<T: Clone> Clone for NumaVec<T> {
    /// A copy placed as the original was asked to be: on the same node for
    /// [`Place::OnNode`], by the same policy otherwise (a coarse copy takes the next node).
    ///
    /// # Panics
    ///
    /// If the allocation fails, with the error's message, as `Vec` does when it cannot
    /// allocate.
    #[track_caller]
    fn clone(&self) -> Self {
        or_panic(Self::from_iter_in(self.iter().cloned(), self.place))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};

    #[test]
    fn elements_aligned_beyond_a_page_are_refused_with_their_alignment() {
        #[derive(Clone, Copy)]
        #[allow(dead_code)] // only its alignment matters
        #[repr(align(65536))]
        struct Huge(u8);
        let err = NumaVec::filled(3, Huge(1), Distribution::Fine)
            .err()
            .expect("refused");
        assert_eq!(
            err,
            AllocError::Alignment {
                align: 65536,
                page: page_size()
            }
        );
        assert!(err.to_string().contains("aligned to 65536 bytes"), "{err}");
    }

    #[test]
    fn a_numa_vec_iterates_and_compares_like_a_vec() {
        let mut v = NumaVec::from_iter_in(1..5u32, Distribution::Fine).unwrap();
        for x in &mut v {
            *x *= 10;
        }
        let seen: Vec<u32> = (&v).into_iter().copied().collect();
        assert_eq!(seen, [10, 20, 30, 40]);
        assert_eq!(v, vec![10, 20, 30, 40]);
        assert_eq!(v, [10, 20, 30, 40]);
        assert_eq!(v, &[10u32, 20, 30, 40][..]);
        assert_ne!(v, [10, 20, 30, 41]);
        assert_ne!(v, vec![10, 20, 30]);
        // Either side.
        assert_eq!(vec![10, 20, 30, 40], v);
        assert_eq!([10, 20, 30, 40], v);
        assert_eq!(&[10u32, 20, 30, 40][..], v);
        assert_eq!(v, &[10, 20, 30, 40]);
        // Placement does not enter the comparison.
        let w = NumaVec::from_iter_in([10u32, 20, 30, 40], Distribution::Coarse).unwrap();
        assert_eq!(v, w);
        assert_eq!(v.as_ref().iter().sum::<u32>(), 100);
    }

    #[test]
    fn constructors_give_the_values_asked_for() {
        let z = NumaVec::<u32>::zeroed(5000, Distribution::Fine).unwrap();
        assert!(z.iter().all(|&x| x == 0));
        let f = NumaVec::filled(1000, 3.5f64, Distribution::Coarse).unwrap();
        assert!(f.iter().all(|&x| x == 3.5));
        let g = NumaVec::from_fn(777, Distribution::Standard, |i| i * 2).unwrap();
        assert_eq!(g[776], 1552);
        let h = NumaVec::from_iter_in(vec!["a".to_string(), "b".to_string()], Distribution::Fine)
            .unwrap();
        assert_eq!(&*h, &["a".to_string(), "b".to_string()]);
        let c: NumaVec<i64> = (0..10).collect();
        assert_eq!(c.iter().sum::<i64>(), 45);
        assert_eq!(c.clone()[9], 9);
    }

    #[test]
    fn collect_keeps_every_item_whatever_the_iterator_announces() {
        // Exact (written straight in), inexact (through a Vec), and iterators whose size hint
        // lies both ways: every item comes out, in order, each dropped once.
        struct Lying<I> {
            items: I,
            says: usize,
        }
        impl<I: Iterator> Iterator for Lying<I> {
            type Item = I::Item;
            fn next(&mut self) -> Option<I::Item> {
                self.items.next()
            }
            fn size_hint(&self) -> (usize, Option<usize>) {
                (self.says, Some(self.says))
            }
        }
        let exact: NumaVec<String> = (0..100).map(|i| i.to_string()).collect();
        assert_eq!(exact.len(), 100);
        assert_eq!(exact[99], "99");
        let filtered: NumaVec<u32> = (0..100).filter(|i| i % 3 == 0).collect();
        assert_eq!(
            &*filtered,
            &(0..100).filter(|i| i % 3 == 0).collect::<Vec<u32>>()[..]
        );
        let drops = AtomicUsize::new(0);
        struct Counted<'a>(u32, &'a AtomicUsize);
        impl Drop for Counted<'_> {
            fn drop(&mut self) {
                self.1.fetch_add(1, Ordering::Relaxed);
            }
        }
        // An iterator that yields again after `None` is asked no further than `None`.
        struct Resumes(u32);
        impl Iterator for Resumes {
            type Item = u32;
            fn next(&mut self) -> Option<u32> {
                self.0 += 1;
                (self.0 != 3).then_some(self.0)
            }
            fn size_hint(&self) -> (usize, Option<usize>) {
                (4, Some(4))
            }
        }
        let v: NumaVec<u32> = Resumes(0).collect();
        assert_eq!(&*v, &[1, 2]);
        for (yields, says) in [(10, 4), (4, 10), (0, 3), (3, 0)] {
            drops.store(0, Ordering::Relaxed);
            let v: NumaVec<Counted<'_>> = Lying {
                items: (0..yields).map(|i| Counted(i, &drops)),
                says: says as usize,
            }
            .collect();
            let values: Vec<u32> = v.iter().map(|c| c.0).collect();
            assert_eq!(
                values,
                (0..yields).collect::<Vec<_>>(),
                "yields {yields}, says {says}"
            );
            assert_eq!(
                drops.load(Ordering::Relaxed),
                0,
                "nothing dropped while moved"
            );
            drop(v);
            assert_eq!(
                drops.load(Ordering::Relaxed),
                yields as usize,
                "each dropped once"
            );
        }
    }

    #[test]
    fn empty_and_zero_sized_allocate_nothing() {
        let e = NumaVec::<u64>::zeroed(0, Distribution::Fine).unwrap();
        assert!(e.is_empty());
        assert_eq!(crate::registry::distribution_of(e.as_ptr().cast()), None);
        let z = NumaVec::filled(1_000_000, (), Distribution::Coarse).unwrap();
        assert_eq!(z.len(), 1_000_000);
        assert_eq!(crate::registry::distribution_of(z.as_ptr().cast()), None);
    }

    #[test]
    fn drop_runs_element_destructors_and_frees_the_mapping() {
        static DROPS: AtomicUsize = AtomicUsize::new(0);
        struct D;
        impl Drop for D {
            fn drop(&mut self) {
                DROPS.fetch_add(1, Ordering::Relaxed);
            }
        }
        let v = NumaVec::from_fn(100, Distribution::Fine, |_| D).unwrap();
        let p = v.as_ptr();
        drop(v);
        assert_eq!(DROPS.load(Ordering::Relaxed), 100);
        assert_eq!(crate::allocator::allocation_size(p.cast()), None);
    }

    #[test]
    fn panic_in_from_fn_drops_what_was_built_and_frees() {
        static DROPS: AtomicUsize = AtomicUsize::new(0);
        struct D;
        impl Drop for D {
            fn drop(&mut self) {
                DROPS.fetch_add(1, Ordering::Relaxed);
            }
        }
        let r = std::panic::catch_unwind(|| {
            NumaVec::from_fn(10, Distribution::Fine, |i| {
                if i == 4 { panic!("boom") } else { D }
            })
        });
        assert!(r.is_err());
        assert_eq!(DROPS.load(Ordering::Relaxed), 4);
    }

    #[test]
    fn a_panicking_element_destructor_still_frees_the_mapping() {
        struct Bomb(u8);
        impl Drop for Bomb {
            fn drop(&mut self) {
                if self.0 == 1 {
                    panic!("element dropped");
                }
            }
        }
        let v = NumaVec::from_iter_in(
            (0..1000u32).map(|i| Bomb(u8::from(i == 500))),
            Distribution::Fine,
        )
        .expect("allocation");
        let start = v.as_ptr() as *const u8;
        assert_eq!(node_bytes(start, 1).known(), 1, "a registered mapping");
        assert!(crate::allocation_size(start).is_some());
        let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| drop(v)));
        assert!(r.is_err(), "the element's panic reaches the dropper");
        // The mapping was freed: no allocation starts there now (it may be cached for reuse).
        assert_eq!(crate::allocation_size(start), None, "the mapping was freed");
    }

    #[test]
    fn huge_length_is_an_error() {
        assert!(matches!(
            NumaVec::<u64>::zeroed(usize::MAX / 4, Distribution::Fine),
            Err(AllocError::TooLarge { .. })
        ));
        assert!(matches!(
            NumaVec::<u8>::zeroed(4096, Place::OnNode(999)),
            Err(AllocError::NoSuchNode { .. })
        ));
        assert!(matches!(
            NumaVec::<u8>::zeroed(0, Place::OnNode(999)),
            Err(AllocError::NoSuchNode { .. })
        ));
    }

    #[test]
    fn a_length_whose_byte_count_overflows_says_how_much_the_machine_has() {
        // (2^62 - 1) * 8 bytes overflow usize; the message once said "the address space has
        // 18446744073709551615 bytes", a limit that is neither the address space's (2^64
        // bytes, of which user space has far less) nor one any allocation could reach.
        let err = NumaVec::<u64>::zeroed(usize::MAX / 4, Distribution::Fine).expect_err("refused");
        assert_eq!(
            err,
            AllocError::TooLarge {
                requested: (usize::MAX / 4) as u128 * 8,
                available: crate::allocator::physical_memory(),
                what: "the machine".into(),
            }
        );
        assert!(err.to_string().contains("the machine has"), "{err}");
    }

    #[test]
    #[should_panic(expected = "NumaVec::node_bytes_of: range 5..20 is not within 0..10")]
    fn node_bytes_of_a_range_past_the_end_panics_naming_the_range_and_length() {
        let v = NumaVec::<u64>::zeroed(10, Distribution::Fine).unwrap();
        assert_eq!(
            v.node_bytes_of(5..10).known() + v.node_bytes_of(5..10).unknown(),
            40
        );
        let _ = v.node_bytes_of(5..20);
    }

    #[test]
    #[should_panic(expected = "range 7..3 is not within 0..10")]
    fn node_bytes_of_a_reversed_range_panics() {
        let v = NumaVec::<u64>::zeroed(10, Distribution::Fine).unwrap();
        #[expect(
            clippy::reversed_empty_ranges,
            reason = "the reversed range is the point"
        )]
        let _ = v.node_bytes_of(7..3);
    }

    #[test]
    fn coarse_vector_lies_on_its_one_node_in_the_registry() {
        let v = NumaVec::<u8>::zeroed(1 << 20, Place::OnNode(0)).unwrap();
        let d = v.node_bytes();
        assert_eq!(d.on(0), 1 << 20);
        assert_eq!(d.unknown(), 0);
    }
}
