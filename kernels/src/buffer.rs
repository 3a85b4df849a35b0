//! Buffers: arrays on the allocator ([`NumaVec`]), placed by a distribution or on one node,
//! reached by the host only through commands (`read`, `write`, `map`, ...) so that every access
//! is ordered by the dependences of the commands.

use std::any::type_name;
use std::fmt;
use std::mem::size_of;
use std::ops::Range;
use std::sync::{Arc, Mutex};

use numatask_alloc::{NumaVec, Place, Zeroable};
use numatask_sched::depend::{Access, AccessKind};

use crate::context::Context;
use crate::error::{Error, Failure};

/// What a buffer may hold: plain numbers and arrays of them (anything the allocator can hand
/// out zeroed, `Copy`, and shareable between threads).
pub trait Element: Zeroable + Copy + Send + Sync + 'static {}

impl<T: Zeroable + Copy + Send + Sync + 'static> Element for T {}

/// An array of `T` in memory placed by the allocator, shared by the commands of a context's
/// queues (OpenCL's `cl_mem`, SYCL's `buffer`). Cloning it clones the handle, not the data;
/// the memory goes when the last handle and the last command using it are gone.
///
/// The host reads and writes it through a queue's commands ([`Queue::read`],
/// [`Queue::write`], [`Queue::map`], ...), kernels through their arguments; each command waits
/// for the earlier commands whose accesses conflict with its own, so no access races.
///
/// If a command that writes the buffer fails, the elements it was to write are *poisoned*: a
/// later command that reads any of them fails with that failure (the data may be
/// half-written, or stale), until a host command ([`Queue::write`], [`Queue::fill`],
/// [`Queue::copy`]) overwrites them.
///
/// [`Queue::read`]: crate::Queue::read
/// [`Queue::write`]: crate::Queue::write
/// [`Queue::map`]: crate::Queue::map
/// [`Queue::fill`]: crate::Queue::fill
/// [`Queue::copy`]: crate::Queue::copy
pub struct Buffer<T: Element> {
    pub(crate) raw: Arc<RawBuffer>,
    _type: std::marker::PhantomData<fn() -> T>,
}

impl<T: Element> Clone for Buffer<T> {
    fn clone(&self) -> Self {
        Buffer {
            raw: Arc::clone(&self.raw),
            _type: std::marker::PhantomData,
        }
    }
}

/// A buffer without its element type: what commands hold.
pub(crate) struct RawBuffer {
    pub(crate) context: u64,
    pub(crate) ptr: *mut u8,
    /// Elements.
    pub(crate) len: usize,
    pub(crate) elem_size: usize,
    pub(crate) elem: &'static str,
    pub(crate) type_id: std::any::TypeId,
    pub(crate) place: Place,
    /// Element ranges that failed commands were to write, and why they failed.
    pub(crate) poison: Mutex<Vec<(Range<usize>, Failure)>>,
    /// Owns the memory (a `NumaVec<T>` behind a box without its type).
    _memory: Box<dyn Send + Sync>,
}

// SAFETY: the memory behind `ptr` is owned by `_memory`, which is `Send + Sync`; every access
// through `ptr` is made by a command, and the dependences between commands order those that
// conflict (a writer runs alone on the bytes it writes).
unsafe impl Send for RawBuffer {}
// SAFETY: as for `Send`.
unsafe impl Sync for RawBuffer {}

impl RawBuffer {
    /// The tracker access of `kind` on elements `range`.
    pub(crate) fn access(&self, kind: AccessKind, range: std::ops::Range<usize>) -> Access {
        Access::new(
            self.ptr as usize + range.start * self.elem_size,
            (range.end - range.start) * self.elem_size,
            kind,
        )
    }

    fn poison_list(&self) -> std::sync::MutexGuard<'_, Vec<(Range<usize>, Failure)>> {
        self.poison.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The failure of a poisoned range that overlaps `range`, if any.
    pub(crate) fn poisoned_in(&self, range: &Range<usize>) -> Option<Failure> {
        self.poison_list()
            .iter()
            .find(|(r, _)| r.start < range.end && range.start < r.end)
            .map(|(_, f)| f.clone())
    }

    /// Poisons `range` with `failure`.
    pub(crate) fn poison(&self, range: Range<usize>, failure: Failure) {
        if range.start < range.end {
            self.poison_list().push((range, failure));
        }
    }

    /// Forgets the poisoned ranges that `range` overwrote whole.
    pub(crate) fn heal(&self, range: &Range<usize>) {
        self.poison_list()
            .retain(|(r, _)| !(range.start <= r.start && r.end <= range.end));
    }

    pub(crate) fn describe(&self) -> String {
        format!("a buffer of {} {}", self.len, self.elem)
    }
}

impl<T: Element> Buffer<T> {
    pub(crate) fn new(context: &Context, len: usize, place: Place) -> Result<Self, Error> {
        if len == 0 {
            return Err(Error::Empty("a buffer"));
        }
        if size_of::<T>() == 0 {
            return Err(Error::Setting(format!(
                "a buffer of {} (a zero-sized type) holds nothing",
                type_name::<T>()
            )));
        }
        let mut memory = NumaVec::<T>::zeroed(len, place)?;
        let ptr = memory.as_mut_ptr().cast::<u8>();
        Ok(Buffer {
            raw: Arc::new(RawBuffer {
                context: context.id(),
                ptr,
                len,
                elem_size: size_of::<T>(),
                elem: type_name::<T>(),
                type_id: std::any::TypeId::of::<T>(),
                place,
                poison: Mutex::new(Vec::new()),
                _memory: Box::new(memory),
            }),
            _type: std::marker::PhantomData,
        })
    }

    /// Elements.
    pub fn len(&self) -> usize {
        self.raw.len
    }

    /// Always `false`: a buffer has at least one element.
    pub fn is_empty(&self) -> bool {
        false
    }

    /// Where its pages are: a distribution or a node.
    pub fn place(&self) -> Place {
        self.raw.place
    }

    /// The failure that poisoned some of its elements, if a command writing them failed
    /// (see above).
    pub fn poisoned(&self) -> Option<Failure> {
        self.raw.poisoned_in(&(0..self.raw.len))
    }

    /// The address of its first element, for asking the allocator where its pages are
    /// (`numatask_alloc::node_bytes`); reading or writing through it races with commands.
    pub fn as_ptr(&self) -> *const T {
        self.raw.ptr.cast_const().cast()
    }

    pub(crate) fn check_context(&self, context: u64) -> Result<(), Error> {
        if self.raw.context == context {
            Ok(())
        } else {
            Err(Error::OtherContext(self.raw.describe()))
        }
    }
}

impl<T: Element> fmt::Debug for Buffer<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Buffer")
            .field("elem", &self.raw.elem)
            .field("len", &self.raw.len)
            .field("place", &self.raw.place)
            .finish()
    }
}
