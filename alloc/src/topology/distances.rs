//! The node distance matrix: where it came from ([`DistanceSource`]), reading hwloc's (the
//! OS's or an XML file's) in node order, recording a given one in hwloc so that an export
//! carries it, the checks every matrix passes, and the default of 10 local / 20 remote.

use std::fmt;

use hwlocality::object::TopologyObject;
use hwlocality::object::distance::{AddDistancesFlags, Distances, DistancesKind};
use hwlocality::object::types::ObjectType;

use super::NumaNode;

/// Distance on the diagonal of a default matrix (the ACPI SLIT convention: local = 10).
pub(super) const LOCAL_DISTANCE: u32 = 10;
/// Distance between distinct nodes when the OS gives no matrix.
pub(super) const DEFAULT_REMOTE_DISTANCE: u32 = 20;

/// Where a topology's distance matrix came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DistanceSource {
    /// Read from the operating system's tables (ACPI SLIT through hwloc).
    Os,
    /// Read from an hwloc XML file.
    Xml,
    /// Given explicitly (a preset or [`TopologyBuilder::distances`](super::TopologyBuilder::distances)).
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

/// The NUMA distance matrix hwloc has for `nodes`, in node order: `Ok(None)` when it has
/// none (the caller then uses the default), an error saying what is wrong when the matrix
/// does not cover the nodes or fails the checks of [`TopologyBuilder::distances`](super::TopologyBuilder::distances).
pub(super) fn read_distances(
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
pub(super) fn is_numa_distance(d: &Distances<'_>) -> bool {
    !d.kind().contains(DistancesKind::MEANS_BANDWIDTH)
        && d.objects()
            .all(|o| o.is_some_and(|o| o.object_type() == ObjectType::NUMANode))
}

/// Records `matrix` as the NUMA distances of `hw`, in place of those it has (the OS's, an XML
/// file's): an export holds it alone, and reading the export back finds it.
pub(super) fn add_hwloc_distances(
    hw: &mut hwlocality::Topology,
    matrix: &[u32],
) -> Result<(), String> {
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

pub(super) fn validate_matrix(matrix: Vec<u32>, n: usize) -> Result<Vec<u32>, String> {
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

pub(super) fn default_matrix(n: usize) -> Vec<u32> {
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::AllocError;
    use crate::temp_dir::TempDir;
    use crate::topology::*;

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
        let dir = TempDir::new("bandwidth");
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
    }

    #[test]
    fn a_matrix_given_for_an_xml_topology_replaces_the_files_in_an_export() {
        let dir = TempDir::new("given");
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
        let dir = TempDir::new("bad-xml");
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
    }
}
