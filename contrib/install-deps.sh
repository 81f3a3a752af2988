#!/usr/bin/env bash
# install-deps.sh - install the Debian 12 packages ucx-srm needs to build,
# test and benchmark.  Idempotent: does nothing when all are installed.
set -euo pipefail

PROG=${0##*/}

PACKAGES=(
    build-essential autoconf automake libtool pkg-config dpkg-dev
    libucx-dev ucx-utils libssl-dev
    openmpi-bin libopenmpi-dev
    rdma-core libibverbs-dev ibverbs-providers
    libhwloc-dev
    googletest libgtest-dev
    iproute2 nftables netpipe-openmpi
    clang libclang-rt-14-dev
    gnuplot-nox procps util-linux
    qemu-system-x86 busybox-static cpio kmod ibverbs-utils
)

usage() {
    cat <<USAGE
NAME
    $PROG - install the Debian packages needed to build, test and benchmark ucx-srm

SYNOPSIS
    $PROG [-n|--dry-run] [-l|--list] [-h|--help]

DESCRIPTION
    Checks with dpkg-query which of the packages below are not installed.
    When all of them are installed it prints so and exits without touching
    apt at all, so that reruns are fast.  Otherwise it runs 'apt-get update'
    once and then 'apt-get install -y --no-install-recommends' for the
    missing packages only (DEBIAN_FRONTEND=noninteractive), printing their
    names first.

    Must run as root (or with -n).  Meant for a fresh Debian 12 (bookworm).

    Packages:
$(printf '        %s\n' "${PACKAGES[@]}")

OPTIONS
    -n, --dry-run   Only print which packages are missing; change nothing.
    -l, --list      Print the full package list, one per line, and exit.
    -h, --help      Show this help and exit.

EXIT STATUS
    0  all packages are installed (or would be, with -n: 0 when none missing,
       1 when some are missing)
    1  apt failed, or a package is still missing after installation
    2  usage error, or not root

EXAMPLES
    sudo contrib/install-deps.sh
    contrib/install-deps.sh --dry-run
USAGE
}

die() { echo "$PROG: error: $*" >&2; exit "${2:-1}"; }

dry_run=0
while [ $# -gt 0 ]; do
    case "$1" in
        -h|--help) usage; exit 0 ;;
        -n|--dry-run) dry_run=1 ;;
        -l|--list) printf '%s\n' "${PACKAGES[@]}"; exit 0 ;;
        *) echo "$PROG: unknown argument: $1 (see --help)" >&2; exit 2 ;;
    esac
    shift
done

# Print the packages of PACKAGES that dpkg does not report as installed.
missing_packages() {
    local p status
    for p in "${PACKAGES[@]}"; do
        status=$(dpkg-query -W -f='${db:Status-Status}' "$p" 2>/dev/null || true)
        if [ "$status" != "installed" ]; then
            echo "$p"
        fi
    done
}

command -v dpkg-query >/dev/null 2>&1 || die "dpkg-query not found: this script is for Debian" 2

mapfile -t missing < <(missing_packages)

if [ "${#missing[@]}" -eq 0 ]; then
    echo "$PROG: all ${#PACKAGES[@]} packages already installed; nothing to do"
    exit 0
fi

echo "$PROG: missing packages (${#missing[@]}): ${missing[*]}"

if [ "$dry_run" -eq 1 ]; then
    echo "$PROG: dry run, not installing"
    exit 1
fi

[ "$(id -u)" -eq 0 ] || die "must run as root to install packages" 2

export DEBIAN_FRONTEND=noninteractive
echo "$PROG: apt-get update"
apt-get update -q || die "apt-get update failed"

echo "$PROG: installing: ${missing[*]}"
apt-get install -y -q --no-install-recommends "${missing[@]}" \
    || die "apt-get install failed"

mapfile -t still < <(missing_packages)
if [ "${#still[@]}" -ne 0 ]; then
    die "still not installed after apt-get install: ${still[*]}"
fi
echo "$PROG: installed ${#missing[@]} package(s): ${missing[*]}"
