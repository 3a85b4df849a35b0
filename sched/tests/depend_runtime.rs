//! Randomized dependent tasks through the runtime (`depend_random.rs` drives the tracker with
//! its own small executor; this drives it through `TaskBuilder::depend`, the workers, the
//! deques and the completion hook): 100,000 tasks with random `in`/`out`/`inout` sets over a
//! few hundred overlapping byte ranges, for 1 to 4 workers, checked against an oracle computed
//! in program order.
//!
//! The data is a buffer of `u32` cells; every task that writes stamps its cells with its id.
//! The oracle knows, for every task, the stamps its cells must hold when it starts (those of
//! its predecessors in program order, the last writer of each cell), folded into one hash;
//! every task checks that hash before it writes. A task that ran too early (before a writer it
//! should follow) or too late (after a later writer) sees other stamps. The stamps are
//! `Relaxed` atomics, so the only thing that makes a predecessor's stamp visible is the
//! runtime's own happens-before between dependent tasks.
//!
//! The tasks are submitted by a task, not the scope body, with a `taskwait` now and then and
//! none at the end: that task's tracker goes away while its last children still wait in it.
//! A second test adds a few panicking tasks and checks the oracle of cancellations.

mod common;

use std::sync::atomic::{AtomicU32, Ordering};

use common::random_program::{CELLS, Observed, Spec, program, run_on};
use common::{runtime, within};

/// Runs `specs` on `workers` workers, one cell per `u32`.
fn run(specs: &[Spec], workers: usize) -> (Observed, Option<String>) {
    let cells: Vec<AtomicU32> = (0..CELLS).map(|_| AtomicU32::new(0)).collect();
    run_on(specs, &runtime(workers), &cells, 1)
}

#[test]
fn every_task_sees_exactly_its_predecessors_writes_with_1_to_4_workers() {
    let specs = program(0x5EED_0001, 100_000, 0);
    assert!(specs.iter().all(|s| !s.cancelled));
    for workers in 1..=4 {
        let (observed, message) = within(120, {
            let specs = specs.clone();
            move || run(&specs, workers)
        });
        assert_eq!(message, None, "{workers} workers: no task panicked");
        assert_eq!(
            observed.wrong.load(Ordering::Relaxed),
            0,
            "{workers} workers: tasks saw stamps other than their predecessors'"
        );
        let ran = observed
            .ran
            .iter()
            .filter(|r| r.load(Ordering::Relaxed))
            .count();
        assert_eq!(ran, specs.len(), "{workers} workers: every task ran");
    }
}

#[test]
fn panics_cancel_exactly_the_tasks_that_depend_on_them() {
    let specs = program(0x5EED_0002, 20_000, 3);
    let cancelled = specs.iter().filter(|s| s.cancelled).count();
    assert!(specs.iter().any(|s| s.panics), "the program has panics");
    assert!(
        cancelled > 0 && cancelled < specs.len() / 4,
        "the seed gives a useful program ({cancelled} cancelled)"
    );
    for workers in [1, 3] {
        let (observed, message) = within(120, {
            let specs = specs.clone();
            move || run(&specs, workers)
        });
        let message = message.expect("a panic reaches the scope end");
        assert!(
            message.contains("panics on purpose") || message.contains("cancelled"),
            "{message}"
        );
        assert_eq!(
            observed.wrong.load(Ordering::Relaxed),
            0,
            "{workers} workers"
        );
        for (id, spec) in specs.iter().enumerate() {
            assert_eq!(
                observed.ran[id].load(Ordering::Relaxed),
                !spec.cancelled,
                "{workers} workers: task {id} ran iff the oracle does not cancel it"
            );
        }
    }
}
