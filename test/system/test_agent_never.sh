#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
#
# test_agent_never: UCX_SRM_AGENT=never on a socket where no agent listens.
#  - UCX_TLS=srm: ucx_perftest fails (both sides, no hang) and says which
#    socket it tried; no agent gets started behind our back;
#  - UCX_TLS=srm,tcp with tcp on lo only: UCP leaves srm out and a tag_lat
#    pair completes over tcp.
#
. "$(dirname "$0")/lib.sh"

srm_require_cmd ucx_perftest timeout

export UCX_SRM_AGENT=never
if srm_agent_ping 1; then
    srm_fail "an agent already answers on the fresh socket @$UCX_SRM_SOCKET"
    srm_done
fi
srm_pass "no agent on @$UCX_SRM_SOCKET"

# --- srm only: must fail, naming the socket ---------------------------------
export UCX_TLS=srm
srm_perftest_pair srm-only 60 -t tag_lat -s 8 -n 1000 -w 100
srm_log "srm-only: client exit $SRM_CLIENT_RC, server exit $SRM_SERVER_RC" \
        "($SRM_PAIR_SECS s)"
for side in client server; do
    if [ "$side" = client ]; then
        rc=$SRM_CLIENT_RC log=$SRM_CLIENT_LOG
    else
        rc=$SRM_SERVER_RC log=$SRM_SERVER_LOG
    fi
    case "$rc" in
    0)       srm_fail "srm-only $side succeeded without an agent" ;;
    124|137|killed|none|failed)
             srm_fail "srm-only $side did not fail cleanly (exit $rc)"
             srm_show_log "$log" ;;
    *)       srm_pass "srm-only $side failed (exit $rc)" ;;
    esac
    # The socket name is printed after the "# env" header of our log.
    if grep -v '^#' "$log" | grep -qF "$UCX_SRM_SOCKET"; then
        srm_pass "srm-only $side names the socket:" \
                 "$(grep -v '^#' "$log" | grep -F "$UCX_SRM_SOCKET" |
                    head -n1 | sed 's/^.*UCX  *[A-Z]*  *//')"
    else
        srm_fail "srm-only $side output does not name @$UCX_SRM_SOCKET"
        srm_show_log "$log"
    fi
done
if srm_agent_ping 1; then
    srm_fail "an agent answers on @$UCX_SRM_SOCKET although" \
             "UCX_SRM_AGENT=never (pid $(srm_agent_status_pid))"
else
    srm_pass "UCX_SRM_AGENT=never started no agent"
fi

# --- srm,tcp: falls back to tcp ---------------------------------------------
export UCX_TLS=srm,tcp UCX_NET_DEVICES=lo
SRM_SERVER_ENV="UCX_LOG_LEVEL=info" SRM_CLIENT_ENV="UCX_LOG_LEVEL=info" \
    srm_perftest_pair srm-tcp 60 -t tag_lat -s 8 -n 2000 -w 100
if [ "$SRM_CLIENT_RC" = 0 ] && [ "$SRM_SERVER_RC" = 0 ] &&
   [ -n "$SRM_FINAL" ]; then
    srm_pass "UCX_TLS=srm,tcp tag_lat completed ($SRM_PAIR_SECS s): $SRM_FINAL"
else
    srm_fail "UCX_TLS=srm,tcp tag_lat: client exit $SRM_CLIENT_RC," \
             "server exit $SRM_SERVER_RC, Final: '${SRM_FINAL:-none}'"
    srm_show_log "$SRM_CLIENT_LOG"
    srm_show_log "$SRM_SERVER_LOG"
fi
lanes=$(grep -h 'ep_cfg\[' "$SRM_CLIENT_LOG" "$SRM_SERVER_LOG" |
        sed 's/.*INFO *//' | sort -u)
if printf '%s\n' "$lanes" | grep -q 'tcp/lo' &&
   ! printf '%s\n' "$lanes" | grep -q 'srm/'; then
    srm_pass "lanes: $(echo $lanes)"
else
    srm_fail "expected tcp/lo lanes and no srm: '$(echo $lanes)'"
fi
if srm_agent_ping 1; then
    srm_fail "an agent answers on @$UCX_SRM_SOCKET after the fallback run"
fi

srm_done
