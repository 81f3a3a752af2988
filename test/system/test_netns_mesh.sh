#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
#
# test_netns_mesh: srm_mesh (the MPI traffic of contrib/bench/mesh.sh and
# resources.sh) over srm between 2 simulated hosts x 2 ranks, a second of
# checked traffic in each pattern.
#
#   mesh         every rank streams 8 B and 64 KB messages to every other
#                rank (both channels): exit 0, one result line, errors=0,
#                msgs > 0, acks > 0, latency samples, agents still up;
#   one-to-many  rank 0 to the ranks of the other host: the same checks;
#   corrupt      mesh with -C 5 (every fifth data message a rank sends has
#                a flipped bit) must fail with errors > 0: the checks work.
#
. "$(dirname "$0")/lib.sh"

srm_netns_require --mpi mpirun

MPI_TIMEOUT=${SRM_MPI_TIMEOUT:-180}
SECS=${SRM_MESH_SECONDS:-1}

# The build's srm_mesh (configure found mpicc), else compiled here.
bin=$SRM_BUILD_DIR/srm_mesh
if [ ! -x "$bin" ]; then
    srm_require_cmd mpicc
    bin=$SRM_LOG/srm_mesh
    srm_mpicc "$SRM_SRCDIR/contrib/bench/srm_mesh.c" "$bin"
fi

srm_netns_up 2 "mw$$"
HOSTS=("${SRM_HOSTS[@]}")
srm_pass "cluster $SRM_NETNS_PREFIX up: ${HOSTS[*]}"
srm_netns_start_agents "$SRM_LOG/srmd.%h.log" || srm_done
srm_log "agents: $(srm_netns_agent_pids)"

# field KEY: VALUE of KEY=VALUE in LINE (the result line)
field() {
    awk -v k="$1" '{ for (i = 3; i <= NF; i++) { split($i, a, "=")
                     if (a[1] == k) { print a[2]; exit } } }' <<<"$LINE"
}

# mesh LABEL SRM_MESH-ARGS...: one job; sets RC, LINE (the one result
# line, or empty) and NLINES (how many there were)
mesh() {
    local out=$SRM_LOG/$1.log
    shift
    RC=0
    srm_netns_mpirun "$SRM_NETNS_HOST_LIST" 2 "$MPI_TIMEOUT" srm "$bin" \
        -t "$SECS" -w 0.3 "$@" >"$out" 2>&1 || RC=$?
    NLINES=$(grep -ac '^srm_mesh: result ' "$out")
    LINE=$(grep -a '^srm_mesh: result ' "$out" | tail -n 1)
    [ -z "$LINE" ] || srm_log "    | $LINE"
}

# clean LABEL SRM_MESH-ARGS...: a job that must succeed with checked data.
clean() {
    local label=$1 bad=0 k v
    mesh "$@"
    if [ "$RC" = 0 ] && [ "$NLINES" = 1 ]; then
        srm_pass "$label: exit 0, one result line"
    else
        srm_fail "$label: exit $RC, $NLINES result lines"
        srm_show_log "$SRM_LOG/$label.log" 30
        return
    fi
    if [ "$(field errors)" = 0 ]; then
        srm_pass "$label: errors=0"
    else
        srm_fail "$label: errors='$(field errors)'"
    fi
    for k in msgs acks lat_samples; do
        v=$(field "$k")
        [ "${v:-0}" -gt 0 ] 2>/dev/null || { srm_fail "$label: $k='$v', want > 0"; bad=1; }
    done
    [ "$bad" = 1 ] || srm_pass "$label: $(field msgs) messages, $(field acks) acks, $(field lat_samples) latency samples"
    for h in "${HOSTS[@]}"; do
        srm_netns_agent_answers "$h" "$SRM_LOG/srmd.$h.log" ||
            srm_fail "$label: srmd in $h is gone"
    done
}

clean mesh -p mesh -s 8,65536
clean one-to-many -p one-to-many -s 8,65536

mesh corrupt -p mesh -s 8,65536 -C 5
if [ "$RC" != 0 ] && [ "${NLINES:-0}" -le 1 ] && [ "$(field errors)" -gt 0 ] 2>/dev/null; then
    srm_pass "corrupt: srm_mesh failed (exit $RC) with errors=$(field errors)"
else
    srm_fail "corrupt: exit $RC, errors='$(field errors)' (want a failure with errors > 0)"
    srm_show_log "$SRM_LOG/corrupt.log" 30
fi

srm_done
