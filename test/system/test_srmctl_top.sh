#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
#
# test_srmctl_top: srmctl top, the live view (issue 30, item 7), while a
# ucx_perftest pair streams through the agent:
#  - on a terminal (a tmux pane, read with capture-pane) it refreshes a
#    screen with the agent's line, the channels and the processes, the
#    sender with a non-zero frame rate, and q (send-keys) ends it;
#  - --json prints one object with the same rates, the sender's above 0;
#  - on a pipe it prints --iterations frames one after another.
#
. "$(dirname "$0")/lib.sh"

srm_require_cmd tmux jq ucx_perftest
export UCX_SRM_DEVICES=none UCX_SRM_AGENT=never UCX_TLS=srm
srm_agent_start -q || srm_done
tmux_sock=srm-top-$$
trap 'tmux -L "$tmux_sock" kill-server 2>/dev/null; srm_cleanup' EXIT

# A stream longer than the test (stopped at its end): 8 B messages.
srm_perftest_start stream 120 -t tag_bw -n 1000000000 -s 8 ||
    { srm_fail "cannot start the ucx_perftest pair"; srm_done; }
sleep 1

tmux -L "$tmux_sock" new-session -d -s top -x 170 -y 30 \
    "env -u LD_PRELOAD '$SRM_SRMCTL' -s '$UCX_SRM_SOCKET' top -d 0.5"
screen=""
for _ in $(seq 30); do
    sleep 0.2
    screen=$(tmux -L "$tmux_sock" capture-pane -p -t top 2>/dev/null)
    echo "$screen" | grep -q '^[0-9].*ucx_perftest' && break
done
echo "$screen" > "$SRM_LOG/screen.txt"
sender=$(echo "$screen" | awk '/ucx_perftest/ && $4 > 0 {print; exit}')
if echo "$screen" | grep -q "^srmctl top: agent @$UCX_SRM_SOCKET pid" &&
   echo "$screen" | grep -q '^PORT ' && echo "$screen" | grep -q '^NODE ' &&
   [ -n "$sender" ]; then
    srm_pass "top on a terminal shows the agent, its channels and the processes; sender: $(echo $sender | cut -c1-60)"
else
    srm_fail "the top screen lacks the header, a table, or a sending process:"
    echo "$screen" | head -n 12 | sed 's/^/    | /'
fi
tmux -L "$tmux_sock" send-keys -t top q
quit=0
for _ in $(seq 30); do
    tmux -L "$tmux_sock" has-session -t top 2>/dev/null || { quit=1; break; }
    sleep 0.1
done
if [ "$quit" = 1 ]; then
    srm_pass "q ends srmctl top"
else
    srm_fail "srmctl top still runs 3 s after q"
fi

json=$(env -u LD_PRELOAD "$SRM_SRMCTL" top --json -d 0.5 2>&1)
echo "$json" > "$SRM_LOG/top.json"
if [ "$(echo "$json" | jq '[.ports[] | select(.tx_frames_per_s > 0)] | length' 2>/dev/null)" = 1 ] &&
   [ "$(echo "$json" | jq '.frames_per_s > 0 and (.ports | length) == 2' 2>/dev/null)" = true ]; then
    srm_pass "top --json: $(echo "$json" | jq -c '{frames_per_s, ports: [.ports[] | .tx_frames_per_s]}')"
else
    srm_fail "top --json: $json"
fi

frames=$(env -u LD_PRELOAD "$SRM_SRMCTL" top -i 2 -d 0.3 | grep -c '^srmctl top: agent')
if [ "$frames" = 2 ]; then
    srm_pass "on a pipe, top -i 2 prints 2 frames and ends"
else
    srm_fail "on a pipe, top -i 2 printed $frames frames"
fi
srm_kill_pid "$SRM_CLIENT_PID"
srm_kill_pid "$SRM_SERVER_PID"
srm_done
