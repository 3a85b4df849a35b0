//! `#[kernel]` kernels with barriers and local memory against the same kernels in OpenCL C
//! (`bench/c/ocl_bench.c`, run on pocl and Intel's CPU runtime by `scripts/bench-kernels.sh`):
//! a tiled matrix multiply through two local tiles, a work-group tree reduction, a work-group
//! inclusive prefix sum (Hillis-Steele, two local arrays), a transpose through a padded local
//! tile, and the cost of a barrier: `y = a * x + y` with and without a redundant barrier
//! between the multiply and the add.
//!
//! ```text
//! cargo bench -p numatask-bench --bench kernel_suite -- --threads 1,2 [--only K] [--reps N]
//! ```
//!
//! Lines (the OpenCL peers print the same):
//! `kernels matmul n=N impl=I threads=T local=16 median_ms=.. gflops=.. reps=R`,
//! `kernels reduce|scan|axpy|axpy_barrier n=N impl=I threads=T local=256 median_ms=.. gbps=.. reps=R`,
//! `kernels transpose n=N impl=I threads=T local=16 median_ms=.. gbps=.. reps=R`.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

#[path = "../../examples/common/sigpipe.rs"]
mod sigpipe;

use numatask::kernels::{Buffer, Context, Kernel, Local, NdRange, Queue, kernel};
use numatask::sched::SchedulerKind;
use numatask_bench::args::{self, Parser, fail};
use numatask_bench::runtime;

/// `c = a * b`, `n` x `n` row-major, n a multiple of 16: work-item (col, row), tiles of 16x16.
#[kernel]
fn matmul(a: &[f32], b: &[f32], c: &mut [f32], n: u32) {
    let ta = local_array::<f32, 256>();
    let tb = local_array::<f32, 256>();
    let n = n as usize;
    let col = global_id(0);
    let row = global_id(1);
    let lx = local_id(0);
    let ly = local_id(1);
    let mut acc: f32 = 0.0;
    for t in 0..n / 16 {
        ta[ly * 16 + lx] = a[row * n + t * 16 + lx];
        tb[ly * 16 + lx] = b[(t * 16 + ly) * n + col];
        barrier();
        for k in 0..16 {
            acc += ta[ly * 16 + k] * tb[k * 16 + lx];
        }
        barrier();
    }
    c[row * n + col] = acc;
}

/// Each group of 256 sums its elements into `out[group]` (a tree in local memory).
#[kernel]
fn reduce(input: &[f32], out: &mut [f32], scratch: Local<f32>) {
    let lid = local_id(0);
    scratch[lid] = input[global_id(0)];
    barrier();
    let mut s = local_size(0) / 2;
    while s > 0 {
        if lid < s {
            scratch[lid] += scratch[lid + s];
        }
        barrier();
        s /= 2;
    }
    if lid == 0 {
        out[group_id(0)] = scratch[0];
    }
}

/// Each group's inclusive prefix sum of its elements (Hillis-Steele, two local arrays taking
/// turns), and its total in `sums[group]`.
#[kernel]
fn scan(input: &[f32], out: &mut [f32], sums: &mut [f32]) {
    let a = local_array::<f32, 256>();
    let b = local_array::<f32, 256>();
    let lid = local_id(0);
    let gid = global_id(0);
    a[lid] = input[gid];
    barrier();
    let mut offset = 1;
    let mut from_a = true;
    while offset < local_size(0) {
        if from_a {
            b[lid] = if lid >= offset {
                a[lid] + a[lid - offset]
            } else {
                a[lid]
            };
        } else {
            a[lid] = if lid >= offset {
                b[lid] + b[lid - offset]
            } else {
                b[lid]
            };
        }
        barrier();
        from_a = !from_a;
        offset *= 2;
    }
    let v = if from_a { a[lid] } else { b[lid] };
    out[gid] = v;
    if lid == local_size(0) - 1 {
        sums[group_id(0)] = v;
    }
}

/// `out = transpose(input)`, `input` `w` wide and `h` high, through a 16x17 local tile. Each
/// element of `out` is written by one work-item: declared disjoint, plain stores, as in C.
#[kernel(unsafe(disjoint(out)))]
fn transpose(input: &[f32], out: &mut [f32], w: u32, h: u32) {
    let tile = local_array::<f32, { 16 * 17 }>();
    let lx = local_id(0);
    let ly = local_id(1);
    let x = group_id(0) * 16 + lx;
    let y = group_id(1) * 16 + ly;
    tile[ly * 17 + lx] = input[y * w as usize + x];
    barrier();
    let ox = group_id(1) * 16 + lx;
    let oy = group_id(0) * 16 + ly;
    out[oy * h as usize + ox] = tile[lx * 17 + ly];
}

#[kernel]
fn axpy(x: &[f32], y: &mut [f32], a: f32) {
    let i = global_id(0);
    y[i] = a * x[i] + y[i];
}

/// `axpy` with a barrier no work-item needs: what a barrier costs.
#[kernel]
fn axpy_barrier(x: &[f32], y: &mut [f32], a: f32) {
    let i = global_id(0);
    let t: f32 = a * x[i];
    barrier();
    y[i] = t + y[i];
}

struct Args {
    threads: Vec<usize>,
    reps: Option<usize>,
    only: Vec<String>,
    mm_n: usize,
    n: usize,
    transpose_n: usize,
    scheduler: SchedulerKind,
    /// Tasks per worker of every launch (`None`: the executor's choice).
    tasks_per_worker: Option<usize>,
}

const USAGE: &str = "\
usage: kernel_suite [--bench] [OPTIONS]
  --threads N,M     worker counts (default all cores; smoke run 1,2)
  --reps N          timed runs per row after a warm-up (default 10 matmul, 20 others; smoke 2)
  --only K,L        kernels: matmul, reduce, scan, transpose, axpy, axpy_barrier, barrier-cost
                    (the last two), or suite (all)
  --mm-n N          matmul's n, a multiple of 16 (default 1024; smoke 64)
  --n N             reduce, scan and axpy's length, a multiple of 256 (default 2^24; smoke 2^12)
  --tr-n N          transpose's side, a multiple of 16 (default 4096; smoke 64)
  --scheduler S     NUMATASK_SCHEDULER name (default ws)
  --tasks-per-worker N  tasks per worker of every launch, 0 for the executor's choice (default 0)
  --platform P      ignored (the OpenCL peers' option)
  --bench           measure (cargo bench passes it); without it, a quick smoke run
  -h, --help        print this text
";

const ALL: [&str; 6] = [
    "matmul",
    "reduce",
    "scan",
    "transpose",
    "axpy",
    "axpy_barrier",
];

fn parse_args() -> Result<Args, String> {
    let smoke = args::smoke();
    let mut a = Args {
        threads: if smoke { vec![1, 2] } else { Vec::new() },
        reps: smoke.then_some(2),
        only: ALL.iter().map(|s| s.to_string()).collect(),
        mm_n: if smoke { 64 } else { 1024 },
        n: if smoke { 1 << 12 } else { 1 << 24 },
        transpose_n: if smoke { 64 } else { 4096 },
        scheduler: SchedulerKind::WorkStealing,
        tasks_per_worker: None,
    };
    let mut p = Parser::new(USAGE);
    while let Some(flag) = p.next()? {
        match flag.as_str() {
            "--threads" => a.threads = p.threads()?,
            "--reps" => a.reps = Some(p.whole(1, 1_000_000)?),
            "--only" => {
                let list: Vec<String> = p.list()?;
                a.only = Vec::new();
                for k in list {
                    match k.as_str() {
                        "suite" | "all" => a.only.extend(ALL.iter().map(|s| s.to_string())),
                        "barrier-cost" => a
                            .only
                            .extend(["axpy".to_owned(), "axpy_barrier".to_owned()]),
                        k if ALL.contains(&k) => a.only.push(k.to_owned()),
                        other => return Err(format!("--only '{other}': one of {ALL:?} or suite")),
                    }
                }
            }
            "--mm-n" => a.mm_n = multiple(p.whole(16, 1 << 14)?, 16, "--mm-n")?,
            "--n" => a.n = multiple(p.whole(256, 1 << 30)?, 256, "--n")?,
            "--tr-n" => a.transpose_n = multiple(p.whole(16, 1 << 15)?, 16, "--tr-n")?,
            "--scheduler" => {
                a.scheduler = p
                    .value()?
                    .parse()
                    .map_err(|e| format!("--scheduler: {e}"))?
            }
            "--tasks-per-worker" => {
                a.tasks_per_worker = Some(p.whole(0, 1 << 16)?).filter(|&t| t > 0)
            }
            "--platform" => {
                p.value()?;
            }
            _ => p.other()?,
        }
    }
    if a.threads.is_empty() {
        a.threads = args::all_cores();
    }
    Ok(a)
}

fn multiple(v: usize, of: usize, what: &str) -> Result<usize, String> {
    if v.is_multiple_of(of) {
        Ok(v)
    } else {
        Err(format!("{what} {v}: a multiple of {of}"))
    }
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

/// Runs `launch` (enqueue and wait) `reps + 1` times; the median of all but the first.
fn time(reps: usize, mut launch: impl FnMut()) -> Duration {
    let mut times = Vec::with_capacity(reps);
    for rep in 0..=reps {
        let t = Instant::now();
        launch();
        if rep > 0 {
            times.push(t.elapsed());
        }
    }
    median(times)
}

fn buffer(ctx: &Context, q: &Queue, data: &[f32]) -> Buffer<f32> {
    let b = ctx
        .buffer::<f32>(data.len())
        .unwrap_or_else(|e| fail("kernel_suite", e));
    q.write(&b, 0, data)
        .unwrap_or_else(|e| fail("kernel_suite", e));
    b
}

fn read(q: &Queue, b: &Buffer<f32>) -> Vec<f32> {
    q.read(b, 0..b.len())
        .and_then(|r| r.wait().map_err(Into::into))
        .unwrap_or_else(|e| fail("kernel_suite", e))
}

/// Tasks per launch (`--tasks-per-worker` times the threads of the row), 0 for the executor's
/// choice.
static TASKS: AtomicUsize = AtomicUsize::new(0);

fn run(q: &Queue, k: &Kernel, range: NdRange, args: Vec<numatask::kernels::Arg>) {
    let mut l = q.launch(k, range);
    let tasks = TASKS.load(Ordering::Relaxed);
    if tasks > 0 {
        l = l.tasks(tasks);
    }
    for a in args {
        l = l.arg(a);
    }
    l.enqueue()
        .and_then(|e| e.wait().map_err(Into::into))
        .unwrap_or_else(|e| fail("kernel_suite", e));
}

fn check(what: &str, got: &[f32], want: &[f32], tol: f32) {
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        if (g - w).abs() > tol * w.abs().max(1.0) {
            fail(
                "kernel_suite",
                format!("{what}: element {i} is {g}, expected {w}"),
            );
        }
    }
}

fn input(n: usize, seed: u64) -> Vec<f32> {
    (0..n)
        .map(|i| {
            (((i as u64).wrapping_mul(2654435761).wrapping_add(seed) >> 7) % 1000) as f32 / 1000.0
        })
        .collect()
}

fn main() {
    sigpipe::restore_default();
    let args = parse_args().unwrap_or_else(|e| fail("kernel_suite", e));
    let name = match args.scheduler {
        SchedulerKind::WorkStealing => "numatask".to_owned(),
        other => format!("numatask[{other}]"),
    };
    let name = match args.tasks_per_worker {
        Some(t) => format!("{name}-{t}-tasks-per-worker"),
        None => name,
    };
    for &threads in &args.threads {
        TASKS.store(
            args.tasks_per_worker
                .map_or(0, |t| t.saturating_mul(threads)),
            Ordering::Relaxed,
        );
        let rt = runtime::build(
            "kernel_suite",
            runtime::runtime_builder("kernel_suite", threads, args.scheduler, true),
        );
        let ctx = Context::new(Arc::new(rt)).unwrap_or_else(|e| fail("kernel_suite", e));
        let q = ctx.queue();
        let line = |k: &str, n: usize, local: usize, t: Duration, rate: String, reps: usize| {
            println!(
                "kernels {k} n={n} impl={name} threads={threads} local={local} median_ms={:.3} {rate} reps={reps}",
                t.as_secs_f64() * 1e3
            );
        };
        for k in &args.only {
            let reps = args.reps.unwrap_or(if k == "matmul" { 10 } else { 20 });
            match k.as_str() {
                "matmul" => {
                    let n = args.mm_n;
                    let (ha, hb) = (input(n * n, 1), input(n * n, 2));
                    let (a, b) = (buffer(&ctx, &q, &ha), buffer(&ctx, &q, &hb));
                    let c = buffer(&ctx, &q, &vec![0.0; n * n]);
                    let range = NdRange::new([n, n]).local([16, 16]);
                    let go = || {
                        run(
                            &q,
                            &matmul,
                            range.clone(),
                            vec![(&a).into(), (&b).into(), (&c).into(), (n as u32).into()],
                        )
                    };
                    let t = time(reps, go);
                    // Spot-check rows against a serial product.
                    let got = read(&q, &c);
                    for row in [0, n / 2, n - 1] {
                        let want: Vec<f32> = (0..n)
                            .map(|col| (0..n).map(|k| ha[row * n + k] * hb[k * n + col]).sum())
                            .collect();
                        check("matmul", &got[row * n..(row + 1) * n], &want, 1e-3);
                    }
                    let gflops = 2.0 * (n as f64).powi(3) / t.as_secs_f64() / 1e9;
                    line("matmul", n, 16, t, format!("gflops={gflops:.2}"), reps);
                }
                "reduce" => {
                    let n = args.n;
                    let h = input(n, 3);
                    let x = buffer(&ctx, &q, &h);
                    let out = buffer(&ctx, &q, &vec![0.0; n / 256]);
                    let range = NdRange::new([n]).local([256]);
                    let t = time(reps, || {
                        run(
                            &q,
                            &reduce,
                            range.clone(),
                            vec![(&x).into(), (&out).into(), Local::<f32>::new(256).into()],
                        )
                    });
                    let want: Vec<f32> = h.chunks(256).map(|c| c.iter().sum()).collect();
                    check("reduce", &read(&q, &out), &want, 1e-4);
                    let gbps = 4.0 * n as f64 / t.as_secs_f64() / 1e9;
                    line("reduce", n, 256, t, format!("gbps={gbps:.2}"), reps);
                }
                "scan" => {
                    let n = args.n;
                    let h = input(n, 4);
                    let x = buffer(&ctx, &q, &h);
                    let out = buffer(&ctx, &q, &vec![0.0; n]);
                    let sums = buffer(&ctx, &q, &vec![0.0; n / 256]);
                    let range = NdRange::new([n]).local([256]);
                    let t = time(reps, || {
                        run(
                            &q,
                            &scan,
                            range.clone(),
                            vec![(&x).into(), (&out).into(), (&sums).into()],
                        )
                    });
                    let mut want = Vec::with_capacity(n);
                    for c in h.chunks(256) {
                        let mut s = 0.0f32;
                        want.extend(c.iter().map(|v| {
                            s += v;
                            s
                        }));
                    }
                    check("scan", &read(&q, &out), &want, 1e-4);
                    let gbps = 8.0 * n as f64 / t.as_secs_f64() / 1e9;
                    line("scan", n, 256, t, format!("gbps={gbps:.2}"), reps);
                }
                "transpose" => {
                    let n = args.transpose_n;
                    let h = input(n * n, 5);
                    let x = buffer(&ctx, &q, &h);
                    let out = buffer(&ctx, &q, &vec![0.0; n * n]);
                    let range = NdRange::new([n, n]).local([16, 16]);
                    let t = time(reps, || {
                        run(
                            &q,
                            &transpose,
                            range.clone(),
                            vec![
                                (&x).into(),
                                (&out).into(),
                                (n as u32).into(),
                                (n as u32).into(),
                            ],
                        )
                    });
                    let got = read(&q, &out);
                    for (i, &v) in got.iter().enumerate() {
                        let (r, c) = (i / n, i % n);
                        if v != h[c * n + r] {
                            fail(
                                "kernel_suite",
                                format!("transpose: element ({r}, {c}) is {v}"),
                            );
                        }
                    }
                    let gbps = 8.0 * (n * n) as f64 / t.as_secs_f64() / 1e9;
                    line("transpose", n, 16, t, format!("gbps={gbps:.2}"), reps);
                }
                "axpy" | "axpy_barrier" => {
                    let n = args.n;
                    let hx = input(n, 6);
                    let x = buffer(&ctx, &q, &hx);
                    let y = buffer(&ctx, &q, &vec![1.0; n]);
                    let kern: &Kernel = if k == "axpy" { &axpy } else { &axpy_barrier };
                    let range = NdRange::new([n]).local([256]);
                    let t = time(reps, || {
                        run(
                            &q,
                            kern,
                            range.clone(),
                            vec![(&x).into(), (&y).into(), 0.5f32.into()],
                        )
                    });
                    let got = read(&q, &y);
                    // y started at 1 and took reps + 1 launches of y += 0.5 x.
                    let want: Vec<f32> = hx
                        .iter()
                        .map(|&xv| (0..=reps).fold(1.0f32, |y, _| 0.5 * xv + y))
                        .collect();
                    check(k, &got, &want, 1e-5);
                    let gbps = 12.0 * n as f64 / t.as_secs_f64() / 1e9;
                    line(k, n, 256, t, format!("gbps={gbps:.2}"), reps);
                }
                _ => unreachable!("checked by parse_args"),
            }
        }
    }
}
