//! The dependence tracker of one parent task: where sibling tasks are submitted.

use std::fmt;

use super::access::{Access, NormalizeScratch, Piece, normalize};
use super::mutex_set::MutexSet;
use super::node::{DepHandle, Ready, Registered, Registration, Released, lock};
use super::node_ref::NodeRef;
use super::range_map::RangeMap;
use crate::sync::{Arc, Mutex};

/// Orders the sibling tasks of one parent by their declared accesses (the rules and the design are in
/// the module documentation of the dependence tracker).
///
/// Tasks are ordered by submission: a task waits for the tasks submitted *before* it. Several
/// threads may submit to one tracker; their submissions are then ordered by an internal lock.
/// Completion does not take that lock.
///
/// A payload parked behind a [`DepHandle`] that was dropped without being completed is
/// dropped with the last reference to its node, wherever that goes: when a handle or the
/// tracker is dropped, or inside `submit` under the tracker's lock, halfway through updating
/// its map. A panic of the payload's destructor is therefore caught and discarded wherever the
/// node goes, so that the tracker stays consistent: give the payload a destructor that does
/// not panic if the panic matters. Nor may that destructor call into the same tracker
/// (`submit`, `prune`, `tracked_ranges`, its `Debug`): under the tracker's lock, the call
/// waits for itself forever.
///
/// A handle dropped without being completed leaves its successors parked; their nodes are
/// freed with the tracker, except where a `mutexinoutset` set is involved: a set held by the
/// abandoned task keeps the members waiting for it, and they keep the set (a reference cycle,
/// leaked). Complete or cancel every handle (the runtime does) to free everything. (The
/// runtime's payload, `Task`, has no destructor, and the runtime completes
/// every handle.)
pub struct DepTracker<T> {
    inner: Mutex<Inner<T>>,
}

struct Inner<T> {
    map: RangeMap<T>,
    /// Reusable buffers, so that a registration allocates nothing but its node.
    pieces: Vec<Piece>,
    scratch: NormalizeScratch,
    sets: Vec<Arc<MutexSet<T>>>,
}

/// What [`DepTracker::submit`] did with a task.
#[derive(Debug)]
pub enum Submitted<T> {
    /// Every predecessor has finished: run the payload now, then complete the handle.
    Ready(Ready<T>),
    /// The payload is parked in the tracker; a predecessor's completion will release it.
    Deferred,
    /// A predecessor panicked, or a member of a `mutexinoutset` set the task belongs to (see
    /// [`DepHandle::complete_panicked`]): the payload is handed back, must not run, and is
    /// already complete in the tracker. With it, what its completion released, to be handled
    /// as [`DepHandle::complete`]'s releases (empty but for a task cancelled at a poisoned
    /// set while it held sets, which it hands on to members that queued on them meanwhile).
    Cancelled(T, Vec<Released<T>>),
}

impl<T> DepTracker<T> {
    /// An empty tracker.
    pub fn new() -> Self {
        DepTracker {
            inner: Mutex::new(Inner {
                map: RangeMap::new(),
                pieces: Vec::new(),
                scratch: NormalizeScratch::default(),
                sets: Vec::new(),
            }),
        }
    }

    /// Registers a task that accesses `accesses` after every task submitted before it.
    ///
    /// The accesses are kept with the task ([`DepHandle::accesses`]). For ordering, zero-length
    /// accesses are ignored, and bytes that the task declares more than once get one merged
    /// kind: the declared kind if all declarations agree, [`InOut`](super::AccessKind::InOut)
    /// otherwise (a safe API is expected to reject such declarations before they get here).
    ///
    /// Cost: one allocation (the task node, from the thread's block cache), one lock of the
    /// tracker, a hash lookup per access (ordered `BTreeMap` queries only for ranges new to the
    /// tracker or partially overlapping earlier ones), and one lock per unfinished predecessor.
    pub fn submit(&self, accesses: &[Access], payload: T) -> Submitted<T> {
        let node = NodeRef::for_accesses(accesses);
        if accesses.iter().all(|a| a.end() == a.addr) {
            return Submitted::Ready(Ready {
                handle: DepHandle::new(node),
                payload,
            });
        }
        let mut guard = lock(&self.inner);
        let inner = &mut *guard;
        normalize(accesses, &mut inner.pieces, &mut inner.scratch);
        let mut reg = Registration::new(node, &mut inner.sets);
        inner.map.register_all(&inner.pieces, &mut reg);
        // Still under the lock: nobody may link to this task before its registration ends.
        let registered = reg.finish(payload);
        inner.map.maybe_prune();
        drop(guard);
        match registered {
            Registered::Ready(ready) => Submitted::Ready(ready),
            Registered::Deferred => Submitted::Deferred,
            Registered::Cancelled(payload, released) => Submitted::Cancelled(payload, released),
        }
    }

    /// How many disjoint ranges the tracker currently remembers (a diagnostic: it grows with
    /// the distinct ranges of unfinished tasks, and with finished ones until the next pruning).
    pub fn tracked_ranges(&self) -> usize {
        lock(&self.inner).map.len()
    }

    /// Forgets every range whose tasks have all finished without panic, recently used or not,
    /// to give memory back now (the tracker also prunes by itself as it grows). Later accesses
    /// to forgotten ranges cost an insertion instead of a lookup.
    pub fn prune(&self) {
        lock(&self.inner).map.prune();
    }
}

impl<T> Default for DepTracker<T> {
    fn default() -> Self {
        DepTracker::new()
    }
}

impl<T> fmt::Debug for DepTracker<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("DepTracker")
            .field("tracked_ranges", &self.tracked_ranges())
            .finish()
    }
}
