#!/usr/bin/env bash
# The main demo, in two parts:
#  1. where each distribution policy puts pages, on this machine and on the core paper's 8-node
#     machine (a synthetic preset): `cargo run --release --example placement`;
#  2. the paper's six benchmarks (Table 4) with both schedulers and the three distributions at
#     small sizes: measured on this machine, and as the NUMA cost MODEL on the 8-node preset
#     (scripts/paper-demo.sh), about a minute on 2 cores, after about another minute of
#     compiling the first time.
# Installs the build packages it needs when run as root (otherwise it stops with the apt-get
# command to run).
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"
# shellcheck source=scripts/lib/packages.sh
source scripts/lib/packages.sh
ensure_packages "${BUILD_PACKAGES[@]}"
# Compiling first, with cargo's progress shown (a minute the first time), then the program's
# output alone.
cargo build --release --example placement
echo "=== 1. pages per NUMA node for each distribution policy"
cargo run --release --quiet --example placement
echo
echo "=== 2. the paper's benchmarks: ws / locality x standard / fine / coarse"
scripts/paper-demo.sh
