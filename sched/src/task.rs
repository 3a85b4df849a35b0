//! The task construct: [`Scope::task`] returns a [`TaskBuilder`], whose methods are the
//! clauses of OpenMP's `task` (priority, `if`, `final`, affinity, `depend`), ending in
//! [`spawn`](TaskBuilder::spawn) or [`spawn_with_result`](TaskBuilder::spawn_with_result).
//! [`Scope::spawn`] is the short form without clauses.
//!
//! | OpenMP | numatask |
//! |---|---|
//! | `#pragma omp task` | [`s.spawn(f)`](Scope::spawn), [`s.task().spawn(f)`](TaskBuilder::spawn) |
//! | `priority(p)` | [`.priority(p)`](TaskBuilder::priority) |
//! | `if(c)` | [`.defer_if(c)`](TaskBuilder::defer_if) |
//! | `final(c)` | [`.final_if(c)`](TaskBuilder::final_if) |
//! | `affinity(...)` | [`.affinity(footprint)`](TaskBuilder::affinity) with a [`Footprint`] |
//! | (none: a worker's cache, as in binding a consumer to its producer's core) | [`.prefer_worker(index)`](TaskBuilder::prefer_worker) |
//! | `depend(in/out/inout/mutexinoutset/inoutset: ...)` on data | [`.reads`](TaskBuilder::reads), [`.writes`](TaskBuilder::writes), [`.updates`](TaskBuilder::updates), [`.mutex_updates`](TaskBuilder::mutex_updates), [`.concurrent_updates`](TaskBuilder::concurrent_updates), their `_each` forms, [`.accesses`](TaskBuilder::accesses) (see [`crate::data`]) |
//! | `depend(...)` on raw addresses | `unsafe` [`.depend(&accesses)`](TaskBuilder::depend)`.spawn(f)` |
//! | a task's value | [`.spawn_with_result(f)`](TaskBuilder::spawn_with_result), [`TaskHandle::join`] |
//!
//! ```
//! use numatask_sched::{Runtime, Scope};
//!
//! fn fib(s: &Scope<'_>, n: u64) -> u64 {
//!     if n < 2 {
//!         return n;
//!     }
//!     // Below the cutoff the whole subtree runs inline, in one final task.
//!     let a = s.task().final_if(n < 12).spawn_with_result(move |s| fib(s, n - 1));
//!     let b = fib(s, n - 2);
//!     a.join() + b
//! }
//!
//! let rt = Runtime::builder().num_threads(2).build()?;
//! assert_eq!(rt.scope(|s| fib(s, 20)), 6765);
//! # Ok::<(), numatask_sched::BuildError>(())
//! ```
//!
//! Without `depend` clauses `spawn` cannot fail and the body gets the task's [`Scope`]; with
//! them the body also gets the declared data, and `spawn` returns an error (nothing spawned)
//! when the declarations are wrong ([`DependError`]).

use std::cell::Cell;
use std::marker::PhantomData;

use crate::data::Region;
use crate::depend::{Access, AccessKind};
use crate::error::DependError;
use crate::footprint::Footprint;
use crate::job::TaskMeta;
use crate::scope::{Scope, TaskHandle};
use crate::views::{
    Append, ConcurrentUpdate, ConcurrentUpdateEach, Mixed, MixedPart, MutexUpdate, MutexUpdateEach,
    Read, ReadEach, Update, UpdateEach, Views, Write, WriteEach, sealed,
};

/// The clauses that do not declare data: kept apart so that both builders share them.
#[derive(Clone, Debug, Default)]
struct Clauses {
    /// OpenMP's `priority` clause.
    priority: u32,
    /// A name for traces (only stored when the runtime traces).
    label: Option<&'static str>,
    /// OpenMP's `if(false)`: run at once, on the spawning thread.
    undeferred: bool,
    /// OpenMP's `final(true)`.
    is_final: bool,
    /// OpenMP 5's `affinity` (only stored when the runtime uses footprints).
    footprint: Option<Box<[Access]>>,
    /// The worker the task prefers (only stored for an index of the runtime's workers).
    preferred: Option<usize>,
}

impl Clauses {
    /// The frame's metadata, or `None` when nothing in it would be used.
    #[inline]
    fn meta(self, scope: &Scope<'_>) -> Option<Box<TaskMeta>> {
        let priority = scope.honoured_priority(self.priority);
        if priority == 0
            && self.label.is_none()
            && self.footprint.is_none()
            && self.preferred.is_none()
        {
            return None;
        }
        Some(Box::new(TaskMeta {
            footprint: self.footprint.unwrap_or_default(),
            label: self.label,
            priority,
            preferred: self.preferred,
        }))
    }
}

/// A task being declared: clauses as methods, then [`spawn`](TaskBuilder::spawn) or
/// [`spawn_with_result`](TaskBuilder::spawn_with_result) (see the [module docs](self)).
///
/// `A` is the tuple of data declarations so far (up to [`MAX_ACCESSES`]; an `_each` or
/// [`accesses`](TaskBuilder::accesses) declaration counts as one whatever its length); the
/// body receives their data as a tuple in the same order.
#[must_use = "a task builder does nothing until `spawn` is called"]
pub struct TaskBuilder<'s, 'scope, A> {
    scope: &'s Scope<'scope>,
    /// The id of the scope's dependence tracker, which regions are bound to (0 until the
    /// first data declaration: a task without one never makes the tracker).
    deps_id: u64,
    views: A,
    /// Bit `i`: declaration `i` is marked intensive.
    intensive: u8,
    clauses: Clauses,
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
/// [`TaskBuilder::reads_each`], the other `_each` forms and [`TaskBuilder::accesses`]; the raw
/// [`TaskBuilder::depend`] has no limit either).
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
    /// Starts declaring a task: add clauses with the [`TaskBuilder`]'s methods, then
    /// [`spawn`](TaskBuilder::spawn) it (see the [module docs](crate::task)).
    #[inline]
    pub fn task(&self) -> TaskBuilder<'_, 'scope, ()> {
        TaskBuilder {
            scope: self,
            deps_id: 0,
            views: (),
            intensive: 0,
            clauses: Clauses::default(),
            refusal: Refusal::None,
        }
    }
}

impl<'s, 'scope, A> TaskBuilder<'s, 'scope, A> {
    /// Gives the task a priority (OpenMP's `priority(p)` clause, a hint): among the tasks
    /// ready to run, workers take those of higher priority first (equal priorities in the
    /// order they became ready), ahead of tasks without one, from a pool-wide list that an
    /// idle worker looks at before its own queues, and a waiting one first for what it waits
    /// for, else where it would steal (a priority outranks where the task's data lives: such
    /// tasks are not dealt by locality). With several workers a task of lower priority may
    /// still start first elsewhere. Priorities above the runtime's `OMP_MAX_TASK_PRIORITY`
    /// count as it; with that at 0, the default, priorities are ignored (a priority-0 task is
    /// an ordinary one) and cost nothing. For tasks long enough that the order they start in
    /// matters: the list is locked. A dependent task gets its priority once its dependences
    /// are met.
    ///
    /// ```
    /// use std::sync::Mutex;
    /// let rt = numatask_sched::Runtime::builder().num_threads(1).max_task_priority(5).build()?;
    /// let order = Mutex::new(Vec::new());
    /// rt.scope(|s| {
    ///     for p in [1, 5, 0, 3] {
    ///         let order = &order;
    ///         s.task().priority(p).spawn(move |_| order.lock().unwrap().push(p));
    ///     }
    /// });
    /// // One worker, which ran the scope body first: then the highest priority first.
    /// assert_eq!(*order.lock().unwrap(), [5, 3, 1, 0]);
    /// # Ok::<(), numatask_sched::BuildError>(())
    /// ```
    #[inline]
    pub fn priority(mut self, priority: u32) -> Self {
        self.clauses.priority = priority;
        self
    }

    /// OpenMP's `if(defer)` clause: with `false` the task runs at once, on this thread,
    /// before `spawn` returns (undeferred), instead of being queued; its children are its
    /// own, and a panic of it reaches this task's next `taskwait` as any child's does. The
    /// cheap way to stop spawning below a cutoff; [`final_if`](Self::final_if) stops it for a
    /// whole subtree. A dependent task that is undeferred waits for its dependences first
    /// (running other tasks meanwhile).
    ///
    /// ```
    /// # let rt = numatask_sched::Runtime::builder().num_threads(2).build()?;
    /// let mut hits = [0u32; 4];
    /// rt.scope(|s| {
    ///     for (i, h) in hits.iter_mut().enumerate() {
    ///         s.task().defer_if(i >= 2).spawn(move |_| *h += 1); // 0 and 1 run right here
    ///     }
    /// });
    /// assert_eq!(hits, [1; 4]);
    /// # Ok::<(), numatask_sched::BuildError>(())
    /// ```
    #[inline]
    pub fn defer_if(mut self, defer: bool) -> Self {
        self.clauses.undeferred = !defer;
        self
    }

    /// OpenMP's `final(is_final)` clause: with `true` the task is final: every task spawned
    /// inside it, at any depth, is *included*: it runs at once on the spawning thread, before
    /// `spawn` returns, instead of being queued. Dependent spawns inside it run at once too
    /// (in program order, which satisfies every dependence among them). Results, panics,
    /// `taskwait` and taskgroups behave as for deferred tasks, and a dependent task after one
    /// that panicked is cancelled. A new scope entered inside
    /// ([`Runtime::scope`](crate::Runtime::scope)) is a tree of its own, whose tasks are
    /// deferred. [`Scope::in_final`] tells a body whether it runs in a final task.
    ///
    /// The usual cutoff of recursive task programs: above a depth spawn, below it spawn one
    /// final task and let the recursion run sequentially inside it, code unchanged.
    ///
    /// ```
    /// # let rt = numatask_sched::Runtime::builder().num_threads(2).build()?;
    /// use numatask_sched::Scope;
    ///
    /// fn fib(s: &Scope<'_>, n: u64) -> u64 {
    ///     if n < 2 {
    ///         return n;
    ///     }
    ///     let a = s.task().spawn_with_result(move |s| fib(s, n - 1));
    ///     let b = s.task().spawn_with_result(move |s| fib(s, n - 2));
    ///     s.taskwait();
    ///     a.join() + b.join()
    /// }
    ///
    /// let (mut small, mut large) = (0, 0);
    /// rt.scope(|s| {
    ///     // Below the cutoff: one final task, inside which fib's spawns run inline.
    ///     s.task().final_if(true).spawn(|s| {
    ///         assert!(s.in_final());
    ///         small = fib(s, 15);
    ///     });
    ///     s.spawn(|s| large = fib(s, 20));
    /// });
    /// assert_eq!((small, large), (610, 6765));
    /// # Ok::<(), numatask_sched::BuildError>(())
    /// ```
    #[inline]
    pub fn final_if(mut self, is_final: bool) -> Self {
        self.clauses.is_final = is_final;
        self
    }

    /// Names the task in traces (see [`crate::trace`]). Free when the runtime does not trace
    /// (the label is then not stored).
    #[inline]
    pub fn label(mut self, label: &'static str) -> Self {
        if self.scope.is_tracing() {
            self.clauses.label = Some(label);
        }
        self
    }

    /// OpenMP 5's `affinity` clause: the data the task touches, a hint by which the
    /// locality-aware scheduler places it near that data (work stealing ignores it). It
    /// orders nothing and nothing checks it. A dependent task's footprint is otherwise its
    /// declared data; an affinity given to one replaces that for placement.
    ///
    /// ```
    /// use numatask_sched::Footprint;
    /// # let rt = numatask_sched::Runtime::builder().num_threads(2).build()?;
    /// let mut chunk = vec![1.0f64; 1024];
    /// rt.scope(|s| {
    ///     let near = Footprint::of(&chunk);
    ///     s.task().affinity(near).label("map").spawn(|_| chunk.iter_mut().for_each(|x| *x *= 2.0));
    /// });
    /// assert_eq!(chunk[0], 2.0);
    /// # Ok::<(), numatask_sched::BuildError>(())
    /// ```
    #[inline]
    pub fn affinity(mut self, footprint: Footprint) -> Self {
        if self.scope.uses_footprints() {
            self.clauses.footprint = Some(footprint.into_accesses());
        }
        self
    }

    /// Prefers worker `index` of this runtime (see
    /// [`Scope::worker_index`](crate::Scope::worker_index), [`Runtime::workers`](crate::Runtime::workers))
    /// for the task, a hint: run it where that worker's cache still holds what an earlier
    /// task left there (the consumer of a producer's data, the same chunk of the next pass
    /// over the same arrays).
    ///
    /// The task is offered to that worker first: it waits in the worker's *mailbox*, which
    /// the worker empties, oldest first, before any other work of its own. While the worker
    /// is free (idle and awake, searching for work), other workers leave the task to it. While
    /// it is busy, or asleep (the task wakes it, which takes tens of microseconds), an idle
    /// worker may take the task instead, so the hint never holds a task for long while others
    /// idle: any idle worker under work stealing; under the
    /// locality-aware scheduler a worker of the same node, or of a node within the vicinity
    /// while the mailboxes of that node hold more tasks than Algorithm 2's threshold for
    /// stealing from its queue (a preferred task counts as dealt to its worker's node). A task
    /// that prefers the worker spawning it is kept for that worker while the spawning task
    /// runs on, which takes it at its next wait or when it returns, for at most 200 µs:
    /// after that idle workers may take it, so a spawner that computes on, or blocks, does
    /// not hold it back.
    ///
    /// The clause decides where the task is queued: under the locality-aware scheduler it
    /// replaces dealing by the footprint (choose a worker of the node holding the data: the
    /// workers' nodes are in [`Runtime::workers`](crate::Runtime::workers)). A priority
    /// outranks it (such a task goes to the priority list), and an undeferred or included
    /// task runs at once on the spawning thread, whatever it prefers. An index out of range
    /// is ignored. Traces record such tasks as
    /// [`QueueChoice::Preferred`](crate::trace::QueueChoice::Preferred). Tasks without the
    /// clause pay nothing for it but one test of the worker's mailbox per task it runs.
    ///
    /// ```
    /// use numatask_sched::{Runtime, WaitPolicy};
    /// // Workers that never sleep (`OMP_WAIT_POLICY=active`): an idle one is always free.
    /// let rt = Runtime::builder().num_threads(2).wait_policy(WaitPolicy::Active).build()?;
    /// let ran_on = rt.scope(|s| {
    ///     let task = s.task().prefer_worker(1).spawn_with_result(|s| s.worker_index());
    ///     task.join()
    /// });
    /// // Worker 1 was idle: the task ran there.
    /// assert_eq!(ran_on, 1);
    /// # Ok::<(), numatask_sched::BuildError>(())
    /// ```
    #[inline]
    pub fn prefer_worker(mut self, index: usize) -> Self {
        if index < self.scope.num_workers() {
            self.clauses.preferred = Some(index);
        }
        self
    }
}

impl<'s, 'scope> TaskBuilder<'s, 'scope, ()> {
    /// Spawns the task running `f`: it may start at once on another worker, or later on this
    /// one; it finishes before the next `taskwait` of this task returns, and before the scope
    /// ends (see [`Scope::taskwait`], [`Scope::taskgroup`]).
    #[inline]
    pub fn spawn<F>(self, f: F)
    where
        F: FnOnce(&Scope<'scope>) + Send + 'scope,
    {
        let clauses = self.clauses;
        if clauses.undeferred && !clauses.is_final {
            // OpenMP's `if(false)` without more: a plain call on this task's context (no
            // frame, no queue; its children become this task's children).
            return f(self.scope);
        }
        let (is_final, undeferred) = (clauses.is_final, clauses.undeferred);
        let meta = clauses.meta(self.scope);
        self.scope.spawn_with_clauses(meta, is_final, undeferred, f);
    }

    /// Spawns the task running `f` and returns a handle to its result. The result is
    /// available (without waiting) after a `taskwait` of this task, or through
    /// [`TaskHandle::join`], which waits for this task only. The task is a child of this
    /// task even inside a taskgroup (the handle may outlive the group).
    ///
    /// ```
    /// # let rt = numatask_sched::Runtime::builder().num_threads(2).build()?;
    /// fn fib(s: &numatask_sched::Scope<'_>, n: u64) -> u64 {
    ///     if n < 2 {
    ///         return n;
    ///     }
    ///     let a = s.task().spawn_with_result(move |s| fib(s, n - 1));
    ///     let b = fib(s, n - 2);
    ///     a.join() + b
    /// }
    /// assert_eq!(rt.scope(|s| fib(s, 20)), 6765);
    /// # Ok::<(), numatask_sched::BuildError>(())
    /// ```
    #[inline]
    pub fn spawn_with_result<F, T>(self, f: F) -> TaskHandle<'s, T>
    where
        F: FnOnce(&Scope<'scope>) -> T + Send + 'scope,
        T: Send + 'scope,
    {
        let (is_final, undeferred) = (self.clauses.is_final, self.clauses.undeferred);
        let meta = self.clauses.meta(self.scope);
        self.scope
            .spawn_result_with_clauses(meta, is_final, undeferred, f)
    }

    /// Declares the task's dependences as raw byte ranges (OpenMP's `depend` clauses on
    /// addresses), for data the runtime does not know: byte ranges from C, raw pointers. The
    /// task starts once every earlier child of this task whose accesses conflict with `deps`
    /// (share a byte, and one of the two is not `in`; the set kinds as [`AccessKind`] says)
    /// finished, and the tasks spawned later that conflict with it wait for it. If a task it
    /// depends on panicked, the body is dropped without being run. Declarations of one task that overlap are merged byte by byte
    /// (one kind where they agree, `inout` where they differ: see [`crate::depend`]);
    /// [`Access::intensive`] marks the most access-intensive one. The safe form on data is
    /// [`reads`](Self::reads) and the other declarations, on [`crate::data::Blocks`].
    ///
    /// ```
    /// use numatask_sched::depend::{Access, AccessKind};
    /// # let rt = numatask_sched::Runtime::builder().num_threads(2).build()?;
    /// let mut buf = vec![0.0f64; 64];
    /// rt.scope(|s| {
    ///     // A C-like buffer: an address and a length. The closures use the address as an
    ///     // integer, so that they are `Send`.
    ///     let (p, n) = (buf.as_mut_ptr() as usize, buf.len());
    ///     let whole = Access::new(p, n * 8, AccessKind::Out);
    ///     let half = Access::new(p, n / 2 * 8, AccessKind::InOut);
    ///     let at = move |i: usize| (p as *mut f64).wrapping_add(i);
    ///     // SAFETY: each closure writes only the bytes it declares, which stay valid and
    ///     // untouched by anything else until the scope ends.
    ///     unsafe {
    ///         s.task().depend(&[whole]).spawn(move |_| (0..n).for_each(|i| *at(i) = 1.0));
    ///         s.task().depend(&[half]).spawn(move |_| (0..n / 2).for_each(|i| *at(i) += 1.0));
    ///     }
    /// });
    /// assert_eq!(buf[0], 2.0);
    /// assert_eq!(buf[63], 1.0);
    /// # Ok::<(), numatask_sched::BuildError>(())
    /// ```
    ///
    /// The body runs on any worker, so it must be `Send`: `unsafe` covers the memory contract
    /// only. A raw pointer is not `Send`; pass the address as an integer.
    ///
    /// ```compile_fail,E0277
    /// # let rt = numatask_sched::Runtime::builder().num_threads(2).build().unwrap();
    /// let mut x = 0u32;
    /// let p: *mut u32 = &mut x;
    /// rt.scope(|s| unsafe { s.task().depend(&[]).spawn(move |_| *p = 1) });
    /// ```
    #[inline]
    pub fn depend<'d>(self, deps: &'d [Access]) -> RawTaskBuilder<'s, 'scope, 'd> {
        RawTaskBuilder {
            scope: self.scope,
            deps,
            clauses: self.clauses,
        }
    }
}

/// A task with raw `depend` clauses ([`TaskBuilder::depend`]), spawned by the `unsafe`
/// [`spawn`](RawTaskBuilder::spawn).
#[must_use = "a task builder does nothing until `spawn` is called"]
pub struct RawTaskBuilder<'s, 'scope, 'd> {
    scope: &'s Scope<'scope>,
    deps: &'d [Access],
    clauses: Clauses,
}

impl<'s, 'scope> RawTaskBuilder<'s, 'scope, '_> {
    /// [`TaskBuilder::priority`].
    #[inline]
    pub fn priority(mut self, priority: u32) -> Self {
        self.clauses.priority = priority;
        self
    }

    /// [`TaskBuilder::label`].
    #[inline]
    pub fn label(mut self, label: &'static str) -> Self {
        if self.scope.is_tracing() {
            self.clauses.label = Some(label);
        }
        self
    }

    /// Spawns the task: `f` runs once its dependences are met (see
    /// [`TaskBuilder::depend`]).
    ///
    /// # Safety
    ///
    /// - Every memory access `f` makes through what it captures unchecked (raw pointers,
    ///   addresses from C) falls within the declared ranges, reads under any kind and writes
    ///   under a kind that writes (not [`AccessKind::In`]); two `inoutset` members may run at
    ///   the same time and must synchronize their writes themselves.
    /// - That memory stays valid until the task has finished, and nothing else touches it
    ///   meanwhile except sibling tasks that declare it.
    #[inline]
    pub unsafe fn spawn<F>(self, f: F)
    where
        F: FnOnce(&Scope<'scope>) + Send + 'scope,
    {
        spawn_dependent_with(self.scope, self.deps, self.clauses, f);
    }

    /// [`spawn`](Self::spawn), with a handle to the task's result (see
    /// [`TaskBuilder::spawn_with_result`]; a panic of a dependent task reaches this task's
    /// next `taskwait`, as its successors' cancellations do, and `join` then panics with a
    /// message saying the task panicked).
    ///
    /// # Safety
    ///
    /// As for [`spawn`](Self::spawn).
    #[inline]
    pub unsafe fn spawn_with_result<F, T>(self, f: F) -> TaskHandle<'s, T>
    where
        F: FnOnce(&Scope<'scope>) -> T + Send + 'scope,
        T: Send + 'scope,
    {
        spawn_dependent_result_with(self.scope, self.deps, self.clauses, f)
    }
}

/// Spawns a dependent task without a result, undeferred (spawned, then waited for) if the
/// clauses say so.
#[inline]
fn spawn_dependent_with<'scope, F>(scope: &Scope<'scope>, deps: &[Access], clauses: Clauses, f: F)
where
    F: FnOnce(&Scope<'scope>) + Send + 'scope,
{
    if clauses.undeferred {
        // Waited for inside; dropping the handle passes a panic on to this task.
        drop(spawn_dependent_result_with(scope, deps, clauses, f));
        return;
    }
    let is_final = clauses.is_final;
    let meta = clauses.meta(scope);
    scope.spawn_dependent::<F, (), false>(deps, meta, is_final, f);
}

/// Spawns a dependent task with a result handle, waited for at once if undeferred.
#[inline]
fn spawn_dependent_result_with<'s, 'scope, F, T>(
    scope: &'s Scope<'scope>,
    deps: &[Access],
    mut clauses: Clauses,
    f: F,
) -> TaskHandle<'s, T>
where
    F: FnOnce(&Scope<'scope>) -> T + Send + 'scope,
    T: Send + 'scope,
{
    let (is_final, undeferred) = (clauses.is_final, clauses.undeferred);
    clauses.undeferred = false;
    let meta = clauses.meta(scope);
    let frame = scope.spawn_dependent::<F, T, true>(deps, meta, is_final, f);
    // SAFETY: made just above by this scope with a result slot of type `T`.
    let handle = unsafe { scope.handle_of(frame) };
    if undeferred {
        // OpenMP's `if(false)` on a dependent task: the spawning task waits for it.
        handle.wait();
    }
    handle
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
                    let read_only = (!region.writable && AccessKind::$kind.gives_mut())
                        .then_some(AccessKind::$kind);
                    self.declare(std::iter::once(&*region.binding), read_only, view)
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
                    let read_only = (regions.iter().any(|r| !r.writable)
                        && AccessKind::$kind.gives_mut())
                        .then_some(AccessKind::$kind);
                    self.declare(regions.iter().map(|r| &*r.binding), read_only, view)
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
    /// Declares a list of regions of one element type, each with its kind: one declaration
    /// of any number of mixed-kind accesses (a depend list the program computes, with reads
    /// and writes in it). The body gets a `Vec<`[`View`](crate::data::View)`>`, in the list's
    /// order; each view knows where its region starts in the data
    /// ([`View::start`](crate::data::View::start)) and its kind, derefs to `&[T]`, and gives
    /// `&mut [T]` ([`View::get_mut`](crate::data::View::get_mut)) for the kinds that write.
    ///
    /// ```
    /// use numatask_sched::data::Blocks;
    /// use numatask_sched::depend::AccessKind;
    /// # let rt = numatask_sched::Runtime::builder().num_threads(2).build()?;
    /// let mut v: Vec<u32> = (0..40).collect();
    /// rt.scope(|s| {
    ///     let blocks = Blocks::new(&mut v, 10)?;
    ///     // Block 3 becomes the sum of the first elements of the blocks before it.
    ///     let list = (0..3)
    ///         .map(|i| (AccessKind::In, &blocks[i]))
    ///         .chain([(AccessKind::Out, &blocks[3])]);
    ///     s.task().accesses(list).spawn(|_, (views,)| {
    ///         let sum: u32 = views.iter().filter(|v| v.kind() == AccessKind::In).map(|v| v[0]).sum();
    ///         let out = views.into_iter().find(|v| v.start() == 30).and_then(|v| v.into_mut());
    ///         out.expect("block 3 is declared Out")[0] = sum;
    ///     })?;
    ///     Ok::<(), numatask_sched::DependError>(())
    /// })?;
    /// assert_eq!(v[30], 0 + 10 + 20);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn accesses<'r, 'a, T>(
        self,
        list: impl IntoIterator<Item = (AccessKind, &'r Region<'a, T>)>,
    ) -> TaskBuilder<'s, 'scope, <A as Append<Mixed<T>>>::Output>
    where
        A: Append<Mixed<T>>,
        T: Send + Sync + 'static,
        'a: 'scope + 'r,
    {
        let list: Vec<(AccessKind, &'r Region<'a, T>)> = list.into_iter().collect();
        let read_only = list
            .iter()
            .find(|(kind, r)| !r.writable && kind.gives_mut())
            .map(|&(kind, _)| kind);
        let view = Mixed {
            parts: list
                .iter()
                .map(|&(kind, r)| MixedPart {
                    ptr: r.ptr,
                    len: r.len,
                    start: r.start,
                    kind,
                })
                .collect(),
            _invariant: PhantomData,
        };
        self.declare(list.iter().map(|(_, r)| &*r.binding), read_only, view)
    }

    /// Adds `view`, declared on regions whose trackers are `bindings`; `read_only` is the
    /// kind that writes declared on data borrowed shared ([`Blocks::shared`](crate::data::Blocks::shared)),
    /// if any.
    fn declare<'r, V>(
        self,
        bindings: impl Iterator<Item = &'r Cell<u64>>,
        read_only: Option<AccessKind>,
        view: V,
    ) -> TaskBuilder<'s, 'scope, A::Output>
    where
        A: Append<V>,
    {
        let TaskBuilder {
            scope,
            mut deps_id,
            views,
            intensive,
            clauses,
            mut refusal,
        } = self;
        if deps_id == 0 {
            deps_id = scope.child_deps().id;
        }
        if let (Refusal::None, Some(kind)) = (refusal, read_only) {
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
            clauses,
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
}

impl<'s, 'scope, A: sealed::Declared> TaskBuilder<'s, 'scope, A> {
    /// Spawns the task: `f` gets the task's [`Scope`] and the data of the declared regions,
    /// in declaration order, once every earlier sibling task that conflicts with these
    /// accesses finished.
    ///
    /// Errors, and then nothing is spawned: [`DependError::ConflictingAccesses`] if two of the
    /// task's own accesses overlap and one of them gives `&mut`;
    /// [`DependError::ForeignRegion`] if a region belongs to data whose handles are bound to
    /// another task's children; [`DependError::ReadOnlyRegion`] if a region of
    /// [`Blocks::shared`](crate::data::Blocks::shared) data is declared with a kind that
    /// writes.
    #[inline]
    pub fn spawn<F>(self, f: F) -> Result<(), DependError>
    where
        A: for<'t> Views<'t> + Send + 'scope,
        F: for<'t> FnOnce(&'t Scope<'scope>, <A as Views<'t>>::Out) + Send + 'scope,
    {
        let TaskBuilder {
            scope,
            views,
            intensive,
            clauses,
            refusal,
            ..
        } = self;
        with_accesses(views, intensive, refusal, |accesses, views| {
            spawn_dependent_with(scope, accesses, clauses, move |s| {
                // SAFETY: the runtime starts this body only after every earlier sibling that
                // conflicts with these accesses finished, and starts no conflicting sibling
                // before it returns (see `crate::data`); the accesses of this task do not
                // conflict among themselves (`with_accesses` checked); the data lives for
                // `'scope`.
                let data = unsafe { views.views() };
                f(s, data)
            });
        })
    }

    /// [`spawn`](Self::spawn), with a handle to the body's result (see
    /// [`TaskBuilder::spawn_with_result`](TaskBuilder#method.spawn_with_result-1) for tasks
    /// without data). A panic of a dependent task reaches this task's next `taskwait`, as its
    /// successors' cancellations do; `join` then panics with a message saying the task
    /// panicked.
    ///
    /// ```
    /// use numatask_sched::data::Blocks;
    /// # let rt = numatask_sched::Runtime::builder().num_threads(2).build()?;
    /// let mut v = vec![1u64; 100];
    /// let total = rt.scope(|s| {
    ///     let blocks = Blocks::new(&mut v, 10)?;
    ///     s.task().updates(&blocks[0]).spawn(|_, (b,)| b[0] = 10)?;
    ///     let sum = s.task().reads(&blocks[0]).spawn_with_result(|_, (b,)| b.iter().sum::<u64>())?;
    ///     Ok::<_, numatask_sched::DependError>(sum.join())
    /// })?;
    /// assert_eq!(total, 19);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    #[inline]
    pub fn spawn_with_result<F, T>(self, f: F) -> Result<TaskHandle<'s, T>, DependError>
    where
        A: for<'t> Views<'t> + Send + 'scope,
        F: for<'t> FnOnce(&'t Scope<'scope>, <A as Views<'t>>::Out) -> T + Send + 'scope,
        T: Send + 'scope,
    {
        let TaskBuilder {
            scope,
            views,
            intensive,
            clauses,
            refusal,
            ..
        } = self;
        with_accesses(views, intensive, refusal, |accesses, views| {
            spawn_dependent_result_with(scope, accesses, clauses, move |s| {
                // SAFETY: as in `spawn`.
                let data = unsafe { views.views() };
                f(s, data)
            })
        })
    }
}

/// Calls `spawn` with the accesses `views` declare, and `views`, after checking them: the
/// refusal a declaration recorded, and conflicts among the task's own accesses.
#[inline]
fn with_accesses<A: sealed::Sealed, R>(
    views: A,
    intensive: u8,
    refusal: Refusal,
    spawn: impl FnOnce(&[Access], A) -> R,
) -> Result<R, DependError> {
    match refusal {
        Refusal::None => {}
        Refusal::Foreign => return Err(DependError::ForeignRegion),
        Refusal::ReadOnly(kind) => return Err(DependError::ReadOnlyRegion { kind }),
    }
    let count = views.count();
    let mut fixed = [Access::new(0, 0, AccessKind::In); MAX_ACCESSES];
    let mut listed = Vec::new();
    let accesses: &mut [Access] = if count <= MAX_ACCESSES {
        &mut fixed[..count]
    } else {
        listed.resize(count, Access::new(0, 0, AccessKind::In));
        &mut listed
    };
    views.describe(accesses, 0, intensive);
    check_conflicts(accesses)?;
    Ok(spawn(accesses, views))
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::data::Blocks;
    use crate::views::sealed::Sealed;

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
        assert_eq!(Sealed::count(&views), 4);
        let mut out = [Access::new(0, 0, AccessKind::In); 4];
        // Declaration 1 (the list) marked.
        Sealed::describe(&views, &mut out, 0, 0b10);
        let marks: Vec<bool> = out.iter().map(|a| a.intensive).collect();
        assert_eq!(marks, [false, true, true, true]);
        assert_eq!(out[0].kind, AccessKind::InOut);
        assert_eq!(out[3].addr, blocks[2].access(AccessKind::In).addr);
    }
}
