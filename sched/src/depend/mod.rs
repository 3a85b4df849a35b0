//! Task dependences: OpenMP `depend` clauses on byte ranges, among the sibling tasks of one
//! parent.
//!
//! A parent task owns one [`DepTracker`]. Each child is [`submit`](DepTracker::submit)ted with
//! its accesses ([`Access`]: a byte range, an [`AccessKind`], an *intensive* flag) and a payload
//! of the runtime's choosing. The tracker hands the payload back at once if the task may run
//! ([`Submitted::Ready`]), or keeps it until the completion of the last task it waits for
//! releases it ([`Released::Ready`]). The runtime runs the payload and completes the task's
//! [`DepHandle`].
//!
//! # Example
//!
//! ```
//! use numatask_sched::depend::{Access, AccessKind};
//! use numatask_sched::depend::{DepTracker, Released, Submitted};
//!
//! let tracker = DepTracker::new();
//! // `a` writes bytes [0, 64).
//! let Submitted::Ready(a) = tracker.submit(&[Access::new(0, 64, AccessKind::Out)], "a") else {
//!     unreachable!("nothing to wait for")
//! };
//! // `b` reads [32, 48), inside what `a` writes: it waits for `a`.
//! let b = tracker.submit(&[Access::new(32, 16, AccessKind::In)], "b");
//! assert!(matches!(b, Submitted::Deferred));
//! // `c` reads [64, 128), next to but disjoint from `a`'s bytes: it may run now.
//! let c = tracker.submit(&[Access::new(64, 64, AccessKind::In)], "c");
//! assert!(matches!(c, Submitted::Ready(_)));
//!
//! // `a` runs; its completion releases `b`.
//! let mut released = Vec::new();
//! a.handle.complete(|r| {
//!     if let Released::Ready(ready) = r {
//!         released.push(ready.payload);
//!     }
//! });
//! assert_eq!(released, ["b"]);
//! ```
//!
//! # Semantics
//!
//! OpenMP 5.1's rules for sibling tasks, on bytes rather than list items. A task waits for an
//! earlier sibling if they share at least one byte, unless both access it as `in`, or both as
//! `mutexinoutset` (or both as `inoutset`) in one run of consecutive accesses of that kind:
//!
//! - `in` waits for earlier `out`, `inout`, `mutexinoutset` and `inoutset` on those bytes;
//!   readers run concurrently.
//! - `out` and `inout` wait for every earlier access.
//! - `mutexinoutset` and `inoutset` wait for every earlier access of another kind, and later
//!   accesses of another kind wait for every member. Members of an `inoutset` run run
//!   concurrently; members of a `mutexinoutset` run are not ordered but never run at the same
//!   time (the tracker releases a member only when it holds the run's mutual exclusion; see
//!   `mutex_set.rs`). One exclusion covers a whole run, also where later members split its
//!   range: two members on disjoint halves of an earlier member's range (or one task's
//!   several ranges) may be kept from running at once, which OpenMP allows (members are
//!   unordered) and costs concurrency only.
//! - Ranges are compared byte by byte: overlapping but unequal ranges are ordered (libomp
//!   compares only start addresses), disjoint ranges are not, even if adjacent.
//!
//! Decisions the standard leaves to us:
//!
//! - **Zero-length ranges** order nothing (they cover no byte) but stay in the access list.
//!   Ranges that would pass `usize::MAX` end there.
//! - **Overlapping declarations of one task** are merged byte by byte: one kind if all
//!   declarations of a byte agree, `inout` otherwise. `inout` is the strongest kind, so the
//!   merge never drops an ordering the program asked for. A safe API layer should reject such
//!   declarations; the raw tracker accepts them.
//! - **Panics** (OpenMP has none): the runtime completes a task that panicked with
//!   [`DepHandle::complete_panicked`]. Every task that depends on it, directly or through other
//!   tasks, is then *cancelled*: its payload comes back as [`Released::Cancelled`] (or
//!   [`Submitted::Cancelled`]) when all its predecessors have finished, and is never run. The
//!   poison is deterministic: which tasks are cancelled depends on the program's declarations,
//!   not on timing, because a finished poisoned task stays in the map and poisons every later
//!   task that would have waited for it. The one exception is `mutexinoutset`, whose members
//!   are unordered: a member that panics poisons the set, so the members that take it after
//!   it (which ones depends on the run) are cancelled, not those that had it before (a set
//!   object may serve several ranges, see `mutex_set`: conservatively, their members too); the
//!   members of an `inoutset`, which run at the same time, are not cancelled by each other's
//!   panics (tasks after the set are). A panic never makes the tracker hang; the runtime
//!   reports it at the parent's taskwait. (A runtime that prefers to run successors anyway
//!   completes a panicked task with [`DepHandle::complete`].)
//! - **Program order** is submission order; tasks submitted by several threads to one tracker
//!   are ordered as they take its lock.
//!
//! Waiting until every submitted task has finished (taskwait) is the runtime's job, with its own
//! counter: cancelled payloads count as finished.
//!
//! # Design
//!
//! Three structures, each in its own file:
//!
//! - the **range map** (`range_map.rs`): disjoint segments by start address (a hash map, with a
//!   `BTreeMap` of their bounds for overlap queries), each holding the last writing group and
//!   the readers since, split on partial overlap. It
//!   is only touched by `submit`, under the tracker's lock; completions never take that lock.
//!   Registration visits only the segments an access overlaps, and adds an edge per task found
//!   there (a writer links to the readers since the last writer, not to that writer: the
//!   readers already wait for it). Each time the map doubles (past a floor of 16Ki
//!   segments), the history of ranges whose tasks have all finished is dropped, and so are
//!   such ranges if they were not used since the previous pruning: finished tasks cost no
//!   scan per task, and memory follows the ranges in use.
//! - **task nodes** (`node.rs`): an atomic predecessor counter, and under a per-node lock the
//!   successor list and the parked payload. Completing a task locks only its own node, then
//!   decrements each successor's counter; the one that reaches zero releases the successor.
//!   Completion allocates nothing. Nodes and successor lists (`succ_list.rs`) live in
//!   blocks of the runtime's block cache; a node is counted by the references of the runtime
//!   and of successor lists, and once by all the range map's references together, which the
//!   map counts apart under its lock (`node_ref.rs`): the thread creating tasks replaces map
//!   entries of tasks that other threads completed, and must not write their cache lines
//!   to do so.
//! - **mutual-exclusion sets** (`mutex_set.rs`) for `mutexinoutset`.
//!
//! One cost is not constant: every access that follows a run of `n` set members waits for all
//! `n` (OpenMP's rule), so `m` readers after a large `inoutset` cost `n * m` edges. A writer
//! after `n` readers costs `n` edges once, and the readers after it one each.
//!
//! This is libomp's structure (a per-parent dependence hash whose entries hold the last writer
//! and the readers, lock-protected nodes with successor lists and an atomic predecessor count)
//! with a range map in place of the hash. The task node also keeps the declared accesses: they
//! are the task's data footprint for the locality-aware scheduler ([`DepHandle::accesses`];
//! their byte ranges, [`union_ranges`], are all the tracker knows of them: the scheduler
//! weighs them by node).
//!
//! # Memory-ordering contract
//!
//! Per node `X`: `pending` (atomic), `flags` (atomic: `DONE`, `POISONED`), and `links` (lock:
//! successors, payload, sets). The registering thread `S` holds the tracker's lock throughout.
//!
//! - **Registration.** `pending` starts at `GUARD` (larger than any number of edges). For each
//!   predecessor `P` the range map names, `S` loads `P.flags` (`Acquire`); if `DONE` is clear
//!   it locks `P.links`, checks `DONE` again, and if still clear appends `X` to `P`'s
//!   successors and counts an edge. Finally `S` parks the payload in `X.links` and does
//!   `X.pending.fetch_sub(GUARD - edges, AcqRel)`. Until then `pending > 0` whatever the
//!   completions do, so nobody can release `X` before its registration ends.
//! - **Completion of `P`.** Under `P.links`: `flags |= DONE` (`Release`), take the successor
//!   list. Then for each successor `X`: `X.pending.fetch_sub(1, AcqRel)`.
//! - **No lost and no double release.** `DONE` is set and the list taken in one critical
//!   section, and `S` tests `DONE` and appends in one critical section: each edge is either in
//!   the list `P`'s completer takes (and decremented exactly once) or never counted. So
//!   `pending` reaches zero exactly once, after `S`'s subtraction and every counted
//!   predecessor's decrement, and the thread that brings it there alone takes the payload
//!   (under `X.links`).
//! - **Visibility.** The decrements on `X.pending` are read-modify-writes, so they form one
//!   release sequence: the thread reaching zero acquires every earlier decrement, hence
//!   everything each counted predecessor's task did before its completion. A predecessor found
//!   `DONE` was acquired by `S` (the `Acquire` load or the lock), and `S`'s `AcqRel`
//!   subtraction passes that on. So **every write of a task happens before every access of its
//!   successors**, which is what makes the dependences meaningful to the program.
//! - **Poison.** A poisoned completion sets `POISONED` on each successor (`Relaxed`) before its
//!   `Release` decrement, so the releaser sees it; `S` sees it on a finished predecessor with
//!   `DONE`. The cancelled tasks are finished in a loop, not recursively.
//! - **Mutual exclusion.** A set's holder flag and FIFO of waiters are under the set's lock; a
//!   waiter's progress (`acquired`) and payload are under its node's lock. Locks nest only as
//!   tracker, then node, then set; the hand-over takes the waiter's node lock after dropping the
//!   set's lock.
//! - **Pruning** reads `flags` (`Acquire`) without locks; `DONE` is never cleared, so a stale
//!   read only keeps a segment longer.
//!
//! All of it goes through [`crate::sync`], so `loom-tests/tests/depend.rs` model-checks these
//! interleavings.
//!
//! # Integrating with the runtime
//!
//! - Create the tracker lazily, the first time a parent submits a child with dependences; a
//!   child without dependences needs no tracker.
//! - On [`Submitted::Ready`] push the task (the `Ready` value carries its handle); on
//!   [`Submitted::Cancelled`] drop the payload and count the child as finished, and handle
//!   the tasks it lists as a completion's releases (below).
//! - After running a payload: `handle.complete(|r| ...)`, or `complete_panicked` if it
//!   panicked (after `catch_unwind`). The callback pushes [`Released::Ready`] tasks to the
//!   scheduler and drops [`Released::Cancelled`] payloads, counting them as finished.
//! - The scheduler may read the footprint from the handle when it deals a ready task.

mod access;
mod mutex_set;
mod node;
mod node_ref;
mod range_map;
mod succ_list;
mod tracker;

#[cfg(test)]
mod tests;

pub use access::{Access, AccessKind, union_ranges};
pub use node::{DepHandle, Ready, Released};
pub use tracker::{DepTracker, Submitted};
