#!/usr/bin/env bash
# Runs the runtime's lock-free and unsafe data structures under Miri (undefined behaviour,
# aliasing, data races, leaks): the deque, the node queue, latches (the blocking one of scopes
# entered from outside included), the sleep protocol, taskloop's chunk arithmetic, the
# block cache and the dependence tracker. Task frames are not among them: they run only in a
# runtime, whose topology comes from hwloc. Not part of CI (Miri needs the nightly toolchain
# and its component, and these take a few minutes); run it after touching their unsafe code.
# The runtime as a whole reaches hwloc through FFI, which Miri cannot run; the tests with
# iteration counts too large for Miri use smaller ones under cfg(miri).
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
