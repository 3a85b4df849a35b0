/* BOTS-style SparseLU: the block kernels (lu0, fwd, bdiv, bmod) and the matrix generator with
 * the BOTS null-block pattern. The identical code is linked into the C/OpenMP driver
 * (sparselu_omp.c) and into numatask's Rust driver, so that the runtime is the only difference.
 * Written for numatask after the Barcelona OpenMP Tasks Suite's description of SparseLU. */
#ifndef NUMATASK_SPARSELU_H
#define NUMATASK_SPARSELU_H
#include <stddef.h>

/* Whether block (ii, jj) of an nb x nb matrix is allocated initially (the BOTS pattern). */
int sparselu_block_present(int nb, int ii, int jj);
/* Fills block (ii, jj) of an nb x nb matrix of bs x bs blocks with the BOTS pseudo-random values.
 * The sequence runs over present blocks in row-major order, so each block has its own seed:
 * *seed must be the value left by the previous present block (start with sparselu_seed()). */
void sparselu_fill_block(float *block, int bs, int *seed);
int sparselu_seed(void);

void sparselu_lu0(float *diag, int bs);
void sparselu_fwd(const float *diag, float *col, int bs);
void sparselu_bdiv(const float *diag, float *row, int bs);
void sparselu_bmod(const float *row, const float *col, float *inner, int bs);
#endif
