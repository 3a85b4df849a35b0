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
