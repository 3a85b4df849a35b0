//! Queues and events: order in in-order queues, concurrency in out-of-order ones, wait lists,
//! markers, barriers, user events, failures and what depends on them, profiling, futures.

mod common;

use std::future::Future;
use std::pin::pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Barrier};
use std::task::{Context as TaskContext, Poll, Wake, Waker};

use common::{context, quiet_panics, within};
use numatask_kernels::{EventStatus, FailureKind, Kernel, NdRange, Read, ReadWrite, Write};
use numatask_sched::SchedulerKind;

/// `y[i] = y[i] * 10 + d`: the order of two such launches shows in the result.
fn append(d: u64) -> Kernel {
    Kernel::items::<(ReadWrite<u64>,), _>("append", move |_, (y,)| *y = *y * 10 + d)
}

fn panicking() -> Kernel {
    Kernel::items::<(Write<u64>,), _>("boom", |item, (_y,)| {
        if item.global_id(0) == 3 {
            panic!("kernel fails on purpose");
        }
    })
}

#[test]
fn an_in_order_queue_runs_commands_in_order() {
    within(60, || {
        for kind in SchedulerKind::ALL {
            let ctx = context(2, kind);
            let q = ctx.queue();
            let y = ctx.buffer::<u64>(64).unwrap();
            for d in 1..=5 {
                q.launch(&append(d), NdRange::new([64]))
                    .arg(&y)
                    .enqueue()
                    .unwrap();
            }
            q.finish().unwrap();
            let got = q.read(&y, 0..64).unwrap().wait().unwrap();
            assert!(got.iter().all(|&v| v == 12345), "{kind:?}: {got:?}");
        }
    });
}

#[test]
fn independent_commands_of_an_out_of_order_queue_run_at_the_same_time() {
    within(60, || {
        let ctx = context(2, SchedulerKind::WorkStealing);
        let q = ctx.out_of_order_queue();
        // Each kernel's single work-item waits for the other's: they finish only if both run
        // at once.
        let meet = Arc::new(Barrier::new(2));
        let k = {
            let meet = Arc::clone(&meet);
            Kernel::items::<(Write<u32>,), _>("meet", move |_, (o,)| {
                meet.wait();
                *o = 1;
            })
        };
        let a = ctx.buffer::<u32>(1).unwrap();
        let b = ctx.buffer::<u32>(1).unwrap();
        let ea = q.launch(&k, NdRange::new([1])).arg(&a).enqueue().unwrap();
        let eb = q.launch(&k, NdRange::new([1])).arg(&b).enqueue().unwrap();
        ea.wait().unwrap();
        eb.wait().unwrap();
    });
}

#[test]
fn wait_lists_markers_and_barriers_order_an_out_of_order_queue() {
    within(60, || {
        let ctx = context(2, SchedulerKind::WorkStealing);
        let q = ctx.out_of_order_queue();
        let order = Arc::new(std::sync::Mutex::new(Vec::new()));
        let log = |name: &'static str| {
            let order = Arc::clone(&order);
            Kernel::items::<(Write<u8>,), _>(name, move |_, _| order.lock().unwrap().push(name))
        };
        let gate = ctx.user_event();
        let bufs: Vec<_> = (0..4).map(|_| ctx.buffer::<u8>(1).unwrap()).collect();
        let first = q
            .after([gate.event()])
            .launch(&log("first"), NdRange::new([1]))
            .arg(&bufs[0])
            .enqueue()
            .unwrap();
        let second = q
            .launch(&log("second"), NdRange::new([1]))
            .arg(&bufs[1])
            .wait_for([&first])
            .enqueue()
            .unwrap();
        let marker = q.marker();
        let barrier = q.barrier();
        let after = q
            .launch(&log("after"), NdRange::new([1]))
            .arg(&bufs[2])
            .enqueue()
            .unwrap();
        assert_eq!(first.status(), EventStatus::Queued);
        assert!(!marker.is_done() && !barrier.is_done());
        gate.complete();
        after.wait().unwrap();
        marker.wait().unwrap();
        assert!(second.is_done() && barrier.is_done());
        assert_eq!(*order.lock().unwrap(), ["first", "second", "after"]);
        q.finish().unwrap();
    });
}

#[test]
fn a_panicking_kernel_fails_its_event_and_what_depends_on_it_and_nothing_else() {
    quiet_panics();
    within(60, || {
        for kind in SchedulerKind::ALL {
            let ctx = context(2, kind);
            let q = ctx.out_of_order_queue();
            let y = ctx.buffer::<u64>(64).unwrap();
            let other = ctx.buffer::<u64>(64).unwrap();
            let failed = q
                .launch(&panicking(), NdRange::new([64]).local([4]))
                .arg(&y)
                .enqueue()
                .unwrap();
            let err = failed.wait().unwrap_err();
            match err.kind() {
                FailureKind::Panicked { command, message } => {
                    assert_eq!(command, "kernel 'boom'");
                    assert_eq!(message, "kernel fails on purpose");
                }
                k => panic!("{k:?}"),
            }
            // By wait list.
            let waiting = q
                .launch(&append(1), NdRange::new([64]))
                .arg(&other)
                .wait_for([&failed])
                .enqueue()
                .unwrap();
            let e = waiting.wait().unwrap_err();
            assert_eq!(e.root(), &err);
            assert!(
                e.to_string()
                    .contains("kernel 'boom' panicked: kernel fails on purpose"),
                "{e}"
            );
            // Through the buffer it wrote (poisoned), with no wait list.
            let reader = q.read(&y, 0..64).unwrap();
            assert_eq!(reader.wait().unwrap_err().root(), &err);
            assert!(y.poisoned().is_some());
            // A marker over it fails too.
            assert!(q.marker().wait().is_err());
            // Unrelated work still runs, and overwriting the buffer whole clears the poison.
            let fresh = ctx.buffer::<u64>(64).unwrap();
            q.launch(&append(7), NdRange::new([64]))
                .arg(&fresh)
                .enqueue()
                .unwrap()
                .wait()
                .unwrap();
            q.fill(&y, 5, 0..64).unwrap().wait().unwrap();
            assert!(y.poisoned().is_none());
            assert_eq!(q.read(&y, 0..64).unwrap().wait().unwrap(), vec![5; 64]);
            assert!(
                q.finish().is_err(),
                "finish reports the failures since the last finish"
            );
            q.finish().unwrap();
        }
    });
}

#[test]
fn user_events_hold_commands_and_fail_them() {
    within(60, || {
        let ctx = context(2, SchedulerKind::WorkStealing);
        let q = ctx.queue();
        let y = ctx.buffer::<u64>(8).unwrap();
        let gate = ctx.user_event();
        let held = q
            .after([gate.event()])
            .launch(&append(1), NdRange::new([8]))
            .arg(&y)
            .enqueue()
            .unwrap();
        std::thread::sleep(std::time::Duration::from_millis(20));
        assert_eq!(held.status(), EventStatus::Queued);
        gate.fail("the input never came");
        let e = held.wait().unwrap_err();
        assert_eq!(
            e.root().kind(),
            &FailureKind::User("the input never came".into())
        );
        // A dropped user event fails what waits for it.
        let dropped = ctx.user_event();
        let w = q.after([dropped.event()]).marker().unwrap();
        drop(dropped);
        assert_eq!(
            w.wait().unwrap_err().root().kind(),
            &FailureKind::UserEventDropped
        );
    });
}

#[test]
fn profiles_are_in_order_and_events_are_futures() {
    within(60, || {
        let ctx = context(2, SchedulerKind::WorkStealing);
        let q = ctx.queue();
        let y = ctx.buffer::<u64>(1 << 16).unwrap();
        let e = q
            .launch(&append(3), NdRange::new([1 << 16]))
            .arg(&y)
            .enqueue()
            .unwrap();
        assert_eq!(block_on(e.clone()), Ok(()));
        let p = e.profile().expect("ended");
        assert!(
            p.queued <= p.submitted && p.submitted <= p.started && p.started <= p.ended,
            "{p:?}"
        );
        let gate = ctx.user_event();
        let m = q.after([gate.event()]).marker().unwrap();
        assert!(m.profile().is_none());
        let t = std::thread::spawn(move || block_on(m));
        std::thread::sleep(std::time::Duration::from_millis(10));
        gate.complete();
        assert_eq!(t.join().unwrap(), Ok(()));
    });
}

#[test]
fn reads_of_a_buffer_share_it_while_writers_wait() {
    within(60, || {
        let ctx = context(2, SchedulerKind::WorkStealing);
        let q = ctx.out_of_order_queue();
        let x = ctx.buffer::<u32>(1024).unwrap();
        q.fill(&x, 3, 0..1024).unwrap();
        let m1 = q.map(&x).unwrap();
        let m2 = q.map(&x).unwrap(); // two readers at once
        assert_eq!(m1[0] + m2[1023], 6);
        let runs = Arc::new(AtomicUsize::new(0));
        let k = {
            let runs = Arc::clone(&runs);
            Kernel::items::<(ReadWrite<u32>,), _>("inc", move |_, (v,)| {
                runs.fetch_add(1, Ordering::Relaxed);
                *v += 1
            })
        };
        let w = q
            .launch(&k, NdRange::new([1024]))
            .arg(&x)
            .enqueue()
            .unwrap();
        std::thread::sleep(std::time::Duration::from_millis(20));
        assert_eq!(
            runs.load(Ordering::Relaxed),
            0,
            "the writer waits for the mappings"
        );
        drop(m1);
        drop(m2);
        w.wait().unwrap();
        let mut m = q.map_mut(&x).unwrap();
        assert!(m.iter().all(|&v| v == 4));
        m[0] = 100;
        drop(m);
        let r = Kernel::items::<(Read<u32>, Write<u32>), _>("copy", |item, (x, o)| {
            *o = x[item.global_id(0)]
        });
        let out = ctx.buffer::<u32>(1024).unwrap();
        q.launch(&r, NdRange::new([1024]))
            .arg(&x)
            .arg(&out)
            .enqueue()
            .unwrap();
        let mut host = vec![0u32; 1024];
        q.read_into(&out, 0, &mut host).unwrap();
        assert_eq!(host[0], 100);
        assert_eq!(host[1], 4);
    });
}

/// A minimal executor: polls `f` on this thread, parking between wake-ups.
fn block_on<F: Future>(f: F) -> F::Output {
    struct Unpark(std::thread::Thread);
    impl Wake for Unpark {
        fn wake(self: Arc<Self>) {
            self.0.unpark();
        }
    }
    let waker = Waker::from(Arc::new(Unpark(std::thread::current())));
    let mut cx = TaskContext::from_waker(&waker);
    let mut f = pin!(f);
    loop {
        if let Poll::Ready(v) = f.as_mut().poll(&mut cx) {
            return v;
        }
        std::thread::park();
    }
}
