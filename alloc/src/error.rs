//! The allocator's error type: every variant says what was wrong and what is accepted.

use thiserror::Error;

/// Everything that can go wrong in topology discovery and allocation.
#[derive(Clone, Debug, Error, PartialEq, Eq)]
#[non_exhaustive]
pub enum AllocError {
    /// An environment variable holds a value numatask does not accept.
    #[error("{var}='{}': expected {expected}", crate::env::shown(.value))]
    InvalidEnv {
        /// The variable.
        var: &'static str,
        /// Its value.
        value: String,
        /// What is accepted.
        expected: String,
    },
    /// A distribution name that is not standard, fine or coarse.
    #[error(
        "unknown data distribution '{}': expected standard, fine or coarse",
        crate::env::shown(.0)
    )]
    InvalidDistribution(String),
    /// A distribution code from C (`omp_malloc_specific`) that is none of the
    /// `OMP_DISTRIBUTION_*` values.
    #[error("unknown data distribution code {0}: expected 0 (standard), 1 (fine) or 2 (coarse)")]
    InvalidDistributionCode(i32),
    /// An element type aligned more strictly than a page, which page mappings cannot honour.
    #[error("cannot allocate elements aligned to {align} bytes: at most the page size {page}")]
    Alignment {
        /// The element type's alignment.
        align: usize,
        /// The page size.
        page: usize,
    },
    /// A topology description hwloc or numatask cannot use.
    #[error("invalid topology '{}': {reason}", crate::env::shown(.spec))]
    InvalidTopology {
        /// The description.
        spec: String,
        /// Why it was rejected.
        reason: String,
    },
    /// An allocation of zero bytes through the raw API (the owned types accept length 0).
    #[error("cannot allocate 0 bytes: the raw allocator returns only non-empty page mappings")]
    ZeroSize,
    /// More memory than the machine (or, for a single-node placement, the node) has.
    #[error("cannot allocate {requested} bytes: {what} has {available} bytes")]
    TooLarge {
        /// Bytes asked for.
        requested: u128,
        /// Bytes available.
        available: u64,
        /// What the limit belongs to ("the machine", "node 3").
        what: String,
    },
    /// A NUMA node index that is not in the topology.
    #[error("NUMA node {node} does not exist: {}", numbered("node", *.num_nodes))]
    NoSuchNode {
        /// The index asked for.
        node: usize,
        /// How many nodes exist.
        num_nodes: usize,
    },
    /// A core index that is not in the topology.
    #[error("core {core} does not exist: {}", numbered("core", *.num_cores))]
    NoSuchCore {
        /// The index asked for.
        core: usize,
        /// How many cores exist.
        num_cores: usize,
    },
    /// A processing unit (OS index) that is not in the topology.
    #[error("processing unit {pu} does not exist in the topology")]
    NoSuchPu {
        /// The OS index asked for.
        pu: usize,
    },
    /// A non-null pointer given to `omp_free` that this allocator did not return (or already
    /// freed); null is accepted and ignored.
    #[error("pointer {0:#x} was not returned by numatask's allocator or was already freed")]
    UnknownPointer(usize),
    /// The kernel refused to map memory.
    #[error("mmap of {size} bytes failed: {reason}")]
    Map {
        /// Bytes asked for.
        size: usize,
        /// The OS error.
        reason: String,
    },
    /// The kernel refused to bind memory to the nodes asked for.
    #[error("binding {size} bytes to NUMA node(s) {nodes} failed: {reason}")]
    Bind {
        /// Bytes of the range.
        size: usize,
        /// OS indices of the nodes.
        nodes: String,
        /// The OS error.
        reason: String,
    },
    /// Pinning a thread to an empty set of processing units was asked for.
    #[error("cannot pin a thread to an empty set of processing units")]
    EmptyPlace,
    /// Pinning a thread failed.
    #[error("pinning the thread to core {core} failed: {reason}")]
    Pin {
        /// The core.
        core: usize,
        /// Why.
        reason: String,
    },
    /// The kernel could not report where pages are.
    #[error("querying page locations failed: {0}")]
    Query(String),
}

/// "the topology has 8 nodes, 0 to 7": how many there are and their numbers, in words (Rust's
/// `0..8` reads as including 8 to a C or OpenMP user).
fn numbered(what: &str, count: usize) -> String {
    match count {
        0 => format!("the topology has no {what}s"),
        1 => format!("the topology has 1 {what}, 0"),
        n => format!("the topology has {n} {what}s, 0 to {}", n - 1),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_missing_node_or_core_names_how_many_there_are_and_their_numbers() {
        let e = AllocError::NoSuchNode {
            node: 8,
            num_nodes: 8,
        };
        assert_eq!(
            e.to_string(),
            "NUMA node 8 does not exist: the topology has 8 nodes, 0 to 7"
        );
        let e = AllocError::NoSuchNode {
            node: 2,
            num_nodes: 1,
        };
        assert_eq!(
            e.to_string(),
            "NUMA node 2 does not exist: the topology has 1 node, 0"
        );
        let e = AllocError::NoSuchCore {
            core: 3,
            num_cores: 2,
        };
        assert_eq!(
            e.to_string(),
            "core 3 does not exist: the topology has 2 cores, 0 to 1"
        );
    }
}
