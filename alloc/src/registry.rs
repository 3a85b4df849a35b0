//! The placement registry: for every allocation of this allocator, where its pages were meant to
//! go, so that the scheduler can ask how many bytes of a range live on each node (the vector `D`
//! of the core paper's Algorithm 1).
//!
//! # Cost model
//!
//! Lookups vastly outnumber allocations (one lookup per dependence of every task dealt), so the
//! registry is a sorted, immutable snapshot of records behind an [`ArcSwap`]: a lookup is one
//! lock-free snapshot load (no shared write) and two binary searches, `O(log allocations)`, and
//! for fine and coarse memory pure arithmetic with no system call. The snapshot is a sorted list
//! of chunks of at most 128 records; registering or removing an allocation (under a
//! writer mutex) copies the list of chunks and the one chunk it changes, sharing the others
//! with the previous snapshot: `O(allocations / CHUNK_MAX + CHUNK_MAX)` reference counts, about
//! 1,700 with 100,000 live allocations, where copying every record took 2-4 ms per allocation
//! and free (measured on the 2-core development VM).
//!
//! Standard (first-touch) memory is placed by the kernel when a page is first written, so the
//! registry asks the kernel (`move_pages`) only when such a range is looked up, and caches each
//! page's node once the kernel reports it resident: a lookup of pages all known reads the cache
//! alone (no lock, no system call). Pages not yet resident are asked again at the next lookup,
//! as they may have been touched since.
//!
//! The kernel may move a resident page later (automatic NUMA balancing, `move_pages`,
//! `migrate_pages`, `numactl --migrate`) without telling anyone, so on a machine of several
//! nodes a cached answer is trusted for [`STALE_AFTER_MS`] at most: the pages are dated in
//! segments of 512 (2 MiB of 4 KiB pages), each stamped with the time of its oldest answer (a
//! coarse clock, read once per lookup of first-touch memory), and a lookup that meets a segment
//! answered longer ago asks the kernel about all of its pages again. A page moved is therefore
//! reported on its new node by the first lookup more than 100 ms (plus the clock's tick, at
//! most 4 ms on Linux) after the answer that last saw it, at the cost of one `move_pages` of 512
//! pages per segment looked up and per 100 ms. Fine and coarse memory is bound to its nodes (`mbind`), which NUMA balancing leaves
//! where it is, so its arithmetic stays true. [`crate::resident_nodes`] asks the kernel every
//! time.

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use arc_swap::ArcSwap;

use crate::distribution::Distribution;
use crate::error::AllocError;
use crate::topology::Topology;
use crate::{page_shift, page_size};

/// Bytes per NUMA node of a memory range, plus bytes whose node is unknown (memory not from this
/// allocator, or first-touch pages not yet touched).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct NodeBytes {
    bytes: Vec<u64>,
    unknown: u64,
}

impl NodeBytes {
    /// All zero, for `num_nodes` nodes.
    pub fn new(num_nodes: usize) -> Self {
        Self {
            bytes: vec![0; num_nodes],
            unknown: 0,
        }
    }

    /// From explicit per-node byte counts (no unknown bytes).
    pub fn from_bytes(bytes: Vec<u64>) -> Self {
        Self { bytes, unknown: 0 }
    }

    /// Resets every count to zero, keeping the number of nodes.
    pub fn clear(&mut self) {
        self.bytes.iter_mut().for_each(|b| *b = 0);
        self.unknown = 0;
    }

    /// Bytes on each node, indexed by topology node index.
    pub fn per_node(&self) -> &[u64] {
        &self.bytes
    }

    /// Bytes on node `node` (0 for a node outside the vector).
    pub fn on(&self, node: usize) -> u64 {
        self.bytes.get(node).copied().unwrap_or(0)
    }

    /// Bytes whose node is not known.
    pub fn unknown(&self) -> u64 {
        self.unknown
    }

    /// Bytes on known nodes (saturating at `u64::MAX`).
    pub fn known(&self) -> u64 {
        self.bytes.iter().fold(0, |sum, &b| sum.saturating_add(b))
    }

    /// The node holding the most bytes (the lowest index on ties), `None` when nothing is known.
    pub fn dominant_node(&self) -> Option<usize> {
        let (node, &max) = self
            .bytes
            .iter()
            .enumerate()
            .rev()
            .max_by_key(|&(_, b)| *b)?;
        (max > 0).then_some(node)
    }

    /// Adds `other` to `self` (the footprint of several ranges).
    pub fn add(&mut self, other: &NodeBytes) {
        if self.bytes.len() < other.bytes.len() {
            self.bytes.resize(other.bytes.len(), 0);
        }
        for (a, b) in self.bytes.iter_mut().zip(&other.bytes) {
            *a = a.saturating_add(*b);
        }
        self.unknown = self.unknown.saturating_add(other.unknown);
    }

    fn add_on(&mut self, node: usize, bytes: u64) {
        if node >= self.bytes.len() {
            self.bytes.resize(node + 1, 0);
        }
        self.bytes[node] = self.bytes[node].saturating_add(bytes);
    }
}

/// Where the pages of one allocation were meant to go.
#[derive(Debug)]
pub(crate) enum Placement {
    /// First touch; the cache holds each page's node once the kernel reported it.
    Standard(PageCache),
    /// Interleaved over `num_nodes` nodes in units of `1 << shift` bytes (a base page, or a
    /// huge page with huge pages on): the unit with number `u` (its address `>> shift`) is on
    /// node `(u + phase) % num_nodes`. The kernel deals consecutive base pages of a mapping
    /// to consecutive nodes; where it starts depends on the kernel (before Linux 6.7 the index
    /// is the page number cut to 32 bits, which differs from `p` modulo a node count that is
    /// not a power of two), so the allocator records the node the kernel gave the first page.
    /// Huge units are bound one by one by the allocator.
    Fine {
        num_nodes: usize,
        phase: usize,
        shift: u32,
    },
    /// Wholly on one node.
    Node { node: usize },
}

/// One mapping of the allocator: handed out, or free in its cache for reuse.
#[derive(Debug)]
pub(crate) struct Record {
    pub(crate) start: usize,
    /// Mapped length (whole pages).
    pub(crate) len: usize,
    /// Length the caller asked for (of its current or last handout).
    pub(crate) requested: AtomicUsize,
    /// Bytes from the start that a handout may have written (the rest is still zero).
    pub(crate) dirty: AtomicUsize,
    /// Whether it is handed out (not free in the cache).
    pub(crate) live: std::sync::atomic::AtomicBool,
    /// Where it goes back in the reuse cache when freed (`None`: to the kernel), decided
    /// when it was mapped.
    pub(crate) cache_key: Option<crate::cache::Key>,
    pub(crate) distribution: Distribution,
    pub(crate) placement: Placement,
    /// Whether it is made of huge pages (2 MiB aligned and long, advised for them).
    pub(crate) huge: bool,
}

impl Record {
    /// A new mapping's record, handed out for `requested` bytes.
    pub(crate) fn new(
        start: usize,
        len: usize,
        requested: usize,
        distribution: Distribution,
        placement: Placement,
    ) -> Self {
        Record {
            start,
            len,
            requested: AtomicUsize::new(requested),
            dirty: AtomicUsize::new(requested),
            live: std::sync::atomic::AtomicBool::new(true),
            cache_key: None,
            distribution,
            placement,
            huge: false,
        }
    }
}

impl Record {
    /// The node `D` of `[lo, hi)`, which must lie inside this record.
    fn accumulate(&self, lo: usize, hi: usize, out: &mut NodeBytes) {
        match &self.placement {
            Placement::Node { node } => out.add_on(*node, (hi - lo) as u64),
            Placement::Fine {
                num_nodes,
                phase,
                shift,
            } => fine_bytes(lo, hi, *num_nodes, *phase, *shift, out),
            Placement::Standard(cache) => standard_bytes(self.start, lo, hi, cache, out),
        }
    }
}

/// Exact arithmetic for interleaved memory, `O(nodes)` whatever the range's length: the unit
/// (page) with number `p` (its address `>> shift`) is on node `(p + phase) % n`. (Shifts for
/// the unit's size and three divisions by `n` in all: a lookup runs for every task the
/// scheduler deals.)
fn fine_bytes(lo: usize, hi: usize, n: usize, phase: usize, shift: u32, out: &mut NodeBytes) {
    if n == 1 {
        out.add_on(0, (hi - lo) as u64);
        return;
    }
    let (first, last) = ((lo >> shift) + phase, ((hi - 1) >> shift) + phase);
    let lo = lo + (phase << shift);
    let hi = hi + (phase << shift);
    let first_node = first % n;
    if first == last {
        out.add_on(first_node, (hi - lo) as u64);
        return;
    }
    out.add_on(first_node, (((first + 1) << shift) - lo) as u64);
    out.add_on(last % n, (hi - (last << shift)) as u64);
    let full = last - first - 1;
    let (each, extra) = (full / n, full % n);
    if out.bytes.len() < n {
        out.bytes.resize(n, 0);
    }
    // The full pages between, from the node after the first page's on: node `first_node + 1
    // + k` (modulo n) gets one of the `extra` leftover pages when k < extra.
    let mut node = first_node + 1;
    for k in 0..n {
        if node == n {
            node = 0;
        }
        let pages = each + usize::from(k < extra);
        let b = &mut out.bytes[node];
        *b = b.saturating_add((pages << shift) as u64);
        node += 1;
    }
}

/// First-touch memory: cached page nodes, asking the kernel for the pages not known yet.
fn standard_bytes(start: usize, lo: usize, hi: usize, pages: &PageCache, out: &mut NodeBytes) {
    let shift = page_shift();
    let ps = 1 << shift;
    let (first, last) = ((lo - start) >> shift, (hi - 1 - start) >> shift);
    // One pass, consecutive pages on one node added at once, four pages to a word where a
    // whole word continues the run; the parts of the first and last pages outside `lo..hi` are
    // taken off their runs.
    let mut runs = Runs {
        node: UNKNOWN,
        run: 0,
        first_run: true,
        head: ((lo - start) & (ps - 1)) as u64,
        tail: (start + ((last + 1) << shift) - hi) as u64,
        shift,
        out,
    };
    // Each page's lane is read once: another thread may cache a page meanwhile, and a run
    // must not end on an entry read twice with two answers. The first time the pass meets a
    // page not known, while some page of the allocation is not (once all are, the usual state
    // of initialized memory, the kernel is never asked), it asks the kernel about the rest of
    // the range, whose pages it has not read yet, and reads on. Pages are cached independently
    // (a race stores the same answer twice): no lock.
    if let Some(clock) = recheck_clock() {
        pages.refresh_stale(start, first, last, clock);
    }
    let mut may_ask = pages.known.load(Ordering::Relaxed) < pages.pages;
    let (first_word, last_word) = (first / LANES, last / LANES);
    let words = &pages.words[first_word..=last_word];
    let mut take = |runs: &mut Runs<'_>, w: usize, from: usize, to: usize| {
        let cell = &words[w - first_word];
        let mut word = cell.load(Ordering::Relaxed);
        if may_ask && any_unknown(word, from, to) {
            ask_kernel(start, w * LANES + from..=last, pages);
            may_ask = false;
            word = cell.load(Ordering::Relaxed);
        }
        runs.lanes(word, from, to);
    };
    if first_word == last_word {
        take(&mut runs, first_word, first % LANES, last % LANES);
    } else {
        take(&mut runs, first_word, first % LANES, LANES - 1);
        // The whole words between: words of four pages on the run's node continue it, counted
        // in a register; a word that does not is taken lane by lane (read again: each lane
        // still counts once, with the value of that read).
        let mut w = first_word + 1;
        while w < last_word {
            let splat = runs.node * SPLAT;
            let same = words[w - first_word..last_word - first_word]
                .iter()
                .take_while(|cell| cell.load(Ordering::Relaxed) == splat)
                .count();
            runs.run += same * LANES;
            w += same;
            if w < last_word {
                take(&mut runs, w, 0, LANES - 1);
                w += 1;
            }
        }
        take(&mut runs, last_word, 0, last % LANES);
    }
    runs.flush(true);
}

/// The runs of pages on one node that [`standard_bytes`] adds up.
struct Runs<'a> {
    /// The node (lane value) of the current run.
    node: u64,
    /// Pages in the current run (0 before the first page).
    run: usize,
    /// Whether the current run is the range's first (which loses `head`).
    first_run: bool,
    /// Bytes of the first page before the range, and of the last page after it.
    head: u64,
    tail: u64,
    shift: u32,
    out: &'a mut NodeBytes,
}

impl Runs<'_> {
    /// Adds the current run's bytes to its node (the range's last run: `last_run`).
    fn flush(&mut self, last_run: bool) {
        let bytes = ((self.run as u64) << self.shift)
            - if self.first_run { self.head } else { 0 }
            - if last_run { self.tail } else { 0 };
        if self.node == UNKNOWN {
            self.out.unknown = self.out.unknown.saturating_add(bytes);
        } else {
            self.out.add_on(self.node as usize, bytes);
        }
    }

    /// Goes on over lanes `from..=to` of `word`.
    #[inline]
    fn lanes(&mut self, word: u64, from: usize, to: usize) {
        let first = (word >> (16 * from)) & 0xFFFF;
        if (word ^ (first * SPLAT)) & lane_mask(from, to) == 0 {
            // All on one node (or all unknown): one run, or one more page of the current.
            if self.run > 0 && first != self.node {
                self.flush(false);
                (self.run, self.first_run) = (0, false);
            }
            self.node = first;
            self.run += to - from + 1;
            return;
        }
        for lane in from..=to {
            let here = (word >> (16 * lane)) & 0xFFFF;
            if self.run > 0 && here != self.node {
                self.flush(false);
                (self.run, self.first_run) = (0, false);
            }
            self.node = here;
            self.run += 1;
        }
    }
}

/// Pages per word of [`PageCache`].
const LANES: usize = 4;
/// A lane of a [`PageCache`] word whose page is not known yet.
const UNKNOWN: u64 = 0xFFFF;
/// A lane value repeated in every lane of a word.
const SPLAT: u64 = 0x0001_0001_0001_0001;

/// Lane `page % LANES` of `word`.
fn lane_of(word: u64, page: usize) -> u64 {
    (word >> (16 * (page % LANES))) & 0xFFFF
}

/// The bits of lanes `from..=to` of a word.
fn lane_mask(from: usize, to: usize) -> u64 {
    (u64::MAX << (16 * from)) & (u64::MAX >> (16 * (LANES - 1 - to)))
}

/// Whether a lane of `from..=to` of `word` holds a page not known.
fn any_unknown(word: u64, from: usize, to: usize) -> bool {
    // The lanes of the range; the others count as known (zero). An unknown lane is all ones:
    // a zero lane of the complement.
    let x = !(word & lane_mask(from, to));
    x.wrapping_sub(SPLAT) & !x & (SPLAT << 15) != 0
}

/// How long the registry trusts the node the kernel gave for a first-touch page, in
/// milliseconds: a lookup after that asks again (module docs).
pub const STALE_AFTER_MS: u32 = 100;

/// Pages per segment of a [`PageCache`], the unit in which answers are dated and asked again:
/// 512 pages, 2 MiB of 4 KiB pages.
const SEGMENT: usize = 512;

/// Milliseconds of the coarse monotonic clock (`CLOCK_MONOTONIC_COARSE`, read without a
/// system call, a tick of 1 - 4 ms), cut to 32 bits (they wrap every 49 days; ages are taken
/// by wrapping subtraction) and never 0, which [`PageCache`] keeps for "never asked".
fn coarse_ms() -> u32 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid timespec to write; the coarse monotonic clock is always present
    // on Linux (and on failure `ts` keeps zeros, which only makes answers look fresh).
    #[cfg(not(miri))]
    unsafe {
        libc::clock_gettime(libc::CLOCK_MONOTONIC_COARSE, &mut ts)
    };
    let ms = (ts.tv_sec as u64)
        .wrapping_mul(1000)
        .wrapping_add(ts.tv_nsec as u64 / 1_000_000) as u32;
    ms.max(1)
}

/// Whether cached first-touch answers go stale, as a clock to date them by: only where the
/// kernel places pages on several nodes (on one node, or on a synthetic topology whose
/// nodes the kernel does not know, there is nothing a migration could change).
fn recheck_clock() -> Option<fn() -> u32> {
    static MULTI: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    let multi = *MULTI
        .get_or_init(|| Topology::current().is_ok_and(|t| !t.is_synthetic() && t.num_nodes() > 1));
    multi.then_some(coarse_ms as fn() -> u32)
}

/// The node of each page of a first-touch allocation, once the kernel reported it.
#[derive(Debug)]
pub(crate) struct PageCache {
    /// The index in the topology of each page's node, 16 bits a page, page `p` in lane
    /// `p % LANES` of word `p / LANES` ([`UNKNOWN`] while not known), so that a lookup reads
    /// four pages at a time.
    words: Box<[AtomicU64]>,
    /// Pages of the allocation.
    pages: usize,
    /// How many pages are known.
    known: AtomicUsize,
    /// Per segment of [`SEGMENT`] pages, when the kernel was last asked about all of its pages
    /// ([`coarse_ms`]), 0 for never.
    asked: Box<[std::sync::atomic::AtomicU32]>,
}

impl PageCache {
    /// A cache of `pages` pages, none known.
    pub(crate) fn new(pages: usize) -> Self {
        PageCache {
            words: (0..pages.div_ceil(LANES))
                .map(|_| AtomicU64::new(u64::MAX))
                .collect(),
            pages,
            known: AtomicUsize::new(0),
            asked: (0..pages.div_ceil(SEGMENT))
                .map(|_| std::sync::atomic::AtomicU32::new(0))
                .collect(),
        }
    }

    /// Asks the kernel again about the segments of pages `first..=last` whose answers are
    /// older than [`STALE_AFTER_MS`] by `clock` (each by the one lookup that claims it).
    fn refresh_stale(&self, start: usize, first: usize, last: usize, clock: fn() -> u32) {
        let now = clock();
        for seg in first / SEGMENT..=last / SEGMENT {
            let cell = &self.asked[seg];
            let then = cell.load(Ordering::Relaxed);
            // Signed: another thread may have dated the segment after this one read the clock.
            if then != 0
                && now.wrapping_sub(then) as i32 >= STALE_AFTER_MS as i32
                && cell
                    .compare_exchange(then, now, Ordering::Relaxed, Ordering::Relaxed)
                    .is_ok()
            {
                self.refresh(start, seg..=seg, now);
            }
        }
    }

    /// Asks the kernel where every page of `segments` is, records each answer (a page moved
    /// gets its new node) and dates the segments `now`. A lookup's [`ask_kernel`] may record
    /// a newer answer meanwhile, which this one's older answer can overwrite: corrected by the
    /// next refresh, within the bound.
    #[cold]
    fn refresh(&self, start: usize, segments: std::ops::RangeInclusive<usize>, now: u32) {
        let pages = segments.start() * SEGMENT..((segments.end() + 1) * SEGMENT).min(self.pages);
        let Some(nodes) = resident_node_indices(start, pages.clone()) else {
            return;
        };
        for (p, index) in pages.zip(nodes) {
            // A page no longer resident (swapped out) keeps the node it had, if any.
            if let Some(index) = index {
                self.set(p, index);
            }
        }
        for seg in segments {
            self.asked[seg].store(now, Ordering::Relaxed);
        }
    }

    /// Whether page `p`'s node is known.
    fn is_known(&self, p: usize) -> bool {
        lane_of(self.words[p / LANES].load(Ordering::Relaxed), p) != UNKNOWN
    }

    /// Records node index `node` for page `p`, whatever was cached (an index that does not
    /// fit a lane is not recorded), keeping `known` counted. Whether the entry changed.
    fn set(&self, p: usize, node: usize) -> bool {
        let Some(lane) = u64::try_from(node).ok().filter(|&n| n < UNKNOWN) else {
            return false;
        };
        let shift = 16 * (p % LANES);
        match self.words[p / LANES].fetch_update(Ordering::Relaxed, Ordering::Relaxed, |w| {
            (lane_of(w, p) != lane).then_some((w & !(UNKNOWN << shift)) | (lane << shift))
        }) {
            Ok(old) => {
                if lane_of(old, p) == UNKNOWN {
                    self.known.fetch_add(1, Ordering::Relaxed);
                }
                true
            }
            Err(_) => false,
        }
    }
}

/// Asks the kernel where the pages `range` (indices from `start`) not known yet are, and records
/// the answers of the resident ones. A segment whose first pages become known is dated now
/// (every known page's answer is then at least as new as its segment's date, which is what
/// [`PageCache::refresh_stale`] relies on).
#[cold]
fn ask_kernel(start: usize, range: std::ops::RangeInclusive<usize>, pages: &PageCache) {
    let missing: Vec<usize> = range.filter(|&p| !pages.is_known(p)).collect();
    let now = coarse_ms();
    let Some(nodes) = resident_node_indices(start, missing.iter().copied()) else {
        return;
    };
    for (&p, index) in missing.iter().zip(nodes) {
        if let Some(index) = index
            && pages.set(p, index)
        {
            let _ = pages.asked[p / SEGMENT].compare_exchange(
                0,
                now,
                Ordering::Relaxed,
                Ordering::Relaxed,
            );
        }
    }
}

/// The topology index of the node of each page `pages` (indices from `start`), `None` for one
/// not resident; `None` for all when the kernel cannot be asked: on a synthetic topology (whose
/// nodes the kernel does not know: first-touch pages stay unknown, without asking the kernel on
/// every lookup), or when `move_pages` fails.
fn resident_node_indices(
    start: usize,
    pages: impl Iterator<Item = usize>,
) -> Option<Vec<Option<usize>>> {
    let topo = Topology::current().ok().filter(|t| !t.is_synthetic())?;
    let ps = page_size();
    let addrs: Vec<usize> = pages.map(|p| start + p * ps).collect();
    let nodes = kernel_page_nodes(&addrs).ok()?;
    Some(
        nodes
            .into_iter()
            .map(|os| os.and_then(|os| topo.nodes().iter().position(|n| n.os_index == os)))
            .collect(),
    )
}

/// The OS node of each page (`None` when the page is not resident), from `move_pages(2)` with no
/// target nodes, which only reports.
pub(crate) fn kernel_page_nodes(page_addrs: &[usize]) -> Result<Vec<Option<usize>>, AllocError> {
    #[cfg(miri)]
    return Ok(vec![None; page_addrs.len()]); // Miri stub: no move_pages; nothing resident.
    let mut out = Vec::new();
    out.try_reserve_exact(page_addrs.len()).map_err(|_| {
        AllocError::Query(format!(
            "{} pages are too many to report one by one",
            page_addrs.len()
        ))
    })?;
    for chunk in page_addrs.chunks(4096) {
        let pages: Vec<*mut libc::c_void> = chunk.iter().map(|&a| a as *mut libc::c_void).collect();
        let mut status = vec![0i32; chunk.len()];
        // SAFETY: `pages` and `status` are valid arrays of `chunk.len()` entries; with a null
        // `nodes` argument move_pages moves nothing and only writes each page's node (or a
        // negative errno) into `status`. Addresses are only looked up, never dereferenced.
        let rc = unsafe {
            libc::syscall(
                libc::SYS_move_pages,
                0 as libc::c_long,
                chunk.len() as libc::c_ulong,
                pages.as_ptr(),
                std::ptr::null::<libc::c_int>(),
                status.as_mut_ptr(),
                0 as libc::c_int,
            )
        };
        if rc < 0 {
            return Err(AllocError::Query(
                std::io::Error::last_os_error().to_string(),
            ));
        }
        out.extend(status.iter().map(|&s| usize::try_from(s).ok()));
    }
    Ok(out)
}

/// Records per chunk of the snapshot, at most; a chunk that outgrows it is split in two.
const CHUNK_MAX: usize = 128;

/// A chunk with fewer records than this after a removal is merged into a neighbour, so that
/// the list of chunks stays short (`O(allocations / CHUNK_MAX)`) whatever order frees come in.
const CHUNK_MIN: usize = CHUNK_MAX / 4;

/// Consecutive records sorted by start, and their starts apart (a binary search reads only
/// the plain array); never empty.
#[derive(Clone, Default)]
struct Chunk {
    starts: Vec<usize>,
    records: Vec<Arc<Record>>,
}

impl Chunk {
    fn len(&self) -> usize {
        self.records.len()
    }

    fn insert(&mut self, at: usize, record: Arc<Record>) {
        self.starts.insert(at, record.start);
        self.records.insert(at, record);
    }

    fn remove(&mut self, at: usize) -> Arc<Record> {
        self.starts.remove(at);
        self.records.remove(at)
    }

    /// Moves the records from `at` on into a new chunk.
    fn split_off(&mut self, at: usize) -> Chunk {
        Chunk {
            starts: self.starts.split_off(at),
            records: self.records.split_off(at),
        }
    }

    fn append(&mut self, other: &Chunk) {
        self.starts.extend_from_slice(&other.starts);
        self.records.extend_from_slice(&other.records);
    }
}

/// The sorted, immutable snapshot readers see: chunks in address order, each shared with the
/// snapshots before it until a change touches it, and each chunk's first start apart.
#[derive(Default)]
struct Snapshot {
    firsts: Vec<usize>,
    chunks: Vec<Arc<Chunk>>,
    len: usize,
}

impl Snapshot {
    fn from_chunks(chunks: Vec<Arc<Chunk>>, len: usize) -> Snapshot {
        let firsts = chunks.iter().map(|c| c.starts[0]).collect();
        Snapshot {
            firsts,
            chunks,
            len,
        }
    }

    /// The index of the chunk that holds, or would hold, a record starting at `addr`: the last
    /// chunk whose first record starts at or below `addr` (the first chunk if none does).
    fn chunk_for(&self, addr: usize) -> usize {
        self.firsts
            .partition_point(|&s| s <= addr)
            .saturating_sub(1)
    }

    /// The position (chunk, record) of the last record starting at or below `addr`, or of the
    /// first record if none does; `None` when the snapshot is empty.
    fn position(&self, addr: usize) -> Option<(usize, usize)> {
        let ci = self.chunk_for(addr);
        let chunk = self.chunks.get(ci)?;
        let ri = chunk.starts.partition_point(|&s| s <= addr);
        Some((ci, ri.saturating_sub(1)))
    }

    /// The record containing `addr`.
    fn find(&self, addr: usize) -> Option<&Arc<Record>> {
        let (ci, ri) = self.position(addr)?;
        let r = &self.chunks[ci].records[ri];
        (r.start <= addr && addr < r.start + r.len).then_some(r)
    }

    /// This snapshot with `record` added.
    fn with(&self, record: Record) -> Snapshot {
        let record = Arc::new(record);
        let mut chunks = self.chunks.clone();
        if chunks.is_empty() {
            let mut chunk = Chunk::default();
            chunk.insert(0, record);
            chunks.push(Arc::new(chunk));
        } else {
            let ci = self.chunk_for(record.start);
            let mut chunk = chunks[ci].as_ref().clone();
            let at = chunk.starts.partition_point(|&s| s < record.start);
            chunk.insert(at, record);
            if chunk.len() > CHUNK_MAX {
                let upper = chunk.split_off(chunk.len() / 2);
                chunks.insert(ci + 1, Arc::new(upper));
            }
            chunks[ci] = Arc::new(chunk);
        }
        Snapshot::from_chunks(chunks, self.len + 1)
    }

    /// This snapshot without the record starting exactly at `start`, and that record.
    fn without(&self, start: usize) -> Option<(Snapshot, Arc<Record>)> {
        let ci = self.chunk_for(start);
        let mut chunk = self.chunks.get(ci)?.as_ref().clone();
        let at = chunk.starts.binary_search(&start).ok()?;
        let record = chunk.remove(at);
        let mut chunks = self.chunks.clone();
        if chunk.len() >= CHUNK_MIN || chunks.len() == 1 {
            if chunk.len() == 0 {
                chunks.clear();
            } else {
                chunks[ci] = Arc::new(chunk);
            }
        } else {
            // Merge with a neighbour (the next one, or the previous for the last chunk), and
            // split again if the two together outgrow a chunk.
            let (lo, hi) = if ci + 1 < chunks.len() {
                (ci, ci + 1)
            } else {
                (ci - 1, ci)
            };
            let mut merged = if lo == ci {
                chunk.append(&chunks[hi]);
                chunk
            } else {
                let mut merged = chunks[lo].as_ref().clone();
                merged.append(&chunk);
                merged
            };
            chunks.remove(hi);
            if merged.len() > CHUNK_MAX {
                let upper = merged.split_off(merged.len() / 2);
                chunks.insert(hi, Arc::new(upper));
            }
            chunks[lo] = Arc::new(merged);
        }
        Some((Snapshot::from_chunks(chunks, self.len - 1), record))
    }
}

pub(crate) struct Registry {
    snapshot: ArcSwap<Snapshot>,
    writer: Mutex<()>,
}

static REGISTRY: std::sync::LazyLock<Registry> = std::sync::LazyLock::new(Registry::new);

pub(crate) fn registry() -> &'static Registry {
    &REGISTRY
}

impl Registry {
    fn new() -> Self {
        Registry {
            snapshot: ArcSwap::from_pointee(Snapshot::default()),
            writer: Mutex::new(()),
        }
    }

    pub(crate) fn insert(&self, record: Record) {
        let _w = self.writer.lock().unwrap_or_else(|p| p.into_inner());
        let next = self.snapshot.load().with(record);
        self.snapshot.store(Arc::new(next));
    }

    /// Removes the record starting exactly at `start`.
    pub(crate) fn remove(&self, start: usize) -> Option<Arc<Record>> {
        let _w = self.writer.lock().unwrap_or_else(|p| p.into_inner());
        let (next, record) = self.snapshot.load().without(start)?;
        self.snapshot.store(Arc::new(next));
        Some(record)
    }

    /// The record containing address `addr`.
    pub(crate) fn find(&self, addr: usize) -> Option<Arc<Record>> {
        self.snapshot.load().find(addr).cloned()
    }

    fn accumulate(&self, lo: usize, hi: usize, out: &mut NodeBytes) {
        let snap = self.snapshot.load();
        let mut cursor = lo;
        if let Some((mut ci, mut ri)) = snap.position(lo) {
            // Walk the records from the one at or below `lo` until `hi`; a dependence's range
            // nearly always lies in one record, so this loop runs once or twice.
            while cursor < hi {
                let Some(r) = snap.chunks.get(ci).and_then(|c| c.records.get(ri)) else {
                    break;
                };
                if r.start >= hi {
                    break;
                }
                let r_end = r.start + r.len;
                if r_end > cursor {
                    let (a, b) = (cursor.max(r.start), hi.min(r_end));
                    out.unknown = out.unknown.saturating_add((a - cursor) as u64);
                    r.accumulate(a, b, out);
                    cursor = b;
                }
                ri += 1;
                if ri == snap.chunks[ci].len() {
                    (ci, ri) = (ci + 1, 0);
                }
            }
        }
        out.unknown = out.unknown.saturating_add((hi - cursor) as u64);
    }

    /// Number of live allocations, which the model tests compare with their own count.
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.snapshot.load().len
    }
}

/// Adds the bytes per node of `[ptr, ptr + len)` to `out`: the footprint of one dependence.
///
/// Fine and coarse memory is answered by arithmetic on the registry, without a system call;
/// first-touch memory asks the kernel for pages it has not reported yet. Bytes outside memory
/// from this allocator, untouched first-touch pages, and any part of the range past the end
/// of the address space, are counted as unknown: the counts always add up to `len` (sums
/// saturate at `u64::MAX`).
pub fn accumulate_node_bytes(ptr: *const u8, len: usize, out: &mut NodeBytes) {
    if len == 0 {
        return;
    }
    let lo = ptr as usize;
    let hi = lo.saturating_add(len);
    registry().accumulate(lo, hi, out);
    out.unknown = out.unknown.saturating_add((len - (hi - lo)) as u64);
}

/// Bytes per node of `[ptr, ptr + len)`; see [`accumulate_node_bytes`].
pub fn node_bytes(ptr: *const u8, len: usize) -> NodeBytes {
    let nodes = Topology::current().map_or(0, |t| t.num_nodes());
    let mut out = NodeBytes::new(nodes);
    accumulate_node_bytes(ptr, len, &mut out);
    out
}

/// Where the kernel really holds each page of `[ptr, ptr + len)`: the OS node number of every
/// page the range touches, `None` for pages not resident (never touched). A system call, for
/// verification; the scheduler uses [`node_bytes`].
pub fn resident_nodes(ptr: *const u8, len: usize) -> Result<Vec<Option<usize>>, AllocError> {
    if len == 0 {
        return Ok(Vec::new());
    }
    let ps = page_size();
    let lo = ptr as usize;
    // The last byte: a range may end exactly at the end of the address space.
    let last = lo.checked_add(len - 1).ok_or_else(|| {
        AllocError::Query(format!(
            "the range of {len} bytes at {lo:#x} runs past the end of the address space"
        ))
    })?;
    let count = last / ps - lo / ps + 1;
    // One entry per page: refuse a range whose answer could not be held (no memory mapping is
    // that long), rather than abort on the allocation.
    let mut pages: Vec<usize> = Vec::new();
    pages.try_reserve_exact(count).map_err(|_| {
        AllocError::Query(format!(
            "a range of {len} bytes spans {count} pages, too many to report one by one"
        ))
    })?;
    pages.extend((lo / ps..=last / ps).map(|p| p * ps));
    kernel_page_nodes(&pages)
}

/// The unit in which first touch places the memory at `ptr`: [`HUGE_PAGE`](crate::HUGE_PAGE)
/// for first-touch (standard) memory made of huge pages, the base page for other first-touch
/// memory; `None` for memory placed by its policy (fine, coarse, a node) or not from this
/// allocator. A parallel loop that first writes such memory places it best with chunks cut at
/// multiples of it (see [`Pages`](crate::Pages)).
pub fn first_touch_unit(ptr: *const u8) -> Option<usize> {
    let record = registry().find(ptr as usize)?;
    match record.placement {
        Placement::Standard(_) if record.huge => Some(crate::HUGE_PAGE),
        Placement::Standard(_) => Some(page_size()),
        _ => None,
    }
}

/// The distribution an allocation was made with, if `ptr` lies in memory from this allocator.
pub fn distribution_of(ptr: *const u8) -> Option<Distribution> {
    registry().find(ptr as usize).map(|r| r.distribution)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_page_cached_by_another_thread_during_a_lookup_is_counted_once() {
        // Another thread's lookup caches the first page (-1 -> node 0, the only transition)
        // while this one reads the range: every byte must still be counted exactly once,
        // whichever answer this lookup saw (it once read that entry twice and subtracted
        // the first page's head from an empty run).
        use std::sync::atomic::AtomicBool;
        let ps = page_size();
        let cache = Arc::new(PageCache::new(4));
        let stop = Arc::new(AtomicBool::new(false));
        let round = Arc::new(AtomicUsize::new(0));
        let other = {
            let (cache, stop, round) = (Arc::clone(&cache), Arc::clone(&stop), Arc::clone(&round));
            std::thread::spawn(move || {
                let mut seen = 0;
                while !stop.load(Ordering::Relaxed) {
                    let r = round.load(Ordering::Acquire);
                    if r != seen {
                        seen = r;
                        (0..r % 64).for_each(|_| std::hint::spin_loop());
                        cache.set(0, 0);
                    }
                }
            })
        };
        // Not mapped: the kernel leaves the pages unknown, so only the other thread caches.
        let start = 1 << 40;
        let (lo, hi) = (start + ps / 2, start + 2 * ps);
        for r in 1..20_000 {
            cache.words[0].store(u64::MAX, Ordering::Relaxed);
            round.store(r, Ordering::Release);
            let mut out = NodeBytes::new(1);
            standard_bytes(start, lo, hi, &cache, &mut out);
            assert_eq!(out.known() + out.unknown(), (hi - lo) as u64, "round {r}");
        }
        stop.store(true, Ordering::Relaxed);
        other.join().unwrap();
    }

    #[test]
    fn segments_are_asked_again_once_their_answers_are_older_than_the_bound() {
        // Clocks the test sets: a segment dated 1000 is fresh until 1000 + the bound.
        fn at_1050() -> u32 {
            1050
        }
        fn at_bound() -> u32 {
            1000 + STALE_AFTER_MS
        }
        fn before() -> u32 {
            999
        }
        let cache = PageCache::new(3 * SEGMENT);
        // Not mapped: the kernel answers nothing, and the known pages keep their nodes.
        let start = 1 << 40;
        cache.set(0, 1);
        cache.set(SEGMENT, 2);
        cache.asked[0].store(1000, Ordering::Relaxed);
        cache.asked[1].store(1000, Ordering::Relaxed);
        cache.refresh_stale(start, 0, 2 * SEGMENT - 1, at_1050);
        assert_eq!(
            cache.asked[0].load(Ordering::Relaxed),
            1000,
            "fresh: not asked"
        );
        // A date after the reader's clock (another thread dated it since) is fresh too.
        cache.refresh_stale(start, 0, SEGMENT - 1, before);
        assert_eq!(cache.asked[0].load(Ordering::Relaxed), 1000);
        // Stale: asked again and dated, only the segments of the range; a segment never
        // asked (no page known) stays undated.
        cache.refresh_stale(start, 0, 3 * SEGMENT - 1, at_bound);
        let dates: Vec<u32> = cache
            .asked
            .iter()
            .map(|a| a.load(Ordering::Relaxed))
            .collect();
        assert_eq!(dates, [1000 + STALE_AFTER_MS, 1000 + STALE_AFTER_MS, 0]);
        assert_eq!(
            cache.known.load(Ordering::Relaxed),
            2,
            "nothing forgotten or counted twice"
        );
    }

    #[test]
    fn unknown_lanes_are_found_in_the_range_only() {
        // Every word of lanes known (0, 1, 0xFFFE: the largest index that fits) or not, and
        // every range of its lanes.
        let values = [0u64, 1, 0xFFFE, UNKNOWN];
        for code in 0..values.len().pow(LANES as u32) {
            let lanes: Vec<u64> = (0..LANES)
                .map(|l| values[code / values.len().pow(l as u32) % values.len()])
                .collect();
            let word = lanes
                .iter()
                .enumerate()
                .fold(0, |w, (l, &v)| w | v << (16 * l));
            for first in 0..LANES {
                for last in first..LANES {
                    assert_eq!(
                        any_unknown(word, first, last),
                        lanes[first..=last].contains(&UNKNOWN),
                        "word {word:#x}, lanes {first}..={last}"
                    );
                }
            }
        }
    }

    #[test]
    fn first_touch_lookup_matches_a_page_by_page_count() {
        // Runs of known pages on several nodes, unknown pages among them, and ranges starting
        // and ending anywhere in a page and in a word of four pages: the packed lookup must
        // give each node exactly the bytes a page-by-page count gives.
        let ps = page_size();
        let n_pages = 37;
        let node_of = |p: usize| match p {
            0..=6 => Some(1),
            7 | 8 => None,
            9..=20 => Some(0),
            21 => Some(2),
            22..=27 => Some(300),
            28..=31 => None,
            _ => Some(0),
        };
        let cache = PageCache::new(n_pages);
        for p in 0..n_pages {
            if let Some(node) = node_of(p) {
                assert!(cache.set(p, node));
                assert!(!cache.set(p, node), "page {p} changed by the same answer");
            }
        }
        assert!(
            !cache.set(0, UNKNOWN as usize),
            "a node that does not fit a lane"
        );
        // Not mapped: the kernel knows none of the unknown pages.
        let start = 1 << 40;
        let offsets = [0, 1, ps / 2, ps - 1];
        for first in 0..n_pages {
            for last in first..n_pages {
                for &a in &offsets {
                    for &b in &offsets {
                        let (lo, hi) = (start + first * ps + a, start + last * ps + b + 1);
                        if lo >= hi {
                            continue;
                        }
                        let mut expect = NodeBytes::new(3);
                        for page in first..=last {
                            let from = lo.max(start + page * ps);
                            let to = hi.min(start + (page + 1) * ps);
                            match node_of(page) {
                                Some(node) => expect.add_on(node, (to - from) as u64),
                                None => expect.unknown += (to - from) as u64,
                            }
                        }
                        let mut out = NodeBytes::new(3);
                        standard_bytes(start, lo, hi, &cache, &mut out);
                        assert_eq!(out, expect, "pages {first}..={last}, offsets {a}, {b}");
                    }
                }
            }
        }
    }

    fn fine_by_pages(lo: usize, hi: usize, n: usize) -> Vec<u64> {
        let ps = page_size();
        let mut v = vec![0u64; n];
        for a in lo..hi {
            v[(a / ps) % n] += 1;
        }
        v
    }

    #[test]
    fn fine_arithmetic_matches_byte_by_byte_count() {
        let ps = page_size();
        let cases = [
            (0, 1, 3),
            (5, ps - 1, 4),
            (ps - 7, ps + 9, 4),
            (3 * ps + 11, 17 * ps + 5, 8),
            (ps, 9 * ps, 8),
            (123, 64 * ps + 77, 3),
            (ps * 1000 + 1, ps * 1064, 7),
        ];
        for (lo, hi, n) in cases {
            for phase in 0..n {
                let mut out = NodeBytes::new(n);
                fine_bytes(lo, hi, n, phase, page_shift(), &mut out);
                // With a phase, page p is where page p + phase is without one.
                let shifted = fine_by_pages(lo + phase * ps, hi + phase * ps, n);
                assert_eq!(
                    out.per_node(),
                    shifted,
                    "range {lo}..{hi} on {n} nodes, phase {phase}"
                );
            }
        }
    }

    #[test]
    fn fine_arithmetic_in_huge_units_matches_a_count_unit_by_unit() {
        let unit = crate::HUGE_PAGE;
        let shift = unit.trailing_zeros();
        let cases = [
            (0, 1, 2),
            (unit - 3, unit + 3, 4),
            (5 * unit + 77, 23 * unit + 1, 8),
            (unit * 1000, unit * 1003, 3),
            (17, 9 * unit - 1, 7),
        ];
        for (lo, hi, n) in cases {
            for phase in 0..n {
                let mut out = NodeBytes::new(n);
                fine_bytes(lo, hi, n, phase, shift, &mut out);
                let mut want = vec![0u64; n];
                for u in lo / unit..=(hi - 1) / unit {
                    let (a, b) = ((u * unit).max(lo), ((u + 1) * unit).min(hi));
                    want[(u + phase) % n] += (b - a) as u64;
                }
                assert_eq!(
                    out.per_node(),
                    want,
                    "range {lo}..{hi} on {n} nodes, phase {phase}"
                );
            }
        }
    }

    #[test]
    fn dominant_node_prefers_most_bytes_then_lowest_index() {
        assert_eq!(
            NodeBytes::from_bytes(vec![1, 5, 5, 2]).dominant_node(),
            Some(1)
        );
        assert_eq!(NodeBytes::new(3).dominant_node(), None);
    }

    /// A record of `len` bytes at `start`, wholly on node `start % 3`.
    fn record(start: usize, len: usize) -> Record {
        Record {
            start,
            len,
            requested: AtomicUsize::new(len),
            dirty: AtomicUsize::new(len),
            live: std::sync::atomic::AtomicBool::new(true),
            cache_key: None,
            distribution: Distribution::Coarse,
            placement: Placement::Node { node: start % 3 },
            huge: false,
        }
    }

    /// Checks the registry against `model` (start -> len): the chunks' shape, `len`, `find` at
    /// each record's ends and in the gaps, and `accumulate` over ranges spanning several
    /// records and chunks.
    fn check_against(reg: &Registry, model: &std::collections::BTreeMap<usize, usize>) {
        let snap = reg.snapshot.load();
        assert_eq!(reg.len(), model.len());
        let starts: Vec<usize> = snap
            .chunks
            .iter()
            .flat_map(|c| c.records.iter().map(|r| r.start))
            .collect();
        assert_eq!(starts, model.keys().copied().collect::<Vec<_>>());
        for (c, &first) in snap.chunks.iter().zip(&snap.firsts) {
            assert!(c.len() > 0 && c.len() <= CHUNK_MAX, "chunk of {}", c.len());
            let own: Vec<usize> = c.records.iter().map(|r| r.start).collect();
            assert_eq!(c.starts, own, "a chunk's starts are its records'");
            assert_eq!(first, c.starts[0]);
        }
        assert_eq!(snap.firsts.len(), snap.chunks.len());
        // Chunks only fall below CHUNK_MIN when there is no neighbour to merge with, or right
        // after a split; their number stays within a constant factor of records / CHUNK_MAX.
        assert!(snap.chunks.len() <= 2 * model.len() / CHUNK_MIN + 2);
        for (&start, &len) in model {
            assert_eq!(reg.find(start).map(|r| r.start), Some(start));
            assert_eq!(reg.find(start + len - 1).map(|r| r.start), Some(start));
            if !model.contains_key(&(start + len)) {
                assert!(reg.find(start + len).is_none(), "gap after {start}");
            }
        }
        let span = |lo: usize, hi: usize| {
            if lo >= hi {
                return;
            }
            let mut expect = NodeBytes::new(3);
            let mut known = 0;
            for (&start, &len) in model.range(..hi) {
                let (a, b) = (lo.max(start), hi.min(start + len));
                if a < b {
                    expect.add_on(start % 3, (b - a) as u64);
                    known += (b - a) as u64;
                }
            }
            expect.unknown = (hi - lo) as u64 - known;
            let mut got = NodeBytes::new(3);
            reg.accumulate(lo, hi, &mut got);
            assert_eq!(got, expect, "range {lo}..{hi}");
        };
        let keys: Vec<usize> = model.keys().copied().collect();
        for w in keys.windows(2).step_by(7) {
            span(w[0] + 1, w[1] + 5);
        }
        if let (Some(&first), Some((&last, &len))) = (keys.first(), model.iter().next_back()) {
            span(first.saturating_sub(10), last + len + 10);
            span(first + 3, (first + last) / 2 + 1);
        }
    }

    #[test]
    fn chunked_snapshot_agrees_with_a_sorted_map_through_inserts_and_removes() {
        use std::collections::btree_map::Entry;
        let reg = Registry::new();
        let mut model = std::collections::BTreeMap::new();
        // A xorshift generator: the sequence of slots is fixed, so a failure reproduces.
        let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
        let mut next = move || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        // Slots of 100 addresses; a record fills 1 to 100 of its slot's addresses, so records
        // are sometimes adjacent and sometimes separated by a gap.
        for step in 0..6000 {
            let slot = (next() % 2000) as usize;
            let start = 1000 + slot * 100;
            let grow = step < 3000 || next() % 3 == 0;
            match model.entry(start) {
                Entry::Occupied(e) if !grow => {
                    let removed = reg.remove(start).expect("a live record is removed");
                    assert_eq!(removed.start, start);
                    e.remove();
                }
                Entry::Occupied(_) => {}
                Entry::Vacant(e) if grow => {
                    let len = 1 + (next() % 100) as usize;
                    reg.insert(record(start, len));
                    e.insert(len);
                }
                Entry::Vacant(_) => assert!(reg.remove(start).is_none(), "no record at {start}"),
            }
            if step % 500 == 0 {
                check_against(&reg, &model);
            }
        }
        check_against(&reg, &model);
        // Free everything in address order (the pattern that leaves one small chunk after
        // another), checking as the registry empties.
        let starts: Vec<usize> = model.keys().copied().collect();
        for (k, start) in starts.into_iter().enumerate() {
            assert!(reg.remove(start).is_some());
            model.remove(&start);
            if k % 97 == 0 {
                check_against(&reg, &model);
            }
        }
        check_against(&reg, &model);
        assert!(reg.snapshot.load().chunks.is_empty());
    }

    #[test]
    fn a_range_too_long_to_report_page_by_page_is_an_error() {
        let err = resident_nodes(std::ptr::without_provenance(4096), usize::MAX / 2).unwrap_err();
        assert!(err.to_string().contains("too many to report"), "{err}");
        let wraps = resident_nodes(std::ptr::without_provenance(usize::MAX - 10), 100);
        assert!(wraps.is_err());
    }

    #[test]
    fn a_range_ending_at_the_end_of_the_address_space_is_reported_and_one_past_it_named() {
        // The last 11 bytes of the address space: they end at 2^64, they do not wrap (it was
        // refused as "range wraps around").
        let last = resident_nodes(std::ptr::without_provenance(usize::MAX - 10), 11);
        assert_eq!(
            last,
            Ok(vec![None]),
            "not resident: nothing is mapped there"
        );
        // One byte more does wrap: the error says which range.
        let err = resident_nodes(std::ptr::without_provenance(usize::MAX - 10), 12).unwrap_err();
        assert_eq!(
            err.to_string(),
            format!(
                "querying page locations failed: the range of 12 bytes at {:#x} runs past the \
                 end of the address space",
                usize::MAX - 10
            )
        );
    }

    #[test]
    fn counts_add_up_to_the_length_past_the_address_space_and_saturate() {
        let d = node_bytes(std::ptr::without_provenance(usize::MAX - 10), 100);
        assert_eq!(d.known() + d.unknown(), 100);
        let mut out = NodeBytes::new(1);
        for _ in 0..3 {
            accumulate_node_bytes(std::ptr::without_provenance(1), usize::MAX - 1, &mut out);
        }
        assert_eq!(out.unknown(), u64::MAX, "saturates instead of wrapping");
    }

    #[test]
    fn memory_not_from_the_allocator_is_unknown() {
        let v = vec![0u8; 10_000];
        let d = node_bytes(v.as_ptr(), v.len());
        assert_eq!(d.unknown(), 10_000);
        assert_eq!(d.known(), 0);
    }
}
