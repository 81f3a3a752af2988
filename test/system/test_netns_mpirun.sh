#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
#
# test_netns_mpirun: how contrib/netns-mpirun ends a job (it waits for
# mpirun instead of polling it, with one watchdog process for --timeout):
#   1. a job whose rank fails: mpirun's non-zero status is passed through;
#   2. a job past --timeout 2: exit 124, and none of its processes is left
#      in the hosts (found by their NETNS_MPIRUN_JOB);
#   3. netns-mpirun sent TERM as soon as a process of the job shows (often
#      netns-mpirun itself, still launching mpirun and its watchdog): exit
#      143, nothing of the job left;
#   4. a job that succeeds: exit 0, and its watchdog is gone with it.
# 2 and 3 run "sleep" as the ranks, each with an argument of its own, so
# that leftovers (ranks, orted, mpirun, the wrappers: every command line
# ending in it) are told from anything else on the machine.
#
# srm-test-timeout: 120
. "$(dirname "$0")/lib.sh"

srm_netns_require --mpi mpirun
srm_netns_up 2 "nm$$"

# leftovers TAG: PIDs of processes whose command line ends in TAG.
leftovers() { pgrep -f -- "$1\$" | tr '\n' ' '; }

# job OUTFILE ARGS...: netns-mpirun on the cluster, 1 rank per host.
job() {
    local out=$1
    shift
    "$SRM_NETNS_MPIRUN" --prefix "$SRM_NETNS_PREFIX" --ppn 1 "$@" >"$out" 2>&1
}

# 1. a failing rank
rc=0
job "$SRM_LOG/false.log" --timeout 60 -- /bin/false || rc=$?
if [ "$rc" != 0 ] && [ "$rc" != 124 ]; then
    srm_pass "a failing rank: exit $rc passed through"
else
    srm_fail "a failing rank: exit $rc (wanted mpirun's failure status)"
    srm_show_log "$SRM_LOG/false.log"
fi

# 2. the timeout
tag=31.$$1
rc=0
job "$SRM_LOG/timeout.log" --timeout 2 -- /bin/sleep "$tag" || rc=$?
left=$(leftovers "sleep $tag")
if [ "$rc" = 124 ] && [ -z "$left" ]; then
    srm_pass "a job past --timeout 2: exit 124, no process left"
else
    srm_fail "a job past --timeout 2: exit $rc (wanted 124), left: '${left}'"
    srm_show_log "$SRM_LOG/timeout.log"
fi

# 3. TERM mid-job
tag=32.$$2
"$SRM_NETNS_MPIRUN" --prefix "$SRM_NETNS_PREFIX" --ppn 1 --timeout 60 -- /bin/sleep "$tag" \
    >"$SRM_LOG/term.log" 2>&1 &
runner=$!
srm_track "$runner"
for (( i = 0; i < 200; i++ )); do
    [ -z "$(leftovers "sleep $tag")" ] || break
    sleep 0.05
done
ranks=$(leftovers "sleep $tag")
kill -TERM "$runner"
rc=0
wait "$runner" || rc=$?
srm_untrack "$runner"
left=$(leftovers "sleep $tag")
if [ -n "$ranks" ] && [ "$rc" = 143 ] && [ -z "$left" ]; then
    srm_pass "TERM mid-job (ranks $ranks): exit 143, no process left"
else
    srm_fail "TERM mid-job: ranks '${ranks}', exit $rc (wanted 143), left: '${left}'"
    srm_show_log "$SRM_LOG/term.log"
fi

# 4. success; the watchdog ("sleep TIMEOUT") ends with it
rc=0
job "$SRM_LOG/true.log" --timeout 587 -- /bin/true || rc=$?
left=$(leftovers "sleep 587")
if [ "$rc" = 0 ] && [ -z "$left" ]; then
    srm_pass "a successful job: exit 0, its watchdog gone"
else
    srm_fail "a successful job: exit $rc (wanted 0), watchdog left: '${left}'"
    srm_show_log "$SRM_LOG/true.log"
fi
srm_done
