//! Helpers of the kernel executor's tests.
#![allow(dead_code)]

use std::sync::Arc;
use std::sync::mpsc;
use std::time::Duration;

use numatask_kernels::Context;
use numatask_sched::{Runtime, SchedulerKind};

/// Runs `f` on a thread and fails the test if it does not finish within `secs` seconds (a
/// hang fails instead of blocking the test run).
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
        Err(mpsc::RecvTimeoutError::Timeout) => panic!("did not finish within {secs} s: a hang"),
    }
}

/// A context on a fresh runtime of `workers` unpinned workers under `kind`.
pub fn context(workers: usize, kind: SchedulerKind) -> Context {
    let rt = Runtime::builder()
        .num_threads(workers)
        .proc_bind(false)
        .scheduler(kind)
        .build()
        .expect("runtime starts");
    Context::new(Arc::new(rt)).expect("context")
}

/// Silences the panic messages of kernels that panic on purpose (the default hook prints
/// them), keeping the others.
pub fn quiet_panics() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        let default = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            let msg = info
                .payload()
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| info.payload().downcast_ref::<String>().cloned())
                .unwrap_or_default();
            if !msg.ends_with("on purpose") {
                default(info);
            }
        }));
    });
}
