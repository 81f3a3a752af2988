#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# hosts.sh - compare UCX_TLS=srm with UCX's own tcp transport between two
# simulated hosts (contrib/netns-cluster), using ucx_perftest, and print a
# markdown table; plot latency and bandwidth vs size and the message rate
# vs processes per host with gnuplot.
set -euo pipefail

PROG=${0##*/}
export LC_ALL=C
INFO_CLOCK=1
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/lib.sh"
SRCDIR=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)

# ---------------------------------------------------------------- usage --

usage() {
    cat <<USAGE
NAME
    $PROG - ucx_perftest comparison of srm and UCX tcp between two
    simulated hosts

SYNOPSIS
    $PROG [--build DIR] [--reps N] [--iters N] [--out FILE] [--port BASE]
             [--timeout SEC] [--mr-secs SEC] [--sizes LIST] [--procs LIST]
             [--tcp-cc NAME]
             [--prefix NAME] [--keep-logs] [--quick]
    $PROG -h | --help

DESCRIPTION
    Brings up a private cluster of two simulated hosts with
    contrib/netns-cluster (--prefix, default hb<pid>: hosts hb<pid>h1 =
    10.77.0.1 and hb<pid>h2 = 10.77.0.2, each with its own network, UTS and
    IPC namespace), starts one srmd per host on the abstract socket
    srm-hosts-<pid> (each in a session of its own, as UCX starts it with
    srmd --daemonize: with autogroup scheduling a session is a scheduling
    group), and runs ucx_perftest between the hosts: every server
    runs in h1, every client in h2 and connects to 10.77.0.1.  Two
    transports are compared:

      srm    UCX_TLS=srm (UCT: -x srm -d <srmctl device>) with LD_PRELOAD of the srm
             module, UCX_SRM_SOCKET=srm-hosts-<pid> and UCX_SRM_AGENT=never;
             a message goes rank -> srmd(h2) -> TCP node channel ->
             srmd(h1) -> rank, but a small one between polling ranks
             skips both agents (UCX_SRM_DIRECT, UCX_SRM_DIRECT_RECV: the
             ranks write and read the node channel's socket themselves);
      tcp    UCX_TLS=tcp UCX_NET_DEVICES=eth0 (UCT: -x tcp -d eth0), UCX's
             own point-to-point TCP connections, without the srm module.

    The measurements (N is --iters; -w is the warm-up):

      UCP tag_lat S         typical (p50) latency, us, for every
                            size S of --sizes; -n N*4 KB/S, at least 20,
                            at most N
      UCP tag_bw  S         bandwidth, overall, MB/s, for every size S
                            of --sizes; -n N*256 KB/S, at least 4, at
                            most 20*N
      UCP tag_bw  8 B x P   aggregate message rate, msg/s, for every P
                            of --procs (default 1, 2, 4 and 8 concurrent
                            process pairs: P servers in h1 and P clients
                            in h2, on P ports, all started together);
                            the cell is the sum of the P clients'
                            overall msg/s; -n per pair: see --mr-secs
      UCT am_lat  8 B       typical (p50) latency, us          -n N

    The warm-up (-w) is a tenth of -n, at least 1.

    Every number comes from the client's "Final:" line of ucx_perftest
    (iterations, p50 latency, average latency of the last interval, overall
    average latency, bandwidth last interval / overall, message rate last
    interval / overall).  "MB/s" is ucx_perftest's unit: 2^20 bytes per
    second.  Each cell is the median of R repetitions (--reps) followed by
    [min, max]; the last column is srm / tcp of the medians (latency: below
    1 means srm is faster; bandwidth and message rate: above 1 means srm is
    faster).  Repetitions are the outer loop and srm and tcp alternate, so
    slow drifts of the machine hit both alike.

    The notes under the table say what waking a sleeping process costs on
    this machine, on the waker's CPU and across CPUs (srm_wake_cost,
    contrib/bench/srm_wake_cost.c, 1000 wakeups per case): an srm agent
    that sleeps is woken once per hop, ranks with sockets of their own
    never.  For every tag_bw size that srm sent on its bulk channel they
    give that channel's turn (srmd's rtt_us in srmctl status of h2, read
    after each srm run: the smoothed time from writing a frame until its
    ack is back) and the bandwidth it allows: a channel keeps at most
    CHANNEL_DEPTH unacknowledged, so it moves at most that much per turn.
    For the same sizes they give the CPU time the two agents used per MiB
    moved (user and system, from /proc/PID/stat before and after each
    run) and how many CPUs that alone would take at 0.8 x tcp's bandwidth.

    After the table the report links three plots, rendered with gnuplot
    (pngcairo terminal if it has one, else png) from data files written
    next to them, one per plot, whose columns are the size in bytes (or
    P), the srm median and the tcp median of the table's cells:

      STEM-lat.png / .dat   UCP tag_lat typical latency vs size, log-log
      STEM-bw.png  / .dat   UCP tag_bw bandwidth vs size, log size axis
      STEM-mr.png  / .dat   aggregate 8 B message rate vs P, log axes
      STEM-plots.gp         the gnuplot script (cd to its directory and
                            run "gnuplot STEM-plots.gp" to redraw)

    With --out FILE they are put next to FILE, STEM being FILE without a
    trailing .md, and the report links them by their names; without --out
    they are put into the log directory (STEM "hosts"), which is then kept,
    and linked by their full paths.  Without gnuplot the data files and
    the script are still written, and the report says in bold that there
    are no plots; that alone does not make the script fail.

    After the plots the script prints, for each host, the established TCP
    connections owned by srmd (ss -tnpH inside the host) and the "wire:"
    and "node" lines of "srmctl status" of h1, taken after the last run.

    ucx_perftest busy-polls: on a machine with two cores the ranks take both
    cores, and the agents must be woken (and preempt a poller) for every
    hop; the srm numbers include that cost.  With P pairs 2*P ranks poll on
    the same cores.  Numbers are meaningful only on an otherwise idle
    machine: for every run the script compares the CPU time the kernel
    accounted (/proc/stat) with the CPU time of its own processes and looks
    for other running processes right after it; runs disturbed that
    way are counted in the header and their cells marked "*".

    The table is printed only when every run succeeded.  A run fails when a
    rank exits non-zero, runs into --timeout, the client prints no
    parseable "Final:" line or reports another iteration count than asked
    for, a server does not exit after its client, or an srmd exits; the
    script then stops at once, prints the command lines and the tails of
    the logs of the failed run and of both srmd logs, and exits 1.

OPTIONS
    --build DIR
        The srm build directory: srmd, srmctl and .libs/libuct_srm.so.0 (or
        libuct_srm.so.0).  Default: \$SRM_BUILD_DIR, else <repo>/build
        (<repo> = $SRCDIR).
    --reps N
        Repetitions per transport and measurement (default 3; 1 with
        --quick).
    --iters N
        Base iteration count N (see above; default 5000, 200 with
        --quick).  With the default --sizes and --procs one repetition
        takes about a minute on an idle two-core machine, the default run
        about 3 minutes; much longer on a busy machine.
    --out FILE
        Also write the report and the exact command lines of every run (and
        of the agents) to FILE, and the plots and their data next to it
        (see above).  Written only when all runs succeeded.
    --port BASE
        First TCP port of ucx_perftest's rendezvous in h1 (default 13000;
        each run takes the next ones; the hosts are private namespaces, so
        nothing else uses them).
    --timeout SEC
        Time limit of each ucx_perftest process (timeout -k 5 SEC); a run
        that hits it fails (default 120; 30 with --quick).
    --tcp-cc NAME
        TCP congestion control of both simulated hosts (sysctl
        net.ipv4.tcp_congestion_control in each), for srm's node channels
        and UCX's tcp alike; the report names the one in use.  Default: the
        kernel's, which a new network namespace inherits.  It matters for
        the tcp baseline: where the default paces (bbr), the veths between
        the hosts reorder a flow's packets and UCX's tcp spends its time in
        spurious recoveries (1 MB tag_bw 1.3-1.7 GB/s here, 4.5-6.0 with
        reno); srm, bound by its agents, hardly moves (1.0-1.6 GB/s).  A
        namespace may allow fewer than the kernel has (here: reno and bbr,
        not cubic).
    --mr-secs SEC
        Target measured time (a decimal number of seconds) of one pair of
        the 8 B message-rate runs.  Before the first repetition, unreported
        calibration runs per transport (P=1, starting with -n 20*N, ten
        times more while a run measures less than SEC/4, at most 4 runs)
        measure its rate R, and the message-rate runs of that transport
        then use -n R*SEC (2 significant digits, at least 20*N, at most
        50000000), -w a tenth of it.  The rates of srm and tcp differ by
        an order of magnitude, and so does the time a fixed count takes:
        with short runs the concurrent pairs would hardly overlap, and
        srm would measure little more than how fast its rings fill.  With
        P pairs a pair takes up to about P times SEC.  Default 1; 0 (the default
        with --quick) skips the calibration and uses -n 100*N (srm) and
        20*N (tcp).
    --sizes LIST
        Message sizes of the tag_lat and tag_bw sweeps, separated by commas
        or blanks; a number of bytes with an optional K (2^10) or M (2^20)
        suffix, 1 B to 64 MB (default 8,64,512,4K,8K,16K,64K,256K,1M,4M;
        8,512,8K,64K,1M with --quick).
    --procs LIST
        The numbers P of concurrent process pairs, i.e. processes per host,
        of the 8 B message-rate test, separated by commas or blanks, each
        1..32 (default 1,2,4,8).
    --prefix NAME
        netns-cluster prefix of the two hosts (NAMEh1, NAMEh2): a letter,
        then up to 15 letters, digits or '-' (default hb<pid>).  The
        script refuses to run when a cluster of that prefix is already up,
        and tears down its own on exit.
    --keep-logs
        Keep the log directory even when all runs succeeded (it is always
        kept on failure, and when it holds the plots).
    --quick
        Smoke test: --iters 200 --reps 1 --timeout 30 and the shorter
        --sizes list unless given; takes well under 60 s on an idle
        machine.  The numbers are not a measurement.
    -h, --help
        Print this help and exit.

ENVIRONMENT
    SRM_BUILD_DIR   default for --build.
    UCX_PERFTEST    the ucx_perftest program (default: from PATH).
    UCX_SRM_*       inherited by both srmd (see "srmd --config"), e.g.
                    UCX_SRM_POLL; UCX_SRM_SOCKET and UCX_SRM_AGENT are set
                    by the script.
    UCX_*           other UCX variables reach every ucx_perftest and are
                    listed in the report; UCX_TLS, UCX_NET_DEVICES and
                    LD_PRELOAD are set per transport.
    TMPDIR          where the log directory is made (default /tmp).

FILES
    \$TMPDIR/srm-hosts.XXXXXX/   cluster, srmd and per-run logs, and the
                                command list (commands.sh); without --out
                                also the plots and their data (hosts-*).
    FILE, STEM-*                with --out FILE: the report, the plots and
                                their data.

EXIT STATUS
    0 when all runs succeeded and the table was printed; 1 on a failed run
    or an environment problem; 2 on bad usage; 130/143 when interrupted.
    Whatever happens, the processes the script started are killed by PID
    and the cluster is torn down (netns-cluster down --prefix) on exit.

REQUIREMENTS
    root (network namespaces), ip, nsenter, ss, timeout, ucx_perftest and
    ucx_info (UCX 1.13), an srm build; gnuplot (Debian: gnuplot-nox) for
    the plots.

EXAMPLES
    SRM_BUILD_DIR=/tmp/build $PROG
    $PROG --build /tmp/build --quick
    $PROG --build /tmp/build --reps 5 --out hosts-bench.md
        (also hosts-bench-lat.png, hosts-bench-bw.png, hosts-bench-mr.png)
    $PROG --build /tmp/build --quick --prefix plot --sizes 8,4K,1M --procs 1,8
USAGE
}

# -------------------------------------------------------------- options --

BUILD=${SRM_BUILD_DIR:-}
REPS='' ITERS='' OUT='' PORT_BASE=13000 TIMEOUT='' KEEP_LOGS=0 QUICK=0 MR_SECS_TARGET=
SIZES_ARG='' PROCS_ARG=1,2,4,8 PFX=hb$$ TCP_CC=

while [[ $# -gt 0 ]]; do
    common_option "$@"
    if (( OPT_SHIFT > 0 )); then shift "$OPT_SHIFT"; continue; fi
    case $1 in
    --mr-secs)   need_arg "$@"; MR_SECS_TARGET=$2; shift 2 ;;
    --mr-secs=*) MR_SECS_TARGET=${1#*=}; shift ;;
    --sizes)     need_arg "$@"; SIZES_ARG=$2; shift 2 ;;
    --sizes=*)   SIZES_ARG=${1#*=}; shift ;;
    --procs)     need_arg "$@"; PROCS_ARG=$2; shift 2 ;;
    --procs=*)   PROCS_ARG=${1#*=}; shift ;;
    --prefix)    need_arg "$@"; PFX=$2; shift 2 ;;
    --prefix=*)  PFX=${1#*=}; shift ;;
    --tcp-cc)    need_arg "$@"; TCP_CC=$2; shift 2 ;;
    --tcp-cc=*)  TCP_CC=${1#*=}; shift ;;
    -h|--help)   usage; exit 0 ;;
    *)           bad "unknown argument: $1" ;;
    esac
done

if [[ $QUICK == 1 ]]; then
    : "${REPS:=1}" "${ITERS:=200}" "${TIMEOUT:=30}" "${MR_SECS_TARGET:=0}"
    : "${SIZES_ARG:=8,512,8K,64K,1M}"
else
    : "${REPS:=3}" "${ITERS:=5000}" "${TIMEOUT:=120}" "${MR_SECS_TARGET:=1}"
    : "${SIZES_ARG:=8,64,512,4K,8K,16K,64K,256K,1M,4M}"
fi
check_reps
check_iters 50
if ! [[ $MR_SECS_TARGET =~ ^[0-9]+(\.[0-9]+)?$ ]] ||
   awk -v x="$MR_SECS_TARGET" 'BEGIN { exit !(x > 30) }'; then
    bad "--mr-secs must be a number of seconds from 0 to 30, not '$MR_SECS_TARGET'"
fi
check_timeout
check_port 64000

# uint_list OPTION LIST MIN MAX [SUFFIXES]: sets UINT_LIST to the numbers
# of LIST (commas or blanks; with SUFFIXES=1 a K or M suffix multiplies by
# 2^10 or 2^20), sorted and without duplicates; bad usage unless all are
# in MIN..MAX.
uint_list() {
    local opt=$1 min=$3 max=$4 suffixes=${5:-0} w n words out=()
    IFS=$', \t\n' read -r -a words <<<"$2"
    for w in "${words[@]}"; do
        [[ -n $w ]] || continue
        n=$w
        if [[ $suffixes == 1 && $w =~ ^([0-9]{1,9})([kKmM])$ ]]; then
            n=$(( 10#${BASH_REMATCH[1]} ))
            case ${BASH_REMATCH[2]} in k|K) n=$(( n * 1024 )) ;; *) n=$(( n * 1048576 )) ;; esac
        fi
        if ! is_uint "$n" || (( ${#n} > 12 || 10#$n < min || 10#$n > max )); then
            if [[ $suffixes == 1 ]]; then
                bad "$opt: '$w' is not a size from $min to $max B (K and M suffixes allowed)"
            fi
            bad "$opt: '$w' is not a number from $min to $max"
        fi
        out+=("$(( 10#$n ))")
    done
    (( ${#out[@]} > 0 )) || bad "$opt: empty list"
    mapfile -t UINT_LIST < <(printf '%s\n' "${out[@]}" | sort -n -u)
}
uint_list --sizes "$SIZES_ARG" 1 67108864 1
SIZES=("${UINT_LIST[@]}")
uint_list --procs "$PROCS_ARG" 1 32
PAIR_COUNTS=("${UINT_LIST[@]}")
[[ $PFX =~ ^[A-Za-z][A-Za-z0-9-]{0,15}$ ]] ||
    bad "--prefix must be a letter then up to 15 letters, digits or '-', not '$PFX'"

if [[ -n $OUT ]]; then   # fail now, not after minutes of runs
    out_dir=$(dirname -- "$OUT")
    [[ -d $out_dir && -w $out_dir ]] || bad "--out: directory '$out_dir' does not exist or is not writable"
    [[ ! -d $OUT ]] || bad "--out: '$OUT' is a directory"
fi

# ---------------------------------------------------------- environment --

T_START=$EPOCHREALTIME
START_DATE=$(date -u '+%Y-%m-%d %H:%M:%S UTC')

[[ $(id -u) == 0 ]] || die "must run as root (network namespaces)"
[[ -x $SRM_NETNS_CLUSTER ]] || die "$SRM_NETNS_CLUSTER not found or not executable"
require_tools " in PATH" ip nsenter ss timeout awk sort ps jq

[[ -n $BUILD ]] || BUILD=$SRCDIR/build
[[ -d $BUILD ]] || die "build directory '$BUILD' does not exist (use --build DIR or set SRM_BUILD_DIR)"
find_srm_build
find_ucx_tools

H1=${PFX}h1 H2=${PFX}h2
IP1=10.77.0.1
SRM_SOCKET=srm-hosts-$$
SRM_HOSTS=("$H1" "$H2")
NCPU=$(nproc)

# Iteration counts (see --help).
at_least() { echo $(( $1 > $2 ? $1 : $2 )); }
at_most()  { echo $(( $1 < $2 ? $1 : $2 )); }
AMLAT_N=$ITERS                  AMLAT_W=$(at_least $(( ITERS / 10 )) 1)
# The size sweeps move about N*4 KB (tag_lat) and N*256 KB (tag_bw) per
# run, so that the large sizes take seconds, not minutes, and a bandwidth
# run outlasts the start of its connections (about a second for srm at
# 1 MB with the default N); the floors keep a p50 of some samples and a
# few messages in flight.
declare -A LAT_N=() LAT_W=() BW_N=() BW_W=()
for s in "${SIZES[@]}"; do
    LAT_N[$s]=$(at_least "$(at_most $(( ITERS * 4096 / s )) "$ITERS")" 20)
    LAT_W[$s]=$(at_least $(( LAT_N[$s] / 10 )) 1)
    BW_N[$s]=$(at_least "$(at_most $(( ITERS * 262144 / s )) $(( ITERS * 20 )))" 4)
    BW_W[$s]=$(at_least $(( BW_N[$s] / 10 )) 1)
done
# The 8 B message-rate iterations; calibrated per transport unless
# --mr-secs is 0 (see --help).
declare -A MR_N=([srm]=$(( ITERS * 100 )) [tcp]=$(( ITERS * 20 )))
declare -A MR_W=([srm]=$(( ITERS * 10 )) [tcp]=$(( ITERS * 2 )))
declare -A MR_CAL=()        # tl -> rate of the last calibration run (msg/s)
declare -A MR_CAL_USED=()   # tl -> its -n
MR_CAL_N=$(( ITERS * 20 ))

# Every ucx_perftest starts from this environment: the caller's, without
# what the script sets per transport.
BASE_ENV=(env -u LD_PRELOAD -u UCX_TLS -u UCX_NET_DEVICES -u UCX_SRM_SOCKET
          -u UCX_SRM_AGENT LC_ALL=C UCX_WARN_UNUSED_ENV_VARS=n)
SRM_ENV=(LD_PRELOAD="$SRM_MODULE" UCX_SRM_SOCKET="$SRM_SOCKET" UCX_SRM_AGENT=never)
TCP_ENV=()
SRM_UCT=()  # -x srm -d DEVICE, once the hosts are up
TCP_UCT=(-x tcp -d eth0)

# -------------------------------------------------------------- cleanup --

make_work_dir srm-hosts
PIDS=()                 # background processes (timeout wrappers of ranks)
declare -A AGENT=()     # host -> srmd PID
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
cpu_group_join srm-hosts

# ------------------------------------------------------------- cluster --

info "bringing up hosts $H1 and $H2 (netns-cluster --prefix $PFX); logs in $WORK"
cluster_up 2

hosts_tcp_cc "$TCP_CC"

# The devices the comparison relies on, as UCX sees them inside h1: srm's
# is named after the device its agent uses (srmctl device).
SRM_DEV=$("$SRM_NETNS_CLUSTER" exec "$H1" env -u LD_PRELOAD "$SRM_SRMCTL" device) ||
    die "srmctl device in $H1 failed"
SRM_UCT=(-x srm -d "$SRM_DEV")
devs=$(timeout -k 5 60 "$SRM_NETNS_CLUSTER" exec "$H1" "${BASE_ENV[@]}" "${SRM_ENV[@]}" \
       "$UCX_INFO" -d 2>"$WORK/ucx_info.err" | awk '
           $2 == "Transport:" { tl = $3; next }
           $2 == "Device:" { print tl "/" $3 }' | sort -u | paste -sd ' ' -) || true
[[ " $devs " == *" srm/$SRM_DEV "* ]] ||
    die "ucx_info in $H1 does not list srm device '$SRM_DEV' with LD_PRELOAD=$SRM_MODULE (got: ${devs:-nothing}; $(head -c 300 "$WORK/ucx_info.err"))"
[[ " $devs " == *" tcp/eth0 "* ]] ||
    die "ucx_info in $H1 does not list tcp device 'eth0' (got: $devs)"

# ---------------------------------------------------------------- agents --

# One srmd per host, each in a session of its own as UCX starts it (see
# srm_agent_spawn_cmd in contrib/srm-harness.sh); logs srmd.HOST.run.log.
agents_start run
AGENT_POLICY=$(srm_netns_status_get "$H1" "$POLICY_JQ")
CHANNEL_DEPTH=$(srm_netns_status_get "$H1" .policy.channel_depth)
AGENT_NICE=$(ps -o ni= -p "${AGENT[$H1]}" | tr -d ' ')
info "srmd pid ${AGENT[$H1]} in $H1, pid ${AGENT[$H2]} in $H2 on @$SRM_SOCKET ($AGENT_POLICY, nice $AGENT_NICE)"

# --------------------------------------------------------- disturbances --

# Running processes that are not ours (see foreign_load in lib.sh).
other_load() { foreign_load "${AGENT[@]}"; }

# ------------------------------------------------------------------ runs --

NEXT_PORT=$PORT_BASE
RUN_NO=0
TOTAL_RUNS=0
DONE_RUNS=0
DISTURBED_RUNS=0
FOREIGN_CPU_TOTAL=0
declare -A FOREIGN_NAMES=()

# Is a socket in h1 listening on TCP port $1?  h1's table, read through
# the /proc of its srmd (no subprocess in the namespace needed).
listening_in_h1() { port_in_state "$1" 0A "/proc/${AGENT[$H1]}/net/tcp"; }

show_failure() {        # DIR: commands and logs of a failed run, agent logs
    local d=$1 f h
    {
        if [[ -e $d/cmd ]]; then
            printf '\n--- failed run: commands (%s/cmd) ---\n' "$d"
            cat "$d/cmd" || true
        fi
        for f in "$d"/*.log; do
            [[ -e $f ]] || continue
            printf -- '--- %s (last 25 lines) ---\n' "$f"
            tail -n 25 "$f" || true
        done
        for h in "${SRM_HOSTS[@]}"; do
            srm_alive "${AGENT[$h]}" || printf -- '--- srmd in %s (pid %s) is NOT running ---\n' "$h" "${AGENT[$h]}"
            for f in "$WORK/srmd.$h.run.log" "$WORK/srmd.$h.run.out"; do
                [[ -s $f ]] || continue
                printf -- '--- %s (last 25 lines) ---\n' "$f"
                tail -n 25 "$f" || true
            done
        done
    } >&2
}

# run_group TL API TEST SIZE ITERS WARMUP PAIRS FIELD REP
#   P = PAIRS servers in h1 and clients in h2, started together; dies if
#   any of them fails.  Sets RUN_VALUE (FIELD of the "Final:" lines, summed
#   over the pairs), DISTURBED, FOREIGN_CPU, FOREIGN_SEEN, SUMMARY.
run_group() {
    local tl=$1 api=$2 test=$3 size=$4 iters=$5 warmup=$6 pairs=$7 field=$8 rep=$9
    local envs=() targs=() d i k h scmd ccmd first rc
    local srv=() cli=() ports=() waitset=()
    RUN_NO=$(( RUN_NO + 1 ))
    case $tl/$api in
    srm/ucp) envs=("${SRM_ENV[@]}" UCX_TLS=srm) ;;
    srm/uct) envs=("${SRM_ENV[@]}"); targs=("${SRM_UCT[@]}") ;;
    tcp/ucp) envs=("${TCP_ENV[@]}" UCX_TLS=tcp UCX_NET_DEVICES=eth0) ;;
    tcp/uct) envs=("${TCP_ENV[@]}"); targs=("${TCP_UCT[@]}") ;;
    esac
    printf -v d '%s/runs/%03d-%s-%s-%s-P%s-r%s' "$WORK" "$RUN_NO" "$tl" "$test" "$size" "$pairs" "$rep"
    mkdir -p "$d"
    printf '# run %d: %s, %s %s %s B, %d pair(s), rep %d\n' \
        "$RUN_NO" "$tl" "$api" "$test" "$size" "$pairs" "$rep" >"$d/cmd"
    for (( k = 0; k < pairs; k++ )); do
        ports[k]=$NEXT_PORT
        NEXT_PORT=$(( NEXT_PORT + 1 ))
    done

    agents_alive || { show_failure "$d"; die "an srmd is gone before run $RUN_NO"; }
    mark_start "${AGENT[@]}"

    for (( k = 0; k < pairs; k++ )); do
        scmd=(timeout -k 5 "$TIMEOUT" "$SRM_NETNS_CLUSTER" exec "$H1" "${BASE_ENV[@]}" "${envs[@]}"
              "$PERFTEST" "${PERFTEST_RTE[@]}" -p "${ports[k]}" -t "$test" -s "$size" -n "$iters" -w "$warmup" "${targs[@]}")
        printf '%s &\n' "$(quote "${scmd[@]}")" >>"$d/cmd"
        "${scmd[@]}" >"$d/server.$k.log" 2>&1 &
        srv[k]=$!
        PIDS+=("${srv[k]}")
    done
    # All servers listen before any client starts (10 s at most).
    for (( i = 0; i < 400; i++ )); do
        for (( k = 0; k < pairs; k++ )); do
            listening_in_h1 "${ports[k]}" || break
        done
        (( k == pairs )) && break
        srm_alive "${srv[k]}" || break
        srm_nap 0.025
    done
    if (( k < pairs )); then
        srm_kill_pids 2 "${srv[@]}"
        for k in "${srv[@]}"; do forget_pid "$k"; done
        show_failure "$d"
        die "run $RUN_NO ($tl $test ${size} B): the ucx_perftest server on port ${ports[k]} in $H1 did not listen"
    fi
    for (( k = 0; k < pairs; k++ )); do
        ccmd=(timeout -k 5 "$TIMEOUT" "$SRM_NETNS_CLUSTER" exec "$H2" "${BASE_ENV[@]}" "${envs[@]}"
              "$PERFTEST" "${PERFTEST_RTE[@]}" -p "${ports[k]}" -t "$test" -s "$size" -n "$iters" -w "$warmup" "${targs[@]}" "$IP1")
        printf '%s &\n' "$(quote "${ccmd[@]}")" >>"$d/cmd"
        "${ccmd[@]}" >"$d/client.$k.log" 2>&1 &
        cli[k]=$!
        PIDS+=("${cli[k]}")
    done
    cat "$d/cmd" >>"$CMDS"

    # Wait for the clients; wake up also when an agent ends (without its
    # agent an srm rank may wait until its timeout, hiding the cause).
    waitset=("${cli[@]}")
    while (( ${#waitset[@]} > 0 )); do
        first='' rc=0
        srm_wait_first first "${waitset[@]}" "${AGENT[@]}" || rc=$?
        if [[ -z $first ]]; then
            continue                    # interrupted without a job ending
        fi
        for h in "${SRM_HOSTS[@]}"; do
            if [[ $first == "${AGENT[$h]}" ]]; then
                AGENT[$h]=
                srm_kill_pids 2 "${cli[@]}" "${srv[@]}"
                for k in "${cli[@]}" "${srv[@]}"; do forget_pid "$k"; done
                show_failure "$d"
                die "run $RUN_NO ($tl $test ${size} B, P=$pairs, rep $rep): srmd in $h exited during the run (status $rc)"
            fi
        done
        forget_pid "$first"
        local keep=()
        for k in "${waitset[@]}"; do [[ $k == "$first" ]] || keep+=("$k"); done
        waitset=("${keep[@]}")
        if (( rc != 0 )); then
            srm_kill_pids 2 "${cli[@]}" "${srv[@]}"
            for k in "${cli[@]}" "${srv[@]}"; do forget_pid "$k"; done
            show_failure "$d"
            local why=
            (( rc == 124 || rc == 137 )) && why=" (killed by its ${TIMEOUT} s timeout: hang?)"
            die "run $RUN_NO ($tl $test ${size} B, P=$pairs, rep $rep): a client exited with status $rc$why"
        fi
    done
    # The servers end right after their clients; 20 s grace.
    local deadline=$(( SECONDS + 20 ))
    for (( k = 0; k < pairs; k++ )); do
        while srm_alive "${srv[k]}" && (( SECONDS < deadline )); do srm_nap 0.05; done
        if srm_alive "${srv[k]}"; then
            srm_kill_pids 2 "${srv[@]}"
            for i in "${srv[@]}"; do forget_pid "$i"; done
            show_failure "$d"
            die "run $RUN_NO ($tl $test ${size} B): the server on port ${ports[k]} still runs 20 s after its client ended"
        fi
        rc=0
        wait "${srv[k]}" || rc=$?
        forget_pid "${srv[k]}"
        if (( rc != 0 )); then
            show_failure "$d"
            die "run $RUN_NO ($tl $test ${size} B, P=$pairs, rep $rep): the server on port ${ports[k]} exited with status $rc"
        fi
    done

    mark_end "${AGENT[@]}"
    RUN_SECS=$(seconds_between "$T0" "$T1" %.1f)
    # Disturbed: other processes took > 5 % of a core during the run, or
    # still run right after it.
    judge_run "$(other_load)"

    agents_alive || { show_failure "$d"; die "an srmd died during run $RUN_NO"; }

    # The clients' "Final:" lines: 8 numbers ("inf"/"nan" allowed in the
    # last-interval columns, rejected below if the column used has one).
    local final n v sum=0 per=
    PAIR_SECS=
    for (( k = 0; k < pairs; k++ )); do
        final=$(final_line "$d/client.$k.log")
        if [[ -z $final ]]; then
            show_failure "$d"
            die "run $RUN_NO ($tl $test ${size} B): no parseable 'Final:' line in $d/client.$k.log"
        fi
        n=${final%% *}
        if [[ $n != "$iters" ]]; then
            show_failure "$d"
            die "run $RUN_NO ($tl $test ${size} B): the client reports $n iterations, expected $iters"
        fi
        v=$(final_field "$final" "$field")
        if ! is_number "$v"; then
            show_failure "$d"
            die "run $RUN_NO ($tl $test ${size} B): column $field of the 'Final:' line is '$v'"
        fi
        sum=$(awk -v a="$sum" -v b="$v" 'BEGIN { printf "%.6f", a + b }')
        PAIR_SECS+="$(awk -v n="$iters" -v r="$(final_field "$final" 8)" \
                      'BEGIN { if (r > 0) printf "%.3f ", n / r }')"
        per+="${per:+ + }$v"
    done
    RUN_VALUE=$sum
    SUMMARY="$per"
    (( pairs > 1 )) && SUMMARY+=" = $sum"
    (( field != 8 )) || SUMMARY+=" [measured s per pair: ${PAIR_SECS% }]"
    SUMMARY+=" (${RUN_SECS} s, foreign CPU ${FOREIGN_CPU} s)"
    (( DISTURBED )) && SUMMARY+=" DISTURBED${FOREIGN_SEEN:+ (running: $FOREIGN_SEEN)}"
    return 0
}

# test id | api | test | size | iters | warm-up | pairs | Final field | kind | row label
# (the plots read the ids lat-SIZE, bw-SIZE and mrP)
TESTS=()
for s in "${SIZES[@]}"; do
    TESTS+=("lat-$s|ucp|tag_lat|$s|${LAT_N[$s]}|${LAT_W[$s]}|1|2|lat|UCP tag_lat $(size_label "$s"), typical latency (us)")
done
for s in "${SIZES[@]}"; do
    TESTS+=("bw-$s|ucp|tag_bw|$s|${BW_N[$s]}|${BW_W[$s]}|1|6|bw|UCP tag_bw $(size_label "$s"), bandwidth (MB/s)")
done
for p in "${PAIR_COUNTS[@]}"; do
    if (( p == 1 )); then plabel="1 pair"; else plabel="$p pairs, sum"; fi
    TESTS+=("mr$p|ucp|tag_bw|8|MR|MR|$p|8|mr|UCP tag_bw 8 B, msg rate, P=$plabel (msg/s)")
done
TESTS+=("uctlat|uct|am_lat|8|$AMLAT_N|$AMLAT_W|1|2|lat|UCT am_lat 8 B, typical latency (us)")
TRANSPORTS=(srm tcp)
TOTAL_RUNS=$(( ${#TESTS[@]} * ${#TRANSPORTS[@]} * REPS ))

declare -A VALUES=()        # "tl/id" -> values, space separated
declare -A DISTURBED_IN=()  # "tl/id" -> number of disturbed runs
declare -A MR_SECS=()       # tl -> measured seconds of each 8 B rate pair

info "$TOTAL_RUNS runs: ${#TESTS[@]} measurements x ${#TRANSPORTS[@]} transports x $REPS rep(s), timeout $TIMEOUT s each"
if awk -v x="$MR_SECS_TARGET" 'BEGIN { exit !(x > 0) }'; then
    for tl in "${TRANSPORTS[@]}"; do
        # A short run measures how fast the sender's buffers (srm: the
        # rings and the agent's backlog) fill, not the rate: grow -n until
        # the run measures at least a quarter of the target.
        cal_n=$MR_CAL_N
        for (( cal = 1; ; cal++ )); do
            run_group "$tl" ucp tag_bw 8 "$cal_n" "$(( cal_n / 10 ))" 1 8 0
            (( cal < 4 )) || break
            awk -v s="${PAIR_SECS% }" -v t="$MR_SECS_TARGET" 'BEGIN { exit !(s < t / 4) }' || break
            info "calibration: $tl ucp tag_bw 8 B -n $cal_n: $SUMMARY; too short, -n $(( cal_n * 10 ))"
            cal_n=$(( cal_n * 10 ))
        done
        MR_CAL[$tl]=$RUN_VALUE MR_CAL_USED[$tl]=$cal_n
        MR_N[$tl]=$(awk -v r="$RUN_VALUE" -v t="$MR_SECS_TARGET" -v lo="$MR_CAL_N" 'BEGIN {
            n = r * t; if (n < lo) n = lo; if (n > 50000000) n = 50000000
            e = 1; while (n >= 100) { n /= 10; e *= 10 }
            printf "%d\n", int(n + 0.5) * e }')
        MR_W[$tl]=$(( MR_N[$tl] / 10 ))
        info "calibration: $tl ucp tag_bw 8 B -n $cal_n: $SUMMARY -> -n ${MR_N[$tl]} -w ${MR_W[$tl]} for about $MR_SECS_TARGET s per pair"
    done
fi
# note_bulk_turn ID: after an srm run, the turn of the bulk channel of h2
# (the sender of tag_bw) to h1, if the run wrote frames on it: appended to
# TURNS[ID]. The turn is srmd's smoothed time from writing a frame until
# its ack is back ("rtt_us" of the channel in srmctl status).
declare -A TURNS=()
BULK_TX_SEEN=0
note_bulk_turn() {
    local tx rtt
    read -r tx rtt < <(srm_netns_status_get "$H2" '.nodes[0].channels[] |
        select(.kind == "bulk") | "\(.tx_frames) \(.rtt_us // "-" |
        if type == "number" then (. + 0.5 | floor) else . end)"') || true
    [[ $tx =~ ^[0-9]+$ ]] || return 0
    if (( tx > BULK_TX_SEEN )) && [[ $rtt =~ ^[0-9]+$ ]]; then
        TURNS[$1]+="$rtt "
    fi
    BULK_TX_SEEN=$tx
}

# agents_cpu_ms: the CPU time (user and system, ms) that the agents of
# both hosts have used so far, from /proc; nothing if one is gone.
agents_cpu_ms() {
    local h line total=0
    local -a f
    for h in "${SRM_HOSTS[@]}"; do
        read -r line <"/proc/${AGENT[$h]}/stat" 2>/dev/null || return 0
        read -r -a f <<<"${line##*) }"  # from the state (field 3) on
        total=$(( total + (f[11] + f[12]) * 1000 / HZ ))
    done
    printf '%s' "$total"
}

# note_agent_cpu ID MS0 SIZE N W: after an srm bandwidth run that began
# with the agents at MS0 ms of CPU, their CPU-ms per MiB moved (N + W
# messages of SIZE bytes), appended to AGENT_CPU[ID].
declare -A AGENT_CPU=()
note_agent_cpu() {
    local ms1
    ms1=$(agents_cpu_ms)
    [[ -n $2 && -n $ms1 ]] || return 0
    AGENT_CPU[$1]+=$(awk -v d=$(( ms1 - $2 )) -v s="$3" -v n=$(( $4 + $5 )) \
                         'BEGIN { printf "%.3f ", d / (n * s / 1048576) }')
}

for (( rep = 1; rep <= REPS; rep++ )); do
    for spec in "${TESTS[@]}"; do
        IFS='|' read -r id api test size iters warmup pairs field _kind _label <<<"$spec"
        for tl in "${TRANSPORTS[@]}"; do
            n=$iters w=$warmup
            [[ $n != MR ]] || n=${MR_N[$tl]} w=${MR_W[$tl]}
            cpu0=
            [[ $tl != srm || $test != tag_bw || $id != bw-* ]] || cpu0=$(agents_cpu_ms)
            run_group "$tl" "$api" "$test" "$size" "$n" "$w" "$pairs" "$field" "$rep"
            [[ $tl != srm ]] || note_bulk_turn "$id"
            [[ -z $cpu0 ]] || note_agent_cpu "$id" "$cpu0" "$size" "$n" "$w"
            if [[ $iters == MR ]]; then
                MR_SECS[$tl]+="$PAIR_SECS "
            fi
            DONE_RUNS=$(( DONE_RUNS + 1 ))
            VALUES[$tl/$id]+="$RUN_VALUE "
            if (( DISTURBED )); then
                DISTURBED_IN[$tl/$id]=$(( ${DISTURBED_IN[$tl/$id]:-0} + 1 ))
                tally_disturbed
            fi
            info "[$DONE_RUNS/$TOTAL_RUNS] $tl $api $test ${size} B P=$pairs rep $rep: $SUMMARY"
        done
    done
done

# What the agents' wakeups cost on this machine, for the report's notes.
measure_wake_cost
info "wakeups (srm_wake_cost) measured"

# --------------------------------------------- node channels, agent state --

for h in "${SRM_HOSTS[@]}"; do
    # Three tries: on a loaded machine one srmctl may miss its 3 s.
    for try in 1 2 3; do
        rc=0
        out=$(srm_netns_ctl "$h" ping 2>&1) || rc=$?
        (( rc != 0 )) && srm_alive "${AGENT[$h]}" || break
    done
    (( rc == 0 )) || {
        show_failure "$WORK"
        srm_alive "${AGENT[$h]}" || die "srmd in $h (pid ${AGENT[$h]}) exited during the runs"
        die "srmd in $h runs but does not answer after the runs (exit $rc, 3 tries): ${out:-no output}"; }
done
declare -A CONNS=() CONN_LIST=()
for h in "${SRM_HOSTS[@]}"; do
    timeout -k 2 20 "$SRM_NETNS_CLUSTER" exec "$h" ss -tnpH state established >"$WORK/ss.$h" 2>&1 ||
        die "ss -tnpH in $h failed: $(head -c 300 "$WORK/ss.$h")"
    CONN_LIST[$h]=$(awk -v pid="pid=${AGENT[$h]}," 'index($0, "\"srmd\"") && index($0, pid) {
                        printf "%s%s -> %s", sep, $3, $4; sep = ", " }' "$WORK/ss.$h")
    CONNS[$h]=$(awk -v pid="pid=${AGENT[$h]}," 'index($0, "\"srmd\"") && index($0, pid) { n++ } END { print n + 0 }' "$WORK/ss.$h")
done
STATUS_H1=$(srm_netns_ctl "$H1" status 2>&1) || die "srmctl status in $H1 failed: $STATUS_H1"
srm_netns_ctl "$H2" status >"$WORK/status.$H2" 2>&1 || true
printf '%s\n' "$STATUS_H1" >"$WORK/status.$H1"
WIRE_LINES=$(printf '%s\n' "$STATUS_H1" | awk '$1 == "wire:" || $1 == "node"')
AGENT_COUNTERS=$(srm_netns_status_get "$H1" "$COUNTERS_JQ")

srm_kill_pids 2 "${AGENT[@]}"
for h in "${SRM_HOSTS[@]}"; do AGENT[$h]=; done
AGENT_PROBLEMS=$(for h in "${SRM_HOSTS[@]}"; do
                     [[ -s $WORK/srmd.$h.run.log ]] && sed "s/^/$h: /" "$WORK/srmd.$h.run.log"
                     [[ -s $WORK/srmd.$h.run.out ]] && sed "s/^/$h (stderr): /" "$WORK/srmd.$h.run.out"
                 done; true)

T_END=$EPOCHREALTIME
ELAPSED=$(seconds_between "$T_START" "$T_END" %.0f)

# ----------------------------------------------------------------- plots --

# Next to --out FILE, named after it; else in the log directory, kept.
if [[ -n $OUT ]]; then
    PLOT_DIR=$(cd "$(dirname -- "$OUT")" && pwd)
    PLOT_STEM=$(basename -- "$OUT")
    PLOT_STEM=${PLOT_STEM%.md}
    [[ -n $PLOT_STEM ]] || PLOT_STEM=hosts
    PLOT_LINK=                  # the report sits next to the plots
else
    PLOT_DIR=$WORK PLOT_STEM=hosts PLOT_LINK=$WORK/
fi
PLOT_KINDS=(lat bw mr)
declare -A PLOT_ALT=(
    [lat]="UCP tag_lat typical (p50) latency vs message size, srm and tcp"
    [bw]="UCP tag_bw bandwidth vs message size, srm and tcp"
    [mr]="UCP tag_bw 8 B aggregate message rate vs processes per host, srm and tcp"
)

# plot_data KIND: the data file of plot KIND (lat, bw, mr): per size (or
# P) the medians of srm and tcp, from the VALUES the table shows.
plot_data() {
    local kind=$1 x xs key tl med line
    case $kind in
    lat) xs=("${SIZES[@]}")
         printf '# UCP tag_lat typical (p50) latency vs message size, half a round trip\n'
         printf '# columns: size (B), srm (us), tcp (us)\n' ;;
    bw)  xs=("${SIZES[@]}")
         printf '# UCP tag_bw bandwidth (overall) vs message size\n'
         printf '# columns: size (B), srm (MB/s, 2^20 B/s), tcp (MB/s)\n' ;;
    mr)  xs=("${PAIR_COUNTS[@]}")
         printf '# UCP tag_bw 8 B aggregate message rate (sum of the P clients) vs P\n'
         printf '# columns: P (process pairs = processes per host), srm (msg/s), tcp (msg/s)\n' ;;
    esac
    printf '# each value: median of %d run(s), as in the table of the report; %s, %s\n' \
        "$REPS" "$PROG" "$START_DATE"
    for x in "${xs[@]}"; do
        case $kind in mr) key=mr$x ;; *) key=$kind-$x ;; esac
        line=$x
        for tl in "${TRANSPORTS[@]}"; do
            # shellcheck disable=SC2086  # a list of numbers
            read -r med _ _ < <(stats ${VALUES[$tl/$key]})
            line+=" $med"
        done
        printf '%s\n' "$line"
    done
}

# plot_script TERMINAL: the gnuplot script that draws the PNGs from the
# data files; file names relative to PLOT_DIR.
plot_script() {
    local term=$1 kind x sub warn tics=''
    if [[ $term == pngcairo ]]; then
        printf "set terminal pngcairo size 960,640 noenhanced font 'DejaVu Sans,11'\n"
    else
        printf 'set terminal png size 960,640 noenhanced\n'
    fi
    # The title's second line, and a third one for the caveats.
    if (( REPS > 1 )); then sub="median of $REPS runs per point"; else sub="one run per point"; fi
    sub+="; $START_DATE; $(uname -n), $NCPU cores"
    warn=''
    [[ $QUICK == 0 ]] || warn="--quick smoke run, not a measurement"
    (( DISTURBED_RUNS == 0 )) || warn+="${warn:+; }machine not idle in $DISTURBED_RUNS of $TOTAL_RUNS runs"
    [[ -z $warn ]] || sub+="\\n$warn"
    for x in "${SIZES[@]}"; do tics+="${tics:+, }\"$(size_label "$x")\" $x"; done
    printf 'set grid\nset key below height 1.5\nset datafile commentschars "#"\n'
    printf 'set style data linespoints\n'
    printf 'srm = %s\ntcp = %s\n' "$(gp_str 'srm (UCX_TLS=srm, via srmd on each host)')" \
        "$(gp_str 'tcp (UCX_TLS=tcp, UCX point-to-point TCP)')"
    for kind in "${PLOT_KINDS[@]}"; do
        printf '\nset output %s\n' "$(gp_str "$PLOT_STEM-$kind.png")"
        printf 'unset logscale\nset autoscale\nset format x "%%g"\nset format y "%%g"\n'
        case $kind in
        lat)
            printf 'set title "srm vs tcp between two simulated hosts: UCP tag_lat latency vs message size\\n%s"\n' "$sub"
            printf 'set xlabel "message size (KB = 2^10 B, MB = 2^20 B)"\n'
            printf 'set ylabel "typical (p50) latency, half a round trip (us)"\n'
            printf 'set logscale xy\nset xtics (%s)\n' "$tics"
            printf 'set xrange [%s/1.5:%s*1.5]\n' "${SIZES[0]}" "${SIZES[-1]}" ;;
        bw)
            printf 'set title "srm vs tcp between two simulated hosts: UCP tag_bw bandwidth vs message size\\n%s"\n' "$sub"
            printf 'set xlabel "message size (KB = 2^10 B, MB = 2^20 B)"\n'
            printf 'set ylabel "bandwidth, overall (MB/s, MB = 2^20 B)"\n'
            printf 'set logscale x\nset xtics (%s)\n' "$tics"
            printf 'set xrange [%s/1.5:%s*1.5]\nset yrange [0:*]\n' "${SIZES[0]}" "${SIZES[-1]}" ;;
        mr)
            printf 'set title "srm vs tcp between two simulated hosts: UCP tag_bw 8 B aggregate message rate\\n%s"\n' "$sub"
            printf 'set xlabel "P: concurrent process pairs = processes per host"\n'
            printf 'set ylabel "aggregate message rate, sum of the P clients (msg/s)"\n'
            printf 'set logscale x 2\nset logscale y\nset format y "%%.0s%%c"\n'
            printf 'set xtics (%s)\n' "$(printf '%s\n' "${PAIR_COUNTS[@]}" | paste -sd, -)"
            printf 'set xrange [%s/1.25:%s*1.25]\n' "${PAIR_COUNTS[0]}" "${PAIR_COUNTS[-1]}" ;;
        esac
        printf 'plot %s using 1:2 title srm lw 2 pt 7, "" using 1:3 title tcp lw 2 pt 5\n' \
            "$(gp_str "$PLOT_STEM-$kind.dat")"
    done
    printf '\nunset output\n'
}

# render_plots: write the data files and the gnuplot script, run gnuplot;
# sets PLOT_TERM and PLOT_PROBLEM (empty when all PNGs were made).
render_plots() {
    local kind gnuplot png
    PLOT_PROBLEM='' PLOT_TERM=pngcairo
    for kind in "${PLOT_KINDS[@]}"; do
        write_out "$PLOT_DIR/$PLOT_STEM-$kind.dat" plot_data "$kind"
        rm -f -- "$PLOT_DIR/$PLOT_STEM-$kind.png"      # no stale plot
    done
    gnuplot=$(command -v gnuplot || true)
    if [[ -z $gnuplot ]]; then
        PLOT_PROBLEM="gnuplot not found (Debian package gnuplot-nox, see contrib/install-deps.sh)"
    elif ! timeout -k 2 20 "$gnuplot" -e 'set terminal pngcairo' </dev/null >/dev/null 2>&1; then
        PLOT_TERM=png
    fi
    write_out "$PLOT_DIR/$PLOT_STEM-plots.gp" plot_script "$PLOT_TERM"
    [[ -z $PLOT_PROBLEM ]] || return 0
    if ! (cd "$PLOT_DIR" && timeout -k 5 60 "$gnuplot" "$PLOT_STEM-plots.gp" </dev/null) \
            >"$WORK/gnuplot.log" 2>&1; then
        PLOT_PROBLEM="gnuplot failed: $(tail -n 3 "$WORK/gnuplot.log" | tr '\n' ' ')"
        return 0
    fi
    for kind in "${PLOT_KINDS[@]}"; do
        png=$PLOT_DIR/$PLOT_STEM-$kind.png
        [[ -s $png ]] || PLOT_PROBLEM+="${PLOT_PROBLEM:+; }gnuplot made no $png"
    done
}

render_plots
if [[ -n $PLOT_PROBLEM ]]; then
    info "WARNING: no plots: $PLOT_PROBLEM"
else
    info "plots ($PLOT_TERM): $(for kind in "${PLOT_KINDS[@]}"; do printf '%s ' "$PLOT_DIR/$PLOT_STEM-$kind.png"; done)"
fi
[[ -n $OUT ]] || KEEP_LOGS=1     # the plots and their data are in $WORK

# ---------------------------------------------------------------- report --

# iter_ranges N-ARRAY W-ARRAY: "8 B-4 KB 200/20, 64 KB 12/1" from the
# per-size -n and -w of a sweep, runs of equal counts merged.
iter_ranges() {
    local -n n_of=$1 w_of=$2
    local s first='' last='' cur='' text=''
    for s in "${SIZES[@]}" ''; do
        if [[ -n $s && ${n_of[$s]}/${w_of[$s]} == "$cur" ]]; then
            last=$s
            continue
        fi
        if [[ -n $first ]]; then
            text+="${text:+, }$(size_label "$first")"
            [[ $last == "$first" ]] || text+="-$(size_label "$last")"
            text+=" $cur"
        fi
        [[ -n $s ]] || break
        first=$s last=$s cur=${n_of[$s]}/${w_of[$s]}
    done
    printf '%s' "$text"
}

# bulk_turn_lines: a note on the window bound of srm's bulk channel for
# every tag_bw size that moved frames on it: at most CHANNEL_DEPTH is
# unacknowledged, so it moves at most CHANNEL_DEPTH per turn.
bulk_turn_lines() {
    local spec id test size depth med lo hi bound bw
    depth=$CHANNEL_DEPTH
    [[ -n $depth ]] || return 0
    for spec in "${TESTS[@]}"; do
        IFS='|' read -r id _ test size _ <<<"$spec"
        [[ $test == tag_bw && $id == bw-* && -n ${TURNS[$id]:-} ]] || continue
        # shellcheck disable=SC2086  # a list of numbers
        read -r med lo hi < <(stats ${TURNS[$id]})
        # shellcheck disable=SC2086
        read -r bw _ < <(stats ${VALUES[srm/$id]})
        bound=$(awk -v d="$depth" -v t="$med" 'BEGIN { if (t > 0) printf "%.0f", d / (t * 1e-6) / 1048576; else print "inf" }')
        printf -- '- srm tag_bw %s: the bulk channel (%s to %s) took %.0f us [%.0f, %.0f] per turn (from writing a frame until its ack is back; srmd'"'"'s smoothed rtt_us, read after each run); with at most %s unacknowledged (CHANNEL_DEPTH) that allows at most %s MB/s, and srm moved %s MB/s\n' \
            "$(size_label "$size")" "$H2" "$H1" "$med" "$lo" "$hi" "$(size_label "$depth")" "$bound" "$(fmt bw "$bw")"
        agent_cpu_line "$id" "$size"
    done
}

# agent_cpu_line ID SIZE: what the two agents' own work per MiB moved
# would take at 0.8 x tcp's bandwidth (the issue's target), in CPUs.
agent_cpu_line() {
    local med lo hi tcp_bw
    [[ -n ${AGENT_CPU[$1]:-} && -n ${VALUES[tcp/$1]:-} ]] || return 0
    # shellcheck disable=SC2086  # lists of numbers
    read -r med lo hi < <(stats ${AGENT_CPU[$1]})
    # shellcheck disable=SC2086
    read -r tcp_bw _ < <(stats ${VALUES[tcp/$1]})
    printf -- '- srm tag_bw %s: its two agents used %.3f CPU-ms [%.3f, %.3f] per MiB moved (their own user and system time, /proc/PID/stat, over each run); at 0.8 x tcp'"'"'s %s MB/s that alone would take %s CPUs, of the %d of this machine\n' \
        "$(size_label "$2")" "$med" "$lo" "$hi" "$(fmt bw "$tcp_bw")" \
        "$(awk -v c="$med" -v b="$tcp_bw" 'BEGIN { printf "%.1f", c * 0.8 * b / 1000 }')" "$NCPU"
}

report() {
    local spec id kind label tl med lo hi h
    printf '# srm vs UCX tcp between two simulated hosts (ucx_perftest)\n\n'
    printf -- '- machine: %s, nproc %d (%s), kernel %s %s; date %s\n' \
        "$(uname -n)" "$NCPU" \
        "$(cpu_model)" \
        "$(uname -r)" "$(uname -m)" "$START_DATE"
    printf -- '- UCX %s; %s; module %s\n' \
        "$(ucx_version)" "$(srmd_version)" "$SRM_MODULE"
    printf -- '- hosts: %s (10.77.0.1, servers) and %s (10.77.0.2, clients), netns-cluster --prefix %s; one srmd per host on @%s (%s, nice %s)\n' \
        "$H1" "$H2" "$PFX" "$SRM_SOCKET" "$AGENT_POLICY" "$AGENT_NICE"
    tcp_cc_line "$TCP_CC"
    printf -- '- srm: UCX_TLS=srm, UCT -x srm -d %s (rank -> srmd -> TCP node channel -> srmd -> rank; small messages between polling ranks through the channel socket directly); tcp: UCX_TLS=tcp UCX_NET_DEVICES=eth0, UCT -x tcp -d eth0\n' \
        "$SRM_DEV"
    printf -- '- iterations (-n / -w): tag_lat %s; tag_bw %s; am_lat %d/%d; 8 B message rate %d/%d (srm) and %d/%d (tcp) per pair%s\n' \
        "$(iter_ranges LAT_N LAT_W)" "$(iter_ranges BW_N BW_W)" "$AMLAT_N" "$AMLAT_W" \
        "${MR_N[srm]}" "${MR_W[srm]}" "${MR_N[tcp]}" "${MR_W[tcp]}" \
        "$([[ $QUICK == 1 ]] && printf '; --quick smoke run, not a measurement')"
    if (( ${#MR_CAL[@]} > 0 )); then
        printf -- '- message-rate iterations from calibration runs (P=1): srm %s msg/s (-n %d), tcp %s msg/s (-n %d), for --mr-secs %s\n' \
            "$(fmt mr "${MR_CAL[srm]}")" "${MR_CAL_USED[srm]}" \
            "$(fmt mr "${MR_CAL[tcp]}")" "${MR_CAL_USED[tcp]}" "$MR_SECS_TARGET"
    fi
    if (( NCPU == 2 )); then
        printf -- '- ucx_perftest busy-polls: the ranks take both cores, the agents must be woken per hop\n'
    else
        printf -- '- ucx_perftest busy-polls: the ranks take cores (2 per pair, %d cores here), the agents must be woken per hop\n' "$NCPU"
    fi
    print_inherited_ucx
    print_disturbance runs
    if [[ -n $PLOT_PROBLEM ]]; then
        printf -- '- **WARNING: NO PLOTS: %s**; the data files are written (see Plots)\n' "$PLOT_PROBLEM"
    fi
    if (( REPS > 1 )); then
        printf '\nCells: median [min, max] of %d runs.' "$REPS"
    else
        printf '\nCells: one run each (no spread; see --reps).'
    fi
    printf ' srm/tcp: ratio of the medians (latency: < 1 means srm is faster; MB/s, msg/s: > 1 means srm is faster).\n\n'

    table_head measurement srm tcp srm/tcp
    for spec in "${TESTS[@]}"; do
        IFS='|' read -r id _ _ _ _ _ _ _ kind label <<<"$spec"
        table_row "$label" "$kind" "$id"
    done

    printf '\nNotes:\n'
    printf -- '- typical latency: the 50th percentile ucx_perftest prints (of the samples of its last report interval); half a round trip.\n'
    printf -- '- message rate: UCP tag_bw 8 B, overall msg/s of each client (sends completed at the sender), summed over the P pairs that ran at the same time; the pairs start within a fraction of a second of each other, but each measures its own interval, so the sum is an upper bound if they did not fully overlap.'
    for tl in "${TRANSPORTS[@]}"; do
        # shellcheck disable=SC2086  # a list of numbers
        read -r med lo hi < <(stats ${MR_SECS[$tl]})
        printf ' Measured time per pair, %s: %.2f s median, %.2f-%.2f s.' "$tl" "$med" "$lo" "$hi"
    done
    printf '\n'
    printf -- '- MB/s is ucx_perftest'"'"'s unit, 2^20 bytes per second.\n'
    bulk_turn_lines
    printf -- '- '
    wake_cost_line
    printf -- '- %d runs, %s s wall time in all (including the cluster set-up and tear-down of this script so far).\n' "$TOTAL_RUNS" "$ELAPSED"

    printf '\n## Plots\n\n'
    if [[ -n $PLOT_PROBLEM ]]; then
        printf '**No plots: %s.**\n\n' "$PLOT_PROBLEM"
    else
        for kind in "${PLOT_KINDS[@]}"; do
            printf '![%s](%s)\n\n' "${PLOT_ALT[$kind]}" "$(md_dest "$PLOT_LINK$PLOT_STEM-$kind.png")"
        done
    fi
    # shellcheck disable=SC2016  # backquotes for markdown
    printf 'Data of the plots (the medians of the table; columns: size in B or P, srm, tcp): %s; gnuplot script (%s terminal): `%s`; in %s.\n' \
        "$(for kind in "${PLOT_KINDS[@]}"; do printf '`%s` ' "$PLOT_STEM-$kind.dat"; done | sed 's/ $//; s/` `/`, `/g')" \
        "$PLOT_TERM" "$PLOT_STEM-plots.gp" "$PLOT_DIR"

    printf '\n## srm node channels after the runs\n\n'
    for h in "${SRM_HOSTS[@]}"; do
        printf -- '- %s: %d established TCP connection(s) owned by srmd%s\n' \
            "$h" "${CONNS[$h]}" "${CONN_LIST[$h]:+: ${CONN_LIST[$h]}}"
    done
    # shellcheck disable=SC2016  # backquotes for markdown
    printf '\n`srmctl -s %s status` in %s (wire and node lines):\n\n```\n%s\n```\n' \
        "$SRM_SOCKET" "$H1" "$WIRE_LINES"
    [[ -z $AGENT_COUNTERS ]] || printf '\nsrmd counters in %s: %s\n' "$H1" "$AGENT_COUNTERS"
    if [[ -n $AGENT_PROBLEMS ]]; then
        # shellcheck disable=SC2016  # backquotes for markdown
        printf '\nsrmd logged warnings or errors (-q):\n\n```\n%s\n```\n' "$AGENT_PROBLEMS"
    fi
}

commands() {
    printf '\n## Commands\n\n'
    printf 'Each run: the server lines (in %s) in the background, then the client lines (in %s), all under "timeout -k 5 %d".\n\n' \
        "$H1" "$H2" "$TIMEOUT"
    printf '```sh\n'
    cat "$CMDS"
    printf '```\n'
}

report_and_commands() { cat "$REPORT"; commands; }

REPORT=$WORK/report.md
report >"$REPORT"
if [[ -n $OUT ]]; then
    write_out "$OUT" report_and_commands
fi
cat "$REPORT"
[[ -z $OUT ]] || printf '\n(report and command lines written to %s)\n' "$OUT"
[[ -n $OUT ]] || printf '\n(plots and their data in %s, kept)\n' "$WORK"
FAILED=0
