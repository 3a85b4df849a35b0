//! Model checks of `numatask_sched::__internals::ChildCounter`, the count of a frame's
//! unfinished children behind `taskwait`, taskgroups and scope ends: a waiting owner sees its
//! remote children's writes once the count says they are done; when the body ends while the
//! last child finishes elsewhere, exactly one of the two takes the frame, and sees what the
//! other wrote. Data written before a decrement is an `UnsafeCell`, so loom reports a missing
//! release or acquire as a causality violation. Run through `scripts/loom.sh`.
#![cfg(loom)]

use loom::cell::UnsafeCell;
use loom::sync::Arc;
use loom::thread;
use numatask_loom_tests::model;
use numatask_sched::__internals::{ChildCounter, ChildDone};

/// The owner's worker index, and a child's on another worker.
const OWNER: usize = 0;
const OTHER: usize = 1;

/// A frame as the runtime shares it: the counter, and data the children and the body write.
struct Frame {
    children: ChildCounter,
    /// Written by the first child before its decrement.
    first: UnsafeCell<u32>,
    /// Written by the second child before its decrement.
    second: UnsafeCell<u32>,
    /// Written by the body before its end.
    body: UnsafeCell<u32>,
}

// SAFETY: as in the runtime's frames: the counter's cells are touched by the owner's thread
// only, and the data by one writer before its decrement and by readers after the counter
// says that writer is done (which is what these models check).
unsafe impl Sync for Frame {}
unsafe impl Send for Frame {}

fn frame() -> Arc<Frame> {
    Arc::new(Frame {
        children: ChildCounter::new(OWNER),
        first: UnsafeCell::new(0),
        second: UnsafeCell::new(0),
        body: UnsafeCell::new(0),
    })
}

#[test]
fn a_waiting_owner_sees_the_writes_of_children_that_finished_elsewhere() {
    model(|| {
        let f = frame();
        f.children.on_spawn();
        f.children.on_spawn();
        let spawn_child = |write: fn(&Frame)| {
            let f = Arc::clone(&f);
            thread::spawn(move || {
                write(&f);
                // SAFETY: the frame is alive (the Arc) and this is the child's last access.
                unsafe { f.children.child_done(OTHER, OWNER) }
            })
        };
        // SAFETY (both): each cell has one writer, before its child's decrement.
        let a = spawn_child(|f| f.first.with_mut(|p| unsafe { *p = 1 }));
        let b = spawn_child(|f| f.second.with_mut(|p| unsafe { *p = 2 }));
        // The owner is about to wait: its count goes into `pending`.
        f.children.transfer();
        while !f.children.all_done() {
            thread::yield_now();
        }
        // SAFETY: both children finished (the counter says so): no writer is left.
        let seen = unsafe { (f.first.with(|p| *p), f.second.with(|p| *p)) };
        assert_eq!(
            seen,
            (1, 2),
            "the children's writes before their decrements"
        );
        f.children.end_wait();
        let results = [a.join().unwrap(), b.join().unwrap()];
        // Exactly one child ends the transfer, and it wakes the owner, unless both finished
        // before the transfer (then the owner never waited).
        let wakes = results
            .iter()
            .filter(|r| **r == ChildDone::WakeOwner(OWNER))
            .count();
        assert!(wakes <= 1, "{results:?}");
        assert!(
            results
                .iter()
                .all(|r| matches!(r, ChildDone::Pending | ChildDone::WakeOwner(OWNER))),
            "no child takes a frame whose body has not ended: {results:?}"
        );
    });
}

#[test]
fn the_body_end_and_the_last_remote_child_hand_the_frame_to_exactly_one() {
    model(|| {
        let f = frame();
        f.children.on_spawn();
        let child = {
            let f = Arc::clone(&f);
            thread::spawn(move || {
                // SAFETY: the one writer of `first`, before the decrement.
                f.first.with_mut(|p| unsafe { *p = 1 });
                // SAFETY: the frame is alive (the Arc); the child's last access to the counter.
                let done = unsafe { f.children.child_done(OTHER, OWNER) };
                if done == ChildDone::Complete {
                    // The child took the frame: it must see the body's write.
                    // SAFETY: the body ended (its decrement made the count reach 0).
                    assert_eq!(unsafe { f.body.with(|p| *p) }, 7, "the body's write");
                }
                done
            })
        };
        // SAFETY: the one writer of `body`, before the body-end transfer.
        f.body.with_mut(|p| unsafe { *p = 7 });
        let owner_takes = f.children.finish();
        if owner_takes {
            // SAFETY: the child finished (the counter says so).
            assert_eq!(unsafe { f.first.with(|p| *p) }, 1, "the child's write");
        }
        let child_takes = child.join().unwrap() == ChildDone::Complete;
        assert!(
            owner_takes != child_takes,
            "exactly one takes the frame: owner {owner_takes}, child {child_takes}"
        );
    });
}

#[test]
fn a_child_finishing_on_the_owners_thread_counts_without_the_shared_atomic() {
    model(|| {
        let f = frame();
        f.children.on_spawn();
        f.children.on_spawn();
        // One child finishes on the owner's thread, counted locally; the other elsewhere.
        // SAFETY: the frame is alive; each call is that child's last access.
        assert_eq!(
            unsafe { f.children.child_done(OWNER, OWNER) },
            ChildDone::Pending
        );
        let remote = {
            let f = Arc::clone(&f);
            // SAFETY: as above.
            thread::spawn(move || unsafe { f.children.child_done(OTHER, OWNER) })
        };
        let owner_takes = f.children.finish();
        let child_takes = remote.join().unwrap() == ChildDone::Complete;
        assert!(owner_takes != child_takes, "exactly one takes the frame");
    });
}

#[test]
fn after_a_transfer_a_child_finishing_on_the_owners_thread_counts_through_the_atomic() {
    model(|| {
        let f = frame();
        f.children.on_spawn();
        f.children.on_spawn();
        // The owner is about to wait: from here its own completions go through `pending`,
        // so that the remote child's decrement still sees whether it is the last one.
        f.children.transfer();
        let remote = {
            let f = Arc::clone(&f);
            thread::spawn(move || {
                // SAFETY: the one writer of `first`, before the decrement.
                f.first.with_mut(|p| unsafe { *p = 1 });
                // SAFETY: the frame is alive (the Arc); the child's last access.
                unsafe { f.children.child_done(OTHER, OWNER) }
            })
        };
        // A child the waiting owner runs itself.
        // SAFETY: as above.
        let own = unsafe { f.children.child_done(OWNER, OWNER) };
        assert_eq!(own, ChildDone::Pending, "the owner never wakes itself");
        while !f.children.all_done() {
            thread::yield_now();
        }
        // SAFETY: both children finished (the counter says so).
        assert_eq!(
            unsafe { f.first.with(|p| *p) },
            1,
            "the remote child's write"
        );
        f.children.end_wait();
        let done = remote.join().unwrap();
        assert!(
            matches!(done, ChildDone::Pending | ChildDone::WakeOwner(OWNER)),
            "{done:?}"
        );
        // The wait is over: the body ends with every child done, and keeps its frame.
        assert!(f.children.finish(), "the owner takes its finished frame");
    });
}
