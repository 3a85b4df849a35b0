//! Reduction (Table 4: "iterative implementation of merge phase of BOTS Sort", heuristic fine):
//! `2^depth` sorted runs are merged pairwise, level by level, until one sorted run is left. As
//! in BOTS, the data and the scratch space it merges into are one allocation (one `malloc`),
//! and the levels alternate between the two halves.
//!
//! Each merge of two runs is cut into pieces of equal output size (the merge-path split: a
//! binary search finds where output position `k` falls in each input), so every level has the
//! same number of tasks, `2^(depth-1)`, each writing `2 * leaf` elements. A task declares the
//! two input pieces it reads (`in`) and the output piece it writes (`out`): its footprint is
//! exactly the bytes it touches. The split points of a level are computed from the previous
//! level's result, so every level is one parallel section (a scope, i.e. a `taskwait`).
//!
//! The leaves are generated sorted (random walks of integers below 2^24, exact in f32), and the
//! result is verified as sorted with the same multiset of values as the input (count, exact sum
//! and an order-independent hash of the bit patterns).

use numatask::alloc::{Distribution, NumaVec};
use numatask::sched::data::Blocks;
use numatask::sched::depend::{Access, AccessKind};
use numatask::sched::{DependError, Runtime};

use super::cost_model::{Probe, timed};
use super::{BoxError, Instance, Size, SplitMix64, alloc, mix64, size_text};

/// Reduction's input.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Params {
    /// Floats to sort (a power of two).
    pub len: usize,
    /// Merge levels: `2^depth` leaves.
    pub depth: u32,
}

impl Params {
    /// Figure 7's input is a 256 MB array with depth 10 (`Large`). Leaves are 64 Ki floats
    /// from `Small` up, so that a task's footprint (1 MiB) exceeds the paper machine's
    /// `LLC / C` and the locality-aware scheduler deals it, unless it is spread evenly over the nodes within the even tolerance
    /// (`NUMATASK_EVEN_TOLERANCE`), as under fine distribution.
    pub fn of(size: Size) -> Params {
        match size {
            Size::Tiny => Params {
                len: 1 << 16,
                depth: 4,
            },
            Size::Small => Params {
                len: 1 << 21,
                depth: 5,
            },
            Size::Medium => Params {
                len: 1 << 25,
                depth: 9,
            },
            Size::Large => Params {
                len: 1 << 26,
                depth: 10,
            },
        }
    }

    fn leaf(&self) -> usize {
        self.len >> self.depth
    }
}

/// What the multiset of values adds up to (order-independent).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct Multiset {
    count: usize,
    sum: u64,
    hash: u64,
}

impl Multiset {
    fn of(values: &[f32]) -> Multiset {
        values.iter().fold(Multiset::default(), |m, &x| Multiset {
            count: m.count + 1,
            sum: m.sum + x as u64,
            hash: m.hash.wrapping_add(mix64(u64::from(x.to_bits()))),
        })
    }
}

/// Reduction's data: `[data | scratch]` in one allocation.
pub struct Reduction {
    params: Params,
    both: NumaVec<f32>,
    /// The generated leaves (empty until the first `init`), and what they add up to.
    leaves: Vec<f32>,
    input: Multiset,
}

impl Reduction {
    /// One allocation of `2 * len` floats, with `distribution`.
    pub fn new(params: Params, distribution: Distribution) -> Result<Reduction, BoxError> {
        if !params.len.is_power_of_two() || params.leaf() < 2 {
            return Err(format!("reduction: bad parameters {params:?}").into());
        }
        Ok(Reduction {
            both: alloc(2 * params.len, distribution)?,
            params,
            leaves: Vec::new(),
            input: Multiset::default(),
        })
    }

    /// The half holding the result after all levels.
    fn result(&self) -> &[f32] {
        let n = self.params.len;
        if self.params.depth.is_multiple_of(2) {
            &self.both[..n]
        } else {
            &self.both[n..]
        }
    }
}

/// How many of the first `k` outputs of the stable merge of `a` and `b` (ties taken from `a`
/// first) come from `a`: the merge-path split.
fn split(k: usize, a: &[f32], b: &[f32]) -> usize {
    let (mut lo, mut hi) = (k.saturating_sub(b.len()), k.min(a.len()));
    while lo < hi {
        let i = (lo + hi) / 2;
        let j = k - i;
        // a[i] is among the first k outputs iff it does not come after b[j - 1].
        if j > 0 && a[i] <= b[j - 1] {
            lo = i + 1;
        } else {
            hi = i;
        }
    }
    lo
}

/// Stable merge of `a` and `b` into `out` (`out.len() == a.len() + b.len()`), with selects
/// instead of branches in the loop.
fn merge(a: &[f32], b: &[f32], out: &mut [f32]) {
    let (mut i, mut j, mut k) = (0, 0, 0);
    while i < a.len() && j < b.len() {
        let (x, y) = (a[i], b[j]);
        let take_a = x <= y;
        out[k] = if take_a { x } else { y };
        i += usize::from(take_a);
        j += usize::from(!take_a);
        k += 1;
    }
    out[k..k + a.len() - i].copy_from_slice(&a[i..]);
    out[k + a.len() - i..].copy_from_slice(&b[j..]);
}

/// One task of a level: input pieces `a` and `b`, output piece `out` (element ranges of the
/// whole `[data | scratch]` array).
struct Piece {
    a: std::ops::Range<usize>,
    b: std::ops::Range<usize>,
    out: std::ops::Range<usize>,
}

impl Instance for Reduction {
    fn describe(&self) -> String {
        let p = &self.params;
        format!(
            "reduction: {} floats ({}, plus as much scratch, one allocation), {} sorted leaves, \
             {} levels of {} merge tasks",
            p.len,
            size_text(p.len * 4),
            1usize << p.depth,
            p.depth,
            1usize << (p.depth - 1)
        )
    }

    fn init(&mut self) {
        let (n, leaf) = (self.params.len, self.params.leaf());
        if self.leaves.is_empty() {
            let mut rng = SplitMix64::new(0x5EED);
            // Random walks starting below 2^16 with steps below 2^24 / max(leaf, 2^16) stay
            // below 2^24, so every value is an exact integer in f32.
            let step = (1u64 << 24) / leaf.max(1 << 16) as u64;
            self.leaves = Vec::with_capacity(n);
            for _ in 0..n / leaf {
                let mut v = rng.below(1 << 16);
                for _ in 0..leaf {
                    self.leaves.push(v as f32);
                    v += rng.below(step);
                }
            }
            self.input = Multiset::of(&self.leaves);
        }
        self.both[..n].copy_from_slice(&self.leaves);
        // Every level overwrites all of its output half, but the scratch half is cleared too,
        // so that a run that left a task out cannot pass verification on an earlier run's
        // results.
        self.both[n..].fill(0.0);
    }

    fn compute(&mut self, rt: &Runtime, probe: Option<&Probe>) -> Result<(), DependError> {
        let (n, leaf) = (self.params.len, self.params.leaf());
        let piece = 2 * leaf;
        for level in 0..self.params.depth {
            let (src, dst) = if level % 2 == 0 { (0, n) } else { (n, 0) };
            let run = leaf << level;
            // Split points, from the previous level's result (read before the scope borrows
            // the data for the tasks).
            let mut pieces = Vec::with_capacity(n / piece);
            for m in 0..n / (2 * run) {
                let a0 = src + 2 * m * run;
                let (a, b) = (&self.both[a0..a0 + run], &self.both[a0 + run..a0 + 2 * run]);
                let mut i0 = 0;
                for p in 0..2 * run / piece {
                    let k1 = (p + 1) * piece;
                    let i1 = split(k1, a, b);
                    let (j0, j1) = (p * piece - i0, k1 - i1);
                    pieces.push(Piece {
                        a: a0 + i0..a0 + i1,
                        b: a0 + run + j0..a0 + run + j1,
                        out: dst + 2 * m * run + p * piece..dst + 2 * m * run + k1,
                    });
                    i0 = i1;
                }
            }
            let both = &mut self.both;
            rt.scope(|s| {
                let data = Blocks::new(both, piece)?;
                for p in &pieces {
                    s.task()
                        .reads(&data.region(p.a.clone())?)
                        .reads(&data.region(p.b.clone())?)
                        .writes(&data.region(p.out.clone())?)
                        .label("merge")
                        .spawn(move |s, (a, b, out)| {
                            let footprint = [
                                Access::of_slice(a, AccessKind::In),
                                Access::of_slice(b, AccessKind::In),
                                Access::of_slice(out, AccessKind::Out),
                            ];
                            timed(probe, s, "merge", &footprint, || merge(a, b, out));
                        })?;
                }
                Ok::<(), DependError>(())
            })?;
        }
        Ok(())
    }

    fn verify(&self) -> Result<String, String> {
        let result = self.result();
        if let Some(i) = result.windows(2).position(|w| w[0] > w[1]) {
            return Err(format!(
                "not sorted at {i}: {} > {}",
                result[i],
                result[i + 1]
            ));
        }
        let got = Multiset::of(result);
        if got != self.input {
            return Err(format!(
                "the values changed: {got:?}, the input had {:?}",
                self.input
            ));
        }
        Ok(format!("sorted, sum {}", got.sum))
    }
}

#[cfg(test)]
mod tests {
    use super::{merge, split};

    #[test]
    fn merge_path_pieces_put_together_give_the_whole_stable_merge() {
        let a = [1.0, 2.0, 2.0, 5.0, 9.0, 9.0];
        let b = [0.0, 2.0, 3.0, 9.0, 10.0, 11.0];
        let mut whole = [0.0; 12];
        merge(&a, &b, &mut whole);
        assert!(whole.windows(2).all(|w| w[0] <= w[1]));
        for piece in [1, 2, 3, 4, 6, 12] {
            let mut pieces = [0.0; 12];
            let mut i0 = 0;
            for k1 in (piece..=12).step_by(piece) {
                let i1 = split(k1, &a, &b);
                let (j0, j1) = (k1 - piece - i0, k1 - i1);
                merge(&a[i0..i1], &b[j0..j1], &mut pieces[k1 - piece..k1]);
                i0 = i1;
            }
            assert_eq!(whole, pieces, "pieces of {piece}");
        }
    }
}
