//! The scheduler's error type: every variant says what was wrong and what is accepted.

use numatask_alloc::AllocError;
use thiserror::Error;

/// Everything that can go wrong when configuring or starting a runtime.
///
/// Nothing in this crate panics on a value that comes from the environment or from a
/// builder: such values are checked and reported through this type.
#[derive(Clone, Debug, Error, PartialEq, Eq)]
#[non_exhaustive]
pub enum SchedError {
    /// An environment variable holds a value numatask does not accept.
    #[error("{var}='{value}': expected {expected}")]
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
    #[error("unknown scheduler '{0}': expected ws (work stealing) or locality (locality-aware)")]
    UnknownScheduler(String),
    /// The topology could not be read.
    #[error("topology: {0}")]
    Topology(#[from] AllocError),
    /// The operating system refused to start a worker thread.
    #[error("could not start worker thread {worker}: {reason}")]
    SpawnWorker {
        /// Index of the worker.
        worker: usize,
        /// The OS error.
        reason: String,
    },
}
