#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# debian-chroot.sh - a cached Debian root of another suite (bookworm,
# trixie, sid), with what ucx-srm needs, and a command run inside it on
# this source tree.
set -euo pipefail

PROG=${0##*/}
SRCDIR=$(cd "$(dirname "$0")/.." && pwd -P)
CACHE=${SRM_CHROOT_CACHE:-/var/cache/ucx-srm-chroot}
MIRROR=${SRM_DEBIAN_MIRROR:-http://deb.debian.org/debian}

usage() {
    cat <<USAGE
NAME
    $PROG - run a command in a Debian chroot of another suite

SYNOPSIS
    $PROG [--suite SUITE] [--deps LEVEL] [--bind DIR]... [--fresh] [--]
        COMMAND [ARG...]
    $PROG --suite SUITE --path
    $PROG -h|--help

DESCRIPTION
    Makes (once, then reuses) a minimal Debian root of SUITE with
    debootstrap --variant=minbase in $CACHE/SUITE, installs what ucx-srm
    needs there with the project's own contrib/install-deps.sh (at LEVEL),
    and runs COMMAND in it with this source tree at /src (read-write: a
    build goes to a directory of its own, e.g. /src/build-SUITE). /proc,
    /sys, /dev and /dev/pts are mounted for the command and unmounted when
    it ends, however it ends. The root itself is a private mount point for
    the run and /run a fresh tmpfs, as on a booted system, so that the
    netns system tests (ip netns) run inside it too. Networking is the
    host's: the chroot reaches what the host reaches (Debian's archive).

    The first run of a suite takes a few minutes (debootstrap, about 30 s,
    then the packages); later runs start at once, and install-deps.sh
    installs only what is missing.

OPTIONS
    --suite SUITE  bookworm, trixie or sid (default: trixie)
    --deps LEVEL   install-deps.sh level inside: build (compile and unit
                   tests), test (also what the system tests use), none
                   (default: build)
    --bind DIR     also mount DIR at the same path inside (read-write)
    --fresh        make the root again, from nothing
    --path         print the root's path (made if need be) and exit
    -h, --help     show this help

EXIT STATUS
    COMMAND's exit status; 2 on bad usage or when not root; 1 when the root
    cannot be made or its packages installed.

EXAMPLES
    contrib/debian-chroot.sh --suite trixie -- pkg-config --modversion ucx
    contrib/debian-chroot.sh --suite sid -- \\
        env SRM_BUILD_DIR=/src/build-sid contrib/build.sh --no-deps
USAGE
}

log() { echo "$PROG: $*" >&2; }
die() { echo "$PROG: error: $1" >&2; exit "${2:-1}"; }

suite=trixie deps=build fresh=0 print_path=0 binds=()
while [ $# -gt 0 ]; do
    case "$1" in
        --suite) [ $# -ge 2 ] || die "--suite needs a value" 2; suite=$2; shift 2 ;;
        --deps) [ $# -ge 2 ] || die "--deps needs a value" 2; deps=$2; shift 2 ;;
        --bind) [ $# -ge 2 ] && [ -d "$2" ] || die "--bind needs a directory" 2
                binds+=("$(cd "$2" && pwd -P)"); shift 2 ;;
        --fresh) fresh=1; shift ;;
        --path) print_path=1; shift ;;
        -h|--help) usage; exit 0 ;;
        --) shift; break ;;
        -*) die "unknown option: $1 (see --help)" 2 ;;
        *) break ;;
    esac
done
case $suite in
    bookworm|trixie|sid) ;;
    *) die "suite '$suite' is not one of bookworm, trixie, sid" 2 ;;
esac
case $deps in
    build|test|none) ;;
    *) die "--deps '$deps' is not one of build, test, none" 2 ;;
esac
[ "$print_path" = 1 ] || [ $# -gt 0 ] || die "no command given (see --help)" 2
[ "$(id -u)" -eq 0 ] || die "must run as root (debootstrap, chroot, mounts)" 2

root=$CACHE/$suite

# The root, made once: debootstrap into a temporary directory, renamed
# when complete, so that an interrupted run leaves nothing half made.
make_root() {
    local tmp=$root.tmp
    if ! command -v debootstrap >/dev/null 2>&1; then
        log "installing debootstrap"
        DEBIAN_FRONTEND=noninteractive apt-get install -y \
            --no-install-recommends debootstrap >&2 ||
            die "cannot install debootstrap"
    fi
    rm -rf "$tmp"
    mkdir -p "$CACHE"
    log "making a $suite root in $root (debootstrap --variant=minbase)"
    debootstrap --variant=minbase "$suite" "$tmp" "$MIRROR" \
        >"$CACHE/$suite.debootstrap.log" 2>&1 ||
        die "debootstrap $suite failed (see $CACHE/$suite.debootstrap.log)"
    mv "$tmp" "$root"
}

[ "$fresh" = 0 ] || rm -rf "$root"
[ -x "$root/bin/bash" ] || make_root
# The archive reached here may be a snapshot older than sid's Release
# files allow (apt-get update: "Release file ... is expired").
if [ "$suite" = sid ]; then
    echo 'Acquire::Check-Valid-Until "false";' \
        >"$root/etc/apt/apt.conf.d/99ucx-srm-valid-until"
fi
if [ "$print_path" = 1 ]; then
    echo "$root"
    exit 0
fi

mounted=()
cleanup() {
    local i
    for (( i = ${#mounted[@]} - 1; i >= 0; i-- )); do
        umount -l "${mounted[i]}" 2>/dev/null || true
    done
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# mount_in TARGET MOUNT-ARGS...: mounted for this run, undone on exit.
mount_in() {
    local target=$1
    shift
    mkdir -p "$target"
    mount "$@" "$target" || die "cannot mount $target"
    mounted+=("$target")
}

# The root is a mount point of its own, private to this run, as / is on a
# booted system: 'ip netns exec' (the netns system tests) remounts / as a
# slave, and nothing mounted beneath the root shows up elsewhere. /run is
# a fresh tmpfs, so that state a killed run left there (simulated hosts,
# sockets) is gone with the run.
mount_in "$root" --bind "$root"
mount --make-private "$root" || die "cannot make $root a private mount"
mount_in "$root/run" -t tmpfs -o mode=0755 tmpfs
mount_in "$root/proc" -t proc proc
mount_in "$root/sys" --rbind /sys
mount_in "$root/dev" --rbind /dev
mount_in "$root/src" --bind "$SRCDIR"
for dir in ${binds[@]+"${binds[@]}"}; do
    mount_in "$root$dir" --bind "$dir"
done
cp /etc/resolv.conf "$root/etc/resolv.conf" 2>/dev/null || true
# minbase has no /etc/hosts (netbase is not in it), and 'ip netns exec'
# mounts a simulated host's hosts file over it.
[ -e "$root/etc/hosts" ] ||
    printf '127.0.0.1\tlocalhost\n::1\t\tlocalhost ip6-localhost ip6-loopback\n' \
        >"$root/etc/hosts"

in_root() {
    chroot "$root" /usr/bin/env -i HOME=/root TERM="${TERM:-dumb}" \
        PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
        LC_ALL=C.UTF-8 "$@"
}

if [ "$deps" != none ]; then
    in_root /src/contrib/install-deps.sh --level "$deps" >&2 ||
        die "installing the packages in the $suite root failed"
fi
status=0
in_root /bin/bash -c 'cd /src && exec "$@"' "$PROG" "$@" || status=$?
exit "$status"
