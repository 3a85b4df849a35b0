//! Miri: edge cases (deque growth, panicking destructors, nested runtimes, forgotten handles).
//!
//! Small runtimes (2-3 workers) and sizes, so that `scripts/miri.sh` can run them under Miri,
//! on the stub topology of `cfg(miri)`; CI runs them natively, on the machine's topology.

mod common;

use common::passive_runtime;
use std::panic::{AssertUnwindSafe, catch_unwind, panic_any};
use std::sync::atomic::{AtomicUsize, Ordering};

use numatask_sched::data::Blocks;
use numatask_sched::depend::{Access, AccessKind};
use numatask_sched::{Runtime, Scope, WaitPolicy};

fn fib(s: &Scope<'_>, n: u64) -> u64 {
    if n < 2 {
        return n;
    }
    let a = s.task().spawn_with_result(move |s| fib(s, n - 1));
    let b = fib(s, n - 2);
    s.taskwait();
    a.join() + b
}

struct Bomb(Box<u32>);
impl Drop for Bomb {
    fn drop(&mut self) {
        if !std::thread::panicking() {
            panic!("bomb {}", self.0);
        }
    }
}

#[test]
fn small_deque_grows() {
    let rt = Runtime::builder()
        .num_threads(3)
        .proc_bind(false)
        .deque_capacity(2)
        .wait_policy(WaitPolicy::Passive)
        .build()
        .expect("runtime");
    let n = AtomicUsize::new(0);
    let r = rt.scope(|s| {
        for _ in 0..40 {
            let n = &n;
            s.spawn(move |_| {
                n.fetch_add(1, Ordering::Relaxed);
            });
        }
        fib(s, 9)
    });
    assert_eq!(r, 34);
    assert_eq!(n.load(Ordering::Relaxed), 40);
}

#[test]
fn panicking_destructors() {
    let rt = passive_runtime(2);
    // Result whose destructor panics, handle dropped before/after the task finished.
    let r = catch_unwind(AssertUnwindSafe(|| {
        rt.scope(|s| {
            let h = s.task().spawn_with_result(|_| Bomb(Box::new(1)));
            drop(h);
            let h = s.task().spawn_with_result(|_| Bomb(Box::new(2)));
            s.taskwait();
            let d = catch_unwind(AssertUnwindSafe(|| drop(h)));
            assert!(d.is_err());
        })
    }));
    let _ = r;
    // Panic payloads whose destructor panics, several at once.
    let r = catch_unwind(AssertUnwindSafe(|| {
        rt.scope(|s| {
            for i in 0..4 {
                s.spawn(move |_| panic_any(Bomb(Box::new(i))));
            }
        })
    }));
    if let Err(p) = r {
        std::mem::forget(p);
    }
    // Captured values of a cancelled dependent task whose destructor panics.
    let mut v = vec![0u8; 2];
    let r = catch_unwind(AssertUnwindSafe(|| {
        rt.scope(|s| {
            let b = Blocks::new(&mut v, 1).unwrap();
            s.task()
                .updates(&b[0])
                .spawn(|_, _| panic!("first"))
                .unwrap();
            let bomb = Bomb(Box::new(9));
            s.task()
                .updates(&b[0])
                .spawn(move |_, _| {
                    let _b = &bomb;
                })
                .unwrap();
        })
    }));
    assert!(r.is_err());
    // A scope body result whose destructor panics while a child panic is resumed.
    let r = catch_unwind(AssertUnwindSafe(|| {
        rt.scope(|s| {
            s.spawn(|_| panic!("child"));
            Bomb(Box::new(3))
        })
    }));
    assert!(r.is_err());
    // Taskloop reduce where accumulators have panicking destructors and a chunk panics.
    let r = catch_unwind(AssertUnwindSafe(|| {
        rt.scope(|s| {
            s.taskloop_reduce(
                0..8,
                numatask_sched::taskloop::Grain::Tasks(4),
                || Bomb(Box::new(0)),
                |_, r| {
                    if r.start == 4 {
                        panic!("chunk")
                    }
                    Bomb(Box::new(r.start as u32))
                },
                |a, b| {
                    std::mem::forget(b);
                    a
                },
            )
        })
    }));
    if let Ok(b) = r {
        std::mem::forget(b);
    }
    assert_eq!(rt.scope(|s| fib(s, 4)), 3);
}

#[test]
fn nested_runtimes_and_reentry() {
    let a = passive_runtime(2);
    let b = passive_runtime(2);
    let r = a.scope(|s| {
        let h = s.task().spawn_with_result(|_| {
            // Another runtime's scope from a worker of this one.
            b.scope(|s2| {
                let (x, y) = numatask_sched::join(|| 1, || 2);
                x + y + fib(s2, 4)
            })
        });
        // The same runtime's scope from inside its own task.
        let g = s.task().spawn_with_result(|_| a.scope(|s3| fib(s3, 5)));
        h.join() + g.join()
    });
    assert_eq!(r, 3 + 3 + 5);
}

#[test]
fn forgotten_handle_and_raw_depend() {
    let rt = passive_runtime(2);
    let mut x = [0u64; 4];
    rt.scope(|s| {
        let h = s.task().spawn_with_result(|s| {
            s.spawn(|_| panic!("forgotten"));
            vec![1u8]
        });
        std::mem::forget(h);
        let acc = [Access::of_slice(&x[..], AccessKind::InOut)];
        let p = x.as_mut_ptr() as usize;
        for i in 0..4 {
            // SAFETY: the tasks are ordered by their InOut on all of `x`, which outlives the scope.
            unsafe {
                s.task().depend(&acc).spawn(move |_| {
                    let q = p as *mut u64;
                    *q.add(i) += i as u64 + *q.add(i.saturating_sub(1));
                })
            };
        }
    });
    assert_eq!(x, [0, 1, 3, 6]);
}
