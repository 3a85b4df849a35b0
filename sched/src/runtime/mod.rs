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
//! Dropping a [`Runtime`] waits for its detached jobs ([`Runtime::spawn`]) queued or running,
//! then stops its workers and joins their threads. A scope cannot be running then:
//! [`Runtime::scope`] borrows the runtime.
//!
//! The parts: `builder` (the [`RuntimeBuilder`] and the start of the workers), `detached`
//! (the count of detached jobs that dropping waits for), `settings`
//! (the effective [`Settings`]), `places` (`OMP_PLACES` resolved against the topology),
//! `warnings` (what start-up says on stderr), `trace_sink` (when trace files are written),
//! `global` (the process-wide runtime, [`scope()`] and [`join()`]) and `display`
//! (`OMP_DISPLAY_ENV`).

mod builder;
mod detached;
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
use detached::{DeferredStop, DetachedJobs};
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
    /// The tasks that prefer a worker, in that worker's mailbox (see [`crate::mailbox`]).
    pub(crate) mail: crate::mailbox::Mailboxes,
    /// The tasks with a priority, when the runtime honours priorities
    /// (`OMP_MAX_TASK_PRIORITY` > 0; see [`crate::worker`]).
    pub(crate) prioritized: Option<crate::worker::Prioritized>,
    /// For each worker, how many of its waits are short of stack (nested waits: those below
    /// the first are short too): such a worker takes no task set aside but its own
    /// descendants (see [`crate::worker`]).
    pub(crate) short_waits: Box<[std::sync::atomic::AtomicUsize]>,
    /// The detached jobs ([`Runtime::spawn`]) queued or running, which dropping the runtime
    /// waits for.
    pub(crate) detached: DetachedJobs,
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

    /// Runs `f` on a worker of this runtime as a scope body, without waiting for it (rayon's
    /// `ThreadPool::spawn`, tokio's `Runtime::spawn`): returns at once, from any thread (a
    /// worker of this runtime or of another one, or a thread outside every pool). The body's
    /// scope ends as [`Runtime::scope`]'s does, after every task spawned in it (at any depth)
    /// has finished; in the body, code after a [`Scope::taskwait`] runs once the tasks spawned
    /// before it finished, which is where a job puts what it does on completion.
    ///
    /// A detached job is one heap allocation, queued where scope bodies entered from outside
    /// the pool are: the first worker to look for work takes it (an idle one, or one waiting
    /// at a `taskwait`, which then runs the job to its end before it goes back to what it
    /// waited for), and the tasks it spawns are scheduled as any others (dealt by their
    /// footprint under the locality-aware policy). No thread is started.
    ///
    /// ```
    /// use std::sync::atomic::{AtomicU64, Ordering};
    /// use std::sync::{Arc, mpsc};
    /// use numatask_sched::{Footprint, Runtime};
    ///
    /// let rt = Runtime::builder().num_threads(2).build()?;
    /// let data: Arc<Vec<u64>> = Arc::new((1..=100).collect());
    /// let (done, finished) = mpsc::channel();
    /// rt.spawn(move |s| {
    ///     let total = Arc::new(AtomicU64::new(0));
    ///     for part in 0..4 {
    ///         let (data, total) = (Arc::clone(&data), Arc::clone(&total));
    ///         let near = Footprint::of(&data[part * 25..][..25]);
    ///         s.task().affinity(near).spawn(move |_| {
    ///             let sum: u64 = data[part * 25..][..25].iter().sum();
    ///             total.fetch_add(sum, Ordering::Relaxed);
    ///         });
    ///     }
    ///     s.taskwait(); // the four tasks finished
    ///     let _ = done.send(total.load(Ordering::Relaxed));
    /// });
    /// // `spawn` returned at once; the job runs meanwhile.
    /// assert_eq!(finished.recv()?, 5050);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// The tasks of the body's `Scope<'static>` capture `'static` data only (owned values,
    /// `Arc`s): what the body owns goes away when it returns, before its scope ends. For tasks
    /// that borrow what the body owns (dependent tasks on [`Blocks`](crate::data::Blocks) of
    /// a vector it owns), the body opens a scope of its own with [`scope()`], which runs on
    /// the same worker and ends before the body goes on:
    ///
    /// ```
    /// use std::sync::mpsc;
    /// use numatask_sched::data::Blocks;
    ///
    /// let rt = numatask_sched::Runtime::builder().num_threads(2).build()?;
    /// let (done, finished) = mpsc::channel();
    /// rt.spawn(move |_| {
    ///     let mut v = vec![1u64; 64];
    ///     let chained = numatask_sched::scope(|s| {
    ///         let blocks = Blocks::new(&mut v, 16)?;
    ///         for i in 1..blocks.len() {
    ///             s.task()
    ///                 .reads(&blocks[i - 1])
    ///                 .updates(&blocks[i])
    ///                 .spawn(|_, (prev, this)| this[0] += prev[0])?;
    ///         }
    ///         Ok::<(), numatask_sched::DependError>(())
    ///     });
    ///     let _ = done.send(chained.map(|()| v[48]));
    /// });
    /// assert_eq!(finished.recv()??, 4);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// Straight on the job's scope, such tasks do not compile:
    ///
    /// ```compile_fail,E0597
    /// # let rt = numatask_sched::Runtime::builder().num_threads(1).build().unwrap();
    /// rt.spawn(|s| {
    ///     let mut v = vec![0u8; 8];
    ///     // error[E0597]: `v` does not live long enough (the task may outlive the body)
    ///     let blocks = numatask_sched::data::Blocks::new(&mut v, 4).unwrap();
    ///     let _ = s.task().updates(&blocks[0]).spawn(|_, (b,)| b[0] = 1);
    /// });
    /// ```
    ///
    /// # Panics in the job
    ///
    /// A panic of `f`, or of a task of its scope that no `taskwait` (or
    /// [`TaskHandle::join`](crate::TaskHandle::join)) resumed, is caught when the scope ends and
    /// dropped there: nothing waits for a detached job to resume it in. The panic hook reported
    /// it where it happened (as for a thread of `std::thread::spawn` whose handle is dropped),
    /// and the runtime stays usable. A job that must report its failure catches its panics
    /// itself (`std::panic::catch_unwind` around a `taskwait`, for instance) and sends the
    /// outcome.
    ///
    /// # Dropping the runtime
    ///
    /// Dropping the runtime waits for every detached job queued or running, those spawned by
    /// detached jobs included, before it stops the workers: a job that never ends keeps the
    /// drop from returning (dropped in a task of another runtime, it blocks that worker
    /// meanwhile, as it does while it joins the threads). The last `Arc<Runtime>` let go on
    /// one of its own workers (by a detached job, for instance) cannot wait for the job it
    /// runs in: the drop then returns at once, and the workers stop, without being joined,
    /// once the last detached job has finished. [`Runtime::global`] is never dropped.
    pub fn spawn<F>(&self, f: F)
    where
        F: FnOnce(&Scope<'static>) + Send + 'static,
    {
        scope::spawn_detached(&self.registry, f);
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
    /// Called from outside the pool, it first waits for the tasks running then to end (the
    /// bodies of detached jobs running then included: [`Runtime::spawn`]), so that the trace
    /// holds every task of the scopes that returned, ends included, and dropping the runtime
    /// afterwards writes and prints nothing more unless tasks ran since. Called from a task, it
    /// writes what is recorded (the running tasks marked unfinished).
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
        let on_own_worker = WorkerThread::current()
            .is_some_and(|worker| Arc::ptr_eq(worker.registry(), &self.registry));
        if !on_own_worker {
            self.registry.detached.wait_for_none();
        } else if self.registry.detached.stop_after_last(|| DeferredStop {
            trace: self.trace.clone(),
        }) {
            // Dropped by one of its own tasks, perhaps of a detached job, which it cannot
            // wait for: the last detached job stops the workers and writes the trace; the
            // threads exit on their own (module `detached`).
            return;
        }
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
