#!/usr/bin/env bash
# Blocked Cholesky with dependent tasks, numatask against C/OpenMP (libgomp, LLVM libomp) in one run,
# all calling the same C kernels (bench/c/cholesky_kernels.c, one object code). Builds
# bench/c/cholesky_omp.c with each OpenMP compiler found (gcc -fopenmp; clang -fopenmp with
# Debian's libomp-dev), then runs the bench binary, which checks that every checksum agrees.
# BENCH_BUILD_ONLY=1 builds the C peers, prints their paths and stops. Arguments go to the
# bench binary, e.g.
#   scripts/bench-cholesky.sh --nt 40 --bs 64 --threads 1,2 --reps 3
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
    -c bench/c/cholesky_kernels.c -o "$out/cholesky_kernels.o"
src=(bench/c/cholesky_omp.c "$out/cholesky_kernels.o")
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
if [[ -n ${BENCH_BUILD_ONLY:-} ]]; then
    # For carrying to another machine: the peers are in $out; the bench binary comes from
    # `cargo bench --bench cholesky --no-run`.
    printf '%s\n' "${omp[@]}" | grep -v '^--omp$'
    exit 0
fi
cargo bench --quiet --bench cholesky -- "${omp[@]}" "$@"
