//! An idle runtime sleeps: its workers use almost no CPU. (Alone in its test binary, so that
//! the only `numatask-*` threads of the process are this test's.)

mod common;

use std::time::Duration;

use common::{fib, fib_seq, within};
use numatask_sched::Runtime;
use numatask_sched::config::WaitPolicy;

/// CPU time, in seconds, used so far by the threads named `numatask-*` (the workers), read
/// from `/proc/self/task/<tid>/stat` (fields 14 and 15, in clock ticks: `sysconf(_SC_CLK_TCK)`
/// per second).
fn worker_cpu_seconds() -> f64 {
    let mut ticks = 0u64;
    for task in std::fs::read_dir("/proc/self/task").expect("procfs") {
        let dir = task.expect("task entry").path();
        let Ok(comm) = std::fs::read_to_string(dir.join("comm")) else {
            continue; // the thread exited meanwhile
        };
        if !comm.starts_with("numatask-") {
            continue;
        }
        let Ok(stat) = std::fs::read_to_string(dir.join("stat")) else {
            continue;
        };
        // The command name may contain blanks: fields are counted after its closing ')'.
        let after = &stat[stat.rfind(')').expect("stat has a comm field") + 1..];
        let fields: Vec<&str> = after.split_whitespace().collect();
        // `after` starts at field 3 (state): utime is field 14, stime field 15.
        ticks +=
            fields[11].parse::<u64>().expect("utime") + fields[12].parse::<u64>().expect("stime");
    }
    // SAFETY: sysconf only reads a configuration value.
    let per_second = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    assert!(per_second > 0, "clock ticks per second");
    ticks as f64 / per_second as f64
}

/// CPU time the workers of `rt` use in one second of idleness, after a burst of work.
fn idle_cpu_seconds(rt: &Runtime) -> f64 {
    // Work first, so that the workers go from busy to idle.
    assert_eq!(rt.scope(|s| fib(s, 20)), fib_seq(20));
    std::thread::sleep(Duration::from_millis(300));
    let before = worker_cpu_seconds();
    std::thread::sleep(Duration::from_secs(1));
    worker_cpu_seconds() - before
}

// The policies one after the other in one test: the CPU time is of every `numatask-*`
// thread of the process.
#[test]
fn idle_runtime_uses_under_five_percent_of_a_core_and_wakes_up() {
    within(60, || {
        for policy in [WaitPolicy::Balanced, WaitPolicy::Passive] {
            let rt = Runtime::builder()
                .num_threads(4)
                .proc_bind(false)
                .wait_policy(policy)
                .build()
                .expect("runtime starts");
            let used = idle_cpu_seconds(&rt);
            assert!(
                used < 0.05,
                "{policy}: idle workers used {used} s of CPU in 1 s"
            );
            // Sleeping workers wake up for new work.
            assert_eq!(rt.scope(|s| fib(s, 20)), fib_seq(20));
        }
        // OMP_WAIT_POLICY=active: idle workers keep searching rather than sleep. Two of
        // them, each yielding its core between rounds, use far more than a twentieth of one
        // core even on a busy two-core machine.
        let rt = Runtime::builder()
            .num_threads(2)
            .proc_bind(false)
            .wait_policy(WaitPolicy::Active)
            .build()
            .expect("runtime starts");
        let used = idle_cpu_seconds(&rt);
        assert!(
            used > 0.2,
            "active: idle workers used only {used} s of CPU in 1 s"
        );
        assert_eq!(rt.scope(|s| fib(s, 20)), fib_seq(20));
    });
}
