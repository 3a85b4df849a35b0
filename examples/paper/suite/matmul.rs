//! Matmul (Table 4: "blocked matrix multiplication with BLAS operations in task computation",
//! heuristic coarse): `C = A B` on `nb x nb` blocks of `bs x bs` floats, every block its own
//! allocation (A's blocks row by row, then B's, then C's). As in the paper, one task per block of
//! C computes `C(i, j) += A(i, k) B(k, j)` for every `k`: it reads a row of blocks of A and a
//! column of blocks of B and updates one block of C. The block product is a plain i-k-j loop
//! the compiler vectorizes, not a BLAS call.
//!
//! A task's depend list has `2 nb + 1` entries, more than the safe task builder's eight, so the
//! tasks are spawned through the raw `Scope::spawn_depend` on the blocks' byte ranges.
//!
//! With coarse distribution and `nb` a multiple of the node count, all of B's column `j` and
//! `C(i, j)` lie on node `j mod nodes` while A's row is spread evenly: the locality-aware
//! scheduler runs the task there and half of its bytes are local.
//!
//! The entries are small integers, so every sum is exact in f32 whatever the order, and the
//! result is verified exactly with Freivalds' check in integers: `C x = A (B x)` for two random
//! integer vectors `x`.

use numatask::alloc::{Distribution, NumaVec};
use numatask::sched::depend::{Access, AccessKind};
use numatask::sched::{Runtime, SchedError};

use super::cost_model::{Probe, timed};
use super::{BoxError, Instance, Size, SplitMix64, alloc, size_text, sum_checksum};

/// Matmul's input.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Params {
    /// Blocks per dimension.
    pub nb: usize,
    /// Block size (rows = columns).
    pub bs: usize,
}

impl Params {
    /// Figure 7's input is 4096 x 4096 with blocks of 128 (`Large`). From `Small` up a task's
    /// footprint (2 nb blocks of 64 KiB and one more) exceeds the paper machine's `LLC / C`.
    pub fn of(size: Size) -> Params {
        match size {
            Size::Tiny => Params { nb: 4, bs: 16 },
            Size::Small => Params { nb: 8, bs: 128 },
            Size::Medium => Params { nb: 16, bs: 128 },
            Size::Large => Params { nb: 32, bs: 128 },
        }
    }
}

/// Matmul's data: blocks in row-major block order.
pub struct Matmul {
    params: Params,
    a: Vec<NumaVec<f32>>,
    b: Vec<NumaVec<f32>>,
    c: Vec<NumaVec<f32>>,
    /// Whether `a` and `b` hold their values (`compute` never changes them).
    initialized: bool,
}

impl Matmul {
    /// `3 nb^2` allocations of one block each, with `distribution`.
    pub fn new(params: Params, distribution: Distribution) -> Result<Matmul, BoxError> {
        let matrix = || {
            (0..params.nb * params.nb)
                .map(|_| alloc(params.bs * params.bs, distribution))
                .collect::<Result<Vec<_>, _>>()
        };
        let a = matrix()?;
        let b = matrix()?;
        let c = matrix()?;
        Ok(Matmul {
            params,
            a,
            b,
            c,
            initialized: false,
        })
    }

    /// Element `(row, col)` of a block matrix.
    fn at(&self, m: &[NumaVec<f32>], row: usize, col: usize) -> f32 {
        let (nb, bs) = (self.params.nb, self.params.bs);
        m[(row / bs) * nb + col / bs][(row % bs) * bs + col % bs]
    }

    /// `m x` in exact integers.
    fn times(&self, m: &[NumaVec<f32>], x: &[i64]) -> Vec<i64> {
        let n = self.params.nb * self.params.bs;
        (0..n)
            .map(|row| (0..n).map(|col| self.at(m, row, col) as i64 * x[col]).sum())
            .collect()
    }
}

/// `c += a b` on `bs x bs` row-major blocks.
fn gemm(a: &[f32], b: &[f32], c: &mut [f32], bs: usize) {
    for (i, c_row) in c.chunks_exact_mut(bs).enumerate() {
        for (k, b_row) in b.chunks_exact(bs).enumerate() {
            let aik = a[i * bs + k];
            for (c, &b) in c_row.iter_mut().zip(b_row) {
                *c += aik * b;
            }
        }
    }
}

/// A task's blocks as raw pointers, for the raw depend API.
struct TaskBlocks {
    a_row: Vec<*const f32>,
    b_col: Vec<*const f32>,
    c: *mut f32,
}

impl Instance for Matmul {
    fn describe(&self) -> String {
        let (nb, bs) = (self.params.nb, self.params.bs);
        format!(
            "matmul: {n} x {n} floats, {nb} x {nb} blocks of {bs} x {bs} ({} each, one \
             allocation per block), one task per C block reading {nb} blocks of A and of B",
            size_text(bs * bs * 4),
            n = nb * bs
        )
    }

    fn init(&mut self) {
        if !std::mem::replace(&mut self.initialized, true) {
            let mut rng = SplitMix64::new(0xA11CE);
            for block in self.a.iter_mut().chain(self.b.iter_mut()) {
                for x in block.iter_mut() {
                    *x = rng.small_int(2);
                }
            }
        }
        for block in &mut self.c {
            block.fill(0.0);
        }
    }

    fn compute(&mut self, rt: &Runtime, probe: Option<&Probe>) -> Result<(), SchedError> {
        let (nb, bs) = (self.params.nb, self.params.bs);
        let bytes = bs * bs * 4;
        let (a, b, c) = (&self.a, &self.b, &mut self.c);
        rt.scope(|s| {
            let a: Vec<*const f32> = a.iter().map(|v| v.as_ptr()).collect();
            let b: Vec<*const f32> = b.iter().map(|v| v.as_ptr()).collect();
            let c: Vec<*mut f32> = c.iter_mut().map(|v| v.as_mut_ptr()).collect();
            for i in 0..nb {
                for j in 0..nb {
                    let task = TaskBlocks {
                        a_row: (0..nb).map(|k| a[i * nb + k]).collect(),
                        b_col: (0..nb).map(|k| b[k * nb + j]).collect(),
                        c: c[i * nb + j],
                    };
                    let block = |p: *const f32, kind| Access::new(p as usize, bytes, kind);
                    let deps: Vec<Access> = task
                        .a_row
                        .iter()
                        .chain(&task.b_col)
                        .map(|&p| block(p, AccessKind::In))
                        .chain([block(task.c, AccessKind::InOut)])
                        .collect();
                    let footprint = deps.clone();
                    let body = move |s: &_| {
                        let task = task;
                        timed(probe, s, "matmul", &footprint, || {
                            // SAFETY: `task.c` is a block of `bs * bs` floats that only this
                            // task accesses (it declares it `inout`, and each C block has one
                            // task); the allocation lives until the scope has returned.
                            let c = unsafe { std::slice::from_raw_parts_mut(task.c, bs * bs) };
                            for (&a, &b) in task.a_row.iter().zip(&task.b_col) {
                                // SAFETY: blocks of `bs * bs` floats, declared `in`, which no
                                // task writes; alive until the scope has returned.
                                let (a, b) = unsafe {
                                    (
                                        std::slice::from_raw_parts(a, bs * bs),
                                        std::slice::from_raw_parts(b, bs * bs),
                                    )
                                };
                                gemm(a, b, c, bs);
                            }
                        });
                    };
                    // SAFETY: the body touches exactly the blocks `deps` declares (see above);
                    // the blocks are distinct allocations owned by `self`, which nothing else
                    // touches until this scope has returned and every task finished. Raw
                    // pointers to floats may move to the worker thread that runs the task.
                    unsafe { s.spawn_depend(&deps, body) };
                }
            }
        });
        Ok(())
    }

    fn verify(&self) -> Result<String, String> {
        let n = self.params.nb * self.params.bs;
        let mut rng = SplitMix64::new(0xF4E1);
        for trial in 0..2 {
            let x: Vec<i64> = (0..n).map(|_| rng.below(1 << 20) as i64).collect();
            let cx = self.times(&self.c, &x);
            let bx = self.times(&self.b, &x);
            let abx = self.times(&self.a, &bx);
            if let Some(row) = (0..n).find(|&r| cx[r] != abx[r]) {
                return Err(format!(
                    "Freivalds check {trial}: (C x)[{row}] = {}, A (B x) gives {}",
                    cx[row], abx[row]
                ));
            }
        }
        Ok(sum_checksum(self.c.iter().flat_map(|v| v.iter())))
    }
}
