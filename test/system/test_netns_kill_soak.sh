#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
#
# test_netns_kill_soak: a rank killed by SIGKILL (an MPI abort, the OOM
# killer) costs nothing but itself, however often and wherever it is.
#
# 2 simulated hosts, one agent each. 2 x 1 ranks run test/mpi/
# srm_stream_check.c over UCX_TLS=srm for the whole test (numbered,
# checksummed messages both ways). Meanwhile SRM_KILL_ROUNDS (200) times
# a ucx_perftest pair between the hosts starts streaming 8-byte tag
# messages over srm (busy-polling ranks with UCX_SRM_DIRECT=always, which
# write and read the channels' sockets themselves under the lanes' locks)
# and one of the two, chosen at random, is killed with SIGKILL after a
# random 100-400 ms, the other right after. Some die holding a lock.
#
# Checked: both agents answer after every 50 rounds and at the end; the
# stream check passes (lost, duplicated, out of order, corrupt all 0). The
# agents' logs say how many lanes a dying rank left locked.
# SRM_KILL_WIRE=verbs: the same on the verbs wire, between hosts with an
# rxe device each, in the VM (test_vm_kill_soak; no direct lanes there).
#
. "$(dirname "$0")/lib.sh"
srm_netns_require --mpi mpicc mpirun
srm_require_cmd ucx_perftest

ROUNDS=${SRM_KILL_ROUNDS:-200}
MPI_TIMEOUT=${SRM_MPI_TIMEOUT:-600}
PORT=17170
bin=$SRM_LOG/srm_stream_check
srm_mpicc "$SRM_SRCDIR/test/mpi/srm_stream_check.c" "$bin"

if [ "${SRM_KILL_WIRE:-tcp}" = verbs ]; then
    # test_vm_kill_soak, in the VM: hosts with an rxe device each
    declare -A SRM_NETNS_AGENT_PID=()
    srm_vm_hosts_up 2 ks
    HOSTS=("${SRM_HOSTS[@]}")
    for h in "${HOSTS[@]}"; do
        srm_netns_agent_start "$h" "$SRM_LOG/srmd.$h.log" \
            UCX_SRM_DEVICES="rxe_$h:1@eth0" || srm_done
    done
    wire=$(srm_netns_status_get "${HOSTS[0]}" '.wire.paths[0].wire')
    [[ $wire == verbs ]] ||
        { srm_fail "the agents are not on the verbs wire: '$wire'"; srm_done; }
else
    srm_netns_up 2 "ks$$"
    HOSTS=("${SRM_HOSTS[@]}")
    srm_netns_start_agents "$SRM_LOG/srmd.%h.log" || srm_done
fi
srm_pass "cluster ${SRM_NETNS_PREFIX:-} up: ${HOSTS[*]} (${SRM_KILL_WIRE:-tcp} wire)"
srm_log "agents: $(srm_netns_agent_pids)"

out=$SRM_LOG/srm_stream_check.log
stop=$SRM_LOG/stop
rm -f "$stop"
srm_netns_mpirun_cmd "$SRM_NETNS_HOST_LIST" 1 "$MPI_TIMEOUT" srm
"${SRM_MPIRUN[@]}" -- "$bin" -n 100000000 -s 65536 -w 4 -f "$stop" \
    >"$out" 2>&1 &
mpi_pid=$!
srm_track "$mpi_pid"

# perftest_in HOST LOG ARGS...: ucx_perftest over srm in HOST, in the
# background; $! is the wrapper, whose descendant is the rank.
perftest_in() {
    local host=$1 log=$2
    shift 2
    srm_perftest_rte
    "$SRM_NETNS_CLUSTER" exec "$host" env LD_PRELOAD="$SRM_MODULE" \
        UCX_TLS=srm UCX_SRM_AGENT=never UCX_SRM_DIRECT=always \
        timeout -k 2 30 ucx_perftest -p "$PORT" $SRM_PERFTEST_RTE \
        -t tag_bw -s 8 -n 100000000 "$@" >>"$log" 2>&1 &
}

# kill_tree PID: SIGKILL the rank under the wrapper PID, then the wrapper.
kill_tree() {
    local p
    for p in $(srm_descendants "$1") "$1"; do
        [ "$(cat /proc/"$p"/comm 2>/dev/null)" = ucx_perftest ] &&
            kill -KILL "$p" 2>/dev/null
    done
    kill -KILL "$1" 2>/dev/null
    wait "$1" 2>/dev/null
    srm_untrack "$1"
}

# wait_streaming PID: until the client under PID prints its table's
# header (it streams), at most 30 s; 1 if it did not.
wait_streaming() {
    local log=$SRM_LOG/perftest.client.log before i
    before=$(grep -c 'Stage' "$log")
    for i in $(seq 1 300); do
        [ "$(grep -c 'Stage' "$log")" -gt "$before" ] && return 0
        srm_alive "$1" || return 1
        sleep 0.1
    done
    return 1
}

agents_answer() {
    local h
    for h in "${HOSTS[@]}"; do
        srm_netns_agent_answers "$h" "$SRM_LOG/srmd.$h.log" || return 1
    done
}

killed=0 streamed=0
t0=$(srm_now_us)
for round in $(seq 1 "$ROUNDS"); do
    srm_alive "$mpi_pid" || { srm_fail "the stream check ended early"; break; }
    perftest_in "${HOSTS[0]}" "$SRM_LOG/perftest.server.log"
    spid=$!
    srm_track "$spid"
    if srm_netns_wait_listen "${HOSTS[0]}" "$PORT" "$spid" 50; then
        perftest_in "${HOSTS[1]}" "$SRM_LOG/perftest.client.log" 10.77.0.1
        cpid=$!
        srm_track "$cpid"
        if [ "${SRM_KILL_WIRE:-tcp}" = verbs ]; then
            # Under TCG a pair takes seconds to connect: kill it streaming.
            wait_streaming "$cpid" && streamed=$((streamed + 1))
        fi
        sleep "0.$(printf '%03d' $((100 + RANDOM % 300)))"
        if [ $((RANDOM % 2)) -eq 0 ]; then
            kill_tree "$cpid"; kill_tree "$spid"
        else
            kill_tree "$spid"; kill_tree "$cpid"
        fi
        killed=$((killed + 1))
    else
        kill_tree "$spid"
    fi
    if [ $((round % 50)) -eq 0 ] && ! agents_answer; then
        srm_fail "an agent died or stopped answering by round $round"
        break
    fi
done
srm_log "    $killed of $ROUNDS rounds killed a streaming pair in" \
        "$(( ($(srm_now_us) - t0) / 1000000 )) s"
if [ "$killed" -ge $((ROUNDS * 9 / 10)) ]; then
    srm_pass "$killed pairs of ranks killed with SIGKILL mid-stream"
else
    srm_fail "only $killed of $ROUNDS pairs got to stream before the kill"
fi
if [ "${SRM_KILL_WIRE:-tcp}" = verbs ]; then
    if [ "$streamed" -ge $((ROUNDS * 8 / 10)) ]; then
        srm_pass "$streamed of $ROUNDS pairs were seen streaming when killed"
    else
        srm_fail "only $streamed of $ROUNDS pairs were seen streaming before the kill"
    fi
fi
if agents_answer; then
    srm_pass "both agents live and answer after $killed kills"
else
    srm_fail "an agent died or stopped answering"
    for h in "${HOSTS[@]}"; do srm_show_log "$SRM_LOG/srmd.$h.log" 20; done
fi
srm_log "    lanes left locked by a dying rank: $(cat "$SRM_LOG"/srmd.*.log |
        grep -c 'a process died writing to it directly')"
srm_netns_stream_finish "$mpi_pid" "$out" "$stop"
srm_done
