//! The scheduler: tasks, dependences, work-stealing and locality-aware scheduling.
//!
//! A [`Runtime`] is a pool of workers, by default one pinned per core (grouped by NUMA node),
//! configured by the OpenMP environment (`OMP_NUM_THREADS`, `OMP_THREAD_LIMIT`,
//! `OMP_PROC_BIND`, `OMP_PLACES`, `OMP_STACKSIZE`, `OMP_WAIT_POLICY`, `OMP_MAX_TASK_PRIORITY`,
//! `OMP_DISPLAY_ENV`, `NUMATASK_SCHEDULER`, `NUMATASK_VICINITY` and
//! `NUMATASK_EVEN_TOLERANCE` for the policy,
//! `NUMATASK_TRACE` for a task trace ([`trace`]); see [`config`]) or a
//! [`RuntimeBuilder`]. [`Runtime::scope`] runs a closure with a [`Scope`] in which tasks are
//! spawned; tasks may borrow the caller's stack, spawn tasks themselves, wait for their
//! children ([`Scope::taskwait`]) or for a group ([`Scope::taskgroup`]), and hand back results
//! ([`TaskBuilder::spawn_with_result`], [`Scope::join`]). [`Scope::task`] is the task
//! construct with OpenMP's clauses ([`task`](mod@task) lists them).
//!
//! ```
//! use numatask_sched::{Runtime, Scope};
//!
//! fn fib(s: &Scope<'_>, n: u64) -> u64 {
//!     if n < 2 {
//!         return n;
//!     }
//!     let a = s.task().spawn_with_result(move |s| fib(s, n - 1));
//!     let b = fib(s, n - 2);
//!     s.taskwait(); // waits for `a`, running it (or stealing its children) meanwhile
//!     a.join() + b
//! }
//!
//! let rt = Runtime::builder().num_threads(2).build()?;
//! let mut squares = vec![0u64; 8];
//! let answer = rt.scope(|s| {
//!     for (i, x) in squares.iter_mut().enumerate() {
//!         s.spawn(move |_| *x = (i * i) as u64); // borrows `squares`
//!     }
//!     fib(s, 20)
//! }); // every task has finished here
//! assert_eq!(answer, 6765);
//! assert_eq!(squares[7], 49);
//! # Ok::<(), numatask_sched::BuildError>(())
//! ```
//!
//! **Dependent tasks** (OpenMP's `depend` clauses, among the children of one task): cut data
//! into [`data::Blocks`], declare what each task reads and writes with [`Scope::task`], and the
//! task starts once the earlier sibling tasks it conflicts with finished; its body gets the
//! blocks as `&[T]` / `&mut [T]`, and the runtime's order is what makes that sound (see
//! [`data`]). [`TaskBuilder::depend`] is the raw, `unsafe` form on byte ranges.
//!
//! ```
//! use numatask_alloc::{Distribution, NumaVec};
//! use numatask_sched::{Runtime, data::Blocks};
//!
//! let rt = Runtime::builder().num_threads(2).build()?;
//! let mut v = NumaVec::<f64>::filled(4096, 1.0, Distribution::Fine)?;
//! rt.scope(|s| {
//!     let blocks = Blocks::new(&mut v, 1024)?;
//!     // Scale every block, then add each block into the next: the sums wait for the scaling
//!     // of both blocks they touch, and run in order along the chain.
//!     for b in &blocks {
//!         s.task().updates(b).spawn(|_, (x,)| x.iter_mut().for_each(|x| *x *= 2.0))?;
//!     }
//!     for i in 1..blocks.len() {
//!         s.task()
//!             .reads(&blocks[i - 1])
//!             .updates(&blocks[i])
//!             .spawn(|_, (prev, this)| this[0] += prev[0])?;
//!     }
//!     Ok::<(), numatask_sched::DependError>(())
//! })?;
//! assert_eq!(v[3 * 1024], 8.0); // 2 + (2 + (2 + 2))
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! The design of the parts (the scheduling policies, the sleep protocol, the deques, the
//! dependence tracker) is described in the repository's `docs/` folder.

// The runtime's parts. Private: programs use the types re-exported below; the loom models and
// the internal benchmarks reach what they check through `__internals`.
mod blocking;
// Under loom only the block sizes are used (the task code that allocates is not built).
#[cfg_attr(loom, allow(dead_code))]
mod blocks;
mod child_counter;
#[cfg(not(loom))]
pub mod config;
#[cfg(not(loom))]
pub mod data;
// The dependence tracker: its public face is `depend` below.
#[path = "depend/mod.rs"]
mod dependence_tracker;
#[cfg(not(loom))]
mod dependences;
mod deque;
#[cfg(not(loom))]
mod error;
#[cfg(not(loom))]
mod footprint;
#[cfg(not(loom))]
mod job;
#[cfg(not(loom))]
mod latch;
mod locality_policy;
#[cfg(not(loom))]
mod mailbox;
mod node_queue;
mod result_state;
#[cfg(not(loom))]
mod runtime;
#[cfg(not(loom))]
mod scheduler;
#[cfg(not(loom))]
mod scope;
mod sleep;
mod sync;
#[cfg(not(loom))]
pub mod task;
#[cfg(not(loom))]
pub mod taskloop;
pub mod trace;
mod unwind;
#[cfg(not(loom))]
mod views;
#[cfg(not(loom))]
mod worker;

#[cfg(not(loom))]
pub use config::{DisplayEnv, Places, ProcBind, WaitPolicy};
#[cfg(not(loom))]
pub use error::{BuildError, DependError};
#[cfg(not(loom))]
pub use footprint::Footprint;
#[cfg(not(loom))]
pub use runtime::{
    Runtime, RuntimeBuilder, Settings, current_num_workers, current_worker, join, scope, try_join,
    try_scope,
};
#[cfg(not(loom))]
pub use scheduler::{SchedulerKind, WorkerPlace};
#[cfg(not(loom))]
pub use scope::{Scope, TaskHandle};
#[cfg(not(loom))]
pub use task::{RawTaskBuilder, TaskBuilder};

/// Dependences on raw byte ranges (OpenMP's `depend` clauses on addresses), for
/// [`TaskBuilder::depend`]: an [`Access`](depend::Access) is an address, a length and an
/// [`AccessKind`](depend::AccessKind). The safe form on data is in [`data`].
///
/// The tracker that orders a task's children, [`DepTracker`](depend::DepTracker), is usable on
/// its own by code that runs its own units of work in the order their accesses require (the
/// kernel executor orders its commands with one): [`submit`](depend::DepTracker::submit) a
/// payload with its accesses, run it when it is [`Ready`](depend::Ready), then
/// [`complete`](depend::DepHandle::complete) its handle, which hands over the payloads it
/// released.
pub mod depend {
    #[allow(unused_imports)]
    pub(crate) use crate::dependence_tracker::*;
    pub use crate::dependence_tracker::{
        Access, AccessKind, DepHandle, DepTracker, Ready, Released, Submitted,
    };
}

/// Not part of the API: the runtime's internal structures, public only so that the loom
/// model checks (`loom-tests/`), the internal benchmarks and the white-box tests of this
/// repository can reach them. Anything here may change in any release.
#[doc(hidden)]
pub mod __internals {
    pub use crate::blocking::BlockingLatch;
    pub use crate::child_counter::{ChildCounter, ChildDone};
    #[cfg(not(loom))]
    pub use crate::dependences::CANCELLED;
    pub use crate::deque::{Steal, Stealer, Worker, deque};
    #[cfg(not(loom))]
    pub use crate::job::{Task, TaskMeta};
    pub use crate::locality_policy::{DealReason, LocalityModel};
    pub use crate::node_queue::NodeQueue;
    pub use crate::result_state::{DONE, DROPPED, JOINING, RUNNING, ResultState};
    #[cfg(not(loom))]
    pub use crate::scheduler::Scheduler;
    #[cfg(not(loom))]
    pub use crate::scheduler::locality::footprint_node_bytes;
    pub use crate::sleep::{IdleState, Sleep};
}
