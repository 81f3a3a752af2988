#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
#
# test_netns_flows: srm_flowgen (the flow-completion-time generator of
# contrib/bench/flows.sh) over srm between 2 simulated hosts x 2 ranks,
# each rank a generator and a sink of Poisson flows, short and long, for
# a few seconds.
#
#   clean    must exit 0 with every flow complete and checked: errors=0,
#            flows of both classes, complete = flows, FCTs > 0, the bulk
#            channel used (long flows) and the agents still up;
#   corrupt  the same with --corrupt-every 5 (the senders spoil every
#            fifth flow) must fail, with bad_data > 0: the checker works.
#
# The FCTs are printed, not judged (2 cores for 4 ranks and 2 agents).
#
. "$(dirname "$0")/lib.sh"

srm_netns_require --mpi mpirun

MPI_TIMEOUT=${SRM_MPI_TIMEOUT:-180}
DURATION=${SRM_FLOWS_DURATION:-3}

bin=$SRM_BUILD_DIR/srm_flowgen
[ -x "$bin" ] ||
    srm_skip "$bin not built (configure found no mpicc or no pkg-config ucx)"

srm_netns_up 2 "fw$$"
HOSTS=("${SRM_HOSTS[@]}")
srm_pass "cluster $SRM_NETNS_PREFIX up: ${HOSTS[*]}"
srm_netns_start_agents "$SRM_LOG/srmd.%h.log" || srm_done
srm_log "agents: $(srm_netns_agent_pids)"

# field LINE KEY: VALUE of KEY=VALUE in a "flowgen:" line
field() {
    awk -v k="$2" '{ for (i = 2; i <= NF; i++) { split($i, a, "=")
                     if (a[1] == k) { print a[2]; exit } } }' <<<"$1"
}

# flows LABEL [FLOWGEN-ARGS...]: one job; sets RC and LINE (its
# "flowgen:" line, or empty)
flows() {
    local out=$SRM_LOG/$1.log
    shift
    RC=0
    srm_netns_mpirun "$SRM_NETNS_HOST_LIST" 2 "$MPI_TIMEOUT" srm "$bin" \
        --duration "$DURATION" --load 0.3 --link-rate 20 --drain 20 \
        "$@" >"$out" 2>&1 || RC=$?
    LINE=$(grep -a '^flowgen: ' "$out" | tail -n 1)
    grep -aE '^(srm_flowgen:|  )' "$out" | sed 's/^/    | /'
}

# --------------------------------------------------------------- clean --
bulk_tx_bytes() {
    srm_netns_status_get "$1" \
        '.nodes[0].channels[] | select(.kind == "bulk") | .tx_bytes'
}
bulk_before=$(bulk_tx_bytes "${HOSTS[0]}")
flows clean --seed 7
if [ "$RC" = 0 ] && [ -n "$LINE" ]; then
    srm_pass "clean: srm_flowgen exit 0"
else
    srm_fail "clean: srm_flowgen exit $RC${LINE:+ ($LINE)}"
    srm_show_log "$SRM_LOG/clean.log" 30
fi
n_flows=$(field "$LINE" flows)
n_short=$(field "$LINE" short)
n_long=$(field "$LINE" long)
n_done=$(field "$LINE" complete)
errors=$(field "$LINE" errors)
if [ "${errors:-x}" = 0 ]; then
    srm_pass "clean: no errors (bad data, sends, receives, incomplete flows)"
else
    srm_fail "clean: errors='$errors'"
fi
if [ "${n_short:-0}" -gt 0 ] && [ "${n_long:-0}" -gt 0 ] &&
   [ "${n_done:-x}" = "$n_flows" ]; then
    srm_pass "clean: $n_flows flows ($n_short short, $n_long long), all complete"
else
    srm_fail "clean: flows '$n_flows' short '$n_short' long '$n_long' complete '$n_done'"
fi
sane=1
for k in short_p50_us short_p99_us long_p50_us long_p99_us offered_load \
         achieved_load; do
    v=$(field "$LINE" "$k")
    awk -v x="$v" 'BEGIN { exit !(x + 0 > 0 && x == x + 0) }' || {
        srm_fail "clean: $k='$v' is not a positive number"; sane=0; }
done
p50=$(field "$LINE" short_p50_us) p99=$(field "$LINE" short_p99_us)
if awk -v a="$p50" -v b="$p99" 'BEGIN { exit !(a <= b) }'; then
    [ "$sane" = 0 ] || srm_pass "clean: FCTs and loads positive, short p50 $p50 <= p99 $p99 us"
else
    srm_fail "clean: short p50 $p50 > p99 $p99"
fi
bulk_after=$(bulk_tx_bytes "${HOSTS[0]}")
if [ "${bulk_after:-0}" -gt "${bulk_before:-0}" ]; then
    srm_pass "clean: the long flows took the bulk channel (${HOSTS[0]} bulk tx ${bulk_after} B)"
else
    srm_fail "clean: bulk channel tx of ${HOSTS[0]}: '${bulk_before}' -> '${bulk_after}' B"
fi
for h in "${HOSTS[@]}"; do
    srm_netns_agent_answers "$h" "$SRM_LOG/srmd.$h.log" ||
        srm_fail "clean: srmd in $h is gone"
done

# ------------------------------------------------------------- corrupt --
flows corrupt --seed 7 --corrupt-every 5
bad=$(field "$LINE" bad_data)
if [ "$RC" != 0 ] && [ "${bad:-0}" -gt 0 ]; then
    srm_pass "corrupt: srm_flowgen failed (exit $RC) with bad_data=$bad"
else
    srm_fail "corrupt: exit $RC, bad_data='$bad' (want a failure, bad_data > 0)"
    srm_show_log "$SRM_LOG/corrupt.log" 30
fi

srm_done
