#!/usr/bin/env bash
# Runs the runtime's tests under ThreadSanitizer: every data race it sees, in the runtime or in
# what the tests do through its safe API, fails the run. ThreadSanitizer models Release/Acquire
# pairs but not standalone fences, so the runtime orders data through the former (its SeqCst
# fences order flags against flags: the deque's last-element race, the sleep protocol). Not
# part of CI (it needs the nightly toolchain with rust-src to build an instrumented standard
# library, and takes about fifteen minutes on 2 cores); run it after touching atomics.
# TESTS="tasks depend_tasks" picks the test files (default: every file below).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
sysroot=$(rustc +nightly --print sysroot 2>/dev/null || true)
if [[ -z $sysroot || ! -d $sysroot/lib/rustlib/src/rust/library ]]; then
    echo "the nightly toolchain with rust-src is missing: rustup toolchain install nightly && rustup component add --toolchain nightly rust-src" >&2
    exit 2
fi
tests=${TESTS:-tasks taskwait panics taskloop priority locality depend_tasks miri_tasks miri_loop miri_extra miri_locality shutdown global}
args=(--lib)
for t in $tests; do args+=(--test "$t"); done
target=$(rustc -vV | sed -n 's/^host: //p')
# halt_on_error: the first report fails the test binary (exit code 66).
RUSTFLAGS="-Zsanitizer=thread" TSAN_OPTIONS="halt_on_error=1 ${TSAN_OPTIONS:-}" \
    cargo +nightly test -Zbuild-std --target "$target" --target-dir target/tsan \
    -p numatask-sched "${args[@]}"
