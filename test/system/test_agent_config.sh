#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
#
# test_agent_config: how srmd ends when it cannot serve, which is what UCX's
# auto-start and the service read (exit status, and the line on stderr):
#  - a setting out of range (UCX_SRM_QUANTUM below 64), of a wrong kind
#    (UCX_SRM_POLL=sometimes, UCX_SRM_SPIN_TIME=fast: naming the setting,
#    the value and what it takes) or a UCX_SRM_* name no srm table has
#    (UCX_SRM_POLLL): exit 1 at once, naming it (with a quantum of 32
#    srmd used to start anyway and then never delivered a frame; a wrong
#    value was "invalid UCX_SRM_* setting", naming none);
#  - its TCP port for other agents taken (by another agent): exit 1, naming
#    the address (it used to exit 0, as if another agent served the name);
#  - its socket name served by an agent of ours already: exit 0, saying so.
#
# srm-test-timeout: 60
. "$(dirname "$0")/lib.sh"

srm_require_cmd timeout

# expect_exit LABEL RC PATTERN VAR=VALUE... : srmd on the test's socket
# (or SOCKET) with VAR=VALUE... must end with RC within 10 s, its output
# matching PATTERN.
expect_exit() {
    local label=$1 want=$2 pattern=$3 out=$SRM_LOG/srmd.$1.out rc=0
    shift 3

    env "$@" timeout -k 2 10 "$SRM_SRMD" -s "${SOCKET:-$UCX_SRM_SOCKET}" \
        >"$out" 2>&1 || rc=$?
    if [ "$rc" = "$want" ] && grep -Eq "$pattern" "$out"; then
        srm_pass "$label: exit $rc, '$(grep -Em 1 "$pattern" "$out")'"
    else
        srm_fail "$label: exit $rc (want $want, 124: still running after 10 s)," \
                 "output matching '$pattern' wanted"
        srm_show_log "$out" 5
    fi
}

expect_exit quantum-32 1 'UCX_SRM_QUANTUM must be at least 64' \
    UCX_SRM_QUANTUM=32 UCX_SRM_DEVICES=none
expect_exit poll-sometimes 1 "UCX_SRM_POLL='sometimes' is not a valid value \(it takes \[auto" \
    UCX_SRM_POLL=sometimes UCX_SRM_DEVICES=none
expect_exit spin-fast 1 "UCX_SRM_SPIN_TIME='fast' is not a valid value" \
    UCX_SRM_SPIN_TIME=fast UCX_SRM_DEVICES=none
expect_exit unknown-name 1 'UCX_SRM_POLLL is not a setting of srm' \
    UCX_SRM_POLLL=spin UCX_SRM_DEVICES=none

# Our own agent, serving the test's socket and listening on loopback.
UCX_SRM_DEVICES=lo srm_agent_start -q || srm_done
addr=$(srm_agent_status_get '.wire.paths[0].address')
port=${addr##*:}
if [ -n "$port" ] && [ "$port" != "$addr" ]; then
    SOCKET=$UCX_SRM_SOCKET-2 expect_exit port-taken 1 \
        "cannot listen for other agents on 127\\.0\\.0\\.1:$port" \
        UCX_SRM_DEVICES=lo UCX_SRM_TCP_PORT="$port"
else
    srm_fail "the agent does not say where it listens: '$addr'"
fi
expect_exit name-served 0 'already serves' UCX_SRM_DEVICES=none
srm_agent_stop || srm_fail "the first agent did not stop cleanly"
srm_done
