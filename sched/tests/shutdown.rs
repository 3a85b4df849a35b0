//! Dropping a runtime joins its workers. (Alone in its test binary, so that the only
//! `numatask-*` threads of the process are this test's.)

mod common;

use std::sync::Barrier;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use common::{fib, fib_seq, within, worker_threads};
use numatask_sched::Runtime;

/// Worker threads still listed after a while. A joined thread can stay listed in
/// `/proc/self/task` for a moment after `pthread_join` returned (plain pthreads show it too),
/// so this is only the check that the threads went away at all.
fn worker_threads_after_exit() -> usize {
    let deadline = Instant::now() + Duration::from_secs(2);
    loop {
        let n = worker_threads();
        if n == 0 || Instant::now() > deadline {
            return n;
        }
        std::thread::sleep(Duration::from_millis(1));
    }
}

/// Thread-local destructors of worker threads that have run: a thread runs them as it exits,
/// before a join of it can return.
static EXITED: AtomicUsize = AtomicUsize::new(0);

struct CountsExit;

impl Drop for CountsExit {
    fn drop(&mut self) {
        EXITED.fetch_add(1, Ordering::SeqCst);
    }
}

thread_local! {
    static EXIT_MARK: CountsExit = const { CountsExit };
}

/// Has every one of the `workers` workers of `rt` touch `EXIT_MARK` (each runs one of
/// `workers` tasks that meet at a barrier, so no worker runs two).
fn mark_every_worker(rt: &Runtime, workers: usize) {
    let barrier = Barrier::new(workers);
    rt.scope(|s| {
        for _ in 0..workers {
            let barrier = &barrier;
            s.spawn(move |_| {
                EXIT_MARK.with(|_| {});
                barrier.wait();
            });
        }
    });
}

#[test]
fn dropping_the_runtime_joins_its_workers() {
    within(60, || {
        for workers in [1, 3] {
            let rt = Runtime::builder()
                .num_threads(workers)
                .proc_bind(false)
                .build()
                .expect("runtime starts");
            assert_eq!(worker_threads(), workers);
            assert_eq!(rt.scope(|s| fib(s, 15)), fib_seq(15));
            mark_every_worker(&rt, workers);
            let before = EXITED.load(Ordering::SeqCst);
            drop(rt);
            // `drop` returned after joining: every worker has run its thread-local
            // destructors, that is, finished, rather than only been told to stop.
            assert_eq!(EXITED.load(Ordering::SeqCst) - before, workers);
            assert_eq!(worker_threads_after_exit(), 0);
        }
        // Dropped from another thread, right after it was busy.
        let rt = Runtime::builder()
            .num_threads(2)
            .build()
            .expect("runtime starts");
        rt.scope(|s| {
            for _ in 0..100 {
                s.spawn(|_| std::hint::black_box(()));
            }
        });
        mark_every_worker(&rt, 2);
        let before = EXITED.load(Ordering::SeqCst);
        std::thread::spawn(move || drop(rt))
            .join()
            .expect("drop does not panic");
        assert_eq!(EXITED.load(Ordering::SeqCst) - before, 2);
        assert_eq!(worker_threads_after_exit(), 0);
    });
}
