//! Where workers run, the builder's checks, and what OMP_DISPLAY_ENV shows.

use std::sync::Arc;

use numatask_alloc::{Preset, Topology};
use numatask_sched::{Runtime, SchedError};

fn opteron() -> Arc<Topology> {
    Arc::new(Topology::preset(Preset::Opteron6172).expect("the preset builds"))
}

#[test]
fn workers_fill_one_node_before_the_next() {
    let rt = Runtime::builder()
        .topology(opteron())
        .num_threads(14)
        .build()
        .expect("runtime starts");
    for (i, place) in rt.places().iter().enumerate() {
        assert_eq!(place.index, i);
        assert_eq!(place.core, i, "worker i runs on core i");
        assert_eq!(place.node, i / 6, "6 cores per node, numbered node by node");
    }
    // A synthetic topology is mapped onto the real cores: pinning succeeds or is reported.
    assert_eq!(rt.pinning().len(), 14);
    assert!(rt.pinning().iter().all(Option::is_some));
    let seen = rt.scope(|s| {
        let hs: Vec<_> = (0..64)
            .map(|_| s.spawn_with_result(|s| (s.worker_index(), s.node())))
            .collect();
        s.taskwait();
        hs.into_iter().map(|h| h.join()).collect::<Vec<_>>()
    });
    for (worker, node) in seen {
        assert_eq!(
            node,
            rt.places()[worker].node,
            "a task knows its worker's node"
        );
    }
}

#[test]
fn default_is_one_worker_per_core_and_more_workers_wrap_around() {
    let rt = Runtime::builder()
        .topology(opteron())
        .proc_bind(false)
        .build()
        .expect("runtime starts");
    assert_eq!(rt.num_workers(), 48);
    drop(rt);
    let rt = Runtime::builder()
        .topology(opteron())
        .proc_bind(false)
        .num_threads(50)
        .build()
        .expect("runtime starts");
    assert_eq!(rt.places()[48].core, 0);
    assert_eq!(rt.places()[49].node, 0);
}

#[test]
fn invalid_builder_settings_are_typed_errors() {
    // Huge values are refused before anything is allocated or started (a typo such as
    // 100000 workers would otherwise start threads until the system gives out).
    let cases = [
        (Runtime::builder().num_threads(0), "num_threads"),
        (Runtime::builder().num_threads(4097), "num_threads"),
        (Runtime::builder().num_threads(usize::MAX), "num_threads"),
        (Runtime::builder().stack_size(1000), "stack_size"),
        (Runtime::builder().stack_size(usize::MAX), "stack_size"),
        (Runtime::builder().stack_size((16 << 30) + 1), "stack_size"),
        (Runtime::builder().vicinity(Some(0)), "vicinity"),
        (Runtime::builder().vicinity(Some(9)), "vicinity"),
        (Runtime::builder().deque_capacity(0), "deque_capacity"),
        (
            Runtime::builder().deque_capacity(usize::MAX),
            "deque_capacity",
        ),
    ];
    for (builder, name) in cases {
        match builder.build() {
            Err(SchedError::InvalidSetting { setting, .. }) => assert_eq!(setting, name),
            other => panic!("{name}: expected InvalidSetting, got {other:?}"),
        }
    }
}

#[test]
fn a_trace_file_that_cannot_be_created_is_an_error_at_start() {
    let dir = std::env::temp_dir();
    for path in [dir.clone(), dir.join("numatask-no-such-dir").join("t.json")] {
        match Runtime::builder().num_threads(1).trace(&path).build() {
            Err(SchedError::TraceFile { path: p, .. }) => {
                assert_eq!(p, path.display().to_string())
            }
            other => panic!("{}: expected TraceFile, got {other:?}", path.display()),
        }
    }
}

#[test]
fn display_env_names_the_settings_and_the_topology() {
    let rt = Runtime::builder()
        .topology(opteron())
        .num_threads(2)
        .proc_bind(false)
        .build()
        .expect("runtime starts");
    let shown = rt.display_env();
    for line in [
        "OPENMP DISPLAY ENVIRONMENT BEGIN",
        "  OMP_NUM_THREADS = '2'",
        "  OMP_PROC_BIND = 'FALSE'",
        "  OMP_STACKSIZE = '2M'",
        "  NUMATASK_SCHEDULER = 'ws'",
        "  NUMATASK_TOPOLOGY = 'preset:opteron6172'",
        "  numatask topology = '8 node(s), 48 core(s), 6 per node",
        "  numatask distances = 'given explicitly [10, 16, 16, 22,",
        "OPENMP DISPLAY ENVIRONMENT END",
    ] {
        assert!(shown.contains(line), "missing {line:?} in\n{shown}");
    }
}
