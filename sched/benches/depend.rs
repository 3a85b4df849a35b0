//! Cost of dependence tracking per task: `submit` plus `complete`, with no task body.
//!
//! - `independent/k`: tasks writing `k` disjoint blocks that the previous round wrote (the
//!   predecessor has finished: the exact-match lookup, no edge). Reported per task.
//! - `chain/k`: 256 tasks that all `inout` the same `k` blocks, submitted before any completes
//!   (each waits for the previous one), then completed in order. Reported per task.
//! - `fan_in/k`: `k` writers of distinct blocks and one reader of all of them. Reported per
//!   task (`k + 1` per iteration).
//! - `sparselu/serial`: the task graph of BOTS SparseLU (lu0, fwd, bdiv, bmod with `in` and
//!   `inout` on whole blocks, the BOTS null-block pattern with fill-in), one thread submitting
//!   every task and then running the ready queue. Reported per task.
//! - `sparselu/two_threads`: the same graph, one thread submitting while another completes
//!   ready tasks from a shared queue as they come (the 2-core situation; the shared
//!   `Mutex<VecDeque>` queue is part of the cost). Reported per task.

use std::collections::VecDeque;
use std::hint::black_box;
use std::sync::{Condvar, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use numatask_sched::depend::{Access, AccessKind};
use numatask_sched::depend::{DepTracker, Ready, Released, Submitted};

/// Bytes of one block (SparseLU's fine configuration: 25 x 25 floats).
const BLOCK: usize = 25 * 25 * 4;
/// Base address of the fake matrix (never dereferenced).
const BASE: usize = 1 << 32;

fn block(i: usize, kind: AccessKind) -> Access {
    Access::new(BASE + i * BLOCK, BLOCK, kind)
}

fn run_ready(ready: Ready<u32>, queue: &mut VecDeque<Ready<u32>>) {
    black_box(ready.payload);
    ready.handle.complete(|r| {
        if let Released::Ready(r) = r {
            queue.push_back(r);
        }
    });
}

fn independent(c: &mut Criterion) {
    let mut group = c.benchmark_group("depend/independent");
    group.throughput(Throughput::Elements(1));
    for k in [1usize, 2, 4] {
        group.bench_function(BenchmarkId::from_parameter(k), |b| {
            let tracker = DepTracker::new();
            let mut queue = VecDeque::new();
            let mut round = 0usize;
            b.iter(|| {
                let first = (round % 256) * k;
                round += 1;
                let accesses: [Access; 4] =
                    std::array::from_fn(|j| block(first + j, AccessKind::Out));
                match tracker.submit(&accesses[..k], round as u32) {
                    Submitted::Ready(r) => run_ready(r, &mut queue),
                    _ => unreachable!("the previous writer has finished"),
                }
            });
        });
    }
    group.finish();
}

fn chain(c: &mut Criterion) {
    const LEN: usize = 256;
    let mut group = c.benchmark_group("depend/chain");
    group.throughput(Throughput::Elements(LEN as u64));
    for k in [1usize, 2, 4] {
        group.bench_function(BenchmarkId::from_parameter(k), |b| {
            let tracker = DepTracker::new();
            let mut queue = VecDeque::new();
            let accesses: Vec<Access> = (0..k).map(|j| block(j, AccessKind::InOut)).collect();
            b.iter(|| {
                for i in 0..LEN {
                    if let Submitted::Ready(r) = tracker.submit(&accesses, i as u32) {
                        queue.push_back(r);
                    }
                }
                while let Some(r) = queue.pop_front() {
                    run_ready(r, &mut queue);
                }
            });
        });
    }
    group.finish();
}

fn fan_in(c: &mut Criterion) {
    let mut group = c.benchmark_group("depend/fan_in");
    for k in [1usize, 2, 4, 16] {
        group.throughput(Throughput::Elements(k as u64 + 1));
        group.bench_function(BenchmarkId::from_parameter(k), |b| {
            let tracker = DepTracker::new();
            let mut queue = VecDeque::new();
            let reads: Vec<Access> = (0..k).map(|j| block(j, AccessKind::In)).collect();
            b.iter(|| {
                for j in 0..k {
                    if let Submitted::Ready(r) =
                        tracker.submit(&[block(j, AccessKind::Out)], j as u32)
                    {
                        queue.push_back(r);
                    }
                }
                if let Submitted::Ready(r) = tracker.submit(&reads, k as u32) {
                    queue.push_back(r);
                }
                while let Some(r) = queue.pop_front() {
                    run_ready(r, &mut queue);
                }
            });
        });
    }
    group.finish();
}

/// The accesses of every task of SparseLU on an `nb` x `nb` block matrix, in program order.
fn sparselu_graph(nb: usize) -> Vec<Vec<Access>> {
    let present = |ii: usize, jj: usize| {
        let mut null = (ii < jj && !ii.is_multiple_of(3)) || (ii > jj && !jj.is_multiple_of(3));
        null |= ii % 2 == 1 || jj % 2 == 1;
        if ii == jj || ii + 1 == jj || ii == jj + 1 {
            null = false;
        }
        !null
    };
    let mut m: Vec<bool> = (0..nb * nb).map(|i| present(i / nb, i % nb)).collect();
    let at = |ii: usize, jj: usize| ii * nb + jj;
    let mut tasks = Vec::new();
    for kk in 0..nb {
        tasks.push(vec![block(at(kk, kk), AccessKind::InOut)]);
        for jj in kk + 1..nb {
            if m[at(kk, jj)] {
                tasks.push(vec![
                    block(at(kk, kk), AccessKind::In),
                    block(at(kk, jj), AccessKind::InOut),
                ]);
            }
        }
        for ii in kk + 1..nb {
            if m[at(ii, kk)] {
                tasks.push(vec![
                    block(at(kk, kk), AccessKind::In),
                    block(at(ii, kk), AccessKind::InOut),
                ]);
            }
        }
        for ii in kk + 1..nb {
            if !m[at(ii, kk)] {
                continue;
            }
            for jj in kk + 1..nb {
                if !m[at(kk, jj)] {
                    continue;
                }
                m[at(ii, jj)] = true;
                tasks.push(vec![
                    block(at(ii, kk), AccessKind::In),
                    block(at(kk, jj), AccessKind::In),
                    block(at(ii, jj), AccessKind::InOut),
                ]);
            }
        }
    }
    tasks
}

fn sparselu(c: &mut Criterion) {
    let graph = sparselu_graph(50);
    let mut group = c.benchmark_group("depend/sparselu");
    group.throughput(Throughput::Elements(graph.len() as u64));
    group.sample_size(20);
    group.bench_function("serial", |b| {
        b.iter(|| {
            let tracker = DepTracker::new();
            let mut queue = VecDeque::new();
            for (i, accesses) in graph.iter().enumerate() {
                if let Submitted::Ready(r) = tracker.submit(accesses, i as u32) {
                    queue.push_back(r);
                }
            }
            while let Some(r) = queue.pop_front() {
                run_ready(r, &mut queue);
            }
        });
    });
    group.bench_function("two_threads", |b| {
        b.iter_custom(|iters| {
            let mut total = Duration::ZERO;
            for _ in 0..iters {
                total += sparselu_two_threads(&graph);
            }
            total
        });
    });
    group.finish();
}

/// A ready queue for one consumer that is woken only when it sleeps (std's `notify_one` is a
/// system call even when nobody waits).
struct ReadyQueue {
    state: Mutex<(VecDeque<Ready<u32>>, bool)>,
    wake: Condvar,
}

impl ReadyQueue {
    fn push(&self, items: impl IntoIterator<Item = Ready<u32>>) {
        let mut state = self.state.lock().unwrap();
        state.0.extend(items);
        if state.1 && !state.0.is_empty() {
            state.1 = false;
            self.wake.notify_one();
        }
    }

    fn pop(&self) -> Ready<u32> {
        let mut state = self.state.lock().unwrap();
        loop {
            if let Some(r) = state.0.pop_front() {
                return r;
            }
            state.1 = true;
            state = self.wake.wait(state).unwrap();
        }
    }
}

fn sparselu_two_threads(graph: &[Vec<Access>]) -> Duration {
    let tracker = DepTracker::new();
    let queue = ReadyQueue {
        state: Mutex::new((VecDeque::new(), false)),
        wake: Condvar::new(),
    };
    let start = Instant::now();
    thread::scope(|s| {
        s.spawn(|| {
            let mut released = Vec::new();
            for _ in 0..graph.len() {
                let next = queue.pop();
                black_box(next.payload);
                next.handle.complete(|r| {
                    if let Released::Ready(r) = r {
                        released.push(r);
                    }
                });
                if !released.is_empty() {
                    queue.push(released.drain(..));
                }
            }
        });
        for (i, accesses) in graph.iter().enumerate() {
            if let Submitted::Ready(r) = tracker.submit(accesses, i as u32) {
                queue.push([r]);
            }
        }
    });
    start.elapsed()
}

criterion_group!(benches, independent, chain, fan_in, sparselu);
criterion_main!(benches);
