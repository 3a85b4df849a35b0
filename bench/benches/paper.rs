//! The core paper's evaluation (Muddukrishna, Jonsson and Brorsson 2015, section 6): the six
//! benchmarks of its Table 4 under every scheduler x data distribution, each configuration in a
//! fresh runtime, with the distribution set per allocation (`NumaVec`, i.e.
//! `omp_malloc_specific`). The benchmarks are those of the `paper` program (the crate's
//! [`numatask_bench::paper`]); every run verifies its result against a sequential computation and
//! the bench stops with an error on a mismatch.
//!
//! Two modes:
//!
//! - **measure** (default on a real machine): wall time of the parallel section, the median of
//!   at least `--reps` runs after a warm-up, printed as Figure 7 prints it: per benchmark, time
//!   normalized to work stealing with fine distribution. The six configurations of a benchmark
//!   take turns, one run each per round, so that load from other processes on a shared machine
//!   hits them alike. A second table gives the locality-aware scheduler's time over work
//!   stealing's with the same distribution, paired by round: the two run back to back on the
//!   same data, each first in every other round, and the table shows the geometric mean of the
//!   medians of the two orders (a position effect, 8% on the 2-core VM, cancels) with the quartiles of
//!   the rounds' ratios, and the geometric mean over the distributions: the scheduler's
//!   overhead, with the machine's drift between rounds cancelled. `--control` runs work
//!   stealing in both places, an A/A test of the same shape that shows the measurement's noise.
//! - **model** (default on a synthetic topology such as `NUMATASK_TOPOLOGY=preset:opteron6172`):
//!   `--model-runs` (default 3) traced, time-dilated runs per configuration, evaluated by the NUMA cost MODEL of
//!   `src/paper/cost_model.rs` (distance-weighted footprint bytes, compute time
//!   measured as CPU time, load balance by emulation, node bandwidth bound), and compared with
//!   the orderings the paper reports. The Chrome traces (Perfetto timelines like the paper's
//!   Figure 8) are left in `--trace-dir`.
//!
//! ```text
//! cargo bench -p numatask-bench --bench paper -- --size small        # this machine, measured
//! NUMATASK_TOPOLOGY=preset:opteron6172 \
//!     cargo bench -p numatask-bench --bench paper -- --size small    # MODEL
//! cargo bench -p numatask-bench --bench paper -- --size medium --only map,matmul --reps 10 --mode both
//! ```
//!
//! Options: `--help` lists them (`USAGE` below). `--model-runs N` stops early once the two
//! fastest runs agree within 5%; the fastest is shown. Without `--bench` (`cargo test
//! --bench paper`, CI) it is a smoke run: tiny inputs, one repetition, both modes.

use std::fmt::Write as _;
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::{Duration, Instant};

use numatask::alloc::{Distribution, Topology};
use numatask::sched::{Runtime, RuntimeBuilder, SchedulerKind};

use numatask_bench::args::{self, Parser};
use numatask_bench::paper::cost_model::{Evaluation, ModelParams, Probe, calibrate, table};
use numatask_bench::paper::verdict::{Config, paper_verdict};
use numatask_bench::paper::{Benchmark, BoxError, Size, Timings, measure};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Mode {
    Measure,
    Model,
    Both,
}

struct Args {
    size: Size,
    reps: usize,
    min_time: Duration,
    mode: Option<Mode>,
    only: Vec<Benchmark>,
    threads: Option<usize>,
    /// The locality-aware scheduler's even tolerance (`RuntimeBuilder::even_tolerance`).
    even_tolerance: f64,
    model: ModelParams,
    model_runs: usize,
    trace_dir: PathBuf,
    /// Whether `trace_dir` is this run's own temporary directory, removed at the end.
    temporary_trace_dir: bool,
    control: bool,
}

/// Every flag [`parse_args`] accepts (keep the two together).
const USAGE: &str = "\
usage: paper [--bench] [OPTIONS]
  --size S          input size: tiny, small, medium or large (default small; smoke run tiny)
  --reps N          at least N timed rounds, 1 to 30 (default 3; smoke run 1)
  --min-time SEC    and at least SEC seconds of them, 0 to 3600 (default 0.1; smoke run 0)
  --mode M          measure, model or both (default measure, model on a synthetic
                    topology; smoke run both)
  --only B1,B2      benchmarks: map, reduction, vecmul, matmul, jacobi, sparselu (default all)
  --threads N       workers per runtime, 1 to 4096 (default one per core)
  --even-tolerance T  the locality-aware scheduler's even tolerance, 0 to 100: a footprint
                    whose standard deviation over the nodes is at most T times its mean is
                    not dealt (default 0.1; 0 is the paper's exact stddev > 0 test)
  --control         measure: work stealing in the locality-aware scheduler's place too, an
                    A/A test whose overhead table shows the measurement's own noise
  --dilation K      model: tasks stretched to K times their modelled time, 1 to 1e6
                    (default 32; smoke run 4)
  --model-runs N    model: at most N runs per configuration, 1 to 100 (default 3; smoke run 1)
  --core-gbps X     model: bandwidth of one core in GB/s, 0.001 to 1e6 (default 2)
  --node-gbps Y     model: bandwidth of one node in GB/s, 0.001 to 1e6 (default 12)
  --trace-dir DIR   model: where the Chrome traces go (default target/paper-traces of the
                    working directory, which cargo bench makes bench/;
                    smoke run a temporary directory)
  --bench           measure (cargo bench passes it); without it, a quick smoke run
  -h, --help        print this text
";

fn parse_args() -> Result<Args, String> {
    // `cargo bench` passes `--bench`; `cargo test --bench NAME` (CI) does not: then a quick smoke
    // run checks that every benchmark still computes correctly in every configuration.
    let smoke = args::smoke();
    let mut args = Args {
        size: if smoke { Size::Tiny } else { Size::Small },
        reps: if smoke { 1 } else { 3 },
        min_time: if smoke {
            Duration::ZERO
        } else {
            Duration::from_millis(100)
        },
        mode: smoke.then_some(Mode::Both),
        only: Benchmark::ALL.to_vec(),
        threads: None,
        even_tolerance: numatask::sched::config::DEFAULT_EVEN_TOLERANCE,
        model: ModelParams {
            dilation: if smoke {
                4.0
            } else {
                ModelParams::default().dilation
            },
            ..ModelParams::default()
        },
        model_runs: if smoke { 1 } else { 3 },
        trace_dir: if smoke {
            std::env::temp_dir().join(format!("numatask-paper-smoke-{}", std::process::id()))
        } else {
            PathBuf::from("target/paper-traces")
        },
        temporary_trace_dir: smoke,
        control: false,
    };
    let mut p = Parser::new(USAGE);
    while let Some(flag) = p.next()? {
        match flag.as_str() {
            "--size" => args.size = p.value()?.parse()?,
            "--reps" => args.reps = p.whole(1, 30)?,
            "--min-time" => args.min_time = Duration::from_secs_f64(p.number(0.0, 3600.0)?),
            "--mode" => {
                args.mode = Some(match p.value()?.as_str() {
                    "measure" => Mode::Measure,
                    "model" => Mode::Model,
                    "both" => Mode::Both,
                    other => {
                        return Err(format!("--mode '{other}': expected measure, model or both"));
                    }
                })
            }
            "--only" => {
                args.only = p
                    .value()?
                    .split(',')
                    .map(str::parse)
                    .collect::<Result<_, _>>()?
            }
            "--threads" => args.threads = Some(p.whole(1, 4096)?),
            "--even-tolerance" => {
                args.even_tolerance = p.number(0.0, numatask::sched::config::MAX_EVEN_TOLERANCE)?
            }
            "--dilation" => args.model.dilation = p.number(1.0, 1e6)?,
            "--model-runs" => args.model_runs = p.whole(1, 100)?,
            "--core-gbps" => args.model.core_gbps = p.number(0.001, 1e6)?,
            "--node-gbps" => args.model.node_gbps = p.number(0.001, 1e6)?,
            "--trace-dir" => {
                args.trace_dir = PathBuf::from(p.value()?);
                args.temporary_trace_dir = false;
            }
            "--control" => args.control = true,
            _ => p.other()?,
        }
    }
    Ok(args)
}

fn main() -> ExitCode {
    let args = match parse_args() {
        Ok(a) => a,
        Err(e) => {
            eprintln!("paper bench: {e}");
            return ExitCode::from(2);
        }
    };
    let topology = match Topology::current() {
        Ok(t) => t,
        Err(e) => {
            eprintln!("paper bench: {e}");
            return ExitCode::from(2);
        }
    };
    let mode = args.mode.unwrap_or(if topology.is_synthetic() {
        Mode::Model
    } else {
        Mode::Measure
    });
    println!(
        "paper bench: size {}, topology {} ({} node(s), {} cores{}), locality-aware even \
         tolerance {}{}",
        args.size,
        topology.source(),
        topology.num_nodes(),
        topology.num_cores(),
        if topology.is_synthetic() {
            ", synthetic: placement recorded, workers time-share the real cores"
        } else {
            ""
        },
        args.even_tolerance,
        if args.even_tolerance == 0.0 {
            " (the paper's exact test)"
        } else {
            ""
        }
    );
    let result = (|| -> Result<(), BoxError> {
        if matches!(mode, Mode::Measure | Mode::Both) {
            run_measured(&args, &topology)?;
        }
        if matches!(mode, Mode::Model | Mode::Both) {
            run_model(&args, &topology)?;
        }
        Ok(())
    })();
    if args.temporary_trace_dir {
        // Best effort: a smoke run leaves nothing behind; a directory that cannot be removed
        // costs a temporary directory, not the run.
        let _ = std::fs::remove_dir_all(&args.trace_dir);
    }
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("paper bench: {e}");
            ExitCode::FAILURE
        }
    }
}

/// A fresh runtime for `config`.
fn runtime(args: &Args, config: Config, trace: Option<&Path>) -> Result<Runtime, BoxError> {
    let mut builder = RuntimeBuilder::new().scheduler(config.scheduler);
    if config.scheduler == SchedulerKind::Locality {
        builder = builder.even_tolerance(args.even_tolerance);
    }
    if let Some(n) = args.threads {
        builder = builder.num_threads(n);
    }
    if let Some(path) = trace {
        builder = builder.trace(path);
    }
    Ok(builder.build()?)
}

fn run_measured(args: &Args, topology: &Topology) -> Result<(), BoxError> {
    /// Rounds at most, whatever `--min-time` asks.
    const MAX_ROUNDS: usize = 200;
    println!(
        "\n== measured: wall time of the parallel section; the six configurations take turns \
         (one run each per round, so that load from elsewhere hits them alike), median of >= {} \
         rounds after a warm-up round",
        args.reps
    );
    if args.control {
        println!(
            "CONTROL (--control): work stealing runs in the locality-aware scheduler's place: \
             every row named locality+... below is work stealing, and every ratio of the last \
             table the measurement's own noise"
        );
    }
    let mut rows = Vec::new();
    let mut paired = Vec::new();
    for &benchmark in &args.only {
        // One data instance per distribution, shared by the two schedulers, so that a pair
        // differs in the scheduler alone (not in where its allocations fell); every
        // configuration in its own runtime, all alive at once so that they can take turns.
        let mut instances = Vec::new();
        for distribution in Distribution::ALL {
            let instance = benchmark.prepare(args.size, distribution)?;
            if instances.is_empty() {
                println!("{}", instance.describe());
            }
            instances.push(instance);
        }
        let mut runs = Vec::new();
        for (i, distribution) in Distribution::ALL.into_iter().enumerate() {
            for scheduler in SchedulerKind::ALL {
                let config = Config {
                    scheduler,
                    distribution,
                };
                // The A/A control runs work stealing in both places of the pair.
                let scheduler = if args.control {
                    SchedulerKind::WorkStealing
                } else {
                    scheduler
                };
                runs.push(Run {
                    config,
                    rt: runtime(
                        args,
                        Config {
                            scheduler,
                            distribution,
                        },
                        None,
                    )?,
                    instance: i,
                    times: Vec::new(),
                    checksum: String::new(),
                });
            }
        }
        // `paired_ratios` reads the order of each round from this layout.
        debug_assert!(runs.chunks(2).all(|pair| {
            pair[0].config.scheduler == SchedulerKind::WorkStealing
                && pair[1].config.scheduler == SchedulerKind::Locality
                && pair[0].config.distribution == pair[1].config.distribution
        }));
        let mut round = 0;
        loop {
            // The two schedulers of a distribution run back to back, in turn first: work
            // stealing in even rounds, locality in odd ones (see `paired_ratios`).
            let order: Vec<usize> = (0..runs.len())
                .map(|k| if round % 2 == 0 { k } else { k ^ 1 })
                .collect();
            for k in order {
                let run = &mut runs[k];
                let instance = &mut instances[run.instance];
                instance.init();
                let start = Instant::now();
                instance
                    .compute(&run.rt, None)
                    .map_err(|e| format!("{benchmark} {}: {e}", run.config.name()))?;
                let elapsed = start.elapsed();
                if round == 0 {
                    // The warm-up round, untimed, verifies every configuration's result.
                    run.checksum = instance.verify().map_err(|e| {
                        format!(
                            "{benchmark} {}: result differs from the sequential computation: {e}",
                            run.config.name()
                        )
                    })?;
                } else {
                    run.times.push(elapsed);
                }
            }
            let least = runs
                .iter()
                .map(|run| run.times.iter().sum::<Duration>())
                .min()
                .unwrap_or_default();
            if round >= args.reps && (least >= args.min_time || round >= MAX_ROUNDS) {
                break;
            }
            round += 1;
        }
        // The last timed round's results too: each instance holds that of the configuration
        // that ran on it last.
        for (instance, distribution) in instances.iter().zip(Distribution::ALL) {
            instance.verify().map_err(|e| {
                format!(
                    "{benchmark} {distribution}, last round: result differs from the \
                     sequential computation: {e}"
                )
            })?;
        }
        paired.push((benchmark, paired_ratios(&runs)));
        let mut times = Vec::new();
        for config in Config::all() {
            let Some(run) = runs.iter().find(|run| run.config == config) else {
                continue;
            };
            let median = Timings {
                reps: run.times.clone(),
                checksum: run.checksum.clone(),
            };
            println!(
                "  {:<18} {:>10.3} ms  ({} runs, verified: {})",
                config.name(),
                1e3 * median.median().as_secs_f64(),
                run.times.len(),
                median.checksum
            );
            times.push((config, median.median().as_secs_f64()));
        }
        rows.push((benchmark, times));
    }
    print!(
        "\n{}",
        figure7(
            &format!(
                "Figure 7 style, MEASURED on {} ({} node(s), {} workers): time / time of {} \
                 (ws+fine ms)",
                topology.source(),
                topology.num_nodes(),
                args.threads.unwrap_or(topology.usable_cores().len()),
                Config::BASELINE.name()
            ),
            &rows,
            Comparison::of_measured(topology),
        )
    );
    if args.control {
        print!(
            "\nCONTROL (--control): work stealing ran in the locality-aware scheduler's place \
             too, so every ratio below is the measurement's own noise\n"
        );
    }
    print!("\n{}", paired_table(&paired));
    Ok(())
}

/// One configuration of a benchmark in [`run_measured`]: its runtime, the index of its data
/// instance (one per distribution) and its timed runs, one per round.
struct Run {
    config: Config,
    rt: Runtime,
    instance: usize,
    times: Vec<Duration>,
    checksum: String,
}

/// The ratios `t(locality+d) / t(ws+d)` of one distribution, one per round (both runs of a
/// round back to back, on the same data), summarized.
#[derive(Clone, Copy, Debug)]
struct PairedRatio {
    distribution: Distribution,
    /// The geometric mean of the medians with either scheduler first.
    ratio: f64,
    /// The first and third quartiles: how far the ratio moves from round to round, the
    /// resolution of the median.
    quartiles: (f64, f64),
}

/// For each distribution, the ratio `t(locality+d) / t(ws+d)` of each round, both runs back to
/// back, so that the machine's drift from round to round cancels; summarized by the geometric
/// mean of two medians, over the rounds in which work stealing ran first and over those in
/// which locality did, so that an advantage of either position (measured: up to 8% on the
/// 2-core VM, with the same scheduler in both places) cancels too.
fn paired_ratios(runs: &[Run]) -> Vec<PairedRatio> {
    let times = |scheduler, distribution| {
        runs.iter()
            .find(|run| {
                run.config
                    == Config {
                        scheduler,
                        distribution,
                    }
            })
            .map(|run| run.times.as_slice())
    };
    let median = |mut v: Vec<f64>| {
        v.sort_by(f64::total_cmp);
        quantile(&v, 0.5)
    };
    Distribution::ALL
        .into_iter()
        .filter_map(|d| {
            let ws = times(SchedulerKind::WorkStealing, d)?;
            let locality = times(SchedulerKind::Locality, d)?;
            let ratios: Vec<f64> = ws
                .iter()
                .zip(locality)
                .map(|(w, l)| l.as_secs_f64() / w.as_secs_f64())
                .collect();
            // `ratios[r]` is round r + 1 (round 0 is the warm-up): locality ran first when r
            // is even.
            let (locality_first, ws_first): (Vec<(usize, f64)>, _) = ratios
                .iter()
                .copied()
                .enumerate()
                .partition(|(r, _)| r % 2 == 0);
            let of = |v: Vec<(usize, f64)>| median(v.into_iter().map(|(_, x)| x).collect());
            let centre = match (of(ws_first), of(locality_first)) {
                (Some(a), Some(b)) => (a * b).sqrt(),
                (a, b) => a.or(b)?,
            };
            let mut sorted = ratios;
            sorted.sort_by(f64::total_cmp);
            Some(PairedRatio {
                distribution: d,
                ratio: centre,
                quartiles: (quantile(&sorted, 0.25)?, quantile(&sorted, 0.75)?),
            })
        })
        .collect()
}

/// The `q` quantile of `sorted` (ascending), interpolated between its two nearest elements
/// (so the median of an even count is the mean of the middle two); `None` when empty.
fn quantile(sorted: &[f64], q: f64) -> Option<f64> {
    let last = sorted.len().checked_sub(1)?;
    let at = q * last as f64;
    let (below, above) = (at.floor() as usize, at.ceil() as usize);
    let w = at - below as f64;
    Some(sorted[below] * (1.0 - w) + sorted[above] * w)
}

/// The scheduler's overhead table: [`paired_ratios`] per benchmark and their geometric mean.
fn paired_table(rows: &[(Benchmark, Vec<PairedRatio>)]) -> String {
    let mut out = String::from(
        "Locality-aware over work stealing, paired by round: t(locality+d) / t(ws+d), the two \
         back to back on the same data, each first in every other round; the geometric mean of \
         the two orders' medians (first and third quartiles of all rounds' ratios in \
         brackets)\n| benchmark |",
    );
    for d in Distribution::ALL {
        let _ = write!(out, " {d} |");
    }
    out.push_str(" geometric mean |\n|---|");
    out.push_str(&"---|".repeat(Distribution::ALL.len() + 1));
    out.push('\n');
    for (benchmark, ratios) in rows {
        let _ = write!(out, "| {benchmark} |");
        for d in Distribution::ALL {
            match ratios.iter().find(|r| r.distribution == d) {
                Some(r) => {
                    let (q1, q3) = r.quartiles;
                    let _ = write!(out, " {:.3} [{q1:.3}, {q3:.3}] |", r.ratio);
                }
                None => out.push_str(" - |"),
            }
        }
        let logs: f64 = ratios.iter().map(|r| r.ratio.ln()).sum();
        let mean = (logs / ratios.len().max(1) as f64).exp();
        let _ = writeln!(out, " {mean:.3} |");
    }
    out
}

fn run_model(args: &Args, topology: &Topology) -> Result<(), BoxError> {
    let dir = args.trace_dir.join(args.size.name());
    std::fs::create_dir_all(&dir)
        .map_err(|e| format!("creating the trace directory {}: {e}", dir.display()))?;
    println!(
        "\n== MODEL: up to {} traced runs per configuration (until the two fastest agree within \
         5%; the fastest is shown), every task stretched to {}x its modelled time; Chrome \
         traces in {}",
        args.model_runs,
        args.model.dilation,
        dir.display()
    );
    let (mut rows, mut memory_rows) = (Vec::new(), Vec::new());
    let mut description = args.model.describe();
    for &benchmark in &args.only {
        let mut evaluations = Vec::new();
        let compute = calibrate(benchmark, args.size, args.model)
            .map_err(|e| format!("{benchmark} calibration: {e}"))?;
        for config in Config::all() {
            let mut runs = Vec::with_capacity(args.model_runs);
            for run in 0..args.model_runs {
                let path = dir.join(format!("{benchmark}-{}-run{run}.json", config.name()));
                let rt = runtime(args, config, Some(&path))?;
                let probe = Probe::new(rt.topology(), args.model, compute.clone());
                description = probe.params().describe();
                let mut instance = benchmark.prepare(args.size, config.distribution)?;
                if config == Config::all()[0] && run == 0 {
                    println!("{}", instance.describe());
                    println!(
                        "  compute time per task (calibrated): {}",
                        compute.describe()
                    );
                }
                let t = measure(instance.as_mut(), &rt, 0, 1, Duration::ZERO, Some(&probe))
                    .map_err(|e| format!("{benchmark} {}: {e}", config.name()))?;
                let records = rt.tracer().map(|t| t.records()).unwrap_or_default();
                let evaluation = probe
                    .evaluate(&records, t.median())
                    .map_err(|e| format!("{benchmark} {}: {e}", config.name()))?;
                // The runtime prints a locality summary with every trace it writes; the tables
                // below say the same for every configuration, so they are not shown.
                if let Some(Err(e)) = without_stderr(|| rt.finish_trace()) {
                    return Err(format!("writing {}: {e}", path.display()).into());
                }
                println!(
                    "  {:<18} run {run}: MODEL {:>9.3} ms, {:>5.1}% local  (verified: {})",
                    config.name(),
                    1e3 * evaluation.model_s(),
                    100.0 * evaluation.local_fraction.unwrap_or(0.0),
                    t.checksum
                );
                runs.push(evaluation);
                if settled(&runs) {
                    break;
                }
            }
            let best = Evaluation::best_of(runs).ok_or("no model run")?;
            evaluations.push((config, best));
        }
        let named: Vec<(String, Evaluation)> = evaluations
            .iter()
            .map(|(c, e)| (c.name(), e.clone()))
            .collect();
        print!(
            "\n{}",
            table(
                &format!(
                    "MODEL of {benchmark} on {} ({}), Table 4 suggests {}",
                    topology.source(),
                    description,
                    benchmark.heuristic()
                ),
                &named,
                &Config::BASELINE.name()
            )
        );
        println!();
        rows.push((
            benchmark,
            evaluations.iter().map(|(c, e)| (*c, e.model_s())).collect(),
        ));
        memory_rows.push((
            benchmark,
            evaluations.iter().map(|(c, e)| (*c, e.memory_s)).collect(),
        ));
    }
    println!(
        "{}",
        figure7(
            &format!(
                "MODEL memory cost alone (sum over tasks of footprint bytes x latency / B_core, \
                 no compute, balance or contention) on {}, relative to {} (ws+fine ms)",
                topology.source(),
                Config::BASELINE.name()
            ),
            &memory_rows,
            Comparison::None,
        )
    );
    print!(
        "{}",
        figure7(
            &format!(
                "Figure 7 style, MODEL on {}: MODEL time / MODEL time of {} (ws+fine ms; {})",
                topology.source(),
                Config::BASELINE.name(),
                description
            ),
            &rows,
            Comparison::of_model(topology),
        )
    );
    Ok(())
}

/// Whether the two fastest of `runs` agree within 5%: further runs would not change the
/// best one much.
fn settled(runs: &[Evaluation]) -> bool {
    let mut times: Vec<f64> = runs.iter().map(Evaluation::model_s).collect();
    times.sort_by(f64::total_cmp);
    matches!(times.as_slice(), [a, b, ..] if *b <= 1.05 * *a)
}

/// Whether a Figure 7 table is compared with the paper's orderings.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Comparison {
    /// Not at all (the numbers are not times).
    None,
    /// Times on one node: said to show no NUMA effect.
    OneNode,
    /// Times measured on a synthetic topology (the workers share the real cores, and memory is
    /// not where the model puts it): no NUMA effect either.
    Synthetic,
    /// Times on several nodes.
    Numa,
}

impl Comparison {
    /// For measured times on `topology`.
    fn of_measured(topology: &Topology) -> Comparison {
        if topology.is_synthetic() {
            Comparison::Synthetic
        } else {
            Comparison::of_model(topology)
        }
    }

    /// For the model's times on `topology` (a synthetic one is what the model is for).
    fn of_model(topology: &Topology) -> Comparison {
        if topology.num_nodes() > 1 {
            Comparison::Numa
        } else {
            Comparison::OneNode
        }
    }
}

/// Figure 7 as a table: one row per benchmark, each configuration's time divided by the
/// baseline's, the best configuration and the paper's.
fn figure7(title: &str, rows: &[(Benchmark, Vec<(Config, f64)>)], compare: Comparison) -> String {
    let configs = Config::all();
    let mut out = String::new();
    let _ = writeln!(out, "{title}");
    let _ = write!(out, "| benchmark | {} ms |", Config::BASELINE.name());
    for c in &configs {
        let _ = write!(out, " {} |", c.name());
    }
    match compare {
        Comparison::None => {
            let _ = writeln!(out, " best |");
            let _ = writeln!(out, "|---|---|{}---|", "---|".repeat(configs.len()));
        }
        _ => {
            let _ = writeln!(out, " best | paper's best | vs paper |");
            let _ = writeln!(out, "|---|---|{}---|---|---|", "---|".repeat(configs.len()));
        }
    }
    for (benchmark, times) in rows {
        let base = times
            .iter()
            .find(|(c, _)| *c == Config::BASELINE)
            .map(|(_, t)| *t);
        let _ = write!(
            out,
            "| {benchmark} | {} |",
            base.map_or("-".into(), |b| format!("{:.3}", 1e3 * b))
        );
        for c in &configs {
            let cell = times
                .iter()
                .find(|(x, _)| x == c)
                .zip(base)
                .map_or("-".into(), |((_, t), b)| format!("{:.2}", t / b));
            let _ = write!(out, " {cell} |");
        }
        let best = times
            .iter()
            .min_by(|a, b| a.1.total_cmp(&b.1))
            .map_or("-".into(), |(c, _)| c.name());
        let (expected, verdict) = paper_verdict(*benchmark, times);
        match compare {
            Comparison::None => {
                let _ = writeln!(out, " {best} |");
            }
            Comparison::OneNode => {
                let _ = writeln!(
                    out,
                    " {best} | {expected} | (one node: no NUMA effect to compare) |"
                );
            }
            Comparison::Synthetic => {
                let _ = writeln!(
                    out,
                    " {best} | {expected} | (synthetic topology: no NUMA effect in measured times) |"
                );
            }
            Comparison::Numa => {
                let _ = writeln!(out, " {best} | {expected} | {verdict} |");
            }
        }
    }
    out
}

/// Runs `f` with standard error sent to /dev/null (restored afterwards, also on a panic).
fn without_stderr<R>(f: impl FnOnce() -> R) -> R {
    struct Restore(libc::c_int);
    impl Drop for Restore {
        fn drop(&mut self) {
            // SAFETY: `self.0` is the duplicate of standard error made below, still open;
            // dup2 and close on valid descriptors have no memory-safety preconditions.
            unsafe {
                libc::dup2(self.0, libc::STDERR_FILENO);
                libc::close(self.0);
            }
        }
    }
    let Ok(null) = std::fs::OpenOptions::new().write(true).open("/dev/null") else {
        return f();
    };
    // SAFETY: dup has no memory-safety preconditions; a negative result is checked.
    let saved = unsafe { libc::dup(libc::STDERR_FILENO) };
    if saved < 0 {
        return f();
    }
    let _restore = Restore(saved);
    // SAFETY: both descriptors are open; this only repoints descriptor 2 until `_restore`
    // puts the saved one back.
    unsafe { libc::dup2(null.as_raw_fd(), libc::STDERR_FILENO) };
    f()
}
