//! numatask: locality-aware tasks and NUMA data distribution.
//!
//! The task runtime lives in [`sched`] and its main types are re-exported here:
//!
//! ```
//! let rt = numatask::Runtime::builder().num_threads(2).build()?;
//! let total: u64 = rt.scope(|s| {
//!     let a = s.spawn_with_result(|_| (1..=50u64).sum::<u64>());
//!     let b = s.spawn_with_result(|_| (51..=100u64).sum::<u64>());
//!     s.taskwait();
//!     a.join() + b.join()
//! });
//! assert_eq!(total, 5050);
//! # Ok::<(), numatask::SchedError>(())
//! ```
// `kernels/` (the OpenCL-model executor) is a workspace member not re-exported until it has
// content.
pub use numatask_alloc as alloc;
pub use numatask_sched as sched;
pub use numatask_sched::{
    DisplayEnv, Places, ProcBind, Runtime, RuntimeBuilder, SchedError, SchedulerKind, Scope,
    TaskHandle, WaitPolicy, join, scope,
};

/// The names most programs use, in one import: the runtime and its scopes, the allocator's
/// owned vectors and policies, and the dependence API.
///
/// ```
/// use numatask::prelude::*;
///
/// let rt = Runtime::builder().num_threads(2).build()?;
/// let mut v = NumaVec::<u32>::filled(1024, 1, Distribution::Fine)?;
/// rt.scope(|s| {
///     let blocks = Blocks::new(&mut v, 256)?;
///     for b in blocks.iter() {
///         s.task().updates(b).spawn(|_, (x,)| x.iter_mut().for_each(|e| *e *= 2))?;
///     }
///     Ok::<(), SchedError>(())
/// })?;
/// assert!(v.iter().all(|&e| e == 2));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub mod prelude {
    pub use numatask_alloc::{AllocError, Distribution, NumaVec, Place, Topology};
    pub use numatask_sched::data::Blocks;
    pub use numatask_sched::depend::{Access, AccessKind};
    pub use numatask_sched::taskloop::Grain;
    pub use numatask_sched::{
        Places, ProcBind, Runtime, RuntimeBuilder, SchedError, SchedulerKind, Scope, TaskHandle,
        WaitPolicy, join, scope,
    };
}

/// The README's examples, compiled and run as doc tests so that they stay true.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct ReadmeDoctests;
