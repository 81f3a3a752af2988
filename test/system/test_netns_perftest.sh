#!/bin/bash
#
# test_netns_perftest: ucx_perftest pairs between two simulated hosts
# (contrib/netns-cluster: network + UTS + IPC namespaces) over srm only
# (UCX_TLS=srm for UCP, -d node -x srm for UCT), so every byte goes
# client -> srmd(h2) -> node channel (TCP) -> srmd(h1) -> client.
# Each host runs its own srmd (started here, UCX_SRM_AGENT=never for the
# clients). Every pair must exit 0 on both sides with a "Final:" line.
# Afterwards `srmctl status` in h1 must show its small AND bulk channel to
# h2 "ready" with tx and rx frames > 0. Numbers are printed, not judged.
#
. "$(dirname "$0")/lib.sh"

srm_require_cmd ucx_perftest timeout ip nsenter ss
NC=$SRM_SRCDIR/contrib/netns-cluster
[ -x "$NC" ] || srm_skip "contrib/netns-cluster not found at $NC"
[ "$(id -u)" = 0 ] || srm_skip "netns-cluster needs root (uid $(id -u))"

PAIR_TIMEOUT=${SRM_PERFTEST_TIMEOUT:-120}

# UCX commands get the module explicitly; nothing else (netns-cluster, ss,
# srmctl) needs it.
unset LD_PRELOAD
export UCX_WARN_UNUSED_ENV_VARS=n

# --------------------------------------------------------- the cluster --
PFX=pf$$
H1=${PFX}h1 H2=${PFX}h2
IP1=10.77.0.1

netns_on_exit() {
    local rc=$?
    trap - EXIT
    srm_cleanup
    "$NC" down --prefix "$PFX" >>"$SRM_LOG/cluster.log" 2>&1 ||
        srm_log "cleanup: netns-cluster down --prefix $PFX failed"
    exit "$rc"
}
trap netns_on_exit EXIT

if ! "$NC" up 2 --prefix "$PFX" >"$SRM_LOG/cluster.log" 2>&1; then
    srm_fail "netns-cluster up 2 --prefix $PFX"
    srm_show_log "$SRM_LOG/cluster.log"
    srm_done
fi
srm_pass "cluster $PFX up: $H1 ($IP1), $H2 (10.77.0.2)"

in_host() { local h=$1; shift; "$NC" exec "$h" "$@"; }
ctl()     { local h=$1; shift; in_host "$h" "$SRM_SRMCTL" -s "$UCX_SRM_SOCKET" -t 3 "$@"; }

# agent_start HOST: our own srmd in HOST, logging to the test's log dir.
agent_start() {
    local h=$1 i pid

    "$NC" exec "$h" "$SRM_SRMD" -s "$UCX_SRM_SOCKET" -l "$SRM_LOG/srmd.$h.log" \
        >"$SRM_LOG/srmd.$h.out" 2>&1 &
    pid=$!
    srm_track "$pid"
    for i in $(seq 1 50); do
        if ctl "$h" ping >/dev/null 2>&1; then
            srm_pass "srmd pid $pid in $h on @$UCX_SRM_SOCKET"
            return 0
        fi
        srm_alive "$pid" || break
        sleep 0.2
    done
    srm_fail "srmd did not come up in $h"
    srm_show_log "$SRM_LOG/srmd.$h.log"
    srm_show_log "$SRM_LOG/srmd.$h.out"
    return 1
}
agent_start "$H1" && agent_start "$H2" || srm_done
export UCX_SRM_AGENT=never

# ------------------------------------------------------------- pairs --
NEXT_PORT=13000

# pair LABEL PERFTEST-ARGS...: server in h1, client in h2 on 10.77.0.1.
# Sets PAIR_RESULT, PAIR_SECS, PAIR_FINAL.
pair() {
    local label=$1 port slog clog spid cpid crc=0 src=0 i t0
    shift

    port=$NEXT_PORT
    NEXT_PORT=$((NEXT_PORT + 1))
    slog=$SRM_LOG/$label.server.log clog=$SRM_LOG/$label.client.log
    echo "# port $port: ucx_perftest $* (UCX_TLS=${UCX_TLS:-})" >"$slog"
    cp "$slog" "$clog"
    t0=$(srm_now_us)
    "$NC" exec "$H1" env LD_PRELOAD="$SRM_MODULE" timeout -k 5 "$PAIR_TIMEOUT" \
        ucx_perftest -p "$port" "$@" >>"$slog" 2>&1 &
    spid=$!
    srm_track "$spid"
    for i in $(seq 1 100); do
        [ -n "$(ip netns exec "$H1" ss -Hltn "( sport = :$port )" 2>/dev/null)" ] &&
            break
        srm_alive "$spid" || break
        sleep 0.1
    done
    "$NC" exec "$H2" env LD_PRELOAD="$SRM_MODULE" timeout -k 5 "$PAIR_TIMEOUT" \
        ucx_perftest -p "$port" "$@" "$IP1" >>"$clog" 2>&1 &
    cpid=$!
    srm_track "$cpid"
    wait "$cpid" || crc=$?
    srm_untrack "$cpid"
    if srm_wait_pid "$spid" 15; then
        src=$SRM_WAIT_RC
    else
        srm_kill_pid "$spid" 3
        src=killed
    fi
    srm_untrack "$spid"
    PAIR_SECS=$(( ($(srm_now_us) - t0) / 100000 ))
    PAIR_SECS="$((PAIR_SECS / 10)).$((PAIR_SECS % 10))"
    PAIR_FINAL=$(grep '^Final:' "$clog" | tail -n 1)
    if [ "$crc" = 0 ] && [ "$src" = 0 ] && [ -n "$PAIR_FINAL" ]; then
        PAIR_RESULT=ok
    else
        PAIR_RESULT="FAIL(client=$crc server=$src"
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
        ctl "$H1" ping >/dev/null 2>&1 ||
            { srm_log "    srmd in $H1 no longer answers"; srm_show_log "$SRM_LOG/srmd.$H1.log" 8; }
        ctl "$H2" ping >/dev/null 2>&1 ||
            { srm_log "    srmd in $H2 no longer answers"; srm_show_log "$SRM_LOG/srmd.$H2.log" 8; }
    fi
}

# --- uct: active messages on srm/node across hosts ----------------------
uct="-d node -x srm"
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
unset UCX_TLS

srm_log ""
srm_log "what ran between $H2 (client) and $H1 (server), srm only:"
sed 's/^/  /' "$table"

# --- the node channels of h1 --------------------------------------------
srm_log ""
status=$(ctl "$H1" status 2>&1)
srm_log "srmctl status in $H1:"
printf '%s\n' "$status" | sed 's/^/  /'
srm_log "srmctl status in $H2:"
ctl "$H2" status 2>&1 | sed 's/^/  /'

# chan_check KIND: the h1 -> h2 channel of KIND is ready, tx/rx frames > 0.
chan_check() {
    local kind=$1 line state txf rxf

    line=$(printf '%s\n' "$status" | awk -v k="$kind" '$1 == "node" && $5 == k' |
           head -n 1)
    if [ -z "$line" ]; then
        srm_fail "no $kind channel line in srmctl status of $H1"
        return
    fi
    state=$(awk '{ print $6 }' <<<"$line")
    txf=$(awk '{ for (i = 1; i < NF; i++) if ($i == "tx") { split($(i+1), a, "/"); print a[1] } }' <<<"$line")
    rxf=$(awk '{ for (i = 1; i < NF; i++) if ($i == "rx") { split($(i+1), a, "/"); print a[1] } }' <<<"$line")
    if [ "$state" = ready ] && [ "${txf:-0}" -gt 0 ] && [ "${rxf:-0}" -gt 0 ]; then
        srm_pass "$H1 $kind channel: $state, tx frames $txf, rx frames $rxf"
    else
        srm_fail "$H1 $kind channel: state '$state', tx frames '$txf', rx frames '$rxf' (want ready, > 0, > 0)"
    fi
}
chan_check small
chan_check bulk

for h in "$H1" "$H2"; do
    ctl "$h" ping >/dev/null 2>&1 || srm_fail "srmd in $h no longer answers"
    if grep -qE ' (ERROR|WARN)' "$SRM_LOG/srmd.$h.log" 2>/dev/null; then
        srm_log "warnings/errors in the srmd log of $h:"
        grep -E ' (ERROR|WARN)' "$SRM_LOG/srmd.$h.log" | head -n 10 | sed 's/^/  | /'
    fi
done

srm_done
