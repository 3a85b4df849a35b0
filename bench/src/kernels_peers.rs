//! The Rust peers of the kernel executor's saxpy benchmark, `y[i] = a*x[i] + y[i]`: the same
//! loop serially, split by rayon, and split over plain threads. They bound what the kernel
//! executor should reach on a memory-bound kernel without any OpenCL machinery: a launch of
//! the executor's saxpy that is slower than [`saxpy_threads`] with as many threads pays for
//! its scheduling, not for the memory traffic. The OpenCL peers are `c/ocl_bench.c`.
//!
//! Every version computes `a * x + y` as a multiplication and then an addition, each rounded,
//! as C does without contraction; an OpenCL compiler may fuse them into one FMA (OpenCL C
//! allows contraction by default), which changes the last bit of some results, never the
//! time of a loop bound by memory.

use rayon::prelude::*;

/// The fewest elements a rayon job of [`saxpy_rayon`] gets: 16 Ki floats are 192 KiB of
/// traffic (x and y read, y written), some microseconds of streaming, which a job's cost
/// (about a microsecond to split, steal and join) does not dominate; 2^24 elements still
/// make 1024 jobs, enough to balance any thread count of one host.
pub const RAYON_MIN_LEN: usize = 1 << 14;

/// `y[i] = a * x[i] + y[i]` on the calling thread.
///
/// The loop vectorizes: in a release build for the x86-64 baseline (SSE2) its body is packed
/// single-precision multiplications and additions, `mulps` and `addps` on two registers of
/// four floats per iteration, then a scalar loop for the last few elements (`vmulps`/`vaddps`
/// with AVX enabled). The zip of two slice iterators leaves no bounds check in the loop, and
/// `&mut` rules out aliasing, so no overlap check precedes it. Checked with `objdump -d` on
/// the release build of this crate's library, where the leaf loops of [`saxpy_rayon`] and
/// the chunks of [`saxpy_threads`] hold the same packed instructions.
///
/// # Panics
/// If `x` and `y` differ in length.
pub fn saxpy_serial(a: f32, x: &[f32], y: &mut [f32]) {
    assert_eq!(x.len(), y.len(), "saxpy: x and y differ in length");
    for (yi, &xi) in y.iter_mut().zip(x) {
        *yi += a * xi;
    }
}

/// `y[i] = a * x[i] + y[i]` on rayon's global pool: an indexed parallel zip, split into jobs
/// of at least [`RAYON_MIN_LEN`] elements, each a loop that vectorizes as [`saxpy_serial`]'s.
///
/// # Panics
/// If `x` and `y` differ in length.
pub fn saxpy_rayon(a: f32, x: &[f32], y: &mut [f32]) {
    assert_eq!(x.len(), y.len(), "saxpy: x and y differ in length");
    y.par_iter_mut()
        .zip(x.par_iter())
        .with_min_len(RAYON_MIN_LEN)
        .for_each(|(yi, &xi)| *yi += a * xi);
}

/// `y[i] = a * x[i] + y[i]` on `threads` threads (0 is taken as 1), each one contiguous chunk
/// of about `len / threads` elements run by [`saxpy_serial`]; the calling thread runs the
/// last chunk, scoped threads the others. Threads are started for every call: the plain
/// loop a program without a runtime would write.
///
/// # Panics
/// If `x` and `y` differ in length, or a thread cannot be started.
pub fn saxpy_threads(threads: usize, a: f32, x: &[f32], y: &mut [f32]) {
    assert_eq!(x.len(), y.len(), "saxpy: x and y differ in length");
    let chunk = x.len().div_ceil(threads.max(1)).max(1);
    std::thread::scope(|s| {
        let mut chunks = y.chunks_mut(chunk).zip(x.chunks(chunk));
        let last = chunks.next_back();
        for (yc, xc) in chunks {
            s.spawn(move || saxpy_serial(a, xc, yc));
        }
        if let Some((yc, xc)) = last {
            saxpy_serial(a, xc, yc);
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Inputs whose every result is exact in f32, so each version must match to the bit.
    fn inputs(n: usize) -> (Vec<f32>, Vec<f32>, Vec<f32>) {
        let x: Vec<f32> = (0..n).map(|i| (i % 1024) as f32 * 0.125).collect();
        let y: Vec<f32> = (0..n).map(|i| ((i * 7) % 512) as f32).collect();
        let want = x.iter().zip(&y).map(|(&x, &y)| 0.5 * x + y).collect();
        (x, y, want)
    }

    #[test]
    fn serial_saxpy_adds_a_times_x_to_y() {
        let (x, mut y, want) = inputs(1000);
        saxpy_serial(0.5, &x, &mut y);
        assert_eq!(y, want);
    }

    #[test]
    fn rayon_saxpy_matches_serial_across_many_jobs() {
        let (x, mut y, want) = inputs(5 * RAYON_MIN_LEN + 17);
        saxpy_rayon(0.5, &x, &mut y);
        assert_eq!(y, want);
    }

    #[test]
    fn threaded_saxpy_covers_every_element_for_any_split() {
        // Lengths that divide evenly, leave a remainder, and are shorter than the thread count.
        for (n, threads) in [(4096, 4), (1001, 3), (5, 8), (1, 1), (0, 2), (100, 0)] {
            let (x, mut y, want) = inputs(n);
            saxpy_threads(threads, 0.5, &x, &mut y);
            assert_eq!(y, want, "n={n} threads={threads}");
        }
    }

    #[test]
    #[should_panic(expected = "differ in length")]
    fn saxpy_refuses_slices_of_different_lengths() {
        saxpy_threads(2, 1.0, &[1.0; 3], &mut [0.0; 4]);
    }
}
