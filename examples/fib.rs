//! fib(n) with one task per call and no cutoff: the spawn-overhead benchmark (BENCHMARKS.md).
//! Prints wall time per task for two spellings of the same program:
//!
//! - `spawn`: both recursive calls are tasks (`spawn_with_result`), then `taskwait`, the
//!   OpenMP/BOTS form (`#pragma omp task` twice, `#pragma omp taskwait`);
//! - `join`: the first call is a task, the second runs inline (`Scope::join`).
//!
//! ```text
//! cargo run --release --example fib -- [n=27] [reps=5] [spawn|join]
//! OMP_NUM_THREADS=1 cargo run --release --example fib -- 25
//! ```
//! Workers come from the environment (`OMP_NUM_THREADS`, default one per core).

use std::process::ExitCode;
use std::time::{Duration, Instant};

use numatask::{Runtime, Scope};

fn fib_spawn(s: &Scope<'_>, n: u64) -> u64 {
    if n < 2 {
        return n;
    }
    let x = s.task().spawn_with_result(move |s| fib_spawn(s, n - 1));
    let y = s.task().spawn_with_result(move |s| fib_spawn(s, n - 2));
    s.taskwait();
    x.join() + y.join()
}

fn fib_join(s: &Scope<'_>, n: u64) -> u64 {
    if n < 2 {
        return n;
    }
    let (x, y) = s.join(move |s| fib_join(s, n - 1), move |s| fib_join(s, n - 2));
    x + y
}

/// Calls of fib(n), each one a task: calls(n) = 1 + calls(n-1) + calls(n-2).
fn calls(n: u64) -> u64 {
    let (mut a, mut b) = (1u64, 1u64);
    for _ in 2..=n {
        (a, b) = (b, 1 + a + b);
    }
    b
}

fn fib_seq(n: u64) -> u64 {
    (0..n).fold((0u64, 1u64), |(a, b), _| (b, a + b)).0
}

const USAGE: &str =
    "usage: fib [n (0 to 45, default 27)] [reps (1 to 1000, default 5)] [spawn|join]";

#[path = "common/sigpipe.rs"]
mod sigpipe;

fn main() -> ExitCode {
    sigpipe::restore_default();
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("fib: {e}");
            ExitCode::from(2)
        }
    }
}

/// The positional argument `what` as a number from `lo` to `hi`, `default` when absent.
fn number(arg: Option<String>, what: &str, lo: u64, hi: u64, default: u64) -> Result<u64, String> {
    let Some(arg) = arg else { return Ok(default) };
    match arg.trim().parse::<u64>() {
        Ok(v) if (lo..=hi).contains(&v) => Ok(v),
        _ => Err(format!(
            "{what} '{arg}': expected a whole number from {lo} to {hi}\n{USAGE}"
        )),
    }
}

fn run() -> Result<(), Box<dyn std::error::Error>> {
    if std::env::args().any(|a| a == "-h" || a == "--help") {
        println!("{USAGE}");
        return Ok(());
    }
    let mut args = std::env::args().skip(1);
    let n = number(args.next(), "n", 0, 45, 27)?;
    let reps = number(args.next(), "reps", 1, 1000, 5)? as usize;
    let only = args.next();
    if let Some(o) = only.as_deref().filter(|o| !["spawn", "join"].contains(o)) {
        return Err(format!("'{o}': expected spawn or join\n{USAGE}").into());
    }
    if let Some(extra) = args.next() {
        return Err(format!("unexpected argument '{extra}'\n{USAGE}").into());
    }
    let rt = Runtime::new()?;
    let expect = fib_seq(n);
    let tasks = calls(n);
    type Fib = fn(&Scope<'_>, u64) -> u64;
    for (name, f) in [("spawn", fib_spawn as Fib), ("join", fib_join as Fib)] {
        if only.as_deref().is_some_and(|o| o != name) {
            continue;
        }
        // Warm-up: workers awake, allocator caches primed.
        assert_eq!(rt.scope(|s| f(s, n)), expect);
        let mut times: Vec<Duration> = (0..reps)
            .map(|_| {
                let t = Instant::now();
                let r = rt.scope(|s| f(s, n));
                let d = t.elapsed();
                assert_eq!(r, expect, "wrong fib result");
                d
            })
            .collect();
        times.sort();
        let (median, min) = (times[times.len() / 2], times[0]);
        let per_task = |d: Duration| d.as_secs_f64() * 1e9 / tasks as f64;
        println!(
            "numatask {name:<5} workers={} n={n} tasks={tasks} median_s={:.6} \
             ns_per_task={:.2} min_ns_per_task={:.2}",
            rt.num_workers(),
            median.as_secs_f64(),
            per_task(median),
            per_task(min)
        );
    }
    Ok(())
}
