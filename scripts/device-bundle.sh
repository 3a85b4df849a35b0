#!/usr/bin/env bash
# Builds everything the many-core measurements need into device-bundle/ (ignored by git), to be
# carried to a machine without Rust: the release bench binaries of the numatask-bench crate
# (fib, sparselu, cholesky and any other harness-less bench of bench/benches/), the C/OpenMP
# peers built with gcc (libgomp) and clang (LLVM libomp), clang's libomp.so.5, which such
# machines often lack, and scripts/device-run.sh as run.sh, the measurements behind
# BENCHMARKS.md's summary. There:
#   device-bundle/run.sh peers      (or overhead, loops; see scripts/device-run.sh)
# or one bench by hand:
#   cd device-bundle && LD_LIBRARY_PATH=$PWD/lib ./fib --bench --n 30 --threads 1,2,4,8,16,32 \
#       --omp ./fib_gomp --omp ./fib_libomp
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"
out=device-bundle
rm -rf "$out" && mkdir -p "$out/lib"
cargo bench -p numatask-bench --no-run --message-format=json 2>/dev/null |
    grep '"kind":\["bench"\]' | grep '"harness":false\|"test":false' |
    sed -n 's/.*"name":"\([a-z_]*\)".*"executable":"\([^"]*\)".*/\1 \2/p' |
    while read -r name exe; do
        cp "$exe" "$out/$name" && strip "$out/$name"
    done
# SparseLU once more with mimalloc as the global allocator (the rows `numatask+mimalloc`), to
# tell the runtime's cost from glibc malloc's under a producer that many threads free after.
cargo bench -p numatask-bench --no-run --features bench-mimalloc --bench sparselu \
    --message-format=json 2>/dev/null |
    sed -n 's/.*"executable":"\([^"]*sparselu[^"]*\)".*/\1/p' | head -1 |
    while read -r exe; do cp "$exe" "$out/sparselu_mimalloc" && strip "$out/sparselu_mimalloc"; done
c=bench/c
# fib's and taskloop's C peers are one file each; SparseLU's and Cholesky's kernels are compiled once by gcc with the
# flags bench/build.rs (the cc crate) uses for numatask's driver, and that one object is linked into
# both OpenMP peers, so that the runtime is the only difference (as scripts/bench-sparselu.sh).
# The flags are KERNEL_CFLAGS of scripts/lib/bench-depend.sh.
# shellcheck source=scripts/lib/bench-depend.sh
source scripts/lib/bench-depend.sh
gcc -O3 -fopenmp -DRUNTIME_NAME='"libgomp"' "$c/fib_omp.c" -o "$out/fib_gomp"
clang -O3 -fopenmp -DRUNTIME_NAME='"libomp"' "$c/fib_omp.c" -o "$out/fib_libomp"
gcc -O3 -fopenmp -DRUNTIME_NAME='"libgomp"' "$c/taskloop_omp.c" -o "$out/taskloop_gomp"
clang -O3 -fopenmp -DRUNTIME_NAME='"libomp"' "$c/taskloop_omp.c" -o "$out/taskloop_libomp"
gcc -O2 -fopenmp "$c/compute_scaling.c" -o "$out/compute_scaling"
for name in sparselu cholesky; do
    [[ -f $c/${name}_omp.c ]] || continue
    gcc "${KERNEL_CFLAGS[@]}" -I"$c" \
        -c "$c/${name}_kernels.c" -o "$out/${name}_kernels.o"
    gcc -O3 -fopenmp -DRUNTIME_NAME='"libgomp"' -I"$c" "$c/${name}_omp.c" "$out/${name}_kernels.o" \
        -o "$out/${name}_gomp" -lm
    clang -O3 -fopenmp -DRUNTIME_NAME='"libomp"' -I"$c" "$c/${name}_omp.c" "$out/${name}_kernels.o" \
        -o "$out/${name}_libomp" -lm
    rm "$out/${name}_kernels.o"
done
cp "$(clang -print-file-name=libomp.so.5 2>/dev/null || echo /usr/lib/llvm-14/lib/libomp.so.5)" "$out/lib/" 2>/dev/null ||
    cp /usr/lib/llvm-14/lib/libomp.so.5 "$out/lib/"
cp scripts/device-run.sh "$out/run.sh"
cp scripts/trace-busy.py "$out/"
ls -la "$out"
