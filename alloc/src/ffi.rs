//! C entry points with the names of the core paper's Listing 2 (`omp_malloc`,
//! `omp_malloc_specific`; its `omp_free` is `numatask_omp_free` in C, see [`omp_free`]), for C
//! code linked with a Rust program (or a `staticlib`/`cdylib` wrapper). They return `NULL` /
//! `-1` on error, set `errno`, and keep the error's message for [`numatask_last_error`].
//!
//! The C symbols are exported only with the crate's **`c-api`** feature (without it these are
//! plain Rust functions), so that a Rust program linking numatask does not define
//! `omp_malloc` behind its C libraries' backs. The declarations are in
//! `alloc/include/numatask_alloc.h`; `tests/c/alloc_api.c` is a C program using them, run by
//! `cargo test -p numatask-bench --features c-api --test c_api`.

use std::cell::RefCell;
use std::ffi::{c_char, c_int, c_void};

use crate::allocator;
use crate::distribution::Distribution;
use crate::error::AllocError;

/// `distribution` value of [`omp_malloc_specific`] for the standard policy.
pub const OMP_DISTRIBUTION_STANDARD: c_int = 0;
/// `distribution` value of [`omp_malloc_specific`] for the fine policy.
pub const OMP_DISTRIBUTION_FINE: c_int = 1;
/// `distribution` value of [`omp_malloc_specific`] for the coarse policy.
pub const OMP_DISTRIBUTION_COARSE: c_int = 2;

thread_local! {
    static LAST_ERROR: RefCell<String> = const { RefCell::new(String::new()) };
}

fn fail(e: &AllocError) {
    let errno = match e {
        AllocError::TooLarge { .. } | AllocError::Map { .. } => libc::ENOMEM,
        _ => libc::EINVAL,
    };
    // During thread exit (a C thread-exit destructor) the message has nowhere to go: errno
    // still says what failed. `try_with`, as a panic here would abort the process.
    let _ = LAST_ERROR.try_with(|l| *l.borrow_mut() = e.to_string());
    // Last, so that nothing above (an allocation, a free) can change it.
    // SAFETY: __errno_location returns this thread's errno slot.
    unsafe { *libc::__errno_location() = errno };
}

fn to_c(r: Result<std::ptr::NonNull<u8>, AllocError>) -> *mut c_void {
    r.map_or_else(
        |e| {
            fail(&e);
            std::ptr::null_mut()
        },
        |p| p.as_ptr().cast(),
    )
}

/// `omp_malloc(size)`: allocates with `OMP_DATA_DISTRIBUTION`; `NULL` on error.
#[cfg_attr(feature = "c-api", unsafe(no_mangle))]
pub extern "C" fn omp_malloc(size: usize) -> *mut c_void {
    to_c(allocator::omp_malloc(size))
}

/// `omp_malloc_specific(size, distribution)` with one of the `OMP_DISTRIBUTION_*` values.
#[cfg_attr(feature = "c-api", unsafe(no_mangle))]
pub extern "C" fn omp_malloc_specific(size: usize, distribution: c_int) -> *mut c_void {
    let d = match distribution {
        OMP_DISTRIBUTION_STANDARD => Distribution::Standard,
        OMP_DISTRIBUTION_FINE => Distribution::Fine,
        OMP_DISTRIBUTION_COARSE => Distribution::Coarse,
        other => {
            fail(&AllocError::InvalidDistributionCode(other));
            return std::ptr::null_mut();
        }
    };
    to_c(allocator::omp_malloc_specific(size, d))
}

/// The paper's `omp_free(ptr)`, exported to C as **`numatask_omp_free`**: 0 on success, -1
/// (errno `EINVAL`) for a pointer this allocator did not return. `NULL` is accepted and
/// ignored, as `free` does.
///
/// Not exported as `omp_free`: OpenMP 5.0 defines `omp_free(void *, omp_allocator_handle_t)`,
/// and a one-argument `omp_free` in the program would take the place of libgomp's or libomp's
/// for every caller, leaking their memory.
///
/// # Safety
///
/// Nothing may use the memory after the call.
#[cfg_attr(feature = "c-api", unsafe(export_name = "numatask_omp_free"))]
pub unsafe extern "C" fn omp_free(ptr: *mut c_void) -> c_int {
    if ptr.is_null() {
        return 0;
    }
    // SAFETY: forwarded from this function's contract.
    match unsafe { allocator::omp_free(ptr.cast()) } {
        Ok(()) => 0,
        Err(e) => {
            fail(&e);
            -1
        }
    }
}

/// Copies the calling thread's last error message (NUL-terminated, truncated to `len`) into
/// `buf` and returns its full length (0, with an empty string, during the thread's exit).
///
/// # Safety
///
/// `buf` must be valid for writes of `len` bytes (or `len` must be 0).
#[cfg_attr(feature = "c-api", unsafe(no_mangle))]
pub unsafe extern "C" fn numatask_last_error(buf: *mut c_char, len: usize) -> usize {
    let copy = |msg: &str| {
        if len > 0 && !buf.is_null() {
            let n = msg.len().min(len - 1);
            // SAFETY: the caller guarantees `buf` holds `len` bytes; n + 1 <= len.
            unsafe {
                std::ptr::copy_nonoverlapping(msg.as_ptr().cast::<c_char>(), buf, n);
                *buf.add(n) = 0;
            }
        }
        msg.len()
    };
    LAST_ERROR
        .try_with(|l| copy(&l.borrow()))
        .unwrap_or_else(|_| copy(""))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_error_during_thread_exit_is_reported_by_errno_without_aborting() {
        use std::sync::atomic::{AtomicI32, Ordering};
        static RC: AtomicI32 = AtomicI32::new(0);
        struct FreesAtExit;
        impl Drop for FreesAtExit {
            fn drop(&mut self) {
                // SAFETY: a pointer the allocator never returned: refused, nothing freed.
                let rc = unsafe { omp_free(std::ptr::without_provenance_mut(0x1000)) };
                RC.store(rc, Ordering::SeqCst);
            }
        }
        thread_local!(static AT_EXIT: FreesAtExit = const { FreesAtExit });
        std::thread::spawn(|| {
            // Registered before the error message's slot, so destroyed after it: the C
            // call in its destructor finds the message slot gone (an abort before the fix).
            AT_EXIT.with(|_| {});
            // SAFETY: as above.
            assert_eq!(
                unsafe { omp_free(std::ptr::without_provenance_mut(0x1000)) },
                -1
            );
        })
        .join()
        .expect("the thread exits normally");
        assert_eq!(RC.load(Ordering::SeqCst), -1);
    }

    #[test]
    fn c_entry_points_report_errors_through_null_errno_and_message() {
        assert!(omp_malloc_specific(4096, 7).is_null());
        let mut buf = [0 as c_char; 128];
        // SAFETY: buf holds 128 bytes.
        let n = unsafe { numatask_last_error(buf.as_mut_ptr(), buf.len()) };
        // SAFETY: numatask_last_error NUL-terminated the buffer.
        let msg = unsafe { std::ffi::CStr::from_ptr(buf.as_ptr()) }
            .to_string_lossy()
            .into_owned();
        assert_eq!(n, msg.len());
        assert_eq!(
            msg,
            "unknown data distribution code 7: expected 0 (standard), 1 (fine) or 2 (coarse)"
        );
        let p = omp_malloc_specific(100, OMP_DISTRIBUTION_FINE);
        assert!(!p.is_null());
        // SAFETY: p came from omp_malloc_specific.
        assert_eq!(unsafe { omp_free(p) }, 0);
        // SAFETY: double free is refused, not performed.
        assert_eq!(unsafe { omp_free(p) }, -1);
        // SAFETY: reading errno of this thread.
        assert_eq!(unsafe { *libc::__errno_location() }, libc::EINVAL);
    }
}
