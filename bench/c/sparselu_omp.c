/* SparseLU with OpenMP 4 tasks and depend clauses, one task per block operation: the peer of
 * numatask's SparseLU in BENCHMARKS.md. Built with gcc -fopenmp (libgomp) and clang -fopenmp
 * (LLVM libomp) by scripts/bench-sparselu.sh.
 *
 * usage: sparselu_omp NB BS [REPS]
 * prints: sparselu_omp runtime=<r> threads=T nb=NB bs=BS tasks=K median_s=S checksum=C
 *
 * Two memory layouts, each the same as one of numatask's rows, so that the runtime is the only
 * difference: SPARSELU_LAYOUT=arena (the default; numatask's `numatask` rows) holds every block
 * in one 64-byte-aligned allocation, slots a cache line apart, every page written before the
 * timing and a fill-in block the next free (zero) slot; SPARSELU_LAYOUT=malloc (the row
 * `numatask-malloc`; runtime=<r>-malloc) mallocs each present block and callocs each fill-in
 * block in the creating task, as BOTS does.
 * With BENCH_TASK_STATS=1, also the last repetition's busy share and each kernel's mean time
 * (task_stats.h), to tell kernels that run slower from time between tasks. */
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "bench_time.h"
#include "sparselu.h"
#include "task_stats.h"

/* The arena layout (SPARSELU_LAYOUT=arena): the slots and the next free one. NULL: malloc. */
static float *arena;
static size_t arena_stride, arena_next;

/* A zero block for a fill-in: the arena's next free slot, or a calloc. */
static float *fill_in_block(size_t n) {
    return arena ? arena + arena_next++ * arena_stride : calloc(n, sizeof(float));
}

static float **genmat(int nb, int bs) {
    float **m = calloc((size_t)nb * nb, sizeof *m);
    const size_t n = (size_t)bs * bs;
    if (arena_stride) {
        /* Every slot a cache line apart (16 floats), every page written here, as numatask's
         * arena (benches/sparselu.rs, Matrix::generate). */
        size_t bytes = (size_t)nb * nb * arena_stride * sizeof(float);
        arena = aligned_alloc(64, bytes);
        if (!arena) { fprintf(stderr, "arena of %zu bytes: out of memory\n", bytes); exit(1); }
        memset(arena, 0, bytes);
        arena_next = 0;
    }
    int seed = sparselu_seed();
    for (int ii = 0; ii < nb; ii++)
        for (int jj = 0; jj < nb; jj++)
            if (sparselu_block_present(nb, ii, jj)) {
                m[ii * nb + jj] = arena ? arena + arena_next++ * arena_stride
                                        : malloc(n * sizeof(float));
                sparselu_fill_block(m[ii * nb + jj], bs, &seed);
            }
    return m;
}

static void freemat(float **m, int nb) {
    if (arena) {
        free(arena);
        arena = NULL;
    } else {
        for (int i = 0; i < nb * nb; i++) free(m[i]);
    }
    free(m);
}

static long sparselu(float **m, int nb, int bs) {
    long tasks = 0;
    const size_t n = (size_t)bs * bs;
#pragma omp parallel
#pragma omp single
    {
        for (int kk = 0; kk < nb; kk++) {
            float *diag = m[kk * nb + kk];
#pragma omp task firstprivate(diag) depend(inout: diag[0:n])
            TS_TASK(0, sparselu_lu0(diag, bs));
            tasks++;
            for (int jj = kk + 1; jj < nb; jj++) {
                float *col = m[kk * nb + jj];
                if (col) {
#pragma omp task firstprivate(diag, col) depend(in: diag[0:n]) depend(inout: col[0:n])
                    TS_TASK(1, sparselu_fwd(diag, col, bs));
                    tasks++;
                }
            }
            for (int ii = kk + 1; ii < nb; ii++) {
                float *row = m[ii * nb + kk];
                if (row) {
#pragma omp task firstprivate(diag, row) depend(in: diag[0:n]) depend(inout: row[0:n])
                    TS_TASK(2, sparselu_bdiv(diag, row, bs));
                    tasks++;
                }
            }
            for (int ii = kk + 1; ii < nb; ii++) {
                float *row = m[ii * nb + kk];
                if (!row) continue;
                for (int jj = kk + 1; jj < nb; jj++) {
                    float *col = m[kk * nb + jj];
                    if (!col) continue;
                    if (!m[ii * nb + jj]) m[ii * nb + jj] = fill_in_block(n);
                    float *inner = m[ii * nb + jj];
#pragma omp task firstprivate(row, col, inner) depend(in: row[0:n], col[0:n]) depend(inout: inner[0:n])
                    TS_TASK(3, sparselu_bmod(row, col, inner, bs));
                    tasks++;
                }
            }
        }
#pragma omp taskwait
    }
    return tasks;
}

static double checksum(float **m, int nb, int bs) {
    double s = 0;
    for (int i = 0; i < nb * nb; i++)
        if (m[i])
            for (int k = 0; k < bs * bs; k++) s += (double)m[i][k] * ((i + k) % 7 + 1);
    return s;
}

int main(int argc, char **argv) {
    if (argc < 3) { fprintf(stderr, "usage: %s NB BS [REPS]\n", argv[0]); return 2; }
    int nb = atoi(argv[1]), bs = atoi(argv[2]), reps = argc > 3 ? atoi(argv[3]) : 3;
    if (nb < 1 || nb > 1000 || bs < 1 || bs > 1000 || reps < 1 || reps > 100) {
        fprintf(stderr, "bad arguments\n");
        return 2;
    }
    const char *layout = getenv("SPARSELU_LAYOUT");
    char name[64];
    if (!layout || !*layout || strcmp(layout, "arena") == 0) {
        arena_stride = ((size_t)bs * bs + 15) / 16 * 16;
        snprintf(name, sizeof name, "%s", RUNTIME_NAME);
    } else if (strcmp(layout, "malloc") == 0) {
        snprintf(name, sizeof name, "%s-malloc", RUNTIME_NAME);
    } else {
        fprintf(stderr, "SPARSELU_LAYOUT='%s': expected arena or malloc\n", layout);
        return 2;
    }
    double times[100], sum = 0;
    long tasks = 0;
    int threads = omp_get_max_threads();
    ts_init();
    for (int r = 0; r <= reps; r++) { /* rep 0 warms the team up */
        float **m = genmat(nb, bs);
        ts_reset();
        double t0 = now();
        tasks = sparselu(m, nb, bs);
        double t = now() - t0;
        if (r > 0) times[r - 1] = t;
        sum = checksum(m, nb, bs);
        freemat(m, nb);
    }
    static const char *const kinds[] = {"lu0", "fwd", "bdiv", "bmod"};
    ts_report("sparselu_omp", threads, times[reps - 1], kinds, 4);
    printf("sparselu_omp runtime=%s threads=%d nb=%d bs=%d tasks=%ld median_s=%.6f checksum=%.6e\n",
           name, threads, nb, bs, tasks, median(times, reps), sum);
    return 0;
}
