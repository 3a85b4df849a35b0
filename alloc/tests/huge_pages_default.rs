//! Huge pages by default: with `NUMATASK_HUGE_PAGES` unset, a machine of one node backs every
//! mapping of at least 2 MiB with huge pages whatever its policy (every page lies on that node
//! anyway), and a machine of several nodes none. (Alone in its test binary: it depends on the
//! process-wide switch never having been set.)

use numatask_alloc::{
    Distribution, HUGE_PAGE, Topology, huge_pages, omp_free, omp_malloc_specific,
};

#[test]
fn one_node_uses_huge_pages_for_large_mappings_unless_told_otherwise() {
    if std::env::var_os("NUMATASK_HUGE_PAGES").is_some() {
        // The default is what this test is about; a set variable decides instead.
        return;
    }
    assert!(!huge_pages().unwrap(), "not turned on");
    let one_node = Topology::current().unwrap().num_nodes() == 1;
    for d in Distribution::ALL {
        let large = omp_malloc_specific(3 << 20, d).unwrap();
        let small = omp_malloc_specific(1 << 20, d).unwrap();
        if one_node {
            assert_eq!(
                large.as_ptr() as usize % HUGE_PAGE,
                0,
                "{d:?}: 2 MiB aligned"
            );
        }
        for p in [large, small] {
            // SAFETY: allocated above, no reference remains.
            unsafe { omp_free(p.as_ptr()) }.unwrap();
        }
    }
}
