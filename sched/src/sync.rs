//! Synchronisation facade: the runtime's concurrent code names its atomics, locks, cells and
//! threads through this module, so the same source is compiled against `std` normally and
//! against [loom](https://docs.rs/loom) under `RUSTFLAGS="--cfg loom"`, where every
//! interleaving up to a preemption bound is model-checked (see `loom-tests/` and
//! `scripts/loom.sh`).
//!
//! The shape follows tokio's `loom` module:
//!
//! - [`atomic`]: `AtomicBool`, `AtomicUsize`, `AtomicU32`,
//!   `AtomicPtr`, `Ordering` and `fence`.
//! - [`Arc`], [`Mutex`], [`Condvar`]: the std types, or loom's (same method names; `lock` and
//!   `wait` return `LockResult` in both).
//! - [`UnsafeCell`]: loom's cell, or a zero-cost std wrapper with the same closure-based
//!   `with` / `with_mut` API, so that loom can track every access to the cell's contents.
//! - [`thread`]: `spawn`, `yield_now`, ...
//! - [`spin_loop`] and [`Backoff`]: busy-wait hints. Under loom a spin must yield to the
//!   scheduler or the model checker explores an unbounded loop, so both yield there.
//! - [`CachePadded`]: crossbeam-utils' padding, which is the same under both configurations.
//!
//! Loom treats `SeqCst` loads and stores as `AcqRel` (only `fence(SeqCst)` is modelled with
//! full strength), so code in this crate that needs a store-load (Dekker) ordering uses an
//! explicit `fence(SeqCst)` rather than relying on `SeqCst` accesses.

pub use crossbeam_utils::CachePadded;

#[cfg(loom)]
mod imp {
    pub use loom::cell::UnsafeCell;
    pub use loom::sync::{Arc, Condvar, Mutex, MutexGuard};
    pub use loom::thread;

    /// Atomic types and fences (loom's model-checked versions).
    pub mod atomic {
        pub use loom::sync::atomic::{
            AtomicBool, AtomicPtr, AtomicU32, AtomicUsize, Ordering, fence,
        };
    }

    /// Busy-wait hint; under loom it yields so that the spinning thread lets others progress.
    #[inline]
    pub fn spin_loop() {
        loom::hint::spin_loop();
    }

    /// A cache hint, nothing under loom.
    #[inline]
    pub fn prefetch_write<T>(_: *const T) {}

    /// Exponential backoff for spin loops; under loom every step yields to the model checker.
    #[derive(Debug, Default)]
    pub struct Backoff(());

    impl Backoff {
        /// A fresh backoff.
        #[inline]
        pub fn new() -> Self {
            Backoff(())
        }

        /// Backs off in a lock-free loop (another thread made progress).
        #[inline]
        pub fn spin(&self) {
            loom::thread::yield_now();
        }

        /// Backs off while waiting for another thread to finish something.
        #[inline]
        pub fn snooze(&self) {
            loom::thread::yield_now();
        }
    }
}

#[cfg(not(loom))]
mod imp {
    // `no_inline`: std's pages, linked to, rather than copies of their text here, whose
    // relative links into std lead nowhere in this crate's docs.
    #[doc(no_inline)]
    pub use std::sync::{Arc, Condvar, Mutex, MutexGuard};
    #[doc(no_inline)]
    pub use std::thread;

    pub use crossbeam_utils::Backoff;

    /// Atomic types and fences (`std`'s).
    pub mod atomic {
        #[doc(no_inline)]
        pub use std::sync::atomic::{
            AtomicBool, AtomicPtr, AtomicU32, AtomicUsize, Ordering, fence,
        };
    }

    /// Busy-wait hint (`std::hint::spin_loop`).
    #[inline(always)]
    pub fn spin_loop() {
        std::hint::spin_loop();
    }

    /// Asks the CPU to bring the cache line at `p` into this core's cache, for writing: a hint
    /// with no effect on the program's meaning, never a fault (even for an invalid address).
    ///
    /// The thread that creates tasks writes blocks that other cores freed and deque slots that
    /// thieves emptied; taking such a line from another core's cache costs far more than the
    /// write. Asked for well ahead (the block the next task will get), the transfer overlaps
    /// other work instead of stalling it. On x86-64 this is `prefetchw` (a no-op on CPUs
    /// without it), on AArch64 `prfm pstl1keep`; elsewhere it does nothing.
    #[inline(always)]
    pub fn prefetch_write<T>(p: *const T) {
        #[cfg(all(target_arch = "x86_64", not(miri)))]
        // SAFETY: a prefetch does not access memory architecturally: it cannot fault, read or
        // write program state, whatever the address.
        unsafe {
            std::arch::asm!("prefetchw [{0}]", in(reg) p, options(nostack, readonly, preserves_flags));
        }
        #[cfg(all(target_arch = "aarch64", not(miri)))]
        // SAFETY: as above.
        unsafe {
            std::arch::asm!("prfm pstl1keep, [{0}]", in(reg) p, options(nostack, readonly, preserves_flags));
        }
        #[cfg(any(miri, not(any(target_arch = "x86_64", target_arch = "aarch64"))))]
        let _ = p;
    }

    /// `std::cell::UnsafeCell` behind loom's closure-based API, so that code touching the
    /// cell is written once. Every method is `#[inline(always)]` and compiles to a plain
    /// pointer access.
    #[derive(Debug, Default)]
    #[repr(transparent)]
    pub struct UnsafeCell<T: ?Sized>(std::cell::UnsafeCell<T>);

    impl<T> UnsafeCell<T> {
        /// Wraps `value`.
        #[inline(always)]
        pub const fn new(value: T) -> Self {
            UnsafeCell(std::cell::UnsafeCell::new(value))
        }
    }

    impl<T: ?Sized> UnsafeCell<T> {
        /// Calls `f` with a shared raw pointer to the contents. Dereferencing it is up to the
        /// caller's own synchronisation, exactly as with `std::cell::UnsafeCell::get`.
        #[inline(always)]
        pub fn with<R>(&self, f: impl FnOnce(*const T) -> R) -> R {
            f(self.0.get())
        }

        /// Calls `f` with a mutable raw pointer to the contents. Dereferencing it is up to the
        /// caller's own synchronisation, exactly as with `std::cell::UnsafeCell::get`.
        #[inline(always)]
        pub fn with_mut<R>(&self, f: impl FnOnce(*mut T) -> R) -> R {
            f(self.0.get())
        }
    }
}

pub use imp::*;
