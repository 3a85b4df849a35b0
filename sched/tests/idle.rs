//! An idle runtime sleeps: its workers use almost no CPU. (Alone in its test binary, so that
//! the only `numatask-*` threads of the process are this test's.)

mod common;

use std::time::Duration;

use common::{fib, fib_seq, within};
use numatask_sched::Runtime;
use numatask_sched::config::WaitPolicy;

/// For each thread named `numatask-*` (a worker), the fields of its
/// `/proc/self/task/<tid>/stat` from field 3 (the state) on: those after the command name,
/// which may contain blanks.
fn worker_stat_fields() -> Vec<Vec<String>> {
    let mut workers = Vec::new();
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
        let after = &stat[stat.rfind(')').expect("stat has a comm field") + 1..];
        workers.push(after.split_whitespace().map(str::to_owned).collect());
    }
    workers
}

/// CPU time, in seconds, used so far by the workers: fields 14 and 15 of their stat (utime
/// and stime, in clock ticks: `sysconf(_SC_CLK_TCK)` per second).
fn worker_cpu_seconds() -> f64 {
    let ticks: u64 = worker_stat_fields()
        .iter()
        .map(|f| f[11].parse::<u64>().expect("utime") + f[12].parse::<u64>().expect("stime"))
        .sum();
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

/// The scheduler states (`R` runnable, `S` sleeping, ...) of the workers: field 3 of their
/// stat.
fn worker_states() -> Vec<char> {
    worker_stat_fields()
        .iter()
        .map(|f| f[0].chars().next().expect("a state"))
        .collect()
}

/// Of 50 samples of the idle workers' states over 100 ms, the fraction in which every worker
/// was in `state`.
fn fraction_all_in(state: char) -> f64 {
    let mut hits = 0;
    for _ in 0..50 {
        let states = worker_states();
        if !states.is_empty() && states.iter().all(|&s| s == state) {
            hits += 1;
        }
        std::thread::sleep(Duration::from_millis(2));
    }
    f64::from(hits) / 50.0
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
            let asleep = fraction_all_in('S');
            assert!(
                asleep > 0.9,
                "{policy}: every worker asleep in {asleep} of the samples"
            );
            // Sleeping workers wake up for new work.
            assert_eq!(rt.scope(|s| fib(s, 20)), fib_seq(20));
        }
        // OMP_WAIT_POLICY=active: idle workers keep searching rather than sleep: always
        // runnable (yielding their cores between rounds), never blocked. Their CPU time is not
        // what tells: on a machine busy with other programs a yielding thread gets little.
        let rt = Runtime::builder()
            .num_threads(2)
            .proc_bind(false)
            .wait_policy(WaitPolicy::Active)
            .build()
            .expect("runtime starts");
        assert_eq!(rt.scope(|s| fib(s, 20)), fib_seq(20));
        std::thread::sleep(Duration::from_millis(300));
        let awake = fraction_all_in('R');
        assert!(
            awake > 0.9,
            "active: every worker runnable in only {awake} of the samples"
        );
        assert_eq!(rt.scope(|s| fib(s, 20)), fib_seq(20));
    });
}
