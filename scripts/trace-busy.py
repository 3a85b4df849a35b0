#!/usr/bin/env python3
"""How busy the workers were over time, from a NUMATASK_TRACE file (Chrome trace events).

    NUMATASK_TRACE=t.json ./sparselu --bench ... && scripts/trace-busy.py t.json [--bucket-ms 5] [--per-worker]

A scope's body is a task that ran other tasks of its own worker while it waited. For the last
scope of the trace, prints per time bucket the fraction of the workers' time spent in tasks
(nested tasks counted once), the tasks started, and how many workers ran anything; then the
gaps between a worker's tasks, how much of the idle time some task was ready and not started,
when the panel tasks of a factorization (lu0, potrf, geqrt) started, and, per label, how long
tasks waited from ready to start.
"""
import argparse
import json
import math
import sys


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("trace")
    p.add_argument("--bucket-ms", type=float, default=5.0)
    p.add_argument("--per-worker", action="store_true",
                   help="also print each worker's median task duration per label")
    a = p.parse_args()
    if not (math.isfinite(a.bucket_ms) and a.bucket_ms > 0):
        p.error(f"--bucket-ms {a.bucket_ms}: expected a positive number of milliseconds")
    try:
        with open(a.trace) as f:
            all_events = json.load(f)["traceEvents"]
    except OSError as e:
        sys.exit(f"{a.trace}: {e.strerror}")
    except (ValueError, KeyError, TypeError):
        sys.exit(f"{a.trace}: not a Chrome trace (a JSON object with traceEvents)")
    events = [e for e in all_events if e.get("ph") == "X"]
    if not events:
        sys.exit("no task events in the trace")
    named = {e["tid"] for e in all_events if e.get("ph") == "M" and e.get("name") == "thread_name"}
    events.sort(key=lambda e: (e["ts"], -e["dur"]))
    # Top-level tasks: not inside another task of the same worker (a waiting task runs others
    # on its own stack). A scope's body is a top-level task containing others; the last run's
    # body is the one that ends last (a scope ends after all of its tasks).
    open_by_tid, containers = {}, set()
    for e in events:
        outer = open_by_tid.get(e["tid"])
        if outer is not None and e["ts"] < outer["ts"] + outer["dur"]:
            containers.add(id(outer))
            continue
        open_by_tid[e["tid"]] = e
    bodies = [e for e in events if id(e) in containers]
    if not bodies:
        sys.exit("no scope body (a task that ran others while it waited) in the trace")
    body = max(bodies, key=lambda e: (e["ts"] + e["dur"], -e["ts"]))
    t0, t1 = body["ts"], body["ts"] + body["dur"]
    tasks = [e for e in events if e is not body and t0 <= e["ts"] < t1]
    workers = sorted(named | {e["tid"] for e in tasks} | {body["tid"]})
    # Per worker, the union of its tasks' intervals (nested ones lie inside their parents).
    busy_spans = {}
    for tid in workers:
        spans = sorted((e["ts"], min(e["ts"] + e["dur"], t1)) for e in tasks if e["tid"] == tid)
        merged = []
        for s0, s1 in spans:
            if merged and s0 <= merged[-1][1]:
                merged[-1][1] = max(merged[-1][1], s1)
            else:
                merged.append([s0, s1])
        busy_spans[tid] = merged
    first_nested = min((e["ts"] for e in tasks if e["tid"] == body["tid"]), default=t1)
    print(f"the last scope: {len(tasks)} tasks on {len(workers)} workers in "
          f"{(t1 - t0) / 1e3:.2f} ms; the body (worker {body['tid']}) ran its first task after "
          f"{(first_nested - t0) / 1e3:.2f} ms (about when it finished creating them)")
    width = a.bucket_ms * 1e3
    n = max(1, math.ceil((t1 - t0) / width))
    busy = [0.0] * n
    started = [0] * n
    active = [set() for _ in range(n)]
    for e in tasks:
        started[min(n - 1, int((e["ts"] - t0) // width))] += 1
    for tid, merged in busy_spans.items():
        for s0, s1 in merged:
            s, d = s0 - t0, s1 - s0
            b = int(s // width)
            while d > 0 and b < n:
                edge = (b + 1) * width
                part = min(d, edge - s)
                busy[b] += part
                active[b].add(tid)
                d -= part
                s = edge
                b += 1
    print("(busy: worker time in tasks over all workers' time; the body's worker counts as idle "
          "while it creates tasks)")
    print(f"{'from ms':>8} {'busy %':>7} {'tasks':>7} {'workers':>8}")
    for b in range(n):
        span = min(width, t1 - (t0 + b * width))
        pct = 100.0 * busy[b] / (len(workers) * span) if span > 0 else 0.0
        print(f"{b * a.bucket_ms:8.1f} {pct:7.1f} {started[b]:7d} {len(active[b]):8d}")
    print(f"overall: {100.0 * sum(busy) / (len(workers) * (t1 - t0)):.1f}% of the workers' "
          f"time in tasks")
    # Between tasks: per worker, the idle gaps between its busy spans.
    gaps = [b[0] - a[1] for merged in busy_spans.values() for a, b in zip(merged, merged[1:])]
    if gaps:
        gaps.sort()
        q = lambda f: gaps[min(len(gaps) - 1, int(f * len(gaps)))]
        print(f"gaps between a worker's tasks (us): median {q(0.5):.2f}, p90 {q(0.9):.2f}, "
              f"p99 {q(0.99):.2f}, max {gaps[-1]:.2f}; {sum(gaps) / 1e3:.1f} ms in all, "
              f"{sum(g for g in gaps if g > 50) / 1e3:.1f} ms of it in gaps over 50 us")
    # Work left waiting while workers were idle: over the scope, the integral of
    # min(idle workers, tasks ready but not started) (a task's ready time is its start less
    # its wait). Where this is a large share of the idle time, released work was not found or
    # its finder not woken soon enough; where small, the graph had nothing more to run.
    changes = []
    for e in tasks:
        w = e.get("args", {}).get("wait_us")
        if w is not None and w > 0:
            changes.append((max(t0, e["ts"] - w), 0, 1))
            changes.append((e["ts"], 0, -1))
    for merged in busy_spans.values():
        for s0, s1 in merged:
            changes.append((s0, 1, 1))
            changes.append((s1, 1, -1))
    if any(c[1] == 0 for c in changes):
        changes.sort()
        ready = busy_now = 0
        last = t0
        lost = idle = 0.0
        for t, kind, d in changes:
            t = min(max(t, t0), t1)
            span = t - last
            idle_workers = len(workers) - busy_now
            idle += span * idle_workers
            lost += span * min(idle_workers, ready)
            last = t
            if kind == 0:
                ready += d
            else:
                busy_now += d
        print(f"idle while a task was ready: {lost / 1e3:.1f} ms of {idle / 1e3:.1f} ms of idle "
              f"worker time ({100.0 * lost / idle if idle else 0.0:.0f}%)")
    by_label = {}
    for e in tasks:
        label = e.get("args", {}).get("task", e["name"])
        n_d = by_label.setdefault(label, [0, 0.0])
        n_d[0] += 1
        n_d[1] += e["dur"]
    # The critical path's progress: when the panel's tasks of a quarter, half, three quarters
    # and all of the steps started (the labels of the factorizations' panel tasks; the C
    # peers print the same with BENCH_TASK_STATS=1).
    for panel in ("lu0", "potrf", "geqrt"):
        starts = sorted(e["ts"] - t0 for e in tasks
                        if e.get("args", {}).get("task", e["name"]) == panel)
        if starts:
            p = len(starts)
            print(f"{panel} starts at 1/4 1/2 3/4 last of {p} steps, ms " + " ".join(
                f"{starts[(p * q + 3) // 4 - 1] / 1e3:.2f}" for q in range(1, 5)))
    print("tasks by label: " + ", ".join(
        f"{k} {n} x {d / n:.2f} us" for k, (n, d) in sorted(by_label.items())))
    # From ready (spawned with nothing to wait for, or released by a completion) to start:
    # how long ready work waited for a worker, by label.
    waits = {}
    for e in tasks:
        w = e.get("args", {}).get("wait_us")
        if w is not None:
            waits.setdefault(e.get("args", {}).get("task", e["name"]), []).append(w)
    if waits:
        print("ready to start, us (median, p90, max; tasks):")
        for k, ws in sorted(waits.items()):
            ws.sort()
            q = lambda f: ws[min(len(ws) - 1, int(f * len(ws)))]
            print(f"  {k}: {q(0.5):.1f}, {q(0.9):.1f}, {ws[-1]:.1f}; {len(ws)}")
    if a.per_worker:
        # Workers that run the same kind of task at different speeds (a shared core, memory
        # far away, a cache that others keep evicting) show here, not in the averages above.
        labels = sorted(by_label)
        print("median task duration per worker, us (tasks run):")
        print(f"{'worker':>6} " + " ".join(f"{k[:14]:>20}" for k in labels))
        for tid in workers:
            cells = []
            for k in labels:
                d = sorted(e["dur"] for e in tasks if e["tid"] == tid
                           and e.get("args", {}).get("task", e["name"]) == k)
                cells.append(f"{d[len(d) // 2]:12.1f} ({len(d):5d})" if d else f"{'-':>20}")
            print(f"{tid:>6} " + " ".join(cells))


if __name__ == "__main__":
    main()
