# SPDX-License-Identifier: BSD-3-Clause
# lib.sh - the system tests' layer on contrib/srm-harness.sh (sourced,
# bash): checks, skips and failures, the test's own agent, ucx_perftest and
# MPI jobs, soft-RoCE guests.
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
# shellcheck source-path=SCRIPTDIR/../.. source=contrib/srm-harness.sh
. "$SRM_SRCDIR/contrib/srm-harness.sh"
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
    if c=$(srm_missing_cmd "$@"); then
        srm_skip "$c not found in PATH"
    fi
}

# ----------------------------------------------------------------- build --

srm_find_build() {
    if [ -n "${SRM_BUILD_DIR:-}" ]; then
        SRM_BUILD_DIR=$(cd "$SRM_BUILD_DIR" 2>/dev/null && pwd) ||
            srm_skip "SRM_BUILD_DIR does not exist"
        srm_build_at "$SRM_BUILD_DIR" ||
            srm_skip "no srm build in SRM_BUILD_DIR=$SRM_BUILD_DIR" \
                     "(want srmd, srmctl and .libs/libuct_srm.so.0)"
    elif srm_build_at "$PWD"; then
        SRM_BUILD_DIR=$PWD
    elif srm_build_at "$SRM_SRCDIR"; then
        SRM_BUILD_DIR=$SRM_SRCDIR
    else
        srm_skip "no srm build found; set SRM_BUILD_DIR (or run.sh -b DIR)"
    fi
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

# srm_wait_pid PID SECONDS: wait for PID to end; returns 0 if it did (its
# status, when it is our child, in SRM_WAIT_RC), 1 if it still runs.
srm_wait_pid() {
    local pid=$1 deadline

    deadline=$(( $(srm_now_us) + $2 * 1000000 ))
    while srm_alive "$pid"; do
        [ "$(srm_now_us)" -ge "$deadline" ] && return 1
        srm_nap 0.1
    done
    SRM_WAIT_RC=0
    wait "$pid" 2>/dev/null || SRM_WAIT_RC=$?
    return 0
}

# srm_kill_pid PID [GRACE]: SIGTERM, then SIGKILL after GRACE seconds;
# no longer tracked.
srm_kill_pid() {
    [ -n "$1" ] || return 0
    srm_kill_pids "${2:-3}" "$1" 2>&1
    srm_untrack "$1"
    return 0
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

# srm_make_install: `make install` of the build under test into
# $SRM_LOG/destdir; sets dest (that directory) and prefix (the configured
# one, where the files would go without DESTDIR). Fails the test, with the
# log's end, and returns 1 when make install fails.
srm_make_install() {
    dest=$SRM_LOG/destdir
    rm -rf "$dest"
    if ! make -C "$SRM_BUILD_DIR" install DESTDIR="$dest" \
            >"$SRM_LOG/install.log" 2>&1; then
        srm_fail "make install failed"
        srm_show_log "$SRM_LOG/install.log"
        return 1
    fi
    prefix=$(sed -n 's/^prefix = //p' "$SRM_BUILD_DIR/Makefile")
}

# ------------------------------------------------------------------ agent --

srm_agent_status() {
    env -u LD_PRELOAD "$SRM_SRMCTL" -s "$UCX_SRM_SOCKET" -t 3 status 2>&1
}

srm_agent_ping() {
    env -u LD_PRELOAD "$SRM_SRMCTL" -s "$UCX_SRM_SOCKET" -t "${1:-2}" ping \
        >/dev/null 2>&1
}

# srm_agent_status_get JQ-FILTER: what FILTER picks out of the test
# agent's `srmctl status --json` (docs/status-json.md); nothing if it does
# not answer.
srm_agent_status_get() {
    env -u LD_PRELOAD "$SRM_SRMCTL" -s "$UCX_SRM_SOCKET" -t 3 status --json \
        2>/dev/null | srm_json_get "$1"
}

# The PID the agent reports.
srm_agent_status_pid() { srm_agent_status_get .agent.pid; }

# The frames the agent delivered, or nothing.
srm_agent_frames() { srm_agent_status_get .counters.frames; }

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

# srm_perftest_rte: sets SRM_PERFTEST_RTE to "-P 0" where ucx_perftest was
# built with MPI (Debian 13 on), whose pairs otherwise wait for an MPI peer
# ("should be run with exactly 2 processes"); to nothing where it was not
# (Debian 12: no -P).
srm_perftest_rte() {
    [ -z "${SRM_PERFTEST_RTE+set}" ] || return 0
    SRM_PERFTEST_RTE=
    if grep -q '^ *-P ' <<<"$(ucx_perftest -h 2>&1)"; then
        SRM_PERFTEST_RTE="-P 0"
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

    srm_perftest_rte
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
        ucx_perftest -p "$SRM_PORT" $SRM_PERFTEST_RTE "$@" >>"$SRM_SERVER_LOG" 2>&1 &
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
        ucx_perftest -p "$SRM_PORT" $SRM_PERFTEST_RTE "$@" 127.0.0.1 >>"$SRM_CLIENT_LOG" 2>&1 &
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

# ----------------------------------------------------------------- netns --
#
# Tests across simulated hosts: contrib/netns-cluster makes hosts (network,
# UTS and IPC namespaces) PREFIXh1, PREFIXh2, ... at 10.77.0.1, 10.77.0.2,
# ...; contrib/netns-mpirun runs an Open MPI job on some of them. Each host
# gets its own srmd from the test (the clients run with
# UCX_SRM_AGENT=never).

declare -A SRM_NETNS_AGENT_PID=()   # host -> pid of the srmd started there

# srm_netns_require [--mpi] CMD...: SKIP unless CMD..., timeout, ip, nsenter
# and ss are in PATH, contrib/netns-cluster (SRM_NETNS_CLUSTER) and, with
# --mpi, contrib/netns-mpirun (SRM_NETNS_MPIRUN) are there, and we are
# root. Then unsets LD_PRELOAD (UCX commands get the module explicitly;
# netns-cluster, ss, srmctl and mpicc do not need it) and exports
# UCX_WARN_UNUSED_ENV_VARS=n.
srm_netns_require() {
    local mpi=0

    if [ "${1:-}" = --mpi ]; then mpi=1; shift; fi
    srm_require_cmd "$@" timeout ip nsenter ss jq
    SRM_NETNS_CLUSTER=$SRM_SRCDIR/contrib/netns-cluster
    SRM_NETNS_MPIRUN=$SRM_SRCDIR/contrib/netns-mpirun
    [ -x "$SRM_NETNS_CLUSTER" ] ||
        srm_skip "contrib/netns-cluster not found at $SRM_NETNS_CLUSTER"
    [ "$mpi" = 0 ] || [ -x "$SRM_NETNS_MPIRUN" ] ||
        srm_skip "contrib/netns-mpirun not found at $SRM_NETNS_MPIRUN"
    [ "$(id -u)" = 0 ] || srm_skip "netns-cluster needs root (uid $(id -u))"
    unset LD_PRELOAD
    export UCX_WARN_UNUSED_ENV_VARS=n
}

# srm_netns_up NHOSTS PREFIX [NETNS-CLUSTER-OPTION...]: bring up NHOSTS
# hosts named PREFIXh1 ... (array SRM_HOSTS; SRM_NETNS_HOST_LIST: the same
# comma-separated), logging to $SRM_LOG/cluster.log. From then on the
# test's exit also takes the cluster down, after srm_cleanup. If the
# cluster does not come up: FAIL with its log, and the test ends.
srm_netns_up() {
    local n=$1

    SRM_NETNS_PREFIX=$2
    shift 2
    trap srm__netns_on_exit EXIT
    if ! srm_hosts_up "$n" "$SRM_NETNS_PREFIX" "$SRM_LOG/cluster.log" "$@" 2>&1; then
        srm_fail "netns-cluster up $n --prefix $SRM_NETNS_PREFIX"
        srm_done
    fi
    SRM_NETNS_HOST_LIST=$(IFS=,; echo "${SRM_HOSTS[*]}")
}

srm__netns_on_exit() {
    local rc=$?

    trap - EXIT
    srm_cleanup
    srm_hosts_down "$SRM_NETNS_PREFIX" "$SRM_LOG/cluster.log" 2>&1
    exit "$rc"
}

# srm_uct_device [HOST]: the name of srm's UCX device for a process here
# (or in HOST), which ucx_perftest's -d takes.
srm_uct_device() {
    if [ $# -gt 0 ]; then
        "$SRM_NETNS_CLUSTER" exec "$1" "$SRM_SRMCTL" device
    else
        "$SRM_SRMCTL" device
    fi
}

# srm_netns_ping HOST: true if the srmd in HOST answers.
srm_netns_ping() { srm_netns_ctl "$1" ping >/dev/null 2>&1; }

# srm_netns_status HOST: `srmctl status` of the srmd in HOST.
srm_netns_status() { srm_netns_ctl "$1" status; }

# srm_netns_agent_start HOST LOG [VAR=VALUE...]: start our own srmd in
# HOST on UCX_SRM_SOCKET with VAR=VALUE... in its environment, its log in
# LOG (-l) and its output in LOG with .out for .log. Its pid goes to
# SRM_NETNS_AGENT_PID[HOST] and is killed at exit. Waits up to ~10 s for
# it to answer as that pid; if it does not: FAIL with why, return 1.
srm_netns_agent_start() {
    local h=$1 log=$2 pid
    shift 2

    srm_agent_spawn_cmd "$h" "$log" "$@"
    "${SRM_AGENT_CMD[@]}" >"${log%.log}.out" 2>&1 &
    pid=$!
    srm_track "$pid"
    SRM_NETNS_AGENT_PID[$h]=$pid
    srm_agent_ready "$h" "$pid" "$log" 2>&1 && return 0
    srm_fail "srmd did not come up in $h${*:+ ($*)}"
    return 1
}

# srm_netns_start_agents LOG [VAR=VALUE...]: srm_netns_agent_start in every
# host, one after the other; %h in LOG stands for the host. Returns 1 at
# the first that does not come up.
srm_netns_start_agents() {
    local log=$1 h
    shift

    for h in "${SRM_HOSTS[@]}"; do
        srm_netns_agent_start "$h" "${log//%h/$h}" "$@" || return 1
    done
}

# srm_netns_agent_pids: "HOST=PID " for every host, to log.
srm_netns_agent_pids() {
    local h
    for h in "${SRM_HOSTS[@]}"; do
        printf '%s=%s ' "$h" "${SRM_NETNS_AGENT_PID[$h]:-}"
    done
}

# srm_netns_stop_agents: kill the srmd of every host (SIGTERM, SIGKILL
# 5 s later).
srm_netns_stop_agents() {
    local h
    for h in "${SRM_HOSTS[@]}"; do
        [ -n "${SRM_NETNS_AGENT_PID[$h]:-}" ] || continue
        srm_kill_pid "${SRM_NETNS_AGENT_PID[$h]}" 5
        SRM_NETNS_AGENT_PID[$h]=""
    done
}

# srm_netns_agent_answers HOST LOG: true if the srmd in HOST answers;
# otherwise says so, with the end of its LOG.
srm_netns_agent_answers() {
    srm_netns_ping "$1" && return 0
    srm_log "    srmd in $1 no longer answers"
    srm_show_log "$2" 8
    return 1
}

# srm_netns_wait_listen HOST PORT PID TRIES: true once something listens
# on TCP PORT in HOST; false when PID is gone first or after TRIES looks
# 0.1 s apart.
srm_netns_wait_listen() {
    local _
    for _ in $(seq 1 "$4"); do
        [ -n "$(ip netns exec "$1" ss -Hltn "( sport = :$2 )" 2>/dev/null)" ] &&
            return 0
        srm_alive "$3" || return 1
        sleep 0.1
    done
    return 1
}

# srm_netns_perftest_pair LABEL PORT TIMEOUT PERFTEST-ARGS...: ucx_perftest
# with the srm module between the first two hosts: the server in the first
# on PORT, then (once it listens) the client in the second, to
# $SRM_NETNS_SERVER (default 10.77.0.1; an IPv6 one needs -6 in ARGS);
# both under `timeout TIMEOUT`, their output appended to
# $SRM_LOG/LABEL.server.log and LABEL.client.log. Waits for the client,
# then up to 15 s for the server (then kills it). Sets SRM_CLIENT_RC and
# SRM_SERVER_RC ("killed" if it had to be).
srm_netns_perftest_pair() {
    local label=$1 port=$2 tmo=$3 sh=${SRM_HOSTS[0]} spid cpid
    shift 3

    srm_perftest_rte
    "$SRM_NETNS_CLUSTER" exec "$sh" env LD_PRELOAD="$SRM_MODULE" \
        timeout -k 5 "$tmo" ucx_perftest -p "$port" $SRM_PERFTEST_RTE "$@" \
        >>"$SRM_LOG/$label.server.log" 2>&1 &
    spid=$!
    srm_track "$spid"
    srm_netns_wait_listen "$sh" "$port" "$spid" 100
    "$SRM_NETNS_CLUSTER" exec "${SRM_HOSTS[1]}" env LD_PRELOAD="$SRM_MODULE" \
        timeout -k 5 "$tmo" ucx_perftest -p "$port" $SRM_PERFTEST_RTE "$@" \
        "${SRM_NETNS_SERVER:-10.77.0.1}" \
        >>"$SRM_LOG/$label.client.log" 2>&1 &
    cpid=$!
    srm_track "$cpid"
    SRM_CLIENT_RC=0
    wait "$cpid" || SRM_CLIENT_RC=$?
    srm_untrack "$cpid"
    if srm_wait_pid "$spid" 15; then
        SRM_SERVER_RC=$SRM_WAIT_RC
    else
        srm_kill_pid "$spid" 3
        SRM_SERVER_RC=killed
    fi
    srm_untrack "$spid"
}

# srm_mpicc SRC OUT [ARG...]: build the MPI program SRC as OUT, ARG...
# (libraries, say) after SRC (log $SRM_LOG/mpicc.log). SKIP if SRC is
# missing; if it does not build: FAIL with the log, and the test ends.
srm_mpicc() {
    local src=$1 out=$2
    shift 2

    [ -r "$src" ] || srm_skip "$src not found"
    if ! mpicc -O2 -Wall -o "$out" "$src" "$@" >"$SRM_LOG/mpicc.log" 2>&1; then
        srm_fail "mpicc $src failed"
        srm_show_log "$SRM_LOG/mpicc.log"
        srm_done
    fi
    srm_pass "built $out"
}

# srm_netns_mpirun_cmd HOSTS PPN TIMEOUT TLS: set the array SRM_MPIRUN to
# the command that runs an MPI job through netns-mpirun on HOSTS (comma-
# separated), PPN ranks per host, ended after TIMEOUT s (exit 124), with
# the srm module in the ranks' LD_PRELOAD, UCX_TLS=TLS and
# UCX_SRM_AGENT=never. Run it as "${SRM_MPIRUN[@]}" -- PROGRAM [ARGS...];
# started in the background, $! is netns-mpirun itself (env execs it).
srm_netns_mpirun_cmd() {
    local name
    SRM_MPIRUN=(env UCX_SRM_AGENT=never UCX_TLS="$4"
        "$SRM_NETNS_MPIRUN" --hosts "$1" --ppn "$2" --timeout "$3" -v
        -x LD_PRELOAD="$SRM_MODULE" -x UCX_SRM_AGENT_PATH -x UCX_SRM_SOCKET
        -x UCX_SRM_AGENT -x UCX_WARN_UNUSED_ENV_VARS -x UCX_TLS)
    for name in ${SRM_MPI_EXPORT:-}; do   # more variables for the ranks
        SRM_MPIRUN+=(-x "$name")
    done
}

# srm_netns_stream_start BIN PPN ARGS...: test/mpi/srm_stream_check (BIN)
# over UCX_TLS=srm on every host, PPN ranks each, in the background, until
# srm_netns_stream_finish; sets SRM_STREAM_PID, SRM_STREAM_OUT (its output)
# and SRM_STREAM_STOP (the stop file it watches).
srm_netns_stream_start() {
    local bin=$1 ppn=$2
    shift 2
    SRM_STREAM_OUT=$SRM_LOG/srm_stream_check.log
    SRM_STREAM_STOP=$SRM_LOG/stop
    rm -f "$SRM_STREAM_STOP"
    srm_netns_mpirun_cmd "$SRM_NETNS_HOST_LIST" "$ppn" "${SRM_MPI_TIMEOUT:-180}" srm
    "${SRM_MPIRUN[@]}" -- "$bin" -f "$SRM_STREAM_STOP" "$@" \
        >"$SRM_STREAM_OUT" 2>&1 &
    SRM_STREAM_PID=$!
    srm_track "$SRM_STREAM_PID"
}

# srm_netns_wait_hosts PID COMMAND WANT: until COMMAND HOST prints WANT for
# every host of SRM_HOSTS (30 s at most, while PID lives); 1 if not.
srm_netns_wait_hosts() {
    local pid=$1 cmd=$2 want=$3 h ready
    for _ in $(seq 1 150); do
        srm_alive "$pid" || return 1
        ready=0
        for h in "${SRM_HOSTS[@]}"; do
            [ "$("$cmd" "$h")" = "$want" ] && ready=$((ready + 1))
        done
        [ "$ready" -eq "${#SRM_HOSTS[@]}" ] && return 0
        sleep 0.2
    done
    return 1
}

# srm_netns_stream_finish PID OUT STOP: end test/mpi/srm_stream_check
# running as PID (writing OUT, watching the stop file STOP), wait for it
# and judge it: PASS if every rank counted nothing lost, duplicated, out
# of order or corrupt, else FAIL with the end of OUT.
srm_netns_stream_finish() {
    local pid=$1 out=$2 stop=$3 rc=0 result

    touch "$stop"
    wait "$pid" || rc=$?
    srm_untrack "$pid"
    result=$(grep '^ranks ' "$out" | tail -1)
    srm_log "    $result"
    if [ "$rc" -eq 0 ] && [ -n "$result" ]; then
        srm_pass "stream check: nothing lost, duplicated, reordered or corrupt"
    else
        srm_fail "stream check exit status $rc${result:+ ($result)}"
        srm_show_log "$out" 30
    fi
}

# srm_netns_mpirun HOSTS PPN TIMEOUT TLS PROGRAM [ARGS...]: that job, in
# the foreground; returns its exit status.
srm_netns_mpirun() {
    srm_netns_mpirun_cmd "$1" "$2" "$3" "$4"
    shift 4
    "${SRM_MPIRUN[@]}" -- "$@"
}

# ------------------------------------------------------- soft-RoCE VM --

# srm_vm_self MEM_MB: on the host, run this test's own file again with
# --guest inside the soft-RoCE VM (contrib/vm-rxe) and end the test with
# the guest part's result. SKIP, loudly, when QEMU or the VM image is
# missing and cannot be made; FAIL when the VM does not boot or times out
# (SRM_VM_TIMEOUT, default 420 s). Prints the boot and whole-run times.
srm_vm_self() {
    local vm=$SRM_SRCDIR/contrib/vm-rxe mem=$1 t0 rc secs boot

    command -v qemu-system-x86_64 >/dev/null 2>&1 ||
        srm_skip "QEMU (qemu-system-x86_64, package qemu-system-x86) is not installed: the soft-RoCE tests did NOT run (contrib/vm-rxe/prepare installs it)"
    if ! "$vm/prepare" --print >"$SRM_LOG/image.env" 2>"$SRM_LOG/prepare.log"; then
        [ "$(id -u)" = 0 ] ||
            srm_skip "no VM image and not root to make one: the soft-RoCE tests did NOT run (run contrib/vm-rxe/prepare as root)"
        srm_log "no VM image yet; running contrib/vm-rxe/prepare (log $SRM_LOG/prepare.log)"
        if ! nice -n 19 "$vm/prepare" >"$SRM_LOG/prepare.log" 2>&1; then
            srm_show_log "$SRM_LOG/prepare.log" 10
            srm_skip "contrib/vm-rxe/prepare failed (is Debian's kernel package linux-image-amd64 available?): the soft-RoCE tests did NOT run"
        fi
        "$vm/prepare" --print >"$SRM_LOG/image.env" 2>>"$SRM_LOG/prepare.log" ||
            srm_skip "contrib/vm-rxe/prepare made no image: the soft-RoCE tests did NOT run"
    fi
    srm_pass "VM image: $(tr '\n' ' ' <"$SRM_LOG/image.env" | sed 's/STAMP=[^ ]* //')"

    t0=$(srm_now_us)
    "$vm/run" -o "$SRM_LOG" -t "${SRM_VM_TIMEOUT:-420}" -m "$mem" \
        -e SRM_TEST_NAME="$SRM_TEST_NAME" -- bash "$SRM_SYSTEM_DIR/$SRM_TEST_NAME.sh" --guest \
        2>"$SRM_LOG/vm-run.err"
    rc=$?
    secs=$(( ($(srm_now_us) - t0) / 1000000 ))
    sed 's/^/vm: /' "$SRM_LOG/vm-run.err"
    boot=$(sed -n 's/.*guest up after \([0-9.]*\) s.*/\1/p' "$SRM_LOG/vm-run.err")
    srm_log "timings: VM boot ${boot:-?} s, whole run $secs s"
    case $rc in
    0) srm_pass "the guest part passed" ;;
    77) exit 77 ;;                      # it printed its SKIP line
    124) srm_fail "the VM timed out (see $SRM_LOG/vm-console.log)" ;;
    *) srm_fail "the guest part failed (status $rc; console $SRM_LOG/vm-console.log)" ;;
    esac
    srm_done
}

# srm_vm_hosts_up N [PREFIX]: in the guest, N simulated hosts PREFIXh1..
# with an rdma device rxe_PREFIXh<i> each (contrib/vm-rxe/rxe-hosts), set
# up as srm_netns_up does (SRM_HOSTS, SRM_NETNS_HOST_LIST), and taken
# down at the test's exit after srm_cleanup. FAIL with the log, and the
# test ends, if they do not come up.
srm_vm_hosts_up() {
    local n=$1 i

    SRM_VM_RXE_HOSTS=$SRM_SRCDIR/contrib/vm-rxe/rxe-hosts
    SRM_NETNS_PREFIX=${2:-}
    SRM_HOSTS=()
    for i in $(seq 1 "$n"); do
        SRM_HOSTS+=("${SRM_NETNS_PREFIX}h$i")
    done
    SRM_NETNS_HOST_LIST=$(IFS=,; echo "${SRM_HOSTS[*]}")
    trap srm__vm_hosts_on_exit EXIT
    if ! "$SRM_VM_RXE_HOSTS" up "$n" ${SRM_NETNS_PREFIX:+--prefix "$SRM_NETNS_PREFIX"} \
            >"$SRM_LOG/rxe-hosts.log" 2>&1; then
        srm_fail "rxe-hosts up $n"
        srm_show_log "$SRM_LOG/rxe-hosts.log"
        srm_done
    fi
}

# srm_vm_owner_tids OWNERS: " TID:OWNER ..." for every thread of every
# process whose comm matches one of OWNERS, "COMM-PATTERN:OWNER ...", e.g.
# "srmd:srmd srm_alltoall*:rank". `rdma resource show` lists an object
# with the thread that made it (UCX's async thread makes QPs too), so every
# thread of a matching process counts. No command per process: under TCG
# every fork is slow.
srm_vm_owner_tids() {
    local f comm t o who tids=" " owners

    read -ra owners <<<"$1" # no pathname expansion of the patterns
    for f in /proc/[0-9]*/comm; do
        { read -r comm <"$f"; } 2>/dev/null || continue
        who=
        for o in "${owners[@]}"; do
            # shellcheck disable=SC2254  # the pattern is meant to match
            case $comm in ${o%:*}) who=${o##*:}; break ;; esac
        done
        [ -n "$who" ] || continue
        f=${f%/comm}
        for t in "$f"/task/*; do tids="$tids${t##*/}:$who "; done
    done
    printf '%s\n' "$tids"
}

# srm_vm_resources KIND OWNERS [FILE]: `rdma resource show KIND` (qp or mr;
# kept in FILE if given), summed per owner (srm_vm_owner_tids) and device,
# and for QPs per type and state: "OWNER DEV TYPE STATE N" for qp, "OWNER
# DEV N BYTES" for mr (N regions of BYTES in all).
srm_vm_resources() {
    local kind=$1 file=${3:-} tids

    tids=$(srm_vm_owner_tids "$2")
    if [ -n "$file" ]; then
        rdma resource show "$kind" >"$file" 2>&1
        cat "$file"
    else
        rdma resource show "$kind" 2>/dev/null
    fi | awk -v tids="$tids" -v kind="$kind" '{
            dev = ""; type = ""; st = ""; pid = ""; len = 0
            for (i = 1; i < NF; i++) {
                if ($i == "link") { dev = $(i + 1); sub(/\/.*/, "", dev) }
                if ($i == "dev") dev = $(i + 1)
                if ($i == "type") type = $(i + 1)
                if ($i == "state") st = $(i + 1)
                if ($i == "pid") pid = $(i + 1)
                if ($i == "mrlen") len = $(i + 1)
            }
            if (pid == "" || !match(tids, " " pid ":[a-z]+ "))
                next
            who = substr(tids, RSTART + length(pid) + 2,
                         RLENGTH - length(pid) - 3)
            if (kind == "mr") {
                n[who " " dev]++
                bytes[who " " dev] += len
            } else {
                n[who " " dev " " type " " st]++
            }
        }
        END {
            for (x in n) {
                if (kind == "mr") print x, n[x], bytes[x]
                else print x, n[x]
            }
        }'
}

# srm_vm_qps OWNERS [FILE]: srm_vm_resources qp.
srm_vm_qps() {
    srm_vm_resources qp "$@"
}

# srm_vm_gtests LABEL ADDR FILTER TIMEOUT [VAR=VALUE...]: in the guest,
# the gtests FILTER with the module preloaded, a private agent socket and
# the VARs, against an rxe device rxe_gt on a veth pair srmvg0/srmvg1 with
# ADDR/24 on srmvg0 (made for the run, and removed after it). PASS or FAIL
# LABEL with gtest's summary, and the failures when it fails.
srm_vm_gtests() {
    local label=$1 addr=$2 filter=$3 timeout=$4 gtest log gid i rc=0 t0 secs summary
    shift 4
    gtest=$SRM_BUILD_DIR/test/gtest/gtest
    log=$SRM_LOG/gtest-${label// /-}.log
    if [ ! -x "$gtest" ]; then
        srm_fail "$label: the gtest binary $gtest was not built (make check builds it)"
        return
    fi
    if ! { ip link add srmvg0 type veth peer name srmvg1 &&
           ip addr add "$addr/24" dev srmvg0 &&
           ip link set srmvg0 up && ip link set srmvg1 up &&
           rdma link add rxe_gt type rxe netdev srmvg0; }; then
        srm_fail "$label: cannot make an rxe device on a veth"
        ip link delete srmvg0 2>/dev/null
        return
    fi
    # The RoCE v2 GID of an IPv4 address ends in its 4 bytes.
    gid=$(printf '%02x%02x:%02x%02x' ${addr//./ })
    for i in $(seq 1 50); do
        grep -qs "ffff:$gid" /sys/class/infiniband/rxe_gt/ports/1/gids/* && break
        sleep 0.2
    done
    t0=$(srm_now_us)
    env LD_PRELOAD="$SRM_MODULE" UCX_SRM_AGENT_PATH="$SRM_SRMD" \
        UCX_SRM_SOCKET="srm-vm-gtest-$$" UCX_SRM_IDLE_TIMEOUT=1s "$@" \
        timeout -k 5 "$timeout" "$gtest" --gtest_filter="$filter" \
        >"$log" 2>&1 || rc=$?
    secs=$(( ($(srm_now_us) - t0) / 1000000 ))
    # The failed tests' names go into the summary: CI's report keeps only
    # the FAIL line.
    summary=$(grep -E '^\[  (PASSED|FAILED)  \] [0-9]+ test|^\[  FAILED  \] [A-Za-z_][^ ]*$' "$log" |
              sed 's/, listed below://' | paste -sd ' ' -)
    if [ "$rc" = 0 ] && grep -q '^\[  PASSED  \]' "$log"; then
        srm_pass "$label on rxe_gt ($secs s): $summary"
    else
        srm_fail "$label on rxe_gt: exit $rc ($secs s): ${summary:-no summary}"
        grep -E '^\[  FAILED  \]|Failure|Expected|Which is' "$log" | head -40 |
            sed 's/^/    | /'
    fi
    rdma link delete rxe_gt 2>/dev/null
    ip link delete srmvg0 2>/dev/null
}

srm__vm_hosts_on_exit() {
    local rc=$?

    trap - EXIT
    srm_cleanup
    "$SRM_VM_RXE_HOSTS" down >>"$SRM_LOG/rxe-hosts.log" 2>&1
    exit "$rc"
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
SRM_SOCKET=$UCX_SRM_SOCKET   # the agents of contrib/srm-harness.sh
SRM_AGENT_SETSID=0           # in the test's session, which run.sh kills
# No stray settings from the caller's environment decide what runs.
unset UCX_TLS UCX_NET_DEVICES UCX_SRM_AGENT UCX_LOG_LEVEL UCX_PROTO_INFO

trap srm__on_exit EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

srm_log "$SRM_TEST_NAME: build $SRM_BUILD_DIR, socket @$UCX_SRM_SOCKET," \
        "logs $SRM_LOG"
