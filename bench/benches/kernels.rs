//! The kernel executor against its peers: launch overhead (an empty kernel of 1 and of 1024
//! work-groups of 64 work-items, from enqueue to the end of the wait for its event) and saxpy
//! (`y = a * x + y` on 2^24 floats, a work-item closure) against the same loop under rayon, on
//! plain threads and serially (`numatask_bench::kernels_peers`). The OpenCL peers (pocl,
//! Intel's CPU runtime) print the same lines from `bench/c/ocl_bench.c`, run by
//! `scripts/bench-kernels.sh`, which runs this too.
//!
//! ```text
//! scripts/bench-kernels.sh --threads 1,2
//! cargo bench -p numatask-bench --bench kernels -- --threads 1,2 [--only launch|saxpy] [--reps N] [--n N] [--local N] [--tasks N]
//! ```
//!
//! Lines: `kernels launch groups=G impl=I threads=T median_us=.. min_us=.. reps=R` and
//! `kernels saxpy n=N impl=I threads=T local=auto median_ms=.. gbps=.. reps=R` (12 bytes per
//! element: x and y read, y written).

use std::sync::Arc;
use std::time::{Duration, Instant};

// The examples' SIGPIPE reset (`... | head` ends the bench quietly).
#[path = "../../examples/common/sigpipe.rs"]
mod sigpipe;

use numatask::kernels::{Context, Kernel, NdRange, Read, ReadWrite};
use numatask::sched::SchedulerKind;
use numatask_bench::args::{self, Parser, fail};
use numatask_bench::kernels_peers::{saxpy_rayon, saxpy_serial, saxpy_threads};
use numatask_bench::runtime;

struct Args {
    threads: Vec<usize>,
    /// Timed launches per row; `None`: 1000 for launch, 50 for saxpy.
    reps: Option<usize>,
    n: usize,
    /// saxpy's local size (`None`: the executor's choice).
    local: Option<usize>,
    /// saxpy's tasks per launch (`None`: the executor's choice).
    tasks: Option<usize>,
    launch: bool,
    saxpy: bool,
    schedulers: Vec<SchedulerKind>,
}

/// Every flag [`parse_args`] accepts (keep the two together).
const USAGE: &str = "\
usage: kernels [--bench] [OPTIONS]
  --threads N,M     worker counts to run, each from 1 to the runtime's limit
                    (default all cores; smoke run 1,2)
  --reps N          timed launches per row after a warm-up, 1 to 1000000
                    (default 1000 for launch, 50 for saxpy; smoke run 3)
  --n N             saxpy's length, 1 to 2^30 (default 2^24; smoke run 2^12)
  --local N         saxpy's local size, 0 for the executor's choice (default 0)
  --tasks N         saxpy's tasks per launch, 0 for the executor's choice (default 0)
  --only B          launch, saxpy or all (default all)
  --platform P      ignored (the OpenCL peers' option, which scripts pass to every program)
  --scheduler S,T   numatask's policies, NUMATASK_SCHEDULER names (default ws)
  --bench           measure (cargo bench passes it); without it, a quick smoke run
  -h, --help        print this text
";

fn parse_args() -> Result<Args, String> {
    let smoke = args::smoke();
    let mut args = Args {
        threads: if smoke { vec![1, 2] } else { Vec::new() },
        reps: smoke.then_some(3),
        n: if smoke { 1 << 12 } else { 1 << 24 },
        local: None,
        tasks: None,
        launch: true,
        saxpy: true,
        schedulers: vec![SchedulerKind::WorkStealing],
    };
    let mut p = Parser::new(USAGE);
    while let Some(flag) = p.next()? {
        match flag.as_str() {
            "--threads" => args.threads = p.threads()?,
            "--reps" => args.reps = Some(p.whole(1, 1_000_000)?),
            "--n" => args.n = p.whole(1, 1 << 30)?,
            "--local" => args.local = Some(p.whole(0, 1 << 20)?).filter(|&l| l > 0),
            "--tasks" => args.tasks = Some(p.whole(0, 1 << 20)?).filter(|&t| t > 0),
            "--only" => match p.value()?.as_str() {
                "launch" => args.saxpy = false,
                "saxpy" => args.launch = false,
                "all" => {}
                other => return Err(format!("--only '{other}': launch, saxpy or all")),
            },
            "--platform" => {
                p.value()?;
            }
            "--scheduler" => args.schedulers = p.list()?,
            _ => p.other()?,
        }
    }
    if args.threads.is_empty() {
        args.threads = args::all_cores();
    }
    Ok(args)
}

/// A saxpy peer: `y = 0.5 * x + y`.
type Saxpy<'a> = dyn FnMut(&[f32], &mut [f32]) + 'a;

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn impl_name(kind: SchedulerKind) -> String {
    match kind {
        SchedulerKind::WorkStealing => "numatask".to_owned(),
        other => format!("numatask[{other}]"),
    }
}

fn main() {
    sigpipe::restore_default();
    let args = parse_args().unwrap_or_else(|e| fail("kernels", e));
    let empty = Kernel::groups("empty", Vec::new(), |_, _| {});
    let saxpy = Kernel::items::<(Read<f32>, ReadWrite<f32>, f32), _>("saxpy", |item, (x, y, a)| {
        *y += a * x[item.global_id(0)]
    });
    for &threads in &args.threads {
        for &kind in &args.schedulers {
            let rt = runtime::build(
                "kernels",
                runtime::runtime_builder("kernels", threads, kind, true),
            );
            let ctx = Context::new(Arc::new(rt)).unwrap_or_else(|e| fail("kernels", e));
            let q = ctx.queue();
            let name = impl_name(kind);
            if args.launch {
                for groups in [1usize, 1024] {
                    let range = NdRange::new([groups * 64]).local([64]);
                    let reps = args.reps.unwrap_or(1000);
                    let mut times = Vec::with_capacity(reps);
                    for rep in 0..=reps {
                        let t = Instant::now();
                        q.launch(&empty, range.clone())
                            .enqueue()
                            .and_then(|e| e.wait().map_err(Into::into))
                            .unwrap_or_else(|e| fail("kernels", e));
                        if rep > 0 {
                            times.push(t.elapsed());
                        }
                    }
                    let min = *times.iter().min().expect("reps >= 1");
                    println!(
                        "kernels launch groups={groups} impl={name} threads={threads} median_us={:.2} min_us={:.2} reps={}",
                        median(times).as_secs_f64() * 1e6,
                        min.as_secs_f64() * 1e6,
                        reps
                    );
                }
            }
            if args.saxpy {
                let reps = args.reps.unwrap_or(50);
                let n = args.n;
                let x = ctx.buffer::<f32>(n).unwrap_or_else(|e| fail("kernels", e));
                let y = ctx.buffer::<f32>(n).unwrap_or_else(|e| fail("kernels", e));
                q.fill(&x, 1.0, 0..n).unwrap_or_else(|e| fail("kernels", e));
                q.fill(&y, 2.0, 0..n).unwrap_or_else(|e| fail("kernels", e));
                let mut times = Vec::with_capacity(reps);
                for rep in 0..=reps {
                    let t = Instant::now();
                    let range = match args.local {
                        Some(l) => NdRange::new([n]).local([l]),
                        None => NdRange::new([n]),
                    };
                    let mut launch = q.launch(&saxpy, range);
                    if let Some(t) = args.tasks {
                        launch = launch.tasks(t);
                    }
                    launch
                        .arg(&x)
                        .arg(&y)
                        .arg(0.5f32)
                        .enqueue()
                        .and_then(|e| e.wait().map_err(Into::into))
                        .unwrap_or_else(|e| fail("kernels", e));
                    if rep > 0 {
                        times.push(t.elapsed());
                    }
                }
                let got = q.read(&y, 0..n).and_then(|r| r.wait().map_err(Into::into));
                let want = 2.0 + 0.5 * (reps + 1) as f32;
                match got {
                    Ok(v) if v.iter().all(|&e| e == want) => {}
                    Ok(_) => fail("kernels", format!("saxpy: a result is not {want}")),
                    Err(e) => fail("kernels", e),
                }
                print_saxpy(&name, threads, n, args.local, times);
            }
        }
        if args.saxpy {
            let reps = args.reps.unwrap_or(50);
            let n = args.n;
            let x = vec![1.0f32; n];
            let mut y = vec![2.0f32; n];
            let pool = rayon::ThreadPoolBuilder::new()
                .num_threads(threads)
                .build()
                .unwrap_or_else(|e| fail("kernels", e));
            let mut peers: Vec<(&str, Box<Saxpy>)> = vec![
                (
                    "rayon",
                    Box::new(|x, y| pool.install(|| saxpy_rayon(0.5, x, y))),
                ),
                (
                    "threads",
                    Box::new(|x, y| saxpy_threads(threads, 0.5, x, y)),
                ),
            ];
            if threads == 1 {
                peers.push(("serial", Box::new(|x, y| saxpy_serial(0.5, x, y))));
            }
            for (name, f) in &mut peers {
                let mut times = Vec::with_capacity(reps);
                for rep in 0..=reps {
                    let t = Instant::now();
                    f(&x, &mut y);
                    if rep > 0 {
                        times.push(t.elapsed());
                    }
                }
                print_saxpy(name, threads, n, None, times);
            }
        }
    }
}

fn print_saxpy(name: &str, threads: usize, n: usize, local: Option<usize>, times: Vec<Duration>) {
    let reps = times.len();
    let m = median(times).as_secs_f64();
    let local = local.map_or("auto".to_owned(), |l| l.to_string());
    println!(
        "kernels saxpy n={n} impl={name} threads={threads} local={local} median_ms={:.3} gbps={:.2} reps={reps}",
        m * 1e3,
        12.0 * n as f64 / m / 1e9
    );
}
