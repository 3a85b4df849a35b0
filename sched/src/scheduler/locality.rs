//! The locality-aware policy of the core paper (Muddukrishna, Jonsson and Brorsson 2015,
//! section 4.1): one task queue per NUMA node, tasks *dealt* at creation to the node holding
//! their data (Algorithm 1), idle workers *finding work* near them first and taking dealt work
//! from far nodes only when it is plentiful there (Algorithm 2). The decisions themselves are
//! [`LocalityModel`]'s; this file is the queues around them.
//!
//! # Queues
//!
//! - one [`NodeQueue`] (lock-free MPMC FIFO) per NUMA node, for *dealt* tasks;
//! - one Chase-Lev deque per worker for the tasks not worth dealing (MIR's "alt" queue): no
//!   footprint, or a footprint below `LLC / C` or evenly spread (Algorithm 1's else-branch;
//!   "evenly" within the even tolerance, `NUMATASK_EVEN_TOLERANCE`, see
//!   [`crate::locality_policy`]);
//! - one injector for work from outside the pool (scope bodies), as in work stealing.
//!
//! # Push: dealing (Algorithm 1)
//!
//! A task without a [`footprint`](Task::footprint) is pushed on the spawner's deque at the cost
//! of a work-stealing push (one null test more): dealing costs nothing when there is nothing
//! to deal by. Otherwise its bytes per node `D` are looked up in the placement registry
//! ([`accumulate_union_footprint`]), and [`LocalityModel::deal`] picks the node; an access
//! marked [`intensive`](Access::intensive) decides the node alone. A task that stays local goes
//! on the spawner's deque; a dealt task goes to its node's queue, and the [`DealReason`] is
//! queued with it for tracing.
//!
//! A node without workers (a runtime with fewer workers than cores) would keep its queue
//! forever, so a task dealt there goes to the node with workers of least distance-weighted cost
//! (for an intensive dependence: the nearest node with workers); the tasks dealt to one such
//! node take turns among the staffed nodes that tie, and are traced as
//! [`DealReason::Unstaffed`].
//!
//! Wake-ups: a task dealt to *another* node's queue is not run by the spawner, so the push
//! wakes a sleeper of that node through [`Sleep::new_work_for`] with its fence, which is
//! reliable (see [`crate::sleep`]): every worker of that node is awake or sees the task in its
//! `has_work` check. A task dealt to the spawner's own node needs the wake-up only as an
//! optimisation (the spawner pops its node queue at the latest when it waits), so it uses the
//! fence-free check, as work stealing does. When a queue grows beyond the length at which some
//! other node's workers may steal from it, one more sleeper anywhere is woken to help.
//!
//! # Pop and steal: finding work (Algorithm 2)
//!
//! A worker looks, in this order:
//!
//! 1. (`pop`) its own deque, newest first; then its node's queue, oldest first;
//! 2. (`steal`) the deques of the other workers of its node;
//! 3. the other nodes within the vicinity in order of distance (ties by index), and of each
//!    node `i`: the deques of its workers, then its queue, taking from the queue only if it
//!    holds more than `distance(n, i) / local * C` tasks (row `n`, the thief, reaching the
//!    data dealt to `i`: see [`crate::locality_policy`]). The check and the take are two
//!    steps: thieves that read the same length at once may take a queue below its threshold
//!    by as many tasks as there are of them, less one (the threshold is a heuristic of load,
//!    not an invariant; a lock per queue to make it exact would serialize every take).
//!
//! The vicinity (`NUMATASK_VICINITY`, an OS distance; section 4.2 of the paper) bounds every
//! steal: no worker takes a task, from a deque or a node queue, across a larger distance; a
//! task that a waiting worker short of stack hands on (see `crate::worker`) goes only to
//! workers within the vicinity of its node too, or back to a waiter that needs it when every
//! worker within the vicinity of its node is short of stack. Only scopes injected from outside
//! the pool go to any worker.
//!
//! The deques of steps 2 and 3 are a decision of this implementation: the paper's Algorithm 2
//! knows only node queues, and its Algorithm 1 puts the tasks it keeps local in the node's
//! queue, under the same thresholds (so with fine distribution, where every footprint is even,
//! "the imbalance can not be completely recovered from since steals are restricted", section
//! 6). Here they go to deques. A deque holds only tasks whose footprint is insignificant by
//! Algorithm 1's own test (small, or spread evenly, within the even tolerance, so that every
//! node reaches it at about the same cost), so running one on another node costs no remote traffic worth a threshold; stealing
//! them within the vicinity without a threshold (and before the dealt tasks of the same node,
//! whose moving does cost; a nearer node's dealt tasks above their threshold come first)
//! keeps task-parallel programs without footprints (fib), and evenly spread data, as
//! balanced as under work stealing.
//!
//! Backoff and sleep between failed rounds are the runtime core's exponential backoff
//! ([`crate::sleep`]), as the paper's "exponential back-off for steal attempts".

use std::cell::{Cell, RefCell};
use std::fmt;
use std::ops::Range;
use std::sync::Arc;

use numatask_alloc::{NodeBytes, Topology, accumulate_node_bytes};

use crate::config::format_size;
use crate::depend::{Access, union_ranges};
use crate::deque::{self, Steal, Stealer, Worker};
use crate::job::Task;
use crate::locality_policy::{DealReason, LocalityModel};
use crate::node_queue::NodeQueue;
use crate::runtime::Settings;
use crate::scheduler::{
    Found, Scheduler, SchedulerKind, TaskOrigin, WorkerCtx, WorkerPlace, push_to_deque,
};
use crate::sleep::Sleep;
use crate::sync::CachePadded;
use crate::sync::atomic::{AtomicUsize, Ordering};
use crate::trace::QueueChoice;

/// The locality-aware policy (see the module docs).
pub struct Locality {
    model: LocalityModel,
    num_nodes: usize,
    /// Row-major OS distances.
    distances: Box<[u32]>,
    node_queues: Box<[CachePadded<NodeQueue<Dealt>>]>,
    stealers: Box<[Stealer<Task>]>,
    /// The workers of each node, as runs of consecutive indices (several runs when there are
    /// more workers than cores and they wrap around).
    node_workers: Box<[Box<[Range<usize>]>]>,
    /// For each node, the queue length beyond which a worker of some other node may steal
    /// from its queue (`usize::MAX`: nobody may).
    steal_floor: Box<[usize]>,
    /// For each node, the workers of the other nodes within the vicinity, nearest nodes
    /// first: the deques its workers may steal from beyond their own node.
    remote_workers: Box<[Box<[usize]>]>,
    /// For each node, aligned with its steal order: the run of `remote_workers` that belongs
    /// to each node of the order (empty for a node without workers).
    remote_runs: Box<[Box<[Range<usize>]>]>,
    /// With a vicinity, for each node, the workers that may steal from a deque of that node
    /// (its own and those of the nodes within the vicinity), as runs of indices: a push
    /// wakes one of them, not a sleeper that could not take the task. Empty without one.
    reachable_workers: Box<[Box<[Range<usize>]>]>,
    /// The node of each worker.
    worker_nodes: Box<[usize]>,
    injector: NodeQueue<Task>,
    vicinity: Option<u32>,
    /// For each node, the turn among the equally good nodes with workers that a task dealt to
    /// it, when it has no workers, goes to ([`Locality::best_staffed`]).
    redirects: Box<[AtomicUsize]>,
}

/// Where a worker took its last task from.
#[derive(Clone, Copy, Debug)]
enum Taken {
    OwnDeque,
    /// The deque of worker `.0` (of this node or another).
    Deque(u32),
    /// A node's queue.
    Node {
        node: u32,
        reason: DealReason,
        stolen: bool,
    },
}

/// A task in a node queue, with the reason it was dealt there.
struct Dealt {
    task: Task,
    reason: DealReason,
}

/// A worker's part of [`Locality`].
pub struct LocalityLocal {
    deque: Worker<Task>,
    /// Whether every push goes to `deque` with work stealing's wake-up rule: one node (nothing
    /// to deal) and no vicinity. Kept here, next to the deque, so that the spawn path reads
    /// nothing of the shared part.
    plain_push: bool,
    /// The other workers of this worker's node.
    peers: Box<[usize]>,
    /// Where the next steal from peers starts (round robin).
    next_peer: Cell<usize>,
    /// Where the last task handed out came from (for tracing; one byte written on the
    /// deque fast path).
    taken: Cell<Taken>,
    /// Scratch `D` vectors (all bytes; intensive bytes), reused by every deal.
    scratch: RefCell<(NodeBytes, NodeBytes)>,
}

impl LocalityLocal {
    /// The worker's deque when every push goes there by [`push_to_deque`] (one node, no
    /// vicinity); `None` when pushes are decided by [`Locality::push`].
    #[inline]
    pub(crate) fn plain_deque(&self) -> Option<&Worker<Task>> {
        self.plain_push.then_some(&self.deque)
    }
}

impl fmt::Debug for Locality {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Locality")
            .field("workers", &self.stealers.len())
            .field(
                "node_queue_lengths",
                &self.node_queues.iter().map(|q| q.len()).collect::<Vec<_>>(),
            )
            .field("vicinity", &self.vicinity)
            .finish()
    }
}

/// Adds the bytes per NUMA node of the union of the `accesses` that `select` accepts to `out`
/// (each byte once, as the task touches it once; see [`union_ranges`]): the task's footprint,
/// `D` of the paper's Algorithm 1. The dependence tracker keeps byte ranges only; weighing
/// them by node, which asks the allocator where pages are, is this policy's business.
pub fn accumulate_union_footprint(
    accesses: &[Access],
    select: impl Fn(&Access) -> bool,
    out: &mut NodeBytes,
) {
    union_ranges(accesses, select, |start, len| {
        accumulate_node_bytes(std::ptr::without_provenance(start), len, out)
    });
}

/// Bytes per node of a footprint (the `D` of Algorithm 1), over `num_nodes` nodes.
pub fn footprint_node_bytes(footprint: &[Access], num_nodes: usize) -> NodeBytes {
    let mut d = NodeBytes::new(num_nodes);
    accumulate_union_footprint(footprint, |_| true, &mut d);
    d
}

/// Wakes a sleeper, out of line so that the push it follows stays small.
#[cold]
#[inline(never)]
fn wake_one(sleep: &Sleep) {
    sleep.new_work();
}

impl Locality {
    /// The policy's settings as `OMP_DISPLAY_ENV` lines: the footprint threshold of
    /// Algorithm 1 and the steal thresholds of Algorithm 2 by distance.
    pub(crate) fn display_lines(&self) -> Vec<(&'static str, String)> {
        let m = &self.model;
        let mut pairs: Vec<(u32, usize)> = (0..self.num_nodes)
            .flat_map(|n| m.steal_order(n).iter().map(|c| (c.distance, c.threshold)))
            .collect();
        pairs.sort_unstable();
        pairs.dedup();
        let thresholds = if pairs.is_empty() {
            "none (no other node in the vicinity)".to_owned()
        } else {
            pairs
                .iter()
                .map(|(d, t)| format!("distance {d}: more than {t} tasks"))
                .collect::<Vec<_>>()
                .join(", ")
        };
        vec![
            (
                "numatask.locality.footprint_threshold",
                if m.footprint_threshold() == 0 {
                    "0B (the topology reports no cache: every footprint uneven beyond the even \
                     tolerance is dealt)"
                        .to_owned()
                } else {
                    format!(
                        "{} (LLC / {} cores sharing it)",
                        format_size(usize::try_from(m.footprint_threshold()).unwrap_or(usize::MAX)),
                        m.cores_per_llc()
                    )
                },
            ),
            ("numatask.locality.steal_thresholds", thresholds),
        ]
    }

    #[inline]
    fn push_local(
        &self,
        local: &LocalityLocal,
        ctx: &WorkerCtx<'_>,
        task: Task,
    ) -> Result<(), Task> {
        local.deque.push(task)?;
        // The pusher runs its own deque at the latest when it waits: the fence-free checks are
        // enough (see `Sleep::sleepy_workers`). With a vicinity, a worker searching far away
        // cannot take the task, so the search throttle does not apply: a sleeper in reach is
        // woken whenever one may sleep.
        if self.vicinity.is_none() {
            if ctx.sleep.should_wake_for_push() {
                wake_one(ctx.sleep);
            }
        } else if ctx.sleep.sleepy_workers() != 0 {
            self.wake_reachable(ctx.place.node.min(self.num_nodes - 1), ctx.sleep);
        }
        Ok(())
    }

    /// Why Algorithm 1 kept a task with `footprint` on the spawner's deque, if it did so for a
    /// reason ([`DealReason::is_local`]): computed again, only for traces, so that dealing
    /// stores nothing with the tasks it keeps. `None` on one node or without a footprint
    /// (nothing to deal).
    pub(crate) fn kept_reason(&self, footprint: &[Access]) -> Option<DealReason> {
        if self.num_nodes == 1 || footprint.is_empty() {
            return None;
        }
        let (mut d, mut intensive) = (NodeBytes::default(), NodeBytes::default());
        // Small and even footprints do not depend on the dealing node.
        let deal = self.model_deal(footprint, 0, &mut d, &mut intensive);
        deal.reason.is_local().then_some(deal.reason)
    }

    /// Algorithm 1's decision for `footprint` dealt from node `here`, with `d` and `intensive`
    /// as scratch for the bytes per node of the whole footprint and of its intensive accesses.
    fn model_deal(
        &self,
        footprint: &[Access],
        here: usize,
        d: &mut NodeBytes,
        intensive: &mut NodeBytes,
    ) -> crate::locality_policy::Deal {
        d.clear();
        intensive.clear();
        accumulate_union_footprint(footprint, |_| true, d);
        let any_intensive = footprint.iter().any(|a| a.intensive);
        if any_intensive {
            accumulate_union_footprint(footprint, |a| a.intensive, intensive);
        }
        self.model
            .deal(d, here, any_intensive.then_some(&*intensive))
    }

    /// Algorithm 1 for a task with a footprint.
    #[cold]
    #[inline(never)]
    fn deal(&self, local: &LocalityLocal, ctx: &WorkerCtx<'_>, task: Task) -> Result<(), Task> {
        let here = ctx.place.node;
        let (node, reason) = {
            let mut scratch = local.scratch.borrow_mut();
            let (d, intensive) = &mut *scratch;
            let deal = self.model_deal(task.footprint(), here, d, intensive);
            if deal.reason.is_local() {
                return self.push_local(local, ctx, task);
            }
            if self.has_workers(deal.node) {
                (deal.node, deal.reason)
            } else {
                let intensive = deal.reason == DealReason::IntensiveDependence;
                let node = if intensive {
                    self.nearest_staffed(deal.node)
                } else {
                    self.least_cost_staffed(d, deal.node)
                };
                let reason = DealReason::Unstaffed {
                    chosen: u16::try_from(deal.node).unwrap_or(u16::MAX),
                    intensive,
                };
                (node, reason)
            }
        };
        let queue = &self.node_queues[node];
        queue.push(Dealt { task, reason });
        // Another node's queue: the reliable wake-up (with its fence). Our own node's: the
        // fence-free check suffices, as for our deque.
        if node != here || ctx.sleep.sleepy_workers() != 0 {
            self.wake_node(node, ctx.sleep);
        }
        if queue.len() > self.steal_floor[node] {
            ctx.sleep.new_work();
        }
        Ok(())
    }

    /// Algorithm 1's answer for a task with a footprint on several nodes when it follows from
    /// the declaration alone, without a registry lookup: fewer declared bytes than the
    /// threshold (`sum(D)` never exceeds them). An access marked intensive always goes through
    /// [`deal`](Self::deal), which it decides. (No footprint, or a single node, where `D` has
    /// one entry and its standard deviation is 0, is decided inline in [`Scheduler::push`].)
    fn stays_local(&self, footprint: &[Access]) -> bool {
        let mut declared = 0u64;
        for access in footprint {
            if access.intensive {
                return false;
            }
            declared = declared.saturating_add(access.len as u64);
        }
        declared <= self.model.footprint_threshold()
    }

    fn has_workers(&self, node: usize) -> bool {
        self.node_workers.get(node).is_some_and(|r| !r.is_empty())
    }

    /// The node with workers of least distance-weighted cost for `d`, which Algorithm 1 dealt
    /// to `chosen`, a node without workers (see [`best_staffed`](Self::best_staffed) for ties).
    fn least_cost_staffed(&self, d: &NodeBytes, chosen: usize) -> usize {
        self.best_staffed(chosen, |i| self.model.cost(d, i))
    }

    /// The node with workers nearest to `node`, which has none (see
    /// [`best_staffed`](Self::best_staffed) for ties).
    fn nearest_staffed(&self, node: usize) -> usize {
        let n = self.num_nodes;
        self.best_staffed(node, |j| u128::from(self.distances[j * n + node]))
    }

    /// The node with workers of least `cost`; of those that tie, each in turn (the turns of
    /// the tasks dealt to `chosen`): the tasks that Algorithm 1 deals to a node without
    /// workers spread over the nodes that are as good for them, rather than piling on one
    /// (with 4 workers spread over 8 nodes, each unstaffed node has several staffed
    /// neighbours at the same distance). Node 0 when no node has workers (never: a runtime
    /// has a worker).
    fn best_staffed(&self, chosen: usize, cost: impl Fn(usize) -> u128) -> usize {
        let costs: Vec<(u128, usize)> = (0..self.num_nodes)
            .filter(|&i| self.has_workers(i))
            .map(|i| (cost(i), i))
            .collect();
        let Some(&(best, _)) = costs.iter().min() else {
            return 0;
        };
        let tied: Vec<usize> = costs
            .into_iter()
            .filter_map(|(c, i)| (c == best).then_some(i))
            .collect();
        tied[self.redirects[chosen].fetch_add(1, Ordering::Relaxed) % tied.len()]
    }

    /// Wakes a sleeping worker of `node` if there is one (reliably: see the module docs).
    fn wake_node(&self, node: usize, sleep: &Sleep) {
        for run in self.node_workers[node].iter() {
            if sleep.new_work_for(run.clone()) {
                return;
            }
        }
    }

    /// Wakes a sleeper that may take a task preferring a busy worker of `node`
    /// ([`Scheduler::may_take_preferred`]): one of that node's workers, and one more anywhere
    /// when `waiting` is beyond the length at which another node may take such tasks (as a
    /// dealt task's push does for its queue).
    pub(crate) fn wake_for_preferred(&self, node: usize, waiting: usize, sleep: &Sleep) {
        let node = node.min(self.num_nodes - 1);
        for run in self.node_workers[node].iter() {
            if sleep.new_work_among(run.clone()) {
                break;
            }
        }
        if waiting > self.steal_floor[node] {
            sleep.new_work();
        }
    }

    /// The workers within the vicinity of `node` (see [`crate::scheduler::AnyScheduler`]);
    /// `None` without a vicinity.
    pub(crate) fn reaching(&self, node: usize) -> Option<&[Range<usize>]> {
        self.vicinity?;
        // A node beyond the topology is within everyone's reach (`within_reach`).
        self.reachable_workers.get(node).map(|runs| &**runs)
    }

    /// Wakes a sleeper that may steal from a deque of `node`, nearest first (with a
    /// vicinity: a sleeper beyond it would find nothing to take), and not a picky one.
    #[cold]
    #[inline(never)]
    fn wake_reachable(&self, node: usize, sleep: &Sleep) {
        for run in self.reachable_workers[node].iter() {
            if sleep.new_work_among(run.clone()) {
                return;
            }
        }
    }

    /// Takes the oldest task of `node`'s queue.
    #[inline]
    fn take_dealt(&self, local: &LocalityLocal, node: usize, stolen: bool) -> Option<Task> {
        let queue = &self.node_queues[node];
        if queue.is_empty() {
            return None;
        }
        let Dealt { task, reason } = queue.pop()?;
        local.taken.set(Taken::Node {
            node: node as u32,
            reason,
            stolen,
        });
        Some(task)
    }

    /// Steals the oldest task of the first of `victims` (from `start` on, wrapping) whose
    /// deque has one; returns it with the victim's position in `victims`.
    fn steal_deques(&self, victims: &[usize], start: usize) -> Option<(usize, Task)> {
        let n = victims.len();
        loop {
            let mut retry = false;
            for k in 0..n {
                let at = (start + k) % n;
                match self.stealers[victims[at]].steal() {
                    Steal::Success(task) => return Some((at, task)),
                    Steal::Retry => retry = true,
                    Steal::Empty => {}
                }
            }
            if !retry {
                return None;
            }
            crate::sync::spin_loop();
        }
    }

    /// [`Scheduler::push`] where a push is not plain ([`LocalityLocal::plain_deque`] is
    /// `None`, which the runtime has checked already): a task without a footprint, or any on
    /// one node (with a vicinity), to the deque inlined; the others through
    /// `push_with_footprint`, out of line.
    #[inline]
    pub(crate) fn push_decided(
        &self,
        local: &LocalityLocal,
        ctx: &WorkerCtx<'_>,
        task: Task,
    ) -> Result<(), Task> {
        if self.num_nodes == 1 || task.footprint().is_empty() {
            self.push_local(local, ctx, task)
        } else {
            self.push_with_footprint(local, ctx, task)
        }
    }

    /// [`Scheduler::push`] of a task with a footprint on a machine of several nodes: out of
    /// line, so that the push of every other task stays small enough to be inlined into the
    /// spawn path.
    #[inline(never)]
    fn push_with_footprint(
        &self,
        local: &LocalityLocal,
        ctx: &WorkerCtx<'_>,
        task: Task,
    ) -> Result<(), Task> {
        if self.stays_local(task.footprint()) {
            self.push_local(local, ctx, task)
        } else {
            self.deal(local, ctx, task)
        }
    }
}

impl Scheduler for Locality {
    type Local = LocalityLocal;

    fn create(
        topology: &Arc<Topology>,
        places: &[WorkerPlace],
        settings: &Settings,
    ) -> (Self, Vec<LocalityLocal>) {
        let model = LocalityModel::new(topology, settings.vicinity)
            .with_even_tolerance(settings.even_tolerance);
        // A topology has at least one node and an n x n matrix (the OS's, or 10/20 when the
        // OS gives none): `Topology` builds it so.
        let n = topology.num_nodes();
        let distances: Box<[u32]> = topology.distance_matrix().into();
        debug_assert_eq!(distances.len(), n * n);
        let dist = |a: usize, b: usize| distances[a * n + b];
        let node_of = |p: &WorkerPlace| p.node.min(n - 1);

        let mut node_workers: Vec<Vec<Range<usize>>> = vec![Vec::new(); n];
        for place in places {
            let runs = &mut node_workers[node_of(place)];
            match runs.last_mut() {
                Some(run) if run.end == place.index => run.end += 1,
                _ => runs.push(place.index..place.index + 1),
            }
        }
        let staffed: Vec<bool> = node_workers.iter().map(|r| !r.is_empty()).collect();
        let steal_floor = (0..n)
            .map(|victim| {
                (0..n)
                    .filter(|&thief| thief != victim && staffed[thief])
                    .filter_map(|thief| {
                        model
                            .steal_order(thief)
                            .iter()
                            .find(|c| c.node == victim)
                            .map(|c| c.threshold)
                    })
                    .min()
                    .unwrap_or(usize::MAX)
            })
            .collect();
        // Distances are read thief row, victim column (the thief reaching the victim's data),
        // as in the model's steal orders, with which `remote_runs` below lines these up.
        let within = |victim: usize, thief: usize| {
            settings
                .vicinity
                .is_none_or(|max| dist(thief, victim) <= max)
        };
        let remote_workers = (0..n)
            .map(|node| {
                let mut others: Vec<&WorkerPlace> = places
                    .iter()
                    .filter(|p| node_of(p) != node && within(node_of(p), node))
                    .collect();
                others.sort_by_key(|p| (dist(node, node_of(p)), node_of(p), p.index));
                others.iter().map(|p| p.index).collect()
            })
            .collect();
        let remote_runs = (0..n)
            .map(|thief| {
                let mut start = 0;
                model
                    .steal_order(thief)
                    .iter()
                    .map(|c| {
                        let count = places.iter().filter(|p| node_of(p) == c.node).count();
                        start += count;
                        start - count..start
                    })
                    .collect()
            })
            .collect();
        let reachable_workers = (0..n)
            .map(|victim| {
                if settings.vicinity.is_none() {
                    return Box::default();
                }
                let mut thieves: Vec<usize> = (0..n)
                    .filter(|&thief| thief == victim || within(victim, thief))
                    .collect();
                thieves.sort_by_key(|&thief| (thief != victim, dist(thief, victim), thief));
                thieves
                    .into_iter()
                    .flat_map(|thief| node_workers[thief].iter().cloned())
                    .collect()
            })
            .collect();

        let (locals, stealers): (Vec<_>, Vec<_>) = places
            .iter()
            .map(|place| {
                let (worker, stealer) = deque::deque(settings.deque_capacity);
                let peers: Box<[usize]> = places
                    .iter()
                    .filter(|p| node_of(p) == node_of(place) && p.index != place.index)
                    .map(|p| p.index)
                    .collect();
                let local = LocalityLocal {
                    deque: worker,
                    plain_push: n == 1 && settings.vicinity.is_none(),
                    next_peer: Cell::new(peers.iter().position(|&p| p > place.index).unwrap_or(0)),
                    peers,
                    taken: Cell::new(Taken::OwnDeque),
                    scratch: RefCell::new((NodeBytes::new(n), NodeBytes::new(n))),
                };
                (local, stealer)
            })
            .unzip();
        let shared = Locality {
            model,
            num_nodes: n,
            distances,
            node_queues: (0..n).map(|_| CachePadded::new(NodeQueue::new())).collect(),
            stealers: stealers.into_boxed_slice(),
            node_workers: node_workers
                .into_iter()
                .map(Vec::into_boxed_slice)
                .collect(),
            steal_floor,
            remote_workers,
            remote_runs,
            reachable_workers,
            worker_nodes: places.iter().map(node_of).collect(),
            injector: NodeQueue::new(),
            vicinity: settings.vicinity,
            redirects: (0..n).map(|_| AtomicUsize::new(0)).collect(),
        };
        (shared, locals)
    }

    fn kind(&self) -> SchedulerKind {
        SchedulerKind::Locality
    }

    /// Algorithm 1 deals tasks by their footprints.
    #[inline]
    fn reads_footprints(&self) -> bool {
        true
    }

    /// On one node without a vicinity every task goes to the spawner's deque exactly as under
    /// work stealing, by the same code (`push_to_deque`), decided by one flag of the
    /// worker's part, which the runtime reads together with the policy's tag (callgrind, fib
    /// 22, one thread: the spawn path runs the same instructions as work stealing's, against
    /// 14 more per spawn when the decision read the shared part). Elsewhere `push_decided`
    /// decides.
    #[inline]
    fn push(&self, local: &LocalityLocal, ctx: &WorkerCtx<'_>, task: Task) -> Result<(), Task> {
        match local.plain_deque() {
            Some(deque) => push_to_deque(deque, ctx.sleep, task),
            None => self.push_decided(local, ctx, task),
        }
    }

    fn inject(&self, task: Task, sleep: &Sleep) {
        self.injector.push(task);
        sleep.new_work();
    }

    #[inline]
    fn pop(&self, local: &LocalityLocal, ctx: &WorkerCtx<'_>) -> Option<Task> {
        if let Some(task) = local.deque.pop() {
            local.taken.set(Taken::OwnDeque);
            return Some(task);
        }
        self.take_dealt(local, ctx.place.node.min(self.num_nodes - 1), false)
    }

    fn steal(&self, local: &LocalityLocal, ctx: &WorkerCtx<'_>) -> Option<Task> {
        let here = ctx.place.node.min(self.num_nodes - 1);
        if !local.peers.is_empty()
            && let Some((at, task)) = self.steal_deques(&local.peers, local.next_peer.get())
        {
            local.next_peer.set(at);
            local.taken.set(Taken::Deque(local.peers[at] as u32));
            return Some(task);
        }
        // The other nodes in order of distance: each one's deques, then its queue above the
        // threshold.
        let remote = &self.remote_workers[here];
        for (candidate, run) in self
            .model
            .steal_order(here)
            .iter()
            .zip(&self.remote_runs[here])
        {
            if !run.is_empty()
                && let Some((at, task)) = self.steal_deques(&remote[run.clone()], 0)
            {
                local.taken.set(Taken::Deque(remote[run.start + at] as u32));
                return Some(task);
            }
            if self.node_queues[candidate.node].len() > candidate.threshold
                && let Some(task) = self.take_dealt(local, candidate.node, true)
            {
                return Some(task);
            }
        }
        None
    }

    fn has_injected(&self, _local: &LocalityLocal, _ctx: &WorkerCtx<'_>) -> bool {
        !self.injector.is_empty()
    }

    fn take_injected(&self, _local: &LocalityLocal, _ctx: &WorkerCtx<'_>) -> Option<Task> {
        // Two plain loads first: `pop` on an empty queue pays a `SeqCst` fence, and waiting
        // workers look here after every failed round of steals.
        if self.injector.is_empty() {
            return None;
        }
        self.injector.pop()
    }

    fn has_own_work(&self, local: &LocalityLocal, ctx: &WorkerCtx<'_>) -> bool {
        !local.deque.is_empty()
            || !self.node_queues[ctx.place.node.min(self.num_nodes - 1)].is_empty()
    }

    /// A task preferring a busy worker counts as dealt to that worker's node: its node's
    /// workers take it, those of the other nodes within the vicinity only while that node's
    /// mailboxes hold more than the threshold of Algorithm 2 for stealing from its queue.
    fn may_take_preferred(
        &self,
        _local: &LocalityLocal,
        ctx: &WorkerCtx<'_>,
        node: usize,
        waiting: usize,
    ) -> bool {
        let here = ctx.place.node.min(self.num_nodes - 1);
        node == here
            || self
                .model
                .steal_order(here)
                .iter()
                .any(|c| c.node == node && waiting > c.threshold)
    }

    /// Within the vicinity of the calling worker's node.
    fn within_reach(&self, _local: &LocalityLocal, ctx: &WorkerCtx<'_>, node: usize) -> bool {
        let (here, n) = (ctx.place.node.min(self.num_nodes - 1), self.num_nodes);
        node == here
            || node >= n
            || self
                .vicinity
                .is_none_or(|max| self.distances[here * n + node] <= max)
    }

    fn has_work(&self, local: &LocalityLocal, ctx: &WorkerCtx<'_>) -> bool {
        !local.deque.is_empty() || !self.injector.is_empty() || self.has_stealable_work(local, ctx)
    }

    /// Includes the worker's own node queue: a waiting worker takes from it (through `pop`)
    /// and must not sleep while a task dealt to its node waits there.
    fn has_stealable_work(&self, local: &LocalityLocal, ctx: &WorkerCtx<'_>) -> bool {
        let here = ctx.place.node.min(self.num_nodes - 1);
        let has_tasks = |&victim: &usize| !self.stealers[victim].is_empty();
        !self.node_queues[here].is_empty()
            || !self.injector.is_empty()
            || local.peers.iter().any(has_tasks)
            || self.remote_workers[here].iter().any(has_tasks)
            || self
                .model
                .steal_order(here)
                .iter()
                .any(|c| self.node_queues[c.node].len() > c.threshold)
    }

    fn origin(&self, local: &LocalityLocal, _ctx: &WorkerCtx<'_>, found: Found) -> TaskOrigin {
        match (found, local.taken.get()) {
            (Found::Injected, _) => TaskOrigin::INJECTED,
            (Found::Overflow, _) => TaskOrigin::OWN_DEQUE,
            // Traced by the worker itself; never asked of the policy.
            (Found::Priority | Found::Preferred { .. }, _) => TaskOrigin::INJECTED,
            (_, Taken::OwnDeque) => TaskOrigin::OWN_DEQUE,
            (_, Taken::Deque(worker)) => TaskOrigin {
                queue: QueueChoice::OwnDeque,
                stolen_from: self.worker_nodes.get(worker as usize).copied(),
            },
            (
                _,
                Taken::Node {
                    node,
                    reason,
                    stolen,
                },
            ) => TaskOrigin {
                queue: QueueChoice::Node {
                    node: node as usize,
                    reason,
                },
                stolen_from: stolen.then_some(node as usize),
            },
        }
    }
}
