#!/usr/bin/env bash
# The core paper's evaluation (its Figure 7) at small sizes, twice:
#   1. measured on this machine: the six Table 4 benchmarks under {ws, locality} x
#      {standard, fine, coarse}, time normalized to work stealing with fine distribution;
#   2. on the paper's 8-node Opteron 6172 machine as a synthetic topology
#      (NUMATASK_TOPOLOGY=preset:opteron6172): the NUMA cost MODEL of
#      bench/src/paper/cost_model.rs, evaluated from traced, time-dilated runs, and compared
#      with the orderings the paper reports. The preset's Chrome traces (Perfetto timelines) are
#      left in target/paper-traces/.
# Every run verifies its results against a sequential computation. Arguments go to both runs,
# e.g. `scripts/paper-demo.sh --size medium` or `scripts/paper-demo.sh --only map,matmul`.
# Installs the build packages it needs when run as root (otherwise it stops with the apt-get
# command to run).
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"
# shellcheck source=scripts/lib/packages.sh
source scripts/lib/packages.sh
ensure_packages "${BUILD_PACKAGES[@]}"
# Compiling first, with cargo's progress shown (minutes the first time); the runs then start at
# once.
cargo bench -p numatask-bench --bench paper --no-run
echo "== this machine, measured"
cargo bench --quiet -p numatask-bench --bench paper -- --size small "$@"
echo
echo "== the paper's 8-node machine (synthetic preset), MODEL"
# The traces' directory named from here: cargo runs the bench in bench/.
NUMATASK_TOPOLOGY=preset:opteron6172 cargo bench --quiet -p numatask-bench --bench paper -- \
    --size small --trace-dir "$ROOT/target/paper-traces" "$@"
