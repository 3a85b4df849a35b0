#!/usr/bin/env bash
# Blocked Cholesky with dependent tasks, numatask against C/OpenMP (libgomp, LLVM libomp) in one run,
# all calling the same C kernels (bench/c/cholesky_kernels.c, one object code). Builds
# bench/c/cholesky_omp.c with each OpenMP compiler found (gcc -fopenmp; clang -fopenmp with
# Debian's libomp-dev), then runs the bench binary, which checks that every checksum agrees.
# BENCH_BUILD_ONLY=1 builds the C peers, prints their paths and stops. Arguments go to the
# bench binary, e.g.
#   scripts/bench-cholesky.sh --nt 40 --bs 64 --threads 1,2 --reps 3
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
# shellcheck source=scripts/lib/bench-depend.sh
source scripts/lib/bench-depend.sh
bench_depend cholesky "$@"
