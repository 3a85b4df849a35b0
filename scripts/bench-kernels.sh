#!/usr/bin/env bash
# The kernel executor's benchmarks against OpenCL CPU runtimes, the same kernels written in
# OpenCL C (bench/c/ocl_bench.c), in one run: pocl (Debian's pocl-opencl-icd) and Intel's CPU
# runtime (PyPI's intel-opencl-rt), each with every thread count given; then numatask's rows,
# once bench/benches/kernels.rs exists. Arguments besides --threads go to every program:
#   scripts/bench-kernels.sh --threads 1,2 [--only launch|saxpy|all] [--reps N] [--n N] [--local N]
# (default threads: 1 and every CPU). What is missing is installed where it can be: pocl, the
# ICD loader and the OpenCL headers with apt-get as root; Intel's runtime in a virtual
# environment, target/intel-opencl-venv. A peer that cannot be had is reported in one line,
# "NAME: not available: WHY", and skipped; the script still succeeds.
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
args=()
while (($#)); do
    case $1 in
    --threads)
        threads=${2:?--threads takes a list, e.g. 1,2,4}
        shift 2
        ;;
    --threads=*)
        threads=${1#--threads=}
        shift
        ;;
    *)
        args+=("$1")
        shift
        ;;
    esac
done
if [[ ! $threads =~ ^[1-9][0-9]*(,[1-9][0-9]*)*$ ]]; then
    echo "--threads '$threads': expected a comma-separated list of thread counts, e.g. 1,2,4" >&2
    exit 2
fi

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
        if ! env "${env[@]}" "$out/ocl_bench" --platform "$peer" --threads "$t" "${args[@]}" 2>"$log"; then
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

# numatask's rows: the Rust side of the same benchmarks (the kernel executor), same options.
# Runs once bench/benches/kernels.rs exists; until then this script measures the peers only.
if [[ -f bench/benches/kernels.rs ]]; then
    cargo bench --quiet -p numatask-bench --bench kernels -- --threads "$threads" "${args[@]}"
fi
exit "$failed"
