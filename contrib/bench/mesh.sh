#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# mesh.sh - experiments 2 and 3 of issue 6: one-to-many throughput and
# full-mesh message rate and latency, srm vs UCX tcp, with Open MPI across
# simulated hosts (contrib/bench/srm_mesh.c), and issue 3's ping-pong with
# busy-polling and yielding ranks; a markdown report and gnuplot PNGs.
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
    $PROG - one-to-many and full-mesh MPI traffic, srm vs UCX tcp, across
    simulated hosts

SYNOPSIS
    $PROG [--build DIR] [--reps N] [--out FILE] [--timeout SEC]
            [--hosts N] [--procs LIST] [--o2m-procs P] [--sizes LIST]
            [--seconds SEC] [--pingpong-yield LIST] [--tcp-cc NAME]
            [--prefix NAME] [--keep-logs] [--quick]
    $PROG -h | --help

DESCRIPTION
    Brings up N simulated hosts with contrib/netns-cluster (--prefix,
    default mb<pid>: hosts mb<pid>h1..hN = 10.77.0.1..N), starts one srmd
    per host on the abstract socket srm-mesh-<pid> (each in a session of
    its own, as UCX starts it: see hosts.sh), builds
    contrib/bench/srm_mesh.c with mpicc and runs it with Open MPI (pml ucx)
    through contrib/netns-mpirun, once per transport:

      srm    UCX_TLS=srm, the module in the ranks' LD_PRELOAD,
             UCX_SRM_AGENT=never (the ranks use the agents started here):
             rank -> srmd -> node channel -> srmd -> rank, also between
             ranks of one host;
      tcp    UCX_TLS=tcp UCX_NET_DEVICES=eth0: UCX's own point-to-point
             TCP connections, also between ranks of one host.

    Experiment 2, one-to-many (the paper's DCT comparison): hosts x
    --o2m-procs ranks; rank 0 (on h1) streams messages of each size of
    --sizes round robin to the P ranks on each of the N-1 other hosts, 16
    unacknowledged messages per receiver at most, an 8 B acknowledgement
    every 8 (srm_mesh -p one-to-many).  The other ranks of h1 idle (they
    sleep).  Reported: data messages received per second, all receivers
    together, and the same in MB/s (2^20 B/s).

    Experiment 3, full mesh: hosts x P ranks for every P of --procs; every
    rank sends 8 B messages to every other rank, one at a time per pair:
    the receiver answers each with an 8 B acknowledgement, and the sender
    sends the next message when it has it (srm_mesh -p mesh -W 1 -a 1: a
    ping-pong per ordered pair, all pairs at once).  Reported: the message
    rate (data messages received per second, all ranks; the as many
    acknowledgements are not counted) and the latency percentiles p50, p99
    and p99.9 over every message of every rank: half the time from posting
    a message (MPI_Isend) to receiving its acknowledgement, i.e.
    round-trip / 2 under full-mesh load, timed by the sender with
    MPI_Wtime (log-linear histogram, at most 3 % off).

    The ping-pong (issue 3's latency with busy-polling and with yielding
    ranks): one rank on h1 and one on h2; the first sends an 8 B message,
    the second answers with an 8 B acknowledgement, and so on (srm_mesh -p
    one-to-many -s 8 -W 1 -a 1 on two hosts), once per value of
    --pingpong-yield given to Open MPI as mpi_yield_when_idle: 0, the ranks
    busy-poll; 1, they yield the CPU (sched_yield) when they have nothing
    to do, which lets the agents run.  Reported: p50 and p99 of half the
    round trip, and srm / tcp against issue 3's targets (within 2x busy,
    1.5x yielding).  Next to it, in the same run, the floor under those
    ratios on this machine: srm_hop_floor (contrib/bench/srm_hop_floor.c,
    no srm, no UCX, on loopback) times the same ping-pong over a socket
    between the two ranks, and through two agents that relay it and sleep
    in epoll_wait when idle (at once, and after spinning 20 us as srmd
    does by default), with ranks that busy-poll or yield as in the
    ping-pong; --seconds x 20000 round trips each (500 to 50000).  And the
    floor of a design srm does not have yet, where ranks write the shared
    socket themselves and the agents only receive (srm_hop_floor's
    writer modes).  Last, what waking a sleeping process costs here, on the
    waker's CPU and across CPUs (srm_wake_cost, 1000 wakeups per case).

    Every job first warms up (connections are made) for a tenth of
    --seconds (at least 0.2 s), then measures for --seconds.  Every message
    is checked by its receiver (source, length, order, a check byte and
    the payload pattern); a job fails when it reports any error or no
    message.  Each cell is the median of --reps repetitions, with
    [min, max]; repetitions are the outer loop and srm and tcp alternate.
    The last column is srm / tcp of the medians.  Busy machines disturb
    the numbers: runs during which other processes took more than 5 % of
    a core, or ran right after, are counted in the report and their cells
    marked "*".

    Plots (gnuplot, next to --out FILE as STEM-*.png, STEM = FILE without
    .md; else in the log directory, which is then kept):
      STEM-o2m.png     one-to-many MB/s vs message size
      STEM-rate.png    full-mesh message rate vs P
      STEM-lat.png     full-mesh p50, p99, p99.9 latency vs P
    with their data (STEM-*.dat) and script (STEM-plots.gp); the ping-pong
    is a table only.

    The report is printed (and written) only when every job succeeded.
    A job fails when netns-mpirun exits non-zero (any rank failed, data
    errors, or --timeout), when it prints no result line, or when an srmd
    exits; the script then prints the command line and log tails and
    exits 1.

OPTIONS
    --build DIR     srm build directory (default \$SRM_BUILD_DIR, else
                    <repo>/build)
    --reps N        repetitions (default 3; 1 with --quick)
    --out FILE      also write the report and every command line to FILE,
                    the plots next to it
    --timeout SEC   limit of each MPI job (default 180; 60 with --quick)
    --hosts N       simulated hosts, 2..16 (default 3)
    --procs LIST    ranks per host of the full mesh, 1..32 (default
                    1,2,4,8; 1,2 with --quick)
    --o2m-procs P   ranks per host of one-to-many, 1..32 (default 4; 2
                    with --quick)
    --sizes LIST    one-to-many message sizes, 8 B .. 4 MB, K/M suffixes
                    (default 8,64K)
    --seconds SEC   measured time of each job (default 5; 0.5 with
                    --quick)
    --pingpong-yield LIST
                    mpi_yield_when_idle values of the ping-pong, 0 and/or
                    1, or none (default 0,1)
    --tcp-cc NAME   TCP congestion control of every host (sysctl
                    net.ipv4.tcp_congestion_control), for srm's channels
                    and UCX's tcp alike; the report names the one in use
                    (default: the kernel's; hosts.sh --help says why it
                    matters for the tcp baseline)
    --prefix NAME   netns-cluster prefix (default mb<pid>); the script
                    refuses a cluster of that prefix that is already up
    --keep-logs     keep the log directory after a complete run
    --quick         smoke run: --reps 1, --seconds 0.5, --procs 1,2,
                    --o2m-procs 2 (12 jobs with the ping-pong's 4, about
                    35 s on an idle machine); the numbers are not
                    a measurement
    -h, --help      this text

ENVIRONMENT
    SRM_BUILD_DIR   default for --build.
    UCX_SRM_*       inherited by the agents (see "srmd --config").
    TMPDIR          where the log directory is made (default /tmp).

FILES
    \$TMPDIR/srm-mesh.XXXXXX/   cluster, srmd and per-job logs, commands.sh

EXIT STATUS
    0 report printed; 1 a job failed or the environment is unusable; 2 bad
    usage; 130/143 interrupted.  Whatever happens, the processes the
    script started are killed by PID and the cluster is torn down.

REQUIREMENTS
    root, ip, nsenter, ss, timeout, mpicc and mpirun (Open MPI 4.1 with
    pml ucx), ucx_info, an srm build; gnuplot for the plots.

EXAMPLES
    $PROG --build /tmp/build --quick
    $PROG --build /tmp/build --out mesh.md
    $PROG --hosts 4 --procs 1,4,8 --seconds 10 --reps 5
USAGE
}

BUILD=${SRM_BUILD_DIR:-}
REPS='' ITERS=0 OUT='' PORT_BASE=0 TIMEOUT='' KEEP_LOGS=0 QUICK=0
NHOSTS=3 PROCS_ARG='' O2M_PROCS='' SIZES_ARG=8,64K SECS='' PFX=mb$$ PP_YIELD_ARG=0,1
TCP_CC=

while [[ $# -gt 0 ]]; do
    common_option "$@"
    if (( OPT_SHIFT > 0 )); then
        [[ $1 != --iters* && $1 != --port* ]] || bad "unknown argument: $1"
        shift "$OPT_SHIFT"; continue
    fi
    case $1 in
    --hosts)       need_arg "$@"; NHOSTS=$2; shift 2 ;;
    --hosts=*)     NHOSTS=${1#*=}; shift ;;
    --procs)       need_arg "$@"; PROCS_ARG=$2; shift 2 ;;
    --procs=*)     PROCS_ARG=${1#*=}; shift ;;
    --o2m-procs)   need_arg "$@"; O2M_PROCS=$2; shift 2 ;;
    --o2m-procs=*) O2M_PROCS=${1#*=}; shift ;;
    --sizes)       need_arg "$@"; SIZES_ARG=$2; shift 2 ;;
    --sizes=*)     SIZES_ARG=${1#*=}; shift ;;
    --seconds)     need_arg "$@"; SECS=$2; shift 2 ;;
    --seconds=*)   SECS=${1#*=}; shift ;;
    --pingpong-yield)   need_arg "$@"; PP_YIELD_ARG=$2; shift 2 ;;
    --pingpong-yield=*) PP_YIELD_ARG=${1#*=}; shift ;;
    --tcp-cc)      need_arg "$@"; TCP_CC=$2; shift 2 ;;
    --tcp-cc=*)    TCP_CC=${1#*=}; shift ;;
    --prefix)      need_arg "$@"; PFX=$2; shift 2 ;;
    --prefix=*)    PFX=${1#*=}; shift ;;
    -h|--help)     usage; exit 0 ;;
    *)             bad "unknown argument: $1" ;;
    esac
done
if [[ $QUICK == 1 ]]; then
    : "${REPS:=1}" "${TIMEOUT:=60}" "${SECS:=0.5}" "${PROCS_ARG:=1,2}" "${O2M_PROCS:=2}"
else
    : "${REPS:=3}" "${TIMEOUT:=180}" "${SECS:=5}" "${PROCS_ARG:=1,2,4,8}" "${O2M_PROCS:=4}"
fi
check_reps
check_timeout
check_prefix
check_out
if ! is_uint "$NHOSTS" || (( NHOSTS < 2 || NHOSTS > 16 )); then
    bad "--hosts must be 2..16, not '$NHOSTS'"
fi
if ! is_uint "$O2M_PROCS" || (( O2M_PROCS < 1 || O2M_PROCS > 32 )); then
    bad "--o2m-procs must be 1..32, not '$O2M_PROCS'"
fi
if ! is_number "$SECS" || ! awk -v s="$SECS" 'BEGIN { exit !(s >= 0.1 && s <= 600) }'; then
    bad "--seconds must be a number from 0.1 to 600, not '$SECS'"
fi
procs_list --procs "$PROCS_ARG" 32
MESH_PROCS=("${PROCS[@]}")
SIZES=()
IFS=$', \t\n' read -r -a words <<<"$SIZES_ARG"
for w in "${words[@]}"; do
    [[ -n $w ]] || continue
    [[ $w =~ ^([0-9]{1,8})([kKmM]?)$ ]] || bad "--sizes: '$w' is not a size"
    n=$(( 10#${BASH_REMATCH[1]} ))
    case ${BASH_REMATCH[2]} in k|K) n=$(( n * 1024 )) ;; m|M) n=$(( n * 1048576 )) ;; esac
    (( n >= 8 && n <= 4194304 )) || bad "--sizes: '$w' is not from 8 B to 4 MB"
    SIZES+=("$n")
done
(( ${#SIZES[@]} > 0 )) || bad "--sizes: empty list"
PP_YIELDS=()
if [[ $PP_YIELD_ARG != none ]]; then
    IFS=$', \t\n' read -r -a words <<<"$PP_YIELD_ARG"
    for w in "${words[@]}"; do
        case $w in
        '')  ;;
        0|1) [[ " ${PP_YIELDS[*]} " == *" $w "* ]] || PP_YIELDS+=("$w") ;;
        *)   bad "--pingpong-yield: '$w' is not 0, 1 or none" ;;
        esac
    done
    (( ${#PP_YIELDS[@]} > 0 )) || bad "--pingpong-yield: empty list (none for no ping-pong)"
fi
mapfile -t SIZES < <(printf '%s\n' "${SIZES[@]}" | sort -n -u)

# ---------------------------------------------------------- environment --

mpi_bench_begin mesh ss sort ps

MESH_BIN=$WORK/srm_mesh
build_mesh "$MESH_BIN"

mpi_bench_hosts_up "$NHOSTS" "$TCP_CC"

# ------------------------------------------------------------------ runs --

# job id | kind | ranks per host | srm_mesh arguments | mpi_yield_when_idle
# (empty: netns-mpirun's auto) | hosts (empty: all)
JOBS=()
for s in "${SIZES[@]}"; do
    JOBS+=("o2m-$s|one-to-many|$O2M_PROCS|-p one-to-many -s $s||")
done
for p in "${MESH_PROCS[@]}"; do
    JOBS+=("mesh-$p|mesh|$p|-p mesh -s 8 -W 1 -a 1||")
done
for y in "${PP_YIELDS[@]}"; do
    JOBS+=("pp-y$y|pingpong|1|-p one-to-many -s 8 -W 1 -a 1|$y|${SRM_HOSTS[0]},${SRM_HOSTS[1]}")
done
TRANSPORTS=(srm tcp)
TOTAL_RUNS=$(( ${#JOBS[@]} * ${#TRANSPORTS[@]} * REPS ))

# Every job in order: "rep|tl|job spec".
RUNS=()
for (( rep = 1; rep <= REPS; rep++ )); do
    for spec in "${JOBS[@]}"; do
        for tl in "${TRANSPORTS[@]}"; do RUNS+=("$rep|$tl|$spec"); done
    done
done

# launch_run I: the job of RUNS[I], to its end (mpi_job_run).
launch_run() {
    local rep tl id pattern ppn args argv JOB_YIELD JOB_HOSTS
    IFS='|' read -r rep tl id pattern ppn args JOB_YIELD JOB_HOSTS <<<"${RUNS[$1]}"
    read -r -a argv <<<"$args"
    mpi_job_run "$id-$tl-r$rep" "$tl" "$ppn" "$MESH_BIN" "${argv[@]}" -t "$SECS"
}

info "$TOTAL_RUNS jobs: ${#JOBS[@]} x ${#TRANSPORTS[@]} transports x $REPS rep(s), $SECS s measured each, timeout $TIMEOUT s"
for (( i = 0; i < ${#RUNS[@]}; i++ )); do
    IFS='|' read -r rep tl id pattern _ <<<"${RUNS[$i]}"
    launch_run "$i"
    mesh_result
    case $pattern in
    one-to-many)
        note "${MESH[msg_rate]}" "$id-mr"
        note "${MESH[mb_rate]}" "$id-mb" ;;
    mesh)
        note "${MESH[msg_rate]}" "$id-mr"
        note "${MESH[lat_p50_us]}" "$id-p50"
        note "${MESH[lat_p99_us]}" "$id-p99"
        note "${MESH[lat_p999_us]}" "$id-p999" ;;
    pingpong)
        note "${MESH[lat_p50_us]}" "$id-p50"
        note "${MESH[lat_p99_us]}" "$id-p99" ;;
    esac
    DONE_RUNS=$(( DONE_RUNS + 1 ))
    line="[$DONE_RUNS/$TOTAL_RUNS] $tl $id rep $rep: ${MESH[msg_rate]} msg/s, ${MESH[mb_rate]} MB/s,"
    line+=" p50/p99/p99.9 ${MESH[lat_p50_us]}/${MESH[lat_p99_us]}/${MESH[lat_p999_us]} us"
    (( DISTURBED == 0 )) || line+=" DISTURBED (foreign CPU $FOREIGN_CPU s${FOREIGN_SEEN:+, running: $FOREIGN_SEEN})"
    info "$line"
done

# The floor under the ping-pong's ratios: the agent hop without srm, with
# agents that sleep at once when idle and with srmd's default spin first.
FLOOR_SPINS=(0 20)
declare -A FLOOR=()
if (( ${#PP_YIELDS[@]} > 0 )); then
    FLOOR_BIN=$WORK/srm_hop_floor
    build_hop_floor "$FLOOR_BIN"
    FLOOR_ITERS=$(awk -v s="$SECS" 'BEGIN { n = int(s * 20000); print (n < 500) ? 500 : (n > 50000) ? 50000 : n }')
    floor_modes=() writer_modes=()
    for y in "${PP_YIELDS[@]}"; do
        if (( y == 0 )); then floor_modes+=(--mode direct-busy --mode agents-busy) writer_modes+=(--mode writer-busy)
        else floor_modes+=(--mode direct-yield --mode agents-yield) writer_modes+=(--mode writer-yield); fi
    done
    for spin in "${FLOOR_SPINS[@]}"; do
        floor_args=(--iters "$FLOOR_ITERS" --spin-us "$spin" "${floor_modes[@]}")
        # Writers are reported with agents that sleep at once only.
        (( spin != 0 )) || floor_args+=("${writer_modes[@]}")
        record_cmd "# the floor: the agent hop without srm, agents spinning $spin us when idle" '' \
            "$FLOOR_BIN" "${floor_args[@]}"
        timeout -k 5 "$TIMEOUT" "$FLOOR_BIN" "${floor_args[@]}" >"$WORK/hop-floor-$spin.out" 2>&1 ||
            { cat "$WORK/hop-floor-$spin.out" >&2; die "srm_hop_floor failed (output above)"; }
        while read -r tag mode _ p50 _ p99 _; do
            [[ $tag == hop_floor ]] || continue
            FLOOR[$spin/$mode-p50]=$p50 FLOOR[$spin/$mode-p99]=$p99
        done <"$WORK/hop-floor-$spin.out"
    done
    measure_wake_cost
    info "floor (srm_hop_floor, $FLOOR_ITERS round trips per mode and spin) and wakeups (srm_wake_cost) measured"
fi

# srm's node channels after the runs.
declare -A CONNS=()
for h in "${SRM_HOSTS[@]}"; do
    CONNS[$h]=$(timeout -k 2 20 "$SRM_NETNS_CLUSTER" exec "$h" ss -tnpH state established 2>/dev/null |
                awk -v pid="pid=${AGENT[$h]}," 'index($0, "\"srmd\"") && index($0, pid) { n++ } END { print n + 0 }')
done
agents_stop
T_END=$EPOCHREALTIME
ELAPSED=$(seconds_between "$T_START" "$T_END" %.0f)

# ----------------------------------------------------------------- plots --

out_stem mesh
PLOT_KINDS=(o2m rate lat)

plot_data() {
    local tl x
    case $1 in
    o2m)
        printf '# one-to-many: data MB/s (2^20 B/s) vs message size; medians of %d run(s)\n' "$REPS"
        printf '# columns: size (B), srm (MB/s), tcp (MB/s), srm (msg/s), tcp (msg/s)\n'
        for x in "${SIZES[@]}"; do
            printf '%s %s %s %s %s\n' "$x" "$(median_of "srm/o2m-$x-mb")" "$(median_of "tcp/o2m-$x-mb")" \
                "$(median_of "srm/o2m-$x-mr")" "$(median_of "tcp/o2m-$x-mr")"
        done ;;
    rate)
        printf '# full mesh 8 B: message rate (all ranks) vs ranks per host; medians of %d run(s)\n' "$REPS"
        printf '# columns: P, srm (msg/s), tcp (msg/s)\n'
        for x in "${MESH_PROCS[@]}"; do
            printf '%s %s %s\n' "$x" "$(median_of "srm/mesh-$x-mr")" "$(median_of "tcp/mesh-$x-mr")"
        done ;;
    lat)
        printf '# full mesh 8 B: latency (round trip / 2) vs ranks per host; medians of %d run(s)\n' "$REPS"
        printf '# columns: P, srm p50, p99, p99.9, tcp p50, p99, p99.9 (us)\n'
        for x in "${MESH_PROCS[@]}"; do
            printf '%s' "$x"
            for tl in srm tcp; do
                printf ' %s %s %s' "$(median_of "$tl/mesh-$x-p50")" "$(median_of "$tl/mesh-$x-p99")" \
                    "$(median_of "$tl/mesh-$x-p999")"
            done
            printf '\n'
        done ;;
    esac
}

plot_script() {
    local sub tics='' x
    plot_head
    if (( REPS > 1 )); then sub="median of $REPS runs per point"; else sub="one run per point"; fi
    sub+="; $NHOSTS simulated hosts; $START_DATE; $(uname -n), $NCPU cores"
    [[ $QUICK == 0 ]] || sub+="\\n--quick smoke run, not a measurement"
    (( DISTURBED_RUNS == 0 )) || sub+="\\nmachine not idle in $DISTURBED_RUNS of $TOTAL_RUNS runs"
    for x in "${SIZES[@]}"; do tics+="${tics:+, }\"$(size_label "$x")\" $x"; done
    printf '\nset output %s\n' "$(gp_str "$PLOT_STEM-o2m.png")"
    printf 'set title "one-to-many: rank 0 to %d ranks on %d other hosts\\n%s"\n' \
        $(( O2M_PROCS * (NHOSTS - 1) )) $(( NHOSTS - 1 )) "$sub"
    printf 'set xlabel "message size"\nset ylabel "received data, all receivers (MB/s, MB = 2^20 B)"\n'
    printf 'set logscale x\nset xtics (%s)\nset xrange [%s/2:%s*2]\nset yrange [0:*]\n' "$tics" "${SIZES[0]}" "${SIZES[-1]}"
    printf 'plot %s using 1:2 title "srm" lw 2 pt 7, "" using 1:3 title "tcp" lw 2 pt 5\n' "$(gp_str "$PLOT_STEM-o2m.dat")"
    printf '\nset output %s\nunset logscale\nset autoscale\n' "$(gp_str "$PLOT_STEM-rate.png")"
    printf 'set title "full mesh, 8 B: message rate\\n%s"\n' "$sub"
    printf 'set xlabel "P: ranks per host"\nset ylabel "data messages received per second, all ranks"\n'
    printf 'set logscale x 2\nset xtics (%s)\nset xrange [%s/1.25:%s*1.25]\nset yrange [0:*]\n' \
        "$(printf '%s\n' "${MESH_PROCS[@]}" | paste -sd, -)" "${MESH_PROCS[0]}" "${MESH_PROCS[-1]}"
    printf 'plot %s using 1:2 title "srm" lw 2 pt 7, "" using 1:3 title "tcp" lw 2 pt 5\n' "$(gp_str "$PLOT_STEM-rate.dat")"
    printf '\nset output %s\nset autoscale\nset xrange [%s/1.25:%s*1.25]\n' "$(gp_str "$PLOT_STEM-lat.png")" \
        "${MESH_PROCS[0]}" "${MESH_PROCS[-1]}"
    printf 'set title "full mesh, 8 B: latency (round trip / 2) under load\\n%s"\n' "$sub"
    printf 'set ylabel "latency (us)"\nset logscale y\n'
    printf 'plot %s using 1:2 title "srm p50" lw 2 pt 7 lc 1 dt 1, "" using 1:3 title "srm p99" lw 2 pt 7 lc 1 dt 2, ' "$(gp_str "$PLOT_STEM-lat.dat")"
    printf '"" using 1:4 title "srm p99.9" lw 2 pt 7 lc 1 dt 3, "" using 1:5 title "tcp p50" lw 2 pt 5 lc 2 dt 1, '
    printf '"" using 1:6 title "tcp p99" lw 2 pt 5 lc 2 dt 2, "" using 1:7 title "tcp p99.9" lw 2 pt 5 lc 2 dt 3\n'
    printf '\nunset output\n'
}

plot_terminal
for kind in "${PLOT_KINDS[@]}"; do write_out "$PLOT_DIR/$PLOT_STEM-$kind.dat" plot_data "$kind"; done
write_out "$PLOT_DIR/$PLOT_STEM-plots.gp" plot_script
PNGS=()
for kind in "${PLOT_KINDS[@]}"; do PNGS+=("$PLOT_STEM-$kind.png"); done
plot_run "$PLOT_DIR" "$PLOT_STEM-plots.gp" "${PNGS[@]}"
[[ -z $PLOT_PROBLEM ]] || info "WARNING: no plots: $PLOT_PROBLEM"
[[ -n $OUT ]] || KEEP_LOGS=1     # the plots and their data are in $WORK

# ---------------------------------------------------------------- report --

# pingpong_section: the ping-pong table and issue 3's latency targets.
pingpong_section() {
    local y how want srm_over_tcp
    printf '\n## Ping-pong between two hosts: busy-polling and yielding ranks\n\n'
    printf 'One rank on %s and one on %s: 8 B there, an 8 B answer back, then the next (srm_mesh -p one-to-many -s 8 -W 1 -a 1). Latency: half the round trip, p50 and p99 over the measured window. mpi_yield_when_idle 0: the ranks busy-poll; 1: Open MPI yields the CPU (sched_yield) while a rank waits, so the agents and the other ranks can run. Issue 3'"'"'s targets: srm p50 within 2x of tcp'"'"'s with busy-polling ranks, within 1.5x with yielding ranks.\n\n' \
        "${SRM_HOSTS[0]}" "${SRM_HOSTS[1]}"
    table_head measurement srm tcp srm/tcp
    for y in "${PP_YIELDS[@]}"; do
        if (( y == 0 )); then how="busy-polling"; else how="yielding"; fi
        table_row "mpi_yield_when_idle $y ($how), p50 (us)" lat "pp-y$y-p50"
        table_row "mpi_yield_when_idle $y ($how), p99 (us)" lat "pp-y$y-p99"
    done
    printf '\n'
    for y in "${PP_YIELDS[@]}"; do
        if (( y == 0 )); then how="busy-polling" want=2; else how="yielding" want=1.5; fi
        srm_over_tcp=$(ratio "$(median_of "srm/pp-y$y-p50")" "$(median_of "tcp/pp-y$y-p50")")
        printf -- '- **Target** (%s ranks, srm p50 within %sx of tcp): srm/tcp %sx, ' "$how" "$want" "$srm_over_tcp"
        if awk -v r="$srm_over_tcp" -v w="$want" 'BEGIN { exit !(r != "inf" && r + 0 <= w) }'; then
            printf '**met**\n'
        else
            printf '**not met**\n'
        fi
    done
    floor_lines
}

# floor_lines: what srm_hop_floor measured in this run, per ping-pong.
floor_lines() {
    local y how ranks direct block spin best writer
    printf '\nThe floor on this machine, measured in this run without srm or UCX (srm_hop_floor, %s round trips each, on loopback): the same 8 B ping-pong over one socket between the ranks (as UCX'"'"'s tcp does), and through two agents that relay it over a socket of their own, woken by an eventfd doorbell when they sleep (what srmd does, and nothing more). Last, the floor of a design srm does not have yet: each rank writes the shared socket itself (under a lock in shared memory, after copying the message into a resend log) and the agents, sleeping when idle, only receive: one agent wakeup per message instead of two. p50 (p99), us:\n\n' "$FLOOR_ITERS"
    table_head ranks 'socket between the ranks' 'agents that sleep when idle' "agents that spin ${FLOOR_SPINS[1]} us, then sleep (srmd's default)" 'agents/socket, the better' 'ranks write the shared socket' 'writers/socket'
    for y in "${PP_YIELDS[@]}"; do
        if (( y == 0 )); then how="busy-polling" ranks=busy; else how="yielding" ranks=yield; fi
        direct=${FLOOR[0/direct-$ranks-p50]:-}
        block=${FLOOR[0/agents-$ranks-p50]:-}
        spin=${FLOOR[${FLOOR_SPINS[1]}/agents-$ranks-p50]:-}
        writer=${FLOOR[0/writer-$ranks-p50]:-}
        best=$(awk -v a="$block" -v b="$spin" 'BEGIN { print (b + 0 < a + 0) ? b : a }')
        printf '| %s | %s (%s) | %s (%s) | %s (%s) | **%sx** | %s (%s) | **%sx** |\n' "$how" \
            "${direct:-?}" "${FLOOR[0/direct-$ranks-p99]:-?}" \
            "${block:-?}" "${FLOOR[0/agents-$ranks-p99]:-?}" \
            "${spin:-?}" "${FLOOR[${FLOOR_SPINS[1]}/agents-$ranks-p99]:-?}" \
            "$(ratio "$best" "$direct")" \
            "${writer:-?}" "${FLOOR[0/writer-$ranks-p99]:-?}" "$(ratio "$writer" "$direct")"
    done
    printf '\n'
    wake_cost_line
}

report() {
    local s p h
    printf '# One-to-many and full mesh: srm vs UCX tcp (Open MPI, %d simulated hosts)\n\n' "$NHOSTS"
    printf -- '- machine: %s, nproc %d (%s), kernel %s; date %s\n' "$(uname -n)" "$NCPU" "$(cpu_model)" "$(uname -r)" "$START_DATE"
    printf -- '- UCX %s; %s; %s\n' "$("$UCX_INFO" -v | awk '/Version/ && !v { v = $3 } END { print v }')" \
        "$(srmd_version)" "$(mpirun --version 2>/dev/null | awk 'NR == 1')"
    printf -- '- hosts %s (netns-cluster --prefix %s), one srmd each on @%s (%s); srm: UCX_TLS=srm; tcp: UCX_TLS=tcp UCX_NET_DEVICES=eth0; both also between ranks of one host\n' \
        "$(IFS=,; echo "${SRM_HOSTS[*]}")" "$PFX" "$SRM_SOCKET" "$AGENT_POLICY"
    tcp_cc_line "$TCP_CC"
    printf -- '- each job: warm-up max(%s s / 10, 0.2 s), then %s s measured; every message checked by its receiver: 0 errors in every job%s\n' \
        "$SECS" "$SECS" "$([[ $QUICK == 1 ]] && printf '; **--quick smoke run, not a measurement**')"
    (( NCPU > 2 )) || printf -- '- the ranks busy-poll (Open MPI, mpi_yield_when_idle per netns-mpirun) on 2 cores shared by all hosts and agents\n'
    print_inherited_ucx
    print_disturbance jobs
    [[ -z $PLOT_PROBLEM ]] || printf -- '- **WARNING: NO PLOTS: %s**\n' "$PLOT_PROBLEM"
    if (( REPS > 1 )); then printf '\nCells: median [min, max] of %d runs.' "$REPS"; else printf '\nCells: one run each.'; fi
    printf ' srm/tcp: ratio of the medians (rates: > 1 means srm is better; latency: < 1 means srm is better).\n'

    printf '\n## Experiment 2: one-to-many\n\n'
    printf 'Rank 0 on %s sends round robin to the %d ranks on each of the %d other hosts (%d receivers; %d ranks per host, the other %d on %s idle); at most 16 unacknowledged messages per receiver, an 8 B acknowledgement every 8th. Rate: data messages received per second by all receivers together.\n\n' \
        "${SRM_HOSTS[0]}" "$O2M_PROCS" $(( NHOSTS - 1 )) $(( O2M_PROCS * (NHOSTS - 1) )) "$O2M_PROCS" $(( O2M_PROCS - 1 )) "${SRM_HOSTS[0]}"
    table_head measurement srm tcp srm/tcp
    for s in "${SIZES[@]}"; do
        table_row "$(size_label "$s"), msg/s" mr "o2m-$s-mr"
        table_row "$(size_label "$s"), MB/s" bw "o2m-$s-mb"
    done

    printf '\n## Experiment 3: full mesh, 8 B\n\n'
    printf '%d hosts x P ranks; every rank sends to every other rank, one message in flight per ordered pair: the receiver acknowledges each (8 B), and the sender then sends the next (a ping-pong per pair, all pairs at once). Message rate: data messages received per second, all ranks (the acknowledgements, as many, not counted). Latency: half the time from posting a message to receiving its acknowledgement (round trip / 2 under full load), over every message of every rank; p50, p99, p99.9.\n\n' "$NHOSTS"
    table_head measurement srm tcp srm/tcp
    for p in "${MESH_PROCS[@]}"; do
        table_row "P=$p ($(( p * NHOSTS )) ranks), msg/s" mr "mesh-$p-mr"
        table_row "P=$p, p50 (us)" lat "mesh-$p-p50"
        table_row "P=$p, p99 (us)" lat "mesh-$p-p99"
        table_row "P=$p, p99.9 (us)" lat "mesh-$p-p999"
    done

    (( ${#PP_YIELDS[@]} == 0 )) || pingpong_section

    printf '\n## Plots\n\n'
    if [[ -n $PLOT_PROBLEM ]]; then
        printf '**No plots: %s.**\n\n' "$PLOT_PROBLEM"
    else
        printf '![one-to-many MB/s vs message size](%s)\n\n' "$(md_dest "$PLOT_LINK$PLOT_STEM-o2m.png")"
        printf '![full mesh message rate vs ranks per host](%s)\n\n' "$(md_dest "$PLOT_LINK$PLOT_STEM-rate.png")"
        printf '![full mesh latency percentiles vs ranks per host](%s)\n\n' "$(md_dest "$PLOT_LINK$PLOT_STEM-lat.png")"
    fi
    printf 'Data: %s-o2m.dat, %s-rate.dat, %s-lat.dat; gnuplot script %s-plots.gp (%s), in %s.\n' \
        "$PLOT_STEM" "$PLOT_STEM" "$PLOT_STEM" "$PLOT_STEM" "$PLOT_TERM" "$PLOT_DIR"
    printf '\nsrmd node-channel connections after the runs (established TCP, owned by srmd):'
    for h in "${SRM_HOSTS[@]}"; do printf ' %s %s;' "$h" "${CONNS[$h]}"; done
    printf ' %d jobs, %s s in all.\n' "$TOTAL_RUNS" "$ELAPSED"
}

commands() {
    printf '\n## Commands\n\n```sh\n'
    cat "$CMDS"
    printf '```\n'
}
report_and_commands() { cat "$REPORT"; commands; }

REPORT=$WORK/report.md
report >"$REPORT"
[[ -z $OUT ]] || write_out "$OUT" report_and_commands
cat "$REPORT"
[[ -z $OUT ]] || printf '\n(report and command lines written to %s)\n' "$OUT"
[[ -n $OUT ]] || printf '\n(plots, data and logs in %s, kept)\n' "$WORK"
FAILED=0
