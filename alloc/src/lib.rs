//! Topology and allocator.
