#!/usr/bin/env bash
# fib(n) spawn overhead, numatask against rayon and C/OpenMP (libgomp, LLVM libomp) in one run.
# Builds bench/c/fib_omp.c with each OpenMP compiler found (gcc -fopenmp; clang -fopenmp with
# Debian's libomp-dev), then runs the bench binary. Arguments go to the bench binary, e.g.
#   scripts/bench-fib.sh --n 27 --threads 1,2 --reps 5
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"
out=target/bench-c
mkdir -p "$out"
omp=()
if command -v gcc >/dev/null; then
    gcc -O3 -fopenmp -DRUNTIME_NAME='"libgomp"' bench/c/fib_omp.c -o "$out/fib_gomp" && omp+=(--omp "$out/fib_gomp")
fi
if command -v clang >/dev/null && clang -fopenmp -x c /dev/null -fsyntax-only 2>/dev/null; then
    clang -O3 -fopenmp -DRUNTIME_NAME='"libomp"' bench/c/fib_omp.c -o "$out/fib_libomp" && omp+=(--omp "$out/fib_libomp")
else
    echo "clang with OpenMP not found: LLVM libomp is skipped (apt-get install clang libomp-dev)" >&2
fi
cargo bench --quiet --bench fib -- "${omp[@]}" "$@"
