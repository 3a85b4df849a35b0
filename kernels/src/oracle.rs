//! The reference executor: one work-group run with one OS thread per work-item and a real
//! barrier, the obviously-correct form of a kernel that tests compare the compiled form
//! (work-items as loops, regions split at barriers) against.
//!
//! Speed does not matter here; what does is that a kernel that misuses barriers fails with a
//! message saying how, instead of hanging or giving a plausible wrong result. So the barrier
//! checks what OpenCL leaves undefined: every work-item of a group must reach the same barrier
//! (by its *site*, the number the generated code gives each `barrier()` call in the source),
//! and none may return while others wait at one.
//!
//! # The barrier's protocol
//!
//! One mutex guards the group's state: the barrier's *generation*, the work-items waiting in
//! it (with their sites), the work-items whose body returned, and whether the group is
//! *broken* (a misuse was found, a work-item panicked, or not every thread could be started).
//! Each work-item ends in exactly one of these: waiting at a barrier, returned, panicked (its
//! drop guard reports it), or never started (the launcher reports it).
//!
//! - An arriving work-item adds itself to the waiting ones. The arrival that accounts for the
//!   last work-item (waiting + returned = all) decides: the same site and none returned
//!   releases them all (the generation advances, the waiting list empties); otherwise the
//!   group is broken with a message describing the misuse.
//! - A return that accounts for the last work-item while others wait breaks the group (they
//!   wait at a barrier that it will never reach).
//! - A panic, or a thread that could not be started, breaks the group at once.
//!
//! A waiting work-item sleeps until its generation has passed (it was released) or the group
//! is broken (it panics). **Why no work-item waits forever** (unless a body never ends): a
//! waiting work-item is never the last event of its group, and the last one, whichever kind,
//! either advances the generation or breaks the group, and wakes every sleeper; a panic or a
//! failed start breaks the group whenever it happens.
//!
//! Deciding only once every work-item is accounted for keeps the messages deterministic: they
//! name every site reached and every work-item that returned, whatever order the threads ran in.
//!
//! The launcher joins every thread and resumes the payload of the first work-item that
//! panicked on its own (a misuse counts: every work-item waiting then panics with its
//! message), never that of a work-item that panicked only because another one did.

use std::any::Any;
use std::fmt;
use std::panic;
use std::sync::{Condvar, Mutex, MutexGuard, PoisonError};
use std::thread;

use crate::buffer::Element;
use crate::kernel::WorkGroup;

/// How many local ids a message lists before it only counts the rest.
const IDS_SHOWN: usize = 8;

/// Runs `body` once per work-item of `group`, each on a thread of its own, and returns when
/// all are done.
///
/// The work-items meet at [`ItemCtx::barrier`]. If one panics, or the barrier finds a misuse
/// (work-items at different barriers, or work-items that returned while others wait at one),
/// the work-items waiting at a barrier are released and panic too, and once every thread has
/// ended the payload of the first work-item that panicked on its own is resumed here
/// ([`std::panic::resume_unwind`]); run in a launch, that fails its event with the message.
///
/// # Panics
///
/// As above, and if a thread cannot be started (the group is then not run to its end).
pub fn oracle_items(group: &WorkGroup<'_>, body: impl Fn(&ItemCtx<'_>) + Sync) {
    let size = [
        group.local_size(0),
        group.local_size(1),
        group.local_size(2),
    ];
    let items = size.iter().product::<usize>();
    let barrier = GroupBarrier::new(group_id_of(group), size, items);
    let body = &body;
    let barrier_ref = &barrier;
    let outcome = thread::scope(|scope| {
        let mut handles = Vec::with_capacity(items);
        for linear in 0..items {
            let local = barrier.local_id(linear);
            let spawned = thread::Builder::new()
                .name(format!("oracle work-item {}", Ids(&local)))
                .spawn_scoped(scope, move || {
                    let _guard = ItemGuard {
                        barrier: barrier_ref,
                        linear,
                    };
                    body(&ItemCtx {
                        group,
                        barrier: barrier_ref,
                        local,
                        linear,
                    });
                });
            match spawned {
                Ok(handle) => handles.push(handle),
                Err(err) => {
                    // The threads already running may wait for this one at a barrier.
                    barrier.break_unstarted();
                    for handle in handles {
                        let _ = handle.join();
                    }
                    return Err(format!(
                        "the reference executor could not start the thread of work-item {} of \
                         group {} ({items} work-items, one thread each): {err}",
                        Ids(&local),
                        Ids(&barrier.group_id),
                    ));
                }
            }
        }
        Ok(handles.into_iter().map(|h| h.join()).collect::<Vec<_>>())
    });
    let results = match outcome {
        Ok(results) => results,
        Err(message) => panic!("{message}"),
    };
    let first = barrier.lock().first_panic;
    if let Some(payload) = first_payload(results, first) {
        panic::resume_unwind(payload);
    }
}

/// The payload of work-item `first` if it panicked, else of the first one that did.
fn first_payload(
    results: Vec<thread::Result<()>>,
    first: Option<usize>,
) -> Option<Box<dyn Any + Send>> {
    let mut panics: Vec<(usize, Box<dyn Any + Send>)> = results
        .into_iter()
        .enumerate()
        .filter_map(|(i, r)| r.err().map(|p| (i, p)))
        .collect();
    let at = first
        .and_then(|f| panics.iter().position(|(i, _)| *i == f))
        .unwrap_or(0);
    (!panics.is_empty()).then(|| panics.swap_remove(at).1)
}

fn group_id_of(group: &WorkGroup<'_>) -> [usize; 3] {
    [group.group_id(0), group.group_id(1), group.group_id(2)]
}

/// One work-item as the reference executor runs it: its ids and sizes (OpenCL's work-item
/// functions) and the group's barrier.
///
/// Dimensions past the NDRange's have size 1 and id 0, and so do dimensions 3 and up (as
/// OpenCL's functions answer for them).
pub struct ItemCtx<'a> {
    group: &'a WorkGroup<'a>,
    barrier: &'a GroupBarrier,
    local: [usize; 3],
    linear: usize,
}

impl ItemCtx<'_> {
    /// This work-item's id within its group in dimension `d` (`get_local_id`).
    pub fn local_id(&self, d: usize) -> usize {
        self.local.get(d).copied().unwrap_or(0)
    }

    /// This work-item's global id in dimension `d` (`get_global_id`): its group's id times
    /// the enqueued local size, plus its local id, plus the global offset.
    pub fn global_id(&self, d: usize) -> usize {
        self.group_id(d) * self.enqueued_local_size(d) + self.local_id(d) + self.global_offset(d)
    }

    /// The group's id in dimension `d` (`get_group_id`).
    pub fn group_id(&self, d: usize) -> usize {
        self.group.group_id(d)
    }

    /// The group's actual size in dimension `d` (`get_local_size`): smaller than the enqueued
    /// one in groups at the upper edge of a non-uniform range.
    pub fn local_size(&self, d: usize) -> usize {
        self.group.local_size(d)
    }

    /// The local size the launch was enqueued with in dimension `d`
    /// (`get_enqueued_local_size`).
    pub fn enqueued_local_size(&self, d: usize) -> usize {
        self.group.enqueued_local_size(d)
    }

    /// Groups in dimension `d` (`get_num_groups`).
    pub fn num_groups(&self, d: usize) -> usize {
        self.group.num_groups(d)
    }

    /// The global size in dimension `d` (`get_global_size`).
    pub fn global_size(&self, d: usize) -> usize {
        self.group.global_size(d)
    }

    /// The global offset in dimension `d` (`get_global_offset`).
    pub fn global_offset(&self, d: usize) -> usize {
        self.group.global_offset(d)
    }

    /// Dimensions of the NDRange (`get_work_dim`).
    pub fn work_dim(&self) -> usize {
        self.group.dims()
    }

    /// This work-item's position in the range, offset removed, dimension 0 fastest
    /// (`get_global_linear_id`).
    pub fn global_linear_id(&self) -> usize {
        let g = |d| self.global_id(d) - self.global_offset(d);
        g(0) + g(1) * self.global_size(0) + g(2) * self.global_size(0) * self.global_size(1)
    }

    /// This work-item's position in its group, dimension 0 fastest (`get_local_linear_id`).
    pub fn local_linear_id(&self) -> usize {
        self.local_id(0)
            + self.local_id(1) * self.local_size(0)
            + self.local_id(2) * self.local_size(0) * self.local_size(1)
    }

    /// Waits until every work-item of the group has reached the barrier `site` (a work-group
    /// barrier with local and global fences: what the others wrote before it is seen after it).
    ///
    /// # Panics
    ///
    /// If the work-items of the group reached different barrier sites, if some returned while
    /// others wait at a barrier, or if another work-item of the group panicked; with a message
    /// naming the group and what each work-item did.
    pub fn barrier(&self, site: u32) {
        self.barrier.wait(self.linear, site);
    }
}

impl fmt::Debug for ItemCtx<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ItemCtx")
            .field("group_id", &self.barrier.group_id)
            .field("local_id", &self.local)
            .finish()
    }
}

/// Reports the end of a work-item's body, returned or panicked, to its group's barrier.
struct ItemGuard<'a> {
    barrier: &'a GroupBarrier,
    linear: usize,
}

impl Drop for ItemGuard<'_> {
    fn drop(&mut self) {
        if thread::panicking() {
            self.barrier.panicked(self.linear);
        } else {
            self.barrier.returned(self.linear);
        }
    }
}

/// The barrier of one group's work-item threads (see the module's documentation).
struct GroupBarrier {
    group_id: [usize; 3],
    size: [usize; 3],
    items: usize,
    state: Mutex<BarrierState>,
    /// Signalled when a generation ends or the group breaks.
    changed: Condvar,
}

struct BarrierState {
    generation: u64,
    /// The work-items waiting in this generation (local linear ids), with their sites.
    waiting: Vec<(usize, u32)>,
    /// The work-items whose body returned.
    returned: Vec<usize>,
    broken: Option<Broken>,
    /// The work-item that panicked first; the others panicked because of it, or with the same
    /// misuse message.
    first_panic: Option<usize>,
}

/// Why a group's barrier releases its waiting work-items into a panic.
enum Broken {
    /// A misuse of barriers, described.
    Misuse(String),
    /// A work-item panicked.
    Panicked,
    /// Not every work-item's thread could be started.
    Unstarted,
}

impl GroupBarrier {
    fn new(group_id: [usize; 3], size: [usize; 3], items: usize) -> Self {
        GroupBarrier {
            group_id,
            size,
            items,
            state: Mutex::new(BarrierState {
                generation: 0,
                waiting: Vec::new(),
                returned: Vec::new(),
                broken: None,
                first_panic: None,
            }),
            changed: Condvar::new(),
        }
    }

    /// The state, also after a thread panicked holding the lock (none should: the state is
    /// consistent whenever the lock is released, and panics happen after).
    fn lock(&self) -> MutexGuard<'_, BarrierState> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn local_id(&self, linear: usize) -> [usize; 3] {
        let [sx, sy, _] = self.size;
        [linear % sx, linear / sx % sy, linear / (sx * sy)]
    }

    fn wait(&self, linear: usize, site: u32) {
        let mut state = self.lock();
        if let Some(broken) = &state.broken {
            let message = self.broken_message(broken, linear, site);
            drop(state);
            panic!("{message}");
        }
        state.waiting.push((linear, site));
        if state.waiting.len() + state.returned.len() == self.items {
            if let Some(message) = self.misuse(&state) {
                state.broken = Some(Broken::Misuse(message.clone()));
                self.changed.notify_all();
                drop(state);
                panic!("{message}");
            }
            state.waiting.clear();
            state.generation = state.generation.wrapping_add(1);
            self.changed.notify_all();
            return;
        }
        let generation = state.generation;
        let message = loop {
            if state.generation != generation {
                return;
            }
            if let Some(broken) = &state.broken {
                break self.broken_message(broken, linear, site);
            }
            state = self
                .changed
                .wait(state)
                .unwrap_or_else(PoisonError::into_inner);
        };
        drop(state);
        panic!("{message}");
    }

    fn returned(&self, linear: usize) {
        let mut state = self.lock();
        state.returned.push(linear);
        if state.broken.is_none()
            && !state.waiting.is_empty()
            && state.waiting.len() + state.returned.len() == self.items
        {
            state.broken = self.misuse(&state).map(Broken::Misuse);
            self.changed.notify_all();
        }
    }

    fn panicked(&self, linear: usize) {
        let mut state = self.lock();
        state.first_panic.get_or_insert(linear);
        state.broken.get_or_insert(Broken::Panicked);
        self.changed.notify_all();
    }

    fn break_unstarted(&self) {
        let mut state = self.lock();
        state.broken.get_or_insert(Broken::Unstarted);
        self.changed.notify_all();
    }

    /// What is wrong with the group once every work-item waits or returned, if anything.
    fn misuse(&self, state: &BarrierState) -> Option<String> {
        let mut sites: Vec<u32> = state.waiting.iter().map(|&(_, s)| s).collect();
        sites.sort_unstable();
        sites.dedup();
        let group = Ids(&self.group_id);
        let waiting = || {
            sites
                .iter()
                .map(|&site| {
                    let ids = state
                        .waiting
                        .iter()
                        .filter(|&&(_, s)| s == site)
                        .map(|&(i, _)| i);
                    format!("site {site}: {}", self.describe(ids))
                })
                .collect::<Vec<_>>()
                .join("; ")
        };
        if !state.returned.is_empty() {
            let plural = if sites.len() > 1 { "s" } else { "" };
            let site_list = sites
                .iter()
                .map(u32::to_string)
                .collect::<Vec<_>>()
                .join(", ");
            Some(format!(
                "work-items of group {group} returned before barrier site{plural} {site_list} that \
                 other work-items wait at (returned: {}; waiting at {})",
                self.describe(state.returned.iter().copied()),
                waiting(),
            ))
        } else if sites.len() > 1 {
            Some(format!(
                "work-items of group {group} reached different barriers: {}",
                waiting()
            ))
        } else {
            None
        }
    }

    fn broken_message(&self, broken: &Broken, linear: usize, site: u32) -> String {
        let group = Ids(&self.group_id);
        let item = Ids(&self.local_id(linear));
        match broken {
            Broken::Misuse(message) => message.clone(),
            Broken::Panicked => format!(
                "another work-item of the group panicked (work-item {item} of group {group} was \
                 at barrier site {site})"
            ),
            Broken::Unstarted => format!(
                "not every work-item of the group could be started (work-item {item} of group \
                 {group} was at barrier site {site})"
            ),
        }
    }

    /// "2 work-items, local ids (0, 0, 0), (2, 0, 0)", in local linear order, the first
    /// [`IDS_SHOWN`] listed.
    fn describe(&self, linear: impl Iterator<Item = usize>) -> String {
        let mut linear: Vec<usize> = linear.collect();
        linear.sort_unstable();
        let mut ids: Vec<String> = linear
            .iter()
            .take(IDS_SHOWN)
            .map(|&i| Ids(&self.local_id(i)).to_string())
            .collect();
        if linear.len() > IDS_SHOWN {
            ids.push(format!("and {} more", linear.len() - IDS_SHOWN));
        }
        match linear.len() {
            1 => format!("1 work-item, local id {}", ids.join(", ")),
            n => format!("{n} work-items, local ids {}", ids.join(", ")),
        }
    }
}

/// Ids shown as OpenCL writes them: "(x, y, z)".
struct Ids<'a>(&'a [usize; 3]);

impl fmt::Display for Ids<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let [x, y, z] = self.0;
        write!(f, "({x}, {y}, {z})")
    }
}

/// Local memory shared by the work-item threads of one group, for the reference executor:
/// `len` elements, zeroed when made, read and written one element at a time.
///
/// Every access takes a lock, so work-items that write the same element without a barrier
/// between them do not race in Rust's sense; which value wins is unspecified, as in OpenCL.
pub struct OracleLocal<T: Element> {
    len: usize,
    elements: Mutex<Vec<T>>,
}

impl<T: Element> OracleLocal<T> {
    /// `len` zeroed elements.
    pub fn new(len: usize) -> Self {
        // SAFETY: `T: Element` implies `T: Zeroable`, whose contract is that all-zero bytes
        // are a valid value of `T`.
        let zero: T = unsafe { std::mem::zeroed() };
        OracleLocal {
            len,
            elements: Mutex::new(vec![zero; len]),
        }
    }

    /// Elements in all.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether there are no elements.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Element `i`.
    ///
    /// # Panics
    ///
    /// If `i` is not below [`len`](Self::len).
    pub fn get(&self, i: usize) -> T {
        self.check(i);
        self.lock()[i]
    }

    /// Sets element `i` to `value`.
    ///
    /// # Panics
    ///
    /// If `i` is not below [`len`](Self::len).
    pub fn set(&self, i: usize, value: T) {
        self.check(i);
        self.lock()[i] = value;
    }

    fn check(&self, i: usize) {
        if i >= self.len {
            panic!(
                "local memory index {i} out of bounds for length {}",
                self.len
            );
        }
    }

    /// The elements, also after a thread panicked holding the lock (an element access cannot
    /// leave them inconsistent).
    fn lock(&self) -> MutexGuard<'_, Vec<T>> {
        self.elements.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl<T: Element> fmt::Debug for OracleLocal<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OracleLocal")
            .field("len", &self.len)
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use std::collections::HashSet;
    use std::panic::{AssertUnwindSafe, catch_unwind};

    use super::*;
    use crate::ndrange::{Geometry, NdRange};

    fn geometry(range: NdRange) -> Geometry {
        range.resolve(4096, 4, 2).unwrap()
    }

    /// Runs `f` on every group of `geometry`, as a launch makes them.
    fn for_each_group(geometry: &Geometry, mut f: impl FnMut(&WorkGroup<'_>)) {
        for g in 0..geometry.total_groups() {
            let id = geometry.group_id(g);
            f(&WorkGroup {
                geometry,
                id,
                size: geometry.group_size(id),
            });
        }
    }

    /// The panic message of `f`, which must panic.
    fn panic_message(f: impl FnOnce()) -> String {
        let payload = catch_unwind(AssertUnwindSafe(f)).expect_err("expected a panic");
        if let Some(s) = payload.downcast_ref::<String>() {
            s.clone()
        } else if let Some(s) = payload.downcast_ref::<&str>() {
            (*s).to_owned()
        } else {
            panic!("a panic without a message")
        }
    }

    #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
    struct Seen {
        local: [usize; 3],
        global: [usize; 3],
        group: [usize; 3],
        local_size: [usize; 3],
        enqueued: [usize; 3],
        num_groups: [usize; 3],
        global_size: [usize; 3],
        offset: [usize; 3],
        past: [usize; 8],
        dims: usize,
        global_linear: usize,
        local_linear: usize,
    }

    fn seen(item: &ItemCtx<'_>) -> Seen {
        let per_dim = |f: &dyn Fn(usize) -> usize| [f(0), f(1), f(2)];
        Seen {
            local: per_dim(&|d| item.local_id(d)),
            global: per_dim(&|d| item.global_id(d)),
            group: per_dim(&|d| item.group_id(d)),
            local_size: per_dim(&|d| item.local_size(d)),
            enqueued: per_dim(&|d| item.enqueued_local_size(d)),
            num_groups: per_dim(&|d| item.num_groups(d)),
            global_size: per_dim(&|d| item.global_size(d)),
            offset: per_dim(&|d| item.global_offset(d)),
            past: [
                item.local_id(3),
                item.global_id(3),
                item.group_id(3),
                item.global_offset(3),
                item.local_size(3),
                item.enqueued_local_size(3),
                item.num_groups(3),
                item.global_size(3),
            ],
            dims: item.work_dim(),
            global_linear: item.global_linear_id(),
            local_linear: item.local_linear_id(),
        }
    }

    /// Every work-item of every group, as the reference executor reports it.
    fn all_items(geometry: &Geometry) -> Vec<Seen> {
        let mut all = Vec::new();
        for_each_group(geometry, |group| {
            let items = Mutex::new(Vec::new());
            oracle_items(group, |item| items.lock().unwrap().push(seen(item)));
            all.extend(items.into_inner().unwrap());
        });
        all
    }

    #[test]
    fn work_items_see_their_opencl_ids_and_sizes_in_one_to_three_dimensions() {
        let ranges = [
            (NdRange::new([10]).local([4]).offset([5]), 1),
            (NdRange::new([10, 7]).local([4, 3]).offset([1, 2]), 2),
            (
                NdRange::new([5, 4, 3]).local([2, 3, 2]).offset([0, 7, 9]),
                3,
            ),
        ];
        for (range, dims) in ranges {
            let g = geometry(range.clone());
            let all = all_items(&g);
            assert_eq!(all.len(), g.total_items(), "{range:?}");
            let mut globals = HashSet::new();
            let mut linears = HashSet::new();
            for s in &all {
                assert_eq!(s.dims, dims);
                assert_eq!(s.past, [0, 0, 0, 0, 1, 1, 1, 1], "{range:?} {s:?}");
                assert_eq!(s.enqueued, g.local_size());
                assert_eq!(s.num_groups, g.num_groups());
                assert_eq!(s.global_size, g.global_size());
                for d in 0..3 {
                    // The actual group size: the enqueued one, or what is left at the edge.
                    let start = s.group[d] * s.enqueued[d];
                    let size = s.enqueued[d].min(s.global_size[d] - start);
                    assert_eq!(s.local_size[d], size, "{range:?} {s:?}");
                    assert!(s.local[d] < size);
                    assert_eq!(s.global[d], s.offset[d] + start + s.local[d]);
                }
                let [lx, ly, lz] = s.local;
                let [sx, sy, _] = s.local_size;
                assert_eq!(s.local_linear, lx + ly * sx + lz * sx * sy);
                let p = |d: usize| s.global[d] - s.offset[d];
                let [gx, gy, _] = s.global_size;
                assert_eq!(s.global_linear, p(0) + p(1) * gx + p(2) * gx * gy);
                assert!(globals.insert(s.global), "{range:?}: {s:?} twice");
                assert!(linears.insert(s.global_linear));
            }
            // Each work-item of the range once: the global linear ids are 0..n.
            assert_eq!(linears, (0..g.total_items()).collect());
        }
    }

    #[test]
    fn a_group_at_the_edge_of_a_non_uniform_range_is_smaller() {
        let g = geometry(NdRange::new([10, 7]).local([4, 3]).offset([100, 200]));
        let id = [2, 2, 0];
        let group = WorkGroup {
            geometry: &g,
            id,
            size: g.group_size(id),
        };
        let items = Mutex::new(Vec::new());
        oracle_items(&group, |item| items.lock().unwrap().push(seen(item)));
        let mut items = items.into_inner().unwrap();
        items.sort_by_key(|s| s.local_linear);
        let got: Vec<_> = items
            .iter()
            .map(|s| (s.local, s.global, s.local_size, s.enqueued, s.global_linear))
            .collect();
        // Columns 8 and 9 of row 6: a 2 x 1 group of an enqueued 4 x 3.
        assert_eq!(
            got,
            [
                ([0, 0, 0], [108, 206, 0], [2, 1, 1], [4, 3, 1], 68),
                ([1, 0, 0], [109, 206, 0], [2, 1, 1], [4, 3, 1], 69),
            ]
        );
    }

    #[test]
    fn barriers_order_a_two_phase_exchange_through_local_memory() {
        // 8 rounds of: write my slot, barrier, read my neighbour's, barrier. Without a real
        // barrier a read would see the slot of another round.
        let g = geometry(NdRange::new([37, 20]).local([16, 16]));
        for_each_group(&g, |group| {
            let n = group.local_size(0) * group.local_size(1);
            let local = OracleLocal::<u64>::new(n);
            let out = OracleLocal::<u64>::new(n * 8);
            oracle_items(group, |item| {
                let lid = item.local_linear_id();
                for round in 0..8 {
                    local.set(lid, (round * 1000 + lid) as u64);
                    item.barrier(1);
                    out.set(round * n + lid, local.get((lid + 1) % n));
                    item.barrier(2);
                }
            });
            for round in 0..8 {
                for lid in 0..n {
                    assert_eq!(
                        out.get(round * n + lid),
                        (round * 1000 + (lid + 1) % n) as u64,
                        "group {:?} round {round} item {lid}",
                        group.id
                    );
                }
            }
        });
    }

    #[test]
    fn work_items_at_different_barriers_fail_naming_the_group_and_sites() {
        let g = geometry(NdRange::new([6]).local([3]));
        let group = WorkGroup {
            geometry: &g,
            id: [1, 0, 0],
            size: [3, 1, 1],
        };
        let message = panic_message(|| {
            oracle_items(&group, |item| {
                item.barrier(if item.local_id(0) == 1 { 7 } else { 4 })
            })
        });
        assert_eq!(
            message,
            "work-items of group (1, 0, 0) reached different barriers: site 4: 2 work-items, \
             local ids (0, 0, 0), (2, 0, 0); site 7: 1 work-item, local id (1, 0, 0)"
        );
    }

    #[test]
    fn a_work_item_returning_before_a_barrier_others_wait_at_fails() {
        let g = geometry(NdRange::new([4]).local([4]));
        let group = WorkGroup {
            geometry: &g,
            id: [0, 0, 0],
            size: [4, 1, 1],
        };
        // Before the first barrier, and after one all passed.
        for passed_one in [false, true] {
            let message = panic_message(|| {
                oracle_items(&group, |item| {
                    if passed_one {
                        item.barrier(1);
                    }
                    if item.local_id(0) != 2 {
                        item.barrier(3);
                    }
                })
            });
            assert_eq!(
                message,
                "work-items of group (0, 0, 0) returned before barrier site 3 that other \
                 work-items wait at (returned: 1 work-item, local id (2, 0, 0); waiting at site \
                 3: 3 work-items, local ids (0, 0, 0), (1, 0, 0), (3, 0, 0))"
            );
        }
    }

    #[test]
    fn long_lists_of_work_items_are_cut_in_messages() {
        let g = geometry(NdRange::new([20]).local([20]));
        let group = WorkGroup {
            geometry: &g,
            id: [0, 0, 0],
            size: [20, 1, 1],
        };
        let message = panic_message(|| {
            oracle_items(&group, |item| {
                if item.local_id(0) > 0 {
                    item.barrier(5);
                }
            })
        });
        assert_eq!(
            message,
            "work-items of group (0, 0, 0) returned before barrier site 5 that other \
             work-items wait at (returned: 1 work-item, local id (0, 0, 0); waiting at site 5: \
             19 work-items, local ids (1, 0, 0), (2, 0, 0), (3, 0, 0), (4, 0, 0), (5, 0, 0), \
             (6, 0, 0), (7, 0, 0), (8, 0, 0), and 11 more)"
        );
    }

    #[derive(Debug, PartialEq)]
    struct Boom(usize);

    #[test]
    fn a_panicking_work_item_releases_the_others_and_its_payload_is_resumed() {
        let g = geometry(NdRange::new([8, 2]).local([8, 2]));
        let group = WorkGroup {
            geometry: &g,
            id: [0, 0, 0],
            size: [8, 2, 1],
        };
        // One panics while the others wait at a barrier (or before they reach it).
        let payload = catch_unwind(AssertUnwindSafe(|| {
            oracle_items(&group, |item| {
                if item.local_linear_id() == 11 {
                    panic::panic_any(Boom(11));
                }
                item.barrier(1);
            })
        }))
        .unwrap_err();
        assert_eq!(payload.downcast_ref::<Boom>(), Some(&Boom(11)));

        // Several panic on their own: one of theirs, never a released work-item's.
        let payload = catch_unwind(AssertUnwindSafe(|| {
            oracle_items(&group, |item| {
                item.barrier(1);
                let lid = item.local_linear_id();
                if lid % 2 == 1 {
                    panic::panic_any(Boom(lid));
                }
                item.barrier(2);
            })
        }))
        .unwrap_err();
        let Some(Boom(lid)) = payload.downcast_ref::<Boom>() else {
            panic!("a released work-item's panic was resumed");
        };
        assert_eq!(lid % 2, 1);

        // A panic after the last barrier: the others end normally.
        let ended = OracleLocal::<u32>::new(16);
        let payload = catch_unwind(AssertUnwindSafe(|| {
            oracle_items(&group, |item| {
                item.barrier(1);
                if item.local_linear_id() == 0 {
                    panic::panic_any(Boom(0));
                }
                ended.set(item.local_linear_id(), 1);
            })
        }))
        .unwrap_err();
        assert_eq!(payload.downcast_ref::<Boom>(), Some(&Boom(0)));
        assert_eq!((1..16).map(|i| ended.get(i)).sum::<u32>(), 15);
    }

    #[test]
    fn released_work_items_say_another_one_panicked() {
        let g = geometry(NdRange::new([3]).local([3]));
        let group = WorkGroup {
            geometry: &g,
            id: [0, 0, 0],
            size: [3, 1, 1],
        };
        let released = Mutex::new(Vec::new());
        let _ = catch_unwind(AssertUnwindSafe(|| {
            oracle_items(&group, |item| {
                if item.local_id(0) == 0 {
                    panic!("the first work-item fails");
                }
                let waited = catch_unwind(AssertUnwindSafe(|| item.barrier(9)));
                if let Err(payload) = waited {
                    let message = payload.downcast_ref::<String>().cloned();
                    released.lock().unwrap().push(message);
                    panic::resume_unwind(payload);
                }
            })
        }));
        let mut released = released.into_inner().unwrap();
        released.sort();
        assert_eq!(
            released,
            [1, 2].map(|x| Some(format!(
                "another work-item of the group panicked (work-item ({x}, 0, 0) of group \
                 (0, 0, 0) was at barrier site 9)"
            )))
        );
    }

    #[test]
    fn local_memory_starts_zeroed_and_checks_its_bounds() {
        let local = OracleLocal::<f32>::new(5);
        assert_eq!(local.len(), 5);
        assert!(!local.is_empty());
        assert!((0..5).all(|i| local.get(i) == 0.0));
        local.set(4, 2.5);
        assert_eq!(local.get(4), 2.5);
        assert_eq!(
            panic_message(|| local.set(5, 1.0)),
            "local memory index 5 out of bounds for length 5"
        );
        assert_eq!(
            panic_message(|| {
                local.get(7);
            }),
            "local memory index 7 out of bounds for length 5"
        );
        // Still usable after a failed access.
        assert_eq!(local.get(4), 2.5);
    }
}
