//! A directory for one test's files, removed with everything in it when its guard is dropped,
//! also when the test fails and unwinds, so that tests leave nothing behind.

// Each test binary that includes this file uses only part of it.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};

/// A fresh directory under the system's temporary directory; dropping it removes it.
pub struct TempDir(PathBuf);

impl TempDir {
    /// A new empty directory named for `label`, the process and a counter, so that tests
    /// running at once, in one process or several, each get their own.
    pub fn new(label: &str) -> TempDir {
        static NEXT: AtomicUsize = AtomicUsize::new(0);
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let path =
            std::env::temp_dir().join(format!("numatask-{label}-{}-{n}", std::process::id()));
        // Left over from an earlier process of the same id that was killed: start empty.
        let _ = std::fs::remove_dir_all(&path);
        std::fs::create_dir(&path).expect("a temporary directory for the test");
        TempDir(path)
    }

    /// The directory.
    pub fn path(&self) -> &Path {
        &self.0
    }

    /// `name` inside the directory.
    pub fn join(&self, name: impl AsRef<Path>) -> PathBuf {
        self.0.join(name)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        // Nothing to report from a destructor: a directory that cannot be removed is found
        // by the check that the tests left nothing behind.
        let _ = std::fs::remove_dir_all(&self.0);
    }
}
