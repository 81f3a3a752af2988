#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
#
# test_netns_hol: head-of-line blocking between two nodes. 2 simulated
# hosts x 2 ranks run test/mpi/srm_hol.c over srm (UCX_TLS=srm): rank 0
# (host A) streams 4 MB messages to rank 2 (host B) while rank 1 (A)
# ping-pongs 8 B with rank 3 (B); the program prints the ping-pong's
# p50/p99 without the stream (idle) and with it (loaded). The hosts' links
# have a line rate (SRM_HOL_RATE, default 2gbit, with queues of 256 KB at
# each end: netns-cluster --rate), so the stream queues as it would on a
# network, not at memory speed.
#
# Two runs, each with fresh agents in both hosts:
#   default   UCX_SRM_LARGE_THRESH=8k: the stream takes the bulk channel
#   inf       UCX_SRM_LARGE_THRESH=inf: everything on the small channel
# Printed side by side with loaded_p99/idle_p99. The ratio is NOT judged
# (2 cores shared by 4 ranks and 2 agents); the program must succeed, and
# the bulk channel must carry the stream in the default run and stay
# unused with inf.
#
. "$(dirname "$0")/lib.sh"

srm_netns_require --mpi mpicc mpirun

MPI_TIMEOUT=${SRM_MPI_TIMEOUT:-180}
IDLE=${SRM_HOL_IDLE:-3}
LOAD=${SRM_HOL_LOAD:-5}
RATE=${SRM_HOL_RATE:-2gbit}
QUEUE=262144

bin=$SRM_LOG/srm_hol
srm_mpicc "$SRM_SRCDIR/test/mpi/srm_hol.c" "$bin"

# --------------------------------------------------------- the cluster --
srm_netns_up 2 "hl$$" --rate "$RATE" --queue "$QUEUE"
HOSTS=("${SRM_HOSTS[@]}")
srm_pass "cluster $SRM_NETNS_PREFIX up, links of $RATE with queues of $QUEUE bytes: ${HOSTS[*]}"

# agents_start RUN [VAR=VALUE...]: fresh srmd in every host
agents_start() {
    local run=$1
    shift
    srm_netns_start_agents "$SRM_LOG/srmd.$run.%h.log" "$@" || return 1
    srm_log "agents for $run: $(srm_netns_agent_pids)${*:+($*)}"
}

# chan_tx HOST KIND: tx bytes of HOST's KIND channel to the other host
chan_tx() {
    srm_netns_status_get "$1" \
        ".nodes[0].channels[] | select(.kind == \"$2\") | .tx_bytes"
}

declare -A R
# run LABEL [AGENT-ENV...]
run() {
    local label=$1 out rc t0 secs line
    shift

    agents_start "$label" "$@" || return 1
    out=$SRM_LOG/$label.log
    srm_log ""
    srm_log "--- $label: 2 hosts x 2 ranks, UCX_TLS=srm, agents: ${*:-defaults}"
    t0=$(date +%s)
    rc=0
    srm_netns_mpirun "$SRM_NETNS_HOST_LIST" 2 "$MPI_TIMEOUT" srm \
        "$bin" -i "$IDLE" -t "$LOAD" -s 4194304 >"$out" 2>&1 || rc=$?
    secs=$(( $(date +%s) - t0 ))
    grep -aE '^(srm_hol|idle|loaded|stream)' "$out" | sed 's/^/    | /'
    if [ "$rc" = 0 ] && grep -aq '^srm_hol: ok' "$out"; then
        srm_pass "$label: srm_hol exit 0 ($secs s)"
    else
        srm_fail "$label: srm_hol exit $rc ($secs s)"
        srm_show_log "$out" 20
    fi
    line=$(grep -a '^idle p50' "$out" | tail -n 1)
    R[$label,idle50]=$(awk '{print $3}' <<<"$line")
    R[$label,idle99]=$(awk '{print $6}' <<<"$line")
    line=$(grep -a '^loaded p50' "$out" | tail -n 1)
    R[$label,load50]=$(awk '{print $3}' <<<"$line")
    R[$label,load99]=$(awk '{print $6}' <<<"$line")
    R[$label,n]=$(sed -n 's/.*(n \([0-9]*\),.*/\1/p' <<<"$line")
    R[$label,stream]=$(grep -a '^stream:' "$out" | sed 's/.*, \([0-9.]*\) MB\/s/\1/')
    R[$label,bulk]=$(chan_tx "${HOSTS[0]}" bulk)
    R[$label,small]=$(chan_tx "${HOSTS[0]}" small)
    srm_log "    ${HOSTS[0]} channel tx bytes: small ${R[$label,small]:-?}, bulk ${R[$label,bulk]:-?}"
    srm_netns_status "${HOSTS[0]}" 2>&1 | grep -E '^(wire|node)' | sed 's/^/      /'
    srm_netns_stop_agents
}

run default
run inf UCX_SRM_LARGE_THRESH=inf

# the stream must have gone where the setting says
if [ "${R[default,bulk]:-0}" -gt 100000000 ]; then
    srm_pass "default: the bulk channel carried the stream (${R[default,bulk]} B)"
else
    srm_fail "default: bulk channel tx only '${R[default,bulk]}' B"
fi
if [ "${R[inf,bulk]:-0}" -eq 0 ] && [ "${R[inf,small]:-0}" -gt 100000000 ]; then
    srm_pass "inf: everything on the small channel (${R[inf,small]} B), bulk unused"
else
    srm_fail "inf: small '${R[inf,small]}' B, bulk '${R[inf,bulk]}' B (want bulk 0)"
fi

ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (a > 0 && b > 0) printf "%.2f", a / b; else print "?" }'; }
srm_log ""
srm_log "8 B ping-pong round trips between the hosts (us), with and without a 4 MB stream between two other ranks of the same hosts, links of $RATE:"
srm_log "$(printf '  %-8s %10s %10s %12s %12s %8s %10s  %s' RUN idle_p50 idle_p99 loaded_p50 loaded_p99 loaded_n stream_MB/s 'loaded_p99/idle_p99')"
for l in default inf; do
    srm_log "$(printf '  %-8s %10s %10s %12s %12s %8s %10s  %s' "$l" \
        "${R[$l,idle50]:-?}" "${R[$l,idle99]:-?}" "${R[$l,load50]:-?}" \
        "${R[$l,load99]:-?}" "${R[$l,n]:-?}" "${R[$l,stream]:-?}" \
        "$(ratio "${R[$l,load99]}" "${R[$l,idle99]}")")"
done
srm_log "  (default: LARGE_THRESH=8k, stream on the bulk channel; inf: one channel for all)"
srm_log "  NOTE: ratios are reported, not judged: 4 ranks and 2 agents share 2 cores."

srm_done
