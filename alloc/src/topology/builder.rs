//! [`TopologyBuilder`]: where a topology comes from (the real machine, a preset, an hwloc
//! synthetic description, an hwloc XML file), the syntax of `NUMATASK_TOPOLOGY`, and the
//! build that asks hwloc for the topology and reads it.

use std::fmt;
use std::path::PathBuf;

#[cfg(not(miri))]
use hwlocality::topology::builder::BuildFlags;

#[cfg(not(miri))]
use super::discovery::{read_llc_bytes, read_nodes};
#[cfg(not(miri))]
use super::distances::{
    DistanceSource, add_hwloc_distances, default_matrix, read_distances, validate_matrix,
};
#[cfg(not(miri))]
use super::hwloc_env::{not_this_system, oversized_hwloc_synthetic};
#[cfg(not(miri))]
use super::synthetic::{check_synthetic_size, declares_node_memory, with_synthetic_hint};
#[cfg(not(miri))]
use super::xml::read_xml;
use super::{Preset, Topology};
use crate::env::trim_blanks;
use crate::error::AllocError;

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
/// use numatask_alloc::TopologyBuilder;
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
        return Ok(super::miri_stub::topology(self.source));
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
                        // hwloc's parsers say why only when asked to, on stderr.
                        format!(
                            "hwloc could not load it (not an hwloc XML export?): {why}; \
                             HWLOC_XML_VERBOSE=1 makes hwloc print why"
                        )
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

/// The forms of `NUMATASK_TOPOLOGY`, for error messages.
fn spec_syntax() -> String {
    format!(
        "system, preset:<name> ({}), synthetic:<hwloc string> or xml:<hwloc XML file>",
        Preset::ALL.map(Preset::name).join(", ")
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::topology::*;

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
}
