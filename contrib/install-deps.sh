#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# install-deps.sh - install the Debian packages ucx-srm needs to build,
# test and benchmark (bookworm, trixie, sid).  Idempotent: does nothing when
# all are installed.
set -euo pipefail

PROG=${0##*/}

# Levels: build (configure, make, the unit and UCT-level tests), test (the
# system tests, fuzzers and benchmarks too), all (the soft-RoCE VM too).
# The names are the same in bookworm, trixie and sid.
BUILD_PACKAGES=(
    build-essential autoconf automake libtool pkg-config dpkg-dev
    libucx-dev ucx-utils libssl-dev
    rdma-core libibverbs-dev
    libhwloc-dev
    googletest libgtest-dev
)
TEST_PACKAGES=(
    openmpi-bin libopenmpi-dev mpich libmpich-dev ibverbs-providers
    iproute2 nftables netpipe-openmpi
    clang libclang-rt-dev
    gnuplot-nox procps util-linux jq
    groff-base man-db systemd passwd python3
    debhelper lintian debootstrap tmux
)
VM_PACKAGES=(
    qemu-system-x86 busybox-static cpio kmod ibverbs-utils
)
level=all

usage() {
    cat <<USAGE
NAME
    $PROG - install the Debian packages needed to build, test and benchmark ucx-srm

SYNOPSIS
    $PROG [--level build|test|all] [-n|--dry-run] [-l|--list] [-h|--help]

DESCRIPTION
    Checks with dpkg-query which of the packages below are not installed.
    When all of them are installed it prints so and exits without touching
    apt at all, so that reruns are fast.  Otherwise it runs 'apt-get update'
    once and then 'apt-get install -y --no-install-recommends' for the
    missing packages only (DEBIAN_FRONTEND=noninteractive), printing their
    names first.

    Must run as root (or with -n).  Meant for a fresh Debian 12 (bookworm),
    13 (trixie) or sid; contrib/debian-chroot.sh runs it in the others.

    Packages, by level (each level includes the ones before):
      build: ${BUILD_PACKAGES[*]}
      test:  ${TEST_PACKAGES[*]}
      all:   ${VM_PACKAGES[*]}

OPTIONS
    --level LEVEL   build, test or all (default all).
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

dry_run=0 list=0
while [ $# -gt 0 ]; do
    case "$1" in
        -h|--help) usage; exit 0 ;;
        -n|--dry-run) dry_run=1 ;;
        -l|--list) list=1 ;;
        --level) [ $# -ge 2 ] || die "--level needs a value" 2
                 level=$2; shift ;;
        *) echo "$PROG: unknown argument: $1 (see --help)" >&2; exit 2 ;;
    esac
    shift
done
case $level in
    build) PACKAGES=("${BUILD_PACKAGES[@]}") ;;
    test)  PACKAGES=("${BUILD_PACKAGES[@]}" "${TEST_PACKAGES[@]}") ;;
    all)   PACKAGES=("${BUILD_PACKAGES[@]}" "${TEST_PACKAGES[@]}"
                     "${VM_PACKAGES[@]}") ;;
    *) die "--level '$level' is not one of build, test, all" 2 ;;
esac
if [ "$list" = 1 ]; then
    printf '%s\n' "${PACKAGES[@]}"
    exit 0
fi

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
