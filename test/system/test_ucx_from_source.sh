#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
#
# test_ucx_from_source: ucx-srm against a UCX that a site built itself,
# from this source tree. UCX SRM_UCX_FROM_SOURCE (default 1.22.0, the
# first release that loads a transport from a directory) is built from
# its source with its own configure defaults (no multi-threading, unlike
# Debian's), into a cached prefix; then
# 1. srm is configured against that prefix (pkg-config, ucx_info -b for
#    the macros that size UCX's structures) and built; make install puts
#    the module into that UCX's module directory (under a DESTDIR; the rest
#    of the test installs it under the log directory); the unit and
#    UCT-level gtests pass against that UCX, test_abi among them;
# 2. UCX finds the module without LD_PRELOAD: `ucx_info -d` lists the srm
#    transport with UCX_PLUGIN_PATH naming srm's module directory, and
#    with the module installed in the ucx/ directory next to a copy of
#    that UCX's libraries, and through srm-run; it lists none with neither
#    (from 1.22 only);
# 3. that UCX's ucx_perftest runs over srm found so: UCP tag_lat 8 B,
#    tag_bw 4 MB and UCT am_lat 8 B, each with a "Final:" line; and this
#    machine's Open MPI (built against its own UCX) runs 4 ranks of
#    test/mpi/srm_mpi_check.c on that UCX through srm-run over srm;
# 4. the module built for this machine's UCX (SRM_BUILD_DIR, another
#    minor version) in that UCX's plugin path is left out, with the
#    reason in UCX's debug log, and UCX runs on with its own transports.
#
# The UCX source: SRM_UCX_SRC_<version with _> (e.g. SRM_UCX_SRC_1_22_0,
# a checkout of openucx/ucx at the tag), else
# /var/cache/ucx-srm-chroot/ucx-src/ucx-<version>. Debian's archive has no
# such tree and this machine reaches nothing else: without one the test
# says so and is skipped.
#
# srm-test-timeout: 2400
. "$(dirname "$0")/lib.sh"

# lib.sh's module and agent are this machine's UCX's.
other_module=$SRM_MODULE
unset LD_PRELOAD SRM_MODULE UCX_SRM_AGENT_PATH
VER=${SRM_UCX_FROM_SOURCE:-1.22.0}
var=SRM_UCX_SRC_${VER//./_}
tree=${!var:-/var/cache/ucx-srm-chroot/ucx-src/ucx-$VER}
prefix=${SRM_UCX_PREFIX:-/var/cache/ucx-srm-chroot/ucx-$VER-prefix}
minor=$(echo "$VER" | cut -d. -f2)

if [ ! -f "$tree/src/uct/base/uct_iface.h" ]; then
    srm_skip "no UCX $VER source tree at $tree (set $var): UCX $VER was NOT tested"
fi
tree_ver=$(for part in major minor patch; do
               sed -n "s/^define(.ucx_ver_$part., *\([0-9]*\)).*/\1/p" "$tree/configure.ac"
           done | paste -sd.)
[ "$tree_ver" = "$VER" ] || srm_skip "$tree is UCX $tree_ver, not $VER"
srm_pass "UCX $VER source: $tree"

# --- UCX itself, built once per tree -----------------------------------------
stamp="$prefix/.built-from"
if [ "$(cat "$stamp" 2>/dev/null)" != "$tree" ]; then
    srm_log "building UCX $VER into $prefix (once; 10-20 min on 2 cores)"
    t0=$(date +%s)
    if ! (cd "$tree" &&
          { [ -x configure ] || ./autogen.sh; } &&
          ./configure --prefix="$prefix" --enable-assertions \
              --disable-doxygen-doc --without-java --without-go \
              --without-cuda --without-rocm --without-knem --without-xpmem \
              --without-ugni --without-fuse3 &&
          make -j2 && rm -rf "$prefix" && make install &&
          echo "$tree" >"$stamp") >"$SRM_LOG/ucx-build.log" 2>&1; then
        srm_fail "UCX $VER did not build from $tree"
        srm_show_log "$SRM_LOG/ucx-build.log" 15
        srm_done
    fi
    srm_pass "UCX $VER built into $prefix ($(( $(date +%s) - t0 )) s)"
fi
mt=$("$prefix/bin/ucx_info" -b | awk '$2 == "ENABLE_MT" { print $3 }')

# --- 1. srm against it ----------------------------------------------------------
b=$SRM_LOG/build
inst=$SRM_LOG/inst
rm -rf "$b" "$inst" && mkdir -p "$b"
t0=$(date +%s)
if (cd "$b" &&
    PKG_CONFIG_PATH=$prefix/lib/pkgconfig "$SRM_SRCDIR/configure" -q \
        --prefix="$prefix" --with-ucx-src="$tree" &&
    make -j2 && make -j2 test/gtest/gtest &&
    make install DESTDIR="$SRM_LOG/dest" &&
    PKG_CONFIG_PATH=$prefix/lib/pkgconfig "$SRM_SRCDIR/configure" -q \
        --prefix="$inst" --with-ucx-src="$tree" &&
    make -j2 && make install) \
        >"$SRM_LOG/srm-build.log" 2>&1; then
    srm_pass "srm configured against UCX $VER and built ($(( $(date +%s) - t0 )) s)"
else
    srm_fail "srm did not build against UCX $VER"
    grep -E 'error|Error' "$SRM_LOG/srm-build.log" | head -15 | sed 's/^/    | /'
    srm_done
fi
# make install into UCX's prefix puts the module where that UCX scans
# (from 1.22); into another prefix, under that prefix.
ucx_libdir=$(PKG_CONFIG_PATH=$prefix/lib/pkgconfig pkg-config --variable=libdir ucx-uct)
want=$SRM_LOG/dest$ucx_libdir/ucx/libuct_srm.so.0
[ "$minor" -ge 22 ] || want=$SRM_LOG/dest$prefix/lib/ucx/libuct_srm.so.0
if [ -e "$want" ]; then
    srm_pass "make install with UCX's prefix puts the module at ${want#$SRM_LOG/dest} (under DESTDIR)"
else
    srm_fail "make install with UCX's prefix did not put the module at ${want#$SRM_LOG/dest}: $(cd "$SRM_LOG/dest" && find . -name 'libuct_srm.so*' | head -3)"
fi
if [ -e "$inst/lib/ucx/libuct_srm.so.0" ]; then
    srm_pass "make install with --prefix=$inst puts the module in $inst/lib/ucx"
else
    srm_fail "make install with --prefix=$inst: no $inst/lib/ucx/libuct_srm.so.0 ($(find "$inst" -name 'libuct_srm.so*' | head -3))"
fi
# A --prefix that is a symlink to UCX's tree is UCX's prefix too.
if [ "$minor" -ge 22 ]; then
    link=$SRM_LOG/ucx-prefix-link
    rm -rf "$link" "$SRM_LOG/build-link" && mkdir -p "$SRM_LOG/build-link" &&
        ln -s "$(cd "$prefix" && pwd -P)" "$link"
    got=$(cd "$SRM_LOG/build-link" &&
          PKG_CONFIG_PATH=$prefix/lib/pkgconfig "$SRM_SRCDIR/configure" -q \
              --prefix="$link" --with-ucx-src="$tree" >/dev/null 2>&1 &&
          make -s --no-print-directory \
              --eval 'srm-moduledir: ; @echo $(srmmoduledir)' srm-moduledir)
    if [ "$got" = "$ucx_libdir/ucx" ]; then
        srm_pass "configure --prefix=<a symlink to UCX's prefix>: the module goes to $got"
    else
        srm_fail "configure --prefix=<a symlink to UCX's prefix>: srmmoduledir '$got', want $ucx_libdir/ucx"
    fi
    rm -rf "$link" "$SRM_LOG/build-link"
fi
# The macros that size UCX's structures are that build's, not Debian's.
srm_mt=$(awk '$2 == "ENABLE_MT" { print $3 }' "$b/config.h")
if [ -n "$mt" ] && [ "$srm_mt" = "$mt" ]; then
    srm_pass "srm's config.h has UCX $VER's ENABLE_MT $mt (its ucx_info -b)"
else
    srm_fail "srm's config.h has ENABLE_MT '$srm_mt', UCX $VER's ucx_info -b says '$mt'"
fi
export LD_LIBRARY_PATH=$prefix/lib PATH=$prefix/bin:$PATH
module=$b/.libs/libuct_srm.so.0
t0=$(date +%s)
(cd "$b" && LD_PRELOAD=$module UCX_SRM_AGENT_PATH=$b/srmd \
     UCX_SRM_SOCKET=srm-src-$$ UCX_SRM_IDLE_TIMEOUT=1s UCX_SRM_DEVICES=lo \
     GTEST_FILTER='-verbs_srq.*' timeout -k 5 900 test/gtest/gtest) \
    >"$SRM_LOG/gtest.log" 2>&1
rc=$?
summary=$(grep -E '^\[  (PASSED|FAILED|SKIPPED) +\] [0-9]+ test' "$SRM_LOG/gtest.log" |
          paste -sd ' ' -)
if [ "$rc" = 0 ] && grep -q '^\[  PASSED  \]' "$SRM_LOG/gtest.log" &&
   ! grep -q '^\[  FAILED  \]' "$SRM_LOG/gtest.log" &&
   grep -q '^\[       OK \] abi\.' "$SRM_LOG/gtest.log"; then
    srm_pass "UCX $VER: gtests $summary ($(( $(date +%s) - t0 )) s)"
else
    srm_fail "UCX $VER: gtests exit $rc, ${summary:-no summary}"
    grep -E '^\[  FAILED  \]' "$SRM_LOG/gtest.log" | head -10 | sed 's/^/    | /'
fi

# --- 2. found without LD_PRELOAD -------------------------------------------------
moddir=$inst/lib/ucx
copy=$SRM_LOG/ucx-lib
rm -rf "$copy" && cp -a "$prefix/lib" "$copy" && cp -a "$moddir"/libuct_srm.so* "$copy/ucx/"
lists_srm() { env "$@" ucx_info -d 2>&1 | grep -q '^# *Transport: srm$'; }
if [ "$minor" -ge 22 ]; then
    if lists_srm UCX_PLUGIN_PATH="$moddir"; then
        srm_pass "UCX $VER lists srm with UCX_PLUGIN_PATH=$moddir, no LD_PRELOAD"
    else
        srm_fail "UCX $VER does not list srm with UCX_PLUGIN_PATH=$moddir"
        UCX_PLUGIN_PATH=$moddir UCX_LOG_LEVEL=debug ucx_info -d 2>&1 | grep -i 'srm\|module' | head -8
    fi
    if lists_srm LD_LIBRARY_PATH="$copy"; then
        srm_pass "UCX $VER lists srm from its own module directory ($copy/ucx)"
    else
        srm_fail "UCX $VER does not list srm installed in $copy/ucx"
    fi
    penv=$("$inst/bin/srm-run" --print-env | head -n 1)
    if [ "$penv" = "UCX_PLUGIN_PATH=$moddir" ] &&
       "$inst/bin/srm-run" ucx_info -d 2>&1 | grep -q '^# *Transport: srm$'; then
        srm_pass "srm-run on UCX $VER sets $penv (no LD_PRELOAD) and ucx_info lists srm"
    else
        srm_fail "srm-run on UCX $VER: --print-env says '$penv'; want UCX_PLUGIN_PATH=$moddir and srm listed"
    fi
    if lists_srm; then
        srm_fail "UCX $VER lists srm with the module nowhere it looks: the two checks above prove nothing"
    else
        srm_pass "UCX $VER lists no srm without it (the control)"
    fi
else
    srm_log "UCX $VER loads no transport from a directory (1.22 does): LD_PRELOAD below"
    export LD_PRELOAD=$module
fi

# --- 3. its ucx_perftest over srm ------------------------------------------------
export UCX_SRM_AGENT_PATH=$b/srmd UCX_SRM_DEVICES=lo
[ "$minor" -ge 22 ] && export UCX_PLUGIN_PATH=$moddir
SRM_SRMD=$b/srmd SRM_SRMCTL=$b/srmctl
srm_agent_start || { srm_fail "srmd of the UCX $VER build did not start"; srm_done; }
dev=$("$b/srmctl" -s "$UCX_SRM_SOCKET" device)
export UCX_SRM_AGENT=never
for spec in "ucp tag_lat 8" "ucp tag_bw 4194304" "uct am_lat 8"; do
    set -- $spec
    args=(-t "$2" -s "$3" -n 1000)
    if [ "$1" = uct ]; then
        args+=(-x srm -d "$dev")
        unset UCX_TLS
    else
        export UCX_TLS=srm
    fi
    if srm_perftest_pair "perftest-$2" 60 "${args[@]}"; then
        srm_pass "UCX $VER's ucx_perftest $1 $2 $3 B over srm: $(echo "$SRM_FINAL" | tr -s ' ')"
    else
        srm_fail "UCX $VER's ucx_perftest $1 $2: client $SRM_CLIENT_RC, server $SRM_SERVER_RC"
        srm_show_log "$SRM_CLIENT_LOG" 8
    fi
done
unset UCX_TLS
# Open MPI built against this machine's UCX, running on UCX $VER (UCP's
# API keeps its ABI): a site that upgrades UCX under its MPI.
if [ "$minor" -ge 22 ] && command -v mpirun >/dev/null 2>&1 &&
   srm_mpicc "$SRM_SRCDIR/test/mpi/srm_mpi_check.c" "$SRM_LOG/srm_mpi_check"; then
    frames0=$(srm_agent_frames)
    timeout -k 5 180 "$inst/bin/srm-run" mpirun --allow-run-as-root \
        --oversubscribe -np 4 -x LD_LIBRARY_PATH -x UCX_TLS=srm,self \
        -x UCX_SRM_SOCKET -x UCX_SRM_AGENT -x UCX_SRM_DEVICES \
        "$SRM_LOG/srm_mpi_check" >"$SRM_LOG/mpi.log" 2>&1
    rc=$?
    summary=$(grep -a '^srm_mpi_check: .* passed' "$SRM_LOG/mpi.log" | tail -n 1)
    frames=$(( $(srm_agent_frames) - frames0 ))
    if [ "$rc" = 0 ] && [[ $summary == *" 0 failed" ]] && [ "$frames" -gt 0 ]; then
        srm_pass "$(mpirun --version | head -n 1) on UCX $VER, 4 ranks through srm-run over srm: $summary; the agent moved $frames frames"
    else
        srm_fail "Open MPI on UCX $VER over srm: exit $rc, '${summary:-no summary}', $frames frames"
        srm_show_log "$SRM_LOG/mpi.log" 10
    fi
fi
unset UCX_SRM_AGENT
srm_agent_stop

# --- 4. a module built for another UCX is refused ----------------------------------
# Across these versions the dynamic linker refuses it already (a symbol of
# the other version is missing); between neighbours that link, srm's own
# check does (test_ucx_info). Either way that UCX must go on without it.
other_ver=$(sed -n 's/^#define SRM_UCX_VERSION "\(.*\)"$/\1/p' "$SRM_BUILD_DIR/config.h" 2>/dev/null)
if [ "$minor" -lt 22 ]; then
    srm_log "UCX $VER has no UCX_PLUGIN_PATH: not loading another version's module"
elif [ -z "$other_ver" ] || [ "${other_ver%.*}" = "${VER%.*}" ]; then
    srm_log "no module of another UCX minor version to load (SRM_BUILD_DIR's is '${other_ver:-unknown}')"
else
    otherdir=$SRM_LOG/module-$other_ver
    rm -rf "$otherdir" && mkdir -p "$otherdir" &&
        cp -a "$(dirname "$other_module")"/libuct_srm.so* "$otherdir/"
    out=$(env -u UCX_PLUGIN_PATH UCX_PLUGIN_PATH="$otherdir" UCX_LOG_LEVEL=debug ucx_info -d 2>&1)
    rc=$?
    why=$(grep -m1 "dlopen('$otherdir/libuct_srm\|srm: built for UCX" <<<"$out" | sed 's/.*UCX  DEBUG //')
    if [ "$rc" = 0 ] && ! grep -q '^# *Transport: srm$' <<<"$out" &&
       grep -q '^# *Transport: tcp$' <<<"$out" && [ -n "$why" ]; then
        srm_pass "UCX $VER leaves out the module built for UCX $other_ver and runs on: $why"
    else
        srm_fail "UCX $VER with the module built for UCX $other_ver in its plugin path: exit $rc, reason '${why:-none}'"
        printf '%s\n' "$out" | grep -E 'srm|Transport' | head -8 | sed 's/^/    | /'
    fi
fi
srm_done
