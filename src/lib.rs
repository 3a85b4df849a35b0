//! numatask: locality-aware tasks and NUMA data distribution.
//!
//! The task runtime lives in [`sched`], the topology and the NUMA allocator in [`alloc`], the
//! OpenCL-model kernel executor (NDRange launches whose work-groups run as tasks) in
//! [`kernels`]; the main types are re-exported here, and [`prelude`] imports what most
//! programs use:
//!
//! ```
//! let rt = numatask::Runtime::builder().num_threads(2).build()?;
//! let total: u64 = rt.scope(|s| {
//!     let a = s.task().spawn_with_result(|_| (1..=50u64).sum::<u64>());
//!     let b = s.task().spawn_with_result(|_| (51..=100u64).sum::<u64>());
//!     s.taskwait();
//!     a.join() + b.join()
//! });
//! assert_eq!(total, 5050);
//! # Ok::<(), numatask::BuildError>(())
//! ```
//!
//! # Start here
//!
//! | rayon / OpenMP | numatask |
//! |---|---|
//! | `ThreadPoolBuilder`; `OMP_NUM_THREADS`, `OMP_PROC_BIND`, ... | [`Runtime::builder`]; [`Runtime::new`] reads the `OMP_*` variables ([`sched::config`] lists them) |
//! | `ThreadPoolBuilder::build_global` | [`RuntimeBuilder::build_global`] (else [`Runtime::global`] is made from the environment on first use) |
//! | `pool.scope(\|s\| ...)`; `parallel` + `single` | [`Runtime::scope`]; [`scope()`] on the process-wide runtime |
//! | `ThreadPool::spawn`, `rayon::spawn` (a job nobody waits for) | [`Runtime::spawn`]; [`Runtime::global`]`().spawn(...)` on the process-wide runtime (the body gets a `Scope<'static>`; dropping a runtime waits for its jobs) |
//! | `s.spawn(...)`; `task` | [`Scope::spawn`]; [`Scope::task`] for the clauses below ([`sched::task`] lists them) |
//! | `taskwait`, `taskgroup` | [`Scope::taskwait`], [`Scope::taskgroup`] |
//! | `if(c)`, `final(c)`, `priority(p)` | [`TaskBuilder::defer_if`], [`TaskBuilder::final_if`], [`TaskBuilder::priority`] (with [`RuntimeBuilder::max_task_priority`]) |
//! | a task's result | [`TaskBuilder::spawn_with_result`] and [`TaskHandle::join`] |
//! | `rayon::join` | [`Scope::join`]; [`join()`] on the process-wide runtime (panics if it cannot start; [`try_join`] returns the error) |
//! | `par_chunks_mut`, `par_chunks`; `taskloop grainsize(n)` | [`Scope::taskloop_mut`], [`Scope::taskloop_slice`], [`Scope::taskloop`] with [`prelude::Grain`] ([`sched::taskloop`]) |
//! | `a.par_chunks_mut(n).zip(b.par_chunks(n))` | [`Scope::taskloop_zip`] (inputs as an array, `[&b, &c]`, or a tuple of any types, `(&b, &mask)`) |
//! | `par_iter().map(f).reduce(id, op)`, `.sum()`; `taskloop reduction(+: x)` | [`Scope::taskloop_reduce`], [`Scope::taskloop_reduce_slice`] |
//! | `depend(in: a) depend(inout: b)` | [`s.task()`](Scope::task)[`.reads(a)`](TaskBuilder::reads)[`.updates(b)`](TaskBuilder::updates)[`.spawn(...)`](TaskBuilder::spawn) on [`prelude::Blocks`] of a [`prelude::NumaVec`] ([`sched::data`]: the other clauses, why it is sound) |
//! | a depend list the program computes, of mixed kinds | [`TaskBuilder::accesses`]: the body gets [`sched::data::View`]s that know where they start |
//! | `depend(in: a)` on inputs nobody writes in the scope | [`prelude::Blocks::shared`] over `&a`: regions for [`.reads`](TaskBuilder::reads) only, the data still readable outside the tasks |
//! | `depend` on raw addresses, from C-like code | `unsafe` [`TaskBuilder::depend`] with [`prelude::Access`] |
//! | `affinity(...)` | [`TaskBuilder::affinity`] with a [`Footprint`] |
//! | `current_thread_index`, `current_num_threads` | [`Scope::worker_index`], [`current_worker()`], [`current_num_workers()`] |
//! | `omp_malloc` and `OMP_DATA_DISTRIBUTION` | [`alloc::omp_malloc`], [`alloc::omp_malloc_specific`], [`prelude::NumaVec`] |
//! | the locality-aware scheduler | [`SchedulerKind::Locality`], `NUMATASK_SCHEDULER=locality` |
//! | OpenCL / SYCL: `clCreateBuffer`, `clEnqueueNDRangeKernel`, events, in-order and out-of-order queues | [`kernels::Context`], [`kernels::Queue::launch`] with a [`kernels::Kernel`], [`kernels::Event`] |
//! | a timeline of the tasks | `NUMATASK_TRACE=file.json` ([`sched::trace`]), [`Runtime::finish_trace`] |
//! | data used again after `taskwait` (the task's borrow ended there) | [`Scope::join`], a scope of its own ([`scope()`]) or a result: see below |
//! | not here: parallel iterators (`map`, `filter`, `collect`), `par_sort`, `broadcast`; `taskyield`, `detach`, `cancel`, `taskwait depend` | taskloops and tasks as above |
//!
//! # Data used again after a `taskwait`
//!
//! A task spawned with [`Scope::spawn`] may borrow the caller's data for the whole scope
//! (`'scope`), and the compiler cannot see that a `taskwait` ended the task. So the OpenMP
//! pattern of a task on part of the data, a `taskwait`, then the data again does not compile:
//!
//! ```compile_fail,E0499
//! let rt = numatask::Runtime::builder().num_threads(2).build().unwrap();
//! let mut v = vec![3u32, 1, 4, 1, 5, 9, 2, 6];
//! rt.scope(|s| {
//!     let (a, b) = v.split_at_mut(4);
//!     s.spawn(move |_| a.sort());
//!     b.sort();
//!     s.taskwait();
//!     v.rotate_left(1); // error[E0499]: `v` is still borrowed by the task
//! });
//! ```
//!
//! Three ways that compile: [`Scope::join`], whose two closures borrow only until it returns
//! (the divide-and-conquer shape); a scope of its own, [`scope()`], which waits for its tasks
//! before it returns, on the same runtime when called from a task (for the data a task makes
//! and then hands to tasks, too); or a task that owns its data and gives it back through
//! [`TaskBuilder::spawn_with_result`].
//!
//! ```
//! fn merge_sort(s: &numatask::Scope<'_>, v: &mut [u32]) {
//!     if v.len() <= 1 {
//!         return;
//!     }
//!     let mid = v.len() / 2;
//!     let (a, b) = v.split_at_mut(mid);
//!     s.join(|s| merge_sort(s, a), |s| merge_sort(s, b));
//!     // Both halves are sorted and no longer borrowed: merge them.
//!     let mut merged = Vec::with_capacity(v.len());
//!     let (mut i, mut j) = (0, mid);
//!     while i < mid && j < v.len() {
//!         if v[i] <= v[j] { merged.push(v[i]); i += 1 } else { merged.push(v[j]); j += 1 }
//!     }
//!     merged.extend_from_slice(&v[i..mid]);
//!     merged.extend_from_slice(&v[j..]);
//!     v.copy_from_slice(&merged);
//! }
//!
//! let rt = numatask::Runtime::builder().num_threads(2).build()?;
//! let mut v: Vec<u32> = (0..1000).rev().collect();
//! rt.scope(|s| merge_sort(s, &mut v));
//! assert!(v.windows(2).all(|w| w[0] <= w[1]));
//!
//! // A scope of its own: the data is free again when it returns.
//! let mut w = vec![0u32; 8];
//! rt.scope(|_| {
//!     numatask::scope(|s| {
//!         let (a, b) = w.split_at_mut(4);
//!         s.spawn(move |_| a.fill(1));
//!         b.fill(2);
//!     });
//!     w.rotate_left(2);
//! });
//! assert_eq!(w, [1, 1, 2, 2, 2, 2, 1, 1]);
//! # Ok::<(), numatask::BuildError>(())
//! ```
//!
//! The pages of [`sched`], [`alloc`] and [`kernels`] (module docs, every type) are built with the facade by
//! `cargo doc --workspace --no-deps --open`; `cargo doc --no-deps` documents this crate alone,
//! and links into them lead nowhere.
pub use numatask_alloc as alloc;
pub use numatask_kernels as kernels;
pub use numatask_sched as sched;
pub use numatask_sched::{
    BuildError, DependError, DisplayEnv, Footprint, Places, ProcBind, RawTaskBuilder, Runtime,
    RuntimeBuilder, SchedulerKind, Scope, TaskBuilder, TaskHandle, WaitPolicy, current_num_workers,
    current_worker, join, scope, try_join, try_scope,
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
///     Ok::<(), DependError>(())
/// })?;
/// assert!(v.iter().all(|&e| e == 2));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub mod prelude {
    pub use numatask_alloc::{AllocError, Distribution, NumaVec, Place, Topology};
    pub use numatask_sched::data::{Blocks, Region, View};
    pub use numatask_sched::depend::{Access, AccessKind};
    pub use numatask_sched::taskloop::Grain;
    pub use numatask_sched::{
        BuildError, DependError, Footprint, Places, ProcBind, Runtime, RuntimeBuilder,
        SchedulerKind, Scope, TaskBuilder, TaskHandle, WaitPolicy, current_num_workers,
        current_worker, join, scope, try_join, try_scope,
    };
}

/// The README's examples, compiled and run as doc tests so that they stay true.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct ReadmeDoctests;
