#!/usr/bin/env bash
# Model-checks the scheduler's concurrent parts (sched/src/{deque,node_queue,sleep,blocking,child_counter,result_state}.rs and
# the dependence tracker sched/src/depend/) and the kernel executor's events (kernels/src/event.rs) with loom. A
# separate target directory keeps the normal build's artefacts valid. The models in
# loom-tests/tests/{deque,node_queue,sleep,blocking,child_counter,result_state,depend,kernels_event}.rs
# (every file there runs) explore at least 3 preemptions whatever
# LOOM_MAX_PREEMPTIONS says (numatask_loom_tests::model); a larger value here raises that.
set -euo pipefail
cd "$(dirname "$0")/.."
export RUSTFLAGS="--cfg loom"
export LOOM_MAX_PREEMPTIONS="${LOOM_MAX_PREEMPTIONS:-2}"
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-target/loom}"
exec cargo test --release -p numatask-loom-tests "$@"
