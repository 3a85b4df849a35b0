/* Helpers of the C/OpenMP peers (the files bench/c/NAME_omp.c): the runtime's name for their
 * output lines, a monotonic clock in seconds, and the median of a run's repetition times, as
 * the Rust benches report it. */
#ifndef NUMATASK_BENCH_TIME_H
#define NUMATASK_BENCH_TIME_H

#include <stdlib.h>
#include <time.h>

/* The OpenMP runtime a peer is built against, as the harness names it (-DRUNTIME_NAME=...). */
#ifndef RUNTIME_NAME
#define RUNTIME_NAME "openmp"
#endif

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* The median of times[0..n) (sorts them). */
static double median(double *times, int n) {
    qsort(times, n, sizeof times[0], cmp_double);
    return times[n / 2];
}

#endif
