//! The work-stealing policy: one bounded Chase-Lev deque per worker ([`crate::deque`]).
//!
//! - **push**: the spawning worker pushes onto its own deque (one `Release` store, no shared
//!   write); when the deque is full the task is handed back and the spawner runs it inline,
//!   as libomp and MIR do. Sleepers are woken only if one is announced (a relaxed load of the
//!   sleepers count, no fence: see the contract of [`Scheduler`]).
//! - **pop**: the owner takes its newest task (LIFO: depth-first, cache-warm).
//! - **steal**: the oldest task (FIFO: the biggest piece of a recursive computation) of the
//!   first victim that has one, trying victims in round-robin order starting with the last
//!   one that gave work; a lost race (`Retry`) makes the thief go round again.
//! - **inject**: a lock-free MPMC queue ([`NodeQueue`]) for tasks from outside the pool, taken
//!   by idle workers after their own deque and stealing failed.
//!
//! Backoff and sleep between failed attempts are the runtime core's ([`crate::sleep`]):
//! exponential spinning, then yielding, then sleeping on a condition variable.

use std::cell::Cell;
use std::sync::Arc;

use numatask_alloc::Topology;

use crate::deque::{self, Steal, Stealer, Worker};
use crate::job::Task;
use crate::node_queue::NodeQueue;
use crate::runtime::Settings;
use crate::scheduler::{
    Found, Scheduler, SchedulerKind, TaskOrigin, WorkerCtx, WorkerPlace, push_to_deque,
};
use crate::sleep::Sleep;
use crate::trace::QueueChoice;

/// Work-stealing over per-worker Chase-Lev deques (see the module docs).
pub struct WorkStealing {
    stealers: Box<[Stealer<Task>]>,
    injector: NodeQueue<Task>,
    /// The NUMA node of each worker (for tracing steals).
    worker_nodes: Box<[usize]>,
}

/// A worker's part of [`WorkStealing`]: the owner's end of its deque and its steal cursor.
pub struct WorkStealingLocal {
    deque: Worker<Task>,
    next_victim: Cell<usize>,
}

impl WorkStealingLocal {
    /// The worker's deque.
    #[inline]
    pub(crate) fn deque(&self) -> &Worker<Task> {
        &self.deque
    }
}

impl std::fmt::Debug for WorkStealing {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WorkStealing")
            .field("workers", &self.stealers.len())
            .field("injected", &self.injector.len())
            .finish()
    }
}

impl Scheduler for WorkStealing {
    type Local = WorkStealingLocal;

    fn create(
        _topology: &Arc<Topology>,
        places: &[WorkerPlace],
        settings: &Settings,
    ) -> (Self, Vec<WorkStealingLocal>) {
        let n = places.len();
        let (locals, stealers): (Vec<_>, Vec<_>) = places
            .iter()
            .map(|place| {
                let (worker, stealer) = deque::deque(settings.deque_capacity);
                let local = WorkStealingLocal {
                    deque: worker,
                    next_victim: Cell::new((place.index + 1) % n.max(1)),
                };
                (local, stealer)
            })
            .unzip();
        let shared = WorkStealing {
            stealers: stealers.into_boxed_slice(),
            injector: NodeQueue::new(),
            worker_nodes: places.iter().map(|p| p.node).collect(),
        };
        (shared, locals)
    }

    fn kind(&self) -> SchedulerKind {
        SchedulerKind::WorkStealing
    }

    #[inline]
    fn push(&self, local: &WorkStealingLocal, ctx: &WorkerCtx<'_>, task: Task) -> Result<(), Task> {
        push_to_deque(&local.deque, ctx.sleep, task)
    }

    fn inject(&self, task: Task, sleep: &Sleep) {
        self.injector.push(task);
        sleep.new_work();
    }

    #[inline]
    fn pop(&self, local: &WorkStealingLocal, _ctx: &WorkerCtx<'_>) -> Option<Task> {
        local.deque.pop()
    }

    fn steal(&self, local: &WorkStealingLocal, ctx: &WorkerCtx<'_>) -> Option<Task> {
        round_robin_steal(
            self.stealers.len(),
            ctx.place.index,
            &local.next_victim,
            |victim| self.stealers[victim].steal(),
        )
    }

    fn has_injected(&self, _local: &WorkStealingLocal, _ctx: &WorkerCtx<'_>) -> bool {
        !self.injector.is_empty()
    }

    fn take_injected(&self, _local: &WorkStealingLocal, _ctx: &WorkerCtx<'_>) -> Option<Task> {
        // Two plain loads first: `pop` on an empty queue pays a `SeqCst` fence, and waiting
        // workers look here after every failed round of steals.
        if self.injector.is_empty() {
            return None;
        }
        self.injector.pop()
    }

    fn has_own_work(&self, local: &WorkStealingLocal, _ctx: &WorkerCtx<'_>) -> bool {
        !local.deque.is_empty()
    }

    fn has_work(&self, local: &WorkStealingLocal, ctx: &WorkerCtx<'_>) -> bool {
        !local.deque.is_empty() || !self.injector.is_empty() || self.has_stealable_work(local, ctx)
    }

    fn has_stealable_work(&self, _local: &WorkStealingLocal, ctx: &WorkerCtx<'_>) -> bool {
        !self.injector.is_empty()
            || self
                .stealers
                .iter()
                .enumerate()
                .any(|(i, s)| i != ctx.place.index && !s.is_empty())
    }

    fn origin(&self, local: &WorkStealingLocal, _ctx: &WorkerCtx<'_>, found: Found) -> TaskOrigin {
        match found {
            Found::Pop | Found::Overflow => TaskOrigin::OWN_DEQUE,
            // A successful steal leaves the victim in the cursor.
            Found::Steal => TaskOrigin {
                queue: QueueChoice::OwnDeque,
                stolen_from: self.worker_nodes.get(local.next_victim.get()).copied(),
            },
            Found::Injected => TaskOrigin::INJECTED,
            // Traced by the worker itself; never asked of the policy.
            Found::Priority | Found::Preferred { .. } => TaskOrigin::INJECTED,
        }
    }
}

/// One steal attempt of worker `me` among `n` workers: the victims in round-robin order from
/// `cursor` (skipping `me`), each tried once with `steal_from`; the first success leaves its
/// victim in `cursor` (the next attempt starts there, where work was), a round where every
/// victim was empty moves `cursor` on by one (so that thieves do not all start at the same
/// empty victim) and returns `None`, and a round with a lost race (`Retry`) goes round again.
fn round_robin_steal<T>(
    n: usize,
    me: usize,
    cursor: &Cell<usize>,
    mut steal_from: impl FnMut(usize) -> Steal<T>,
) -> Option<T> {
    if n < 2 {
        return None;
    }
    loop {
        let start = cursor.get();
        let mut retry = false;
        for k in 0..n {
            let victim = (start + k) % n;
            if victim == me {
                continue;
            }
            match steal_from(victim) {
                Steal::Success(task) => {
                    cursor.set(victim);
                    return Some(task);
                }
                Steal::Retry => retry = true,
                Steal::Empty => {}
            }
        }
        if !retry {
            // Everyone was empty: begin with the next victim next time.
            cursor.set((start + 1) % n);
            return None;
        }
        crate::sync::spin_loop();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn victims_are_tried_in_round_robin_order_from_the_cursor_skipping_the_thief() {
        // Worker 2 of 5, cursor at 4: victims 4, 0, 1, 3, all empty.
        let cursor = Cell::new(4);
        let mut tried = Vec::new();
        let got: Option<()> = round_robin_steal(5, 2, &cursor, |v| {
            tried.push(v);
            Steal::Empty
        });
        assert_eq!(got, None);
        assert_eq!(tried, [4, 0, 1, 3]);
        // An empty round moves the cursor on by one.
        assert_eq!(cursor.get(), 0);
        tried.clear();
        let _: Option<()> = round_robin_steal(5, 2, &cursor, |v| {
            tried.push(v);
            Steal::Empty
        });
        assert_eq!(tried, [0, 1, 3, 4]);
        assert_eq!(cursor.get(), 1);
    }

    #[test]
    fn a_successful_steal_leaves_its_victim_in_the_cursor() {
        let cursor = Cell::new(1);
        let mut tried = Vec::new();
        let got = round_robin_steal(4, 0, &cursor, |v| {
            tried.push(v);
            if v == 3 {
                Steal::Success(v)
            } else {
                Steal::Empty
            }
        });
        assert_eq!(got, Some(3));
        assert_eq!(tried, [1, 2, 3]);
        assert_eq!(cursor.get(), 3);
        // The next attempt starts at the victim that had work.
        tried.clear();
        let got = round_robin_steal(4, 0, &cursor, |v| {
            tried.push(v);
            Steal::Success(v)
        });
        assert_eq!((got, tried.as_slice()), (Some(3), &[3][..]));
    }

    #[test]
    fn a_lost_race_makes_the_thief_go_round_again() {
        // Victim 1 loses a race the first time and has the task the second.
        let cursor = Cell::new(1);
        let mut tried = Vec::new();
        let got = round_robin_steal(3, 0, &cursor, |v| {
            tried.push(v);
            match (v, tried.len()) {
                (1, 1) => Steal::Retry,
                (1, _) => Steal::Success("task"),
                _ => Steal::Empty,
            }
        });
        assert_eq!(got, Some("task"));
        assert_eq!(tried, [1, 2, 1]);
        assert_eq!(cursor.get(), 1);
    }

    #[test]
    fn a_lone_worker_has_no_victim() {
        let cursor = Cell::new(0);
        let got: Option<()> = round_robin_steal(1, 0, &cursor, |_| panic!("no victim to try"));
        assert_eq!(got, None);
    }
}
