#!/usr/bin/env bash
# The main demo: where each distribution policy puts pages, on this machine and on the core
# paper's 8-node machine (a synthetic preset). Installs the build packages it needs when run as
# root (otherwise it stops with the apt-get command to run).
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"
# shellcheck source=scripts/lib/packages.sh
source scripts/lib/packages.sh
ensure_packages "${BUILD_PACKAGES[@]}"
cargo run --release --quiet --example placement
