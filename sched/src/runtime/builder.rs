//! [`RuntimeBuilder`]: the settings of a runtime to start, from the defaults or the
//! environment, and [`build`](RuntimeBuilder::build), which checks them and starts the workers.

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::mpsc;
use std::thread;

use numatask_alloc::Topology;

use super::detached::DetachedJobs;
use super::places::{calling_core, current_cpu, resolve_places};
use super::trace_sink::TraceSink;
use super::warnings::{
    capped_warning, even_tolerance_warning, topology_warning, unpinned_warning, vicinity_warning,
    warn_of_unread_env,
};
use super::{Registry, Runtime, Settings};
use crate::config::{
    Config, DEFAULT_EVEN_TOLERANCE, DEFAULT_STACK_SIZE, DisplayEnv, MAX_EVEN_TOLERANCE,
    MAX_STACK_SIZE, MIN_STACK_SIZE, MIN_VICINITY, Places, ProcBind, WaitPolicy, format_size,
};
use crate::error::BuildError;
use crate::scheduler::{SchedulerKind, WorkerPlace};
use crate::sleep::Sleep;
use crate::trace::{TRACE_ENV, Tracer};
use crate::worker::{SetAside, WorkerThread};

/// Default capacity of a worker's deque.
pub const DEFAULT_DEQUE_CAPACITY: usize = 4096;

/// The largest deque capacity a runtime accepts (16 MiB of slots per worker).
pub const MAX_DEQUE_CAPACITY: usize = 1 << 20;

/// One more than [`MAX_NUM_THREADS`](crate::config::MAX_NUM_THREADS), for a range pattern.
const MAX_NUM_THREADS_PLUS_ONE: usize = crate::config::MAX_NUM_THREADS + 1;

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
/// # Ok::<(), numatask_sched::BuildError>(())
/// ```
#[derive(Clone, Debug, Default)]
pub struct RuntimeBuilder {
    /// Every setting but the topology (the setters write it, [`from_env`](Self::from_env)
    /// reads it from the environment).
    config: Config,
    topology: Option<Arc<Topology>>,
}

impl RuntimeBuilder {
    /// The defaults: one worker per core, pinned, 2 MiB stacks, work stealing, silent. No
    /// runtime variable is read (the topology follows `NUMATASK_TOPOLOGY` unless
    /// [`topology`](Self::topology) gives one): [`build`](Self::build) names those set in the
    /// environment on stderr, once per process, as unread.
    pub fn new() -> Self {
        Self::default()
    }

    /// The defaults overridden by the environment (`OMP_NUM_THREADS`, `OMP_THREAD_LIMIT`,
    /// `OMP_MAX_TASK_PRIORITY`, `OMP_PROC_BIND`, `OMP_PLACES`, `OMP_STACKSIZE`,
    /// `NUMATASK_SCHEDULER`, `NUMATASK_VICINITY`, `NUMATASK_EVEN_TOLERANCE`,
    /// `OMP_WAIT_POLICY`, `OMP_DISPLAY_ENV`,
    /// `NUMATASK_TRACE`; `NUMATASK_TOPOLOGY` is read by [`build`](Self::build) for any
    /// builder not given a [`topology`](Self::topology)). An invalid value of any of them, or
    /// of the allocator's `OMP_DATA_DISTRIBUTION`, is an error naming the variable.
    pub fn from_env() -> Result<Self, BuildError> {
        Ok(Self::from_config(Config::from_env()?))
    }

    /// A builder starting from `config` (for instance [`Config::from_lookup`]'s, an
    /// environment other than the process's); the setters override it.
    pub fn from_config(config: Config) -> Self {
        RuntimeBuilder {
            config,
            topology: None,
        }
    }

    /// Number of workers (default: one per core the process may run on,
    /// [`Topology::usable_cores`]; at most
    /// [`MAX_NUM_THREADS`](crate::config::MAX_NUM_THREADS)).
    pub fn num_threads(mut self, n: usize) -> Self {
        self.config.num_threads = Some(n);
        self
    }

    /// The most workers to start (`OMP_THREAD_LIMIT`; default: no limit): a larger
    /// [`num_threads`](Self::num_threads), or a default of more cores, gives this many
    /// workers, as OpenMP gives a parallel region no more threads than its thread limit.
    /// For a launcher or a batch system capping a program's threads without choosing them;
    /// zero is an error at [`build`](Self::build).
    pub fn thread_limit(mut self, n: usize) -> Self {
        self.config.thread_limit = Some(n);
        self
    }

    /// The largest task priority honoured (`OMP_MAX_TASK_PRIORITY`; default 0: priorities
    /// are ignored, as in OpenMP). A task spawned with a larger priority counts as having
    /// this one. At most [`MAX_MAX_TASK_PRIORITY`](crate::config::MAX_MAX_TASK_PRIORITY).
    pub fn max_task_priority(mut self, max: u32) -> Self {
        self.config.max_task_priority = Some(max);
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
    /// # Ok::<(), numatask_sched::BuildError>(())
    /// ```
    pub fn proc_bind(mut self, policy: impl Into<ProcBind>) -> Self {
        self.config.proc_bind = Some(policy.into());
        self
    }

    /// The places workers are bound to (`OMP_PLACES`; default [`Places::Cores`]: one per
    /// core the process may run on). Resolved against the topology when the runtime starts:
    /// an explicit processor the topology lacks, or a place wholly outside the process's CPU
    /// binding, is an error then ([`BuildError::Places`]).
    pub fn places(mut self, places: Places) -> Self {
        self.config.places = Some(places);
        self.config.places_text = None;
        self
    }

    /// Stack size of each worker thread in bytes (default 2 MiB, at least 64 KiB). Tasks nested
    /// through waits deeper than it holds run on stack segments the worker grows (see the
    /// taskwait policy in the `worker` module); recursion in a task's own code gets what is
    /// left of it.
    pub fn stack_size(mut self, bytes: usize) -> Self {
        self.config.stack_size = Some(bytes);
        self
    }

    /// The scheduling policy (default work stealing).
    pub fn scheduler(mut self, kind: SchedulerKind) -> Self {
        self.config.scheduler = Some(kind);
        self
    }

    /// The vicinity of the locality-aware scheduler (the paper's section 4.2): its workers
    /// steal tasks (dealt or not) only from nodes at most this OS distance away (`None`, the
    /// default: any node; `Some(10)`: none but their own). Scopes entered from outside the
    /// pool still go to any worker. Work stealing ignores it.
    pub fn vicinity(mut self, max_distance: Option<u32>) -> Self {
        self.config.vicinity = Some(max_distance);
        self
    }

    /// The even tolerance of the locality-aware scheduler (`NUMATASK_EVEN_TOLERANCE`; default
    /// [`DEFAULT_EVEN_TOLERANCE`], 0.1): a task whose footprint's standard deviation over the
    /// nodes is at most this fraction of its mean counts as evenly spread and stays on its
    /// node; `0.0` is the paper's exact `stddev(D) > 0` test (see
    /// [`SchedulerKind::Locality`](crate::SchedulerKind::Locality)). From 0 to [`MAX_EVEN_TOLERANCE`]. Work stealing ignores it.
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
    /// # Ok::<(), numatask_sched::BuildError>(())
    /// ```
    pub fn even_tolerance(mut self, tolerance: f64) -> Self {
        self.config.even_tolerance = Some(tolerance);
        self
    }

    /// How idle workers wait for work (`OMP_WAIT_POLICY`; default [`WaitPolicy::Balanced`]:
    /// search for 200 µs, then sleep).
    pub fn wait_policy(mut self, policy: WaitPolicy) -> Self {
        self.config.wait_policy = Some(policy);
        self
    }

    /// Traces every task (see [`crate::trace`]) and writes the Chrome trace to `path` when the
    /// runtime is dropped or [`Runtime::finish_trace`] is called, printing the locality
    /// summary to standard error.
    pub fn trace(mut self, path: impl Into<PathBuf>) -> Self {
        self.config.trace = Some(path.into());
        self.config.trace_from_env = false;
        self
    }

    /// Traces every task in memory, without a trace file, for the locality summary alone:
    /// [`Runtime::finish_trace`], or dropping the runtime, prints it to standard error (tasks
    /// and footprint bytes local and remote per node, steals by distance) and
    /// [`Runtime::tracer`] gives every record. A trace file ([`trace`](Self::trace),
    /// `NUMATASK_TRACE`) implies it.
    pub fn trace_summary(mut self, on: bool) -> Self {
        self.config.trace_summary = Some(on);
        self
    }

    /// Print the effective settings to standard error when the runtime starts.
    pub fn display_env(mut self, display: DisplayEnv) -> Self {
        self.config.display_env = Some(display);
        self
    }

    /// Capacity of each worker's deque (default 4096, at most 1,048,576; rounded up to a
    /// power of two). A worker whose deque is full runs the tasks it spawns inline.
    pub fn deque_capacity(mut self, capacity: usize) -> Self {
        self.config.deque_capacity = Some(capacity);
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

    /// Starts the workers.
    pub fn build(self) -> Result<Runtime, BuildError> {
        let Config {
            num_threads: asked_threads,
            thread_limit,
            max_task_priority,
            proc_bind,
            places: asked_places,
            places_text,
            stack_size,
            scheduler: kind,
            display_env,
            vicinity,
            even_tolerance: asked_tolerance,
            wait_policy,
            trace,
            trace_from_env,
            trace_summary,
            deque_capacity,
            from_env,
        } = self.config;
        let max_task_priority = max_task_priority.unwrap_or(0);
        let proc_bind = proc_bind.unwrap_or(ProcBind::True);
        let place_spec = asked_places.unwrap_or(Places::Cores);
        let stack_size = stack_size.unwrap_or(DEFAULT_STACK_SIZE);
        let kind = kind.unwrap_or_default();
        let display_env = display_env.unwrap_or(DisplayEnv::False);
        let vicinity = vicinity.flatten();
        let wait_policy = wait_policy.unwrap_or(WaitPolicy::Balanced);
        let deque_capacity = deque_capacity.unwrap_or(DEFAULT_DEQUE_CAPACITY);
        let trace_summary = trace_summary.unwrap_or(false);
        let topology = match self.topology {
            Some(t) => t,
            None => Topology::current()?,
        };
        if let Some(warning) = topology_warning(&topology, kind, trace.is_some()) {
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
        let resolved = resolve_places(&place_spec, places_text.as_deref(), &topology, &usable)?;
        let default_threads = {
            let mut cores: Vec<usize> = resolved
                .iter()
                .flat_map(|p| p.cores.iter().copied())
                .collect();
            cores.sort_unstable();
            cores.dedup();
            match place_spec {
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
        let num_threads = asked_threads
            .unwrap_or(default_threads)
            .min(thread_limit.unwrap_or(usize::MAX))
            .clamp(1, crate::config::MAX_NUM_THREADS);
        if let Some(n @ (0 | MAX_NUM_THREADS_PLUS_ONE..)) = asked_threads {
            return Err(BuildError::InvalidSetting {
                setting: "num_threads",
                value: n.to_string(),
                expected: "from 1 to 4096 workers",
            });
        }
        if asked_threads.is_none()
            && let Some(warning) = capped_warning(
                default_threads.min(thread_limit.unwrap_or(usize::MAX)),
                num_threads,
            )
        {
            eprintln!("{warning}");
        }
        if max_task_priority > crate::config::MAX_MAX_TASK_PRIORITY {
            return Err(BuildError::InvalidSetting {
                setting: "max_task_priority",
                value: max_task_priority.to_string(),
                expected: "at most 2147483647 (a C int)",
            });
        }
        if thread_limit == Some(0) {
            return Err(BuildError::InvalidSetting {
                setting: "thread_limit",
                value: "0".into(),
                expected: "a positive number of workers",
            });
        }
        if !(MIN_STACK_SIZE..=MAX_STACK_SIZE).contains(&stack_size) {
            return Err(BuildError::InvalidSetting {
                setting: "stack_size",
                value: stack_size.to_string(),
                expected: "from 65536 bytes to 16 GiB",
            });
        }
        if let Some(d @ ..MIN_VICINITY) = vicinity {
            return Err(BuildError::InvalidSetting {
                setting: "vicinity",
                value: d.to_string(),
                expected: "an OS distance of at least 10 (10 = the own node only), or None",
            });
        }
        // -0.0 is 0 (it would print as "-0").
        let even_tolerance = asked_tolerance.unwrap_or(DEFAULT_EVEN_TOLERANCE) + 0.0;
        if !(0.0..=MAX_EVEN_TOLERANCE).contains(&even_tolerance) {
            return Err(BuildError::InvalidSetting {
                setting: "even_tolerance",
                value: even_tolerance.to_string(),
                // The 100 is MAX_EVEN_TOLERANCE.
                expected: "a number from 0 to 100 (0: the paper's exact test)",
            });
        }
        if !(1..=MAX_DEQUE_CAPACITY).contains(&deque_capacity) {
            return Err(BuildError::InvalidSetting {
                setting: "deque_capacity",
                value: deque_capacity.to_string(),
                expected: "from 1 to 1048576 tasks (each worker's deque is allocated whole)",
            });
        }
        // A second runtime of the process traced by `NUMATASK_TRACE` writes beside the first's
        // file rather than over it (`t.json`, then `t.2.json`, ...).
        let mut trace = trace;
        if trace_from_env && let Some(path) = &mut trace {
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
            if trace_from_env {
                crate::trace::release_env_trace_path(path);
            }
            return Err(BuildError::TraceFile {
                from_env: trace_from_env,
                path: path.display().to_string(),
                reason: e.to_string(),
            });
        }
        // `primary`: the place holding the processor the starting thread runs on (on a
        // synthetic topology, or when that is in no place, one holding its core).
        let primary = (proc_bind == ProcBind::Primary)
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
                None => proc_bind.place_of(index, num_threads, resolved.len()),
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
            .map(|&p| match place_spec {
                Places::Cores | Places::CoresN(_) => None,
                _ => Some(resolved[p].pus.clone()),
            })
            .collect();
        let settings = Settings {
            num_threads,
            thread_limit,
            max_task_priority,
            proc_bind,
            places: place_spec,
            stack_size,
            scheduler: kind,
            display_env,
            deque_capacity,
            vicinity,
            even_tolerance,
            wait_policy,
            trace: trace.clone(),
            trace_summary: trace_summary || trace.is_some(),
        };
        let (scheduler, queues) = kind.create(&topology, &places, &settings);
        let tracer = settings.trace_summary.then(|| {
            let nodes = places.iter().map(|p| p.node).collect();
            Arc::new(Tracer::new(nodes, topology.num_nodes(), trace))
        });
        let mail = crate::mailbox::Mailboxes::new(&places, topology.num_nodes());
        let registry = Arc::new(Registry {
            scheduler,
            sleep: Sleep::with_policy(num_threads, wait_policy),
            places,
            place_list: resolved.iter().map(|p| p.pus.clone()).collect(),
            worker_places: worker_places.into(),
            topology,
            settings,
            tracer,
            set_aside: SetAside::default(),
            mail,
            prioritized: (max_task_priority > 0).then(crate::worker::Prioritized::new),
            short_waits: (0..num_threads)
                .map(|_| std::sync::atomic::AtomicUsize::new(0))
                .collect(),
            detached: DetachedJobs::default(),
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
            let pin = proc_bind.pins();
            let spawned = thread::Builder::new()
                .name(format!("numatask-{index}"))
                .stack_size(stack_size)
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
                    return Err(BuildError::SpawnWorker {
                        worker: index,
                        stack: format_size(stack_size),
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
        if !from_env {
            warn_of_unread_env();
        }
        if let Some(warning) = vicinity_warning(vicinity, kind) {
            eprintln!("{warning}");
        }
        if let Some(warning) = even_tolerance_warning(asked_tolerance, kind) {
            eprintln!("{warning}");
        }
        if runtime.settings().display_env != DisplayEnv::False {
            eprint!("{}", runtime.display_env());
        }
        Ok(runtime)
    }
}
