//! The runtime: a pool of pinned workers, one scheduling policy, and the entry into scopes.
//!
//! [`Runtime::new`] reads the environment (see [`crate::config`]); [`Runtime::builder`] starts
//! from the defaults and reads no runtime variable (the topology still comes from
//! `NUMATASK_TOPOLOGY` unless [`RuntimeBuilder::topology`] gives one; those set but unread are
//! named once per process on stderr). Workers are placed on the `n` places of `OMP_PLACES`
//! ([`Places`]; by default the cores the process may run on, [`Topology::usable_cores`]: all
//! of them unless `taskset`, `numactl` or a launcher bound the process to some; cores are
//! numbered node by node) as `OMP_PROC_BIND` says ([`ProcBind`]): by default worker `i` on the
//! `i`-th place (with more workers than places, runs of consecutive workers on each), so that
//! workers fill one NUMA node before the next. Each knows its place's node. With
//! `OMP_PROC_BIND=true` (the default) each worker pins itself to its place; a pinning the OS
//! refuses does not stop the runtime (the worker runs unpinned), and
//! [`Runtime::pinning`] reports it.
//!
//! Dropping a [`Runtime`] stops its workers and joins their threads. A scope cannot be running
//! then: [`Runtime::scope`] borrows the runtime.

use std::fmt::{self, Write as _};
use std::io;
use std::path::PathBuf;
use std::sync::mpsc;
use std::sync::{Arc, Mutex, OnceLock, PoisonError, Weak};
use std::thread::{self, JoinHandle};

use numatask_alloc::Pinning;
use numatask_alloc::{AllocError, CoreGroup, Topology};

use crate::config::{
    DEFAULT_EVEN_TOLERANCE, DEFAULT_STACK_SIZE, DISPLAY_ENV_ENV, DisplayEnv, ENV_VARS,
    EVEN_TOLERANCE_ENV, EnvSettings, MAX_EVEN_TOLERANCE, MAX_STACK_SIZE, MAX_TASK_PRIORITY_ENV,
    MIN_STACK_SIZE, MIN_VICINITY, NUM_THREADS_ENV, PLACES_ENV, PROC_BIND_ENV, Places, ProcBind,
    SCHEDULER_ENV, STACKSIZE_ENV, THREAD_LIMIT_ENV, VICINITY_ENV, WAIT_POLICY_ENV, WaitPolicy,
    format_size, write_place_list,
};
use crate::error::SchedError;
use crate::scheduler::{AnyScheduler, SchedulerConfig, SchedulerKind, WorkerPlace};
use crate::scope::{self, Scope};
use crate::sleep::Sleep;
use crate::trace::{TRACE_ENV, TraceSummary, Tracer};
use crate::worker::{SetAside, WorkerThread};

/// Default capacity of a worker's deque.
pub const DEFAULT_DEQUE_CAPACITY: usize = 4096;

/// The largest deque capacity a runtime accepts (16 MiB of slots per worker).
pub const MAX_DEQUE_CAPACITY: usize = 1 << 20;

/// One more than [`MAX_NUM_THREADS`](crate::config::MAX_NUM_THREADS), for a range pattern.
const MAX_NUM_THREADS_PLUS_ONE: usize = crate::config::MAX_NUM_THREADS + 1;

/// The effective settings of a runtime.
#[derive(Clone, Debug, PartialEq)]
pub struct Settings {
    /// Number of workers.
    pub num_threads: usize,
    /// The largest task priority honoured (`OMP_MAX_TASK_PRIORITY`,
    /// [`RuntimeBuilder::max_task_priority`]; 0, the default: priorities are ignored).
    pub max_task_priority: u32,
    /// The most workers the runtime could start (`OMP_THREAD_LIMIT`,
    /// [`RuntimeBuilder::thread_limit`]; `None`: no limit but
    /// [`MAX_NUM_THREADS`](crate::config::MAX_NUM_THREADS)).
    pub thread_limit: Option<usize>,
    /// How workers are pinned to places.
    pub proc_bind: ProcBind,
    /// The places asked for (`OMP_PLACES`); [`Runtime::place_list`] gives them resolved.
    pub places: Places,
    /// Stack size of each worker thread, in bytes.
    pub stack_size: usize,
    /// The scheduling policy.
    pub scheduler: SchedulerKind,
    /// Whether the settings were printed at start-up.
    pub display_env: DisplayEnv,
    /// Capacity of each worker's deque.
    pub deque_capacity: usize,
    /// The largest OS distance the locality-aware scheduler steals tasks across
    /// (`None`: any).
    pub vicinity: Option<u32>,
    /// The coefficient of variation up to which the locality-aware scheduler counts a
    /// footprint as even and keeps the task on its node (see [`crate::locality_policy`]).
    pub even_tolerance: f64,
    /// How idle workers wait for work.
    pub wait_policy: WaitPolicy,
    /// The trace file, when tasks are traced.
    pub trace: Option<PathBuf>,
    /// Whether tasks are traced in memory, for the locality summary only, when there is no
    /// trace file ([`RuntimeBuilder::trace_summary`]).
    pub trace_summary: bool,
}

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

/// Configures a [`Runtime`]. [`RuntimeBuilder::new`] starts from the defaults,
/// [`RuntimeBuilder::from_env`] from the environment; the setters override either.
///
/// ```
/// use numatask_sched::{RuntimeBuilder, SchedulerKind};
/// let rt = RuntimeBuilder::new()
///     .num_threads(2)
///     .proc_bind(false)
///     .stack_size(8 << 20)
///     .scheduler(SchedulerKind::WorkStealing)
///     .build()?;
/// assert_eq!(rt.num_workers(), 2);
/// assert_eq!(rt.settings().stack_size, 8 << 20);
/// # Ok::<(), numatask_sched::SchedError>(())
/// ```
#[derive(Clone, Debug)]
pub struct RuntimeBuilder {
    num_threads: Option<usize>,
    thread_limit: Option<usize>,
    max_task_priority: u32,
    proc_bind: ProcBind,
    places: Places,
    /// `OMP_PLACES` as written, when `places` came from it (the errors quote it).
    places_env_text: Option<String>,
    stack_size: usize,
    scheduler: SchedulerKind,
    display_env: DisplayEnv,
    deque_capacity: usize,
    topology: Option<Arc<Topology>>,
    vicinity: Option<u32>,
    /// `None`: the default, not set (a set one under work stealing is named as unused).
    even_tolerance: Option<f64>,
    wait_policy: WaitPolicy,
    trace: Option<PathBuf>,
    /// Whether `trace` came from `NUMATASK_TRACE` (for the error naming it).
    trace_from_env: bool,
    trace_summary: bool,
    /// Whether the environment's settings were applied ([`env`](Self::env)): if not, a
    /// runtime variable set in the environment goes unread, and `build` says so.
    env_applied: bool,
}

impl Default for RuntimeBuilder {
    fn default() -> Self {
        Self::new()
    }
}

impl RuntimeBuilder {
    /// The defaults: one worker per core, pinned, 2 MiB stacks, work stealing, silent. No
    /// runtime variable is read (the topology follows `NUMATASK_TOPOLOGY` unless
    /// [`topology`](Self::topology) gives one): unless [`env`](Self::env) applies them,
    /// [`build`](Self::build) names those set in the environment on stderr, once per process,
    /// as unread.
    pub fn new() -> Self {
        RuntimeBuilder {
            num_threads: None,
            thread_limit: None,
            max_task_priority: 0,
            proc_bind: ProcBind::True,
            places: Places::Cores,
            places_env_text: None,
            stack_size: DEFAULT_STACK_SIZE,
            scheduler: SchedulerKind::default(),
            display_env: DisplayEnv::False,
            deque_capacity: DEFAULT_DEQUE_CAPACITY,
            topology: None,
            vicinity: None,
            even_tolerance: None,
            wait_policy: WaitPolicy::Balanced,
            trace: None,
            trace_from_env: false,
            trace_summary: false,
            env_applied: false,
        }
    }

    /// The defaults overridden by the environment (`OMP_NUM_THREADS`, `OMP_THREAD_LIMIT`,
    /// `OMP_MAX_TASK_PRIORITY`, `OMP_PROC_BIND`, `OMP_PLACES`, `OMP_STACKSIZE`,
    /// `NUMATASK_SCHEDULER`, `NUMATASK_VICINITY`, `NUMATASK_EVEN_TOLERANCE`,
    /// `OMP_WAIT_POLICY`, `OMP_DISPLAY_ENV`,
    /// `NUMATASK_TRACE`; `NUMATASK_TOPOLOGY` is read by [`build`](Self::build) for any
    /// builder not given a [`topology`](Self::topology)). An invalid value of any of them, or
    /// of the allocator's `OMP_DATA_DISTRIBUTION`, is an error naming the variable.
    pub fn from_env() -> Result<Self, SchedError> {
        Ok(Self::new().env(&EnvSettings::from_env()?))
    }

    /// Applies the settings `env` gives (those that are set).
    pub fn env(mut self, env: &EnvSettings) -> Self {
        self.env_applied = true;
        if let Some(n) = env.num_threads {
            self.num_threads = Some(n);
        }
        if let Some(n) = env.thread_limit {
            self.thread_limit = Some(n);
        }
        if let Some(p) = env.max_task_priority {
            self.max_task_priority = p;
        }
        if let Some(b) = env.proc_bind {
            self.proc_bind = b;
        }
        if let Some(p) = &env.places {
            self.places = p.clone();
            self.places_env_text = Some(env.places_text.clone().unwrap_or_else(|| p.to_string()));
        }
        if let Some(s) = env.stack_size {
            self.stack_size = s;
        }
        if let Some(k) = env.scheduler {
            self.scheduler = k;
        }
        if let Some(d) = env.display_env {
            self.display_env = d;
        }
        if let Some(v) = env.vicinity {
            self.vicinity = v;
        }
        if let Some(t) = env.even_tolerance {
            self.even_tolerance = Some(t);
        }
        if let Some(w) = env.wait_policy {
            self.wait_policy = w;
        }
        if let Some(path) = &env.trace {
            self.trace = Some(path.clone());
            self.trace_from_env = true;
        }
        self
    }

    /// Number of workers (default: one per core the process may run on,
    /// [`Topology::usable_cores`]; at most
    /// [`MAX_NUM_THREADS`](crate::config::MAX_NUM_THREADS)).
    pub fn num_threads(mut self, n: usize) -> Self {
        self.num_threads = Some(n);
        self
    }

    /// The most workers to start (`OMP_THREAD_LIMIT`; default: no limit): a larger
    /// [`num_threads`](Self::num_threads), or a default of more cores, gives this many
    /// workers, as OpenMP gives a parallel region no more threads than its thread limit.
    /// For a launcher or a batch system capping a program's threads without choosing them;
    /// zero is an error at [`build`](Self::build).
    pub fn thread_limit(mut self, n: usize) -> Self {
        self.thread_limit = Some(n);
        self
    }

    /// The largest task priority honoured (`OMP_MAX_TASK_PRIORITY`; default 0: priorities
    /// are ignored, as in OpenMP). A task spawned with a larger priority counts as having
    /// this one. At most [`MAX_MAX_TASK_PRIORITY`](crate::config::MAX_MAX_TASK_PRIORITY).
    pub fn max_task_priority(mut self, max: u32) -> Self {
        self.max_task_priority = max;
        self
    }

    /// How workers are pinned to places (`OMP_PROC_BIND`; default [`ProcBind::True`]): a
    /// [`ProcBind`], or a `bool` (`true` is [`ProcBind::True`], `false`
    /// [`ProcBind::False`]).
    ///
    /// ```
    /// use numatask_sched::{ProcBind, Runtime};
    /// let rt = Runtime::builder().num_threads(2).proc_bind(ProcBind::Spread).build()?;
    /// assert_eq!(rt.settings().proc_bind, ProcBind::Spread);
    /// let rt = Runtime::builder().num_threads(2).proc_bind(false).build()?;
    /// assert!(rt.pinning().iter().all(Option::is_none));
    /// # Ok::<(), numatask_sched::SchedError>(())
    /// ```
    pub fn proc_bind(mut self, policy: impl Into<ProcBind>) -> Self {
        self.proc_bind = policy.into();
        self
    }

    /// [`proc_bind`](Self::proc_bind) with a [`ProcBind`].
    pub fn bind(self, policy: ProcBind) -> Self {
        self.proc_bind(policy)
    }

    /// The places workers are bound to (`OMP_PLACES`; default [`Places::Cores`]: one per
    /// core the process may run on). Resolved against the topology when the runtime starts:
    /// an explicit processor the topology lacks, or a place wholly outside the process's CPU
    /// binding, is an error then ([`SchedError::Places`]).
    pub fn places(mut self, places: Places) -> Self {
        self.places = places;
        self.places_env_text = None;
        self
    }

    /// Stack size of each worker thread in bytes (default 2 MiB, at least 64 KiB). Tasks nested
    /// through waits deeper than it holds run on stack segments the worker grows (see the
    /// taskwait policy in the `worker` module); recursion in a task's own code gets what is
    /// left of it.
    pub fn stack_size(mut self, bytes: usize) -> Self {
        self.stack_size = bytes;
        self
    }

    /// The scheduling policy (default work stealing).
    pub fn scheduler(mut self, kind: SchedulerKind) -> Self {
        self.scheduler = kind;
        self
    }

    /// The vicinity of the locality-aware scheduler (the paper's section 4.2): its workers
    /// steal tasks (dealt or not) only from nodes at most this OS distance away (`None`, the
    /// default: any node; `Some(10)`: none but their own). Scopes entered from outside the
    /// pool still go to any worker. Work stealing ignores it.
    pub fn vicinity(mut self, max_distance: Option<u32>) -> Self {
        self.vicinity = max_distance;
        self
    }

    /// The even tolerance of the locality-aware scheduler (`NUMATASK_EVEN_TOLERANCE`; default
    /// [`DEFAULT_EVEN_TOLERANCE`], 0.1): a task whose footprint's standard deviation over the
    /// nodes is at most this fraction of its mean counts as evenly spread and stays on its
    /// node; `0.0` is the paper's exact `stddev(D) > 0` test (see
    /// [`crate::locality_policy`]). From 0 to [`MAX_EVEN_TOLERANCE`]. Work stealing ignores it.
    ///
    /// ```
    /// use numatask_sched::{RuntimeBuilder, SchedulerKind};
    /// let rt = RuntimeBuilder::new()
    ///     .num_threads(1)
    ///     .scheduler(SchedulerKind::Locality)
    ///     .even_tolerance(0.0)
    ///     .build()?;
    /// assert_eq!(rt.settings().even_tolerance, 0.0);
    /// for bad in [-1.0, 100.5, f64::NAN, f64::INFINITY] {
    ///     assert!(RuntimeBuilder::new().even_tolerance(bad).build().is_err(), "{bad}");
    /// }
    /// # Ok::<(), numatask_sched::SchedError>(())
    /// ```
    pub fn even_tolerance(mut self, tolerance: f64) -> Self {
        self.even_tolerance = Some(tolerance);
        self
    }

    /// How idle workers wait for work (`OMP_WAIT_POLICY`; default [`WaitPolicy::Balanced`]:
    /// search for 200 µs, then sleep).
    pub fn wait_policy(mut self, policy: WaitPolicy) -> Self {
        self.wait_policy = policy;
        self
    }

    /// Traces every task (see [`crate::trace`]) and writes the Chrome trace to `path` when the
    /// runtime is dropped or [`Runtime::finish_trace`] is called, printing the locality
    /// summary to standard error.
    pub fn trace(mut self, path: impl Into<PathBuf>) -> Self {
        self.trace = Some(path.into());
        self.trace_from_env = false;
        self
    }

    /// Traces every task in memory, without a trace file, for the locality summary alone:
    /// [`Runtime::finish_trace`], or dropping the runtime, prints it to standard error (tasks
    /// and footprint bytes local and remote per node, steals by distance) and
    /// [`Runtime::tracer`] gives every record. A trace file ([`trace`](Self::trace),
    /// `NUMATASK_TRACE`) implies it.
    pub fn trace_summary(mut self, on: bool) -> Self {
        self.trace_summary = on;
        self
    }

    /// Print the effective settings to standard error when the runtime starts.
    pub fn display_env(mut self, display: DisplayEnv) -> Self {
        self.display_env = display;
        self
    }

    /// Capacity of each worker's deque (default 4096, at most 1,048,576; rounded up to a
    /// power of two). A worker whose deque is full runs the tasks it spawns inline.
    pub fn deque_capacity(mut self, capacity: usize) -> Self {
        self.deque_capacity = capacity;
        self
    }

    /// The topology to place workers on (default [`Topology::current`]).
    ///
    /// The allocator places and records memory over the nodes of [`Topology::current`]
    /// (`NUMATASK_TOPOLOGY`), whatever topology a runtime has: a locality-aware runtime on
    /// another one reads footprints by node index, and leaves out bytes on nodes it does not
    /// have.
    pub fn topology(mut self, topology: Arc<Topology>) -> Self {
        self.topology = Some(topology);
        self
    }

    /// Starts the workers and makes this runtime the process-wide one, [`Runtime::global`],
    /// which [`scope()`] and [`join()`] use outside every pool (rayon's
    /// `ThreadPoolBuilder::build_global`). It must come first: once the process-wide runtime
    /// exists (an earlier `build_global`, or a first [`Runtime::global`], [`scope()`] or
    /// [`join()`] that created it from the environment), this is
    /// [`SchedError::GlobalExists`] and no worker is started.
    ///
    /// ```standalone_crate
    /// let rt = numatask_sched::Runtime::builder().num_threads(2).build_global()?;
    /// assert_eq!(rt.num_workers(), 2);
    /// let (a, b) = numatask_sched::join(
    ///     || numatask_sched::current_num_workers(),
    ///     || 7,
    /// )?;
    /// assert_eq!((a, b), (Some(2), 7));
    /// # Ok::<(), numatask_sched::SchedError>(())
    /// ```
    pub fn build_global(self) -> Result<&'static Runtime, SchedError> {
        if GLOBAL.get().is_some() {
            return Err(SchedError::GlobalExists);
        }
        let runtime = self.build()?;
        // Another thread may have made the global runtime meanwhile: then this one is
        // dropped here (its workers joined) and the call fails like the check above.
        GLOBAL
            .set(Ok(runtime))
            .map_err(|_| SchedError::GlobalExists)?;
        Runtime::global()
    }

    /// Starts the workers.
    pub fn build(self) -> Result<Runtime, SchedError> {
        let topology = match self.topology {
            Some(t) => t,
            None => Topology::current()?,
        };
        if let Some(warning) = topology_warning(&topology, self.scheduler, self.trace.is_some()) {
            use std::sync::atomic::{AtomicBool, Ordering};
            static WARNED: AtomicBool = AtomicBool::new(false);
            if !WARNED.swap(true, Ordering::Relaxed) {
                eprintln!("{warning}");
            }
        }
        // The cores of the process's CPU binding (all of them unless a launcher, `taskset`
        // or `numactl` bound it): the default worker count, and the cores workers go to.
        let usable = topology.usable_cores();
        // The places (`OMP_PLACES`) among those cores, and the default worker count: one per
        // core the places hold (one per place for `threads`; for a list, at least one per
        // distinct place, as two hardware threads of one core are two places, but a place
        // repeated is still one place's processors, as libgomp counts them).
        let resolved = resolve_places(
            &self.places,
            self.places_env_text.as_deref(),
            &topology,
            &usable,
        )?;
        let default_threads = {
            let mut cores: Vec<usize> = resolved
                .iter()
                .flat_map(|p| p.cores.iter().copied())
                .collect();
            cores.sort_unstable();
            cores.dedup();
            match self.places {
                Places::Threads | Places::ThreadsN(_) => resolved.len(),
                Places::List(_) => {
                    let mut distinct: Vec<&[usize]> =
                        resolved.iter().map(|p| p.pus.as_slice()).collect();
                    distinct.sort_unstable();
                    distinct.dedup();
                    distinct.len().max(cores.len())
                }
                _ => cores.len(),
            }
        };
        let num_threads = self
            .num_threads
            .unwrap_or(default_threads)
            .min(self.thread_limit.unwrap_or(usize::MAX))
            .clamp(1, crate::config::MAX_NUM_THREADS);
        if let Some(n @ (0 | MAX_NUM_THREADS_PLUS_ONE..)) = self.num_threads {
            return Err(SchedError::InvalidSetting {
                setting: "num_threads",
                value: n.to_string(),
                expected: "from 1 to 4096 workers",
            });
        }
        if self.num_threads.is_none()
            && let Some(warning) = capped_warning(
                default_threads.min(self.thread_limit.unwrap_or(usize::MAX)),
                num_threads,
            )
        {
            eprintln!("{warning}");
        }
        if self.max_task_priority > crate::config::MAX_MAX_TASK_PRIORITY {
            return Err(SchedError::InvalidSetting {
                setting: "max_task_priority",
                value: self.max_task_priority.to_string(),
                expected: "at most 2147483647 (a C int)",
            });
        }
        if self.thread_limit == Some(0) {
            return Err(SchedError::InvalidSetting {
                setting: "thread_limit",
                value: "0".into(),
                expected: "a positive number of workers",
            });
        }
        if !(MIN_STACK_SIZE..=MAX_STACK_SIZE).contains(&self.stack_size) {
            return Err(SchedError::InvalidSetting {
                setting: "stack_size",
                value: self.stack_size.to_string(),
                expected: "from 65536 bytes to 16 GiB",
            });
        }
        if let Some(d @ ..MIN_VICINITY) = self.vicinity {
            return Err(SchedError::InvalidSetting {
                setting: "vicinity",
                value: d.to_string(),
                expected: "an OS distance of at least 10 (10 = the own node only), or None",
            });
        }
        // -0.0 is 0 (it would print as "-0").
        let even_tolerance = self.even_tolerance.unwrap_or(DEFAULT_EVEN_TOLERANCE) + 0.0;
        if !(0.0..=MAX_EVEN_TOLERANCE).contains(&even_tolerance) {
            return Err(SchedError::InvalidSetting {
                setting: "even_tolerance",
                value: even_tolerance.to_string(),
                // The 100 is MAX_EVEN_TOLERANCE.
                expected: "a number from 0 to 100 (0: the paper's exact test)",
            });
        }
        if !(1..=MAX_DEQUE_CAPACITY).contains(&self.deque_capacity) {
            return Err(SchedError::InvalidSetting {
                setting: "deque_capacity",
                value: self.deque_capacity.to_string(),
                expected: "from 1 to 1048576 tasks (each worker's deque is allocated whole)",
            });
        }
        // A second runtime of the process traced by `NUMATASK_TRACE` writes beside the first's
        // file rather than over it (`t.json`, then `t.2.json`, ...).
        let mut trace = self.trace.clone();
        if self.trace_from_env
            && let Some(path) = &mut trace
        {
            let claimed = crate::trace::claim_env_trace_path(path);
            if claimed != *path {
                eprintln!(
                    "numatask: {TRACE_ENV}={} holds the trace of an earlier runtime of this \
                     process; this runtime's trace goes to {}",
                    path.display(),
                    claimed.display()
                );
                *path = claimed;
            }
        }
        // The trace file is created now, so that a path that cannot be written is an error
        // here rather than a lost trace when the runtime ends.
        if let Some(path) = &trace
            && let Err(e) = std::fs::File::create(path)
        {
            // The name goes back: a later runtime that can write it is not numbered as if
            // this one had traced.
            if self.trace_from_env {
                crate::trace::release_env_trace_path(path);
            }
            return Err(SchedError::TraceFile {
                from_env: self.trace_from_env,
                path: path.display().to_string(),
                reason: e.to_string(),
            });
        }
        // `primary`: the place holding the processor the starting thread runs on (on a
        // synthetic topology, or when that is in no place, one holding its core).
        let primary = (self.proc_bind == ProcBind::Primary)
            .then(|| {
                let cpu = (!topology.is_synthetic()).then(current_cpu).flatten();
                cpu.and_then(|cpu| resolved.iter().position(|p| p.pus.contains(&cpu)))
                    .or_else(|| {
                        let core = calling_core(&topology, &usable)?;
                        resolved.iter().position(|p| p.cores.contains(&core))
                    })
            })
            .flatten();
        // Each worker's place among `resolved`.
        let worker_places: Vec<usize> = (0..num_threads)
            .map(|index| match primary {
                Some(place) => place,
                None => self.proc_bind.place_of(index, num_threads, resolved.len()),
            })
            .collect();
        let places: Box<[WorkerPlace]> = worker_places
            .iter()
            .enumerate()
            .map(|(index, &p)| WorkerPlace {
                index,
                core: resolved[p].cores[0],
                node: resolved[p].node,
            })
            .collect();
        // What each worker binds itself to: its core (the default places), or the place's
        // processing units.
        let pin_sets: Vec<Option<Vec<usize>>> = worker_places
            .iter()
            .map(|&p| match self.places {
                Places::Cores | Places::CoresN(_) => None,
                _ => Some(resolved[p].pus.clone()),
            })
            .collect();
        let settings = Settings {
            num_threads,
            thread_limit: self.thread_limit,
            max_task_priority: self.max_task_priority,
            proc_bind: self.proc_bind,
            places: self.places.clone(),
            stack_size: self.stack_size,
            scheduler: self.scheduler,
            display_env: self.display_env,
            deque_capacity: self.deque_capacity,
            vicinity: self.vicinity,
            even_tolerance,
            wait_policy: self.wait_policy,
            trace: trace.clone(),
            trace_summary: self.trace_summary || trace.is_some(),
        };
        let (scheduler, queues) = self.scheduler.create(
            &topology,
            &places,
            &SchedulerConfig {
                deque_capacity: self.deque_capacity,
                vicinity: self.vicinity,
                even_tolerance,
            },
        );
        let tracer = settings.trace_summary.then(|| {
            let nodes = places.iter().map(|p| p.node).collect();
            Arc::new(Tracer::new(nodes, topology.num_nodes(), trace))
        });
        let registry = Arc::new(Registry {
            scheduler,
            sleep: Sleep::with_policy(num_threads, self.wait_policy),
            places,
            place_list: resolved.iter().map(|p| p.pus.clone()).collect(),
            worker_places: worker_places.into(),
            topology,
            settings,
            tracer,
            set_aside: SetAside::default(),
            prioritized: (self.max_task_priority > 0).then(crate::worker::Prioritized::new),
            short_waits: (0..num_threads)
                .map(|_| std::sync::atomic::AtomicUsize::new(0))
                .collect(),
        });

        let (ready_tx, ready_rx) = mpsc::channel();
        let mut runtime = Runtime {
            registry: Arc::clone(&registry),
            threads: Vec::with_capacity(num_threads),
            pinning: vec![None; num_threads],
            trace: registry.tracer.clone().map(TraceSink::register),
        };
        for ((index, queues), pin_set) in queues.into_iter().enumerate().zip(pin_sets) {
            let registry = Arc::clone(&registry);
            let ready = ready_tx.clone();
            let pin = self.proc_bind.pins();
            let spawned = thread::Builder::new()
                .name(format!("numatask-{index}"))
                .stack_size(self.stack_size)
                .spawn(move || {
                    let place = registry.places[index];
                    let pinning = pin.then(|| {
                        // On a synthetic topology, worker `index` goes to the `index`-th real
                        // core, so that workers on model cores far apart share no real core.
                        let topology = &registry.topology;
                        match &pin_set {
                            None => topology.pin_current_thread_in_slot(place.core, place.index),
                            Some(pus) => topology.pin_current_thread_to_pus(pus, place.index),
                        }
                    });
                    // The builder waits for every worker's report; if it is gone (it failed
                    // to start a later worker), there is nobody to tell.
                    let _ = ready.send((index, pinning));
                    drop(ready);
                    WorkerThread::run(place, queues, registry);
                });
            match spawned {
                Ok(handle) => runtime.threads.push(handle),
                // Dropping `runtime` stops and joins the workers started so far.
                Err(e) => {
                    return Err(SchedError::SpawnWorker {
                        worker: index,
                        stack: format_size(self.stack_size),
                        reason: e.to_string(),
                    });
                }
            }
        }
        drop(ready_tx);
        for (index, pinning) in ready_rx.iter() {
            runtime.pinning[index] = pinning;
        }
        if let Some(warning) = unpinned_warning(&runtime.pinning) {
            eprintln!("{warning}");
        }
        if !self.env_applied {
            warn_of_unread_env();
        }
        if let Some(warning) = vicinity_warning(self.vicinity, self.scheduler) {
            eprintln!("{warning}");
        }
        if let Some(warning) = even_tolerance_warning(self.even_tolerance, self.scheduler) {
            eprintln!("{warning}");
        }
        if runtime.settings().display_env != DisplayEnv::False {
            eprint!("{}", runtime.display_env());
        }
        Ok(runtime)
    }
}

/// Says once per process, on stderr, which runtime variables are set in the environment but
/// were not read: a runtime from [`Runtime::builder`] starts from the defaults, and someone
/// who sets `NUMATASK_SCHEDULER=locality` or `NUMATASK_TRACE` for a program that builds its
/// runtime that way should not believe the setting took.
fn warn_of_unread_env() {
    use std::sync::atomic::{AtomicBool, Ordering};
    static WARNED: AtomicBool = AtomicBool::new(false);
    if WARNED.load(Ordering::Relaxed) {
        return;
    }
    let set: Vec<&str> = ENV_VARS
        .iter()
        .copied()
        .filter(|&var| var != numatask_alloc::DISTRIBUTION_ENV)
        .chain([TRACE_ENV])
        .filter(|var| {
            std::env::var_os(var).is_some_and(|v| {
                !numatask_alloc::sched_support::trim_blanks(&v.to_string_lossy()).is_empty()
            })
        })
        .collect();
    if let Some(warning) = unread_env_warning(&set)
        && !WARNED.swap(true, Ordering::Relaxed)
    {
        eprintln!("{warning}");
    }
}

/// The line that says the default worker count, `wanted` (one per core or hardware thread
/// of the places, within `OMP_THREAD_LIMIT`), was cut to the `started` a runtime starts, if it
/// was.
fn capped_warning(wanted: usize, started: usize) -> Option<String> {
    (wanted > started).then(|| {
        format!(
            "numatask: the places hold {wanted} cores (or hardware threads), one worker each by \
             default; a runtime starts at most {started}, on the first of them \
             ({NUM_THREADS_ENV} sets the number)"
        )
    })
}

/// The line that says a vicinity was given to a runtime whose scheduler has none (work
/// stealing steals from everyone), if one was.
fn vicinity_warning(vicinity: Option<u32>, scheduler: SchedulerKind) -> Option<String> {
    let distance = vicinity?;
    (scheduler != SchedulerKind::Locality).then(|| {
        format!(
            "numatask: the vicinity {distance} ({VICINITY_ENV} or RuntimeBuilder::vicinity) is \
             not used: only the locality-aware scheduler ({SCHEDULER_ENV}=locality) bounds its \
             steals, and this runtime's is {}",
            scheduler.name()
        )
    })
}

/// The line that says an even tolerance was given to a runtime whose scheduler deals no task
/// (work stealing), if one was.
fn even_tolerance_warning(tolerance: Option<f64>, scheduler: SchedulerKind) -> Option<String> {
    let tolerance = tolerance?;
    (scheduler != SchedulerKind::Locality).then(|| {
        format!(
            "numatask: the even tolerance {tolerance} ({EVEN_TOLERANCE_ENV} or \
             RuntimeBuilder::even_tolerance) is not used: only the locality-aware scheduler \
             ({SCHEDULER_ENV}=locality) deals tasks by their footprints, and this runtime's is {}",
            scheduler.name()
        )
    })
}

/// The line that says a runtime weighing footprints (locality-aware, or traced) runs on a
/// topology whose nodes are not those the allocator places memory on
/// ([`Topology::current`]), if it does: footprints are then read by node index against the
/// wrong nodes.
fn topology_warning(topology: &Topology, scheduler: SchedulerKind, traced: bool) -> Option<String> {
    if scheduler != SchedulerKind::Locality && !traced {
        return None;
    }
    let placed = Topology::current().ok()?;
    // The same nodes, whatever the distances (a runtime may be given its own matrix): node
    // indices mean the same to both.
    let node_ids = |t: &Topology| -> Vec<(usize, Vec<usize>)> {
        t.nodes()
            .iter()
            .map(|n| {
                (
                    n.os_index,
                    n.cores.iter().flat_map(|c| c.pus.clone()).collect(),
                )
            })
            .collect()
    };
    let same = node_ids(&placed) == node_ids(topology);
    (!same).then(|| {
        format!(
            "numatask: this runtime's topology ({} node(s), {}) is not the one memory is \
             placed on ({} node(s), {}: NUMATASK_TOPOLOGY or the machine): task footprints are \
             read against the wrong nodes",
            topology.num_nodes(),
            topology.source(),
            placed.num_nodes(),
            placed.source()
        )
    })
}

/// The line [`warn_of_unread_env`] prints for the variables `set`, if any is.
fn unread_env_warning(set: &[&str]) -> Option<String> {
    let (last, rest) = set.split_last()?;
    let (names, verb) = match rest {
        [] => (last.to_string(), "is"),
        _ => (format!("{} and {last}", rest.join(", ")), "are"),
    };
    Some(format!(
        "numatask: {names} {verb} set but not read: this runtime was built with \
         Runtime::builder(), which starts from the defaults (RuntimeBuilder::from_env() or \
         Runtime::new() follow the environment)"
    ))
}

/// With `OMP_PROC_BIND=true`, the line that says which workers could not be pinned (they run
/// wherever the OS puts them), once per runtime: `None` when every worker was pinned.
fn unpinned_warning(pinning: &[Option<Result<Pinning, AllocError>>]) -> Option<String> {
    let mut failed = pinning.iter().enumerate().filter_map(|(i, p)| match p {
        Some(Err(e)) => Some((i, e)),
        _ => None,
    });
    let (first, error) = failed.next()?;
    let more = failed.count();
    Some(format!(
        "numatask: {} of {} workers run unpinned (worker {first}: {error}{})",
        more + 1,
        pinning.len(),
        if more > 0 { "; and others" } else { "" }
    ))
}

/// A pool of workers running scoped tasks (see the crate docs for an example).
pub struct Runtime {
    registry: Arc<Registry>,
    threads: Vec<JoinHandle<()>>,
    pinning: Vec<Option<Result<Pinning, AllocError>>>,
    /// Where the trace goes, when tracing (shared with the exit handler: [`TraceSink`]).
    trace: Option<Arc<TraceSink>>,
}

/// A runtime's trace and how much of it was written: the runtime writes it when dropped,
/// and the process's exit handler writes the traces of the runtimes never dropped (the
/// process-wide one, one kept in a `static`).
struct TraceSink {
    tracer: Arc<Tracer>,
    /// The tracer's [`progress`](Tracer::progress) (records, and of them those ended) when
    /// the trace file was last written (`None`: not yet).
    written: Mutex<Option<(u64, u64)>>,
}

/// The traces of every runtime that traces, for the exit handler.
static TRACE_SINKS: Mutex<Vec<Weak<TraceSink>>> = Mutex::new(Vec::new());

impl TraceSink {
    /// A sink for `tracer`, known to the exit handler (registered with the C library on the
    /// first one).
    fn register(tracer: Arc<Tracer>) -> Arc<TraceSink> {
        static AT_EXIT: std::sync::Once = std::sync::Once::new();
        let sink = Arc::new(TraceSink {
            tracer,
            written: Mutex::new(None),
        });
        let mut sinks = TRACE_SINKS.lock().unwrap_or_else(PoisonError::into_inner);
        sinks.retain(|s| s.strong_count() > 0);
        sinks.push(Arc::downgrade(&sink));
        AT_EXIT.call_once(|| {
            // SAFETY: `finish_traces_at_exit` is an `extern "C" fn()` that does not unwind;
            // registering it has no other precondition.
            unsafe { libc::atexit(finish_traces_at_exit) };
        });
        sink
    }

    /// Writes the trace file (if there is one) with every task traced so far, prints the
    /// locality summary to standard error and returns it.
    fn finish(&self) -> io::Result<TraceSummary> {
        let mut written = self.written.lock().unwrap_or_else(PoisonError::into_inner);
        self.write(&mut written)
    }

    /// [`finish`](Self::finish) unless the file already holds every traced task as it is now,
    /// ends included (also when no task ran: the file created at start-up then gets an empty
    /// trace). The lock is held
    /// from the check to the write, so a drop racing the exit handler writes once. Errors are
    /// reported on standard error: the callers (`drop`, the exit handler) cannot return them.
    fn finish_if_pending(&self) {
        let mut written = self.written.lock().unwrap_or_else(PoisonError::into_inner);
        if *written != Some(self.tracer.progress()) {
            let _ = self.write(&mut written);
        }
    }

    /// The write of [`finish`](Self::finish), under the `written` lock the caller holds.
    fn write(&self, written: &mut Option<(u64, u64)>) -> io::Result<TraceSummary> {
        let tracer = &self.tracer;
        // Read before the write: a task that ends meanwhile makes the next check rewrite.
        let progress = tracer.progress();
        let result = tracer.finish();
        match &result {
            Ok(summary) => {
                *written = Some(progress);
                if let Some(path) = tracer.path() {
                    eprintln!(
                        "numatask: trace of {} tasks written to {}",
                        summary.tasks,
                        path.display()
                    );
                }
                eprintln!("{summary}");
            }
            Err(e) => eprintln!(
                "numatask: could not write the trace to {}: {e}",
                tracer
                    .path()
                    .map_or("nowhere".into(), |p| p.display().to_string())
            ),
        }
        result
    }
}

/// Writes, at the process's exit, the traces of the runtimes still alive (never dropped),
/// unless already written with every task.
extern "C" fn finish_traces_at_exit() {
    // Nothing may unwind out of an exit handler.
    let _ = std::panic::catch_unwind(|| {
        let sinks: Vec<Arc<TraceSink>> = TRACE_SINKS
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .iter()
            .filter_map(Weak::upgrade)
            .collect();
        for sink in sinks {
            sink.finish_if_pending();
        }
    });
}

/// The usable core the calling thread runs on now (the place of `OMP_PROC_BIND=primary`).
/// On a synthetic topology, whose cores are not the machine's, the first core.
/// One place of `OMP_PLACES`, resolved against the topology.
#[derive(Clone, Debug, PartialEq, Eq)]
struct ResolvedPlace {
    /// Its processing units (OS indices, sorted) that the process may run on.
    pus: Vec<usize>,
    /// The cores holding them, in order (never empty).
    cores: Vec<usize>,
    /// The node of its first core.
    node: usize,
}

/// The places `places` names among the topology's `usable` cores (never empty): an error
/// for an explicit processor the topology lacks, or a place none of whose processors the
/// process may run on.
fn resolve_places(
    places: &Places,
    env_text: Option<&str>,
    topology: &Topology,
    usable: &[usize],
) -> Result<Vec<ResolvedPlace>, SchedError> {
    let error = |reason: String| {
        // The places as the user wrote them: `OMP_PLACES`'s text, or the builder's value as
        // `OMP_PLACES` would write it. A list repeated many times would make a message of many
        // kilobytes: cut short.
        let mut text = env_text.map_or_else(|| places.to_string(), str::to_owned);
        if let Some((cut, _)) = text.char_indices().nth(120) {
            text.truncate(cut);
            text.push_str("...");
        }
        SchedError::Places {
            from_env: env_text.is_some(),
            places: text,
            reason,
        }
    };
    // What the parser of `OMP_PLACES` refuses, given to the builder.
    match places {
        Places::CoresN(0)
        | Places::ThreadsN(0)
        | Places::NumaDomainsN(0)
        | Places::SocketsN(0)
        | Places::LlCachesN(0) => {
            return Err(error("a count of places must be at least 1".into()));
        }
        Places::List(list) if list.is_empty() => {
            return Err(error("an empty list names no place".into()));
        }
        Places::List(list) if list.iter().any(Vec::is_empty) => {
            return Err(error("a place names no processor".into()));
        }
        _ => {}
    }
    let core_nodes: Vec<usize> = topology.cores().map(|c| c.node).collect();
    let node_of = |core: usize| core_nodes.get(core).copied().unwrap_or(0);
    // Each core's processors the process may run on, and whether it may run on the core.
    let usable_pus: Vec<Vec<usize>> = (0..topology.num_cores())
        .map(|core| topology.usable_pus(core))
        .collect();
    let mut usable_core = vec![false; topology.num_cores()];
    for &core in usable {
        if let Some(u) = usable_core.get_mut(core) {
            *u = true;
        }
    }
    let is_usable = |core: usize| usable_core.get(core).copied().unwrap_or(false);
    let one_core = |core: usize, pus: Vec<usize>| ResolvedPlace {
        pus,
        cores: vec![core],
        node: node_of(core),
    };
    let mut resolved: Vec<ResolvedPlace> = match places {
        Places::Cores | Places::CoresN(_) => usable
            .iter()
            .map(|&core| one_core(core, usable_pus[core].clone()))
            .collect(),
        Places::Threads | Places::ThreadsN(_) => usable
            .iter()
            .flat_map(|&core| usable_pus[core].iter().map(move |&pu| (core, pu)))
            .map(|(core, pu)| one_core(core, vec![pu]))
            .collect(),
        Places::NumaDomains
        | Places::NumaDomainsN(_)
        | Places::Sockets
        | Places::SocketsN(_)
        | Places::LlCaches
        | Places::LlCachesN(_) => {
            let groups = match places {
                Places::NumaDomains | Places::NumaDomainsN(_) => topology
                    .nodes()
                    .iter()
                    .map(|node| node.cores.iter().map(|c| c.index).collect())
                    .collect(),
                Places::Sockets | Places::SocketsN(_) => topology.core_groups(CoreGroup::Package),
                _ => topology.core_groups(CoreGroup::LastLevelCache),
            };
            let mut resolved = Vec::new();
            for group in groups {
                let cores: Vec<usize> = group.into_iter().filter(|&c| is_usable(c)).collect();
                if cores.is_empty() {
                    continue;
                }
                let mut pus: Vec<usize> = cores
                    .iter()
                    .flat_map(|&c| usable_pus[c].iter().copied())
                    .collect();
                pus.sort_unstable();
                // The node holding most of the group's cores (a package may span nodes).
                let mut per_node = vec![0usize; topology.num_nodes().max(1)];
                for &core in &cores {
                    if let Some(count) = per_node.get_mut(node_of(core)) {
                        *count += 1;
                    }
                }
                resolved.push(ResolvedPlace {
                    pus,
                    cores,
                    node: node_of_most(&per_node),
                });
            }
            resolved
        }
        Places::List(list) => {
            let core_of = |pu: usize| topology.cores().find(|c| c.pus.contains(&pu));
            let all_pus = || {
                let mut all: Vec<usize> = topology.cores().flat_map(|c| c.pus.clone()).collect();
                all.sort_unstable();
                let mut text = String::new();
                let _ = write_place_list(&mut text, &[all]);
                text
            };
            let mut resolved = Vec::with_capacity(list.len());
            for place in list {
                let mut pus = Vec::with_capacity(place.len());
                let mut cores = Vec::new();
                // Processors of the place per node, for the place's node.
                let mut per_node = vec![0usize; topology.num_nodes().max(1)];
                for &pu in place {
                    let Some(core) = core_of(pu) else {
                        return Err(error(format!(
                            "processor {pu} does not exist (the topology has processors {})",
                            all_pus()
                        )));
                    };
                    // Of a core outside the process's CPU binding, or a processor of a core
                    // in it that is not: left out.
                    if is_usable(core.index) && usable_pus[core.index].contains(&pu) {
                        pus.push(pu);
                        if let Some(count) = per_node.get_mut(core.node) {
                            *count += 1;
                        }
                        if !cores.contains(&core.index) {
                            cores.push(core.index);
                        }
                    }
                }
                if pus.is_empty() {
                    let mut text = String::new();
                    let _ = write_place_list(&mut text, std::slice::from_ref(place));
                    return Err(error(format!(
                        "the place {text} holds no processor the process may run on (its \
                         CPU binding: taskset, numactl or a launcher)"
                    )));
                }
                // The node holding most of the place's processors.
                let node = node_of_most(&per_node);
                resolved.push(ResolvedPlace { pus, cores, node });
            }
            resolved
        }
    };
    if let Some(n) = places.count() {
        resolved.truncate(n);
    }
    if resolved.is_empty() {
        // Only a topology without cores gets here: one place, core 0, wherever the OS runs it.
        resolved.push(one_core(0, Vec::new()));
    }
    Ok(resolved)
}

/// The node with the largest count in `per_node` (the first of a tie).
fn node_of_most(per_node: &[usize]) -> usize {
    let most = per_node.iter().copied().max().unwrap_or(0);
    per_node.iter().position(|&c| c == most).unwrap_or(0)
}

/// The processor (OS index) the calling thread runs on now, if the OS tells.
fn current_cpu() -> Option<usize> {
    // SAFETY: no arguments; returns the CPU of the calling thread or -1.
    usize::try_from(unsafe { libc::sched_getcpu() }).ok()
}

fn calling_core(topology: &Topology, usable: &[usize]) -> Option<usize> {
    if topology.is_synthetic() {
        return usable.first().copied();
    }
    let cpu = current_cpu()?;
    let core = topology.cores().find(|c| c.pus.contains(&cpu))?.index;
    usable
        .contains(&core)
        .then_some(core)
        .or(usable.first().copied())
}

static GLOBAL: OnceLock<Result<Runtime, SchedError>> = OnceLock::new();

impl Runtime {
    /// A runtime configured by the environment (see [`crate::config`]).
    pub fn new() -> Result<Runtime, SchedError> {
        RuntimeBuilder::from_env()?.build()
    }

    /// A builder with the defaults (no `OMP_*` variable is read; the topology is
    /// [`Topology::current`]'s, which follows `NUMATASK_TOPOLOGY`, unless
    /// [`RuntimeBuilder::topology`] gives one).
    pub fn builder() -> RuntimeBuilder {
        RuntimeBuilder::new()
    }

    /// The process-wide runtime, created from the environment on first use (used by
    /// [`crate::scope()`] and [`crate::join()`]), unless
    /// [`RuntimeBuilder::build_global`] made it first. Every call returns the same runtime,
    /// or the same error.
    ///
    /// It is never dropped; when it traces (`NUMATASK_TRACE`), its trace file is written and
    /// its summary printed when the process exits normally (returning from `main`, or
    /// `std::process::exit`), as for every runtime still alive then.
    pub fn global() -> Result<&'static Runtime, SchedError> {
        GLOBAL
            .get_or_init(Runtime::new)
            .as_ref()
            .map_err(Clone::clone)
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
    /// their nesting: see [`crate::worker`], "Stack depth").
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

    /// The old name of [`workers`](Self::workers), which read as if it gave the `OMP_PLACES`
    /// places ([`place_list`](Self::place_list)).
    #[deprecated(
        since = "0.1.0",
        note = "renamed `workers`; the places are `place_list`"
    )]
    pub fn places(&self) -> &[WorkerPlace] {
        self.workers()
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
    pub fn finish_trace(&self) -> Option<io::Result<TraceSummary>> {
        Some(self.trace.as_ref()?.finish())
    }

    /// The settings as OpenMP runtimes print them for `OMP_DISPLAY_ENV`, between
    /// `OPENMP DISPLAY ENVIRONMENT BEGIN` and `END` lines (with `verbose`, one more line per
    /// worker).
    pub fn display_env(&self) -> String {
        let s = self.settings();
        let topo = self.topology();
        let mut out = String::from("OPENMP DISPLAY ENVIRONMENT BEGIN\n");
        let mut line = |name: &str, value: &dyn fmt::Display| {
            let _ = writeln!(out, "  {name} = '{value}'");
        };
        line(NUM_THREADS_ENV, &s.num_threads);
        // The limit in force: a larger `OMP_THREAD_LIMIT` limits no more than the cap.
        line(
            THREAD_LIMIT_ENV,
            &s.thread_limit
                .unwrap_or(usize::MAX)
                .min(crate::config::MAX_NUM_THREADS),
        );
        line(PROC_BIND_ENV, &s.proc_bind);
        let mut places = String::new();
        let _ = write_place_list(&mut places, &self.registry.place_list);
        line(PLACES_ENV, &places);
        line(STACKSIZE_ENV, &format_size(s.stack_size));
        line(MAX_TASK_PRIORITY_ENV, &s.max_task_priority);
        line(WAIT_POLICY_ENV, &s.wait_policy);
        line(DISPLAY_ENV_ENV, &s.display_env);
        line(SCHEDULER_ENV, &s.scheduler);
        match s.vicinity {
            Some(d) => line(VICINITY_ENV, &d),
            None => line(VICINITY_ENV, &"all"),
        }
        line(EVEN_TOLERANCE_ENV, &s.even_tolerance);
        if let Some(path) = &s.trace {
            line(TRACE_ENV, &path.display());
        } else if s.trace_summary {
            line(
                TRACE_ENV,
                &"none (tasks traced in memory for the locality summary)",
            );
        }
        match numatask_alloc::Distribution::from_env() {
            Ok(d) => line(numatask_alloc::DISTRIBUTION_ENV, &d),
            // Without the error's own quotes, so that the line still reads `NAME = 'VALUE'`.
            Err(numatask_alloc::AllocError::InvalidEnv {
                value, expected, ..
            }) => line(
                numatask_alloc::DISTRIBUTION_ENV,
                &format_args!(
                    "invalid: {} (expected {expected}; omp_malloc refuses it)",
                    value.escape_debug()
                ),
            ),
            Err(e) => line(
                numatask_alloc::DISTRIBUTION_ENV,
                &format_args!("invalid: {}", e.to_string().replace('\'', "")),
            ),
        }
        line("NUMATASK_TOPOLOGY", topo.source());
        // What follows is derived, not set: named in lower case with dots (`numatask.topology`)
        // so that no line looks like a variable one could set, and without blanks, so that a
        // parser of `NAME = 'VALUE'` lines reads them too.
        for (name, value) in self.registry.scheduler.display_lines() {
            line(name, &value);
        }
        line(
            "numatask.topology",
            &format_args!(
                "{} node(s), {} core(s){}, {} per node{}",
                topo.num_nodes(),
                topo.num_cores(),
                match topo.usable_cores().len() {
                    n if n < topo.num_cores() => format!(" ({n} in the process's CPU binding)"),
                    _ => String::new(),
                },
                topo.cores_per_node(),
                if topo.is_synthetic() {
                    let workers = self.registry.places.len();
                    let processors = std::thread::available_parallelism().map_or(1, |n| n.get());
                    if self.settings().proc_bind == ProcBind::False {
                        format!(
                            " (synthetic: its {workers} worker(s) unpinned on the machine's \
                             {processors} processor(s))"
                        )
                    } else {
                        format!(
                            " (synthetic: its {workers} worker(s) pinned round-robin onto the \
                             machine's cores, {processors} processor(s) here)"
                        )
                    }
                } else {
                    String::new()
                }
            ),
        );
        line(
            "numatask.distances",
            &format_args!("{} {:?}", topo.distance_source(), topo.distance_matrix()),
        );
        if s.display_env == DisplayEnv::Verbose {
            for (place, pinning) in self.workers().iter().zip(&self.pinning) {
                let pinned = match pinning {
                    None => "not pinned".to_owned(),
                    Some(Ok(Pinning::Exact { .. } | Pinning::Place { .. })) => "pinned".to_owned(),
                    Some(Ok(Pinning::Mapped { real_core, .. })) => {
                        format!("pinned to real core {real_core}")
                    }
                    Some(Err(e)) => format!("not pinned: {e}"),
                };
                let mut where_ = String::new();
                let place_index = self.registry.worker_places[place.index];
                let _ = write_place_list(
                    &mut where_,
                    std::slice::from_ref(&self.registry.place_list[place_index]),
                );
                line(
                    &format!("numatask.worker.{}", place.index),
                    &format_args!(
                        "place {place_index} {where_}, core {}, node {}, {pinned}",
                        place.core, place.node
                    ),
                );
            }
        }
        out.push_str("OPENMP DISPLAY ENVIRONMENT END\n");
        out
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

/// Runs `f` in a scope of the current runtime: the runtime of the calling worker when called
/// from a task, otherwise the process-wide [`Runtime::global`]. The error is that of creating
/// the global runtime from the environment.
pub fn scope<'scope, F, R>(f: F) -> Result<R, SchedError>
where
    F: FnOnce(&Scope<'scope>) -> R + Send,
    R: Send,
{
    match WorkerThread::current() {
        Some(worker) => Ok(scope::run_scope(worker, f)),
        None => Ok(Runtime::global()?.scope(f)),
    }
}

/// Runs `a` and `b`, in parallel when a worker is free, and returns both results (the shape of
/// `rayon::join`), in the current runtime: the calling worker's when called from a task,
/// otherwise the process-wide [`Runtime::global`]. `a` becomes a task that another worker may
/// take while `b` runs; both may borrow from the caller's stack. A panic of `b`, else of `a`,
/// is resumed here, after both finished. The error is that of creating the global runtime
/// from the environment (a bad `OMP_NUM_THREADS`, for instance).
///
/// Each call is a scope of its own ([`scope()`] around [`Scope::join`]): inside a task, where
/// the task's [`Scope`] is at hand, `s.join` saves that (15-20% of the time of a fib call
/// on 2 cores).
///
/// ```
/// fn fib(n: u64) -> u64 {
///     if n < 2 {
///         return n;
///     }
///     let (a, b) = numatask_sched::join(|| fib(n - 1), || fib(n - 2)).expect("runtime");
///     a + b
/// }
/// assert_eq!(fib(20), 6765);
/// ```
pub fn join<A, B, RA, RB>(a: A, b: B) -> Result<(RA, RB), SchedError>
where
    A: FnOnce() -> RA + Send,
    B: FnOnce() -> RB + Send,
    RA: Send,
    RB: Send,
{
    scope(|s| s.join(|_| a(), |_| b()))
}

/// Where the calling thread runs, if it is a worker of some runtime.
pub fn current_worker() -> Option<WorkerPlace> {
    WorkerThread::current().map(|w| *w.place())
}

/// The number of workers of the runtime the calling thread works for, or `None` outside
/// every pool (rayon's `current_num_threads`; [`Runtime::global`]`()?.num_workers()` gives the
/// process-wide runtime's).
///
/// ```
/// let rt = numatask_sched::Runtime::builder().num_threads(2).build()?;
/// assert_eq!(numatask_sched::current_num_workers(), None);
/// assert_eq!(rt.scope(|_| numatask_sched::current_num_workers()), Some(2));
/// # Ok::<(), numatask_sched::SchedError>(())
/// ```
pub fn current_num_workers() -> Option<usize> {
    WorkerThread::current().map(|w| w.registry().places.len())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unread_variables_are_named_in_one_line() {
        assert_eq!(unread_env_warning(&[]), None);
        assert_eq!(
            unread_env_warning(&["NUMATASK_TRACE"]).as_deref(),
            Some(
                "numatask: NUMATASK_TRACE is set but not read: this runtime was built with \
                 Runtime::builder(), which starts from the defaults (RuntimeBuilder::from_env() \
                 or Runtime::new() follow the environment)"
            )
        );
        assert!(
            unread_env_warning(&["OMP_NUM_THREADS", "OMP_PROC_BIND", "NUMATASK_SCHEDULER"])
                .is_some_and(|w| w.starts_with(
                    "numatask: OMP_NUM_THREADS, OMP_PROC_BIND and NUMATASK_SCHEDULER are set"
                ))
        );
    }

    #[test]
    fn a_default_worker_count_beyond_the_cap_is_named() {
        assert_eq!(capped_warning(4096, 4096), None);
        assert_eq!(
            capped_warning(16384, 4096).as_deref(),
            Some(
                "numatask: the places hold 16384 cores (or hardware threads), one worker each \
                 by default; a runtime starts at most 4096, on the first of them \
                 (OMP_NUM_THREADS sets the number)"
            )
        );
    }

    #[test]
    fn a_vicinity_or_an_even_tolerance_without_the_locality_scheduler_is_named() {
        assert_eq!(
            even_tolerance_warning(None, SchedulerKind::WorkStealing),
            None
        );
        assert_eq!(
            even_tolerance_warning(Some(0.0), SchedulerKind::Locality),
            None
        );
        assert!(
            even_tolerance_warning(Some(DEFAULT_EVEN_TOLERANCE), SchedulerKind::WorkStealing)
                .is_some_and(|w| w.starts_with("numatask: the even tolerance 0.1 "))
        );
        assert_eq!(
            even_tolerance_warning(Some(0.0), SchedulerKind::WorkStealing).as_deref(),
            Some(
                "numatask: the even tolerance 0 (NUMATASK_EVEN_TOLERANCE or \
                 RuntimeBuilder::even_tolerance) is not used: only the locality-aware scheduler \
                 (NUMATASK_SCHEDULER=locality) deals tasks by their footprints, and this \
                 runtime's is ws"
            )
        );
        assert_eq!(vicinity_warning(None, SchedulerKind::WorkStealing), None);
        assert_eq!(vicinity_warning(Some(16), SchedulerKind::Locality), None);
        assert_eq!(
            vicinity_warning(Some(16), SchedulerKind::WorkStealing).as_deref(),
            Some(
                "numatask: the vicinity 16 (NUMATASK_VICINITY or RuntimeBuilder::vicinity) is \
                 not used: only the locality-aware scheduler (NUMATASK_SCHEDULER=locality) \
                 bounds its steals, and this runtime's is ws"
            )
        );
    }

    #[test]
    fn a_runtime_weighing_footprints_on_another_topology_than_the_allocators_is_named() {
        let placed = Topology::current().unwrap();
        let other = if placed.num_nodes() == 8 {
            numatask_alloc::TopologyBuilder::synthetic("numa:2 core:1 pu:1")
                .build()
                .unwrap()
        } else {
            Topology::preset(numatask_alloc::Preset::Opteron6172).unwrap()
        };
        let warning = topology_warning(&other, SchedulerKind::Locality, false).unwrap();
        assert!(
            warning.contains(&format!("({} node(s)", other.num_nodes()))
                && warning.contains(&format!("({} node(s)", placed.num_nodes())),
            "{warning}"
        );
        // Another distance matrix over the same nodes is the same topology to footprints.
        let n = placed.num_nodes();
        let matrix: Vec<u32> = (0..n * n)
            .map(|i| if i % (n + 1) == 0 { 10 } else { 17 })
            .collect();
        let spec = placed.source().to_string();
        let builder = numatask_alloc::TopologyBuilder::from_spec(&spec).unwrap();
        // (hwloc takes no matrix for one node: then the same nodes rebuilt.)
        let builder = if n >= 2 {
            builder.distances(matrix)
        } else {
            builder
        };
        let redistanced = builder.build().unwrap();
        assert_eq!(
            topology_warning(&redistanced, SchedulerKind::Locality, true),
            None
        );
        assert!(topology_warning(&other, SchedulerKind::WorkStealing, true).is_some());
        // Work stealing without a trace reads no footprint; the allocator's own topology is
        // what footprints are read against.
        assert_eq!(
            topology_warning(&other, SchedulerKind::WorkStealing, false),
            None
        );
        assert_eq!(
            topology_warning(&placed, SchedulerKind::Locality, true),
            None
        );
    }

    #[test]
    fn workers_that_could_not_be_pinned_are_named_once() {
        let failed = || {
            Some(Err(AllocError::Pin {
                core: 3,
                reason: "Invalid argument".into(),
            }))
        };
        let pinned = || Some(Ok(Pinning::Exact { core: 0 }));
        assert_eq!(unpinned_warning(&[pinned(), pinned()]), None);
        assert_eq!(unpinned_warning(&[None, None]), None, "OMP_PROC_BIND=false");
        assert_eq!(
            unpinned_warning(&[pinned(), failed()]).as_deref(),
            Some(
                "numatask: 1 of 2 workers run unpinned (worker 1: pinning the thread to core 3 \
                 failed: Invalid argument)"
            )
        );
        assert_eq!(
            unpinned_warning(&[failed(), pinned(), failed()]).as_deref(),
            Some(
                "numatask: 2 of 3 workers run unpinned (worker 0: pinning the thread to core 3 \
                 failed: Invalid argument; and others)"
            )
        );
    }
}
