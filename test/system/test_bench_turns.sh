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
# The gate of an MPI job (gate_shut / gate_open, and bench_gate.h in the
# ranks), which lets a job start up before its turn:
#   4. two ranks arrive at a shut gate at once, but pass it only after the
#      script that held the turn gave it; gate_open returns then too;
#   5. without SRM_BENCH_TURNS no gate is shut and the ranks go through;
#      a rank whose gate file is missing warns and goes on;
#   6. turn_give_at gives the turn when the job prints its result line,
#      while the job still runs.
#
# srm-test-timeout: 60
. "$(dirname "$0")/lib.sh"

srm_require_cmd flock
srm_require_cmd cc
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

# A rank stand-in: waits at the gate as srm_mesh and srm_flowgen do, then
# prints when it passed (seconds, as bash's EPOCHREALTIME).
cat >"$WORK/rank.c" <<'RANK'
#include "bench_gate.h"
#include <time.h>
int main(void)
{
    struct timespec ts;

    bench_gate_wait("gate-rank");
    clock_gettime(CLOCK_REALTIME, &ts);
    printf("%ld.%06ld\n", (long)ts.tv_sec, ts.tv_nsec / 1000);
    return 0;
}
RANK
if ! cc -O2 -Wall -Werror -I"$SRM_SRCDIR/contrib/bench" -o "$WORK/rank" "$WORK/rank.c" 2>"$WORK/cc.log"; then
    srm_fail "the rank stand-in including bench_gate.h does not compile"
    cat "$WORK/cc.log"
fi
# later A B: is time A after time B?
later() { awk -v a="$1" -v b="$2" 'BEGIN { exit !(a > b) }'; }

# 4. the gate opens with the turn, not before
rm -f "$WORK/held" "$WORK/given_at"
SRM_BENCH_TURNS=$LOCK "$WORK/script" holder 'turn_take; : >'"$WORK"'/held; nap 1; echo $EPOCHREALTIME >'"$WORK"'/given_at; turn_give' & h=$!
for (( i = 0; i < 100; i++ )); do [ -e "$WORK/held" ] && break; sleep 0.05; done
job='gate_shut '"$WORK"'/gate
     ( env "${GATE_ENV[@]}" '"$WORK"'/rank >'"$WORK"'/rank.1 & env "${GATE_ENV[@]}" '"$WORK"'/rank >'"$WORK"'/rank.2 & wait ) & ranks=$!
     gate_open "$ranks" 2 '"$WORK"'/gate "$GATE_FD"
     echo $EPOCHREALTIME >'"$WORK"'/opened_at
     turn_give; wait "$ranks"'
rc=0
SRM_BENCH_TURNS=$LOCK timeout 10 "$WORK/script" gated "$job" || rc=$?
wait "$h" 2>/dev/null
given=$(cat "$WORK/given_at" 2>/dev/null || echo none)
opened=$(cat "$WORK/opened_at" 2>/dev/null || echo 0)
r1=$(cat "$WORK/rank.1" 2>/dev/null || echo 0)
r2=$(cat "$WORK/rank.2" 2>/dev/null || echo 0)
arrived=$(wc -c <"$WORK/gate" 2>/dev/null || echo 0)
if [ "$rc" = 0 ] && [ "$arrived" = 2 ] && later "$r1" "$given" && later "$r2" "$given" &&
   later "$opened" "$given"; then
    srm_pass "both ranks waited at the gate ($arrived arrived) until the held turn was given, and so did gate_open"
else
    srm_fail "gate: exit $rc, $arrived arrived; turn given at $given, gate_open returned at $opened, ranks passed at $r1 and $r2"
fi

# 5. no turns, no gate
rc=0
out=$(env -u SRM_BENCH_TURNS timeout 5 "$WORK/script" free \
      'gate_shut '"$WORK"'/gate2; echo "env ${#GATE_ENV[@]} fd ${GATE_FD:-none}"; env "${GATE_ENV[@]}" '"$WORK"'/rank >/dev/null; gate_open $$ 1 '"$WORK"'/gate2 "$GATE_FD"' 2>&1) || rc=$?
if [ "$rc" = 0 ] && [ "$out" = "env 0 fd none" ] && [ ! -e "$WORK/gate2" ]; then
    srm_pass "without SRM_BENCH_TURNS no gate is shut and a rank goes through"
else
    srm_fail "without SRM_BENCH_TURNS: exit $rc, output '$out'"
fi
rc=0
out=$(SRM_BENCH_GATE=$WORK/no/such/gate timeout 5 "$WORK/rank" 2>&1) || rc=$?
case $out in
*"warning: cannot write to SRM_BENCH_GATE $WORK/no/such/gate"*"not waiting"*) ok=1 ;;
*) ok=0 ;;
esac
if [ "$rc" = 0 ] && [ "$ok" = 1 ]; then
    srm_pass "a rank with a missing gate file says so and goes on"
else
    srm_fail "a rank with a missing gate file: exit $rc, output '$out'"
fi

# 6. the turn is given at the result line, not at the job's end
job='{ sleep 0.3; echo "result x=1"; sleep 5; } >'"$WORK"'/job.out & j=$!
     turn_take; turn_give_at "$j" '"$WORK"'/job.out "result "
     if pid_alive "$j" && has_line '"$WORK"'/job.out "result "; then echo early; fi
     kill "$j"'
rc=0
out=$(SRM_BENCH_TURNS=$LOCK timeout 10 "$WORK/script" result "$job" 2>&1) || rc=$?
if [ "$rc" = 0 ] && [ "$out" = early ]; then
    srm_pass "turn_give_at gives the turn at the result line while the job runs on"
else
    srm_fail "turn_give_at: exit $rc, output '$out' (want 'early')"
fi
srm_done
