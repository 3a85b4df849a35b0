# shellcheck shell=bash
# The OpenCL CPU runtimes the kernel executor is measured against, for scripts/bench-kernels.sh
# and scripts/device-bundle.sh: pocl from Debian's packages, and Intel's CPU runtime from PyPI
# in a virtual environment, registered with the ICD loader through OCL_ICD_VENDORS.

# pocl, the ICD loader (ocl-icd's libOpenCL.so), the headers bench/c/ocl_bench.c is built
# with, and clinfo to list the platforms the loader finds.
# shellcheck disable=SC2034 # read by the scripts that source this file
OPENCL_PACKAGES=(pocl-opencl-icd ocl-icd-opencl-dev opencl-headers clinfo)

# build_ocl_bench OUT: bench/c/ocl_bench.c built into the file OUT with gcc, warnings as errors,
# linked against the ICD loader.
build_ocl_bench() {
    gcc -std=c99 -O2 -Wall -Wextra -Werror -Ibench/c bench/c/ocl_bench.c -o "$1" -lOpenCL -lm
}

# opencl_headers: whether CL/cl.h is there to build ocl_bench with.
opencl_headers() {
    echo '#include <CL/cl.h>' | gcc -E -x c - >/dev/null 2>&1
}

# The release of Intel's runtime measured (INTEL_OPENCL_VERSION overrides it): the runtime's
# code generation changes between releases, so a table says which one it measured.
INTEL_OPENCL_VERSION=${INTEL_OPENCL_VERSION:-2026.2.0}

# install_intel_opencl VENV: Intel's CPU runtime in the virtual environment VENV (libraries in
# VENV/lib), unless it is there already; pip's output goes to VENV.log. intel-opencl-rt alone
# leaves libintelocl.so without libimf, libsvml, libirng and libintlc, which are in
# intel-cmplr-lib-rt: the loader then drops the platform without a word.
install_intel_opencl() {
    local venv=$1
    [[ -e $venv/lib/libintelocl.so ]] && return 0
    echo "installing Intel's CPU OpenCL runtime $INTEL_OPENCL_VERSION into $venv" >&2
    if ! { python3 -m venv "$venv" &&
        "$venv/bin/pip" install -q "intel-opencl-rt==$INTEL_OPENCL_VERSION" \
            "intel-cmplr-lib-rt==$INTEL_OPENCL_VERSION"; } >"$venv.log" 2>&1; then
        echo "  pip failed; see $venv.log" >&2
        return 1
    fi
}

# pack_intel_opencl LIB OUT [ARCHES]: copies into the directory OUT the files of Intel's
# runtime (installed in LIB) that a program opens to build and run kernels: 315 MB of the
# venv's 833 MB with three code-generation variants. The list is what `strace -e openat` shows
# ocl_bench opening; TBB also tries libtcm.so.1 and libirml.so.1 by bare name, finds neither
# off LD_LIBRARY_PATH and goes on without them, as it does here. Shared libraries lose their
# debug information and static symbol tables (their dynamic symbols stay). ARCHES: the
# variants the runtime chooses from at start-up by the CPU's instruction sets, default
# "z0 z1 l9": AVX-512 (z0, z1; a Skylake-SP class Xeon takes z0) and AVX2 (l9); e9 (AVX) and
# h8 (SSE4.2) serve older CPUs.
pack_intel_opencl() {
    local lib=$1 out=$2 arches=${3:-z0 z1 l9} clang f a
    mkdir -p "$out"
    # The versioned name is the one libintelocl.so records as needed.
    clang=$(readelf -d "$lib/libintelocl.so" |
        sed -n 's/.*NEEDED.*\[\(libcommon_clang[^]]*\)\].*/\1/p')
    for f in libintelocl.so "$clang" libtbb.so.12 libtbbmalloc.so.2 libimf.so libsvml.so \
        libirng.so libintlc.so.5; do
        strip --strip-unneeded -o "$out/$f" "$(readlink -f "$lib/$f")"
    done
    cp "$lib/cl.cfg" "$lib/clbltfnshared.rtl" "$lib/cllibrary.rtl" "$out/"
    for a in $arches; do
        cp "$lib/clbltfn$a.rtl" "$lib/cllibrary$a.o" "$out/"
        strip --strip-unneeded -o "$out/libocl_svml_$a.so" "$lib/libocl_svml_$a.so"
    done
    # The licence terms travel with the binaries.
    for f in "$lib"/../share/doc/opencl/licensing/*; do
        if [[ -f $f ]]; then cp "$f" "$out/"; fi
    done
}

# intel_opencl_vendors LIB DIR: a directory DIR for OCL_ICD_VENDORS whose one ICD file names
# LIB/libintelocl.so. It finds its own libraries through its RUNPATH ($ORIGIN), so LIB stays
# off LD_LIBRARY_PATH: a venv's lib/ also holds a libOpenCL.so.1 (the Khronos loader) that
# would replace the system's ocl-icd for every runtime measured.
intel_opencl_vendors() {
    local lib=$1 dir=$2
    mkdir -p "$dir"
    echo "$lib/libintelocl.so" >"$dir/intel-cpu.icd"
}
