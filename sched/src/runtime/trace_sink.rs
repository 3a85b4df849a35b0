//! [`TraceSink`]: when a runtime's trace file is written and its locality summary printed
//! (by [`Runtime::finish_trace`](super::Runtime::finish_trace), when the runtime is dropped,
//! and at the process's exit for a runtime never dropped).

use std::io;
use std::sync::{Arc, Mutex, PoisonError, Weak};

use crate::trace::{TraceSummary, Tracer};

/// A runtime's trace and how much of it was written: the runtime writes it when dropped,
/// and the process's exit handler writes the traces of the runtimes never dropped (the
/// process-wide one, one kept in a `static`).
pub(super) struct TraceSink {
    tracer: Arc<Tracer>,
    /// The tracer's [`progress`](Tracer::progress) (records, and of them those ended) when
    /// the trace file was last written (`None`: not yet).
    written: Mutex<Option<(u64, u64)>>,
}

/// The traces of every runtime that traces, for the exit handler.
static TRACE_SINKS: Mutex<Vec<Weak<TraceSink>>> = Mutex::new(Vec::new());

impl TraceSink {
    /// A sink for `tracer`, known to the exit handler (registered with the C library on the
    /// first one).
    pub(super) fn register(tracer: Arc<Tracer>) -> Arc<TraceSink> {
        static AT_EXIT: std::sync::Once = std::sync::Once::new();
        let sink = Arc::new(TraceSink {
            tracer,
            written: Mutex::new(None),
        });
        let mut sinks = TRACE_SINKS.lock().unwrap_or_else(PoisonError::into_inner);
        sinks.retain(|s| s.strong_count() > 0);
        sinks.push(Arc::downgrade(&sink));
        AT_EXIT.call_once(|| {
            // SAFETY: `finish_traces_at_exit` is an `extern "C" fn()` that does not unwind;
            // registering it has no other precondition.
            unsafe { libc::atexit(finish_traces_at_exit) };
        });
        sink
    }

    /// The tracer whose records this sink writes.
    pub(super) fn tracer(&self) -> &Tracer {
        &self.tracer
    }

    /// Writes the trace file (if there is one) with every task traced so far, prints the
    /// locality summary to standard error and returns it.
    pub(super) fn finish(&self) -> io::Result<TraceSummary> {
        let mut written = self.written.lock().unwrap_or_else(PoisonError::into_inner);
        self.write(&mut written)
    }

    /// [`finish`](Self::finish) unless the file already holds every traced task as it is now,
    /// ends included (also when no task ran: the file created at start-up then gets an empty
    /// trace). The lock is held
    /// from the check to the write, so a drop racing the exit handler writes once. Errors are
    /// reported on standard error: the callers (`drop`, the exit handler) cannot return them.
    pub(super) fn finish_if_pending(&self) {
        let mut written = self.written.lock().unwrap_or_else(PoisonError::into_inner);
        if *written != Some(self.tracer.progress()) {
            let _ = self.write(&mut written);
        }
    }

    /// The write of [`finish`](Self::finish), under the `written` lock the caller holds.
    fn write(&self, written: &mut Option<(u64, u64)>) -> io::Result<TraceSummary> {
        let tracer = &self.tracer;
        // Read before the write: a task that ends meanwhile makes the next check rewrite.
        let progress = tracer.progress();
        let result = tracer.finish();
        match &result {
            Ok(summary) => {
                *written = Some(progress);
                if let Some(path) = tracer.path() {
                    eprintln!(
                        "numatask: trace of {} tasks written to {}",
                        summary.tasks,
                        path.display()
                    );
                }
                eprintln!("{summary}");
            }
            Err(e) => eprintln!(
                "numatask: could not write the trace to {}: {e}",
                tracer
                    .path()
                    .map_or("nowhere".into(), |p| p.display().to_string())
            ),
        }
        result
    }
}

/// Writes, at the process's exit, the traces of the runtimes still alive (never dropped),
/// unless already written with every task.
extern "C" fn finish_traces_at_exit() {
    // Nothing may unwind out of an exit handler.
    let _ = std::panic::catch_unwind(|| {
        let sinks: Vec<Arc<TraceSink>> = TRACE_SINKS
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .iter()
            .filter_map(Weak::upgrade)
            .collect();
        for sink in sinks {
            sink.finish_if_pending();
        }
    });
}
