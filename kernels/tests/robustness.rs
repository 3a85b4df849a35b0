//! What must not hang, panic or fail too much: mappings held while unrelated commands run,
//! failures reported by later markers, wait lists of another context, poison limited to the
//! elements a failed command was to write, panicking destructors of kernels, bad limits.

mod common;

use std::sync::Arc;

use common::{context, quiet_panics, within};
use numatask_kernels::{Context, Error, Kernel, Limits, MAX_LOCAL_MEM, NdRange, ReadWrite, Write};
use numatask_sched::{Runtime, SchedulerKind};

fn inc() -> Kernel {
    Kernel::items::<(ReadWrite<u32>,), _>("inc", |_, (v,)| *v += 1)
}

#[test]
fn a_held_mapping_blocks_only_the_commands_on_its_buffer() {
    within(60, || {
        let ctx = context(2, SchedulerKind::WorkStealing);
        for q in [ctx.queue(), ctx.out_of_order_queue()] {
            let a = ctx.buffer::<u32>(64).unwrap();
            let b = ctx.buffer::<u32>(64).unwrap();
            let m = q.map(&a).unwrap();
            // Another mapping, a blocking read and a kernel on another buffer, and a marker:
            // none waits for the guard.
            drop(q.map(&b).unwrap());
            let mut out = vec![9u32; 64];
            q.read_into(&b, 0, &mut out).unwrap();
            assert_eq!(out, vec![0; 64]);
            q.launch(&inc(), NdRange::new([64]))
                .arg(&b)
                .enqueue()
                .unwrap()
                .wait()
                .unwrap();
            q.marker().wait().unwrap();
            // A writer of the mapped buffer waits for the guard.
            let w = q
                .launch(&inc(), NdRange::new([64]))
                .arg(&a)
                .enqueue()
                .unwrap();
            std::thread::sleep(std::time::Duration::from_millis(20));
            assert!(!w.is_done());
            assert_eq!(m[0], 0);
            drop(m);
            w.wait().unwrap();
            q.finish().unwrap();
        }
    });
}

#[test]
fn a_marker_reports_a_failure_long_since_pruned() {
    quiet_panics();
    within(60, || {
        let ctx = context(2, SchedulerKind::WorkStealing);
        let q = ctx.out_of_order_queue();
        let y = ctx.buffer::<u32>(64).unwrap();
        let boom = Kernel::items::<(Write<u32>,), _>("boom", |_, _| panic!("fails on purpose"));
        q.launch(&boom, NdRange::new([64]))
            .arg(&y)
            .enqueue()
            .unwrap()
            .wait()
            .unwrap_err();
        let other = ctx.buffer::<u32>(1).unwrap();
        for _ in 0..100 {
            q.fill(&other, 1, 0..1).unwrap().wait().unwrap();
        }
        assert!(q.marker().wait().is_err());
        assert!(q.finish().is_err());
        // Reported once: a marker after `finish` succeeds.
        q.marker().wait().unwrap();
    });
}

#[test]
fn a_marker_refuses_events_of_another_context() {
    within(60, || {
        let ctx = context(1, SchedulerKind::WorkStealing);
        let other = context(1, SchedulerKind::WorkStealing);
        let foreign = other.user_event();
        let q = ctx.queue();
        let err = q.after([foreign.event()]).marker().unwrap_err();
        assert_eq!(
            err.to_string(),
            "the event of 'user event' in the wait list belongs to another context"
        );
        assert!(q.after([foreign.event()]).barrier().is_err());
        foreign.complete();
    });
}

#[test]
fn poison_covers_the_elements_a_failed_command_was_to_write() {
    within(60, || {
        let ctx = context(2, SchedulerKind::WorkStealing);
        let q = ctx.out_of_order_queue();
        let b = ctx.buffer::<u32>(1024).unwrap();
        let gate = ctx.user_event();
        let w = q.after([gate.event()]).write(&b, 0, &[7; 4]).unwrap();
        gate.fail("no input");
        assert!(w.wait().is_err());
        // Elements it was to write fail their readers; the others do not.
        assert!(q.read(&b, 512..1024).unwrap().wait().is_ok());
        assert!(q.read(&b, 2..6).unwrap().wait().is_err());
        // Overwriting them heals them.
        q.write(&b, 0, &[1; 4]).unwrap().wait().unwrap();
        assert_eq!(
            q.read(&b, 0..6).unwrap().wait().unwrap(),
            [1, 1, 1, 1, 0, 0]
        );
        assert!(b.poisoned().is_none());
    });
}

#[test]
fn a_kernel_whose_captures_panic_when_dropped_fails_instead_of_hanging() {
    quiet_panics();
    within(60, || {
        struct Bomb;
        impl Drop for Bomb {
            fn drop(&mut self) {
                panic!("dropped on purpose");
            }
        }
        let ctx = context(2, SchedulerKind::WorkStealing);
        let q = ctx.queue();
        let y = ctx.buffer::<u32>(64).unwrap();
        let bomb = Bomb;
        let k = Kernel::items::<(ReadWrite<u32>,), _>("bomb", move |_, (v,)| {
            let _keep = &bomb;
            *v += 1
        });
        let gate = ctx.user_event();
        let e = q
            .after([gate.event()])
            .launch(&k, NdRange::new([64]))
            .arg(&y)
            .enqueue()
            .unwrap();
        drop(k); // the launch holds the last reference
        gate.complete();
        let err = e.wait().unwrap_err();
        assert!(err.to_string().contains("dropped on purpose"), "{err}");
        // The queue goes on (on other data: y counts as written by the failed kernel).
        let fresh = ctx.buffer::<u32>(64).unwrap();
        q.launch(&inc(), NdRange::new([64]))
            .arg(&fresh)
            .enqueue()
            .unwrap()
            .wait()
            .unwrap();
        assert!(y.poisoned().is_some());
    });
}

#[test]
fn limits_out_of_range_are_errors() {
    let rt = Arc::new(
        Runtime::builder()
            .num_threads(1)
            .proc_bind(false)
            .build()
            .unwrap(),
    );
    let err = Context::with_limits(
        Arc::clone(&rt),
        Limits {
            max_work_group_size: 256,
            local_mem_size: MAX_LOCAL_MEM + 1,
        },
    )
    .unwrap_err();
    assert!(matches!(err, Error::Setting(_)), "{err}");
    assert!(
        Context::with_limits(
            rt,
            Limits {
                max_work_group_size: 0,
                local_mem_size: 1024,
            },
        )
        .is_err()
    );
}
