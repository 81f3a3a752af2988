#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# eval.sh - the evaluation in one command: experiments 1-8 (hosts.sh,
# mesh.sh, resources.sh, flows.sh, model.sh, halo.sh, many.sh) for srm and the
# comparison transports, each into one results folder, then bench-report.md
# there: the machine, the software, the exact commands, every experiment's
# tables and plots, and the targets evaluated from the numbers.
set -euo pipefail

PROG=${0##*/}
export LC_ALL=C
INFO_CLOCK=1
BENCH=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$BENCH/lib.sh"
SRCDIR=$(cd "$BENCH/../.." && pwd)
ARGV=("$@")

usage() {
    cat <<USAGE
NAME
    $PROG - run every experiment of the evaluation and write bench-report.md

SYNOPSIS
    $PROG [--build DIR] [--quick | --smoke] [--reps N] [--out DIR]
            [--only LIST] [--tcp-cc NAME] [--keep-logs]
    $PROG -h | --help

DESCRIPTION
    Runs, in this order, each script with its own --out FILE in the
    results folder DIR (FILE and its plots, data and command lines next to
    each other):

      1  hosts.sh      ucx_perftest between two simulated hosts: latency
                       and bandwidth vs size, 8 B message rate vs P
                       (srm vs UCX tcp)                      -> hosts.md
      2  mesh.sh       one-to-many throughput and             -> mesh.md
      3                full-mesh rate and p50/p99/p99.9 (Open MPI)
      4  resources.sh  connections and memory per host vs P  -> resources.md
                       (and the cost file resources-costs.txt)
      5  flows.sh      flow completion times: srm with and without its
                       bulk channel, UCX tcp                  -> flows.md
      6  model.sh      scaling model from the costs of 4      -> model.md
      7  halo.sh       a 3-D stencil's halo exchange, 2 and 3 hosts,
                       busy-polling and yielding ranks (srm vs
                       UCX tcp)                               -> halo.md
      8  many.sh       alltoall, allreduce and an 8 B exchange
                       among all ranks vs ranks per host      -> many.md

    Every experiment script brings up its own simulated hosts
    (contrib/netns-cluster) and agents and takes them down again, whatever
    happens; this script sets up nothing itself.  If an experiment fails
    (a run errs, data errors, a hang past its timeout) the evaluation
    stops at once, shows the end of that experiment's log and exits 1:
    bench-report.md is written only when every selected experiment
    succeeded.  Interrupted (INT, TERM), it sends TERM to the experiment
    it started (by PID), which cleans up its namespaces and processes, and
    waits for it.  While an experiment runs, every SRM_EVAL_PROGRESS
    seconds (default 60) a line says how far it got: its latest
    "[run/runs]" line, and how long it has run.

    bench-report.md holds the command, the date, the machine (host name,
    nproc, CPU model, kernel, memory), UCX, Open MPI and srm versions and
    the source commit; a Targets table, evaluated from the numbers of the
    experiments' data files:

      T1  full-mesh p99 latency: srm at least 5x lower than tcp at the
          largest P measured (mesh-lat.dat)
      T2  aggregate 8 B message rate at P >= 4: srm at least 1.5x tcp at
          every such P (hosts-mr.dat)
      T3  short-flow p99 FCT with the bulk channel at least 2x better
          than without, at every load (flows-p99.dat)
      T4  connections per host: srm constant in P (4(N-1)), tcp growing
          as P^2 (N-1), within 10 % at every P (resources-conn.dat)
      T5  halo exchange with 16 KB faces and yielding ranks: srm's time
          per iteration at most 1.1x tcp's, at every number of hosts
          (halo.dat)
      T6  alltoall 8 B with yielding ranks: srm at most tcp's time at 4
          ranks per host, at most half of it at 8 and more (many.dat)

    each met, not met (with the numbers that say why), or not evaluated
    (the experiment did not run, or measured no P that applies); then
    every experiment's report (its tables and plots; its exact command
    lines stay in its own file, linked).

OPTIONS
    --build DIR   the srm build directory (default \$SRM_BUILD_DIR, else
                  <repo>/build)
    --quick       every script's --quick (a few minutes in all; not a
                  measurement)
    --smoke       the smallest run that still goes through every
                  experiment's code path: 2 hosts, 1 process per host,
                  one size (two in hosts.sh: 8 B, and 64 KB for the
                  bulk channel), one load, short runs, one experiment
                  after the other as always (make check runs this)
    --reps N      repetitions of experiments 1-5, 7 and 8 (their default: 3; 1 with
                  --quick and --smoke)
    --out DIR     results folder, made if missing, must be empty if it
                  exists (default ./bench-results-YYYYmmdd-HHMMSS)
    --only LIST   run only these experiments: numbers 1-8 or names hosts,
                  mesh, resources, flows, model, halo, many, commas (2 and 3 are one
                  script); model.sh uses the costs of 4 when 4 ran, else
                  its defaults
    --tcp-cc NAME TCP congestion control of the simulated hosts of
                  experiments 1-3, 7 and 8 (the scripts' --tcp-cc;
                  resources.sh and flows.sh keep the kernel's); default
                  reno, as the main job: a pacing one, this kernel's
                  bbr, makes the veths reorder packets and holds UCX's
                  tcp back; "default" leaves the kernel's
    --keep-logs   keep the experiments' log directories (each script's
                  --keep-logs)
    -h, --help    this text

FILES
    DIR/bench-report.md          the report
    DIR/NAME.md, DIR/NAME-*      each experiment's report (with its
                                 command lines), plots, data, scripts
    DIR/logs/NAME.log            each experiment's output
    DIR/commands.sh              the command line of every experiment

EXIT STATUS
    0 every selected experiment succeeded and the report was written
    (whether or not the targets were met: the report says); 1 an
    experiment failed or the environment is unusable; 2 bad usage;
    130/143 interrupted.

REQUIREMENTS
    Those of the scripts: root, ip, nsenter, ss, timeout, ucx_perftest,
    ucx_info, mpicc, mpirun (Open MPI 4.1), an srm build with
    srm_flowgen; gnuplot for the plots.

EXAMPLES
    contrib/bench/eval.sh                      # the full evaluation
    contrib/bench/eval.sh --quick --out /tmp/eval-quick
    contrib/bench/eval.sh --smoke --build /tmp/build
    contrib/bench/eval.sh --only 4,6 --reps 5
USAGE
}

# -------------------------------------------------------------- options --

BUILD=${SRM_BUILD_DIR:-}
MODE=full REPS='' OUTDIR='' ONLY='' KEEP_LOGS=0 TCP_CC=reno
while [[ $# -gt 0 ]]; do
    case $1 in
    --build)     need_arg "$@"; BUILD=$2; shift 2 ;;
    --build=*)   BUILD=${1#*=}; shift ;;
    --quick)     [[ $MODE != smoke ]] || bad "--quick and --smoke exclude each other"; MODE=quick; shift ;;
    --smoke)     [[ $MODE != quick ]] || bad "--quick and --smoke exclude each other"; MODE=smoke; shift ;;
    --reps)      need_arg "$@"; REPS=$2; shift 2 ;;
    --reps=*)    REPS=${1#*=}; shift ;;
    --out)       need_arg "$@"; OUTDIR=$2; shift 2 ;;
    --out=*)     OUTDIR=${1#*=}; shift ;;
    --only)      need_arg "$@"; ONLY=$2; shift 2 ;;
    --only=*)    ONLY=${1#*=}; shift ;;
    --tcp-cc)    need_arg "$@"; TCP_CC=$2; shift 2 ;;
    --tcp-cc=*)  TCP_CC=${1#*=}; shift ;;
    --keep-logs) KEEP_LOGS=1; shift ;;
    -h|--help)   usage; exit 0 ;;
    *)           bad "unknown argument: $1" ;;
    esac
done
[[ -z $REPS ]] || check_reps

NAMES=(hosts mesh resources flows model halo many)
declare -A NUM_OF=([hosts]=1 [mesh]='2 and 3' [resources]=4 [flows]=5 [model]=6 [halo]=7 [many]=8)
declare -A SELECTED=()
if [[ -z $ONLY ]]; then
    for n in "${NAMES[@]}"; do SELECTED[$n]=1; done
else
    IFS=$', \t' read -r -a words <<<"$ONLY"
    for w in "${words[@]}"; do
        case $w in
        '')             ;;
        1|hosts)        SELECTED[hosts]=1 ;;
        2|3|mesh)       SELECTED[mesh]=1 ;;
        4|resources)    SELECTED[resources]=1 ;;
        5|flows)        SELECTED[flows]=1 ;;
        6|model)        SELECTED[model]=1 ;;
        7|halo)         SELECTED[halo]=1 ;;
        8|many)         SELECTED[many]=1 ;;
        *)              bad "--only: '$w' is not 1-8, hosts, mesh, resources, flows, model, halo or many" ;;
        esac
    done
    (( ${#SELECTED[@]} > 0 )) || bad "--only: empty list"
fi

START_DATE=$(date -u '+%Y-%m-%d %H:%M:%S UTC')
[[ -n $OUTDIR ]] || OUTDIR=./bench-results-$(date '+%Y%m%d-%H%M%S')
if [[ -e $OUTDIR ]]; then
    [[ -d $OUTDIR ]] || bad "--out: '$OUTDIR' exists and is not a directory"
    [[ -z $(ls -A -- "$OUTDIR") ]] || bad "--out: '$OUTDIR' is not empty (results of different runs must not mix)"
else
    mkdir -p -- "$OUTDIR" || die "cannot make the results folder '$OUTDIR'"
fi
OUTDIR=$(cd "$OUTDIR" && pwd)
mkdir -p "$OUTDIR/logs"
[[ -n $BUILD ]] || BUILD=$SRCDIR/build
[[ -d $BUILD ]] || die "build directory '$BUILD' does not exist (use --build DIR or set SRM_BUILD_DIR)"
BUILD=$(cd "$BUILD" && pwd)

# ------------------------------------------------------ the experiments --

# args_of NAME: sets ARGS, the options of NAME's script for MODE.
args_of() {
    local common=(--build "$BUILD")
    [[ -z $REPS ]] || common+=(--reps "$REPS")
    (( KEEP_LOGS == 0 )) || common+=(--keep-logs)
    case $MODE/$1 in
    */model)         ARGS=(--out "$OUTDIR/model.md")
                     [[ ! -s $OUTDIR/resources-costs.txt ]] || ARGS+=(--costs "$OUTDIR/resources-costs.txt")
                     return 0 ;;
    full/*)          ARGS=("${common[@]}") ;;
    quick/*)         ARGS=("${common[@]}" --quick) ;;
    smoke/hosts)     ARGS=("${common[@]}" --quick --sizes 8,64K --procs 1 --iters 50 --timeout 60) ;;
    smoke/mesh)      ARGS=("${common[@]}" --quick --hosts 2 --procs 1 --o2m-procs 1 --sizes 8
                           --seconds 0.1 --pingpong-yield 1 --timeout 60) ;;
    smoke/resources) ARGS=("${common[@]}" --quick --hosts 2 --procs 1 --hold 30 --timeout 60) ;;
    smoke/flows)     ARGS=("${common[@]}" --quick --hosts 2 --ppn 1 --loads 0.3 --duration 0.2
                           --timeout 60) ;;
    smoke/halo)      ARGS=("${common[@]}" --quick --hosts 2 --ppn 1 --yield 1 --seconds 0.2
                           --timeout 60) ;;
    smoke/many)      ARGS=("${common[@]}" --quick --hosts 2 --procs 1 --yield 1 --seconds 0.1
                           --timeout 60) ;;
    esac
    if [[ $TCP_CC != default && ( $1 == hosts || $1 == mesh || $1 == halo || $1 == many ) ]]; then
        ARGS+=(--tcp-cc "$TCP_CC")
    fi
    ARGS+=(--out "$OUTDIR/$1.md")
}

declare -A CHILD=()      # experiment name -> PID of its running script
cleanup() {
    local rc=$? i name alive
    trap - EXIT INT TERM
    trap '' INT TERM
    for name in "${!CHILD[@]}"; do
        kill -0 "${CHILD[$name]}" 2>/dev/null || continue
        info "stopping $name.sh (pid ${CHILD[$name]}); it takes its hosts down"
        kill -TERM "${CHILD[$name]}" 2>/dev/null || true
    done
    # Their traps kill their processes and tear their clusters down: give
    # them time for that before forcing them.
    for (( i = 0; i < 1200; i++ )); do
        alive=0
        for name in "${!CHILD[@]}"; do kill -0 "${CHILD[$name]}" 2>/dev/null && alive=1; done
        (( alive )) || break
        srm_nap 0.1
    done
    for name in "${!CHILD[@]}"; do
        if kill -0 "${CHILD[$name]}" 2>/dev/null; then
            info "WARNING: $name.sh (pid ${CHILD[$name]}) did not end in 120 s; killing it (its hosts may stay up)"
            kill -KILL "${CHILD[$name]}" 2>/dev/null || true
        fi
        wait "${CHILD[$name]}" 2>/dev/null || true
    done
    exit "$rc"
}
set_traps

: >"$OUTDIR/commands.sh"
declare -A SECS_OF=() CMD_OF=() T0_OF=()

# start NAME: start NAME's script in the background (CHILD[NAME]).
start() {
    local name=$1 cmd
    args_of "$name"
    cmd=("$BENCH/$name.sh" "${ARGS[@]}")
    CMD_OF[$name]=$(quote "${cmd[@]}")
    printf '# experiment %s (%s)\n%s\n\n' "${NUM_OF[$name]}" "$name" "${CMD_OF[$name]}" >>"$OUTDIR/commands.sh"
    info "experiment ${NUM_OF[$name]} ($name.sh) started (log $OUTDIR/logs/$name.log)"
    T0_OF[$name]=$SECONDS
    "${cmd[@]}" >"$OUTDIR/logs/$name.log" 2>&1 </dev/null &
    CHILD[$name]=$!
}

# finish NAME RC: NAME's script ended with RC: die (the traps stop the
# others) unless it succeeded and wrote its report.
finish() {
    local name=$1 rc=$2 log=$OUTDIR/logs/$1.log
    unset "CHILD[$name]"
    SECS_OF[$name]=$(( SECONDS - T0_OF[$name] ))
    if (( rc != 0 )); then
        {
            printf '\n--- %s: the last 40 lines of %s ---\n' "$name.sh" "$log"
            tail -n 40 "$log" || true
            printf -- '--- command: %s\n' "${CMD_OF[$name]}"
        } >&2
        die "experiment ${NUM_OF[$name]} ($name.sh) failed (exit $rc) after ${SECS_OF[$name]} s; no report written"
    fi
    [[ -s $OUTDIR/$name.md ]] || die "experiment ${NUM_OF[$name]} ($name.sh) exited 0 but wrote no $OUTDIR/$name.md"
    info "experiment ${NUM_OF[$name]} ($name.sh) done in ${SECS_OF[$name]} s"
}

# progress: for every running script, its latest "[i/N] ..." line (the
# experiments count their runs so), else its latest line, and its time.
PROGRESS_EVERY=${SRM_EVAL_PROGRESS:-60}
[[ $PROGRESS_EVERY =~ ^[1-9][0-9]*$ ]] || die "SRM_EVAL_PROGRESS must be a number of seconds, not '$PROGRESS_EVERY'"
progress() {
    local name line
    for name in "${!CHILD[@]}"; do
        line=$(grep -a -E '\[ *[0-9]+/[0-9]+\]' "$OUTDIR/logs/$name.log" 2>/dev/null |
               tail -n 1 || true)
        [[ -n $line ]] || line=$(tail -n 1 "$OUTDIR/logs/$name.log" 2>/dev/null || true)
        line=${line#*: \[*s\] }   # its own clock; ours says how long
        info "experiment ${NUM_OF[$name]} ($name.sh), $(( SECONDS - T0_OF[$name] )) s: ${line:-(nothing logged yet)}"
    done
}

# wait_all [NAME]: wait for every started script (or until NAME's has
# ended), finishing each as it ends; progress every PROGRESS_EVERY s.
wait_all() {
    local pid rc name
    while (( ${#CHILD[@]} > 0 )) && [[ -z ${1:-} || -n ${CHILD[${1:-}]:-} ]]; do
        pid='' rc=0
        SRM_WAIT_FIRST_UNTIL=$(( SECONDS + PROGRESS_EVERY )) \
            srm_wait_first pid "${CHILD[@]}" || rc=$?
        if [[ -z $pid ]]; then
            progress
            continue
        fi
        for name in "${!CHILD[@]}"; do
            [[ ${CHILD[$name]} != "$pid" ]] || finish "$name" "$rc"
        done
    done
}

T_START=$SECONDS
# One after the other, --smoke too: the experiments busy-poll, and two of
# them side by side on a 2-core machine starve each other's runs.
for name in "${NAMES[@]}"; do
    [[ -n ${SELECTED[$name]:-} ]] || continue
    start "$name"
    wait_all
done
ELAPSED=$(( SECONDS - T_START ))

# -------------------------------------------------------------- targets --

# dat_rows FILE: the data lines of a .dat file (no comments, no blanks).
dat_rows() { awk '!/^#/ && NF > 0' "$1"; }

# ratio A B (lib.sh): A / B with 2 decimals, "inf" when B is 0.
# at_least X MIN: X >= MIN (numbers; "inf" counts as large).
at_least() { awk -v x="$1" -v m="$2" 'BEGIN { exit !(x == "inf" || x + 0 >= m) }'; }

# mesh_hosts: the number of hosts mesh.sh used (its title).
title_hosts() { awk 'NR == 1 { if (match($0, /[0-9]+ simulated hosts/)) print substr($0, RSTART, RLENGTH - 16) + 0 }' "$1"; }

# T_ROWS: the Targets table rows; T_WHY: the explanations of the misses.
T_ROWS=() T_WHY=()
target() { T_ROWS+=("| $1 | $2 | $3 | $4 | $5 |"); }
# why TARGET TEXT [REPORT]: the explanation of a miss; says so when
# REPORT (an experiment's) found the machine busy during its runs.
why() {
    local text=$2 busy
    if [[ -n ${3:-} && -s $3 ]]; then
        busy=$(grep -o 'other processes took [0-9.]* s of CPU in [0-9]* of [0-9]* [a-z]*' "$3" | head -n 1 || true)
        [[ -z $busy ]] || text+=" Besides, the machine was not idle: $busy (see its report)."
    fi
    T_WHY+=("- **$1 not met:** $text")
}

HOST_LAT8=''
if [[ -s $OUTDIR/hosts-lat.dat ]]; then
    HOST_LAT8=$(dat_rows "$OUTDIR/hosts-lat.dat" | awk 'NR == 1 { printf "%s B: srm %.1f us, tcp %.1f us", $1, $2, $3 }')
fi
NCPU=$(nproc)

# T1: full-mesh p99, srm at least 5x lower than tcp at the largest P.
T1='full-mesh 8 B p99 latency: srm >= 5x lower than tcp at the largest P (exp. 3)'
if [[ -s $OUTDIR/mesh-lat.dat ]]; then
    read -r P S99 T99 < <(dat_rows "$OUTDIR/mesh-lat.dat" | awk 'END { print $1, $3, $6 }')
    NH=$(title_hosts "$OUTDIR/mesh.md")
    R=$(ratio "$T99" "$S99")
    if at_least "$R" 5; then
        target "T1" "$T1" "P=$P ($NH hosts): srm p99 $(fmt lat "$S99") us, tcp $(fmt lat "$T99") us" "tcp/srm ${R}x" "met"
    else
        target "T1" "$T1" "P=$P ($NH hosts): srm p99 $(fmt lat "$S99") us, tcp $(fmt lat "$T99") us" "tcp/srm ${R}x" "**not met**"
        why T1 "at the largest P measured, P = $P ranks per host x $NH hosts = $(( P * NH )) ranks and $NH agents share $NCPU cores; srm's p99 is $(fmt lat "$S99") us, tcp's $(fmt lat "$T99") us (${R}x, target 5x). Every srm message crosses two rings and two agents that must be scheduled on those cores (experiment 1, one hop at ${HOST_LAT8:-(not run)}). The paper's gap comes from RC's queue pairs overflowing the NIC's QP cache at 420 processes; simulated hosts on one kernel have no NIC and no per-connection cache to overflow, and $(( P * NH )) ranks are far from 420, so the effect srm removes is not there to remove." "$OUTDIR/mesh.md"
    fi
else
    target "T1" "$T1" "-" "-" "not evaluated (experiment 3 not run)"
fi

# T2: aggregate small-message rate at P >= 4: srm at least 1.5x tcp.
T2='aggregate 8 B message rate at P >= 4: srm >= 1.5x tcp (exp. 1)'
if [[ -s $OUTDIR/hosts-mr.dat ]]; then
    MR_ROWS=$(dat_rows "$OUTDIR/hosts-mr.dat" | awk '$1 >= 4')
    if [[ -z $MR_ROWS ]]; then
        target "T2" "$T2" "P = $(dat_rows "$OUTDIR/hosts-mr.dat" | awk '{ printf "%s%s", s, $1; s = "," }') only" "-" "not evaluated (no P >= 4 measured)"
    else
        read -r MINR MINP < <(awk '{ r = ($3 > 0) ? $2 / $3 : 1e9; if (NR == 1 || r < m) { m = r; p = $1 } }
                                  END { printf "%.2f %s\n", m, p }' <<<"$MR_ROWS")
        MEAS=$(awk 'function rate(v) { return v >= 1e6 ? sprintf("%.2fM", v / 1e6) : (v >= 1e3 ? sprintf("%.1fk", v / 1e3) : sprintf("%.0f", v)) }
                    { printf "%sP=%s: srm %s, tcp %s", s, $1, rate($2), rate($3); s = "; " }' <<<"$MR_ROWS")
        if at_least "$MINR" 1.5; then
            target "T2" "$T2" "$MEAS msg/s" "srm/tcp >= ${MINR}x" "met"
        else
            target "T2" "$T2" "$MEAS msg/s" "srm/tcp ${MINR}x at P=$MINP" "**not met**"
            P1=$(dat_rows "$OUTDIR/hosts-mr.dat" | awk 'NR == 1 { printf "P=%s: srm %.0f, tcp %.0f msg/s", $1, $2, $3 }')
            why T2 "the lowest srm/tcp ratio at P >= 4 is ${MINR}x (P=$MINP; target 1.5x); at $P1. ucx_perftest busy-polls: with P pairs 2P ranks poll on $NCPU cores, and srm's two agents, which carry every message, get CPU only when the scheduler preempts a poller, so srm's aggregate rate stops growing once the cores are full. The paper's gain is from the agent coalescing many processes' small messages into one RNIC operation on a core of its own; here the agent competes with the ranks it serves." "$OUTDIR/hosts.md"
        fi
    fi
else
    target "T2" "$T2" "-" "-" "not evaluated (experiment 1 not run)"
fi

# T3: short-flow p99 with the bulk channel at least 2x better.
T3='short-flow p99 FCT with the bulk channel >= 2x better than without (exp. 5)'
if [[ -s $OUTDIR/flows-p99.dat ]]; then
    FL_ROWS=$(dat_rows "$OUTDIR/flows-p99.dat")
    read -r MINR MINL < <(awk '{ r = ($2 > 0) ? $5 / $2 : 0; if (NR == 1 || r < m) { m = r; l = $1 } }
                              END { printf "%.2f %s\n", m, l }' <<<"$FL_ROWS")
    MEAS=$(awk '{ printf "%sload %s: %.1f ms with, %.1f ms without", s, $1, $2 / 1e3, $5 / 1e3; s = "; " }' <<<"$FL_ROWS")
    if at_least "$MINR" 2; then
        target "T3" "$T3" "$MEAS" "without/with >= ${MINR}x" "met"
    else
        target "T3" "$T3" "$MEAS" "without/with ${MINR}x at load $MINL" "**not met**"
        why T3 "the short-flow p99 without the bulk channel is only ${MINR}x that with it at load $MINL (target 2x). The simulated hosts' veths have no line rate (flows.sh's link rate only sets the arrival rate), so a long flow on the shared small channel is moved at memory speed and holds a short one back for little time; the head-of-line blocking the bulk channel removes is small next to the scheduling delays of $NCPU shared cores, which both configurations have." "$OUTDIR/flows.md"
    fi
else
    target "T3" "$T3" "-" "-" "not evaluated (experiment 5 not run)"
fi

# T4: connections per host: srm constant in P, tcp growing as P^2.
T4='connections per host: srm constant in P, tcp growing as P^2 (N-1) (exp. 4)'
if [[ -s $OUTDIR/resources-conn.dat ]]; then
    CN_ROWS=$(dat_rows "$OUTDIR/resources-conn.dat")
    NP=$(wc -l <<<"$CN_ROWS")
    MEAS=$(awk '{ printf "%sP=%s: srm %g, tcp %g (P^2(N-1) = %g)", s, $1, $2, $3, $5; s = "; " }' <<<"$CN_ROWS")
    # srm: every P the same count, 4(N-1); tcp: within 10 % of P^2(N-1)
    # at every P, and the least-squares exponent of tcp over P.
    read -r SRM_OK TCP_OK EXP SRM_WANT < <(awk '{ if ($2 != $4) s = 1; if ($3 < 0.9 * $5 || $3 > 1.1 * $5) t = 1
                                                  if ($1 > 0 && $3 > 0) { n++; x = log($1); y = log($3); sx += x; sy += y; sxx += x * x; sxy += x * y }
                                                  w = $4 }
                                            END { d = n * sxx - sx * sx
                                                  printf "%d %d %s %s\n", !s, !t, (n >= 2 && d > 0) ? sprintf("%.2f", (n * sxy - sx * sy) / d) : "-", w }' <<<"$CN_ROWS")
    RATIO="tcp exponent $EXP"
    LAST=$(awk 'END { printf "%s", ($2 > 0) ? sprintf("%.1f", $3 / $2) : "inf" }' <<<"$CN_ROWS")
    RATIO+=", tcp/srm ${LAST}x at the largest P"
    if (( NP < 2 )); then
        target "T4" "$T4" "$MEAS" "$RATIO" "not evaluated (one P only: growth in P not measurable)"
    elif (( SRM_OK && TCP_OK )); then
        target "T4" "$T4" "$MEAS" "$RATIO" "met"
    else
        target "T4" "$T4" "$MEAS" "$RATIO" "**not met**"
        WHY=''
        (( SRM_OK )) || WHY+="srm's count is not 4(N-1) = $SRM_WANT at every P (a node channel connection missing or extra: see resources.md and the agents' logs); "
        (( TCP_OK )) || WHY+="tcp's count is not within 10 % of P^2(N-1) at every P (exponent $EXP; UCX tcp makes one connection per pair of ranks, so a shortfall means not every pair talked before the sample); "
        why T4 "${WHY%; }."
    fi
else
    target "T4" "$T4" "-" "-" "not evaluated (experiment 4 not run)"
fi

# T5: the halo exchange, 16 KB faces, yielding ranks: srm <= 1.1x tcp.
T5='halo exchange, 16 KB faces, yielding ranks: srm time per iteration <= 1.1x tcp (exp. 7)'
if [[ -s $OUTDIR/halo.dat ]]; then
    HX_ROWS=$(dat_rows "$OUTDIR/halo.dat" | awk '$2 == 1 && $3 == 16384')
    if [[ -z $HX_ROWS ]]; then
        target "T5" "$T5" "-" "-" "not evaluated (no 16 KB faces with yielding ranks measured)"
    else
        read -r MAXR MAXH < <(awk '{ r = ($5 > 0) ? $4 / $5 : 1e9; if (NR == 1 || r > m) { m = r; h = $1 } }
                                  END { printf "%.2f %s\n", m, h }' <<<"$HX_ROWS")
        MEAS=$(awk '{ printf "%s%s hosts: srm %.0f us, tcp %.0f us", s, $1, $4, $5; s = "; " }' <<<"$HX_ROWS")
        if awk -v r="$MAXR" 'BEGIN { exit !(r + 0 <= 1.1) }'; then
            target "T5" "$T5" "$MEAS" "srm/tcp <= ${MAXR}x" "met"
        else
            target "T5" "$T5" "$MEAS" "srm/tcp ${MAXR}x ($MAXH hosts)" "**not met**"
            why T5 "srm's halo step takes ${MAXR}x tcp's with yielding ranks ($MAXH hosts; target 1.1x). Faces of 16 KB are over UCX_SRM_LARGE_THRESH, so they take the bulk channel, which the agents carry: a step's twelve faces cost each agent wakeups on both hosts, while tcp's yielding ranks write and read their own sockets. With busy-polling ranks the order is the other way round (see halo.md)." "$OUTDIR/halo.md"
        fi
    fi
else
    target "T5" "$T5" "-" "-" "not evaluated (experiment 7 not run)"
fi

# T6: alltoall 8 B, yielding ranks: srm <= tcp at P=4, <= 0.5 tcp at P >= 8.
T6='alltoall 8 B, yielding ranks: srm <= 1.0x tcp at 4 ranks per host, <= 0.5x at 8 and more (exp. 8)'
if [[ -s $OUTDIR/many.dat ]]; then
    MY_ROWS=$(dat_rows "$OUTDIR/many.dat" | awk '$1 == 1 && $2 == "alltoall" && $3 == 8 && $4 >= 4')
    if [[ -z $MY_ROWS ]]; then
        target "T6" "$T6" "-" "-" "not evaluated (no 4 or more ranks per host with yielding ranks measured)"
    else
        MEAS=$(awk '{ printf "%sP=%s: srm %.0f us, tcp %.0f us (%.2fx)", s, $4, $5, $6, ($6 > 0) ? $5 / $6 : 0; s = "; " }' <<<"$MY_ROWS")
        MISSED=$(awk '{ r = ($6 > 0) ? $5 / $6 : 1e9; w = ($4 >= 8) ? 0.5 : 1.0; if (r > w) { printf "%sP=%s", s, $4; s = ", " } }' <<<"$MY_ROWS")
        if [[ -z $MISSED ]]; then
            target "T6" "$T6" "$MEAS" "met at every P" "met"
        else
            target "T6" "$T6" "$MEAS" "missed at $MISSED" "**not met**"
            why T6 "at $MISSED srm's 8 B alltoall takes longer than the target allows. Every rank's 8 B to a rank of its own host crosses the agent (two rings, a wakeup when the ranks yield), and the frames for many receivers behind one node channel are delivered by the agent, whose wakeups every round waits for (issue 31)." "$OUTDIR/many.md"
        fi
    fi
else
    target "T6" "$T6" "-" "-" "not evaluated (experiment 8 not run)"
fi

# ---------------------------------------------------------------- report --

# body FILE NUM: FILE's report without its "## Commands" section, its
# title as "## Experiment NUM: ...", other headings one level down (not
# inside code blocks).
body() {
    awk -v num="$2" '
        /^```/ { fence = !fence }
        !fence && /^## Commands[[:space:]]*$/ { exit }
        !fence && NR == 1 && /^# / { sub(/^# /, ""); print "## Experiment" (num ~ / and / ? "s " : " ") num ": " $0; next }
        !fence && /^#+ / { print "#" $0; next }
        { print }' "$1"
}

git_rev() {
    local rev
    rev=$(git -C "$SRCDIR" rev-parse --short HEAD 2>/dev/null) || { echo "(not a git tree)"; return; }
    [[ -z $(git -C "$SRCDIR" status --porcelain --untracked-files=no 2>/dev/null) ]] || rev+=" (with uncommitted changes)"
    printf '%s' "$rev"
}

report() {
    local name row w
    printf '# ucx-srm evaluation: srm vs the comparison transports\n\n'
    # shellcheck disable=SC2016  # backquotes for markdown
    printf -- '- command: `%s` (in %s)\n' "$(quote "$0" "${ARGV[@]}")" "$PWD"
    printf -- '- date: %s; %d s in all\n' "$START_DATE" "$ELAPSED"
    printf -- '- machine: %s, nproc %s, %s, kernel %s %s, memory %s\n' "$(uname -n)" "$NCPU" "$(cpu_model)" \
        "$(uname -r)" "$(uname -m)" "$(awk '$1 == "MemTotal:" { printf "%.1f GiB", $2 / 1048576 }' /proc/meminfo)"
    printf -- '- software: UCX %s; %s; %s; srm source %s; build %s\n' \
        "$(ucx_info -v 2>/dev/null | awk '/Version/ && !v { v = $3 } END { print (v == "" ? "?" : v) }')" \
        "$(mpirun --version 2>/dev/null | awk 'NR == 1' || echo 'Open MPI ?')" \
        "$("$BUILD/srmd" --version 2>/dev/null | awk 'NR == 1' || echo 'srmd ?')" "$(git_rev)" "$BUILD"
    case $MODE in
    quick) printf -- '- **--quick: every script'"'"'s smoke settings; the numbers are not a measurement**\n' ;;
    smoke) printf -- '- **--smoke: the smallest runs that go through every code path; the numbers are not a measurement**\n' ;;
    esac
    print_inherited_ucx
    printf '\n| experiment | script | wall time | report |\n|---|---|---:|---|\n'
    for name in "${NAMES[@]}"; do
        [[ -n ${SELECTED[$name]:-} ]] || continue
        printf '| %s | %s | %s s | [%s](%s) |\n' "${NUM_OF[$name]}" "$name.sh" "${SECS_OF[$name]}" "$name.md" "$name.md"
    done

    printf '\n## Targets\n\n'
    printf 'Evaluated by %s from the experiments'"'"' data files (medians), not typed in.\n\n' "$PROG"
    printf '| # | target | measured | ratio | verdict |\n|---|---|---|---|---|\n'
    for row in "${T_ROWS[@]}"; do printf '%s\n' "$row"; done
    if (( ${#T_WHY[@]} > 0 )); then
        printf '\nWhy:\n\n'
        for w in "${T_WHY[@]}"; do printf '%s\n' "$w"; done
    fi

    for name in "${NAMES[@]}"; do
        [[ -n ${SELECTED[$name]:-} ]] || continue
        printf '\n'
        body "$OUTDIR/$name.md" "${NUM_OF[$name]}"
        # shellcheck disable=SC2016  # backquotes for markdown
        printf '\nCommand: `%s`; its exact command lines: [%s](%s) (Commands), output: logs/%s.log.\n' \
            "${CMD_OF[$name]}" "$name.md" "$name.md" "$name"
    done

    printf '\n## Commands\n\n```sh\n%s\n\n' "$(quote "$0" "${ARGV[@]}")"
    cat "$OUTDIR/commands.sh"
    printf '```\n'
}

write_out "$OUTDIR/bench-report.md" report
info "report: $OUTDIR/bench-report.md ($ELAPSED s)"
printf '%s\n' "${T_ROWS[@]}"
