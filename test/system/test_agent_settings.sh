#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
#
# test_agent_settings: one agent, one configuration (issue 30, item 5).
# The agent runs with UCX_SRM_POLL=block and UCX_SRM_QUANTUM=16k;
#  - srmctl status shows them (the text's settings line, and --json's
#    settings object);
#  - a process whose environment asks for UCX_SRM_POLL=spin and
#    UCX_SRM_QUANTUM=16k (the same quantum, spelled otherwise: 16384)
#    gets exactly one warning, naming UCX_SRM_POLL and nothing else;
#  - a process that sets the agent's own values, or none, gets none;
#  - the agent's settings are those it read when it started, "auto"
#    values unresolved (UCX_SRM_MEM_LIMIT=auto stays auto).
#
. "$(dirname "$0")/lib.sh"

srm_require_cmd ucx_info
export UCX_SRM_DEVICES=none UCX_SRM_AGENT=never
UCX_SRM_POLL=block UCX_SRM_QUANTUM=16k srm_agent_start -q || srm_done

text=$(srm_agent_status)
if echo "$text" | grep -q '^settings: POLL=block .*QUANTUM=16K .*MEM_LIMIT=auto' &&
   [ "$(srm_agent_status_get .settings.UCX_SRM_POLL)" = block ] &&
   [ "$(srm_agent_status_get .settings.UCX_SRM_QUANTUM)" = 16K ]; then
    srm_pass "srmctl status shows the agent's settings: $(echo "$text" | grep '^settings:' | cut -c1-70)..."
else
    srm_fail "srmctl status does not show POLL=block, QUANTUM=16K, MEM_LIMIT=auto:"
    echo "$text" | sed -n '1,6p' | sed 's/^/    | /'
fi

# run_process NAME VAR=VALUE...: ucx_info -d with srm, its output in NAME.log
run_process() {
    local name=$1
    shift
    env "$@" ucx_info -d >"$SRM_LOG/$name.log" 2>&1
    grep -q 'Transport: srm' "$SRM_LOG/$name.log" ||
        srm_fail "$name: srm not offered (see $SRM_LOG/$name.log)"
}

run_process differ UCX_SRM_POLL=spin UCX_SRM_QUANTUM=16384
warnings=$(grep -c 'runs with other settings' "$SRM_LOG/differ.log")
line=$(grep -m1 'runs with other settings' "$SRM_LOG/differ.log")
if [ "$warnings" = 1 ] && echo "$line" | grep -q "asks for: UCX_SRM_POLL=spin (the agent's: block)\." ; then
    srm_pass "one warning, naming only the setting that differs: ${line#*srm: }"
else
    srm_fail "$warnings warning(s) for POLL=spin (QUANTUM the same): '$line'"
fi

for case in "same UCX_SRM_POLL=block UCX_SRM_QUANTUM=16k" "unset" \
            "auto UCX_SRM_MEM_LIMIT=auto"; do
    set -- $case
    name=$1
    shift
    run_process "$name" "$@"
    if grep -q 'runs with other settings' "$SRM_LOG/$name.log"; then
        srm_fail "a process with ${*:-no settings} was warned: $(grep -m1 'other settings' "$SRM_LOG/$name.log")"
    else
        srm_pass "no warning for a process with ${*:-no UCX_SRM_* settings}"
    fi
done
srm_done
