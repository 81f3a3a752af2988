#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
#
# test_bench_wake_cost: srm_wake_cost (contrib/bench), what waking a
# sleeping process costs on this machine, which hosts.sh and mesh.sh report:
#   1. every case completes its wakeups and prints its line, with
#      0 < p50 <= p99 (a wakeup that is lost leaves the waker waiting: the
#      run then fails on this test's time limit instead);
#   2. --case runs only the cases named;
#   3. a process allowed one CPU measures the same-CPU case and says that it
#      skips the two others, instead of pinning threads where it may not;
#   4. bad arguments are refused with exit 2 and a message, and run nothing.
#
# srm-test-timeout: 120
. "$(dirname "$0")/lib.sh"
srm_find_build

wake=$SRM_BUILD_DIR/srm_wake_cost
[ -x "$wake" ] || srm_skip "$wake not built"
out=$(mktemp)
trap 'rm -f "$out"' EXIT

well_formed='$1 == "wake_cost" && $3 == "p50" && $5 == "p99" && $7 == "iters" && $4 > 0 && $4 <= $6'

[ "$(nproc)" -ge 2 ] || srm_skip "one CPU allowed here: the cases across CPUs cannot run"
if timeout 60 "$wake" --iters 200 >"$out" 2>&1; then
    cases=$(awk "$well_formed"' && $8 == 200 { print $2 }' "$out" | sort | tr '\n' ' ')
    if [ "$cases" = "other-cpu-busy other-cpu-idle same-cpu " ] &&
       [ "$(wc -l <"$out")" = 3 ]; then
        srm_pass "all three cases, 200 wakeups each: $(awk '{ printf "%s %s us; ", $2, $4 }' "$out")"
    else
        srm_fail "want a well-formed line for each of the 3 cases, got: $(cat "$out")"
    fi
else
    srm_fail "srm_wake_cost --iters 200 failed or hung: $(cat "$out")"
fi

if timeout 60 "$wake" --iters 50 --case same-cpu >"$out" 2>&1 &&
   [ "$(wc -l <"$out")" = 1 ] &&
   [ "$(awk "$well_formed"' && $2 == "same-cpu"' "$out" | wc -l)" = 1 ]; then
    srm_pass "--case same-cpu: that case alone"
else
    srm_fail "--case same-cpu: $(cat "$out")"
fi

cpu=$(awk '/^Cpus_allowed_list/ { split($2, a, "[-,]"); print a[1] }' /proc/self/status)
if timeout 60 taskset -c "$cpu" "$wake" --iters 50 >"$out" 2>&1 &&
   [ "$(awk "$well_formed"' && $2 == "same-cpu"' "$out" | wc -l)" = 1 ] &&
   [ "$(grep -c -E '^wake_cost other-cpu-(busy|idle) skipped: one CPU allowed$' "$out")" = 2 ] &&
   [ "$(wc -l <"$out")" = 3 ]; then
    srm_pass "allowed CPU $cpu only: same-cpu measured, the other two skipped with a reason"
else
    srm_fail "taskset -c $cpu: $(cat "$out")"
fi

for args in "--iters 5" "--iters x" "--case nosuch" "extra"; do
    # shellcheck disable=SC2086  # the words are the arguments
    "$wake" $args >"$out" 2>&1
    rc=$?
    if [ "$rc" = 2 ] && grep -q '^srm_wake_cost: ' "$out" && ! grep -q '^wake_cost ' "$out"; then
        srm_pass "'$args' refused: $(head -1 "$out")"
    else
        srm_fail "'$args': exit $rc (want 2, a message, no run): $(cat "$out")"
    fi
done
srm_done
