//! Transparent huge pages for memory bound to one node (coarse, or on a node asked for) and
//! interleaved memory (fine), and for every policy on a machine of one node.
//!
//! With huge pages on (`NUMATASK_HUGE_PAGES=1`, or [`set_huge_pages`]), a node-bound or
//! interleaved mapping of at least 2 MiB is aligned to 2 MiB, a multiple of 2 MiB long, and
//! advised to the kernel for huge pages (`MADV_HUGEPAGE`), where the kernel allows them
//! (transparent huge pages `always` or `madvise`): fewer page faults and TLB misses. A
//! node-bound mapping stays wholly on its node; an interleaved one is interleaved by huge page
//! (each 2 MiB bound to the next node in turn), as the registry says. First-touch memory keeps
//! base pages on a machine of several nodes, so that each page lands where it is first written.
//!
//! On a machine of one node every page of every policy lies on that node, so huge pages change
//! no placement there: unless `NUMATASK_HUGE_PAGES=0` (or `set_huge_pages(false)`), every
//! mapping of at least 2 MiB uses them. (Streaming `y = a * x + y` over 64 MiB arrays took
//! 8.6 to 9.0 ms with base pages and 6.5 to 7.5 with huge pages on one core of the 2-core VM.)
//! On several nodes they are off unless turned on.

use std::sync::OnceLock;
use std::sync::atomic::{AtomicU8, Ordering};

use crate::error::AllocError;

/// `NUMATASK_HUGE_PAGES`: `1`, `true` or `on` for huge pages on node-bound and interleaved
/// memory; `0`, `false` or `off` for base pages everywhere; unset (or blank), huge pages for
/// every policy on a machine of one node and base pages on several (module docs).
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

/// Whether huge pages were turned on for node-bound and interleaved mappings of at least 2 MiB:
/// as [`set_huge_pages`] set it, else as `NUMATASK_HUGE_PAGES` says (read once; an invalid
/// value is an error naming it). Unset, it is `false`, and only a machine of one node uses
/// huge pages (see the module docs).
pub fn huge_pages() -> Result<bool, AllocError> {
    Ok(huge_setting()? == Some(true))
}

/// The switch as set: `Some(on)` by [`set_huge_pages`] or `NUMATASK_HUGE_PAGES`, `None` when
/// neither says (the default: huge pages on a machine of one node only).
pub(crate) fn huge_setting() -> Result<Option<bool>, AllocError> {
    match SET.load(Ordering::Relaxed) {
        1 => return Ok(Some(false)),
        2 => return Ok(Some(true)),
        _ => {}
    }
    static ENV: OnceLock<Result<Option<bool>, AllocError>> = OnceLock::new();
    ENV.get_or_init(|| parse(std::env::var_os(HUGE_PAGES_ENV)))
        .clone()
}

fn parse(value: Option<std::ffi::OsString>) -> Result<Option<bool>, AllocError> {
    let Some(value) = value else { return Ok(None) };
    let text = value.to_string_lossy();
    match text.trim().to_ascii_lowercase().as_str() {
        // Blank counts as unset, as for every other variable.
        "" => Ok(None),
        "0" | "false" | "off" => Ok(Some(false)),
        "1" | "true" | "on" => Ok(Some(true)),
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
        assert_eq!(parse(None), Ok(None));
        assert_eq!(parse(Some("  ".into())), Ok(None));
        assert_eq!(parse(Some(" On ".into())), Ok(Some(true)));
        assert_eq!(parse(Some("0".into())), Ok(Some(false)));
        let err = parse(Some("yes".into())).unwrap_err();
        assert_eq!(
            err.to_string(),
            "NUMATASK_HUGE_PAGES='yes': expected 1, true, on, 0, false or off"
        );
    }
}
