# shellcheck shell=bash
# bench_depend NAME ARGS...: a dependent-task benchmark (NAME = sparselu, cholesky or qr), numatask
# against C/OpenMP (libgomp, LLVM libomp) in one run, all calling the same kernel object code.
# The kernels bench/c/NAME_kernels.c are compiled once, by the compiler and with the
# code-generation flags that bench/build.rs (the cc crate) uses for numatask's driver (gcc by default),
# and that object is linked into every peer: the runtime is then the only difference (clang's
# code for the same kernels runs at another speed). bench/c/NAME_omp.c is built with each OpenMP
# compiler found (gcc -fopenmp; clang -fopenmp with Debian's libomp-dev); then the bench binary
# runs, and checks that every checksum agrees. BENCH_BUILD_ONLY=1 builds the C peers, prints
# their paths and stops.
# The kernels' code-generation flags, bench/build.rs's (the cc crate's) for numatask's copy; also
# used by scripts/device-bundle.sh. -falign-functions=64: every kernel starts a 64-byte line in
# every binary (bench/build.rs says why).
KERNEL_CFLAGS=(-O3 -ffunction-sections -fdata-sections -fPIC -fno-omit-frame-pointer -falign-functions=64)
bench_depend() {
    local name=$1
    shift
    # Absolute: cargo runs a bench in its package's directory (bench/), not here.
    local out=$PWD/target/bench-c
    mkdir -p "$out"
    "${CC:-gcc}" "${KERNEL_CFLAGS[@]}" -Ibench/c \
        -c "bench/c/${name}_kernels.c" -o "$out/${name}_kernels.o"
    local src=("bench/c/${name}_omp.c" "$out/${name}_kernels.o")
    local omp=()
    if command -v gcc >/dev/null; then
        gcc -O3 -fopenmp -DRUNTIME_NAME='"libgomp"' -Ibench/c "${src[@]}" -o "$out/${name}_gomp" -lm &&
            omp+=(--omp "$out/${name}_gomp")
    fi
    if command -v clang >/dev/null && clang -fopenmp -x c /dev/null -fsyntax-only 2>/dev/null; then
        clang -O3 -fopenmp -DRUNTIME_NAME='"libomp"' -Ibench/c "${src[@]}" -o "$out/${name}_libomp" -lm &&
            omp+=(--omp "$out/${name}_libomp")
    else
        echo "clang with OpenMP not found: LLVM libomp is skipped (apt-get install clang libomp-dev)" >&2
    fi
    if [[ -n ${BENCH_BUILD_ONLY:-} ]]; then
        # For carrying to another machine: the peers are in $out; the bench binary comes from
        # `cargo bench -p numatask-bench --bench NAME --no-run`.
        printf '%s\n' "${omp[@]}" | grep -v '^--omp$'
        return 0
    fi
    cargo bench --quiet -p numatask-bench --bench "$name" -- "${omp[@]}" "$@"
}
