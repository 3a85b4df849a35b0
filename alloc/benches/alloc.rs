//! Allocator benchmarks: allocate-and-touch per policy against `std::alloc` (glibc), mimalloc
//! and libnuma's `numa_alloc_onnode` (the C peer, loaded at run time where installed), on one
//! thread and with every core allocating at once, and the registry's footprint lookup (run
//! once for every task the locality-aware scheduler deals).
//!
//! ```text
//! cargo bench -p numatask-alloc --bench alloc
//! NUMATASK_TOPOLOGY=preset:opteron6172 cargo bench -p numatask-alloc --bench alloc -- lookup
//! ```

use std::alloc::{GlobalAlloc, Layout, alloc_zeroed, dealloc};
use std::hint::black_box;
use std::time::{Duration, Instant};

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use numatask_alloc::{
    Distribution, NodeBytes, Topology, accumulate_node_bytes, omp_free, omp_malloc_specific,
    page_size, release_cache,
};

const SIZES: [usize; 4] = [64 << 10, 1 << 20, 16 << 20, 256 << 20];

fn touch(ptr: *mut u8, len: usize) {
    for offset in (0..len).step_by(page_size()) {
        // SAFETY: callers pass live allocations of `len` bytes.
        unsafe { ptr.add(offset).write_volatile(1) };
    }
}

fn alloc_and_touch(c: &mut Criterion) {
    let mut group = c.benchmark_group("alloc_touch_free");
    for size in SIZES {
        group.throughput(Throughput::Bytes(size as u64));
        if size >= 16 << 20 {
            group.sample_size(10);
        }
        group.bench_with_input(
            BenchmarkId::new("std_alloc_zeroed", size),
            &size,
            |b, &size| {
                // Alignment 16, as Vec<f64> would ask: glibc then serves large sizes by a fresh mmap
                // without memset, the same work as the NUMA policies.
                let layout = Layout::from_size_align(size, 16).unwrap();
                b.iter(|| {
                    // SAFETY: layout has a non-zero size.
                    let p = unsafe { alloc_zeroed(layout) };
                    assert!(!p.is_null());
                    touch(p, size);
                    // SAFETY: allocated above with the same layout.
                    unsafe { dealloc(black_box(p), layout) };
                });
            },
        );
        group.bench_with_input(BenchmarkId::new("mimalloc", size), &size, |b, &size| {
            let layout = Layout::from_size_align(size, 16).unwrap();
            b.iter(|| {
                // SAFETY: layout has a non-zero size.
                let p = unsafe { mimalloc::MiMalloc.alloc_zeroed(layout) };
                assert!(!p.is_null());
                touch(p, size);
                // SAFETY: allocated above with the same layout.
                unsafe { mimalloc::MiMalloc.dealloc(black_box(p), layout) };
            });
        });
        if let Some(numa) = libnuma() {
            group.bench_with_input(
                BenchmarkId::new("numa_alloc_onnode", size),
                &size,
                |b, &size| {
                    b.iter(|| {
                        // SAFETY: libnuma's documented entry points, on its own allocation.
                        let p = unsafe { (numa.alloc_onnode)(size, 0) }.cast::<u8>();
                        assert!(!p.is_null());
                        touch(p, size);
                        // SAFETY: as above.
                        unsafe { (numa.free)(black_box(p).cast(), size) };
                    });
                },
            );
        }
        for d in Distribution::ALL {
            group.bench_with_input(BenchmarkId::new(d.name(), size), &size, |b, &size| {
                b.iter(|| {
                    let p = omp_malloc_specific(size, d).unwrap();
                    touch(p.as_ptr(), size);
                    // SAFETY: allocated above, no reference remains.
                    unsafe { omp_free(black_box(p.as_ptr())) }.unwrap();
                });
            });
        }
    }
    group.finish();
}

/// libnuma's allocation entry points, if the library can be loaded.
struct LibNuma {
    alloc_onnode: unsafe extern "C" fn(usize, i32) -> *mut libc::c_void,
    free: unsafe extern "C" fn(*mut libc::c_void, usize),
}

fn libnuma() -> Option<LibNuma> {
    // SAFETY: dlopen and dlsym with valid C strings; the symbols, when found, have the
    // signatures numa.h declares (`void *numa_alloc_onnode(size_t, int)`,
    // `void numa_free(void *, size_t)`). The library stays loaded (never dlclosed).
    unsafe {
        let lib = libc::dlopen(c"libnuma.so.1".as_ptr(), libc::RTLD_NOW);
        if lib.is_null() {
            eprintln!("numa_alloc_onnode: not available: libnuma.so.1 cannot be loaded");
            return None;
        }
        let alloc = libc::dlsym(lib, c"numa_alloc_onnode".as_ptr());
        let free = libc::dlsym(lib, c"numa_free".as_ptr());
        if alloc.is_null() || free.is_null() {
            return None;
        }
        Some(LibNuma {
            alloc_onnode: std::mem::transmute::<
                *mut libc::c_void,
                unsafe extern "C" fn(usize, i32) -> *mut libc::c_void,
            >(alloc),
            free: std::mem::transmute::<
                *mut libc::c_void,
                unsafe extern "C" fn(*mut libc::c_void, usize),
            >(free),
        })
    }
}

/// Every core allocating, touching and freeing its own 64 KiB blocks at once: time per
/// block per thread (flat if the allocator scales).
fn alloc_threads(c: &mut Criterion) {
    let all = std::thread::available_parallelism().map_or(1, |n| n.get());
    let size = 64 << 10;
    let mut group = c.benchmark_group("alloc_touch_free_threads");
    // 1, 2, 4, ... and every core.
    let mut counts: Vec<usize> = (0..).map(|k| 1 << k).take_while(|&t| t < all).collect();
    counts.push(all);
    for threads in counts {
        let run = |iters: u64, f: &(dyn Fn() + Sync)| -> Duration {
            let start = Instant::now();
            std::thread::scope(|s| {
                for _ in 0..threads {
                    s.spawn(|| {
                        for _ in 0..iters {
                            f();
                        }
                    });
                }
            });
            start.elapsed()
        };
        group.bench_function(BenchmarkId::new("std_alloc_zeroed", threads), |b| {
            let layout = Layout::from_size_align(size, 16).unwrap();
            b.iter_custom(|iters| {
                run(iters, &|| {
                    // SAFETY: layout has a non-zero size; freed below with it.
                    let p = unsafe { alloc_zeroed(layout) };
                    touch(p, size);
                    // SAFETY: as above.
                    unsafe { dealloc(black_box(p), layout) };
                })
            });
        });
        group.bench_function(BenchmarkId::new("mimalloc", threads), |b| {
            let layout = Layout::from_size_align(size, 16).unwrap();
            b.iter_custom(|iters| {
                run(iters, &|| {
                    // SAFETY: layout has a non-zero size; freed below with it.
                    let p = unsafe { mimalloc::MiMalloc.alloc_zeroed(layout) };
                    touch(p, size);
                    // SAFETY: as above.
                    unsafe { mimalloc::MiMalloc.dealloc(black_box(p), layout) };
                })
            });
        });
        for d in Distribution::ALL {
            group.bench_function(BenchmarkId::new(d.name(), threads), |b| {
                b.iter_custom(|iters| {
                    run(iters, &|| {
                        let p = omp_malloc_specific(size, d).unwrap();
                        touch(p.as_ptr(), size);
                        // SAFETY: allocated above, no reference remains.
                        unsafe { omp_free(black_box(p.as_ptr())) }.unwrap();
                    })
                });
            });
        }
    }
    group.finish();
}

fn registry_lookup(c: &mut Criterion) {
    let nodes = Topology::current().unwrap().num_nodes();
    let mut group = c.benchmark_group("footprint_lookup");
    // A registry holding many allocations, as a real program has: the lookup is a binary search.
    let others: Vec<_> = (0..1000)
        .map(|_| omp_malloc_specific(4 * page_size(), Distribution::Coarse).unwrap())
        .collect();
    for d in [Distribution::Fine, Distribution::Coarse] {
        let len = 1024 * page_size();
        let p = omp_malloc_specific(len, d).unwrap();
        for pages in [1usize, 8, 64] {
            let range = pages * page_size();
            let mut out = NodeBytes::new(nodes);
            group.bench_function(BenchmarkId::new(d.name(), format!("{pages}_pages")), |b| {
                // An unaligned range in the middle of the allocation.
                // SAFETY: address arithmetic inside the allocation, not dereferenced.
                let start = unsafe { p.as_ptr().add(100 * page_size() + 123) };
                b.iter(|| {
                    out.clear();
                    accumulate_node_bytes(black_box(start), black_box(range), &mut out);
                    black_box(&out);
                });
            });
        }
        // SAFETY: allocated above, no reference remains.
        unsafe { omp_free(p.as_ptr()) }.unwrap();
    }
    // Standard (first-touch) memory: touched, every page's node is cached after the first
    // lookup; untouched, every lookup asks the kernel (`move_pages`) about the pages, which may
    // have been touched since.
    // (Not on a synthetic topology, whose first-touch pages stay unknown: nothing to look up.)
    let real = !Topology::current().unwrap().is_synthetic();
    for touched in [true, false].into_iter().filter(|_| real) {
        let len = 1024 * page_size();
        // A fresh mapping, not the touched one freed just before (which the cache would
        // hand out again, its pages resident).
        release_cache();
        let p = omp_malloc_specific(len, Distribution::Standard).unwrap();
        if touched {
            touch(p.as_ptr(), len);
        }
        let name = if touched {
            "standard"
        } else {
            "standard_untouched"
        };
        for pages in [1usize, 8, 64] {
            let range = pages * page_size();
            let mut out = NodeBytes::new(nodes);
            group.bench_function(BenchmarkId::new(name, format!("{pages}_pages")), |b| {
                // SAFETY: address arithmetic inside the allocation, not dereferenced.
                let start = unsafe { p.as_ptr().add(100 * page_size() + 123) };
                b.iter(|| {
                    out.clear();
                    accumulate_node_bytes(black_box(start), black_box(range), &mut out);
                    black_box(&out);
                });
                // Every byte has a known node once touched, none while untouched.
                assert_eq!(out.known() > 0, touched, "{name} {pages}");
            });
        }
        // SAFETY: allocated above, no reference remains.
        unsafe { omp_free(p.as_ptr()) }.unwrap();
    }
    for p in others {
        // SAFETY: allocated above, no reference remains.
        unsafe { omp_free(p.as_ptr()) }.unwrap();
    }
    group.finish();
}

/// Registering and removing an allocation with many others live: one `omp_malloc_specific`
/// and `omp_free` of 4 pages (no touch), the registry's update being the part that grows.
fn registry_update(c: &mut Criterion) {
    let mut group = c.benchmark_group("alloc_free_with_live");
    for live in [1_000usize, 30_000] {
        let others: Vec<_> = (0..live)
            .map(|_| omp_malloc_specific(4 * page_size(), Distribution::Coarse).unwrap())
            .collect();
        group.bench_function(BenchmarkId::from_parameter(live), |b| {
            b.iter(|| {
                let p = omp_malloc_specific(black_box(4 * page_size()), Distribution::Coarse);
                // SAFETY: allocated just above, never dereferenced.
                unsafe { omp_free(p.unwrap().as_ptr()) }.unwrap();
            });
        });
        for p in others {
            // SAFETY: allocated above, no reference remains.
            unsafe { omp_free(p.as_ptr()) }.unwrap();
        }
    }
    group.finish();
}

criterion_group!(
    benches,
    alloc_and_touch,
    alloc_threads,
    registry_lookup,
    registry_update
);
criterion_main!(benches);
