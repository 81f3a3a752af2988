#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
#
# test_netns_ipv6: srm's tcp wire on IPv6 between two simulated hosts.
#
# 1. An IPv6-only network (netns-cluster --ipv6-only --two-links: fd77::i
#    on eth0, fd78::i on eth1, no IPv4 on the links). Each host's srmd runs
#    with UCX_SRM_DEVICES=eth0,eth1 and the default ADDRESS_FAMILY=auto,
#    which must fall back to the links' IPv6 addresses. ucx_perftest (-6:
#    its own address exchange over IPv6 too) runs UCT am_lat and UCP
#    tag_lat and tag_bw over srm only, and an Open MPI job
#    (test/mpi/srm_mpi_check, 2 hosts x 2 ranks, UCX_TLS=srm). Checked:
#    every pair exits 0 with a Final line; the job's checks all pass;
#    each agent listens on [fd77::i] and [fd78::i]; h1 names h2 at
#    [fd77::2]; both of its channels are ready with both paths up (the
#    standby on fd78) and frames in (small ones out as well); the agents'
#    TCP connections to each other are IPv6 ones (ss, by srmd's pid).
# 2. A dual-stack network (--ipv6): auto takes the IPv4 address;
#    UCX_SRM_ADDRESS_FAMILY=ipv6 takes the IPv6 one, and a tag_lat pair
#    (its exchange on IPv4) runs over it. With a second IPv4 address on
#    the interface, the agent keeps the first.
#
# shellcheck disable=SC2034  # SRM_NETNS_SERVER is read by lib.sh
. "$(dirname "$0")/lib.sh"

srm_netns_require --mpi ucx_perftest jq mpicc mpirun

bin=$SRM_LOG/srm_mpi_check
srm_mpicc "$SRM_SRCDIR/test/mpi/srm_mpi_check.c" "$bin"

PAIR_TIMEOUT=60
NEXT_PORT=13100

# pair LABEL PERFTEST-ARGS...: a perftest pair between the first two hosts;
# PASS or FAIL with the ends of both logs.
pair() {
    local label=$1 final
    shift
    srm_netns_perftest_pair "$label" "$NEXT_PORT" "$PAIR_TIMEOUT" "$@"
    NEXT_PORT=$((NEXT_PORT + 1))
    final=$(grep '^Final:' "$SRM_LOG/$label.client.log" | tail -n 1 |
            sed 's/^Final: *//; s/  */ /g')
    if [ "$SRM_CLIENT_RC" = 0 ] && [ "$SRM_SERVER_RC" = 0 ] &&
       [ -n "$final" ]; then
        srm_pass "$label: Final: $final"
    else
        srm_fail "$label: client $SRM_CLIENT_RC, server $SRM_SERVER_RC${final:+, Final: $final}"
        srm_show_log "$SRM_LOG/$label.client.log" 8
        srm_show_log "$SRM_LOG/$label.server.log" 8
    fi
}

# expect_paths HOST REGEX: the addresses of the agent's wire paths, in
# order, separated by spaces, match REGEX.
expect_paths() {
    local h=$1 got want
    shift
    got=$(srm_netns_status_get "$h" '[.wire.paths[].address] | join(" ")')
    want="$*"
    if [[ $got =~ ^$want$ ]]; then
        srm_pass "srmd in $h listens on $got"
    else
        srm_fail "srmd in $h listens on '$got', want /$want/"
    fi
}

# ------------------------------------------------ 1. IPv6 only, two links --
srm_netns_up 2 "v6$$" --ipv6-only --two-links
H1=${SRM_HOSTS[0]} H2=${SRM_HOSTS[1]}
if "$SRM_NETNS_CLUSTER" exec "$H1" ip -4 -o addr show scope global |
        grep -q .; then
    srm_fail "$H1 has an IPv4 address with --ipv6-only"
fi
srm_pass "cluster up, IPv6 only: $("$SRM_NETNS_CLUSTER" list --prefix "$SRM_NETNS_PREFIX" | tail -n 2 | tr -s ' ' | tr '\n' ';')"

srm_netns_start_agents "$SRM_LOG/srmd.%h.log" UCX_SRM_DEVICES=eth0,eth1 ||
    srm_done
export UCX_SRM_AGENT=never
expect_paths "$H1" '\[fd77::1\]:[0-9]+ \[fd78::1\]:[0-9]+'
expect_paths "$H2" '\[fd77::2\]:[0-9]+ \[fd78::2\]:[0-9]+'

SRM_NETNS_SERVER=fd77::1
pair uct-am_lat-8 -6 -d "$(srm_uct_device "$H1")" -x srm -t am_lat -s 8 \
    -n 2000 -w 200
export UCX_TLS=srm
pair tag_lat-8 -6 -t tag_lat -s 8 -n 2000 -w 200
pair tag_bw-1m -6 -t tag_bw -s 1048576 -n 200 -w 20
unset UCX_TLS

# An Open MPI job, its own launch and wire-up on IPv6 as well.
frames0=$(srm_netns_status_get "$H1" .counters.frames)
rc=0
srm_netns_mpirun "$SRM_NETNS_HOST_LIST" 2 120 srm "$bin" \
    >"$SRM_LOG/mpi.log" 2>&1 || rc=$?
summary=$(grep -a '^srm_mpi_check: .* passed' "$SRM_LOG/mpi.log" | tail -n 1)
frames1=$(srm_netns_status_get "$H1" .counters.frames)
if [ "$rc" = 0 ] && [[ $summary == *' 0 failed' ]] &&
   [ "${frames1:-0}" -gt "${frames0:-0}" ]; then
    srm_pass "Open MPI, 2 hosts x 2 ranks, UCX_TLS=srm: $summary; srmd in $H1 moved $(( frames1 - frames0 )) frames"
else
    srm_fail "Open MPI, 2 hosts x 2 ranks, UCX_TLS=srm: exit $rc, '${summary:-no summary}', srmd frames $frames0 -> $frames1"
    srm_show_log "$SRM_LOG/mpi.log" 25
fi

json=$(srm_netns_ctl "$H1" status --json 2>&1)
addr=$(jq -r '.nodes[0].address // empty' <<<"$json" 2>/dev/null)
if [[ $addr =~ ^\[fd77::2\]:[0-9]+$ ]]; then
    srm_pass "$H1 names $H2 at $addr"
else
    srm_fail "$H1 names its peer at '$addr', want [fd77::2]:PORT: $(head -c 300 <<<"$json")"
fi
for kind in small bulk; do
    line=$(jq -r --arg k "$kind" '.nodes[0].channels[] | select(.kind == $k) |
             "\(.state) \(.tx_frames) \(.rx_frames) \([.paths[].state] | join(","))"' \
           <<<"$json" 2>/dev/null)
    read -r state txf rxf paths <<<"$line"
    # h1 serves: tag_bw's 1 MB messages come to it on the bulk channel
    # only; small ones go both ways.
    out_ok=1
    [ "$kind" = bulk ] || [ "${txf:-0}" -gt 0 ] || out_ok=0
    if [ "$state" = ready ] && [ "$out_ok" = 1 ] &&
       [ "${rxf:-0}" -gt 0 ] && [ "$paths" = ready,ready ]; then
        srm_pass "$H1 $kind channel: ready, $txf frames out, $rxf in, paths $paths"
    else
        srm_fail "$H1 $kind channel: '$line' (want ready, frames in$([ "$kind" = small ] && echo " and out"), paths ready,ready)"
    fi
done

# Every TCP connection of h1's srmd is IPv6, to h2 on either link.
conns=$(ip netns exec "$H1" ss -Htnp state established 2>/dev/null |
        grep "pid=${SRM_NETNS_AGENT_PID[$H1]}," || true)
v6=$(grep -cE '\[fd7[78]::1\]:[0-9]+ +\[fd7[78]::2\]:' <<<"$conns" || true)
other=$(grep -vcE '\[fd7[78]::1\]:[0-9]+ +\[fd7[78]::2\]:' <<<"$conns" || true)
[ -n "$conns" ] || other=0
if [ "${v6:-0}" -ge 4 ] && [ "$other" = 0 ]; then
    srm_pass "$H1's srmd has $v6 IPv6 connections to $H2 (2 channels x 2 paths, or more), none other"
else
    srm_fail "$H1's srmd: $v6 IPv6 connections to $H2, $other other (want >= 4 and 0):"
    printf '%s\n' "$conns" | sed 's/^/    /'
fi
for h in "$H1" "$H2"; do
    srm_netns_ping "$h" || srm_fail "srmd in $h no longer answers"
done
srm_netns_stop_agents
srm_cleanup
srm_hosts_down "$SRM_NETNS_PREFIX" "$SRM_LOG/cluster.log" 2>&1

# ------------------------------------------------------- 2. dual stack --
srm_netns_up 2 "d6$$" --ipv6
H1=${SRM_HOSTS[0]} H2=${SRM_HOSTS[1]}
# A second IPv4 address after the first: the agent keeps the first (it
# used to take the interface's last one). (IPv6 has no first: the kernel
# lists the newest first.)
"$SRM_NETNS_CLUSTER" exec "$H1" ip addr add 10.77.0.101/24 dev eth0
srm_netns_agent_start "$H1" "$SRM_LOG/srmd.auto.log" || srm_done
expect_paths "$H1" '10\.77\.0\.1:[0-9]+'
srm_netns_stop_agents

srm_netns_start_agents "$SRM_LOG/srmd.dual.%h.log" \
    UCX_SRM_ADDRESS_FAMILY=ipv6 || srm_done
expect_paths "$H1" '\[fd77::1\]:[0-9]+'
SRM_NETNS_SERVER=10.77.0.1
UCX_TLS=srm pair dual-tag_lat-8 -t tag_lat -s 8 -n 2000 -w 200
addr=$(srm_netns_status_get "$H1" '.nodes[0].address // empty')
if [[ $addr =~ ^\[fd77::2\]:[0-9]+$ ]]; then
    srm_pass "dual stack, ADDRESS_FAMILY=ipv6: $H1 names $H2 at $addr"
else
    srm_fail "dual stack, ADDRESS_FAMILY=ipv6: $H1 names its peer at '$addr'"
fi
srm_netns_stop_agents

srm_done
