//! An XML topology that hwloc cannot load, or whose distance matrix numatask refuses, is
//! reported through the returned error alone: nothing is written to the standard error stream
//! (hwloc's XML parsers say why they failed only under `HWLOC_XML_VERBOSE=1`). Alone in its test
//! binary: it points file descriptor 2 at a file while it loads.

use std::fs::File;
use std::os::fd::AsRawFd;

use numatask_alloc::{Preset, Topology, TopologyBuilder};

#[path = "common/temp_dir.rs"]
mod temp_dir;
use temp_dir::TempDir;

/// Standard error pointed at a file until dropped, then restored.
struct StderrToFile {
    saved: libc::c_int,
}

impl StderrToFile {
    fn new(file: &File) -> StderrToFile {
        // SAFETY: descriptor 2 is open for the whole test; dup has no memory preconditions.
        let saved = unsafe { libc::dup(2) };
        assert!(saved >= 0, "dup(2): {}", std::io::Error::last_os_error());
        // SAFETY: both descriptors are open; dup2 only changes what descriptor 2 refers to.
        let done = unsafe { libc::dup2(file.as_raw_fd(), 2) };
        assert!(done == 2, "dup2: {}", std::io::Error::last_os_error());
        StderrToFile { saved }
    }
}

impl Drop for StderrToFile {
    fn drop(&mut self) {
        // SAFETY: `saved` is the duplicate of the original descriptor 2, owned by this guard.
        unsafe {
            libc::dup2(self.saved, 2);
            libc::close(self.saved);
        }
    }
}

#[test]
fn bad_xml_topologies_are_refused_without_writing_to_stderr() {
    // SAFETY: the only test of this binary, and nothing has read the environment yet (hwloc
    // reads the variable once, when it first loads XML).
    unsafe { std::env::remove_var("HWLOC_XML_VERBOSE") };
    let dir = TempDir::new("xml-quiet");
    let good = dir.join("preset.xml");
    Topology::preset(Preset::Opteron6172)
        .expect("the preset")
        .export_xml(&good)
        .expect("export");
    let xml = std::fs::read_to_string(&good).expect("read back");
    let row = "<u64values length=\"30\">10 16 ";
    assert!(xml.contains(row), "the preset's first row");
    let bad = [
        ("junk", "not xml at all".to_owned()),
        ("truncated", xml[..xml.len() / 2].to_owned()),
        ("unknown-root", xml.replacen("<topology", "<topologyx", 1)),
        (
            "length",
            xml.replacen(row, "<u64values length=\"31\">10 16 ", 1),
        ),
        (
            "below-local",
            xml.replacen(row, "<u64values length=\"30\">10 01 ", 1),
        ),
    ];
    let paths: Vec<_> = bad
        .iter()
        .map(|(name, text)| {
            let path = dir.join(format!("{name}.xml"));
            std::fs::write(&path, text).expect("write");
            (*name, path)
        })
        .collect();
    let log = dir.join("stderr.txt");
    let sink = File::create(&log).expect("the stderr file");
    let outcomes: Vec<(&str, bool)> = {
        let _redirected = StderrToFile::new(&sink);
        paths
            .iter()
            .map(|(name, path)| (*name, TopologyBuilder::xml_file(path).build().is_err()))
            .collect()
    };
    let written = std::fs::read_to_string(&log).expect("read the stderr file");
    for (name, refused) in outcomes {
        assert!(refused, "{name}: loaded");
    }
    assert!(written.is_empty(), "written to stderr:\n{written}");
}
