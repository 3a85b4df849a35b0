#!/usr/bin/env bash
# Run numatask's multi-node tests inside QEMU guests that have a real multi-node NUMA kernel.
#
# Development and CI machines have one NUMA node, so tests that need several nodes are
# `#[ignore]`d on the host. This script builds those test executables on the host, packs them
# with busybox and their shared libraries into an initramfs, and boots Debian's kernel under QEMU
# (TCG: KVM hangs on these machines) once with 4 and once with 8 NUMA nodes. Inside the guest
# mbind, move_pages, interleave and the CPU-to-node mapping behave as on real hardware.
# The recipe (and why TCG, one CPU per node, -m = sum of nodes) is section 3 of the team guide
# NUMA-TESTING.md (shared/guides/ in the dev environment).
#
# Usage: scripts/numa-vm-test.sh [--nodes N]... [--keep] [--help]
#   --nodes N   boot only the N-node guest (repeatable; default: 4 and 8)
#   --keep      keep the work dir (initramfs, serial logs) even when every guest passed
#
# Environment:
#   NUMA_VM_EXTRA_BINS  extra libtest executables to run in each guest (whitespace-separated
#                       paths, e.g. from `cargo test --no-run`); run with the same arguments
#   NUMA_VM_TIMEOUT     seconds per guest before it counts as failed (default 300)
#   NUMA_VM_BOOT_TIMEOUT  seconds for a guest to reach its init (its first line) before that
#                       boot counts as an emulator stall and the guest is booted once more
#                       (default 120); a second stall, like any test failure, fails the run
#   NUMA_VM_KERNEL      guest kernel image (default: newest /boot/vmlinuz-*-amd64, or
#                       vmlinuz-*-generic on Ubuntu)
#   NUMA_VM_NODE_MEM    memory per NUMA node in MiB (default: 512 for 4 nodes, 256 for 8)
#
# Exit status: 0 when every guest printed its PASS line, 1 otherwise (test failure, timeout,
# guest crash), 2 for usage or setup errors.
set -euo pipefail

# (package:test-target) pairs built with `cargo test --release -p PKG --test TARGET --no-run`
# and run in every guest.
TEST_TARGETS=(
    "numatask-alloc:multinode"
    "numatask-sched:multinode"
    "numatask-kernels:multinode"
)

# Arguments for every test executable in the guest: the multi-node tests are the ignored ones;
# one thread so that tests pinning threads or binding memory do not disturb each other.
GUEST_TEST_ARGS="--ignored --test-threads=1"

# The Debian packages (QEMU, the distribution's guest kernel, static busybox, numactl, cpio)
# and the guest kernel's file name: VM_PACKAGES and KERNEL_GLOB, from scripts/lib/packages.sh.

RESULT_TAG="NUMATASK-VM-RESULT"
# Lines a test writes with this prefix (measurements) are echoed from the guest log, pass or fail.
REPORT_TAG="NUMATASK-VM-REPORT"

die() { echo "numa-vm-test: $*" >&2; exit 2; }
log() { echo "numa-vm-test: $*" >&2; }

usage() { sed -n '/^# Usage:/,/^# guest crash/s/^# \{0,1\}//p' "$0"; }

# ---------------------------------------------------------------------------------------------
# Options
# ---------------------------------------------------------------------------------------------
NODE_COUNTS=()
KEEP=0
while (($#)); do
    case "$1" in
        --nodes)
            [[ $# -ge 2 && $2 =~ ^[0-9]+$ && $2 -ge 2 ]] || die "--nodes needs a number >= 2"
            NODE_COUNTS+=("$2"); shift 2 ;;
        --nodes=*)
            n=${1#--nodes=}
            [[ $n =~ ^[0-9]+$ && $n -ge 2 ]] || die "--nodes needs a number >= 2"
            NODE_COUNTS+=("$n"); shift ;;
        --keep) KEEP=1; shift ;;
        -h|--help) usage; exit 0 ;;
        *) usage >&2; die "unknown argument: $1" ;;
    esac
done
((${#NODE_COUNTS[@]})) || NODE_COUNTS=(4 8)

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"

# ---------------------------------------------------------------------------------------------
# 1. Host packages.
# ---------------------------------------------------------------------------------------------
# shellcheck source=scripts/lib/packages.sh
source "$ROOT/scripts/lib/packages.sh"
ensure_packages "${VM_PACKAGES[@]}"
command -v cargo >/dev/null || die "cargo not found (install Rust, e.g. with rustup)"

if [[ -n ${NUMA_VM_KERNEL:-} ]]; then
    KERNEL=$NUMA_VM_KERNEL
else
    KERNEL=$(find /boot -maxdepth 1 -name "$KERNEL_GLOB" | sort -V | tail -n 1)
fi
[[ -n $KERNEL && -r $KERNEL ]] ||
    die "no readable guest kernel (${KERNEL:-/boot/$KERNEL_GLOB}; run as root, or set NUMA_VM_KERNEL)"
BUSYBOX=$(command -v busybox) || die "busybox not found"
NUMACTL=$(command -v numactl) || die "numactl not found"

# ---------------------------------------------------------------------------------------------
# 2. Build the test executables on the host. Cargo prints one JSON object per line; the test
#    executable is the compiler-artifact of kind "test" named after the target. Parsed with
#    grep/sed so that neither jq nor python is needed.
# ---------------------------------------------------------------------------------------------
TEST_BINS=()
for pair in "${TEST_TARGETS[@]}"; do
    pkg=${pair%%:*} target=${pair#*:}
    log "building $pkg --test $target"
    json=$(cargo test --release -p "$pkg" --test "$target" --no-run --message-format=json) \
        || die "building $pkg --test $target failed (see cargo's errors above)"
    exe=$(printf '%s\n' "$json" \
        | grep -F '"reason":"compiler-artifact"' \
        | grep -F '"kind":["test"]' \
        | grep -F "\"name\":\"$target\"" \
        | sed -n 's/.*"executable":"\([^"]*\)".*/\1/p' | tail -n 1)
    [[ -n $exe && -x $exe ]] || die "no test executable found for $pkg --test $target"
    TEST_BINS+=("$exe")
done
for exe in ${NUMA_VM_EXTRA_BINS:-}; do
    [[ -x $exe ]] || die "NUMA_VM_EXTRA_BINS: $exe is not an executable"
    TEST_BINS+=("$(realpath "$exe")")
done

# ---------------------------------------------------------------------------------------------
# 3. The initramfs, shared by all guests (the node count comes through the kernel command line).
# ---------------------------------------------------------------------------------------------
TARGET_DIR=${CARGO_TARGET_DIR:-$ROOT/target}
mkdir -p "$TARGET_DIR/numa-vm"
# One directory per run, so that concurrent runs in one checkout do not clobber each other.
WORK=$(mktemp -d "$TARGET_DIR/numa-vm/run.XXXXXX")
STAGE=$WORK/rootfs
mkdir -p "$STAGE"/{proc,sys,dev,tmp,tests}

# Mirror the host's merged-/usr symlinks (/lib -> usr/lib, ...) so that the loader and every
# library end up at exactly the paths ldd reports, and the loader's default search path works.
for d in bin sbin lib lib64; do
    if [[ -L /$d ]]; then
        link=$(readlink "/$d")
        mkdir -p "$STAGE/${link#/}"
        ln -s "${link#/}" "$STAGE/$d"
    else
        mkdir -p "$STAGE/$d"
    fi
done
mkdir -p "$STAGE"/usr/{bin,sbin}

# Copy a dynamically linked executable's libraries (and the loader) to the same absolute paths.
copy_libs() {
    local out lib
    if ! out=$(ldd "$1" 2>&1); then
        [[ $out == *"not a dynamic executable"* ]] && return 0
        die "ldd $1 failed: $out"
    fi
    if grep -q 'not found' <<<"$out"; then
        die "$1 has unresolved libraries: $(grep 'not found' <<<"$out")"
    fi
    # "libx.so => /path (0x..)" or "/lib64/ld-linux-x86-64.so.2 (0x..)"; the vDSO has no path.
    while read -r lib; do
        [[ -e $STAGE$lib ]] && continue
        mkdir -p "$STAGE$(dirname "$lib")"
        cp -L "$lib" "$STAGE$lib"
    done < <(awk '$2 == "=>" && $3 ~ /^\// { print $3 } $1 ~ /^\// { print $1 }' <<<"$out")
}

# busybox-static with a link per applet (sh, mount, poweroff, grep, ...).
cp "$BUSYBOX" "$STAGE/bin/busybox"
while read -r applet; do
    [[ -e $STAGE/$applet || -L $STAGE/$applet ]] || ln -s /bin/busybox "$STAGE/$applet"
done < <("$BUSYBOX" --list-full)

# numactl: only for the topology dump at the top of each guest log.
cp "$NUMACTL" "$STAGE/usr/bin/numactl"
copy_libs "$NUMACTL"

# Test executables go to /tests under unique names (cargo's names carry a hash already; the
# index keeps two extra binaries with one basename apart and fixes the run order).
i=0
for exe in "${TEST_BINS[@]}"; do
    i=$((i + 1))
    cp "$exe" "$STAGE/tests/$(printf '%02d' "$i")-$(basename "$exe")"
    copy_libs "$exe"
done

# hwloc needs no data files to discover the topology; its plugins (pci, gl, opencl, libxml) are
# optional and left out: without them hwloc silently uses its built-in components.
cat >"$STAGE/init" <<EOF
#!/bin/sh
# PID 1 of the test guest, generated by scripts/numa-vm-test.sh. No "set -e": every failure must
# end in a result line and a power-off, never in a kernel panic without explanation.
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev
mount -t tmpfs tmpfs /tmp
exec </dev/console >/dev/console 2>&1

nodes=\$(sed -n 's/.*numatask_nodes=\([0-9]*\).*/\1/p' /proc/cmdline)
seen=\$(ls -d /sys/devices/system/node/node[0-9]* 2>/dev/null | wc -l)
echo "=== guest: \$(uname -r), \$(grep -c ^processor /proc/cpuinfo) CPUs, \$seen NUMA nodes (expected \$nodes)"
numactl -H
result=PASS
if [ "\$seen" != "\$nodes" ]; then
    echo "$RESULT_TAG nodes=\$nodes FAIL topology nodes_seen=\$seen"
    result=FAIL
fi

export NUMATASK_VM_NODES=\$nodes RUST_BACKTRACE=1 HOME=/tmp TMPDIR=/tmp
for t in /tests/*; do
    echo "=== running \${t#/tests/} $GUEST_TEST_ARGS"
    "\$t" $GUEST_TEST_ARGS >/tmp/test.out 2>&1
    rc=\$?
    cat /tmp/test.out
    if [ \$rc -ne 0 ]; then
        echo "$RESULT_TAG nodes=\$nodes FAIL \${t#/tests/} rc=\$rc"
        result=FAIL
    elif ! grep -q "^test result: ok\. [1-9]" /tmp/test.out; then
        # A binary whose tests were all filtered out or ignored proves nothing.
        echo "$RESULT_TAG nodes=\$nodes FAIL \${t#/tests/} no-test-ran"
        result=FAIL
    fi
done
[ \$result = PASS ] && echo "$RESULT_TAG nodes=\$nodes PASS"
sync
poweroff -f
EOF
chmod 755 "$STAGE/init"

# Uncompressed: the TCG guest unpacks it faster than it would gunzip it.
INITRD=$WORK/initramfs.cpio
(cd "$STAGE" && find . -print0 | LC_ALL=C sort -z | cpio --quiet -o -0 -H newc -R 0:0) >"$INITRD"
log "initramfs: $(du -h "$INITRD" | cut -f1), kernel: $KERNEL"

# ---------------------------------------------------------------------------------------------
# 4. Boot one guest per node count, one CPU per node. Two machine shapes:
#    - 4 nodes as in the guide: one node per package, distances 20 within the pairs 0-1 and 2-3,
#      30 otherwise;
#    - any other even count in the paper's 4 x Opteron 6172 flavour: two nodes per package
#      (0-1, 2-3, ...) at distance 16, 22 otherwise. Each package then has 2 cores on different
#      nodes. With QEMU's default caches the guest kernel thinks those cores share an L3 and
#      prints a WARNING backtrace ("llc-sibling ... is not on the same node"); vendor=GenuineIntel
#      with l3-cache=off makes the last-level cache per core, which silences it, and hwloc then
#      shows Package > 2 x (NUMANode + core) as on the real machine.
# ---------------------------------------------------------------------------------------------
run_guest() {
    local n=$1 mem near far smp cpu=max args=() i j d
    if ((n == 4 || n % 2)); then
        near=20 far=30 smp="$n,sockets=$n,cores=1,threads=1"
    else
        near=16 far=22 smp="$n,sockets=$((n / 2)),cores=2,threads=1"
        cpu=max,vendor=GenuineIntel,l3-cache=off
    fi
    mem=${NUMA_VM_NODE_MEM:-$((n <= 4 ? 512 : 256))}
    for ((i = 0; i < n; i++)); do
        args+=(-object "memory-backend-ram,id=m$i,size=${mem}M"
            -numa "node,nodeid=$i,memdev=m$i,cpus=$i-$i")
    done
    # One direction per pair is enough: QEMU mirrors it.
    for ((i = 0; i < n; i++)); do
        for ((j = i + 1; j < n; j++)); do
            if ((i / 2 == j / 2)); then d=$near; else d=$far; fi
            args+=(-numa "dist,src=$i,dst=$j,val=$d")
        done
    done

    local serial=$WORK/guest-$n.log start rc elapsed attempt pid waited
    local boot_limit=${NUMA_VM_BOOT_TIMEOUT:-120}
    # TCG on a loaded 2-core host now and then stalls an 8-CPU guest before its init runs
    # (no output at all, seen once in many CI runs): such a boot is retried once; a guest that
    # reached its init is never retried, whatever its tests did.
    for attempt in 1 2; do
        log "booting $n-node guest (timeout ${NUMA_VM_TIMEOUT:-300}s, log $serial)"
        start=$EPOCHREALTIME
        rc=0
        timeout --kill-after=10 "${NUMA_VM_TIMEOUT:-300}" \
            qemu-system-x86_64 -accel tcg,thread=multi -cpu "$cpu" -machine q35 \
            -smp "$smp" -m "$((n * mem))M" "${args[@]}" \
            -kernel "$KERNEL" -initrd "$INITRD" \
            -append "console=ttyS0 rdinit=/init panic=-1 quiet loglevel=3 numatask_nodes=$n" \
            -nodefaults -no-user-config -display none -serial stdio -no-reboot \
            </dev/null >"$serial" 2>&1 &
        pid=$!
        waited=0
        while kill -0 "$pid" 2>/dev/null && ! grep -q "=== guest:" "$serial"; do
            if ((waited >= boot_limit)); then
                kill "$pid" 2>/dev/null || true
                break
            fi
            sleep 1
            waited=$((waited + 1))
        done
        wait "$pid" || rc=$?
        if grep -q "=== guest:" "$serial" || ((attempt == 2)); then
            break
        fi
        log "the $n-node guest did not reach its init within ${boot_limit}s (qemu rc=$rc): an emulator stall, not a test result; booting it once more"
    done
    elapsed=$(awk -v a="$start" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.1f", b - a }')

    # The serial console ends lines with CR LF: strip CR before matching whole lines.
    local clean
    clean=$(tr -d '\r' <"$serial")
    grep -o "$REPORT_TAG .*" <<<"$clean" | sed "s/^$REPORT_TAG /      /" || true
    if grep -qx "$RESULT_TAG nodes=$n PASS" <<<"$clean"; then
        echo "PASS  $n nodes  ${elapsed}s"
        return 0
    fi
    local why
    if ! grep -q "=== guest:" <<<"$clean"; then
        why="the guest did not reach its init within ${boot_limit}s, twice (qemu rc=$rc)"
    elif ((rc == 124 || rc == 137)); then
        why="timed out after ${NUMA_VM_TIMEOUT:-300}s"
    elif grep -q "^$RESULT_TAG nodes=$n FAIL" <<<"$clean"; then
        why="failed: $(grep "^$RESULT_TAG nodes=$n FAIL" <<<"$clean" \
            | sed "s/^$RESULT_TAG nodes=$n FAIL //" | paste -sd ',' - | sed 's/,/, /g')"
    else
        why="no result line (qemu rc=$rc; guest crashed or could not start)"
    fi
    echo "FAIL  $n nodes  ${elapsed}s  $why"
    echo "----- last 60 lines of $serial -----"
    tail -n 60 <<<"$clean"
    echo "-----"
    return 1
}

failed=0
for n in "${NODE_COUNTS[@]}"; do
    run_guest "$n" || failed=1
done

if ((KEEP || failed)); then
    log "work dir kept: $WORK"
else
    rm -rf "$WORK"
fi
exit "$failed"
