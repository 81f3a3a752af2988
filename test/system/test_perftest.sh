#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
#
# test_perftest: ucx_perftest server/client pairs over srm only (UCX_TLS=srm
# for UCP, -x srm -d <srm's device> for UCT), through one private agent. Every pair
# must exit 0 on both sides with a "Final:" line from the client, and the
# agent's frame counter must grow during each of them (so srm really
# carried the traffic). One UCP run also logs its lane selection, which
# must name srm/<its device>. Nothing is timed: throughput numbers are only shown.
#
. "$(dirname "$0")/lib.sh"

srm_require_cmd ucx_perftest timeout

PAIR_TIMEOUT=${SRM_PERFTEST_TIMEOUT:-90}

srm_agent_start || { srm_fail "cannot start srmd"; srm_done; }
# Our agent or nothing: a missing agent must not be papered over by an
# auto-started one.
export UCX_SRM_AGENT=never
export UCX_TLS=srm

table=$SRM_LOG/table.txt
printf '%-22s %-11s %-6s %8s %7s %6s %9s  %s\n' \
       CASE TEST LAYOUT SIZE ITERS SECS FRAMES RESULT >"$table"

# run_case LABEL TEST LAYOUT SIZE ITERS PERFTEST-ARGS...
run_case() {
    local label=$1 test=$2 layout=$3 size=$4 iters=$5 f0 f1 frames result
    shift 5

    f0=$(srm_agent_frames)
    if srm_perftest_pair "$label" "$PAIR_TIMEOUT" -t "$test" -s "$size" \
            -n "$iters" "$@"; then
        result=ok
    else
        result="FAIL(client=$SRM_CLIENT_RC server=$SRM_SERVER_RC"
        [ -n "$SRM_FINAL" ] || result="$result no-Final"
        result="$result)"
    fi
    f1=$(srm_agent_frames)
    if [ -n "$f0" ] && [ -n "$f1" ]; then
        frames=$((f1 - f0))
        if [ "$result" = ok ] && [ "$frames" -le 0 ]; then
            result="FAIL(no frames through srmd)"
        fi
    else
        frames="?"
        [ "$result" = ok ] && result="FAIL(srmctl status unreadable)"
    fi
    printf '%-22s %-11s %-6s %8s %7s %6s %9s  %s\n' "$label" "$test" \
           "$layout" "$size" "$iters" "$SRM_PAIR_SECS" "$frames" \
           "$result" >>"$table"
    if [ "$result" = ok ]; then
        srm_pass "$label ($SRM_PAIR_SECS s, $frames frames)"
    else
        srm_fail "$label: $result"
        srm_show_log "$SRM_CLIENT_LOG" 8
        srm_show_log "$SRM_SERVER_LOG" 8
        if ! srm_agent_ping 2; then
            srm_log "    the agent no longer answers:"
            srm_show_log "$SRM_AGENT_LOG" 8
        fi
    fi
}

# --- uct: active messages on the srm interface ---------------------------
dev=$(srm_uct_device)
uct="-d $dev -x srm"
# shellcheck disable=SC2086
{
run_case uct-am_lat         am_lat short   8      5000  $uct -w 500
run_case uct-am_bw-short    am_bw  short   4096   50000 $uct -w 1000 -D short
run_case uct-am_bw-bcopy    am_bw  bcopy   8192   50000 $uct -w 1000 -D bcopy
run_case uct-am_bw-zcopy    am_bw  zcopy   65536  10000 $uct -w 500  -D zcopy
}

# --- ucp: tag matching, eager and rendezvous ------------------------------
# size:iterations:warmup; few iterations for the big ones.
# size:latency iterations:bandwidth iterations:warmup; few iterations for
# the big ones. (Small-message round trips can stall for a scheduler tick
# when two busy-polling perftests and srmd share two cores: few of those.)
for spec in 8:5000:20000:500 8192:5000:5000:500 65536:2000:2000:100 \
            1048576:200:200:10 4194304:50:50:5; do
    IFS=: read -r size lat_iters bw_iters warm <<<"$spec"
    run_case "tag_lat-$size" tag_lat contig "$size" "$lat_iters" -w "$warm"
    run_case "tag_bw-$size"  tag_bw  contig "$size" "$bw_iters"  -w "$warm"
done

# --- ucp: the other APIs --------------------------------------------------
run_case ucp_am_bw-65536    ucp_am_bw  contig 65536 2000 -w 100
run_case stream_bw-65536    stream_bw  contig 65536 2000 -w 100
run_case ucp_put_bw-65536   ucp_put_bw contig 65536 2000 -w 100
run_case ucp_get-65536      ucp_get    contig 65536 2000 -w 100

# --- srm was selected: UCP's own report of its lanes ----------------------
SRM_SERVER_ENV="UCX_LOG_LEVEL=info" SRM_CLIENT_ENV="UCX_LOG_LEVEL=info" \
    srm_perftest_pair tag_lat-lanes "$PAIR_TIMEOUT" -t tag_lat -s 8 -n 1000 \
    -w 100
lanes=$(grep -h 'ep_cfg\[' "$SRM_CLIENT_LOG" "$SRM_SERVER_LOG" |
        sed 's/.*INFO *//' | sort -u)
if [ -z "$lanes" ]; then
    srm_fail "UCX_LOG_LEVEL=info printed no ep_cfg (lane selection) lines"
    srm_show_log "$SRM_CLIENT_LOG" 10
elif printf '%s\n' "$lanes" | grep -qF "srm/$dev" &&
     ! printf '%s\n' "$lanes" | sed "s|srm/$dev||g" |
           grep -q '([a-z_0-9]*/'; then
    srm_pass "UCP lanes use srm/$dev only: $(echo $lanes)"
else
    srm_fail "UCP lanes are not srm/$dev only:"
    printf '%s\n' "$lanes" | sed 's/^/    | /'
fi

srm_log ""
srm_log "what ran (UCX_TLS=srm; FRAMES = srmd frame counter growth):"
sed 's/^/  /' "$table"
srm_log ""
srm_log "agent status at the end:"
srm_agent_status | sed 's/^/  /'

srm_agent_stop || srm_fail "srmd did not stop cleanly (exit $?)"
srm_done
