//! Kernels in the style of Parboil and Rodinia (`numatask_bench::apps`: k-means, MRI-Q, SpMV,
//! 7-point stencil, pathfinder), each as serial Rust, with rayon, and as a `#[kernel]` on
//! numatask's executor, checked against the serial result:
//!
//! ```text
//! cargo bench -p numatask-bench --bench kernel_apps -- --threads 1,2 [--only K] [--reps N]
//! ```
//!
//! Lines: `apps K impl=serial|rayon|numatask threads=T median_ms=.. reps=R` (serial once, at
//! one thread).

use std::sync::Arc;
use std::time::{Duration, Instant};

#[path = "../../examples/common/sigpipe.rs"]
mod sigpipe;

use numatask::kernels::{Context, Queue};
use numatask::sched::SchedulerKind;
use numatask_bench::apps::{self, Csr, Lcg, MriQ};
use numatask_bench::args::{self, Parser, fail};
use numatask_bench::runtime;

const ALL: [&str; 5] = ["kmeans", "mriq", "spmv", "stencil", "pathfinder"];

const USAGE: &str = "\
usage: kernel_apps [--bench] [OPTIONS]
  --threads N,M     worker counts (default all cores; smoke run 1,2)
  --reps N          timed runs per row after a warm-up (default 10; smoke 1)
  --only K,L        kernels: kmeans, mriq, spmv, stencil, pathfinder (default all)
  --bench           measure (cargo bench passes it); without it, a quick smoke run on small inputs
  -h, --help        print this text";

struct Args {
    threads: Vec<usize>,
    reps: usize,
    only: Vec<String>,
    smoke: bool,
}

fn parse_args() -> Result<Args, String> {
    let smoke = args::smoke();
    let mut a = Args {
        threads: if smoke { vec![1, 2] } else { args::all_cores() },
        reps: if smoke { 1 } else { 10 },
        only: ALL.iter().map(|s| s.to_string()).collect(),
        smoke,
    };
    let mut p = Parser::new(USAGE);
    while let Some(flag) = p.next()? {
        match flag.as_str() {
            "--threads" => a.threads = p.threads()?,
            "--reps" => a.reps = p.whole(1, 10_000)?,
            "--only" => {
                a.only = p.list()?;
                if let Some(k) = a.only.iter().find(|k| !ALL.contains(&k.as_str())) {
                    return Err(format!("--only '{k}': one of {ALL:?}"));
                }
            }
            "--bench" => {}
            _ => p.other()?,
        }
    }
    Ok(a)
}

/// The median of `reps` timed runs of `f` after one warm-up.
fn time(reps: usize, mut f: impl FnMut()) -> Duration {
    f();
    let mut times: Vec<Duration> = (0..reps)
        .map(|_| {
            let t = Instant::now();
            f();
            t.elapsed()
        })
        .collect();
    times.sort();
    times[times.len() / 2]
}

fn line(kernel: &str, imp: &str, threads: usize, t: Duration, reps: usize) {
    println!(
        "apps {kernel} impl={imp} threads={threads} median_ms={:.3} reps={reps}",
        t.as_secs_f64() * 1e3
    );
}

fn ok<T>(r: Result<T, String>) -> T {
    r.unwrap_or_else(|e| fail("kernel_apps", e))
}

fn same<T: PartialEq + std::fmt::Debug>(what: &str, got: &[T], want: &[T]) {
    if let Some(i) = (0..want.len()).find(|&i| got[i] != want[i]) {
        fail(
            "kernel_apps",
            format!(
                "{what}: element {i} is {:?}, expected {:?}",
                got[i], want[i]
            ),
        );
    }
}

fn close(what: &str, got: &[f32], want: &[f32]) {
    if let Some(i) =
        (0..want.len()).find(|&i| (got[i] - want[i]).abs() > 1e-3 * want[i].abs().max(1.0))
    {
        fail(
            "kernel_apps",
            format!("{what}: element {i} is {}, expected {}", got[i], want[i]),
        );
    }
}

/// Times `f` on a rayon pool of `threads`.
fn rayon_time(threads: usize, reps: usize, mut f: impl FnMut() + Send) -> Duration {
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .build()
        .unwrap_or_else(|e| fail("kernel_apps", e));
    pool.install(|| time(reps, &mut f))
}

/// A context on a runtime of `threads` workers (the environment's settings otherwise), and a
/// queue of it.
fn context(threads: usize) -> (Context, Queue) {
    let builder =
        runtime::runtime_builder("kernel_apps", threads, SchedulerKind::WorkStealing, true);
    let rt = Arc::new(runtime::build("kernel_apps", builder));
    let ctx = ok(Context::new(rt).map_err(|e| e.to_string()));
    let q = ctx.queue();
    (ctx, q)
}

/// The rows of kernel `name` after its serial one: at each thread count, rayon's
/// (`rayon(threads)`: time and result) and numatask's (`numatask(context, queue)`: time and
/// result), each result checked against `want` with `check`.
fn rows<T>(
    a: &Args,
    name: &str,
    want: &T,
    check: impl Fn(&str, &T, &T),
    mut rayon: impl FnMut(usize) -> (Duration, T),
    mut numatask: impl FnMut(&Context, &Queue) -> (Duration, T),
) {
    for &th in &a.threads {
        let (t, got) = rayon(th);
        check(&format!("{name} rayon"), &got, want);
        line(name, "rayon", th, t, a.reps);
        let (ctx, q) = context(th);
        let (t, got) = numatask(&ctx, &q);
        check(name, &got, want);
        line(name, "numatask", th, t, a.reps);
    }
}

/// Times `ready` and reads what it wrote with `out`.
fn run_ready<O, T>(
    q: &Queue,
    reps: usize,
    ready: apps::Ready<O>,
    out: impl Fn(&O) -> T,
) -> (Duration, T) {
    let t = time(reps, || ok(ready.run(q, false)));
    (t, out(&ready.out))
}

fn main() {
    sigpipe::restore_default();
    let a = parse_args().unwrap_or_else(|e| fail("kernel_apps", e));
    let s = a.smoke;
    let reps = a.reps;
    let same_u32 = |w: &str, g: &Vec<u32>, x: &Vec<u32>| same(w, g, x);
    let close_f32 = |w: &str, g: &Vec<f32>, x: &Vec<f32>| close(w, g, x);
    for k in &a.only {
        match k.as_str() {
            "kmeans" => {
                // Rodinia's kdd_cup input has 34 features; 8 centres.
                let (n, k, nf) = if s { (1000, 4, 8) } else { (1 << 18, 8, 34) };
                let mut rng = Lcg(1);
                let (features, centres) = (rng.vec(n * nf), rng.vec(k * nf));
                let mut want = vec![0u32; n];
                let t = time(reps, || {
                    apps::kmeans_serial(&features, &centres, &mut want, k, nf)
                });
                line("kmeans", "serial", 1, t, reps);
                rows(
                    &a,
                    "kmeans",
                    &want,
                    same_u32,
                    |th| {
                        let mut got = vec![0u32; n];
                        let t = rayon_time(th, reps, || {
                            apps::kmeans_rayon(&features, &centres, &mut got, k, nf)
                        });
                        (t, got)
                    },
                    |ctx, q| {
                        let l = ok(apps::kmeans_ready(ctx, q, &features, &centres, nf, 256));
                        run_ready(q, reps, l, |m| ok(apps::read(q, m)))
                    },
                );
            }
            "mriq" => {
                let (voxels, samples) = if s { (512, 64) } else { (1 << 14, 2048) };
                let mut rng = Lcg(2);
                let kv: Vec<Vec<f32>> = (0..3).map(|_| rng.vec(samples)).collect();
                let phi = rng.vec(samples);
                let xv: Vec<Vec<f32>> = (0..3).map(|_| rng.vec(voxels)).collect();
                let m = MriQ {
                    k: [&kv[0], &kv[1], &kv[2]],
                    phi_mag: &phi,
                    x: [&xv[0], &xv[1], &xv[2]],
                };
                let mut want = (vec![0.0; voxels], vec![0.0; voxels]);
                let t = time(reps, || m.serial(&mut want.0, &mut want.1));
                line("mriq", "serial", 1, t, reps);
                rows(
                    &a,
                    "mriq",
                    &want,
                    |w, g, x| {
                        close(w, &g.0, &x.0);
                        close(w, &g.1, &x.1);
                    },
                    |th| {
                        let mut got = (vec![0.0; voxels], vec![0.0; voxels]);
                        let t = rayon_time(th, reps, || m.rayon(&mut got.0, &mut got.1));
                        (t, got)
                    },
                    |ctx, q| {
                        let l = ok(apps::mriq_ready(ctx, q, &m, 256));
                        run_ready(q, reps, l, |[r, i]| {
                            (ok(apps::read(q, r)), ok(apps::read(q, i)))
                        })
                    },
                );
            }
            "spmv" => {
                let (n, mean) = if s { (2000, 8) } else { (1 << 20, 16) };
                let m = Csr::random(n, mean, 3);
                let x = Lcg(4).vec(n);
                let mut want = vec![0.0; n];
                let t = time(reps, || m.serial(&x, &mut want));
                line("spmv", "serial", 1, t, reps);
                rows(
                    &a,
                    "spmv",
                    &want,
                    close_f32,
                    |th| {
                        let mut got = vec![0.0; n];
                        let t = rayon_time(th, reps, || m.rayon(&x, &mut got));
                        (t, got)
                    },
                    |ctx, q| {
                        let l = ok(apps::spmv_ready(ctx, q, &m, &x, 128));
                        run_ready(q, reps, l, |y| ok(apps::read(q, y)))
                    },
                );
            }
            "stencil" => {
                // Parboil's default input: 128 x 128 x 32; here 4x the planes' area.
                let n = if s { [34, 18, 10] } else { [258, 258, 66] };
                let len: usize = n.iter().product();
                let a0 = Lcg(5).vec(len);
                let c = [0.5f32, 1.0 / 6.0];
                let mut want = vec![0.0; len];
                let t = time(reps, || apps::stencil_serial(&a0, &mut want, n, c));
                line("stencil", "serial", 1, t, reps);
                rows(
                    &a,
                    "stencil",
                    &want,
                    close_f32,
                    |th| {
                        let mut got = vec![0.0; len];
                        let t = rayon_time(th, reps, || apps::stencil_rayon(&a0, &mut got, n, c));
                        (t, got)
                    },
                    |ctx, q| {
                        let l = ok(apps::stencil_ready(ctx, q, &a0, n, c, [32, 4], 0.0));
                        run_ready(q, reps, l, |next| ok(apps::read(q, next)))
                    },
                );
            }
            "pathfinder" => {
                // Rodinia's: 100,000 columns, 100 rows, pyramids of 20 rows.
                let (cols, height, h) = if s { (3000, 30, 5) } else { (100_000, 100, 20) };
                let mut rng = Lcg(6);
                let wall: Vec<i32> = (0..cols * height).map(|_| rng.below(10) as i32).collect();
                let mut want = Vec::new();
                let t = time(reps, || want = apps::pathfinder_serial(&wall, cols));
                line("pathfinder", "serial", 1, t, reps);
                rows(
                    &a,
                    "pathfinder",
                    &want,
                    |w, g: &Vec<i32>, x| same(w, g, x),
                    |th| {
                        let mut got = Vec::new();
                        let t = rayon_time(th, reps, || got = apps::pathfinder_rayon(&wall, cols));
                        (t, got)
                    },
                    |ctx, q| {
                        let w = ok(apps::buffer(ctx, q, &wall));
                        let src = ok(apps::buffer(ctx, q, &wall[..cols]));
                        let dst = ok(apps::buffer(ctx, q, &vec![0i32; cols]));
                        let mut last = None;
                        let t = time(reps, || {
                            // Every run starts again from the first row.
                            ok(q.write(&src, 0, &wall[..cols]).map_err(|e| e.to_string()));
                            last = Some(ok(apps::pathfinder_launches(
                                q, &w, &src, &dst, cols, height, h, 256, false,
                            )));
                        });
                        (t, ok(apps::read(q, last.expect("ran"))))
                    },
                );
            }
            _ => unreachable!("checked by parse_args"),
        }
    }
}
