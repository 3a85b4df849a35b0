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
//! it past its limit goes back to the kernel, and [`release_cache`] returns everything.

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, LazyLock, Mutex, PoisonError};

use crate::registry::{Placement, Record};

/// The default bound on cached bytes.
pub const DEFAULT_CACHE_LIMIT: usize = 256 << 20;

static LIMIT: AtomicUsize = AtomicUsize::new(DEFAULT_CACHE_LIMIT);

/// What a cached mapping can be handed out as.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) enum Key {
    /// First touch, on a machine of one node.
    Standard,
    /// Interleaved over every node.
    Fine,
    /// Wholly on this node (coarse, or on a node asked for).
    Node(usize),
}

struct Cache {
    /// Free mappings by key and mapped length, the last freed first.
    free: HashMap<(Key, usize), Vec<Arc<Record>>>,
    bytes: usize,
}

static CACHE: LazyLock<Mutex<Cache>> = LazyLock::new(|| {
    Mutex::new(Cache {
        free: HashMap::new(),
        bytes: 0,
    })
});

fn cache() -> std::sync::MutexGuard<'static, Cache> {
    CACHE.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Sets how many bytes of freed memory the allocator keeps for reuse (0: none); memory cached
/// beyond the new limit goes back to the kernel at once.
pub fn set_cache_limit(bytes: usize) {
    LIMIT.store(bytes, Ordering::Relaxed);
    let released = {
        let mut c = cache();
        let mut out = Vec::new();
        while c.bytes > bytes {
            let Some(key) = c.free.keys().next().copied() else {
                break;
            };
            let list = c.free.get_mut(&key).expect("key from the map");
            if let Some(r) = list.pop() {
                c.bytes -= r.len;
                out.push(r);
            }
            if c.free.get(&key).is_some_and(Vec::is_empty) {
                c.free.remove(&key);
            }
        }
        out
    };
    released.into_iter().for_each(crate::allocator::release);
}

/// Returns every cached mapping to the kernel.
pub fn release_cache() {
    let limit = LIMIT.load(Ordering::Relaxed);
    set_cache_limit(0);
    LIMIT.store(limit, Ordering::Relaxed);
}

/// Mappings and bytes the cache holds now.
pub fn cached() -> (usize, usize) {
    let c = cache();
    (c.free.values().map(Vec::len).sum(), c.bytes)
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

/// The key a freed record goes back under, if it may be cached.
pub(crate) fn key_of(record: &Record, num_nodes: usize) -> Option<Key> {
    match record.placement {
        Placement::Standard(_) if num_nodes == 1 => Some(Key::Standard),
        Placement::Standard(_) => None,
        Placement::Fine { .. } => Some(Key::Fine),
        Placement::Node { node } => Some(Key::Node(node)),
    }
}

/// A cached mapping of `key` and mapped length `len`, taken out of the cache.
pub(crate) fn take(key: Key, len: usize) -> Option<Arc<Record>> {
    let mut c = cache();
    let list = c.free.get_mut(&(key, len))?;
    let r = list.pop()?;
    if list.is_empty() {
        c.free.remove(&(key, len));
    }
    c.bytes -= r.len;
    Some(r)
}

/// Keeps the freed `record` for reuse under `key`; gives it back if the cache is full.
pub(crate) fn put(key: Key, record: Arc<Record>) -> Result<(), Arc<Record>> {
    let mut c = cache();
    if c.bytes.saturating_add(record.len) > LIMIT.load(Ordering::Relaxed) {
        return Err(record);
    }
    c.bytes += record.len;
    c.free.entry((key, record.len)).or_default().push(record);
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
