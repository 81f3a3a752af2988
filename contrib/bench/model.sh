#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# model.sh - experiment 6 of issue 6: a scaling model for cluster sizes
# this machine cannot hold.  From per-connection, per-queue-pair and
# per-port costs (measured by resources.sh, or documented defaults) it
# tabulates connections/QPs and memory per node for RC, DC, XRC, UD, UCX
# tcp and srm at N nodes x P processes per node, and states the formulas.
set -euo pipefail

PROG=${0##*/}
export LC_ALL=C
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/lib.sh"

# ---------------------------------------------------------------- costs --
#
# Every cost: key, default, unit, source.  Queue lengths and segment sizes
# are UCX 1.13.1's defaults as "ucx_info -c -f" prints them (Debian 12);
# the host-side costs of tcp and srm are what resources.sh measured once
# here (--quick: 3 hosts, P = 1, 2, 4; 2-core VM, Linux 6.18) and are
# replaced by the cost file of your own run with --costs.

COST_KEYS=(wqe_bytes qp_ctx_bytes rc_tx_queue_len rc_rx_queue_len ib_seg_size
           dc_tx_queue_len dc_rx_queue_len ud_tx_queue_len ud_rx_queue_len
           ud_seg_size ud_ep_bytes tcp_conn_bytes srm_conn_bytes
           agent_base_bytes port_rss_bytes port_ring_bytes chan_buf_bytes)
declare -A COST=(
    [wqe_bytes]=64 [qp_ctx_bytes]=512
    [rc_tx_queue_len]=256 [rc_rx_queue_len]=4095 [ib_seg_size]=8256
    [dc_tx_queue_len]=128 [dc_rx_queue_len]=4095
    [ud_tx_queue_len]=256 [ud_rx_queue_len]=4096 [ud_seg_size]=8192
    [ud_ep_bytes]=512
    [tcp_conn_bytes]=281091 [srm_conn_bytes]=2368
    [agent_base_bytes]=4345856 [port_rss_bytes]=5520240 [port_ring_bytes]=6291456
    [chan_buf_bytes]=393248
)
declare -A COST_SRC=(
    [wqe_bytes]="send WQE basic block, MLX5_SEND_WQE_BB in infiniband/mlx5dv.h"
    [qp_ctx_bytes]="estimate: QP context the NIC keeps in host memory (ICM) per QP, ConnectX class"
    [rc_tx_queue_len]="UCX_RC_VERBS_TX_QUEUE_LEN (= UCX_RC_MLX5_TX_QUEUE_LEN), UCX 1.13 default"
    [rc_rx_queue_len]="UCX_RC_VERBS_RX_QUEUE_LEN, UCX 1.13 default: receives posted to the process's SRQ"
    [ib_seg_size]="UCX_RC_VERBS_SEG_SIZE (= DC_MLX5_SEG_SIZE), UCX 1.13 default: one receive buffer"
    [dc_tx_queue_len]="UCX_DC_MLX5_TX_QUEUE_LEN, UCX 1.13 default (per DCI)"
    [dc_rx_queue_len]="UCX_DC_MLX5_RX_QUEUE_LEN, UCX 1.13 default (the DCT's SRQ)"
    [ud_tx_queue_len]="UCX_UD_VERBS_TX_QUEUE_LEN, UCX 1.13 default"
    [ud_rx_queue_len]="UCX_UD_VERBS_RX_QUEUE_LEN, UCX 1.13 default"
    [ud_seg_size]="UCX_UD_VERBS_SEG_SIZE (8K), UCX 1.13 default"
    [ud_ep_bytes]="estimate: UCX's software state per UD peer (uct_ud_ep_t, its window and timers)"
    [tcp_conn_bytes]="default: resources.sh --quick here: kernel TCP socket object (2368 B) + slope of a UCX tcp rank's RSS over its connections (UCX's per-endpoint buffers)"
    [srm_conn_bytes]="default: kernel TCP socket object (/proc/slabinfo TCP objsize here): a node channel connection on the tcp wire; its buffer is chan_buf_bytes"
    [agent_base_bytes]="default: srmd RSS with no client, resources.sh --quick here"
    [port_rss_bytes]="default: slope of srmd RSS over its ports, resources.sh --quick here (mostly the ring pages the agent maps)"
    [port_ring_bytes]="UCX_SRM_TX_RINGS x UCX_SRM_TX_RING_SIZE + UCX_SRM_RX_RING_SIZE = 4 x 1 MiB + 2 MiB (module defaults)"
    [chan_buf_bytes]="UCX_SRM_CHANNEL_DEPTH (256 KiB) + largest frame (128 KiB + 32 B header): a channel's send buffer, allocated on first use"
)

usage() {
    cat <<USAGE
NAME
    $PROG - experiment 6: connections, queue pairs and memory per node of
    RC, DC, XRC, UD, UCX tcp and srm at cluster sizes beyond this machine

SYNOPSIS
    $PROG [--costs FILE] [--cost KEY=VALUE]... [--nodes LIST] [--ppn LIST]
             [--dcis N] [--out FILE] [--data FILE] [--no-plots]
    $PROG --list-costs | -h | --help

DESCRIPTION
    Prints markdown: the costs used (value and source of each), the
    formulas, and two tables, connections/QPs per node and memory per node,
    for every N of --nodes (default 16,64,256,1024,4096 nodes) and P of
    --ppn (default 8,32,128 processes per node).  A full mesh: every
    process talks to every process on every other node (intra-node
    traffic is left out: UCX would use shared memory, srm its agent).

    Counts, per process and per node (N nodes, P processes per node,
    D DCIs per process):

      RC    P(N-1) QPs per process, one per remote process;
            P^2 (N-1) per node
      DC    D DCIs + 1 DCT per process, whatever N; P (D+1) per node
      XRC   N-1 send (INI) QPs per process, one per remote node; per node
            also one receive (TGT) QP per remote INI QP that targets it:
            P(N-1) + P(N-1) = 2P(N-1) per node
      UD    1 QP per process; P per node (connectionless: each process
            keeps software state per remote peer, P(N-1))
      tcp   P(N-1) sockets per process (UCX tcp, one per remote peer);
            P^2 (N-1) per node
      srm   none per process (a UNIX socket and rings to the agent); per
            node 2 channels (small, bulk) x 2 connections (active,
            standby) x (N-1) remote nodes = 4(N-1), whatever P

    Memory per node (bytes; Q = a QP's send queue and context,
    S = a process's receive pool):

      RC    P^2 (N-1) Q_rc + P S_rc
            Q_rc = rc_tx_queue_len x wqe_bytes + qp_ctx_bytes
            S_rc = rc_rx_queue_len x ib_seg_size
      DC    P (D Q_dci + qp_ctx_bytes + S_dc)
            Q_dci = dc_tx_queue_len x wqe_bytes + qp_ctx_bytes
            S_dc = dc_rx_queue_len x ib_seg_size
      XRC   P(N-1) Q_rc + P(N-1) qp_ctx_bytes + P S_rc   (a TGT QP has no
            queues of its own: it receives into the process's SRQ)
      UD    P (Q_ud + S_ud) + P^2 (N-1) ud_ep_bytes
            Q_ud = ud_tx_queue_len x wqe_bytes + qp_ctx_bytes
            S_ud = ud_rx_queue_len x ud_seg_size
      tcp   P^2 (N-1) tcp_conn_bytes
      srm   agent_base_bytes + P max(port_ring_bytes, port_rss_bytes)
            + 4(N-1) srm_conn_bytes + 2(N-1) chan_buf_bytes
            (a port's rings are one shared memfd the process and the
            agent both map: counted once; the agent's RSS per port is
            mostly those pages, so the larger of the two)

    The cost file resources.sh writes (key=value lines; --costs) replaces
    the defaults of tcp_conn_bytes, agent_base_bytes, port_rss_bytes and
    port_ring_bytes, and srm_conn_bytes by its tcp_conn_kernel_bytes;
    --cost KEY=VALUE replaces any cost (applied after the
    cost file).  --list-costs prints every key, its default and its
    source.  The verbs counts are what the transports need by their
    design; the memory is an estimate from queue lengths, not a
    measurement on a NIC (this machine has none).

OPTIONS
    --costs FILE      cost file of resources.sh (STEM-costs.txt)
    --cost KEY=VALUE  override one cost (bytes or entries; repeatable)
    --nodes LIST      node counts N, commas (default 16,64,256,1024,4096)
    --ppn LIST        processes per node P, commas (default 8,32,128)
    --dcis N          DCIs per process of DC (default 32; UCX 1.13's own
                      default, UCX_DC_MLX5_NUM_DCI, is 8)
    --out FILE        also write the report to FILE, the data (STEM.dat)
                      and plots (STEM-conn.png, STEM-mem.png) next to it
    --data FILE       write the numbers as lines "transport N P
                      connections bytes" to FILE ("-": stdout, instead of
                      the report)
    --no-plots        no gnuplot
    --list-costs      print the costs (key, default, source) and exit
    -h, --help        this text

EXIT STATUS
    0 done; 1 an unreadable cost file or a failed write; 2 bad usage.

EXAMPLES
    $PROG
    $PROG --costs bench-results/resources-costs.txt --out model.md
    $PROG --nodes 1024 --ppn 64 --cost qp_ctx_bytes=1024 --dcis 8
USAGE
}

list_costs() {
    local k
    printf '%-18s %-10s %s\n' key default source
    for k in "${COST_KEYS[@]}"; do
        printf '%-18s %-10s %s\n' "$k" "${COST[$k]}" "${COST_SRC[$k]}"
    done
}

# -------------------------------------------------------------- options --

ARGV=("$@")
COSTS='' OUT='' DATA='' PLOTS=1 DCIS=32 NODES_ARG=16,64,256,1024,4096 PPN_ARG=8,32,128
OVERRIDES=()
while [[ $# -gt 0 ]]; do
    case $1 in
    --costs)      need_arg "$@"; COSTS=$2; shift 2 ;;
    --costs=*)    COSTS=${1#*=}; shift ;;
    --cost)       need_arg "$@"; OVERRIDES+=("$2"); shift 2 ;;
    --cost=*)     OVERRIDES+=("${1#*=}"); shift ;;
    --nodes)      need_arg "$@"; NODES_ARG=$2; shift 2 ;;
    --nodes=*)    NODES_ARG=${1#*=}; shift ;;
    --ppn)        need_arg "$@"; PPN_ARG=$2; shift 2 ;;
    --ppn=*)      PPN_ARG=${1#*=}; shift ;;
    --dcis)       need_arg "$@"; DCIS=$2; shift 2 ;;
    --dcis=*)     DCIS=${1#*=}; shift ;;
    --out)        need_arg "$@"; OUT=$2; shift 2 ;;
    --out=*)      OUT=${1#*=}; shift ;;
    --data)       need_arg "$@"; DATA=$2; shift 2 ;;
    --data=*)     DATA=${1#*=}; shift ;;
    --no-plots)   PLOTS=0; shift ;;
    --list-costs) list_costs; exit 0 ;;
    -h|--help)    usage; exit 0 ;;
    *)            bad "unknown argument: $1" ;;
    esac
done
procs_list --nodes "$NODES_ARG" 1000000
NODES=("${PROCS[@]}")
procs_list --ppn "$PPN_ARG" 100000
PPNS=("${PROCS[@]}")
for n in "${NODES[@]}"; do (( n >= 2 )) || bad "--nodes: a cluster has at least 2 nodes, not $n"; done
if ! is_uint "$DCIS" || (( ${#DCIS} > 4 || DCIS < 1 || DCIS > 1024 )); then
    bad "--dcis must be 1..1024, not '$DCIS'"
fi
check_out

# set_cost KEY VALUE SOURCE: a cost must be a known key and a number.
set_cost() {
    [[ -v "COST_SRC[$1]" ]] || bad "unknown cost '$1' (see --list-costs)"
    is_number "$2" || bad "cost $1: '$2' is not a non-negative number"
    COST[$1]=$2
    COST_SRC[$1]=$3
}
FROM_FILE=()
if [[ -n $COSTS ]]; then
    [[ -r $COSTS ]] || die "cannot read the cost file '$COSTS'"
    while IFS='=' read -r k v; do
        k=${k//[[:space:]]/}
        [[ -n $k && $k != \#* ]] || continue
        v=${v//[[:space:]]/}
        case $k in
        tcp_conn_bytes|agent_base_bytes|port_rss_bytes|port_ring_bytes)
            is_number "$v" || die "$COSTS: $k='$v' is not a number"
            COST[$k]=$v
            COST_SRC[$k]="measured: $COSTS"
            FROM_FILE+=("$k") ;;
        tcp_conn_kernel_bytes)
            is_number "$v" || die "$COSTS: $k='$v' is not a number"
            COST[srm_conn_bytes]=$v
            COST_SRC[srm_conn_bytes]="measured: $COSTS (tcp_conn_kernel_bytes, the kernel's TCP socket object)" ;;
        esac
    done <"$COSTS"
    (( ${#FROM_FILE[@]} > 0 )) || die "$COSTS holds none of tcp_conn_bytes, agent_base_bytes, port_rss_bytes, port_ring_bytes"
fi
for o in "${OVERRIDES[@]}"; do
    [[ $o == *=* ]] || bad "--cost wants KEY=VALUE, not '$o'"
    set_cost "${o%%=*}" "${o#*=}" "--cost ${o%%=*}=${o#*=}"
done

# ---------------------------------------------------------------- model --

# model: "transport N P connections bytes" for every N, P and transport,
# computed by the formulas of --help (one awk program: one place).
model() {
    local a=() k
    for k in "${COST_KEYS[@]}"; do a+=(-v "$k=${COST[$k]}"); done
    awk "${a[@]}" -v D="$DCIS" -v nodes="${NODES[*]}" -v ppns="${PPNS[*]}" 'BEGIN {
        q_rc  = rc_tx_queue_len * wqe_bytes + qp_ctx_bytes
        s_rc  = rc_rx_queue_len * ib_seg_size
        q_dci = dc_tx_queue_len * wqe_bytes + qp_ctx_bytes
        s_dc  = dc_rx_queue_len * ib_seg_size
        q_ud  = ud_tx_queue_len * wqe_bytes + qp_ctx_bytes
        s_ud  = ud_rx_queue_len * ud_seg_size
        nn = split(nodes, Ns, " "); np = split(ppns, Ps, " ")
        for (i = 1; i <= nn; i++) for (j = 1; j <= np; j++) {
            N = Ns[i]; P = Ps[j]; R = N - 1
            out("RC",  N, P, P * P * R,   P * P * R * q_rc + P * s_rc)
            out("DC",  N, P, P * (D + 1), P * (D * q_dci + qp_ctx_bytes + s_dc))
            out("XRC", N, P, 2 * P * R,   P * R * q_rc + P * R * qp_ctx_bytes + P * s_rc)
            out("UD",  N, P, P,           P * (q_ud + s_ud) + P * P * R * ud_ep_bytes)
            out("tcp", N, P, P * P * R,   P * P * R * tcp_conn_bytes)
            out("srm", N, P, 4 * R,       agent_base_bytes + P * (port_ring_bytes > port_rss_bytes ? port_ring_bytes : port_rss_bytes) + 4 * R * srm_conn_bytes + 2 * R * chan_buf_bytes)
        }
    }
    function out(t, N, P, c, b) { printf "%s %d %d %.0f %.0f\n", t, N, P, c, b }'
}
MODEL=$(model)

if [[ $DATA == - ]]; then
    printf '%s\n' "$MODEL"
    exit 0
fi
if [[ -n $DATA ]]; then
    write_out "$DATA" printf '%s\n' "$MODEL"
fi

# ---------------------------------------------------------------- plots --

TRANSPORTS=(RC DC XRC UD tcp srm)
PLOT_PROBLEM='' PLOT_TERM=png
if [[ -n $OUT ]]; then
    out_stem model
    WORK=$(mktemp -d "${TMPDIR:-/tmp}/srm-model.XXXXXX")
    trap 'rm -rf "$WORK"' EXIT
    # STEM.dat: per transport and P a block of "N connections bytes", in
    # the order of the plot script's indices.
    plot_dat() {
        local t p
        printf '# %s: connections/QPs and memory (bytes) per node vs N; one block per transport and P\n' "$PROG"
        for t in "${TRANSPORTS[@]}"; do
            for p in "${PPNS[@]}"; do
                printf '# %s P=%s\n' "$t" "$p"
                awk -v t="$t" -v p="$p" '$1 == t && $3 == p { print $2, $4, $5 }' <<<"$MODEL"
                printf '\n\n'
            done
        done
    }
    plot_gp() {
        local kind i t pidx=$(( ${#PPNS[@]} - 1 )) sep
        plot_head
        printf 'set logscale xy\nset format y "%%.0e"\nset xlabel "N: nodes"\n'
        printf 'set key top left reverse Left\n'
        printf 'set xtics (%s)\n' "$(printf '%s\n' "${NODES[@]}" | paste -sd, -)"
        for kind in conn mem; do
            printf '\nset output %s\n' "$(gp_str "$PLOT_STEM-$kind.png")"
            if [[ $kind == conn ]]; then
                printf 'set title "model: connections or QPs per node, P = %s processes per node (full mesh; RC and tcp coincide)"\n' "${PPNS[-1]}"
                printf 'set ylabel "connections / QPs per node"\n'
            else
                printf 'set title "model: transport memory per node, P = %s processes per node (full mesh)"\n' "${PPNS[-1]}"
                printf 'set ylabel "bytes per node"\n'
            fi
            printf 'plot '
            sep=''
            for i in "${!TRANSPORTS[@]}"; do
                t=${TRANSPORTS[$i]}
                printf '%s%s index %d using 1:%d title "%s" lw 2' "$sep" "$(gp_str "$PLOT_STEM.dat")" \
                    $(( i * ${#PPNS[@]} + pidx )) "$([[ $kind == conn ]] && echo 2 || echo 3)" "$t"
                sep=', '
            done
            printf '\n'
        done
        printf '\nunset output\n'
    }
    write_out "$PLOT_DIR/$PLOT_STEM.dat" plot_dat
    if (( PLOTS )); then
        plot_terminal
        write_out "$PLOT_DIR/$PLOT_STEM-plots.gp" plot_gp
        plot_run "$PLOT_DIR" "$PLOT_STEM-plots.gp" "$PLOT_STEM-conn.png" "$PLOT_STEM-mem.png"
        [[ -z $PLOT_PROBLEM ]] || info "WARNING: no plots: $PLOT_PROBLEM"
    fi
fi

# --------------------------------------------------------------- report --

# The awk function human(BYTES): binary units, 3 significant digits.
AWK_HUMAN='function human(b,   u, i) { split("B KiB MiB GiB TiB PiB EiB", u, " "); i = 1
    while (b >= 1024 && i < 7) { b /= 1024; i++ }
    if (i == 1) return sprintf("%d B", b)
    return sprintf(b < 10 ? "%.2f %s" : (b < 100 ? "%.1f %s" : "%.0f %s"), b, u[i]) }'
# human BYTES: BYTES in binary units.
human() { awk -v b="$1" "$AWK_HUMAN"' BEGIN { print human(b) }'; }

# model_table conn|mem: the rows of a table (N, P, one cell per transport;
# mem: and RC / srm) from the model's lines on stdin.
model_table() {
    awk -v kind="$1" -v order="${TRANSPORTS[*]}" "$AWK_HUMAN"'
        function commas(x,   s, o) { s = sprintf("%.0f", x); o = ""
            while (length(s) > 3) { o = "," substr(s, length(s) - 2) o; s = substr(s, 1, length(s) - 3) }
            return s o }
        { k = $2 " " $3; if (!(k in seen)) { seen[k] = 1; keys[++n] = k }
          c[k, $1] = $4; b[k, $1] = $5 }
        END { nt = split(order, t, " ")
              for (i = 1; i <= n; i++) {
                  split(keys[i], np, " "); row = "| " np[1] " | " np[2] " "
                  for (j = 1; j <= nt; j++)
                      row = row "| " (kind == "conn" ? commas(c[keys[i], t[j]]) : human(b[keys[i], t[j]])) " "
                  if (kind == "mem") row = row sprintf("| %.1fx ", b[keys[i], "RC"] / b[keys[i], "srm"])
                  print row "|" } }'
}

# times_of KEY1 KEY2: COST[KEY1] x COST[KEY2].
times_of() { awk -v a="${COST[$1]}" -v b="${COST[$2]}" 'BEGIN { printf "%.0f", a * b }'; }
# q_plus_ctx KEY: COST[KEY] x wqe_bytes + qp_ctx_bytes (a QP's send queue).
q_plus_ctx() {
    awk -v a="${COST[$1]}" -v b="${COST[wqe_bytes]}" -v c="${COST[qp_ctx_bytes]}" 'BEGIN { printf "%.0f", a * b + c }'
}

report() {
    local k
    printf '# Scaling model: connections, QPs and memory per node\n\n'
    # shellcheck disable=SC2016  # backquotes for markdown
    printf 'Full mesh of N nodes x P processes per node: every process talks to every process on every other node. Counts are per **node** unless a line says per process; memory is the transport'"'"'s own (queues, receive pools, socket and agent state), not the application'"'"'s. DC uses D = %d DCIs per process. Generated by `%s`.\n\n' \
        "$DCIS" "$(quote "$PROG" "${ARGV[@]}")"
    printf '## Formulas\n\n'
    printf '| transport | per process | per node: connections / QPs | per node: memory |\n|---|---|---|---|\n'
    printf '| RC | P(N-1) QPs (one per remote process) | P^2 (N-1) | P^2 (N-1) Q_rc + P S_rc |\n'
    printf '| DC | D DCIs + 1 DCT, whatever N | P (D+1) | P (D Q_dci + ctx + S_dc) |\n'
    printf '| XRC | N-1 INI QPs (one per remote node) | P(N-1) INI + P(N-1) TGT = 2P(N-1) | P(N-1) Q_rc + P(N-1) ctx + P S_rc |\n'
    printf '| UD | 1 QP (+ state per remote peer, P(N-1)) | P | P (Q_ud + S_ud) + P^2 (N-1) ud_ep |\n'
    printf '| tcp (UCX) | P(N-1) sockets | P^2 (N-1) | P^2 (N-1) tcp_conn |\n'
    printf '| srm | 0 (a UNIX socket and rings to the agent) | 2 channels x 2 connections x (N-1) = 4(N-1) | agent_base + P max(port_ring, port_rss) + 4(N-1) srm_conn + 2(N-1) chan_buf |\n\n'
    printf 'Q_rc = rc_tx_queue_len x wqe_bytes + ctx = %s; S_rc = rc_rx_queue_len x ib_seg_size = %s; Q_dci = dc_tx_queue_len x wqe_bytes + ctx = %s; S_dc = dc_rx_queue_len x ib_seg_size = %s; Q_ud = ud_tx_queue_len x wqe_bytes + ctx = %s; S_ud = ud_rx_queue_len x ud_seg_size = %s; ctx = qp_ctx_bytes. A TGT QP has no queues of its own (it receives into the SRQ). srm'"'"'s connections are TCP sockets on the tcp wire (RC QPs on the verbs wire: the same 4(N-1); there srmd registers one shared receive queue and one send pool per device, 3.5 MiB with the defaults, and the outgoing stream of each channel in use, which its QPs send from in place: 512 KiB each (mapped twice, 1 MiB of address space), at most 2(N-1), or none with UCX_SRM_VERBS_IN_PLACE=n; as test_vm_qpcount asserts; and a completion queue per QP).\n\n' \
        "$(human "$(q_plus_ctx rc_tx_queue_len)")" "$(human "$(times_of rc_rx_queue_len ib_seg_size)")" \
        "$(human "$(q_plus_ctx dc_tx_queue_len)")" "$(human "$(times_of dc_rx_queue_len ib_seg_size)")" \
        "$(human "$(q_plus_ctx ud_tx_queue_len)")" "$(human "$(times_of ud_rx_queue_len ud_seg_size)")"

    printf '## Costs\n\n| cost | value | source |\n|---|---:|---|\n'
    for k in "${COST_KEYS[@]}"; do
        printf '| %s | %s | %s |\n' "$k" "${COST[$k]}" "${COST_SRC[$k]}"
    done

    printf '\n## Connections / QPs per node\n\n'
    table_head N P "${TRANSPORTS[@]}"
    model_table conn <<<"$MODEL"
    printf '\n## Memory per node\n\n'
    table_head N P "${TRANSPORTS[@]}" "RC / srm"
    model_table mem <<<"$MODEL"
    printf '\nsrm'"'"'s per-node memory is dominated by P x port_ring_bytes (the rings each process maps, %s) at small N and by 2(N-1) x chan_buf_bytes (channel send buffers, allocated on a channel'"'"'s first use) at large N; RC'"'"'s by its P^2 (N-1) QPs.\n' \
        "$(human "${COST[port_ring_bytes]}")"
    if [[ -n $OUT ]]; then
        printf '\n## Plots\n\n'
        if (( ! PLOTS )); then
            printf 'Plots not drawn (--no-plots).\n'
        elif [[ -n $PLOT_PROBLEM ]]; then
            printf '**No plots: %s.**\n' "$PLOT_PROBLEM"
        else
            printf '![model: connections or QPs per node vs N](%s)\n\n' "$(md_dest "$PLOT_LINK$PLOT_STEM-conn.png")"
            printf '![model: memory per node vs N](%s)\n' "$(md_dest "$PLOT_LINK$PLOT_STEM-mem.png")"
        fi
        printf '\nData: %s.dat (blocks per transport and P: N, connections, bytes); gnuplot script %s-plots.gp.\n' \
            "$PLOT_STEM" "$PLOT_STEM"
    fi
}

if [[ -n $OUT ]]; then
    write_out "$OUT" report
fi
report
