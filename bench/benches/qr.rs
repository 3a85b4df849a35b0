//! Dependent tasks: tiled QR factorization of an `nt x nt` tile matrix of `bs x bs` doubles
//! with PLASMA's four kernels (geqrt of a diagonal tile, ormqr across its row, tsqrt down its
//! column, tsmqr on the tiles they update; one task per tile operation, `depend` on the
//! tiles), in one run against the same program in C with OpenMP `depend` clauses under libgomp
//! and LLVM libomp (`bench/c/qr_omp.c`, built by `scripts/bench-qr.sh`). Both drivers call the
//! same C kernels (`bench/c/qr_kernels.c`, compiled by `build.rs` with `-O3`); the checksums
//! (of R) must agree. For matrices of at most 512 x 512 the serial run is also checked against
//! the definition: `R^T R = A^T A` (Q is orthogonal) to a relative 1e-10.
//!
//! ```text
//! scripts/bench-qr.sh --nt 16 --bs 128 --threads 1,2 --reps 3   # builds the C peers too
//! cargo bench -p numatask-bench --bench qr -- --nt 16 --bs 128 --threads 1,2 [--omp "$PWD"/target/bench-c/qr_gomp ...]
//! ```
//!
//! Rows: `serial` (the kernels in program order, no runtime), `numatask` (the safe API: the
//! tiles of A and of T in two [`NumaVec`] arenas cut by [`Blocks`], `.reads(..)`/`.updates(..)`
//! per task; the C peers hold their tiles the same way), and `numatask[<policy>]` for
//! `--scheduler` policies other than work stealing. Timings are the median of `--reps` runs
//! after one warm-up run, like the C driver.

use std::time::{Duration, Instant};

use numatask::alloc::{Distribution, NumaVec};
use numatask::sched::data::Blocks;
use numatask::sched::{SchedulerKind, Scope};
use numatask_bench::ALLOCATOR;
use numatask_bench::args::{self, Parser, fail};
use numatask_bench::ffi::qr as kernels;
use numatask_bench::filter::Filter;
use numatask_bench::peer::{c_exponent, run_omp_peer};
use numatask_bench::runtime;

/// The tiles of A (row of tiles after row of tiles) and of T, each in one arena.
struct Matrix {
    nt: usize,
    bs: usize,
    a: NumaVec<f64>,
    t: NumaVec<f64>,
}

impl Matrix {
    fn generate(nt: usize, bs: usize, place: Distribution) -> Matrix {
        let n = bs * bs;
        let arena = || {
            NumaVec::zeroed(nt * nt * n, place).unwrap_or_else(|e| {
                fail(
                    "qr",
                    format_args!("tile arena of {nt}x{nt} tiles of {bs}x{bs} doubles: {e}"),
                )
            })
        };
        let (mut a, t) = (arena(), arena());
        for i in 0..nt {
            for j in 0..nt {
                let k = i * nt + j;
                kernels::fill(&mut a[k * n..(k + 1) * n], nt, bs, i, j);
            }
        }
        Matrix { nt, bs, a, t }
    }

    /// Element `(r, c)` of the whole matrix A (as the tiles hold it now).
    fn at(&self, r: usize, c: usize) -> f64 {
        let (bs, nt) = (self.bs, self.nt);
        let tile = (r / bs) * nt + c / bs;
        self.a[tile * bs * bs + (r % bs) * bs + c % bs]
    }

    /// The C driver's checksum (R, the upper triangle, weighted by position), as `%.6e`.
    fn checksum(&self) -> String {
        let (nt, bs) = (self.nt, self.bs);
        let mut s = 0.0f64;
        for i in 0..nt {
            for j in i..nt {
                let t = &self.a[(i * nt + j) * bs * bs..];
                for r in 0..bs {
                    for c in 0..bs {
                        if i != j || c >= r {
                            s += t[r * bs + c] * ((i + j + r + c) % 7 + 1) as f64;
                        }
                    }
                }
            }
        }
        c_exponent(s)
    }
}

/// Checks a factored matrix against its input: `R^T R = A^T A` to a relative `1e-10` of the
/// largest element of `A^T A`.
fn check_factorization(input: &Matrix, factored: &Matrix) {
    let size = input.nt * input.bs;
    let r = |i: usize, j: usize| if j >= i { factored.at(i, j) } else { 0.0 };
    let (mut worst, mut scale) = (0.0f64, 0.0f64);
    for i in 0..size {
        for j in 0..size {
            let ata: f64 = (0..size).map(|k| input.at(k, i) * input.at(k, j)).sum();
            let rtr: f64 = (0..=i.min(j)).map(|k| r(k, i) * r(k, j)).sum();
            worst = worst.max((ata - rtr).abs());
            scale = scale.max(ata.abs());
        }
    }
    assert!(
        worst <= 1e-10 * scale,
        "R^T R differs from A^T A by {worst:e} (largest element {scale:e})"
    );
}

/// A tile operation and its tiles (indices of A's tiles, then T's).
#[derive(Clone, Copy)]
enum Op {
    /// Factor A[k][k], writing T[k][k].
    Geqrt { akk: usize, tkk: usize },
    /// Apply it to A[k][j].
    Ormqr { akk: usize, tkk: usize, akj: usize },
    /// Factor A[k][k]'s R on top of A[i][k], writing T[i][k].
    Tsqrt { akk: usize, aik: usize, tik: usize },
    /// Apply it to A[k][j] and A[i][j].
    Tsmqr {
        akj: usize,
        aij: usize,
        aik: usize,
        tik: usize,
    },
}

/// The task graph in program order (the C driver's loop nest). Returns the number of tasks.
fn for_each_task(nt: usize, mut task: impl FnMut(Op)) -> u64 {
    let tile = |i: usize, j: usize| i * nt + j;
    let mut tasks = 0;
    for k in 0..nt {
        let (akk, tkk) = (tile(k, k), tile(k, k));
        task(Op::Geqrt { akk, tkk });
        tasks += 1;
        for j in k + 1..nt {
            task(Op::Ormqr {
                akk,
                tkk,
                akj: tile(k, j),
            });
            tasks += 1;
        }
        for i in k + 1..nt {
            let (aik, tik) = (tile(i, k), tile(i, k));
            task(Op::Tsqrt { akk, aik, tik });
            tasks += 1;
            for j in k + 1..nt {
                task(Op::Tsmqr {
                    akj: tile(k, j),
                    aij: tile(i, j),
                    aik,
                    tik,
                });
                tasks += 1;
            }
        }
    }
    tasks
}

fn qr_serial(m: &mut Matrix) -> u64 {
    let (bs, n) = (m.bs, m.bs * m.bs);
    let (pa, pt) = (m.a.as_mut_ptr(), m.t.as_mut_ptr());
    for_each_task(m.nt, |op| {
        // SAFETY: the tiles of one operation are distinct tiles inside the arenas, and no other
        // reference into the arenas is live meanwhile.
        let a = |i: usize| unsafe { std::slice::from_raw_parts_mut(pa.add(i * n), n) };
        // SAFETY: as above, for the T arena.
        let t = |i: usize| unsafe { std::slice::from_raw_parts_mut(pt.add(i * n), n) };
        match op {
            Op::Geqrt { akk, tkk } => kernels::geqrt(a(akk), t(tkk), bs),
            Op::Ormqr { akk, tkk, akj } => kernels::ormqr(a(akk), t(tkk), a(akj), bs),
            Op::Tsqrt { akk, aik, tik } => kernels::tsqrt(a(akk), a(aik), t(tik), bs),
            Op::Tsmqr { akj, aij, aik, tik } => kernels::tsmqr(a(akj), a(aij), a(aik), t(tik), bs),
        }
    })
}

/// Tiled QR with the safe API: the body of the OpenMP `single`.
fn qr_numatask<'scope>(s: &Scope<'scope>, m: &'scope mut Matrix) -> u64 {
    let bs = m.bs;
    let a = Blocks::new(&mut m.a, bs * bs).expect("tiles of A");
    let t = Blocks::new(&mut m.t, bs * bs).expect("tiles of T");
    let tasks = for_each_task(m.nt, |op| {
        let spawned = match op {
            Op::Geqrt { akk, tkk } => s
                .task()
                .updates(&a[akk])
                .updates(&t[tkk])
                .intensive()
                .label("geqrt")
                .spawn(move |_, (a, t)| kernels::geqrt(a, t, bs)),
            Op::Ormqr { akk, tkk, akj } => s
                .task()
                .reads(&a[akk])
                .reads(&t[tkk])
                .updates(&a[akj])
                .intensive()
                .label("ormqr")
                .spawn(move |_, (v, t, c)| kernels::ormqr(v, t, c, bs)),
            Op::Tsqrt { akk, aik, tik } => s
                .task()
                .updates(&a[akk])
                .updates(&a[aik])
                .updates(&t[tik])
                .intensive()
                .label("tsqrt")
                .spawn(move |_, (r, a, t)| kernels::tsqrt(r, a, t, bs)),
            Op::Tsmqr { akj, aij, aik, tik } => s
                .task()
                .updates(&a[akj])
                .updates(&a[aij])
                .reads(&a[aik])
                .reads(&t[tik])
                .intensive()
                .label("tsmqr")
                .spawn(move |_, (c1, c2, v, t)| kernels::tsmqr(c1, c2, v, t, bs)),
        };
        spawned.expect("the tiles of one operation are distinct");
    });
    s.taskwait();
    tasks
}

struct Args {
    nt: usize,
    bs: usize,
    threads: Vec<usize>,
    reps: usize,
    omp: Vec<String>,
    only: Option<String>,
    skip: Vec<String>,
    schedulers: Vec<SchedulerKind>,
}

/// Every flag [`parse_args`] accepts (keep the two together).
const USAGE: &str = "\
usage: qr [--bench] [OPTIONS]
  --nt N            tiles per matrix side, 1 to 1000 (default 16; smoke run 4)
  --bs N            tile side in doubles, 1 to 1000 (default 128; smoke run 8)
  --threads N,M     worker counts to run, each from 1 to the runtime's limit
                    (default all cores; smoke run 1,2)
  --reps N          timed runs per row after a warm-up, 1 to 100 (default 3; smoke run 1)
  --omp BIN         also run this C/OpenMP peer program (repeatable; default none)
  --only WORD       only the rows whose name contains WORD (default all)
  --skip W1,W2      drop the rows whose name contains one of them (default none)
  --scheduler S,T   numatask's policies, NUMATASK_SCHEDULER names
                    (default ws; smoke run all)
  --bench           measure (cargo bench passes it); without it, a quick smoke run
  -h, --help        print this text
";

fn parse_args() -> Result<Args, String> {
    // Under `cargo test --bench NAME` (CI) a quick smoke run checks that every variant computes
    // the serial checksum.
    let smoke = args::smoke();
    let mut args = Args {
        nt: if smoke { 4 } else { 16 },
        bs: if smoke { 8 } else { 128 },
        threads: if smoke { vec![1, 2] } else { Vec::new() },
        reps: if smoke { 1 } else { 3 },
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
            "--nt" => args.nt = p.whole(1, 1000)?,
            "--bs" => args.bs = p.whole(1, 1000)?,
            "--reps" => args.reps = p.whole(1, 100)?,
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

/// Runs `run` on a fresh matrix `reps + 1` times (the first is a warm-up): the median time,
/// the task count and the last checksum. `check`: the first run is also checked against its
/// input.
fn time_reps(
    args: &Args,
    place: Distribution,
    check: bool,
    mut run: impl FnMut(&mut Matrix) -> u64,
) -> (Duration, u64, String) {
    let mut times = Vec::with_capacity(args.reps);
    let (mut tasks, mut checksum) = (0, String::new());
    for rep in 0..=args.reps {
        let mut m = Matrix::generate(args.nt, args.bs, place);
        let t = Instant::now();
        tasks = run(&mut m);
        if rep > 0 {
            times.push(t.elapsed());
        } else if check {
            check_factorization(&Matrix::generate(args.nt, args.bs, place), &m);
        }
        checksum = m.checksum();
    }
    times.sort();
    (times[times.len() / 2], tasks, checksum)
}

fn report(name: &str, threads: usize, args: &Args, (d, tasks, checksum): &(Duration, u64, String)) {
    println!(
        "qr runtime={name} threads={threads} nt={} bs={} tasks={tasks} median_s={:.6} checksum={checksum}",
        args.nt,
        args.bs,
        d.as_secs_f64()
    );
}

fn main() {
    let args = parse_args().unwrap_or_else(|e| fail("qr", e));
    let place = Distribution::from_env().unwrap_or_else(|e| fail("qr", e));
    // The topology the arenas are placed on: a bad NUMATASK_TOPOLOGY ends the bench here.
    numatask::alloc::Topology::current().unwrap_or_else(|e| fail("qr", e));
    let filter = Filter::new(args.only.as_deref(), &args.skip);
    let wants = |name: &str| filter.wants(name);
    // The serial run gives the checksum every other row must reproduce (and, on small
    // matrices, is checked against its input); timed only when its row is wanted.
    let check = args.nt * args.bs <= 512;
    let expect = if wants("serial") {
        let serial = time_reps(&args, place, check, qr_serial);
        report("serial", 1, &args, &serial);
        serial.2
    } else {
        let mut m = Matrix::generate(args.nt, args.bs, place);
        qr_serial(&mut m);
        if check {
            check_factorization(&Matrix::generate(args.nt, args.bs, place), &m);
        }
        m.checksum()
    };
    let expect = &expect;
    let several_runtimes = args.threads.len() * args.schedulers.len() > 1;
    for &threads in &args.threads {
        for &kind in &args.schedulers {
            let name = match kind {
                SchedulerKind::WorkStealing => format!("numatask{ALLOCATOR}"),
                other => format!("numatask[{other}]{ALLOCATOR}"),
            };
            if !wants(&name) {
                continue;
            }
            let rt = runtime::build(
                "qr",
                runtime::runtime_builder("qr", threads, kind, several_runtimes),
            );
            let r = time_reps(&args, place, false, |m| rt.scope(|s| qr_numatask(s, m)));
            assert_eq!(
                &r.2, expect,
                "{name} with {threads} threads: checksum differs from the serial run"
            );
            report(&name, threads, &args, &r);
        }
        for bin in &args.omp {
            let peer_args = [args.nt, args.bs, args.reps].map(|v| v.to_string());
            run_omp_peer(bin, &peer_args, threads, Some(expect), &[]);
            filter.ran_peer();
        }
    }
    filter.finish("qr");
}
