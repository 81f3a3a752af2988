#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# failover.sh - what reliability costs srm: failover times over many
# injected faults, and throughput with failover on vs. off (vs. UCX tcp).
set -uo pipefail
export LC_ALL=C

PROG=${0##*/}
HERE=$(cd "$(dirname "$0")" && pwd)
TOP=$(cd "$HERE/../.." && pwd)
# shellcheck source=contrib/bench/lib.sh
. "$HERE/lib.sh"

usage() {
    cat <<USAGE
NAME
    $PROG - srm failover time distribution and the throughput cost of acks

SYNOPSIS
    $PROG [--build DIR] [--faults N] [--out FILE] [--quick] [--prefix NAME]
          [--keep-logs]

DESCRIPTION
    Part 1, failover time. Two simulated hosts with two links each
    (netns-cluster --two-links); one srmd per host with UCX_SRM_DEVICES=
    eth0,eth1, so every node channel has an active connection and a standby
    on the other link. One rank per host runs test/mpi/srm_stream_check
    (8 B..256 B messages, window 4, both directions, every message checked)
    over UCX_TLS=srm, printing every round slower than 2 ms with its end
    time. Meanwhile N faults are injected in h1 with 'srmctl fault', one
    every 1.2 s, alternating:
        reset  the active connection of the small channel gets a TCP reset
               (the standby takes over at once);
        mute   the active connections of both channels go silent, as a dead
               link does (detected after UCX_SRM_FAILOVER_TIMEOUT, 300 ms).
    A fault's failover time is the longest round that overlapped the
    second after it (2 ms if none was slower). Reported per kind: count,
    median, p99, max; and the checker's lost / duplicated / out-of-order /
    corrupt counts, which must be 0.

    Part 2, throughput. contrib/bench/hosts.sh runs twice, with
    UCX_SRM_FAILOVER=y and =n (each run also measures UCX tcp between the
    same hosts): tag_lat and tag_bw at 8 B, 64 KB and 1 MB, and the 8 B
    message rate with 1 and 4 processes per host. The table puts srm on,
    srm off and tcp side by side, with the on/off ratio.

OPTIONS
    --build DIR    srm build directory (default: ./build of the source tree)
    --faults N     faults in part 1 (default 100; --quick: 10)
    --out FILE     write the markdown report to FILE (default: stdout only)
    --quick        10 faults and hosts.sh --quick: a smoke run
    --prefix NAME  netns-cluster prefix (default fb<pid>)
    --keep-logs    keep the work directory even after a complete run

EXIT STATUS
    0 report written; 1 a run failed (logs kept); 2 bad usage.
USAGE
}

ORIG_ARGS=("$@")
BUILD=$TOP/build FAULTS='' OUT='' QUICK=0 PREFIX=fb$$ KEEP_LOGS=0 FAILED=0
while [[ $# -gt 0 ]]; do
    case $1 in
    --build) need_arg "$@"; BUILD=$2; shift 2 ;;
    --faults) need_arg "$@"
              if ! is_uint "$2" || (( $2 == 0 )); then bad "--faults wants a positive number"; fi
              FAULTS=$2; shift 2 ;;
    --out) need_arg "$@"; OUT=$2; shift 2 ;;
    --quick) QUICK=1; shift ;;
    --prefix) need_arg "$@"; PREFIX=$2; shift 2 ;;
    --keep-logs) KEEP_LOGS=1; shift ;;
    -h|--help) usage; exit 0 ;;
    *) bad "unknown option '$1'" ;;
    esac
done
: "${FAULTS:=$(( QUICK ? 10 : 100 ))}"
[[ $EUID -eq 0 ]] || die "needs root (network namespaces)"
require_tools " (contrib/install-deps.sh installs it)" mpicc mpirun awk jq
find_srm_build

MPIRUN=$TOP/contrib/netns-mpirun
SRM_SOCKET=srm-bench-fo-$$
PORT=7077
PIDS=()
declare -A AGENT=()
CLUSTER_UP=0

cleanup() {
    srm_kill_pids 2 "${PIDS[@]}" "${AGENT[@]}"
    cluster_down
    drop_work_dir
}

make_work_dir srm-failover
set_traps
info "work directory $WORK"

# ------------------------------------------------- part 1: failover time --
mpicc -O2 -Wall -o "$WORK/srm_stream_check" \
    "$TOP/test/mpi/srm_stream_check.c" >"$WORK/mpicc.log" 2>&1 ||
    { FAILED=1; cat "$WORK/mpicc.log" >&2; die "mpicc failed"; }
FAILED=1 # the logs stay if the cluster or an agent fails
PFX=$PREFIX
cluster_up 2 --two-links
for h in "${SRM_HOSTS[@]}"; do
    srm_agent_spawn_cmd "$h" "$WORK/srmd.$h.log" \
        UCX_SRM_DEVICES=eth0,eth1 UCX_SRM_TCP_PORT=$PORT -- -q
    "${SRM_AGENT_CMD[@]}" >"$WORK/srmd.$h.out" 2>&1 &
    AGENT[$h]=$!
    record_cmd "# agent in $h" ' &' "${SRM_AGENT_CMD[@]}"
done
for h in "${SRM_HOSTS[@]}"; do
    srm_agent_ready "$h" "${AGENT[$h]}" "$WORK/srmd.$h.log" ||
        die "srmd in $h did not come up (above)"
done
FAILED=0

stop=$WORK/stop
job=(env UCX_TLS=srm UCX_SRM_AGENT=never UCX_SRM_SOCKET="$SRM_SOCKET"
     "$MPIRUN" --prefix "$PREFIX" --ppn 1 --timeout $(( FAULTS * 3 + 120 ))
     -x LD_PRELOAD="$SRM_MODULE" -x UCX_TLS -x UCX_SRM_AGENT -x UCX_SRM_SOCKET
     -- "$WORK/srm_stream_check" -n 1000000000 -s 256 -w 4 -g 2 -f "$stop")
record_cmd "failover time: the checked stream" "" "${job[@]}"
"${job[@]}" >"$WORK/stream.log" 2>&1 &
JOB=$!
PIDS+=("$JOB")
for (( i = 0; i < 150; i++ )); do
    grep -q '^progress:' "$WORK/stream.log" 2>/dev/null && break
    kill -0 "$JOB" 2>/dev/null || break
    srm_nap 0.2
done
srm_nap 2 # every channel and standby up

info "part 1: $FAULTS faults in ${SRM_HOSTS[0]}, one every 1.2 s"
: >"$WORK/faults"
for (( i = 0; i < FAULTS; i++ )); do
    kill -0 "$JOB" 2>/dev/null || { FAILED=1; die "the stream ended early (see $WORK/stream.log)"; }
    t=$EPOCHREALTIME
    if (( i % 2 == 0 )); then
        srm_netns_ctl "${SRM_HOSTS[0]}" fault --kind small >>"$WORK/fault.out" 2>&1
        echo "reset $t" >>"$WORK/faults"
    else
        srm_netns_ctl "${SRM_HOSTS[0]}" fault --mute >>"$WORK/fault.out" 2>&1
        echo "mute $t" >>"$WORK/faults"
    fi
    srm_nap 1.2
done
touch "$stop"
wait "$JOB"
rc=$?
forget_pid "$JOB"
RESULT=$(grep '^ranks ' "$WORK/stream.log" | tail -1)
[[ $rc -eq 0 && -n $RESULT ]] ||
    { FAILED=1; tail -20 "$WORK/stream.log" >&2; die "the stream check failed (exit $rc)"; }
MISSED=$(grep -c '^\(reset\|muted\) 0 ' "$WORK/fault.out")

# failover cost of each fault: the longest round that overlapped [t, t+1]
awk '
    FNR == NR { kind[NR] = $1; t[NR] = $2; n = NR; next }
    $1 == "gap" { e[++g] = $2; d[g] = $3 }
    END {
        for (i = 1; i <= n; i++) {
            c = 2
            for (j = 1; j <= g; j++)
                if (e[j] >= t[i] && e[j] - d[j] / 1000 <= t[i] + 1 && d[j] > c)
                    c = d[j]
            print kind[i], c
        }
    }' "$WORK/faults" "$WORK/stream.log" >"$WORK/costs"

cost_stats() { # KIND: "n median p99 max" of the costs of KIND, in ms
    local n med max p99
    read -r n med _ max p99 _ < <(awk -v k="$1" '$1 == k { print $2 }' \
                                   "$WORK/costs" | "$SRM_STATS" summary)
    if (( n == 0 )); then
        echo "0 - - -"
    else
        printf '%d %.1f %.1f %.1f\n' "$n" "$med" "$p99" "$max"
    fi
}
read -r RN RMED RP99 RMAX <<<"$(cost_stats reset)"
read -r MN MMED MP99 MMAX <<<"$(cost_stats mute)"

# --------------------------------------------- part 2: the cost of acks --
srm_kill_pids 2 "${AGENT[@]}"
AGENT=()
cluster_down

hosts_args=(--build "$BUILD" --sizes "8,64K,1M" --procs "1,4" --prefix "${PREFIX}t")
(( QUICK )) && hosts_args+=(--quick)
for mode in y n; do
    info "part 2: hosts.sh with UCX_SRM_FAILOVER=$mode"
    record_cmd "throughput, failover $mode" "" env UCX_SRM_FAILOVER=$mode \
        "$HERE/hosts.sh" "${hosts_args[@]}" --out "$WORK/hosts-$mode.md"
    UCX_SRM_FAILOVER=$mode "$HERE/hosts.sh" "${hosts_args[@]}" \
        --out "$WORK/hosts-$mode.md" >"$WORK/hosts-$mode.log" 2>&1 ||
        { FAILED=1; tail -20 "$WORK/hosts-$mode.log" >&2; die "hosts.sh (failover $mode) failed"; }
done

# row DAT KEY FORMAT: "srm_on | srm_off | tcp | on/off" for KEY (size or
# P) from the .dat files of the two hosts.sh runs
row() {
    local on off
    on=$(awk -v k="$2" '$1 == k { print $2, $3 }' "$WORK/hosts-y-$1.dat")
    off=$(awk -v k="$2" '$1 == k { print $2 }' "$WORK/hosts-n-$1.dat")
    awk -v on="$on" -v off="$off" -v f="$3" 'BEGIN {
        split(on, a, " ")
        r = (off + 0 > 0) ? a[1] / off : 0
        printf f " | " f " | " f " | %.2f", a[1], off, a[2], r }'
}

report() {
    printf '# srm: failover time and the cost of reliability\n\n'
    printf -- '- date: %s; machine: %s, %s cores, Linux %s\n' "$(date -u '+%Y-%m-%d %H:%M UTC')" \
        "$(hostname)" "$(nproc)" "$(uname -r)"
    printf -- '- command: %s\n\n' "$(quote "$0" "${ORIG_ARGS[@]}")"
    printf '## Failover time (2 hosts, 2 links each, %d faults)\n\n' "$FAULTS"
    printf '| fault | count | median ms | p99 ms | max ms |\n|---|---|---|---|---|\n'
    printf '| reset (TCP RST on the active small connection) | %s | %s | %s | %s |\n' "$RN" "$RMED" "$RP99" "$RMAX"
    printf '| mute (active connections of both channels go silent) | %s | %s | %s | %s |\n\n' "$MN" "$MMED" "$MP99" "$MMAX"
    printf 'Checker: %s. Faults that found no connection to break: %s.\n' "$RESULT" "$MISSED"
    printf 'Failover time: the longest round of the stream (window 4, 8-256 B each way) that overlapped the second after the fault; 2 ms when none took longer.\n\n'
    printf '## Throughput: failover on vs. off (2 hosts; medians of hosts.sh)\n\n'
    printf '| test | srm on | srm off | tcp | on/off |\n|---|---|---|---|---|\n'
    for k in 8 65536 1048576; do
        printf '| tag_lat %s B, us (lower is better) | %s |\n' "$k" "$(row lat "$k" %.1f)"
    done
    for k in 8 65536 1048576; do
        printf '| tag_bw %s B, MB/s | %s |\n' "$k" "$(row bw "$k" %.1f)"
    done
    for k in 1 4; do
        printf '| 8 B message rate, P=%s, msg/s | %s |\n' "$k" "$(row mr "$k" %.0f)"
    done
    printf '\nFull reports: hosts-y.md and hosts-n.md in the work directory; commands in commands.sh.\n'
}

if [[ -n $OUT ]]; then
    report | tee "$OUT"
    cp "$WORK"/hosts-*.md "$WORK"/hosts-*.png "$(dirname "$OUT")/" 2>/dev/null || true
else
    report
fi
