#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
#
# test_netns_perftest: ucx_perftest pairs between two simulated hosts
# (contrib/netns-cluster: network + UTS + IPC namespaces) over srm only
# (UCX_TLS=srm for UCP, -x srm -d <its device> for UCT), so every byte goes
# client -> srmd(h2) -> node channel (TCP) -> srmd(h1) -> client.
# Each host runs its own srmd (started here, UCX_SRM_AGENT=never for the
# clients). Every pair must exit 0 on both sides with a "Final:" line.
# Afterwards `srmctl status --json` in h1 must be valid JSON of schema 1
# and show its small AND bulk channel to h2 "ready" with tx and rx frames
# > 0, and a measured turn time (rtt_us, from writing a frame until its
# ack; min_rtt_us <= rtt_us). Numbers are printed, not judged.
#
. "$(dirname "$0")/lib.sh"

srm_netns_require ucx_perftest jq

PAIR_TIMEOUT=${SRM_PERFTEST_TIMEOUT:-120}

# --------------------------------------------------------- the cluster --
srm_netns_up 2 "pf$$"
H1=${SRM_HOSTS[0]} H2=${SRM_HOSTS[1]}
srm_pass "cluster $SRM_NETNS_PREFIX up: $H1 (10.77.0.1), $H2 (10.77.0.2)"

for h in "$H1" "$H2"; do
    srm_netns_agent_start "$h" "$SRM_LOG/srmd.$h.log" ||
        { srm_show_log "$SRM_LOG/srmd.$h.out"; srm_done; }
    srm_pass "srmd pid ${SRM_NETNS_AGENT_PID[$h]} in $h on @$UCX_SRM_SOCKET"
done
export UCX_SRM_AGENT=never

# ------------------------------------------------------------- pairs --
NEXT_PORT=13000

# pair LABEL PERFTEST-ARGS...: server in h1, client in h2 on 10.77.0.1.
# Sets PAIR_RESULT, PAIR_SECS, PAIR_FINAL.
pair() {
    local label=$1 slog=$SRM_LOG/$1.server.log t0
    shift

    echo "# port $NEXT_PORT: ucx_perftest $* (UCX_TLS=${UCX_TLS:-})" >"$slog"
    cp "$slog" "$SRM_LOG/$label.client.log"
    t0=$(srm_now_us)
    srm_netns_perftest_pair "$label" "$NEXT_PORT" "$PAIR_TIMEOUT" "$@"
    NEXT_PORT=$((NEXT_PORT + 1))
    PAIR_SECS=$(( ($(srm_now_us) - t0) / 100000 ))
    PAIR_SECS="$((PAIR_SECS / 10)).$((PAIR_SECS % 10))"
    PAIR_FINAL=$(grep '^Final:' "$SRM_LOG/$label.client.log" | tail -n 1)
    if [ "$SRM_CLIENT_RC" = 0 ] && [ "$SRM_SERVER_RC" = 0 ] &&
       [ -n "$PAIR_FINAL" ]; then
        PAIR_RESULT=ok
    else
        PAIR_RESULT="FAIL(client=$SRM_CLIENT_RC server=$SRM_SERVER_RC"
        [ -n "$PAIR_FINAL" ] || PAIR_RESULT="$PAIR_RESULT no-Final"
        PAIR_RESULT="$PAIR_RESULT)"
    fi
}

table=$SRM_LOG/table.txt
printf '%-20s %6s %6s  %-8s %s\n' CASE ITERS SECS RESULT \
       "FINAL (iters lat-typical lat-avg lat-overall MB/s-avg MB/s-overall msg/s-avg msg/s-overall)" \
       >"$table"

# run_case LABEL ITERS PERFTEST-ARGS...
run_case() {
    local label=$1 iters=$2 fin
    shift 2

    pair "$label" -n "$iters" "$@"
    fin=$(printf '%s\n' "$PAIR_FINAL" | sed 's/^Final: *//; s/  */ /g')
    printf '%-20s %6s %6s  %-8s %s\n' "$label" "$iters" "$PAIR_SECS" \
           "$PAIR_RESULT" "$fin" >>"$table"
    if [ "$PAIR_RESULT" = ok ]; then
        srm_pass "$label ($PAIR_SECS s): Final: $fin"
    else
        srm_fail "$label: $PAIR_RESULT ($PAIR_SECS s)"
        srm_show_log "$SRM_LOG/$label.client.log" 8
        srm_show_log "$SRM_LOG/$label.server.log" 8
        srm_netns_agent_answers "$H1" "$SRM_LOG/srmd.$H1.log"
        srm_netns_agent_answers "$H2" "$SRM_LOG/srmd.$H2.log"
    fi
}

# --- uct: active messages on srm across hosts -----------------------------
uct="-d $(srm_uct_device "$H1") -x srm"
# shellcheck disable=SC2086
{
run_case uct-am_lat-8        2000  $uct -t am_lat -s 8     -w 200
run_case uct-am_bw-bcopy-8k  5000  $uct -t am_bw  -s 8192  -w 200 -D bcopy
run_case uct-am_bw-zcopy-64k 1000  $uct -t am_bw  -s 65536 -w 100 -D zcopy
}

# --- ucp ----------------------------------------------------------------
export UCX_TLS=srm
# size:lat-iters:bw-iters:warmup
for spec in 8:2000:10000:200 65536:300:500:20 4194304:20:30:3; do
    IFS=: read -r size lat_iters bw_iters warm <<<"$spec"
    run_case "tag_lat-$size" "$lat_iters" -t tag_lat -s "$size" -w "$warm"
    run_case "tag_bw-$size"  "$bw_iters"  -t tag_bw  -s "$size" -w "$warm"
done
run_case ucp_am_bw-65536   500 -t ucp_am_bw  -s 65536 -w 20
run_case stream_bw-65536   500 -t stream_bw  -s 65536 -w 20
run_case ucp_put_bw-65536  500 -t ucp_put_bw -s 65536 -w 20
run_case ucp_get-65536     500 -t ucp_get    -s 65536 -w 20
# A site that pins UCX_NET_DEVICES to the hosts' interface keeps srm: its
# device is named after the one its agent uses (UCP used to drop srm's
# device "node", and every pair failed with "no usable transports").
dev=$(srm_uct_device "$H1")
UCX_NET_DEVICES=$dev run_case "tag_lat-8-net_devices-$dev" 500 -t tag_lat \
    -s 8 -w 50
unset UCX_TLS

srm_log ""
srm_log "what ran between $H2 (client) and $H1 (server), srm only:"
sed 's/^/  /' "$table"

# --- the node channels of h1 --------------------------------------------
srm_log ""
status=$(srm_netns_status "$H1" 2>&1)
srm_log "srmctl status in $H1:"
printf '%s\n' "$status" | sed 's/^/  /'
srm_log "srmctl status in $H2:"
srm_netns_status "$H2" 2>&1 | sed 's/^/  /'

# The same, as scripts read it: `srmctl status --json` (docs/status-json.md).
json=$(srm_netns_ctl "$H1" status --json 2>&1)
if jq -e '.schema == 1 and (.nodes | length) == 1 and
          (.ports | type) == "array" and .wire.paths[0].wire == "tcp"' \
        >/dev/null 2>&1 <<<"$json"; then
    srm_pass "srmctl status --json in $H1: valid JSON, schema 1, one remote node, the tcp wire"
else
    srm_fail "srmctl status --json in $H1: not valid JSON of schema 1 with one node on tcp: $(head -c 300 <<<"$json")"
fi

# chan_check KIND: the h1 -> h2 channel of KIND is ready, tx/rx frames > 0.
chan_check() {
    local kind=$1 line state txf rxf rtt rtt_min

    line=$(jq -r --arg k "$kind" '.nodes[0].channels[] | select(.kind == $k) |
             "\(.state) \(.tx_frames) \(.rx_frames) \(.rtt_us // "-") \(.min_rtt_us // "-")"' \
           2>/dev/null <<<"$json")
    if [ -z "$line" ]; then
        srm_fail "no $kind channel in srmctl status --json of $H1"
        return
    fi
    read -r state txf rxf rtt rtt_min <<<"$line"
    if [ "$state" = ready ] && [ "${txf:-0}" -gt 0 ] && [ "${rxf:-0}" -gt 0 ]; then
        srm_pass "$H1 $kind channel: $state, tx frames $txf, rx frames $rxf"
    else
        srm_fail "$H1 $kind channel: state '$state', tx frames '$txf', rx frames '$rxf' (want ready, > 0, > 0)"
    fi
    if jq -e --arg k "$kind" '.nodes[0].channels[] | select(.kind == $k) |
             .rtt_us > 0 and .min_rtt_us > 0 and .min_rtt_us <= .rtt_us' \
            >/dev/null 2>&1 <<<"$json"; then
        srm_pass "$H1 $kind channel: its frames' turn is $rtt us (shortest $rtt_min us)"
    else
        srm_fail "$H1 $kind channel: rtt_us '$rtt', min_rtt_us '$rtt_min' (want numbers, 0 < shortest <= smoothed)"
    fi
}
chan_check small
chan_check bulk

for h in "$H1" "$H2"; do
    srm_netns_ping "$h" || srm_fail "srmd in $h no longer answers"
    if grep -qE ' (ERROR|WARN)' "$SRM_LOG/srmd.$h.log" 2>/dev/null; then
        srm_log "warnings/errors in the srmd log of $h:"
        grep -E ' (ERROR|WARN)' "$SRM_LOG/srmd.$h.log" | head -n 10 | sed 's/^/  | /'
    fi
done

srm_done
