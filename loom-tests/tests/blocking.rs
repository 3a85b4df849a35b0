//! Model checks of `numatask_sched::__internals::BlockingLatch`, the latch a thread outside the
//! pool waits on while a worker runs its scope: the waiter returns once the latch is set,
//! whether it saw the latch while spinning or blocked first; a lost wake-up leaves it blocked
//! forever, which loom reports as a deadlock. Run through `scripts/loom.sh`.
#![cfg(loom)]

use loom::sync::Arc;
use loom::sync::atomic::{AtomicUsize, Ordering};
use loom::thread;
use numatask_loom_tests::model;
use numatask_sched::__internals::BlockingLatch;

#[test]
fn the_waiter_of_a_blocking_latch_is_woken_and_sees_the_setters_writes() {
    model(|| {
        let latch = Arc::new(BlockingLatch::new());
        let result = Arc::new(AtomicUsize::new(0));
        let setter = {
            let (latch, result) = (Arc::clone(&latch), Arc::clone(&result));
            thread::spawn(move || {
                result.store(42, Ordering::Relaxed);
                latch.set();
            })
        };
        latch.wait();
        assert!(latch.is_set());
        assert_eq!(
            result.load(Ordering::Relaxed),
            42,
            "the setter's write before set"
        );
        setter.join().unwrap();
    });
}

#[test]
fn a_latch_set_before_the_wait_returns_at_once() {
    model(|| {
        let latch = BlockingLatch::new();
        latch.set();
        latch.wait();
        assert!(latch.is_set());
    });
}
