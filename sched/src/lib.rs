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
//! ([`Scope::spawn_with_result`], [`Scope::join`]).
//!
//! ```
//! use numatask_sched::{Runtime, Scope};
//!
//! fn fib(s: &Scope<'_>, n: u64) -> u64 {
//!     if n < 2 {
//!         return n;
//!     }
//!     let a = s.spawn_with_result(move |s| fib(s, n - 1));
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
//! [`data`]). [`Scope::spawn_depend`] is the raw, `unsafe` form on byte ranges.
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
//! Inside: [`scheduler`] (the policy trait and work stealing), [`scope`](mod@scope) (spawning, waiting,
//! panics), [`worker`] (worker threads and the taskwait policy), [`job`] (task frames),
//! `child_counter` (the count of a task's unfinished children behind `taskwait`, and its memory
//! orderings), `result_state` (who frees a task frame with a result handle), [`latch`] (the
//! other completion signals), `blocking` (the latch a thread
//! outside the pool waits on), [`deque`], [`sleep`],
//! [`depend`] (the dependence tracker), [`dependences`] (how the runtime drives it), [`data`]
//! (the safe handles), [`taskloop`] (loops split into tasks).
// Public for the loom models (loom-tests/), not for programs: a pool worker that blocks on
// a latch keeps its core from every task.
#[doc(hidden)]
pub mod blocking;
// Public for the loom models, as `blocking` (and `result_state` below): the runtime's own.
#[doc(hidden)]
pub mod child_counter;
// Under loom only the block sizes are used (the task code that allocates is not built).
#[cfg_attr(loom, allow(dead_code))]
mod blocks;
#[cfg(not(loom))]
pub mod config;
#[cfg(not(loom))]
pub mod data;
#[cfg(not(loom))]
pub mod dependences;
pub mod deque;
#[cfg(not(loom))]
pub mod error;
#[cfg(not(loom))]
pub mod job;
#[cfg(not(loom))]
pub mod latch;
pub mod locality_policy;
pub mod node_queue;
#[doc(hidden)]
pub mod result_state;
#[cfg(not(loom))]
pub mod runtime;
#[cfg(not(loom))]
pub mod scheduler;
#[cfg(not(loom))]
pub mod scope;
pub mod sleep;
pub mod sync;
#[cfg(not(loom))]
pub mod taskloop;
pub mod trace;
mod unwind;
#[cfg(not(loom))]
pub mod worker;
#[cfg(not(loom))]
pub use config::{DisplayEnv, Places, ProcBind, WaitPolicy};
#[cfg(not(loom))]
pub use error::{BuildError, DependError};
#[cfg(not(loom))]
pub use job::{Task, TaskMeta};
#[cfg(not(loom))]
pub use runtime::{
    Runtime, RuntimeBuilder, Settings, current_num_workers, current_worker, join, scope, try_join,
    try_scope,
};
#[cfg(not(loom))]
pub use scheduler::{Scheduler, SchedulerKind, WorkerPlace};
#[cfg(not(loom))]
pub use scope::{Scope, TaskHandle};
pub mod depend;
