//! numatask: locality-aware tasks and NUMA data distribution.
pub use numatask_alloc as alloc;
pub use numatask_kernels as kernels;
pub use numatask_sched as sched;
