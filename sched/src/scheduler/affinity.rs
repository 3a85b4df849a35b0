//! Cache affinity: a task whose most access-intensive dependence is large runs, when it can, on
//! the worker that last ran a task on that same data, whose caches may still hold it.
//!
//! The policies place tasks by NUMA node; inside a node any worker may run a task, and the one
//! that gets it is usually the worker that released it (the last predecessor to finish). For a
//! blocked factorization that is the worker that wrote one of the task's *inputs*, while the
//! block the task updates, its intensive dependence, was last written somewhere else and must
//! move between caches. With blocks of tens of KiB, that move costs more than handing the task
//! to another worker, which is what this layer does:
//!
//! - **key**: a task's intensive access ([`Access::intensive`], or its only access when it
//!   declares one), if at least `min_bytes` long (`NUMATASK_AFFINITY`, default 32 KiB: below
//!   that, the hand-over costs more than the data it saves moving; measured in BENCHMARKS.md).
//!   The start address is hashed into a table of [`SLOTS`] entries.
//! - **record**: the table remembers, per key, the worker that last took a task with that key
//!   (the worker a task was pushed to, or the thief that stole it). A collision only misplaces
//!   a task; it never loses one.
//! - **push**: a task whose key names another worker goes to that worker's mailbox (a
//!   [`NodeQueue`]), waking that worker if it sleeps, or some sleeper otherwise; any other task
//!   goes to the policy.
//! - **pop**: the policy's own work first (the newest, cache-warm), then the worker's mailbox.
//! - **steal**: the policy's steal first, then the other workers' mailboxes, so that a task
//!   never waits for a busy worker while another is idle.
//!
//! The layer sits around either policy ([`WorkerQueues`](super::WorkerQueues)); it is off for
//! the locality-aware policy on machines with several NUMA nodes, where Algorithm 1 decides the
//! node and the node's queue is shared by its workers.

use crate::depend::Access;
use crate::node_queue::NodeQueue;
use crate::sleep::Sleep;
use crate::sync::atomic::{AtomicU32, Ordering};

/// The default `min_bytes`: the smallest intensive access that is placed by affinity.
pub const DEFAULT_MIN_BYTES: usize = 32 << 10;

/// Entries of the last-worker table (a power of two).
pub const SLOTS: usize = 1 << 12;

/// No worker recorded.
const NONE: u32 = u32::MAX;

/// The shared part of the layer: the last-worker table and one mailbox per worker (of tasks,
/// `T`, in the runtime).
pub(crate) struct Affinity<T> {
    min_bytes: usize,
    last: Box<[AtomicU32]>,
    mailboxes: Box<[NodeQueue<T>]>,
    /// The NUMA node of each worker (for tracing).
    worker_nodes: Box<[usize]>,
}

/// The access a task is placed by, if any: the first one marked intensive, or the only one.
#[inline]
pub(crate) fn key_access(footprint: &[Access]) -> Option<&Access> {
    match footprint {
        [only] => Some(only),
        many => many.iter().find(|a| a.intensive),
    }
}

impl<T> Affinity<T> {
    pub(crate) fn new(min_bytes: usize, worker_nodes: Box<[usize]>) -> Self {
        Affinity {
            min_bytes,
            last: (0..SLOTS).map(|_| AtomicU32::new(NONE)).collect(),
            mailboxes: worker_nodes.iter().map(|_| NodeQueue::new()).collect(),
            worker_nodes,
        }
    }

    /// The table slot of a task's key, if its footprint gives one.
    #[inline]
    fn slot(&self, footprint: &[Access]) -> Option<usize> {
        let access = key_access(footprint)?;
        if access.len < self.min_bytes {
            return None;
        }
        // Fibonacci hashing of the cache-line address; the top bits index the table.
        let h = ((access.addr >> 6) as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        Some((h >> (64 - SLOTS.trailing_zeros())) as usize)
    }

    /// Where a task with `footprint`, pushed by worker `me`, belongs: `Some(w)` for another
    /// worker's mailbox, `None` for the pusher's policy (and then `me` is recorded as the
    /// task's worker).
    #[inline]
    pub(crate) fn target(&self, footprint: &[Access], me: usize) -> Option<usize> {
        let slot = self.slot(footprint)?;
        let last = self.last[slot].load(Ordering::Relaxed) as usize;
        if last < self.mailboxes.len() && last != me {
            return Some(last);
        }
        self.last[slot].store(me as u32, Ordering::Relaxed);
        None
    }

    /// Records that worker `me` took a task with `footprint` (a thief: the task's data now
    /// comes to `me`).
    #[inline]
    pub(crate) fn record(&self, footprint: &[Access], me: usize) {
        if let Some(slot) = self.slot(footprint) {
            self.last[slot].store(me as u32, Ordering::Relaxed);
        }
    }

    /// Puts `task` in worker `to`'s mailbox and makes sure someone will take it: `to` if it
    /// sleeps; otherwise `to` is awake or will see it (its `has_work` covers its mailbox), and
    /// a sleeper, if any is announced, is woken to help.
    pub(crate) fn send(&self, to: usize, task: T, sleep: &Sleep) {
        self.mailboxes[to].push(task);
        if !sleep.new_work_for(to..to + 1) && sleep.should_wake_for_push() {
            sleep.new_work();
        }
    }

    /// The oldest task in worker `me`'s mailbox.
    #[inline]
    pub(crate) fn pop_own(&self, me: usize) -> Option<T> {
        self.mailboxes[me].pop()
    }

    /// A task from another worker's mailbox, trying them in order from `me + 1`, with the
    /// worker it came from (the caller records itself as the task's worker).
    pub(crate) fn steal(&self, me: usize) -> Option<(T, usize)> {
        let n = self.mailboxes.len();
        (1..n)
            .map(|k| (me + k) % n)
            .find_map(|from| Some((self.mailboxes[from].pop()?, from)))
    }

    /// Whether any mailbox holds a task (a cheap, possibly stale check).
    pub(crate) fn has_work(&self) -> bool {
        self.mailboxes.iter().any(|m| !m.is_empty())
    }

    /// The NUMA node of worker `w`.
    pub(crate) fn node_of(&self, w: usize) -> usize {
        self.worker_nodes[w]
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use crate::depend::AccessKind;

    const BIG: usize = DEFAULT_MIN_BYTES;

    fn layer(workers: usize) -> Affinity<u32> {
        Affinity::new(BIG, vec![0; workers].into())
    }

    #[test]
    fn a_task_follows_the_last_worker_of_its_intensive_data() {
        let aff = layer(4);
        let block = |kind| Access::new(1 << 20, BIG, kind);
        let other = Access::new(8 << 20, BIG, AccessKind::In);
        // First seen on worker 2: stays there (the pusher's own queue) and is recorded.
        assert_eq!(aff.target(&[block(AccessKind::InOut)], 2), None);
        // The next task on the same block, pushed by worker 0, goes to worker 2, whether the
        // block is its only access or its marked one among several.
        assert_eq!(aff.target(&[block(AccessKind::InOut)], 0), Some(2));
        let marked = [other, block(AccessKind::InOut).intensive()];
        assert_eq!(aff.target(&marked, 0), Some(2));
        // A thief that takes it becomes the block's worker.
        aff.record(&marked, 3);
        assert_eq!(aff.target(&marked, 1), Some(3));
        // Pushed by the recorded worker itself: its own queue.
        assert_eq!(aff.target(&[block(AccessKind::In)], 3), None);
        // Other data is unaffected.
        assert_eq!(aff.target(&[other], 1), None);
    }

    #[test]
    fn small_unmarked_or_absent_keys_are_left_to_the_policy() {
        let aff = layer(2);
        let small = Access::new(1 << 20, BIG - 1, AccessKind::InOut);
        aff.record(&[small], 1);
        assert_eq!(aff.target(&[small], 0), None, "below min_bytes");
        let a = Access::new(1 << 22, BIG, AccessKind::In);
        let b = Access::new(1 << 23, BIG, AccessKind::InOut);
        aff.record(&[b], 1);
        assert_eq!(aff.target(&[a, b], 0), None, "none marked of two");
        assert_eq!(aff.target(&[], 0), None, "no footprint");
        assert_eq!(aff.target(&[b], 0), Some(1), "the same block alone");
    }

    #[test]
    fn mailboxes_hand_out_every_task_once_own_first_then_from_the_next_worker() {
        let aff = layer(3);
        let sleep = Sleep::new(3);
        for (task, to) in [(10, 0), (11, 1), (12, 1), (13, 2)] {
            aff.send(to, task, &sleep);
        }
        assert!(aff.has_work());
        assert_eq!(aff.pop_own(1), Some(11));
        // Worker 1 steals from worker 2 first (the next one), then from 0; never its own.
        assert_eq!(aff.steal(1), Some((13, 2)));
        assert_eq!(aff.steal(1), Some((10, 0)));
        assert_eq!(aff.steal(1), None);
        assert_eq!(aff.pop_own(1), Some(12));
        assert_eq!(aff.pop_own(1), None);
        assert!(!aff.has_work());
    }
}
