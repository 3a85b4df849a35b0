//! The SparseLU benchmark's C kernels (`c/sparselu_kernels.c`, linked by build.rs) run
//! `bmod` and `fwd` in loop orders the compiler vectorizes; they must still compute what
//! BOTS' loop nests compute, bit for bit: the same operations on each element in the same
//! order. The references below are BOTS' nests, in Rust (which, like the C build, contracts
//! no multiply-add into an FMA).

use numatask_bench::ffi::sparselu;

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

        let (mut ours, mut bots) = (c.clone(), c.clone());
        sparselu::bmod(&a, &b, &mut ours, bs);
        bmod_bots(&a, &b, &mut bots, bs);
        assert_eq!(bits(&ours), bits(&bots), "bmod, bs = {bs}");

        let (mut ours, mut bots) = (c.clone(), c);
        sparselu::fwd(&a, &mut ours, bs);
        fwd_bots(&a, &mut bots, bs);
        assert_eq!(bits(&ours), bits(&bots), "fwd, bs = {bs}");
    }
}

fn bits(v: &[f32]) -> Vec<u32> {
    v.iter().map(|x| x.to_bits()).collect()
}
