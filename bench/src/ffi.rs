//! The C kernels of the dependent-task benchmarks (`c/sparselu_kernels.c`,
//! `c/cholesky_kernels.c`, `c/qr_kernels.c`, compiled and linked by `build.rs`), declared once and wrapped as safe
//! functions on slices of `bs * bs` elements. numatask's drivers and the C/OpenMP peers call the
//! same object code, so that the runtime is the only difference between them.
//!
//! Every wrapper checks that each block holds `bs * bs` elements before handing its pointer to
//! C; a block of another length is a bug of the driver and panics.

use std::ffi::c_int;

/// `x` as the C kernels' `int`: block counts and sides are bounded by the benches' arguments
/// (at most 1000), far below `c_int::MAX`.
fn int(x: usize) -> c_int {
    c_int::try_from(x).expect("block counts and sides fit a C int")
}

/// `bs` as a C int, after checking that every block length in `blocks` is `bs * bs`.
fn side(bs: usize, blocks: &[usize]) -> c_int {
    assert!(
        blocks.iter().all(|&len| len == bs * bs),
        "blocks of bs * bs elements"
    );
    int(bs)
}

/// BOTS SparseLU's kernels on `f32` blocks (`c/sparselu.h`).
pub mod sparselu {
    use std::ffi::c_int;

    use super::{int, side};

    unsafe extern "C" {
        fn sparselu_block_present(nb: c_int, ii: c_int, jj: c_int) -> c_int;
        fn sparselu_fill_block(block: *mut f32, bs: c_int, seed: *mut c_int);
        fn sparselu_seed() -> c_int;
        fn sparselu_lu0(diag: *mut f32, bs: c_int);
        fn sparselu_fwd(diag: *const f32, col: *mut f32, bs: c_int);
        fn sparselu_bdiv(diag: *const f32, row: *mut f32, bs: c_int);
        fn sparselu_bmod(row: *const f32, col: *const f32, inner: *mut f32, bs: c_int);
    }

    /// Whether block `(ii, jj)` of an `nb x nb` matrix is present at the start (BOTS' pattern
    /// of null blocks).
    pub fn present(nb: usize, ii: usize, jj: usize) -> bool {
        // SAFETY: a pure function of its arguments.
        unsafe { sparselu_block_present(int(nb), int(ii), int(jj)) != 0 }
    }

    /// The seed of BOTS' generator for the first block.
    pub fn seed() -> c_int {
        // SAFETY: a pure function.
        unsafe { sparselu_seed() }
    }

    /// Fills `block` with BOTS' pseudo-random values, advancing `seed`.
    pub fn fill(block: &mut [f32], bs: usize, seed: &mut c_int) {
        let bs = side(bs, &[block.len()]);
        // SAFETY: `block` holds bs * bs floats; the kernel writes exactly those.
        unsafe { sparselu_fill_block(block.as_mut_ptr(), bs, seed) }
    }

    /// Factors the diagonal block in place.
    pub fn lu0(diag: &mut [f32], bs: usize) {
        let bs = side(bs, &[diag.len()]);
        // SAFETY: bs * bs floats, exclusively borrowed.
        unsafe { sparselu_lu0(diag.as_mut_ptr(), bs) }
    }

    /// Forward substitution of a block of the diagonal's row by the factored diagonal.
    pub fn fwd(diag: &[f32], col: &mut [f32], bs: usize) {
        let bs = side(bs, &[diag.len(), col.len()]);
        // SAFETY: bs * bs floats each; `col` is exclusively borrowed, so it does not alias
        // `diag`.
        unsafe { sparselu_fwd(diag.as_ptr(), col.as_mut_ptr(), bs) }
    }

    /// Division of a block of the diagonal's column by the factored diagonal.
    pub fn bdiv(diag: &[f32], row: &mut [f32], bs: usize) {
        let bs = side(bs, &[diag.len(), row.len()]);
        // SAFETY: as for `fwd`.
        unsafe { sparselu_bdiv(diag.as_ptr(), row.as_mut_ptr(), bs) }
    }

    /// `inner -= row * col`.
    pub fn bmod(row: &[f32], col: &[f32], inner: &mut [f32], bs: usize) {
        let bs = side(bs, &[row.len(), col.len(), inner.len()]);
        // SAFETY: bs * bs floats each; `inner` is exclusively borrowed and aliases neither
        // input.
        unsafe { sparselu_bmod(row.as_ptr(), col.as_ptr(), inner.as_mut_ptr(), bs) }
    }
}

/// The tiled Cholesky factorization's kernels on `f64` tiles (`c/cholesky.h`).
pub mod cholesky {
    use std::ffi::c_int;

    use super::{int, side};

    unsafe extern "C" {
        fn cholesky_fill_tile(tile: *mut f64, nt: c_int, bs: c_int, ti: c_int, tj: c_int);
        fn cholesky_potrf(diag: *mut f64, bs: c_int);
        fn cholesky_trsm(l: *const f64, b: *mut f64, bs: c_int);
        fn cholesky_syrk(a: *const f64, c: *mut f64, bs: c_int);
        fn cholesky_gemm(a: *const f64, b: *const f64, c: *mut f64, bs: c_int);
    }

    /// Writes tile `(ti, tj)` of the symmetric positive definite `nt x nt`-tile input.
    pub fn fill(tile: &mut [f64], nt: usize, bs: usize, ti: usize, tj: usize) {
        let b = side(bs, &[tile.len()]);
        // SAFETY: `tile` holds bs * bs doubles; the kernel writes exactly those.
        unsafe { cholesky_fill_tile(tile.as_mut_ptr(), int(nt), b, int(ti), int(tj)) }
    }

    /// Factors the diagonal tile in place (its lower triangle).
    pub fn potrf(diag: &mut [f64], bs: usize) {
        let bs = side(bs, &[diag.len()]);
        // SAFETY: bs * bs doubles, exclusively borrowed.
        unsafe { cholesky_potrf(diag.as_mut_ptr(), bs) }
    }

    /// `b = b * l^-T`, a tile below the diagonal by the factored diagonal tile `l`.
    pub fn trsm(l: &[f64], b: &mut [f64], bs: usize) {
        let bs = side(bs, &[l.len(), b.len()]);
        // SAFETY: bs * bs doubles each; `b` is exclusively borrowed and does not alias `l`.
        unsafe { cholesky_trsm(l.as_ptr(), b.as_mut_ptr(), bs) }
    }

    /// `c -= a * a^T`, a diagonal tile's update.
    pub fn syrk(a: &[f64], c: &mut [f64], bs: usize) {
        let bs = side(bs, &[a.len(), c.len()]);
        // SAFETY: as for `trsm`.
        unsafe { cholesky_syrk(a.as_ptr(), c.as_mut_ptr(), bs) }
    }

    /// `c -= a * b^T`, an off-diagonal tile's update.
    pub fn gemm(a: &[f64], b: &[f64], c: &mut [f64], bs: usize) {
        let bs = side(bs, &[a.len(), b.len(), c.len()]);
        // SAFETY: bs * bs doubles each; `c` is exclusively borrowed and aliases neither input.
        unsafe { cholesky_gemm(a.as_ptr(), b.as_ptr(), c.as_mut_ptr(), bs) }
    }
}

/// The tiled QR factorization's kernels on `f64` tiles (`c/qr.h`).
pub mod qr {
    use std::ffi::c_int;

    use super::{int, side};

    unsafe extern "C" {
        fn qr_fill_tile(tile: *mut f64, nt: c_int, bs: c_int, ti: c_int, tj: c_int);
        fn qr_geqrt(a: *mut f64, t: *mut f64, bs: c_int);
        fn qr_ormqr(v: *const f64, t: *const f64, c: *mut f64, bs: c_int);
        fn qr_tsqrt(r: *mut f64, a: *mut f64, t: *mut f64, bs: c_int);
        fn qr_tsmqr(c1: *mut f64, c2: *mut f64, v: *const f64, t: *const f64, bs: c_int);
    }

    /// Writes tile `(ti, tj)` of the pseudo-random `nt x nt`-tile input.
    pub fn fill(tile: &mut [f64], nt: usize, bs: usize, ti: usize, tj: usize) {
        let b = side(bs, &[tile.len()]);
        // SAFETY: `tile` holds bs * bs doubles; the kernel writes exactly those.
        unsafe { qr_fill_tile(tile.as_mut_ptr(), int(nt), b, int(ti), int(tj)) }
    }

    /// Factors a diagonal tile in place (R above, V below its diagonal) and writes its `t`.
    pub fn geqrt(a: &mut [f64], t: &mut [f64], bs: usize) {
        let bs = side(bs, &[a.len(), t.len()]);
        // SAFETY: bs * bs doubles each, exclusively borrowed, distinct.
        unsafe { qr_geqrt(a.as_mut_ptr(), t.as_mut_ptr(), bs) }
    }

    /// `c = Q^T c` for the factored diagonal tile `v` and its `t`.
    pub fn ormqr(v: &[f64], t: &[f64], c: &mut [f64], bs: usize) {
        let bs = side(bs, &[v.len(), t.len(), c.len()]);
        // SAFETY: bs * bs doubles each; `c` is exclusively borrowed and aliases neither input.
        unsafe { qr_ormqr(v.as_ptr(), t.as_ptr(), c.as_mut_ptr(), bs) }
    }

    /// Factors the triangle `r` on top of the tile `a` (which becomes V) and writes `t`.
    pub fn tsqrt(r: &mut [f64], a: &mut [f64], t: &mut [f64], bs: usize) {
        let bs = side(bs, &[r.len(), a.len(), t.len()]);
        // SAFETY: bs * bs doubles each, exclusively borrowed, distinct.
        unsafe { qr_tsqrt(r.as_mut_ptr(), a.as_mut_ptr(), t.as_mut_ptr(), bs) }
    }

    /// `[c1; c2] = Q^T [c1; c2]` for the V and T of a `tsqrt`.
    pub fn tsmqr(c1: &mut [f64], c2: &mut [f64], v: &[f64], t: &[f64], bs: usize) {
        let bs = side(bs, &[c1.len(), c2.len(), v.len(), t.len()]);
        // SAFETY: bs * bs doubles each; `c1` and `c2` are exclusively borrowed and alias
        // neither each other nor the inputs.
        unsafe { qr_tsmqr(c1.as_mut_ptr(), c2.as_mut_ptr(), v.as_ptr(), t.as_ptr(), bs) }
    }
}
