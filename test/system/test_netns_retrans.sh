#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
#
# test_netns_retrans: a channel whose connection keeps retransmitting moves
# to its standby connection, losing nothing (UCX_SRM_RETRANS_LIMIT).
#
# 2 simulated hosts with two interfaces each; agents on eth0 and eth1 (the
# standby connection of every channel on the other link). 2 x 1 ranks run
# test/mpi/srm_stream_check.c over UCX_TLS=srm (numbered, checksummed
# messages both ways, every 16th up to 4 MB). Once every channel and its
# standby are up, 3% of the large TCP packets the second host sends on the
# interface of its bulk channel's active path are lost on their way (an
# nftables rule in the first host's namespace drops them as they arrive),
# until the second host's agent reacts or for at most
# SRM_RETRANS_DROP_SECS (40). What the drops make TCP retransmit depends on
# how much the ranks send, which a loaded machine slows: every 5 s without
# a reaction the share dropped doubles (up to 12%: beyond, a retransmission
# lost again backs TCP off past the agents' silence timeout, which fails
# the link over for silence instead), so that the link turns bad enough
# for the watch whatever the load.
#
# Checked: the drops made that host's TCP retransmit (at least the limit's
# worth); its agent closed that connection for it ("replaced" in srmctl
# status, and its log says why); its bulk channel ends on the other path;
# the first host, which dropped nothing, replaced nothing meanwhile (what
# either replaced before the drops does not count); the stream check
# passes (lost, duplicated, out of order, corrupt all 0).
#
. "$(dirname "$0")/lib.sh"

srm_netns_require --mpi mpicc mpirun
srm_require_cmd nft nstat

DROP_SECS=${SRM_RETRANS_DROP_SECS:-40}  # ends as soon as the agent reacts
STEP_SECS=5                             # then the share dropped doubles
LIMIT=16    # the agents' default UCX_SRM_RETRANS_LIMIT, set explicitly
PORT=7078

bin=$SRM_LOG/srm_stream_check
srm_mpicc "$SRM_SRCDIR/test/mpi/srm_stream_check.c" "$bin"

srm_netns_up 2 "rt$$" --two-links
HOSTS=("${SRM_HOSTS[@]}")
srm_pass "cluster $SRM_NETNS_PREFIX up (two links each): ${HOSTS[*]}"

srm_netns_start_agents "$SRM_LOG/srmd.%h.log" UCX_SRM_DEVICES=eth0,eth1 \
    UCX_SRM_TCP_PORT=$PORT UCX_SRM_RETRANS_LIMIT=$LIMIT || srm_done
srm_log "agents: $(srm_netns_agent_pids)"

# bulk_get HOST JQ-FILTER: FILTER on HOST's bulk channel to the other host
bulk_get() {
    srm_netns_status_get "$1" ".nodes[0].channels[] | select(.kind == \"bulk\") | $2"
}
# active_path HOST: the path (0, 1) the bulk channel sends on, or nothing
active_path() {
    bulk_get "$1" '.paths[] | select(.active and .state == "ready") | .path'
}
# bulk_replaced HOST: connections HOST's bulk channel replaced
bulk_replaced() { bulk_get "$1" .replaced; }
retransmitted() {
    "$SRM_NETNS_CLUSTER" exec "$1" nstat -az TcpRetransSegs 2>/dev/null |
        awk '$1 == "TcpRetransSegs" { print $2 }'
}

srm_log ""
srm_log "--- 2 hosts x 1 rank, UCX_TLS=srm, streaming while ${HOSTS[1]} drops" \
        "3% of its large TCP packets on its bulk channel's active link"
srm_netns_stream_start "$bin" 1 -n 2000000 -s 4194304 -w 8
# ready_bulk HOST: paths of HOST's bulk channel that are ready
ready_bulk() { bulk_get "$1" '[.paths[] | select(.state == "ready")] | length'; }
# Every channel and its standby up, on both hosts.
if ! srm_netns_wait_hosts "$SRM_STREAM_PID" ready_bulk 2; then
    srm_fail "the bulk channels and their standbys did not come up"
    srm_show_log "$SRM_STREAM_OUT"
    touch "$SRM_STREAM_STOP"
    srm_done
fi

# The sender under test drops; its peer does not, and is the control.
lossy_host=${HOSTS[1]}
peer_host=${HOSTS[0]}
lossy_path=$(active_path "$lossy_host")
peer_path=$(active_path "$peer_host")
before=$(retransmitted "$lossy_host")
# What the control replaced before the drops does not count: a stream
# starting on a busy machine's veths can overflow their queues, and an
# agent that then replaces a connection does what it should.
peer_before=$(bulk_replaced "$peer_host")
lossy_before=$(bulk_replaced "$lossy_host")
srm_log "    $lossy_host: bulk channel active on path $lossy_path (eth$lossy_path); $peer_host: on path $peer_path (replaced ${peer_before:-?} so far)"
# The drops are made where the packets arrive, in the peer: dropped on the
# way out, the sender's own TCP sees a local error and sends again later,
# which it does not count as a retransmission (the watch would see nothing);
# lost in flight, they are retransmitted as on a bad link.
# drop_share PERCENT: the rule, replacing the one before (its count kept)
dropped=0
drop_share() {
    drop_stop
    "$SRM_NETNS_CLUSTER" exec "$peer_host" nft -f - <<NFT
table inet srm_retrans_test {
    chain in {
        type filter hook input priority 0;
        iifname "eth$lossy_path" meta l4proto tcp meta length > 1000 numgen random mod 100 < $1 counter drop
    }
}
NFT
}
drop_stop() {
    local n
    n=$("$SRM_NETNS_CLUSTER" exec "$peer_host" nft list table inet srm_retrans_test 2>/dev/null |
        grep -o 'counter packets [0-9]*' | awk '{ print $3 }') || return 0
    [ -n "$n" ] || return 0
    dropped=$((dropped + n))
    "$SRM_NETNS_CLUSTER" exec "$peer_host" nft delete table inet srm_retrans_test
}
# Until the agent reacts, or DROP_SECS.
share=3
drop_share "$share"
t0=$(srm_now_us)
step=$t0
while [ $(( $(srm_now_us) - t0 )) -lt $(( DROP_SECS * 1000000 )) ]; do
    srm_alive "$SRM_STREAM_PID" || break
    [ "$(bulk_replaced "$lossy_host")" -gt "${lossy_before:-0}" ] 2>/dev/null &&
        break
    if [ $(( $(srm_now_us) - step )) -ge $(( STEP_SECS * 1000000 )) ] &&
       [ "$share" -lt 12 ]; then
        share=$((share * 2))
        drop_share "$share"
        step=$(srm_now_us)
    fi
    sleep 0.2
done
drop_stop
srm_log "    dropped for $(( ($(srm_now_us) - t0) / 1000 )) ms, $share% at the end: $dropped packets"
resent=$(( $(retransmitted "$lossy_host") - before ))
sleep 1   # traffic after the drops, too

srm_netns_stream_finish "$SRM_STREAM_PID" "$SRM_STREAM_OUT" "$SRM_STREAM_STOP"

for h in "${HOSTS[@]}"; do
    srm_netns_agent_answers "$h" "$SRM_LOG/srmd.$h.log" ||
        srm_fail "srmd of $h died"
done

log=$SRM_LOG/srmd.$lossy_host.log
replaced=$(( $(bulk_replaced "$lossy_host") - ${lossy_before:-0} ))
now=$(active_path "$lossy_host")
why=$(grep 'moves to its standby' "$log" | tail -n 1)
srm_log "    $lossy_host: $resent TCP segments retransmitted, bulk channel replaced ${replaced:-?} (kept $(bulk_get "$lossy_host" .kept)), now active on path ${now:-none}"
[ -n "$why" ] && srm_log "      log: ${why#*WARN: }"
if [ "$resent" -ge "$LIMIT" ]; then
    srm_pass "$lossy_host: the drops made its TCP retransmit $resent segments"
else
    srm_fail "$lossy_host: the drops made its TCP retransmit only $resent segments (< $LIMIT): nothing to react to"
fi
if [ "$replaced" -ge 1 ] && [ -n "$why" ]; then
    srm_pass "$lossy_host: the retransmitting bulk connection was replaced, and the log says why"
else
    srm_fail "$lossy_host: the bulk channel was not replaced"
    srm_show_log "$log"
fi
if [ -n "$now" ] && [ "$now" != "$lossy_path" ]; then
    srm_pass "$lossy_host: the bulk channel went on on the other link (path $now)"
else
    srm_fail "$lossy_host: the bulk channel is on path ${now:-none}, the lossy one was $lossy_path"
fi
# The peer lost that connection too, but did not replace one for the
# drops (they were on the other host's packets).
peer_replaced=$(( $(bulk_replaced "$peer_host") - ${peer_before:-0} ))
if [ "$peer_replaced" -eq 0 ]; then
    srm_pass "$peer_host (no drops): replaced nothing while the other host's packets were lost"
else
    srm_fail "$peer_host sent without drops, yet replaced $peer_replaced connection(s) meanwhile"
    grep 'TCP segments retransmitted within' "$SRM_LOG/srmd.$peer_host.log" | sed 's/^/    | /'
fi
# What kind of retransmissions each host's TCP made, for the log.
for h in "${HOSTS[@]}"; do
    srm_log "    $h TCP: $("$SRM_NETNS_CLUSTER" exec "$h" nstat -az TcpRetransSegs TcpExtTCPLossProbes TcpExtTCPTimeouts TcpExtTCPDSACKRecv TcpExtTCPSpuriousRTOs TcpExtTCPFastRetrans TcpExtTCPSlowStartRetrans TcpExtTCPLostRetransmit 2>/dev/null | awk 'NR > 1 { printf "%s %s ", $1, $2 }')"
done
srm_done
