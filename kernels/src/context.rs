//! Contexts: a runtime, the limits of launches on it, and the dependence tracker that orders
//! the commands of all its queues.

use std::fmt;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock, Weak};
use std::time::{Duration, Instant};

use numatask_alloc::{Distribution, Place};
use numatask_sched::depend::DepTracker;
use numatask_sched::{Places, Runtime, WaitPolicy};

use crate::buffer::{Buffer, Element};
use crate::command::Command;
use crate::error::Error;
use crate::queue::Queue;
use crate::user_event::UserEvent;

/// The largest local memory per work-group a context may allow ([`Limits::local_mem_size`]).
pub const MAX_LOCAL_MEM: usize = 1 << 30;

/// The limits of launches in a context (OpenCL's device info).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limits {
    /// Work-items per work-group, at most (`CL_DEVICE_MAX_WORK_GROUP_SIZE`).
    pub max_work_group_size: usize,
    /// Bytes of local memory per work-group, at most (`CL_DEVICE_LOCAL_MEM_SIZE`).
    pub local_mem_size: usize,
}

impl Default for Limits {
    /// 4096 work-items per group (a group's items run in loops on one worker: the bound only
    /// keeps one group from being most of a launch) and 256 KiB of local memory per group (a
    /// worker's arena, which should stay in its L2).
    fn default() -> Self {
        Limits {
            max_work_group_size: 4096,
            local_mem_size: 256 << 10,
        }
    }
}

/// The runtime a context runs on.
enum RuntimeRef {
    Global(&'static Runtime),
    Shared(Arc<Runtime>),
}

/// A runtime to run kernels on, with the limits of its launches and the order of its
/// commands: the buffers, queues, user events and kernels' launches of one context depend on
/// each other; those of two contexts do not mix (an error at enqueue). Cheap to clone.
#[derive(Clone)]
pub struct Context {
    pub(crate) inner: Arc<ContextInner>,
}

pub(crate) struct ContextInner {
    pub(crate) id: u64,
    runtime: RuntimeRef,
    pub(crate) limits: Limits,
    /// Orders every command of the context's queues by its accesses: buffer bytes, and the
    /// bytes that stand for queues and events (see [`virtual_address`]).
    pub(crate) tracker: DepTracker<Command>,
    pub(crate) epoch: Instant,
    /// How long a thread waiting for one of its events stays awake (the runtime's wait policy).
    pub(crate) wait_spin: Duration,
    /// Where new buffers go unless told otherwise.
    pub(crate) place: Place,
    /// The runtimes of the sub-devices, one per NUMA node, made on first use.
    sub_devices: OnceLock<Vec<SubDevice>>,
}

static NEXT_CONTEXT: AtomicU64 = AtomicU64::new(1);
static NEXT_VIRTUAL: AtomicUsize = AtomicUsize::new(0);

/// A byte that stands for a queue or an event in the dependence tracker, in the upper half of
/// the address space, where no buffer is: a command that waits for an event reads its byte,
/// the command of the event writes it; an in-order queue's commands all update its byte.
pub(crate) fn virtual_address() -> usize {
    (1usize << (usize::BITS - 1)) | NEXT_VIRTUAL.fetch_add(1, Ordering::Relaxed)
}

impl Context {
    /// A context on `runtime`, whose buffers follow `OMP_DATA_DISTRIBUTION` (an error if it is
    /// set to something else than `standard`, `fine` or `coarse`).
    pub fn new(runtime: Arc<Runtime>) -> Result<Context, Error> {
        Self::make(RuntimeRef::Shared(runtime), Limits::default())
    }

    /// A context on `runtime` with other limits.
    pub fn with_limits(runtime: Arc<Runtime>, limits: Limits) -> Result<Context, Error> {
        if limits.max_work_group_size == 0 {
            return Err(Error::Setting(
                "a context allows at least one work-item per work-group".into(),
            ));
        }
        if limits.local_mem_size > MAX_LOCAL_MEM {
            return Err(Error::Setting(format!(
                "{} bytes of local memory per work-group: at most {MAX_LOCAL_MEM} (each worker \
                 keeps an arena of that size)",
                limits.local_mem_size
            )));
        }
        Self::make(RuntimeRef::Shared(runtime), limits)
    }

    /// The process-wide context, on the process-wide runtime ([`Runtime::try_global`]); both
    /// are created from the environment on first use, and every call returns the same context
    /// (so its buffers and events mix).
    pub fn global() -> Result<Context, Error> {
        static GLOBAL: OnceLock<Context> = OnceLock::new();
        if let Some(c) = GLOBAL.get() {
            return Ok(c.clone());
        }
        let made = Self::make(
            RuntimeRef::Global(Runtime::try_global()?),
            Limits::default(),
        )?;
        // Another thread may have made one meanwhile: its context wins, this one goes.
        Ok(GLOBAL.get_or_init(|| made).clone())
    }

    fn make(runtime: RuntimeRef, limits: Limits) -> Result<Context, Error> {
        let place = Place::Distributed(Distribution::from_env()?);
        let wait_spin = wait_spin(runtime.get().settings().wait_policy);
        Ok(Context {
            inner: Arc::new(ContextInner {
                id: NEXT_CONTEXT.fetch_add(1, Ordering::Relaxed),
                runtime,
                limits,
                tracker: DepTracker::new(),
                epoch: Instant::now(),
                wait_spin,
                place,
                sub_devices: OnceLock::new(),
            }),
        })
    }

    pub(crate) fn id(&self) -> u64 {
        self.inner.id
    }

    /// The runtime its commands run on.
    pub fn runtime(&self) -> &Runtime {
        self.inner.runtime()
    }

    /// The limits of its launches.
    pub fn limits(&self) -> Limits {
        self.inner.limits
    }

    /// Where its buffers go by default (`OMP_DATA_DISTRIBUTION`'s policy).
    pub fn default_place(&self) -> Place {
        self.inner.place
    }

    /// A buffer of `len` zeroes, placed by the context's default distribution. Pages are
    /// not touched: under `standard` each goes to the node of the worker that first writes it.
    /// Write a buffer ([`Queue::fill`](crate::Queue::fill), a kernel that writes it) before
    /// kernels read it: a page first read, then written, faults twice.
    pub fn buffer<T: Element>(&self, len: usize) -> Result<Buffer<T>, Error> {
        Buffer::new(self, len, self.inner.place)
    }

    /// A buffer of `len` zeroes placed by `place`: a [`Distribution`] or a node.
    pub fn buffer_on<T: Element>(
        &self,
        len: usize,
        place: impl Into<Place>,
    ) -> Result<Buffer<T>, Error> {
        Buffer::new(self, len, place.into())
    }

    /// An in-order queue: each command starts after the previous one ended.
    pub fn queue(&self) -> Queue {
        Queue::on(self, true, None)
    }

    /// An out-of-order queue: commands are ordered only by their wait lists, their buffers'
    /// accesses, and barriers; independent commands run at the same time.
    pub fn out_of_order_queue(&self) -> Queue {
        Queue::on(self, false, None)
    }

    /// A user event: an event the program completes (or fails), to hold commands back until
    /// something outside the context happened.
    pub fn user_event(&self) -> UserEvent {
        UserEvent::new(self)
    }

    /// The context's runtime partitioned by NUMA node (OpenCL's `clCreateSubDevices` by
    /// affinity domain): one [`SubDevice`] per node, whose queues run their commands' work on
    /// workers of that node's cores only. Commands of every queue of the context, sub-devices'
    /// included, are ordered among themselves as usual (they share buffers and events).
    ///
    /// The sub-devices' workers are made on the first call, one per core of each node, pinned
    /// as the context's runtime is, with its scheduler and wait policy; like OpenCL's
    /// sub-devices they share the cores with the context's own workers, so a program keeps
    /// both busy at once only at the price of oversubscribed cores.
    pub fn sub_devices(&self) -> Result<&[SubDevice], Error> {
        if let Some(subs) = self.inner.sub_devices.get() {
            return Ok(subs);
        }
        let rt = self.runtime();
        let topology = rt.topology();
        let settings = rt.settings();
        let mut subs = Vec::new();
        for (node, numa) in topology.nodes().iter().enumerate() {
            let cores: Vec<Vec<usize>> = numa.cores.iter().map(|c| c.pus.clone()).collect();
            if cores.is_empty() {
                continue; // a node of memory only
            }
            let runtime = Runtime::builder()
                .topology(Arc::clone(topology))
                .num_threads(cores.len())
                .places(Places::List(cores))
                .proc_bind(settings.proc_bind)
                .scheduler(settings.scheduler)
                .wait_policy(settings.wait_policy)
                .build()?;
            subs.push(SubDevice {
                context: self.clone_weak(),
                node,
                runtime: Arc::new(runtime),
            });
        }
        // An error is not kept: a later call tries again. Another thread may have made them
        // meanwhile: its sub-devices win, these go.
        Ok(self.inner.sub_devices.get_or_init(|| subs))
    }

    /// A handle on the same context for a sub-device (see [`SubDevice`]).
    fn clone_weak(&self) -> Weak<ContextInner> {
        Arc::downgrade(&self.inner)
    }
}

/// A part of a context's runtime: the workers of one NUMA node ([`Context::sub_devices`]).
pub struct SubDevice {
    /// The context (weak: the context owns its sub-devices).
    context: Weak<ContextInner>,
    node: usize,
    runtime: Arc<Runtime>,
}

impl SubDevice {
    /// The NUMA node whose cores it runs on.
    pub fn node(&self) -> usize {
        self.node
    }

    /// Its runtime (workers on the node's cores).
    pub fn runtime(&self) -> &Runtime {
        &self.runtime
    }

    fn context(&self) -> Context {
        Context {
            inner: self
                .context
                .upgrade()
                .expect("a sub-device is reached through its context, which is alive"),
        }
    }

    /// An in-order queue whose commands run on this node's workers.
    pub fn queue(&self) -> Queue {
        Queue::on(&self.context(), true, Some(Arc::clone(&self.runtime)))
    }

    /// An out-of-order queue whose commands run on this node's workers.
    pub fn out_of_order_queue(&self) -> Queue {
        Queue::on(&self.context(), false, Some(Arc::clone(&self.runtime)))
    }
}

impl fmt::Debug for SubDevice {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SubDevice")
            .field("node", &self.node)
            .field("workers", &self.runtime.num_workers())
            .finish()
    }
}

/// How long a thread waiting for an event stays awake before it sleeps, under the runtime's
/// `OMP_WAIT_POLICY`: `passive`, not at all (a brief spin only); `active`, until the command
/// ends; `balanced` (the default), 2 ms, about as long as a kernel on cached data runs on a
/// many-core machine. Waking a sleeping thread takes tens of microseconds (up to a hundred in
/// a virtual machine), which was 10 - 25% of such a launch from the host's view when the
/// waiter slept after 50 µs; awake, the waiter yields its core between looks, so a worker
/// sharing the core loses little.
fn wait_spin(policy: WaitPolicy) -> Duration {
    match policy {
        WaitPolicy::Passive => Duration::ZERO,
        WaitPolicy::Balanced => Duration::from_millis(2),
        WaitPolicy::Active => Duration::MAX,
    }
}

impl RuntimeRef {
    fn get(&self) -> &Runtime {
        match self {
            RuntimeRef::Global(rt) => rt,
            RuntimeRef::Shared(rt) => rt,
        }
    }
}

impl ContextInner {
    pub(crate) fn runtime(&self) -> &Runtime {
        self.runtime.get()
    }
}

impl fmt::Debug for Context {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Context")
            .field("id", &self.inner.id)
            .field("workers", &self.runtime().num_workers())
            .field("limits", &self.inner.limits)
            .field("place", &self.inner.place)
            .finish()
    }
}
