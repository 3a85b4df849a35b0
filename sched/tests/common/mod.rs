//! Helpers shared by the integration tests.
#![allow(dead_code)]

use std::ops::Deref;
use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::time::Duration;

use numatask_sched::{Runtime, Scope, WaitPolicy};

pub mod random_program;

/// A file or directory a test writes in the temporary directory, removed when the guard
/// drops: when the test ends, whether it passed or panicked. Declare it before the runtime
/// that writes it, so that it drops after (locals drop in reverse order): dropping a tracing
/// runtime writes its trace again.
#[derive(Debug)]
pub struct TempPath(PathBuf);

impl TempPath {
    /// `numatask-{name}-{pid}.json` in the temporary directory (a trace file).
    pub fn json(name: &str) -> Self {
        Self::named(&format!("{name}-{}.json", std::process::id()))
    }

    /// `numatask-{name}` in the temporary directory: `name` should tell the test and the
    /// process apart.
    pub fn named(name: &str) -> Self {
        TempPath(std::env::temp_dir().join(format!("numatask-{name}")))
    }

    /// `path` itself (a file the runtime names after one the test gave it).
    pub fn at(path: PathBuf) -> Self {
        TempPath(path)
    }

    /// The path the guard removes.
    pub fn path(&self) -> &Path {
        &self.0
    }
}

impl Deref for TempPath {
    type Target = Path;

    fn deref(&self) -> &Path {
        &self.0
    }
}

impl AsRef<Path> for TempPath {
    fn as_ref(&self) -> &Path {
        &self.0
    }
}

/// Also what makes `&TempPath` a `PathBuf` (`Runtime::builder().trace(&path)`) and an
/// environment value.
impl AsRef<std::ffi::OsStr> for TempPath {
    fn as_ref(&self) -> &std::ffi::OsStr {
        self.0.as_os_str()
    }
}

impl Drop for TempPath {
    fn drop(&mut self) {
        // A path never written (the test failed first) is fine; another error is reported,
        // not raised: a panic while the test unwinds would abort the harness.
        let removed = if self.0.is_dir() {
            std::fs::remove_dir_all(&self.0)
        } else {
            std::fs::remove_file(&self.0)
        };
        if let Err(e) = removed
            && e.kind() != std::io::ErrorKind::NotFound
        {
            eprintln!("could not remove {}: {e}", self.0.display());
        }
    }
}

/// Runs `f` on its own thread and fails the test, instead of hanging it, if `f` has not
/// returned after `secs` seconds (a deadlock). Panics of `f` are re-raised.
pub fn within<R: Send + 'static>(secs: u64, f: impl FnOnce() -> R + Send + 'static) -> R {
    let (tx, rx) = mpsc::channel();
    let handle = std::thread::spawn(move || {
        let r = f();
        let _ = tx.send(());
        r
    });
    match rx.recv_timeout(Duration::from_secs(secs)) {
        Ok(()) => handle.join().expect("joined after it reported"),
        Err(mpsc::RecvTimeoutError::Disconnected) => match handle.join() {
            Ok(_) => unreachable!("the thread reports before it returns"),
            Err(payload) => std::panic::resume_unwind(payload),
        },
        Err(mpsc::RecvTimeoutError::Timeout) => {
            panic!("did not finish within {secs} s: deadlock or lost wake-up")
        }
    }
}

/// A runtime with `n` workers, unpinned (tests share a small machine with other tests).
pub fn runtime(n: usize) -> Runtime {
    Runtime::builder()
        .num_threads(n)
        .proc_bind(false)
        .build()
        .expect("runtime starts")
}

/// [`runtime`] whose idle workers sleep at once (`OMP_WAIT_POLICY=passive`): the small
/// runtimes the `miri_*` tests run under Miri, where spinning costs minutes.
pub fn passive_runtime(n: usize) -> Runtime {
    Runtime::builder()
        .num_threads(n)
        .proc_bind(false)
        .wait_policy(WaitPolicy::Passive)
        .build()
        .expect("runtime starts")
}

/// The text of a panic payload (`&str` or `String`; empty otherwise).
pub fn message(payload: Box<dyn std::any::Any + Send>) -> String {
    payload
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_default()
}

/// [`runtime`] with worker stacks of `bytes`.
pub fn runtime_with_stack(n: usize, bytes: usize) -> Runtime {
    Runtime::builder()
        .num_threads(n)
        .proc_bind(false)
        .stack_size(bytes)
        .build()
        .expect("runtime starts")
}

/// fib with both recursive calls as tasks and a taskwait (the OpenMP shape).
pub fn fib(s: &Scope<'_>, n: u64) -> u64 {
    if n < 2 {
        return n;
    }
    let a = s.task().spawn_with_result(move |s| fib(s, n - 1));
    let b = s.task().spawn_with_result(move |s| fib(s, n - 2));
    s.taskwait();
    a.join() + b.join()
}

/// The n-th Fibonacci number, sequentially.
pub fn fib_seq(n: u64) -> u64 {
    (0..n).fold((0u64, 1u64), |(a, b), _| (b, a + b)).0
}

/// The CPUs the calling thread may run on.
pub fn affinity() -> std::collections::BTreeSet<usize> {
    // SAFETY: `cpu_set_t` is plain data, zeroed is an empty set; the call writes at most
    // `size_of::<cpu_set_t>()` bytes into it.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        let r = libc::sched_getaffinity(0, size_of::<libc::cpu_set_t>(), &mut set);
        assert_eq!(
            r,
            0,
            "sched_getaffinity: {}",
            std::io::Error::last_os_error()
        );
        (0..libc::CPU_SETSIZE as usize)
            .filter(|&cpu| libc::CPU_ISSET(cpu, &set))
            .collect()
    }
}

/// Each worker's CPU affinity, as its tasks read it.
pub fn worker_affinities(rt: &Runtime) -> Vec<Option<std::collections::BTreeSet<usize>>> {
    let mut seen = vec![None; rt.num_workers()];
    for _ in 0..200 {
        let found = rt.scope(|s| {
            let hs: Vec<_> = (0..4 * rt.num_workers())
                .map(|_| {
                    s.task().spawn_with_result(|s| {
                        // Long enough that every worker gets some.
                        std::thread::sleep(std::time::Duration::from_micros(200));
                        (s.worker_index(), affinity())
                    })
                })
                .collect();
            s.taskwait();
            hs.into_iter().map(|h| h.join()).collect::<Vec<_>>()
        });
        for (worker, cpus) in found {
            seen[worker] = Some(cpus);
        }
        if seen.iter().all(Option::is_some) {
            break;
        }
    }
    seen
}

/// The worker threads of every runtime of this process (threads named `numatask-*`), as
/// `/proc/self/task` lists them.
pub fn worker_threads() -> usize {
    std::fs::read_dir("/proc/self/task")
        .expect("procfs")
        .filter_map(|t| std::fs::read_to_string(t.ok()?.path().join("comm")).ok())
        .filter(|comm| comm.starts_with("numatask-"))
        .count()
}
