//! [`Settings`]: what a running runtime was configured with, every value checked and
//! defaults filled in.

use std::path::PathBuf;

use crate::config::{DisplayEnv, Places, ProcBind, WaitPolicy};
use crate::scheduler::SchedulerKind;

/// The effective settings of a runtime.
#[derive(Clone, Debug, PartialEq)]
pub struct Settings {
    /// Number of workers.
    pub num_threads: usize,
    /// The largest task priority honoured (`OMP_MAX_TASK_PRIORITY`,
    /// [`RuntimeBuilder::max_task_priority`](crate::RuntimeBuilder::max_task_priority); 0, the default: priorities are ignored).
    pub max_task_priority: u32,
    /// The most workers the runtime could start (`OMP_THREAD_LIMIT`,
    /// [`RuntimeBuilder::thread_limit`](crate::RuntimeBuilder::thread_limit); `None`: no limit but
    /// [`MAX_NUM_THREADS`](crate::config::MAX_NUM_THREADS)).
    pub thread_limit: Option<usize>,
    /// How workers are pinned to places.
    pub proc_bind: ProcBind,
    /// The places asked for (`OMP_PLACES`); [`Runtime::place_list`](crate::Runtime::place_list) gives them resolved.
    pub places: Places,
    /// Stack size of each worker thread, in bytes.
    pub stack_size: usize,
    /// The scheduling policy.
    pub scheduler: SchedulerKind,
    /// Whether the settings were printed at start-up.
    pub display_env: DisplayEnv,
    /// Capacity of each worker's deque.
    pub deque_capacity: usize,
    /// The largest OS distance the locality-aware scheduler steals tasks across
    /// (`None`: any).
    pub vicinity: Option<u32>,
    /// The coefficient of variation up to which the locality-aware scheduler counts a
    /// footprint as even and keeps the task on its node (see [`SchedulerKind::Locality`](crate::SchedulerKind::Locality)).
    pub even_tolerance: f64,
    /// How idle workers wait for work.
    pub wait_policy: WaitPolicy,
    /// The trace file, when tasks are traced.
    pub trace: Option<PathBuf>,
    /// Whether tasks are traced in memory, for the locality summary only, when there is no
    /// trace file ([`RuntimeBuilder::trace_summary`](crate::RuntimeBuilder::trace_summary)).
    pub trace_summary: bool,
}
