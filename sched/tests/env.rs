//! The runtime reads the OpenMP environment. (Alone in its test binary: it sets variables of
//! the process.)

use numatask_sched::config::DisplayEnv;
use numatask_sched::{BuildError, Runtime, SchedulerKind};

fn set(var: &str, value: &str) {
    // SAFETY: this binary's only test runs on one thread and no other thread of the process
    // reads the environment meanwhile.
    unsafe { std::env::set_var(var, value) };
}

fn unset(var: &str) {
    // SAFETY: as in `set`.
    unsafe { std::env::remove_var(var) };
}

#[test]
fn runtime_reads_the_openmp_environment_and_rejects_bad_values() {
    set("OMP_NUM_THREADS", "3,2");
    set("OMP_PROC_BIND", "false");
    set("OMP_STACKSIZE", "4M");
    set("NUMATASK_SCHEDULER", "ws");
    set("OMP_DISPLAY_ENV", "verbose");
    set("OMP_DATA_DISTRIBUTION", " Coarse ");
    set("OMP_WAIT_POLICY", "Passive");
    set("OMP_PLACES", "Threads");
    set("OMP_MAX_TASK_PRIORITY", "4");
    let rt = Runtime::new().expect("a valid environment");
    let s = rt.settings();
    assert_eq!(s.num_threads, 3);
    assert_eq!(s.proc_bind, numatask_sched::config::ProcBind::False);
    assert_eq!(s.stack_size, 4 << 20);
    assert_eq!(s.scheduler, SchedulerKind::WorkStealing);
    assert_eq!(s.display_env, DisplayEnv::Verbose);
    assert_eq!(s.wait_policy, numatask_sched::config::WaitPolicy::Passive);
    assert_eq!(s.places, numatask_sched::config::Places::Threads);
    assert!(rt.pinning().iter().all(Option::is_none));
    let shown = rt.display_env();
    assert!(
        shown.starts_with("OPENMP DISPLAY ENVIRONMENT BEGIN\n"),
        "{shown}"
    );
    assert!(
        shown.ends_with("OPENMP DISPLAY ENVIRONMENT END\n"),
        "{shown}"
    );
    for line in [
        "  OMP_NUM_THREADS = '3'",
        "  OMP_PROC_BIND = 'FALSE'",
        "  OMP_STACKSIZE = '4M'",
        "  NUMATASK_SCHEDULER = 'ws'",
        "  numatask.worker.2 = 'place ",
        "  OMP_PLACES = '{",
        "  OMP_DATA_DISTRIBUTION = 'coarse'",
        "  OMP_WAIT_POLICY = 'PASSIVE'",
        "  OMP_MAX_TASK_PRIORITY = '4'",
    ] {
        assert!(shown.contains(line), "missing {line:?} in\n{shown}");
    }
    // Every line between BEGIN and END reads as `  NAME = 'VALUE'`, NAME without blanks, as
    // OpenMP runtimes print them (scripts parse them so).
    let lines: Vec<&str> = shown.lines().collect();
    for line in &lines[1..lines.len() - 1] {
        let (name, value) = line
            .strip_prefix("  ")
            .and_then(|l| l.split_once(" = "))
            .unwrap_or_else(|| panic!("not `  NAME = 'VALUE'`: {line:?}"));
        assert!(
            !name.is_empty() && !name.contains(char::is_whitespace),
            "a blank in the name of {line:?}"
        );
        assert!(
            value.len() >= 2 && value.starts_with('\'') && value.ends_with('\''),
            "{line:?}"
        );
    }
    drop(rt);
    unset("OMP_WAIT_POLICY");
    unset("OMP_PLACES");
    unset("OMP_MAX_TASK_PRIORITY");

    // A trace file the variable names that cannot be created: the error names the variable,
    // and the file without the blanks around the value.
    let bad = std::env::temp_dir()
        .join("numatask-no-such-dir")
        .join("t.json");
    set(
        "NUMATASK_TRACE",
        &format!(" {}\t", bad.to_str().expect("a UTF-8 temp dir")),
    );
    let err = Runtime::new().expect_err("the directory does not exist");
    assert!(
        matches!(err, BuildError::TraceFile { from_env: true, .. }),
        "{err:?}"
    );
    assert!(
        err.to_string().starts_with(&format!(
            "cannot create the trace file {} (NUMATASK_TRACE): ",
            bad.display()
        )),
        "{err}"
    );
    unset("NUMATASK_TRACE");

    // The locality-aware scheduler's settings: the vicinity and the even tolerance reach the
    // runtime and its display.
    set("NUMATASK_SCHEDULER", "locality");
    set("NUMATASK_VICINITY", "16");
    set("NUMATASK_EVEN_TOLERANCE", " 0 ");
    let rt = Runtime::new().expect("the locality-aware scheduler");
    assert_eq!(rt.settings().scheduler, SchedulerKind::Locality);
    assert_eq!(rt.settings().vicinity, Some(16));
    assert_eq!(rt.settings().even_tolerance, 0.0);
    let shown = rt.display_env();
    for line in [
        "  NUMATASK_SCHEDULER = 'locality'",
        "  NUMATASK_VICINITY = '16'",
        "  NUMATASK_EVEN_TOLERANCE = '0'",
    ] {
        assert!(shown.contains(line), "missing {line:?} in\n{shown}");
    }
    drop(rt);
    set("NUMATASK_EVEN_TOLERANCE", "0.25");
    assert_eq!(
        Runtime::new()
            .expect("a tolerance")
            .settings()
            .even_tolerance,
        0.25
    );
    unset("NUMATASK_EVEN_TOLERANCE");
    unset("NUMATASK_VICINITY");
    let rt = Runtime::new().expect("the default tolerance");
    assert_eq!(rt.settings().even_tolerance, 0.1);
    assert!(
        rt.display_env()
            .contains("  NUMATASK_EVEN_TOLERANCE = '0.1'")
    );
    drop(rt);
    set("NUMATASK_SCHEDULER", "ws");

    // OpenMP's other policies; of a list (one per nesting level), the first.
    set("OMP_PROC_BIND", "Spread,close");
    let rt = Runtime::new().expect("spread is a policy");
    assert_eq!(
        rt.settings().proc_bind,
        numatask_sched::config::ProcBind::Spread
    );
    assert!(rt.display_env().contains("  OMP_PROC_BIND = 'SPREAD'"));
    drop(rt);
    unset("OMP_PROC_BIND");

    // The thread limit caps what OMP_NUM_THREADS asks for, and the default of one worker
    // per core; a limit above the request changes nothing.
    set("OMP_THREAD_LIMIT", "2");
    let rt = Runtime::new().expect("a limit below the request");
    assert_eq!(rt.num_workers(), 2, "OMP_NUM_THREADS=3 under a limit of 2");
    assert_eq!(rt.settings().thread_limit, Some(2));
    assert!(rt.display_env().contains("  OMP_THREAD_LIMIT = '2'"));
    drop(rt);
    unset("OMP_NUM_THREADS");
    set("OMP_THREAD_LIMIT", "1");
    assert_eq!(Runtime::new().expect("a limit of one").num_workers(), 1);
    set("OMP_NUM_THREADS", "3");
    set("OMP_THREAD_LIMIT", "64");
    assert_eq!(Runtime::new().expect("a limit above").num_workers(), 3);
    // OMP_DISPLAY_ENV shows the limit in force: no more than the cap of 4096 workers.
    set("OMP_THREAD_LIMIT", "100000");
    assert!(
        Runtime::new()
            .expect("a limit above the cap")
            .display_env()
            .contains("  OMP_THREAD_LIMIT = '4096'")
    );
    unset("OMP_THREAD_LIMIT");
    assert!(
        Runtime::new()
            .expect("no limit")
            .display_env()
            .contains("  OMP_THREAD_LIMIT = '4096'")
    );

    for (var, value) in [
        ("OMP_NUM_THREADS", "0"),
        ("OMP_THREAD_LIMIT", "-1"),
        ("OMP_MAX_TASK_PRIORITY", "high"),
        ("OMP_PROC_BIND", "scatter"),
        ("OMP_STACKSIZE", "12Q"),
        ("NUMATASK_SCHEDULER", "fifo"),
        ("OMP_DISPLAY_ENV", "maybe"),
        ("OMP_DATA_DISTRIBUTION", "bogus"),
        ("OMP_WAIT_POLICY", "spin"),
        ("OMP_PLACES", "chiplets"),
        ("NUMATASK_VICINITY", "9"),
        ("NUMATASK_EVEN_TOLERANCE", "nan"),
        ("NUMATASK_EVEN_TOLERANCE", "-0.5"),
    ] {
        set(var, value);
        match Runtime::new() {
            Err(BuildError::InvalidEnv {
                var: named,
                value: v,
                expected,
            }) => {
                assert_eq!((named, v.as_str()), (var, value));
                assert!(!expected.is_empty());
            }
            other => panic!("{var}={value}: expected an InvalidEnv error, got {other:?}"),
        }
        unset(var);
    }

    // Places that parse but that the machine lacks: the error names the variable.
    set("OMP_PLACES", "{4000}");
    let err = Runtime::new().expect_err("no machine here has processor 4000");
    assert!(
        err.to_string()
            .starts_with("OMP_PLACES='{4000}': processor 4000 does not exist"),
        "{err}"
    );
    unset("OMP_PLACES");

    #[cfg(unix)]
    {
        use std::os::unix::ffi::OsStrExt;
        // SAFETY: as in `set`.
        unsafe {
            std::env::set_var(
                "OMP_NUM_THREADS",
                std::ffi::OsStr::from_bytes(&[0x34, 0xff]),
            )
        };
        let err = Runtime::new().expect_err("not UTF-8");
        assert!(err.to_string().starts_with("OMP_NUM_THREADS='4"), "{err}");
        unset("OMP_NUM_THREADS");
        // The allocator's variable too: not silently taken as unset.
        // SAFETY: as in `set`.
        unsafe {
            std::env::set_var(
                "OMP_DATA_DISTRIBUTION",
                std::ffi::OsStr::from_bytes(b"fine\xff"),
            )
        };
        let err = Runtime::new().expect_err("not UTF-8");
        assert!(
            err.to_string().starts_with("OMP_DATA_DISTRIBUTION='fine"),
            "{err}"
        );
        unset("OMP_DATA_DISTRIBUTION");
    }
}
