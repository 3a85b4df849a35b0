#!/usr/bin/env bash
# Runs the runtime's lock-free and unsafe data structures under Miri (undefined behaviour,
# aliasing, data races, leaks): the deque, the node queue, latches (the blocking one of scopes
# entered from outside included), the sleep protocol, taskloop's chunk arithmetic, the
# block cache and the dependence tracker; then whole runtimes through the public API
# (sched/tests/miri_*.rs: tasks, handles, joins, dependences, taskloops, panics, the
# locality-aware scheduler), which CI runs natively too. Miri cannot call hwloc, mmap or
# move_pages, so under cfg(miri) the topology is a stub (alloc/src/topology.rs, `miri_stub`:
# MIRI_NODES nodes of MIRI_CORES cores, 2 and 2 by default), pinning does nothing, the
# allocator takes page-aligned memory from the global allocator and no page is resident.
# Not part of CI (Miri needs the nightly toolchain and its component, and these take about
# ten minutes); run it after touching unsafe code. The tests with iteration counts too large
# for Miri use smaller ones under cfg(miri). `SEEDS=0..5 scripts/miri.sh` runs the runtime
# tests on several schedules.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
if ! cargo +nightly miri --version >/dev/null 2>&1; then
    echo "Miri is missing: rustup toolchain install nightly && rustup component add --toolchain nightly miri rust-src" >&2
    exit 2
fi
flags="${MIRIFLAGS:--Zmiri-disable-isolation}"
MIRIFLAGS="$flags" cargo +nightly miri test -p numatask-sched --lib -- \
    deque:: node_queue:: child_counter:: latch:: blocking:: sleep:: depend:: dependences:: taskloop:: \
    --skip memory_follows_the_ranges_in_use_when_streaming \
    --skip ranges_used_again_and_again_are_kept
# The block cache's test leaks its pool on purpose.
MIRIFLAGS="$flags -Zmiri-ignore-leaks" cargo +nightly miri test -p numatask-sched --lib -- blocks::
# Whole runtimes. Leaks are ignored where a test leaks on purpose (a forgotten handle, the
# global runtime, panic payloads of destructors that panic; see each file).
export OMP_NUM_THREADS=2 OMP_WAIT_POLICY=passive
seeds="${SEEDS:+-Zmiri-many-seeds=$SEEDS}"
for t in miri_tasks miri_depend miri_loop; do
    MIRIFLAGS="$flags -Zmiri-permissive-provenance $seeds" \
        cargo +nightly miri test -p numatask-sched --test "$t" -- --test-threads=1
done
# The cancellation of dependent tasks after a panic, as the native suite checks it.
MIRIFLAGS="$flags -Zmiri-permissive-provenance $seeds" \
    cargo +nightly miri test -p numatask-sched --test depend_tasks -- --test-threads=1 \
    --exact a_panic_cancels_the_dependent_tasks_and_resumes_at_taskwait
for t in miri_extra miri_locality; do
    MIRIFLAGS="$flags -Zmiri-permissive-provenance -Zmiri-ignore-leaks $seeds" \
        cargo +nightly miri test -p numatask-sched --test "$t" -- --test-threads=1
done
