//! What starting a runtime says on standard error: settings that are not used, variables set
//! but not read, workers that could not be pinned, a topology other than the allocator's.
//! Each warning is a function returning its line, so that tests read it without a process.

use numatask_alloc::Pinning;
use numatask_alloc::{AllocError, Topology};

use crate::config::{ENV_VARS, EVEN_TOLERANCE_ENV, NUM_THREADS_ENV, SCHEDULER_ENV, VICINITY_ENV};
use crate::scheduler::SchedulerKind;
use crate::trace::TRACE_ENV;

/// Says once per process, on stderr, which runtime variables are set in the environment but
/// were not read: a runtime from [`Runtime::builder`] starts from the defaults, and someone
/// who sets `NUMATASK_SCHEDULER=locality` or `NUMATASK_TRACE` for a program that builds its
/// runtime that way should not believe the setting took.
pub(super) fn warn_of_unread_env() {
    use std::sync::atomic::{AtomicBool, Ordering};
    static WARNED: AtomicBool = AtomicBool::new(false);
    if WARNED.load(Ordering::Relaxed) {
        return;
    }
    let set: Vec<&str> = ENV_VARS
        .iter()
        .copied()
        .filter(|&var| var != numatask_alloc::DISTRIBUTION_ENV)
        .chain([TRACE_ENV])
        .filter(|var| {
            std::env::var_os(var).is_some_and(|v| {
                !numatask_alloc::sched_support::trim_blanks(&v.to_string_lossy()).is_empty()
            })
        })
        .collect();
    if let Some(warning) = unread_env_warning(&set)
        && !WARNED.swap(true, Ordering::Relaxed)
    {
        eprintln!("{warning}");
    }
}

/// The line that says the default worker count, `wanted` (one per core or hardware thread
/// of the places, within `OMP_THREAD_LIMIT`), was cut to the `started` a runtime starts, if it
/// was.
pub(super) fn capped_warning(wanted: usize, started: usize) -> Option<String> {
    (wanted > started).then(|| {
        format!(
            "numatask: the places hold {wanted} cores (or hardware threads), one worker each by \
             default; a runtime starts at most {started}, on the first of them \
             ({NUM_THREADS_ENV} sets the number)"
        )
    })
}

/// The line that says a vicinity was given to a runtime whose scheduler has none (work
/// stealing steals from everyone), if one was.
pub(super) fn vicinity_warning(vicinity: Option<u32>, scheduler: SchedulerKind) -> Option<String> {
    let distance = vicinity?;
    (!scheduler.bounds_steals()).then(|| {
        format!(
            "numatask: the vicinity {distance} ({VICINITY_ENV} or RuntimeBuilder::vicinity) is \
             not used: only the locality-aware scheduler ({SCHEDULER_ENV}=locality) bounds its \
             steals, and this runtime's is {}",
            scheduler.name()
        )
    })
}

/// The line that says an even tolerance was given to a runtime whose scheduler deals no task
/// (work stealing), if one was.
pub(super) fn even_tolerance_warning(
    tolerance: Option<f64>,
    scheduler: SchedulerKind,
) -> Option<String> {
    let tolerance = tolerance?;
    (!scheduler.reads_footprints()).then(|| {
        format!(
            "numatask: the even tolerance {tolerance} ({EVEN_TOLERANCE_ENV} or \
             RuntimeBuilder::even_tolerance) is not used: only the locality-aware scheduler \
             ({SCHEDULER_ENV}=locality) deals tasks by their footprints, and this runtime's is {}",
            scheduler.name()
        )
    })
}

/// The line that says a runtime weighing footprints (locality-aware, or traced) runs on a
/// topology whose nodes are not those the allocator places memory on
/// ([`Topology::current`]), if it does: footprints are then read by node index against the
/// wrong nodes.
pub(super) fn topology_warning(
    topology: &Topology,
    scheduler: SchedulerKind,
    traced: bool,
) -> Option<String> {
    if !scheduler.reads_footprints() && !traced {
        return None;
    }
    let placed = Topology::current().ok()?;
    // The same nodes, whatever the distances (a runtime may be given its own matrix): node
    // indices mean the same to both.
    let node_ids = |t: &Topology| -> Vec<(usize, Vec<usize>)> {
        t.nodes()
            .iter()
            .map(|n| {
                (
                    n.os_index,
                    n.cores.iter().flat_map(|c| c.pus.clone()).collect(),
                )
            })
            .collect()
    };
    let same = node_ids(&placed) == node_ids(topology);
    (!same).then(|| {
        format!(
            "numatask: this runtime's topology ({} node(s), {}) is not the one memory is \
             placed on ({} node(s), {}: NUMATASK_TOPOLOGY or the machine): task footprints are \
             read against the wrong nodes",
            topology.num_nodes(),
            topology.source(),
            placed.num_nodes(),
            placed.source()
        )
    })
}

/// The line [`warn_of_unread_env`] prints for the variables `set`, if any is.
pub(super) fn unread_env_warning(set: &[&str]) -> Option<String> {
    let (last, rest) = set.split_last()?;
    let (names, verb) = match rest {
        [] => (last.to_string(), "is"),
        _ => (format!("{} and {last}", rest.join(", ")), "are"),
    };
    Some(format!(
        "numatask: {names} {verb} set but not read: this runtime was built with \
         Runtime::builder(), which starts from the defaults (RuntimeBuilder::from_env() or \
         Runtime::new() follow the environment)"
    ))
}

/// With `OMP_PROC_BIND=true`, the line that says which workers could not be pinned (they run
/// wherever the OS puts them), once per runtime: `None` when every worker was pinned.
pub(super) fn unpinned_warning(pinning: &[Option<Result<Pinning, AllocError>>]) -> Option<String> {
    let mut failed = pinning.iter().enumerate().filter_map(|(i, p)| match p {
        Some(Err(e)) => Some((i, e)),
        _ => None,
    });
    let (first, error) = failed.next()?;
    let more = failed.count();
    Some(format!(
        "numatask: {} of {} workers run unpinned (worker {first}: {error}{})",
        more + 1,
        pinning.len(),
        if more > 0 { "; and others" } else { "" }
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::DEFAULT_EVEN_TOLERANCE;

    #[test]
    fn unread_variables_are_named_in_one_line() {
        assert_eq!(unread_env_warning(&[]), None);
        assert_eq!(
            unread_env_warning(&["NUMATASK_TRACE"]).as_deref(),
            Some(
                "numatask: NUMATASK_TRACE is set but not read: this runtime was built with \
                 Runtime::builder(), which starts from the defaults (RuntimeBuilder::from_env() \
                 or Runtime::new() follow the environment)"
            )
        );
        assert!(
            unread_env_warning(&["OMP_NUM_THREADS", "OMP_PROC_BIND", "NUMATASK_SCHEDULER"])
                .is_some_and(|w| w.starts_with(
                    "numatask: OMP_NUM_THREADS, OMP_PROC_BIND and NUMATASK_SCHEDULER are set"
                ))
        );
    }

    #[test]
    fn a_default_worker_count_beyond_the_cap_is_named() {
        assert_eq!(capped_warning(4096, 4096), None);
        assert_eq!(
            capped_warning(16384, 4096).as_deref(),
            Some(
                "numatask: the places hold 16384 cores (or hardware threads), one worker each \
                 by default; a runtime starts at most 4096, on the first of them \
                 (OMP_NUM_THREADS sets the number)"
            )
        );
    }

    #[test]
    fn a_vicinity_or_an_even_tolerance_without_the_locality_scheduler_is_named() {
        assert_eq!(
            even_tolerance_warning(None, SchedulerKind::WorkStealing),
            None
        );
        assert_eq!(
            even_tolerance_warning(Some(0.0), SchedulerKind::Locality),
            None
        );
        assert!(
            even_tolerance_warning(Some(DEFAULT_EVEN_TOLERANCE), SchedulerKind::WorkStealing)
                .is_some_and(|w| w.starts_with("numatask: the even tolerance 0.1 "))
        );
        assert_eq!(
            even_tolerance_warning(Some(0.0), SchedulerKind::WorkStealing).as_deref(),
            Some(
                "numatask: the even tolerance 0 (NUMATASK_EVEN_TOLERANCE or \
                 RuntimeBuilder::even_tolerance) is not used: only the locality-aware scheduler \
                 (NUMATASK_SCHEDULER=locality) deals tasks by their footprints, and this \
                 runtime's is ws"
            )
        );
        assert_eq!(vicinity_warning(None, SchedulerKind::WorkStealing), None);
        assert_eq!(vicinity_warning(Some(16), SchedulerKind::Locality), None);
        assert_eq!(
            vicinity_warning(Some(16), SchedulerKind::WorkStealing).as_deref(),
            Some(
                "numatask: the vicinity 16 (NUMATASK_VICINITY or RuntimeBuilder::vicinity) is \
                 not used: only the locality-aware scheduler (NUMATASK_SCHEDULER=locality) \
                 bounds its steals, and this runtime's is ws"
            )
        );
    }

    #[test]
    fn a_runtime_weighing_footprints_on_another_topology_than_the_allocators_is_named() {
        let placed = Topology::current().unwrap();
        let other = if placed.num_nodes() == 8 {
            numatask_alloc::TopologyBuilder::synthetic("numa:2 core:1 pu:1")
                .build()
                .unwrap()
        } else {
            Topology::preset(numatask_alloc::Preset::Opteron6172).unwrap()
        };
        let warning = topology_warning(&other, SchedulerKind::Locality, false).unwrap();
        assert!(
            warning.contains(&format!("({} node(s)", other.num_nodes()))
                && warning.contains(&format!("({} node(s)", placed.num_nodes())),
            "{warning}"
        );
        // Another distance matrix over the same nodes is the same topology to footprints.
        let n = placed.num_nodes();
        let matrix: Vec<u32> = (0..n * n)
            .map(|i| if i % (n + 1) == 0 { 10 } else { 17 })
            .collect();
        let spec = placed.source().to_string();
        let builder = numatask_alloc::TopologyBuilder::from_spec(&spec).unwrap();
        // (hwloc takes no matrix for one node: then the same nodes rebuilt.)
        let builder = if n >= 2 {
            builder.distances(matrix)
        } else {
            builder
        };
        let redistanced = builder.build().unwrap();
        assert_eq!(
            topology_warning(&redistanced, SchedulerKind::Locality, true),
            None
        );
        assert!(topology_warning(&other, SchedulerKind::WorkStealing, true).is_some());
        // Work stealing without a trace reads no footprint; the allocator's own topology is
        // what footprints are read against.
        assert_eq!(
            topology_warning(&other, SchedulerKind::WorkStealing, false),
            None
        );
        assert_eq!(
            topology_warning(&placed, SchedulerKind::Locality, true),
            None
        );
    }

    #[test]
    fn workers_that_could_not_be_pinned_are_named_once() {
        let failed = || {
            Some(Err(AllocError::Pin {
                core: 3,
                reason: "Invalid argument".into(),
            }))
        };
        let pinned = || Some(Ok(Pinning::Exact { core: 0 }));
        assert_eq!(unpinned_warning(&[pinned(), pinned()]), None);
        assert_eq!(unpinned_warning(&[None, None]), None, "OMP_PROC_BIND=false");
        assert_eq!(
            unpinned_warning(&[pinned(), failed()]).as_deref(),
            Some(
                "numatask: 1 of 2 workers run unpinned (worker 1: pinning the thread to core 3 \
                 failed: Invalid argument)"
            )
        );
        assert_eq!(
            unpinned_warning(&[failed(), pinned(), failed()]).as_deref(),
            Some(
                "numatask: 2 of 3 workers run unpinned (worker 0: pinning the thread to core 3 \
                 failed: Invalid argument; and others)"
            )
        );
    }
}
