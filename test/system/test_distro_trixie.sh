#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
#
# test_distro_trixie, test_distro_sid (one file; the suite is its name):
# ucx-srm on Debian 13 (UCX 1.18.1, Open MPI 5.0) or sid (UCX 1.23, Open
# MPI 6.0), from this source tree. In a root of that suite
# (contrib/debian-chroot.sh, cached), configure against a source tree of
# the installed UCX, build, and run
# 1. the unit and UCT-level gtests (as make check does: the module
#    preloaded, a private agent per test) against the suite's installed
#    libucx: all must pass;
# 2. test/mpi/srm_mpi_check.c, 4 ranks on the root's one host, through
#    srm-run's mpirun with UCX_TLS=srm,self: "0 failed", and the agent's
#    frame counter grew;
# 3. one-host ucx_perftest pairs over srm: UCP tag_lat 8 B, tag_bw 4 MB,
#    UCT am_lat 8 B (with -P 0 where perftest is built with MPI, as
#    trixie's is: else it waits for mpirun's second rank), each with a
#    "Final:" line on both sides. From UCX 1.22 (sid) the module is found
#    the way a site installs it: `make install` into the root's UCX module
#    directory, no LD_PRELOAD (`ucx_info -d` must list srm), and taken out
#    again at the end;
# 4. between simulated hosts, the suite's own stacks: this tree's netns
#    system tests, run inside the root against its build: netns_mpi (Open
#    MPI, 3 hosts x 4 ranks, also under UCX_NET_DEVICES=eth0; NetPIPE),
#    mpich (hydra, 2 hosts x 2 ranks, UCX_NET_DEVICES=eth0) and
#    netns_perftest (UCT and UCP pairs between 2 hosts). Each must pass: a
#    skip counts as a failure, since the root has every package they use.
#
# The UCX source: SRM_UCX_SRC_<major>_<minor> (e.g. SRM_UCX_SRC_1_18, a
# checkout of openucx/ucx at the tag), else
# /var/cache/ucx-srm-chroot/ucx-src/ucx-<version>, else the Debian archive
# through contrib/get-ucx-src.sh in the root. The archive this project's
# machines reach holds bookworm's sources only (the trixie and sid files
# answer 404): without a tree the test says so and is skipped. sid's UCX
# is a release candidate (1.23.0~rc1) that no tag matches; the closest
# tree is openucx/ucx's master of the same minor version, which test_abi's
# size checks hold to the installed library.
#
# srm-test-timeout: 1500
. "$(dirname "$0")/lib.sh"

[ "$(id -u)" = 0 ] || srm_skip "needs root (debootstrap, chroot, mounts)"
CHROOT=$SRM_SRCDIR/contrib/debian-chroot.sh
unset LD_PRELOAD  # lib.sh's module is this machine's UCX's, not the root's
SUITE=${SRM_TEST_NAME#test_distro_}
case $SUITE in
trixie) UCX=1.18.1 ;;
sid)    UCX=1.23.0 ;;
*)      srm_fail "no suite called '$SUITE' (test_distro_trixie, test_distro_sid)"; srm_done ;;
esac
minor=$(echo "$UCX" | cut -d. -f2)
var=SRM_UCX_SRC_1_$minor
tree=${!var:-/var/cache/ucx-srm-chroot/ucx-src/ucx-$UCX}

# The root sees the source tree at /src and this test's log directory at
# its own path.
run_in_root() {
    "$CHROOT" --suite "$SUITE" --deps "${DEPS:-test}" --bind "$SRM_LOG" -- "$@"
}

if [ ! -f "$tree/src/uct/base/uct_iface.h" ]; then
    srm_log "no UCX $UCX tree at $tree: asking the Debian archive (in the root)"
    rm -rf "$SRM_LOG/ucx-src"
    if ! tree=$(DEPS=build run_in_root contrib/get-ucx-src.sh "$SRM_LOG/ucx-src" \
                2>"$SRM_LOG/get-ucx-src.log"); then
        srm_show_log "$SRM_LOG/get-ucx-src.log" 6
        srm_skip "no UCX $UCX source: the Debian archive here has none for $SUITE (see above), and no tree was given ($var): $SUITE was NOT tested"
    fi
    tree=$(printf '%s\n' "$tree" | tail -n 1)
else
    rm -rf "$SRM_LOG/ucx-src"
    cp -a "$tree" "$SRM_LOG/ucx-src"
    tree=$SRM_LOG/ucx-src
fi
srm_pass "UCX $UCX source: $tree"

t0=$(srm_now_us)
if run_in_root bash -c '
        set -e
        echo "installed UCX: $(pkg-config --modversion ucx-uct)"
        # a run killed before its cleanup leaves the module in the cached
        # root, where UCX 1.22 and later would load it next to the new one
        for stale in "$(pkg-config --variable=libdir ucx-uct)"/ucx/libuct_srm.*; do
            [ ! -e "$stale" ] || { echo "removing $stale of an earlier run"; rm -f "$stale"; }
        done
        rm -rf "$1/build" && mkdir -p "$1/build" && cd "$1/build"
        /src/configure -q --with-ucx-src="$2"
        make -j2 >make.log 2>&1 || { tail -20 make.log; exit 1; }
        make -j2 test/gtest/gtest >>make.log 2>&1 || { tail -20 make.log; exit 1; }
        LD_PRELOAD=$PWD/.libs/libuct_srm.so.0 UCX_SRM_AGENT_PATH=$PWD/srmd \
            UCX_SRM_SOCKET=srm-distro-$$ UCX_SRM_IDLE_TIMEOUT=1s \
            UCX_SRM_DEVICES=lo GTEST_FILTER="-verbs_srq.*" \
            timeout -k 5 900 test/gtest/gtest
    ' "$SRM_TEST_NAME" "$SRM_LOG" "$tree" >"$SRM_LOG/$SUITE.log" 2>&1; then
    rc=0
else
    rc=$?
fi
secs=$(( ($(srm_now_us) - t0) / 1000000 ))
summary=$(grep -E '^\[  (PASSED|FAILED|SKIPPED) +\] [0-9]+ test' "$SRM_LOG/$SUITE.log" |
          paste -sd ' ' -)
ucx=$(sed -n 's/^installed UCX: //p' "$SRM_LOG/$SUITE.log")
if [ "$rc" = 0 ] && grep -q '^\[  PASSED  \]' "$SRM_LOG/$SUITE.log" &&
   ! grep -q '^\[  FAILED  \]' "$SRM_LOG/$SUITE.log"; then
    srm_pass "$SUITE, UCX ${ucx:-?}: built, gtests $summary ($secs s)"
else
    srm_fail "$SUITE, UCX ${ucx:-?}: exit $rc, ${summary:-no gtest summary} ($secs s)"
    grep -E '^\[  FAILED  \]|error' "$SRM_LOG/$SUITE.log" | head -20 | sed 's/^/    | /'
fi
# --- 2. Open MPI over srm ---------------------------------------------------
if [ "$rc" = 0 ]; then
    run_in_root bash -c '
        set -e
        b=$1/build
        echo "Open MPI: $(mpirun --version | head -n 1)"
        mpicc -O2 -o "$1/srm_mpi_check" /src/test/mpi/srm_mpi_check.c
        export UCX_SRM_SOCKET=srm-distro-mpi-$$ UCX_SRM_AGENT_PATH=$b/srmd \
               UCX_SRM_DEVICES=lo SRM_MODULE=$b/.libs/libuct_srm.so.0
        "$b/srmd" -s "$UCX_SRM_SOCKET" >"$1/srmd-mpi.log" 2>&1 &
        agent=$!
        trap "kill $agent" EXIT
        for i in $(seq 1 50); do
            "$b/srmctl" -s "$UCX_SRM_SOCKET" ping >/dev/null 2>&1 && break
            sleep 0.1
        done
        timeout -k 5 180 "$b/contrib/srm-run" mpirun --allow-run-as-root \
            --oversubscribe -np 4 -x UCX_TLS=srm,self -x UCX_SRM_SOCKET \
            -x UCX_SRM_AGENT=never "$1/srm_mpi_check"
        echo "agent frames: $("$b/srmctl" -s "$UCX_SRM_SOCKET" status --json |
                             jq -r .counters.frames)"
    ' "$SRM_TEST_NAME" "$SRM_LOG" >"$SRM_LOG/mpi.log" 2>&1 || rc=$?
    summary=$(grep -a '^srm_mpi_check: .* passed' "$SRM_LOG/mpi.log" | tail -n 1)
    ompi=$(sed -n 's/^Open MPI: //p' "$SRM_LOG/mpi.log")
    frames=$(sed -n 's/^agent frames: \([0-9]*\)$/\1/p' "$SRM_LOG/mpi.log")
    if [ "$rc" = 0 ] && printf '%s\n' "$summary" | grep -q ' 0 failed$' &&
       [ "${frames:-0}" -gt 0 ]; then
        srm_pass "$SUITE, ${ompi:-Open MPI ?}: 4 ranks over srm: $summary; the agent moved $frames frames"
    else
        srm_fail "$SUITE, ${ompi:-Open MPI ?}: exit $rc, '${summary:-no summary}', agent frames '${frames:-none}'"
        srm_show_log "$SRM_LOG/mpi.log" 15
    fi
fi
# --- 3. ucx_perftest over srm ----------------------------------------------
if [ "$rc" = 0 ]; then
    run_in_root bash -c '
        b=$1/build
        export UCX_SRM_SOCKET=srm-distro-pt-$$ UCX_SRM_AGENT_PATH=$b/srmd \
               UCX_SRM_DEVICES=lo UCX_SRM_AGENT=never
        agent= installed=
        cleanup() {
            [ -z "$agent" ] || kill "$agent"
            [ -z "$installed" ] ||
                make -C "$b" uninstall-srmmoduleLTLIBRARIES >/dev/null 2>&1
        }
        trap cleanup EXIT
        if [ "$2" -ge 22 ]; then
            dir=$(sed -n "s/^srmmoduledir = //p" "$b/Makefile")
            make -C "$b" install-srmmoduleLTLIBRARIES >"$1/module-install.log" 2>&1 ||
                { echo "make install of the module into $dir failed"; exit 1; }
            installed=1
            echo "module installed in $dir, ucx_info -d without LD_PRELOAD lists" \
                 "$(ucx_info -d 2>/dev/null | grep -c "^# *Transport: srm$") srm transport(s)"
        else
            export LD_PRELOAD=$b/.libs/libuct_srm.so.0
        fi
        "$b/srmd" -s "$UCX_SRM_SOCKET" >"$1/srmd-pt.log" 2>&1 &
        agent=$!
        sleep 0.5
        port=14100
        for spec in "ucp tag_lat 8" "ucp tag_bw 4194304" "uct am_lat 8"; do
            set -- "$1" $spec
            port=$((port + 1))
            args=(-p "$port" -t "$3" -s "$4" -n 1000)
            # -P 0: not through MPI, where perftest has MPI (else no -P)
            if ucx_perftest -h 2>&1 | grep -q "^ *-P "; then
                args+=(-P 0)
            fi
            if [ "$2" = uct ]; then
                args+=(-x srm -d "$("$b/srmctl" device)")
                tls=
            else
                tls=srm
            fi
            env ${tls:+UCX_TLS=$tls} timeout 60 ucx_perftest "${args[@]}" \
                >"$1/perftest-$3.server.log" 2>&1 &
            server=$!
            sleep 0.5
            env ${tls:+UCX_TLS=$tls} timeout 60 ucx_perftest "${args[@]}" \
                127.0.0.1 >"$1/perftest-$3.client.log" 2>&1
            client_rc=$?
            wait "$server"
            echo "perftest $2 $3 $4: client $client_rc server $?" \
                 "$(grep "^Final:" "$1/perftest-$3.client.log" | tr -s " ")"
        done
    ' "$SRM_TEST_NAME" "$SRM_LOG" "$minor" >"$SRM_LOG/perftest.log" 2>&1
    if [ "$minor" -ge 22 ]; then
        line=$(grep -m1 '^module installed in\|^make install of the module' "$SRM_LOG/perftest.log")
        if [[ $line == *"lists 1 srm transport(s)" ]]; then
            srm_pass "$SUITE: $line"
        else
            srm_fail "$SUITE: ${line:-the module was not installed}"
        fi
    fi
    for test in tag_lat tag_bw am_lat; do
        line=$(grep "^perftest [a-z]* $test " "$SRM_LOG/perftest.log")
        if [[ $line == *": client 0 server 0 Final:"* ]]; then
            srm_pass "$SUITE, ${line%%: client*}: ${line#*server 0 }"
        else
            srm_fail "$SUITE, ucx_perftest $test: ${line:-did not run}"
            srm_show_log "$SRM_LOG/perftest.log" 10
        fi
    done
fi
# --- 4. between simulated hosts -----------------------------------------
if [ "$rc" = 0 ]; then
    HOST_TESTS="netns_mpi mpich netns_perftest"
    run_in_root env SRM_TEST_LOG_DIR="$SRM_LOG/hosts" \
        /src/test/system/run.sh -b "$SRM_LOG/build" $HOST_TESTS \
        >"$SRM_LOG/hosts.log" 2>&1
    for test in $HOST_TESTS; do
        line=$(grep -E "^(PASS|FAIL|SKIP) test_$test[ :]" "$SRM_LOG/hosts.log")
        if [[ $line == "PASS "* ]]; then
            srm_pass "$SUITE, between simulated hosts: $line"
        else
            srm_fail "$SUITE, between simulated hosts: ${line:-test_$test did not run}" \
                     "(its log: $SRM_LOG/hosts/test_$test.log)"
            grep -E '^FAIL|^SKIP' "$SRM_LOG/hosts/test_$test.log" 2>/dev/null |
                head -5 | sed 's/^/    | /'
        fi
    done
fi
srm_done
