//! The six benchmarks of the core paper's Table 4 (Map, Reduction, Vecmul, Matmul, Jacobi,
//! SparseLU), one at a time, in any configuration: scheduler and data distribution from the
//! environment (`NUMATASK_SCHEDULER`, `OMP_DATA_DISTRIBUTION`) or the command line. Prints the
//! wall time of the parallel section, verifies the result against a sequential computation
//! (exit status 1 on a mismatch), and prints the runtime's locality summary (tasks and
//! footprint bytes local and remote per node, steals by distance). The timed runs are not
//! traced: the summary comes from one more run, traced in memory (with
//! `NUMATASK_TRACE=file.json` every run is traced and the trace written there).
//! The `paper` bench (`benches/paper.rs`) runs the whole matrix.
//!
//! ```text
//! cargo run -p numatask-bench --release --bin paper -- map --scheduler locality --distribution coarse
//! OMP_DATA_DISTRIBUTION=fine NUMATASK_SCHEDULER=ws cargo run -p numatask-bench --release --bin paper -- jacobi
//! NUMATASK_TRACE=map.json cargo run -p numatask-bench --release --bin paper -- map --size small
//! # The paper's 8-node machine (synthetic: placement recorded, 48 workers time-share the real
//! # cores), with the NUMA cost MODEL of src/paper/cost_model.rs:
//! NUMATASK_TOPOLOGY=preset:opteron6172 cargo run -p numatask-bench --release --bin paper -- \
//!     matmul --scheduler locality --distribution coarse --model
//! ```
//!
//! Options: `--scheduler ws|locality`, `--distribution standard|fine|coarse`,
//! `--size tiny|small|medium|large` (default small), `--reps N` (default 3, after one warm-up),
//! `--threads N`, `--model` (traced, time-dilated runs, one unless `--reps` says more, each in
//! a fresh runtime, evaluated by the cost MODEL of `src/paper/cost_model.rs`; the fastest run is
//! shown), `--dilation K`.

// The root crate's examples' SIGPIPE reset: the same few lines, not a copy.
#[path = "../../../examples/common/sigpipe.rs"]
mod sigpipe;

use std::process::ExitCode;
use std::time::Duration;

use numatask::alloc::{Distribution, Topology};
use numatask::sched::{Runtime, RuntimeBuilder, SchedulerKind};

use numatask_bench::args::Parser;
use numatask_bench::paper::cost_model::{Evaluation, ModelParams, Probe, calibrate, table};
use numatask_bench::paper::{Benchmark, BoxError, Size, measure};

const USAGE: &str = "usage: paper <map|reduction|vecmul|matmul|jacobi|sparselu> \
    [--scheduler ws|locality] [--distribution standard|fine|coarse] \
    [--size tiny|small|medium|large] [--reps N] [--threads N] [--model] [--dilation K]";

/// What `--help` adds to [`USAGE`].
const HELP: &str = "\
Runs one of the core paper's six benchmarks (Table 4), verifies its result against a
sequential run, and prints its time and the runtime's locality summary.

  --scheduler ws|locality     the scheduler (default: NUMATASK_SCHEDULER, else ws)
  --distribution D            standard, fine or coarse, for every allocation of the benchmark
                              (default: OMP_DATA_DISTRIBUTION, else standard)
  --size S                    tiny, small (default), medium or large (Figure 7's input where
                              the paper gives one)
  --reps N                    timed runs after a warm-up, 1 to 1000 (default 3; with
                              --model, the model's runs, default 1)
  --threads N                 workers (default: OMP_NUM_THREADS, else one per core)
  --model                     also evaluate the NUMA cost MODEL from a trace of each run
  --dilation K                the MODEL's time dilation, 1 to 1000000 (default 32)

Environment: NUMATASK_TOPOLOGY=preset:opteron6172 runs on the paper's 8-node machine as a
synthetic topology (placement recorded, not enforced); NUMATASK_TRACE=file.json writes a
Perfetto trace; OMP_PROC_BIND, OMP_PLACES, OMP_WAIT_POLICY and the other OMP_* variables
apply as to any numatask runtime (see the README).";

/// The command line.
struct Args {
    benchmark: Benchmark,
    scheduler: Option<SchedulerKind>,
    distribution: Option<Distribution>,
    size: Size,
    reps: usize,
    threads: Option<usize>,
    model: bool,
    dilation: f64,
    /// Whether `--reps` was given.
    reps_given: bool,
}

impl Args {
    /// Runs of the MODEL: `--reps` if given, otherwise one.
    fn model_runs(&self) -> usize {
        if self.reps_given { self.reps } else { 1 }
    }
}

fn parse_args(args: impl IntoIterator<Item = String>) -> Result<Args, String> {
    let mut p = Parser::of(USAGE, args);
    let mut benchmark = None;
    let mut parsed = Args {
        benchmark: Benchmark::Map,
        scheduler: None,
        distribution: None,
        size: Size::Small,
        reps: 3,
        threads: None,
        model: false,
        dilation: ModelParams::default().dilation,
        reps_given: false,
    };
    while let Some(arg) = p.next()? {
        match arg.as_str() {
            "--scheduler" => parsed.scheduler = Some(p.parse()?),
            "--distribution" => parsed.distribution = Some(p.parse()?),
            "--size" => parsed.size = p.value()?.parse()?,
            "--reps" => {
                parsed.reps = p.whole(1, 1000)?;
                parsed.reps_given = true;
            }
            "--threads" => {
                parsed.threads = Some(p.whole(1, numatask::sched::config::MAX_NUM_THREADS)?)
            }
            "--dilation" => parsed.dilation = p.number(1.0, 1e6)?,
            "--model" => parsed.model = true,
            other if other.starts_with('-') => return Err(format!("unknown option '{other}'")),
            other if benchmark.is_none() => benchmark = Some(other.parse::<Benchmark>()?),
            other => return Err(format!("unexpected argument '{other}'")),
        }
    }
    parsed.benchmark = benchmark.ok_or("which benchmark?")?;
    Ok(parsed)
}

fn main() -> ExitCode {
    sigpipe::restore_default();
    if std::env::args().any(|a| a == "-h" || a == "--help") {
        println!("{USAGE}\n\n{HELP}");
        return ExitCode::SUCCESS;
    }
    let args = match parse_args(std::env::args().skip(1)) {
        Ok(args) => args,
        Err(e) => {
            eprintln!("paper: {e}\n{USAGE}");
            return ExitCode::from(2);
        }
    };
    // Configuration errors (the environment, the topology) are usage errors: exit status 2.
    let setup = || -> Result<_, String> {
        let distribution = match args.distribution {
            Some(d) => d,
            None => Distribution::from_env().map_err(|e| e.to_string())?,
        };
        let mut builder = RuntimeBuilder::from_env().map_err(|e| e.to_string())?;
        if let Some(kind) = args.scheduler {
            builder = builder.scheduler(kind);
        }
        if let Some(n) = args.threads {
            builder = builder.num_threads(n);
        }
        if args.model {
            // The model reads the records in memory; a trace file only with NUMATASK_TRACE.
            builder = builder.trace_summary(true);
        }
        // Fail here, on a bad setting, rather than after allocating.
        let rt = builder.clone().build().map_err(|e| e.to_string())?;
        Ok((distribution, builder, rt))
    };
    let (distribution, builder, rt) = match setup() {
        Ok(x) => x,
        Err(e) => {
            eprintln!("paper: {e}");
            return ExitCode::from(2);
        }
    };
    match run(&args, distribution, &builder, rt) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("paper {}: {e}", args.benchmark);
            ExitCode::FAILURE
        }
    }
}

fn run(
    args: &Args,
    distribution: Distribution,
    builder: &RuntimeBuilder,
    rt: Runtime,
) -> Result<(), BoxError> {
    let topology = Topology::current()?;
    let mut instance = args.benchmark.prepare(args.size, distribution)?;
    println!("{}", instance.describe());
    println!(
        "  {} ({} node(s), {} cores{}), {} workers, scheduler {}, distribution {} (Table 4 \
         suggests {})",
        topology.source(),
        topology.num_nodes(),
        topology.num_cores(),
        if topology.is_synthetic() {
            ", synthetic"
        } else {
            ""
        },
        rt.num_workers(),
        rt.settings().scheduler,
        distribution,
        args.benchmark.heuristic()
    );
    if !args.model {
        let timings = measure(instance.as_mut(), &rt, 1, args.reps, Duration::ZERO, None)?;
        let reps: Vec<String> = timings
            .reps
            .iter()
            .map(|d| format!("{:.2}", d.as_secs_f64() * 1e3))
            .collect();
        println!(
            "  time: {:.2} ms (median of {} after a warm-up: {} ms), verified: {}",
            timings.median().as_secs_f64() * 1e3,
            timings.reps.len(),
            reps.join(" "),
            timings.checksum
        );
        if rt.tracer().is_some() {
            println!("  every run traced; the locality summary of them all:");
            return finish(&rt);
        }
        drop(rt);
        let traced = builder.clone().trace_summary(true).build()?;
        let timings = measure(instance.as_mut(), &traced, 0, 1, Duration::ZERO, None)?;
        println!(
            "  one more run, traced in memory for the locality summary: {:.2} ms",
            timings.median().as_secs_f64() * 1e3
        );
        return finish(&traced);
    }
    // MODEL: each run in a fresh runtime, so that each trace holds one run.
    let params = ModelParams {
        dilation: args.dilation,
        ..ModelParams::default()
    };
    let name = format!("{}+{}", rt.settings().scheduler, distribution);
    let compute = calibrate(args.benchmark, args.size, params)?;
    println!(
        "  compute time per task (calibrated): {}",
        compute.describe()
    );
    let mut rt = Some(rt);
    let mut runs = Vec::new();
    for _ in 0..args.model_runs() {
        let rt = match rt.take() {
            Some(rt) => rt,
            None => builder.clone().build()?,
        };
        let probe = Probe::new(rt.topology(), params, compute.clone());
        let timings = measure(instance.as_mut(), &rt, 0, 1, Duration::ZERO, Some(&probe))?;
        let records = rt.tracer().map(|t| t.records()).unwrap_or_default();
        let evaluation = probe.evaluate(&records, timings.median())?;
        println!(
            "  run {}: MODEL {:.3} ms, verified: {} (stretched {}x in time)",
            runs.len(),
            1e3 * evaluation.model_s(),
            timings.checksum,
            probe.params().dilation
        );
        finish(&rt)?;
        runs.push(evaluation);
    }
    let evaluation = Evaluation::best_of(runs).ok_or("no model run")?;
    print!(
        "{}",
        table(
            &format!(
                "MODEL of {} on {} ({})",
                args.benchmark,
                topology.source(),
                params.describe()
            ),
            &[(name.clone(), evaluation)],
            &name
        )
    );
    Ok(())
}

/// Writes the trace file, if any, and prints the runtime's locality summary (local and
/// remote footprint bytes per node, steals by distance) of every run in `rt`.
fn finish(rt: &Runtime) -> Result<(), BoxError> {
    if let Some(Err(e)) = rt.finish_trace() {
        return Err(format!("writing the trace: {e}").into());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    fn parse(line: &str) -> Result<super::Args, String> {
        super::parse_args(line.split_whitespace().map(str::to_owned))
    }

    #[test]
    fn options_take_their_value_after_a_blank_or_an_equals_sign() {
        let a = parse("jacobi --size=tiny --reps 2 --threads=3").expect("valid");
        assert_eq!(a.benchmark, super::Benchmark::Jacobi);
        assert_eq!((a.size, a.reps, a.threads), (super::Size::Tiny, 2, Some(3)));
        for (line, says) in [
            ("map --model=3", "--model takes no value"),
            (
                "map --threads 4097",
                "--threads '4097': expected a whole number from 1 to 4096",
            ),
            ("map --reps=0", "--reps '0'"),
            ("map --size", "--size needs a value"),
            ("map --frobnicate", "unknown option '--frobnicate'"),
            ("map reduction", "unexpected argument 'reduction'"),
        ] {
            let err = parse(line).err().unwrap_or_default();
            assert!(err.contains(says), "{line}: {err}");
        }
    }
}
