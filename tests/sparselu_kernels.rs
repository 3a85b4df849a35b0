//! The SparseLU benchmark's C kernels (`bench/c/sparselu_kernels.c`, linked by build.rs) run
//! `bmod` and `fwd` in loop orders the compiler vectorizes; they must still compute what
//! BOTS' loop nests compute, bit for bit: the same operations on each element in the same
//! order. The references below are BOTS' nests, in Rust (which, like the C build, contracts
//! no multiply-add into an FMA).

use std::os::raw::c_int;

// The kernels come in numatask's library, with which build.rs bundles them.
use numatask as _;

unsafe extern "C" {
    fn sparselu_fwd(diag: *const f32, col: *mut f32, bs: c_int);
    fn sparselu_bmod(row: *const f32, col: *const f32, inner: *mut f32, bs: c_int);
}

/// BOTS' `bmod`: i-j-k, each element of `inner` minus a dot product down a column of `col`.
fn bmod_bots(row: &[f32], col: &[f32], inner: &mut [f32], bs: usize) {
    for i in 0..bs {
        for j in 0..bs {
            for k in 0..bs {
                inner[i * bs + j] -= row[i * bs + k] * col[k * bs + j];
            }
        }
    }
}

/// BOTS' `fwd`: j-k-i.
fn fwd_bots(diag: &[f32], col: &mut [f32], bs: usize) {
    for j in 0..bs {
        for k in 0..bs {
            for i in k + 1..bs {
                col[i * bs + j] -= diag[i * bs + k] * col[k * bs + j];
            }
        }
    }
}

/// Pseudo-random values in [-1, 1), a fixed sequence per seed.
fn block(bs: usize, seed: &mut u64) -> Vec<f32> {
    (0..bs * bs)
        .map(|_| {
            *seed = seed
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            ((*seed >> 40) as f32 / (1u64 << 24) as f32) * 2.0 - 1.0
        })
        .collect()
}

#[test]
fn the_kernels_compute_bots_loop_nests_bit_for_bit() {
    let mut seed = 0x5eed;
    for bs in (1..=101).step_by(5).chain([25, 100]) {
        let (a, b, c) = (
            block(bs, &mut seed),
            block(bs, &mut seed),
            block(bs, &mut seed),
        );
        let n = c_int::try_from(bs).unwrap();

        let (mut ours, mut bots) = (c.clone(), c.clone());
        // SAFETY: three distinct blocks of bs * bs elements each.
        unsafe { sparselu_bmod(a.as_ptr(), b.as_ptr(), ours.as_mut_ptr(), n) };
        bmod_bots(&a, &b, &mut bots, bs);
        assert_eq!(bits(&ours), bits(&bots), "bmod, bs = {bs}");

        let (mut ours, mut bots) = (c.clone(), c);
        // SAFETY: two distinct blocks of bs * bs elements each.
        unsafe { sparselu_fwd(a.as_ptr(), ours.as_mut_ptr(), n) };
        fwd_bots(&a, &mut bots, bs);
        assert_eq!(bits(&ours), bits(&bots), "fwd, bs = {bs}");
    }
}

fn bits(v: &[f32]) -> Vec<u32> {
    v.iter().map(|x| x.to_bits()).collect()
}
