#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
#
# test_bench_model: contrib/bench/model.sh (experiment 6) computes what
# its formulas say, at every N and P of its default tables:
#   connections per node  RC = tcp = P^2 (N-1), DC = P (D+1), XRC =
#                         2P(N-1), UD = P, srm = 4(N-1) (constant in P);
#   memory per node       each transport's formula with round costs set
#                         by --cost, and the cost file (--costs) applied;
# bad costs and options are usage errors (exit 2); --out writes the report
# with both tables (and the plots when gnuplot is there).
#
. "$(dirname "$0")/lib.sh"

model=$SRM_SRCDIR/contrib/bench/model.sh
[ -x "$model" ] || srm_skip "$model not found"

# check LABEL AWK-CONDITION MODEL-ARGS...: every "t N P conns bytes" line
# of model.sh --data - satisfies the condition (fields t N P c b).
check() {
    local label=$1 cond=$2 out bad
    shift 2
    if ! out=$("$model" --data - "$@" 2>&1); then
        srm_fail "$label: model.sh $* failed: $out"
        return
    fi
    cond=$(tr '\n' ' ' <<<"$cond")
    if ! bad=$(awk "{ t = \$1; N = \$2; P = \$3; c = \$4; b = \$5; R = N - 1 }
                    !($cond) { print }" <<<"$out" 2>&1); then
        srm_fail "$label: awk: $bad"
        return
    fi
    bad=$(head -n 3 <<<"$bad")
    lines=$(wc -l <<<"$out")
    if [ -z "$bad" ] && [ "$lines" -eq 90 ]; then
        srm_pass "$label ($lines lines)"
    else
        srm_fail "$label: $lines lines; against the formula: ${bad:-none}"
    fi
}

check "connections per node follow the formulas" '
    (t == "RC"  && c == P * P * R)   || (t == "tcp" && c == P * P * R) ||
    (t == "DC"  && c == P * 33)      || (t == "XRC" && c == 2 * P * R) ||
    (t == "UD"  && c == P)           || (t == "srm" && c == 4 * R)'
check "DC with --dcis 8: P x 9" 't != "DC" || c == 9 * P' --dcis 8

costs=(--cost wqe_bytes=10 --cost qp_ctx_bytes=7 --cost rc_tx_queue_len=100
       --cost rc_rx_queue_len=1000 --cost ib_seg_size=3 --cost dc_tx_queue_len=50
       --cost dc_rx_queue_len=2000 --cost ud_tx_queue_len=20 --cost ud_rx_queue_len=30
       --cost ud_seg_size=5 --cost ud_ep_bytes=11 --cost tcp_conn_bytes=1000
       --cost srm_conn_bytes=900 --cost agent_base_bytes=5000 --cost port_rss_bytes=40
       --cost port_ring_bytes=600 --cost chan_buf_bytes=300)
check "memory per node follows the formulas (round costs)" '
    (t == "RC"  && b == P * P * R * 1007 + P * 3000) ||
    (t == "DC"  && b == P * (32 * 507 + 7 + 6000)) ||
    (t == "XRC" && b == P * R * 1007 + P * R * 7 + P * 3000) ||
    (t == "UD"  && b == P * (207 + 150) + P * P * R * 11) ||
    (t == "tcp" && b == P * P * R * 1000) ||
    (t == "srm" && b == 5000 + P * 600 + 4 * R * 900 + 2 * R * 300)' "${costs[@]}"
check "srm memory: a port costs the larger of its rings and the agent RSS per port" '
    t != "srm" || b == 5000 + P * 700 + 4 * R * 900 + 2 * R * 300' "${costs[@]}" --cost port_rss_bytes=700

# srm's connections do not depend on P, tcp's grow as P^2: per N, compare
# the smallest and the largest P.
out=$("$model" --data -)
verdict=$(awk '{ c[$1 " " $2 " " $3] = $4; if (!($3 in ps)) { ps[$3] = 1; np++ }; ns[$2] = 1 }
    END { for (n in ns) {
              if (c["srm " n " 8"] != c["srm " n " 128"]) bad = bad " srm@" n
              if (c["tcp " n " 128"] != c["tcp " n " 8"] * 256) bad = bad " tcp@" n }
          print (bad == "" ? "ok" : bad) }' <<<"$out")
if [ "$verdict" = ok ]; then
    srm_pass "srm constant in P, tcp x256 from P=8 to P=128 at every N"
else
    srm_fail "scaling in P:$verdict"
fi

# The cost file of resources.sh replaces the defaults.
cf=$SRM_LOG/costs.txt
printf '# test\ntcp_conn_bytes=2000\ntcp_conn_kernel_bytes=700\nagent_base_bytes=1\nport_rss_bytes=2\nport_ring_bytes=3\nrank_rss_srm_1=99\n' >"$cf"
check "--costs: tcp_conn_bytes, the socket object, agent and port costs from the file" '
    (t == "tcp" && b == P * P * R * 2000) || (t == "srm" && b == 1 + P * 3 + 4 * R * 700 + 2 * R * 393248) ||
    (t != "tcp" && t != "srm")' --costs "$cf"

# Usage errors.
for bad in "--cost nosuch=1" "--cost tcp_conn_bytes=x" "--nodes 1" "--dcis 0" "--bogus"; do
    # shellcheck disable=SC2086  # the words of the option
    "$model" $bad >"$SRM_LOG/usage.log" 2>&1
    rc=$?
    if [ "$rc" = 2 ]; then
        srm_pass "usage error: $bad (exit 2)"
    else
        srm_fail "$bad: exit $rc, want 2"
    fi
done
if "$model" --costs /nonexistent >/dev/null 2>&1; then
    srm_fail "--costs of a missing file succeeded"
else
    srm_pass "--costs of a missing file fails"
fi

# The report.
rm -rf "$SRM_LOG/out" && mkdir -p "$SRM_LOG/out"
if "$model" --out "$SRM_LOG/out/model.md" >"$SRM_LOG/model.out" 2>&1 &&
   grep -q '^## Formulas' "$SRM_LOG/out/model.md" &&
   grep -q '^## Connections / QPs per node' "$SRM_LOG/out/model.md" &&
   grep -q '^## Memory per node' "$SRM_LOG/out/model.md" &&
   [ "$(grep -c '^| 4096 | ' "$SRM_LOG/out/model.md")" = 6 ]; then
    srm_pass "--out: report with formulas and both tables (15 rows each)"
else
    srm_fail "--out: report incomplete"
    srm_show_log "$SRM_LOG/model.out"
fi
if command -v gnuplot >/dev/null 2>&1; then
    if [ -s "$SRM_LOG/out/model-conn.png" ] && [ -s "$SRM_LOG/out/model-mem.png" ]; then
        srm_pass "--out: plots model-conn.png, model-mem.png"
    else
        srm_fail "--out: no plots"
        srm_show_log "$SRM_LOG/model.out"
    fi
fi

srm_done
