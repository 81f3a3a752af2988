#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
#
# test_netns_mpi: Open MPI (pml ucx) across simulated hosts over srm.
#   1. test/mpi/srm_mpi_check.c, 3 hosts x 4 ranks, UCX_TLS=srm,self
#   2. the same with UCX_TLS=srm alone (srm carries the loopback too), and
#      with UCX_TLS=srm,self under a site's UCX_NET_DEVICES pinned to the
#      hosts' interface (srm's device is named after it)
#   3. NetPIPE (NPopenmpi, package netpipe-openmpi), 2 hosts x 1 rank,
#      UCX_TLS=srm, -n 20 -p 0 -u 1 MB (small and bulk channel)
# Jobs start through contrib/netns-mpirun with the module in LD_PRELOAD of
# the ranks only (-x LD_PRELOAD=...). Every host runs its own srmd
# (started here; the ranks get UCX_SRM_AGENT=never), whose frame counters
# must grow during each job. 1 and 2 must print "0 failed" and exit 0; 3
# must exit 0.
#
. "$(dirname "$0")/lib.sh"

srm_netns_require --mpi mpicc mpirun
have_np=1
command -v NPopenmpi >/dev/null 2>&1 || have_np=0

MPI_TIMEOUT=${SRM_MPI_TIMEOUT:-300}
NHOSTS=3 PPN=4

# --- build ----------------------------------------------------------------
bin=$SRM_LOG/srm_mpi_check
srm_mpicc "$SRM_SRCDIR/test/mpi/srm_mpi_check.c" "$bin"

# --------------------------------------------------------- the cluster --
srm_netns_up $NHOSTS "mp$$"
HOSTS=("${SRM_HOSTS[@]}")
srm_pass "cluster $SRM_NETNS_PREFIX up: ${HOSTS[*]}"

frames() { srm_netns_status_get "$1" .counters.frames; }

for h in "${HOSTS[@]}"; do
    srm_netns_agent_start "$h" "$SRM_LOG/srmd.$h.log" || srm_done
    srm_pass "srmd pid ${SRM_NETNS_AGENT_PID[$h]} in $h on @$UCX_SRM_SOCKET"
done

# job LABEL HOSTS PPN TLS PROGRAM [ARGS...]: run through netns-mpirun.
# Sets JOB_RC, JOB_SECS, JOB_OUT; checks that every host's srmd moved frames.
job() {
    local label=$1 hosts=$2 ppn=$3 tls=$4 t0 h f0 f1 moved=""
    declare -A fr0
    shift 4

    JOB_OUT=$SRM_LOG/$label.log
    for h in ${hosts//,/ }; do fr0[$h]=$(frames "$h"); done
    srm_log "--- $label: hosts $hosts, $ppn rank(s) per host, UCX_TLS=$tls: $*"
    t0=$(date +%s)
    JOB_RC=0
    srm_netns_mpirun "$hosts" "$ppn" "$MPI_TIMEOUT" "$tls" "$@" \
        >"$JOB_OUT" 2>&1 || JOB_RC=$?
    JOB_SECS=$(( $(date +%s) - t0 ))
    [ "$JOB_RC" = 124 ] && srm_log "    $label: netns-mpirun timed out after $MPI_TIMEOUT s (a hang)"
    for h in ${hosts//,/ }; do
        f0=${fr0[$h]} f1=$(frames "$h")
        moved="$moved $h:+$(( ${f1:-0} - ${f0:-0} ))"
        if [ -z "$f1" ] || [ $(( f1 - ${f0:-0} )) -le 0 ]; then
            srm_fail "$label: srmd in $h moved no frames (before '$f0', after '$f1')"
            srm_netns_agent_answers "$h" "$SRM_LOG/srmd.$h.log"
        fi
    done
    srm_log "    $label: exit $JOB_RC after $JOB_SECS s; srmd frames:$moved"
}

results=()

# --- 1, 2: srm_mpi_check ---------------------------------------------------
dev=$(srm_uct_device "${HOSTS[0]}")
for tls in srm,self srm srm,self/net_devices; do
    label=check-${tls//[,\/]/-}
    if [ "${tls#*/}" = net_devices ]; then
        tls=${tls%/*}
        UCX_NET_DEVICES=$dev SRM_MPI_EXPORT=UCX_NET_DEVICES \
            job "$label" "$SRM_NETNS_HOST_LIST" $PPN "$tls" "$bin"
    else
        job "$label" "$SRM_NETNS_HOST_LIST" $PPN "$tls" "$bin"
    fi
    summary=$(grep -a '^srm_mpi_check: .* passed' "$JOB_OUT" | tail -n 1)
    grep -a -E '^(PASS|FAIL):' "$JOB_OUT" | sed 's/^/    | /'
    if [ "$JOB_RC" = 0 ] && printf '%s\n' "$summary" | grep -q ' 0 failed$'; then
        srm_pass "$label ($NHOSTS x $PPN ranks, UCX_TLS=$tls): $summary ($JOB_SECS s)"
    else
        srm_fail "$label ($NHOSTS x $PPN ranks, UCX_TLS=$tls): exit $JOB_RC, summary '${summary:-none}' ($JOB_SECS s)"
        srm_show_log "$JOB_OUT" 25
    fi
    results+=("$(printf '%-16s %3s ranks  exit %-4s %4s s  %s' "$label" $((NHOSTS * PPN)) "$JOB_RC" "$JOB_SECS" "${summary:-no summary}")")
done

# --- 3: NetPIPE ----------------------------------------------------------
if [ "$have_np" = 1 ]; then
    npout=$SRM_LOG/netpipe.out
    job netpipe "${HOSTS[0]},${HOSTS[1]}" 1 srm \
        NPopenmpi -n 20 -p 0 -u 1048576 -o "$npout"
    if [ "$JOB_RC" = 0 ]; then
        srm_pass "NPopenmpi between ${HOSTS[0]} and ${HOSTS[1]}, UCX_TLS=srm: exit 0 ($JOB_SECS s)"
    else
        srm_fail "NPopenmpi between ${HOSTS[0]} and ${HOSTS[1]}: exit $JOB_RC ($JOB_SECS s)"
        srm_show_log "$JOB_OUT" 15
    fi
    if [ -s "$npout" ]; then
        srm_log "    NetPIPE (bytes, Mbps, seconds per transfer), selected sizes:"
        awk '$1 == 1 || $1 == 8 || $1 == 1024 || $1 == 8192 || $1 == 65536 ||
             $1 == 262144 || $1 == 1048576 { printf "    | %8d B  %9.1f Mbps  %9.1f us\n", $1, $2, $3 * 1e6 }' "$npout"
    fi
    results+=("$(printf '%-16s %3s ranks  exit %-4s %4s s  %s' netpipe 2 "$JOB_RC" "$JOB_SECS" "NPopenmpi -n 20 -p 0 -u 1048576")")
fi

srm_log ""
srm_log "summary:"
for r in "${results[@]}"; do srm_log "  $r"; done
for h in "${HOSTS[@]}"; do
    srm_log "srmctl status in $h:"
    srm_netns_status "$h" 2>&1 | grep -E '^(agent|clients|counters|wire|node)' | sed 's/^/  /'
done

if [ "$have_np" = 0 ]; then
    [ "$SRM_FAILURES" -gt 0 ] && srm_done
    srm_skip "NPopenmpi not found (package netpipe-openmpi); the srm_mpi_check runs passed, the NetPIPE run did not happen"
fi
srm_done
