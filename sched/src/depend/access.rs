//! What a task declares: byte ranges and how it accesses them (OpenMP's `depend` clauses).
//!
//! An [`Access`] is one dependence: a byte range `[addr, addr + len)`, its [`AccessKind`], and
//! whether it is the task's most access-intensive dependence (the paper's index `a` in
//! Algorithm 3). The list of a task's accesses is also its data footprint, which the
//! locality-aware scheduler turns into bytes per NUMA node (its byte ranges: [`union_ranges`]).
//!
//! For the tracker, a task's accesses are first *normalized* ([`normalize`]): sorted, zero-length
//! ranges dropped, and overlapping declarations merged byte by byte, so that each byte the task
//! touches has exactly one kind. Equal kinds stay as they are; two different kinds on one byte
//! become [`AccessKind::InOut`], the kind that orders the task after every earlier access and
//! every later access after it (the strongest, so a merge never loses an ordering).

/// How a task accesses a byte range (the `depend` clause's dependence type).
///
/// Among sibling tasks, for two accesses that share at least one byte, the later task waits for
/// the earlier one unless both are [`In`](AccessKind::In), or both belong to the same set of
/// consecutive [`MutexInOutSet`](AccessKind::MutexInOutSet) or of consecutive
/// [`InOutSet`](AccessKind::InOutSet) accesses.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum AccessKind {
    /// `depend(in: ...)`: reads. Waits for earlier writers of any kind; readers run concurrently.
    In,
    /// `depend(out: ...)`: writes. Waits for every earlier access. Ordered exactly like
    /// [`InOut`](AccessKind::InOut); the two differ only for the footprint (bytes written, not
    /// read).
    Out,
    /// `depend(inout: ...)`: reads and writes. Waits for every earlier access.
    InOut,
    /// `depend(mutexinoutset: ...)` (OpenMP 5.0): consecutive members of a set are not ordered
    /// among themselves but never run at the same time; the set as a whole is ordered like
    /// [`InOut`](AccessKind::InOut) with respect to every other kind.
    MutexInOutSet,
    /// `depend(inoutset: ...)` (OpenMP 5.1): consecutive members of a set run concurrently; the
    /// set as a whole is ordered like [`InOut`](AccessKind::InOut) with respect to every other
    /// kind.
    InOutSet,
}

impl AccessKind {
    /// Whether the task may write the range (every kind but [`In`](AccessKind::In)).
    pub fn writes(self) -> bool {
        self != AccessKind::In
    }

    /// Whether the safe API gives a task of this kind `&mut` to the data: [`Out`],
    /// [`InOut`] and [`MutexInOutSet`] (whose tasks never run beside another task touching
    /// the bytes), not [`In`] or [`InOutSet`] (shared references).
    ///
    /// [`Out`]: AccessKind::Out
    /// [`InOut`]: AccessKind::InOut
    /// [`MutexInOutSet`]: AccessKind::MutexInOutSet
    /// [`In`]: AccessKind::In
    /// [`InOutSet`]: AccessKind::InOutSet
    pub fn gives_mut(self) -> bool {
        matches!(
            self,
            AccessKind::Out | AccessKind::InOut | AccessKind::MutexInOutSet
        )
    }

    /// Whether the task may read the range (every kind but [`Out`](AccessKind::Out)).
    pub fn reads(self) -> bool {
        self != AccessKind::Out
    }

    /// The kind of a byte that one task declares with both `self` and `other`: the same kind if
    /// they are equal, [`InOut`](AccessKind::InOut) otherwise.
    pub fn merge(self, other: AccessKind) -> AccessKind {
        if self == other {
            self
        } else {
            AccessKind::InOut
        }
    }

    /// How a [`TaskBuilder`](crate::TaskBuilder) declares the kind, with OpenMP's
    /// name: `reads (depend(in))`, `updates (depend(inout))`, ...
    pub fn describe(self) -> &'static str {
        match self {
            AccessKind::In => "reads (depend(in))",
            AccessKind::Out => "writes (depend(out))",
            AccessKind::InOut => "updates (depend(inout))",
            AccessKind::MutexInOutSet => "mutex_updates (depend(mutexinoutset))",
            AccessKind::InOutSet => "concurrent_updates (depend(inoutset))",
        }
    }

    fn index(self) -> usize {
        match self {
            AccessKind::In => 0,
            AccessKind::Out => 1,
            AccessKind::InOut => 2,
            AccessKind::MutexInOutSet => 3,
            AccessKind::InOutSet => 4,
        }
    }

    const ALL: [AccessKind; 5] = [
        AccessKind::In,
        AccessKind::Out,
        AccessKind::InOut,
        AccessKind::MutexInOutSet,
        AccessKind::InOutSet,
    ];
}

/// One dependence of a task: the byte range `[addr, addr + len)` and how the task accesses it.
///
/// Addresses are plain numbers: the tracker never dereferences them. A range whose end would
/// pass `usize::MAX` is clamped there. A zero-length range covers no byte, so it orders nothing;
/// it is still part of the task's access list.
///
/// # Example
///
/// ```
/// use numatask_sched::depend::{Access, AccessKind};
///
/// let block = [0.0f32; 625];
/// let a = Access::of_slice(&block, AccessKind::InOut).intensive();
/// assert_eq!(a.len, 625 * 4);
/// assert!(a.intensive);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Access {
    /// First byte of the range.
    pub addr: usize,
    /// Length of the range in bytes.
    pub len: usize,
    /// How the task accesses the range.
    pub kind: AccessKind,
    /// Whether this is the task's most access-intensive dependence (a scheduling hint; the
    /// tracker ignores it).
    pub intensive: bool,
}

impl Access {
    /// The range `[addr, addr + len)` accessed as `kind`, not marked intensive.
    pub const fn new(addr: usize, len: usize, kind: AccessKind) -> Self {
        Access {
            addr,
            len,
            kind,
            intensive: false,
        }
    }

    /// The bytes of `slice`, accessed as `kind`.
    pub fn of_slice<E>(slice: &[E], kind: AccessKind) -> Self {
        Access::new(slice.as_ptr() as usize, std::mem::size_of_val(slice), kind)
    }

    /// The bytes of `value`, accessed as `kind`.
    pub fn of_val<V: ?Sized>(value: &V, kind: AccessKind) -> Self {
        Access::new(
            (value as *const V).cast::<u8>() as usize,
            std::mem::size_of_val(value),
            kind,
        )
    }

    /// The same access, marked as the task's most access-intensive dependence.
    pub const fn intensive(mut self) -> Self {
        self.intensive = true;
        self
    }

    /// One past the last byte (clamped to `usize::MAX`).
    pub const fn end(&self) -> usize {
        self.addr.saturating_add(self.len)
    }
}

/// Calls `each(start, len)` for every run of bytes in the union of the `accesses` that
/// `select` accepts, in address order: a byte that two of them declare (overlapping reads,
/// say) is in one run only, as the task touches it once. The ranges of the task's footprint,
/// `D` of the paper's Algorithm 1, which the locality-aware scheduler weighs by node
/// (`crate::scheduler::locality::accumulate_union_footprint`).
pub fn union_ranges(
    accesses: &[Access],
    select: impl Fn(&Access) -> bool,
    mut each: impl FnMut(usize, usize),
) {
    const STACK: usize = 8;
    let mut stack = [(0usize, 0usize); STACK];
    let mut heap = Vec::new();
    let mut n = 0;
    for a in accesses.iter().filter(|a| a.len > 0 && select(a)) {
        if n < STACK {
            stack[n] = (a.addr, a.end());
        } else {
            if n == STACK {
                heap.extend_from_slice(&stack);
            }
            heap.push((a.addr, a.end()));
        }
        n += 1;
    }
    let ranges: &mut [(usize, usize)] = if n <= STACK {
        &mut stack[..n]
    } else {
        &mut heap
    };
    ranges.sort_unstable();
    let mut current: Option<(usize, usize)> = None;
    for &(lo, hi) in ranges.iter() {
        current = match current {
            Some((start, end)) if lo <= end => Some((start, end.max(hi))),
            Some((start, end)) => {
                each(start, end - start);
                Some((lo, hi))
            }
            None => Some((lo, hi)),
        };
    }
    if let Some((start, end)) = current {
        each(start, end - start);
    }
}

/// How many accesses a task node stores without a heap allocation (SparseLU's `bmod`, the most
/// common task of the target benchmark, has three).
const INLINE_ACCESSES: usize = 3;

/// A task's accesses as declared, kept with the task for the scheduler.
#[derive(Debug)]
pub(crate) enum AccessList {
    Inline {
        len: u8,
        items: [Access; INLINE_ACCESSES],
    },
    Heap(Box<[Access]>),
}

impl AccessList {
    #[cfg(test)]
    pub(crate) fn new(accesses: &[Access]) -> Self {
        let mut list = std::mem::MaybeUninit::uninit();
        // SAFETY: `init` writes a whole list into the properly aligned slot.
        unsafe {
            AccessList::init(list.as_mut_ptr(), accesses);
            list.assume_init()
        }
    }

    /// Writes the list for `accesses` at `dst`, in place (see [`Node::init`](super::node::Node::init)).
    ///
    /// # Safety
    ///
    /// `dst` is valid for writes of an `AccessList` and properly aligned; whatever it held is
    /// overwritten without being dropped.
    #[inline]
    pub(crate) unsafe fn init(dst: *mut Self, accesses: &[Access]) {
        if accesses.len() > INLINE_ACCESSES {
            // SAFETY: the caller's promise.
            unsafe { dst.write(AccessList::Heap(accesses.into())) };
            return;
        }
        let empty = Access::new(0, 0, AccessKind::In);
        // A fixed number of element copies, which compile to plain stores (a `copy_from_slice`
        // of a run-time length is a call to `memcpy`).
        let item = |i: usize| accesses.get(i).copied().unwrap_or(empty);
        // SAFETY: the caller's promise.
        unsafe {
            dst.write(AccessList::Inline {
                len: accesses.len() as u8,
                items: std::array::from_fn(item),
            })
        };
    }

    pub(crate) fn as_slice(&self) -> &[Access] {
        match self {
            AccessList::Inline { len, items } => &items[..usize::from(*len)],
            AccessList::Heap(items) => items,
        }
    }
}

/// A byte range with the one kind a task accesses it with, after [`normalize`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Piece {
    pub(crate) start: usize,
    pub(crate) end: usize,
    pub(crate) kind: AccessKind,
}

/// Reusable buffers for [`normalize`], so that registering a task allocates nothing once they
/// have grown.
#[derive(Debug, Default)]
pub(crate) struct NormalizeScratch {
    events: Vec<(usize, bool, AccessKind)>,
}

/// Writes into `out` the non-empty, disjoint pieces, sorted by address, that `accesses` cover;
/// bytes declared more than once get the merged kind ([`AccessKind::merge`] over all their
/// declarations).
pub(crate) fn normalize(accesses: &[Access], out: &mut Vec<Piece>, scratch: &mut NormalizeScratch) {
    out.clear();
    out.extend(accesses.iter().filter(|a| a.end() > a.addr).map(|a| Piece {
        start: a.addr,
        end: a.end(),
        kind: a.kind,
    }));
    if out.len() <= 1 {
        return;
    }
    // Typically one to three accesses, usually disjoint: sort and check.
    out.sort_unstable_by_key(|p| p.start);
    if out.windows(2).all(|w| w[0].end <= w[1].start) {
        return;
    }
    // Overlaps: sweep over the boundaries, counting the active declarations of each kind.
    let events = &mut scratch.events;
    events.clear();
    for p in out.iter() {
        // `false` (an end) sorts before `true` (a start) at the same address, so adjacent
        // declarations do not count as overlapping.
        events.push((p.start, true, p.kind));
        events.push((p.end, false, p.kind));
    }
    events.sort_unstable_by_key(|&(at, is_start, kind)| (at, is_start, kind.index()));
    out.clear();
    let mut active = [0usize; 5];
    let mut from = 0;
    for &(at, is_start, kind) in events.iter() {
        if at > from
            && let Some(kind) = merged(&active)
        {
            match out.last_mut() {
                Some(last) if last.end == from && last.kind == kind => last.end = at,
                _ => out.push(Piece {
                    start: from,
                    end: at,
                    kind,
                }),
            }
        }
        from = at;
        if is_start {
            active[kind.index()] += 1;
        } else {
            active[kind.index()] -= 1;
        }
    }
}

/// The merged kind of the declarations counted in `active`, or `None` if there are none.
fn merged(active: &[usize; 5]) -> Option<AccessKind> {
    AccessKind::ALL
        .iter()
        .filter(|k| active[k.index()] > 0)
        .copied()
        .reduce(AccessKind::merge)
}

#[cfg(test)]
mod tests {
    use super::*;
    use AccessKind::*;

    /// Bytes of the union footprint, its runs checked to be disjoint and in order.
    fn union_bytes(accesses: &[Access], select: impl Fn(&Access) -> bool) -> u64 {
        let mut runs = Vec::new();
        union_ranges(accesses, select, |start, len| runs.push((start, len)));
        assert!(
            runs.windows(2).all(|w| w[0].0 + w[0].1 < w[1].0),
            "runs apart and in order: {runs:?}"
        );
        runs.iter().map(|&(_, len)| len as u64).sum()
    }

    #[test]
    fn a_footprint_counts_each_byte_once() {
        let a = |addr, len| Access::new(addr, len, In);
        // Disjoint: the sum; overlapping and nested: the union; touching ranges merge.
        assert_eq!(union_bytes(&[a(0, 10), a(20, 5)], |_| true), 15);
        assert_eq!(union_bytes(&[a(0, 10), a(5, 10)], |_| true), 15);
        assert_eq!(
            union_bytes(&[a(0, 100), a(10, 5), a(50, 60)], |_| true),
            110
        );
        assert_eq!(union_bytes(&[a(10, 10), a(0, 10)], |_| true), 20);
        assert_eq!(union_bytes(&[a(0, 0), a(3, 0)], |_| true), 0);
        // Only the selected accesses.
        let marked = [a(0, 10).intensive(), a(5, 100)];
        assert_eq!(union_bytes(&marked, |x| x.intensive), 10);
        // More than the stack buffer holds: 20 ranges of 8 bytes every 4 bytes overlap in
        // pairs into one run of 4 * 19 + 8 bytes.
        let many: Vec<Access> = (0..20).map(|i| a(1000 + 4 * i, 8)).collect();
        assert_eq!(union_bytes(&many, |_| true), 4 * 19 + 8);
    }

    fn pieces(accesses: &[Access]) -> Vec<(usize, usize, AccessKind)> {
        let mut out = Vec::new();
        normalize(accesses, &mut out, &mut NormalizeScratch::default());
        out.iter().map(|p| (p.start, p.end, p.kind)).collect()
    }

    #[test]
    fn disjoint_declarations_are_sorted_and_kept() {
        let got = pieces(&[Access::new(20, 5, Out), Access::new(0, 10, In)]);
        assert_eq!(got, vec![(0, 10, In), (20, 25, Out)]);
    }

    #[test]
    fn zero_length_declarations_order_nothing() {
        assert_eq!(pieces(&[Access::new(5, 0, Out)]), vec![]);
        assert_eq!(
            pieces(&[Access::new(5, 0, Out), Access::new(0, 10, In)]),
            vec![(0, 10, In)]
        );
    }

    #[test]
    fn overlapping_declarations_of_one_task_merge_to_inout() {
        let got = pieces(&[Access::new(0, 10, In), Access::new(5, 10, Out)]);
        assert_eq!(got, vec![(0, 5, In), (5, 10, InOut), (10, 15, Out)]);
    }

    #[test]
    fn equal_kinds_merge_to_themselves_and_coalesce() {
        let got = pieces(&[
            Access::new(0, 10, In),
            Access::new(5, 10, In),
            Access::new(15, 5, In),
        ]);
        assert_eq!(got, vec![(0, 20, In)]);
        let got = pieces(&[Access::new(0, 8, InOutSet), Access::new(4, 8, InOutSet)]);
        assert_eq!(got, vec![(0, 12, InOutSet)]);
    }

    #[test]
    fn different_set_kinds_merge_to_inout() {
        let got = pieces(&[
            Access::new(0, 8, MutexInOutSet),
            Access::new(0, 8, InOutSet),
        ]);
        assert_eq!(got, vec![(0, 8, InOut)]);
    }

    #[test]
    fn many_declarations_take_the_general_path_alike() {
        // Many declarations, unsorted: sorted when disjoint, merged where they overlap.
        let disjoint: Vec<Access> = [50, 0, 40, 10, 30, 20]
            .iter()
            .map(|&a| Access::new(a, 5, if a % 20 == 0 { In } else { Out }))
            .collect();
        let got = pieces(&disjoint);
        let want: Vec<_> = [0, 10, 20, 30, 40, 50]
            .iter()
            .map(|&a| (a, a + 5, if a % 20 == 0 { In } else { Out }))
            .collect();
        assert_eq!(got, want);
        let overlapping = [
            Access::new(0, 10, In),
            Access::new(5, 10, Out),
            Access::new(30, 0, Out),
            Access::new(40, 5, In),
            Access::new(42, 5, In),
        ];
        assert_eq!(
            pieces(&overlapping),
            vec![(0, 5, In), (5, 10, InOut), (10, 15, Out), (40, 47, In)]
        );
    }

    #[test]
    fn ranges_past_the_address_space_are_clamped() {
        let got = pieces(&[Access::new(usize::MAX - 4, 100, Out)]);
        assert_eq!(got, vec![(usize::MAX - 4, usize::MAX, Out)]);
    }

    #[test]
    fn access_lists_keep_declarations_in_order() {
        let few = [Access::new(1, 1, In), Access::new(0, 4, Out).intensive()];
        assert_eq!(AccessList::new(&few).as_slice(), &few);
        let many: Vec<Access> = (0..10).map(|i| Access::new(i, 1, In)).collect();
        assert_eq!(AccessList::new(&many).as_slice(), &many[..]);
    }
}
