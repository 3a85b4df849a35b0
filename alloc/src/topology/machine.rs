//! The [`Topology`] type: a machine's NUMA nodes with their cores and memory, the distances
//! between nodes and the size of the last-level cache, and the queries on them. A topology is
//! built by [`TopologyBuilder`]; [`Topology::current`] is the one the
//! process uses.

use std::fmt;
use std::sync::{Arc, OnceLock};

#[cfg(not(miri))]
use hwlocality::object::TopologyObject;
#[cfg(not(miri))]
use hwlocality::object::attributes::ObjectAttributes;
#[cfg(not(miri))]
use hwlocality::object::types::ObjectType;
#[cfg(not(miri))]
use hwlocality::topology::export::xml::XMLExportFlags;

use super::{DistanceSource, Preset, TopologyBuilder, TopologySource};
use crate::error::AllocError;

/// The environment variable that selects a synthetic topology.
pub const TOPOLOGY_ENV: &str = "NUMATASK_TOPOLOGY";

/// One NUMA node.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NumaNode {
    /// Index of the node in this topology (`0..num_nodes()`, increasing OS index).
    pub index: usize,
    /// The node's number for the operating system (what `numactl -H` shows).
    pub os_index: usize,
    /// Cores attached to this node.
    pub cores: Vec<Core>,
    /// Memory local to the node, in bytes (0 when unknown, as for the nodes of a synthetic
    /// description that gives none: `numa:2(memory=16GB)` gives them).
    pub memory_bytes: u64,
}

/// One core and its hardware threads.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Core {
    /// Index of the core in this topology (`0..num_cores()`, node by node).
    pub index: usize,
    /// Index of the node the core belongs to.
    pub node: usize,
    /// OS indices of the core's processing units (hardware threads).
    pub pus: Vec<usize>,
}

/// A machine's NUMA structure. Cheap to query; build once and share (see [`Topology::current`]).
pub struct Topology {
    /// The hwloc topology (of the real machine unless `synthetic`).
    #[cfg(not(miri))]
    pub(super) hw: hwlocality::Topology,
    pub(super) source: TopologySource,
    pub(super) synthetic: bool,
    pub(super) nodes: Vec<NumaNode>,
    /// Row-major `n x n`.
    pub(super) distances: Vec<u32>,
    pub(super) distance_source: DistanceSource,
    pub(super) llc_bytes: u64,
}

impl fmt::Debug for Topology {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Topology")
            .field("source", &self.source)
            .field("synthetic", &self.synthetic)
            .field("nodes", &self.nodes)
            .field("distances", &self.distances)
            .field("distance_source", &self.distance_source)
            .field("llc_bytes", &self.llc_bytes)
            .finish()
    }
}

static CURRENT: OnceLock<Result<Arc<Topology>, AllocError>> = OnceLock::new();

impl Topology {
    /// The process-wide topology: `NUMATASK_TOPOLOGY` when set, the real machine otherwise
    /// (an error when hwloc's own variables make it describe another topology: see the
    /// module docs). Read once; every later call returns the same topology (or the same
    /// error).
    pub fn current() -> Result<Arc<Topology>, AllocError> {
        CURRENT
            .get_or_init(|| {
                let builder = match std::env::var(TOPOLOGY_ENV) {
                    Ok(spec) => {
                        // Every error of a topology the variable asks for names the variable
                        // and its whole value.
                        let from_env = TopologyBuilder::from_spec(&spec).and_then(|b| b.build());
                        return from_env.map(Arc::new).map_err(|e| match e {
                            AllocError::InvalidTopology { reason, .. } => AllocError::InvalidEnv {
                                var: TOPOLOGY_ENV,
                                value: spec.clone(),
                                expected: match reason.strip_prefix("expected ") {
                                    Some(syntax) => syntax.to_owned(),
                                    // Well formed, but what it names could not be built.
                                    None => format!("a topology that can be built ({reason})"),
                                },
                            },
                            other => other,
                        });
                    }
                    Err(std::env::VarError::NotPresent) => TopologyBuilder::system(),
                    Err(std::env::VarError::NotUnicode(v)) => {
                        return Err(AllocError::InvalidEnv {
                            var: TOPOLOGY_ENV,
                            value: v.to_string_lossy().into_owned(),
                            expected: "a UTF-8 value".into(),
                        });
                    }
                };
                builder.build().map(Arc::new)
            })
            .clone()
    }

    /// The real machine (shorthand for `TopologyBuilder::system().build()`).
    pub fn system() -> Result<Topology, AllocError> {
        TopologyBuilder::system().build()
    }

    /// A preset (shorthand for `TopologyBuilder::preset(p).build()`).
    pub fn preset(preset: Preset) -> Result<Topology, AllocError> {
        TopologyBuilder::preset(preset).build()
    }

    /// What the topology was built from.
    pub fn source(&self) -> &TopologySource {
        &self.source
    }

    /// True when this is not the machine the process runs on: placement is recorded, not
    /// enforced, and threads are pinned onto the real cores round-robin.
    pub fn is_synthetic(&self) -> bool {
        self.synthetic
    }

    /// The NUMA nodes, in increasing OS index.
    pub fn nodes(&self) -> &[NumaNode] {
        &self.nodes
    }

    /// Number of NUMA nodes.
    pub fn num_nodes(&self) -> usize {
        self.nodes.len()
    }

    /// The node with topology index `node`, or an error naming the nodes that exist.
    pub fn node(&self, node: usize) -> Result<&NumaNode, AllocError> {
        self.nodes.get(node).ok_or(AllocError::NoSuchNode {
            node,
            num_nodes: self.nodes.len(),
        })
    }

    /// All cores, node by node.
    pub fn cores(&self) -> impl Iterator<Item = &Core> {
        self.nodes.iter().flat_map(|n| n.cores.iter())
    }

    /// Total number of cores.
    pub fn num_cores(&self) -> usize {
        self.nodes.iter().map(|n| n.cores.len()).sum()
    }

    /// Cores per node, the paper's `C`: the largest node's core count (nodes of one machine
    /// normally have the same number), at least 1.
    pub fn cores_per_node(&self) -> usize {
        self.nodes
            .iter()
            .map(|n| n.cores.len())
            .max()
            .unwrap_or(1)
            .max(1)
    }

    /// Distance from node `from` to node `to` (10 = local). Panics if an index is out of range,
    /// like slice indexing; use [`Topology::node`] to validate user input first.
    #[track_caller]
    pub fn distance(&self, from: usize, to: usize) -> u32 {
        let n = self.nodes.len();
        assert!(
            from < n && to < n,
            "node index out of range: ({from}, {to}) with {n} nodes"
        );
        self.distances[from * n + to]
    }

    /// The whole distance matrix, row-major.
    pub fn distance_matrix(&self) -> &[u32] {
        &self.distances
    }

    /// Where the distance matrix came from.
    pub fn distance_source(&self) -> DistanceSource {
        self.distance_source
    }

    /// Size of one last-level cache in bytes (0 when hwloc reports no cache).
    pub fn llc_bytes(&self) -> u64 {
        self.llc_bytes
    }

    /// Total memory of all nodes in bytes (`u64::MAX` for a synthetic description whose nodes
    /// together declare more).
    pub fn total_memory(&self) -> u64 {
        self.nodes
            .iter()
            .fold(0, |sum, n| sum.saturating_add(n.memory_bytes))
    }

    /// The hwloc topology of the real machine, for binding memory; `None` when synthetic.
    pub(crate) fn hwloc(&self) -> Option<&hwlocality::Topology> {
        #[cfg(miri)]
        return None;
        #[cfg(not(miri))]
        (!self.synthetic).then_some(&self.hw)
    }

    /// Writes the topology, with its distance matrix, as an hwloc XML file that
    /// `NUMATASK_TOPOLOGY=xml:<path>` (and hwloc's `lstopo --input <path>`) loads back. A
    /// synthetic node whose description gave no memory (0 here: unknown) is written with the
    /// 1 GiB hwloc gives it, which the file then declares.
    pub fn export_xml(&self, path: &std::path::Path) -> Result<(), AllocError> {
        #[cfg(miri)]
        return Err(AllocError::InvalidTopology {
            spec: format!("xml:{}", path.display()),
            reason: "miri stub".into(),
        });
        #[cfg(not(miri))]
        self.hw
            .export_xml_file(Some(path), XMLExportFlags::empty())
            .map_err(|e| AllocError::InvalidTopology {
                spec: format!("xml:{}", path.display()),
                reason: format!("could not write the XML file: {e}"),
            })
    }

    /// The cores (indices, increasing) grouped by what they share, `kind`: one group per
    /// package (socket) or per last-level cache, in the order of their first core. Groups
    /// without a core are left out; a topology that does not describe the kind (some
    /// virtual machines have no package, a synthetic string may have no cache) gives one
    /// group of every core.
    pub fn core_groups(&self, kind: CoreGroup) -> Vec<Vec<usize>> {
        #[cfg(miri)]
        {
            let _ = kind;
            // Miri stub: one group (one LLC / package) per node.
            return self
                .nodes
                .iter()
                .map(|n| n.cores.iter().map(|c| c.index).collect())
                .collect();
        }
        #[cfg(not(miri))]
        {
            let objects: Vec<&TopologyObject> = match kind {
                CoreGroup::Package => self.hw.objects_with_type(ObjectType::Package).collect(),
                CoreGroup::LastLevelCache => {
                    // The data or unified caches of the deepest cache level present.
                    let caches: Vec<(usize, &TopologyObject)> = [
                        ObjectType::L1Cache,
                        ObjectType::L2Cache,
                        ObjectType::L3Cache,
                        ObjectType::L4Cache,
                        ObjectType::L5Cache,
                    ]
                    .into_iter()
                    .flat_map(|ty| self.hw.objects_with_type(ty))
                    .filter_map(|obj| match obj.attributes() {
                        Some(ObjectAttributes::Cache(c)) => Some((c.depth(), obj)),
                        _ => None,
                    })
                    .collect();
                    let deepest = caches.iter().map(|&(d, _)| d).max();
                    caches
                        .into_iter()
                        .filter(|&(d, _)| Some(d) == deepest)
                        .map(|(_, obj)| obj)
                        .collect()
                }
            };
            let mut groups: Vec<Vec<usize>> = objects
                .iter()
                .filter_map(|obj| obj.cpuset())
                .map(|set| {
                    self.cores()
                        .filter(|c| c.pus.iter().any(|&pu| set.is_set(pu)))
                        .map(|c| c.index)
                        .collect::<Vec<usize>>()
                })
                .filter(|g| !g.is_empty())
                .collect();
            groups.sort();
            groups.dedup();
            if groups.is_empty() {
                groups.push(self.cores().map(|c| c.index).collect());
            }
            groups
        }
    }
}

/// What cores share, for [`Topology::core_groups`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CoreGroup {
    /// A package (a socket).
    Package,
    /// A last-level cache.
    LastLevelCache,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::topology::distances::LOCAL_DISTANCE;
    use crate::topology::*;

    #[test]
    fn preset_has_eight_nodes_of_six_cores_and_max_distance_22() {
        let t = Topology::preset(Preset::Opteron6172).unwrap();
        assert_eq!(t.num_nodes(), 8);
        assert!(t.nodes().iter().all(|n| n.cores.len() == 6));
        assert_eq!(t.cores_per_node(), 6);
        assert_eq!(t.num_cores(), 48);
        assert_eq!(t.distance_matrix().iter().copied().max(), Some(22));
        assert_eq!(t.llc_bytes(), 5 * 1024 * 1024);
        assert!(t.is_synthetic());
        assert_eq!(t.distance_source(), DistanceSource::Given);
        for i in 0..8 {
            assert_eq!(t.distance(i, i), 10);
            for j in 0..8 {
                assert_eq!(
                    t.distance(i, j),
                    t.distance(j, i),
                    "matrix must be symmetric"
                );
            }
        }
    }

    #[test]
    fn cores_are_numbered_node_by_node() {
        let t = Topology::preset(Preset::Opteron6172).unwrap();
        for (i, core) in t.cores().enumerate() {
            assert_eq!(core.index, i);
            assert_eq!(core.node, i / 6);
        }
    }

    #[test]
    fn total_memory_saturates_instead_of_overflowing() {
        let t = TopologyBuilder::synthetic("numa:2(memory=18446744073709551615) core:1 pu:1")
            .build()
            .unwrap();
        assert_eq!(t.total_memory(), u64::MAX);
    }

    #[test]
    fn system_topology_has_a_node_with_cores() {
        let t = Topology::system().unwrap();
        assert!(t.num_nodes() >= 1);
        assert!(t.num_cores() >= 1);
        assert!(!t.is_synthetic());
        assert_eq!(t.distance(0, 0), LOCAL_DISTANCE);
    }

    #[test]
    fn cores_group_by_package_and_by_last_level_cache() {
        let t = Topology::preset(Preset::Opteron6172).unwrap();
        // Four packages of two dies of six cores; an L3 per die.
        let packages = t.core_groups(CoreGroup::Package);
        assert_eq!(packages.len(), 4);
        assert_eq!(packages[1], (12..24).collect::<Vec<_>>());
        let caches = t.core_groups(CoreGroup::LastLevelCache);
        assert_eq!(caches.len(), 8);
        assert_eq!(caches[7], (42..48).collect::<Vec<_>>());
        // No cache in the description: one group of every core.
        let bare = TopologyBuilder::synthetic("numa:2 core:2 pu:1")
            .build()
            .unwrap();
        assert_eq!(
            bare.core_groups(CoreGroup::LastLevelCache),
            [vec![0, 1, 2, 3]]
        );
        // The real machine: every core in exactly one group of each kind.
        let sys = Topology::system().unwrap();
        for kind in [CoreGroup::Package, CoreGroup::LastLevelCache] {
            let mut all: Vec<usize> = sys.core_groups(kind).concat();
            all.sort_unstable();
            assert_eq!(all, (0..sys.num_cores()).collect::<Vec<_>>(), "{kind:?}");
        }
    }
}
