//! User events: events the program ends, to hold commands back until something outside the
//! context happened (OpenCL's `clCreateUserEvent`).

use std::fmt;
use std::sync::{Arc, Mutex};

use numatask_sched::depend::DepHandle;

use crate::command::{self, Command, Work};
use crate::context::{Context, ContextInner, virtual_address};
use crate::error::{Failure, FailureKind};
use crate::event::{Event, EventState};

/// An event that the program completes ([`complete`](Self::complete)) or fails
/// ([`fail`](Self::fail)); commands given its [`event`](Self::event) in their wait lists start
/// only then. Dropping it without either fails it, so that nothing waits forever.
pub struct UserEvent {
    event: Event,
    context: Arc<ContextInner>,
    slot: Arc<Mutex<Option<DepHandle<Command>>>>,
}

impl UserEvent {
    pub(crate) fn new(context: &Context) -> UserEvent {
        let c = &context.inner;
        let state = EventState::new(
            c.id,
            c.epoch,
            c.wait_spin,
            virtual_address(),
            "user event".to_owned(),
        );
        let slot = Arc::new(Mutex::new(None));
        let command = Command::new(
            Arc::clone(&state),
            &[],
            Work::Hold {
                slot: Arc::clone(&slot),
                ends_when_held: false,
            },
        );
        let mut accesses = Vec::new();
        command.event_accesses(&mut accesses);
        // Nothing comes before a fresh event's byte: the command is released at once and its
        // handle stored in `slot`.
        command::submit(c, &accesses, command);
        UserEvent {
            event: Event { state },
            context: Arc::clone(c),
            slot,
        }
    }

    /// The event, for wait lists.
    pub fn event(&self) -> &Event {
        &self.event
    }

    /// Completes it: the commands waiting for it may start.
    pub fn complete(self) {
        self.end(Ok(()));
    }

    /// Fails it with `message`: the commands waiting for it fail.
    pub fn fail(self, message: impl Into<String>) {
        self.end(Err(Failure::new(FailureKind::User(message.into()))));
    }

    fn end(&self, result: Result<(), Failure>) {
        let handle = self.slot.lock().unwrap_or_else(|e| e.into_inner()).take();
        if let Some(handle) = handle {
            self.event.state.end(result);
            command::release_held(&self.context, handle);
        }
    }
}

impl Drop for UserEvent {
    fn drop(&mut self) {
        self.end(Err(Failure::new(FailureKind::UserEventDropped)));
    }
}

impl fmt::Debug for UserEvent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("UserEvent")
            .field("event", &self.event)
            .finish()
    }
}
