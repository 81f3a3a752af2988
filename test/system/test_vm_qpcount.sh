#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
#
# test_vm_qpcount: the queue pairs of one all-to-all job shape, 3 hosts x
# 4 ranks, on soft-RoCE in the QEMU test VM (contrib/vm-rxe): srm's verbs
# wire against UCX's rc_verbs. This machine has no RDMA device; on the
# host the test builds test/mpi/srm_alltoall_hold.c, boots the VM and runs
# this same file there with --guest (srm_vm_self in lib.sh: SKIP, loudly,
# without QEMU or an image; FAIL when the VM does not boot or times out,
# SRM_VM_TIMEOUT, default 780 s).
#
# In the guest, 3 hosts qch1..qch3 with an rxe device each
# (contrib/vm-rxe/rxe-hosts) run srm_alltoall_hold, 4 ranks per host,
# 8-byte messages: each round an MPI_Alltoall and a point-to-point message
# with every other rank, so every pair of ranks, hence of hosts, talks.
# After a first round the job holds its connections, its ranks asleep but
# for MPI progress, until the QPs have been counted with `rdma resource
# show qp` (a stop file), then does one more round:
#   1. UCX_TLS=srm,self, srmd in every host on its rxe device
#      (UCX_SRM_DEVICES=rxe_<host>:1@eth0): each srmd must hold exactly
#      2 channels (small, bulk) x 2 paths x 2 remote hosts = 8 RC QPs, all
#      in state RTS, on its own device, and `srmctl status` must show those
#      8 links ready on queue pairs (with UCX_SRM_FAILOVER=y, the default,
#      every path of both channels connects at a node's first use, though
#      8-byte messages only ever take the small channel); the ranks must
#      hold no QP; srmd's registered memory (`rdma resource show mr`) must
#      be its device's one shared receive queue (320 x 8 KB) and one send
#      pool (128 x 8 KB), and the outgoing stream of each remote host's
#      small channel (sent from in place), no buffers per QP;
#   2. UCX_TLS=rc_verbs,ud_verbs,sm,self, the same job: its ranks' QPs in
#      state RTS per host and type, the most of 3 samples a second apart.
#      No exact figure is asserted (it is UCX's), only that RC joins each
#      rank to every remote rank: at least P*P*(N-1) = 32 RC QPs per host.
# Both are printed side by side, per host and type, and so is the memory
# each job registered per host. The ranks yield when
# idle (mpi_yield_when_idle 1) and the agents sleep (UCX_SRM_POLL=block):
# under TCG, 12 busy-polling ranks on 2 vCPUs starve each other.
#
# srm-test-timeout: 900
. "$(dirname "$0")/lib.sh"

BIN=$SRM_LOG/srm_alltoall_hold
if [ "${1:-}" != --guest ]; then
    # Built here: mpicc takes half a minute under TCG.
    srm_require_cmd mpicc
    srm_mpicc "$SRM_SRCDIR/test/mpi/srm_alltoall_hold.c" "$BIN"
    SRM_VM_TIMEOUT=${SRM_VM_TIMEOUT:-780} srm_vm_self 3072
fi

# ------------------------------------------------------------ the guest --
[ "${SRM_VM_GUEST:-}" = 1 ] || { srm_fail "--guest outside the VM"; srm_done; }
srm_netns_require --mpi mpirun rdma
[ -x "$BIN" ] || { srm_fail "$BIN was not built on the host"; srm_done; }
GUEST_T0=$(srm_now_us)
NHOSTS=3 PPN=4
MPI_TIMEOUT=300
SAMPLES=3
STOP=$SRM_LOG/stop
export UCX_SRM_FAILOVER_TIMEOUT=2s UCX_SRM_PEER_TIMEOUT=20s UCX_SRM_POLL=block

# secs_since T0: whole seconds of wall time since T0 (srm_now_us).
secs_since() { echo $(( ($(srm_now_us) - $1) / 1000000 )); }

srm_log "guest: $(uname -r), $(nproc) CPUs, $(awk '/MemTotal/ { print int($2 / 1024) }' /proc/meminfo) MiB"
t0=$(srm_now_us)
srm_vm_hosts_up $NHOSTS qc
HOSTS=("${SRM_HOSTS[@]}")
srm_pass "hosts ${HOSTS[*]} up with devices rxe_${HOSTS[0]}.. ($(secs_since "$t0") s)"
t0=$(srm_now_us)
for h in "${HOSTS[@]}"; do
    srm_netns_agent_start "$h" "$SRM_LOG/srmd.$h.log" \
        UCX_SRM_DEVICES="rxe_$h:1@eth0" || srm_done
done
srm_pass "srmd in every host on its rxe device ($(srm_netns_agent_pids)) ($(secs_since "$t0") s)"

# qp_sample FILE: `rdma resource show qp` into FILE; prints "OWNER DEV
# TYPE STATE N", OWNER being srmd or rank (srm_vm_qps).
qp_sample() {
    srm_vm_qps "srmd:srmd srm_alltoall*:rank" "$1"
}

# mr_sample LABEL FILE: `rdma resource show mr` into FILE; keeps the
# largest sample per owner and device in M[LABEL,OWNER,DEV] ("N BYTES").
declare -A M=()
mr_sample() {
    local who d n bytes key
    while read -r who d n bytes; do
        key=$1,$who,$d
        [ "${M[$key]#* }" -ge "$bytes" ] 2>/dev/null || M[$key]="$n $bytes"
    done < <(srm_vm_resources mr "srmd:srmd srm_alltoall*:rank" "$2")
}

# mib BYTES: BYTES in MiB, one decimal.
mib() { awk -v b="$1" 'BEGIN { printf "%.1f", b / 1048576 }'; }

# job_start LABEL CMD...: CMD (a netns-mpirun command line running
# srm_alltoall_hold on every host, PPN ranks each, 8-byte messages,
# holding until $STOP exists) in the background; waits until it holds.
# Sets JOB_PID, JOB_OUT, JOB_T0; returns 1 (after a FAIL) if it never did.
job_start() {
    local label=$1
    shift

    JOB_OUT=$SRM_LOG/$label.log
    JOB_T0=$(srm_now_us)
    rm -f "$STOP"
    srm_log "--- $label: $NHOSTS hosts x $PPN ranks, $*"
    "$@" >"$JOB_OUT" 2>&1 &
    JOB_PID=$!
    srm_track "$JOB_PID"
    while srm_alive "$JOB_PID" && ! grep -qa 'ranks connected, holding' "$JOB_OUT"; do
        sleep 0.3
    done
    if grep -qa 'ranks connected, holding' "$JOB_OUT"; then
        srm_log "    $label: all ranks connected after $(secs_since "$JOB_T0") s"
        return 0
    fi
    srm_fail "$label: the job never reported 'ranks connected'"
    return 1
}

# job_end LABEL: let the job go (stop file), wait for it; PASS/FAIL on its
# exit status and summary.
job_end() {
    local label=$1 rc line

    srm_log "    $label: counted; stop file after $(secs_since "$JOB_T0") s"
    touch "$STOP"
    if srm_wait_pid "$JOB_PID" "$MPI_TIMEOUT"; then
        rc=$SRM_WAIT_RC
    else
        rc=hang
        srm_kill_pid "$JOB_PID" 10
    fi
    srm_untrack "$JOB_PID"
    line=$(grep -a 'srm_alltoall_hold: .* rounds' "$JOB_OUT" | tail -n 1)
    if [ "$rc" = 0 ] && printf '%s\n' "$line" | grep -q ' 0 errors$'; then
        srm_pass "$label: $NHOSTS hosts x $PPN ranks ($(secs_since "$JOB_T0") s): $line"
    else
        srm_fail "$label: exit $rc, '${line:-no summary}' ($(secs_since "$JOB_T0") s)"
        srm_show_log "$JOB_OUT" 25
    fi
}

# job program arguments: hold at most MPI_TIMEOUT s, 8-byte messages.
JOB_ARGS=("$BIN" "$MPI_TIMEOUT" 8 "$STOP")
declare -A Q=()   # Q[label,owner,dev,type,state] = count in the kept sample

# --- 1. srm ------------------------------------------------------------------
srm_netns_mpirun_cmd "$SRM_NETNS_HOST_LIST" $PPN "$MPI_TIMEOUT" srm,self
job_start srm "${SRM_MPIRUN[@]}" --yield 1 -- "${JOB_ARGS[@]}"
# The standby paths connect just after the first frames: sample until
# every srmd holds its 8 RTS queue pairs (or SAMPLES+2 tries), keep the
# last sample.
want=$(( 2 * 2 * (NHOSTS - 1) ))
for s in $(seq $((SAMPLES + 2))); do
    for k in "${!Q[@]}"; do [[ $k == srm,* ]] && unset "Q[$k]"; done
    while read -r who d ty st n; do
        Q[srm,$who,$d,$ty,$st]=$n
    done < <(qp_sample "$SRM_LOG/srm.qps.txt")
    done_all=1
    for h in "${HOSTS[@]}"; do
        [ "${Q[srm,srmd,rxe_$h,RC,RTS]:-0}" = "$want" ] || done_all=0
    done
    [ "$done_all" = 1 ] && break
    sleep 1
done
mr_sample srm "$SRM_LOG/srm.mrs.txt"
for h in "${HOSTS[@]}"; do
    srm_netns_status "$h" >"$SRM_LOG/srm.status.$h.txt" 2>&1
    srm_netns_ctl "$h" status --json >"$SRM_LOG/srm.status.$h.json" 2>/dev/null
done
job_end srm

for h in "${HOSTS[@]}"; do
    d=rxe_$h
    rts=${Q[srm,srmd,$d,RC,RTS]:-0}
    # every QP of srmd on that device, whatever its type and state
    all=0
    for k in "${!Q[@]}"; do
        IFS=, read -r l who kd ty st <<<"$k"
        [ "$l,$who,$kd" = "srm,srmd,$d" ] && all=$((all + Q[$k]))
    done
    if [ "$rts" = "$want" ] && [ "$all" = "$want" ]; then
        srm_pass "srmd of $h: $rts RC QPs in RTS on $d (2 channels x 2 paths x $((NHOSTS - 1)) remote hosts), no other"
    else
        srm_fail "srmd of $h: $rts RC QPs in RTS on $d, $all in all there (want $want and $want); see $SRM_LOG/srm.qps.txt"
    fi
    # node lines (one per remote node and channel) with both paths ready
    # and the active one on a queue pair
    json=$SRM_LOG/srm.status.$h.json
    ready=$(srm_json_get '[.nodes[].channels[] |
        select(([.paths[] | select(.state == "ready")] | length) == 2 and
               .wire == "verbs" and .wire_stats.qp != null)] | length' <"$json")
    links=$(srm_json_get '[.nodes[].channels[] | [.paths[] |
        "\(.path):\(.state)\(if .active then "*" else "" end)"] | join(",")] |
        join(" ")' <"$json")
    if [ "$ready" = $((2 * (NHOSTS - 1))) ]; then
        srm_pass "  srmctl status of $h: $((NHOSTS - 1)) nodes x small, bulk, both paths ready on queue pairs ($links)"
    else
        srm_fail "  srmctl status of $h: $ready node channels with both paths ready (want $((2 * (NHOSTS - 1)))): $links"
        sed 's/^/    | /' "$SRM_LOG/srm.status.$h.txt"
    fi
    # Registered: the device's shared receive queue (320 buffers of 8 KB)
    # and its send pool (128 of 8 KB), once, whatever the number of QPs;
    # and the outgoing stream of each channel that carried frames, which
    # the QPs send from in place (UCX_SRM_VERBS_IN_PLACE): 8-byte messages
    # take the small channel of each remote host, never the bulk one, and
    # are copied into it, so no rank's TX ring is registered
    # (RING_SEND_MIN). Nothing per QP, nothing per rank.
    reg=${M[srm,srmd,$d]:-0 0}
    read -r streams stream_kb rings rings_kb < <(srm_json_get '.wire.registered |
        "\(.streams) \(.stream_bytes / 1024 | floor) \(.tx_rings) \(.tx_ring_bytes / 1024 | floor)"' \
        <"$json")
    want_reg=$(( (320 + 128) * 8192 + streams * 2 * stream_kb * 1024 ))
    if [ "$streams" = $((NHOSTS - 1)) ] && [ "$rings/$rings_kb" = 0/0 ] &&
       [ "$reg" = "$((2 + streams)) $want_reg" ]; then
        srm_pass "  srmd of $h registered $(mib "${reg#* }") MiB in $((2 + streams)) regions for its $want QPs: one shared receive queue (2.5 MiB), one send pool (1 MiB), $streams small channels' streams of $stream_kb KB (mapped twice), no TX ring"
    else
        srm_fail "  srmd of $h registered ${reg#* } bytes in ${reg% *} regions, want $want_reg in $((2 + streams)) (320 receive and 128 send buffers shared by all QPs, $streams streams of $stream_kb KB mapped twice, want $((NHOSTS - 1)) streams; $rings TX rings of $rings_kb KB in all, want none); see $SRM_LOG/srm.mrs.txt"
    fi
    buffers=$(srm_json_get ".wire.paths[] | select(.device == \"rxe_$h:1\") |
        \"\(.receives.slots) x \(.receives.slot_size), \(.sends.slots) x \(.sends.slot_size)\"" \
        <"$json")
    [ "$buffers" = "320 x 8192, 128 x 8192" ] ||
        srm_fail "  srmctl status of $h: shared receive queue and send pool '$buffers' (want 320 x 8192, 128 x 8192)"
done
srm_log "  what each channel carried (tx/rx frames/bytes, per host and remote node):"
for h in "${HOSTS[@]}"; do
    srm_json_get ".nodes[] | .index as \$n | .channels[] |
        \"    $h -> node \\(\$n) \\(.kind) tx \\(.tx_frames)/\\(.tx_bytes) rx \\(.rx_frames)/\\(.rx_bytes)\"" \
        <"$SRM_LOG/srm.status.$h.json"
done
# No QP of the ranks, and none of srmd on a device that is not a host's.
rank_qps=0 stray=""
for k in "${!Q[@]}"; do
    IFS=, read -r l who kd ty st <<<"$k"
    [ "$l,$who" = srm,rank ] && rank_qps=$((rank_qps + Q[$k]))
    if [ "$l,$who" = srm,srmd ]; then
        case " ${HOSTS[*]/#/rxe_} " in *" $kd "*) ;; *) stray="$stray $kd" ;; esac
    fi
done
if [ "$rank_qps" = 0 ] && [ -z "$stray" ]; then
    srm_pass "the srm job's ranks hold no QP"
else
    srm_fail "the srm job's ranks hold $rank_qps QPs${stray:+; srmd QPs on unknown devices:$stray}"
fi

# --- 2. rc_verbs ---------------------------------------------------------------
RC_TLS=rc_verbs,ud_verbs,sm,self
# UCX_LOG_LEVEL=info: the ranks log the lanes of their endpoints (ep_cfg).
if job_start rc env UCX_TLS=$RC_TLS UCX_UD_VERBS_ETH_DGID_CHECK=n \
        UCX_LOG_LEVEL=info "$SRM_NETNS_MPIRUN" --hosts "$SRM_NETNS_HOST_LIST" \
        --ppn $PPN --timeout "$MPI_TIMEOUT" --yield 1 -v -x UCX_TLS \
        -x UCX_UD_VERBS_ETH_DGID_CHECK -x UCX_WARN_UNUSED_ENV_VARS \
        -x UCX_LOG_LEVEL -- "$SRM_VM_RXE_HOSTS" dev-exec "${JOB_ARGS[@]}"; then
    # max over SAMPLES samples a second apart
    for s in $(seq $SAMPLES); do
        while read -r who d ty st n; do
            [ "$who" = rank ] || continue
            [ "${Q[rc,rank,$d,$ty,$st]:-0}" -ge "$n" ] || Q[rc,rank,$d,$ty,$st]=$n
        done < <(qp_sample "$SRM_LOG/rc.qps.$s.txt")
        mr_sample rc "$SRM_LOG/rc.mrs.$s.txt"
        [ "$s" = $SAMPLES ] || sleep 1
    done
fi
job_end rc
srm_log "  rc: the lanes of the ranks' endpoint configurations (UCX info log, times logged):"
grep -a -o 'ep_cfg\[[0-9]*\].*' "$JOB_OUT" | sed 's/^[^:]*: //' | sort | uniq -c |
    sed 's/^/      /'
min_rc=$(( PPN * PPN * (NHOSTS - 1) ))
for h in "${HOSTS[@]}"; do
    n=${Q[rc,rank,rxe_$h,RC,RTS]:-0}
    if [ "$n" -ge "$min_rc" ]; then
        srm_pass "rc_verbs ranks of $h: $n RC QPs in RTS (at least $min_rc: one per pair of a local and a remote rank)"
    else
        srm_fail "rc_verbs ranks of $h: $n RC QPs in RTS, fewer than $min_rc (the job did not connect every pair on RC?)"
    fi
done

# --- the table ------------------------------------------------------------------
srm_log ""
srm_log "QPs in state RTS, $NHOSTS hosts x $PPN ranks, all-to-all (srm_alltoall_hold):"
row() { printf '  %-34s %-6s' "$1" "$2"; shift 2; printf ' %10s' "$@"; printf '\n'; }
hdr=() srmrow=() rcrow=()
srm_tot=0 rc_tot=0
for h in "${HOSTS[@]}"; do
    d=rxe_$h
    hdr+=("$h RC/UD")
    a=${Q[srm,srmd,$d,RC,RTS]:-0} b=${Q[srm,srmd,$d,UD,RTS]:-0}
    srmrow+=("$a/$b")
    srm_tot=$((srm_tot + a + b))
    a=${Q[rc,rank,$d,RC,RTS]:-0} b=${Q[rc,rank,$d,UD,RTS]:-0}
    rcrow+=("$a/$b")
    rc_tot=$((rc_tot + a + b))
done
srm_log "$(row "UCX_TLS" "owner" "${hdr[@]}" "job")"
srm_log "$(row "srm,self (srm's verbs wire)" "srmd" "${srmrow[@]}" "$srm_tot")"
srm_log "$(row "$RC_TLS" "ranks" "${rcrow[@]}" "$rc_tot")"
srm_log "  srm: srmd's 2 channels x 2 paths per remote host, whatever the ranks;"
srm_log "  the srm job's ranks hold $rank_qps QPs."
srm_log "  rc_verbs, the most of $SAMPLES samples: one RC QP per endpoint would be"
srm_log "  $PPN ranks x $((PPN * NHOSTS)) endpoints = $((PPN * PPN * NHOSTS)) per host (the same-host and self endpoints"
srm_log "  keep an rc_verbs lane beside sm and self, see the lanes above), and one"
srm_log "  UD QP per rank (ud_verbs)."
srm_log "QP count, $NHOSTS hosts x $PPN ranks: srm ${srmrow[*]} vs rc_verbs ${rcrow[*]} RC/UD per host; $srm_tot vs $rc_tot in the job"
srm_log ""
srm_log "Memory registered per host (rdma resource show mr; rc_verbs: the most of $SAMPLES samples):"
srm_reg=() rc_reg=()
for h in "${HOSTS[@]}"; do
    a=${M[srm,srmd,rxe_$h]:-0 0} b=${M[srm,rank,rxe_$h]:-0 0} c=${M[rc,rank,rxe_$h]:-0 0}
    srm_reg+=("$(mib $(( ${a#* } + ${b#* } )))")
    rc_reg+=("$(mib "${c#* }")")
    srm_log "  $h: srm: srmd $(mib "${a#* }") MiB in ${a% *} regions, ranks $(mib "${b#* }") MiB in ${b% *}; rc_verbs: ranks $(mib "${c#* }") MiB in ${c% *} regions"
done
srm_log "Registered MiB per host, $NHOSTS hosts x $PPN ranks: srm ${srm_reg[*]} vs rc_verbs ${rc_reg[*]}"
srm_log ""
srm_log "timings: guest part $(secs_since "$GUEST_T0") s"
srm_done
