//! Where workers run, the builder's checks, and what OMP_DISPLAY_ENV shows.

use std::sync::Arc;

use numatask_alloc::{Pinning, Preset, Topology};
use numatask_sched::config::ProcBind;
use numatask_sched::{BuildError, Runtime};

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
    for (i, place) in rt.workers().iter().enumerate() {
        assert_eq!(place.index, i);
        assert_eq!(place.core, i, "worker i runs on core i");
        assert_eq!(place.node, i / 6, "6 cores per node, numbered node by node");
    }
    // A synthetic topology is mapped onto the real cores: pinning succeeds or is reported.
    assert_eq!(rt.pinning().len(), 14);
    assert!(rt.pinning().iter().all(Option::is_some));
    let seen = rt.scope(|s| {
        let hs: Vec<_> = (0..64)
            .map(|_| s.task().spawn_with_result(|s| (s.worker_index(), s.node())))
            .collect();
        s.taskwait();
        hs.into_iter().map(|h| h.join()).collect::<Vec<_>>()
    });
    for (worker, node) in seen {
        assert_eq!(
            node,
            rt.workers()[worker].node,
            "a task knows its worker's node"
        );
    }
}

#[test]
fn spread_puts_fewer_workers_than_cores_on_every_node() {
    let rt = Runtime::builder()
        .topology(opteron())
        .proc_bind(ProcBind::Spread)
        .num_threads(8)
        .build()
        .expect("runtime starts");
    let cores: Vec<usize> = rt.workers().iter().map(|p| p.core).collect();
    assert_eq!(cores, [0, 6, 12, 18, 24, 30, 36, 42], "one worker per node");
    let nodes: Vec<usize> = rt.workers().iter().map(|p| p.node).collect();
    assert_eq!(nodes, [0, 1, 2, 3, 4, 5, 6, 7]);
    assert_eq!(rt.settings().proc_bind, ProcBind::Spread);
    // The model's cores 0, 6, 12, ... go onto distinct real cores while there are enough
    // (taken modulo the real count they would land on a few).
    let real: Vec<usize> = rt
        .pinning()
        .iter()
        .map(|p| match p {
            Some(Ok(Pinning::Mapped { real_core, .. })) => *real_core,
            other => panic!("spread pins each worker onto a real core: {other:?}"),
        })
        .collect();
    let machine = Topology::system()
        .expect("the machine")
        .usable_cores()
        .len();
    let distinct: std::collections::BTreeSet<usize> = real.iter().copied().collect();
    assert_eq!(distinct.len(), machine.min(8), "{real:?}");
    // Five workers over 48 cores: worker i on core i * 48 / 5 (OpenMP's spread), not on
    // i * (48 / 5).
    let rt = Runtime::builder()
        .topology(opteron())
        .proc_bind(ProcBind::Spread)
        .num_threads(5)
        .build()
        .expect("runtime starts");
    let cores: Vec<usize> = rt.workers().iter().map(|p| p.core).collect();
    assert_eq!(cores, [0, 9, 19, 28, 38]);
    let nodes: Vec<usize> = rt.workers().iter().map(|p| p.node).collect();
    assert_eq!(nodes, [0, 1, 3, 4, 6]);
}

#[test]
fn primary_puts_every_worker_on_the_core_of_the_starting_thread() {
    let topology = Topology::current().expect("the machine");
    if topology.is_synthetic() {
        // NUMATASK_TOPOLOGY names another machine: its cores are not where threads run.
        return;
    }
    // Run the start from a thread bound to the last usable core, so that "the core of the
    // starting thread" is not the core 0 of every other policy.
    let last = *topology.usable_cores().last().expect("a core");
    let t = Arc::clone(&topology);
    let places = std::thread::spawn(move || {
        t.pin_current_thread(last).expect("pins");
        let rt = Runtime::builder()
            .topology(t)
            .proc_bind(ProcBind::Primary)
            .num_threads(3)
            .build()
            .expect("runtime starts");
        rt.workers().to_vec()
    })
    .join()
    .expect("the starting thread");
    assert!(places.iter().all(|p| p.core == last), "{places:?}");
}

#[test]
fn default_is_one_worker_per_core_and_more_workers_share_cores_in_runs() {
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
    // As OpenMP says for more threads than places: runs of consecutive workers on each
    // core (here 2 on cores 0 and 24, 1 on each other), the order kept.
    let cores: Vec<usize> = rt.workers().iter().map(|p| p.core).collect();
    assert_eq!(&cores[..3], [0, 0, 1]);
    assert_eq!(cores[49], 47);
    assert!(
        cores.windows(2).all(|w| w[1] == w[0] || w[1] == w[0] + 1),
        "{cores:?}"
    );
    assert_eq!(cores.iter().filter(|&&c| c == 24).count(), 2);
    assert_eq!(rt.workers()[49].node, 7);
}

#[test]
fn invalid_builder_settings_are_typed_errors() {
    // Huge values are refused before anything is allocated or started (a typo such as
    // 100000 workers would otherwise start threads until the system gives out).
    let cases = [
        (Runtime::builder().num_threads(0), "num_threads"),
        (Runtime::builder().num_threads(4097), "num_threads"),
        (Runtime::builder().num_threads(usize::MAX), "num_threads"),
        (Runtime::builder().thread_limit(0), "thread_limit"),
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
            Err(BuildError::InvalidSetting { setting, .. }) => assert_eq!(setting, name),
            other => panic!("{name}: expected InvalidSetting, got {other:?}"),
        }
    }
}

#[test]
fn the_thread_limit_caps_the_requested_and_the_default_worker_count() {
    let workers = |b: numatask_sched::RuntimeBuilder| {
        let rt = b.proc_bind(false).build().expect("runtime starts");
        (rt.num_workers(), rt.settings().thread_limit)
    };
    let b = Runtime::builder;
    assert_eq!(workers(b().num_threads(4).thread_limit(3)), (3, Some(3)));
    assert_eq!(workers(b().num_threads(4).thread_limit(9)), (4, Some(9)));
    // The default, one worker per core: 48 on the preset, capped at 5.
    assert_eq!(
        workers(b().topology(opteron()).thread_limit(5)),
        (5, Some(5))
    );
    assert_eq!(workers(b().topology(opteron())), (48, None));
}

#[test]
fn a_trace_file_that_cannot_be_created_is_an_error_at_start() {
    let dir = std::env::temp_dir();
    for path in [dir.clone(), dir.join("numatask-no-such-dir").join("t.json")] {
        match Runtime::builder().num_threads(1).trace(&path).build() {
            Err(BuildError::TraceFile {
                path: p, from_env, ..
            }) => {
                assert_eq!(p, path.display().to_string());
                assert!(!from_env, "the builder named it");
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
        "  numatask.topology = '8 node(s), 48 core(s), 6 per node",
        "  numatask.distances = 'given explicitly [10, 16, 16, 22,",
        "OPENMP DISPLAY ENVIRONMENT END",
    ] {
        assert!(shown.contains(line), "missing {line:?} in\n{shown}");
    }
}
