//! What the harness-less benches share: argument lists and running a C/OpenMP peer.

use std::process::Command;
use std::str::FromStr;

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

/// Runs the C/OpenMP program `bin` with `args` on `threads` threads (`OMP_PROC_BIND=true`),
/// prints its output line and, when `checksum` is given, asserts the line's `checksum=` field
/// equals it; returns the line. A failing peer ends the bench with status 1.
pub fn run_omp_peer(bin: &str, args: &[String], threads: usize, checksum: Option<&str>) -> String {
    let out = Command::new(bin)
        .args(args)
        .env("OMP_NUM_THREADS", threads.to_string())
        .env("OMP_PROC_BIND", "true")
        .output();
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
