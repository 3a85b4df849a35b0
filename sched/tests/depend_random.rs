//! Randomized tests of the dependence tracker at scale: 100,000 tasks with random access sets over
//! a few hundred overlapping byte ranges, run by 1 to 4 worker threads, checked against
//! oracles computed in program order.
//!
//! The executor is deliberately small: the submitting thread registers every task in program
//! order while N worker threads pull ready tasks from one shared queue, run them, complete
//! them, and push what the completion releases. It exercises the tracker exactly as the
//! runtime will (concurrent submission and completions, releases from any thread).
//!
//! Addresses are plain numbers (the tracker never dereferences them). All range boundaries cut
//! the address space into *cells*; every task accesses each cell of its ranges uniformly, so
//! checking per cell is checking per byte.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, AtomicI32, AtomicU32, AtomicUsize, Ordering};
use std::sync::{Condvar, Mutex};
use std::thread;
use std::time::{Duration, Instant};

mod common;
use common::within;
use numatask_sched::depend::{Access, AccessKind};
use numatask_sched::depend::{DepTracker, Ready, Released, Submitted};

/// Bytes of the address space the ranges are drawn from.
const SPACE: usize = 4096;
/// Ranges in the pool tasks draw their accesses from.
const POOL: usize = 300;
/// The executor gives up (and the test fails) after this long without any task finishing.
const STALL: Duration = Duration::from_secs(30);

/// SplitMix64: small, fast, and enough for test data.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

/// A pool of overlapping ranges and the cells their boundaries cut.
struct Ranges {
    /// `(start, len)` of each range.
    ranges: Vec<(usize, usize)>,
    /// Cell boundaries, sorted: cell `i` is `[bounds[i], bounds[i + 1])`.
    bounds: Vec<usize>,
}

impl Ranges {
    fn new(rng: &mut Rng) -> Self {
        let ranges: Vec<(usize, usize)> = (0..POOL)
            .map(|_| {
                let start = rng.below(SPACE);
                let len = 1 + rng.below(96);
                (start, len.min(SPACE - start))
            })
            .collect();
        let mut bounds: Vec<usize> = ranges.iter().flat_map(|&(s, l)| [s, s + l]).collect();
        bounds.sort_unstable();
        bounds.dedup();
        Ranges { ranges, bounds }
    }

    fn cells(&self) -> usize {
        self.bounds.len() - 1
    }

    /// The cells range `r` covers.
    fn cells_of(&self, r: usize) -> std::ops::Range<usize> {
        let (start, len) = self.ranges[r];
        let first = self.bounds.binary_search(&start).expect("a boundary");
        let last = self
            .bounds
            .binary_search(&(start + len))
            .expect("a boundary");
        first..last
    }
}

/// Draws a task: one to three accesses from the pool (possibly overlapping each other), with
/// kinds from `kinds` (repeated entries weigh more).
fn draw_task(rng: &mut Rng, kinds: &[AccessKind]) -> Vec<(usize, AccessKind)> {
    let n = 1 + rng.below(3);
    (0..n)
        .map(|_| (rng.below(POOL), kinds[rng.below(kinds.len())]))
        .collect()
}

/// The kind a task's declarations give one cell: the tracker's merge rule (equal kinds stay,
/// different kinds are `inout`), with `out` and `inout` both a write.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum CellKind {
    Read,
    Write,
    MutexSet,
    InOutSet,
}

fn cell_kind(kind: AccessKind) -> CellKind {
    match kind {
        AccessKind::In => CellKind::Read,
        AccessKind::Out | AccessKind::InOut => CellKind::Write,
        AccessKind::MutexInOutSet => CellKind::MutexSet,
        AccessKind::InOutSet => CellKind::InOutSet,
    }
}

/// Per task, the cells it touches with their merged kind, sorted by cell.
fn task_cells(ranges: &Ranges, task: &[(usize, AccessKind)]) -> Vec<(usize, CellKind)> {
    let mut cells: Vec<(usize, CellKind)> = Vec::new();
    for &(r, kind) in task {
        for c in ranges.cells_of(r) {
            cells.push((c, cell_kind(kind)));
        }
    }
    cells.sort_unstable_by_key(|&(c, _)| c);
    let mut merged: Vec<(usize, CellKind)> = Vec::with_capacity(cells.len());
    for (c, k) in cells {
        match merged.last_mut() {
            Some((last, lk)) if *last == c => {
                if *lk != k {
                    *lk = CellKind::Write;
                }
            }
            _ => merged.push((c, k)),
        }
    }
    merged
}

fn accesses(ranges: &Ranges, task: &[(usize, AccessKind)]) -> Vec<Access> {
    task.iter()
        .map(|&(r, kind)| {
            let (start, len) = ranges.ranges[r];
            Access::new(start, len, kind)
        })
        .collect()
}

/// Failures seen by the workers; the first message is kept.
#[derive(Default)]
struct Failures {
    count: AtomicUsize,
    first: Mutex<Option<String>>,
}

impl Failures {
    fn report(&self, msg: impl FnOnce() -> String) {
        if self.count.fetch_add(1, Ordering::Relaxed) == 0 {
            *self.first.lock().unwrap() = Some(msg());
        }
    }

    fn assert_none(&self) {
        let n = self.count.load(Ordering::Relaxed);
        assert_eq!(
            n,
            0,
            "{n} failures, first: {:?}",
            self.first.lock().unwrap()
        );
    }
}

/// Runs every task through a tracker: the calling thread submits in program order, `workers`
/// threads run ready tasks. `run(id)` runs task `id` and returns whether it "panicked" (then
/// it is completed with `complete_panicked`). Returns the ids of the cancelled tasks, sorted.
fn execute(workers: usize, tasks: &[Vec<Access>], run: &(dyn Fn(u32) -> bool + Sync)) -> Vec<u32> {
    let n = tasks.len();
    let tracker = DepTracker::<u32>::new();
    let queue: Mutex<VecDeque<Ready<u32>>> = Mutex::new(VecDeque::new());
    let wake = Condvar::new();
    let finished = AtomicUsize::new(0);
    let stop = AtomicBool::new(false);
    let cancelled: Mutex<Vec<u32>> = Mutex::new(Vec::new());

    let push_all = |ready: &mut Vec<Ready<u32>>| {
        if !ready.is_empty() {
            queue.lock().unwrap().extend(ready.drain(..));
            wake.notify_all();
        }
    };

    thread::scope(|s| {
        for _ in 0..workers {
            s.spawn(|| {
                let mut released = Vec::new();
                let mut dropped = Vec::new();
                loop {
                    let next = {
                        let mut q = queue.lock().unwrap();
                        loop {
                            if let Some(r) = q.pop_front() {
                                break Some(r);
                            }
                            if stop.load(Ordering::Relaxed) || finished.load(Ordering::Acquire) == n
                            {
                                break None;
                            }
                            q = wake.wait_timeout(q, Duration::from_millis(10)).unwrap().0;
                        }
                    };
                    let Some(Ready { handle, payload }) = next else {
                        wake.notify_all();
                        return;
                    };
                    let sink = |r: Released<u32>| match r {
                        Released::Ready(r) => released.push(r),
                        Released::Cancelled(id) => dropped.push(id),
                    };
                    if run(payload) {
                        handle.complete_panicked(sink);
                    } else {
                        handle.complete(sink);
                    }
                    push_all(&mut released);
                    let done = 1 + dropped.len();
                    if !dropped.is_empty() {
                        cancelled.lock().unwrap().append(&mut dropped);
                    }
                    finished.fetch_add(done, Ordering::Release);
                }
            });
        }

        let mut ready = Vec::new();
        for (id, accesses) in tasks.iter().enumerate() {
            match tracker.submit(accesses, id as u32) {
                Submitted::Ready(r) => {
                    ready.push(r);
                    // Hand tasks over in small batches, so workers start early.
                    if ready.len() >= 8 {
                        push_all(&mut ready);
                    }
                }
                Submitted::Deferred => {}
                Submitted::Cancelled(id, released) => {
                    let mut done = 1;
                    cancelled.lock().unwrap().push(id);
                    for r in released {
                        match r {
                            Released::Ready(r) => ready.push(r),
                            Released::Cancelled(other) => {
                                cancelled.lock().unwrap().push(other);
                                done += 1;
                            }
                        }
                    }
                    finished.fetch_add(done, Ordering::Release);
                }
            }
        }
        push_all(&mut ready);

        // Watchdog: a lost release shows up as no progress.
        let mut seen = finished.load(Ordering::Acquire);
        let mut since = Instant::now();
        while seen < n {
            thread::sleep(Duration::from_millis(2));
            let now = finished.load(Ordering::Acquire);
            if now != seen {
                seen = now;
                since = Instant::now();
            } else if since.elapsed() > STALL {
                stop.store(true, Ordering::Relaxed);
                wake.notify_all();
                break;
            }
        }
        wake.notify_all();
    });
    let finished = finished.load(Ordering::Acquire);
    assert_eq!(
        finished, n,
        "{workers} workers: only {finished} of {n} tasks finished (a task was never released)"
    );
    let mut cancelled = cancelled.into_inner().unwrap();
    cancelled.sort_unstable();
    cancelled
}

/// One task's view of a cell, for the version oracle.
struct VersionCheck {
    cell: u32,
    write: bool,
    /// `1 + id` of the last earlier writer of the cell, 0 if none.
    writer: u32,
    /// For a writer: reads of the cell since that writer, all of which must have finished.
    reads: u32,
}

/// `in`/`out`/`inout` only, checked with per-cell version counters: a task must see, on every
/// cell, the version written by the last earlier writer in program order, and a writer must
/// also see every read since that version finished; no writer may share a cell with another
/// running task.
fn versions_are_exact(workers: usize, tasks: usize, seed: u64) {
    let mut rng = Rng(seed);
    let ranges = Ranges::new(&mut rng);
    let kinds = [
        AccessKind::In,
        AccessKind::In,
        AccessKind::In,
        AccessKind::In,
        AccessKind::Out,
        AccessKind::Out,
        AccessKind::InOut,
        AccessKind::InOut,
        AccessKind::InOut,
    ];
    let mut declared = Vec::with_capacity(tasks);
    let mut offsets = Vec::with_capacity(tasks + 1);
    let mut checks: Vec<VersionCheck> = Vec::new();
    let mut last_writer = vec![0u32; ranges.cells()];
    let mut reads_since = vec![0u32; ranges.cells()];
    for id in 0..tasks {
        let task = draw_task(&mut rng, &kinds);
        offsets.push(checks.len());
        for (c, kind) in task_cells(&ranges, &task) {
            let write = kind == CellKind::Write;
            checks.push(VersionCheck {
                cell: c as u32,
                write,
                writer: last_writer[c],
                reads: reads_since[c],
            });
            if write {
                last_writer[c] = id as u32 + 1;
                reads_since[c] = 0;
            } else {
                reads_since[c] += 1;
            }
        }
        declared.push(accesses(&ranges, &task));
    }
    offsets.push(checks.len());

    let version: Vec<AtomicU32> = (0..ranges.cells()).map(|_| AtomicU32::new(0)).collect();
    let reads: Vec<AtomicU32> = (0..ranges.cells()).map(|_| AtomicU32::new(0)).collect();
    // -1: a writer runs; n > 0: n readers run.
    let active: Vec<AtomicI32> = (0..ranges.cells()).map(|_| AtomicI32::new(0)).collect();
    let failures = Failures::default();
    let run = |id: u32| {
        let mine = &checks[offsets[id as usize]..offsets[id as usize + 1]];
        for ch in mine {
            let c = ch.cell as usize;
            if ch.write {
                if active[c]
                    .compare_exchange(0, -1, Ordering::Acquire, Ordering::Relaxed)
                    .is_err()
                {
                    failures.report(|| format!("task {id} writes cell {c} while others run"));
                }
                let r = reads[c].load(Ordering::Relaxed);
                if r != ch.reads {
                    failures.report(|| {
                        format!(
                            "task {id} writes cell {c} after {r} reads, expected {}",
                            ch.reads
                        )
                    });
                }
            } else if active[c].fetch_add(1, Ordering::Acquire) < 0 {
                failures.report(|| format!("task {id} reads cell {c} while a writer runs"));
            }
            let v = version[c].load(Ordering::Relaxed);
            if v != ch.writer {
                failures.report(|| {
                    format!(
                        "task {id} sees version {v} of cell {c}, expected {}",
                        ch.writer
                    )
                });
            }
        }
        for ch in mine {
            let c = ch.cell as usize;
            if ch.write {
                version[c].store(id + 1, Ordering::Relaxed);
                reads[c].store(0, Ordering::Relaxed);
                active[c].store(0, Ordering::Release);
            } else {
                reads[c].fetch_add(1, Ordering::Relaxed);
                active[c].fetch_sub(1, Ordering::Release);
            }
        }
        false
    };
    let cancelled = execute(workers, &declared, &run);
    assert_eq!(cancelled, Vec::<u32>::new());
    failures.assert_none();
}

/// Tasks of 1 to 3 accesses each; 100,000 of them, as the issue asks.
const TASKS: usize = 100_000;

/// The most seconds one test may take before it fails rather than hang: the watchdog above
/// catches a lost release, this a tracker stuck in a loop (whose threads the scope would
/// otherwise wait for forever).
const DEADLINE_S: u64 = 120;

#[test]
fn every_task_sees_exactly_its_predecessors_writes_with_1_worker() {
    within(DEADLINE_S, || versions_are_exact(1, TASKS, 1));
}

#[test]
fn every_task_sees_exactly_its_predecessors_writes_with_2_workers() {
    within(DEADLINE_S, || versions_are_exact(2, TASKS, 2));
}

#[test]
fn every_task_sees_exactly_its_predecessors_writes_with_3_workers() {
    within(DEADLINE_S, || versions_are_exact(3, TASKS, 3));
}

#[test]
fn every_task_sees_exactly_its_predecessors_writes_with_4_workers() {
    within(DEADLINE_S, || versions_are_exact(4, TASKS, 4));
}

/// One task's view of a cell, for the group oracle.
struct GroupCheck {
    cell: u32,
    kind: CellKind,
    /// The index of this task's group on the cell.
    group: u32,
    /// Tasks on the cell in groups before this task's group: all must have finished.
    before: u32,
}

/// All five kinds, and optionally panics. On each cell the tasks form a sequence of groups
/// (a run of readers, a run of one set kind, or a single writer); a task must start only once
/// every task of the earlier groups has finished (counted per cell), and members of a
/// `mutexinoutset` group must not run at the same time. A task is cancelled if, on some
/// cell, an earlier group holds a task that panicked or was cancelled; and a member of a
/// `mutexinoutset` group that would take the set after a member that panicked is cancelled
/// too (which members come after it depends on the run: no member runs after it, checked as
/// they run; a task cancelled otherwise must at least be a `mutexinoutset` member, checked
/// after, since a set object may serve several groups).
fn groups_are_ordered(workers: usize, tasks: usize, seed: u64, panic_one_in: Option<usize>) {
    let mut rng = Rng(seed);
    let ranges = Ranges::new(&mut rng);
    let kinds = [
        AccessKind::In,
        AccessKind::In,
        AccessKind::In,
        AccessKind::Out,
        AccessKind::InOut,
        AccessKind::InOut,
        AccessKind::MutexInOutSet,
        AccessKind::MutexInOutSet,
        AccessKind::InOutSet,
        AccessKind::InOutSet,
    ];
    let cells = ranges.cells();
    let mut declared = Vec::with_capacity(tasks);
    let mut offsets = Vec::with_capacity(tasks + 1);
    let mut checks: Vec<GroupCheck> = Vec::new();
    let mut panics = Vec::with_capacity(tasks);
    // Per cell: kind of the current group, tasks before it, tasks in it, its index.
    let mut group_kind: Vec<Option<CellKind>> = vec![None; cells];
    let mut before = vec![0u32; cells];
    let mut in_group = vec![0u32; cells];
    let mut group_index = vec![0u32; cells];
    for _ in 0..tasks {
        let task = draw_task(&mut rng, &kinds);
        offsets.push(checks.len());
        let mine = task_cells(&ranges, &task);
        for &(c, kind) in &mine {
            let joins = kind != CellKind::Write && group_kind[c] == Some(kind);
            if !joins {
                before[c] += in_group[c];
                in_group[c] = 0;
                group_index[c] += 1;
                group_kind[c] = Some(kind);
            }
            in_group[c] += 1;
            checks.push(GroupCheck {
                cell: c as u32,
                kind,
                group: group_index[c],
                before: before[c],
            });
        }
        panics.push(panic_one_in.is_some_and(|k| rng.below(k) == 0));
        declared.push(accesses(&ranges, &task));
    }
    offsets.push(checks.len());

    let started = vec![false; tasks]
        .into_iter()
        .map(AtomicBool::new)
        .collect::<Vec<_>>();
    let finished: Vec<AtomicU32> = (0..cells).map(|_| AtomicU32::new(0)).collect();
    let exclusive: Vec<AtomicU32> = (0..cells).map(|_| AtomicU32::new(0)).collect();
    // Per cell: 1 + the `mutexinoutset` group in which a member panicked while holding the set.
    let set_poisoned: Vec<AtomicU32> = (0..cells).map(|_| AtomicU32::new(0)).collect();
    let failures = Failures::default();
    let run = |id: u32| {
        if started[id as usize].swap(true, Ordering::Relaxed) {
            failures.report(|| format!("task {id} ran twice"));
        }
        let mine = &checks[offsets[id as usize]..offsets[id as usize + 1]];
        for ch in mine {
            let c = ch.cell as usize;
            let f = finished[c].load(Ordering::Acquire);
            if f < ch.before {
                failures.report(|| {
                    format!(
                        "task {id} ({:?}) starts on cell {c} after {f} tasks finished there, \
                         expected at least {}",
                        ch.kind, ch.before
                    )
                });
            }
            if ch.kind == CellKind::MutexSet
                && exclusive[c]
                    .compare_exchange(0, id + 1, Ordering::Acquire, Ordering::Relaxed)
                    .is_err()
            {
                failures.report(|| format!("two mutexinoutset members run on cell {c}"));
            }
            if ch.kind == CellKind::MutexSet
                && set_poisoned[c].load(Ordering::Acquire) == ch.group + 1
            {
                failures.report(|| {
                    format!("task {id} runs on cell {c} after a member of its set panicked")
                });
            }
        }
        if mine.iter().any(|ch| ch.kind == CellKind::MutexSet) {
            // Stay a while, so that a member released too early overlaps this one.
            thread::yield_now();
        }
        for ch in mine {
            let c = ch.cell as usize;
            if ch.kind == CellKind::MutexSet {
                if panics[id as usize] {
                    set_poisoned[c].store(ch.group + 1, Ordering::Release);
                }
                exclusive[c].store(0, Ordering::Release);
            }
            finished[c].fetch_add(1, Ordering::Release);
        }
        panics[id as usize]
    };
    let cancelled = execute(workers, &declared, &run);
    failures.assert_none();
    let was_cancelled = |id: usize| cancelled.binary_search(&(id as u32)).is_ok();
    // Which `mutexinoutset` groups (cell, group) hold a member that ran and panicked.
    let mut panicked_sets = std::collections::HashSet::new();
    for id in (0..tasks).filter(|&id| panics[id] && !was_cancelled(id)) {
        for ch in &checks[offsets[id]..offsets[id + 1]] {
            if ch.kind == CellKind::MutexSet {
                panicked_sets.insert((ch.cell, ch.group));
            }
        }
    }
    // In program order: a task after a poisoned group (one with a task that panicked or was
    // cancelled) on any of its cells must be cancelled; a task cancelled otherwise must be a
    // member of a set in which a member panicked.
    let mut poisoned_group: Vec<Option<u32>> = vec![None; cells];
    for id in 0..tasks {
        let mine = &checks[offsets[id]..offsets[id + 1]];
        let after_poison = mine
            .iter()
            .any(|ch| poisoned_group[ch.cell as usize].is_some_and(|p| p < ch.group));
        // A member of a set that a panicking member poisoned: of its own group on some cell
        // or, since one set object may serve several groups (a task's runs on several
        // ranges, both halves of a split range), of any group if some member panicked.
        let in_panicked_set =
            !panicked_sets.is_empty() && mine.iter().any(|ch| ch.kind == CellKind::MutexSet);
        if after_poison {
            assert!(was_cancelled(id), "task {id} ran after a poisoned group");
        } else if was_cancelled(id) {
            assert!(
                in_panicked_set,
                "task {id} was cancelled, but nothing before it panicked"
            );
        }
        if was_cancelled(id) || panics[id] {
            for ch in mine {
                let p = &mut poisoned_group[ch.cell as usize];
                *p = Some(p.map_or(ch.group, |p| p.min(ch.group)));
            }
        }
    }
    for (id, started) in started.iter().enumerate() {
        let ran = started.load(Ordering::Relaxed);
        let was_cancelled = cancelled.binary_search(&(id as u32)).is_ok();
        assert!(
            ran != was_cancelled,
            "task {id}: ran {ran}, cancelled {was_cancelled}"
        );
    }
}

#[test]
fn set_kinds_are_ordered_and_mutexinoutset_members_exclusive_with_1_worker() {
    within(DEADLINE_S, || groups_are_ordered(1, 30_000, 11, None));
}

#[test]
fn set_kinds_are_ordered_and_mutexinoutset_members_exclusive_with_4_workers() {
    within(DEADLINE_S, || groups_are_ordered(4, 30_000, 14, None));
}

#[test]
fn panics_cancel_exactly_the_dependent_tasks() {
    within(DEADLINE_S, || {
        for workers in 1..=4 {
            groups_are_ordered(workers, 10_000, 20 + workers as u64, Some(2_000));
        }
    });
}
