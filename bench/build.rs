//! Compiles the C kernels of the dependent-task benchmarks (`c/sparselu_kernels.c`,
//! `c/cholesky_kernels.c`, `c/qr_kernels.c`) into a static library linked into this crate, so
//! that numatask's drivers (`benches/sparselu.rs`, `benches/cholesky.rs`, `benches/qr.rs`, the
//! paper suite's SparseLU) and the C/OpenMP drivers run the same machine code and differ only
//! by runtime. `-O3` and no
//! `-march=native`: bench binaries are carried to other machines. `-falign-functions=64`, as
//! `scripts/device-bundle.sh` builds the C peers' copy (`KERNEL_CFLAGS` of
//! `scripts/lib/bench-depend.sh`): the same bytes then lie at the same offsets within 64-byte
//! lines in every binary. Without it the vectorized `sparselu_bmod` started 32 bytes into a line
//! in the Rust bench and on a line in the C peers, and ran 1.5 - 2x slower in the Rust bench on
//! the same data in the same order (BENCHMARKS.md, "SparseLU with kernels that vectorize").
//!
//! With the `c-api` feature it also compiles `tests/c/alloc_api.c` of the workspace, a C program
//! against `alloc/include/numatask_alloc.h`, for `tests/c_api.rs`.

fn main() {
    for file in [
        "c/sparselu_kernels.c",
        "c/sparselu.h",
        "c/cholesky_kernels.c",
        "c/cholesky.h",
        "c/qr_kernels.c",
        "c/qr.h",
    ] {
        println!("cargo:rerun-if-changed={file}");
    }
    cc::Build::new()
        .file("c/sparselu_kernels.c")
        .file("c/cholesky_kernels.c")
        .file("c/qr_kernels.c")
        .include("c")
        .opt_level(3)
        // Every kernel at the start of a 64-byte line (see the module docs).
        .flag("-falign-functions=64")
        .compile("numatask_bench_kernels");
    println!("cargo:rustc-link-lib=m");
    println!("cargo:rerun-if-changed=../tests/c/alloc_api.c");
    println!("cargo:rerun-if-changed=../alloc/include/numatask_alloc.h");
    if std::env::var_os("CARGO_FEATURE_C_API").is_some() {
        cc::Build::new()
            .file("../tests/c/alloc_api.c")
            .include("../alloc/include")
            .warnings_into_errors(true)
            .compile("numatask_c_api_test");
    }
}
