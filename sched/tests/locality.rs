//! The locality-aware scheduler on the core paper's 8-node machine (the synthetic
//! `Opteron6172` preset: 8 nodes x 6 cores, LLC 5 MiB, distances 10/16/22): where tasks are
//! dealt, who runs them, when other nodes steal them, and what the tracer records.
//!
//! The placement registry follows the process-wide topology, so this binary makes it the
//! preset (`NUMATASK_TOPOLOGY`) before anything reads it; memory "on node k" is then recorded
//! on node k (nothing is bound on a synthetic topology) and the runtimes, built on the same
//! preset, deal by it. Workers of the synthetic machine run on the real cores.

mod common;

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, Once};
use std::time::{Duration, Instant};

use common::{TempPath, within};
use numatask_alloc::{Distribution, NumaVec, Place, Preset, Topology};
use numatask_sched::__internals::{DealReason, LocalityModel};
use numatask_sched::Footprint;
use numatask_sched::data::Blocks;
use numatask_sched::depend::{Access, AccessKind};
use numatask_sched::taskloop::Grain;
use numatask_sched::trace::QueueChoice;
use numatask_sched::{Runtime, SchedulerKind};

/// Makes the preset the process-wide topology; every test calls it first.
fn preset_process() {
    static SET: Once = Once::new();
    SET.call_once(|| {
        // SAFETY: every test of this binary calls this before anything else, and `Once` makes
        // the others wait until the variable is set: no thread reads the environment meanwhile.
        unsafe { std::env::set_var("NUMATASK_TOPOLOGY", "preset:opteron6172") };
    });
    let current = Topology::current().expect("the preset builds");
    assert_eq!(current.num_nodes(), 8, "the registry follows the preset");
}

fn preset() -> Arc<Topology> {
    Arc::new(Topology::preset(Preset::Opteron6172).expect("the preset builds"))
}

/// A locality-aware runtime on the preset with `n` unpinned workers.
fn locality_runtime(n: usize, vicinity: Option<u32>) -> Runtime {
    Runtime::builder()
        .topology(preset())
        .scheduler(SchedulerKind::Locality)
        .num_threads(n)
        .proc_bind(false)
        .vicinity(vicinity)
        .build()
        .expect("runtime starts")
}

/// [`locality_runtime`] without a vicinity, tracing its tasks in memory.
fn traced_locality_runtime(n: usize) -> Runtime {
    Runtime::builder()
        .topology(preset())
        .scheduler(SchedulerKind::Locality)
        .num_threads(n)
        .proc_bind(false)
        .trace_summary(true)
        .build()
        .expect("runtime starts")
}

/// 1 MiB recorded on node `node`: above the preset's footprint threshold (5 MiB / 6).
fn chunk_on(node: usize) -> NumaVec<u8> {
    NumaVec::zeroed(1 << 20, Place::OnNode(node)).expect("allocation on a preset node")
}

fn footprint(chunk: &NumaVec<u8>) -> Footprint {
    Footprint::of(chunk)
}

fn trace_path(name: &str) -> TempPath {
    TempPath::json(name)
}

#[test]
fn a_task_whose_footprint_lies_on_node_k_runs_on_a_worker_of_node_k() {
    preset_process();
    let path = trace_path("deal");
    within(120, move || {
        // 48 workers: every node has its 6.
        let rt = Runtime::builder()
            .topology(preset())
            .scheduler(SchedulerKind::Locality)
            .proc_bind(false)
            .trace(&path)
            .build()
            .expect("runtime starts");
        assert_eq!(rt.num_workers(), 48);
        let chunks: Vec<NumaVec<u8>> = (0..8).map(chunk_on).collect();
        let ran_on = Mutex::new(Vec::new());
        rt.scope(|s| {
            for _ in 0..3 {
                for (k, chunk) in chunks.iter().enumerate() {
                    let ran_on = &ran_on;
                    s.task()
                        .label("map")
                        .affinity(footprint(chunk))
                        .spawn(move |s| {
                            ran_on.lock().unwrap().push((k, s.node()));
                        });
                }
            }
        });
        let ran_on = ran_on.into_inner().unwrap();
        assert_eq!(ran_on.len(), 24);
        for (k, node) in ran_on {
            assert_eq!(
                node, k,
                "a task with its footprint on node {k} ran on node {node}"
            );
        }
        // The trace says the same, with the reason and the footprint.
        let records = rt.tracer().expect("tracing").records();
        let maps: Vec<_> = records.iter().filter(|r| r.label == "map").collect();
        assert_eq!(maps.len(), 24);
        for r in maps {
            assert_eq!(
                r.queue,
                QueueChoice::Node {
                    node: r.node,
                    reason: DealReason::LeastCost
                }
            );
            assert_eq!(r.stolen_distance, None, "taken from its own node's queue");
            assert_eq!(r.local_fraction(), Some(1.0));
            // (A task counts as done inside its run, so its worker may record its end just
            // after the scope returned: `None` until then.)
            if let Some(end) = r.end_ns {
                assert!(end >= r.start_ns, "{r:?}");
            }
        }
        let summary = rt.finish_trace().expect("tracing").expect("trace written");
        assert_eq!(summary.local_fraction(), Some(1.0));
        let json = std::fs::read_to_string(&path).expect("the trace file");
        assert_eq!(json.matches("\"task\":\"map\"").count(), 24);
        drop(rt);
    });
}

#[test]
fn dependent_tasks_are_dealt_by_their_depend_list() {
    preset_process();
    let path = trace_path("depend");
    within(120, move || {
        let rt = Runtime::builder()
            .topology(preset())
            .scheduler(SchedulerKind::Locality)
            .proc_bind(false)
            .trace(&path)
            .build()
            .expect("runtime starts");
        const BLOCK: usize = (1 << 20) / 8;
        let mut v = NumaVec::<u64>::filled(4 * BLOCK, 1, Place::OnNode(3)).unwrap();
        let nodes = Mutex::new(Vec::new());
        rt.scope(|s| {
            let blocks = Blocks::new(&mut v, BLOCK)?;
            for i in 1..blocks.len() {
                let nodes = &nodes;
                s.task()
                    .reads(&blocks[i - 1])
                    .updates(&blocks[i])
                    .label("chain")
                    .spawn(move |s, (prev, this)| {
                        nodes.lock().unwrap().push(s.node());
                        this[0] += prev[0];
                    })?;
            }
            Ok::<(), numatask_sched::DependError>(())
        })
        .expect("valid blocks");
        assert_eq!(v[3 * BLOCK], 4, "the chain ran in order");
        assert_eq!(nodes.into_inner().unwrap(), vec![3; 3]);
        let chain = rt
            .tracer()
            .unwrap()
            .records()
            .into_iter()
            .filter(|r| r.label == "chain")
            .count();
        assert_eq!(chain, 3);
        drop(rt);
    });
}

#[test]
fn a_summary_only_trace_counts_local_bytes_without_a_file() {
    preset_process();
    within(120, || {
        let rt = Runtime::builder()
            .topology(preset())
            .scheduler(SchedulerKind::Locality)
            .proc_bind(false)
            .trace_summary(true)
            .build()
            .expect("runtime starts");
        assert!(rt.settings().trace.is_none() && rt.settings().trace_summary);
        assert!(
            rt.display_env()
                .contains("NUMATASK_TRACE = 'none (tasks traced in memory"),
            "{}",
            rt.display_env()
        );
        let chunks: Vec<NumaVec<u8>> = (0..4).map(|k| chunk_on(2 * k)).collect();
        rt.scope(|s| {
            for chunk in &chunks {
                // SAFETY: the tasks only read the chunks, which outlive the scope.
                unsafe {
                    s.task()
                        .depend(&[Access::of_slice(chunk, AccessKind::InOut)])
                        .spawn(move |_| assert_eq!(chunk[0], 0))
                };
            }
        });
        let summary = rt
            .finish_trace()
            .expect("tracing")
            .expect("no file to write");
        assert_eq!(summary.tasks, 5, "four dealt tasks and the scope body");
        let local: u64 = summary.per_node.iter().map(|n| n.local_bytes).sum();
        let remote: u64 = summary.per_node.iter().map(|n| n.remote_bytes).sum();
        assert_eq!(
            (local, remote),
            (4 << 20, 0),
            "each 1 MiB task ran on its chunk's node"
        );
        for node in [0, 2, 4, 6] {
            assert_eq!(summary.per_node[node].local_bytes, 1 << 20, "node {node}");
        }
    });
}

#[test]
fn small_even_and_missing_footprints_stay_on_the_spawners_deque_and_the_trace_says_why() {
    preset_process();
    let path = trace_path("local");
    within(60, move || {
        let rt = Runtime::builder()
            .topology(preset())
            .scheduler(SchedulerKind::Locality)
            .num_threads(2)
            .proc_bind(false)
            .trace(&path)
            .build()
            .expect("runtime starts");
        let threshold = LocalityModel::new(rt.topology(), None).footprint_threshold() as usize;
        // Below LLC / C, on a remote node.
        let small = NumaVec::<u8>::zeroed(threshold, Place::OnNode(5)).unwrap();
        // Above the threshold, but the same bytes on every node.
        let even: Vec<NumaVec<u8>> = (0..8)
            .map(|k| NumaVec::zeroed(1 << 17, Place::OnNode(k)).unwrap())
            .collect();
        let even_footprint = even.iter().fold(Footprint::new(), |f, c| f.slice(c));
        rt.scope(|s| {
            s.task()
                .label("small")
                .affinity(footprint(&small))
                .spawn(|_| {});
            s.task()
                .label("even")
                .affinity(even_footprint)
                .spawn(|_| {});
            s.task()
                .label("none")
                .affinity(Footprint::new())
                .spawn(|_| {});
            s.spawn(|_| {});
        });
        let records = rt.tracer().unwrap().records();
        assert_eq!(records.len(), 4 + 1, "four tasks and the scope body");
        let injected = records
            .iter()
            .filter(|r| r.queue == QueueChoice::Injected)
            .count();
        assert_eq!(injected, 1, "the scope body comes from outside the pool");
        // The trace says why each stayed: Algorithm 1's reason, or nothing to deal.
        for r in records.iter().filter(|r| r.queue != QueueChoice::Injected) {
            let expected = match r.label {
                "small" => QueueChoice::Kept {
                    reason: DealReason::SmallFootprint,
                },
                "even" => QueueChoice::Kept {
                    reason: DealReason::EvenFootprint,
                },
                _ => QueueChoice::OwnDeque,
            };
            assert_eq!(r.queue, expected, "{}", r.label);
        }
        let small_record = records.iter().find(|r| r.label == "small").unwrap();
        assert_eq!(
            small_record.footprint.as_ref().map(|f| f.on(5)),
            Some(threshold as u64)
        );
        drop(rt);
        let json = std::fs::read_to_string(&path).expect("the trace file");
        assert!(json.contains("own deque (SmallFootprint)"), "{json:.600}");
    });
}

#[test]
fn a_fine_footprint_a_few_pages_uneven_stays_local_unless_the_even_tolerance_is_zero() {
    preset_process();
    // 300 pages interleaved page by page over the 8 nodes: four nodes hold 38 pages and four
    // 37, above LLC / C (213 pages) and not exactly even.
    let pages = 300;
    let fine =
        NumaVec::<u8>::zeroed(pages * numatask_alloc::page_size(), Distribution::Fine).unwrap();
    within(60, move || {
        let run = |tolerance: Option<f64>| {
            let mut builder = Runtime::builder()
                .topology(preset())
                .scheduler(SchedulerKind::Locality)
                .num_threads(48)
                .proc_bind(false)
                .trace_summary(true);
            if let Some(t) = tolerance {
                builder = builder.even_tolerance(t);
            }
            let rt = builder.build().expect("runtime starts");
            rt.scope(|s| {
                for _ in 0..16 {
                    s.task()
                        .label("fine")
                        .affinity(Footprint::of(&fine))
                        .spawn(|_| {});
                }
            });
            let records = rt.tracer().expect("tracing").records();
            records
                .iter()
                .filter(|r| r.label == "fine")
                .map(|r| r.queue)
                .collect::<Vec<_>>()
        };
        // The default tolerance (0.1): even, kept on the spawner's deque.
        let kept = run(None);
        assert_eq!(kept.len(), 16);
        for queue in kept {
            assert_eq!(
                queue,
                QueueChoice::Kept {
                    reason: DealReason::EvenFootprint
                }
            );
        }
        // The paper's exact test: every one dealt, to node 2 or 4 (the nodes whose distances
        // to all the others sum least), whichever node holds the extra pages.
        let dealt = run(Some(0.0));
        assert_eq!(dealt.len(), 16);
        for queue in dealt {
            match queue {
                QueueChoice::Node {
                    node: 2 | 4,
                    reason: DealReason::LeastCost,
                } => {}
                other => panic!("dealt {other:?}, not by least cost to node 2 or 4"),
            }
        }
    });
}

#[test]
fn an_intensive_access_decides_the_node() {
    preset_process();
    within(60, || {
        let rt = locality_runtime(48, None);
        let big = NumaVec::<u8>::zeroed(4 << 20, Place::OnNode(2)).unwrap();
        let hot = chunk_on(6);
        let node = rt.scope(|s| {
            let accesses = Footprint::of(&big).slice(&hot).intensive();
            let node = Arc::new(AtomicUsize::new(usize::MAX));
            let seen = Arc::clone(&node);
            s.task()
                .affinity(accesses)
                .spawn(move |s| seen.store(s.node(), Ordering::SeqCst));
            s.taskwait();
            node.load(Ordering::SeqCst)
        });
        assert_eq!(
            node, 6,
            "the intensive access's node, not the node of most bytes"
        );
    });
}

#[test]
fn a_task_dealt_to_a_node_without_workers_goes_to_the_nearest_node_with_workers() {
    preset_process();
    within(60, || {
        // Workers 0..6 on node 0, 6..12 on node 1; node 4 (distance 16 from both) and node 3
        // (22 from node 0, 16 from node 1) have none.
        let rt = locality_runtime(12, None);
        let on3 = chunk_on(3);
        let nodes = rt.scope(|s| {
            let handles: Vec<_> = (0..4)
                .map(|_| {
                    let seen = Arc::new(AtomicUsize::new(usize::MAX));
                    let store = Arc::clone(&seen);
                    s.task()
                        .affinity(footprint(&on3))
                        .spawn(move |s| store.store(s.node(), Ordering::SeqCst));
                    seen
                })
                .collect();
            s.taskwait();
            handles
                .iter()
                .map(|h| h.load(Ordering::SeqCst))
                .collect::<Vec<_>>()
        });
        assert_eq!(
            nodes,
            vec![1; 4],
            "node 1 is the cheaper of the staffed nodes"
        );
    });
}

/// What [`steal_test`] saw: how many of the dealt tasks ran on the thieves' node.
struct StealOutcome {
    stolen: usize,
}

/// Seven workers: 0..6 on node 0, worker 6 alone on node 1. Worker 6 is held by a blocker task
/// while `dealt` tasks are dealt to node 1's queue; node 0's six workers may steal them (by
/// Algorithm 2) until the blocker lets go, which it does once steals stopped for a while, or
/// at once when more than `give_up_after` were stolen (a threshold violation: no need to wait).
fn steal_test(vicinity: Option<u32>, dealt: usize, give_up_after: usize) -> StealOutcome {
    let rt = locality_runtime(7, vicinity);
    let on0 = chunk_on(0);
    let on1 = chunk_on(1);
    let blocker_started = AtomicBool::new(false);
    let stolen = AtomicUsize::new(0);
    let last_steal = Mutex::new(Instant::now());
    let quiet = Duration::from_millis(300);
    rt.scope(|s| {
        // The driver runs on node 0 (its footprint is there, and node 1 may not steal a
        // queue of one task).
        s.task().affinity(footprint(&on0)).spawn(|s| {
            assert_eq!(s.node(), 0);
            s.task().affinity(footprint(&on1)).spawn(|s| {
                assert_eq!(s.node(), 1, "the blocker runs on node 1");
                blocker_started.store(true, Ordering::SeqCst);
                loop {
                    let n = stolen.load(Ordering::SeqCst);
                    let since = last_steal.lock().unwrap().elapsed();
                    let waited_enough = since > quiet && (n > 0 || vicinity.is_some());
                    if n > give_up_after || waited_enough {
                        break;
                    }
                    std::thread::sleep(Duration::from_millis(5));
                }
            });
            while !blocker_started.load(Ordering::SeqCst) {
                std::thread::yield_now();
            }
            *last_steal.lock().unwrap() = Instant::now();
            for _ in 0..dealt {
                s.task().affinity(footprint(&on1)).spawn(|s| {
                    if s.node() == 0 {
                        stolen.fetch_add(1, Ordering::SeqCst);
                        *last_steal.lock().unwrap() = Instant::now();
                    }
                });
            }
        });
    });
    StealOutcome {
        stolen: stolen.into_inner(),
    }
}

/// Algorithm 2 with exactly one thief: seven workers (0..6 on node 0, worker 6 on node 1);
/// worker 6 and five of node 0's workers are held by spinning tasks, so one worker of node 0
/// is free. `dealt` tasks are dealt to node 1's queue; the thief must take them while the queue
/// holds more than the threshold, and then stop: exactly `dealt - threshold` of them. Returns
/// how many ran on node 0, after checking that the trace records each of them as stolen
/// across distance 16 (in its summary and in the Chrome JSON).
fn steal_with_one_thief(dealt: usize, threshold: usize) -> usize {
    let path = trace_path(&format!("one-thief-{dealt}"));
    let rt = Runtime::builder()
        .topology(preset())
        .scheduler(SchedulerKind::Locality)
        .num_threads(7)
        .proc_bind(false)
        .trace(&path)
        .build()
        .expect("runtime starts");
    let on0 = chunk_on(0);
    let on1 = chunk_on(1);
    let held = AtomicUsize::new(0);
    let release = AtomicBool::new(false);
    let stolen = AtomicUsize::new(0);
    let hold = |s: &numatask_sched::Scope<'_>, node: usize| {
        assert_eq!(s.node(), node);
        held.fetch_add(1, Ordering::SeqCst);
        while !release.load(Ordering::SeqCst) {
            std::thread::yield_now();
        }
    };
    rt.scope(|s| {
        s.task().affinity(footprint(&on0)).spawn(|s| {
            assert_eq!(s.node(), 0, "the driver runs on node 0");
            s.task().affinity(footprint(&on1)).spawn(|s| hold(s, 1));
            for _ in 0..4 {
                s.task().affinity(footprint(&on0)).spawn(|s| hold(s, 0));
            }
            // The driver is the fifth held worker of node 0 once it has dealt the tasks.
            while held.load(Ordering::SeqCst) < 5 {
                std::thread::yield_now();
            }
            for _ in 0..dealt {
                s.task().affinity(footprint(&on1)).spawn(|s| {
                    if s.node() == 0 {
                        stolen.fetch_add(1, Ordering::SeqCst);
                    }
                });
            }
            // No deadline for the steals the threshold allows (`within` reports a hang);
            // then a pause in which a steal beyond the threshold would show.
            while stolen.load(Ordering::SeqCst) < dealt.saturating_sub(threshold) {
                std::thread::yield_now();
            }
            std::thread::sleep(Duration::from_millis(200));
            release.store(true, Ordering::SeqCst);
        });
    });
    let stolen = stolen.into_inner();
    let summary = rt.finish_trace().expect("traced").expect("trace written");
    let across_16 = summary.steals_by_distance.get(&16).copied().unwrap_or(0);
    assert_eq!(across_16, stolen as u64, "{:?}", summary.steals_by_distance);
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&path).expect("trace file"))
            .expect("the trace is JSON");
    let stolen_events = json["traceEvents"]
        .as_array()
        .expect("events")
        .iter()
        .filter(|e| e["ph"] == "X" && e["args"]["stolen_distance"] == 16)
        .count();
    assert_eq!(stolen_events, stolen, "slices with stolen_distance 16");
    stolen
}

#[test]
fn other_nodes_steal_dealt_tasks_only_while_the_queue_is_above_the_distance_threshold() {
    preset_process();
    let model = LocalityModel::new(&preset(), None);
    let threshold = model
        .steal_order(0)
        .iter()
        .find(|c| c.node == 1)
        .expect("node 1 is a candidate of node 0")
        .threshold;
    assert_eq!(threshold, 9, "distance 16 x 6 cores / 10");
    let stolen = within(120, move || steal_with_one_thief(20, threshold));
    assert_eq!(
        stolen,
        20 - threshold,
        "one thief takes tasks from node 1's queue of 20 while it holds more than {threshold}"
    );
    // A queue at the threshold is not stolen from at all.
    let stolen = within(120, move || steal_with_one_thief(threshold, threshold));
    assert_eq!(
        stolen, 0,
        "a queue of {threshold} tasks is left to its node"
    );
}

#[test]
fn a_thief_empties_the_nearer_queue_to_its_threshold_before_the_farther_one() {
    preset_process();
    // 24 workers: nodes 0-3, six each. Every worker but node 0's driver is held (sleeping in
    // a task dealt to its node); the driver deals 20 tasks to node 1 (distance 16,
    // threshold 9), then 20 to node 3 (distance 22, threshold 13), and only then lets one
    // worker of node 0 go (the thief: it must not start while the queues fill, or a look at
    // node 1 before its tasks arrive and at node 3 after would rightly take from node 3).
    // The thief must take 11 from node 1, and only then 7 from node 3, and nothing more.
    let model = LocalityModel::new(&preset(), None);
    let threshold = |node| {
        model
            .steal_order(0)
            .iter()
            .find(|c| c.node == node)
            .map(|c| (c.distance, c.threshold))
            .expect("a candidate")
    };
    assert_eq!((threshold(1), threshold(3)), ((16, 9), (22, 13)));
    let order = within(120, || {
        let rt = locality_runtime(24, None);
        let chunks: Vec<NumaVec<u8>> = (0..4).map(chunk_on).collect();
        let held = AtomicUsize::new(0);
        let release = AtomicBool::new(false);
        let gate = AtomicBool::new(false);
        let order = Mutex::new(Vec::new());
        let hold_until = |s: &numatask_sched::Scope<'_>, node: usize, until: &AtomicBool| {
            assert_eq!(s.node(), node);
            held.fetch_add(1, Ordering::SeqCst);
            while !until.load(Ordering::SeqCst) {
                std::thread::sleep(Duration::from_millis(1));
            }
        };
        rt.scope(|s| {
            s.task().affinity(footprint(&chunks[0])).spawn(|s| {
                assert_eq!(s.node(), 0, "the driver runs on node 0");
                for node in [1, 2, 3] {
                    for _ in 0..6 {
                        let release = &release;
                        s.task()
                            .affinity(footprint(&chunks[node]))
                            .spawn(move |s| hold_until(s, node, release));
                    }
                }
                for _ in 0..4 {
                    s.task()
                        .affinity(footprint(&chunks[0]))
                        .spawn(|s| hold_until(s, 0, &release));
                }
                s.task()
                    .affinity(footprint(&chunks[0]))
                    .spawn(|s| hold_until(s, 0, &gate));
                while held.load(Ordering::SeqCst) < 23 {
                    std::thread::sleep(Duration::from_millis(1));
                }
                for node in [1, 3] {
                    for _ in 0..20 {
                        let order = &order;
                        s.task().affinity(footprint(&chunks[node])).spawn(move |s| {
                            if s.node() == 0 {
                                order.lock().unwrap().push(node);
                            }
                        });
                    }
                }
                gate.store(true, Ordering::SeqCst);
                while order.lock().unwrap().len() < 11 + 7 {
                    std::thread::yield_now();
                }
                // A pause in which a steal beyond the thresholds would show.
                std::thread::sleep(Duration::from_millis(200));
                release.store(true, Ordering::SeqCst);
            });
        });
        order.into_inner().unwrap()
    });
    let mut expected = vec![1; 11];
    expected.extend([3; 7]);
    assert_eq!(
        order, expected,
        "nearest node first, each down to its threshold"
    );
}

#[test]
fn a_thief_takes_a_nearer_nodes_dealt_tasks_before_a_farther_nodes_kept_ones() {
    preset_process();
    // 24 workers: nodes 0-3, six each, all held but node 0's driver. A held worker of node 3
    // (distance 22) has 5 tasks without footprints on its deque; node 1 (distance 16) has 20
    // tasks dealt to its queue (threshold 9). Waiting at its taskwait, the driver must take
    // 11 from node 1 first, then the 5 of node 3's deque: nodes in order of distance.
    let order = within(120, || {
        let rt = locality_runtime(24, None);
        let chunks: Vec<NumaVec<u8>> = (0..4).map(chunk_on).collect();
        let held = AtomicUsize::new(0);
        let release = AtomicBool::new(false);
        let order = Mutex::new(Vec::new());
        let (held, release, order) = (&held, &release, &order);
        let hold = move |s: &numatask_sched::Scope<'_>, node: usize| {
            assert_eq!(s.node(), node);
            held.fetch_add(1, Ordering::SeqCst);
            while !release.load(Ordering::SeqCst) {
                std::thread::sleep(Duration::from_millis(1));
            }
        };
        std::thread::scope(|threads| {
            // Lets the held workers go once the driver took all it may, and a pause in which
            // a steal beyond the threshold would show.
            threads.spawn(move || {
                while order.lock().unwrap().len() < 11 + 5 {
                    std::thread::sleep(Duration::from_millis(1));
                }
                std::thread::sleep(Duration::from_millis(200));
                release.store(true, Ordering::SeqCst);
            });
            rt.scope(|s| {
                s.task().affinity(footprint(&chunks[0])).spawn(|s| {
                    assert_eq!(s.node(), 0, "the driver runs on node 0");
                    for node in [1, 2, 3] {
                        for k in 0..6 {
                            s.task().affinity(footprint(&chunks[node])).spawn(move |s| {
                                if node == 3 && k == 0 {
                                    // Once every other worker is held, so that nobody takes
                                    // them before the driver looks.
                                    while held.load(Ordering::SeqCst) < 22 {
                                        std::thread::sleep(Duration::from_millis(1));
                                    }
                                    for _ in 0..5 {
                                        s.spawn(|s| {
                                            if s.node() == 0 {
                                                order.lock().unwrap().push(3);
                                            }
                                        });
                                    }
                                }
                                hold(s, node)
                            });
                        }
                    }
                    for _ in 0..5 {
                        s.task()
                            .affinity(footprint(&chunks[0]))
                            .spawn(move |s| hold(s, 0));
                    }
                    while held.load(Ordering::SeqCst) < 23 {
                        std::thread::sleep(Duration::from_millis(1));
                    }
                    for _ in 0..20 {
                        s.task().affinity(footprint(&chunks[1])).spawn(move |s| {
                            if s.node() == 0 {
                                order.lock().unwrap().push(1);
                            }
                        });
                    }
                    s.taskwait();
                });
            });
        });
        order.lock().unwrap().clone()
    });
    let mut expected = vec![1; 11];
    expected.extend([3; 5]);
    assert_eq!(
        order, expected,
        "node 1's dealt tasks (distance 16) before node 3's deque (distance 22)"
    );
}

/// A locality-aware runtime on the preset with `n` unpinned workers on 512 KiB stacks.
fn small_stack_runtime(n: usize, vicinity: Option<u32>) -> Runtime {
    Runtime::builder()
        .topology(preset())
        .scheduler(SchedulerKind::Locality)
        .num_threads(n)
        .proc_bind(false)
        .vicinity(vicinity)
        .stack_size(512 << 10)
        .build()
        .expect("runtime starts")
}

#[test]
fn tasks_a_waiter_short_of_stack_sets_aside_stay_within_the_vicinity() {
    preset_process();
    within(120, || {
        // Node 0's driver, short of stack, waits at a taskgroup's end for a child dealt to
        // node 1; the 60 tasks it spawned before (for node 0) are not descendants of the
        // group, so what it pops of them it sets aside. With vicinity 10 only node 0's
        // workers may take them.
        let rt = small_stack_runtime(7, Some(10));
        let (on0, on1) = (chunk_on(0), chunk_on(1));
        let ran_on = Mutex::new(Vec::new());
        rt.scope(|s| {
            s.task().affinity(footprint(&on0)).spawn(|s| {
                assert_eq!(s.node(), 0);
                let mut pad = [0u8; 420 << 10];
                std::hint::black_box(&mut pad);
                for _ in 0..60 {
                    let ran_on = &ran_on;
                    s.task().affinity(footprint(&on0)).spawn(move |s| {
                        ran_on.lock().unwrap().push(s.node());
                        std::thread::sleep(Duration::from_millis(20));
                    });
                }
                s.taskgroup(|g| {
                    g.task().affinity(footprint(&on1)).spawn(|s| {
                        assert_eq!(s.node(), 1);
                        std::thread::sleep(Duration::from_millis(100));
                    });
                });
                std::hint::black_box(&mut pad);
            });
        });
        let ran_on = ran_on.into_inner().unwrap();
        assert_eq!(ran_on.len(), 60);
        assert!(
            ran_on.iter().all(|&n| n == 0),
            "node-0 tasks ran on other nodes with vicinity 10: {ran_on:?}"
        );
    });
}

#[test]
fn a_waiter_short_of_stack_wakes_for_a_descendant_dealt_to_its_node() {
    preset_process();
    within(120, || {
        // Worker 6 is node 1's only worker: short of stack, it waits for a child on node 0,
        // which deals a grandchild back to node 1 (below the steal threshold, so node 0
        // leaves it there) and waits for it. The grandchild may arrive just as worker 6
        // goes to sleep: its last look must cover its own node's queue. Repeated, with the
        // child's delay varied, to cross that window; a lost wake-up hangs and `within`
        // reports it.
        let rt = small_stack_runtime(7, None);
        let (on0, on1) = (chunk_on(0), chunk_on(1));
        for rounds in 0..300u64 {
            let delay = Duration::from_nanos(150_000 + (rounds * 997) % 150_000);
            let (on0, on1) = (&on0, &on1);
            rt.scope(|s| {
                s.task().affinity(footprint(on1)).spawn(move |s| {
                    assert_eq!(s.node(), 1);
                    let mut pad = [0u8; 420 << 10];
                    std::hint::black_box(&mut pad);
                    let t0 = Instant::now();
                    s.task().affinity(footprint(on0)).spawn(move |s| {
                        while t0.elapsed() < delay {
                            std::hint::spin_loop();
                        }
                        s.task().affinity(footprint(on1)).spawn(|_| {});
                        s.taskwait();
                    });
                    s.taskwait();
                    std::hint::black_box(&mut pad);
                });
            });
        }
    });
}

#[test]
fn a_waiter_with_room_takes_its_descendant_set_aside_beyond_the_vicinity() {
    preset_process();
    within(60, || {
        // Worker 6, node 1's only worker, short of stack, waits for its child H on node 0.
        // H opens a nested scope (its tasks do not descend from worker 6's frame) and waits
        // in it for D, dealt to node 1. Worker 6 pops D, may not run it, and sets it aside
        // on node 1, beyond H's worker's vicinity: H's worker, with room, must still take
        // it, being what it waits for; nothing else could (worker 6 waits for H).
        let rt = small_stack_runtime(7, Some(10));
        let (on0, on1) = (chunk_on(0), chunk_on(1));
        let d_ran_on = Mutex::new(Vec::new());
        for _ in 0..20 {
            let (on0, on1, d_ran_on) = (&on0, &on1, &d_ran_on);
            rt.scope(|s| {
                s.task().affinity(footprint(on1)).spawn(move |s| {
                    assert_eq!(s.node(), 1);
                    let mut pad = [0u8; 420 << 10];
                    std::hint::black_box(&mut pad);
                    s.task().affinity(footprint(on0)).spawn(move |_| {
                        numatask_sched::scope(|inner| {
                            inner.task().affinity(footprint(on1)).spawn(move |d| {
                                d_ran_on.lock().unwrap().push(d.node());
                            });
                        });
                    });
                    s.taskwait();
                    std::hint::black_box(&mut pad);
                });
            });
        }
        let d_ran_on = d_ran_on.into_inner().unwrap();
        assert_eq!(d_ran_on.len(), 20);
    });
}

#[test]
fn nothing_is_stolen_across_a_distance_beyond_the_vicinity() {
    preset_process();
    // Vicinity 10: only a worker's own node. Node 1 is at distance 16 from node 0.
    let outcome = within(120, || steal_test(Some(10), 20, 0));
    assert_eq!(
        outcome.stolen, 0,
        "stolen across distance 16 with vicinity 10"
    );
}

/// The nodes whose workers ran 240 footprint-free tasks of 1 ms spawned by one scope body,
/// and the node of the worker that ran the body.
fn nodes_running_spawned_tasks(rt: &Runtime) -> (usize, Vec<usize>) {
    let nodes = Mutex::new(std::collections::BTreeSet::new());
    let home = rt.scope(|s| {
        for _ in 0..240 {
            let nodes = &nodes;
            s.spawn(move |s| {
                nodes.lock().unwrap().insert(s.node());
                std::thread::sleep(Duration::from_millis(1));
            });
        }
        s.node()
    });
    (home, nodes.into_inner().unwrap().into_iter().collect())
}

#[test]
fn tasks_without_footprints_are_stolen_across_nodes_without_a_vicinity() {
    preset_process();
    within(120, || {
        // Workers on two nodes: footprint-free tasks live in deques, which every worker may
        // steal from without a threshold.
        let rt = locality_runtime(12, None);
        assert_eq!(rt.scope(|s| common::fib(s, 18)), common::fib_seq(18));
        let (_, nodes) = nodes_running_spawned_tasks(&rt);
        assert_eq!(
            nodes,
            vec![0, 1],
            "both nodes' workers ran footprint-free tasks"
        );
    });
}

#[test]
fn no_task_is_stolen_from_a_deque_beyond_the_vicinity() {
    preset_process();
    within(120, || {
        // Vicinity 10: a worker steals from its own node only, deques included. The scope
        // body is injected (any worker may take it); what it spawns stays on its node.
        let rt = locality_runtime(12, Some(10));
        assert_eq!(rt.scope(|s| common::fib(s, 18)), common::fib_seq(18));
        for _ in 0..3 {
            let (home, nodes) = nodes_running_spawned_tasks(&rt);
            assert_eq!(
                nodes,
                vec![home],
                "tasks spawned on node {home} ran on other nodes with vicinity 10"
            );
        }
        // Vicinity 16 reaches node 1 from node 0 (distance 16): both nodes run them again.
        let rt = locality_runtime(12, Some(16));
        let (_, nodes) = nodes_running_spawned_tasks(&rt);
        assert_eq!(
            nodes,
            vec![0, 1],
            "vicinity 16 lets node 0 and node 1 share tasks"
        );
    });
}

#[test]
fn random_dependent_tasks_dealt_by_their_footprints_see_exactly_their_predecessors_writes() {
    use common::random_program::{CELLS, program, run_on};
    use std::sync::atomic::AtomicU32;
    preset_process();
    // Cells of 10 pages, interleaved page by page over the 8 nodes (fine): a range of k cells
    // is 10k pages, uneven over the nodes unless 8 divides 10k, and the larger footprints
    // exceed LLC / C: under the paper's exact test (an even tolerance of 0) Algorithm 1 deals
    // those to the node of least cost, the others stay in deques; workers on two nodes take
    // from node queues and steal across, above the thresholds. The oracle is the one
    // `depend_runtime.rs` checks work stealing against.
    let stride = 10 * numatask_alloc::page_size() / 4;
    let memory = NumaVec::<AtomicU32>::zeroed(CELLS * stride, numatask_alloc::Distribution::Fine)
        .expect("40 MiB");
    let specs = program(0x5EED_0003, 30_000, 0);
    let (observed, message, dealt) = within(300, move || {
        let rt = Runtime::builder()
            .topology(preset())
            .scheduler(SchedulerKind::Locality)
            .num_threads(12)
            .proc_bind(false)
            .trace_summary(true)
            .even_tolerance(0.0)
            .build()
            .expect("runtime starts");
        let (observed, message) = run_on(&specs, &rt, &memory, stride);
        let dealt = rt
            .tracer()
            .expect("tracing")
            .records()
            .iter()
            .filter(|r| matches!(r.queue, QueueChoice::Node { .. }))
            .count();
        (observed, message, dealt)
    });
    assert_eq!(message, None, "no task panicked");
    assert_eq!(
        observed.wrong.load(Ordering::Relaxed),
        0,
        "tasks saw stamps other than their predecessors'"
    );
    assert!(
        observed.ran.iter().all(|r| r.load(Ordering::Relaxed)),
        "every task ran"
    );
    assert!(
        dealt > 1000,
        "only {dealt} of 30000 tasks were dealt to node queues"
    );
}

#[test]
fn display_env_shows_the_locality_thresholds_and_the_vicinity() {
    preset_process();
    let rt = locality_runtime(2, Some(16));
    let shown = rt.display_env();
    for line in [
        "  NUMATASK_SCHEDULER = 'locality'",
        "  NUMATASK_VICINITY = '16'",
        "  NUMATASK_EVEN_TOLERANCE = '0.1'",
        "  numatask.locality.footprint_threshold = '873813B (LLC / 6 cores sharing it)'",
        "  numatask.locality.steal_thresholds = 'distance 16: more than 9 tasks'",
    ] {
        assert!(shown.contains(line), "missing {line:?} in\n{shown}");
    }
    // A topology without caches: the threshold is 0, and the line says why.
    let bare = numatask_alloc::TopologyBuilder::synthetic("numa:2 core:1 pu:1")
        .build()
        .expect("synthetic topology");
    assert_eq!(bare.llc_bytes(), 0);
    let rt = Runtime::builder()
        .topology(Arc::new(bare))
        .scheduler(SchedulerKind::Locality)
        .num_threads(2)
        .proc_bind(false)
        .even_tolerance(0.0)
        .build()
        .unwrap();
    let shown = rt.display_env();
    assert!(shown.contains("  NUMATASK_EVEN_TOLERANCE = '0'"), "{shown}");
    let line = "  numatask.locality.footprint_threshold = '0B (the topology reports no cache: \
                every footprint uneven beyond the even tolerance is dealt)'";
    assert!(shown.contains(line), "missing {line:?} in\n{shown}");
    let rt = Runtime::builder()
        .topology(preset())
        .num_threads(1)
        .proc_bind(false)
        .build()
        .unwrap();
    let shown = rt.display_env();
    assert!(shown.contains("  NUMATASK_VICINITY = 'all'"), "{shown}");
    assert!(!shown.contains("numatask.locality"), "{shown}");
}

#[test]
fn tasks_for_a_node_without_workers_take_turns_among_the_equally_near_staffed_nodes() {
    preset_process();
    // Twelve workers: nodes 0 and 1 only. Node 4 is at distance 16 from both.
    let topo = preset();
    assert_eq!(topo.distance(0, 4), topo.distance(1, 4));
    within(60, || {
        let rt = traced_locality_runtime(12);
        let (on1, on4) = (chunk_on(1), chunk_on(4));
        rt.scope(|s| {
            // Dealt to node 1, whose worker spawns the tasks below: a node without workers
            // does not send all of its tasks to the spawner's node (or the lowest), but to
            // each of the staffed nodes at the least cost in turn.
            s.task().affinity(footprint(&on1)).spawn(|s| {
                for _ in 0..8 {
                    s.task()
                        .label("least cost")
                        .affinity(footprint(&on4))
                        .spawn(|_| {});
                }
                for _ in 0..8 {
                    let marked = Footprint::of(&on4).intensive();
                    s.task().label("intensive").affinity(marked).spawn(|_| {});
                }
                s.taskwait();
            });
        });
        let records = rt.tracer().expect("tracing").records();
        for (label, intensive) in [("least cost", false), ("intensive", true)] {
            let mut dealt = [0usize; 8];
            for r in records.iter().filter(|r| r.label == label) {
                let QueueChoice::Node { node, reason } = r.queue else {
                    panic!("{label}: dealt to a node's queue, not {:?}", r.queue);
                };
                assert_eq!(
                    reason,
                    DealReason::Unstaffed {
                        chosen: 4,
                        intensive
                    },
                    "{label}"
                );
                dealt[node] += 1;
            }
            assert_eq!(dealt, [4, 4, 0, 0, 0, 0, 0, 0], "{label}");
        }
    });
}

/// The value of [`tree`] for `seed` and `depth`, computed sequentially.
fn tree_size(seed: u64, depth: u32) -> u64 {
    if depth == 0 {
        return 1;
    }
    let (h, fan, _) = tree_shape(seed);
    1 + (0..fan)
        .map(|i| tree_size(h.wrapping_add(i as u64 * 0x9E37), depth - 1))
        .sum::<u64>()
}

/// `(hash, fan-out, operation)` of a tree node.
fn tree_shape(seed: u64) -> (u64, usize, u64) {
    let mut h = seed.wrapping_add(0x9E37_79B9_7F4A_7C15);
    h = (h ^ (h >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    h = (h ^ (h >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    h ^= h >> 31;
    let op = (h >> 8) % 5;
    let fan = if op == 2 { 2 } else { 2 + (h % 3) as usize };
    (h, fan, op)
}

/// A random tree of tasks mixing every way of spawning and waiting: tasks with footprints on
/// random nodes and a taskwait, a taskgroup, `join`, a nested scope, result handles; some
/// tasks one level below the top take [`PAD`] of a [`STACK`], so that the workers that wait in
/// them are short of stack. Returns the number of tree nodes that ran.
fn tree<'scope>(
    s: &numatask_sched::Scope<'scope>,
    seed: u64,
    depth: u32,
    chunks: &'scope [NumaVec<u8>],
) -> u64 {
    tree_node(s, seed, depth, chunks, true)
}

/// A node of [`tree`]; `may_pad`: false for the two sides of a `join`, where the task side may
/// run on top of the inline side, both of the program's own nesting, whose stack two pads
/// would exceed.
fn tree_node<'scope>(
    s: &numatask_sched::Scope<'scope>,
    seed: u64,
    depth: u32,
    chunks: &'scope [NumaVec<u8>],
    may_pad: bool,
) -> u64 {
    if depth == 0 {
        return 1;
    }
    let (h, fan, op) = tree_shape(seed);
    let child = move |i: usize| h.wrapping_add(i as u64 * 0x9E37);
    let on = |i: usize| footprint(&chunks[((h >> 20) as usize ^ i) % chunks.len()]);
    let body = || -> u64 {
        let sum = Arc::new(AtomicUsize::new(0));
        let adder = || {
            let sum = Arc::clone(&sum);
            move |v: u64| {
                sum.fetch_add(v as usize, Ordering::Relaxed);
            }
        };
        match op {
            0 => {
                for i in 0..fan {
                    let add = adder();
                    s.task()
                        .affinity(on(i))
                        .spawn(move |s| add(tree(s, child(i), depth - 1, chunks)));
                }
                s.taskwait();
            }
            1 => s.taskgroup(|g| {
                for i in 0..fan {
                    let add = adder();
                    g.task()
                        .affinity(on(i))
                        .spawn(move |s| add(tree(s, child(i), depth - 1, chunks)));
                }
            }),
            2 => {
                let (a, b) = s.join(
                    |s| tree_node(s, child(0), depth - 1, chunks, false),
                    |s| tree_node(s, child(1), depth - 1, chunks, false),
                );
                adder()(a + b);
            }
            3 => {
                let adders: Vec<_> = (0..fan).map(|_| adder()).collect();
                numatask_sched::scope(|inner| {
                    for (i, add) in adders.into_iter().enumerate() {
                        inner
                            .task()
                            .affinity(on(i))
                            .spawn(move |s| add(tree(s, child(i), depth - 1, chunks)));
                    }
                });
            }
            _ => {
                let handles: Vec<_> = (0..fan)
                    .map(|i| {
                        s.task()
                            .spawn_with_result(move |s| tree(s, child(i), depth - 1, chunks))
                    })
                    .collect();
                let add = adder();
                handles.into_iter().for_each(|h| add(h.join()));
            }
        }
        1 + sum.load(Ordering::Relaxed) as u64
    };
    if may_pad && depth == TREE_DEPTH - 1 && (h >> 16) % 3 == 0 {
        on_padded_stack(body)
    } else {
        body()
    }
}

/// Runs `f` with [`PAD`] more of the stack in use. Out of line: a pad in `tree`'s own frame
/// would take the stack of every call, padded or not.
#[inline(never)]
fn on_padded_stack(f: impl FnOnce() -> u64) -> u64 {
    let mut pad = [0u8; PAD];
    std::hint::black_box(&mut pad);
    let n = f();
    std::hint::black_box(&mut pad);
    n
}

const TREE_DEPTH: u32 = 5;

/// Worker stacks of the tree test.
const STACK: usize = 2048 << 10;

/// Stack a padded task takes: more than three quarters of [`STACK`], so that its worker is
/// short of stack, and less than what a worker not yet padded has free in this program (its
/// frames without a pad stay below 50 KiB): a waiter with room may steal a padded task, and
/// the runtime guarantees it only a quarter of its stack, not the 1.6 MiB the task takes.
const PAD: usize = 1600 << 10;

#[test]
fn random_trees_of_nested_spawns_and_waits_finish_under_every_policy_short_of_stack_or_not() {
    preset_process();
    within(240, || {
        let chunks: Vec<NumaVec<u8>> = (0..8).map(chunk_on).collect();
        for (kind, vicinity, workers) in [
            (SchedulerKind::Locality, Some(10), 7),
            (SchedulerKind::Locality, Some(16), 13),
            (SchedulerKind::Locality, None, 7),
            (SchedulerKind::WorkStealing, None, 7),
        ] {
            let rt = Runtime::builder()
                .topology(preset())
                .scheduler(kind)
                .num_threads(workers)
                .proc_bind(false)
                .vicinity(vicinity)
                .stack_size(STACK)
                .build()
                .expect("runtime starts");
            for seed in 0..300u64 {
                let chunks = &chunks;
                let ran = rt.scope(|s| tree(s, seed, TREE_DEPTH, chunks));
                assert_eq!(
                    ran,
                    tree_size(seed, TREE_DEPTH),
                    "{kind:?} vicinity {vicinity:?}, {workers} workers, seed {seed}"
                );
            }
        }
    });
}

#[test]
fn a_zipped_loop_runs_where_most_of_its_operands_live() {
    preset_process();
    within(120, || {
        let rt = locality_runtime(24, None);
        // The output on node 1, two inputs as large on node 3: every part's footprint is
        // two thirds on node 3, so the loop runs there (its output alone would place it on
        // node 1, as `taskloop_mut` does in the test below).
        let mut a = NumaVec::<u8>::zeroed(16 << 20, Place::OnNode(1)).expect("node 1");
        let b = NumaVec::<u8>::filled(16 << 20, 1, Place::OnNode(3)).expect("node 3");
        let c = NumaVec::<u8>::filled(16 << 20, 2, Place::OnNode(3)).expect("node 3");
        let nodes = Mutex::new(Vec::new());
        rt.scope(|s| {
            s.taskloop_zip(&mut a, [&b, &c], Grain::Tasks(8), |s, _, a, [b, c]| {
                nodes.lock().unwrap().push(s.node());
                for ((a, b), c) in a.iter_mut().zip(b).zip(c) {
                    *a = b + c;
                }
            });
        });
        assert_eq!(nodes.into_inner().unwrap(), vec![3; 8]);
        assert!(a.iter().all(|&x| x == 3));
        // Inputs of two types, as a tuple, the larger on node 2: placed by both as well.
        let wide = NumaVec::<u32>::filled(16 << 20, 4, Place::OnNode(2)).expect("node 2");
        let nodes = Mutex::new(Vec::new());
        rt.scope(|s| {
            s.taskloop_zip(
                &mut a,
                (&b, &wide),
                Grain::Tasks(8),
                |s, _, a, (b, wide)| {
                    nodes.lock().unwrap().push(s.node());
                    for ((a, b), &w) in a.iter_mut().zip(b).zip(wide) {
                        *a = b + w as u8;
                    }
                },
            );
        });
        assert_eq!(nodes.into_inner().unwrap(), vec![2; 8]);
        assert!(a.iter().all(|&x| x == 5));
    });
}

#[test]
fn a_taskloop_over_a_vector_on_node_k_runs_every_chunk_on_node_k() {
    preset_process();
    within(120, || {
        let rt = locality_runtime(24, None);
        for node in [1, 3] {
            // 16 MiB in 8 chunks of 2 MiB: every task of the loop holds at least one chunk,
            // above the footprint threshold (5 MiB / 6), and node `node`'s queue never holds
            // more than the steal thresholds (9 and up).
            let mut v = NumaVec::<u8>::zeroed(16 << 20, Place::OnNode(node))
                .expect("allocation on a preset node");
            let nodes = Mutex::new(Vec::new());
            rt.scope(|s| {
                s.taskloop_mut(&mut v, Grain::Tasks(8), |s, _, chunk| {
                    nodes.lock().unwrap().push(s.node());
                    chunk.fill(1);
                });
            });
            let nodes = nodes.into_inner().unwrap();
            assert_eq!(
                nodes,
                vec![node; 8],
                "the chunks of a loop over node {node}'s data"
            );
            assert!(v.iter().all(|&x| x == 1));
            // A loop that only reads the vector is placed the same way, and so is a
            // reduction over it.
            let nodes = Mutex::new(Vec::new());
            let sum = rt.scope(|s| {
                s.taskloop_slice(&v, Grain::Tasks(8), |s, _, _| {
                    nodes.lock().unwrap().push(s.node())
                });
                s.taskloop_reduce_slice(
                    &v,
                    Grain::Tasks(8),
                    || 0u64,
                    |s, _, chunk| {
                        nodes.lock().unwrap().push(s.node());
                        chunk.iter().map(|&x| u64::from(x)).sum()
                    },
                    |a, b| a + b,
                )
            });
            assert_eq!(sum, 16 << 20);
            assert_eq!(
                nodes.into_inner().unwrap(),
                vec![node; 16],
                "the chunks of read-only loops over node {node}'s data"
            );
        }
    });
}

#[test]
fn an_asymmetric_matrix_bounds_steals_by_the_thiefs_distance_to_the_victim() {
    preset_process();
    within(60, || {
        // Node 0 reaches node 1's data at 30 (beyond the vicinity), node 1 node 0's at 12.
        let asymmetric = numatask_alloc::TopologyBuilder::synthetic("pack:3 numa:1 core:2 pu:1")
            .distances(vec![10, 30, 20, 12, 10, 20, 20, 20, 10])
            .build()
            .expect("an asymmetric matrix is valid");
        let rt = Runtime::builder()
            .topology(Arc::new(asymmetric))
            .scheduler(SchedulerKind::Locality)
            .num_threads(6)
            .proc_bind(false)
            .vicinity(Some(20))
            .trace_summary(true)
            .build()
            .expect("runtime starts");
        let ran = AtomicUsize::new(0);
        rt.scope(|s| {
            for _ in 0..64 {
                s.spawn(|s| {
                    for _ in 0..64 {
                        s.spawn(|_| {
                            ran.fetch_add(1, Ordering::Relaxed);
                        });
                    }
                });
            }
        });
        assert_eq!(ran.into_inner(), 64 * 64);
        let records = rt.tracer().expect("tracing").records();
        for r in &records {
            assert!(
                r.stolen_distance.is_none_or(|d| d <= 20),
                "stolen across {:?} by a worker of node {}",
                r.stolen_distance,
                r.node
            );
        }
        let summary = rt.finish_trace().expect("tracing").expect("no file");
        assert!(
            !summary.steals_by_distance.contains_key(&30),
            "{:?}",
            summary.steals_by_distance
        );
    });
}

#[test]
fn a_small_intensive_access_still_decides_the_node() {
    preset_process();
    within(60, || {
        let rt = locality_runtime(48, None);
        // 64 KiB on node 6: far below the footprint threshold (5 MiB / 6), which alone would
        // keep the task on the spawner's deque; the intensive mark must send it to node 6.
        let hot = NumaVec::<u8>::zeroed(64 << 10, Place::OnNode(6)).unwrap();
        let on0 = chunk_on(0);
        let seen = Mutex::new(Vec::new());
        let spawner = AtomicUsize::new(usize::MAX);
        rt.scope(|s| {
            // The spawner runs on node 0 (its footprint is there), off node 6.
            s.task().affinity(footprint(&on0)).spawn(|s| {
                spawner.store(s.node(), Ordering::SeqCst);
                for _ in 0..8 {
                    let access = Footprint::of(&hot).intensive();
                    let seen = &seen;
                    s.task()
                        .affinity(access)
                        .spawn(move |s| seen.lock().unwrap().push(s.node()));
                }
                s.taskwait();
            });
        });
        assert_eq!(
            spawner.load(Ordering::SeqCst),
            0,
            "the spawner ran on node 0"
        );
        let nodes = seen.into_inner().unwrap();
        assert_eq!(
            nodes,
            vec![6; 8],
            "every task ran on the intensive access's node"
        );
    });
}
