#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# halo.sh - a 3-D stencil's halo exchange (contrib/bench/srm_halo.c), srm
# vs UCX tcp, across 2 and 3 simulated hosts, with busy-polling and with
# yielding ranks: time per iteration, median and p99.
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
    $PROG - the halo exchange of a 3-D 7-point stencil, srm vs UCX tcp

SYNOPSIS
    $PROG [--build DIR] [--reps N] [--out FILE] [--timeout SEC]
            [--hosts LIST] [--ppn P] [--faces LIST] [--compute-us US]
            [--seconds SEC] [--yield LIST] [--tcp-cc NAME] [--prefix NAME]
            [--keep-logs] [--quick]
    $PROG -h | --help

DESCRIPTION
    Brings up as many simulated hosts as the largest of --hosts (netns-
    cluster, --prefix, default hx<pid>), one srmd each, and runs srm_halo
    (Open MPI, through contrib/netns-mpirun) on the first N hosts for each
    N of --hosts, P ranks each: the ranks form a periodic 3-D grid; every
    iteration each computes for --compute-us, then exchanges one face of
    each size of --faces with its six neighbours (non-blocking sends and
    receives, then a wait for all twelve). An iteration's time is the
    slowest rank's; each job runs --seconds after 50 warm-up iterations.
    Every received face is checked.

    Each job runs once per transport, srm (UCX_TLS=srm) and tcp
    (UCX_TLS=tcp, eth0), and per --yield value: 0, the ranks busy-poll
    (Open MPI's default); 1, they yield the CPU while they wait
    (mpi_yield_when_idle 1), the fair comparison when there are more ranks
    than cores, as here. Repetitions are the outer loop, the transports
    alternate innermost.

    The report: per hosts, polling and face size, the median and p99 of
    the time per iteration (medians over the repetitions, [min, max]) for
    srm and tcp and srm/tcp (< 1: srm is faster); and issue 28's target,
    16 KB faces with yielding ranks srm/tcp <= 1.1.

OPTIONS
    --build DIR       srm build (default: \$SRM_BUILD_DIR, else <repo>/build)
    --reps N          repetitions (default 3; 1 with --quick)
    --out FILE        also write the report and its commands to FILE
    --timeout SEC     limit of one job (default 180)
    --hosts LIST      numbers of hosts, commas (default 2,3)
    --ppn P           ranks per host, 1..16 (default 2)
    --faces LIST      face sizes, commas, K/M suffixes (default 4K,16K,64K)
    --compute-us US   compute phase per iteration (default 100)
    --seconds SEC     measured per job (default 3; 0.5 with --quick)
    --yield LIST      mpi_yield_when_idle values, commas (default 1,0)
    --tcp-cc NAME     TCP congestion control in the hosts (default: the
                      kernel's)
    --prefix NAME     netns-cluster prefix (default hx<pid>)
    --keep-logs       keep the log directory
    --quick           smoke run: --reps 1 --seconds 0.5, faces 16K only
    -h, --help        this help

EXIT STATUS
    0 report printed; 1 a job failed (a bad face included) or the
    environment is unusable; 2 bad usage; 130/143 interrupted. The
    processes it started are killed by PID and the cluster is torn down
    whatever happens.

REQUIREMENTS
    root, ip, nsenter, timeout, mpicc and mpirun (Open MPI with pml ucx),
    ucx_info, jq, an srm build.

EXAMPLES
    $PROG --quick
    $PROG --reps 5 --out halo.md
USAGE
}

BUILD=${SRM_BUILD_DIR:-}
REPS='' ITERS=0 OUT='' PORT_BASE=0 TIMEOUT=180 KEEP_LOGS=0 QUICK=0
HOSTS_ARG=2,3 PPN=2 FACES_ARG='' COMPUTE_US=100 SECS='' YIELD_ARG=1,0
TCP_CC='' PFX=hx$$

while [[ $# -gt 0 ]]; do
    common_option "$@"
    if (( OPT_SHIFT > 0 )); then
        [[ $1 != --iters* && $1 != --port* ]] || bad "unknown argument: $1"
        shift "$OPT_SHIFT"; continue
    fi
    case $1 in
    --hosts)        need_arg "$@"; HOSTS_ARG=$2; shift 2 ;;
    --ppn)          need_arg "$@"; PPN=$2; shift 2 ;;
    --faces)        need_arg "$@"; FACES_ARG=$2; shift 2 ;;
    --compute-us)   need_arg "$@"; COMPUTE_US=$2; shift 2 ;;
    --seconds)      need_arg "$@"; SECS=$2; shift 2 ;;
    --yield)        need_arg "$@"; YIELD_ARG=$2; shift 2 ;;
    --tcp-cc)       need_arg "$@"; TCP_CC=$2; shift 2 ;;
    --prefix)       need_arg "$@"; PFX=$2; shift 2 ;;
    -h|--help)      usage; exit 0 ;;
    *)              bad "unknown argument: $1" ;;
    esac
done
if [[ $QUICK == 1 ]]; then
    : "${REPS:=1}" "${SECS:=0.5}" "${FACES_ARG:=16K}"
else
    : "${REPS:=3}" "${SECS:=3}" "${FACES_ARG:=4K,16K,64K}"
fi
check_reps
check_timeout
check_prefix
check_out
procs_list --hosts "$HOSTS_ARG" 16
HOST_COUNTS=("${PROCS[@]}")
(( HOST_COUNTS[0] >= 2 )) || bad "--hosts: at least 2 hosts a job"
is_uint "$PPN" && (( PPN >= 1 && PPN <= 16 )) || bad "--ppn must be 1..16, not '$PPN'"
is_number "$COMPUTE_US" || bad "--compute-us must be a number, not '$COMPUTE_US'"
if ! is_number "$SECS" || ! awk -v s="$SECS" 'BEGIN { exit !(s >= 0.1 && s <= 600) }'; then
    bad "--seconds must be a number from 0.1 to 600, not '$SECS'"
fi
FACES=()
IFS=$', \t\n' read -r -a words <<<"$FACES_ARG"
for w in "${words[@]}"; do
    [[ -n $w ]] || continue
    [[ $w =~ ^([0-9]{1,8})([kKmM]?)$ ]] || bad "--faces: '$w' is not a size"
    n=$(( 10#${BASH_REMATCH[1]} ))
    case ${BASH_REMATCH[2]} in k|K) n=$(( n * 1024 )) ;; m|M) n=$(( n * 1048576 )) ;; esac
    (( n >= 64 && n <= 16777216 && n % 8 == 0 )) || bad "--faces: '$w' is not a multiple of 8 B from 64 B to 16 MB"
    FACES+=("$n")
done
(( ${#FACES[@]} > 0 )) || bad "--faces: empty list"
yields_of --yield "$YIELD_ARG"

# ---------------------------------------------------------- environment --

mpi_bench_begin halo
NHOSTS=${HOST_COUNTS[-1]}

HALO_BIN=$WORK/srm_halo
build_program "$HALO_BIN" mpicc '# the program' srm_halo.c bench_stats.h

mpi_bench_hosts_up "$NHOSTS" "$TCP_CC"

# ------------------------------------------------------------------ runs --

TRANSPORTS=(srm tcp)
RUNS=()       # "rep|tl|hosts|yield|face"
for (( rep = 1; rep <= REPS; rep++ )); do
    for n in "${HOST_COUNTS[@]}"; do
        for y in "${YIELDS[@]}"; do
            for f in "${FACES[@]}"; do
                for tl in "${TRANSPORTS[@]}"; do RUNS+=("$rep|$tl|$n|$y|$f"); done
            done
        done
    done
done
TOTAL_RUNS=${#RUNS[@]}
declare -A HALO=()

info "$TOTAL_RUNS jobs, $SECS s measured each, timeout $TIMEOUT s"
for run in "${RUNS[@]}"; do
    IFS='|' read -r rep tl n y f <<<"$run"
    JOB_HOSTS=$(IFS=,; echo "${SRM_HOSTS[*]:0:$n}")
    JOB_YIELD=$y
    id="h$n-y$y-f$f"
    mpi_job_run "$id-$tl-r$rep" "$tl" "$PPN" "$HALO_BIN" -s "$f" \
        -c "$COMPUTE_US" -t "$SECS"
    result_line "$JOB_OUT" 'halo: ' HALO
    (( RESULT_LINES == 1 )) || job_failure "job $JOB_DIR printed $RESULT_LINES result lines, want 1"
    [[ ${HALO[bad_faces]:-} == 0 ]] || job_failure "job $JOB_DIR: ${HALO[bad_faces]:-no count of} bad faces"
    note "${HALO[p50_us]}" "$id-p50"
    note "${HALO[p99_us]}" "$id-p99"
    DONE_RUNS=$(( DONE_RUNS + 1 ))
    line="[$DONE_RUNS/$TOTAL_RUNS] $tl, $n hosts x $PPN, yield $y, faces $(size_label "$f"), rep $rep:"
    line+=" ${HALO[iters]} iterations, p50 ${HALO[p50_us]} us, p99 ${HALO[p99_us]} us"
    (( DISTURBED == 0 )) || line+=" DISTURBED (foreign CPU $FOREIGN_CPU s)"
    info "$line"
done
agents_stop
ELAPSED=$(seconds_between "$T_START" "$EPOCHREALTIME" %.0f)

# ---------------------------------------------------------------- report --

report() {
    local n y f how target
    printf '# Halo exchange of a 3-D stencil: srm vs UCX tcp (Open MPI)\n\n'
    printf -- '- machine: %s, nproc %d (%s), kernel %s; date %s\n' "$(uname -n)" "$NCPU" "$(cpu_model)" "$(uname -r)" "$START_DATE"
    printf -- '- UCX %s; %s; %s\n' "$(ucx_version)" "$(srmd_version)" "$(mpirun --version 2>/dev/null | awk 'NR == 1')"
    printf -- '- hosts %s (netns-cluster --prefix %s), one srmd each on @%s; srm: UCX_TLS=srm; tcp: UCX_TLS=tcp UCX_NET_DEVICES=eth0\n' \
        "$(IFS=,; echo "${SRM_HOSTS[*]}")" "$PFX" "$SRM_SOCKET"
    tcp_cc_line "$TCP_CC"
    printf -- '- srm_halo: %d ranks per host in a periodic 3-D grid; per iteration %s us of compute, then one face to and from each of 6 neighbours (MPI_Isend/MPI_Irecv, MPI_Waitall); the time of an iteration is the slowest rank'"'"'s; 50 warm-up iterations, then %s s measured; every face checked: 0 bad in every job%s\n' \
        "$PPN" "$COMPUTE_US" "$SECS" "$([[ $QUICK == 1 ]] && printf '; **--quick smoke run, not a measurement**')"
    print_inherited_ucx
    print_disturbance jobs
    if (( REPS > 1 )); then printf '\nCells: median [min, max] of %d runs.' "$REPS"; else printf '\nCells: one run each.'; fi
    printf ' Time per iteration in us; srm/tcp < 1: srm is faster.\n'
    for n in "${HOST_COUNTS[@]}"; do
        for y in "${YIELDS[@]}"; do
            if (( y == 0 )); then how="busy-polling ranks"; else how="yielding ranks (mpi_yield_when_idle 1)"; fi
            printf '\n## %d hosts x %d ranks, %s\n\n' "$n" "$PPN" "$how"
            table_head measurement srm tcp srm/tcp
            for f in "${FACES[@]}"; do
                table_row "faces $(size_label "$f"), p50" lat "h$n-y$y-f$f-p50"
                table_row "faces $(size_label "$f"), p99" lat "h$n-y$y-f$f-p99"
            done
        done
    done
    if [[ " ${YIELDS[*]} " == *" 1 "* && " ${FACES[*]} " == *" 16384 "* ]]; then
        printf '\n'
        for n in "${HOST_COUNTS[@]}"; do
            target=$(ratio "$(median_of "srm/h$n-y1-f16384-p50")" "$(median_of "tcp/h$n-y1-f16384-p50")")
            printf -- '- **Target** (issue 28: 16 KB faces, yielding ranks, srm/tcp time per iteration <= 1.1), %d hosts: %sx, ' "$n" "$target"
            if awk -v r="$target" 'BEGIN { exit !(r != "inf" && r + 0 <= 1.1) }'; then printf '**met**\n'; else printf '**not met**\n'; fi
        done
    fi
    printf '\nData: %s.dat (medians), in %s. %d jobs, %s s in all.\n' \
        "$PLOT_STEM" "$PLOT_DIR" "$TOTAL_RUNS" "$ELAPSED"
}

commands() {
    printf '\n## Commands\n\n```sh\n'
    cat "$CMDS"
    printf '```\n'
}
report_and_commands() { cat "$REPORT"; commands; }

# halo_data: one line per hosts, polling and face: the medians.
halo_data() {
    local n y f
    printf '# srm_halo time per iteration (us), medians of %d run(s)\n' "$REPS"
    printf '# columns: hosts, mpi_yield_when_idle, face (B), srm p50, tcp p50, srm p99, tcp p99\n'
    for n in "${HOST_COUNTS[@]}"; do
        for y in "${YIELDS[@]}"; do
            for f in "${FACES[@]}"; do
                printf '%s %s %s %s %s %s %s\n' "$n" "$y" "$f" \
                    "$(median_of "srm/h$n-y$y-f$f-p50")" "$(median_of "tcp/h$n-y$y-f$f-p50")" \
                    "$(median_of "srm/h$n-y$y-f$f-p99")" "$(median_of "tcp/h$n-y$y-f$f-p99")"
            done
        done
    done
}
out_stem halo
write_out "$PLOT_DIR/$PLOT_STEM.dat" halo_data
[[ -n $OUT ]] || KEEP_LOGS=1     # the data is in $WORK

REPORT=$WORK/report.md
report >"$REPORT"
[[ -z $OUT ]] || write_out "$OUT" report_and_commands
cat "$REPORT"
[[ -z $OUT ]] || printf '\n(report and command lines written to %s)\n' "$OUT"
FAILED=0
