#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# local.sh - compare UCX_TLS=srm with UCX's own tcp (over lo) and posix
# transports on one host, using ucx_perftest, and print a markdown table.
set -euo pipefail

PROG=${0##*/}
export LC_ALL=C
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/lib.sh"

# ---------------------------------------------------------------- usage --

usage() {
    cat <<USAGE
NAME
    $PROG - single-host ucx_perftest comparison of srm, tcp (lo) and posix

SYNOPSIS
    $PROG [--build DIR] [--reps N] [--iters N] [--policy POLICY]
             [--out FILE] [--port BASE] [--timeout SEC] [--wait-idle SEC]
             [--retry-disturbed N] [--keep-logs] [--quick]
    $PROG -h | --help

DESCRIPTION
    Runs pairs of ucx_perftest processes (a server and a client connecting
    to 127.0.0.1) on this host, once per transport, test and repetition:

      srm    UCX_TLS=srm with LD_PRELOAD of the srm module, through an srmd
             agent that this script starts for itself on the socket
             srm-bench-<pid> (clients run with UCX_SRM_AGENT=never, so they
             never fall back to another agent);
      tcp    UCX_TLS=tcp UCX_NET_DEVICES=lo (UCT level: -x tcp -d lo);
      posix  UCX_TLS=posix, shared memory (UCT level: -x posix -d memory).

    The tests, all with one server and one client process:

      UCP tag_lat  8 B    ping-pong latency; both the p50 that ucx_perftest
                          reports (over the samples it keeps of the last
                          report interval) and the overall average (us)
      UCP tag_bw   64 KB  bandwidth, overall (MiB/s; ucx_perftest's "MB/s"
                          is 2^20 bytes per second)
      UCP tag_bw   8 B    message rate, overall (msg/s)
      UCT am_lat   8 B    ping-pong latency, p50 and average (us)
      UCT am_bw    8 B    message rate, overall (msg/s)

    Each number is read from the client's "Final:" line, whose columns are
    iterations, typical (p50) latency, average latency of the last report
    interval, overall average latency, bandwidth (last interval, overall),
    message rate (last interval, overall).  Every cell of the table is the
    median of R repetitions followed by [min, max]; the last column is the
    ratio of the srm and tcp medians (for latencies below 1 means srm is
    faster, for bandwidth and message rate above 1 means srm is faster).

    The table is printed only when every run succeeded.  A run fails when
    either process exits non-zero, runs into --timeout, or the client prints
    no parseable "Final:" line, and an srm run also when srmd exits during
    it (its ranks would otherwise wait for --timeout); the script then
    stops at once, prints the
    command lines and the logs of the failed run, and exits 1.  The
    exact command lines of all runs are printed after the table (and written
    to --out).

    ucx_perftest busy-polls: on a host with two cores both are taken by the
    two ranks, and the srm agent must be woken (and must preempt a poller)
    for every hop.  That is the point of this benchmark, not a flaw of it:
    it shows the agent's wake-up cost.  The numbers are only meaningful on
    an otherwise idle host: two more busy processes on two cores turn
    microseconds into scheduler ticks (milliseconds).  For every run the
    script compares the CPU time the kernel accounted (/proc/stat) with the
    CPU time of its own processes and the agent; a run during which other
    processes took more than 5 % of a core, or before or after which other
    processes were running, counts as disturbed: the progress line says so,
    the report's header gives the count, and the table marks the cells
    with such runs with "*".  See --wait-idle.  There is no mode in which
    the ranks yield the CPU: ucx_perftest always busy-polls.

OPTIONS
    --build DIR
        The srm build directory, holding srmd, srmctl and
        .libs/libuct_srm.so.0 (or libuct_srm.so.0).  Default: the
        environment variable SRM_BUILD_DIR; else the top of the source tree
        this script is in, if it was built in-tree.
    --reps N
        Repetitions per transport and test (default 3; 1 with --quick).
    --iters N
        Iterations (-n) of the latency and 64 KB bandwidth runs; the 8 B
        message-rate runs use 10*N.  Warm-up (-w) is N/10.  Default 10000
        (1000 with --quick).
    --policy POLICY
        Poll policy of the benchmark's srmd: local, hybrid, block, auto or spin
        (sets UCX_SRM_POLL for srmd).  Default: what srmd would use anyway,
        i.e. its built-in default or an inherited UCX_SRM_POLL.
    --out FILE
        Also write the report (header, table, notes, commands) to FILE.
        FILE is written only if all runs succeeded.
    --port BASE
        First TCP port for ucx_perftest's rendezvous; each run takes the
        next port that /proc/net/tcp{,6} shows unused.  Default: a random
        port in 10000..27999 (below the usual ephemeral range).
    --timeout SEC
        Kill a run (server and client) that takes longer than SEC seconds
        and fail (default 120; 30 with --quick).
    --wait-idle SEC
        Before each run, wait up to SEC seconds for other processes to stop
        running (default 0: do not wait).  Runs that start on a busy host
        anyway are counted and flagged in the report.
    --retry-disturbed N
        Repeat a disturbed run (see above) up to N times, each time after
        --wait-idle, and keep the last attempt (default 0: keep every run
        as it came).  The discarded attempts are counted in the report and
        marked in its command list.
    --keep-logs
        Keep the directory with the per-run logs even when all runs
        succeeded (it is always kept on failure).
    --quick
        Smoke test for CI: --iters 1000 --reps 1 unless given explicitly;
        takes well under 30 s on an idle host.
    -h, --help
        Print this help and exit.

ENVIRONMENT
    SRM_BUILD_DIR     default for --build.
    UCX_PERFTEST      the ucx_perftest program (default: from PATH).
    UCX_SRM_*         inherited by srmd (see "srmd --config"), e.g.
                      UCX_SRM_NICE, UCX_SRM_SPIN_TIME, UCX_SRM_QUANTUM;
                      --policy overrides UCX_SRM_POLL.
    UCX_*             other UCX variables are passed to every ucx_perftest
                      and listed in the report; UCX_TLS, UCX_NET_DEVICES
                      and LD_PRELOAD are set per transport by the script.
    TMPDIR            where the log directory is created (default /tmp).

FILES
    \$TMPDIR/srm-bench.XXXXXX/   per-run server and client output, the
                                srmd log and the command list.

EXIT STATUS
    0 when all runs succeeded and the table was printed, 1 on a failed
    run or an environment problem, 2 on bad usage.  All processes that the
    script started (ucx_perftest ranks, timeout wrappers, srmd) are gone
    when it exits, also on failure or interruption.

EXAMPLES
    SRM_BUILD_DIR=/tmp/build $PROG
    $PROG --build /tmp/build --quick
    $PROG --build /tmp/build --policy block --reps 5 --out bench.md
USAGE
}

# -------------------------------------------------------------- options --

BUILD=${SRM_BUILD_DIR:-}
REPS='' ITERS='' POLICY='' OUT='' PORT_BASE='' TIMEOUT='' KEEP_LOGS=0 QUICK=0 WAIT_IDLE=0 RETRY=0

while [[ $# -gt 0 ]]; do
    common_option "$@"
    if (( OPT_SHIFT > 0 )); then shift "$OPT_SHIFT"; continue; fi
    case $1 in
    --policy)    need_arg "$@"; POLICY=$2; shift 2 ;;
    --policy=*)  POLICY=${1#*=}; shift ;;
    --wait-idle) need_arg "$@"; WAIT_IDLE=$2; shift 2 ;;
    --wait-idle=*) WAIT_IDLE=${1#*=}; shift ;;
    --retry-disturbed) need_arg "$@"; RETRY=$2; shift 2 ;;
    --retry-disturbed=*) RETRY=${1#*=}; shift ;;
    -h|--help)   usage; exit 0 ;;
    --yield)     bad "--yield is not supported: ucx_perftest always busy-polls" ;;
    *)           bad "unknown argument: $1" ;;
    esac
done

if [[ $QUICK == 1 ]]; then
    : "${REPS:=1}" "${ITERS:=1000}" "${TIMEOUT:=30}"
else
    : "${REPS:=3}" "${ITERS:=10000}" "${TIMEOUT:=120}"
fi
check_reps
check_iters 10
if ! is_uint "$RETRY" || (( RETRY > 20 )); then
    bad "--retry-disturbed must be 0..20, not '$RETRY'"
fi
if ! is_uint "$WAIT_IDLE"; then
    bad "--wait-idle must be a number of seconds, not '$WAIT_IDLE'"
fi
check_timeout
case $POLICY in ''|auto|spin|block|hybrid|local) ;; *) bad "--policy must be auto, spin, block, hybrid or local, not '$POLICY'" ;; esac
if [[ -z $PORT_BASE ]]; then
    PORT_BASE=$(( 10000 + RANDOM % 18000 ))
fi
check_port 65000

if [[ -n $OUT ]]; then   # fail now, not after minutes of runs
    out_dir=$(dirname -- "$OUT")
    [[ -d $out_dir && -w $out_dir ]] || bad "--out: directory '$out_dir' does not exist or is not writable"
    [[ ! -d $OUT ]] || bad "--out: '$OUT' is a directory"
fi

# ---------------------------------------------------------- environment --

T_START=$EPOCHREALTIME
START_DATE=$(date -u '+%Y-%m-%d %H:%M:%S UTC')

if [[ -z $BUILD ]]; then
    top=$(cd "$(dirname "$0")/../.." && pwd)
    [[ -x $top/srmd ]] ||
        die "no srm build given: use --build DIR or set SRM_BUILD_DIR (e.g. /tmp/build)"
    BUILD=$top
fi
[[ -d $BUILD ]] || die "build directory '$BUILD' does not exist"
find_srm_build
find_ucx_tools
require_tools "" timeout awk sort paste ps getconf mktemp jq

# Environment every ucx_perftest starts from: the caller's, without the
# variables this script sets per transport.
BASE_ENV=(env -u LD_PRELOAD -u UCX_TLS -u UCX_NET_DEVICES LC_ALL=C)
SRM_SOCKET=srm-bench-$$
SRM_ENV=(LD_PRELOAD="$SRM_MODULE" UCX_SRM_SOCKET="$SRM_SOCKET" UCX_SRM_AGENT=never
         UCX_SRM_AGENT_PATH="$SRM_SRMD")

# Device of a transport as ucx_info -d lists it (first match, or a given one).
uct_device() {  # TL [WANTED-DEVICE] [ucx_info env...]
    local tl=$1 want=$2; shift 2
    "${BASE_ENV[@]}" "$@" "$UCX_INFO" -d 2>/dev/null | awk -v tl="$tl" -v want="$want" '
        $2 == "Transport:" { cur = $3; next }
        $2 == "Device:" && cur == tl && (want == "" || $3 == want) && dev == "" { dev = $3 }
        END { if (dev != "") print dev }'
}
SRM_DEV=$(uct_device srm "" "${SRM_ENV[@]}")
[[ -n $SRM_DEV ]] || die "ucx_info does not list the srm transport with LD_PRELOAD=$SRM_MODULE (module not loadable?)"
TCP_DEV=$(uct_device tcp lo)
[[ -n $TCP_DEV ]] || die "ucx_info lists no tcp device 'lo' (is the loopback interface up?)"
POSIX_DEV=$(uct_device posix "")
[[ -n $POSIX_DEV ]] || die "ucx_info lists no posix transport"

NCPU=$(nproc)
WARMUP=$(( ITERS / 10 > 0 ? ITERS / 10 : 1 ))
MR_ITERS=$(( ITERS * 10 ))
MR_WARMUP=$(( MR_ITERS / 10 ))

# -------------------------------------------------------------- cleanup --

make_work_dir srm-bench
PIDS=()          # every background process we started and have not reaped
AGENT_PID=
FAILED=1         # cleared when the report is complete

cleanup() {
    local rc=$?
    trap - EXIT INT TERM
    srm_kill_pids 2 "${PIDS[@]}" ${AGENT_PID:+"$AGENT_PID"}
    cpu_group_leave
    drop_work_dir
    exit "$rc"
}
set_traps
cpu_group_join srm-bench

# --------------------------------------------------------------- helpers --

# Socket tables of the kernel (tcp6 is absent when IPv6 is disabled).
PROC_TCP=()
for f in /proc/net/tcp /proc/net/tcp6; do [[ -r $f ]] && PROC_TCP+=("$f"); done
[[ ${#PROC_TCP[@]} -gt 0 ]] || die "cannot read /proc/net/tcp"

# Is there a socket on local TCP port $1 in state $2 (hex, e.g. 0A for
# LISTEN; empty: any state)?
port_state() { port_in_state "$1" "$2" "${PROC_TCP[@]}"; }
port_in_use()    { port_state "$1" ""; }
port_listening() { port_state "$1" 0A; }
NEXT_PORT=$PORT_BASE
take_port() {
    while port_in_use "$NEXT_PORT"; do
        NEXT_PORT=$(( NEXT_PORT + 1 ))
        (( NEXT_PORT <= 65535 )) || die "ran out of free TCP ports above $PORT_BASE"
    done
    PORT=$NEXT_PORT
    NEXT_PORT=$(( NEXT_PORT + 1 ))
}

DISTURBED_RUNS=0        # runs in the table that were disturbed
FOREIGN_CPU_TOTAL=0   # CPU time (s) of other processes during those
DISCARDED=0           # disturbed runs repeated (--retry-disturbed)
DONE_RUNS=0
declare -A DISTURBED_IN=()   # "$tl/$metric" -> number of disturbed runs
IDLE_WAIT_TOTAL=0
declare -A FOREIGN_NAMES=()
# Running processes not started by this script (see foreign_load in lib.sh).
other_load() { foreign_load "${AGENT_PID:-}"; }

# ----------------------------------------------------------------- agent --

AGENT_CMD=(env -u UCX_SRM_SOCKET -u LD_PRELOAD)
[[ -n $POLICY ]] && AGENT_CMD+=(UCX_SRM_POLL="$POLICY")
AGENT_CMD+=("$SRM_SRMD" -s "$SRM_SOCKET" -q)

start_agent() {
    "$SRM_SRMCTL" -s "$SRM_SOCKET" -t 1 ping >/dev/null 2>&1 &&
        die "an agent already answers on @$SRM_SOCKET"
    "${AGENT_CMD[@]}" >"$WORK/srmd.log" 2>&1 &
    AGENT_PID=$!
    local i
    for (( i = 0; i < 100; i++ )); do
        kill -0 "$AGENT_PID" 2>/dev/null || { wait "$AGENT_PID" || true
            cat "$WORK/srmd.log" >&2; AGENT_PID=; die "srmd exited at start (log above)"; }
        "$SRM_SRMCTL" -s "$SRM_SOCKET" -t 1 ping >/dev/null 2>&1 && break
        srm_nap 0.05
    done
    (( i < 100 )) || die "srmd does not answer on @$SRM_SOCKET after 5 s"
    record_cmd '# agent' ' &' "${AGENT_CMD[@]}"
}

agent_status_get() {  # JQ-FILTER: from the agent's `srmctl status --json`
    "$SRM_SRMCTL" -s "$SRM_SOCKET" -t 2 status --json 2>/dev/null |
        srm_json_get "$1"
}

# ------------------------------------------------------------------ runs --

RUN_NO=0
TOTAL_RUNS=0

show_failure() {  # DIR: print the commands and logs of a failed run
    local d=$1 f
    {
        printf '\n--- failed run: commands ---\n'
        cat "$d/cmd"
        for f in server client; do
            [[ -e $d/$f.log ]] || continue
            printf -- '--- %s output (%s) ---\n' "$f" "$d/$f.log"
            tail -n 40 "$d/$f.log" || true
        done
        if [[ -s $WORK/srmd.log ]]; then
            printf -- '--- srmd log (%s) ---\n' "$WORK/srmd.log"
            tail -n 40 "$WORK/srmd.log"
        fi
    } >&2
}

# run_one TL API TEST SIZE ITERS WARMUP REP METRICS
#   METRICS: "name:field ..." - the fields (1-based, of the 8 numbers of the
#   "Final:" line) to take.  Dies if the run fails.  Sets FINAL, RUN_VALUES
#   (name value name value ...), SUMMARY, DISTURBED (0/1), FOREIGN_CPU (s)
#   and FOREIGN_SEEN (names of other processes seen running).
run_one() {
    local tl=$1 api=$2 test=$3 size=$4 iters=$5 warmup=$6 rep=$7 metrics=$8
    local envs=() args=() d srv cli rc_s=0 rc_c=0 i
    RUN_NO=$(( RUN_NO + 1 ))
    case $tl in
    srm)   envs=("${SRM_ENV[@]}")
           [[ $api == ucp ]] && envs+=(UCX_TLS=srm) || args+=(-x srm -d "$SRM_DEV") ;;
    tcp)   [[ $api == ucp ]] && envs+=(UCX_TLS=tcp UCX_NET_DEVICES=lo) || args+=(-x tcp -d "$TCP_DEV") ;;
    posix) [[ $api == ucp ]] && envs+=(UCX_TLS=posix) || args+=(-x posix -d "$POSIX_DEV") ;;
    esac
    take_port
    args=(-p "$PORT" -t "$test" -n "$iters" -w "$warmup" -s "$size" "${args[@]}")
    local scmd=("${BASE_ENV[@]}" "${envs[@]}" "$PERFTEST" "${PERFTEST_RTE[@]}" "${args[@]}")
    local ccmd=("${scmd[@]}" 127.0.0.1)

    printf -v d '%s/%03d-%s-%s-%s-r%s' "$WORK" "$RUN_NO" "$tl" "$test" "$size" "$rep"
    mkdir -p "$d"
    {
        printf '# %s, %s %s %s B, rep %d\n' "$tl" "$api" "$test" "$size" "$rep"
        printf '%s &\n%s\n' "$(quote "${scmd[@]}")" "$(quote "${ccmd[@]}")"
    } >"$d/cmd"
    cat "$d/cmd" >>"$CMDS"

    local fl waited=0
    fl=$(other_load)
    while [[ -n $fl ]] && (( waited < WAIT_IDLE )); do
        (( waited > 0 )) || info "waiting up to ${WAIT_IDLE} s for other processes to stop: $fl"
        srm_nap 1
        waited=$(( waited + 1 ))
        fl=$(other_load)
    done
    IDLE_WAIT_TOTAL=$(( IDLE_WAIT_TOTAL + waited ))
    [[ $tl != srm ]] || kill -0 "$AGENT_PID" 2>/dev/null || {
        show_failure "$d"; die "srmd (pid $AGENT_PID) is gone before run $RUN_NO"; }
    mark_start "${AGENT_PID:-}"

    timeout -k 5 "$TIMEOUT" "${scmd[@]}" >"$d/server.log" 2>&1 &
    srv=$!
    PIDS+=("$srv")
    for (( i = 0; i < 200; i++ )); do
        port_listening "$PORT" && break
        kill -0 "$srv" 2>/dev/null || break
        srm_nap 0.025
    done
    if ! port_listening "$PORT"; then
        srm_kill_pids 2 "$srv"; forget_pid "$srv"
        show_failure "$d"
        die "run $RUN_NO: the ucx_perftest server did not listen on port $PORT"
    fi

    timeout -k 5 "$TIMEOUT" "${ccmd[@]}" >"$d/client.log" 2>&1 &
    cli=$!
    PIDS+=("$cli")
    if [[ $tl == srm ]]; then
        # Wake up when the client or the agent ends: without its agent an
        # srm rank may wait forever, and the timeout would hide the cause.
        local first=
        srm_wait_first first "$cli" "$AGENT_PID" || rc_c=$?
        if [[ $first != "$cli" ]]; then
            AGENT_PID=
            srm_kill_pids 2 "$cli" "$srv"
            forget_pid "$cli"; forget_pid "$srv"
            show_failure "$d"
            die "run $RUN_NO ($tl $test ${size} B rep $rep): srmd exited during the run (status $rc_c)"
        fi
    else
        wait "$cli" || rc_c=$?
    fi
    forget_pid "$cli"
    if (( rc_c != 0 )); then
        # a failed client leaves the server waiting: do not wait for it
        srm_kill_pids 2 "$srv"
    fi
    wait "$srv" || rc_s=$?
    forget_pid "$srv"

    # The run is disturbed if other processes used more than 5 % of a core
    # during it, or were seen running right before or after it.
    local fl_after
    mark_end "${AGENT_PID:-}"
    fl_after=$(other_load)
    # shellcheck disable=SC2086  # word lists on purpose
    fl=$(printf '%s\n' $fl $fl_after | awk 'NF && !seen[$1]++ { printf "%s%s", sep, $1; sep = " " }')
    judge_run "$fl"

    if (( rc_c != 0 || rc_s != 0 )); then
        show_failure "$d"
        local why=
        (( rc_c == 124 || rc_s == 124 )) && why=" (timed out after ${TIMEOUT} s: hang?)"
        die "run $RUN_NO ($tl $test ${size} B rep $rep) failed: client exit $rc_c, server exit $rc_s$why"
    fi
    # "inf"/"nan" are rejected below only if a column the table uses has them.
    FINAL=$(final_line "$d/client.log")
    if [[ -z $FINAL ]]; then
        show_failure "$d"
        die "run $RUN_NO ($tl $test ${size} B rep $rep): no parseable 'Final:' line in the client output"
    fi
    local n
    n=$(final_field "$FINAL" 1)
    if [[ $n != "$iters" ]]; then
        show_failure "$d"
        die "run $RUN_NO: the client reports $n iterations, expected $iters"
    fi
    if [[ $tl == srm ]] && ! kill -0 "$AGENT_PID" 2>/dev/null; then
        show_failure "$d"
        die "srmd (pid $AGENT_PID) died during run $RUN_NO"
    fi
    local mf m f v
    SUMMARY=
    RUN_VALUES=()
    for mf in $metrics; do
        m=${mf%%:*} f=${mf##*:}
        v=$(final_field "$FINAL" "$f")
        if ! is_number "$v"; then
            show_failure "$d"
            die "run $RUN_NO ($tl $test ${size} B rep $rep): column $f of the 'Final:' line is '$v'"
        fi
        RUN_VALUES+=("$m" "$v")
        SUMMARY+=" $m=$v"
    done
    SUMMARY+=" [foreign CPU ${FOREIGN_CPU} s]"
    if (( DISTURBED )); then
        SUMMARY+=" DISTURBED${fl:+ (running: $fl)}"
    fi
}

# Field numbers in FINAL (1-based): 1 iters, 2 p50 lat, 3 avg lat (last
# interval), 4 overall lat, 5 bw (last interval), 6 overall bw, 7 msg rate
# (last interval), 8 overall msg rate.
declare -A VALUES=()   # "$tl/$metric" -> space-separated values

TRANSPORTS=(srm tcp posix)
# test id | api | ucx_perftest test | size | iters | warmup | metric:field ...
TESTS=(
    "ucp_lat|ucp|tag_lat|8|$ITERS|$WARMUP|ucp_lat_p50:2 ucp_lat_avg:4"
    "ucp_bw|ucp|tag_bw|65536|$ITERS|$WARMUP|ucp_bw:6"
    "ucp_mr|ucp|tag_bw|8|$MR_ITERS|$MR_WARMUP|ucp_mr:8"
    "uct_lat|uct|am_lat|8|$ITERS|$WARMUP|uct_lat_p50:2 uct_lat_avg:4"
    "uct_mr|uct|am_bw|8|$MR_ITERS|$MR_WARMUP|uct_mr:8"
)
# metric | row label | kind (lat: us, bw: MiB/s, mr: msg/s)
ROWS=(
    "ucp_lat_p50|UCP tag_lat 8 B, latency p50 (us)|lat"
    "ucp_lat_avg|UCP tag_lat 8 B, latency avg (us)|lat"
    "ucp_bw|UCP tag_bw 64 KB, bandwidth (MiB/s)|bw"
    "ucp_mr|UCP tag_bw 8 B, message rate (msg/s)|mr"
    "uct_lat_p50|UCT am_lat 8 B, latency p50 (us)|lat"
    "uct_lat_avg|UCT am_lat 8 B, latency avg (us)|lat"
    "uct_mr|UCT am_bw 8 B, message rate (msg/s)|mr"
)

TOTAL_RUNS=$(( ${#TESTS[@]} * ${#TRANSPORTS[@]} * REPS ))

start_agent
AGENT_POLICY=$(agent_status_get "$POLICY_JQ")
AGENT_NICE=$(ps -o ni= -p "$AGENT_PID" | tr -d ' ')
info "srmd pid $AGENT_PID on @$SRM_SOCKET: $AGENT_POLICY, nice $AGENT_NICE"
info "$TOTAL_RUNS runs: ${#TESTS[@]} tests x ${#TRANSPORTS[@]} transports x $REPS reps; logs in $WORK"

# Repetitions are the outer loop, so slow drifts of the host spread over
# all transports alike instead of hitting one of them.
for (( rep = 1; rep <= REPS; rep++ )); do
    for spec in "${TESTS[@]}"; do
        IFS='|' read -r _id api test size iters warmup metrics <<<"$spec"
        for tl in "${TRANSPORTS[@]}"; do
            for (( attempt = 0; ; attempt++ )); do
                run_one "$tl" "$api" "$test" "$size" "$iters" "$warmup" "$rep" "$metrics"
                (( DISTURBED && attempt < RETRY )) || break
                DISCARDED=$(( DISCARDED + 1 ))
                printf '# ^ discarded: disturbed by other processes (%s s of CPU), repeated\n' "$FOREIGN_CPU" >>"$CMDS"
                info "[$(( DONE_RUNS + 1 ))/$TOTAL_RUNS] $tl $api $test ${size} B rep $rep:$SUMMARY; repeating ($(( attempt + 1 ))/$RETRY)"
            done
            DONE_RUNS=$(( DONE_RUNS + 1 ))
            for (( i = 0; i < ${#RUN_VALUES[@]}; i += 2 )); do
                m=${RUN_VALUES[i]}
                VALUES[$tl/$m]+="${RUN_VALUES[i + 1]} "
                (( DISTURBED == 0 )) || DISTURBED_IN[$tl/$m]=$(( ${DISTURBED_IN[$tl/$m]:-0} + 1 ))
            done
            (( DISTURBED == 0 )) || tally_disturbed
            info "[$DONE_RUNS/$TOTAL_RUNS] $tl $api $test ${size} B rep $rep:$SUMMARY"
        done
    done
done

AGENT_COUNTERS=$(agent_status_get "$COUNTERS_JQ")
srm_kill_pids 2 "$AGENT_PID"
AGENT_PID=
T_END=$EPOCHREALTIME
ELAPSED=$(seconds_between "$T_START" "$T_END" %.1f)
if [[ -s $WORK/srmd.log ]]; then
    info "srmd logged warnings or errors:"
    sed 's/^/    /' "$WORK/srmd.log" >&2
fi

# ---------------------------------------------------------------- report --

report() {
    local row metric label kind
    printf '# srm vs tcp vs posix on one host (ucx_perftest)\n\n'
    printf -- '- date: %s; host: %s, %s, %d cores (%s), kernel %s\n' \
        "$START_DATE" "$(uname -n)" "$(uname -m)" "$NCPU" \
        "$(cpu_model)" "$(uname -r)"
    printf -- '- UCX %s; %s; srm module %s\n' \
        "$(ucx_version)" "$(srmd_version)" "$SRM_MODULE"
    printf -- '- srmd: %s, nice %s%s\n' "$AGENT_POLICY" "$AGENT_NICE" \
        "$([[ -n $POLICY ]] && printf ' (--policy %s)' "$POLICY" || printf ' (agent default policy)')"
    printf -- '- transports: srm = UCX_TLS=srm (UCT -x srm -d %s); tcp = UCX_TLS=tcp UCX_NET_DEVICES=lo (UCT -x tcp -d %s); posix = UCX_TLS=posix (UCT -x posix -d %s)\n' \
        "$SRM_DEV" "$TCP_DEV" "$POSIX_DEV"
    printf -- '- %d run(s) per cell; -n %d (latency, 64 KB) and %d (8 B message rate), warm-up -n/10%s\n' \
        "$REPS" "$ITERS" "$MR_ITERS" "$([[ $QUICK == 1 ]] && printf '; --quick smoke run, not a measurement')"
    if (( NCPU <= 2 )); then
        printf -- '- ucx_perftest busy-polls: both cores are taken by the ranks; the agent must be woken for every hop\n'
    else
        printf -- '- ucx_perftest busy-polls: two of the %d cores are taken by the ranks; the agent competes for the rest\n' "$NCPU"
    fi
    print_inherited_ucx
    print_disturbance runs
    if (( REPS > 1 )); then
        printf '\nCells: median [min, max] of %d runs.' "$REPS"
    else
        printf '\nCells: a single run each (no spread; use --reps).'
    fi
    printf ' Last column: srm / tcp (latency: < 1 means srm is faster; bandwidth, message rate: > 1 means srm is faster).\n\n'

    table_head metric srm 'tcp (lo)' posix srm/tcp
    for row in "${ROWS[@]}"; do
        IFS='|' read -r metric label kind <<<"$row"
        table_row "$label" "$kind" "$metric"
    done

    printf '\nNotes:\n'
    printf -- '- p50 is the "typical" latency ucx_perftest prints (over the samples it keeps of its last report interval); avg is its "overall" average over all -n iterations. Latency is half a round trip.\n'
    printf -- '- UCP tag_bw 8 B counts sends completed at the sender (injection rate); UCT am_bw is flow controlled (-W 127 by default).\n'
    printf -- '- MiB/s is what ucx_perftest calls MB/s (2^20 bytes per second).\n'
    [[ -z $AGENT_COUNTERS ]] || printf -- '- srmd counters after all srm runs: %s\n' "$AGENT_COUNTERS"
    printf -- '- %d runs' "$TOTAL_RUNS"
    (( DISCARDED == 0 )) || printf ' (plus %d disturbed runs repeated and discarded, --retry-disturbed %d)' "$DISCARDED" "$RETRY"
    printf '; %s s wall time in all' "$ELAPSED"
    if (( IDLE_WAIT_TOTAL > 0 )); then
        printf ', %d s of it waiting for the host to become idle' "$IDLE_WAIT_TOTAL"
    fi
    printf '.\n'

    printf '\n## Commands\n\n'
    printf 'Each run: the server line in the background, then the client line; every command ran under "timeout -k 5 %d".\n\n' "$TIMEOUT"
    printf '```sh\n'
    cat "$CMDS"
    printf '```\n'
}

REPORT=$WORK/report.md
report >"$REPORT"
if [[ -n $OUT ]]; then
    write_out "$OUT" cat "$REPORT"
fi
cat "$REPORT"
FAILED=0
