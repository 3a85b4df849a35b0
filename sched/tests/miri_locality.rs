//! Miri: the locality-aware scheduler with footprints, and the global runtime.
//!
//! Small runtimes (2-3 workers) and sizes, so that `scripts/miri.sh` can run them under Miri,
//! on the stub topology of `cfg(miri)`; CI runs them natively, on the machine's topology.
use std::sync::atomic::{AtomicUsize, Ordering};

use numatask_alloc::{Distribution, NumaVec, Place};
use numatask_sched::Footprint;
use numatask_sched::data::Blocks;
use numatask_sched::{Runtime, SchedulerKind, WaitPolicy};

#[test]
fn locality_scheduler_with_footprints() {
    let rt = Runtime::builder()
        .scheduler(SchedulerKind::Locality)
        .num_threads(3)
        .proc_bind(false)
        .max_task_priority(2)
        .wait_policy(WaitPolicy::Passive)
        .build()
        .expect("runtime");
    assert!(rt.topology().num_nodes() >= 1);
    let chunks: Vec<NumaVec<u8>> = (0..rt.topology().num_nodes())
        .map(|n| NumaVec::zeroed(1 << 16, Place::OnNode(n)).expect("alloc"))
        .collect();
    let mut fine = NumaVec::<u64>::filled(2048, 1, Distribution::Fine).expect("alloc");
    let mut std_ = NumaVec::<u64>::filled(1024, 1, Distribution::Standard).expect("alloc");
    let count = AtomicUsize::new(0);
    rt.scope(|s| {
        for (i, c) in chunks.iter().enumerate() {
            let count = &count;
            s.task().affinity(Footprint::of(c)).spawn(move |s| {
                count.fetch_add(c.len() / (1 << 16), Ordering::Relaxed);
                s.task().priority(i as u32).spawn(move |_| {
                    count.fetch_add(1, Ordering::Relaxed);
                });
            });
        }
        let b = Blocks::new(&mut fine, 512).unwrap();
        for r in &b {
            s.task()
                .updates(r)
                .intensive()
                .spawn(|_, (x,)| x.iter_mut().for_each(|x| *x += 1))
                .unwrap();
        }
        s.task()
            .reads_each(b.iter())
            .priority(1)
            .spawn(|_, (xs,)| assert_eq!(xs[3][0], 2))
            .unwrap();
        let b2 = Blocks::new(&mut std_, 256).unwrap();
        for r in &b2 {
            s.task().updates(r).spawn(|_, (x,)| x[0] = 5).unwrap();
        }
        s.taskloop(0..16, Default::default(), |_, r| {
            count.fetch_add(r.len(), Ordering::Relaxed);
        });
        let h = s.task().spawn_with_result(|s| s.join(|_| 1, |_| 2));
        assert_eq!(h.join(), (1, 2));
    });
    let n = chunks.len();
    assert_eq!(count.load(Ordering::Relaxed), 2 * n + 16);
    assert_eq!(fine[0], 2);
    assert_eq!(std_[256], 5);
}

#[test]
fn global_runtime_from_outside() {
    let (a, b) = numatask_sched::join(|| 1u32, || String::from("x"));
    assert_eq!((a, b.as_str()), (1, "x"));
    let r = numatask_sched::scope(|s| {
        let h = s
            .task()
            .spawn_with_result(|_| numatask_sched::join(|| 2, || 3));
        h.join()
    });
    assert_eq!(r, (2, 3));
}
