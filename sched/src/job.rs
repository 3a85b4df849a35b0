//! Type-erased tasks: the frame every task, scope root and taskgroup has, and [`Task`], the
//! pointer to a frame that schedulers queue.
//!
//! # Frames
//!
//! A frame starts with a `Header`: a table of functions (run the task; cancel it; release
//! its memory), the links to its parent frame, its depth, its child counter (see
//! `crate::child_counter`), the slot where a panic waits for whoever waits for the frame, an
//! optional [`TaskMeta`] (a footprint hint and a label), and, for a task with `depend`
//! accesses, its dependence handle (see [`crate::dependences`]).
//!
//! A spawned task's frame is one heap allocation, `HeapTask<F, T>`: the header, the slot for
//! the task's result `T` and the closure `F`, with `#[repr(C)]` so that the header and the
//! result slot sit at offsets that do not depend on `F` (a result handle knows `T` but not
//! `F`). Scope roots and taskgroups have a header on their owner's stack.
//!
//! # Lifetime
//!
//! A heap frame lives until its subtree is finished (its body returned and every child's
//! subtree finished), not just until its body returned: its children decrement its counter.
//! So every ancestor of a queued or running task is alive, which is what lets a waiting
//! worker walk a stolen task's parent links to decide whether it may run it (see
//! `Header::is_descendant_of`). The thread that finishes the subtree releases the frame; a
//! frame with a result handle is freed by the second of the task and the handle to let go.
//!
//! Header fields are written before the frame is published (pushed to a deque, whose
//! `Release`/`Acquire` pair orders them for the thread that takes it) and not written again,
//! except for the atomics and the owner's cells of the counter, and the dependence handle: a
//! dependent task is published only when its parent's tracker releases it, and the releasing
//! thread, which then holds the task alone, stores the handle before it pushes the task; the
//! worker that runs the task takes the handle back after the body.
//!
//! # Where later features plug in
//!
//! - **Footprint**: [`TaskMeta::footprint`] is what a locality-aware
//!   [`Scheduler::push`](crate::scheduler::Scheduler::push) reads through
//!   [`Task::footprint`] to deal a task to a node (Algorithm 1); it costs one null pointer per
//!   task without one.
//! - **Dependences** ([`crate::dependences`]): a task with `depend` accesses is counted as a
//!   child at spawn like any other (so `taskwait`, taskgroups and scope ends need nothing
//!   new), but is submitted to its parent's [`DepTracker`](crate::depend::DepTracker) instead
//!   of being pushed; the tracker hands it back when its predecessors' *bodies* finished
//!   (OpenMP's rule), and the worker that finished the predecessor pushes it. `execute_heap`
//!   completes the handle right after the body, before the subtree bookkeeping; a task the
//!   tracker cancels (a predecessor panicked) goes through the table's `cancel` instead of
//!   `execute`. Deferred tasks are descendants of the waiting frame like their siblings, so
//!   the taskwait policy needs no change. [`Task::footprint`] of a dependent task is its
//!   `depend` list.

use std::alloc::{self, Layout};
use std::cell::UnsafeCell;
use std::fmt;
use std::marker::PhantomData;
use std::mem::ManuallyDrop;
use std::panic::{self, AssertUnwindSafe};
use std::ptr::{self, NonNull};

use crate::blocks::{class_layout, class_of};
use crate::child_counter::{ChildCounter, ChildDone};
use crate::depend::{Access, DepHandle};
use crate::latch::PanicSlot;
use crate::result_state::{DROPPED, JOINING, ResultState};
use crate::scope::Scope;
use crate::worker::WorkerThread;

/// What a task carries besides its closure, when it carries anything: its data footprint,
/// the byte ranges it touches as [`depend`](crate::depend) accesses. A locality-aware
/// scheduler deals the task to the node holding most of these bytes (Algorithm 1); with
/// dependences, the same list is the task's `depend` clause.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TaskMeta {
    /// The byte ranges the task touches.
    pub footprint: Box<[Access]>,
    /// A name for the task in traces (`"task"` when `None`).
    pub label: Option<&'static str>,
    /// The task's priority (OpenMP's `priority` clause; 0, the default, is the lowest): honoured
    /// up to the runtime's `OMP_MAX_TASK_PRIORITY`, ignored when that is 0.
    pub priority: u32,
    /// The worker the task prefers to run on
    /// ([`TaskBuilder::prefer_worker`](crate::TaskBuilder::prefer_worker)), an index of its
    /// runtime's workers.
    pub preferred: Option<usize>,
}

/// The operations every frame kind provides.
pub(crate) struct VTable {
    /// Runs the task on `worker`, then finishes its frame. Called once.
    execute: unsafe fn(NonNull<Header>, &WorkerThread),
    /// Finishes the frame of a task that must not run (its dependences were cancelled): drops
    /// its closure, reports the cancellation as its panic. Called once, instead of `execute`.
    cancel: unsafe fn(NonNull<Header>, &WorkerThread),
    /// The subtree is finished; let go of the frame (free it, or hand it to a result handle).
    /// `same_thread`: the caller runs on the thread of the parent's owner.
    release: unsafe fn(NonNull<Header>, &WorkerThread, bool),
    /// Frees a heap frame (used by a result handle that lets go last), into `worker`'s frame
    /// cache if there is one.
    free: unsafe fn(NonNull<Header>, Option<&WorkerThread>),
}

impl VTable {
    /// The table of a job that is run once and is no task frame (a scope body injected from
    /// outside the pool, on the injecting thread's stack; a detached job, on the heap, which
    /// its `execute` frees): it is never released through the table.
    pub(crate) const fn injected(execute: unsafe fn(NonNull<Header>, &WorkerThread)) -> Self {
        VTable {
            execute,
            cancel: never_executed,
            release: never_released,
            free: never_freed,
        }
    }
}

/// The start of every frame (80 bytes on 64-bit targets).
///
/// Laid out so that, in a frame that starts on a cache line (heap frames come from 64-byte
/// aligned blocks, scope roots and groups are [`LineAligned`]), the first line holds what the
/// owner writes while it spawns (the counter's owner cells) and the second what the threads
/// finishing its children write (`pending`): see [`ChildCounter`]. The rest of the second line
/// is a small frame's result state and closure.
#[repr(C)]
pub(crate) struct Header {
    vtable: &'static VTable,
    /// The frame this one reports to (and, for the policy check, descends from); null for a
    /// scope root.
    parent: *const Header,
    meta: Option<Box<TaskMeta>>,
    /// A dependent task's handle in its parent's tracker, from its release until its body
    /// finished (module docs: who writes it when).
    depend: UnsafeCell<Option<DepHandle<Task>>>,
    pub(crate) panic: PanicSlot,
    /// Number of links to the root (0 for a root).
    depth: u32,
    /// A final task (OpenMP's `final`), or a descendant of one: its children run at once,
    /// inline, as included tasks ([`TaskBuilder::final_if`](crate::TaskBuilder::final_if)).
    final_task: bool,
    pub(crate) children: ChildCounter,
}

// The counter's shared part starts the second cache line (64-bit targets; loom's atomics
// have other sizes).
#[cfg(all(target_pointer_width = "64", not(loom)))]
const _: () =
    assert!(std::mem::offset_of!(Header, children) + crate::child_counter::PENDING_OFFSET == 64);

/// A header on a stack (scope roots, taskgroups), aligned like heap frames (see [`Header`]).
#[repr(C, align(64))]
pub(crate) struct LineAligned<T>(pub(crate) T);

impl<T> std::ops::Deref for LineAligned<T> {
    type Target = T;

    fn deref(&self) -> &T {
        &self.0
    }
}

impl Header {
    fn new(vtable: &'static VTable, parent: Option<&Header>, owner: usize) -> Self {
        let (parent_ptr, depth) = match parent {
            None => (ptr::null(), 0),
            Some(p) => (p as *const Header, p.depth.wrapping_add(1)),
        };
        Header {
            vtable,
            parent: parent_ptr,
            depth,
            final_task: parent.is_some_and(|p| p.final_task),
            children: ChildCounter::new(owner),
            panic: PanicSlot::new(),
            meta: None,
            depend: UnsafeCell::new(None),
        }
    }

    /// Whether this is a final task or descends from one: its children run inline.
    #[inline]
    pub(crate) fn is_final(&self) -> bool {
        self.final_task
    }

    /// Makes the task of `frame` final (before it is published: [`TaskBuilder::final_if`](crate::TaskBuilder::final_if)).
    ///
    /// # Safety
    ///
    /// `frame` is a fresh frame from [`heap_task`] that no other thread can see yet.
    pub(crate) unsafe fn mark_final(frame: NonNull<Header>) {
        // SAFETY: the caller's promise: nothing else reads or writes the frame yet.
        unsafe { (&raw mut (*frame.as_ptr()).final_task).write(true) };
    }

    /// The header of a scope root owned by worker `owner`.
    pub(crate) fn root(owner: usize) -> Self {
        Header::new(&ROOT_VTABLE, None, owner)
    }

    /// The header of a job injected from outside the pool (it has no parent and no owner).
    pub(crate) fn injected(vtable: &'static VTable) -> Self {
        Header::new(vtable, None, usize::MAX)
    }

    /// The header of a taskgroup inside the frame `enclosing`, owned by worker `owner`. The
    /// group descends from `enclosing` (for the taskwait policy) but does not report to it:
    /// its owner waits for it before the enclosing body goes on.
    pub(crate) fn group(enclosing: &Header, owner: usize) -> Self {
        Header::new(&ROOT_VTABLE, Some(enclosing), owner)
    }

    /// Whether `self` is `ancestor` or descends from it.
    ///
    /// # Safety
    ///
    /// `self` must be an unfinished task (queued, running or waiting), so that every frame on
    /// its parent chain is alive; `ancestor` must be alive.
    #[inline]
    pub(crate) unsafe fn is_descendant_of(&self, ancestor: &Header) -> bool {
        if ptr::eq(self.parent, ancestor) || ptr::eq(self, ancestor) {
            return true;
        }
        // SAFETY: the caller's promise.
        unsafe { self.is_deeper_descendant_of(ancestor) }
    }

    /// The slow path of [`is_descendant_of`](Self::is_descendant_of): walk up the parents.
    ///
    /// # Safety
    ///
    /// As for `is_descendant_of`.
    #[cold]
    unsafe fn is_deeper_descendant_of(&self, ancestor: &Header) -> bool {
        let mut frame: *const Header = self;
        // SAFETY: the parent chain of an unfinished task is alive (module docs); a frame
        // deeper than `ancestor` has a parent.
        unsafe {
            while (*frame).depth > ancestor.depth {
                frame = (*frame).parent;
            }
        }
        ptr::eq(frame, ancestor)
    }
}

/// Roots and groups are never queued and never released through the table.
static ROOT_VTABLE: VTable = VTable {
    execute: never_executed,
    cancel: never_executed,
    release: never_released,
    free: never_freed,
};

/// The `execute` and `cancel` of roots and groups, which are never queued: aborts.
///
/// # Safety
///
/// None needed (it touches nothing); `unsafe` only to fit the table's type.
unsafe fn never_executed(_: NonNull<Header>, _: &WorkerThread) {
    // A root or group header is never pushed to a queue.
    std::process::abort();
}

/// The `release` of roots and groups, whose counters never reach zero: aborts.
///
/// # Safety
///
/// None needed (it touches nothing); `unsafe` only to fit the table's type.
unsafe fn never_released(_: NonNull<Header>, _: &WorkerThread, _: bool) {
    // A root or group counter never reaches zero: nothing removes its bias.
    std::process::abort();
}

/// The `free` of roots and groups, which live on their owner's stack: aborts.
///
/// # Safety
///
/// None needed (it touches nothing); `unsafe` only to fit the table's type.
unsafe fn never_freed(_: NonNull<Header>, _: Option<&WorkerThread>) {
    // Roots and groups live on their owner's stack.
    std::process::abort();
}

/// Memory for one frame of type `X`.
#[inline]
fn alloc_frame<X>(worker: &WorkerThread) -> NonNull<X> {
    match class_of::<X>() {
        Some(class) => worker.frames().alloc(class).cast(),
        None => {
            let layout = Layout::new::<X>();
            // SAFETY: a frame starts with a header, so the size is not zero.
            let p = unsafe { alloc::alloc(layout) };
            NonNull::new(p.cast()).unwrap_or_else(|| alloc::handle_alloc_error(layout))
        }
    }
}

/// Drops and frees a frame of type `X`.
///
/// # Safety
///
/// `frame` came from `alloc_frame::<X>`, holds an initialised `X`, and nobody uses it.
#[inline]
unsafe fn free_frame<X>(frame: NonNull<X>, worker: Option<&WorkerThread>) {
    // SAFETY: the caller's promise.
    unsafe { ptr::drop_in_place(frame.as_ptr()) };
    match (class_of::<X>(), worker) {
        // SAFETY: the block is of this class and unused.
        (Some(class), Some(worker)) => unsafe { worker.frames().recycle(class, frame.cast()) },
        // SAFETY: allocated with this layout by `alloc_frame` or `BlockCache::alloc`.
        (Some(class), None) => unsafe {
            alloc::dealloc(frame.as_ptr().cast(), class_layout(class))
        },
        // SAFETY: allocated with `Layout::new::<X>()` by `alloc_frame`.
        (None, _) => unsafe { alloc::dealloc(frame.as_ptr().cast(), Layout::new::<X>()) },
    }
}

/// A task ready to run, as schedulers queue it: a pointer to its frame.
///
/// A `Task` must be run exactly once (the runtime does that with what a scheduler returns);
/// a scheduler only moves it between queues and may look at its [`footprint`](Task::footprint).
pub struct Task(NonNull<Header>);

// SAFETY: a task's frame is built for running on any worker: its closure is `Send`, and the
// frame's shared state is atomics (module docs).
unsafe impl Send for Task {}

impl Task {
    #[inline]
    fn header(&self) -> &Header {
        // SAFETY: a queued task's frame is alive until it has run.
        unsafe { self.0.as_ref() }
    }

    /// The byte ranges the task declared it touches: its affinity (footprint hint) if it was
    /// given one, else its `depend` list for a dependent task (empty for most tasks).
    pub fn footprint(&self) -> &[Access] {
        if let Some(meta) = self.header().meta.as_deref()
            && !meta.footprint.is_empty()
        {
            return &meta.footprint;
        }
        // SAFETY: the handle is written only by the thread that holds a dependent task alone
        // (module docs), before it hands the `Task` to a scheduler.
        match unsafe { &*self.header().depend.get() } {
            Some(handle) => handle.accesses(),
            None => &[],
        }
    }

    /// Whether the task carries a [`TaskMeta`] (a footprint hint, a label, a priority or a
    /// preferred worker): one test that lets the spawn path skip every clause at once.
    #[inline]
    pub(crate) fn has_meta(&self) -> bool {
        self.header().meta.is_some()
    }

    /// The worker the task prefers ([`TaskMeta::preferred`]; `None` for most tasks).
    pub fn preferred_worker(&self) -> Option<usize> {
        self.header().meta.as_deref().and_then(|m| m.preferred)
    }

    /// The task's priority, as spawned ([`TaskMeta::priority`]; 0 for most tasks).
    pub fn priority(&self) -> u32 {
        self.header().meta.as_deref().map_or(0, |m| m.priority)
    }

    /// The task's name in traces: its [`TaskMeta::label`], or `"task"`.
    pub fn label(&self) -> &'static str {
        self.header()
            .meta
            .as_deref()
            .and_then(|m| m.label)
            .unwrap_or("task")
    }

    /// Number of ancestors up to the scope root (a task spawned by a scope body has depth 1).
    pub fn depth(&self) -> u32 {
        self.header().depth
    }

    /// Whether this task is `frame` or descends from it.
    #[inline]
    pub(crate) fn is_descendant_of(&self, frame: &Header) -> bool {
        // SAFETY: a queued task is unfinished; `frame` is alive because its owner is waiting
        // for it.
        unsafe { self.header().is_descendant_of(frame) }
    }

    #[inline]
    pub(crate) fn from_header(header: NonNull<Header>) -> Self {
        Task(header)
    }

    /// The task's frame header, as an address (for identity only).
    #[inline]
    pub(crate) fn header_ptr(&self) -> *const Header {
        self.0.as_ptr()
    }

    /// The frame this task reports to.
    #[inline]
    pub(crate) fn parent_ptr(&self) -> *const Header {
        self.header().parent
    }

    /// Runs the task on `worker`.
    #[inline]
    pub(crate) fn execute(self, worker: &WorkerThread) {
        let execute = self.header().vtable.execute;
        // SAFETY: a `Task` is run exactly once, on a worker (type docs).
        unsafe { execute(self.0, worker) }
    }

    /// Finishes the task without running it (its parent's tracker cancelled it).
    pub(crate) fn cancel(self, worker: &WorkerThread) {
        let cancel = self.header().vtable.cancel;
        // SAFETY: cancelling is this task's one run (type docs).
        unsafe { cancel(self.0, worker) }
    }

    /// Stores the handle with which the parent's tracker released this task.
    pub(crate) fn attach_depend(&mut self, handle: DepHandle<Task>) {
        // SAFETY: a released dependent task is held by this `Task` alone (it has not been
        // queued yet), so nobody else reads or writes the slot now.
        unsafe { *self.header().depend.get() = Some(handle) };
    }
}

impl fmt::Debug for Task {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Task")
            .field("frame", &self.0)
            .field("depth", &self.depth())
            .field("footprint", &self.footprint())
            .finish()
    }
}

/// The part of a heap frame a result handle sees.
#[repr(C)]
pub(crate) struct ResultHead<T> {
    pub(crate) header: Header,
    pub(crate) state: ResultState,
    result: UnsafeCell<Option<T>>,
}

impl<T> ResultHead<T> {
    /// Takes the result.
    ///
    /// # Safety
    ///
    /// The state must have been read as `DONE` (with `Acquire`) by the caller, who owns the
    /// handle.
    pub(crate) unsafe fn take_result(&self) -> Option<T> {
        // SAFETY: after `DONE` nobody but the handle's owner touches the slot.
        unsafe { (*self.result.get()).take() }
    }
}

/// A spawned task's heap frame.
#[repr(C)]
struct HeapTask<F, T> {
    head: ResultHead<T>,
    func: UnsafeCell<ManuallyDrop<F>>,
}

/// Allocates the frame of a task running `func` as a child of `parent` (whose body runs on
/// `worker`). With `HANDLE` the result is kept for a [`TaskHandle`](crate::scope::TaskHandle)
/// and the frame is freed by the later of the task and the handle; without, the result is
/// dropped.
///
/// The returned task must be run (then its frame is released by the runtime); `F` may borrow
/// data for `'scope`, which the scope keeps alive until the task finished.
#[inline]
pub(crate) fn heap_task<'scope, F, T, const HANDLE: bool>(
    parent: NonNull<Header>,
    worker: &WorkerThread,
    meta: Option<Box<TaskMeta>>,
    func: F,
) -> NonNull<Header>
where
    F: FnOnce(&Scope<'scope>) -> T + Send + 'scope,
    T: Send + 'scope,
{
    // SAFETY: `F: 'scope`, and the scope outlives every task spawned in it.
    unsafe { heap_task_unchecked::<F, T, HANDLE>(parent, worker, meta, func) }
}

/// [`heap_task`] for a closure that may borrow data shorter-lived than `'scope`.
///
/// # Safety
///
/// The task must finish (its subtree included) before anything `func` borrows goes away.
#[inline]
pub(crate) unsafe fn heap_task_unchecked<'scope, F, T, const HANDLE: bool>(
    parent_ptr: NonNull<Header>,
    worker: &WorkerThread,
    meta: Option<Box<TaskMeta>>,
    func: F,
) -> NonNull<Header>
where
    F: FnOnce(&Scope<'scope>) -> T + Send,
    T: Send,
{
    // SAFETY: the parent frame is alive while its body spawns.
    let parent = unsafe { parent_ptr.as_ref() };
    let frame = alloc_frame::<HeapTask<F, T>>(worker);
    let p = frame.as_ptr();
    // SAFETY: fresh memory for a `HeapTask<F, T>`; every field is written once, in place
    // (see `ChildCounter::init_at` for why not through a value built on the stack).
    unsafe {
        let h = &raw mut (*p).head.header;
        (&raw mut (*h).vtable).write(&HeapVTable::<'scope, F, T, HANDLE>::VTABLE);
        (&raw mut (*h).parent).write(parent_ptr.as_ptr().cast_const());
        (&raw mut (*h).depth).write(parent.depth.wrapping_add(1));
        (&raw mut (*h).final_task).write(parent.final_task);
        // The owner is set when the task runs (`execute_heap`, `cancel_heap`), before it can
        // have children; until then the spawning worker. (Not the parent's owner: that lies
        // on the line its finishing children write, a miss on every spawn of a producer whose
        // children other workers finish.)
        ChildCounter::init_at(&raw mut (*h).children, worker.index());
        (&raw mut (*h).panic).write(PanicSlot::new());
        (&raw mut (*h).meta).write(meta);
        (&raw mut (*h).depend).write(UnsafeCell::new(None));
        (&raw mut (*p).head.state).write(ResultState::new());
        (&raw mut (*p).head.result).write(UnsafeCell::new(None));
        (&raw mut (*p).func).write(UnsafeCell::new(ManuallyDrop::new(func)));
    }
    // `head.header` is the first field of `repr(C)` structs: the frame's address is the
    // header's.
    frame.cast()
}

/// The table of one `HeapTask<F, T>` instantiation, as an associated constant so that
/// `&Self::VTABLE` is a `'static` promoted constant.
struct HeapVTable<'scope, F, T, const HANDLE: bool>(PhantomData<(&'scope (), F, T)>);

impl<'scope, F, T, const HANDLE: bool> HeapVTable<'scope, F, T, HANDLE>
where
    F: FnOnce(&Scope<'scope>) -> T + Send,
    T: Send,
{
    const VTABLE: VTable = VTable {
        execute: execute_heap::<F, T, HANDLE>,
        cancel: cancel_heap::<F, T, HANDLE>,
        release: if HANDLE {
            release_to_handle::<F, T>
        } else {
            release_heap::<F, T>
        },
        free: free_heap::<F, T>,
    };
}

/// Frees a heap frame whose closure was taken.
///
/// # Safety
///
/// `frame` came from [`heap_task_unchecked::<F, T, _>`], its closure was run (taken), and
/// nobody uses the frame any more.
unsafe fn free_heap<F, T>(frame: NonNull<Header>, worker: Option<&WorkerThread>) {
    // SAFETY: by the caller's promise the frame is ours; `func` is `ManuallyDrop` and already
    // taken, so dropping the frame drops the header and the result slot only.
    unsafe { free_frame(frame.cast::<HeapTask<F, T>>(), worker) }
}

/// Frees the frame of a result task whose handle lets go after the task finished.
///
/// # Safety
///
/// `frame` is a result task's frame whose state was read as `DONE` by the handle's owner,
/// which gives it up now.
#[inline]
pub(crate) unsafe fn free_finished(frame: NonNull<Header>, worker: Option<&WorkerThread>) {
    // SAFETY: the frame is alive (the handle holds it).
    let free = unsafe { frame.as_ref() }.vtable.free;
    // SAFETY: the task finished and released its side; the handle was the last user.
    unsafe { free(frame, worker) }
}

/// The `execute` of a heap task: runs its closure on `worker` under `catch_unwind`, stores the
/// result (or the panic) and finishes the frame when its subtree is done.
///
/// # Safety
///
/// `frame` came from [`heap_task_unchecked::<F, T, HANDLE>`] and is run exactly once, on
/// `worker`'s thread, while everything the closure borrows is alive.
unsafe fn execute_heap<'scope, F, T, const HANDLE: bool>(
    frame: NonNull<Header>,
    worker: &WorkerThread,
) where
    F: FnOnce(&Scope<'scope>) -> T + Send,
    T: Send,
{
    let task = frame.cast::<HeapTask<F, T>>();
    // SAFETY: the frame is alive until its subtree is finished, which is after this call
    // finishes the body.
    let this = unsafe { task.as_ref() };
    let header = &this.head.header;
    header.children.set_owner(worker.index());
    // SAFETY: `execute` is called once, so the closure is still there, and nobody else
    // touches `func`.
    let func = unsafe { ManuallyDrop::take(&mut *this.func.get()) };
    let scope = Scope::for_frame(frame, worker);
    let panicked = match panic::catch_unwind(AssertUnwindSafe(|| func(&scope))) {
        Ok(value) => {
            if HANDLE {
                // SAFETY: the result slot is written only here, before the state says
                // `DONE`; the handle reads it only after.
                unsafe { *this.head.result.get() = Some(value) };
            }
            false
        }
        Err(payload) => {
            header.panic.store(payload);
            true
        }
    };
    if let Some(handle) = take_depend(header) {
        if panicked {
            // The panic goes straight to the parent (alive: this task is not finished), ahead
            // of the cancellations the completion may report there.
            // SAFETY: a heap frame's parent is alive until the frame is finished.
            if let (Some(payload), Some(parent)) =
                (header.panic.take(), unsafe { header.parent.as_ref() })
            {
                parent.panic.store(payload);
            }
        }
        crate::dependences::complete(handle, panicked, worker);
    }
    if header.children.finish() {
        // SAFETY: `finish` returned true: the subtree is finished and the frame is ours.
        unsafe { finish_frame(frame, worker) };
    }
}

/// Takes the dependence handle of the task whose body just ran on this thread, if it has
/// one (most tasks do not, and then nothing is written).
#[inline(always)]
fn take_depend(header: &Header) -> Option<DepHandle<Task>> {
    let slot = header.depend.get();
    // SAFETY: the running task is held by nobody else: its `Task` was consumed to run it, so
    // this thread alone touches the slot.
    if unsafe { (*slot).is_none() } {
        return None;
    }
    // SAFETY: as above.
    unsafe { (*slot).take() }
}

/// The `cancel` of a heap task: drops the closure unrun and finishes the frame, with the
/// cancellation as the task's panic (it reaches the parent's waiter unless an earlier panic,
/// normally the predecessor's, is there first).
///
/// # Safety
///
/// As for `execute_heap`: `frame` is a queued `HeapTask<F, T>`, cancelled once instead of run.
unsafe fn cancel_heap<'scope, F, T, const HANDLE: bool>(
    frame: NonNull<Header>,
    worker: &WorkerThread,
) where
    F: FnOnce(&Scope<'scope>) -> T + Send,
    T: Send,
{
    let task = frame.cast::<HeapTask<F, T>>();
    // SAFETY: the frame is alive until it is finished below.
    let this = unsafe { task.as_ref() };
    let header = &this.head.header;
    header.children.set_owner(worker.index());
    // SAFETY: the closure is still there (the task never ran) and nobody else touches it.
    let func = unsafe { ManuallyDrop::take(&mut *this.func.get()) };
    // The closure's captures are user values: a panicking destructor is reported like a panic
    // of the task instead of unwinding through the runtime.
    if let Err(payload) = panic::catch_unwind(AssertUnwindSafe(|| drop(func))) {
        header.panic.store(payload);
    }
    header.panic.store(Box::new(crate::dependences::Cancelled));
    if header.children.finish() {
        // SAFETY: a task that never ran has no children: its subtree is finished and ours.
        unsafe { finish_frame(frame, worker) };
    }
}

/// The `release` of a task without a result handle: frees the frame.
///
/// # Safety
///
/// `frame` is a finished `HeapTask<F, T>` whose subtree is done, owned by the caller, and
/// nobody uses it any more.
unsafe fn release_heap<F, T>(frame: NonNull<Header>, worker: &WorkerThread, _: bool) {
    // SAFETY: the caller owns the frame, whose parent is alive until the caller's decrement.
    unsafe { pass_panic_to_parent(frame) };
    // SAFETY: the subtree is finished and the caller owns the frame.
    unsafe { free_heap::<F, T>(frame, Some(worker)) }
}

/// Moves the panic of a finished frame's subtree, if any, to its parent (whose waiter resumes
/// it, unless an earlier panic is there first).
///
/// # Safety
///
/// The caller owns the finished heap frame `frame`, and its parent is alive.
pub(crate) unsafe fn pass_panic_to_parent(frame: NonNull<Header>) {
    // SAFETY: the caller's promise.
    let header = unsafe { frame.as_ref() };
    if let Some(payload) = header.panic.take() {
        // SAFETY: a heap frame has a parent, alive by the caller's promise.
        unsafe { (*header.parent).panic.store(payload) };
    }
}

/// The `release` of a task with a result handle: hands the frame to the handle, or frees it
/// if the handle let go first. A panic of the task's subtree stays in the frame for the
/// handle ([`TaskHandle::join`](crate::scope::TaskHandle::join) resumes it; dropping the
/// handle passes it to the parent), or goes to the parent now if the handle is gone.
///
/// # Safety
///
/// `frame` is a finished `HeapTask<F, T>` with a result handle, whose subtree is done; the
/// caller owns the task's side of it (the handle may still own the other).
unsafe fn release_to_handle<F, T>(frame: NonNull<Header>, worker: &WorkerThread, same: bool) {
    // SAFETY: the frame is alive: the caller owns the finishing side of it.
    let head = unsafe { frame.cast::<ResultHead<T>>().as_ref() };
    // The handle's thread is the parent's owner (handles are not `Send`). The parent is alive
    // until this child's decrement, which comes later.
    let parent = head.header.parent;
    let state = head.state.finish(same);
    if state == DROPPED {
        // SAFETY: the handle is gone: the frame is ours; the parent is alive (see above).
        unsafe { pass_panic_to_parent(frame) };
    }
    match state {
        // SAFETY: the handle is gone: we are the last user.
        DROPPED if !std::mem::needs_drop::<T>() => unsafe {
            free_heap::<F, T>(frame, Some(worker))
        },
        DROPPED => {
            // The result's destructor is user code: a panic in it is reported like the task's
            // own (the frame's memory is then leaked) instead of unwinding through the runtime.
            // SAFETY: as above.
            let freed = panic::catch_unwind(AssertUnwindSafe(|| unsafe {
                free_heap::<F, T>(frame, Some(worker))
            }));
            if let (Err(payload), false) = (freed, parent.is_null()) {
                // SAFETY: the parent is alive until our decrement, after this.
                unsafe { (*parent).panic.store(payload) };
            }
        }
        JOINING if !same && !parent.is_null() => {
            // SAFETY: see above; `head` is not used after the state changed.
            worker.wake(unsafe { (*parent).children.owner() });
        }
        _ => {}
    }
}

/// Finishes the frames whose subtrees are complete, climbing the tree: releases `frame` (its
/// `release` passes its panic to the parent, or keeps it for a result handle), and counts it
/// finished in the parent (which may complete the parent in turn).
///
/// # Safety
///
/// The subtree of `frame` is finished and the caller owns it (its `finish` returned true or
/// its counter reached zero in the caller's decrement).
#[inline]
pub(crate) unsafe fn finish_frame(mut frame: NonNull<Header>, worker: &WorkerThread) {
    let me = worker.index();
    loop {
        // SAFETY: we own the frame until we release it below.
        let header = unsafe { frame.as_ref() };
        let parent_ptr = header.parent;
        debug_assert!(!parent_ptr.is_null(), "a heap frame always has a parent");
        // SAFETY: the parent is alive until our decrement (we are one of its children).
        let parent = unsafe { &*parent_ptr };
        let owner = parent.children.owner();
        let release = header.vtable.release;
        // SAFETY: we own the frame; after this we do not touch it again.
        unsafe { release(frame, worker, owner == me) };
        // SAFETY: the parent is alive (we are still counted); this is our last access.
        match unsafe { parent.children.child_done(me, owner) } {
            ChildDone::Pending => return,
            ChildDone::WakeOwner(owner) => {
                worker.wake(owner);
                return;
            }
            // SAFETY: not null (checked above); the pointer keeps the frame's own provenance,
            // which a pointer made from `parent` (a shared reference) would not.
            ChildDone::Complete => frame = unsafe { NonNull::new_unchecked(parent_ptr.cast_mut()) },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn frame_class<'scope, F: FnOnce(&Scope<'scope>) -> u64>(_: &F) -> Option<usize> {
        class_of::<HeapTask<F, u64>>()
    }

    #[test]
    fn a_recursive_task_with_a_result_fits_the_smallest_block() {
        let n = 30u64;
        // fib's task: one captured word and a word of result.
        let task = move |_: &Scope<'_>| n + 1;
        assert_eq!(frame_class(&task), Some(0));
    }
}
