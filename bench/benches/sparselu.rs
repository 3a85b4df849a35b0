//! Dependent tasks: BOTS-style SparseLU (lu0, fwd, bdiv, bmod on `bs x bs` float blocks of an
//! `nb x nb` block matrix with the BOTS null-block pattern; one task per block operation,
//! `depend` on the blocks, fill-in blocks allocated by the creating task), in one run against
//! the same program in C with OpenMP `depend` clauses under libgomp and LLVM libomp
//! (`bench/c/sparselu_omp.c`, built by `scripts/bench-sparselu.sh`). Both drivers call the same
//! C kernels (`bench/c/sparselu_kernels.c`, compiled by `build.rs` with `-O3`) on the same
//! memory layout, one of two (below), so the runtime is the only difference; the checksums
//! must agree, and the run fails if they do not.
//!
//! ```text
//! scripts/bench-sparselu.sh --nb 120 --bs 25 --threads 1,2 --reps 3   # builds the C peers too
//! cargo bench -p numatask-bench --bench sparselu -- --nb 50 --bs 100 --threads 1,2 --reps 1 [--rounds 5] \
//!     [--omp "$PWD"/target/bench-c/sparselu_gomp ...] [--only numatask] [--scheduler ws,locality]
//! ```
//!
//! Rows (`--only WORD` keeps the rows whose name contains `WORD`, `--skip W1,W2` drops those
//! whose name contains one of them):
//!
//! - `serial`: the kernels in program order on one thread, no runtime (the work to share).
//! - `numatask`: the safe API: the matrix blocks live in one [`NumaVec`] arena
//!   (`OMP_DATA_DISTRIBUTION` places it), cut by [`Blocks`]; each task declares
//!   `.reads(..)`/`.updates(..)` on its blocks and gets them as slices. Slots start a cache
//!   line apart, and every page of the arena is written when the matrix is generated (outside
//!   the timing, as the C driver's heap is warm from its previous run). A fill-in block is the
//!   next free (zero) slot of the arena, claimed by the creating task.
//!   The C peers' rows `libgomp` and `libomp` run on the same layout (`SPARSELU_LAYOUT=arena`
//!   of the C driver: one aligned allocation, slots a cache line apart, every page written
//!   before the timing, a fill-in the next free zero slot).
//! - `numatask-raw`: the same program through the raw `depend` clauses
//!   ([`TaskBuilder::depend`](numatask::TaskBuilder::depend)).
//! - `numatask-malloc`: the raw program on BOTS' own layout, a `malloc` per block and fill-ins
//!   `calloc`ed by the creating task; its peers are the rows `libgomp-malloc` and
//!   `libomp-malloc` (`SPARSELU_LAYOUT=malloc`), which run when this row does.
//! - `numatask-empty`, `numatask-nodeps-empty`: the same task graph with empty kernels, with
//!   and without the `depend` accesses: wall time per task is the runtime's cost per task, and
//!   their difference the cost of dependence tracking (printed as `ns_per_task`).
//!
//! Rows of a scheduler other than work stealing are named `numatask[<policy>]`, and built with
//! `--features bench-mimalloc` (mimalloc as the global allocator) `numatask+mimalloc`. Timings
//! are the median of `--reps` runs after one warm-up run, like the C driver. With `--rounds R`
//! the rows take turns R times (C peers included) and a `sparselu rounds` line per row gives
//! the median, least and greatest of its R medians: on a shared machine, whose speed drifts
//! over seconds, that compares rows far better than one turn each.

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use numatask::alloc::{Distribution, NumaVec};
use numatask::sched::data::Blocks;
use numatask::sched::depend::{Access, AccessKind};
use numatask::sched::{Runtime, SchedulerKind, Scope};
use numatask_bench::ALLOCATOR;
use numatask_bench::args::{self, Parser, fail};
use numatask_bench::ffi::sparselu as kernels;
use numatask_bench::filter::Filter;
use numatask_bench::peer::{c_exponent, run_omp_peer};
use numatask_bench::runtime;

/// The block matrix: an arena of `nb * nb` block slots (only the used ones are ever touched)
/// and which slot holds block `(ii, jj)`.
struct Matrix {
    nb: usize,
    bs: usize,
    /// Floats from one slot to the next: `bs * bs` rounded up to a cache line, so that no two
    /// blocks share a line (tasks on different cores write neighbouring blocks).
    stride: usize,
    arena: NumaVec<f32>,
    slots: Vec<Option<usize>>,
    next_free: usize,
}

impl Matrix {
    /// The BOTS matrix: present blocks filled in row-major order, one seed sequence. Every
    /// page of the arena is written here, the fill-in slots' with zeros: the C driver's
    /// `calloc` of a fill-in block takes memory its heap already holds from the run before,
    /// while an untouched arena page would cost the task that first writes it a page fault.
    fn generate(nb: usize, bs: usize, place: Distribution) -> Matrix {
        let n = bs * bs;
        let stride = n.next_multiple_of(64 / size_of::<f32>());
        let mut m = Matrix {
            nb,
            bs,
            stride,
            arena: NumaVec::zeroed(nb * nb * stride, place).unwrap_or_else(|e| {
                fail(
                    "sparselu",
                    format_args!("matrix arena of {nb}x{nb} blocks of {bs}x{bs} floats: {e}"),
                )
            }),
            slots: vec![None; nb * nb],
            next_free: 0,
        };
        m.arena.fill(0.0);
        let mut seed = kernels::seed();
        for ii in 0..nb {
            for jj in 0..nb {
                if kernels::present(nb, ii, jj) {
                    let slot = m.claim();
                    m.slots[ii * nb + jj] = Some(slot);
                    kernels::fill(m.block_mut(slot), bs, &mut seed);
                }
            }
        }
        m
    }

    /// The `bs * bs` floats of slot `slot`.
    fn block_mut(&mut self, slot: usize) -> &mut [f32] {
        let start = slot * self.stride;
        &mut self.arena[start..start + self.bs * self.bs]
    }

    fn claim(&mut self) -> usize {
        self.next_free += 1;
        self.next_free - 1
    }

    /// BOTS' checksum, in matrix order, printed as C's `%.6e`.
    fn checksum(&self) -> String {
        let (n, stride) = (self.bs * self.bs, self.stride);
        checksum_of(
            self.slots
                .iter()
                .map(|slot| slot.map(|i| &self.arena[i * stride..i * stride + n])),
        )
    }
}

/// The matrix as the C driver holds it (`genmat` in `bench/c/sparselu_omp.c`): one `malloc`
/// per present block, in row-major order, and each fill-in block `calloc`ed by the creating
/// task just before the `bmod` that needs it. The `numatask-malloc` rows run on it, against
/// the C driver's `SPARSELU_LAYOUT=malloc` rows (`libgomp-malloc`, `libomp-malloc`): the
/// runtime is then the only difference.
struct CMatrix {
    nb: usize,
    bs: usize,
    /// Which slot of `blocks` holds block `(ii, jj)`.
    slots: Vec<Option<usize>>,
    next_free: usize,
    /// Block pointers by slot, from the C allocator (`std::alloc::System`).
    blocks: Vec<*mut f32>,
}

// SAFETY: a `CMatrix` owns its blocks alone (like a `Vec<Box<[f32]>>`); moving it to another
// thread moves that ownership.
unsafe impl Send for CMatrix {}

impl CMatrix {
    fn block_layout(bs: usize) -> Layout {
        Layout::array::<f32>(bs * bs).expect("block size")
    }

    /// A block from the C allocator: `malloc`, or `calloc` when `zeroed`.
    fn new_block(bs: usize, zeroed: bool) -> *mut f32 {
        let layout = CMatrix::block_layout(bs);
        // SAFETY: the layout has a non-zero size (bs >= 1).
        let p = unsafe {
            if zeroed {
                System.alloc_zeroed(layout)
            } else {
                System.alloc(layout)
            }
        };
        if p.is_null() {
            fail(
                "sparselu",
                format_args!("a block of {} bytes: out of memory", layout.size()),
            );
        }
        p.cast()
    }
}

impl Drop for CMatrix {
    fn drop(&mut self) {
        for &p in &self.blocks {
            // SAFETY: every pointer came from `new_block` with this layout, once.
            unsafe { System.dealloc(p.cast(), CMatrix::block_layout(self.bs)) };
        }
    }
}

/// What the timing loop needs of a matrix.
trait BenchMatrix {
    fn generate(nb: usize, bs: usize, place: Distribution) -> Self;
    fn checksum(&self) -> String;
}

impl BenchMatrix for Matrix {
    fn generate(nb: usize, bs: usize, place: Distribution) -> Self {
        Matrix::generate(nb, bs, place)
    }

    fn checksum(&self) -> String {
        Matrix::checksum(self)
    }
}

impl BenchMatrix for CMatrix {
    /// The C driver's matrix (`place` does not apply: the C allocator places it).
    fn generate(nb: usize, bs: usize, _: Distribution) -> Self {
        let mut m = CMatrix {
            nb,
            bs,
            slots: vec![None; nb * nb],
            next_free: 0,
            blocks: Vec::new(),
        };
        let mut seed = kernels::seed();
        for ii in 0..nb {
            for jj in 0..nb {
                if kernels::present(nb, ii, jj) {
                    let p = CMatrix::new_block(bs, false);
                    m.blocks.push(p);
                    m.slots[ii * nb + jj] = Some(m.next_free);
                    m.next_free += 1;
                    // SAFETY: a fresh block of bs * bs floats, ours alone.
                    let block = unsafe { std::slice::from_raw_parts_mut(p, bs * bs) };
                    kernels::fill(block, bs, &mut seed);
                }
            }
        }
        m
    }

    fn checksum(&self) -> String {
        let n = self.bs * self.bs;
        let blocks = self.slots.iter().map(|slot| {
            // SAFETY: a live block of n floats; no task runs any more.
            slot.map(|i| unsafe { std::slice::from_raw_parts(self.blocks[i], n) })
        });
        checksum_of(blocks)
    }
}

/// BOTS' checksum over the blocks in matrix order (`None`: absent), printed as C's `%.6e`.
fn checksum_of<'a>(blocks: impl Iterator<Item = Option<&'a [f32]>>) -> String {
    let mut sum = 0.0f64;
    for (i, block) in blocks.enumerate() {
        if let Some(block) = block {
            for (k, &x) in block.iter().enumerate() {
                sum += f64::from(x) * ((i + k) % 7 + 1) as f64;
            }
        }
    }
    c_exponent(sum)
}

/// What a task body does: the real kernel, or nothing (to measure the runtime alone).
#[derive(Clone, Copy, PartialEq)]
enum Work {
    Kernels,
    Empty,
}

/// The task graph in program order: calls `task(op, blocks)` for every block operation of an
/// `nb x nb` block matrix whose block `(ii, jj)` is in slot `slots[ii * nb + jj]`, claiming
/// fill-in blocks (`next_free`) as BOTS allocates them: in the creating task, before the bmod
/// that needs them. Returns the number of tasks.
fn for_each_task(
    nb: usize,
    slots: &mut [Option<usize>],
    next_free: &mut usize,
    mut task: impl FnMut(Op, [usize; 3]),
) -> u64 {
    let mut tasks = 0;
    for kk in 0..nb {
        let diag = slots[kk * nb + kk].expect("diagonal blocks are present");
        task(Op::Lu0, [diag, 0, 0]);
        tasks += 1;
        for jj in kk + 1..nb {
            if let Some(col) = slots[kk * nb + jj] {
                task(Op::Fwd, [diag, col, 0]);
                tasks += 1;
            }
        }
        for ii in kk + 1..nb {
            if let Some(row) = slots[ii * nb + kk] {
                task(Op::Bdiv, [diag, row, 0]);
                tasks += 1;
            }
        }
        for ii in kk + 1..nb {
            let Some(row) = slots[ii * nb + kk] else {
                continue;
            };
            for jj in kk + 1..nb {
                let Some(col) = slots[kk * nb + jj] else {
                    continue;
                };
                let inner = *slots[ii * nb + jj].get_or_insert_with(|| {
                    *next_free += 1;
                    *next_free - 1
                });
                task(Op::Bmod, [row, col, inner]);
                tasks += 1;
            }
        }
    }
    tasks
}

/// A block operation.
#[derive(Clone, Copy)]
enum Op {
    Lu0,
    Fwd,
    Bdiv,
    Bmod,
}

/// The kernels in program order on this thread.
fn sparselu_serial(m: &mut Matrix) -> u64 {
    let (bs, n, stride) = (m.bs, m.bs * m.bs, m.stride);
    let arena = &mut m.arena;
    for_each_task(m.nb, &mut m.slots, &mut m.next_free, |op, [a, b, c]| {
        let p = arena.as_mut_ptr();
        // SAFETY: the slots of one operation are distinct blocks inside the arena, and no
        // other reference into the arena is live meanwhile.
        let block = |i: usize| unsafe { std::slice::from_raw_parts_mut(p.add(i * stride), n) };
        match op {
            Op::Lu0 => kernels::lu0(block(a), bs),
            Op::Fwd => kernels::fwd(block(a), block(b), bs),
            Op::Bdiv => kernels::bdiv(block(a), block(b), bs),
            Op::Bmod => kernels::bmod(block(a), block(b), block(c), bs),
        }
    })
}

/// SparseLU with the safe API: the body of the OpenMP `single`.
fn sparselu_numatask<'scope>(s: &Scope<'scope>, m: &'scope mut Matrix, work: Work) -> u64 {
    let start = Instant::now();
    let (bs, n) = (m.bs, m.bs * m.bs);
    let blocks = Blocks::new(&mut m.arena, m.stride).expect("blocks");
    let real = work == Work::Kernels;
    let tasks = for_each_task(m.nb, &mut m.slots, &mut m.next_free, |op, [a, b, c]| {
        let spawned = match op {
            Op::Lu0 => s
                .task()
                .updates(&blocks[a])
                .label("lu0")
                .spawn(move |_, (d,)| {
                    if real {
                        kernels::lu0(&mut d[..n], bs)
                    }
                }),
            Op::Fwd => s
                .task()
                .reads(&blocks[a])
                .updates(&blocks[b])
                .intensive()
                .label("fwd")
                .spawn(move |_, (d, col)| {
                    if real {
                        kernels::fwd(&d[..n], &mut col[..n], bs)
                    }
                }),
            Op::Bdiv => s
                .task()
                .reads(&blocks[a])
                .updates(&blocks[b])
                .intensive()
                .label("bdiv")
                .spawn(move |_, (d, row)| {
                    if real {
                        kernels::bdiv(&d[..n], &mut row[..n], bs)
                    }
                }),
            Op::Bmod => s
                .task()
                .reads(&blocks[a])
                .reads(&blocks[b])
                .updates(&blocks[c])
                .intensive()
                .label("bmod")
                .spawn(move |_, (row, col, inner)| {
                    if real {
                        kernels::bmod(&row[..n], &col[..n], &mut inner[..n], bs)
                    }
                }),
        };
        spawned.expect("the blocks of one operation are distinct");
    });
    created(start);
    let wait = Instant::now();
    s.taskwait();
    WAIT_NS.store(wait.elapsed().as_nanos() as u64, Ordering::Relaxed);
    tasks
}

/// How long the last run's task-creating body took before its final `taskwait`, in ns (the
/// creation rate bounds the speed-up: one thread creates every task).
static CREATE_NS: AtomicU64 = AtomicU64::new(0);

/// How long the last run's final `taskwait` took, in ns: what remained to run once every task
/// was created. The rest of a run's time, after that, is the scope's end (freeing the
/// dependence tracker).
static WAIT_NS: AtomicU64 = AtomicU64::new(0);

fn created(start: Instant) {
    CREATE_NS.store(start.elapsed().as_nanos() as u64, Ordering::Relaxed);
}

/// An arena address sent into a task (the raw API's closures are C-like: they carry
/// addresses).
#[derive(Clone, Copy)]
struct Addr(usize);

/// SparseLU with the raw API (`depend` on byte ranges, raw pointers in the bodies), or, with
/// `depend` false, the same tasks spawned without dependences (only meaningful with empty
/// kernels: it measures the spawn alone).
fn sparselu_raw(s: &Scope<'_>, m: &mut Matrix, work: Work, depend: bool) -> u64 {
    let base = m.arena.as_mut_ptr() as usize;
    let stride_bytes = m.stride * size_of::<f32>();
    raw_tasks(
        s,
        (m.nb, m.bs),
        (&mut m.slots, &mut m.next_free),
        work,
        depend,
        |slot| Addr(base + slot * stride_bytes),
    )
}

/// The raw rows on the C driver's matrix layout (see [`CMatrix`]): a fill-in block is
/// `calloc`ed when the creating task first names its slot.
fn sparselu_raw_c(s: &Scope<'_>, m: &mut CMatrix, work: Work) -> u64 {
    let CMatrix {
        nb,
        bs,
        slots,
        next_free,
        blocks,
    } = m;
    raw_tasks(s, (*nb, *bs), (slots, next_free), work, true, |slot| {
        if slot == blocks.len() {
            blocks.push(CMatrix::new_block(*bs, true));
        }
        Addr(blocks[slot] as usize)
    })
}

/// The task graph through the raw API, with block `slot` at `addr(slot)` (called in program
/// order, so a fill-in block may be allocated there, by the creating task, as BOTS does).
fn raw_tasks(
    s: &Scope<'_>,
    (nb, bs): (usize, usize),
    (slots, next_free): (&mut [Option<usize>], &mut usize),
    work: Work,
    depend: bool,
    mut addr: impl FnMut(usize) -> Addr,
) -> u64 {
    let start = Instant::now();
    let n = bs * bs;
    let bytes = n * size_of::<f32>();
    let real = work == Work::Kernels;
    let tasks = for_each_task(nb, slots, next_free, |op, slots| {
        let (a, b, c) = match op {
            Op::Lu0 => (addr(slots[0]), Addr(0), Addr(0)),
            Op::Fwd | Op::Bdiv => (addr(slots[0]), addr(slots[1]), Addr(0)),
            Op::Bmod => (addr(slots[0]), addr(slots[1]), addr(slots[2])),
        };
        let acc = |x: Addr, kind| Access::new(x.0, bytes, kind);
        let body = move |_: &Scope<'_>| {
            if !real {
                return;
            }
            // SAFETY: the runtime ordered this task after every conflicting access of these
            // blocks (the depend list below), which are distinct blocks of the arena.
            unsafe {
                let s = |x: Addr| std::slice::from_raw_parts_mut(x.0 as *mut f32, n);
                match op {
                    Op::Lu0 => kernels::lu0(s(a), bs),
                    Op::Fwd => kernels::fwd(s(a), s(b), bs),
                    Op::Bdiv => kernels::bdiv(s(a), s(b), bs),
                    Op::Bmod => kernels::bmod(s(a), s(b), s(c), bs),
                }
            }
        };
        if !depend {
            s.spawn(body);
            return;
        }
        let deps: &[Access] = match op {
            Op::Lu0 => &[acc(a, AccessKind::InOut)],
            Op::Fwd | Op::Bdiv => &[
                acc(a, AccessKind::In),
                acc(b, AccessKind::InOut).intensive(),
            ],
            Op::Bmod => &[
                acc(a, AccessKind::In),
                acc(b, AccessKind::In),
                acc(c, AccessKind::InOut).intensive(),
            ],
        };
        // SAFETY: the body touches only the blocks it declares, which live in the arena until
        // the scope ends.
        unsafe { s.task().depend(deps).spawn(body) };
    });
    created(start);
    let wait = Instant::now();
    s.taskwait();
    WAIT_NS.store(wait.elapsed().as_nanos() as u64, Ordering::Relaxed);
    tasks
}

/// How a numatask row builds its task graph.
#[derive(Clone, Copy)]
enum Program {
    /// The safe API on the arena (`sparselu_numatask`).
    Safe,
    /// The raw API on the arena (`sparselu_raw`).
    Raw,
    /// The same tasks without `depend` accesses (empty kernels only).
    NoDeps,
    /// The raw API on the malloc layout (`sparselu_raw_c`).
    RawC,
}

/// numatask's rows, in the order they run: name, program, and whether the kernels run.
const ROWS: [(&str, Program, Work); 6] = [
    ("numatask", Program::Safe, Work::Kernels),
    ("numatask-raw", Program::Raw, Work::Kernels),
    ("numatask-malloc", Program::RawC, Work::Kernels),
    ("numatask-empty", Program::Safe, Work::Empty),
    ("numatask-raw-empty", Program::Raw, Work::Empty),
    ("numatask-nodeps-empty", Program::NoDeps, Work::Empty),
];

struct Args {
    nb: usize,
    bs: usize,
    threads: Vec<usize>,
    reps: usize,
    /// How many times every row runs its `reps`, the rows taking turns (see `main`).
    rounds: usize,
    omp: Vec<String>,
    only: Option<String>,
    skip: Vec<String>,
    schedulers: Vec<SchedulerKind>,
}

/// Every flag [`parse_args`] accepts (keep the two together).
const USAGE: &str = "\
usage: sparselu [--bench] [OPTIONS]
  --nb N            blocks per matrix side, 1 to 1000 (default 120; smoke run 12)
  --bs N            block side in floats, 1 to 1000 (default 25; smoke run 8)
  --threads N,M     worker counts to run, each from 1 to the runtime's limit
                    (default all cores; smoke run 1,2)
  --reps N          timed runs per row after a warm-up, 1 to 100 (default 3; smoke run 1)
  --rounds N        times the rows take turns, 1 to 100 (default 1)
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
        nb: if smoke { 12 } else { 120 },
        bs: if smoke { 8 } else { 25 },
        threads: if smoke { vec![1, 2] } else { Vec::new() },
        reps: if smoke { 1 } else { 3 },
        rounds: 1,
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
            "--nb" => args.nb = p.whole(1, 1000)?,
            "--bs" => args.bs = p.whole(1, 1000)?,
            "--reps" => args.reps = p.whole(1, 100)?,
            "--rounds" => args.rounds = p.whole(1, 100)?,
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

/// What `reps` timed runs measured (medians), and what the last one computed.
struct Timing {
    median: Duration,
    /// Time spent creating tasks (numatask rows only; zero for the serial run).
    create: Duration,
    /// Time of the final taskwait (numatask rows only).
    wait: Duration,
    tasks: u64,
    checksum: String,
}

/// Runs `run` on a fresh matrix `reps + 1` times (the first is a warm-up).
fn time_reps<M: BenchMatrix>(
    args: &Args,
    place: Distribution,
    mut run: impl FnMut(&mut M) -> u64,
) -> Timing {
    let mut times = Vec::with_capacity(args.reps);
    let mut creates = Vec::with_capacity(args.reps);
    let mut waits = Vec::with_capacity(args.reps);
    let (mut tasks, mut checksum) = (0, String::new());
    for rep in 0..=args.reps {
        let mut m = M::generate(args.nb, args.bs, place);
        CREATE_NS.store(0, Ordering::Relaxed);
        WAIT_NS.store(0, Ordering::Relaxed);
        let t = Instant::now();
        tasks = run(&mut m);
        let d = t.elapsed();
        if rep > 0 {
            times.push(d);
            creates.push(Duration::from_nanos(CREATE_NS.load(Ordering::Relaxed)));
            waits.push(Duration::from_nanos(WAIT_NS.load(Ordering::Relaxed)));
        }
        checksum = m.checksum();
    }
    times.sort();
    creates.sort();
    waits.sort();
    Timing {
        median: times[times.len() / 2],
        create: creates[creates.len() / 2],
        wait: waits[waits.len() / 2],
        tasks,
        checksum,
    }
}

fn report(name: &str, threads: usize, args: &Args, t: &Timing) {
    let create = if t.create.is_zero() {
        String::new()
    } else {
        format!(
            " create_s={:.6} wait_s={:.6}",
            t.create.as_secs_f64(),
            t.wait.as_secs_f64()
        )
    };
    println!(
        "sparselu runtime={name} threads={threads} nb={} bs={} tasks={} median_s={:.6} checksum={}{create}",
        args.nb,
        args.bs,
        t.tasks,
        t.median.as_secs_f64(),
        t.checksum,
    );
}

/// For the empty-kernel rows: cost per task, and creation cost per task.
fn report_overhead(name: &str, threads: usize, args: &Args, t: &Timing) {
    let per_task = |d: Duration| d.as_secs_f64() * 1e9 / t.tasks as f64;
    println!(
        "sparselu runtime={name} threads={threads} nb={} bs={} tasks={} median_s={:.6} ns_per_task={:.1} create_ns_per_task={:.1}",
        args.nb,
        args.bs,
        t.tasks,
        t.median.as_secs_f64(),
        per_task(t.median),
        per_task(t.create),
    );
}

fn main() {
    let args = parse_args().unwrap_or_else(|e| fail("sparselu", e));
    let place = Distribution::from_env().unwrap_or_else(|e| fail("sparselu", e));
    // The topology the arena is placed on: a bad NUMATASK_TOPOLOGY ends the bench here.
    numatask::alloc::Topology::current().unwrap_or_else(|e| fail("sparselu", e));
    let filter = Filter::new(args.only.as_deref(), &args.skip);
    let wants = |name: &str| filter.wants(name);
    // The serial run gives the checksum every other row must reproduce; timed only when its
    // row is wanted.
    let expect = if wants("serial") {
        let serial = time_reps::<Matrix>(&args, place, sparselu_serial);
        report("serial", 1, &args, &serial);
        serial.checksum
    } else {
        let mut m = Matrix::generate(args.nb, args.bs, place);
        sparselu_serial(&mut m);
        m.checksum()
    };
    let expect = &expect;
    let check = |name: &str, threads: usize, got: &str| {
        assert_eq!(
            got, expect,
            "{name} with {threads} threads: checksum differs from the serial run"
        );
    };
    let several_runtimes = args.threads.len() * args.schedulers.len() > 1;
    for &threads in &args.threads {
        let runtimes: Vec<(SchedulerKind, Runtime)> = args
            .schedulers
            .iter()
            .map(|&kind| {
                // The environment's other settings apply (OMP_PROC_BIND, NUMATASK_TRACE, ...),
                // one trace file per runtime when there are several.
                let builder = runtime::runtime_builder("sparselu", threads, kind, several_runtimes);
                let rt = runtime::build("sparselu", builder);
                (kind, rt)
            })
            .collect();
        // Every row of this thread count: numatask's (per runtime) and the C peers'.
        let mut entries: Vec<Entry<'_>> = Vec::new();
        for (kind, rt) in &runtimes {
            for (base, program, work) in ROWS {
                let name = match kind {
                    SchedulerKind::WorkStealing => format!("{base}{ALLOCATOR}"),
                    other => format!("{base}[{other}]{ALLOCATOR}"),
                };
                if wants(&name) {
                    entries.push(Entry::Numatask {
                        name,
                        rt,
                        program,
                        work,
                    });
                }
            }
        }
        // The C peers run on the layouts of the numatask rows that run (the arena when only
        // peers do), so that each row has peers on its own layout.
        let malloc_rows = entries.iter().any(|e| {
            matches!(
                e,
                Entry::Numatask {
                    program: Program::RawC,
                    ..
                }
            )
        });
        let arena_rows = entries.iter().any(
            |e| matches!(e, Entry::Numatask { program, .. } if !matches!(program, Program::RawC)),
        );
        for layout in [MatrixLayout::Arena, MatrixLayout::Malloc] {
            let runs = match layout {
                MatrixLayout::Arena => arena_rows || !malloc_rows,
                MatrixLayout::Malloc => malloc_rows,
            };
            if runs {
                entries.extend(args.omp.iter().map(|bin| Entry::Peer(bin, layout)));
            }
        }
        // Each row's median of every round (`None`: a peer's line without a time).
        let mut cells: Vec<(String, Vec<Option<f64>>)> = Vec::new();
        // With `--rounds R`, every row runs its repetitions R times, one turn per round, so that
        // drifts of a shared machine's speed (other tenants, clocks) hit all rows alike; round
        // r starts at row r - 1 of the list, so that no row always runs first or after the
        // same row.
        for round in 0..args.rounds {
            if args.rounds > 1 {
                println!("# round {} of {}", round + 1, args.rounds);
            }
            for i in 0..entries.len() {
                let (name, seconds) = match &entries[(round + i) % entries.len()] {
                    Entry::Numatask {
                        name,
                        rt,
                        program,
                        work,
                    } => {
                        let work = *work;
                        let r = match program {
                            Program::Safe => time_reps(&args, place, |m| {
                                rt.scope(|s| sparselu_numatask(s, m, work))
                            }),
                            Program::Raw => time_reps(&args, place, |m| {
                                rt.scope(|s| sparselu_raw(s, m, work, true))
                            }),
                            Program::NoDeps => time_reps(&args, place, |m| {
                                rt.scope(|s| sparselu_raw(s, m, work, false))
                            }),
                            Program::RawC => time_reps(&args, place, |m: &mut CMatrix| {
                                rt.scope(|s| sparselu_raw_c(s, m, work))
                            }),
                        };
                        match work {
                            Work::Kernels => {
                                check(name, threads, &r.checksum);
                                report(name, threads, &args, &r);
                            }
                            Work::Empty => report_overhead(name, threads, &args, &r),
                        }
                        (name.clone(), Some(r.median.as_secs_f64()))
                    }
                    Entry::Peer(bin, layout) => {
                        let peer_args = [args.nb, args.bs, args.reps].map(|v| v.to_string());
                        let env = [("SPARSELU_LAYOUT", layout.name())];
                        let line = run_omp_peer(bin, &peer_args, threads, Some(expect), &env);
                        let field = |key: &str| {
                            line.split_whitespace()
                                .find_map(|w| w.strip_prefix(key))
                                .map(str::to_owned)
                        };
                        let name = field("runtime=").unwrap_or_else(|| (*bin).clone());
                        (name, field("median_s=").and_then(|v| v.parse().ok()))
                    }
                };
                match cells.iter_mut().find(|c| c.0 == name) {
                    Some(row) => row.1.push(seconds),
                    None => cells.push((name, vec![seconds])),
                }
            }
        }
        if args.rounds > 1 {
            report_rounds(&args, threads, &cells);
        }
    }
    if !args.omp.is_empty() {
        filter.ran_peer();
    }
    filter.finish("sparselu");
}

/// A row of the bench: one of numatask's on one runtime, or a C/OpenMP peer's binary.
enum Entry<'a> {
    Numatask {
        name: String,
        rt: &'a Runtime,
        program: Program,
        work: Work,
    },
    Peer(&'a String, MatrixLayout),
}

/// The memory layout of a C peer's matrix (`SPARSELU_LAYOUT` of `bench/c/sparselu_omp.c`).
#[derive(Clone, Copy, PartialEq, Eq)]
enum MatrixLayout {
    /// numatask's arena: the peers of the `numatask` and `numatask-raw` rows.
    Arena,
    /// A `malloc` per block: the peers (named `<runtime>-malloc`) of `numatask-malloc`.
    Malloc,
}

impl MatrixLayout {
    fn name(self) -> &'static str {
        match self {
            MatrixLayout::Arena => "arena",
            MatrixLayout::Malloc => "malloc",
        }
    }

    /// The layout of the row named `name`, ours or a peer's.
    fn of_row(name: &str) -> MatrixLayout {
        if name.contains("-malloc") {
            MatrixLayout::Malloc
        } else {
            MatrixLayout::Arena
        }
    }
}

/// After several rounds: each row's median, min and max over its rounds, and for each
/// numatask row with kernels against each peer the median of the per-round ratios (row's
/// time over the peer's in the same round: the machine's drift between rounds cancels); with
/// several peers also against `best-peer`, each round's fastest peer. The least of two noisy
/// times is lower on average than either peer's own time, so the peers are paired with
/// `best-peer` too: a peer's own ratio there is that bias, the yardstick for ours.
fn report_rounds(args: &Args, threads: usize, cells: &[(String, Vec<Option<f64>>)]) {
    let sorted = |v: &[Option<f64>]| {
        let mut v: Vec<f64> = v.iter().flatten().copied().collect();
        v.sort_by(f64::total_cmp);
        v
    };
    for (name, row) in cells {
        let v = sorted(row);
        if v.is_empty() {
            continue;
        }
        println!(
            "sparselu rounds runtime={name} threads={threads} nb={} bs={} rounds={} median_s={:.6} min_s={:.6} max_s={:.6}",
            args.nb,
            args.bs,
            v.len(),
            v[v.len() / 2],
            v[0],
            v[v.len() - 1],
        );
    }
    // Each layout's rows against the peers on the same layout.
    for layout in [MatrixLayout::Arena, MatrixLayout::Malloc] {
        let same = |c: &&(String, Vec<Option<f64>>)| MatrixLayout::of_row(&c.0) == layout;
        let ours = cells
            .iter()
            .filter(|c| c.0.starts_with("numatask") && !c.0.contains("empty"))
            .filter(same);
        let peers: Vec<&(String, Vec<Option<f64>>)> = cells
            .iter()
            .filter(|c| !c.0.starts_with("numatask") && c.0 != "serial")
            .filter(same)
            .collect();
        // Each round's best peer: the least time of the peers that reported one.
        let best: Vec<Option<f64>> = (0..args.rounds)
            .map(|r| {
                peers
                    .iter()
                    .filter_map(|p| p.1.get(r).copied().flatten())
                    .min_by(f64::total_cmp)
            })
            .collect();
        let best_name = match layout {
            MatrixLayout::Arena => "best-peer",
            MatrixLayout::Malloc => "best-peer-malloc",
        };
        let best_row = (best_name.to_owned(), best);
        let against = peers
            .iter()
            .copied()
            .chain((peers.len() > 1).then_some(&best_row));
        let against: Vec<&(String, Vec<Option<f64>>)> = against.collect();
        let rows = ours.map(|c| (c, &against[..])).chain(
            peers
                .iter()
                .filter(|_| peers.len() > 1)
                .map(|c| (*c, std::slice::from_ref(&against[against.len() - 1]))),
        );
        for ((name, row), against) in rows {
            for (peer, peer_row) in against {
                let ratios: Vec<Option<f64>> = row
                    .iter()
                    .zip(peer_row)
                    .map(|(a, b)| Some((*a)? / (*b)?))
                    .collect();
                let v = sorted(&ratios);
                if v.is_empty() {
                    continue;
                }
                println!(
                    "sparselu paired runtime={name} peer={peer} threads={threads} rounds={} median_ratio={:.3} min_ratio={:.3} max_ratio={:.3}",
                    v.len(),
                    v[v.len() / 2],
                    v[0],
                    v[v.len() - 1],
                );
            }
        }
    }
}
