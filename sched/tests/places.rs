//! `OMP_PLACES`: the places workers are bound to, resolved against synthetic topologies (where
//! each place lies) and against the real machine (what each worker's CPU affinity is).

mod common;

use std::collections::BTreeSet;
use std::sync::Arc;

use common::{affinity, worker_affinities};

use numatask_alloc::{Preset, Topology, TopologyBuilder};
use numatask_sched::RuntimeBuilder;
use numatask_sched::config::{Config, Places, ProcBind};
use numatask_sched::{BuildError, Runtime};

/// Two nodes of two cores of two hardware threads: PUs 0-3 on node 0, 4-7 on node 1.
fn smt() -> Arc<Topology> {
    Arc::new(
        TopologyBuilder::synthetic("numa:2 core:2 pu:2")
            .build()
            .expect("the synthetic topology builds"),
    )
}

fn runtime(places: Places, threads: Option<usize>) -> Result<Runtime, BuildError> {
    let mut builder = Runtime::builder()
        .topology(smt())
        .proc_bind(false)
        .places(places);
    if let Some(n) = threads {
        builder = builder.num_threads(n);
    }
    builder.build()
}

fn nodes(rt: &Runtime) -> Vec<usize> {
    rt.workers().iter().map(|p| p.node).collect()
}

#[test]
fn threads_are_one_place_per_hardware_thread_and_one_worker_each() {
    let rt = runtime(Places::Threads, None).expect("runtime starts");
    assert_eq!(
        rt.place_list(),
        (0..8).map(|pu| vec![pu]).collect::<Vec<_>>()
    );
    assert_eq!(rt.num_workers(), 8, "one worker per hardware thread");
    assert_eq!(rt.worker_places(), [0, 1, 2, 3, 4, 5, 6, 7]);
    assert_eq!(nodes(&rt), [0, 0, 0, 0, 1, 1, 1, 1]);
    let cores: Vec<usize> = rt.workers().iter().map(|p| p.core).collect();
    assert_eq!(cores, [0, 0, 1, 1, 2, 2, 3, 3], "two threads per core");
    assert!(
        rt.display_env()
            .contains("  OMP_PLACES = '{0},{1},{2},{3},{4},{5},{6},{7}'"),
        "{}",
        rt.display_env()
    );
}

#[test]
fn cores_are_the_default_places_with_one_worker_per_core() {
    let rt = runtime(Places::Cores, None).expect("runtime starts");
    assert_eq!(
        rt.place_list(),
        [vec![0, 1], vec![2, 3], vec![4, 5], vec![6, 7]]
    );
    assert_eq!(rt.num_workers(), 4);
    assert_eq!(nodes(&rt), [0, 0, 1, 1]);
    assert_eq!(rt.settings().places, Places::Cores);
    // A count keeps the first places, and the default worker count follows.
    let rt = runtime(Places::CoresN(3), None).expect("runtime starts");
    assert_eq!(rt.place_list().len(), 3);
    assert_eq!(rt.num_workers(), 3);
}

#[test]
fn numa_domains_put_runs_of_workers_on_each_node() {
    let rt = runtime(Places::NumaDomains, None).expect("runtime starts");
    assert_eq!(rt.place_list(), [vec![0, 1, 2, 3], vec![4, 5, 6, 7]]);
    assert_eq!(rt.num_workers(), 4, "one worker per core the places hold");
    assert_eq!(rt.worker_places(), [0, 0, 1, 1]);
    assert_eq!(nodes(&rt), [0, 0, 1, 1]);
    // Spread with one worker per place, and more workers than places under close: runs.
    let rt = Runtime::builder()
        .topology(smt())
        .proc_bind(false)
        .proc_bind(ProcBind::Spread)
        .places(Places::NumaDomains)
        .num_threads(2)
        .build()
        .expect("runtime starts");
    assert_eq!(nodes(&rt), [0, 1]);
    let rt = runtime(Places::NumaDomainsN(1), Some(3)).expect("runtime starts");
    assert_eq!(nodes(&rt), [0, 0, 0], "numa_domains(1): node 0 only");
}

#[test]
fn sockets_and_last_level_caches_group_the_cores_that_share_them() {
    let opteron = Arc::new(Topology::preset(Preset::Opteron6172).expect("the preset"));
    let build = |places: Places| {
        Runtime::builder()
            .topology(Arc::clone(&opteron))
            .proc_bind(false)
            .places(places)
            .build()
            .expect("runtime starts")
    };
    // Four packages of two nodes (dies) each: a package's place holds its 12 cores.
    let rt = build(Places::Sockets);
    assert_eq!(rt.place_list().len(), 4);
    assert_eq!(rt.place_list()[1], (12..24).collect::<Vec<_>>());
    assert_eq!(rt.num_workers(), 48, "one worker per core the places hold");
    // Runs of 12 workers per package; a package's workers count as on its first node (a
    // tie of 6 cores on each of its two).
    assert_eq!(rt.worker_places()[12..24], [1; 12]);
    assert_eq!(rt.workers()[12].node, 2);
    // An L3 per die: the same places as the nodes.
    let rt = build(Places::LlCachesN(3));
    assert_eq!(rt.place_list().len(), 3);
    assert_eq!(rt.place_list()[2], (12..18).collect::<Vec<_>>());
    assert_eq!(rt.num_workers(), 18);
    assert_eq!(
        rt.display_env()
            .lines()
            .find(|l| l.starts_with("  OMP_PLACES")),
        Some("  OMP_PLACES = '{0:6},{6:6},{12:6}'")
    );
}

#[test]
fn an_explicit_list_is_taken_as_written() {
    let places: Places = "{0:2},{6},{5,4}".parse().expect("a valid list");
    let rt = runtime(places, None).expect("runtime starts");
    assert_eq!(rt.place_list(), [vec![0, 1], vec![6], vec![4, 5]]);
    // Cores 0, 3 and 2 (processors 6 and 4-5 lie on node 1).
    assert_eq!(rt.num_workers(), 3);
    assert_eq!(nodes(&rt), [0, 1, 1]);
    let rt = runtime("{0}:4:2".parse().expect("a valid list"), Some(8)).expect("starts");
    assert_eq!(rt.place_list(), [vec![0], vec![2], vec![4], vec![6]]);
    assert_eq!(rt.worker_places(), [0, 0, 1, 1, 2, 2, 3, 3]);
}

#[test]
fn a_processor_the_topology_lacks_is_an_error_that_names_it() {
    let places: Places = "{0:2},{8}".parse().expect("valid syntax");
    match runtime(places, None) {
        Err(err @ BuildError::Places { .. }) => assert_eq!(
            err.to_string(),
            "places (RuntimeBuilder::places)='{0:2},{8}': processor 8 does not exist (the \
             topology has processors {0:8})"
        ),
        other => panic!("expected a Places error, got {other:?}"),
    }
}

#[test]
fn builder_places_the_parser_would_refuse_are_errors_that_say_why() {
    for (places, reason) in [
        (Places::CoresN(0), "a count of places must be at least 1"),
        (Places::ThreadsN(0), "a count of places must be at least 1"),
        (
            Places::NumaDomainsN(0),
            "a count of places must be at least 1",
        ),
        (Places::List(vec![]), "an empty list names no place"),
        (
            Places::List(vec![vec![0], vec![]]),
            "a place names no processor",
        ),
    ] {
        match runtime(places.clone(), None) {
            Err(
                err @ BuildError::Places {
                    from_env: false, ..
                },
            ) => assert_eq!(
                err.to_string(),
                format!("places (RuntimeBuilder::places)='{places}': {reason}")
            ),
            other => panic!("{places:?}: expected a Places error, got {other:?}"),
        }
    }
    // A list repeated many times: the message stays short.
    let many: Places = "{100}:60000:0".parse().expect("valid syntax");
    let err = runtime(many, None).expect_err("processor 100 does not exist");
    assert!(
        err.to_string().len() < 300,
        "{} bytes",
        err.to_string().len()
    );
    assert!(
        err.to_string().contains("processor 100 does not exist"),
        "{err}"
    );
}

#[test]
fn a_place_spanning_nodes_is_on_the_node_of_most_of_its_processors() {
    // Processor 3 on node 0, 4 and 5 on node 1; 2 and 5: one each, the first node wins.
    let rt = runtime("{3,4,5},{2,5}".parse().expect("valid"), None).expect("runtime starts");
    assert_eq!(nodes(&rt), [1, 0]);
}

#[test]
fn a_list_gets_at_least_one_worker_per_place() {
    // Two hardware threads of core 0: two places, two workers (one core).
    let rt = runtime("{0},{1}".parse().expect("valid"), None).expect("runtime starts");
    assert_eq!(rt.num_workers(), 2);
    assert_eq!(rt.worker_places(), [0, 1]);
    // The list `threads` would give: as many workers as `threads`.
    let rt = runtime("0:8".parse().expect("valid"), None).expect("runtime starts");
    assert_eq!(rt.num_workers(), 8);
    // Two places of two cores each: a worker per core.
    let rt = runtime("{0:4},{4:4}".parse().expect("valid"), None).expect("runtime starts");
    assert_eq!(rt.num_workers(), 4);
    assert_eq!(rt.worker_places(), [0, 0, 1, 1]);
    // A place repeated is one place: 300 copies of processor 0 give one worker, not 300.
    let rt = runtime("{0}:300:0".parse().expect("valid"), None).expect("runtime starts");
    assert_eq!(rt.num_workers(), 1);
    let rt = runtime("{0},{1},{0}".parse().expect("valid"), None).expect("runtime starts");
    assert_eq!(rt.num_workers(), 2);
}

#[test]
fn a_places_error_quotes_omp_places_as_written() {
    let config = Config::from_lookup(|var| (var == "OMP_PLACES").then(|| " {6}:3 ".into()))
        .expect("valid syntax");
    let err = RuntimeBuilder::from_config(config)
        .topology(smt())
        .proc_bind(false)
        .build()
        .expect_err("processors 8 and 9 do not exist");
    assert_eq!(
        err.to_string(),
        "OMP_PLACES='{6}:3': processor 8 does not exist (the topology has processors {0:8})"
    );
}

#[test]
fn workers_are_bound_to_their_places_on_the_real_machine() {
    let topology = Arc::new(Topology::system().expect("the machine's topology"));
    if topology.is_synthetic() {
        return; // NUMATASK_TOPOLOGY names a model: nothing real to bind to.
    }
    let cpus: Vec<usize> = affinity().into_iter().collect();
    let last = *cpus.last().expect("some CPU");
    for places in [
        Places::Threads,
        Places::NumaDomains,
        Places::Sockets,
        Places::LlCaches,
        Places::List(vec![vec![last]]),
    ] {
        let rt = Runtime::builder()
            .topology(Arc::clone(&topology))
            .places(places.clone())
            .num_threads(2)
            .build()
            .expect("runtime starts");
        assert!(
            rt.pinning().iter().all(|p| matches!(p, Some(Ok(_)))),
            "{places}: {:?}",
            rt.pinning()
        );
        for (worker, cpus) in worker_affinities(&rt).into_iter().enumerate() {
            let want: BTreeSet<usize> = rt.place_list()[rt.worker_places()[worker]]
                .iter()
                .copied()
                .collect();
            assert_eq!(cpus, Some(want), "{places}: worker {worker}");
        }
    }
}
