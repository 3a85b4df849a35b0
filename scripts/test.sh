#!/usr/bin/env bash
# Every test of numatask, as CI runs them: formatting and lints, the unit, integration and doc
# tests of every crate, the loom model checks, and the multi-node placement tests inside QEMU
# guests with 4 and 8 NUMA nodes. Installs the Debian/Ubuntu packages it needs when run as root
# (otherwise it stops with the apt-get command to run).
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"
# shellcheck source=scripts/lib/packages.sh
source scripts/lib/packages.sh
# All at once, the QEMU guests' too: a missing package stops the run before, not after, the
# long steps.
ensure_packages "${VM_PACKAGES[@]}"

step() { printf '\n== %s (%s)\n' "$1" "$(date +%T)"; }
start=$SECONDS
# The steps' scratch files, removed however the run ends.
scratch=$(mktemp -d "${TMPDIR:-/tmp}/numatask-test.XXXXXX")
trap 'rm -rf "$scratch"' EXIT
target_dir=${CARGO_TARGET_DIR:-target}

step "cargo fmt --check"
cargo fmt --all -- --check

step "cargo clippy"
cargo clippy --workspace --all-targets --quiet -- -D warnings

step "unit, integration and doc tests"
cargo test --workspace --quiet

step "#[kernel] suite against its reference executor, each instruction-set version"
# The run above used the best version this processor has; the others must give the same bits.
for isa in baseline v3; do
    NUMATASK_KERNEL_ISA=$isa cargo test -p numatask-kernels --test macro_suite --quiet
done

step "the examples end quietly on a closed pipe (as C programs do), not with a panic"
# Each writes after its reader is gone (true exits at once), so it must die of SIGPIPE
# (status 141) with nothing on stderr. (`cargo test` builds the examples with `test = true`
# as test harnesses, not as the programs.) The bench crate's paper program is one of them.
cargo build --examples --quiet
cargo build -p numatask-bench --bin paper --quiet
for ex in "examples/fib 10 1" "examples/placement" "paper --help"; do
    set +o pipefail
    # shellcheck disable=SC2086 # $ex is a program and its arguments
    { sleep 1; "$target_dir"/debug/$ex; } 2>"$scratch/pipe.err" | true
    status=${PIPESTATUS[0]}
    set -o pipefail
    if [[ $status != 141 || -s $scratch/pipe.err ]]; then
        echo "$ex into a closed pipe: status $status (expected 141, SIGPIPE)" >&2
        cat "$scratch/pipe.err" >&2
        exit 1
    fi
done

step "the allocator's C API from C, through its header (feature c-api)"
# The C program is compiled by the bench crate's build script: the published crates build no C.
cargo test -p numatask-bench --features c-api --test c_api --quiet

step "the allocator's C API from a C program linked against the static library"
cargo rustc -p numatask-alloc --features c-api --release --crate-type staticlib --quiet
cc -O2 -Wall -Werror -Ialloc/include tests/c/alloc_api.c tests/c/alloc_api_main.c \
    "$target_dir/release/libnumatask_alloc.a" -lhwloc -ludev -lpthread -ldl -lm \
    -o "$target_dir/release/alloc_api_c"
"$target_dir/release/alloc_api_c"

step "API docs build without warnings (broken links)"
RUSTDOCFLAGS="-D warnings" cargo doc --workspace --no-deps --quiet

step "benchmarks compile and run once (their smoke run; criterion's --test mode)"
# The bench targets alone: `--benches` would run every library's unit tests a second time.
cargo test --workspace --bench '*' --quiet

step "loom model checks"
scripts/loom.sh

step "multi-node placement tests in QEMU guests"
scripts/numa-vm-test.sh

printf '\nall tests passed in %ss\n' $((SECONDS - start))
