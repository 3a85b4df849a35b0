#!/usr/bin/env bash
# Tiled QR with dependent tasks (PLASMA's geqrt, ormqr, tsqrt, tsmqr), numatask against
# C/OpenMP (libgomp, LLVM libomp) in one run, all calling the same C kernels
# (bench/c/qr_kernels.c, one object code). Builds bench/c/qr_omp.c with each OpenMP compiler
# found (gcc -fopenmp; clang -fopenmp with Debian's libomp-dev), then runs the bench binary,
# which checks that every checksum agrees. BENCH_BUILD_ONLY=1 builds the C peers, prints their
# paths and stops. Arguments go to the bench binary, e.g.
#   scripts/bench-qr.sh --nt 16 --bs 128 --threads 1,2 --reps 3
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
# shellcheck source=scripts/lib/bench-depend.sh
source scripts/lib/bench-depend.sh
bench_depend qr "$@"
