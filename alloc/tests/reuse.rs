//! Reuse of placed memory, on the core paper's 8-node machine (the synthetic `Opteron6172`
//! preset, where placement is recorded without the kernel): a freed mapping is handed out
//! again for its placement and size class, zeroed, still registered where its policy put
//! it; double frees are refused; the cache is bounded. (Alone in its test binary: it sets the
//! process's topology variable and reads the process-wide cache.)

use numatask_alloc::{
    AllocError, Distribution, allocation_size, cached, node_bytes, omp_free, omp_malloc_on_node,
    omp_malloc_specific, release_cache, reset_coarse_counter, set_cache_limit,
};

#[test]
fn freed_memory_is_reused_by_placement_and_size_zeroed_and_bounded() {
    // SAFETY: the only test of this binary, and nothing has read the environment yet.
    unsafe { std::env::set_var("NUMATASK_TOPOLOGY", "preset:opteron6172") };
    let size = 48 << 10;

    // A mapping on node 5, written and freed, comes back for the next allocation on node 5
    // of a size of its class: zeroed, the size asked recorded, still on node 5.
    let a = omp_malloc_on_node(size, 5).unwrap();
    // SAFETY: `size` bytes allocated above.
    unsafe { std::ptr::write_bytes(a.as_ptr(), 0xAB, size) };
    // SAFETY: allocated above, no reference remains.
    unsafe { omp_free(a.as_ptr()) }.unwrap();
    assert_eq!(allocation_size(a.as_ptr()), None, "freed");
    assert_eq!(
        cached(),
        (1, 64 << 10),
        "one mapping of the 64 KiB class is kept"
    );
    // Another node's allocation does not take it.
    let other = omp_malloc_on_node(size, 2).unwrap();
    assert_ne!(other, a);
    let b = omp_malloc_on_node(40 << 10, 5).unwrap();
    assert_eq!(b, a, "the cached mapping is reused");
    assert_eq!(allocation_size(b.as_ptr()), Some(40 << 10));
    assert_eq!(cached(), (0, 0));
    // SAFETY: 40 KiB handed out; every byte of it must read zero again.
    let bytes = unsafe { std::slice::from_raw_parts(b.as_ptr(), 40 << 10) };
    assert!(bytes.iter().all(|&x| x == 0), "a reused mapping is zeroed");
    assert_eq!(
        node_bytes(b.as_ptr(), 40 << 10).on(5),
        40 << 10,
        "still on node 5"
    );

    // A double free is refused, also while the mapping is cached, and leaves the cache as it
    // was: the next two allocations get different memory.
    // SAFETY: allocated above, no reference remains.
    unsafe { omp_free(b.as_ptr()) }.unwrap();
    // SAFETY: a double free, which the allocator refuses.
    let again = unsafe { omp_free(b.as_ptr()) };
    assert!(
        matches!(again, Err(AllocError::UnknownPointer(_))),
        "{again:?}"
    );
    assert_eq!(cached(), (1, 64 << 10));
    let c = omp_malloc_on_node(size, 5).unwrap();
    let d = omp_malloc_on_node(size, 5).unwrap();
    assert_ne!(c, d);
    assert!(c == b || d == b);

    // Coarse memory goes back under the node it is on, and a coarse allocation whose turn is
    // that node reuses it.
    reset_coarse_counter();
    let on0 = omp_malloc_specific(size, Distribution::Coarse).unwrap();
    assert_eq!(node_bytes(on0.as_ptr(), size).on(0), size as u64);
    // SAFETY: allocated above, no reference remains.
    unsafe { omp_free(on0.as_ptr()) }.unwrap();
    reset_coarse_counter();
    let again0 = omp_malloc_specific(size, Distribution::Coarse).unwrap();
    assert_eq!(again0, on0, "node 0's turn takes node 0's cached mapping");

    // Fine memory keeps its interleave.
    let fine = omp_malloc_specific(1 << 20, Distribution::Fine).unwrap();
    let before = node_bytes(fine.as_ptr(), 1 << 20);
    // SAFETY: allocated above, no reference remains.
    unsafe { omp_free(fine.as_ptr()) }.unwrap();
    let fine2 = omp_malloc_specific(1 << 20, Distribution::Fine).unwrap();
    assert_eq!(fine2, fine);
    assert_eq!(node_bytes(fine2.as_ptr(), 1 << 20), before);

    // Standard memory is not kept on a machine of several nodes: its pages lie where their
    // first writer ran.
    let std_mem = omp_malloc_specific(size, Distribution::Standard).unwrap();
    let kept = cached();
    // SAFETY: allocated above, no reference remains.
    unsafe { omp_free(std_mem.as_ptr()) }.unwrap();
    assert_eq!(cached(), kept);

    // The bound: with no room, a freed mapping goes back to the kernel, and lowering the
    // limit returns what no longer fits.
    set_cache_limit(64 << 10);
    for p in [c, d, other, again0, fine2] {
        // SAFETY: allocated above, no reference remains.
        unsafe { omp_free(p.as_ptr()) }.unwrap();
    }
    assert!(cached().1 <= 64 << 10, "{:?}", cached());
    set_cache_limit(0);
    assert_eq!(cached(), (0, 0));
    set_cache_limit(1 << 30);
    let e = omp_malloc_on_node(size, 5).unwrap();
    // SAFETY: allocated above, no reference remains.
    unsafe { omp_free(e.as_ptr()) }.unwrap();
    assert_eq!(cached(), (1, 64 << 10));
    release_cache();
    assert_eq!(cached(), (0, 0));
    assert_eq!(
        node_bytes(e.as_ptr(), 1).unknown(),
        1,
        "returned to the kernel"
    );
}
