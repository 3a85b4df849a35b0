//! Synchronisation facade of the kernel executor: the event protocol (`event.rs`) names its
//! locks, atomics, clock and spin through this module, which is `std` normally and
//! [loom](https://docs.rs/loom) under `RUSTFLAGS="--cfg loom"`, so that the code the models in
//! `loom-tests/tests/kernels_event.rs` check is the code that ships (the arrangement of
//! `numatask_sched`'s own facade).
//!
//! - [`Arc`], [`Mutex`], [`MutexGuard`], [`Condvar`] and [`atomic`]: the std types, or loom's.
//! - [`Instant`]: `std::time::Instant`, or under loom a clock that always reads 1 ns after its
//!   epoch. Loom replays each execution from its scheduling choices, so nothing may depend on
//!   real time; a fixed reading keeps the profiling stamps deterministic and still tells a
//!   stamp that was taken (non-zero) from one that was not (zero).
//! - [`spin_until`]: a waiter's short spin before it sleeps. Under loom it does nothing. The
//!   spin only decides how soon a waiter takes the lock, never what it reads there (the status,
//!   under the lock, whichever way the spin ended), so the models lose no behaviour without
//!   it; kept, it would have to yield to the model checker at every look and be bounded by a
//!   count instead of time, multiplying the interleavings for nothing.

#[cfg(loom)]
mod imp {
    use std::time::Duration;

    pub use loom::sync::{Arc, Condvar, Mutex, MutexGuard};

    /// Atomic types (loom's model-checked versions).
    pub mod atomic {
        pub use loom::sync::atomic::{AtomicBool, AtomicU64, Ordering};
    }

    /// A clock for the models: every reading is 1 ns after its epoch (see the module docs).
    #[derive(Clone, Copy, Debug)]
    pub struct Instant(());

    impl Instant {
        /// The epoch of a model's clock.
        pub fn now() -> Self {
            Instant(())
        }

        /// Always 1 ns.
        pub fn elapsed(&self) -> Duration {
            Duration::from_nanos(1)
        }
    }

    /// No spin (see the module docs): returns at once.
    pub fn spin_until(_limit: Duration, _done: impl FnMut() -> bool) {}
}

#[cfg(not(loom))]
mod imp {
    use std::time::Duration;

    // `no_inline`: std's pages, linked to, rather than copies of their text here.
    #[doc(no_inline)]
    pub use std::sync::{Arc, Condvar, Mutex, MutexGuard};
    #[doc(no_inline)]
    pub use std::time::Instant;

    /// Atomic types (`std`'s).
    pub mod atomic {
        #[doc(no_inline)]
        pub use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
    }

    /// Waits awake until `done()` returns `true` or about `limit` passed: 64 looks spinning,
    /// then yielding the core between looks, so that a thread that shares the core (a worker
    /// running what is waited for, on a loaded machine or a pinned worker's core) runs rather
    /// than waiting for this one's time slice.
    pub fn spin_until(limit: Duration, mut done: impl FnMut() -> bool) {
        let start = Instant::now();
        let mut looks = 0u32;
        while !done() {
            looks = looks.saturating_add(1);
            if looks < 64 {
                std::hint::spin_loop();
            } else if start.elapsed() > limit {
                return;
            } else {
                std::thread::yield_now();
            }
        }
    }
}

pub use imp::*;
