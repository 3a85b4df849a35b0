//! Placement on a real multi-node kernel. These tests need several NUMA nodes, so they are
//! `#[ignore]`d on the (one-node) host and run inside QEMU guests with 4 and 8 nodes by
//! `scripts/numa-vm-test.sh`, which passes `--ignored` and sets `NUMATASK_VM_NODES` to the number
//! of nodes it configured.
//!
//! Every check compares what the allocator meant (the registry) with where the kernel really put
//! the pages (`move_pages`), page by page.

use numatask_alloc::{
    AllocError, Distribution, HUGE_PAGE, NumaVec, Pages, Place, STALE_AFTER_MS, Topology,
    node_bytes, omp_free, omp_malloc_on_node, omp_malloc_specific, page_size, reset_coarse_counter,
    resident_nodes, with_pages,
};

/// The node count the harness configured.
fn expected_nodes() -> usize {
    let raw = std::env::var("NUMATASK_VM_NODES")
        .expect("NUMATASK_VM_NODES is unset: run this through scripts/numa-vm-test.sh");
    raw.parse()
        .unwrap_or_else(|e| panic!("NUMATASK_VM_NODES={raw:?} is not a number: {e}"))
}

/// The distance the harness gave QEMU for nodes `i` and `j`.
fn configured_distance(n: usize, i: usize, j: usize) -> u32 {
    match (n, i == j, i / 2 == j / 2) {
        (_, true, _) => 10,
        (4, false, true) => 20,
        (4, false, false) => 30,
        (_, false, true) => 16,
        (_, false, false) => 22,
    }
}

/// Touches every page of `[ptr, ptr + len)` with a write.
fn touch(ptr: *mut u8, len: usize) {
    for offset in (0..len).step_by(page_size()) {
        // SAFETY: the callers pass ranges inside live allocations they own.
        unsafe { ptr.add(offset).write_volatile(1) };
    }
}

/// The registry's node of each page of `[ptr, ptr + len)` (page-aligned ranges only).
fn registry_page_nodes(ptr: *const u8, len: usize) -> Vec<Option<usize>> {
    (0..len.div_ceil(page_size()))
        .map(|p| {
            // SAFETY: address arithmetic inside the allocation, never dereferenced.
            let page = unsafe { ptr.add(p * page_size()) };
            let d = node_bytes(page, page_size().min(len - p * page_size()));
            assert_eq!(
                d.per_node().iter().filter(|&&b| b > 0).count() + usize::from(d.unknown() > 0),
                1
            );
            d.dominant_node()
        })
        .collect()
}

#[test]
#[ignore = "needs several NUMA nodes: run by scripts/numa-vm-test.sh"]
fn topology_reports_the_guest_nodes_cores_and_os_distances() {
    let n = expected_nodes();
    let topo = Topology::current().unwrap();
    assert!(!topo.is_synthetic());
    assert_eq!(topo.num_nodes(), n);
    assert_eq!(topo.distance_source(), numatask_alloc::DistanceSource::Os);
    for i in 0..n {
        assert_eq!(topo.nodes()[i].os_index, i);
        assert_eq!(topo.nodes()[i].cores.len(), 1, "one CPU per guest node");
        assert!(topo.nodes()[i].memory_bytes > 0);
        for j in 0..n {
            assert_eq!(
                topo.distance(i, j),
                configured_distance(n, i, j),
                "distance({i}, {j})"
            );
        }
    }
}

#[test]
#[ignore = "needs several NUMA nodes: run by scripts/numa-vm-test.sh"]
fn coarse_allocations_lie_wholly_on_their_node_and_rotate_over_the_nodes() {
    let n = expected_nodes();
    reset_coarse_counter();
    let len = 64 * page_size() + 100;
    let ptrs: Vec<_> = (0..2 * n)
        .map(|_| omp_malloc_specific(len, Distribution::Coarse).unwrap())
        .collect();
    for (k, p) in ptrs.iter().enumerate() {
        touch(p.as_ptr(), len);
        let kernel = resident_nodes(p.as_ptr(), len).unwrap();
        assert!(
            kernel.iter().all(|&node| node == Some(k % n)),
            "allocation {k}: kernel says {kernel:?}"
        );
        let d = node_bytes(p.as_ptr(), len);
        assert_eq!(
            d.on(k % n),
            len as u64,
            "allocation {k}: registry says {d:?}"
        );
        assert_eq!(registry_page_nodes(p.as_ptr(), len), kernel);
    }
    for p in ptrs {
        // SAFETY: allocated above, no reference into it remains.
        unsafe { omp_free(p.as_ptr()) }.unwrap();
    }
    // A size the next node cannot hold, though the machine can, is refused naming that node,
    // and the round robin does not move on: the next request still goes there.
    reset_coarse_counter();
    let on0 = omp_malloc_specific(len, Distribution::Coarse).unwrap();
    let node1 = Topology::current().unwrap().nodes()[1].memory_bytes;
    assert!(node1 > 0, "the guest's kernel reports each node's memory");
    let too_big = node1 as usize + page_size();
    let err = omp_malloc_specific(too_big, Distribution::Coarse).unwrap_err();
    assert!(
        matches!(&err, AllocError::TooLarge { what, .. } if what == "node 1"),
        "{err}"
    );
    let on1 = omp_malloc_specific(len, Distribution::Coarse).unwrap();
    touch(on1.as_ptr(), len);
    let kernel = resident_nodes(on1.as_ptr(), len).unwrap();
    assert!(
        kernel.iter().all(|&node| node == Some(1)),
        "after the refusal: {kernel:?}"
    );
    for p in [on0, on1] {
        // SAFETY: allocated above, no reference into it remains.
        unsafe { omp_free(p.as_ptr()) }.unwrap();
    }
}

#[test]
#[ignore = "needs several NUMA nodes: run by scripts/numa-vm-test.sh"]
fn fine_allocations_spread_evenly_over_every_node_and_match_the_registry_page_by_page() {
    let n = expected_nodes();
    let pages = 50 * n;
    let len = pages * page_size();
    let v = NumaVec::<u8>::zeroed(len, Distribution::Fine).unwrap();
    touch(v.as_ptr().cast_mut(), len);
    let kernel = resident_nodes(v.as_ptr(), len).unwrap();
    let mut per_node = vec![0usize; n];
    for node in &kernel {
        per_node[node.expect("every touched page is resident")] += 1;
    }
    assert_eq!(per_node, vec![50; n], "pages per node");
    assert_eq!(registry_page_nodes(v.as_ptr(), len), kernel);
    // A range starting and ending inside pages: the registry's byte arithmetic per node.
    let (lo, hi) = (page_size() / 2 + 3, len - 5);
    let d = v.node_bytes_of(lo..hi);
    let mut expect = vec![0u64; n];
    for (p, node) in kernel.iter().enumerate() {
        let (a, b) = ((p * page_size()).max(lo), ((p + 1) * page_size()).min(hi));
        expect[node.unwrap()] += (b - a) as u64;
    }
    assert_eq!(d.per_node(), expect);
}

#[test]
#[ignore = "needs several NUMA nodes: run by scripts/numa-vm-test.sh"]
fn standard_pages_follow_the_node_of_the_touching_thread() {
    let n = expected_nodes();
    // Base pages, the default on several nodes: page-granular even with the kernel's
    // transparent huge pages `always`, as Debian's kernel boots.
    let topo = Topology::current().unwrap();
    let len = 16 * page_size();
    let v = NumaVec::<u8>::zeroed(len * n, Distribution::Standard).unwrap();
    assert_eq!(
        node_bytes(v.as_ptr(), len * n).unknown(),
        (len * n) as u64,
        "untouched pages are unknown"
    );
    let base = v.as_ptr() as usize;
    std::thread::scope(|s| {
        for node in 0..n {
            let core = topo.nodes()[node].cores[0].index;
            let topo = &topo;
            s.spawn(move || {
                topo.pin_current_thread(core).unwrap();
                touch((base + node * len) as *mut u8, len);
            });
        }
    });
    for node in 0..n {
        // SAFETY: inside the allocation.
        let part = unsafe { v.as_ptr().add(node * len) };
        let kernel = resident_nodes(part, len).unwrap();
        assert!(
            kernel.iter().all(|&k| k == Some(node)),
            "slice touched on node {node}: {kernel:?}"
        );
        assert_eq!(registry_page_nodes(part, len), kernel);
        assert_eq!(node_bytes(part, len).on(node), len as u64);
    }
}

#[test]
#[ignore = "needs several NUMA nodes: run by scripts/numa-vm-test.sh"]
fn every_node_can_be_chosen_explicitly_and_a_missing_node_is_an_error() {
    let n = expected_nodes();
    for node in 0..n {
        let v = NumaVec::<u64>::filled(5000, 7, Place::OnNode(node)).unwrap();
        let kernel = resident_nodes(v.as_ptr().cast(), 5000 * 8).unwrap();
        assert!(
            kernel.iter().all(|&k| k == Some(node)),
            "node {node}: {kernel:?}"
        );
    }
    assert_eq!(
        omp_malloc_on_node(4096, n),
        Err(AllocError::NoSuchNode {
            node: n,
            num_nodes: n
        })
    );
    let node_memory = Topology::current().unwrap().nodes()[0].memory_bytes;
    let err = omp_malloc_on_node(node_memory as usize + 1, 0).unwrap_err();
    assert!(err.to_string().contains("node 0 has"), "{err}");
}

#[test]
#[ignore = "needs several NUMA nodes: run by scripts/numa-vm-test.sh"]
fn reused_memory_lies_where_its_policy_put_it_and_the_registry_says_so() {
    let n = expected_nodes();
    let len = 40 * page_size();
    for node in 0..n {
        let p = omp_malloc_on_node(len, node).unwrap();
        touch(p.as_ptr(), len);
        // SAFETY: allocated above, no reference into it remains.
        unsafe { omp_free(p.as_ptr()) }.unwrap();
        // The next allocation of that node and size class takes the same mapping, zeroed,
        // still on the node by the kernel's page locations and by the registry.
        let q = omp_malloc_on_node(len - 100, node).unwrap();
        assert_eq!(q, p, "node {node}: the freed mapping is reused");
        // SAFETY: `len - 100` bytes handed out.
        let bytes = unsafe { std::slice::from_raw_parts(q.as_ptr(), len - 100) };
        assert!(bytes.iter().all(|&b| b == 0), "node {node}: zeroed");
        let kernel = resident_nodes(q.as_ptr(), len - 100).unwrap();
        assert!(
            kernel.iter().all(|&k| k == Some(node)),
            "node {node}: {kernel:?}"
        );
        assert_eq!(registry_page_nodes(q.as_ptr(), len - 100), kernel);
        // SAFETY: allocated above, no reference into it remains.
        unsafe { omp_free(q.as_ptr()) }.unwrap();
    }
    // Fine memory keeps its interleave through reuse, page by page.
    let len = 64 * n * page_size();
    let f = omp_malloc_specific(len, Distribution::Fine).unwrap();
    touch(f.as_ptr(), len);
    // SAFETY: allocated above, no reference into it remains.
    unsafe { omp_free(f.as_ptr()) }.unwrap();
    let g = omp_malloc_specific(len, Distribution::Fine).unwrap();
    assert_eq!(g, f);
    let kernel = resident_nodes(g.as_ptr(), len).unwrap();
    let mut per_node = vec![0usize; n];
    for node in &kernel {
        per_node[node.expect("resident")] += 1;
    }
    assert_eq!(per_node, vec![64; n], "pages per node");
    assert_eq!(registry_page_nodes(g.as_ptr(), len), kernel);
    // SAFETY: allocated above, no reference into it remains.
    unsafe { omp_free(g.as_ptr()) }.unwrap();
    // Standard memory goes back to the kernel on several nodes: the next allocation's pages
    // land where its own first touch puts them.
    let s = omp_malloc_specific(len, Distribution::Standard).unwrap();
    // SAFETY: allocated above, no reference into it remains.
    unsafe { omp_free(s.as_ptr()) }.unwrap();
    assert_eq!(
        node_bytes(s.as_ptr(), 1).unknown(),
        1,
        "returned to the kernel"
    );
}

#[test]
#[ignore = "needs several NUMA nodes: run by scripts/numa-vm-test.sh"]
fn huge_page_memory_lies_wholly_on_its_node() {
    let n = expected_nodes();
    numatask_alloc::set_huge_pages(true);
    let len = 3 * numatask_alloc::HUGE_PAGE;
    for node in 0..n {
        let p = omp_malloc_on_node(len, node).unwrap();
        assert_eq!(p.as_ptr() as usize % numatask_alloc::HUGE_PAGE, 0);
        touch(p.as_ptr(), len);
        let kernel = resident_nodes(p.as_ptr(), len).unwrap();
        assert!(
            kernel.iter().all(|&k| k == Some(node)),
            "node {node}: {kernel:?}"
        );
        assert_eq!(node_bytes(p.as_ptr(), len).on(node), len as u64);
        // SAFETY: allocated above, no reference into it remains.
        unsafe { omp_free(p.as_ptr()) }.unwrap();
    }
    numatask_alloc::set_huge_pages(false);
}

#[test]
#[ignore = "needs several NUMA nodes: run by scripts/numa-vm-test.sh"]
fn fine_huge_page_memory_is_interleaved_by_huge_page_as_the_registry_says() {
    let n = expected_nodes();
    let huge = numatask_alloc::HUGE_PAGE;
    numatask_alloc::set_huge_pages(true);
    let len = 2 * n * huge + 12345;
    let p = omp_malloc_specific(len, Distribution::Fine).unwrap();
    numatask_alloc::set_huge_pages(false);
    assert_eq!(p.as_ptr() as usize % huge, 0, "2 MiB aligned");
    touch(p.as_ptr(), len);
    let kernel = resident_nodes(p.as_ptr(), len).unwrap();
    let per_page = huge / page_size();
    for (page, node) in kernel.iter().enumerate() {
        assert_eq!(
            *node,
            Some((page / per_page) % n),
            "page {page}: huge page {} goes to node {}",
            page / per_page,
            (page / per_page) % n
        );
    }
    assert_eq!(registry_page_nodes(p.as_ptr(), len), kernel);
    // Freed and reused: the same mapping, still where it was.
    // SAFETY: allocated above, no reference into it remains.
    unsafe { omp_free(p.as_ptr()) }.unwrap();
    numatask_alloc::set_huge_pages(true);
    let q = omp_malloc_specific(len, Distribution::Fine).unwrap();
    numatask_alloc::set_huge_pages(false);
    assert_eq!(q, p, "the cached huge-page mapping is reused");
    assert_eq!(resident_nodes(q.as_ptr(), len).unwrap(), kernel);
    // SAFETY: allocated above, no reference into it remains.
    unsafe { omp_free(q.as_ptr()) }.unwrap();
}

#[test]
#[ignore = "needs several NUMA nodes: run by scripts/numa-vm-test.sh"]
fn small_allocations_and_collections_lie_on_the_node_their_policy_names() {
    let n = expected_nodes();
    for node in 0..n {
        for size in [1, 64, 3000, page_size() + 1] {
            let p = omp_malloc_on_node(size, node).unwrap();
            touch(p.as_ptr(), size);
            let kernel = resident_nodes(p.as_ptr(), size).unwrap();
            assert!(
                kernel.iter().all(|&k| k == Some(node)),
                "{size} bytes on node {node}: {kernel:?}"
            );
            assert_eq!(node_bytes(p.as_ptr(), size).on(node), size as u64);
            // SAFETY: allocated above, no reference into it remains.
            unsafe { omp_free(p.as_ptr()) }.unwrap();
        }
        // A collection's buffer through the allocator type.
        let mut v: allocator_api2::vec::Vec<u32, numatask_alloc::NumaAlloc> =
            allocator_api2::vec::Vec::new_in(numatask_alloc::NumaAlloc::on_node(node));
        v.extend(0..100u32);
        let kernel = resident_nodes(v.as_ptr().cast(), 400).unwrap();
        assert!(
            kernel.iter().all(|&k| k == Some(node)),
            "a Vec on node {node}: {kernel:?}"
        );
    }
}

/// Prints a line to the guest's console even though libtest captures the output of passing
/// tests (it captures `print!`, not writes to the stream): the harness echoes these lines.
fn report(line: &str) {
    use std::io::Write as _;
    let _ = writeln!(std::io::stderr().lock(), "NUMATASK-VM-REPORT {line}");
}

/// The lines of `/proc/self/smaps` about the mapping that holds `addr`, `name: value` of each
/// (`THPeligible`, `AnonHugePages`, ...).
fn smaps_of(addr: usize) -> Vec<(String, String)> {
    let smaps = std::fs::read_to_string("/proc/self/smaps").expect("/proc/self/smaps");
    let mut inside = false;
    let mut fields = Vec::new();
    for line in smaps.lines() {
        let first = line.split_whitespace().next().unwrap_or("");
        if let Some((lo, hi)) = first.split_once('-')
            && let (Ok(lo), Ok(hi)) = (usize::from_str_radix(lo, 16), usize::from_str_radix(hi, 16))
        {
            if inside {
                break;
            }
            inside = (lo..hi).contains(&addr);
        } else if inside && let Some((k, v)) = line.split_once(':') {
            fields.push((k.trim().to_owned(), v.trim().to_owned()));
        }
    }
    assert!(!fields.is_empty(), "no mapping holds {addr:#x}");
    fields
}

fn smaps_field(fields: &[(String, String)], name: &str) -> String {
    fields
        .iter()
        .find(|(k, _)| k == name)
        .map(|(_, v)| v.clone())
        .unwrap_or_else(|| panic!("no {name} in {fields:?}"))
}

#[test]
#[ignore = "needs several NUMA nodes: run by scripts/numa-vm-test.sh"]
fn first_touch_memory_gets_base_pages_or_aligned_huge_pages_as_chosen() {
    let n = expected_nodes();
    let thp =
        std::fs::read_to_string("/sys/kernel/mm/transparent_hugepage/enabled").unwrap_or_default();
    let balancing = std::fs::read_to_string("/proc/sys/kernel/numa_balancing").unwrap_or_default();
    report(&format!(
        "nodes={n} transparent huge pages: {}; automatic NUMA balancing: {}",
        thp.trim(),
        balancing.trim()
    ));
    // The default on several nodes, small or large: advised against huge pages, so that no
    // huge page is faulted in, nor the mapping merged with a neighbour that has them.
    for len in [3 * page_size(), 3 * HUGE_PAGE + 5] {
        let v = NumaVec::<u8>::zeroed(len, Distribution::Standard).unwrap();
        touch(v.as_ptr() as *mut u8, len);
        let fields = smaps_of(v.as_ptr() as usize);
        assert_eq!(
            smaps_field(&fields, "THPeligible"),
            "0",
            "{len} bytes: {fields:?}"
        );
        assert_eq!(smaps_field(&fields, "AnonHugePages"), "0 kB", "{len} bytes");
        assert_eq!(
            numatask_alloc::first_touch_unit(v.as_ptr()),
            Some(page_size())
        );
    }
    // Huge pages, chosen for one allocation: 2 MiB aligned and long, so that no huge page
    // spans it and a neighbour.
    let len = 3 * HUGE_PAGE + 5;
    let h = with_pages(Pages::Huge, || {
        NumaVec::<u8>::zeroed(len, Distribution::Standard)
    })
    .unwrap();
    assert_eq!(h.as_ptr() as usize % HUGE_PAGE, 0);
    touch(h.as_ptr() as *mut u8, len);
    let fields = smaps_of(h.as_ptr() as usize);
    assert_eq!(smaps_field(&fields, "THPeligible"), "1", "{fields:?}");
    let size = smaps_field(&fields, "Size");
    assert_eq!(
        size,
        format!("{} kB", 4 * HUGE_PAGE / 1024),
        "the mapping is whole huge pages"
    );
    assert_eq!(
        numatask_alloc::first_touch_unit(h.as_ptr()),
        Some(HUGE_PAGE)
    );
    // Fine and coarse memory is placed by policy, not by touch.
    let f = NumaVec::<u8>::zeroed(len, Distribution::Fine).unwrap();
    assert_eq!(numatask_alloc::first_touch_unit(f.as_ptr()), None);
}

/// `move_pages(2)`'s flag to move the pages (linux/mempolicy.h).
const MPOL_MF_MOVE: libc::c_int = 1 << 1;
/// `get_mempolicy(2)`'s flag to report the policy of an address (linux/mempolicy.h).
const MPOL_F_ADDR: libc::c_ulong = 1 << 1;

/// `move_pages(2)` moving every page of `[ptr, ptr + len)` to OS node `os_node`.
fn move_to(ptr: *const u8, len: usize, os_node: usize) {
    let ps = page_size();
    let pages: Vec<*mut libc::c_void> = (0..len / ps)
        .map(|i| (ptr as usize + i * ps) as *mut libc::c_void)
        .collect();
    let nodes = vec![os_node as libc::c_int; pages.len()];
    let mut status = vec![0i32; pages.len()];
    // SAFETY: the three arrays hold `pages.len()` entries each; the pages are this process's.
    let rc = unsafe {
        libc::syscall(
            libc::SYS_move_pages,
            0 as libc::c_long,
            pages.len() as libc::c_ulong,
            pages.as_ptr(),
            nodes.as_ptr(),
            status.as_mut_ptr(),
            MPOL_MF_MOVE,
        )
    };
    assert_eq!(rc, 0, "move_pages: {}", std::io::Error::last_os_error());
}

#[test]
#[ignore = "needs several NUMA nodes: run by scripts/numa-vm-test.sh"]
fn the_registry_reports_pages_the_kernel_moved_within_its_staleness_bound() {
    let topo = Topology::current().unwrap();
    let len = 64 * page_size();
    let v = NumaVec::<u8>::zeroed(len, Distribution::Standard).unwrap();
    let ptr = v.as_ptr();
    let at = ptr as usize;
    std::thread::scope(|s| {
        s.spawn(|| {
            topo.pin_current_thread(topo.nodes()[0].cores[0].index)
                .unwrap();
            touch(at as *mut u8, len);
        });
    });
    assert_eq!(
        node_bytes(ptr, len).on(0),
        len as u64,
        "first touched on node 0"
    );
    let last = topo.num_nodes() - 1;
    move_to(ptr, len, topo.nodes()[last].os_index);
    let os_last = Some(topo.nodes()[last].os_index);
    assert!(
        resident_nodes(ptr, len)
            .unwrap()
            .iter()
            .all(|&k| k == os_last)
    );
    let moved = std::time::Instant::now();
    // Looked up meanwhile (the cached answer may be reported until the bound)...
    let _ = node_bytes(ptr, len);
    // ... and after it: the new node, page by page.
    std::thread::sleep(std::time::Duration::from_millis(
        u64::from(STALE_AFTER_MS) + 20,
    ));
    let after = node_bytes(ptr, len);
    report(&format!(
        "nodes={} a moved standard range reported on its new node {} ms after the move",
        topo.num_nodes(),
        moved.elapsed().as_millis()
    ));
    assert_eq!(after.on(last), len as u64, "{after:?}");
    assert_eq!(
        registry_page_nodes(ptr, len),
        resident_nodes(ptr, len).unwrap()
    );
}

/// The policy of the page at `addr` (`get_mempolicy(2)` with `MPOL_F_ADDR`).
fn policy_of(addr: usize) -> libc::c_int {
    let mut mode: libc::c_int = -1;
    // SAFETY: `mode` is a valid int to write; no node mask is asked for (null, 0).
    let rc = unsafe {
        libc::syscall(
            libc::SYS_get_mempolicy,
            &mut mode as *mut libc::c_int,
            std::ptr::null_mut::<libc::c_ulong>(),
            0 as libc::c_ulong,
            addr as *mut libc::c_void,
            MPOL_F_ADDR,
        )
    };
    assert_eq!(rc, 0, "get_mempolicy: {}", std::io::Error::last_os_error());
    mode
}

#[test]
#[ignore = "needs several NUMA nodes: run by scripts/numa-vm-test.sh"]
fn fine_and_coarse_memory_is_bound_so_that_numa_balancing_leaves_it() {
    // Automatic NUMA balancing migrates only pages under a policy that allows it (the
    // default one, which first-touch memory keeps); fine and coarse memory is bound, base
    // pages and huge.
    let len = 3 * HUGE_PAGE;
    for pages in [Pages::Base, Pages::Huge] {
        let f = with_pages(pages, || NumaVec::<u8>::zeroed(len, Distribution::Fine)).unwrap();
        let c = with_pages(pages, || NumaVec::<u8>::zeroed(len, Distribution::Coarse)).unwrap();
        let s = with_pages(pages, || NumaVec::<u8>::zeroed(len, Distribution::Standard)).unwrap();
        for at in [0, len / 2, len - 1] {
            let fine = policy_of(f.as_ptr() as usize + at);
            assert!(
                fine == libc::MPOL_INTERLEAVE || fine == libc::MPOL_BIND,
                "{pages:?} fine: {fine}"
            );
            assert_eq!(
                policy_of(c.as_ptr() as usize + at),
                libc::MPOL_BIND,
                "{pages:?} coarse"
            );
            assert_eq!(
                policy_of(s.as_ptr() as usize + at),
                libc::MPOL_DEFAULT,
                "{pages:?} standard"
            );
        }
    }
}
