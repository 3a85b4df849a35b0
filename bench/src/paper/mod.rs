//! The six benchmarks of the core paper's Table 4 (Muddukrishna, Jonsson and Brorsson 2015), shared
//! by the `paper` program (`src/bin/paper.rs`: one benchmark, one configuration) and the `paper`
//! bench (`benches/paper.rs`: the whole matrix of benchmarks x schedulers x distributions,
//! Figure 7).
//!
//! | benchmark | Table 4 behaviour | heuristic | allocations | tasks and their depend lists |
//! |---|---|---|---|---|
//! | [`map`] | 1D vector scaling | coarse | one per vector | one per vector: `inout` the vector |
//! | [`reduction`] | iterative merge phase of BOTS Sort | fine | one (data and scratch) | per level, merges of equal output size: `in` both input pieces, `out` the output piece |
//! | [`vecmul`] | vector cross product | coarse | one per vector | one per vector triple: `in` a and b, `out` c |
//! | [`matmul`] | blocked matrix multiplication | coarse | one per block | one per C block: `in` a row of A and a column of B, `inout` the C block |
//! | [`jacobi`] | blocked 2D heat equation | fine | one per grid | one per block and sweep: `in` the block and its neighbours' halos, `out` the new block |
//! | [`sparselu`] | BOTS SparseLU | coarse | one per block | one per block operation (lu0, fwd, bdiv, bmod) on its blocks |
//!
//! Every benchmark allocates through numatask's allocator ([`NumaVec`], i.e. `omp_malloc_specific`
//! with the distribution the caller chose), writes its initial values sequentially from the
//! calling thread (as the paper's programs do in `main`, so first touch puts standard memory on
//! that thread's node), runs its parallel section in one runtime, and verifies the result
//! against a sequential computation ([`Instance::verify`]). The task bodies call
//! [`cost_model::timed`], which does nothing unless a [`cost_model::Probe`] is given.

pub mod cost_model;
pub mod jacobi;
pub mod map;
pub mod matmul;
pub mod reduction;
pub mod sparselu;
pub mod vecmul;
pub mod verdict;

use std::fmt;
use std::str::FromStr;
use std::time::{Duration, Instant};

use numatask::alloc::{AllocError, Distribution, NumaVec, Place, Topology, Zeroable};
use numatask::sched::data::Blocks;
use numatask::sched::{DependError, Runtime};

use cost_model::Probe;

/// Any failure of a benchmark run.
pub type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// Input sizes. `Large` is the paper's Figure 7 input where the paper gives one (see each
/// benchmark's `Params`); `Small` finishes the whole matrix in seconds on two cores; `Tiny` is
/// for smoke runs of unoptimized builds.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Size {
    /// Smoke runs (CI, debug builds).
    Tiny,
    /// Seconds for the whole matrix on a 2-core machine.
    Small,
    /// In between.
    Medium,
    /// The paper's inputs (Figure 7) where it gives them.
    Large,
}

impl Size {
    /// Every size.
    pub const ALL: [Size; 4] = [Size::Tiny, Size::Small, Size::Medium, Size::Large];

    /// The name `--size` takes.
    pub fn name(self) -> &'static str {
        match self {
            Size::Tiny => "tiny",
            Size::Small => "small",
            Size::Medium => "medium",
            Size::Large => "large",
        }
    }
}

impl fmt::Display for Size {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Size {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        Size::ALL
            .into_iter()
            .find(|size| size.name().eq_ignore_ascii_case(s.trim()))
            .ok_or_else(|| format!("unknown size '{s}': expected tiny, small, medium or large"))
    }
}

/// The benchmarks of Table 4.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Benchmark {
    /// Vector scaling, one task per vector.
    Map,
    /// The iterative merge phase of BOTS Sort.
    Reduction,
    /// Cross products of vectors of 3D points.
    Vecmul,
    /// Blocked matrix multiplication.
    Matmul,
    /// Blocked Jacobi sweeps of the 2D heat equation.
    Jacobi,
    /// BOTS SparseLU.
    SparseLu,
}

impl Benchmark {
    /// Table 4's order.
    pub const ALL: [Benchmark; 6] = [
        Benchmark::Map,
        Benchmark::Reduction,
        Benchmark::Vecmul,
        Benchmark::Matmul,
        Benchmark::Jacobi,
        Benchmark::SparseLu,
    ];

    /// The name on the command line.
    pub fn name(self) -> &'static str {
        match self {
            Benchmark::Map => "map",
            Benchmark::Reduction => "reduction",
            Benchmark::Vecmul => "vecmul",
            Benchmark::Matmul => "matmul",
            Benchmark::Jacobi => "jacobi",
            Benchmark::SparseLu => "sparselu",
        }
    }

    /// Table 4's "data distribution heuristic guidance".
    pub fn heuristic(self) -> Distribution {
        match self {
            Benchmark::Reduction | Benchmark::Jacobi => Distribution::Fine,
            _ => Distribution::Coarse,
        }
    }

    /// Allocates the benchmark's data with `distribution` (the coarse round-robin rewound to
    /// node 0 first, so that every configuration places its data alike).
    pub fn prepare(
        self,
        size: Size,
        distribution: Distribution,
    ) -> Result<Box<dyn Instance>, BoxError> {
        numatask::alloc::reset_coarse_counter();
        Ok(match self {
            Benchmark::Map => Box::new(map::Map::new(map::Params::of(size), distribution)?),
            Benchmark::Reduction => Box::new(reduction::Reduction::new(
                reduction::Params::of(size),
                distribution,
            )?),
            Benchmark::Vecmul => {
                Box::new(vecmul::Vecmul::new(vecmul::Params::of(size), distribution)?)
            }
            Benchmark::Matmul => {
                Box::new(matmul::Matmul::new(matmul::Params::of(size), distribution)?)
            }
            Benchmark::Jacobi => {
                Box::new(jacobi::Jacobi::new(jacobi::Params::of(size), distribution)?)
            }
            Benchmark::SparseLu => Box::new(sparselu::SparseLu::new(
                sparselu::Params::of(size),
                distribution,
            )?),
        })
    }
}

impl fmt::Display for Benchmark {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Benchmark {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        Benchmark::ALL
            .into_iter()
            .find(|b| b.name().eq_ignore_ascii_case(s.trim()))
            .ok_or_else(|| {
                format!(
                    "unknown benchmark '{s}': expected one of {}",
                    Benchmark::ALL.map(Benchmark::name).join(", ")
                )
            })
    }
}

/// A benchmark with its data allocated.
pub trait Instance {
    /// What runs, in one line (sizes, tasks, bytes).
    fn describe(&self) -> String;

    /// Writes the initial values, sequentially on the calling thread (not timed): all of them
    /// the first time, afterwards those the last `compute` changed.
    fn init(&mut self);

    /// The parallel section (timed): every task in `rt`, each declaring its footprint, and
    /// timed by `probe` when one is given.
    fn compute(&mut self, rt: &Runtime, probe: Option<&Probe>) -> Result<(), DependError>;

    /// Checks the result of the last `compute` against a sequential computation; `Ok` holds
    /// the checksum, `Err` says what differs.
    fn verify(&self) -> Result<String, String>;
}

/// Where a benchmark's allocation with `distribution` goes.
///
/// Standard memory goes where it is first touched. On a real machine the kernel decides; on a
/// synthetic topology (the paper's 8-node preset) no kernel places anything, so standard memory
/// would have no known node and the scheduler would see no footprint. Every benchmark here
/// initializes its data from the main thread before the parallel section, exactly like the
/// paper's programs, so first touch would put it all on the main thread's node: on a synthetic
/// multi-node topology a standard allocation is placed on node 0 to say so.
pub fn place(distribution: Distribution) -> Result<Place, AllocError> {
    let topology = Topology::current()?;
    Ok(
        if distribution == Distribution::Standard
            && topology.is_synthetic()
            && topology.num_nodes() > 1
        {
            Place::OnNode(0)
        } else {
            Place::Distributed(distribution)
        },
    )
}

/// `len` zeroed elements placed by [`place`]`(distribution)`.
pub fn alloc<T: Zeroable>(len: usize, distribution: Distribution) -> Result<NumaVec<T>, BoxError> {
    Ok(NumaVec::zeroed(len, place(distribution)?)?)
}

/// Depend handles for allocations used whole: one [`Blocks`] of one block per allocation.
pub fn whole<T>(allocations: &mut [NumaVec<T>]) -> Result<Vec<Blocks<'_, T>>, DependError> {
    allocations
        .iter_mut()
        .map(|v| {
            let len = v.len();
            Blocks::new(v, len)
        })
        .collect()
}

/// Timings of one configuration.
#[derive(Clone, Debug)]
pub struct Timings {
    /// Wall time of each timed repetition.
    pub reps: Vec<Duration>,
    /// The checksum of the last repetition (verified).
    pub checksum: String,
}

impl Timings {
    /// The median repetition.
    pub fn median(&self) -> Duration {
        let mut sorted = self.reps.clone();
        sorted.sort();
        sorted.get(sorted.len() / 2).copied().unwrap_or_default()
    }
}

/// Runs `instance` `warmup` times, then at least `reps` times and until the timed runs add up
/// to `min_time` (at most 30 runs), with fresh initial values each time; times the parallel
/// sections after the warm-up and verifies the last one. A wrong result is an `Err`.
pub fn measure(
    instance: &mut dyn Instance,
    rt: &Runtime,
    warmup: usize,
    reps: usize,
    min_time: Duration,
    probe: Option<&Probe>,
) -> Result<Timings, BoxError> {
    const MAX_REPS: usize = 30;
    let mut times = Vec::with_capacity(reps);
    let mut rep = 0;
    while times.len() < reps.max(1)
        || (times.iter().sum::<Duration>() < min_time && times.len() < MAX_REPS)
    {
        instance.init();
        let start = Instant::now();
        instance.compute(rt, probe)?;
        let elapsed = start.elapsed();
        if rep >= warmup {
            times.push(elapsed);
        }
        rep += 1;
    }
    let checksum = instance
        .verify()
        .map_err(|e| format!("result differs from the sequential computation: {e}"))?;
    Ok(Timings {
        reps: times,
        checksum,
    })
}

/// SplitMix64: a small deterministic generator for initial values (the same stream on every
/// run, so every configuration computes on the same data).
#[derive(Clone, Debug)]
pub struct SplitMix64(u64);

impl SplitMix64 {
    /// A generator from `seed`.
    pub fn new(seed: u64) -> Self {
        SplitMix64(seed)
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        mix64(self.0)
    }

    /// A number in `0..bound` (`bound > 0`; the slight modulo bias does not matter here).
    pub fn below(&mut self, bound: u64) -> u64 {
        self.next_u64() % bound
    }

    /// A small integer in `-k..=k`, as f32 (exact).
    pub fn small_int(&mut self, k: u32) -> f32 {
        (self.below(u64::from(2 * k + 1)) as i64 - i64::from(k)) as f32
    }
}

/// SplitMix64's finalizer: a bijective mix of 64 bits.
pub fn mix64(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// Compares two float slices bit for bit; the first difference, if any.
pub fn first_difference(what: &str, got: &[f32], want: &[f32]) -> Result<(), String> {
    if got.len() != want.len() {
        return Err(format!(
            "{what}: {} values, expected {}",
            got.len(),
            want.len()
        ));
    }
    match got
        .iter()
        .zip(want)
        .position(|(a, b)| a.to_bits() != b.to_bits())
    {
        None => Ok(()),
        Some(i) => Err(format!(
            "{what}[{i}] = {}, the sequential computation gives {}",
            got[i], want[i]
        )),
    }
}

/// A checksum of float values for printing: their sum in f64.
pub fn sum_checksum<'a>(values: impl IntoIterator<Item = &'a f32>) -> String {
    let sum: f64 = values.into_iter().map(|&x| f64::from(x)).sum();
    format!("{sum:.6e}")
}

/// Bytes in KiB or MiB.
pub fn size_text(bytes: usize) -> String {
    if bytes < 1 << 20 {
        format!("{:.1} KiB", bytes as f64 / 1024.0)
    } else {
        format!("{:.2} MiB", bytes as f64 / f64::from(1u32 << 20))
    }
}
