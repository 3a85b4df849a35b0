//! Loops split into tasks: OpenMP's `taskloop`, over index ranges ([`Scope::taskloop`]), with
//! a reduction ([`Scope::taskloop_reduce`]), over mutable slices ([`Scope::taskloop_mut`],
//! and [`Scope::taskloop_zip`] reading other slices alongside), and over slices they only
//! read ([`Scope::taskloop_slice`], [`Scope::taskloop_reduce_slice`]).
//!
//! The iterations are cut into chunks (see [`Grain`]); the body runs once per chunk. The
//! chunks are spread by recursive halving with [`Scope::join`]: one half becomes a task that
//! any worker may steal, the other runs on, so the chunks reach idle workers in
//! `log2(workers)` steps instead of one spawner pushing them all, and a loop over a slice
//! hands each task a disjoint `&mut` part of it (the split is what makes that safe).
//!
//! The halving is adaptive: a part splits while the loop may still have idle workers to feed
//! (as many splits as workers at first, halved at each level, and again as many for a part
//! that another worker took, which shows that someone was idle), and runs its chunks one
//! after the other in place once the budget is spent. A loop on busy workers then costs
//! little more than a sequential one, however fine its grain, while uneven chunks still
//! spread: the idle worker that takes a part splits it again. (rayon's parallel iterators
//! split the same way.)
//!
//! Every form runs the loop in a taskgroup (OpenMP's implicit one): they return once every
//! chunk, and every task the chunks spawned, at any depth, has finished, and a panic in a
//! chunk or in one of those tasks is resumed there, after every other chunk ran (one panic:
//! when several chunks panic, the others' payloads are dropped).
//!
//! A chunk runs on whichever task runs its part, and gets that task's [`Scope`]: tasks it
//! spawns are waited for by the loop, but a `taskwait` in the body waits for more than the
//! chunk's own children (the other parts' tasks on that task, and, for the part the calling
//! task keeps, the caller's earlier children). Wrap the body in a
//! [`taskgroup`](Scope::taskgroup) to wait for the chunk's own tasks only.
//!
//! Under the locality-aware scheduler (or with a trace), a loop over a slice
//! ([`taskloop_mut`](Scope::taskloop_mut), [`taskloop_zip`](Scope::taskloop_zip),
//! [`taskloop_slice`](Scope::taskloop_slice),
//! [`taskloop_reduce_slice`](Scope::taskloop_reduce_slice)) is placed by its data: the loop
//! starts as one task dealt by the whole slice, and every part split off carries its part of
//! the slice as its footprint. A loop over a [`NumaVec`](numatask_alloc::NumaVec) on one node
//! (coarse) is dealt to that node's workers (with the default vicinity, `all`, idle workers of
//! other nodes may still steal the parts those workers keep in their deques; a vicinity of 10
//! keeps them on the node), one over evenly spread pages (fine) anywhere. The part a worker keeps runs where that worker
//! is: for data laid out in blocks on different nodes, loop over each block (one taskloop per
//! block, or tasks with footprints).

use std::ops::Range;
use std::panic::{self, AssertUnwindSafe};

use crate::depend::{Access, AccessKind};
use crate::job::TaskMeta;
use crate::scope::Scope;
use crate::unwind::{Payload, drop_contained, drop_payload};

/// How a taskloop cuts its iterations into chunks, each run by one call of the body: the
/// `grainsize` and `num_tasks` clauses of OpenMP's `taskloop`. Chunks never hold zero
/// iterations, and their sizes differ by at most one, except in a loop over a slice of
/// first-touch memory of huge pages on a runtime of several nodes, whose chunks are runs of
/// whole huge pages (at most one chunk per huge page; see `numatask_alloc::Pages`), so that
/// each chunk's first writer places its pages.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Grain {
    /// Eight chunks per worker (at most one per iteration): fine enough that the parts idle
    /// workers take apart even out chunks of somewhat uneven cost, coarse enough that the
    /// cost of a chunk is negligible next to any real loop's. The default.
    #[default]
    Auto,
    /// Chunks of at least this many iterations and fewer than twice as many (one chunk when
    /// the loop is shorter), as OpenMP's `grainsize`. Must be at least 1.
    Size(usize),
    /// This many chunks, or one per iteration when the loop is shorter, as OpenMP's
    /// `num_tasks` (which counts tasks: here the chunks are grouped into fewer tasks when no
    /// worker is idle, see the [module docs](self)). Must be at least 1.
    Tasks(usize),
}

impl Grain {
    /// How many chunks a loop of `len` iterations is cut into, on `workers` workers: at
    /// least 1 and at most `len`; an empty loop (`len == 0`) runs no chunk at all, and this
    /// gives 0 for it.
    ///
    /// # Panics
    ///
    /// If the grain is `Size(0)` or `Tasks(0)`.
    #[track_caller]
    pub fn chunks(self, len: usize, workers: usize) -> usize {
        let chunks = match self {
            Grain::Auto => workers.saturating_mul(8),
            Grain::Size(0) => {
                panic!("taskloop: Grain::Size(0): a chunk holds at least 1 iteration")
            }
            Grain::Size(size) => len / size,
            Grain::Tasks(0) => panic!("taskloop: Grain::Tasks(0): a loop runs at least 1 task"),
            Grain::Tasks(tasks) => tasks,
        };
        if len == 0 { 0 } else { chunks.clamp(1, len) }
    }
}

/// The iterations `len` cut into `chunks` chunks: chunk `c` starts at `bound(c)`.
#[derive(Clone, Copy)]
struct Chunking {
    len: usize,
    chunks: usize,
    /// Chunks cut at huge-page boundaries of the data instead of evenly.
    cut: Option<PageCut>,
}

/// The huge pages a loop's slice spans, as whole pages: `pages` of them, the boundary between
/// the first and the second `first` bytes from the slice's start, one every `unit` bytes after
/// it, elements of `size` bytes. A part at either end shorter than half a huge page is merged
/// into its neighbour, so that a page of the cut holds between half a huge page and one and
/// a half.
#[derive(Clone, Copy)]
struct PageCut {
    pages: usize,
    first: usize,
    unit: usize,
    size: usize,
}

impl Chunking {
    /// A loop of `len` iterations cut as `grain` says for `s`'s runtime; `None` when it is
    /// empty (after checking the grain, which panics on a zero).
    #[track_caller]
    fn of(len: usize, grain: Grain, s: &Scope<'_>) -> Option<Chunking> {
        let chunks = grain.chunks(len, s.num_workers());
        (len > 0).then_some(Chunking {
            len,
            chunks,
            cut: None,
        })
    }

    /// This loop over `data`, cut at huge-page boundaries where `data` is first-touch memory
    /// of huge pages (so that the worker that first writes a chunk places its pages, not a
    /// neighbour whose first write lands in a huge page they share) on a runtime of several
    /// nodes, and where the slice spans at least a huge page per worker (a shorter one keeps
    /// its even chunks: the loop's parallelism matters more than its few pages' placement).
    /// The chunks become runs of whole huge pages (see [`PageCut`]), as many as the grain
    /// asked for or fewer (one per huge page at most), as even as whole pages allow.
    fn cut_at_huge_pages<T>(self, data: &[T], s: &Scope<'_>) -> Chunking {
        let size = size_of::<T>();
        let unit = numatask_alloc::HUGE_PAGE;
        if s.num_nodes() < 2 || size == 0 || size > unit / 2 {
            return self;
        }
        if numatask_alloc::first_touch_unit(data.as_ptr().cast()) != Some(unit) {
            return self;
        }
        let start = data.as_ptr() as usize;
        let bytes = self.len * size;
        match PageCut::of(start, bytes, unit, size) {
            Some(cut) if cut.pages >= s.num_workers().max(2) => Chunking {
                len: self.len,
                chunks: self.chunks.min(cut.pages),
                cut: Some(cut),
            },
            _ => self,
        }
    }

    /// Where chunk `c` starts (`len` for `c == chunks`), counted from the loop's start.
    fn bound(self, c: usize) -> usize {
        match self.cut {
            Some(cut) if c > 0 && c < self.chunks => {
                // The start of page `j` of the cut, `1 <= j < pages` since `chunks <= pages`,
                // strictly increasing in `c`: the element starting at or after its boundary.
                let j = (cut.pages as u128 * c as u128 / self.chunks as u128) as usize;
                (cut.first + (j - 1) * cut.unit).div_ceil(cut.size)
            }
            // In u128: `len * c` overflows usize for loops near usize::MAX iterations.
            _ => (self.len as u128 * c as u128 / self.chunks as u128) as usize,
        }
    }
}

impl<'scope> Scope<'scope> {
    /// Runs `body` over `range` cut into chunks (OpenMP's `taskloop`): `body(s, chunk)` for
    /// chunks that together cover `range` once, spread over the workers. Returns when every
    /// chunk and every task they spawned finished (a taskgroup). `body` may borrow from the
    /// caller's stack; it gets the [`Scope`] of the task running the chunk, to spawn tasks
    /// (see the [module docs](self) for what a `taskwait` in it waits for).
    ///
    /// ```
    /// use std::sync::atomic::{AtomicU64, Ordering};
    /// use numatask_sched::taskloop::Grain;
    /// # let rt = numatask_sched::Runtime::builder().num_threads(2).build()?;
    ///
    /// let sum = AtomicU64::new(0);
    /// rt.scope(|s| {
    ///     s.taskloop(0..1000, Grain::Size(100), |_, chunk| {
    ///         assert!((100..200).contains(&chunk.len()));
    ///         sum.fetch_add(chunk.map(|i| i as u64).sum(), Ordering::Relaxed);
    ///     });
    /// });
    /// assert_eq!(sum.into_inner(), 999 * 1000 / 2);
    /// # Ok::<(), numatask_sched::BuildError>(())
    /// ```
    ///
    /// # Panics
    ///
    /// If `grain` is `Size(0)` or `Tasks(0)`; and with the panic of a chunk, or of a task it
    /// spawned, once every chunk has run.
    #[track_caller]
    pub fn taskloop<F>(&self, range: Range<usize>, grain: Grain, body: F)
    where
        F: Fn(&Scope<'scope>, Range<usize>) + Sync,
    {
        let Some(chunking) = Chunking::of(range.len(), grain, self) else {
            return;
        };
        self.taskgroup(|g| {
            let part = Part::whole(g, chunking);
            split_range(g, range.start, chunking, part, &body, &NoFootprint);
        });
    }

    /// Runs `body` over `range` cut into chunks, as [`taskloop`](Self::taskloop), and
    /// combines the chunks' results with `reduce` (OpenMP's `taskloop reduction`, rayon's
    /// `map(...).reduce(identity, op)`): each chunk's result joins those of the chunks before
    /// it as `reduce(earlier, later)`, starting from `identity()`, so an associative `reduce`
    /// gives what a sequential loop would. How the results group depends on how the loop
    /// split, which varies from run to run: with a merely approximately associative `reduce`
    /// (floating-point addition) the last bits may vary, as with OpenMP's reductions.
    /// `identity` is called once for each part of the loop that runs its chunks in place (at
    /// least once; an empty `range` gives `identity()`).
    ///
    /// ```
    /// use numatask_sched::taskloop::Grain;
    /// # let rt = numatask_sched::Runtime::builder().num_threads(2).build()?;
    ///
    /// let v: Vec<f64> = (0..10_000).map(|i| i as f64).collect();
    /// let (sum, max) = rt.scope(|s| {
    ///     let sum = s.taskloop_reduce(
    ///         0..v.len(),
    ///         Grain::Auto,
    ///         || 0.0,
    ///         |_, chunk| v[chunk].iter().sum(),
    ///         |a, b| a + b,
    ///     );
    ///     let max = s.taskloop_reduce(
    ///         0..v.len(),
    ///         Grain::Size(1000),
    ///         || f64::MIN,
    ///         |_, chunk| v[chunk].iter().copied().fold(f64::MIN, f64::max),
    ///         f64::max,
    ///     );
    ///     (sum, max)
    /// });
    /// assert_eq!((sum, max), (49_995_000.0, 9_999.0));
    /// # Ok::<(), numatask_sched::BuildError>(())
    /// ```
    ///
    /// # Panics
    ///
    /// If `grain` is `Size(0)` or `Tasks(0)`; and with the panic of a chunk (or of `reduce`,
    /// or of a task a chunk spawned), once every chunk has run. A panic of `identity` is
    /// resumed the same way, but the chunks of the part that called it do not run.
    #[track_caller]
    pub fn taskloop_reduce<R, I, F, C>(
        &self,
        range: Range<usize>,
        grain: Grain,
        identity: I,
        body: F,
        reduce: C,
    ) -> R
    where
        R: Send,
        I: Fn() -> R + Sync,
        F: Fn(&Scope<'scope>, Range<usize>) -> R + Sync,
        C: Fn(R, R) -> R + Sync,
    {
        let Some(chunking) = Chunking::of(range.len(), grain, self) else {
            return identity();
        };
        let reduction = Reduction {
            identity,
            body,
            reduce,
        };
        self.taskgroup(|g| {
            let part = Part::whole(g, chunking);
            reduce_range(g, range.start, chunking, part, &reduction, &NoFootprint)
        })
    }

    /// Runs `body` over `data`, which it reads, cut into chunks (rayon's `par_chunks`):
    /// `body(s, offset, chunk)` for `chunk = &data[offset..]` parts that together cover `data`
    /// once, spread over the workers, as [`taskloop`](Self::taskloop) does for a range.
    /// Returns when every chunk and every task they spawned finished (a taskgroup).
    ///
    /// Under the locality-aware scheduler the loop runs where the pages of `data` are, as
    /// [`taskloop_mut`](Self::taskloop_mut)'s does: its tasks carry their part of `data` as
    /// their footprint, read (`in`); a loop over the indices alone has nothing to place it by.
    ///
    /// ```
    /// use std::sync::atomic::{AtomicU64, Ordering};
    /// use numatask_sched::taskloop::Grain;
    /// # let rt = numatask_sched::Runtime::builder().num_threads(2).build()?;
    ///
    /// let v: Vec<u64> = (0..1000).collect();
    /// let evens = AtomicU64::new(0);
    /// rt.scope(|s| {
    ///     s.taskloop_slice(&v, Grain::Size(100), |_, offset, chunk| {
    ///         assert_eq!(chunk[0], offset as u64);
    ///         let n = chunk.iter().filter(|&&x| x % 2 == 0).count();
    ///         evens.fetch_add(n as u64, Ordering::Relaxed);
    ///     });
    /// });
    /// assert_eq!(evens.into_inner(), 500);
    /// # Ok::<(), numatask_sched::BuildError>(())
    /// ```
    ///
    /// # Panics
    ///
    /// If `grain` is `Size(0)` or `Tasks(0)`; and with the panic of a chunk, or of a task it
    /// spawned, once every chunk has run.
    #[track_caller]
    pub fn taskloop_slice<T, F>(&self, data: &[T], grain: Grain, body: F)
    where
        T: Sync,
        F: Fn(&Scope<'scope>, usize, &[T]) + Sync,
    {
        let Some(chunking) = Chunking::of(data.len(), grain, self) else {
            return;
        };
        let body = |s: &Scope<'scope>, range: Range<usize>| body(s, range.start, &data[range]);
        let place = ReadsOf(data);
        self.taskgroup(|g| {
            let part = Part::whole(g, chunking);
            run_placed(g, place.of(g, 0..data.len()), |s| {
                split_range(s, 0, chunking, part, &body, &place)
            });
        });
    }

    /// [`taskloop_reduce`](Self::taskloop_reduce) over a slice it reads, placed by its data
    /// as [`taskloop_slice`](Self::taskloop_slice) is: `body(s, offset, chunk)` for
    /// `chunk = &data[offset..]`, the results combined in order with `reduce`. The sum of a
    /// slice on the node that holds it:
    ///
    /// ```
    /// use numatask_sched::taskloop::Grain;
    /// # let rt = numatask_sched::Runtime::builder().num_threads(2).build()?;
    ///
    /// let v: Vec<f64> = (0..10_000).map(|i| i as f64).collect();
    /// let sum = rt.scope(|s| {
    ///     s.taskloop_reduce_slice(&v, Grain::Auto, || 0.0, |_, _, c| c.iter().sum(), |a, b| a + b)
    /// });
    /// assert_eq!(sum, 49_995_000.0);
    /// # Ok::<(), numatask_sched::BuildError>(())
    /// ```
    ///
    /// # Panics
    ///
    /// As [`taskloop_reduce`](Self::taskloop_reduce).
    #[track_caller]
    pub fn taskloop_reduce_slice<T, R, I, F, C>(
        &self,
        data: &[T],
        grain: Grain,
        identity: I,
        body: F,
        reduce: C,
    ) -> R
    where
        T: Sync,
        R: Send,
        I: Fn() -> R + Sync,
        F: Fn(&Scope<'scope>, usize, &[T]) -> R + Sync,
        C: Fn(R, R) -> R + Sync,
    {
        let Some(chunking) = Chunking::of(data.len(), grain, self) else {
            return identity();
        };
        let reduction = Reduction {
            identity,
            body: |s: &Scope<'scope>, range: Range<usize>| body(s, range.start, &data[range]),
            reduce,
        };
        let place = ReadsOf(data);
        self.taskgroup(|g| {
            let part = Part::whole(g, chunking);
            run_placed(g, place.of(g, 0..data.len()), |s| {
                reduce_range(s, 0, chunking, part, &reduction, &place)
            })
        })
    }

    /// Runs `body` over `data` cut into chunks (OpenMP's `taskloop` over an array, rayon's
    /// `par_chunks_mut`): `body(s, offset, chunk)` for disjoint `chunk = &mut data[offset..]`
    /// parts that together cover `data` once, spread over the workers. Returns when every
    /// chunk and every task they spawned finished (a taskgroup).
    ///
    /// Under the locality-aware scheduler the loop runs where the pages of `data` are (the
    /// whole loop on the node of a coarse allocation, for instance): its tasks carry their
    /// part of `data` as their footprint (label `"taskloop"` in traces; see the
    /// [module docs](self)). Work stealing without a trace has no use for footprints, and the
    /// tasks go without.
    ///
    /// ```
    /// use numatask_sched::taskloop::Grain;
    /// # let rt = numatask_sched::Runtime::builder().num_threads(2).build()?;
    ///
    /// let mut v = vec![0u32; 1000];
    /// rt.scope(|s| {
    ///     s.taskloop_mut(&mut v, Grain::Tasks(16), |_, offset, chunk| {
    ///         for (i, x) in chunk.iter_mut().enumerate() {
    ///             *x = (offset + i) as u32;
    ///         }
    ///     });
    /// });
    /// assert!(v.iter().enumerate().all(|(i, &x)| x == i as u32));
    /// # Ok::<(), numatask_sched::BuildError>(())
    /// ```
    ///
    /// # Panics
    ///
    /// If `grain` is `Size(0)` or `Tasks(0)`; and with the panic of a chunk, or of a task it
    /// spawned, once every chunk has run.
    #[track_caller]
    pub fn taskloop_mut<T, F>(&self, data: &mut [T], grain: Grain, body: F)
    where
        T: Send,
        F: Fn(&Scope<'scope>, usize, &mut [T]) + Sync,
    {
        self.taskloop_zip(data, NO_INPUTS, grain, |s, offset, chunk, _| {
            body(s, offset, chunk)
        });
    }

    /// [`taskloop_mut`](Self::taskloop_mut) over `data` that also reads `inputs`, slices of
    /// `data`'s length, chunk by chunk (rayon's `par_chunks_mut` zipped with `par_chunks`):
    /// `body(s, offset, chunk, inputs)` gets `chunk = &mut data[offset..]` and the same
    /// elements of every input, in the shape the inputs were given: an array of inputs of one
    /// type (`[&b, &c]`, the body gets `[b, c]`; a `Vec` and a `NumaVec` do not mix in one
    /// array: write `&v[..]`, or use a tuple) or a tuple of up to 4 inputs of any types
    /// (`(&values, &mask)`, the body gets `(values, mask)`); an input is a slice, an array, a
    /// `Vec`, a `Box<[T]>` or a [`NumaVec`](numatask_alloc::NumaVec) ([`LoopInput`]). Under
    /// the locality-aware scheduler a part's footprint is its part of `data` (written) and of
    /// every input (read), so a loop is dealt by where all of its operands live, not by its
    /// output's pages alone. With no input, use [`taskloop_mut`](Self::taskloop_mut).
    ///
    /// The triad of STREAM, `a = b + 3 c`:
    ///
    /// ```
    /// use numatask_sched::taskloop::Grain;
    /// # let rt = numatask_sched::Runtime::builder().num_threads(2).build()?;
    ///
    /// let b = vec![1.0; 10_000];
    /// let c: Vec<f64> = (0..10_000).map(f64::from).collect();
    /// let mut a = vec![0.0; 10_000];
    /// rt.scope(|s| {
    ///     s.taskloop_zip(&mut a, [&b, &c], Grain::Auto, |_, _, a, [b, c]| {
    ///         for ((a, b), c) in a.iter_mut().zip(b).zip(c) {
    ///             *a = b + 3.0 * c;
    ///         }
    ///     });
    /// });
    /// assert_eq!(a[9_999], 1.0 + 3.0 * 9_999.0);
    ///
    /// // Inputs of different types, as a tuple: keep the entries the mask selects.
    /// let mask: Vec<bool> = (0..10_000).map(|i| i % 2 == 0).collect();
    /// let mut kept = vec![0.0; 10_000];
    /// rt.scope(|s| {
    ///     s.taskloop_zip(&mut kept, (&c, &mask), Grain::Auto, |_, _, kept, (c, mask)| {
    ///         for ((k, &c), &m) in kept.iter_mut().zip(c).zip(mask) {
    ///             *k = if m { c } else { 0.0 };
    ///         }
    ///     });
    /// });
    /// assert_eq!((kept[4], kept[5]), (4.0, 0.0));
    /// # Ok::<(), numatask_sched::BuildError>(())
    /// ```
    ///
    /// # Panics
    ///
    /// If an input's length differs from `data`'s (before any chunk runs), or `grain` is
    /// `Size(0)` or `Tasks(0)`; and with the panic of a chunk, or of a task it spawned, once
    /// every chunk has run.
    #[track_caller]
    pub fn taskloop_zip<T, I, F>(&self, data: &mut [T], inputs: I, grain: Grain, body: F)
    where
        T: Send,
        I: ZipInputs,
        F: Fn(&Scope<'scope>, usize, &mut [T], I::Parts) + Sync,
    {
        if let Some((k, len)) = inputs
            .lengths()
            .into_iter()
            .enumerate()
            .find(|&(_, len)| len != data.len())
        {
            panic!(
                "taskloop_zip: input {k} holds {len} elements and the output {}: every input \
                 must be as long as the output",
                data.len()
            );
        }
        let Some(chunking) = Chunking::of(data.len(), grain, self) else {
            return;
        };
        let chunking = chunking.cut_at_huge_pages(data, self);
        self.taskgroup(|g| {
            let part = Part::whole(g, chunking);
            let meta = zip_footprint(g, data, &inputs, 0..data.len());
            run_placed(g, meta, |s| {
                split_slice(s, chunking, part, data, &inputs, &body)
            });
        });
    }
}

/// Runs a whole slice loop, `run`, from `g`: as one task dealt by `meta`, the whole slice's
/// footprint, when the runtime uses footprints (without it the second halves would all run on
/// the calling worker, wherever the data is); in place otherwise.
fn run_placed<'scope, R: Send>(
    g: &Scope<'scope>,
    meta: Option<Box<TaskMeta>>,
    run: impl FnOnce(&Scope<'scope>) -> R + Send,
) -> R {
    match meta {
        Some(meta) => g.join_with(Some(meta), run, |_| ()).0,
        None => run(g),
    }
}

/// The footprint of a taskloop task over `part`, which it accesses as `kind`, if the runtime
/// uses footprints.
fn footprint_of<T>(s: &Scope<'_>, part: &[T], kind: AccessKind) -> Option<Box<TaskMeta>> {
    s.uses_footprints().then(|| {
        Box::new(TaskMeta {
            footprint: Box::new([Access::of_slice(part, kind)]),
            label: Some("taskloop"),
            ..TaskMeta::default()
        })
    })
}

/// The inputs of a loop over a mutable slice that reads nothing else ([`Scope::taskloop_mut`]).
const NO_INPUTS: [&[()]; 0] = [];

/// A slice that [`Scope::taskloop_zip`] reads alongside the one it writes: a slice, an array,
/// a `Vec`, a `Box<[T]>` or a [`NumaVec`](numatask_alloc::NumaVec), or a reference to one.
///
/// For a type of its own, `as_loop_slice` must give the same elements at every call (the loop
/// checks the length once, then cuts the slice per chunk: a slice that shrank in between makes
/// a chunk panic, as slice indexing does).
pub trait LoopInput: Sync {
    /// The element type.
    type Elem: Sync;

    /// The elements.
    fn as_loop_slice(&self) -> &[Self::Elem];
}

impl<T: LoopInput + ?Sized> LoopInput for &T {
    type Elem = T::Elem;

    fn as_loop_slice(&self) -> &[T::Elem] {
        (**self).as_loop_slice()
    }
}

impl<T: Sync> LoopInput for [T] {
    type Elem = T;

    fn as_loop_slice(&self) -> &[T] {
        self
    }
}

impl<T: Sync, const M: usize> LoopInput for [T; M] {
    type Elem = T;

    fn as_loop_slice(&self) -> &[T] {
        self
    }
}

impl<T: Sync> LoopInput for Vec<T> {
    type Elem = T;

    fn as_loop_slice(&self) -> &[T] {
        self
    }
}

impl<T: Sync> LoopInput for Box<[T]> {
    type Elem = T;

    fn as_loop_slice(&self) -> &[T] {
        self
    }
}

impl<T: Sync> LoopInput for numatask_alloc::NumaVec<T> {
    type Elem = T;

    fn as_loop_slice(&self) -> &[T] {
        self
    }
}

/// The inputs of [`Scope::taskloop_zip`]: an array of [`LoopInput`]s of one type (a `Vec`
/// and a `NumaVec` in one array do not mix: write `&v[..]` for each, or give a tuple), or a
/// tuple of 1 to 4 of any types. A chunk's body gets the same shape of slices, `Parts`.
///
/// Implemented for those shapes only (the trait is sealed: methods may be added to it).
pub trait ZipInputs: Sync + sealed::Sealed {
    /// What a chunk's body gets: the chunk's elements of every input, as an array or tuple
    /// of slices.
    type Parts;

    /// The number of inputs.
    fn count(&self) -> usize;

    /// The length of every input, in order.
    fn lengths(&self) -> Vec<usize>;

    /// The elements `range` of every input.
    fn parts(&self, range: Range<usize>) -> Self::Parts;

    /// Appends the elements `range` of every input to `out`, as accesses of `kind`.
    fn accesses(&self, range: Range<usize>, kind: AccessKind, out: &mut Vec<Access>);
}

/// Keeps [`ZipInputs`] to the shapes implemented here.
mod sealed {
    pub trait Sealed {}
}

impl<V: ?Sized, const N: usize> sealed::Sealed for [&V; N] {}

impl<'a, V: LoopInput + ?Sized, const N: usize> ZipInputs for [&'a V; N] {
    type Parts = [&'a [V::Elem]; N];

    fn count(&self) -> usize {
        N
    }

    fn lengths(&self) -> Vec<usize> {
        self.iter().map(|v| v.as_loop_slice().len()).collect()
    }

    fn parts(&self, range: Range<usize>) -> Self::Parts {
        std::array::from_fn(|k| &self[k].as_loop_slice()[range.clone()])
    }

    fn accesses(&self, range: Range<usize>, kind: AccessKind, out: &mut Vec<Access>) {
        out.extend(
            self.iter()
                .map(|v| Access::of_slice(&v.as_loop_slice()[range.clone()], kind)),
        );
    }
}

/// [`ZipInputs`] for a tuple of inputs, each of its own type.
macro_rules! zip_inputs_tuple {
    ($($input:ident $index:tt),+) => {
        impl<$($input: ?Sized),+> sealed::Sealed for ($(&$input,)+) {}

        impl<'a, $($input: LoopInput + ?Sized),+> ZipInputs for ($(&'a $input,)+) {
            type Parts = ($(&'a [$input::Elem],)+);

            fn count(&self) -> usize {
                [$(stringify!($input)),+].len()
            }

            fn lengths(&self) -> Vec<usize> {
                vec![$(self.$index.as_loop_slice().len()),+]
            }

            fn parts(&self, range: Range<usize>) -> Self::Parts {
                ($(&self.$index.as_loop_slice()[range.clone()],)+)
            }

            fn accesses(&self, range: Range<usize>, kind: AccessKind, out: &mut Vec<Access>) {
                $(out.push(Access::of_slice(&self.$index.as_loop_slice()[range.clone()], kind));)+
            }
        }
    };
}

zip_inputs_tuple!(A 0);
zip_inputs_tuple!(A 0, B 1);
zip_inputs_tuple!(A 0, B 1, C 2);
zip_inputs_tuple!(A 0, B 1, C 2, D 3);

/// The footprint of a task of a loop over a mutable slice, if the runtime uses footprints:
/// `part` (written) and the elements `range` of every input (read).
fn zip_footprint<T, I: ZipInputs>(
    s: &Scope<'_>,
    part: &[T],
    inputs: &I,
    range: Range<usize>,
) -> Option<Box<TaskMeta>> {
    s.uses_footprints().then(|| {
        // One allocation: the output's access, then the inputs'.
        let mut footprint = Vec::with_capacity(1 + inputs.count());
        footprint.push(Access::of_slice(part, AccessKind::InOut));
        inputs.accesses(range, AccessKind::In, &mut footprint);
        Box::new(TaskMeta {
            footprint: footprint.into_boxed_slice(),
            label: Some("taskloop"),
            ..TaskMeta::default()
        })
    })
}

impl PageCut {
    /// The cut of `bytes` bytes at address `start` into huge pages of `unit` bytes, elements of
    /// `size` bytes (`0 < size <= unit / 2`); `None` when it spans a single page.
    fn of(start: usize, bytes: usize, unit: usize, size: usize) -> Option<PageCut> {
        let end = start + bytes;
        // The boundaries strictly inside the slice: `first_boundary + k * unit`, `k < inside`.
        let first_boundary = (start / unit + 1) * unit;
        if first_boundary >= end {
            return None;
        }
        let inside = (end - 1 - first_boundary) / unit + 1;
        let last_boundary = first_boundary + (inside - 1) * unit;
        // Partial pages at the ends shorter than half a page go with their neighbours: drop
        // the boundary that separates them (each end at most once, and one boundary stays
        // for the other end only if there are two).
        let mut kept = first_boundary..=last_boundary;
        if first_boundary - start < unit / 2 {
            kept = first_boundary + unit..=last_boundary;
        }
        if end - last_boundary < unit / 2 {
            kept = *kept.start()..=last_boundary.saturating_sub(unit);
        }
        if kept.is_empty() {
            return None;
        }
        // Each kept boundary lies at least half a page (at least an element) from either end,
        // so its element index is in `1..len`.
        Some(PageCut {
            pages: (kept.end() - kept.start()) / unit + 2,
            first: kept.start() - start,
            unit,
            size,
        })
    }
}

/// How many more times a part of a loop splits before it runs its chunks in place.
#[derive(Clone, Copy)]
struct Splits {
    left: usize,
    workers: usize,
}

impl Splits {
    /// A split per worker; none with one worker, where a part has nobody to go to.
    fn new(workers: usize) -> Self {
        Splits {
            left: if workers > 1 { workers } else { 0 },
            workers,
        }
    }

    /// Whether a part splits (and takes a split from the budget): always when it `migrated`
    /// to another worker than the one that split it off, which resets the budget, since that
    /// worker was idle; otherwise while the budget lasts.
    fn split(&mut self, migrated: bool) -> bool {
        if migrated {
            self.left = self.workers.max(self.left / 2);
            true
        } else if self.left > 0 {
            self.left /= 2;
            true
        } else {
            false
        }
    }
}

/// A part of a loop: its chunks, its split budget, and the worker that split it off.
#[derive(Clone)]
struct Part {
    chunks: Range<usize>,
    splits: Splits,
    from: usize,
}

impl Part {
    /// The whole loop, started on `s`'s worker.
    fn whole(s: &Scope<'_>, chunking: Chunking) -> Part {
        Part {
            chunks: 0..chunking.chunks,
            splits: Splits::new(s.num_workers()),
            from: s.worker_index(),
        }
    }

    /// Whether to split this part, running on `s`'s worker: its two halves, split off by that
    /// worker, or the part itself to run in place.
    fn halves(mut self, s: &Scope<'_>) -> Result<(Part, Part), Part> {
        let here = s.worker_index();
        if self.chunks.len() < 2 || !self.splits.split(here != self.from) {
            return Err(self);
        }
        let mid = self.chunks.start + self.chunks.len() / 2;
        let first = Part {
            chunks: self.chunks.start..mid,
            splits: self.splits,
            from: here,
        };
        let second = Part {
            chunks: mid..self.chunks.end,
            splits: self.splits,
            from: here,
        };
        Ok((first, second))
    }
}

/// Calls `run(c)` for each chunk `c` of `chunks`, every one even after a panic of another;
/// then resumes the first panic, if any.
fn each_chunk(chunks: Range<usize>, mut run: impl FnMut(usize)) {
    let mut first: Option<Payload> = None;
    for c in chunks {
        if let Err(payload) = panic::catch_unwind(AssertUnwindSafe(|| run(c))) {
            match first {
                None => first = Some(payload),
                Some(_) => drop_payload(payload),
            }
        }
    }
    if let Some(payload) = first {
        crate::scope::resume_task_panic(payload);
    }
}

/// The footprint of a part of a loop over a range: none for a plain range, the part's
/// elements for a loop over a slice ([`Scope::taskloop_slice`]).
trait PartFootprint: Sync {
    fn of(&self, s: &Scope<'_>, range: Range<usize>) -> Option<Box<TaskMeta>>;
}

/// A loop over indices only: its tasks carry no footprint, only their label in a trace.
struct NoFootprint;

impl PartFootprint for NoFootprint {
    #[inline]
    fn of(&self, s: &Scope<'_>, _: Range<usize>) -> Option<Box<TaskMeta>> {
        s.is_tracing().then(|| {
            Box::new(TaskMeta {
                label: Some("taskloop"),
                ..TaskMeta::default()
            })
        })
    }
}

/// A loop over the indices of a slice it reads: a part's footprint is its elements.
struct ReadsOf<'a, T>(&'a [T]);

impl<T: Sync> PartFootprint for ReadsOf<'_, T> {
    fn of(&self, s: &Scope<'_>, range: Range<usize>) -> Option<Box<TaskMeta>> {
        footprint_of(s, &self.0[range], AccessKind::In)
    }
}

/// The indices of `part`'s chunks in a loop over the range starting at `start`.
fn indices(start: usize, chunking: Chunking, part: &Part) -> Range<usize> {
    start + chunking.bound(part.chunks.start)..start + chunking.bound(part.chunks.end)
}

/// Runs `part` of a loop over the range starting at `start`: split in two halves, the first a
/// task (with its footprint from `place`), or its chunks in place.
fn split_range<'scope, F, P>(
    s: &Scope<'scope>,
    start: usize,
    chunking: Chunking,
    part: Part,
    body: &F,
    place: &P,
) where
    F: Fn(&Scope<'scope>, Range<usize>) + Sync,
    P: PartFootprint,
{
    match part.halves(s) {
        Ok((first, second)) => {
            s.join_with(
                place.of(s, indices(start, chunking, &first)),
                |s| split_range(s, start, chunking, first, body, place),
                |s| split_range(s, start, chunking, second, body, place),
            );
        }
        Err(part) => each_chunk(part.chunks, |c| {
            body(s, start + chunking.bound(c)..start + chunking.bound(c + 1));
        }),
    }
}

/// The three closures of [`Scope::taskloop_reduce`].
struct Reduction<I, F, C> {
    identity: I,
    body: F,
    reduce: C,
}

/// Runs `part` of a reduction over the range starting at `start`: split in two halves, the
/// first a task (with its footprint from `place`), their results reduced in order; or its
/// chunks in place, folded from the identity. Every chunk runs even after a panic of another
/// chunk or of `reduce` (as [`each_chunk`]).
fn reduce_range<'scope, R, I, F, C, P>(
    s: &Scope<'scope>,
    start: usize,
    chunking: Chunking,
    part: Part,
    reduction: &Reduction<I, F, C>,
    place: &P,
) -> R
where
    R: Send,
    I: Fn() -> R + Sync,
    F: Fn(&Scope<'scope>, Range<usize>) -> R + Sync,
    C: Fn(R, R) -> R + Sync,
    P: PartFootprint,
{
    match part.halves(s) {
        Ok((first, second)) => {
            let (a, b) = s.join_with(
                place.of(s, indices(start, chunking, &first)),
                |s| reduce_range(s, start, chunking, first, reduction, place),
                |s| reduce_range(s, start, chunking, second, reduction, place),
            );
            (reduction.reduce)(a, b)
        }
        Err(part) => {
            let mut acc = Some((reduction.identity)());
            let ran = panic::catch_unwind(AssertUnwindSafe(|| {
                each_chunk(part.chunks, |c| {
                    let range = start + chunking.bound(c)..start + chunking.bound(c + 1);
                    let result = (reduction.body)(s, range);
                    // Taken out while `reduce` runs: a panic there leaves `None`, and the
                    // chunks after it still run (their results are dropped with the panic).
                    if let Some(earlier) = acc.take() {
                        acc = Some((reduction.reduce)(earlier, result));
                    }
                })
            }));
            match ran {
                Ok(()) => acc.expect("each_chunk resumes the panic that left no accumulator"),
                // The accumulator goes before the panic resumes, with its destructor's panic
                // contained: dropped while unwinding, a panicking destructor would abort.
                Err(payload) => {
                    drop_contained(acc);
                    crate::scope::resume_task_panic(payload)
                }
            }
        }
    }
}

/// Runs `part` of a loop over a mutable slice, whose elements are `elements`, that reads the
/// same elements of `inputs` (whole slices, indexed from the loop's start): split in two
/// halves, the first a task with its half of `elements` and of the inputs as its footprint,
/// or its chunks in place.
fn split_slice<'scope, T, I, F>(
    s: &Scope<'scope>,
    chunking: Chunking,
    part: Part,
    elements: &mut [T],
    inputs: &I,
    body: &F,
) where
    T: Send,
    I: ZipInputs,
    F: Fn(&Scope<'scope>, usize, &mut [T], I::Parts) + Sync,
{
    match part.halves(s) {
        Ok((first, second)) => {
            let (start, mid) = (
                chunking.bound(first.chunks.start),
                chunking.bound(second.chunks.start),
            );
            let (first_elements, second_elements) = elements.split_at_mut(mid - start);
            s.join_with(
                zip_footprint(s, first_elements, inputs, start..mid),
                |s| split_slice(s, chunking, first, first_elements, inputs, body),
                |s| split_slice(s, chunking, second, second_elements, inputs, body),
            );
        }
        Err(part) => {
            let mut rest = elements;
            each_chunk(part.chunks, |c| {
                let range = chunking.bound(c)..chunking.bound(c + 1);
                let (chunk, after) = std::mem::take(&mut rest).split_at_mut(range.len());
                rest = after;
                body(s, range.start, chunk, inputs.parts(range.clone()));
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_split_budget_halves_per_level_and_resets_when_a_part_migrates() {
        let mut splits = Splits::new(4);
        // Splits while the budget lasts (4, 2, 1), then runs in place.
        let taken: Vec<bool> = (0..4).map(|_| splits.split(false)).collect();
        assert_eq!(taken, [true, true, true, false]);
        // A part another worker took splits again, with a whole budget.
        assert!(splits.split(true));
        assert_eq!(splits.left, 4);
        let mut kept = splits;
        assert_eq!(
            (0..4).map(|_| kept.split(false)).collect::<Vec<_>>(),
            [true, true, true, false]
        );
        // A migrated part whose budget is larger than the workers' keeps half of it.
        let mut big = Splits {
            left: 16,
            workers: 4,
        };
        assert!(big.split(true));
        assert_eq!(big.left, 8);
        // One worker: nobody to take a part, no split.
        let mut alone = Splits::new(1);
        assert!(!alone.split(false));
    }

    #[test]
    fn grain_cuts_as_openmp_grainsize_and_num_tasks() {
        assert_eq!(Grain::Size(100).chunks(1000, 4), 10);
        assert_eq!(Grain::Size(100).chunks(1999, 4), 19, "chunks of 100 to 199");
        assert_eq!(
            Grain::Size(100).chunks(50, 4),
            1,
            "a short loop is one chunk"
        );
        assert_eq!(Grain::Tasks(16).chunks(1000, 4), 16);
        assert_eq!(Grain::Tasks(16).chunks(5, 4), 5, "no empty chunk");
        assert_eq!(Grain::Auto.chunks(1000, 4), 32);
        assert_eq!(Grain::Auto.chunks(10, 4), 10);
        assert_eq!(Grain::Auto.chunks(0, 4), 0, "an empty loop runs no chunk");
    }

    #[test]
    fn a_cut_at_huge_pages_covers_the_loop_in_runs_of_whole_pages_none_empty() {
        // Small units, so that every shape is cheap: slices of every length and alignment,
        // elements that divide the unit and elements that do not.
        let unit = 64;
        for size in [1, 3, 8, 24, 32] {
            for start in (0..2 * unit).step_by(size.min(5)) {
                for len in 1..(6 * unit / size) {
                    let bytes = len * size;
                    let Some(cut) = PageCut::of(start, bytes, unit, size) else {
                        // One page: no boundary, or only ones within half a page of an end.
                        continue;
                    };
                    for chunks in 1..=cut.pages {
                        let c = Chunking {
                            len,
                            chunks,
                            cut: Some(cut),
                        };
                        let bounds: Vec<usize> = (0..=chunks).map(|i| c.bound(i)).collect();
                        let what = format!("size {size} start {start} len {len} chunks {chunks}");
                        assert_eq!((bounds[0], bounds[chunks]), (0, len), "{what}");
                        for pair in bounds.windows(2) {
                            assert!(pair[0] < pair[1], "{what}: an empty chunk in {bounds:?}");
                        }
                        for &b in &bounds[1..chunks] {
                            // At the first element starting at or after a boundary.
                            let at = start + b * size;
                            assert!(at % unit < size, "{what}: bound {b} at {at}");
                        }
                        // Every chunk is at least half a page (the element around a boundary
                        // aside), and with one chunk per page, at most a page and a half.
                        for pair in bounds.windows(2) {
                            let chunk = (pair[1] - pair[0]) * size;
                            assert!(chunk + size > unit / 2, "{what}: {bounds:?}");
                            if chunks == cut.pages {
                                assert!(chunk < 3 * unit / 2 + size, "{what}: {bounds:?}");
                            }
                        }
                    }
                }
            }
        }
    }

    #[test]
    fn chunk_sizes_differ_by_at_most_one_and_cover_the_loop() {
        for (len, chunks) in [(1000, 7), (7, 7), (1, 1), (usize::MAX, 3), (1 << 40, 1000)] {
            let c = Chunking {
                len,
                chunks,
                cut: None,
            };
            assert_eq!((c.bound(0), c.bound(chunks)), (0, len));
            let sizes: Vec<usize> = (0..chunks).map(|i| c.bound(i + 1) - c.bound(i)).collect();
            let (min, max) = (sizes.iter().min().unwrap(), sizes.iter().max().unwrap());
            assert!(
                *min >= 1 && max - min <= 1,
                "{len} in {chunks}: {min}..={max}"
            );
        }
    }

    #[test]
    #[should_panic(expected = "Grain::Size(0)")]
    fn a_grain_size_of_zero_is_refused() {
        Grain::Size(0).chunks(10, 2);
    }

    #[test]
    #[should_panic(expected = "Grain::Tasks(0)")]
    fn zero_tasks_are_refused() {
        Grain::Tasks(0).chunks(10, 2);
    }
}
