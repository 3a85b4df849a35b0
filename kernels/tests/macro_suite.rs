//! Property tests of the `#[kernel]` macro: every kernel here runs in its compiled form (the
//! work-items of a group as loops, split into regions at barriers) and in its reference form
//! (a thread per work-item, a real barrier) on random problem sizes, local sizes and data,
//! and the two outputs must be bit-identical; where a plain serial model of the kernel is
//! cheap, the output must also equal the model's. Each kernel's `INFO` is checked where it
//! pins a decision of the analysis (regions, variables kept per work-item and their bytes,
//! variables recomputed, values computed once per group), so that a change of decision fails
//! here even when the results stay right.
//!
//! The reference form starts a thread per work-item: groups stay at 256 work-items or fewer
//! and cases at a few thousand work-items, so that the file runs in seconds in debug builds.

use std::fmt::Debug;
use std::sync::{Arc, OnceLock};

use numatask_kernels::{
    Buffer, Context, Element, Expanded, Kernel, KernelInfo, LaunchBuilder, Local, NdRange, kernel,
};
use numatask_sched::Runtime;

// ---------------------------------------------------------------------------------------
// The driver: a context for the file, a deterministic generator, both forms of a launch.
// ---------------------------------------------------------------------------------------

/// Cases per kernel.
const CASES: usize = 8;

/// Elements of a tile side in the 2-D kernels (their local sizes are at most this square).
const TILE: usize = 16;

/// One context for the whole file: building a runtime is slow-ish.
fn ctx() -> &'static Context {
    static CTX: OnceLock<Context> = OnceLock::new();
    CTX.get_or_init(|| {
        let runtime = Runtime::builder()
            .num_threads(2)
            .build()
            .expect("a runtime of two workers");
        Context::new(Arc::new(runtime)).expect("a context")
    })
}

/// splitmix64: a small deterministic generator, seeded by the test's name so that each test
/// draws the same cases on every run and a failure names a case that can be run again.
struct Rng(u64);

impl Rng {
    fn new(name: &str) -> Rng {
        // FNV-1a of the name.
        let seed = name.bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, b| {
            (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
        });
        Rng(seed)
    }

    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// Uniform in `lo..=hi`.
    fn between(&mut self, lo: usize, hi: usize) -> usize {
        lo + (self.next() % (hi - lo + 1) as u64) as usize
    }

    fn pick<T: Copy>(&mut self, xs: &[T]) -> T {
        xs[self.between(0, xs.len() - 1)]
    }

    fn u32(&mut self) -> u32 {
        (self.next() >> 32) as u32
    }

    /// In [-1, 1), with every bit of the mantissa random: sums of these round, so that a
    /// different order of operations would show in the bits.
    fn f32(&mut self) -> f32 {
        (self.next() >> 40) as f32 / (1u32 << 23) as f32 - 1.0
    }

    fn f64(&mut self) -> f64 {
        (self.next() >> 11) as f64 / (1u64 << 52) as f64 - 1.0
    }

    fn vec<T>(&mut self, n: usize, mut f: impl FnMut(&mut Rng) -> T) -> Vec<T> {
        (0..n).map(|_| f(self)).collect()
    }
}

/// A buffer holding `data`.
fn buffer<T: Element>(data: &[T]) -> Buffer<T> {
    let b = ctx().buffer::<T>(data.len()).expect("a buffer");
    ctx()
        .queue()
        .write(&b, 0, data)
        .expect("a write")
        .wait()
        .expect("the write ended");
    b
}

/// Runs `k` compiled and in its reference form, each writing a buffer of its own that starts
/// as `init` (the other arguments, given by `args`, are the same for both), and returns the
/// two outputs: `[compiled, reference]`.
fn run_both<T: Element>(
    k: &Kernel,
    range: &NdRange,
    init: &[T],
    args: impl for<'q> Fn(LaunchBuilder<'q>, &Buffer<T>) -> LaunchBuilder<'q>,
) -> [Vec<T>; 2] {
    let q = ctx().queue();
    [false, true].map(|reference| {
        let form = if reference { "reference" } else { "compiled" };
        let out = buffer(init);
        let mut launch = args(q.launch(k, range.clone()), &out);
        if reference {
            launch = launch.reference();
        }
        launch
            .enqueue()
            .unwrap_or_else(|e| panic!("kernel '{}' ({form}) {range:?}: {e}", k.name()))
            .wait()
            .unwrap_or_else(|e| panic!("kernel '{}' ({form}) {range:?} failed: {e}", k.name()));
        q.read(&out, 0..init.len())
            .expect("a read")
            .wait()
            .expect("the read ended")
    })
}

/// Elements compared by their bits (a float's sign of zero and NaN payload included).
trait Bits: Copy + Debug {
    fn bits(self) -> u64;
}

impl Bits for u32 {
    fn bits(self) -> u64 {
        self.into()
    }
}

impl Bits for i32 {
    fn bits(self) -> u64 {
        u64::from(self as u32)
    }
}

impl Bits for u64 {
    fn bits(self) -> u64 {
        self
    }
}

impl Bits for i64 {
    fn bits(self) -> u64 {
        self as u64
    }
}

impl Bits for f32 {
    fn bits(self) -> u64 {
        self.to_bits().into()
    }
}

impl Bits for f64 {
    fn bits(self) -> u64 {
        self.to_bits()
    }
}

/// Fails with the first element where `got` and `want` differ in their bits.
fn same_bits<T: Bits>(what: &str, got: &[T], want: &[T]) {
    assert_eq!(got.len(), want.len(), "{what}: lengths differ");
    let differ: Vec<usize> = (0..got.len())
        .filter(|&i| got[i].bits() != want[i].bits())
        .collect();
    if let Some(&i) = differ.first() {
        panic!(
            "{what}: {} of {} elements differ, the first at {i}: {:?} against {:?}",
            differ.len(),
            got.len(),
            got[i],
            want[i]
        );
    }
}

/// Checks one case: compiled against reference, then (if given) against the serial model.
fn check<T: Bits>(what: &str, [compiled, reference]: [Vec<T>; 2], model: Option<Vec<T>>) {
    same_bits(
        &format!("{what}: compiled against reference"),
        &compiled,
        &reference,
    );
    if let Some(model) = model {
        same_bits(
            &format!("{what}: compiled against the serial model"),
            &compiled,
            &model,
        );
    }
}

/// The groups of one dimension: (first index, size), the last one smaller when `global` is
/// not a multiple of `local`.
fn groups_of(global: usize, local: usize) -> Vec<(usize, usize)> {
    (0..global)
        .step_by(local)
        .map(|s| (s, local.min(global - s)))
        .collect()
}

/// The names of a kernel's expanded variables and their bytes.
fn expanded(info: &KernelInfo) -> Vec<(&'static str, usize)> {
    info.expanded
        .iter()
        .map(|&Expanded { name, bytes }| (name, bytes))
        .collect()
}

// ---------------------------------------------------------------------------------------
// Reductions in local memory.
// ---------------------------------------------------------------------------------------

/// Tree sum halving a power-of-two group, a local argument, one sum per group.
#[kernel]
fn reduce_sum(input: &[f32], out: &mut [f32], scratch: Local<f32>, n: u32) {
    let lid = local_id(0);
    let gid = global_id(0);
    scratch[lid] = if gid < n as usize { input[gid] } else { 0.0 };
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

/// The halving tree of `reduce_sum` over each group, in the kernel's order of additions.
fn tree_sums(data: &[f32], local: usize) -> Vec<f32> {
    data.chunks(local)
        .map(|chunk| {
            let mut a = chunk.to_vec();
            let mut s = local / 2;
            while s > 0 {
                for i in 0..s {
                    a[i] += a[i + s];
                }
                s /= 2;
            }
            a[0]
        })
        .collect()
}

#[test]
fn tree_sum_with_a_local_argument_matches_its_serial_tree() {
    let mut rng = Rng::new("reduce_sum");
    for case in 0..CASES {
        let local = rng.pick(&[1, 2, 4, 16, 64, 128, 256]);
        let groups = rng.between(1, 1024 / local);
        let global = groups * local;
        let n = rng.between(global - local + 1, global);
        let data = rng.vec(n, Rng::f32);
        let input = buffer(&data);
        let range = NdRange::new([global]).local([local]);
        let out = run_both(&reduce_sum, &range, &vec![-7.5f32; groups], |l, o| {
            l.arg(&input)
                .arg(o)
                .arg(Local::<f32>::new(local))
                .arg(n as u32)
        });
        let mut padded = data.clone();
        padded.resize(global, 0.0);
        let what = format!("reduce_sum case {case}: n {n}, local {local}");
        check(&what, out, Some(tree_sums(&padded, local)));
    }
}

/// Max over a `local_array`, one level of the tree per iteration of a `for` loop.
#[kernel]
fn reduce_max(input: &[f32], out: &mut [f32], n: u32) {
    let tile = local_array::<f32, 256>();
    let lid = local_id(0);
    let gid = global_id(0);
    tile[lid] = if gid < n as usize {
        input[gid]
    } else {
        f32::NEG_INFINITY
    };
    barrier();
    let levels = local_size(0).trailing_zeros();
    for level in 1..=levels {
        let stride = local_size(0) >> level;
        if lid < stride {
            tile[lid] = tile[lid].max(tile[lid + stride]);
        }
        barrier();
    }
    if lid == 0 {
        out[group_id(0)] = tile[0];
    }
}

#[test]
fn tree_max_in_a_local_array_is_the_maximum_of_each_group() {
    let mut rng = Rng::new("reduce_max");
    for case in 0..CASES {
        let local = rng.pick(&[2, 8, 32, 128, 256]);
        let groups = rng.between(1, 1024 / local);
        let global = groups * local;
        let n = rng.between(global - local + 1, global);
        let data = rng.vec(n, |r| r.f32() * 1000.0);
        let input = buffer(&data);
        let range = NdRange::new([global]).local([local]);
        let out = run_both(&reduce_max, &range, &vec![0.0f32; groups], |l, o| {
            l.arg(&input).arg(o).arg(n as u32)
        });
        let model = data
            .chunks(local)
            .map(|c| c.iter().copied().fold(f32::NEG_INFINITY, f32::max))
            .collect();
        check(
            &format!("reduce_max case {case}: n {n}, local {local}"),
            out,
            Some(model),
        );
    }
}

/// Sum of groups of any size (edge groups included): `loop` with a uniform `if .. { break; }`
/// and a count that halves, rounding up.
#[kernel]
fn reduce_any_size(input: &[u32], out: &mut [u32]) {
    let sums = local_array::<u32, 256>();
    let me = local_id(0);
    sums[me] = input[global_id(0)];
    barrier();
    let mut count = local_size(0);
    loop {
        if count <= 1 {
            break;
        }
        let half = count.div_ceil(2);
        if me + half < count {
            sums[me] = sums[me].wrapping_add(sums[me + half]);
        }
        barrier();
        count = half;
    }
    if me == 0 {
        out[group_id(0)] = sums[0];
    }
}

#[test]
fn loop_with_break_sums_edge_groups() {
    let mut rng = Rng::new("reduce_any_size");
    for case in 0..CASES {
        // The first case is the classic edge: 1000 items in groups of 64.
        let (global, local) = if case == 0 {
            (1000, 64)
        } else {
            (rng.between(1, 1200), rng.between(1, 256))
        };
        let data = rng.vec(global, Rng::u32);
        let input = buffer(&data);
        let groups = global.div_ceil(local);
        let range = NdRange::new([global]).local([local]);
        let out = run_both(&reduce_any_size, &range, &vec![7u32; groups], |l, o| {
            l.arg(&input).arg(o)
        });
        let model = data
            .chunks(local)
            .map(|c| c.iter().fold(0u32, |a, &v| a.wrapping_add(v)))
            .collect();
        check(
            &format!("reduce_any_size case {case}: global {global}, local {local}"),
            out,
            Some(model),
        );
    }
}

/// f64 sum with interleaved addressing (any group size), two inputs per work-item.
#[kernel]
fn reduce_pairs_f64(input: &[f64], out: &mut [f64], partial: Local<f64>) {
    let lid = local_id(0);
    let gid = global_id(0);
    partial[lid] = input[gid] + input[gid + global_size(0)];
    barrier();
    let mut s = 1;
    while s < local_size(0) {
        if lid % (2 * s) == 0 && lid + s < local_size(0) {
            partial[lid] += partial[lid + s];
        }
        barrier();
        s *= 2;
    }
    if lid == 0 {
        out[group_id(0)] = partial[0];
    }
}

#[test]
fn interleaved_f64_sum_matches_its_serial_order() {
    let mut rng = Rng::new("reduce_pairs_f64");
    for case in 0..CASES {
        let global = rng.between(1, 1000);
        let local = rng.between(1, 256);
        let data = rng.vec(2 * global, Rng::f64);
        let input = buffer(&data);
        let groups = global.div_ceil(local);
        let range = NdRange::new([global]).local([local]);
        let out = run_both(&reduce_pairs_f64, &range, &vec![0.5f64; groups], |l, o| {
            l.arg(&input).arg(o).arg(Local::<f64>::new(local))
        });
        let model = groups_of(global, local)
            .into_iter()
            .map(|(start, size)| {
                let mut a: Vec<f64> = (start..start + size)
                    .map(|g| data[g] + data[g + global])
                    .collect();
                let mut s = 1;
                while s < size {
                    for i in (0..size).step_by(2 * s) {
                        if i + s < size {
                            a[i] += a[i + s];
                        }
                    }
                    s *= 2;
                }
                a[0]
            })
            .collect();
        check(
            &format!("reduce_pairs_f64 case {case}: global {global}, local {local}"),
            out,
            Some(model),
        );
    }
}

/// Sums of the groups of a 2-D range, indexed by local_linear_id, one per group at its
/// group's linear index.
#[kernel]
fn group_sums_2d(input: &[u32], out: &mut [u32]) {
    let sums = local_array::<u32, 256>();
    let at = local_linear_id();
    sums[at] = input[global_id(1) * global_size(0) + global_id(0)];
    barrier();
    let mut alive = local_size(0) * local_size(1);
    while alive > 1 {
        let upper = (alive + 1) / 2;
        if at + upper < alive {
            sums[at] = sums[at].wrapping_add(sums[at + upper]);
        }
        barrier();
        alive = upper;
    }
    if at == 0 {
        out[group_id(1) * num_groups(0) + group_id(0)] = sums[0];
    }
}

#[test]
fn two_dimensional_edge_groups_sum_their_own_items() {
    let mut rng = Rng::new("group_sums_2d");
    for case in 0..CASES {
        let (w, h, lw, lh) = if case == 0 {
            (37, 23, 8, 8)
        } else {
            let lw = rng.between(1, 16);
            let lh = rng.between(1, 16);
            (rng.between(1, 48), rng.between(1, 48), lw, lh)
        };
        let data = rng.vec(w * h, Rng::u32);
        let input = buffer(&data);
        let (gw, gh) = (w.div_ceil(lw), h.div_ceil(lh));
        let range = NdRange::new([w, h]).local([lw, lh]);
        let out = run_both(&group_sums_2d, &range, &vec![1u32; gw * gh], |l, o| {
            l.arg(&input).arg(o)
        });
        let mut model = vec![0u32; gw * gh];
        for y in 0..h {
            for x in 0..w {
                let g = (y / lh) * gw + x / lw;
                model[g] = model[g].wrapping_add(data[y * w + x]);
            }
        }
        check(
            &format!("group_sums_2d case {case}: {w}x{h}, local {lw}x{lh}"),
            out,
            Some(model),
        );
    }
}

// ---------------------------------------------------------------------------------------
// Prefix sums.
// ---------------------------------------------------------------------------------------

/// Inclusive scan of each group (Hillis-Steele), ping-ponging between two local arrays; which
/// one holds the current values is a uniform flag flipped in the loop.
#[kernel]
fn scan_inclusive(input: &[u32], out: &mut [u32]) {
    let front = local_array::<u32, 256>();
    let back = local_array::<u32, 256>();
    let lid = local_id(0);
    let gid = global_id(0);
    front[lid] = input[gid];
    barrier();
    let mut in_front = true;
    let mut offset = 1;
    while offset < local_size(0) {
        if in_front {
            back[lid] = if lid >= offset {
                front[lid].wrapping_add(front[lid - offset])
            } else {
                front[lid]
            };
        } else {
            front[lid] = if lid >= offset {
                back[lid].wrapping_add(back[lid - offset])
            } else {
                back[lid]
            };
        }
        in_front = !in_front;
        offset *= 2;
        barrier();
    }
    out[gid] = if in_front { front[lid] } else { back[lid] };
}

#[test]
fn hillis_steele_inclusive_scan_of_each_group() {
    let mut rng = Rng::new("scan_inclusive");
    for case in 0..CASES {
        let global = rng.between(1, 1100);
        let local = rng.between(1, 256);
        let data = rng.vec(global, Rng::u32);
        let input = buffer(&data);
        let range = NdRange::new([global]).local([local]);
        let out = run_both(&scan_inclusive, &range, &vec![0u32; global], |l, o| {
            l.arg(&input).arg(o)
        });
        let mut model = Vec::with_capacity(global);
        for chunk in data.chunks(local) {
            let mut s = 0u32;
            for &v in chunk {
                s = s.wrapping_add(v);
                model.push(s);
            }
        }
        check(
            &format!("scan_inclusive case {case}: global {global}, local {local}"),
            out,
            Some(model),
        );
    }
}

/// Exclusive scan of each power-of-two group (Blelloch): an up-sweep building partial sums in
/// place, the root cleared, a down-sweep distributing them; i64 elements.
#[kernel]
fn scan_exclusive(input: &[i64], out: &mut [i64], temp: Local<i64>) {
    let lid = local_id(0);
    let gid = global_id(0);
    let n = local_size(0);
    temp[lid] = input[gid];
    barrier();
    let mut offset = 1;
    let mut active = n / 2;
    while active > 0 {
        if lid < active {
            let from = offset * (2 * lid + 1) - 1;
            let into = offset * (2 * lid + 2) - 1;
            temp[into] += temp[from];
        }
        offset *= 2;
        active /= 2;
        barrier();
    }
    if lid == 0 {
        temp[n - 1] = 0;
    }
    barrier();
    let mut width = 1;
    while width < n {
        offset /= 2;
        if lid < width {
            let left = offset * (2 * lid + 1) - 1;
            let right = offset * (2 * lid + 2) - 1;
            let carried = temp[left];
            temp[left] = temp[right];
            temp[right] += carried;
        }
        width *= 2;
        barrier();
    }
    out[gid] = temp[lid];
}

#[test]
fn blelloch_exclusive_scan_of_each_group() {
    let mut rng = Rng::new("scan_exclusive");
    for case in 0..CASES {
        let local = rng.pick(&[1, 2, 4, 8, 32, 64, 256]);
        let global = local * rng.between(1, 1024 / local);
        let data = rng.vec(global, |r| (r.next() % 2_000_001) as i64 - 1_000_000);
        let input = buffer(&data);
        let range = NdRange::new([global]).local([local]);
        let out = run_both(&scan_exclusive, &range, &vec![0i64; global], |l, o| {
            l.arg(&input).arg(o).arg(Local::<i64>::new(local))
        });
        let mut model = Vec::with_capacity(global);
        for chunk in data.chunks(local) {
            let mut s = 0i64;
            for &v in chunk {
                model.push(s);
                s += v;
            }
        }
        check(
            &format!("scan_exclusive case {case}: global {global}, local {local}"),
            out,
            Some(model),
        );
    }
}

/// Prefix sum by a loop whose trip count is the work-item's own, and a data-dependent
/// `while` loop, both inside a region (no barrier in them); u64 values kept across barriers.
#[kernel]
fn naive_prefix(input: &[u64], out: &mut [u64]) {
    let values = local_array::<u64, 256>();
    let lid = local_id(0);
    values[lid] = input[global_id(0)];
    barrier();
    let mut sum: u64 = 0;
    for j in 0..=lid {
        sum = sum.wrapping_add(values[j]);
    }
    let mut steps: u64 = 0;
    let mut walk = values[lid] % 100 + 1;
    while walk != 1 {
        walk = if walk % 2 == 0 {
            walk / 2
        } else {
            3 * walk + 1
        };
        steps += 1;
    }
    barrier();
    values[lid] = sum ^ (steps << 56);
    barrier();
    out[global_id(0)] = values[(lid + 1) % local_size(0)];
}

fn collatz_steps(mut v: u64) -> u64 {
    let mut steps = 0;
    while v != 1 {
        v = if v.is_multiple_of(2) {
            v / 2
        } else {
            3 * v + 1
        };
        steps += 1;
    }
    steps
}

#[test]
fn work_item_dependent_loops_inside_a_region() {
    let mut rng = Rng::new("naive_prefix");
    for case in 0..CASES {
        let global = rng.between(1, 700);
        let local = rng.between(1, 256);
        let data = rng.vec(global, Rng::next);
        let input = buffer(&data);
        let range = NdRange::new([global]).local([local]);
        let out = run_both(&naive_prefix, &range, &vec![0u64; global], |l, o| {
            l.arg(&input).arg(o)
        });
        let mut model = Vec::with_capacity(global);
        for chunk in data.chunks(local) {
            let mixed: Vec<u64> = (0..chunk.len())
                .map(|i| {
                    let sum = chunk[..=i].iter().fold(0u64, |a, &v| a.wrapping_add(v));
                    sum ^ (collatz_steps(chunk[i] % 100 + 1) << 56)
                })
                .collect();
            model.extend((0..chunk.len()).map(|i| mixed[(i + 1) % chunk.len()]));
        }
        check(
            &format!("naive_prefix case {case}: global {global}, local {local}"),
            out,
            Some(model),
        );
    }
}

// ---------------------------------------------------------------------------------------
// Two-dimensional tiles.
// ---------------------------------------------------------------------------------------

/// Transpose through a padded local tile (no two work-items of a column on one bank), the
/// store scattered: each work-item writes an element another one loaded. An edge group may
/// not be square: its work-items then cover the transposed block in strides. Twice: with the
/// scattered store atomic (`transpose`), and declared disjoint, plain loads and stores
/// (`transpose_disjoint`).
macro_rules! transpose_kernel {
    ($(#[$attr:meta])* $name:ident) => {
        $(#[$attr])*
        fn $name(input: &[f32], out: &mut [f32], width: u32, height: u32) {
            let tile = local_array::<f32, { TILE * (TILE + 1) }>();
            let w = width as usize;
            let h = height as usize;
            let lx = local_id(0);
            let ly = local_id(1);
            tile[ly * (TILE + 1) + lx] = input[global_id(1) * w + global_id(0)];
            barrier();
            let first_column = group_id(0) * enqueued_local_size(0);
            let first_row = group_id(1) * enqueued_local_size(1);
            let mut c = ly;
            while c < local_size(0) {
                let mut r = lx;
                while r < local_size(1) {
                    out[(first_column + c) * h + first_row + r] = tile[r * (TILE + 1) + c];
                    r += local_size(0);
                }
                c += local_size(1);
            }
        }
    };
}

transpose_kernel!(
    #[kernel]
    transpose
);
transpose_kernel!(
    #[kernel(unsafe(disjoint(out)))]
    transpose_disjoint
);

#[test]
fn transpose_through_a_padded_tile_is_exact() {
    let mut rng = Rng::new("transpose");
    for case in 0..CASES {
        let side = rng.pick(&[1, 2, 4, 8, 16]);
        let (w, h) = (rng.between(1, 50), rng.between(1, 50));
        let data = rng.vec(w * h, Rng::f32);
        let input = buffer(&data);
        let range = NdRange::new([w, h]).local([side, side]);
        let mut model = vec![0.0f32; w * h];
        for y in 0..h {
            for x in 0..w {
                model[x * h + y] = data[y * w + x];
            }
        }
        for k in [&*transpose, &*transpose_disjoint] {
            let out = run_both(k, &range, &vec![0.25f32; w * h], |l, o| {
                l.arg(&input).arg(o).arg(w as u32).arg(h as u32)
            });
            check(
                &format!("{} case {case}: {w}x{h}, local {side}x{side}", k.name()),
                out,
                Some(model.clone()),
            );
        }
    }
}

/// C = A B through local tiles: a loop over the tiles of the shared dimension with two
/// barriers per tile; the accumulator lives across all of them. Edge groups have fewer
/// work-items than the tile has elements: each loads every local_size-th element of its row
/// and column of the tiles.
#[kernel]
fn matmul(a: &[f32], b: &[f32], c: &mut [f32], m: u32, n: u32, k: u32) {
    let a_tile = local_array::<f32, { TILE * TILE }>();
    let b_tile = local_array::<f32, { TILE * TILE }>();
    let side = enqueued_local_size(0);
    let tx = local_id(0);
    let ty = local_id(1);
    let col = global_id(0);
    let row = global_id(1);
    let mut acc: f32 = 0.0;
    let tiles = (k as usize).div_ceil(side);
    for t in 0..tiles {
        let base = t * side;
        let mut i = tx;
        while i < side {
            a_tile[ty * side + i] = if row < m as usize && base + i < k as usize {
                a[row * k as usize + base + i]
            } else {
                0.0
            };
            i += local_size(0);
        }
        let mut j = ty;
        while j < side {
            b_tile[j * side + tx] = if base + j < k as usize && col < n as usize {
                b[(base + j) * n as usize + col]
            } else {
                0.0
            };
            j += local_size(1);
        }
        barrier();
        for p in 0..side {
            acc += a_tile[ty * side + p] * b_tile[p * side + tx];
        }
        barrier();
    }
    if row < m as usize && col < n as usize {
        c[row * n as usize + col] = acc;
    }
}

#[test]
fn tiled_matrix_multiply_matches_the_serial_product() {
    let mut rng = Rng::new("matmul");
    for case in 0..CASES {
        let side = rng.pick(&[1, 2, 4, 8, 16]);
        let (m, n, k) = (rng.between(1, 33), rng.between(1, 33), rng.between(1, 40));
        let av = rng.vec(m * k, Rng::f32);
        let bv = rng.vec(k * n, Rng::f32);
        let (ab, bb) = (buffer(&av), buffer(&bv));
        let range = NdRange::new([n, m]).local([side, side]);
        let out = run_both(&matmul, &range, &vec![0.0f32; m * n], |l, o| {
            l.arg(&ab)
                .arg(&bb)
                .arg(o)
                .arg(m as u32)
                .arg(n as u32)
                .arg(k as u32)
        });
        // The kernel adds products in the order of k, and a padding product of zero never
        // changes a sum that starts at +0.0: the plain loop gives the same bits.
        let model = (0..m * n)
            .map(|rc| {
                let (r, c) = (rc / n, rc % n);
                (0..k).fold(0.0f32, |acc, p| acc + av[r * k + p] * bv[p * n + c])
            })
            .collect();
        check(
            &format!("matmul case {case}: {m}x{k} by {k}x{n}, local {side}x{side}"),
            out,
            Some(model),
        );
    }
}

/// A loop run in strips of work-items (a work-item per vector lane): each work-item weighs a
/// column of a local tile (`tile[p * ls + lid]`, consecutive along the work-items) by
/// `coef[p]` (the same for all), its accumulator and a typed value of the code before the
/// loop carried between the strip's parts; any group size (full strips of 16 and a shorter
/// last one). The tile is filled by a loop run breadth-first.
#[kernel]
fn strip_dot(input: &[f32], coef: &[f32], out: &mut [f32], m: u32) {
    let tile = local_array::<f32, 1024>();
    let lid = local_id(0);
    let ls = local_size(0);
    let gid = global_id(0);
    for j in 0..m as usize {
        tile[j * ls + lid] = input[(gid * m as usize + j) % input.len()];
    }
    barrier();
    let bias: f32 = input[gid % input.len()] * 0.5;
    let mut acc: f32 = bias;
    for p in 0..m as usize {
        acc += tile[p * ls + lid] * coef[p];
    }
    out[gid] = acc - bias;
}

#[test]
fn loops_in_strips_give_each_work_item_its_own_order() {
    assert_eq!(strip_dot::INFO.strips, ["p"]);
    assert_eq!(strip_dot::INFO.breadth_first, ["j"]);
    assert_eq!(matmul::INFO.strips, ["p"]);
    let mut rng = Rng::new("strip_dot");
    for case in 0..CASES * 2 {
        let local = rng.between(1, 70);
        let global = rng.between(1, 300);
        let m = rng.between(1, 1024 / local);
        let len = rng.between(1, 500);
        let input = rng.vec(len, Rng::f32);
        let coef = rng.vec(m, Rng::f32);
        let (ib, cb) = (buffer(&input), buffer(&coef));
        let range = NdRange::new([global]).local([local]);
        let out = run_both(&strip_dot, &range, &vec![0.0f32; global], |l, o| {
            l.arg(&ib).arg(&cb).arg(o).arg(m as u32)
        });
        let model = (0..global)
            .map(|gid| {
                let bias = input[gid % input.len()] * 0.5;
                let acc = (0..m).fold(bias, |acc, p| {
                    acc + input[(gid * m + p) % input.len()] * coef[p]
                });
                acc - bias
            })
            .collect();
        check(
            &format!("strip_dot case {case}: global {global}, local {local}, m {m}"),
            out,
            Some(model),
        );
    }
}

/// A loop run in strips followed, in its region, by a kept variable's declaration (it lives
/// in the strip's last part only), and a kept variable changed through a `ref mut` binding
/// (its new value must go back to its slot).
#[kernel]
fn strip_then_kept(input: &[f32], coef: &[f32], out: &mut [f32], m: u32) {
    let tile = local_array::<f32, 1024>();
    let lid = local_id(0);
    let ls = local_size(0);
    let gid = global_id(0);
    let mut x: f32 = input[gid % input.len()];
    for j in 0..m as usize {
        tile[j * ls + lid] = input[(gid * m as usize + j) % input.len()];
    }
    barrier();
    let mut acc: f32 = 0.0;
    for p in 0..m as usize {
        acc += tile[p * ls + lid] * coef[p];
    }
    let s: f32 = acc * 2.0 + x;
    {
        let ref mut r = x;
        *r += 1.0;
    }
    barrier();
    out[gid] = s + x;
}

#[test]
fn a_kept_variable_declared_after_a_strip_loop_and_one_changed_by_ref_mut() {
    assert_eq!(strip_then_kept::INFO.strips, ["p"]);
    let mut rng = Rng::new("strip_then_kept");
    for case in 0..CASES {
        let local = rng.between(1, 40);
        let global = rng.between(1, 200);
        let m = rng.between(1, 1024 / local);
        let len = rng.between(1, 300);
        let input = rng.vec(len, Rng::f32);
        let coef = rng.vec(m, Rng::f32);
        let (ib, cb) = (buffer(&input), buffer(&coef));
        let range = NdRange::new([global]).local([local]);
        let out = run_both(&strip_then_kept, &range, &vec![0.0f32; global], |l, o| {
            l.arg(&ib).arg(&cb).arg(o).arg(m as u32)
        });
        let model = (0..global)
            .map(|gid| {
                let x = input[gid % len];
                let acc = (0..m).fold(0.0f32, |acc, p| acc + input[(gid * m + p) % len] * coef[p]);
                (acc * 2.0 + x) + (x + 1.0)
            })
            .collect();
        check(
            &format!("strip_then_kept case {case}: global {global}, local {local}, m {m}"),
            out,
            Some(model),
        );
    }
}

/// A 2-D range writing by global_linear_id: the group's items reversed through local memory.
#[kernel]
fn linear_2d(input: &[u32], out: &mut [u32]) {
    let tile = local_array::<u32, 256>();
    let at = local_linear_id();
    let items = local_size(0) * local_size(1);
    tile[at] = input[global_linear_id()];
    barrier();
    let group = group_id(0) + num_groups(0) * group_id(1);
    out[global_linear_id()] = tile[items - 1 - at].wrapping_add(group as u32)
        ^ ((global_id(1) as u32) << 16 | local_id(0) as u32);
}

#[test]
fn two_dimensional_linear_ids_reverse_each_group() {
    let mut rng = Rng::new("linear_2d");
    for case in 0..CASES {
        let (w, h, lw, lh) = if case == 0 {
            (37, 23, 8, 8)
        } else {
            (
                rng.between(1, 60),
                rng.between(1, 40),
                rng.between(1, 16),
                rng.between(1, 16),
            )
        };
        let data = rng.vec(w * h, Rng::u32);
        let input = buffer(&data);
        let range = NdRange::new([w, h]).local([lw, lh]);
        let out = run_both(&linear_2d, &range, &vec![0u32; w * h], |l, o| {
            l.arg(&input).arg(o)
        });
        let mut model = vec![0u32; w * h];
        let gw = w.div_ceil(lw);
        for (gy, &(y0, sy)) in groups_of(h, lh).iter().enumerate() {
            for (gx, &(x0, sx)) in groups_of(w, lw).iter().enumerate() {
                for ly in 0..sy {
                    for lx in 0..sx {
                        let at = lx + sx * ly;
                        let from = sx * sy - 1 - at;
                        let (fx, fy) = (x0 + from % sx, y0 + from / sx);
                        model[(y0 + ly) * w + x0 + lx] = data[fy * w + fx]
                            .wrapping_add((gx + gw * gy) as u32)
                            ^ (((y0 + ly) as u32) << 16 | lx as u32);
                    }
                }
            }
        }
        check(
            &format!("linear_2d case {case}: {w}x{h}, local {lw}x{lh}"),
            out,
            Some(model),
        );
    }
}

// ---------------------------------------------------------------------------------------
// Three dimensions and offsets.
// ---------------------------------------------------------------------------------------

/// A 3-D range: each work-item takes its neighbour's value along z within the group (through
/// local memory), writes by global_linear_id, and mixes in the group's linear index, the
/// range's geometry and its ids asked by a dimension known at run time only (0 past the
/// third).
#[kernel]
fn linear_3d(input: &[u32], out: &mut [u32]) {
    let tile = local_array::<u32, 256>();
    let at = local_linear_id();
    tile[at] = input[global_linear_id()];
    barrier();
    let next_z = (local_id(2) + 1) % local_size(2);
    let neighbour = local_id(0) + local_size(0) * (local_id(1) + local_size(1) * next_z);
    let group = (group_id(2) * num_groups(1) + group_id(1)) * num_groups(0) + group_id(0);
    let shape = work_dim() * 1_000_000 + global_size(2) * 10_000 + enqueued_local_size(2);
    let mut ids = 0;
    for d in 0..4 {
        ids += global_id(d) * (d + 1) + local_id(d);
    }
    out[global_linear_id()] = tile[neighbour]
        .wrapping_mul(3)
        .wrapping_add((group + shape + ids) as u32);
}

#[test]
fn three_dimensional_groups_exchange_along_z() {
    let mut rng = Rng::new("linear_3d");
    for case in 0..CASES {
        let g = [rng.between(1, 12), rng.between(1, 12), rng.between(1, 12)];
        let l = [rng.between(1, 5), rng.between(1, 5), rng.between(1, 8)];
        let total = g[0] * g[1] * g[2];
        let data = rng.vec(total, Rng::u32);
        let input = buffer(&data);
        let range = NdRange::new(g).local(l);
        let out = run_both(&linear_3d, &range, &vec![0u32; total], |b, o| {
            b.arg(&input).arg(o)
        });
        let ng = [0, 1, 2].map(|d| g[d].div_ceil(l[d]));
        let shape = 3 * 1_000_000 + g[2] * 10_000 + l[2];
        let mut model = vec![0u32; total];
        for z in 0..g[2] {
            for y in 0..g[1] {
                for x in 0..g[0] {
                    let id = [x, y, z];
                    let gid = [0, 1, 2].map(|d| id[d] / l[d]);
                    // The group's first item and its actual size.
                    let start = [0, 1, 2].map(|d| gid[d] * l[d]);
                    let size = [0, 1, 2].map(|d| l[d].min(g[d] - start[d]));
                    let lz = (id[2] - start[2] + 1) % size[2];
                    let from = x + g[0] * (y + g[1] * (start[2] + lz));
                    let group = (gid[2] * ng[1] + gid[1]) * ng[0] + gid[0];
                    let ids: usize = (0..3).map(|d| id[d] * (d + 1) + id[d] - start[d]).sum();
                    model[x + g[0] * (y + g[1] * z)] = data[from]
                        .wrapping_mul(3)
                        .wrapping_add((group + shape + ids) as u32);
                }
            }
        }
        check(
            &format!("linear_3d case {case}: {g:?}, local {l:?}"),
            out,
            Some(model),
        );
    }
}

/// A 1-D range with a global offset: global ids start past it, linear ids do not.
#[kernel]
fn with_offset(input: &[u32], out: &mut [u32]) {
    let tile = local_array::<u32, 256>();
    let lid = local_id(0);
    tile[lid] = input[global_id(0) - global_offset(0)];
    barrier();
    out[global_linear_id()] = tile[(lid + 1) % local_size(0)] ^ (global_id(0) as u32);
}

#[test]
fn global_offset_shifts_global_ids_only() {
    let mut rng = Rng::new("with_offset");
    for case in 0..CASES {
        let global = rng.between(1, 900);
        let local = rng.between(1, 256);
        let offset = rng.between(0, 5000);
        let data = rng.vec(global, Rng::u32);
        let input = buffer(&data);
        let range = NdRange::new([global]).local([local]).offset([offset]);
        let out = run_both(&with_offset, &range, &vec![0u32; global], |l, o| {
            l.arg(&input).arg(o)
        });
        let mut model = Vec::with_capacity(global);
        for (start, size) in groups_of(global, local) {
            for i in 0..size {
                model.push(data[start + (i + 1) % size] ^ (offset + start + i) as u32);
            }
        }
        check(
            &format!("with_offset case {case}: global {global}, local {local}, offset {offset}"),
            out,
            Some(model),
        );
    }
}

// ---------------------------------------------------------------------------------------
// Barriers in uniform control flow.
// ---------------------------------------------------------------------------------------

/// Barriers in both arms of an if/else on the group, and in the arms of an else-if chain
/// on a scalar and on the group.
#[kernel]
fn branches(input: &[i32], out: &mut [i32], mode: u32) {
    let tile = local_array::<i32, 256>();
    let lid = local_id(0);
    let gid = global_id(0);
    let n = local_size(0);
    tile[lid] = input[gid];
    barrier();
    if group_id(0) % 2 == 0 {
        let right: i32 = tile[(lid + 1) % n];
        barrier();
        tile[lid] = right.wrapping_mul(2);
    } else {
        let left: i32 = tile[(lid + n - 1) % n];
        barrier();
        tile[lid] = left.wrapping_sub(1);
    }
    barrier();
    if mode == 0 {
        tile[lid] = tile[lid].wrapping_add(1);
    } else if mode == 1 {
        let mirrored: i32 = tile[n - 1 - lid];
        barrier();
        tile[lid] = mirrored;
    } else if group_id(0) % 3 == 1 {
        let mixed: i32 = tile[lid] ^ tile[(lid + 2) % n];
        barrier();
        tile[lid] = mixed;
    } else {
        barrier();
        tile[lid] = tile[lid].wrapping_sub(3);
    }
    barrier();
    out[gid] = tile[(lid + 3) % n];
}

fn branches_model(data: &[i32], local: usize, mode: u32) -> Vec<i32> {
    let mut out = Vec::with_capacity(data.len());
    for (g, chunk) in data.chunks(local).enumerate() {
        let n = chunk.len();
        let t: Vec<i32> = if g % 2 == 0 {
            (0..n).map(|i| chunk[(i + 1) % n].wrapping_mul(2)).collect()
        } else {
            (0..n)
                .map(|i| chunk[(i + n - 1) % n].wrapping_sub(1))
                .collect()
        };
        let t: Vec<i32> = match mode {
            0 => t.iter().map(|v| v.wrapping_add(1)).collect(),
            1 => (0..n).map(|i| t[n - 1 - i]).collect(),
            _ if g % 3 == 1 => (0..n).map(|i| t[i] ^ t[(i + 2) % n]).collect(),
            _ => t.iter().map(|v| v.wrapping_sub(3)).collect(),
        };
        out.extend((0..n).map(|i| t[(i + 3) % n]));
    }
    out
}

#[test]
fn barriers_in_if_else_and_else_if_chains() {
    let mut rng = Rng::new("branches");
    for case in 0..2 * CASES {
        let global = rng.between(1, 1000);
        let local = rng.between(1, 128);
        let mode = (case % 4) as u32;
        let data = rng.vec(global, |r| r.u32() as i32);
        let input = buffer(&data);
        let range = NdRange::new([global]).local([local]);
        let out = run_both(&branches, &range, &vec![0i32; global], |l, o| {
            l.arg(&input).arg(o).arg(mode)
        });
        check(
            &format!("branches case {case}: global {global}, local {local}, mode {mode}"),
            out,
            Some(branches_model(&data, local, mode)),
        );
    }
}

/// Nested uniform conditionals (and a plain block) with barriers, inside a `for` loop that
/// skips some rounds by a uniform `continue`; the value each work-item carries is updated in
/// several regions.
#[kernel]
fn nested_conditionals(input: &[u32], out: &mut [u32], rounds: u32) {
    let tile = local_array::<u32, 256>();
    let lid = local_id(0);
    let n = local_size(0);
    let g = group_id(0);
    let mut value: u32 = input[global_id(0)];
    for r in 0..rounds {
        if r % 4 == 3 {
            continue;
        }
        tile[lid] = value;
        barrier();
        if r % 2 == 0 {
            if g % 2 == 0 {
                value = value.wrapping_add(tile[(lid + 1) % n]);
                barrier();
            } else {
                value ^= tile[(lid + n - 1) % n];
                barrier();
            }
        } else if r % 3 == 1 {
            {
                value = value.rotate_left(5);
                barrier();
            }
        }
        barrier();
    }
    out[global_id(0)] = value;
}

#[test]
fn nested_uniform_conditionals_in_a_loop() {
    let mut rng = Rng::new("nested_conditionals");
    for case in 0..CASES {
        let global = rng.between(1, 800);
        let local = rng.between(1, 200);
        let rounds = rng.between(0, 7) as u32;
        let data = rng.vec(global, Rng::u32);
        let input = buffer(&data);
        let range = NdRange::new([global]).local([local]);
        let out = run_both(&nested_conditionals, &range, &vec![0u32; global], |l, o| {
            l.arg(&input).arg(o).arg(rounds)
        });
        let mut model = Vec::with_capacity(global);
        for (g, chunk) in data.chunks(local).enumerate() {
            let n = chunk.len();
            let mut v = chunk.to_vec();
            for r in (0..rounds).filter(|r| r % 4 != 3) {
                let t = v.clone();
                for i in 0..n {
                    if r % 2 == 0 {
                        if g % 2 == 0 {
                            v[i] = v[i].wrapping_add(t[(i + 1) % n]);
                        } else {
                            v[i] ^= t[(i + n - 1) % n];
                        }
                    } else if r % 3 == 1 {
                        v[i] = v[i].rotate_left(5);
                    }
                }
            }
            model.extend(v);
        }
        check(
            &format!(
                "nested_conditionals case {case}: global {global}, local {local}, rounds {rounds}"
            ),
            out,
            Some(model),
        );
    }
}

/// Nested loops with barriers: a `while` inside a `for`, then a labeled `loop` around a `for`
/// left by a uniform `break 'sweep`.
#[kernel]
fn nested_loops(input: &[f32], out: &mut [f32], outer: u32, inner: u32) {
    let tile = local_array::<f32, 256>();
    let lid = local_id(0);
    let n = local_size(0);
    let mut x: f32 = input[global_id(0)];
    for i in 0..outer as usize {
        let mut j = 0;
        while j < inner {
            tile[lid] = x;
            barrier();
            x = 0.5 * x + 0.25 * tile[(lid + i + 1) % n];
            barrier();
            j += 1;
        }
    }
    let mut step = 0;
    'sweep: loop {
        for k in 0..3 {
            if step == inner {
                break 'sweep;
            }
            tile[lid] = x;
            barrier();
            x -= 0.125 * tile[(lid + k) % n];
            barrier();
            step += 1;
        }
    }
    out[global_id(0)] = x;
}

#[test]
fn nested_loops_with_barriers_and_a_labeled_break() {
    let mut rng = Rng::new("nested_loops");
    for case in 0..CASES {
        let global = rng.between(1, 600);
        let local = rng.between(1, 128);
        let (outer, inner) = (rng.between(0, 3) as u32, rng.between(0, 4) as u32);
        let data = rng.vec(global, Rng::f32);
        let input = buffer(&data);
        let range = NdRange::new([global]).local([local]);
        let out = run_both(&nested_loops, &range, &vec![0.0f32; global], |l, o| {
            l.arg(&input).arg(o).arg(outer).arg(inner)
        });
        let mut model = Vec::with_capacity(global);
        for chunk in data.chunks(local) {
            let n = chunk.len();
            let mut x = chunk.to_vec();
            for i in 0..outer as usize {
                for _ in 0..inner {
                    let t = x.clone();
                    for l in 0..n {
                        x[l] = 0.5 * x[l] + 0.25 * t[(l + i + 1) % n];
                    }
                }
            }
            for step in 0..inner as usize {
                let t = x.clone();
                for l in 0..n {
                    x[l] -= 0.125 * t[(l + step % 3) % n];
                }
            }
            model.extend(x);
        }
        check(
            &format!("nested_loops case {case}: global {global}, local {local}, {outer}x{inner}"),
            out,
            Some(model),
        );
    }
}

/// Odd-even transposition sort of each group in local memory: a `loop` that ends when a
/// phase swapped nothing. The flag is in local memory, read at a fixed index after a
/// barrier: the same for the whole group, which the analysis proves.
#[kernel]
fn odd_even_sort(input: &[u32], out: &mut [u32]) {
    let keys = local_array::<u32, 256>();
    let swapped = local_array::<u8, 1>();
    let lid = local_id(0);
    let n = local_size(0);
    keys[lid] = input[global_id(0)];
    loop {
        if lid == 0 {
            swapped[0] = 0;
        }
        barrier();
        for parity in 0..2 {
            if lid % 2 == parity && lid + 1 < n && keys[lid] > keys[lid + 1] {
                let low = keys[lid + 1];
                keys[lid + 1] = keys[lid];
                keys[lid] = low;
                swapped[0] = 1;
            }
            barrier();
        }
        if swapped[0] == 0 {
            break;
        }
        barrier();
    }
    out[global_id(0)] = keys[lid];
}

#[test]
fn loop_until_no_swap_sorts_each_group() {
    let mut rng = Rng::new("odd_even_sort");
    for case in 0..CASES {
        let global = rng.between(1, 300);
        let local = rng.between(1, 64);
        let data = rng.vec(global, |r| r.u32() % 1000);
        let input = buffer(&data);
        let range = NdRange::new([global]).local([local]);
        let out = run_both(&odd_even_sort, &range, &vec![0u32; global], |l, o| {
            l.arg(&input).arg(o)
        });
        let mut model = Vec::with_capacity(global);
        for chunk in data.chunks(local) {
            let mut c = chunk.to_vec();
            c.sort_unstable();
            model.extend(c);
        }
        check(
            &format!("odd_even_sort case {case}: global {global}, local {local}"),
            out,
            Some(model),
        );
    }
}

/// Conditions the analysis cannot prove uniform, asserted so with `uniform(..)`: the host
/// gives every work-item of a group the same round count.
#[kernel]
fn asserted_uniform(input: &[u32], rounds: &[u32], out: &mut [u32]) {
    let tile = local_array::<u32, 256>();
    let lid = local_id(0);
    let n = local_size(0);
    let count: u32 = rounds[global_id(0)];
    tile[lid] = input[global_id(0)];
    barrier();
    let mut r = 0u32;
    while uniform(r < count) {
        let next: u32 = tile[(lid + 1) % n];
        barrier();
        tile[lid] = next.wrapping_mul(3).wrapping_add(r);
        barrier();
        r += 1;
    }
    if uniform(count % 2 == 1) {
        let flipped: u32 = !tile[n - 1 - lid];
        barrier();
        tile[lid] = flipped;
    }
    barrier();
    out[global_id(0)] = tile[lid];
}

#[test]
fn asserted_uniform_conditions_drive_barrier_loops() {
    let mut rng = Rng::new("asserted_uniform");
    for case in 0..CASES {
        let global = rng.between(1, 800);
        let local = rng.between(1, 200);
        let data = rng.vec(global, Rng::u32);
        let counts: Vec<u32> = groups_of(global, local)
            .iter()
            .flat_map(|&(_, size)| {
                let c = (rng.next() % 5) as u32;
                std::iter::repeat_n(c, size)
            })
            .collect();
        let (input, rounds) = (buffer(&data), buffer(&counts));
        let range = NdRange::new([global]).local([local]);
        let out = run_both(&asserted_uniform, &range, &vec![0u32; global], |l, o| {
            l.arg(&input).arg(&rounds).arg(o)
        });
        let mut model = Vec::with_capacity(global);
        for (start, size) in groups_of(global, local) {
            let count = counts[start];
            let mut t = data[start..start + size].to_vec();
            for r in 0..count {
                t = (0..size)
                    .map(|i| t[(i + 1) % size].wrapping_mul(3).wrapping_add(r))
                    .collect();
            }
            if count % 2 == 1 {
                t = (0..size).map(|i| !t[size - 1 - i]).collect();
            }
            model.extend(t);
        }
        check(
            &format!("asserted_uniform case {case}: global {global}, local {local}"),
            out,
            Some(model),
        );
    }
}

// ---------------------------------------------------------------------------------------
// Variables across barriers.
// ---------------------------------------------------------------------------------------

/// A mutable accumulator kept per work-item, updated in several regions (by assignments,
/// compound assignments and methods).
#[kernel]
fn accumulator(input: &[u32], out: &mut [u32]) {
    let tile = local_array::<u32, 256>();
    let lid = local_id(0);
    let n = local_size(0);
    let mut acc: u32 = input[global_id(0)];
    tile[lid] = acc;
    barrier();
    acc = acc.wrapping_add(tile[(lid + 1) % n]);
    barrier();
    tile[lid] = acc;
    barrier();
    acc ^= tile[n - 1 - lid];
    acc = acc.rotate_left(lid as u32 % 32);
    barrier();
    tile[lid] = acc.wrapping_mul(3);
    barrier();
    acc = acc.wrapping_add(tile[(lid + 2) % n] >> 3);
    out[global_linear_id()] = acc;
}

#[test]
fn accumulator_updated_in_several_regions() {
    let mut rng = Rng::new("accumulator");
    for case in 0..CASES {
        let global = rng.between(1, 1000);
        let local = rng.between(1, 256);
        let data = rng.vec(global, Rng::u32);
        let input = buffer(&data);
        let range = NdRange::new([global]).local([local]);
        let out = run_both(&accumulator, &range, &vec![0u32; global], |l, o| {
            l.arg(&input).arg(o)
        });
        let mut model = Vec::with_capacity(global);
        for chunk in data.chunks(local) {
            let n = chunk.len();
            let a: Vec<u32> = (0..n)
                .map(|i| chunk[i].wrapping_add(chunk[(i + 1) % n]))
                .collect();
            let b: Vec<u32> = (0..n)
                .map(|i| (a[i] ^ a[n - 1 - i]).rotate_left(i as u32 % 32))
                .collect();
            model.extend((0..n).map(|i| b[i].wrapping_add(b[(i + 2) % n].wrapping_mul(3) >> 3)));
        }
        check(
            &format!("accumulator case {case}: global {global}, local {local}"),
            out,
            Some(model),
        );
    }
}

/// A private `[f32; 4]` kept per work-item and changed element by element (and by a method)
/// across barriers.
#[kernel]
fn private_array(input: &[f32], out: &mut [f32]) {
    let shared = local_array::<f32, 256>();
    let lid = local_id(0);
    let gid = global_id(0);
    let n = local_size(0);
    let mut v: [f32; 4] = [0.0; 4];
    for e in 0..4 {
        v[e] = input[4 * gid + e];
    }
    shared[lid] = v[0] + v[1];
    barrier();
    v[1] += shared[(lid + 1) % n];
    v[3] *= 2.0;
    v.swap(0, 2);
    barrier();
    shared[lid] = v[2] - v[3];
    barrier();
    v[0] -= shared[(lid + n - 1) % n];
    for f in 0..4 {
        out[4 * gid + f] = v[f];
    }
}

#[test]
fn private_array_changed_element_wise_across_barriers() {
    let mut rng = Rng::new("private_array");
    for case in 0..CASES {
        let global = rng.between(1, 700);
        let local = rng.between(1, 256);
        let data = rng.vec(4 * global, Rng::f32);
        let input = buffer(&data);
        let range = NdRange::new([global]).local([local]);
        let out = run_both(&private_array, &range, &vec![0.0f32; 4 * global], |l, o| {
            l.arg(&input).arg(o)
        });
        let mut model = Vec::with_capacity(4 * global);
        for (start, size) in groups_of(global, local) {
            let mut v: Vec<[f32; 4]> = (start..start + size)
                .map(|g| {
                    [
                        data[4 * g],
                        data[4 * g + 1],
                        data[4 * g + 2],
                        data[4 * g + 3],
                    ]
                })
                .collect();
            let s: Vec<f32> = v.iter().map(|w| w[0] + w[1]).collect();
            for (i, w) in v.iter_mut().enumerate() {
                w[1] += s[(i + 1) % size];
                w[3] *= 2.0;
                w.swap(0, 2);
            }
            let s: Vec<f32> = v.iter().map(|w| w[2] - w[3]).collect();
            for (i, w) in v.iter_mut().enumerate() {
                w[0] -= s[(i + size - 1) % size];
            }
            model.extend(v.into_iter().flatten());
        }
        check(
            &format!("private_array case {case}: global {global}, local {local}"),
            out,
            Some(model),
        );
    }
}

/// Ids and cheap functions of them used across barriers: recomputed in each region, none
/// kept per work-item.
#[kernel]
fn recomputed_ids(input: &[u32], out: &mut [u32]) {
    let first = local_array::<u32, 256>();
    let second = local_array::<u32, 256>();
    let lid = local_id(0);
    let gid = global_id(0);
    let n = local_size(0);
    let mirror = n - 1 - lid;
    let wide = gid * 2 + group_id(0);
    first[lid] = input[gid];
    barrier();
    second[lid] = first[mirror].wrapping_add(wide as u32);
    barrier();
    out[gid] = second[(lid + 1) % n] ^ (mirror as u32) ^ (gid as u32);
}

#[test]
fn recomputed_ids_give_each_region_the_work_items_own() {
    let mut rng = Rng::new("recomputed_ids");
    for case in 0..CASES {
        let global = rng.between(1, 1000);
        let local = rng.between(1, 256);
        let data = rng.vec(global, Rng::u32);
        let input = buffer(&data);
        let range = NdRange::new([global]).local([local]);
        let out = run_both(&recomputed_ids, &range, &vec![0u32; global], |l, o| {
            l.arg(&input).arg(o)
        });
        let mut model = Vec::with_capacity(global);
        for (g, (start, n)) in groups_of(global, local).into_iter().enumerate() {
            let second: Vec<u32> = (0..n)
                .map(|i| data[start + n - 1 - i].wrapping_add(((start + i) * 2 + g) as u32))
                .collect();
            model.extend(
                (0..n).map(|i| second[(i + 1) % n] ^ (n - 1 - i) as u32 ^ (start + i) as u32),
            );
        }
        check(
            &format!("recomputed_ids case {case}: global {global}, local {local}"),
            out,
            Some(model),
        );
    }
}

/// A 1-D stencil in f64 with a halo in a local argument, writing a write-only buffer; the
/// centre value is kept across the barrier.
#[kernel]
fn stencil_f64(input: &[f64], #[write] out: &mut [f64], tile: Local<f64>, n: u32, edge: f64) {
    let lid = local_id(0);
    let gid = global_id(0);
    let size = local_size(0);
    let centre: f64 = input[gid];
    tile[lid + 1] = centre;
    if lid == 0 {
        tile[0] = if gid > 0 { input[gid - 1] } else { 0.0 };
    }
    if lid == size - 1 {
        tile[size + 1] = if gid + 1 < n as usize {
            input[gid + 1]
        } else {
            0.0
        };
    }
    barrier();
    out[gid] = edge * tile[lid] + 0.5 * centre + edge * tile[lid + 2];
}

#[test]
fn f64_stencil_with_a_halo_matches_the_serial_stencil() {
    let mut rng = Rng::new("stencil_f64");
    for case in 0..CASES {
        let global = rng.between(1, 1000);
        let local = rng.between(1, 256);
        let data = rng.vec(global, Rng::f64);
        let edge = rng.f64();
        let input = buffer(&data);
        let range = NdRange::new([global]).local([local]);
        let out = run_both(&stencil_f64, &range, &vec![0.0f64; global], |l, o| {
            l.arg(&input)
                .arg(o)
                .arg(Local::<f64>::new(local + 2))
                .arg(global as u32)
                .arg(edge)
        });
        let at = |i: isize| {
            if i < 0 || i as usize >= global {
                0.0
            } else {
                data[i as usize]
            }
        };
        let model = (0..global as isize)
            .map(|i| edge * at(i - 1) + 0.5 * at(i) + edge * at(i + 1))
            .collect();
        check(
            &format!("stencil_f64 case {case}: global {global}, local {local}"),
            out,
            Some(model),
        );
    }
}

/// Rank of each key in its group by an all-pairs count, the key stored at its rank: a
/// scattered store of integers.
#[kernel]
fn rank_sort(input: &[i32], out: &mut [i32]) {
    let keys = local_array::<i32, 256>();
    let lid = local_id(0);
    let key: i32 = input[global_id(0)];
    keys[lid] = key;
    barrier();
    let mut rank = 0;
    for other in 0..local_size(0) {
        let k = keys[other];
        if k < key || (k == key && other < lid) {
            rank += 1;
        }
    }
    out[group_id(0) * enqueued_local_size(0) + rank] = key;
}

#[test]
fn rank_sort_scatters_keys_to_their_ranks() {
    let mut rng = Rng::new("rank_sort");
    for case in 0..CASES {
        let global = rng.between(1, 600);
        let local = rng.between(1, 128);
        let data = rng.vec(global, |r| (r.u32() % 200) as i32 - 100);
        let input = buffer(&data);
        let range = NdRange::new([global]).local([local]);
        let out = run_both(&rank_sort, &range, &vec![0i32; global], |l, o| {
            l.arg(&input).arg(o)
        });
        let mut model = Vec::with_capacity(global);
        for chunk in data.chunks(local) {
            let mut c = chunk.to_vec();
            c.sort_unstable();
            model.extend(c);
        }
        check(
            &format!("rank_sort case {case}: global {global}, local {local}"),
            out,
            Some(model),
        );
    }
}

/// Work-items of a group exchange values through a written buffer across a barrier (its
/// global fence), after adding to the buffer's old contents.
#[kernel]
fn global_exchange(input: &[u32], out: &mut [u32]) {
    let gid = global_id(0);
    let first = group_id(0) * enqueued_local_size(0);
    let size = local_size(0);
    out[gid] = out[gid].wrapping_add(input[gid]);
    barrier();
    let partner: u32 = out[first + (gid - first + 1) % size];
    barrier();
    out[gid] ^= partner;
}

#[test]
fn written_buffer_carries_values_across_a_barrier() {
    let mut rng = Rng::new("global_exchange");
    for case in 0..CASES {
        let global = rng.between(1, 1000);
        let local = rng.between(1, 256);
        let data = rng.vec(global, Rng::u32);
        let old = rng.vec(global, Rng::u32);
        let input = buffer(&data);
        let range = NdRange::new([global]).local([local]);
        let out = run_both(&global_exchange, &range, &old, |l, o| l.arg(&input).arg(o));
        let mut model = Vec::with_capacity(global);
        for (start, size) in groups_of(global, local) {
            let sum = |i: usize| old[start + i].wrapping_add(data[start + i]);
            model.extend((0..size).map(|i| sum(i) ^ sum((i + 1) % size)));
        }
        check(
            &format!("global_exchange case {case}: global {global}, local {local}"),
            out,
            Some(model),
        );
    }
}

/// Early returns: of a whole group (a uniform condition) before the barriers, and of the
/// work-items past the end after the last barrier. Neither writes anything.
#[kernel]
fn early_return(input: &[f32], out: &mut [f32], n: u32, skipped: u32) {
    if group_id(0) == skipped as usize {
        return;
    }
    let tile = local_array::<f32, 256>();
    let lid = local_id(0);
    let gid = global_id(0);
    let size = local_size(0);
    tile[lid] = if gid < n as usize { input[gid] } else { 0.0 };
    barrier();
    if gid >= n as usize {
        return;
    }
    let left = tile[(lid + size - 1) % size];
    out[gid] = tile[lid] - left;
}

#[test]
fn early_return_after_the_last_barrier_skips_the_tail() {
    let mut rng = Rng::new("early_return");
    for case in 0..CASES {
        let local = rng.between(1, 256);
        let global = local * rng.between(1, 1024 / local);
        let n = rng.between(1, global);
        let skipped = rng.between(0, global / local);
        let data = rng.vec(n, Rng::f32);
        let input = buffer(&data);
        let range = NdRange::new([global]).local([local]);
        let out = run_both(&early_return, &range, &vec![9.0f32; global], |l, o| {
            l.arg(&input).arg(o).arg(n as u32).arg(skipped as u32)
        });
        let at = |i: usize| if i < n { data[i] } else { 0.0 };
        let model = (0..global)
            .map(|i| {
                if i >= n || i / local == skipped {
                    return 9.0;
                }
                let (start, lid) = (i - i % local, i % local);
                at(i) - at(start + (lid + local - 1) % local)
            })
            .collect();
        check(
            &format!(
                "early_return case {case}: n {n}, global {global}, local {local}, group {skipped} skipped"
            ),
            out,
            Some(model),
        );
    }
}

/// A nested `#[inline]` helper with barriers, called twice: each call rotates the group's
/// values by `by` places. (Its locals get a second name at the second call, `moved__2`,
/// which the non-snake-case lint flags: allowed in this module.)
mod helpers {

    use numatask_kernels::kernel;

    #[kernel]
    pub fn helper_barrier(input: &[f32], out: &mut [f32]) {
        let tile = local_array::<f32, 256>();
        #[inline]
        fn rotate(buf: numatask_kernels::Local<f32>, me: usize, by: usize) {
            let count = local_size(0);
            let moved: f32 = buf[(me + by) % count];
            barrier();
            buf[me] = moved;
            barrier();
        }
        let lid = local_id(0);
        tile[lid] = input[global_id(0)];
        barrier();
        rotate(tile, lid, 1);
        rotate(tile, lid, local_size(0) / 2);
        out[global_id(0)] = tile[lid] * 2.0;
    }

    /// A helper whose own local has the name of the variable its call passes.
    #[kernel]
    pub fn helper_same_names(input: &[u32], out: &mut [u32]) {
        let tile = local_array::<u32, 256>();
        #[inline]
        fn shift(buf: numatask_kernels::Local<u32>, i: usize) {
            let j = (i + 1) % local_size(0);
            let v: u32 = buf[j];
            barrier();
            buf[i] = v;
            barrier();
        }
        let j = local_id(0);
        tile[j] = input[global_id(0)];
        barrier();
        shift(tile, j);
        out[global_id(0)] = tile[j];
    }
}
use helpers::{helper_barrier, helper_same_names};

#[test]
fn inline_helper_with_barriers_rotates_twice() {
    let mut rng = Rng::new("helper_barrier");
    for case in 0..CASES {
        let global = rng.between(1, 900);
        let local = rng.between(1, 256);
        let data = rng.vec(global, Rng::f32);
        let input = buffer(&data);
        let range = NdRange::new([global]).local([local]);
        let out = run_both(&helper_barrier, &range, &vec![0.0f32; global], |l, o| {
            l.arg(&input).arg(o)
        });
        let mut model = Vec::with_capacity(global);
        for chunk in data.chunks(local) {
            let n = chunk.len();
            let by = 1 + n / 2;
            model.extend((0..n).map(|i| chunk[(i + by) % n] * 2.0));
        }
        check(
            &format!("helper_barrier case {case}: global {global}, local {local}"),
            out,
            Some(model),
        );
    }
}

// ---------------------------------------------------------------------------------------
// Kernels the macro gets wrong today: each test states the behaviour it should have.
// ---------------------------------------------------------------------------------------

/// A value the same for the whole group, read after an early return: work-items past `n`
/// never read it. (The input increases: the difference does not overflow.)
#[kernel]
fn read_after_return(input: &[u32], out: &mut [u32], n: u32) {
    let gid = global_id(0);
    if gid >= n as usize {
        return;
    }
    let base = input[group_id(0) * local_size(0)];
    out[gid] = input[gid] - base;
}

#[test]
fn uniform_value_after_an_early_return_is_read_only_by_the_work_items_that_reach_it() {
    let (n, local) = (1000usize, 16);
    let global = n.next_multiple_of(local) + local;
    let data: Vec<u32> = (0..n as u32).map(|i| i * 3 + 7).collect();
    let input = buffer(&data);
    let range = NdRange::new([global]).local([local]);
    let out = run_both(&read_after_return, &range, &vec![0u32; global], |l, o| {
        l.arg(&input).arg(o).arg(n as u32)
    });
    let model = (0..global)
        .map(|i| {
            if i < n {
                data[i] - data[i - i % local]
            } else {
                0
            }
        })
        .collect();
    check("read_after_return", out, Some(model));
}

#[test]
fn inline_helper_locals_do_not_capture_the_callers_names() {
    let (global, local) = (96, 32);
    let data: Vec<u32> = (0..global as u32).map(|i| i * i).collect();
    let input = buffer(&data);
    let range = NdRange::new([global]).local([local]);
    let out = run_both(&helper_same_names, &range, &vec![0u32; global], |l, o| {
        l.arg(&input).arg(o)
    });
    let model = (0..global)
        .map(|i| data[i - i % local + (i % local + 1) % local])
        .collect();
    check("helper_same_names", out, Some(model));
}

/// `uniform(..)` of a conjunction.
#[kernel]
fn uniform_conjunction(flags: &[u32], out: &mut [u32]) {
    let gid = global_id(0);
    let low: bool = flags[gid] > 0;
    let high: bool = flags[gid] > 1;
    if uniform(low && high) {
        barrier();
        out[gid] = 1;
    } else {
        barrier();
        out[gid] = 2;
    }
}

#[test]
fn uniform_conjunction_false_for_a_whole_group_passes_the_debug_check() {
    let (global, local) = (64, 16);
    let flags: Vec<u32> = (0..global as u32).map(|i| i / local as u32 % 3).collect();
    let input = buffer(&flags);
    let range = NdRange::new([global]).local([local]);
    let out = run_both(&uniform_conjunction, &range, &vec![0u32; global], |l, o| {
        l.arg(&input).arg(o)
    });
    let model = flags.iter().map(|&f| if f > 1 { 1 } else { 2 }).collect();
    check("uniform_conjunction", out, Some(model));
}

// ---------------------------------------------------------------------------------------
// The analysis' decisions, as each kernel's INFO reports them.
// ---------------------------------------------------------------------------------------

#[test]
fn ids_used_across_barriers_are_recomputed_not_kept() {
    let info = recomputed_ids::INFO;
    assert_eq!(info.recomputed, ["lid", "gid", "mirror", "wide"], "{info}");
    assert!(info.expanded.is_empty(), "{info}");
    assert_eq!(info.bytes_per_item, 0, "{info}");
    assert_eq!(info.uniform, ["n"], "{info}");

    assert_eq!(reduce_sum::INFO.recomputed, ["lid"], "{}", reduce_sum::INFO);
    assert!(reduce_sum::INFO.expanded.is_empty(), "{}", reduce_sum::INFO);
    assert_eq!(
        transpose::INFO.recomputed,
        ["lx", "ly"],
        "{}",
        transpose::INFO
    );
    assert!(transpose::INFO.expanded.is_empty(), "{}", transpose::INFO);
}

#[test]
fn values_living_across_barriers_are_kept_with_their_size() {
    assert_eq!(expanded(&matmul::INFO), [("acc", 4)], "{}", matmul::INFO);
    assert_eq!(matmul::INFO.bytes_per_item, 4, "{}", matmul::INFO);
    assert_eq!(
        expanded(&private_array::INFO),
        [("v", 16)],
        "{}",
        private_array::INFO
    );
    assert_eq!(
        expanded(&accumulator::INFO),
        [("acc", 4)],
        "{}",
        accumulator::INFO
    );
    assert_eq!(
        expanded(&stencil_f64::INFO),
        [("centre", 8)],
        "{}",
        stencil_f64::INFO
    );
    assert_eq!(
        expanded(&naive_prefix::INFO),
        [("sum", 8), ("steps", 8)],
        "{}",
        naive_prefix::INFO
    );
    assert_eq!(
        expanded(&rank_sort::INFO),
        [("key", 4)],
        "{}",
        rank_sort::INFO
    );
    assert_eq!(
        expanded(&asserted_uniform::INFO),
        [("count", 4), ("next", 4), ("flipped", 4)],
        "{}",
        asserted_uniform::INFO
    );
    assert_eq!(asserted_uniform::INFO.bytes_per_item, 12);
    assert_eq!(
        expanded(&helper_barrier::INFO),
        [("moved", 4), ("moved", 4)],
        "{}",
        helper_barrier::INFO
    );
    // Values used within one region only are never kept: the scan's temporaries, the sort's
    // swapped key, the early return's left neighbour.
    assert!(scan_exclusive::INFO.expanded.is_empty());
    assert!(odd_even_sort::INFO.expanded.is_empty());
    assert!(early_return::INFO.expanded.is_empty());
}

#[test]
fn loop_state_of_barrier_loops_is_computed_once_per_group() {
    let has = |info: &KernelInfo, names: &[&str]| {
        for n in names {
            assert!(
                info.uniform.contains(n),
                "`{n}` is not once per group: {info}"
            );
        }
    };
    has(&reduce_sum::INFO, &["s"]);
    has(&reduce_max::INFO, &["levels", "level", "stride"]);
    has(&reduce_any_size::INFO, &["count", "half"]);
    has(&scan_inclusive::INFO, &["in_front", "offset"]);
    has(&scan_exclusive::INFO, &["n", "offset", "active", "width"]);
    has(&matmul::INFO, &["side", "tiles", "t", "base"]);
    has(&nested_loops::INFO, &["n", "i", "j", "step", "k"]);
    has(&asserted_uniform::INFO, &["r"]);
}

#[test]
fn regions_are_the_parts_between_barriers() {
    // Before the first barrier, in the loop, after it.
    assert_eq!(reduce_sum::INFO.regions, 3, "{}", reduce_sum::INFO);
    // Before the loop, the loads and the products of each tile, the store.
    assert_eq!(matmul::INFO.regions, 4, "{}", matmul::INFO);
    // One barrier: two regions.
    assert_eq!(transpose::INFO.regions, 2, "{}", transpose::INFO);
    assert_eq!(stencil_f64::INFO.regions, 2, "{}", stencil_f64::INFO);
    // Five barriers in a row: six regions.
    assert_eq!(accumulator::INFO.regions, 6, "{}", accumulator::INFO);
}

#[test]
fn local_arrays_are_counted_in_local_bytes() {
    assert_eq!(scan_inclusive::INFO.local_bytes, 2 * 256 * 4);
    assert_eq!(transpose::INFO.local_bytes, TILE * (TILE + 1) * 4);
    assert_eq!(matmul::INFO.local_bytes, 2 * TILE * TILE * 4);
    // A local argument is not part of it.
    assert_eq!(reduce_sum::INFO.local_bytes, 0);
    // Element sizes count: 256 keys of 4 bytes and a flag of 1.
    assert_eq!(odd_even_sort::INFO.local_bytes, 256 * 4 + 1);
}

// Kernels that once failed to compile: each now compiles, and its compiled form matches its
// reference form and a serial model.

/// A uniform value computed with a method call between two work-item statements (once a
/// split of the region, which made `x` live across it), a format string naming a variable
/// kept across a barrier, and a name used twice (renamed inside the macro).
#[kernel]
fn uniform_method_and_format(input: &[f32], out: &mut [f32], n: u32) {
    let gid = global_id(0);
    let x: f32 = input[gid];
    let scale = (n as f32).sqrt();
    let n = n as usize;
    barrier();
    assert!(x >= 0.0, "negative input {x} at {gid}");
    out[gid] = x * scale + n as f32;
}

#[test]
fn uniform_calls_format_captures_and_renamed_names_compile_and_match() {
    let mut rng = Rng::new("uniform_calls_format_captures_and_renamed_names_compile_and_match");
    for _ in 0..4 {
        let local = rng.pick(&[16usize, 32, 64]);
        let global = local * rng.between(1, 6);
        let n = rng.between(1, 50) as u32;
        let data = rng.vec(global, |r| r.f32().abs());
        let input = buffer(&data);
        let range = NdRange::new([global]).local([local]);
        let out = run_both(
            &uniform_method_and_format,
            &range,
            &vec![0f32; global],
            |l, o| l.arg(&input).arg(o).arg(n),
        );
        let model = data
            .iter()
            .map(|&x| x * (n as f32).sqrt() + n as f32)
            .collect();
        check("uniform_method_and_format", out, Some(model));
    }
    assert_eq!(uniform_method_and_format::INFO.regions, 2);
    assert_eq!(uniform_method_and_format::INFO.bytes_per_item, 4);
}

/// `uniform(..)` in a `for` range and in a `let`; a uniform variable set in a uniform `if`
/// without a barrier; items declared in the body and used in several regions; a private
/// array indexed by a kept variable, and a method that borrows it.
#[kernel]
fn asserted_ranges_and_items(input: &[u32], out: &mut [u32], flags: &[u32]) {
    const TILE: usize = 32;
    fn square(v: u32) -> u32 {
        v.wrapping_mul(v)
    }
    let tile = local_array::<u32, TILE>();
    let lid = local_id(0);
    let f = flags[group_id(0)];
    let mut rounds = 1;
    if f > 2 {
        rounds = 2;
    }
    let go = uniform(f as usize + lid * 0 != 0);
    let k: usize = lid % 4;
    let mut v: [u32; 4] = [0; 4];
    tile[lid] = square(input[global_id(0)]);
    barrier();
    for _ in 0..uniform(rounds + lid * 0) {
        v[k] += tile[(lid + 1) % local_size(0)];
        barrier();
    }
    if go {
        barrier();
    }
    let s: u32 = v.iter().sum();
    out[global_id(0)] = square(s % 1000);
}

#[test]
fn asserted_ranges_group_ifs_items_and_private_arrays_compile_and_match() {
    let mut rng = Rng::new("asserted_ranges_group_ifs_items_and_private_arrays_compile_and_match");
    for _ in 0..4 {
        let local = rng.pick(&[8usize, 16, 32]);
        let groups = rng.between(1, 5);
        let global = local * groups;
        let data = rng.vec(global, |r| r.u32() % 100);
        let flags = rng.vec(groups, |r| r.u32() % 5);
        let (input, fl) = (buffer(&data), buffer(&flags));
        let range = NdRange::new([global]).local([local]);
        let out = run_both(
            &asserted_ranges_and_items,
            &range,
            &vec![0u32; global],
            |l, o| l.arg(&input).arg(o).arg(&fl),
        );
        let model = (0..global)
            .map(|i| {
                let (g, lid) = (i / local, i % local);
                let rounds = if flags[g] > 2 { 2 } else { 1 };
                let next = data[g * local + (lid + 1) % local];
                let s = (next.wrapping_mul(next)).wrapping_mul(rounds);
                let s = s % 1000;
                s.wrapping_mul(s)
            })
            .collect();
        check("asserted_ranges_and_items", out, Some(model));
    }
    // `rounds` stays a scalar of the group though an `if` sets it.
    assert!(asserted_ranges_and_items::INFO.uniform.contains(&"rounds"));
}

/// A variable kept across a barrier, declared without a value and set in both branches.
#[kernel]
fn deferred_init(input: &[f32], out: &mut [f32]) {
    let gid = global_id(0);
    let x: f32;
    if gid % 2 == 0 {
        x = input[gid];
    } else {
        x = -input[gid];
    }
    barrier();
    out[gid] = x;
}

#[test]
fn a_kept_variable_set_after_its_declaration_compiles_and_matches() {
    let data: Vec<f32> = (0..128).map(|i| i as f32 * 0.5).collect();
    let input = buffer(&data);
    let range = NdRange::new([128]).local([32]);
    let out = run_both(&deferred_init, &range, &vec![0f32; 128], |l, o| {
        l.arg(&input).arg(o)
    });
    let model = data
        .iter()
        .enumerate()
        .map(|(i, &v)| if i % 2 == 0 { v } else { -v })
        .collect();
    check("deferred_init", out, Some(model));
    assert_eq!(deferred_init::INFO.bytes_per_item, 4);
}

/// A region that tests the local id for equality with a value of the group (one work-item
/// writes the group's total, as a scan's last does), and for inequality. The value may lie
/// past the group (no work-item matches), and an edge group is smaller.
#[kernel]
fn equal_to_one_item(out: &mut [u32], sums: &mut [u32], pick: u32) {
    let lid = local_id(0);
    let k = (group_id(0) * pick as usize) % (local_size(0) + 2);
    let v = (global_id(0) * 7 + 1) as u32;
    out[global_id(0)] = v;
    if lid == k {
        sums[group_id(0)] = v;
    }
    if k != lid {
        out[global_id(0)] = v + 1;
    }
}

#[test]
fn a_region_cut_around_the_one_work_item_an_equality_picks_matches_its_model() {
    let mut rng = Rng::new("equal_to_one_item");
    for case in 0..CASES {
        let local = rng.pick(&[1, 2, 3, 16, 37, 64]);
        let global = rng.between(1, 300);
        let pick = rng.between(0, 9) as u32;
        let groups = global.div_ceil(local);
        let range = NdRange::new([global]).local([local]);
        let sums = buffer(&vec![0u32; groups]);
        let out = run_both(&equal_to_one_item, &range, &vec![0u32; global], |l, o| {
            l.arg(o).arg(&sums).arg(pick)
        });
        let mut model = vec![0u32; global];
        // `local_size(0)` is the group's own: an edge group's is smaller.
        for (g, (start, size)) in groups_of(global, local).into_iter().enumerate() {
            let k = (g * pick as usize) % (size + 2);
            for lid in 0..size {
                let v = ((start + lid) * 7 + 1) as u32;
                model[start + lid] = if lid == k { v } else { v + 1 };
            }
        }
        check(
            &format!("equal_to_one_item case {case}: {global} in groups of {local}, pick {pick}"),
            out,
            Some(model),
        );
        let got = ctx()
            .queue()
            .read(&sums, 0..groups)
            .unwrap()
            .wait()
            .unwrap();
        for (g, (start, size)) in groups_of(global, local).into_iter().enumerate() {
            let k = (g * pick as usize) % (size + 2);
            let want = if k < size {
                ((start + k) * 7 + 1) as u32
            } else {
                0
            };
            assert_eq!(got[g], want, "case {case}: group {g}'s sum");
        }
    }
}
