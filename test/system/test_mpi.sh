#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
#
# test_mpi: Open MPI (pml ucx) over srm only. Builds test/mpi/srm_mpi_check.c
# into the log directory, runs it with 4 ranks on this node through
# `srm-run mpirun` with UCX_TLS=srm and a private agent, and requires
# "0 failed", exit 0 and frames through the agent. Then plain mpirun, as a
# batch script runs it: with `srm-run --print-env`'s settings exported, and
# with the module plus the shipped contrib/openmpi-mca-params.conf, srm
# carries the job; with the module alone it does not (pml ucx declines).
#
. "$(dirname "$0")/lib.sh"

srm_require_cmd mpicc mpirun timeout
[ -x "$SRM_RUN" ] || srm_skip "srm-run wrapper not found at $SRM_RUN"
src=$SRM_SRCDIR/test/mpi/srm_mpi_check.c
[ -r "$src" ] || srm_skip "$src not found"

MPI_TIMEOUT=${SRM_MPI_TIMEOUT:-300}
NP=${SRM_MPI_NP:-4}

# --- build ----------------------------------------------------------------
bin=$SRM_LOG/srm_mpi_check
if ! env -u LD_PRELOAD mpicc -O2 -Wall -o "$bin" "$src" \
        >"$SRM_LOG/mpicc.log" 2>&1; then
    srm_fail "mpicc $src failed"
    srm_show_log "$SRM_LOG/mpicc.log"
    srm_done
fi
srm_pass "built $bin"

# --- agent ----------------------------------------------------------------
srm_agent_start || { srm_fail "cannot start srmd"; srm_done; }
f0=$(srm_agent_frames)

# --- run ------------------------------------------------------------------
# 4 ranks on 2 cores: ranks yield when idle. Ranks must find our agent
# (UCX_SRM_AGENT=never: no silent auto-start of another one).
out=$SRM_LOG/mpirun.log
cmd=(env -u LD_PRELOAD SRM_MODULE="$SRM_MODULE"
     "$SRM_RUN" mpirun --allow-run-as-root -np "$NP" --bind-to none
     --oversubscribe
     --mca btl '^openib,ofi' --mca mpi_yield_when_idle 1
     -x UCX_TLS=srm -x UCX_SRM_SOCKET="$UCX_SRM_SOCKET" -x UCX_SRM_AGENT=never
     "$bin")
srm_log "running: ${cmd[*]}"
t0=$(date +%s)
"${cmd[@]}" >"$out" 2>&1 &
mpi_pid=$!
srm_track "$mpi_pid"
if srm_wait_pid "$mpi_pid" "$MPI_TIMEOUT"; then
    rc=$SRM_WAIT_RC
    srm_untrack "$mpi_pid"
else
    srm_fail "mpirun still runs after $MPI_TIMEOUT s: a hang"
    kids=$(srm_descendants "$mpi_pid")
    pids=$(echo "$mpi_pid" $kids | tr ' ' ,)
    srm_log "    processes of the job: $pids"
    ps -o pid,stat,etime,wchan:20,args -p "$pids" 2>/dev/null |
        sed 's/^/    | /'
    srm_log "    agent status:"
    srm_agent_status | sed 's/^/    | /'
    srm_kill_pid "$mpi_pid" 10
    for p in $kids; do
        srm_kill_pid "$p" 2
    done
    rc=timeout
fi
secs=$(( $(date +%s) - t0 ))
srm_log "mpirun exited $rc after $secs s; its output:"
sed 's/^/  | /' "$out"

# The ranks (the agent logs each client's pid) must be gone with mpirun;
# kill leftovers by PID.
ranks=$(sed -n 's/.*attached port .*, pid \([0-9]*\),.*/\1/p' "$SRM_AGENT_LOG" |
        sort -u)
left=""
for p in $ranks; do
    srm_wait_pid "$p" 5 || left="$left $p"
done
if [ -n "$left" ]; then
    srm_fail "ranks left after mpirun:$left"
    for p in $left; do srm_kill_pid "$p" 2; done
fi

summary=$(grep -a '^srm_mpi_check: ' "$out" | tail -n 1)
if [ "$rc" = 0 ]; then
    srm_pass "mpirun exit 0 ($secs s)"
else
    srm_fail "mpirun exit $rc ($secs s)"
fi
if printf '%s\n' "$summary" | grep -q ' 0 failed$'; then
    srm_pass "$summary"
else
    srm_fail "no '0 failed' summary (got: '${summary:-nothing}')"
fi

# --- srm carried it ---------------------------------------------------------
f1=$(srm_agent_frames)
if [ -n "$f0" ] && [ -n "$f1" ] && [ "$((f1 - f0))" -gt 0 ]; then
    srm_pass "srmd moved $((f1 - f0)) frames for the job"
else
    srm_fail "srmd frame counter did not grow (before '$f0', after '$f1')"
fi
srm_log "agent status after the job:"
srm_agent_status | sed 's/^/  /'
if grep -q 'attached port' "$SRM_AGENT_LOG"; then
    srm_pass "$(grep -c 'attached port' "$SRM_AGENT_LOG") ports attached" \
             "to the agent during the job"
fi

# --- plain mpirun, as a batch script would run it ---------------------------
# With what `srm-run --print-env` prints exported, and with the module's
# setting plus the shipped MCA parameter file; without either, Open MPI's
# pml ucx turns srm down and the job moves nothing through the agent (the
# control: it shows the two runs above it are srm's).
mca=$SRM_BUILD_DIR/share/ucx-srm/openmpi-mca-params.conf
[ -r "$mca" ] || mca=$SRM_SRCDIR/contrib/openmpi-mca-params.conf
printenv_out=$(env -u LD_PRELOAD SRM_MODULE="$SRM_MODULE" "$SRM_RUN" --print-env)
preload=$(grep '^LD_PRELOAD=\|^UCX_PLUGIN_PATH=' <<<"$printenv_out")
plain_run() {
    local label=$1 f0 rc=0
    shift
    f0=$(srm_agent_frames)
    env -u LD_PRELOAD "$@" UCX_TLS=srm,self UCX_SRM_SOCKET="$UCX_SRM_SOCKET" \
        UCX_SRM_AGENT=never timeout -k 5 "$MPI_TIMEOUT" mpirun \
        --allow-run-as-root -np "$NP" --bind-to none --oversubscribe \
        --mca btl '^openib,ofi' --mca mpi_yield_when_idle 1 "$bin" \
        >"$SRM_LOG/$label.log" 2>&1 || rc=$?
    PLAIN_FRAMES=$(( $(srm_agent_frames) - f0 ))
    PLAIN_SUMMARY=$(grep -a '^srm_mpi_check: ' "$SRM_LOG/$label.log" | tail -n 1)
    [ "$rc" = 0 ] && [[ $PLAIN_SUMMARY == *" 0 failed" ]]
}
srm_agent_start || { srm_fail "cannot restart srmd"; srm_done; }
mapfile -t env_lines <<<"$printenv_out"
if plain_run plain-print-env "${env_lines[@]}" && [ "$PLAIN_FRAMES" -gt 0 ]; then
    srm_pass "plain mpirun with srm-run --print-env's $(wc -l <<<"$printenv_out") settings exported: $PLAIN_SUMMARY, $PLAIN_FRAMES frames"
else
    srm_fail "plain mpirun with srm-run --print-env's settings: '${PLAIN_SUMMARY:-no summary}', $PLAIN_FRAMES frames"
    srm_show_log "$SRM_LOG/plain-print-env.log" 8
fi
if plain_run plain-mca-file "$preload" OMPI_MCA_mca_base_param_files="$mca" &&
   [ "$PLAIN_FRAMES" -gt 0 ]; then
    srm_pass "plain mpirun with $preload and the MCA file $mca: $PLAIN_SUMMARY, $PLAIN_FRAMES frames"
else
    srm_fail "plain mpirun with the MCA file $mca: '${PLAIN_SUMMARY:-no summary}', $PLAIN_FRAMES frames"
    srm_show_log "$SRM_LOG/plain-mca-file.log" 8
fi
if plain_run plain-control "$preload" && [ "$PLAIN_FRAMES" = 0 ]; then
    srm_pass "the control: plain mpirun with the module only runs without srm (pml ucx declines it; $PLAIN_FRAMES frames)"
else
    srm_fail "the control, plain mpirun with the module only: '${PLAIN_SUMMARY:-no summary}', $PLAIN_FRAMES frames (want a pass with 0: else the two checks above prove nothing)"
fi

srm_agent_stop || srm_fail "srmd did not stop cleanly (exit $?)"
srm_done
