//! Miri stub (no hwloc through FFI): a synthetic topology of `MIRI_NODES` (default 2) nodes of
//! `MIRI_CORES` (default 2) cores, one PU each, distances 10/20, a 1 MiB LLC.

use super::distances::default_matrix;
use super::{Core, DistanceSource, NumaNode, Topology, TopologySource};

pub(super) fn topology(source: TopologySource) -> Topology {
    let get = |v: &str, d: usize| {
        std::env::var(v)
            .ok()
            .and_then(|s| s.parse().ok())
            .unwrap_or(d)
    };
    let (n, c) = (get("MIRI_NODES", 2), get("MIRI_CORES", 2));
    let nodes = (0..n)
        .map(|i| NumaNode {
            index: i,
            os_index: i,
            cores: (0..c)
                .map(|k| Core {
                    index: i * c + k,
                    node: i,
                    pus: vec![i * c + k],
                })
                .collect(),
            memory_bytes: 1 << 30,
        })
        .collect();
    Topology {
        source,
        synthetic: true,
        nodes,
        distances: default_matrix(n),
        distance_source: DistanceSource::Default,
        llc_bytes: 1 << 20,
    }
}
