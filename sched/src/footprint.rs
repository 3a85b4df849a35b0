//! [`Footprint`]: the data a task touches, given as a placement hint (OpenMP 5's `affinity`
//! clause, [`TaskBuilder::affinity`](crate::TaskBuilder::affinity)).

use crate::depend::{Access, AccessKind};

/// The byte ranges a task touches, for the locality-aware scheduler to place the task near
/// them ([`TaskBuilder::affinity`](crate::TaskBuilder::affinity)). A hint: it orders nothing,
/// and nothing checks that the task touches only these bytes.
///
/// ```
/// use numatask_sched::Footprint;
///
/// let a = vec![0.0f64; 1024];
/// let b = vec![0u8; 64];
/// let f = Footprint::of(&a).slice(&b).intensive(); // `b` is the most used part
/// assert_eq!(f.len(), 2);
/// assert_eq!(f.bytes_total(), 1024 * 8 + 64);
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Footprint {
    parts: Vec<Access>,
}

impl Footprint {
    /// An empty footprint.
    pub fn new() -> Self {
        Footprint::default()
    }

    /// The footprint of one slice's elements.
    pub fn of<T>(data: &[T]) -> Self {
        Footprint::new().slice(data)
    }

    /// Adds a slice's elements.
    pub fn slice<T>(self, data: &[T]) -> Self {
        self.bytes(data.as_ptr() as usize, size_of_val(data))
    }

    /// Adds the `len` bytes at address `addr` (data the program reaches through raw pointers
    /// or from C).
    pub fn bytes(mut self, addr: usize, len: usize) -> Self {
        self.parts.push(Access::new(addr, len, AccessKind::In));
        self
    }

    /// Marks the part added last as the task's most access-intensive one, which the
    /// locality-aware scheduler weighs first. Without parts it does nothing.
    pub fn intensive(mut self) -> Self {
        if let Some(last) = self.parts.pop() {
            self.parts.push(last.intensive());
        }
        self
    }

    /// Number of parts.
    pub fn len(&self) -> usize {
        self.parts.len()
    }

    /// Whether there are no parts.
    pub fn is_empty(&self) -> bool {
        self.parts.is_empty()
    }

    /// The bytes of all parts together (overlaps counted once per part).
    pub fn bytes_total(&self) -> usize {
        self.parts.iter().map(|a| a.len).sum()
    }

    /// The parts as the scheduler weighs them.
    pub(crate) fn into_accesses(self) -> Box<[Access]> {
        self.parts.into_boxed_slice()
    }
}
