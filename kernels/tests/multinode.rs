//! Kernel launches on a real multi-node kernel. These tests need several NUMA nodes, so they
//! are `#[ignore]`d on the (one-node) host and run inside QEMU guests by
//! `scripts/numa-vm-test.sh`, which passes `--ignored` and sets `NUMATASK_VM_NODES` (one CPU
//! per node there). Run with `--ignored` elsewhere, they skip with a line saying so on a
//! machine of one node, and run on a real multi-node machine.
//!
//! A `coarse` allocation lies wholly on one node (the next one of a round robin), so the data
//! of a kernel spread over the nodes is one coarse buffer per node, and the kernel is launched
//! once over each. Locality is measured from the OS kernel: for every work-group, where
//! `move_pages` says the pages of its part of the buffer are, against the node of the (pinned)
//! worker that ran it; not from the placement registry the scheduler itself decides by.

use std::io::Write as _;
use std::ops::Range;
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};

use numatask_alloc::{
    Distribution, Pinning, Topology, node_bytes, page_size, reset_coarse_counter, resident_nodes,
};
use numatask_kernels::{Buffer, Context, Kernel, Mode, NdRange, Param};
use numatask_sched::__internals::LocalityModel;
use numatask_sched::{Runtime, SchedulerKind};

/// Work-items per work-group (the context's default maximum): 16 KiB of `u32`.
const GROUP_ITEMS: usize = 4096;

/// The least bytes of one task's part of a buffer, when the footprint threshold is smaller:
/// enough pages that a page or two placed elsewhere would show.
const MIN_TASK_BYTES: usize = 1 << 20;

/// No work-group has run into this slot of the record.
const NOT_RUN: u32 = u32::MAX;

/// Prints a line to the guest's console even though libtest captures the output of passing
/// tests (it captures `print!`, not writes to the stream): the harness echoes these lines.
fn report(line: &str) {
    let _ = writeln!(std::io::stderr().lock(), "NUMATASK-VM-REPORT {line}");
}

/// The machine's topology when it has several NUMA nodes; `None`, after a line saying why, on
/// a machine of one node (or a synthetic topology, whose pages the kernel does not place)
/// outside the guests. Inside them (`NUMATASK_VM_NODES` set) the topology must be real and
/// have the configured node count.
fn multinode_topology() -> Option<Arc<Topology>> {
    let topo = Topology::current().expect("the machine's topology");
    match std::env::var("NUMATASK_VM_NODES") {
        Ok(raw) => {
            let n: usize = raw
                .parse()
                .unwrap_or_else(|e| panic!("NUMATASK_VM_NODES={raw:?} is not a number: {e}"));
            assert!(!topo.is_synthetic(), "the guest's topology is the kernel's");
            assert_eq!(topo.num_nodes(), n, "the guest's NUMA nodes");
            Some(topo)
        }
        Err(_) if topo.num_nodes() < 2 || topo.is_synthetic() => {
            let _ = writeln!(
                std::io::stderr().lock(),
                "skipped: this machine has {} real NUMA node(s); scripts/numa-vm-test.sh runs \
                 this test in 4- and 8-node guests",
                if topo.is_synthetic() {
                    0
                } else {
                    topo.num_nodes()
                }
            );
            None
        }
        Err(_) => Some(topo),
    }
}

/// The shape of the launches, from the locality-aware scheduler's thresholds on `topo`.
#[derive(Clone, Copy, Debug)]
struct Shape {
    /// Elements of each buffer (one buffer per node).
    len: usize,
    /// Tasks each launch is divided into.
    tasks: usize,
    /// Bytes of one task's part of its buffer: its footprint.
    task_bytes: usize,
    /// Algorithm 1's footprint threshold (`LLC / C`).
    threshold: u64,
    /// The most tasks a node's queue may hold with no other node allowed to steal from it
    /// (Algorithm 2's least threshold).
    steal_floor: usize,
}

impl Shape {
    fn of(topo: &Topology) -> Shape {
        let model = LocalityModel::new(topo, None);
        let threshold = model.footprint_threshold();
        let steal_floor = (0..topo.num_nodes())
            .flat_map(|thief| model.steal_order(thief).iter().map(|c| c.threshold))
            .min()
            .unwrap_or(usize::MAX);
        // At least two tasks per launch: a launch of one task runs on the worker that starts
        // the launch (nothing is dealt). More, up to the steal floor, where that allows (at
        // most 4: each task holds more than the threshold).
        let tasks = steal_floor.clamp(2, 4);
        // Each task's footprint just above the threshold, so that each is dealt, in whole
        // work-groups.
        let group_bytes = GROUP_ITEMS * size_of::<u32>();
        let task_bytes = (usize::try_from(threshold).expect("a threshold that fits memory") + 1)
            .max(MIN_TASK_BYTES)
            .next_multiple_of(group_bytes);
        Shape {
            len: tasks * task_bytes / size_of::<u32>(),
            tasks,
            task_bytes,
            threshold,
            steal_floor,
        }
    }

    fn groups(&self) -> usize {
        self.len / GROUP_ITEMS
    }

    fn buffer_bytes(&self) -> usize {
        self.len * size_of::<u32>()
    }
}

/// What the launches of one run measured.
struct Run {
    /// For each launch in turn, each buffer and each of its groups: the topology index of
    /// the node whose worker ran it.
    ran_on: Vec<Vec<Vec<usize>>>,
    /// Group bytes on the node that ran the group, by the OS kernel's page locations, over
    /// every launch.
    local_bytes: u64,
    /// All group bytes over every launch.
    total_bytes: u64,
    /// Groups run per node, over every launch.
    groups_per_node: Vec<usize>,
    /// The node holding each buffer (topology index).
    buffer_nodes: Vec<usize>,
}

impl Run {
    fn fraction(&self) -> f64 {
        self.local_bytes as f64 / self.total_bytes as f64
    }
}

/// Bytes of `range` (offsets into a buffer starting on a page boundary) that lie on OS node
/// `node`, by the buffer's page locations `pages`.
fn bytes_on(pages: &[Option<usize>], range: Range<usize>, node: usize) -> u64 {
    let ps = page_size();
    let mut bytes = 0;
    let mut at = range.start;
    while at < range.end {
        let page = at / ps;
        let end = ((page + 1) * ps).min(range.end);
        if pages[page] == Some(node) {
            bytes += (end - at) as u64;
        }
        at = end;
    }
    bytes
}

/// One coarse buffer per node of `shape.len` integers on a fresh runtime of one pinned worker
/// per core under `kind` (stealing no farther than `vicinity`), and `launches` consecutive
/// rounds of launches over them: in each round, one launch per buffer, all at once on an
/// out-of-order queue, each work-group adding 1 to its elements and recording the node of
/// the worker running it.
fn run(
    topo: &Topology,
    shape: Shape,
    kind: SchedulerKind,
    vicinity: Option<u32>,
    launches: usize,
) -> Run {
    let n = topo.num_nodes();
    let rt = Runtime::builder()
        .scheduler(kind)
        .vicinity(vicinity)
        .num_threads(topo.num_cores())
        .build()
        .expect("runtime starts");
    for (place, pinning) in rt.workers().iter().zip(rt.pinning()) {
        assert!(
            matches!(pinning, Some(Ok(Pinning::Exact { .. }))),
            "worker {} not pinned to its core: {pinning:?}",
            place.index
        );
    }
    let context = Context::new(Arc::new(rt)).expect("context");
    // Coarse buffers take the nodes in turn: buffer k on node k.
    reset_coarse_counter();
    let buffers: Vec<Buffer<u32>> = (0..n)
        .map(|_| {
            context
                .buffer_on::<u32>(shape.len, Distribution::Coarse)
                .expect("a coarse buffer")
        })
        .collect();

    let groups = shape.groups();
    // Slot `(launch * n + buffer) * groups + group`: the node that ran the group.
    let record: Arc<Vec<AtomicU32>> = Arc::new(
        (0..launches * n * groups)
            .map(|_| AtomicU32::new(NOT_RUN))
            .collect(),
    );
    let slots = Arc::clone(&record);
    let add_one = Kernel::groups(
        "add_one_and_record_node",
        vec![
            Param::buffer::<u32>(Mode::ReadWrite),
            Param::scalar::<usize>(),
        ],
        move |group, args| {
            let node = numatask_sched::current_worker()
                .expect("work-groups run on workers")
                .node;
            let slot = args.scalar::<usize>(1) + group.group_linear_id();
            // Relaxed: the host reads the record after `finish`, which the launch's end
            // happens before.
            let before = slots[slot].swap(node as u32, Ordering::Relaxed);
            assert_eq!(before, NOT_RUN, "group slot {slot} ran twice");
            for v in args.items_mut::<u32>(0).row_mut(0, 0) {
                *v += 1;
            }
        },
    );
    let queue = context.out_of_order_queue();
    // First touched by writes. The kernel reads each element before writing it: a first read
    // of an untouched page maps the shared zero page, and the write then faults again, base
    // page by base page, where a first write places a whole huge page at once (30 s against
    // half a second for these buffers in the emulated 4-node guest). The binding decides the
    // node either way.
    for buffer in &buffers {
        queue.fill(buffer, 0, 0..shape.len).expect("a valid fill");
    }
    queue.finish().expect("the buffers are filled");
    for launch in 0..launches {
        for (k, buffer) in buffers.iter().enumerate() {
            queue
                .launch(&add_one, NdRange::new([shape.len]).local([GROUP_ITEMS]))
                .arg(buffer)
                .arg((launch * n + k) * groups)
                .tasks(shape.tasks)
                .enqueue()
                .expect("the launch is valid");
        }
        // The next round starts after this one ended: consecutive launches over the same
        // buffers.
        queue.finish().expect("every launch ran");
    }

    let ps = page_size();
    let mut measured = Run {
        ran_on: Vec::new(),
        local_bytes: 0,
        total_bytes: 0,
        groups_per_node: vec![0; n],
        buffer_nodes: Vec::new(),
    };
    let mut pages_of = Vec::new();
    for (k, buffer) in buffers.iter().enumerate() {
        let ptr = buffer.as_ptr().cast::<u8>();
        assert_eq!(ptr as usize % ps, 0, "a buffer starts on a page boundary");
        let pages = resident_nodes(ptr, shape.buffer_bytes()).expect("move_pages answers");
        let node = pages[0].expect("the launches touched every page");
        assert!(
            pages.iter().all(|&p| p == Some(node)),
            "coarse buffer {k} lies wholly on one node, by the kernel: {pages:?}"
        );
        let node = topo
            .nodes()
            .iter()
            .position(|t| t.os_index == node)
            .expect("a node of the topology");
        assert_eq!(
            node_bytes(ptr, shape.buffer_bytes()).on(node),
            shape.buffer_bytes() as u64,
            "the registry agrees with the kernel on buffer {k}"
        );
        measured.buffer_nodes.push(node);
        pages_of.push(pages);
    }
    let mut covered = measured.buffer_nodes.clone();
    covered.sort_unstable();
    assert_eq!(
        covered,
        (0..n).collect::<Vec<_>>(),
        "one buffer on every node"
    );

    let group_bytes = GROUP_ITEMS * size_of::<u32>();
    for launch in 0..launches {
        let mut per_buffer = Vec::new();
        for (k, pages) in pages_of.iter().enumerate() {
            let mut nodes = Vec::new();
            for g in 0..groups {
                let slot = (launch * n + k) * groups + g;
                let node = record[slot].load(Ordering::Relaxed);
                assert_ne!(node, NOT_RUN, "launch {launch}, buffer {k}: group {g} ran");
                let node = node as usize;
                measured.groups_per_node[node] += 1;
                measured.local_bytes += bytes_on(
                    pages,
                    g * group_bytes..(g + 1) * group_bytes,
                    topo.nodes()[node].os_index,
                );
                measured.total_bytes += group_bytes as u64;
                nodes.push(node);
            }
            per_buffer.push(nodes);
        }
        measured.ran_on.push(per_buffer);
    }

    // Every work-item ran once per launch.
    for (k, buffer) in buffers.iter().enumerate() {
        let data = queue.map(buffer).expect("the buffer maps");
        assert!(
            data.iter().all(|&v| v as usize == launches),
            "buffer {k}: every element went through {launches} launches"
        );
    }
    measured
}

/// The report line of a run.
fn report_run(topo: &Topology, shape: &Shape, scheduler: &str, launches: usize, m: &Run) {
    report(&format!(
        "kernel nodes={} scheduler={scheduler} rounds={launches} of {} launches, each of {} \
         tasks of {} KiB (footprint threshold {} KiB, steal floor {}) local_fraction={:.4} \
         ({} of {} MiB local by the kernel's page locations), groups per node {:?}",
        topo.num_nodes(),
        topo.num_nodes(),
        shape.tasks,
        shape.task_bytes >> 10,
        shape.threshold >> 10,
        shape.steal_floor,
        m.fraction(),
        m.local_bytes >> 20,
        m.total_bytes >> 20,
        m.groups_per_node
    ));
}

#[test]
#[ignore = "needs several NUMA nodes: run by scripts/numa-vm-test.sh"]
fn kernel_over_coarse_buffers_under_locality_runs_95_percent_of_group_bytes_on_their_node() {
    let Some(topo) = multinode_topology() else {
        return;
    };
    let shape = Shape::of(&topo);
    let local_distance = topo.distance_matrix()[0];
    // Within the vicinity of one node no worker takes a task dealt to another node, so where
    // each group runs is the executor's dealing alone. Without it Algorithm 2 lets other
    // nodes steal from a queue holding more than the steal floor; when a launch's tasks do
    // not exceed it (4-node guest: 2 tasks, floor 2), no task can be stolen either.
    let bounded = run(
        &topo,
        shape,
        SchedulerKind::Locality,
        Some(local_distance),
        1,
    );
    let unbounded = run(&topo, shape, SchedulerKind::Locality, None, 1);
    let stealing = run(&topo, shape, SchedulerKind::WorkStealing, None, 1);
    for (name, m) in [
        ("locality vicinity=local", &bounded),
        ("locality", &unbounded),
        ("ws", &stealing),
    ] {
        report_run(&topo, &shape, name, 1, m);
    }
    let required = 0.95;
    assert!(
        bounded.fraction() >= required,
        "locality-aware within the vicinity of one node: only {:.1}% of group bytes ran on \
         their node (required {:.0}%)",
        100.0 * bounded.fraction(),
        100.0 * required
    );
    if shape.tasks <= shape.steal_floor {
        assert!(
            unbounded.fraction() >= required,
            "locality-aware, no task stealable: only {:.1}% of group bytes ran on their node \
             (required {:.0}%)",
            100.0 * unbounded.fraction(),
            100.0 * required
        );
    }
}

#[test]
#[ignore = "needs several NUMA nodes: run by scripts/numa-vm-test.sh"]
fn consecutive_launches_under_locality_run_each_group_on_the_node_of_its_bytes() {
    let Some(topo) = multinode_topology() else {
        return;
    };
    let shape = Shape::of(&topo);
    let launches = 4;
    let local_distance = topo.distance_matrix()[0];
    let m = run(
        &topo,
        shape,
        SchedulerKind::Locality,
        Some(local_distance),
        launches,
    );
    report_run(&topo, &shape, "locality vicinity=local", launches, &m);
    let first = &m.ran_on[0];
    for (launch, ran_on) in m.ran_on.iter().enumerate().skip(1) {
        for (k, nodes) in ran_on.iter().enumerate() {
            for (g, &node) in nodes.iter().enumerate() {
                assert_eq!(
                    node, first[k][g],
                    "buffer {k}, group {g}: launch {launch} ran it on node {node}, launch 0 \
                     on node {}",
                    first[k][g]
                );
            }
        }
    }
    for (k, nodes) in first.iter().enumerate() {
        assert!(
            nodes.iter().all(|&node| node == m.buffer_nodes[k]),
            "buffer {k} lies on node {}; its groups ran on {nodes:?}",
            m.buffer_nodes[k]
        );
    }
}
