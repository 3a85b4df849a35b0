//! Coarse and fine placement on the core paper's 8-node machine (the synthetic `Opteron6172`
//! preset), read from the placement registry: the same checks as the QEMU guests'
//! (`multinode.rs`), on every CI machine. (Alone in its test binary: it sets the process's
//! topology variable before anything reads it, and no other test moves the coarse counter.)

use numatask_alloc::{Distribution, NumaVec, Topology, reset_coarse_counter};

#[test]
fn coarse_allocations_rotate_over_the_nodes_from_node_0_and_fine_ones_spread_evenly() {
    // SAFETY: the only test of this binary, and nothing has read the environment yet.
    unsafe { std::env::set_var("NUMATASK_TOPOLOGY", "preset:opteron6172") };
    let nodes = Topology::current().expect("the preset").num_nodes();
    assert_eq!(nodes, 8);
    let page = 4096;

    reset_coarse_counter();
    let coarse: Vec<NumaVec<u8>> = (0..nodes + 2)
        .map(|_| NumaVec::zeroed(3 * page + 100, Distribution::Coarse).expect("coarse"))
        .collect();
    for (i, v) in coarse.iter().enumerate() {
        let bytes = v.node_bytes();
        assert_eq!(
            bytes.on(i % nodes),
            bytes.known(),
            "allocation {i} lies wholly on node {}: {bytes:?}",
            i % nodes
        );
        assert_eq!(bytes.known(), (3 * page + 100) as u64);
    }
    // A reset starts the round robin at node 0 again.
    reset_coarse_counter();
    let again = NumaVec::<u8>::zeroed(page, Distribution::Coarse).expect("coarse");
    assert_eq!(again.node_bytes().on(0), page as u64);

    // Fine: 64 pages, 8 on each node.
    let fine = NumaVec::<u8>::zeroed(64 * page, Distribution::Fine).expect("fine");
    let bytes = fine.node_bytes();
    for node in 0..nodes {
        assert_eq!(bytes.on(node), 8 * page as u64, "node {node}: {bytes:?}");
    }
}
