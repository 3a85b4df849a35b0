//! Miri: task frames through the public API (spawn, waits, handles, join, scopes, detached jobs).
//!
//! Small runtimes (2-3 workers) and sizes, so that `scripts/miri.sh` can run them under Miri,
//! on the stub topology of `cfg(miri)`; CI runs them natively, on the machine's topology.

mod common;

use common::{fib, passive_runtime};
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::atomic::{AtomicUsize, Ordering};

use numatask_sched::{Runtime, WaitPolicy};

#[test]
fn spawn_taskwait_taskgroup_nesting() {
    let rt = passive_runtime(3);
    let count = AtomicUsize::new(0);
    let mut v = vec![0u32; 6];
    rt.scope(|s| {
        for (i, x) in v.iter_mut().enumerate() {
            let count = &count;
            s.spawn(move |s| {
                *x = i as u32;
                s.spawn(move |s| {
                    count.fetch_add(1, Ordering::Relaxed);
                    s.taskgroup(|g| {
                        g.spawn(move |_| {
                            count.fetch_add(1, Ordering::Relaxed);
                        });
                        g.spawn(move |g2| {
                            g2.spawn(move |_| {
                                count.fetch_add(1, Ordering::Relaxed);
                            });
                        });
                    });
                });
                s.taskwait();
            });
        }
        s.taskwait();
        assert_eq!(count.load(Ordering::Relaxed), 18);
        let r = s.taskgroup(|g| {
            g.spawn(|g| {
                g.spawn(|_| {
                    count.fetch_add(1, Ordering::Relaxed);
                })
            });
            7
        });
        assert_eq!(r, 7);
        assert_eq!(count.load(Ordering::Relaxed), 19);
    });
    assert_eq!(v, [0, 1, 2, 3, 4, 5]);
}

#[test]
fn handles_joined_dropped_and_after_taskwait() {
    let rt = passive_runtime(2);
    let r = rt.scope(|s| {
        assert_eq!(fib(s, 6), 8);
        let a = s.task().spawn_with_result(|_| vec![1u8, 2, 3]);
        let b = s.task().spawn_with_result(|_| String::from("dropped"));
        let c = s.task().spawn_with_result(|s| {
            let inner = s.task().spawn_with_result(|_| Box::new(41u64));
            drop(s.task().spawn_with_result(|_| Box::new(1u64))); // dropped unjoined inside a task
            *inner.join() + 1
        });
        drop(b); // unjoined
        s.taskwait();
        assert!(c.is_finished());
        let d = s.task().spawn_with_result(|_| Box::new(5u32));
        let dropped_late = s.task().spawn_with_result(|_| String::from("late"));
        let _ = dropped_late;
        (a.join(), c.join(), *d.join())
    });
    assert_eq!(r, (vec![1, 2, 3], 42, 5));
    // Handles never joined nor waited: the scope end waits.
    rt.scope(|s| {
        for i in 0..4 {
            let _ = s.task().spawn_with_result(move |_| vec![i; 3]);
        }
    });
}

#[test]
fn scope_join_and_free_functions() {
    let rt = passive_runtime(2);
    let (a, b) = rt.scope(|s| {
        s.join(
            |s| {
                let (x, y) = s.join(|_| 1u64, |_| String::from("b"));
                x + y.len() as u64
            },
            |_| Box::new(3u64),
        )
    });
    assert_eq!((a, *b), (2, 3));
    // numatask::join and scope from inside tasks: the runtime of the worker.
    let r = rt.scope(|s| {
        let h = s.task().spawn_with_result(|_| {
            let (a, b) = numatask_sched::join(|| 1u32, || vec![2u32]);
            let c = numatask_sched::scope(|s| {
                let h = s.task().spawn_with_result(|_| 4u32);
                h.join()
            });
            a + b[0] + c
        });
        h.join()
    });
    assert_eq!(r, 7);
}

#[test]
fn final_if_and_defer_if() {
    let rt = passive_runtime(2);
    let count = AtomicUsize::new(0);
    rt.scope(|s| {
        let count = &count;
        s.task().final_if(true).spawn(move |s| {
            assert!(s.in_final());
            s.spawn(move |s| {
                assert!(s.in_final());
                count.fetch_add(1, Ordering::Relaxed);
            });
            let h = s.task().spawn_with_result(|_| 2usize);
            count.fetch_add(h.join(), Ordering::Relaxed);
        });
        s.task().defer_if(false).spawn(move |_| {
            count.fetch_add(10, Ordering::Relaxed);
        });
        s.task().defer_if(true).spawn(move |_| {
            count.fetch_add(100, Ordering::Relaxed);
        });
    });
    assert_eq!(count.load(Ordering::Relaxed), 113);
}

#[test]
fn panics_are_caught_and_runtime_reused() {
    let rt = passive_runtime(2);
    let r = catch_unwind(AssertUnwindSafe(|| {
        rt.scope(|s| {
            s.spawn(|_| panic!("in a task"));
            s.spawn(|s| s.spawn(|_| ()));
        })
    }));
    assert!(r.is_err());
    let r = rt.scope(|s| {
        s.spawn(|_| panic!("caught at taskwait"));
        let w = catch_unwind(AssertUnwindSafe(|| s.taskwait()));
        assert!(w.is_err());
        let g = catch_unwind(AssertUnwindSafe(|| {
            s.taskgroup(|g| g.spawn(|_| panic!("group")))
        }));
        assert!(g.is_err());
        let h = s.task().spawn_with_result(|_| -> u32 { panic!("handle") });
        let j = catch_unwind(AssertUnwindSafe(|| h.join()));
        assert!(j.is_err());
        // Dropped handle of a panicking task: reported at the scope end.
        drop(
            s.task()
                .spawn_with_result(|_| -> Box<u32> { panic!("dropped handle") }),
        );
        let w = catch_unwind(AssertUnwindSafe(|| s.taskwait()));
        assert!(w.is_err());
        5
    });
    assert_eq!(r, 5);
    assert_eq!(rt.scope(|s| fib(s, 5)), 5);
}

#[test]
fn priorities() {
    let rt = Runtime::builder()
        .num_threads(2)
        .proc_bind(false)
        .max_task_priority(3)
        .wait_policy(WaitPolicy::Passive)
        .build()
        .expect("runtime");
    let count = AtomicUsize::new(0);
    rt.scope(|s| {
        for p in 0..6u32 {
            let count = &count;
            s.task().priority(p).spawn(move |s| {
                s.task().priority(p + 1).spawn(move |_| {
                    count.fetch_add(1, Ordering::Relaxed);
                });
                count.fetch_add(1, Ordering::Relaxed);
            });
        }
    });
    assert_eq!(count.load(Ordering::Relaxed), 12);
}

#[test]
fn drop_idle_runtime() {
    let a = passive_runtime(3);
    a.scope(|s| s.spawn(|_| ()));
    drop(a);
    let b = passive_runtime(2);
    drop(b);
}

#[test]
fn scope_from_thread_outside_pool() {
    let rt = passive_runtime(2);
    std::thread::scope(|ts| {
        let rt = &rt;
        let a = ts.spawn(move || rt.scope(|s| fib(s, 5)));
        let b = ts.spawn(move || rt.scope(|s| s.join(|s| fib(s, 4), |_| 1).0));
        assert_eq!(a.join().unwrap(), 5);
        assert_eq!(b.join().unwrap(), 3);
    });
}

#[test]
fn detached_jobs_run_and_the_drop_waits_for_them() {
    let rt = passive_runtime(2);
    let count = std::sync::Arc::new(AtomicUsize::new(0));
    for _ in 0..3 {
        let count = std::sync::Arc::clone(&count);
        rt.spawn(move |s| {
            let child = std::sync::Arc::clone(&count);
            s.spawn(move |_| {
                child.fetch_add(1, Ordering::Relaxed);
            });
            s.taskwait();
            count.fetch_add(1, Ordering::Relaxed);
        });
    }
    // A panicking job is dropped in the job; the runtime goes on.
    rt.spawn(|s| {
        s.spawn(|_| panic!("a detached job's task panics (expected)"));
    });
    let (tx, rx) = std::sync::mpsc::channel();
    rt.spawn(move |s| {
        let h = s.task().spawn_with_result(|s| fib(s, 5));
        let _ = tx.send(h.join());
    });
    assert_eq!(rx.recv().unwrap(), 5);
    drop(rt);
    assert_eq!(count.load(Ordering::Relaxed), 6);
}
