//! Model checks of `numatask_sched::depend`: completions on other threads racing a registration
//! (the edge-or-finished decision, the registration guard, the hand-over of mutually exclusive
//! sets, poison). In every interleaving each task must be released (or cancelled) exactly once.
//! Run through `scripts/loom.sh`.
#![cfg(loom)]

use loom::sync::{Arc, Mutex};
use loom::thread;
use numatask_sched::depend::{Access, AccessKind};
use numatask_sched::depend::{DepHandle, DepTracker, Ready, Released, Submitted};

type Log = Arc<Mutex<Vec<Event>>>;

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Event {
    Ready(u32),
    Cancelled(u32),
}

fn ready(s: Submitted<u32>) -> Ready<u32> {
    match s {
        Submitted::Ready(r) => r,
        other => panic!("expected a ready task, got {other:?}"),
    }
}

fn record(log: &Log, s: Submitted<u32>) -> Option<DepHandle<u32>> {
    match s {
        Submitted::Ready(r) => {
            log.lock().unwrap().push(Event::Ready(r.payload));
            Some(r.handle)
        }
        Submitted::Deferred => None,
        Submitted::Cancelled(id, released) => {
            // These models cancel at registration only behind a finished predecessor, holding
            // no set: nothing to hand on.
            assert!(
                released.is_empty(),
                "a task cancelled at registration released tasks"
            );
            log.lock().unwrap().push(Event::Cancelled(id));
            None
        }
    }
}

/// Completes `handle` and returns the handles it released, logging every release.
fn complete(log: &Log, handle: DepHandle<u32>, panicked: bool) -> Vec<DepHandle<u32>> {
    let mut handles = Vec::new();
    let sink = |r: Released<u32>| match r {
        Released::Ready(r) => {
            log.lock().unwrap().push(Event::Ready(r.payload));
            handles.push(r.handle);
        }
        Released::Cancelled(id) => log.lock().unwrap().push(Event::Cancelled(id)),
    };
    if panicked {
        handle.complete_panicked(sink);
    } else {
        handle.complete(sink);
    }
    handles
}

fn sorted(log: &Log) -> Vec<Event> {
    let mut events = log.lock().unwrap().clone();
    events.sort_unstable();
    events
}

fn acc(addr: usize, len: usize, kind: AccessKind) -> Access {
    Access::new(addr, len, kind)
}

#[test]
fn two_completions_racing_a_registration_release_it_once() {
    numatask_loom_tests::model(|| {
        let tracker = DepTracker::new();
        let log: Log = Arc::new(Mutex::new(Vec::new()));
        let a = ready(tracker.submit(&[acc(0, 8, AccessKind::Out)], 1));
        let b = ready(tracker.submit(&[acc(8, 8, AccessKind::Out)], 2));
        let threads: Vec<_> = [a, b]
            .into_iter()
            .map(|r| {
                let log = Arc::clone(&log);
                thread::spawn(move || complete(&log, r.handle, false).len())
            })
            .collect();
        // Reads both ranges: waits for whichever of 1 and 2 has not finished.
        let c = tracker.submit(&[acc(0, 16, AccessKind::In)], 3);
        let at_submit = record(&log, c).is_some();
        let by_completions: usize = threads.into_iter().map(|t| t.join().unwrap()).sum();
        assert_eq!(usize::from(at_submit) + by_completions, 1);
        assert_eq!(sorted(&log), [Event::Ready(3)]);
    });
}

#[test]
fn a_writer_registered_during_a_readers_release_waits_for_the_reader() {
    numatask_loom_tests::model(|| {
        let tracker = DepTracker::new();
        let log: Log = Arc::new(Mutex::new(Vec::new()));
        let a = ready(tracker.submit(&[acc(0, 8, AccessKind::Out)], 1));
        let completer = {
            let log = Arc::clone(&log);
            thread::spawn(move || {
                // Completes 1, then whatever that releases (the reader 2), and returns what
                // that releases in turn.
                let mut released = complete(&log, a.handle, false);
                let mut further = Vec::new();
                for h in released.drain(..) {
                    further.extend(complete(&log, h, false));
                }
                further
            })
        };
        let reader = record(&log, tracker.submit(&[acc(0, 8, AccessKind::In)], 2));
        let writer = record(&log, tracker.submit(&[acc(4, 8, AccessKind::Out)], 3));
        let mut writer_runs = usize::from(writer.is_some());
        if let Some(h) = reader {
            writer_runs += complete(&log, h, false).len();
        }
        writer_runs += completer.join().unwrap().len();
        assert_eq!(writer_runs, 1, "the writer is released exactly once");
        let events = log.lock().unwrap().clone();
        let pos = |e| events.iter().position(|&x| x == e).unwrap();
        assert!(pos(Event::Ready(2)) < pos(Event::Ready(3)), "{events:?}");
        assert_eq!(sorted(&log), [Event::Ready(2), Event::Ready(3)]);
    });
}

#[test]
fn a_mutexinoutset_member_registered_during_a_release_gets_the_set_once() {
    numatask_loom_tests::model(|| {
        let tracker = DepTracker::new();
        let log: Log = Arc::new(Mutex::new(Vec::new()));
        let m1 = ready(tracker.submit(&[acc(0, 8, AccessKind::MutexInOutSet)], 1));
        let completer = {
            let log = Arc::clone(&log);
            thread::spawn(move || complete(&log, m1.handle, false).len())
        };
        let m2 = record(
            &log,
            tracker.submit(&[acc(0, 8, AccessKind::MutexInOutSet)], 2),
        );
        let handed_over = completer.join().unwrap();
        assert_eq!(usize::from(m2.is_some()) + handed_over, 1);
        assert_eq!(sorted(&log), [Event::Ready(2)]);
    });
}

#[test]
fn two_mutexinoutset_members_waiting_are_handed_the_set_in_turn() {
    numatask_loom_tests::model(|| {
        let tracker = DepTracker::new();
        let log: Log = Arc::new(Mutex::new(Vec::new()));
        let w = ready(tracker.submit(&[acc(100, 8, AccessKind::Out)], 1));
        let m1 = ready(tracker.submit(&[acc(0, 8, AccessKind::MutexInOutSet)], 2));
        // Waits for 1 (reads its bytes), then for the set.
        let s3 = tracker.submit(
            &[
                acc(0, 8, AccessKind::MutexInOutSet),
                acc(100, 8, AccessKind::In),
            ],
            3,
        );
        assert!(matches!(s3, Submitted::Deferred));
        let t1 = {
            let log = Arc::clone(&log);
            thread::spawn(move || complete(&log, w.handle, false))
        };
        let t2 = {
            let log = Arc::clone(&log);
            thread::spawn(move || complete(&log, m1.handle, false))
        };
        let mut released = t1.join().unwrap();
        released.extend(t2.join().unwrap());
        assert_eq!(released.len(), 1, "member 3 is released once");
        assert_eq!(sorted(&log), [Event::Ready(3)]);
    });
}

#[test]
fn a_panic_racing_a_registration_cancels_the_dependent_task_once() {
    numatask_loom_tests::model(|| {
        let tracker = DepTracker::new();
        let log: Log = Arc::new(Mutex::new(Vec::new()));
        let a = ready(tracker.submit(&[acc(0, 8, AccessKind::Out)], 1));
        let b = ready(tracker.submit(&[acc(8, 8, AccessKind::Out)], 2));
        let panicking = {
            let log = Arc::clone(&log);
            thread::spawn(move || complete(&log, a.handle, true).len())
        };
        let fine = {
            let log = Arc::clone(&log);
            thread::spawn(move || complete(&log, b.handle, false).len())
        };
        let c = tracker.submit(&[acc(0, 16, AccessKind::In)], 3);
        assert!(record(&log, c).is_none(), "3 depends on a panicking task");
        assert_eq!(panicking.join().unwrap() + fine.join().unwrap(), 0);
        assert_eq!(sorted(&log), [Event::Cancelled(3)]);
    });
}

#[test]
fn a_mutexinoutset_member_registered_while_another_panics_is_cancelled_once() {
    numatask_loom_tests::model(|| {
        let tracker = DepTracker::new();
        let log: Log = Arc::new(Mutex::new(Vec::new()));
        let m1 = ready(tracker.submit(&[acc(0, 8, AccessKind::MutexInOutSet)], 1));
        let panicking = {
            let log = Arc::clone(&log);
            thread::spawn(move || complete(&log, m1.handle, true).len())
        };
        // Queued on the set while 1 holds it, or taking it after 1 poisoned it: either way
        // it must not run after the panicking member.
        let m2 = record(
            &log,
            tracker.submit(&[acc(0, 8, AccessKind::MutexInOutSet)], 2),
        );
        assert!(m2.is_none(), "a member after a panicking one is not run");
        assert_eq!(panicking.join().unwrap(), 0);
        assert_eq!(sorted(&log), [Event::Cancelled(2)]);
    });
}

/// Logs a submission and returns every handle to complete: its own if it is ready, and those
/// of the tasks its cancellation released.
fn record_all(log: &Log, s: Submitted<u32>) -> Vec<DepHandle<u32>> {
    match s {
        Submitted::Cancelled(id, released) => {
            log.lock().unwrap().push(Event::Cancelled(id));
            released
                .into_iter()
                .filter_map(|r| match r {
                    Released::Ready(r) => {
                        log.lock().unwrap().push(Event::Ready(r.payload));
                        Some(r.handle)
                    }
                    Released::Cancelled(other) => {
                        log.lock().unwrap().push(Event::Cancelled(other));
                        None
                    }
                })
                .collect()
        }
        other => record(log, other).into_iter().collect(),
    }
}

/// Completes every handle in `handles`, and those they release, until none is left.
fn drain(log: &Log, mut handles: Vec<DepHandle<u32>>) {
    while let Some(h) = handles.pop() {
        handles.extend(complete(log, h, false));
    }
}

#[test]
fn a_member_cancelled_at_a_poisoned_set_hands_on_the_set_it_holds() {
    numatask_loom_tests::model(|| {
        let tracker = DepTracker::new();
        let log: Log = Arc::new(Mutex::new(Vec::new()));
        // Set Y (at 0) is created before set X (at 100), so it is taken first. 3 takes Y
        // and waits for X, held by 1; 4 waits for Y.
        let m2 = ready(tracker.submit(&[acc(0, 8, AccessKind::MutexInOutSet)], 2));
        let m1 = ready(tracker.submit(&[acc(100, 8, AccessKind::MutexInOutSet)], 1));
        assert!(complete(&log, m2.handle, false).is_empty());
        let s3 = tracker.submit(
            &[
                acc(0, 8, AccessKind::MutexInOutSet),
                acc(100, 8, AccessKind::MutexInOutSet),
            ],
            3,
        );
        assert!(matches!(s3, Submitted::Deferred));
        let panicking = {
            let log = Arc::clone(&log);
            thread::spawn(move || complete(&log, m1.handle, true))
        };
        // Submitted while 1 panics: 4 queues on Y behind 3, or finds it handed on already.
        let mut handles = record_all(
            &log,
            tracker.submit(&[acc(0, 8, AccessKind::MutexInOutSet)], 4),
        );
        handles.extend(panicking.join().unwrap());
        drain(&log, handles);
        // 3 takes X after 1 panicked there: cancelled, handing Y on to 4, which runs.
        assert_eq!(sorted(&log), [Event::Ready(4), Event::Cancelled(3)]);
    });
}

#[test]
fn a_member_cancelled_at_registration_hands_on_a_set_another_thread_queued_on() {
    numatask_loom_tests::model(|| {
        let tracker = DepTracker::new();
        let log: Log = Arc::new(Mutex::new(Vec::new()));
        let w = ready(tracker.submit(&[acc(200, 8, AccessKind::Out)], 1));
        // Set Y (at 0) first, clean and free; set X (at 100) poisoned by 3's panic.
        let m2 = ready(tracker.submit(&[acc(0, 8, AccessKind::MutexInOutSet)], 2));
        assert!(complete(&log, m2.handle, false).is_empty());
        let m3 = ready(tracker.submit(&[acc(100, 8, AccessKind::MutexInOutSet)], 3));
        assert!(complete(&log, m3.handle, true).is_empty());
        // 4, a member of Y, waits for 1; 1's completion on another thread releases it, so it
        // takes Y, or queues on it while 5's registration holds it.
        let s4 = tracker.submit(
            &[
                acc(0, 8, AccessKind::MutexInOutSet),
                acc(200, 8, AccessKind::In),
            ],
            4,
        );
        assert!(matches!(s4, Submitted::Deferred));
        let completer = {
            let log = Arc::clone(&log);
            thread::spawn(move || complete(&log, w.handle, false))
        };
        // 5 takes Y, then X, poisoned: cancelled at registration, handing Y on to 4 if 4
        // queued meanwhile (then its release list holds 4), or queued behind 4.
        let mut handles = record_all(
            &log,
            tracker.submit(
                &[
                    acc(0, 8, AccessKind::MutexInOutSet),
                    acc(100, 8, AccessKind::MutexInOutSet),
                ],
                5,
            ),
        );
        handles.extend(completer.join().unwrap());
        drain(&log, handles);
        assert_eq!(sorted(&log), [Event::Ready(4), Event::Cancelled(5)]);
    });
}
