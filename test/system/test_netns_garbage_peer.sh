#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
#
# test_netns_garbage_peer: srmd's node-channel port faces the network; a
# peer that speaks garbage must not take the agent down nor disturb the
# channels it has.
#
# Two simulated hosts, each with its own srmd (started here, with -l). A
# tag_lat pair over srm brings up h1 <-> h2 channels first. Then, from h2,
# each on a fresh TCP connection to h1's channel port (from `srmctl status`,
# "wire: tcp IP:PORT"), with bash /dev/tcp:
#   magic      32 bytes with a wrong magic
#   oversize   a valid-looking 32-byte header (magic 0x5352, version 1,
#              type HELLO) with length 0x7fffffff
#   oversize-am  the same with type AM and length 128 KiB + 1
#   version    right magic, version 7
#   truncated  a HELLO header announcing 16 bytes, 5 of them, then close
#   urandom    64 KiB from /dev/urandom
# After each: srmd in h1 must answer `srmctl ping`; for the malformed ones
# its bad_frames counter must grow or the connection must have been closed
# by srmd (seen from h2 as EOF/reset). At the end: no garbage connection
# remains established in h1, the real channels are still "ready", the
# srmd log shows what it rejected, and a tag_lat pair over srm passes again.
#
. "$(dirname "$0")/lib.sh"

srm_netns_require ucx_perftest

PAIR_TIMEOUT=${SRM_PERFTEST_TIMEOUT:-90}

# --------------------------------------------------------- the cluster --
srm_netns_up 2 "gp$$"
H1=${SRM_HOSTS[0]} H2=${SRM_HOSTS[1]}
IP1=10.77.0.1 IP2=10.77.0.2
srm_pass "cluster $SRM_NETNS_PREFIX up: $H1 ($IP1), $H2 ($IP2)"

for h in "$H1" "$H2"; do
    srm_netns_agent_start "$h" "$SRM_LOG/srmd.$h.log" || srm_done
    srm_pass "srmd pid ${SRM_NETNS_AGENT_PID[$h]} in $h (log $SRM_LOG/srmd.$h.log)"
done
export UCX_SRM_AGENT=never UCX_TLS=srm

NEXT_PORT=13500
# pair LABEL: tag_lat 8 B, server in h1, client in h2.
pair() {
    local label=$1 slog=$SRM_LOG/$1.server.log clog=$SRM_LOG/$1.client.log fin

    : >"$slog"
    : >"$clog"
    srm_netns_perftest_pair "$label" "$NEXT_PORT" "$PAIR_TIMEOUT" \
        -t tag_lat -s 8 -n 1000 -w 100
    NEXT_PORT=$((NEXT_PORT + 1))
    fin=$(grep '^Final:' "$clog" | tail -n 1 | sed 's/  */ /g')
    if [ "$SRM_CLIENT_RC" = 0 ] && [ "$SRM_SERVER_RC" = 0 ] && [ -n "$fin" ]; then
        srm_pass "$label: tag_lat 8 B $H2 -> $H1 over srm: $fin"
    else
        srm_fail "$label: tag_lat pair failed (client $SRM_CLIENT_RC, server $SRM_SERVER_RC)"
        srm_show_log "$clog" 8
        srm_show_log "$slog" 8
    fi
}

bad_frames() { srm_netns_status_get "$H1" .wire.bad_frames; }
# srmd's established connections in h1 with peer h2
srmd_conns() {
    ip netns exec "$H1" ss -tnpH state established 2>/dev/null |
        awk -v p="$IP2" '{ peer = $4; sub(/:[0-9]+$/, "", peer) } peer == p && /"srmd"/' | wc -l
}

pair before-garbage

status=$(srm_netns_status "$H1" 2>&1) # for the log
wire=$(srm_netns_status_get "$H1" '.wire.paths[0].address')
WIRE_IP=${wire%:*} WIRE_PORT=${wire##*:}
if [ -z "$wire" ] || [ -z "$WIRE_PORT" ] || [ "$WIRE_IP" = "$wire" ]; then
    srm_fail "no 'wire: tcp IP:PORT' in srmctl status of $H1"
    printf '%s\n' "$status" | sed 's/^/    | /'
    srm_done
fi
srm_log "h1 srmd channel endpoint: $WIRE_IP:$WIRE_PORT"
printf '%s\n' "$status" | grep -E '^(wire|node)' | sed 's/^/  /'
conns0=$(srmd_conns)
srm_log "srmd in $H1: $conns0 established channel connection(s) from $H2 before the garbage"

# ---------------------------------------------------------------- bytes --
b()    { local v; for v in "$@"; do printf '\\x%02x' $((v & 255)); done; }
le16() { b "$1" $(($1 >> 8)); }
le32() { b "$1" $(($1 >> 8)) $(($1 >> 16)) $(($1 >> 24)); }
# hdr MAGIC VERSION TYPE LENGTH: a 32-byte frame header as printf escapes
hdr() {
    le16 "$1"; b "$2" "$3"; le32 "$4"
    le32 0; le32 0; le32 0; le32 0     # src_port dst_port dst_key dst_node
    b 0 0; le16 0; le32 0              # am_id flags reserved seq
}

# send LABEL MODE PRINTF-ESCAPES|@urandom:N: a fresh connection from h2,
# the bytes, then (MODE keep) wait up to 5 s for srmd to close it, or
# (MODE close) close it ourselves. Prints what happened.
send() {
    "$SRM_NETNS_CLUSTER" exec "$H2" bash -c '
        exec 3<>"/dev/tcp/$1/$2" || { echo connect-failed; exit 3; }
        case $4 in
        @urandom:*) head -c "${4#@urandom:}" /dev/urandom >&3 2>/dev/null ;;
        *) printf "$4" >&3 2>/dev/null ;;
        esac
        if [ "$3" = close ]; then exec 3>&-; echo closed-by-us; exit 0; fi
        timeout 5 cat <&3 >/dev/null 2>&1
        case $? in
        0) echo closed-by-srmd ;;
        124) echo still-open ;;
        *) echo reset-by-srmd ;;
        esac' _ "$WIRE_IP" "$WIRE_PORT" "$2" "$3" 2>&1
}

printf '%-13s %-6s %-16s %11s  %s\n' CASE MODE CONNECTION BAD_FRAMES AGENT >"$SRM_LOG/garbage.txt"

# garbage LABEL MODE BYTES EXPECT: EXPECT is "rejected" (bad_frames grows
# or srmd closes the connection) or "dropped" (we close; srmd survives).
garbage() {
    local label=$1 mode=$2 bytes=$3 expect=$4 b0 b1 what alive=yes

    b0=$(bad_frames)
    what=$(send "$label" "$mode" "$bytes" | tail -n 1)
    sleep 0.5
    b1=$(bad_frames)
    srm_netns_ping "$H1" || alive=NO
    srm_alive "${SRM_NETNS_AGENT_PID[$H1]}" || alive=NO
    printf '%-13s %-6s %-16s %5s->%-5s  %s\n' "$label" "$mode" "$what" \
           "${b0:-?}" "${b1:-?}" "$alive" >>"$SRM_LOG/garbage.txt"
    srm_log "  $label: connection $what, bad_frames ${b0:-?} -> ${b1:-?}, srmd alive: $alive"
    if [ "$alive" != yes ]; then
        srm_fail "$label: srmd in $H1 died or stopped answering"
        srm_show_log "$SRM_LOG/srmd.$H1.log" 10
        srm_show_log "$SRM_LOG/srmd.$H1.out" 10
        srm_done
    fi
    srm_pass "$label: srmd in $H1 still answers"
    case $expect in
    rejected)
        if [ -n "$b0" ] && [ -n "$b1" ] && [ "$b1" -gt "$b0" ]; then
            srm_pass "$label: counted as bad frame ($b0 -> $b1); connection $what"
        elif [ "$what" = closed-by-srmd ] || [ "$what" = reset-by-srmd ]; then
            srm_pass "$label: srmd dropped the connection ($what; bad_frames $b0 -> $b1)"
        else
            srm_fail "$label: neither counted (bad_frames $b0 -> $b1) nor dropped ($what)"
        fi ;;
    dropped)
        [ "$what" = closed-by-us ] || srm_fail "$label: could not send ($what)" ;;
    esac
}

srm_log ""
srm_log "garbage from $H2 to $WIRE_IP:$WIRE_PORT:"
garbage magic       keep  "$(printf 'GARBAGE!%.0s' 1 2 3 4)"           rejected
garbage oversize    keep  "$(hdr 0x5352 1 3 0x7fffffff)"              rejected
garbage oversize-am keep  "$(hdr 0x5352 1 2 $((128 * 1024 + 1)))"     rejected
garbage version     keep  "$(hdr 0x5352 7 3 16)$(b 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16)" rejected
garbage truncated   close "$(hdr 0x5352 1 3 16)$(b 1 2 3 4 5)"        dropped
garbage urandom     keep  "@urandom:65536"                            rejected

srm_log ""
srm_log "what each garbage connection did:"
sed 's/^/  /' "$SRM_LOG/garbage.txt"

# nothing of the garbage may linger
sleep 1
conns1=$(srmd_conns)
if [ "$conns1" -le "$conns0" ]; then
    srm_pass "no garbage connection left in $H1: srmd has $conns1 connection(s) from $H2 (was $conns0)"
else
    srm_fail "srmd in $H1 still holds $conns1 connection(s) from $H2 (before the garbage: $conns0)"
    ip netns exec "$H1" ss -tnpH state established | grep srmd | sed 's/^/    | /'
fi

status=$(srm_netns_status "$H1" 2>&1)
srm_log "srmctl status in $H1 after the garbage:"
printf '%s\n' "$status" | grep -E '^(agent|counters|wire|node)' | sed 's/^/  /'
if [ "$(srm_netns_status_get "$H1" '[.nodes[].channels[] |
        select(.kind == "small" and .state == "ready")] | length')" -gt 0 ]; then
    srm_pass "the real small channel $H1 <-> $H2 is still ready"
else
    srm_fail "the real small channel $H1 <-> $H2 is no longer ready"
fi

srm_log "what srmd in $H1 logged about the garbage:"
grep -iE 'malformed|not expected|bad|closed|receive failed|link' "$SRM_LOG/srmd.$H1.log" |
    tail -n 20 | sed 's/^/  | /'
n=$(grep -ciE 'malformed|not expected|bad' "$SRM_LOG/srmd.$H1.log")
if [ "$n" -gt 0 ]; then
    srm_pass "srmd logged $n rejection(s)"
else
    srm_fail "srmd's log has no line about the malformed frames"
fi

pair after-garbage

for h in "$H1" "$H2"; do
    srm_netns_ping "$h" || srm_fail "srmd in $h no longer answers at the end"
done
srm_done
