//! Pinning threads: the cores and processing units this process may run on (its CPU binding),
//! binding the calling thread to a core or an OpenMP place, and mapping the cores of a
//! synthetic topology onto the real machine's round-robin.

use std::sync::OnceLock;

use hwlocality::cpu::binding::CpuBindingFlags;
use hwlocality::cpu::cpuset::CpuSet;

use super::Topology;
use super::discovery::{core_objects, os_indices};
use super::hwloc_env::{hwloc_variables, named, oversized_hwloc_synthetic};
use crate::error::AllocError;

static REAL: OnceLock<Option<hwlocality::Topology>> = OnceLock::new();

impl Topology {
    /// The cores (indices, in order) this process may run on: on the real machine, those
    /// with a processing unit in the process's CPU binding (`taskset`, `numactl
    /// --physcpubind`, the binding a batch system or an MPI launcher gives each process: the
    /// union of its threads' bindings, read when first asked and kept, so bind the process
    /// before its first runtime starts); every core when the binding cannot be read or leaves
    /// none. On
    /// a synthetic topology every core (pinning maps them onto the real cores the process may
    /// use).
    pub fn usable_cores(&self) -> Vec<usize> {
        let usable: Vec<usize> = match self.hwloc().and_then(process_binding) {
            Some(bound) => self
                .cores()
                .filter(|c| c.pus.iter().any(|pu| bound.binary_search(pu).is_ok()))
                .map(|c| c.index)
                .collect(),
            None => Vec::new(),
        };
        if usable.is_empty() {
            (0..self.num_cores()).collect()
        } else {
            usable
        }
    }

    /// The processing units (OS indices) of core `core` that this process may run on: those
    /// in its CPU binding (see [`usable_cores`](Self::usable_cores)), or all of the core's
    /// when it has none there or the binding cannot be read; on a synthetic topology all of
    /// the core's. Empty for a core that does not exist.
    pub fn usable_pus(&self, core: usize) -> Vec<usize> {
        let Some(c) = self.cores().nth(core) else {
            return Vec::new();
        };
        self.hwloc()
            .and_then(|hw| within_binding(process_binding(hw), &c.pus))
            .unwrap_or_else(|| c.pus.clone())
    }

    /// Pins the calling thread to core `core` of this topology.
    ///
    /// On the real machine the thread is bound to the core's processing units that the
    /// process may run on (see [`usable_cores`](Self::usable_cores); all of them when it may
    /// run on none). On a synthetic topology the core is mapped onto the real machine's usable
    /// cores round-robin (`core` modulo their number) and [`Pinning::Mapped`] says which real
    /// core was used.
    pub fn pin_current_thread(&self, core: usize) -> Result<Pinning, AllocError> {
        self.pin_current_thread_in_slot(core, core)
    }

    /// As [`pin_current_thread`](Self::pin_current_thread), but on a synthetic topology the
    /// thread goes to real usable core `slot` modulo their number, whatever `core` is. A pool
    /// passes each worker's index, so that its workers land on distinct real cores when
    /// there are enough, even on model cores far apart (`OMP_PROC_BIND=spread` on a model
    /// larger than the machine). On the real machine `slot` is not used.
    pub fn pin_current_thread_in_slot(
        &self,
        core: usize,
        slot: usize,
    ) -> Result<Pinning, AllocError> {
        let num_cores = self.num_cores();
        if core >= num_cores {
            return Err(AllocError::NoSuchCore { core, num_cores });
        }
        self.pin_inner(core, slot, |_| {
            (self.usable_pus(core), Pinning::Exact { core })
        })
    }

    /// Pins the calling thread to the processing units `pus` (OS indices) of this topology:
    /// an OpenMP place (`OMP_PLACES`) other than one core. On the real machine the thread is
    /// bound to those of `pus` in the process's CPU binding (all of `pus` when none is). On a
    /// synthetic topology it goes to real usable core `slot` modulo their number, as
    /// [`pin_current_thread_in_slot`](Self::pin_current_thread_in_slot) does, and
    /// [`Pinning::Mapped`] names the core of the topology holding `pus[0]`.
    ///
    /// A processing unit the topology does not have is an error
    /// ([`AllocError::NoSuchPu`]), as is an empty `pus`.
    pub fn pin_current_thread_to_pus(
        &self,
        pus: &[usize],
        slot: usize,
    ) -> Result<Pinning, AllocError> {
        let core_of = |pu: usize| self.cores().find(|c| c.pus.contains(&pu)).map(|c| c.index);
        let mut cores = Vec::with_capacity(pus.len());
        for &pu in pus {
            cores.push(core_of(pu).ok_or(AllocError::NoSuchPu { pu })?);
        }
        let Some(&core) = cores.first() else {
            return Err(AllocError::EmptyPlace);
        };
        self.pin_inner(core, slot, |hw| {
            let mut set = within_binding(process_binding(hw), pus).unwrap_or_else(|| pus.to_vec());
            set.sort_unstable();
            let pinning = Pinning::Place {
                first_pu: set[0],
                pus: set.len(),
            };
            (set, pinning)
        })
    }

    /// Binds the calling thread: on the real machine to what `real` gives (PUs and the
    /// pinning to report), on a synthetic topology to real usable core `slot` modulo their
    /// number (reported as mapped from `core`).
    fn pin_inner(
        &self,
        core: usize,
        slot: usize,
        real: impl FnOnce(&hwlocality::Topology) -> (Vec<usize>, Pinning),
    ) -> Result<Pinning, AllocError> {
        #[cfg(miri)]
        {
            // Miri stub: pinning is a no-op.
            let _ = real;
            return Ok(Pinning::Mapped {
                core,
                real_core: slot,
            });
        }
        #[cfg(not(miri))]
        {
            let (real_topology, cpuset, pinning) = if let Some(hw) = self.hwloc() {
                let (pus, pinning) = real(hw);
                (hw, cpuset_of(&pus), pinning)
            } else {
                let real = REAL
                    .get_or_init(|| {
                        // hwloc reads its own variables here too: one naming a synthetic topology
                        // too large to simulate would take it minutes.
                        if oversized_hwloc_synthetic().is_some() {
                            return None;
                        }
                        hwlocality::Topology::new()
                            .ok()
                            .filter(|t| t.is_this_system())
                    })
                    .as_ref()
                    .ok_or_else(|| AllocError::Pin {
                        core,
                        reason: match hwloc_variables().as_slice() {
                            [] => "the real machine's topology could not be read".into(),
                            set => format!(
                                "the real machine's topology could not be read (hwloc reads {} \
                             in its place)",
                                named(set)
                            ),
                        },
                    })?;
                let real_cores = real_core_pus(real);
                if real_cores.is_empty() {
                    return Err(AllocError::Pin {
                        core,
                        reason: "the machine has no core".into(),
                    });
                }
                let real_core = slot % real_cores.len();
                (
                    real,
                    cpuset_of(&real_cores[real_core]),
                    Pinning::Mapped { core, real_core },
                )
            };
            real_topology
                .bind_cpu(&cpuset, CpuBindingFlags::THREAD)
                .map_err(|e| AllocError::Pin {
                    core,
                    reason: e.to_string(),
                })?;
            Ok(pinning)
        }
    }
}

/// How [`Topology::pin_current_thread`] pinned a thread.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Pinning {
    /// Bound to the topology's own core.
    Exact {
        /// The core.
        core: usize,
    },
    /// Bound to a set of the topology's processing units
    /// ([`Topology::pin_current_thread_to_pus`]).
    Place {
        /// The lowest OS index of the set (as bound: within the process's CPU binding).
        first_pu: usize,
        /// How many processing units the set holds.
        pus: usize,
    },
    /// The topology is synthetic: bound to a real core instead.
    Mapped {
        /// The synthetic topology's core.
        core: usize,
        /// The real machine's core (index among its cores) actually used.
        real_core: usize,
    },
}

fn cpuset_of(pus: &[usize]) -> CpuSet {
    let mut set = CpuSet::new();
    for &pu in pus {
        set.set(pu);
    }
    set
}

/// The PUs of every core of the real machine that this process may run on: allowed (its
/// cgroup) and, when that leaves any, in its CPU binding.
fn real_core_pus(hw: &hwlocality::Topology) -> Vec<Vec<usize>> {
    let allowed = hw.allowed_cpuset();
    let cores: Vec<Vec<usize>> = core_objects(hw)
        .filter_map(|core| core.cpuset())
        .map(|set| os_indices(&(&*set & &*allowed)))
        .filter(|pus| !pus.is_empty())
        .collect();
    let bound = process_binding(hw);
    let usable: Vec<Vec<usize>> = cores
        .iter()
        .filter_map(|pus| within_binding(bound, pus))
        .collect();
    if usable.is_empty() { cores } else { usable }
}

/// The OS indices (sorted) of the processing units the process is bound to: the union of
/// its threads' bindings (as hwloc reads a process's), read the first time it is asked and
/// kept (a runtime's pinned workers would narrow later reads); `None` while it cannot be
/// read, which is tried again at the next call.
fn process_binding(hw: &hwlocality::Topology) -> Option<&'static [usize]> {
    static BOUND: OnceLock<Vec<usize>> = OnceLock::new();
    if let Some(pus) = BOUND.get() {
        return Some(pus);
    }
    let set = hw.cpu_binding(CpuBindingFlags::PROCESS).ok()?;
    let pus = os_indices(&set);
    if pus.is_empty() {
        return None;
    }
    Some(BOUND.get_or_init(|| pus))
}

/// The `pus` within `bound`, if any (`None` also when the binding is unknown).
fn within_binding(bound: Option<&[usize]>, pus: &[usize]) -> Option<Vec<usize>> {
    let bound = bound?;
    let inside: Vec<usize> = pus
        .iter()
        .copied()
        .filter(|pu| bound.binary_search(pu).is_ok())
        .collect();
    (!inside.is_empty()).then_some(inside)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::AllocError;
    use crate::topology::*;

    #[test]
    fn pinning_on_a_synthetic_topology_maps_onto_real_cores() {
        let t = Topology::preset(Preset::Opteron6172).unwrap();
        let real = Topology::system().unwrap().num_cores();
        let handle = std::thread::spawn(move || t.pin_current_thread(47));
        let pinning = handle.join().unwrap().unwrap();
        assert_eq!(
            pinning,
            Pinning::Mapped {
                core: 47,
                real_core: 47 % real
            }
        );
        let t = Topology::preset(Preset::Opteron6172).unwrap();
        assert!(matches!(
            t.pin_current_thread(48),
            Err(AllocError::NoSuchCore {
                core: 48,
                num_cores: 48
            })
        ));
    }

    #[test]
    fn pinning_to_processing_units_checks_them_and_maps_a_model_onto_real_cores() {
        let t = Topology::preset(Preset::Opteron6172).unwrap();
        let real = Topology::system().unwrap().num_cores();
        // The preset's PUs are 0..48, one per core: PU 13 is core 13's.
        let pinning = std::thread::scope(|s| {
            s.spawn(|| t.pin_current_thread_to_pus(&[13, 12], 5))
                .join()
                .unwrap()
        });
        assert_eq!(
            pinning.unwrap(),
            Pinning::Mapped {
                core: 13,
                real_core: 5 % real
            }
        );
        assert_eq!(
            t.pin_current_thread_to_pus(&[3, 48], 0)
                .unwrap_err()
                .to_string(),
            "processing unit 48 does not exist in the topology"
        );
        let empty = t.pin_current_thread_to_pus(&[], 0).unwrap_err();
        assert!(matches!(empty, AllocError::EmptyPlace), "{empty}");
        // On the real machine: bound to exactly the PUs asked for.
        let sys = Topology::system().unwrap();
        let pu = sys.usable_pus(sys.usable_cores()[0])[0];
        let pinning = std::thread::scope(|s| {
            s.spawn(|| sys.pin_current_thread_to_pus(&[pu], 0))
                .join()
                .unwrap()
        });
        assert_eq!(
            pinning.unwrap(),
            Pinning::Place {
                first_pu: pu,
                pus: 1
            }
        );
    }
}
