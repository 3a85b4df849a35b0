# shellcheck shell=bash
# ensure_packages PKG...: install the Debian/Ubuntu packages that are missing, as root with
# apt-get, or stop with the exact command to run. dpkg-query is used rather than `dpkg -s`
# because `dpkg -s` also succeeds for removed packages whose configuration files remain.
ensure_packages() {
    local missing=() p status
    for p in "$@"; do
        status=$(dpkg-query -W -f='${db:Status-Status}' "$p" 2>/dev/null || true)
        [[ $status == installed ]] || missing+=("$p")
    done
    ((${#missing[@]})) || return 0
    if ((EUID == 0)) && command -v apt-get >/dev/null; then
        echo "installing: ${missing[*]}" >&2
        export DEBIAN_FRONTEND=noninteractive
        apt-get update -qq
        apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
    else
        echo "missing packages; run as root:" >&2
        echo "  apt-get update && apt-get install -y --no-install-recommends ${missing[*]}" >&2
        exit 2
    fi
}

# Packages every build of numatask needs (hwlocality links the system hwloc).
BUILD_PACKAGES=(libhwloc-dev libudev-dev pkg-config hwloc)

# Packages the multi-node tests in QEMU guests need besides (scripts/numa-vm-test.sh): QEMU, a
# guest kernel, static busybox for the guest userland, numactl for the topology dump in the
# log, cpio to pack the initramfs. The guest kernel is the distribution's own: Debian's
# linux-image-amd64 (vmlinuz-*-amd64), or on Ubuntu linux-image-generic (vmlinuz-*-generic,
# readable by root only there).
KERNEL_PACKAGE=linux-image-amd64 KERNEL_GLOB='vmlinuz-*-amd64'
if [[ -r /etc/os-release ]] && grep -qE '^ID=ubuntu|^ID_LIKE=.*ubuntu' /etc/os-release; then
    KERNEL_PACKAGE=linux-image-generic KERNEL_GLOB='vmlinuz-*-generic'
fi
VM_PACKAGES=(qemu-system-x86 "$KERNEL_PACKAGE" busybox-static numactl cpio "${BUILD_PACKAGES[@]}")
