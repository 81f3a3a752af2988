#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
#
# test_configure_xrc: the verbs wire's XRC objects, which carry no frames
# yet, are built only with configure --enable-xrc:
#  - the default build has none of them (no ENABLE_XRC in config.h, no XRC
#    object in libsrm_wire), only the choice between XRC and RC;
#  - --enable-xrc builds them, and their unit tests (the target's wire form,
#    the senders' table, the choice) pass in that build;
#  - --enable-xrc without the verbs wire stops configure, naming it.
#
. "$(dirname "$0")/lib.sh"

ucx_src=$(sed -n 's/^UCX_SRC_DIR = //p' "$SRM_BUILD_DIR/Makefile")
[ -d "$ucx_src" ] || srm_skip "no UCX source tree in $SRM_BUILD_DIR/Makefile"
grep -q '^#define HAVE_VERBS 1' "$SRM_BUILD_DIR/config.h" ||
    srm_skip "this build has no verbs wire (libibverbs-dev), so no XRC to build"
srm_require_cmd nm make

wire_lib=$SRM_BUILD_DIR/.libs/libsrm_wire.a
if grep -q '^#define ENABLE_XRC' "$SRM_BUILD_DIR/config.h"; then
    srm_skip "$SRM_BUILD_DIR was configured with --enable-xrc: this test" \
             "compares the default build with an XRC one"
elif [ ! -r "$wire_lib" ]; then
    srm_fail "no $wire_lib in the default build"
elif nm "$wire_lib" | grep -q ' T srm_wire_verbs_xrc_domain_open$'; then
    srm_fail "the default build has the XRC objects (srm_wire_verbs_xrc_domain_open)"
elif ! nm "$wire_lib" | grep -q ' T srm_wire_verbs_xrc_choose$'; then
    srm_fail "the default build lacks the XRC choice (srm_wire_verbs_xrc_choose)"
else
    srm_pass "the default build has the XRC choice and none of the XRC objects"
fi

dir=$SRM_LOG/xrc
rm -rf "$dir" && mkdir -p "$dir"
if ! (cd "$dir" && "$SRM_SRCDIR/configure" --with-ucx-src="$ucx_src" \
          --enable-xrc >configure.out 2>&1); then
    srm_fail "configure --enable-xrc failed: $(grep -m 1 'error:' "$dir/configure.out")"
    srm_done
fi
if grep -q '^#define ENABLE_XRC 1' "$dir/config.h" &&
   grep -q 'XRC objects *: yes' "$dir/configure.out"; then
    srm_pass "configure --enable-xrc: ENABLE_XRC in config.h, said in its summary"
else
    srm_fail "configure --enable-xrc: no ENABLE_XRC in config.h or its summary"
fi
if ! make -C "$dir" -j2 srmd test/gtest/gtest >"$dir/make.out" 2>&1; then
    srm_fail "the --enable-xrc build failed: $(grep -m 3 'error' "$dir/make.out")"
    srm_done
fi
if nm "$dir/.libs/libsrm_wire.a" | grep -q ' T srm_wire_verbs_xrc_domain_open$'; then
    srm_pass "the --enable-xrc build has the XRC objects"
else
    srm_fail "the --enable-xrc build lacks srm_wire_verbs_xrc_domain_open"
fi
"$dir/test/gtest/gtest" --gtest_filter='verbs_xrc.*:xrc_target.*:xrc_table*' \
    >"$dir/gtest.out" 2>&1
rc=$?
ran=$(sed -n 's/^\[==========\] \([0-9]*\) tests\{0,1\} from .* ran\..*/\1/p' "$dir/gtest.out")
if [ "$rc" -eq 0 ] && grep -q '^\[       OK \] xrc_target\.' "$dir/gtest.out" &&
   grep -q '^\[       OK \] xrc_table\.' "$dir/gtest.out"; then
    srm_pass "the XRC unit tests pass in the --enable-xrc build ($ran tests)"
else
    srm_fail "the XRC unit tests (rc $rc): $(grep -m 3 'FAILED\|error' "$dir/gtest.out")"
fi

rm -rf "$SRM_LOG/xrc-no-verbs" && mkdir -p "$SRM_LOG/xrc-no-verbs"
if (cd "$SRM_LOG/xrc-no-verbs" && "$SRM_SRCDIR/configure" --with-ucx-src="$ucx_src" \
        --enable-xrc --without-verbs >configure.out 2>&1); then
    srm_fail "configure --enable-xrc --without-verbs went on"
elif grep -q 'error: --enable-xrc needs the verbs wire' "$SRM_LOG/xrc-no-verbs/configure.out"; then
    srm_pass "--enable-xrc without the verbs wire: configure stops, naming it"
else
    srm_fail "--enable-xrc --without-verbs: $(tail -n 2 "$SRM_LOG/xrc-no-verbs/configure.out")"
fi
srm_done
