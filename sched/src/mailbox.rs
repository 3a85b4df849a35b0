//! Mailboxes: where a task that prefers a worker ([`TaskBuilder::prefer_worker`]) waits for
//! that worker, its *owner*. One small locked FIFO per worker, next to the policy's queues.
//!
//! # Who takes a letter
//!
//! - The owner takes its letters (the tasks in its mailbox), oldest first, before any other
//!   work of its own (`WorkerThread::pop_own`): one load of the mailbox's length on its
//!   path to every task, the only cost to programs that never use the clause.
//! - Another worker, a *taker*, takes a letter only while the owner is not
//!   [free](crate::sleep), that is not awake and searching for work: a free owner takes it
//!   itself within a round, and the cache it would warm is the point of the clause. An owner
//!   asleep is woken by the letter, but a taker that finds the letter first runs it rather
//!   than leave it for the tens of microseconds the wake-up takes (on two cores, with workers
//!   that sleep at once, a saxpy of 65536 floats in 8 tasks took 64 to 95 µs when its tasks
//!   waited for their sleeping workers, 40 to 63 µs when awake ones took them, 37 to 45 µs
//!   without preferences). Takers look
//!   at mailboxes after every other source (their own queues, stealing, injected scopes, tasks
//!   set aside) came up empty; the policy bounds them
//!   ([`Scheduler::may_take_preferred`](crate::scheduler::Scheduler::may_take_preferred):
//!   under the locality-aware policy a mailbox counts with its node's queue).
//! - A letter its owner posted to itself (a task that prefers the worker spawning it) is
//!   *kept* for the owner while the spawning task runs on: the owner is busy, but only until
//!   its next wait or the task's end, where it takes the letter first. Takers leave such a
//!   letter until the owner took a letter since it was posted (it then runs one of them and
//!   others may help with the rest) or [`KEEP_FOR`] passed (a spawner that computes on, or
//!   blocks, does not hold its letters back for long). Without this, a worker that spawns
//!   tasks preferring itself and others would lose its own to whichever worker happened to
//!   be searching, and the next launch of a kernel over the same data would not find its
//!   groups where the last one ran.
//!
//! So a hint never leaves a task waiting long for a busy or sleeping worker while others idle,
//! and a worker searching for work gets the tasks that prefer it. What "free" cannot tell is
//! whether the owner is on a processor: with more threads than cores, a searching owner that
//! the OS has descheduled holds its letters until it runs again (the runtime trusts searching
//! workers in the same way when a push wakes nobody because someone searches). Measured on
//! two cores, two `active` workers and the thread waiting for the launch: the saxpy above
//! took 92 µs instead of 16.
//!
//! # Wake-ups: no letter waits for a busy owner while a taker sleeps
//!
//! Posting to another worker: `push; fence(SeqCst)` (in [`Sleep::new_work_for`], which wakes
//! the owner if it sleeps) then `is_free(owner)?`; a busy owner's letter wakes a taker. The
//! owner, ending an idle period (it found other work, or its wait ended), does
//! `free = false; fence(SeqCst); letters waiting?` and wakes a taker if so. Of the two fences
//! one comes first in their total order, and the thread after it sees the other's write: the
//! letter is seen by the free owner or a woken taker (see `docs/sleep.md` for the pattern).
//! A sleeping worker's last check (`has_work`) counts its own letters and the letters it may
//! take, so a taker woken for one does not go back to sleep while it waits.
//!
//! Posting to itself needs only the fence-free check of a push to the own deque
//! ([`Sleep::should_wake_for_push`]): the owner takes the letter at its next wait at the
//! latest. The owner's fence after its idle period is skipped while no letter was ever
//! posted: the gate is loaded `SeqCst` after the `SeqCst` store that marks the owner busy,
//! and set `SeqCst` before the first letter, so that an owner that reads it unset is seen busy
//! by the first poster (a Dekker pair of `SeqCst` accesses, which the C++ model orders).
//!
//! A locked queue rather than a lock-free one: letters are rare next to spawns (a kernel
//! launch posts a few per worker), the owner tests the length without the lock, and a lock
//! keeps the rules above (the owner's count of takes, kept letters) in one critical section.
//!
//! [`TaskBuilder::prefer_worker`]: crate::TaskBuilder::prefer_worker
//! [`Sleep::new_work_for`]: crate::sleep::Sleep::new_work_for
//! [`Sleep::should_wake_for_push`]: crate::sleep::Sleep::should_wake_for_push

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use crate::job::Task;
use crate::scheduler::WorkerPlace;
use crate::sync::CachePadded;

/// How long takers leave a letter its owner posted to itself while the owner stays busy and
/// takes none of its letters (module docs): the time an idle worker searches before it
/// sleeps, so that a spawner that waits soon after it spawned keeps its letters, and one
/// that computes on loses them to idle workers after about one search.
pub(crate) const KEEP_FOR: Duration = Duration::from_micros(200);

/// The mailboxes of a runtime's workers.
pub(crate) struct Mailboxes {
    boxes: Box<[Arc<CachePadded<Mailbox>>]>,
    /// The node of each worker.
    nodes: Box<[usize]>,
    /// For each node, the letters waiting in its workers' mailboxes (a policy that bounds
    /// takes by the work waiting on a node reads it; approximate, as queue lengths are).
    waiting: Box<[AtomicUsize]>,
    /// Whether a letter was ever posted: gates the owner's fence after an idle period.
    used: AtomicBool,
}

/// One worker's mailbox.
pub(crate) struct Mailbox {
    letters: Mutex<Letters>,
    /// The number of letters, read without the lock (by the owner before every pop).
    len: AtomicUsize,
}

/// What the lock of a mailbox guards.
#[derive(Default)]
struct Letters {
    queue: VecDeque<Letter>,
    /// How many letters the owner took so far.
    owner_takes: u64,
}

/// A task in a mailbox.
struct Letter {
    task: Task,
    /// For a letter the owner posted to itself: kept for it until it takes a letter (its
    /// count of takes moves past this) or until the instant given.
    kept: Option<(u64, Instant)>,
}

impl Mailbox {
    /// Whether the mailbox may hold a letter (`Relaxed`: the owner's fast test; the lock
    /// orders what it then takes, and the sleep protocol's fences order what a sleeper
    /// reads).
    #[inline]
    pub(crate) fn has_letters(&self) -> bool {
        self.len.load(Ordering::Relaxed) != 0
    }

    fn lock(&self) -> MutexGuard<'_, Letters> {
        self.letters.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Takes the oldest letter as its owner.
    fn take_as_owner(&self) -> Option<Task> {
        let mut letters = self.lock();
        let letter = letters.queue.pop_front()?;
        letters.owner_takes += 1;
        self.len.store(letters.queue.len(), Ordering::SeqCst);
        Some(letter.task)
    }

    /// Takes the oldest letter as a taker, unless it is kept for the owner (module docs).
    fn take_as_taker(&self) -> Option<Task> {
        let mut letters = self.lock();
        let front = letters.queue.front()?;
        if front.kept.is_some() && is_kept(front.kept, letters.owner_takes, Instant::now()) {
            return None;
        }
        let letter = letters.queue.pop_front()?;
        self.len.store(letters.queue.len(), Ordering::SeqCst);
        Some(letter.task)
    }

    fn post(&self, task: Task, keep: bool) {
        let mut letters = self.lock();
        let kept = keep.then(|| (letters.owner_takes, Instant::now() + KEEP_FOR));
        letters.queue.push_back(Letter { task, kept });
        self.len.store(letters.queue.len(), Ordering::SeqCst);
    }
}

/// Whether a letter posted with `kept` is still kept for its owner, who took `owner_takes`
/// letters so far, at `now` (module docs).
fn is_kept(kept: Option<(u64, Instant)>, owner_takes: u64, now: Instant) -> bool {
    kept.is_some_and(|(takes, until)| takes == owner_takes && now < until)
}

impl Mailboxes {
    /// Empty mailboxes for the workers of `places`, on `num_nodes` nodes.
    pub(crate) fn new(places: &[WorkerPlace], num_nodes: usize) -> Self {
        let num_nodes = num_nodes.max(1);
        Mailboxes {
            boxes: places
                .iter()
                .map(|_| {
                    Arc::new(CachePadded::new(Mailbox {
                        letters: Mutex::new(Letters::default()),
                        len: AtomicUsize::new(0),
                    }))
                })
                .collect(),
            nodes: places.iter().map(|p| p.node.min(num_nodes - 1)).collect(),
            waiting: (0..num_nodes).map(|_| AtomicUsize::new(0)).collect(),
            used: AtomicBool::new(false),
        }
    }

    /// Worker `worker`'s mailbox, for the worker to keep at hand. `worker` is in range.
    pub(crate) fn mailbox(&self, worker: usize) -> Arc<CachePadded<Mailbox>> {
        Arc::clone(&self.boxes[worker])
    }

    /// Number of mailboxes (workers).
    pub(crate) fn len(&self) -> usize {
        self.boxes.len()
    }

    /// The node of worker `worker` (0 out of range).
    pub(crate) fn node_of(&self, worker: usize) -> usize {
        self.nodes.get(worker).copied().unwrap_or(0)
    }

    /// The letters waiting on `node`'s workers.
    pub(crate) fn waiting_on(&self, node: usize) -> usize {
        self.waiting
            .get(node)
            .map_or(0, |w| w.load(Ordering::Relaxed))
    }

    /// Whether a letter was ever posted (`SeqCst`: module docs).
    #[inline]
    pub(crate) fn in_use(&self) -> bool {
        self.used.load(Ordering::SeqCst)
    }

    /// Puts `task` in worker `to`'s mailbox (`to` in range); `keep` for a letter the owner
    /// posts to itself (module docs). The caller wakes whom it must.
    pub(crate) fn post(&self, to: usize, task: Task, keep: bool) {
        if !self.used.load(Ordering::Relaxed) {
            self.used.store(true, Ordering::SeqCst);
        }
        self.waiting[self.nodes[to]].fetch_add(1, Ordering::Relaxed);
        self.boxes[to].post(task, keep);
    }

    /// Takes the oldest letter of `me`'s own mailbox.
    #[inline]
    pub(crate) fn take_own(&self, me: usize) -> Option<Task> {
        let task = self.boxes.get(me)?.take_as_owner()?;
        self.waiting[self.nodes[me]].fetch_sub(1, Ordering::Relaxed);
        Some(task)
    }

    /// Takes, for worker `me`, the oldest letter of another worker's mailbox that
    /// `may_take(owner)` allows (the caller's tests: the owner is busy, the policy lets `me`
    /// run it) and that is not kept for its owner; returns it with its owner. Mailboxes are
    /// tried from `me`'s next one on, so that takers spread over them.
    pub(crate) fn take_for(
        &self,
        me: usize,
        may_take: impl Fn(usize) -> bool,
    ) -> Option<(Task, usize)> {
        if !self.in_use() {
            return None;
        }
        let n = self.boxes.len();
        (1..n).map(|k| (me + k) % n).find_map(|owner| {
            let mailbox = &self.boxes[owner];
            if !mailbox.has_letters() || !may_take(owner) {
                return None;
            }
            let task = mailbox.take_as_taker()?;
            self.waiting[self.nodes[owner]].fetch_sub(1, Ordering::Relaxed);
            Some((task, owner))
        })
    }

    /// Whether another worker's mailbox holds a letter that `may_take(owner)` allows, kept
    /// for its owner or not (a taker that sees one does not sleep: a kept letter is its to
    /// take soon, unless the owner takes it first). For a worker about to sleep.
    pub(crate) fn has_for(&self, me: usize, may_take: impl Fn(usize) -> bool) -> bool {
        self.in_use()
            && (0..self.boxes.len())
                .any(|owner| owner != me && self.boxes[owner].has_letters() && may_take(owner))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_letter_is_kept_until_its_owner_takes_one_or_the_time_passes() {
        let posted = Instant::now();
        let kept = Some((3, posted + KEEP_FOR));
        assert!(
            is_kept(kept, 3, posted),
            "kept while the owner took nothing"
        );
        assert!(!is_kept(kept, 4, posted), "the owner took a letter since");
        assert!(
            !is_kept(kept, 3, posted + KEEP_FOR),
            "kept for KEEP_FOR at most"
        );
        assert!(
            !is_kept(None, 3, posted),
            "a letter from another worker is not kept"
        );
    }
}
