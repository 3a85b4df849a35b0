/* Tiled QR factorization A = QR of a matrix of nt x nt tiles of bs x bs doubles (row-major
 * tiles), with PLASMA's four kernels and no inner blocking: geqrt (QR of a diagonal tile),
 * ormqr (its Q^T applied to a tile right of it), tsqrt (QR of a triangle on top of a tile
 * below it), tsmqr (that Q^T applied to a pair of tiles). Each kernel leaves R in the upper
 * triangle of the tile it factors and the Householder vectors V below the diagonal (geqrt) or
 * in the whole tile below (tsqrt); T is the triangular factor of the compact WY form, Q = I -
 * V T V^T. The identical code is linked into the C/OpenMP driver (qr_omp.c) and numatask's
 * Rust driver (benches/qr.rs), so that the runtime is the only difference. */
#ifndef NUMATASK_QR_H
#define NUMATASK_QR_H

/* Fills tile (ti, tj) of the nt x nt tile matrix with pseudo-random values in [-0.5, 0.5), a
 * function of each element's global position. */
void qr_fill_tile(double *tile, int nt, int bs, int ti, int tj);

/* a = QR: R in a's upper triangle, V below its diagonal (unit diagonal implied); t = T. */
void qr_geqrt(double *a, double *t, int bs);
/* c = Q^T c for the Q of geqrt's (v, t) (v: the factored tile, only below its diagonal read). */
void qr_ormqr(const double *v, const double *t, double *c, int bs);
/* [r; a] = QR: r's upper triangle is the R on top (updated; below its diagonal untouched), a
 * the tile below (becomes V); t = T. */
void qr_tsqrt(double *r, double *a, double *t, int bs);
/* [c1; c2] = Q^T [c1; c2] for the Q of tsqrt's (v, t). */
void qr_tsmqr(double *c1, double *c2, const double *v, const double *t, int bs);
#endif
