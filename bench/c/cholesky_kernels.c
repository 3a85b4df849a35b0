/* Tile kernels of the blocked Cholesky factorization; see cholesky.h. Row-major bs x bs
 * tiles, plain loops (no BLAS), so every driver runs exactly the same arithmetic. */
#include <math.h>
#include "cholesky.h"

void cholesky_fill_tile(double *tile, int nt, int bs, int ti, int tj) {
    const int n = nt * bs;
    for (int i = 0; i < bs; i++)
        for (int j = 0; j < bs; j++) {
            long gi = (long)ti * bs + i, gj = (long)tj * bs + j;
            double v;
            if (gi == gj) {
                v = n;
            } else {
                /* A symmetric hash of the position: the same for (gi, gj) and (gj, gi). */
                unsigned long lo = gi < gj ? gi : gj, hi = gi < gj ? gj : gi;
                unsigned long h = (lo * 2654435761UL) ^ (hi * 40503UL + 0x9E3779B9UL);
                h ^= h >> 13;
                h *= 0x5bd1e995UL;
                h ^= h >> 15;
                v = (double)(h % 65536) / 65536.0 - 0.5;
            }
            tile[i * bs + j] = v;
        }
}

void cholesky_potrf(double *a, int bs) {
    for (int j = 0; j < bs; j++) {
        double d = a[j * bs + j];
        for (int k = 0; k < j; k++) d -= a[j * bs + k] * a[j * bs + k];
        d = sqrt(d);
        a[j * bs + j] = d;
        for (int i = j + 1; i < bs; i++) {
            double s = a[i * bs + j];
            for (int k = 0; k < j; k++) s -= a[i * bs + k] * a[j * bs + k];
            a[i * bs + j] = s / d;
        }
    }
}

void cholesky_trsm(const double *l, double *b, int bs) {
    for (int r = 0; r < bs; r++)
        for (int j = 0; j < bs; j++) {
            double s = b[r * bs + j];
            for (int k = 0; k < j; k++) s -= b[r * bs + k] * l[j * bs + k];
            b[r * bs + j] = s / l[j * bs + j];
        }
}

void cholesky_syrk(const double *a, double *c, int bs) {
    for (int i = 0; i < bs; i++)
        for (int j = 0; j <= i; j++) {
            double s = c[i * bs + j];
            for (int k = 0; k < bs; k++) s -= a[i * bs + k] * a[j * bs + k];
            c[i * bs + j] = s;
        }
}

void cholesky_gemm(const double *a, const double *b, double *c, int bs) {
    for (int i = 0; i < bs; i++)
        for (int j = 0; j < bs; j++) {
            double s = c[i * bs + j];
            for (int k = 0; k < bs; k++) s -= a[i * bs + k] * b[j * bs + k];
            c[i * bs + j] = s;
        }
}
