//! The state of a task spawned with a result handle (`TaskBuilder::spawn_with_result`, and the task
//! `a` of `Scope::join`): who frees its frame, the task's finisher or the handle, and when the
//! handle may read the result. Its own file so that loom model-checks it
//! (`loom-tests/tests/result_state.rs`).

use crate::sync::atomic::{AtomicU32, Ordering};

/// The state of a task whose result a `TaskHandle` will take.
///
/// The task's frame outlives the task until both the task finished and the handle is gone;
/// whichever comes second frees it. `RUNNING -> DONE` by the finishing thread,
/// `RUNNING -> JOINING` by a joiner about to sleep (the finisher then wakes it),
/// `RUNNING/JOINING -> DROPPED` when the handle is dropped first.
///
/// Ordering: the finisher writes the result, then moves to `DONE` with `Release` (a `swap`, or
/// a plain store when it runs on the handle's own thread, which is then the only thread that
/// touches the state); the handle reads the state with `Acquire` before it reads the result.
pub struct ResultState(AtomicU32);

/// The task has not finished.
pub const RUNNING: u32 = 0;
/// The task has not finished and its handle's owner may sleep waiting for it.
pub const JOINING: u32 = 1;
/// The task finished; its result (if it did not panic) is in the frame.
pub const DONE: u32 = 2;
/// The handle was dropped before the task finished: the finisher frees the frame.
pub const DROPPED: u32 = 3;

impl Default for ResultState {
    fn default() -> Self {
        Self::new()
    }
}

impl ResultState {
    /// A task that has not finished, with its handle alive.
    #[inline]
    pub fn new() -> Self {
        ResultState(AtomicU32::new(RUNNING))
    }

    /// The current state, with `Acquire`.
    #[inline]
    pub fn get(&self) -> u32 {
        self.0.load(Ordering::Acquire)
    }

    /// The task finished. `same_thread`: the caller runs on the handle's thread, so nobody
    /// else can be touching the state. Returns the previous state.
    #[inline]
    pub fn finish(&self, same_thread: bool) -> u32 {
        if same_thread {
            let prev = self.0.load(Ordering::Relaxed);
            self.0.store(DONE, Ordering::Release);
            prev
        } else {
            self.0.swap(DONE, Ordering::AcqRel)
        }
    }

    /// The handle's owner is about to wait: `RUNNING -> JOINING`. Returns false if the task
    /// is already done.
    pub fn announce_join(&self) -> bool {
        match self
            .0
            .compare_exchange(RUNNING, JOINING, Ordering::AcqRel, Ordering::Acquire)
        {
            Ok(_) => true,
            Err(state) => state != DONE,
        }
    }

    /// The handle is dropped. Returns the previous state (`DONE`: the caller frees).
    #[inline]
    pub fn drop_handle(&self) -> u32 {
        if self.0.load(Ordering::Acquire) == DONE {
            return DONE;
        }
        self.0.swap(DROPPED, Ordering::AcqRel)
    }
}
