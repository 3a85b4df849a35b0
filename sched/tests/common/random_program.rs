//! A random program of dependent tasks and its oracle, run through the runtime: shared by
//! `depend_runtime.rs` (work stealing, plain memory) and `locality.rs` (the locality-aware
//! scheduler on the 8-node preset, memory whose footprints it deals). See `depend_runtime.rs`
//! for what is checked.

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicUsize, Ordering};

use numatask_sched::Runtime;
use numatask_sched::depend::{Access, AccessKind};

/// Cells of the buffer.
pub const CELLS: usize = 1024;
/// Ranges in the pool tasks draw their accesses from.
const POOL: usize = 300;
/// Most cells in one range.
const MAX_RANGE: usize = 24;
/// Most accesses of one task.
const MAX_ACCESSES: usize = 4;

/// SplitMix64.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

/// One task of the program.
#[derive(Clone, Copy)]
pub struct Spec {
    /// `(first cell, cells, kind)` of each access.
    accesses: [(usize, usize, AccessKind); MAX_ACCESSES],
    count: usize,
    /// What the task must see: the hash of the stamps of its cells, in declaration order.
    expect: u64,
    /// The task panics (after its check, before it writes).
    pub panics: bool,
    /// The oracle says it is cancelled: a task it depends on panicked or was cancelled.
    pub cancelled: bool,
}

fn mix(hash: u64, cell: usize, stamp: u32) -> u64 {
    (hash ^ ((cell as u64) << 32 | u64::from(stamp))).wrapping_mul(0x100_0000_01B3)
}

/// A random program of `n` tasks, `panics` of which panic, and its oracle.
pub fn program(seed: u64, n: usize, panics: usize) -> Vec<Spec> {
    let mut rng = Rng(seed);
    let pool: Vec<(usize, usize)> = (0..POOL)
        .map(|_| {
            let len = 1 + rng.below(MAX_RANGE);
            (rng.below(CELLS - len + 1), len)
        })
        .collect();
    // In the last tenth of the program: poison spreads to most later tasks quickly.
    let panicking: Vec<usize> = (0..panics).map(|_| n - 1 - rng.below(n / 10)).collect();
    // Per cell: the last writer that ran (its stamp), whether the last writer group is
    // poisoned, and whether a poisoned reader came since.
    let mut stamp = vec![0u32; CELLS];
    let mut writer_poisoned = vec![false; CELLS];
    let mut readers_poisoned = vec![false; CELLS];
    let mut specs = Vec::with_capacity(n);
    for id in 0..n {
        let count = 1 + rng.below(MAX_ACCESSES);
        let mut accesses = [(0, 0, AccessKind::In); MAX_ACCESSES];
        for a in accesses.iter_mut().take(count) {
            let (start, len) = pool[rng.below(POOL)];
            let kind = match rng.below(3) {
                0 => AccessKind::In,
                1 => AccessKind::Out,
                _ => AccessKind::InOut,
            };
            *a = (start, len, kind);
        }
        let accesses_of = || accesses[..count].iter();
        // Whether the task writes each cell (overlapping declarations merge, writes win).
        let mut writes = std::collections::BTreeMap::new();
        for &(start, len, kind) in accesses_of() {
            for cell in start..start + len {
                *writes.entry(cell).or_insert(false) |= kind.writes();
            }
        }
        let cancelled = writes
            .iter()
            .any(|(&cell, &w)| writer_poisoned[cell] || (w && readers_poisoned[cell]));
        let mut expect = 0xCBF2_9CE4_8422_2325;
        for &(start, len, _) in accesses_of() {
            for (cell, &st) in stamp.iter().enumerate().skip(start).take(len) {
                expect = mix(expect, cell, st);
            }
        }
        let panics = !cancelled && panicking.contains(&id);
        let poisoned = cancelled || panics;
        for (&cell, &w) in &writes {
            if w {
                if !poisoned {
                    stamp[cell] = id as u32 + 1;
                }
                writer_poisoned[cell] = poisoned;
                readers_poisoned[cell] = false;
            } else {
                readers_poisoned[cell] |= poisoned;
            }
        }
        specs.push(Spec {
            accesses,
            count,
            expect,
            panics,
            cancelled,
        });
    }
    specs
}

/// What running a program observed.
pub struct Observed {
    /// Tasks that saw other stamps than their predecessors'.
    pub wrong: AtomicUsize,
    /// Whether each task ran.
    pub ran: Vec<AtomicBool>,
}

/// Runs `specs` on `rt` with the cells in `memory`: cell `c` is the `stride` atomics from
/// `memory[c * stride]` (its stamp is the first of them; a task declares whole cells), so that
/// a stride of many pages makes footprints a locality-aware scheduler deals. Returns what was
/// observed and the scope's panic message, if any.
pub fn run_on(
    specs: &[Spec],
    rt: &Runtime,
    memory: &[AtomicU32],
    stride: usize,
) -> (Observed, Option<String>) {
    assert!(
        stride >= 1 && memory.len() >= CELLS * stride,
        "memory for {CELLS} cells"
    );
    for c in memory {
        c.store(0, Ordering::Relaxed);
    }
    let cells: Vec<&AtomicU32> = (0..CELLS).map(|c| &memory[c * stride]).collect();
    let observed = Observed {
        wrong: AtomicUsize::new(0),
        ran: (0..specs.len()).map(|_| AtomicBool::new(false)).collect(),
    };
    let base = memory.as_ptr() as usize;
    let cell_bytes = stride * size_of::<AtomicU32>();
    let result = catch_unwind(AssertUnwindSafe(|| {
        rt.scope(|s| {
            let (cells, observed) = (&cells, &observed);
            s.spawn(move |s| {
                for (id, spec) in specs.iter().enumerate() {
                    let deps: Vec<Access> = spec.accesses[..spec.count]
                        .iter()
                        .map(|&(start, len, kind)| {
                            Access::new(base + start * cell_bytes, len * cell_bytes, kind)
                        })
                        .collect();
                    let spec = *spec;
                    let body = move |_: &numatask_sched::Scope<'_>| {
                        observed.ran[id].store(true, Ordering::Relaxed);
                        let accesses = &spec.accesses[..spec.count];
                        let mut seen = 0xCBF2_9CE4_8422_2325;
                        for &(start, len, _) in accesses {
                            for (cell, c) in cells.iter().enumerate().skip(start).take(len) {
                                seen = mix(seen, cell, c.load(Ordering::Relaxed));
                            }
                        }
                        if seen != spec.expect {
                            observed.wrong.fetch_add(1, Ordering::Relaxed);
                        }
                        if spec.panics {
                            panic!("task {id} panics on purpose");
                        }
                        for &(start, len, kind) in accesses {
                            if kind.writes() {
                                for c in &cells[start..start + len] {
                                    c.store(id as u32 + 1, Ordering::Relaxed);
                                }
                            }
                        }
                    };
                    // SAFETY: the body touches only the cells it declares (atomics, so even a
                    // runtime bug could not make this a data race), which outlive the scope.
                    unsafe { s.task().depend(&deps).spawn(body) };
                    if id % 25_000 == 24_999 {
                        // Resumes a panic of the tasks so far, if any: keep going.
                        let _ = catch_unwind(AssertUnwindSafe(|| s.taskwait()));
                    }
                }
            });
        })
    }));
    let message = result.err().map(|payload| {
        payload
            .downcast_ref::<&str>()
            .map(|s| s.to_string())
            .or_else(|| payload.downcast_ref::<String>().cloned())
            .unwrap_or_default()
    });
    (observed, message)
}
