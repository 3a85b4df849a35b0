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
//! The count follows `Arc`'s protocol: `Relaxed` increments (a new reference is made from an
//! existing one, which keeps the node alive), `Release` decrements, and an `Acquire` fence in
//! the thread that drops the last reference, so that every use of the node through other
//! references happens before it is dropped.

use std::fmt;
use std::marker::PhantomData;
use std::mem::ManuallyDrop;
use std::ops::Deref;
use std::ptr::{self, NonNull};

use super::node::Node;
use crate::blocks::{alloc_block, free_block};
use crate::sync::atomic::{AtomicUsize, Ordering, fence};

/// The allocation behind a [`NodeRef`].
struct Shared<T> {
    refs: AtomicUsize,
    node: Node<T>,
}

/// A counted reference to a [`Node`] (see the module docs).
pub(crate) struct NodeRef<T> {
    ptr: NonNull<Shared<T>>,
    _owns: PhantomData<Shared<T>>,
}

// SAFETY: like `Arc<Node<T>>`: a `NodeRef` gives shared access to the node from any thread and
// may drop it on any thread.
unsafe impl<T> Send for NodeRef<T> where Node<T>: Send + Sync {}
// SAFETY: as above.
unsafe impl<T> Sync for NodeRef<T> where Node<T>: Send + Sync {}

/// More references than this means the count is about to overflow (references leaked in a
/// loop); abort rather than free a node that is still referenced.
const MAX_REFS: usize = isize::MAX as usize;

impl<T> NodeRef<T> {
    /// A new node with one reference.
    pub(crate) fn new(node: Node<T>) -> Self {
        let ptr = alloc_block::<Shared<T>>();
        // SAFETY: fresh memory for one `Shared<T>`, ours alone.
        unsafe {
            ptr.as_ptr().write(Shared {
                refs: AtomicUsize::new(1),
                node,
            })
        };
        NodeRef {
            ptr,
            _owns: PhantomData,
        }
    }

    fn shared(&self) -> &Shared<T> {
        // SAFETY: the allocation lives while a reference (this one) exists.
        unsafe { self.ptr.as_ref() }
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
        // Every other reference's last use happened before its decrement, which the fence
        // acquires (through the release sequence of the count).
        fence(Ordering::Acquire);
        let ptr = self.ptr.as_ptr();
        // SAFETY: this was the last reference: the allocation is ours alone. It holds an
        // initialized `Shared<T>`, dropped here once, and its block came from `alloc_block`.
        unsafe {
            last(&mut (*ptr).node);
            ptr::drop_in_place(ptr);
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
