//! Loop overhead: `a[i] = 2 b[i] + 1` over `n` doubles in chunks of a grain size, in one run
//! with numatask's `taskloop_mut` and `taskloop_zip`, rayon's `par_chunks_mut` (`zip`ped
//! with `b`'s chunks, the same chunks), a plain sequential loop, and the same loop as
//! `#pragma omp taskloop grainsize(G)` under libgomp and LLVM libomp
//! (`bench/c/taskloop_omp.c`, built by `scripts/bench-taskloop.sh`). Small grains measure the
//! cost per chunk; large ones the memory bandwidth. Prints the median time of a
//! loop and the nanoseconds per chunk. With `--reduce`, the loop sums `2 b[i] + 1` instead:
//! `taskloop_reduce`, rayon's `par_chunks(..).map(..).sum()`, and `taskloop reduction(+: s)`.
//!
//! ```text
//! scripts/bench-taskloop.sh                  # builds the C peers, then runs this
//! cargo bench -p numatask-bench --bench taskloop -- --n 4194304 --grain 256,4096,65536 --threads 1,2 --reps 9
//! ```

use std::time::{Duration, Instant};

use numatask::sched::SchedulerKind;
use numatask::sched::taskloop::Grain;
use numatask_bench::args::{self, Parser, fail};
use numatask_bench::filter::Filter;
use numatask_bench::peer::run_omp_peer;
use numatask_bench::runtime;
use rayon::prelude::*;

struct Args {
    n: usize,
    grains: Vec<usize>,
    threads: Vec<usize>,
    reps: usize,
    omp: Vec<String>,
    only: Option<String>,
    reduce: bool,
}

/// Every flag [`parse_args`] accepts (keep the two together).
const USAGE: &str = "\
usage: taskloop [--bench] [OPTIONS]
  --n N             loop length in doubles, 1 to 1073741824 (default 4194304; smoke run 16384)
  --grain G,H       grain sizes (elements per chunk), each 1 to N
                    (default 256,4096,65536; smoke run 100,4096)
  --threads N,M     worker counts to run, each from 1 to the runtime's limit
                    (default all cores; smoke run 1,2)
  --reps N          timed loops per row after a warm-up, 1 to 1000 (default 9; smoke run 1)
  --omp BIN         also run this C/OpenMP peer program (repeatable; default none)
  --only WORD       only the rows whose name contains WORD (default all)
  --reduce          sum 2 b[i] + 1 (a reduction) instead of writing it to a[i]
  --bench           measure (cargo bench passes it); without it, a quick smoke run
  -h, --help        print this text
";

fn parse_args() -> Result<Args, String> {
    // Under `cargo test --bench NAME` (CI) a quick smoke run checks every row's result.
    let smoke = args::smoke();
    let mut args = Args {
        n: if smoke { 1 << 14 } else { 1 << 22 },
        grains: if smoke {
            vec![100, 4096]
        } else {
            vec![256, 4096, 65536]
        },
        threads: if smoke { vec![1, 2] } else { Vec::new() },
        reps: if smoke { 1 } else { 9 },
        omp: Vec::new(),
        only: None,
        reduce: false,
    };
    let mut p = Parser::new(USAGE);
    while let Some(flag) = p.next()? {
        match flag.as_str() {
            "--n" => args.n = p.whole(1, 1 << 30)?,
            "--grain" => args.grains = p.list()?,
            "--reps" => args.reps = p.whole(1, 1000)?,
            "--threads" => args.threads = p.threads()?,
            "--omp" => args.omp.push(p.peer()?),
            "--only" => args.only = Some(p.value()?),
            "--reduce" => args.reduce = true,
            _ => p.other()?,
        }
    }
    if args.threads.is_empty() {
        args.threads = args::all_cores();
    }
    for &g in &args.grains {
        args::in_range("--grain", g, 1, args.n)?;
    }
    Ok(args)
}

#[inline]
fn kernel(a: &mut [f64], b: &[f64]) {
    for (x, y) in a.iter_mut().zip(b) {
        *x = 2.0 * y + 1.0;
    }
}

/// The integer sum of `a`, compared with every row's and the C peers' `checksum=`.
fn checksum(a: &[f64]) -> u64 {
    a.iter().map(|&x| x as u64).sum()
}

/// The median of `reps` timed loops, back to back as in a program's time steps (the C peer
/// times its loops the same way), after a warm-up; then one more loop on zeroed data, whose
/// result the caller checks (the loop is idempotent: a chunk skipped in the timed loops would
/// not show).
fn time_reps(reps: usize, a: &mut [f64], mut f: impl FnMut(&mut [f64])) -> Duration {
    f(a); // warm-up: threads started, pages touched
    let mut times: Vec<Duration> = (0..reps)
        .map(|_| {
            let t = Instant::now();
            f(a);
            t.elapsed()
        })
        .collect();
    a.fill(0.0);
    f(a);
    times.sort();
    times[times.len() / 2]
}

fn report(name: &str, threads: usize, n: usize, grain: usize, d: Duration, sum: u64) {
    let chunks = (n / grain).max(1);
    println!(
        "{name:<18} threads={threads:<3} n={n} grain={grain} chunks={chunks} median_s={:.6} \
         ns_per_chunk={:.1} checksum={sum}",
        d.as_secs_f64(),
        d.as_secs_f64() * 1e9 / chunks as f64
    );
}

/// A work-stealing runtime of `threads` workers for the numatask rows (`several_runtimes`:
/// more than one runs in turn, each then traced to its own file under `NUMATASK_TRACE`).
fn numatask_runtime(threads: usize, several_runtimes: bool) -> numatask::Runtime {
    runtime::build(
        "taskloop",
        runtime::runtime_builder(
            "taskloop",
            threads,
            SchedulerKind::WorkStealing,
            several_runtimes,
        ),
    )
}

/// A rayon pool of `threads` threads for the rayon rows.
fn rayon_pool(threads: usize) -> rayon::ThreadPool {
    rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .build()
        .expect("rayon pool")
}

fn main() {
    let args = parse_args().unwrap_or_else(|e| fail("taskloop", e));
    let n = args.n;
    // `--n` accepts up to 2^30 doubles (8 GiB a vector): an allocation the machine cannot
    // give ends the bench with the error, not an abort.
    let vector = |what: &str| {
        let mut v: Vec<f64> = Vec::new();
        v.try_reserve_exact(n)
            .unwrap_or_else(|e| fail("taskloop", format_args!("{what} of {n} doubles: {e}")));
        v
    };
    let mut b = vector("input b");
    b.extend((0..n).map(|i| (i % 1000) as f64));
    let filter = Filter::new(args.only.as_deref(), &[]);
    if args.reduce {
        reductions(&args, &b, &filter);
        filter.finish("taskloop");
        return;
    }
    let mut a = vector("output a");
    a.resize(n, 0.0);
    let expect = {
        kernel(&mut a, &b);
        checksum(&a)
    };
    let several_runtimes = args.threads.len() > 1;
    let check = |name: &str, a: &[f64]| {
        let sum = checksum(a);
        assert_eq!(sum, expect, "{name}: wrong result");
        sum
    };
    for &threads in &args.threads {
        // One runtime at a time, so that no other pool's idle threads compete for the cores.
        if filter.wants("sequential") && threads == args.threads[0] {
            let d = time_reps(args.reps, &mut a, |a| kernel(a, &b));
            report("sequential", threads, n, n, d, check("sequential", &a));
        }
        if filter.wants("numatask") {
            let rt = numatask_runtime(threads, several_runtimes);
            for &grain in &args.grains {
                let d = time_reps(args.reps, &mut a, |a| {
                    rt.scope(|s| {
                        s.taskloop_mut(a, Grain::Size(grain), |_, offset, chunk| {
                            kernel(chunk, &b[offset..offset + chunk.len()]);
                        });
                    })
                });
                report("numatask", threads, n, grain, d, check("numatask", &a));
            }
        }
        if filter.wants("numatask-zip") {
            // The same loop written as rayon's below, `b` zipped in (`taskloop_zip`).
            let rt = numatask_runtime(threads, several_runtimes);
            for &grain in &args.grains {
                let d = time_reps(args.reps, &mut a, |a| {
                    rt.scope(|s| {
                        s.taskloop_zip(a, [&b], Grain::Size(grain), |_, _, x, [y]| kernel(x, y));
                    })
                });
                report(
                    "numatask-zip",
                    threads,
                    n,
                    grain,
                    d,
                    check("numatask-zip", &a),
                );
            }
        }
        if filter.wants("rayon") {
            let pool = rayon_pool(threads);
            for &grain in &args.grains {
                // rayon's chunks hold exactly `grain` elements (the last fewer): as many
                // chunks as numatask's grain size makes, within one.
                let d = time_reps(args.reps, &mut a, |a| {
                    pool.install(|| {
                        a.par_chunks_mut(grain)
                            .zip(b.par_chunks(grain))
                            .for_each(|(x, y)| kernel(x, y));
                    })
                });
                report("rayon", threads, n, grain, d, check("rayon", &a));
            }
        }
        for bin in &args.omp {
            for &grain in &args.grains {
                let peer_args = [n.to_string(), grain.to_string(), args.reps.to_string()];
                run_peer_both_ways(bin, &peer_args, threads, n / grain, &expect.to_string());
            }
            filter.ran_peer();
        }
    }
    // The smoke run (CI) checks the reduction's rows too.
    if args::smoke() {
        reductions(&args, &b, &filter);
    }
    filter.finish("taskloop");
}

/// The reduction's body over a chunk of `b`.
#[inline]
fn partial_sum(b: &[f64]) -> f64 {
    b.iter().map(|y| 2.0 * y + 1.0).sum()
}

/// The median of `reps` timed reductions after a warm-up, and the result of the last (the
/// elements are whole numbers, so every grouping of the sum gives it exactly).
fn time_sums(reps: usize, mut f: impl FnMut() -> f64) -> (Duration, f64) {
    let mut result = f();
    let mut times: Vec<Duration> = (0..reps)
        .map(|_| {
            let t = Instant::now();
            result = std::hint::black_box(f());
            t.elapsed()
        })
        .collect();
    times.sort();
    (times[times.len() / 2], result)
}

/// `--reduce`: the sum of `2 b[i] + 1`, sequential, with numatask's `taskloop_reduce`, rayon
/// and the C peers, each row's result checked against the sequential one.
fn reductions(args: &Args, b: &[f64], filter: &Filter) {
    let n = b.len();
    let expect = partial_sum(b);
    let check = |name: &str, sum: f64| {
        assert_eq!(sum, expect, "{name}: wrong sum");
        sum as u64
    };
    let several_runtimes = args.threads.len() > 1;
    for &threads in &args.threads {
        if filter.wants("sequential-sum") && threads == args.threads[0] {
            let (d, sum) = time_sums(args.reps, || partial_sum(b));
            report("sequential-sum", threads, n, n, d, check("sequential", sum));
        }
        if filter.wants("numatask-reduce") {
            let rt = numatask_runtime(threads, several_runtimes);
            for &grain in &args.grains {
                let (d, sum) = time_sums(args.reps, || {
                    rt.scope(|s| {
                        s.taskloop_reduce(
                            0..n,
                            Grain::Size(grain),
                            || 0.0,
                            |_, r| partial_sum(&b[r]),
                            |x, y| x + y,
                        )
                    })
                });
                report(
                    "numatask-reduce",
                    threads,
                    n,
                    grain,
                    d,
                    check("numatask", sum),
                );
            }
        }
        if filter.wants("rayon-sum") {
            let pool = rayon_pool(threads);
            for &grain in &args.grains {
                let (d, sum) = time_sums(args.reps, || {
                    pool.install(|| b.par_chunks(grain).map(partial_sum).sum::<f64>())
                });
                report("rayon-sum", threads, n, grain, d, check("rayon", sum));
            }
        }
        for bin in &args.omp {
            for &grain in &args.grains {
                let peer_args = [
                    n.to_string(),
                    grain.to_string(),
                    args.reps.to_string(),
                    "reduce".to_string(),
                ];
                run_peer_both_ways(
                    bin,
                    &peer_args,
                    threads,
                    n / grain,
                    &(expect as u64).to_string(),
                );
            }
            filter.ran_peer();
        }
    }
}

/// Runs a C peer twice: `taskloop grainsize(G)` (one task per chunk), then `num_tasks(K)` with
/// K twice the threads (at most the chunks), about the tasks numatask's adaptive taskloop makes
/// when every worker is busy: the row `<runtime>-num_tasks`.
fn run_peer_both_ways(
    bin: &str,
    peer_args: &[String],
    threads: usize,
    chunks: usize,
    expect: &str,
) {
    run_omp_peer(bin, peer_args, threads, Some(expect), &[]);
    let k = (2 * threads).min(chunks).max(1).to_string();
    run_omp_peer(
        bin,
        peer_args,
        threads,
        Some(expect),
        &[("TASKLOOP_NUM_TASKS", &k)],
    );
}
