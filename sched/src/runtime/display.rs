//! `OMP_DISPLAY_ENV`: the settings of a runtime as OpenMP runtimes print them.

use std::fmt::{self, Write as _};

use numatask_alloc::Pinning;

use super::Runtime;
use crate::config::{
    DISPLAY_ENV_ENV, DisplayEnv, EVEN_TOLERANCE_ENV, MAX_TASK_PRIORITY_ENV, NUM_THREADS_ENV,
    PLACES_ENV, PROC_BIND_ENV, ProcBind, SCHEDULER_ENV, STACKSIZE_ENV, THREAD_LIMIT_ENV,
    VICINITY_ENV, WAIT_POLICY_ENV, format_size, write_place_list,
};
use crate::trace::TRACE_ENV;

impl Runtime {
    /// The settings as OpenMP runtimes print them for `OMP_DISPLAY_ENV`, between
    /// `OPENMP DISPLAY ENVIRONMENT BEGIN` and `END` lines (with `verbose`, one more line per
    /// worker).
    pub fn display_env(&self) -> String {
        let s = self.settings();
        let topo = self.topology();
        let mut out = String::from("OPENMP DISPLAY ENVIRONMENT BEGIN\n");
        let mut line = |name: &str, value: &dyn fmt::Display| {
            let _ = writeln!(out, "  {name} = '{value}'");
        };
        line(NUM_THREADS_ENV, &s.num_threads);
        // The limit in force: a larger `OMP_THREAD_LIMIT` limits no more than the cap.
        line(
            THREAD_LIMIT_ENV,
            &s.thread_limit
                .unwrap_or(usize::MAX)
                .min(crate::config::MAX_NUM_THREADS),
        );
        line(PROC_BIND_ENV, &s.proc_bind);
        let mut places = String::new();
        let _ = write_place_list(&mut places, &self.registry.place_list);
        line(PLACES_ENV, &places);
        line(STACKSIZE_ENV, &format_size(s.stack_size));
        line(MAX_TASK_PRIORITY_ENV, &s.max_task_priority);
        line(WAIT_POLICY_ENV, &s.wait_policy);
        line(DISPLAY_ENV_ENV, &s.display_env);
        line(SCHEDULER_ENV, &s.scheduler);
        match s.vicinity {
            Some(d) => line(VICINITY_ENV, &d),
            None => line(VICINITY_ENV, &"all"),
        }
        line(EVEN_TOLERANCE_ENV, &s.even_tolerance);
        if let Some(path) = &s.trace {
            line(TRACE_ENV, &path.display());
        } else if s.trace_summary {
            line(
                TRACE_ENV,
                &"none (tasks traced in memory for the locality summary)",
            );
        }
        match numatask_alloc::Distribution::from_env() {
            Ok(d) => line(numatask_alloc::DISTRIBUTION_ENV, &d),
            // Without the error's own quotes, so that the line still reads `NAME = 'VALUE'`.
            Err(numatask_alloc::AllocError::InvalidEnv {
                value, expected, ..
            }) => line(
                numatask_alloc::DISTRIBUTION_ENV,
                &format_args!(
                    "invalid: {} (expected {expected}; omp_malloc refuses it)",
                    value.escape_debug()
                ),
            ),
            Err(e) => line(
                numatask_alloc::DISTRIBUTION_ENV,
                &format_args!("invalid: {}", e.to_string().replace('\'', "")),
            ),
        }
        line("NUMATASK_TOPOLOGY", topo.source());
        // What follows is derived, not set: named in lower case with dots (`numatask.topology`)
        // so that no line looks like a variable one could set, and without blanks, so that a
        // parser of `NAME = 'VALUE'` lines reads them too.
        for (name, value) in self.registry.scheduler.display_lines() {
            line(name, &value);
        }
        line(
            "numatask.topology",
            &format_args!(
                "{} node(s), {} core(s){}, {} per node{}",
                topo.num_nodes(),
                topo.num_cores(),
                match topo.usable_cores().len() {
                    n if n < topo.num_cores() => format!(" ({n} in the process's CPU binding)"),
                    _ => String::new(),
                },
                topo.cores_per_node(),
                if topo.is_synthetic() {
                    let workers = self.registry.places.len();
                    let processors = std::thread::available_parallelism().map_or(1, |n| n.get());
                    if self.settings().proc_bind == ProcBind::False {
                        format!(
                            " (synthetic: its {workers} worker(s) unpinned on the machine's \
                             {processors} processor(s))"
                        )
                    } else {
                        format!(
                            " (synthetic: its {workers} worker(s) pinned round-robin onto the \
                             machine's cores, {processors} processor(s) here)"
                        )
                    }
                } else {
                    String::new()
                }
            ),
        );
        line(
            "numatask.distances",
            &format_args!("{} {:?}", topo.distance_source(), topo.distance_matrix()),
        );
        if s.display_env == DisplayEnv::Verbose {
            for (place, pinning) in self.workers().iter().zip(&self.pinning) {
                let pinned = match pinning {
                    None => "not pinned".to_owned(),
                    Some(Ok(Pinning::Exact { .. } | Pinning::Place { .. })) => "pinned".to_owned(),
                    Some(Ok(Pinning::Mapped { real_core, .. })) => {
                        format!("pinned to real core {real_core}")
                    }
                    Some(Err(e)) => format!("not pinned: {e}"),
                };
                let mut where_ = String::new();
                let place_index = self.registry.worker_places[place.index];
                let _ = write_place_list(
                    &mut where_,
                    std::slice::from_ref(&self.registry.place_list[place_index]),
                );
                line(
                    &format!("numatask.worker.{}", place.index),
                    &format_args!(
                        "place {place_index} {where_}, core {}, node {}, {pinned}",
                        place.core, place.node
                    ),
                );
            }
        }
        out.push_str("OPENMP DISPLAY ENVIRONMENT END\n");
        out
    }
}
