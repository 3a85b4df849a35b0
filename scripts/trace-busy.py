#!/usr/bin/env python3
"""How busy the workers were over time, from a NUMATASK_TRACE file (Chrome trace events).

    NUMATASK_TRACE=t.json ./sparselu --bench ... && scripts/trace-busy.py t.json [--bucket-ms 5]

A run is one scope: its body is the task that ran other tasks of its own worker while it
waited. For the last run, prints per time bucket the fraction of worker time spent in tasks,
the tasks started, and how many workers ran anything.
"""
import argparse
import json
import sys


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("trace")
    p.add_argument("--bucket-ms", type=float, default=5.0)
    a = p.parse_args()
    with open(a.trace) as f:
        events = [e for e in json.load(f)["traceEvents"] if e.get("ph") == "X"]
    if not events:
        sys.exit("no task events in the trace")
    events.sort(key=lambda e: (e["ts"], -e["dur"]))
    # A scope's body is the task that contains tasks of its own worker (those it ran while it
    # waited); a run is everything inside the last body.
    bodies, open_by_tid = [], {}
    for e in events:
        outer = open_by_tid.get(e["tid"])
        if outer is not None and e["ts"] < outer["ts"] + outer["dur"]:
            if not bodies or bodies[-1] is not outer:
                bodies.append(outer)
            continue
        open_by_tid[e["tid"]] = e
    if not bodies:
        sys.exit("no scope body (a task that ran others while it waited) in the trace")
    body = bodies[-1]
    t0, t1 = body["ts"], body["ts"] + body["dur"]
    tasks = [e for e in events if e is not body and t0 <= e["ts"] < t1]
    workers = sorted({e["tid"] for e in tasks} | {body["tid"]})
    first_nested = min((e["ts"] for e in tasks if e["tid"] == body["tid"]), default=t1)
    print(f"{len(bodies)} run(s); the last: {len(tasks)} tasks on {len(workers)} workers in "
          f"{(t1 - t0) / 1e3:.2f} ms; the body (worker {body['tid']}) ran its first task after "
          f"{(first_nested - t0) / 1e3:.2f} ms (about when it finished creating them)")
    width = a.bucket_ms * 1e3
    n = int((t1 - t0) // width) + 1
    busy = [0.0] * n
    started = [0] * n
    active = [set() for _ in range(n)]
    for e in tasks:
        s, d = e["ts"] - t0, e["dur"]
        started[int(s // width)] += 1
        b = int(s // width)
        while d > 0 and b < n:
            edge = (b + 1) * width
            part = min(d, edge - s)
            busy[b] += part
            active[b].add(e["tid"])
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
    # Between tasks: per worker, the idle gaps from one task's end to the next task's start
    # (top-level tasks only: a task nested in the body is not a gap of the body's worker).
    gaps = []
    for tid in workers:
        mine = sorted((e["ts"], e["ts"] + e["dur"]) for e in tasks if e["tid"] == tid)
        for (_, end), (start, _) in zip(mine, mine[1:]):
            if start >= end:
                gaps.append(start - end)
    if gaps:
        gaps.sort()
        q = lambda f: gaps[min(len(gaps) - 1, int(f * len(gaps)))]
        print(f"gaps between a worker's tasks (us): median {q(0.5):.2f}, p90 {q(0.9):.2f}, "
              f"p99 {q(0.99):.2f}, max {gaps[-1]:.1f}; {sum(gaps) / 1e3:.1f} ms in all, "
              f"{sum(g for g in gaps if g > 50) / 1e3:.1f} ms of it in gaps over 50 us")
    by_label = {}
    for e in tasks:
        label = e.get("args", {}).get("task", e["name"])
        n_d = by_label.setdefault(label, [0, 0.0])
        n_d[0] += 1
        n_d[1] += e["dur"]
    print("tasks by label: " + ", ".join(
        f"{k} {n} x {d / n:.2f} us" for k, (n, d) in sorted(by_label.items())))


if __name__ == "__main__":
    main()
