//! NDRanges: the index space of a launch, and its division into work-groups.

use crate::error::Error;

/// The index space of a launch: a global size in 1 to 3 dimensions, an optional local size
/// (the work-group's), an optional global offset (OpenCL's `clEnqueueNDRangeKernel`).
///
/// Groups at the edge of a dimension whose global size is not a multiple of the local size
/// are smaller (OpenCL 2.0's non-uniform work-groups): [`WorkGroup::local_size`](crate::WorkGroup::local_size)
/// is their actual size, [`WorkGroup::enqueued_local_size`](crate::WorkGroup::enqueued_local_size)
/// the one given.
///
/// Without a local size the executor picks one when the kernel is launched: along dimension 0
/// a multiple of [`SIMD_WIDTH`] work-items (so that the work-item loop vectorizes without a
/// remainder in every group but the last), at most what fits the bytes one work-item touches
/// in buffer arguments into [`CACHE_BUDGET`] bytes, small enough that there are several
/// groups per worker when the range allows it, and 1 along the other dimensions.
///
/// ```
/// use numatask_kernels::NdRange;
///
/// let image = NdRange::new([1920, 1080]).local([16, 16]);
/// let shifted = NdRange::new([1000]).offset([24]);
/// # let _ = (image, shifted);
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NdRange {
    global: Vec<usize>,
    local: Option<Vec<usize>>,
    offset: Option<Vec<usize>>,
}

/// Lanes of the widest vectors the executor plans for (512-bit registers of 32-bit elements):
/// chosen local sizes are multiples of it along dimension 0.
pub const SIMD_WIDTH: usize = 16;

/// Bytes of buffer data a chosen work-group may touch (half of a typical 512 KiB to 2 MiB
/// per-core L2), which bounds the local size the executor picks.
pub const CACHE_BUDGET: usize = 256 << 10;

impl NdRange {
    /// A range of `global` work-items (1 to 3 dimensions; others are an error at launch).
    pub fn new<const N: usize>(global: [usize; N]) -> Self {
        NdRange {
            global: global.to_vec(),
            local: None,
            offset: None,
        }
    }

    /// Work-groups of `local` work-items (as many dimensions as the global size).
    pub fn local<const N: usize>(mut self, local: [usize; N]) -> Self {
        self.local = Some(local.to_vec());
        self
    }

    /// Global ids start at `offset` instead of 0 (as many dimensions as the global size).
    pub fn offset<const N: usize>(mut self, offset: [usize; N]) -> Self {
        self.offset = Some(offset.to_vec());
        self
    }

    /// The global size as given.
    pub fn global_size(&self) -> &[usize] {
        &self.global
    }

    /// Checks the range and divides it into groups: `max_group` bounds the work-items per
    /// group, `item_bytes` (bytes a work-item touches in buffers) and `workers` guide the
    /// chosen local size.
    pub(crate) fn resolve(
        &self,
        max_group: usize,
        item_bytes: usize,
        workers: usize,
    ) -> Result<Geometry, Error> {
        let dims = self.global.len();
        if !(1..=3).contains(&dims) {
            return Err(Error::Dimensions(dims));
        }
        let mut g = Geometry {
            dims,
            global: [1; 3],
            local: [1; 3],
            offset: [0; 3],
            groups: [1; 3],
            num_groups: 1,
            num_items: 1,
        };
        for (d, &n) in self.global.iter().enumerate() {
            if n == 0 {
                return Err(Error::ZeroSize {
                    what: "global",
                    dim: d,
                });
            }
            g.global[d] = n;
        }
        g.num_items = g
            .global
            .iter()
            .try_fold(1usize, |acc, &n| acc.checked_mul(n))
            .ok_or_else(|| {
                Error::Overflow(format!(
                    "{} work-items do not fit in usize",
                    dims_text(&self.global)
                ))
            })?;
        if let Some(offset) = &self.offset {
            if offset.len() != dims {
                return Err(Error::OffsetDimensions {
                    global: dims,
                    offset: offset.len(),
                });
            }
            for (d, &o) in offset.iter().enumerate() {
                if o.checked_add(g.global[d]).is_none() {
                    return Err(Error::Overflow(format!(
                        "offset {o} plus global size {} in dimension {d} does not fit in usize",
                        g.global[d]
                    )));
                }
                g.offset[d] = o;
            }
        }
        match &self.local {
            Some(local) => {
                if local.len() != dims {
                    return Err(Error::LocalDimensions {
                        global: dims,
                        local: local.len(),
                    });
                }
                let mut items = 1usize;
                for (d, &n) in local.iter().enumerate() {
                    if n == 0 {
                        return Err(Error::ZeroSize {
                            what: "local",
                            dim: d,
                        });
                    }
                    items = items.saturating_mul(n);
                    g.local[d] = n;
                }
                if items > max_group {
                    return Err(Error::LocalTooLarge {
                        items,
                        max: max_group,
                    });
                }
            }
            None => g.local[0] = chosen_local(g.global[0], max_group, item_bytes, workers),
        }
        for d in 0..3 {
            g.groups[d] = g.global[d].div_ceil(g.local[d]);
        }
        // At most as many groups as items: no overflow.
        g.num_groups = g.groups.iter().product();
        Ok(g)
    }
}

fn dims_text(v: &[usize]) -> String {
    v.iter()
        .map(|n| n.to_string())
        .collect::<Vec<_>>()
        .join(" x ")
}

/// The local size along dimension 0 when none is given (see [`NdRange`]).
fn chosen_local(global: usize, max_group: usize, item_bytes: usize, workers: usize) -> usize {
    let max_group = max_group.max(1);
    // A multiple of the SIMD width when the limit allows one, else the limit.
    let cap = if max_group >= SIMD_WIDTH {
        max_group / SIMD_WIDTH * SIMD_WIDTH
    } else {
        max_group
    };
    let round_up = |n: usize| n.div_ceil(SIMD_WIDTH).saturating_mul(SIMD_WIDTH);
    let by_cache = (CACHE_BUDGET / item_bytes.max(1)) / SIMD_WIDTH * SIMD_WIDTH;
    // Several groups per worker when the range is large enough for that.
    let by_balance = round_up(global.div_ceil(workers.max(1).saturating_mul(8)));
    by_cache
        .min(by_balance)
        .max(SIMD_WIDTH)
        .min(round_up(global))
        .min(cap)
        .max(1)
}

/// A checked NDRange and its groups (dimensions past `dims` have size 1 and offset 0).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Geometry {
    pub(crate) dims: usize,
    pub(crate) global: [usize; 3],
    /// The enqueued local size.
    pub(crate) local: [usize; 3],
    pub(crate) offset: [usize; 3],
    /// Groups per dimension.
    pub(crate) groups: [usize; 3],
    pub(crate) num_groups: usize,
    pub(crate) num_items: usize,
}

impl Geometry {
    /// Dimensions (1 to 3).
    pub fn dims(&self) -> usize {
        self.dims
    }

    /// The global size (1 past the used dimensions).
    pub fn global_size(&self) -> [usize; 3] {
        self.global
    }

    /// The local size the groups were enqueued with (chosen by the executor if none was given).
    pub fn local_size(&self) -> [usize; 3] {
        self.local
    }

    /// Groups per dimension.
    pub fn num_groups(&self) -> [usize; 3] {
        self.groups
    }

    /// Groups in all.
    pub fn total_groups(&self) -> usize {
        self.num_groups
    }

    /// Work-items in all.
    pub fn total_items(&self) -> usize {
        self.num_items
    }

    /// The group ids of the group with linear id `g` (dimension 0 varies fastest).
    #[inline]
    pub(crate) fn group_id(&self, g: usize) -> [usize; 3] {
        let x = g % self.groups[0];
        let rest = g / self.groups[0];
        [x, rest % self.groups[1], rest / self.groups[1]]
    }

    /// The actual size of group `id` (smaller at the upper edge when the global size is not a
    /// multiple of the local size).
    #[inline]
    pub(crate) fn group_size(&self, id: [usize; 3]) -> [usize; 3] {
        let mut s = self.local;
        for d in 0..3 {
            let start = id[d] * self.local[d];
            s[d] = s[d].min(self.global[d] - start);
        }
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bad_ranges_are_errors_naming_what_is_wrong() {
        let r = |n: NdRange| n.resolve(4096, 8, 2).unwrap_err().to_string();
        assert_eq!(
            r(NdRange::new([])),
            "an NDRange has 1 to 3 dimensions; this one has 0"
        );
        assert_eq!(
            r(NdRange::new([1, 1, 1, 1])),
            "an NDRange has 1 to 3 dimensions; this one has 4"
        );
        assert_eq!(
            r(NdRange::new([4, 0])),
            "the global size is 0 in dimension 1"
        );
        assert_eq!(
            r(NdRange::new([4]).local([0])),
            "the local size is 0 in dimension 0"
        );
        assert_eq!(
            r(NdRange::new([4]).local([2, 2])),
            "the local size has 2 dimension(s) and the global size 1"
        );
        assert_eq!(
            r(NdRange::new([4, 4]).offset([1])),
            "the global offset has 1 dimension(s) and the global size 2"
        );
        assert!(r(NdRange::new([usize::MAX, 2])).contains("overflows"));
        assert!(r(NdRange::new([4]).offset([usize::MAX])).contains("overflows"));
        assert_eq!(
            r(NdRange::new([128, 128]).local([64, 128])),
            "a local size of 8192 work-items is over the maximum of 4096 per work-group"
        );
    }

    #[test]
    fn groups_at_the_edge_are_smaller() {
        let g = NdRange::new([10, 7])
            .local([4, 3])
            .resolve(4096, 8, 2)
            .unwrap();
        assert_eq!(g.num_groups(), [3, 3, 1]);
        assert_eq!(g.total_groups(), 9);
        assert_eq!(g.group_id(5), [2, 1, 0]);
        assert_eq!(g.group_size([2, 1, 0]), [2, 3, 1]);
        assert_eq!(g.group_size([2, 2, 0]), [2, 1, 1]);
        assert_eq!(g.group_size([0, 0, 0]), [4, 3, 1]);
    }

    #[test]
    fn a_chosen_local_size_is_a_multiple_of_the_simd_width_bounded_by_the_cache() {
        for (global, item_bytes, workers) in [
            (1 << 24, 12, 16),
            (1 << 24, 12, 2),
            (1000, 8, 2),
            (1 << 20, 4096, 2),
        ] {
            let g = NdRange::new([global])
                .resolve(4096, item_bytes, workers)
                .unwrap();
            let l = g.local_size()[0];
            assert_eq!(l % SIMD_WIDTH, 0, "{global} {item_bytes} {workers}: {l}");
            assert!(l <= 4096);
            assert!(l * item_bytes <= CACHE_BUDGET || l == SIMD_WIDTH);
            if global >= 16 * workers * SIMD_WIDTH {
                assert!(g.total_groups() >= 4 * workers, "{global}: {l}");
            }
        }
        // Huge ranges and small limits choose without overflow.
        let g = NdRange::new([usize::MAX]).resolve(4096, 4, 2).unwrap();
        assert_eq!(g.local_size()[0], 4096);
        let g = NdRange::new([1000]).resolve(8, 4, 2).unwrap();
        assert_eq!(g.local_size()[0], 8);
        // A range smaller than the SIMD width is one group.
        let g = NdRange::new([3]).resolve(4096, 4, 2).unwrap();
        assert_eq!((g.total_groups(), g.group_size([0, 0, 0])[0]), (1, 3));
    }
}
