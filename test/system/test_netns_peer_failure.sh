#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
#
# test_netns_peer_failure: a host that disappears for good is reported to
# the endpoints of its peers within UCX_SRM_PEER_TIMEOUT, and the other
# hosts keep talking. 3 simulated hosts, agents with UCX_SRM_PEER_TIMEOUT=
# 2s (FAILOVER_TIMEOUT: the default, 300 ms). 3 x 2 ranks run
# test/mpi/srm_peer_failure.c over UCX_TLS=srm: UCP endpoints to every
# other rank in UCP_ERR_HANDLING_MODE_PEER with an error callback, every
# rank streaming active messages to every other. (MPI runs on pml ob1 and
# only launches the ranks and exchanges their worker addresses: Open MPI
# 4.1's pml ucx creates its endpoints without an error mode, and UCX then
# treats a peer failure as fatal.) Once messages flow, the script takes
# eth0 of h3 down for good and writes the time (before the command) to a
# file the ranks read.
#
# Checked, for every rank on h1 and h2:
#   - an error callback for each endpoint to a rank on h3, with
#     UCS_ERR_ENDPOINT_TIMEOUT, not before PEER_TIMEOUT has passed since
#     the cut and within PEER_TIMEOUT + FAILOVER_TIMEOUT +
#     SRM_PEER_FAILURE_SLACK of it (the detection times are printed);
#   - the failed endpoints close (UCP_EP_CLOSE_FLAG_FORCE) without hanging;
#   - no error and no failed send between h1 and h2, whose messages keep
#     flowing: SRM_PEER_FAILURE_MIN_AFTER from each peer after the last
#     error (how many came between the cut and the error is printed);
#     nothing lost or corrupt;
# and for the agents of h1 and h2: they still answer, `srmctl status`
# shows h3's node "state invalid" and the other's "state normal", and
# their logs say "unreachable for PEER_TIMEOUT". The ranks of h3 (cut off
# from mpirun, they report only in files) are shown, not checked.
#
# The ranks exit with _exit (MPI_Finalize would wait for h3); mpirun,
# which still waits for the daemon on h3, is stopped by the script (and
# may crash in PMIx_Finalize on the way out: Open MPI's business), and
# no process but the agents may be left in the hosts.
#
# Settings (environment): SRM_PEER_FAILURE_PPN (2), SRM_PEER_FAILURE_
# TIMEOUT (PEER_TIMEOUT in seconds, 2), SRM_PEER_FAILURE_SLACK (seconds, 2),
# SRM_PEER_FAILURE_MIN_AFTER (500), SRM_MPI_TIMEOUT (120).
#
. "$(dirname "$0")/lib.sh"

srm_netns_require --mpi mpicc mpirun

PPN=${SRM_PEER_FAILURE_PPN:-2}
PEER_TIMEOUT=${SRM_PEER_FAILURE_TIMEOUT:-2}
FAILOVER_MS=300
SLACK=${SRM_PEER_FAILURE_SLACK:-2}
MIN_AFTER=${SRM_PEER_FAILURE_MIN_AFTER:-500}
MPI_TIMEOUT=${SRM_MPI_TIMEOUT:-120}
PORT=7077   # every agent listens on it (one port space per host)
LIMIT_MS=$(( PEER_TIMEOUT * 1000 + FAILOVER_MS + SLACK * 1000 ))
NP=$(( 3 * PPN ))

ucp_libs=$(pkg-config --libs ucx 2>/dev/null) || ucp_libs="-lucp -lucs"
bin=$SRM_LOG/srm_peer_failure
# shellcheck disable=SC2086
srm_mpicc "$SRM_SRCDIR/test/mpi/srm_peer_failure.c" "$bin" $ucp_libs

srm_netns_up 3 "pf$$"
HOSTS=("${SRM_HOSTS[@]}")
H1=${HOSTS[0]} H2=${HOSTS[1]} H3=${HOSTS[2]}
srm_pass "cluster $SRM_NETNS_PREFIX up: ${HOSTS[*]}"

srm_netns_start_agents "$SRM_LOG/srmd.%h.log" UCX_SRM_TCP_PORT=$PORT \
    UCX_SRM_PEER_TIMEOUT="${PEER_TIMEOUT}s" \
    UCX_SRM_FAILOVER_TIMEOUT="${FAILOVER_MS}ms" || srm_done
srm_log "agents: $(srm_netns_agent_pids)"

results=$SRM_LOG/results
cut_file=$SRM_LOG/cut_time
rm -rf "$results" "$cut_file"
mkdir -p "$results"
out=$SRM_LOG/srm_peer_failure.log
srm_log ""
srm_log "--- 3 hosts x $PPN ranks, UCP over UCX_TLS=srm (peer error mode)," \
        "then $H3 is cut off"
srm_netns_mpirun_cmd "$SRM_NETNS_HOST_LIST" "$PPN" "$MPI_TIMEOUT" srm
"${SRM_MPIRUN[@]}" --mca pml ob1 --mca btl self,vader,tcp -- \
    "$bin" -d "$H3" -c "$cut_file" -o "$results" -m "$MIN_AFTER" \
    -t $(( PEER_TIMEOUT + 20 )) >"$out" 2>&1 &
mpi_pid=$!
srm_track "$mpi_pid"

# stop_job: end netns-mpirun (it then kills what is left of the job, by
# PID, in every host); mpirun itself may take seconds to give up on h3.
stop_job() {
    local t=$EPOCHREALTIME

    if srm_wait_pid "$mpi_pid" 1; then
        srm_log "    the job ended by itself (exit $SRM_WAIT_RC)"
    else
        srm_kill_pid "$mpi_pid" 20
        srm_log "    job stopped in $(awk -v a="$t" -v b="$EPOCHREALTIME" \
                'BEGIN { printf "%.1f", b - a }') s"
    fi
    srm_untrack "$mpi_pid"
}

# Messages must flow between every pair before the cut.
deadline=$(( $(srm_now_us) + 60 * 1000000 ))
while [ "$(grep -c '^ready ' "$out" 2>/dev/null)" -lt "$NP" ]; do
    if ! srm_alive "$mpi_pid" || [ "$(srm_now_us)" -ge "$deadline" ]; then
        srm_fail "the ranks did not all start exchanging messages" \
                 "($(grep -c '^ready ' "$out") of $NP ready)"
        srm_show_log "$out" 30
        stop_job
        srm_done
    fi
    sleep 0.2
done
srm_pass "all $NP ranks exchange messages with every other"
sleep 1

# The cut, for good: h3's side of the link goes down; its peers hear
# nothing more (no reset, no refusal). `ip -n` rather than netns-cluster
# exec: one quick command, so that the time before it is the cut's.
t0=$EPOCHREALTIME
nice -n -10 ip -n "$H3" link set eth0 down
t1=$EPOCHREALTIME
echo "$t0" >"$cut_file.tmp" && mv "$cut_file.tmp" "$cut_file"
srm_log "    $H3: eth0 down at $t0 (the command took" \
        "$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.0f", (b - a) * 1e3 }') ms)"

# Every rank writes its result file (those of h3 as well: they lose their
# peers on h1 and h2 and keep each other).
deadline=$(( $(srm_now_us) + (PEER_TIMEOUT + 30) * 1000000 ))
while [ "$(find "$results" -name 'result.*' ! -name '*.tmp' | wc -l)" -lt "$NP" ]; do
    [ "$(srm_now_us)" -ge "$deadline" ] && break
    srm_alive "$mpi_pid" || break
    sleep 0.2
done
t_results=$EPOCHREALTIME
srm_log "    results after $(awk -v a="$t0" -v b="$t_results" \
        'BEGIN { printf "%.1f", b - a }') s"

# field LINE KEY [N]: the N-th (1) word after KEY in a result line
field() {
    awk -v k="$2" -v n="${3:-1}" '{
        for (i = 1; i < NF; i++) if ($i == k) { print $(i + n); exit } }' \
        <<<"$1"
}

survivors=0 checked=0
for r in $(seq 0 $(( NP - 1 ))); do
    f=$results/result.$r
    if [ ! -r "$f" ]; then
        srm_fail "rank $r wrote no result (see $out)"
        continue
    fi
    line=$(cat "$f")
    host=$(field "$line" host)
    srm_log "    ${line#result }"
    if [ "$host" = "$H3" ]; then
        continue   # cut off itself: shown, not checked
    fi
    survivors=$((survivors + 1))
    dead=$(field "$line" dead_eps) errors=$(field "$line" errors)
    dmin=$(field "$line" detect_ms 1) dmax=$(field "$line" detect_ms 2)
    bad=""
    [ "$(field "$line" state)" = complete ] ||
        bad="$bad; did not complete ($(field "$line" state))"
    [ "$dead" = "$PPN" ] || bad="$bad; $dead endpoints to $H3, not $PPN"
    [ "$errors" = "$dead" ] ||
        bad="$bad; error callbacks for only $errors of $dead endpoints to $H3"
    [ "$(field "$line" status)" = Endpoint_timeout ] ||
        bad="$bad; status $(field "$line" status), not Endpoint_timeout"
    if [ "$errors" -gt 0 ] && [ "$dmin" -lt $(( PEER_TIMEOUT * 1000 )) ]; then
        bad="$bad; an error came $dmin ms after the cut, before PEER_TIMEOUT"
    fi
    if [ "$errors" = "$dead" ] && [ "$dmax" -gt "$LIMIT_MS" ]; then
        bad="$bad; detection took $dmax ms (limit $LIMIT_MS)"
    fi
    [ "$(field "$line" closed)" = "$errors" ] ||
        bad="$bad; only $(field "$line" closed) failed endpoints closed"
    [ "$(field "$line" live_errors)" = 0 ] ||
        bad="$bad; $(field "$line" live_errors) errors on endpoints to $H1/$H2"
    [ "$(field "$line" send_errors)" = 0 ] ||
        bad="$bad; $(field "$line" send_errors) failed sends to $H1/$H2"
    [ "$errors" != "$dead" ] || [ "$(field "$line" after_min)" -ge "$MIN_AFTER" ] ||
        bad="$bad; only $(field "$line" after_min) messages from a live peer after the error"
    [ "$(field "$line" gaps)" = 0 ] && [ "$(field "$line" corrupt)" = 0 ] ||
        bad="$bad; gaps $(field "$line" gaps), corrupt $(field "$line" corrupt)"
    if [ -z "$bad" ]; then
        checked=$((checked + 1))
        srm_pass "rank $r ($host): $errors endpoints to $H3 failed after" \
                 "$dmin-$dmax ms (limit $LIMIT_MS); $(field "$line" during_min)+" \
                 "messages from each live peer until then," \
                 "$(field "$line" after_min)+ after"
    else
        srm_fail "rank $r ($host)${bad}"
    fi
done
if [ "$survivors" -ne $(( 2 * PPN )) ]; then
    srm_fail "results of $survivors ranks on $H1 and $H2, not $(( 2 * PPN ))"
    srm_show_log "$out" 30
fi

# The agents of h1 and h2: h3 invalid, each other normal, still answering.
# state ADDRESS: the state of the node at ADDRESS in $status_json
state() {
    srm_json_get ".nodes[] | select(.address == \"$1\") | .state" \
        <<<"$status_json"
}
for h in "$H1" "$H2"; do
    log=$SRM_LOG/srmd.$h.log
    srm_netns_agent_answers "$h" "$log" || { srm_fail "srmd of $h died"; continue; }
    status=$(srm_netns_status "$h" 2>&1)
    printf '%s\n' "$status" >"$SRM_LOG/status.$h.txt"
    status_json=$(srm_netns_ctl "$h" status --json 2>/dev/null)
    other=$H2 other_ip=10.77.0.2
    [ "$h" = "$H2" ] && other=$H1 other_ip=10.77.0.1
    s3=$(state "10.77.0.3:$PORT")
    so=$(state "$other_ip:$PORT")
    if [ "$s3" = invalid ] && [ "$so" = normal ]; then
        srm_pass "srmd of $h answers: $H3 state invalid, $other state normal"
    else
        srm_fail "srmd of $h: $H3 state '$s3', $other state '$so'" \
                 "(want invalid and normal)"
        srm_log "$status" | grep '^node' | sed 's/^/    | /'
    fi
    if grep -q 'is invalid: unreachable for PEER_TIMEOUT' "$log"; then
        srm_log "    $h: $(grep -m1 'is invalid: unreachable' "$log")"
    else
        srm_fail "the log of srmd in $h does not say that $H3 became invalid"
        srm_show_log "$log" 10
    fi
done

# The job: mpirun still waits for h3's daemon, stop it. Then nothing but
# the agents may be left in the hosts.
stop_job
left=""
for h in "${HOSTS[@]}"; do
    for p in $(ip netns pids "$h" 2>/dev/null); do
        [ "$p" = "${SRM_NETNS_AGENT_PID[$h]}" ] ||
            left="$left $h:$p($(tr '\0' ' ' <"/proc/$p/cmdline" 2>/dev/null | cut -c1-40))"
    done
done
if [ -z "$left" ]; then
    srm_pass "no process of the job left in any host"
else
    srm_fail "processes left:$left"
fi
srm_done
