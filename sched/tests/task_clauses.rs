//! The task construct's clauses (`Scope::task`): `if`, `final`, results of dependent tasks,
//! mixed-kind declarations with indexed views, raw `depend` and the errors of declarations.

mod common;

use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::thread;

use common::{runtime, within};
use numatask_sched::data::Blocks;
use numatask_sched::depend::{Access, AccessKind};
use numatask_sched::{DependError, Footprint};

#[test]
fn an_undeferred_task_runs_on_the_spawning_thread_before_spawn_returns() {
    let rt = runtime(2);
    let ran = AtomicUsize::new(0);
    rt.scope(|s| {
        for i in 1..=50 {
            let (ran, here) = (&ran, s.worker_index());
            s.task().defer_if(false).spawn(move |s| {
                assert_eq!(s.worker_index(), here);
                ran.store(i, Ordering::SeqCst);
            });
            assert_eq!(ran.load(Ordering::SeqCst), i, "ran before spawn returned");
        }
    });
}

#[test]
fn an_undeferred_final_task_includes_its_children_and_runs_at_once() {
    let rt = runtime(2);
    let order = Mutex::new(Vec::new());
    rt.scope(|s| {
        let order = &order;
        s.task().defer_if(false).final_if(true).spawn(move |s| {
            assert!(s.in_final());
            let here = thread::current().id();
            for i in 0..4 {
                s.spawn(move |_| {
                    assert_eq!(thread::current().id(), here, "included");
                    order.lock().unwrap().push(i);
                });
            }
        });
        // Every child was included, so they ran in spawn order before `spawn` returned.
        assert_eq!(*order.lock().unwrap(), [0, 1, 2, 3]);
    });
}

#[test]
fn an_undeferred_result_task_is_finished_when_spawn_returns() {
    let rt = runtime(2);
    rt.scope(|s| {
        let h = s.task().defer_if(false).spawn_with_result(|_| 7u32);
        assert!(h.is_finished());
        assert_eq!(h.join(), 7);
    });
}

#[test]
fn a_dependent_task_returns_its_result_after_its_predecessors() {
    within(60, || {
        let rt = runtime(2);
        let mut v = vec![0u64; 64];
        let sums = rt
            .scope(|s| {
                let blocks = Blocks::new(&mut v, 8)?;
                let mut handles = Vec::new();
                for round in 1..=20u64 {
                    for b in &blocks {
                        s.task()
                            .updates(b)
                            .spawn(move |_, (x,)| x.iter_mut().for_each(|e| *e += round))?;
                    }
                    handles.push(s.task().reads_each(&blocks).spawn_with_result(
                        |_, (parts,)| parts.iter().flat_map(|p| p.iter()).sum::<u64>(),
                    )?);
                }
                Ok::<_, DependError>(handles.into_iter().map(|h| h.join()).collect::<Vec<_>>())
            })
            .expect("declarations are valid");
        // After round r every element holds 1 + 2 + ... + r.
        let expected: Vec<u64> = (1..=20u64).map(|r| 64 * r * (r + 1) / 2).collect();
        assert_eq!(sums, expected);
    });
}

#[test]
fn an_undeferred_dependent_task_waits_for_its_predecessors_before_spawn_returns() {
    within(60, || {
        let rt = runtime(2);
        let mut v = vec![0u32; 16];
        let seen = AtomicUsize::new(0);
        rt.scope(|s| {
            let blocks = Blocks::new(&mut v, 4)?;
            for b in &blocks {
                s.task().writes(b).spawn(|_, (x,)| {
                    thread::sleep(std::time::Duration::from_millis(5));
                    x.fill(1)
                })?;
            }
            let seen = &seen;
            s.task()
                .reads(blocks.whole())
                .defer_if(false)
                .spawn(|_, (all,)| {
                    seen.store(all.iter().sum::<u32>() as usize, Ordering::SeqCst)
                })?;
            assert_eq!(
                seen.load(Ordering::SeqCst),
                16,
                "ran after the writers, before return"
            );
            Ok::<(), DependError>(())
        })
        .expect("valid");
    });
}

#[test]
fn mixed_kind_declarations_give_views_that_know_where_they_start() {
    let rt = runtime(2);
    let mut v: Vec<u32> = (0..100).collect();
    rt.scope(|s| {
        let blocks = Blocks::new(&mut v, 10)?;
        // Every odd block becomes the sum of the first elements of the even blocks before it:
        // a depend list whose length and kinds the program computes.
        for odd in (1..blocks.len()).step_by(2) {
            let list = (0..odd)
                .filter(|i| i % 2 == 0)
                .map(|i| (AccessKind::In, &blocks[i]))
                .chain([(AccessKind::InOut, &blocks[odd])]);
            s.task().accesses(list).spawn(move |_, (views,)| {
                let mut sum = 0;
                for view in &views {
                    match view.kind() {
                        AccessKind::In => {
                            assert_eq!(view.start() % 20, 0, "an even block");
                            sum += view[0];
                        }
                        _ => assert_eq!(view.start(), odd * 10),
                    }
                }
                let mut out = views.into_iter().find(|v| v.start() == odd * 10).unwrap();
                out.get_mut().expect("InOut gives &mut")[0] = sum;
            })?;
        }
        Ok::<(), DependError>(())
    })
    .expect("valid");
    for odd in (1..10).step_by(2) {
        let expected: u32 = (0..odd as u32).filter(|i| i % 2 == 0).map(|i| i * 10).sum();
        assert_eq!(v[odd * 10], expected, "block {odd}");
    }
}

#[test]
fn mixed_declarations_are_checked_like_the_others() {
    let rt = runtime(2);
    let input = vec![1u32; 40];
    let mut out = vec![0u32; 40];
    rt.scope(|s| {
        let shared = Blocks::shared(&input, 10).unwrap();
        let blocks = Blocks::new(&mut out, 10).unwrap();
        let refused = s
            .task()
            .accesses([(AccessKind::In, &shared[0]), (AccessKind::Out, &shared[1])])
            .spawn(|_, _| unreachable!("refused"));
        assert_eq!(
            refused,
            Err(DependError::ReadOnlyRegion {
                kind: AccessKind::Out
            })
        );
        let overlapping = s
            .task()
            .accesses([
                (AccessKind::InOut, &blocks[0]),
                (AccessKind::In, blocks.whole()),
            ])
            .spawn(|_, _| unreachable!("refused"));
        assert!(matches!(
            overlapping,
            Err(DependError::ConflictingAccesses {
                first: 0,
                second: 1,
                ..
            })
        ));
        // A shared region read, a writable one written: fine.
        s.task()
            .accesses([(AccessKind::In, &shared[2])])
            .writes(&blocks[2])
            .spawn(|_, (ins, out)| out.copy_from_slice(&ins[0]))
            .expect("valid");
    });
    assert_eq!(out[20..30], [1; 10]);
}

#[test]
fn raw_depend_orders_tasks_on_byte_ranges() {
    within(60, || {
        let rt = runtime(2);
        let mut buf = vec![0u64; 256];
        let (addr, n) = (buf.as_mut_ptr() as usize, buf.len());
        rt.scope(|s| {
            for round in 0..50u64 {
                let all = [Access::new(addr, n * 8, AccessKind::InOut)];
                // SAFETY: the task writes only the declared bytes of `buf`, which outlives the
                // scope and is touched by nothing else meanwhile.
                unsafe {
                    s.task().label("round").depend(&all).spawn(move |_| {
                        let p = addr as *mut u64;
                        for i in 0..n {
                            *p.add(i) = *p.add(i) * 2 + round % 2;
                        }
                    });
                }
            }
        });
        let expected = (0..50u64).fold(0u64, |x, r| x.wrapping_mul(2).wrapping_add(r % 2));
        assert!(buf.iter().all(|&x| x == expected));
    });
}

#[test]
fn a_footprint_is_a_hint_that_orders_nothing() {
    let rt = runtime(2);
    let data = vec![0u8; 1 << 16];
    let count = AtomicUsize::new(0);
    rt.scope(|s| {
        for _ in 0..32 {
            let count = &count;
            s.task()
                .affinity(Footprint::of(&data).intensive())
                .priority(1)
                .label("hint")
                .spawn(move |_| {
                    count.fetch_add(1, Ordering::SeqCst);
                });
        }
    });
    assert_eq!(count.into_inner(), 32);
}
