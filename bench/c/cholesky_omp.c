/* Blocked Cholesky with OpenMP 4 tasks and depend clauses, one task per tile operation: the
 * peer of numatask's benches/cholesky.rs. Built with gcc -fopenmp (libgomp) and clang -fopenmp
 * (LLVM libomp) by scripts/bench-cholesky.sh.
 *
 * usage: cholesky_omp NT BS [REPS [PRIO]]
 * PRIO 1: the tasks get priority clauses (potrf 3, trsm 2, syrk 1, gemm 0), which the runtime
 * honours up to OMP_MAX_TASK_PRIORITY (ignored when that is unset, as OpenMP says).
 * Two memory layouts: CHOLESKY_LAYOUT=arena (the default; numatask's, so that the runtime is
 * the only difference) holds every tile in one page-aligned allocation, in the packed order of
 * TILE; CHOLESKY_LAYOUT=malloc (runtime=<r>-malloc) mallocs each tile.
 * prints: cholesky_omp runtime=<r> threads=T nt=NT bs=BS tasks=K median_s=S checksum=C
 * With BENCH_TASK_STATS=1, also the last repetition's busy share and each kernel's mean time
 * (task_stats.h). */
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "bench_time.h"
#include "task_stats.h"
#include "cholesky.h"

/* Tile (i, j), i >= j, of the lower triangle. */
#define TILE(m, i, j) (m[(i) * ((i) + 1) / 2 + (j)])

/* The arena layout's one allocation (NULL: the malloc layout). */
static int use_arena = 1;
static double *arena;

static double **genmat(int nt, int bs) {
    const size_t count = (size_t)nt * (nt + 1) / 2, n = (size_t)bs * bs;
    double **m = calloc(count, sizeof *m);
    if (!m) { fprintf(stderr, "out of memory\n"); exit(1); }
    if (use_arena) {
        size_t bytes = (count * n * sizeof(double) + 4095) / 4096 * 4096;
        arena = aligned_alloc(4096, bytes);
        if (!arena) { fprintf(stderr, "out of memory\n"); exit(1); }
    }
    for (int i = 0; i < nt; i++)
        for (int j = 0; j <= i; j++) {
            size_t t = (size_t)i * (i + 1) / 2 + j;
            TILE(m, i, j) = use_arena ? arena + t * n : malloc(n * sizeof(double));
            if (!TILE(m, i, j)) { fprintf(stderr, "out of memory\n"); exit(1); }
            cholesky_fill_tile(TILE(m, i, j), nt, bs, i, j);
        }
    return m;
}

static void freemat(double **m, int nt) {
    if (use_arena) {
        free(arena);
        arena = NULL;
    } else {
        for (int i = 0; i < nt * (nt + 1) / 2; i++) free(m[i]);
    }
    free(m);
}

/* The priority multiplier: 1 with PRIO 1, else 0 (every task priority 0). */
static int prio;

static long cholesky(double **m, int nt, int bs) {
    long tasks = 0;
    const size_t n = (size_t)bs * bs;
#pragma omp parallel
#pragma omp single
    {
        for (int k = 0; k < nt; k++) {
            double *d = TILE(m, k, k);
#pragma omp task firstprivate(d) depend(inout: d[0:n]) priority(3 * prio)
            TS_TASK(0, cholesky_potrf(d, bs));
            tasks++;
            for (int i = k + 1; i < nt; i++) {
                double *b = TILE(m, i, k);
#pragma omp task firstprivate(d, b) depend(in: d[0:n]) depend(inout: b[0:n]) priority(2 * prio)
                TS_TASK(1, cholesky_trsm(d, b, bs));
                tasks++;
            }
            for (int i = k + 1; i < nt; i++) {
                double *a = TILE(m, i, k), *c = TILE(m, i, i);
#pragma omp task firstprivate(a, c) depend(in: a[0:n]) depend(inout: c[0:n]) priority(prio)
                TS_TASK(2, cholesky_syrk(a, c, bs));
                tasks++;
                for (int j = k + 1; j < i; j++) {
                    double *b = TILE(m, j, k), *cc = TILE(m, i, j);
#pragma omp task firstprivate(a, b, cc) depend(in: a[0:n], b[0:n]) depend(inout: cc[0:n])
                    TS_TASK(3, cholesky_gemm(a, b, cc, bs));
                    tasks++;
                }
            }
        }
#pragma omp taskwait
    }
    return tasks;
}

/* The lower triangle of L, weighted by position. */
static double checksum(double **m, int nt, int bs) {
    double s = 0;
    for (int i = 0; i < nt; i++)
        for (int j = 0; j <= i; j++)
            for (int r = 0; r < bs; r++)
                for (int c = 0; c < bs; c++)
                    if (i != j || c <= r)
                        s += TILE(m, i, j)[r * bs + c] * ((i + j + r + c) % 7 + 1);
    return s;
}

int main(int argc, char **argv) {
    if (argc < 3) { fprintf(stderr, "usage: %s NT BS [REPS [PRIO]]\n", argv[0]); return 2; }
    int nt = atoi(argv[1]), bs = atoi(argv[2]), reps = argc > 3 ? atoi(argv[3]) : 3;
    prio = argc > 4 ? atoi(argv[4]) : 0;
    if (nt < 1 || nt > 1000 || bs < 1 || bs > 1000 || reps < 1 || reps > 100 || prio < 0 || prio > 1) {
        fprintf(stderr, "bad arguments\n");
        return 2;
    }
    const char *layout = getenv("CHOLESKY_LAYOUT");
    char name[64];
    if (!layout || !*layout || strcmp(layout, "arena") == 0) {
        snprintf(name, sizeof name, "%s", RUNTIME_NAME);
    } else if (strcmp(layout, "malloc") == 0) {
        use_arena = 0;
        snprintf(name, sizeof name, "%s-malloc", RUNTIME_NAME);
    } else {
        fprintf(stderr, "CHOLESKY_LAYOUT='%s': expected arena or malloc\n", layout);
        return 2;
    }
    double times[100], sum = 0;
    long tasks = 0;
    int threads = omp_get_max_threads();
    ts_init();
    for (int r = 0; r <= reps; r++) { /* rep 0 warms the team up */
        double **m = genmat(nt, bs);
        ts_reset();
        double t0 = now();
        tasks = cholesky(m, nt, bs);
        double t = now() - t0;
        if (r > 0) times[r - 1] = t;
        sum = checksum(m, nt, bs);
        freemat(m, nt);
    }
    static const char *const kinds[] = {"potrf", "trsm", "syrk", "gemm"};
    ts_report("cholesky_omp", threads, times[reps - 1], kinds, 4);
    printf("cholesky_omp runtime=%s threads=%d nt=%d bs=%d tasks=%ld median_s=%.6f checksum=%.6e\n",
           name, threads, nt, bs, tasks, median(times, reps), sum);
    return 0;
}
