#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
#
# test_vm_rxe: verbs over soft-RoCE (rdma_rxe) in the QEMU test VM
# (contrib/vm-rxe), between simulated hosts with an rxe device each
# (contrib/vm-rxe/rxe-hosts). This machine has no RDMA device; the VM boots
# Debian's kernel under TCG and runs this same file with --guest.
#
# On the host: SKIP, loudly, when QEMU or the VM image is missing and
# cannot be made (contrib/vm-rxe/prepare, as root: it downloads Debian's
# kernel package); FAIL when the VM does not boot, times out (SRM_VM_TIMEOUT,
# default 560 s) or the guest part fails. Prints the boot and test times.
#
# In the guest, 2 hosts h1, h2 (rxe_h1, rxe_h2):
#   1. ibv_rc_pingpong h2 -> h1 (100 iterations);
#   2. ucx_perftest with UCX_TLS=rc_verbs,ud_verbs, each host on its own
#      device: tag_lat 8 B and tag_bw 64 KB (rendezvous, RDMA READ);
#      rxe_h1's packet counters must have moved;
#   3. Open MPI, 2 hosts x 2 ranks, test/mpi/srm_alltoall_hold.c with
#      UCX_TLS=rc_verbs,ud_verbs,self and with ...,sm,self; while it holds,
#      the job's QPs are counted with `rdma resource show qp`, per device
#      and type (the numbers srm's own verbs wire is to be compared with;
#      measured: 8 RC + 2 UD per host in both runs).
# Every step must succeed.
#
. "$(dirname "$0")/lib.sh"

[ "${1:-}" = --guest ] || SRM_VM_TIMEOUT=${SRM_VM_TIMEOUT:-560} srm_vm_self 2048

# ------------------------------------------------------------ the guest --
[ "${SRM_VM_GUEST:-}" = 1 ] || { srm_fail "--guest outside the VM"; srm_done; }
srm_require_cmd ucx_perftest ibv_rc_pingpong rdma ss mpicc mpirun timeout
unset LD_PRELOAD UCX_SRM_AGENT_PATH
export UCX_WARN_UNUSED_ENV_VARS=n

GUEST_T0=$(srm_now_us)
MPIRUN=$SRM_SRCDIR/contrib/netns-mpirun
STEP_TIMEOUT=120

srm_log "guest: $(uname -r), $(nproc) CPUs, $(awk '/MemTotal/ { print int($2 / 1024) }' /proc/meminfo) MiB"
srm_vm_hosts_up 2
"$SRM_VM_RXE_HOSTS" list | sed 's/^/  /'
srm_pass "hosts h1, h2 up with devices rxe_h1, rxe_h2"

# on_host HOST CMD...: CMD in HOST with its own rdma device (rxe-hosts exec).
on_host() { "$SRM_VM_RXE_HOSTS" exec "$@"; }

# pair LABEL PORT SERVER-CMD... -- CLIENT-CMD...: the server in h1, once it
# listens on PORT the client in h2, each under timeout; output in
# $SRM_LOG/LABEL.{server,client}.log. Sets PAIR_CRC, PAIR_SRC, PAIR_SECS.
pair() {
    local label=$1 port=$2 scmd=() spid cpid t0
    shift 2
    while [ $# -gt 0 ] && [ "$1" != -- ]; do scmd+=("$1"); shift; done
    shift
    t0=$(srm_now_us)
    on_host h1 timeout -k 5 $STEP_TIMEOUT "${scmd[@]}" \
        >"$SRM_LOG/$label.server.log" 2>&1 &
    spid=$!
    srm_track "$spid"
    PAIR_CRC=noserver PAIR_SRC=
    if srm_netns_wait_listen h1 "$port" "$spid" 300; then
        on_host h2 timeout -k 5 $STEP_TIMEOUT "$@" >"$SRM_LOG/$label.client.log" 2>&1 &
        cpid=$!
        srm_track "$cpid"
        PAIR_CRC=0
        wait "$cpid" || PAIR_CRC=$?
        srm_untrack "$cpid"
    fi
    if srm_wait_pid "$spid" 20; then
        PAIR_SRC=$SRM_WAIT_RC
    else
        srm_kill_pid "$spid" 3
        PAIR_SRC=killed
    fi
    srm_untrack "$spid"
    PAIR_SECS=$(( ($(srm_now_us) - t0) / 100000 ))
    PAIR_SECS="$((PAIR_SECS / 10)).$((PAIR_SECS % 10))"
}

pair_failed() {
    srm_fail "$1: client exit $PAIR_CRC, server exit $PAIR_SRC ($PAIR_SECS s)"
    srm_show_log "$SRM_LOG/$2.server.log" 8
    srm_show_log "$SRM_LOG/$2.client.log" 8
}

# --- 1. ibv_rc_pingpong -------------------------------------------------------
# shellcheck disable=SC2016   # expanded by the shell inside each host
pp='ibv_rc_pingpong -d "$SRM_RXE_DEV" -g "$SRM_RXE_GID_INDEX" -n 100 -p 18515'
pair rc_pingpong 18515 bash -c "$pp" -- bash -c "$pp 10.77.0.1"
line=$(grep -h 'iters in' "$SRM_LOG/rc_pingpong.client.log")
if [ "$PAIR_CRC" = 0 ] && [ "$PAIR_SRC" = 0 ] && [ -n "$line" ]; then
    srm_pass "ibv_rc_pingpong h2 -> h1 ($PAIR_SECS s): $line"
else
    pair_failed "ibv_rc_pingpong h2 -> h1" rc_pingpong
fi

# --- 2. ucx_perftest over rc_verbs --------------------------------------------
export UCX_TLS=rc_verbs,ud_verbs UCX_UD_VERBS_ETH_DGID_CHECK=n

# rxe_pkts DEV: "sent received" packet counters of DEV's port 1.
rxe_pkts() {
    rdma statistic show link "$1/1" 2>/dev/null | awk '{
        for (i = 1; i < NF; i++) {
            if ($i == "sent_pkts") s = $(i + 1)
            if ($i == "rcvd_pkts") r = $(i + 1)
        } } END { print s + 0, r + 0 }'
}

port=13400
for spec in tag_lat:8:1000 tag_bw:65536:200; do
    IFS=: read -r t size iters <<<"$spec"
    label=perftest-$t-$size
    before=$(rxe_pkts rxe_h1)
    pair "$label" $port ucx_perftest -p $port -t "$t" -s "$size" -n "$iters" -- \
        ucx_perftest -p $port -t "$t" -s "$size" -n "$iters" 10.77.0.1
    after=$(rxe_pkts rxe_h1)
    final=$(grep -h '^Final:' "$SRM_LOG/$label".*.log | head -n 1 | sed 's/  */ /g')
    port=$((port + 1))
    if [ "$PAIR_CRC" = 0 ] && [ "$PAIR_SRC" = 0 ] && [ -n "$final" ]; then
        srm_pass "ucx_perftest $t $size B x $iters, rc_verbs h2 -> h1 ($PAIR_SECS s): $final"
    else
        pair_failed "ucx_perftest $t $size B" "$label"
        continue
    fi
    # shellcheck disable=SC2086
    set -- $before $after
    if [ "$3" -gt "$1" ] && [ "$4" -gt "$2" ]; then
        srm_pass "  rxe_h1 sent $(($3 - $1)) and received $(($4 - $2)) packets"
    else
        srm_fail "  rxe_h1 packet counters did not move ($before -> $after): the traffic did not take rxe_h1"
    fi
done

# --- 3. QPs of an MPI job ------------------------------------------------------
bin=$SRM_LOG/srm_alltoall_hold
srm_mpicc "$SRM_SRCDIR/test/mpi/srm_alltoall_hold.c" "$bin"
HOLD=${SRM_HOLD_SECS:-15}
SAMPLES=3

# qp_count: "DEV TYPE N" for the QPs in state RTS of the job's ranks, all
# devices. A QP is listed with the thread that made it, and UCX's async
# thread ("async") makes some, so the ranks' threads are looked up first.
# No command per QP: under TCG, with the ranks polling, every fork takes
# long enough for the job to end before a sample does. (Which RC QPs join
# two ranks of the same host cannot be told from the listing: it has no
# remote GID, and both devices hand out the same QP numbers.)
qp_count() {
    srm_vm_qps "srm_alltoall*:rank" |
        awk '$4 == "RTS" { n[$2 " " $3] += $5 } END { for (x in n) print x, n[x] }'
}

declare -A QPS=()   # QPS[label,dev,type] = max over samples
LABELS=()

# mpi_qps LABEL TLS: 2 hosts x 2 ranks of srm_alltoall_hold, QPs sampled.
mpi_qps() {
    local label=$1 tls=$2 out=$SRM_LOG/$1.log pid s line rc t0 key

    LABELS+=("$label")
    t0=$(srm_now_us)
    # UCX_LOG_LEVEL=info: the ranks log the lanes of their endpoints
    # (ep_cfg lines), which is where the QPs come from.
    env UCX_TLS="$tls" UCX_LOG_LEVEL=info "$MPIRUN" --hosts h1,h2 --ppn 2 \
        --timeout 240 -v -x UCX_TLS -x UCX_UD_VERBS_ETH_DGID_CHECK \
        -x UCX_WARN_UNUSED_ENV_VARS -x UCX_LOG_LEVEL \
        -- "$SRM_VM_RXE_HOSTS" dev-exec "$bin" "$HOLD" 65536 >"$out" 2>&1 &
    pid=$!
    srm_track "$pid"
    while srm_alive "$pid" && ! grep -q 'ranks connected, holding' "$out"; do
        sleep 0.3
    done
    if grep -q 'ranks connected, holding' "$out"; then
        rdma resource show qp >"$SRM_LOG/$label.qps.txt" 2>&1
        for s in $(seq $SAMPLES); do
            while read -r d ty n; do
                key="$label,$d,$ty"
                [ "${QPS[$key]:-0}" -ge "$n" ] || QPS[$key]=$n
            done < <(qp_count)
            [ "$s" = $SAMPLES ] || sleep 1
        done
    else
        srm_fail "$label: the job never reported 'ranks connected'"
    fi
    rc=0
    if srm_wait_pid "$pid" 240; then rc=$SRM_WAIT_RC; else rc=hang; srm_kill_pid "$pid" 10; fi
    srm_untrack "$pid"
    line=$(grep -a 'srm_alltoall_hold: .* rounds' "$out" | tail -n 1)
    if [ "$rc" = 0 ] && printf '%s\n' "$line" | grep -q ' 0 errors$'; then
        srm_pass "MPI 2 hosts x 2 ranks, UCX_TLS=$tls ($(( ($(srm_now_us) - t0) / 1000000 )) s): $line"
    else
        srm_fail "MPI 2 hosts x 2 ranks, UCX_TLS=$tls: exit $rc, '${line:-no summary}'"
        srm_show_log "$out" 20
    fi
    srm_log "  $label: endpoint lanes of the ranks (UCX info log):"
    grep -a -o 'ep_cfg\[[0-9]*\].*' "$out" | sed 's/^[^:]*: //' | sort | uniq -c |
        sed 's/^/      /'
    for d in rxe_h1 rxe_h2; do
        [ "${QPS[$label,$d,RC]:-0}" -gt 0 ] ||
            srm_fail "$label: no RC QP of the job on $d while it held"
    done
}

mpi_qps rc-self rc_verbs,ud_verbs,self
mpi_qps rc-sm rc_verbs,ud_verbs,sm,self

srm_log ""
srm_log "QPs in state RTS of the MPI job's ranks (2 hosts x 2 ranks, all-to-all;"
srm_log "max over $SAMPLES samples while it held). One RC QP per endpoint would be"
srm_log "P*P*(N-1) + P*(P-1) = 6 per host; endpoints that both sides create at"
srm_log "once can add some."
row() { printf '  %-8s %-26s %6s %6s %6s %6s\n' "$@"; }
srm_log "$(row RUN UCX_TLS h1:RC h1:UD h2:RC h2:UD)"
for l in "${LABELS[@]}"; do
    case $l in rc-self) tls=rc_verbs,ud_verbs,self ;; *) tls=rc_verbs,ud_verbs,sm,self ;; esac
    srm_log "$(row "$l" "$tls" "${QPS[$l,rxe_h1,RC]:-0}" "${QPS[$l,rxe_h1,UD]:-0}" \
        "${QPS[$l,rxe_h2,RC]:-0}" "${QPS[$l,rxe_h2,UD]:-0}")"
done
srm_log "  (the figures for srm's verbs wire to beat: its node channels per remote"
srm_log "  node and host do not grow with the ranks)"
srm_log ""
srm_log "timings: guest part $(( ($(srm_now_us) - GUEST_T0) / 1000000 )) s"
srm_done
