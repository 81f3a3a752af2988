#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
#
# test_agent_cpus: where the agent runs (UCX_SRM_AGENT_CPUS, issue 30,
# item 6), as srmctl status shows it:
#  - a list outside the cpuset, or no list at all: exit 1, naming it;
#  - a list: the agent runs there;
#  - auto, started from a process bound to one core (as a rank starts its
#    agent): the agent does not stay there, it takes every allowed core;
#  - auto, with both ranks of a ucx_perftest pair bound to the last core:
#    within 3 s the agent moves to the others;
#  - POLL=auto's measure: on a core a busy loop holds, the agent finds
#    less than half a core to spare (it would not spin).
#
. "$(dirname "$0")/lib.sh"

srm_require_cmd taskset jq ucx_perftest
export UCX_SRM_DEVICES=none UCX_SRM_AGENT=never UCX_TLS=srm
cpus=$(taskset -pc $$ | sed 's/.*: //')
ncpu=$(nproc)
[ "$ncpu" -ge 2 ] || srm_skip "needs 2 cores to move the agent between (this machine has $ncpu)"
last=$((ncpu - 1))
# A CPU this machine cannot have: past the highest possible one.
possible=$(cat /sys/devices/system/cpu/possible 2>/dev/null)
outside=$(( ${possible##*[-,]} + 1 ))

# affinity PID: its CPU list as taskset prints it
affinity() { taskset -pc "$1" | sed 's/.*: //'; }

out=$SRM_LOG/outside.log
UCX_SRM_AGENT_CPUS=$outside timeout 10 "$SRM_SRMD" -s "$UCX_SRM_SOCKET-x" >"$out" 2>&1
rc=$?
if [ "$rc" = 1 ] && grep -q "UCX_SRM_AGENT_CPUS=$outside: not all within" "$out"; then
    srm_pass "a core outside the cpuset: exit 1, '$(grep -m1 -o 'UCX_SRM_AGENT_CPUS.*' "$out")'"
else
    srm_fail "AGENT_CPUS=$outside: exit $rc"; srm_show_log "$out" 3
fi
UCX_SRM_AGENT_CPUS=0-x timeout 10 "$SRM_SRMD" -s "$UCX_SRM_SOCKET-x" >"$out" 2>&1
rc=$?
if [ "$rc" = 1 ] && grep -q "UCX_SRM_AGENT_CPUS='0-x' is not" "$out"; then
    srm_pass "not a list: exit 1, naming it"
else
    srm_fail "AGENT_CPUS=0-x: exit $rc"; srm_show_log "$out" 3
fi

UCX_SRM_AGENT_CPUS=$last srm_agent_start -q || srm_done
if [ "$(affinity "$SRM_AGENT_PID")" = "$last" ] &&
   [ "$(srm_agent_status_get .cpus.current)" = "$last" ]; then
    srm_pass "AGENT_CPUS=$last: the agent runs on core $last, and status says so"
else
    srm_fail "AGENT_CPUS=$last: affinity $(affinity "$SRM_AGENT_PID"), status $(srm_agent_status_get .cpus)"
fi
# POLL=auto's measure, with a busy loop on the agent's one core.
taskset -c "$last" bash -c 'while :; do :; done' &
loop=$!
srm_track "$loop"
sleep 2
spare=$(srm_agent_status_get .cpus.spare_cores)
srm_kill_pid "$loop"
if awk -v s="$spare" 'BEGIN { exit !(s < 0.5) }'; then
    srm_pass "with a busy loop on its core the agent finds $spare cores to spare (< 0.5: POLL=auto does not spin)"
else
    srm_fail "with a busy loop on its core the agent finds $spare cores to spare"
fi
srm_agent_stop

SRM_AGENT_STARTS=$((SRM_AGENT_STARTS + 1))
taskset -c 0 "$SRM_SRMD" -s "$UCX_SRM_SOCKET" -q >"$SRM_LOG/srmd.auto.log" 2>&1 &
SRM_AGENT_PID=$!
srm_track "$SRM_AGENT_PID"
for _ in $(seq 50); do srm_agent_ping 1 && break; sleep 0.1; done
if [ "$(affinity "$SRM_AGENT_PID")" = "$cpus" ] &&
   [ "$(srm_agent_status_get .cpus.setting)" = auto ]; then
    srm_pass "auto: started from a process bound to core 0, the agent runs on $cpus"
else
    srm_fail "auto: started on core 0, the agent runs on $(affinity "$SRM_AGENT_PID") (allowed $cpus)"
fi

SRM_SERVER_ENV="taskset -c $last" SRM_CLIENT_ENV="taskset -c $last" \
    srm_perftest_start bound 120 -t tag_lat -n 100000000 -s 8 ||
    { srm_fail "cannot start the bound ucx_perftest pair"; srm_done; }
moved=""
for _ in $(seq 30); do
    sleep 0.1
    now=$(affinity "$SRM_AGENT_PID")
    case ",$now," in *",$last,"*|*"-$last,"*) ;; *) moved=$now; break ;; esac
done
bound=$(srm_agent_status_get .cpus.ranks_bound)
if [ -n "$moved" ] && [ "$bound" = 2 ]; then
    srm_pass "auto: with both ranks bound to core $last the agent moved to $moved ($bound ranks bound)"
else
    srm_fail "auto: with both ranks bound to core $last the agent runs on $(affinity "$SRM_AGENT_PID") (status: $(srm_agent_status_get .cpus | tr -d '\n'))"
fi
srm_kill_pid "$SRM_CLIENT_PID"
srm_kill_pid "$SRM_SERVER_PID"
srm_done
