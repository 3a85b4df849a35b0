//! An OpenCL-model kernel executor on the numatask runtime: NDRange launches whose
//! work-groups run as tasks, placed by the data they touch.
//!
//! # Model
//!
//! A [`Context`] is a runtime (a pool of workers, with its scheduler) plus the order of the
//! commands of its [`Queue`]s. [`Buffer`]s are arrays on the allocator, placed by
//! `OMP_DATA_DISTRIBUTION` (or a [`Place`](numatask_alloc::Place) given when made). A
//! [`Kernel`] is a name, typed parameters, and a *work-group function*, which runs every
//! work-item of one group in loops on the calling worker: work-items are never threads or
//! fibers, and a kernel without barriers can be a closure over one work-item
//! ([`Kernel::items`]), for which the executor generates those loops, vectorizable ones.
//!
//! A launch ([`Queue::launch`]) checks its [`NdRange`] and arguments when it is enqueued (an
//! [`Error`] then, and nothing is queued), and becomes tasks of consecutive work-groups,
//! up to [`TASKS_PER_WORKER`] per worker by default (fewer where that would leave fewer than
//! 16 groups to a task). Each task's footprint is the part of each
//! buffer argument its groups touch (a block partition of each buffer over the groups, unless
//! the kernel gives its own, [`Kernel::with_footprint`]), its largest written part marked as
//! the one that decides: under the locality-aware scheduler (`NUMATASK_SCHEDULER=locality`)
//! the task is dealt to the node holding that part, whatever its size. So each group runs
//! where its data lives (under `coarse` each buffer lies wholly on one node, buffers taking
//! the nodes in turn; under `fine` each page on a node of its own), and group `i` of the next
//! launch over the same buffers goes to the same node. There each task also prefers a worker
//! ([`TaskBuilder::prefer_worker`](numatask_sched::TaskBuilder::prefer_worker)), the same for
//! task `i` of every launch with the same footprints: when that worker is free, the groups of
//! the next launch over the same buffers run where the last one left their data in the cache;
//! when it is busy, another worker of the node takes them.
//!
//! Every command returns an [`Event`]. Commands are ordered by the runtime's dependence tracker
//! on what they access: their buffers in their parameters' [`Mode`]s (as SYCL's accessors), the
//! events of their wait lists ([`Queue::after`], [`LaunchBuilder::wait_for`]), and their queue
//! (each command of an in-order queue after the previous one; barriers of an out-of-order one).
//! Independent commands run at the same time, their groups filling idle workers.
//! [`Context::sub_devices`] partitions the context by NUMA node (OpenCL's sub-devices by
//! affinity domain): the queues of a [`SubDevice`] run their commands on that node's cores.
//!
//! A kernel that panics fails its event with the panic's message; every command that depends
//! on it fails with that [`Failure`] instead of running: the commands whose wait lists hold its
//! event (markers and barriers wait for every earlier command of their queue), and those that
//! read elements it was to write, which it poisons. Queue order alone (the next command of an
//! in-order queue, a command after a barrier) orders without failing. The runtime stays usable.
//!
//! Local memory ([`Local`]) is a per-group arena, 64-byte aligned, reused by each worker,
//! zeroed when a group starts.
//!
//! # Kernels in Rust: `#[kernel]`
//!
//! A function marked [`#[kernel]`](kernel) is written as an OpenCL C kernel is, one
//! work-item's code with barriers and local memory, and compiled at build time into a
//! work-group function by *work-item coalescing*: the code between barriers runs as loops
//! over the group's work-items on one worker (a barrier costs a loop's end, not a context
//! switch), control flow around barriers runs once per group, values the same for every
//! work-item are computed once per group, and only variables that live across barriers and
//! differ between work-items get a slot per work-item. The macro also builds a reference
//! form, each work-item on its own thread with a real barrier
//! ([`LaunchBuilder::reference`]), which tests compare the compiled form against; and it
//! reports what it decided ([`KernelInfo`]). As an OpenCL runtime compiles kernels for the
//! processor it runs on, work-group functions (and the loops of [`Kernel::items`] closures)
//! are compiled for the target's baseline and, on x86-64, for x86-64-v3 (AVX2) and v4
//! (AVX-512); a launch runs the best the processor has ([`Isa`], `NUMATASK_KERNEL_ISA`), with
//! the same results.
//!
//! ```
//! use std::sync::Arc;
//! use numatask_kernels::{Context, Local, NdRange, kernel};
//! use numatask_sched::Runtime;
//!
//! /// Each group of 256 sums its elements into `out[group]`.
//! #[kernel]
//! fn reduce(input: &[f32], out: &mut [f32], scratch: Local<f32>) {
//!     let lid = local_id(0);
//!     scratch[lid] = input[global_id(0)];
//!     barrier();
//!     let mut s = local_size(0) / 2;
//!     while s > 0 {
//!         if lid < s {
//!             scratch[lid] += scratch[lid + s];
//!         }
//!         barrier();
//!         s /= 2;
//!     }
//!     if lid == 0 {
//!         out[group_id(0)] = scratch[0];
//!     }
//! }
//!
//! let context = Context::new(Arc::new(Runtime::builder().num_threads(2).build()?))?;
//! let queue = context.queue();
//! let input = context.buffer::<f32>(1024)?;
//! queue.fill(&input, 1.0, 0..1024)?;
//! let sums = context.buffer::<f32>(4)?;
//! queue
//!     .launch(&reduce, NdRange::new([1024]).local([256]))
//!     .arg(&input)
//!     .arg(&sums)
//!     .arg(Local::<f32>::new(256))
//!     .enqueue()?
//!     .wait()?;
//! assert_eq!(queue.read(&sums, 0..4)?.wait()?, vec![256.0; 4]);
//! // Three loops over the work-items; `s` a scalar of the group; `lid` recomputed.
//! assert_eq!(reduce::INFO.regions, 3);
//! assert_eq!(reduce::INFO.uniform, ["s"]);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! A barrier where work-items could disagree does not compile:
//!
//! ```compile_fail
//! use numatask_kernels::kernel;
//!
//! #[kernel]
//! fn diverges(y: &mut [f32]) {
//!     if local_id(0) < 4 {
//!         barrier(); // error: barrier() under a condition that differs between work-items
//!     }
//! }
//! ```
//!
//! Nor does a scattered write of elements that cannot be stored atomically:
//!
//! ```compile_fail
//! use numatask_kernels::kernel;
//!
//! #[kernel]
//! fn scatter(y: &mut [[f32; 2]]) {
//!     y[group_id(0)] = [1.0, 2.0]; // not the work-item's own element: atomic, `[f32; 2]` is not
//! }
//! ```
//!
//! # Design notes
//!
//! - **One tracker for every command.** Queues, wait lists and buffers are all byte ranges to
//!   the runtime's dependence tracker: a buffer's real bytes, and one byte in the upper half
//!   of the address space for each event (a command writes its own, commands that wait for it
//!   read it) and each queue (updated by every command of an in-order queue; read by those of
//!   an out-of-order queue, updated by its barriers). The tracker thus gives in-order queues,
//!   wait lists, barriers and SYCL-style accessor dependences with one mechanism, and a
//!   command's release costs what a task's does.
//! - **Failures are checked at release, not poisoned in the tracker.** The tracker can cancel
//!   the successors of a failed task, but its poison stays on the bytes for good: every later
//!   command of an in-order queue would fail. The executor completes every command normally
//!   and, when one is released, checks its wait list and the elements it reads (the elements a
//!   failed command was to write are poisoned until a host command overwrites them).
//! - **A command runs as a detached job** ([`Runtime::spawn`](numatask_sched::Runtime::spawn))
//!   whose scope spawns the launch's tasks and waits for them on a worker; enqueueing never
//!   blocks, and the last task's end releases the next commands from whichever worker ran it.
//! - **What did not work**: a waiter that spun without yielding, with a pinned worker on its
//!   core (a loaded machine), held the command back for its whole spin: 54 µs per empty launch
//!   against 5 µs once it yields. Work-item ids computed through a reference to the group
//!   kept the work-item loop scalar (a load of the geometry per item, and a bounds check the
//!   compiler could not hoist); [`Item`] now carries the group's base id by value, and the loop
//!   over a row of work-items compiles to the same packed instructions as a plain slice loop.
//!
//! # Example
//!
//! ```
//! use std::sync::Arc;
//! use numatask_kernels::{Context, Kernel, NdRange, Read, ReadWrite};
//! use numatask_sched::Runtime;
//!
//! let runtime = Arc::new(Runtime::builder().num_threads(2).build()?);
//! let context = Context::new(runtime)?;
//! let queue = context.queue();
//!
//! let n = 100_000;
//! let x = context.buffer::<f32>(n)?;
//! let y = context.buffer::<f32>(n)?;
//! queue.fill(&x, 1.0, 0..n)?;
//! queue.write(&y, 0, &vec![2.0; n])?;
//!
//! // y = a * x + y, one work-item per element.
//! let saxpy = Kernel::items::<(Read<f32>, ReadWrite<f32>, f32), _>("saxpy", |item, (x, y, a)| {
//!     *y += a * x[item.global_id(0)]
//! });
//! let done = queue.launch(&saxpy, NdRange::new([n])).arg(&x).arg(&y).arg(3.0f32).enqueue()?;
//! done.wait()?;
//!
//! let result = queue.read(&y, 0..n)?.wait()?;
//! assert!(result.iter().all(|&v| v == 5.0));
//!
//! // Bad launches are errors at enqueue, naming what is wrong.
//! let err = queue.launch(&saxpy, NdRange::new([n])).arg(&x).arg(&y).arg(3.0f64).enqueue();
//! assert_eq!(
//!     err.unwrap_err().to_string(),
//!     "argument 2 of kernel 'saxpy': expected a scalar f32, given a scalar f64"
//! );
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

// Queues and events stand for bytes in the upper half of the address space, where a 64-bit
// process has no buffer (see the design notes).
#[cfg(not(target_pointer_width = "64"))]
compile_error!("numatask-kernels needs a 64-bit target");

// Under `--cfg loom` only the event protocol and what it names are built, for the model
// checks in `loom-tests/` (everything else needs the runtime, which loom does not run).
#[cfg(not(loom))]
mod buffer;
#[cfg(not(loom))]
mod command;
#[cfg(not(loom))]
mod compiled;
#[cfg(not(loom))]
mod context;
// Under loom, what only the executor's other modules use is unused.
#[cfg_attr(loom, allow(dead_code))]
mod error;
#[cfg_attr(loom, allow(dead_code))]
mod event;
#[cfg(not(loom))]
mod isa;
#[cfg(not(loom))]
mod kernel;
#[cfg(not(loom))]
mod launch;
#[cfg(not(loom))]
mod ndrange;
#[cfg(not(loom))]
mod oracle;
#[cfg(not(loom))]
mod queue;
mod sync;
#[cfg(not(loom))]
mod user_event;

#[cfg(not(loom))]
pub use buffer::{Buffer, Element};
#[cfg(not(loom))]
pub use compiled::{Expanded, KernelInfo, LoopInfo, Scatter};
#[cfg(not(loom))]
pub use context::{Context, Limits, MAX_LOCAL_MEM, SubDevice};
pub use error::{Error, Failure, FailureKind};
pub use event::{Event, EventStatus, Profile};
#[cfg(not(loom))]
pub use isa::{Isa, kernel_isa};
#[cfg(not(loom))]
pub use kernel::{
    Arg, FootprintQuery, GroupArgs, Item, ItemParam, ItemParams, ItemsMut, Kernel, Local, Mode,
    Param, ParamKind, Read, ReadWrite, WorkGroup, Write,
};
#[cfg(not(loom))]
pub use launch::{MAX_ARGS, TASKS_PER_WORKER};
#[cfg(not(loom))]
pub use ndrange::{CACHE_BUDGET, Geometry, NdRange, SIMD_WIDTH};
#[cfg(not(loom))]
pub use numatask_kernels_macros::kernel;
#[cfg(not(loom))]
pub use queue::{After, LaunchBuilder, Mapped, MappedMut, Queue, Reading};
#[cfg(not(loom))]
pub use user_event::UserEvent;

/// Not part of the API: the executor's internal structures, public only so that the loom
/// model checks of this repository (`loom-tests/`) can reach them. Anything here may change in
/// any release.
#[doc(hidden)]
pub mod __internals {
    use crate::error::{Failure, FailureKind};

    pub use crate::event::EventState;
    pub use crate::sync::Instant;

    /// A failure of `kind`, for a model to end an event with.
    pub fn failure(kind: FailureKind) -> Failure {
        Failure::new(kind)
    }
}

/// Not part of the API: what the code generated by the `#[kernel]` macro calls. Anything here
/// may change in any release.
#[cfg(not(loom))]
#[doc(hidden)]
pub mod __rt {
    pub use crate::compiled::{Carver, LocalArray, OwnedMut, SharedMut, bound, lanes, pick3};
    pub use crate::isa::{Isa, kernel_isa};
    pub use crate::kernel::{GroupArgs, GroupRun, Kernel, Mode, Param, WorkGroup};
    pub use crate::oracle::{ItemCtx, OracleLocal, oracle_items};
}
