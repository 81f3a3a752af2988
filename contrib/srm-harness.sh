# shellcheck shell=bash
# SPDX-License-Identifier: BSD-3-Clause
# srm-harness.sh - the shell library of ucx-srm's tests and benchmarks:
# the build under test, processes, simulated hosts (contrib/netns-cluster),
# the agents in them and their status. test/system/lib.sh (checks, skips,
# the test's own agent, VM guests) and contrib/bench/lib.sh (options,
# statistics, reports) are layers on top of it.
#
# Sourcing it defines functions and nothing else: no traps, no exits, no
# exported variables, so it holds with and without `set -euo pipefail`.
# What it cannot do it reports with a nonzero return and a message on
# stderr; each layer decides what that costs (a test skips or fails, a
# benchmark dies).
#
# The agents' status is read with jq.
#
# Globals it reads, set by the layer:
#   SRM_NETNS_CLUSTER  contrib/netns-cluster (defaulted below)
#   SRM_SRMD, SRM_SRMCTL, SRM_MODULE, SRM_RUN  set by srm_build_at
#   SRM_SOCKET         the abstract socket name the agents serve
# shellcheck disable=SC2034  # the variables set here are the callers'

SRM_HARNESS_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
SRM_NETNS_CLUSTER=${SRM_NETNS_CLUSTER:-$SRM_HARNESS_DIR/netns-cluster}

# ----------------------------------------------------------------- build --

# srm_build_at DIR: true if DIR holds an srm build tree (srmd and
# .libs/libuct_srm.so.0) or an install prefix (bin/srmd and
# lib/ucx/libuct_srm.so.0); sets SRM_SRMD, SRM_SRMCTL, SRM_MODULE, SRM_RUN.
srm_build_at() {
    local d=$1

    [[ -n $d ]] || return 1
    if [[ -x $d/srmd && -r $d/.libs/libuct_srm.so.0 ]]; then
        SRM_SRMD=$d/srmd
        SRM_SRMCTL=$d/srmctl
        SRM_MODULE=$d/.libs/libuct_srm.so.0
        SRM_RUN=$d/contrib/srm-run
    elif [[ -x $d/bin/srmd && -r $d/lib/ucx/libuct_srm.so.0 ]]; then
        SRM_SRMD=$d/bin/srmd
        SRM_SRMCTL=$d/bin/srmctl
        SRM_MODULE=$d/lib/ucx/libuct_srm.so.0
        SRM_RUN=$d/bin/srm-run
    else
        return 1
    fi
    [[ -x $SRM_SRMCTL ]] || { echo "$SRM_SRMCTL is missing" >&2; return 1; }
}

# srm_missing_cmd CMD...: prints the first CMD not in PATH; false if none.
srm_missing_cmd() {
    local c
    for c in "$@"; do
        command -v "$c" >/dev/null 2>&1 || { echo "$c"; return 0; }
    done
    return 1
}

# ------------------------------------------------------------- processes --

# srm_alive PID: PID runs (an unreaped zombie does not count). No
# subprocess: this is polled while busy-polling processes load every core.
srm_alive() {
    local line st

    [[ -n ${1:-} ]] || return 1
    { read -r line <"/proc/$1/stat"; } 2>/dev/null || return 1
    st=${line##*) }
    st=${st%% *}
    [[ -n $st && $st != Z && $st != X ]]
}

# srm_nap SECONDS: sleep without starting a process (`read -t` on a pipe
# nobody writes). A process costs 8 ms here when the machine is idle and
# several times that under load; polling loops would start one per look.
SRM_NAP_FD=
srm_nap() {
    [[ -n $SRM_NAP_FD ]] || exec {SRM_NAP_FD}<> <(:)
    read -r -t "$1" -u "$SRM_NAP_FD" _ || :
}

# srm_now_us: wall-clock microseconds (bash 5), for deadlines that hold
# however slowly the polling loops run.
srm_now_us() { local t=${EPOCHREALTIME/./}; echo "${t#0}"; }

# srm_kill_pids GRACE PID...: SIGTERM to every PID that runs, SIGKILL to
# those that still run GRACE seconds later, then reap them; by PID only.
srm_kill_pids() {
    local grace=$1 p deadline alive=() still=()

    shift
    for p in "$@"; do srm_alive "$p" && alive+=("$p"); done
    [[ ${#alive[@]} -gt 0 ]] || return 0
    kill -TERM "${alive[@]}" 2>/dev/null || :
    deadline=$(( $(srm_now_us) + grace * 1000000 ))
    while :; do
        still=()
        for p in "${alive[@]}"; do srm_alive "$p" && still+=("$p"); done
        [[ ${#still[@]} -gt 0 && $(srm_now_us) -lt $deadline ]] || break
        srm_nap 0.1
    done
    for p in "${still[@]}"; do
        echo "    (pid $p ignored SIGTERM; sending SIGKILL)" >&2
        kill -KILL "$p" 2>/dev/null || :
    done
    # Children are reaped; others (mpirun's ranks) are waited for a while.
    deadline=$(( $(srm_now_us) + 5000000 ))
    for p in "${alive[@]}"; do
        wait "$p" 2>/dev/null || :
        while srm_alive "$p" && [[ $(srm_now_us) -lt $deadline ]]; do
            srm_nap 0.1
        done
    done
}

# srm_wait_first VAR PID...: waits until one of the PIDs (children of this
# shell) has ended, sets VAR to it and returns its exit status. Not
# `wait -n`: bash 5.2's forgets a child that ended before it was called
# ("no such job") and waits on for the others, for ever if they are agents.
# With SRM_WAIT_FIRST_UNTIL set (a value of $SECONDS), returns 0 with VAR
# empty when that time comes first.
srm_wait_first() {
    local -n srm_wait_first_pid=$1
    local p

    shift
    for (( ;; )); do
        if [[ -n ${SRM_WAIT_FIRST_UNTIL:-} ]] &&
           (( SECONDS >= SRM_WAIT_FIRST_UNTIL )); then
            srm_wait_first_pid=''
            return 0
        fi
        for p in "$@"; do
            if ! srm_alive "$p"; then
                srm_wait_first_pid=$p
                wait "$p"
                return
            fi
        done
        srm_nap 0.02
    done
}

# srm_descendants PID...: the children of PID, recursively (to clean up
# after mpirun and the like).
srm_descendants() {
    local p c
    for p in "$@"; do
        for c in $(pgrep -P "$p" 2>/dev/null); do
            echo "$c"
            srm_descendants "$c"
        done
    done
}

# ------------------------------------------------------ simulated hosts --

# srm_hosts_taken PREFIX: true if a cluster of that prefix is up already
# (someone else's: not to be touched).
srm_hosts_taken() {
    local list

    # Not `list | grep -q`: grep leaves at the first match, list dies of
    # SIGPIPE, and under pipefail a cluster that is up would count as not.
    list=$(timeout 20 "$SRM_NETNS_CLUSTER" list --prefix "$1" 2>/dev/null) || :
    [[ $list == *': up'* ]]
}

# srm_hosts_up N PREFIX LOG [NETNS-CLUSTER-OPTION...]: hosts PREFIXh1 ..
# PREFIXhN (array SRM_HOSTS), netns-cluster's output in LOG. False, with
# the end of LOG on stderr, when they do not come up: the caller takes
# down what came up (srm_hosts_down) whatever happened.
srm_hosts_up() {
    local n=$1 prefix=$2 log=$3 i

    shift 3
    SRM_HOSTS=()
    for (( i = 1; i <= n; i++ )); do SRM_HOSTS+=("${prefix}h$i"); done
    timeout -k 5 120 "$SRM_NETNS_CLUSTER" up "$n" --prefix "$prefix" "$@" \
        >"$log" 2>&1 && return 0
    echo "netns-cluster up $n --prefix $prefix failed:" >&2
    tail -n 15 "$log" >&2
    return 1
}

# srm_hosts_down PREFIX LOG: takes the cluster down (appending to LOG).
srm_hosts_down() {
    timeout -k 5 60 "$SRM_NETNS_CLUSTER" down --prefix "$1" >>"$2" 2>&1 && return 0
    echo "netns-cluster down --prefix $1 failed (see $2)" >&2
    return 1
}

# ---------------------------------------------------------------- agents --

# srm_netns_ctl HOST SRMCTL-ARGS...: srmctl inside HOST on @SRM_SOCKET.
srm_netns_ctl() {
    local h=$1
    shift
    timeout -k 2 10 "$SRM_NETNS_CLUSTER" exec "$h" env -u LD_PRELOAD \
        "$SRM_SRMCTL" -s "$SRM_SOCKET" -t 3 "$@"
}

# srm_netns_status_get HOST JQ-FILTER: what FILTER picks out of the status
# of the srmd in HOST (`srmctl status --json`, docs/status-json.md), one
# value per line; nothing if the agent does not answer.
srm_netns_status_get() {
    { srm_netns_ctl "$1" status --json 2>/dev/null || :; } | srm_json_get "$2"
}

# srm_json_get JQ-FILTER: FILTER applied to the JSON on stdin, raw.
srm_json_get() { jq -r "$1" 2>/dev/null || :; }

# srm_agent_spawn_cmd HOST LOG [VAR=VALUE...] [-- SRMD-ARG...]: sets
# SRM_AGENT_CMD, the command that starts srmd in HOST on @SRM_SOCKET with
# VAR=VALUE... in its environment, its log in LOG and SRMD-ARGs. It runs in
# a session of its own, as UCX starts one (srmd --daemonize calls setsid):
# with autogroup scheduling (the kernel's default) a session is a
# scheduling group, and an agent in the caller's session would share the
# ranks' CPU share. setsid does not fork: started in the background, $! is
# the agent. SRM_AGENT_SETSID=0 keeps it in the caller's session (the
# tests: so that their runner's process-group kill reaches it).
srm_agent_spawn_cmd() {
    local h=$1 log=$2 vars=() session=(setsid)
    shift 2
    while [[ $# -gt 0 && $1 != -- ]]; do vars+=("$1"); shift; done
    [[ $# -eq 0 ]] || shift
    [[ ${SRM_AGENT_SETSID:-1} == 1 ]] || session=()
    SRM_AGENT_CMD=("$SRM_NETNS_CLUSTER" exec "$h" env -u LD_PRELOAD
                   -u UCX_SRM_SOCKET -u UCX_SRM_AGENT "${vars[@]}"
                   "${session[@]}" "$SRM_SRMD" -s "$SRM_SOCKET" -l "$log" "$@")
}

# srm_agent_ready HOST PID LOG: waits up to 10 s until the srmd PID in
# HOST answers and reports PID as its own; false, with why and the end of
# LOG on stderr, if it does not.
srm_agent_ready() {
    local h=$1 pid=$2 log=$3 i reported=

    for (( i = 0; i < 50; i++ )); do
        if ! srm_alive "$pid"; then
            echo "srmd in $h exited at start:" >&2
            tail -n 15 "${log%.log}.out" "$log" >&2 2>/dev/null
            return 1
        fi
        # Its own PID once it answers (a loaded machine may miss one try).
        reported=$(srm_netns_status_get "$h" .agent.pid)
        [[ -n $reported ]] && break
        srm_nap 0.2
    done
    if [[ -z $reported ]]; then
        echo "srmd in $h does not answer on @$SRM_SOCKET after 10 s:" >&2
        tail -n 15 "$log" >&2 2>/dev/null
        return 1
    fi
    [[ $reported == "$pid" ]] && return 0
    echo "srmd in $h reports pid '$reported', but the started one is $pid" \
         "(another agent on @$SRM_SOCKET?)" >&2
    return 1
}
