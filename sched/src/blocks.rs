//! Caches of free memory blocks in a few size classes, for the runtime's short-lived objects
//! that one thread allocates and another frees: task frames (each worker's [`BlockCache`])
//! and dependence-tracker nodes (a cache per thread, [`alloc_block`] / [`free_block`]).
//!
//! Every block is a global-allocator block of its class's layout, so a block may go into any
//! thread's cache, or back to the allocator from any thread. A cache that overflows hands a
//! batch of blocks to a shared pool; one that runs dry takes a batch from there before it asks
//! the allocator. This is what producer-consumer programs need (one task creates, the other
//! workers run and free): without it glibc's allocator serializes every cross-thread free on
//! the producer's arena lock, and the producer's allocations wait for them.

use std::alloc::{self, Layout};
use std::cell::Cell;
use std::ptr::{self, NonNull};

use crate::sync::prefetch_write;

/// Block sizes of the frame cache; every block is aligned to [`CLASS_ALIGN`]. (A dependence
/// node is 176 bytes on 64-bit targets: the 192-byte class.)
const CLASS_SIZES: [usize; 4] = [128, 192, 256, 512];
const CLASS_ALIGN: usize = 64;
/// Blocks a thread keeps per size class (at most 1088 KiB per thread).
const CACHE_LIMIT: u32 = 1024;
/// Blocks a worker hands to the shared pool, or takes from it, at once.
const BATCH: u32 = 256;
/// Bytes of free blocks the shared pool keeps per size class (256 MiB at most in all);
/// beyond, blocks go back to the allocator.
///
/// The pool fills up only after a program had that many task frames or dependence nodes
/// alive at once, and keeps that peak for the next task graph. A dependence tracker keeps the
/// nodes of the last tasks on each range until its scope ends (every one of the 151,340
/// tasks of SparseLU with 120 x 120 blocks, 28 MiB of nodes), and frees them all then: with
/// a pool of a few thousand blocks, the next graph's creating thread got most of its nodes
/// from glibc one by one, at about 600 cycles per task on the 32-core machine instead of
/// under 200; with 64Ki blocks, still more than half of them.
const SHARED_BYTES: usize = 64 << 20;

/// Batches the shared pool keeps of `class`.
const fn shared_limit(class: usize) -> usize {
    SHARED_BYTES / (BATCH as usize * CLASS_SIZES[class])
}

pub(crate) const fn class_layout(class: usize) -> Layout {
    match Layout::from_size_align(CLASS_SIZES[class], CLASS_ALIGN) {
        Ok(layout) => layout,
        Err(_) => panic!("frame cache classes are valid layouts"),
    }
}

/// The size class of frames of type `X`, or `None` if they go to the allocator directly.
pub(crate) const fn class_of<X>() -> Option<usize> {
    let (size, align) = (std::mem::size_of::<X>(), std::mem::align_of::<X>());
    let mut class = 0;
    while class < CLASS_SIZES.len() {
        if size <= CLASS_SIZES[class] && align <= CLASS_ALIGN {
            return Some(class);
        }
        class += 1;
    }
    None
}

/// A free block in a cache list.
struct FreeBlock {
    next: *mut FreeBlock,
}

/// A list of `len` free blocks of one class, linked through `FreeBlock::next`.
struct Batch {
    head: *mut FreeBlock,
    len: u32,
}

// SAFETY: the blocks of a batch are free memory owned by the batch alone.
unsafe impl Send for Batch {}

/// Full batches of free blocks per size class, handed over by workers whose caches
/// overflowed and taken by workers whose caches ran dry.
///
/// This is for producer-consumer programs (one task spawns, and the other workers run and
/// free: a master spawning dependent tasks): without it the consumers' caches overflow into
/// the global allocator and the producer allocates from it, and glibc's allocator then
/// serializes every cross-thread free on the producer's arena lock. A batch costs one lock
/// per `BATCH` frames.
static SHARED_BATCHES: SharedPool =
    [const { std::sync::Mutex::new(Vec::new()) }; CLASS_SIZES.len()];

/// Batches of free blocks per class, shared by the caches that use it.
type SharedPool = [std::sync::Mutex<Vec<Batch>>; CLASS_SIZES.len()];

/// Frees every block of `batch` to the allocator.
///
/// # Safety
///
/// `batch` holds `len` free blocks of class `class`.
unsafe fn free_batch(class: usize, batch: Batch) {
    let mut head = batch.head;
    while !head.is_null() {
        // SAFETY: every block in the list is a free block of this class.
        unsafe {
            let next = (*head).next;
            alloc::dealloc(head.cast(), class_layout(class));
            head = next;
        }
    }
}

/// A worker's cache of free task-frame blocks, one list per size class.
///
/// Every block is a global-allocator block of its class's layout, so a block may be freed
/// into any worker's cache, or to the allocator by any thread: the cache only saves the
/// allocator round trip (task frames are allocated and freed at the rate tasks are spawned,
/// and most are freed by the worker that allocated them). A cache that overflows collects
/// blocks in an outgoing batch for [`SHARED_BATCHES`]; a cache that runs dry takes a batch
/// from there before it asks the allocator. Used by its worker's thread only.
pub(crate) struct BlockCache {
    /// [`SHARED_BATCHES`], or a test's own pool.
    pool: &'static SharedPool,
    lists: [Cell<*mut FreeBlock>; CLASS_SIZES.len()],
    lens: [Cell<u32>; CLASS_SIZES.len()],
    outgoing: [Cell<*mut FreeBlock>; CLASS_SIZES.len()],
    outgoing_lens: [Cell<u32>; CLASS_SIZES.len()],
}

impl BlockCache {
    pub(crate) const fn new() -> Self {
        Self::with_pool(&SHARED_BATCHES)
    }

    const fn with_pool(pool: &'static SharedPool) -> Self {
        BlockCache {
            pool,
            lists: [const { Cell::new(ptr::null_mut()) }; CLASS_SIZES.len()],
            lens: [const { Cell::new(0) }; CLASS_SIZES.len()],
            outgoing: [const { Cell::new(ptr::null_mut()) }; CLASS_SIZES.len()],
            outgoing_lens: [const { Cell::new(0) }; CLASS_SIZES.len()],
        }
    }

    /// Refills the empty list of `class` with a shared batch; false if there is none.
    #[cold]
    fn take_batch(&self, class: usize) -> bool {
        let batch = self.pool[class]
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .pop();
        match batch {
            Some(batch) => {
                self.lists[class].set(batch.head);
                self.lens[class].set(batch.len);
                true
            }
            None => false,
        }
    }

    /// Hands the full outgoing batch of `class` to the shared pool (or, if the pool is full,
    /// to the allocator).
    #[cold]
    fn give_batch(&self, class: usize) {
        let batch = Batch {
            head: self.outgoing[class].replace(ptr::null_mut()),
            len: self.outgoing_lens[class].replace(0),
        };
        let mut shared = self.pool[class]
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if shared.len() < shared_limit(class) {
            shared.push(batch);
        } else {
            drop(shared);
            // SAFETY: the outgoing list holds `len` free blocks of this class.
            unsafe { free_batch(class, batch) };
        }
    }

    #[inline]
    pub(crate) fn alloc(&self, class: usize) -> NonNull<u8> {
        let mut head = self.lists[class].get();
        if head.is_null() && self.take_batch(class) {
            head = self.lists[class].get();
        }
        match NonNull::new(head) {
            Some(block) => {
                // SAFETY: blocks in the list are free and ours; `next` was written when the
                // block was pushed.
                let next = unsafe { (*head).next };
                self.lists[class].set(next);
                self.lens[class].set(self.lens[class].get() - 1);
                if !next.is_null() {
                    // The next allocation's block was most likely freed by another core: have
                    // its lines on their way now (see `prefetch_write`).
                    for line in (0..CLASS_SIZES[class]).step_by(CLASS_ALIGN) {
                        prefetch_write(next.cast::<u8>().wrapping_add(line));
                    }
                }
                block.cast()
            }
            None => {
                let layout = class_layout(class);
                // SAFETY: the layout has a non-zero size.
                let p = unsafe { alloc::alloc(layout) };
                NonNull::new(p).unwrap_or_else(|| alloc::handle_alloc_error(layout))
            }
        }
    }

    /// # Safety
    ///
    /// `block` is a block of class `class` (allocated with its layout) that nobody uses.
    #[inline]
    pub(crate) unsafe fn recycle(&self, class: usize, block: NonNull<u8>) {
        let len = self.lens[class].get();
        let block = block.cast::<FreeBlock>().as_ptr();
        if len >= CACHE_LIMIT {
            // SAFETY: the block is ours and large enough for a pointer.
            unsafe {
                block.write(FreeBlock {
                    next: self.outgoing[class].get(),
                })
            };
            self.outgoing[class].set(block);
            let out = self.outgoing_lens[class].get() + 1;
            self.outgoing_lens[class].set(out);
            if out == BATCH {
                self.give_batch(class);
            }
            return;
        }
        // SAFETY: the block is ours and large enough for a pointer.
        unsafe {
            block.write(FreeBlock {
                next: self.lists[class].get(),
            })
        };
        self.lists[class].set(block);
        self.lens[class].set(len + 1);
    }
}

impl Drop for BlockCache {
    fn drop(&mut self) {
        for class in 0..CLASS_SIZES.len() {
            for (list, len) in [
                (&self.lists[class], &self.lens[class]),
                (&self.outgoing[class], &self.outgoing_lens[class]),
            ] {
                let batch = Batch {
                    head: list.replace(ptr::null_mut()),
                    len: len.replace(0),
                };
                // SAFETY: the list holds free blocks of this class, ours alone.
                unsafe { free_batch(class, batch) };
            }
        }
    }
}

#[cfg(not(loom))]
thread_local! {
    /// The calling thread's cache for [`alloc_block`] and [`free_block`].
    static THREAD_BLOCKS: BlockCache = const { BlockCache::new() };
}

/// Uninitialized memory for one `X`, from the calling thread's cache when `X` fits a class
/// (under loom, from the allocator).
pub(crate) fn alloc_block<X>() -> NonNull<X> {
    #[cfg(not(loom))]
    if let Some(class) = class_of::<X>()
        && let Ok(block) = THREAD_BLOCKS.try_with(|cache| cache.alloc(class))
    {
        return block.cast();
    }
    let layout = block_layout::<X>();
    // SAFETY: the layout has a non-zero size (`X` is a node, never zero-sized).
    let p = unsafe { alloc::alloc(layout) };
    NonNull::new(p.cast()).unwrap_or_else(|| alloc::handle_alloc_error(layout))
}

/// Gives back memory from [`alloc_block`], into the calling thread's cache (or, while the
/// thread's cache is being destroyed, to the allocator).
///
/// # Safety
///
/// `block` came from `alloc_block::<X>` (on any thread), holds no live value, and nobody
/// uses it any more.
pub(crate) unsafe fn free_block<X>(block: NonNull<X>) {
    #[cfg(not(loom))]
    if let Some(class) = class_of::<X>()
        && THREAD_BLOCKS
            // SAFETY: a block of this class (allocated with its layout), unused.
            .try_with(|cache| unsafe { cache.recycle(class, block.cast()) })
            .is_ok()
    {
        return;
    }
    // SAFETY: allocated by `alloc_block` with this layout, or by a cache with the class
    // layout, which is what `block_layout` gives for a type that fits a class.
    unsafe { alloc::dealloc(block.as_ptr().cast(), block_layout::<X>()) };
}

/// The layout blocks for `X` have: its class's when it fits one (so that cache blocks and
/// allocator blocks are interchangeable), its own otherwise. `X` is never zero-sized here.
fn block_layout<X>() -> Layout {
    match class_of::<X>() {
        Some(class) => class_layout(class),
        None => Layout::new::<X>(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_overflowing_frame_cache_hands_batches_to_a_dry_one() {
        let class = 1;
        // A pool of the test's own: other tests' workers share the global one.
        let pool: &'static SharedPool = Box::leak(Box::new(
            [const { std::sync::Mutex::new(Vec::new()) }; CLASS_SIZES.len()],
        ));
        let (producer, consumer) = (BlockCache::with_pool(pool), BlockCache::with_pool(pool));
        // The consumer frees blocks it did not allocate: its cache fills, then overflows.
        let blocks: Vec<NonNull<u8>> = (0..CACHE_LIMIT + BATCH)
            .map(|_| producer.alloc(class))
            .collect();
        for block in &blocks {
            // SAFETY: blocks of this class, unused.
            unsafe { consumer.recycle(class, *block) };
        }
        assert_eq!(consumer.lens[class].get(), CACHE_LIMIT);
        assert_eq!(
            consumer.outgoing_lens[class].get(),
            0,
            "a full batch left the consumer"
        );
        // The producer, dry, refills from the shared pool before it asks the allocator.
        let again = producer.alloc(class);
        assert!(
            blocks.contains(&again),
            "the block came from the consumer's batch"
        );
        assert_eq!(producer.lens[class].get(), BATCH - 1);
        assert!(
            pool[class].lock().unwrap().is_empty(),
            "the producer took the batch"
        );
        // SAFETY: a block of this class, unused.
        unsafe { producer.recycle(class, again) };
    }
}
