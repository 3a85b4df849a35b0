//! The scheduler: tasks, dependences, work-stealing and locality-aware scheduling.
#[cfg(not(loom))]
pub mod config;
pub mod deque;
#[cfg(not(loom))]
pub mod error;
#[cfg(not(loom))]
pub mod job;
#[cfg(not(loom))]
pub mod latch;
pub mod locality_policy;
pub mod node_queue;
#[cfg(not(loom))]
pub mod runtime;
#[cfg(not(loom))]
pub mod scheduler;
#[cfg(not(loom))]
pub mod scope;
pub mod sleep;
pub mod sync;
pub mod trace;
#[cfg(not(loom))]
pub mod worker;
#[cfg(not(loom))]
pub use error::SchedError;
#[cfg(not(loom))]
pub use job::{Access, AccessMode, Task, TaskMeta};
#[cfg(not(loom))]
pub use runtime::{Runtime, RuntimeBuilder, Settings, current_worker, scope};
#[cfg(not(loom))]
pub use scheduler::{Scheduler, SchedulerKind, WorkerPlace};
#[cfg(not(loom))]
pub use scope::{Scope, TaskHandle};
pub mod depend;
