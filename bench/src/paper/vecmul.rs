//! Vecmul (Table 4: "vector cross product", heuristic coarse): `c_i[k] = a_i[k] x b_i[k]` for
//! vectors of 3D points, one task per `i` reading `a_i` and `b_i` and writing `c_i`.
//!
//! Every vector is its own allocation, made array by array (all `a`, then all `b`, then all
//! `c`), as a C program allocating its three arrays of vectors in three loops does. With coarse
//! distribution and a vector count that is a multiple of the node count, `a_i`, `b_i` and `c_i`
//! then share a node, which a locality-aware scheduler can exploit; the paper does not say how
//! its program allocated, so this is the favourable case for coarse, stated.

use numatask::alloc::{Distribution, NumaVec};
use numatask::sched::depend::{Access, AccessKind};
use numatask::sched::{DependError, Runtime};

use super::cost_model::{Probe, timed};
use super::{
    BoxError, Instance, Size, SplitMix64, alloc, first_difference, size_text, sum_checksum, whole,
};

/// A 3D point.
type Point = [f32; 3];

/// Vecmul's input.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Params {
    /// Number of vector triples (tasks).
    pub vectors: usize,
    /// Points per vector.
    pub points: usize,
}

impl Params {
    /// Figure 7 gives no Vecmul input; the TILEPro64 run (Figure 9) used 128 vectors of
    /// 28 kB. From `Small` up a task's footprint (three vectors) exceeds the paper machine's
    /// `LLC / C`, so that the locality-aware scheduler deals it, unless it is spread evenly over the nodes within the even tolerance
    /// (`NUMATASK_EVEN_TOLERANCE`), as under fine distribution.
    pub fn of(size: Size) -> Params {
        match size {
            Size::Tiny => Params {
                vectors: 16,
                points: 1 << 10,
            },
            Size::Small => Params {
                vectors: 96,
                points: 28 << 10,
            },
            Size::Medium => Params {
                vectors: 128,
                points: 128 << 10,
            },
            Size::Large => Params {
                vectors: 128,
                points: 256 << 10,
            },
        }
    }
}

/// Vecmul's data.
pub struct Vecmul {
    params: Params,
    a: Vec<NumaVec<Point>>,
    b: Vec<NumaVec<Point>>,
    c: Vec<NumaVec<Point>>,
    /// Whether `a` and `b` hold their values (`compute` never changes them, and overwrites
    /// every point of `c`).
    initialized: bool,
}

impl Vecmul {
    /// `3 * vectors` allocations with `distribution`: the `a`s, then the `b`s, then the `c`s.
    pub fn new(params: Params, distribution: Distribution) -> Result<Vecmul, BoxError> {
        let array = || {
            (0..params.vectors)
                .map(|_| alloc(params.points, distribution))
                .collect::<Result<Vec<_>, _>>()
        };
        let a = array()?;
        let b = array()?;
        let c = array()?;
        Ok(Vecmul {
            params,
            a,
            b,
            c,
            initialized: false,
        })
    }
}

fn cross(a: &[Point], b: &[Point], c: &mut [Point]) {
    for ((a, b), c) in a.iter().zip(b).zip(c) {
        *c = [
            a[1] * b[2] - a[2] * b[1],
            a[2] * b[0] - a[0] * b[2],
            a[0] * b[1] - a[1] * b[0],
        ];
    }
}

fn flat(points: &[Point]) -> &[f32] {
    points.as_flattened()
}

impl Instance for Vecmul {
    fn describe(&self) -> String {
        format!(
            "vecmul: {} triples of vectors of {} points ({} each, one allocation per vector), \
             one task per triple",
            self.params.vectors,
            self.params.points,
            size_text(self.params.points * 12)
        )
    }

    fn init(&mut self) {
        // The output is cleared before every run, so that a run that left a task out cannot
        // pass verification on an earlier run's results.
        for v in &mut self.c {
            v.fill([0.0; 3]);
        }
        if std::mem::replace(&mut self.initialized, true) {
            return;
        }
        let mut rng = SplitMix64::new(0xC0FFEE);
        for v in self.a.iter_mut().chain(self.b.iter_mut()) {
            for p in v.iter_mut() {
                *p = [rng.small_int(100), rng.small_int(100), rng.small_int(100)];
            }
        }
    }

    fn compute(&mut self, rt: &Runtime, probe: Option<&Probe>) -> Result<(), DependError> {
        let (a, b, c) = (&mut self.a, &mut self.b, &mut self.c);
        rt.scope(|s| {
            let (a, b, c) = (whole(a)?, whole(b)?, whole(c)?);
            for ((a, b), c) in a.iter().zip(&b).zip(&c) {
                s.task()
                    .reads(&a[0])
                    .reads(&b[0])
                    .writes(&c[0])
                    .label("vecmul")
                    .spawn(move |s, (a, b, c)| {
                        let footprint = [
                            Access::of_slice(a, AccessKind::In),
                            Access::of_slice(b, AccessKind::In),
                            Access::of_slice(c, AccessKind::Out),
                        ];
                        timed(probe, s, "vecmul", &footprint, || cross(a, b, c));
                    })?;
            }
            Ok(())
        })
    }

    fn verify(&self) -> Result<String, String> {
        let mut want = vec![[0.0f32; 3]; self.params.points];
        for (i, ((a, b), c)) in self.a.iter().zip(&self.b).zip(&self.c).enumerate() {
            cross(a, b, &mut want);
            first_difference(&format!("c[{i}]"), flat(c), flat(&want))?;
        }
        Ok(sum_checksum(self.c.iter().flat_map(|v| flat(v))))
    }
}
