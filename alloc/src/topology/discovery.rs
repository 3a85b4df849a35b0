//! Reading an hwloc topology into numatask's terms: NUMA nodes in increasing OS index, their
//! cores (or processing units, where there is no core level) numbered node by node, and the
//! size of the last-level cache.

use hwlocality::cpu::cpuset::CpuSet;
use hwlocality::object::TopologyObject;
use hwlocality::object::attributes::ObjectAttributes;
use hwlocality::object::types::ObjectType;

use super::{Core, NumaNode};

pub(super) fn os_indices(set: &CpuSet) -> Vec<usize> {
    set.iter_set().map(usize::from).collect()
}

/// The cores of `hw`, or its processing units when it has no core level (a synthetic
/// description such as `NUMANode:2 PU:4`, some virtual machines): each is then a core.
pub(super) fn core_objects(hw: &hwlocality::Topology) -> impl Iterator<Item = &TopologyObject> {
    let kind = if hw.objects_with_type(ObjectType::Core).next().is_some() {
        ObjectType::Core
    } else {
        ObjectType::PU
    };
    hw.objects_with_type(kind)
}

pub(super) fn read_nodes(hw: &hwlocality::Topology) -> Vec<NumaNode> {
    let mut numa: Vec<&TopologyObject> = hw.objects_with_type(ObjectType::NUMANode).collect();
    numa.sort_by_key(|n| n.os_index());
    let allowed = hw.allowed_cpuset();
    let mut nodes: Vec<NumaNode> = numa
        .iter()
        .enumerate()
        .map(|(index, obj)| NumaNode {
            index,
            os_index: obj.os_index().unwrap_or(index),
            cores: Vec::new(),
            memory_bytes: match obj.attributes() {
                Some(ObjectAttributes::NUMANode(a)) => a.local_memory().map_or(0, |m| m.get()),
                _ => 0,
            },
        })
        .collect();
    for core in core_objects(hw) {
        let Some(cpuset) = core.cpuset() else {
            continue;
        };
        let pus = os_indices(&(&*cpuset & &*allowed));
        if pus.is_empty() {
            continue;
        }
        // The core belongs to the first node whose cpuset contains it (memory-only nodes have
        // empty cpusets and get no cores); a core that straddles nodes (a synthetic
        // description with NUMA levels below the cores, `core:2 numa:2 pu:1`) to the node of
        // its first processing unit.
        let node = numa
            .iter()
            .position(|n| {
                n.cpuset()
                    .is_some_and(|ns| ns.includes(&*cpuset) && !ns.is_empty())
            })
            .or_else(|| {
                numa.iter()
                    .position(|n| n.cpuset().is_some_and(|ns| ns.is_set(pus[0])))
            });
        if let Some(node) = node {
            nodes[node].cores.push(Core {
                index: 0,
                node,
                pus,
            });
        }
    }
    let mut next = 0;
    for node in &mut nodes {
        for core in &mut node.cores {
            core.index = next;
            next += 1;
        }
    }
    nodes
}

/// Size of the last-level cache: the largest data or unified cache of the deepest level.
pub(super) fn read_llc_bytes(hw: &hwlocality::Topology) -> u64 {
    let mut best: (usize, u64) = (0, 0);
    for ty in [
        ObjectType::L1Cache,
        ObjectType::L2Cache,
        ObjectType::L3Cache,
        ObjectType::L4Cache,
        ObjectType::L5Cache,
    ] {
        for obj in hw.objects_with_type(ty) {
            if let Some(ObjectAttributes::Cache(c)) = obj.attributes() {
                let size = c.size().map_or(0, |s| s.get());
                if size > 0 && (c.depth(), size) > best {
                    best = (c.depth(), size);
                }
            }
        }
    }
    best.1
}

#[cfg(test)]
mod tests {
    use crate::topology::*;

    #[test]
    fn a_topology_without_a_core_level_counts_each_processing_unit_as_a_core() {
        let t = TopologyBuilder::synthetic("NUMANode:2 PU:2")
            .build()
            .unwrap();
        assert_eq!(
            (t.num_nodes(), t.num_cores(), t.cores_per_node()),
            (2, 4, 2)
        );
        assert_eq!(t.nodes()[1].cores[0].pus.len(), 1);
        assert_eq!(t.usable_cores(), [0, 1, 2, 3]);
    }

    #[test]
    fn cores_straddling_numa_nodes_go_to_the_node_of_their_first_processing_unit() {
        let t = TopologyBuilder::synthetic("core:2 numa:2 pu:1")
            .build()
            .unwrap();
        assert_eq!(t.num_nodes(), 4);
        let cores: Vec<(usize, Vec<usize>)> = t
            .nodes()
            .iter()
            .flat_map(|n| n.cores.iter().map(|c| (c.node, c.pus.clone())))
            .collect();
        assert_eq!(cores, [(0, vec![0, 1]), (2, vec![2, 3])]);
    }
}
