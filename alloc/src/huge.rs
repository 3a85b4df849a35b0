//! Huge pages (2 MiB) or base pages (4 KiB), per allocation, by environment, or by default:
//! see [`Pages`].

use std::cell::Cell;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicU8, Ordering};

use crate::error::AllocError;

/// `NUMATASK_HUGE_PAGES`: `1`, `true` or `on` for huge pages on every mapping of at least
/// 2 MiB; `0`, `false` or `off` for base pages everywhere; unset (or blank), huge pages on a
/// machine of one node and base pages on several (see [`Pages`]).
pub const HUGE_PAGES_ENV: &str = "NUMATASK_HUGE_PAGES";

/// A huge page: the unit the kernel backs a huge-page mapping with on x86-64 and arm64 (4 KiB
/// base pages).
pub const HUGE_PAGE: usize = 2 << 20;

/// 0: from the environment; 1: off; 2: on.
static SET: AtomicU8 = AtomicU8::new(0);

/// Turns huge pages on or off for the allocations that follow (outside [`with_pages`]),
/// whatever `NUMATASK_HUGE_PAGES` says.
pub fn set_huge_pages(on: bool) {
    SET.store(if on { 2 } else { 1 }, Ordering::Relaxed);
}

/// Whether huge pages were turned on for every mapping of at least 2 MiB: as
/// [`set_huge_pages`] set it, else as `NUMATASK_HUGE_PAGES` says (read once; an invalid value
/// is an error naming it). Unset, it is `false`, and only a machine of one node uses huge
/// pages (see [`Pages`]). [`with_pages`] overrides it on its thread.
pub fn huge_pages() -> Result<bool, AllocError> {
    Ok(huge_setting()? == Some(true))
}

/// Huge pages (2 MiB) or base pages (4 KiB), per allocation, by environment, or by default.
///
/// A mapping of at least 2 MiB with huge pages is aligned to 2 MiB, a multiple of 2 MiB long,
/// and advised to the kernel for them (`MADV_HUGEPAGE`, where transparent huge pages are
/// `always` or `madvise`): fewer page faults and TLB misses, and no huge page ever spans two
/// allocations, or an allocation and another mapping. How each policy places huge pages:
/// - **coarse** (or one node asked for): wholly on its node, as with base pages;
/// - **fine**: interleaved by huge page, each 2 MiB bound to the next node in turn, as the
///   registry says;
/// - **standard**: first touch in 2 MiB units: the first write into a huge page places all of
///   it. A parallel loop that initializes such memory (`taskloop_mut` and `taskloop_zip` of
///   the scheduler) cuts its chunks at huge-page boundaries, so that each
///   worker still first-touches the pages it later uses.
///
/// With base pages, a standard or fine mapping is advised against huge pages
/// (`MADV_NOHUGEPAGE`; every mapping, when base pages are chosen explicitly): with transparent
/// huge pages `always`, as distributions ship their kernels, the kernel would otherwise fault
/// first-touch memory in 2 MiB units (a neighbour's first write placing a page meant for
/// another node), interleave by 2 MiB instead of by page, and merge a mapping with the one next
/// to it (a thread stack, say) into one area where a huge page can cross the boundary. A coarse
/// mapping left to the default may still get the kernel's huge pages: it lies wholly on its
/// node either way.
///
/// Which one, the first that says: [`with_pages`] for the allocations made inside it;
/// [`set_huge_pages`]; `NUMATASK_HUGE_PAGES` (`1` huge, `0` base). Otherwise, on a machine of
/// one node every mapping of at least 2 MiB uses huge pages (every page of every policy lies on
/// that node, so they change no placement; streaming `y = a * x + y` over 64 MiB arrays took
/// 8.6 to 9.0 ms with base pages and 6.5 to 7.5 with huge pages on one core of the 2-core VM),
/// and on several nodes base pages, so that first touch places each 4 KiB page where it is
/// first written, as users of `OMP_DATA_DISTRIBUTION=standard` expect.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Pages {
    /// Base pages (4 KiB): first touch places each one.
    Base,
    /// Huge pages (2 MiB) for mappings of at least 2 MiB: fewer faults and TLB misses; first
    /// touch places 2 MiB at a time.
    Huge,
}

thread_local! {
    /// The choice of the innermost [`with_pages`] running on this thread.
    static SCOPED: Cell<Option<Pages>> = const { Cell::new(None) };
}

/// Runs `f` with every allocation it makes on this thread using `pages`, whatever
/// [`set_huge_pages`], `NUMATASK_HUGE_PAGES` or the default say: the choice for one allocation,
/// or a few, by whichever API makes them ([`omp_malloc`](crate::omp_malloc),
/// [`NumaVec`](crate::NumaVec), [`NumaAlloc`](crate::NumaAlloc)). Nests; the innermost wins.
/// The choice is the calling thread's: tasks that `f` spawns allocate under it only if they
/// run on this thread.
///
/// ```
/// use numatask_alloc::{Distribution, NumaVec, Pages, with_pages};
///
/// // First-touch memory placed 4 KiB at a time, even where huge pages are the default.
/// let v = with_pages(Pages::Base, || NumaVec::<f64>::zeroed(1 << 20, Distribution::Standard))?;
/// assert_eq!(v.len(), 1 << 20);
/// # Ok::<(), numatask_alloc::AllocError>(())
/// ```
pub fn with_pages<R>(pages: Pages, f: impl FnOnce() -> R) -> R {
    struct Restore(Option<Pages>);
    impl Drop for Restore {
        fn drop(&mut self) {
            SCOPED.with(|c| c.set(self.0));
        }
    }
    let _restore = Restore(SCOPED.with(|c| c.replace(Some(pages))));
    f()
}

/// The choice for an allocation made now on this thread: `Some(huge)` by [`with_pages`],
/// [`set_huge_pages`] or `NUMATASK_HUGE_PAGES`, `None` when none says (the default: huge pages
/// on a machine of one node only).
pub(crate) fn huge_setting() -> Result<Option<bool>, AllocError> {
    if let Some(pages) = SCOPED.with(Cell::get) {
        return Ok(Some(pages == Pages::Huge));
    }
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
    fn with_pages_overrides_the_setting_on_its_thread_nests_and_restores() {
        let outer = huge_setting().unwrap();
        with_pages(Pages::Huge, || {
            assert_eq!(huge_setting(), Ok(Some(true)));
            with_pages(Pages::Base, || assert_eq!(huge_setting(), Ok(Some(false))));
            assert_eq!(huge_setting(), Ok(Some(true)));
            // Another thread is not affected.
            let other = std::thread::spawn(|| SCOPED.with(Cell::get))
                .join()
                .unwrap();
            assert_eq!(other, None);
        });
        assert_eq!(huge_setting().unwrap(), outer);
        // Restored even when the closure panics.
        let _ = std::panic::catch_unwind(|| with_pages(Pages::Huge, || panic!("inside")));
        assert_eq!(huge_setting().unwrap(), outer);
    }

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
