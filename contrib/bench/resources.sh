#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# resources.sh - experiment 4 of issue 6: connections and memory per host
# as the processes per host grow, srm vs UCX tcp, with an Open MPI full
# mesh across simulated hosts; a markdown report, gnuplot PNGs and a cost
# file for contrib/bench/model.sh.
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
    $PROG - TCP connections and memory per host vs processes per host,
    srm vs UCX tcp

SYNOPSIS
    $PROG [--build DIR] [--reps N] [--out FILE] [--timeout SEC]
                 [--hosts N] [--procs LIST] [--hold SEC] [--costs FILE]
                 [--prefix NAME] [--keep-logs] [--quick]
    $PROG -h | --help

DESCRIPTION
    Brings up N simulated hosts (contrib/netns-cluster, --prefix, default
    rs<pid>) and, for every P of --procs and each transport, runs
    contrib/bench/srm_mesh on N x P ranks (Open MPI, pml ucx, through
    contrib/netns-mpirun): a full mesh of checked 8 B and 64 KB messages
    (srm_mesh -p mesh -s 8,65536 -t 1), so that every rank has talked to
    every other rank over both of srm's channel kinds, after which the
    ranks hold still, every endpoint connected, until the script has
    sampled (srm_mesh -H --hold -F FILE).
    While they hold the script counts, in every host:

      connections  established TCP sockets in the host's network namespace
                   (ss -tnpH), by owner: srmd (the agent), ranks
                   (srm_mesh), runtime (orted, mpirun: Open MPI's own,
                   shown but not the transport's), other; and by peer:
                   remote (another host's address) or local (this host)
      memory       VmRSS and Pss (/proc/PID/smaps_rollup) of the srmd and
                   of every rank: per rank (mean over the host's ranks)
                   and per host (agent + all ranks)

    srm: UCX_TLS=srm with fresh agents for every job (so that the agent's
    memory is that of P clients), srmd base RSS measured right after each
    start; tcp: UCX_TLS=tcp UCX_NET_DEVICES=eth0, no agents.  Both use
    their transport between ranks of one host too.

    The target (issue 6): srm's connections per host are constant in P:
    4 (N-1), a small and a bulk channel per remote host, each with an
    active and a standby connection; UCX tcp's grow as P^2: P^2 (N-1)
    sockets to remote hosts per host (one per pair of ranks on different
    hosts), plus local ones.  The report says whether it was met.

    Each number is the median over --reps jobs (with [min, max]) of the
    maximum over the hosts (connections) or the mean over the hosts
    (memory).  The job must report no data error and the agents must
    stay up, else the script fails, printing the command and the logs.

    Plots (gnuplot; STEM from --out as in mesh.sh, default "resources"):
      STEM-conn.png   remote connections per host vs P (srm, tcp, and the
                      target lines 4(N-1) and P^2(N-1))
      STEM-mem.png    memory per host (agent + ranks, Pss) vs P

    Cost file (--costs FILE, default STEM-costs.txt next to the plots):
    key=value lines that contrib/bench/model.sh --costs reads:
      tcp_conn_bytes   bytes per TCP connection: the kernel's TCP socket
                       object (/proc/slabinfo, TCP objsize) plus the slope
                       of a tcp rank's RSS over its connections (least
                       squares over P)
      agent_base_bytes srmd RSS with no client (median)
      port_rss_bytes   slope of the agent's RSS over its ports (least
                       squares over P): what a port costs the agent
      port_ring_bytes  the rings a port maps: UCX_SRM_TX_RINGS x
                       UCX_SRM_TX_RING_SIZE + UCX_SRM_RX_RING_SIZE (the
                       module's defaults 4 x 1 MiB + 2 MiB unless set)
      rank_rss_srm_P / rank_rss_tcp_P   median rank RSS per P

OPTIONS
    --build DIR     srm build directory (default \$SRM_BUILD_DIR, else
                    <repo>/build)
    --reps N        repetitions (default 3; 1 with --quick)
    --out FILE      write the report and every command line to FILE, the
                    plots and the cost file next to it
    --timeout SEC   limit of each MPI job (default 240; 90 with --quick)
    --hosts N       simulated hosts, 2..8 (default 3)
    --procs LIST    ranks per host, 1..32 (default 1,2,4,8,16; 1,2,4 with
                    --quick)
    --hold SEC      the longest the ranks hold still (default 120; 60
                    with --quick): they go as soon as the two samples (a
                    second apart; 0.5 s with --quick) are taken
    --costs FILE    where to write the cost file
    --prefix NAME   netns-cluster prefix (default rs<pid>)
    --keep-logs     keep the log directory after a complete run
    --quick         smoke run: --reps 1, --procs 1,2,4, 0.3 s of
                    traffic per job (not 1 s); the numbers are not a
                    measurement
    -h, --help      this text

ENVIRONMENT
    SRM_BUILD_DIR, TMPDIR; UCX_SRM_* reach the agents and the ranks (ring
    sizes: UCX_SRM_TX_RINGS, UCX_SRM_TX_RING_SIZE, UCX_SRM_RX_RING_SIZE).

EXIT STATUS
    0 report printed (whether or not the target was met: the report says);
    1 a job failed or the environment is unusable; 2 bad usage; 130/143
    interrupted.  The processes the script started are killed by PID and
    the cluster is torn down on every exit.

REQUIREMENTS
    root, ip, nsenter, ss, timeout, mpicc, mpirun (Open MPI 4.1, pml ucx),
    an srm build; gnuplot for the plots.

EXAMPLES
    $PROG --build /tmp/build --quick
    $PROG --build /tmp/build --out resources.md
    contrib/bench/model.sh --costs resources-costs.txt
USAGE
}

BUILD=${SRM_BUILD_DIR:-}
REPS='' ITERS=0 OUT='' PORT_BASE=0 TIMEOUT='' KEEP_LOGS=0 QUICK=0
NHOSTS=3 PROCS_ARG='' HOLD='' COSTS='' PFX=rs$$

while [[ $# -gt 0 ]]; do
    common_option "$@"
    if (( OPT_SHIFT > 0 )); then
        [[ $1 != --iters* && $1 != --port* ]] || bad "unknown argument: $1"
        shift "$OPT_SHIFT"; continue
    fi
    case $1 in
    --hosts)    need_arg "$@"; NHOSTS=$2; shift 2 ;;
    --hosts=*)  NHOSTS=${1#*=}; shift ;;
    --procs)    need_arg "$@"; PROCS_ARG=$2; shift 2 ;;
    --procs=*)  PROCS_ARG=${1#*=}; shift ;;
    --hold)     need_arg "$@"; HOLD=$2; shift 2 ;;
    --hold=*)   HOLD=${1#*=}; shift ;;
    --costs)    need_arg "$@"; COSTS=$2; shift 2 ;;
    --costs=*)  COSTS=${1#*=}; shift ;;
    --prefix)   need_arg "$@"; PFX=$2; shift 2 ;;
    --prefix=*) PFX=${1#*=}; shift ;;
    -h|--help)  usage; exit 0 ;;
    *)          bad "unknown argument: $1" ;;
    esac
done
if [[ $QUICK == 1 ]]; then
    : "${REPS:=1}" "${TIMEOUT:=90}" "${PROCS_ARG:=1,2,4}" "${HOLD:=60}"
    TRAFFIC_SECS=0.3 WARMUP_SECS=0.1 SAMPLE_GAP=0.5
else
    : "${REPS:=3}" "${TIMEOUT:=240}" "${PROCS_ARG:=1,2,4,8,16}" "${HOLD:=120}"
    TRAFFIC_SECS=1 WARMUP_SECS=0.3 SAMPLE_GAP=1
fi
check_reps
check_timeout
check_prefix
check_out
if ! is_uint "$NHOSTS" || (( NHOSTS < 2 || NHOSTS > 8 )); then
    bad "--hosts must be 2..8, not '$NHOSTS'"
fi
if ! is_uint "$HOLD" || (( HOLD < 2 || HOLD > 600 )); then
    bad "--hold must be 2..600 seconds, not '$HOLD'"
fi
procs_list --procs "$PROCS_ARG" 32
PLIST=("${PROCS[@]}")

T_START=$EPOCHREALTIME
START_DATE=$(date -u '+%Y-%m-%d %H:%M:%S UTC')
[[ $(id -u) == 0 ]] || die "must run as root (network namespaces)"
[[ -x $SRM_NETNS_CLUSTER ]] || die "$SRM_NETNS_CLUSTER not found or not executable"
require_tools " in PATH" ip nsenter ss timeout awk sort mpicc mpirun jq
[[ -n $BUILD ]] || BUILD=$SRCDIR/build
[[ -d $BUILD ]] || die "build directory '$BUILD' does not exist (use --build DIR or set SRM_BUILD_DIR)"
find_srm_build
SRM_SOCKET=srm-res-$$
NCPU=$(nproc)

make_work_dir srm-resources
PIDS=()
declare -A AGENT=()
CLUSTER_UP=0
FAILED=1
cleanup() {
    local rc=$?
    trap - EXIT INT TERM
    trap '' INT TERM
    srm_kill_pids 2 "${PIDS[@]}" "${AGENT[@]}"
    cluster_down
    drop_work_dir
    exit "$rc"
}
set_traps

out_stem resources
[[ -n $COSTS ]] || COSTS=$PLOT_DIR/$PLOT_STEM-costs.txt

MESH_BIN=$WORK/srm_mesh
build_mesh "$MESH_BIN"
info "bringing up $NHOSTS hosts (netns-cluster --prefix $PFX); logs in $WORK"
cluster_up "$NHOSTS"

# ------------------------------------------------------------- sampling --

# kb_of PID FIELD FILE: the kB value of FIELD in /proc/PID/FILE, or 0
# (builtins only: it runs for every process of every host per sample).
kb_of() {
    local k v
    while read -r k v _; do
        [[ $k == "$2:" ]] && { printf '%s\n' "$v"; return 0; }
    done 2>/dev/null <"/proc/$1/$3" || true
    echo 0
}

# sample HOST INDEX: one line "srmd_remote rank_remote runtime_remote
# other_remote srmd_local rank_local agent_rss agent_pss nranks
# rank_rss_sum rank_pss_sum" (kB) for HOST (address 10.77.0.INDEX).
sample() {
    local h=$1 me=10.77.0.$2 p comm ars=0 aps=0 n=0 rrs=0 rps=0 conns
    conns=$(timeout -k 2 20 "$SRM_NETNS_CLUSTER" exec "$h" ss -tnpH state established 2>/dev/null |
        awk -v me="$me" '{
            peer = $4; sub(/:[0-9]+$/, "", peer)
            owner = "?"
            if (match($0, /users:\(\("[^"]*"/)) owner = substr($0, RSTART + 9, RLENGTH - 10)
            if ($0 ~ /\("srmd",pid=/) owner = "srmd"  # a direct lane: still the channel
            k = (owner == "srmd") ? 1 : (owner == "srm_mesh") ? 2 : (owner ~ /^(orted|mpirun|orterun|prted|prterun)$/) ? 3 : 4
            if (peer ~ /^10\.77\.0\.[0-9]+$/ && peer != me) r[k]++; else l[k]++
        } END { printf "%d %d %d %d %d %d", r[1], r[2], r[3], r[4], l[1], l[2] }')
    for p in $(ip netns pids "$h" 2>/dev/null); do
        { read -r comm <"/proc/$p/comm"; } 2>/dev/null || continue
        case $comm in
        srmd)     ars=$(( ars + $(kb_of "$p" VmRSS status) )); aps=$(( aps + $(kb_of "$p" Pss smaps_rollup) )) ;;
        srm_mesh) n=$(( n + 1 ))
                  rrs=$(( rrs + $(kb_of "$p" VmRSS status) )); rps=$(( rps + $(kb_of "$p" Pss smaps_rollup) )) ;;
        esac
    done
    printf '%s %d %d %d %d %d\n' "$conns" "$ars" "$aps" "$n" "$rrs" "$rps"
}

# ------------------------------------------------------------------ runs --

TRANSPORTS=(srm tcp)
TOTAL_RUNS=$(( ${#PLIST[@]} * ${#TRANSPORTS[@]} * REPS ))
DONE_RUNS=0

declare -A VALUES=() DISTURBED_IN=()
AGENT_BASE=()
SLAB_TCP=$(awk '$1 == "TCP" { print $4 }' /proc/slabinfo 2>/dev/null || true)
: "${SLAB_TCP:=0}"

note() { VALUES[$tl/$2]+="$1 "; }

info "$TOTAL_RUNS jobs: P in ${PLIST[*]} x ${#TRANSPORTS[@]} transports x $REPS rep(s), hold $HOLD s, timeout $TIMEOUT s"
for (( rep = 1; rep <= REPS; rep++ )); do
    for p in "${PLIST[@]}"; do
        for tl in "${TRANSPORTS[@]}"; do
            if [[ $tl == srm ]]; then
                agents_start "P$p-r$rep"
                for h in "${SRM_HOSTS[@]}"; do AGENT_BASE+=("$(kb_of "${AGENT[$h]}" VmRSS status)"); done
            fi
            mpi_job_start "P$p-$tl-r$rep" "$tl" "$p" "$MESH_BIN" -p mesh -s 8,65536 -t "$TRAFFIC_SECS" -w "$WARMUP_SECS" -H "$HOLD" -F "$WORK/runs/P$p-$tl-r$rep/release"
            # Wait for the hold (the job's end if it never holds).
            wait_line "$JOB_PID" "$JOB_OUT" 'srm_mesh: holding'
            has_line "$JOB_OUT" 'srm_mesh: holding' || { mpi_job_wait; job_failure "job $JOB_DIR ended without holding"; }
            declare -A worst=()
            for s in 1 2; do
                for i in "${!SRM_HOSTS[@]}"; do
                    h=${SRM_HOSTS[$i]}
                    # An srm sample without the agent's RSS is taken again
                    # while the agent runs: once, in a loaded smoke, one
                    # read no VmRSS for a running agent (its Pss was read).
                    for try in 1 2 3; do
                        line=$(sample "$h" $(( i + 1 )))
                        printf 'sample %d %s: %s\n' "$s" "$h" "$line" >>"$JOB_DIR/samples"
                        read -r sr rr or xr sl rl ars aps n rrs rps <<<"$line"
                        [[ $tl == srm ]] && (( ars == 0 )) && srm_alive "${AGENT[$h]}" || break
                    done
                    (( n == p )) || job_failure "job $JOB_DIR: $n ranks found in $h, want $p (--hold too short?)"
                    [[ $tl == tcp ]] || (( ars > 0 )) ||
                        job_failure "job $JOB_DIR: no srmd RSS in $h (agent pid ${AGENT[$h]}$(srm_alive "${AGENT[$h]}" || printf ', exited'))"
                    # per host, the worst sample (connections), kB
                    for kv in sr:$sr rr:$rr or:$or xr:$xr sl:$sl rl:$rl; do
                        k=${kv%%:*} v=${kv#*:}
                        (( v > ${worst[$k]:-0} )) && worst[$k]=$v
                    done
                    if (( s == 2 )); then
                        note "$ars" "agent-rss-$p"; note "$aps" "agent-pss-$p"
                        note "$(( rrs / n ))" "rank-rss-$p"; note "$(( rps / n ))" "rank-pss-$p"
                        note "$(( aps + rps ))" "host-pss-$p"
                    fi
                done
                (( s == 2 )) || srm_nap "$SAMPLE_GAP"
            done
            : >"$JOB_DIR/release"        # the ranks may go
            worst_line="${worst[sr]:-0}/${worst[rr]:-0}/${worst[or]:-0}"
            for k in sr rr or xr sl rl; do note "${worst[$k]:-0}" "$k-$p"; done
            unset worst
            mpi_job_wait
            mesh_result
            if [[ $tl == srm ]]; then
                agents_alive || job_failure "an srmd died during job $JOB_DIR"
                agents_stop
            fi
            DONE_RUNS=$(( DONE_RUNS + 1 ))
            info "[$DONE_RUNS/$TOTAL_RUNS] $tl P=$p rep $rep: remote connections srmd/ranks/runtime ${worst_line} (samples: $JOB_DIR/samples)"
        done
    done
done
T_END=$EPOCHREALTIME
ELAPSED=$(seconds_between "$T_START" "$T_END" %.0f)

# ---------------------------------------------------------------- costs --

WANT_SRM=$(( 4 * (NHOSTS - 1) ))
MET_SRM=1 MET_TCP=1
for p in "${PLIST[@]}"; do
    # shellcheck disable=SC2086  # lists of numbers
    read -r _ lo hi < <(stats ${VALUES[srm/sr-$p]})
    [[ ${lo%.*} == "$WANT_SRM" && ${hi%.*} == "$WANT_SRM" ]] || MET_SRM=0
    # shellcheck disable=SC2086
    read -r _ _ hi < <(stats ${VALUES[srm/rr-$p]})
    [[ ${hi%.*} == 0 ]] || MET_SRM=0
    awk -v m="$(median_of "tcp/rr-$p")" -v w="$(( p * p * (NHOSTS - 1) ))" \
        'BEGIN { exit !(m >= 0.9 * w && m <= 1.1 * w) }' || MET_TCP=0
done
RING_BYTES=$(awk -v n="${UCX_SRM_TX_RINGS:-4}" -v t="${UCX_SRM_TX_RING_SIZE:-1m}" -v r="${UCX_SRM_RX_RING_SIZE:-2m}" '
    function bytes(s,   m) { m = 1; if (s ~ /[kK]$/) m = 1024; else if (s ~ /[mM]$/) m = 1048576; else if (s ~ /[gG]$/) m = 1073741824
                             sub(/[kKmMgGbB]+$/, "", s); return s * m }
    BEGIN { printf "%d\n", n * bytes(t) + bytes(r) }')
TCP_SLOPE_KB=$(for p in "${PLIST[@]}"; do echo "$(( NHOSTS * p - 1 )) $(median_of "tcp/rank-rss-$p")"; done | fit_slope)
PORT_SLOPE_KB=$(for p in "${PLIST[@]}"; do echo "$p $(median_of "srm/agent-rss-$p")"; done | fit_slope)
# shellcheck disable=SC2086
read -r AGENT_BASE_KB _ _ < <(stats "${AGENT_BASE[@]}")
TCP_CONN_BYTES=$(awk -v s="$TCP_SLOPE_KB" -v k="$SLAB_TCP" 'BEGIN { v = s * 1024; if (v < 0) v = 0; printf "%d\n", v + k }')

costs() {
    local p
    printf '# srm/tcp resource costs measured by %s, %s, %d hosts, P = %s\n' "$PROG" "$START_DATE" "$NHOSTS" "${PLIST[*]}"
    printf '# read by contrib/bench/model.sh --costs; bytes unless said otherwise\n'
    printf 'tcp_conn_bytes=%s\n' "$TCP_CONN_BYTES"
    printf 'tcp_conn_kernel_bytes=%s\n' "$SLAB_TCP"
    printf 'tcp_conn_user_bytes=%.0f\n' "$(awk -v s="$TCP_SLOPE_KB" 'BEGIN { print (s > 0 ? s : 0) * 1024 }')"
    printf 'agent_base_bytes=%.0f\n' "$(awk -v k="$AGENT_BASE_KB" 'BEGIN { print k * 1024 }')"
    printf 'port_rss_bytes=%.0f\n' "$(awk -v s="$PORT_SLOPE_KB" 'BEGIN { print (s > 0 ? s : 0) * 1024 }')"
    printf 'port_ring_bytes=%s\n' "$RING_BYTES"
    for p in "${PLIST[@]}"; do
        printf 'rank_rss_srm_%d=%.0f\n' "$p" "$(awk -v k="$(median_of "srm/rank-rss-$p")" 'BEGIN { print k * 1024 }')"
        printf 'rank_rss_tcp_%d=%.0f\n' "$p" "$(awk -v k="$(median_of "tcp/rank-rss-$p")" 'BEGIN { print k * 1024 }')"
    done
}
write_out "$COSTS" costs

# ----------------------------------------------------------------- plots --

plot_data() {
    local p
    case $1 in
    conn)
        printf '# remote TCP connections per host (max over hosts; median of %d run(s)) vs P\n' "$REPS"
        printf '# columns: P, srm (srmd + ranks), tcp (ranks), target srm 4(N-1), P^2(N-1)\n'
        for p in "${PLIST[@]}"; do
            printf '%s %s %s %s %s\n' "$p" \
                "$(awk -v a="$(median_of "srm/sr-$p")" -v b="$(median_of "srm/rr-$p")" 'BEGIN { print a + b }')" \
                "$(median_of "tcp/rr-$p")" "$WANT_SRM" "$(( p * p * (NHOSTS - 1) ))"
        done ;;
    mem)
        printf '# memory per host, Pss of the agent + all ranks (kB), median over hosts and runs, vs P\n'
        printf '# columns: P, srm (kB), tcp (kB), srm rank RSS (kB), tcp rank RSS (kB)\n'
        for p in "${PLIST[@]}"; do
            printf '%s %s %s %s %s\n' "$p" "$(median_of "srm/host-pss-$p")" "$(median_of "tcp/host-pss-$p")" \
                "$(median_of "srm/rank-rss-$p")" "$(median_of "tcp/rank-rss-$p")"
        done ;;
    esac
}
plot_script() {
    local sub
    plot_head
    if (( REPS > 1 )); then sub="median of $REPS runs per point"; else sub="one run per point"; fi
    sub+="; $NHOSTS simulated hosts; $START_DATE; $(uname -n)"
    [[ $QUICK == 0 ]] || sub+="\\n--quick smoke run, not a measurement"
    printf 'set logscale x 2\nset xtics (%s)\nset xrange [%s/1.25:%s*1.25]\n' \
        "$(printf '%s\n' "${PLIST[@]}" | paste -sd, -)" "${PLIST[0]}" "${PLIST[-1]}"
    printf 'set xlabel "P: ranks per host"\n'
    printf '\nset output %s\n' "$(gp_str "$PLOT_STEM-conn.png")"
    printf 'set title "TCP connections to other hosts, per host\\n%s"\n' "$sub"
    printf 'set ylabel "established connections to other hosts"\nset logscale y\n'
    printf 'plot %s using 1:2 title "srm (srmd + ranks)" lw 2 pt 7, "" using 1:3 title "tcp (ranks)" lw 2 pt 5, ' "$(gp_str "$PLOT_STEM-conn.dat")"
    printf '"" using 1:4 title "4(N-1)" with lines dt 2 lc 1, "" using 1:5 title "P^2(N-1)" with lines dt 2 lc 2\n'
    printf '\nset output %s\nunset logscale y\nset yrange [0:*]\n' "$(gp_str "$PLOT_STEM-mem.png")"
    printf 'set title "memory per host: Pss of the agent and all ranks\\n%s"\n' "$sub"
    printf 'set ylabel "kB"\n'
    printf 'plot %s using 1:2 title "srm (srmd + ranks)" lw 2 pt 7, "" using 1:3 title "tcp (ranks)" lw 2 pt 5\n' "$(gp_str "$PLOT_STEM-mem.dat")"
    printf '\nunset output\n'
}
plot_terminal
for kind in conn mem; do write_out "$PLOT_DIR/$PLOT_STEM-$kind.dat" plot_data "$kind"; done
write_out "$PLOT_DIR/$PLOT_STEM-plots.gp" plot_script
plot_run "$PLOT_DIR" "$PLOT_STEM-plots.gp" "$PLOT_STEM-conn.png" "$PLOT_STEM-mem.png"
[[ -z $PLOT_PROBLEM ]] || info "WARNING: no plots: $PLOT_PROBLEM"
[[ -n $OUT ]] || KEEP_LOGS=1

# ---------------------------------------------------------------- report --

report() {
    local p
    printf '# Resources vs processes per host: srm vs UCX tcp (%d simulated hosts)\n\n' "$NHOSTS"
    printf -- '- machine: %s, nproc %d, kernel %s; date %s; %s; %s\n' "$(uname -n)" "$NCPU" "$(uname -r)" "$START_DATE" \
        "$(srmd_version)" "$(mpirun --version 2>/dev/null | awk 'NR == 1')"
    printf -- '- job: srm_mesh -p mesh -s 8,65536 -t %s -w %s -H %d -F FILE on %d hosts x P ranks (every pair talked over small and large messages, 0 data errors), then sampled twice, %s s apart, while it held; srm: UCX_TLS=srm, fresh agents per job; tcp: UCX_TLS=tcp UCX_NET_DEVICES=eth0%s\n' \
        "$TRAFFIC_SECS" "$WARMUP_SECS" "$HOLD" "$NHOSTS" "$SAMPLE_GAP" "$([[ $QUICK == 1 ]] && printf '; **--quick smoke run, not a measurement**')"
    if (( REPS > 1 )); then printf -- '- cells: median [min, max] of %d runs\n' "$REPS"; else printf -- '- cells: one run each\n'; fi
    [[ -z $PLOT_PROBLEM ]] || printf -- '- **WARNING: NO PLOTS: %s**\n' "$PLOT_PROBLEM"

    printf '\n## Connections per host\n\n'
    printf 'Established TCP sockets in a host'"'"'s namespace (ss -tnpH), the maximum over the hosts and samples; remote: to another host; local: both ends in this host (each local connection counts twice). runtime: orted/mpirun, Open MPI'"'"'s own, not the transport'"'"'s.\n\n'
    table_head "P" "srm: srmd remote" "srm: ranks remote" "tcp: ranks remote" "P^2(N-1)" "srm: srmd+ranks local" "tcp: ranks local" "runtime remote"
    for p in "${PLIST[@]}"; do
        printf '| %d | %s | %s | %s | %d | %s | %s | %s |\n' "$p" "$(cell sr-$p srm)" "$(cell rr-$p srm)" "$(cell rr-$p tcp)" \
            $(( p * p * (NHOSTS - 1) )) "$(awk -v a="$(median_of "srm/sl-$p")" -v b="$(median_of "srm/rl-$p")" 'BEGIN { print a + b }')" \
            "$(cell rl-$p tcp)" "$(cell or-$p tcp)"
    done
    printf '\n**Target** (srm connections per host constant in P, 4(N-1) = %d; tcp growing as P^2(N-1)): ' "$WANT_SRM"
    if (( MET_SRM )); then printf 'srm **met** (srmd owns %d in every run, the ranks none); ' "$WANT_SRM"
    else printf 'srm **NOT met** (see the table); '; fi
    if (( MET_TCP )); then printf 'tcp **grows as P^2(N-1)** (within 10 %%).\n'
    else printf 'tcp **does not follow P^2(N-1)** within 10 %% (see the table).\n'; fi

    printf '\n## Memory\n\n'
    printf 'kB; VmRSS and Pss (smaps_rollup); a rank: the mean over the ranks of a host; agent: srmd; host: the agent'"'"'s and all ranks'"'"' Pss; medians over hosts and runs. srm ranks map their rings (shared with srmd): Pss splits those pages between them.\n\n'
    table_head "P" "srm rank RSS" "tcp rank RSS" "srm rank Pss" "tcp rank Pss" "srmd RSS" "srmd Pss" "srm host Pss" "tcp host Pss"
    for p in "${PLIST[@]}"; do
        printf '| %d | %s | %s | %s | %s | %s | %s | %s | %s |\n' "$p" "$(cell rank-rss-$p srm)" "$(cell rank-rss-$p tcp)" \
            "$(cell rank-pss-$p srm)" "$(cell rank-pss-$p tcp)" "$(cell agent-rss-$p srm)" "$(cell agent-pss-$p srm)" \
            "$(cell host-pss-$p srm)" "$(cell host-pss-$p tcp)"
    done
    printf '\nsrmd with no client: %.0f kB RSS (median of %d starts).\n' "$AGENT_BASE_KB" "${#AGENT_BASE[@]}"

    printf '\n## Costs for the model (%s)\n\n```\n' "$COSTS"
    costs | grep -v '^#'
    printf '```\n\ntcp_conn_bytes = kernel TCP socket object (/proc/slabinfo: %s B) + the least-squares slope of a tcp rank'"'"'s RSS over its %s connections (N P - 1 per rank); port_rss_bytes: slope of srmd RSS over its ports (P); port_ring_bytes: rings a port maps (TX_RINGS x TX_RING_SIZE + RX_RING_SIZE). Use: `contrib/bench/model.sh --costs %s`.\n' \
        "$SLAB_TCP" "UCX tcp" "$COSTS"

    printf '\n## Plots\n\n'
    if [[ -z $PLOT_PROBLEM ]]; then
        printf '![remote connections per host vs P](%s)\n\n' "$(md_dest "$PLOT_LINK$PLOT_STEM-conn.png")"
        printf '![memory per host vs P](%s)\n\n' "$(md_dest "$PLOT_LINK$PLOT_STEM-mem.png")"
    else
        printf '**No plots: %s.**\n\n' "$PLOT_PROBLEM"
    fi
    printf 'Data: %s-conn.dat, %s-mem.dat; script %s-plots.gp; in %s. %d jobs, %s s in all.\n' \
        "$PLOT_STEM" "$PLOT_STEM" "$PLOT_STEM" "$PLOT_DIR" "$TOTAL_RUNS" "$ELAPSED"
}

# cell KEY TL: median [min, max] of VALUES[TL/KEY], integers.
cell() {
    local med lo hi
    # shellcheck disable=SC2086  # a list of numbers
    read -r med lo hi < <(stats ${VALUES[$2/$1]})
    if (( REPS > 1 )); then printf '%.0f [%.0f, %.0f]' "$med" "$lo" "$hi"; else printf '%.0f' "$med"; fi
}

commands() { printf '\n## Commands\n\n```sh\n'; cat "$CMDS"; printf '```\n'; }
report_and_commands() { cat "$REPORT"; commands; }

REPORT=$WORK/report.md
report >"$REPORT"
[[ -z $OUT ]] || write_out "$OUT" report_and_commands
cat "$REPORT"
[[ -z $OUT ]] || printf '\n(report and command lines written to %s)\n' "$OUT"
[[ -n $OUT ]] || printf '\n(plots, data, cost file and logs in %s, kept)\n' "$WORK"
FAILED=0
