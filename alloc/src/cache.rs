//! Reuse of placed memory: a freed mapping goes back to a cache of its placement (its node,
//! or the interleave), already faulted in and where its policy put it, and a later
//! allocation of that placement and size takes it without a system call.
//!
//! A mapping stays registered while cached (its record marked free), so reusing it leaves the
//! placement registry exact: the same pages, on the same nodes. Sizes are rounded up to
//! classes (a power of two of pages up to 1 MiB, a multiple of 1 MiB above), so that a
//! program allocating sizes that differ a little still reuses; the pages past the size
//! asked are mapped but never touched, which costs no memory.
//!
//! Standard (first-touch) memory is cached only on a machine of one node: on several, its
//! pages lie where their first writer ran, and a new allocation expects its own first touch
//! to place them; it goes back to the kernel.
//!
//! The cache is bounded ([`set_cache_limit`], 256 MiB by default): a mapping that would take
//! it past its limit goes back to the kernel, and [`release_cache`] returns everything but
//! what other threads keep for themselves: each thread keeps its last few freed mappings
//! (at most 8, of 8 MiB together), which it takes back first without a lock, and hands to the
//! shared cache when it ends.

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, LazyLock, Mutex, PoisonError};

use crate::registry::Record;

/// The default bound on cached bytes.
pub const DEFAULT_CACHE_LIMIT: usize = 256 << 20;

static LIMIT: AtomicUsize = AtomicUsize::new(DEFAULT_CACHE_LIMIT);

/// What a cached mapping can be handed out as.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) enum Key {
    /// First touch, on a machine of one node, base pages.
    Standard,
    /// First touch, on a machine of one node, huge pages.
    HugeStandard,
    /// Interleaved over every node, base pages.
    Fine,
    /// Interleaved over every node, huge pages.
    HugeFine,
    /// Wholly on this node (coarse, or on a node asked for), base pages.
    Node(usize),
    /// Wholly on this node, huge pages.
    HugeNode(usize),
}

/// Free mappings by key and mapped length, the last freed first. The cache is sharded by
/// key and length, so that threads allocating different placements or sizes at once take
/// different locks.
type Shard = HashMap<(Key, usize), Vec<Arc<Record>>>;

const SHARDS: usize = 16;

static SHARD: LazyLock<[Mutex<Shard>; SHARDS]> =
    LazyLock::new(|| std::array::from_fn(|_| Mutex::new(HashMap::new())));

/// Bytes the cache holds, all shards together.
static BYTES: AtomicUsize = AtomicUsize::new(0);

fn shard(key: Key, len: usize) -> std::sync::MutexGuard<'static, Shard> {
    use std::hash::{BuildHasher, BuildHasherDefault, DefaultHasher};
    let h = BuildHasherDefault::<DefaultHasher>::default().hash_one((key, len));
    SHARD[(h as usize) % SHARDS]
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
}

/// Sets how many bytes of freed memory the allocator keeps for reuse (0: none); memory cached
/// beyond the new limit goes back to the kernel at once.
pub fn set_cache_limit(bytes: usize) {
    LIMIT.store(bytes, Ordering::Relaxed);
    let mut released = Vec::new();
    // The calling thread's own mappings first go back to the shared cache.
    let _ = LOCAL.try_with(|l| {
        for (key, r) in l.borrow_mut().0.drain(..) {
            push_shared(key, r);
        }
    });
    for s in SHARD.iter() {
        let mut s = s.lock().unwrap_or_else(PoisonError::into_inner);
        s.retain(|_, list| {
            while BYTES.load(Ordering::Relaxed) > bytes {
                let Some(r) = list.pop() else { break };
                BYTES.fetch_sub(r.len, Ordering::Relaxed);
                released.push(r);
            }
            !list.is_empty()
        });
    }
    released.into_iter().for_each(crate::allocator::release);
}

/// Returns every cached mapping to the kernel.
pub fn release_cache() {
    let limit = LIMIT.load(Ordering::Relaxed);
    set_cache_limit(0);
    LIMIT.store(limit, Ordering::Relaxed);
}

/// Mappings and bytes the cache holds now (the mappings: those of the shared cache and the
/// calling thread's; the bytes: every thread's).
pub fn cached() -> (usize, usize) {
    let mine = LOCAL.try_with(|l| l.borrow().0.len()).unwrap_or(0);
    let count = mine
        + SHARD
            .iter()
            .map(|s| {
                let s = s.lock().unwrap_or_else(PoisonError::into_inner);
                s.values().map(Vec::len).sum::<usize>()
            })
            .sum::<usize>();
    (count, BYTES.load(Ordering::Relaxed))
}

/// The mapped length for a request of `len` bytes (whole pages): its size class.
pub(crate) fn class_len(len: usize, page: usize) -> usize {
    const MIB: usize = 1 << 20;
    if len <= MIB {
        let pages = len.div_ceil(page).next_power_of_two();
        pages.saturating_mul(page).max(len)
    } else {
        len.checked_next_multiple_of(MIB).unwrap_or(len)
    }
}

/// Mappings a thread keeps for itself, at most: the last ones it freed, which it takes back
/// first without a lock (a thread allocating and freeing in a loop touches no shared cache
/// line but its records').
const LOCAL_MAX: usize = 8;
/// Bytes a thread keeps for itself, at most.
const LOCAL_BYTES: usize = 8 << 20;

/// A thread's own free mappings; what is left when the thread ends goes to the shared cache.
struct Local(Vec<(Key, Arc<Record>)>);

impl Drop for Local {
    fn drop(&mut self) {
        for (key, r) in self.0.drain(..) {
            // Its bytes are counted already.
            push_shared(key, r);
        }
    }
}

/// Puts `r` (its bytes counted already) in the shared cache.
fn push_shared(key: Key, r: Arc<Record>) {
    shard(key, r.len).entry((key, r.len)).or_default().push(r);
}

thread_local! {
    static LOCAL: std::cell::RefCell<Local> = const { std::cell::RefCell::new(Local(Vec::new())) };
}

/// A cached mapping of `key` and mapped length `len`, taken out of the cache.
pub(crate) fn take(key: Key, len: usize) -> Option<Arc<Record>> {
    let mine = LOCAL
        .try_with(|l| {
            let mut l = l.borrow_mut();
            let i = l.0.iter().rposition(|(k, r)| *k == key && r.len == len)?;
            Some(l.0.swap_remove(i).1)
        })
        .ok()
        .flatten();
    if let Some(r) = mine {
        BYTES.fetch_sub(r.len, Ordering::Relaxed);
        return Some(r);
    }
    let mut s = shard(key, len);
    let list = s.get_mut(&(key, len))?;
    let r = list.pop()?;
    if list.is_empty() {
        s.remove(&(key, len));
    }
    BYTES.fetch_sub(r.len, Ordering::Relaxed);
    Some(r)
}

/// Keeps the freed `record` for reuse under `key`; gives it back if the cache is full.
pub(crate) fn put(key: Key, record: Arc<Record>) -> Result<(), Arc<Record>> {
    let limit = LIMIT.load(Ordering::Relaxed);
    // Reserve the bytes first, so that threads putting at once never pass the limit together.
    let reserved = BYTES.fetch_update(Ordering::Relaxed, Ordering::Relaxed, |b| {
        b.checked_add(record.len).filter(|&total| total <= limit)
    });
    if reserved.is_err() {
        return Err(record);
    }
    let record = match LOCAL.try_with(|l| {
        let mut l = l.borrow_mut();
        let bytes: usize = l.0.iter().map(|(_, r)| r.len).sum();
        if l.0.len() < LOCAL_MAX && bytes + record.len <= LOCAL_BYTES {
            l.0.push((key, Arc::clone(&record)));
            true
        } else {
            false
        }
    }) {
        Ok(true) => return Ok(()),
        _ => record,
    };
    push_shared(key, record);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn classes_round_small_sizes_to_powers_of_two_pages_and_large_to_mebibytes() {
        let p = 4096;
        assert_eq!(class_len(4096, p), 4096);
        assert_eq!(class_len(3 * 4096, p), 4 * 4096);
        assert_eq!(class_len(64 << 10, p), 64 << 10);
        assert_eq!(class_len((64 << 10) + 4096, p), 128 << 10);
        assert_eq!(class_len(1 << 20, p), 1 << 20);
        assert_eq!(class_len((1 << 20) + 4096, p), 2 << 20);
        assert_eq!(class_len((16 << 20) + 4096, p), 17 << 20);
    }
}
