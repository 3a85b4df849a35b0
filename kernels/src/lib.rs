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
//! [`TASKS_PER_WORKER`] per worker by default. Each task's footprint is the part of each
//! buffer argument its groups touch (a block partition of each buffer over the groups, unless
//! the kernel gives its own, [`Kernel::with_footprint`]): under the locality-aware scheduler
//! (`NUMATASK_SCHEDULER=locality`) the task goes to the node holding most of those bytes, so
//! a kernel over a `coarse` buffer runs each group where its part of the buffer lives. Each
//! task also prefers a worker
//! ([`TaskBuilder::prefer_worker`](numatask_sched::TaskBuilder::prefer_worker)), the same for
//! task `i` of every launch with the same footprints (one of that node's workers, or any
//! worker under work stealing): when that worker is free, the groups of the next launch over
//! the same buffers run where the last one left their data in the cache; when it is busy,
//! another worker (of the same node) takes them.
//!
//! Every command returns an [`Event`]. Commands are ordered by the runtime's dependence tracker
//! on what they access: their buffers in their parameters' [`Mode`]s (as SYCL's accessors), the
//! events of their wait lists ([`Queue::after`], [`LaunchBuilder::wait_for`]), and their queue
//! (each command of an in-order queue after the previous one; barriers of an out-of-order one).
//! Independent commands run at the same time, their groups filling idle workers.
//!
//! A kernel that panics fails its event with the panic's message; every command that waits
//! for it (by wait list, marker or barrier, or through a buffer it wrote, which it poisons)
//! fails with that [`Failure`] instead of running. Nothing hangs, and the runtime stays usable.
//!
//! Local memory ([`Local`]) is a per-group arena, 64-byte aligned, reused by each worker,
//! zeroed when a group starts.
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

mod buffer;
mod command;
mod context;
mod error;
mod event;
mod kernel;
mod launch;
mod ndrange;
mod queue;
mod user_event;

pub use buffer::{Buffer, Element};
pub use context::{Context, Limits};
pub use error::{Error, Failure, FailureKind};
pub use event::{Event, EventStatus, Profile};
pub use kernel::{
    Arg, FootprintQuery, GroupArgs, Item, ItemParam, ItemParams, ItemsMut, Kernel, Local, Mode,
    Param, ParamKind, Read, ReadWrite, WorkGroup, Write,
};
pub use launch::TASKS_PER_WORKER;
pub use ndrange::{CACHE_BUDGET, Geometry, NdRange, SIMD_WIDTH};
pub use queue::{After, LaunchBuilder, Mapped, MappedMut, Queue, Reading};
pub use user_event::UserEvent;
