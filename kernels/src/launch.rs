//! Launches: a kernel, its checked arguments and NDRange, divided into tasks of consecutive
//! work-groups that run on the runtime, each with the footprint of its groups.
//!
//! Each task also prefers a worker ([`TaskBuilder::prefer_worker`]), chosen from its footprint
//! and its index alone, so that task `i` of consecutive launches over the same buffers prefers
//! the same worker, whose cache may still hold what task `i` of the last launch left there:
//! under the locality-aware scheduler a worker of the node holding most of its bytes (when
//! that node holds more than half of them; tasks over spread data, or over memory whose node
//! nobody knows, go to any worker), the tasks of each node taking that node's workers in
//! turn; under work stealing every worker in turn. A busy worker's tasks are taken by idle
//! ones, so the preference never holds a launch back.
//!
//! [`TaskBuilder::prefer_worker`]: numatask_sched::TaskBuilder::prefer_worker

use std::cell::{Cell, RefCell};
use std::ops::Range;
use std::panic::{self, AssertUnwindSafe};
use std::sync::Arc;

use numatask_alloc::{NodeBytes, accumulate_node_bytes};
use numatask_sched::depend::{Access, AccessKind};
use numatask_sched::{Footprint, Runtime, Scope};

use crate::context::ContextInner;
use crate::error::{Error, Failure, FailureKind};
use crate::kernel::{Arg, ArgValue, FootprintQuery, GroupArgs, Kernel, Mode, ParamKind, WorkGroup};
use crate::ndrange::{Geometry, NdRange};

/// Alignment of local memory (a cache line; enough for every element type of a buffer).
const LOCAL_ALIGN: usize = 64;

/// Tasks per worker a launch is divided into by default: enough for stealing to even out
/// groups of unequal cost, few enough that the per-task cost stays small.
pub const TASKS_PER_WORKER: usize = 4;

/// A checked launch, ready to run.
pub(crate) struct Launch {
    kernel: Kernel,
    args: Vec<ArgValue>,
    modes: Vec<ParamKind>,
    geometry: Geometry,
    /// Each local argument's offset in the group's arena (0 for other arguments).
    local_offsets: Vec<usize>,
    local_bytes: usize,
    tasks: usize,
    /// The worker each task prefers (module docs; empty for a launch run in one piece).
    preferred: Vec<Option<usize>>,
}

impl Launch {
    /// Checks `args` against `kernel`'s parameters and `range` against the context's limits;
    /// returns the launch and the accesses its command declares on its buffers.
    pub(crate) fn check(
        context: &ContextInner,
        kernel: &Kernel,
        range: &NdRange,
        args: Vec<Arg>,
        tasks: Option<usize>,
    ) -> Result<(Launch, Vec<Access>), Error> {
        let k = &kernel.inner;
        if args.len() != k.params.len() {
            return Err(Error::ArgumentCount {
                kernel: k.name,
                expected: k.params.len(),
                given: args.len(),
            });
        }
        let mut item_bytes = 0usize;
        for (i, (arg, param)) in args.iter().zip(&k.params).enumerate() {
            let matches = match (&arg.0, param.kind) {
                (ArgValue::Buffer(b), ParamKind::Buffer(_)) => {
                    if b.context != context.id {
                        return Err(Error::OtherContext(format!(
                            "argument {i} of kernel '{}' ({})",
                            k.name,
                            b.describe()
                        )));
                    }
                    item_bytes = item_bytes.saturating_add(b.elem_size);
                    b.type_id == param.elem.id
                }
                (ArgValue::Scalar(_, t), ParamKind::Scalar) => *t == param.elem,
                (ArgValue::Local(t, len), ParamKind::Local) => {
                    if *len == 0 {
                        return Err(Error::Empty("a local argument"));
                    }
                    *t == param.elem
                }
                _ => false,
            };
            if !matches {
                return Err(Error::ArgumentType {
                    kernel: k.name,
                    index: i,
                    expected: param.describe(),
                    given: arg.describe(),
                });
            }
        }
        let limits = context.limits;
        let workers = context.runtime().num_workers();
        let geometry = range.resolve(limits.max_work_group_size, item_bytes, workers)?;
        // Buffers: long enough, not aliased with a written one.
        let mut accesses = Vec::new();
        for (i, (arg, param)) in args.iter().zip(&k.params).enumerate() {
            let (ArgValue::Buffer(b), ParamKind::Buffer(mode)) = (&arg.0, param.kind) else {
                continue;
            };
            if mode.writes() && b.len < geometry.num_items {
                return Err(Error::BufferTooShort {
                    kernel: k.name,
                    index: i,
                    len: b.len,
                    needed: geometry.num_items,
                });
            }
            for (j, (other, other_param)) in args.iter().zip(&k.params).enumerate().skip(i + 1) {
                if let (ArgValue::Buffer(o), ParamKind::Buffer(other_mode)) =
                    (&other.0, other_param.kind)
                    && Arc::ptr_eq(b, o)
                    && (mode.writes() || other_mode.writes())
                {
                    return Err(Error::BufferAliased {
                        kernel: k.name,
                        first: i,
                        second: j,
                    });
                }
            }
            let kind = match mode {
                Mode::Read => AccessKind::In,
                Mode::Write => AccessKind::Out,
                Mode::ReadWrite => AccessKind::InOut,
            };
            accesses.push(b.access(kind, 0..b.len));
        }
        // Local memory: each argument aligned to a cache line.
        let mut local_offsets = vec![0; args.len()];
        let mut local_bytes = 0usize;
        for (i, arg) in args.iter().enumerate() {
            if let ArgValue::Local(t, len) = &arg.0 {
                let start = local_bytes.next_multiple_of(LOCAL_ALIGN);
                let bytes = t.size.checked_mul(*len).and_then(|b| b.checked_add(start));
                match bytes {
                    Some(end) if end <= limits.local_mem_size && t.align <= LOCAL_ALIGN => {
                        local_offsets[i] = start;
                        local_bytes = end;
                    }
                    _ => {
                        return Err(Error::LocalMemory {
                            kernel: k.name,
                            bytes: bytes.unwrap_or(usize::MAX),
                            max: limits.local_mem_size,
                        });
                    }
                }
            }
        }
        let tasks = match tasks {
            Some(0) => return Err(Error::Setting("a launch needs at least one task".into())),
            Some(n) => n,
            None => workers.saturating_mul(TASKS_PER_WORKER),
        }
        .min(geometry.num_groups)
        .max(1);
        let modes = k.params.iter().map(|p| p.kind).collect();
        let mut launch = Launch {
            kernel: kernel.clone(),
            args: args.into_iter().map(|a| a.0).collect(),
            modes,
            geometry,
            local_offsets,
            local_bytes,
            tasks,
            preferred: Vec::new(),
        };
        if tasks > 1 {
            launch.preferred = launch.preferred_workers(context.runtime());
        }
        Ok((launch, accesses))
    }

    /// The buffers it uses, and whether it writes them.
    pub(crate) fn buffers(&self) -> Vec<(Arc<crate::buffer::RawBuffer>, bool)> {
        self.args
            .iter()
            .zip(&self.modes)
            .filter_map(|(a, m)| match (a, m) {
                (ArgValue::Buffer(b), ParamKind::Buffer(mode)) => {
                    Some((Arc::clone(b), mode.writes()))
                }
                _ => None,
            })
            .collect()
    }

    /// The groups of task `t`.
    fn groups_of(&self, t: usize) -> Range<usize> {
        let g = self.geometry.num_groups as u128;
        let n = self.tasks as u128;
        let at = |t: usize| (g * t as u128 / n) as usize;
        at(t)..at(t + 1)
    }

    /// The footprint of the groups `groups`.
    fn footprint(&self, groups: &Range<usize>) -> Footprint {
        self.footprint_ranges(groups)
            .into_iter()
            .fold(Footprint::new(), |fp, (addr, len)| fp.bytes(addr, len))
    }

    /// The byte ranges, as (address, length), of the footprint of the groups `groups`: for
    /// each buffer argument, the elements the kernel's footprint function names (by default,
    /// the groups' share of the buffer).
    fn footprint_ranges(&self, groups: &Range<usize>) -> Vec<(usize, usize)> {
        let mut ranges = Vec::new();
        let total = self.geometry.num_groups;
        for (i, arg) in self.args.iter().enumerate() {
            let ArgValue::Buffer(b) = arg else { continue };
            let range = match &self.kernel.inner.footprint {
                Some(f) => {
                    let q = FootprintQuery {
                        arg: i,
                        len: b.len,
                        groups: groups.clone(),
                        total_groups: total,
                        geometry: self.geometry,
                    };
                    match f(&q) {
                        Some(r) => r.start.min(b.len)..r.end.min(b.len),
                        None => continue,
                    }
                }
                None => {
                    let share = |g: usize| (b.len as u128 * g as u128 / total as u128) as usize;
                    share(groups.start)..share(groups.end)
                }
            };
            if range.start < range.end {
                ranges.push((
                    b.ptr as usize + range.start * b.elem_size,
                    (range.end - range.start) * b.elem_size,
                ));
            }
        }
        ranges
    }

    /// The worker each task prefers (module docs): a function of the tasks' footprints and
    /// the runtime's workers, the same for every launch that has them. A task without a
    /// footprint (a kernel without buffers) prefers none: no cache holds anything of it.
    fn preferred_workers(&self, runtime: &Runtime) -> Vec<Option<usize>> {
        let workers = runtime.workers();
        let num_nodes = runtime.topology().num_nodes().max(1);
        let by_node = runtime.settings().scheduler.reads_footprints() && num_nodes > 1;
        let mut of_node: Vec<Vec<usize>> = vec![Vec::new(); num_nodes];
        for place in workers {
            if let Some(list) = of_node.get_mut(place.node) {
                list.push(place.index);
            }
        }
        let everyone: Vec<usize> = workers.iter().map(|p| p.index).collect();
        // Each node's turn, and last the turn of the tasks that may go anywhere.
        let mut turns = vec![0usize; num_nodes + 1];
        (0..self.tasks)
            .map(|t| {
                let ranges = self.footprint_ranges(&self.groups_of(t));
                if ranges.is_empty() {
                    return None;
                }
                let node = by_node
                    .then(|| majority_node(&ranges, num_nodes))
                    .flatten()
                    .filter(|&n| !of_node[n].is_empty());
                let (list, turn) = match node {
                    Some(n) => (&of_node[n], &mut turns[n]),
                    None => (&everyone, &mut turns[num_nodes]),
                };
                let worker = list[*turn % list.len()];
                *turn += 1;
                Some(worker)
            })
            .collect()
    }

    /// Runs every group as tasks in `scope` (a detached job of the runtime), and returns when
    /// they all ended: `Err` if one panicked.
    pub(crate) fn run(
        self: Box<Self>,
        scope: &Scope<'static>,
        _context: &ContextInner,
    ) -> Result<(), Failure> {
        let launch: Arc<Launch> = Arc::from(self);
        let result = panic::catch_unwind(AssertUnwindSafe(|| {
            if launch.tasks == 1 {
                launch.run_groups(0..launch.geometry.num_groups);
                return;
            }
            scope.taskgroup(|s| {
                for t in 0..launch.tasks {
                    let groups = launch.groups_of(t);
                    let l = Arc::clone(&launch);
                    let mut task = s.task().affinity(launch.footprint(&groups));
                    if let Some(&Some(worker)) = launch.preferred.get(t) {
                        task = task.prefer_worker(worker);
                    }
                    task.label(launch.kernel.inner.name)
                        .spawn(move |_| l.run_groups(groups));
                }
            });
        }));
        result.map_err(|payload| {
            Failure::new(FailureKind::Panicked {
                command: format!("kernel '{}'", launch.kernel.inner.name),
                message: Failure::panic_message(&*payload),
            })
        })
    }

    /// Runs groups `groups` on this thread.
    fn run_groups(&self, groups: Range<usize>) {
        with_arena(self.local_bytes, |arena| {
            for g in groups {
                let id = self.geometry.group_id(g);
                let group = WorkGroup {
                    geometry: &self.geometry,
                    id,
                    size: self.geometry.group_size(id),
                };
                if self.local_bytes > 0 {
                    // SAFETY: the arena has `local_bytes` bytes; zero is a valid value of every
                    // element type (`Element: Zeroable`).
                    unsafe { arena.write_bytes(0, self.local_bytes) };
                }
                let args = GroupArgs {
                    args: &self.args,
                    modes: &self.modes,
                    group: &group,
                    local: arena,
                    local_offsets: &self.local_offsets,
                    taken: Cell::new(0),
                };
                (self.kernel.inner.body)(&group, &args);
            }
        })
    }
}

/// The node whose workers a task with the footprint `ranges` (address, length) prefers: the
/// one holding more than half of their known bytes, if one does (the allocator's placement
/// registry says where pages are).
fn majority_node(ranges: &[(usize, usize)], num_nodes: usize) -> Option<usize> {
    let mut bytes = NodeBytes::new(num_nodes);
    for &(addr, len) in ranges {
        accumulate_node_bytes(std::ptr::without_provenance(addr), len, &mut bytes);
    }
    let node = bytes.dominant_node()?;
    (bytes.on(node) > bytes.known() / 2).then_some(node)
}

#[repr(C, align(64))]
#[derive(Clone, Copy)]
struct Line([u8; LOCAL_ALIGN]);

thread_local! {
    /// Each worker's local-memory arena, reused by the groups it runs.
    static ARENA: RefCell<Vec<Line>> = const { RefCell::new(Vec::new()) };
}

/// Runs `f` with a 64-byte aligned arena of at least `bytes` bytes. The arena is taken out of
/// the thread's slot while `f` runs, so that a group that (through a nested wait) runs
/// another group on this thread gets an arena of its own.
fn with_arena<R>(bytes: usize, f: impl FnOnce(*mut u8) -> R) -> R {
    let mut arena = ARENA.with(|a| std::mem::take(&mut *a.borrow_mut()));
    let lines = bytes.div_ceil(LOCAL_ALIGN);
    if arena.len() < lines {
        arena.resize(lines, Line([0; LOCAL_ALIGN]));
    }
    let r = f(arena.as_mut_ptr().cast());
    ARENA.with(|a| {
        let mut slot = a.borrow_mut();
        if slot.len() < arena.len() {
            *slot = arena;
        }
    });
    r
}
