#!/usr/bin/env bash
# fib(n) spawn overhead, numatask against rayon and C/OpenMP (libgomp, LLVM libomp) in one run.
# Builds bench/c/fib_omp.c with each OpenMP compiler found (gcc -fopenmp; clang -fopenmp with
# Debian's libomp-dev), then runs the bench binary. Arguments go to the bench binary, e.g.
#   scripts/bench-fib.sh --n 27 --threads 1,2 --reps 5
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
# shellcheck source=scripts/lib/bench-omp.sh
source scripts/lib/bench-omp.sh
bench_omp fib "$@"
