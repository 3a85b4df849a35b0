//! Trace files are written whatever the runtime's end: the process-wide runtime (never
//! dropped) writes its trace when the process exits, and a runtime that ran no task leaves a
//! valid, empty trace rather than the empty file created at start-up.

mod common;

use std::process::Command;

use common::TempPath;

/// Set in the child process that `the_global_runtime_writes_its_trace_at_exit` starts.
const CHILD: &str = "NUMATASK_TRACE_EXIT_CHILD";

fn temp(name: &str) -> TempPath {
    TempPath::json(name)
}

/// `n` empty tasks in a scope of `s`.
fn spawn_empty(s: &numatask_sched::Scope<'_>, n: usize) {
    for _ in 0..n {
        s.spawn(|_| std::hint::black_box(()));
    }
}

/// A runtime of one unpinned worker tracing to `path`.
fn one_traced_worker(path: &std::path::Path) -> numatask_sched::Runtime {
    numatask_sched::Runtime::builder()
        .num_threads(1)
        .proc_bind(false)
        .trace(path)
        .build()
        .expect("runtime starts")
}

/// Runs this binary's `test` alone in a child process with `CHILD=role`, traced to `trace`
/// by `NUMATASK_TRACE`, on 2 unpinned workers; returns the child's output.
fn run_child(test: &str, role: &str, trace: &std::path::Path) -> std::process::Output {
    Command::new(std::env::current_exe().expect("this test binary"))
        .args([test, "--exact", "--test-threads=1", "--nocapture"])
        .env(CHILD, role)
        .env("NUMATASK_TRACE", trace)
        .env("OMP_NUM_THREADS", "2")
        .env("OMP_PROC_BIND", "false")
        .output()
        .expect("the child runs")
}

#[test]
fn the_global_runtime_writes_its_trace_at_exit() {
    if std::env::var_os(CHILD).is_some_and(|v| v == "global") {
        // The child: tasks on the process-wide runtime, then a normal exit.
        numatask_sched::scope(|s| spawn_empty(s, 5));
        return;
    }
    let path = temp("global-trace");
    let out = run_child(
        "the_global_runtime_writes_its_trace_at_exit",
        "global",
        &path,
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "child failed: {stderr}");
    let json = std::fs::read_to_string(&path).expect("the trace file");
    assert!(
        json.contains("\"traceEvents\""),
        "a Chrome trace: {json:.200}"
    );
    // The five tasks and the scope body, one complete event each.
    assert_eq!(json.matches("\"ph\":\"X\"").count(), 6, "{json:.400}");
    assert!(stderr.contains("trace of 6 tasks written"), "{stderr}");
}

#[test]
fn a_runtime_that_ran_no_task_leaves_an_empty_trace() {
    let path = temp("empty-trace");
    let rt = one_traced_worker(&path);
    drop(rt);
    let json = std::fs::read_to_string(&path).expect("the trace file");
    assert!(
        json.contains("\"traceEvents\""),
        "a Chrome trace: {json:.200}"
    );
    assert_eq!(json.matches("\"ph\":\"X\"").count(), 0);
}

#[test]
fn a_trace_written_while_a_task_runs_marks_it_and_is_rewritten_when_it_ends() {
    let path = temp("running-trace");
    let rt = one_traced_worker(&path);
    rt.scope(|_| {
        // Written while the scope body runs: its slice is drawn up to now and marked.
        rt.finish_trace().expect("tracing").expect("written");
        std::thread::sleep(std::time::Duration::from_millis(20));
    });
    let read = |path: &std::path::Path| -> serde_json::Value {
        let json = std::fs::read_to_string(path).expect("the trace file");
        serde_json::from_str(&json).expect("valid JSON")
    };
    let slices = |trace: &serde_json::Value| -> Vec<serde_json::Value> {
        trace["traceEvents"]
            .as_array()
            .expect("events")
            .iter()
            .filter(|e| e["ph"] == "X")
            .cloned()
            .collect()
    };
    let during = slices(&read(&path));
    assert_eq!(during.len(), 1);
    assert_eq!(during[0]["args"]["unfinished"], true, "{}", during[0]);
    // The body ended since: dropping the runtime writes the file again, with its duration.
    drop(rt);
    let after = slices(&read(&path));
    assert_eq!(after.len(), 1);
    assert!(after[0]["args"].get("unfinished").is_none(), "{}", after[0]);
    let dur_us = after[0]["dur"].as_f64().expect("a duration");
    assert!(dur_us >= 20_000.0, "the body slept 20 ms: {}", after[0]);
}

/// Set in the child process that `a_runtime_kept_in_a_static_writes_its_trace_at_exit` starts.
const STATIC_CHILD: &str = "NUMATASK_TRACE_STATIC_CHILD";

#[test]
fn a_runtime_kept_in_a_static_writes_its_trace_at_exit() {
    use std::sync::OnceLock;
    static RT: OnceLock<numatask_sched::Runtime> = OnceLock::new();
    if let Some(path) = std::env::var_os(STATIC_CHILD) {
        // The child: a runtime of its own in a static (never dropped), then a normal exit.
        let rt = RT.get_or_init(|| {
            numatask_sched::Runtime::builder()
                .num_threads(2)
                .proc_bind(false)
                .trace(path)
                .build()
                .expect("runtime starts")
        });
        rt.scope(|s| spawn_empty(s, 3));
        return;
    }
    let path = temp("static-trace");
    let out = Command::new(std::env::current_exe().expect("this test binary"))
        .args([
            "a_runtime_kept_in_a_static_writes_its_trace_at_exit",
            "--exact",
            "--test-threads=1",
        ])
        .env(STATIC_CHILD, &path)
        .output()
        .expect("the child runs");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "child failed: {stderr}");
    let json = std::fs::read_to_string(&path).expect("the trace file");
    // The three tasks and the scope body.
    assert_eq!(json.matches("\"ph\":\"X\"").count(), 4, "{json:.400}");
    assert!(stderr.contains("trace of 4 tasks written"), "{stderr}");
}

#[test]
fn every_runtime_the_variable_traces_keeps_its_own_file() {
    if std::env::var_os(CHILD).is_some_and(|v| v == "several") {
        // The child: a runtime from the environment with 3 tasks, dropped; then 5 tasks on
        // the process-wide runtime, written at exit.
        let rt = numatask_sched::Runtime::new().expect("runtime starts");
        rt.scope(|s| spawn_empty(s, 3));
        drop(rt);
        numatask_sched::scope(|s| spawn_empty(s, 5));
        return;
    }
    let first = temp("several-traces");
    let second = TempPath::at(first.with_extension("2.json"));
    let out = run_child(
        "every_runtime_the_variable_traces_keeps_its_own_file",
        "several",
        &first,
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "child failed: {stderr}");
    for (path, events) in [(&first, 4), (&second, 6)] {
        let json = std::fs::read_to_string(path).expect("a trace file per runtime");
        // Each runtime's tasks and its scope body, one complete event each.
        assert_eq!(
            json.matches("\"ph\":\"X\"").count(),
            events,
            "{}: {json:.400}",
            path.display()
        );
    }
    assert!(
        stderr.contains(&format!(
            "holds the trace of an earlier runtime of this process; this runtime's trace goes to {}",
            second.display()
        )),
        "{stderr}"
    );
}

#[test]
fn a_runtime_that_could_not_create_its_trace_leaves_the_name_to_the_next() {
    if std::env::var_os(CHILD).is_some_and(|v| v == "retry") {
        let trace = std::path::PathBuf::from(std::env::var_os("NUMATASK_TRACE").expect("set"));
        let dir = trace.parent().expect("a directory");
        // The child: the directory is missing, so the first runtime fails; once it exists,
        // the next runtime is the first to trace and writes the name given.
        let err = numatask_sched::Runtime::new().expect_err("the directory is missing");
        assert!(
            err.to_string().contains(&trace.display().to_string()),
            "{err}"
        );
        std::fs::create_dir_all(dir).expect("the directory");
        let rt = numatask_sched::Runtime::new().expect("runtime starts");
        rt.scope(|s| spawn_empty(s, 2));
        return;
    }
    let dir = TempPath::named(&format!("trace-dir-{}", std::process::id()));
    let trace = dir.join("t.json");
    let _ = std::fs::remove_dir_all(&dir);
    let out = run_child(
        "a_runtime_that_could_not_create_its_trace_leaves_the_name_to_the_next",
        "retry",
        &trace,
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    let json = std::fs::read_to_string(&trace);
    let numbered = dir.join("t.2.json").exists();
    assert!(out.status.success(), "child failed: {stderr}");
    assert!(
        !numbered,
        "the second runtime was numbered as if the first had traced"
    );
    assert!(!stderr.contains("earlier runtime"), "{stderr}");
    // Two tasks and the scope body.
    assert_eq!(json.expect("the trace").matches("\"ph\":\"X\"").count(), 3);
}

#[test]
fn a_builder_runtime_says_once_which_variables_it_did_not_read() {
    if std::env::var_os(CHILD).is_some_and(|v| v == "builder") {
        // The child: two runtimes from the builder (defaults, no environment), then one
        // from the environment.
        for _ in 0..2 {
            let rt = numatask_sched::Runtime::builder()
                .num_threads(1)
                .build()
                .expect("runtime starts");
            rt.scope(|s| spawn_empty(s, 2));
        }
        let rt = numatask_sched::Runtime::new().expect("runtime starts");
        rt.scope(|s| spawn_empty(s, 2));
        return;
    }
    let path = temp("builder-trace");
    let out = run_child(
        "a_builder_runtime_says_once_which_variables_it_did_not_read",
        "builder",
        &path,
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "child failed: {stderr}");
    let warning = "numatask: OMP_NUM_THREADS, OMP_PROC_BIND and NUMATASK_TRACE are set but not \
                   read: this runtime was built with Runtime::builder()";
    assert_eq!(
        stderr.matches(warning).count(),
        1,
        "once per process: {stderr}"
    );
    // The runtime from the environment traced (its 2 tasks and its scope body); the
    // builder's runtimes did not.
    let json = std::fs::read_to_string(&path).expect("the environment runtime's trace");
    assert_eq!(json.matches("\"ph\":\"X\"").count(), 3, "{json:.400}");
}

#[test]
fn a_test_that_panics_still_removes_the_files_it_wrote() {
    // The guard every test here keeps its trace files in: a failing assertion unwinds
    // through it, and the file goes with it.
    let path = std::env::temp_dir().join(format!(
        "numatask-panicking-test-{}.json",
        std::process::id()
    ));
    let unwound = std::panic::catch_unwind(|| {
        let written = TempPath::at(path.clone());
        std::fs::write(&written, "{}").expect("the file");
        assert!(written.exists());
        panic!("a failing test");
    });
    assert!(unwound.is_err());
    assert!(!path.exists(), "{} is left", path.display());
}

/// How many times the child of `a_finished_trace_holds_every_task_and_the_drop_adds_nothing`
/// runs a scope of short tasks and finishes the trace.
const ROUNDS: usize = 400;
/// Tasks per round.
const TASKS: usize = 2;

#[test]
fn a_finished_trace_holds_every_task_and_the_drop_adds_nothing() {
    if std::env::var_os(CHILD).is_some_and(|v| v == "finish") {
        // The child: rounds of short tasks, each followed by `finish_trace`, which must
        // leave nothing for the drop to write.
        let rt = numatask_sched::RuntimeBuilder::from_env()
            .expect("valid environment")
            .build()
            .expect("runtime starts");
        let path = rt.settings().trace.clone().expect("traced");
        for round in 1..=ROUNDS {
            rt.scope(|s| spawn_empty(s, TASKS));
            let summary = rt.finish_trace().expect("tracing").expect("written");
            // Every task of every round so far, and each round's scope body.
            assert_eq!(summary.tasks as usize, round * (TASKS + 1));
            let (records, ended) = rt.tracer().expect("tracing").progress();
            assert_eq!(
                records, ended,
                "round {round}: a task's end was not recorded"
            );
            let json = std::fs::read_to_string(&path).expect("the trace file");
            assert!(
                !json.contains("\"unfinished\":true"),
                "round {round}: the trace file holds a task without its end"
            );
        }
        let before = std::fs::read(&path).expect("the trace file");
        drop(rt);
        let after = std::fs::read(&path).expect("the trace file");
        assert!(before == after, "the drop rewrote the finished trace");
        return;
    }
    let path = temp("finished-trace");
    // More workers than the machine has cores, so that a worker is often descheduled between
    // a task's completion and the record of its end: the window this test looks into.
    let out = Command::new(std::env::current_exe().expect("this test binary"))
        .args([
            "a_finished_trace_holds_every_task_and_the_drop_adds_nothing",
            "--exact",
            "--test-threads=1",
            "--nocapture",
        ])
        .env(CHILD, "finish")
        .env("NUMATASK_TRACE", &path)
        .env("OMP_NUM_THREADS", "16")
        .env("OMP_PROC_BIND", "false")
        .output()
        .expect("the child runs");
    let stderr = String::from_utf8_lossy(&out.stderr);
    let _ = std::fs::remove_file(&path);
    assert!(out.status.success(), "child failed: {stderr}");
    // One "written" line per `finish_trace`, none from the drop or the exit.
    assert_eq!(
        stderr.matches("numatask: trace of ").count(),
        ROUNDS,
        "{stderr:.2000}"
    );
}
