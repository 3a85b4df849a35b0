//! Placed memory for standard collections and as the global allocator.
//!
//! [`NumaAlloc`] is an allocator (the `Allocator` trait of `allocator-api2`, the stable form of
//! the standard library's): `allocator_api2::vec::Vec::new_in(NumaAlloc::coarse())` is a
//! vector whose buffer lies on one node, taking the nodes in turn. [`NumaGlobal`] is a
//! `#[global_allocator]` that places allocations of at least a threshold by
//! `OMP_DATA_DISTRIBUTION` and leaves smaller ones to the system allocator, so that a
//! program's big arrays follow the policy without changing their types.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::ptr::NonNull;

use crate::allocator::{omp_free, omp_malloc, omp_malloc_on_node, omp_malloc_specific};
use crate::distribution::Distribution;
use crate::numa_vec::Place;
use crate::page_size;

/// An allocator of memory placed as a [`Place`] says, for collections that take one
/// (`allocator_api2::vec::Vec::new_in`, `allocator_api2::boxed::Box::new_in`, hashbrown's
/// maps). Every allocation is a mapping of whole pages (freed ones are reused): meant for
/// buffers of at least a few pages. Alignments up to a page; zero-sized allocations take no
/// memory.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NumaAlloc {
    place: Place,
}

impl NumaAlloc {
    /// Allocates as `place` says.
    pub fn new(place: impl Into<Place>) -> Self {
        NumaAlloc {
            place: place.into(),
        }
    }

    /// First touch.
    pub fn standard() -> Self {
        Self::new(Distribution::Standard)
    }

    /// Pages interleaved over the nodes.
    pub fn fine() -> Self {
        Self::new(Distribution::Fine)
    }

    /// Each allocation wholly on one node, the nodes in turn.
    pub fn coarse() -> Self {
        Self::new(Distribution::Coarse)
    }

    /// Each allocation wholly on node `node`.
    pub fn on_node(node: usize) -> Self {
        Self::new(Place::OnNode(node))
    }

    /// As `OMP_DATA_DISTRIBUTION` says (an error for an invalid value).
    pub fn from_env() -> Result<Self, crate::AllocError> {
        Ok(Self::new(Distribution::from_env()?))
    }

    /// Where its allocations go.
    pub fn place(&self) -> Place {
        self.place
    }
}

// SAFETY: a returned block is a fresh (or reused, then zeroed) mapping of at least the size
// asked, page-aligned (so aligned as asked, alignments over a page being refused), valid
// until deallocated; `deallocate` frees exactly the blocks `allocate` returned; a copy of the
// allocator (they are all equal by place) frees blocks of any other, as `omp_free` takes any
// pointer of this allocator.
unsafe impl allocator_api2::alloc::Allocator for NumaAlloc {
    fn allocate(&self, layout: Layout) -> Result<NonNull<[u8]>, allocator_api2::alloc::AllocError> {
        if layout.align() > page_size() {
            return Err(allocator_api2::alloc::AllocError);
        }
        if layout.size() == 0 {
            // A dangling pointer of the alignment: nothing is allocated.
            let p =
                NonNull::new(layout.align() as *mut u8).ok_or(allocator_api2::alloc::AllocError)?;
            return Ok(NonNull::slice_from_raw_parts(p, 0));
        }
        let p = match self.place {
            Place::Distributed(d) => omp_malloc_specific(layout.size(), d),
            Place::OnNode(node) => omp_malloc_on_node(layout.size(), node),
        }
        .map_err(|_| allocator_api2::alloc::AllocError)?;
        Ok(NonNull::slice_from_raw_parts(p, layout.size()))
    }

    fn allocate_zeroed(
        &self,
        layout: Layout,
    ) -> Result<NonNull<[u8]>, allocator_api2::alloc::AllocError> {
        // The allocator's memory is zeroed already.
        self.allocate(layout)
    }

    unsafe fn deallocate(&self, ptr: NonNull<u8>, layout: Layout) {
        if layout.size() == 0 {
            return;
        }
        // SAFETY: the caller's contract: `ptr` came from `allocate` and is not used any more.
        let freed = unsafe { omp_free(ptr.as_ptr()) };
        debug_assert!(freed.is_ok(), "NumaAlloc freed a block it did not allocate");
    }
}

thread_local! {
    /// Whether this thread is inside the placed allocator already: an allocation it makes
    /// for itself (its registry, its topology) goes to the system allocator.
    static INSIDE: Cell<bool> = const { Cell::new(false) };
}

/// A global allocator: allocations of at least `threshold` bytes are placed by
/// `OMP_DATA_DISTRIBUTION` (mappings of whole pages, freed ones reused); smaller ones, those
/// aligned beyond a page, and any the policy cannot serve, go to the system allocator.
///
/// ```no_run
/// use numatask_alloc::NumaGlobal;
///
/// #[global_allocator]
/// static ALLOC: NumaGlobal = NumaGlobal::new(1 << 20);
///
/// // With OMP_DATA_DISTRIBUTION=coarse, this buffer lies wholly on one node.
/// let big = vec![0.0f64; 1 << 22];
/// # drop(big);
/// ```
#[derive(Debug)]
pub struct NumaGlobal {
    threshold: usize,
}

impl NumaGlobal {
    /// Places allocations of at least `threshold` bytes (one page at least).
    pub const fn new(threshold: usize) -> Self {
        NumaGlobal { threshold }
    }

    fn placed(&self, layout: Layout) -> bool {
        layout.size() >= self.threshold.max(page_size()) && layout.align() <= 4096
    }

    /// A placed allocation, or `None` (the system allocator serves it): inside the allocator
    /// already, or refused.
    fn place(&self, layout: Layout) -> Option<*mut u8> {
        if !self.placed(layout) {
            return None;
        }
        INSIDE
            .try_with(|inside| {
                if inside.replace(true) {
                    return None;
                }
                let p = omp_malloc(layout.size()).ok().map(NonNull::as_ptr);
                inside.set(false);
                p
            })
            .ok()
            .flatten()
    }
}

// SAFETY: a placed block is a page-aligned zeroed mapping of at least the size asked (the
// alignment checked at most 4096, a page at least), freed by `omp_free`; any other block is
// the system allocator's, freed by it: `dealloc` tells them apart by asking the allocator's
// registry (`omp_free` refuses, freeing nothing, a pointer it did not return).
unsafe impl GlobalAlloc for NumaGlobal {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        match self.place(layout) {
            Some(p) => p,
            // SAFETY: the caller's contract (a non-zero size).
            None => unsafe { System.alloc(layout) },
        }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        match self.place(layout) {
            Some(p) => p,
            // SAFETY: the caller's contract.
            None => unsafe { System.alloc_zeroed(layout) },
        }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        if self.placed(layout) {
            let inside = INSIDE.try_with(|i| i.replace(true)).unwrap_or(true);
            // SAFETY: the caller's contract: `ptr` came from `alloc` and is not used any more.
            let freed = !inside && unsafe { omp_free(ptr) }.is_ok();
            if !inside {
                let _ = INSIDE.try_with(|i| i.set(false));
            }
            if freed {
                return;
            }
        }
        // SAFETY: the caller's contract; not a placed block, so the system allocator's.
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use allocator_api2::alloc::Allocator;

    #[test]
    fn a_vector_in_numa_memory_is_registered_and_freed() {
        let mut v = allocator_api2::vec::Vec::with_capacity_in(1 << 14, NumaAlloc::fine());
        v.extend((0..1u64 << 14).map(|i| i * 3));
        let p = v.as_ptr().cast::<u8>();
        assert_eq!(crate::allocation_size(p), Some(8 << 14));
        assert_eq!(crate::distribution_of(p), Some(Distribution::Fine));
        assert_eq!(v[100], 300);
        drop(v);
        assert_eq!(crate::allocation_size(p), None);
    }

    #[test]
    fn zero_sizes_take_nothing_and_alignments_beyond_a_page_are_refused() {
        let a = NumaAlloc::coarse();
        let z = a.allocate(Layout::from_size_align(0, 64).unwrap()).unwrap();
        assert_eq!(z.len(), 0);
        assert_eq!(z.cast::<u8>().as_ptr() as usize % 64, 0);
        // SAFETY: allocated above with this layout.
        unsafe { a.deallocate(z.cast(), Layout::from_size_align(0, 64).unwrap()) };
        let big_align = Layout::from_size_align(4 * page_size(), 4 * page_size()).unwrap();
        assert!(a.allocate(big_align).is_err());
    }
}
