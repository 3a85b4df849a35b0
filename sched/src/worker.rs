//! Worker threads: the idle loop, the waiting loop behind `taskwait`, and the thread-local
//! pointer to the current worker.
//!
//! # The taskwait policy: which tasks a waiting worker may run
//!
//! A worker that waits (at a `taskwait`, at the end of a taskgroup or of a scope, or for a
//! result handle) for a frame `F` keeps working until `F`'s children are done:
//!
//! 1. it pops its own deque (newest first): first `F`'s children and their descendants, then
//!    older tasks of the tasks it is suspended in;
//! 2. it steals from other workers (oldest first, victims in round-robin order) and runs
//!    **any** task it steals, as oneTBB's and rayon's waits do, then takes scopes injected
//!    from outside the pool (the injecting thread may be a worker of another pool, waiting
//!    for it in the same way: pools whose scopes nest in each other never wait for each
//!    other with every worker blocked);
//!    then tasks set aside (below) that it may run: those of nodes within its reach (the
//!    locality-aware policy's vicinity) and descendants of `F` from beyond, when every worker
//!    within reach of their node is short of stack;
//! 3. with nothing to run it backs off and then sleeps; the last child of `F` wakes it.
//!
//! While the runtime honours task priorities (`OMP_MAX_TASK_PRIORITY` above 0), spawns and
//! completions put every task whose priority is above 0 in the pool's list of tasks with a
//! priority (`Prioritized`: highest first, equal ones oldest first). An idle worker takes from
//! it before anything else; a waiting worker takes from it first the descendants of `F`, and
//! other tasks only where it would steal (before stealing, with stack to spare), so that
//! unrelated tasks do not pile up on its stack at every wait. Sleeping waiters are all woken
//! for a task put there when no idle worker is.
//!
//! Why not OpenMP's tied-task rule (run only descendants of `F`)? A lock-free Chase-Lev deque
//! cannot look at a task before taking it, so a waiting worker that may run only descendants
//! must put back what it took; measured on 32 cores, that put-back traffic made fib 30x slower
//! than on one core. Running what it steals keeps every worker busy while work exists.
//!
//! What it costs, and the guards:
//!
//! - **Locks across `taskwait`.** A task that holds a lock while it waits may have an
//!   unrelated task run on top of it on the same thread; if that task takes the same lock, the
//!   thread deadlocks (a `std::sync::Mutex` may panic instead). Do not hold a lock across
//!   `taskwait`, the end of a `taskgroup`, or `TaskHandle::join`: release it first, or take
//!   it inside the child tasks. This is the rule of rayon and oneTBB too.
//! - **Stack depth.** Stolen tasks run on top of the waiting task's stack. A waiting worker
//!   steals only while more than a quarter of its stack is free; below that it runs only
//!   descendants of `F` (their depth is bounded by the program's own nesting), so unrelated
//!   work cannot overflow the stack. A task it pops from its own deque that does not descend
//!   from `F` is *set aside* in the pool's set-aside list, where a worker with room takes it
//!   (one its policy lets run a task of that node: the locality-aware policy's vicinity), and
//!   where a worker short of stack looks for descendants of what it waits for, whatever their
//!   node (a task set aside while joining one child may be the sibling the next `taskwait`
//!   needs). A waiting worker with room takes a descendant of what it waits for from beyond
//!   its reach only when no worker within reach of the task's node can take it, each being
//!   short of stack (the task of a nested scope that the only worker of a far node set aside
//!   while it waits, short of stack, for this very waiter): the vicinity gives way only where
//!   keeping it would deadlock. Before it sleeps, a worker short of stack checks its own
//!   queues as well as the list: a descendant may be dealt to its node's queue at any time.
//!   Descendants still nest as deep as the program does: they get more stack as they need it
//!   (stack segments, below). This bound holds within one runtime. Scopes that nest across two runtimes
//!   back and forth (a task of pool A enters a scope of pool B whose tasks enter scopes of A)
//!   are not bounded by it: a worker waiting for a scope it sent to another pool takes any
//!   scope sent to its own, short of stack or not (one of them may be what the other pool
//!   waits for, and it cannot tell which), so unrelated scopes can pile up on its stack in
//!   proportion to the number of such scopes, not to the nesting. Keep such programs on one
//!   runtime (a scope entered from a task of the same runtime nests as a child), or give
//!   their workers large stacks.
//! - **No deadlock from waiting.** A worker waits only for descendants of the task it runs:
//!   taskwait and taskgroups wait for its own children, and a `TaskHandle` borrows the
//!   `Scope` of the task that spawned it, so no other task can join it. A task run on top
//!   of a waiting one started after it, so waits and burials both point from earlier tasks
//!   to later ones and cannot close a cycle. Everything `F` needs descends from `F` and is either
//!   running on some worker or queued where a worker finds it; a waiting worker never blocks
//!   while it can run something. One exception widens "descends from `F`": a task of a
//!   taskgroup may depend on a sibling spawned before the group, a child of the task that
//!   owns the group but not a descendant of the group, so the end of a group counts as `F`
//!   that task wherever this policy asks what the wait may need (its depth is the program's
//!   nesting all the same); what the group waits for is still its own tasks. A task set aside is taken by a worker within reach of its
//!   node, or, when every such worker is short of stack, by a waiter it descends from. With
//!   one worker every descendant of `F` is on the worker's own deque above every older task,
//!   so it runs them all first. (A task that blocks outside the runtime, on a lock or a
//!   channel, until another task has run, can still hang, as in any work-stealing pool.)
//!
//! An idle worker (not waiting) runs anything: its own deque, then stealing, then tasks
//! injected from outside the pool, then tasks set aside, then tasks that prefer a busy worker.
//!
//! # Preferred workers
//!
//! A task spawned with [`prefer_worker`](crate::TaskBuilder::prefer_worker) goes around the
//! policy, to the preferred worker's mailbox (`crate::mailbox`, which states the rules and
//! the wake-ups). Every worker, idle or waiting, takes its own letters first, before its
//! deque (they are "its own work", short of stack or not); a worker with stack to spare takes
//! other workers' letters last, where it would steal, and only those of busy workers that its
//! policy lets it run.
//!
//! # Stack segments: waits nested deeper than the stack
//!
//! A task that waits for its child, which waits for its own child, and so on (a recursion
//! through `taskwait`, a taskgroup's end, `TaskHandle::join` or the first closure of
//! `Scope::join`, or through ready dependent tasks and included tasks run at once in
//! `spawn`), keeps one level of frames on the worker's stack per link: the waiting task's
//! frame cannot be left while its child runs. With one worker a chain of a few thousand links
//! would overflow the default 2 MiB stack and abort the process. Rather than fail, a worker
//! grows its stack, as rustc does for deep recursions (with the same `stacker` crate):
//!
//! - Every task run on top of a running one goes through `run_nested`, which compares the
//!   stack pointer with the current segment's `limit`: one load and one comparison, on the
//!   path that runs a task in a wait or at once in `spawn` (an idle worker's tasks start at the
//!   bottom of its stack and are not checked).
//! - Below the limit (less than a quarter of the segment left: the room every nested task
//!   starts with), the task runs on a new segment that `stacker` maps for it, the size of the
//!   worker's stack within 256 KiB and 256 MiB, with a guard page, and unmaps when the task
//!   returns; the worker's segment record is put back then. Crossing costs a map and an unmap,
//!   once per segment's worth of nesting, never on a shallow program.
//! - The short-of-stack rule above counts the segments below as used: past three quarters
//!   of `OMP_STACKSIZE`, in whatever segments, a waiting worker runs only descendants of what
//!   it waits for. So segments hold the program's own nesting, never unrelated tasks piled on
//!   a wait, and a chain of any depth finishes with one worker (memory permitting: each link
//!   keeps its frames, about 2 KiB in a debug build).
//!
//! Bounding the depth and leaving the rest to other workers would not finish with one
//! worker; refusing to run tasks inside a wait past a depth would deadlock it, as the waited
//! task is the one to run. Without stack switching (Miri, or a target `stacker` does not
//! support) a segment is the current stack and deep chains overflow as before. Recursion in
//! the program's own code (the second closure of `Scope::join`, a plain call) is the
//! program's: it gets the room of the task it runs in.
//!
//! # A full deque
//!
//! A task spawned while the worker's deque is full runs at once, inline in `spawn` (its depth
//! is the program's own nesting). A task *released* by a completion is never run inline: a
//! chain of dependent tasks would then run each link inside the completion of the one before,
//! one stack frame deeper per link, until the stack overflows. It goes to the worker's
//! overflow list instead: each time the worker pops a task from its deque, the oldest tasks of
//! the list move into the freed slots, where thieves see them (a push wakes a sleeper), and the
//! worker takes from the list itself (the newest first) once its deque is empty. So a chain
//! runs one link after another at the same depth, and no released task waits unseen behind a
//! long one.

use std::cell::{Cell, RefCell};
use std::mem;
use std::ptr;
use std::sync::atomic::{AtomicUsize, Ordering, fence};
use std::sync::{Arc, Mutex, PoisonError};

use crate::blocks::BlockCache;
use crate::job::{Header, Task};
use crate::mailbox::Mailbox;
use crate::runtime::Registry;
use crate::scheduler::locality::footprint_node_bytes;
use crate::scheduler::{Found, TaskOrigin, WorkerCtx, WorkerPlace, WorkerQueues};
use crate::sleep::IdleState;
use crate::sync::CachePadded;
use crate::trace::{QueueChoice, TaskRecord, Tracer};

thread_local! {
    /// The worker that runs on this thread, if it is one.
    static CURRENT: Cell<*const WorkerThread> = const { Cell::new(ptr::null()) };
}

/// One worker: its place, its part of the scheduler, the pool it belongs to.
pub(crate) struct WorkerThread {
    place: WorkerPlace,
    queues: WorkerQueues,
    /// Where the tasks that prefer this worker wait for it (`crate::mailbox`): the
    /// registry's, kept at hand for the test on the path to every task.
    mailbox: Arc<CachePadded<Mailbox>>,
    frames: BlockCache,
    registry: Arc<Registry>,
    /// The stack this worker runs on now: its thread's, or a segment it grew (module docs).
    stack: Cell<StackSegment>,
    /// The worker thread's stack size.
    stack_size: usize,
    /// Tasks released by completions while the scheduler had no room (module docs); only
    /// this worker touches it, and never while a task runs from it.
    overflow: RefCell<std::collections::VecDeque<Task>>,
    /// Whether `overflow` may hold tasks: the only thing the hot path reads.
    has_overflow: Cell<bool>,
    /// The innermost task running on this worker's stack (see [`Running`]).
    running: Cell<*const Running>,
}

/// A task running on a worker: a link, in `run_task`'s frame, of the list of the tasks on
/// the worker's stack, innermost first (a waiting task has others run on top of it).
struct Running {
    header: *const Header,
    outer: *const Running,
}

/// Unlinks a [`Running`] when its task returns (or, were that possible, unwinds).
struct Unlink<'a>(&'a Cell<*const Running>, *const Running);

impl Drop for Unlink<'_> {
    #[inline]
    fn drop(&mut self) {
        self.0.set(self.1);
    }
}

/// Tasks that waiting workers short of stack popped from their deques but could not run (they
/// do not descend from what those workers wait for): see the module docs. Rarely used, so a
/// locked list, which a worker short of stack can search for the descendants it needs.
#[derive(Default)]
pub(crate) struct SetAside {
    /// Each task with the node of the worker that set it aside (whose policy may bound which
    /// workers take it: [`Scheduler::within_reach`](crate::scheduler::Scheduler)).
    tasks: Mutex<Vec<(Task, usize)>>,
    /// `tasks.len()`, read without the lock on the idle paths.
    len: AtomicUsize,
}

impl SetAside {
    /// Sets `tasks`, from a worker of `node`, aside and wakes every sleeper: a worker with
    /// room may take them, and a waiter short of stack (which sleeps without answering
    /// ordinary wake-ups) may need one.
    #[cold]
    fn put(&self, tasks: impl IntoIterator<Item = Task>, node: usize, sleep: &crate::sleep::Sleep) {
        {
            let mut list = self.tasks.lock().unwrap_or_else(PoisonError::into_inner);
            list.extend(tasks.into_iter().map(|t| (t, node)));
            self.len.store(list.len(), Ordering::SeqCst);
        }
        sleep.wake_all();
    }

    /// Whether any task is set aside.
    #[inline]
    fn is_empty(&self) -> bool {
        self.len.load(Ordering::SeqCst) == 0
    }

    /// Takes the oldest task set aside that `wanted` accepts (given the task and its node).
    #[cold]
    fn take(&self, wanted: impl Fn(&Task, usize) -> bool) -> Option<Task> {
        if self.is_empty() {
            return None;
        }
        let mut tasks = self.tasks.lock().unwrap_or_else(PoisonError::into_inner);
        let at = tasks.iter().position(|(t, node)| wanted(t, *node))?;
        let (task, _) = tasks.remove(at);
        self.len.store(tasks.len(), Ordering::SeqCst);
        Some(task)
    }

    /// Whether a task set aside is one `wanted` accepts.
    #[cold]
    fn has(&self, wanted: impl Fn(&Task, usize) -> bool) -> bool {
        !self.is_empty()
            && self
                .tasks
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .iter()
                .any(|(t, node)| wanted(t, *node))
    }
}

/// The tasks of [`Prioritized`], by (priority, highest first; order of arrival).
type PriorityMap = std::collections::BTreeMap<(std::cmp::Reverse<u32>, u64), Task>;

/// Tasks spawned with a priority (OpenMP's `priority` clause) while the runtime honours
/// priorities (`OMP_MAX_TASK_PRIORITY` > 0): one pool-wide list, highest priority first and,
/// among equals, oldest first, which idle workers look at before their own queues (waiting
/// ones: module docs). A locked map: priorities are for tasks long enough that the order they start in
/// matters, not for the finest grain.
pub(crate) struct Prioritized {
    /// Keyed by (priority, highest first; the order of arrival), with the arrivals so far.
    tasks: Mutex<(PriorityMap, u64)>,
    /// The map's length, read without the lock.
    len: AtomicUsize,
}

impl Prioritized {
    pub(crate) fn new() -> Self {
        Prioritized {
            tasks: Mutex::new((std::collections::BTreeMap::new(), 0)),
            len: AtomicUsize::new(0),
        }
    }

    /// Adds `task` (with its priority, capped when it was spawned) and wakes a worker to take
    /// it: one that is idle, else every sleeper, as a waiter short of stack (which sleeps
    /// without answering ordinary wake-ups) may be waiting for this very task.
    fn put(&self, task: Task, sleep: &crate::sleep::Sleep) {
        {
            let mut guard = self.tasks.lock().unwrap_or_else(PoisonError::into_inner);
            let (tasks, arrivals) = &mut *guard;
            tasks.insert((std::cmp::Reverse(task.priority()), *arrivals), task);
            *arrivals += 1;
            self.len.store(tasks.len(), Ordering::SeqCst);
        }
        if !sleep.new_work_among(0..usize::MAX) {
            sleep.wake_all();
        }
    }

    /// Whether the list may hold a task.
    #[inline]
    fn is_empty(&self) -> bool {
        self.len.load(Ordering::SeqCst) == 0
    }

    /// Takes the first task, in priority order, that `wanted` accepts.
    fn take(&self, wanted: impl Fn(&Task) -> bool) -> Option<Task> {
        if self.is_empty() {
            return None;
        }
        let mut guard = self.tasks.lock().unwrap_or_else(PoisonError::into_inner);
        let tasks = &mut guard.0;
        let key = *tasks.iter().find(|(_, t)| wanted(t))?.0;
        let task = tasks.remove(&key);
        self.len.store(tasks.len(), Ordering::SeqCst);
        task
    }

    /// Whether the list holds a task `wanted` accepts.
    fn has(&self, wanted: impl Fn(&Task) -> bool) -> bool {
        !self.is_empty()
            && self
                .tasks
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .0
                .values()
                .any(wanted)
    }
}

/// A waiting worker steals only while more than `1 / STACK_RESERVE_DIVISOR` of its stack is
/// free (module docs).
pub(crate) const STACK_RESERVE_DIVISOR: usize = 4;

impl WorkerThread {
    /// The worker of the calling thread, if it is a worker.
    ///
    /// The reference is valid for as long as the caller stays in code called on this thread
    /// while the worker runs (the worker outlives everything it calls).
    #[inline]
    pub(crate) fn current<'a>() -> Option<&'a WorkerThread> {
        let p = CURRENT.with(Cell::get);
        // SAFETY: `CURRENT` is set only while the `WorkerThread` on this thread's stack is
        // alive (`run` clears it before returning), and a caller on this thread cannot
        // outlive that frame of `run`.
        unsafe { p.as_ref() }
    }

    /// Index of the worker in its pool.
    #[inline]
    pub(crate) fn index(&self) -> usize {
        self.place.index
    }

    /// Where the worker runs.
    #[inline]
    pub(crate) fn place(&self) -> &WorkerPlace {
        &self.place
    }

    /// The worker's cache of free task frames.
    #[inline]
    pub(crate) fn frames(&self) -> &BlockCache {
        &self.frames
    }

    /// The pool.
    #[inline]
    pub(crate) fn registry(&self) -> &Arc<Registry> {
        &self.registry
    }

    #[inline]
    fn ctx(&self) -> WorkerCtx<'_> {
        WorkerCtx {
            place: &self.place,
            sleep: &self.registry.sleep,
        }
    }

    /// Makes a spawned task available, or runs it at once if the scheduler has no room.
    #[inline]
    pub(crate) fn push(&self, task: Task) {
        let Err(task) = self.push_outside_policy(task) else {
            return;
        };
        if let Err(task) = self.queues.push(&self.ctx(), task) {
            self.run_inline(task);
        }
    }

    /// Puts a task with a priority in the pool's priority list (when the runtime honours
    /// priorities), and a task that prefers a worker in that worker's mailbox; hands any
    /// other task back. A task without clauses costs one test (it has no [`TaskMeta`]).
    ///
    /// [`TaskMeta`]: crate::job::TaskMeta
    #[inline]
    fn push_outside_policy(&self, task: Task) -> Result<(), Task> {
        if task.has_meta() {
            // When tracing, the trace's wait before it starts begins now. (Only tasks with
            // clauses: a plain spawn's path stays one test.)
            if let Some(tracer) = self.registry.tracer.as_deref() {
                tracer.note_ready(task.header_ptr() as usize);
            }
            self.push_with_meta(task)
        } else {
            Err(task)
        }
    }

    /// [`push_outside_policy`](Self::push_outside_policy) of a task with clauses. A priority
    /// outranks a preferred worker.
    fn push_with_meta(&self, task: Task) -> Result<(), Task> {
        if let Some(list) = &self.registry.prioritized
            && task.priority() > 0
        {
            list.put(task, &self.registry.sleep);
            return Ok(());
        }
        match task.preferred_worker() {
            Some(worker) if worker < self.registry.mail.len() => {
                self.post(worker, task);
                Ok(())
            }
            _ => Err(task),
        }
    }

    /// Puts `task` in worker `to`'s mailbox and wakes whom it must (`crate::mailbox`): the
    /// owner if it sleeps; else a worker that may take the task if the owner is busy.
    #[inline(never)]
    fn post(&self, to: usize, task: Task) {
        let registry = &*self.registry;
        let (mail, sleep) = (&registry.mail, &registry.sleep);
        let to_self = to == self.index();
        mail.post(to, task, to_self);
        let node = mail.node_of(to);
        let wake_taker = if to_self {
            // This worker takes its own letters at its next wait at the latest: the
            // fence-free check of a push to its deque. A taker woken leaves the letter while
            // it is kept, unless this worker stays busy.
            sleep.should_wake_for_push()
        } else {
            // `new_work_for` has the fence that pairs with the owner's after it turned busy.
            !sleep.new_work_for(to..to + 1) && !sleep.is_free(to)
        };
        if wake_taker {
            registry
                .scheduler
                .wake_for_preferred(node, mail.waiting_on(node), sleep);
        }
    }

    /// [`Sleep::work_found`](crate::sleep::Sleep::work_found), then, when that ended an idle
    /// period, the check of the letters that came meanwhile.
    #[inline]
    fn work_found(&self, idle: &mut IdleState) {
        if self.registry.sleep.work_found(idle) {
            self.letters_after_idle();
        }
    }

    /// [`Sleep::end_search`](crate::sleep::Sleep::end_search), and the same check.
    #[inline]
    fn end_search(&self, idle: &mut IdleState) {
        if self.registry.sleep.end_search(idle) {
            self.letters_after_idle();
        }
    }

    /// This worker just turned busy: letters posted while it was free were left to it, and
    /// their posters woke no one else. If any is waiting, a worker that may take it is woken
    /// (`crate::mailbox`: the fence pairs with the poster's).
    #[inline(never)]
    fn letters_after_idle(&self) {
        let mail = &self.registry.mail;
        if !mail.in_use() {
            return;
        }
        fence(Ordering::SeqCst);
        if self.mailbox.has_letters() {
            let node = mail.node_of(self.index());
            self.registry.scheduler.wake_for_preferred(
                node,
                mail.waiting_on(node),
                &self.registry.sleep,
            );
        }
    }

    /// Whether this worker may take a letter of `owner` now: the owner is not free (busy, or
    /// asleep: a free one takes it itself within a round) and the policy lets this worker run
    /// a task preferring a worker of the owner's node.
    fn may_take_letter(&self, ctx: &WorkerCtx<'_>, owner: usize) -> bool {
        let mail = &self.registry.mail;
        if self.registry.sleep.is_free(owner) {
            return false;
        }
        let node = mail.node_of(owner);
        self.queues
            .may_take_preferred(ctx, node, mail.waiting_on(node))
    }

    /// Takes a letter of a busy worker that this worker may run (`crate::mailbox`).
    fn take_letter(&self, ctx: &WorkerCtx<'_>) -> Option<(Task, Found)> {
        self.registry
            .mail
            .take_for(self.index(), |owner| self.may_take_letter(ctx, owner))
            .map(|(task, owner)| (task, Found::Preferred { owner }))
    }

    /// Whether this worker may find a letter: its own, or one it may take (for its last
    /// check before it sleeps; with `takes` false, its own only).
    fn has_letters(&self, ctx: &WorkerCtx<'_>, takes: bool) -> bool {
        self.mailbox.has_letters()
            || (takes
                && self
                    .registry
                    .mail
                    .has_for(self.index(), |owner| self.may_take_letter(ctx, owner)))
    }

    /// Takes the oldest letter of this worker's own mailbox.
    #[inline(never)]
    fn take_own_letter(&self) -> Option<(Task, Found)> {
        self.registry.mail.take_own(self.index()).map(|task| {
            (
                task,
                Found::Preferred {
                    owner: self.index(),
                },
            )
        })
    }

    /// The priority list, when the runtime honours priorities.
    #[inline]
    fn prioritized(&self) -> Option<&Prioritized> {
        self.registry.prioritized.as_ref()
    }

    /// Runs a spawned task at once, on this thread, instead of queueing it (an undeferred
    /// task: see [`crate::dependences`]).
    #[inline]
    pub(crate) fn run_undeferred(&self, task: Task) {
        self.run_nested(task, None);
    }

    /// Makes a task that a completion released available; with no room in the scheduler it
    /// goes to the overflow list (module docs), never inline.
    #[inline]
    pub(crate) fn push_released(&self, task: Task) {
        let Err(task) = self.push_outside_policy(task) else {
            return;
        };
        if let Err(task) = self.queues.push(&self.ctx(), task) {
            self.overflow.borrow_mut().push_back(task);
            self.has_overflow.set(true);
        }
    }

    /// The next task of this worker's own: a task that prefers it (its mailbox), then from
    /// its queues (refilling them from the overflow list, module docs), then from the
    /// overflow list.
    #[inline]
    fn pop_own(&self, ctx: &WorkerCtx<'_>) -> Option<(Task, Found)> {
        if self.mailbox.has_letters()
            && let Some(letter) = self.take_own_letter()
        {
            return Some(letter);
        }
        match self.queues.pop(ctx) {
            Some(task) => {
                if self.has_overflow.get() {
                    self.refill_from_overflow(ctx);
                }
                Some((task, Found::Pop))
            }
            None if self.has_overflow.get() => self.pop_overflow().map(|t| (t, Found::Overflow)),
            None => None,
        }
    }

    /// Moves the oldest tasks of the overflow list into the scheduler while it has room.
    #[cold]
    fn refill_from_overflow(&self, ctx: &WorkerCtx<'_>) {
        let mut overflow = self.overflow.borrow_mut();
        while let Some(task) = overflow.pop_front() {
            if let Err(task) = self.queues.push(ctx, task) {
                overflow.push_front(task);
                break;
            }
        }
        self.has_overflow.set(!overflow.is_empty());
    }

    #[cold]
    fn pop_overflow(&self) -> Option<Task> {
        let mut overflow = self.overflow.borrow_mut();
        let task = overflow.pop_back();
        self.has_overflow.set(!overflow.is_empty());
        task
    }

    /// A spawned task the scheduler had no room for: the spawner runs it now.
    #[cold]
    #[inline(never)]
    fn run_inline(&self, task: Task) {
        self.run_nested(task, None);
    }

    /// Runs `task`, which the `found` operation gave (`None`: the spawner runs it inline).
    /// Without tracing this is `task.execute` behind one predictable branch.
    #[inline]
    fn run_task(&self, task: Task, found: Option<Found>) {
        let link = Running {
            header: task.header_ptr(),
            outer: self.running.get(),
        };
        self.running.set(&link);
        let _unlink = Unlink(&self.running, link.outer);
        match self.registry.tracer.as_deref() {
            None => task.execute(self),
            Some(tracer) => self.run_traced(tracer, task, found),
        }
    }

    /// Whether the task of `frame` is running on this worker's stack, under the caller: it
    /// cannot finish before the caller returns, so waiting for it would never end.
    pub(crate) fn is_running_under_caller(&self, frame: &Header) -> bool {
        let mut link = self.running.get();
        // SAFETY: every link lives in a `run_task` frame below the caller on this thread's
        // stack, and is unlinked before that frame returns: the list holds live links only.
        while let Some(l) = unsafe { link.as_ref() } {
            if ptr::eq(l.header, frame) {
                return true;
            }
            link = l.outer;
        }
        false
    }

    /// Runs `task` and records it: where it was queued, where it was taken from, its
    /// footprint per node (computed here, only when tracing), its start and end.
    #[inline(never)]
    fn run_traced(&self, tracer: &Tracer, task: Task, found: Option<Found>) {
        let mut origin = match found {
            Some(Found::Priority) => TaskOrigin {
                queue: QueueChoice::Priority {
                    priority: task.priority(),
                },
                stolen_from: None,
            },
            Some(Found::Preferred { owner }) => TaskOrigin {
                queue: QueueChoice::Preferred { worker: owner },
                stolen_from: (owner != self.index()).then(|| self.registry.mail.node_of(owner)),
            },
            Some(found) => self.queues.origin(&self.ctx(), found),
            None => TaskOrigin::INLINE,
        };
        if origin.queue == QueueChoice::OwnDeque
            && let Some(reason) = self.registry.scheduler.kept_reason(task.footprint())
        {
            origin.queue = QueueChoice::Kept { reason };
        }
        let topology = &self.registry.topology;
        let footprint = (!task.footprint().is_empty())
            .then(|| footprint_node_bytes(task.footprint(), topology.num_nodes()));
        let label = task.label();
        let node = self.place.node;
        let stolen_distance = origin.stolen_from.and_then(|from| {
            (from < topology.num_nodes() && node < topology.num_nodes())
                .then(|| topology.distance(node, from))
        });
        let ready_ns = tracer.take_ready(task.header_ptr() as usize);
        let start_ns = tracer.now_ns();
        let at = tracer.start(TaskRecord {
            label,
            worker: self.place.index,
            node,
            queue: origin.queue,
            stolen_distance,
            ready_ns,
            start_ns,
            end_ns: None,
            footprint,
        });
        task.execute(self);
        tracer.end(self.place.index, at, tracer.now_ns());
    }

    /// Wakes worker `worker` if it sleeps (it waits for something this thread finished).
    #[inline]
    pub(crate) fn wake(&self, worker: usize) {
        self.registry
            .sleep
            .new_work_for(worker..worker.saturating_add(1));
    }

    /// Runs a worker on this thread until the pool terminates.
    pub(crate) fn run(place: WorkerPlace, queues: WorkerQueues, registry: Arc<Registry>) {
        let top = 0u8;
        let stack_size = registry.settings.stack_size;
        let worker = WorkerThread {
            mailbox: registry.mail.mailbox(place.index),
            place,
            queues,
            frames: BlockCache::new(),
            registry,
            stack: Cell::new(StackSegment::new(
                ptr::addr_of!(top) as usize,
                stack_size,
                0,
            )),
            stack_size,
            overflow: RefCell::new(std::collections::VecDeque::new()),
            has_overflow: Cell::new(false),
            running: Cell::new(ptr::null()),
        };
        CURRENT.with(|c| c.set(&worker));
        let guard = AbortOnUnwind;
        worker.main_loop();
        mem::forget(guard);
        CURRENT.with(|c| c.set(ptr::null()));
    }

    fn main_loop(&self) {
        let sleep = &self.registry.sleep;
        let mut idle = IdleState::new();
        // A worker starts by looking for work: free, as the tasks that prefer it need to know.
        sleep.begin_search(&mut idle, self.index());
        let ctx = self.ctx();
        loop {
            let prioritized = self
                .prioritized()
                .and_then(|list| list.take(|_| true))
                .map(|task| (task, Found::Priority));
            let found = match prioritized.or_else(|| self.pop_own(&ctx)) {
                Some(own) => Some(own),
                None => match self.queues.steal(&ctx) {
                    Some(task) => Some((task, Found::Steal)),
                    None => self
                        .queues
                        .take_injected(&ctx)
                        .or_else(|| self.take_set_aside(&ctx))
                        .map(|task| (task, Found::Injected))
                        .or_else(|| self.take_letter(&ctx)),
                },
            };
            if let Some((task, found)) = found {
                self.work_found(&mut idle);
                self.run_task(task, Some(found));
                continue;
            }
            if sleep.is_terminated() {
                return;
            }
            sleep.no_work_found(&mut idle, self.index(), || {
                self.queues.has_work(&ctx)
                    || self.has_set_aside(&ctx)
                    || self.prioritized().is_some_and(|list| !list.is_empty())
                    || self.has_letters(&ctx, true)
            });
        }
    }

    /// Runs tasks (see the module docs) until `done()`, and returns true. `before_block` is
    /// called each time the worker's own deque is empty, before it looks beyond, and so
    /// before it may sleep: it must arrange for whoever makes `done()` true to wake this
    /// worker. When it returns false the wait ends at once, `done()` or not, and this
    /// returns false (a caller that finds it cannot wait: see `TaskHandle::join_inner`).
    ///
    /// Fast path first: while the next task of its own queues is `frame`'s own (a joined task
    /// nobody stole) or a child of `frame` (a taskwait's), it runs it without setting up the
    /// waiting loop; anything else it pops goes to the loop, which deals with it first. The
    /// callers test `done()` just before (were it true, the fast path would only run sooner
    /// what the wait would not have had to).
    ///
    /// `needs` is the frame whose descendants the wait may need run: `frame` itself, or, for
    /// a taskgroup, the task that owns the group, as a member of the group may depend on a
    /// sibling spawned before it (module docs).
    #[must_use]
    #[inline]
    pub(crate) fn wait_until(
        &self,
        frame: &Header,
        needs: &Header,
        done: impl Fn() -> bool,
        before_block: impl FnMut() -> bool,
    ) -> bool {
        // The callers return, or resume a task's panic, only once `done()`: if this unwound,
        // they would go on while tasks still use their frames and stack.
        let guard = AbortOnUnwind;
        let popped = self.run_next_of(frame, &done);
        let done = (popped.is_none() && done())
            || self.wait_loop(needs, popped, done, before_block, false);
        mem::forget(guard);
        done
    }

    /// The fast path of [`wait_until`](Self::wait_until): runs the tasks next on this worker's
    /// own queues while each is the task of `frame` or a child of it, until `done()`; returns
    /// what else it popped. Not while the runtime honours priorities: the waiting loop looks
    /// at the priority list first.
    #[inline]
    fn run_next_of(&self, frame: &Header, done: impl Fn() -> bool) -> Option<(Task, Found)> {
        // (The callers have just seen `done()` false.)
        if self.prioritized().is_some() {
            return None;
        }
        let ctx = self.ctx();
        loop {
            match self.pop_own(&ctx) {
                Some((task, found))
                    if ptr::eq(task.header_ptr(), frame) || ptr::eq(task.parent_ptr(), frame) =>
                {
                    self.run_nested(task, Some(found));
                    if done() {
                        return None;
                    }
                }
                other => return other,
            }
        }
    }

    /// [`wait_until`](Self::wait_until) for a scope this worker injected into another pool:
    /// it takes scopes injected into its own pool even when short of stack, as the scope it
    /// waits for may be waiting for one of them (pools whose scopes nest in each other).
    pub(crate) fn wait_until_injected_scope(&self, frame: &Header, done: impl Fn() -> bool) {
        let guard = AbortOnUnwind;
        let _ = self.wait_loop(frame, None, done, || true, true);
        mem::forget(guard);
    }

    /// The waiting loop: `frame` is the frame whose descendants the wait may need run (the
    /// `needs` of [`wait_until`](Self::wait_until)).
    fn wait_loop(
        &self,
        frame: &Header,
        popped: Option<(Task, Found)>,
        done: impl Fn() -> bool,
        mut before_block: impl FnMut() -> bool,
        injected_when_short: bool,
    ) -> bool {
        let sleep = &self.registry.sleep;
        let mut idle = IdleState::new();
        let ctx = self.ctx();
        // The stack in use does not change while this frame waits.
        let roomy = self.stack_has_room();
        let _short = (!roomy).then(|| ShortWait::enter(self));
        // A task of its own: run if it may run here, else set aside (module docs).
        let run_own = |task: Task, found: Found, idle: &mut IdleState| {
            if roomy || task.is_descendant_of(frame) {
                self.work_found(idle);
                self.run_nested(task, Some(found));
            } else if let Some((task, found)) = self.set_aside_until_descendant(task, frame) {
                self.work_found(idle);
                self.run_nested(task, Some(found));
            }
        };
        if let Some((task, found)) = popped {
            run_own(task, found, &mut idle);
        }
        loop {
            if done() {
                self.end_search(&mut idle);
                return true;
            }
            // A task with a priority that descends from `frame` first (what it waits for);
            // other tasks with a priority only where it would steal, below: taken before its
            // own deque, unrelated tasks would pile up on its stack at every wait.
            if let Some(task) = self
                .prioritized()
                .and_then(|list| list.take(|t| t.is_descendant_of(frame)))
            {
                self.work_found(&mut idle);
                self.run_nested(task, Some(Found::Priority));
                continue;
            }
            if let Some((task, found)) = self.pop_own(&ctx) {
                run_own(task, found, &mut idle);
                continue;
            }
            if !before_block() {
                self.end_search(&mut idle);
                return false;
            }
            let set_aside = &self.registry.set_aside;
            // What it may take of the tasks set aside. Short of stack: what it waits for, from
            // any node (a vicinity must not keep a waiter from what it needs). With room: tasks
            // within its reach, and what it waits for from beyond when no worker within reach
            // of it can take it, each being short of stack (a nested scope's task that the only
            // worker of a far node set aside while it waits for this one would otherwise wait
            // forever).
            let may_take = |t: &Task, node: usize| {
                if roomy {
                    self.queues.within_reach(&ctx, node)
                        || (t.is_descendant_of(frame) && self.none_free_for(node))
                } else {
                    t.is_descendant_of(frame)
                }
            };
            if !roomy && let Some(task) = set_aside.take(may_take) {
                self.work_found(&mut idle);
                self.run_nested(task, Some(Found::Injected));
                continue;
            }
            if roomy && let Some(task) = self.prioritized().and_then(|list| list.take(|_| true)) {
                self.work_found(&mut idle);
                self.run_nested(task, Some(Found::Priority));
                continue;
            }
            if roomy && let Some(task) = self.queues.steal(&ctx) {
                self.work_found(&mut idle);
                self.run_nested(task, Some(Found::Steal));
                continue;
            }
            // A scope injected from outside: the thread that injected it may be a worker of
            // another pool that waits for it (module docs).
            if (roomy || injected_when_short)
                && let Some(task) = self.queues.take_injected(&ctx)
            {
                self.work_found(&mut idle);
                self.run_nested(task, Some(Found::Injected));
                continue;
            }
            if roomy && let Some(task) = set_aside.take(may_take) {
                self.work_found(&mut idle);
                self.run_nested(task, Some(Found::Injected));
                continue;
            }
            // A task that prefers a busy worker, last: stealing it costs that worker's cache.
            if roomy && let Some((task, found)) = self.take_letter(&ctx) {
                self.work_found(&mut idle);
                self.run_nested(task, Some(found));
                continue;
            }
            if done() {
                self.end_search(&mut idle);
                return true;
            }
            let has_work = || {
                done()
                    || (roomy && self.queues.has_stealable_work(&ctx))
                    || (injected_when_short && self.queues.has_injected(&ctx))
                    || (!roomy && self.queues.has_own_work(&ctx))
                    || self.has_letters(&ctx, roomy)
                    || set_aside.has(may_take)
                    || self
                        .prioritized()
                        .is_some_and(|list| list.has(|t| roomy || t.is_descendant_of(frame)))
            };
            if roomy || injected_when_short {
                sleep.no_work_found(&mut idle, self.index(), has_work);
            } else {
                // Short of stack it takes no task another worker could take: a wake-up for
                // such work must go to a worker that can (`Sleep::no_work_found_picky`); what
                // it waits for wakes it with `wake`, a task set aside with `wake_all`.
                sleep.no_work_found_picky(&mut idle, self.index(), has_work);
            }
        }
    }

    /// Short of stack: sets `task` and the tasks popped after it aside until a descendant of
    /// `frame` comes (returned, to be run) or the worker's queues are empty; they go where
    /// workers with room take them, and this one when it needs them (module docs), at once,
    /// with one wake-up. Out of line: the waiting loop's frame, repeated once per level of a
    /// deep recursion, stays small.
    #[cold]
    #[inline(never)]
    fn set_aside_until_descendant(&self, task: Task, frame: &Header) -> Option<(Task, Found)> {
        let ctx = self.ctx();
        let mut aside = vec![task];
        let mut next = None;
        while let Some((task, found)) = self.pop_own(&ctx) {
            if task.is_descendant_of(frame) {
                next = Some((task, found));
                break;
            }
            aside.push(task);
        }
        self.registry
            .set_aside
            .put(aside, self.place.node, &self.registry.sleep);
        next
    }

    /// Takes the oldest task set aside that this worker's policy lets it run.
    #[inline]
    fn take_set_aside(&self, ctx: &WorkerCtx<'_>) -> Option<Task> {
        let set_aside = &self.registry.set_aside;
        if set_aside.is_empty() {
            return None;
        }
        set_aside.take(|_, node| self.queues.within_reach(ctx, node))
    }

    /// Whether no worker that may take a task of `node` set aside (within the policy's reach
    /// of it) can take one now: each is short of stack. Never, when every worker may.
    fn none_free_for(&self, node: usize) -> bool {
        let short = &self.registry.short_waits;
        self.registry.scheduler.reaching(node).is_some_and(|runs| {
            runs.iter()
                .flat_map(|r| r.clone())
                .all(|w| short[w].load(Ordering::SeqCst) > 0)
        })
    }

    /// Whether [`take_set_aside`](Self::take_set_aside) may find a task.
    #[inline]
    fn has_set_aside(&self, ctx: &WorkerCtx<'_>) -> bool {
        let set_aside = &self.registry.set_aside;
        !set_aside.is_empty() && set_aside.has(|_, node| self.queues.within_reach(ctx, node))
    }

    /// Whether more than `1 / STACK_RESERVE_DIVISOR` of this worker's stack is free, counting
    /// the segments it grew as used (module docs).
    #[inline]
    fn stack_has_room(&self) -> bool {
        let used = self.stack.get().used_at(stack_pointer());
        used < self.stack_size - self.stack_size / STACK_RESERVE_DIVISOR
    }

    /// Runs `task` on top of the running one (in a wait, or at once in `spawn`), on a new stack
    /// segment when this one is near its end (module docs). One comparison when it is not.
    #[inline]
    fn run_nested(&self, task: Task, found: Option<Found>) {
        if stack_pointer() < self.stack.get().limit {
            self.run_on_new_segment(task, found);
        } else {
            self.run_task(task, found);
        }
    }

    /// Runs `task` on a stack segment of its own, freed when it returns (module docs).
    #[cold]
    #[inline(never)]
    fn run_on_new_segment(&self, task: Task, found: Option<Found>) {
        let below = self.stack.get();
        let used_below = below.used_at(stack_pointer());
        let size = segment_size(self.stack_size);
        // Put back when the task returns or, were that possible, unwinds through here.
        let _restore = RestoreSegment(&self.stack, below);
        stacker::grow(size, || {
            // The first frame on the segment: its top, give or take this frame.
            self.stack
                .set(StackSegment::new(stack_pointer(), size, used_below));
            self.run_task(task, found);
        });
    }
}

/// The stack segment a worker runs on: its thread's stack, or one it grew (module docs).
#[derive(Clone, Copy)]
struct StackSegment {
    /// An address near the segment's top (stacks grow down).
    top: usize,
    /// Below this address a task run on top of a wait goes to a new segment: a quarter of the
    /// segment above its end, the room every such task starts with.
    limit: usize,
    /// The stack in use in the segments below this one, when it was entered.
    used_below: usize,
}

impl StackSegment {
    /// The segment of `size` bytes whose first frame is at `top`.
    fn new(top: usize, size: usize, used_below: usize) -> Self {
        StackSegment {
            top,
            limit: top.saturating_sub(size - size / STACK_RESERVE_DIVISOR),
            used_below,
        }
    }

    /// The stack in use, in this segment and those below it, at stack address `sp`.
    #[inline]
    fn used_at(&self, sp: usize) -> usize {
        self.used_below + self.top.saturating_sub(sp)
    }
}

/// Puts a worker's segment back when the task run on a newer one returns.
struct RestoreSegment<'a>(&'a Cell<StackSegment>, StackSegment);

impl Drop for RestoreSegment<'_> {
    fn drop(&mut self) {
        self.0.set(self.1);
    }
}

/// The smallest and the largest stack segment a worker grows (module docs).
const SEGMENT_SIZES: std::ops::RangeInclusive<usize> = (256 << 10)..=(256 << 20);

/// The size of the segments a worker whose thread has `stack_size` bytes of stack grows: the
/// same, within [`SEGMENT_SIZES`].
fn segment_size(stack_size: usize) -> usize {
    stack_size.clamp(*SEGMENT_SIZES.start(), *SEGMENT_SIZES.end())
}

/// An address in the caller's frame: the stack pointer, near enough for the checks here
/// (they leave a quarter of a segment to spare).
#[inline(always)]
fn stack_pointer() -> usize {
    let here = 0u8;
    ptr::addr_of!(here) as usize
}

/// A wait of a worker short of stack, counted in the registry's `short_waits` while it lasts.
struct ShortWait<'a> {
    count: &'a AtomicUsize,
}

impl<'a> ShortWait<'a> {
    /// Counts a short wait of `worker`. Tasks set aside that only this worker could have
    /// taken (of nodes within reach of it alone) may now be taken by their waiters beyond:
    /// sleepers are woken to look again.
    fn enter(worker: &'a WorkerThread) -> Self {
        let count = &worker.registry.short_waits[worker.index()];
        // Only the first short wait changes what others may take (nested ones are short
        // too, and `none_free_for` asks for a count above zero).
        if count.fetch_add(1, Ordering::SeqCst) == 0 && !worker.registry.set_aside.is_empty() {
            worker.registry.sleep.wake_all();
        }
        ShortWait { count }
    }
}

impl Drop for ShortWait<'_> {
    fn drop(&mut self) {
        self.count.fetch_sub(1, Ordering::SeqCst);
    }
}

/// Aborts the process when dropped by an unwinding panic: it guards runtime code that no user
/// panic reaches (every task body, and every user value the runtime drops, is run under
/// `catch_unwind`), so that a panic there, which would be a bug, cannot unwind past counters it
/// left unfinished into callers that would then free frames and stacks that tasks still use.
/// Forgotten on normal exit (`mem::forget`), so it never aborts a thread that was already
/// unwinding for another reason when it entered.
pub(crate) struct AbortOnUnwind;

impl Drop for AbortOnUnwind {
    fn drop(&mut self) {
        eprintln!(
            "numatask: a panic unwound through the runtime's own code (a bug); aborting \
             rather than let tasks run on freed memory"
        );
        std::process::abort();
    }
}
