#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
#
# test_ucx_headers: ucx_srm compiles, warnings as errors, against the
# headers of every UCX source tree at hand (the one the build uses, and each
# /var/cache/ucx-srm-chroot/ucx-src/ucx-<version> or $SRM_UCX_SRC_DIRS,
# space-separated), so the versions no chroot or build of UCX here runs
# (1.14 .. 1.21) are at least compiled. Compile only: uct/api/version.h is
# made from the tree's version.h.in, UCX's own config.h stays this build's.
# The gtests test_distro_trixie and _sid build and run say more.
# Versions from 1.13 to 1.23 without a tree are named, loudly, as not
# checked; with no tree but the build's the test is skipped.
#
. "$(dirname "$0")/lib.sh"

build_tree=$(sed -n 's/^UCX_SRC_DIR = //p' "$SRM_BUILD_DIR/Makefile")
trees=()
for t in "$build_tree" ${SRM_UCX_SRC_DIRS:-/var/cache/ucx-srm-chroot/ucx-src/ucx-1.*}; do
    [ -f "$t/src/uct/api/version.h.in" ] && trees+=("$t")
done
[ "${#trees[@]}" -gt 1 ] ||
    srm_skip "no UCX source tree beside the build's ($build_tree): put trees in /var/cache/ucx-srm-chroot/ucx-src/ucx-<version> or name them in SRM_UCX_SRC_DIRS"

tree_version() { # TREE: major.minor.patch of its configure.ac
    for part in major minor patch; do
        sed -n "s/^define(.ucx_ver_$part., *\([0-9]*\)).*/\1/p" "$1/configure.ac"
    done | paste -sd.
}
cflags=$(sed -n 's/^BASE_CFLAGS = //p' "$SRM_BUILD_DIR/Makefile")
sources=("$SRM_SRCDIR"/ucx_srm/uct/*.c "$SRM_SRCDIR"/ucx_srm/common/*.c
         "$SRM_SRCDIR"/ucx_srm/agent/*.c)
declare -A checked=()
for tree in "${trees[@]}"; do
    version=$(tree_version "$tree")
    major=${version%%.*} minor=$(echo "$version" | cut -d. -f2)
    [ -n "${checked[$major.$minor]:-}" ] && continue
    inc=$SRM_LOG/include-$version
    mkdir -p "$inc/uct/api"
    sed "s/@MAJOR_VERSION@/$major/g; s/@MINOR_VERSION@/$minor/g;
         s/@PATCH_VERSION@/${version##*.}/g; s/@VERSION@/$version/g;
         s/@[A-Z_]*@//g" "$tree/src/uct/api/version.h.in" >"$inc/uct/api/version.h"
    errors=$SRM_LOG/errors-$version.log
    : >"$errors"
    failed=0
    for src in "${sources[@]}"; do
        # shellcheck disable=SC2086 # BASE_CFLAGS is a list of flags
        gcc -std=gnu11 -fsyntax-only $cflags -DHAVE_CONFIG_H \
            -DSRM_BINDIR='"/usr/bin"' -I"$SRM_SRCDIR" -I"$SRM_BUILD_DIR" \
            -I"$inc" -isystem "$tree/src" "$src" >>"$errors" 2>&1 ||
            failed=$((failed + 1))
    done
    checked[$major.$minor]=$version
    if [ "$failed" = 0 ]; then
        srm_pass "UCX $version: ${#sources[@]} sources compile ($tree)"
    else
        srm_fail "UCX $version: $failed of ${#sources[@]} sources do not compile"
        srm_show_log "$errors" 20
    fi
done
missing=""
for minor in $(seq 13 23); do
    [ -n "${checked[1.$minor]:-}" ] || missing="$missing 1.$minor"
done
[ -z "$missing" ] ||
    srm_log "*** NOT checked, no source tree here:$missing ***"
srm_done
