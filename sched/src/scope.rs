//! Scoped tasks: [`Scope`], the handle a task body gets to spawn, wait and group tasks, and
//! [`TaskHandle`], a spawned task's result.
//!
//! # Guarantees
//!
//! - **Borrowing**: a task may borrow anything that outlives `'scope`. The scope (the call to
//!   [`Runtime::scope`](crate::Runtime::scope)) does not return, not even by unwinding, before
//!   every task spawned in it, at any depth, has finished.
//! - **`taskwait`** waits for the children the current task spawned so far, and for their
//!   descendants (a task counts as finished when its subtree is: this is what keeps counters
//!   local to frames). **`taskgroup`** waits for every task spawned inside it, at any depth.
//! - **Panics**: a panic in a task is caught; the other tasks of the scope still run to
//!   completion, except the tasks that depend on the panicking one through `depend` accesses,
//!   which are cancelled (their bodies never see data it may have left half-written: see
//!   [`crate::dependences`]); the first panic is resumed in the code that waits for
//!   the task: the parent's next `taskwait`, the end of the enclosing `taskgroup`, or the end
//!   of the scope (if the parent itself finished meanwhile, the panic climbs to the nearest
//!   waiter). A panic of the scope body itself takes precedence over its tasks' panics. A
//!   task with a result handle ([`TaskBuilder::spawn_with_result`]) keeps its subtree's panic for
//!   the handle: [`TaskHandle::join`] resumes it (as `std::thread::ScopedJoinHandle::join`
//!   returns it), and a handle dropped unjoined passes it on as above. The runtime stays
//!   usable afterwards.
//! - **Waiting** never blocks a worker on something only another task could do without
//!   running that task itself if it can: see the taskwait policy in [`crate::worker`].
//!
//! A `Scope` is neither `Send` nor `Sync`: a task gets its own `&Scope` and cannot capture
//! its parent's, so every spawn happens on the worker that runs the spawning task.
//!
//! # Where scope bodies run
//!
//! A body entered from a worker of the runtime runs right there (`run_scope`); one entered
//! from elsewhere is injected into the pool (`inject_scope`): a job whose header is that of
//! [`Header::injected`], on the injecting thread's stack, which waits for a latch the worker
//! sets after the scope ended. A **detached job** ([`Runtime::spawn`](crate::Runtime::spawn))
//! is injected the same way, but nobody waits for it, so it lives on the heap
//! (`spawn_detached`): the worker that takes it runs the body as a scope body under
//! `catch_unwind`, drops a panic that reaches it (the panic hook reported it where it
//! happened), then frees the job and uncounts it from the runtime's detached jobs, whose
//! count the runtime's drop waits to see at zero. Its `Scope<'static>` lets its tasks capture
//! only `'static` data: the body's own goes away when the body returns, before the scope ends.

use std::cell::{Cell, OnceCell, UnsafeCell};
use std::fmt;
use std::marker::PhantomData;
use std::mem::{self, ManuallyDrop};
use std::panic::{self, AssertUnwindSafe};
use std::ptr::NonNull;
use std::thread;

use crate::depend::Access;
use crate::dependences::{self, ChildDeps};
use crate::job::{self, Header, LineAligned, ResultHead, Task, TaskMeta};
use crate::latch::{InjectLatch, Payload, drop_payload};
use crate::result_state::DONE;
use crate::runtime::Registry;
use crate::unwind::drop_contained;
use crate::worker::WorkerThread;

/// The context of the task (or scope body) that is running: spawn children, wait for them,
/// group them.
///
/// Created by [`Runtime::scope`](crate::Runtime::scope) for the scope body and by the runtime
/// for every task body, which receives `&Scope<'scope>`.
///
/// ```
/// use numatask_sched::Runtime;
///
/// let rt = Runtime::builder().num_threads(2).build()?;
/// let mut halves = [0u64; 2];
/// let data: Vec<u64> = (1..=100).collect();
/// rt.scope(|s| {
///     let (left, right) = halves.split_at_mut(1);
///     let (a, b) = data.split_at(50);
///     s.spawn(move |_| left[0] = a.iter().sum());
///     s.spawn(move |_| right[0] = b.iter().sum());
///     s.taskwait();
/// });
/// assert_eq!(halves[0] + halves[1], 5050);
/// # Ok::<(), numatask_sched::BuildError>(())
/// ```
pub struct Scope<'scope> {
    frame: NonNull<Header>,
    worker: NonNull<WorkerThread>,
    /// When this is a taskgroup's scope, the scope it is in (the task's own or an outer
    /// group's): `taskwait` waits for every level.
    enclosing: Option<NonNull<Scope<'scope>>>,
    /// The dependence tracker of the task's children, created by the first dependent spawn
    /// (a taskgroup's scope uses its task's: dependences order all children of a task).
    deps: ManuallyDrop<OnceCell<Box<ChildDeps>>>,
    /// The scope of the taskgroup running now in this scope's body, if any: tasks spawned,
    /// and waits, through this scope while it runs go to it, as in OpenMP, where every task
    /// the current task creates during a `taskgroup` region belongs to the group.
    group: Cell<Option<NonNull<Scope<'scope>>>>,
    /// Invariant in `'scope` (as `std::thread::Scope`), and neither `Send` nor `Sync`.
    _marker: PhantomData<(&'scope mut &'scope (), *const ())>,
}

impl<'scope> Scope<'scope> {
    /// The scope of a frame whose body runs now on `worker`.
    pub(crate) fn for_frame(frame: NonNull<Header>, worker: &WorkerThread) -> Self {
        Scope {
            frame,
            worker: NonNull::from(worker),
            enclosing: None,
            deps: ManuallyDrop::new(OnceCell::new()),
            group: Cell::new(None),
            _marker: PhantomData,
        }
    }

    /// The scope that spawns and waits through this one act on: this one, or the innermost
    /// taskgroup running in its body.
    #[inline]
    fn current(&self) -> &Scope<'scope> {
        match self.group.get() {
            None => self,
            Some(_) => self.innermost_group(),
        }
    }

    #[cold]
    fn innermost_group(&self) -> &Scope<'scope> {
        let mut scope = self;
        while let Some(group) = scope.group.get() {
            // SAFETY: a group's scope is set here only while its `taskgroup` call runs on this
            // thread, and unset before that call returns or unwinds (`GroupActive`).
            scope = unsafe { group.as_ref() };
        }
        scope
    }

    #[inline]
    fn frame(&self) -> &Header {
        // SAFETY: the frame outlives its body, and a `Scope` lives only during the body (it
        // is created on the body's stack and cannot escape: the closures get `&Scope`).
        unsafe { self.frame.as_ref() }
    }

    #[inline]
    fn worker(&self) -> &WorkerThread {
        // SAFETY: the worker runs the body on this thread; `Scope` is not `Send`.
        unsafe { self.worker.as_ref() }
    }

    /// Spawns a task running `f`. It may start at once on another worker, or later on this
    /// one; it finishes before the next `taskwait` of this task returns, and before the scope
    /// ends. The short form of [`task`](Self::task)`().spawn(f)`, which adds clauses
    /// (priority, `if`, `final`, affinity, dependences, a result).
    #[inline]
    pub fn spawn<F>(&self, f: F)
    where
        F: FnOnce(&Scope<'scope>) + Send + 'scope,
    {
        let this = self.current();
        this.spawn_frame(
            job::heap_task::<F, (), false>(this.frame, this.worker(), None, f),
            false,
        );
    }

    /// `priority` capped at the runtime's `OMP_MAX_TASK_PRIORITY` (0 when that is 0).
    #[inline]
    pub(crate) fn honoured_priority(&self, priority: u32) -> u32 {
        priority.min(self.worker().registry().settings.max_task_priority)
    }

    /// Spawns `f` with `meta` as a child of the current scope (this one, or the taskgroup
    /// running in its body), final if `is_final`, run at once on this thread if `undeferred`.
    #[inline]
    pub(crate) fn spawn_with_clauses<F>(
        &self,
        meta: Option<Box<TaskMeta>>,
        is_final: bool,
        undeferred: bool,
        f: F,
    ) where
        F: FnOnce(&Scope<'scope>) + Send + 'scope,
    {
        let this = self.current();
        let frame = job::heap_task::<F, (), false>(this.frame, this.worker(), meta, f);
        if is_final {
            // SAFETY: the frame was made just above and is not published yet.
            unsafe { Header::mark_final(frame) };
        }
        this.spawn_frame(frame, undeferred);
    }

    /// Spawns `f` as [`spawn_with_clauses`](Self::spawn_with_clauses) does, with a handle to
    /// its result.
    #[inline]
    pub(crate) fn spawn_result_with_clauses<'s, F, T>(
        &'s self,
        meta: Option<Box<TaskMeta>>,
        is_final: bool,
        undeferred: bool,
        f: F,
    ) -> TaskHandle<'s, T>
    where
        F: FnOnce(&Scope<'scope>) -> T + Send + 'scope,
        T: Send + 'scope,
    {
        // Not redirected to a taskgroup running in this scope's body (unlike the other
        // spawns): the handle borrows this scope and may outlive the group, and an unjoined
        // handle passes its task's panic to the frame the task reports to, which must then
        // still be alive. Its task is this task's child, whose handle waits for it.
        let frame = job::heap_task::<F, T, true>(self.frame, self.worker(), meta, f);
        if is_final {
            // SAFETY: the frame was made just above and is not published yet.
            unsafe { Header::mark_final(frame) };
        }
        let handle = TaskHandle {
            head: frame.cast(),
            _marker: PhantomData,
        };
        self.spawn_frame(frame, undeferred);
        handle
    }

    /// Whether this task is a final task or runs inside one (OpenMP's `omp_in_final`): then
    /// every task it spawns runs at once, inline (see
    /// [`TaskBuilder::final_if`](crate::TaskBuilder::final_if)).
    #[inline]
    pub fn in_final(&self) -> bool {
        self.frame().is_final()
    }

    #[inline]
    fn spawn_frame(&self, frame: NonNull<Header>, undeferred: bool) {
        self.frame().children.on_spawn();
        if undeferred || self.frame().is_final() {
            // An included or undeferred task: run now, on this thread.
            self.worker().run_undeferred(Task::from_header(frame));
        } else {
            self.worker().push(Task::from_header(frame));
        }
    }

    /// Whether the runtime records tasks (then task labels are worth storing).
    pub(crate) fn is_tracing(&self) -> bool {
        self.worker().registry().tracer.is_some()
    }

    /// How many NUMA nodes the runtime's topology has.
    pub(crate) fn num_nodes(&self) -> usize {
        self.worker().registry().topology.num_nodes()
    }

    /// Whether a footprint given to a task is used: by the locality-aware scheduler, or by
    /// the tracer (which records each task's bytes per node). Work stealing without a trace
    /// ignores footprints, and an optional one is not worth its allocation then.
    pub(crate) fn uses_footprints(&self) -> bool {
        self.worker().registry().scheduler.reads_footprints() || self.is_tracing()
    }

    /// The scope of the task itself: this one, or, inside taskgroups, the one they are in.
    fn task_scope(&self) -> &Scope<'scope> {
        let mut task_scope = self;
        while let Some(enclosing) = task_scope.enclosing {
            // SAFETY: a taskgroup's scope lives inside the call of its enclosing scope.
            task_scope = unsafe { enclosing.as_ref() };
        }
        task_scope
    }

    /// The dependences of this task's children (see [`crate::dependences`]).
    pub(crate) fn child_deps(&self) -> &ChildDeps {
        self.task_scope()
            .deps
            .get_or_init(|| Box::new(ChildDeps::new()))
    }

    /// Spawns `f` as a child that runs once the earlier children it conflicts with on
    /// `accesses` finished (the safe and raw dependent spawns end here). With `handle`, the
    /// child is this scope's own (not a taskgroup's running in its body: see
    /// [`spawn_result_with_clauses`](Self::spawn_result_with_clauses)) and its frame keeps
    /// a result for a [`TaskHandle`].
    #[inline]
    pub(crate) fn spawn_dependent<F, T, const HANDLE: bool>(
        &self,
        accesses: &[Access],
        meta: Option<Box<TaskMeta>>,
        is_final: bool,
        f: F,
    ) -> NonNull<Header>
    where
        F: FnOnce(&Scope<'scope>) -> T + Send + 'scope,
        T: Send + 'scope,
    {
        let this = if HANDLE { self } else { self.current() };
        let frame = job::heap_task::<F, T, HANDLE>(this.frame, this.worker(), meta, f);
        if is_final {
            // SAFETY: the frame was made just above and is not published yet.
            unsafe { Header::mark_final(frame) };
        }
        this.frame().children.on_spawn();
        // In a final task every earlier sibling was included and has finished, so the task
        // is ready at once (or cancelled, behind a sibling that panicked) and runs inline.
        dependences::submit(
            &this.child_deps().tracker,
            accesses,
            Task::from_header(frame),
            this.worker(),
            this.frame().is_final(),
        );
        frame
    }

    /// A handle to the result of the task whose frame `frame` is.
    ///
    /// # Safety
    ///
    /// `frame` was made by [`spawn_dependent`](Self::spawn_dependent) of this scope with
    /// `HANDLE` and result type `T`, and no other handle to it exists.
    pub(crate) unsafe fn handle_of<'s, T>(&'s self, frame: NonNull<Header>) -> TaskHandle<'s, T> {
        TaskHandle {
            head: frame.cast(),
            _marker: PhantomData,
        }
    }

    /// Waits until every child this task spawned so far (and their descendants) finished,
    /// running them, or stealing their descendants, meanwhile: inside taskgroups, the children
    /// spawned in each enclosing group and before the outermost one too. Resumes the first
    /// panic of those children, if any (a task's own panic before the cancellation it caused),
    /// except the panics of children whose [`TaskHandle`] is still alive: those wait for
    /// [`TaskHandle::join`], or for the handle's drop.
    #[track_caller]
    pub fn taskwait(&self) {
        let this = self.current();
        for level in this.levels() {
            level.wait_children();
        }
        if let Some(payload) = this.take_panic() {
            resume_task_panic(payload);
        }
    }

    /// This scope, then the scopes of the taskgroups it is in, out to the task's own.
    fn levels(&self) -> impl Iterator<Item = &Scope<'scope>> {
        // SAFETY: a taskgroup's scope lives inside the call of its enclosing scope.
        std::iter::successors(Some(self), |s| s.enclosing.map(|e| unsafe { e.as_ref() }))
    }

    /// Takes the panic of a child of the task, at any of its levels: a real panic before a
    /// cancellation (which a dependence on a panicked task caused: that panic is the news). A
    /// cancellation that a waiter deeper down already raised (and the hook reported) counts as
    /// a real panic here: it is what that child's subtree ended with.
    fn take_panic(&self) -> Option<Payload> {
        let mut cancelled = None;
        for level in self.levels() {
            if let Some(payload) = level.frame().panic.take() {
                if !is_cancellation(&payload) {
                    if let Some(c) = cancelled {
                        drop_payload(c);
                    }
                    return Some(payload);
                }
                match cancelled {
                    None => cancelled = Some(payload),
                    Some(_) => drop_payload(payload),
                }
            }
        }
        cancelled
    }

    /// Waits for the frame's children, never unwinding.
    pub(crate) fn wait_children(&self) {
        let frame = self.frame();
        let children = &frame.children;
        if children.all_done() {
            return;
        }
        // A task of a taskgroup may need an earlier sibling outside the group (a dependence):
        // the wait may need what descends from the task that owns the group.
        let needs = self.task_scope().frame();
        let done = self.worker().wait_until(
            frame,
            needs,
            || children.all_done(),
            || {
                children.transfer();
                true
            },
        );
        debug_assert!(done, "a wait that never gives up ended early");
        children.end_wait();
    }

    /// Runs `f` and then waits for every task spawned inside it, at any depth (OpenMP's
    /// `taskgroup`). Tasks spawned before the group are not waited for. Every task this task
    /// spawns while `f` runs is in the group, through `f`'s scope or through this one (as in
    /// OpenMP, where the group is a region of the task, not a scope of its own), but a task
    /// with a result handle spawned through this one ([`spawn_with_result`]: its handle may
    /// outlive the group, and is what waits for it); a `taskwait` inside `f` waits for the
    /// group's tasks and the task's earlier children.
    ///
    /// Resumes the first panic of `f` or of those tasks; when that is only the cancellation
    /// of a task of the group behind a panicked predecessor spawned before the group, it
    /// resumes instead the panic waiting in the task's frame, which is the predecessor's (or,
    /// if the program caught that one already, the panic of another earlier child). A
    /// cancellation a waiter inside the group already raised counts as a panic of its own.
    ///
    /// [`spawn_with_result`]: crate::TaskBuilder::spawn_with_result
    #[track_caller]
    pub fn taskgroup<R>(&self, f: impl FnOnce(&Scope<'scope>) -> R) -> R {
        let this = self.current();
        let worker = this.worker();
        let group = LineAligned(Header::group(this.frame(), worker.index()));
        let scope = Scope {
            frame: NonNull::from(&*group),
            worker: this.worker,
            enclosing: Some(NonNull::from(this)),
            deps: ManuallyDrop::new(OnceCell::new()),
            group: Cell::new(None),
            _marker: PhantomData,
        };
        let result = {
            // Spawns through `this` (or a scope it is the group of) while `f` runs go to the
            // group.
            let _active = GroupActive::enter(this, &scope);
            panic::catch_unwind(AssertUnwindSafe(|| f(&scope)))
        };
        scope.wait_children();
        let mut child_panic = group.panic.take();
        if result.is_ok()
            && child_panic.as_ref().is_some_and(is_cancellation)
            && let Some(cause) = this.levels().find_map(|l| l.frame().panic.take())
        {
            // A task of the group was cancelled because a task spawned before the group
            // panicked: that panic, waiting in the task's frame (or an enclosing group's),
            // is what to report. (Not when the body panicked: its panic wins, and the waiting
            // one stays for the next taskwait.)
            if let Some(c) = child_panic.replace(cause) {
                drop_payload(c);
            }
        }
        match result {
            Err(payload) => {
                // The body's panic wins; the children's is dropped here rather than while
                // unwinding, where a panicking destructor would abort.
                if let Some(p) = child_panic {
                    drop_payload(p);
                }
                resume_task_panic(payload)
            }
            Ok(value) => {
                if let Some(payload) = child_panic {
                    // The body's value goes first, its destructor's panic contained (dropped
                    // while unwinding, a panicking destructor would abort).
                    drop_contained(value);
                    resume_task_panic(payload);
                }
                value
            }
        }
    }

    /// Runs `a` as a task and `b` inline, and returns both results once `a` finished (the
    /// shape of `rayon::join`). Unlike spawned tasks, `a` and `b` may borrow from the caller's
    /// stack: `join` waits for `a` before it returns, even when `b` panics. A panic of `b`,
    /// else of `a`, is resumed here.
    ///
    /// ```
    /// # let rt = numatask_sched::Runtime::builder().num_threads(2).build()?;
    /// let v: Vec<u32> = (1..=10).collect();
    /// let (left, right) = v.split_at(5);
    /// let (a, b) = rt.scope(|s| s.join(|_| left.iter().sum::<u32>(), |_| right.iter().sum::<u32>()));
    /// assert_eq!(a + b, 55);
    /// # Ok::<(), numatask_sched::BuildError>(())
    /// ```
    pub fn join<A, B, RA, RB>(&self, a: A, b: B) -> (RA, RB)
    where
        A: FnOnce(&Scope<'scope>) -> RA + Send,
        RA: Send,
        B: FnOnce(&Scope<'scope>) -> RB,
    {
        self.join_with(None, a, b)
    }

    /// [`join`](Self::join), with `meta` (footprint and label) for the task running `a`.
    pub(crate) fn join_with<A, B, RA, RB>(
        &self,
        meta: Option<Box<TaskMeta>>,
        a: A,
        b: B,
    ) -> (RA, RB)
    where
        A: FnOnce(&Scope<'scope>) -> RA + Send,
        RA: Send,
        B: FnOnce(&Scope<'scope>) -> RB,
    {
        let this = self.current();
        // SAFETY: the task is waited for below (`join_inner`) before this function returns or
        // unwinds: `b`'s panic is caught first, and the wait itself does not unwind (its one
        // panic, a check that cannot fail for a task made here, aborts instead: see below).
        let frame =
            unsafe { job::heap_task_unchecked::<_, RA, true>(this.frame, this.worker(), meta, a) };
        // `a`'s panic stays in its frame for this call to resume (`join_inner`): through the
        // parent frame it could lose to a sibling's earlier panic (the frame keeps the first).
        let handle: TaskHandle<'_, RA> = TaskHandle {
            head: frame.cast(),
            _marker: PhantomData,
        };
        this.spawn_frame(frame, false);
        let rb = panic::catch_unwind(AssertUnwindSafe(|| b(this)));
        // `a` may borrow this call's stack: were the wait to unwind (its check that the task
        // is not buried under the caller, true of a task made here), the frame would go while
        // `a` still ran. The process aborts instead.
        let guard = crate::worker::AbortOnUnwind;
        let ra = handle.join_inner(Some(this.worker()));
        std::mem::forget(guard);
        // Before a panic resumes, the other side's result (or `a`'s panic payload) is dropped
        // with its destructor's panic contained: dropped while unwinding, a panicking
        // destructor would abort, and it must not replace the panic resumed.
        match (ra, rb) {
            (Ok(ra), Ok(rb)) => (ra, rb),
            (ra, Err(payload)) => {
                drop_contained(ra);
                resume_task_panic(payload)
            }
            (Err(payload), rb) => {
                drop_contained(rb);
                resume_task_panic(payload)
            }
        }
    }

    /// Index of the worker running this task.
    pub fn worker_index(&self) -> usize {
        self.worker().index()
    }

    /// NUMA node of the worker running this task.
    pub fn node(&self) -> usize {
        self.worker().place().node
    }

    /// Number of workers of the runtime.
    pub fn num_workers(&self) -> usize {
        self.worker().registry().places.len()
    }
}

impl Drop for Scope<'_> {
    /// Most tasks spawn no dependent task: their scope's drop is one check, inline (the
    /// compiler's drop glue for the cell was a call per task).
    #[inline]
    fn drop(&mut self) {
        if self.deps.get().is_some() {
            // SAFETY: the scope's drop, once; the field is not used after.
            unsafe { drop_deps(&mut self.deps) };
        }
    }
}

/// Drops a scope's dependence tracker.
///
/// # Safety
///
/// Called once, from the scope's drop: `deps` is not used after.
#[cold]
#[inline(never)]
unsafe fn drop_deps(deps: &mut ManuallyDrop<OnceCell<Box<ChildDeps>>>) {
    // SAFETY: the caller's promise.
    unsafe { ManuallyDrop::drop(deps) }
}

impl fmt::Debug for Scope<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Scope")
            .field("worker", &self.worker_index())
            .field("in_taskgroup", &self.enclosing.is_some())
            .finish()
    }
}

/// The result of a task spawned with [`TaskBuilder::spawn_with_result`](crate::TaskBuilder::spawn_with_result).
///
/// The value can be taken with [`join`](Self::join): immediately after a `taskwait` of the
/// spawning task, otherwise after waiting for this task. Dropping the handle drops the value,
/// and passes a panic of the task on to the spawning task's next `taskwait` or scope end; a
/// handle given to `mem::forget` keeps it (and leaks the task's frame), so that nothing
/// reports it: neither the task's own panic nor that of any task it spawned, whose panics
/// climb to the task's frame.
///
/// The handle stays with the task that spawned it: it is neither `Send` nor `Sync`, and it
/// borrows the `&Scope` it was spawned from, so it cannot be put where another task could
/// take it (a `thread_local!` needs `'static`), out of the scope, or out of a taskgroup's
/// closure. Only the spawning task (or code it calls inline) waits for it, which is what
/// keeps waiting free of deadlock (see the taskwait policy in the `worker` module).
///
/// ```compile_fail,E0521
/// use std::cell::RefCell;
/// use numatask_sched::{Runtime, TaskHandle};
///
/// thread_local! {
///     static KEPT: RefCell<Option<TaskHandle<'static, u32>>> = const { RefCell::new(None) };
/// }
/// let rt = Runtime::builder().num_threads(2).build().unwrap();
/// rt.scope(|s| {
///     let h = s.task().spawn_with_result(|_| 5u32);
///     // error: the handle borrows `s`, which does not live for 'static
///     KEPT.with(|k| *k.borrow_mut() = Some(h));
/// });
/// ```
pub struct TaskHandle<'s, T> {
    head: NonNull<ResultHead<T>>,
    _marker: PhantomData<(&'s (), *const T)>,
}

impl<T> TaskHandle<'_, T> {
    #[inline]
    fn head(&self) -> &ResultHead<T> {
        // SAFETY: the frame lives until both the task finished and the handle let go.
        unsafe { self.head.as_ref() }
    }

    /// Whether the task (and its descendants) finished.
    pub fn is_finished(&self) -> bool {
        self.head().state.get() == DONE
    }

    /// The task's result, waiting for the task if it has not finished (the waiting worker
    /// runs the task itself or its descendants meanwhile).
    ///
    /// # Panics
    ///
    /// If the task (or a task it spawned) panicked: its panic is resumed here, and is then
    /// no longer the scope's to report, as with [`std::thread::ScopedJoinHandle::join`]
    /// (the panic of a task whose handle is dropped unjoined reaches the spawning task's
    /// next `taskwait` or the scope end, or the end of the taskgroup whose scope spawned it;
    /// a task spawned with a handle through the enclosing scope while a group runs is not in
    /// the group, see [`Scope::taskgroup`]).
    #[track_caller]
    pub fn join(self) -> T {
        match self.join_inner(WorkerThread::current()) {
            Ok(value) => value,
            Err(payload) => resume_task_panic(payload),
        }
    }

    /// Waits until the task (and its descendants) finished, running other tasks meanwhile as
    /// [`join`](Self::join) does.
    pub(crate) fn wait(&self) {
        self.wait_on(WorkerThread::current());
    }

    /// [`wait`](Self::wait) on `worker`, the calling thread's worker.
    fn wait_on(&self, worker: Option<&WorkerThread>) {
        let head = self.head();
        if head.state.get() == DONE {
            return;
        }
        match worker {
            Some(worker) => {
                let mut announced = false;
                let waited = worker.wait_until(
                    &head.header,
                    &head.header,
                    || head.state.get() == DONE,
                    // Each time the worker's own deque is empty and the task not done.
                    || {
                        if !announced {
                            // The handle borrows the spawning task's `&Scope`, so only
                            // that task (or code it calls inline) gets here: the task
                            // waited for descends from the caller and cannot be buried
                            // under it on this worker's stack. Kept as a check, were that
                            // argument to break (a panic below is better than a hang);
                            // made here rather than before the wait, as it walks every
                            // task running on this worker, and a join whose task is
                            // still on top of the deque (the common case) runs it in
                            // `wait_until`'s fast path and never gets here.
                            if worker.is_running_under_caller(&head.header) {
                                return false;
                            }
                            announced = true;
                            head.state.announce_join();
                        }
                        true
                    },
                );
                assert!(
                    waited,
                    "numatask: TaskHandle::join of a task that is running on this worker \
                     under the caller: it cannot finish before the caller returns"
                );
            }
            // Not on a worker: a handle lives within its spawning task, which runs on a
            // worker, so this is not reached; should it be, wait politely.
            None => {
                while head.state.get() != DONE {
                    thread::yield_now();
                }
            }
        }
    }

    /// The result, or the panic of the task's subtree. `worker`: the calling thread's worker.
    fn join_inner(self, worker: Option<&WorkerThread>) -> Result<T, Payload> {
        self.wait_on(worker);
        let head = self.head();
        // SAFETY: the state is `DONE` and we own the handle.
        let value = unsafe { head.take_result() };
        // The frame kept the first panic of the task's subtree (its own, a descendant's, or
        // its cancellation) for this handle (`job::release_to_handle`); it outranks a value.
        let value = match (head.header.panic.take(), value) {
            (None, Some(value)) => Ok(value),
            (Some(payload), value) => {
                drop_contained(value);
                Err(payload)
            }
            (None, None) => {
                let payload: Payload = Box::new("numatask: the task behind this handle panicked");
                Err(payload)
            }
        };
        let frame = self.head.cast::<Header>();
        mem::forget(self);
        // SAFETY: the task finished and the handle lets go now.
        unsafe { job::free_finished(frame, worker) };
        value
    }
}

impl<T> Drop for TaskHandle<'_, T> {
    fn drop(&mut self) {
        if self.head().state.drop_handle() == DONE {
            // The task finished and kept its panic, if any, for this handle: unjoined, it goes
            // to the spawning task's frame as a spawned task's panic does.
            // SAFETY: the task finished and this handle is its frame's last user; the parent
            // is alive: the handle borrows its `Scope` and lives on its thread.
            unsafe { job::pass_panic_to_parent(self.head.cast()) };
            // SAFETY: the task finished; we are the last user.
            unsafe { job::free_finished(self.head.cast(), WorkerThread::current()) };
        }
    }
}

impl<T> fmt::Debug for TaskHandle<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TaskHandle")
            .field("finished", &self.is_finished())
            .finish()
    }
}

/// Directs the spawns and waits made through a scope to its taskgroup's scope while the
/// group's body runs ([`Scope::taskgroup`]); undone on drop, unwinding included.
struct GroupActive<'a, 'scope> {
    outer: &'a Scope<'scope>,
}

impl<'a, 'scope> GroupActive<'a, 'scope> {
    fn enter(outer: &'a Scope<'scope>, group: &'a Scope<'scope>) -> Self {
        outer.group.set(Some(NonNull::from(group)));
        GroupActive { outer }
    }
}

impl Drop for GroupActive<'_, '_> {
    fn drop(&mut self) {
        self.outer.group.set(None);
    }
}

/// Whether `payload` is the panic of a task cancelled behind a panicked predecessor, not yet
/// resumed by a waiter.
fn is_cancellation(payload: &Payload) -> bool {
    payload.is::<dependences::Cancelled>()
}

/// Resumes the panic of a task (or of its subtree) in the code that waits for it. A task's
/// own panic was reported by the panic hook where it happened and resumes silently, as
/// `resume_unwind` does; a cancellation never went through the hook (the task did not run),
/// so the first waiter raises [`CANCELLED`](dependences::CANCELLED) as a new panic, which the
/// hook reports here (uncaught, it would otherwise end the program without a word), and the
/// waiters it unwinds through next resume that silently, as any reported panic.
#[track_caller]
pub(crate) fn resume_task_panic(payload: Payload) -> ! {
    if is_cancellation(&payload) {
        drop_payload(payload);
        panic::panic_any(dependences::CANCELLED)
    }
    panic::resume_unwind(payload)
}

/// Runs a scope body on `worker` (the calling thread's worker): a root frame on this stack,
/// the body, then the wait for every task of the scope.
pub(crate) fn run_scope<'scope, F, R>(worker: &WorkerThread, f: F) -> R
where
    F: FnOnce(&Scope<'scope>) -> R,
{
    let root = LineAligned(Header::root(worker.index()));
    let scope = Scope::for_frame(NonNull::from(&*root), worker);
    let result = panic::catch_unwind(AssertUnwindSafe(|| f(&scope)));
    scope.wait_children();
    let child_panic = root.panic.take();
    match result {
        Err(payload) => {
            // As in `taskgroup`: the body's panic wins.
            if let Some(p) = child_panic {
                drop_payload(p);
            }
            resume_task_panic(payload)
        }
        Ok(value) => {
            if let Some(payload) = child_panic {
                // As in `taskgroup`: the body's value goes before the panic resumes.
                drop_contained(value);
                resume_task_panic(payload);
            }
            value
        }
    }
}

/// A scope body sent into the pool by a thread outside it, which waits until it ran (aligned
/// like a heap frame: see [`Header`]).
#[repr(C, align(64))]
struct InjectedScope<F, R> {
    header: Header,
    func: UnsafeCell<Option<F>>,
    result: UnsafeCell<Option<thread::Result<R>>>,
    latch: std::sync::Arc<InjectLatch>,
}

/// The table of one `InjectedScope<F, R>` instantiation (a `'static` promoted constant).
struct InjectedVTable<'scope, F, R>(PhantomData<(&'scope (), F, R)>);

impl<'scope, F, R> InjectedVTable<'scope, F, R>
where
    F: FnOnce(&Scope<'scope>) -> R + Send,
    R: Send,
{
    const VTABLE: job::VTable = job::VTable::injected(execute_injected::<F, R>);
}

/// Runs a scope body on a worker of `registry` from a thread that is not one of its workers,
/// until the scope ended. A thread outside any pool blocks meanwhile; a worker of another
/// pool keeps running its own pool's tasks (as in a `taskwait`), so that two pools whose
/// scopes nest in each other cannot wait for each other with every worker blocked.
pub(crate) fn inject_scope<'scope, F, R>(registry: &Registry, f: F) -> R
where
    F: FnOnce(&Scope<'scope>) -> R + Send,
    R: Send,
{
    let here = WorkerThread::current();
    let latch = std::sync::Arc::new(match here {
        Some(worker) => {
            InjectLatch::for_worker(std::sync::Arc::clone(worker.registry()), worker.index())
        }
        None => InjectLatch::for_thread(),
    });
    let job = InjectedScope {
        header: Header::injected(&InjectedVTable::<'scope, F, R>::VTABLE),
        func: UnsafeCell::new(Some(f)),
        result: UnsafeCell::new(None),
        latch: std::sync::Arc::clone(&latch),
    };
    registry.scheduler.inject(
        Task::from_header(NonNull::from(&job).cast::<Header>()),
        &registry.sleep,
    );
    match here {
        // The job's header is no frame of this pool: short of stack, the worker runs none of
        // its pool's tasks but the scopes injected into it.
        Some(worker) => worker.wait_until_injected_scope(&job.header, || latch.is_set()),
        None => latch.wait_blocking(),
    }
    // SAFETY: the worker wrote the result before setting the latch and does not touch the
    // job afterwards.
    match unsafe { (*job.result.get()).take() } {
        Some(Ok(value)) => value,
        Some(Err(payload)) => resume_task_panic(payload),
        None => unreachable!("an injected scope sets its latch only after storing its result"),
    }
}

/// The `execute` of a scope injected from outside the pool: runs the scope body on `worker`,
/// waits for its tasks, stores the result and sets the latch the injecting thread waits on.
///
/// # Safety
///
/// `frame` is the header of a live `InjectedScope<F, R>` on the injecting thread's stack,
/// which stays there until the latch is set; it is run exactly once.
unsafe fn execute_injected<'scope, F, R>(frame: NonNull<Header>, worker: &WorkerThread)
where
    F: FnOnce(&Scope<'scope>) -> R + Send,
    R: Send,
{
    // SAFETY: the header is the first field of the `repr(C)` job, which lives on the
    // injecting thread's stack until we set the latch.
    let job = unsafe { frame.cast::<InjectedScope<F, R>>().as_ref() };
    // SAFETY: the job runs once; nobody else touches `func` meanwhile.
    let result = match unsafe { (*job.func.get()).take() } {
        Some(f) => panic::catch_unwind(AssertUnwindSafe(|| run_scope(worker, f))),
        None => return,
    };
    // The latch is shared: setting it touches nothing the injecting thread frees once it
    // sees it set, as `job` (on that thread's stack) is.
    let latch = std::sync::Arc::clone(&job.latch);
    // SAFETY: the injecting thread reads `result` only after the latch is set.
    unsafe { *job.result.get() = Some(result) };
    latch.set();
}

/// A scope body queued by [`Runtime::spawn`](crate::Runtime::spawn), which nobody waits for:
/// on the heap, freed by the worker that ran it (aligned like a heap frame: see [`Header`]).
#[repr(C, align(64))]
struct DetachedScope<F> {
    header: Header,
    /// Taken by the worker that runs the job; a `ManuallyDrop`, so that freeing the job
    /// afterwards drops the header only.
    func: ManuallyDrop<F>,
}

/// The table of one `DetachedScope<F>` instantiation (a `'static` promoted constant).
struct DetachedVTable<F>(PhantomData<F>);

impl<F> DetachedVTable<F>
where
    F: FnOnce(&Scope<'static>) + Send + 'static,
{
    const VTABLE: job::VTable = job::VTable::injected(execute_detached::<F>);
}

/// Queues `f` as a detached scope body on `registry`'s pool and returns at once; the job is
/// counted in the registry's detached jobs until it ran (see `crate::runtime`'s `detached`).
pub(crate) fn spawn_detached<F>(registry: &Registry, f: F)
where
    F: FnOnce(&Scope<'static>) + Send + 'static,
{
    let job = Box::new(DetachedScope {
        header: Header::injected(&DetachedVTable::<F>::VTABLE),
        func: ManuallyDrop::new(f),
    });
    // The header is the first field of the `repr(C)` job: the job's address is the header's.
    let frame = NonNull::from(Box::leak(job)).cast::<Header>();
    // Counted before it is queued: a drop of the runtime that waits for the count sees it.
    registry.detached.start();
    registry
        .scheduler
        .inject(Task::from_header(frame), &registry.sleep);
}

/// The `execute` of a detached scope body: runs it on `worker` as a scope body (its tasks
/// included), drops its panic (the hook reported it; nobody waits for the job), frees the job
/// and uncounts it.
///
/// # Safety
///
/// `frame` is the header of a `DetachedScope<F>` that [`spawn_detached`] leaked, queued on
/// `worker`'s pool; it is run exactly once and nobody else touches it.
unsafe fn execute_detached<F>(frame: NonNull<Header>, worker: &WorkerThread)
where
    F: FnOnce(&Scope<'static>) + Send + 'static,
{
    let job = frame.cast::<DetachedScope<F>>().as_ptr();
    // SAFETY: the job is alive (freed below) and ours alone; its closure is taken once, here.
    let f = unsafe { ManuallyDrop::take(&mut (*job).func) };
    // The job stays allocated while the body runs: the worker knows the task it runs by its
    // header's address (`WorkerThread::is_running_under_caller`), which a frame allocated in
    // freed memory meanwhile must not share.
    if let Err(payload) = panic::catch_unwind(AssertUnwindSafe(|| run_scope(worker, f))) {
        drop_payload(payload);
    }
    // SAFETY: `spawn_detached` leaked the job from a `Box`, nothing uses it any more, and its
    // closure was taken: this drops the header and frees the memory.
    drop(unsafe { Box::from_raw(job) });
    let registry = worker.registry();
    registry.detached.finish(&registry.sleep);
}
