//! Transparent huge pages for memory bound to one node (coarse, or on a node asked for) and
//! interleaved memory (fine).
//!
//! With huge pages on (`NUMATASK_HUGE_PAGES=1`, or [`set_huge_pages`]), a node-bound or
//! interleaved mapping of at least 2 MiB is aligned to 2 MiB, a multiple of 2 MiB long, and
//! advised to the kernel for huge pages (`MADV_HUGEPAGE`), where the kernel allows them
//! (transparent huge pages `always` or `madvise`): fewer page faults and TLB misses. A
//! node-bound mapping stays wholly on its node; an interleaved one is interleaved by huge page
//! (each 2 MiB bound to the next node in turn), as the registry says. Off by default.
//! First-touch memory keeps base pages, so that each page lands where it is first written.

use std::sync::OnceLock;
use std::sync::atomic::{AtomicU8, Ordering};

use crate::error::AllocError;

/// `NUMATASK_HUGE_PAGES`: `1`, `true` or `on` for huge pages on node-bound and interleaved
/// memory; `0`, `false`, `off` or unset for base pages.
pub const HUGE_PAGES_ENV: &str = "NUMATASK_HUGE_PAGES";

/// A huge page: the unit the kernel backs a huge-page mapping with on x86-64 and arm64 (4 KiB
/// base pages).
pub const HUGE_PAGE: usize = 2 << 20;

/// 0: from the environment; 1: off; 2: on.
static SET: AtomicU8 = AtomicU8::new(0);

/// Turns huge pages for node-bound and interleaved memory on or off for the allocations that
/// follow, whatever `NUMATASK_HUGE_PAGES` says.
pub fn set_huge_pages(on: bool) {
    SET.store(if on { 2 } else { 1 }, Ordering::Relaxed);
}

/// Whether node-bound and interleaved mappings of at least 2 MiB use huge pages: as
/// [`set_huge_pages`] set it, else as `NUMATASK_HUGE_PAGES` says (read once; an invalid value
/// is an error naming it).
pub fn huge_pages() -> Result<bool, AllocError> {
    match SET.load(Ordering::Relaxed) {
        1 => return Ok(false),
        2 => return Ok(true),
        _ => {}
    }
    static ENV: OnceLock<Result<bool, AllocError>> = OnceLock::new();
    ENV.get_or_init(|| parse(std::env::var_os(HUGE_PAGES_ENV)))
        .clone()
}

fn parse(value: Option<std::ffi::OsString>) -> Result<bool, AllocError> {
    let Some(value) = value else { return Ok(false) };
    let text = value.to_string_lossy();
    match text.trim().to_ascii_lowercase().as_str() {
        "" | "0" | "false" | "off" => Ok(false),
        "1" | "true" | "on" => Ok(true),
        _ => Err(AllocError::InvalidEnv {
            var: HUGE_PAGES_ENV,
            value: text.into_owned(),
            expected: "1, true, on, 0, false or off".into(),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_variable_reads_as_a_switch_and_anything_else_is_an_error() {
        assert_eq!(parse(None), Ok(false));
        assert_eq!(parse(Some(" On ".into())), Ok(true));
        assert_eq!(parse(Some("0".into())), Ok(false));
        let err = parse(Some("yes".into())).unwrap_err();
        assert_eq!(
            err.to_string(),
            "NUMATASK_HUGE_PAGES='yes': expected 1, true, on, 0, false or off"
        );
    }
}
