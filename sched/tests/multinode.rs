//! Scheduling on a real multi-node kernel. These tests need several NUMA nodes, so they are
//! `#[ignore]`d on the (one-node) host and run inside QEMU guests by `scripts/numa-vm-test.sh`,
//! which passes `--ignored` and sets `NUMATASK_VM_NODES` (one CPU per node there).
//!
//! Locality is measured from the kernel: for every task, where `move_pages` says the pages of
//! its footprint are, against the node of the (pinned) worker that ran it; not from the
//! placement registry the scheduler itself decides by.

mod common;

use std::collections::BTreeSet;
use std::io::Write as _;
use std::sync::Mutex;

use common::worker_affinities;

use numatask_alloc::Pinning;
use numatask_alloc::{Distribution, NumaVec, Topology, page_size, reset_coarse_counter};
use numatask_sched::__internals::LocalityModel;
use numatask_sched::Footprint;
use numatask_sched::config::Places;
use numatask_sched::{Runtime, SchedulerKind};

/// The node count the harness configured.
fn expected_nodes() -> usize {
    let raw = std::env::var("NUMATASK_VM_NODES")
        .expect("NUMATASK_VM_NODES is unset: run this through scripts/numa-vm-test.sh");
    raw.parse()
        .unwrap_or_else(|e| panic!("NUMATASK_VM_NODES={raw:?} is not a number: {e}"))
}

/// The guest's topology, real and with the node count the harness configured, and that
/// count.
fn guest_topology() -> (usize, std::sync::Arc<Topology>) {
    let n = expected_nodes();
    let topo = Topology::current().expect("the guest's topology");
    assert!(!topo.is_synthetic());
    assert_eq!(topo.num_nodes(), n);
    (n, topo)
}

/// Prints a line to the guest's console even though libtest captures the output of passing
/// tests (it captures `print!`, not writes to the stream): the harness echoes these lines.
fn report(line: &str) {
    let _ = writeln!(std::io::stderr().lock(), "NUMATASK-VM-REPORT {line}");
}

/// What one run of the map measured.
struct MapLocality {
    /// Footprint bytes on the node of the worker that ran the task, by the kernel.
    local_bytes: u64,
    /// All footprint bytes (every page resident).
    total_bytes: u64,
    /// Tasks run per node.
    tasks_per_node: Vec<usize>,
}

impl MapLocality {
    fn fraction(&self) -> f64 {
        self.local_bytes as f64 / self.total_bytes as f64
    }
}

/// The paper's Map (Listing 1): one task per chunk, each declaring its chunk as footprint and
/// scaling it in place, on `kind` with one pinned worker per CPU, stealing no farther than
/// `vicinity` (an OS distance; `None`: any node).
fn run_map(
    topo: &Topology,
    kind: SchedulerKind,
    vicinity: Option<u32>,
    chunks: &mut [NumaVec<u64>],
) -> MapLocality {
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
    let ran = Mutex::new(Vec::new());
    rt.scope(|s| {
        for (i, chunk) in chunks.iter_mut().enumerate() {
            let footprint = Footprint::of(chunk);
            let ran = &ran;
            s.task().label("map").affinity(footprint).spawn(move |s| {
                for x in chunk.iter_mut() {
                    *x = x.wrapping_mul(3).wrapping_add(1);
                }
                ran.lock().unwrap().push((i, s.node()));
            });
        }
    });
    let ran = ran.into_inner().unwrap();
    assert_eq!(ran.len(), chunks.len(), "every task ran once");
    let mut measured = MapLocality {
        local_bytes: 0,
        total_bytes: 0,
        tasks_per_node: vec![0; topo.num_nodes()],
    };
    let ps = page_size() as u64;
    for (i, node) in ran {
        measured.tasks_per_node[node] += 1;
        let chunk = &chunks[i];
        let pages = numatask_alloc::resident_nodes(chunk.as_ptr().cast(), chunk.len() * 8)
            .expect("move_pages answers");
        let os_node = topo.nodes()[node].os_index;
        measured.total_bytes += pages.len() as u64 * ps;
        measured.local_bytes += pages.iter().filter(|&&p| p == Some(os_node)).count() as u64 * ps;
        assert!(
            pages.iter().all(Option::is_some),
            "chunk {i}: every page resident"
        );
    }
    measured
}

#[test]
#[ignore = "needs several NUMA nodes: run by scripts/numa-vm-test.sh"]
fn map_with_locality_runs_at_least_95_percent_of_its_footprint_on_the_executing_node() {
    let (n, topo) = guest_topology();
    // Chunks just above the footprint threshold (LLC / C), so that every task is dealt.
    let model = LocalityModel::new(&topo, None);
    let threshold = model.footprint_threshold();
    // As many chunks per node as Algorithm 2 lets a node's queue hold before other nodes may
    // steal from it (distance / 10 x C, with C = 1 here: 2 at the 4-node guest's distance 20,
    // 1 at the 8-node guest's 16): every task is then run where it was dealt unless dealing is
    // wrong, which is what this test checks against the kernel. (With more chunks, workers
    // that finish early steal the rest legitimately, as many as the emulated CPUs' uneven
    // progress allows: 81-100% local over runs; the next test runs many tasks with the
    // vicinity bounding steals, and the steal thresholds themselves are tested on the 8-node
    // preset in tests/locality.rs.)
    let chunks_per_node = (0..n)
        .flat_map(|thief| model.steal_order(thief).iter().map(|c| c.threshold))
        .min()
        .unwrap_or(1)
        .max(1);
    // Coarse: each allocation bound wholly to the next node, round robin (the binding, not
    // the filling thread, decides where the pages go).
    let mut chunks = coarse_chunks(&topo, chunks_per_node);
    let chunk_bytes = chunks[0].len() * 8;
    report(&format!(
        "map: {n} nodes, {} tasks of {} KiB (footprint threshold {} KiB)",
        chunks.len(),
        chunk_bytes >> 10,
        threshold >> 10
    ));

    let locality = run_map(&topo, SchedulerKind::Locality, None, &mut chunks);
    let stealing = run_map(&topo, SchedulerKind::WorkStealing, None, &mut chunks);
    for (name, m) in [("locality", &locality), ("ws", &stealing)] {
        report(&format!(
            "map nodes={n} scheduler={name} local_fraction={:.4} ({} of {} MiB local by the kernel's page locations), tasks per node {:?}",
            m.fraction(),
            m.local_bytes >> 20,
            m.total_bytes >> 20,
            m.tasks_per_node
        ));
    }
    let required = 0.95;
    assert!(
        locality.fraction() >= required,
        "locality-aware: only {:.1}% of footprint bytes local (required {:.0}%)",
        100.0 * locality.fraction(),
        100.0 * required
    );
    assert!(
        stealing.fraction() < 0.8,
        "work stealing: {:.1}% local, no contrast with locality-aware scheduling",
        100.0 * stealing.fraction()
    );
    // The data went through both maps.
    for (i, chunk) in chunks.iter().enumerate() {
        let once = (i as u64).wrapping_mul(3).wrapping_add(1);
        assert_eq!(chunk[chunk.len() - 1], once.wrapping_mul(3).wrapping_add(1));
    }
}

/// `n x per_node` coarse chunks just above the footprint threshold, rotating over the nodes,
/// chunk `i` filled with `i`.
fn coarse_chunks(topo: &Topology, per_node: usize) -> Vec<NumaVec<u64>> {
    let threshold = LocalityModel::new(topo, None).footprint_threshold();
    let ps = page_size();
    let chunk_bytes = (threshold as usize + 1).div_ceil(ps).max(16) * ps;
    reset_coarse_counter();
    (0..topo.num_nodes() * per_node)
        .map(|i| {
            let mut v =
                NumaVec::zeroed(chunk_bytes / 8, Distribution::Coarse).expect("coarse allocation");
            v.iter_mut().for_each(|x| *x = i as u64);
            v
        })
        .collect()
}

#[test]
#[ignore = "needs several NUMA nodes: run by scripts/numa-vm-test.sh"]
fn map_of_many_tasks_with_locality_and_the_vicinity_of_one_node_runs_at_least_95_percent_local() {
    let (n, topo) = guest_topology();
    // Twelve tasks per node, far beyond the steal thresholds: with the vicinity of section
    // 4.2 set to the local distance no worker takes a task of another node, so what runs
    // where is dealing alone, checked against the kernel's page locations; without a
    // vicinity, Algorithm 2 lets idle nodes steal beyond the thresholds (reported).
    let per_node = 12;
    let mut chunks = coarse_chunks(&topo, per_node);
    let local_distance = topo.distance_matrix()[0];
    let bounded = run_map(
        &topo,
        SchedulerKind::Locality,
        Some(local_distance),
        &mut chunks,
    );
    let unbounded = run_map(&topo, SchedulerKind::Locality, None, &mut chunks);
    let stealing = run_map(&topo, SchedulerKind::WorkStealing, None, &mut chunks);
    for (name, m) in [
        ("locality vicinity=local", &bounded),
        ("locality", &unbounded),
        ("ws", &stealing),
    ] {
        report(&format!(
            "map nodes={n} tasks={} scheduler={name} local_fraction={:.4}, tasks per node {:?}",
            chunks.len(),
            m.fraction(),
            m.tasks_per_node
        ));
    }
    assert!(
        bounded.fraction() >= 0.95,
        "locality-aware within the vicinity of one node: only {:.1}% local",
        100.0 * bounded.fraction()
    );
    assert_eq!(
        bounded.tasks_per_node,
        vec![per_node; n],
        "each node ran the tasks dealt to it"
    );
    assert!(
        stealing.fraction() < 0.8,
        "work stealing: {:.1}% local, no contrast",
        100.0 * stealing.fraction()
    );
    for (i, chunk) in chunks.iter().enumerate() {
        let mut x = i as u64;
        for _ in 0..3 {
            x = x.wrapping_mul(3).wrapping_add(1);
        }
        assert_eq!(
            chunk[chunk.len() - 1],
            x,
            "chunk {i} went through three maps"
        );
    }
}

#[test]
#[ignore = "needs several NUMA nodes: run by scripts/numa-vm-test.sh"]
fn numa_domain_places_bind_each_worker_to_the_cpus_of_its_node() {
    let (n, topo) = guest_topology();
    let node_cpus = |node: usize| -> BTreeSet<usize> {
        topo.nodes()[node]
            .cores
            .iter()
            .flat_map(|c| c.pus.iter().copied())
            .collect()
    };
    // Two workers per node: runs of two on each place, as OpenMP puts more threads than
    // places.
    let rt = Runtime::builder()
        .places(Places::NumaDomains)
        .num_threads(2 * n)
        .build()
        .expect("runtime starts");
    let places: Vec<BTreeSet<usize>> = rt
        .place_list()
        .iter()
        .map(|p| p.iter().copied().collect())
        .collect();
    assert_eq!(places, (0..n).map(node_cpus).collect::<Vec<_>>());
    let nodes: Vec<usize> = rt.workers().iter().map(|p| p.node).collect();
    assert_eq!(nodes, (0..2 * n).map(|w| w / 2).collect::<Vec<_>>());
    for (worker, cpus) in worker_affinities(&rt).into_iter().enumerate() {
        assert_eq!(
            cpus,
            Some(node_cpus(nodes[worker])),
            "worker {worker}: bound to the CPUs of its node, as the kernel reports them"
        );
    }
    drop(rt);
    // An explicit list, the last node's first CPU before the first node's: the place's node
    // is the kernel's, not the list's order.
    let first_cpu = |node: usize| topo.nodes()[node].cores[0].pus[0];
    let rt = Runtime::builder()
        .places(Places::List(vec![
            vec![first_cpu(n - 1)],
            vec![first_cpu(0)],
        ]))
        .build()
        .expect("runtime starts");
    let nodes: Vec<usize> = rt.workers().iter().map(|p| p.node).collect();
    assert_eq!(nodes, [n - 1, 0]);
    let affinities = worker_affinities(&rt);
    assert_eq!(affinities[0], Some(BTreeSet::from([first_cpu(n - 1)])));
    assert_eq!(affinities[1], Some(BTreeSet::from([first_cpu(0)])));
    drop(rt);
    // Sockets: the kernel's packages (sysfs), each CPU's `physical_package_id`.
    let mut packages: std::collections::BTreeMap<u32, BTreeSet<usize>> = Default::default();
    for cpu in topo.cores().flat_map(|c| c.pus.clone()) {
        let path = format!("/sys/devices/system/cpu/cpu{cpu}/topology/physical_package_id");
        let id: u32 = std::fs::read_to_string(&path)
            .unwrap_or_else(|e| panic!("{path}: {e}"))
            .trim()
            .parse()
            .expect("a package id");
        packages.entry(id).or_default().insert(cpu);
    }
    let mut want: Vec<BTreeSet<usize>> = packages.into_values().collect();
    want.sort();
    let rt = Runtime::builder()
        .places(Places::Sockets)
        .build()
        .expect("runtime starts");
    let mut got: Vec<BTreeSet<usize>> = rt
        .place_list()
        .iter()
        .map(|p| p.iter().copied().collect())
        .collect();
    got.sort();
    assert_eq!(got, want, "sockets are the kernel's packages");
    let sockets = got.len();
    report(&format!(
        "places numa_domains: {n} places, each worker bound to its node's CPUs; explicit \
         list {{{}}},{{{}}} on nodes {nodes:?}; sockets: {sockets} places, the kernel's packages",
        first_cpu(n - 1),
        first_cpu(0)
    ));
}

/// The guest's transparent huge page setting, as the kernel shows it (`always [madvise]
/// never`: the bracketed one is in force).
fn thp_setting() -> String {
    std::fs::read_to_string("/sys/kernel/mm/transparent_hugepage/enabled")
        .unwrap_or_else(|e| format!("unreadable: {e}"))
        .trim()
        .to_owned()
}

/// First touch through `taskloop_mut` over the standard `NumaVec` `v`, one pinned worker per CPU (one per node in the guest): the share of the pages that lie on the node of
/// the worker that wrote them, by the kernel.
fn parallel_first_touch_locality(topo: &Topology, v: &mut NumaVec<u64>) -> f64 {
    let rt = Runtime::builder()
        .num_threads(topo.num_cores())
        .build()
        .expect("runtime starts");
    let written = Mutex::new(Vec::new());
    let base = v.as_ptr() as usize;
    rt.scope(|s| {
        s.taskloop_mut(
            v,
            numatask_sched::taskloop::Grain::Auto,
            |s, offset, chunk| {
                chunk.iter_mut().for_each(|x| *x = 1);
                written
                    .lock()
                    .unwrap()
                    .push((offset, chunk.len(), s.node()));
            },
        )
    });
    let ps = page_size();
    let (mut local, mut total) = (0usize, 0usize);
    for (offset, len, node) in written.into_inner().unwrap() {
        // The pages that start inside the chunk (a page shared with the chunk before belongs
        // to that one).
        let lo = (base + offset * 8).next_multiple_of(ps);
        let hi = base + (offset + len) * 8;
        if lo >= hi {
            continue;
        }
        let pages = numatask_alloc::resident_nodes(lo as *const u8, hi - lo).expect("move_pages");
        let os = topo.nodes()[node].os_index;
        local += pages.iter().filter(|&&p| p == Some(os)).count();
        total += pages.len();
    }
    local as f64 / total as f64
}

#[test]
#[ignore = "needs several NUMA nodes: run by scripts/numa-vm-test.sh"]
fn parallel_first_touch_puts_99_percent_of_pages_on_the_writing_workers_node() {
    let (n, topo) = guest_topology();
    let thp = thp_setting();
    // 8 MiB per node (four huge pages).
    let len = n * (8 << 20) / 8;
    // Base pages (the default on several nodes): each 4 KiB page where it is first written,
    // whatever the kernel's transparent huge pages.
    let mut v = NumaVec::<u64>::zeroed(len, Distribution::Standard).expect("standard memory");
    let base = parallel_first_touch_locality(&topo, &mut v);
    // Huge pages: each 2 MiB where it is first written, the loop cut at their boundaries.
    let mut h = numatask_alloc::with_pages(numatask_alloc::Pages::Huge, || {
        NumaVec::<u64>::zeroed(len, Distribution::Standard)
    })
    .expect("standard memory of huge pages");
    let huge = parallel_first_touch_locality(&topo, &mut h);
    report(&format!(
        "nodes={n} parallel first touch (taskloop_mut, 8 MiB per node, THP '{thp}'): base pages \
         {:.2}% local, huge pages {:.2}% local",
        base * 100.0,
        huge * 100.0
    ));
    assert!(base >= 0.99, "base pages: {:.2}% local", base * 100.0);
    assert!(huge >= 0.99, "huge pages: {:.2}% local", huge * 100.0);
}
