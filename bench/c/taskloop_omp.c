/* The taskloop benchmark of BENCHMARKS.md in C: a[i] = 2 b[i] + 1 over N doubles, as one
 * `#pragma omp taskloop grainsize(G)` inside `parallel`/`single`, the same loop as the numatask
 * and rayon rows of benches/taskloop.rs; with MODE `reduce`, the sum of 2 b[i] + 1 instead, as
 * `taskloop grainsize(G) reduction(+: sum)` (OpenMP 5.0), the `--reduce` rows. Built by
 * scripts/bench-taskloop.sh and scripts/device-bundle.sh with gcc -fopenmp (libgomp) and
 * clang -fopenmp (LLVM libomp).
 *
 * usage: taskloop_omp N GRAIN [REPS [map|reduce]]   prints one summary line:
 *   taskloop_omp runtime=<name> threads=T n=N grain=G chunks=K median_s=S ns_per_chunk=X checksum=C
 * (the checksum: the integer sum of a, or the sum itself)
 *
 * With TASKLOOP_NUM_TASKS=K in the environment the loop is `taskloop num_tasks(K)` instead of
 * `grainsize(G)` (runtime=<name>-num_tasks), as many tasks as numatask's adaptive taskloop
 * makes when every worker is busy (benches/taskloop.rs passes twice the threads, at most
 * N / G); ns_per_chunk still divides by N / G.
 */
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "bench_time.h"

int main(int argc, char **argv) {
    if (argc < 3) { fprintf(stderr, "usage: %s N GRAIN [REPS]\n", argv[0]); return 2; }
    long n = atol(argv[1]);
    long grain = atol(argv[2]);
    int reps = argc > 3 ? atoi(argv[3]) : 5;
    int reduce = argc > 4 && strcmp(argv[4], "reduce") == 0;
    if (argc > 5 || n < 1 || grain < 1 || reps < 1 || reps > 1000 ||
        (argc > 4 && !reduce && strcmp(argv[4], "map") != 0)) {
        fprintf(stderr, "bad arguments\n");
        return 2;
    }
    const char *k_env = getenv("TASKLOOP_NUM_TASKS");
    long num_tasks = 0;
    char *k_end = NULL;
    if (k_env && *k_env) num_tasks = strtol(k_env, &k_end, 10);
    if (k_env && *k_env && (num_tasks < 1 || *k_end != '\0')) {
        fprintf(stderr, "TASKLOOP_NUM_TASKS='%s': expected a positive number of tasks\n", k_env);
        return 2;
    }
    char name[64];
    snprintf(name, sizeof name, num_tasks ? "%s-num_tasks" : "%s", RUNTIME_NAME);
    double *a = malloc(n * sizeof *a), *b = malloc(n * sizeof *b);
    if (!a || !b) { fprintf(stderr, "out of memory\n"); return 1; }
    for (long i = 0; i < n; i++) { b[i] = (double)(i % 1000); a[i] = 0; }
    double times[1000];
    int threads = 0;
    double total = 0;
    for (int r = 0; r <= reps; r++) { /* rep 0 warms the thread team up */
        double t0 = now();
        if (reduce) {
            double s = 0;
#pragma omp parallel
#pragma omp single
            {
                threads = omp_get_num_threads();
                if (num_tasks) {
#pragma omp taskloop num_tasks(num_tasks) reduction(+: s)
                    for (long i = 0; i < n; i++) s += 2.0 * b[i] + 1.0;
                } else {
#pragma omp taskloop grainsize(grain) reduction(+: s)
                    for (long i = 0; i < n; i++) s += 2.0 * b[i] + 1.0;
                }
            }
            total = s;
        } else {
#pragma omp parallel
#pragma omp single
            {
                threads = omp_get_num_threads();
                if (num_tasks) {
#pragma omp taskloop num_tasks(num_tasks)
                    for (long i = 0; i < n; i++) a[i] = 2.0 * b[i] + 1.0;
                } else {
#pragma omp taskloop grainsize(grain)
                    for (long i = 0; i < n; i++) a[i] = 2.0 * b[i] + 1.0;
                }
            }
        }
        double t = now() - t0;
        if (r > 0) times[r - 1] = t;
    }
    double median_s = median(times, reps);
    unsigned long long sum = 0;
    if (reduce) {
        sum = (unsigned long long)total;
    } else {
        for (long i = 0; i < n; i++) sum += (unsigned long long)a[i];
    }
    long chunks = n / grain < 1 ? 1 : n / grain;
    printf("taskloop_omp runtime=%s threads=%d n=%ld grain=%ld chunks=%ld median_s=%.6f ns_per_chunk=%.1f checksum=%llu\n",
           name, threads, n, grain, chunks, median_s, median_s * 1e9 / chunks, sum);
    free(a);
    free(b);
    return 0;
}
