//! Events: the state of one command (queued, submitted, running, complete or failed), its
//! profiling timestamps, and the ways to wait for it (blocking, or as a `Future`).
//!
//! # Protocol
//!
//! An event's status lives under a mutex, with the wakers of the polls that found it pending.
//! It only moves forward (queued, submitted, running, then complete or failed), and each
//! stage's timestamp is taken under the lock when the status reaches it, so each is taken once
//! and they are in order. The first end counts; a later one changes nothing.
//!
//! Why no wake-up is lost: a blocking waiter reads the status and, finding it pending, sleeps
//! on the condition variable in one critical section (the wait releases the lock atomically);
//! the end sets the status in one critical section (`decide`) and notifies every sleeper after
//! it (`wake`). So
//! either the waiter read the final status, or it was asleep before the end took the lock and
//! the notification reaches it. A poll likewise leaves its waker in the critical section in
//! which it found the status pending, and the end takes the wakers, to wake them, in the one in
//! which it sets the status.
//!
//! # Memory ordering
//!
//! The status and the wakers are read and written under the lock, which orders them; it also
//! makes what the command wrote before its end visible to a waiter that returns or a poll that
//! is ready. The timestamps are relaxed atomics written under the lock. `ended` is the one flag
//! read without the lock:
//!
//! - the end stores it with `Release`, after the final status and the last timestamps, so a
//!   thread that loads it `true` with `Acquire` sees them all: [`EventState::profile`] reads
//!   the timestamps so, without the lock (a relaxed store would let it see a stamp missing);
//! - the store is made before the end releases the lock, so whoever saw the final status
//!   through the lock (a waiter that returned, a poll that was ready) sees `ended` too: the
//!   profile of an event that was waited for is there;
//! - a waiter spins on it before it sleeps; the spin only decides how soon the waiter takes
//!   the lock, never what it reads there.
//!
//! The loom models in `loom-tests/tests/kernels_event.rs` check each of these.

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context as TaskContext, Poll, Waker};
use std::time::Duration;

use crate::error::Failure;
use crate::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use crate::sync::{Arc, Condvar, Instant, Mutex, MutexGuard, spin_until};

/// Where a command is (OpenCL's `CL_QUEUED` ... `CL_COMPLETE`, and a failure).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum EventStatus {
    /// Enqueued; waiting for the commands it depends on.
    Queued,
    /// Everything it waits for is done; handed to the runtime.
    Submitted,
    /// Running (its first work-group started).
    Running,
    /// Done.
    Complete,
    /// Did not complete: its kernel panicked, or a command it depends on failed.
    Failed(Failure),
}

/// When a command went through each stage (OpenCL's profiling info), as durations since its
/// context was created.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Profile {
    /// Enqueued.
    pub queued: Duration,
    /// Released by the commands it waited for, and handed to the runtime.
    pub submitted: Duration,
    /// Its first work started on a worker.
    pub started: Duration,
    /// It completed or failed.
    pub ended: Duration,
}

/// The event of a command: cheap to clone; compare, wait on it, or put it in another
/// command's wait list.
///
/// `.await`ing it (it is a `Future`) waits without blocking a thread.
#[derive(Clone)]
pub struct Event {
    pub(crate) state: Arc<EventState>,
}

/// What an [`Event`] shares with its command: the status, its waiters and its timestamps.
pub struct EventState {
    pub(crate) context: u64,
    /// The byte that stands for this event in the context's dependence tracker: commands
    /// that wait for it read it; the command writes it.
    pub(crate) address: usize,
    /// `"kernel 'saxpy'"`, `"read"`, ... (for failures and `Debug`).
    pub(crate) command: String,
    epoch: Instant,
    /// How long a waiter stays awake before it sleeps (its context's choice).
    spin: Duration,
    inner: Mutex<Inner>,
    done: Condvar,
    /// Nanoseconds since `epoch`, plus 1 (0: not yet): queued, submitted, started, ended.
    /// Written under the lock, each once; read under it or after `ended`.
    times: [AtomicU64; 4],
    /// Set when the status becomes final, after the last timestamps (see the module docs).
    ended: AtomicBool,
}

struct Inner {
    status: EventStatus,
    wakers: Vec<Waker>,
}

const QUEUED: usize = 0;
const SUBMITTED: usize = 1;
const STARTED: usize = 2;
const ENDED: usize = 3;

impl EventState {
    /// A queued event of `command`, stamped now; `epoch` is its context's creation, `spin`
    /// how long its waiters stay awake before they sleep.
    pub fn new(
        context: u64,
        epoch: Instant,
        spin: Duration,
        address: usize,
        command: String,
    ) -> Arc<Self> {
        let state = Arc::new(EventState {
            context,
            address,
            command,
            epoch,
            spin,
            inner: Mutex::new(Inner {
                status: EventStatus::Queued,
                wakers: Vec::new(),
            }),
            done: Condvar::new(),
            times: Default::default(),
            ended: AtomicBool::new(false),
        });
        state.stamp(&[QUEUED]);
        state
    }

    fn lock(&self) -> MutexGuard<'_, Inner> {
        // The lock guards plain data; a panic while holding it (none is possible: no user code
        // runs under it) would leave it consistent.
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Stamps `stages` with the time now. Called with the lock held, except by `new`, before
    /// the event is shared.
    fn stamp(&self, stages: &[usize]) {
        let ns = u64::try_from(self.epoch.elapsed().as_nanos()).unwrap_or(u64::MAX - 1);
        for &stage in stages {
            self.times[stage].store(ns + 1, Ordering::Relaxed);
        }
    }

    /// The command was released and handed to the runtime.
    pub fn submitted(&self) {
        let mut inner = self.lock();
        if inner.status == EventStatus::Queued {
            self.stamp(&[SUBMITTED]);
            inner.status = EventStatus::Submitted;
        }
    }

    /// The command's work started.
    pub fn started(&self) {
        let mut inner = self.lock();
        let stages: &[usize] = match inner.status {
            EventStatus::Queued => &[SUBMITTED, STARTED],
            EventStatus::Submitted => &[STARTED],
            _ => return,
        };
        self.stamp(stages);
        inner.status = EventStatus::Running;
    }

    /// The command ended (`Err`: it failed): [`decide`](Self::decide), then
    /// [`wake`](Self::wake). The first end counts; a later one changes nothing.
    pub fn end(&self, result: Result<(), Failure>) {
        self.decide(result);
        self.wake();
    }

    /// Records how the command ended (the first outcome counts). Waiters that look see it at
    /// once, but sleepers and polls are woken only by [`wake`](Self::wake): the executor
    /// decides an event, releases the commands that depend on it (they read the outcome), and
    /// wakes last, so that a woken waiter never runs ahead of the release.
    pub fn decide(&self, result: Result<(), Failure>) {
        let mut inner = self.lock();
        let stages: &[usize] = match inner.status {
            EventStatus::Queued => &[SUBMITTED, STARTED, ENDED],
            EventStatus::Submitted => &[STARTED, ENDED],
            EventStatus::Running => &[ENDED],
            EventStatus::Complete | EventStatus::Failed(_) => return,
        };
        self.stamp(stages);
        inner.status = match result {
            Ok(()) => EventStatus::Complete,
            Err(f) => EventStatus::Failed(f),
        };
        // Release, after the stamps and under the lock: see the module docs.
        self.ended.store(true, Ordering::Release);
    }

    /// Wakes the threads and futures waiting for the decided event. A waker is the program's:
    /// a panic of one is dropped, and the others are still woken.
    pub fn wake(&self) {
        let wakers = std::mem::take(&mut self.lock().wakers);
        // After the lock is released, so that the woken waiters do not block on it at once.
        self.done.notify_all();
        for w in wakers {
            let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| w.wake()));
        }
    }

    /// Where the command is now.
    pub fn status(&self) -> EventStatus {
        self.lock().status.clone()
    }

    /// `None` while running; the outcome once ended.
    pub fn outcome(&self) -> Option<Result<(), Failure>> {
        match &self.lock().status {
            EventStatus::Complete => Some(Ok(())),
            EventStatus::Failed(f) => Some(Err(f.clone())),
            _ => None,
        }
    }

    /// Blocks until the command ended; its outcome.
    pub fn wait(&self) -> Result<(), Failure> {
        // A short command ends within a millisecond or two: wait that long awake before
        // sleeping (its context's choice, `wait_spin`; `spin_until` yields the core after a
        // brief spin, so that a worker sharing it runs the command meanwhile).
        spin_until(self.spin, || self.ended.load(Ordering::Acquire));
        let mut inner = self.lock();
        loop {
            match &inner.status {
                EventStatus::Complete => return Ok(()),
                EventStatus::Failed(f) => return Err(f.clone()),
                _ => inner = self.done.wait(inner).unwrap_or_else(|e| e.into_inner()),
            }
        }
    }

    /// Its timestamps, once it ended; `None` before.
    pub fn profile(&self) -> Option<Profile> {
        // Acquire: pairs with the end's Release store, made after every stamp.
        if !self.ended.load(Ordering::Acquire) {
            return None;
        }
        let t = self.times.each_ref().map(|t| t.load(Ordering::Relaxed));
        let d = |ns: u64| Duration::from_nanos(ns.saturating_sub(1));
        Some(Profile {
            queued: d(t[QUEUED]),
            submitted: d(t[SUBMITTED]),
            started: d(t[STARTED]),
            ended: d(t[ENDED]),
        })
    }

    /// The outcome if it ended; otherwise registers `cx`'s waker, woken when it ends.
    pub fn poll(&self, cx: &mut TaskContext<'_>) -> Poll<Result<(), Failure>> {
        let mut inner = self.lock();
        match &inner.status {
            EventStatus::Complete => Poll::Ready(Ok(())),
            EventStatus::Failed(f) => Poll::Ready(Err(f.clone())),
            _ => {
                if !inner.wakers.iter().any(|w| w.will_wake(cx.waker())) {
                    inner.wakers.push(cx.waker().clone());
                }
                Poll::Pending
            }
        }
    }
}

impl Event {
    /// Blocks until the command completed (`Ok`) or failed (`Err`, with why).
    ///
    /// Called from inside a task or kernel of the same runtime, it blocks that worker: with
    /// every worker blocked so, the command it waits for cannot run. Wait through a wait
    /// list, or `.await` the event, instead.
    pub fn wait(&self) -> Result<(), Failure> {
        self.state.wait()
    }

    /// Where the command is now.
    pub fn status(&self) -> EventStatus {
        self.state.status()
    }

    /// Whether it completed or failed.
    pub fn is_done(&self) -> bool {
        self.state.outcome().is_some()
    }

    /// Its timestamps, once it ended (OpenCL's `clGetEventProfilingInfo`); `None` before.
    pub fn profile(&self) -> Option<Profile> {
        self.state.profile()
    }

    /// What the command is: `"kernel 'saxpy'"`, `"read"`, `"marker"`, ...
    pub fn command(&self) -> &str {
        &self.state.command
    }
}

impl PartialEq for Event {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.state, &other.state)
    }
}

impl Eq for Event {}

impl std::hash::Hash for Event {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        Arc::as_ptr(&self.state).hash(state);
    }
}

impl fmt::Debug for Event {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Event")
            .field("command", &self.state.command)
            .field("status", &self.status())
            .finish()
    }
}

impl Future for Event {
    type Output = Result<(), Failure>;

    fn poll(self: Pin<&mut Self>, cx: &mut TaskContext<'_>) -> Poll<Self::Output> {
        self.state.poll(cx)
    }
}
