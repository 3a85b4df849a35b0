/* fib(n) with one OpenMP task per call and no cutoff: the spawn-overhead benchmark of
 * BENCHMARKS.md, the same program as numatask's and rayon's versions in benches/fib.rs.
 * Built twice by scripts/bench-fib.sh: gcc -fopenmp (libgomp) and clang -fopenmp (LLVM libomp).
 *
 * usage: fib_omp N [REPS]   prints one line per rep and a summary line:
 *   fib_omp runtime=<name> threads=T n=N tasks=K median_s=S ns_per_task=X
 */
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include "bench_time.h"

static long fib(int n) {
    if (n < 2) return n;
    long x, y;
#pragma omp task shared(x) firstprivate(n)
    x = fib(n - 1);
#pragma omp task shared(y) firstprivate(n)
    y = fib(n - 2);
#pragma omp taskwait
    return x + y;
}

/* Calls of fib(n) (each one a task): calls(n) = 1 + calls(n-1) + calls(n-2). */
static long calls(int n) {
    long a = 1, b = 1; /* calls(0), calls(1) */
    for (int i = 2; i <= n; i++) { long c = 1 + a + b; a = b; b = c; }
    return n < 1 ? 1 : b;
}

int main(int argc, char **argv) {
    if (argc < 2) { fprintf(stderr, "usage: %s N [REPS]\n", argv[0]); return 2; }
    int n = atoi(argv[1]);
    int reps = argc > 2 ? atoi(argv[2]) : 5;
    if (n < 0 || n > 60 || reps < 1 || reps > 1000) { fprintf(stderr, "bad arguments\n"); return 2; }
    const char *name = RUNTIME_NAME;
    double times[1000];
    long result = 0;
    int threads = 0;
    for (int r = 0; r <= reps; r++) { /* rep 0 warms the thread team up */
        double t0 = now();
#pragma omp parallel
#pragma omp single
        {
            threads = omp_get_num_threads();
            result = fib(n);
        }
        double t = now() - t0;
        if (r > 0) times[r - 1] = t;
    }
    double median_s = median(times, reps);
    long k = calls(n);
    printf("fib_omp runtime=%s threads=%d n=%d result=%ld tasks=%ld median_s=%.6f ns_per_task=%.2f\n",
           name, threads, n, result, k, median_s, median_s * 1e9 / k);
    return 0;
}
