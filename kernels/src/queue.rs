//! Command queues: where the program enqueues launches and host commands, each returning an
//! [`Event`].

use std::fmt;
use std::mem::size_of;
use std::ops::{Deref, DerefMut, Range};
use std::sync::{Arc, Mutex};

use numatask_sched::depend::{Access, AccessKind, DepHandle};
use numatask_sched::{Footprint, Runtime, Scope};

use crate::buffer::{Buffer, Element, RawBuffer};
use crate::command::{self, BufferUse, Command, Work};
use crate::context::{Context, ContextInner, virtual_address};
use crate::error::{Error, Failure};
use crate::event::{Event, EventState};
use crate::kernel::{Arg, Kernel};
use crate::launch::Launch;
use crate::ndrange::NdRange;

/// Elements a host command (fill, copy) gives one task.
const HOST_CHUNK_BYTES: usize = 1 << 20;

/// A command queue (OpenCL's `cl_command_queue`): in-order ([`Context::queue`]) or
/// out-of-order ([`Context::out_of_order_queue`]). Cheap to clone; usable from many threads.
///
/// Commands are handed to the runtime when they are enqueued (there is no batch to
/// [`flush`](Self::flush)); each returns an [`Event`]. Enqueueing never blocks: a write copies
/// its data first, so the program may reuse it at once. The blocking forms wait for their
/// command: [`read_into`](Self::read_into), [`map`](Self::map), [`map_mut`](Self::map_mut),
/// and `.wait()` on any event (or [`Reading::wait`]), and [`finish`](Self::finish). Called
/// from inside a task or kernel of the same runtime, they block that worker (see
/// [`Event::wait`]). Commands of every queue of a context
/// are ordered by the buffers they use, in their arguments' modes: a command that writes a
/// buffer waits for the earlier commands that use it, and a command that reads it for the
/// earlier ones that write it.
#[derive(Clone)]
pub struct Queue {
    inner: Arc<QueueInner>,
}

struct QueueInner {
    context: Arc<ContextInner>,
    /// The runtime its commands run on: a sub-device's, or `None` for the context's.
    runtime: Option<Arc<Runtime>>,
    /// The byte that stands for the queue in the tracker.
    address: usize,
    in_order: bool,
    state: Mutex<QueueState>,
}

#[derive(Default)]
struct QueueState {
    /// The events of commands that may not have ended, pruned now and then (when the list has
    /// doubled since the last pruning, so that enqueueing stays O(1) amortized).
    outstanding: Vec<Event>,
    /// Its length after the last pruning.
    pruned_len: usize,
    /// The events of commands that failed since the last `finish` (pruned from `outstanding`):
    /// markers, barriers and `finish` still report them.
    failed: Vec<Event>,
}

impl QueueState {
    fn push(&mut self, event: Event) {
        if self.outstanding.len() >= 2 * self.pruned_len.max(16) {
            let failed = &mut self.failed;
            self.outstanding.retain(|e| match e.state.outcome() {
                None => true,
                Some(Ok(())) => false,
                Some(Err(_)) => {
                    failed.push(e.clone());
                    false
                }
            });
            self.pruned_len = self.outstanding.len();
        }
        self.outstanding.push(event);
    }

    /// Every event a marker waits for: the commands that may not have ended and those that
    /// failed since the last `finish`.
    fn all(&self) -> Vec<Event> {
        self.failed
            .iter()
            .chain(&self.outstanding)
            .cloned()
            .collect()
    }
}

impl Queue {
    pub(crate) fn on(context: &Context, in_order: bool, runtime: Option<Arc<Runtime>>) -> Queue {
        Queue {
            inner: Arc::new(QueueInner {
                context: Arc::clone(&context.inner),
                runtime,
                address: virtual_address(),
                in_order,
                state: Mutex::new(QueueState::default()),
            }),
        }
    }

    /// Whether each command starts after the previous one ended.
    pub fn is_in_order(&self) -> bool {
        self.inner.in_order
    }

    /// The commands enqueued through the result wait for `events` (OpenCL's wait lists): they
    /// start when those ended, and fail if one of them failed.
    pub fn after<'q, 'e>(&'q self, events: impl IntoIterator<Item = &'e Event>) -> After<'q> {
        After {
            queue: self,
            wait: events.into_iter().cloned().collect(),
        }
    }

    /// A launch of `kernel` over `range`; give the arguments, then
    /// [`enqueue`](LaunchBuilder::enqueue) it.
    pub fn launch(&self, kernel: &Kernel, range: NdRange) -> LaunchBuilder<'_> {
        LaunchBuilder {
            queue: self,
            kernel: kernel.clone(),
            range,
            args: Vec::new(),
            wait: Vec::new(),
            tasks: None,
            reference: false,
        }
    }

    /// Writes `data` into `buffer` from element `offset` on. The data is copied at once: the
    /// slice may be reused when this returns.
    pub fn write<T: Element>(
        &self,
        buffer: &Buffer<T>,
        offset: usize,
        data: &[T],
    ) -> Result<Event, Error> {
        self.after([]).write(buffer, offset, data)
    }

    /// Reads elements `range` of `buffer` into a vector, once the commands writing them ended.
    pub fn read<T: Element>(
        &self,
        buffer: &Buffer<T>,
        range: Range<usize>,
    ) -> Result<Reading<T>, Error> {
        self.after([]).read(buffer, range)
    }

    /// Reads `buffer` from element `offset` on into `out`, and waits for that.
    pub fn read_into<T: Element>(
        &self,
        buffer: &Buffer<T>,
        offset: usize,
        out: &mut [T],
    ) -> Result<(), Error> {
        self.after([]).read_into(buffer, offset, out)
    }

    /// Sets elements `range` of `buffer` to `value`.
    pub fn fill<T: Element>(
        &self,
        buffer: &Buffer<T>,
        value: T,
        range: Range<usize>,
    ) -> Result<Event, Error> {
        self.after([]).fill(buffer, value, range)
    }

    /// Copies elements `from` of `src` to `dst` at `to`.
    pub fn copy<T: Element>(
        &self,
        src: &Buffer<T>,
        from: Range<usize>,
        dst: &Buffer<T>,
        to: usize,
    ) -> Result<Event, Error> {
        self.after([]).copy(src, from, dst, to)
    }

    /// Maps `buffer` for reading: waits until the commands writing it ended, and gives its
    /// elements in place (no copy). Commands that write it wait until the guard is dropped.
    pub fn map<T: Element>(&self, buffer: &Buffer<T>) -> Result<Mapped<T>, Error> {
        self.after([]).map(buffer)
    }

    /// Maps `buffer` for reading and writing: waits until the commands using it ended, and
    /// gives its elements in place. Commands that use it wait until the guard is dropped.
    pub fn map_mut<T: Element>(&self, buffer: &Buffer<T>) -> Result<MappedMut<T>, Error> {
        self.after([]).map_mut(buffer)
    }

    /// An event that ends when every command enqueued so far ended (failing if one of them
    /// failed); later commands do not wait for it.
    pub fn marker(&self) -> Event {
        // Without a wait list there is no event of another context to refuse.
        self.after([])
            .marker()
            .expect("a marker without a wait list is always accepted")
    }

    /// Like [`marker`](Self::marker), and every later command of the queue waits for it.
    pub fn barrier(&self) -> Event {
        self.after([])
            .barrier()
            .expect("a barrier without a wait list is always accepted")
    }

    /// Hands the enqueued commands to the runtime: they already are, at enqueue, so this
    /// returns at once (OpenCL's `clFlush`, for programs written against it).
    pub fn flush(&self) {}

    /// Waits until every command enqueued so far ended (OpenCL's `clFinish`); `Err` with the
    /// first failure among the commands that ended since the last `finish`.
    pub fn finish(&self) -> Result<(), Failure> {
        let (failed, pending) = {
            let mut state = self.lock();
            state.pruned_len = 0;
            (
                std::mem::take(&mut state.failed),
                std::mem::take(&mut state.outstanding),
            )
        };
        let mut first = failed.first().and_then(|e| e.state.outcome()?.err());
        for e in &pending {
            if let Err(f) = e.wait()
                && first.is_none()
            {
                first = Some(f);
            }
        }
        match first {
            Some(f) => Err(f),
            None => Ok(()),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, QueueState> {
        self.inner.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn context(&self) -> &Arc<ContextInner> {
        &self.inner.context
    }

    /// The runtime its commands run on.
    fn runtime(&self) -> &Runtime {
        match &self.inner.runtime {
            Some(rt) => rt,
            None => self.inner.context.runtime(),
        }
    }

    /// A new event for a command called `name`.
    fn event(&self, name: String) -> Arc<EventState> {
        let c = self.context();
        EventState::new(c.id, c.epoch, c.wait_spin, virtual_address(), name)
    }

    fn check_events(&self, wait: &[Event]) -> Result<(), Error> {
        match wait.iter().find(|e| e.state.context != self.context().id) {
            Some(e) => Err(Error::OtherContext(format!(
                "the event of '{}' in the wait list",
                e.state.command
            ))),
            None => Ok(()),
        }
    }

    /// Submits `command` with its buffer `accesses` plus its event's, its wait list's and the
    /// queue's (`barrier`: a command every later one of an out-of-order queue waits for).
    fn submit(&self, mut accesses: Vec<Access>, command: Command, barrier: bool) -> Event {
        let event = Event {
            state: Arc::clone(&command.event),
        };
        command.event_accesses(&mut accesses);
        let queue_kind = if self.inner.in_order || barrier {
            AccessKind::InOut
        } else {
            AccessKind::In
        };
        accesses.push(Access::new(self.inner.address, 1, queue_kind));
        self.lock().push(event.clone());
        command::submit(self.context(), &accesses, command);
        event
    }

    /// The events of the commands that may not have ended, and of those that failed since the
    /// last `finish`.
    fn outstanding(&self) -> Vec<Event> {
        self.lock().all()
    }
}

impl fmt::Debug for Queue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Queue")
            .field("in_order", &self.inner.in_order)
            .field("outstanding", &self.lock().outstanding.len())
            .finish()
    }
}

/// The commands of a queue with a wait list ([`Queue::after`]).
#[must_use = "the wait list applies to the commands enqueued through this"]
#[derive(Debug)]
pub struct After<'q> {
    queue: &'q Queue,
    wait: Vec<Event>,
}

fn check_range(what: &str, range: &Range<usize>, len: usize) -> Result<(), Error> {
    if range.start > range.end || range.end > len {
        Err(Error::Range(format!(
            "{what}: elements {}..{} of a buffer of {len}",
            range.start, range.end
        )))
    } else {
        Ok(())
    }
}

/// A pointer to a buffer's memory that host work may carry to a worker.
#[derive(Clone, Copy)]
struct SendPtr<T>(*mut T);
// SAFETY: the pointer goes with the command that holds its buffer; the command's accesses
// keep every conflicting command away while it is used.
unsafe impl<T: Send> Send for SendPtr<T> {}
// SAFETY: as for `Send`; tasks of one command use disjoint parts.
unsafe impl<T: Send> Sync for SendPtr<T> {}

fn uses(buffer: &Arc<RawBuffer>, range: Range<usize>, reads: bool, writes: bool) -> BufferUse {
    BufferUse {
        buffer: Arc::clone(buffer),
        range,
        reads,
        writes,
    }
}

impl<'q> After<'q> {
    fn host_command(
        &self,
        name: &str,
        buffers: Vec<BufferUse>,
        accesses: Vec<Access>,
        work: Work,
    ) -> Result<Event, Error> {
        self.queue.check_events(&self.wait)?;
        let mut command = Command::new(self.queue.event(name.to_owned()), &self.wait, work);
        command.runtime = self.queue.inner.runtime.clone();
        command.buffers = buffers;
        Ok(self.queue.submit(accesses, command, false))
    }

    /// [`Queue::write`] after the wait list.
    pub fn write<T: Element>(
        &self,
        buffer: &Buffer<T>,
        offset: usize,
        data: &[T],
    ) -> Result<Event, Error> {
        let q = self.queue;
        buffer.check_context(q.context().id)?;
        let range = offset..offset.saturating_add(data.len());
        check_range("write", &range, buffer.len())?;
        let data = data.to_vec();
        let dst = SendPtr(buffer.raw.ptr.cast::<T>());
        let raw = Arc::clone(&buffer.raw);
        self.host_command(
            "write",
            vec![uses(&raw, range.clone(), false, true)],
            vec![raw.access(AccessKind::Out, range.clone())],
            Work::Host(Box::new(move |_| {
                let dst = dst;
                // SAFETY: `range` is inside the buffer (checked); the command's `out` access on
                // it keeps every other command away from these elements meanwhile.
                unsafe {
                    std::ptr::copy_nonoverlapping(data.as_ptr(), dst.0.add(range.start), data.len())
                };
            })),
        )
    }

    /// [`Queue::read`] after the wait list.
    pub fn read<T: Element>(
        &self,
        buffer: &Buffer<T>,
        range: Range<usize>,
    ) -> Result<Reading<T>, Error> {
        let q = self.queue;
        buffer.check_context(q.context().id)?;
        check_range("read", &range, buffer.len())?;
        let slot = Arc::new(Mutex::new(None));
        let out = Arc::clone(&slot);
        let src = SendPtr(buffer.raw.ptr.cast::<T>());
        let raw = Arc::clone(&buffer.raw);
        let event = self.host_command(
            "read",
            vec![uses(&raw, range.clone(), true, false)],
            vec![raw.access(AccessKind::In, range.clone())],
            Work::Host(Box::new(move |_| {
                let src = src;
                // SAFETY: `range` is inside the buffer; the command's `in` access keeps
                // writers away meanwhile.
                let v = unsafe {
                    std::slice::from_raw_parts(src.0.add(range.start), range.end - range.start)
                }
                .to_vec();
                *out.lock().unwrap_or_else(|e| e.into_inner()) = Some(v);
            })),
        )?;
        Ok(Reading { event, slot })
    }

    /// [`Queue::read_into`] after the wait list.
    pub fn read_into<T: Element>(
        &self,
        buffer: &Buffer<T>,
        offset: usize,
        out: &mut [T],
    ) -> Result<(), Error> {
        let range = offset..offset.saturating_add(out.len());
        check_range("read", &range, buffer.len())?;
        let mapped = self.map(buffer)?;
        out.copy_from_slice(&mapped[range]);
        Ok(())
    }

    /// [`Queue::fill`] after the wait list.
    pub fn fill<T: Element>(
        &self,
        buffer: &Buffer<T>,
        value: T,
        range: Range<usize>,
    ) -> Result<Event, Error> {
        let q = self.queue;
        buffer.check_context(q.context().id)?;
        check_range("fill", &range, buffer.len())?;
        let raw = Arc::clone(&buffer.raw);
        let dst = SendPtr(buffer.raw.ptr.cast::<T>());
        self.host_command(
            "fill",
            vec![uses(&raw, range.clone(), false, true)],
            vec![raw.access(AccessKind::Out, range.clone())],
            Work::Host(Box::new(move |scope| {
                in_chunks::<T>(scope, range, dst.0 as usize, move |r| {
                    let dst = dst;
                    // SAFETY: `r` is a part of the checked range, given to one task alone; the
                    // command's `out` access keeps other commands away meanwhile.
                    let part = unsafe {
                        std::slice::from_raw_parts_mut(dst.0.add(r.start), r.end - r.start)
                    };
                    part.fill(value);
                })
            })),
        )
    }

    /// [`Queue::copy`] after the wait list.
    pub fn copy<T: Element>(
        &self,
        src: &Buffer<T>,
        from: Range<usize>,
        dst: &Buffer<T>,
        to: usize,
    ) -> Result<Event, Error> {
        let q = self.queue;
        src.check_context(q.context().id)?;
        dst.check_context(q.context().id)?;
        check_range("copy from", &from, src.len())?;
        let len = from.end - from.start;
        let into = to..to.saturating_add(len);
        check_range("copy to", &into, dst.len())?;
        if Arc::ptr_eq(&src.raw, &dst.raw) && from.start < into.end && into.start < from.end {
            return Err(Error::Range(format!(
                "copy: elements {}..{} and {}..{} of one buffer overlap",
                from.start, from.end, into.start, into.end
            )));
        }
        let s = SendPtr(src.raw.ptr.cast::<T>());
        let d = SendPtr(dst.raw.ptr.cast::<T>());
        let offset = from.start;
        self.host_command(
            "copy",
            vec![
                uses(&src.raw, from.clone(), true, false),
                uses(&dst.raw, into.clone(), false, true),
            ],
            vec![
                src.raw.access(AccessKind::In, from.clone()),
                dst.raw.access(AccessKind::Out, into.clone()),
            ],
            Work::Host(Box::new(move |scope| {
                let dst_at = d.0 as usize + to * size_of::<T>();
                in_chunks::<T>(scope, 0..len, dst_at, move |r| {
                    let (s, d) = (s, d);
                    // SAFETY: both ranges are inside their buffers and do not overlap
                    // (checked); each task copies its own part; the command's accesses keep
                    // writers of the source and users of the destination away.
                    unsafe {
                        std::ptr::copy_nonoverlapping(
                            s.0.add(offset + r.start),
                            d.0.add(to + r.start),
                            r.end - r.start,
                        )
                    }
                })
            })),
        )
    }

    fn map_with<T: Element>(&self, buffer: &Buffer<T>, kind: AccessKind) -> Result<Hold, Error> {
        let q = self.queue;
        buffer.check_context(q.context().id)?;
        q.check_events(&self.wait)?;
        let len = buffer.len();
        let writes = kind != AccessKind::In;
        // Two commands: one in the queue's order (its byte, the wait list, the buffer), which
        // ends as soon as it may run; and one that holds the buffer alone until the guard
        // goes, after the first. Later commands of the queue wait for the first only; those
        // that conflict on the buffer wait for the guard.
        let mut order = Command::new(q.event("map".to_owned()), &self.wait, Work::Nothing);
        order.buffers = vec![uses(&buffer.raw, 0..len, true, writes)];
        let ordered = q.submit(vec![buffer.raw.access(kind, 0..len)], order, false);
        let slot = Arc::new(Mutex::new(None));
        let held = q.event("map".to_owned());
        let mut hold = Command::new(
            Arc::clone(&held),
            std::slice::from_ref(&ordered),
            Work::Hold {
                slot: Arc::clone(&slot),
                ends_when_held: true,
            },
        );
        hold.buffers = vec![uses(&buffer.raw, 0..len, true, false)];
        let mut accesses = vec![buffer.raw.access(kind, 0..len)];
        hold.event_accesses(&mut accesses);
        command::submit(q.context(), &accesses, hold);
        Event { state: held }.wait().map_err(Error::Failed)?;
        let handle = slot
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take()
            .ok_or_else(|| {
                Error::Failed(Failure::new(crate::error::FailureKind::Panicked {
                    command: "map".into(),
                    message: "the mapping's handle was not handed over".into(),
                }))
            })?;
        Ok(Hold {
            handle: Some(handle),
            context: Arc::clone(q.context()),
            buffer: Arc::clone(&buffer.raw),
        })
    }

    /// [`Queue::map`] after the wait list.
    pub fn map<T: Element>(&self, buffer: &Buffer<T>) -> Result<Mapped<T>, Error> {
        Ok(Mapped {
            hold: self.map_with(buffer, AccessKind::In)?,
            _type: std::marker::PhantomData,
        })
    }

    /// [`Queue::map_mut`] after the wait list.
    pub fn map_mut<T: Element>(&self, buffer: &Buffer<T>) -> Result<MappedMut<T>, Error> {
        Ok(MappedMut {
            hold: self.map_with(buffer, AccessKind::InOut)?,
            _type: std::marker::PhantomData,
        })
    }

    fn sync_point(&self, name: &str, barrier: bool) -> Result<Event, Error> {
        let q = self.queue;
        q.check_events(&self.wait)?;
        let wait = if self.wait.is_empty() {
            q.outstanding()
        } else {
            self.wait.clone()
        };
        let command = Command::new(q.event(name.to_owned()), &wait, Work::Nothing);
        Ok(q.submit(Vec::new(), command, barrier))
    }

    /// [`Queue::marker`]; with a wait list, an event that ends when those events ended (failing
    /// if one of them failed).
    pub fn marker(&self) -> Result<Event, Error> {
        self.sync_point("marker", false)
    }

    /// [`Queue::barrier`]; with a wait list, its event ends when those events ended (failing if
    /// one of them failed), and later commands of the queue wait for it, which waits for every
    /// earlier command of the queue.
    pub fn barrier(&self) -> Result<Event, Error> {
        self.sync_point("barrier", true)
    }

    /// [`Queue::launch`] after the wait list.
    pub fn launch(&self, kernel: &Kernel, range: NdRange) -> LaunchBuilder<'q> {
        LaunchBuilder {
            queue: self.queue,
            kernel: kernel.clone(),
            range,
            args: Vec::new(),
            wait: self.wait.clone(),
            tasks: None,
            reference: false,
        }
    }
}

/// Runs `f` on parts of `range` (about a mebibyte each) as tasks of `scope`, each placed by
/// the part of the destination it writes: `dst` is the address of the destination's element 0
/// (each part's footprint is its elements there).
fn in_chunks<T>(
    scope: &Scope<'static>,
    range: Range<usize>,
    dst: usize,
    f: impl Fn(Range<usize>) + Send + Sync + Clone + 'static,
) {
    let size = size_of::<T>().max(1);
    let per = (HOST_CHUNK_BYTES / size).max(1);
    if range.end - range.start <= per {
        f(range);
        return;
    }
    scope.taskgroup(|s| {
        let mut start = range.start;
        while start < range.end {
            let r = start..(start + per).min(range.end);
            start = r.end;
            let f = f.clone();
            let footprint = Footprint::new().bytes(dst + r.start * size, (r.end - r.start) * size);
            s.task().affinity(footprint).spawn(move |_| f(r));
        }
    });
}

/// A launch being set up ([`Queue::launch`]).
#[must_use = "a launch does nothing until it is enqueued"]
pub struct LaunchBuilder<'q> {
    queue: &'q Queue,
    kernel: Kernel,
    range: NdRange,
    args: Vec<Arg>,
    wait: Vec<Event>,
    tasks: Option<usize>,
    reference: bool,
}

impl LaunchBuilder<'_> {
    /// The next argument: `&buffer`, a scalar (`2.0f32`), [`Local`](crate::Local) memory, or an
    /// [`Arg`].
    pub fn arg(mut self, arg: impl Into<Arg>) -> Self {
        self.args.push(arg.into());
        self
    }

    /// The launch starts after `events` ended, and fails if one of them failed.
    pub fn wait_for<'e>(mut self, events: impl IntoIterator<Item = &'e Event>) -> Self {
        self.wait.extend(events.into_iter().cloned());
        self
    }

    /// Divides the groups into `n` tasks, at most one per group (default: up to
    /// [`TASKS_PER_WORKER`](crate::TASKS_PER_WORKER) per worker, fewer where that would leave
    /// fewer than 16 groups to a task, down to four per worker).
    pub fn tasks(mut self, n: usize) -> Self {
        self.tasks = Some(n);
        self
    }

    /// Runs the kernel's reference form instead: each work-item on a thread of its own, with
    /// a real barrier, one group after another. Slow and plainly right: what tests compare a
    /// `#[kernel]` kernel's compiled form against. An error at enqueue for a kernel made
    /// otherwise.
    pub fn reference(mut self) -> Self {
        self.reference = true;
        self
    }

    /// Checks the launch and enqueues it: an [`Error`] if the arguments or the range are wrong
    /// (nothing is enqueued then).
    pub fn enqueue(self) -> Result<Event, Error> {
        let q = self.queue;
        q.check_events(&self.wait)?;
        let (launch, accesses) = Launch::check(
            q.context(),
            q.runtime(),
            &self.kernel,
            &self.range,
            self.args,
            self.tasks,
            self.reference,
        )?;
        let buffers = launch.buffers();
        let name = format!("kernel '{}'", self.kernel.name());
        let mut command = Command::new(q.event(name), &self.wait, Work::Launch(Box::new(launch)));
        command.runtime = q.inner.runtime.clone();
        command.buffers = buffers;
        Ok(q.submit(accesses, command, false))
    }
}

/// A read in progress ([`Queue::read`]).
#[must_use = "a read's elements come with `wait`"]
pub struct Reading<T> {
    event: Event,
    slot: Arc<Mutex<Option<Vec<T>>>>,
}

impl<T> Reading<T> {
    /// Its event.
    pub fn event(&self) -> &Event {
        &self.event
    }

    /// Waits for the read and returns the elements.
    pub fn wait(self) -> Result<Vec<T>, Failure> {
        self.event.wait()?;
        Ok(self
            .slot
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take()
            .unwrap_or_default())
    }
}

impl<T> fmt::Debug for Reading<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Reading")
            .field("event", &self.event)
            .finish()
    }
}

impl fmt::Debug for LaunchBuilder<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LaunchBuilder")
            .field("kernel", &self.kernel)
            .field("range", &self.range)
            .field("args", &self.args)
            .field("wait", &self.wait)
            .field("tasks", &self.tasks)
            .finish()
    }
}

impl<T> fmt::Debug for Mapped<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Mapped")
            .field("buffer", &self.hold.buffer.describe())
            .finish()
    }
}

impl<T> fmt::Debug for MappedMut<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("MappedMut")
            .field("buffer", &self.hold.buffer.describe())
            .finish()
    }
}

/// What a mapping holds: the command's dependence handle, completed when the guard goes.
struct Hold {
    handle: Option<DepHandle<Command>>,
    context: Arc<ContextInner>,
    buffer: Arc<RawBuffer>,
}

impl Hold {
    /// The mapped elements as `T`s.
    ///
    /// # Safety
    ///
    /// The guard was made from a `Buffer<T>`.
    unsafe fn elements<T>(&self) -> (*mut T, usize) {
        (self.buffer.ptr.cast::<T>(), self.buffer.len)
    }
}

impl Drop for Hold {
    fn drop(&mut self) {
        if let Some(handle) = self.handle.take() {
            command::release_held(&self.context, handle);
        }
    }
}

/// A buffer mapped for reading ([`Queue::map`]): its elements, in place.
pub struct Mapped<T> {
    hold: Hold,
    _type: std::marker::PhantomData<fn() -> T>,
}

impl<T: Element> Deref for Mapped<T> {
    type Target = [T];
    fn deref(&self) -> &[T] {
        // SAFETY: the guard was made from a `Buffer<T>`, which holds `len` elements; the
        // mapping's `in` access keeps writers away until the guard goes.
        unsafe {
            let (ptr, len) = self.hold.elements::<T>();
            std::slice::from_raw_parts(ptr, len)
        }
    }
}

/// A buffer mapped for reading and writing ([`Queue::map_mut`]): its elements, in place.
pub struct MappedMut<T> {
    hold: Hold,
    _type: std::marker::PhantomData<fn() -> T>,
}

impl<T: Element> Deref for MappedMut<T> {
    type Target = [T];
    fn deref(&self) -> &[T] {
        // SAFETY: as for `Mapped`; the mapping's `inout` access keeps every other command away.
        unsafe {
            let (ptr, len) = self.hold.elements::<T>();
            std::slice::from_raw_parts(ptr, len)
        }
    }
}

impl<T: Element> DerefMut for MappedMut<T> {
    fn deref_mut(&mut self) -> &mut [T] {
        // SAFETY: the guard was made from a `Buffer<T>`; the mapping's `inout` access keeps
        // every other command away until the guard goes, and `&mut self` makes this the only
        // view.
        unsafe {
            let (ptr, len) = self.hold.elements::<T>();
            std::slice::from_raw_parts_mut(ptr, len)
        }
    }
}
