//! Matmul (Table 4: "blocked matrix multiplication with BLAS operations in task computation",
//! heuristic coarse): `C = A B` on `nb x nb` blocks of `bs x bs` floats, every block its own
//! allocation (A's blocks row by row, then B's, then C's). As in the paper, one task per block of
//! C computes `C(i, j) += A(i, k) B(k, j)` for every `k`: it reads a row of blocks of A and a
//! column of blocks of B and updates one block of C. The block product is a plain i-k-j loop
//! the compiler vectorizes, not a BLAS call.
//!
//! A task's depend list has `2 nb + 1` entries, a length the program computes: the safe task
//! builder declares the row of A and the column of B as one `reads_each` list each, and the
//! body gets them as vectors of slices. No `unsafe` code.
//!
//! With coarse distribution and `nb` a multiple of the node count, all of B's column `j` and
//! `C(i, j)` lie on node `j mod nodes` while A's row is spread evenly: the locality-aware
//! scheduler runs the task there and half of its bytes are local.
//!
//! The entries are small integers, so every sum is exact in f32 whatever the order, and the
//! result is verified exactly with Freivalds' check in integers: `C x = A (B x)` for two random
//! integer vectors `x`.

use numatask::alloc::{Distribution, NumaVec};
use numatask::sched::data::Blocks;
use numatask::sched::depend::{Access, AccessKind};
use numatask::sched::{DependError, Runtime};

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

/// One [`Blocks`] of one block for each block of a matrix (each block is its own allocation).
fn handles(m: &mut [NumaVec<f32>], bs: usize) -> Result<Vec<Blocks<'_, f32>>, DependError> {
    m.iter_mut().map(|v| Blocks::new(v, bs * bs)).collect()
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

    fn compute(&mut self, rt: &Runtime, probe: Option<&Probe>) -> Result<(), DependError> {
        let nb = self.params.nb;
        let bs = self.params.bs;
        let (a, b, c) = (&mut self.a, &mut self.b, &mut self.c);
        rt.scope(|s| {
            let (a, b, c) = (handles(a, bs)?, handles(b, bs)?, handles(c, bs)?);
            for i in 0..nb {
                for j in 0..nb {
                    let a_row = (0..nb).map(|k| &a[i * nb + k][0]);
                    let b_col = (0..nb).map(|k| &b[k * nb + j][0]);
                    let c_ij = &c[i * nb + j][0];
                    // The depend list again, as plain accesses, for the cost model's probe.
                    let footprint: Vec<Access> = match probe {
                        None => Vec::new(),
                        Some(_) => a_row
                            .clone()
                            .chain(b_col.clone())
                            .map(|r| r.access(AccessKind::In))
                            .chain([c_ij.access(AccessKind::InOut)])
                            .collect(),
                    };
                    s.task()
                        .reads_each(a_row)
                        .reads_each(b_col)
                        .updates(c_ij)
                        .label("matmul")
                        .spawn(move |s, (a_row, b_col, c)| {
                            timed(probe, s, "matmul", &footprint, || {
                                for (a, b) in a_row.iter().zip(&b_col) {
                                    gemm(a, b, c, bs);
                                }
                            });
                        })?;
                }
            }
            Ok(())
        })
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
