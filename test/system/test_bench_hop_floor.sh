#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
#
# test_bench_hop_floor: srm_hop_floor (contrib/bench), the agent hop's cost
# without srm that mesh.sh reports next to the ping-pong:
#   1. every mode completes its round trips and prints its line, with
#      0 < p50 <= p99 (a relay that loses a message, or a doorbell that is
#      not rung, leaves a rank waiting: the mode then fails on its time
#      limit instead);
#   2. --mode runs only the modes named, with agents that never spin
#      (--spin-us 0) too, the writer modes (ranks that write the shared
#      socket themselves) among them;
#   3. bad arguments are refused with exit 2 and a message, and run nothing.
#
# srm-test-timeout: 120
. "$(dirname "$0")/lib.sh"
srm_find_build

floor=$SRM_BUILD_DIR/srm_hop_floor
[ -x "$floor" ] || srm_skip "$floor not built"
out=$(mktemp)
trap 'rm -f "$out"' EXIT

if "$floor" --iters 300 >"$out" 2>&1; then
    modes=$(awk '$1 == "hop_floor" && $3 == "p50" && $5 == "p99" && $7 == "iters" &&
                 $8 == 300 && $4 > 0 && $4 <= $6 { print $2 }' "$out" | sort | tr '\n' ' ')
    if [ "$modes" = "agents-busy agents-yield direct-busy direct-yield writer-busy writer-yield " ]; then
        srm_pass "all six modes, 300 round trips each: $(awk '{ printf "%s %s us; ", $2, $4 }' "$out")"
    else
        srm_fail "want a well-formed line for each of the 6 modes, got: $(cat "$out")"
    fi
else
    srm_fail "srm_hop_floor --iters 300 failed: $(cat "$out")"
fi

if "$floor" --iters 100 --spin-us 0 --mode agents-yield >"$out" 2>&1 &&
   [ "$(wc -l <"$out")" = 1 ] && grep -q '^hop_floor agents-yield p50 ' "$out"; then
    srm_pass "--spin-us 0 --mode agents-yield: that mode alone"
else
    srm_fail "--spin-us 0 --mode agents-yield: $(cat "$out")"
fi

if "$floor" --iters 100 --mode writer-busy --mode writer-yield >"$out" 2>&1 &&
   [ "$(awk '$1 == "hop_floor" && $2 ~ /^writer-(busy|yield)$/ && $4 > 0' "$out" | wc -l)" = 2 ] &&
   [ "$(wc -l <"$out")" = 2 ]; then
    srm_pass "--mode writer-busy --mode writer-yield: those two alone"
else
    srm_fail "--mode writer-busy --mode writer-yield: $(cat "$out")"
fi

for args in "--iters 5" "--iters x" "--spin-us -1" "--mode nosuch" "extra"; do
    # shellcheck disable=SC2086  # the words are the arguments
    "$floor" $args >"$out" 2>&1
    rc=$?
    if [ "$rc" = 2 ] && grep -q '^srm_hop_floor: ' "$out" && ! grep -q '^hop_floor ' "$out"; then
        srm_pass "'$args' refused: $(head -1 "$out")"
    else
        srm_fail "'$args': exit $rc (want 2, a message, no run): $(cat "$out")"
    fi
done
srm_done
