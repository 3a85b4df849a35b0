//! Launches: results of items and group kernels over 1 to 3 dimensions, non-uniform groups,
//! offsets, local memory, task division, and the errors of bad launches.

mod common;

use common::{context, within};
use numatask_kernels::{
    Arg, Error, Kernel, Local, Mode, NdRange, Param, Read, ReadWrite, SIMD_WIDTH, Write,
};
use numatask_sched::SchedulerKind;

fn saxpy() -> Kernel {
    Kernel::items::<(Read<f32>, ReadWrite<f32>, f32), _>("saxpy", |item, (x, y, a)| {
        *y += a * x[item.global_id(0)]
    })
}

#[test]
fn saxpy_over_sizes_local_sizes_and_task_counts_matches_a_loop() {
    within(120, || {
        for kind in SchedulerKind::ALL {
            let ctx = context(2, kind);
            let q = ctx.queue();
            for n in [1usize, 7, 16, 1000, 4099] {
                let xs: Vec<f32> = (0..n).map(|i| i as f32).collect();
                let ys: Vec<f32> = (0..n).map(|i| (i % 7) as f32).collect();
                for (local, tasks) in [
                    (None, None),
                    (Some(1), Some(3)),
                    (Some(64), Some(1)),
                    (Some(5), None),
                ] {
                    let x = ctx.buffer::<f32>(n).unwrap();
                    let y = ctx.buffer::<f32>(n).unwrap();
                    q.write(&x, 0, &xs).unwrap();
                    q.write(&y, 0, &ys).unwrap();
                    let mut range = NdRange::new([n]);
                    if let Some(l) = local {
                        range = range.local([l]);
                    }
                    let mut launch = q.launch(&saxpy(), range).arg(&x).arg(&y).arg(2.0f32);
                    if let Some(t) = tasks {
                        launch = launch.tasks(t);
                    }
                    launch.enqueue().unwrap().wait().unwrap();
                    let got = q.read(&y, 0..n).unwrap().wait().unwrap();
                    let want: Vec<f32> = xs.iter().zip(&ys).map(|(x, y)| y + 2.0 * x).collect();
                    assert_eq!(got, want, "{kind:?} n={n} local={local:?} tasks={tasks:?}");
                }
            }
        }
    });
}

#[test]
fn every_work_item_of_a_3d_range_with_offset_runs_once_with_its_ids() {
    within(60, || {
        let ctx = context(2, SchedulerKind::WorkStealing);
        let q = ctx.queue();
        let (gx, gy, gz) = (13usize, 5usize, 3usize);
        let n = gx * gy * gz;
        let out = ctx.buffer::<[u32; 4]>(n).unwrap();
        let ids = Kernel::items::<(Write<[u32; 4]>,), _>("ids", |item, (o,)| {
            *o = [
                item.global_id(0) as u32,
                item.global_id(1) as u32,
                item.global_id(2) as u32,
                o[3] + 1,
            ]
        });
        q.launch(
            &ids,
            NdRange::new([gx, gy, gz])
                .local([4, 2, 2])
                .offset([100, 10, 1]),
        )
        .arg(&out)
        .enqueue()
        .unwrap()
        .wait()
        .unwrap();
        let got = q.read(&out, 0..n).unwrap().wait().unwrap();
        for z in 0..gz {
            for y in 0..gy {
                for x in 0..gx {
                    let i = x + gx * (y + gy * z);
                    assert_eq!(
                        got[i],
                        [100 + x as u32, 10 + y as u32, 1 + z as u32, 1],
                        "item ({x}, {y}, {z})"
                    );
                }
            }
        }
    });
}

#[test]
fn group_kernels_see_their_sizes_and_share_zeroed_local_memory() {
    within(60, || {
        let ctx = context(2, SchedulerKind::Locality);
        let q = ctx.queue();
        let n = 1000usize;
        let local = 64usize;
        let groups = n.div_ceil(local);
        let x = ctx.buffer::<u64>(n).unwrap();
        let sums = ctx.buffer::<u64>(n).unwrap();
        q.write(&x, 0, &(0..n as u64).collect::<Vec<_>>()).unwrap();
        // Each group sums its part of x through local memory; every item of the group writes
        // the group's sum into its own element.
        let group_sum = Kernel::groups(
            "group_sum",
            vec![
                Param::buffer::<u64>(Mode::Read),
                Param::buffer::<u64>(Mode::Write),
                Param::local::<u64>(),
            ],
            |group, args| {
                let x = args.read::<u64>(0);
                let mut out = args.items_mut::<u64>(1);
                let scratch = args.local::<u64>(2);
                assert!(
                    scratch.iter().all(|&v| v == 0),
                    "local memory starts zeroed"
                );
                let size = group.local_size(0);
                for l in 0..size {
                    scratch[l] = x[group.global_id([l, 0, 0])[0]];
                }
                let total: u64 = scratch[..size].iter().sum();
                scratch.iter_mut().for_each(|v| *v = 99); // dirty it for the next group
                for v in out.row_mut(0, 0) {
                    *v = total;
                }
            },
        );
        q.launch(&group_sum, NdRange::new([n]).local([local]))
            .arg(&x)
            .arg(&sums)
            .arg(Local::<u64>::new(local))
            .enqueue()
            .unwrap()
            .wait()
            .unwrap();
        let got = q.read(&sums, 0..n).unwrap().wait().unwrap();
        for g in 0..groups {
            let lo = g * local;
            let hi = (lo + local).min(n);
            let want: u64 = (lo as u64..hi as u64).sum();
            assert!(got[lo..hi].iter().all(|&v| v == want), "group {g}");
        }
    });
}

#[test]
fn a_chosen_local_size_is_a_multiple_of_the_simd_width() {
    within(60, || {
        let ctx = context(2, SchedulerKind::WorkStealing);
        let q = ctx.queue();
        let n = 100_000;
        let sizes = ctx.buffer::<u32>(n).unwrap();
        let k = Kernel::items::<(Write<u32>,), _>("sizes", |item, (o,)| {
            *o = item.group().enqueued_local_size(0) as u32
        });
        q.launch(&k, NdRange::new([n]))
            .arg(&sizes)
            .enqueue()
            .unwrap()
            .wait()
            .unwrap();
        let got = q.read(&sizes, 0..n).unwrap().wait().unwrap();
        assert_eq!(got[0] as usize % SIMD_WIDTH, 0, "{}", got[0]);
        assert!(got.iter().all(|&s| s == got[0]));
    });
}

#[test]
fn bad_launches_are_errors_at_enqueue_and_queue_nothing() {
    within(60, || {
        let ctx = context(2, SchedulerKind::WorkStealing);
        let other = context(1, SchedulerKind::WorkStealing);
        let q = ctx.queue();
        let x = ctx.buffer::<f32>(100).unwrap();
        let y = ctx.buffer::<f32>(100).unwrap();
        let short = ctx.buffer::<f32>(50).unwrap();
        let ints = ctx.buffer::<i32>(100).unwrap();
        let foreign = other.buffer::<f32>(100).unwrap();
        q.write(&y, 0, &[1.0; 100]).unwrap();
        let k = saxpy();
        let err = |r: Result<_, Error>| r.unwrap_err().to_string();
        let n = NdRange::new([100]);
        assert_eq!(
            err(q.launch(&k, n.clone()).arg(&x).arg(&y).enqueue()),
            "kernel 'saxpy' takes 3 argument(s); 2 given"
        );
        assert_eq!(
            err(q
                .launch(&k, n.clone())
                .arg(&x)
                .arg(&ints)
                .arg(1.0f32)
                .enqueue()),
            "argument 1 of kernel 'saxpy': expected a buffer of f32 (read-write), given a buffer of i32"
        );
        assert_eq!(
            err(q
                .launch(&k, n.clone())
                .arg(1.0f32)
                .arg(&y)
                .arg(1.0f32)
                .enqueue()),
            "argument 0 of kernel 'saxpy': expected a buffer of f32 (read), given a scalar f32"
        );
        assert_eq!(
            err(q
                .launch(&k, n.clone())
                .arg(&x)
                .arg(&short)
                .arg(1.0f32)
                .enqueue()),
            "argument 1 of kernel 'saxpy': the buffer has 50 elements, the launch needs 100"
        );
        assert_eq!(
            err(q
                .launch(&k, n.clone())
                .arg(&y)
                .arg(&y)
                .arg(1.0f32)
                .enqueue()),
            "kernel 'saxpy': arguments 0 and 1 are the same buffer and one of them is written; pass it once, as a read-write argument"
        );
        assert_eq!(
            err(q
                .launch(&k, n.clone())
                .arg(&foreign)
                .arg(&y)
                .arg(1.0f32)
                .enqueue()),
            "argument 0 of kernel 'saxpy' (a buffer of 100 f32) belongs to another context"
        );
        assert_eq!(
            err(q
                .launch(&k, NdRange::new([0]))
                .arg(&x)
                .arg(&y)
                .arg(1.0f32)
                .enqueue()),
            "the global size is 0 in dimension 0"
        );
        assert_eq!(
            err(q
                .launch(&k, n.clone().local([8192]))
                .arg(&x)
                .arg(&y)
                .arg(1.0f32)
                .enqueue()),
            "a local size of 8192 work-items is over the maximum of 4096 per work-group"
        );
        assert_eq!(
            err(q
                .launch(&k, n.clone())
                .arg(&x)
                .arg(&y)
                .arg(1.0f32)
                .tasks(0)
                .enqueue()),
            "a launch needs at least one task"
        );
        let local = Kernel::groups("local", vec![Param::local::<f64>()], |_, _| {});
        assert_eq!(
            err(q
                .launch(&local, n.clone())
                .arg(Local::<f64>::new(1 << 20))
                .enqueue()),
            "kernel 'local' needs 8388608 bytes of local memory per work-group, over the limit of 262144"
        );
        assert_eq!(
            err(q
                .launch(&local, n.clone())
                .arg(Local::<f64>::new(0))
                .enqueue()),
            "a local argument of 0 elements"
        );
        let struct_arg = Kernel::groups("s", vec![Param::scalar::<(u8, u8)>()], |_, _| {});
        assert!(
            q.launch(&struct_arg, n.clone())
                .arg(Arg::scalar((1u8, 2u8)))
                .enqueue()
                .is_ok()
        );
        let foreign_event = other.queue().marker();
        assert_eq!(
            err(q
                .launch(&k, n.clone())
                .arg(&x)
                .arg(&y)
                .arg(1.0f32)
                .wait_for([&foreign_event])
                .enqueue()),
            "the event of 'marker' in the wait list belongs to another context"
        );
        assert_eq!(
            err(q.write(&x, 90, &[0.0; 20])),
            "write: elements 90..110 of a buffer of 100"
        );
        assert_eq!(
            ctx.buffer::<f32>(0).unwrap_err().to_string(),
            "a buffer of 0 elements"
        );
        // Nothing ran: y is as written.
        assert_eq!(q.read(&y, 0..100).unwrap().wait().unwrap(), vec![1.0; 100]);
    });
}
