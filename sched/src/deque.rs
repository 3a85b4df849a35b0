//! A bounded Chase-Lev work-stealing deque.
//!
//! The algorithm is Chase and Lev's ("Dynamic circular work-stealing deque", SPAA 2005) with
//! the C11 memory orderings proven correct by Lê, Pop, Cohen and Zappa Nardelli ("Correct and
//! efficient work-stealing for weak memory models", PPoPP 2013). Two changes, both for the
//! bounded ring buffer this runtime uses:
//!
//! 1. **No growth.** The buffer has a fixed power-of-two capacity. When it is full,
//!    [`Worker::push`] hands the item back and the runtime runs the task inline, which is
//!    what OpenMP runtimes do with a full task queue (it also bounds memory use).
//! 2. **Thieves claim before they read.** The published algorithm reads `buffer[top]` and then
//!    CASes `top`; if the CAS fails, the value read is discarded. In a ring buffer the owner may
//!    overwrite that slot meanwhile, which is a data race on a non-atomic value (undefined
//!    behaviour in Rust, and flagged by loom). Here a thief first claims index `t` by the CAS
//!    on `top`, then moves the item out, then marks the slot free. The owner only writes a
//!    slot that is marked free. Claiming first changes nothing in how an index is given to
//!    exactly one taker (the CAS on `top` decides, as in the paper); it only moves the read
//!    after the decision.
//!
//! # State and invariants
//!
//! - `top` (thieves' end, also called front) and `bottom` (owner's end) are ever-increasing
//!   indices (wrapping `usize`); the live items are the indices `top..bottom`, and index `i`
//!   lives in slot `i & mask`.
//! - `bottom` is written only by the owner. `top` is only incremented, always by a CAS
//!   (thieves, and the owner when it takes the last item).
//! - Each slot has a `free` flag. The owner sets it to `false` when it writes an item, and
//!   whoever takes the item sets it back to `true` *after* moving the item out. The owner
//!   writes a slot only when it reads `free == true`, so no writer ever overlaps a reader of
//!   the same slot. A free slot at `bottom & mask` also proves the deque is not full: if
//!   `bottom - top == capacity`, index `bottom - capacity` would be live and its slot taken.
//!
//! # Memory-ordering contract
//!
//! - **push** (owner): `free.load(Acquire)` — if a thief freed the slot, this synchronises
//!   with its `Release` store, so the thief's read of the old item happens before our write;
//!   write the item; `bottom.store(b + 1, Release)` publishes the item to thieves.
//! - **pop** (owner): `bottom.store(b - 1, Release)`, then `fence(SeqCst)`, then
//!   `top.load(Relaxed)`. The fence pairs with the thief's fence: either the thief sees the
//!   decremented `bottom`, or the owner sees the thief's incremented `top` (store-load order,
//!   which needs `SeqCst`). When one item is left (`top == b`), owner and thieves race with a
//!   `SeqCst` CAS on `top` and exactly one wins; the owner then restores `bottom` (`Release`).
//! - **Every** store of `bottom` is `Release`, not only push's. The paper makes pop's stores
//!   relaxed because its buffer cells are relaxed atomics; here they are plain memory, so a
//!   thief whose `Acquire` load of `bottom` reads a value stored by pop must still
//!   synchronise with the owner, or its read of an item the owner pushed earlier would race
//!   with that push. (Loom finds that race with 3 preemptions when pop's stores are
//!   relaxed.) On x86 a release store is a plain `mov`; on ARM an `stlr`, next to pop's fence.
//! - **steal** (thief): `top.load(Acquire)`, `fence(SeqCst)`, `bottom.load(Acquire)`. The
//!   `Acquire` on `bottom` synchronises with the owner's last `Release` store of it, so the
//!   item is visible; the CAS on `top` (`SeqCst`) claims index `top`; after moving the item
//!   out the thief does `free.store(true, Release)` for the owner's next push into that slot.
//! - The owner's fast paths touch only `bottom` (its own cache line) and the slot; `top` is
//!   read in pop and never written by the owner except to take the last item.
//!
//! A consequence of rule 2: if a thief is descheduled between claiming an item and moving it
//! out, the owner sees that slot as occupied and `push` may report the deque full although
//! `len() < capacity()`. The runtime then runs the task inline, which is always correct.
//!
//! # Example
//!
//! ```
//! use numatask_sched::__internals::{deque, Steal};
//!
//! let (worker, stealer) = deque::<u32>(4);
//! for i in 0..4 {
//!     worker.push(i).expect("room for four items");
//! }
//! assert_eq!(worker.push(99), Err(99)); // full: the caller runs it inline
//! assert_eq!(worker.pop(), Some(3)); // the owner works LIFO
//! assert_eq!(stealer.steal(), Steal::Success(0)); // thieves take FIFO
//! assert_eq!(worker.len(), 2);
//! ```

use std::cell::Cell;
use std::fmt;
use std::marker::PhantomData;
use std::mem::MaybeUninit;

use crate::sync::atomic::{AtomicBool, AtomicUsize, Ordering, fence};
use crate::sync::{Arc, CachePadded, UnsafeCell, prefetch_write};

/// The largest capacity [`deque`] allocates; larger requests are clamped to it.
pub const MAX_CAPACITY: usize = 1 << 30;

/// One cell of the ring buffer.
struct Slot<T> {
    /// `true` when no item lives here and no thief is still moving one out.
    free: AtomicBool,
    value: UnsafeCell<MaybeUninit<T>>,
}

/// State shared by the [`Worker`] and its [`Stealer`]s.
struct Inner<T> {
    /// Index of the oldest item; thieves take from here.
    top: CachePadded<AtomicUsize>,
    /// One past the newest item; only the owner writes it.
    bottom: CachePadded<AtomicUsize>,
    buffer: Box<[Slot<T>]>,
    mask: usize,
}

// SAFETY: items are moved between threads (hence `T: Send`), and every access to a slot's
// contents is exclusive by the protocol in the module docs: the owner writes a slot only when
// it is free, and each index is taken by exactly one thread (the CAS on `top`, or the owner
// alone when `top < index`).
unsafe impl<T: Send> Send for Inner<T> {}
// SAFETY: as above; shared access goes through atomics and the claim protocol.
unsafe impl<T: Send> Sync for Inner<T> {}

impl<T> Inner<T> {
    #[inline]
    fn slot(&self, index: usize) -> &Slot<T> {
        debug_assert_eq!(self.buffer.len(), self.mask + 1);
        // SAFETY: `index & mask <= mask < buffer.len()`: the buffer's length is `mask + 1`,
        // both set once when the deque is made (the compiler does not see it, and kept two
        // bound checks per push and per pop).
        unsafe { self.buffer.get_unchecked(index & self.mask) }
    }

    #[inline]
    fn len(&self) -> usize {
        let top = self.top.load(Ordering::Relaxed);
        let bottom = self.bottom.load(Ordering::Relaxed);
        let len = bottom.wrapping_sub(top) as isize;
        // A transiently negative value appears while the owner pops the last item.
        len.clamp(0, self.buffer.len() as isize) as usize
    }
}

impl<T> Drop for Inner<T> {
    fn drop(&mut self) {
        let top = self.top.load(Ordering::Relaxed);
        let bottom = self.bottom.load(Ordering::Relaxed);
        let mut index = top;
        while bottom.wrapping_sub(index) as isize > 0 {
            let slot = self.slot(index);
            // SAFETY: `&mut self` means no worker or stealer is left, and the indices
            // `top..bottom` hold initialised items nobody took.
            slot.value.with_mut(|p| unsafe { (*p).assume_init_drop() });
            index = index.wrapping_add(1);
        }
    }
}

/// Creates a deque holding up to `capacity` items (rounded up to a power of two, at least 1,
/// at most `MAX_CAPACITY`), and returns its owner's handle and a thieves' handle.
pub fn deque<T: Send>(capacity: usize) -> (Worker<T>, Stealer<T>) {
    let capacity = rounded_capacity(capacity);
    let buffer = (0..capacity)
        .map(|_| Slot {
            free: AtomicBool::new(true),
            value: UnsafeCell::new(MaybeUninit::uninit()),
        })
        .collect();
    let inner = Arc::new(Inner {
        top: CachePadded::new(AtomicUsize::new(0)),
        bottom: CachePadded::new(AtomicUsize::new(0)),
        buffer,
        mask: capacity - 1,
    });
    let worker = Worker {
        inner: Arc::clone(&inner),
        _not_sync: PhantomData,
    };
    (worker, Stealer { inner })
}

/// `capacity` clamped to `1..=MAX_CAPACITY` and rounded up to a power of two.
fn rounded_capacity(capacity: usize) -> usize {
    capacity.clamp(1, MAX_CAPACITY).next_power_of_two()
}

/// The owner's end of a deque: pushes and pops at the bottom (LIFO).
///
/// `Send` (it can be handed to the thread that will own it) but not `Sync`: exactly one thread
/// pushes and pops.
pub struct Worker<T> {
    inner: Arc<Inner<T>>,
    /// `Cell<()>` is `Send + !Sync`, which is what the single-owner protocol needs.
    _not_sync: PhantomData<Cell<()>>,
}

impl<T: Send> Worker<T> {
    /// Pushes `item` at the bottom, or hands it back as `Err(item)` when the deque is full (see
    /// the module docs for the one case where "full" is reported early).
    #[inline]
    pub fn push(&self, item: T) -> Result<(), T> {
        let inner = &*self.inner;
        let bottom = inner.bottom.load(Ordering::Relaxed);
        let slot = inner.slot(bottom);
        if !slot.free.load(Ordering::Acquire) {
            return Err(item);
        }
        // SAFETY: the slot is free: its last item was taken and moved out, and the `Acquire`
        // load above ordered that move before this write. No thief reads this slot until
        // the `Release` store of `bottom` below publishes index `bottom`.
        slot.value
            .with_mut(|p| unsafe { p.write(MaybeUninit::new(item)) });
        slot.free.store(false, Ordering::Relaxed);
        inner
            .bottom
            .store(bottom.wrapping_add(1), Ordering::Release);
        // The next push's slot was last written by the thief that emptied it.
        prefetch_write(std::ptr::from_ref(inner.slot(bottom.wrapping_add(1))));
        Ok(())
    }

    /// Pops the most recently pushed item, if any.
    #[inline]
    pub fn pop(&self) -> Option<T> {
        let inner = &*self.inner;
        let bottom = inner.bottom.load(Ordering::Relaxed);
        // Cheap emptiness check: `top` only grows, so a stale `top >= bottom` is still empty.
        if bottom.wrapping_sub(inner.top.load(Ordering::Relaxed)) as isize <= 0 {
            return None;
        }
        let index = bottom.wrapping_sub(1);
        inner.bottom.store(index, Ordering::Release);
        fence(Ordering::SeqCst);
        let top = inner.top.load(Ordering::Relaxed);
        let remaining = index.wrapping_sub(top) as isize;
        if remaining < 0 {
            // Thieves took everything; restore `bottom` to `top`.
            inner.bottom.store(bottom, Ordering::Release);
            return None;
        }
        if remaining == 0 {
            // The last item: race the thieves for it.
            let won = inner
                .top
                .compare_exchange(
                    top,
                    top.wrapping_add(1),
                    Ordering::SeqCst,
                    Ordering::Relaxed,
                )
                .is_ok();
            inner.bottom.store(bottom, Ordering::Release);
            if !won {
                return None;
            }
        }
        // SAFETY: index `index` was taken by the owner alone: either `top < index`, so no
        // thief can claim it (see the fence argument in the module docs), or the CAS on `top`
        // above gave it to us. It holds an initialised item, written by this thread.
        Some(unsafe { take(inner.slot(index)) })
    }

    /// Approximate number of items (exact when no thief is active).
    #[inline]
    pub fn len(&self) -> usize {
        self.inner.len()
    }

    /// Whether [`len`](Self::len) is zero.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The fixed capacity (a power of two).
    #[inline]
    pub fn capacity(&self) -> usize {
        self.inner.buffer.len()
    }

    /// Another thieves' handle to this deque.
    pub fn stealer(&self) -> Stealer<T> {
        Stealer {
            inner: Arc::clone(&self.inner),
        }
    }
}

/// Moves the item out of `slot` and marks the slot free.
///
/// # Safety
///
/// The caller must have taken the index that lives in `slot` (so no other thread reads or
/// writes the slot until it is marked free), and the item must be initialised and visible to
/// this thread.
#[inline]
unsafe fn take<T>(slot: &Slot<T>) -> T {
    // SAFETY: by the caller's promise, the slot holds an initialised item that only we may
    // read; it is read exactly once, and the slot is marked free only afterwards.
    let item = slot.value.with(|p| unsafe { (*p).assume_init_read() });
    slot.free.store(true, Ordering::Release);
    item
}

impl<T> fmt::Debug for Worker<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Worker")
            .field("len", &self.inner.len())
            .field("capacity", &self.inner.buffer.len())
            .finish()
    }
}

/// The outcome of [`Stealer::steal`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[must_use]
pub enum Steal<T> {
    /// The deque was empty.
    Empty,
    /// An item was stolen.
    Success(T),
    /// Another thread took the item this thief was after; trying again may succeed.
    Retry,
}

impl<T> Steal<T> {
    /// The stolen item, if any.
    pub fn success(self) -> Option<T> {
        match self {
            Steal::Success(item) => Some(item),
            Steal::Empty | Steal::Retry => None,
        }
    }

    /// Whether this is [`Steal::Empty`].
    pub fn is_empty(&self) -> bool {
        matches!(self, Steal::Empty)
    }

    /// Whether this is [`Steal::Retry`].
    pub fn is_retry(&self) -> bool {
        matches!(self, Steal::Retry)
    }
}

/// A thieves' handle: takes the oldest item (FIFO). Cheap to clone, `Send + Sync`.
pub struct Stealer<T> {
    inner: Arc<Inner<T>>,
}

impl<T: Send> Stealer<T> {
    /// Tries to take the oldest item.
    pub fn steal(&self) -> Steal<T> {
        let inner = &*self.inner;
        let top = inner.top.load(Ordering::Acquire);
        fence(Ordering::SeqCst);
        let bottom = inner.bottom.load(Ordering::Acquire);
        if bottom.wrapping_sub(top) as isize <= 0 {
            return Steal::Empty;
        }
        if inner
            .top
            .compare_exchange(
                top,
                top.wrapping_add(1),
                Ordering::SeqCst,
                Ordering::Relaxed,
            )
            .is_err()
        {
            return Steal::Retry;
        }
        // SAFETY: the CAS gave index `top` to this thread alone; the item was published by
        // the owner's `Release` store of a `bottom > top` that our `Acquire` load read (or a
        // later store), and the owner does not overwrite the slot before we mark it free.
        Steal::Success(unsafe { take(inner.slot(top)) })
    }

    /// Approximate number of items.
    #[inline]
    pub fn len(&self) -> usize {
        self.inner.len()
    }

    /// Whether [`len`](Self::len) is zero.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The fixed capacity (a power of two).
    #[inline]
    pub fn capacity(&self) -> usize {
        self.inner.buffer.len()
    }
}

impl<T> Clone for Stealer<T> {
    fn clone(&self) -> Self {
        Stealer {
            inner: Arc::clone(&self.inner),
        }
    }
}

impl<T> fmt::Debug for Stealer<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Stealer")
            .field("len", &self.inner.len())
            .field("capacity", &self.inner.buffer.len())
            .finish()
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use std::collections::HashSet;
    use std::sync::Mutex as StdMutex;
    use std::sync::atomic::AtomicBool as StdAtomicBool;

    #[test]
    fn owner_pops_lifo_and_thieves_steal_fifo() {
        let (w, s) = deque(8);
        for i in 0..5 {
            assert!(w.push(i).is_ok());
        }
        assert_eq!(w.len(), 5);
        assert_eq!(s.steal(), Steal::Success(0));
        assert_eq!(s.steal(), Steal::Success(1));
        assert_eq!(w.pop(), Some(4));
        assert_eq!(w.pop(), Some(3));
        assert_eq!(w.pop(), Some(2));
        assert_eq!(w.pop(), None);
        assert_eq!(s.steal(), Steal::Empty);
        assert!(w.is_empty() && s.is_empty());
    }

    #[test]
    fn capacity_is_rounded_to_a_power_of_two() {
        assert_eq!(deque::<u8>(0).0.capacity(), 1);
        assert_eq!(deque::<u8>(5).0.capacity(), 8);
        assert_eq!(deque::<u8>(64).1.capacity(), 64);
        assert_eq!(rounded_capacity(MAX_CAPACITY - 1), MAX_CAPACITY);
        assert_eq!(rounded_capacity(usize::MAX), MAX_CAPACITY);
    }

    #[test]
    fn full_deque_hands_the_item_back() {
        let (w, s) = deque(2);
        assert_eq!(w.push(1), Ok(()));
        assert_eq!(w.push(2), Ok(()));
        assert_eq!(w.push(3), Err(3));
        assert_eq!(s.steal(), Steal::Success(1));
        assert_eq!(w.push(3), Ok(()));
        assert_eq!(w.push(4), Err(4));
        assert_eq!(w.pop(), Some(3));
        assert_eq!(w.pop(), Some(2));
        assert_eq!(w.pop(), None);
    }

    #[test]
    fn indices_wrap_around_the_ring_many_times() {
        let (w, s) = deque(4);
        for round in 0..1000u32 {
            w.push(round).unwrap();
            w.push(round + 1).unwrap();
            assert_eq!(s.steal(), Steal::Success(round));
            assert_eq!(w.pop(), Some(round + 1));
        }
        assert!(w.is_empty());
    }

    #[test]
    fn drop_frees_items_left_in_the_deque() {
        let marker = std::sync::Arc::new(());
        let (w, s) = deque(8);
        for _ in 0..6 {
            w.push(std::sync::Arc::clone(&marker)).unwrap();
        }
        drop(s.steal());
        drop(w.pop());
        assert_eq!(std::sync::Arc::strong_count(&marker), 5);
        drop(w);
        drop(s);
        assert_eq!(std::sync::Arc::strong_count(&marker), 1);
    }

    #[test]
    fn every_item_is_taken_exactly_once_under_contention() {
        const ITEMS: usize = if cfg!(miri) { 2_000 } else { 200_000 };
        const THIEVES: usize = 3;
        let (w, s) = deque::<usize>(64);
        let done = std::sync::Arc::new(StdAtomicBool::new(false));
        let taken = std::sync::Arc::new(StdMutex::new(Vec::new()));
        let thieves: Vec<_> = (0..THIEVES)
            .map(|_| {
                let s = s.clone();
                let done = std::sync::Arc::clone(&done);
                let taken = std::sync::Arc::clone(&taken);
                std::thread::spawn(move || {
                    let mut mine = Vec::new();
                    loop {
                        match s.steal() {
                            Steal::Success(i) => mine.push(i),
                            Steal::Retry => {}
                            Steal::Empty if done.load(Ordering::Acquire) => break,
                            Steal::Empty => std::thread::yield_now(),
                        }
                    }
                    taken.lock().unwrap().extend(mine);
                })
            })
            .collect();
        let mut mine = Vec::new();
        for i in 0..ITEMS {
            if let Err(i) = w.push(i) {
                // Full: "run it inline".
                mine.push(i);
            }
            if i % 3 == 0 {
                mine.extend(w.pop());
            }
        }
        while let Some(i) = w.pop() {
            mine.push(i);
        }
        done.store(true, Ordering::Release);
        for t in thieves {
            t.join().unwrap();
        }
        let mut all = taken.lock().unwrap().clone();
        all.extend(mine);
        assert_eq!(all.len(), ITEMS, "items lost or duplicated");
        let distinct: HashSet<_> = all.iter().copied().collect();
        assert_eq!(distinct.len(), ITEMS, "an item was taken twice");
    }
}
