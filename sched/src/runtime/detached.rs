//! [`DetachedJobs`]: the count of a runtime's detached jobs ([`Runtime::spawn`]) queued or
//! running, which dropping the runtime waits for.
//!
//! # Protocol
//!
//! - [`Runtime::spawn`] counts a job ([`start`](DetachedJobs::start)) before it injects it,
//!   and the worker that ran the job uncounts it ([`finish`](DetachedJobs::finish)) after the
//!   body's scope ended and the job was freed. A job spawned by a running detached job is
//!   counted before its spawner is uncounted, so the count does not pass through zero while
//!   jobs remain (jobs that spawn jobs are all waited for).
//! - Dropping the runtime from outside its pool waits, blocked on a condition variable, until
//!   the count is zero ([`wait_for_none`](DetachedJobs::wait_for_none)), then stops the
//!   workers as before.
//! - Dropped on one of its own workers (the last `Arc<Runtime>` let go by a task), the
//!   runtime cannot wait: the job that task belongs to is among those counted. If jobs are
//!   outstanding it leaves the stop to the last of them
//!   ([`stop_after_last`](DetachedJobs::stop_after_last)), whose worker, seeing the count
//!   reach zero, stops the workers and writes the trace; their threads then exit on their own
//!   (nobody joins them, as the worker dropping the runtime never could join itself).
//!
//! # Memory ordering
//!
//! The count is an atomic, so that spawning and finishing a job take no lock; the lock is
//! taken only by a `finish` that brings the count to zero and by the waiters. The decrement
//! is `AcqRel` and the waiters' loads `Acquire`: everything a job did happens before a drop
//! that saw the count at zero returns (a test that reads flags the jobs set after the drop
//! sees them). No wake-up is lost: a waiter reads the count under the lock and waits in the
//! same critical section (`Condvar::wait` releases the lock atomically); the `finish` that
//! brings the count to zero takes the lock after its decrement and notifies under it, so it
//! notifies either after the waiter waits, or before the waiter locks, and the waiter then
//! reads zero. The deferred stop is decided under the same lock: either the dropping worker
//! sees the count at zero and stops the workers itself, or the last `finish`, locking after
//! its decrement, sees the stop requested; never both, never neither.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, PoisonError};

use super::trace_sink::TraceSink;
use crate::sleep::Sleep;

/// The detached jobs of a runtime queued or running (module docs).
#[derive(Default)]
pub(crate) struct DetachedJobs {
    outstanding: AtomicUsize,
    /// `Some` once the runtime was dropped on one of its own workers with jobs outstanding:
    /// the last job stops the workers, and writes the trace it holds, if any.
    stop: Mutex<Option<DeferredStop>>,
    /// Signalled when the count reaches zero.
    none_left: Condvar,
}

/// What the last detached job of a runtime dropped on its own worker does.
pub(super) struct DeferredStop {
    pub(super) trace: Option<Arc<TraceSink>>,
}

impl DetachedJobs {
    /// Counts a job about to be injected.
    #[inline]
    pub(crate) fn start(&self) {
        // `Relaxed`: the job is published by the injection that follows, and whoever waits
        // for the count learned of this spawn through its own synchronisation with the
        // spawner (it holds the runtime by `&mut` or as the last `Arc`).
        self.outstanding.fetch_add(1, Ordering::Relaxed);
    }

    /// Uncounts a job that ran and was freed; the last one wakes the waiters and does the
    /// deferred stop, if any.
    #[inline]
    pub(crate) fn finish(&self, sleep: &Sleep) {
        if self.outstanding.fetch_sub(1, Ordering::AcqRel) == 1 {
            self.last_finished(sleep);
        }
    }

    #[cold]
    fn last_finished(&self, sleep: &Sleep) {
        let stop = {
            let mut stop = self.stop.lock().unwrap_or_else(PoisonError::into_inner);
            self.none_left.notify_all();
            stop.take()
        };
        if let Some(stop) = stop {
            sleep.notify_all();
            if let Some(trace) = stop.trace {
                trace.finish_if_pending();
            }
        }
    }

    /// Blocks the calling thread until no job is queued or running.
    pub(super) fn wait_for_none(&self) {
        if self.outstanding.load(Ordering::Acquire) == 0 {
            return;
        }
        let mut stop = self.stop.lock().unwrap_or_else(PoisonError::into_inner);
        while self.outstanding.load(Ordering::Acquire) != 0 {
            stop = self
                .none_left
                .wait(stop)
                .unwrap_or_else(PoisonError::into_inner);
        }
    }

    /// For a runtime dropped on one of its own workers: if jobs are outstanding, hands `stop`
    /// to the last of them and returns true; otherwise returns false (the caller stops the
    /// workers now).
    pub(super) fn stop_after_last(&self, stop: impl FnOnce() -> DeferredStop) -> bool {
        let mut slot = self.stop.lock().unwrap_or_else(PoisonError::into_inner);
        if self.outstanding.load(Ordering::Acquire) == 0 {
            return false;
        }
        *slot = Some(stop());
        true
    }
}
