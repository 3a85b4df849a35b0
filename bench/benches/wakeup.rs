//! Wake-up after sleep: how fast a pool whose workers went to sleep comes back, against rayon
//! in the same run. Each round leaves the pool idle for `--idle-ms` (default 5 ms: both
//! runtimes' workers are asleep well within 1 ms), then times, from a thread outside the pool:
//!
//! - `one`: a scope with an empty body (one worker wakes, runs it, and wakes the caller);
//! - `all`: a scope whose body spawns one task per worker, each of which waits until every
//!   one of them has started (every worker must wake).
//!
//! `--idle-ms 0` runs the rounds back to back, the workers still awake: the cost of entering
//! a scope from outside the pool, as a program's time steps pay it.
//!
//! Prints the median and the 99th percentile in microseconds.
//!
//! ```text
//! cargo bench -p numatask-bench --bench wakeup -- --threads 1,2 --rounds 200 --idle-ms 5
//! ```

use std::hint::spin_loop;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::thread;
use std::time::{Duration, Instant};

use numatask::sched::SchedulerKind;
use numatask_bench::args::{self, Parser, fail};
use numatask_bench::filter::Filter;
use numatask_bench::runtime;

struct Args {
    threads: Vec<usize>,
    rounds: usize,
    idle: Duration,
    only: Option<String>,
}

/// Every flag [`parse_args`] accepts (keep the two together).
const USAGE: &str = "\
usage: wakeup [--bench] [OPTIONS]
  --threads N,M     worker counts to run, each from 1 to the runtime's limit
                    (default all cores; smoke run 1,2)
  --rounds N        timed rounds per case, 1 to 100000 (default 200; smoke run 5)
  --idle-ms MS      idle time before each round, 0 to 10000 ms (default 5; smoke run 1)
  --only WORD       only the rows whose name contains WORD: numatask, rayon (default all)
  --bench           measure (cargo bench passes it); without it, a quick smoke run
  -h, --help        print this text
";

fn parse_args() -> Result<Args, String> {
    let smoke = args::smoke();
    let mut args = Args {
        threads: if smoke { vec![1, 2] } else { Vec::new() },
        rounds: if smoke { 5 } else { 200 },
        idle: Duration::from_millis(if smoke { 1 } else { 5 }),
        only: None,
    };
    let mut p = Parser::new(USAGE);
    while let Some(flag) = p.next()? {
        match flag.as_str() {
            "--threads" => args.threads = p.threads()?,
            "--rounds" => args.rounds = p.whole(1, 100_000)?,
            "--idle-ms" => args.idle = Duration::from_millis(p.whole(0, 10_000)? as u64),
            "--only" => args.only = Some(p.value()?),
            _ => p.other()?,
        }
    }
    if args.threads.is_empty() {
        args.threads = args::all_cores();
    }
    Ok(args)
}

/// Waits until `started` reaches `n`, spinning, then yielding (more workers than cores).
fn rendezvous(started: &AtomicUsize, n: usize) {
    started.fetch_add(1, Ordering::SeqCst);
    let mut spins = 0u32;
    while started.load(Ordering::SeqCst) < n {
        if spins < 1 << 10 {
            spin_loop();
            spins += 1;
        } else {
            thread::yield_now();
        }
    }
}

/// Runs `f` once per round after `idle`, and returns the round times.
fn rounds(args: &Args, mut f: impl FnMut()) -> Vec<Duration> {
    f(); // threads started
    (0..args.rounds)
        .map(|_| {
            if !args.idle.is_zero() {
                thread::sleep(args.idle);
            }
            let t = Instant::now();
            f();
            t.elapsed()
        })
        .collect()
}

fn report(name: &str, case: &str, threads: usize, args: &Args, mut times: Vec<Duration>) {
    times.sort();
    let at = |q: f64| times[((times.len() - 1) as f64 * q).round() as usize];
    println!(
        "{name:<10} {case:<4} threads={threads:<3} rounds={} idle_ms={} median_us={:.1} p99_us={:.1}",
        times.len(),
        args.idle.as_millis(),
        at(0.5).as_secs_f64() * 1e6,
        at(0.99).as_secs_f64() * 1e6
    );
}

fn main() {
    let args = parse_args().unwrap_or_else(|e| fail("wakeup", e));
    let filter = Filter::new(args.only.as_deref(), &[]);
    let several_runtimes = args.threads.len() > 1;
    for &threads in &args.threads {
        if filter.wants("numatask") {
            let rt = runtime::build(
                "wakeup",
                runtime::runtime_builder(
                    "wakeup",
                    threads,
                    SchedulerKind::WorkStealing,
                    several_runtimes,
                ),
            );
            report(
                "numatask",
                "one",
                threads,
                &args,
                rounds(&args, || rt.scope(|_| ())),
            );
            let all = rounds(&args, || {
                let started = AtomicUsize::new(0);
                rt.scope(|s| {
                    for _ in 0..threads {
                        let started = &started;
                        s.spawn(move |_| rendezvous(started, threads));
                    }
                });
            });
            report("numatask", "all", threads, &args, all);
        }
        if filter.wants("rayon") {
            let pool = rayon::ThreadPoolBuilder::new()
                .num_threads(threads)
                .build()
                .expect("rayon pool");
            report(
                "rayon",
                "one",
                threads,
                &args,
                rounds(&args, || pool.scope(|_| ())),
            );
            let all = rounds(&args, || {
                let started = AtomicUsize::new(0);
                pool.scope(|s| {
                    for _ in 0..threads {
                        let started = &started;
                        s.spawn(move |_| rendezvous(started, threads));
                    }
                });
            });
            report("rayon", "all", threads, &args, all);
        }
    }
    filter.finish("wakeup");
}
