//! Multi-node tests, run inside QEMU guests by `scripts/numa-vm-test.sh`.
//!
//! PLACEHOLDER written with the VM harness: the allocator's real multi-node tests replace
//! this file. The contract with the harness is what matters here:
//! - every test is `#[ignore]`d, because the host has a single NUMA node;
//! - the guest runs this binary with `--ignored --test-threads=1`;
//! - `NUMATASK_VM_NODES` holds the number of NUMA nodes QEMU was told to create.

use std::fs;

/// Node count the harness configured, from `NUMATASK_VM_NODES`.
fn expected_nodes() -> usize {
    let raw = std::env::var("NUMATASK_VM_NODES")
        .expect("NUMATASK_VM_NODES is unset: run this through scripts/numa-vm-test.sh");
    raw.parse()
        .unwrap_or_else(|e| panic!("NUMATASK_VM_NODES={raw:?} is not a number: {e}"))
}

/// Ids of the `nodeN` directories under /sys/devices/system/node, sorted.
fn sysfs_nodes() -> Vec<usize> {
    let mut ids: Vec<usize> = fs::read_dir("/sys/devices/system/node")
        .expect("read /sys/devices/system/node")
        .filter_map(|e| {
            let name = e.ok()?.file_name().into_string().ok()?;
            name.strip_prefix("node")?.parse().ok()
        })
        .collect();
    ids.sort_unstable();
    ids
}

#[test]
#[ignore = "needs several NUMA nodes: run via scripts/numa-vm-test.sh"]
fn kernel_sees_configured_nodes() {
    let n = expected_nodes();
    assert_eq!(sysfs_nodes(), (0..n).collect::<Vec<_>>());
    // Each node's distance row has one entry per node and 10 on the diagonal.
    for i in 0..n {
        let row = fs::read_to_string(format!("/sys/devices/system/node/node{i}/distance"))
            .expect("read node distance");
        let d: Vec<u32> = row.split_whitespace().map(|v| v.parse().unwrap()).collect();
        assert_eq!(d.len(), n, "node{i} distance row: {row:?}");
        assert_eq!(d[i], 10, "node{i} local distance: {row:?}");
    }
}

#[test]
#[ignore = "needs several NUMA nodes: run via scripts/numa-vm-test.sh"]
fn hwloc_sees_configured_nodes() {
    use hwlocality::{Topology, object::types::ObjectType};
    let topology = Topology::new().expect("hwloc topology");
    let numa = topology.objects_with_type(ObjectType::NUMANode).count();
    assert_eq!(numa, expected_nodes());
}
