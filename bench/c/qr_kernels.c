/* The tiled QR factorization's kernels (qr.h): Householder reflections, unblocked within a
 * tile, and the triangular factor T of their compact WY form (LAPACK's dgeqr2 and dlarft, and
 * PLASMA's tsqrt and tsmqr, written for one tile and no inner blocking). Row-major tiles:
 * element (r, c) of a tile at [r * bs + c]. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "qr.h"

#define AT(m, r, c) (m)[(size_t)(r) * bs + (c)]

void qr_fill_tile(double *tile, int nt, int bs, int ti, int tj) {
    const unsigned long n = (unsigned long)nt * bs;
    for (int r = 0; r < bs; r++)
        for (int c = 0; c < bs; c++) {
            unsigned long g = ((unsigned long)ti * bs + r) * n + (unsigned long)tj * bs + c;
            /* splitmix64 of the position, 53 bits, into [-0.5, 0.5). */
            unsigned long long z = (unsigned long long)g + 0x9e3779b97f4a7c15ULL;
            z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
            z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
            z ^= z >> 31;
            AT(tile, r, c) = (double)(z >> 11) / 9007199254740992.0 - 0.5;
        }
}

/* A scratch tile per thread for the kernels that apply reflectors (grown, never freed). */
static double *scratch(int bs) {
    static _Thread_local double *buf;
    static _Thread_local size_t cap;
    size_t need = (size_t)bs * bs;
    if (need > cap) {
        free(buf);
        buf = malloc(need * sizeof *buf);
        if (!buf) abort();
        cap = need;
    }
    return buf;
}

/* The reflector that zeroes a vector x below *alpha, given x's squared norm xn: returns tau
 * (0: nothing to zero) and sets *alpha to beta; the caller scales x by 1 / (alpha - beta). */
static double reflector(double *alpha, double xn) {
    if (xn == 0.0) return 0.0;
    double a = *alpha;
    double beta = -copysign(sqrt(a * a + xn), a);
    *alpha = beta;
    return (beta - a) / beta;
}

/* Column j of T from s_i (i < j, stored in t's column j): T(0:j, j) = -tau T(0:j, 0:j) s. */
static void t_column(double *t, int j, double tau, int bs) {
    AT(t, j, j) = tau;
    for (int i = 0; i < j; i++) {
        double v = 0.0;
        for (int k = i; k < j; k++) v += AT(t, i, k) * AT(t, k, j);
        AT(t, i, j) = -tau * v;
    }
}

/* w = T^T w for the upper triangular t, from the bottom row up, in place (row i of the result
 * needs rows 0..i of w, not yet overwritten). */
static void t_transpose_times(const double *t, double *w, int bs) {
    for (int i = bs - 1; i >= 0; i--) {
        double *wi = &AT(w, i, 0);
        double tii = AT(t, i, i);
        for (int col = 0; col < bs; col++) wi[col] *= tii;
        for (int k = 0; k < i; k++) {
            double tki = AT(t, k, i);
            for (int col = 0; col < bs; col++) wi[col] += tki * AT(w, k, col);
        }
    }
}

void qr_geqrt(double *a, double *t, int bs) {
    memset(t, 0, (size_t)bs * bs * sizeof *t);
    for (int j = 0; j < bs; j++) {
        double xn = 0.0;
        for (int i = j + 1; i < bs; i++) xn += AT(a, i, j) * AT(a, i, j);
        double alpha = AT(a, j, j);
        double tau = reflector(&alpha, xn);
        if (tau != 0.0) {
            double s = 1.0 / (AT(a, j, j) - alpha);
            for (int i = j + 1; i < bs; i++) AT(a, i, j) *= s;
            AT(a, j, j) = alpha;
            /* H = I - tau v v^T on the columns right of j, v = (1, a[j+1:, j]). */
            for (int c = j + 1; c < bs; c++) {
                double w = AT(a, j, c);
                for (int i = j + 1; i < bs; i++) w += AT(a, i, j) * AT(a, i, c);
                w *= tau;
                AT(a, j, c) -= w;
                for (int i = j + 1; i < bs; i++) AT(a, i, c) -= w * AT(a, i, j);
            }
        }
        /* s_i = v_i . v_j for i < j (v_i is 1 at row i, a[r, i] below). */
        for (int i = 0; i < j; i++) {
            double s = AT(a, j, i);
            for (int r = j + 1; r < bs; r++) s += AT(a, r, i) * AT(a, r, j);
            AT(t, i, j) = s;
        }
        t_column(t, j, tau, bs);
    }
}

void qr_ormqr(const double *v, const double *t, double *c, int bs) {
    double *w = scratch(bs);
    /* W = V^T C (V unit lower triangular), row by row. */
    for (int i = 0; i < bs; i++) {
        double *wi = &AT(w, i, 0);
        memcpy(wi, &AT(c, i, 0), (size_t)bs * sizeof *wi);
        for (int r = i + 1; r < bs; r++) {
            double vr = AT(v, r, i);
            for (int col = 0; col < bs; col++) wi[col] += vr * AT(c, r, col);
        }
    }
    t_transpose_times(t, w, bs);
    /* C -= V W. */
    for (int r = 0; r < bs; r++) {
        double *cr = &AT(c, r, 0);
        for (int col = 0; col < bs; col++) cr[col] -= AT(w, r, col);
        for (int i = 0; i < r; i++) {
            double vri = AT(v, r, i);
            for (int col = 0; col < bs; col++) cr[col] -= vri * AT(w, i, col);
        }
    }
}

void qr_tsqrt(double *r, double *a, double *t, int bs) {
    memset(t, 0, (size_t)bs * bs * sizeof *t);
    for (int j = 0; j < bs; j++) {
        double xn = 0.0;
        for (int i = 0; i < bs; i++) xn += AT(a, i, j) * AT(a, i, j);
        double alpha = AT(r, j, j);
        double tau = reflector(&alpha, xn);
        if (tau != 0.0) {
            double s = 1.0 / (AT(r, j, j) - alpha);
            for (int i = 0; i < bs; i++) AT(a, i, j) *= s;
            AT(r, j, j) = alpha;
            /* v = (e_j on top, a[:, j] below), on the columns right of j. */
            for (int c = j + 1; c < bs; c++) {
                double w = AT(r, j, c);
                for (int i = 0; i < bs; i++) w += AT(a, i, j) * AT(a, i, c);
                w *= tau;
                AT(r, j, c) -= w;
                for (int i = 0; i < bs; i++) AT(a, i, c) -= w * AT(a, i, j);
            }
        }
        /* s_i = v_i . v_j: the tops e_i, e_j are orthogonal; only the tiles below count. */
        for (int i = 0; i < j; i++) {
            double s = 0.0;
            for (int k = 0; k < bs; k++) s += AT(a, k, i) * AT(a, k, j);
            AT(t, i, j) = s;
        }
        t_column(t, j, tau, bs);
    }
}

void qr_tsmqr(double *c1, double *c2, const double *v, const double *t, int bs) {
    double *w = scratch(bs);
    /* W = C1 + V^T C2. */
    for (int i = 0; i < bs; i++) {
        double *wi = &AT(w, i, 0);
        memcpy(wi, &AT(c1, i, 0), (size_t)bs * sizeof *wi);
    }
    for (int r = 0; r < bs; r++) {
        const double *c2r = &AT(c2, r, 0);
        for (int i = 0; i < bs; i++) {
            double vri = AT(v, r, i);
            double *wi = &AT(w, i, 0);
            for (int col = 0; col < bs; col++) wi[col] += vri * c2r[col];
        }
    }
    t_transpose_times(t, w, bs);
    /* C1 -= W; C2 -= V W. */
    for (int i = 0; i < bs; i++)
        for (int col = 0; col < bs; col++) AT(c1, i, col) -= AT(w, i, col);
    for (int r = 0; r < bs; r++) {
        double *c2r = &AT(c2, r, 0);
        for (int i = 0; i < bs; i++) {
            double vri = AT(v, r, i);
            const double *wi = &AT(w, i, 0);
            for (int col = 0; col < bs; col++) c2r[col] -= vri * wi[col];
        }
    }
}
