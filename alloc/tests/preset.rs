//! The allocator on the core paper's 8-node machine (the synthetic `Opteron6172` preset), where
//! placement is recorded per node without the kernel. (Alone in its test binary: it sets the
//! process's topology variable before anything reads it.)

use numatask_alloc::{Distribution, NumaVec, Place, Topology, reset_coarse_counter};

#[test]
fn a_clone_goes_where_the_original_was_asked_to_go() {
    // SAFETY: the only test of this binary, and nothing has read the environment yet.
    unsafe { std::env::set_var("NUMATASK_TOPOLOGY", "preset:opteron6172") };
    let last = Topology::current().expect("the preset").num_nodes() - 1;
    assert_eq!(last, 7);
    let on_last = NumaVec::<u8>::filled(1 << 16, 1, Place::OnNode(last)).expect("on node 7");
    reset_coarse_counter();
    let first = NumaVec::<u8>::zeroed(1 << 16, Distribution::Coarse).expect("coarse");
    let copy = on_last.clone();
    assert_eq!(copy.place(), Place::OnNode(last));
    assert_eq!(
        copy.node_bytes().dominant_node(),
        Some(last),
        "the copy is on node 7 too"
    );
    assert_eq!(copy.node_bytes().on(last), 1 << 16);
    // Cloning a node-placed vector does not take a turn of the coarse round robin.
    let second = NumaVec::<u8>::zeroed(1 << 16, Distribution::Coarse).expect("coarse");
    let node_of = |v: &NumaVec<u8>| v.node_bytes().dominant_node().expect("placed");
    assert_eq!(node_of(&second), (node_of(&first) + 1) % 8);
    // A coarse vector's copy is coarse: on the next node.
    let coarse_copy = second.clone();
    assert_eq!(
        coarse_copy.place(),
        Place::Distributed(Distribution::Coarse)
    );
    assert_eq!(node_of(&coarse_copy), (node_of(&second) + 1) % 8);
    // A preset node has 16 GiB: more on one node is refused, naming the node.
    let err = NumaVec::<u8>::zeroed(20 << 30, Place::OnNode(3)).expect_err("20 GiB on node 3");
    assert!(
        matches!(&err, numatask_alloc::AllocError::TooLarge { what, .. } if what == "node 3"),
        "{err}"
    );
}
