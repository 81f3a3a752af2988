#!/bin/bash
#
# test_distro_trixie: ucx-srm on Debian 13's UCX 1.18.1 and Open MPI 5.0,
# from this source tree. In a trixie root (contrib/debian-chroot.sh,
# cached), configure against a UCX 1.18.1 source tree, build, and run
# 1. the unit and UCT-level gtests (as make check does: the module
#    preloaded, a private agent per test) against trixie's installed
#    libucx: all must pass;
# 2. test/mpi/srm_mpi_check.c, 4 ranks on the root's one host, through
#    srm-run's mpirun with UCX_TLS=srm,self: "0 failed", and the agent's
#    frame counter grew;
# 3. one-host ucx_perftest pairs over srm: UCP tag_lat 8 B, tag_bw 4 MB,
#    UCT am_lat 8 B (-P 0: trixie's perftest is built with MPI and would
#    wait for mpirun's second rank), each with a "Final:" line on both
#    sides.
#
# The UCX source: SRM_UCX_SRC_1_18 (a UCX 1.18.1 tree, e.g. a checkout of
# openucx/ucx at v1.18.1), else /var/cache/ucx-srm-chroot/ucx-src/ucx-1.18.1,
# else the Debian archive through contrib/get-ucx-src.sh in the root. The
# archive this project's machines reach holds bookworm's sources only (the
# ucx 1.18.1+ds-2 files answer 404): without a tree the test says so and is
# skipped.
#
# srm-test-timeout: 1500
. "$(dirname "$0")/lib.sh"

[ "$(id -u)" = 0 ] || srm_skip "needs root (debootstrap, chroot, mounts)"
CHROOT=$SRM_SRCDIR/contrib/debian-chroot.sh
tree=${SRM_UCX_SRC_1_18:-/var/cache/ucx-srm-chroot/ucx-src/ucx-1.18.1}

# The root sees the source tree at /src and this test's log directory at
# its own path.
run_in_root() {
    "$CHROOT" --suite trixie --deps "${DEPS:-test}" --bind "$SRM_LOG" -- "$@"
}

if [ ! -f "$tree/src/uct/base/uct_iface.h" ]; then
    srm_log "no UCX 1.18.1 tree at $tree: asking the Debian archive (in the root)"
    rm -rf "$SRM_LOG/ucx-src"
    if ! tree=$(DEPS=build run_in_root contrib/get-ucx-src.sh "$SRM_LOG/ucx-src" \
                2>"$SRM_LOG/get-ucx-src.log"); then
        srm_show_log "$SRM_LOG/get-ucx-src.log" 6
        srm_skip "no UCX 1.18.1 source: the Debian archive here has none for trixie (see above), and no tree was given (SRM_UCX_SRC_1_18): trixie was NOT tested"
    fi
    tree=$(printf '%s\n' "$tree" | tail -n 1)
else
    rm -rf "$SRM_LOG/ucx-src"
    cp -a "$tree" "$SRM_LOG/ucx-src"
    tree=$SRM_LOG/ucx-src
fi
srm_pass "UCX 1.18.1 source: $tree"

t0=$(srm_now_us)
if run_in_root bash -c '
        set -e
        echo "installed UCX: $(pkg-config --modversion ucx-uct)"
        rm -rf "$1/build" && mkdir -p "$1/build" && cd "$1/build"
        /src/configure -q --with-ucx-src="$2"
        make -j2 >make.log 2>&1 || { tail -20 make.log; exit 1; }
        make -j2 test/gtest/gtest >>make.log 2>&1 || { tail -20 make.log; exit 1; }
        LD_PRELOAD=$PWD/.libs/libuct_srm.so.0 UCX_SRM_AGENT_PATH=$PWD/srmd \
            UCX_SRM_SOCKET=srm-trixie-$$ UCX_SRM_IDLE_TIMEOUT=1s \
            UCX_SRM_DEVICES=lo GTEST_FILTER="-verbs_srq.*" \
            timeout -k 5 900 test/gtest/gtest
    ' test_distro_trixie "$SRM_LOG" "$tree" >"$SRM_LOG/trixie.log" 2>&1; then
    rc=0
else
    rc=$?
fi
secs=$(( ($(srm_now_us) - t0) / 1000000 ))
summary=$(grep -E '^\[  (PASSED|FAILED|SKIPPED) +\] [0-9]+ test' "$SRM_LOG/trixie.log" |
          paste -sd ' ' -)
ucx=$(sed -n 's/^installed UCX: //p' "$SRM_LOG/trixie.log")
if [ "$rc" = 0 ] && grep -q '^\[  PASSED  \]' "$SRM_LOG/trixie.log" &&
   ! grep -q '^\[  FAILED  \]' "$SRM_LOG/trixie.log"; then
    srm_pass "trixie, UCX ${ucx:-?}: built, gtests $summary ($secs s)"
else
    srm_fail "trixie, UCX ${ucx:-?}: exit $rc, ${summary:-no gtest summary} ($secs s)"
    grep -E '^\[  FAILED  \]|error' "$SRM_LOG/trixie.log" | head -20 | sed 's/^/    | /'
fi
# --- 2. Open MPI 5 over srm ----------------------------------------------
if [ "$rc" = 0 ]; then
    run_in_root bash -c '
        set -e
        b=$1/build
        echo "Open MPI: $(mpirun --version | head -n 1)"
        mpicc -O2 -o "$1/srm_mpi_check" /src/test/mpi/srm_mpi_check.c
        export UCX_SRM_SOCKET=srm-trixie-mpi-$$ UCX_SRM_AGENT_PATH=$b/srmd \
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
        "$b/srmctl" -s "$UCX_SRM_SOCKET" status | grep "^counters:"
    ' test_distro_trixie "$SRM_LOG" >"$SRM_LOG/mpi.log" 2>&1 || rc=$?
    summary=$(grep -a '^srm_mpi_check: .* passed' "$SRM_LOG/mpi.log" | tail -n 1)
    ompi=$(sed -n 's/^Open MPI: //p' "$SRM_LOG/mpi.log")
    frames=$(sed -n 's/^counters: frames \([0-9]*\).*/\1/p' "$SRM_LOG/mpi.log")
    if [ "$rc" = 0 ] && printf '%s\n' "$summary" | grep -q ' 0 failed$' &&
       [ "${frames:-0}" -gt 0 ]; then
        srm_pass "trixie, ${ompi:-Open MPI ?}: 4 ranks over srm: $summary; the agent moved $frames frames"
    else
        srm_fail "trixie, ${ompi:-Open MPI ?}: exit $rc, '${summary:-no summary}', agent frames '${frames:-none}'"
        srm_show_log "$SRM_LOG/mpi.log" 15
    fi
fi
# --- 3. ucx_perftest over srm ----------------------------------------------
if [ "$rc" = 0 ]; then
    run_in_root bash -c '
        b=$1/build
        export UCX_SRM_SOCKET=srm-trixie-pt-$$ UCX_SRM_AGENT_PATH=$b/srmd \
               UCX_SRM_DEVICES=lo UCX_SRM_AGENT=never \
               LD_PRELOAD=$b/.libs/libuct_srm.so.0
        "$b/srmd" -s "$UCX_SRM_SOCKET" >"$1/srmd-pt.log" 2>&1 &
        agent=$!
        trap "kill $agent" EXIT
        sleep 0.5
        port=14100
        for spec in "ucp tag_lat 8" "ucp tag_bw 4194304" "uct am_lat 8"; do
            set -- "$1" $spec
            port=$((port + 1))
            args=(-P 0 -p "$port" -t "$3" -s "$4" -n 1000)
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
    ' test_distro_trixie "$SRM_LOG" >"$SRM_LOG/perftest.log" 2>&1
    for test in tag_lat tag_bw am_lat; do
        line=$(grep "^perftest [a-z]* $test " "$SRM_LOG/perftest.log")
        if [[ $line == *": client 0 server 0 Final:"* ]]; then
            srm_pass "trixie, ${line%%: client*}: ${line#*server 0 }"
        else
            srm_fail "trixie, ucx_perftest $test: ${line:-did not run}"
            srm_show_log "$SRM_LOG/perftest.log" 10
        fi
    done
fi
srm_done
