#!/usr/bin/env bash
# The kernel executor's benchmarks against OpenCL CPU runtimes, the same kernels written in
# OpenCL C (bench/c/ocl_bench.c), in one run: pocl (Debian's pocl-opencl-icd) and Intel's CPU
# runtime (PyPI's intel-opencl-rt), each with every thread count given; then numatask's rows
# (bench/benches/kernels.rs for launch and saxpy, bench/benches/kernel_suite.rs for the suite,
# each once it exists):
#   scripts/bench-kernels.sh [--threads 1,2] [--smoke] [--only LIST] [--reps N] [--n N]
#                            [--local N] [--tasks N] [--mm-n N] [--tr-n N]
# --threads  default 1 and every CPU.
# --only     a comma-separated list of ocl_bench's names: launch, saxpy, all (the two), suite
#            (matmul, reduce, scan, transpose, axpy, axpy_barrier: kernels with barriers and
#            local memory), barrier-cost (axpy and axpy_barrier) or one suite kernel; default
#            all,suite. Each program gets its own part of the list.
# --smoke    a quick run that everything builds, runs and checks its results: 3 repetitions,
#            n = 2^16, matmul 64 x 64, transpose 256 x 256, unless given.
# --reps and --n go to every program, --local to ocl_bench and kernels.rs (saxpy's work-group
# size), --tasks to kernels.rs, --mm-n and --tr-n (matmul's and transpose's sides) to ocl_bench
# and kernel_suite.rs; any other option to every program. On 2 cores the suite takes about 25 s
# per OpenCL run at 1 thread (pocl's matmul most of it), 45 s for both runtimes at 1 and 2.
#
# What is missing is installed where it can be: pocl, the ICD loader and the OpenCL headers
# with apt-get as root; Intel's runtime in a virtual environment, target/intel-opencl-venv. A
# peer that cannot be had is reported in one line, "NAME: not available: WHY", and skipped;
# the script still succeeds.
#
# Each runtime takes its thread count from its environment (ocl_bench's --threads only labels
# the lines):
#   pocl       POCL_MAX_PTHREAD_COUNT (pocl up to 3.x, Debian 12 has 3.1) and its newer name
#              POCL_CPU_MAX_CU_COUNT (pocl 4 on, which still reads the old one): both are set.
#              The device's compute units follow it; checked on every run below.
#   intel-cpu  CL_CONFIG_CPU_TBB_NUM_WORKERS: how many threads run work-groups (its TBB
#              arena's concurrency; from 2 on, the thread waiting in clFinish may be one of
#              them), clamped to the logical CPUs. The device keeps reporting every CPU as a
#              compute unit, so ocl_bench's stderr line of each thread's CPU seconds shows it
#              instead: with 1, one thread runs every work-group, and saxpy takes about twice
#              as long as with 2 on two idle cores.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
# shellcheck source=scripts/lib/packages.sh
source scripts/lib/packages.sh
# shellcheck source=scripts/lib/opencl.sh
source scripts/lib/opencl.sh

threads=$(printf '%s\n' 1 "$(nproc)" | sort -nu | paste -sd,)
only=all,suite
smoke=0
reps='' n='' local_size='' tasks='' mm_n='' tr_n=''
other=() # options this script does not know: to every program
while (($#)); do
    # --opt=value as --opt value.
    if [[ $1 == --*=* ]]; then
        set -- "${1%%=*}" "${1#*=}" "${@:2}"
    fi
    case $1 in
    --smoke)
        smoke=1
        shift
        continue
        ;;
    --threads | --only | --reps | --n | --local | --tasks | --mm-n | --tr-n)
        if (($# < 2)); then
            echo "$1 takes a value" >&2
            exit 2
        fi
        ;;
    esac
    case $1 in
    --threads) threads=$2 ;;
    --only) only=$2 ;;
    --reps) reps=$2 ;;
    --n) n=$2 ;;
    --local) local_size=$2 ;;
    --tasks) tasks=$2 ;;
    --mm-n) mm_n=$2 ;;
    --tr-n) tr_n=$2 ;;
    *)
        other+=("$1")
        shift
        continue
        ;;
    esac
    shift 2
done
if [[ ! $threads =~ ^[1-9][0-9]*(,[1-9][0-9]*)*$ ]]; then
    echo "--threads '$threads': expected a comma-separated list of thread counts, e.g. 1,2,4" >&2
    exit 2
fi
if ((smoke)); then
    reps=${reps:-3} n=${n:-65536} mm_n=${mm_n:-64} tr_n=${tr_n:-256}
fi

# --only's list split between the Rust benches: kernels.rs takes one of launch, saxpy or all;
# kernel_suite.rs the suite's names. ocl_bench takes the whole list.
launch=0 saxpy=0 suite_only=()
IFS=, read -r -a names <<<"$only"
for name in "${names[@]}"; do
    case $name in
    launch) launch=1 ;;
    saxpy) saxpy=1 ;;
    all) launch=1 saxpy=1 ;;
    suite | matmul | reduce | scan | transpose | barrier-cost | axpy | axpy_barrier)
        suite_only+=("$name")
        ;;
    *)
        echo "--only '$only': '$name' names no benchmark (launch, saxpy, all, suite, matmul," \
            "reduce, scan, transpose, barrier-cost, axpy, axpy_barrier)" >&2
        exit 2
        ;;
    esac
done
case $launch$saxpy in
11) kernels_only=all ;;
10) kernels_only=launch ;;
01) kernels_only=saxpy ;;
*) kernels_only='' ;;
esac
suite_list=$(IFS=,; echo "${suite_only[*]}")

# Each program's options.
common=(${reps:+--reps "$reps"} ${n:+--n "$n"} "${other[@]}")
ocl_args=(--only "$only" "${common[@]}" ${local_size:+--local "$local_size"}
    ${mm_n:+--mm-n "$mm_n"} ${tr_n:+--tr-n "$tr_n"})
kernels_args=(--only "$kernels_only" "${common[@]}" ${local_size:+--local "$local_size"}
    ${tasks:+--tasks "$tasks"})
suite_args=(--only "$suite_list" "${common[@]}" ${mm_n:+--mm-n "$mm_n"} ${tr_n:+--tr-n "$tr_n"})

# Absolute: cargo runs a bench in its package's directory (bench/), not here.
out=$PWD/target/bench-c
venv=$PWD/target/intel-opencl-venv
# ICD files for OCL_ICD_VENDORS, which replaces /etc/OpenCL/vendors for ocl-icd: all/ holds the
# system's (pocl's among them) and one naming Intel's runtime in the venv, for the listing of
# platforms; intel-cpu/ holds Intel's alone, for its runs. pocl runs with the system's: each
# runtime measured is then the only one loaded in its process (pocl starts its worker threads
# when the loader initialises it, whichever platform the program picks).
vendors=$PWD/target/opencl-vendors
mkdir -p "$out"
unavailable() { echo "$1: not available: $2" >&2; }

if ! command -v dpkg-query >/dev/null; then
    echo "no dpkg: OpenCL packages not installed; install pocl, ocl-icd and the OpenCL headers" >&2
elif ! (ensure_packages "${OPENCL_PACKAGES[@]}"); then
    echo "OpenCL packages missing and not installable here; going on with what exists" >&2
fi
if ! opencl_headers; then
    unavailable "pocl" "no OpenCL headers (CL/cl.h) to build the peers with"
    unavailable "intel-cpu" "no OpenCL headers (CL/cl.h) to build the peers with"
    peers=()
else
    build_ocl_bench "$out/ocl_bench"
    peers=(pocl intel-cpu)
fi

intel_lib=$venv/lib/libintelocl.so
if ((${#peers[@]})); then install_intel_opencl "$venv" || true; fi
rm -rf "$vendors" && mkdir -p "$vendors/all"
for icd in /etc/OpenCL/vendors/*.icd; do
    if [[ -e $icd ]]; then cp "$icd" "$vendors/all/"; fi
done
if [[ -e $intel_lib ]]; then
    intel_opencl_vendors "$venv/lib" "$vendors/intel-cpu"
    cp "$vendors/intel-cpu/intel-cpu.icd" "$vendors/all/"
fi

# Which platforms the loader sees: `clinfo -l`, else ocl_bench's own list of them.
if command -v clinfo >/dev/null; then
    platforms=$(OCL_ICD_VENDORS=$vendors/all clinfo -l 2>&1 || true)
elif ((${#peers[@]})); then
    platforms=$(OCL_ICD_VENDORS=$vendors/all "$out/ocl_bench" --platform '(none)' 2>&1 || true)
fi
echo "OpenCL platforms:" >&2
printf '%s\n' "${platforms:-  none}" | sed 's/^/  /' >&2
available=()
for peer in "${peers[@]}"; do
    case $peer in
    pocl) name="Portable Computing Language" ;;
    intel-cpu) name="Intel(R) OpenCL" ;;
    esac
    if grep -qF "$name" <<<"${platforms:-}"; then
        available+=("$peer")
    elif [[ $peer == pocl ]]; then
        unavailable pocl "the platform does not load (apt-get install ${OPENCL_PACKAGES[*]})"
    elif [[ ! -e $intel_lib ]]; then
        unavailable intel-cpu "not installed in $venv (pip install intel-opencl-rt intel-cmplr-lib-rt failed or was not possible)"
    else
        absent=$(ldd "$intel_lib" 2>&1 | grep 'not found' | awk '{print $1}' | sort -u | paste -sd' ' || true)
        unavailable intel-cpu "the platform does not load${absent:+ (missing: $absent)}"
    fi
done

# One run of ocl_bench per peer and thread count. stderr (device, compute units, each thread's
# CPU seconds) is shown indented; pocl's compute units must equal the threads asked for.
IFS=, read -r -a counts <<<"$threads"
failed=0
for peer in "${available[@]}"; do
    for t in "${counts[@]}"; do
        case $peer in
        pocl) env=(POCL_MAX_PTHREAD_COUNT="$t" POCL_CPU_MAX_CU_COUNT="$t") ;;
        intel-cpu) env=(OCL_ICD_VENDORS="$vendors/intel-cpu" CL_CONFIG_CPU_TBB_NUM_WORKERS="$t") ;;
        esac
        log=$out/ocl_bench.$peer.$t.err
        if ! env "${env[@]}" "$out/ocl_bench" --platform "$peer" --threads "$t" "${ocl_args[@]}" 2>"$log"; then
            echo "$peer with $t threads failed:" >&2
            failed=1
        fi
        sed 's/^/  # /' "$log" >&2
        cu=$(sed -n 's/.*compute units: \([0-9]*\).*/\1/p' "$log")
        if [[ $peer == pocl && -n $cu && $cu != "$t" ]]; then
            echo "  # pocl reports $cu compute units for $t threads: its thread variable was not honoured" >&2
        fi
    done
done

# numatask's rows: the Rust side of the same benchmarks (the kernel executor), each program
# with its part of --only. Each runs once its file exists; until then this script measures the
# peers only.
if [[ -f bench/benches/kernels.rs && -n $kernels_only ]]; then
    cargo bench --quiet -p numatask-bench --bench kernels -- --threads "$threads" "${kernels_args[@]}"
fi
if [[ -f bench/benches/kernel_suite.rs && -n $suite_list ]]; then
    cargo bench --quiet -p numatask-bench --bench kernel_suite -- --threads "$threads" "${suite_args[@]}"
fi
exit "$failed"
