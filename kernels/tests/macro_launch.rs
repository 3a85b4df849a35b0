//! `#[kernel]` kernels through the executor: what their launches check, how they fail, and
//! the debug-build check of `uniform(..)`. (The compiled form against the reference form, on
//! many kernels and sizes: `macro_suite.rs`; compile-time errors: the macro crate's tests.)

use std::sync::{Arc, OnceLock};

use numatask_kernels::{Context, Error, FailureKind, Local, NdRange, kernel};
use numatask_sched::Runtime;

fn ctx() -> &'static Context {
    static CTX: OnceLock<Context> = OnceLock::new();
    CTX.get_or_init(|| {
        let rt = Runtime::builder().num_threads(2).build().expect("runtime");
        Context::new(Arc::new(rt)).expect("context")
    })
}

#[kernel]
fn reduce(input: &[f32], out: &mut [f32], scratch: Local<f32>) {
    let lid = local_id(0);
    scratch[lid] = input[global_id(0)];
    barrier();
    let mut s = local_size(0) / 2;
    while s > 0 {
        if lid < s {
            scratch[lid] += scratch[lid + s];
        }
        barrier();
        s /= 2;
    }
    if lid == 0 {
        out[group_id(0)] = scratch[0];
    }
}

/// Writes each work-item's element through `global_id(0)`: one element per work-item only
/// in one dimension.
#[kernel]
fn by_global_id(y: &mut [u32]) {
    y[global_id(0)] = 1;
}

/// Needs `LEN` floats of local memory.
#[kernel]
fn big_local(y: &mut [f32]) {
    let t = local_array::<f32, { 1 << 20 }>();
    t[local_id(0)] = 1.0;
    barrier();
    y[global_linear_id()] = t[0];
}

/// Barriers under a condition asserted uniform but that is not.
#[kernel]
fn lying_uniform(y: &mut [u32]) {
    if uniform(local_id(0) < 2) {
        barrier();
    }
    y[global_linear_id()] = 1;
}

#[kernel]
fn out_of_bounds(x: &[u32], y: &mut [u32]) {
    y[global_linear_id()] = x[global_linear_id() + 1000];
}

#[test]
fn a_reduction_matches_its_reference_form_and_the_sum() {
    let (c, q) = (ctx(), ctx().queue());
    let n = 4096;
    let data: Vec<f32> = (0..n).map(|i| (i % 97) as f32).collect();
    let x = c.buffer::<f32>(n).unwrap();
    q.write(&x, 0, &data).unwrap();
    let mut results = Vec::new();
    for reference in [false, true] {
        let out = c.buffer::<f32>(n / 256).unwrap();
        let mut l = q
            .launch(&reduce, NdRange::new([n]).local([256]))
            .arg(&x)
            .arg(&out)
            .arg(Local::<f32>::new(256));
        if reference {
            l = l.reference();
        }
        l.enqueue().unwrap().wait().unwrap();
        results.push(q.read(&out, 0..n / 256).unwrap().wait().unwrap());
    }
    assert_eq!(results[0], results[1]);
    let want: Vec<f32> = data.chunks(256).map(|c| c.iter().sum()).collect();
    assert_eq!(results[0], want);
    assert_eq!(reduce::INFO.regions, 3);
    assert_eq!(reduce::INFO.recomputed, ["lid"]);
    assert_eq!(reduce::INFO.uniform, ["s"]);
    assert!(reduce::INFO.expanded.is_empty());
    assert_eq!(reduce.info().map(|i| i.name), Some("reduce"));
}

#[test]
fn global_id_indexed_writes_need_a_one_dimensional_launch() {
    let (c, q) = (ctx(), ctx().queue());
    let y = c.buffer::<u32>(64).unwrap();
    q.launch(&by_global_id, NdRange::new([64]))
        .arg(&y)
        .enqueue()
        .unwrap()
        .wait()
        .unwrap();
    let e = q
        .launch(&by_global_id, NdRange::new([8, 8]))
        .arg(&y)
        .enqueue()
        .unwrap();
    let failure = e.wait().unwrap_err();
    assert!(
        failure.to_string().contains("launch it in one dimension"),
        "{failure}"
    );
}

#[test]
fn local_arrays_count_against_local_memory_at_enqueue() {
    let (c, q) = (ctx(), ctx().queue());
    let y = c.buffer::<f32>(64).unwrap();
    let err = q
        .launch(&big_local, NdRange::new([64]))
        .arg(&y)
        .enqueue()
        .unwrap_err();
    assert!(matches!(err, Error::LocalMemory { .. }), "{err}");
}

#[test]
fn a_kernel_that_reads_out_of_bounds_fails_its_event_and_the_runtime_stays_usable() {
    let (c, q) = (ctx(), ctx().queue());
    let x = c.buffer::<u32>(64).unwrap();
    let y = c.buffer::<u32>(64).unwrap();
    let e = q
        .launch(&out_of_bounds, NdRange::new([64]))
        .arg(&x)
        .arg(&y)
        .enqueue()
        .unwrap();
    let failure = e.wait().unwrap_err();
    assert!(
        matches!(failure.kind(), FailureKind::Panicked { .. }),
        "{failure}"
    );
    assert!(failure.to_string().contains("out of bounds"), "{failure}");
    // The failed kernel poisoned what it was to write, until the host overwrites it.
    q.fill(&y, 0, 0..64).unwrap();
    q.launch(&by_global_id, NdRange::new([64]))
        .arg(&y)
        .enqueue()
        .unwrap()
        .wait()
        .unwrap();
    assert_eq!(q.read(&y, 0..64).unwrap().wait().unwrap(), vec![1; 64]);
}

#[test]
fn the_reference_form_catches_work_items_at_different_barriers() {
    let (c, q) = (ctx(), ctx().queue());
    let y = c.buffer::<u32>(8).unwrap();
    let e = q
        .launch(&lying_uniform, NdRange::new([8]).local([4]))
        .arg(&y)
        .reference()
        .enqueue()
        .unwrap();
    let failure = e.wait().unwrap_err();
    assert!(failure.to_string().contains("barrier"), "{failure}");
}

#[cfg(debug_assertions)]
#[test]
fn debug_builds_check_uniform_conditions_per_work_item() {
    let (c, q) = (ctx(), ctx().queue());
    let y = c.buffer::<u32>(8).unwrap();
    let e = q
        .launch(&lying_uniform, NdRange::new([8]).local([4]))
        .arg(&y)
        .enqueue()
        .unwrap();
    let failure = e.wait().unwrap_err();
    assert!(
        failure
            .to_string()
            .contains("uniform(..): the condition differs between work-items"),
        "{failure}"
    );
}

#[test]
fn kernels_made_otherwise_have_no_reference_form() {
    let (c, q) = (ctx(), ctx().queue());
    let k = numatask_kernels::Kernel::groups("plain", Vec::new(), |_, _| {});
    let err = q
        .launch(&k, NdRange::new([4]))
        .reference()
        .enqueue()
        .unwrap_err();
    assert!(err.to_string().contains("no reference form"), "{err}");
    let _ = c;
}

/// `NUMATASK_KERNEL_INFO=1` prints a kernel's report when it is first used: this test runs
/// itself again in a child process with the variable set, and reads the child's stderr.
#[test]
fn the_report_is_printed_at_numatask_kernel_info() {
    const CHILD: &str = "NUMATASK_TEST_KERNEL_INFO_CHILD";
    if std::env::var_os(CHILD).is_some() {
        // First use of the kernel: it is built, and reports.
        let _ = reduce.name();
        return;
    }
    let out = std::process::Command::new(std::env::current_exe().unwrap())
        .args([
            "the_report_is_printed_at_numatask_kernel_info",
            "--exact",
            "--nocapture",
        ])
        .env(CHILD, "1")
        .env("NUMATASK_KERNEL_INFO", "1")
        .output()
        .unwrap();
    assert!(out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("numatask: kernel 'reduce': 3 region(s); no variable kept per work-item"),
        "{stderr}"
    );
    assert!(stderr.contains("once per group: s"), "{stderr}");
}

/// Scales each row of a group's tile: the loop over rows walks the tile with stride 16 in
/// each work-item and with stride 1 across work-items, and reads `w[k]`, the same for all:
/// it runs breadth-first (the work-item loop inside it).
#[kernel]
fn scale_rows(input: &[f32], w: &[f32], out: &mut [f32], rows: u32) {
    let tile = local_array::<f32, 256>();
    let lx = local_id(0);
    let base = group_id(0) * 256;
    for k in 0..rows as usize {
        tile[k * 16 + lx] = input[base + k * 16 + lx] * w[k];
    }
    barrier();
    for k in 0..rows as usize {
        out[base + k * 16 + lx] = tile[k * 16 + lx];
    }
}

/// The same, every loop depth-first.
#[kernel(depth_first)]
fn scale_rows_depth_first(input: &[f32], w: &[f32], out: &mut [f32], rows: u32) {
    let tile = local_array::<f32, 256>();
    let lx = local_id(0);
    let base = group_id(0) * 256;
    for k in 0..rows as usize {
        tile[k * 16 + lx] = input[base + k * 16 + lx] * w[k];
    }
    barrier();
    for k in 0..rows as usize {
        out[base + k * 16 + lx] = tile[k * 16 + lx];
    }
}

#[test]
fn loops_whose_accesses_walk_work_items_run_breadth_first_and_agree() {
    let (c, q) = (ctx(), ctx().queue());
    let groups = 6;
    let n = groups * 256;
    let data: Vec<f32> = (0..n).map(|i| (i % 251) as f32 * 0.25).collect();
    let weights: Vec<f32> = (0..16).map(|k| 1.0 + k as f32).collect();
    let (x, w) = (c.buffer::<f32>(n).unwrap(), c.buffer::<f32>(16).unwrap());
    q.write(&x, 0, &data).unwrap();
    q.write(&w, 0, &weights).unwrap();
    let want: Vec<f32> = (0..n).map(|i| data[i] * weights[(i % 256) / 16]).collect();
    for (kernel, reference) in [
        (&*scale_rows, false),
        (&*scale_rows, true),
        (&*scale_rows_depth_first, false),
    ] {
        let out = c.buffer::<f32>(n).unwrap();
        let mut l = q
            .launch(kernel, NdRange::new([groups * 16]).local([16]))
            .arg(&x)
            .arg(&w)
            .arg(&out)
            .arg(16u32);
        if reference {
            l = l.reference();
        }
        l.enqueue().unwrap().wait().unwrap();
        assert_eq!(q.read(&out, 0..n).unwrap().wait().unwrap(), want);
    }
    assert_eq!(scale_rows::INFO.breadth_first, ["k", "k"]);
    assert!(scale_rows_depth_first::INFO.breadth_first.is_empty());
    // Each loop's accesses with their strides along the work-items and along the loop.
    let first = numatask_kernels::LoopInfo {
        counter: "k",
        accesses: &[
            ("tile[k * 16 + lx]", "W1", "LX"),
            ("input[base + k * 16 + lx]", "W1", "LX"),
            ("w[k]", "W0", "L1"),
        ],
        order: "breadth-first",
    };
    assert_eq!(scale_rows::INFO.loops.first(), Some(&first));
    assert_eq!(scale_rows::INFO.loops.len(), 2);
    assert!(
        scale_rows::INFO
            .to_string()
            .contains("loop k (breadth-first): tile[k * 16 + lx] W1 LX")
    );
    assert!(scale_rows_depth_first::INFO.loops.is_empty());
    // Breadth-first, each loop holds a region (and `let lx` before the first is one of its
    // own, which the compiler removes); depth-first, each loop is inside one.
    assert_eq!(scale_rows::INFO.regions, 3);
    assert_eq!(scale_rows_depth_first::INFO.regions, 2);
}
