#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
#
# test_bench_cpu_accounting: the benchmarks' "was the machine idle" check
# (cpu_mark / judge_run in contrib/bench/lib.sh) tells our processes from
# other ones:
#   1. a process the script starts and never waits for (as mpirun leaves
#      the ranks of other hosts) burning 1 s of CPU counts as ours (before
#      the cgroup it did not, so every MPI job was marked disturbed);
#   2. a process outside the script's cgroup burning 1 s is not ours and
#      counts as foreign: the run is disturbed.
# (Other load on the machine can only add foreign CPU, so the checks are
# on our share, and on foreign CPU being at least the stranger's.)
#   3. foreign_load names a process that keeps running (by its command
#      name), but not one whose PID it is given as ours nor one in our
#      cgroup;
#   4. the cgroup is gone after cpu_group_leave.
# SKIP when no CPU accounting cgroup can be made (not root, no cgroups).
#
# srm-test-timeout: 60
. "$(dirname "$0")/lib.sh"

# shellcheck disable=SC2034  # read by the functions of contrib/bench/lib.sh
PROG=test_bench_cpu_accounting
# shellcheck source=../../contrib/bench/lib.sh
. "$SRM_SRCDIR/contrib/bench/lib.sh"
WORK=$(mktemp -d)
trap 'rc=$?; srm_cleanup; cpu_group_leave; rm -rf "$WORK"; exit $rc' EXIT

cpu_group_join srm-test-acct 2>"$WORK/join.err"
[ -n "$CPU_GROUP" ] || srm_skip "no CPU accounting cgroup: $(cat "$WORK/join.err")"

# The burner spins until it has used 1 s of CPU, then writes to the FIFO
# named by its argument (waiting on it costs the test no CPU).
cat >"$WORK/srm-acct-burn" <<'BURNER'
#!/bin/bash
ticks() { awk '{ print $14 + $15 }' /proc/$$/stat; }
goal=$(( $(getconf CLK_TCK) + $(ticks) ))
while [ "$(ticks)" -lt "$goal" ]; do
    for (( i = 0; i < 20000; i++ )); do :; done
done
echo done >"$1"
BURNER
chmod +x "$WORK/srm-acct-burn"

# measured LABEL: mark, start_LABEL (which starts the burner and returns
# at once), wait for the burner to finish, mark, judge.
measured() {
    mkfifo "$WORK/$1.done"
    mark_start
    "start_$1"
    read -r _ <"$WORK/$1.done"
    mark_end
    judge_run ""
    OURS_CPU=$(awk -v m0="$MARK0" -v m1="$MARK1" 'BEGIN {
        split(m0, a, " "); split(m1, b, " "); printf "%.2f", b[2] - a[2] }')
}

# 1. Ours, but orphaned at once (a double fork): no one here reaps it.
start_orphan() { ( "$WORK/srm-acct-burn" "$WORK/orphan.done" & ); }
measured orphan
if awk -v o="$OURS_CPU" 'BEGIN { exit !(o >= 0.9) }'; then
    srm_pass "an orphaned process of ours (1 s of CPU) is ours: ${OURS_CPU} s ours, ${FOREIGN_CPU} s foreign"
else
    srm_fail "an orphaned process of ours was not counted as ours: ${OURS_CPU} s ours, ${FOREIGN_CPU} s foreign"
fi

# 2. A stranger: moved to the parent cgroup first, as if started by
# someone else.
start_stranger() {
    ( echo "$BASHPID" >"${CPU_GROUP%/*}/cgroup.procs"
      exec "$WORK/srm-acct-burn" "$WORK/stranger.done" ) &
}
measured stranger
wait
if [ "$DISTURBED" = 1 ] && awk -v o="$OURS_CPU" -v f="$FOREIGN_CPU" 'BEGIN { exit !(o < 0.5 && f >= 0.9) }'; then
    srm_pass "a process outside our cgroup (1 s of CPU) is foreign: ${OURS_CPU} s ours, ${FOREIGN_CPU} s foreign, disturbed"
else
    srm_fail "a foreign process was not told apart: ${OURS_CPU} s ours, ${FOREIGN_CPU} s foreign, disturbed=$DISTURBED"
fi

# 3. Three spinners, copies of bash under names of their own: one given
# as ours, one in our cgroup (started here), one a stranger (moved out).
for n in ours cgrp them; do cp "$(command -v bash)" "$WORK/srm-spin-$n"; done
"$WORK/srm-spin-ours" -c 'while :; do :; done' & ours=$!
"$WORK/srm-spin-cgrp" -c 'while :; do :; done' & cgrp=$!
( echo "$BASHPID" >"${CPU_GROUP%/*}/cgroup.procs"
  exec "$WORK/srm-spin-them" -c 'while :; do :; done' ) & them=$!
srm_track "$ours"; srm_track "$cgrp"; srm_track "$them"
seen=
for (( i = 0; i < 20; i++ )); do      # until the stranger has been seen
    seen=$(foreign_load "$ours")
    [[ " $seen " == *" srm-spin-them "* ]] && break
done
for p in "$ours" "$cgrp" "$them"; do srm_kill_pid "$p" 1; done
if [[ " $seen " == *" srm-spin-them "* && " $seen " != *" srm-spin-ours "* &&
      " $seen " != *" srm-spin-cgrp "* ]]; then
    srm_pass "foreign_load names a running stranger, not our PID nor our cgroup's: '$seen'"
else
    srm_fail "foreign_load: '$seen' (wanted srm-spin-them only)"
fi

group=$CPU_GROUP
cpu_group_leave
if [ -z "$CPU_GROUP" ] && [ ! -d "$group" ]; then
    srm_pass "cpu_group_leave removed $group"
else
    srm_fail "$group is still there after cpu_group_leave"
fi

srm_done
