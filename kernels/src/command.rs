//! Commands: what a queue hands the context's dependence tracker, and what happens when the
//! tracker releases one (it runs on the runtime, or ends at once), fails (it and what
//! depends on it), and ends (its event, then the commands it releases).
//!
//! Every command declares accesses: its buffers' bytes in its arguments' modes, the byte of
//! each event of its wait list (read), its own event's byte (written), and its queue's byte
//! (updated by every command of an in-order queue; read by those of an out-of-order queue and
//! updated by its barriers). The tracker releases a command when every earlier command with a
//! conflicting access ended; the command then checks whether one it depends on failed (an event
//! of its wait list, or poisoned elements it reads) and fails without running if so.
//!
//! No path may leave a released command's handle uncompleted (its successors would wait
//! forever): user code that runs here (a kernel, host work, the destructors of their closures)
//! runs under `catch_unwind`, and a command's event is decided before its handle releases the
//! commands that check it.

use std::ops::Range;
use std::panic::{self, AssertUnwindSafe};
use std::sync::{Arc, Mutex};

use numatask_sched::depend::{Access, AccessKind, DepHandle, Released, Submitted};
use numatask_sched::{Runtime, Scope};

use crate::buffer::RawBuffer;
use crate::context::ContextInner;
use crate::error::{Failure, FailureKind};
use crate::event::{Event, EventState};
use crate::launch::Launch;

/// How a command uses a range of a buffer.
pub(crate) struct BufferUse {
    pub(crate) buffer: Arc<RawBuffer>,
    /// Elements.
    pub(crate) range: Range<usize>,
    /// It reads them: poisoned elements fail it.
    pub(crate) reads: bool,
    /// It writes them: its failure poisons them; its success, if it does not read them (it
    /// overwrites them), heals them.
    pub(crate) writes: bool,
}

/// A command in the tracker.
pub(crate) struct Command {
    pub(crate) event: Arc<EventState>,
    /// Events whose failure fails this command.
    pub(crate) wait: Vec<Event>,
    pub(crate) buffers: Vec<BufferUse>,
    /// The runtime it runs on, when not the context's (a sub-device's queue).
    pub(crate) runtime: Option<Arc<Runtime>>,
    pub(crate) work: Work,
}

/// What a command does once released.
pub(crate) enum Work {
    /// Runs a kernel's groups as tasks.
    Launch(Box<Launch>),
    /// Runs host code on a worker (a copy, a fill, a read into a vector), which may spawn
    /// tasks in the scope it is given.
    Host(Box<dyn FnOnce(&Scope<'static>) + Send>),
    /// Hands its dependence handle to a mapping or a user event, which complete it later; a
    /// mapping's event ends when the handle is handed over (the buffer is ready), a user
    /// event's when the program completes it.
    Hold {
        slot: Arc<Mutex<Option<DepHandle<Command>>>>,
        ends_when_held: bool,
    },
    /// Nothing: a marker or a barrier.
    Nothing,
}

impl Command {
    /// A command that depends on `wait`, whose buffer uses and other accesses come from its
    /// queue.
    pub(crate) fn new(event: Arc<EventState>, wait: &[Event], work: Work) -> Self {
        Command {
            event,
            wait: wait.to_vec(),
            buffers: Vec::new(),
            runtime: None,
            work,
        }
    }

    /// The accesses of its own event and wait list (its queue's and buffers' are added by the
    /// caller).
    pub(crate) fn event_accesses(&self, out: &mut Vec<Access>) {
        out.push(Access::new(self.event.address, 1, AccessKind::Out));
        for e in &self.wait {
            out.push(Access::new(e.state.address, 1, AccessKind::In));
        }
    }

    /// Why it must not run: a failed event of its wait list, or poisoned elements it reads.
    fn inherited_failure(&self) -> Option<Failure> {
        for e in &self.wait {
            if let Some(Err(cause)) = e.state.outcome() {
                return Some(Failure::new(FailureKind::Dependency {
                    command: e.state.command.clone(),
                    cause,
                }));
            }
        }
        self.buffers
            .iter()
            .filter(|u| u.reads)
            .find_map(|u| u.buffer.poisoned_in(&u.range))
    }
}

fn cancelled(command: &Command) -> Failure {
    Failure::new(FailureKind::Panicked {
        command: command.event.command.clone(),
        message: "cancelled by the dependence tracker".into(),
    })
}

/// Submits `command` with `accesses` to the context's tracker, and starts it if it may run.
pub(crate) fn submit(context: &Arc<ContextInner>, accesses: &[Access], command: Command) {
    match context.tracker.submit(accesses, command) {
        Submitted::Ready(ready) => drive(context, vec![(ready.payload, ready.handle)]),
        Submitted::Deferred => {}
        Submitted::Cancelled(command, released) => {
            // The executor never completes a handle as panicked, so the tracker cancels
            // nothing; were it to, the command fails rather than hangs.
            let failure = cancelled(&command);
            command.event.end(Err(failure));
            drive(context, collect(released));
        }
    }
}

fn collect(released: Vec<Released<Command>>) -> Vec<(Command, DepHandle<Command>)> {
    let mut out = Vec::new();
    for r in released {
        push_released(&mut out, r);
    }
    out
}

fn push_released(out: &mut Vec<(Command, DepHandle<Command>)>, r: Released<Command>) {
    match r {
        Released::Ready(ready) => out.push((ready.payload, ready.handle)),
        Released::Cancelled(command) => {
            let failure = cancelled(&command);
            command.event.end(Err(failure));
        }
    }
}

/// Starts each released command; those that end at once (markers, failures) release more,
/// which are started in turn: a loop, not a recursion, so that a long chain of markers does
/// not grow the stack.
pub(crate) fn drive(context: &Arc<ContextInner>, mut ready: Vec<(Command, DepHandle<Command>)>) {
    while let Some((command, handle)) = ready.pop() {
        if let Some(failure) = command.inherited_failure() {
            command.event.submitted();
            end_into(command, handle, Err(failure), &mut ready);
            continue;
        }
        match command.work {
            Work::Nothing => {
                command.event.submitted();
                end_into(command, handle, Ok(()), &mut ready)
            }
            Work::Hold {
                ref slot,
                ends_when_held,
            } => {
                command.event.submitted();
                *slot.lock().unwrap_or_else(|e| e.into_inner()) = Some(handle);
                if ends_when_held {
                    command.event.started();
                    command.event.end(Ok(()));
                }
            }
            Work::Host(_) | Work::Launch(_) => start_on_runtime(context, command, handle),
        }
    }
}

/// Ends `command` with `result`: poisons or heals its buffers, decides its event, completes its
/// handle (whose releases are pushed to `ready`), then wakes the event's waiters.
fn end_into(
    mut command: Command,
    handle: DepHandle<Command>,
    result: Result<(), Failure>,
    ready: &mut Vec<(Command, DepHandle<Command>)>,
) {
    // The work's closures are the program's: their destructors may panic.
    let work = std::mem::replace(&mut command.work, Work::Nothing);
    let _ = panic::catch_unwind(AssertUnwindSafe(move || drop(work)));
    for u in &command.buffers {
        match &result {
            Err(failure) if u.writes => u.buffer.poison(
                u.range.clone(),
                Failure::new(FailureKind::Dependency {
                    command: command.event.command.clone(),
                    cause: failure.clone(),
                }),
            ),
            Ok(()) if u.writes && !u.reads => u.buffer.heal(&u.range),
            _ => {}
        }
    }
    let event = Arc::clone(&command.event);
    // Decided before the successors are released: they read it.
    event.decide(result);
    drop(command);
    handle.complete(|r| push_released(ready, r));
    event.wake();
}

/// Ends `command` and starts what that releases.
pub(crate) fn end(
    context: &Arc<ContextInner>,
    command: Command,
    handle: DepHandle<Command>,
    result: Result<(), Failure>,
) {
    let mut ready = Vec::new();
    end_into(command, handle, result, &mut ready);
    drive(context, ready);
}

/// Completes a held handle (a mapping's or a user event's) and starts what it releases.
pub(crate) fn release_held(context: &Arc<ContextInner>, handle: DepHandle<Command>) {
    let mut ready = Vec::new();
    handle.complete(|r| push_released(&mut ready, r));
    drive(context, ready);
}

/// Runs a launch or host work as a detached job of the runtime.
fn start_on_runtime(context: &Arc<ContextInner>, mut command: Command, handle: DepHandle<Command>) {
    let work = std::mem::replace(&mut command.work, Work::Nothing);
    let ctx = Arc::clone(context);
    let runtime = command.runtime.clone();
    let rt: &Runtime = match &runtime {
        Some(rt) => rt,
        None => context.runtime(),
    };
    command.event.submitted();
    rt.spawn(move |scope| {
        command.event.started();
        let name = command.event.command.clone();
        // Everything of the program's, the work's destructors included, runs in here.
        let result = panic::catch_unwind(AssertUnwindSafe(|| match work {
            Work::Launch(launch) => launch.run(scope),
            Work::Host(f) => {
                f(scope);
                Ok(())
            }
            Work::Hold { .. } | Work::Nothing => Ok(()),
        }))
        .unwrap_or_else(|payload| {
            Err(Failure::new(FailureKind::Panicked {
                command: name,
                message: Failure::panic_message(&*payload),
            }))
        });
        end(&ctx, command, handle, result);
    });
}
