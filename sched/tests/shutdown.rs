//! Dropping a runtime joins its workers. (Alone in its test binary, so that the only
//! `numatask-*` threads of the process are this test's.)

mod common;

use common::{fib, fib_seq, within};
use numatask_sched::Runtime;

fn worker_threads() -> usize {
    std::fs::read_dir("/proc/self/task")
        .expect("procfs")
        .filter_map(|t| std::fs::read_to_string(t.ok()?.path().join("comm")).ok())
        .filter(|comm| comm.starts_with("numatask-"))
        .count()
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
            drop(rt);
            // `drop` returned after joining: the threads are gone, not just told to stop.
            assert_eq!(worker_threads(), 0);
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
        std::thread::spawn(move || drop(rt))
            .join()
            .expect("drop does not panic");
        assert_eq!(worker_threads(), 0);
    });
}
