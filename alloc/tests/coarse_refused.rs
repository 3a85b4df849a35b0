//! A coarse request that passes the size check but that the kernel refuses (here: the
//! process's address-space limit) does not use up its node's turn of the round robin. Alone in
//! its test binary: it sets the topology variable and lowers the process's address-space limit.

use numatask_alloc::{AllocError, Distribution, NumaVec, Topology, reset_coarse_counter};

#[test]
fn a_coarse_request_the_kernel_refuses_gives_its_turn_back() {
    // SAFETY: the only test of this binary, and nothing has read the environment yet.
    unsafe { std::env::set_var("NUMATASK_TOPOLOGY", "preset:opteron6172") };
    assert_eq!(Topology::current().expect("the preset").num_nodes(), 8);
    let node_of = |v: &NumaVec<u8>| v.node_bytes().dominant_node().expect("placed");
    reset_coarse_counter();
    let first = NumaVec::<u8>::zeroed(1 << 16, Distribution::Coarse).expect("coarse");
    assert_eq!(node_of(&first), 0);

    // 8 GiB fits a preset node (16 GiB), but not under an address-space limit of what the
    // process maps now plus 1 GiB.
    let mut old = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: `old` is a valid out-pointer for getrlimit.
    assert_eq!(unsafe { libc::getrlimit(libc::RLIMIT_AS, &mut old) }, 0);
    let status = std::fs::read_to_string("/proc/self/status").expect("/proc/self/status");
    let vm_kib: u64 = status
        .lines()
        .find_map(|l| l.strip_prefix("VmSize:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .expect("VmSize");
    let limited = libc::rlimit {
        rlim_cur: (vm_kib << 10) + (1 << 30),
        rlim_max: old.rlim_max,
    };
    // SAFETY: lowering the soft limit; restored below.
    assert_eq!(unsafe { libc::setrlimit(libc::RLIMIT_AS, &limited) }, 0);
    let refused = NumaVec::<u8>::zeroed(8 << 30, Distribution::Coarse);
    // SAFETY: restoring the limit read above.
    assert_eq!(unsafe { libc::setrlimit(libc::RLIMIT_AS, &old) }, 0);
    let err = refused.expect_err("8 GiB under a 1 GiB headroom");
    assert!(!matches!(err, AllocError::TooLarge { .. }), "{err}");

    let second = NumaVec::<u8>::zeroed(1 << 16, Distribution::Coarse).expect("coarse");
    assert_eq!(
        node_of(&second),
        1,
        "node 1's turn was not used up by the refusal"
    );
    let third = NumaVec::<u8>::zeroed(1 << 16, Distribution::Coarse).expect("coarse");
    assert_eq!(node_of(&third), 2);
}
