//! The taskwait policy: no deadlock with one worker, nested waits or deep recursion, and a
//! waiting worker runs only descendants of the task it waits in.

mod common;

use std::cell::RefCell;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::thread;
use std::time::Duration;

use common::{fib, fib_seq, runtime, within};
use numatask_sched::{Runtime, Scope};

#[test]
fn taskwait_with_one_worker_does_not_deadlock() {
    within(60, || {
        let rt = runtime(1);
        assert_eq!(rt.scope(|s| fib(s, 18)), fib_seq(18));
        let hits = AtomicUsize::new(0);
        rt.scope(|s| {
            for _ in 0..10 {
                s.spawn(|s| {
                    s.spawn(|_| {
                        hits.fetch_add(1, Ordering::Relaxed);
                    });
                    s.taskwait();
                });
            }
            s.taskwait();
        });
        assert_eq!(hits.load(Ordering::Relaxed), 10);
    });
}

/// Nested taskwaits and taskgroups, `depth` levels, each level with a few children.
fn nested<'s>(s: &Scope<'s>, depth: u32, count: &'s AtomicUsize) {
    count.fetch_add(1, Ordering::Relaxed);
    if depth == 0 {
        return;
    }
    s.taskgroup(|s| {
        for _ in 0..2 {
            s.spawn(move |s| nested(s, depth - 1, count));
        }
        s.taskwait();
        s.spawn(move |s| {
            s.spawn(move |s| nested(s, depth - 1, count));
            s.taskwait();
        });
    });
    s.taskwait();
}

#[test]
fn nested_taskwaits_and_taskgroups_do_not_deadlock() {
    within(120, || {
        for workers in [1, 2, 4] {
            let rt = runtime(workers);
            let count = AtomicUsize::new(0);
            rt.scope(|s| nested(s, 6, &count));
            // Each level calls 3 children: (3^7 - 1) / 2 calls in all.
            assert_eq!(count.load(Ordering::Relaxed), 1093, "{workers} workers");
        }
    });
}

fn chain(s: &Scope<'_>, depth: u32) -> u32 {
    if depth == 0 {
        return 0;
    }
    let child = s.spawn_with_result(move |s| chain(s, depth - 1));
    s.taskwait();
    child.join() + 1
}

#[test]
fn recursion_1000_levels_deep_does_not_deadlock() {
    within(120, || {
        for workers in [1, 2] {
            let rt = Runtime::builder()
                .num_threads(workers)
                .proc_bind(false)
                .stack_size(64 << 20)
                .build()
                .expect("runtime starts");
            assert_eq!(rt.scope(|s| chain(s, 1000)), 1000, "{workers} workers");
        }
    });
}

thread_local! {
    /// Ids of the tasks waiting in a taskwait on this thread, innermost last.
    static WAITING: RefCell<Vec<u64>> = const { RefCell::new(Vec::new()) };
}

static NEXT_ID: AtomicU64 = AtomicU64::new(1);

/// A task of a random-ish tree that checks, when it starts, that every task waiting on its
/// thread is one of its ancestors.
fn checked<'s>(s: &Scope<'s>, ancestors: Vec<u64>, depth: u32, violations: &'s AtomicUsize) {
    let ok = WAITING.with(|w| w.borrow().iter().all(|id| ancestors.contains(id)));
    if !ok {
        violations.fetch_add(1, Ordering::Relaxed);
    }
    if depth == 0 {
        // Slow leaves keep their parents waiting, so that waiting workers go stealing.
        thread::sleep(Duration::from_micros(300));
        return;
    }
    let me = NEXT_ID.fetch_add(1, Ordering::Relaxed);
    for _ in 0..3 {
        let mut path = ancestors.clone();
        path.push(me);
        s.spawn(move |s| checked(s, path, depth - 1, violations));
    }
    WAITING.with(|w| w.borrow_mut().push(me));
    s.taskwait();
    WAITING.with(|w| w.borrow_mut().pop());
}

#[test]
fn waiting_worker_runs_only_descendants_of_the_waiting_task() {
    within(120, || {
        let rt = runtime(4);
        let violations = AtomicUsize::new(0);
        rt.scope(|s| {
            // Independent trees: a worker waiting in one of them sees the others' tasks.
            for _ in 0..4 {
                s.spawn(|s| checked(s, Vec::new(), 5, &violations));
            }
        });
        assert_eq!(violations.load(Ordering::Relaxed), 0);
    });
}

thread_local! {
    /// Whether the task running on this thread (or one it waits in) holds `LOCK`.
    static HOLDS_LOCK: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

#[test]
fn a_lock_held_across_taskwait_is_not_taken_again_on_the_same_thread() {
    // With a "run anything while waiting" policy, a worker holding a lock in its taskwait
    // could run an unrelated task that takes the same lock: a self-deadlock. Instead of
    // deadlocking, the unrelated tasks here count how often they would have; tasks that find
    // the lock taken by another thread give up, so that the other workers stay free to run
    // the holder's children.
    within(120, || {
        let rt = runtime(4);
        let lock = std::sync::Mutex::new(0u64);
        let reentries = AtomicUsize::new(0);
        rt.scope(|s| {
            for _ in 0..64 {
                // Unrelated tasks keep coming while holders wait.
                thread::sleep(Duration::from_micros(100));
                s.spawn(|s| {
                    if HOLDS_LOCK.with(|h| h.get()) {
                        reentries.fetch_add(1, Ordering::Relaxed);
                        return;
                    }
                    let Ok(mut guard) = lock.try_lock() else {
                        return;
                    };
                    HOLDS_LOCK.with(|h| h.set(true));
                    for _ in 0..3 {
                        s.spawn(|_| thread::sleep(Duration::from_millis(1)));
                    }
                    s.taskwait();
                    HOLDS_LOCK.with(|h| h.set(false));
                    *guard += 1;
                });
            }
        });
        assert_eq!(reentries.load(Ordering::Relaxed), 0);
        assert!(*lock.lock().unwrap() >= 1);
    });
}

#[test]
fn wake_up_after_sleep_completes_the_work() {
    within(60, || {
        let rt = runtime(2);
        for round in 0..5u64 {
            // Long enough for every worker to fall asleep between rounds.
            thread::sleep(Duration::from_millis(30));
            assert_eq!(rt.scope(|s| fib(s, 10 + round)), fib_seq(10 + round));
            // A task waiting for a child that sleeps must be woken when the child ends.
            let v = rt.scope(|s| {
                let h = s.spawn_with_result(|_| {
                    thread::sleep(Duration::from_millis(20));
                    round
                });
                s.taskwait();
                h.join()
            });
            assert_eq!(v, round);
        }
    });
}
