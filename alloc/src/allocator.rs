//! The raw, C-like allocator of the core paper (its Listing 2): `omp_malloc`,
//! `omp_malloc_specific` and `omp_free`, plus `omp_malloc_on_node` for an explicit node.
//!
//! Every mapping is made for one allocation, so that a policy can be applied to exactly its
//! pages; a freed mapping is kept for the next allocation of its placement and size class
//! ([`set_cache_limit`](crate::set_cache_limit)), faulted in and where its policy put it. The
//! policies:
//! - **standard**: nothing is bound; each page lands where it is first touched: each 4 KiB
//!   page with base pages (the mapping advised against transparent huge pages), each 2 MiB
//!   with huge pages (see [`crate::huge`] for which one an allocation gets; the registry asks
//!   the kernel, so it reports what really happened);
//! - **fine**: the pages are interleaved over all nodes (`MPOL_INTERLEAVE` through hwloc), with
//!   transparent huge pages disabled so that the unit of interleaving is one base page; with
//!   huge pages, a mapping of at least 2 MiB is interleaved by huge page instead, each 2 MiB
//!   bound to the next node in turn (one memory area of the kernel's per huge page: a process
//!   may have 65,530 by default, `vm.max_map_count`, so about 128 GiB of such memory);
//! - **coarse**: the whole mapping is bound (`MPOL_BIND` through hwloc) to the next node of a
//!   process-wide round-robin counter, which [`reset_coarse_counter`] rewinds to node 0.
//!
//! On a synthetic topology the kernel is not asked to bind anything: the registry still records
//! where each page was meant to go, which is what scheduling decisions are computed from.

use std::ptr::NonNull;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use hwlocality::memory::binding::{MemoryBindingFlags, MemoryBindingPolicy};
use hwlocality::memory::nodeset::NodeSet;

use crate::cache::{self, Key};
use crate::distribution::Distribution;
use crate::error::AllocError;
use crate::huge::{HUGE_PAGE, huge_setting};
use crate::page_size;
use crate::registry::{PageCache, Placement, Record, registry};
use crate::topology::Topology;

static NEXT_COARSE_NODE: AtomicUsize = AtomicUsize::new(0);

/// Rewinds the coarse round-robin counter: the next coarse allocation goes to node 0.
pub fn reset_coarse_counter() {
    NEXT_COARSE_NODE.store(0, Ordering::Relaxed);
}

/// Allocates `size` bytes distributed by the process-wide policy (`OMP_DATA_DISTRIBUTION`).
///
/// The memory is page-aligned and zeroed. Size 0 is [`AllocError::ZeroSize`]; an invalid
/// `OMP_DATA_DISTRIBUTION` is an error naming the variable, never a silent fallback.
pub fn omp_malloc(size: usize) -> Result<NonNull<u8>, AllocError> {
    omp_malloc_specific(size, Distribution::from_env()?)
}

/// Allocates `size` bytes with `distribution`, whatever the process-wide policy says.
pub fn omp_malloc_specific(
    size: usize,
    distribution: Distribution,
) -> Result<NonNull<u8>, AllocError> {
    let topology = Topology::current()?;
    let (target, turn) = match distribution {
        Distribution::Standard => (Target::FirstTouch, None),
        Distribution::Fine => (Target::Interleave, None),
        Distribution::Coarse => {
            // The round robin moves on only once the next node can hold the size (checked
            // against that node's memory), so that a refused request does not skip a node.
            let mut turn = NEXT_COARSE_NODE.load(Ordering::Relaxed);
            loop {
                let node = turn % topology.num_nodes();
                check_size(&topology, size, Target::Node(node))?;
                match NEXT_COARSE_NODE.compare_exchange_weak(
                    turn,
                    turn.wrapping_add(1),
                    Ordering::Relaxed,
                    Ordering::Relaxed,
                ) {
                    Ok(_) => break (Target::Node(node), Some(turn)),
                    Err(now) => turn = now,
                }
            }
        }
    };
    allocate(&topology, size, distribution, target).inspect_err(|_| {
        if let Some(turn) = turn {
            // Refused by the kernel after all (mapping or binding): give the turn back, unless
            // another allocation took the next one meanwhile (the order is then theirs).
            let _ = NEXT_COARSE_NODE.compare_exchange(
                turn.wrapping_add(1),
                turn,
                Ordering::Relaxed,
                Ordering::Relaxed,
            );
        }
    })
}

/// Allocates `size` bytes wholly on node `node` (a topology index). A node that does not exist is
/// [`AllocError::NoSuchNode`]. The allocation counts as coarse.
pub fn omp_malloc_on_node(size: usize, node: usize) -> Result<NonNull<u8>, AllocError> {
    let topology = Topology::current()?;
    topology.node(node)?;
    allocate(&topology, size, Distribution::Coarse, Target::Node(node))
}

/// Frees memory from [`omp_malloc`], [`omp_malloc_specific`] or [`omp_malloc_on_node`].
///
/// A null pointer is accepted and ignored (`Ok(())`), as C's `free(NULL)` and the C entry
/// point [`ffi::omp_free`](crate::ffi::omp_free) do. Any other pointer this allocator did not
/// return, or returned and already freed, is [`AllocError::UnknownPointer`] and nothing is
/// freed.
///
/// # Safety
///
/// No reference into the allocation may be used after this call.
pub unsafe fn omp_free(ptr: *mut u8) -> Result<(), AllocError> {
    if ptr.is_null() {
        return Ok(());
    }
    let addr = ptr as usize;
    let record = registry()
        .find(addr)
        .filter(|r| r.start == addr)
        .ok_or(AllocError::UnknownPointer(addr))?;
    // One free wins: a second free of the pointer (at once, or later while the mapping is
    // cached) finds it not live and is refused.
    if record
        .live
        .compare_exchange(true, false, Ordering::AcqRel, Ordering::Acquire)
        .is_err()
    {
        return Err(AllocError::UnknownPointer(addr));
    }
    let kept = match record.cache_key {
        Some(key) => cache::put(key, Arc::clone(&record)),
        None => Err(record),
    };
    if let Err(record) = kept {
        release(record);
    }
    Ok(())
}

/// Returns a mapping that is free (not live, out of the cache) to the kernel.
pub(crate) fn release(record: Arc<Record>) {
    if registry().remove(record.start).is_some() {
        // SAFETY: the record was registered (so `[start, start + len)` is a live mapping made
        // by `allocate`), it was not live (freed: the caller promised no reference is used any
        // more) and is now out of the registry and the cache, so nothing else can reach it.
        unsafe { unmap(record.start, record.len) };
    }
}

/// The size an allocation was made with, if `ptr` is the start of one.
pub fn allocation_size(ptr: *const u8) -> Option<usize> {
    registry()
        .find(ptr as usize)
        .filter(|r| r.start == ptr as usize && r.live.load(Ordering::Acquire))
        .map(|r| r.requested.load(Ordering::Relaxed))
}

#[derive(Clone, Copy, Debug)]
enum Target {
    FirstTouch,
    Interleave,
    Node(usize),
}

/// The machine's memory, asked of the system once (`sysconf` makes a system call: once per
/// allocation, every core allocating at once queued on it).
pub(crate) fn physical_memory() -> u64 {
    static MEMORY: std::sync::OnceLock<u64> = std::sync::OnceLock::new();
    *MEMORY.get_or_init(ask_physical_memory)
}

fn ask_physical_memory() -> u64 {
    #[cfg(miri)]
    return 1 << 34;
    #[cfg(not(miri))]
    {
        // SAFETY: sysconf has no memory-safety preconditions.
        let (pages, size) = unsafe {
            (
                libc::sysconf(libc::_SC_PHYS_PAGES),
                libc::sysconf(libc::_SC_PAGESIZE),
            )
        };
        u64::try_from(pages)
            .unwrap_or(0)
            .saturating_mul(u64::try_from(size).unwrap_or(0))
    }
}

fn check_size(topology: &Topology, size: usize, target: Target) -> Result<usize, AllocError> {
    if size == 0 {
        return Err(AllocError::ZeroSize);
    }
    let ps = page_size();
    let too_large = |available: u64, what: String| AllocError::TooLarge {
        requested: size as u128,
        available,
        what,
    };
    let machine = physical_memory();
    // What a node can hold: its memory when known (a synthetic node's is what its description
    // declares: not bound, but what the program models), unless the machine has less.
    let node_limit = |node: usize| match topology.nodes()[node].memory_bytes {
        m if m > 0 && m <= machine => Some(m),
        _ => None,
    };
    if size as u64 > machine {
        return Err(too_large(machine, "the machine".into()));
    }
    // What is mapped: whole pages.
    let Some(len) = size.div_ceil(ps).checked_mul(ps) else {
        return Err(too_large(machine, "the machine".into()));
    };
    match target {
        Target::Node(node) => {
            if let Some(m) = node_limit(node).filter(|&m| len as u64 > m) {
                return Err(too_large(m, format!("node {node}")));
            }
        }
        // Each node gets its share of the pages, up to one page more than the others (which
        // nodes do depends on where the interleave starts): a node that may not hold its
        // share would leave the kernel to put pages elsewhere, and the registry's record of
        // the interleave would be wrong.
        Target::Interleave => {
            let n = topology.num_nodes() as u64;
            let share = (len / ps) as u64;
            let share = share.div_ceil(n) * ps as u64;
            if let Some((node, m)) = (0..topology.num_nodes())
                .filter_map(|node| Some((node, node_limit(node)?)))
                .find(|&(_, m)| share > m)
            {
                // On one node there is no interleave: that node takes every page.
                let what = if n == 1 {
                    format!("node {node}")
                } else {
                    format!(
                        "node {node}, which the interleave over {n} nodes may give up to {share} \
                         bytes of it,"
                    )
                };
                return Err(too_large(m, what));
            }
        }
        Target::FirstTouch => {}
    }
    Ok(len)
}

fn allocate(
    topology: &Topology,
    size: usize,
    distribution: Distribution,
    target: Target,
) -> Result<NonNull<u8>, AllocError> {
    let mut len = cache::class_len(check_size(topology, size, target)?, page_size());
    // Huge pages (`huge`) for mappings of at least one: 2 MiB aligned and long. As chosen
    // (`with_pages`, `set_huge_pages`, the environment), else on a machine of one node only
    // (nothing is placed otherwise there); see `crate::huge`.
    let one_node = topology.num_nodes() == 1;
    let choice = huge_setting()?;
    let huge = cfg!(not(miri)) && len >= HUGE_PAGE && choice.unwrap_or(one_node);
    // Base pages kept from the kernel's transparent huge pages: where chosen, and for the
    // policies whose placement is per page (first touch, interleave) on several nodes.
    let no_huge = !huge
        && (choice == Some(false)
            || matches!(target, Target::Interleave)
            || (!one_node && matches!(target, Target::FirstTouch)));
    if huge {
        len = len.next_multiple_of(HUGE_PAGE);
    }
    let key = match target {
        Target::FirstTouch if one_node && huge => Some(Key::HugeStandard),
        Target::FirstTouch if one_node => Some(Key::Standard),
        Target::FirstTouch => None,
        Target::Interleave if huge => Some(Key::HugeFine),
        Target::Interleave => Some(Key::Fine),
        Target::Node(node) if huge => Some(Key::HugeNode(node)),
        Target::Node(node) => Some(Key::Node(node)),
    };
    if let Some(record) = key.and_then(|k| cache::take(k, len)) {
        if no_huge && choice == Some(false) {
            // Base pages chosen: a mapping made under another choice was not advised.
            // SAFETY: madvise on a mapping of ours (registered, out of the cache, not live);
            // NOHUGEPAGE only changes how the kernel backs it.
            #[cfg(not(miri))]
            unsafe {
                libc::madvise(
                    record.start as *mut libc::c_void,
                    record.len,
                    libc::MADV_NOHUGEPAGE,
                )
            };
        }
        // What earlier handouts may have written goes back to zero; the rest still is.
        let dirty = record.dirty.load(Ordering::Relaxed);
        // SAFETY: the mapping is ours (registered, taken out of the cache, not live: nobody
        // else holds it), writable, and at least `len >= size` bytes long.
        unsafe { std::ptr::write_bytes(record.start as *mut u8, 0, dirty.min(size)) };
        record.dirty.store(dirty.max(size), Ordering::Relaxed);
        record.requested.store(size, Ordering::Relaxed);
        record.live.store(true, Ordering::Release);
        return NonNull::new(record.start as *mut u8).ok_or(AllocError::Map {
            size,
            reason: "a cached mapping at address 0".into(),
        });
    }
    // Under Miri, which cannot call mmap (`scripts/miri.sh`): the global allocator, page-aligned
    // and zeroed like an anonymous mapping.
    #[cfg(miri)]
    let ptr = {
        let p = match std::alloc::Layout::from_size_align(len, page_size()) {
            // SAFETY: `len` is at least one page (`check_size` refuses 0), so the layout is not
            // zero-sized.
            Ok(layout) => unsafe { std::alloc::alloc_zeroed(layout) },
            Err(_) => std::ptr::null_mut(),
        };
        if p.is_null() {
            libc::MAP_FAILED
        } else {
            p.cast::<libc::c_void>()
        }
    };
    // SAFETY: an anonymous private mapping with no address hint has no preconditions; the result
    // is checked against MAP_FAILED.
    #[cfg(not(miri))]
    let ptr = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            // A huge-page mapping is made a huge page longer, and cut to an aligned part below.
            if huge { len + HUGE_PAGE } else { len },
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
            -1,
            0,
        )
    };
    #[cfg(not(miri))]
    let ptr = if huge && ptr != libc::MAP_FAILED {
        let raw = ptr as usize;
        let aligned = raw.next_multiple_of(HUGE_PAGE);
        // SAFETY: `[raw, aligned)` and `[aligned + len, raw + len + HUGE_PAGE)` lie in the
        // mapping made just above, which nobody else has seen; what stays is `[aligned,
        // aligned + len)`, advised for huge pages (MADV_HUGEPAGE changes only how the kernel
        // backs it).
        unsafe {
            if aligned > raw {
                unmap(raw, aligned - raw);
            }
            let end = raw + len + HUGE_PAGE;
            if end > aligned + len {
                unmap(aligned + len, end - (aligned + len));
            }
            libc::madvise(aligned as *mut libc::c_void, len, libc::MADV_HUGEPAGE);
        }
        aligned as *mut libc::c_void
    } else {
        ptr
    };
    if ptr == libc::MAP_FAILED {
        return Err(AllocError::Map {
            size,
            reason: std::io::Error::last_os_error().to_string(),
        });
    }
    let Some(base) = NonNull::new(ptr.cast::<u8>()) else {
        // Only where `vm.mmap_min_addr` is 0: a mapping at address 0 would read as a null
        // pointer to C callers, so it is refused (and unmapped) rather than handed out.
        // SAFETY: the mapping was made just above and has not been handed out.
        unsafe { unmap(0, len) };
        return Err(AllocError::Map {
            size,
            reason: "the system placed the mapping at address 0".into(),
        });
    };
    let start = ptr as usize;
    if no_huge {
        // SAFETY: madvise on the mapping made just above; NOHUGEPAGE only changes how the
        // kernel backs it (and keeps it from merging with a neighbour that has huge pages).
        #[cfg(not(miri))]
        unsafe {
            libc::madvise(start as *mut libc::c_void, len, libc::MADV_NOHUGEPAGE)
        };
    }
    if let Err(e) = bind(topology, start, len, target, huge) {
        // SAFETY: the mapping was made just above and has not been handed out.
        unsafe { unmap(start, len) };
        return Err(e);
    }
    let placement = match target {
        Target::FirstTouch => Placement::Standard(PageCache::new(len / page_size())),
        // Huge units are bound by `bind`, the first to node 0.
        Target::Interleave if huge => Placement::Fine {
            num_nodes: topology.num_nodes(),
            phase: (topology.num_nodes() - (start / HUGE_PAGE) % topology.num_nodes())
                % topology.num_nodes(),
            shift: HUGE_PAGE.trailing_zeros(),
        },
        Target::Interleave => Placement::Fine {
            num_nodes: topology.num_nodes(),
            phase: interleave_phase(topology, start),
            shift: crate::page_shift(),
        },
        Target::Node(node) => Placement::Node { node },
    };
    let mut record = Record::new(start, len, size, distribution, placement);
    record.cache_key = key;
    record.huge = huge;
    registry().insert(record);
    Ok(base)
}

/// The registry's `phase` for an interleaved mapping at `start` (see
/// [`Placement::Fine`](crate::registry::Placement)): on a real topology of several nodes, the
/// first page is touched (it is zero, and stays so) so that the kernel places it, and the
/// kernel says where; on a synthetic topology (recorded, not enforced) or if the kernel does
/// not answer, 0.
fn interleave_phase(topology: &Topology, start: usize) -> usize {
    let n = topology.num_nodes();
    if n == 1 || topology.hwloc().is_none() {
        return 0;
    }
    // SAFETY: `start` is the first byte of a fresh, writable mapping of at least a page that
    // nobody else has seen yet; writing the zero it holds changes nothing but its residence.
    unsafe { std::ptr::write_volatile(start as *mut u8, 0) };
    let os_node = crate::registry::kernel_page_nodes(&[start])
        .ok()
        .and_then(|nodes| nodes.first().copied().flatten());
    let index = os_node.and_then(|os| topology.nodes().iter().position(|nd| nd.os_index == os));
    match index {
        Some(node) => (node + n - (start / page_size()) % n) % n,
        None => 0,
    }
}

/// Applies the policy to the fresh mapping `[start, start + len)`; `huge`: it is made of
/// whole huge pages, advised for them (otherwise an interleaved mapping was advised against
/// them: one base page is then the unit of interleaving, which the registry relies on).
fn bind(
    topology: &Topology,
    start: usize,
    len: usize,
    target: Target,
    huge: bool,
) -> Result<(), AllocError> {
    let Some(hw) = topology.hwloc() else {
        return Ok(());
    };
    let (nodes, policy): (Vec<usize>, _) = match target {
        Target::FirstTouch => return Ok(()),
        Target::Interleave => {
            if topology.num_nodes() == 1 {
                return Ok(());
            }
            if huge {
                // Each huge page bound to the next node, from node 0: the interleave at
                // huge-page granularity, exact whether or not the kernel finds a huge page
                // for each (a base-page fallback still lands on the bound node).
                let n = topology.num_nodes();
                for (i, at) in (start..start + len).step_by(HUGE_PAGE).enumerate() {
                    let os = topology.nodes()[i % n].os_index;
                    bind_area(hw, at, HUGE_PAGE, &[os], MemoryBindingPolicy::Bind)?;
                }
                return Ok(());
            }
            (
                topology.nodes().iter().map(|n| n.os_index).collect(),
                MemoryBindingPolicy::Interleave,
            )
        }
        Target::Node(node) => (
            vec![topology.nodes()[node].os_index],
            MemoryBindingPolicy::Bind,
        ),
    };
    bind_area(hw, start, len, &nodes, policy)
}

/// Binds `[start, start + len)` to the OS nodes `os_nodes` with `policy`, through hwloc.
pub(crate) fn bind_area(
    hw: &hwlocality::Topology,
    start: usize,
    len: usize,
    os_nodes: &[usize],
    policy: MemoryBindingPolicy,
) -> Result<(), AllocError> {
    let mut set = NodeSet::new();
    for &n in os_nodes {
        set.set(n);
    }
    // SAFETY: `[start, start + len)` is an anonymous mapping owned by the caller, zero-filled
    // by the kernel, so it is valid to view as bytes; hwloc only passes its address range to
    // mbind and never reads or writes through it.
    let area = unsafe { std::slice::from_raw_parts(start as *const u8, len) };
    hw.bind_memory_area(area, &set, policy, MemoryBindingFlags::STRICT)
        .map_err(|e| AllocError::Bind {
            size: len,
            nodes: format!("{os_nodes:?}"),
            reason: e.to_string(),
        })
}

/// # Safety
///
/// `[start, start + len)` must be a mapping made by `allocate` that nothing uses any more.
unsafe fn unmap(start: usize, len: usize) {
    // Under Miri: what `allocate` took from the global allocator instead of mmap.
    #[cfg(miri)]
    if let Ok(layout) = std::alloc::Layout::from_size_align(len, page_size()) {
        // SAFETY: per the function's contract, `allocate` made this block with this layout.
        unsafe { std::alloc::dealloc(start as *mut u8, layout) };
    }
    #[cfg(not(miri))]
    {
        // SAFETY: per the function's contract.
        let rc = unsafe { libc::munmap(start as *mut libc::c_void, len) };
        debug_assert_eq!(rc, 0, "munmap of a mapping we made failed");
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::registry::node_bytes;

    #[test]
    fn zero_size_is_an_error() {
        assert_eq!(
            omp_malloc_specific(0, Distribution::Fine),
            Err(AllocError::ZeroSize)
        );
    }

    #[test]
    fn size_larger_than_the_machine_is_an_error_not_an_abort() {
        let err = omp_malloc_specific(usize::MAX, Distribution::Standard).unwrap_err();
        assert!(matches!(err, AllocError::TooLarge { .. }), "{err}");
        assert!(err.to_string().contains("the machine has"), "{err}");
        let err = omp_malloc_specific(usize::MAX / 2, Distribution::Coarse).unwrap_err();
        assert!(matches!(err, AllocError::TooLarge { .. }), "{err}");
    }

    #[test]
    fn a_node_declaring_more_memory_than_the_machine_has_is_limited_by_the_machine() {
        let machine = physical_memory();
        let topology = crate::TopologyBuilder::synthetic(format!(
            "numa:2(memory={}) core:1 pu:1",
            machine.saturating_mul(4)
        ))
        .build()
        .unwrap();
        let size = usize::try_from(machine + (1 << 30)).unwrap();
        let err = check_size(&topology, size, Target::Node(0)).unwrap_err();
        assert_eq!(
            err,
            AllocError::TooLarge {
                requested: size as u128,
                available: machine,
                what: "the machine".into()
            }
        );
        // A node smaller than the machine is the limit, and named.
        let small = crate::TopologyBuilder::synthetic("numa:2(memory=1048576) core:1 pu:1")
            .build()
            .unwrap();
        let err = check_size(&small, 2 << 20, Target::Node(1)).unwrap_err();
        assert!(
            err.to_string().contains("node 1 has 1048576 bytes"),
            "{err}"
        );
    }

    #[test]
    fn a_fine_allocation_must_fit_each_node_its_share_of_the_pages() {
        let ps = page_size();
        let mib = 1usize << 20;
        let small = crate::TopologyBuilder::synthetic("numa:2(memory=1048576) core:1 pu:1")
            .build()
            .unwrap();
        // 2 MiB over two 1 MiB nodes fits; one page more puts a page too many on node 0.
        assert_eq!(check_size(&small, 2 * mib, Target::Interleave), Ok(2 * mib));
        let err = check_size(&small, 2 * mib + 1, Target::Interleave).unwrap_err();
        assert_eq!(
            err.to_string(),
            format!(
                "cannot allocate {} bytes: node 0, which the interleave over 2 nodes may give \
                 up to {} bytes of it, has 1048576 bytes",
                2 * mib + 1,
                mib + ps
            )
        );
        // Both policies compare whole pages: a node of 1,000,000 bytes cannot hold 1,000,000
        // bytes of mapping (245 pages of 4 KiB), on its own or as its share.
        let odd = crate::TopologyBuilder::synthetic("numa:2(memory=1000000) core:1 pu:1")
            .build()
            .unwrap();
        if ps == 4096 {
            assert!(check_size(&odd, 1_000_000, Target::Node(0)).is_err());
            assert!(check_size(&odd, 2_000_000, Target::Interleave).is_err());
            assert_eq!(check_size(&odd, 995_328, Target::Node(0)), Ok(995_328));
        }
        // First touch is limited by the machine only.
        assert_eq!(check_size(&small, 4 * mib, Target::FirstTouch), Ok(4 * mib));
    }

    #[test]
    fn a_fine_allocation_too_large_for_the_one_node_names_the_node_without_an_interleave() {
        // One node holds every page: there is no interleave to speak of (the message once
        // said "node 0, which the interleave over 1 nodes may give up to ... bytes of it").
        let one = crate::TopologyBuilder::synthetic("numa:1(memory=1048576) core:1 pu:1")
            .build()
            .unwrap();
        let err = check_size(&one, 2 << 20, Target::Interleave).unwrap_err();
        assert_eq!(
            err.to_string(),
            format!(
                "cannot allocate {} bytes: node 0 has 1048576 bytes",
                2 << 20
            )
        );
    }

    #[test]
    fn only_memory_given_to_numa_levels_counts_as_declared() {
        let memory = |d: &str| {
            crate::TopologyBuilder::synthetic(d)
                .build()
                .unwrap()
                .nodes()
                .iter()
                .map(|n| n.memory_bytes)
                .collect::<Vec<u64>>()
        };
        assert_eq!(memory("numa:2(memory=1048576) core:1 pu:1"), [1 << 20; 2]);
        assert_eq!(memory("node:2(memory=1048576) pu:1"), [1 << 20; 2]);
        assert_eq!(
            memory("pack:2 [numa(memory=1048576)] core:1 pu:1"),
            [1 << 20; 2]
        );
        // hwloc ignores memory on a package: its nodes get its 1 GiB, recorded as unknown.
        assert_eq!(memory("pack:2(memory=4194304) numa:1 core:1 pu:1"), [0; 2]);
        assert_eq!(memory("numa:2 core:1 pu:1"), [0; 2]);
    }

    #[test]
    fn synthetic_nodes_without_declared_memory_have_no_limit_but_the_machine() {
        let t = crate::TopologyBuilder::synthetic("numa:2 core:1 pu:1")
            .build()
            .unwrap();
        assert!(t.nodes().iter().all(|n| n.memory_bytes == 0), "{t:?}");
        // Beyond the 1 GiB hwloc gives a synthetic node unless told, on either policy.
        let size = 3usize << 29;
        if (size as u64) < physical_memory() {
            assert_eq!(check_size(&t, size, Target::Node(1)), Ok(size));
            assert_eq!(check_size(&t, size * 2, Target::Interleave), Ok(size * 2));
        }
    }

    #[test]
    fn node_that_does_not_exist_is_an_error() {
        let nodes = Topology::current().unwrap().num_nodes();
        assert_eq!(
            omp_malloc_on_node(4096, nodes + 3),
            Err(AllocError::NoSuchNode {
                node: nodes + 3,
                num_nodes: nodes
            })
        );
    }

    #[test]
    fn freeing_null_is_a_no_op_as_in_c() {
        // SAFETY: null refers to no allocation.
        assert_eq!(unsafe { omp_free(std::ptr::null_mut()) }, Ok(()));
        // SAFETY: as above, twice: nothing was freed the first time either.
        assert_eq!(unsafe { omp_free(std::ptr::null_mut()) }, Ok(()));
    }

    #[test]
    fn freeing_a_foreign_or_freed_pointer_is_an_error_and_frees_nothing() {
        let mut v = vec![1u8; 64];
        // SAFETY: the pointer is not ours, so omp_free must refuse it without touching it.
        let err = unsafe { omp_free(v.as_mut_ptr()) };
        assert_eq!(err, Err(AllocError::UnknownPointer(v.as_ptr() as usize)));
        assert_eq!(v[63], 1);
        let p = omp_malloc_specific(10_000, Distribution::Fine).unwrap();
        // SAFETY: an interior pointer is refused, the allocation stays live.
        assert!(unsafe { omp_free(p.as_ptr().add(8)) }.is_err());
        assert_eq!(allocation_size(p.as_ptr()), Some(10_000));
        // SAFETY: p came from omp_malloc_specific and no reference into it exists.
        unsafe { omp_free(p.as_ptr()) }.unwrap();
        // SAFETY: double free is refused.
        assert!(unsafe { omp_free(p.as_ptr()) }.is_err());
        assert_eq!(allocation_size(p.as_ptr()), None);
    }

    #[test]
    fn kernel_refusing_a_missing_node_is_a_bind_error() {
        let topo = Topology::system().unwrap();
        let hw = topo.hwloc().expect("the system topology is real");
        let p = omp_malloc_specific(4096, Distribution::Standard).unwrap();
        let missing = topo.nodes().last().unwrap().os_index + 1;
        let err = bind_area(
            hw,
            p.as_ptr() as usize,
            4096,
            &[missing],
            MemoryBindingPolicy::Bind,
        )
        .unwrap_err();
        assert!(matches!(err, AllocError::Bind { .. }), "{err}");
        assert!(err.to_string().contains(&format!("[{missing}]")), "{err}");
        // SAFETY: allocated above, unused.
        unsafe { omp_free(p.as_ptr()) }.unwrap();
    }

    #[test]
    fn first_touch_pages_are_known_once_touched_and_counted_by_the_byte() {
        if Topology::current().unwrap().is_synthetic() {
            return; // the kernel's nodes are not a synthetic topology's: nothing is known
        }
        let ps = page_size();
        let p = omp_malloc_specific(10 * ps, Distribution::Standard).unwrap();
        // SAFETY: the allocation holds 10 pages.
        let s = unsafe { std::slice::from_raw_parts_mut(p.as_ptr(), 10 * ps) };
        // Pages 0-4 touched, 5-9 not: a range from the middle of page 2 to the middle of
        // page 7 has 2.5 pages known (and its node is this machine's one node, 0, or the
        // node of this thread).
        s[..5 * ps].fill(1);
        let (lo, hi) = (2 * ps + ps / 2, 7 * ps + ps / 2);
        let d = node_bytes(s[lo..].as_ptr(), hi - lo);
        assert_eq!(
            d.known(),
            (5 * ps - lo) as u64,
            "touched bytes of the range"
        );
        assert_eq!(
            d.unknown(),
            (hi - 5 * ps) as u64,
            "untouched bytes of the range"
        );
        // Touching the rest makes them known at the next lookup (not cached as unknown).
        s[5 * ps..].fill(1);
        let d = node_bytes(s[lo..].as_ptr(), hi - lo);
        assert_eq!((d.known(), d.unknown()), ((hi - lo) as u64, 0));
        // One byte in the middle of a page.
        let d = node_bytes(s[3 * ps + 7..].as_ptr(), 1);
        assert_eq!((d.known(), d.unknown()), (1, 0));
        // SAFETY: no reference into the allocation outlives this call.
        unsafe { omp_free(p.as_ptr()) }.unwrap();
    }

    #[test]
    fn memory_is_zeroed_writable_and_page_aligned() {
        for d in Distribution::ALL {
            let p = omp_malloc_specific(3 * page_size() + 5, d).unwrap();
            assert_eq!(p.as_ptr() as usize % page_size(), 0);
            // SAFETY: the allocation holds 3 pages + 5 bytes, all zeroed by the kernel.
            let s = unsafe { std::slice::from_raw_parts_mut(p.as_ptr(), 3 * page_size() + 5) };
            assert!(s.iter().all(|&b| b == 0));
            s.fill(7);
            // Except first-touch pages on a synthetic topology, whose nodes the kernel's
            // answer does not name.
            let synthetic_first_touch =
                d == Distribution::Standard && Topology::current().unwrap().is_synthetic();
            assert_eq!(
                node_bytes(p.as_ptr(), s.len()).unknown() == 0,
                !synthetic_first_touch,
                "{d}: touched pages are known"
            );
            // SAFETY: no reference into the allocation outlives this call.
            unsafe { omp_free(p.as_ptr()) }.unwrap();
        }
    }
}
