//! The runtime's bounded Chase-Lev deque against crossbeam-deque's growable one.
//!
//! - `push_pop`: the owner pushes a batch of 64 items and pops them back (the common case in a
//!   task runtime: a worker spawns tasks and runs them itself). Reported per item.
//! - `steal`: a thief empties a deque of 64 items pushed by the owner, single-threaded (the
//!   cost of the steal path itself, without contention). Reported per item.
//! - `steal_contended`: one owner pushes and pops while one thief thread steals continuously
//!   (one thief: CI and developer machines have 2 cores); the measured thread is the owner, so
//!   this shows what a thief costs the owner.
//! - `node_queue`: the per-node MPMC queue against a `Mutex<VecDeque>` with an atomic length
//!   (the simple alternative), push then pop of a batch on one thread, and with a second thread
//!   pushing and popping the same queue.

use std::hint::black_box;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread;

use std::collections::VecDeque;
use std::sync::Mutex;
use std::sync::atomic::AtomicUsize;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use numatask_sched::__internals::NodeQueue;
use numatask_sched::__internals::{Steal, deque};

const BATCH: usize = 64;

fn push_pop(c: &mut Criterion) {
    let mut group = c.benchmark_group("push_pop");
    group.throughput(Throughput::Elements(BATCH as u64));
    group.bench_function("numatask", |b| {
        let (w, _s) = deque::<usize>(256);
        b.iter(|| {
            for i in 0..BATCH {
                let _ = w.push(black_box(i));
            }
            for _ in 0..BATCH {
                black_box(w.pop());
            }
        });
    });
    group.bench_function("crossbeam", |b| {
        let w = crossbeam_deque::Worker::<usize>::new_lifo();
        let _s = w.stealer();
        b.iter(|| {
            for i in 0..BATCH {
                w.push(black_box(i));
            }
            for _ in 0..BATCH {
                black_box(w.pop());
            }
        });
    });
    group.finish();
}

fn steal(c: &mut Criterion) {
    let mut group = c.benchmark_group("steal");
    group.throughput(Throughput::Elements(BATCH as u64));
    group.bench_function("numatask", |b| {
        let (w, s) = deque::<usize>(256);
        b.iter(|| {
            for i in 0..BATCH {
                let _ = w.push(black_box(i));
            }
            while let Steal::Success(i) = s.steal() {
                black_box(i);
            }
        });
    });
    group.bench_function("crossbeam", |b| {
        let w = crossbeam_deque::Worker::<usize>::new_lifo();
        let s = w.stealer();
        b.iter(|| {
            for i in 0..BATCH {
                w.push(black_box(i));
            }
            while let crossbeam_deque::Steal::Success(i) = s.steal() {
                black_box(i);
            }
        });
    });
    group.finish();
}

/// Runs `measure` while another thread calls `steal` until told to stop.
fn with_thieves(steal: impl Fn() + Send + Sync + 'static, measure: impl FnOnce()) {
    let stop = Arc::new(AtomicBool::new(false));
    let steal = Arc::new(steal);
    let thieves: Vec<_> = (0..1)
        .map(|_| {
            let stop = Arc::clone(&stop);
            let steal = Arc::clone(&steal);
            thread::spawn(move || {
                while !stop.load(Ordering::Relaxed) {
                    steal();
                }
            })
        })
        .collect();
    measure();
    stop.store(true, Ordering::Relaxed);
    for t in thieves {
        let _ = t.join();
    }
}

fn steal_contended(c: &mut Criterion) {
    let mut group = c.benchmark_group("steal_contended");
    group.throughput(Throughput::Elements(BATCH as u64));
    {
        let (w, s) = deque::<usize>(256);
        with_thieves(
            move || {
                black_box(s.steal().success());
            },
            || {
                group.bench_function("numatask", |b| {
                    b.iter(|| {
                        for i in 0..BATCH {
                            let _ = w.push(black_box(i));
                        }
                        while let Some(i) = w.pop() {
                            black_box(i);
                        }
                    });
                });
            },
        );
    }
    {
        let w = crossbeam_deque::Worker::<usize>::new_lifo();
        let s = w.stealer();
        with_thieves(
            move || {
                black_box(s.steal().success());
            },
            || {
                group.bench_function("crossbeam", |b| {
                    b.iter(|| {
                        for i in 0..BATCH {
                            w.push(black_box(i));
                        }
                        while let Some(i) = w.pop() {
                            black_box(i);
                        }
                    });
                });
            },
        );
    }
    group.finish();
}

/// The simple alternative to `NodeQueue`: a locked `VecDeque` and a lock-free length.
#[derive(Default)]
struct LockedQueue {
    items: Mutex<VecDeque<usize>>,
    len: AtomicUsize,
}

impl LockedQueue {
    fn push(&self, item: usize) {
        let mut items = self.items.lock().unwrap_or_else(|e| e.into_inner());
        items.push_back(item);
        self.len.store(items.len(), Ordering::Relaxed);
    }

    fn pop(&self) -> Option<usize> {
        let mut items = self.items.lock().unwrap_or_else(|e| e.into_inner());
        let item = items.pop_front();
        self.len.store(items.len(), Ordering::Relaxed);
        item
    }
}

fn node_queue(c: &mut Criterion) {
    let mut group = c.benchmark_group("node_queue");
    group.throughput(Throughput::Elements(BATCH as u64));
    let node_queue = Arc::new(NodeQueue::<usize>::new());
    let locked = Arc::new(LockedQueue::default());
    group.bench_function("numatask", |b| {
        b.iter(|| {
            for i in 0..BATCH {
                node_queue.push(black_box(i));
            }
            for _ in 0..BATCH {
                black_box(node_queue.pop());
            }
        });
    });
    group.bench_function("mutex_vecdeque", |b| {
        b.iter(|| {
            for i in 0..BATCH {
                locked.push(black_box(i));
            }
            for _ in 0..BATCH {
                black_box(locked.pop());
            }
        });
    });
    {
        let q = Arc::clone(&node_queue);
        with_thieves(
            move || {
                q.push(1);
                black_box(q.pop());
            },
            || {
                group.bench_function("numatask_contended", |b| {
                    b.iter(|| {
                        for i in 0..BATCH {
                            node_queue.push(black_box(i));
                        }
                        for _ in 0..BATCH {
                            black_box(node_queue.pop());
                        }
                    });
                });
            },
        );
    }
    {
        let q = Arc::clone(&locked);
        with_thieves(
            move || {
                q.push(1);
                black_box(q.pop());
            },
            || {
                group.bench_function("mutex_vecdeque_contended", |b| {
                    b.iter(|| {
                        for i in 0..BATCH {
                            locked.push(black_box(i));
                        }
                        for _ in 0..BATCH {
                            black_box(locked.pop());
                        }
                    });
                });
            },
        );
    }
    group.finish();
}

criterion_group!(benches, push_pop, steal, steal_contended, node_queue);
criterion_main!(benches);
