//! The runtime of a bench row: the environment's settings (`OMP_PROC_BIND`, `NUMATASK_TRACE`,
//! ...) with the row's worker count and scheduler, one trace file per runtime.

use std::path::{Path, PathBuf};

use numatask::sched::{Runtime, RuntimeBuilder, SchedulerKind};

use crate::args::fail;

/// A runtime from the environment's settings (a bad value ends bench `bench` with its error)
/// with `threads` workers and scheduler `kind`. When the bench builds `several` runtimes and
/// `NUMATASK_TRACE` names a trace file, this one writes its own, tagged `<kind>-<threads>`
/// ([`trace_path_for`]), not one overwriting another.
pub fn runtime_builder(
    bench: &str,
    threads: usize,
    kind: SchedulerKind,
    several: bool,
) -> RuntimeBuilder {
    let builder = RuntimeBuilder::from_env()
        .unwrap_or_else(|e| fail(bench, e))
        .num_threads(threads)
        .scheduler(kind);
    match trace_path() {
        Some(path) if several => builder.trace(trace_path_for(&path, &format!("{kind}-{threads}"))),
        _ => builder,
    }
}

/// Starts `builder`'s runtime; an error ends bench `bench`.
pub fn build(bench: &str, builder: RuntimeBuilder) -> Runtime {
    builder.build().unwrap_or_else(|e| fail(bench, e))
}

/// The trace file `NUMATASK_TRACE` names, if set and not blank.
pub fn trace_path() -> Option<PathBuf> {
    std::env::var_os("NUMATASK_TRACE")
        .filter(|p| !p.to_string_lossy().trim().is_empty())
        .map(PathBuf::from)
}

/// `path` with `tag` before its extension (`t.json`, `ws-16`: `t-ws-16.json`), for benches that
/// build several traced runtimes.
pub fn trace_path_for(path: &Path, tag: &str) -> PathBuf {
    let stem = path
        .file_stem()
        .map_or_else(String::new, |s| s.to_string_lossy().into_owned());
    let name = match path.extension() {
        Some(ext) => format!("{stem}-{tag}.{}", ext.to_string_lossy()),
        None => format!("{stem}-{tag}"),
    };
    path.with_file_name(name)
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::trace_path_for;

    #[test]
    fn a_tagged_trace_path_keeps_the_extension_last() {
        assert_eq!(
            trace_path_for(Path::new("out/t.json"), "ws-16"),
            Path::new("out/t-ws-16.json")
        );
        assert_eq!(
            trace_path_for(Path::new("t"), "locality-2"),
            Path::new("t-locality-2")
        );
    }
}
