//! Task priorities (OpenMP's `priority` clause, honoured up to `OMP_MAX_TASK_PRIORITY`).

mod common;

use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use common::{fib_seq, within};
use numatask_sched::data::Blocks;
use numatask_sched::trace::QueueChoice;
use numatask_sched::{BuildError, DependError, Runtime, RuntimeBuilder, SchedulerKind, Scope};

fn builder(workers: usize, max_priority: u32) -> RuntimeBuilder {
    Runtime::builder()
        .num_threads(workers)
        .proc_bind(false)
        .max_task_priority(max_priority)
}

/// The order in which one worker runs tasks spawned with `priorities` by the scope body (the
/// body runs on that worker, so nothing starts before it waits at its end).
/// The same under both scheduling policies (a priority outranks where a task would be
/// dealt), or the test fails.
fn run_order(max_priority: u32, priorities: &[u32]) -> Vec<usize> {
    let orders: Vec<Vec<usize>> = SchedulerKind::ALL
        .iter()
        .map(|&kind| {
            let rt = builder(1, max_priority)
                .scheduler(kind)
                .build()
                .expect("runtime starts");
            let order = Mutex::new(Vec::new());
            rt.scope(|s| {
                for (i, &p) in priorities.iter().enumerate() {
                    let order = &order;
                    s.task()
                        .priority(p)
                        .spawn(move |_| order.lock().unwrap().push(i));
                }
            });
            order.into_inner().unwrap()
        })
        .collect();
    assert!(orders.windows(2).all(|w| w[0] == w[1]), "{orders:?}");
    orders.into_iter().next().expect("two policies")
}

#[test]
fn higher_priorities_run_first_and_equal_ones_in_spawn_order() {
    within(60, || {
        // Priorities 2, 5, 0, 5, 1, 0: the two 5s in spawn order, then 2, then 1, then the
        // ordinary tasks (from the worker's deque, newest first).
        assert_eq!(run_order(9, &[2, 5, 0, 5, 1, 0]), [1, 3, 0, 4, 5, 2]);
    });
}

#[test]
fn priorities_are_ignored_when_the_maximum_is_zero_and_capped_at_it_otherwise() {
    within(60, || {
        // OMP_MAX_TASK_PRIORITY=0 (the default): every task is ordinary, run newest first.
        assert_eq!(run_order(0, &[2, 5, 0, 5, 1]), [4, 3, 2, 1, 0]);
        // A maximum of 2: priorities 5 and 3 count as 2, so the three run in spawn order.
        assert_eq!(run_order(2, &[5, 0, 2, 3, 1]), [0, 2, 3, 4, 1]);
    });
}

#[test]
fn ready_dependent_tasks_wait_for_their_priority_on_one_worker() {
    within(60, || {
        // One worker, four independent dependent tasks, ready when spawned: on a runtime that
        // honours priorities they wait in line like independent tasks with a priority (rather
        // than running at once, as a ready task does on one worker otherwise) and run
        // highest first; without priorities, each runs as it is spawned.
        for (max, expected) in [(10, [1, 3, 2, 0]), (0, [0, 1, 2, 3])] {
            for kind in SchedulerKind::ALL {
                let rt = builder(1, max)
                    .scheduler(kind)
                    .build()
                    .expect("runtime starts");
                let mut data = vec![0u64; 4];
                let order = Mutex::new(Vec::new());
                rt.scope(|s| {
                    let blocks = Blocks::new(&mut data, 1)?;
                    for (i, p) in [1, 9, 3, 7].into_iter().enumerate() {
                        let order = &order;
                        s.task()
                            .updates(&blocks[i])
                            .priority(p)
                            .spawn(move |_, (b,)| {
                                b[0] = 1;
                                order.lock().unwrap().push(i);
                            })?;
                    }
                    Ok::<(), DependError>(())
                })
                .expect("distinct regions");
                assert_eq!(data, [1; 4]);
                assert_eq!(
                    order.into_inner().unwrap(),
                    expected,
                    "{kind}, maximum {max}"
                );
            }
        }
    });
}

#[test]
fn released_dependent_tasks_run_in_priority_order_on_the_worker_that_released_them() {
    within(60, || {
        // Two workers (with one and no priorities honoured, a task ready when spawned runs at
        // once, undeferred). The scope body keeps one of them until the last reader ran, so
        // the other alone takes the writer (from the body's deque), releases the three
        // readers together when it completes (it waits until they are registered), and runs
        // them: those with a priority from the pool's list, highest first, then the ordinary
        // one from its deque.
        let rt = builder(2, 4).build().expect("runtime starts");
        for _ in 0..20 {
            let mut data = vec![0u64; 64];
            let order = Mutex::new(Vec::new());
            let registered = AtomicBool::new(false);
            let all_ran = AtomicBool::new(false);
            rt.scope(|s| {
                let blocks = Blocks::new(&mut data, 64)?;
                let (order, registered, all_ran) = (&order, &registered, &all_ran);
                s.task().updates(&blocks[0]).spawn(move |_, (b,)| {
                    while !registered.load(Ordering::Acquire) {
                        std::hint::spin_loop();
                    }
                    b[0] = 1;
                })?;
                for (name, p) in [("low", 0), ("high", 3), ("mid", 1)] {
                    s.task()
                        .reads(&blocks[0])
                        .priority(p)
                        .spawn(move |s, (b,)| {
                            assert_eq!(b[0], 1);
                            let mut order = order.lock().unwrap();
                            order.push((name, s.worker_index()));
                            if order.len() == 3 {
                                all_ran.store(true, Ordering::Release);
                            }
                        })?;
                }
                registered.store(true, Ordering::Release);
                while !all_ran.load(Ordering::Acquire) {
                    std::hint::spin_loop();
                }
                Ok::<(), DependError>(())
            })
            .expect("distinct regions");
            let order = order.into_inner().unwrap();
            let names: Vec<&str> = order.iter().map(|&(name, _)| name).collect();
            assert_eq!(names, ["high", "mid", "low"], "{order:?}");
            assert!(order.iter().all(|&(_, w)| w == order[0].1), "{order:?}");
        }
    });
}

fn fib_prioritized<'s>(s: &Scope<'s>, n: u64, total: &'s AtomicUsize) {
    if n < 2 {
        total.fetch_add(n as usize, Ordering::Relaxed);
        return;
    }
    s.task()
        .priority((n % 4) as u32)
        .spawn(move |s| fib_prioritized(s, n - 1, total));
    s.spawn(move |s| fib_prioritized(s, n - 2, total));
    s.taskwait();
}

#[test]
fn recursive_prioritized_tasks_complete_on_every_worker_count_and_short_of_stack() {
    within(120, || {
        for workers in [1, 2, 4] {
            let rt = builder(workers, 3).build().expect("runtime starts");
            let total = AtomicUsize::new(0);
            rt.scope(|s| fib_prioritized(s, 20, &total));
            assert_eq!(
                total.load(Ordering::Relaxed) as u64,
                fib_seq(20),
                "{workers}"
            );
        }
        // Waiting workers short of stack (less than a quarter free) take only descendants of
        // what they wait for, from the priority list too: one worker runs a chain whose 200
        // levels each hold 64 KiB of its 16 MiB stack while they wait (12.5 MiB in all), so
        // its last levels wait short of stack.
        let rt = builder(1, 3)
            .stack_size(16 << 20)
            .build()
            .expect("runtime starts");
        fn chain<'s>(s: &Scope<'s>, depth: u32, done: &'s AtomicUsize) {
            if depth > 0 {
                let mut pad = [depth as u8; 64 << 10];
                std::hint::black_box(&mut pad);
                s.task()
                    .priority(depth % 3)
                    .spawn(move |s| chain(s, depth - 1, done));
                s.spawn(move |_| {
                    done.fetch_add(1, Ordering::Relaxed);
                });
                s.taskwait();
                std::hint::black_box(&pad);
            }
        }
        let done = AtomicUsize::new(0);
        rt.scope(|s| chain(s, 200, &done));
        assert_eq!(done.load(Ordering::Relaxed), 200);
    });
}

#[test]
fn the_trace_names_the_priority_a_task_ran_with() {
    within(60, || {
        let rt = builder(1, 2)
            .trace_summary(true)
            .build()
            .expect("runtime starts");
        rt.scope(|s| {
            s.task().priority(7).spawn(|_| {});
            s.spawn(|_| {});
        });
        let tracer = rt.tracer().expect("tracing");
        let queues: Vec<QueueChoice> = tracer.records().iter().map(|r| r.queue).collect();
        assert!(
            queues.contains(&QueueChoice::Priority { priority: 2 }),
            "{queues:?}"
        );
        assert_eq!(
            queues
                .iter()
                .filter(|q| matches!(q, QueueChoice::Priority { .. }))
                .count(),
            1,
            "{queues:?}"
        );
    });
}

#[test]
fn the_maximum_comes_from_the_builder_and_is_bounded() {
    let rt = builder(1, 7).build().expect("runtime starts");
    assert_eq!(rt.settings().max_task_priority, 7);
    assert!(rt.display_env().contains("  OMP_MAX_TASK_PRIORITY = '7'"));
    // The largest C int is the largest maximum, as OpenMP's `omp_get_max_task_priority`
    // returns an int.
    let top = builder(1, i32::MAX as u32).build().expect("runtime starts");
    assert_eq!(top.settings().max_task_priority, i32::MAX as u32);
    match builder(1, i32::MAX as u32 + 1).build() {
        Err(BuildError::InvalidSetting { setting, .. }) => assert_eq!(setting, "max_task_priority"),
        other => panic!("expected InvalidSetting, got {other:?}"),
    }
}
