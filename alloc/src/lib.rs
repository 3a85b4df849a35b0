//! # numatask-alloc
//!
//! NUMA topology discovery (through hwloc) and the data-distribution allocator of Muddukrishna,
//! Jonsson and Brorsson, "Locality-Aware Task Scheduling and Data Distribution for OpenMP
//! Programs on NUMA Systems and Manycore Processors" (2015):
//!
//! - [`Distribution::Standard`]: pages go where they are first touched (the OS default);
//! - [`Distribution::Fine`]: pages are dealt round-robin over all nodes;
//! - [`Distribution::Coarse`]: each allocation wholly on one node, nodes taken round-robin.
//!
//! [`omp_malloc`] follows the `OMP_DATA_DISTRIBUTION` environment variable;
//! [`omp_malloc_specific`] overrides it for one allocation. [`NumaVec`] is the safe owned form.
//! The allocator records where every page was meant to go, so [`node_bytes`] answers "how many
//! bytes of this range live on each node" without a system call for fine and coarse memory.
//!
//! ```
//! use numatask_alloc::{Distribution, NumaVec, Topology, node_bytes, omp_free, omp_malloc_specific};
//!
//! let topo = Topology::current()?;
//! // One allocation, wholly on one node, whatever OMP_DATA_DISTRIBUTION says.
//! let p = omp_malloc_specific(1 << 20, Distribution::Coarse)?;
//! let d = node_bytes(p.as_ptr(), 1 << 20);
//! assert_eq!(d.known(), 1 << 20);
//! assert_eq!(d.per_node().iter().filter(|&&b| b > 0).count(), 1);
//! // SAFETY: `p` came from omp_malloc_specific and nothing refers into it any more.
//! unsafe { omp_free(p.as_ptr()) }?;
//!
//! // The safe form: pages interleaved over every node.
//! let v = NumaVec::<f64>::filled(1 << 16, 1.0, Distribution::Fine)?;
//! assert_eq!(v.node_bytes().known(), (1 << 16) * 8);
//! assert!(topo.num_nodes() >= 1);
//! # Ok::<(), numatask_alloc::AllocError>(())
//! ```

mod allocator;
mod cache;
mod distribution;
mod env;
mod error;
pub mod ffi;
mod huge;
mod numa_alloc;
mod numa_vec;
mod registry;
mod topology;

/// Helpers that the scheduler crate (`numatask-sched`) shares with this one, so that both read
/// environment values by one rule and quote them alike in messages. Not part of the API:
/// programs have no use for them, and they may change without notice.
#[doc(hidden)]
pub mod sched_support {
    pub use crate::env::{is_blank, shown, trim_blanks};
}

pub use allocator::{
    allocation_size, omp_free, omp_malloc, omp_malloc_on_node, omp_malloc_specific,
    reset_coarse_counter,
};
pub use cache::{DEFAULT_CACHE_LIMIT, cached, release_cache, set_cache_limit};
pub use distribution::{DISTRIBUTION_ENV, Distribution};
pub use error::AllocError;
pub use huge::{HUGE_PAGE, HUGE_PAGES_ENV, Pages, huge_pages, set_huge_pages, with_pages};
pub use numa_alloc::{NumaAlloc, NumaGlobal};
pub use numa_vec::{NumaVec, Place, Zeroable};
pub use registry::{
    NodeBytes, STALE_AFTER_MS, accumulate_node_bytes, distribution_of, first_touch_unit,
    node_bytes, resident_nodes,
};
pub use topology::{
    Core, CoreGroup, DistanceSource, NumaNode, Pinning, Preset, TOPOLOGY_ENV, Topology,
    TopologyBuilder, TopologySource,
};

/// The test files' directory guard, shared with the integration tests.
#[cfg(test)]
#[path = "../tests/common/temp_dir.rs"]
mod temp_dir;

/// The base page size of the machine (the unit of placement).
pub fn page_size() -> usize {
    static PAGE: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
    *PAGE.get_or_init(|| {
        // SAFETY: sysconf has no memory-safety preconditions.
        let size = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
        usize::try_from(size)
            .ok()
            .filter(|&s| s.is_power_of_two())
            .unwrap_or(4096)
    })
}

/// `log2` of [`page_size`] (a power of two), for page arithmetic by shifts.
#[inline]
pub(crate) fn page_shift() -> u32 {
    page_size().trailing_zeros()
}
