//! Scheduling policies: where a spawned task goes and where an idle worker looks for one.
//!
//! As in MIR (the runtime of Muddukrishna, Jonsson and Brorsson's paper), a policy is a small
//! table of operations, here the [`Scheduler`] trait, and the runtime core (workers, scopes,
//! counters, sleep) is the same for every policy. A runtime picks its policy at start-up from
//! [`SchedulerKind`] (the `NUMATASK_SCHEDULER` variable or
//! [`RuntimeBuilder::scheduler`](crate::RuntimeBuilder::scheduler)), so that policies are
//! compared inside one runtime on the same programs.
//!
//! The operations and who calls them:
//!
//! | operation | called by | when |
//! |---|---|---|
//! | [`push`](Scheduler::push) | the worker running the spawning task | a task was spawned |
//! | [`inject`](Scheduler::inject) | a thread outside the pool | it enters the runtime |
//! | [`pop`](Scheduler::pop) | a worker | first place to look: its own work |
//! | [`steal`](Scheduler::steal) | a worker | its own work is gone: other workers' work |
//! | [`take_injected`](Scheduler::take_injected) | a worker, idle or waiting | after stealing |
//! | [`has_work`](Scheduler::has_work) | a worker about to sleep | after announcing itself |
//! | [`may_take_preferred`](Scheduler::may_take_preferred) | a worker | may it take a task that prefers a busy worker of that node? |
//!
//! A worker waiting in `taskwait` uses `pop` and `steal` and runs what they give, then scopes
//! injected into the pool (another pool's waiting worker may need them), and tasks set aside,
//! with a priority, or preferring a worker, which the runtime core keeps outside the policy
//! (see [`crate::worker`] for the policy and its stack guard, `crate::mailbox` for preferred
//! workers).
//!
//! The trait is public so that a policy can be read, built and tested on its own (its
//! decisions on a preset topology, as `tests/locality.rs` does); a runtime runs one of the
//! policies of [`SchedulerKind`], statically dispatched. Installing a policy of one's own is
//! not supported: it would be one more variant, and a change to this crate.
//!
//! Work-stealing ([`WorkStealing`]) is the first policy. The locality-aware policy of the
//! paper ([`Locality`]: one queue per NUMA node, Algorithm 1 deals each task to a node by its
//! [`footprint`](Task::footprint), Algorithm 2 steals within a distance bound) is another
//! implementation of the same trait and one more [`SchedulerKind`] variant.
//!
//! For tracing, a policy also says where the task it handed out was queued
//! ([`origin`](Scheduler::origin)); the runtime asks only when tracing is on.

pub mod locality;
pub mod work_stealing;

use std::fmt;
use std::str::FromStr;
use std::sync::Arc;

use numatask_alloc::Topology;

use crate::deque::Worker;
use crate::error::BuildError;
use crate::job::Task;
use crate::runtime::Settings;
use crate::sleep::Sleep;
use crate::trace::QueueChoice;

pub use locality::Locality;
pub use work_stealing::WorkStealing;

/// Where a worker runs: its index in the pool, its core and that core's NUMA node.
///
/// Which core worker `i` gets follows `OMP_PROC_BIND` ([`crate::config::ProcBind`]) over the
/// cores the process may run on; cores are numbered node by node, so with the default
/// consecutive workers fill one node before the next.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct WorkerPlace {
    /// Index of the worker (`0..num_workers`).
    pub index: usize,
    /// Index of its core in the topology (of a place of several cores, `OMP_PLACES`, the
    /// first).
    pub core: usize,
    /// Index of its NUMA node: its core's (of a place spanning nodes, the node holding most
    /// of the place's processors).
    pub node: usize,
}

/// What a scheduler operation knows about the worker calling it.
#[derive(Clone, Copy, Debug)]
pub struct WorkerCtx<'a> {
    /// The calling worker.
    pub place: &'a WorkerPlace,
    /// The pool's idle/wake protocol: a policy that makes work visible to others wakes
    /// sleepers through it.
    pub sleep: &'a Sleep,
}

/// Which operation handed a worker the task it runs (see [`Scheduler::origin`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Found {
    /// [`Scheduler::pop`].
    Pop,
    /// [`Scheduler::steal`].
    Steal,
    /// [`Scheduler::take_injected`].
    Injected,
    /// The worker's overflow list: a task its own completion released while the scheduler had
    /// no room (see `crate::worker`).
    Overflow,
    /// The pool's list of tasks with a priority (see `crate::worker`), which no policy sees.
    Priority,
    /// The mailbox of worker `owner`: a task that prefers that worker (see `crate::mailbox`),
    /// which no policy sees either.
    Preferred {
        /// The worker the task preferred (the one running it, unless it was busy).
        owner: usize,
    },
}

/// Where a task was queued and where the worker running it took it from (for tracing).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TaskOrigin {
    /// The queue the task was put in when it was created.
    pub queue: QueueChoice,
    /// `None` when the worker took it from its own queues (its deque, its node's queue);
    /// otherwise the node of the queue it was stolen from (its own node for a deque of a
    /// worker of the same node).
    pub stolen_from: Option<usize>,
}

impl TaskOrigin {
    /// Taken from the worker's own deque.
    pub const OWN_DEQUE: TaskOrigin = TaskOrigin {
        queue: QueueChoice::OwnDeque,
        stolen_from: None,
    };
    /// Run at once by its creator.
    pub const INLINE: TaskOrigin = TaskOrigin {
        queue: QueueChoice::Inline,
        stolen_from: None,
    };
    /// Queued from outside the pool.
    pub const INJECTED: TaskOrigin = TaskOrigin {
        queue: QueueChoice::Injected,
        stolen_from: None,
    };
}

/// A scheduling policy (see the module docs for when each operation is called).
///
/// The two policies of [`SchedulerKind`] implement it; a runtime runs only those (a program
/// chooses one with [`RuntimeBuilder::scheduler`](crate::RuntimeBuilder::scheduler) or
/// `NUMATASK_SCHEDULER`, and cannot plug in its own). The trait is public to document the
/// contract both keep, which is what lets a new policy be added to the crate without changes
/// elsewhere.
///
/// Contract: every task given to `push` or `inject` is returned exactly once by `pop`,
/// `steal` or `take_injected` of some worker (or handed back as `Err` by `push`, and then run
/// by the caller). A task made visible to workers other than the caller must be seen by a
/// worker that is awake or will wake: `inject` must
/// wake a sleeper reliably through [`Sleep`]; `push` may skip the wake-up when no worker is
/// announced as sleepy without a fence only for a task that the pushing worker itself takes
/// (its own deque, its own node's queue), because it runs its own children at the latest when
/// it waits for them. A task pushed where the pusher does not look (another node's queue)
/// needs the reliable wake-up, and the workers woken must cover it in their `has_work`.
pub trait Scheduler: Send + Sync + Sized + 'static {
    /// The state one worker owns (its deque, its steal cursor): created with the policy,
    /// moved to the worker's thread, used only there.
    type Local: Send;

    /// The policy and one `Local` per worker of `places`, with the runtime's `settings`
    /// (the deque capacity, and the locality-aware policy's vicinity and even tolerance).
    fn create(
        topology: &Arc<Topology>,
        places: &[WorkerPlace],
        settings: &Settings,
    ) -> (Self, Vec<Self::Local>);

    /// Which policy this is.
    fn kind(&self) -> SchedulerKind;

    /// A task spawned on the calling worker. `Err(task)`: no room; the caller runs it inline.
    fn push(&self, local: &Self::Local, ctx: &WorkerCtx<'_>, task: Task) -> Result<(), Task>;

    /// A task from a thread outside the pool (a scope entered from outside).
    fn inject(&self, task: Task, sleep: &Sleep);

    /// The calling worker's own work (cheapest first).
    fn pop(&self, local: &Self::Local, ctx: &WorkerCtx<'_>) -> Option<Task>;

    /// Work of other workers.
    fn steal(&self, local: &Self::Local, ctx: &WorkerCtx<'_>) -> Option<Task>;

    /// Work injected from outside the pool.
    fn take_injected(&self, local: &Self::Local, ctx: &WorkerCtx<'_>) -> Option<Task>;

    /// Whether [`pop`](Self::pop), [`steal`](Self::steal) or
    /// [`take_injected`](Self::take_injected) may find work (a cheap, possibly stale check
    /// made by a worker after it announced itself sleepy).
    fn has_work(&self, local: &Self::Local, ctx: &WorkerCtx<'_>) -> bool;

    /// Whether [`steal`](Self::steal) or [`take_injected`](Self::take_injected) may find work
    /// (the check of a waiting worker with stack to spare, which knows what its own queue
    /// holds).
    fn has_stealable_work(&self, local: &Self::Local, ctx: &WorkerCtx<'_>) -> bool;

    /// Whether [`take_injected`](Self::take_injected) may find work.
    fn has_injected(&self, local: &Self::Local, ctx: &WorkerCtx<'_>) -> bool;

    /// Whether [`pop`](Self::pop) may find work (the worker's own queues: the check of a
    /// waiting worker short of stack, which takes from nowhere else).
    fn has_own_work(&self, local: &Self::Local, ctx: &WorkerCtx<'_>) -> bool;

    /// Whether the calling worker may run a task that a worker of node `node` handed on
    /// (set aside while short of stack): the policy's bound on how far tasks move (the
    /// locality-aware policy's vicinity). Every worker may, by default.
    fn within_reach(&self, _local: &Self::Local, _ctx: &WorkerCtx<'_>, _node: usize) -> bool {
        true
    }

    /// Whether the calling worker may take a task that prefers a busy worker of node `node`
    /// (from that worker's mailbox, see
    /// [`TaskBuilder::prefer_worker`](crate::TaskBuilder::prefer_worker)), while `waiting`
    /// such tasks wait on that node's workers. Every worker may, by default.
    fn may_take_preferred(
        &self,
        _local: &Self::Local,
        _ctx: &WorkerCtx<'_>,
        _node: usize,
        _waiting: usize,
    ) -> bool {
        true
    }

    /// Whether the policy places tasks by their footprints (the bytes they touch per node):
    /// a spawner then computes a footprint given to a task, which a policy that ignores them
    /// (work stealing) lets it skip.
    fn reads_footprints(&self) -> bool {
        false
    }

    /// Where the task that the calling worker's last successful `found` operation returned
    /// was queued (called only when tracing, right after that operation, so a policy may keep
    /// what it needs for this in `local`).
    fn origin(&self, local: &Self::Local, ctx: &WorkerCtx<'_>, found: Found) -> TaskOrigin;
}

/// Pushes `task` on the spawning worker's own deque and wakes a sleeper unless one is
/// already searching: the whole of work stealing's push, and of the locality-aware policy's
/// on one node. The fence-free check is enough because the pusher runs its own deque at the
/// latest when it waits (see [`Sleep::should_wake_for_push`]). `Err(task)`: the deque is full.
#[inline(always)]
pub(crate) fn push_to_deque(deque: &Worker<Task>, sleep: &Sleep, task: Task) -> Result<(), Task> {
    deque.push(task)?;
    if sleep.should_wake_for_push() {
        sleep.new_work();
    }
    Ok(())
}

/// The scheduling policies a runtime can use (`NUMATASK_SCHEDULER`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum SchedulerKind {
    /// One Chase-Lev deque per worker; the owner pops LIFO, thieves steal FIFO from victims
    /// in round-robin order (`ws`).
    #[default]
    WorkStealing,
    /// The core paper's locality-aware policy: one queue per NUMA node, tasks dealt to the
    /// node holding their footprint, thresholded stealing by distance (`locality`).
    Locality,
}

impl SchedulerKind {
    /// Every policy, for comparisons.
    pub const ALL: [SchedulerKind; 2] = [SchedulerKind::WorkStealing, SchedulerKind::Locality];

    /// The name `NUMATASK_SCHEDULER` uses.
    pub fn name(self) -> &'static str {
        match self {
            Self::WorkStealing => "ws",
            Self::Locality => "locality",
        }
    }

    /// Whether this policy places tasks by their footprints and takes the even tolerance
    /// ([`Scheduler::reads_footprints`] of its policy, known before it is created).
    pub fn reads_footprints(self) -> bool {
        match self {
            Self::WorkStealing => false,
            Self::Locality => true,
        }
    }

    /// Whether this policy bounds its steals by a vicinity (`NUMATASK_VICINITY`).
    pub fn bounds_steals(self) -> bool {
        match self {
            Self::WorkStealing => false,
            Self::Locality => true,
        }
    }

    /// Creates the policy and the workers' parts of it.
    pub(crate) fn create(
        self,
        topology: &Arc<Topology>,
        places: &[WorkerPlace],
        settings: &Settings,
    ) -> (AnyScheduler, Vec<WorkerQueues>) {
        match self {
            Self::WorkStealing => {
                let (shared, locals) = WorkStealing::create(topology, places, settings);
                let shared = Arc::new(shared);
                let queues = locals
                    .into_iter()
                    .map(|local| WorkerQueues::WorkStealing(Arc::clone(&shared), local))
                    .collect();
                (AnyScheduler::WorkStealing(shared), queues)
            }
            Self::Locality => {
                let (shared, locals) = Locality::create(topology, places, settings);
                let shared = Arc::new(shared);
                let queues = locals
                    .into_iter()
                    .map(|local| WorkerQueues::Locality(Arc::clone(&shared), local))
                    .collect();
                (AnyScheduler::Locality(shared), queues)
            }
        }
    }
}

impl FromStr for SchedulerKind {
    type Err = BuildError;

    /// `ws`, `work-stealing` or `work_stealing`; `locality`, `locality-aware` or
    /// `locality_aware`; in any case.
    fn from_str(s: &str) -> Result<Self, BuildError> {
        match numatask_alloc::sched_support::trim_blanks(s)
            .to_ascii_lowercase()
            .as_str()
        {
            "ws" | "work-stealing" | "work_stealing" => Ok(Self::WorkStealing),
            "locality" | "locality-aware" | "locality_aware" => Ok(Self::Locality),
            _ => Err(BuildError::UnknownScheduler(s.to_owned())),
        }
    }
}

impl fmt::Display for SchedulerKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// The runtime's policy, whichever it is (static dispatch by `match`, so that the spawn path
/// pays no indirect call).
pub(crate) enum AnyScheduler {
    WorkStealing(Arc<WorkStealing>),
    Locality(Arc<Locality>),
}

impl AnyScheduler {
    /// The workers that may take a task of node `node` that a worker short of stack handed on
    /// (those for which [`Scheduler::within_reach`] says yes), as runs of indices; `None`:
    /// every worker.
    pub(crate) fn reaching(&self, node: usize) -> Option<&[std::ops::Range<usize>]> {
        match self {
            Self::WorkStealing(_) => None,
            Self::Locality(s) => s.reaching(node),
        }
    }

    /// [`Scheduler::reads_footprints`] of the active policy.
    #[inline]
    pub(crate) fn reads_footprints(&self) -> bool {
        match self {
            Self::WorkStealing(s) => s.reads_footprints(),
            Self::Locality(s) => s.reads_footprints(),
        }
    }

    pub(crate) fn inject(&self, task: Task, sleep: &Sleep) {
        match self {
            Self::WorkStealing(s) => s.inject(task, sleep),
            Self::Locality(s) => s.inject(task, sleep),
        }
    }

    /// Wakes a sleeper that may take a task preferring a busy worker of `node`, while
    /// `waiting` such tasks wait on that node's workers (those
    /// [`Scheduler::may_take_preferred`] lets take it), reliably: with the fence of
    /// [`Sleep::new_work_among`]. Picky sleepers are not woken: they would not take it.
    pub(crate) fn wake_for_preferred(&self, node: usize, waiting: usize, sleep: &Sleep) {
        match self {
            Self::WorkStealing(_) => {
                sleep.new_work();
            }
            Self::Locality(s) => s.wake_for_preferred(node, waiting, sleep),
        }
    }

    /// For traces: why the policy kept a task with `footprint` on its spawner's deque, when
    /// it decided so by Algorithm 1 (`None` for work stealing, which always does).
    pub(crate) fn kept_reason(
        &self,
        footprint: &[crate::depend::Access],
    ) -> Option<crate::locality_policy::DealReason> {
        match self {
            Self::WorkStealing(_) => None,
            Self::Locality(s) => s.kept_reason(footprint),
        }
    }

    /// The policy's own settings, as `(name, value)` lines for `OMP_DISPLAY_ENV`.
    pub(crate) fn display_lines(&self) -> Vec<(&'static str, String)> {
        match self {
            Self::WorkStealing(_) => Vec::new(),
            Self::Locality(s) => s.display_lines(),
        }
    }
}

/// One worker's view of the policy: the shared part and the worker's own part.
pub(crate) enum WorkerQueues {
    WorkStealing(Arc<WorkStealing>, <WorkStealing as Scheduler>::Local),
    Locality(Arc<Locality>, <Locality as Scheduler>::Local),
}

/// Forwards a trait operation to the active policy.
macro_rules! dispatch {
    ($self:ident, $op:ident($($arg:expr),*)) => {
        match $self {
            WorkerQueues::WorkStealing(shared, local) => shared.$op(local, $($arg),*),
            WorkerQueues::Locality(shared, local) => shared.$op(local, $($arg),*),
        }
    };
}

impl WorkerQueues {
    /// [`Scheduler::push`], with the plain case of both policies (the spawner's deque) taken
    /// by one path, so that the locality-aware policy on one node spawns at work stealing's
    /// cost.
    #[inline]
    pub(crate) fn push(&self, ctx: &WorkerCtx<'_>, task: Task) -> Result<(), Task> {
        let deque = match self {
            WorkerQueues::WorkStealing(_, local) => local.deque(),
            WorkerQueues::Locality(shared, local) => match local.plain_deque() {
                Some(deque) => deque,
                None => return shared.push_decided(local, ctx, task),
            },
        };
        push_to_deque(deque, ctx.sleep, task)
    }

    #[inline]
    pub(crate) fn pop(&self, ctx: &WorkerCtx<'_>) -> Option<Task> {
        dispatch!(self, pop(ctx))
    }

    #[inline]
    pub(crate) fn steal(&self, ctx: &WorkerCtx<'_>) -> Option<Task> {
        dispatch!(self, steal(ctx))
    }

    #[inline]
    pub(crate) fn take_injected(&self, ctx: &WorkerCtx<'_>) -> Option<Task> {
        dispatch!(self, take_injected(ctx))
    }

    pub(crate) fn has_work(&self, ctx: &WorkerCtx<'_>) -> bool {
        dispatch!(self, has_work(ctx))
    }

    pub(crate) fn has_stealable_work(&self, ctx: &WorkerCtx<'_>) -> bool {
        dispatch!(self, has_stealable_work(ctx))
    }

    pub(crate) fn has_injected(&self, ctx: &WorkerCtx<'_>) -> bool {
        dispatch!(self, has_injected(ctx))
    }

    pub(crate) fn has_own_work(&self, ctx: &WorkerCtx<'_>) -> bool {
        dispatch!(self, has_own_work(ctx))
    }

    pub(crate) fn within_reach(&self, ctx: &WorkerCtx<'_>, node: usize) -> bool {
        dispatch!(self, within_reach(ctx, node))
    }

    pub(crate) fn may_take_preferred(
        &self,
        ctx: &WorkerCtx<'_>,
        node: usize,
        waiting: usize,
    ) -> bool {
        dispatch!(self, may_take_preferred(ctx, node, waiting))
    }

    pub(crate) fn origin(&self, ctx: &WorkerCtx<'_>, found: Found) -> TaskOrigin {
        dispatch!(self, origin(ctx, found))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scheduler_names_round_trip() {
        for kind in SchedulerKind::ALL {
            assert_eq!(kind.to_string().parse::<SchedulerKind>(), Ok(kind));
        }
        assert_eq!(
            "Work-Stealing".parse::<SchedulerKind>(),
            Ok(SchedulerKind::WorkStealing)
        );
        assert_eq!(
            " Locality-Aware ".parse::<SchedulerKind>(),
            Ok(SchedulerKind::Locality)
        );
        assert_eq!(
            "fifo".parse::<SchedulerKind>(),
            Err(BuildError::UnknownScheduler("fifo".into()))
        );
    }
}
