#!/usr/bin/env bash
# Blocked Cholesky with dependent tasks, numatask against C/OpenMP (libgomp, LLVM libomp) in one run,
# all calling the same C kernels (bench/c/cholesky_kernels.c). Builds bench/c/cholesky_omp.c
# with each OpenMP compiler found (gcc -fopenmp; clang -fopenmp with Debian's libomp-dev), then
# runs the bench binary, which checks that every checksum agrees. Arguments go to the bench
# binary, e.g.
#   scripts/bench-cholesky.sh --nt 40 --bs 64 --threads 1,2 --reps 3
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"
out=target/bench-c
mkdir -p "$out"
src=(bench/c/cholesky_omp.c bench/c/cholesky_kernels.c)
omp=()
if command -v gcc >/dev/null; then
    gcc -O3 -fopenmp -DRUNTIME_NAME='"libgomp"' -Ibench/c "${src[@]}" -o "$out/cholesky_gomp" -lm &&
        omp+=(--omp "$out/cholesky_gomp")
fi
if command -v clang >/dev/null && clang -fopenmp -x c /dev/null -fsyntax-only 2>/dev/null; then
    clang -O3 -fopenmp -DRUNTIME_NAME='"libomp"' -Ibench/c "${src[@]}" -o "$out/cholesky_libomp" -lm &&
        omp+=(--omp "$out/cholesky_libomp")
else
    echo "clang with OpenMP not found: LLVM libomp is skipped (apt-get install clang libomp-dev)" >&2
fi
cargo bench --quiet --bench cholesky -- "${omp[@]}" "$@"
