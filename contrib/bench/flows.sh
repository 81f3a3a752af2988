#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# flows.sh - flow completion times (srm_flowgen) across simulated hosts:
# srm with its bulk channel, srm without it, and UCX tcp, at several
# offered loads; a markdown table and a gnuplot PNG of the short-flow p99.
set -euo pipefail

PROG=${0##*/}
export LC_ALL=C
INFO_CLOCK=1
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/lib.sh"
SRCDIR=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
MPIRUN=$SRCDIR/contrib/netns-mpirun

# ---------------------------------------------------------------- usage --

usage() {
    cat <<USAGE
NAME
    $PROG - flow completion times of srm (with and without its bulk
    channel) and UCX tcp across simulated hosts

SYNOPSIS
    $PROG [--build DIR] [--hosts N] [--ppn P] [--reps R] [--loads LIST]
             [--duration SEC] [--link-rate MBPS] [--shape [--queue BYTES]]
             [--seed N] [--remote-only]
             [--out FILE] [--timeout SEC] [--prefix NAME] [--keep-logs]
             [--quick]
    $PROG -h | --help

DESCRIPTION
    Brings up N simulated hosts with contrib/netns-cluster (--prefix,
    default fl<pid>), starts two srmd per host (one per srm
    configuration, on sockets of their own), and runs srm_flowgen (from
    the build directory) with P processes per host through
    contrib/netns-mpirun, for every offered load of --loads and three
    configurations:

      srm         UCX_TLS=srm, agents with the defaults: messages over
                  UCX_SRM_LARGE_THRESH (8 KB) take the node's bulk channel
      srm-nobulk  UCX_TLS=srm, agents with UCX_SRM_LARGE_THRESH=inf:
                  everything shares the small channel
      tcp         UCX_TLS=tcp UCX_NET_DEVICES=eth0, UCX's own point-to-
                  point connections, without the srm module

    srm_flowgen (see its --help) makes every process a generator and a
    sink: Poisson flow arrivals offering LOAD times the link rate per
    host, 80 % short flows (64 B..8 KB) and 20 % long ones
    (100 KB..10 MB), uniformly random destinations; a flow is done when
    the receiver's ack is back; every flow's data is checked. The "link
    rate" is nominal unless --shape is given: the veths of the simulated
    hosts move packets at memory speed, so it only sets the arrival rates.
    With --shape the hosts' links have that rate (netns-cluster --rate,
    with queues of --queue bytes at each end), so a long flow takes the
    time it would on such a link, and a short one queued behind it on the
    same connection waits for it: head-of-line blocking is real.

    Repetitions are the outer loop, and within one the configurations
    alternate for each load, so that slow drifts of the machine hit all
    alike. Each cell of the table is the median of the R repetitions
    followed by [min, max]. Below the table the script says whether the
    target was met: a short-flow p99 FCT with the bulk channel at least
    2x better (smaller) than without it, at every load.

    The plot (STEM-p99.png, from STEM-p99.dat and STEM-p99.gp) shows the
    short-flow p99 FCT per configuration and load, bars at the medians,
    error bars from min to max, log scale. With --out FILE, STEM is FILE
    without .md and the plot goes next to FILE; otherwise into the log
    directory (STEM "flows"), which is then kept.

    Every run must succeed: srm_flowgen exits 0 (all flows complete, no
    data errors), prints its "flowgen:" line, with short and long flows,
    and the agents still run. Otherwise the script stops at once, prints
    the command and the end of the logs, and exits 1: no half-empty
    table. The processes it started are killed by PID, and the cluster
    is taken down, whatever happens (trap).

    srm_flowgen sleeps on the UCP worker's event fd when idle (its
    --progress wait), so the processes of the hosts share the two cores
    of a small machine with the agents rather than spinning against
    them; still, the numbers include scheduling delays, and runs during
    which other processes took CPU time are marked "*".

OPTIONS
    --build DIR       srm build directory with srmd, srmctl,
                      .libs/libuct_srm.so.0 and srm_flowgen (default:
                      \$SRM_BUILD_DIR, else <repo>/build)
    --hosts N         simulated hosts, 2..16 (default 3)
    --ppn P           processes per host, 1..16 (default 2)
    --reps R          repetitions (default 3; 1 with --quick)
    --loads LIST      offered loads, fractions of the link rate, commas
                      (default 0.3,0.7)
    --duration SEC    seconds of flow arrivals per run (default 10; 3 with
                      --quick)
    --link-rate MBPS  link rate of a host, MB/s (2^20 B/s) (default 100)
    --shape           give the links that rate (default: nominal)
    --queue BYTES     with --shape: the queue at each end of a link
                      (default 262144)
    --seed N          srm_flowgen --seed of repetition 1; repetition r
                      uses N+r-1 (default 1), the same for every
                      configuration and load
    --remote-only     flows only to processes on other hosts
    --out FILE        also write the report, with the command lines, to
                      FILE, and the plot next to it
    --timeout SEC     limit of one run, beyond --duration (default 120)
    --prefix NAME     netns-cluster prefix: a letter, then up to 15
                      letters, digits or '-' (default fl<pid>); refused
                      if a cluster of that prefix is up
    --keep-logs       keep the log directory after a complete run
    --quick           smoke run: --reps 1 --duration 3 unless given; the
                      numbers are not a measurement
    -h, --help        print this help and exit

ENVIRONMENT
    SRM_BUILD_DIR     default for --build
    UCX_*, UCX_SRM_*  inherited by the runs and the agents (listed in the
                      report); UCX_TLS, UCX_NET_DEVICES, UCX_SRM_SOCKET,
                      UCX_SRM_AGENT and UCX_SRM_LARGE_THRESH are set per
                      configuration
    TMPDIR            where the log directory is made (default /tmp)

EXIT STATUS
    0 every run succeeded and the table was printed (whether or not the
    target was met); 1 a run failed or the environment is not right;
    2 bad usage; 130/143 interrupted.

REQUIREMENTS
    root (network namespaces), ip, nsenter, timeout, mpirun (Open MPI),
    an srm build with srm_flowgen (configure found mpicc); gnuplot for
    the plot (without it the report says so in bold).

EXAMPLES
    $PROG --quick
    $PROG --build /tmp/build --reps 5 --out flows.md
USAGE
}

# -------------------------------------------------------------- options --

BUILD=${SRM_BUILD_DIR:-}
REPS='' ITERS='' OUT='' PORT_BASE='' TIMEOUT=120 KEEP_LOGS=0 QUICK=0
NHOSTS=3 PPN=2 LOADS_ARG=0.3,0.7 DURATION='' LINK_RATE=100 SEED=1
QUEUE=262144 SHAPED=0
REMOTE_ONLY=0 PFX=fl$$

while [[ $# -gt 0 ]]; do
    common_option "$@"
    if (( OPT_SHIFT > 0 )); then shift "$OPT_SHIFT"; continue; fi
    case $1 in
    --hosts)       need_arg "$@"; NHOSTS=$2; shift 2 ;;
    --hosts=*)     NHOSTS=${1#*=}; shift ;;
    --ppn)         need_arg "$@"; PPN=$2; shift 2 ;;
    --ppn=*)       PPN=${1#*=}; shift ;;
    --loads)       need_arg "$@"; LOADS_ARG=$2; shift 2 ;;
    --loads=*)     LOADS_ARG=${1#*=}; shift ;;
    --duration)    need_arg "$@"; DURATION=$2; shift 2 ;;
    --duration=*)  DURATION=${1#*=}; shift ;;
    --link-rate)   need_arg "$@"; LINK_RATE=$2; shift 2 ;;
    --link-rate=*) LINK_RATE=${1#*=}; shift ;;
    --queue)       need_arg "$@"; QUEUE=$2; shift 2 ;;
    --queue=*)     QUEUE=${1#*=}; shift ;;
    --shape)       SHAPED=1; shift ;;
    --seed)        need_arg "$@"; SEED=$2; shift 2 ;;
    --seed=*)      SEED=${1#*=}; shift ;;
    --remote-only) REMOTE_ONLY=1; shift ;;
    --prefix)      need_arg "$@"; PFX=$2; shift 2 ;;
    --prefix=*)    PFX=${1#*=}; shift ;;
    -h|--help)     usage; exit 0 ;;
    *)             bad "unknown argument: $1" ;;
    esac
done
[[ -z $ITERS ]] || bad "--iters does not apply here (see --duration)"
[[ -z $PORT_BASE ]] || bad "--port does not apply here"

if [[ $QUICK == 1 ]]; then
    : "${REPS:=1}" "${DURATION:=3}"
else
    : "${REPS:=3}" "${DURATION:=10}"
fi
check_reps
check_timeout
in_range() { is_uint "$1" && (( 10#$1 >= $2 && 10#$1 <= $3 )); }
in_range "$NHOSTS" 2 16 || bad "--hosts must be 2..16, not '$NHOSTS'"
in_range "$PPN" 1 16 || bad "--ppn must be 1..16, not '$PPN'"
# number_in WORD MIN MAX: is WORD a decimal number, MIN < WORD <= MAX?
number_in() { is_number "$1" && awk -v x="$1" -v a="$2" -v b="$3" 'BEGIN { exit !(x > a && x <= b) }'; }
number_in "$DURATION" 0 3600 ||
    bad "--duration must be a number of seconds, 0 < SEC <= 3600, not '$DURATION'"
number_in "$LINK_RATE" 0 10000000 ||
    bad "--link-rate must be a positive number of MB/s, not '$LINK_RATE'"
in_range "$QUEUE" 65536 67108864 || bad "--queue must be 65536..67108864 bytes, not '$QUEUE'"
# tc's rate in bits/s (its kbit, mbit are powers of 10)
RATE_BITS=$(awk -v r="$LINK_RATE" 'BEGIN { printf "%.0f", r * 1048576 * 8 }')
SHAPE_ARGS=()
(( SHAPED == 0 )) || SHAPE_ARGS=(--rate "${RATE_BITS}bit" --queue "$QUEUE")
if ! is_uint "$SEED" || (( ${#SEED} > 18 )); then
    bad "--seed must be a non-negative integer, not '$SEED'"
fi
IFS=$', \t' read -r -a LOADS <<<"$LOADS_ARG"
(( ${#LOADS[@]} > 0 )) || bad "--loads: empty list"
for l in "${LOADS[@]}"; do
    number_in "$l" 0 10 || bad "--loads: '$l' is not a load, 0 < X <= 10"
done
[[ $PFX =~ ^[A-Za-z][A-Za-z0-9-]{0,15}$ ]] ||
    bad "--prefix must be a letter then up to 15 letters, digits or '-', not '$PFX'"
if [[ -n $OUT ]]; then
    out_dir=$(dirname -- "$OUT")
    [[ -d $out_dir && -w $out_dir ]] || bad "--out: directory '$out_dir' does not exist or is not writable"
    [[ ! -d $OUT ]] || bad "--out: '$OUT' is a directory"
fi

# ---------------------------------------------------------- environment --

T_START=$EPOCHREALTIME
START_DATE=$(date -u '+%Y-%m-%d %H:%M:%S UTC')
[[ $(id -u) == 0 ]] || die "must run as root (network namespaces)"
[[ -x $SRM_NETNS_CLUSTER && -x $MPIRUN ]] || die "contrib/netns-cluster or contrib/netns-mpirun not found in $SRCDIR"
require_tools " in PATH" ip nsenter timeout awk sort ps mpirun jq
[[ -n $BUILD ]] || BUILD=$SRCDIR/build
[[ -d $BUILD ]] || die "build directory '$BUILD' does not exist (use --build DIR or set SRM_BUILD_DIR)"
find_srm_build
FLOWGEN=$BUILD/srm_flowgen
[[ -x $FLOWGEN ]] || die "$FLOWGEN not found: configure did not find mpicc and pkg-config ucx (see 'srm_flowgen' in configure's summary)"
UCX_INFO=$(command -v ucx_info || true)

CONFIGS=(srm srm-nobulk tcp)
declare -A CONFIG_TEXT=(
    [srm]="srm, bulk channel (UCX_SRM_LARGE_THRESH=8k)"
    [srm-nobulk]="srm, no bulk channel (UCX_SRM_LARGE_THRESH=inf)"
    [tcp]="UCX tcp (UCX_TLS=tcp)"
)
declare -A SOCKETS=([srm]=srm-flows-$$-bulk [srm-nobulk]=srm-flows-$$-nobulk)
declare -A THRESH=([srm]=8k [srm-nobulk]=inf)
# The drain srm_flowgen allows after the arrivals, and the run's limit.
DRAIN=30
RUN_LIMIT=$(awk -v d="$DURATION" -v dr="$DRAIN" -v t="$TIMEOUT" 'BEGIN { printf "%d", d + dr + t }')

make_work_dir srm-flows
PIDS=()
declare -A AGENT=()     # config/host -> srmd PID
CLUSTER_UP=0
FAILED=1                # cleared once the report is complete

cleanup() {
    local rc=$?
    trap - EXIT INT TERM
    trap '' INT TERM        # a second Ctrl-C must not leave the cluster up
    srm_kill_pids 2 "${PIDS[@]}" "${AGENT[@]}"
    cluster_down
    cpu_group_leave
    drop_work_dir
    exit "$rc"
}
set_traps
cpu_group_join srm-flows

# ------------------------------------------------------ cluster, agents --

info "bringing up $NHOSTS hosts (netns-cluster --prefix $PFX ${SHAPE_ARGS[*]}); logs in $WORK"
cluster_up "$NHOSTS" "${SHAPE_ARGS[@]}"

for c in srm srm-nobulk; do
    for h in "${SRM_HOSTS[@]}"; do
        SRM_SOCKET=${SOCKETS[$c]}
        srm_agent_spawn_cmd "$h" "$WORK/srmd.$c.$h.log" \
            UCX_SRM_LARGE_THRESH="${THRESH[$c]}" -- -q
        "${SRM_AGENT_CMD[@]}" >"$WORK/srmd.$c.$h.out" 2>&1 &
        AGENT[$c/$h]=$!
        record_cmd "# agent for $c in $h" ' &' "${SRM_AGENT_CMD[@]}"
    done
done
for key in "${!AGENT[@]}"; do
    c=${key%%/*} h=${key#*/}
    SRM_SOCKET=${SOCKETS[$c]}
    srm_agent_ready "$h" "${AGENT[$key]}" "$WORK/srmd.$c.$h.log" ||
        die "srmd ($c) in $h did not come up (above)"
done
info "agents up: ${#AGENT[@]} srmd (2 per host)"

agents_alive() {
    local p
    for p in "${AGENT[@]}"; do srm_alive "$p" || return 1; done
}

# ------------------------------------------------------------------ runs --

declare -A VALUES=()        # config/load/key -> values, one per rep
declare -A DISTURBED_IN=()  # config/load -> 1 if a run of it was disturbed
declare -A FOREIGN_NAMES=()
DISTURBED_RUNS=0 FOREIGN_CPU_TOTAL=0 RUN_NO=0
TOTAL_RUNS=$(( REPS * ${#LOADS[@]} * ${#CONFIGS[@]} ))
KEYS=(flows short long short_p50_us short_p99_us short_mean_us long_p50_us
      long_p99_us long_mean_us offered_load achieved_load)

declare -A FLOW=()       # the KEY=VALUE words of a run's "flowgen:" line

# show_failure LOG: the command and the end of the logs of a failed run.
show_failure() {
    local log=$1 f
    {
        printf '\n--- failed run %d: command ---\n%s\n' "$RUN_NO" "$RUN_CMD"
        printf -- '--- %s (last 30 lines) ---\n' "$log"
        tail -n 30 "$log" || true
        for f in "$WORK"/srmd.*.log "$WORK"/srmd.*.out; do
            [[ -s $f ]] || continue
            printf -- '--- %s (last 10 lines) ---\n' "$f"
            tail -n 10 "$f" || true
        done
    } >&2
}

# run_flows CONFIG LOAD REP: one srm_flowgen job; dies unless it succeeded.
run_flows() {
    local c=$1 load=$2 rep=$3 log k v rc=0 job seed pid
    local envs=(env -u LD_PRELOAD -u UCX_TLS -u UCX_NET_DEVICES -u UCX_SRM_SOCKET
                -u UCX_SRM_AGENT -u UCX_SRM_LARGE_THRESH UCX_WARN_UNUSED_ENV_VARS=n)
    local xs=(-x UCX_TLS -x UCX_WARN_UNUSED_ENV_VARS)
    RUN_NO=$(( RUN_NO + 1 ))
    seed=$(( SEED + rep - 1 ))
    case $c in
    srm|srm-nobulk)
        envs+=(UCX_TLS=srm UCX_SRM_SOCKET="${SOCKETS[$c]}" UCX_SRM_AGENT=never
               UCX_SRM_LARGE_THRESH="${THRESH[$c]}")
        xs+=(-x LD_PRELOAD="$SRM_MODULE" -x UCX_SRM_SOCKET -x UCX_SRM_AGENT
             -x UCX_SRM_LARGE_THRESH) ;;
    tcp)
        envs+=(UCX_TLS=tcp UCX_NET_DEVICES=eth0)
        xs+=(-x UCX_NET_DEVICES) ;;
    esac
    log=$WORK/run.$RUN_NO.$c.$load.r$rep.log
    job=("${envs[@]}" "$MPIRUN" --prefix "$PFX" --ppn "$PPN" --timeout "$RUN_LIMIT"
         "${xs[@]}" -- "$FLOWGEN" --load "$load" --link-rate "$LINK_RATE"
         --duration "$DURATION" --drain "$DRAIN" --seed "$seed")
    (( REMOTE_ONLY == 0 )) || job+=(--remote-only)
    RUN_CMD=$(quote "${job[@]}")
    record_cmd "# run $RUN_NO: $c, load $load, rep $rep" '' "${job[@]}"

    agents_alive || { show_failure /dev/null; die "an srmd is gone before run $RUN_NO"; }
    "${job[@]}" >"$log" 2>&1 </dev/null &
    pid=$!
    PIDS+=("$pid")
    mark_start "${AGENT[@]}"
    wait "$pid" || rc=$?
    forget_pid "$pid"
    mark_end "${AGENT[@]}"
    judge_run "$(foreign_load "${AGENT[@]}")"

    result_line "$log" 'flowgen: ' FLOW
    if (( rc != 0 )) || [[ -z $RESULT_LINE ]]; then
        show_failure "$log"
        die "run $RUN_NO ($c, load $load, rep $rep) failed: exit $rc${RESULT_LINE:+; $RESULT_LINE}"
    fi
    for k in errors short long; do
        v=${FLOW[$k]:-}
        is_uint "$v" || { show_failure "$log"; die "run $RUN_NO: no $k= in its flowgen line"; }
        case $k in
        errors) (( v == 0 )) || { show_failure "$log"; die "run $RUN_NO ($c, load $load): $v errors"; } ;;
        *)      (( v > 0 )) || { show_failure "$log"; die "run $RUN_NO ($c, load $load): no $k flows (raise --duration)"; } ;;
        esac
    done
    agents_alive || { show_failure "$log"; die "an srmd died during run $RUN_NO"; }
    for k in "${KEYS[@]}"; do
        v=${FLOW[$k]:-}
        is_number "$v" || { show_failure "$log"; die "run $RUN_NO: $k='$v' is not a number"; }
        VALUES[$c/$load/$k]+="$v "
    done
    if (( DISTURBED )); then
        tally_disturbed
        DISTURBED_IN[$c/$load]=1
    fi
    info "[$RUN_NO/$TOTAL_RUNS] $c load $load rep $rep: ${FLOW[flows]} flows, short p99 ${FLOW[short_p99_us]} us, long p99 ${FLOW[long_p99_us]} us, achieved load ${FLOW[achieved_load]}$( (( DISTURBED )) && printf ' (disturbed)')"
}

info "$TOTAL_RUNS runs of ${DURATION} s: ${#CONFIGS[@]} configurations x ${#LOADS[@]} loads x $REPS reps, $NHOSTS hosts x $PPN processes"
for (( rep = 1; rep <= REPS; rep++ )); do
    for load in "${LOADS[@]}"; do
        for c in "${CONFIGS[@]}"; do
            run_flows "$c" "$load" "$rep"
        done
    done
done
srm_kill_pids 2 "${AGENT[@]}"
AGENT=()
ELAPSED=$(seconds_between "$T_START" "$EPOCHREALTIME" %.0f)

# ---------------------------------------------------------------- report --

# med CONFIG LOAD KEY: the median of the repetitions.
med() {
    # shellcheck disable=SC2086  # a list of numbers
    local m
    read -r m _ < <(stats ${VALUES[$1/$2/$3]})
    printf '%s' "$m"
}

# cell CONFIG LOAD KEY KIND: "median [min, max]" (KIND: lat in us, load, n).
cell() {
    local m lo hi out
    # shellcheck disable=SC2086  # a list of numbers
    read -r m lo hi < <(stats ${VALUES[$1/$2/$3]})
    case $4 in
    load) printf -v out '%.2f' "$m"; (( REPS == 1 )) || printf -v out '%s [%.2f, %.2f]' "$out" "$lo" "$hi" ;;
    n)    printf -v out '%.0f' "$m"; (( REPS == 1 )) || printf -v out '%s [%.0f, %.0f]' "$out" "$lo" "$hi" ;;
    *)    out=$(fmt lat "$m"); (( REPS == 1 )) || out+=" [$(fmt lat "$lo"), $(fmt lat "$hi")]" ;;
    esac
    printf '%s' "$out"
}

# Target: short-flow p99 with the bulk channel at least 2x better.
TARGET_MET=1
declare -A GAIN=()
for load in "${LOADS[@]}"; do
    GAIN[$load]=$(awk -v a="$(med srm-nobulk "$load" short_p99_us)" -v b="$(med srm "$load" short_p99_us)" \
                  'BEGIN { if (b > 0) printf "%.2f", a / b; else print 0 }')
    awk -v g="${GAIN[$load]}" 'BEGIN { exit !(g >= 2) }' || TARGET_MET=0
done

# ------------------------------------------------------------------ plot --

if [[ -n $OUT ]]; then
    PLOT_DIR=$(cd "$(dirname -- "$OUT")" && pwd)
    PLOT_STEM=$(basename -- "$OUT")
    PLOT_STEM=${PLOT_STEM%.md}
    [[ -n $PLOT_STEM ]] || PLOT_STEM=flows
    PLOT_LINK=
else
    PLOT_DIR=$WORK PLOT_STEM=flows PLOT_LINK=$WORK/
fi

plot_data() {
    local load c line m lo hi
    printf '# short-flow p99 FCT (us) per load: median, min, max of %d run(s) for' "$REPS"
    printf ' %s' "${CONFIGS[@]}"
    printf '\n# %s, %s\n' "$PROG" "$START_DATE"
    for load in "${LOADS[@]}"; do
        line=$load
        for c in "${CONFIGS[@]}"; do
            # shellcheck disable=SC2086  # a list of numbers
            read -r m lo hi < <(stats ${VALUES[$c/$load/short_p99_us]})
            line+=" $m $lo $hi"
        done
        printf '%s\n' "$line"
    done
}

plot_script() {
    local sub i c
    sub="$NHOSTS hosts x $PPN processes, link rate $LINK_RATE MB/s, ${DURATION} s per run"
    if (( REPS > 1 )); then sub+=", median and min-max of $REPS runs"; else sub+=", one run"; fi
    [[ $QUICK == 0 ]] || sub+="; --quick smoke run, not a measurement"
    if [[ $PLOT_TERM == pngcairo ]]; then
        printf "set terminal pngcairo size 960,640 noenhanced font 'DejaVu Sans,11'\n"
    else
        printf 'set terminal png size 960,640 noenhanced\n'
    fi
    printf 'set output "%s-p99.png"\n' "$PLOT_STEM"
    printf 'set title "Short flows (64 B-8 KB): p99 flow completion time\\n%s"\n' "$sub"
    printf 'set xlabel "offered load (fraction of the link rate per host)"\n'
    printf 'set ylabel "short-flow p99 FCT (ms)"\nset logscale y\nset format y "%%g"\nset grid ytics\n'
    printf 'set style data histograms\nset style histogram errorbars gap 1 lw 1\n'
    printf 'set style fill solid 0.7 border -1\nset key top left\nset yrange [*:*]\n'
    printf 'plot '
    for i in "${!CONFIGS[@]}"; do
        c=${CONFIGS[$i]}
        (( i == 0 )) || printf ', \\\n     '
        if (( i == 0 )); then
            printf '"%s-p99.dat" using ($%d/1e3):($%d/1e3):($%d/1e3):xtic(1) title "%s"' \
                "$PLOT_STEM" $(( 2 + 3 * i )) $(( 3 + 3 * i )) $(( 4 + 3 * i )) "${CONFIG_TEXT[$c]}"
        else
            printf '"" using ($%d/1e3):($%d/1e3):($%d/1e3) title "%s"' \
                $(( 2 + 3 * i )) $(( 3 + 3 * i )) $(( 4 + 3 * i )) "${CONFIG_TEXT[$c]}"
        fi
    done
    printf '\n'
}

PLOT_PROBLEM='' PLOT_TERM=pngcairo
write_out "$PLOT_DIR/$PLOT_STEM-p99.dat" plot_data
rm -f -- "$PLOT_DIR/$PLOT_STEM-p99.png"
if ! command -v gnuplot >/dev/null; then
    PLOT_PROBLEM="gnuplot not found (Debian package gnuplot-nox)"
else
    timeout -k 2 20 gnuplot -e 'set terminal pngcairo' </dev/null >/dev/null 2>&1 || PLOT_TERM=png
fi
write_out "$PLOT_DIR/$PLOT_STEM-p99.gp" plot_script
if [[ -z $PLOT_PROBLEM ]]; then
    if ! (cd "$PLOT_DIR" && timeout -k 5 60 gnuplot "$PLOT_STEM-p99.gp" </dev/null) >"$WORK/gnuplot.log" 2>&1; then
        PLOT_PROBLEM="gnuplot failed: $(tail -n 3 "$WORK/gnuplot.log" | tr '\n' ' ')"
    elif [[ ! -s $PLOT_DIR/$PLOT_STEM-p99.png ]]; then
        PLOT_PROBLEM="gnuplot made no $PLOT_DIR/$PLOT_STEM-p99.png"
    fi
fi
[[ -z $PLOT_PROBLEM ]] || info "WARNING: no plot: $PLOT_PROBLEM"
[[ -n $OUT ]] || KEEP_LOGS=1     # the plot is in $WORK

report() {
    local load c
    printf '# Flow completion times: srm with and without its bulk channel, and UCX tcp\n\n'
    printf -- '- machine: %s, nproc %d (%s), kernel %s; date %s\n' \
        "$(uname -n)" "$(nproc)" "$(cpu_model)" "$(uname -r)" "$START_DATE"
    printf -- '- UCX %s; %s; module %s\n' \
        "$([[ -n $UCX_INFO ]] && ucx_version || echo '?')" "$(srmd_version)" "$SRM_MODULE"
    printf -- '- %d simulated hosts (netns-cluster --prefix %s) x %d processes of srm_flowgen; flows %s; link rate %s MB/s per host (%s), %s s of arrivals per run, seeds %d..%d\n' \
        "$NHOSTS" "$PFX" "$PPN" \
        "$([[ $REMOTE_ONLY == 1 ]] && echo 'to processes on other hosts only' || echo 'to any other process')" \
        "$LINK_RATE" \
        "$( (( SHAPED == 1 )) && echo "shaped: netns-cluster ${SHAPE_ARGS[*]}, queues of $QUEUE bytes at each end" || echo 'nominal: the links are unshaped')" \
        "$DURATION" "$SEED" $(( SEED + REPS - 1 ))
    printf -- '- flow sizes: 80 %% short, log-uniform 64 B..8 KB; 20 %% long, log-uniform 100 KB..10 MB; Poisson arrivals; FCT from arrival to the receiver'"'"'s ack at the sender; every flow checked\n'
    [[ $QUICK == 0 ]] || printf -- '- **--quick smoke run: the numbers are not a measurement**\n'
    print_inherited_ucx
    print_disturbance runs
    if (( REPS > 1 )); then
        printf '\nCells: median [min, max] of %d runs; FCT in us.\n\n' "$REPS"
    else
        printf '\nCells: one run each (no spread; see --reps); FCT in us.\n\n'
    fi
    table_head configuration load flows 'short p50' 'short p99' 'short mean' \
        'long p50' 'long p99' 'long mean' 'offered load' 'achieved load'
    for load in "${LOADS[@]}"; do
        for c in "${CONFIGS[@]}"; do
            printf '| %s%s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n' \
                "$c" "$( (( ${DISTURBED_IN[$c/$load]:-0} )) && printf ' *')" "$load" \
                "$(cell "$c" "$load" flows n)" \
                "$(cell "$c" "$load" short_p50_us lat)" "$(cell "$c" "$load" short_p99_us lat)" \
                "$(cell "$c" "$load" short_mean_us lat)" "$(cell "$c" "$load" long_p50_us lat)" \
                "$(cell "$c" "$load" long_p99_us lat)" "$(cell "$c" "$load" long_mean_us lat)" \
                "$(cell "$c" "$load" offered_load load)" "$(cell "$c" "$load" achieved_load load)"
        done
    done
    printf '\nConfigurations: '
    for c in "${CONFIGS[@]}"; do printf '**%s**: %s. ' "$c" "${CONFIG_TEXT[$c]}"; done
    printf '\n\n**Target** (short-flow p99 FCT with the bulk channel at least 2x better than without, at every load): '
    if (( TARGET_MET )); then printf '**met**'; else printf '**not met**'; fi
    printf ' — srm-nobulk / srm p99:'
    for load in "${LOADS[@]}"; do printf ' %sx at load %s;' "${GAIN[$load]}" "$load"; done
    printf '\n\n%d runs, %s s wall time in all.\n' "$TOTAL_RUNS" "$ELAPSED"
    printf '\n## Plot\n\n'
    if [[ -n $PLOT_PROBLEM ]]; then
        printf '**No plot: %s.**\n' "$PLOT_PROBLEM"
    else
        printf '![short-flow p99 FCT per configuration and load](%s%s-p99.png)\n' "$PLOT_LINK" "$PLOT_STEM"
    fi
    # shellcheck disable=SC2016  # backquotes for markdown
    printf '\nData: `%s-p99.dat` (columns: load, then median, min, max per configuration), gnuplot script `%s-p99.gp`, in %s.\n' \
        "$PLOT_STEM" "$PLOT_STEM" "$PLOT_DIR"
}

commands() {
    printf '\n## Commands\n\n```sh\n'
    cat "$CMDS"
    printf '```\n'
}

REPORT=$WORK/report.md
report >"$REPORT"
report_and_commands() { cat "$REPORT"; commands; }
[[ -z $OUT ]] || write_out "$OUT" report_and_commands
cat "$REPORT"
commands
[[ -z $OUT ]] || printf '\n(report and command lines written to %s)\n' "$OUT"
FAILED=0
