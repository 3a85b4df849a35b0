//! Dependent tasks through the runtime: ordering among siblings, waiting for deferred children
//! (taskwait, taskgroup, scope end), panics in predecessors, one worker, and the safe data API's
//! refusals.

mod common;

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::thread;
use std::time::Duration;

use common::{TempPath, message, runtime, within};
use numatask_sched::__internals::CANCELLED;
use numatask_sched::DependError;
use numatask_sched::data::Blocks;
use numatask_sched::depend::{Access, AccessKind};

/// A chain of `n` updates of one block, each appending its index: the log must be in order.
fn chain_in_program_order(workers: usize, n: usize) {
    let rt = runtime(workers);
    let mut cell = vec![0u64; 4];
    let log = Mutex::new(Vec::new());
    rt.scope(|s| {
        let blocks = Blocks::new(&mut cell, 4).expect("blocks");
        for i in 0..n {
            let log = &log;
            s.task()
                .updates(&blocks[0])
                .spawn(move |_, (c,)| {
                    assert_eq!(c[0], i as u64, "task {i} saw its predecessor's write");
                    c[0] += 1;
                    log.lock().expect("log").push(i);
                })
                .expect("no conflict");
        }
    });
    assert_eq!(cell[0], n as u64);
    let log = log.into_inner().expect("log");
    assert_eq!(log, (0..n).collect::<Vec<_>>());
}

#[test]
fn a_chain_of_updates_runs_in_program_order_with_one_worker() {
    within(60, || chain_in_program_order(1, 2000));
}

#[test]
fn a_chain_of_updates_runs_in_program_order_with_several_workers() {
    within(60, || chain_in_program_order(3, 2000));
}

/// A chain of `links` updates of one block, each spawning two children that fill the deque:
/// the completion of each link releases the next while the deque is full.
fn chain_over_a_full_deque(workers: usize, capacity: usize, links: usize) {
    let rt = numatask_sched::Runtime::builder()
        .num_threads(workers)
        .proc_bind(false)
        .deque_capacity(capacity)
        .build()
        .expect("runtime");
    let mut cell = vec![0u64; 1];
    let children = AtomicUsize::new(0);
    rt.scope(|s| {
        let blocks = Blocks::new(&mut cell, 1).expect("blocks");
        for _ in 0..links {
            let children = &children;
            s.task()
                .updates(&blocks[0])
                .spawn(move |s, (c,)| {
                    c[0] += 1;
                    for _ in 0..2 {
                        s.spawn(move |_| {
                            children.fetch_add(1, Ordering::Relaxed);
                        });
                    }
                })
                .expect("no conflict");
        }
    });
    assert_eq!(cell[0], links as u64);
    assert_eq!(children.into_inner(), 2 * links);
}

#[test]
fn a_long_chain_released_into_a_full_deque_does_not_grow_the_stack() {
    // Run inline, each released link would nest inside its predecessor's completion: with
    // 100,000 links that overflowed the 2 MiB worker stack and aborted the process.
    within(120, || {
        for (workers, capacity) in [(1, 1), (2, 1), (2, 4096)] {
            chain_over_a_full_deque(workers, capacity, 100_000);
        }
    });
}

#[test]
fn a_task_released_into_a_full_deque_can_be_stolen_while_its_worker_runs_a_long_task() {
    // Two workers, deques of one slot. A fills its worker's deque with D, then its completion
    // releases B, for which the deque has no room. The worker then runs D, which waits (no
    // deadline) until B has run: only the other worker can run B, so B must be where thieves
    // look, not only in its releasing worker's overflow list (`within` reports the hang).
    within(60, || {
        let rt = numatask_sched::Runtime::builder()
            .num_threads(2)
            .proc_bind(false)
            .deque_capacity(1)
            .build()
            .expect("runtime");
        let mut cell = vec![0u64; 1];
        let (held, release, b_ran) = (
            AtomicBool::new(false),
            AtomicBool::new(false),
            AtomicBool::new(false),
        );
        rt.scope(|s| {
            let (held, release, b_ran) = (&held, &release, &b_ran);
            // Keeps the other worker away until D runs.
            s.spawn(move |_| {
                held.store(true, Ordering::SeqCst);
                while !release.load(Ordering::SeqCst) {
                    std::hint::spin_loop();
                }
            });
            while !held.load(Ordering::SeqCst) {
                std::hint::spin_loop();
            }
            let blocks = Blocks::new(&mut cell, 1).expect("blocks");
            s.task()
                .writes(&blocks[0])
                .spawn(move |s, (c,)| {
                    c[0] = 1;
                    s.spawn(move |_| {
                        release.store(true, Ordering::SeqCst);
                        while !b_ran.load(Ordering::SeqCst) {
                            std::hint::spin_loop();
                        }
                    });
                })
                .expect("spawn A");
            s.task()
                .reads(&blocks[0])
                .spawn(move |_, (c,)| {
                    assert_eq!(c[0], 1);
                    b_ran.store(true, Ordering::SeqCst);
                })
                .expect("spawn B");
        });
        assert!(b_ran.load(Ordering::SeqCst));
    });
}

#[test]
fn readers_run_concurrently_between_writers() {
    // Each reader waits, without a deadline, until the other one is inside too: if readers
    // of one block were ordered like writers, the second could never start while the first
    // waits, and `within` reports the hang.
    within(60, || {
        let rt = runtime(2);
        let mut data = vec![0u32; 64];
        let inside = AtomicUsize::new(0);
        let left = AtomicUsize::new(0);
        rt.scope(|s| {
            let blocks = Blocks::new(&mut data, 64).expect("blocks");
            s.task()
                .writes(&blocks[0])
                .spawn(|_, (d,)| d.fill(7))
                .expect("spawn");
            for _ in 0..2 {
                let (inside, left) = (&inside, &left);
                s.task()
                    .reads(&blocks[0])
                    .spawn(move |_, (d,)| {
                        assert!(d.iter().all(|&x| x == 7), "the writer ran first");
                        inside.fetch_add(1, Ordering::SeqCst);
                        while inside.load(Ordering::SeqCst) < 2 {
                            std::hint::spin_loop();
                        }
                        left.fetch_add(1, Ordering::SeqCst);
                    })
                    .expect("spawn");
            }
            let left = &left;
            s.task()
                .updates(&blocks[0])
                .spawn(move |_, (d,)| {
                    assert_eq!(left.load(Ordering::SeqCst), 2, "both readers ended first");
                    d.iter_mut().for_each(|x| *x += 1);
                })
                .expect("spawn");
        });
        assert!(data.iter().all(|&x| x == 8));
    });
}

#[test]
fn taskwait_waits_for_deferred_children() {
    within(60, || {
        let rt = runtime(2);
        let mut v = vec![0u64; 8];
        rt.scope(|s| {
            s.spawn(|s| {
                let blocks = Blocks::new(&mut v, 1).expect("blocks");
                for round in 0..50u64 {
                    for i in 1..8 {
                        s.task()
                            .reads(&blocks[i - 1])
                            .updates(&blocks[i])
                            .spawn(move |_, (prev, this)| this[0] = prev[0] + round)
                            .expect("spawn");
                    }
                    s.task()
                        .updates(&blocks[0])
                        .spawn(|_, (first,)| first[0] += 1)
                        .expect("spawn");
                }
                s.taskwait();
            });
        });
        // After round r: v[0] = r + 1 and v[i] = v[i - 1] as it was when task i ran.
        assert_eq!(v[0], 50);
        assert_eq!(v[1], 49 + 49);
        assert_eq!(v[7], 49 + 7 * 49);
    });
}

#[test]
fn taskwait_returns_only_after_the_last_dependent_child() {
    within(60, || {
        let rt = runtime(2);
        let done = AtomicUsize::new(0);
        let mut v = vec![0u8; 16];
        rt.scope(|s| {
            let blocks = Blocks::new(&mut v, 16).expect("blocks");
            for _ in 0..100 {
                let done = &done;
                s.task()
                    .updates(&blocks[0])
                    .spawn(move |_, _| {
                        done.fetch_add(1, Ordering::Relaxed);
                    })
                    .expect("spawn");
            }
            s.taskwait();
            assert_eq!(done.load(Ordering::Relaxed), 100);
        });
    });
}

#[test]
fn a_taskgroup_waits_for_its_dependent_tasks_which_follow_earlier_siblings() {
    within(60, || {
        let rt = runtime(2);
        let mut v = vec![0u64; 2];
        let slow_done = AtomicBool::new(false);
        rt.scope(|s| {
            let blocks = Blocks::new(&mut v, 1).expect("blocks");
            let slow_done = &slow_done;
            // Spawned before the group: the group's tasks still depend on it (siblings).
            s.task()
                .writes(&blocks[0])
                .spawn(move |_, (a,)| {
                    thread::sleep(Duration::from_millis(30));
                    a[0] = 10;
                    slow_done.store(true, Ordering::SeqCst);
                })
                .expect("spawn");
            s.taskgroup(|g| {
                g.task()
                    .reads(&blocks[0])
                    .writes(&blocks[1])
                    .spawn(|_, (a, b)| b[0] = a[0] + 1)
                    .expect("spawn");
            });
            // The group waited for its task, which waited for the writer.
            assert!(slow_done.load(Ordering::SeqCst));
        });
        assert_eq!(v, [10, 11]);
    });
}

#[test]
fn the_scope_end_waits_for_dependent_tasks() {
    within(60, || {
        let rt = runtime(2);
        let mut v = vec![0u32; 100];
        rt.scope(|s| {
            let blocks = Blocks::new(&mut v, 10).expect("blocks");
            for step in 0..10u32 {
                for b in &blocks {
                    s.task()
                        .updates(b)
                        .spawn(move |_, (x,)| x.iter_mut().for_each(|x| *x = *x * 2 + step))
                        .expect("spawn");
                }
            }
        });
        let expect = (0..10u32).fold(0u32, |x, step| x * 2 + step);
        assert!(v.iter().all(|&x| x == expect));
    });
}

#[test]
fn a_panic_cancels_the_dependent_tasks_and_resumes_at_taskwait() {
    within(60, || {
        let rt = runtime(2);
        let mut v = vec![0u32; 3];
        let ran = AtomicUsize::new(0);
        let after = rt.scope(|s| {
            let blocks = Blocks::new(&mut v, 1).expect("blocks");
            let ran = &ran;
            s.task()
                .writes(&blocks[0])
                .spawn(|_, _| panic!("writer failed"))
                .expect("spawn");
            // Depends on the panicking writer directly, then transitively.
            s.task()
                .reads(&blocks[0])
                .writes(&blocks[1])
                .spawn(move |_, _| {
                    ran.fetch_add(1, Ordering::SeqCst);
                })
                .expect("spawn");
            s.task()
                .reads(&blocks[1])
                .spawn(move |_, _| {
                    ran.fetch_add(1, Ordering::SeqCst);
                })
                .expect("spawn");
            // Independent of it.
            s.task()
                .writes(&blocks[2])
                .spawn(|_, (c,)| c[0] = 5)
                .expect("spawn");
            let first = catch_unwind(AssertUnwindSafe(|| s.taskwait()));
            assert_eq!(
                message(first.expect_err("the writer's panic resumes")),
                "writer failed"
            );
            assert_eq!(
                ran.load(Ordering::SeqCst),
                0,
                "dependent tasks were cancelled"
            );
            // The bytes stay poisoned: a later task on them is cancelled, and says so.
            s.task()
                .reads(&blocks[0])
                .spawn(move |_, _| {
                    ran.fetch_add(1, Ordering::SeqCst);
                })
                .expect("spawn");
            let second = catch_unwind(AssertUnwindSafe(|| s.taskwait()));
            message(second.expect_err("the cancellation is reported"))
        });
        assert_eq!(after, CANCELLED);
        assert_eq!(ran.load(Ordering::SeqCst), 0);
        assert_eq!(v[2], 5);
        // The runtime is still usable.
        assert_eq!(rt.scope(|s| s.task().spawn_with_result(|_| 3).join()), 3);
    });
}

#[test]
fn a_taskgroup_whose_task_was_cancelled_resumes_the_panic_that_cancelled_it() {
    within(60, || {
        for workers in [1, 2] {
            let rt = runtime(workers);
            let mut v = vec![0u32; 2];
            let (at_group, at_taskwait) = rt.scope(|s| {
                let blocks = Blocks::new(&mut v, 1).expect("blocks");
                s.task()
                    .writes(&blocks[0])
                    .spawn(|_, _| panic!("root cause"))
                    .expect("spawn");
                let group = catch_unwind(AssertUnwindSafe(|| {
                    s.taskgroup(|g| {
                        g.task()
                            .reads(&blocks[0])
                            .spawn(|_, _| unreachable!("cancelled"))
                            .expect("spawn");
                    })
                }));
                let at_taskwait = catch_unwind(AssertUnwindSafe(|| s.taskwait())).err();
                (
                    message(group.expect_err("the group ends in a panic")),
                    at_taskwait,
                )
            });
            assert_eq!(at_group, "root cause", "{workers} workers");
            assert!(
                at_taskwait.is_none(),
                "{workers} workers: the panic was resumed twice"
            );
        }
    });
}

#[test]
fn a_taskgroup_whose_body_panics_leaves_the_earlier_tasks_panic_for_the_next_taskwait() {
    within(60, || {
        for workers in [1, 2] {
            let rt = runtime(workers);
            let mut v = vec![0u32; 2];
            let at_taskwait = rt.scope(|s| {
                let blocks = Blocks::new(&mut v, 1).expect("blocks");
                s.task()
                    .writes(&blocks[0])
                    .spawn(|_, _| panic!("root cause"))
                    .expect("spawn");
                thread::sleep(Duration::from_millis(50));
                let group = catch_unwind(AssertUnwindSafe(|| {
                    s.taskgroup(|g| {
                        g.task()
                            .reads(&blocks[0])
                            .spawn(|_, _| unreachable!("cancelled"))
                            .expect("spawn");
                        panic!("group body")
                    })
                }));
                assert_eq!(message(group.unwrap_err()), "group body");
                catch_unwind(AssertUnwindSafe(|| s.taskwait()))
                    .err()
                    .map(message)
            });
            assert_eq!(
                at_taskwait.as_deref(),
                Some("root cause"),
                "{workers} workers: the earlier task's panic was lost"
            );
        }
    });
}

#[test]
fn no_mutex_updates_member_runs_after_one_that_panicked_half_way() {
    within(60, || {
        for workers in [1, 2, 4] {
            let rt = runtime(workers);
            let mut v = vec![0u32; 8];
            let ran = Mutex::new(Vec::new());
            let r = catch_unwind(AssertUnwindSafe(|| {
                rt.scope(|s| {
                    let blocks = Blocks::new(&mut v, 8).expect("blocks");
                    for id in 0..16u32 {
                        let ran = &ran;
                        s.task()
                            .mutex_updates(&blocks[0])
                            .spawn(move |_, (d,)| {
                                assert!(
                                    d.iter().all(|&x| x == d[0]),
                                    "member {id} sees a half-written block: {d:?}"
                                );
                                ran.lock().unwrap().push(id);
                                d[..4].iter_mut().for_each(|x| *x += 1);
                                if id == 5 {
                                    panic!("member 5 failed half way");
                                }
                                d[4..].iter_mut().for_each(|x| *x += 1);
                            })
                            .expect("spawn");
                    }
                    // Submitted after the panic may have happened: cancelled too.
                    thread::sleep(Duration::from_millis(20));
                    let ran = &ran;
                    s.task()
                        .mutex_updates(&blocks[0])
                        .spawn(move |_, _| ran.lock().unwrap().push(99))
                        .expect("spawn");
                })
            }));
            assert_eq!(
                message(r.expect_err("the panic reaches the scope end")),
                "member 5 failed half way"
            );
            let ran = ran.into_inner().unwrap();
            let at = ran.iter().position(|&id| id == 5).expect("member 5 ran");
            assert_eq!(
                at + 1,
                ran.len(),
                "{workers} workers: members ran after 5: {ran:?}"
            );
            // Every member before 5 added one to each element, 5 to the first half only.
            assert!(v[..4].iter().all(|&x| x as usize == ran.len()), "{v:?}");
            assert!(v[4..].iter().all(|&x| x as usize == ran.len() - 1), "{v:?}");
        }
    });
}

#[test]
fn a_panic_in_a_predecessor_with_one_worker_does_not_hang() {
    within(60, || {
        let rt = runtime(1);
        let mut v = vec![0u8; 4];
        let r = catch_unwind(AssertUnwindSafe(|| {
            rt.scope(|s| {
                let blocks = Blocks::new(&mut v, 1).expect("blocks");
                s.task()
                    .updates(&blocks[0])
                    .spawn(|_, _| panic!("first"))
                    .expect("spawn");
                for i in 1..4 {
                    s.task()
                        .reads(&blocks[i - 1])
                        .updates(&blocks[i])
                        .spawn(|_, (_, x)| x[0] = 1)
                        .expect("spawn");
                }
            })
        }));
        assert_eq!(
            message(r.expect_err("the panic reaches the scope end")),
            "first"
        );
        assert_eq!(v, [0, 0, 0, 0]);
    });
}

#[test]
fn mutually_exclusive_updates_never_run_at_the_same_time() {
    within(60, || {
        let rt = runtime(3);
        let mut v = vec![0u64; 1];
        let inside = AtomicUsize::new(0);
        let max_inside = AtomicUsize::new(0);
        rt.scope(|s| {
            let blocks = Blocks::new(&mut v, 1).expect("blocks");
            for _ in 0..200 {
                let (inside, max_inside) = (&inside, &max_inside);
                s.task()
                    .mutex_updates(&blocks[0])
                    .spawn(move |_, (x,)| {
                        let n = inside.fetch_add(1, Ordering::SeqCst) + 1;
                        max_inside.fetch_max(n, Ordering::SeqCst);
                        x[0] += 1;
                        thread::yield_now();
                        inside.fetch_sub(1, Ordering::SeqCst);
                    })
                    .expect("spawn");
            }
        });
        assert_eq!(v[0], 200);
        assert_eq!(max_inside.load(Ordering::SeqCst), 1);
    });
}

#[test]
fn concurrent_updates_share_the_data_and_order_later_readers() {
    within(60, || {
        use std::sync::atomic::AtomicU64;
        let rt = runtime(2);
        let mut counters: Vec<AtomicU64> = (0..4).map(|_| AtomicU64::new(0)).collect();
        let mut seen = vec![0u64; 1];
        rt.scope(|s| {
            let c = Blocks::new(&mut counters, 4).expect("blocks");
            let out = Blocks::new(&mut seen, 1).expect("blocks");
            for _ in 0..100 {
                s.task()
                    .concurrent_updates(&c[0])
                    .spawn(|_, (c,)| {
                        c[0].fetch_add(1, Ordering::Relaxed);
                    })
                    .expect("spawn");
            }
            s.task()
                .reads(&c[0])
                .writes(&out[0])
                .spawn(|_, (c, o)| o[0] = c[0].load(Ordering::Relaxed))
                .expect("spawn");
        });
        assert_eq!(seen[0], 100, "the reader ran after every set member");
    });
}

#[test]
fn a_task_cannot_write_bytes_it_also_declares_otherwise() {
    within(60, || {
        let rt = runtime(1);
        let mut v = vec![0u32; 15];
        let ran = AtomicBool::new(false);
        rt.scope(|s| {
            let blocks = Blocks::new(&mut v, 5).expect("blocks");
            let overlap = blocks.region(3..7).expect("region");
            let ran = &ran;
            let r = s
                .task()
                .reads(&blocks[0])
                .writes(&overlap)
                .spawn(move |_, _| ran.store(true, Ordering::SeqCst));
            assert_eq!(
                r,
                Err(DependError::ConflictingAccesses {
                    first: 0,
                    first_kind: AccessKind::In,
                    second: 1,
                    second_kind: AccessKind::Out,
                })
            );
            // The message names the declarations as the task wrote them.
            let message = r.unwrap_err().to_string();
            assert!(
                message.starts_with(
                    "regions 0 and 1 of one task overlap, declared as reads (depend(in)) and \
                     writes (depend(out))"
                ),
                "{message}"
            );
            let r = s
                .task()
                .updates(&blocks[1])
                .updates(&blocks[1])
                .spawn(move |_, _| ran.store(true, Ordering::SeqCst));
            assert!(matches!(r, Err(DependError::ConflictingAccesses { .. })));
            // Reading a region twice is fine, and so are adjacent writes.
            s.task()
                .reads(&blocks[0])
                .reads(&overlap)
                .writes(&blocks[2])
                .spawn(|_, (a, b, c)| c[0] = a[4] + b[0])
                .expect("reads may overlap");
        });
        assert!(!ran.load(Ordering::SeqCst), "a refused task never runs");
    });
}

/// A blocked matrix-vector product by rows of blocks: each task reads a row of `nb` blocks
/// (one `reads_each`) and the vector, and updates one block of the result; a second round
/// adds a list-updated correction, ordered after the first by the blocks it updates.
fn list_declarations(workers: usize, nb: usize) {
    let rt = runtime(workers);
    let bs = 3;
    let mut m: Vec<u64> = (0..(nb * nb * bs) as u64).collect();
    let x: Vec<u64> = (0..(nb * bs) as u64).map(|i| i % 7 + 1).collect();
    let mut y = vec![0u64; nb * bs];
    rt.scope(|s| {
        // Block (i, j) of m holds `bs` consecutive elements: element k of block (i, j) is
        // m[(i * nb + j) * bs + k], multiplied by x[j * bs + k], summed into y[i * bs + k].
        let mb = Blocks::new(&mut m, bs).expect("blocks");
        let yb = Blocks::new(&mut y, bs).expect("blocks");
        let x = &x;
        for i in 0..nb {
            s.task()
                .reads_each((0..nb).map(|j| &mb[i * nb + j]))
                .updates(&yb[i])
                .spawn(move |_, (row, out)| {
                    assert_eq!(row.len(), nb, "one slice per listed region, in order");
                    for (j, block) in row.iter().enumerate() {
                        for k in 0..bs {
                            out[k] += block[k] * x[j * bs + k];
                        }
                    }
                })
                .expect("a row of blocks");
        }
        // Every result block at once: ordered after all the row tasks.
        s.task()
            .updates_each(&yb)
            .spawn(|_, (all,)| {
                for block in all {
                    block.iter_mut().for_each(|v| *v *= 2);
                }
            })
            .expect("every block");
        Ok::<(), DependError>(())
    })
    .expect("valid");
    for i in 0..nb {
        for k in 0..bs {
            let expect: u64 = (0..nb)
                .map(|j| m[(i * nb + j) * bs + k] * x[j * bs + k])
                .sum();
            assert_eq!(y[i * bs + k], 2 * expect, "y[{i}][{k}]");
        }
    }
}

#[test]
fn a_list_of_regions_is_one_declaration_of_any_length() {
    within(60, || {
        for workers in [1, 3] {
            // 5 blocks per row: within one builder's array; 40: beyond it (a vector).
            for nb in [5, 40] {
                list_declarations(workers, nb);
            }
        }
    });
}

#[test]
fn a_list_that_gives_mut_to_overlapping_regions_is_refused() {
    within(60, || {
        let rt = runtime(1);
        let mut v = vec![0u32; 400];
        let ran = AtomicBool::new(false);
        rt.scope(|s| {
            let blocks = Blocks::new(&mut v, 4).expect("blocks");
            let ran = &ran;
            // The same block twice in a short list, and in a long one (sorted check).
            for len in [3, 60] {
                let r = s
                    .task()
                    .updates_each((0..len).map(|j| &blocks[j % (len - 1)]))
                    .spawn(move |_, _| ran.store(true, Ordering::SeqCst));
                assert_eq!(
                    r,
                    Err(DependError::ConflictingAccesses {
                        first: 0,
                        first_kind: AccessKind::InOut,
                        second: len - 1,
                        second_kind: AccessKind::InOut,
                    }),
                    "list of {len}"
                );
            }
            // A long read list overlapping a single write: refused; reading a block twice
            // in a long list is fine.
            let r = s
                .task()
                .reads_each(blocks.iter().take(50))
                .writes(&blocks[20])
                .spawn(move |_, _| ran.store(true, Ordering::SeqCst));
            assert_eq!(
                r,
                Err(DependError::ConflictingAccesses {
                    first: 20,
                    first_kind: AccessKind::In,
                    second: 50,
                    second_kind: AccessKind::Out,
                })
            );
            s.task()
                .reads_each((0..50).map(|j| &blocks[j % 25]))
                .writes(&blocks[30])
                .spawn(|_, (reads, w)| w[0] = reads.iter().map(|b| b[0]).sum())
                .expect("reads may repeat");
        });
        assert!(!ran.load(Ordering::SeqCst), "a refused task never runs");
    });
}

thread_local! {
    /// Handles smuggled past the type system's `Send` checks, to check the runtime binding.
    static SMUGGLED: std::cell::RefCell<Option<Blocks<'static, u32>>> =
        const { std::cell::RefCell::new(None) };
}

#[test]
fn handles_bound_to_one_task_are_refused_for_another_tasks_children() {
    within(60, || {
        let rt = runtime(1);
        let data: &'static mut [u32] = Box::leak(vec![0u32; 8].into_boxed_slice());
        rt.scope(|s| {
            let blocks = Blocks::new(data, 4).expect("blocks");
            s.task()
                .updates(&blocks[0])
                .spawn(|_, (x,)| x[0] = 1)
                .expect("the first task binds the blocks");
            SMUGGLED.with(|b| *b.borrow_mut() = Some(blocks));
            // With one worker, this child runs on this thread and finds the blocks.
            s.spawn(|s| {
                let r = SMUGGLED.with(|b| {
                    let b = b.borrow();
                    let blocks = b.as_ref().expect("smuggled");
                    s.task().updates(&blocks[0]).spawn(|_, (x,)| x[0] = 2)
                });
                assert_eq!(r, Err(DependError::ForeignRegion));
            });
            s.taskwait();
            SMUGGLED.with(|b| b.borrow_mut().take());
        });
    });
}

#[test]
fn raw_dependences_order_c_like_byte_ranges() {
    within(60, || {
        let rt = runtime(2);
        let mut buf = vec![0u64; 256];
        rt.scope(|s| {
            let (p, n) = (buf.as_mut_ptr() as usize, buf.len());
            for round in 0..20u64 {
                // The whole buffer, then its halves: every byte is ordered.
                let whole = Access::new(p, n * 8, AccessKind::InOut).intensive();
                // SAFETY: each task touches only the bytes it declares; the buffer outlives
                // the scope; plain numbers may be written from any thread.
                unsafe {
                    s.task().depend(&[whole]).spawn(move |_| {
                        let p = p as *mut u64;
                        (0..n).for_each(|i| *p.add(i) = *p.add(i) * 2 + round);
                    });
                    for half in 0..2 {
                        let start = half * n / 2;
                        let acc = Access::new(p + start * 8, n / 2 * 8, AccessKind::InOut);
                        s.task().depend(&[acc]).spawn(move |_| {
                            let p = p as *mut u64;
                            (start..start + n / 2).for_each(|i| *p.add(i) += 1);
                        });
                    }
                }
            }
        });
        let expect = (0..20u64).fold(0, |x, round| (x * 2 + round) + 1);
        assert!(buf.iter().all(|&x| x == expect));
    });
}

#[test]
fn a_dependent_tasks_footprint_is_its_depend_list() {
    use numatask_alloc::{Distribution, NumaVec};
    within(60, || {
        let path = TempPath::json("depend-footprint");
        let rt = numatask_sched::Runtime::builder()
            .num_threads(2)
            .proc_bind(false)
            .trace(&path)
            .build()
            .expect("runtime");
        // 4 KiB blocks in memory the allocator knows, so every byte has a known node.
        let mut v = NumaVec::<f64>::zeroed(2048, Distribution::Fine).expect("numa vec");
        rt.scope(|s| {
            let blocks = Blocks::new(&mut v, 512).expect("blocks");
            for i in 1..blocks.len() {
                s.task()
                    .reads(&blocks[i - 1])
                    .updates(&blocks[i])
                    .intensive()
                    .label("dependent")
                    .spawn(|_, (a, b)| b[0] += a[0] + 1.0)
                    .expect("spawn");
            }
        });
        let records = rt.tracer().expect("tracing").records();
        let dependent: Vec<_> = records.iter().filter(|r| r.label == "dependent").collect();
        assert_eq!(dependent.len(), 3);
        for r in dependent {
            let d = r
                .footprint
                .as_ref()
                .expect("a dependent task has a footprint");
            assert_eq!(d.known(), 2 * 4096, "both declared blocks, by node");
        }
        // The raw form, labelled: its depend list is its footprint too.
        let (addr, n) = (v.as_mut_ptr() as usize, v.len());
        rt.scope(|s| {
            let whole = Access::new(addr, n * 8, AccessKind::InOut);
            // SAFETY: the task writes only the bytes it declares, which nothing else touches
            // until the scope ends; the address of plain numbers may go to another thread.
            unsafe {
                s.task()
                    .label("raw")
                    .depend(&[whole])
                    .spawn(move |_| *(addr as *mut f64) += 1.0);
            }
        });
        let records = rt.tracer().expect("tracing").records();
        let raw: Vec<_> = records.iter().filter(|r| r.label == "raw").collect();
        assert_eq!(raw.len(), 1);
        let d = raw[0].footprint.as_ref().expect("a footprint");
        assert_eq!(d.known(), n as u64 * 8);
        assert_eq!(v[0], 1.0);
        drop(rt);
        assert_eq!(v[512 * 3], 3.0);
    });
}

#[test]
fn shared_blocks_give_shared_references_only_and_refuse_writers() {
    let rt = runtime(2);
    let input: Vec<u64> = (0..100).collect();
    let counters: Vec<AtomicUsize> = (0..4).map(|_| AtomicUsize::new(0)).collect();
    let mut sums = vec![0u64; 10];
    rt.scope(|s| {
        let a = Blocks::shared(&input, 10)?;
        let c = Blocks::shared(&counters, 1)?;
        let out = Blocks::new(&mut sums, 1)?;
        // Every kind that gives `&mut`, alone or in a list, and through `region`: refused,
        // nothing spawned.
        let refused = [
            s.task().writes(&a[0]).spawn(|_, _| unreachable!()),
            s.task().updates(&a[1]).spawn(|_, _| unreachable!()),
            s.task().mutex_updates(&a[2]).spawn(|_, _| unreachable!()),
            s.task()
                .reads(&a[3])
                .updates_each(&a)
                .spawn(|_, _| unreachable!()),
            s.task().writes_each([&a[4]]).spawn(|_, _| unreachable!()),
            s.task()
                .mutex_updates_each([&a[5]])
                .spawn(|_, _| unreachable!()),
            s.task()
                .updates(&a.region(3..7)?)
                .spawn(|_, _| unreachable!()),
        ];
        for (i, result) in refused.into_iter().enumerate() {
            let err = result.expect_err("a writer of shared data");
            assert!(
                matches!(err, DependError::ReadOnlyRegion { .. }),
                "{i}: {err}"
            );
            assert!(err.to_string().contains("Blocks::shared"), "{err}");
        }
        // Readers, and concurrent updates through shared references (atomics).
        for i in 0..10 {
            s.task()
                .reads(&a[i])
                .concurrent_updates(&c[i % 4])
                .writes(&out[i])
                .spawn(|_, (x, counter, sum)| {
                    counter[0].fetch_add(1, Ordering::Relaxed);
                    sum[0] = x.iter().sum();
                })?;
        }
        // The data stays readable outside the tasks meanwhile.
        assert_eq!(input[99], 99);
        Ok::<(), DependError>(())
    })
    .expect("scope");
    let expected: Vec<u64> = (0..10).map(|b| (b * 10..b * 10 + 10).sum()).collect();
    assert_eq!(sums, expected);
    let counts: Vec<usize> = counters.iter().map(|c| c.load(Ordering::Relaxed)).collect();
    assert_eq!(counts, [3, 3, 2, 2]);
}

#[test]
fn shared_data_serves_scopes_on_several_threads_at_once() {
    let rt = runtime(2);
    let input: Vec<u32> = vec![1; 4096];
    thread::scope(|t| {
        let results: Vec<_> = (0..3)
            .map(|_| {
                t.spawn(|| {
                    let mut total = vec![0u32; 1];
                    rt.scope(|s| {
                        let a = Blocks::shared(&input, 512)?;
                        let total = Blocks::new(&mut total, 1)?;
                        s.task()
                            .reads_each(&a)
                            .updates(&total[0])
                            .spawn(|_, (parts, t)| {
                                t[0] = parts.iter().map(|p| p.iter().sum::<u32>()).sum()
                            })?;
                        Ok::<(), DependError>(())
                    })
                    .expect("scope");
                    total[0]
                })
            })
            .collect();
        for r in results {
            assert_eq!(r.join().unwrap(), 4096);
        }
    });
}
