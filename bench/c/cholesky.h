/* Blocked (tiled) Cholesky factorization A = L L^T of a symmetric positive definite matrix of
 * nt x nt tiles of bs x bs doubles, lower triangle only: the kernels and the matrix generator.
 * The identical code is linked into the C/OpenMP driver (cholesky_omp.c) and into numatask's
 * Rust driver (benches/cholesky.rs), so that the runtime is the only difference. */
#ifndef NUMATASK_CHOLESKY_H
#define NUMATASK_CHOLESKY_H

/* Fills tile (ti, tj), ti >= tj, of the nt x nt tile matrix: off-diagonal elements are
 * pseudo-random in [-0.5, 0.5) (a function of the element's global position), diagonal
 * elements are nt * bs, so the matrix is diagonally dominant, hence positive definite. Only
 * the lower triangle of diagonal tiles is meaningful. */
void cholesky_fill_tile(double *tile, int nt, int bs, int ti, int tj);

/* diag = L with diag = L L^T (lower triangle; the strict upper triangle is left as it is). */
void cholesky_potrf(double *diag, int bs);
/* b = b L^-T: the tile below a factored diagonal tile L. */
void cholesky_trsm(const double *l, double *b, int bs);
/* c -= a a^T: a diagonal tile's update from the tile left of it. */
void cholesky_syrk(const double *a, double *c, int bs);
/* c -= a b^T: an off-diagonal tile's update. */
void cholesky_gemm(const double *a, const double *b, double *c, int bs);
#endif
