#!/usr/bin/env bash
# Loop overhead (taskloop), numatask against rayon and C/OpenMP (libgomp, LLVM libomp) in one run.
# Builds bench/c/taskloop_omp.c with each OpenMP compiler found (gcc -fopenmp; clang -fopenmp with
# Debian's libomp-dev), then runs the bench binary. Arguments go to the bench binary, e.g.
#   scripts/bench-taskloop.sh --n 4194304 --grain 256,4096 --threads 1,2 --reps 9
#   scripts/bench-taskloop.sh --reduce --n 1000000 --grain 1024,16384 --threads 1,2 --reps 9
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
# shellcheck source=scripts/lib/bench-omp.sh
source scripts/lib/bench-omp.sh
bench_omp taskloop "$@"
