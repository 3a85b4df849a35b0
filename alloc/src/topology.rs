//! Machine topology: NUMA nodes, their cores and memory, the node distance matrix and the
//! last-level cache, discovered through hwloc (the `hwlocality` bindings) or described
//! synthetically for tests and simulations.
//!
//! # Where a topology comes from
//!
//! [`Topology::current`] is the process-wide topology every other part of numatask uses. It is
//! read once, from the environment variable `NUMATASK_TOPOLOGY` when it is set, and from the real
//! machine otherwise. The variable accepts:
//!
//! | value | meaning |
//! |---|---|
//! | `system` | the real machine (the default); refused when one of hwloc's own variables (`HWLOC_SYNTHETIC`, `HWLOC_XMLFILE`, `HWLOC_FSROOT`, `HWLOC_CPUID_PATH`) makes hwloc describe another topology in its place |
//! | `preset:opteron6172` (or just `opteron6172`) | the core paper's machine, see [`Preset`] |
//! | `synthetic:<hwloc string>` | an hwloc synthetic description, e.g. `synthetic:pack:2 numa:2 core:4 pu:1`; at most 256 NUMA nodes, 16,384 processing units and 4,096 children per object |
//! | `xml:<path>` | an hwloc XML export, with its `distances2` matrix if it has one (a latency matrix, such as hwloc's `NUMALatency`, rather than one of unstated meaning; bandwidth matrices are ignored; a matrix that does not cover every NUMA node or fails the checks of [`TopologyBuilder::distances`] is an error; only a file without one gets the default 10 local / 20 remote) |
//!
//! [`TopologyBuilder`] does the same from code and can also set a distance matrix.
//!
//! # Synthetic topologies
//!
//! Anything that is not the real machine is *synthetic* ([`Topology::is_synthetic`]). On a
//! synthetic topology the allocator records where every page is meant to go but does not ask the
//! kernel to put it there, and [`Topology::pin_current_thread`] maps the topology's cores onto the
//! real machine's cores round-robin, so no thread is ever pinned to a PU that does not exist.
//!
//! # Indices
//!
//! Nodes are numbered `0..num_nodes()` in increasing OS index ([`NumaNode::os_index`] keeps the
//! OS number). That order is also the order in which the kernel interleaves pages over a node
//! mask, which is what lets the allocator's registry predict fine-distributed pages exactly.
//! Cores are numbered `0..num_cores()` node by node.

use std::fmt;
use std::io::Read;
use std::os::unix::fs::OpenOptionsExt;
use std::path::PathBuf;
use std::sync::{Arc, OnceLock};

use hwlocality::cpu::binding::CpuBindingFlags;
use hwlocality::cpu::cpuset::CpuSet;
use hwlocality::object::TopologyObject;
use hwlocality::object::attributes::ObjectAttributes;
use hwlocality::object::distance::{AddDistancesFlags, Distances, DistancesKind};
use hwlocality::object::types::ObjectType;
use hwlocality::topology::builder::BuildFlags;
use hwlocality::topology::export::xml::XMLExportFlags;

use crate::env::trim_blanks;
use crate::error::AllocError;

/// The environment variable that selects a synthetic topology.
pub const TOPOLOGY_ENV: &str = "NUMATASK_TOPOLOGY";

/// Distance on the diagonal of a default matrix (the ACPI SLIT convention: local = 10).
pub const LOCAL_DISTANCE: u32 = 10;
/// Distance between distinct nodes when the OS gives no matrix.
pub const DEFAULT_REMOTE_DISTANCE: u32 = 20;

/// One NUMA node.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NumaNode {
    /// Index of the node in this topology (`0..num_nodes()`, increasing OS index).
    pub index: usize,
    /// The node's number for the operating system (what `numactl -H` shows).
    pub os_index: usize,
    /// Cores attached to this node.
    pub cores: Vec<Core>,
    /// Memory local to the node, in bytes (0 when unknown, as for the nodes of a synthetic
    /// description that gives none: `numa:2(memory=16GB)` gives them).
    pub memory_bytes: u64,
}

/// One core and its hardware threads.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Core {
    /// Index of the core in this topology (`0..num_cores()`, node by node).
    pub index: usize,
    /// Index of the node the core belongs to.
    pub node: usize,
    /// OS indices of the core's processing units (hardware threads).
    pub pus: Vec<usize>,
}

/// Where a topology's distance matrix came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DistanceSource {
    /// Read from the operating system's tables (ACPI SLIT through hwloc).
    Os,
    /// Read from an hwloc XML file.
    Xml,
    /// Given explicitly (a preset or [`TopologyBuilder::distances`]).
    Given,
    /// Nothing described distances: 10 on the diagonal and 20 elsewhere.
    Default,
}

impl fmt::Display for DistanceSource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Os => "from the OS",
            Self::Xml => "from the XML file",
            Self::Given => "given explicitly",
            Self::Default => "default (none given: 10 local, 20 remote)",
        })
    }
}

/// Named topologies shipped with numatask.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Preset {
    /// The core paper's machine: four AMD Opteron 6172 (Magny-Cours) processors, two dies per
    /// package, each die one NUMA node with six cores, a 5 MiB L3 and (here) 16 GiB of memory:
    /// 8 nodes x 6 cores.
    ///
    /// The distance matrix is the SLIT of a four-socket Opteron 6100 server: 10 local, 16 for the
    /// other die of the package and for dies one HyperTransport hop away, 22 for two hops. Its
    /// maximum, 22, is the maximum the paper reports for its machine (Figure 1).
    ///
    /// ```text
    ///        0   1   2   3   4   5   6   7
    ///   0:  10  16  16  22  16  22  16  22
    ///   1:  16  10  22  16  16  22  22  16
    ///   2:  16  22  10  16  16  16  16  16
    ///   3:  22  16  16  10  16  16  22  22
    ///   4:  16  16  16  16  10  16  16  22
    ///   5:  22  22  16  16  16  10  22  16
    ///   6:  16  22  16  22  16  22  10  16
    ///   7:  22  16  16  22  22  16  16  10
    /// ```
    Opteron6172,
}

impl Preset {
    /// Every preset, for error messages and documentation.
    pub const ALL: [Preset; 1] = [Preset::Opteron6172];

    /// The preset's name as accepted by `NUMATASK_TOPOLOGY=preset:<name>`.
    pub fn name(self) -> &'static str {
        match self {
            Preset::Opteron6172 => "opteron6172",
        }
    }

    fn synthetic(self) -> &'static str {
        match self {
            Preset::Opteron6172 => {
                "pack:4 numa:2(memory=17179869184) l3:1(size=5242880) core:6 pu:1"
            }
        }
    }

    fn distances(self) -> Vec<u32> {
        match self {
            Preset::Opteron6172 => vec![
                10, 16, 16, 22, 16, 22, 16, 22, //
                16, 10, 22, 16, 16, 22, 22, 16, //
                16, 22, 10, 16, 16, 16, 16, 16, //
                22, 16, 16, 10, 16, 16, 22, 22, //
                16, 16, 16, 16, 10, 16, 16, 22, //
                22, 22, 16, 16, 16, 10, 22, 16, //
                16, 22, 16, 22, 16, 22, 10, 16, //
                22, 16, 16, 22, 22, 16, 16, 10, //
            ],
        }
    }
}

impl std::str::FromStr for Preset {
    type Err = AllocError;

    fn from_str(s: &str) -> Result<Self, AllocError> {
        let wanted = trim_blanks(s).to_ascii_lowercase().replace(['-', '_'], "");
        Preset::ALL
            .into_iter()
            .find(|p| p.name() == wanted)
            .ok_or_else(|| AllocError::InvalidTopology {
                spec: s.to_owned(),
                reason: format!(
                    "unknown preset '{}': the presets are {}",
                    crate::env::shown(trim_blanks(s)),
                    Preset::ALL.map(Preset::name).join(", ")
                ),
            })
    }
}

/// What a topology was built from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TopologySource {
    /// The real machine.
    System,
    /// A named preset.
    Preset(Preset),
    /// An hwloc synthetic description.
    Synthetic(String),
    /// An hwloc XML file.
    Xml(PathBuf),
}

impl fmt::Display for TopologySource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::System => f.write_str("system"),
            Self::Preset(p) => write!(f, "preset:{}", p.name()),
            Self::Synthetic(s) => write!(f, "synthetic:{s}"),
            Self::Xml(p) => write!(f, "xml:{}", p.display()),
        }
    }
}

/// Builds a [`Topology`] from the real machine, a preset, an hwloc synthetic string or an XML
/// file, optionally with an explicit distance matrix.
///
/// ```
/// use numatask_alloc::topology::TopologyBuilder;
/// let topo = TopologyBuilder::synthetic("pack:2 numa:2 core:2 pu:1")
///     .distances(vec![10, 12, 20, 20, 12, 10, 20, 20, 20, 20, 10, 12, 20, 20, 12, 10])
///     .build()?;
/// assert_eq!(topo.num_nodes(), 4);
/// assert_eq!(topo.distance(0, 1), 12);
/// assert!(topo.is_synthetic());
/// # Ok::<(), numatask_alloc::AllocError>(())
/// ```
#[derive(Clone, Debug)]
pub struct TopologyBuilder {
    source: TopologySource,
    distances: Option<Vec<u32>>,
}

impl TopologyBuilder {
    /// The real machine.
    pub fn system() -> Self {
        Self {
            source: TopologySource::System,
            distances: None,
        }
    }

    /// A named preset (with its distance matrix).
    pub fn preset(preset: Preset) -> Self {
        Self {
            source: TopologySource::Preset(preset),
            distances: Some(preset.distances()),
        }
    }

    /// An hwloc synthetic description such as `"pack:4 numa:2 core:6 pu:1"`.
    pub fn synthetic(description: impl Into<String>) -> Self {
        Self {
            source: TopologySource::Synthetic(description.into()),
            distances: None,
        }
    }

    /// An hwloc XML export; its NUMA distance matrix is used when it has one. [`build`]
    /// refuses a matrix that does not cover every NUMA node, has a value that does not fit in
    /// 32 bits or fails the checks of [`distances`]; a file with no NUMA matrix gets the
    /// default ([`DistanceSource::Default`]).
    ///
    /// [`build`]: Self::build
    /// [`distances`]: Self::distances
    pub fn xml_file(path: impl Into<PathBuf>) -> Self {
        Self {
            source: TopologySource::Xml(path.into()),
            distances: None,
        }
    }

    /// Parses the syntax of `NUMATASK_TOPOLOGY` (see the module documentation).
    pub fn from_spec(spec: &str) -> Result<Self, AllocError> {
        let trimmed = trim_blanks(spec);
        let (kind, rest) = trimmed.split_once(':').unwrap_or((trimmed, ""));
        match kind.to_ascii_lowercase().as_str() {
            // `system` alone: `system:` or a lone `:` is malformed, not the real machine.
            "system" | "" if !trimmed.contains(':') => Ok(Self::system()),
            "preset" => match rest.parse() {
                Ok(p) => Ok(Self::preset(p)),
                // The whole description in the error, not only what follows `preset:`.
                Err(AllocError::InvalidTopology { reason, .. }) => {
                    Err(AllocError::InvalidTopology {
                        spec: spec.to_owned(),
                        reason,
                    })
                }
                Err(other) => Err(other),
            },
            "synthetic" if !trim_blanks(rest).is_empty() => Ok(Self::synthetic(trim_blanks(rest))),
            "xml" if !trim_blanks(rest).is_empty() => Ok(Self::xml_file(trim_blanks(rest))),
            _ => match trimmed.parse::<Preset>() {
                Ok(p) => Ok(Self::preset(p)),
                Err(_) => Err(AllocError::InvalidTopology {
                    spec: spec.to_owned(),
                    reason: format!("expected {}", spec_syntax()),
                }),
            },
        }
    }

    /// Sets the node distance matrix, row-major, `num_nodes * num_nodes` values.
    /// [`build`](Self::build) refuses a matrix of another size, a distance of 0, or a
    /// distance between two nodes smaller than its row's local (diagonal) distance.
    pub fn distances(mut self, matrix: Vec<u32>) -> Self {
        self.distances = Some(matrix);
        self
    }

    /// Discovers or builds the topology.
    pub fn build(self) -> Result<Topology, AllocError> {
        #[cfg(miri)]
        return Ok(miri_stub::topology(self.source));
        #[cfg(not(miri))]
        self.build_hwloc()
    }

    #[cfg(not(miri))]
    fn build_hwloc(self) -> Result<Topology, AllocError> {
        let invalid = |reason: String| AllocError::InvalidTopology {
            spec: self.source.to_string(),
            reason,
        };
        let builder = hwlocality::Topology::builder();
        let builder = match &self.source {
            // hwloc reads a topology described by its own variables in place of the machine's;
            // the check below refuses it, after a synthetic one passed the size check (hwloc
            // would take minutes over a typo).
            TopologySource::System => match oversized_hwloc_synthetic() {
                Some(refusal) => Err(refusal),
                None => Ok(builder),
            },
            TopologySource::Preset(p) => builder
                .from_synthetic(p.synthetic())
                .map_err(|e| e.to_string()),
            TopologySource::Synthetic(s) => check_synthetic_size(s).and_then(|()| {
                builder
                    .from_synthetic(s)
                    .map_err(|e| with_synthetic_hint(s, e.to_string()))
            }),
            // Read here rather than by hwloc, whose binding treats a missing or unreadable
            // file as an impossible error (a panic).
            TopologySource::Xml(path) => {
                read_xml(path).and_then(|xml| builder.from_xml(&xml).map_err(|e| e.to_string()))
            }
        }
        .map_err(&invalid)?;
        let mut hw = builder
            .with_flags(BuildFlags::empty())
            .map_err(|e| invalid(e.to_string()))?
            .build()
            .map_err(|e| {
                // The errno's own message, not the error's debug form.
                let why = e
                    .errno
                    .map_or_else(|| "no reason given".to_owned(), |n| n.to_string());
                invalid(match &self.source {
                    TopologySource::Xml(_) => {
                        format!("hwloc could not load it (not an hwloc XML export?): {why}")
                    }
                    _ => format!("hwloc could not build the topology: {why}"),
                })
            })?;
        if self.source == TopologySource::System && !hw.is_this_system() {
            // Pinning and binding would act on a machine that is not this one, and the labels
            // (`system`, distances from the OS) would be wrong.
            return Err(invalid(not_this_system()));
        }
        let synthetic = self.source != TopologySource::System;
        let mut nodes = read_nodes(&hw);
        if let TopologySource::Synthetic(description) = &self.source
            && !declares_node_memory(description)
        {
            // hwloc gives every synthetic node 1 GiB unless told: not a size anybody declared
            // (the allocator would enforce it), so unknown.
            for node in &mut nodes {
                node.memory_bytes = 0;
            }
        }
        if nodes.is_empty() {
            return Err(invalid("hwloc found no NUMA node".into()));
        }
        let n = nodes.len();
        let (distances, distance_source) = match self.distances {
            Some(matrix) => {
                let matrix = validate_matrix(matrix, n).map_err(&invalid)?;
                // Recorded in the hwloc topology too, so that an XML export carries it.
                add_hwloc_distances(&mut hw, &matrix).map_err(&invalid)?;
                (matrix, DistanceSource::Given)
            }
            None => match read_distances(&hw, &nodes).map_err(|why| {
                invalid(match &self.source {
                    TopologySource::Xml(path) => format!(
                        "the distance matrix of the XML file {} is invalid: {why}",
                        path.display()
                    ),
                    TopologySource::System => {
                        format!("the distance matrix the OS reports is invalid: {why}")
                    }
                    _ => format!("the distance matrix hwloc reports is invalid: {why}"),
                })
            })? {
                Some(matrix) => (
                    matrix,
                    if matches!(self.source, TopologySource::Xml(_)) {
                        DistanceSource::Xml
                    } else {
                        DistanceSource::Os
                    },
                ),
                None => (default_matrix(n), DistanceSource::Default),
            },
        };
        let llc_bytes = read_llc_bytes(&hw);
        Ok(Topology {
            hw,
            source: self.source,
            synthetic,
            nodes,
            distances,
            distance_source,
            llc_bytes,
        })
    }
}

/// hwloc's variables that make it read another topology than the machine's when asked for the
/// machine's, in the order it looks at them.
const HWLOC_REDIRECTS: [&str; 4] = [
    "HWLOC_FSROOT",
    "HWLOC_CPUID_PATH",
    "HWLOC_SYNTHETIC",
    "HWLOC_XMLFILE",
];

/// hwloc's redirecting variables set to something, with their values (hwloc passes over an
/// empty one, and over one it cannot use: an `HWLOC_FSROOT` it cannot open, then reading the
/// next).
fn hwloc_variables() -> Vec<(&'static str, String)> {
    HWLOC_REDIRECTS
        .into_iter()
        .filter_map(|var| {
            let value = std::env::var_os(var)?;
            (!value.is_empty()).then(|| (var, value.to_string_lossy().into_owned()))
        })
        .collect()
}

/// The refusal of an `HWLOC_SYNTHETIC` too large to simulate, whenever it is set: hwloc may
/// read it in place of the machine (an earlier variable it cannot use does not stop it), and
/// would take minutes over a typo.
fn oversized_hwloc_synthetic() -> Option<String> {
    let value = std::env::var_os("HWLOC_SYNTHETIC").filter(|v| !v.is_empty())?;
    let value = value.to_string_lossy();
    check_synthetic_size(&value)
        .err()
        .map(|why| format!("HWLOC_SYNTHETIC='{value}' is set: {why}"))
}

/// Variables and values as `VAR='value'` words joined with commas.
fn named(set: &[(&str, String)]) -> String {
    set.iter()
        .map(|(var, value)| format!("{var}='{value}'"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// Why a topology hwloc built when asked for the machine's is not the machine's: the
/// redirecting variables set to something (hwloc passes over an empty or unusable one, and
/// the root's `Backend` information cannot tell: an XML file exported from a synthetic
/// topology keeps saying `Synthetic`), or `HWLOC_THISSYSTEM`.
fn not_this_system() -> String {
    let set = hwloc_variables();
    let cause = match set.as_slice() {
        [(var, value)] => format!("{var}='{value}' is set, so hwloc describes that"),
        [] => match std::env::var_os("HWLOC_THISSYSTEM") {
            Some(v) => format!(
                "hwloc describes a topology it does not take for this machine's \
                 (HWLOC_THISSYSTEM='{}')",
                v.to_string_lossy()
            ),
            None => "hwloc describes another topology".into(),
        },
        _ => format!("hwloc describes the topology one of {} names", named(&set)),
    };
    format!(
        "{cause} instead of this machine: unset it, or simulate that topology with \
         NUMATASK_TOPOLOGY=synthetic:<hwloc string> or xml:<file>"
    )
}

/// hwloc's refusal of a synthetic description (which gives no reason), with the likeliest
/// one when the description shows it: a last level that is not of processing units.
fn with_synthetic_hint(description: &str, refusal: String) -> String {
    let last_type = synthetic_levels(description)
        .pop()
        .and_then(|(word, _)| Some(word.split_once(':')?.0.to_ascii_lowercase()));
    match last_type {
        // hwloc reads `pu...` and `proc...` as processing units.
        Some(kind) if !kind.starts_with("pu") && !kind.starts_with("proc") => format!(
            "{refusal} (its last level, {kind}, must be pu: processing units, as in \
             'numa:2 core:2 pu:1')"
        ),
        _ => refusal,
    }
}

/// The most NUMA nodes a synthetic topology may have.
pub const MAX_SYNTHETIC_NODES: u64 = 256;

/// The most processing units a synthetic topology may have (four times the most workers a
/// runtime starts).
pub const MAX_SYNTHETIC_PUS: u64 = 16384;

/// The most children of one object at one level of a synthetic topology.
const MAX_SYNTHETIC_ARITY: u64 = 4096;

/// Refuses a synthetic description too large to simulate before hwloc builds it: hwloc takes
/// over a minute for 1,024 NUMA nodes side by side or 16,384 cores under one parent (a typo
/// such as `numa:20000` would otherwise hang the program). Levels are `type:arity` words, or a
/// bare arity; the arity is read as hwloc reads it (C's `strtoul` in base 0: `0x` hexadecimal,
/// a leading `0` octal), and one it cannot read is refused here; attributes in parentheses are
/// skipped. A level is a NUMA level when its type is one hwloc reads as a NUMA node (a prefix of
/// `numanode` or `node` of at least two letters, the name read up to its first character that
/// is not a letter or `-`); a memory child in brackets (`[numa]`) adds one NUMA node per object
/// of the level above it (times its arity, which hwloc 2.9 ignores: a count that errs on the
/// safe side); levels without types get NUMA nodes where hwloc puts them (see below).
fn check_synthetic_size(description: &str) -> Result<(), String> {
    let levels = synthetic_levels(description);
    let (mut objects, mut nodes) = (1u64, 0u64);
    // The arities of the levels without a type: hwloc (2.9) names such levels itself and puts
    // one NUMA node under each object of one of them (below), `2 3 4 5` being `Package:2
    // Group:3 [NUMANode] Core:4 PU:5`. (It refuses a description mixing levels with and
    // without a type.)
    let mut untyped: Vec<u64> = Vec::new();
    for (word, _) in &levels {
        let memory_child = word.starts_with('[');
        let word = word.trim_matches(|c| c == '[' || c == ']');
        let (kind, arity) = match word.split_once(':') {
            Some((kind, arity)) => (Some(kind), arity),
            None if word.starts_with(|c: char| c.is_ascii_digit()) => (None, word),
            None => (Some(word), "1"),
        };
        let arity = c_arity(arity).ok_or_else(|| {
            format!("cannot read the number of objects '{arity}' at level '{word}'")
        })?;
        if arity > MAX_SYNTHETIC_ARITY {
            return Err(format!(
                "{arity} objects under one parent at level '{word}': at most \
                 {MAX_SYNTHETIC_ARITY} are simulated"
            ));
        }
        let level = objects.saturating_mul(arity);
        if kind.is_none() && !memory_child {
            untyped.push(arity);
            objects = level;
            continue;
        }
        let numa = kind.is_some_and(is_numa_type);
        if memory_child {
            nodes = nodes.saturating_add(level);
        } else {
            objects = level;
            if numa {
                nodes = nodes.max(objects);
            }
        }
    }
    // Without a memory child in brackets, hwloc adds its NUMA level under the untyped level
    // it names Group or Package: none for one level, under the first of two, then under the
    // second, and from nine levels on under the sixth from the end (`2 2 2 2 2 2 2 2 2 2` is
    // `Group:2 Group:2 Package:2 Group:2 [NUMANode] L3Cache:2 ... Core:2 PU:2`).
    if !levels.iter().any(|(word, _)| word.starts_with('[')) {
        let above_numa = match untyped.len() {
            0 | 1 => 0,
            2 => 1,
            n => n.saturating_sub(6).max(2),
        };
        nodes = nodes.max(
            untyped[..above_numa]
                .iter()
                .fold(1, |product: u64, &a| product.saturating_mul(a)),
        );
    }
    if nodes > MAX_SYNTHETIC_NODES || objects > MAX_SYNTHETIC_PUS {
        return Err(format!(
            "{nodes} NUMA node(s) and {objects} processing units: at most \
             {MAX_SYNTHETIC_NODES} nodes and {MAX_SYNTHETIC_PUS} processing units are simulated"
        ));
    }
    Ok(())
}

/// Whether hwloc reads `kind` as a NUMA node: it reads a type's name up to the first character
/// that is not a letter or `-` (`numa_node`, `node2` and `nu1` are NUMA levels to it), and
/// takes any prefix of `numanode` or `node` of at least two letters.
fn is_numa_type(kind: &str) -> bool {
    let k: String = kind
        .chars()
        .take_while(|c| c.is_ascii_alphabetic() || *c == '-')
        .map(|c| c.to_ascii_lowercase())
        .collect();
    k.len() >= 2 && ("numanode".starts_with(&k) || "node".starts_with(&k))
}

/// Whether a synthetic description gives its NUMA nodes their memory (`numa:2(memory=16GB)`,
/// `[numa(memory=1GB)]`): hwloc gives each 1 GiB otherwise, and ignores `memory` on other
/// levels.
fn declares_node_memory(description: &str) -> bool {
    synthetic_levels(description)
        .iter()
        .any(|(word, attributes)| {
            let word = word.trim_start_matches('[');
            let kind = word.split_once(':').map_or(word, |(kind, _)| kind);
            is_numa_type(kind) && attributes.to_ascii_lowercase().contains("memory=")
        })
}

/// The levels of a synthetic description as hwloc splits them: each word (`type:arity`, a bare
/// arity, or a memory child, kept with its opening `[`) with the text of its attributes, in
/// parentheses after it. A memory child is a word of its own, spaces around its brackets or
/// not (`pack:2[numa]core:1` is `pack:2 [numa] core:1` to hwloc).
fn synthetic_levels(description: &str) -> Vec<(String, String)> {
    let mut levels = Vec::new();
    let mut level = (String::new(), String::new());
    let mut end_level = |level: &mut (String, String)| {
        if !level.0.is_empty() || !level.1.is_empty() {
            levels.push(std::mem::take(level));
        }
    };
    let mut depth = 0usize;
    for c in description.chars() {
        match c {
            '(' => depth += 1,
            ')' => depth = depth.saturating_sub(1),
            _ if depth > 0 => level.1.push(c),
            '[' => {
                end_level(&mut level);
                level.0.push('[');
            }
            ']' => end_level(&mut level),
            c if c.is_whitespace() => end_level(&mut level),
            c => level.0.push(c),
        }
    }
    end_level(&mut level);
    levels
}

/// A synthetic level's arity as hwloc reads it, C's `strtoul(text, _, 0)` over the whole
/// text: decimal, `0x` hexadecimal or `0` octal; `None` for anything else (or an overflow).
fn c_arity(text: &str) -> Option<u64> {
    let text = text.strip_prefix('+').unwrap_or(text);
    let (digits, radix) =
        if let Some(hex) = text.strip_prefix("0x").or_else(|| text.strip_prefix("0X")) {
            (hex, 16)
        } else if text.len() > 1 && text.starts_with('0') {
            (&text[1..], 8)
        } else {
            (text, 10)
        };
    if digits.is_empty() || !digits.chars().all(|c| c.is_digit(radix)) {
        return None;
    }
    u64::from_str_radix(digits, radix).ok()
}

/// The forms of `NUMATASK_TOPOLOGY`, for error messages.
fn spec_syntax() -> String {
    format!(
        "system, preset:<name> ({}), synthetic:<hwloc string> or xml:<hwloc XML file>",
        Preset::ALL.map(Preset::name).join(", ")
    )
}

/// The text of an hwloc XML file; the error says which file and why it cannot be used.
fn read_xml(path: &std::path::Path) -> Result<String, String> {
    /// Larger than any real topology export, and within what hwloc takes in one buffer.
    const MAX_XML_BYTES: u64 = 256 << 20;
    let cannot = |why: String| format!("cannot read the XML file {}: {why}", path.display());
    // Opened without blocking (a pipe without a writer would wait forever), then checked
    // through the handle, so that what is read is what was checked.
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(path)
        .map_err(|e| cannot(e.to_string()))?;
    let meta = file.metadata().map_err(|e| cannot(e.to_string()))?;
    if meta.is_dir() {
        return Err(cannot("it is a directory".into()));
    }
    // A device or a pipe has no length to check (`/dev/zero` would be read until memory ran
    // out).
    if !meta.is_file() {
        return Err(cannot("it is not a regular file".into()));
    }
    let too_long = |len: u64| {
        cannot(format!(
            "{len} bytes, more than the {MAX_XML_BYTES} accepted"
        ))
    };
    if meta.len() > MAX_XML_BYTES {
        return Err(too_long(meta.len()));
    }
    // Read at most one byte past the limit: the file may grow after the check.
    let mut text = String::new();
    file.take(MAX_XML_BYTES + 1)
        .read_to_string(&mut text)
        .map_err(|e| cannot(e.to_string()))?;
    if text.len() as u64 > MAX_XML_BYTES {
        return Err(too_long(text.len() as u64));
    }
    Ok(text)
}

/// A machine's NUMA structure. Cheap to query; build once and share (see [`Topology::current`]).
pub struct Topology {
    /// The hwloc topology (of the real machine unless `synthetic`).
    #[cfg(not(miri))]
    hw: hwlocality::Topology,
    source: TopologySource,
    synthetic: bool,
    nodes: Vec<NumaNode>,
    /// Row-major `n x n`.
    distances: Vec<u32>,
    distance_source: DistanceSource,
    llc_bytes: u64,
}

impl fmt::Debug for Topology {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Topology")
            .field("source", &self.source)
            .field("synthetic", &self.synthetic)
            .field("nodes", &self.nodes)
            .field("distances", &self.distances)
            .field("distance_source", &self.distance_source)
            .field("llc_bytes", &self.llc_bytes)
            .finish()
    }
}

static CURRENT: OnceLock<Result<Arc<Topology>, AllocError>> = OnceLock::new();
static REAL: OnceLock<Option<hwlocality::Topology>> = OnceLock::new();

impl Topology {
    /// The process-wide topology: `NUMATASK_TOPOLOGY` when set, the real machine otherwise
    /// (an error when hwloc's own variables make it describe another topology: see the
    /// module docs). Read once; every later call returns the same topology (or the same
    /// error).
    pub fn current() -> Result<Arc<Topology>, AllocError> {
        CURRENT
            .get_or_init(|| {
                let builder = match std::env::var(TOPOLOGY_ENV) {
                    Ok(spec) => {
                        // Every error of a topology the variable asks for names the variable
                        // and its whole value.
                        let from_env = TopologyBuilder::from_spec(&spec).and_then(|b| b.build());
                        return from_env.map(Arc::new).map_err(|e| match e {
                            AllocError::InvalidTopology { reason, .. } => AllocError::InvalidEnv {
                                var: TOPOLOGY_ENV,
                                value: spec.clone(),
                                expected: match reason.strip_prefix("expected ") {
                                    Some(syntax) => syntax.to_owned(),
                                    // Well formed, but what it names could not be built.
                                    None => format!("a topology that can be built ({reason})"),
                                },
                            },
                            other => other,
                        });
                    }
                    Err(std::env::VarError::NotPresent) => TopologyBuilder::system(),
                    Err(std::env::VarError::NotUnicode(v)) => {
                        return Err(AllocError::InvalidEnv {
                            var: TOPOLOGY_ENV,
                            value: v.to_string_lossy().into_owned(),
                            expected: "a UTF-8 value".into(),
                        });
                    }
                };
                builder.build().map(Arc::new)
            })
            .clone()
    }

    /// The real machine (shorthand for `TopologyBuilder::system().build()`).
    pub fn system() -> Result<Topology, AllocError> {
        TopologyBuilder::system().build()
    }

    /// A preset (shorthand for `TopologyBuilder::preset(p).build()`).
    pub fn preset(preset: Preset) -> Result<Topology, AllocError> {
        TopologyBuilder::preset(preset).build()
    }

    /// What the topology was built from.
    pub fn source(&self) -> &TopologySource {
        &self.source
    }

    /// True when this is not the machine the process runs on: placement is recorded, not
    /// enforced, and threads are pinned onto the real cores round-robin.
    pub fn is_synthetic(&self) -> bool {
        self.synthetic
    }

    /// The NUMA nodes, in increasing OS index.
    pub fn nodes(&self) -> &[NumaNode] {
        &self.nodes
    }

    /// Number of NUMA nodes.
    pub fn num_nodes(&self) -> usize {
        self.nodes.len()
    }

    /// The node with topology index `node`, or an error naming the nodes that exist.
    pub fn node(&self, node: usize) -> Result<&NumaNode, AllocError> {
        self.nodes.get(node).ok_or(AllocError::NoSuchNode {
            node,
            num_nodes: self.nodes.len(),
        })
    }

    /// All cores, node by node.
    pub fn cores(&self) -> impl Iterator<Item = &Core> {
        self.nodes.iter().flat_map(|n| n.cores.iter())
    }

    /// Total number of cores.
    pub fn num_cores(&self) -> usize {
        self.nodes.iter().map(|n| n.cores.len()).sum()
    }

    /// Cores per node, the paper's `C`: the largest node's core count (nodes of one machine
    /// normally have the same number), at least 1.
    pub fn cores_per_node(&self) -> usize {
        self.nodes
            .iter()
            .map(|n| n.cores.len())
            .max()
            .unwrap_or(1)
            .max(1)
    }

    /// Distance from node `from` to node `to` (10 = local). Panics if an index is out of range,
    /// like slice indexing; use [`Topology::node`] to validate user input first.
    pub fn distance(&self, from: usize, to: usize) -> u32 {
        let n = self.nodes.len();
        assert!(
            from < n && to < n,
            "node index out of range: ({from}, {to}) with {n} nodes"
        );
        self.distances[from * n + to]
    }

    /// The whole distance matrix, row-major.
    pub fn distance_matrix(&self) -> &[u32] {
        &self.distances
    }

    /// Where the distance matrix came from.
    pub fn distance_source(&self) -> DistanceSource {
        self.distance_source
    }

    /// Size of one last-level cache in bytes (0 when hwloc reports no cache).
    pub fn llc_bytes(&self) -> u64 {
        self.llc_bytes
    }

    /// Total memory of all nodes in bytes (`u64::MAX` for a synthetic description whose nodes
    /// together declare more).
    pub fn total_memory(&self) -> u64 {
        self.nodes
            .iter()
            .fold(0, |sum, n| sum.saturating_add(n.memory_bytes))
    }

    /// The hwloc topology of the real machine, for binding memory; `None` when synthetic.
    pub(crate) fn hwloc(&self) -> Option<&hwlocality::Topology> {
        #[cfg(miri)]
        return None;
        #[cfg(not(miri))]
        (!self.synthetic).then_some(&self.hw)
    }

    /// Writes the topology, with its distance matrix, as an hwloc XML file that
    /// `NUMATASK_TOPOLOGY=xml:<path>` (and hwloc's `lstopo --input <path>`) loads back. A
    /// synthetic node whose description gave no memory (0 here: unknown) is written with the
    /// 1 GiB hwloc gives it, which the file then declares.
    pub fn export_xml(&self, path: &std::path::Path) -> Result<(), AllocError> {
        #[cfg(miri)]
        return Err(AllocError::InvalidTopology {
            spec: format!("xml:{}", path.display()),
            reason: "miri stub".into(),
        });
        #[cfg(not(miri))]
        self.hw
            .export_xml_file(Some(path), XMLExportFlags::empty())
            .map_err(|e| AllocError::InvalidTopology {
                spec: format!("xml:{}", path.display()),
                reason: format!("could not write the XML file: {e}"),
            })
    }

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

    /// The cores (indices, increasing) grouped by what they share, `kind`: one group per
    /// package (socket) or per last-level cache, in the order of their first core. Groups
    /// without a core are left out; a topology that does not describe the kind (some
    /// virtual machines have no package, a synthetic string may have no cache) gives one
    /// group of every core.
    pub fn core_groups(&self, kind: CoreGroup) -> Vec<Vec<usize>> {
        #[cfg(miri)]
        {
            let _ = kind;
            // Miri stub: one group (one LLC / package) per node.
            return self
                .nodes
                .iter()
                .map(|n| n.cores.iter().map(|c| c.index).collect())
                .collect();
        }
        #[cfg(not(miri))]
        {
            let objects: Vec<&TopologyObject> = match kind {
                CoreGroup::Package => self.hw.objects_with_type(ObjectType::Package).collect(),
                CoreGroup::LastLevelCache => {
                    // The data or unified caches of the deepest cache level present.
                    let caches: Vec<(usize, &TopologyObject)> = [
                        ObjectType::L1Cache,
                        ObjectType::L2Cache,
                        ObjectType::L3Cache,
                        ObjectType::L4Cache,
                        ObjectType::L5Cache,
                    ]
                    .into_iter()
                    .flat_map(|ty| self.hw.objects_with_type(ty))
                    .filter_map(|obj| match obj.attributes() {
                        Some(ObjectAttributes::Cache(c)) => Some((c.depth(), obj)),
                        _ => None,
                    })
                    .collect();
                    let deepest = caches.iter().map(|&(d, _)| d).max();
                    caches
                        .into_iter()
                        .filter(|&(d, _)| Some(d) == deepest)
                        .map(|(_, obj)| obj)
                        .collect()
                }
            };
            let mut groups: Vec<Vec<usize>> = objects
                .iter()
                .filter_map(|obj| obj.cpuset())
                .map(|set| {
                    self.cores()
                        .filter(|c| c.pus.iter().any(|&pu| set.is_set(pu)))
                        .map(|c| c.index)
                        .collect::<Vec<usize>>()
                })
                .filter(|g| !g.is_empty())
                .collect();
            groups.sort();
            groups.dedup();
            if groups.is_empty() {
                groups.push(self.cores().map(|c| c.index).collect());
            }
            groups
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

/// What cores share, for [`Topology::core_groups`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CoreGroup {
    /// A package (a socket).
    Package,
    /// A last-level cache.
    LastLevelCache,
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

fn os_indices(set: &CpuSet) -> Vec<usize> {
    set.iter_set().map(usize::from).collect()
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

/// The cores of `hw`, or its processing units when it has no core level (a synthetic
/// description such as `NUMANode:2 PU:4`, some virtual machines): each is then a core.
fn core_objects(hw: &hwlocality::Topology) -> impl Iterator<Item = &TopologyObject> {
    let kind = if hw.objects_with_type(ObjectType::Core).next().is_some() {
        ObjectType::Core
    } else {
        ObjectType::PU
    };
    hw.objects_with_type(kind)
}

fn read_nodes(hw: &hwlocality::Topology) -> Vec<NumaNode> {
    let mut numa: Vec<&TopologyObject> = hw.objects_with_type(ObjectType::NUMANode).collect();
    numa.sort_by_key(|n| n.os_index());
    let allowed = hw.allowed_cpuset();
    let mut nodes: Vec<NumaNode> = numa
        .iter()
        .enumerate()
        .map(|(index, obj)| NumaNode {
            index,
            os_index: obj.os_index().unwrap_or(index),
            cores: Vec::new(),
            memory_bytes: match obj.attributes() {
                Some(ObjectAttributes::NUMANode(a)) => a.local_memory().map_or(0, |m| m.get()),
                _ => 0,
            },
        })
        .collect();
    for core in core_objects(hw) {
        let Some(cpuset) = core.cpuset() else {
            continue;
        };
        let pus = os_indices(&(&*cpuset & &*allowed));
        if pus.is_empty() {
            continue;
        }
        // The core belongs to the first node whose cpuset contains it (memory-only nodes have
        // empty cpusets and get no cores); a core that straddles nodes (a synthetic
        // description with NUMA levels below the cores, `core:2 numa:2 pu:1`) to the node of
        // its first processing unit.
        let node = numa
            .iter()
            .position(|n| {
                n.cpuset()
                    .is_some_and(|ns| ns.includes(&*cpuset) && !ns.is_empty())
            })
            .or_else(|| {
                numa.iter()
                    .position(|n| n.cpuset().is_some_and(|ns| ns.is_set(pus[0])))
            });
        if let Some(node) = node {
            nodes[node].cores.push(Core {
                index: 0,
                node,
                pus,
            });
        }
    }
    let mut next = 0;
    for node in &mut nodes {
        for core in &mut node.cores {
            core.index = next;
            next += 1;
        }
    }
    nodes
}

/// The NUMA distance matrix hwloc has for `nodes`, in node order: `Ok(None)` when it has
/// none (the caller then uses the default), an error saying what is wrong when the matrix
/// does not cover the nodes or fails the checks of [`TopologyBuilder::distances`].
fn read_distances(
    hw: &hwlocality::Topology,
    nodes: &[NumaNode],
) -> Result<Option<Vec<u32>>, String> {
    let n = nodes.len();
    let all = hw
        .distances(None)
        .map_err(|e| format!("hwloc could not list its distance matrices: {e}"))?;
    // Matrices between NUMA nodes that are distances: a bandwidth matrix (hwloc's
    // `NUMABandwidth`, from the kernel's HMAT or an annotated XML file) grows with closeness,
    // the opposite of what the cost model needs.
    let numa: Vec<_> = all.iter().filter(|d| is_numa_distance(d)).collect();
    if numa.is_empty() {
        return Ok(None);
    }
    // A latency matrix first (hwloc's own are), then one of unstated meaning.
    let matrix = numa
        .iter()
        .filter(|d| d.num_objects() == n)
        .min_by_key(|d| !d.kind().contains(DistancesKind::MEANS_LATENCY));
    let Some(matrix) = matrix else {
        return Err(format!(
            "the NUMA distance matrix covers {} of the {n} nodes",
            numa[0].num_objects()
        ));
    };
    let position: Vec<usize> = matrix
        .objects()
        .map(|o| {
            let os = o.and_then(TopologyObject::os_index);
            nodes
                .iter()
                .position(|node| Some(node.os_index) == os)
                .ok_or_else(|| {
                    format!(
                        "the distance matrix names NUMA node {} (OS index), which is not in \
                         the topology",
                        os.map_or_else(|| "?".to_owned(), |i| i.to_string())
                    )
                })
        })
        .collect::<Result<Vec<_>, _>>()?;
    let mut out = vec![0u32; n * n];
    for (i, row) in matrix.distances().chunks(n).enumerate() {
        for (j, &d) in row.iter().enumerate() {
            let (from, to) = (position[i], position[j]);
            out[from * n + to] = u32::try_from(d)
                .map_err(|_| format!("distance ({from}, {to}) = {d} does not fit in 32 bits"))?;
        }
    }
    validate_matrix(out, n).map(Some)
}

/// Whether `d` is a matrix of distances between NUMA nodes (not a bandwidth matrix, whose
/// values grow with closeness).
fn is_numa_distance(d: &Distances<'_>) -> bool {
    !d.kind().contains(DistancesKind::MEANS_BANDWIDTH)
        && d.objects()
            .all(|o| o.is_some_and(|o| o.object_type() == ObjectType::NUMANode))
}

/// Records `matrix` as the NUMA distances of `hw`, in place of those it has (the OS's, an XML
/// file's): an export holds it alone, and reading the export back finds it.
fn add_hwloc_distances(hw: &mut hwlocality::Topology, matrix: &[u32]) -> Result<(), String> {
    let values: Vec<u64> = matrix.iter().map(|&d| u64::from(d)).collect();
    fn listed(t: &hwlocality::Topology) -> Result<Vec<Distances<'_>>, String> {
        t.distances(None)
            .map_err(|e| format!("hwloc could not list its distance matrices: {e}"))
    }
    hw.edit(|editor| {
        loop {
            let found = listed(editor.topology())?.iter().position(is_numa_distance);
            let Some(old) = found else { break };
            editor
                .remove_distances(|t| {
                    listed(t)
                        .ok()
                        .and_then(|all| all.into_iter().nth(old))
                        .expect("the matrix just listed")
                })
                .map_err(|e| format!("hwloc could not remove a distance matrix: {e}"))?;
        }
        editor
            .add_distances(
                // No name: hwlocality 1.0.0-alpha.13 frees the name before hwloc copies it.
                None,
                DistancesKind::FROM_USER | DistancesKind::MEANS_LATENCY,
                AddDistancesFlags::empty(),
                |topology| {
                    let mut numa: Vec<&TopologyObject> =
                        topology.objects_with_type(ObjectType::NUMANode).collect();
                    numa.sort_by_key(|n| n.os_index());
                    (numa.into_iter().map(Some).collect(), values)
                },
            )
            .map_err(|e| format!("hwloc rejected the distance matrix: {e}"))
    })
}

fn validate_matrix(matrix: Vec<u32>, n: usize) -> Result<Vec<u32>, String> {
    if matrix.len() != n * n {
        return Err(format!(
            "distance matrix has {} values, expected {n} x {n} = {}",
            matrix.len(),
            n * n
        ));
    }
    for i in 0..n {
        for j in 0..n {
            let d = matrix[i * n + j];
            if d == 0 {
                return Err(format!(
                    "distance ({i}, {j}) is 0; distances must be positive"
                ));
            }
            if i != j && d < matrix[i * n + i] {
                return Err(format!(
                    "distance ({i}, {j}) = {d} is smaller than the local distance {}",
                    matrix[i * n + i]
                ));
            }
        }
    }
    Ok(matrix)
}

fn default_matrix(n: usize) -> Vec<u32> {
    (0..n * n)
        .map(|k| {
            if k / n == k % n {
                LOCAL_DISTANCE
            } else {
                DEFAULT_REMOTE_DISTANCE
            }
        })
        .collect()
}

/// Size of the last-level cache: the largest data or unified cache of the deepest level.
fn read_llc_bytes(hw: &hwlocality::Topology) -> u64 {
    let mut best: (usize, u64) = (0, 0);
    for ty in [
        ObjectType::L1Cache,
        ObjectType::L2Cache,
        ObjectType::L3Cache,
        ObjectType::L4Cache,
        ObjectType::L5Cache,
    ] {
        for obj in hw.objects_with_type(ty) {
            if let Some(ObjectAttributes::Cache(c)) = obj.attributes() {
                let size = c.size().map_or(0, |s| s.get());
                if size > 0 && (c.depth(), size) > best {
                    best = (c.depth(), size);
                }
            }
        }
    }
    best.1
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn preset_has_eight_nodes_of_six_cores_and_max_distance_22() {
        let t = Topology::preset(Preset::Opteron6172).unwrap();
        assert_eq!(t.num_nodes(), 8);
        assert!(t.nodes().iter().all(|n| n.cores.len() == 6));
        assert_eq!(t.cores_per_node(), 6);
        assert_eq!(t.num_cores(), 48);
        assert_eq!(t.distance_matrix().iter().copied().max(), Some(22));
        assert_eq!(t.llc_bytes(), 5 * 1024 * 1024);
        assert!(t.is_synthetic());
        assert_eq!(t.distance_source(), DistanceSource::Given);
        for i in 0..8 {
            assert_eq!(t.distance(i, i), 10);
            for j in 0..8 {
                assert_eq!(
                    t.distance(i, j),
                    t.distance(j, i),
                    "matrix must be symmetric"
                );
            }
        }
    }

    #[test]
    fn cores_are_numbered_node_by_node() {
        let t = Topology::preset(Preset::Opteron6172).unwrap();
        for (i, core) in t.cores().enumerate() {
            assert_eq!(core.index, i);
            assert_eq!(core.node, i / 6);
        }
    }

    #[test]
    fn a_topology_without_a_core_level_counts_each_processing_unit_as_a_core() {
        let t = TopologyBuilder::synthetic("NUMANode:2 PU:2")
            .build()
            .unwrap();
        assert_eq!(
            (t.num_nodes(), t.num_cores(), t.cores_per_node()),
            (2, 4, 2)
        );
        assert_eq!(t.nodes()[1].cores[0].pus.len(), 1);
        assert_eq!(t.usable_cores(), [0, 1, 2, 3]);
    }

    #[test]
    fn synthetic_string_without_distances_gets_the_default_matrix() {
        let t = TopologyBuilder::synthetic("pack:2 numa:2 core:3 pu:2")
            .build()
            .unwrap();
        assert_eq!(t.num_nodes(), 4);
        assert_eq!(t.distance_source(), DistanceSource::Default);
        assert_eq!(t.distance(1, 1), LOCAL_DISTANCE);
        assert_eq!(t.distance(1, 2), DEFAULT_REMOTE_DISTANCE);
        assert_eq!(t.nodes()[3].cores[2].pus.len(), 2);
    }

    #[test]
    fn spec_parsing_accepts_every_form_and_rejects_others() {
        assert!(matches!(
            TopologyBuilder::from_spec("system").unwrap().source,
            TopologySource::System
        ));
        assert_eq!(
            TopologyBuilder::from_spec("preset:Opteron-6172")
                .unwrap()
                .source,
            TopologySource::Preset(Preset::Opteron6172)
        );
        assert_eq!(
            TopologyBuilder::from_spec("opteron6172").unwrap().source,
            TopologySource::Preset(Preset::Opteron6172)
        );
        assert_eq!(
            TopologyBuilder::from_spec("synthetic:numa:2 core:1 pu:1")
                .unwrap()
                .source,
            TopologySource::Synthetic("numa:2 core:1 pu:1".into())
        );
        let err = TopologyBuilder::from_spec("bogus").unwrap_err().to_string();
        assert!(err.contains("bogus") && err.contains("synthetic:"), "{err}");
        // A kind without its description is malformed, `system:` and a lone `:` included.
        for spec in [":", "system:", " : ", "synthetic:", "xml: "] {
            let err = TopologyBuilder::from_spec(spec).unwrap_err().to_string();
            assert!(err.contains("synthetic:<hwloc string>"), "{spec:?}: {err}");
        }
        let err = TopologyBuilder::from_spec("preset:nope")
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("'preset:nope'") && err.contains("unknown preset 'nope'"),
            "{err}"
        );
        assert!(err.contains("opteron6172"), "{err}");
    }

    #[test]
    fn a_synthetic_description_not_ending_in_processing_units_is_refused_saying_so() {
        let err = TopologyBuilder::synthetic("node:2 core:2")
            .build()
            .unwrap_err()
            .to_string();
        assert!(err.contains("its last level, core, must be pu"), "{err}");
        // Other refusals get no such hint.
        let err = TopologyBuilder::synthetic("numa:2 core:2 pu:x")
            .build()
            .unwrap_err()
            .to_string();
        assert!(!err.contains("must be pu"), "{err}");
    }

    #[test]
    fn missing_or_unreadable_xml_files_are_errors_naming_the_file() {
        let missing = std::env::temp_dir().join("numatask-no-such-topology.xml");
        let err = TopologyBuilder::xml_file(&missing).build().unwrap_err();
        let text = err.to_string();
        assert!(matches!(err, AllocError::InvalidTopology { .. }), "{text}");
        assert!(text.contains("numatask-no-such-topology.xml"), "{text}");
        let dir = std::env::temp_dir();
        let err = TopologyBuilder::xml_file(&dir)
            .build()
            .unwrap_err()
            .to_string();
        assert!(err.contains("is a directory"), "{err}");
        let junk = dir.join(format!("numatask-junk-{}.xml", std::process::id()));
        std::fs::write(&junk, "not xml at all").unwrap();
        let err = TopologyBuilder::xml_file(&junk).build();
        std::fs::remove_file(&junk).unwrap();
        assert!(err.is_err(), "a file that is not an hwloc export");
    }

    #[test]
    fn bad_synthetic_string_and_bad_matrix_are_errors() {
        assert!(TopologyBuilder::synthetic("numa:two").build().is_err());
        let err = TopologyBuilder::synthetic("numa:2 core:1 pu:1")
            .distances(vec![10, 20, 20])
            .build()
            .unwrap_err()
            .to_string();
        assert!(err.contains("expected 2 x 2"), "{err}");
        let err = TopologyBuilder::synthetic("numa:2 core:1 pu:1")
            .distances(vec![10, 5, 20, 10])
            .build()
            .unwrap_err()
            .to_string();
        assert!(err.contains("smaller than the local distance"), "{err}");
    }

    #[test]
    fn synthetic_topologies_too_large_to_simulate_are_refused_before_hwloc_builds_them() {
        for (description, says) in [
            (
                "NUMANode:20000 Core:1 PU:1",
                "20000 objects under one parent",
            ),
            ("pack:64 numa:8 core:2 pu:1", "512 NUMA node(s)"),
            ("pack:64 [numa] core:64 pu:8", "32768 processing units"),
            // Arities as hwloc reads them (hexadecimal, octal, a bare number), NUMA levels
            // under hwloc's other names, and several memory children per object.
            ("pack:1 core:0x4000 pu:1", "16384 objects under one parent"),
            ("numa:0x400 pu:1", "1024 NUMA node(s)"),
            ("numa:02000 pu:1", "1024 NUMA node(s)"),
            ("node:1024 pu:1", "1024 NUMA node(s)"),
            ("NUMANode:300 pu:1", "300 NUMA node(s)"),
            ("1024 1", "1024 NUMA node(s)"),
            // Type names as hwloc reads them, up to a character other than a letter or `-`;
            // memory children without spaces around them; a `+` before an arity.
            ("numa_node:300 pu:1", "300 NUMA node(s)"),
            ("node2:300 pu:1", "300 NUMA node(s)"),
            ("pack:2 nu1:200 pu:1", "400 NUMA node(s)"),
            ("pack:300[numa]core:1 pu:1", "300 NUMA node(s)"),
            ("numa:+300 pu:1", "300 NUMA node(s)"),
            // hwloc puts NUMA nodes under the second of the levels without a type, from
            // nine levels on under the sixth from the end.
            ("17 16 2 2", "272 NUMA node(s)"),
            ("16 16 16 1 1 1 1 1 1 1", "4096 NUMA node(s)"),
            ("1 16 1024 1 1 1 1 1 1 1", "16384 NUMA node(s)"),
            ("pack:200 [numa] [numa] core:1 pu:1", "400 NUMA node(s)"),
            (
                "numa:4(memory=1GB) core:4096 pu:2",
                "32768 processing units",
            ),
        ] {
            let err = TopologyBuilder::synthetic(description)
                .build()
                .unwrap_err()
                .to_string();
            assert!(err.contains(says), "{description}: {err}");
            assert!(err.contains("are simulated"), "{err}");
        }
        for (fits, nodes) in [
            ("pack:16 [numa] core:4 pu:1", 16),
            ("numa:256 core:1 pu:1", 256),
            ("pack:0x2 node:0x3 core:02 pu:1", 6),
            ("pack:2 [numa] [numa] core:2 pu:1", 4),
            ("300", 1),
            ("2 300", 2),
            ("2 3 4 5", 6),
            ("16 16 2 2", 256),
            ("2 2 2 2 2 2 2 2 2 2", 16),
            // A memory child in brackets: no NUMA level of hwloc's own.
            ("[numa] 300 2", 1),
            ("pack:2[numa]core:1 pu:1", 2),
            ("numa_node:3 pu:1", 3),
            ("pack:+2 [numa] core:1 pu:1", 2),
            ("2 [numa] 200 2 1", 2),
        ] {
            let t = TopologyBuilder::synthetic(fits).build().unwrap();
            assert_eq!(t.num_nodes(), nodes, "{fits}");
        }
        let err = TopologyBuilder::synthetic("numa:2x core:1 pu:1")
            .build()
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("cannot read the number of objects '2x' at level 'numa:2x'"),
            "{err}"
        );
    }

    /// Adds a matrix of `kind` between the NUMA nodes of `hw` (in OS index order).
    fn add_matrix(hw: &mut hwlocality::Topology, kind: DistancesKind, values: Vec<u64>) {
        hw.edit(|editor| {
            editor.add_distances(None, kind, AddDistancesFlags::empty(), |topology| {
                let mut numa: Vec<&TopologyObject> =
                    topology.objects_with_type(ObjectType::NUMANode).collect();
                numa.sort_by_key(|n| n.os_index());
                (numa.into_iter().map(Some).collect(), values)
            })
        })
        .unwrap();
    }

    #[test]
    fn a_bandwidth_matrix_in_an_xml_file_is_not_taken_for_distances() {
        let dir = std::env::temp_dir().join(format!("numatask-bw-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let bandwidth = DistancesKind::FROM_USER | DistancesKind::MEANS_BANDWIDTH;
        // A bandwidth matrix listed before a latency matrix: the latency one is read.
        let mut t = TopologyBuilder::synthetic("numa:2 core:1 pu:1")
            .build()
            .unwrap();
        add_matrix(&mut t.hw, bandwidth, vec![100, 50, 50, 100]);
        add_hwloc_distances(&mut t.hw, &[10, 30, 30, 10]).unwrap();
        let both = dir.join("both.xml");
        t.export_xml(&both).unwrap();
        let read = TopologyBuilder::xml_file(&both).build().unwrap();
        assert_eq!(read.distance_matrix(), &[10, 30, 30, 10]);
        assert_eq!(read.distance_source(), DistanceSource::Xml);
        // A bandwidth matrix alone: no distances from the file, the default matrix.
        let mut t = TopologyBuilder::synthetic("numa:2 core:1 pu:1")
            .build()
            .unwrap();
        add_matrix(&mut t.hw, bandwidth, vec![100, 100, 100, 100]);
        let alone = dir.join("bandwidth.xml");
        t.export_xml(&alone).unwrap();
        let read = TopologyBuilder::xml_file(&alone).build().unwrap();
        assert_eq!(read.distance_matrix(), &[10, 20, 20, 10]);
        assert_eq!(read.distance_source(), DistanceSource::Default);
        std::fs::remove_dir_all(&dir).ok();
    }

    #[test]
    fn a_matrix_given_for_an_xml_topology_replaces_the_files_in_an_export() {
        let dir = std::env::temp_dir().join(format!("numatask-given-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let (first, second) = (dir.join("first.xml"), dir.join("second.xml"));
        Topology::preset(Preset::Opteron6172)
            .unwrap()
            .export_xml(&first)
            .unwrap();
        let custom: Vec<u32> = (0..64)
            .map(|k| if k / 8 == k % 8 { 10 } else { 40 })
            .collect();
        let given = TopologyBuilder::xml_file(&first)
            .distances(custom.clone())
            .build()
            .unwrap();
        assert_eq!(given.distance_matrix(), &custom[..]);
        given.export_xml(&second).unwrap();
        let back = TopologyBuilder::xml_file(&second).build().unwrap();
        assert_eq!(back.distance_matrix(), &custom[..]);
        assert_eq!(back.distance_source(), DistanceSource::Xml);
        std::fs::remove_dir_all(&dir).ok();
    }

    #[test]
    fn an_xml_path_that_is_no_regular_file_is_refused_without_reading_it() {
        let err = TopologyBuilder::xml_file("/dev/zero")
            .build()
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("cannot read the XML file /dev/zero: it is not a regular file"),
            "{err}"
        );
        // A pipe nobody writes to: refused, not waited on.
        let fifo = std::env::temp_dir().join(format!("numatask-fifo-{}", std::process::id()));
        let name = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
        // SAFETY: `name` is a NUL-terminated path.
        assert_eq!(unsafe { libc::mkfifo(name.as_ptr(), 0o600) }, 0);
        let err = TopologyBuilder::xml_file(&fifo)
            .build()
            .unwrap_err()
            .to_string();
        std::fs::remove_file(&fifo).unwrap();
        assert!(err.contains("it is not a regular file"), "{err}");
    }

    #[test]
    fn cores_straddling_numa_nodes_go_to_the_node_of_their_first_processing_unit() {
        let t = TopologyBuilder::synthetic("core:2 numa:2 pu:1")
            .build()
            .unwrap();
        assert_eq!(t.num_nodes(), 4);
        let cores: Vec<(usize, Vec<usize>)> = t
            .nodes()
            .iter()
            .flat_map(|n| n.cores.iter().map(|c| (c.node, c.pus.clone())))
            .collect();
        assert_eq!(cores, [(0, vec![0, 1]), (2, vec![2, 3])]);
    }

    #[test]
    fn total_memory_saturates_instead_of_overflowing() {
        let t = TopologyBuilder::synthetic("numa:2(memory=18446744073709551615) core:1 pu:1")
            .build()
            .unwrap();
        assert_eq!(t.total_memory(), u64::MAX);
    }

    #[test]
    fn xml_file_with_distances_is_read() {
        let dir = std::env::temp_dir().join(format!("numatask-xml-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("topo.xml");
        let t = Topology::preset(Preset::Opteron6172).unwrap();
        t.export_xml(&path).unwrap();
        let back = TopologyBuilder::xml_file(&path).build().unwrap();
        assert_eq!(back.num_nodes(), 8);
        assert_eq!(back.distance_source(), DistanceSource::Xml);
        assert_eq!(back.distance_matrix(), t.distance_matrix());
        assert!(back.is_synthetic());
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// `xml` with its `distances2` element replaced by one holding `values` (as written,
    /// row-major), or removed when `values` is `None`.
    fn with_distances(xml: &str, values: Option<&[String]>) -> String {
        let start = xml.find("<distances2 ").expect("a distances2 element");
        let end = xml.find("</distances2>").expect("its end") + "</distances2>".len();
        let head = &xml[start..];
        let head = &head[..head.find("<u64values").expect("values")];
        let replacement = values.map_or_else(String::new, |values| {
            let content: String = values.iter().map(|v| format!("{v} ")).collect();
            // hwloc checks each element's `length`: the bytes of its content.
            format!(
                "{head}<u64values length=\"{}\">{content}</u64values>\n  </distances2>",
                content.len()
            )
        });
        format!("{}{replacement}{}", &xml[..start], &xml[end..])
    }

    #[test]
    fn a_bad_distance_matrix_in_an_xml_file_is_an_error_naming_the_file() {
        let dir = std::env::temp_dir().join(format!("numatask-bad-xml-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let exported = dir.join("preset.xml");
        let preset = Topology::preset(Preset::Opteron6172).unwrap();
        preset.export_xml(&exported).unwrap();
        let xml = std::fs::read_to_string(&exported).unwrap();
        let n = preset.num_nodes();
        let edited = |from: usize, to: usize, value: &str| -> Vec<String> {
            let mut m: Vec<String> = preset
                .distance_matrix()
                .iter()
                .map(u32::to_string)
                .collect();
            m[from * n + to] = value.to_owned();
            m
        };
        // The unedited matrix, written the same way, loads: the edits below are what fails.
        let same = dir.join("same.xml");
        std::fs::write(&same, with_distances(&xml, Some(&edited(0, 0, "10")))).unwrap();
        let back = TopologyBuilder::from_spec(&format!("xml:{}", same.display()))
            .unwrap()
            .build()
            .unwrap();
        assert_eq!(back.distance_source(), DistanceSource::Xml);
        assert_eq!(back.distance_matrix(), preset.distance_matrix());
        for (name, (from, to, value), says) in [
            ("zero", (0, 1, "0"), "distance (0, 1) is 0"),
            (
                "below-local",
                (0, 1, "1"),
                "distance (0, 1) = 1 is smaller than the local distance 10",
            ),
            (
                "overflow",
                (0, 1, "4294967296"),
                "distance (0, 1) = 4294967296 does not fit in 32 bits",
            ),
            (
                "diagonal",
                (0, 0, "50"),
                "is smaller than the local distance 50",
            ),
        ] {
            let path = dir.join(format!("{name}.xml"));
            std::fs::write(&path, with_distances(&xml, Some(&edited(from, to, value)))).unwrap();
            let err = TopologyBuilder::from_spec(&format!("xml:{}", path.display()))
                .unwrap()
                .build()
                .map(|t| t.distance_matrix().to_vec())
                .unwrap_err();
            let text = err.to_string();
            assert!(
                matches!(err, AllocError::InvalidTopology { .. }),
                "{name}: {text}"
            );
            assert!(
                text.contains(&format!(
                    "the distance matrix of the XML file {} is invalid",
                    path.display()
                )),
                "{name}: {text}"
            );
            assert!(text.contains(says), "{name}: {text}");
        }
        // A matrix over only some of the nodes is not the machine's matrix either.
        let partial = dir.join("partial.xml");
        let two = "<distances2 type=\"NUMANode\" nbobjs=\"2\" kind=\"6\" indexing=\"os\">\n    \
                   <indexes length=\"4\">0 1 </indexes>\n    \
                   <u64values length=\"12\">10 20 20 10 </u64values>\n  </distances2>";
        let without = with_distances(&xml, None);
        let at = without.find("<support ").unwrap();
        std::fs::write(
            &partial,
            format!("{}{two}\n  {}", &without[..at], &without[at..]),
        )
        .unwrap();
        let err = TopologyBuilder::xml_file(&partial)
            .build()
            .map(|t| t.distance_matrix().to_vec())
            .unwrap_err()
            .to_string();
        assert!(err.contains("partial.xml is invalid"), "{err}");
        assert!(err.contains("covers 2 of the 8 nodes"), "{err}");
        // Only an absent matrix gives the default, and the topology says so.
        let none = dir.join("none.xml");
        std::fs::write(&none, with_distances(&xml, None)).unwrap();
        let t = TopologyBuilder::xml_file(&none).build().unwrap();
        assert_eq!(t.num_nodes(), n);
        assert_eq!(t.distance_source(), DistanceSource::Default);
        assert!(
            t.distance_source()
                .to_string()
                .starts_with("default (none given")
        );
        assert_eq!(t.distance_matrix(), default_matrix(n));
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn system_topology_has_a_node_with_cores() {
        let t = Topology::system().unwrap();
        assert!(t.num_nodes() >= 1);
        assert!(t.num_cores() >= 1);
        assert!(!t.is_synthetic());
        assert_eq!(t.distance(0, 0), LOCAL_DISTANCE);
    }

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
    fn cores_group_by_package_and_by_last_level_cache() {
        let t = Topology::preset(Preset::Opteron6172).unwrap();
        // Four packages of two dies of six cores; an L3 per die.
        let packages = t.core_groups(CoreGroup::Package);
        assert_eq!(packages.len(), 4);
        assert_eq!(packages[1], (12..24).collect::<Vec<_>>());
        let caches = t.core_groups(CoreGroup::LastLevelCache);
        assert_eq!(caches.len(), 8);
        assert_eq!(caches[7], (42..48).collect::<Vec<_>>());
        // No cache in the description: one group of every core.
        let bare = TopologyBuilder::synthetic("numa:2 core:2 pu:1")
            .build()
            .unwrap();
        assert_eq!(
            bare.core_groups(CoreGroup::LastLevelCache),
            [vec![0, 1, 2, 3]]
        );
        // The real machine: every core in exactly one group of each kind.
        let sys = Topology::system().unwrap();
        for kind in [CoreGroup::Package, CoreGroup::LastLevelCache] {
            let mut all: Vec<usize> = sys.core_groups(kind).concat();
            all.sort_unstable();
            assert_eq!(all, (0..sys.num_cores()).collect::<Vec<_>>(), "{kind:?}");
        }
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

/// Miri stub (no hwloc through FFI): a synthetic topology of `MIRI_NODES` (default 2) nodes of
/// `MIRI_CORES` (default 2) cores, one PU each, distances 10/20, a 1 MiB LLC.
#[cfg(miri)]
mod miri_stub {
    use super::*;
    pub(super) fn topology(source: TopologySource) -> Topology {
        let get = |v: &str, d: usize| {
            std::env::var(v)
                .ok()
                .and_then(|s| s.parse().ok())
                .unwrap_or(d)
        };
        let (n, c) = (get("MIRI_NODES", 2), get("MIRI_CORES", 2));
        let nodes = (0..n)
            .map(|i| NumaNode {
                index: i,
                os_index: i,
                cores: (0..c)
                    .map(|k| Core {
                        index: i * c + k,
                        node: i,
                        pus: vec![i * c + k],
                    })
                    .collect(),
                memory_bytes: 1 << 30,
            })
            .collect();
        Topology {
            source,
            synthetic: true,
            nodes,
            distances: default_matrix(n),
            distance_source: DistanceSource::Default,
            llc_bytes: 1 << 20,
        }
    }
}
