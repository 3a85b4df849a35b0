//! Work-groups go back to the same worker under the locality-aware scheduler: task `i` of
//! consecutive launches over the same buffers prefers the same worker, and runs there when
//! that worker is free.

use std::sync::Arc;

mod common;

use common::within;
use numatask_kernels::{Context, Kernel, NdRange, Write};
use numatask_sched::{Runtime, SchedulerKind, WaitPolicy};

const WORKERS: usize = 2;
const ITEMS: usize = 1024;

/// Each work-item writes the index of the worker running it.
fn where_it_ran() -> Kernel {
    Kernel::items::<(Write<u32>,), _>("where", |_, (out,)| {
        let worker = numatask_sched::current_worker().expect("runs on a worker");
        *out = worker.index as u32;
    })
}

/// A context on `WORKERS` workers that never sleep (`active`): an idle worker is free when a
/// launch comes, and gets the tasks that prefer it (a sleeping one may lose them to a worker
/// awake rather than keep the launch waiting for its wake-up).
fn context(kind: SchedulerKind) -> Context {
    let rt = Runtime::builder()
        .num_threads(WORKERS)
        .proc_bind(false)
        .scheduler(kind)
        .wait_policy(WaitPolicy::Active)
        .build()
        .expect("runtime starts");
    Context::new(Arc::new(rt)).expect("context")
}

/// One task per worker: with more, a worker still busy with its first task may see the
/// others taken by a worker done with its own, which is the clause's balancing at work.
#[test]
fn each_task_of_consecutive_launches_runs_on_the_same_worker_when_the_workers_are_idle() {
    for kind in [SchedulerKind::Locality] {
        let (runs, one_node) = within(60, move || {
            let ctx = context(kind);
            let nodes: Vec<usize> = ctx.runtime().workers().iter().map(|p| p.node).collect();
            let one_node = nodes.iter().all(|&n| n == nodes[0]);
            let q = ctx.queue();
            let out = ctx.buffer::<u32>(ITEMS).expect("buffer");
            let kernel = where_it_ran();
            let runs = (0..2)
                .map(|_| {
                    q.launch(&kernel, NdRange::new([ITEMS]).local([64]))
                        .arg(&out)
                        .tasks(WORKERS)
                        .enqueue()
                        .expect("a valid launch")
                        .wait()
                        .expect("the launch runs");
                    q.read(&out, 0..ITEMS)
                        .expect("a valid read")
                        .wait()
                        .expect("the read runs")
                })
                .collect::<Vec<Vec<u32>>>();
            (runs, one_node)
        });
        let (first, second) = (&runs[0], &runs[1]);
        for (t, part) in first.chunks(ITEMS / WORKERS).enumerate() {
            assert!(
                part.iter().all(|&w| w == part[0]),
                "{kind}: task {t} ran on one worker: {part:?}"
            );
            // Task `t` has the `t`-th half of the groups, and prefers worker `t` where the
            // tasks take the workers in turn (work stealing, or the workers of one node).
            if kind == SchedulerKind::WorkStealing || one_node {
                assert_eq!(
                    part[0] as usize, t,
                    "{kind}: task {t} on its preferred worker"
                );
            }
        }
        assert_eq!(first, second, "{kind}: each group ran where it ran before");
    }
}
