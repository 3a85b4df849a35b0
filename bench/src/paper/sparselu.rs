//! SparseLU (Table 4: "LU factorization of sparse matrix, derived from BOTS SparseLU", heuristic
//! coarse): the BOTS block LU factorization of an `nb x nb` block matrix with the BOTS pattern of
//! null blocks, one task per block operation (lu0, fwd, bdiv, bmod) declaring its blocks
//! (`in` the blocks it reads, `inout` the one it updates; `bmod`'s updated block is marked
//! access-intensive, as the paper's Figure 9 runs SparseLU "with the intensity heuristic
//! enabled for tasks executing the bmod function"). The kernels are the C kernels of
//! `c/sparselu_kernels.c` (compiled by the crate's `build.rs`, declared in [`crate::ffi`]), the same machine code as
//! the `sparselu` bench and its OpenMP peers.
//!
//! As in BOTS, every block is its own allocation: the initially present blocks in row-major
//! order, then the fill-in blocks in the order the factorization creates them. BOTS allocates
//! a fill-in block in the task-creating thread just before the `bmod` that needs it; here the
//! fill-in pattern is computed first and the fill-in blocks are allocated in that same order
//! before the parallel section (so that the safe depend API can borrow them), which gives every
//! block the node it would get from BOTS under coarse distribution. They are zeroed by the main
//! thread, as BOTS's `allocate_clean_block` does.
//!
//! Verified bit for bit against the kernels run sequentially in program order.

use std::ffi::c_int;
use std::sync::{Arc, Mutex};

use numatask::alloc::{Distribution, NumaVec};
use numatask::sched::depend::{Access, AccessKind};
use numatask::sched::{DependError, Runtime};

use super::cost_model::{Probe, timed};
use super::{BoxError, Instance, Size, alloc, first_difference, size_text, whole};
use crate::ffi::sparselu as kernels;

/// SparseLU's input.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Params {
    /// Blocks per dimension.
    pub nb: usize,
    /// Block size (rows = columns).
    pub bs: usize,
}

impl Params {
    /// Figure 7's input is 8192 x 8192 with blocks of 256. BOTS's generator (an LCG modulo
    /// 2^16) makes blocks of a power-of-two size numerically singular (the factorization
    /// overflows to NaN), so `Large` is the nearest size that factorizes: 8000 x 8000 with
    /// blocks of 250. A `bmod` (three blocks of 244 KiB) stays below the paper machine's
    /// `LLC / C` (853 KiB) there, so Algorithm 1 never deals SparseLU's tasks, then as now.
    pub fn of(size: Size) -> Params {
        match size {
            Size::Tiny => Params { nb: 4, bs: 16 },
            Size::Small => Params { nb: 12, bs: 75 },
            Size::Medium => Params { nb: 24, bs: 150 },
            Size::Large => Params { nb: 32, bs: 250 },
        }
    }
}

/// A block operation of the factorization.
#[derive(Clone, Copy, Debug)]
enum Op {
    Lu0 {
        diag: usize,
    },
    Fwd {
        diag: usize,
        col: usize,
    },
    Bdiv {
        diag: usize,
        row: usize,
    },
    Bmod {
        row: usize,
        col: usize,
        inner: usize,
    },
}

/// The factorization's operations in program order, on block indices `ii * nb + jj`, given
/// which blocks are present at the start. The `bmod` that creates a fill-in block comes first
/// among the operations on that block.
fn program(nb: usize, initially_present: &[bool]) -> Vec<Op> {
    let mut present = initially_present.to_vec();
    let mut ops = Vec::new();
    for kk in 0..nb {
        let diag = kk * nb + kk;
        ops.push(Op::Lu0 { diag });
        for jj in kk + 1..nb {
            if present[kk * nb + jj] {
                ops.push(Op::Fwd {
                    diag,
                    col: kk * nb + jj,
                });
            }
        }
        for ii in kk + 1..nb {
            if present[ii * nb + kk] {
                ops.push(Op::Bdiv {
                    diag,
                    row: ii * nb + kk,
                });
            }
        }
        for ii in kk + 1..nb {
            if !present[ii * nb + kk] {
                continue;
            }
            for jj in kk + 1..nb {
                if present[kk * nb + jj] {
                    present[ii * nb + jj] = true;
                    ops.push(Op::Bmod {
                        row: ii * nb + kk,
                        col: kk * nb + jj,
                        inner: ii * nb + jj,
                    });
                }
            }
        }
    }
    ops
}

/// The initial value of every present block (BOTS's generator, row-major seed sequence).
fn generate(p: &Params, present: &[bool]) -> Vec<Option<Vec<f32>>> {
    let mut seed = kernels::seed();
    present
        .iter()
        .map(|&here| {
            here.then(|| {
                let mut block = vec![0.0; p.bs * p.bs];
                kernels::fill(&mut block, p.bs, &mut seed);
                block
            })
        })
        .collect()
}

/// The factorized matrix, computed sequentially once per `Params`.
fn reference(p: &Params, present: &[bool], ops: &[Op]) -> Arc<Vec<Option<Vec<f32>>>> {
    type Cache = Mutex<Vec<(Params, Arc<Vec<Option<Vec<f32>>>>)>>;
    static CACHE: Cache = Mutex::new(Vec::new());
    let mut cache = CACHE.lock().unwrap_or_else(|e| e.into_inner());
    if let Some((_, m)) = cache.iter().find(|(q, _)| q == p) {
        return Arc::clone(m);
    }
    let mut blocks = generate(p, present);
    let n = p.bs * p.bs;
    // Blocks are taken out while an operation uses them, so that the borrows are distinct; a
    // fill-in block starts as zeroes.
    for op in ops {
        let mut get = |i: usize| blocks[i].take().unwrap_or_else(|| vec![0.0; n]);
        match *op {
            Op::Lu0 { diag } => {
                let mut d = get(diag);
                kernels::lu0(&mut d, p.bs);
                blocks[diag] = Some(d);
            }
            Op::Fwd { diag, col } => {
                let (d, mut c) = (get(diag), get(col));
                kernels::fwd(&d, &mut c, p.bs);
                blocks[diag] = Some(d);
                blocks[col] = Some(c);
            }
            Op::Bdiv { diag, row } => {
                let (d, mut r) = (get(diag), get(row));
                kernels::bdiv(&d, &mut r, p.bs);
                blocks[diag] = Some(d);
                blocks[row] = Some(r);
            }
            Op::Bmod { row, col, inner } => {
                let (r, c, mut x) = (get(row), get(col), get(inner));
                kernels::bmod(&r, &c, &mut x, p.bs);
                blocks[row] = Some(r);
                blocks[col] = Some(c);
                blocks[inner] = Some(x);
            }
        }
    }
    let m = Arc::new(blocks);
    cache.push((*p, Arc::clone(&m)));
    m
}

/// SparseLU's data.
pub struct SparseLu {
    params: Params,
    /// Which blocks the generator fills.
    initially_present: Vec<bool>,
    /// The operations in program order.
    ops: Vec<Op>,
    /// Block index -> position in `storage` (for every block present at the end).
    slot: Vec<Option<usize>>,
    /// One allocation per block, in allocation order.
    storage: Vec<NumaVec<f32>>,
}

impl SparseLu {
    /// One allocation per block that is present or filled in, in BOTS's allocation order, with
    /// `distribution`.
    pub fn new(params: Params, distribution: Distribution) -> Result<SparseLu, BoxError> {
        let (nb, bs) = (params.nb, params.bs);
        if c_int::try_from(nb).is_err() || c_int::try_from(bs).is_err() || nb == 0 || bs == 0 {
            return Err(format!("sparselu: bad parameters {params:?}").into());
        }
        let initially_present: Vec<bool> = (0..nb * nb)
            .map(|i| kernels::present(nb, i / nb, i % nb))
            .collect();
        let ops = program(nb, &initially_present);
        let mut order: Vec<usize> = (0..nb * nb).filter(|&i| initially_present[i]).collect();
        for op in &ops {
            if let Op::Bmod { inner, .. } = *op
                && !initially_present[inner]
                && !order.contains(&inner)
            {
                order.push(inner);
            }
        }
        let mut slot = vec![None; nb * nb];
        let mut storage = Vec::with_capacity(order.len());
        for (position, &block) in order.iter().enumerate() {
            slot[block] = Some(position);
            storage.push(alloc(bs * bs, distribution)?);
        }
        Ok(SparseLu {
            params,
            initially_present,
            ops,
            slot,
            storage,
        })
    }

    fn count(&self, pick: impl Fn(&Op) -> bool) -> usize {
        self.ops.iter().filter(|op| pick(op)).count()
    }
}

impl Instance for SparseLu {
    fn describe(&self) -> String {
        let p = &self.params;
        let present = self.initially_present.iter().filter(|&&b| b).count();
        format!(
            "sparselu: {nb} x {nb} blocks of {bs} x {bs} floats ({} each), {present} present + \
             {} fill-in (one allocation per block), {} tasks ({} bmod)",
            size_text(p.bs * p.bs * 4),
            self.storage.len() - present,
            self.ops.len(),
            self.count(|op| matches!(op, Op::Bmod { .. })),
            nb = p.nb,
            bs = p.bs
        )
    }

    fn init(&mut self) {
        let initial = generate(&self.params, &self.initially_present);
        for (block, value) in initial.into_iter().enumerate() {
            if let Some(position) = self.slot[block] {
                match value {
                    Some(v) => self.storage[position].copy_from_slice(&v),
                    None => self.storage[position].fill(0.0),
                }
            }
        }
    }

    fn compute(&mut self, rt: &Runtime, probe: Option<&Probe>) -> Result<(), DependError> {
        let bs = self.params.bs;
        let (ops, slot, storage) = (&self.ops, &self.slot, &mut self.storage);
        rt.scope(|s| {
            let handles = whole(storage)?;
            let block = |i: usize| {
                slot[i]
                    .map(|position| &handles[position][0])
                    .ok_or(DependError::InvalidSetting {
                        setting: "sparselu block",
                        value: i.to_string(),
                        expected: "a block that is present or filled in",
                    })
            };
            let in_ = |x: &[f32]| Access::of_slice(x, AccessKind::In);
            let inout = |x: &[f32]| Access::of_slice(x, AccessKind::InOut);
            for op in ops {
                match *op {
                    Op::Lu0 { diag } => {
                        s.task()
                            .updates(block(diag)?)
                            .label("lu0")
                            .spawn(move |s, (d,)| {
                                timed(probe, s, "lu0", &[inout(d)], || kernels::lu0(d, bs));
                            })?
                    }
                    Op::Fwd { diag, col } => s
                        .task()
                        .reads(block(diag)?)
                        .updates(block(col)?)
                        .label("fwd")
                        .spawn(move |s, (d, c)| {
                            timed(probe, s, "fwd", &[in_(d), inout(c)], || {
                                kernels::fwd(d, c, bs)
                            });
                        })?,
                    Op::Bdiv { diag, row } => s
                        .task()
                        .reads(block(diag)?)
                        .updates(block(row)?)
                        .label("bdiv")
                        .spawn(move |s, (d, r)| {
                            timed(probe, s, "bdiv", &[in_(d), inout(r)], || {
                                kernels::bdiv(d, r, bs)
                            });
                        })?,
                    Op::Bmod { row, col, inner } => s
                        .task()
                        .reads(block(row)?)
                        .reads(block(col)?)
                        .updates(block(inner)?)
                        .intensive()
                        .label("bmod")
                        .spawn(move |s, (r, c, x)| {
                            timed(probe, s, "bmod", &[in_(r), in_(c), inout(x)], || {
                                kernels::bmod(r, c, x, bs)
                            });
                        })?,
                }
            }
            Ok(())
        })
    }

    fn verify(&self) -> Result<String, String> {
        let want = reference(&self.params, &self.initially_present, &self.ops);
        if want.iter().flatten().flatten().any(|x| !x.is_finite()) {
            return Err(format!(
                "{:?} does not factorize (the sequential result overflows): choose other sizes",
                self.params
            ));
        }
        let mut sum = 0.0f64;
        for (i, want) in want.iter().enumerate() {
            match (self.slot[i], want) {
                (Some(position), Some(want)) => {
                    let got = &self.storage[position];
                    first_difference(&format!("block {i}"), got, want)?;
                    for (k, &x) in got.iter().enumerate() {
                        sum += f64::from(x) * ((i + k) % 7 + 1) as f64;
                    }
                }
                (None, None) => {}
                _ => return Err(format!("block {i} is present in one result only")),
            }
        }
        Ok(format!("{sum:.6e}"))
    }
}
