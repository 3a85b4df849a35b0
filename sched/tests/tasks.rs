//! Scoped tasks: borrowing, nesting, taskwait, taskgroup, results, entering the runtime.

mod common;

use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::thread;
use std::time::Duration;

use common::{fib, fib_seq, runtime, runtime_with_stack, within};
use numatask_sched::{Runtime, Scope};

#[test]
fn tasks_borrow_and_write_the_callers_stack() {
    let rt = runtime(2);
    let data: Vec<u64> = (0..10_000).collect();
    let mut sums = [0u64; 10];
    rt.scope(|s| {
        for (chunk, sum) in data.chunks(1000).zip(sums.iter_mut()) {
            s.spawn(move |_| *sum = chunk.iter().sum());
        }
    });
    for (i, (chunk, sum)) in data.chunks(1000).zip(sums).enumerate() {
        assert_eq!(sum, chunk.iter().sum::<u64>(), "chunk {i}");
    }
}

/// Spawns a tree of `fanout^depth` leaves without any taskwait; each leaf counts itself.
fn tree<'s>(s: &Scope<'s>, depth: u32, fanout: u32, leaves: &'s AtomicUsize) {
    if depth == 0 {
        leaves.fetch_add(1, Ordering::Relaxed);
        return;
    }
    for _ in 0..fanout {
        s.spawn(move |s| tree(s, depth - 1, fanout, leaves));
    }
}

#[test]
fn scope_waits_for_every_task_at_any_depth() {
    for workers in [1, 2, 4] {
        let rt = runtime(workers);
        let leaves = AtomicUsize::new(0);
        rt.scope(|s| tree(s, 6, 4, &leaves));
        assert_eq!(leaves.load(Ordering::Relaxed), 4096, "{workers} workers");
    }
}

#[test]
fn taskwait_waits_for_the_children_spawned_so_far() {
    let rt = runtime(2);
    let done = [const { AtomicBool::new(false) }; 4];
    rt.scope(|s| {
        s.taskgroup(|s| {
            for flag in &done {
                s.spawn(move |_| {
                    thread::sleep(Duration::from_millis(5));
                    flag.store(true, Ordering::Relaxed);
                });
            }
            s.taskwait();
            assert!(done.iter().all(|f| f.load(Ordering::Relaxed)));
        });
    });
}

#[test]
fn taskwait_inside_a_task_waits_for_that_tasks_children() {
    let rt = runtime(4);
    let total = AtomicUsize::new(0);
    rt.scope(|s| {
        for _ in 0..8 {
            s.spawn(|s| {
                // The children cannot borrow this task's stack (they may outlive its body);
                // they share a counter instead, checked after the taskwait.
                let children = std::sync::Arc::new(AtomicUsize::new(0));
                for _ in 0..16 {
                    let c = children.clone();
                    s.spawn(move |_| {
                        thread::yield_now();
                        c.fetch_add(1, Ordering::Relaxed);
                    });
                }
                s.taskwait();
                assert_eq!(children.load(Ordering::Relaxed), 16);
                total.fetch_add(16, Ordering::Relaxed);
            });
        }
    });
    assert_eq!(total.load(Ordering::Relaxed), 128);
}

#[test]
fn taskgroup_waits_for_all_descendants_spawned_inside_it() {
    let rt = runtime(4);
    let leaves = AtomicUsize::new(0);
    rt.scope(|s| {
        s.taskgroup(|s| tree(s, 5, 3, &leaves));
        assert_eq!(leaves.load(Ordering::Relaxed), 243);
    });
}

#[test]
fn taskwait_inside_a_taskgroup_also_waits_for_the_tasks_earlier_children() {
    let rt = runtime(2);
    let before = AtomicBool::new(false);
    let inside = AtomicBool::new(false);
    rt.scope(|s| {
        s.spawn(|_| {
            thread::sleep(Duration::from_millis(10));
            before.store(true, Ordering::Relaxed);
        });
        s.taskgroup(|s| {
            s.spawn(|_| inside.store(true, Ordering::Relaxed));
            s.taskwait();
            assert!(inside.load(Ordering::Relaxed));
            assert!(before.load(Ordering::Relaxed));
        });
    });
}

#[test]
fn tasks_spawned_through_the_enclosing_scope_during_a_taskgroup_belong_to_it() {
    let rt = runtime(2);
    let mut data = vec![0u32; 4];
    let slow_done = AtomicBool::new(false);
    let dependent_done = AtomicBool::new(false);
    let nested_done = AtomicBool::new(false);
    rt.scope(|s| {
        let blocks = numatask_sched::data::Blocks::new(&mut data, 2).expect("blocks");
        s.taskgroup(|_g| {
            // Through `s`, not the group's scope: still members, as in OpenMP.
            s.spawn(|_| {
                thread::sleep(Duration::from_millis(50));
                slow_done.store(true, Ordering::Relaxed);
            });
            s.task()
                .writes(&blocks[0])
                .spawn(|_, (x,)| {
                    thread::sleep(Duration::from_millis(50));
                    x.fill(1);
                    dependent_done.store(true, Ordering::Relaxed);
                })
                .expect("spawn");
            // A group opened through `s` inside the group nests in it.
            s.taskgroup(|_| {
                s.spawn(|_| {
                    thread::sleep(Duration::from_millis(30));
                    nested_done.store(true, Ordering::Relaxed);
                });
            });
            assert!(
                nested_done.load(Ordering::Relaxed),
                "the inner group waited"
            );
        });
        assert!(
            slow_done.load(Ordering::Relaxed),
            "the group waited for s.spawn"
        );
        assert!(
            dependent_done.load(Ordering::Relaxed),
            "the group waited for s.task()"
        );
        // After the group, spawns through `s` are the task's own again.
        s.taskgroup(|_| ());
        s.spawn(|_| ());
        Ok::<(), numatask_sched::DependError>(())
    })
    .expect("scope");
    assert_eq!(data[..2], [1, 1]);
}

#[test]
fn results_come_out_of_tasks_through_handles() {
    for workers in [1, 2, 4] {
        let rt = runtime(workers);
        assert_eq!(rt.scope(|s| fib(s, 20)), fib_seq(20), "{workers} workers");
    }
}

#[test]
fn handle_join_without_taskwait_waits_for_that_task() {
    let rt = runtime(2);
    let v = rt.scope(|s| {
        let h = s.task().spawn_with_result(|s| {
            let inner = s.task().spawn_with_result(|_| {
                thread::sleep(Duration::from_millis(5));
                20
            });
            inner.join() + 1
        });
        h.join() * 2
    });
    assert_eq!(v, 42);
}

#[test]
fn dropping_a_handle_before_the_task_ends_is_harmless() {
    let rt = runtime(2);
    let ran = AtomicUsize::new(0);
    rt.scope(|s| {
        for _ in 0..100 {
            let h = s.task().spawn_with_result(|_| {
                ran.fetch_add(1, Ordering::Relaxed);
                vec![1u8; 64]
            });
            drop(h);
        }
    });
    assert_eq!(ran.load(Ordering::Relaxed), 100);
}

#[test]
fn join_returns_both_results_and_may_borrow_the_stack() {
    let rt = runtime(2);
    let v: Vec<u64> = (1..=1000).collect();
    let (left, right) = v.split_at(500);
    let (a, b) = rt.scope(|s| s.join(|_| left.iter().sum::<u64>(), |_| right.iter().sum::<u64>()));
    assert_eq!(a + b, 500_500);
}

fn fib_join(s: &Scope<'_>, n: u64) -> u64 {
    if n < 2 {
        return n;
    }
    let (a, b) = s.join(|s| fib_join(s, n - 1), |s| fib_join(s, n - 2));
    a + b
}

#[test]
fn recursive_join_computes_fib() {
    for workers in [1, 3] {
        let rt = runtime(workers);
        assert_eq!(rt.scope(|s| fib_join(s, 22)), fib_seq(22));
    }
}

fn fib_free_join(n: u64) -> u64 {
    if n < 2 {
        return n;
    }
    let (a, b) = numatask_sched::join(|| fib_free_join(n - 1), || fib_free_join(n - 2));
    a + b
}

#[test]
fn free_join_runs_in_the_callers_runtime_or_the_global_one() {
    within(60, || {
        // From a thread outside any pool: the global runtime.
        assert_eq!(fib_free_join(18), fib_seq(18));
        let (a, b) = numatask_sched::join(numatask_sched::current_worker, || 1);
        let global = Runtime::global();
        assert!(a.is_some_and(|w| w.index < global.num_workers()));
        assert_eq!(b, 1);
        // From a task: that task's runtime (told from the global one by its size), both
        // closures on its workers.
        let size = global.num_workers() + 1;
        let rt = runtime(size);
        let sizes = Mutex::new(Vec::new());
        let n = rt.scope(|_| {
            let record = || {
                let workers = numatask_sched::scope(|s| s.num_workers());
                sizes.lock().unwrap().push(workers);
            };
            let (x, ()) = numatask_sched::join(
                || {
                    record();
                    fib_free_join(15)
                },
                record,
            );
            x
        });
        assert_eq!(n, fib_seq(15));
        assert_eq!(
            sizes.into_inner().unwrap(),
            vec![size; 2],
            "runtimes the closures ran in"
        );
    });
}

#[test]
fn free_join_resumes_a_panic_and_the_runtime_goes_on() {
    let rt = runtime(2);
    rt.scope(|_| {
        let caught = std::panic::catch_unwind(|| numatask_sched::join(|| panic!("a fails"), || 2));
        let payload = caught.expect_err("a's panic reaches the caller");
        assert_eq!(payload.downcast_ref::<&str>(), Some(&"a fails"));
        let caught = std::panic::catch_unwind(|| {
            numatask_sched::join(|| 1, || -> u32 { panic!("b fails") })
        });
        let payload = caught.expect_err("b's panic reaches the caller");
        assert_eq!(payload.downcast_ref::<&str>(), Some(&"b fails"));
        assert_eq!(numatask_sched::join(|| 1, || 2), (1, 2));
    });
}

#[test]
fn defer_if_false_runs_the_closure_before_returning() {
    let rt = runtime(2);
    let ran = AtomicBool::new(false);
    let deferred = AtomicBool::new(false);
    rt.scope(|s| {
        s.taskgroup(|s| {
            s.task()
                .defer_if(false)
                .spawn(|_| ran.store(true, Ordering::Relaxed));
            assert!(
                ran.load(Ordering::Relaxed),
                "an undeferred task runs at once"
            );
        });
        s.taskgroup(|s| {
            s.task()
                .defer_if(true)
                .spawn(|_| deferred.store(true, Ordering::Relaxed))
        });
        assert!(deferred.load(Ordering::Relaxed));
    });
}

#[test]
fn full_deque_runs_spawned_tasks_inline() {
    let rt = Runtime::builder()
        .num_threads(1)
        .proc_bind(false)
        .deque_capacity(2)
        .build()
        .unwrap();
    let count = AtomicUsize::new(0);
    rt.scope(|s| {
        for i in 0..1000usize {
            s.spawn(|_| {
                count.fetch_add(1, Ordering::Relaxed);
            });
            // The only worker runs this body: no task can run meanwhile except inline, in
            // `spawn`, once the two slots of the deque are taken.
            assert_eq!(
                count.load(Ordering::Relaxed),
                (i + 1).saturating_sub(2),
                "after spawn {i}"
            );
        }
    });
    assert_eq!(count.load(Ordering::Relaxed), 1000);
}

#[test]
fn scope_entered_from_inside_a_task_does_not_deadlock() {
    within(120, || {
        for workers in [1, 2] {
            let rt = runtime(workers);
            let rt = &rt;
            let total = rt.scope(|s| {
                let hs: Vec<_> = (0..4)
                    .map(|_| {
                        s.task()
                            .spawn_with_result(move |_| rt.scope(|s| fib(s, 15)))
                    })
                    .collect();
                s.taskwait();
                hs.into_iter().map(|h| h.join()).sum::<u64>()
            });
            assert_eq!(total, 4 * fib_seq(15));
        }
    });
}

#[test]
fn many_outside_threads_can_enter_one_runtime_at_once() {
    within(120, || {
        let rt = runtime(2);
        thread::scope(|t| {
            for i in 0..4u64 {
                let rt = &rt;
                t.spawn(move || {
                    for _ in 0..10 {
                        assert_eq!(rt.scope(|s| fib(s, 12 + i)), fib_seq(12 + i));
                    }
                });
            }
        });
    });
}

#[test]
fn a_task_can_enter_another_runtime() {
    within(120, || {
        let outer = runtime(2);
        let inner = runtime(2);
        let v = outer.scope(|s| {
            let h = s.task().spawn_with_result(|_| inner.scope(|s| fib(s, 15)));
            s.taskwait();
            h.join()
        });
        assert_eq!(v, fib_seq(15));
    });
}

#[test]
fn scopes_of_two_runtimes_nested_in_each_other_do_not_deadlock() {
    // A task of `a` enters `b`, whose body enters `a` again. The worker of `a` that waits for
    // `b`'s scope must keep running `a`'s work, including the scope `b` injects back into
    // `a`: with one worker in `a`, a blocked wait could never end.
    within(120, || {
        for workers in [1, 2] {
            let a = runtime(workers);
            let b = runtime(1);
            let (a, b) = (&a, &b);
            let v = a.scope(|s| {
                let h = s
                    .task()
                    .spawn_with_result(move |_| b.scope(|_| a.scope(|s| fib(s, 12))));
                // With two workers the body's own worker waits here while the other runs the
                // task: it too must take what `b` injects.
                s.taskwait();
                h.join()
            });
            assert_eq!(v, fib_seq(12), "{workers} workers in a");
            // Three levels: a -> b -> a -> b.
            let v = a.scope(|_| b.scope(|_| a.scope(|_| b.scope(|s| fib(s, 10)))));
            assert_eq!(v, fib_seq(10));
        }
    });
}

/// Recurses `depth` frames of 8 KiB each, then calls `f`.
fn deep<R>(depth: usize, f: &mut dyn FnMut() -> R) -> R {
    let mut pad = [0u8; 8192];
    std::hint::black_box(&mut pad);
    let r = if depth == 0 { f() } else { deep(depth - 1, f) };
    std::hint::black_box(&pad);
    r
}

#[test]
fn a_worker_short_of_stack_that_enters_another_pool_still_takes_its_own_pools_scopes() {
    // With 200 KiB of its 256 KiB stack used, `a`'s only worker runs no unrelated task while
    // it waits for `b`'s scope; but `b`'s body enters `a` again, and only that worker can run
    // the scope it injects.
    within(60, || {
        let a = runtime_with_stack(1, 256 << 10);
        let b = runtime(1);
        let (a, b) = (&a, &b);
        let v = a.scope(|_| deep(25, &mut || b.scope(|_| a.scope(|_| 7u32))));
        assert_eq!(v, 7);
    });
}

#[test]
fn a_scope_injected_while_a_waiter_short_of_stack_sleeps_wakes_an_idle_worker() {
    // Three workers with small stacks. The scope body waits deep in its stack (short of stack:
    // it would run only its own descendants); its one child spins until another thread's
    // scope has run; the third worker is idle and asleep. That scope's wake-up must reach the
    // idle worker, not the waiter, which could not take it (`within` reports a stall).
    use std::sync::atomic::AtomicBool;
    within(120, || {
        for _ in 0..8 {
            let rt = runtime_with_stack(3, 256 << 10);
            let (started, go) = (AtomicBool::new(false), AtomicBool::new(false));
            thread::scope(|t| {
                let (rt, started, go) = (&rt, &started, &go);
                t.spawn(move || {
                    while !started.load(Ordering::SeqCst) {
                        thread::yield_now();
                    }
                    // Time for the waiter and the idle worker to fall asleep.
                    thread::sleep(Duration::from_millis(50));
                    rt.scope(|_| go.store(true, Ordering::SeqCst));
                });
                rt.scope(|s| {
                    s.spawn(move |_| {
                        started.store(true, Ordering::SeqCst);
                        while !go.load(Ordering::SeqCst) {
                            thread::yield_now();
                        }
                    });
                    deep(25, &mut || s.taskwait());
                });
            });
        }
    });
}

#[test]
fn the_global_scope_runs_tasks() {
    let v = numatask_sched::scope(|s| fib(s, 15));
    assert_eq!(v, fib_seq(15));
    // From inside a task, `scope` uses the task's own runtime (three workers here, as the
    // global runtime of the test machine does not have).
    let rt = runtime(3);
    let (nested, workers) = rt.scope(|_| numatask_sched::scope(|s| (fib(s, 10), s.num_workers())));
    assert_eq!(nested, fib_seq(10));
    assert_eq!(workers, 3);
}

#[test]
fn tasks_know_their_worker_and_node() {
    let rt = runtime(3);
    let seen = Mutex::new(Vec::new());
    rt.scope(|s| {
        for _ in 0..64 {
            s.spawn(|s| {
                let place = numatask_sched::current_worker().expect("tasks run on workers");
                assert_eq!(place.index, s.worker_index());
                assert_eq!(place.node, s.node());
                assert_eq!(s.num_workers(), 3);
                seen.lock().unwrap().push(place.index);
            });
        }
    });
    assert!(seen.into_inner().unwrap().iter().all(|&w| w < 3));
    assert_eq!(numatask_sched::current_worker(), None);
}

#[test]
fn tasks_with_a_footprint_run_under_work_stealing() {
    let rt = runtime(2);
    let mut blocks = vec![[0u8; 256]; 8];
    rt.scope(|s| {
        for (i, block) in blocks.iter_mut().enumerate() {
            let footprint = numatask_sched::Footprint::of(&block[..]);
            s.task()
                .affinity(footprint)
                .spawn(move |_| block.fill(i as u8));
        }
    });
    assert!(
        blocks
            .iter()
            .enumerate()
            .all(|(i, b)| b.iter().all(|&x| x == i as u8))
    );
}

/// Spawns a binary tree of `depth` levels, recording the worker and the thread of every task
/// and whether it ran in a final task.
/// A writer of block 0 that panics halfway, then a dependent update of block 0 that sets
/// `ran` if it runs.
fn writer_then_successor<'s>(s: &Scope<'s>, v: &'s mut [u32], ran: &'s AtomicBool) {
    use numatask_sched::data::Blocks;
    let b = Blocks::new(v, 4).expect("blocks");
    s.task()
        .writes(&b[0])
        .spawn(|_, (w,)| {
            w[0] = 1;
            panic!("the writer panics halfway");
        })
        .expect("spawn");
    s.task()
        .updates(&b[0])
        .spawn(move |_, (w,)| {
            w[0] += 1;
            ran.store(true, Ordering::SeqCst);
        })
        .expect("spawn");
}

/// What `record_tree` records per task.
type Seen = Mutex<Vec<(usize, thread::ThreadId, bool)>>;

fn record_tree<'s>(s: &Scope<'s>, depth: u32, seen: &'s Seen) {
    seen.lock()
        .unwrap()
        .push((s.worker_index(), thread::current().id(), s.in_final()));
    if depth == 0 {
        return;
    }
    for _ in 0..2 {
        s.spawn(move |s| record_tree(s, depth - 1, seen));
    }
    s.taskwait();
}

#[test]
fn tasks_spawned_in_a_final_task_run_inline_on_its_thread_at_any_depth() {
    within(60, || {
        let rt = runtime(4);
        for _ in 0..5 {
            let seen = Mutex::new(Vec::new());
            let ran_before_spawn_returned = AtomicBool::new(false);
            rt.scope(|s| {
                assert!(!s.in_final(), "a scope body is not final");
                s.task().final_if(true).spawn(|s| {
                    // An included child has run by the time `spawn` returns.
                    let flag = &ran_before_spawn_returned;
                    s.spawn(move |_| flag.store(true, Ordering::SeqCst));
                    assert!(flag.load(Ordering::SeqCst), "the child ran inline");
                    record_tree(s, 6, &seen);
                });
                // Meanwhile, the scope's other tasks are deferred as usual.
                s.spawn(|s| assert!(!s.in_final()));
            });
            let seen = seen.into_inner().unwrap();
            assert_eq!(seen.len(), 127, "every task of the tree ran");
            let (worker, thread, _) = seen[0];
            assert!(
                seen.iter()
                    .all(|&(w, t, fin)| w == worker && t == thread && fin),
                "the whole subtree ran in final tasks on one worker's thread"
            );
            assert!(ran_before_spawn_returned.load(Ordering::SeqCst));
        }
    });
}

#[test]
fn a_final_tasks_results_panics_and_dependences_behave_as_deferred_ones() {
    use numatask_sched::data::Blocks;
    within(60, || {
        let rt = runtime(2);
        // Results through handles, and dependent tasks in program order.
        let mut v = vec![1u64; 8];
        let (mut sum, mut fib_20) = (0, 0);
        rt.scope(|s| {
            s.task().final_if(true).spawn(|s| {
                fib_20 = s.task().spawn_with_result(|s| fib(s, 20)).join();
                let blocks = Blocks::new(&mut v, 2).expect("blocks");
                for i in 1..blocks.len() {
                    s.task()
                        .reads(&blocks[i - 1])
                        .updates(&blocks[i])
                        .spawn(|_, (prev, this)| this[0] += prev[0])
                        .expect("spawn");
                }
                sum = s.task().spawn_with_result(|_| 40 + 2).join();
            });
        });
        assert_eq!(fib_20, fib_seq(20));
        assert_eq!(v, [1, 1, 2, 1, 3, 1, 4, 1], "the chain ran in order");
        assert_eq!(sum, 42);
        // A panic of an included task resumes at the final task's taskwait, which catches it;
        // the runtime stays usable.
        let caught = AtomicBool::new(false);
        rt.scope(|s| {
            s.task().final_if(true).spawn(|s| {
                s.spawn(|_| panic!("included task panics"));
                let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| s.taskwait()));
                caught.store(r.is_err(), Ordering::SeqCst);
            });
        });
        assert!(
            caught.load(Ordering::SeqCst),
            "the panic reached the taskwait"
        );
        assert_eq!(rt.scope(|s| fib(s, 15)), fib_seq(15));
        // A dependent task after a writer that panicked is cancelled, included or deferred,
        // so it never sees the half-written block.
        for workers in [1, 2] {
            let rt = runtime(workers);
            for final_task in [false, true] {
                let mut v = vec![0u32; 8];
                let successor_ran = AtomicBool::new(false);
                let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                    rt.scope(|s| {
                        let (v, ran) = (&mut v, &successor_ran);
                        if final_task {
                            s.task()
                                .final_if(true)
                                .spawn(move |s| writer_then_successor(s, v, ran));
                        } else {
                            s.spawn(move |s| writer_then_successor(s, v, ran));
                        }
                    });
                }));
                assert!(result.is_err(), "the writer's panic reaches the scope end");
                assert!(
                    !successor_ran.load(Ordering::SeqCst),
                    "final={final_task}, {workers} workers: the successor was cancelled"
                );
            }
        }
    });
}
