//! Dependent tasks on data the runtime knows: [`Blocks`] and [`Region`] handles, which the
//! [`TaskBuilder`]'s `depend` clauses declare, and the [`View`]s and other view types a task
//! body gets. The raw form on byte ranges, for FFI and C-like code, is
//! [`TaskBuilder::depend`].
//!
//! # The safe API
//!
//! [`Blocks::new`] borrows a slice (a [`NumaVec`](numatask_alloc::NumaVec), a `Vec`, an array)
//! mutably and cuts it into blocks; `blocks[i]` is the [`Region`] of block `i`, and
//! [`Blocks::region`] any other element range. [`Blocks::shared`] does the same with a shared
//! borrow, for data the tasks only read (their inputs): its regions give shared references
//! only, and the data stays readable outside the tasks. A task declares what it does with regions,
//! and its body receives the data as references, in declaration order:
//!
//! | builder call | `depend` type | the body gets |
//! |---|---|---|
//! | [`reads`](TaskBuilder::reads) | `in` | `&[T]` |
//! | [`writes`](TaskBuilder::writes) | `out` | `&mut [T]` |
//! | [`updates`](TaskBuilder::updates) | `inout` | `&mut [T]` |
//! | [`mutex_updates`](TaskBuilder::mutex_updates) | `mutexinoutset` | `&mut [T]` |
//! | [`concurrent_updates`](TaskBuilder::concurrent_updates) | `inoutset` | `&[T]` (for atomics and other `Sync` types) |
//!
//! Each has an `_each` form ([`reads_each`](TaskBuilder::reads_each), ...) that declares a
//! list of regions of any length at once, for depend lists whose length the program computes
//! (a row of blocks): the body gets a `Vec` of the references, in the list's order.
//!
//! [`intensive`](TaskBuilder::intensive) marks the last declaration as the task's most
//! access-intensive one (the hint a locality-aware scheduler weighs); [`label`](TaskBuilder::label)
//! names the task in traces.
//!
//! ```
//! use numatask_sched::data::Blocks;
//! use numatask_sched::Runtime;
//!
//! let rt = Runtime::builder().num_threads(2).build()?;
//! let mut v = vec![1u64; 1000];
//! rt.scope(|s| {
//!     let blocks = Blocks::new(&mut v, 100)?;
//!     for i in 1..blocks.len() {
//!         // Each block adds the (already updated) sum of the block before it: a chain.
//!         s.task()
//!             .reads(&blocks[i - 1])
//!             .updates(&blocks[i])
//!             .intensive()
//!             .spawn(|_, (prev, this)| {
//!                 let carry: u64 = prev.iter().sum();
//!                 this[0] += carry;
//!             })?;
//!     }
//!     Ok::<(), numatask_sched::DependError>(())
//! })?;
//! assert_eq!(v[100], 101);
//! assert_eq!(v[200], 1 + (101 + 99)); // block 1 was updated first
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! A depend list whose length the program computes is one `_each` declaration:
//!
//! ```
//! use numatask_sched::data::Blocks;
//! # let rt = numatask_sched::Runtime::builder().num_threads(2).build()?;
//! let mut parts = vec![1u32; 64];
//! let mut total = vec![0u32; 1];
//! rt.scope(|s| {
//!     let parts = Blocks::new(&mut parts, 8)?;
//!     let total = Blocks::new(&mut total, 1)?;
//!     s.task()
//!         .reads_each(&parts) // all 8 blocks: the body gets a `Vec<&[u32]>`
//!         .writes(&total[0])
//!         .spawn(|_, (parts, total)| total[0] = parts.iter().flat_map(|p| p.iter()).sum())?;
//!     Ok::<(), numatask_sched::DependError>(())
//! })?;
//! assert_eq!(total[0], 64);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! # Why it is sound
//!
//! - **The runtime's order is the only way to the data.** `Blocks` holds the `&'a mut` borrow
//!   of the data for `'a`, which outlives the scope (`'a: 'scope` at every declaration): from
//!   the moment the blocks exist until the [`Runtime::scope`](crate::Runtime::scope) call
//!   returns, code outside the tasks cannot touch the data, and regions cannot be turned into
//!   references; only a task body receives them. `Blocks::shared` holds a shared borrow
//!   instead, which others may share too: its regions are refused for every declaration that
//!   gives `&mut` ([`DependError::ReadOnlyRegion`]), so everyone holds shared references to
//!   that data (`T: Sync` for the tasks').
//! - **Conflicting tasks never overlap in time.** All tasks that use one `Blocks` are children
//!   of one task, ordered by one dependence tracker: a task starts only after every earlier
//!   sibling whose declaration conflicts with its own (shares a byte, and one of them writes,
//!   members of one `inoutset` or `mutexinoutset` run excepted) has finished, and `in` readers and `inoutset` members get shared references only. A
//!   `Blocks` binds to the tracker of the first task it declares accesses for;
//!   declarations for any other task's children fail with
//!   [`DependError::ForeignRegion`]. `Blocks` and `Region` are neither `Send` nor `Sync`,
//!   so they cannot even reach another task's body, or a nested scope (whose closure must be
//!   `Send`); the binding also closes the paths through thread-locals.
//! - **One task cannot alias itself.** A task whose own declarations overlap where at least
//!   one gives `&mut` is refused: [`TaskBuilder::spawn`] returns
//!   [`DependError::ConflictingAccesses`] and spawns nothing. Reading one region twice is fine;
//!   so is reading a region the task also updates concurrently (`concurrent_updates`, which
//!   gives shared references too), the two merged into `inout` as OpenMP merges them.
//! - **References do not outlive the task.** The body is `for<'t> FnOnce(&'t Scope, (&'t ..))`:
//!   it cannot store the references anywhere that outlives its call, nor move them into the
//!   tasks it spawns (those must be `'scope`). Successors start only after the body returned.
//! - **Panics.** A task whose predecessor panicked is cancelled (its body never sees data a
//!   panicking writer left half-written), and so is a `mutex_updates` member that would take
//!   the set after a member that panicked. `concurrent_updates`
//!   members run at the same time and share `&[T]`, so they see each other's updates as they
//!   happen, a panicking member's included (tasks after the set are cancelled).
//!
//! Element types must not borrow (`T: 'static`): a current limitation of Rust's
//! higher-ranked bounds, which would otherwise demand `'static` data.
//!
//! What does not compile:
//!
//! ```compile_fail
//! # use numatask_sched::{data::Blocks, Runtime};
//! # let rt = Runtime::builder().num_threads(2).build().unwrap();
//! let mut v = vec![0u32; 100];
//! rt.scope(|s| {
//!     let blocks = Blocks::new(&mut v, 10).unwrap();
//!     s.task().writes(&blocks[0]).spawn(|_, (b,)| b[0] = 1).unwrap();
//!     v[0] = 2; // the data is borrowed by the blocks until the scope ends
//! });
//! ```
//!
//! ```compile_fail
//! # use numatask_sched::{data::Blocks, Runtime};
//! # use std::sync::Mutex;
//! # let rt = Runtime::builder().num_threads(2).build().unwrap();
//! let mut v = vec![0u32; 100];
//! let stash: Mutex<Option<&mut [u32]>> = Mutex::new(None);
//! rt.scope(|s| {
//!     let blocks = Blocks::new(&mut v, 10).unwrap();
//!     // the reference must not outlive the task's body
//!     s.task().writes(&blocks[0]).spawn(|_, (b,)| *stash.lock().unwrap() = Some(b)).unwrap();
//! });
//! ```
//!
//! ```compile_fail
//! # use numatask_sched::{data::Blocks, Runtime};
//! # let rt = Runtime::builder().num_threads(2).build().unwrap();
//! let mut v = vec![0u32; 100];
//! rt.scope(|s| {
//!     let blocks = Blocks::new(&mut v, 10).unwrap();
//!     // handles stay with the task that created them: another task's children would not be
//!     // ordered with these
//!     s.spawn(move |s| {
//!         s.task().writes(&blocks[0]).spawn(|_, (b,)| b[0] = 1).unwrap();
//!     });
//! });
//! ```
//!
//! ```compile_fail,E0277
//! # use numatask_sched::{data::Blocks, Runtime};
//! # let rt = Runtime::builder().num_threads(2).build().unwrap();
//! let mut v = vec![0u32; 100];
//! // made outside the scope: the regions' borrows could outlive the tasks holding them, so
//! // the scope's closure (which must be `Send`) cannot capture them
//! let blocks = Blocks::new(&mut v, 10).unwrap();
//! rt.scope(|s| {
//!     s.task().writes(&blocks[0]).spawn(|_, (b,)| b[0] = 1).unwrap();
//! });
//! ```
//!
//! ```compile_fail
//! # use numatask_sched::data::{TaskBuilder, Write};
//! // a view is invariant in its element type: a builder declared on slots of
//! // `for<'a> fn(&'a str)` must not pass for one on slots of `fn(&'static str)`, whose body
//! // could store a function that keeps its argument where the program later calls it with a
//! // short-lived string
//! fn upcast<'s, 'sc>(
//!     b: TaskBuilder<'s, 'sc, (Write<for<'a> fn(&'a str)>,)>,
//! ) -> TaskBuilder<'s, 'sc, (Write<fn(&'static str)>,)> {
//!     b
//! }
//! ```
//!
//! ```compile_fail,E0277
//! # use numatask_sched::Runtime;
//! # let rt = Runtime::builder().num_threads(2).build().unwrap();
//! rt.scope(|s| {
//!     // a task spawns through its own `Scope` (the closure's argument), not a captured one
//!     s.spawn(|_| {
//!         s.spawn(|_| {});
//!     });
//! });
//! ```
//!
//! # The raw API
//!
//! [`TaskBuilder::depend`] takes [`Access`]es (address, length, kind): the runtime orders the
//! task exactly like the safe API, and the caller of its `unsafe` `spawn` promises that the
//! body touches only what it declared.

#[cfg(doc)]
use crate::TaskBuilder;
use std::cell::Cell;
use std::fmt;
use std::marker::PhantomData;
use std::ops::{Index, Range};
use std::ptr::NonNull;
use std::rc::Rc;

use crate::depend::{Access, AccessKind};
use crate::error::DependError;

pub use crate::views::{
    Append, ConcurrentUpdate, ConcurrentUpdateEach, Mixed, MutexUpdate, MutexUpdateEach, Read,
    ReadEach, TooManyAccesses, Update, UpdateEach, View, Views, Write, WriteEach,
};

/// A slice cut into blocks for dependent tasks (see the [module documentation](self)).
///
/// It borrows the slice for `'a`, mutably ([`new`](Blocks::new)) or shared
/// ([`shared`](Blocks::shared)); `blocks[i]` is the [`Region`] of block `i` (the last
/// block is shorter if the length is not a multiple of the block length).
pub struct Blocks<'a, T> {
    regions: Vec<Region<'a, T>>,
    whole: Region<'a, T>,
    block_len: usize,
}

/// Part of the data of a [`Blocks`]: a handle for declaring accesses, not a reference (only a
/// task body, ordered by the runtime, gets the data itself).
pub struct Region<'a, T> {
    pub(crate) ptr: NonNull<T>,
    pub(crate) len: usize,
    /// The region's first element, counted in the whole data.
    pub(crate) start: usize,
    /// The id of the tracker the `Blocks` is bound to (0: not yet bound), shared by all its
    /// regions; the `Rc` also keeps regions from leaving the thread.
    pub(crate) binding: Rc<Cell<u64>>,
    /// Whether the data was borrowed mutably ([`Blocks::new`]) rather than shared
    /// ([`Blocks::shared`], whose regions give shared references only).
    pub(crate) writable: bool,
    _data: PhantomData<&'a mut [T]>,
}

impl<'a, T> Blocks<'a, T> {
    /// Cuts `data` into blocks of `block_len` elements.
    ///
    /// Errors: `block_len` 0, or a zero-sized `T` (whose regions would cover no byte, so the
    /// runtime could not order them).
    pub fn new(data: &'a mut [T], block_len: usize) -> Result<Self, DependError> {
        let len = data.len();
        Self::cut(NonNull::from(data).cast::<T>(), len, block_len, true)
    }

    /// Cuts data that is only read into blocks of `block_len` elements (the inputs of a
    /// computation, OpenMP's `depend(in: ...)` on data nobody writes in the scope): a shared
    /// borrow, so code outside the tasks may read the data meanwhile, and several scopes may
    /// use it. Its regions can be declared with [`reads`](TaskBuilder::reads) and
    /// [`concurrent_updates`](TaskBuilder::concurrent_updates) (shared references, for atomics)
    /// and their `_each` forms; a declaration that would give `&mut` (`writes`, `updates`,
    /// `mutex_updates`) makes [`spawn`](TaskBuilder::spawn) fail with
    /// [`DependError::ReadOnlyRegion`]. The declarations still order tasks among themselves
    /// (`in` after `inoutset`) and are the tasks' footprints, which the locality-aware
    /// scheduler weighs.
    ///
    /// ```
    /// use numatask_sched::data::Blocks;
    /// # let rt = numatask_sched::Runtime::builder().num_threads(2).build()?;
    /// let a = vec![2u64; 1000];
    /// let mut sums = vec![0u64; 10];
    /// rt.scope(|s| {
    ///     let input = Blocks::shared(&a, 100)?;
    ///     let out = Blocks::new(&mut sums, 1)?;
    ///     for i in 0..10 {
    ///         s.task()
    ///             .reads(&input[i])
    ///             .writes(&out[i])
    ///             .spawn(|_, (x, sum)| sum[0] = x.iter().sum())?;
    ///     }
    ///     assert_eq!(a[999], 2); // still readable outside the tasks
    ///     Ok::<(), numatask_sched::DependError>(())
    /// })?;
    /// assert_eq!(sums, [200; 10]);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// Errors: as for [`new`](Self::new).
    pub fn shared(data: &'a [T], block_len: usize) -> Result<Self, DependError> {
        Self::cut(
            NonNull::from(data).cast::<T>(),
            data.len(),
            block_len,
            false,
        )
    }

    /// The blocks of the `len` elements at `ptr`, borrowed for `'a` (mutably if `writable`).
    fn cut(
        ptr: NonNull<T>,
        len: usize,
        block_len: usize,
        writable: bool,
    ) -> Result<Self, DependError> {
        if block_len == 0 {
            return Err(DependError::InvalidSetting {
                setting: "block length",
                value: "0".into(),
                expected: "at least 1 element",
            });
        }
        if size_of::<T>() == 0 {
            return Err(DependError::InvalidSetting {
                setting: "block element size",
                value: "0".into(),
                expected: "a type of non-zero size",
            });
        }
        let binding = Rc::new(Cell::new(0));
        let region = |start: usize, end: usize| Region {
            // SAFETY: `start <= len`: in bounds or one past the end of the slice.
            ptr: unsafe { ptr.add(start) },
            len: end - start,
            start,
            binding: Rc::clone(&binding),
            writable,
            _data: PhantomData,
        };
        let regions = (0..len.div_ceil(block_len))
            .map(|b| region(b * block_len, ((b + 1) * block_len).min(len)))
            .collect();
        let whole = region(0, len);
        Ok(Blocks {
            regions,
            whole,
            block_len,
        })
    }

    /// Number of blocks.
    pub fn len(&self) -> usize {
        self.regions.len()
    }

    /// Whether there are no blocks (the data is empty).
    pub fn is_empty(&self) -> bool {
        self.regions.is_empty()
    }

    /// Elements per block (all but possibly the last).
    pub fn block_len(&self) -> usize {
        self.block_len
    }

    /// Block `i`, or `None` past the end.
    pub fn get(&self, i: usize) -> Option<&Region<'a, T>> {
        self.regions.get(i)
    }

    /// The blocks in order.
    pub fn iter(&self) -> std::slice::Iter<'_, Region<'a, T>> {
        self.regions.iter()
    }

    /// The whole data as one region.
    pub fn whole(&self) -> &Region<'a, T> {
        &self.whole
    }

    /// The elements `range` (of the whole data, across block boundaries if need be) as a
    /// region. Regions may overlap: the runtime orders tasks byte by byte.
    pub fn region(&self, range: Range<usize>) -> Result<Region<'a, T>, DependError> {
        if range.start > range.end || range.end > self.whole.len {
            return Err(DependError::InvalidRegion {
                start: range.start,
                end: range.end,
                len: self.whole.len,
            });
        }
        Ok(Region {
            // SAFETY: `range.start <= len`, checked above.
            ptr: unsafe { self.whole.ptr.add(range.start) },
            len: range.len(),
            start: range.start,
            binding: Rc::clone(&self.whole.binding),
            writable: self.whole.writable,
            _data: PhantomData,
        })
    }
}

impl<'a, T> Index<usize> for Blocks<'a, T> {
    type Output = Region<'a, T>;

    /// Block `i`.
    ///
    /// # Panics
    ///
    /// If `i >= self.len()`, like slice indexing; [`Blocks::get`] returns `None` instead.
    fn index(&self, i: usize) -> &Region<'a, T> {
        &self.regions[i]
    }
}

impl<'b, 'a, T> IntoIterator for &'b Blocks<'a, T> {
    type Item = &'b Region<'a, T>;
    type IntoIter = std::slice::Iter<'b, Region<'a, T>>;

    fn into_iter(self) -> Self::IntoIter {
        self.regions.iter()
    }
}

impl<T> fmt::Debug for Blocks<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Blocks")
            .field("len", &self.regions.len())
            .field("block_len", &self.block_len)
            .field("elements", &self.whole.len)
            .finish()
    }
}

impl<T> Region<'_, T> {
    /// Number of elements.
    pub fn len(&self) -> usize {
        self.len
    }

    /// The region's first element, counted in the data its [`Blocks`] cut.
    pub fn start(&self) -> usize {
        self.start
    }

    /// Whether the region has no elements (it then orders nothing).
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The region's bytes accessed as `kind`, as the tracker sees them.
    pub fn access(&self, kind: AccessKind) -> Access {
        Access::new(self.ptr.as_ptr() as usize, self.len * size_of::<T>(), kind)
    }
}

impl<T> Clone for Region<'_, T> {
    fn clone(&self) -> Self {
        Region {
            ptr: self.ptr,
            len: self.len,
            start: self.start,
            binding: Rc::clone(&self.binding),
            writable: self.writable,
            _data: PhantomData,
        }
    }
}

impl<T> fmt::Debug for Region<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Region")
            .field("addr", &self.ptr)
            .field("start", &self.start)
            .field("len", &self.len)
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blocks_cover_the_data_with_a_short_last_block() {
        let mut v = vec![0u8; 10];
        let b = Blocks::new(&mut v, 4).expect("valid");
        assert_eq!(b.len(), 3);
        let lens: Vec<usize> = b.iter().map(Region::len).collect();
        assert_eq!(lens, [4, 4, 2]);
        let start = b.whole().access(AccessKind::In).addr;
        assert_eq!(b[2].access(AccessKind::In).addr, start + 8);
        assert!(b.get(3).is_none());
        let err = b.region(3..11).expect_err("beyond the end");
        assert_eq!(
            err.to_string(),
            "region 3..11 is not within the data's 10 elements (expected start <= end <= 10)"
        );
        #[allow(clippy::reversed_empty_ranges)]
        let reversed = b.region(7..3).expect_err("reversed");
        assert!(matches!(
            reversed,
            DependError::InvalidRegion {
                start: 7,
                end: 3,
                len: 10
            }
        ));
        assert_eq!(b.region(3..7).expect("in range").len(), 4);
    }

    #[test]
    fn zero_block_length_and_zero_sized_elements_are_refused() {
        let mut v = vec![0u8; 10];
        assert!(matches!(
            Blocks::new(&mut v, 0),
            Err(DependError::InvalidSetting { .. })
        ));
        let mut z = vec![(); 10];
        assert!(matches!(
            Blocks::new(&mut z, 2),
            Err(DependError::InvalidSetting { .. })
        ));
    }
}
