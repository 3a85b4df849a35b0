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

void sparselu_bmod(const float *row, const float *col, float *inner, int bs) {
    for (int i = 0; i < bs; i++)
        for (int j = 0; j < bs; j++) {
            float acc = inner[i * bs + j];
            for (int k = 0; k < bs; k++) acc -= row[i * bs + k] * col[k * bs + j];
            inner[i * bs + j] = acc;
        }
}

void sparselu_fwd(const float *diag, float *col, int bs) {
    for (int j = 0; j < bs; j++)
        for (int k = 0; k < bs; k++)
            for (int i = k + 1; i < bs; i++)
                col[i * bs + j] = col[i * bs + j] - diag[i * bs + k] * col[k * bs + j];
}
