//! The scheduler: tasks, dependences, work-stealing and locality-aware scheduling.
