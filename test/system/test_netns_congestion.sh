#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
#
# test_netns_congestion: connections that retransmit because the network
# is congested are not mistaken for bad links (UCX_SRM_RETRANS_LIMIT,
# srm_retrans.h).
#
# 3 simulated hosts with two interfaces each, links shaped to a line rate
# with bounded switch-port queues (netns-cluster --rate --queue). 3 x 1
# ranks run test/mpi/srm_stream_check.c over UCX_TLS=srm: every rank
# streams to both others at once (every 16th message up to 4 MB), so two
# senders meet at each host's port and its queue overflows, over and
# over: TCP retransmits, as it does on any congested network, a share of
# what it sends that a bad link would not exceed. Nothing is wrong with
# the links: a channel that moves to its standby connection takes its load
# along, and loses as much there.
#
# Checked: the congestion made TCP retransmit at least the watch's limit
# per second on average on some host, and the watch tripped (a channel
# moved or was kept; else nothing here would have tested the watch: the
# test fails, saying so); no channel moved more than once in the
# STREAM_SECS (8, at most 10: after a keep of 10 s a channel tries a move
# again, as it should) for retransmitting, and where one tripped the
# watch again on the connection it moved to, it stayed ("kept", and the
# agent's log says congestion); the stream check passes. The share of
# segments retransmitted is logged (docs/performance.md has them).
#
. "$(dirname "$0")/lib.sh"

srm_netns_require --mpi mpicc mpirun
srm_require_cmd nstat tc

STREAM_SECS=${SRM_CONGESTION_SECS:-8}
if ! [ "$STREAM_SECS" -le 10 ] 2>/dev/null; then
    srm_fail "SRM_CONGESTION_SECS must be a number of seconds up to 10, not '$STREAM_SECS'"
    srm_done
fi
LIMIT=16    # the agents' default UCX_SRM_RETRANS_LIMIT, set explicitly
RATE=200mbit
QUEUE=131072
PORT=7079

bin=$SRM_LOG/srm_stream_check
srm_mpicc "$SRM_SRCDIR/test/mpi/srm_stream_check.c" "$bin"

srm_netns_up 3 "cg$$" --two-links --rate "$RATE" --queue "$QUEUE"
HOSTS=("${SRM_HOSTS[@]}")
srm_pass "cluster $SRM_NETNS_PREFIX up (two links each, $RATE, switch ports of $QUEUE bytes): ${HOSTS[*]}"

srm_netns_start_agents "$SRM_LOG/srmd.%h.log" UCX_SRM_DEVICES=eth0,eth1 \
    UCX_SRM_TCP_PORT=$PORT UCX_SRM_RETRANS_LIMIT=$LIMIT \
    || srm_done
srm_log "agents: $(srm_netns_agent_pids)"

# replaced HOST: connections HOST's channels replaced for retransmitting,
# one number a channel
replaced() {
    srm_netns_status_get "$1" '[.nodes[].channels[].replaced] | map(tostring) | join(" ")'
}
# kept HOST: times HOST's channels stayed where a move had not helped
kept() {
    srm_netns_status_get "$1" '[.nodes[].channels[].kept] | add // 0'
}
# tcp_count HOST NAME: the kernel's counter NAME in HOST
tcp_count() {
    "$SRM_NETNS_CLUSTER" exec "$1" nstat -az "$2" 2>/dev/null |
        awk -v n="$2" '$1 == n { print $2 }'
}
# ready_paths HOST: paths of HOST's channels that are ready
ready_paths() {
    srm_netns_status_get "$1" '[.nodes[].channels[].paths[] | select(.state == "ready")] | length'
}

srm_log ""
srm_log "--- 3 hosts x 1 rank, UCX_TLS=srm, everyone streaming to everyone for ${STREAM_SECS} s"
srm_netns_stream_start "$bin" 1 -n 2000000 -s 4194304 -w 8
# Both channels to both other hosts, and their standbys: 8 paths a host.
if ! srm_netns_wait_hosts "$SRM_STREAM_PID" ready_paths 8; then
    srm_fail "the channels and their standbys did not come up"
    srm_show_log "$SRM_STREAM_OUT"
    touch "$SRM_STREAM_STOP"
    srm_done
fi

declare -A resent0 sent0 replaced0
for h in "${HOSTS[@]}"; do
    resent0[$h]=$(tcp_count "$h" TcpRetransSegs)
    sent0[$h]=$(tcp_count "$h" TcpOutSegs)
    replaced0[$h]=$(replaced "$h")
done
t0=$(srm_now_us)
while [ $(( $(srm_now_us) - t0 )) -lt $(( STREAM_SECS * 1000000 )) ]; do
    srm_alive "$SRM_STREAM_PID" || break
    sleep 0.2
done
secs=$(( ($(srm_now_us) - t0) / 1000000 ))
[ "$secs" -ge 1 ] || secs=1

most=0
moved_twice=0
kept_total=0
for h in "${HOSTS[@]}"; do
    resent=$(( $(tcp_count "$h" TcpRetransSegs) - resent0[$h] ))
    sent=$(( $(tcp_count "$h" TcpOutSegs) - sent0[$h] ))
    read -r -a before <<<"${replaced0[$h]}"
    read -r -a after <<<"$(replaced "$h")"
    moves=()
    for i in "${!after[@]}"; do
        moves+=($(( after[i] - ${before[i]:-0} )))
        [ "${moves[-1]}" -le 1 ] || moved_twice=$((moved_twice + 1))
    done
    k=$(kept "$h")
    kept_total=$((kept_total + k))
    srm_log "    $h: $resent of $sent TCP segments retransmitted" \
            "($(awk -v r="$resent" -v s="$sent" 'BEGIN { printf "%.2f", s ? 100 * r / s : 0 }') %) in $secs s;" \
            "moves of its channels: ${moves[*]}; kept: $k"
    [ "$resent" -gt "$most" ] && most=$resent
done

srm_netns_stream_finish "$SRM_STREAM_PID" "$SRM_STREAM_OUT" "$SRM_STREAM_STOP"

for h in "${HOSTS[@]}"; do
    srm_netns_agent_answers "$h" "$SRM_LOG/srmd.$h.log" ||
        srm_fail "srmd of $h died"
done

if [ "$most" -ge $(( LIMIT * secs )) ]; then
    srm_pass "the congestion made TCP retransmit $most segments on one host in $secs s (>= $LIMIT a second)"
else
    srm_fail "the congestion made TCP retransmit only $most segments on any host in $secs s (< $LIMIT a second): the watch was not tested"
fi
if [ "$moved_twice" -eq 0 ]; then
    srm_pass "no channel moved more than once for retransmitting under congestion (kept $kept_total times)"
else
    srm_fail "$moved_twice channel(s) moved more than once for retransmitting, though only the network was congested"
    for h in "${HOSTS[@]}"; do
        grep 'TCP segments retransmitted within' "$SRM_LOG/srmd.$h.log" | sed "s/^/    $h | /"
    done
fi
# Over the whole run, start included: the agents are this test's own.
tripped=0
for h in "${HOSTS[@]}"; do
    tripped=$(( tripped + $(srm_netns_status_get "$h" '[.nodes[].channels[] | .replaced + .kept] | add // 0') ))
done
if [ "$tripped" -ge 1 ]; then
    srm_pass "the watch tripped under the congestion ($tripped moves and keeps in all)"
else
    srm_fail "the watch never tripped, though TCP retransmitted $most segments: the watch was not tested"
fi
if [ "$kept_total" -eq 0 ] ||
   grep -q 'congestion, not a bad link' "$SRM_LOG"/srmd.*.log; then
    srm_pass "where a channel stayed, its agent's log says congestion"
else
    srm_fail "channels stayed $kept_total times, but no agent's log says why"
fi
srm_done
