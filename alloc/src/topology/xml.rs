//! Reading an hwloc XML file: opened without blocking, checked to be a regular file of a
//! sensible size, then read, so that a pipe, a device or a missing file is an error naming the
//! file rather than a hang or a panic in hwloc's bindings.
//!
//! A file hwloc cannot load is refused through the returned error alone. hwloc's XML parsers
//! (its minimalistic one and libxml2) print why they failed on the standard error stream only
//! when `HWLOC_XML_VERBOSE=1` asks them to, which the error message suggests; numatask leaves
//! that variable to the user, so a program given a bad file writes nothing it did not write
//! itself (`tests/xml_errors_quiet.rs` holds this). hwloc does print, whatever the variables
//! say short of `HWLOC_HIDE_ERRORS=2`, when a file it *accepts* lists sibling objects out of
//! order, which it then reorders.

use std::io::Read;
use std::os::unix::fs::OpenOptionsExt;

/// The text of an hwloc XML file; the error says which file and why it cannot be used.
pub(super) fn read_xml(path: &std::path::Path) -> Result<String, String> {
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

#[cfg(test)]
mod tests {
    use crate::error::AllocError;
    use crate::temp_dir::TempDir;
    use crate::topology::*;

    #[test]
    fn missing_or_unreadable_xml_files_are_errors_naming_the_file() {
        let dir = TempDir::new("xml-unreadable");
        let missing = dir.join("numatask-no-such-topology.xml");
        let err = TopologyBuilder::xml_file(&missing).build().unwrap_err();
        let text = err.to_string();
        assert!(matches!(err, AllocError::InvalidTopology { .. }), "{text}");
        assert!(text.contains("numatask-no-such-topology.xml"), "{text}");
        let err = TopologyBuilder::xml_file(dir.path())
            .build()
            .unwrap_err()
            .to_string();
        assert!(err.contains("is a directory"), "{err}");
        let junk = dir.join("junk.xml");
        std::fs::write(&junk, "not xml at all").unwrap();
        let err = TopologyBuilder::xml_file(&junk).build();
        assert!(err.is_err(), "a file that is not an hwloc export");
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
        let dir = TempDir::new("xml-fifo");
        let fifo = dir.join("fifo");
        let name = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
        // SAFETY: `name` is a NUL-terminated path.
        assert_eq!(unsafe { libc::mkfifo(name.as_ptr(), 0o600) }, 0);
        let err = TopologyBuilder::xml_file(&fifo)
            .build()
            .unwrap_err()
            .to_string();
        assert!(err.contains("it is not a regular file"), "{err}");
    }

    #[test]
    fn xml_file_with_distances_is_read() {
        let dir = TempDir::new("xml-read");
        let path = dir.join("topo.xml");
        let t = Topology::preset(Preset::Opteron6172).unwrap();
        t.export_xml(&path).unwrap();
        let back = TopologyBuilder::xml_file(&path).build().unwrap();
        assert_eq!(back.num_nodes(), 8);
        assert_eq!(back.distance_source(), DistanceSource::Xml);
        assert_eq!(back.distance_matrix(), t.distance_matrix());
        assert!(back.is_synthetic());
    }
}
