#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
#
# test_bench_wait_first: srm_wait_first (contrib/srm-harness.sh), with
# which the benchmarks wait for a client or an agent, whichever ends first:
#   1. a child that ended before the call is found at once, with its exit
#      status (bash 5.2's `wait -n` forgot such a child and waited on for
#      the agent: hosts.sh hung after a fast ucx_perftest client);
#   2. with every child running, it returns when the first one ends, with
#      that one's status, and leaves the others running;
#   3. with SRM_WAIT_FIRST_UNTIL (eval.sh, to show progress meanwhile), it
#      returns at that time with nothing found while every child runs on.
#
# srm-test-timeout: 30
. "$(dirname "$0")/lib.sh"

# Like an srmd: runs until it is killed (at the test's exit).
sleep 60 &
agent_like=$!
srm_track "$agent_like"

( exit 3 ) &
quick=$!
while srm_alive "$quick"; do sleep 0.05; done
sleep 0.2 # bash has noted its end by now
first='' rc=0
t0=$(date +%s%N)
srm_wait_first first "$quick" "$agent_like" || rc=$?
ms=$(( ($(date +%s%N) - t0) / 1000000 ))
if [ "$first" = "$quick" ] && [ "$rc" = 3 ] && [ "$ms" -lt 2000 ]; then
    srm_pass "a child that ended before the call: found in $ms ms, status $rc"
else
    srm_fail "a child that ended before the call: got '$first' status $rc after $ms ms (wanted $quick, 3)"
fi

( sleep 0.5; exit 5 ) &
slow=$!
first='' rc=0
srm_wait_first first "$slow" "$agent_like" || rc=$?
if [ "$first" = "$slow" ] && [ "$rc" = 5 ] && srm_alive "$agent_like"; then
    srm_pass "the first of two running children to end: status $rc, the other runs on"
else
    srm_fail "the first of two running children: got '$first' status $rc (wanted $slow, 5; agent alive: $(srm_alive "$agent_like" && echo yes || echo no))"
fi

sleep 30 &
other=$!
srm_track "$other"
first=unset rc=0
t0=$SECONDS
SRM_WAIT_FIRST_UNTIL=$(( SECONDS + 2 )) srm_wait_first first "$other" \
    "$agent_like" || rc=$?
secs=$(( SECONDS - t0 ))
if [ -z "$first" ] && [ "$rc" = 0 ] && [ "$secs" -ge 1 ] &&
   [ "$secs" -le 5 ] && srm_alive "$other" && srm_alive "$agent_like"; then
    srm_pass "SRM_WAIT_FIRST_UNTIL: back after $secs s with nothing, both children run on"
else
    srm_fail "SRM_WAIT_FIRST_UNTIL 2 s: got '$first' status $rc after $secs s (wanted nothing, 0, 1..5 s, both alive)"
fi
srm_kill_pid "$other" 1
srm_done
