#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
#
# test_agent_kill: the agent dies under load.
#  1. private srmd; a long srm tag_bw pair (64 KiB messages, far more
#     iterations than it can finish) runs until frames flow;
#  2. SIGKILL the agent; both perftest processes must end, with an error,
#     within KILL_GRACE (20) seconds: no hang. Processes that hang are
#     shown (state, stack) and killed by PID, and the test fails;
#  3. a new srmd on the same socket name; a short tag_lat pair must pass.
#
. "$(dirname "$0")/lib.sh"

srm_require_cmd ucx_perftest timeout

KILL_GRACE=${SRM_KILL_GRACE:-20}
export UCX_TLS=srm UCX_SRM_AGENT=never

srm_agent_start || { srm_fail "cannot start srmd"; srm_done; }
first_agent=$SRM_AGENT_PID

# --- 1. load ------------------------------------------------------------------
srm_perftest_start load 600 -t tag_bw -s 65536 -n 20000000 -w 10 ||
    { srm_fail "the load pair did not start"; srm_done; }
srv=$SRM_SERVER_PID cli=$SRM_CLIENT_PID
srv_log=$SRM_SERVER_LOG cli_log=$SRM_CLIENT_LOG

# Wait for traffic: the frame counter grows by a good amount.
f0=$(srm_agent_frames)
loaded=0
for i in $(seq 1 150); do
    sleep 0.1
    f=$(srm_agent_frames)
    if [ -n "$f" ] && [ -n "$f0" ] && [ "$((f - f0))" -gt 5000 ]; then
        loaded=1
        break
    fi
    srm_alive "$cli" && srm_alive "$srv" || break
done
sleep 1
srm_log "agent status under load:"
srm_agent_status | sed 's/^/  /'
if [ $loaded = 0 ] || ! srm_alive "$cli" || ! srm_alive "$srv"; then
    srm_fail "no steady srm traffic before the kill (frames '$f0' -> '$f')"
    srm_show_log "$cli_log"
    srm_show_log "$srv_log"
fi

# --- 2. kill the agent ------------------------------------------------------
srm_log "SIGKILL srmd pid $first_agent"
kill -KILL "$first_agent"
t_kill=$(srm_now_us)
srm_wait_pid "$first_agent" 5 2>/dev/null
srm_untrack "$first_agent"
SRM_AGENT_PID=""

elapsed() { awk -v a="$t_kill" -v b="$(srm_now_us)" \
                'BEGIN { printf "%.1f", (b - a) / 1e6 }'; }

srv_rc="" cli_rc="" srv_t="" cli_t=""
deadline=$(( t_kill + KILL_GRACE * 1000000 ))
while [ "$(srm_now_us)" -lt "$deadline" ]; do
    if [ -z "$srv_rc" ] && ! srm_alive "$srv"; then
        srv_rc=0; wait "$srv" || srv_rc=$?; srv_t=$(elapsed)
    fi
    if [ -z "$cli_rc" ] && ! srm_alive "$cli"; then
        cli_rc=0; wait "$cli" || cli_rc=$?; cli_t=$(elapsed)
    fi
    [ -n "$srv_rc" ] && [ -n "$cli_rc" ] && break
    sleep 0.1
done
srm_log "$(elapsed) s after the kill: server exit '${srv_rc:-running}'," \
        "client exit '${cli_rc:-running}'"

# Show where a hung process sits: state, CPU use of each thread over one
# second, stacks.
show_hung() {
    local role=$1 pid=$2 p t a b

    for p in $(srm_descendants "$pid"); do
        srm_log "    $role: pid $p $(ps -o stat=,etime=,wchan=,args= -p "$p")"
        declare -A ticks=()
        for t in /proc/"$p"/task/*; do
            ticks[$t]=$(awk '{ print $14 + $15 }' "$t/stat" 2>/dev/null)
        done
        sleep 1
        for t in /proc/"$p"/task/*; do
            a=${ticks[$t]:-0}
            b=$(awk '{ print $14 + $15 }' "$t/stat" 2>/dev/null)
            srm_log "    $role: thread ${t##*/} ($(cat "$t/comm" 2>/dev/null))" \
                    "used $(( ${b:-0} - a )) of $(getconf CLK_TCK) ticks" \
                    "in the last second"
        done
        unset ticks
        if command -v gdb >/dev/null 2>&1; then
            timeout 30 gdb -p "$p" -batch -nx -ex 'thread apply all bt 12' \
                >"$SRM_LOG/$role.gdb.txt" 2>&1
            grep -E '^(Thread|#)' "$SRM_LOG/$role.gdb.txt" | head -n 30 |
                sed 's/^/    | /'
        fi
    done
}

# First look at everything that hangs, then kill (killing one side makes
# the other one fail on its TCP connection to it).
hung=""
for role in server client; do
    if [ $role = server ]; then pid=$srv rc=$srv_rc; else pid=$cli rc=$cli_rc; fi
    if [ -z "$rc" ]; then
        hung="$hung $role:$pid"
        show_hung "$role" "$pid"
    fi
done
for h in $hung; do
    srm_kill_pid "${h#*:}" 3
done

for role in server client; do
    if [ $role = server ]; then
        rc=$srv_rc t=$srv_t log=$srv_log
    else
        rc=$cli_rc t=$cli_t log=$cli_log
    fi
    if [ -z "$rc" ]; then
        srm_fail "$role still ran ${KILL_GRACE} s after the agent was" \
                 "killed: hang (killed it by PID)"
        srm_show_log "$log" 6
    elif [ "$rc" = 0 ]; then
        srm_fail "$role exited 0 ${t} s after the agent died (it cannot" \
                 "have completed its iterations)"
        srm_show_log "$log" 6
    elif [ "$rc" = 124 ] || [ "$rc" = 137 ]; then
        srm_fail "$role was killed by its timeout (exit $rc)"
    else
        srm_pass "$role ended with exit $rc ${t} s after the agent died"
        grep -v '^#' "$log" | grep -m2 -E 'ERROR|error|srm' |
            sed 's/^/    | /'
    fi
    if grep -q 'lost the node agent' "$log"; then
        srm_pass "$role noticed: $(grep -m1 'lost the node agent' "$log" |
                                   sed 's/^.*UCX  *[A-Z]*  *//')"
    else
        srm_fail "$role never reported losing the agent"
    fi
done

# --- 3. a new agent on the same name ----------------------------------------
if srm_agent_ping 1; then
    srm_fail "something still answers on @$UCX_SRM_SOCKET after the kill"
fi
if srm_agent_start; then
    srm_pass "a new srmd serves @$UCX_SRM_SOCKET (pid $SRM_AGENT_PID)"
    if srm_perftest_pair after 60 -t tag_lat -s 8 -n 2000 -w 100; then
        srm_pass "tag_lat over the new agent ($SRM_PAIR_SECS s): $SRM_FINAL"
    else
        srm_fail "tag_lat over the new agent: client exit $SRM_CLIENT_RC," \
                 "server exit $SRM_SERVER_RC, Final: '${SRM_FINAL:-none}'"
        srm_show_log "$SRM_CLIENT_LOG"
        srm_show_log "$SRM_SERVER_LOG"
        srm_show_log "$SRM_AGENT_LOG"
    fi
    srm_agent_stop || srm_fail "the new srmd did not stop cleanly (exit $?)"
else
    srm_fail "cannot start a new srmd on @$UCX_SRM_SOCKET after the kill"
fi

srm_done
