//! Huge pages for node-bound memory: with them on, a coarse or node mapping of at least 2 MiB
//! is 2 MiB aligned and long, placed as before, and backed by huge pages where the kernel's
//! transparent huge pages are `always` or `madvise` (read from /proc/self/smaps), and so is an
//! interleaved one; first-touch memory keeps base pages on several nodes, and uses huge pages
//! on one. (Alone in its test binary: it turns the
//! process-wide switch on.)

use numatask_alloc::{
    Distribution, HUGE_PAGE, allocation_size, node_bytes, omp_free, omp_malloc_on_node,
    omp_malloc_specific, set_huge_pages,
};

/// The kB of huge pages backing the mapping that contains `addr` (smaps' `AnonHugePages`).
fn anon_huge_kib(addr: usize) -> u64 {
    let smaps = std::fs::read_to_string("/proc/self/smaps").expect("smaps");
    let mut inside = false;
    for line in smaps.lines() {
        if let Some((range, _)) = line.split_once(' ')
            && let Some((lo, hi)) = range.split_once('-')
            && let (Ok(lo), Ok(hi)) = (usize::from_str_radix(lo, 16), usize::from_str_radix(hi, 16))
        {
            inside = (lo..hi).contains(&addr);
            continue;
        }
        if inside && let Some(v) = line.strip_prefix("AnonHugePages:") {
            return v
                .trim()
                .trim_end_matches(" kB")
                .trim()
                .parse()
                .expect("a number");
        }
    }
    panic!("no mapping holds {addr:#x}");
}

/// Whether the kernel gives an application that asks huge pages.
fn kernel_allows_huge_pages() -> bool {
    std::fs::read_to_string("/sys/kernel/mm/transparent_hugepage/enabled")
        .is_ok_and(|s| !s.contains("[never]"))
}

#[test]
fn node_bound_memory_uses_huge_pages_when_asked_placed_as_before() {
    set_huge_pages(true);
    let size = 5 << 20;
    let p = omp_malloc_on_node(size, 0).unwrap();
    let start = p.as_ptr() as usize;
    assert_eq!(start % HUGE_PAGE, 0, "2 MiB aligned");
    assert_eq!(allocation_size(p.as_ptr()), Some(size));
    // SAFETY: `size` bytes allocated above.
    unsafe { std::ptr::write_bytes(p.as_ptr(), 7, size) };
    assert_eq!(node_bytes(p.as_ptr(), size).on(0), size as u64, "on node 0");
    if kernel_allows_huge_pages() {
        assert!(anon_huge_kib(start) >= 2048, "backed by huge pages");
    }
    // Freed and reused as a huge-page mapping, zeroed.
    // SAFETY: allocated above, no reference remains.
    unsafe { omp_free(p.as_ptr()) }.unwrap();
    let q = omp_malloc_specific(size, Distribution::Coarse).unwrap();
    assert_eq!(q, p, "the cached huge-page mapping is reused");
    // SAFETY: `size` bytes handed out.
    assert!(
        unsafe { std::slice::from_raw_parts(q.as_ptr(), size) }
            .iter()
            .all(|&b| b == 0)
    );
    // First-touch memory keeps base pages on several nodes (each page where it is first
    // written); on one node, where every page lies on that node anyway, it uses huge pages.
    let one_node = numatask_alloc::Topology::current().unwrap().num_nodes() == 1;
    let s = omp_malloc_specific(size, Distribution::Standard).unwrap();
    // SAFETY: `size` bytes allocated above.
    unsafe { std::ptr::write_bytes(s.as_ptr(), 7, size) };
    if one_node {
        assert_eq!(
            s.as_ptr() as usize % HUGE_PAGE,
            0,
            "2 MiB aligned on one node"
        );
        if kernel_allows_huge_pages() {
            assert!(
                anon_huge_kib(s.as_ptr() as usize) >= 2048,
                "huge pages on one node"
            );
        }
    } else if kernel_allows_huge_pages()
        && std::fs::read_to_string("/sys/kernel/mm/transparent_hugepage/enabled")
            .is_ok_and(|t| t.contains("[madvise]"))
    {
        assert_eq!(anon_huge_kib(s.as_ptr() as usize), 0, "base pages");
    }
    // Interleaved memory too (on one node, wholly there).
    let f = omp_malloc_specific(size, Distribution::Fine).unwrap();
    assert_eq!(f.as_ptr() as usize % HUGE_PAGE, 0, "2 MiB aligned");
    // SAFETY: `size` bytes allocated above.
    unsafe { std::ptr::write_bytes(f.as_ptr(), 7, size) };
    assert_eq!(node_bytes(f.as_ptr(), size).on(0), size as u64, "on node 0");
    if kernel_allows_huge_pages() {
        assert!(
            anon_huge_kib(f.as_ptr() as usize) >= 2048,
            "backed by huge pages"
        );
    }
    // SAFETY: allocated above, no reference remains.
    unsafe { omp_free(f.as_ptr()) }.unwrap();
    set_huge_pages(false);
    let off = omp_malloc_on_node(size, 0).unwrap();
    assert_ne!(off, q, "with huge pages off, not the huge-page mapping");
    for x in [q, s, off] {
        // SAFETY: allocated above, no reference remains.
        unsafe { omp_free(x.as_ptr()) }.unwrap();
    }
}
