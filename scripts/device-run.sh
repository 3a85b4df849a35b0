#!/usr/bin/env bash
# The many-core measurements behind BENCHMARKS.md's summary, run on a machine without Rust from
# the bundle scripts/device-bundle.sh builds (which copies this file there as run.sh):
#   device-bundle/run.sh peers      # fib scaling, SparseLU fine and coarse, Cholesky, tiled QR: numatask against libgomp and libomp
#   device-bundle/run.sh overhead   # the paper's six benchmarks, locality-aware against work stealing; fib under both
#   device-bundle/run.sh loops      # taskloop and its reduction against rayon and the C peers; wake-up latency against rayon
#   device-bundle/run.sh scaling    # fib 30 and 34 from 1 to all threads, twice, against the machine's own compute scaling
#   device-bundle/run.sh coarse     # coarse SparseLU, numatask (balanced and active waiting) and the C peers in turn, 6 rounds
#   device-bundle/run.sh diagnose   # coarse SparseLU: CPU layout, each thread's CPU time, numatask unbound, a per-worker trace
#   device-bundle/run.sh alloc      # the allocator against glibc, mimalloc and libnuma
#   device-bundle/run.sh graphs     # long-task graphs (SparseLU, Cholesky, QR): traces, the peers' busy share, six rounds
#   device-bundle/run.sh kernels    # OpenCL peers of the kernel executor (pocl, Intel's CPU runtime): launch overhead, saxpy, the barrier suite
#   device-bundle/run.sh suite-turns  # the #[kernel] suite and Intel's runtime taking turns per thread count
# Each part runs in well under ten minutes on 32 cores. THREADS overrides the worker count (default: every CPU).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")"
export LD_LIBRARY_PATH=$PWD/lib
T=${THREADS:-$(nproc)}
part=${1:-peers}
section() { printf '\n== %s (%s)\n' "$1" "$(date -u +%H:%M:%S)"; }
# Intel's CPU runtime from the bundle's intel-opencl.tar.xz (unpacked once into intel-opencl/),
# named by an .icd file in opencl-vendors/ for OCL_ICD_VENDORS.
intel_icd() {
    if [[ -f intel-opencl.tar.xz && ! -e intel-opencl/libintelocl.so ]]; then
        mkdir -p intel-opencl && xz -dc intel-opencl.tar.xz | tar xf - -C intel-opencl
    fi
    mkdir -p opencl-vendors
    echo "$PWD/intel-opencl/libintelocl.so" >opencl-vendors/intel-cpu.icd
}
section "machine"
lscpu | grep -E '^(Model name|CPU\(s\)|Thread\(s\) per core|NUMA node\(s\)|L3 cache)' || true
case $part in
peers)
    section "fib 30, ns per task"
    ./fib --bench --n 30 --threads "1,2,4,8,16,$T" --reps 3 --omp ./fib_gomp --omp ./fib_libomp
    section "SparseLU fine (NB=120, BS=25), $T threads"
    ./sparselu --bench --nb 120 --bs 25 --threads "$T" --reps 5 --rounds 3 --skip empty,serial,raw \
        --omp ./sparselu_gomp --omp ./sparselu_libomp
    section "SparseLU fine, one thread"
    ./sparselu --bench --nb 120 --bs 25 --threads 1 --reps 3 --skip empty,raw
    section "SparseLU coarse (NB=50, BS=100), $T threads"
    ./sparselu --bench --nb 50 --bs 100 --threads "$T" --reps 3 --rounds 4 --skip empty,serial,raw \
        --omp ./sparselu_gomp --omp ./sparselu_libomp
    section "Cholesky, $T threads"
    ./cholesky --bench --threads "$T" --reps 5 --omp ./cholesky_gomp --omp ./cholesky_libomp
    section "Cholesky with task priorities on every side, $T threads"
    ./cholesky --bench --threads "$T" --reps 5 --skip serial --priority \
        --omp ./cholesky_gomp --omp ./cholesky_libomp
    section "tiled QR (NT=16, BS=128), $T threads"
    ./qr --bench --threads "$T" --reps 5 --omp ./qr_gomp --omp ./qr_libomp
    ;;
overhead)
    section "fib 30 under both schedulers"
    ./fib --bench --n 30 --threads "1,$T" --reps 15 --scheduler ws,locality,ws,locality,ws,locality,ws,locality,ws,locality,ws,locality --only numatask
    section "the paper's benchmarks, locality-aware over work stealing, $T workers"
    ./paper --bench --size medium --reps 10 --min-time 0.3 --mode measure --threads "$T"
    section "the same with work stealing in both places: the measurement's own noise (A/A)"
    ./paper --bench --size medium --reps 10 --min-time 0.3 --mode measure --threads "$T" --control
    ;;
loops)
    section "taskloop, 2^18 iterations"
    ./taskloop --bench --n 262144 --grain 1024,16384 --threads "1,$T" --reps 31 \
        --omp ./taskloop_gomp --omp ./taskloop_libomp
    section "taskloop reduction (sum), 2^18 iterations"
    ./taskloop --bench --reduce --n 262144 --grain 1024,16384 --threads "1,$T" --reps 31 \
        --omp ./taskloop_gomp --omp ./taskloop_libomp
    section "wake-up after 5 ms idle, from outside the pool"
    ./wakeup --bench --threads "$T" --rounds 200 --idle-ms 5
    ;;
scaling)
    # Whether fib's time per task keeps falling as threads are added, read against how far
    # the host's compute throughput grows (compute_scaling: register arithmetic, no memory).
    L=$(printf '%s\n' 1 2 4 8 16 24 "$T" | awk -v t="$T" '$1 <= t' | sort -nu | paste -sd,)
    section "compute-only throughput, $L threads"
    ./compute_scaling "$L" 5
    for r in 1 2; do
        for n in 30 34; do
            section "fib $n, round $r of 2"
            ./fib --bench --n "$n" --threads "$L" --reps 5 --skip numatask::join,rayon::scope \
                --omp ./fib_libomp
        done
    done
    ;;
coarse)
    # Coarse SparseLU on the arena layout, each program its own process, taking turns: numatask
    # under the default balanced waiting and under active waiting, and the C peers.
    A="--nb 50 --bs 100 --threads $T --reps 3"
    export OMP_PLACES=${OMP_PLACES:-cores}
    for r in 1 2 3 4 5 6; do
        section "coarse SparseLU, round $r of 6"
        ./sparselu --bench $A --skip empty,serial,raw,malloc --only numatask | sed 's/^/balanced /'
        OMP_WAIT_POLICY=active ./sparselu --bench $A --skip empty,serial,raw,malloc --only numatask |
            sed 's/^/active /'
        ./sparselu --bench $A --skip empty,serial,raw,malloc,numatask \
            --omp ./sparselu_gomp --omp ./sparselu_libomp | grep -v malloc
    done
    ;;
diagnose)
    # Why coarse SparseLU's tasks run slower under numatask than serially on some workers
    # (BENCHMARKS.md, "SparseLU with kernels that vectorize"): the host's CPU layout and steal
    # time, each thread's CPU time and processor while numatask and libomp run, and numatask
    # unbound. NB overrides the block count (default 50).
    A="--nb ${NB:-50} --bs 100 --threads $T --reps 5"
    section "CPU layout"
    lscpu -e=CPU,CORE,SOCKET,NODE 2>/dev/null | head -40 || true
    sample() { # command...: runs it; each thread's CPU seconds and last processor near its end
        "$@" &
        local pid=$! tick snap="" now
        tick=$(getconf CLK_TCK)
        while kill -0 "$pid" 2>/dev/null; do
            now=$(for t in /proc/$pid/task/*; do
                # After the command name's closing parenthesis: field 12 utime, 13 stime, 37
                # the processor it last ran on.
                sed 's/^.*) //' "$t/stat" 2>/dev/null | awk -v tick="$tick" -v name="$(cat "$t/comm" 2>/dev/null)" \
                    '{printf "  %-14s cpu_s %6.2f  on %s\n", name, ($12 + $13) / tick, $37}'
            done)
            [[ -n $now ]] && snap=$now
            sleep 0.2
        done
        wait "$pid"
        grep '^cpu ' /proc/stat | awk '{print "steal ticks so far: " $9}'
        printf '%s\n' "$snap"
    }
    section "numatask, bound (the default)"
    sample ./sparselu --bench $A --skip empty,serial,raw,malloc --only numatask
    section "numatask, OMP_PROC_BIND=false"
    OMP_PROC_BIND=false sample ./sparselu --bench $A --skip empty,serial,raw,malloc --only numatask
    section "libomp and libgomp"
    OMP_DISPLAY_AFFINITY=true ./sparselu --bench $A --skip empty,serial,raw,malloc,numatask \
        --omp ./sparselu_libomp --omp ./sparselu_gomp 2>&1 | sort | uniq -c | sort -rn | head -40
    section "numatask traced, per worker"
    NUMATASK_TRACE=coarse.json ./sparselu --bench --nb "${NB:-50}" --bs 100 --threads "$T" --reps 1 \
        --skip empty,serial,raw,malloc --only numatask
    python3 ./trace-busy.py coarse.json --bucket-ms 20 --per-worker 2>&1 | tail -45 || true
    ;;
graphs)
    # Dependent-task graphs of long tasks (coarse SparseLU, Cholesky with tiles of 64 and 256,
    # tiled QR) and fine SparseLU: first where the time goes, numatask traced (trace-busy.py:
    # busy share, gaps between a worker's tasks, mean time per kind of task, ready to start)
    # beside the C peers' busy share and mean task times (BENCH_TASK_STATS=1); then six rounds,
    # each program in its own process, taking turns, checksums compared; the large Cholesky
    # (about 10 s a round on 16 cores) last, in rounds of its own, ROUNDS_LARGE of them
    # (default 6).
    export OMP_PLACES=${OMP_PLACES:-cores} OMP_PROC_BIND=${OMP_PROC_BIND:-true}
    progs=("sparselu --nb 50 --bs 100" "cholesky --nt 40 --bs 64" "qr --nt 16 --bs 128")
    large="cholesky --nt 24 --bs 256"
    round() { # program and options: numatask's row and the C peers' (and numatask --fifo)
        local p=$1
        if [[ $p == cholesky* ]]; then
            # No serial run of its own (14 s for the large one): the rows are checked against
            # each other.
            ./cholesky --bench ${p#* } --threads "$T" --reps 2 --no-serial \
                --skip empty,serial,raw,malloc,priority --omp ./cholesky_gomp --omp ./cholesky_libomp |
                grep -v malloc
            ./cholesky --bench ${p#* } --threads "$T" --reps 2 --fifo --no-serial \
                --skip empty,serial,raw,malloc,priority
        else
            ./${p%% *} --bench ${p#* } --threads "$T" --reps 2 --skip empty,serial,raw,malloc,priority \
                --omp ./${p%% *}_gomp --omp ./${p%% *}_libomp | grep -v malloc
        fi
    }
    for p in "${progs[@]}" "$large"; do
        read -r bin _ nt _ bs <<<"$p"
        section "$p, $T threads: where the time goes"
        extra=()
        [[ $bin == cholesky ]] && extra=(--no-serial)
        NUMATASK_TRACE=graph.json ./$bin --bench ${p#* } --threads "$T" --reps 1 "${extra[@]}" \
            --skip empty,serial,raw,malloc,priority --only numatask
        python3 ./trace-busy.py graph.json --bucket-ms 100000 | sed -n '/^overall/,$p'
        for rt in gomp libomp; do
            BENCH_TASK_STATS=1 OMP_NUM_THREADS=$T ./${bin}_$rt "$nt" "$bs" 2 2>&1 | grep stats
        done
        if [[ $bin == cholesky ]]; then
            # numatask with every task run oldest first (the order of libgomp's team queue).
            NUMATASK_TRACE=graph.json ./$bin --bench ${p#* } --threads "$T" --reps 1 --fifo \
                --no-serial --skip empty,serial,raw,malloc --only numatask
            python3 ./trace-busy.py graph.json --bucket-ms 100000 | sed -n '/^overall/,$p'
        fi
    done
    section "SparseLU fine (NB=120, BS=25), serial and $T threads"
    ./sparselu --bench --nb 120 --bs 25 --threads "$T" --reps 5 --skip empty,raw,malloc --only numatask
    ./sparselu --bench --nb 120 --bs 25 --threads 1 --reps 3 --skip empty,raw,malloc --only serial
    for r in 1 2 3 4 5 6; do
        for p in "${progs[@]}"; do
            section "$p, round $r of 6"
            round "$p"
        done
    done
    for r in $(seq "${ROUNDS_LARGE:-6}"); do
        section "$large, round $r of ${ROUNDS_LARGE:-6}"
        round "$large"
    done
    ;;
kernels)
    # The kernel executor's benchmarks in OpenCL C (ocl_bench): an empty kernel's launch
    # overhead at 1 and 1024 work-groups, saxpy on 2^24 floats, and the suite of kernels with
    # barriers and local memory (matmul, reduce, scan, transpose, axpy with and without a
    # barrier, as bench/c/ocl_bench.c defines them; about 25 s for pocl at 1 thread on 2 cores,
    # less for Intel's; ONLY=suite for the suite alone), for pocl (the host's, from
    # /etc/OpenCL/vendors) and Intel's CPU
    # runtime (intel-opencl.tar.xz of the bundle, unpacked into intel-opencl/), each runtime
    # alone in its process. Thread counts are set as scripts/bench-kernels.sh explains: pocl's
    # compute units follow POCL_MAX_PTHREAD_COUNT (POCL_CPU_MAX_CU_COUNT from pocl 4 on);
    # Intel's workers follow CL_CONFIG_CPU_TBB_NUM_WORKERS, shown by each thread's CPU seconds
    # on stderr.
    L=$(printf '%s\n' 1 2 4 8 16 | awk -v t="$T" '$1 <= t' | paste -sd,)
    if [[ ! -x ./ocl_bench ]]; then
        echo "no ocl_bench in this bundle (it was built without the OpenCL headers)" >&2
        exit 2
    fi
    intel_icd
    for peer in pocl intel-cpu; do
        if [[ $peer == intel-cpu && ! -e intel-opencl/libintelocl.so ]]; then
            echo "intel-cpu: not available: no intel-opencl.tar.xz in the bundle (BUNDLE_INTEL_OPENCL=1)"
            continue
        fi
        for t in ${L//,/ }; do
            section "$peer, $t threads"
            case $peer in
            pocl) env=(POCL_MAX_PTHREAD_COUNT="$t" POCL_CPU_MAX_CU_COUNT="$t") ;;
            intel-cpu) env=(OCL_ICD_VENDORS="$PWD/opencl-vendors" CL_CONFIG_CPU_TBB_NUM_WORKERS="$t") ;;
            esac
            if ! env "${env[@]}" ./ocl_bench --platform "$peer" --threads "$t" --only "${ONLY:-all,suite}" 2>&1; then
                echo "$peer: not available or failed with $t threads (above)"
                break
            fi
        done
    done
    # numatask's rows, once the bundle has the kernels benches (bench/benches/kernels.rs,
    # bench/benches/kernel_suite.rs).
    if [[ -x ./kernels ]]; then
        section "numatask, $L threads"
        ./kernels --bench --threads "$L"
    fi
    if [[ -x ./kernel_suite ]]; then
        section "numatask, the suite, $L threads"
        ./kernel_suite --bench --threads "$L"
    fi
    ;;
alloc)
    # The allocator against glibc, mimalloc and libnuma (where the host has libnuma.so.1):
    # allocate, touch, free on one thread by size, then every thread count up to all CPUs
    # allocating its own 64 KiB blocks at once.
    section "allocator"
    ./alloc_bench --bench --warm-up-time 1 --measurement-time 2 alloc_touch_free 2>&1 |
        grep -E '^alloc_touch_free|time:'
    ;;
suite-turns)
    # The #[kernel] suite against Intel's CPU runtime (and pocl with PEERS="intel-cpu pocl"),
    # taking turns at each thread count (16 down to 1), ROUNDS times (default 2): on a host
    # whose speed drifts within minutes, rows of one turn compare better than the kernels
    # part's, which runs each runtime at every count in one block. About a minute a round on
    # 16 cores for Intel's and numatask's; pocl's matmul adds about ten seconds a thread count.
    if [[ ! -x ./ocl_bench || ! -x ./kernel_suite || ! -f intel-opencl.tar.xz ]]; then
        echo "suite-turns needs ocl_bench, kernel_suite and intel-opencl.tar.xz in the bundle" >&2
        exit 2
    fi
    intel_icd
    for r in $(seq "${ROUNDS:-2}"); do
        for t in $(printf '%s\n' 16 8 4 2 1 | awk -v t="$T" '$1 <= t'); do
            section "round $r, $t threads"
            for peer in ${PEERS:-intel-cpu}; do
                case $peer in
                intel-cpu)
                    OCL_ICD_VENDORS="$PWD/opencl-vendors" CL_CONFIG_CPU_TBB_NUM_WORKERS="$t" \
                        ./ocl_bench --platform intel-cpu --threads "$t" --only suite 2>/dev/null | grep '^kernels' || echo "intel-cpu: no result at $t threads"
                    ;;
                pocl)
                    POCL_MAX_PTHREAD_COUNT="$t" POCL_CPU_MAX_CU_COUNT="$t" \
                        ./ocl_bench --platform pocl --threads "$t" --only suite 2>/dev/null | grep '^kernels' || echo "pocl: no result at $t threads"
                    ;;
                esac
            done
            ./kernel_suite --bench --threads "$t" | grep '^kernels'
        done
    done
    ;;
*)
    echo "usage: run.sh peers|overhead|loops|scaling|coarse|diagnose|graphs|kernels|suite-turns|alloc" >&2
    exit 2
    ;;
esac
