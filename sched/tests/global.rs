//! `RuntimeBuilder::build_global`: the runtime it builds is the one the free functions use,
//! and only the first call (before any use of the global runtime) succeeds. One test, as the
//! global runtime is per process and the steps depend on their order.

mod common;

use common::worker_threads;
use numatask_sched::{BuildError, Runtime, current_num_workers, join, scope};

#[test]
fn build_global_installs_the_runtime_the_free_functions_use_once() {
    let rt = Runtime::builder()
        .num_threads(3)
        .build_global()
        .expect("the first build_global");
    assert_eq!(rt.num_workers(), 3);
    assert!(std::ptr::eq(rt, Runtime::global()));

    // From outside every pool, `join` and `scope` run on the installed runtime.
    let (a, b) = join(current_num_workers, current_num_workers);
    assert_eq!((a, b), (Some(3), Some(3)));
    assert_eq!(scope(|_| current_num_workers()), Some(3));

    // A second call is refused before it starts any worker, and the global runtime stays.
    assert_eq!(worker_threads(), 3);
    let err = Runtime::builder()
        .num_threads(2)
        .build_global()
        .expect_err("a second build_global");
    assert_eq!(err, BuildError::GlobalExists);
    assert!(
        err.to_string().contains("call build_global once, before"),
        "{err}"
    );
    assert_eq!(worker_threads(), 3, "no worker started by the refused call");
    assert_eq!(Runtime::global().num_workers(), 3);
    assert_eq!(scope(|_| current_num_workers()), Some(3));
}
