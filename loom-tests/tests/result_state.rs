//! Model checks of `numatask_sched::__internals::ResultState`, the state a task with a result
//! handle shares with the handle: a joiner reads the result only after the finisher's write;
//! when the handle is dropped while the task finishes, exactly one of the two frees the frame,
//! and the handle that frees it sees the result it must drop. The result is an `UnsafeCell`, so
//! loom reports a missing release or acquire. Run through `scripts/loom.sh`.
#![cfg(loom)]

use loom::cell::UnsafeCell;
use loom::sync::Arc;
use loom::thread;
use numatask_loom_tests::model;
use numatask_sched::__internals::{DONE, DROPPED, JOINING, RUNNING, ResultState};

/// A task frame as far as these models need it: the state and the result slot.
struct Frame {
    state: ResultState,
    result: UnsafeCell<u32>,
}

// SAFETY: the result has one writer (the finisher, before `finish`) and is read only by the
// side the state hands the frame to (what these models check).
unsafe impl Sync for Frame {}
unsafe impl Send for Frame {}

fn frame() -> Arc<Frame> {
    Arc::new(Frame {
        state: ResultState::new(),
        result: UnsafeCell::new(0),
    })
}

/// The finishing thread: writes the result, then moves the state to `DONE`; returns whether
/// it frees the frame (the handle was dropped first).
fn finish(f: &Frame) -> bool {
    // SAFETY: the one writer of the result, before `finish`.
    f.result.with_mut(|p| unsafe { *p = 42 });
    match f.state.finish(false) {
        DROPPED => true,
        prev => {
            assert!(prev == RUNNING || prev == JOINING, "finished twice: {prev}");
            false
        }
    }
}

#[test]
fn a_joiner_reads_the_result_the_finisher_wrote() {
    model(|| {
        let f = frame();
        let task = {
            let f = Arc::clone(&f);
            thread::spawn(move || finish(&f))
        };
        // The handle's owner: announces that it waits unless the task is done, then waits.
        if f.state.announce_join() {
            while f.state.get() != DONE {
                thread::yield_now();
            }
        }
        assert_eq!(f.state.get(), DONE);
        // SAFETY: the state is DONE (read with Acquire): the finisher wrote before.
        assert_eq!(unsafe { f.result.with(|p| *p) }, 42);
        assert!(
            !task.join().unwrap(),
            "a joined task's frame is the handle's to free"
        );
    });
}

#[test]
fn a_handle_dropped_while_its_task_finishes_leaves_the_frame_to_exactly_one() {
    model(|| {
        let f = frame();
        let task = {
            let f = Arc::clone(&f);
            thread::spawn(move || finish(&f))
        };
        let handle_frees = f.state.drop_handle() == DONE;
        if handle_frees {
            // The handle drops the result: it must see the finisher's write.
            // SAFETY: the state was DONE (read with Acquire).
            assert_eq!(unsafe { f.result.with(|p| *p) }, 42);
        }
        let task_frees = task.join().unwrap();
        assert!(
            handle_frees != task_frees,
            "exactly one frees: handle {handle_frees}, task {task_frees}"
        );
    });
}

#[test]
fn a_task_finishing_on_its_handles_thread_needs_no_atomic_exchange() {
    model(|| {
        // Same thread: the plain store; a later drop of the handle sees DONE and frees.
        let f = frame();
        // SAFETY: the one writer.
        f.result.with_mut(|p| unsafe { *p = 7 });
        assert_eq!(f.state.finish(true), RUNNING);
        assert_eq!(f.state.drop_handle(), DONE);
        // SAFETY: single thread.
        assert_eq!(unsafe { f.result.with(|p| *p) }, 7);
    });
}
