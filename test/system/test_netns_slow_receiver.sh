#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
#
# test_netns_slow_receiver: per-port flow control between two nodes. 2
# simulated hosts x 2 ranks run test/mpi/srm_slow_receiver.c over srm
# (UCX_TLS=srm): rank 0 (host A) streams 64 KB messages to rank 2 (host B),
# which stops calling MPI for 2 s (sleeps) after a short warm-up, while
# rank 1 (A) ping-pongs 8 B with rank 3 (B) all along.
#
# The agents run with a small UCX_SRM_PORT_BACKLOG (256k by default), so
# that once rank 2's receive ring (2 MB) and its backlog in host B's agent
# are full, host B's agent sends PAUSE(port) to host A's, which then holds
# only the frames for that port, and RESUME when the backlog drains.
#
# Checked:
#   - the program passes: every stream message arrived, intact and in
#     order, and the ping-pong completed round trips during the stall
#   - host A's agent received PAUSE from host B's node (pauses > 0 in
#     `srmctl status`), i.e. the flow control really was exercised
#   - no port of host B is still paused at the end (RESUME came)
#   - both agents are still running after the job
#
# The stream's messages must stay below UCX's rendezvous threshold (64 KB
# is sent eagerly; 1 MB is not): a rendezvous sender waits for the stalled
# receiver's answer, so nothing piles up and no PAUSE is ever needed.
#
# Settings (environment): SRM_SLOW_BACKLOG (256k), SRM_SLOW_MSG (65536),
# SRM_SLOW_WINDOW (64), SRM_SLOW_STALL (2), SRM_MPI_TIMEOUT (120).
#
. "$(dirname "$0")/lib.sh"

srm_netns_require --mpi mpicc mpirun

MPI_TIMEOUT=${SRM_MPI_TIMEOUT:-120}
BACKLOG=${SRM_SLOW_BACKLOG:-256k}
MSG=${SRM_SLOW_MSG:-65536}
WINDOW=${SRM_SLOW_WINDOW:-64}
STALL=${SRM_SLOW_STALL:-2}

bin=$SRM_LOG/srm_slow_receiver
srm_mpicc "$SRM_SRCDIR/test/mpi/srm_slow_receiver.c" "$bin"

# --------------------------------------------------------- the cluster --
srm_netns_up 2 "sr$$"
HOSTS=("${SRM_HOSTS[@]}")
srm_pass "cluster $SRM_NETNS_PREFIX up: ${HOSTS[*]}"

# node_field HOST NODE-ID FIELD: FIELD of HOST's entry for the remote
# node NODE-ID
node_field() {
    srm_netns_status_get "$1" ".nodes[] | select(.id == \"$2\") | .$3"
}

A=${HOSTS[0]} B=${HOSTS[1]}
srm_netns_start_agents "$SRM_LOG/srmd.%h.log" UCX_SRM_PORT_BACKLOG="$BACKLOG" ||
    srm_done
srm_log "agents: $(srm_netns_agent_pids)(UCX_SRM_PORT_BACKLOG=$BACKLOG)"

# the agents run with the backlog asked for
for h in "$A" "$B"; do
    got=$(srm_netns_status_get "$h" .policy.port_backlog)
    srm_log "    $h: port backlog ${got:-?} B"
done
B_NODE=$(srm_netns_status_get "$B" .agent.node)
[ -n "$B_NODE" ] || srm_fail "no node id in $B's srmctl status"

out=$SRM_LOG/srm_slow_receiver.log
srm_log ""
srm_log "--- 2 hosts x 2 ranks, UCX_TLS=srm, agents UCX_SRM_PORT_BACKLOG=$BACKLOG;" \
        "$MSG B messages, window $WINDOW, rank 2 stalls $STALL s"
t0=$(date +%s)
srm_netns_mpirun_cmd "$A,$B" 2 "$MPI_TIMEOUT" srm
"${SRM_MPIRUN[@]}" -- "$bin" -s "$MSG" -w "$WINDOW" -W 0.5 -S "$STALL" -A 1 -T 60 \
    >"$out" 2>&1 &
mpi_pid=$!
srm_track "$mpi_pid"

# While the job runs, sample the agents every ~0.2 s (information only):
# on A, the ports of B it holds frames for (paused) and the bytes it holds
# back for order (held); on B, the largest RX_QUEUED and BACKLOG of a port.
samples=$SRM_LOG/samples.log
: >"$samples"
while srm_alive "$mpi_pid"; do
    sample=$(srm_netns_status_get "$A" ".nodes[] | select(.id == \"$B_NODE\") |
        \"\(.paused) \(.held)\"")
    read -r paused held <<<"${sample:-0 0}"
    sample=$(srm_netns_status_get "$B" \
        '"\([.ports[].rx_queued] | max // 0) \([.ports[].backlog] | max // 0)"')
    read -r rx_queued backlog <<<"${sample:-0 0}"
    printf '%s paused %d held %d rx_queued %d backlog %d\n' "$(srm_now_us)" \
        "$paused" "$held" "$rx_queued" "$backlog" >>"$samples"
    sleep 0.2
done
rc=0
wait "$mpi_pid" || rc=$?
srm_untrack "$mpi_pid"
secs=$(( $(date +%s) - t0 ))
grep -aE '^(srm_slow_receiver|stall|pingpong|stream)' "$out" | sed 's/^/    | /'

if [ "$rc" = 0 ] && grep -aq '^srm_slow_receiver: ok' "$out"; then
    srm_pass "srm_slow_receiver exit 0 ($secs s)"
else
    srm_fail "srm_slow_receiver exit $rc ($secs s)"
    srm_show_log "$out" 25
fi

line=$(grep -a '^pingpong during stall:' "$out" | tail -n 1)
N=$(sed -n 's/^pingpong during stall: \([0-9]*\) round trips.*/\1/p' <<<"$line")
GAP=$(sed -n 's/.*(max gap \([0-9.]*\) ms).*/\1/p' <<<"$line")
line=$(grep -a '^stream:' "$out" | tail -n 1)
M=$(sed -n 's/^stream: \([0-9]*\) messages.*/\1/p' <<<"$line")
LOST=$(sed -n 's/.*, \([0-9]*\) lost,.*/\1/p' <<<"$line")
DISORDER=$(sed -n 's/.*, \([0-9]*\) out of order,.*/\1/p' <<<"$line")
MB=$(sed -n 's/.*, \([0-9.]*\) MB in.*/\1/p' <<<"$line")

if [ "${N:-0}" -gt 0 ]; then
    srm_pass "the other pair kept flowing: $N round trips during the stall" \
             "(max gap $GAP ms)"
else
    srm_fail "no round trip between ranks 1 and 3 during the stall ('$N')"
fi
if [ -n "$M" ] && [ "$M" -gt 0 ] && [ "$LOST" = 0 ] && [ "$DISORDER" = 0 ]; then
    srm_pass "stream: $M messages ($MB MB), 0 lost, 0 out of order"
else
    srm_fail "stream: '${M}' messages, '${LOST}' lost, '${DISORDER}' out of order"
fi

read -r NSAMPLES NPAUSED MAXHELD MAXQ MAXBL < <(awk '
    { n++; if ($3 > 0) p++; if ($5 > h) h = $5; if ($7 > q) q = $7
      if ($9 > b) b = $9 }
    END { printf "%d %d %d %d %d\n", n, p, h, q, b }' "$samples")
srm_log "    sampled during the job ($NSAMPLES samples, $samples):" \
        "$A had a port of $B paused in $NPAUSED, held up to $MAXHELD B;" \
        "$B: RX_QUEUED up to $MAXQ B, BACKLOG up to $MAXBL B"

# the flow control really was exercised, and let go
srm_log "    $A status:"
srm_netns_status "$A" 2>&1 | grep -E '^(counters|wire|node)' | sed 's/^/      /'
srm_log "    $B status:"
srm_netns_status "$B" 2>&1 | grep -vE '^(agent|policy|clients)' | sed 's/^/      /'
PAUSES=$(node_field "$A" "$B_NODE" pauses)
PAUSED=$(node_field "$A" "$B_NODE" paused)
if [ "${PAUSES:-0}" -gt 0 ]; then
    srm_pass "$A got PAUSE from $B's node $B_NODE: pauses $PAUSES"
else
    srm_fail "$A: pauses '${PAUSES}' for $B's node '$B_NODE' (want > 0:" \
             "the stall was too short, the stream too slow, or its messages" \
             "went by rendezvous)"
fi
if [ "${PAUSED:-x}" = 0 ]; then
    srm_pass "$A: no port of $B still paused at the end (RESUME came)"
else
    srm_fail "$A: '${PAUSED}' port(s) of $B still paused after the job"
fi

for h in "$A" "$B"; do
    if srm_alive "${SRM_NETNS_AGENT_PID[$h]}" && srm_netns_ping "$h"; then
        srm_pass "srmd in $h still runs"
    else
        srm_fail "srmd in $h is gone"
        srm_show_log "$SRM_LOG/srmd.$h.log"
    fi
done
srm_netns_stop_agents

srm_log ""
srm_log "slow receiver ($STALL s stall, backlog $BACKLOG): round trips during" \
        "the stall ${N:-?} (max gap ${GAP:-?} ms); stream ${M:-?} messages" \
        "(${MB:-?} MB), lost ${LOST:-?}, out of order ${DISORDER:-?};" \
        "PAUSE frames $B -> $A ${PAUSES:-?} (paused in $NPAUSED of" \
        "$NSAMPLES samples, backlog up to $MAXBL B); job ${secs} s"

srm_done
