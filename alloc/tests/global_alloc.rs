//! `NumaGlobal` as the global allocator, on the core paper's 8-node machine (the synthetic
//! `Opteron6172` preset) with `OMP_DATA_DISTRIBUTION=coarse`: big buffers lie wholly on one
//! node, the nodes in turn; small ones are the system allocator's; growing a vector past the
//! threshold moves it into placed memory. (Alone in its test binary: it sets the process's
//! environment before the allocator reads it.)

use numatask_alloc::{NumaGlobal, allocation_size, node_bytes};

#[global_allocator]
static ALLOC: NumaGlobal = NumaGlobal::new(1 << 20);

#[test]
fn big_buffers_follow_the_policy_small_ones_the_system_allocator() {
    // SAFETY: the only test of this binary; no placed allocation happened yet (the harness's
    // own are small), so nothing has read these variables.
    unsafe {
        std::env::set_var("NUMATASK_TOPOLOGY", "preset:opteron6172");
        std::env::set_var("OMP_DATA_DISTRIBUTION", "coarse");
    }
    let a = vec![1.0f64; 1 << 18]; // 2 MiB
    let b = vec![2u8; 3 << 20];
    let node = |p: *const u8, len: usize| {
        let d = node_bytes(p, len);
        assert_eq!(d.unknown(), 0, "placed memory");
        d.dominant_node().expect("on a node")
    };
    let (na, nb) = (node(a.as_ptr().cast(), 8 << 18), node(b.as_ptr(), 3 << 20));
    assert_eq!(nb, (na + 1) % 8, "coarse: the next buffer on the next node");
    assert_eq!(node_bytes(a.as_ptr().cast(), 8 << 18).on(na), 8 << 18);
    assert!(a.iter().all(|&x| x == 1.0) && b.iter().all(|&x| x == 2));

    let small = vec![3u32; 1000];
    assert_eq!(
        node_bytes(small.as_ptr().cast(), 4000).unknown(),
        4000,
        "the system's"
    );

    // Growing past the threshold moves the data into placed memory, intact.
    let mut grow: Vec<u32> = (0..1000).collect();
    for i in 1000..(1 << 19) {
        grow.push(i);
    }
    assert!(
        allocation_size(grow.as_ptr().cast()).is_some(),
        "placed once big"
    );
    assert!(grow.iter().enumerate().all(|(i, &x)| x == i as u32));
    drop((a, b, small, grow));
}
