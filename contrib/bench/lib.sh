# shellcheck shell=bash
# SPDX-License-Identifier: BSD-3-Clause
# lib.sh - the benchmarks' layer on contrib/srm-harness.sh (the build,
# processes, simulated hosts, agents, status): options, CPU accounting,
# statistics, report tables and plots, MPI jobs. Sourced, not run.
#
# The caller sets PROG (its name for messages) and runs with set -euo
# pipefail.  With pipefail, never let the reader of a pipe stop early (awk
# exit, head): the writer's SIGPIPE would fail the pipeline.
#
# Globals the caller provides where a function needs them: PROG, WORK,
# CMDS, PIDS, REPS, TRANSPORTS, VALUES, DISTURBED_IN, FOREIGN_CPU,
# FOREIGN_SEEN, FOREIGN_NAMES, DISTURBED_RUNS, FOREIGN_CPU_TOTAL, FAILED,
# KEEP_LOGS, INFO_CLOCK (1: info prints the seconds since the start).
# shellcheck disable=SC2154,SC2034  # those globals belong to the caller

# shellcheck source-path=SCRIPTDIR/.. source=srm-harness.sh
. "$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)/srm-harness.sh"

# ------------------------------------------------------------- messages --

# die MESSAGE: print an error and exit 1.
die()  { printf '%s: error: %s\n' "$PROG" "$*" >&2; exit 1; }
# bad MESSAGE: print a usage error and exit 2.
bad()  { printf '%s: %s\nTry "%s --help".\n' "$PROG" "$*" "$PROG" >&2; exit 2; }
# info MESSAGE: progress message on stderr (with [seconds] if INFO_CLOCK=1).
info() {
    if [[ ${INFO_CLOCK:-0} == 1 ]]; then
        printf '%s: [%3d s] %s\n' "$PROG" "$SECONDS" "$*" >&2
    else
        printf '%s: %s\n' "$PROG" "$*" >&2
    fi
}

# -------------------------------------------------------------- options --

# need_arg OPTION ARGS...: fail unless OPTION is followed by a value.
need_arg() { [[ $# -ge 2 && -n $2 ]] || bad "option $1 needs an argument"; }
# is_uint WORD: is WORD a non-negative integer?
is_uint()  { [[ $1 =~ ^[0-9]+$ ]]; }
# is_number WORD: is WORD a non-negative decimal number?
is_number() { [[ $1 =~ ^[0-9]+(\.[0-9]+)?$ ]]; }

# common_option ARGS...: parse one option both scripts know; sets OPT_SHIFT
# to the number of words it took (0: not a common option).
common_option() {
    OPT_SHIFT=1
    case $1 in
    --build)     need_arg "$@"; BUILD=$2; OPT_SHIFT=2 ;;
    --build=*)   BUILD=${1#*=} ;;
    --reps)      need_arg "$@"; REPS=$2; OPT_SHIFT=2 ;;
    --reps=*)    REPS=${1#*=} ;;
    --iters)     need_arg "$@"; ITERS=$2; OPT_SHIFT=2 ;;
    --iters=*)   ITERS=${1#*=} ;;
    --out)       need_arg "$@"; OUT=$2; OPT_SHIFT=2 ;;
    --out=*)     OUT=${1#*=} ;;
    --port)      need_arg "$@"; PORT_BASE=$2; OPT_SHIFT=2 ;;
    --port=*)    PORT_BASE=${1#*=} ;;
    --timeout)   need_arg "$@"; TIMEOUT=$2; OPT_SHIFT=2 ;;
    --timeout=*) TIMEOUT=${1#*=} ;;
    --keep-logs) KEEP_LOGS=1 ;;
    --quick)     QUICK=1 ;;
    *)           OPT_SHIFT=0 ;;
    esac
}

# check_reps: --reps must be 1..100.
check_reps() {
    if ! is_uint "$REPS" || (( REPS < 1 || REPS > 100 )); then
        bad "--reps must be 1..100, not '$REPS'"
    fi
}
# check_iters MIN: --iters must be an integer >= MIN.
check_iters() {
    if ! is_uint "$ITERS" || (( ITERS < $1 )); then
        bad "--iters must be an integer >= $1, not '$ITERS'"
    fi
}
# check_timeout: --timeout must be a positive integer.
check_timeout() {
    if ! is_uint "$TIMEOUT" || (( TIMEOUT < 1 )); then
        bad "--timeout must be a positive integer, not '$TIMEOUT'"
    fi
}
# check_port MAX: --port must be 1024..MAX.
check_port() {
    if ! is_uint "$PORT_BASE" || (( PORT_BASE < 1024 || PORT_BASE > $1 )); then
        bad "--port must be 1024..$1, not '$PORT_BASE'"
    fi
}

# ---------------------------------------------------------- environment --

# find_srm_build: check the build directory BUILD (made absolute); sets
# SRM_SRMD, SRM_SRMCTL and SRM_MODULE (srm_build_at).
find_srm_build() {
    BUILD=$(cd "$BUILD" 2>/dev/null && pwd) || die "no directory '$BUILD'"
    srm_build_at "$BUILD" ||
        die "'$BUILD' is not an srm build directory (want srmd, srmctl and .libs/libuct_srm.so.0)"
}

# find_ucx_tools: sets PERFTEST ($UCX_PERFTEST or from PATH), PERFTEST_RTE
# (-P 0 where perftest is built with MPI, as from Debian 13: else a pair
# waits for an MPI peer) and UCX_INFO.
find_ucx_tools() {
    PERFTEST=${UCX_PERFTEST:-$(command -v ucx_perftest || true)}
    [[ -n $PERFTEST && -x $PERFTEST ]] || die "ucx_perftest not found (install ucx-utils or set UCX_PERFTEST)"
    PERFTEST_RTE=()
    if grep -q '^ *-P ' <<<"$("$PERFTEST" -h 2>&1 || true)"; then
        PERFTEST_RTE=(-P 0)
    fi
    UCX_INFO=$(command -v ucx_info || true)
    [[ -n $UCX_INFO ]] || die "ucx_info not found (install ucx-utils)"
}

# require_tools SUFFIX TOOL...: die "TOOL not found SUFFIX" for a missing one.
require_tools() {
    local tool
    if tool=$(srm_missing_cmd "${@:2}"); then
        die "$tool not found$1"
    fi
}

# ------------------------------------------------------ processes, logs --

# forget_pid PID: remove PID from PIDS.
forget_pid() {
    local p keep=()
    for p in "${PIDS[@]}"; do [[ $p == "$1" ]] || keep+=("$p"); done
    PIDS=("${keep[@]}")
}

# make_work_dir NAME: sets WORK to a new $TMPDIR/NAME.XXXXXX and CMDS to
# its empty command list.
make_work_dir() {
    WORK=$(mktemp -d "${TMPDIR:-/tmp}/$1.XXXXXX")
    CMDS=$WORK/commands.sh
    : >"$CMDS"
}

# set_traps: run cleanup (the caller's) on exit, exit 130/143 on INT/TERM.
set_traps() {
    trap cleanup EXIT
    trap 'info "interrupted"; exit 130' INT
    trap 'info "terminated"; exit 143' TERM
}

# drop_work_dir: remove WORK after a complete run, else say where it is.
drop_work_dir() {
    if [[ $FAILED == 0 && $KEEP_LOGS == 0 ]]; then
        rm -rf "$WORK"
    else
        info "logs kept in $WORK"
    fi
}

# quote WORD...: the words as one shell-quoted line.
quote() { local a q out=; for a in "$@"; do printf -v q '%q' "$a"; out+=" $q"; done; printf '%s' "${out# }"; }

# record_cmd TITLE SUFFIX WORD...: append "TITLE", the quoted command with
# SUFFIX (e.g. " &") and an empty line to CMDS.
record_cmd() {
    local title=$1 suffix=$2
    shift 2
    printf '%s\n%s%s\n\n' "$title" "$(quote "$@")" "$suffix" >>"$CMDS"
}

# POLICY_JQ, COUNTERS_JQ: the agent's policy and counters for a report,
# from `srmctl status --json`.
COUNTERS_JQ='.counters | to_entries | map("\(.key) \(.value)") | join(" ")'
POLICY_JQ='"poll \(.policy.poll), quantum \(.policy.quantum) B, channel depth \(.policy.channel_depth) B, port backlog \(.policy.port_backlog) B"'

# port_in_state PORT STATE FILE...: is there a socket on local TCP port
# PORT in STATE (hex, 0A: LISTEN; empty: any) in the /proc/net/tcp FILEs?
port_in_state() {
    local port=$1 st=$2 hex f _sl laddr _raddr state
    shift 2
    printf -v hex '%04X' "$port"
    for f in "$@"; do
        while read -r _sl laddr _raddr state _; do
            [[ ${laddr##*:} == "$hex" && ( -z $st || $state == "$st" ) ]] && return 0
        done <"$f"
    done 2>/dev/null
    return 1
}

# write_out FILE COMMAND...: write the output of COMMAND to FILE
# atomically, or die.
write_out() {
    local file=$1
    shift
    if ! { "$@" >"$file.tmp.$$" && mv -f "$file.tmp.$$" "$file"; }; then
        rm -f "$file.tmp.$$"
        die "cannot write $file"
    fi
}

# --------------------------------------------------------- disturbances --

# foreign_load OWN-PID...: names of processes that run (state R) in two
# samples 50 ms apart and are neither this shell, OWN-PIDs, processes of
# this script's cgroup nor kernel threads (children of kthreadd, pid 2);
# short-lived helpers are thus ignored.  Builtins only: it runs after
# every measured run.
foreign_load() {
    local p mine=" $$ $BASHPID $* " out=
    local -A first=() second=() named=() ours=()
    running_processes first
    srm_nap 0.05
    running_processes second
    if [[ -n $CPU_GROUP ]]; then
        while read -r p; do ours[$p]=1; done 2>/dev/null <"$CPU_GROUP/cgroup.procs" || :
    fi
    for p in "${!second[@]}"; do
        [[ -n ${first[$p]:-} && $mine != *" $p "* && -z ${ours[$p]:-} ]] || continue
        [[ -n ${named[${second[$p]}]:-} ]] && continue
        named[${second[$p]}]=1
        out+=${out:+ }${second[$p]}
    done
    printf '%s' "$out"
}

# running_processes ARRAY: fills the associative ARRAY with PID -> COMM
# of the running processes but kernel threads.
running_processes() {
    local -n running_into=$1
    local f line pid comm rest st ppid
    for f in /proc/[0-9]*/stat; do
        { read -r line <"$f"; } 2>/dev/null || continue
        rest=${line##*) }
        st=${rest%% *}
        [[ $st == R ]] || continue
        rest=${rest#* }
        ppid=${rest%% *}
        pid=${line%% *}
        [[ $pid != 2 && $ppid != 2 ]] || continue
        comm=${line#*(}
        running_into[$pid]=${comm%)*}
    done
}

# Clock ticks per second of /proc/stat and /proc/PID/stat.
HZ=$(getconf CLK_TCK 2>/dev/null || echo 100)

# What "ours" is measured with: a cgroup of this script (CPU_GROUP, every
# process it starts, even one that its parent never waits for, such as the
# ranks Open MPI starts on other hosts) or, without cgroups, this shell's
# reaped children plus the OWN-PIDs.
CPU_GROUP=
CPU_GROUP_KIND=

# cpu_group_join NAME: moves this shell into a new CPU accounting cgroup
# NAME.PID (cgroup v1 cpuacct, else v2), before it starts anything.  Without
# one, says so: the processes it starts but does not reap will then count
# as foreign and mark runs disturbed.
cpu_group_join() {
    local root dir usage
    for root in /sys/fs/cgroup/cpuacct /sys/fs/cgroup/unified /sys/fs/cgroup; do
        if [[ -e $root/cpuacct.usage ]]; then
            CPU_GROUP_KIND=cpuacct
        elif [[ -e $root/cgroup.controllers ]]; then
            CPU_GROUP_KIND=v2
        else
            continue
        fi
        dir=$root/$1.$$
        if mkdir "$dir" 2>/dev/null && { echo $$ >"$dir/cgroup.procs"; } 2>/dev/null &&
           cpu_group_usage_of "$dir" usage; then
            CPU_GROUP=$dir
            return 0
        fi
        rmdir "$dir" 2>/dev/null || true
    done
    CPU_GROUP_KIND=
    info "WARNING: no CPU accounting cgroup could be made (needs root and cgroup cpuacct or v2);" \
         "CPU of processes this script does not reap counts as foreign"
}

# cpu_group_usage_of DIR VAR: sets VAR to the CPU seconds used by the
# processes of cgroup DIR (%.3f); read with builtins, no subshell: it runs
# twice per measured run.
cpu_group_usage_of() {
    local k v
    case $CPU_GROUP_KIND in
    cpuacct) read -r v <"$1/cpuacct.usage" || return 1
             ms_to_seconds "$2" $(( v / 1000000 )) ;;
    v2)      while read -r k v; do
                 [[ $k == usage_usec ]] && { ms_to_seconds "$2" $(( v / 1000 )); return 0; }
             done <"$1/cpu.stat"
             return 1 ;;
    *)       return 1 ;;
    esac
}

# ms_to_seconds VAR MS: sets VAR to MS milliseconds as seconds, %.3f.
ms_to_seconds() { printf -v "$1" '%d.%03d' $(( $2 / 1000 )) $(( $2 % 1000 )); }

# cpu_group_leave: moves this shell back and removes its cgroup (which its
# processes, all stopped by now, must have left).
cpu_group_leave() {
    local i
    [[ -n $CPU_GROUP ]] || return 0
    echo $$ >"${CPU_GROUP%/*}/cgroup.procs" 2>/dev/null || true
    for (( i = 0; i < 50; i++ )); do
        rmdir "$CPU_GROUP" 2>/dev/null && { CPU_GROUP=; return 0; }
        srm_nap 0.1
    done
    info "WARNING: cgroup $CPU_GROUP still has processes: $(paste -sd ' ' "$CPU_GROUP/cgroup.procs" 2>/dev/null)"
}

# cpu_mark OWN-PID...: sets CPU_MARK="ALL OURS" (s).  ALL is the CPU time
# the kernel accounted to processes (/proc/stat: user, nice, system; irq
# and softirq time are left out: on this machine they are mostly the
# simulated hosts' own network traffic, which no process is charged for).
# OURS is this script's cgroup, or (without one) this shell, its reaped
# children (via "times") and the OWN-PIDs (the agents).  Call it in this
# shell, not in $(...): "times" of a subshell would be the subshell's.
cpu_mark() {
    local all ours agents=0 p
    local _cpu user nice system
    read -r _cpu user nice system _ </proc/stat
    ms_to_seconds all $(( (user + nice + system) * 1000 / HZ ))
    if [[ -n $CPU_GROUP ]] && cpu_group_usage_of "$CPU_GROUP" ours; then
        CPU_MARK="$all $ours"
        return 0
    fi
    times >"$WORK/times"
    ours=$(awk '{ for (i = 1; i <= NF; i++) { split($i, t, /[ms]/); s += t[1] * 60 + t[2] } }
                END { printf "%.3f", s }' "$WORK/times")
    for p in "$@"; do
        [[ -n $p && -r /proc/$p/stat ]] || continue
        agents=$(awk -v hz="$HZ" -v a="$agents" '{ sub(/^.*\) /, ""); printf "%.3f", a + ($12 + $13) / hz }' \
                 "/proc/$p/stat" 2>/dev/null || echo "$agents")
    done
    CPU_MARK="$all $(awk -v o="$ours" -v g="$agents" 'BEGIN { printf "%.3f", o + g }')"
}

# mark_start OWN-PID...: sets MARK0 (cpu_mark) and T0 (time) of a run.
mark_start() { cpu_mark "$@"; MARK0=$CPU_MARK; T0=$EPOCHREALTIME; }
# mark_end OWN-PID...: sets MARK1 (cpu_mark) and T1 (time) of a run.
mark_end()   { cpu_mark "$@"; MARK1=$CPU_MARK; T1=$EPOCHREALTIME; }

# judge_run SEEN: sets FOREIGN_CPU (s of other processes between MARK0 and
# MARK1), FOREIGN_SEEN=SEEN and DISTURBED: 1 if that is more than 5 % of a
# core (plus 30 ms for the tick granularity of /proc/stat) or SEEN (names
# of other processes seen running) is not empty.
judge_run() {
    FOREIGN_CPU=$(awk -v m0="$MARK0" -v m1="$MARK1" -v t0="$T0" -v t1="$T1" 'BEGIN {
        split(m0, a, " "); split(m1, b, " ")
        f = (b[1] - a[1]) - (b[2] - a[2]); if (f < 0) f = 0
        printf "%.2f %d\n", f, (f > 0.05 * (t1 - t0) + 0.03) }')
    FOREIGN_SEEN=$1
    DISTURBED=0
    [[ -z $FOREIGN_SEEN && ${FOREIGN_CPU#* } == 0 ]] || DISTURBED=1
    FOREIGN_CPU=${FOREIGN_CPU% *}
}

# tally_disturbed: count a disturbed run in DISTURBED_RUNS,
# FOREIGN_CPU_TOTAL and FOREIGN_NAMES.
tally_disturbed() {
    local n
    DISTURBED_RUNS=$(( DISTURBED_RUNS + 1 ))
    FOREIGN_CPU_TOTAL=$(awk -v a="$FOREIGN_CPU_TOTAL" -v b="$FOREIGN_CPU" 'BEGIN { print a + b }')
    # shellcheck disable=SC2004  # FOREIGN_NAMES is the caller's associative array
    for n in $FOREIGN_SEEN; do FOREIGN_NAMES[$n]=1; done
}

# print_disturbance NOUN: the report lines on other processes' CPU during
# the DISTURBED_RUNS of TOTAL_RUNS NOUN (jobs, runs), and how it is measured.
print_disturbance() {
    local how="this shell's reaped children and the agents (no cgroup: CPU of processes it does not reap counts as foreign)"
    [[ -z $CPU_GROUP ]] || how="this script's cgroup ($CPU_GROUP_KIND), which holds every process it starts"
    if (( DISTURBED_RUNS > 0 )); then
        printf -- '- **WARNING: the machine was not idle**: other processes took %s s of CPU in %d of %d %s%s; cells with such %s are marked *\n' \
            "$FOREIGN_CPU_TOTAL" "$DISTURBED_RUNS" "$TOTAL_RUNS" "$1" "$(seen_running)" "$1"
    fi
    printf -- '- other processes'"'"' CPU: /proc/stat user + nice + system less %s; a run is disturbed above 5 %% of a core\n' "$how"
}

# seen_running: "; seen running: NAMES" of FOREIGN_NAMES, or nothing.
seen_running() {
    (( ${#FOREIGN_NAMES[@]} == 0 )) ||
        printf '; seen running: %s' "$(printf '%s\n' "${!FOREIGN_NAMES[@]}" | sort | paste -sd ' ' -)"
}

# ------------------------------------------------------- ucx_perftest --

# final_line FILE: the 8 numbers of the last valid "Final:" line of
# ucx_perftest's client output ("inf"/"nan" allowed: they occur in the
# last-interval columns when the last interval was empty), or nothing.
final_line() {
    awk '$1 == "Final:" && NF == 9 {
             for (i = 2; i <= 9; i++)
                 if ($i !~ /^([0-9]+(\.[0-9]+)?|-?(inf|nan))$/) next
             line = $2; for (i = 3; i <= 9; i++) line = line " " $i
         }
         END { if (line != "") print line }' "$1"
}

# final_field FINAL FIELD: column FIELD (1-based) of a final_line.
final_field() { awk -v f="$2" '{ print $f }' <<<"$1"; }

# seconds_between T0 T1 FORMAT: T1 - T0 printed with the printf FORMAT.
seconds_between() { awk -v a="$1" -v b="$2" -v f="$3" 'BEGIN { printf f, b - a }'; }

# ---------------------------------------------------------------- report --

# The statistics and number formats of every report: srm-stats.
SRM_STATS=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/srm-stats

# ratio A B: A / B with 2 decimals ("inf" when B is 0).
ratio() { "$SRM_STATS" ratio "$1" "$2"; }

# stats VALUES... -> "median min max" (0 0 0 for none).
stats() {
    local n med lo hi
    (( $# > 0 )) || { echo "0 0 0"; return; } # srm-stats would read stdin
    read -r n med lo hi _ < <("$SRM_STATS" summary "$@")
    (( n > 0 )) || { echo "0 0 0"; return; }
    echo "$med $lo $hi"
}

# median_of KEY: the median of VALUES[KEY] (the caller's array).
# shellcheck disable=SC2086  # a list of numbers
median_of() { local med; read -r med _ _ < <(stats ${VALUES[$1]}); printf '%s' "$med"; }

# fit_slope: least-squares slope of the "X Y" lines on stdin.
fit_slope() { "$SRM_STATS" slope; }

# fmt KIND NUMBER: NUMBER for the table; KIND lat (us), bw (MB/s; below 10
# with decimals), mr (msg/s).
fmt() { "$SRM_STATS" fmt "$1" "$2"; }

# table_head COLUMN...: markdown table head, first column left aligned.
table_head() {
    local c sep='|---|'
    printf '|'
    for c in "$@"; do printf ' %s |' "$c"; done
    printf '\n'
    for (( c = 1; c < $#; c++ )); do sep+='---:|'; done
    printf '%s\n' "$sep"
}

# table_row LABEL KIND KEY: a row: LABEL, per TRANSPORTS the median [min,
# max] (REPS > 1) of VALUES[tl/KEY], "*" if DISTURBED_IN, and srm / tcp.
table_row() {
    local label=$1 kind=$2 key=$3 tl med lo hi cell
    local -A med_of=()
    printf '| %s ' "$label"
    for tl in "${TRANSPORTS[@]}"; do
        # shellcheck disable=SC2086  # a list of numbers
        read -r med lo hi < <(stats ${VALUES[$tl/$key]})
        med_of[$tl]=$med
        cell=$(fmt "$kind" "$med")
        (( REPS > 1 )) && cell+=" [$(fmt "$kind" "$lo"), $(fmt "$kind" "$hi")]"
        (( ${DISTURBED_IN[$tl/$key]:-0} == 0 )) || cell+=" *"
        printf '| %s ' "$cell"
    done
    cell=$(ratio "${med_of[srm]}" "${med_of[tcp]}")
    printf '| %s |\n' "${cell/inf/n\/a}"
}

# ucx_version: the UCX version ucx_info reports.
ucx_version() { "$UCX_INFO" -v | awk '/Version/ && !v { v = $3 } END { print v }'; }
# srmd_version: the first line of "srmd --version".
srmd_version() { "$SRM_SRMD" --version 2>/dev/null | awk 'NR == 1'; }
# cpu_model: the first "model name" of /proc/cpuinfo.
cpu_model() { awk -F': ' '/^model name/ && !d { print $2; d = 1 }' /proc/cpuinfo; }

# print_inherited_ucx: report line of the caller's UCX_* settings, if any.
print_inherited_ucx() {
    local inherited
    inherited=$(env | awk -F= '/^UCX_/ && $1 != "UCX_TLS" && $1 != "UCX_NET_DEVICES" { printf "%s%s", sep, $0; sep = " " }')
    [[ -z $inherited ]] || printf -- '- inherited UCX settings: %s\n' "$inherited"
}

# ------------------------------------------- MPI across simulated hosts --
#
# For mesh.sh and resources.sh: a private netns-cluster, one srmd per
# host, MPI jobs through contrib/netns-mpirun.  Globals the caller sets:
# SRM_NETNS_CLUSTER (netns-cluster), PFX (cluster prefix), SRM_SOCKET (the agents' socket),
# SRM_SRMD, SRM_SRMCTL, SRM_MODULE (find_srm_build), WORK, CMDS, TIMEOUT; these
# functions set SRM_HOSTS, CLUSTER_UP, AGENT[host] (declare -A AGENT first),
# JOB_DIR, JOB_OUT, MESH_RESULT, MESH.
# shellcheck disable=SC2004  # AGENT is the caller's associative array

# wait_line PID FILE PREFIX: wait until FILE (the output of job PID) has a
# line starting with PREFIX, or PID has ended.
wait_line() {
    while srm_alive "$1" && ! has_line "$2" "$3"; do srm_nap 0.02; done
}

# has_line FILE PREFIX: does a line of FILE start with PREFIX?  Builtins
# only, for polling loops.
has_line() {
    local line
    while IFS= read -r line || [[ -n $line ]]; do
        [[ $line == "$2"* ]] && return 0
    done <"$1"
    return 1
}

# cluster_up N [NETNS-CLUSTER-OPTION...]: bring up hosts PFXh1..PFXhN
# (sets SRM_HOSTS, CLUSTER_UP=1), refusing a cluster of that prefix that is
# already up (not ours).
cluster_up() {
    local n=$1
    shift
    srm_hosts_taken "$PFX" &&
        die "a cluster with prefix $PFX is already up (not ours); not touching it"
    CLUSTER_UP=1
    srm_hosts_up "$n" "$PFX" "$WORK/cluster.log" "$@" ||
        die "netns-cluster up $n --prefix $PFX failed"
    record_cmd '# cluster' '' "$SRM_NETNS_CLUSTER" up "$n" --prefix "$PFX" "$@"
}

# hosts_tcp_cc [NAME]: with NAME, sets the TCP congestion control of every
# host of SRM_HOSTS (sysctl net.ipv4.tcp_congestion_control: srm's channels and
# UCX's tcp alike) and records the commands; dies, naming what the host
# allows, if one refuses it. Sets HOST_CC to what the first host runs.
hosts_tcp_cc() {
    local cc=${1:-} h
    if [[ -n $cc ]]; then
        for h in "${SRM_HOSTS[@]}"; do
            "$SRM_NETNS_CLUSTER" exec "$h" sysctl -q -w net.ipv4.tcp_congestion_control="$cc" \
                >"$WORK/sysctl.$h.log" 2>&1 ||
                die "--tcp-cc $cc: $h refuses it ($(head -c 200 "$WORK/sysctl.$h.log"); allowed there: $("$SRM_NETNS_CLUSTER" exec "$h" cat /proc/sys/net/ipv4/tcp_allowed_congestion_control))"
            record_cmd "# congestion control in $h" '' "$SRM_NETNS_CLUSTER" exec "$h" sysctl -w net.ipv4.tcp_congestion_control="$cc"
        done
    fi
    HOST_CC=$("$SRM_NETNS_CLUSTER" exec "${SRM_HOSTS[0]}" cat /proc/sys/net/ipv4/tcp_congestion_control)
}

# tcp_cc_line SET: the report line naming the hosts' congestion control;
# SET is the --tcp-cc given, if any.
tcp_cc_line() {
    printf -- '- TCP congestion control in every host: %s (%s)\n' "$HOST_CC" \
        "$([[ -n $1 ]] && echo "--tcp-cc" || echo "the kernel's default; --tcp-cc sets another")"
}

# cluster_down: tear down the cluster if cluster_up made it (for cleanup).
cluster_down() {
    (( ${CLUSTER_UP:-0} )) || return 0
    CLUSTER_UP=0
    srm_hosts_down "$PFX" "$WORK/cluster.log" 2>/dev/null ||
        info "WARNING: 'netns-cluster down --prefix $PFX' failed (see $WORK/cluster.log)"
}

# agents_start TAG: one srmd per host on @SRM_SOCKET (srm_agent_spawn_cmd:
# each in a session of its own, -q), logs srmd.HOST.TAG.log; waits until
# each answers and reports its own PID (AGENT[host]). Called from the main
# shell, so that $! is the srmd.
agents_start() {
    local tag=$1 h
    for h in "${SRM_HOSTS[@]}"; do
        srm_agent_spawn_cmd "$h" "$WORK/srmd.$h.$tag.log" -- -q
        "${SRM_AGENT_CMD[@]}" >"$WORK/srmd.$h.$tag.out" 2>&1 &
        AGENT[$h]=$!
        record_cmd "# agent in $h" ' &' "${SRM_AGENT_CMD[@]}"
    done
    for h in "${SRM_HOSTS[@]}"; do
        srm_agent_ready "$h" "${AGENT[$h]}" "$WORK/srmd.$h.$tag.log" ||
            die "srmd in $h did not come up (above)"
    done
}

# agents_alive: every AGENT still runs.
agents_alive() {
    local h
    for h in "${SRM_HOSTS[@]}"; do
        [[ -n ${AGENT[$h]:-} ]] && srm_alive "${AGENT[$h]}" || return 1
    done
}

# agents_stop: TERM (then KILL) every AGENT; forgets them.
agents_stop() {
    local h
    for h in "${SRM_HOSTS[@]}"; do
        [[ -n ${AGENT[$h]:-} ]] || continue
        srm_kill_pids 2 "${AGENT[$h]}"
        AGENT[$h]=
    done
}

# tl_env TL: sets TL_ENV, the words netns-mpirun gets in its environment
# (and exports with -x) for transport TL: srm (UCX_TLS=srm, the module in
# LD_PRELOAD of the ranks, our agents) or tcp (UCX_TLS=tcp on eth0).
tl_env() {
    case $1 in
    srm) TL_ENV=(UCX_TLS=srm UCX_SRM_SOCKET="$SRM_SOCKET" UCX_SRM_AGENT=never) ;;
    tcp) TL_ENV=(UCX_TLS=tcp UCX_NET_DEVICES=eth0) ;;
    *)   die "tl_env: unknown transport '$1'" ;;
    esac
}

# mpi_job_start LABEL TL PPN PROGRAM [ARGS...]: start PROGRAM on every
# host of JOB_HOSTS (comma separated; empty: all of SRM_HOSTS), PPN ranks
# each, through netns-mpirun (--timeout TIMEOUT, --yield JOB_YIELD, empty:
# auto) in the background; sets JOB_PID, JOB_DIR (runs/LABEL), JOB_OUT and
# JOB_RANKS.
JOB_HOSTS='' JOB_YIELD=''
mpi_job_start() {
    local label=$1 tl=$2 ppn=$3 w xs=() cmd hosts=${JOB_HOSTS:-$(IFS=,; echo "${SRM_HOSTS[*]}")} host_list
    shift 3
    IFS=, read -r -a host_list <<<"$hosts"
    tl_env "$tl"
    for w in "${TL_ENV[@]}"; do xs+=(-x "${w%%=*}"); done
    [[ $tl != srm ]] || xs+=(-x LD_PRELOAD="$SRM_MODULE")
    JOB_DIR=$WORK/runs/$label
    JOB_OUT=$JOB_DIR/job.log
    JOB_RANKS=$(( ppn * ${#host_list[@]} ))
    mkdir -p "$JOB_DIR"
    cmd=(env -u LD_PRELOAD -u UCX_TLS -u UCX_NET_DEVICES -u UCX_SRM_SOCKET -u UCX_SRM_AGENT
         LC_ALL=C UCX_WARN_UNUSED_ENV_VARS=n "${TL_ENV[@]}"
         "$SRCDIR/contrib/netns-mpirun" --hosts "$hosts"
         --ppn "$ppn" --timeout "$TIMEOUT" --yield "${JOB_YIELD:-auto}"
         -x UCX_WARN_UNUSED_ENV_VARS "${xs[@]}" -- "$@")
    printf '# %s\n%s\n' "$label" "$(quote "${cmd[@]}")" >"$JOB_DIR/cmd"
    cat "$JOB_DIR/cmd" >>"$CMDS"
    printf '\n' >>"$CMDS"
    : >"$JOB_OUT"
    "${cmd[@]}" >"$JOB_OUT" 2>&1 &
    JOB_PID=$!
    PIDS+=("$JOB_PID")
}
# job_failure MESSAGE: show the command and log of the job in JOB_DIR and
# the agents' logs, then die with MESSAGE.
job_failure() {
    local f
    {
        printf '\n--- failed job: command (%s/cmd) ---\n' "$JOB_DIR"
        cat "$JOB_DIR/cmd"
        printf -- '--- %s (last 30 lines) ---\n' "$JOB_OUT"
        tail -n 30 "$JOB_OUT" || true
        for f in "$WORK"/srmd.*.log "$WORK"/srmd.*.out; do
            [[ -s $f ]] || continue
            printf -- '--- %s (last 10 lines) ---\n' "$f"
            tail -n 10 "$f" || true
        done
    } >&2
    die "$*"
}

# mpi_job_wait: wait for JOB_PID; dies (job_failure) unless it exited 0.
mpi_job_wait() {
    local rc=0
    wait "$JOB_PID" || rc=$?
    forget_pid "$JOB_PID"
    (( rc == 0 )) && return 0
    (( rc == 124 )) && job_failure "job $JOB_DIR timed out after $TIMEOUT s (a hang?)"
    job_failure "job $JOB_DIR exited with status $rc"
}

# result_line FILE PREFIX ARRAY: the last line of FILE that starts with
# PREFIX into RESULT_LINE (empty if none; a missing FILE has none), how
# many there are into RESULT_LINES, and the KEY=VALUE words after PREFIX
# into the associative ARRAY[KEY].  Builtins only: it runs after every job.
result_line() {
    local -n result_into=$3
    local line w words
    RESULT_LINE='' RESULT_LINES=0 result_into=()
    while IFS= read -r line || [[ -n $line ]]; do
        [[ $line == "$2"* ]] || continue
        RESULT_LINES=$(( RESULT_LINES + 1 ))
        RESULT_LINE=$line
    done 2>/dev/null <"$1" || :
    read -r -a words <<<"${RESULT_LINE#"$2"}"
    for w in "${words[@]}"; do
        [[ $w != *=* ]] || result_into[${w%%=*}]=${w#*=}
    done
}

# mesh_result: the "srm_mesh: result" line of JOB_OUT into MESH_RESULT
# and its KEY=VALUE words into MESH[KEY]; dies unless there is exactly
# one, with errors=0 and msgs > 0.
declare -A MESH=()
mesh_result() {
    result_line "$JOB_OUT" 'srm_mesh: result ' MESH
    MESH_RESULT=$RESULT_LINE
    (( RESULT_LINES == 1 )) || job_failure "job $JOB_DIR printed $RESULT_LINES result lines, want 1"
    [[ ${MESH[errors]:-} == 0 ]] || job_failure "job $JOB_DIR: ${MESH[errors]:-no} data errors"
    [[ ${MESH[msgs]:-} =~ ^[0-9]+$ ]] && (( MESH[msgs] > 0 )) || job_failure "job $JOB_DIR moved no messages"
}

# build_program OUT CC TITLE SRC [DEP...]: put the program of contrib/bench
# SRC at OUT: a copy of BUILD's (made by "make"; for srm_mesh only when
# configure found mpicc) if it is newer than SRC and every DEP, else
# compiled here with CC; records how in CMDS under TITLE.
build_program() {
    local out=$1 cc=$2 title=$3 src=$SRCDIR/contrib/bench/$4 name=${4%.c} dep
    local built=$BUILD/$name
    shift 4
    for dep in "$src" "${@/#/$SRCDIR/contrib/bench/}"; do
        [[ -x $built && $built -nt $dep ]] || built=''
    done
    if [[ -n $built ]]; then
        cp -- "$built" "$out" || die "cannot copy $built to $out"
        record_cmd "$title (built by make from contrib/bench/$name.c)" '' cp "$built" "$out"
        return 0
    fi
    "$cc" -O2 -Wall -o "$out" "$src" >"$WORK/$cc-$name.log" 2>&1 || {
        cat "$WORK/$cc-$name.log" >&2; die "$cc contrib/bench/$name.c failed"; }
    record_cmd "$title" '' "$cc" -O2 -Wall -o "$out" "$src"
}

# build_mesh OUT: srm_mesh, the MPI traffic of mesh.sh and resources.sh.
build_mesh() { build_program "$1" mpicc '# the program' srm_mesh.c; }

# build_hop_floor OUT: srm_hop_floor, the agent hop without srm (mesh.sh).
build_hop_floor() { build_program "$1" cc '# the floor program' srm_hop_floor.c bench_clock.h; }

# build_wake_cost OUT: srm_wake_cost, what waking a sleeper costs here.
build_wake_cost() { build_program "$1" cc '# the wakeup program' srm_wake_cost.c bench_clock.h; }

declare -A WAKE=()

# measure_wake_cost: srm_wake_cost, WAKE_ITERS wakeups per case (fewer with
# --quick), into WAKE[CASE-p50] and WAKE[CASE-p99] (microseconds); cases it
# skips (one CPU allowed) stay unset.
measure_wake_cost() {
    local bin=$WORK/srm_wake_cost tag name key p50 p99
    WAKE_ITERS=$(( ${QUICK:-0} == 1 ? 200 : 1000 ))
    build_wake_cost "$bin"
    record_cmd '# what a wakeup costs on this machine' '' "$bin" --iters "$WAKE_ITERS"
    timeout -k 5 120 "$bin" --iters "$WAKE_ITERS" >"$WORK/wake-cost.out" 2>&1 ||
        { cat "$WORK/wake-cost.out" >&2; die "srm_wake_cost failed (output above)"; }
    while read -r tag name key p50 _ p99 _; do
        [[ $tag == wake_cost && $key == p50 ]] || continue
        WAKE[$name-p50]=$p50 WAKE[$name-p99]=$p99
    done <"$WORK/wake-cost.out"
}

# wake_cost_line: WAKE as one sentence of a report.
wake_cost_line() {
    local busy=${WAKE[other-cpu-busy-p50]:-} idle=${WAKE[other-cpu-idle-p50]:-}
    printf 'What waking a sleeping process costs here (srm_wake_cost, %s wakeups each, p50 (p99), us): on the CPU of the process that wakes it, which then yields, %s (%s)' \
        "$WAKE_ITERS" "${WAKE[same-cpu-p50]:-?}" "${WAKE[same-cpu-p99]:-?}"
    if [[ -n $busy ]]; then
        printf '; on another CPU, busy with a process that yields, %s (%s); on another, idle CPU, %s (%s)' \
            "$busy" "${WAKE[other-cpu-busy-p99]:-?}" "${idle:-?}" "${WAKE[other-cpu-idle-p99]:-?}"
    else
        printf '; not measured across CPUs (one CPU allowed)'
    fi
    printf '. Ranks that busy-poll a socket of their own (UCX'"'"'s tcp) wake nobody; an agent that sleeps is woken once per hop, and the kernel decides which CPU it wakes on.\n'
}

# --------------------------------------------------------------- plots --

# gp_str TEXT: TEXT as a gnuplot single-quoted string.
gp_str() { printf "'%s'" "${1//\'/\'\'}"; }

# plot_terminal: sets PLOT_TERM (pngcairo if gnuplot has it, else png) and
# PLOT_PROBLEM (non-empty without gnuplot); prints the "set terminal" line.
plot_terminal() {
    PLOT_PROBLEM='' PLOT_TERM=pngcairo
    if ! command -v gnuplot >/dev/null; then
        PLOT_PROBLEM="gnuplot not found (Debian package gnuplot-nox, see contrib/install-deps.sh)"
    elif ! timeout -k 2 20 gnuplot -e 'set terminal pngcairo' </dev/null >/dev/null 2>&1; then
        PLOT_TERM=png
    fi
}

# plot_run DIR SCRIPT PNG...: run gnuplot on SCRIPT in DIR unless
# PLOT_PROBLEM is set; adds to PLOT_PROBLEM what went wrong (a PNG
# missing).
plot_run() {
    local dir=$1 script=$2 png
    shift 2
    for png in "$@"; do rm -f -- "${dir:?}/$png"; done
    [[ -z $PLOT_PROBLEM ]] || return 0
    if ! (cd "$dir" && timeout -k 5 60 gnuplot "$script" </dev/null) >"$WORK/gnuplot.log" 2>&1; then
        PLOT_PROBLEM="gnuplot failed: $(tail -n 3 "$WORK/gnuplot.log" | tr '\n' ' ')"
        return 0
    fi
    for png in "$@"; do
        [[ -s $dir/$png ]] || PLOT_PROBLEM+="${PLOT_PROBLEM:+; }gnuplot made no $dir/$png"
    done
}

# plot_head TITLE-2ND-LINE: the common head of a plot script (terminal,
# grid, key, styles) for PLOT_TERM.
plot_head() {
    if [[ $PLOT_TERM == pngcairo ]]; then
        printf "set terminal pngcairo size 960,640 noenhanced font 'DejaVu Sans,11'\n"
    else
        printf 'set terminal png size 960,640 noenhanced\n'
    fi
    printf 'set grid\nset key below height 1.5\nset datafile commentschars "#"\n'
    printf 'set style data linespoints\n'
}

# md_dest PATH: PATH as a markdown link destination (<...> if it has blanks).
md_dest() { if [[ $1 == *[[:space:]]* ]]; then printf '<%s>' "$1"; else printf '%s' "$1"; fi; }

# out_stem DEFAULT: sets PLOT_DIR, PLOT_STEM and PLOT_LINK from OUT (next
# to it, named after it) or WORK (STEM DEFAULT, linked by full path).
out_stem() {
    if [[ -n $OUT ]]; then
        PLOT_DIR=$(cd "$(dirname -- "$OUT")" && pwd)
        PLOT_STEM=$(basename -- "$OUT")
        PLOT_STEM=${PLOT_STEM%.md}
        [[ -n $PLOT_STEM ]] || PLOT_STEM=$1
        PLOT_LINK=
    else
        PLOT_DIR=$WORK PLOT_STEM=$1 PLOT_LINK=$WORK/
    fi
}

# check_out: --out must name a writable place (checked before the runs).
check_out() {
    local d
    [[ -n $OUT ]] || return 0
    d=$(dirname -- "$OUT")
    [[ -d $d && -w $d ]] || bad "--out: directory '$d' does not exist or is not writable"
    [[ ! -d $OUT ]] || bad "--out: '$OUT' is a directory"
}

# check_prefix: --prefix must be a valid netns-cluster prefix.
check_prefix() {
    [[ $PFX =~ ^[A-Za-z][A-Za-z0-9-]{0,15}$ ]] ||
        bad "--prefix must be a letter then up to 15 letters, digits or '-', not '$PFX'"
}

# procs_list OPTION LIST MAX: sets PROCS to the numbers of LIST (commas or
# blanks), each 1..MAX, sorted, without duplicates.
procs_list() {
    local w words out=()
    IFS=$', \t\n' read -r -a words <<<"$2"
    for w in "${words[@]}"; do
        [[ -n $w ]] || continue
        if ! is_uint "$w" || (( ${#w} > 5 || 10#$w < 1 || 10#$w > $3 )); then
            bad "$1: '$w' is not a number from 1 to $3"
        fi
        out+=("$(( 10#$w ))")
    done
    (( ${#out[@]} > 0 )) || bad "$1: empty list"
    mapfile -t PROCS < <(printf '%s\n' "${out[@]}" | sort -n -u)
}

# ------------------------------------------- MPI jobs across simulated hosts --

# mpi_bench_begin NAME [TOOL...]: what the MPI benchmarks across simulated
# hosts (mesh.sh, halo.sh, many.sh) check and set up before their runs:
# root, the tools (and TOOLs), the build (find_srm_build), UCX_INFO, NCPU,
# T_START, START_DATE, SRM_SOCKET srm-NAME-<pid>; the work directory
# srm-NAME, and a cleanup on exit that kills what they started (PIDS,
# AGENT), takes their cluster down and leaves the CPU cgroup.
mpi_bench_begin() {
    local name=$1
    shift
    T_START=$EPOCHREALTIME
    START_DATE=$(date -u '+%Y-%m-%d %H:%M:%S UTC')
    [[ $(id -u) == 0 ]] || die "must run as root (network namespaces)"
    [[ -x $SRM_NETNS_CLUSTER ]] || die "$SRM_NETNS_CLUSTER not found or not executable"
    require_tools " in PATH" ip nsenter timeout awk mpicc mpirun ucx_info jq "$@"
    [[ -n $BUILD ]] || BUILD=$SRCDIR/build
    [[ -d $BUILD ]] || die "build directory '$BUILD' does not exist (use --build DIR or set SRM_BUILD_DIR)"
    find_srm_build
    UCX_INFO=$(command -v ucx_info)
    SRM_SOCKET=srm-$name-$$
    NCPU=$(nproc)
    make_work_dir "srm-$name"
    PIDS=()
    declare -gA AGENT=()
    CLUSTER_UP=0
    FAILED=1
    DONE_RUNS=0 DISTURBED_RUNS=0 FOREIGN_CPU_TOTAL=0
    declare -gA VALUES=() DISTURBED_IN=() FOREIGN_NAMES=()
    cleanup() {
        local rc=$?
        trap - EXIT INT TERM
        trap '' INT TERM
        srm_kill_pids 2 "${PIDS[@]}" "${AGENT[@]}"
        cluster_down
        cpu_group_leave
        drop_work_dir
        exit "$rc"
    }
    set_traps
    cpu_group_join "srm-$name"
}

# mpi_bench_hosts_up N TCP_CC: N simulated hosts (PFX), TCP_CC in them
# (hosts_tcp_cc), one srmd each on SRM_SOCKET; AGENT_POLICY for reports.
mpi_bench_hosts_up() {
    local h pids=''
    info "bringing up $1 hosts (netns-cluster --prefix $PFX); logs in $WORK"
    cluster_up "$1"
    hosts_tcp_cc "$2"
    agents_start 0
    AGENT_POLICY=$(srm_netns_status_get "${SRM_HOSTS[0]}" "$POLICY_JQ")
    for h in "${SRM_HOSTS[@]}"; do pids+="${AGENT[$h]} "; done
    info "srmd in every host on @$SRM_SOCKET: $pids($AGENT_POLICY)"
}

# mpi_job_run LABEL TL PPN PROGRAM [ARGS...]: one job (mpi_job_start, on
# JOB_HOSTS with JOB_YIELD) to its end; whether other processes disturbed
# it (judge_run, tallied); dies if an agent is gone before or after it.
mpi_job_run() {
    agents_alive || die "an srmd is gone before job $1"
    mpi_job_start "$@"
    mark_start "${AGENT[@]}"
    mpi_job_wait
    mark_end "${AGENT[@]}"
    judge_run "$(foreign_load "${AGENT[@]}")"
    agents_alive || job_failure "an srmd died during job $JOB_DIR"
    (( DISTURBED == 0 )) || tally_disturbed
}

# note VALUE KEY: add VALUE to VALUES[tl/KEY] (tl: the caller's transport
# of the job) and count it in DISTURBED_IN if the job was disturbed.
note() {
    VALUES[$tl/$2]+="$1 "
    (( DISTURBED == 0 )) || DISTURBED_IN[$tl/$2]=$(( ${DISTURBED_IN[$tl/$2]:-0} + 1 ))
}

# size_label BYTES: "8 B", "4 KB", "1 MB" (KB = 2^10 B, MB = 2^20 B).
size_label() {
    if (( $1 >= 1048576 && $1 % 1048576 == 0 )); then printf '%d MB' $(( $1 / 1048576 ))
    elif (( $1 >= 1024 && $1 % 1024 == 0 )); then printf '%d KB' $(( $1 / 1024 ))
    else printf '%d B' "$1"; fi
}

# yields_of OPTION LIST: YIELDS, the mpi_yield_when_idle values (0, 1) of
# LIST, each once; bad usage unless there is at least one.
yields_of() {
    local w words
    YIELDS=()
    IFS=$', \t\n' read -r -a words <<<"$2"
    for w in "${words[@]}"; do
        case $w in
        '') ;;
        0|1) [[ " ${YIELDS[*]} " == *" $w "* ]] || YIELDS+=("$w") ;;
        *) bad "$1: '$w' is not 0 or 1" ;;
        esac
    done
    (( ${#YIELDS[@]} > 0 )) || bad "$1: empty list"
}
