//! Dependent tasks on data the runtime knows: [`Blocks`] and [`Region`] handles, the
//! [`TaskBuilder`] that declares how a task accesses them, and the raw
//! [`Scope::spawn_depend`] on byte ranges for FFI and C-like code.
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
//!   the set after a member that panicked; see [`crate::dependences`]. `concurrent_updates`
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
//! [`Scope::spawn_depend`] takes [`Access`]es (address, length, kind) and a closure that may
//! capture raw pointers: the runtime orders it exactly like the safe API, and the caller
//! promises that the closure touches only what it declared.

use std::cell::Cell;
use std::fmt;
use std::marker::PhantomData;
use std::ops::{Index, Range};
use std::ptr::NonNull;
use std::rc::Rc;

use crate::depend::{Access, AccessKind};
use crate::error::DependError;
use crate::scope::Scope;

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
    ptr: NonNull<T>,
    len: usize,
    /// The id of the tracker the `Blocks` is bound to (0: not yet bound), shared by all its
    /// regions; the `Rc` also keeps regions from leaving the thread.
    binding: Rc<Cell<u64>>,
    /// Whether the data was borrowed mutably ([`Blocks::new`]) rather than shared
    /// ([`Blocks::shared`], whose regions give shared references only).
    writable: bool,
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
            .field("len", &self.len)
            .finish()
    }
}

/// Declares the accesses of one dependent task, then spawns it: see [`Scope::task`] and the
/// [module documentation](self).
///
/// `A` is the tuple of declarations so far (up to [`MAX_ACCESSES`]; an `_each` declaration
/// counts as one whatever its length); the body receives their data as a tuple in the same
/// order.
#[must_use = "a task builder does nothing until `spawn` is called"]
pub struct TaskBuilder<'s, 'scope, A> {
    scope: &'s Scope<'scope>,
    /// The id of the scope's dependence tracker, which regions are bound to.
    deps_id: u64,
    views: A,
    /// Bit `i`: declaration `i` is marked intensive.
    intensive: u8,
    label: Option<&'static str>,
    /// OpenMP's `priority` clause ([`TaskBuilder::priority`]).
    priority: u32,
    /// Why `spawn` will refuse the task, if a declaration already says (reported by `spawn`;
    /// a small value rather than the error, so that the builder moved by every call stays
    /// small).
    refusal: Refusal,
}

/// What a declaration found wrong, for [`TaskBuilder::spawn`] to report.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Refusal {
    None,
    /// [`DependError::ForeignRegion`].
    Foreign,
    /// [`DependError::ReadOnlyRegion`], with the kind declared.
    ReadOnly(AccessKind),
}

/// The most declarations one [`TaskBuilder`] makes (each may be a list of any length:
/// [`TaskBuilder::reads_each`] and the other `_each` forms; the raw [`Scope::spawn_depend`]
/// has no limit either).
///
/// A ninth declaration does not compile:
///
/// ```compile_fail
/// # let rt = numatask_sched::Runtime::builder().num_threads(1).build().unwrap();
/// let mut v = vec![0u32; 90];
/// rt.scope(|s| {
///     let b = numatask_sched::data::Blocks::new(&mut v, 10).unwrap();
///     s.task()
///         .reads(&b[0]).reads(&b[1]).reads(&b[2]).reads(&b[3])
///         .reads(&b[4]).reads(&b[5]).reads(&b[6]).reads(&b[7])
///         .updates(&b[8])
///         .spawn(|_, _| {})
///         .unwrap();
/// });
/// ```
///
/// Eight do:
///
/// ```
/// # let rt = numatask_sched::Runtime::builder().num_threads(1).build().unwrap();
/// let mut v = vec![0u32; 90];
/// rt.scope(|s| {
///     let b = numatask_sched::data::Blocks::new(&mut v, 10).unwrap();
///     s.task()
///         .reads(&b[0]).reads(&b[1]).reads(&b[2]).reads(&b[3])
///         .reads(&b[4]).reads(&b[5]).reads(&b[6])
///         .updates(&b[8])
///         .spawn(|_, (.., x)| x[0] = 1)
///         .unwrap();
/// });
/// assert_eq!(v[80], 1);
/// ```
pub const MAX_ACCESSES: usize = 8;

impl<'scope> Scope<'scope> {
    /// Starts declaring a dependent task: add its accesses with the [`TaskBuilder`]'s methods,
    /// then [`spawn`](TaskBuilder::spawn) it (see [`crate::data`]).
    pub fn task(&self) -> TaskBuilder<'_, 'scope, ()> {
        TaskBuilder {
            scope: self,
            deps_id: self.child_deps().id,
            views: (),
            intensive: 0,
            label: None,
            priority: 0,
            refusal: Refusal::None,
        }
    }

    /// Spawns `f` as a task that depends on its earlier siblings by `deps` (OpenMP's
    /// `#pragma omp task depend(...)`): it starts once every earlier child of this task whose
    /// accesses conflict with `deps` (share a byte, and one of the two is not `in`; the set
    /// kinds as [`AccessKind`] says) finished, and the tasks spawned later that conflict with it
    /// wait for it. Like every child, it finishes before this task's next `taskwait` and the
    /// scope's end. If a task it depends on panicked, `f` is dropped without being run (see
    /// [`crate::dependences`]). Declarations of one task that overlap are merged byte by byte
    /// (one kind where they agree, `inout` where they differ: see [`crate::depend`]);
    /// [`Access::intensive`] marks the most access-intensive one.
    ///
    /// This is the raw form, for data the runtime does not know: byte ranges from C, raw
    /// pointers. [`Scope::task`] is the safe form on [`Blocks`].
    ///
    /// ```
    /// use numatask_sched::depend::{Access, AccessKind};
    /// # let rt = numatask_sched::Runtime::builder().num_threads(2).build()?;
    /// let mut buf = vec![0.0f64; 64];
    /// rt.scope(|s| {
    ///     // A C-like buffer: a raw pointer and a length.
    ///     let (p, n) = (buf.as_mut_ptr(), buf.len());
    ///     let whole = Access::new(p as usize, n * 8, AccessKind::Out);
    ///     let half = Access::new(p as usize, n / 2 * 8, AccessKind::InOut);
    ///     // SAFETY: each closure writes only the bytes it declares, which stay valid and
    ///     // untouched by anything else until the scope ends; raw pointers to plain numbers
    ///     // may be used from any thread.
    ///     unsafe {
    ///         s.spawn_depend(&[whole], move |_| (0..n).for_each(|i| *p.add(i) = 1.0));
    ///         s.spawn_depend(&[half], move |_| (0..n / 2).for_each(|i| *p.add(i) += 1.0));
    ///     }
    /// });
    /// assert_eq!(buf[0], 2.0);
    /// assert_eq!(buf[63], 1.0);
    /// # Ok::<(), numatask_sched::BuildError>(())
    /// ```
    ///
    /// # Safety
    ///
    /// - `f` runs on any worker thread: everything it captures must be safe to send to, and
    ///   use on, another thread (as if `F: Send`; raw pointers to the declared data are).
    /// - Every memory access `f` makes through what it captures unchecked (raw pointers,
    ///   addresses from C) falls within `deps`, reads under any kind and writes under a kind
    ///   that writes (not [`AccessKind::In`]); two `inoutset` members may run at the same
    ///   time and must synchronize their writes themselves.
    /// - That memory stays valid until the task has finished, and nothing else touches it
    ///   meanwhile except sibling tasks that declare it.
    pub unsafe fn spawn_depend<F>(&self, deps: &[Access], f: F)
    where
        F: FnOnce(&Scope<'scope>) + 'scope,
    {
        let f = AssertSend(f);
        self.spawn_dependent(deps, None, 0, move |s| f.into_inner()(s));
    }

    /// [`spawn_depend`](Self::spawn_depend) with a name for the task in traces (see
    /// [`crate::trace`]; free when the runtime does not trace).
    ///
    /// # Safety
    ///
    /// As for [`spawn_depend`](Self::spawn_depend).
    pub unsafe fn spawn_depend_labeled<F>(&self, label: &'static str, deps: &[Access], f: F)
    where
        F: FnOnce(&Scope<'scope>) + 'scope,
    {
        let f = AssertSend(f);
        let label = self.is_tracing().then_some(label);
        self.spawn_dependent(deps, label, 0, move |s| f.into_inner()(s));
    }
}

/// A closure the caller of [`Scope::spawn_depend`] promised may run on another thread.
struct AssertSend<F>(F);

// SAFETY: the caller of `spawn_depend` promises that `F` may be sent to another thread.
unsafe impl<F> Send for AssertSend<F> {}

impl<F> AssertSend<F> {
    /// Moves the whole wrapper into a closure that calls this (a closure naming `self.0`
    /// would capture the field alone, which is not `Send`).
    fn into_inner(self) -> F {
        self.0
    }
}

macro_rules! access_methods {
    ($(
        $(#[$doc:meta])*
        $name:ident => $kind:ident, $view:ident, [$($bound:tt)+];
        $(#[$each_doc:meta])*
        $each:ident => $list:ident;
    )*) => {
        impl<'s, 'scope, A> TaskBuilder<'s, 'scope, A> {
            $(
                $(#[$doc])*
                pub fn $name<'a, T>(
                    self,
                    region: &Region<'a, T>,
                ) -> TaskBuilder<'s, 'scope, <A as Append<$view<T>>>::Output>
                where
                    A: Append<$view<T>>,
                    T: $($bound)+ + 'static,
                    'a: 'scope,
                {
                    let view = $view {
                        ptr: region.ptr,
                        len: region.len,
                        _invariant: PhantomData,
                    };
                    let shared = !region.writable;
                    self.declare(std::iter::once(&*region.binding), shared, AccessKind::$kind, view)
                }

                $(#[$each_doc])*
                pub fn $each<'r, 'a, T>(
                    self,
                    regions: impl IntoIterator<Item = &'r Region<'a, T>>,
                ) -> TaskBuilder<'s, 'scope, <A as Append<$list<T>>>::Output>
                where
                    A: Append<$list<T>>,
                    T: $($bound)+ + 'static,
                    'a: 'scope + 'r,
                {
                    let regions: Vec<&'r Region<'a, T>> = regions.into_iter().collect();
                    let view = $list {
                        parts: regions.iter().map(|r| (r.ptr, r.len)).collect(),
                        _invariant: PhantomData,
                    };
                    let shared = regions.iter().any(|r| !r.writable);
                    self.declare(regions.iter().map(|r| &*r.binding), shared, AccessKind::$kind, view)
                }
            )*
        }
    };
}

access_methods! {
    /// Declares that the task reads `region` (`depend(in)`): the body gets `&[T]`. Readers
    /// of a region run concurrently; they wait for its earlier writers.
    reads => In, Read, [Sync];
    /// Declares that the task reads each of `regions` (`depend(in)` on each): the body gets
    /// `Vec<&[T]>`, in the order of `regions`. One declaration, whatever the list's length.
    reads_each => ReadEach;
    /// Declares that the task overwrites `region` (`depend(out)`): the body gets `&mut [T]`
    /// (with the old values in it). It waits for every earlier access of the region.
    writes => Out, Write, [Send];
    /// Declares that the task overwrites each of `regions` (`depend(out)` on each): the body
    /// gets `Vec<&mut [T]>`, in the order of `regions`, which must not overlap.
    writes_each => WriteEach;
    /// Declares that the task reads and writes `region` (`depend(inout)`): the body gets
    /// `&mut [T]`. It waits for every earlier access of the region.
    updates => InOut, Update, [Send];
    /// Declares that the task reads and writes each of `regions` (`depend(inout)` on each):
    /// the body gets `Vec<&mut [T]>`, in the order of `regions`, which must not overlap.
    updates_each => UpdateEach;
    /// Declares that the task updates `region` as a member of a mutually exclusive set
    /// (`depend(mutexinoutset)`): consecutive members run in any order, one at a time; the
    /// body gets `&mut [T]`.
    mutex_updates => MutexInOutSet, MutexUpdate, [Send];
    /// [`mutex_updates`](Self::mutex_updates) on each of `regions`: the body gets
    /// `Vec<&mut [T]>`, in the order of `regions`, which must not overlap.
    mutex_updates_each => MutexUpdateEach;
    /// Declares that the task updates `region` as a member of a concurrent set
    /// (`depend(inoutset)`): consecutive members may run at the same time, so the body gets
    /// `&[T]` (update through atomics or other interior mutability).
    concurrent_updates => InOutSet, ConcurrentUpdate, [Sync];
    /// [`concurrent_updates`](Self::concurrent_updates) on each of `regions`: the body gets
    /// `Vec<&[T]>`, in the order of `regions`.
    concurrent_updates_each => ConcurrentUpdateEach;
}

impl<'s, 'scope, A> TaskBuilder<'s, 'scope, A> {
    /// Adds `view`, an access of kind `kind` to regions whose trackers are `bindings` (and,
    /// if `shared`, one of them of data borrowed shared, [`Blocks::shared`]).
    fn declare<'r, V>(
        self,
        bindings: impl Iterator<Item = &'r Cell<u64>>,
        shared: bool,
        kind: AccessKind,
        view: V,
    ) -> TaskBuilder<'s, 'scope, A::Output>
    where
        A: Append<V>,
    {
        let TaskBuilder {
            scope,
            deps_id,
            views,
            intensive,
            label,
            priority,
            mut refusal,
        } = self;
        if refusal == Refusal::None && shared && kind.gives_mut() {
            refusal = Refusal::ReadOnly(kind);
        }
        for binding in bindings {
            if refusal != Refusal::None {
                break;
            }
            match binding.get() {
                0 => binding.set(deps_id),
                bound if bound == deps_id => {}
                _ => refusal = Refusal::Foreign,
            }
        }
        TaskBuilder {
            scope,
            deps_id,
            views: views.append(view),
            intensive,
            label,
            priority,
            refusal,
        }
    }

    /// Marks the access declared last (every region of it, for an `_each` declaration) as the
    /// task's most access-intensive one (a hint for a locality-aware scheduler; it orders
    /// nothing). Without accesses it does nothing.
    pub fn intensive(mut self) -> Self
    where
        A: sealed::Sealed,
    {
        if let Some(last) = A::LEN.checked_sub(1) {
            self.intensive |= 1 << last;
        }
        self
    }

    /// Gives the task a priority (OpenMP's `priority(p)` clause, a hint): once its dependences
    /// are met, workers take it ahead of ready tasks of lower priority (see
    /// [`Scope::spawn_with_priority`], which says how far, and why the runtime ignores it
    /// unless `OMP_MAX_TASK_PRIORITY` is above 0).
    pub fn priority(mut self, priority: u32) -> Self {
        self.priority = priority;
        self
    }

    /// Names the task in traces (see [`crate::trace`]). Free when the runtime does not trace
    /// (the label is then not stored).
    pub fn label(mut self, label: &'static str) -> Self {
        if self.scope.is_tracing() {
            self.label = Some(label);
        }
        self
    }

    /// Spawns the task: `f` gets the task's [`Scope`] and the data of the declared regions,
    /// in declaration order, once every earlier sibling task that conflicts with these
    /// accesses finished.
    ///
    /// Errors, and then nothing is spawned: [`DependError::ConflictingAccesses`] if two of the
    /// task's own accesses overlap and one of them gives `&mut`;
    /// [`DependError::ForeignRegion`] if a region belongs to data whose handles are bound to
    /// another task's children.
    pub fn spawn<F>(self, f: F) -> Result<(), DependError>
    where
        A: for<'t> Views<'t> + Send + 'scope,
        F: for<'t> FnOnce(&'t Scope<'scope>, <A as Views<'t>>::Out) + Send + 'scope,
    {
        match self.refusal {
            Refusal::None => {}
            Refusal::Foreign => return Err(DependError::ForeignRegion),
            Refusal::ReadOnly(kind) => return Err(DependError::ReadOnlyRegion { kind }),
        }
        let count = self.views.count();
        let mut fixed = [Access::new(0, 0, AccessKind::In); MAX_ACCESSES];
        let mut listed = Vec::new();
        let accesses: &mut [Access] = if count <= MAX_ACCESSES {
            &mut fixed[..count]
        } else {
            listed.resize(count, Access::new(0, 0, AccessKind::In));
            &mut listed
        };
        self.views.describe(accesses, 0, self.intensive);
        check_conflicts(accesses)?;
        let views = self.views;
        self.scope
            .spawn_dependent(accesses, self.label, self.priority, move |s| {
                // SAFETY: the runtime starts this body only after every earlier sibling that
                // conflicts with these accesses finished, and starts no conflicting sibling before
                // it returns (module docs); the accesses of this task do not conflict among
                // themselves (checked above); the data lives for `'scope`.
                let data = unsafe { views.views() };
                f(s, data)
            });
        Ok(())
    }
}

/// Whether the accesses of one task conflict among themselves: two overlapping accesses of
/// which one gives the body `&mut`.
#[inline]
fn check_conflicts(accesses: &[Access]) -> Result<(), DependError> {
    let exclusive = |a: &Access| a.kind.gives_mut();
    if accesses.len() > 2 * MAX_ACCESSES {
        return check_conflicts_sorted(accesses, exclusive);
    }
    // Plain index loops over a few accesses: this runs on every safe spawn.
    for j in 1..accesses.len() {
        let b = &accesses[j];
        for (i, a) in accesses[..j].iter().enumerate() {
            let overlap = a.len > 0 && b.len > 0 && a.addr < b.end() && b.addr < a.end();
            if overlap && (exclusive(a) || exclusive(b)) {
                return Err(DependError::ConflictingAccesses {
                    first: i,
                    first_kind: a.kind,
                    second: j,
                    second_kind: b.kind,
                });
            }
        }
    }
    Ok(())
}

/// [`check_conflicts`] for long lists (`_each` declarations): sorted by address, each access
/// is checked against the farthest-reaching earlier access and the farthest-reaching earlier
/// exclusive one, which overlap it if any earlier access of that sort does. `O(n log n)`.
#[cold]
fn check_conflicts_sorted(
    accesses: &[Access],
    exclusive: impl Fn(&Access) -> bool,
) -> Result<(), DependError> {
    let mut order: Vec<usize> = (0..accesses.len())
        .filter(|&i| accesses[i].len > 0)
        .collect();
    order.sort_unstable_by_key(|&i| (accesses[i].addr, i));
    // (end, index) of the earlier access reaching farthest, and of the earlier exclusive one.
    let mut any: Option<(usize, usize)> = None;
    let mut excl: Option<(usize, usize)> = None;
    for &j in &order {
        let b = &accesses[j];
        let hit = if exclusive(b) { any } else { excl };
        if let Some((end, i)) = hit
            && b.addr < end
        {
            let (first, second) = (i.min(j), i.max(j));
            return Err(DependError::ConflictingAccesses {
                first,
                first_kind: accesses[first].kind,
                second,
                second_kind: accesses[second].kind,
            });
        }
        let reach = Some((b.end(), j));
        if any.is_none_or(|(end, _)| b.end() > end) {
            any = reach;
        }
        if exclusive(b) && excl.is_none_or(|(end, _)| b.end() > end) {
            excl = reach;
        }
    }
    Ok(())
}

/// Where a declared access's data is: the views the body gets are made from these. What kind
/// of reference each gives is in its type; `Send` only when that reference may go to the
/// thread that runs the task.
macro_rules! views {
    ($($(#[$doc:meta])* $view:ident => $kind:ident, $out:ty, [$($send:tt)+];)*) => {$(
        $(#[$doc])*
        pub struct $view<T> {
            ptr: NonNull<T>,
            len: usize,
            /// Invariant in `T` (`NonNull<T>` alone is covariant): a view declared on data of
            /// type `X` must not pass for one of a supertype of `X`, or a body given
            /// `&mut [Y]` could store a `Y` where an `X` is read later (a `for<'a> fn(&'a
            /// str)` slot given a `fn(&'static str)` that keeps its argument, for instance).
            _invariant: PhantomData<fn(T) -> T>,
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
            parts: Vec<(NonNull<T>, usize)>,
            /// Invariant in `T`, as the single views are.
            _invariant: PhantomData<fn(T) -> T>,
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

mod sealed {
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
}

/// The data a task body gets for its declared accesses, for a body call of lifetime `'t`
/// (implemented for the access types and tuples of them; sealed).
///
/// A builder with more than [`MAX_ACCESSES`] declarations has none ([`TooManyAccesses`]):
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
/// [`MAX_ACCESSES`]` - 1` elements; a full tuple gives [`TooManyAccesses`]; sealed).
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

/// The declarations of a [`TaskBuilder`] given more than [`MAX_ACCESSES`]: it takes more
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

    #[test]
    fn overlapping_writes_of_one_task_conflict_and_reads_do_not() {
        use AccessKind::*;
        let a = |addr, len, kind| Access::new(addr, len, kind);
        assert!(check_conflicts(&[a(0, 8, In), a(4, 8, In)]).is_ok());
        assert!(check_conflicts(&[a(0, 8, In), a(8, 8, Out)]).is_ok());
        assert!(check_conflicts(&[a(0, 8, InOutSet), a(0, 8, In)]).is_ok());
        assert_eq!(
            check_conflicts(&[a(0, 8, In), a(100, 1, Out), a(7, 1, InOut)]),
            Err(DependError::ConflictingAccesses {
                first: 0,
                first_kind: In,
                second: 2,
                second_kind: InOut
            })
        );
        assert!(check_conflicts(&[a(0, 8, MutexInOutSet), a(0, 8, MutexInOutSet)]).is_err());
        // Empty ranges cover no byte.
        assert!(check_conflicts(&[a(4, 0, Out), a(0, 8, Out)]).is_ok());
    }

    #[test]
    fn the_sorted_check_of_long_lists_finds_exactly_the_conflicts_of_every_pair() {
        use AccessKind::*;
        let exclusive = |k| matches!(k, Out | InOut | MutexInOutSet);
        let conflict = |x: &Access, y: &Access| {
            x.len > 0
                && y.len > 0
                && x.addr < y.end()
                && y.addr < x.end()
                && (exclusive(x.kind) || exclusive(y.kind))
        };
        let mut seed = 0x9E37_79B9_7F4A_7C15u64;
        let mut next = |n: u64| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            (seed % n) as usize
        };
        let (mut refused, mut accepted) = (0, 0);
        for round in 0..2000 {
            let n = 17 + next(40);
            // Sparse ranges over a wide span, so that both outcomes occur often.
            let span = 64 * n as u64 * (1 + round % 4);
            let accesses: Vec<Access> = (0..n)
                .map(|_| {
                    let kind = [In, In, In, Out, InOut, MutexInOutSet, InOutSet][next(7)];
                    Access::new(next(span), next(24), kind)
                })
                .collect();
            let any = (0..n).any(|j| (0..j).any(|i| conflict(&accesses[i], &accesses[j])));
            match check_conflicts(&accesses) {
                Ok(()) => {
                    assert!(!any, "missed a conflict in {accesses:?}");
                    accepted += 1;
                }
                Err(DependError::ConflictingAccesses {
                    first,
                    first_kind,
                    second,
                    second_kind,
                }) => {
                    assert!(first < second);
                    assert_eq!(
                        (first_kind, second_kind),
                        (accesses[first].kind, accesses[second].kind)
                    );
                    assert!(
                        conflict(&accesses[first], &accesses[second]),
                        "reported a pair that does not conflict"
                    );
                    refused += 1;
                }
                Err(other) => panic!("{other}"),
            }
        }
        assert!(refused > 100 && accepted > 100, "{refused} / {accepted}");
    }

    #[test]
    fn intensive_marks_every_region_of_an_each_declaration() {
        let mut v = vec![0u8; 40];
        let blocks = Blocks::new(&mut v, 4).expect("valid");
        let list = ReadEach {
            parts: blocks.iter().take(3).map(|r| (r.ptr, r.len)).collect(),
            _invariant: PhantomData,
        };
        let single = Update {
            ptr: blocks[5].ptr,
            len: 4,
            _invariant: PhantomData,
        };
        let views = (single, list);
        assert_eq!(sealed::Sealed::count(&views), 4);
        let mut out = [Access::new(0, 0, AccessKind::In); 4];
        // Declaration 1 (the list) marked.
        sealed::Sealed::describe(&views, &mut out, 0, 0b10);
        let marks: Vec<bool> = out.iter().map(|a| a.intensive).collect();
        assert_eq!(marks, [false, true, true, true]);
        assert_eq!(out[0].kind, AccessKind::InOut);
        assert_eq!(out[3].addr, blocks[2].access(AccessKind::In).addr);
    }
}
