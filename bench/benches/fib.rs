//! Spawn overhead: fib(n) with one task per call and no cutoff, in one run against rayon::join,
//! rayon::scope and the same program in C with OpenMP tasks under libgomp and LLVM libomp
//! (`bench/c/fib_omp.c`, built by `scripts/bench-fib.sh`). Prints nanoseconds per task.
//!
//! ```text
//! scripts/bench-fib.sh                       # builds the C peers, then runs this
//! cargo bench -p numatask-bench --bench fib -- --n 27 --threads 1,2 --reps 5 [--omp "$PWD"/target/bench-c/fib_gomp ...]
//! cargo bench -p numatask-bench --bench fib -- --only numatask --scheduler ws,locality   # numatask's policies
//! ```
//!
//! `--scheduler` takes a comma-separated list of `NUMATASK_SCHEDULER` names (default `ws`); the
//! numatask rows of a policy other than work stealing are named `numatask[<policy>]`.

use std::time::{Duration, Instant};

use numatask::sched::{SchedulerKind, Scope};
use numatask_bench::args::{self, Parser, fail};
use numatask_bench::filter::Filter;
use numatask_bench::peer::run_omp_peer;
use numatask_bench::runtime;

struct Args {
    n: u32,
    threads: Vec<usize>,
    reps: usize,
    omp: Vec<String>,
    only: Option<String>,
    skip: Vec<String>,
    schedulers: Vec<SchedulerKind>,
}

/// Every flag [`parse_args`] accepts (keep the two together).
const USAGE: &str = "\
usage: fib [--bench] [OPTIONS]
  --n N             compute fib(N), one task per call, 0 to 40 (default 27; smoke run 15)
  --threads N,M     worker counts to run, each from 1 to the runtime's limit
                    (default all cores; smoke run 1,2)
  --reps N          timed runs per row after a warm-up, 1 to 1000 (default 5; smoke run 1)
  --omp BIN         also run this C/OpenMP peer program (repeatable; default none)
  --only WORD       only the rows whose name contains WORD (default all)
  --skip W1,W2      drop the rows whose name contains one of them (default none)
  --scheduler S,T   numatask's policies, NUMATASK_SCHEDULER names
                    (default ws; smoke run all)
  --bench           measure (cargo bench passes it); without it, a quick smoke run
  -h, --help        print this text
";

fn parse_args() -> Result<Args, String> {
    // Under `cargo test --bench NAME` (CI) a quick smoke run checks that every variant still
    // computes fib correctly.
    let smoke = args::smoke();
    let mut args = Args {
        n: if smoke { 15 } else { 27 },
        threads: if smoke { vec![1, 2] } else { Vec::new() },
        reps: if smoke { 1 } else { 5 },
        omp: Vec::new(),
        only: None,
        skip: Vec::new(),
        schedulers: if smoke {
            SchedulerKind::ALL.to_vec()
        } else {
            vec![SchedulerKind::WorkStealing]
        },
    };
    let mut p = Parser::new(USAGE);
    while let Some(flag) = p.next()? {
        match flag.as_str() {
            "--n" => args.n = p.whole(0, 40)? as u32,
            "--reps" => args.reps = p.whole(1, 1000)?,
            "--threads" => args.threads = p.threads()?,
            "--omp" => args.omp.push(p.peer()?),
            "--only" => args.only = Some(p.value()?),
            "--skip" => args.skip = p.list()?,
            "--scheduler" => args.schedulers = p.list()?,
            _ => p.other()?,
        }
    }
    if args.threads.is_empty() {
        args.threads = args::all_cores();
    }
    Ok(args)
}

/// Calls of fib(n), each one a task: calls(n) = 1 + calls(n-1) + calls(n-2).
fn calls(n: u32) -> u64 {
    let (mut a, mut b) = (1u64, 1u64);
    for _ in 2..=n {
        (a, b) = (b, 1 + a + b);
    }
    b
}

/// The OpenMP shape: both calls are tasks, then taskwait (one task per call).
fn fib_numatask(s: &Scope<'_>, n: u64) -> u64 {
    if n < 2 {
        return n;
    }
    let x = s.task().spawn_with_result(move |s| fib_numatask(s, n - 1));
    let y = s.task().spawn_with_result(move |s| fib_numatask(s, n - 2));
    s.taskwait();
    x.join() + y.join()
}

/// The rayon::join shape: the first call is a task, the second runs inline.
fn fib_numatask_join(s: &Scope<'_>, n: u64) -> u64 {
    if n < 2 {
        return n;
    }
    let (x, y) = s.join(
        |s| fib_numatask_join(s, n - 1),
        |s| fib_numatask_join(s, n - 2),
    );
    x + y
}

/// The same with the free `numatask::join`, which needs no `Scope` (each call a scope of its
/// own in the calling worker's runtime).
fn fib_numatask_free_join(n: u64) -> u64 {
    if n < 2 {
        return n;
    }
    let (x, y) = numatask::join(
        || fib_numatask_free_join(n - 1),
        || fib_numatask_free_join(n - 2),
    );
    x + y
}

fn fib_rayon_join(n: u64) -> u64 {
    if n < 2 {
        return n;
    }
    let (x, y) = rayon::join(|| fib_rayon_join(n - 1), || fib_rayon_join(n - 2));
    x + y
}

fn fib_rayon_scope(n: u64) -> u64 {
    if n < 2 {
        return n;
    }
    let (mut x, mut y) = (0, 0);
    rayon::scope(|s| {
        s.spawn(|_| x = fib_rayon_scope(n - 1));
        s.spawn(|_| y = fib_rayon_scope(n - 2));
    });
    x + y
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn time_reps(reps: usize, mut f: impl FnMut() -> u64, expect: u64) -> Duration {
    f(); // warm-up: threads started, caches and free lists primed
    median(
        (0..reps)
            .map(|_| {
                let t = Instant::now();
                let r = f();
                let d = t.elapsed();
                assert_eq!(r, expect, "wrong fib result");
                d
            })
            .collect(),
    )
}

fn report(name: &str, threads: usize, n: u32, d: Duration) {
    let tasks = calls(n);
    println!(
        "{name:<16} threads={threads:<3} n={n} tasks={tasks} median_s={:.6} ns_per_task={:.2}",
        d.as_secs_f64(),
        d.as_secs_f64() * 1e9 / tasks as f64
    );
}

fn main() {
    let args = parse_args().unwrap_or_else(|e| fail("fib", e));
    let n = args.n;
    let expect = fib_sequential(n as u64);
    let filter = Filter::new(args.only.as_deref(), &args.skip);
    let wants = |name: &str| filter.wants(name);
    let several_runtimes = args.threads.len() * args.schedulers.len() > 1;
    for &threads in &args.threads {
        // Times row `name` with `f` (one whole fib run) and reports it, when the filter keeps it.
        let measure = |name: &str, f: &mut dyn FnMut() -> u64| {
            if wants(name) {
                report(name, threads, n, time_reps(args.reps, f, expect));
            }
        };
        for &kind in &args.schedulers {
            let name = match kind {
                SchedulerKind::WorkStealing => "numatask".to_owned(),
                other => format!("numatask[{other}]"),
            };
            let rows = [
                name.clone(),
                format!("{name}::join"),
                format!("{name}::join(free)"),
            ];
            if !rows.iter().any(|row| wants(row)) {
                continue;
            }
            let rt = runtime::build(
                "fib",
                runtime::runtime_builder("fib", threads, kind, several_runtimes),
            );
            measure(&rows[0], &mut || rt.scope(|s| fib_numatask(s, n as u64)));
            measure(&rows[1], &mut || {
                rt.scope(|s| fib_numatask_join(s, n as u64))
            });
            measure(&rows[2], &mut || {
                rt.scope(|_| fib_numatask_free_join(n as u64))
            });
        }
        if wants("rayon::join") || wants("rayon::scope") {
            let pool = rayon::ThreadPoolBuilder::new()
                .num_threads(threads)
                .build()
                .expect("rayon pool");
            measure("rayon::join", &mut || {
                pool.install(|| fib_rayon_join(n as u64))
            });
            measure("rayon::scope", &mut || {
                pool.install(|| fib_rayon_scope(n as u64))
            });
        }
        for bin in &args.omp {
            let peer_args = [n.to_string(), args.reps.to_string()];
            run_omp_peer(bin, &peer_args, threads, None, &[]);
            filter.ran_peer();
        }
    }
    filter.finish("fib");
}

/// The expected result, computed without tasks.
fn fib_sequential(n: u64) -> u64 {
    let (mut a, mut b) = (0u64, 1u64);
    for _ in 0..n {
        (a, b) = (b, a + b);
    }
    a
}
