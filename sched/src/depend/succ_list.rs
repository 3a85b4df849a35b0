//! Successor lists: the tasks waiting for a task node, in chunks from the block cache.
//!
//! A successor list is filled by the thread creating tasks (under the node's lock) and emptied
//! by the thread completing the node, almost always another one. With a `Vec`, every list
//! longer than one entry was a global-allocator block allocated by the creating thread and
//! freed by a completing one, and glibc's allocator serializes such frees on the creating
//! thread's arena lock: in SparseLU with 120 x 120 blocks, where each `fwd` and `bdiv` task
//! has up to 119 successors, that lock cost the creating thread, the runtime's bottleneck
//! there, about a quarter of its time on 32 cores (measured as the gap to the same program
//! with mimalloc as the global allocator). Chunks come from the calling thread's block cache
//! ([`crate::blocks`]), which hands blocks back to other threads in batches.
//!
//! The list is a single entry inline, or a linked list of chunks of [`CHUNK_LEN`] entries with
//! the newest chunk first, visited newest entry first ([`SuccIter`] says why). The entry pushed
//! last is the last entry of the first chunk: registration relies on that to skip a duplicate
//! edge.

use std::fmt;
use std::mem::{self, MaybeUninit};
use std::ptr::NonNull;

use super::node_ref::NodeRef;
use crate::blocks::{alloc_block, free_block};

/// Entries per chunk: a chunk is then 128 bytes, the smallest block class, on 64-bit targets.
const CHUNK_LEN: usize = 14;

struct Chunk<T> {
    /// The chunk filled before this one.
    older: Option<NonNull<Chunk<T>>>,
    /// `items[..len]` are initialized.
    len: usize,
    items: [MaybeUninit<NodeRef<T>>; CHUNK_LEN],
}

/// The successors of one task node (see the module docs).
#[derive(Default)]
pub(crate) enum SuccList<T> {
    #[default]
    Empty,
    One(NodeRef<T>),
    Chunks(Chunks<T>),
}

/// The chunks of a list of more than one entry.
pub(crate) struct Chunks<T> {
    /// The newest chunk, never empty.
    head: NonNull<Chunk<T>>,
}

// SAFETY: `Chunks` owns its chunks and the `NodeRef`s in them, like a `Vec<NodeRef<T>>`, which
// is `Send` and `Sync` when `T: Send` (see `node_ref`).
unsafe impl<T: Send> Send for Chunks<T> {}
// SAFETY: as above; shared access only reads.
unsafe impl<T: Send> Sync for Chunks<T> {}

impl<T> Drop for Chunks<T> {
    fn drop(&mut self) {
        drop(SuccIter {
            one: None,
            chunk: Some(self.head),
            // SAFETY: we own the chunk.
            left: unsafe { self.head.as_ref() }.len,
        });
    }
}

impl<T> SuccList<T> {
    pub(crate) fn is_empty(&self) -> bool {
        matches!(self, SuccList::Empty)
    }

    /// The entry pushed last.
    pub(crate) fn last(&self) -> Option<&NodeRef<T>> {
        match self {
            SuccList::Empty => None,
            SuccList::One(n) => Some(n),
            SuccList::Chunks(chunks) => {
                // SAFETY: the list owns its chunks; the newest holds `len >= 1` initialized
                // entries.
                let head = unsafe { chunks.head.as_ref() };
                // SAFETY: as above: entry `len - 1` is initialized.
                Some(unsafe { head.items[head.len - 1].assume_init_ref() })
            }
        }
    }

    pub(crate) fn push(&mut self, node: NodeRef<T>) {
        match self {
            SuccList::Empty => *self = SuccList::One(node),
            SuccList::One(_) => {
                let SuccList::One(first) = mem::take(self) else {
                    unreachable!("matched One above")
                };
                let chunk = new_chunk(None, first);
                // SAFETY: a fresh chunk with one entry, ours alone.
                unsafe { push_into(chunk, node) };
                *self = SuccList::Chunks(Chunks { head: chunk });
            }
            SuccList::Chunks(chunks) => {
                // SAFETY: the list owns its chunks.
                if unsafe { chunks.head.as_ref() }.len < CHUNK_LEN {
                    // SAFETY: as above, with room for one more entry.
                    unsafe { push_into(chunks.head, node) };
                } else {
                    chunks.head = new_chunk(Some(chunks.head), node);
                }
            }
        }
    }
}

/// A chunk holding `first`, in front of `older`.
fn new_chunk<T>(older: Option<NonNull<Chunk<T>>>, first: NodeRef<T>) -> NonNull<Chunk<T>> {
    let chunk = alloc_block::<Chunk<T>>();
    let p = chunk.as_ptr();
    // SAFETY: fresh memory for one chunk, ours alone; the fields are written in place and the
    // entries past `len` stay uninitialized.
    unsafe {
        (&raw mut (*p).older).write(older);
        (&raw mut (*p).len).write(1);
        (&raw mut (*p).items)
            .cast::<MaybeUninit<NodeRef<T>>>()
            .write(MaybeUninit::new(first));
    }
    chunk
}

/// Appends `node` to `chunk`.
///
/// # Safety
///
/// The caller owns `chunk`, which has fewer than `CHUNK_LEN` entries.
unsafe fn push_into<T>(mut chunk: NonNull<Chunk<T>>, node: NodeRef<T>) {
    // SAFETY: the caller's promise.
    let chunk = unsafe { chunk.as_mut() };
    chunk.items[chunk.len].write(node);
    chunk.len += 1;
}

impl<T> fmt::Debug for SuccList<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SuccList")
            .field("empty", &self.is_empty())
            .finish()
    }
}

impl<T> IntoIterator for SuccList<T> {
    type Item = NodeRef<T>;
    type IntoIter = SuccIter<T>;

    /// Iterates by value, newest entry first, giving each chunk back to the calling thread's
    /// block cache once it is read.
    fn into_iter(self) -> SuccIter<T> {
        match self {
            SuccList::Empty => SuccIter {
                one: None,
                chunk: None,
                left: 0,
            },
            SuccList::One(n) => SuccIter {
                one: Some(n),
                chunk: None,
                left: 0,
            },
            SuccList::Chunks(chunks) => {
                // The iterator takes the chunks over.
                let head = mem::ManuallyDrop::new(chunks).head;
                SuccIter {
                    one: None,
                    chunk: Some(head),
                    // SAFETY: the list owned the chunk.
                    left: unsafe { head.as_ref() }.len,
                }
            }
        }
    }
}

/// By-value iterator over a [`SuccList`], newest entry first.
///
/// Newest first because a completion pushes the tasks it releases in this order onto the
/// completing worker's deque, whose owner pops the last one pushed: the oldest successor runs
/// first on that worker, and thieves take the newer ones. Programs create tasks in the order of
/// their critical path more often than not (SparseLU's `bmod` on the next diagonal block is
/// the first of its step), as OpenMP runtimes with a FIFO task queue reward.
pub(crate) struct SuccIter<T> {
    one: Option<NodeRef<T>>,
    /// The chunk being read; `items[..left]` are not taken yet.
    chunk: Option<NonNull<Chunk<T>>>,
    left: usize,
}

impl<T> Iterator for SuccIter<T> {
    type Item = NodeRef<T>;

    fn next(&mut self) -> Option<NodeRef<T>> {
        if let Some(n) = self.one.take() {
            return Some(n);
        }
        loop {
            let mut chunk = self.chunk?;
            // SAFETY: the iterator owns the chunks it has not freed yet.
            let c = unsafe { chunk.as_mut() };
            if self.left > 0 {
                self.left -= 1;
                // SAFETY: entry `left < len` is initialized and taken only once (`left` moved
                // below it).
                return Some(unsafe { c.items[self.left].assume_init_read() });
            }
            self.chunk = c.older;
            // SAFETY: an older chunk is full and owned by the iterator.
            self.left = c.older.map_or(0, |older| unsafe { older.as_ref() }.len);
            // SAFETY: every entry of the chunk was taken; the block came from `alloc_block`.
            unsafe { free_block(chunk) };
        }
    }
}

impl<T> Drop for SuccIter<T> {
    fn drop(&mut self) {
        /// Drops what is left if dropping an entry panics (the last reference to a node drops
        /// its parked payload, user data), as a `Vec` does, instead of leaking it.
        struct Rest<'a, T>(&'a mut SuccIter<T>);
        impl<T> Drop for Rest<'_, T> {
            fn drop(&mut self) {
                self.0.by_ref().for_each(drop);
            }
        }
        let rest = Rest(self);
        rest.0.by_ref().for_each(drop);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn nodes(n: usize) -> Vec<NodeRef<u32>> {
        (0..n).map(|_| NodeRef::for_accesses(&[])).collect()
    }

    #[test]
    fn holds_every_entry_and_knows_the_last_across_chunks() {
        let all = nodes(3 * CHUNK_LEN + 5);
        let mut list = SuccList::default();
        assert!(list.is_empty() && list.last().is_none());
        for n in &all {
            list.push(n.clone());
            assert!(NodeRef::ptr_eq(list.last().expect("pushed"), n));
            assert_eq!(n.ref_count(), 2);
        }
        let got: Vec<usize> = list
            .into_iter()
            .map(|n| {
                all.iter()
                    .position(|a| NodeRef::ptr_eq(a, &n))
                    .expect("ours")
            })
            .collect();
        assert_eq!(
            got,
            (0..all.len()).rev().collect::<Vec<_>>(),
            "newest first"
        );
        assert!(all.iter().all(|n| n.ref_count() == 1), "the list let go");
    }

    #[test]
    fn dropping_a_list_or_a_partly_read_iterator_releases_every_entry() {
        let all = nodes(2 * CHUNK_LEN + 1);
        for keep in [0, 1, 2, CHUNK_LEN, all.len()] {
            let mut list = SuccList::default();
            all.iter().take(keep).for_each(|n| list.push(n.clone()));
            drop(list);
            assert!(all.iter().all(|n| n.ref_count() == 1), "list of {keep}");
            let mut list = SuccList::default();
            all.iter().take(keep).for_each(|n| list.push(n.clone()));
            let mut iter = list.into_iter();
            let first = iter.next();
            assert_eq!(first.is_some(), keep > 0);
            drop(iter);
            drop(first);
            assert!(
                all.iter().all(|n| n.ref_count() == 1),
                "iterator over {keep}"
            );
        }
    }
}
