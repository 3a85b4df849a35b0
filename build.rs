//! Compiles the C kernels of the dependent-task benchmarks (`bench/c/sparselu_kernels.c`,
//! `bench/c/cholesky_kernels.c`) into a static library linked into `benches/sparselu.rs` and
//! `benches/cholesky.rs`, so that numatask's drivers and the C/OpenMP drivers run the same
//! machine code and differ only by runtime. `-O3` and no `-march=native`: bench binaries are
//! carried to other machines. With the `c-api` feature it also compiles `tests/c/alloc_api.c`,
//! a C program against `alloc/include/numatask_alloc.h`, for `tests/c_api.rs`.

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
    // With the `c-api` feature: a C program against the allocator's header, for tests/c_api.rs.
    println!("cargo:rerun-if-changed=tests/c/alloc_api.c");
    println!("cargo:rerun-if-changed=alloc/include/numatask_alloc.h");
    if std::env::var_os("CARGO_FEATURE_C_API").is_some() {
        cc::Build::new()
            .file("tests/c/alloc_api.c")
            .include("alloc/include")
            .warnings_into_errors(true)
            .compile("numatask_c_api_test");
    }
}
