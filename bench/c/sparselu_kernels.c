/* Block kernels of SparseLU; see sparselu.h. Single precision, row-major bs x bs blocks. */
#include "sparselu.h"

int sparselu_block_present(int nb, int ii, int jj) {
    int null_entry = 0;
    if (ii < jj && ii % 3 != 0) null_entry = 1;
    if (ii > jj && jj % 3 != 0) null_entry = 1;
    if (ii % 2 == 1) null_entry = 1;
    if (jj % 2 == 1) null_entry = 1;
    if (ii == jj || ii == jj - 1 || ii - 1 == jj) null_entry = 0;
    (void)nb;
    return !null_entry;
}

int sparselu_seed(void) { return 1325; }

void sparselu_fill_block(float *block, int bs, int *seed) {
    int v = *seed;
    for (int i = 0; i < bs * bs; i++) {
        v = (3125 * v) % 65536;
        block[i] = (float)((v - 32768.0) / 16384.0);
    }
    *seed = v;
}

void sparselu_lu0(float *diag, int bs) {
    for (int k = 0; k < bs; k++)
        for (int i = k + 1; i < bs; i++) {
            diag[i * bs + k] = diag[i * bs + k] / diag[k * bs + k];
            for (int j = k + 1; j < bs; j++)
                diag[i * bs + j] = diag[i * bs + j] - diag[i * bs + k] * diag[k * bs + j];
        }
}

void sparselu_bdiv(const float *diag, float *row, int bs) {
    for (int i = 0; i < bs; i++)
        for (int k = 0; k < bs; k++) {
            row[i * bs + k] = row[i * bs + k] / diag[k * bs + k];
            for (int j = k + 1; j < bs; j++)
                row[i * bs + j] = row[i * bs + j] - row[i * bs + k] * diag[k * bs + j];
        }
}

/* inner -= row * col. Each element takes its terms in the order of k, as in BOTS' i-j-k loop
 * nest, so the results are the same bit for bit (without FMA contraction, which the default
 * x86-64 target lacks); the loops run i-k-j so that the innermost one walks rows with unit
 * stride and the compiler vectorizes it: 6-7x faster than the i-j-k nest at bs = 100. */
void sparselu_bmod(const float *row, const float *col, float *inner, int bs) {
    for (int i = 0; i < bs; i++)
        for (int k = 0; k < bs; k++) {
            const float r = row[i * bs + k];
            for (int j = 0; j < bs; j++) inner[i * bs + j] -= r * col[k * bs + j];
        }
}

/* Forward substitution of col by the unit lower triangle of diag: k-i-j instead of BOTS' j-k-i,
 * the same operations on each element in the same order (row k of col is final when step k
 * uses it), the innermost loop along a row. */
void sparselu_fwd(const float *diag, float *col, int bs) {
    for (int k = 0; k < bs; k++)
        for (int i = k + 1; i < bs; i++) {
            const float d = diag[i * bs + k];
            for (int j = 0; j < bs; j++) col[i * bs + j] = col[i * bs + j] - d * col[k * bs + j];
        }
}
