//! Machine topology: NUMA nodes, their cores and memory, the node distance matrix and the
//! last-level cache, discovered through hwloc (the `hwlocality` bindings) or described
//! synthetically for tests and simulations.
//!
//! # Where a topology comes from
//!
//! [`Topology::current`] is the process-wide topology every other part of numatask uses. It is
//! read once, from the environment variable `NUMATASK_TOPOLOGY` when it is set, and from the real
//! machine otherwise. The variable accepts:
//!
//! | value | meaning |
//! |---|---|
//! | `system` | the real machine (the default); refused when one of hwloc's own variables (`HWLOC_SYNTHETIC`, `HWLOC_XMLFILE`, `HWLOC_FSROOT`, `HWLOC_CPUID_PATH`) makes hwloc describe another topology in its place |
//! | `preset:opteron6172` (or just `opteron6172`) | the core paper's machine, see [`Preset`] |
//! | `synthetic:<hwloc string>` | an hwloc synthetic description, e.g. `synthetic:pack:2 numa:2 core:4 pu:1`; at most 256 NUMA nodes, 16,384 processing units and 4,096 children per object |
//! | `xml:<path>` | an hwloc XML export, with its `distances2` matrix if it has one (a latency matrix, such as hwloc's `NUMALatency`, rather than one of unstated meaning; bandwidth matrices are ignored; a matrix that does not cover every NUMA node or fails the checks of [`TopologyBuilder::distances`] is an error; only a file without one gets the default 10 local / 20 remote) |
//!
//! [`TopologyBuilder`] does the same from code and can also set a distance matrix.
//!
//! # Synthetic topologies
//!
//! Anything that is not the real machine is *synthetic* ([`Topology::is_synthetic`]). On a
//! synthetic topology the allocator records where every page is meant to go but does not ask the
//! kernel to put it there, and [`Topology::pin_current_thread`] maps the topology's cores onto the
//! real machine's cores round-robin, so no thread is ever pinned to a PU that does not exist.
//!
//! # Indices
//!
//! Nodes are numbered `0..num_nodes()` in increasing OS index ([`NumaNode::os_index`] keeps the
//! OS number). That order is also the order in which the kernel interleaves pages over a node
//! mask, which is what lets the allocator's registry predict fine-distributed pages exactly.
//! Cores are numbered `0..num_cores()` node by node.
//!
//! # Layout
//!
//! One concept per file: `machine` holds the [`Topology`] type and its queries, `builder`
//! where a topology comes from, `discovery` how an hwloc topology is read into nodes and cores,
//! `distances` the distance matrix, `synthetic` and `preset` the descriptions of machines that
//! are not this one, `xml` the reading of hwloc XML files, `hwloc_env` hwloc's own
//! variables, and `pinning` the binding of threads.

mod builder;
mod discovery;
mod distances;
mod hwloc_env;
mod machine;
#[cfg(miri)]
mod miri_stub;
mod pinning;
mod preset;
mod synthetic;
mod xml;

pub use builder::{TopologyBuilder, TopologySource};
pub use distances::DistanceSource;
pub use machine::{Core, CoreGroup, NumaNode, TOPOLOGY_ENV, Topology};
pub use pinning::Pinning;
pub use preset::Preset;
