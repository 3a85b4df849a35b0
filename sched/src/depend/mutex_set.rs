//! Mutual exclusion among the members of a `mutexinoutset`.
//!
//! Members of one set are not ordered among themselves, but no two run at the same time. The
//! tracker enforces that itself, so the runtime only ever sees tasks that may run now: a member
//! whose predecessors have all finished takes each of its sets in one global order (their
//! creation); if one is held, it queues on that set (keeping the sets it already took) and the
//! holder's completion hands the set over and carries on taking the member's remaining sets.
//! Taking sets in one global order, and only once dependence-ready, cannot deadlock: a queued
//! member waits for a holder of a set later in the order, and the last holder in such a chain
//! holds everything it needs, so it runs and completes.
//!
//! A set is one object per run of consecutive `mutexinoutset` accesses to a range; when a range
//! is split, both halves share it. Sharing can exclude two members that touch different halves,
//! which costs concurrency, never correctness (the members of a set are unordered anyway). One
//! task that starts sets on several ranges uses one object for all of them, for the same
//! reason, so that a typical member holds a single set. The poison below is the object's too:
//! after a panic it may cancel members on bytes the panicking member did not touch, which
//! also costs only what a panic already lost.
//!
//! A member that panics poisons the sets it holds: whoever takes one after it (a waiting
//! member, or one submitted later) holds its sets as usual, then is cancelled instead of run,
//! handing them on; it would see what the panicking member left half-written. A member
//! cancelled so does not poison its other sets (it wrote nothing there).

use std::collections::VecDeque;
use std::fmt;

use super::node::{Outcome, acquire_sets, lock};
use super::node_ref::NodeRef;
use crate::sync::{Arc, Mutex};

/// One mutually exclusive set: who holds it and who waits for it, FIFO.
pub(crate) struct MutexSet<T> {
    state: Mutex<SetState<T>>,
    /// Its place in the one global order in which tasks take sets: creation order (unlike
    /// addresses, the same from one run to the next, which keeps loom's models
    /// deterministic).
    order: u64,
}

/// The next set's [`MutexSet::order`]. Not a model type: loom need not explore it.
static NEXT_ORDER: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

struct SetState<T> {
    held: bool,
    /// A member that held the set panicked: every later holder is cancelled.
    poisoned: bool,
    waiters: VecDeque<NodeRef<T>>,
}

impl<T> MutexSet<T> {
    pub(crate) fn new() -> Self {
        MutexSet {
            order: NEXT_ORDER.fetch_add(1, std::sync::atomic::Ordering::Relaxed),
            state: Mutex::new(SetState {
                held: false,
                poisoned: false,
                waiters: VecDeque::new(),
            }),
        }
    }

    /// The set's place in the order in which tasks take sets.
    pub(crate) fn order(&self) -> u64 {
        self.order
    }

    /// Takes the set for `node` (`Some`, saying whether the set is poisoned), or queues
    /// `node` on it (`None`). The caller holds `node`'s lock, and the waiter is resumed under
    /// that lock by [`MutexSet::release`], which therefore sees the caller's bookkeeping
    /// (`acquired`) complete.
    pub(crate) fn try_acquire_or_wait(&self, node: &NodeRef<T>) -> Option<bool> {
        let mut state = lock(&self.state);
        if state.held {
            state.waiters.push_back(node.clone());
            None
        } else {
            state.held = true;
            Some(state.poisoned)
        }
    }

    /// Gives the set up (`poison`: the holder panicked): to the first waiter if there is one,
    /// which then takes the rest of its sets; returns that waiter if it now holds them all,
    /// ready to run, or to be cancelled (a set it took is poisoned, or it holds them all).
    pub(crate) fn release(&self, poison: bool) -> Option<Outcome<T>> {
        let (waiter, poisoned) = {
            let mut state = lock(&self.state);
            state.poisoned |= poison;
            let waiter = state.waiters.pop_front();
            if waiter.is_none() {
                state.held = false;
            }
            (waiter?, state.poisoned)
        };
        // The set stays held: ownership passes to `waiter`. Lock order is node, then set, as
        // in `acquire_sets`; the set's lock is not held here.
        let mut links = lock(&waiter.links);
        debug_assert!(
            links
                .sets
                .get(links.acquired)
                .is_some_and(|s| std::ptr::eq(Arc::as_ptr(s), self)),
            "a waiter is queued on the set it takes next"
        );
        links.acquired += 1;
        links.set_poisoned |= poisoned;
        if !acquire_sets(&waiter, &mut links) {
            return None;
        }
        let payload = links
            .payload
            .take()
            .expect("a waiting member still has its payload");
        let cancelled = links.set_poisoned;
        drop(links);
        Some(Outcome::new(waiter, payload, cancelled))
    }
}

impl<T> fmt::Debug for MutexSet<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let state = lock(&self.state);
        f.debug_struct("MutexSet")
            .field("held", &state.held)
            .field("poisoned", &state.poisoned)
            .field("waiters", &state.waiters.len())
            .finish()
    }
}
