//! Dependent tasks: blocked (tiled) Cholesky factorization of an `nt x nt` tile matrix of
//! `bs x bs` doubles, lower triangle (potrf, trsm, syrk, gemm; one task per tile operation,
//! `depend` on the tiles), in one run against the same program in C with OpenMP `depend`
//! clauses under libgomp and LLVM libomp (`bench/c/cholesky_omp.c`, built by
//! `scripts/bench-cholesky.sh`). Both drivers call the same C kernels
//! (`bench/c/cholesky_kernels.c`, compiled by `build.rs` with `-O3`); the checksums must agree.
//!
//! ```text
//! scripts/bench-cholesky.sh --nt 40 --bs 64 --threads 1,2 --reps 3   # builds the C peers too
//! cargo bench -p numatask-bench --bench cholesky -- --nt 40 --bs 64 --threads 1,2 [--omp "$PWD"/target/bench-c/cholesky_gomp ...]
//! ```
//!
//! Rows: `serial` (the kernels in program order, no runtime), `numatask` (the safe API: the
//! tiles in one [`NumaVec`] arena cut by [`Blocks`], `.reads(..)`/`.updates(..)` per task; the
//! C peers hold their tiles the same way, in one page-aligned allocation in the same order,
//! unless `CHOLESKY_LAYOUT=malloc` makes them `malloc` each tile, rows `<runtime>-malloc`), and
//! `numatask[<policy>]` for `--scheduler` policies other than work stealing. Timings are the
//! median of `--reps` runs after one warm-up run, like the C driver.

use std::time::{Duration, Instant};

use numatask::alloc::{Distribution, NumaVec};
use numatask::sched::data::Blocks;
use numatask::sched::{SchedulerKind, Scope};
use numatask_bench::ALLOCATOR;
use numatask_bench::args::{self, Parser, fail};
use numatask_bench::ffi::cholesky as kernels;
use numatask_bench::filter::Filter;
use numatask_bench::peer::{c_exponent, run_omp_peer};
use numatask_bench::runtime;

/// Index of tile `(i, j)`, `i >= j`, in the packed lower triangle.
fn tile(i: usize, j: usize) -> usize {
    i * (i + 1) / 2 + j
}

/// The lower triangle's tiles in one arena.
struct Matrix {
    nt: usize,
    bs: usize,
    tiles: NumaVec<f64>,
}

impl Matrix {
    fn generate(nt: usize, bs: usize, place: Distribution) -> Matrix {
        let n = bs * bs;
        let mut tiles = NumaVec::zeroed(nt * (nt + 1) / 2 * n, place).unwrap_or_else(|e| {
            fail(
                "cholesky",
                format_args!("tile arena of {nt}x{nt} tiles of {bs}x{bs} doubles: {e}"),
            )
        });
        for i in 0..nt {
            for j in 0..=i {
                let t = tile(i, j);
                kernels::fill(&mut tiles[t * n..(t + 1) * n], nt, bs, i, j);
            }
        }
        Matrix { nt, bs, tiles }
    }

    /// The C driver's checksum (the lower triangle of L, weighted by position), as `%.6e`.
    fn checksum(&self) -> String {
        let (nt, bs) = (self.nt, self.bs);
        let mut s = 0.0f64;
        for i in 0..nt {
            for j in 0..=i {
                let t = &self.tiles[tile(i, j) * bs * bs..];
                for r in 0..bs {
                    for c in 0..bs {
                        if i != j || c <= r {
                            s += t[r * bs + c] * ((i + j + r + c) % 7 + 1) as f64;
                        }
                    }
                }
            }
        }
        c_exponent(s)
    }
}

/// A tile operation and its tiles.
#[derive(Clone, Copy)]
enum Op {
    Potrf(usize),
    Trsm(usize, usize),
    Syrk(usize, usize),
    Gemm(usize, usize, usize),
}

/// The task graph in program order (the C driver's loop nest). Returns the number of tasks.
fn for_each_task(nt: usize, mut task: impl FnMut(Op)) -> u64 {
    let mut tasks = 0;
    for k in 0..nt {
        task(Op::Potrf(tile(k, k)));
        tasks += 1;
        for i in k + 1..nt {
            task(Op::Trsm(tile(k, k), tile(i, k)));
            tasks += 1;
        }
        for i in k + 1..nt {
            task(Op::Syrk(tile(i, k), tile(i, i)));
            tasks += 1;
            for j in k + 1..i {
                task(Op::Gemm(tile(i, k), tile(j, k), tile(i, j)));
                tasks += 1;
            }
        }
    }
    tasks
}

fn cholesky_serial(m: &mut Matrix) -> u64 {
    let (bs, n) = (m.bs, m.bs * m.bs);
    let p = m.tiles.as_mut_ptr();
    for_each_task(m.nt, |op| {
        // SAFETY: the tiles of one operation are distinct tiles inside the arena, and no other
        // reference into the arena is live meanwhile.
        let t = |i: usize| unsafe { std::slice::from_raw_parts_mut(p.add(i * n), n) };
        match op {
            Op::Potrf(d) => kernels::potrf(t(d), bs),
            Op::Trsm(l, b) => kernels::trsm(t(l), t(b), bs),
            Op::Syrk(a, c) => kernels::syrk(t(a), t(c), bs),
            Op::Gemm(a, b, c) => kernels::gemm(t(a), t(b), t(c), bs),
        }
    })
}

/// The priorities of `--priority` (as the C peer's `PRIO 1`): the panel's factorization
/// first, then its solves, then the diagonal updates, then the rest.
const PRIORITIES: [u32; 4] = [3, 2, 1, 0];

/// The priorities of `--fifo`: every task 1, so that all go through the runtime's pool-wide
/// list of tasks with a priority, oldest first (the order of libgomp's team queue).
const FIFO: [u32; 4] = [1; 4];

/// Cholesky with the safe API: the body of the OpenMP `single`, each kind of task with its
/// priority of `prio` (potrf, trsm, syrk, gemm).
fn cholesky_numatask<'scope>(s: &Scope<'scope>, m: &'scope mut Matrix, prio: [u32; 4]) -> u64 {
    let bs = m.bs;
    let [p_potrf, p_trsm, p_syrk, p_gemm] = prio;
    let tiles = Blocks::new(&mut m.tiles, bs * bs).expect("tiles");
    let tasks = for_each_task(m.nt, |op| {
        let spawned = match op {
            Op::Potrf(d) => s
                .task()
                .updates(&tiles[d])
                .priority(p_potrf)
                .label("potrf")
                .spawn(move |_, (d,)| kernels::potrf(d, bs)),
            Op::Trsm(l, b) => s
                .task()
                .reads(&tiles[l])
                .updates(&tiles[b])
                .intensive()
                .priority(p_trsm)
                .label("trsm")
                .spawn(move |_, (l, b)| kernels::trsm(l, b, bs)),
            Op::Syrk(a, c) => s
                .task()
                .reads(&tiles[a])
                .updates(&tiles[c])
                .intensive()
                .priority(p_syrk)
                .label("syrk")
                .spawn(move |_, (a, c)| kernels::syrk(a, c, bs)),
            Op::Gemm(a, b, c) => s
                .task()
                .reads(&tiles[a])
                .reads(&tiles[b])
                .updates(&tiles[c])
                .intensive()
                .priority(p_gemm)
                .label("gemm")
                .spawn(move |_, (a, b, c)| kernels::gemm(a, b, c, bs)),
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
    priority: bool,
    fifo: bool,
    no_serial: bool,
}

/// Every flag [`parse_args`] accepts (keep the two together).
const USAGE: &str = "\
usage: cholesky [--bench] [OPTIONS]
  --nt N            tiles per matrix side, 1 to 1000 (default 40; smoke run 8)
  --bs N            tile side in doubles, 1 to 1000 (default 64; smoke run 8)
  --threads N,M     worker counts to run, each from 1 to the runtime's limit
                    (default all cores; smoke run 1,2)
  --reps N          timed runs per row after a warm-up, 1 to 100 (default 3; smoke run 1)
  --omp BIN         also run this C/OpenMP peer program (repeatable; default none)
  --only WORD       only the rows whose name contains WORD (default all)
  --skip W1,W2      drop the rows whose name contains one of them (default none)
  --scheduler S,T   numatask's policies, NUMATASK_SCHEDULER names
                    (default ws; smoke run all)
  --priority        give the tasks priorities (potrf 3, trsm 2, syrk 1, gemm 0) on every
                    side, and set OMP_MAX_TASK_PRIORITY=3 unless it is set (default off;
                    smoke run on)
  --fifo            numatask's tasks all with priority 1, run oldest first from the pool-wide
                    list (the order of libgomp's team queue; the row numatask-fifo); sets
                    OMP_MAX_TASK_PRIORITY as --priority does (default off)
  --no-serial       no serial run: each row's checksum is checked against the first row's
                    (for large matrices; default off)
  --bench           measure (cargo bench passes it); without it, a quick smoke run
  -h, --help        print this text
";

fn parse_args() -> Result<Args, String> {
    // Under `cargo test --bench NAME` (CI) a quick smoke run checks that every variant computes
    // the serial checksum.
    let smoke = args::smoke();
    let mut args = Args {
        nt: if smoke { 8 } else { 40 },
        bs: if smoke { 8 } else { 64 },
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
        priority: smoke,
        fifo: false,
        no_serial: false,
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
            "--priority" => args.priority = true,
            "--fifo" => args.fifo = true,
            "--no-serial" => args.no_serial = true,
            _ => p.other()?,
        }
    }
    if args.threads.is_empty() {
        args.threads = args::all_cores();
    }
    Ok(args)
}

/// Runs `run` on a fresh matrix `reps + 1` times (the first is a warm-up): the median time,
/// the task count and the last checksum.
fn time_reps(
    args: &Args,
    place: Distribution,
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
        }
        checksum = m.checksum();
    }
    times.sort();
    (times[times.len() / 2], tasks, checksum)
}

fn report(name: &str, threads: usize, args: &Args, (d, tasks, checksum): &(Duration, u64, String)) {
    println!(
        "cholesky runtime={name} threads={threads} nt={} bs={} tasks={tasks} median_s={:.6} checksum={checksum}",
        args.nt,
        args.bs,
        d.as_secs_f64()
    );
}

fn main() {
    let args = parse_args().unwrap_or_else(|e| fail("cholesky", e));
    if (args.priority || args.fifo) && std::env::var_os("OMP_MAX_TASK_PRIORITY").is_none() {
        // SAFETY: no other thread runs yet (no runtime is built before this).
        unsafe { std::env::set_var("OMP_MAX_TASK_PRIORITY", "3") };
    }
    let place = Distribution::from_env().unwrap_or_else(|e| fail("cholesky", e));
    // The topology the arena is placed on: a bad NUMATASK_TOPOLOGY ends the bench here.
    numatask::alloc::Topology::current().unwrap_or_else(|e| fail("cholesky", e));
    let filter = Filter::new(args.only.as_deref(), &args.skip);
    let wants = |name: &str| filter.wants(name);
    // The serial run gives the checksum every other row must reproduce; timed only when its
    // row is wanted. With --no-serial, the first row's checksum instead.
    let mut expect = if wants("serial") {
        let serial = time_reps(&args, place, cholesky_serial);
        report("serial", 1, &args, &serial);
        Some(serial.2)
    } else if args.no_serial {
        None
    } else {
        let mut m = Matrix::generate(args.nt, args.bs, place);
        cholesky_serial(&mut m);
        Some(m.checksum())
    };
    let against = if args.no_serial {
        "the first row"
    } else {
        "the serial run"
    };
    let several_runtimes = args.threads.len() * args.schedulers.len() > 1;
    for &threads in &args.threads {
        for &kind in &args.schedulers {
            let fifo = if args.fifo { "-fifo" } else { "" };
            let name = match kind {
                SchedulerKind::WorkStealing => format!("numatask{fifo}{ALLOCATOR}"),
                other => format!("numatask[{other}]{fifo}{ALLOCATOR}"),
            };
            let prio = match (args.fifo, args.priority) {
                (true, _) => FIFO,
                (false, true) => PRIORITIES,
                (false, false) => [0; 4],
            };
            if !wants(&name) {
                continue;
            }
            let rt = runtime::build(
                "cholesky",
                runtime::runtime_builder("cholesky", threads, kind, several_runtimes),
            );
            let r = time_reps(&args, place, |m| {
                rt.scope(|s| cholesky_numatask(s, m, prio))
            });
            let expect = expect.get_or_insert_with(|| r.2.clone());
            assert_eq!(
                &r.2, expect,
                "{name} with {threads} threads: checksum differs from {against}"
            );
            report(&name, threads, &args, &r);
        }
        for bin in &args.omp {
            let peer_args =
                [args.nt, args.bs, args.reps, usize::from(args.priority)].map(|v| v.to_string());
            let line = run_omp_peer(bin, &peer_args, threads, expect.as_deref(), &[]);
            if expect.is_none() {
                expect = line
                    .split_whitespace()
                    .find_map(|w| w.strip_prefix("checksum="))
                    .map(str::to_owned);
            }
            filter.ran_peer();
        }
    }
    filter.finish("cholesky");
}
