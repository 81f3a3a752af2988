#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# many.sh - many-to-many traffic among many ranks per host (contrib/bench/
# srm_many.c): alltoall, allreduce and an 8 B exchange among all, srm vs UCX
# tcp, with yielding and with busy-polling ranks, against ranks per host.
set -euo pipefail

PROG=${0##*/}
export LC_ALL=C
INFO_CLOCK=1
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/lib.sh"
SRCDIR=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)

usage() {
    cat <<USAGE
NAME
    $PROG - alltoall, allreduce and an 8 B exchange among many ranks, srm
    vs UCX tcp

SYNOPSIS
    $PROG [--build DIR] [--reps N] [--out FILE] [--timeout SEC]
            [--hosts N] [--procs LIST] [--alltoall SIZES] [--allreduce SIZES]
            [--put] [--seconds SEC] [--yield LIST] [--tcp-cc NAME]
            [--prefix NAME] [--keep-logs] [--quick]
    $PROG -h | --help

DESCRIPTION
    Brings up N simulated hosts (netns-cluster, --prefix, default
    mn<pid>), one srmd each, and runs srm_many (Open MPI, through
    contrib/netns-mpirun) with P ranks per host for each P of --procs:
    MPI_Alltoall at each size of --alltoall (bytes per peer),
    MPI_Allreduce at each size of --allreduce (bytes of the vector, 64-bit
    sums), every rank sending 8 B to every other rank (MPI_Isend and
    MPI_Irecv to and from all, then MPI_Waitall), and with --put the same
    one-sided: every rank putting 8 B into every other rank's window
    between two MPI_Win_fence (Open MPI 4.1's pml ucx creates no window
    over UCX_TLS=tcp or srm here: MPI_ERR_WIN). Each operation runs 5 times
    to warm up, then for --seconds (at least 5 times); its time is the
    slowest rank's. Every result is checked.

    Each job runs once per transport, srm (UCX_TLS=srm) and tcp
    (UCX_TLS=tcp, eth0), and per --yield value: 1, the ranks yield the CPU
    while they wait (mpi_yield_when_idle 1), the fair comparison with more
    ranks than cores, as here; 0, they busy-poll (Open MPI's default).
    Repetitions are the outer loop, the transports alternate innermost.

    The report: per polling mode a table of operation, size and ranks per
    host with the median and p99 of srm and tcp and srm/tcp (< 1: srm is
    faster), medians over the repetitions [min, max]; and issue 31's
    targets (yielding ranks: alltoall 8 B at 3 x 4 srm/tcp <= 1.0, at
    3 x 8 and 3 x 16 <= 0.5; allreduce 8 B at 3 x 16 <= 1.0).

OPTIONS
    --build DIR        srm build (default: \$SRM_BUILD_DIR, else <repo>/build)
    --reps N           repetitions (default 3; 1 with --quick)
    --out FILE         also write the report and its commands to FILE (and
                       the data, FILE without .md plus .dat)
    --timeout SEC      limit of one job (default 600)
    --hosts N          simulated hosts, 2..16 (default 3)
    --procs LIST       ranks per host, commas (default 2,4,8,16)
    --alltoall SIZES   bytes per peer, commas, K suffix (default 8,1K,64K)
    --allreduce SIZES  bytes of the vector (default 8,1K,64K)
    --put              also the one-sided exchange
    --seconds SEC      measured per operation and size (default 2; 0.3
                       with --quick)
    --yield LIST       mpi_yield_when_idle values, commas (default 1,0)
    --tcp-cc NAME      TCP congestion control in the hosts (default: the
                       kernel's)
    --prefix NAME      netns-cluster prefix (default mn<pid>)
    --keep-logs        keep the log directory
    --quick            smoke run: --reps 1 --seconds 0.3 --procs 2,
                       sizes 8 only
    -h, --help         this help

EXIT STATUS
    0 report printed; 1 a job failed (a wrong result included) or the
    environment is unusable; 2 bad usage; 130/143 interrupted. The
    processes it started are killed by PID and the cluster is torn down
    whatever happens.

REQUIREMENTS
    root, ip, nsenter, timeout, mpicc and mpirun (Open MPI with pml ucx),
    ucx_info, jq, an srm build.

EXAMPLES
    $PROG --quick
    $PROG --procs 4,8,16 --yield 1 --out many.md
USAGE
}

BUILD=${SRM_BUILD_DIR:-}
REPS='' ITERS=0 OUT='' PORT_BASE=0 TIMEOUT=600 KEEP_LOGS=0 QUICK=0
NHOSTS=3 PROCS_ARG='' A2A_ARG='' RED_ARG='' PUT=0 SECS='' YIELD_ARG=1,0
TCP_CC='' PFX=mn$$

while [[ $# -gt 0 ]]; do
    common_option "$@"
    if (( OPT_SHIFT > 0 )); then
        [[ $1 != --iters* && $1 != --port* ]] || bad "unknown argument: $1"
        shift "$OPT_SHIFT"; continue
    fi
    case $1 in
    --hosts)      need_arg "$@"; NHOSTS=$2; shift 2 ;;
    --procs)      need_arg "$@"; PROCS_ARG=$2; shift 2 ;;
    --alltoall)   need_arg "$@"; A2A_ARG=$2; shift 2 ;;
    --allreduce)  need_arg "$@"; RED_ARG=$2; shift 2 ;;
    --put)        PUT=1; shift ;;
    --seconds)    need_arg "$@"; SECS=$2; shift 2 ;;
    --yield)      need_arg "$@"; YIELD_ARG=$2; shift 2 ;;
    --tcp-cc)     need_arg "$@"; TCP_CC=$2; shift 2 ;;
    --prefix)     need_arg "$@"; PFX=$2; shift 2 ;;
    -h|--help)    usage; exit 0 ;;
    *)            bad "unknown argument: $1" ;;
    esac
done
if [[ $QUICK == 1 ]]; then
    : "${REPS:=1}" "${SECS:=0.3}" "${PROCS_ARG:=2}" "${A2A_ARG:=8}" "${RED_ARG:=8}"
else
    : "${REPS:=3}" "${SECS:=2}" "${PROCS_ARG:=2,4,8,16}" "${A2A_ARG:=8,1K,64K}" "${RED_ARG:=8,1K,64K}"
fi
check_reps
check_timeout
check_prefix
check_out
is_uint "$NHOSTS" && (( NHOSTS >= 2 && NHOSTS <= 16 )) || bad "--hosts must be 2..16, not '$NHOSTS'"
procs_list --procs "$PROCS_ARG" 32
RANKS_PER_HOST=("${PROCS[@]}")
if ! is_number "$SECS" || ! awk -v s="$SECS" 'BEGIN { exit !(s >= 0.05 && s <= 600) }'; then
    bad "--seconds must be a number from 0.05 to 600, not '$SECS'"
fi
# sizes_of OPTION LIST: SIZES, the byte counts of LIST (K suffix),
# multiples of 8; bad usage unless there is at least one.
sizes_of() {
    local w n
    SIZES=()
    IFS=$', \t\n' read -r -a words <<<"$2"
    for w in "${words[@]}"; do
        [[ -n $w ]] || continue
        [[ $w =~ ^([0-9]{1,8})([kK]?)$ ]] || bad "$1: '$w' is not a size"
        n=$(( 10#${BASH_REMATCH[1]} ))
        [[ -z ${BASH_REMATCH[2]} ]] || n=$(( n * 1024 ))
        (( n >= 8 && n <= 1048576 && n % 8 == 0 )) || bad "$1: '$w' is not a multiple of 8 B up to 1 MB"
        SIZES+=("$n")
    done
    (( ${#SIZES[@]} > 0 )) || bad "$1: empty list"
}
sizes_of --alltoall "$A2A_ARG"
A2A_SIZES=("${SIZES[@]}")
sizes_of --allreduce "$RED_ARG"
RED_SIZES=("${SIZES[@]}")
yields_of --yield "$YIELD_ARG"

# ---------------------------------------------------------- environment --

mpi_bench_begin many

MANY_BIN=$WORK/srm_many
build_program "$MANY_BIN" mpicc '# the program' srm_many.c bench_stats.h
MANY_ARGS=(-a "$(IFS=,; echo "${A2A_SIZES[*]}")" -r "$(IFS=,; echo "${RED_SIZES[*]}")" -t "$SECS")
(( PUT == 0 )) || MANY_ARGS+=(-p)

mpi_bench_hosts_up "$NHOSTS" "$TCP_CC"

# ------------------------------------------------------------------ runs --

TRANSPORTS=(srm tcp)
RUNS=()       # "rep|tl|ranks per host|yield"
for (( rep = 1; rep <= REPS; rep++ )); do
    for p in "${RANKS_PER_HOST[@]}"; do
        for y in "${YIELDS[@]}"; do
            for tl in "${TRANSPORTS[@]}"; do RUNS+=("$rep|$tl|$p|$y"); done
        done
    done
done
TOTAL_RUNS=${#RUNS[@]}
OPS=()        # "op size" in the order srm_many prints them
for s in "${A2A_SIZES[@]}"; do OPS+=("alltoall $s"); done
for s in "${RED_SIZES[@]}"; do OPS+=("allreduce $s"); done
OPS+=("exchange 8")
(( PUT == 0 )) || OPS+=("put 8")

# take_results: every "many:" line of JOB_OUT into VALUES; dies unless
# there is one per operation and size, each with bad=0.
take_results() {
    local line w got=0
    local -A r
    while IFS= read -r line; do
        [[ $line == 'many: '* ]] || continue
        r=()
        for w in ${line#many: }; do r[${w%%=*}]=${w#*=}; done
        [[ ${r[bad]:-} == 0 ]] || job_failure "job $JOB_DIR: ${r[bad]:-no count of} wrong results in ${r[op]:-?} ${r[size]:-?}"
        note "${r[p50_us]}" "p$p-y$y-${r[op]}-${r[size]}-p50"
        note "${r[p99_us]}" "p$p-y$y-${r[op]}-${r[size]}-p99"
        got=$(( got + 1 ))
    done <"$JOB_OUT"
    (( got == ${#OPS[@]} )) || job_failure "job $JOB_DIR printed $got result lines, want ${#OPS[@]}"
}

info "$TOTAL_RUNS jobs, ${#OPS[@]} operations each, $SECS s measured each, timeout $TIMEOUT s"
for run in "${RUNS[@]}"; do
    IFS='|' read -r rep tl p y <<<"$run"
    JOB_HOSTS='' JOB_YIELD=$y
    mpi_job_run "p$p-y$y-$tl-r$rep" "$tl" "$p" "$MANY_BIN" "${MANY_ARGS[@]}"
    take_results
    DONE_RUNS=$(( DONE_RUNS + 1 ))
    line="[$DONE_RUNS/$TOTAL_RUNS] $tl, $NHOSTS x $p ranks, yield $y, rep $rep:"
    line+=" alltoall ${A2A_SIZES[0]} B p50 $(awk '{ print $NF }' <<<"${VALUES[$tl/p$p-y$y-alltoall-${A2A_SIZES[0]}-p50]:-?}") us"
    (( DISTURBED == 0 )) || line+=" DISTURBED (foreign CPU $FOREIGN_CPU s)"
    info "$line"
done
agents_stop
ELAPSED=$(seconds_between "$T_START" "$EPOCHREALTIME" %.0f)

# ---------------------------------------------------------------- report --

# many_data: the medians, one line per polling, operation, size, P.
many_data() {
    local y o op s p
    printf '# srm_many time per operation (us), medians of %d run(s); %d hosts\n' "$REPS" "$NHOSTS"
    printf '# columns: mpi_yield_when_idle, operation, size (B), ranks per host, srm p50, tcp p50, srm p99, tcp p99\n'
    for y in "${YIELDS[@]}"; do
        for o in "${OPS[@]}"; do
            read -r op s <<<"$o"
            for p in "${RANKS_PER_HOST[@]}"; do
                printf '%s %s %s %s %s %s %s %s\n' "$y" "$op" "$s" "$p" \
                    "$(median_of "srm/p$p-y$y-$op-$s-p50")" "$(median_of "tcp/p$p-y$y-$op-$s-p50")" \
                    "$(median_of "srm/p$p-y$y-$op-$s-p99")" "$(median_of "tcp/p$p-y$y-$op-$s-p99")"
            done
        done
    done
}

# target LABEL OP SIZE P LIMIT: issue 31's target line, if measured.
target_line() {
    local r
    [[ -n ${VALUES[srm/p$4-y1-$2-$3-p50]:-} ]] || return 0
    r=$(ratio "$(median_of "srm/p$4-y1-$2-$3-p50")" "$(median_of "tcp/p$4-y1-$2-$3-p50")")
    printf -- '- **Target** (issue 31, yielding ranks: %s, %d x %d ranks, srm/tcp <= %s): %sx, ' "$1" "$NHOSTS" "$4" "$5" "$r"
    if awk -v r="$r" -v w="$5" 'BEGIN { exit !(r != "inf" && r + 0 <= w) }'; then printf '**met**\n'; else printf '**not met**\n'; fi
}

report() {
    local y how o op s p
    printf '# Many-to-many among many ranks: srm vs UCX tcp (Open MPI, %d simulated hosts)\n\n' "$NHOSTS"
    printf -- '- machine: %s, nproc %d (%s), kernel %s; date %s\n' "$(uname -n)" "$NCPU" "$(cpu_model)" "$(uname -r)" "$START_DATE"
    printf -- '- UCX %s; %s; %s\n' "$(ucx_version)" "$(srmd_version)" "$(mpirun --version 2>/dev/null | awk 'NR == 1')"
    printf -- '- hosts %s (netns-cluster --prefix %s), one srmd each on @%s; srm: UCX_TLS=srm; tcp: UCX_TLS=tcp UCX_NET_DEVICES=eth0\n' \
        "$(IFS=,; echo "${SRM_HOSTS[*]}")" "$PFX" "$SRM_SOCKET"
    tcp_cc_line "$TCP_CC"
    printf -- '- srm_many %s: the time of an operation is the slowest rank'"'"'s; 5 warm-up runs, then %s s (at least 5 runs); every result checked%s\n' \
        "$(quote "${MANY_ARGS[@]}")" "$SECS" "$([[ $QUICK == 1 ]] && printf '; **--quick smoke run, not a measurement**')"
    print_inherited_ucx
    print_disturbance jobs
    if (( REPS > 1 )); then printf '\nCells: median [min, max] of %d runs.' "$REPS"; else printf '\nCells: one run each.'; fi
    printf ' Time per operation in us; srm/tcp < 1: srm is faster. alltoall, exchange and put: bytes per peer; allreduce: bytes of the vector.\n'
    for y in "${YIELDS[@]}"; do
        if (( y == 0 )); then how="busy-polling ranks"; else how="yielding ranks (mpi_yield_when_idle 1)"; fi
        printf '\n## %s\n\n' "$how"
        table_head measurement srm tcp srm/tcp
        for o in "${OPS[@]}"; do
            read -r op s <<<"$o"
            for p in "${RANKS_PER_HOST[@]}"; do
                table_row "$op $(size_label "$s"), $NHOSTS x $p, p50" lat "p$p-y$y-$op-$s-p50"
                table_row "$op $(size_label "$s"), $NHOSTS x $p, p99" lat "p$p-y$y-$op-$s-p99"
            done
        done
    done
    printf '\n'
    target_line 'alltoall 8 B' alltoall 8 4 1.0
    target_line 'alltoall 8 B' alltoall 8 8 0.5
    target_line 'alltoall 8 B' alltoall 8 16 0.5
    target_line 'allreduce 8 B' allreduce 8 16 1.0
    printf '\nData: %s.dat (medians), in %s. %d jobs, %s s in all.\n' "$PLOT_STEM" "$PLOT_DIR" "$TOTAL_RUNS" "$ELAPSED"
}

commands() {
    printf '\n## Commands\n\n```sh\n'
    cat "$CMDS"
    printf '```\n'
}
report_and_commands() { cat "$REPORT"; commands; }

out_stem many
write_out "$PLOT_DIR/$PLOT_STEM.dat" many_data
[[ -n $OUT ]] || KEEP_LOGS=1     # the data is in $WORK

REPORT=$WORK/report.md
report >"$REPORT"
[[ -z $OUT ]] || write_out "$OUT" report_and_commands
cat "$REPORT"
[[ -z $OUT ]] || printf '\n(report and command lines written to %s)\n' "$OUT"
FAILED=0
