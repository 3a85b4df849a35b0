//! `omp_malloc` follows `OMP_DATA_DISTRIBUTION` on the paper's 8-node machine (the synthetic
//! preset, where placement is recorded per node): with `coarse`, allocations rotate over the
//! nodes; the variable is read once, at the first use, as `Distribution::from_env` says.
//! (Alone in its test binary: it sets the process's environment.)

use numatask_alloc::{
    Distribution, node_bytes, omp_free, omp_malloc, omp_malloc_specific, reset_coarse_counter,
};

#[test]
fn omp_malloc_places_by_the_variable_read_at_first_use() {
    // SAFETY (every set_var here): the only test of this binary, and no other thread runs.
    unsafe { std::env::set_var("NUMATASK_TOPOLOGY", "preset:opteron6172") };
    unsafe { std::env::set_var("OMP_DATA_DISTRIBUTION", " Coarse ") };
    let size = 4 * 4096;
    reset_coarse_counter();
    for node in 0..3 {
        let p = omp_malloc(size).expect("coarse");
        let bytes = node_bytes(p.as_ptr(), size);
        assert_eq!(bytes.on(node), size as u64, "allocation {node}: {bytes:?}");
        // SAFETY: from omp_malloc, freed once, not used after.
        unsafe { omp_free(p.as_ptr()) }.expect("freed");
    }
    assert_eq!(Distribution::from_env(), Ok(Distribution::Coarse));

    // Changed later, the variable no longer counts: the next coarse node, 3.
    unsafe { std::env::set_var("OMP_DATA_DISTRIBUTION", "fine") };
    let p = omp_malloc(size).expect("coarse");
    assert_eq!(node_bytes(p.as_ptr(), size).on(3), size as u64);
    // SAFETY: as above.
    unsafe { omp_free(p.as_ptr()) }.expect("freed");

    // `omp_malloc_specific` overrides it for one allocation: fine spreads over every node.
    let p = omp_malloc_specific(16 * 4096, Distribution::Fine).expect("fine");
    let bytes = node_bytes(p.as_ptr(), 16 * 4096);
    for node in 0..8 {
        assert_eq!(bytes.on(node), 2 * 4096, "node {node}: {bytes:?}");
    }
    // SAFETY: as above.
    unsafe { omp_free(p.as_ptr()) }.expect("freed");
}
