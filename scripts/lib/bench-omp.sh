# shellcheck shell=bash
# bench_omp NAME ARGS...: a benchmark whose C/OpenMP peer is one file, bench/c/NAME_omp.c (fib,
# taskloop), numatask against it in one run. The peer is built with each OpenMP compiler found
# (gcc -fopenmp for libgomp; clang -fopenmp with Debian's libomp-dev for LLVM libomp) into
# target/bench-c/NAME_gomp and NAME_libomp; then the bench NAME of the numatask-bench crate
# (bench/benches/NAME.rs) runs with ARGS.
bench_omp() {
    local name=$1
    shift
    # Absolute: cargo runs a bench in its package's directory (bench/), not here.
    local out=$PWD/target/bench-c
    mkdir -p "$out"
    local omp=()
    if command -v gcc >/dev/null; then
        gcc -O3 -fopenmp -DRUNTIME_NAME='"libgomp"' "bench/c/${name}_omp.c" -o "$out/${name}_gomp" &&
            omp+=(--omp "$out/${name}_gomp")
    fi
    if command -v clang >/dev/null && clang -fopenmp -x c /dev/null -fsyntax-only 2>/dev/null; then
        clang -O3 -fopenmp -DRUNTIME_NAME='"libomp"' "bench/c/${name}_omp.c" -o "$out/${name}_libomp" &&
            omp+=(--omp "$out/${name}_libomp")
    else
        echo "clang with OpenMP not found: LLVM libomp is skipped (apt-get install clang libomp-dev)" >&2
    fi
    cargo bench --quiet -p numatask-bench --bench "$name" -- "${omp[@]}" "$@"
}
