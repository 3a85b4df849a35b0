//! The decisions of the core paper's locality-aware scheduler, as pure functions of the topology
//! and a task's footprint, so that they can be tested exactly against the paper's 8-node machine
//! (Muddukrishna, Jonsson, Brorsson 2015, section 4.1):
//!
//! - **Algorithm 1 (dealing)**: with `D` the task's bytes per node, if
//!   `sum(D) > LLC size / C` and `stddev(D) > 0`, the task goes to the node `i` with the least
//!   distance-weighted cost `sum_j D[j] * distance(i, j)`; otherwise it stays on the current node.
//!   A dependence the programmer marked as the most access-intensive one (the paper's proposed
//!   clause, Algorithm 3's index `a`) sends the task to the node holding most of that dependence
//!   (when one node holds strictly most of it; a tie, as under fine distribution, leaves the
//!   decision to the rest of Algorithm 1).
//! - **Algorithm 2 (finding work)**: a worker takes from its own node's queue first, then visits
//!   the other nodes in order of distance, and steals from node `i` only if its queue holds more
//!   than `distance(i, n) * C` tasks, where distances are normalized so that local is 1 (an OS
//!   distance of 16 against a local 10 is 1.6). A vicinity bound forbids steals beyond a distance.
//!
//! `C` is the number of cores per node, the LLC size is one last-level cache.

use numatask_alloc::{NodeBytes, Topology};

/// Why a task was dealt where it was.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DealReason {
    /// The footprint is below `LLC / C`: not worth moving.
    SmallFootprint,
    /// Every node holds the same bytes (standard deviation 0): no node is better.
    EvenFootprint,
    /// The node with the least distance-weighted cost.
    LeastCost,
    /// The node holding most of the dependence marked access-intensive.
    IntensiveDependence,
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
    cores_per_node: usize,
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
    /// (an OS distance, inclusive) are never stolen from.
    pub fn new(topology: &Topology, vicinity: Option<u32>) -> Self {
        let n = topology.num_nodes();
        let c = topology.cores_per_node();
        let distances = topology.distance_matrix().to_vec();
        let steal_order = (0..n)
            .map(|thief| {
                let local = distances[thief * n + thief].max(1);
                let mut others: Vec<StealCandidate> = (0..n)
                    .filter(|&v| v != thief)
                    .map(|v| {
                        let distance = distances[v * n + thief];
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
            footprint_threshold: topology.llc_bytes() / c as u64,
            cores_per_node: c,
            steal_order,
        }
    }

    /// Number of nodes.
    pub fn num_nodes(&self) -> usize {
        self.num_nodes
    }

    /// `C`, cores per node.
    pub fn cores_per_node(&self) -> usize {
        self.cores_per_node
    }

    /// `LLC size / C` in bytes.
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
        let sum: u64 = bytes.iter().sum();
        if sum <= self.footprint_threshold {
            return Deal {
                node: current,
                reason: DealReason::SmallFootprint,
            };
        }
        // stddev > 0 exactly when some node's count differs from another's (missing = 0).
        let first = bytes.first().copied().unwrap_or(0);
        let uneven = (bytes.len() < self.num_nodes && sum > 0) || bytes.iter().any(|&b| b != first);
        if !uneven {
            return Deal {
                node: current,
                reason: DealReason::EvenFootprint,
            };
        }
        let n = self.num_nodes;
        let cost = |i: usize| -> u128 {
            bytes
                .iter()
                .enumerate()
                .map(|(j, &b)| u128::from(b) * u128::from(self.distances[i * n + j]))
                .sum()
        };
        // Least cost; ties go to the current node, then to the lowest index.
        let mut best = (cost(current), current);
        for i in 0..n {
            let c = cost(i);
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
    /// The node holding strictly more of `bytes` than any other, if one does. An intensive
    /// dependence spread evenly (fine distribution) names no node: sending its tasks to the
    /// lowest of the tied nodes would pile every one of them on node 0, so Algorithm 1
    /// decides them as if nothing were marked.
    fn sole_dominant_node(&self, bytes: &NodeBytes) -> Option<usize> {
        let known = &bytes.per_node()[..bytes.per_node().len().min(self.num_nodes)];
        let node = bytes.dominant_node().filter(|&n| n < known.len())?;
        let max = known[node];
        (known.iter().filter(|&&b| b == max).count() == 1).then_some(node)
    }
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

    fn paper() -> (Topology, LocalityModel) {
        let t = Topology::preset(Preset::Opteron6172).unwrap();
        let m = LocalityModel::new(&t, None);
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
                assert_eq!(cand.distance, t.distance(cand.node, thief));
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
