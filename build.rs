//! Compiles the C kernels of the dependent-task benchmarks (`bench/c/sparselu_kernels.c`,
//! `bench/c/cholesky_kernels.c`) into a static library linked into `benches/sparselu.rs` and
//! `benches/cholesky.rs`, so that numatask's drivers and the C/OpenMP drivers run the same
//! machine code and differ only by runtime. `-O3` and no `-march=native`: bench binaries are
//! carried to other machines.

fn main() {
    println!("cargo:rerun-if-changed=bench/c/sparselu_kernels.c");
    println!("cargo:rerun-if-changed=bench/c/sparselu.h");
    println!("cargo:rerun-if-changed=bench/c/cholesky_kernels.c");
    println!("cargo:rerun-if-changed=bench/c/cholesky.h");
    cc::Build::new()
        .file("bench/c/sparselu_kernels.c")
        .file("bench/c/cholesky_kernels.c")
        .include("bench/c")
        .opt_level(3)
        .compile("numatask_bench_kernels");
    println!("cargo:rustc-link-lib=m");
}
