//! Opt-in task tracing (`NUMATASK_TRACE=file.json`): for every task, the worker and node that ran
//! it, the queue it was dealt to and why, the distance it was stolen across, when a task with
//! clauses became ready (its `wait_us` before it started), its start and end, its footprint in bytes per node and the
//! fraction of those bytes local to the executing node.
//!
//! Exported as Chrome trace-event JSON, which Perfetto (ui.perfetto.dev) and chrome://tracing open:
//! one timeline per worker, as in the core paper's Figures 8 and 10. Perfetto colours a slice by its
//! name, so each slice is *named for its remote-byte fraction* (`local`, `remote <25%`, ...,
//! `remote >=90%`; `no footprint`, `footprint unknown` when no byte's node is known), which
//! gives the paper's green-to-blue encoding a fixed colour per bucket; the task's own label and
//! every number are in the slice's arguments. chrome://tracing
//! additionally gets a `cname`.
//!
//! Tracing costs nothing when off: the runtime holds an `Option<Arc<Tracer>>` and tests it once per
//! task. When on, each worker appends to its own buffer (an uncontended lock), so workers do not
//! share cache lines while recording. Every record stays in memory until the trace is written,
//! about 270 bytes a task (485,570 tasks of `examples/fib 25 1 spawn`: 129 MB of memory, a
//! 114 MB file): trace runs of a size to look at, not a service that runs for days.

use std::collections::{BTreeMap, HashMap};
use std::fmt;
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::Instant;

use crossbeam_utils::CachePadded;
use numatask_alloc::NodeBytes;

use crate::locality_policy::DealReason;

/// The environment variable naming the trace file.
pub const TRACE_ENV: &str = "NUMATASK_TRACE";

/// The trace files `NUMATASK_TRACE` gave runtimes of this process so far.
#[cfg(not(loom))]
static ENV_TRACE_PATHS: Mutex<Vec<PathBuf>> = Mutex::new(Vec::new());

/// The file a runtime traced by `NUMATASK_TRACE=path` writes: `path` for the first runtime
/// of the process, then `path` with `.2`, `.3`, ... before its extension (`t.json`,
/// `t.2.json`), so that a program that starts several runtimes keeps every trace. Paths are
/// compared as written.
#[cfg(not(loom))]
pub(crate) fn claim_env_trace_path(path: &Path) -> PathBuf {
    let mut claimed = ENV_TRACE_PATHS
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    let numbered = |n: usize| -> PathBuf {
        if n == 1 {
            return path.to_path_buf();
        }
        let stem = path.file_stem().unwrap_or_default().to_string_lossy();
        let name = match path.extension() {
            Some(ext) => format!("{stem}.{n}.{}", ext.to_string_lossy()),
            None => format!("{stem}.{n}"),
        };
        path.with_file_name(name)
    };
    let free = (1..)
        .map(numbered)
        .find(|p| !claimed.contains(p))
        .expect("an unbounded range has a free number");
    claimed.push(free.clone());
    free
}

/// Gives back a path [`claim_env_trace_path`] returned, for a runtime that did not start
/// (its trace file could not be created): the next runtime may use it.
#[cfg(not(loom))]
pub(crate) fn release_env_trace_path(path: &Path) {
    let mut claimed = ENV_TRACE_PATHS
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    claimed.retain(|p| p != path);
}

/// Where a task was queued when it was created.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum QueueChoice {
    /// The creating worker's own deque (work stealing, or a task with nothing to deal: no
    /// footprint, or one NUMA node).
    OwnDeque,
    /// The creating worker's own deque, where Algorithm 1 kept the task for the given reason
    /// (a small or an even footprint).
    Kept {
        /// Why.
        reason: DealReason,
    },
    /// A node's queue, chosen by Algorithm 1 for the given reason.
    Node {
        /// The node.
        node: usize,
        /// Why.
        reason: DealReason,
    },
    /// Run at once by its creator (a full deque, or an `if(false)` task).
    Inline,
    /// Queued from outside the pool (a scope body), or handed on by a waiting worker short of
    /// stack.
    Injected,
    /// The pool's list of tasks with a priority (`OMP_MAX_TASK_PRIORITY` > 0), which every
    /// worker looks at first.
    Priority {
        /// The priority it ran with.
        priority: u32,
    },
    /// The mailbox of the worker the task preferred
    /// ([`TaskBuilder::prefer_worker`](crate::TaskBuilder::prefer_worker)); a task another
    /// worker took while that one was busy is also counted as stolen (`stolen_distance`).
    Preferred {
        /// The worker it preferred.
        worker: usize,
    },
}

impl fmt::Display for QueueChoice {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            QueueChoice::OwnDeque => f.write_str("own deque"),
            QueueChoice::Kept { reason } => write!(f, "own deque ({reason:?})"),
            QueueChoice::Node { node, reason } => write!(f, "node {node} ({reason:?})"),
            QueueChoice::Inline => f.write_str("inline"),
            QueueChoice::Injected => f.write_str("injected"),
            QueueChoice::Priority { priority } => write!(f, "priority {priority}"),
            QueueChoice::Preferred { worker } => write!(f, "mailbox of worker {worker}"),
        }
    }
}

/// One executed task.
#[derive(Clone, Debug)]
pub struct TaskRecord {
    /// A label for the task (the benchmark's kernel name, or "task").
    pub label: &'static str,
    /// The worker that ran it.
    pub worker: usize,
    /// That worker's node.
    pub node: usize,
    /// Where it was queued.
    pub queue: QueueChoice,
    /// `None` when taken from the executing worker's own queue; otherwise the OS distance between
    /// the queue it was stolen from and the executing node (the local distance for a steal
    /// within the node).
    pub stolen_distance: Option<u32>,
    /// For a task with clauses (a label, dependences, a priority, ...): when it became ready
    /// to run (spawned with nothing to wait for, or released by the completion of what it
    /// depended on) and was offered to the scheduler, nanoseconds since the tracer was created
    /// (a task the scheduler had no room for, run at once, waited next to nothing); `None`
    /// for a task without clauses, or one never offered (an included task).
    pub ready_ns: Option<u64>,
    /// Start, nanoseconds since the tracer was created.
    pub start_ns: u64,
    /// End, nanoseconds since the tracer was created; `None` while the task runs.
    pub end_ns: Option<u64>,
    /// Bytes per node of the task's depend list, when it has one.
    pub footprint: Option<NodeBytes>,
}

impl TaskRecord {
    /// Fraction of the known footprint bytes on the executing worker's node, `None` without a
    /// footprint (or with no known byte).
    pub fn local_fraction(&self) -> Option<f64> {
        let f = self.footprint.as_ref()?;
        let known = f.known();
        (known > 0).then(|| f.on(self.node) as f64 / known as f64)
    }

    fn bucket(&self) -> (&'static str, &'static str) {
        match self.local_fraction().map(|l| 1.0 - l) {
            // Declared bytes whose node nobody knows: memory not from the allocator, or
            // first-touch memory on a synthetic topology, where no page is really placed.
            None if self.footprint.as_ref().is_some_and(|f| f.unknown() > 0) => {
                ("footprint unknown", "grey")
            }
            None => ("no footprint", "grey"),
            Some(r) if r <= 0.0 => ("local", "good"),
            Some(r) if r < 0.25 => ("remote <25%", "olive"),
            Some(r) if r < 0.5 => ("remote 25-50%", "yellow"),
            Some(r) if r < 0.9 => ("remote 50-90%", "bad"),
            Some(_) => ("remote >=90%", "terrible"),
        }
    }
}

/// Collects task records from every worker.
pub struct Tracer {
    epoch: Instant,
    path: Option<PathBuf>,
    node_of_worker: Vec<usize>,
    /// Number of NUMA nodes: the summary has a row for each, workers or not.
    num_nodes: usize,
    buffers: Vec<CachePadded<Mutex<Vec<TaskRecord>>>>,
    /// When each queued task became ready, by its frame's address, until it starts: in
    /// shards by address, as the worker that queues a task is often not the one that runs it.
    ready: Box<[ReadyShard]>,
}

/// Ready times of queued tasks, by frame address (a shard of [`Tracer`]'s table).
type ReadyShard = CachePadded<Mutex<HashMap<usize, u64>>>;

/// Shards of [`Tracer`]'s table of ready times.
const READY_SHARDS: usize = 64;

impl fmt::Debug for Tracer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Tracer")
            .field("path", &self.path)
            .field("workers", &self.buffers.len())
            .finish()
    }
}

impl Tracer {
    /// A tracer for workers whose nodes are `node_of_worker`, on a machine of `num_nodes`
    /// NUMA nodes (at least one more than the highest of those), writing to `path` on
    /// [`Tracer::finish`] (or nowhere: records can still be read with [`Tracer::records`]).
    pub fn new(node_of_worker: Vec<usize>, num_nodes: usize, path: Option<PathBuf>) -> Self {
        let buffers = node_of_worker
            .iter()
            .map(|_| CachePadded::new(Mutex::new(Vec::new())))
            .collect();
        let num_nodes = node_of_worker
            .iter()
            .map(|&n| n + 1)
            .fold(num_nodes, usize::max);
        Self {
            epoch: Instant::now(),
            path,
            node_of_worker,
            num_nodes,
            buffers,
            ready: (0..READY_SHARDS)
                .map(|_| CachePadded::new(Mutex::new(HashMap::new())))
                .collect(),
        }
    }

    fn ready_shard(&self, task: usize) -> &Mutex<HashMap<usize, u64>> {
        // Frames are 64-byte aligned: the bits above those pick the shard.
        &self.ready[(task >> 6) % READY_SHARDS]
    }

    /// Notes that the task whose frame is at `task` is ready to run now (queued).
    pub(crate) fn note_ready(&self, task: usize) {
        let now = self.now_ns();
        self.ready_shard(task)
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(task, now);
    }

    /// When the task whose frame is at `task` became ready, forgetting it (it starts).
    pub(crate) fn take_ready(&self, task: usize) -> Option<u64> {
        self.ready_shard(task)
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(&task)
    }

    /// The trace file named by `NUMATASK_TRACE`, if the variable is set and not blank (empty
    /// or only white space counts as unset, as for every other variable).
    pub fn path_from_env() -> Option<PathBuf> {
        let value = std::env::var_os(TRACE_ENV)?;
        // Blanks around the name are dropped, as around every variable's value (a name
        // that is not UTF-8 is taken as it is).
        match value.to_str() {
            Some(text) => {
                let name = numatask_alloc::sched_support::trim_blanks(text);
                (!name.is_empty()).then(|| PathBuf::from(name))
            }
            None => Some(PathBuf::from(value)),
        }
    }

    /// The file the trace is written to.
    pub fn path(&self) -> Option<&Path> {
        self.path.as_deref()
    }

    /// Nanoseconds since the tracer was created.
    pub fn now_ns(&self) -> u64 {
        self.epoch.elapsed().as_nanos() as u64
    }

    /// Appends a record to `record.worker`'s buffer.
    pub fn record(&self, record: TaskRecord) {
        if let Some(buffer) = self.buffers.get(record.worker) {
            buffer
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .push(record);
        }
    }

    /// Appends the record of a task that starts now on `record.worker` (its `end_ns` is
    /// `None` until [`end`](Self::end)) and returns its position for `end`. Recording at
    /// the start means a task is in the trace before anyone can see it finished: a trace
    /// written right after a scope returns holds all of its tasks.
    pub fn start(&self, record: TaskRecord) -> usize {
        match self.buffers.get(record.worker) {
            Some(buffer) => {
                let mut buffer = buffer.lock().unwrap_or_else(|p| p.into_inner());
                buffer.push(record);
                buffer.len() - 1
            }
            None => usize::MAX,
        }
    }

    /// Sets the end of the record that [`start`](Self::start) returned `at` for on `worker`.
    pub fn end(&self, worker: usize, at: usize, end_ns: u64) {
        if let Some(buffer) = self.buffers.get(worker)
            && let Some(r) = buffer.lock().unwrap_or_else(|p| p.into_inner()).get_mut(at)
        {
            r.end_ns = Some(end_ns);
        }
    }

    /// Records appended, and of them those whose end is set (the rest are tasks still
    /// running, or recorded without an end): what a trace written now would miss, if these
    /// change later.
    pub fn progress(&self) -> (u64, u64) {
        self.buffers.iter().fold((0, 0), |(records, ended), b| {
            let buffer = b.lock().unwrap_or_else(|p| p.into_inner());
            let done = buffer.iter().filter(|r| r.end_ns.is_some()).count();
            (records + buffer.len() as u64, ended + done as u64)
        })
    }

    /// Waits until every record started before the call has its end: the tasks running then
    /// have returned. A worker sets a task's end after the task signalled its completion, so
    /// a scope can return before the ends of its last tasks are recorded; a trace written
    /// after this holds them. Called from outside the pool only: a task waiting for the
    /// tasks running beside it could wait for one that waits for it.
    pub fn wait_for_running(&self) {
        let running: Vec<(usize, usize)> = self
            .buffers
            .iter()
            .enumerate()
            .flat_map(|(worker, b)| {
                let buffer = b.lock().unwrap_or_else(|p| p.into_inner());
                buffer
                    .iter()
                    .enumerate()
                    .filter(|(_, r)| r.end_ns.is_none())
                    .map(|(at, _)| (worker, at))
                    .collect::<Vec<_>>()
            })
            .collect();
        for (worker, at) in running {
            while self.buffers[worker]
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .get(at)
                .is_some_and(|r| r.end_ns.is_none())
            {
                std::thread::yield_now();
            }
        }
    }

    /// Every record so far, worker by worker.
    pub fn records(&self) -> Vec<TaskRecord> {
        self.buffers
            .iter()
            .flat_map(|b| b.lock().unwrap_or_else(|p| p.into_inner()).clone())
            .collect()
    }

    /// Tasks and bytes local/remote per node (every node, those without workers too), steals
    /// by distance.
    pub fn summary(&self) -> TraceSummary {
        self.summary_of(&self.records())
    }

    fn summary_of(&self, records: &[TaskRecord]) -> TraceSummary {
        let mut s = TraceSummary {
            per_node: vec![NodeSummary::default(); self.num_nodes],
            ..TraceSummary::default()
        };
        for r in records {
            s.tasks += 1;
            if let Some(d) = r.stolen_distance {
                *s.steals_by_distance.entry(d).or_default() += 1;
            }
            let Some(node) = s.per_node.get_mut(r.node) else {
                continue;
            };
            node.tasks += 1;
            if let Some(f) = &r.footprint {
                let (local, known) = (f.on(r.node), f.known());
                node.local_bytes = node.local_bytes.saturating_add(local);
                node.remote_bytes = node.remote_bytes.saturating_add(known - local);
                if known > 0 {
                    // `local > known - local`: most bytes local, without overflowing.
                    if local > known - local {
                        node.local_tasks += 1;
                    } else {
                        node.remote_tasks += 1;
                    }
                }
            }
        }
        s
    }

    /// Writes the Chrome trace-event JSON.
    pub fn write_chrome_json(&self, out: &mut impl Write) -> io::Result<()> {
        self.write_chrome_json_of(&self.records(), out)
    }

    fn write_chrome_json_of(&self, records: &[TaskRecord], out: &mut impl Write) -> io::Result<()> {
        let now = self.now_ns();
        writeln!(out, "{{\"displayTimeUnit\":\"ns\",\"traceEvents\":[")?;
        let mut first = true;
        let mut sep = |out: &mut dyn Write| -> io::Result<()> {
            if !std::mem::take(&mut first) {
                out.write_all(b",\n")?;
            }
            Ok(())
        };
        for (w, node) in self.node_of_worker.iter().enumerate() {
            sep(out)?;
            write!(
                out,
                "{{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":1,\"tid\":{w},\"args\":{{\"name\":\"worker {w} (node {node})\"}}}}"
            )?;
            sep(out)?;
            write!(
                out,
                "{{\"ph\":\"M\",\"name\":\"thread_sort_index\",\"pid\":1,\"tid\":{w},\"args\":{{\"sort_index\":{w}}}}}"
            )?;
        }
        for r in records {
            sep(out)?;
            let (name, cname) = r.bucket();
            let footprint = r.footprint.as_ref().map_or_else(
                || "null".to_owned(),
                |f| {
                    format!(
                        "[{}]",
                        f.per_node()
                            .iter()
                            .map(u64::to_string)
                            .collect::<Vec<_>>()
                            .join(",")
                    )
                },
            );
            // A task still running is drawn up to now, and marked.
            let (end_ns, unfinished) = match r.end_ns {
                Some(end) => (end, ""),
                None => (now.max(r.start_ns), ",\"unfinished\":true"),
            };
            write!(
                out,
                "{{\"ph\":\"X\",\"pid\":1,\"tid\":{},\"ts\":{:.3},\"dur\":{:.3},\"name\":\"{}\",\"cname\":\"{}\",\"cat\":\"task\",\"args\":{{\"task\":\"{}\",\"node\":{},\"queue\":\"{}\",\"stolen_distance\":{},\"footprint_bytes_per_node\":{},\"local_fraction\":{},\"wait_us\":{}{}}}}}",
                r.worker,
                r.start_ns as f64 / 1000.0,
                end_ns.saturating_sub(r.start_ns) as f64 / 1000.0,
                name,
                cname,
                escape(r.label),
                r.node,
                escape(&r.queue.to_string()),
                r.stolen_distance
                    .map_or_else(|| "null".to_owned(), |d| d.to_string()),
                footprint,
                r.local_fraction()
                    .map_or_else(|| "null".to_owned(), |l| format!("{l:.4}")),
                r.ready_ns.map_or_else(
                    || "null".to_owned(),
                    |ready| format!("{:.3}", r.start_ns.saturating_sub(ready) as f64 / 1000.0)
                ),
                unfinished,
            )?;
        }
        writeln!(out, "\n]}}")
    }

    /// Writes the trace file (if a path was given) and returns the summary, both of the same
    /// tasks (those recorded when it is called).
    pub fn finish(&self) -> io::Result<TraceSummary> {
        let records = self.records();
        if let Some(path) = &self.path {
            let mut file = io::BufWriter::new(std::fs::File::create(path)?);
            self.write_chrome_json_of(&records, &mut file)?;
            file.flush()?;
        }
        Ok(self.summary_of(&records))
    }
}

fn escape(s: &str) -> String {
    s.chars()
        .flat_map(|c| match c {
            '"' => vec!['\\', '"'],
            '\\' => vec!['\\', '\\'],
            c if (c as u32) < 0x20 => format!("\\u{:04x}", c as u32).chars().collect(),
            c => vec![c],
        })
        .collect()
}

/// Per-node totals of a trace.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct NodeSummary {
    /// Tasks executed on the node.
    pub tasks: u64,
    /// Of them, tasks with most of their footprint bytes on the node (local tasks).
    pub local_tasks: u64,
    /// Of them, tasks with most of their footprint bytes on other nodes, half or more
    /// (remote tasks). Tasks without known footprint bytes are neither.
    pub remote_tasks: u64,
    /// Footprint bytes on the executing node.
    pub local_bytes: u64,
    /// Footprint bytes on other nodes.
    pub remote_bytes: u64,
}

/// What a trace adds up to.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TraceSummary {
    /// Tasks recorded.
    pub tasks: u64,
    /// Totals per executing node.
    pub per_node: Vec<NodeSummary>,
    /// Steals by the distance they crossed.
    pub steals_by_distance: BTreeMap<u32, u64>,
}

impl TraceSummary {
    /// Fraction of all known footprint bytes that were local to the executing node.
    pub fn local_fraction(&self) -> Option<f64> {
        // In f64: byte totals near u64::MAX must not overflow a sum.
        let local: f64 = self.per_node.iter().map(|n| n.local_bytes as f64).sum();
        let remote: f64 = self.per_node.iter().map(|n| n.remote_bytes as f64).sum();
        (local + remote > 0.0).then(|| local / (local + remote))
    }
}

impl fmt::Display for TraceSummary {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "locality summary: {} tasks", self.tasks)?;
        writeln!(
            f,
            "  node    tasks    local   remote     local MiB    remote MiB   local"
        )?;
        for (i, n) in self.per_node.iter().enumerate() {
            let total = n.local_bytes as f64 + n.remote_bytes as f64;
            let pct = if total > 0.0 {
                format!("{:.1}%", 100.0 * n.local_bytes as f64 / total)
            } else {
                "-".into()
            };
            writeln!(
                f,
                "  {i:>4} {:>8} {:>8} {:>8} {:>13.2} {:>13.2} {pct:>7}",
                n.tasks,
                n.local_tasks,
                n.remote_tasks,
                n.local_bytes as f64 / (1 << 20) as f64,
                n.remote_bytes as f64 / (1 << 20) as f64
            )?;
        }
        writeln!(
            f,
            "  (local / remote: tasks with most of their known footprint bytes on / off the node \
             that ran them; tasks with no known byte, such as scope bodies, are in neither)"
        )?;
        if let Some(l) = self.local_fraction() {
            writeln!(f, "  all: {:.1}% of footprint bytes local", 100.0 * l)?;
        }
        let steals: Vec<String> = self
            .steals_by_distance
            .iter()
            .map(|(d, n)| format!("{n} at distance {d}"))
            .collect();
        write!(
            f,
            "  steals: {}",
            if steals.is_empty() {
                "none".into()
            } else {
                steals.join(", ")
            }
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(
        worker: usize,
        node: usize,
        footprint: Option<Vec<u64>>,
        stolen: Option<u32>,
    ) -> TaskRecord {
        TaskRecord {
            label: "map \"chunk\"",
            worker,
            node,
            queue: QueueChoice::Node {
                node,
                reason: DealReason::LeastCost,
            },
            stolen_distance: stolen,
            ready_ns: Some(400),
            start_ns: 1_000,
            end_ns: Some(3_500),
            footprint: footprint.map(NodeBytes::from_bytes),
        }
    }

    #[test]
    fn summary_byte_totals_saturate_rather_than_overflow() {
        let t = Tracer::new(vec![0], 1, None);
        // More than half of u64 local: a local task, which `2 * local` would miscount.
        t.record(record(0, 0, Some(vec![u64::MAX / 2 + 1]), None));
        let s = t.summary();
        assert_eq!(s.per_node[0].local_tasks, 1);
        for _ in 0..3 {
            t.record(record(0, 0, Some(vec![u64::MAX / 3 + 1]), None));
        }
        let s = t.summary();
        assert_eq!(s.per_node[0].local_bytes, u64::MAX);
        assert_eq!(s.per_node[0].local_tasks, 4);
        assert_eq!(s.local_fraction(), Some(1.0));
        assert!(s.to_string().contains("100.0%"), "{s}");
    }

    #[test]
    fn summary_adds_local_and_remote_bytes_per_executing_node_and_steals_by_distance() {
        let t = Tracer::new(vec![0, 0, 1, 1], 2, None);
        t.record(record(0, 0, Some(vec![300, 100]), None));
        t.record(record(2, 1, Some(vec![50, 150]), Some(16)));
        t.record(record(3, 1, None, Some(16)));
        t.record(record(1, 0, Some(vec![0, 0]), Some(10)));
        t.record(record(1, 0, Some(vec![20, 20]), None));
        let s = t.summary();
        assert_eq!(s.tasks, 5);
        assert_eq!(
            s.per_node[0],
            NodeSummary {
                tasks: 3,
                local_tasks: 1,
                remote_tasks: 1,
                local_bytes: 320,
                remote_bytes: 120
            }
        );
        assert_eq!(
            s.per_node[1],
            NodeSummary {
                tasks: 2,
                local_tasks: 1,
                remote_tasks: 0,
                local_bytes: 150,
                remote_bytes: 50
            }
        );
        assert_eq!(s.steals_by_distance, BTreeMap::from([(10, 1), (16, 2)]));
        assert_eq!(s.local_fraction(), Some(470.0 / 640.0));
        let text = s.to_string();
        assert!(
            text.contains("2 at distance 16") && text.contains("73.4% of footprint bytes local"),
            "{text}"
        );
    }

    #[test]
    fn summary_counts_a_task_run_away_from_its_bytes_as_remote() {
        // Run on node 0, nine tenths of its bytes on node 1: local and remote are measured
        // against the node that ran it, not the node holding most of its bytes.
        let t = Tracer::new(vec![0, 1], 2, None);
        t.record(record(0, 0, Some(vec![10, 90]), None));
        let s = t.summary();
        assert_eq!(
            s.per_node[0],
            NodeSummary {
                tasks: 1,
                local_tasks: 0,
                remote_tasks: 1,
                local_bytes: 10,
                remote_bytes: 90
            }
        );
        assert_eq!(s.per_node[1], NodeSummary::default());
        assert_eq!(s.local_fraction(), Some(0.1));
    }

    #[test]
    fn the_summary_has_a_row_for_every_node_those_without_workers_too() {
        // Workers on nodes 0 and 2 of 4 (OMP_PROC_BIND=spread with 2 workers).
        let t = Tracer::new(vec![0, 2], 4, None);
        t.record(record(1, 2, Some(vec![0, 0, 100, 0]), None));
        let s = t.summary();
        assert_eq!(s.per_node.len(), 4);
        assert_eq!(s.per_node[2].local_bytes, 100);
        assert_eq!(s.per_node[3], NodeSummary::default());
    }

    #[test]
    fn chrome_json_has_thread_names_and_one_slice_per_task_named_by_remote_fraction() {
        let t = Tracer::new(vec![0, 1], 2, None);
        t.record(record(0, 0, Some(vec![100, 0]), None));
        t.record(record(1, 1, Some(vec![100, 0]), Some(20)));
        t.record(record(1, 1, None, None));
        // Declared, but of zero bytes: no footprint either.
        t.record(record(1, 1, Some(vec![0, 0]), None));
        // Bytes not from the allocator: their node is unknown.
        let elsewhere = [0u8; 64];
        let mut unplaced = record(1, 1, None, None);
        unplaced.footprint = Some(numatask_alloc::node_bytes(elsewhere.as_ptr(), 64));
        assert_eq!(
            unplaced.footprint.as_ref().map(NodeBytes::unknown),
            Some(64)
        );
        t.record(unplaced);
        let mut out = Vec::new();
        t.write_chrome_json(&mut out).unwrap();
        let json = String::from_utf8(out).unwrap();
        assert!(json.contains("\"name\":\"worker 1 (node 1)\""));
        assert_eq!(json.matches("\"ph\":\"X\"").count(), 5);
        assert!(json.contains("\"name\":\"local\",\"cname\":\"good\""));
        assert!(json.contains("\"name\":\"remote >=90%\",\"cname\":\"terrible\""));
        assert_eq!(json.matches("\"name\":\"no footprint\"").count(), 2);
        assert_eq!(json.matches("\"name\":\"footprint unknown\"").count(), 1);
        assert!(
            json.contains("\"task\":\"map \\\"chunk\\\"\""),
            "labels are escaped"
        );
        assert!(json.contains("\"ts\":1.000,\"dur\":2.500"));
        // What Perfetto reads: valid JSON, and each slice's arguments.
        let parsed: serde_json::Value = serde_json::from_str(&json).expect("valid JSON");
        let slices: Vec<&serde_json::Value> = parsed["traceEvents"]
            .as_array()
            .expect("traceEvents")
            .iter()
            .filter(|e| e["ph"] == "X")
            .collect();
        assert_eq!(slices.len(), 5);
        let args: Vec<&serde_json::Value> = slices.iter().map(|e| &e["args"]).collect();
        assert_eq!(args[0]["task"], "map \"chunk\"");
        assert_eq!(args[0]["node"], 0);
        assert_eq!(
            args[0]["footprint_bytes_per_node"],
            serde_json::json!([100, 0])
        );
        assert_eq!(args[0]["local_fraction"], 1.0);
        assert_eq!(args[0]["stolen_distance"], serde_json::Value::Null);
        assert_eq!(args[1]["stolen_distance"], 20);
        assert_eq!(args[1]["local_fraction"], 0.0);
        assert_eq!(args[2]["footprint_bytes_per_node"], serde_json::Value::Null);
        for a in &args {
            assert!(a["queue"].as_str().is_some_and(|q| !q.is_empty()), "{a}");
        }
        assert_eq!(slices[1]["tid"], 1);
        assert_eq!(slices[0]["dur"], 2.5);
    }

    #[test]
    fn a_started_task_is_recorded_at_once_and_its_end_set_later() {
        let t = Tracer::new(vec![0, 1], 2, None);
        let mut r = record(1, 1, None, None);
        r.end_ns = None;
        let at = t.start(r);
        assert_eq!(t.summary().tasks, 1, "in the trace while it runs");
        assert_eq!(t.progress(), (1, 0));
        let mut json = Vec::new();
        t.write_chrome_json(&mut json).unwrap();
        let json: serde_json::Value = serde_json::from_slice(&json).unwrap();
        let slice = &json["traceEvents"].as_array().unwrap()[4];
        assert_eq!(slice["args"]["unfinished"], true, "{slice}");
        assert!(slice["dur"].as_f64().unwrap() >= 0.0, "{slice}");
        assert_eq!(t.records()[0].end_ns, None);
        t.end(1, at, 9_000);
        assert_eq!(t.records()[0].end_ns, Some(9_000));
        assert_eq!(t.progress(), (1, 1));
    }

    #[test]
    fn labels_with_backslashes_and_control_characters_stay_valid_json() {
        let t = Tracer::new(vec![0], 1, None);
        let label = "dir\\file\n\tcol\u{1}\"q\"";
        let mut r = record(0, 0, None, None);
        r.label = label;
        t.record(r);
        let mut out = Vec::new();
        t.write_chrome_json(&mut out).unwrap();
        let json: serde_json::Value =
            serde_json::from_slice(&out).expect("escaped labels keep the trace valid JSON");
        let slice = &json["traceEvents"].as_array().unwrap()[2];
        assert_eq!(
            slice["args"]["task"], label,
            "the label round-trips exactly"
        );
    }

    /// Removes the file at its path when dropped, the test passed or not.
    struct RemovedOnDrop(std::path::PathBuf);

    impl Drop for RemovedOnDrop {
        fn drop(&mut self) {
            let _ = std::fs::remove_file(&self.0);
        }
    }

    #[test]
    fn finish_writes_the_file() {
        let path = RemovedOnDrop(
            std::env::temp_dir().join(format!("numatask-trace-{}.json", std::process::id())),
        );
        let t = Tracer::new(vec![0], 1, Some(path.0.clone()));
        t.record(record(0, 0, Some(vec![1]), None));
        let s = t.finish().unwrap();
        assert_eq!(s.tasks, 1);
        let text = std::fs::read_to_string(&path.0).unwrap();
        assert!(text.starts_with("{\"displayTimeUnit\""));
    }
}
