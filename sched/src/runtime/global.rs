//! The process-wide runtime ([`Runtime::global`]), made from the environment on first use or
//! by [`RuntimeBuilder::build_global`], and the entry points that use it outside every pool:
//! [`scope()`] and [`join()`], which panic if it cannot start (as rayon's do), and
//! [`try_scope`] and [`try_join`], which return the error instead.

use std::sync::OnceLock;

use super::{Runtime, RuntimeBuilder};
use crate::error::BuildError;
use crate::scope::{self, Scope};
use crate::worker::WorkerThread;

static GLOBAL: OnceLock<Result<Runtime, BuildError>> = OnceLock::new();

impl RuntimeBuilder {
    /// Starts the workers and makes this runtime the process-wide one, [`Runtime::global`],
    /// which [`scope()`] and [`join()`] use outside every pool (rayon's
    /// `ThreadPoolBuilder::build_global`). It must come first: once the process-wide runtime
    /// exists (an earlier `build_global`, or a first [`Runtime::global`], [`scope()`] or
    /// [`join()`] that created it from the environment), this is
    /// [`BuildError::GlobalExists`] and no worker is started.
    ///
    /// ```standalone_crate
    /// let rt = numatask_sched::Runtime::builder().num_threads(2).build_global()?;
    /// assert_eq!(rt.num_workers(), 2);
    /// let (a, b) = numatask_sched::join(|| numatask_sched::current_num_workers(), || 7);
    /// assert_eq!((a, b), (Some(2), 7));
    /// # Ok::<(), numatask_sched::BuildError>(())
    /// ```
    pub fn build_global(self) -> Result<&'static Runtime, BuildError> {
        if GLOBAL.get().is_some() {
            return Err(BuildError::GlobalExists);
        }
        let runtime = self.build()?;
        // Another thread may have made the global runtime meanwhile: then this one is
        // dropped here (its workers joined) and the call fails like the check above.
        GLOBAL
            .set(Ok(runtime))
            .map_err(|_| BuildError::GlobalExists)?;
        Runtime::try_global()
    }
}

impl Runtime {
    /// The process-wide runtime, created from the environment on first use (used by
    /// [`crate::scope()`] and [`crate::join()`]), unless
    /// [`RuntimeBuilder::build_global`] made it first. Every call returns the same runtime.
    ///
    /// It is never dropped; when it traces (`NUMATASK_TRACE`), its trace file is written and
    /// its summary printed when the process exits normally (returning from `main`, or
    /// `std::process::exit`), as for every runtime still alive then.
    ///
    /// # Panics
    ///
    /// If the runtime cannot start (a bad `OMP_NUM_THREADS`, for instance), with the
    /// [`BuildError`]'s message, which names the variable; [`try_global`](Self::try_global)
    /// returns the error instead.
    pub fn global() -> &'static Runtime {
        Self::try_global().unwrap_or_else(|e| global_failed(&e))
    }

    /// [`global`](Self::global), or the error that kept the process-wide runtime from
    /// starting (the same error on every call).
    pub fn try_global() -> Result<&'static Runtime, BuildError> {
        GLOBAL
            .get_or_init(Runtime::new)
            .as_ref()
            .map_err(Clone::clone)
    }
}

/// The panic of [`Runtime::global`], [`scope()`] and [`join()`] when the process-wide runtime
/// cannot start: a program that wants to handle it calls the `try_` forms.
#[cold]
#[track_caller]
fn global_failed(error: &BuildError) -> ! {
    panic!("numatask: the process-wide runtime cannot start: {error}")
}

/// Runs `f` in a scope of the current runtime: the runtime of the calling worker when called
/// from a task, otherwise the process-wide [`Runtime::global`].
///
/// # Panics
///
/// If the process-wide runtime is needed and cannot start, with the [`BuildError`]'s message
/// ([`try_scope`] returns it instead); and, as [`Runtime::scope`], with the panic of `f` or of
/// a task.
#[track_caller]
pub fn scope<'scope, F, R>(f: F) -> R
where
    F: FnOnce(&Scope<'scope>) -> R + Send,
    R: Send,
{
    try_scope(f).unwrap_or_else(|e| global_failed(&e))
}

/// [`scope()`], or the error that kept the process-wide runtime from starting.
pub fn try_scope<'scope, F, R>(f: F) -> Result<R, BuildError>
where
    F: FnOnce(&Scope<'scope>) -> R + Send,
    R: Send,
{
    match WorkerThread::current() {
        Some(worker) => Ok(scope::run_scope(worker, f)),
        None => Ok(Runtime::try_global()?.scope(f)),
    }
}

/// Runs `a` and `b`, in parallel when a worker is free, and returns both results (the shape of
/// `rayon::join`), in the current runtime: the calling worker's when called from a task,
/// otherwise the process-wide [`Runtime::global`]. `a` becomes a task that another worker may
/// take while `b` runs; both may borrow from the caller's stack. A panic of `b`, else of `a`,
/// is resumed here, after both finished.
///
/// Each call is a scope of its own ([`scope()`] around [`Scope::join`]): inside a task, where
/// the task's [`Scope`] is at hand, `s.join` saves that (15-20% of the time of a fib call
/// on 2 cores).
///
/// ```
/// fn fib(n: u64) -> u64 {
///     if n < 2 {
///         return n;
///     }
///     let (a, b) = numatask_sched::join(|| fib(n - 1), || fib(n - 2));
///     a + b
/// }
/// assert_eq!(fib(20), 6765);
/// ```
///
/// # Panics
///
/// If the process-wide runtime is needed and cannot start (a bad `OMP_NUM_THREADS`, for
/// instance), with the [`BuildError`]'s message; [`try_join`] returns it instead.
#[track_caller]
pub fn join<A, B, RA, RB>(a: A, b: B) -> (RA, RB)
where
    A: FnOnce() -> RA + Send,
    B: FnOnce() -> RB + Send,
    RA: Send,
    RB: Send,
{
    try_join(a, b).unwrap_or_else(|e| global_failed(&e))
}

/// [`join()`], or the error that kept the process-wide runtime from starting.
pub fn try_join<A, B, RA, RB>(a: A, b: B) -> Result<(RA, RB), BuildError>
where
    A: FnOnce() -> RA + Send,
    B: FnOnce() -> RB + Send,
    RA: Send,
    RB: Send,
{
    try_scope(|s| s.join(|_| a(), |_| b()))
}
