//! Panics in tasks: caught, the other tasks complete, resumed where the task is waited for,
//! and the runtime stays usable.

mod common;

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::thread;
use std::time::Duration;

use common::{fib, fib_seq, message, runtime, within};

#[test]
fn panic_in_a_task_resumes_at_the_scope_end_after_the_other_tasks_complete() {
    within(60, || {
        let rt = runtime(2);
        let done = AtomicUsize::new(0);
        let result = catch_unwind(AssertUnwindSafe(|| {
            rt.scope(|s| {
                for i in 0..20 {
                    let done = &done;
                    s.spawn(move |_| {
                        if i == 7 {
                            panic!("task 7 failed");
                        }
                        thread::sleep(Duration::from_micros(200));
                        done.fetch_add(1, Ordering::Relaxed);
                    });
                }
            })
        }));
        assert_eq!(
            message(result.expect_err("the panic resumes")),
            "task 7 failed"
        );
        assert_eq!(
            done.load(Ordering::Relaxed),
            19,
            "the other tasks ran to completion"
        );
    });
}

#[test]
fn panic_in_a_task_resumes_at_its_parents_taskwait() {
    within(60, || {
        let rt = runtime(2);
        let caught = rt.scope(|s| {
            let h = s.task().spawn_with_result(|s| {
                s.spawn(|_| panic!("child failed"));
                let r = catch_unwind(AssertUnwindSafe(|| s.taskwait()));
                message(r.expect_err("taskwait resumes the child's panic"))
            });
            s.taskwait();
            h.join()
        });
        assert_eq!(caught, "child failed");
    });
}

#[test]
fn panic_climbs_to_the_nearest_waiter_when_the_parent_already_finished() {
    within(60, || {
        let rt = runtime(2);
        let result = catch_unwind(AssertUnwindSafe(|| {
            rt.scope(|s| {
                s.spawn(|s| {
                    // The parent returns at once; its grandchild fails later.
                    s.spawn(|s| {
                        s.spawn(|_| {
                            thread::sleep(Duration::from_millis(5));
                            panic!("grandchild failed");
                        });
                    });
                });
            })
        }));
        assert_eq!(
            message(result.expect_err("resumed at the scope end")),
            "grandchild failed"
        );
    });
}

#[test]
fn panic_in_a_taskgroup_resumes_at_its_end() {
    let rt = runtime(2);
    let outcome = rt.scope(|s| {
        let r = catch_unwind(AssertUnwindSafe(|| {
            s.taskgroup(|s| {
                s.spawn(|s| s.spawn(|_| panic!("in the group")));
            })
        }));
        message(r.expect_err("the group end resumes it"))
    });
    assert_eq!(outcome, "in the group");
}

#[test]
fn panic_of_the_scope_body_waits_for_its_tasks_first() {
    let rt = runtime(2);
    let done = AtomicUsize::new(0);
    let result = catch_unwind(AssertUnwindSafe(|| {
        rt.scope(|s| {
            for _ in 0..8 {
                s.spawn(|_| {
                    thread::sleep(Duration::from_millis(2));
                    done.fetch_add(1, Ordering::Relaxed);
                });
            }
            panic!("body failed");
        })
    }));
    assert_eq!(
        message(result.expect_err("the body's panic")),
        "body failed"
    );
    // The tasks borrowed `done`: they all finished before the scope unwound.
    assert_eq!(done.load(Ordering::Relaxed), 8);
}

#[test]
fn panic_in_join_resumes_in_the_caller() {
    let rt = runtime(2);
    let r = catch_unwind(AssertUnwindSafe(|| {
        rt.scope(|s| s.join(|_| -> u32 { panic!("left failed") }, |_| 2))
    }));
    assert_eq!(message(r.expect_err("join resumes it")), "left failed");
    let r = catch_unwind(AssertUnwindSafe(|| {
        rt.scope(|s| s.join(|_| 1, |_| -> u32 { panic!("right failed") }))
    }));
    assert_eq!(message(r.expect_err("join resumes it")), "right failed");
}

#[test]
fn join_prefers_the_inline_sides_panic_and_waits_for_the_task_side_first() {
    within(60, || {
        let rt = runtime(2);
        let r = catch_unwind(AssertUnwindSafe(|| {
            rt.scope(|s| {
                s.join(
                    |_| -> u32 { panic!("left failed") },
                    |_| -> u32 { panic!("right failed") },
                )
            })
        }));
        assert_eq!(message(r.expect_err("join resumes one")), "right failed");
        // `a` borrows the caller's stack: it must have ended before `b`'s panic leaves join.
        let a_done = AtomicUsize::new(0);
        let r = catch_unwind(AssertUnwindSafe(|| {
            rt.scope(|s| {
                s.join(
                    |_| {
                        thread::sleep(Duration::from_millis(50));
                        a_done.store(1, Ordering::SeqCst);
                    },
                    |_| panic!("right failed"),
                )
            })
        }));
        assert!(r.is_err());
        assert_eq!(
            a_done.load(Ordering::SeqCst),
            1,
            "a finished before join unwound"
        );
    });
}

#[test]
fn joining_the_handle_of_a_task_that_panicked_resumes_its_panic_which_the_scope_then_does_not() {
    within(60, || {
        let rt = runtime(2);
        let caught = rt.scope(|s| {
            let h = s
                .task()
                .spawn_with_result(|_| -> u32 { panic!("task failed") });
            // A taskwait does not report the panic of a task whose handle will.
            s.taskwait();
            assert!(h.is_finished());
            message(catch_unwind(AssertUnwindSafe(|| h.join())).expect_err("the task panicked"))
        });
        // Joined, the panic was the caller's to handle: the scope ends normally.
        assert_eq!(caught, "task failed");
        // A descendant's panic is the task's subtree's: `join` resumes it, the value dropped.
        let caught = rt.scope(|s| {
            let h = s.task().spawn_with_result(|s| {
                s.spawn(|_| panic!("grandchild failed"));
                5u32
            });
            message(catch_unwind(AssertUnwindSafe(|| h.join())).expect_err("the subtree panicked"))
        });
        assert_eq!(caught, "grandchild failed");
        let done = rt.scope(|s| {
            let h = s.task().spawn_with_result(|_| 7u32);
            s.taskwait();
            (h.is_finished(), h.join())
        });
        assert_eq!(done, (true, 7));
    });
}

#[test]
fn the_panic_of_a_task_whose_handle_is_dropped_unjoined_reaches_the_scope_end() {
    within(60, || {
        let rt = runtime(2);
        // Dropped after the task finished (the handle holds the panic then) ...
        let r = catch_unwind(AssertUnwindSafe(|| {
            rt.scope(|s| {
                let h = s
                    .task()
                    .spawn_with_result(|_| -> u32 { panic!("finished, then dropped") });
                s.taskwait();
                drop(h);
            })
        }));
        assert_eq!(
            message(r.expect_err("the scope resumes it")),
            "finished, then dropped"
        );
        // ... and before (the task passes it on itself).
        let gate = AtomicBool::new(false);
        let r = catch_unwind(AssertUnwindSafe(|| {
            rt.scope(|s| {
                let h = s.task().spawn_with_result(|_| -> u32 {
                    while !gate.load(Ordering::Acquire) {
                        std::hint::spin_loop();
                    }
                    panic!("dropped, then finished")
                });
                drop(h);
                gate.store(true, Ordering::Release);
            })
        }));
        assert_eq!(
            message(r.expect_err("the scope resumes it")),
            "dropped, then finished"
        );
        // In a taskgroup, the group's end reports it.
        let r = catch_unwind(AssertUnwindSafe(|| {
            rt.scope(|s| {
                s.taskgroup(|g| {
                    let _h = g
                        .task()
                        .spawn_with_result(|_| -> u32 { panic!("in a group") });
                });
                unreachable!("the group's end resumes the panic");
            })
        }));
        assert_eq!(message(r.expect_err("the group resumes it")), "in a group");
    });
}

#[test]
fn runtime_stays_usable_after_panics() {
    within(60, || {
        for workers in [1, 2] {
            let rt = runtime(workers);
            for round in 0..10 {
                let r = catch_unwind(AssertUnwindSafe(|| {
                    rt.scope(|s| {
                        s.spawn(move |_| panic!("round {round}"));
                        fib(s, 12)
                    })
                }));
                assert_eq!(message(r.expect_err("resumed")), format!("round {round}"));
                assert_eq!(rt.scope(|s| fib(s, 15)), fib_seq(15));
            }
        }
    });
}

#[test]
fn panic_in_a_scope_entered_from_a_task_stays_in_that_task() {
    let rt = runtime(2);
    let rt = &rt;
    let v = rt.scope(|s| {
        let h = s.task().spawn_with_result(move |_| {
            catch_unwind(AssertUnwindSafe(|| {
                rt.scope(|s| s.spawn(|_| panic!("inner")))
            }))
            .is_err()
        });
        s.taskwait();
        h.join()
    });
    assert!(v);
}

struct PanicsOnDrop;

impl Drop for PanicsOnDrop {
    fn drop(&mut self) {
        panic!("result dropped");
    }
}

#[test]
fn panicking_destructor_of_an_unread_result_is_reported_at_the_scope_end() {
    within(60, || {
        let rt = runtime(2);
        let r = catch_unwind(AssertUnwindSafe(|| {
            rt.scope(|s| {
                let h = s.task().spawn_with_result(|_| {
                    thread::sleep(Duration::from_millis(5));
                    PanicsOnDrop
                });
                drop(h); // before the task ends: the runtime drops the result
            })
        }));
        assert_eq!(message(r.expect_err("reported")), "result dropped");
        assert_eq!(rt.scope(|s| fib(s, 10)), fib_seq(10));
    });
}

/// A panic payload whose destructor panics too.
struct Bomb;

impl Drop for Bomb {
    fn drop(&mut self) {
        panic!("payload dropped");
    }
}

#[test]
fn a_second_panic_whose_payload_panics_when_dropped_does_not_end_the_scope_early() {
    // Two tasks panic with such payloads while a third, borrowing this stack, still runs: the
    // second payload is dropped by the runtime (the first one wins); its destructor's panic
    // must not unwind through the runtime, which would end the scope before the third task.
    within(60, || {
        let rt = runtime(2);
        for _ in 0..3 {
            let running = AtomicUsize::new(0);
            let finished = AtomicUsize::new(0);
            let r = catch_unwind(AssertUnwindSafe(|| {
                rt.scope(|s| {
                    let (running, finished) = (&running, &finished);
                    s.spawn(move |_| {
                        running.store(1, Ordering::SeqCst);
                        thread::sleep(Duration::from_millis(100));
                        finished.store(1, Ordering::SeqCst);
                    });
                    while running.load(Ordering::SeqCst) == 0 {
                        std::hint::spin_loop();
                    }
                    s.spawn(|_| std::panic::panic_any(Bomb));
                    s.spawn(|_| std::panic::panic_any(Bomb));
                })
            }));
            assert_eq!(
                finished.load(Ordering::SeqCst),
                1,
                "the scope ended while one of its tasks still ran"
            );
            let payload = r.expect_err("the first panic reaches the scope end");
            assert!(payload.is::<Bomb>(), "the first panic's own payload");
            // Dropping it panics, here, in the test's code: that is the payload's business.
            let dropped = catch_unwind(AssertUnwindSafe(|| drop(payload)));
            assert_eq!(
                message(dropped.expect_err("Bomb panics")),
                "payload dropped"
            );
        }
        assert_eq!(rt.scope(|s| fib(s, 10)), fib_seq(10));
    });
}

#[test]
fn taskwait_in_nested_taskgroups_waits_for_the_tasks_children_spawned_before_them() {
    within(60, || {
        let rt = runtime(2);
        let finished = std::sync::atomic::AtomicBool::new(false);
        let seen = rt.scope(|s| {
            let finished = &finished;
            s.spawn(move |_| {
                thread::sleep(Duration::from_millis(200));
                finished.store(true, Ordering::SeqCst);
            });
            s.taskgroup(|g1| {
                g1.taskgroup(|g2| {
                    g2.taskwait();
                    finished.load(Ordering::SeqCst)
                })
            })
        });
        assert!(
            seen,
            "taskwait two groups deep returned before the task's first child"
        );

        // And it resumes that child's panic.
        let r = catch_unwind(AssertUnwindSafe(|| {
            rt.scope(|s| {
                s.spawn(|_| {
                    thread::sleep(Duration::from_millis(50));
                    panic!("spawned before the groups")
                });
                s.taskgroup(|g1| g1.taskgroup(|g2| g2.taskwait()));
                "taskwait returned"
            })
        }));
        assert_eq!(
            message(r.expect_err("the taskwait resumes it")),
            "spawned before the groups"
        );
    });
}

#[test]
fn join_resumes_its_own_tasks_panic_and_leaves_a_siblings_for_the_scope_end() {
    within(60, || {
        let rt = runtime(2);
        // An earlier sibling's panic waits in the parent's frame when `a` panics: join
        // resumes `a`'s (the body reports what it saw, and its panic wins at the scope end).
        let r = catch_unwind(AssertUnwindSafe(|| {
            rt.scope(|s| {
                s.spawn(|_| panic!("sibling"));
                thread::sleep(Duration::from_millis(100));
                let r = catch_unwind(AssertUnwindSafe(|| {
                    s.join(|_| -> u32 { panic!("a side") }, |_| 1)
                }));
                std::panic::panic_any(format!("join gave: {}", message(r.unwrap_err())))
            })
        }));
        assert_eq!(message(r.unwrap_err()), "join gave: a side");
        // When the body goes on, the sibling's panic is still there for the scope end.
        let r = catch_unwind(AssertUnwindSafe(|| {
            rt.scope(|s| {
                s.spawn(|_| panic!("sibling"));
                thread::sleep(Duration::from_millis(100));
                let _ = catch_unwind(AssertUnwindSafe(|| {
                    s.join(|_| -> u32 { panic!("a side") }, |_| 1)
                }));
            })
        }));
        assert_eq!(
            message(r.expect_err("the scope end resumes the sibling's panic")),
            "sibling"
        );
    });
}

/// A panic payload whose destructor panics.
struct PanicsWhenDropped;

impl Drop for PanicsWhenDropped {
    fn drop(&mut self) {
        panic!("payload dropped");
    }
}

#[test]
fn join_whose_both_sides_panic_resumes_the_inline_sides_and_contains_the_others_drop() {
    within(60, || {
        let rt = runtime(2);
        let r = catch_unwind(AssertUnwindSafe(|| {
            rt.scope(|s| {
                s.join(
                    |_| -> u32 { std::panic::panic_any(PanicsWhenDropped) },
                    |_| -> u32 { panic!("right failed") },
                )
            })
        }));
        assert_eq!(
            message(r.expect_err("join resumes a panic")),
            "right failed"
        );
        assert_eq!(rt.scope(|s| s.join(|_| 1, |_| 2)), (1, 2));
    });
}

#[test]
fn join_resumes_the_panicking_sides_panic_and_contains_the_other_results_drop() {
    within(60, || {
        let rt = runtime(2);
        // `b` panics; `a`'s result panics when dropped: `b`'s panic is resumed, not the drop's
        // (and no panic while unwinding, which would abort the test binary).
        let r = catch_unwind(AssertUnwindSafe(|| {
            rt.scope(|s| {
                s.join(|_| PanicsWhenDropped, |_| -> () { panic!("right failed") });
            })
        }));
        assert_eq!(message(r.expect_err("b's panic")), "right failed");
        // The other way round: `a` panics, `b`'s result panics when dropped.
        let r = catch_unwind(AssertUnwindSafe(|| {
            rt.scope(|s| {
                s.join(|_| -> () { panic!("left failed") }, |_| PanicsWhenDropped);
            })
        }));
        assert_eq!(message(r.expect_err("a's panic")), "left failed");
        assert_eq!(rt.scope(|s| s.join(|_| 1, |_| 2)), (1, 2));
    });
}

#[test]
fn a_task_panic_resumes_although_the_group_or_scope_value_it_replaces_panics_when_dropped() {
    // The value the body returned is dropped before the task's panic resumes: dropped while
    // unwinding, its destructor's panic would abort the process.
    within(60, || {
        let rt = runtime(2);
        let r = catch_unwind(AssertUnwindSafe(|| {
            rt.scope(|s| {
                let v = s.taskgroup(|g| {
                    g.spawn(|_| panic!("group member"));
                    PanicsOnDrop
                });
                std::mem::forget(v);
            })
        }));
        assert_eq!(message(r.expect_err("resumed")), "group member");
        let r = catch_unwind(AssertUnwindSafe(|| {
            let v = rt.scope(|s| {
                s.spawn(|_| panic!("scope task"));
                PanicsOnDrop
            });
            std::mem::forget(v);
        }));
        assert_eq!(message(r.expect_err("resumed")), "scope task");
        assert_eq!(rt.scope(|s| fib(s, 10)), fib_seq(10));
    });
}

#[test]
fn join_waits_for_the_children_its_task_side_left_running_and_resumes_their_panic() {
    within(60, || {
        for workers in [1, 2] {
            let rt = runtime(workers);
            // `a` returns while its child still runs: join returns only once the child did.
            let done = AtomicBool::new(false);
            let (a, b) = rt.scope(|s| {
                s.join(
                    |s| {
                        s.spawn(|_| {
                            thread::sleep(Duration::from_millis(30));
                            done.store(true, Ordering::Relaxed);
                        });
                        1
                    },
                    |_| 2,
                )
            });
            assert_eq!((a, b), (1, 2));
            assert!(done.load(Ordering::Relaxed), "{workers} workers");
            // A child of `a` that panics while `a` returns a value: the child's panic, run
            // by another worker before `a` returned or by the joiner after.
            let r = catch_unwind(AssertUnwindSafe(|| {
                rt.scope(|s| {
                    s.join(
                        |s| {
                            s.spawn(|_| panic!("child of a"));
                            thread::sleep(Duration::from_millis(20));
                            1
                        },
                        |_| 2,
                    )
                })
            }));
            assert_eq!(
                message(r.expect_err("the child's panic")),
                "child of a",
                "{workers} workers"
            );
            assert_eq!(rt.scope(|s| s.join(|_| 1, |_| 2)), (1, 2));
        }
    });
}

#[test]
fn a_handle_made_through_the_scope_inside_a_taskgroup_outlives_it_and_keeps_its_panic() {
    within(60, || {
        let rt = runtime(2);
        // The handle borrows `s`, so it may leave the group's closure; dropped unjoined after
        // the group, its task's panic must still reach the scope end.
        let r = catch_unwind(AssertUnwindSafe(|| {
            rt.scope(|s| {
                let h = s.taskgroup(|_g| s.task().spawn_with_result(|_| -> u32 { panic!("boom") }));
                let mut pad = [0u8; 4096];
                std::hint::black_box(&mut pad);
                drop(h);
            })
        }));
        assert_eq!(message(r.expect_err("the task's panic")), "boom");
        // Joined after the group, its value.
        let v = rt.scope(|s| {
            let h = s.taskgroup(|_g| s.task().spawn_with_result(|_| 7u32));
            h.join()
        });
        assert_eq!(v, 7);
    });
}
