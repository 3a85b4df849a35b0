//! The six benchmarks of the core paper's Table 4 (Map, Reduction, Vecmul, Matmul, Jacobi,
//! SparseLU), one at a time, in any configuration: scheduler and data distribution from the
//! environment (`NUMATASK_SCHEDULER`, `OMP_DATA_DISTRIBUTION`) or the command line. Prints the
//! wall time of the parallel section, verifies the result against a sequential computation
//! (exit status 1 on a mismatch), and, when tracing (`NUMATASK_TRACE=file.json`), the
//! runtime's locality summary. `benches/paper.rs` runs the whole matrix.
//!
//! ```text
//! cargo run --release --example paper -- map --scheduler locality --distribution coarse
//! OMP_DATA_DISTRIBUTION=fine NUMATASK_SCHEDULER=ws cargo run --release --example paper -- jacobi
//! NUMATASK_TRACE=map.json cargo run --release --example paper -- map --size small
//! # The paper's 8-node machine (synthetic: placement recorded, 48 workers time-share the real
//! # cores), with the NUMA cost MODEL of suite/cost_model.rs:
//! NUMATASK_TOPOLOGY=preset:opteron6172 cargo run --release --example paper -- \
//!     matmul --scheduler locality --distribution coarse --model
//! ```
//!
//! Options: `--scheduler ws|locality`, `--distribution standard|fine|coarse`,
//! `--size tiny|small|medium|large` (default small), `--reps N` (default 3, after one warm-up),
//! `--threads N`, `--model` (traced, time-dilated runs, one unless `--reps` says more, each in
//! a fresh runtime, evaluated by the cost MODEL of `suite/cost_model.rs`; the fastest run is
//! shown), `--dilation K`.

mod suite;

use std::process::ExitCode;
use std::time::Duration;

use numatask::alloc::{Distribution, Topology};
use numatask::sched::{Runtime, RuntimeBuilder, SchedulerKind};

use suite::cost_model::{Evaluation, ModelParams, Probe, calibrate, table};
use suite::{Benchmark, Size, measure};

const USAGE: &str = "usage: paper <map|reduction|vecmul|matmul|jacobi|sparselu> \
    [--scheduler ws|locality] [--distribution standard|fine|coarse] \
    [--size tiny|small|medium|large] [--reps N] [--threads N] [--model] [--dilation K]";

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
    let mut it = args.into_iter();
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
    while let Some(arg) = it.next() {
        let mut value = |name: &str| it.next().ok_or_else(|| format!("{name} needs a value"));
        match arg.as_str() {
            "--scheduler" => {
                let v = value("--scheduler")?;
                parsed.scheduler = Some(v.parse().map_err(|e| format!("--scheduler: {e}"))?);
            }
            "--distribution" => {
                let v = value("--distribution")?;
                parsed.distribution = Some(v.parse().map_err(|e| format!("--distribution: {e}"))?);
            }
            "--size" => parsed.size = value("--size")?.parse()?,
            "--reps" => {
                let v = value("--reps")?;
                parsed.reps = v
                    .parse()
                    .ok()
                    .filter(|&n| n >= 1)
                    .ok_or(format!("--reps '{v}': expected a number >= 1"))?;
                parsed.reps_given = true;
            }
            "--threads" => {
                let v = value("--threads")?;
                parsed.threads = Some(
                    v.parse()
                        .ok()
                        .filter(|&n| n >= 1)
                        .ok_or(format!("--threads '{v}': expected a number >= 1"))?,
                );
            }
            "--dilation" => {
                let v = value("--dilation")?;
                parsed.dilation = v
                    .parse()
                    .ok()
                    .filter(|&k: &f64| k >= 1.0)
                    .ok_or(format!("--dilation '{v}': expected a number >= 1"))?;
            }
            "--model" => parsed.model = true,
            "-h" | "--help" => return Err(USAGE.into()),
            other if other.starts_with('-') => return Err(format!("unknown option '{other}'")),
            other if benchmark.is_none() => benchmark = Some(other.parse::<Benchmark>()?),
            other => return Err(format!("unexpected argument '{other}'")),
        }
    }
    parsed.benchmark = benchmark.ok_or("which benchmark?")?;
    Ok(parsed)
}

fn main() -> ExitCode {
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
        if args.model && std::env::var_os("NUMATASK_TRACE").is_none_or(|v| v.is_empty()) {
            builder = builder.trace(std::env::temp_dir().join(format!(
                "numatask-paper-{}-{}.json",
                args.benchmark,
                std::process::id()
            )));
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
) -> Result<(), suite::BoxError> {
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
        return finish(&rt);
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

/// When tracing: writes the trace file and prints the runtime's locality summary (local and
/// remote footprint bytes per node, steals by distance) of every run in `rt`.
fn finish(rt: &Runtime) -> Result<(), suite::BoxError> {
    if let Some(Err(e)) = rt.finish_trace() {
        return Err(format!("writing the trace: {e}").into());
    }
    Ok(())
}
