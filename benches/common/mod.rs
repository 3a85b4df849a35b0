//! What the harness-less benches share: argument checks and `--help`, the runtime from the
//! environment (one trace file per runtime), the `--only`/`--skip` row filter, and running a
//! C/OpenMP peer.

use std::cell::Cell;
use std::fmt::Display;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::str::FromStr;

use numatask::sched::{Runtime, RuntimeBuilder, SchedulerKind};

/// Ends the bench with status 2 after `bench: message` (bad arguments or environment).
pub fn fail(bench: &str, message: impl Display) -> ! {
    eprintln!("{bench} bench: {message}");
    std::process::exit(2)
}

/// The arguments every bench's parser ends its `match` with, after its own flags: `--bench`
/// (which `cargo bench` passes) is accepted, `-h`/`--help` prints `usage` to standard output
/// and ends the bench with status 0, and anything else ends it with status 2 after the error
/// and `usage` on standard error.
pub fn other_arg(bench: &str, arg: &str, usage: &str) {
    match arg {
        "--bench" => {}
        "-h" | "--help" => {
            print!("{usage}");
            std::process::exit(0)
        }
        other => {
            eprint!("{bench} bench: unknown argument {other}\n\n{usage}");
            std::process::exit(2)
        }
    }
}

/// `value` of `flag` if it lies in `lo..=hi`, else an error naming the flag and the range.
pub fn in_range(flag: &str, value: usize, lo: usize, hi: usize) -> Result<usize, String> {
    if (lo..=hi).contains(&value) {
        Ok(value)
    } else {
        Err(format!("{flag} {value}: expected {lo} to {hi}"))
    }
}

/// The thread counts of `--threads`, each from 1 to the runtime's limit.
pub fn check_threads(threads: &[usize]) -> Result<(), String> {
    let max = numatask::sched::config::MAX_NUM_THREADS;
    threads
        .iter()
        .try_for_each(|&t| in_range("--threads", t, 1, max).map(drop))
}

/// Every `--omp` program exists, checked before any row runs.
pub fn check_peers(bins: &[String]) -> Result<(), String> {
    bins.iter()
        .try_for_each(|bin| match std::fs::metadata(bin) {
            Ok(m) if m.is_file() => Ok(()),
            Ok(_) => Err(format!("--omp {bin}: not a file")),
            Err(e) => Err(format!("--omp {bin}: {e}")),
        })
}

/// A runtime from the environment's settings (`OMP_PROC_BIND`, `NUMATASK_TRACE`, ...; a bad
/// value ends the bench with its error) with `threads` workers and scheduler `kind`. When the
/// bench builds `several` runtimes and `NUMATASK_TRACE` names a trace file, this one writes
/// its own, tagged `<kind>-<threads>` ([`trace_path_for`]), not one overwriting another.
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

/// Starts `builder`'s runtime; an error ends the bench.
pub fn build(bench: &str, builder: RuntimeBuilder) -> Runtime {
    builder.build().unwrap_or_else(|e| fail(bench, e))
}

/// The rows `--only WORD` (names containing it) and `--skip W1,W2` (none of them) keep; after
/// the run, [`Filter::finish`] fails the bench if they kept no row at all (a typo).
pub struct Filter<'a> {
    pub only: Option<&'a str>,
    pub skip: &'a [String],
    matched: Cell<bool>,
}

impl<'a> Filter<'a> {
    pub fn new(only: Option<&'a str>, skip: &'a [String]) -> Self {
        Filter {
            only,
            skip,
            matched: Cell::new(false),
        }
    }

    /// Whether row `name` runs.
    pub fn wants(&self, name: &str) -> bool {
        let yes = self.only.is_none_or(|o| name.contains(o))
            && !self.skip.iter().any(|k| name.contains(k.as_str()));
        if yes {
            self.matched.set(true);
        }
        yes
    }

    /// Marks that a row outside the filter (a C peer) ran.
    pub fn ran_peer(&self) {
        self.matched.set(true);
    }

    pub fn finish(&self, bench: &str) {
        if !self.matched.get() {
            fail(
                bench,
                format!(
                    "no row is named like --only {}{}",
                    self.only.unwrap_or("(any)"),
                    if self.skip.is_empty() {
                        String::new()
                    } else {
                        format!(" without --skip {}", self.skip.join(","))
                    }
                ),
            );
        }
    }
}

/// `cargo bench` passes `--bench`; `cargo test --benches` (CI) does not: then the benches make
/// a quick smoke run.
pub fn smoke() -> bool {
    !std::env::args().any(|a| a == "--bench")
}

/// A comma-separated list, each item parsed; errors name the option.
pub fn parse_list<T: FromStr>(value: &str, option: &str) -> Result<Vec<T>, String>
where
    T::Err: std::fmt::Display,
{
    value
        .split(',')
        .map(|item| {
            item.trim()
                .parse::<T>()
                .map_err(|e| format!("{option}: {e}"))
        })
        .collect()
}

/// One thread count: every core of the machine.
pub fn all_cores() -> Vec<usize> {
    vec![std::thread::available_parallelism().map_or(1, |n| n.get())]
}

/// Runs the C/OpenMP program `bin` with `args` on `threads` threads (`OMP_PROC_BIND=true`,
/// `OMP_PLACES=cores` unless the environment sets places), prints its output line and, when `checksum` is given, asserts the
/// line's `checksum=` field equals it; returns the line. A failing peer ends the bench with
/// status 1.
// (The sparselu bench calls `run_omp_peer_env` alone.)
#[allow(dead_code)]
pub fn run_omp_peer(bin: &str, args: &[String], threads: usize, checksum: Option<&str>) -> String {
    run_omp_peer_env(bin, args, threads, checksum, &[])
}

/// [`run_omp_peer`] with more environment variables for the peer (`SPARSELU_LAYOUT`).
pub fn run_omp_peer_env(
    bin: &str,
    args: &[String],
    threads: usize,
    checksum: Option<&str>,
    env: &[(&str, &str)],
) -> String {
    let mut command = Command::new(bin);
    command
        .args(args)
        .env("OMP_NUM_THREADS", threads.to_string())
        .env("OMP_PROC_BIND", "true")
        // The variables that pick a peer's variant are the bench's to set, not the shell's.
        .env_remove("SPARSELU_LAYOUT")
        .env_remove("TASKLOOP_NUM_TASKS")
        .envs(env.iter().copied());
    // numatask's default places, one per core, unless the shell sets places for every row
    // (libgomp's default is one place per hardware thread, which on an SMT machine would pin
    // two peer threads to one core).
    if std::env::var_os("OMP_PLACES").is_none() {
        command.env("OMP_PLACES", "cores");
    }
    let out = command.output();
    match out {
        Ok(o) if o.status.success() => {
            let line = String::from_utf8_lossy(&o.stdout);
            print!("{line}");
            if let Some(expect) = checksum {
                let theirs = line
                    .split_whitespace()
                    .find_map(|w| w.strip_prefix("checksum="))
                    .unwrap_or("(none)");
                assert_eq!(
                    theirs, expect,
                    "{bin} with {threads} threads: its checksum differs from numatask's"
                );
            }
            line.into_owned()
        }
        Ok(o) => {
            eprintln!("{bin}: {} {}", o.status, String::from_utf8_lossy(&o.stderr));
            std::process::exit(1);
        }
        Err(e) => {
            eprintln!("{bin}: {e}");
            std::process::exit(1);
        }
    }
}
