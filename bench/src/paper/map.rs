//! Map (Table 4: "1D vector scaling", heuristic coarse): the paper's Listing 1. Each vector is
//! its own allocation (`omp_malloc` in a loop), and one task per vector scales it in place,
//! declaring the vector as `inout`. With coarse distribution each vector lies wholly on one node,
//! so a locality-aware scheduler can run every task where its data is.

use numatask::alloc::{Distribution, NumaVec};
use numatask::sched::depend::{Access, AccessKind};
use numatask::sched::{DependError, Runtime};

use super::cost_model::{Probe, timed};
use super::{BoxError, Instance, Size, alloc, first_difference, size_text, sum_checksum, whole};

/// The factor every element is scaled by.
const ALPHA: f32 = 1.5;

/// Map's input.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Params {
    /// Number of vectors (tasks).
    pub vectors: usize,
    /// Floats per vector.
    pub len: usize,
}

impl Params {
    /// Figure 7's input is 48 vectors of 1 MiB (`Small`, and the paper's); the larger sizes
    /// scale it up.
    pub fn of(size: Size) -> Params {
        const MIB: usize = (1 << 20) / 4;
        match size {
            Size::Tiny => Params {
                vectors: 16,
                len: 16 << 10,
            },
            Size::Small => Params {
                vectors: 48,
                len: MIB,
            },
            Size::Medium => Params {
                vectors: 96,
                len: 2 * MIB,
            },
            Size::Large => Params {
                vectors: 192,
                len: 4 * MIB,
            },
        }
    }
}

/// Map's data.
pub struct Map {
    params: Params,
    vectors: Vec<NumaVec<f32>>,
}

impl Map {
    /// One allocation per vector, with `distribution`.
    pub fn new(params: Params, distribution: Distribution) -> Result<Map, BoxError> {
        let vectors = (0..params.vectors)
            .map(|_| alloc(params.len, distribution))
            .collect::<Result<_, _>>()?;
        Ok(Map { params, vectors })
    }

    fn initial(v: usize, i: usize) -> f32 {
        ((v * 31 + i) & 1023) as f32
    }
}

impl Instance for Map {
    fn describe(&self) -> String {
        format!(
            "map: {} vectors of {} (one allocation and one task each)",
            self.params.vectors,
            size_text(self.params.len * 4)
        )
    }

    fn init(&mut self) {
        for (v, vector) in self.vectors.iter_mut().enumerate() {
            for (i, x) in vector.iter_mut().enumerate() {
                *x = Map::initial(v, i);
            }
        }
    }

    fn compute(&mut self, rt: &Runtime, probe: Option<&Probe>) -> Result<(), DependError> {
        let vectors = &mut self.vectors;
        rt.scope(|s| {
            let handles = whole(vectors)?;
            for vector in &handles {
                s.task()
                    .updates(&vector[0])
                    .label("map")
                    .spawn(move |s, (x,)| {
                        let footprint = [Access::of_slice(x, AccessKind::InOut)];
                        timed(probe, s, "map", &footprint, || {
                            x.iter_mut().for_each(|x| *x *= ALPHA)
                        });
                    })?;
            }
            Ok(())
        })
    }

    fn verify(&self) -> Result<String, String> {
        for (v, vector) in self.vectors.iter().enumerate() {
            let want: Vec<f32> = (0..vector.len())
                .map(|i| Map::initial(v, i) * ALPHA)
                .collect();
            first_difference(&format!("vector {v}"), vector, &want)?;
        }
        Ok(sum_checksum(self.vectors.iter().flat_map(|v| v.iter())))
    }
}
