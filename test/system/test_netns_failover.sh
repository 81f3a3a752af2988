#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
#
# test_netns_failover: channels fail, nothing is lost. 3 simulated hosts,
# each with two interfaces (eth0, eth1), agents with UCX_SRM_DEVICES=
# eth0,eth1 (the standby connection of every channel on the second link).
# 3 x 2 ranks run test/mpi/srm_stream_check.c over UCX_TLS=srm: every rank
# streams numbered, checksummed messages (mostly small, every 16th up to
# 64 KB) to every other rank. Meanwhile, round robin over the hosts:
#   (a) one established agent connection is killed (`ss -K`, a TCP reset),
#   (b) the host's eth0 goes down for a second (`ip link set eth0 down`):
#       its connections on that link go silent and must be declared dead
#       within UCX_SRM_FAILOVER_TIMEOUT, their traffic moving to eth1,
# each SRM_FAILOVER_FAULTS times (20), alternating.
#
# Checked: the program passes (lost, duplicated, out of order and corrupt
# all 0, printed), every injected fault hit a connection, the agents
# counted failovers and are still running; the longest round of the
# program (what a failover cost it) is printed.
#
# The stream runs until the faults are done (a stop file), at most
# SRM_FAILOVER_MESSAGES per rank pair.
#
# Settings (environment): SRM_FAILOVER_FAULTS (20), SRM_FAILOVER_MESSAGES
# (2000000), SRM_MPI_TIMEOUT (300), SRM_FAILOVER_RANDOM (unset: hosts in
# turn, fixed pauses; a number: seeds random hosts and pauses of 0.1-2 s,
# as contrib/soak does).
#
. "$(dirname "$0")/lib.sh"

srm_netns_require --mpi mpicc mpirun
srm_require_cmd ss

FAULTS=${SRM_FAILOVER_FAULTS:-20}
MESSAGES=${SRM_FAILOVER_MESSAGES:-2000000}
MPI_TIMEOUT=${SRM_MPI_TIMEOUT:-300}
PORT=7077   # every agent listens on it (one port space per host)

bin=$SRM_LOG/srm_stream_check
srm_mpicc "$SRM_SRCDIR/test/mpi/srm_stream_check.c" "$bin"

srm_netns_up 3 "fo$$" --two-links
HOSTS=("${SRM_HOSTS[@]}")
srm_pass "cluster $SRM_NETNS_PREFIX up (two links each): ${HOSTS[*]}"

srm_netns_start_agents "$SRM_LOG/srmd.%h.log" UCX_SRM_DEVICES=eth0,eth1 \
    UCX_SRM_TCP_PORT=$PORT || srm_done
srm_log "agents: $(srm_netns_agent_pids)"
interfaces=$(srm_netns_status_get "${HOSTS[0]}" '[.wire.paths[].interface] | join(" ")')
srm_log "    ${HOSTS[0]}: listens on $interfaces"
if [ "$interfaces" = "eth0 eth1" ]; then
    srm_pass "agents listen on both links"
else
    srm_fail "the agent of ${HOSTS[0]} does not listen on eth0 and eth1 ($interfaces)"
fi

# kill_one_connection HOST N: reset the N-th (mod count) established agent
# connection of HOST; prints what it killed, returns 1 if there was none.
kill_one_connection() {
    local h=$1 n=$2 conns count line src dst
    conns=$("$SRM_NETNS_CLUSTER" exec "$h" ss -Htn state established \
        "( sport = :$PORT or dport = :$PORT )" 2>/dev/null)
    count=$(printf '%s\n' "$conns" | grep -c .)
    [ "$count" -gt 0 ] || return 1
    line=$(printf '%s\n' "$conns" | sed -n "$(( n % count + 1 ))p")
    src=$(awk '{ print $3 }' <<<"$line")
    dst=$(awk '{ print $4 }' <<<"$line")
    "$SRM_NETNS_CLUSTER" exec "$h" ss -K -tn state established \
        src "$src" dst "$dst" >/dev/null 2>&1 || return 1
    echo "$src -> $dst"
}

out=$SRM_LOG/srm_stream_check.log
srm_log ""
srm_log "--- 3 hosts x 2 ranks, UCX_TLS=srm, streaming while" \
        "$FAULTS connection resets and $FAULTS eth0 outages are injected"
stop=$SRM_LOG/stop
rm -f "$stop"
srm_netns_mpirun_cmd "$SRM_NETNS_HOST_LIST" 2 "$MPI_TIMEOUT" srm
"${SRM_MPIRUN[@]}" -- "$bin" -n "$MESSAGES" -s 65536 -w 16 -f "$stop" \
    >"$out" 2>&1 &
mpi_pid=$!
srm_track "$mpi_pid"

# Let the stream start (and every channel and standby come up).
for i in $(seq 1 100); do
    grep -q '^progress:' "$out" 2>/dev/null && break
    srm_alive "$mpi_pid" || break
    sleep 0.2
done
sleep 1

# pause: the gap after a fault, fixed or (SRM_FAILOVER_RANDOM) random
pause() {
    if [ -n "${SRM_FAILOVER_RANDOM:-}" ]; then
        sleep "$(( RANDOM % 10 / 5 )).$(( RANDOM % 9 + 1 ))"
    else
        sleep 0.4
    fi
}
[ -n "${SRM_FAILOVER_RANDOM:-}" ] && RANDOM=$SRM_FAILOVER_RANDOM

resets=0 outages=0 missed=0
for i in $(seq 0 $(( 2 * FAULTS - 1 ))); do
    srm_alive "$mpi_pid" || break
    if [ -n "${SRM_FAILOVER_RANDOM:-}" ]; then
        h=${HOSTS[$(( RANDOM % 3 ))]}
    else
        h=${HOSTS[$(( i % 3 ))]}
    fi
    if (( i % 2 == 0 )); then
        if what=$(kill_one_connection "$h" "$i"); then
            resets=$((resets + 1))
            srm_log "    fault $((i + 1)): $h: reset $what"
        else
            missed=$((missed + 1))
            srm_log "    fault $((i + 1)): $h: no connection to reset"
        fi
        pause
    else
        "$SRM_NETNS_CLUSTER" exec "$h" ip link set eth0 down
        sleep 1
        "$SRM_NETNS_CLUSTER" exec "$h" ip link set eth0 up
        outages=$((outages + 1))
        srm_log "    fault $((i + 1)): $h: eth0 down for 1 s"
        pause
    fi
done

sleep 1   # traffic after the last fault, too
srm_netns_stream_finish "$mpi_pid" "$out" "$stop"
if [ "$resets" -eq "$FAULTS" ] && [ "$outages" -eq "$FAULTS" ]; then
    srm_pass "$resets connection resets and $outages link outages injected while it ran"
else
    srm_fail "only $resets resets and $outages outages of $FAULTS each were injected (job ended early, or $missed found no connection)"
fi

total=0
for h in "${HOSTS[@]}"; do
    log=$SRM_LOG/srmd.$h.log
    srm_netns_agent_answers "$h" "$log" || { srm_fail "srmd of $h died"; continue; }
    n=$(srm_netns_status_get "$h" '[.nodes[].channels[].failovers] | add // 0')
    resent=$(srm_netns_status_get "$h" '[.nodes[].channels[].resent] | add // 0')
    silent=$(grep -c 'nothing heard for' "$log")
    srm_log "    $h: failovers $n, frames resent $resent, connections declared silent $silent"
    total=$((total + n))
done
if [ "$total" -ge "$FAULTS" ]; then
    srm_pass "agents counted $total failovers"
else
    srm_fail "agents counted only $total failovers for $((2 * FAULTS)) faults"
fi
srm_done
