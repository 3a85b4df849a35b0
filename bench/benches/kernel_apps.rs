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

use numatask::kernels::{Buffer, Context, Element, NdRange, Queue};
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

fn buf<T: Element>(ctx: &Context, q: &Queue, data: &[T]) -> Buffer<T> {
    ok(apps::buffer(ctx, q, data))
}

fn main() {
    sigpipe::restore_default();
    let a = parse_args().unwrap_or_else(|e| fail("kernel_apps", e));
    let s = a.smoke;
    let reps = a.reps;
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
                for &th in &a.threads {
                    let mut got = vec![0u32; n];
                    let t = rayon_time(th, reps, || {
                        apps::kmeans_rayon(&features, &centres, &mut got, k, nf)
                    });
                    same("kmeans rayon", &got, &want);
                    line("kmeans", "rayon", th, t, reps);
                    let (ctx, q) = context(th);
                    let (f, c) = (buf(&ctx, &q, &features), buf(&ctx, &q, &centres));
                    let m = buf(&ctx, &q, &vec![0u32; n]);
                    let range = NdRange::new([n.next_multiple_of(256)]).local([256]);
                    let args = || {
                        vec![
                            (&f).into(),
                            (&c).into(),
                            (&m).into(),
                            (n as u32).into(),
                            (k as u32).into(),
                            (nf as u32).into(),
                        ]
                    };
                    let t = time(reps, || {
                        ok(apps::launch(
                            &q,
                            &apps::kmeans,
                            range.clone(),
                            args(),
                            false,
                        ))
                    });
                    same("kmeans", &ok(apps::read(&q, &m)), &want);
                    line("kmeans", "numatask", th, t, reps);
                }
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
                let (mut qr, mut qi) = (vec![0.0; voxels], vec![0.0; voxels]);
                let t = time(reps, || m.serial(&mut qr, &mut qi));
                line("mriq", "serial", 1, t, reps);
                for &th in &a.threads {
                    let (mut pr, mut pi) = (vec![0.0; voxels], vec![0.0; voxels]);
                    let t = rayon_time(th, reps, || m.rayon(&mut pr, &mut pi));
                    close("mriq rayon", &pr, &qr);
                    line("mriq", "rayon", th, t, reps);
                    let (ctx, q) = context(th);
                    let kb: Vec<Buffer<f32>> = kv.iter().map(|v| buf(&ctx, &q, v)).collect();
                    let xb: Vec<Buffer<f32>> = xv.iter().map(|v| buf(&ctx, &q, v)).collect();
                    let pb = buf(&ctx, &q, &phi);
                    let (r, i) = (
                        buf(&ctx, &q, &vec![0.0f32; voxels]),
                        buf(&ctx, &q, &vec![0.0f32; voxels]),
                    );
                    let range = NdRange::new([voxels]).local([256]);
                    let args = || {
                        vec![
                            (&kb[0]).into(),
                            (&kb[1]).into(),
                            (&kb[2]).into(),
                            (&pb).into(),
                            (&xb[0]).into(),
                            (&xb[1]).into(),
                            (&xb[2]).into(),
                            (&r).into(),
                            (&i).into(),
                            (samples as u32).into(),
                        ]
                    };
                    let t = time(reps, || {
                        ok(apps::launch(&q, &apps::mriq, range.clone(), args(), false))
                    });
                    close("mriq", &ok(apps::read(&q, &r)), &qr);
                    close("mriq", &ok(apps::read(&q, &i)), &qi);
                    line("mriq", "numatask", th, t, reps);
                }
            }
            "spmv" => {
                let (rows, mean) = if s { (2000, 8) } else { (1 << 20, 16) };
                let m = Csr::random(rows, mean, 3);
                let x = Lcg(4).vec(rows);
                let mut want = vec![0.0; rows];
                let t = time(reps, || m.serial(&x, &mut want));
                line("spmv", "serial", 1, t, reps);
                for &th in &a.threads {
                    let mut got = vec![0.0; rows];
                    let t = rayon_time(th, reps, || m.rayon(&x, &mut got));
                    same("spmv rayon", &got, &want);
                    line("spmv", "rayon", th, t, reps);
                    let (ctx, q) = context(th);
                    let (rp, cb, vb) = (
                        buf(&ctx, &q, &m.row_ptr),
                        buf(&ctx, &q, &m.cols),
                        buf(&ctx, &q, &m.vals),
                    );
                    let (xb, yb) = (buf(&ctx, &q, &x), buf(&ctx, &q, &vec![0.0f32; rows]));
                    let range = NdRange::new([rows.next_multiple_of(128)]).local([128]);
                    let args = || {
                        vec![
                            (&rp).into(),
                            (&cb).into(),
                            (&vb).into(),
                            (&xb).into(),
                            (&yb).into(),
                            (rows as u32).into(),
                        ]
                    };
                    let t = time(reps, || {
                        ok(apps::launch(&q, &apps::spmv, range.clone(), args(), false))
                    });
                    close("spmv", &ok(apps::read(&q, &yb)), &want);
                    line("spmv", "numatask", th, t, reps);
                }
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
                for &th in &a.threads {
                    let mut got = vec![0.0; len];
                    let t = rayon_time(th, reps, || apps::stencil_rayon(&a0, &mut got, n, c));
                    same("stencil rayon", &got, &want);
                    line("stencil", "rayon", th, t, reps);
                    let (ctx, q) = context(th);
                    let (ab, nb) = (buf(&ctx, &q, &a0), buf(&ctx, &q, &vec![0.0f32; len]));
                    let range = NdRange::new([n[0] - 2, n[1] - 2]).local([32, 4]);
                    let args = || {
                        vec![
                            (&ab).into(),
                            (&nb).into(),
                            (n[0] as u32).into(),
                            (n[1] as u32).into(),
                            (n[2] as u32).into(),
                            c[0].into(),
                            c[1].into(),
                        ]
                    };
                    let t = time(reps, || {
                        ok(apps::launch(
                            &q,
                            &apps::stencil,
                            range.clone(),
                            args(),
                            false,
                        ))
                    });
                    close("stencil", &ok(apps::read(&q, &nb)), &want);
                    line("stencil", "numatask", th, t, reps);
                }
            }
            "pathfinder" => {
                // Rodinia's: 100,000 columns, 100 rows, pyramids of 20 rows.
                let (cols, rows, h) = if s { (3000, 30, 5) } else { (100_000, 100, 20) };
                let mut rng = Lcg(6);
                let wall: Vec<i32> = (0..cols * rows).map(|_| rng.below(10) as i32).collect();
                let mut want = Vec::new();
                let t = time(reps, || want = apps::pathfinder_serial(&wall, cols));
                line("pathfinder", "serial", 1, t, reps);
                for &th in &a.threads {
                    let mut got = Vec::new();
                    let t = rayon_time(th, reps, || got = apps::pathfinder_rayon(&wall, cols));
                    same("pathfinder rayon", &got, &want);
                    line("pathfinder", "rayon", th, t, reps);
                    let (ctx, q) = context(th);
                    let w = buf(&ctx, &q, &wall);
                    let (src, dst) = (
                        buf(&ctx, &q, &wall[..cols]),
                        buf(&ctx, &q, &vec![0i32; cols]),
                    );
                    let mut last = None;
                    let t = time(reps, || {
                        // Every run starts again from the first row.
                        ok(q.write(&src, 0, &wall[..cols]).map_err(|e| e.to_string()));
                        last = Some(ok(apps::pathfinder_launches(
                            &q, &w, &src, &dst, cols, rows, h, 256, false,
                        )));
                    });
                    let last = last.expect("ran");
                    same("pathfinder", &ok(apps::read(&q, last)), &want);
                    line("pathfinder", "numatask", th, t, reps);
                }
            }
            _ => unreachable!("checked by parse_args"),
        }
    }
}
