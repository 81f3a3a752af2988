# lib.sh - shared helpers of the srm system tests (sourced, bash).
#
# A test does:
#     . "$(dirname "$0")/lib.sh"
#     srm_require_cmd ucx_perftest      # SKIP (exit 77) when missing
#     srm_agent_start                   # private srmd on a private socket
#     srm_perftest_pair tag_lat 60 -t tag_lat -n 1000 -s 8 || srm_fail ...
#     srm_done                          # exit 0, or 1 after any srm_fail
#
# What it sets up:
#   SRM_BUILD_DIR   the build tree (or install prefix) under test: the
#                   environment's value, else the current directory or the
#                   source tree when one of them holds a build
#   SRM_SRMD, SRM_SRMCTL, SRM_MODULE, SRM_RUN   the pieces of that build
#   LD_PRELOAD, UCX_SRM_AGENT_PATH              so that UCX finds srm
#   UCX_SRM_SOCKET  srm-test-<test>-<pid>: every test has its own agent
#   SRM_LOG         this test's log directory, under SRM_TEST_LOG_DIR
#                   (default /tmp/srm-system-tests)
# Every process a test starts in the background is killed by PID when the
# test exits (trap), and so is an agent that answers on the test's socket.

SRM_TEST_NAME=${SRM_TEST_NAME:-$(basename "$0" .sh)}
SRM_SYSTEM_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
SRM_SRCDIR=$(cd "$SRM_SYSTEM_DIR/../.." && pwd)
SRM_FAILURES=0
SRM_PIDS=""
SRM_AGENT_PID=""
SRM_AGENT_LOG=""
SRM_AGENT_STARTS=0

# ---------------------------------------------------------------- output --

srm_log()  { printf '%s\n' "$*"; }
srm_pass() { printf 'ok   - %s\n' "$*"; }
srm_fail() {
    printf 'FAIL - %s\n' "$*"
    SRM_FAILURES=$((SRM_FAILURES + 1))
}

# A test that cannot run says why, loudly, and exits 77.
srm_skip() {
    printf '\n*** SKIP: %s ***\n' "$*" >&2
    printf 'SKIP: %s\n' "$*"
    exit 77
}

# The last lines of a log, indented, to put the evidence of a failure
# into the test's own output.
srm_show_log() {
    local file=$1 lines=${2:-15}

    [ -r "$file" ] || { srm_log "    ($file: no such log)"; return 0; }
    srm_log "    --- last $lines lines of $file:"
    tail -n "$lines" "$file" | sed 's/^/    | /'
}

srm_done() {
    if [ "$SRM_FAILURES" -gt 0 ]; then
        srm_log "$SRM_TEST_NAME: $SRM_FAILURES check(s) FAILED (logs in $SRM_LOG)"
        exit 1
    fi
    srm_log "$SRM_TEST_NAME: all checks passed"
    exit 0
}

srm_require_cmd() {
    local c
    for c in "$@"; do
        command -v "$c" >/dev/null 2>&1 || srm_skip "$c not found in PATH"
    done
}

# ----------------------------------------------------------------- build --

srm__build_at() {
    local d=$1

    [ -n "$d" ] || return 1
    if [ -x "$d/srmd" ] && [ -r "$d/.libs/libuct_srm.so.0" ]; then
        SRM_SRMD=$d/srmd
        SRM_SRMCTL=$d/srmctl
        SRM_MODULE=$d/.libs/libuct_srm.so.0
        SRM_RUN=$d/contrib/srm-run
        return 0
    fi
    if [ -x "$d/bin/srmd" ] && [ -r "$d/lib/ucx/libuct_srm.so.0" ]; then
        SRM_SRMD=$d/bin/srmd
        SRM_SRMCTL=$d/bin/srmctl
        SRM_MODULE=$d/lib/ucx/libuct_srm.so.0
        SRM_RUN=$d/bin/srm-run
        return 0
    fi
    return 1
}

srm_find_build() {
    if [ -n "${SRM_BUILD_DIR:-}" ]; then
        SRM_BUILD_DIR=$(cd "$SRM_BUILD_DIR" 2>/dev/null && pwd) ||
            srm_skip "SRM_BUILD_DIR does not exist"
        srm__build_at "$SRM_BUILD_DIR" ||
            srm_skip "no srm build in SRM_BUILD_DIR=$SRM_BUILD_DIR" \
                     "(want srmd and .libs/libuct_srm.so.0)"
    elif srm__build_at "$PWD"; then
        SRM_BUILD_DIR=$PWD
    elif srm__build_at "$SRM_SRCDIR"; then
        SRM_BUILD_DIR=$SRM_SRCDIR
    else
        srm_skip "no srm build found; set SRM_BUILD_DIR (or run.sh -b DIR)"
    fi
    [ -x "$SRM_SRMCTL" ] || srm_skip "$SRM_SRMCTL missing"
    export SRM_BUILD_DIR SRM_MODULE
}

# -------------------------------------------------------------- processes --

srm_track()   { SRM_PIDS="$SRM_PIDS $1"; }
srm_untrack() {
    local p rest=""
    for p in $SRM_PIDS; do
        [ "$p" = "$1" ] || rest="$rest $p"
    done
    SRM_PIDS=$rest
}

# True while PID runs (an unreaped zombie does not count). No subprocess:
# this is polled while busy-polling processes load every core.
srm_alive() {
    local line st

    [ -n "$1" ] || return 1
    { read -r line <"/proc/$1/stat"; } 2>/dev/null || return 1
    st=${line##*) }
    st=${st%% *}
    [ -n "$st" ] && [ "$st" != Z ] && [ "$st" != X ]
}

# Wall-clock microseconds (bash 5), for deadlines that hold however slowly
# the polling loops run.
srm_now_us() { local t=${EPOCHREALTIME/./}; echo "${t#0}"; }

# srm_wait_pid PID SECONDS: wait for PID to end; returns 0 if it did (its
# status, when it is our child, in SRM_WAIT_RC), 1 if it still runs.
srm_wait_pid() {
    local pid=$1 deadline

    deadline=$(( $(srm_now_us) + $2 * 1000000 ))
    while srm_alive "$pid"; do
        [ "$(srm_now_us)" -ge "$deadline" ] && return 1
        sleep 0.1
    done
    SRM_WAIT_RC=0
    wait "$pid" 2>/dev/null || SRM_WAIT_RC=$?
    return 0
}

# srm_kill_pid PID [GRACE]: SIGTERM, then SIGKILL after GRACE seconds.
srm_kill_pid() {
    local pid=$1 grace=${2:-3}

    [ -n "$pid" ] || return 0
    if srm_alive "$pid"; then
        kill -TERM "$pid" 2>/dev/null
        if ! srm_wait_pid "$pid" "$grace"; then
            srm_log "    (pid $pid ignored SIGTERM; sending SIGKILL)"
            kill -KILL "$pid" 2>/dev/null
            srm_wait_pid "$pid" 5
        fi
    fi
    wait "$pid" 2>/dev/null
    srm_untrack "$pid"
    return 0
}

# The children of PID, recursively (to clean up after mpirun and the like).
srm_descendants() {
    local p c
    for p in "$@"; do
        for c in $(pgrep -P "$p" 2>/dev/null); do
            echo "$c"
            srm_descendants "$c"
        done
    done
}

srm_cleanup() {
    local p pid

    trap - EXIT
    for p in $SRM_PIDS; do
        srm_alive "$p" && srm_log "cleanup: killing leftover pid $p"
        srm_kill_pid "$p" 2
    done
    # An agent on our private socket is ours (auto-started by a client of
    # this test): stop it by its PID too.
    if [ -n "${UCX_SRM_SOCKET:-}" ] && [ -x "${SRM_SRMCTL:-}" ] &&
       env -u LD_PRELOAD "$SRM_SRMCTL" -s "$UCX_SRM_SOCKET" -t 1 ping \
           >/dev/null 2>&1; then
        pid=$(srm_agent_status_pid)
        if [ -n "$pid" ]; then
            srm_log "cleanup: stopping agent pid $pid on @$UCX_SRM_SOCKET"
            kill -TERM "$pid" 2>/dev/null
            srm_wait_pid "$pid" 5 || kill -KILL "$pid" 2>/dev/null
        fi
    fi
}

srm__on_exit() {
    local rc=$?
    srm_cleanup
    exit "$rc"
}

# ------------------------------------------------------------------ agent --

srm_agent_status() {
    env -u LD_PRELOAD "$SRM_SRMCTL" -s "$UCX_SRM_SOCKET" -t 3 status 2>&1
}

srm_agent_ping() {
    env -u LD_PRELOAD "$SRM_SRMCTL" -s "$UCX_SRM_SOCKET" -t "${1:-2}" ping \
        >/dev/null 2>&1
}

# The PID the agent reports ("agent: socket @x node y pid N ...").
srm_agent_status_pid() {
    srm_agent_status | awk '/^agent:/ {
        for (i = 1; i < NF; i++) if ($i == "pid") { print $(i + 1); exit } }'
}

# The agent's "counters: frames N bytes M ..." frame count, or empty.
srm_agent_frames() {
    srm_agent_status | awk '/^counters:/ {
        for (i = 1; i < NF; i++) if ($i == "frames") { print $(i + 1); exit } }'
}

# srm_agent_start [SRMD-ARGS]: start a private srmd on UCX_SRM_SOCKET in
# the background (SRM_AGENT_PID) and wait until it answers.
srm_agent_start() {
    local i

    SRM_AGENT_STARTS=$((SRM_AGENT_STARTS + 1))
    SRM_AGENT_LOG=$SRM_LOG/srmd.$SRM_AGENT_STARTS.log
    "$SRM_SRMD" -s "$UCX_SRM_SOCKET" "$@" >"$SRM_AGENT_LOG" 2>&1 &
    SRM_AGENT_PID=$!
    srm_track "$SRM_AGENT_PID"
    for i in $(seq 1 50); do
        if srm_agent_ping 1; then
            srm_log "agent: srmd pid $SRM_AGENT_PID on @$UCX_SRM_SOCKET" \
                    "(log $SRM_AGENT_LOG)"
            return 0
        fi
        srm_alive "$SRM_AGENT_PID" || break
        sleep 0.1
    done
    srm_log "agent: srmd did not come up on @$UCX_SRM_SOCKET"
    srm_show_log "$SRM_AGENT_LOG"
    srm_kill_pid "$SRM_AGENT_PID"
    SRM_AGENT_PID=""
    return 1
}

# srm_agent_stop: SIGTERM our agent; 0 if it stopped cleanly (exit 0).
srm_agent_stop() {
    local pid=$SRM_AGENT_PID rc

    [ -n "$pid" ] || return 0
    SRM_AGENT_PID=""
    kill -TERM "$pid" 2>/dev/null
    if srm_wait_pid "$pid" 10; then
        rc=$SRM_WAIT_RC
    else
        srm_log "agent: srmd pid $pid still runs 10 s after SIGTERM; killing"
        kill -KILL "$pid" 2>/dev/null
        srm_wait_pid "$pid" 5
        rc=137
    fi
    srm_untrack "$pid"
    return "$rc"
}

# --------------------------------------------------------------- perftest --

# A TCP port for the next perftest pair: per test process, not in use.
srm_next_port() {
    local port

    : "${SRM_NEXT_PORT:=$(( 20000 + ($$ % 2000) * 10 ))}"
    while :; do
        port=$SRM_NEXT_PORT
        SRM_NEXT_PORT=$((SRM_NEXT_PORT + 1))
        [ "$SRM_NEXT_PORT" -gt 60000 ] && SRM_NEXT_PORT=20000
        if command -v ss >/dev/null 2>&1 &&
           [ -n "$(ss -Htan "( sport = :$port )" 2>/dev/null)" ]; then
            continue
        fi
        echo "$port"
        return 0
    done
}

srm__listening() {
    if command -v ss >/dev/null 2>&1; then
        [ -n "$(ss -Hltn "( sport = :$1 )" 2>/dev/null)" ]
    else
        sleep 1
    fi
}

# srm_perftest_start LABEL TIMEOUT PERFTEST-ARGS...
# Starts the server, waits until it listens, then starts the client on
# 127.0.0.1, both in the background under `timeout`; sets SRM_SERVER_PID,
# SRM_CLIENT_PID, SRM_SERVER_LOG, SRM_CLIENT_LOG, SRM_PORT. Extra client-
# only or server-only environment: SRM_CLIENT_ENV / SRM_SERVER_ENV (words
# for env(1)).
srm_perftest_start() {
    local label=$1 tmo=$2 i
    shift 2

    SRM_PORT=$(srm_next_port)
    SRM_SERVER_LOG=$SRM_LOG/$label.server.log
    SRM_CLIENT_LOG=$SRM_LOG/$label.client.log
    SRM_CLIENT_PID=""
    {
        echo "# $(date '+%F %T') port $SRM_PORT: ucx_perftest $*"
        env | grep -E '^(UCX_|LD_PRELOAD)' | sort | sed 's/^/# /'
    } >"$SRM_SERVER_LOG"
    cp "$SRM_SERVER_LOG" "$SRM_CLIENT_LOG"

    # shellcheck disable=SC2086
    env ${SRM_SERVER_ENV:-} timeout -k 5 "$tmo" \
        ucx_perftest -p "$SRM_PORT" "$@" >>"$SRM_SERVER_LOG" 2>&1 &
    SRM_SERVER_PID=$!
    srm_track "$SRM_SERVER_PID"
    for i in $(seq 1 100); do
        srm__listening "$SRM_PORT" && break
        srm_alive "$SRM_SERVER_PID" || break
        sleep 0.1
    done
    if ! srm_alive "$SRM_SERVER_PID"; then
        srm_log "$label: the server exited before it listened"
        srm_show_log "$SRM_SERVER_LOG"
        return 1
    fi
    # shellcheck disable=SC2086
    env ${SRM_CLIENT_ENV:-} timeout -k 5 "$tmo" \
        ucx_perftest -p "$SRM_PORT" "$@" 127.0.0.1 >>"$SRM_CLIENT_LOG" 2>&1 &
    SRM_CLIENT_PID=$!
    srm_track "$SRM_CLIENT_PID"
    return 0
}

# srm_perftest_wait LABEL: wait for the client (its timeout bounds it), then
# give the server a few seconds and kill it by PID if it does not end.
# Sets SRM_CLIENT_RC, SRM_SERVER_RC (124: timed out, "killed": we killed
# it), SRM_FINAL (the client's "Final:" line). Returns 0 when both exited 0
# and the client printed a Final: line.
srm_perftest_wait() {
    local label=$1 grace

    SRM_CLIENT_RC=none SRM_SERVER_RC=none SRM_FINAL=""
    if [ -n "$SRM_CLIENT_PID" ]; then
        SRM_CLIENT_RC=0
        wait "$SRM_CLIENT_PID" || SRM_CLIENT_RC=$?
        srm_untrack "$SRM_CLIENT_PID"
    fi
    if [ "$SRM_CLIENT_RC" = 0 ]; then grace=15; else grace=5; fi
    if srm_wait_pid "$SRM_SERVER_PID" "$grace"; then
        SRM_SERVER_RC=$SRM_WAIT_RC
    else
        srm_log "$label: server pid $SRM_SERVER_PID still runs ${grace} s" \
                "after the client ended (client rc $SRM_CLIENT_RC); killing it"
        srm_kill_pid "$SRM_SERVER_PID" 3
        SRM_SERVER_RC=killed
    fi
    srm_untrack "$SRM_SERVER_PID"
    SRM_FINAL=$(grep '^Final:' "$SRM_CLIENT_LOG" | tail -n 1)
    [ "$SRM_CLIENT_RC" = 0 ] && [ "$SRM_SERVER_RC" = 0 ] &&
        [ -n "$SRM_FINAL" ]
}

# srm_perftest_pair LABEL TIMEOUT PERFTEST-ARGS...: start + wait; sets
# SRM_PAIR_SECS as well.
srm_perftest_pair() {
    local label=$1 t0 rc=0

    t0=$(date +%s.%N)
    if srm_perftest_start "$@"; then
        srm_perftest_wait "$label" || rc=1
    else
        srm_kill_pid "$SRM_SERVER_PID"
        SRM_CLIENT_RC=none SRM_SERVER_RC=failed SRM_FINAL=""
        rc=1
    fi
    SRM_PAIR_SECS=$(awk -v a="$t0" -v b="$(date +%s.%N)" \
                    'BEGIN { printf "%.1f", b - a }')
    return $rc
}

# ------------------------------------------------------------------ setup --

srm_find_build
SRM_TEST_LOG_DIR=${SRM_TEST_LOG_DIR:-/tmp/srm-system-tests}
SRM_LOG=$SRM_TEST_LOG_DIR/$SRM_TEST_NAME
mkdir -p "$SRM_LOG" || srm_skip "cannot create the log directory $SRM_LOG"
export SRM_TEST_LOG_DIR

export LD_PRELOAD="$SRM_MODULE${LD_PRELOAD:+:$LD_PRELOAD}"
export UCX_SRM_AGENT_PATH=$SRM_SRMD
export UCX_SRM_SOCKET="srm-test-$SRM_TEST_NAME-$$"
# No stray settings from the caller's environment decide what runs.
unset UCX_TLS UCX_NET_DEVICES UCX_SRM_AGENT UCX_LOG_LEVEL UCX_PROTO_INFO

trap srm__on_exit EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

srm_log "$SRM_TEST_NAME: build $SRM_BUILD_DIR, socket @$UCX_SRM_SOCKET," \
        "logs $SRM_LOG"
