//! [`NodeRef`]: the counted reference to a task node, like `Arc<Node<T>>` but with the node's
//! memory from the thread's block cache ([`crate::blocks`]) instead of the global allocator.
//!
//! Why not `Arc`: one thread (the one creating tasks) allocates every node, and the threads
//! completing tasks drop most of them. Through the global allocator that pattern made glibc
//! serialize the completers' frees and the creator's allocations on the creator's arena lock:
//! with 32 threads, task creation in SparseLU (the runtime's bottleneck there) went from 1.15
//! to 0.67 µs per task when every allocation went to mimalloc instead. The block cache returns
//! the completers' blocks to the creator in batches, one lock per batch.
//!
//! The range map's references are [`TrackerRef`]s, counted apart (see there).
//!
//! The count follows `Arc`'s protocol: `Relaxed` increments (a new reference is made from an
//! existing one, which keeps the node alive), `Release` decrements, and an `Acquire` load of
//! the count in the thread that drops the last reference, so that every use of the node
//! through other references happens before it is dropped. (A load rather than `Arc`'s
//! `Acquire` fence: the same ordering, and one that ThreadSanitizer models, so that programs
//! checked with it see no false report from the runtime.)

use std::fmt;
use std::marker::PhantomData;
use std::mem::{self, ManuallyDrop};
use std::ops::Deref;
use std::panic::{self, AssertUnwindSafe};
use std::ptr::{self, NonNull};

use super::node::Node;
use crate::blocks::{alloc_block, free_block};
use crate::sync::atomic::{AtomicUsize, Ordering};
use crate::sync::prefetch_write;
use crate::unwind::drop_payload;

/// The allocation behind a [`NodeRef`].
///
/// `tracker_refs` comes last, on another cache line than the fields that completing threads
/// write (`refs`, and the node's counter, flags and lock): see [`TrackerRef`] and the layout
/// of [`Node`].
#[repr(C)]
struct Shared<T> {
    refs: AtomicUsize,
    node: Node<T>,
    /// How many [`TrackerRef`]s exist; while any does, they hold one of `refs` together.
    tracker_refs: AtomicUsize,
}

/// A counted reference to a [`Node`] (see the module docs).
pub(crate) struct NodeRef<T> {
    ptr: NonNull<Shared<T>>,
    _owns: PhantomData<Shared<T>>,
}

// SAFETY: like `Arc<Node<T>>`: a `NodeRef` gives shared access to the node from any thread and
// may drop it on any thread, which `Node<T>: Send + Sync` allows; that holds exactly when
// `T: Send` (the payload sits behind the node's mutex), checked below.
unsafe impl<T: Send> Send for NodeRef<T> {}
// SAFETY: as above.
unsafe impl<T: Send> Sync for NodeRef<T> {}

// The bounds above and those of `TrackerRef` and `succ_list::Chunks` are `T: Send` rather
// than `Node<T>: Send + Sync` (what they mean): that bound led through the node's fields back
// to `NodeRef`, and rustc, reporting an unrelated ambiguous type in a user's program (a scope
// closure ending in a bare `Ok(())`), expanded it for minutes and gigabytes. This proves that
// `T: Send` gives `Node<T>: Send + Sync` (the direction soundness needs; the other holds
// because the payload sits in the node's mutex, which is `Send` only for `T: Send`).
const _: () = {
    #[allow(dead_code, reason = "checked when compiled, never called")]
    fn node_is_send_and_sync<T: Send>() {
        fn check<X: Send + Sync>() {}
        check::<Node<T>>();
    }
};

/// More references than this means the count is about to overflow (references leaked in a
/// loop); abort rather than free a node that is still referenced.
const MAX_REFS: usize = isize::MAX as usize;

// Where the fields lie for the runtime's nodes (64-bit targets; loom's types have other
// sizes): completers write the first two lines only, the map's count is on the third, and the
// whole fits the 192-byte block class.
#[cfg(all(target_pointer_width = "64", not(loom)))]
const _: () = {
    type S = Shared<crate::job::Task>;
    let node = std::mem::offset_of!(S, node);
    assert!(node + std::mem::offset_of!(Node<crate::job::Task>, links) < 64);
    assert!(node + std::mem::offset_of!(Node<crate::job::Task>, accesses) <= 128);
    assert!(std::mem::offset_of!(S, tracker_refs) >= 128);
    assert!(std::mem::size_of::<S>() <= 192);
};

impl<T> NodeRef<T> {
    /// A new node with one reference.
    /// A new node for a task with `accesses`, with one reference, written in place (see
    /// [`Node::init`]).
    #[inline]
    pub(crate) fn for_accesses(accesses: &[super::access::Access]) -> Self {
        let ptr = alloc_block::<Shared<T>>();
        let p = ptr.as_ptr();
        // Stops compiling when a field is added that the writes below do not cover.
        let _every_field = |s: &Shared<T>| {
            let Shared {
                refs: _,
                node: _,
                tracker_refs: _,
            } = s;
        };
        // SAFETY: fresh memory for one `Shared<T>`, ours alone; every field is written once.
        unsafe {
            std::ptr::addr_of_mut!((*p).refs).write(AtomicUsize::new(1));
            std::ptr::addr_of_mut!((*p).tracker_refs).write(AtomicUsize::new(0));
            Node::init(std::ptr::addr_of_mut!((*p).node), accesses);
        }
        NodeRef {
            ptr,
            _owns: PhantomData,
        }
    }

    fn shared(&self) -> &Shared<T> {
        // SAFETY: the allocation lives while a reference (this one) exists.
        unsafe { self.ptr.as_ref() }
    }

    /// How many references the node has (for tests).
    #[cfg(test)]
    pub(crate) fn ref_count(&self) -> usize {
        self.shared().refs.load(Ordering::Relaxed)
    }

    /// Whether `a` and `b` refer to the same node.
    pub(crate) fn ptr_eq(a: &Self, b: &Self) -> bool {
        a.ptr == b.ptr
    }

    /// Drops this reference; if it was the last one, `last` gets the node to itself first
    /// (to take parts out of it before it is dropped).
    pub(crate) fn drop_with(self, last: impl FnOnce(&mut Node<T>)) {
        let this = ManuallyDrop::new(self);
        // SAFETY: `this` is never used again (it is not dropped either).
        unsafe { this.release(last) }
    }

    /// Gives up this reference.
    ///
    /// # Safety
    ///
    /// Called once per reference, which is not used afterwards.
    unsafe fn release(&self, last: impl FnOnce(&mut Node<T>)) {
        if self.shared().refs.fetch_sub(1, Ordering::Release) != 1 {
            return;
        }
        // Every other reference's last use happened before its decrement, which this load
        // acquires (it reads the end of the count's release sequence). A load, not a fence:
        // ThreadSanitizer does not model standalone fences.
        self.shared().refs.load(Ordering::Acquire);
        let ptr = self.ptr.as_ptr();
        // SAFETY: this was the last reference: the allocation is ours alone. It holds an
        // initialized `Shared<T>`, dropped here once, and its block came from `alloc_block`.
        unsafe {
            last(&mut (*ptr).node);
            // The payload is a user type of a public tracker, whose destructor may panic, and
            // the last reference may go inside `submit`, halfway through the tracker's map:
            // the panic is contained here, so that the tracker stays consistent and the block
            // is still freed. Its payload is dropped, and leaked only if its own destructor
            // panics in turn.
            let drop_node = AssertUnwindSafe(|| ptr::drop_in_place(ptr));
            if let Err(payload) = panic::catch_unwind(drop_node) {
                drop_payload(payload);
            }
            free_block(self.ptr);
        }
    }
}

impl<T> Clone for NodeRef<T> {
    fn clone(&self) -> Self {
        // Relaxed: the new reference is made from this one, which keeps the node alive.
        if self.shared().refs.fetch_add(1, Ordering::Relaxed) > MAX_REFS {
            std::process::abort();
        }
        NodeRef {
            ptr: self.ptr,
            _owns: PhantomData,
        }
    }
}

impl<T> Drop for NodeRef<T> {
    fn drop(&mut self) {
        // SAFETY: dropped once, not used afterwards.
        unsafe { self.release(|_| {}) }
    }
}

impl<T> Deref for NodeRef<T> {
    type Target = Node<T>;

    fn deref(&self) -> &Node<T> {
        &self.shared().node
    }
}

impl<T> fmt::Debug for NodeRef<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("NodeRef").field("ptr", &self.ptr).finish()
    }
}

/// A reference to a node held by its tracker's range map (the last writer of a range, its
/// readers since): counted in the node's `tracker_refs`, with plain loads and stores, and
/// holding one [`NodeRef`] count for all of them.
///
/// Why: the map's references are made when a task is registered and dropped when a later task
/// replaces them, by the thread creating tasks, long after another thread completed the task
/// (and wrote the node's first cache lines: flags, lock, and the count its handle drops). A
/// `NodeRef` per map entry cost that thread an atomic read-modify-write on a line held by
/// another core for each entry it replaced; `tracker_refs` lies on a line only the creating
/// thread writes, and the shared count changes once per node, when the map lets go of it
/// altogether.
///
/// Sound because every `TrackerRef` of a node is made, cloned and dropped by threads that hold
/// its tracker's lock (or own the tracker, when it is dropped): the lock orders all of them,
/// so the count's loads and stores never race. A `TrackerRef` never leaves the range map.
pub(crate) struct TrackerRef<T> {
    ptr: NonNull<Shared<T>>,
    _owns: PhantomData<Shared<T>>,
}

// SAFETY: a `TrackerRef` moves between threads only with its tracker, under its lock (see
// above); the node it refers to is `Send + Sync` when `T: Send` (see `NodeRef`).
unsafe impl<T: Send> Send for TrackerRef<T> {}

impl<T> TrackerRef<T> {
    /// A map reference to `node`. The caller holds the tracker's lock.
    pub(crate) fn new(node: &NodeRef<T>) -> Self {
        let shared = node.shared();
        let n = shared.tracker_refs.load(Ordering::Relaxed);
        if n == 0 {
            // The map's references hold one count together; `node` keeps the node alive
            // meanwhile.
            mem::forget(node.clone());
        }
        shared.tracker_refs.store(n + 1, Ordering::Relaxed);
        TrackerRef {
            ptr: node.ptr,
            _owns: PhantomData,
        }
    }

    fn shared(&self) -> &Shared<T> {
        // SAFETY: the allocation lives while the map holds a reference (this one).
        unsafe { self.ptr.as_ref() }
    }

    /// Starts bringing in the cache lines that dropping this reference may touch: its count
    /// (the last line) and, if it is the last one, the node's first lines and the block's
    /// free-list link (see [`crate::sync::prefetch_write`]).
    pub(crate) fn prefetch(&self) {
        let p = self.ptr.as_ptr();
        prefetch_write(p);
        prefetch_write(p.cast::<u8>().wrapping_add(64));
        prefetch_write(std::ptr::addr_of!(self.shared().tracker_refs));
    }

    /// Whether `self` refers to `node`.
    pub(crate) fn is(&self, node: &NodeRef<T>) -> bool {
        self.ptr == node.ptr
    }
}

impl<T> Clone for TrackerRef<T> {
    fn clone(&self) -> Self {
        let count = &self.shared().tracker_refs;
        // Plain increment: the tracker's lock orders every access to the count (see above).
        count.store(count.load(Ordering::Relaxed) + 1, Ordering::Relaxed);
        TrackerRef {
            ptr: self.ptr,
            _owns: PhantomData,
        }
    }
}

impl<T> Drop for TrackerRef<T> {
    fn drop(&mut self) {
        let count = &self.shared().tracker_refs;
        let n = count.load(Ordering::Relaxed) - 1;
        count.store(n, Ordering::Relaxed);
        if n == 0 {
            // The last map reference gives up the count they held together.
            let held = ManuallyDrop::new(NodeRef {
                ptr: self.ptr,
                _owns: PhantomData,
            });
            // SAFETY: `TrackerRef::new` took this count for the map's references, and it is
            // given up once, here.
            unsafe { held.release(|_| {}) }
        }
    }
}

impl<T> Deref for TrackerRef<T> {
    type Target = Node<T>;

    fn deref(&self) -> &Node<T> {
        &self.shared().node
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_maps_references_hold_one_count_together() {
        let node = NodeRef::<u32>::for_accesses(&[]);
        assert_eq!(node.ref_count(), 1);
        let a = TrackerRef::new(&node);
        assert_eq!(node.ref_count(), 2, "the first map reference takes a count");
        let b = a.clone();
        let c = TrackerRef::new(&node);
        assert_eq!(node.ref_count(), 2, "later ones share it");
        assert!(a.is(&node) && b.is(&node) && c.is(&node));
        drop(a);
        drop(c);
        assert_eq!(node.ref_count(), 2);
        drop(b);
        assert_eq!(node.ref_count(), 1, "the last one gives it back");
        let d = TrackerRef::new(&node);
        assert_eq!(node.ref_count(), 2, "and a new one takes it again");
        drop(node);
        // `d` now holds the node alone; dropping it frees it (under Miri or a leak checker,
        // a lost count would show here).
        drop(d);
    }
}
