/* Per-task statistics of the C/OpenMP peers of the dependent-task benches (sparselu, cholesky,
 * qr), to read beside numatask's traces (NUMATASK_TRACE, scripts/trace-busy.py). With
 * BENCH_TASK_STATS=1 in the environment, each task's kernel is timed, and after the last
 * repetition one line on stderr gives the threads' busy share of that repetition, each
 * thread's share, and the mean microseconds per task of each kind:
 *   NAME stats: busy 87.1% of 16 threads (0.1412 s); per thread 91 88 ...%; mean us potrf 120.3
 *   ...; potrf starts at 1/4 1/2 3/4 last of 40 steps, ms 12.50 40.10 75.20 118.00
 * the last part the critical path's progress: when the panel's tasks (kind 0) started.
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

/* The start of each task of kind 0 (the panel's: lu0, potrf, geqrt), in seconds from the
 * repetition's start, in the order they ran: the critical path's progress. */
enum { TS_MAX_PANEL = 4096 };
static double ts_panel[TS_MAX_PANEL];
static int ts_panels;
static double ts_t0;

/* Reads BENCH_TASK_STATS; call once before the first repetition. */
static void ts_init(void) {
    const char *v = getenv("BENCH_TASK_STATS");
    ts_on = v && *v && strcmp(v, "0") != 0;
}

/* Forgets the counts; call right before each repetition's timing starts, so that the report
 * is the last one's. */
static void ts_reset(void) {
    memset(ts_busy, 0, sizeof ts_busy);
    ts_panels = 0;
    ts_t0 = now();
}

/* Notes the start of a panel task (kind 0) at `t`. */
static void ts_panel_start(double t) {
    int i;
#pragma omp atomic capture
    i = ts_panels++;
    if (i < TS_MAX_PANEL) ts_panel[i] = t - ts_t0;
}

/* Runs `call`, timing it as a task of kind `kind` (0 .. TS_MAX_KINDS - 1) when on. */
#define TS_TASK(kind, call)                                        \
    do {                                                           \
        if (ts_on) {                                               \
            double t0_ = now();                                    \
            if ((kind) == 0) ts_panel_start(t0_);                  \
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
    /* When the panel tasks of a quarter, half, three quarters and all of the steps had
     * started, in ms (the order they started in is the steps' order). */
    int p = ts_panels < TS_MAX_PANEL ? ts_panels : TS_MAX_PANEL;
    if (p > 0) {
        fprintf(stderr, "; %s starts at 1/4 1/2 3/4 last of %d steps, ms", kinds[0], p);
        for (int q = 1; q <= 4; q++) fprintf(stderr, " %.2f", 1e3 * ts_panel[(p * q + 3) / 4 - 1]);
    }
    fprintf(stderr, "\n");
}

#endif
