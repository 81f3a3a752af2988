#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
#
# test_distcheck: `make distcheck` passes: the release tarball holds every
# file a build needs (a header left out of the sources lists fails here,
# as srm_atomic.h once did) and none of the build tree's objects, and the
# tree it unpacks to builds out of tree, passes make check, installs and
# uninstalls cleanly.
#
# srm-test-timeout: 1200
. "$(dirname "$0")/lib.sh"

srm_require_cmd make tar
[ -f "$SRM_BUILD_DIR/Makefile" ] || srm_skip "no Makefile in $SRM_BUILD_DIR (not a build tree)"
unset LD_PRELOAD

if make -C "$SRM_BUILD_DIR" distcheck >"$SRM_LOG/distcheck.log" 2>&1; then
    tarball=$(ls "$SRM_BUILD_DIR"/ucx-srm-*.tar.gz | head -n 1)
    objects=$(tar -tzf "$tarball" | grep -c '\.o$\|\.lo$\|/\.libs/\|\.dirstamp$')
    if [ "$objects" = 0 ]; then
        srm_pass "make distcheck passes; $(basename "$tarball") holds no build products"
    else
        srm_fail "$(basename "$tarball") holds $objects build products"
    fi
else
    srm_fail "make distcheck failed"
    grep -m5 'rror' "$SRM_LOG/distcheck.log" | sed 's/^/    | /'
    srm_show_log "$SRM_LOG/distcheck.log" 15
fi
srm_done
