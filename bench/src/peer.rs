//! Running a C/OpenMP peer program (`c/NAME_omp.c`, built by `scripts/bench-*.sh` or
//! `scripts/device-bundle.sh`) on the same row as numatask's, and checking its result.

use std::process::Command;

/// Runs the C/OpenMP program `bin` with `args` on `threads` threads (`OMP_PROC_BIND=true`,
/// `OMP_PLACES=cores` unless the environment sets places) and `env`, prints its output line
/// (and its stderr) and, when `checksum` is given, asserts the line's `checksum=` field equals
/// it; returns the line. A failing peer ends the bench with status 1.
pub fn run_omp_peer(
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
    match command.output() {
        Ok(o) if o.status.success() => {
            let line = String::from_utf8_lossy(&o.stdout);
            print!("{line}");
            // What a peer reports besides its line (BENCH_TASK_STATS=1) goes on as it came.
            eprint!("{}", String::from_utf8_lossy(&o.stderr));
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

/// `x` as C's `printf("%.6e")` writes it: the form of the checksums the C peers print,
/// which [`run_omp_peer`] compares with the Rust driver's.
pub fn c_exponent(x: f64) -> String {
    let s = format!("{x:.6e}");
    match s.split_once('e') {
        Some((mantissa, exp)) => {
            let exp: i32 = exp.parse().expect("an exponent");
            let sign = if exp < 0 { '-' } else { '+' };
            format!("{mantissa}e{sign}{:02}", exp.abs())
        }
        None => s,
    }
}
