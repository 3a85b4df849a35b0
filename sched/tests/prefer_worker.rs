//! `TaskBuilder::prefer_worker`: a task runs on the worker it prefers when that worker is
//! free, and on another one when it is busy, under both policies.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Barrier};
use std::time::Duration;

mod common;

use common::within;
use numatask_alloc::{Preset, Topology};
use numatask_sched::__internals::LocalityModel;
use numatask_sched::trace::QueueChoice;
use numatask_sched::{Runtime, SchedulerKind, WaitPolicy, current_worker};

const WORKERS: usize = 4;

/// A traced runtime whose idle workers never sleep (`active`): an idle worker is free, and
/// gets what prefers it, whenever a test spawns it (a sleeping one may lose it to a worker
/// awake, which is the clause's rule, not what these tests pin down).
fn runtime(kind: SchedulerKind, workers: usize) -> Runtime {
    Runtime::builder()
        .num_threads(workers)
        .proc_bind(false)
        .scheduler(kind)
        .wait_policy(WaitPolicy::Active)
        .trace_summary(true)
        .build()
        .expect("runtime starts")
}

/// The index of the worker running the caller.
fn here() -> usize {
    current_worker().expect("runs on a worker").index
}

/// Waits, yielding, until `flag` is set.
fn until(flag: &AtomicBool) {
    while !flag.load(Ordering::SeqCst) {
        std::thread::yield_now();
    }
}

#[test]
fn tasks_preferring_each_idle_worker_run_on_it() {
    for kind in SchedulerKind::ALL {
        let ran_on = within(60, move || {
            let rt = runtime(kind, WORKERS);
            // Each task waits for all of them, so no worker runs two: were one taken by
            // another worker, its owner would have to run someone else's.
            let all_started = Barrier::new(WORKERS);
            let ran_on = rt.scope(|s| {
                let body = s.worker_index();
                // The body's own worker last: every other worker's task is then in its
                // mailbox before the body's worker has one that anyone could take.
                let order = (0..WORKERS).filter(|&w| w != body).chain([body]);
                let tasks: Vec<_> = order
                    .map(|w| {
                        let all_started = &all_started;
                        let task = s.task().prefer_worker(w).spawn_with_result(move |_| {
                            all_started.wait();
                            here()
                        });
                        (w, task)
                    })
                    .collect();
                let mut ran_on = vec![usize::MAX; WORKERS];
                for (w, task) in tasks {
                    ran_on[w] = task.join();
                }
                ran_on
            });
            let records = rt.tracer().expect("traced").records();
            let preferred: Vec<(usize, usize)> = records
                .iter()
                .filter_map(|r| match r.queue {
                    QueueChoice::Preferred { worker } => Some((worker, r.worker)),
                    _ => None,
                })
                .collect();
            assert_eq!(preferred.len(), WORKERS, "{kind}: traced as preferred");
            assert!(
                preferred.iter().all(|&(wanted, ran)| wanted == ran),
                "{kind}: {preferred:?}"
            );
            ran_on
        });
        assert_eq!(ran_on, (0..WORKERS).collect::<Vec<_>>(), "{kind}");
    }
}

#[test]
fn a_task_preferring_a_busy_worker_runs_on_another_one() {
    for kind in SchedulerKind::ALL {
        within(60, move || {
            let rt = runtime(kind, 2);
            let (held, release) = (AtomicBool::new(false), AtomicBool::new(false));
            let (busy, ran_on) = rt.scope(|s| {
                let busy = 1 - s.worker_index();
                let (held, release) = (&held, &release);
                // The other worker, idle, takes the holder and stays in it.
                s.task().prefer_worker(busy).spawn(move |_| {
                    assert_eq!(here(), busy, "an idle worker runs what prefers it");
                    held.store(true, Ordering::SeqCst);
                    until(release);
                });
                until(held);
                let task = s.task().prefer_worker(busy).spawn_with_result(|_| here());
                // This worker, waiting, takes it: its preferred worker is busy until then.
                let ran_on = task.join();
                release.store(true, Ordering::SeqCst);
                (busy, ran_on)
            });
            assert_ne!(
                ran_on, busy,
                "{kind}: ran beside the busy worker, not after it"
            );
        });
    }
}

#[test]
fn a_task_preferring_a_sleeping_worker_wakes_it() {
    for kind in SchedulerKind::ALL {
        within(60, move || {
            // Idle workers sleep at once.
            let rt = Runtime::builder()
                .num_threads(2)
                .proc_bind(false)
                .scheduler(kind)
                .wait_policy(WaitPolicy::Passive)
                .build()
                .expect("runtime starts");
            let ran = AtomicBool::new(false);
            let (other, ran_on) = rt.scope(|s| {
                let other = 1 - s.worker_index();
                let task = s.task().prefer_worker(other).spawn_with_result(|_| {
                    ran.store(true, Ordering::SeqCst);
                    here()
                });
                // This worker stays busy: only the other one, woken, can run it.
                until(&ran);
                (other, task.join())
            });
            assert_eq!(ran_on, other, "{kind}");
        });
    }
}

#[test]
fn a_task_preferring_its_spawner_is_taken_by_an_idle_worker_when_the_spawner_stays_busy() {
    for kind in SchedulerKind::ALL {
        within(60, move || {
            let rt = runtime(kind, 2);
            let ran = AtomicBool::new(false);
            let ran_on = AtomicUsize::new(usize::MAX);
            let spawner = rt.scope(|s| {
                let spawner = s.worker_index();
                s.task().prefer_worker(spawner).spawn(|_| {
                    ran_on.store(here(), Ordering::SeqCst);
                    ran.store(true, Ordering::SeqCst);
                });
                // Kept for the spawner a while, then taken by the idle worker: the spawner
                // never waits in the runtime until it ran.
                until(&ran);
                spawner
            });
            assert_ne!(ran_on.into_inner(), spawner, "{kind}");
        });
    }
}

#[test]
fn an_index_out_of_range_is_ignored() {
    for kind in SchedulerKind::ALL {
        let rt = runtime(kind, 2);
        let sum = rt.scope(|s| {
            let tasks: Vec<_> = (0..8)
                .map(|i| {
                    s.task()
                        .prefer_worker(usize::MAX - i)
                        .spawn_with_result(move |_| i)
                })
                .collect();
            tasks.into_iter().map(|t| t.join()).sum::<usize>()
        });
        assert_eq!(sum, 28, "{kind}");
        let records = rt.tracer().expect("traced").records();
        assert!(
            records
                .iter()
                .all(|r| !matches!(r.queue, QueueChoice::Preferred { .. })),
            "{kind}: no mailbox used"
        );
    }
}

#[test]
fn a_priority_outranks_a_preference() {
    let rt = Runtime::builder()
        .num_threads(2)
        .proc_bind(false)
        .max_task_priority(3)
        .trace_summary(true)
        .build()
        .expect("runtime starts");
    rt.scope(|s| {
        s.task()
            .priority(2)
            .prefer_worker(1)
            .label("both")
            .spawn(|_| {});
    });
    let records = rt.tracer().expect("traced").records();
    let both = records.iter().find(|r| r.label == "both").expect("traced");
    assert_eq!(both.queue, QueueChoice::Priority { priority: 2 });
}

#[test]
fn dependent_tasks_released_by_a_completion_still_go_to_the_worker_they_prefer() {
    use numatask_sched::data::Blocks;
    for kind in SchedulerKind::ALL {
        let rt = runtime(kind, WORKERS);
        let mut v = vec![0usize; 1];
        let target = rt.scope(|s| {
            let blocks = Blocks::new(&mut v, 1).expect("blocks");
            let target = (s.worker_index() + 1) % WORKERS;
            // A chain: each link is released when the one before completes.
            for _ in 0..WORKERS {
                s.task()
                    .updates(&blocks[0])
                    .prefer_worker(target)
                    .label("link")
                    .spawn(|_, (b,)| b[0] += 1)
                    .expect("valid accesses");
            }
            target
        });
        assert_eq!(v[0], WORKERS, "{kind}");
        let records = rt.tracer().expect("traced").records();
        let links: Vec<QueueChoice> = records
            .iter()
            .filter(|r| r.label == "link")
            .map(|r| r.queue)
            .collect();
        assert_eq!(
            links,
            vec![QueueChoice::Preferred { worker: target }; WORKERS],
            "{kind}"
        );
    }
}

/// The preset's seven workers: 0 to 5 on node 0, 6 on node 1 (places fill one node first),
/// never asleep.
fn two_node_locality_runtime() -> Runtime {
    Runtime::builder()
        .topology(Arc::new(
            Topology::preset(Preset::Opteron6172).expect("the preset builds"),
        ))
        .scheduler(SchedulerKind::Locality)
        .num_threads(7)
        .proc_bind(false)
        .wait_policy(WaitPolicy::Active)
        .build()
        .expect("runtime starts")
}

/// Under the locality-aware policy a task preferring a busy worker counts as dealt to its
/// node: a worker of another node takes such tasks only while that node's mailboxes hold
/// more than Algorithm 2's threshold for stealing from its queue. One thief on node 0, every
/// other worker busy (the scope body's, spinning; a driver; the others held), node 1's only
/// worker among them: the thief must take exactly the tasks above the threshold.
#[test]
fn under_the_locality_policy_another_nodes_worker_takes_a_busy_workers_tasks_only_above_the_threshold()
 {
    const POSTED: usize = 20;
    let threshold = within(120, || {
        let rt = two_node_locality_runtime();
        let nodes: Vec<usize> = rt.workers().iter().map(|p| p.node).collect();
        assert_eq!(
            nodes,
            [0, 0, 0, 0, 0, 0, 1],
            "the preset has 6 cores per node"
        );
        let threshold = LocalityModel::new(rt.topology(), None)
            .steal_order(0)
            .iter()
            .find(|c| c.node == 1)
            .expect("node 1 is a candidate of node 0")
            .threshold;
        assert!(threshold < POSTED);
        let held = AtomicUsize::new(0);
        let (release, done) = (AtomicBool::new(false), AtomicBool::new(false));
        let taken_on_node_0 = AtomicUsize::new(0);
        let ran_on_6 = AtomicUsize::new(0);
        let taken_after_pause = rt.scope(|s| {
            // Roles by the body's worker, which stays busy here (it spins: a waiting worker
            // would take tasks): the driver and the thief on node 0, everyone else held.
            let body = s.worker_index();
            let mut node_0 = (0..6).filter(|&w| w != body);
            let driver = node_0.next().expect("a driver");
            let thief = node_0.next_back().expect("a thief");
            let holders: Vec<usize> = (0..7)
                .filter(|w| ![body, driver, thief].contains(w))
                .collect();
            let (held, release, done) = (&held, &release, &done);
            let (taken, ran_on_6) = (&taken_on_node_0, &ran_on_6);
            let driver = s.task().prefer_worker(driver).spawn_with_result(move |s| {
                assert_eq!(here(), driver, "the driver runs on its idle worker");
                for &w in &holders {
                    s.task().prefer_worker(w).spawn(move |_| {
                        assert_eq!(here(), w, "a holder runs on its idle worker");
                        held.fetch_add(1, Ordering::SeqCst);
                        until(release);
                    });
                }
                while held.load(Ordering::SeqCst) < holders.len() {
                    std::thread::yield_now();
                }
                for _ in 0..POSTED {
                    s.task().prefer_worker(6).spawn(move |s| {
                        if s.node() == 0 {
                            assert_eq!(here(), thief);
                            taken.fetch_add(1, Ordering::SeqCst);
                        } else {
                            ran_on_6.fetch_add(1, Ordering::SeqCst);
                        }
                    });
                }
                // No deadline for the takes the threshold allows (`within` reports a hang);
                // then a pause in which a take beyond it would show.
                while taken.load(Ordering::SeqCst) < POSTED - threshold {
                    std::thread::yield_now();
                }
                std::thread::sleep(Duration::from_millis(200));
                let after_pause = taken.load(Ordering::SeqCst);
                release.store(true, Ordering::SeqCst);
                done.store(true, Ordering::SeqCst);
                after_pause
            });
            until(done);
            driver.join()
        });
        assert_eq!(
            taken_after_pause,
            POSTED - threshold,
            "node 0 took only what was above the threshold"
        );
        assert_eq!(
            ran_on_6.into_inner(),
            threshold,
            "the rest waited for worker 6"
        );
        threshold
    });
    assert_eq!(threshold, 9, "distance 16 x 6 cores / 10");
}
