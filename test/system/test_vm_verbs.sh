#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
#
# test_vm_verbs: srm's verbs wire (RC queue pairs owned by srmd) on
# soft-RoCE, in the QEMU test VM (contrib/vm-rxe): this machine has no
# RDMA device. On the host the test boots the VM and runs this same file
# there with --guest (srm_vm_self in lib.sh: SKIP, loudly, without QEMU or
# an image).
#
# In the guest:
#   1. the wire gtests (test_wire.cc: streams on both channels, a queue
#      pair forced to the error state mid-stream, the same with sends
#      copied to the pool instead of sent in place, silent links, failover
#      off, secrets, unreachable and paused nodes; test_verbs_srq.cc: queue
#      pairs on the device's shared receive queue, one left unread while
#      the others flow, buffers given back by dead queue pairs) with
#      SRM_TEST_WIRE_DEVICE=rxe on a veth of the guest, all agents on it
#      (not the one that stops a spinning agent under a fake TCP peer: it
#      tests the tcp wire's timers, on the host, and under TCG a spinning
#      agent starves the peer it is judged against);
#   2. two hosts h1, h2 (contrib/vm-rxe/rxe-hosts), srmd in each with
#      UCX_SRM_DEVICES=rxe_<host>:1@eth0 (queue pairs on the host's rxe,
#      the handshake on its eth0): `srmctl status` says "wire: verbs",
#      "xrc: no" (rxe has no XRC; or the build has no XRC objects) and shows
#      the queue pairs;
#   3. ucx_perftest with UCX_TLS=srm h2 -> h1: UCT am_lat, am_bw, UCP
#      tag_lat 8 B, tag_bw 8 B, 64 KB and 4 MB; the agents' queue pairs must
#      have carried it (send work requests counted), h1's receives must
#      have come from its device's shared receive queue, reposted in
#      batches, all buffers back in it at rest, and h1 must have placed
#      large frames straight into the ranks' rings; h2's queue pairs must
#      have sent every frame in place from the channels' registered
#      streams and TX rings (or inline), none through the send pool;
#   4. Open MPI 2 hosts x 2 ranks, test/mpi/srm_mpi_check.c over srm;
#   5. the queue pairs of the srm job, counted with `rdma resource show
#      qp`: srmd's own RC QPs (2 channels x 2 paths per remote node, per
#      host), none in the ranks;
#   6. failover: test/mpi/srm_stream_check.c streams 2 x 2 ranks while
#      `srmctl fault` moves the active queue pairs of h2 to the error state
#      SRM_WIRE_VERBS_FAULTS times (3): nothing lost, duplicated, reordered or
#      corrupt, and the agents counted the failovers.
# Under TCG every step is about ten times slower than on the host: the
# agents get UCX_SRM_FAILOVER_TIMEOUT=2s and the gtests
# SRM_TEST_TIME_SCALE=10.
#
# srm-test-timeout: 1000
. "$(dirname "$0")/lib.sh"

[ "${1:-}" = --guest ] || SRM_VM_TIMEOUT=${SRM_VM_TIMEOUT:-900} srm_vm_self 2048

# ------------------------------------------------------------ the guest --
[ "${SRM_VM_GUEST:-}" = 1 ] || { srm_fail "--guest outside the VM"; srm_done; }
srm_netns_require --mpi mpicc mpirun rdma
FAULTS=${SRM_WIRE_VERBS_FAULTS:-3}
STEP_TIMEOUT=180
MPI_TIMEOUT=240
# Agents sleep when idle: under TCG a spinning agent takes a whole vCPU.
export UCX_SRM_FAILOVER_TIMEOUT=2s UCX_SRM_PEER_TIMEOUT=20s UCX_SRM_POLL=block

# --- 1. the wire gtests on rxe ---------------------------------------------
srm_vm_gtests "wire gtests" 10.79.250.1 \
    'wire.*:verbs_srq.*:uct_flush_test.*:-wire.an_agent_that_was_not_scheduled_*' 600 \
    SRM_TEST_WIRE_DEVICE=rxe_gt:1 SRM_TEST_TIME_SCALE=10

# --- 2. two hosts, srmd on the verbs wire ------------------------------------
declare -A SRM_NETNS_AGENT_PID=()
srm_vm_hosts_up 2 vv
for h in "${SRM_HOSTS[@]}"; do
    srm_netns_agent_start "$h" "$SRM_LOG/srmd.$h.log" \
        UCX_SRM_DEVICES="rxe_$h:1@eth0" || srm_done
done
wire=$(srm_netns_status_get vvh1 '.wire.paths[0] |
    "\(.wire) on \(.interface), xrc \(.xrc): \(.xrc_why)"')
if grep -q '^#define ENABLE_XRC 1' "$SRM_BUILD_DIR/config.h"; then
    rc_why="device has no XRC"
else
    rc_why="this srmd was built without XRC (configure --enable-xrc)"
fi
if [ "$wire" = "verbs on rxe_vvh1:1 (eth0), xrc false: $rc_why" ]; then
    srm_pass "srmd in vvh1: $wire"
else
    srm_fail "srmd in vvh1 is not on the verbs wire with RC ($rc_why): '$wire'"
fi

# --- 3. ucx_perftest over srm --------------------------------------------------
export UCX_TLS=srm UCX_SRM_AGENT=never
dev=$(srm_uct_device "${SRM_HOSTS[0]}")
port=13500
for spec in uct:am_lat:8:100 uct:am_bw:1024:200 ucp:tag_lat:8:100 \
            ucp:tag_bw:8:500 ucp:tag_bw:65536:50 ucp:tag_bw:4194304:4; do
    IFS=: read -r layer t size iters <<<"$spec"
    args=(-t "$t" -s "$size" -n "$iters" -w 2)
    [ "$layer" = uct ] && args+=(-x srm -d "$dev")
    label=perftest-$t-$size
    srm_netns_perftest_pair "$label" "$port" "$STEP_TIMEOUT" "${args[@]}"
    port=$((port + 1))
    final=$(grep '^Final:' "$SRM_LOG/$label.client.log" | tail -n 1 | sed 's/  */ /g')
    if [ "$SRM_CLIENT_RC" = 0 ] && [ "$SRM_SERVER_RC" = 0 ] && [ -n "$final" ]; then
        srm_pass "ucx_perftest $layer $t $size B x $iters over srm/verbs: $final"
    else
        srm_fail "ucx_perftest $layer $t $size B: client $SRM_CLIENT_RC, server $SRM_SERVER_RC"
        srm_show_log "$SRM_LOG/$label.client.log" 8
        srm_show_log "$SRM_LOG/$label.server.log" 8
    fi
done
# chan_sum HOST FIELD: FIELD (a jq path in a channel) summed over HOST's
# channels to every node.
chan_sum() {
    srm_netns_status_get "$1" "[.nodes[].channels[]$2 // 0] | add // 0"
}
wrs=$(chan_sum vvh2 .wire_stats.send_wrs)
bells=$(chan_sum vvh2 .wire_stats.doorbells)
srm_netns_status vvh2 | grep '^node' | sed 's/^/    /'
if [ "$wrs" -gt 0 ]; then
    srm_pass "vvh2's queue pairs posted $wrs send work requests in $bells doorbells"
else
    srm_fail "vvh2's status shows no send work requests on queue pairs"
fi
# vvh1, the receiver of the runs above, took every receive from its
# device's one shared queue, in batches, and at rest holds none unread.
srq=$(srm_netns_status_get vvh1 '.wire.paths[] | select(.device == "rxe_vvh1:1") |
    .receives | "\(.slots) x \(.slot_size) B, posted \(.posted) held \(.held)"')
recv_wrs=$(chan_sum vvh1 .wire_stats.recv_wrs)
refills=$(srm_netns_status_get vvh1 '.wire.paths[0].receives.refills')
if [ "$srq" = "320 x 8192 B, posted 256 held 0" ] &&
   [ "${refills:-0}" -gt 1 ] && [ "$recv_wrs" -gt "${refills:-0}" ]; then
    srm_pass "vvh1: $recv_wrs receives from one shared queue, reposted in $refills batches: $srq"
else
    srm_fail "vvh1's shared receive queue is not as it should be at rest after $recv_wrs receives: '$srq'"
fi
# Large frames are read from the received buffers straight into the
# receiving rank's ring (placement), as from a socket on the tcp wire.
placed=$(chan_sum vvh1 .placed_frames)
if [ "$placed" -gt 0 ]; then
    srm_pass "vvh1 placed $placed large frames straight into its ranks' rings"
else
    srm_fail "vvh1 placed no frame from its queue pairs into a ring"
fi
# The channels' streams are registered (UCX_SRM_VERBS_IN_PLACE=y), and so
# are the ranks' TX rings that large frames were sent from where they lay
# (UCX_SRM_RING_SEND_MIN): every send work request was either inline or
# read in place by the device, and none took a buffer of the send pool.
# One snapshot for all four counts: acks go on after the runs.
read -r all in_place inline rings < <(srm_netns_status_get vvh2 '
    [.nodes[].channels[]] |
    "\(map(.wire_stats.send_wrs // 0) | add // 0)
     \(map(.wire_stats.in_place // 0) | add // 0)
     \(map(.wire_stats.inline // 0) | add // 0)
     \(map(.from_rings) | add // 0)"' | tr '\n' ' '; echo)
pool=$(srm_netns_status_get vvh2 '.wire.paths[] | select(.device == "rxe_vvh2:1") |
    .sends | "\(.slots) x \(.slot_size) B, free \(.free) waits \(.waits) reclaims \(.reclaims)"')
if [ "$in_place" -gt 0 ] && [ "$rings" -gt 0 ] &&
   [ $((in_place + inline)) = "$all" ] &&
   [ "$pool" = "128 x 8192 B, free 128 waits 0 reclaims 0" ]; then
    srm_pass "vvh2 sent $in_place of $all work requests in place, from its channels' streams and, for $rings large frames, from its ranks' TX rings; the other $inline inline; its send pool was not used: $pool"
else
    srm_fail "vvh2 sent $in_place work requests in place and $inline inline of $all, $rings frames from TX rings (want all of them, some in place, some frames from rings, none from the pool): '$pool'"
fi

# --- 4, 5. MPI over srm/verbs, and its queue pairs ------------------------------
bin=$SRM_LOG/srm_mpi_check
srm_mpicc "$SRM_SRCDIR/test/mpi/srm_mpi_check.c" "$bin"
out=$SRM_LOG/mpi-check.log
srm_netns_mpirun_cmd "$SRM_NETNS_HOST_LIST" 2 "$MPI_TIMEOUT" srm
"${SRM_MPIRUN[@]}" -- "$bin" -i 1 -m 256K >"$out" 2>&1 &
mpi_pid=$!
srm_track "$mpi_pid"
# srmd's RC QPs in RTS while the job runs (they outlive it: sampled once
# the job has started to talk), and any QP of a rank.
agent_qps=0 rank_qps=0
for i in $(seq 1 100); do
    grep -qa '^PASS:' "$out" 2>/dev/null && break
    srm_alive "$mpi_pid" || break
    sleep 0.3
done
rdma resource show qp >"$SRM_LOG/qps.txt" 2>&1
agent_qps=$(awk '/comm srmd/ && /type RC/ && /state RTS/' "$SRM_LOG/qps.txt" | grep -c .)
rank_qps=$(awk '/comm srm_mpi_check/' "$SRM_LOG/qps.txt" | grep -c .)
rc=0
wait "$mpi_pid" || rc=$?
srm_untrack "$mpi_pid"
summary=$(grep -a '^srm_mpi_check: .* passed' "$out" | tail -n 1)
if [ "$rc" = 0 ] && printf '%s\n' "$summary" | grep -q ' 0 failed$'; then
    srm_pass "srm_mpi_check 2 hosts x 2 ranks over srm/verbs: $summary"
else
    srm_fail "srm_mpi_check over srm/verbs: exit $rc, '${summary:-no summary}'"
    srm_show_log "$out" 20
fi
# 2 hosts, each: 2 channels x 2 paths to the other = 4 RC QPs.
if [ "$agent_qps" = 8 ] && [ "$rank_qps" = 0 ]; then
    srm_pass "queue pairs: srmd 8 RC in all (4 per host: 2 channels x 2 paths), ranks 0"
else
    srm_fail "queue pairs: srmd $agent_qps RC (want 8), ranks $rank_qps (want 0); see $SRM_LOG/qps.txt"
fi

# --- 6. failover on queue pair errors -------------------------------------------
bin=$SRM_LOG/srm_stream_check
srm_mpicc "$SRM_SRCDIR/test/mpi/srm_stream_check.c" "$bin"
out=$SRM_LOG/stream-check.log
stop=$SRM_LOG/stop
rm -f "$stop"
before=$(chan_sum vvh2 .failovers)
"${SRM_MPIRUN[@]}" -- "$bin" -n 200000 -s 65536 -w 16 -f "$stop" >"$out" 2>&1 &
mpi_pid=$!
srm_track "$mpi_pid"
for i in $(seq 1 200); do
    grep -q '^progress:' "$out" 2>/dev/null && break
    srm_alive "$mpi_pid" || break
    sleep 0.3
done
hit=0
for i in $(seq 1 "$FAULTS"); do
    sleep 3
    reply=$(srm_netns_ctl vvh2 fault --kind small 2>&1)
    srm_log "    fault $i: vvh2: $reply"
    case $reply in reset\ [1-9]*) hit=$((hit + 1)) ;; esac
done
sleep 3
touch "$stop"
rc=0
wait "$mpi_pid" || rc=$?
srm_untrack "$mpi_pid"
result=$(grep '^ranks ' "$out" | tail -1)
after=$(chan_sum vvh2 .failovers)
if [ "$rc" = 0 ] && [ -n "$result" ]; then
    srm_pass "stream check across $hit queue pair errors: $result"
else
    srm_fail "stream check: exit $rc${result:+ ($result)}"
    srm_show_log "$out" 20
fi
grep -h 'moved to the error state\|queue pair 0x' "$SRM_LOG/srmd.vvh2.log" | tail -n 4 | sed 's/^/    /'
if [ "$hit" = "$FAULTS" ] && [ $((after - before)) -ge "$FAULTS" ]; then
    srm_pass "$hit queue pairs forced to the error state; vvh2 counted $((after - before)) failovers"
else
    srm_fail "faults hit $hit of $FAULTS; vvh2 failovers $before -> $after"
fi
for h in "${SRM_HOSTS[@]}"; do
    srm_netns_agent_answers "$h" "$SRM_LOG/srmd.$h.log" || srm_fail "srmd of $h died"
done
srm_done
