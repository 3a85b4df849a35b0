#!/usr/bin/env bash
# SparseLU with dependent tasks, numatask against C/OpenMP (libgomp, LLVM libomp) in one run,
# all calling the same C kernels (bench/c/sparselu_kernels.c, one object code). Builds
# bench/c/sparselu_omp.c with each OpenMP compiler found (gcc -fopenmp; clang -fopenmp with
# Debian's libomp-dev), then runs the bench binary, which checks that every checksum agrees.
# BENCH_BUILD_ONLY=1 builds the C peers, prints their paths and stops. Arguments go to the
# bench binary, e.g.
#   scripts/bench-sparselu.sh --nb 120 --bs 25 --threads 1,2 --reps 3      # fine
#   scripts/bench-sparselu.sh --nb 50 --bs 100 --threads 1,2 --reps 1      # coarse
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"
out=target/bench-c
mkdir -p "$out"
# The kernels are compiled once, by the compiler and with the code-generation flags that
# build.rs (the cc crate) uses for numatask's driver (gcc by default), and that object is linked
# into every peer: the runtime is then the only difference (clang's code for the same kernels
# runs at another speed).
cc_kernels=${CC:-gcc}
"$cc_kernels" -O3 -ffunction-sections -fdata-sections -fPIC -fno-omit-frame-pointer -Ibench/c \
    -c bench/c/sparselu_kernels.c -o "$out/sparselu_kernels.o"
src=(bench/c/sparselu_omp.c "$out/sparselu_kernels.o")
omp=()
if command -v gcc >/dev/null; then
    gcc -O3 -fopenmp -DRUNTIME_NAME='"libgomp"' -Ibench/c "${src[@]}" -o "$out/sparselu_gomp" &&
        omp+=(--omp "$out/sparselu_gomp")
fi
if command -v clang >/dev/null && clang -fopenmp -x c /dev/null -fsyntax-only 2>/dev/null; then
    clang -O3 -fopenmp -DRUNTIME_NAME='"libomp"' -Ibench/c "${src[@]}" -o "$out/sparselu_libomp" &&
        omp+=(--omp "$out/sparselu_libomp")
else
    echo "clang with OpenMP not found: LLVM libomp is skipped (apt-get install clang libomp-dev)" >&2
fi
if [[ -n ${BENCH_BUILD_ONLY:-} ]]; then
    # For carrying to another machine: the peers are in $out; the bench binary comes from
    # `cargo bench --bench sparselu --no-run`.
    printf '%s\n' "${omp[@]}" | grep -v '^--omp$'
    exit 0
fi
cargo bench --quiet --bench sparselu -- "${omp[@]}" "$@"
