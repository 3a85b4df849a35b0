//! An unbounded multi-producer multi-consumer FIFO queue: the per-NUMA-node task queue.
//!
//! The locality-aware scheduler *deals* a task to the queue of the node that holds its data,
//! from whichever thread creates it; the workers of that node pop from it, and workers of other
//! nodes steal from it once it holds more than a threshold of tasks (the paper's Algorithm 2,
//! which is why [`NodeQueue::len`] must be cheap).
//!
//! # Why lock-free, and which algorithm
//!
//! A `Mutex<VecDeque>` would serialise every producer and consumer of a node on one lock, and
//! a worker holding it when it is descheduled stalls the whole node. This is instead a
//! *segmented array queue*: a linked list of blocks of `B` slots, where producers and consumers
//! claim a slot by one CAS on a tail or head index and then write or read the slot without
//! further contention. It is the design of crossbeam-queue's `SegQueue` (after Vyukov's
//! bounded MPMC queue, extended with linked blocks), rewritten here against the
//! [`sync`](crate::sync) facade so that loom checks it, with a run-time block size so that
//! the loom tests can use blocks of 1 or 3 slots and reach every block transition.
//!
//! # State and invariants
//!
//! - `head.index` and `tail.index` encode a *position* shifted left by one; bit 0 of
//!   `head.index` is `HAS_NEXT`, set when the head block is known not to be the tail block (so
//!   a consumer need not look at the tail to know the queue is not empty).
//! - Positions are ever-increasing. Block `k` covers positions `k*L .. (k+1)*L` with
//!   `L = B + 1` a power of two; offset `B` (the last position of a lap) holds no slot. It is a
//!   *sentinel*: the thread that claims offset `B - 1` leaves the index at offset `B` while it
//!   installs the next block, and everyone else waits (briefly) for the index to move on. This
//!   way `index` and `block` change together as seen by anyone who claims a slot.
//! - A slot's `state` has bits `WRITTEN` (the producer stored the value), `READ` (the consumer
//!   moved it out) and `DESTROY` (the block is being freed and waits for this slot's reader).
//! - A block is freed exactly once, when every slot has been read: the reader of the last slot
//!   starts the destruction and walks the other slots; a slot whose reader is not done yet
//!   gets `DESTROY`, and that reader finishes the walk when it sets `READ`. The first block is
//!   allocated in [`NodeQueue::new`], so no path deals with a missing block.
//!
//! # Memory-ordering contract
//!
//! - Claiming (CAS on `tail.index` / `head.index`) is `SeqCst`, and a consumer's emptiness check
//!   is `fence(SeqCst)` then a load of `tail.index`: a consumer that claims position `p` knows a
//!   producer claimed `p` before.
//! - Producers publish a value with `state.fetch_or(WRITTEN, Release)`; the consumer waits for
//!   `WRITTEN` with `Acquire` before it reads the slot. So no read of a slot overlaps its write,
//!   and the value is visible.
//! - Installing a block: `tail.block.store(Release)` *before* `tail.index.store(Release)` moves
//!   the index off the sentinel (the same for `head`), and `next.store(Release)` publishes the
//!   block to the consumer that will move `head` onto it (`Acquire` in `wait_next`). A thread
//!   that loaded an index in block `k`'s range and then a block pointer dereferences the pointer
//!   only after its CAS on that index succeeded, which proves that the pointer is block `k`
//!   and that block `k` is alive (its claimed slot is not read yet).
//! - `READ` / `DESTROY` use `AcqRel` so the destroyer's free happens after every reader's move.
//!
//! Progress: a consumer that claimed a slot whose producer is descheduled between its claim and
//! its write spins until the write lands (the queue is lock-free for claims, blocking for that
//! one slot), and threads wait for a descheduled block installer. Both windows are a few
//! instructions long.
//!
//! # Example
//!
//! ```
//! use numatask_sched::__internals::NodeQueue;
//!
//! let queue = NodeQueue::new();
//! queue.push("a");
//! queue.push("b");
//! assert_eq!(queue.len(), 2);
//! assert_eq!(queue.pop(), Some("a"));
//! assert_eq!(queue.pop(), Some("b"));
//! assert_eq!(queue.pop(), None);
//! ```

use std::fmt;
use std::marker::PhantomData;
use std::mem::MaybeUninit;
use std::ptr;

use crate::sync::atomic::{AtomicPtr, AtomicUsize, Ordering, fence};
use crate::sync::{Backoff, CachePadded, UnsafeCell};

/// Slot state: the producer has written the value.
const WRITTEN: usize = 1;
/// Slot state: the consumer has moved the value out.
const READ: usize = 2;
/// Slot state: the block is being destroyed; this slot's reader must finish the job.
const DESTROY: usize = 4;

/// Low bits of an index that are not part of the position.
const SHIFT: u32 = 1;
/// Bit of `head.index`: the head block is not the last block.
const HAS_NEXT: usize = 1;

/// Slots per block used by [`NodeQueue::new`] (one lap of 32 positions).
pub const DEFAULT_BLOCK_CAPACITY: usize = 31;

struct Slot<T> {
    state: AtomicUsize,
    value: UnsafeCell<MaybeUninit<T>>,
}

struct Block<T> {
    next: AtomicPtr<Block<T>>,
    slots: Box<[Slot<T>]>,
    /// Loom builds only: set when the block is retired. Every thread reads it after its last
    /// use of the block, so a use that is not ordered before the retirement is a loom
    /// causality violation, and one ordered after it fails the assertion in `check_alive`.
    #[cfg(loom)]
    retired: UnsafeCell<bool>,
}

impl<T> Block<T> {
    fn new(capacity: usize) -> *mut Block<T> {
        let slots = (0..capacity)
            .map(|_| Slot {
                state: AtomicUsize::new(0),
                value: UnsafeCell::new(MaybeUninit::uninit()),
            })
            .collect();
        Box::into_raw(Box::new(Block {
            next: AtomicPtr::new(ptr::null_mut()),
            slots,
            #[cfg(loom)]
            retired: UnsafeCell::new(false),
        }))
    }

    /// In loom builds, fails if the block was already retired (see `retired`); a no-op
    /// otherwise.
    #[inline(always)]
    fn check_alive(&self) {
        #[cfg(loom)]
        // SAFETY: loom checks this read against the retiring write.
        self.retired
            .with(|p| assert!(!unsafe { *p }, "NodeQueue block used after it was freed"));
    }

    /// Waits until the producer that filled this block links its successor.
    fn wait_next(&self) -> *mut Block<T> {
        let backoff = Backoff::new();
        loop {
            let next = self.next.load(Ordering::Acquire);
            if !next.is_null() {
                return next;
            }
            backoff.snooze();
        }
    }

    /// Continues destroying `this` from slot `start`: frees it if every slot from `start` on
    /// (except the last, whose reader started the destruction) has been read, and otherwise
    /// leaves `DESTROY` in the first unread slot, whose reader calls this again.
    ///
    /// # Safety
    ///
    /// `this` is a live block whose last slot has been read, and the caller is the only thread
    /// destroying it (the last slot's reader, or the reader that found `DESTROY`).
    unsafe fn destroy(this: *mut Block<T>, start: usize, free: impl FnOnce(*mut Block<T>)) {
        // SAFETY: the block is alive until we free it below; only we may free it.
        let block = unsafe { &*this };
        let last = block.slots.len() - 1;
        for slot in &block.slots[start..last] {
            if slot.state.load(Ordering::Acquire) & READ == 0
                && slot.state.fetch_or(DESTROY, Ordering::AcqRel) & READ == 0
            {
                // That slot's reader is still busy; it sees `DESTROY` and takes over.
                return;
            }
        }
        // Every slot has been read and no thread holds a reference into the block: claims
        // of its positions are over (its last slot was claimed), and `head.block` /
        // `tail.block` moved on before that last slot's reader got here.
        free(this);
    }
}

/// A retired block waiting in the loom-only graveyard.
#[cfg(loom)]
struct Retired<T>(*mut Block<T>);

// SAFETY: a retired block is only freed, by the queue's `Drop`.
#[cfg(loom)]
unsafe impl<T> Send for Retired<T> {}

/// A position (`index`) and the block that holds it.
struct End<T> {
    index: AtomicUsize,
    block: AtomicPtr<Block<T>>,
}

/// An unbounded lock-free multi-producer multi-consumer FIFO queue (see the module docs).
pub struct NodeQueue<T> {
    head: CachePadded<End<T>>,
    tail: CachePadded<End<T>>,
    /// Loom builds only: retired blocks, freed when the queue is dropped, so that a use after
    /// retirement is caught by `Block::check_alive` instead of touching freed memory. A std
    /// mutex, invisible to loom, so it adds no synchronisation to the model.
    #[cfg(loom)]
    graveyard: std::sync::Mutex<Vec<Retired<T>>>,
    /// Slots per block, `B`.
    block_capacity: usize,
    /// `log2(B + 1)`: positions per block (a lap), as a shift.
    lap_shift: u32,
    _owns: PhantomData<T>,
}

// SAFETY: values move between threads (hence `T: Send`); every slot access is exclusive by
// the claim protocol in the module docs.
unsafe impl<T: Send> Send for NodeQueue<T> {}
// SAFETY: as above: shared access goes through atomics and the claim protocol.
unsafe impl<T: Send> Sync for NodeQueue<T> {}

impl<T> Default for NodeQueue<T> {
    fn default() -> Self {
        Self::new()
    }
}

impl<T> NodeQueue<T> {
    /// An empty queue with blocks of [`DEFAULT_BLOCK_CAPACITY`] slots.
    pub fn new() -> Self {
        Self::with_block_capacity(DEFAULT_BLOCK_CAPACITY)
    }

    /// An empty queue whose blocks hold `block_capacity + 1` rounded up to a power of two,
    /// minus one, slots (so 1, 3, 7, 15, 31, ...; at least 1, at most 2^20 - 1). Small blocks
    /// exist for the loom tests, which need block transitions after a few items.
    pub fn with_block_capacity(block_capacity: usize) -> Self {
        let lap = (block_capacity.clamp(1, (1 << 20) - 1) + 1).next_power_of_two();
        let block_capacity = lap - 1;
        let first = Block::new(block_capacity);
        NodeQueue {
            head: CachePadded::new(End {
                index: AtomicUsize::new(0),
                block: AtomicPtr::new(first),
            }),
            tail: CachePadded::new(End {
                index: AtomicUsize::new(0),
                block: AtomicPtr::new(first),
            }),
            #[cfg(loom)]
            graveyard: std::sync::Mutex::new(Vec::new()),
            block_capacity,
            lap_shift: lap.trailing_zeros(),
            _owns: PhantomData,
        }
    }

    /// Frees a block whose slots have all been read.
    fn free_block(&self, block: *mut Block<T>) {
        #[cfg(not(loom))]
        // SAFETY: `block` came from `Block::new` and nothing refers to it any more
        // (`Block::destroy`'s contract).
        drop(unsafe { Box::from_raw(block) });
        #[cfg(loom)]
        {
            // SAFETY: `block` is not freed yet (it goes to the graveyard).
            unsafe { &*block }
                .retired
                .with_mut(|p| unsafe { *p = true });
            self.graveyard
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .push(Retired(block));
        }
    }

    /// Slots per block.
    pub fn block_capacity(&self) -> usize {
        self.block_capacity
    }

    #[inline]
    fn offset(&self, index: usize) -> usize {
        (index >> SHIFT) & ((1 << self.lap_shift) - 1)
    }

    #[inline]
    fn lap(&self, index: usize) -> usize {
        (index >> SHIFT) >> self.lap_shift
    }

    /// Appends `value` at the tail.
    pub fn push(&self, value: T) {
        let backoff = Backoff::new();
        let mut spare: *mut Block<T> = ptr::null_mut();
        loop {
            let tail = self.tail.index.load(Ordering::Acquire);
            let block = self.tail.block.load(Ordering::Acquire);
            let offset = self.offset(tail);
            if offset == self.block_capacity {
                // Another producer is installing the next block.
                backoff.snooze();
                continue;
            }
            let fills_block = offset + 1 == self.block_capacity;
            if fills_block && spare.is_null() {
                // Allocate before claiming, so others wait on the sentinel as briefly as
                // possible.
                spare = Block::new(self.block_capacity);
            }
            let new_tail = tail.wrapping_add(1 << SHIFT);
            if self
                .tail
                .index
                .compare_exchange(tail, new_tail, Ordering::SeqCst, Ordering::Relaxed)
                .is_err()
            {
                backoff.spin();
                continue;
            }
            // SAFETY: our CAS claimed position `tail`, so `block` is the block holding it (a
            // pointer to a later block would have come with a changed index, failing the
            // CAS), and the block is alive because our slot in it is not read yet.
            let block = unsafe { &*block };
            block.check_alive();
            if fills_block {
                let next = std::mem::replace(&mut spare, ptr::null_mut());
                self.tail.block.store(next, Ordering::Release);
                self.tail
                    .index
                    .store(new_tail.wrapping_add(1 << SHIFT), Ordering::Release);
                block.next.store(next, Ordering::Release);
            }
            let slot = &block.slots[offset];
            // SAFETY: the slot is ours alone until `WRITTEN` is set: its consumer waits for
            // that bit before reading.
            slot.value
                .with_mut(|p| unsafe { p.write(MaybeUninit::new(value)) });
            slot.state.fetch_or(WRITTEN, Ordering::Release);
            break;
        }
        if !spare.is_null() {
            // Another producer installed the block we prepared for.
            // SAFETY: `spare` came from `Block::new` and was never shared.
            drop(unsafe { Box::from_raw(spare) });
        }
    }

    /// Removes the value at the head, or returns `None` if the queue is empty.
    pub fn pop(&self) -> Option<T> {
        let backoff = Backoff::new();
        loop {
            let head = self.head.index.load(Ordering::Acquire);
            let block = self.head.block.load(Ordering::Acquire);
            let offset = self.offset(head);
            if offset == self.block_capacity {
                // Another consumer is moving the head to the next block.
                backoff.snooze();
                continue;
            }
            let mut new_head = head.wrapping_add(1 << SHIFT);
            if head & HAS_NEXT == 0 {
                fence(Ordering::SeqCst);
                let tail = self.tail.index.load(Ordering::Relaxed);
                if head >> SHIFT == tail >> SHIFT {
                    return None;
                }
                if self.lap(head) != self.lap(tail) {
                    new_head |= HAS_NEXT;
                }
            }
            if self
                .head
                .index
                .compare_exchange(head, new_head, Ordering::SeqCst, Ordering::Relaxed)
                .is_err()
            {
                backoff.spin();
                continue;
            }
            // SAFETY: our CAS claimed position `head`, so `block` holds it and is alive (our
            // slot is not read yet); see `push`.
            let block_ref = unsafe { &*block };
            block_ref.check_alive();
            let is_last = offset + 1 == self.block_capacity;
            if is_last {
                let next = block_ref.wait_next();
                let mut next_index = (new_head & !HAS_NEXT).wrapping_add(1 << SHIFT);
                // SAFETY: `next` is alive: none of its slots can be read before we move
                // `head` onto it below.
                let next_ref = unsafe { &*next };
                next_ref.check_alive();
                if !next_ref.next.load(Ordering::Relaxed).is_null() {
                    next_index |= HAS_NEXT;
                }
                self.head.block.store(next, Ordering::Release);
                self.head.index.store(next_index, Ordering::Release);
            }
            let slot = &block_ref.slots[offset];
            while slot.state.load(Ordering::Acquire) & WRITTEN == 0 {
                backoff.snooze();
            }
            // SAFETY: we claimed this slot, and `WRITTEN` (acquired above) says the value is
            // initialised and visible; it is read once.
            let value = slot.value.with(|p| unsafe { (*p).assume_init_read() });
            block_ref.check_alive();
            let free = |b| self.free_block(b);
            if is_last {
                // SAFETY: we read the last slot, so we start the destruction.
                unsafe { Block::destroy(block, 0, free) };
            } else if slot.state.fetch_or(READ, Ordering::AcqRel) & DESTROY != 0 {
                // SAFETY: the destroyer left the job to us, and we are done with our slot.
                unsafe { Block::destroy(block, offset + 1, free) };
            }
            return Some(value);
        }
    }

    /// Number of values in the queue: two loads, no write. Under concurrent use it is a
    /// snapshot that may be stale by the time it is used (positions claimed by producers that
    /// have not yet written count as present; claimed by consumers, as gone).
    pub fn len(&self) -> usize {
        // Load `head` first: `tail >= head` at every instant, and both only grow, so the
        // later `tail` is at least this `head` and the difference is not negative.
        let head = self.head.index.load(Ordering::Acquire);
        let tail = self.tail.index.load(Ordering::Acquire);
        self.count_before(tail)
            .saturating_sub(self.count_before(head))
    }

    /// Whether [`len`](Self::len) is zero.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Number of slots before `index`'s position, not counting sentinels: each full lap has
    /// `B = L - 1` slots, and an offset within a lap is at most `B`.
    #[inline]
    fn count_before(&self, index: usize) -> usize {
        let position = index >> SHIFT;
        position - (position >> self.lap_shift)
    }
}

impl<T> Drop for NodeQueue<T> {
    fn drop(&mut self) {
        let mut head = self.head.index.load(Ordering::Relaxed) & !HAS_NEXT;
        let tail = self.tail.index.load(Ordering::Relaxed) & !HAS_NEXT;
        let mut block = self.head.block.load(Ordering::Relaxed);
        while head != tail {
            let offset = self.offset(head);
            if offset < self.block_capacity {
                // SAFETY: `&mut self`: no other thread uses the queue, every position in
                // `head..tail` holds a written, unread value, and `block` holds `head`.
                let slot = unsafe { &(*block).slots[offset] };
                slot.value.with_mut(|p| unsafe { (*p).assume_init_drop() });
            } else {
                // SAFETY: at the sentinel, `block` is fully read; its successor exists
                // because `tail` is past it.
                let next = unsafe { (*block).next.load(Ordering::Relaxed) };
                // SAFETY: `block` came from `Block::new` and nothing refers to it any more.
                drop(unsafe { Box::from_raw(block) });
                block = next;
            }
            head = head.wrapping_add(1 << SHIFT);
        }
        // SAFETY: the block holding `tail` is the last one left.
        drop(unsafe { Box::from_raw(block) });
        #[cfg(loom)]
        for Retired(block) in self
            .graveyard
            .get_mut()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .drain(..)
        {
            // SAFETY: retired blocks are only freed here, once.
            drop(unsafe { Box::from_raw(block) });
        }
    }
}

impl<T> fmt::Debug for NodeQueue<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("NodeQueue")
            .field("len", &self.len())
            .field("block_capacity", &self.block_capacity)
            .finish()
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use std::sync::Arc;

    #[test]
    fn values_come_out_in_push_order() {
        let q = NodeQueue::with_block_capacity(3);
        assert!(q.is_empty());
        for i in 0..20 {
            q.push(i);
            assert_eq!(q.len(), i + 1);
        }
        for i in 0..20 {
            assert_eq!(q.pop(), Some(i));
            assert_eq!(q.len(), 19 - i);
        }
        assert_eq!(q.pop(), None);
    }

    #[test]
    fn block_capacity_is_one_less_than_a_power_of_two() {
        assert_eq!(NodeQueue::<u8>::with_block_capacity(0).block_capacity(), 1);
        assert_eq!(NodeQueue::<u8>::with_block_capacity(4).block_capacity(), 7);
        assert_eq!(NodeQueue::<u8>::new().block_capacity(), 31);
    }

    #[test]
    fn interleaved_push_pop_crosses_blocks() {
        let q = NodeQueue::with_block_capacity(1);
        for i in 0..100 {
            q.push(2 * i);
            q.push(2 * i + 1);
            assert_eq!(q.pop(), Some(i));
        }
        assert_eq!(q.len(), 100);
        for i in 100..200 {
            assert_eq!(q.pop(), Some(i));
        }
        assert!(q.is_empty());
    }

    #[test]
    fn drop_frees_values_left_in_the_queue() {
        let marker = Arc::new(());
        let q = NodeQueue::with_block_capacity(3);
        for _ in 0..10 {
            q.push(Arc::clone(&marker));
        }
        drop(q.pop());
        assert_eq!(Arc::strong_count(&marker), 10);
        drop(q);
        assert_eq!(Arc::strong_count(&marker), 1);
    }

    #[test]
    fn concurrent_producers_and_consumers_lose_and_duplicate_nothing() {
        const PRODUCERS: usize = 3;
        const CONSUMERS: usize = 3;
        const PER_PRODUCER: usize = if cfg!(miri) { 500 } else { 50_000 };
        let q = Arc::new(NodeQueue::with_block_capacity(7));
        let producers: Vec<_> = (0..PRODUCERS)
            .map(|p| {
                let q = Arc::clone(&q);
                std::thread::spawn(move || {
                    for i in 0..PER_PRODUCER {
                        q.push((p, i));
                    }
                })
            })
            .collect();
        let consumers: Vec<_> = (0..CONSUMERS)
            .map(|_| {
                let q = Arc::clone(&q);
                std::thread::spawn(move || {
                    let mut got = Vec::new();
                    let mut idle = 0u32;
                    // Stop after the queue has stayed empty for a while; the main thread
                    // drains what is left after the producers finish.
                    while idle < 10_000 {
                        match q.pop() {
                            Some(v) => {
                                got.push(v);
                                idle = 0;
                            }
                            None => {
                                idle += 1;
                                std::thread::yield_now();
                            }
                        }
                    }
                    got
                })
            })
            .collect();
        for p in producers {
            p.join().unwrap();
        }
        let mut per_consumer: Vec<Vec<(usize, usize)>> =
            consumers.into_iter().map(|c| c.join().unwrap()).collect();
        per_consumer.push(std::iter::from_fn(|| q.pop()).collect());
        let mut seen = vec![vec![false; PER_PRODUCER]; PRODUCERS];
        for got in &per_consumer {
            let mut last = [None::<usize>; PRODUCERS];
            for &(p, i) in got {
                assert!(!seen[p][i], "({p}, {i}) popped twice");
                seen[p][i] = true;
                assert!(last[p] < Some(i), "producer {p}'s values out of order");
                last[p] = Some(i);
            }
        }
        assert!(seen.iter().flatten().all(|&s| s), "a value was lost");
        assert!(q.is_empty());
    }
}
