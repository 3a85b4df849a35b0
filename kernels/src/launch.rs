//! Launches: a kernel, its checked arguments and NDRange, divided into tasks of consecutive
//! work-groups that run on the runtime, each with the footprint of its groups.
//!
//! Under the locality-aware scheduler each task also prefers a worker
//! ([`TaskBuilder::prefer_worker`]), chosen from its footprint and its index alone, so that
//! task `i` of consecutive launches over the same buffers prefers the same worker, whose cache
//! may still hold what task `i` of the last launch left there: a worker of the node holding
//! most of the task's main part (when that node holds more than half of it; tasks over spread
//! data, or over memory whose node nobody knows, go to any worker), the tasks of each node
//! taking that node's workers in turn. A busy worker's tasks are taken by idle ones of its
//! node, so the preference never holds a launch back. Under work stealing tasks prefer no
//! worker: a preferred worker that the OS has taken off its core holds its tasks until it runs
//! again, which costs small launches on a loaded machine (measured on two shared cores:
//! saxpy of 65,536 floats from 15 - 21 us to 65 - 100 us with every task preferring a worker),
//! a price paid only where placement is asked for.
//!
//! [`TaskBuilder::prefer_worker`]: numatask_sched::TaskBuilder::prefer_worker

use std::cell::RefCell;
use std::ops::Range;
use std::panic::{self, AssertUnwindSafe};
use std::sync::Arc;

use numatask_alloc::{NodeBytes, accumulate_node_bytes};
use numatask_sched::depend::{Access, AccessKind};
use numatask_sched::{Footprint, Runtime, Scope};

use crate::command::BufferUse;
use crate::context::ContextInner;
use crate::error::{Error, Failure, FailureKind};
use crate::kernel::{
    Arg, ArgValue, Body, FootprintQuery, GroupArgs, GroupRun, Kernel, Mode, ParamKind, TaskArgs,
    WorkGroup,
};
use crate::ndrange::{Geometry, NdRange};

/// Alignment of local memory (a cache line; enough for every element type of a buffer).
pub(crate) const LOCAL_ALIGN: usize = 64;

/// Parameters of a kernel, at most (each group hands out one exclusive view per argument,
/// tracked in a 64-bit mask).
pub const MAX_ARGS: usize = 64;

/// Tasks per worker a launch is divided into by default, when it has 16 groups for each
/// (fewer tasks when it has fewer groups, down to four per worker):
/// enough that the worker that ends last ends little after the others. With four, on 16
/// cores, the first worker to run out of tasks waited for the last a fifth of a launch of
/// equal groups (a tiled transpose of 4096 x 4096, 3.2 - 3.9 ms); with sixteen, 5 - 8%, and
/// the launch took 14% less.
pub const TASKS_PER_WORKER: usize = 16;

/// Fewest groups a task gets by default, so that a launch of small groups is not divided
/// into tasks that each cost more to spawn and steal than their groups to run.
const GROUPS_PER_TASK: usize = 16;

/// Tasks per worker of a launch with fewer than [`GROUPS_PER_TASK`] groups per task at
/// [`TASKS_PER_WORKER`] (as long as it has a group for each).
const MIN_TASKS_PER_WORKER: usize = 4;

/// A checked launch, ready to run.
pub(crate) struct Launch {
    kernel: Kernel,
    args: Vec<ArgValue>,
    modes: Vec<ParamKind>,
    geometry: Geometry,
    /// Each local argument's offset in the group's arena (0 for other arguments).
    local_offsets: Vec<usize>,
    local_bytes: usize,
    /// The arena's bytes: the local arguments, then a compiled kernel's local arrays and
    /// expanded variables.
    arena_bytes: usize,
    /// Whether the groups run in the kernel's reference form (a thread per work-item).
    reference: bool,
    tasks: usize,
    /// Whether the runtime places tasks by their footprints (the locality-aware scheduler).
    placed: bool,
    /// Each task's footprint and preferred worker (module docs), computed once when the launch
    /// is checked; empty unless placed (work stealing ignores both).
    placement: Vec<(Footprint, Option<usize>)>,
}

impl Launch {
    /// Checks `args` against `kernel`'s parameters and `range` against the context's limits;
    /// returns the launch and the accesses its command declares on its buffers.
    pub(crate) fn check(
        context: &ContextInner,
        runtime: &Runtime,
        kernel: &Kernel,
        range: &NdRange,
        args: Vec<Arg>,
        tasks: Option<usize>,
        reference: bool,
    ) -> Result<(Launch, Vec<Access>), Error> {
        let k = &kernel.inner;
        if k.params.len() > MAX_ARGS {
            return Err(Error::Setting(format!(
                "kernel '{}' has {} parameters; a kernel takes at most {MAX_ARGS}",
                k.name,
                k.params.len()
            )));
        }
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
        let workers = runtime.num_workers();
        let geometry = range.resolve(limits.max_work_group_size, item_bytes, workers)?;
        // Buffers: long enough, not aliased with a written one.
        let mut accesses = Vec::new();
        for (i, (arg, param)) in args.iter().zip(&k.params).enumerate() {
            let (ArgValue::Buffer(b), ParamKind::Buffer(mode)) = (&arg.0, param.kind) else {
                continue;
            };
            // A compiled kernel checks each index it writes; other kernels' work-items get
            // their own elements.
            if mode.writes() && k.compiled.is_none() && b.len < geometry.num_items {
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
                let start = local_bytes.checked_next_multiple_of(LOCAL_ALIGN);
                let bytes = t.size.checked_mul(*len).and_then(|b| b.checked_add(start?));
                match bytes {
                    Some(end) if end <= limits.local_mem_size && t.align <= LOCAL_ALIGN => {
                        local_offsets[i] = end - t.size * len;
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
        // A compiled kernel's local arrays count as local memory; its expanded variables do
        // not (they are the work-items' private memory).
        let mut arena_bytes = local_bytes;
        if let Some(c) = &k.compiled {
            let start = local_bytes.checked_next_multiple_of(LOCAL_ALIGN);
            let with_arrays = c.scratch.fixed_bytes().and_then(|f| start?.checked_add(f));
            match with_arrays {
                Some(end) if end <= limits.local_mem_size => arena_bytes = end,
                _ => {
                    return Err(Error::LocalMemory {
                        kernel: k.name,
                        bytes: with_arrays.unwrap_or(usize::MAX),
                        max: limits.local_mem_size,
                    });
                }
            }
            let items = geometry.local.iter().product::<usize>();
            arena_bytes = c
                .scratch
                .slot_bytes(items)
                .and_then(|s| arena_bytes.checked_add(s))
                .ok_or_else(|| {
                    Error::Setting(format!(
                        "kernel '{}': its per-work-item variables overflow for groups of {items}",
                        k.name
                    ))
                })?;
        } else if reference {
            return Err(Error::Setting(format!(
                "kernel '{}' has no reference form: only #[kernel] kernels have one",
                k.name
            )));
        }
        let tasks = match tasks {
            _ if reference => 1,
            Some(0) => return Err(Error::Setting("a launch needs at least one task".into())),
            Some(n) => n,
            None => (geometry.num_groups / GROUPS_PER_TASK).clamp(
                workers.saturating_mul(MIN_TASKS_PER_WORKER),
                workers.saturating_mul(TASKS_PER_WORKER),
            ),
        }
        .min(geometry.num_groups)
        .max(1);
        let modes = k.params.iter().map(|p| p.kind).collect();
        let placed = runtime.settings().scheduler.reads_footprints();
        let mut launch = Launch {
            kernel: kernel.clone(),
            args: args.into_iter().map(|a| a.0).collect(),
            modes,
            geometry,
            local_offsets,
            local_bytes,
            arena_bytes,
            reference,
            tasks,
            placed,
            placement: Vec::new(),
        };
        if placed {
            launch.placement = launch.placement(runtime);
        }
        Ok((launch, accesses))
    }

    /// How it uses its buffers: each whole, read unless the kernel only writes it.
    pub(crate) fn buffers(&self) -> Vec<BufferUse> {
        self.args
            .iter()
            .zip(&self.modes)
            .filter_map(|(a, m)| match (a, m) {
                (ArgValue::Buffer(b), ParamKind::Buffer(mode)) => Some(BufferUse {
                    buffer: Arc::clone(b),
                    range: 0..b.len,
                    // A work-item of a write-only argument gets `&mut` to its element, which
                    // it may read: the launch counts as reading it.
                    reads: true,
                    writes: mode.writes(),
                }),
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

    /// Each buffer argument's part of the footprint of the groups `groups`, as (address,
    /// bytes, written): the elements the kernel's footprint function names (by default, the
    /// groups' share of the buffer).
    fn footprint_parts(&self, groups: &Range<usize>) -> Vec<(usize, usize, bool)> {
        let total = self.geometry.num_groups;
        let mut parts = Vec::new();
        for (i, (arg, mode)) in self.args.iter().zip(&self.modes).enumerate() {
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
                let written = matches!(mode, ParamKind::Buffer(m) if m.writes());
                parts.push((
                    b.ptr as usize + range.start * b.elem_size,
                    (range.end - range.start) * b.elem_size,
                    written,
                ));
            }
        }
        parts
    }

    /// Each task's footprint, its main part marked as the one that decides, and the worker it
    /// prefers (module docs): a function of the tasks' footprints and the runtime's workers,
    /// the same for every launch that has them. A task goes to the node of its main part (as
    /// the scheduler deals it), and prefers that node's workers in turn. A task without a
    /// footprint (a kernel without buffers) prefers none: no cache holds anything of it.
    fn placement(&self, runtime: &Runtime) -> Vec<(Footprint, Option<usize>)> {
        let workers = runtime.workers();
        let num_nodes = runtime.topology().num_nodes().max(1);
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
                let parts = self.footprint_parts(&self.groups_of(t));
                let Some(main) = main_part(&parts) else {
                    return (Footprint::new(), None);
                };
                let mut footprint = Footprint::new();
                for (i, &(addr, len, _)) in parts.iter().enumerate() {
                    if i != main {
                        footprint = footprint.bytes(addr, len);
                    }
                }
                let (addr, len, _) = parts[main];
                footprint = footprint.bytes(addr, len).intensive();
                let node = (num_nodes > 1)
                    .then(|| majority_node(&[(addr, len)], num_nodes))
                    .flatten()
                    .filter(|&n| !of_node[n].is_empty());
                let (list, turn) = match node {
                    Some(n) => (&of_node[n], &mut turns[n]),
                    None => (&everyone, &mut turns[num_nodes]),
                };
                if list.is_empty() {
                    return (footprint, None);
                }
                let worker = list[*turn % list.len()];
                *turn += 1;
                (footprint, Some(worker))
            })
            .collect()
    }

    /// Runs every group as tasks in `scope` (a detached job of the runtime), and returns when
    /// they all ended: `Err` if one panicked.
    pub(crate) fn run(mut self: Box<Self>, scope: &Scope<'static>) -> Result<(), Failure> {
        let mut placement = std::mem::take(&mut self.placement).into_iter();
        let launch: Arc<Launch> = Arc::from(self);
        let result = panic::catch_unwind(AssertUnwindSafe(|| {
            // One task runs right here, unless the scheduler would place it by its data.
            if launch.tasks == 1 && !launch.placed {
                launch.run_groups(0..launch.geometry.num_groups);
                return;
            }
            scope.taskgroup(|s| {
                if !launch.placed {
                    return split(s, &launch, 0..launch.tasks);
                }
                for t in 0..launch.tasks {
                    let groups = launch.groups_of(t);
                    let l = Arc::clone(&launch);
                    let mut task = s.task();
                    if let Some((footprint, preferred)) = placement.next() {
                        task = task.affinity(footprint);
                        if let Some(worker) = preferred {
                            task = task.prefer_worker(worker);
                        }
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
        if self.reference
            && let Some(c) = &self.kernel.inner.compiled
        {
            return self.run_group_fn(&*c.reference, groups);
        }
        let f = match &*self.kernel.inner.body {
            Body::Items(f) => f,
            Body::Groups(f) => return self.run_group_fn(f, groups),
            Body::Compiled(f) => return self.with_group_run(groups, |run| f(run)),
        };
        let args = TaskArgs {
            args: &self.args,
            modes: &self.modes,
        };
        f(&args, &self.geometry, groups);
    }

    /// Runs groups `groups` of a work-group function on this thread.
    fn run_group_fn(
        &self,
        f: &(dyn Fn(&WorkGroup<'_>, &GroupArgs<'_>) + Send + Sync),
        groups: Range<usize>,
    ) {
        self.with_group_run(groups, |run| run.for_each(f))
    }

    /// Calls `run` with groups `groups` of this launch and this thread's arena.
    fn with_group_run<R>(&self, groups: Range<usize>, run: impl FnOnce(&GroupRun<'_>) -> R) -> R {
        let scratch_offset = self.local_bytes.next_multiple_of(LOCAL_ALIGN);
        with_arena(self.arena_bytes, |arena| {
            run(&GroupRun {
                geometry: &self.geometry,
                groups,
                args: &self.args,
                modes: &self.modes,
                local: arena,
                local_offsets: &self.local_offsets,
                scratch_offset: scratch_offset.min(self.arena_bytes),
                arena_bytes: self.arena_bytes,
            })
        })
    }
}

/// Runs tasks `tasks` of `launch` under work stealing: halves them, spawns a task for the
/// upper half (which halves its part in turn) and goes on with the lower, running the last
/// task itself. Thieves take half of what is left at once, and the tasks are spawned, and
/// sleeping workers woken, by every worker that takes some, not all by one: a flat loop
/// spawning every task from one worker left that worker waking the others one after the
/// other.
fn split(s: &Scope<'static>, launch: &Arc<Launch>, mut tasks: Range<usize>) {
    while tasks.len() > 1 {
        let mid = tasks.start + tasks.len() / 2;
        let upper = mid..tasks.end;
        let l = Arc::clone(launch);
        s.task()
            .label(launch.kernel.inner.name)
            .spawn(move |s| split(s, &l, upper));
        tasks.end = mid;
    }
    launch.run_groups(launch.groups_of(tasks.start));
}

/// The part of a footprint that decides a task's node: the largest written part, else the
/// largest. Algorithm 1 weighs an access marked intensive first, whatever the task's size, so
/// a group is dealt where its data lives even when a task's bytes are fewer than a cache
/// holds, the size under which a plain task stays where it was spawned.
fn main_part(parts: &[(usize, usize, bool)]) -> Option<usize> {
    (0..parts.len()).max_by_key(|&i| (parts[i].2, parts[i].1))
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
        // A failed allocation fails the launch (this panic becomes its event's failure)
        // rather than aborting the process.
        if arena.try_reserve_exact(lines - arena.len()).is_err() {
            panic!("local memory of {bytes} bytes per work-group could not be allocated");
        }
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
