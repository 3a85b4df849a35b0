//! The decisions of the core paper's locality-aware scheduler, as pure functions of the topology
//! and a task's footprint, so that they can be tested exactly against the paper's 8-node machine
//! (Muddukrishna, Jonsson, Brorsson 2015, section 4.1):
//!
//! - **Algorithm 1 (dealing)**: with `D` the task's bytes per node, if
//!   `sum(D) > sizeof(LLC) / C` and `stddev(D) > 0`, the task goes to the node `i` with the least
//!   distance-weighted cost `sum_j D[j] * distance(i, j)`; otherwise it stays on the current node.
//!   numatask reads `stddev(D) > 0` with a tolerance, the **even tolerance** `t`: a footprint
//!   counts as even when `stddev(D) <= t * mean(D)` (its coefficient of variation is at most
//!   `t`; `mean` over all the nodes). The default `t` is 0.1 ([`DEFAULT_EVEN_TOLERANCE`]);
//!   `t = 0` is the paper's exact test (`NUMATASK_EVEN_TOLERANCE=0`,
//!   [`RuntimeBuilder::even_tolerance`](crate::RuntimeBuilder::even_tolerance)). Why: fine
//!   distribution interleaves whole pages, so a footprint whose ranges start or end inside a
//!   page, or spans a page count that is not a multiple of the node count, is a page or a few
//!   uneven, and the exact test deals it. Its least cost is then decided by the distance
//!   matrix, not by the data: on the paper's machine every nearly even footprint goes to node
//!   2 or 4, whose rows of distances sum to 128 against the others' 140, so all the tasks of a
//!   loop pile on those two nodes' queues, which Algorithm 2's thresholds keep the other
//!   nodes from draining. In the paper's benchmarks on its 8-node machine (the MODEL of
//!   BENCHMARKS.md) the footprints dealt under fine distribution have coefficients of
//!   variation of at most 0.048, and those under coarse or first-touch placement 1.4 to 2.6
//!   (one node of eight holding nothing already makes 0.38): 0.1 separates the two.
//!   The coefficient is relative to the node count: 0.1 keeps local a split of 55/45 on two
//!   nodes, and on eight nodes one node holding 26% more than the mean; a footprint wholly
//!   on one node of `n` has `sqrt(n - 1)` (1 on two nodes), so coarse placement is dealt on
//!   any machine. The value was chosen on the paper's 8-node machine; on fewer nodes a fine
//!   footprint is even closer to even (its extra pages are shared by fewer nodes, over more
//!   pages each).
//!   A dependence the programmer marked as the most access-intensive one (the paper's proposed
//!   clause, Algorithm 3's index `a`) sends the task to the node holding most of that dependence
//!   (when one node holds strictly most of it; a tie, as under fine distribution, leaves the
//!   decision to the rest of Algorithm 1).
//! - **Algorithm 2 (finding work)**: a worker takes from its own node's queue first, then visits
//!   the other nodes in order of distance, and steals from node `i` only if its queue holds more
//!   than `distance(n, i) * C` tasks, where distances are normalized so that local is 1 (an OS
//!   distance of 16 against a local 10 is 1.6). A vicinity bound forbids steals beyond a distance.
//!
//! `C` is the number of cores per node. `sizeof(LLC) / C` is, in the paper's words, "the LLC
//! size per core": one last-level cache's size over the cores that share it, which is `C` on
//! the paper's machine (one L3 per node) and fewer where a node has several caches (one per
//! core complex), more where one cache spans nodes.
//!
//! Distances are read as Algorithm 1's cost reads them, row the node that runs the task and
//! column the node that holds the data: `distance(i, j)` is the OS matrix's entry `(i, j)`,
//! and Algorithm 2's distance between a thief `n` and a victim `i` is `(n, i)`, the thief
//! reaching data dealt to `i` (the same either way for the symmetric matrices OSes report; an
//! XML file may give an asymmetric one).

use numatask_alloc::{CoreGroup, NodeBytes, Topology};

/// The even tolerance when `NUMATASK_EVEN_TOLERANCE` is unset: a footprint whose standard
/// deviation over the nodes is at most a tenth of its mean is not dealt (module docs: why 0.1).
pub const DEFAULT_EVEN_TOLERANCE: f64 = 0.1;

/// The largest even tolerance accepted. A footprint over `n` nodes has a coefficient of
/// variation of at most `sqrt(n - 1)`, so 100 already means "never deal by cost" on any
/// machine of up to 10,001 nodes.
pub const MAX_EVEN_TOLERANCE: f64 = 100.0;

/// Why a task was dealt where it was.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum DealReason {
    /// The footprint is at most `sizeof(LLC) / C` (module docs): not worth moving.
    SmallFootprint,
    /// Every node holds about the same bytes (a standard deviation of at most the even
    /// tolerance times the mean; 0 under the paper's exact test): no node is better enough
    /// to move the task for (module docs).
    EvenFootprint,
    /// The node with the least distance-weighted cost.
    LeastCost,
    /// The node holding most of the dependence marked access-intensive.
    IntensiveDependence,
    /// Algorithm 1 chose node `chosen` (for the reason it gives with `chosen`), which has no
    /// worker (`OMP_NUM_THREADS` or `OMP_PLACES` left it out): the task went to the node with
    /// workers of least cost instead (the nearest one, for an intensive dependence), each of
    /// those that tie in turn.
    Unstaffed {
        /// The node Algorithm 1 chose.
        chosen: u16,
        /// Whether it was chosen for an intensive dependence (else for the least cost).
        intensive: bool,
    },
}

impl DealReason {
    /// True when the task stays on the dealing worker's node without a cost computation.
    pub fn is_local(self) -> bool {
        matches!(self, DealReason::SmallFootprint | DealReason::EvenFootprint)
    }
}

/// The result of Algorithm 1.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Deal {
    /// The node whose queue gets the task.
    pub node: usize,
    /// Why.
    pub reason: DealReason,
}

/// Topology facts the decisions need, cached once per runtime.
#[derive(Clone, Debug)]
pub struct LocalityModel {
    num_nodes: usize,
    /// Row-major distances, as the OS gives them.
    distances: Vec<u32>,
    /// `LLC size / C`: the footprint below which a task is not dealt.
    footprint_threshold: u64,
    /// The coefficient of variation of a footprint at or below which it counts as even
    /// (module docs); 0 is the paper's `stddev(D) > 0`.
    even_tolerance: f64,
    cores_per_node: usize,
    /// The cores sharing one last-level cache.
    cores_per_llc: usize,
    /// For each node, the other nodes in increasing distance (ties by index), with the steal
    /// threshold of each.
    steal_order: Vec<Vec<StealCandidate>>,
}

/// One entry of a node's steal order (Algorithm 2).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StealCandidate {
    /// The victim node.
    pub node: usize,
    /// Its OS distance from the thief's node.
    pub distance: u32,
    /// Steal only if the victim's queue holds more than this many tasks.
    pub threshold: usize,
}

impl LocalityModel {
    /// Builds the model of `topology` with an optional vicinity: nodes farther than `vicinity`
    /// (an OS distance, inclusive) are never stolen from. The even tolerance is
    /// [`DEFAULT_EVEN_TOLERANCE`] ([`with_even_tolerance`](Self::with_even_tolerance) sets it).
    pub fn new(topology: &Topology, vicinity: Option<u32>) -> Self {
        let n = topology.num_nodes();
        let c = topology.cores_per_node();
        let distances = topology.distance_matrix().to_vec();
        let sharing = cores_per_llc(topology);
        let steal_order = (0..n)
            .map(|thief| {
                let local = distances[thief * n + thief].max(1);
                let mut others: Vec<StealCandidate> = (0..n)
                    .filter(|&v| v != thief)
                    .map(|v| {
                        // Row: the node running the task; column: the node holding its
                        // data, as in Algorithm 1's cost (the thief reaching the data
                        // dealt to the victim's node).
                        let distance = distances[thief * n + v];
                        StealCandidate {
                            node: v,
                            distance,
                            threshold: steal_threshold(distance, local, c),
                        }
                    })
                    .filter(|cand| vicinity.is_none_or(|max| cand.distance <= max))
                    .collect();
                others.sort_by_key(|cand| (cand.distance, cand.node));
                others
            })
            .collect();
        Self {
            num_nodes: n,
            distances,
            footprint_threshold: topology.llc_bytes() / sharing as u64,
            even_tolerance: DEFAULT_EVEN_TOLERANCE,
            cores_per_node: c,
            cores_per_llc: sharing,
            steal_order,
        }
    }

    /// The same model with the even tolerance `tolerance` (module docs; 0 is the paper's exact
    /// `stddev(D) > 0`). A negative tolerance or NaN is taken as 0, one above
    /// [`MAX_EVEN_TOLERANCE`] (infinity included) as that maximum, under which no footprint is
    /// dealt by its cost: the runtime's builder refuses such values before they reach here.
    pub fn with_even_tolerance(mut self, tolerance: f64) -> Self {
        self.even_tolerance = if tolerance > 0.0 {
            tolerance.min(MAX_EVEN_TOLERANCE)
        } else {
            0.0
        };
        self
    }

    /// The coefficient of variation at or below which a footprint counts as even.
    pub fn even_tolerance(&self) -> f64 {
        self.even_tolerance
    }

    /// Number of nodes.
    pub fn num_nodes(&self) -> usize {
        self.num_nodes
    }

    /// `C`, cores per node.
    pub fn cores_per_node(&self) -> usize {
        self.cores_per_node
    }

    /// The cores sharing one last-level cache (`C` on the paper's machine).
    pub fn cores_per_llc(&self) -> usize {
        self.cores_per_llc
    }

    /// The LLC size per core, `sizeof(LLC) / C` on a machine with one last-level cache per
    /// node (module docs), in bytes.
    pub fn footprint_threshold(&self) -> u64 {
        self.footprint_threshold
    }

    /// The other nodes in the order node `thief` visits them, with their thresholds.
    pub fn steal_order(&self, thief: usize) -> &[StealCandidate] {
        &self.steal_order[thief]
    }

    /// Algorithm 1: where a task with footprint `d` created on node `current` goes. `intensive`
    /// is the footprint of the dependence marked access-intensive, if any.
    pub fn deal(&self, d: &NodeBytes, current: usize, intensive: Option<&NodeBytes>) -> Deal {
        if let Some(node) = intensive.and_then(|i| self.sole_dominant_node(i)) {
            return Deal {
                node,
                reason: DealReason::IntensiveDependence,
            };
        }
        let bytes = &d.per_node()[..d.per_node().len().min(self.num_nodes)];
        let sum = bytes.iter().fold(0u64, |sum, &b| sum.saturating_add(b));
        if sum <= self.footprint_threshold {
            return Deal {
                node: current,
                reason: DealReason::SmallFootprint,
            };
        }
        if !self.uneven(bytes, sum) {
            return Deal {
                node: current,
                reason: DealReason::EvenFootprint,
            };
        }
        // Least cost; ties go to the current node, then to the lowest index.
        let mut best = (self.cost(d, current), current);
        for i in 0..self.num_nodes {
            let c = self.cost(d, i);
            if c < best.0 {
                best = (c, i);
            }
        }
        Deal {
            node: best.1,
            reason: DealReason::LeastCost,
        }
    }
}

impl LocalityModel {
    /// Algorithm 1's `stddev(D) > 0` under the even tolerance `t`: `stddev(D) > t * mean(D)`,
    /// over all the model's nodes (those `bytes` lacks hold 0). `sum` is the sum of `bytes`.
    fn uneven(&self, bytes: &[u64], sum: u64) -> bool {
        // stddev > 0 exactly when some node's count differs from another's.
        let first = bytes.first().copied().unwrap_or(0);
        let differs =
            (bytes.len() < self.num_nodes && sum > 0) || bytes.iter().any(|&b| b != first);
        if !differs || self.even_tolerance == 0.0 {
            return differs;
        }
        // n * variance = sum_j (D[j] - mean)^2 against n * (t * mean)^2. In f64: the
        // counts' relative precision (2^-53) is far below any tolerance that matters.
        let n = self.num_nodes as f64;
        let mean = sum as f64 / n;
        let missing = (self.num_nodes - bytes.len()) as f64;
        let squares = bytes
            .iter()
            .map(|&b| (b as f64 - mean).powi(2))
            .sum::<f64>()
            + missing * mean * mean;
        squares > n * (self.even_tolerance * mean).powi(2)
    }

    /// Algorithm 1's cost of running a task with footprint `d` on node `i`:
    /// `sum_j D[j] * distance(i, j)` (nodes beyond the topology left out).
    pub(crate) fn cost(&self, d: &NodeBytes, i: usize) -> u128 {
        let n = self.num_nodes;
        d.per_node()
            .iter()
            .take(n)
            .enumerate()
            .map(|(j, &b)| u128::from(b) * u128::from(self.distances[i * n + j]))
            .sum()
    }

    /// The node holding strictly more of `bytes` than any other, if one does. An intensive
    /// dependence spread evenly (fine distribution) names no node: sending its tasks to the
    /// lowest of the tied nodes would pile every one of them on node 0, so Algorithm 1
    /// decides them as if nothing were marked.
    fn sole_dominant_node(&self, bytes: &NodeBytes) -> Option<usize> {
        // Among the topology's nodes only: bytes on nodes it lacks are left out, as in `cost`.
        let known = &bytes.per_node()[..bytes.per_node().len().min(self.num_nodes)];
        let max = known.iter().copied().max().filter(|&m| m > 0)?;
        let mut holders = known.iter().enumerate().filter(|&(_, &b)| b == max);
        let (node, _) = holders.next()?;
        holders.next().is_none().then_some(node)
    }
}

/// The number of cores sharing one last-level cache (the most, when caches differ): the
/// LLC's share per core is its size over these. Every core when the topology describes no
/// cache (whose size is then 0).
fn cores_per_llc(topology: &Topology) -> usize {
    topology
        .core_groups(CoreGroup::LastLevelCache)
        .iter()
        .map(Vec::len)
        .max()
        .unwrap_or(1)
        .max(1)
}

/// `distance / local * C`, the queue length a victim must exceed; rounded down, so that with
/// local 10, distance 16 and C = 6 a victim must hold more than 9 tasks.
fn steal_threshold(distance: u32, local: u32, cores_per_node: usize) -> usize {
    (u64::from(distance) * cores_per_node as u64 / u64::from(local)) as usize
}

#[cfg(test)]
mod tests {
    use super::*;
    use numatask_alloc::Preset;

    /// The paper's machine under the paper's exact test (`stddev(D) > 0`).
    fn paper() -> (Topology, LocalityModel) {
        let t = Topology::preset(Preset::Opteron6172).unwrap();
        let m = LocalityModel::new(&t, None).with_even_tolerance(0.0);
        (t, m)
    }

    /// Algorithm 1 computed independently: least sum_j D[j] * dist(i, j), first minimum.
    fn brute_force(t: &Topology, d: &[u64], current: usize) -> usize {
        let costs: Vec<u64> = (0..8)
            .map(|i| (0..8).map(|j| d[j] * u64::from(t.distance(i, j))).sum())
            .collect();
        let min = *costs.iter().min().unwrap();
        if costs[current] == min {
            current
        } else {
            costs.iter().position(|&c| c == min).unwrap()
        }
    }

    #[test]
    fn footprint_below_llc_per_core_stays_on_the_current_node() {
        let (_, m) = paper();
        assert_eq!(m.footprint_threshold(), 5 * 1024 * 1024 / 6);
        let d = NodeBytes::from_bytes(vec![0, 0, 0, 0, 0, m.footprint_threshold(), 0, 0]);
        assert_eq!(
            m.deal(&d, 2, None),
            Deal {
                node: 2,
                reason: DealReason::SmallFootprint
            }
        );
    }

    #[test]
    fn a_footprint_vector_shorter_than_the_node_count_counts_the_missing_nodes_as_empty() {
        // 4 MiB on node 0 and nothing recorded for the other seven: uneven (the standard
        // deviation over all eight nodes is not 0), so dealt to node 0 by least cost.
        let (_, m) = paper();
        assert_eq!(
            m.deal(&NodeBytes::from_bytes(vec![4 << 20]), 3, None),
            Deal {
                node: 0,
                reason: DealReason::LeastCost
            }
        );
        // Eight equal entries are even.
        assert_eq!(
            m.deal(&NodeBytes::from_bytes(vec![4 << 20; 8]), 3, None)
                .reason,
            DealReason::EvenFootprint
        );
    }

    #[test]
    fn evenly_spread_footprint_stays_on_the_current_node() {
        let (_, m) = paper();
        let d = NodeBytes::from_bytes(vec![1 << 20; 8]);
        assert_eq!(
            m.deal(&d, 6, None),
            Deal {
                node: 6,
                reason: DealReason::EvenFootprint
            }
        );
    }

    #[test]
    fn footprint_on_one_node_is_dealt_to_that_node() {
        let (_, m) = paper();
        for node in 0..8 {
            let mut v = vec![0; 8];
            v[node] = 4 << 20;
            let deal = m.deal(&NodeBytes::from_bytes(v), (node + 3) % 8, None);
            assert_eq!(
                deal,
                Deal {
                    node,
                    reason: DealReason::LeastCost
                }
            );
        }
    }

    #[test]
    fn dealing_matches_algorithm_1_on_constructed_footprints() {
        let (t, m) = paper();
        // Deterministic pseudo-random footprints (xorshift), several shapes.
        let mut x = 0x9E37_79B9_7F4A_7C15u64;
        let mut next = move || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        for case in 0..2000 {
            let d: Vec<u64> = (0..8)
                .map(|_| match case % 3 {
                    0 => next() % (8 << 20),
                    1 => (next() % 4) * (1 << 20),
                    _ => {
                        if next() % 3 == 0 {
                            next() % (16 << 20)
                        } else {
                            0
                        }
                    }
                })
                .collect();
            let current = (next() % 8) as usize;
            let deal = m.deal(&NodeBytes::from_bytes(d.clone()), current, None);
            let sum: u64 = d.iter().sum();
            if sum <= m.footprint_threshold() || d.iter().all(|&b| b == d[0]) {
                assert!(
                    deal.reason.is_local() && deal.node == current,
                    "{d:?}: {deal:?}"
                );
            } else {
                assert_eq!(
                    deal.node,
                    brute_force(&t, &d, current),
                    "{d:?} from {current}"
                );
                assert_eq!(deal.reason, DealReason::LeastCost);
            }
        }
    }

    /// Fine distribution's rounding: three vectors of 84 pages (Vecmul's, as the paper
    /// suite allocates them), each over 8 nodes in turn from another node, leave the
    /// footprint a page or three uneven.
    fn fine_vecmul_footprint() -> NodeBytes {
        const PAGE: u64 = 4096;
        let mut pages = [0u64; 8];
        for (vector, start) in [0usize, 4, 1].into_iter().enumerate() {
            for p in 0..84 {
                pages[(start + vector + p) % 8] += 1;
            }
        }
        NodeBytes::from_bytes(pages.iter().map(|p| p * PAGE).collect())
    }

    #[test]
    fn a_fine_footprint_a_few_pages_uneven_stays_local_under_the_default_tolerance() {
        let d = fine_vecmul_footprint();
        let pages: Vec<u64> = d.per_node().iter().map(|b| b / 4096).collect();
        assert_eq!(pages.iter().sum::<u64>(), 252);
        assert!(pages.iter().any(|&p| p != pages[0]), "{pages:?}");
        let t = Topology::preset(Preset::Opteron6172).unwrap();
        let default = LocalityModel::new(&t, None);
        assert_eq!(default.even_tolerance(), DEFAULT_EVEN_TOLERANCE);
        assert_eq!(
            default.deal(&d, 5, None),
            Deal {
                node: 5,
                reason: DealReason::EvenFootprint
            }
        );
        // The paper's exact test deals it by least cost, which for a nearly even footprint
        // is the node nearest to all the others: node 2 or 4, whose rows of distances sum to
        // 128 against the others' 140, whichever pages are the extra ones. Every such task
        // of a loop goes to the same two nodes.
        let (_, exact) = paper();
        let row = |i: usize| (0..8).map(|j| t.distance(i, j)).sum::<u32>();
        assert_eq!(
            (0..8).map(row).collect::<Vec<_>>(),
            [140, 140, 128, 140, 128, 140, 140, 140]
        );
        let deal = exact.deal(&d, 5, None);
        assert_eq!(deal.reason, DealReason::LeastCost);
        assert_eq!(deal.node, brute_force(&t, d.per_node(), 5), "{pages:?}");
        assert!(deal.node == 2 || deal.node == 4, "{deal:?}");
    }

    #[test]
    fn the_even_tolerance_bounds_the_footprints_coefficient_of_variation() {
        let t = Topology::preset(Preset::Opteron6172).unwrap();
        let m = LocalityModel::new(&t, None);
        // Four nodes hold `a` MiB and four `b` MiB: mean (a + b) / 2, standard deviation
        // |a - b| / 2, so a coefficient of variation of |a - b| / (a + b).
        let halves = |a: u64, b: u64| {
            NodeBytes::from_bytes(vec![
                a << 19,
                b << 19,
                a << 19,
                b << 19,
                a << 19,
                b << 19,
                a << 19,
                b << 19,
            ])
        };
        // 0.05 and 0.095: even.
        for (a, b) in [(21, 19), (2100, 1737)] {
            assert_eq!(
                m.deal(&halves(a, b), 3, None).reason,
                DealReason::EvenFootprint,
                "{a}/{b}"
            );
        }
        // 0.15 and 0.105: dealt, to the node of least cost (brute force).
        for (a, b) in [(23, 17), (2210, 1790)] {
            let d = halves(a, b);
            let deal = m.deal(&d, 3, None);
            assert_eq!(deal.reason, DealReason::LeastCost, "{a}/{b}");
            assert_eq!(deal.node, brute_force(&t, d.per_node(), 3), "{a}/{b}");
        }
        // Missing nodes count as empty: one node of eight holding nothing is a coefficient
        // of variation of sqrt(1/7), about 0.38.
        let seven = NodeBytes::from_bytes(vec![1 << 20; 7]);
        assert_eq!(m.deal(&seven, 7, None).reason, DealReason::LeastCost);
        // A larger tolerance keeps it local.
        assert_eq!(
            m.clone()
                .with_even_tolerance(0.4)
                .deal(&seven, 7, None)
                .reason,
            DealReason::EvenFootprint
        );
        // The mean is over all eight nodes (over the seven given, the coefficient would be
        // sqrt(1/8), about 0.354), and a trailing 0 changes nothing.
        let seven_and_zero = NodeBytes::from_bytes(vec![
            1 << 20,
            1 << 20,
            1 << 20,
            1 << 20,
            1 << 20,
            1 << 20,
            1 << 20,
            0,
        ]);
        for (tolerance, expected) in [
            (0.37, DealReason::LeastCost),
            (0.39, DealReason::EvenFootprint),
        ] {
            let m = m.clone().with_even_tolerance(tolerance);
            assert_eq!(m.deal(&seven, 7, None).reason, expected, "{tolerance}");
            assert_eq!(
                m.deal(&seven, 7, None),
                m.deal(&seven_and_zero, 7, None),
                "{tolerance}"
            );
        }
        // A footprint exactly at the tolerance is even: halves(3, 1) has mean 2 and standard
        // deviation 1, 0.5 exactly in binary.
        let at = m.clone().with_even_tolerance(0.5);
        assert_eq!(
            at.deal(&halves(3, 1), 3, None).reason,
            DealReason::EvenFootprint
        );
        assert_eq!(
            at.deal(&halves(13, 4), 3, None).reason,
            DealReason::LeastCost
        );
        // 0, a negative tolerance or NaN is the exact test.
        for exact in [0.0, -0.0, -1.0, f64::NAN] {
            let m = m.clone().with_even_tolerance(exact);
            assert_eq!(m.even_tolerance(), 0.0);
            assert!(m.even_tolerance().is_sign_positive());
            assert_eq!(
                m.deal(&halves(2001, 2000), 3, None).reason,
                DealReason::LeastCost
            );
        }
        // Beyond the maximum, infinity included, is the maximum: nothing is dealt by cost.
        for huge in [1e9, f64::INFINITY] {
            let m = m.clone().with_even_tolerance(huge);
            assert_eq!(m.even_tolerance(), MAX_EVEN_TOLERANCE);
            assert_eq!(m.deal(&seven, 7, None).reason, DealReason::EvenFootprint);
        }
    }

    #[test]
    fn bytes_on_nodes_beyond_the_topology_are_left_out_of_the_evenness() {
        // A two-node model reading a registry that knows a third node: 5 MiB on each of the
        // two nodes is even, whatever lies on node 2.
        let t = numatask_alloc::TopologyBuilder::synthetic("numa:2 core:1 pu:1")
            .build()
            .unwrap();
        for m in [
            LocalityModel::new(&t, None),
            LocalityModel::new(&t, None).with_even_tolerance(0.0),
        ] {
            let d = NodeBytes::from_bytes(vec![5 << 20, 5 << 20, 100 << 20]);
            assert_eq!(
                m.deal(&d, 1, None),
                Deal {
                    node: 1,
                    reason: DealReason::EvenFootprint
                }
            );
        }
    }

    #[test]
    fn dealing_matches_algorithm_1_with_the_default_tolerance_on_constructed_footprints() {
        let t = Topology::preset(Preset::Opteron6172).unwrap();
        let m = LocalityModel::new(&t, None);
        let mut x = 0x2545_F491_4F6C_DD1Du64;
        let mut next = move || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        let (mut even, mut dealt) = (0, 0);
        for case in 0..3000 {
            // Around 4 MiB per node, spread by up to +-1/2^k of it: coefficients of variation
            // on both sides of 0.1.
            let spread = 1u64 << (case % 6);
            let d: Vec<u64> = (0..8)
                .map(|_| (4 << 20) + (next() % ((8 << 20) / spread)) - (4 << 20) / spread)
                .collect();
            let current = (next() % 8) as usize;
            let deal = m.deal(&NodeBytes::from_bytes(d.clone()), current, None);
            let mean = d.iter().sum::<u64>() as f64 / 8.0;
            let sd = (d.iter().map(|&b| (b as f64 - mean).powi(2)).sum::<f64>() / 8.0).sqrt();
            if sd <= DEFAULT_EVEN_TOLERANCE * mean {
                even += 1;
                assert_eq!(
                    deal,
                    Deal {
                        node: current,
                        reason: DealReason::EvenFootprint
                    },
                    "{d:?}"
                );
            } else {
                dealt += 1;
                assert_eq!(deal.reason, DealReason::LeastCost, "{d:?}");
                assert_eq!(
                    deal.node,
                    brute_force(&t, &d, current),
                    "{d:?} from {current}"
                );
            }
        }
        assert!(even > 500 && dealt > 500, "{even} even, {dealt} dealt");
    }

    #[test]
    fn distance_weighting_can_choose_a_node_holding_no_bytes() {
        // Nodes 0, 3 and 7 hold equal bytes and are 22 apart from each other; node 1 is 16 from
        // each of them, so it reads everything more cheaply (48) than any holder (10 + 22 + 22).
        let (t, m) = paper();
        assert_eq!(
            (t.distance(1, 0), t.distance(1, 3), t.distance(1, 7)),
            (16, 16, 16)
        );
        let d = NodeBytes::from_bytes(vec![1 << 22, 0, 0, 1 << 22, 0, 0, 0, 1 << 22]);
        assert_eq!(
            m.deal(&d, 0, None),
            Deal {
                node: 1,
                reason: DealReason::LeastCost
            }
        );
    }

    #[test]
    fn marked_intensive_dependence_decides_the_node() {
        let (_, m) = paper();
        let d = NodeBytes::from_bytes(vec![64 << 20, 0, 0, 0, 0, 0, 0, 0]);
        let intensive = NodeBytes::from_bytes(vec![0, 0, 0, 0, 0, 0, 1 << 12, 0]);
        assert_eq!(
            m.deal(&d, 1, Some(&intensive)),
            Deal {
                node: 6,
                reason: DealReason::IntensiveDependence
            }
        );
    }

    #[test]
    fn an_intensive_dependence_spread_evenly_names_no_node() {
        let (_, m) = paper();
        // Fine distribution: the intensive range is on every node alike, the rest of the
        // footprint mostly on node 5. Algorithm 1 decides (least cost: node 5), not the
        // lowest of the tied nodes.
        let d = NodeBytes::from_bytes(vec![
            1 << 20,
            1 << 20,
            1 << 20,
            1 << 20,
            1 << 20,
            9 << 20,
            1 << 20,
            1 << 20,
        ]);
        let intensive = NodeBytes::from_bytes(vec![1 << 20; 8]);
        assert_eq!(
            m.deal(&d, 2, Some(&intensive)),
            Deal {
                node: 5,
                reason: DealReason::LeastCost
            }
        );
        // Tied on two nodes only: still no single node.
        let intensive = NodeBytes::from_bytes(vec![0, 0, 0, 4096, 4096, 0, 0, 0]);
        assert_eq!(
            m.deal(&d, 2, Some(&intensive)).reason,
            DealReason::LeastCost
        );
        // Even footprint and even intensive dependence: the task stays where it was made.
        let even = NodeBytes::from_bytes(vec![1 << 20; 8]);
        assert_eq!(
            m.deal(&even, 2, Some(&even)),
            Deal {
                node: 2,
                reason: DealReason::EvenFootprint
            }
        );
    }

    #[test]
    fn an_intensive_dependence_is_placed_among_the_runtimes_own_nodes() {
        // A two-node runtime on data whose registry knows a third node (another topology):
        // the bytes on node 2 are left out, so node 1, which holds the most of the rest,
        // decides, as the intensive dependence's node.
        let t = numatask_alloc::TopologyBuilder::synthetic("numa:2 core:1 pu:1")
            .build()
            .unwrap();
        let m = LocalityModel::new(&t, None);
        let intensive = NodeBytes::from_bytes(vec![0, 5 << 20, 9 << 20]);
        let d = NodeBytes::from_bytes(vec![64 << 20, 5 << 20, 9 << 20]);
        assert_eq!(
            m.deal(&d, 1, Some(&intensive)),
            Deal {
                node: 1,
                reason: DealReason::IntensiveDependence
            }
        );
    }

    #[test]
    fn steal_order_visits_nodes_by_distance_with_scaled_thresholds() {
        let (t, m) = paper();
        for thief in 0..8 {
            let order = m.steal_order(thief);
            assert_eq!(order.len(), 7);
            assert!(
                order
                    .windows(2)
                    .all(|w| (w[0].distance, w[0].node) < (w[1].distance, w[1].node))
            );
            for cand in order {
                assert_eq!(cand.distance, t.distance(thief, cand.node));
                // distance / 10 * C with C = 6: 16 -> 9.6 -> more than 9 tasks; 22 -> 13.2 -> 13.
                let expect = match cand.distance {
                    16 => 9,
                    22 => 13,
                    other => panic!("unexpected distance {other}"),
                };
                assert_eq!(cand.threshold, expect);
            }
        }
        assert_eq!(
            m.steal_order(0).iter().map(|c| c.node).collect::<Vec<_>>(),
            vec![1, 2, 4, 6, 3, 5, 7]
        );
    }

    #[test]
    fn the_footprint_threshold_is_one_caches_share_per_core() {
        // The paper's machine: one 5 MiB L3 per node of 6 cores.
        let (t, m) = paper();
        assert_eq!(m.footprint_threshold(), t.llc_bytes() / 6);
        // Four 32 MiB L3 caches per node, each shared by 8 of the node's 32 cores.
        let t = numatask_alloc::TopologyBuilder::synthetic(
            "pack:2 numa:1 l3:4(size=33554432) core:8 pu:1",
        )
        .build()
        .unwrap();
        assert_eq!(t.cores_per_node(), 32);
        assert_eq!(LocalityModel::new(&t, None).footprint_threshold(), 4 << 20);
    }

    #[test]
    fn an_asymmetric_matrix_is_read_from_the_thief_to_the_victim_as_dealing_reads_it() {
        // Row: the node running a task; column: the node holding its data.
        let t = numatask_alloc::TopologyBuilder::synthetic("pack:3 numa:1 core:2 pu:1")
            .distances(vec![10, 30, 20, 12, 10, 20, 20, 20, 10])
            .build()
            .unwrap();
        let m = LocalityModel::new(&t, None);
        // Node 0 reaches node 2's data at 20, node 1's at 30 (node 1 reaches node 0's at 12).
        assert_eq!(
            m.steal_order(0),
            &[
                StealCandidate {
                    node: 2,
                    distance: 20,
                    threshold: 4
                },
                StealCandidate {
                    node: 1,
                    distance: 30,
                    threshold: 6
                },
            ]
        );
        assert_eq!(m.steal_order(1)[0].node, 0, "1 reaches 0 at 12");
        // Dealing: 4 MiB on nodes 0 and 1 costs 88 Mi from node 1, 160 Mi from 0 and 2.
        let d = NodeBytes::from_bytes(vec![4 << 20, 4 << 20, 0]);
        assert_eq!(m.deal(&d, 2, None).node, 1);
    }

    #[test]
    fn a_footprint_summing_past_u64_is_dealt_not_wrapped() {
        let (_, m) = paper();
        let d = NodeBytes::from_bytes(vec![u64::MAX, 1 << 30, 0, 0, 0, 0, 0, 0]);
        assert_eq!(
            m.deal(&d, 3, None),
            Deal {
                node: 0,
                reason: DealReason::LeastCost
            }
        );
        assert_eq!(d.known(), u64::MAX);
    }

    #[test]
    fn vicinity_forbids_steals_beyond_its_distance() {
        let t = Topology::preset(Preset::Opteron6172).unwrap();
        let m = LocalityModel::new(&t, Some(16));
        for thief in 0..8 {
            assert!(m.steal_order(thief).iter().all(|c| c.distance <= 16));
        }
        assert_eq!(m.steal_order(0).len(), 4);
        assert!(LocalityModel::new(&t, Some(10)).steal_order(3).is_empty());
    }
}
