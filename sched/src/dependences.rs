//! How the runtime drives the dependence tracker ([`crate::depend`]) for tasks spawned with
//! `depend` accesses: submission at spawn, completion after the body, release and cancellation.
//!
//! - **Where the tracker lives.** Dependences order the children of one task (OpenMP's
//!   sibling rule), so each task body's [`Scope`](crate::Scope) owns one tracker, created by its
//!   first dependent spawn; a taskgroup inside the body uses the same one. The tracker is
//!   touched only by the thread running that body, so its lock is never contended, and it
//!   may be dropped when the body returns: completions and releases need only the task nodes,
//!   which the unfinished tasks keep alive.
//! - **Spawn.** A dependent child is counted in its parent frame like any child (so
//!   `taskwait`, taskgroups and scope ends wait for it with no new mechanism), then
//!   submitted: ready at once, it is pushed; otherwise it stays parked in the tracker, in no
//!   queue. With a single worker a ready task runs at once instead, undeferred (as LLVM's
//!   libomp does with one thread): nothing could run it sooner, and the program then runs in
//!   its own order, with its data warm in the cache, instead of piling up parked tasks.
//!   (Not on a runtime that honours task priorities: there a ready task waits in line, so
//!   that a later one of higher priority can go first.)
//! - **Completion.** Right after the body of a dependent task returns (or panics), the worker
//!   that ran it completes its handle; every successor that this releases is pushed by that
//!   worker, with its handle stored in its frame first (`Task::attach_depend`). Nothing on
//!   this path takes a lock shared by all tasks: one lock per finished node and per released
//!   successor, atomics for the rest. Every released task after the first wakes a sleeping
//!   worker, if there is one: a completion that releases a row of tasks makes that much
//!   parallel work at once.
//! - **Panics.** The tracker cancels every task that depends, directly or not, on a task that
//!   panicked (see [`crate::depend`], "Panics"). A cancelled task's closure is dropped unrun
//!   and its frame finished with the panic [`CANCELLED`]; the parent's next `taskwait`, the end
//!   of the taskgroup the cancelled task is in, or the scope end resumes the predecessor's own
//!   panic, which reaches the parent first. Tasks spawned later on poisoned bytes are
//!   cancelled too, and report [`CANCELLED`]. So is a `mutexinoutset` member that would take
//!   its set after a member that panicked (it would see what that one left half-written).
//! - **Memory.** A dependent task costs one frame (from the worker's frame cache) and one
//!   tracker node (176 bytes, from the thread's block cache), plus a chunk of 14 successor
//!   entries per 14 tasks waiting for it (see `blocks.rs`). The creating thread allocates
//!   nearly all of them and the other threads free them: caches that overflow and caches that
//!   run dry exchange batches through a shared pool, so the creating thread gets back what the
//!   others freed without a trip to the global allocator (glibc's serializes cross-thread
//!   frees on the allocating thread's arena lock).
//!
//! Memory ordering comes from the tracker's contract ("every write of a task happens before
//! every access of its successors"), then from the deque's `Release`/`Acquire` push and take
//! of the released task, which also publish the handle stored in its frame.

use std::cell::Cell;
use std::sync::atomic::{AtomicU64, Ordering};

use crate::depend::{Access, DepHandle, DepTracker, Ready, Released, Submitted};
use crate::job::Task;
use crate::worker::WorkerThread;

/// The panic message of a task cancelled because a task it depends on panicked.
pub const CANCELLED: &str =
    "numatask: task cancelled: a task it depends on (or shares a mutexinoutset with) panicked";

/// What a cancelled task's frame holds as its panic until a waiter resumes it: the waiter
/// raises [`CANCELLED`] in its place, once, through the panic hook (the task never ran, so no
/// hook reported anything); the levels it unwinds through after that resume it silently.
pub(crate) struct Cancelled;

/// The dependences among one task's children.
pub(crate) struct ChildDeps {
    /// Unique over the process's lifetime, never 0: what data handles bind to (see
    /// [`crate::data`]), so that a handle cannot order tasks in two trackers.
    pub(crate) id: u64,
    pub(crate) tracker: DepTracker<Task>,
}

impl ChildDeps {
    pub(crate) fn new() -> Self {
        ChildDeps {
            id: fresh_id(),
            tracker: DepTracker::new(),
        }
    }
}

/// A process-unique id, without a shared write per call: each thread takes blocks of
/// `ID_BLOCK` ids from a global counter.
fn fresh_id() -> u64 {
    const ID_BLOCK: u64 = 1024;
    static NEXT_BLOCK: AtomicU64 = AtomicU64::new(1);
    thread_local! {
        static IDS: Cell<(u64, u64)> = const { Cell::new((0, 0)) };
    }
    IDS.with(|ids| {
        let (mut next, mut end) = ids.get();
        if next == end {
            next = NEXT_BLOCK.fetch_add(1, Ordering::Relaxed) * ID_BLOCK;
            end = next + ID_BLOCK;
        }
        ids.set((next + 1, end));
        next
    })
}

/// Submits the child `task` (already counted in its parent frame) with `accesses` to
/// `tracker`, on `worker`, the worker running the parent's body. With `included` (a child of
/// a final task), a ready task runs at once, undeferred; so does it on a runtime of one
/// worker, where nobody else could take it, unless the runtime honours task priorities
/// (then it waits in line, so that a later task of higher priority can go first).
#[inline]
pub(crate) fn submit(
    tracker: &DepTracker<Task>,
    accesses: &[Access],
    task: Task,
    worker: &WorkerThread,
    included: bool,
) {
    match tracker.submit(accesses, task) {
        Submitted::Ready(ready) if included || runs_ready_tasks_at_once(worker) => {
            worker.run_undeferred(ready_task(ready));
        }
        Submitted::Ready(ready) => worker.push(ready_task(ready)),
        Submitted::Deferred => {}
        Submitted::Cancelled(task, released) => {
            task.cancel(worker);
            let mut on_release = releaser(worker);
            released.into_iter().for_each(&mut on_release);
        }
    }
}

/// Whether a ready dependent task runs at once on `worker`'s runtime: one worker, and no
/// task priorities to honour (see [`submit`]).
#[inline]
fn runs_ready_tasks_at_once(worker: &WorkerThread) -> bool {
    let registry = worker.registry();
    registry.places.len() == 1 && registry.prioritized.is_none()
}

/// Completes a dependent task whose body just returned (`panicked`: by unwinding), on
/// `worker`, and schedules what that releases.
///
/// Released tasks go to this worker's deque like spawned children (to its overflow list when
/// the deque is full, never run inline: see `crate::worker`), newest first, so that this
/// worker runs the oldest next (the deque's owner takes the last pushed) and thieves take the
/// newer ones. Each task after the first is parallel work that may be waiting for a sleeping
/// worker, so it also wakes one (`Sleep::new_work`: a fence and a load when nobody sleeps);
/// the plain push only wakes sleepers it sees without a fence, which may leave a sleeper
/// asleep while a completion releases a whole row of tasks.
#[inline]
pub(crate) fn complete(handle: DepHandle<Task>, panicked: bool, worker: &WorkerThread) {
    let on_release = releaser(worker);
    if panicked {
        handle.complete_panicked(on_release);
    } else {
        handle.complete(on_release);
    }
}

/// What to do with each task a completion releases, on `worker` (see [`complete`]).
#[inline]
fn releaser(worker: &WorkerThread) -> impl FnMut(Released<Task>) + '_ {
    let mut released = 0usize;
    move |r: Released<Task>| match r {
        Released::Ready(ready) => {
            worker.push_released(ready_task(ready));
            released += 1;
            if released > 1 {
                worker.registry().sleep.new_work();
            }
        }
        Released::Cancelled(task) => task.cancel(worker),
    }
}

/// The task the tracker made ready, carrying the handle that completes it.
#[inline]
fn ready_task(ready: Ready<Task>) -> Task {
    let Ready {
        handle,
        payload: mut task,
    } = ready;
    task.attach_depend(handle);
    task
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_unique_and_never_zero() {
        let mut seen: Vec<u64> = (0..3000).map(|_| fresh_id()).collect();
        let other: Vec<u64> = std::thread::spawn(|| (0..3000).map(|_| fresh_id()).collect())
            .join()
            .expect("id thread");
        seen.extend(other);
        assert!(seen.iter().all(|&id| id != 0));
        let n = seen.len();
        seen.sort_unstable();
        seen.dedup();
        assert_eq!(seen.len(), n);
    }
}
