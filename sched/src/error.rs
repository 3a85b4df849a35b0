//! The scheduler's error types, one per moment a program meets them: [`BuildError`] when a
//! runtime starts (its configuration, the machine, the operating system), [`DependError`]
//! when a dependent task is declared (its regions of data). Every variant says what was wrong
//! and what is accepted.

use numatask_alloc::AllocError;
use numatask_alloc::sched_support::shown;

use crate::depend::AccessKind;
use thiserror::Error;

/// Everything that can go wrong when configuring or starting a runtime.
///
/// Nothing in this crate panics on a value that comes from the environment or from a
/// builder: such values are checked and reported through this type.
#[derive(Clone, Debug, Error, PartialEq, Eq)]
#[non_exhaustive]
pub enum BuildError {
    /// An environment variable holds a value numatask does not accept.
    #[error("{var}='{}': expected {expected}", shown(.value))]
    InvalidEnv {
        /// The variable.
        var: &'static str,
        /// Its value.
        value: String,
        /// What is accepted.
        expected: &'static str,
    },
    /// A builder setting that is out of range.
    #[error("invalid {setting} {value}: expected {expected}")]
    InvalidSetting {
        /// The setting (`num_threads`, `stack_size`, ...).
        setting: &'static str,
        /// The value given.
        value: String,
        /// What is accepted.
        expected: &'static str,
    },
    /// A scheduler name that is not known.
    #[error(
        "unknown scheduler '{}': expected ws (work stealing) or locality (locality-aware)",
        shown(.0)
    )]
    UnknownScheduler(String),
    /// The allocator or the topology refused: a topology that cannot be read, a node that
    /// does not exist, memory the machine cannot give (its message says which).
    #[error(transparent)]
    Alloc(#[from] AllocError),
    /// The trace file (`NUMATASK_TRACE`, [`RuntimeBuilder::trace`](crate::RuntimeBuilder::trace))
    /// cannot be created: reported when the runtime starts, not when the trace is written.
    #[error("cannot create the trace file {path}{}: {reason}", named_by(.from_env))]
    TraceFile {
        /// Whether the file was named by `NUMATASK_TRACE`.
        from_env: bool,
        /// The file.
        path: String,
        /// The OS error.
        reason: String,
    },
    /// The places (`OMP_PLACES`, [`RuntimeBuilder::places`](crate::RuntimeBuilder::places))
    /// name processors the topology lacks, or none the process may run on.
    #[error("{}='{}': {reason}", places_named_by(.from_env), shown(.places))]
    Places {
        /// Whether `OMP_PLACES` gave them (rather than the builder).
        from_env: bool,
        /// The places asked for, as `OMP_PLACES` writes them (cut short after 120
        /// characters).
        places: String,
        /// What is wrong with them.
        reason: String,
    },
    /// [`RuntimeBuilder::build_global`](crate::RuntimeBuilder::build_global) found the
    /// process-wide runtime made already (or its making from the environment failed).
    #[error(
        "the process-wide runtime was made already (by an earlier build_global, or from the \
         environment by the first Runtime::global, numatask::scope or numatask::join, which \
         may have failed): call build_global once, before any of these"
    )]
    GlobalExists,
    /// The operating system refused to start a worker thread.
    #[error(
        "could not start worker thread {worker} with a stack of {stack} (OMP_STACKSIZE or \
         stack_size): {reason}"
    )]
    SpawnWorker {
        /// Index of the worker.
        worker: usize,
        /// The stack size asked for, as `OMP_STACKSIZE` writes it.
        stack: String,
        /// The OS error.
        reason: String,
    },
}

/// Everything that can go wrong when declaring dependent tasks: cutting data into
/// [`Blocks`](crate::data::Blocks), asking a region of it, declaring a task's accesses.
#[derive(Clone, Debug, Error, PartialEq, Eq)]
#[non_exhaustive]
pub enum DependError {
    /// Data cut into blocks of a length, or of an element type, that makes no blocks
    /// ([`Blocks::new`](crate::data::Blocks::new), [`Blocks::shared`](crate::data::Blocks::shared)).
    #[error("invalid {setting} {value}: expected {expected}")]
    InvalidSetting {
        /// The setting (`block length`, `block element size`).
        setting: &'static str,
        /// The value given.
        value: String,
        /// What is accepted.
        expected: &'static str,
    },
    /// A region asked of data ([`Blocks::region`](crate::data::Blocks::region)) that is not
    /// within it.
    #[error(
        "region {start}..{end} is not within the data's {len} elements (expected start <= end <= {len})"
    )]
    InvalidRegion {
        /// The range's start.
        start: usize,
        /// The range's end.
        end: usize,
        /// The data's length, in elements.
        len: usize,
    },
    /// Two accesses declared for one task overlap, and one of them would give the task body
    /// `&mut` (see [`crate::data`]): one task cannot hold a mutable reference to bytes it also
    /// reads or writes through another.
    #[error(
        "regions {first} and {second} of one task overlap, declared as {} and {}: a task may \
         read overlapping regions, but a region it gets as &mut must not overlap its other \
         regions (declare the union once, of the kind the task needs); regions count from 0 in \
         declaration order, each region of an _each list by itself",
        .first_kind.describe(),
        .second_kind.describe()
    )]
    ConflictingAccesses {
        /// Position of the first region among the task's regions in declaration order (each
        /// region of an `_each` declaration counts by itself).
        first: usize,
        /// Its kind.
        first_kind: AccessKind,
        /// Position of the second region, counted as `first`.
        second: usize,
        /// Its kind.
        second_kind: AccessKind,
    },
    /// A region was declared for a task whose siblings are not the tasks the region's
    /// [`Blocks`](crate::data::Blocks) already orders (see [`crate::data`]).
    #[error(
        "region of data already bound to another task's children: dependences order only \
         sibling tasks, so a Blocks must be used with the children of one task (create one per \
         task that spawns dependent tasks)"
    )]
    ForeignRegion,
    /// A region of data borrowed shared ([`Blocks::shared`](crate::data::Blocks::shared)) was
    /// declared with an access whose body would get `&mut`.
    #[error(
        "region of read-only data (Blocks::shared) declared as {}: its tasks get shared \
         references only (reads, concurrent_updates); cut the data with Blocks::new(&mut ...) \
         to write it",
        .kind.describe()
    )]
    ReadOnlyRegion {
        /// The access declared.
        kind: AccessKind,
    },
}

/// Names `NUMATASK_TRACE` after a trace file's path when the variable gave it.
fn named_by(from_env: &bool) -> &'static str {
    if *from_env { " (NUMATASK_TRACE)" } else { "" }
}

/// How the places of an error were given.
fn places_named_by(from_env: &bool) -> &'static str {
    if *from_env {
        "OMP_PLACES"
    } else {
        "places (RuntimeBuilder::places)"
    }
}
