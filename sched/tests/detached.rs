//! Detached jobs (`Runtime::spawn`): a scope body the runtime runs without anyone waiting for
//! it, from any thread; its scope ends after its tasks, its panics stay in it, and dropping the
//! runtime waits for it.
//!
//! The panicking jobs below print their panics (the hook reports them, as for a detached
//! thread's): that output is expected.

mod common;

use std::cell::RefCell;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::mpsc::{self, Receiver, Sender};
use std::sync::{Arc, Barrier};
use std::time::Duration;

use common::{fib, fib_seq, within};
use numatask_sched::data::Blocks;
use numatask_sched::trace::QueueChoice;
use numatask_sched::{Footprint, Runtime, SchedulerKind, Scope};

/// How long a test waits for a message that must come (a hang fails rather than blocks).
const PATIENCE: Duration = Duration::from_secs(60);

fn builder(workers: usize, kind: SchedulerKind) -> numatask_sched::RuntimeBuilder {
    Runtime::builder()
        .num_threads(workers)
        .proc_bind(false)
        .scheduler(kind)
}

/// A runtime of `workers` workers under `kind`.
fn runtime_of(workers: usize, kind: SchedulerKind) -> Runtime {
    builder(workers, kind).build().expect("runtime starts")
}

/// Every scheduler, with one worker and with three.
fn configurations() -> impl Iterator<Item = (usize, SchedulerKind)> {
    [1, 3]
        .into_iter()
        .flat_map(|workers| SchedulerKind::ALL.map(|kind| (workers, kind)))
}

fn recv<T>(rx: &Receiver<T>) -> T {
    rx.recv_timeout(PATIENCE)
        .expect("the detached job reports within the test's patience")
}

/// Flags that jobs and tasks set, to be checked all set.
fn flags(n: usize) -> Arc<Vec<AtomicBool>> {
    Arc::new((0..n).map(|_| AtomicBool::new(false)).collect())
}

fn unset(flags: &[AtomicBool]) -> Vec<usize> {
    (0..flags.len())
        .filter(|&i| !flags[i].load(Ordering::SeqCst))
        .collect()
}

#[test]
fn the_body_runs_and_its_tasks_finish_before_its_completion_code() {
    within(120, || {
        for (workers, kind) in configurations() {
            let rt = runtime_of(workers, kind);
            let data: Arc<Vec<u64>> = Arc::new((0..1000).collect());
            let done = Arc::new(AtomicUsize::new(0));
            let (tx, rx) = mpsc::channel();
            {
                let done = Arc::clone(&done);
                rt.spawn(move |s| {
                    for part in 0..10 {
                        let (data, done) = (Arc::clone(&data), Arc::clone(&done));
                        let near = Footprint::of(&data[part * 100..][..100]);
                        s.task().affinity(near).spawn(move |s| {
                            // Grandchildren: a taskwait waits for descendants too.
                            for _ in 0..3 {
                                let done = Arc::clone(&done);
                                s.spawn(move |_| {
                                    std::thread::sleep(Duration::from_micros(200));
                                    done.fetch_add(1, Ordering::SeqCst);
                                });
                            }
                            let sum: u64 = data[part * 100..][..100].iter().sum();
                            assert_eq!(sum, (part as u64 * 100..part as u64 * 100 + 100).sum());
                            done.fetch_add(1, Ordering::SeqCst);
                        });
                    }
                    s.taskwait();
                    // The completion code: every task and grandchild has finished.
                    tx.send(done.load(Ordering::SeqCst))
                        .expect("the test waits");
                });
            }
            assert_eq!(recv(&rx), 40, "{workers} workers, {kind:?}");
            assert_eq!(done.load(Ordering::SeqCst), 40);
        }
    });
}

#[test]
fn spawn_returns_before_the_body_runs() {
    within(120, || {
        for (workers, kind) in configurations() {
            let rt = runtime_of(workers, kind);
            let (gate_tx, gate_rx) = mpsc::channel::<()>();
            let (done_tx, done_rx) = mpsc::channel();
            let ran = Arc::new(AtomicBool::new(false));
            let ran_in_job = Arc::clone(&ran);
            rt.spawn(move |s| {
                // Held until the test opens the gate, which it does only once `spawn`
                // returned: a `spawn` that waited for the body would never return.
                gate_rx.recv().expect("the test opens the gate");
                ran_in_job.store(true, Ordering::SeqCst);
                let h = s.task().spawn_with_result(|s| fib(s, 12));
                done_tx.send(h.join()).expect("the test waits");
            });
            assert!(
                !ran.load(Ordering::SeqCst),
                "the body ran before the gate opened"
            );
            gate_tx.send(()).expect("the job waits at the gate");
            assert_eq!(recv(&done_rx), fib_seq(12));
            assert!(ran.load(Ordering::SeqCst));
        }
    });
}

#[test]
fn many_jobs_from_many_threads_each_run_once() {
    const THREADS: usize = 4;
    const JOBS: usize = 1000;
    within(240, || {
        for (workers, kind) in configurations() {
            let rt = runtime_of(workers, kind);
            let runs: Arc<Vec<AtomicUsize>> =
                Arc::new((0..THREADS * JOBS).map(|_| AtomicUsize::new(0)).collect());
            let (tx, rx) = mpsc::channel();
            std::thread::scope(|ts| {
                for t in 0..THREADS {
                    let (rt, runs, tx) = (&rt, Arc::clone(&runs), tx.clone());
                    ts.spawn(move || {
                        for j in 0..JOBS {
                            let (runs, tx) = (Arc::clone(&runs), tx.clone());
                            rt.spawn(move |s| {
                                let i = t * JOBS + j;
                                // Half the jobs count in a task of their own.
                                if i.is_multiple_of(2) {
                                    s.spawn(move |_| {
                                        runs[i].fetch_add(1, Ordering::SeqCst);
                                    });
                                    s.taskwait();
                                } else {
                                    runs[i].fetch_add(1, Ordering::SeqCst);
                                }
                                tx.send(i).expect("the test waits");
                            });
                        }
                    });
                }
            });
            drop(tx);
            let mut reported = vec![0usize; THREADS * JOBS];
            for _ in 0..THREADS * JOBS {
                reported[recv(&rx)] += 1;
            }
            assert!(
                reported.iter().all(|&n| n == 1),
                "{workers} workers, {kind:?}"
            );
            let counts: Vec<usize> = runs.iter().map(|r| r.load(Ordering::SeqCst)).collect();
            assert!(
                counts.iter().all(|&n| n == 1),
                "{workers} workers, {kind:?}"
            );
            drop(rt);
            // Nothing ran a second time meanwhile.
            assert!(runs.iter().all(|r| r.load(Ordering::SeqCst) == 1));
        }
    });
}

#[test]
fn spawn_from_a_task_and_from_a_detached_job_of_the_same_runtime() {
    within(120, || {
        for (workers, kind) in configurations() {
            let rt = Arc::new(runtime_of(workers, kind));
            let (tx, rx) = mpsc::channel();
            // From a task, which does not wait for the job: the job is held at a gate that the
            // task opens after `spawn` returned (with one worker, a `spawn` that ran the body
            // there and then would never return).
            rt.scope(|s| {
                let (rt, tx) = (&rt, tx.clone());
                s.spawn(move |_| {
                    let (gate_tx, gate_rx) = mpsc::channel::<()>();
                    rt.spawn(move |s| {
                        gate_rx.recv().expect("the task opens the gate");
                        let n = s.task().spawn_with_result(|s| fib(s, 10)).join();
                        tx.send(("from a task", n)).expect("the test waits");
                    });
                    gate_tx.send(()).expect("the job waits at the gate");
                });
            });
            // From a detached job, which holds the runtime by an `Arc` and lets it go before
            // it reports, so that the test's is the last.
            {
                let (rt_in_job, tx) = (Arc::clone(&rt), tx.clone());
                rt.spawn(move |_| {
                    let inner_tx = tx.clone();
                    rt_in_job.spawn(move |s| {
                        inner_tx
                            .send(("from a job's job", fib(s, 11)))
                            .expect("the test waits");
                    });
                    drop(rt_in_job);
                    tx.send(("from a job", 0)).expect("the test waits");
                });
            }
            let mut got: Vec<_> = (0..3).map(|_| recv(&rx)).collect();
            got.sort();
            assert_eq!(
                got,
                [
                    ("from a job", 0),
                    ("from a job's job", 89),
                    ("from a task", 55)
                ],
                "{workers} workers, {kind:?}"
            );
            let rt = Arc::into_inner(rt).expect("the jobs let the runtime go");
            drop(rt);
        }
    });
}

#[test]
fn spawn_from_a_worker_of_another_runtime_does_not_wait() {
    within(120, || {
        for kind in SchedulerKind::ALL {
            let target = runtime_of(2, kind);
            let other = runtime_of(3, kind);
            let (gate_tx, gate_rx) = mpsc::channel::<()>();
            let (tx, rx) = mpsc::channel();
            other.scope(|s| {
                let target = &target;
                s.spawn(move |_| {
                    target.spawn(move |s| {
                        gate_rx.recv().expect("the test opens the gate");
                        // It runs on a worker of `target`, not of the runtime it came from.
                        let workers = numatask_sched::current_num_workers();
                        tx.send((workers, fib(s, 10))).expect("the test waits");
                    });
                });
            });
            // The other runtime's scope ended with the job still held at its gate.
            gate_tx.send(()).expect("the job waits at the gate");
            assert_eq!(recv(&rx), (Some(2), 55), "{kind:?}");
        }
    });
}

#[test]
fn a_panicking_job_leaves_the_runtime_usable() {
    within(120, || {
        for (workers, kind) in configurations() {
            let rt = runtime_of(workers, kind);
            let siblings = flags(4);
            // The body panics after spawning tasks: they still run.
            {
                let siblings = Arc::clone(&siblings);
                rt.spawn(move |s| {
                    for i in 0..2 {
                        let siblings = Arc::clone(&siblings);
                        s.spawn(move |_| siblings[i].store(true, Ordering::SeqCst));
                    }
                    panic!("a detached body panics (expected)");
                });
            }
            // A task panics, and nothing waits for it but the end of the job's scope; its
            // siblings still run.
            {
                let siblings = Arc::clone(&siblings);
                rt.spawn(move |s| {
                    s.spawn(|_| panic!("a task of a detached job panics (expected)"));
                    for i in 2..4 {
                        let siblings = Arc::clone(&siblings);
                        s.spawn(move |_| siblings[i].store(true, Ordering::SeqCst));
                    }
                });
            }
            // A dependent task cancelled behind a panicking one: the cancellation reaches the
            // end of the job's scope and stops there too.
            let cancelled_ran = Arc::new(AtomicBool::new(false));
            {
                let cancelled_ran = Arc::clone(&cancelled_ran);
                rt.spawn(move |s| {
                    let data: &'static mut [u64] = Box::leak(vec![0u64; 4].into_boxed_slice());
                    let blocks = Blocks::new(data, 2).expect("blocks");
                    s.task()
                        .updates(&blocks[0])
                        .spawn(|_, _| panic!("a dependent task panics (expected)"))
                        .expect("spawned");
                    s.task()
                        .reads(&blocks[0])
                        .spawn(move |_, _| cancelled_ran.store(true, Ordering::SeqCst))
                        .expect("spawned");
                });
            }
            // Later jobs run, and so do scopes.
            let (tx, rx) = mpsc::channel();
            rt.spawn(move |s| {
                tx.send(s.task().spawn_with_result(|s| fib(s, 10)).join())
                    .expect("the test waits");
            });
            assert_eq!(recv(&rx), 55, "{workers} workers, {kind:?}");
            assert_eq!(rt.scope(|s| fib(s, 10)), 55);
            // Every job finished (a panicking one too, or the drop would not return), and
            // the panicking bodies' tasks ran.
            drop(rt);
            assert_eq!(
                unset(&siblings),
                [] as [usize; 0],
                "{workers} workers, {kind:?}"
            );
            assert!(
                !cancelled_ran.load(Ordering::SeqCst),
                "a cancelled task ran"
            );
        }
    });
}

#[test]
fn dropping_the_runtime_waits_for_queued_and_running_jobs() {
    within(120, || {
        for (workers, kind) in configurations() {
            let rt = runtime_of(workers, kind);
            const JOBS: usize = 8;
            const TASKS: usize = 5;
            let set = flags(JOBS * (TASKS + 1));
            let (started_tx, started_rx) = mpsc::channel();
            let gate = Arc::new(Barrier::new(2));
            // The first job holds a worker until the gate opens; the other jobs are queued
            // behind it (with one worker) or run beside it. Each sets its flag and its tasks'
            // (not waited for by a taskwait: the job's scope end waits for them) late.
            for job in 0..JOBS {
                let (set, started_tx, gate) =
                    (Arc::clone(&set), started_tx.clone(), Arc::clone(&gate));
                rt.spawn(move |s| {
                    if job == 0 {
                        started_tx.send(()).expect("the test waits");
                        gate.wait();
                    }
                    for t in 0..TASKS {
                        let set = Arc::clone(&set);
                        s.spawn(move |_| {
                            std::thread::sleep(Duration::from_millis(2));
                            set[job * (TASKS + 1) + 1 + t].store(true, Ordering::SeqCst);
                        });
                    }
                    std::thread::sleep(Duration::from_millis(2));
                    set[job * (TASKS + 1)].store(true, Ordering::SeqCst);
                });
            }
            recv(&started_rx);
            // The gate opens a while after the drop began (most likely: a drop that starts
            // late only makes the test weaker, never wrong).
            let opener = {
                let gate = Arc::clone(&gate);
                std::thread::spawn(move || {
                    std::thread::sleep(Duration::from_millis(50));
                    gate.wait();
                })
            };
            drop(rt);
            assert_eq!(unset(&set), [] as [usize; 0], "{workers} workers, {kind:?}");
            opener.join().expect("the opener returns");
        }
    });
}

/// The worker thread that set it exits (its thread-locals are destroyed): the sender drops.
struct ExitReport(#[allow(dead_code)] Sender<()>);

thread_local! {
    static ON_EXIT: RefCell<Option<ExitReport>> = const { RefCell::new(None) };
}

#[test]
fn a_runtime_dropped_in_its_own_job_stops_after_its_last_job() {
    within(120, || {
        for kind in SchedulerKind::ALL {
            let rt = Arc::new(runtime_of(1, kind));
            let (events_tx, events_rx) = mpsc::channel();
            let (exit_tx, exit_rx) = mpsc::channel::<()>();
            let (gate_tx, gate_rx) = mpsc::channel::<()>();
            {
                let (rt_in_job, events_tx) = (Arc::clone(&rt), events_tx.clone());
                rt.spawn(move |_| {
                    ON_EXIT.with(|e| *e.borrow_mut() = Some(ExitReport(exit_tx)));
                    gate_rx.recv().expect("the test opens the gate");
                    let later_tx = events_tx.clone();
                    rt_in_job.spawn(move |s| {
                        let n = s.task().spawn_with_result(|s| fib(s, 8)).join();
                        later_tx.send(("later job ran", n)).expect("the test waits");
                    });
                    // The last `Arc`: the runtime is dropped here, on its only worker, inside
                    // this job. It must neither wait for this job nor stop the worker
                    // before the job queued above ran.
                    drop(rt_in_job);
                    events_tx.send(("dropped", 0)).expect("the test waits");
                });
            }
            drop(rt);
            gate_tx.send(()).expect("the job waits at the gate");
            assert_eq!(recv(&events_rx), ("dropped", 0), "{kind:?}");
            assert_eq!(recv(&events_rx), ("later job ran", 21), "{kind:?}");
            // Then the worker stops and its thread exits.
            assert_eq!(
                exit_rx.recv_timeout(PATIENCE),
                Err(mpsc::RecvTimeoutError::Disconnected),
                "{kind:?}"
            );
        }
    });
}

#[test]
fn the_static_scope_has_every_construct() {
    within(120, || {
        for (workers, kind) in configurations() {
            let rt = runtime_of(workers, kind);
            let (tx, rx) = mpsc::channel();
            let input: Arc<Vec<u64>> = Arc::new((1..=64).collect());
            rt.spawn(move |s: &Scope<'static>| {
                let total = Arc::new(AtomicUsize::new(0));
                // Tasks with an affinity, a taskgroup, a result, a taskwait.
                s.taskgroup(|g| {
                    for part in 0..4 {
                        let (input, total) = (Arc::clone(&input), Arc::clone(&total));
                        g.task()
                            .affinity(Footprint::of(&input[part * 16..][..16]))
                            .spawn(move |_| {
                                let sum: u64 = input[part * 16..][..16].iter().sum();
                                total.fetch_add(sum as usize, Ordering::SeqCst);
                            });
                    }
                });
                let grouped = total.load(Ordering::SeqCst);
                let fib9 = s.task().spawn_with_result(|s| fib(s, 9));
                s.taskwait();
                let fib9 = fib9.join();
                // Dependent tasks on `'static` data, straight on the job's scope.
                let chain: &'static mut [u64] = Box::leak(vec![1u64; 8].into_boxed_slice());
                let blocks = Blocks::new(chain, 2).expect("blocks");
                for i in 1..blocks.len() {
                    s.task()
                        .reads(&blocks[i - 1])
                        .updates(&blocks[i])
                        .spawn(|_, (prev, this)| this[0] += prev[0])
                        .expect("spawned");
                }
                s.taskwait();
                let last = blocks.len() - 1;
                let chained = s
                    .task()
                    .reads(&blocks[last])
                    .spawn_with_result(|_, (b,)| b[0])
                    .expect("spawned")
                    .join();
                // Dependent tasks on data the body owns, in a scope of its own.
                let mut owned = vec![1u64; 8];
                numatask_sched::scope(|s| {
                    let blocks = Blocks::new(&mut owned, 2).expect("blocks");
                    for i in 1..blocks.len() {
                        s.task()
                            .reads(&blocks[i - 1])
                            .updates(&blocks[i])
                            .spawn(|_, (prev, this)| this[0] += prev[0])
                            .expect("spawned");
                    }
                });
                tx.send((grouped, fib9, chained, owned[6]))
                    .expect("the test waits");
            });
            assert_eq!(
                recv(&rx),
                ((1..=64).sum::<usize>(), 34, 4, 4),
                "{workers} workers, {kind:?}"
            );
        }
    });
}

#[test]
fn a_detached_jobs_tasks_are_traced_and_finish_trace_waits_for_them() {
    within(120, || {
        for kind in SchedulerKind::ALL {
            let rt = builder(2, kind)
                .trace_summary(true)
                .build()
                .expect("runtime starts");
            let (tx, rx) = mpsc::channel();
            rt.spawn(move |s| {
                for _ in 0..6 {
                    s.task().label("detached child").spawn(|_| {
                        std::thread::sleep(Duration::from_millis(1));
                    });
                }
                s.taskwait();
                tx.send(()).expect("the test waits");
                // Still running when the test calls `finish_trace`, most likely.
                std::thread::sleep(Duration::from_millis(20));
            });
            recv(&rx);
            rt.finish_trace()
                .expect("tracing")
                .expect("no file to write");
            let records = rt.tracer().expect("tracing").records();
            let children = records
                .iter()
                .filter(|r| r.label == "detached child")
                .count();
            assert_eq!(children, 6, "{kind:?}");
            let jobs = records
                .iter()
                .filter(|r| r.queue == QueueChoice::Injected)
                .count();
            assert_eq!(jobs, 1, "the job's body is traced as an injected task");
            // `finish_trace` from outside the pool waited for the job's body to end.
            assert!(records.iter().all(|r| r.end_ns.is_some()), "{kind:?}");
        }
    });
}

#[test]
fn a_runtime_dropped_by_a_task_that_its_job_waits_for_stops_after_the_job() {
    within(120, || {
        for kind in SchedulerKind::ALL {
            let rt = Arc::new(runtime_of(2, kind));
            let (exit_tx, exit_rx) = mpsc::channel::<()>();
            let (gate_tx, gate_rx) = mpsc::channel::<()>();
            let (done_tx, done_rx) = mpsc::channel();
            let last = Arc::new(std::sync::Mutex::new(Some(Arc::clone(&rt))));
            rt.spawn(move |s| {
                gate_rx.recv().expect("the test opens the gate");
                let body_worker = s.worker_index();
                // Two tasks that meet at a barrier run on the two workers: the one beside
                // the body's worker drops the runtime while the body waits for it.
                let meet = Arc::new(Barrier::new(2));
                for _ in 0..2 {
                    let (meet, last, exit_tx) =
                        (Arc::clone(&meet), Arc::clone(&last), exit_tx.clone());
                    s.spawn(move |s| {
                        ON_EXIT.with(|e| *e.borrow_mut() = Some(ExitReport(exit_tx)));
                        meet.wait();
                        if s.worker_index() != body_worker {
                            let rt = last.lock().expect("not poisoned").take();
                            drop(rt);
                        }
                    });
                }
                drop(exit_tx);
                s.taskwait();
                done_tx
                    .send(last.lock().expect("not poisoned").is_none())
                    .expect("the test waits");
            });
            drop(rt);
            gate_tx.send(()).expect("the job waits at the gate");
            assert!(
                recv(&done_rx),
                "the runtime was dropped by a task, {kind:?}"
            );
            // Both workers stop and exit once the job ended.
            assert_eq!(
                exit_rx.recv_timeout(PATIENCE),
                Err(mpsc::RecvTimeoutError::Disconnected),
                "{kind:?}"
            );
        }
    });
}
