#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
#
# test_netns_connections: srm needs 4 TCP connections per pair of nodes (a
# small and a bulk channel between the nodes' agents, each with an active
# and a standby connection), whatever the number of ranks; UCX tcp needs
# about one per pair of ranks.
#
# 3 simulated hosts run test/mpi/srm_alltoall_hold.c (every rank exchanges
# 8 B alltoall and 64 KB point-to-point messages with every other rank, then
# keeps doing so for HOLD seconds). While it holds, established TCP
# connections inside each host's namespace to the other hosts
# (10.77.0.x, x != own) are counted by owner (ss -tnpH):
#     srmd       the agent's node channels (ranks may hold them too: the
#                socket of a direct lane, UCX_SRM_DIRECT, is the channel's)
#     ranks      the MPI processes (UCX transports)
#     runtime    Open MPI's own (orted/mpirun oob), not counted for either
#     other      anything else
# Runs: UCX_TLS=srm,self with 4 and with 8 ranks per host (fresh agents
# each time): srmd must own exactly 4 x (hosts - 1) = 8 per host in every
# sample and the ranks none; then UCX_TLS=tcp,self with 4 and 8 ranks per
# host (no agents): the ranks' count is printed side by side with srm's.
#
. "$(dirname "$0")/lib.sh"

srm_netns_require --mpi mpicc mpirun

MPI_TIMEOUT=${SRM_MPI_TIMEOUT:-300}
NHOSTS=3
HOLD=${SRM_HOLD_SECS:-10}
SAMPLES=3
WANT=$((4 * (NHOSTS - 1)))   # 2 channels x (active + standby) per remote host

bin=$SRM_LOG/srm_alltoall_hold
srm_mpicc "$SRM_SRCDIR/test/mpi/srm_alltoall_hold.c" "$bin"

# --------------------------------------------------------- the cluster --
srm_netns_up $NHOSTS "cn$$"
HOSTS=("${SRM_HOSTS[@]}")
srm_pass "cluster $SRM_NETNS_PREFIX up: ${HOSTS[*]}"

AGENT_RUN=0
agents_start() {
    AGENT_RUN=$((AGENT_RUN + 1))
    srm_netns_start_agents "$SRM_LOG/srmd.%h.$AGENT_RUN.log" || return 1
    srm_log "agents (run $AGENT_RUN): $(srm_netns_agent_pids)"
}

# count HOST IP: "srmd ranks runtime other" established connections in
# HOST's namespace whose peer is another host of the cluster.
count() {
    ip netns exec "$1" ss -tnpH state established 2>/dev/null |
    awk -v me="$2" '
        {
            peer = $4; sub(/:[0-9]+$/, "", peer)
            if (peer !~ /^10\.77\.0\.[0-9]+$/ || peer == me) next
            owner = "?"
            if (match($0, /users:\(\("[^"]*"/))
                owner = substr($0, RSTART + 9, RLENGTH - 10)
            if ($0 ~ /\("srmd",pid=/)
                owner = "srmd"  # shared with ranks: still one channel
            if (owner == "srmd") s++
            else if (owner ~ /^srm_alltoall/) r++
            else if (owner ~ /^(orted|mpirun|orterun|prted|prterun)$/) o++
            else { x++; if (!(owner in seen)) { seen[owner] = 1; names = names " " owner } }
        }
        END { printf "%d %d %d %d%s\n", s, r, o, x, (names == "" ? "" : " [" names " ]") }'
}

declare -A RES   # RES[label,host]="srmd ranks runtime other" (max over samples)
LABELS=()

# run LABEL PPN TLS: the job, sampled while it holds.
run() {
    local label=$1 ppn=$2 tls=$3 out pid i h c t0 secs rc s line
    declare -A max

    out=$SRM_LOG/$label.log
    LABELS+=("$label")
    srm_log ""
    srm_log "--- $label: $NHOSTS hosts x $ppn ranks, UCX_TLS=$tls, hold $HOLD s"
    : >"$out"
    t0=$(date +%s)
    srm_netns_mpirun_cmd "$SRM_NETNS_HOST_LIST" "$ppn" "$MPI_TIMEOUT" "$tls"
    "${SRM_MPIRUN[@]}" -- "$bin" "$HOLD" 65536 >"$out" 2>&1 &
    pid=$!
    srm_track "$pid"
    # wait until every pair has talked
    while srm_alive "$pid"; do
        grep -q 'ranks connected, holding' "$out" && break
        sleep 0.2
    done
    if grep -q 'ranks connected, holding' "$out"; then
        srm_log "    connected after $(( $(date +%s) - t0 )) s; sampling"
        for h in "${HOSTS[@]}"; do max[$h]="0 0 0 0"; done
        for s in $(seq 1 $SAMPLES); do
            line="    sample $s:"
            for i in "${!HOSTS[@]}"; do
                h=${HOSTS[$i]}
                c=$(count "$h" "10.77.0.$((i + 1))")
                line="$line  $h srmd/ranks/runtime/other=$(echo "$c" | awk '{ printf "%s/%s/%s/%s", $1, $2, $3, $4 }')"
                [ -z "$(echo "$c" | cut -s -d'[' -f2)" ] || line="$line (other:${c#*[}"
                if [ "$tls" != "${tls#srm}" ] && [ "$(echo "$c" | awk '{print $1}')" != "$WANT" ]; then
                    srm_fail "$label sample $s: srmd in $h owns $(echo "$c" | awk '{print $1}') connections to other hosts, want $WANT"
                    ip netns exec "$h" ss -tnpH state established | grep srmd | sed 's/^/      | /'
                fi
                max[$h]=$(printf '%s\n%s\n' "${max[$h]}" "$c" |
                          awk '{ for (k = 1; k <= 4; k++) if ($k > m[k]) m[k] = $k }
                               END { print m[1]+0, m[2]+0, m[3]+0, m[4]+0 }')
            done
            srm_log "$line"
            [ "$s" -lt $SAMPLES ] && sleep 1
        done
        for h in "${HOSTS[@]}"; do RES[$label,$h]=${max[$h]}; done
    else
        srm_fail "$label: the job never reported 'ranks connected'"
        for h in "${HOSTS[@]}"; do RES[$label,$h]="- - - -"; done
    fi
    rc=0
    if srm_wait_pid "$pid" "$MPI_TIMEOUT"; then
        rc=$SRM_WAIT_RC
    else
        rc=hang
        srm_kill_pid "$pid" 15
    fi
    srm_untrack "$pid"
    secs=$(( $(date +%s) - t0 ))
    line=$(grep -a 'srm_alltoall_hold: .* rounds' "$out" | tail -n 1)
    if [ "$rc" = 0 ] && printf '%s\n' "$line" | grep -q ' 0 errors$'; then
        srm_pass "$label: exit 0 ($secs s): $line"
    else
        srm_fail "$label: exit $rc ($secs s): '${line:-no summary}'"
        srm_show_log "$out" 20
    fi
}

# --- srm: fresh agents for each run ----------------------------------------
for ppn in 4 8; do
    agents_start || srm_done
    run "srm-${ppn}ppn" "$ppn" srm,self
    for i in "${!HOSTS[@]}"; do
        h=${HOSTS[$i]}
        r=$(echo "${RES[srm-${ppn}ppn,$h]}" | awk '{print $2}')
        if [ "$r" = 0 ]; then
            srm_pass "srm-${ppn}ppn: ranks in $h own no connections to other hosts"
        elif [ "$r" != "-" ]; then
            srm_fail "srm-${ppn}ppn: ranks in $h own $r connections to other hosts (want 0 with UCX_TLS=srm,self)"
        fi
    done
    srm_log "    srmctl status in ${HOSTS[0]}:"
    srm_netns_status "${HOSTS[0]}" 2>&1 | grep -E '^(wire|node)' | sed 's/^/      /'
    srm_netns_stop_agents
done

# --- UCX tcp, for comparison ----------------------------------------------
for ppn in 4 8; do
    run "tcp-${ppn}ppn" "$ppn" tcp,self
done

# --- side by side ----------------------------------------------------------
srm_log ""
srm_log "established TCP connections to other hosts, per host (max over $SAMPLES samples while the job held):"
printf -v hdr '  %-10s' RUN
for h in "${HOSTS[@]}"; do printf -v hdr '%s %24s' "$hdr" "$h(srmd/ranks/omp)"; done
srm_log "$hdr"
for l in "${LABELS[@]}"; do
    printf -v row '  %-10s' "$l"
    for h in "${HOSTS[@]}"; do
        printf -v row '%s %24s' "$row" "$(echo "${RES[$l,$h]}" | awk '{ printf "%s/%s/%s", $1, $2, $3 }')"
    done
    srm_log "$row"
done
srm_log ""
for ppn in 4 8; do
    s=$(echo "${RES[srm-${ppn}ppn,${HOSTS[0]}]}" | awk '{print $1 + $2}')
    t=$(echo "${RES[tcp-${ppn}ppn,${HOSTS[0]}]}" | awk '{print $1 + $2}')
    srm_log "  $ppn ranks/host, per host (${HOSTS[0]}): srm $s connection(s) (srmd + ranks) vs UCX tcp $t (srmd + ranks); expected srm $WANT, tcp about P^2(N-1) = $((ppn * ppn * (NHOSTS - 1)))"
done

srm_done
