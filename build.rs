//! Compiles the C kernels of the SparseLU benchmark (`bench/c/sparselu_kernels.c`) into a static
//! library linked into `benches/sparselu.rs`, so that numatask's driver and the C/OpenMP
//! driver run the same machine code and differ only by runtime. `-O3` and no `-march=native`:
//! bench binaries are carried to other machines.

fn main() {
    println!("cargo:rerun-if-changed=bench/c/sparselu_kernels.c");
    println!("cargo:rerun-if-changed=bench/c/sparselu.h");
    cc::Build::new()
        .file("bench/c/sparselu_kernels.c")
        .include("bench/c")
        .opt_level(3)
        .compile("numatask_sparselu_kernels");
}
