//! The interval map: for each maximal byte range with one history, who accessed it last.
//!
//! Keys are start addresses; each [`Segment`] covers `[start, end)`, segments are
//! disjoint, and bytes outside every segment have no recorded access. A segment holds what a new
//! access must wait for, like one entry of libomp's dependence hash, but for byte ranges:
//!
//! - `group`: the last *writing group* — a single `out`/`inout` task, or the members of the
//!   current run of one set kind (`mutexinoutset` or `inoutset`) together with the
//!   predecessors every member of the run waits for;
//! - `readers`: the `in` tasks registered since that group.
//!
//! A new access on a segment ([`Segment::apply`]):
//!
//! | kind | waits for | then |
//! |---|---|---|
//! | `in` | the group's members | joins `readers` |
//! | `out`, `inout` | `readers` if any, else the group's members | becomes the group; `readers` cleared |
//! | set kind, same run (group is that kind, no readers since) | the run's predecessors | joins the run |
//! | set kind, new run | `readers` if any, else the group's members | starts a run; `readers` cleared |
//!
//! A writer waits only for the readers since the previous group, not for the group itself:
//! each reader waits for the group (or found it finished), so the order is transitive. This is
//! what keeps registration at one to three edges per access in the common case.
//!
//! An access covering part of a segment first splits it (both halves copy the history); bytes
//! of the access outside every segment get fresh segments. The map is never scanned per task:
//! [`RangeMap::register`] visits only the segments the access overlaps. Memory is bounded by
//! [`RangeMap::maybe_prune`]: each time the map has doubled since the last pruning (and holds
//! at least `MIN_PRUNE` segments), it scans the map once (amortized O(1) per registered range)
//! and, for each segment whose tasks have all finished without poison (*inert*), drops its
//! history, which frees the finished task nodes it kept alive; the segment itself is removed
//! only if no access used it since the previous pruning. Keeping the entries of recently used
//! ranges matters: a program that cycles over its blocks (a stencil sweep per iteration) would
//! otherwise find them forgotten, and pay an insertion instead of a lookup on every access.
//!
//! Programs mostly access the same blocks again and again, so the segments live in a hash map
//! keyed by start address, and an access to exactly one existing segment costs one hash lookup
//! (the two or three pieces of such a task are looked up together, once for the prefetch of
//! their predecessors and their registration: [`RangeMap::register_all`]). A `BTreeMap` from
//! start to end, with the same keys, answers the ordered queries (what overlaps a range) that
//! only new and partially overlapping ranges need.

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::hash::{BuildHasherDefault, Hasher};
use std::mem;

use super::access::{AccessKind, Piece};
use super::mutex_set::MutexSet;
use super::node::{Node, NodeList, Registration};
use super::node_ref::TrackerRef;
use crate::sync::{Arc, prefetch_write};

/// The map is never pruned below this many segments (a few MiB): below it, forgetting ranges
/// would save little and could make a program that cycles over its blocks re-insert them.
pub(crate) const MIN_PRUNE: usize = 1 << 14;

/// One maximal range with a uniform history.
struct Segment<T> {
    end: usize,
    /// The pruning generation of the last access.
    used: u32,
    group: Group<T>,
    readers: NodeList<T>,
}

/// The last writing group of a segment.
enum Group<T> {
    /// Nothing written since the tracker started (or since a pruning forgot the segment).
    None,
    /// An `out` or `inout` task.
    Writer(TrackerRef<T>),
    /// A run of consecutive accesses of one set kind.
    Set(Box<SetRun<T>>),
}

struct SetRun<T> {
    /// [`AccessKind::MutexInOutSet`] or [`AccessKind::InOutSet`].
    kind: AccessKind,
    members: NodeList<T>,
    /// What every member of the run waits for: the readers, or else the group, before it.
    preds: NodeList<T>,
    /// The members' mutual exclusion, for a `mutexinoutset` run.
    mutex: Option<Arc<MutexSet<T>>>,
}

impl<T> Clone for Group<T> {
    fn clone(&self) -> Self {
        match self {
            Group::None => Group::None,
            Group::Writer(w) => Group::Writer(w.clone()),
            Group::Set(run) => Group::Set(Box::new(SetRun {
                kind: run.kind,
                members: run.members.clone(),
                preds: run.preds.clone(),
                mutex: run.mutex.clone(),
            })),
        }
    }
}

impl<T> Group<T> {
    fn link_members(&self, reg: &mut Registration<'_, T>) {
        match self {
            Group::None => {}
            Group::Writer(w) => reg.link(w),
            Group::Set(run) => run.members.as_slice().iter().for_each(|m| reg.link(m)),
        }
    }

    fn members(&self) -> NodeList<T> {
        match self {
            Group::None => NodeList::Empty,
            Group::Writer(w) => NodeList::one(w.clone()),
            Group::Set(run) => run.members.clone(),
        }
    }

    fn is_inert(&self) -> bool {
        match self {
            Group::None => true,
            Group::Writer(w) => w.is_inert(),
            Group::Set(run) => run.members.all_inert() && run.preds.all_inert(),
        }
    }
}

impl<T> Segment<T> {
    fn empty(end: usize, used: u32) -> Self {
        Segment {
            end,
            used,
            group: Group::None,
            readers: NodeList::Empty,
        }
    }

    /// Starts bringing in the nodes that an access of `kind` to this segment will link to
    /// (see [`RangeMap::prefetch`]).
    fn prefetch_preds(&self, kind: AccessKind) {
        let readers = self.readers.as_slice();
        if kind != AccessKind::In && !readers.is_empty() {
            for r in readers.iter().take(4) {
                prefetch_write(std::ptr::from_ref::<Node<T>>(r));
            }
        } else if let Group::Writer(w) = &self.group {
            prefetch_write(std::ptr::from_ref::<Node<T>>(w));
        }
    }

    /// Records an access of `kind` to the whole segment by the task being registered, linking
    /// it to the tasks it must wait for (see the table in the module documentation).
    fn apply(&mut self, kind: AccessKind, reg: &mut Registration<'_, T>) {
        match kind {
            AccessKind::In => {
                self.group.link_members(reg);
                self.readers.push_pruning(reg.tracker_ref());
            }
            AccessKind::Out | AccessKind::InOut => {
                self.link_readers_or_group(reg);
                self.group = Group::Writer(reg.tracker_ref());
                self.readers.clear();
            }
            AccessKind::MutexInOutSet | AccessKind::InOutSet => {
                if let Group::Set(run) = &mut self.group
                    && run.kind == kind
                    && self.readers.is_empty()
                {
                    run.preds.as_slice().iter().for_each(|p| reg.link(p));
                    run.members.push_pruning(reg.tracker_ref());
                    if let Some(mutex) = &run.mutex {
                        reg.join_set(mutex);
                    }
                    return;
                }
                self.link_readers_or_group(reg);
                let preds = if self.readers.is_empty() {
                    self.group.members()
                } else {
                    mem::take(&mut self.readers)
                };
                let mutex = (kind == AccessKind::MutexInOutSet).then(|| reg.fresh_set());
                self.group = Group::Set(Box::new(SetRun {
                    kind,
                    members: NodeList::one(reg.tracker_ref()),
                    preds,
                    mutex,
                }));
            }
        }
    }

    fn link_readers_or_group(&self, reg: &mut Registration<'_, T>) {
        if self.readers.is_empty() {
            self.group.link_members(reg);
        } else {
            self.readers.as_slice().iter().for_each(|r| reg.link(r));
        }
    }

    /// Cuts the segment at `at` (strictly inside it): `self` keeps the front, the tail is
    /// returned. Both halves keep the whole history.
    fn split_off(&mut self, at: usize) -> Segment<T> {
        debug_assert!(at < self.end);
        let tail = Segment {
            end: self.end,
            used: self.used,
            group: self.group.clone(),
            readers: self.readers.clone(),
        };
        self.end = at;
        tail
    }

    /// Prefetches the nodes that dropping this segment's history may free (see
    /// [`TrackerRef::prefetch`]).
    fn prefetch_history(&self) {
        if let Group::Writer(w) = &self.group {
            w.prefetch();
        }
        self.readers
            .as_slice()
            .iter()
            .for_each(TrackerRef::prefetch);
    }

    /// Orders nothing any more: every task it names finished without poison.
    fn is_inert(&self) -> bool {
        self.group.is_inert() && self.readers.all_inert()
    }

    /// Drops the history of an inert segment: the next access finds nothing to wait for, as it
    /// would have (every task named here has finished), and the finished nodes can be freed.
    fn forget_history(&mut self) {
        self.group = Group::None;
        self.readers = NodeList::Empty;
    }
}

impl<T> Drop for RangeMap<T> {
    /// Frees the history of every segment, which is most of the nodes of the tracker's tasks
    /// (all 151,340 of SparseLU with 120 x 120 blocks: about 20 ms when dropped one by one,
    /// each node a cache miss or three). The nodes of a few segments ahead are prefetched, so
    /// that those misses overlap.
    fn drop(&mut self) {
        const AHEAD: usize = 4;
        let mut window = VecDeque::with_capacity(AHEAD + 1);
        for (_, seg) in self.segments.drain() {
            seg.prefetch_history();
            window.push_back(seg);
            if window.len() > AHEAD {
                drop(window.pop_front());
            }
        }
    }
}

/// Hashes an address with one multiplication (Fibonacci hashing), folded so that the low bits,
/// which pick the bucket, depend on every bit of the address: block addresses share their low
/// bits (alignment), and SipHash would cost more than the rest of the lookup.
#[derive(Default)]
struct AddrHasher(u64);

impl Hasher for AddrHasher {
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.write_u64(self.0.rotate_left(8) ^ u64::from(b));
        }
    }

    fn write_u64(&mut self, n: u64) {
        self.0 = n.wrapping_mul(0x9E37_79B9_7F4A_7C15);
    }

    fn write_usize(&mut self, n: usize) {
        self.write_u64(n as u64);
    }

    fn finish(&self) -> u64 {
        self.0 ^ (self.0 >> 32)
    }
}

/// The segments of one tracker, keyed by start address.
pub(crate) struct RangeMap<T> {
    segments: HashMap<usize, Segment<T>, BuildHasherDefault<AddrHasher>>,
    /// `start -> end` of every segment: the same keys as `segments`, in order.
    bounds: BTreeMap<usize, usize>,
    /// Prune when the map reaches this many segments.
    prune_at: usize,
    /// How many automatic prunings happened: segments remember when they were last used.
    generation: u32,
    /// Reusable buffer: uncovered parts of the range being registered.
    gaps: Vec<(usize, usize)>,
}

impl<T> RangeMap<T> {
    pub(crate) fn new() -> Self {
        RangeMap {
            segments: HashMap::default(),
            bounds: BTreeMap::new(),
            prune_at: MIN_PRUNE,
            generation: 0,
            gaps: Vec::new(),
        }
    }

    pub(crate) fn len(&self) -> usize {
        self.segments.len()
    }

    /// Starts bringing in the task nodes that registering `piece` will look at, if the piece is
    /// exactly one segment (see [`crate::sync::prefetch_write`]): they were last written by
    /// the cores that completed those tasks, and a task's pieces are prefetched together
    /// before any is registered, so that those transfers overlap.
    pub(crate) fn prefetch(&self, piece: Piece) {
        if let Some(seg) = self.segments.get(&piece.start)
            && seg.end == piece.end
        {
            seg.prefetch_preds(piece.kind);
        }
    }

    /// Registers the pieces of one task (disjoint, sorted by address, from `normalize`).
    /// When there are several, their predecessors are prefetched together first (see
    /// [`prefetch`](Self::prefetch)); when each of two or three pieces is exactly one segment
    /// (blocks accessed again: the common case), each is looked up once for both.
    pub(crate) fn register_all(&mut self, pieces: &[Piece], reg: &mut Registration<'_, T>) {
        let done = match *pieces {
            [] => true,
            [piece] => {
                self.register(piece, reg);
                true
            }
            [a, b] => self.register_exact([a, b], reg),
            [a, b, c] => self.register_exact([a, b, c], reg),
            _ => false,
        };
        if !done {
            for &piece in pieces {
                self.prefetch(piece);
            }
            for &piece in pieces {
                self.register(piece, reg);
            }
        }
    }

    /// [`register_all`](Self::register_all)'s fast path: if every piece is exactly one
    /// segment, prefetches their predecessors, registers them and returns true; otherwise
    /// changes nothing and returns false.
    fn register_exact<const N: usize>(
        &mut self,
        pieces: [Piece; N],
        reg: &mut Registration<'_, T>,
    ) -> bool {
        let generation = self.generation;
        let starts = pieces.map(|p| p.start);
        // Distinct keys: the pieces are disjoint and not empty.
        let keys: [&usize; N] = std::array::from_fn(|i| &starts[i]);
        let segs: [Option<&mut Segment<T>>; N] = self.segments.get_disjoint_mut(keys);
        if !segs
            .iter()
            .zip(&pieces)
            .all(|(seg, p)| seg.as_ref().is_some_and(|seg| seg.end == p.end))
        {
            return false;
        }
        // Every entry is `Some` (checked above), so `flatten` keeps them aligned with `pieces`.
        for (seg, p) in segs.iter().flatten().zip(&pieces) {
            seg.prefetch_preds(p.kind);
        }
        for (seg, p) in segs.into_iter().flatten().zip(pieces) {
            seg.used = generation;
            seg.apply(p.kind, reg);
        }
        true
    }

    /// Registers an access of `piece.kind` to `[piece.start, piece.end)` by the task of `reg`.
    pub(crate) fn register(&mut self, piece: Piece, reg: &mut Registration<'_, T>) {
        let Piece { start, end, kind } = piece;
        // Fast path: the range is exactly one segment (a block accessed again).
        if let Some(seg) = self.segments.get_mut(&start)
            && seg.end == end
        {
            seg.used = self.generation;
            seg.apply(kind, reg);
            return;
        }
        // Second fast path: the range overlaps no segment (a block accessed for the first time).
        let untouched = match self.bounds.range(..end).next_back() {
            Some((_, &seg_end)) => seg_end <= start,
            None => true,
        };
        if untouched {
            self.insert_fresh(start, end, kind, reg);
            return;
        }
        self.split_at(start);
        self.split_at(end);
        let mut gaps = mem::take(&mut self.gaps);
        gaps.clear();
        let mut cursor = start;
        for (&s, &e) in self.bounds.range(start..end) {
            if s > cursor {
                gaps.push((cursor, s));
            }
            let seg = self
                .segments
                .get_mut(&s)
                .expect("every bound has its segment");
            seg.used = self.generation;
            seg.apply(kind, reg);
            cursor = e;
        }
        if cursor < end {
            gaps.push((cursor, end));
        }
        for &(from, to) in &gaps {
            self.insert_fresh(from, to, kind, reg);
        }
        self.gaps = gaps;
    }

    fn insert_fresh(
        &mut self,
        start: usize,
        end: usize,
        kind: AccessKind,
        reg: &mut Registration<'_, T>,
    ) {
        let mut seg = Segment::empty(end, self.generation);
        seg.apply(kind, reg);
        self.segments.insert(start, seg);
        self.bounds.insert(start, end);
    }

    /// Makes `at` a segment boundary if a segment straddles it.
    fn split_at(&mut self, at: usize) {
        if let Some((&s, end)) = self.bounds.range_mut(..at).next_back()
            && *end > at
        {
            let tail_end = mem::replace(end, at);
            let seg = self
                .segments
                .get_mut(&s)
                .expect("every bound has its segment");
            let tail = seg.split_off(at);
            debug_assert_eq!(tail.end, tail_end);
            self.segments.insert(at, tail);
            self.bounds.insert(at, tail_end);
        }
    }

    /// If the map has doubled since the last pruning, drops the history of inert segments, and
    /// the inert segments themselves if they were not used since the pruning before.
    pub(crate) fn maybe_prune(&mut self) {
        if self.segments.len() >= self.prune_at {
            let recent = self.generation;
            self.retain(|seg| {
                if !seg.is_inert() {
                    true
                } else if seg.used == recent {
                    seg.forget_history();
                    true
                } else {
                    false
                }
            });
            self.generation = self.generation.wrapping_add(1);
        }
    }

    /// Forgets every segment whose tasks all finished without poison: an access to those bytes
    /// would find nothing to wait for, exactly as on bytes never accessed.
    pub(crate) fn prune(&mut self) {
        self.retain(|seg| !seg.is_inert());
    }

    fn retain(&mut self, mut keep: impl FnMut(&mut Segment<T>) -> bool) {
        self.segments.retain(|_, seg| keep(seg));
        let segments = &self.segments;
        self.bounds.retain(|s, _| segments.contains_key(s));
        self.prune_at = MIN_PRUNE.max(2 * self.segments.len());
    }
}
