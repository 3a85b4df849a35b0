/* Tiled QR with OpenMP 4 tasks and depend clauses, one task per tile operation: the peer of
 * numatask's benches/qr.rs. Built with gcc -fopenmp (libgomp) and clang -fopenmp (LLVM
 * libomp) by scripts/bench-qr.sh.
 *
 * usage: qr_omp NT BS [REPS]
 * The tiles of A lie in one page-aligned allocation, row of tiles after row of tiles, and the
 * T factors in another (numatask's layout, so that the runtime is the only difference).
 * prints: qr_omp runtime=<r> threads=T nt=NT bs=BS tasks=K median_s=S checksum=C
 * With BENCH_TASK_STATS=1, also the last repetition's busy share and each kernel's mean time
 * (task_stats.h). */
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "bench_time.h"
#include "task_stats.h"
#include "qr.h"

static double *alloc_tiles(int nt, int bs) {
    size_t bytes = ((size_t)nt * nt * bs * bs * sizeof(double) + 4095) / 4096 * 4096;
    double *m = aligned_alloc(4096, bytes);
    if (!m) { fprintf(stderr, "out of memory\n"); exit(1); }
    memset(m, 0, bytes);
    return m;
}

static long qr(double *a, double *t, int nt, int bs) {
    long tasks = 0;
    const size_t n = (size_t)bs * bs;
#define TILE(m, i, j) ((m) + ((size_t)(i) * nt + (j)) * n)
#pragma omp parallel
#pragma omp single
    {
        for (int k = 0; k < nt; k++) {
            double *akk = TILE(a, k, k), *tkk = TILE(t, k, k);
#pragma omp task firstprivate(akk, tkk) depend(inout: akk[0:n]) depend(out: tkk[0:n])
            TS_TASK(0, qr_geqrt(akk, tkk, bs));
            tasks++;
            for (int j = k + 1; j < nt; j++) {
                double *akj = TILE(a, k, j);
#pragma omp task firstprivate(akk, tkk, akj) depend(in: akk[0:n], tkk[0:n]) depend(inout: akj[0:n])
                TS_TASK(1, qr_ormqr(akk, tkk, akj, bs));
                tasks++;
            }
            for (int i = k + 1; i < nt; i++) {
                double *aik = TILE(a, i, k), *tik = TILE(t, i, k);
#pragma omp task firstprivate(akk, aik, tik) depend(inout: akk[0:n], aik[0:n]) depend(out: tik[0:n])
                TS_TASK(2, qr_tsqrt(akk, aik, tik, bs));
                tasks++;
                for (int j = k + 1; j < nt; j++) {
                    double *akj = TILE(a, k, j), *aij = TILE(a, i, j);
#pragma omp task firstprivate(akj, aij, aik, tik) depend(inout: akj[0:n], aij[0:n]) depend(in: aik[0:n], tik[0:n])
                    TS_TASK(3, qr_tsmqr(akj, aij, aik, tik, bs));
                    tasks++;
                }
            }
        }
#pragma omp taskwait
    }
    return tasks;
}

/* R (the upper triangle of the tile matrix), weighted by position. */
static double checksum(const double *a, int nt, int bs) {
    const size_t n = (size_t)bs * bs;
    double s = 0;
    for (int i = 0; i < nt; i++)
        for (int j = i; j < nt; j++)
            for (int r = 0; r < bs; r++)
                for (int c = 0; c < bs; c++)
                    if (i != j || c >= r)
                        s += TILE(a, i, j)[r * bs + c] * ((i + j + r + c) % 7 + 1);
    return s;
}

int main(int argc, char **argv) {
    if (argc < 3) { fprintf(stderr, "usage: %s NT BS [REPS]\n", argv[0]); return 2; }
    int nt = atoi(argv[1]), bs = atoi(argv[2]), reps = argc > 3 ? atoi(argv[3]) : 3;
    if (nt < 1 || nt > 1000 || bs < 1 || bs > 1000 || reps < 1 || reps > 100) {
        fprintf(stderr, "bad arguments\n");
        return 2;
    }
    double times[100], sum = 0;
    long tasks = 0;
    int threads = omp_get_max_threads();
    ts_init();
    for (int r = 0; r <= reps; r++) { /* rep 0 warms the team up */
        double *a = alloc_tiles(nt, bs), *t = alloc_tiles(nt, bs);
        const size_t n = (size_t)bs * bs;
        for (int i = 0; i < nt; i++)
            for (int j = 0; j < nt; j++) qr_fill_tile(TILE(a, i, j), nt, bs, i, j);
        ts_reset();
        double t0 = now();
        tasks = qr(a, t, nt, bs);
        double el = now() - t0;
        if (r > 0) times[r - 1] = el;
        sum = checksum(a, nt, bs);
        free(a);
        free(t);
    }
    static const char *const kinds[] = {"geqrt", "ormqr", "tsqrt", "tsmqr"};
    ts_report("qr_omp", threads, times[reps - 1], kinds, 4);
    printf("qr_omp runtime=%s threads=%d nt=%d bs=%d tasks=%ld median_s=%.6f checksum=%.6e\n",
           RUNTIME_NAME, threads, nt, bs, tasks, median(times, reps), sum);
    return 0;
}
