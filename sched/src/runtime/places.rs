//! `OMP_PLACES` resolved against the topology and the process's CPU binding: the places
//! workers are bound to, and the place of the calling thread (`OMP_PROC_BIND=primary`).

use numatask_alloc::{CoreGroup, Topology};

use crate::config::{Places, write_place_list};
use crate::error::BuildError;

/// One place of `OMP_PLACES`, resolved against the topology.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct ResolvedPlace {
    /// Its processing units (OS indices, sorted) that the process may run on.
    pub(super) pus: Vec<usize>,
    /// The cores holding them, in order (never empty).
    pub(super) cores: Vec<usize>,
    /// The node of its first core.
    pub(super) node: usize,
}

/// The places `places` names among the topology's `usable` cores (never empty): an error
/// for an explicit processor the topology lacks, or a place none of whose processors the
/// process may run on.
pub(super) fn resolve_places(
    places: &Places,
    env_text: Option<&str>,
    topology: &Topology,
    usable: &[usize],
) -> Result<Vec<ResolvedPlace>, BuildError> {
    let error = |reason: String| {
        // The places as the user wrote them: `OMP_PLACES`'s text, or the builder's value as
        // `OMP_PLACES` would write it. A list repeated many times would make a message of many
        // kilobytes: cut short.
        let mut text = env_text.map_or_else(|| places.to_string(), str::to_owned);
        if let Some((cut, _)) = text.char_indices().nth(120) {
            text.truncate(cut);
            text.push_str("...");
        }
        BuildError::Places {
            from_env: env_text.is_some(),
            places: text,
            reason,
        }
    };
    // What the parser of `OMP_PLACES` refuses, given to the builder.
    match places {
        Places::CoresN(0)
        | Places::ThreadsN(0)
        | Places::NumaDomainsN(0)
        | Places::SocketsN(0)
        | Places::LlCachesN(0) => {
            return Err(error("a count of places must be at least 1".into()));
        }
        Places::List(list) if list.is_empty() => {
            return Err(error("an empty list names no place".into()));
        }
        Places::List(list) if list.iter().any(Vec::is_empty) => {
            return Err(error("a place names no processor".into()));
        }
        _ => {}
    }
    let core_nodes: Vec<usize> = topology.cores().map(|c| c.node).collect();
    let node_of = |core: usize| core_nodes.get(core).copied().unwrap_or(0);
    // Each core's processors the process may run on, and whether it may run on the core.
    let usable_pus: Vec<Vec<usize>> = (0..topology.num_cores())
        .map(|core| topology.usable_pus(core))
        .collect();
    let mut usable_core = vec![false; topology.num_cores()];
    for &core in usable {
        if let Some(u) = usable_core.get_mut(core) {
            *u = true;
        }
    }
    let is_usable = |core: usize| usable_core.get(core).copied().unwrap_or(false);
    let one_core = |core: usize, pus: Vec<usize>| ResolvedPlace {
        pus,
        cores: vec![core],
        node: node_of(core),
    };
    let mut resolved: Vec<ResolvedPlace> = match places {
        Places::Cores | Places::CoresN(_) => usable
            .iter()
            .map(|&core| one_core(core, usable_pus[core].clone()))
            .collect(),
        Places::Threads | Places::ThreadsN(_) => usable
            .iter()
            .flat_map(|&core| usable_pus[core].iter().map(move |&pu| (core, pu)))
            .map(|(core, pu)| one_core(core, vec![pu]))
            .collect(),
        Places::NumaDomains
        | Places::NumaDomainsN(_)
        | Places::Sockets
        | Places::SocketsN(_)
        | Places::LlCaches
        | Places::LlCachesN(_) => {
            let groups = match places {
                Places::NumaDomains | Places::NumaDomainsN(_) => topology
                    .nodes()
                    .iter()
                    .map(|node| node.cores.iter().map(|c| c.index).collect())
                    .collect(),
                Places::Sockets | Places::SocketsN(_) => topology.core_groups(CoreGroup::Package),
                _ => topology.core_groups(CoreGroup::LastLevelCache),
            };
            let mut resolved = Vec::new();
            for group in groups {
                let cores: Vec<usize> = group.into_iter().filter(|&c| is_usable(c)).collect();
                if cores.is_empty() {
                    continue;
                }
                let mut pus: Vec<usize> = cores
                    .iter()
                    .flat_map(|&c| usable_pus[c].iter().copied())
                    .collect();
                pus.sort_unstable();
                // The node holding most of the group's cores (a package may span nodes).
                let mut per_node = vec![0usize; topology.num_nodes().max(1)];
                for &core in &cores {
                    if let Some(count) = per_node.get_mut(node_of(core)) {
                        *count += 1;
                    }
                }
                resolved.push(ResolvedPlace {
                    pus,
                    cores,
                    node: node_of_most(&per_node),
                });
            }
            resolved
        }
        Places::List(list) => {
            let core_of = |pu: usize| topology.cores().find(|c| c.pus.contains(&pu));
            let all_pus = || {
                let mut all: Vec<usize> = topology.cores().flat_map(|c| c.pus.clone()).collect();
                all.sort_unstable();
                let mut text = String::new();
                let _ = write_place_list(&mut text, &[all]);
                text
            };
            let mut resolved = Vec::with_capacity(list.len());
            for place in list {
                let mut pus = Vec::with_capacity(place.len());
                let mut cores = Vec::new();
                // Processors of the place per node, for the place's node.
                let mut per_node = vec![0usize; topology.num_nodes().max(1)];
                for &pu in place {
                    let Some(core) = core_of(pu) else {
                        return Err(error(format!(
                            "processor {pu} does not exist (the topology has processors {})",
                            all_pus()
                        )));
                    };
                    // Of a core outside the process's CPU binding, or a processor of a core
                    // in it that is not: left out.
                    if is_usable(core.index) && usable_pus[core.index].contains(&pu) {
                        pus.push(pu);
                        if let Some(count) = per_node.get_mut(core.node) {
                            *count += 1;
                        }
                        if !cores.contains(&core.index) {
                            cores.push(core.index);
                        }
                    }
                }
                if pus.is_empty() {
                    let mut text = String::new();
                    let _ = write_place_list(&mut text, std::slice::from_ref(place));
                    return Err(error(format!(
                        "the place {text} holds no processor the process may run on (its \
                         CPU binding: taskset, numactl or a launcher)"
                    )));
                }
                // The node holding most of the place's processors.
                let node = node_of_most(&per_node);
                resolved.push(ResolvedPlace { pus, cores, node });
            }
            resolved
        }
    };
    if let Some(n) = places.count() {
        resolved.truncate(n);
    }
    if resolved.is_empty() {
        // Only a topology without cores gets here: one place, core 0, wherever the OS runs it.
        resolved.push(one_core(0, Vec::new()));
    }
    Ok(resolved)
}

/// The node with the largest count in `per_node` (the first of a tie).
fn node_of_most(per_node: &[usize]) -> usize {
    let most = per_node.iter().copied().max().unwrap_or(0);
    per_node.iter().position(|&c| c == most).unwrap_or(0)
}

/// The processor (OS index) the calling thread runs on now, if the OS tells.
pub(super) fn current_cpu() -> Option<usize> {
    // SAFETY: no arguments; returns the CPU of the calling thread or -1.
    usize::try_from(unsafe { libc::sched_getcpu() }).ok()
}

/// The usable core the calling thread runs on now (the place of `OMP_PROC_BIND=primary`).
/// On a synthetic topology, whose cores are not the machine's, the first core.
pub(super) fn calling_core(topology: &Topology, usable: &[usize]) -> Option<usize> {
    if topology.is_synthetic() {
        return usable.first().copied();
    }
    let cpu = current_cpu()?;
    let core = topology.cores().find(|c| c.pus.contains(&cpu))?.index;
    usable
        .contains(&core)
        .then_some(core)
        .or(usable.first().copied())
}
