//! A NUMA cost MODEL, for what a one-node machine cannot show: what the paper's 8-node machine
//! would pay for the memory accesses of a run, given where each task ran and where its data lies.
//! Everything it prints is labelled MODEL: it is arithmetic on measured traces, not a
//! measurement of a NUMA machine.
//!
//! # Inputs (all real data from the run)
//!
//! - from the runtime's tracer (`NUMATASK_TRACE` / `RuntimeBuilder::trace`), for every task:
//!   the worker and node that ran it and its footprint in bytes per node (its depend list looked
//!   up in the allocator's placement registry), and the distance of any steal;
//! - from a [`Probe`] in the task bodies ([`timed`]): the task's compute time, measured as the
//!   thread's CPU time on this machine (immune to the time slicing of 48 emulated workers on a
//!   few real cores), and the same footprint, computed by the task itself as a cross-check of
//!   the trace. Compute times come from a calibration run ([`calibrate`]: the benchmark under
//!   work stealing with as many workers as real cores) and are averaged per kind of task (its
//!   label: every task of a kind does the same work), so that every configuration is charged
//!   the same compute for the same work: CPU time on a shared two-core VM varies by 10-30%
//!   from run to run, which is not NUMA and would otherwise drown compute-bound benchmarks.
//!
//! # The model
//!
//! - **Latency proportional to the OS distance**: a byte on node `j` read by a task on node `n`
//!   costs `lat(n, j) = distance(n, j) / distance(n, n)` times a local byte (1.0 local, 1.6 and
//!   2.2 on the paper's Opteron 6172 preset, whose OS distances are 10, 16 and 22). This is the
//!   paper's own reading of the distance table ("an approximation of the maximum latency"); its
//!   measured average NUMA factor, 1.19, is milder, so the model exaggerates remote costs.
//! - **Memory time of a task** = `sum_j D[j] * lat(n, j) / B_core`: its footprint streamed once
//!   at `B_core` (default 2 GB/s, about one Opteron 6172 core's share of its node's memory
//!   bandwidth when all six stream).
//! - **Task time** = compute time (the calibrated CPU time of its kind) + memory time. The
//!   compute time includes this machine's own, local, memory traffic, so the model charges
//!   local bytes twice; the bias is the same in every configuration of a benchmark.
//! - **Load balance, by emulation**: with a probe, every task occupies its worker for
//!   `dilation x` its task time (it sleeps out the rest after computing), so the runtime's real
//!   schedulers deal, steal and wait on dependences in a time-dilated run in which the 48
//!   workers of the preset are busy exactly as long as the model says, while using only a
//!   fraction of the real cores (at most 48 / dilation). The *emulated makespan* is the run's
//!   wall time divided by the dilation; the busiest worker's total task time is printed next to
//!   it. Real-time delays of the run (task creation, wake-ups) shrink by the dilation, except
//!   where a worker that was not woken waits for a (dilated) task to end: see
//!   [`Evaluation::best_of`].
//! - **Bandwidth contention**: node `j`'s memory serves `sum over tasks of D[j]` bytes at most
//!   at `B_node` (default 12 GB/s), so the run takes at least `max_j bytes_j / B_node`.
//! - **MODEL time** = max(emulated makespan, contention bound), of the fastest of a few runs.
//! - **Standard distribution** on a synthetic topology: see [`super::place`] (node 0, where the
//!   main thread's first touch would put it).
//!
//! Not modelled: caches (every footprint byte is charged), link contention on the interconnect,
//! write-backs, prefetching, and the Opteron's slower cores (compute time is this machine's).

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use numatask::alloc::{Distribution, NodeBytes, Topology};
use numatask::sched::depend::Access;
use numatask::sched::trace::TaskRecord;
use numatask::sched::{RuntimeBuilder, Scope};

use super::{Benchmark, BoxError, Size, measure};

/// The MODEL's parameters.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ModelParams {
    /// Local streaming bandwidth of one core, GB/s.
    pub core_gbps: f64,
    /// Memory bandwidth of one node, GB/s.
    pub node_gbps: f64,
    /// How many times longer than its modelled time a task occupies its worker.
    pub dilation: f64,
}

impl Default for ModelParams {
    fn default() -> Self {
        ModelParams {
            core_gbps: 2.0,
            node_gbps: 12.0,
            dilation: 32.0,
        }
    }
}

impl ModelParams {
    /// One line for table titles.
    pub fn describe(&self) -> String {
        format!(
            "latency = OS distance / local distance, B_core {} GB/s, B_node {} GB/s, time \
             dilation {}x",
            self.core_gbps, self.node_gbps, self.dilation
        )
    }
}

/// What a probe learned about one task.
#[derive(Clone, Debug)]
struct ProbeRecord {
    label: &'static str,
    worker: usize,
    /// Its CPU time in this run.
    measured_s: f64,
    /// The compute time charged: the calibrated one of its kind, or the measured one.
    compute_s: f64,
    memory_s: f64,
    local_bytes: u64,
    bytes: u64,
}

/// The mean compute (CPU) time of each kind of task, by label, from a calibration run.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ComputeTable(Vec<(&'static str, f64)>);

impl ComputeTable {
    /// The mean time of each label among `samples` of `(label, seconds)`.
    pub fn mean_by_label(samples: impl IntoIterator<Item = (&'static str, f64)>) -> ComputeTable {
        let mut sums: Vec<(&'static str, f64, usize)> = Vec::new();
        for (label, s) in samples {
            match sums.iter_mut().find(|(l, _, _)| *l == label) {
                Some((_, sum, n)) => {
                    *sum += s;
                    *n += 1;
                }
                None => sums.push((label, s, 1)),
            }
        }
        ComputeTable(
            sums.into_iter()
                .map(|(l, sum, n)| (l, sum / n as f64))
                .collect(),
        )
    }

    /// The mean compute time of tasks labelled `label`.
    pub fn get(&self, label: &str) -> Option<f64> {
        self.0.iter().find(|(l, _)| *l == label).map(|(_, s)| *s)
    }

    /// `label: mean` pairs, in microseconds.
    pub fn describe(&self) -> String {
        self.0
            .iter()
            .map(|(l, s)| format!("{l} {:.0} us", 1e6 * s))
            .collect::<Vec<_>>()
            .join(", ")
    }
}

/// Times tasks and, when emulating, stretches them to their modelled duration (see the module
/// docs).
#[derive(Debug)]
pub struct Probe {
    nodes: usize,
    distances: Vec<u32>,
    params: ModelParams,
    /// `Some` when emulating: the compute time charged per kind of task. `None` when
    /// calibrating: tasks are timed, not stretched.
    compute: Option<ComputeTable>,
    records: Mutex<Vec<ProbeRecord>>,
}

impl Probe {
    /// A probe that emulates the MODEL on `topology` (the topology the runtime places its
    /// workers on), charging the compute times of `compute`.
    pub fn new(topology: &Topology, params: ModelParams, compute: ComputeTable) -> Probe {
        Probe {
            compute: Some(compute),
            ..Probe::calibration(topology, params)
        }
    }

    /// A probe that only measures compute times (see [`Probe::compute_table`]).
    pub fn calibration(topology: &Topology, params: ModelParams) -> Probe {
        Probe {
            nodes: topology.num_nodes(),
            distances: topology.distance_matrix().to_vec(),
            params,
            compute: None,
            records: Mutex::new(Vec::new()),
        }
    }

    /// The mean measured compute time of each kind of task so far.
    pub fn compute_table(&self) -> ComputeTable {
        let records = self.records.lock().unwrap_or_else(|e| e.into_inner());
        ComputeTable::mean_by_label(records.iter().map(|r| (r.label, r.measured_s)))
    }

    /// The model's parameters.
    pub fn params(&self) -> &ModelParams {
        &self.params
    }

    /// `lat(from, to)`: the cost of a byte on node `to` for a task on node `from`, relative to
    /// a local byte.
    pub fn latency(&self, from: usize, to: usize) -> f64 {
        let n = self.nodes;
        if from >= n || to >= n {
            return 1.0;
        }
        let local = self.distances[from * n + from].max(1);
        f64::from(self.distances[from * n + to]) / f64::from(local)
    }

    /// Memory time of a footprint `d` read from node `node`, in seconds (bytes of unknown
    /// placement count as local).
    pub fn memory_seconds(&self, d: &NodeBytes, node: usize) -> f64 {
        let weighted: f64 = d
            .per_node()
            .iter()
            .enumerate()
            .map(|(j, &b)| b as f64 * self.latency(node, j))
            .sum::<f64>()
            + d.unknown() as f64;
        weighted / (self.params.core_gbps * 1e9)
    }

    fn footprint(&self, accesses: &[Access]) -> NodeBytes {
        // Each byte once, as the runtime's dealer counts it.
        numatask::sched::__internals::footprint_node_bytes(accesses, self.nodes)
    }

    /// Evaluates the MODEL for the run whose tasks `trace` holds and whose parallel section
    /// took `wall`. Fails when the trace and the probe disagree on the tasks or their bytes.
    pub fn evaluate(&self, trace: &[TaskRecord], wall: Duration) -> Result<Evaluation, String> {
        let records = self.records.lock().unwrap_or_else(|e| e.into_inner());
        let mut served = vec![0u64; self.nodes];
        let (mut memory_s, mut local, mut bytes, mut tasks) = (0.0, 0u64, 0u64, 0usize);
        let mut steals = BTreeMap::new();
        let mut workers = std::collections::BTreeSet::new();
        for r in trace {
            if let Some(d) = r.stolen_distance {
                *steals.entry(d).or_insert(0u64) += 1;
            }
            let Some(f) = &r.footprint else { continue };
            tasks += 1;
            workers.insert(r.worker);
            memory_s += self.memory_seconds(f, r.node);
            local += f.on(r.node) + f.unknown();
            bytes += f.known() + f.unknown();
            for (j, &b) in f.per_node().iter().enumerate() {
                if let Some(s) = served.get_mut(j) {
                    *s += b;
                }
            }
        }
        let probed_local: u64 = records.iter().map(|r| r.local_bytes).sum();
        let probed_bytes: u64 = records.iter().map(|r| r.bytes).sum();
        if tasks != records.len() || local != probed_local || bytes != probed_bytes {
            return Err(format!(
                "the trace ({tasks} tasks with a footprint, {local} of {bytes} bytes local) and \
                 the tasks' own probes ({} tasks, {probed_local} of {probed_bytes} bytes local) \
                 disagree",
                records.len()
            ));
        }
        let mut per_worker: BTreeMap<usize, f64> = BTreeMap::new();
        for r in records.iter() {
            *per_worker.entry(r.worker).or_default() += r.compute_s + r.memory_s;
        }
        Ok(Evaluation {
            tasks,
            workers_used: workers.len(),
            local_fraction: (bytes > 0).then(|| local as f64 / bytes as f64),
            compute_s: records.iter().map(|r| r.compute_s).sum(),
            memory_s,
            busiest_worker_s: per_worker.values().copied().fold(0.0, f64::max),
            emulated_s: wall.as_secs_f64() / self.params.dilation,
            contention_s: served.iter().copied().max().unwrap_or(0) as f64
                / (self.params.node_gbps * 1e9),
            steals,
            runs_s: Vec::new(),
        })
    }
}

/// Runs one task body `f` of kind `label` whose footprint (depend list) is `footprint`:
/// directly without a probe; with one, measures its compute time and its modelled memory time
/// on the node of the worker running it and records both; when the probe emulates, occupies
/// the worker until `dilation x` (its kind's calibrated compute time + memory time) has passed
/// since the task started.
pub fn timed<R>(
    probe: Option<&Probe>,
    s: &Scope<'_>,
    label: &'static str,
    footprint: &[Access],
    f: impl FnOnce() -> R,
) -> R {
    let Some(probe) = probe else {
        return f();
    };
    let start = Instant::now();
    let cpu = thread_cpu_time();
    let result = f();
    let measured_s = (thread_cpu_time().saturating_sub(cpu)).as_secs_f64();
    let compute_s = probe
        .compute
        .as_ref()
        .and_then(|c| c.get(label))
        .unwrap_or(measured_s);
    let node = s.node();
    let d = probe.footprint(footprint);
    let memory_s = probe.memory_seconds(&d, node);
    probe
        .records
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .push(ProbeRecord {
            label,
            worker: s.worker_index(),
            measured_s,
            compute_s,
            memory_s,
            local_bytes: d.on(node) + d.unknown(),
            bytes: d.known() + d.unknown(),
        });
    if probe.compute.is_some() {
        let modelled = Duration::from_secs_f64(probe.params.dilation * (compute_s + memory_s));
        let now = Instant::now();
        if start + modelled > now {
            std::thread::sleep(start + modelled - now);
        }
    }
    result
}

/// The compute times of `benchmark`'s kinds of tasks on this machine: one warm-up and two
/// measured runs under work stealing with fine distribution and one worker per real core, on
/// the current topology.
pub fn calibrate(
    benchmark: Benchmark,
    size: Size,
    params: ModelParams,
) -> Result<ComputeTable, BoxError> {
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let rt = RuntimeBuilder::new().num_threads(cores).build()?;
    let mut instance = benchmark.prepare(size, Distribution::Fine)?;
    measure(instance.as_mut(), &rt, 0, 1, Duration::ZERO, None)?;
    let probe = Probe::calibration(rt.topology(), params);
    measure(instance.as_mut(), &rt, 0, 2, Duration::ZERO, Some(&probe))?;
    Ok(probe.compute_table())
}

/// CPU time of the calling thread.
fn thread_cpu_time() -> Duration {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid timespec to write; CLOCK_THREAD_CPUTIME_ID always exists on
    // Linux. On failure `ts` stays zero, which only makes the task's compute time zero.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    Duration::new(
        u64::try_from(ts.tv_sec).unwrap_or(0),
        u32::try_from(ts.tv_nsec).unwrap_or(0),
    )
}

/// The MODEL's verdict on one run.
#[derive(Clone, Debug)]
pub struct Evaluation {
    /// Tasks with a footprint.
    pub tasks: usize,
    /// Workers that ran at least one of them.
    pub workers_used: usize,
    /// Fraction of footprint bytes on the executing node.
    pub local_fraction: Option<f64>,
    /// Sum of the tasks' measured compute times, s.
    pub compute_s: f64,
    /// Sum of the tasks' modelled memory times, s.
    pub memory_s: f64,
    /// The largest sum of task times of one worker, s.
    pub busiest_worker_s: f64,
    /// Wall time of the parallel section / dilation, s.
    pub emulated_s: f64,
    /// `max_j bytes served by node j / B_node`, s.
    pub contention_s: f64,
    /// Steals by the distance they crossed (from the trace).
    pub steals: BTreeMap<u32, u64>,
    /// The MODEL time of every run of this configuration, when it was run several times and
    /// this is the fastest one (see [`Evaluation::best_of`]).
    pub runs_s: Vec<f64>,
}

impl Evaluation {
    /// MODEL time: the emulated makespan, or the contention bound if that is longer.
    pub fn model_s(&self) -> f64 {
        self.emulated_s.max(self.contention_s)
    }

    /// The run of least MODEL time among `runs`, remembering every run's MODEL time.
    ///
    /// Why the least: runs of one configuration differ mostly by how fast idle workers woke
    /// up. A woken worker of the emulation waits for one of the few real cores (milliseconds,
    /// not the microseconds of a 48-core machine), and the runtime wakes idle workers one after
    /// another (each worker that finds work wakes the next), so a parallel section may start
    /// with part of the workers asleep for a long, undilated time; sometimes the chain of
    /// wake-ups stops early and tasks wait for a busy worker. Those delays belong to the
    /// emulation and the runtime's wake-up policy, not to NUMA; the fastest run is the one
    /// least affected by them.
    pub fn best_of(mut runs: Vec<Evaluation>) -> Option<Evaluation> {
        runs.sort_by(|a, b| a.model_s().total_cmp(&b.model_s()));
        let all: Vec<f64> = runs.iter().map(Evaluation::model_s).collect();
        let mut best = runs.into_iter().next()?;
        best.runs_s = all;
        Some(best)
    }

    /// Steals as `distance:count` pairs.
    pub fn steals_text(&self) -> String {
        if self.steals.is_empty() {
            return "-".into();
        }
        self.steals
            .iter()
            .map(|(d, n)| format!("{d}:{n}"))
            .collect::<Vec<_>>()
            .join(" ")
    }
}

/// A MODEL table of one benchmark: one row per configuration, MODEL time normalized to the row
/// named `baseline`.
pub fn table(title: &str, rows: &[(String, Evaluation)], baseline: &str) -> String {
    let base = rows
        .iter()
        .find(|(name, _)| name == baseline)
        .map(|(_, e)| e.model_s());
    let mut out = String::new();
    let _ = writeln!(out, "{title}");
    let _ = writeln!(
        out,
        "| config | tasks | workers used | local bytes | compute s | memory s | busiest worker ms | emulated \
         ms | contention ms | MODEL ms | MODEL vs {baseline} | all runs, MODEL ms | steals \
         (distance:count) |"
    );
    let _ = writeln!(out, "|---|---|---|---|---|---|---|---|---|---|---|---|---|");
    for (name, e) in rows {
        let _ = writeln!(
            out,
            "| {name} | {} | {} | {} | {:.3} | {:.3} | {:.1} | {:.1} | {:.1} | {:.1} | {} | {} | {} |",
            e.tasks,
            e.workers_used,
            e.local_fraction
                .map_or("-".into(), |l| format!("{:.1}%", 100.0 * l)),
            e.compute_s,
            e.memory_s,
            1e3 * e.busiest_worker_s,
            1e3 * e.emulated_s,
            1e3 * e.contention_s,
            1e3 * e.model_s(),
            base.map_or("-".into(), |b| format!("{:.2}", e.model_s() / b)),
            if e.runs_s.len() > 1 {
                e.runs_s
                    .iter()
                    .map(|t| format!("{:.1}", 1e3 * t))
                    .collect::<Vec<_>>()
                    .join(" ")
            } else {
                "-".into()
            },
            e.steals_text()
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use numatask::alloc::{NodeBytes, Preset, Topology};

    use super::{ComputeTable, Evaluation, ModelParams, Probe};

    fn preset_probe() -> Probe {
        let topology = Topology::preset(Preset::Opteron6172).expect("the preset builds");
        Probe::calibration(&topology, ModelParams::default())
    }

    #[test]
    fn latency_is_the_os_distance_over_the_local_distance() {
        let p = preset_probe();
        assert_eq!(p.latency(0, 0), 1.0);
        assert_eq!(p.latency(0, 1), 1.6);
        assert_eq!(p.latency(0, 3), 2.2);
        assert_eq!(
            p.latency(9, 0),
            1.0,
            "nodes outside the topology count as local"
        );
    }

    #[test]
    fn memory_time_weights_each_node_s_bytes_by_its_latency() {
        let p = preset_probe();
        let d = NodeBytes::from_bytes(vec![2_000_000_000, 1_000_000_000, 0, 1_000_000_000]);
        // (2 x 1.0 + 1 x 1.6 + 1 x 2.2) GB at 2 GB/s.
        let t = p.memory_seconds(&d, 0);
        assert!((t - 2.9).abs() < 1e-9, "{t}");
        let local = NodeBytes::from_bytes(vec![0, 0, 0, 4_000_000_000]);
        assert!((p.memory_seconds(&local, 3) - 2.0).abs() < 1e-9);
    }

    fn evaluation(model_ms: f64) -> Evaluation {
        Evaluation {
            tasks: 1,
            workers_used: 1,
            local_fraction: None,
            compute_s: 0.0,
            memory_s: 0.0,
            busiest_worker_s: 0.0,
            emulated_s: model_ms / 1e3,
            contention_s: 0.0,
            steals: BTreeMap::new(),
            runs_s: Vec::new(),
        }
    }

    #[test]
    fn model_time_is_the_longer_of_emulated_makespan_and_contention() {
        let mut e = evaluation(3.0);
        assert_eq!(e.model_s(), 0.003);
        e.contention_s = 0.005;
        assert_eq!(e.model_s(), 0.005);
    }

    #[test]
    fn best_of_keeps_the_fastest_run_and_every_run_s_time() {
        let best = Evaluation::best_of(vec![evaluation(9.0), evaluation(4.0), evaluation(6.0)])
            .expect("three runs");
        assert_eq!(best.model_s(), 0.004);
        assert_eq!(best.runs_s, vec![0.004, 0.006, 0.009]);
        assert!(Evaluation::best_of(Vec::new()).is_none());
    }

    #[test]
    fn compute_table_averages_per_label() {
        let table = ComputeTable::mean_by_label([("a", 1.0), ("b", 4.0), ("a", 3.0)]);
        assert_eq!(table.get("a"), Some(2.0));
        assert_eq!(table.get("b"), Some(4.0));
        assert_eq!(table.get("c"), None);
    }
}
