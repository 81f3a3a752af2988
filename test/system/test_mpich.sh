#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
#
# test_mpich: MPICH (Debian's, built with ch4:ucx) over srm, launched by
# hydra through srm-run, which passes the module with -genv:
# 1. test/mpi/srm_mpi_check.c, 4 ranks on this node, UCX_TLS=srm,self:
#    "0 failed", exit 0, and frames through the agent;
# 2. the same with 2 simulated hosts x 2 ranks (hydra's rsh launcher is
#    contrib/netns-rsh), UCX_NET_DEVICES=eth0 (the hosts' interface, which
#    srm's device is named after): "0 failed", and each host's agent sent
#    frames to the other's.
#
# srm-test-timeout: 600
. "$(dirname "$0")/lib.sh"

hydra=$(command -v mpiexec.hydra || command -v mpiexec.mpich)
[ -n "$hydra" ] && command -v mpicc.mpich >/dev/null ||
    srm_skip "MPICH not installed (mpiexec.hydra, mpicc.mpich: packages mpich, libmpich-dev)"
[ -x "$SRM_RUN" ] || srm_skip "srm-run wrapper not found at $SRM_RUN"
MPI_TIMEOUT=${SRM_MPI_TIMEOUT:-180}

bin=$SRM_LOG/srm_mpi_check
if ! env -u LD_PRELOAD mpicc.mpich -O2 -Wall -o "$bin" \
        "$SRM_SRCDIR/test/mpi/srm_mpi_check.c" >"$SRM_LOG/mpicc.log" 2>&1; then
    srm_fail "mpicc.mpich failed"
    srm_show_log "$SRM_LOG/mpicc.log"
    srm_done
fi
srm_pass "built $bin with $(mpichversion 2>/dev/null | sed -n "s/^MPICH Version:[[:space:]]*/MPICH /p" | head -n 1)"

# run_job LABEL CMD...: CMD under a timeout, its output in LABEL.log; sets
# JOB_RC and JOB_SUMMARY (the "srm_mpi_check: N passed, M failed" line).
run_job() {
    local label=$1 pid
    shift

    srm_log "running: $*"
    timeout -k 5 "$MPI_TIMEOUT" "$@" >"$SRM_LOG/$label.log" 2>&1 &
    pid=$!
    srm_track "$pid"
    JOB_RC=0
    wait "$pid" || JOB_RC=$?
    srm_untrack "$pid"
    JOB_SUMMARY=$(grep -a '^srm_mpi_check: .* passed' "$SRM_LOG/$label.log" | tail -n 1)
}

# --- 1. one node ------------------------------------------------------------
srm_agent_start || { srm_fail "cannot start srmd"; srm_done; }
f0=$(srm_agent_frames)
run_job one-node env -u LD_PRELOAD SRM_MODULE="$SRM_MODULE" UCX_TLS=srm,self \
    UCX_SRM_AGENT=never "$SRM_RUN" "$hydra" -n 4 "$bin"
frames=$(( $(srm_agent_frames) - f0 ))
if [ "$JOB_RC" = 0 ] && [[ $JOB_SUMMARY == *" 0 failed" ]] && [ "$frames" -gt 0 ]; then
    srm_pass "srm-run $(basename "$hydra") -n 4 over srm,self: $JOB_SUMMARY; the agent moved $frames frames"
else
    srm_fail "MPICH 4 ranks on one node: exit $JOB_RC, '${JOB_SUMMARY:-no summary}', $frames frames through the agent"
    srm_show_log "$SRM_LOG/one-node.log" 12
fi
srm_agent_stop

# --- 2. two simulated hosts ------------------------------------------------------
srm_netns_require mpicc.mpich
srm_netns_up 2 mc
srm_netns_start_agents "$SRM_LOG/srmd.%h.log" UCX_SRM_DEVICES=eth0 || srm_done
h1=${SRM_HOSTS[0]} h2=${SRM_HOSTS[1]}
run_job two-hosts env SRM_MODULE="$SRM_MODULE" "$SRM_NETNS_CLUSTER" exec "$h1" \
    "$SRM_RUN" "$hydra" -launcher rsh \
    -launcher-exec "$SRM_SRCDIR/contrib/netns-rsh" -iface eth0 \
    -hosts "$h1:2,$h2:2" -n 4 -genv UCX_TLS srm,self \
    -genv UCX_NET_DEVICES eth0 -genv UCX_SRM_SOCKET "$UCX_SRM_SOCKET" \
    -genv UCX_SRM_AGENT never "$bin"
# frames each agent sent to the other node, over both channels
sent() {
    srm_netns_status_get "$1" '[.nodes[].channels[].tx_frames] | add // 0'
}
s1=$(sent "$h1") s2=$(sent "$h2")
if [ "$JOB_RC" = 0 ] && [[ $JOB_SUMMARY == *" 0 failed" ]] &&
   [ "$s1" -gt 0 ] && [ "$s2" -gt 0 ]; then
    srm_pass "MPICH 2 hosts x 2 ranks over srm,self with UCX_NET_DEVICES=eth0: $JOB_SUMMARY; $h1's agent sent $s1 frames to $h2, $h2's $s2 back"
else
    srm_fail "MPICH 2 hosts x 2 ranks: exit $JOB_RC, '${JOB_SUMMARY:-no summary}', frames between the agents $s1 / $s2"
    srm_show_log "$SRM_LOG/two-hosts.log" 15
fi
srm_done
