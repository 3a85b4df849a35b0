//! Miri: taskloops.
//!
//! Small runtimes (2-3 workers) and sizes, so that `scripts/miri.sh` can run them under Miri,
//! on the stub topology of `cfg(miri)`; CI runs them natively, on the machine's topology.

mod common;

use common::passive_runtime;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::atomic::{AtomicUsize, Ordering};

use numatask_sched::taskloop::Grain;

#[test]
fn taskloops() {
    let rt = passive_runtime(2);
    let sum = AtomicUsize::new(0);
    let mut a = vec![0u64; 20];
    let b: Vec<u64> = (0..20).collect();
    let c = vec![1u64; 20];
    let (r1, r2) = rt.scope(|s| {
        s.taskloop(0..17, Grain::Auto, |_, r| {
            sum.fetch_add(r.sum::<usize>(), Ordering::Relaxed);
        });
        s.taskloop(0..5, Grain::Size(2), |s, r| {
            let sum = &sum;
            s.spawn(move |_| {
                sum.fetch_add(r.len(), Ordering::Relaxed);
            });
        });
        let r1 = s.taskloop_reduce(
            0..33,
            Grain::Tasks(5),
            || 0u64,
            |_, r| r.map(|i| i as u64).sum(),
            |x, y| x + y,
        );
        let r2 = s.taskloop_reduce_slice(
            &b,
            Grain::Auto,
            Vec::new,
            |_, off, xs| vec![(off, xs.len())],
            |mut x, y| {
                x.extend(y);
                x
            },
        );
        s.taskloop_mut(&mut a, Grain::Size(3), |_, off, xs| {
            xs.iter_mut()
                .enumerate()
                .for_each(|(i, x)| *x = (off + i) as u64)
        });
        s.taskloop_zip(&mut a, [&b, &c], Grain::Tasks(4), |_, _, a, [b, c]| {
            for i in 0..a.len() {
                a[i] += b[i] * c[i];
            }
        });
        s.taskloop_zip(&mut a, (&b, &c), Grain::Auto, |_, _, a, (b, c)| {
            for i in 0..a.len() {
                a[i] += b[i] + c[i];
            }
        });
        s.taskloop_slice(&b, Grain::Size(7), |_, off, xs| {
            assert_eq!(xs[0], off as u64)
        });
        (r1, r2)
    });
    assert_eq!(sum.load(Ordering::Relaxed), (0..17).sum::<usize>() + 5);
    assert_eq!(r1, (0..33).sum::<u64>());
    assert_eq!(r2.iter().map(|p| p.1).sum::<usize>(), 20);
    assert!(a.iter().enumerate().all(|(i, &x)| x == 3 * i as u64 + 1));
    // a panicking chunk, and a panicking reduce, then reuse
    let p = catch_unwind(AssertUnwindSafe(|| {
        rt.scope(|s| {
            s.taskloop(0..8, Grain::Tasks(4), |_, r| {
                if r.contains(&5) {
                    panic!("chunk")
                }
            })
        })
    }));
    assert!(p.is_err());
    let p = catch_unwind(AssertUnwindSafe(|| {
        rt.scope(|s| {
            s.taskloop_reduce(
                0..8,
                Grain::Tasks(4),
                || String::from("x"),
                |_, _| String::from("y"),
                |_, _| -> String { panic!("reduce") },
            )
        })
    }));
    assert!(p.is_err());
    let p = catch_unwind(AssertUnwindSafe(|| {
        rt.scope(|s| {
            s.taskloop_reduce(
                0..8,
                Grain::Tasks(4),
                || vec![1u8],
                |_, r| {
                    if r.start == 2 {
                        panic!("body")
                    } else {
                        vec![2u8]
                    }
                },
                |mut a, b| {
                    a.extend(b);
                    a
                },
            )
        })
    }));
    assert!(p.is_err());
    assert_eq!(
        rt.scope(|s| s.taskloop_reduce(0..4, Grain::Auto, || 0, |_, r| r.len(), |a, b| a + b)),
        4
    );
}
