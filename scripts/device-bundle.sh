#!/usr/bin/env bash
# Builds everything the many-core measurements need into device-bundle/ (ignored by git), to be
# carried to a machine without Rust: the release bench binaries of the numatask-bench crate
# (fib, sparselu, cholesky, qr and any other harness-less bench of bench/benches/), the C/OpenMP
# peers built with gcc (libgomp) and clang (LLVM libomp), clang's libomp.so.5, which such
# machines often lack, and scripts/device-run.sh as run.sh, the measurements behind
# BENCHMARKS.md's summary. Where the OpenCL headers are installed here, also the kernel
# executor's OpenCL peer ocl_bench (bench/c/ocl_bench.c) and the ICD loader it links, for the
# pocl installed there; with BUNDLE_INTEL_OPENCL=1, Intel's CPU OpenCL runtime besides, pared
# to the files it opens, as a separate archive, intel-opencl.tar.xz (about 53 MiB, several
# times the rest of the bundle: kept apart, so that the bundle stays small to carry when the
# runtime is not wanted; run.sh kernels unpacks it). There:
#   device-bundle/run.sh peers      (or overhead, loops, kernels; see scripts/device-run.sh)
# or one bench by hand:
#   cd device-bundle && LD_LIBRARY_PATH=$PWD/lib ./fib --bench --n 30 --threads 1,2,4,8,16,32 \
#       --omp ./fib_gomp --omp ./fib_libomp
#
# With --kernels, only what `run.sh kernels` and `run.sh alloc` need, small enough to carry with Intel's runtime
# (about 56 MiB): the kernels benches (kernels, and kernel_suite once bench/benches has it),
# ocl_bench, the ICD loader and intel-opencl.tar.xz, packed once and kept in target/ for later
# bundles; with BUNDLE_GRAPHS=1 besides, what `run.sh graphs` needs (the dependent-task benches
# and their C peers, about 6 MiB more).
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"
out=device-bundle
rm -rf "$out" && mkdir -p "$out/lib"

# Intel's CPU OpenCL runtime, pared to the files it opens, as $out/intel-opencl.tar.xz.
# One xz stream with a dictionary larger than the whole input (315 MB), so that code the
# libraries share compresses once; a single thread, as more threads would cut the input into
# blocks compressed apart. Takes about 5 minutes and 3.5 GB of memory, for 53 MiB (unpacking
# takes seconds); kept as target/intel-opencl.tar.xz and reused.
bundle_intel_opencl() {
    local kept=$ROOT/target/intel-opencl.tar.xz
    if [[ ! -s $kept ]]; then
        local venv=$ROOT/target/intel-opencl-venv pack=$ROOT/target/intel-opencl-pack
        install_intel_opencl "$venv"
        rm -rf "$pack" && pack_intel_opencl "$venv/lib" "$pack" "${INTEL_OPENCL_ARCHES:-z0 z1 l9}"
        tar cf - -C "$pack" . | xz -T1 --lzma2=preset=9e,dict=400MiB >"$kept.part"
        mv "$kept.part" "$kept"
    fi
    cp "$kept" "$out/intel-opencl.tar.xz"
}

# The OpenCL peers: ocl_bench and ocl-icd's loader (a host with pocl has it; one without
# still runs Intel's runtime through it).
bundle_opencl_peers() {
    if opencl_headers; then
        build_ocl_bench "$out/ocl_bench"
        cp "$(gcc -print-file-name=libOpenCL.so.1)" "$out/lib/" 2>/dev/null ||
            cp /usr/lib/x86_64-linux-gnu/libOpenCL.so.1 "$out/lib/"
    else
        echo "no OpenCL headers here (apt-get install opencl-headers ocl-icd-opencl-dev): no ocl_bench" >&2
    fi
}

# shellcheck source=scripts/lib/opencl.sh
source scripts/lib/opencl.sh
# The C/OpenMP peers of the dependent-task benches: SparseLU's, Cholesky's and QR's kernels are
# compiled once by gcc with the flags bench/build.rs (the cc crate) uses for numatask's driver,
# and that one object is linked into both OpenMP peers, so that the runtime is the only
# difference (as scripts/bench-sparselu.sh). The flags are KERNEL_CFLAGS of
# scripts/lib/bench-depend.sh. Also clang's libomp.so.5, which such machines often lack.
bundle_graph_peers() {
    local c=bench/c
    # shellcheck source=scripts/lib/bench-depend.sh
    source scripts/lib/bench-depend.sh
    for name in sparselu cholesky qr; do
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
}
if [[ ${1:-} == --kernels ]]; then
    benches=(kernels kernel_suite)
    [[ ${BUNDLE_GRAPHS:-} == 1 ]] && benches+=(sparselu cholesky qr)
    for bench in "${benches[@]}"; do
        [[ -f bench/benches/$bench.rs ]] || continue
        cargo bench -p numatask-bench --no-run --bench "$bench" --message-format=json 2>/dev/null |
            sed -n "s/.*\"executable\":\"\([^\"]*${bench}[^\"]*\)\".*/\1/p" | head -1 |
            while read -r exe; do cp "$exe" "$out/$bench" && strip "$out/$bench"; done
    done
    # The allocator's bench (`run.sh alloc`).
    cargo bench -p numatask-alloc --no-run --bench alloc --message-format=json 2>/dev/null |
        sed -n 's/.*"executable":"\([^"]*alloc-[^"]*\)".*/\1/p' | head -1 |
        while read -r exe; do cp "$exe" "$out/alloc_bench" && strip "$out/alloc_bench"; done
    if [[ ${BUNDLE_GRAPHS:-} == 1 ]]; then
        bundle_graph_peers
        cp scripts/trace-busy.py "$out/"
    fi
    bundle_opencl_peers
    bundle_intel_opencl
    cp scripts/device-run.sh "$out/run.sh"
    ls -la "$out"
    exit 0
fi
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
# fib's and taskloop's C peers are one file each.
gcc -O3 -fopenmp -DRUNTIME_NAME='"libgomp"' "$c/fib_omp.c" -o "$out/fib_gomp"
clang -O3 -fopenmp -DRUNTIME_NAME='"libomp"' "$c/fib_omp.c" -o "$out/fib_libomp"
gcc -O3 -fopenmp -DRUNTIME_NAME='"libgomp"' "$c/taskloop_omp.c" -o "$out/taskloop_gomp"
clang -O3 -fopenmp -DRUNTIME_NAME='"libomp"' "$c/taskloop_omp.c" -o "$out/taskloop_libomp"
gcc -O2 -fopenmp "$c/compute_scaling.c" -o "$out/compute_scaling"
bundle_graph_peers
bundle_opencl_peers
if [[ ${BUNDLE_INTEL_OPENCL:-} == 1 ]]; then
    bundle_intel_opencl
fi
cp scripts/device-run.sh "$out/run.sh"
cp scripts/trace-busy.py "$out/"
ls -la "$out"
