//! `NUMATASK_TOPOLOGY=xml:<file>` whose distance matrix is invalid is an error naming the
//! variable, the file and what is wrong, not the default matrix. Alone in its test binary: it
//! sets the topology variable before anything reads it.

use numatask_alloc::{AllocError, Preset, Topology};

#[path = "common/temp_dir.rs"]
mod temp_dir;
use temp_dir::TempDir;

#[test]
fn an_xml_topology_with_a_distance_below_the_local_one_is_refused() {
    let dir = TempDir::new("env-xml");
    let path = dir.join("below-local.xml");
    Topology::preset(Preset::Opteron6172)
        .expect("the preset")
        .export_xml(&path)
        .expect("export");
    let xml = std::fs::read_to_string(&path).expect("read back");
    // distance(0, 1) = 16 becomes 01, i.e. 1: the element's length (which hwloc checks) is kept.
    let row = "<u64values length=\"30\">10 16 ";
    assert!(xml.contains(row), "the preset's first row");
    std::fs::write(
        &path,
        xml.replacen(row, "<u64values length=\"30\">10 01 ", 1),
    )
    .expect("edit");
    let spec = format!("xml:{}", path.display());
    // SAFETY: the only test of this binary, and nothing has read the environment yet.
    unsafe { std::env::set_var("NUMATASK_TOPOLOGY", &spec) };
    let err = Topology::current().map(|t| t.num_nodes()).unwrap_err();
    let text = err.to_string();
    assert!(
        matches!(&err, AllocError::InvalidEnv { var: "NUMATASK_TOPOLOGY", value, .. } if *value == spec),
        "{text}"
    );
    assert!(
        text.contains(&format!(
            "the distance matrix of the XML file {} is invalid: distance (0, 1) = 1 is smaller \
             than the local distance 10",
            path.display()
        )),
        "{text}"
    );
}
