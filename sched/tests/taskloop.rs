//! `Scope::taskloop`, `taskloop_reduce`, `taskloop_mut`, `taskloop_zip`, `taskloop_slice` and
//! `taskloop_reduce_slice`: every iteration exactly once,
//! chunks as the grain says, in parallel, waited for with their descendants, results reduced
//! in order, panics resumed at the loop.

mod common;

use std::collections::HashSet;
use std::panic::{self, AssertUnwindSafe};
use std::sync::Mutex;
use std::sync::atomic::{AtomicU8, AtomicUsize, Ordering};

use common::{runtime, within};
use numatask_sched::taskloop::Grain;

const GRAINS: [Grain; 6] = [
    Grain::Auto,
    Grain::Size(1),
    Grain::Size(7),
    Grain::Size(1000),
    Grain::Tasks(1),
    Grain::Tasks(13),
];

/// Calls `case(rt, workers, start, len, grain)` for every worker count from 1 to 4 (one
/// runtime each), loop length and grain of the range tests; loops start at 17.
fn for_each_range_case(mut case: impl FnMut(&numatask_sched::Runtime, usize, usize, usize, Grain)) {
    for workers in 1..=4 {
        let rt = runtime(workers);
        for len in [0usize, 1, 2, 5, 64, 999] {
            for grain in GRAINS {
                case(&rt, workers, 17, len, grain);
            }
        }
    }
}

/// Calls `case(rt, workers, len, grain)` for every worker count from 1 to 4 (one runtime
/// each), slice length and grain of the slice tests.
fn for_each_slice_case(mut case: impl FnMut(&numatask_sched::Runtime, usize, usize, Grain)) {
    for workers in 1..=4 {
        let rt = runtime(workers);
        for len in [0usize, 1, 3, 100, 4099] {
            for grain in GRAINS {
                case(&rt, workers, len, grain);
            }
        }
    }
}

#[test]
fn every_iteration_runs_exactly_once_in_chunks_the_grain_allows() {
    within(120, || {
        for_each_range_case(|rt, workers, start, len, grain| {
            let seen: Vec<AtomicU8> = (0..len).map(|_| AtomicU8::new(0)).collect();
            let chunks = Mutex::new(Vec::new());
            rt.scope(|s| {
                s.taskloop(start..start + len, grain, |_, chunk| {
                    chunks.lock().unwrap().push(chunk.len());
                    for i in chunk {
                        seen[i - start].fetch_add(1, Ordering::Relaxed);
                    }
                });
            });
            let what = format!("{len} iterations, {grain:?}, {workers} workers");
            assert!(
                seen.iter().all(|n| n.load(Ordering::Relaxed) == 1),
                "{what}: an iteration ran other than once"
            );
            let chunks = chunks.into_inner().unwrap();
            if len == 0 {
                assert!(chunks.is_empty(), "{what}: the body ran");
                return;
            }
            assert_eq!(chunks.len(), grain.chunks(len, workers), "{what}");
            assert!(chunks.iter().all(|&c| c >= 1), "{what}: an empty chunk");
            if let Grain::Size(size) = grain
                && len >= size
            {
                assert!(
                    chunks.iter().all(|&c| (size..2 * size).contains(&c)),
                    "{what}: chunks {chunks:?}"
                );
            }
        });
    });
}

#[test]
fn a_slice_loop_hands_each_element_to_one_chunk_at_its_offset() {
    within(120, || {
        for_each_slice_case(|rt, workers, len, grain| {
            let mut v = vec![0usize; len];
            let calls = AtomicUsize::new(0);
            rt.scope(|s| {
                s.taskloop_mut(&mut v, grain, |_, offset, chunk| {
                    calls.fetch_add(1, Ordering::Relaxed);
                    for (i, x) in chunk.iter_mut().enumerate() {
                        *x += offset + i + 1;
                    }
                });
            });
            let what = format!("{len} elements, {grain:?}, {workers} workers");
            assert!(
                v.iter().enumerate().all(|(i, &x)| x == i + 1),
                "{what}: an element written other than once, or at a wrong offset"
            );
            // An empty loop runs no chunk: `chunks` gives 0 for it.
            assert_eq!(calls.into_inner(), grain.chunks(len, workers), "{what}");
        });
    });
}

#[test]
fn a_zipped_loop_hands_each_chunk_the_same_elements_of_every_input() {
    within(120, || {
        for_each_slice_case(|rt, workers, len, grain| {
            let b: Vec<usize> = (0..len).collect();
            let c: Vec<usize> = (0..len).map(|i| 3 * i).collect();
            let mut a = vec![0usize; len];
            let calls = AtomicUsize::new(0);
            rt.scope(|s| {
                s.taskloop_zip(&mut a, [&b, &c], grain, |_, offset, a, [b, c]| {
                    calls.fetch_add(1, Ordering::Relaxed);
                    assert_eq!((a.len(), b.len()), (c.len(), c.len()));
                    assert_eq!(b.first(), (!b.is_empty()).then_some(&offset));
                    for ((a, b), c) in a.iter_mut().zip(b).zip(c) {
                        *a += b + c + 1;
                    }
                });
            });
            let what = format!("{len} elements, {grain:?}, {workers} workers");
            assert!(
                a.iter().enumerate().all(|(i, &x)| x == 4 * i + 1),
                "{what}: an element written other than once, or from other inputs"
            );
            // An empty loop runs no chunk: `chunks` gives 0 for it.
            assert_eq!(calls.into_inner(), grain.chunks(len, workers), "{what}");
        });
    });
}

#[test]
fn a_zipped_loop_over_a_tuple_hands_each_chunk_the_same_elements_of_inputs_of_other_types() {
    within(120, || {
        for_each_slice_case(|rt, workers, len, grain| {
            let index: Vec<u32> = (0..len as u32).collect();
            let scale: Box<[f64]> = (0..len).map(|i| (i % 7) as f64).collect();
            let keep: Vec<bool> = (0..len).map(|i| i % 3 != 0).collect();
            let bias = numatask_alloc::NumaVec::<u8>::filled(
                len.max(1),
                5,
                numatask_alloc::Distribution::Standard,
            )
            .expect("memory");
            let bias = &bias[..len];
            let mut out = vec![0.0f64; len];
            rt.scope(|s| {
                s.taskloop_zip(
                    &mut out,
                    (&index, &scale, &keep[..], bias),
                    grain,
                    |_, offset, out, (index, scale, keep, bias)| {
                        assert_eq!(
                            index.first().map(|&i| i as usize),
                            (len > 0).then_some(offset)
                        );
                        assert!(
                            [index.len(), scale.len(), keep.len(), bias.len()]
                                .iter()
                                .all(|&l| l == out.len())
                        );
                        for (k, o) in out.iter_mut().enumerate() {
                            if keep[k] {
                                *o += f64::from(index[k]) * scale[k] + f64::from(bias[k]);
                            }
                        }
                    },
                );
            });
            let what = format!("{len} elements, {grain:?}, {workers} workers");
            for (i, &o) in out.iter().enumerate() {
                let expected = if i % 3 != 0 {
                    i as f64 * (i % 7) as f64 + 5.0
                } else {
                    0.0
                };
                assert_eq!(o, expected, "{what}: element {i}");
            }
        });
    });
}

#[test]
fn a_zipped_loop_takes_references_to_inputs_and_mixed_containers_as_slices() {
    let rt = runtime(2);
    let v: Vec<u32> = (0..100).collect();
    let n = numatask_alloc::NumaVec::<u32>::filled(100, 1, numatask_alloc::Distribution::Fine)
        .expect("memory");
    let a: [u32; 100] = std::array::from_fn(|i| 2 * i as u32);
    let by_ref = &v;
    let mut out = vec![0u32; 100];
    rt.scope(|s| {
        // A reference to an input, and an array of inputs of other containers as slices.
        s.taskloop_zip(&mut out, [&by_ref], Grain::Size(7), |_, _, o, [v]| {
            o.copy_from_slice(v)
        });
        s.taskloop_zip(
            &mut out,
            [&v[..], &n[..], &a[..]],
            Grain::Size(7),
            |_, _, o, [v, n, a]| {
                for (k, o) in o.iter_mut().enumerate() {
                    *o += v[k] + n[k] + a[k];
                }
            },
        );
    });
    assert!(out.iter().enumerate().all(|(i, &o)| o == 4 * i as u32 + 1));
}

#[test]
fn a_zipped_loop_with_an_input_of_another_length_is_refused_before_it_runs() {
    let rt = runtime(2);
    let mut a = vec![0u32; 10];
    let (b, c) = (vec![1u32; 10], vec![1u32; 9]);
    let caught = panic::catch_unwind(AssertUnwindSafe(|| {
        rt.scope(|s| s.taskloop_zip(&mut a, [&b, &c], Grain::Auto, |_, _, a, _| a.fill(7)));
    }));
    let payload = caught.expect_err("a shorter input panics");
    let message = payload.downcast_ref::<String>().expect("a message");
    assert_eq!(
        message,
        "taskloop_zip: input 1 holds 9 elements and the output 10: every input must be as long \
         as the output"
    );
    assert!(a.iter().all(|&x| x == 0), "no chunk ran");
    // The same of a tuple's inputs, counted from 0.
    let flags = vec![true; 11];
    let caught = panic::catch_unwind(AssertUnwindSafe(|| {
        rt.scope(|s| s.taskloop_zip(&mut a, (&b, &flags), Grain::Auto, |_, _, a, _| a.fill(7)));
    }));
    let payload = caught.expect_err("a longer input panics");
    let message = payload.downcast_ref::<String>().expect("a message");
    assert!(
        message.starts_with("taskloop_zip: input 1 holds 11 elements and the output 10"),
        "{message}"
    );
    assert!(a.iter().all(|&x| x == 0), "no chunk ran");
    rt.scope(|s| {
        s.taskloop_zip(&mut a, [&b], Grain::Auto, |_, _, a, [b]| {
            a.copy_from_slice(b)
        })
    });
    assert!(a.iter().all(|&x| x == 1));
}

#[test]
fn a_read_only_slice_loop_and_reduction_see_each_element_once_at_its_offset() {
    within(120, || {
        for_each_range_case(|rt, workers, start, len, grain| {
            let v: Vec<usize> = (start..start + len).collect();
            let what = format!("{len} elements, {grain:?}, {workers} workers");
            let seen: Vec<AtomicU8> = (0..len).map(|_| AtomicU8::new(0)).collect();
            let calls = AtomicUsize::new(0);
            rt.scope(|s| {
                s.taskloop_slice(&v, grain, |_, offset, chunk| {
                    calls.fetch_add(1, Ordering::Relaxed);
                    for (i, &x) in chunk.iter().enumerate() {
                        assert_eq!(x, start + offset + i, "{what}: element at a wrong offset");
                        seen[offset + i].fetch_add(1, Ordering::Relaxed);
                    }
                });
            });
            assert!(
                seen.iter().all(|n| n.load(Ordering::Relaxed) == 1),
                "{what}: an element seen other than once"
            );
            // An empty loop runs no chunk: `chunks` gives 0 for it.
            assert_eq!(calls.into_inner(), grain.chunks(len, workers), "{what}");
            // The reduction keeps iteration order (concatenation is not commutative).
            let together: Vec<usize> = rt.scope(|s| {
                s.taskloop_reduce_slice(
                    &v,
                    grain,
                    Vec::new,
                    |_, offset, chunk| {
                        assert_eq!(chunk.first(), v.get(offset), "{what}");
                        chunk.to_vec()
                    },
                    |mut a, b| {
                        a.extend(b);
                        a
                    },
                )
            });
            assert_eq!(together, v, "{what}");
        });
    });
}

#[test]
fn chunks_run_on_several_workers_at_once() {
    // Each of the two chunks waits for the other to start: only a loop that really runs its
    // chunks in parallel finishes (`within` reports the hang otherwise).
    within(60, || {
        let rt = runtime(2);
        let started = AtomicUsize::new(0);
        let workers = Mutex::new(HashSet::new());
        rt.scope(|s| {
            s.taskloop(0..2, Grain::Tasks(2), |s, _| {
                workers.lock().unwrap().insert(s.worker_index());
                started.fetch_add(1, Ordering::SeqCst);
                while started.load(Ordering::SeqCst) < 2 {
                    std::thread::yield_now();
                }
            });
        });
        assert_eq!(workers.into_inner().unwrap().len(), 2);
    });
}

#[test]
fn a_fine_grained_loop_still_feeds_every_worker() {
    // Splitting stops once the split budget (one per worker) is spent, but not before every
    // worker has a part: each chunk waits until four workers run chunks at once, which only a
    // loop split into parts for all four lets happen (`within` reports the hang otherwise).
    within(60, || {
        let rt = runtime(4);
        let workers = Mutex::new(HashSet::new());
        rt.scope(|s| {
            s.taskloop(0..256, Grain::Size(1), |s, _| {
                workers.lock().unwrap().insert(s.worker_index());
                while workers.lock().unwrap().len() < 4 {
                    std::thread::yield_now();
                }
            });
        });
        assert_eq!(workers.into_inner().unwrap().len(), 4);
    });
}

#[test]
fn the_loop_returns_after_the_tasks_its_chunks_spawned() {
    // Including the chunks that run in place on the calling task (with one worker, all of
    // them), whose tasks would otherwise be the caller's children, left for its next wait.
    within(60, || {
        for workers in 1..=3 {
            let rt = runtime(workers);
            for grain in [Grain::Tasks(1), Grain::Tasks(2), Grain::Size(4)] {
                let done = AtomicUsize::new(0);
                rt.scope(|s| {
                    s.taskloop(0..40, grain, |s, chunk| {
                        for _ in chunk {
                            s.spawn(|s| {
                                s.spawn(|_| {
                                    std::thread::sleep(std::time::Duration::from_millis(1));
                                    done.fetch_add(1, Ordering::SeqCst);
                                });
                            });
                        }
                    });
                    assert_eq!(
                        done.load(Ordering::SeqCst),
                        40,
                        "grandchildren of the chunks, {workers} workers, {grain:?}"
                    );
                });
            }
        }
    });
}

#[test]
fn a_panic_of_a_task_a_chunk_spawned_resumes_at_the_loop() {
    within(60, || {
        for workers in 1..=3 {
            let rt = runtime(workers);
            for grain in [Grain::Tasks(1), Grain::Tasks(2), Grain::Size(1)] {
                let mut v = vec![0u8; 8];
                let after = rt.scope(|s| {
                    let caught = panic::catch_unwind(AssertUnwindSafe(|| {
                        s.taskloop_mut(&mut v, grain, |s, offset, _| {
                            if offset == 0 {
                                s.spawn(|_| panic!("a chunk's child fails"));
                            }
                        });
                    }));
                    let payload = caught.expect_err("the child's panic reaches the loop");
                    assert_eq!(
                        payload.downcast_ref::<&str>(),
                        Some(&"a chunk's child fails"),
                        "{workers} workers, {grain:?}"
                    );
                    // Nothing is left for the scope's end to resume.
                    s.task().spawn_with_result(|_| 7).join()
                });
                assert_eq!(after, 7);
            }
        }
    });
}

#[test]
fn a_panicking_chunk_resumes_at_the_loop_after_the_others_ran_and_the_runtime_goes_on() {
    within(60, || {
        let rt = runtime(2);
        let ran = AtomicUsize::new(0);
        let mut v = vec![0u32; 64];
        let caught = panic::catch_unwind(AssertUnwindSafe(|| {
            rt.scope(|s| {
                s.taskloop_mut(&mut v, Grain::Size(1), |_, offset, chunk| {
                    ran.fetch_add(1, Ordering::SeqCst);
                    if offset == 33 {
                        panic!("chunk 33 fails");
                    }
                    chunk[0] = 1;
                });
            })
        }));
        let payload = caught.expect_err("the panic reaches the loop's caller");
        assert_eq!(payload.downcast_ref::<&str>(), Some(&"chunk 33 fails"));
        assert_eq!(ran.load(Ordering::SeqCst), 64, "every other chunk ran");
        assert_eq!(v.iter().filter(|&&x| x == 1).count(), 63);
        let mut sum = 0u64;
        rt.scope(|s| {
            let sum = Mutex::new(&mut sum);
            s.taskloop(1..101, Grain::Auto, |_, c| {
                **sum.lock().unwrap() += c.map(|i| i as u64).sum::<u64>()
            });
        });
        assert_eq!(sum, 5050, "the runtime is usable after the panic");
    });
}

#[test]
fn a_zero_grain_is_refused_with_a_message_naming_it() {
    let rt = runtime(1);
    for (grain, name) in [
        (Grain::Size(0), "Grain::Size(0)"),
        (Grain::Tasks(0), "Grain::Tasks(0)"),
    ] {
        let caught = panic::catch_unwind(AssertUnwindSafe(|| {
            rt.scope(|s| s.taskloop(0..10, grain, |_, _| {}));
        }));
        let payload = caught.expect_err("a zero grain panics");
        let message = payload.downcast_ref::<&str>().expect("a message");
        assert!(message.contains(name), "{message}");
    }
    rt.scope(|s| s.taskloop(0..10, Grain::Size(3), |_, _| {}));
}

#[test]
fn loops_nest_inside_a_loops_chunks() {
    within(60, || {
        let rt = runtime(4);
        let mut grid = vec![vec![0u32; 50]; 30];
        rt.scope(|s| {
            s.taskloop_mut(&mut grid, Grain::Size(2), |s, row0, rows| {
                for (r, row) in rows.iter_mut().enumerate() {
                    s.taskloop_mut(row, Grain::Size(8), |_, col0, cells| {
                        for (c, cell) in cells.iter_mut().enumerate() {
                            *cell = ((row0 + r) * 100 + col0 + c) as u32;
                        }
                    });
                }
            });
        });
        for (r, row) in grid.iter().enumerate() {
            for (c, &cell) in row.iter().enumerate() {
                assert_eq!(cell, (r * 100 + c) as u32);
            }
        }
    });
}

#[test]
fn a_reduction_combines_every_chunk_once_in_iteration_order() {
    within(120, || {
        for_each_range_case(|rt, workers, start, len, grain| {
            // Concatenation is associative but not commutative: the result lists the
            // chunks in iteration order only if every `reduce` keeps earlier first.
            let chunks: Vec<std::ops::Range<usize>> = rt.scope(|s| {
                s.taskloop_reduce(
                    start..start + len,
                    grain,
                    Vec::new,
                    |_, chunk| vec![chunk],
                    |mut a, b| {
                        a.extend(b);
                        a
                    },
                )
            });
            let what = format!("{len} iterations, {grain:?}, {workers} workers");
            let covered: Vec<usize> = chunks.iter().cloned().flatten().collect();
            assert_eq!(covered, (start..start + len).collect::<Vec<_>>(), "{what}");
            assert_eq!(chunks.len(), grain.chunks(len, workers), "{what}");
        });
    });
}

#[test]
fn a_panicking_reduction_chunk_resumes_at_the_loop_after_the_others_ran() {
    within(60, || {
        let rt = runtime(2);
        let ran = AtomicUsize::new(0);
        let caught = panic::catch_unwind(AssertUnwindSafe(|| {
            rt.scope(|s| {
                s.taskloop_reduce(
                    0..64,
                    Grain::Size(1),
                    || 0u64,
                    |_, chunk| {
                        ran.fetch_add(1, Ordering::SeqCst);
                        if chunk.start == 40 {
                            panic!("chunk 40 fails");
                        }
                        chunk.start as u64
                    },
                    |a, b| a + b,
                )
            })
        }));
        let payload = caught.expect_err("the panic reaches the loop's caller");
        assert_eq!(payload.downcast_ref::<&str>(), Some(&"chunk 40 fails"));
        assert_eq!(ran.load(Ordering::SeqCst), 64, "every other chunk ran");
        let sum = rt.scope(|s| {
            s.taskloop_reduce(
                1..101,
                Grain::Auto,
                || 0u64,
                |_, c| c.map(|i| i as u64).sum(),
                |a, b| a + b,
            )
        });
        assert_eq!(sum, 5050, "the runtime is usable after the panic");
    });
}

#[test]
fn a_reduction_whose_accumulator_panics_on_drop_still_resumes_the_chunk_panic() {
    within(60, || {
        /// An accumulator whose destructor always panics: dropped while a chunk's panic
        /// unwinds, it would abort the process (the test binary dies if the loop does that).
        struct Loud(u64);
        impl Drop for Loud {
            fn drop(&mut self) {
                panic!("Loud dropped");
            }
        }
        for workers in [1, 2] {
            let rt = runtime(workers);
            let caught = panic::catch_unwind(AssertUnwindSafe(|| {
                rt.scope(|s| {
                    s.taskloop_reduce(
                        0..16,
                        Grain::Size(1),
                        || Loud(0),
                        |_, chunk| {
                            if chunk.start == 5 {
                                panic!("chunk 5 fails");
                            }
                            Loud(chunk.start as u64)
                        },
                        |a, b| {
                            let sum = Loud(a.0 + b.0);
                            std::mem::forget(a);
                            std::mem::forget(b);
                            sum
                        },
                    )
                    .0
                })
            }));
            // The chunk's panic, not the destructor's, and no abort.
            let payload = caught.expect_err("the panic reaches the loop's caller");
            assert_eq!(
                payload.downcast_ref::<&str>(),
                Some(&"chunk 5 fails"),
                "{workers} workers"
            );
        }
    });
}

#[test]
fn a_traced_index_loop_names_its_tasks_taskloop() {
    within(60, || {
        let rt = numatask_sched::Runtime::builder()
            .num_threads(2)
            .proc_bind(false)
            .trace_summary(true)
            .build()
            .expect("runtime starts");
        rt.scope(|s| {
            s.taskloop(0..64, Grain::Tasks(8), |_, _| {});
            let sum = s.taskloop_reduce(0..64, Grain::Tasks(8), || 0, |_, c| c.len(), |a, b| a + b);
            assert_eq!(sum, 64);
        });
        let records = rt.tracer().expect("tracing").records();
        let labels: Vec<&str> = records.iter().map(|r| r.label).collect();
        // Each loop of 8 chunks on 2 workers splits into parts, every one a task; the scope
        // body is the one task without a name.
        assert!(
            labels.iter().filter(|&&l| l == "taskloop").count() >= 2,
            "{labels:?}"
        );
        assert_eq!(
            labels
                .iter()
                .filter(|&&l| l != "taskloop")
                .collect::<Vec<_>>(),
            [&"task"],
            "a loop part went unnamed"
        );
    });
}

#[test]
fn a_loop_over_first_touch_huge_pages_cuts_its_chunks_at_huge_page_boundaries() {
    use numatask_alloc::{Distribution, HUGE_PAGE, NumaVec, Pages, TopologyBuilder, with_pages};
    // A runtime of two nodes (synthetic: nothing is bound, but the loop cuts as on a real
    // one) over first-touch memory of huge pages: chunk boundaries fall on 2 MiB addresses.
    let topology = TopologyBuilder::synthetic("numa:2 core:1 pu:1")
        .build()
        .expect("synthetic topology");
    let rt = numatask_sched::Runtime::builder()
        .topology(std::sync::Arc::new(topology))
        .num_threads(2)
        .proc_bind(false)
        .build()
        .expect("runtime");
    let mut huge = with_pages(Pages::Huge, || {
        NumaVec::<u64>::zeroed(9 * HUGE_PAGE / 8, Distribution::Standard)
    })
    .expect("first-touch memory");
    // From an element that is not at a boundary: the first and last chunks are partial.
    let data = &mut huge[1000..];
    let base = data.as_ptr() as usize;
    let end = base + std::mem::size_of_val(data);
    for grain in [
        Grain::Tasks(64),
        Grain::Tasks(3),
        Grain::Size(1),
        Grain::Auto,
    ] {
        let chunks = Mutex::new(Vec::new());
        rt.scope(|s| {
            s.taskloop_mut(data, grain, |_, offset, chunk| {
                chunk.iter_mut().for_each(|x| *x += 1);
                chunks.lock().unwrap().push((offset, chunk.len()));
            })
        });
        let mut chunks = chunks.into_inner().unwrap();
        chunks.sort_unstable();
        let boundaries = (base / HUGE_PAGE + 1..=(end - 1) / HUGE_PAGE).count();
        let wanted = match grain {
            Grain::Tasks(n) => n.min(boundaries + 1),
            _ => boundaries + 1,
        };
        assert_eq!(
            chunks.len(),
            wanted,
            "{grain:?}: one chunk per huge page at most"
        );
        for &(offset, _) in &chunks[1..] {
            assert_eq!(
                (base + offset * 8) % HUGE_PAGE,
                0,
                "{grain:?}: a chunk at {offset}"
            );
        }
        let covered: usize = chunks.iter().map(|&(_, len)| len).sum();
        assert_eq!(covered, data.len());
    }
    assert!(data.iter().all(|&x| x == 4), "every element once per loop");
    // Base pages: the chunks are cut evenly, as the grain says.
    let mut base_pages = with_pages(Pages::Base, || {
        NumaVec::<u64>::zeroed(9 * HUGE_PAGE / 8, Distribution::Standard)
    })
    .expect("first-touch memory");
    let count = AtomicUsize::new(0);
    rt.scope(|s| {
        s.taskloop_mut(&mut base_pages, Grain::Tasks(64), |_, _, _| {
            count.fetch_add(1, Ordering::Relaxed);
        })
    });
    assert_eq!(count.into_inner(), 64);
}
