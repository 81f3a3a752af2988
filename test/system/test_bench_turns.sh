#!/bin/bash
#
# test_bench_turns: turn_take / turn_give (contrib/bench/lib.sh), with
# which the experiments of eval.sh --smoke take turns for their
# busy-polling runs:
#   1. two scripts taking 3 turns each never hold one at the same time;
#   2. a turn given by a script whose child (an agent, say) inherited the
#      lock's descriptor is free for the other script while the child
#      still runs;
#   3. without SRM_BENCH_TURNS no turn is taken: turn_take returns while
#      another script holds the lock.
#
# srm-test-timeout: 60
. "$(dirname "$0")/lib.sh"

srm_require_cmd flock
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
LOCK=$WORK/turns.lock
: >"$LOCK"

# A script of the harness: sources lib.sh, then runs its arguments.
cat >"$WORK/script" <<SCRIPT
#!/bin/bash
set -euo pipefail
PROG=turns-\$1
. "$SRM_SRCDIR/contrib/bench/lib.sh"
eval "\$2"
SCRIPT
chmod +x "$WORK/script"

# 1. mutual exclusion
taker='for i in 1 2 3; do turn_take; echo "in $PROG" >>'"$WORK"'/log; nap 0.2; echo "out $PROG" >>'"$WORK"'/log; turn_give; done'
SRM_BENCH_TURNS=$LOCK "$WORK/script" a "$taker" & a=$!
SRM_BENCH_TURNS=$LOCK "$WORK/script" b "$taker" & b=$!
rc=0
wait "$a" || rc=$?
wait "$b" || rc=$?
overlaps=$(awk '$1 == "in" { if (inside) bad++; inside = 1 } $1 == "out" { inside = 0 } END { print bad + 0 }' "$WORK/log")
turns=$(grep -c '^in ' "$WORK/log" || true)
if [ "$rc" = 0 ] && [ "$turns" = 6 ] && [ "$overlaps" = 0 ]; then
    srm_pass "two scripts, 3 turns each: $turns turns, none at the same time"
else
    srm_fail "two scripts, 3 turns each: exit $rc, $turns turns, $overlaps overlapping"
    cat "$WORK/log"
fi

# 2. a child that inherited the descriptor does not keep the turn
holder='turn_take; sleep 30 & echo $! >'"$WORK"'/child; turn_give; echo given >'"$WORK"'/given; wait'
SRM_BENCH_TURNS=$LOCK "$WORK/script" holder "$holder" & h=$!
for (( i = 0; i < 100; i++ )); do [ -e "$WORK/given" ] && break; sleep 0.05; done
child=$(cat "$WORK/child" 2>/dev/null || true)
rc=0
SRM_BENCH_TURNS=$LOCK timeout 5 "$WORK/script" other 'turn_take; turn_give' || rc=$?
if [ -n "$child" ] && kill -0 "$child" 2>/dev/null && [ "$rc" = 0 ]; then
    srm_pass "a turn given while a child holding the descriptor runs on is free for another script"
else
    srm_fail "a given turn was not free while the child ran (child '${child}', other script's exit $rc)"
fi
[ -z "$child" ] || kill "$child" 2>/dev/null
wait "$h" 2>/dev/null

# 3. no SRM_BENCH_TURNS, no turns
SRM_BENCH_TURNS=$LOCK "$WORK/script" holder 'turn_take; echo held >'"$WORK"'/held; exec sleep 10' & h=$!
for (( i = 0; i < 100; i++ )); do [ -e "$WORK/held" ] && break; sleep 0.05; done
rc=0
env -u SRM_BENCH_TURNS timeout 5 "$WORK/script" free 'turn_take; turn_give' || rc=$?
if [ -e "$WORK/held" ] && [ "$rc" = 0 ]; then
    srm_pass "without SRM_BENCH_TURNS turn_take does not wait for a held turn"
else
    srm_fail "without SRM_BENCH_TURNS: exit $rc (124: it waited for the held turn)"
fi
kill "$h" 2>/dev/null
wait "$h" 2>/dev/null
srm_done
