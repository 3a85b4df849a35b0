//! Miri: dependent tasks through Blocks/Region, panics and cancellation.
//!
//! Small runtimes (2-3 workers) and sizes, so that `scripts/miri.sh` can run them under Miri,
//! on the stub topology of `cfg(miri)`; CI runs them natively, on the machine's topology.

mod common;

use common::{message, passive_runtime};
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Mutex;
use std::sync::atomic::{AtomicU32, Ordering};

use numatask_alloc::{Distribution, NumaVec};
use numatask_sched::data::Blocks;

#[test]
fn all_access_kinds() {
    let rt = passive_runtime(3);
    let mut v = NumaVec::<u64>::filled(16, 1, Distribution::Fine).expect("alloc");
    let mut w = vec![0u64; 16];
    let atoms: Vec<AtomicU32> = (0..8).map(|_| AtomicU32::new(0)).collect();
    let log = Mutex::new(Vec::new());
    rt.scope(|s| {
        let b = Blocks::new(&mut v, 4).expect("blocks");
        let o = Blocks::new(&mut w, 4).expect("blocks");
        let a = Blocks::shared(&atoms, 2).expect("blocks");
        let log = &log;
        for i in 0..b.len() {
            s.task()
                .updates(&b[i])
                .spawn(|_, (x,)| x.iter_mut().for_each(|x| *x *= 2))
                .unwrap();
        }
        for i in 0..b.len() {
            s.task()
                .reads(&b[i])
                .writes(&o[i])
                .spawn(|_, (x, y)| y.copy_from_slice(x))
                .unwrap();
        }
        // mutex updates: mutually exclusive, any order.
        for k in 0..3u64 {
            s.task()
                .mutex_updates(&o[0])
                .spawn(move |_, (y,)| {
                    y[0] += k;
                    log.lock().unwrap().push(k);
                })
                .unwrap();
        }
        // concurrent updates on atomics (shared blocks).
        for _ in 0..3 {
            s.task()
                .concurrent_updates(&a[0])
                .concurrent_updates(&a[1])
                .spawn(|_, (p, q)| {
                    p[0].fetch_add(1, Ordering::Relaxed);
                    q[1].fetch_add(1, Ordering::Relaxed);
                })
                .unwrap();
        }
        s.task()
            .reads(&a[0])
            .spawn(|_, (p,)| assert_eq!(p[0].load(Ordering::Relaxed), 3))
            .unwrap();
        // _each forms
        s.task()
            .reads_each(b.iter())
            .updates_each([&o[1], &o[2]])
            .spawn(|_, (xs, ys)| {
                assert_eq!(xs.len(), 4);
                for y in ys {
                    y[0] += 100;
                }
            })
            .unwrap();
        s.task()
            .writes_each([&o[3]])
            .spawn(|_, (mut ys,)| ys[0][3] = 9)
            .unwrap();
        s.task()
            .mutex_updates_each([&o[1], &o[3]])
            .spawn(|_, (mut ys,)| ys[1][2] = 7)
            .unwrap();
        s.task()
            .mutex_updates_each([&o[3]])
            .spawn(|_, (mut ys,)| ys[0][1] = 6)
            .unwrap();
        s.task()
            .concurrent_updates_each(a.iter())
            .spawn(|_, (ps,)| {
                ps.iter().for_each(|p| {
                    p[0].fetch_add(10, Ordering::Relaxed);
                })
            })
            .unwrap();
        // nested: children of a dependent task with their own dependences
        s.task()
            .updates(&o[2])
            .spawn(|_, (y,)| {
                numatask_sched::scope(|s| {
                    let inner = Blocks::new(y, 2).expect("inner");
                    s.task()
                        .updates(&inner[0])
                        .spawn(|_, (z,)| z[0] += 1)
                        .unwrap();
                    s.task()
                        .reads(&inner[0])
                        .updates(&inner[1])
                        .spawn(|_, (z, u)| u[0] = z[0])
                        .unwrap();
                    s.taskwait();
                });
            })
            .unwrap();
        s.taskwait();
        s.task()
            .reads(&b[0])
            .spawn(|_, (x,)| assert_eq!(x[0], 2))
            .unwrap();
    });
    assert_eq!(w[0], 2 + 3);
    assert_eq!(w[4], 102);
    assert_eq!(w[8], 103);
    assert_eq!(w[10], 103);
    assert_eq!((w[13], w[14], w[15]), (6, 7, 9));
    assert_eq!(atoms[0].load(Ordering::Relaxed), 13);
    assert_eq!(atoms[3].load(Ordering::Relaxed), 3);
    assert_eq!(atoms[2].load(Ordering::Relaxed), 10);
    assert_eq!(log.into_inner().unwrap().len(), 3);
}

/// The cancellation of dependents after a panic at a `taskwait` is
/// `depend_tasks.rs`'s `a_panic_cancels_the_dependent_tasks_and_resumes_at_taskwait`, which
/// `scripts/miri.sh` runs under Miri too; here, a panic escaping to the scope end from a
/// taskgroup of dependent tasks.
#[test]
fn a_panic_in_a_taskgroup_of_dependent_tasks_reaches_the_scope_end() {
    let rt = passive_runtime(2);
    // panic escaping to the scope end, inside a taskgroup with dependent tasks
    let mut u = vec![0u8; 4];
    let r = catch_unwind(AssertUnwindSafe(|| {
        rt.scope(|s| {
            let b = Blocks::new(&mut u, 2).unwrap();
            s.taskgroup(|g| {
                g.task()
                    .updates(&b[0])
                    .spawn(|_, _| panic!("in group"))
                    .unwrap();
                g.task()
                    .updates(&b[0])
                    .spawn(|_, _| unreachable!("cancelled"))
                    .unwrap();
                g.task().updates(&b[1]).spawn(|_, (x,)| x[0] = 1).unwrap();
            });
        })
    }));
    assert_eq!(message(r.expect_err("group panic")), "in group");
    assert_eq!(u[2], 1);
    assert_eq!(rt.scope(|s| s.task().spawn_with_result(|_| 3).join()), 3);
}
