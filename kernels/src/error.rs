//! The two kinds of error: [`Error`], a command refused when it is enqueued (nothing was queued,
//! nothing changed), and [`Failure`], a command that was queued and did not complete (its kernel
//! panicked, or a command it depends on failed), which its [`Event`](crate::Event) reports.

use std::fmt;
use std::sync::Arc;

use numatask_alloc::AllocError;
// The runtime is not built under loom (see the crate's module list).
#[cfg(not(loom))]
use numatask_sched::BuildError;

/// A command refused when it was enqueued, or a context, buffer or queue that could not be
/// made. Nothing was queued: the buffers and queues involved are as before the call.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The NDRange has no dimension or more than three.
    #[error("an NDRange has 1 to 3 dimensions; this one has {0}")]
    Dimensions(usize),
    /// The local size has another number of dimensions than the global size.
    #[error("the local size has {local} dimension(s) and the global size {global}")]
    LocalDimensions {
        /// Dimensions of the global size.
        global: usize,
        /// Dimensions of the local size.
        local: usize,
    },
    /// The global offset has another number of dimensions than the global size.
    #[error("the global offset has {offset} dimension(s) and the global size {global}")]
    OffsetDimensions {
        /// Dimensions of the global size.
        global: usize,
        /// Dimensions of the offset.
        offset: usize,
    },
    /// A global or local size of zero.
    #[error("the {what} size is 0 in dimension {dim}")]
    ZeroSize {
        /// `"global"` or `"local"`.
        what: &'static str,
        /// The dimension (0, 1 or 2).
        dim: usize,
    },
    /// The number of work-items, or a global id (offset plus size), does not fit in `usize`.
    #[error("the NDRange overflows: {0}")]
    Overflow(String),
    /// More work-items in a group than the context allows.
    #[error("a local size of {items} work-items is over the maximum of {max} per work-group")]
    LocalTooLarge {
        /// Work-items per group asked for.
        items: usize,
        /// The context's maximum ([`Limits::max_work_group_size`](crate::Limits)).
        max: usize,
    },
    /// The kernel's local arguments need more than the context's local memory.
    #[error(
        "kernel '{kernel}' needs {bytes} bytes of local memory per work-group, over the limit of {max}"
    )]
    LocalMemory {
        /// The kernel.
        kernel: &'static str,
        /// Bytes its local arguments take, aligned.
        bytes: usize,
        /// The context's limit ([`Limits::local_mem_size`](crate::Limits)).
        max: usize,
    },
    /// Too few or too many arguments for the kernel.
    #[error("kernel '{kernel}' takes {expected} argument(s); {given} given")]
    ArgumentCount {
        /// The kernel.
        kernel: &'static str,
        /// Its parameters.
        expected: usize,
        /// Arguments given.
        given: usize,
    },
    /// An argument of another kind or element type than the kernel's parameter.
    #[error("argument {index} of kernel '{kernel}': expected {expected}, given {given}")]
    ArgumentType {
        /// The kernel.
        kernel: &'static str,
        /// The argument's position (from 0).
        index: usize,
        /// What the parameter is, e.g. `"a buffer of f32 (read)"`.
        expected: String,
        /// What was given, e.g. `"a scalar f64"`.
        given: String,
    },
    /// A buffer shorter than the launch needs: one element per work-item for an argument the
    /// work-items write.
    #[error(
        "argument {index} of kernel '{kernel}': the buffer has {len} elements, the launch needs {needed}"
    )]
    BufferTooShort {
        /// The kernel.
        kernel: &'static str,
        /// The argument's position.
        index: usize,
        /// Elements in the buffer.
        len: usize,
        /// Elements the launch needs.
        needed: usize,
    },
    /// One buffer given for two arguments of which one is written: the work-items would see
    /// it through two views at once.
    #[error(
        "kernel '{kernel}': arguments {first} and {second} are the same buffer and one of them is written; pass it once, as a read-write argument"
    )]
    BufferAliased {
        /// The kernel.
        kernel: &'static str,
        /// The first argument.
        first: usize,
        /// The second.
        second: usize,
    },
    /// A buffer, event or queue of another context.
    #[error("{0} belongs to another context")]
    OtherContext(String),
    /// A range of a buffer outside it, or host data of another length than the range.
    #[error("{0}")]
    Range(String),
    /// A buffer or local argument of zero elements.
    #[error("{0} of 0 elements")]
    Empty(&'static str),
    /// The allocator could not place the buffer.
    #[error("buffer allocation: {0}")]
    Alloc(#[from] AllocError),
    /// The runtime could not start.
    #[cfg(not(loom))]
    #[error("the runtime: {0}")]
    Runtime(#[from] BuildError),
    /// A setting given by the program or the environment is out of range.
    #[error("{0}")]
    Setting(String),
    /// A blocking command (a mapping, a read into a slice) was enqueued but did not complete.
    #[error("{0}")]
    Failed(#[from] Failure),
}

/// Why a command did not complete: what its [`Event`](crate::Event) reports, and what every
/// command that depends on it reports in turn. Cheap to clone (shared).
#[derive(Clone, PartialEq, Eq)]
pub struct Failure(Arc<FailureKind>);

/// What a [`Failure`] is.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum FailureKind {
    /// The kernel (or a host command's work) panicked, with this message.
    Panicked {
        /// The command: `"kernel 'saxpy'"`, `"fill"`, ...
        command: String,
        /// The panic's message, when it was a string.
        message: String,
    },
    /// A command this one waited for failed (through its wait list, a marker or barrier, or
    /// a buffer the failed command wrote).
    Dependency {
        /// The command that failed.
        command: String,
        /// Why the first failed command failed.
        cause: Failure,
    },
    /// A user event was failed by the program, with this message.
    User(String),
    /// A user event was dropped without being completed.
    UserEventDropped,
}

impl Failure {
    pub(crate) fn new(kind: FailureKind) -> Self {
        Failure(Arc::new(kind))
    }

    /// What happened.
    pub fn kind(&self) -> &FailureKind {
        &self.0
    }

    /// The failure that started the chain: for a [`FailureKind::Dependency`], its cause's
    /// root; otherwise this one.
    pub fn root(&self) -> &Failure {
        let mut f = self;
        while let FailureKind::Dependency { cause, .. } = f.kind() {
            f = cause;
        }
        f
    }

    /// The message of a panic payload.
    pub(crate) fn panic_message(payload: &(dyn std::any::Any + Send)) -> String {
        if let Some(s) = payload.downcast_ref::<&str>() {
            (*s).to_owned()
        } else if let Some(s) = payload.downcast_ref::<String>() {
            s.clone()
        } else {
            "a panic without a message".to_owned()
        }
    }
}

impl fmt::Display for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.kind() {
            FailureKind::Panicked { command, message } => {
                write!(f, "{command} panicked: {message}")
            }
            FailureKind::Dependency { command, cause } => {
                write!(f, "{command} failed, because {cause}")
            }
            FailureKind::User(message) => write!(f, "a user event failed: {message}"),
            FailureKind::UserEventDropped => {
                f.write_str("a user event was dropped without being completed")
            }
        }
    }
}

impl fmt::Debug for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("Failure").field(&self.0).finish()
    }
}

impl std::error::Error for Failure {}
