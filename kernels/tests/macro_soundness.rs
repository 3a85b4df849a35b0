//! Kernels written without `unsafe` that once made the range analysis or the proof of own
//! elements wrong (their unchecked accesses out of bounds): each now fails its launch with an
//! out-of-bounds panic, as its reference form does, or computes what its reference form does.
//! Kernels the macro now refuses (reserved `__` names, items in inner blocks, macros it cannot
//! see into, upper-case variables) are in the macro crate's tests.
#![allow(unused_assignments, unused_mut)]

use std::sync::{Arc, OnceLock};

use numatask_kernels::{Buffer, Context, Element, NdRange, kernel};
use numatask_sched::Runtime;

fn ctx() -> &'static Context {
    static CTX: OnceLock<Context> = OnceLock::new();
    CTX.get_or_init(|| {
        let rt = Runtime::builder().num_threads(2).build().expect("runtime");
        Context::new(Arc::new(rt)).expect("context")
    })
}

fn buf<T: Element>(data: &[T]) -> Buffer<T> {
    let b = ctx().buffer::<T>(data.len()).unwrap();
    ctx().queue().write(&b, 0, data).unwrap();
    b
}

/// Runs `k` compiled and in its reference form on `x` (4 elements) and a fresh `y` of 64;
/// asserts that both fail with an out-of-bounds panic.
fn both_fail_out_of_bounds(k: &numatask_kernels::Kernel, range: NdRange) {
    let x = buf(&[7u32; 4]);
    for reference in [false, true] {
        let y = ctx().buffer::<u32>(64).unwrap();
        let q = ctx().queue();
        let mut l = q.launch(k, range.clone()).arg(&x).arg(&y);
        if reference {
            l = l.reference();
        }
        let failure = l
            .enqueue()
            .unwrap()
            .wait()
            .expect_err("an out-of-bounds read");
        assert!(
            failure.to_string().contains("out of bounds"),
            "{} form: {failure}",
            if reference { "reference" } else { "compiled" }
        );
    }
}

/// A destructuring assignment writes `m`: it varies, and its bound is not taken before the
/// loops.
#[kernel]
fn destructuring(x: &[u32], y: &mut [u32]) {
    let mut m = 0usize;
    (m, _) = (local_id(0), 0u8);
    y[global_linear_id()] = x[m];
}

/// `i` was computed from `m` before `m` changed: its bound is not rebuilt from `m` now.
#[kernel]
fn stale_initialiser(x: &[u32], y: &mut [u32]) {
    let mut m: usize = 1;
    let i: usize = local_id(0) + m;
    m = 0;
    y[global_linear_id()] = x[i];
}

/// A fact about `local_id(d)` does not hold for `local_id(d)` once `d` changed.
#[kernel]
fn variable_dimension(x: &[u32], y: &mut [u32]) {
    let mut d = 0usize;
    if local_id(d) < 1 {
        d = 1;
        y[global_linear_id()] = x[local_id(d)];
    }
}

/// A user type's `min` is not `Ord::min`.
pub struct Wide;
impl Wide {
    pub fn min(self, o: usize) -> usize {
        o + 8
    }
}

#[kernel]
fn user_min(x: &[u32], y: &mut [u32]) {
    y[global_linear_id()] = x[Wide.min(local_id(0))];
}

#[test]
fn indices_the_analysis_cannot_bound_stay_checked() {
    both_fail_out_of_bounds(&destructuring, NdRange::new([64]).local([64]));
    both_fail_out_of_bounds(&stale_initialiser, NdRange::new([64]).local([64]));
    both_fail_out_of_bounds(&variable_dimension, NdRange::new([1, 64]).local([1, 64]));
    both_fail_out_of_bounds(&user_min, NdRange::new([64]).local([64]));
}

/// A loop run once per group (breadth-first: each iteration for every work-item) whose counter
/// indexes `x`: the check made before each iteration's work-item loop uses the counter's value
/// then, and the last iteration, past `x`'s end, runs checked.
#[kernel]
fn counter_past_the_end(x: &[u32], y: &mut [u32]) {
    for k in 0..5 {
        y[k * 12 + local_id(0)] = x[k];
    }
}

#[test]
fn a_loop_counter_in_an_index_is_checked_at_each_iteration() {
    assert_eq!(
        counter_past_the_end::INFO.breadth_first,
        ["k"],
        "the loop runs breadth-first, its counter known before each iteration's work-item loop"
    );
    both_fail_out_of_bounds(&counter_past_the_end, NdRange::new([12]).local([12]));
}

/// A division in an index on a path not taken is not evaluated before the loops.
#[kernel]
fn guarded_division(x: &[u32], y: &mut [u32], d: u32) {
    let g = global_linear_id();
    if d > 0 {
        y[g] = x[(64 / d) as usize];
    } else {
        y[g] = 5;
    }
}

/// A split at `local_id(0) > 0` (the comparison's value known on each side of work-item 1).
#[kernel]
fn split_above_zero(y: &mut [u32]) {
    let g = global_linear_id();
    if local_id(0) > 0 {
        y[g] = 1;
    } else {
        y[g] = 2;
    }
}

/// An `#[inline]` helper whose arguments name its own parameters, swapped.
#[kernel]
fn swapped_helper_arguments(y: &mut [u32]) {
    #[inline]
    fn put(a: u32, b: u32, y: &mut [u32]) {
        y[global_linear_id()] = a * 10 + b;
    }
    let a = 1u32;
    let b = 2u32;
    put(b, a, y);
}

#[test]
fn kernels_that_once_failed_or_computed_wrongly_match_their_reference_form() {
    let q = ctx().queue();
    let x = buf(&[7u32; 128]);
    for reference in [false, true] {
        let (y, z, w) = (
            ctx().buffer::<u32>(64).unwrap(),
            ctx().buffer::<u32>(64).unwrap(),
            ctx().buffer::<u32>(64).unwrap(),
        );
        let run = |l: numatask_kernels::LaunchBuilder<'_>| {
            let l = if reference { l.reference() } else { l };
            l.enqueue().unwrap().wait().unwrap();
        };
        run(q
            .launch(&guarded_division, NdRange::new([64]).local([64]))
            .arg(&x)
            .arg(&y)
            .arg(0u32));
        run(q
            .launch(&split_above_zero, NdRange::new([64]).local([16]))
            .arg(&z));
        run(q
            .launch(&swapped_helper_arguments, NdRange::new([64]).local([16]))
            .arg(&w));
        assert_eq!(q.read(&y, 0..64).unwrap().wait().unwrap(), vec![5; 64]);
        let want: Vec<u32> = (0..64).map(|i| if i % 16 > 0 { 1 } else { 2 }).collect();
        assert_eq!(q.read(&z, 0..64).unwrap().wait().unwrap(), want);
        assert_eq!(q.read(&w, 0..64).unwrap().wait().unwrap(), vec![21; 64]);
    }
}
