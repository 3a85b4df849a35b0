//! Task nodes: the predecessor counter, the successor list, and how a finished task releases the
//! tasks waiting for it.
//!
//! Every submitted task gets one [`Node`], shared (a counted [`NodeRef`]) by its [`DepHandle`], by the segments
//! of the range map that name it, and by the successor lists of its predecessors. The protocol
//! between the one thread registering a task and the threads completing its predecessors is
//! described in the module documentation of [`crate::depend`] ("Memory-ordering contract"); the
//! code below carries the same names.

use std::fmt;
use std::mem;
use std::ptr;
use std::sync::PoisonError;

use super::access::{Access, AccessList};
use super::mutex_set::MutexSet;
use super::node_ref::{NodeRef, TrackerRef};
use super::succ_list::SuccList;
use crate::sync::atomic::{AtomicU32, AtomicUsize, Ordering};
use crate::sync::{Arc, Mutex, MutexGuard};

/// `flags` bit: the task has finished (ran, or was cancelled). Set under the node's lock.
pub(crate) const DONE: u32 = 1;
/// `flags` bit: the task panicked, or a predecessor did (then the task is, or will be,
/// cancelled instead of run).
pub(crate) const POISONED: u32 = 2;

/// Initial value of `pending`: the registration guard. No completion can bring `pending` to zero
/// before the registering thread subtracts `GUARD - edges`, because a task has fewer than
/// `GUARD` predecessors.
pub(crate) const GUARD: usize = isize::MAX as usize;

/// Locks `m`. The runtime's callbacks never run under these locks and the tracker does not
/// panic while holding one (a payload destructor's panic is caught where the node is
/// dropped: see [`DepTracker`]), so a poisoned lock still holds consistent data.
///
/// [`DepTracker`]: super::DepTracker
pub(crate) fn lock<M>(m: &Mutex<M>) -> MutexGuard<'_, M> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

/// One submitted task.
///
/// `repr(C)`, in this order: what completing threads write (the counter, the flags, the lock
/// and what it guards) on the node's first cache lines, the declared accesses (written once)
/// after them, so that the range map's count that follows the node ([`TrackerRef`]) shares no
/// line with a completer's writes.
#[repr(C)]
pub(crate) struct Node<T> {
    /// `GUARD` + (edges from unfinished predecessors) - (predecessors finished), until the
    /// registering thread subtracts `GUARD - edges`; whoever brings it to zero releases the task.
    pub(crate) pending: AtomicUsize,
    /// [`DONE`] and [`POISONED`].
    pub(crate) flags: AtomicU32,
    pub(crate) links: Mutex<Links<T>>,
    /// The accesses as declared (the task's footprint).
    pub(crate) accesses: AccessList,
}

/// The mutable part of a node, under its lock.
pub(crate) struct Links<T> {
    /// Tasks registered after this one that must wait for it (one entry per edge).
    pub(crate) successors: SuccList<T>,
    /// The payload, parked here from the end of registration until the task is released.
    pub(crate) payload: Option<T>,
    /// The mutual-exclusion sets the task belongs to, sorted by creation (the lock order).
    pub(crate) sets: Vec<Arc<MutexSet<T>>>,
    /// How many of `sets` the task holds (always a prefix).
    pub(crate) acquired: usize,
    /// One of the sets it took was poisoned: a member that held it panicked, so once it
    /// holds every set the task is cancelled instead of run (it would see what the panicking
    /// member left half-written).
    pub(crate) set_poisoned: bool,
}

impl<T> Node<T> {
    /// Writes a fresh node for `accesses` at `dst`, field by field: building the node first and
    /// moving it there made the compiler copy its 170 bytes with `memcpy` on every submit.
    ///
    /// # Safety
    ///
    /// `dst` is valid for writes of a `Node<T>` and properly aligned; whatever it held is
    /// overwritten without being dropped.
    #[inline]
    pub(crate) unsafe fn init(dst: *mut Self, accesses: &[Access]) {
        // Stops compiling when a field is added that the writes below do not cover.
        let _every_field = |n: &Self| {
            let Node {
                pending: _,
                flags: _,
                links: _,
                accesses: _,
            } = n;
        };
        // SAFETY: the caller's promise; each field is written once, in place.
        unsafe {
            ptr::addr_of_mut!((*dst).pending).write(AtomicUsize::new(GUARD));
            ptr::addr_of_mut!((*dst).flags).write(AtomicU32::new(0));
            ptr::addr_of_mut!((*dst).links).write(Mutex::new(Links {
                successors: SuccList::Empty,
                payload: None,
                sets: Vec::new(),
                acquired: 0,
                set_poisoned: false,
            }));
            AccessList::init(ptr::addr_of_mut!((*dst).accesses), accesses);
        }
    }

    /// Finished without panic, and so without poison to pass on: a segment naming only inert
    /// tasks orders nothing and can be forgotten. A stale answer is `false`, never a wrong
    /// `true` (`DONE` is never cleared).
    pub(crate) fn is_inert(&self) -> bool {
        self.flags.load(Ordering::Acquire) == DONE
    }
}

impl<T> Drop for Node<T> {
    /// Drops the successors iteratively: a node is only dropped with successors if the runtime
    /// never completed it, and a long chain of such nodes must not overflow the stack.
    fn drop(&mut self) {
        let links = self.links.get_mut().unwrap_or_else(PoisonError::into_inner);
        if links.successors.is_empty() {
            return;
        }
        let mut stack: Vec<NodeRef<T>> = mem::take(&mut links.successors).into_iter().collect();
        while let Some(next) = stack.pop() {
            next.drop_with(|node| {
                let links = node.links.get_mut().unwrap_or_else(PoisonError::into_inner);
                stack.extend(mem::take(&mut links.successors));
            });
        }
    }
}

/// A list of nodes that is usually empty or holds one node (the readers of a range, the members
/// of a set run); only longer lists allocate, and a cleared list keeps its buffer.
#[derive(Default)]
pub(crate) enum NodeList<T> {
    #[default]
    Empty,
    One(TrackerRef<T>),
    Many(Vec<TrackerRef<T>>),
}

impl<T> Clone for NodeList<T> {
    fn clone(&self) -> Self {
        match self {
            NodeList::Empty => NodeList::Empty,
            NodeList::One(n) => NodeList::One(n.clone()),
            NodeList::Many(v) => NodeList::Many(v.clone()),
        }
    }
}

impl<T> NodeList<T> {
    pub(crate) fn one(node: TrackerRef<T>) -> Self {
        NodeList::One(node)
    }

    pub(crate) fn as_slice(&self) -> &[TrackerRef<T>] {
        match self {
            NodeList::Empty => &[],
            NodeList::One(n) => std::slice::from_ref(n),
            NodeList::Many(v) => v,
        }
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.as_slice().is_empty()
    }

    pub(crate) fn push(&mut self, node: TrackerRef<T>) {
        match self {
            NodeList::Empty => *self = NodeList::One(node),
            NodeList::One(_) => {
                let NodeList::One(first) = mem::take(self) else {
                    unreachable!("matched One above")
                };
                // Room for 16 at once: a range read by one task is often read by a whole
                // row of them (each reallocation is a copy and a trip to the allocator).
                let mut v = Vec::with_capacity(16);
                v.push(first);
                v.push(node);
                *self = NodeList::Many(v);
            }
            NodeList::Many(v) => v.push(node),
        }
    }

    /// Pushes `node`, first dropping inert nodes if the buffer is full: a range read by many
    /// tasks and never written again keeps only the readers that still matter. Each scan of
    /// `n` entries either halves the list or precedes a doubling of the buffer, so the cost
    /// is amortized O(1) per push.
    pub(crate) fn push_pruning(&mut self, node: TrackerRef<T>) {
        if let NodeList::Many(v) = self
            && v.len() == v.capacity()
            && v.len() >= 8
        {
            v.retain(|n| !n.is_inert());
        }
        self.push(node);
    }

    /// Empties the list, keeping a `Many` buffer for the next readers.
    pub(crate) fn clear(&mut self) {
        match self {
            NodeList::Many(v) => v.clear(),
            _ => *self = NodeList::Empty,
        }
    }

    pub(crate) fn all_inert(&self) -> bool {
        self.as_slice().iter().all(|n| n.is_inert())
    }
}

/// A submitted task, for the runtime to complete once it has run (or panicked).
///
/// Completing consumes the handle, so a task is completed at most once. A handle dropped
/// without being completed leaves the task's successors parked (their payloads are dropped
/// with the last reference to them, or leaked if they wait for a `mutexinoutset` the dropped
/// task holds): the runtime must complete every handle it is given.
pub struct DepHandle<T> {
    node: NodeRef<T>,
}

impl<T> DepHandle<T> {
    pub(crate) fn new(node: NodeRef<T>) -> Self {
        DepHandle { node }
    }

    /// The task's accesses, as declared at [`submit`](super::DepTracker::submit).
    pub fn accesses(&self) -> &[Access] {
        self.node.accesses.as_slice()
    }

    /// The first access marked [`intensive`](Access::intensive), if any.
    pub fn intensive(&self) -> Option<&Access> {
        self.accesses().iter().find(|a| a.intensive)
    }

    /// Marks the task finished and passes every task that this releases to `on_release`:
    /// successors whose last predecessor this was ([`Released::Ready`]) and, for mutually
    /// exclusive sets, a waiting member that now holds every set it needs.
    ///
    /// Cost: one lock of this task's node, one atomic decrement per successor, one lock per
    /// released successor; no allocation. `on_release` is called with no lock held, so it may
    /// push to the runtime's queues or submit new tasks; it must not panic (the successors not
    /// yet visited would stay parked).
    pub fn complete(self, mut on_release: impl FnMut(Released<T>)) {
        finish(self.node, End::Ran, &mut on_release);
    }

    /// Like [`complete`](DepHandle::complete) for a task that panicked: every task that
    /// depends on it, directly or transitively, is cancelled instead of run. Cancelled
    /// payloads come to `on_release` as [`Released::Cancelled`] once all their own
    /// predecessors have finished, and are completed by the tracker (the runtime must not
    /// complete them; it drops them and counts them as finished). Tasks submitted later that
    /// depend on a cancelled or panicked task are cancelled too: the poison stays on the
    /// bytes, as on a poisoned `Mutex`; and so does it on the `mutexinoutset` sets the task
    /// held: their other members, waiting or submitted later, are cancelled too.
    pub fn complete_panicked(self, mut on_release: impl FnMut(Released<T>)) {
        finish(self.node, End::Panicked, &mut on_release);
    }
}

impl<T> fmt::Debug for DepHandle<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("DepHandle")
            .field("accesses", &self.accesses())
            .field("flags", &self.node.flags.load(Ordering::Relaxed))
            .finish()
    }
}

/// A task whose predecessors have all finished (and which holds its mutually exclusive sets):
/// the runtime runs `payload`, then completes `handle`.
#[derive(Debug)]
pub struct Ready<T> {
    /// Complete it when `payload` has run.
    pub handle: DepHandle<T>,
    /// What was submitted.
    pub payload: T,
}

/// A task released by a completion.
#[derive(Debug)]
pub enum Released<T> {
    /// Run it, then complete its handle.
    Ready(Ready<T>),
    /// A predecessor panicked, or a member of a `mutexinoutset` set it took after that
    /// member (see [`DepHandle::complete_panicked`]): do not run it. The tracker has completed
    /// it already.
    Cancelled(T),
}

/// Registers one task's edges: created by the tracker under its map lock, fed every
/// predecessor the range map finds, then [`finish`](Registration::finish)ed.
pub(crate) struct Registration<'a, T> {
    node: NodeRef<T>,
    /// Successor-list entries made for this task, i.e. predecessor completions to wait for.
    edges: usize,
    /// A finished predecessor was poisoned.
    poisoned: bool,
    /// The sets this task joins or starts (the tracker's reusable buffer).
    sets: &'a mut Vec<Arc<MutexSet<T>>>,
    /// The one set object this task uses for every mutually exclusive set it starts.
    fresh_set: Option<Arc<MutexSet<T>>>,
}

/// What [`Registration::finish`] decided.
pub(crate) enum Registered<T> {
    Ready(Ready<T>),
    Deferred,
    /// With what the cancelled task's completion released (see [`Submitted::Cancelled`](super::Submitted::Cancelled)).
    Cancelled(T, Vec<Released<T>>),
}

impl<'a, T> Registration<'a, T> {
    pub(crate) fn new(node: NodeRef<T>, sets: &'a mut Vec<Arc<MutexSet<T>>>) -> Self {
        sets.clear();
        Registration {
            node,
            edges: 0,
            poisoned: false,
            sets,
            fresh_set: None,
        }
    }

    /// A range map reference to the task being registered.
    pub(crate) fn tracker_ref(&self) -> TrackerRef<T> {
        TrackerRef::new(&self.node)
    }

    /// Makes the task wait for `pred` unless `pred` has finished (then only its poison
    /// matters). Called once per predecessor found, so the same predecessor can come twice
    /// (from two segments); all of one task's edges are made in one registration, under the
    /// map lock, so a duplicate is always the last entry of `pred`'s list.
    pub(crate) fn link(&mut self, pred: &TrackerRef<T>) {
        debug_assert!(!pred.is(&self.node), "a task never waits for itself");
        let flags = pred.flags.load(Ordering::Acquire);
        if flags & DONE != 0 {
            self.poisoned |= flags & POISONED != 0;
            return;
        }
        let mut links = lock(&pred.links);
        // DONE is only set under this lock: if it is clear now, the completer will take the
        // list with our entry in it.
        let flags = pred.flags.load(Ordering::Relaxed);
        if flags & DONE != 0 {
            self.poisoned |= flags & POISONED != 0;
            return;
        }
        if links
            .successors
            .last()
            .is_some_and(|last| NodeRef::ptr_eq(last, &self.node))
        {
            return;
        }
        links.successors.push(self.node.clone());
        self.edges += 1;
    }

    /// The task joins an existing mutually exclusive set.
    pub(crate) fn join_set(&mut self, set: &Arc<MutexSet<T>>) {
        self.sets.push(Arc::clone(set));
    }

    /// The set object for a mutually exclusive set that this task starts.
    pub(crate) fn fresh_set(&mut self) -> Arc<MutexSet<T>> {
        match &self.fresh_set {
            Some(set) => Arc::clone(set),
            None => {
                let set = Arc::new(MutexSet::new());
                self.fresh_set = Some(Arc::clone(&set));
                self.sets.push(Arc::clone(&set));
                set
            }
        }
    }

    /// Ends the registration: hands the payload back if the task can run now, or parks it in
    /// the node for the completion that releases it. Must run under the map lock, so that no
    /// other task can have linked to this one yet.
    pub(crate) fn finish(self, payload: T) -> Registered<T> {
        let Registration {
            node,
            edges,
            poisoned,
            sets,
            ..
        } = self;
        if poisoned {
            node.flags.fetch_or(POISONED, Ordering::Relaxed);
        }
        // Nobody else touches `pending` once every edge's predecessor has decremented it, so
        // this load settles the common case without parking the payload.
        let all_finished = edges == 0 || node.pending.load(Ordering::Acquire) == GUARD - edges;
        if all_finished && sets.is_empty() {
            if node.flags.load(Ordering::Acquire) & POISONED != 0 {
                cancel_unlinked(&node);
                return Registered::Cancelled(payload, Vec::new());
            }
            return Registered::Ready(Ready {
                handle: DepHandle::new(node),
                payload,
            });
        }
        {
            let mut links = lock(&node.links);
            links.payload = Some(payload);
            sets.sort_unstable_by_key(|s| s.order());
            sets.dedup_by(|a, b| Arc::ptr_eq(a, b));
            links.sets = sets.to_vec();
            sets.clear();
        }
        if !all_finished && node.pending.fetch_sub(GUARD - edges, Ordering::AcqRel) != GUARD - edges
        {
            return Registered::Deferred;
        }
        match release(node) {
            Some(Outcome::Ready(ready)) => Registered::Ready(ready),
            Some(Outcome::Cancelled(node, payload)) => {
                // Nobody linked to it yet, but it may hold sets (a poisoned one among them),
                // which its completion hands on.
                let mut released = Vec::new();
                finish(node, End::Cancelled, &mut |r| released.push(r));
                Registered::Cancelled(payload, released)
            }
            None => Registered::Deferred,
        }
    }
}

/// Marks a cancelled task finished before any other task could link to it (under the map lock
/// of its own registration), so there are no successors to visit.
fn cancel_unlinked<T>(node: &Node<T>) {
    let links = lock(&node.links);
    debug_assert!(links.successors.is_empty());
    node.flags.fetch_or(DONE | POISONED, Ordering::Release);
}

/// Called by whoever brought `node.pending` to zero: the task becomes ready, is cancelled (a
/// predecessor was poisoned; the caller must then finish the returned node as poisoned), or
/// waits for one of its mutually exclusive sets (`None`).
fn release<T>(node: NodeRef<T>) -> Option<Outcome<T>> {
    // The AcqRel decrement that reached zero acquired every predecessor's POISONED store.
    let poisoned = node.flags.load(Ordering::Relaxed) & POISONED != 0;
    let mut links = lock(&node.links);
    if !poisoned && !links.sets.is_empty() && !acquire_sets(&node, &mut links) {
        return None;
    }
    let payload = links
        .payload
        .take()
        .expect("a task is released once, with its payload");
    let cancelled = poisoned || links.set_poisoned;
    drop(links);
    Some(Outcome::new(node, payload, cancelled))
}

/// What [`release`] decided for a task whose predecessors have all finished, and what a
/// set's hand-over decided for its waiter.
pub(crate) enum Outcome<T> {
    Ready(Ready<T>),
    /// Its node must be finished as cancelled (it may hold sets); the payload goes to the
    /// runtime.
    Cancelled(NodeRef<T>, T),
}

impl<T> Outcome<T> {
    /// `node`, released with `payload`: ready, or `cancelled`.
    pub(crate) fn new(node: NodeRef<T>, payload: T, cancelled: bool) -> Self {
        if cancelled {
            Outcome::Cancelled(node, payload)
        } else {
            Outcome::Ready(Ready {
                handle: DepHandle::new(node),
                payload,
            })
        }
    }
}

/// Takes the task's sets from `links.acquired` on, in the sets' global order; if one is held,
/// queues the task on it and returns `false` (the holder's completion hands it over and
/// carries on).
/// A poisoned set is taken like any other, and marks the task (`set_poisoned`).
pub(crate) fn acquire_sets<T>(node: &NodeRef<T>, links: &mut Links<T>) -> bool {
    while let Some(set) = links.sets.get(links.acquired) {
        let Some(poisoned) = set.try_acquire_or_wait(node) else {
            return false;
        };
        links.set_poisoned |= poisoned;
        links.acquired += 1;
    }
    true
}

/// How a task ended, for [`finish`].
#[derive(Clone, Copy, PartialEq, Eq)]
enum End {
    /// Its body returned.
    Ran,
    /// Its body panicked: its successors are cancelled, its sets poisoned.
    Panicked,
    /// It never ran: its successors are cancelled; the sets it held are handed on as they are
    /// (it wrote nothing there).
    Cancelled,
}

/// The completion of `node` and, iteratively, of the tasks it cancels.
fn finish<T>(node: NodeRef<T>, end: End, on_release: &mut impl FnMut(Released<T>)) {
    // Cancelled tasks to finish in turn; allocates only when something panicked.
    let mut doomed: Vec<NodeRef<T>> = Vec::new();
    let mut current = node;
    let mut end = end;
    loop {
        let poison = end != End::Ran;
        let (successors, sets, held) = {
            let mut links = lock(&current.links);
            let flags = if poison { DONE | POISONED } else { DONE };
            current.flags.fetch_or(flags, Ordering::Release);
            let held = mem::replace(&mut links.acquired, 0);
            (
                mem::take(&mut links.successors),
                mem::take(&mut links.sets),
                held,
            )
        };
        for set in &sets[..held] {
            match set.release(end == End::Panicked) {
                Some(Outcome::Ready(ready)) => on_release(Released::Ready(ready)),
                Some(Outcome::Cancelled(node, payload)) => {
                    doomed.push(node);
                    on_release(Released::Cancelled(payload));
                }
                None => {}
            }
        }
        for successor in successors {
            if poison {
                successor.flags.fetch_or(POISONED, Ordering::Relaxed);
            }
            // Release: this task's effects (and, for a panic, the POISONED bit) happen before
            // the successor runs. Acquire: the thread that reaches zero sees every other
            // predecessor's effects (the decrements form one release sequence).
            if successor.pending.fetch_sub(1, Ordering::AcqRel) == 1 {
                match release(successor) {
                    Some(Outcome::Ready(ready)) => on_release(Released::Ready(ready)),
                    Some(Outcome::Cancelled(node, payload)) => {
                        doomed.push(node);
                        on_release(Released::Cancelled(payload));
                    }
                    None => {}
                }
            }
        }
        match doomed.pop() {
            Some(next) => {
                current = next;
                end = End::Cancelled;
            }
            None => return,
        }
    }
}
