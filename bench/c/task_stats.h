/* Per-task statistics of the C/OpenMP peers of the dependent-task benches (sparselu, cholesky,
 * qr), to read beside numatask's traces (NUMATASK_TRACE, scripts/trace-busy.py). With
 * BENCH_TASK_STATS=1 in the environment, each task's kernel is timed, and after the last
 * repetition one line on stderr gives the threads' busy share of that repetition, each
 * thread's share, and the mean microseconds per task of each kind:
 *   NAME stats: busy 87.1% of 16 threads (0.1412 s); per thread 91 88 ...%; mean us potrf 120.3 ...
 * Off (the default), a task costs one predictable branch more. */
#ifndef NUMATASK_TASK_STATS_H
#define NUMATASK_TASK_STATS_H

#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "bench_time.h"

enum { TS_MAX_THREADS = 512, TS_MAX_KINDS = 4 };

/* Per thread and kind: seconds and calls, a cache line per thread. */
static struct {
    double s[TS_MAX_KINDS];
    long n[TS_MAX_KINDS];
} __attribute__((aligned(64))) ts_busy[TS_MAX_THREADS];
static int ts_on;

/* Reads BENCH_TASK_STATS; call once before the first repetition. */
static void ts_init(void) {
    const char *v = getenv("BENCH_TASK_STATS");
    ts_on = v && *v && strcmp(v, "0") != 0;
}

/* Forgets the counts; call before each repetition, so that the report is the last one's. */
static void ts_reset(void) { memset(ts_busy, 0, sizeof ts_busy); }

/* Runs `call`, timing it as a task of kind `kind` (0 .. TS_MAX_KINDS - 1) when on. */
#define TS_TASK(kind, call)                                        \
    do {                                                           \
        if (ts_on) {                                               \
            double t0_ = now();                                    \
            call;                                                  \
            int id_ = omp_get_thread_num() % TS_MAX_THREADS;       \
            ts_busy[id_].s[kind] += now() - t0_;                   \
            ts_busy[id_].n[kind]++;                                \
        } else {                                                   \
            call;                                                  \
        }                                                          \
    } while (0)

/* The report line of a repetition that took `secs` on `threads` threads; `kinds` names the
 * kinds in order. Prints nothing when off. */
static void ts_report(const char *name, int threads, double secs, const char *const *kinds,
                      int nkinds) {
    if (!ts_on) return;
    double total = 0, s[TS_MAX_KINDS] = {0};
    long n[TS_MAX_KINDS] = {0};
    for (int t = 0; t < TS_MAX_THREADS; t++)
        for (int k = 0; k < nkinds; k++) s[k] += ts_busy[t].s[k], n[k] += ts_busy[t].n[k];
    for (int k = 0; k < nkinds; k++) total += s[k];
    fprintf(stderr, "%s stats: busy %.1f%% of %d threads (%.4f s); per thread", name,
            100 * total / (secs * threads), threads, secs);
    for (int t = 0; t < threads && t < TS_MAX_THREADS; t++) {
        double mine = 0;
        for (int k = 0; k < nkinds; k++) mine += ts_busy[t].s[k];
        fprintf(stderr, " %.0f", 100 * mine / secs);
    }
    fprintf(stderr, "%%; mean us");
    for (int k = 0; k < nkinds; k++)
        fprintf(stderr, " %s %.1f", kinds[k], n[k] ? 1e6 * s[k] / n[k] : 0);
    fprintf(stderr, "\n");
}

#endif
