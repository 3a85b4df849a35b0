//! A bad `OMP_DATA_DISTRIBUTION` makes `omp_malloc` fail with an error that names the
//! variable, the value and the accepted values (never a silent fallback), while
//! `omp_malloc_specific`, which does not read it, still allocates. (Alone in its test binary:
//! it sets the process's environment.)

use numatask_alloc::{Distribution, omp_free, omp_malloc, omp_malloc_specific};

#[test]
fn omp_malloc_refuses_a_bad_variable_and_omp_malloc_specific_does_not_read_it() {
    // SAFETY: the only test of this binary, and no other thread runs.
    unsafe { std::env::set_var("OMP_DATA_DISTRIBUTION", "interleave") };
    let err = omp_malloc(4096).expect_err("a bad value");
    assert_eq!(
        err.to_string(),
        "OMP_DATA_DISTRIBUTION='interleave': expected standard, fine or coarse"
    );
    // The same error on every call.
    assert_eq!(
        omp_malloc(1).expect_err("again").to_string(),
        err.to_string()
    );
    let p = omp_malloc_specific(4096, Distribution::Standard).expect("the override allocates");
    // SAFETY: from omp_malloc_specific, freed once, not used after.
    unsafe { omp_free(p.as_ptr()) }.expect("freed");
}
