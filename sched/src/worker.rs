//! Worker threads: the idle loop, the waiting loop behind `taskwait`, and the thread-local
//! pointer to the current worker.
//!
//! # The taskwait policy: which tasks a waiting worker may run
//!
//! A worker that waits (at a `taskwait`, at the end of a taskgroup or of a scope, or for a
//! result handle) for a frame `F` runs **only tasks that descend from `F`**: `F`'s children,
//! their children, and so on. This is OpenMP's task scheduling constraint for tied tasks. It
//! looks for them
//!
//! 1. on its own deque (newest first): the tasks above the point where `F` started are `F`'s
//!    descendants;
//! 2. by stealing from other workers (oldest first, victims in round-robin order).
//!
//! A task it takes that does not descend from `F` is put back on its own deque (through
//! [`Scheduler::requeue`](crate::scheduler::Scheduler::requeue), which wakes a sleeper to run
//! it); the worker then stops popping its own deque until it ran something, because the
//! foreign task now sits on top. With nothing to run it backs off and then sleeps; the last
//! child of `F` wakes it.
//!
//! What this buys:
//!
//! - a waiting worker never runs unrelated code on top of a suspended task, so a lock held
//!   across a `taskwait` is never taken again by an unrelated task on the same thread (the
//!   re-entrancy deadlock rayon users meet), and unrelated priorities cannot livelock it;
//! - the stack of a worker holds one chain of nested waits along one path of the task tree,
//!   so stack depth is bounded by the depth of task nesting (recursion `n` deep needs `n`
//!   frames of stack, whatever the width of the computation);
//! - no deadlock from waiting: everything `F` needs descends from `F`, and descendants are
//!   either running (on some worker, making progress), or queued where the waiting worker or
//!   another worker finds them. With one worker every descendant of `F` is on the worker's
//!   own deque above every older task, so it runs them all.
//!
//! One exception: if a foreign task cannot be put back because the deque is full, the
//! waiting worker runs it inline rather than lose it.
//!
//! An idle worker (not waiting) runs anything: its own deque, then stealing, then tasks
//! injected from outside the pool.

use std::cell::Cell;
use std::ptr;
use std::sync::Arc;

use crate::job::{FrameCache, Header, Task};
use crate::runtime::Registry;
use crate::scheduler::{WorkerCtx, WorkerPlace, WorkerQueues};
use crate::sleep::IdleState;

thread_local! {
    /// The worker that runs on this thread, if it is one.
    static CURRENT: Cell<*const WorkerThread> = const { Cell::new(ptr::null()) };
}

/// One worker: its place, its part of the scheduler, the pool it belongs to.
pub(crate) struct WorkerThread {
    place: WorkerPlace,
    queues: WorkerQueues,
    frames: FrameCache,
    registry: Arc<Registry>,
}

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
    pub(crate) fn frames(&self) -> &FrameCache {
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
        if let Err(task) = self.queues.push(&self.ctx(), task) {
            task.execute(self);
        }
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
        let worker = WorkerThread {
            place,
            queues,
            frames: FrameCache::new(),
            registry,
        };
        CURRENT.with(|c| c.set(&worker));
        worker.main_loop();
        CURRENT.with(|c| c.set(ptr::null()));
    }

    fn main_loop(&self) {
        let sleep = &self.registry.sleep;
        let mut idle = IdleState::new();
        loop {
            let ctx = self.ctx();
            let found = self
                .queues
                .pop(&ctx)
                .or_else(|| self.queues.steal(&ctx))
                .or_else(|| self.queues.take_injected(&ctx));
            if let Some(task) = found {
                sleep.work_found(&mut idle);
                task.execute(self);
                continue;
            }
            if sleep.is_terminated() {
                return;
            }
            sleep.no_work_found(&mut idle, self.index(), || self.queues.has_work(&ctx));
        }
    }

    /// Runs descendants of `frame` (see the module docs) until `done()`. `before_block` is
    /// called before the worker first looks beyond its own deque, and so before it may
    /// sleep: it must arrange for whoever makes `done()` true to wake this worker.
    pub(crate) fn wait_until(
        &self,
        frame: &Header,
        done: impl Fn() -> bool,
        mut before_block: impl FnMut(),
    ) {
        let sleep = &self.registry.sleep;
        let mut idle = IdleState::new();
        let mut own_top_is_foreign = false;
        loop {
            if done() {
                return;
            }
            let ctx = self.ctx();
            if !own_top_is_foreign {
                if let Some(task) = self.queues.pop(&ctx) {
                    if task.is_descendant_of(frame) {
                        task.execute(self);
                        sleep.work_found(&mut idle);
                    } else {
                        self.requeue(task);
                        own_top_is_foreign = true;
                    }
                    continue;
                }
            }
            before_block();
            if let Some(task) = self.queues.steal(&ctx) {
                if task.is_descendant_of(frame) {
                    task.execute(self);
                    sleep.work_found(&mut idle);
                    own_top_is_foreign = false;
                    continue;
                }
                self.requeue(task);
                own_top_is_foreign = true;
            }
            if done() {
                return;
            }
            sleep.no_work_found(&mut idle, self.index(), || {
                done() || self.queues.has_stealable_work(&ctx)
            });
        }
    }

    /// Puts back a task this waiting worker may not run.
    fn requeue(&self, task: Task) {
        if let Err(task) = self.queues.requeue(&self.ctx(), task) {
            // No room: running it is better than losing it (the policy's one exception).
            task.execute(self);
        }
    }
}
