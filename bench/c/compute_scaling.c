/* How far the machine's own compute throughput grows with threads: a fixed amount of pure
 * register arithmetic (a xorshift chain per thread; no memory traffic, no synchronization
 * but the parallel region's start and end) split evenly over T threads. On a machine whose T
 * cores are T real cores, the time falls as 1/T; where "cores" share physical cores (SMT
 * siblings, an oversubscribed virtual machine), it stops falling. The reference against which
 * BENCHMARKS.md reads fib's per-task time from 16 to 32 threads.
 *
 * usage: compute_scaling T1,T2,... [REPS]   (default REPS 5)
 *   prints per thread count: compute threads=T median_s=S speedup=X (over one thread, which
 *   it measures first in any case)
 */
#include <omp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "bench_time.h"

/* Total xorshift steps, split over the threads (about 0.5 s on one core). */
#define TOTAL_STEPS (1L << 28)

static uint64_t chain(uint64_t x, long steps) {
    for (long i = 0; i < steps; i++) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
    }
    return x;
}

static double run(int threads) {
    volatile uint64_t sink = 0;
    double t = now();
#pragma omp parallel num_threads(threads)
    {
        int id = omp_get_thread_num(), n = omp_get_num_threads();
        long steps = TOTAL_STEPS / n + (id < TOTAL_STEPS % n);
        uint64_t r = chain(0x9E3779B97F4A7C15ULL + (uint64_t)id, steps);
#pragma omp atomic
        sink += r;
    }
    (void)sink;
    return now() - t;
}

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: %s T1,T2,... [REPS]\n", argv[0]);
        return 2;
    }
    int reps = argc > 2 ? atoi(argv[2]) : 5;
    if (reps < 1 || reps > 100) {
        fprintf(stderr, "compute_scaling: REPS must be 1 to 100\n");
        return 2;
    }
    char *list = strdup(argv[1]);
    run(1);
    double one[100];
    for (int r = 0; r < reps; r++) one[r] = run(1);
    double serial = median(one, reps);
    for (char *tok = strtok(list, ","); tok; tok = strtok(NULL, ",")) {
        int threads = atoi(tok);
        if (threads < 1 || threads > 4096) {
            fprintf(stderr, "compute_scaling: bad thread count '%s'\n", tok);
            return 2;
        }
        double times[100];
        run(threads); /* warm-up: the team started */
        for (int r = 0; r < reps; r++) times[r] = run(threads);
        double m = median(times, reps);
        printf("compute threads=%-3d median_s=%.6f speedup=%.2f\n", threads, m, serial / m);
    }
    free(list);
    return 0;
}
