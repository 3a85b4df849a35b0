//! Model checks of `numatask_kernels::__internals::EventState`, the kernel executor's event: a
//! status under a mutex, a condition variable for blocking waiters, the wakers of pending
//! polls, and an `ended` flag published after the status and the profiling timestamps.
//!
//! What they check: a blocking waiter returns once the event ended and sees what the command
//! wrote before ending it; of two racing ends the first counts, for every waiter; a poll racing
//! with the end either sees the outcome or leaves a waker that the end wakes; whoever sees the
//! event ended (its profile) sees the status and every timestamp. A lost wake-up leaves a
//! waiter blocked forever, which loom reports as a deadlock. Run through `scripts/loom.sh`.
#![cfg(loom)]

use std::future::{Future, poll_fn};
use std::pin::pin;
use std::task::{Context, Poll, Wake, Waker};
use std::time::Duration;

use loom::sync::Arc;
use loom::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use loom::thread;
use numatask_kernels::__internals::{EventState, Instant, failure};
use numatask_kernels::{EventStatus, Failure, FailureKind};
use numatask_loom_tests::model;

fn event() -> Arc<EventState> {
    EventState::new(
        0,
        Instant::now(),
        Duration::ZERO,
        0,
        "kernel 'k'".to_owned(),
    )
}

fn panicked() -> Failure {
    failure(FailureKind::Panicked {
        command: "kernel 'k'".to_owned(),
        message: "boom".to_owned(),
    })
}

// The wakers are `std::task::Wake`, which is implemented for `std::sync::Arc` only; their
// state is loom's, which is what the model checker tracks.

/// A waker that records that it was woken.
struct Flag(AtomicBool);

impl Wake for Flag {
    fn wake(self: std::sync::Arc<Self>) {
        self.0.store(true, Ordering::Release);
    }
}

/// A waker that unparks the thread that made it.
struct Unpark(thread::Thread);

impl Wake for Unpark {
    fn wake(self: std::sync::Arc<Self>) {
        self.0.unpark();
    }
}

/// Polls `future` until it is ready, parked in between: a waker that is never woken leaves
/// the thread parked forever, which loom reports as a deadlock.
fn block_on<F: Future>(future: F) -> F::Output {
    let mut future = pin!(future);
    let waker = Waker::from(std::sync::Arc::new(Unpark(thread::current())));
    let mut cx = Context::from_waker(&waker);
    loop {
        if let Poll::Ready(output) = future.as_mut().poll(&mut cx) {
            return output;
        }
        thread::park();
    }
}

#[test]
fn a_waiter_returns_once_the_event_ended_and_sees_the_commands_writes() {
    model(|| {
        let state = event();
        let result = Arc::new(AtomicUsize::new(0));
        let command = {
            let (state, result) = (Arc::clone(&state), Arc::clone(&result));
            thread::spawn(move || {
                state.submitted();
                state.started();
                result.store(42, Ordering::Relaxed);
                state.end(Ok(()));
            })
        };
        assert_eq!(state.wait(), Ok(()));
        assert_eq!(state.status(), EventStatus::Complete);
        assert_eq!(
            result.load(Ordering::Relaxed),
            42,
            "the command's write before its end"
        );
        assert!(
            state.profile().is_some(),
            "an event that was waited for has its profile"
        );
        command.join().unwrap();
    });
}

#[test]
fn of_two_racing_ends_the_first_counts_for_every_waiter() {
    model(|| {
        let state = event();
        // Each ender reads the outcome after its end: the second must find the first's.
        let ender = |result: Result<(), Failure>| {
            let state = Arc::clone(&state);
            thread::spawn(move || {
                state.end(result);
                state.outcome()
            })
        };
        let ok = ender(Ok(()));
        let err = ender(Err(panicked()));
        let waited = Some(state.wait());
        assert_eq!(ok.join().unwrap(), waited, "every thread sees one outcome");
        assert_eq!(err.join().unwrap(), waited, "every thread sees one outcome");
        assert_eq!(state.outcome(), waited, "and it stays");
    });
}

#[test]
fn a_poll_racing_with_the_end_sees_the_outcome_or_is_woken() {
    model(|| {
        let state = event();
        let ender = {
            let state = Arc::clone(&state);
            thread::spawn(move || state.end(Ok(())))
        };
        let flag = std::sync::Arc::new(Flag(AtomicBool::new(false)));
        let waker = Waker::from(std::sync::Arc::clone(&flag));
        let first = state.poll(&mut Context::from_waker(&waker));
        ender.join().unwrap();
        if first.is_pending() {
            assert!(
                flag.0.load(Ordering::Acquire),
                "a pending poll's waker is woken by the end"
            );
        }
        assert_eq!(
            state.poll(&mut Context::from_waker(&waker)),
            Poll::Ready(Ok(()))
        );
    });
}

#[test]
fn a_future_of_the_event_completes_when_it_ends() {
    model(|| {
        let state = event();
        let ender = {
            let state = Arc::clone(&state);
            thread::spawn(move || state.end(Err(panicked())))
        };
        let outcome = block_on(poll_fn(|cx| state.poll(cx)));
        assert_eq!(outcome, Err(panicked()));
        ender.join().unwrap();
    });
}

#[test]
fn whoever_sees_the_event_ended_sees_its_status_and_every_timestamp() {
    model(|| {
        let state = event();
        let ender = {
            let state = Arc::clone(&state);
            thread::spawn(move || state.end(Ok(())))
        };
        // The profile is read without the lock, through the `ended` flag: every stamp the end
        // took before it (the model's clock reads 1 ns; a missing stamp reads 0) is visible.
        if let Some(p) = state.profile() {
            let stamped = Duration::from_nanos(1);
            assert_eq!(
                [p.queued, p.submitted, p.started, p.ended],
                [stamped; 4],
                "a profile with a missing stamp: {p:?}"
            );
            assert_eq!(state.status(), EventStatus::Complete);
        }
        ender.join().unwrap();
    });
}
