//! Completion signals besides the child counter ([`crate::child_counter`], behind `taskwait`)
//! and a result handle's state (`crate::result_state`): the panic slot, and the end of a scope
//! injected from a thread outside the pool.

use crate::blocking::BlockingLatch;
use crate::sync::atomic::{AtomicPtr, Ordering};

pub(crate) use crate::unwind::{Payload, drop_payload};

/// Holds the first panic of a frame's body or children until someone waits for the frame.
///
/// It has no `Drop`: every frame's slot is emptied before the frame goes away (a finished
/// task's by [`finish_frame`](crate::job::finish_frame), which passes it to the parent; a
/// root's or group's by its owner after the wait), and a frame is freed on every spawn, so
/// the check would cost on the hot path for nothing. A payload left behind by a bug would
/// leak, which is safe.
pub(crate) struct PanicSlot(AtomicPtr<Payload>);

impl PanicSlot {
    #[inline]
    pub(crate) fn new() -> Self {
        PanicSlot(AtomicPtr::new(std::ptr::null_mut()))
    }

    /// Stores `payload` unless a panic is already stored (the first one wins; later ones are
    /// dropped). Any thread; the store is published by the caller's later release (a counter
    /// decrement).
    pub(crate) fn store(&self, payload: Payload) {
        let boxed = Box::into_raw(Box::new(payload));
        if self
            .0
            .compare_exchange(
                std::ptr::null_mut(),
                boxed,
                Ordering::AcqRel,
                Ordering::Relaxed,
            )
            .is_err()
        {
            // SAFETY: `boxed` came from `Box::into_raw` above and was not shared.
            drop_payload(*unsafe { Box::from_raw(boxed) });
        }
    }

    /// Takes the stored panic, if any.
    #[inline]
    pub(crate) fn take(&self) -> Option<Payload> {
        if self.0.load(Ordering::Relaxed).is_null() {
            return None;
        }
        let p = self.0.swap(std::ptr::null_mut(), Ordering::AcqRel);
        // SAFETY: a non-null pointer in the slot came from `Box::into_raw` in `store`, and the
        // swap gave it to us alone.
        (!p.is_null()).then(|| *unsafe { Box::from_raw(p) })
    }
}

/// The end of a scope injected into a pool by a thread outside it (`crate::scope`): set by
/// the worker that ran the scope, waited for by the injecting thread. It is shared through an
/// `Arc`, so that the setter never touches memory the waiter may free as soon as it sees the
/// latch set (a latch on the waiter's stack would be, for the instant between the mutex's
/// release and the setter's return).
pub(crate) struct InjectLatch {
    latch: BlockingLatch,
    /// When the waiter is a worker of another pool (it keeps running that pool's tasks while
    /// it waits, and may sleep there): how to wake it.
    worker: Option<(std::sync::Arc<crate::runtime::Registry>, usize)>,
}

impl InjectLatch {
    /// A latch for a thread that blocks until it is set.
    pub(crate) fn for_thread() -> Self {
        Self::new(None)
    }

    /// A latch for worker `index` of `registry`, which waits by running its own pool's tasks.
    pub(crate) fn for_worker(
        registry: std::sync::Arc<crate::runtime::Registry>,
        index: usize,
    ) -> Self {
        Self::new(Some((registry, index)))
    }

    fn new(worker: Option<(std::sync::Arc<crate::runtime::Registry>, usize)>) -> Self {
        InjectLatch {
            latch: BlockingLatch::new(),
            worker,
        }
    }

    pub(crate) fn is_set(&self) -> bool {
        self.latch.is_set()
    }

    pub(crate) fn set(&self) {
        // The latch's store and fence precede the sleep protocol's fence in
        // `Sleep::new_work_for`, which orders them with a sleeping waiter's last check.
        self.latch.set();
        if let Some((registry, index)) = &self.worker {
            registry.sleep.new_work_for(*index..index + 1);
        }
    }

    /// Spins, then yields, then blocks the calling thread until the latch is set (see
    /// [`BlockingLatch`]).
    pub(crate) fn wait_blocking(&self) {
        self.latch.wait();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn first_panic_wins() {
        let slot = PanicSlot::new();
        assert!(slot.take().is_none());
        slot.store(Box::new(1u32));
        slot.store(Box::new(2u32));
        let p = slot.take().expect("stored");
        assert_eq!(p.downcast_ref::<u32>(), Some(&1));
        assert!(slot.take().is_none());
    }
}
