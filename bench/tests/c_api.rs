//! The allocator's C API as C code sees it: the workspace's `tests/c/alloc_api.c`, compiled
//! against `alloc/include/numatask_alloc.h` by this crate's `build.rs` (the published crates
//! build no C) and linked into this test, calls every entry point, good and bad input alike.
//! Only with the `c-api` feature, which exports the C names:
//! `cargo test -p numatask-bench --features c-api --test c_api`.
#![cfg(feature = "c-api")]

// The C program is a native library of this crate (build.rs): linking the crate links it, and
// the allocator that defines the C symbols after it.
use numatask_bench as _;

unsafe extern "C" {
    /// 0, or the line of `alloc_api.c` whose check failed.
    fn numatask_c_api_selftest() -> std::ffi::c_int;
}

#[test]
fn a_c_program_allocates_frees_and_reads_errors_through_the_header() {
    // SAFETY: the C function takes no arguments and touches only memory it allocates.
    let failed_line = unsafe { numatask_c_api_selftest() };
    assert_eq!(
        failed_line, 0,
        "tests/c/alloc_api.c: the check at this line failed"
    );
}
