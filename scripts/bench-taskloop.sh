#!/usr/bin/env bash
# Loop overhead (taskloop), numatask against rayon and C/OpenMP (libgomp, LLVM libomp) in one run.
# Builds bench/c/taskloop_omp.c with each OpenMP compiler found (gcc -fopenmp; clang -fopenmp with
# Debian's libomp-dev), then runs the bench binary. Arguments go to the bench binary, e.g.
#   scripts/bench-taskloop.sh --n 4194304 --grain 256,4096 --threads 1,2 --reps 9
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"
out=target/bench-c
mkdir -p "$out"
omp=()
if command -v gcc >/dev/null; then
    gcc -O3 -fopenmp -DRUNTIME_NAME='"libgomp"' bench/c/taskloop_omp.c -o "$out/taskloop_gomp" && omp+=(--omp "$out/taskloop_gomp")
fi
if command -v clang >/dev/null && clang -fopenmp -x c /dev/null -fsyntax-only 2>/dev/null; then
    clang -O3 -fopenmp -DRUNTIME_NAME='"libomp"' bench/c/taskloop_omp.c -o "$out/taskloop_libomp" && omp+=(--omp "$out/taskloop_libomp")
else
    echo "clang with OpenMP not found: LLVM libomp is skipped (apt-get install clang libomp-dev)" >&2
fi
cargo bench --quiet --bench taskloop -- "${omp[@]}" "$@"
