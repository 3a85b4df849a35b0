//! numatask's benchmarks, kept out of the published crates because they build C: the
//! harness-less bench programs of `benches/` (fib, sparselu, cholesky, paper, wakeup, taskloop),
//! the core paper's six benchmarks ([`paper`]) and the `paper` program that runs one of them,
//! the Rust peers of the kernel executor's benchmarks ([`kernels_peers`]), and what they
//! share. `c/` holds the C/OpenMP peers the benches run against, the C kernels that numatask's
//! drivers and the peers both call ([`ffi`], compiled by `build.rs`), and the OpenCL peers of
//! the kernel executor (`ocl_bench.c`, built by `scripts/bench-kernels.sh`).
//!
//! ```text
//! cargo bench -p numatask-bench --bench fib -- --n 27 --threads 1,2
//! cargo run -p numatask-bench --release --bin paper -- map --scheduler locality
//! cargo test -p numatask-bench --bench '*'       # every bench once, a quick smoke run
//! ```
//!
//! cargo runs a bench in this crate's directory, `bench/`: relative paths given to a bench
//! (`--omp`, `NUMATASK_TRACE`) are taken from there; `scripts/bench-*.sh` pass absolute ones.
//!
//! With the `bench-mimalloc` feature every bench program allocates with mimalloc instead of
//! the system's (glibc) malloc; rows then carry [`ALLOCATOR`] in their names.

pub mod apps;
pub mod args;
pub mod ffi;
pub mod filter;
pub mod kernels_peers;
pub mod paper;
pub mod peer;
pub mod runtime;

/// With `--features bench-mimalloc`: every allocation of a bench process (task frames that miss
/// the frame caches, dependence-tracker nodes, the benchmarks' own blocks) goes to mimalloc
/// instead of glibc's malloc, whose arena lock serializes the frees of blocks allocated by the
/// task-creating thread: the runtime's cost told from the allocator's.
#[cfg(feature = "bench-mimalloc")]
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// How rows name the global allocator: `+mimalloc` with the `bench-mimalloc` feature, else
/// nothing.
pub const ALLOCATOR: &str = if cfg!(feature = "bench-mimalloc") {
    "+mimalloc"
} else {
    ""
};
