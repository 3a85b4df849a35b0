//! The scheduler: tasks, dependences, work-stealing and locality-aware scheduling.
pub mod deque;
pub mod node_queue;
pub mod sleep;
pub mod sync;
pub mod locality_policy;
pub mod trace;
