//! The runtime: a pool of pinned workers, one scheduling policy, and the entry into scopes.
//!
//! [`Runtime::new`] reads the environment (see [`crate::config`]); [`Runtime::builder`] starts
//! from the defaults and reads no runtime variable (the topology still comes from
//! `NUMATASK_TOPOLOGY` unless [`RuntimeBuilder::topology`] gives one; those set but unread are
//! named once per process on stderr). Workers are placed on the `n` places of `OMP_PLACES`
//! ([`Places`](crate::Places); by default the cores the process may run on, [`Topology::usable_cores`]: all
//! of them unless `taskset`, `numactl` or a launcher bound the process to some; cores are
//! numbered node by node) as `OMP_PROC_BIND` says ([`ProcBind`](crate::ProcBind)): by default worker `i` on the
//! `i`-th place (with more workers than places, runs of consecutive workers on each), so that
//! workers fill one NUMA node before the next. Each knows its place's node. With
//! `OMP_PROC_BIND=true` (the default) each worker pins itself to its place; a pinning the OS
//! refuses does not stop the runtime (the worker runs unpinned), and
//! [`Runtime::pinning`] reports it.
//!
//! Dropping a [`Runtime`] stops its workers and joins their threads. A scope cannot be running
//! then: [`Runtime::scope`] borrows the runtime.
//!
//! The parts: `builder` (the [`RuntimeBuilder`] and the start of the workers), `settings`
//! (the effective [`Settings`]), `places` (`OMP_PLACES` resolved against the topology),
//! `warnings` (what start-up says on stderr), `trace_sink` (when trace files are written),
//! `global` (the process-wide runtime, [`scope()`] and [`join()`]) and `display`
//! (`OMP_DISPLAY_ENV`).

mod builder;
mod display;
mod global;
mod places;
mod settings;
mod trace_sink;
mod warnings;

use std::fmt;
use std::io;
use std::sync::Arc;
use std::thread::{self, JoinHandle};

use numatask_alloc::Pinning;
use numatask_alloc::{AllocError, Topology};

use crate::error::BuildError;
use crate::scheduler::{AnyScheduler, WorkerPlace};
use crate::scope::{self, Scope};
use crate::sleep::Sleep;
use crate::trace::{TraceSummary, Tracer};
use crate::worker::{SetAside, WorkerThread};

pub use builder::RuntimeBuilder;
pub use global::{join, scope, try_join, try_scope};
pub use settings::Settings;
use trace_sink::TraceSink;

/// What all workers of a pool share.
pub(crate) struct Registry {
    pub(crate) scheduler: AnyScheduler,
    pub(crate) sleep: Sleep,
    pub(crate) places: Box<[WorkerPlace]>,
    /// The places of `OMP_PLACES`, resolved: each its processing units.
    pub(crate) place_list: Box<[Vec<usize>]>,
    /// Each worker's place, an index into `place_list`.
    pub(crate) worker_places: Box<[usize]>,
    pub(crate) topology: Arc<Topology>,
    pub(crate) settings: Settings,
    /// `Some` only when tracing: workers test it once per task.
    pub(crate) tracer: Option<Arc<Tracer>>,
    /// Tasks set aside by waiting workers short of stack (see [`crate::worker`]).
    pub(crate) set_aside: SetAside,
    /// The tasks with a priority, when the runtime honours priorities
    /// (`OMP_MAX_TASK_PRIORITY` > 0; see [`crate::worker`]).
    pub(crate) prioritized: Option<crate::worker::Prioritized>,
    /// For each worker, how many of its waits are short of stack (nested waits: those below
    /// the first are short too): such a worker takes no task set aside but its own
    /// descendants (see [`crate::worker`]).
    pub(crate) short_waits: Box<[std::sync::atomic::AtomicUsize]>,
}

/// A pool of workers running scoped tasks (see the crate docs for an example).
pub struct Runtime {
    registry: Arc<Registry>,
    threads: Vec<JoinHandle<()>>,
    pinning: Vec<Option<Result<Pinning, AllocError>>>,
    /// Where the trace goes, when tracing (shared with the exit handler: [`TraceSink`]).
    trace: Option<Arc<TraceSink>>,
}

impl Runtime {
    /// A runtime configured by the environment (see [`crate::config`]).
    pub fn new() -> Result<Runtime, BuildError> {
        RuntimeBuilder::from_env()?.build()
    }

    /// A builder with the defaults (no `OMP_*` variable is read; the topology is
    /// [`Topology::current`]'s, which follows `NUMATASK_TOPOLOGY`, unless
    /// [`RuntimeBuilder::topology`] gives one).
    pub fn builder() -> RuntimeBuilder {
        RuntimeBuilder::new()
    }

    /// Runs `f` with a [`Scope`] in which it can spawn tasks that borrow anything outliving
    /// `'scope`, and returns its result once every task spawned in the scope (at any depth)
    /// has finished.
    ///
    /// From a thread outside the pool, the body runs on a worker while the calling thread
    /// blocks. From a worker of this runtime (inside a task), the body runs right there and
    /// the worker runs the scope's tasks while it waits, so nesting scopes does not deadlock.
    /// From a worker of another runtime, the body runs on a worker of this one, as from an
    /// outside thread, while the calling worker keeps running tasks of its own pool until the
    /// scope ends (so pools whose scopes nest in each other do not deadlock; scopes nested
    /// back and forth between two pools need stack in proportion to their number, not to
    /// their nesting: a worker that waits deep grows its stack in segments).
    ///
    /// A panic of `f` or of a task that no `taskwait` (or [`TaskHandle::join`](crate::TaskHandle::join)) resumed is
    /// resumed here, after all tasks finished.
    ///
    /// A body that uses `?` returns a `Result` whose error type nothing else names: name it,
    /// as in `Ok::<(), MyError>(())`, or the compiler asks for it. (rustc once spent minutes
    /// and gigabytes reporting this mistake with this crate loaded; were that to come back,
    /// this example's doc test would run for minutes instead of a second.)
    ///
    /// ```compile_fail,E0282
    /// # let rt = numatask_sched::Runtime::builder().num_threads(1).build().unwrap();
    /// let n = rt.scope(|_| {
    ///     let n: u8 = "1".parse()?;
    ///     Ok(n) // error[E0282]: type annotations needed
    /// });
    /// ```
    pub fn scope<'scope, F, R>(&self, f: F) -> R
    where
        F: FnOnce(&Scope<'scope>) -> R + Send,
        R: Send,
    {
        match WorkerThread::current() {
            Some(worker) if Arc::ptr_eq(worker.registry(), &self.registry) => {
                scope::run_scope(worker, f)
            }
            _ => scope::inject_scope(&self.registry, f),
        }
    }

    /// Number of workers.
    pub fn num_workers(&self) -> usize {
        self.registry.places.len()
    }

    /// Where each worker runs: its core and NUMA node (for a place of several cores, the
    /// first of them, and the node holding most of the place). The `OMP_PLACES` places
    /// themselves are [`place_list`](Self::place_list).
    pub fn workers(&self) -> &[WorkerPlace] {
        &self.registry.places
    }

    /// The places workers are bound to (`OMP_PLACES` resolved against the topology and the
    /// process's CPU binding): each the OS indices of its processing units.
    pub fn place_list(&self) -> &[Vec<usize>] {
        &self.registry.place_list
    }

    /// The place of each worker: an index into [`place_list`](Self::place_list).
    pub fn worker_places(&self) -> &[usize] {
        &self.registry.worker_places
    }

    /// How each worker was pinned: `None` without `OMP_PROC_BIND`, otherwise what
    /// [`Topology::pin_current_thread`] answered (an `Err` means the worker runs unpinned).
    pub fn pinning(&self) -> &[Option<Result<Pinning, AllocError>>] {
        &self.pinning
    }

    /// The effective settings.
    pub fn settings(&self) -> &Settings {
        &self.registry.settings
    }

    /// The topology the workers are placed on.
    pub fn topology(&self) -> &Arc<Topology> {
        &self.registry.topology
    }

    /// The task tracer, when tracing (`NUMATASK_TRACE` or [`RuntimeBuilder::trace`]).
    pub fn tracer(&self) -> Option<&Arc<Tracer>> {
        self.registry.tracer.as_ref()
    }

    /// Writes the trace file (if there is one) with every task traced so far, prints the
    /// locality summary to standard error and returns it; `None` when not tracing. Dropping
    /// the runtime does the same if tasks ran since, and so does the process's normal exit
    /// for a runtime never dropped (the process-wide [`Runtime::global`], one in a `static`).
    ///
    /// Called from outside the pool, it first waits for the tasks running then to end, so that
    /// the trace holds every task of the scopes that returned, ends included, and dropping the
    /// runtime afterwards writes and prints nothing more unless tasks ran since. Called from a
    /// task, it writes what is recorded (the running tasks marked unfinished).
    pub fn finish_trace(&self) -> Option<io::Result<TraceSummary>> {
        let trace = self.trace.as_ref()?;
        let in_pool = WorkerThread::current()
            .is_some_and(|worker| Arc::ptr_eq(worker.registry(), &self.registry));
        if !in_pool {
            trace.tracer().wait_for_running();
        }
        Some(trace.finish())
    }
}

impl fmt::Debug for Runtime {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Runtime")
            .field("settings", self.settings())
            .field("workers", &self.workers())
            .finish()
    }
}

impl Drop for Runtime {
    fn drop(&mut self) {
        self.registry.sleep.notify_all();
        let me = thread::current().id();
        for handle in self.threads.drain(..) {
            // A worker cannot join itself (the runtime dropped from one of its own tasks);
            // it exits on its own once the task returns.
            if handle.thread().id() != me {
                // A worker thread never panics (task panics are caught), so there is no
                // payload to report.
                let _ = handle.join();
            }
        }
        if let Some(trace) = &self.trace {
            trace.finish_if_pending();
        }
    }
}

/// Where the calling thread runs, if it is a worker of some runtime.
pub fn current_worker() -> Option<WorkerPlace> {
    WorkerThread::current().map(|w| *w.place())
}

/// The number of workers of the runtime the calling thread works for, or `None` outside
/// every pool (rayon's `current_num_threads`; [`Runtime::global`]`().num_workers()` gives the
/// process-wide runtime's).
///
/// ```
/// let rt = numatask_sched::Runtime::builder().num_threads(2).build()?;
/// assert_eq!(numatask_sched::current_num_workers(), None);
/// assert_eq!(rt.scope(|_| numatask_sched::current_num_workers()), Some(2));
/// # Ok::<(), numatask_sched::BuildError>(())
/// ```
pub fn current_num_workers() -> Option<usize> {
    WorkerThread::current().map(|w| w.registry().places.len())
}
