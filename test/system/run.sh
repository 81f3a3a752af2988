#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
#
# run.sh - run the srm system tests.
#
# Usage: run.sh [-b BUILD_DIR] [-t SECONDS] [TEST...]
#
# Runs every test_*.sh next to this script (or only the TESTs named, with
# or without the test_ prefix and .sh suffix), one after the other, each
# under a timeout, with its output in $SRM_TEST_LOG_DIR/<test>.log
# (default /tmp/srm-system-tests). Prints one line per test:
#     PASS name (N s) | FAIL name (see log) | SKIP name: reason
# and at the end "system: N passed, M failed, K skipped". While a test
# runs, every $SRM_TEST_PROGRESS seconds (default 60) a line shows the
# last line of its log: what it, or the VM guest it drives, is doing.
# Exits 1 if any test failed, 2 on bad usage.
#
# Options:
#   -b, --build-dir DIR  the srm build tree (or install prefix) to test;
#                        default: $SRM_BUILD_DIR, else the current
#                        directory or the source tree if either is a build
#   -t, --timeout SEC    per-test timeout (default $SRM_TEST_TIMEOUT or 600;
#                        a test may ask for more with a header line
#                        "# srm-test-timeout: SECONDS")
#   -h, --help           this text
#
# A test exits 0 (pass), 77 (skip, after a "SKIP: reason" line) or anything
# else (fail); a test killed by the timeout fails.

here=$(cd "$(dirname "$0")" && pwd)
timeout_s=${SRM_TEST_TIMEOUT:-600}
progress_s=${SRM_TEST_PROGRESS:-60}
case $progress_s in
''|*[!0-9]*|0) echo "run.sh: SRM_TEST_PROGRESS must be seconds, not '$progress_s'" >&2
               exit 2 ;;
esac

usage() { sed -n '3,/^$/s/^# \{0,1\}//p' "$0"; }

while [ $# -gt 0 ]; do
    case "$1" in
    -b|--build-dir)
        [ $# -ge 2 ] || { echo "run.sh: $1 needs a directory" >&2; exit 2; }
        SRM_BUILD_DIR=$2; export SRM_BUILD_DIR; shift 2 ;;
    --build-dir=*) SRM_BUILD_DIR=${1#*=}; export SRM_BUILD_DIR; shift ;;
    -t|--timeout)
        [ $# -ge 2 ] || { echo "run.sh: $1 needs seconds" >&2; exit 2; }
        timeout_s=$2; shift 2 ;;
    -h|--help) usage; exit 0 ;;
    --) shift; break ;;
    -*) echo "run.sh: unknown option $1 (see --help)" >&2; exit 2 ;;
    *) break ;;
    esac
done
case "$timeout_s" in
''|*[!0-9]*) echo "run.sh: bad timeout '$timeout_s'" >&2; exit 2 ;;
esac

SRM_TEST_LOG_DIR=${SRM_TEST_LOG_DIR:-/tmp/srm-system-tests}
mkdir -p "$SRM_TEST_LOG_DIR" || exit 2
SRM_TEST_LOG_DIR=$(cd "$SRM_TEST_LOG_DIR" && pwd)
export SRM_TEST_LOG_DIR

# shellcheck source-path=SCRIPTDIR/../.. source=contrib/srm-harness.sh
. "$here/../../contrib/srm-harness.sh"
is_build() { srm_build_at "$1" 2>/dev/null; }
if [ -z "${SRM_BUILD_DIR:-}" ]; then
    for d in "$PWD" "$(cd "$here/../.." && pwd)"; do
        if is_build "$d"; then SRM_BUILD_DIR=$d; break; fi
    done
fi
if [ -z "${SRM_BUILD_DIR:-}" ]; then
    echo "run.sh: no srm build here; pass -b BUILD_DIR or set SRM_BUILD_DIR" >&2
    exit 2
fi
SRM_BUILD_DIR=$(cd "$SRM_BUILD_DIR" 2>/dev/null && pwd) || {
    echo "run.sh: no such build directory" >&2; exit 2; }
is_build "$SRM_BUILD_DIR" || {
    echo "run.sh: $SRM_BUILD_DIR holds no srm build (srmd and" \
         ".libs/libuct_srm.so.0)" >&2; exit 2; }
export SRM_BUILD_DIR
echo "srm system tests: build $SRM_BUILD_DIR, logs $SRM_TEST_LOG_DIR"

tests=()
if [ $# -eq 0 ]; then
    for f in "$here"/test_*.sh; do
        [ -e "$f" ] && tests+=("$f")
    done
else
    for t in "$@"; do
        t=${t##*/}; t=${t%.sh}; t=test_${t#test_}
        if [ ! -r "$here/$t.sh" ]; then
            echo "run.sh: no test $t in $here" >&2
            exit 2
        fi
        tests+=("$here/$t.sh")
    done
fi

command -v timeout >/dev/null 2>&1 || { echo "run.sh: needs timeout(1)" >&2; exit 2; }

# How long each test took in the last run that logged here, for the
# estimate of what is left; a test not seen before counts as the mean of
# those done in this run.
durations=$SRM_TEST_LOG_DIR/durations
declare -A last_secs=()
if [ -r "$durations" ]; then
    while read -r n s; do last_secs[$n]=$s; done < "$durations"
fi
# estimate_left INDEX: seconds the tests from INDEX on will probably take
estimate_left() {
    local i total=0 n mean=60
    [ "$done_count" -gt 0 ] && mean=$(( done_secs / done_count ))
    for (( i = $1; i < ${#tests[@]}; i++ )); do
        n=$(basename "${tests[i]}" .sh)
        total=$(( total + ${last_secs[$n]:-$mean} ))
    done
    echo "$total"
}
mmss() { printf '%dm%02ds' $(( $1 / 60 )) $(( $1 % 60 )); }

passed=0 failed=0 skipped=0 done_count=0 done_secs=0
run_t0=$(date +%s)
: > "$durations.new"
for index in "${!tests[@]}"; do
    f=${tests[index]}
    name=$(basename "$f" .sh)
    log=$SRM_TEST_LOG_DIR/$name.log
    t0=$(date +%s)
    echo "[$((index + 1))/${#tests[@]}] $name (elapsed $(mmss $(( t0 - run_t0 ))), about $(mmss "$(estimate_left "$index")") left)"
    # timeout puts the test in a process group of its own and signals the
    # whole group when the time is up; the test's traps clean up.
    # A test that needs longer (the VM ones) says so in its header:
    # "# srm-test-timeout: SECONDS".
    own=$(sed -n 's/^# srm-test-timeout: \([0-9][0-9]*\)$/\1/p' "$f" | head -n 1)
    limit=$timeout_s
    [ -n "$own" ] && [ "$own" -gt "$limit" ] && limit=$own
    SRM_TEST_NAME=$name timeout -k 20 "$limit" bash "$f" >"$log" 2>&1 \
        </dev/null &
    pid=$!
    # Interrupted: timeout passes TERM on to the test's process group, and
    # the test's traps take its namespaces, agents and VM down.
    trap 'kill -TERM "$pid" 2>/dev/null; wait "$pid"; exit 130' INT TERM
    started=$SECONDS next=$(( SECONDS + progress_s ))
    while kill -0 "$pid" 2>/dev/null; do
        sleep 0.2
        [ "$SECONDS" -ge "$next" ] || continue
        last=$(grep -a -v '^[[:space:]]*$' "$log" 2>/dev/null | tail -n 1 |
               cut -c 1-160)
        echo "    $name, $(( SECONDS - started )) s: ${last:-(nothing logged yet)}"
        next=$(( next + progress_s ))
    done
    wait "$pid"
    rc=$?
    trap - INT TERM
    secs=$(( $(date +%s) - t0 ))
    done_count=$((done_count + 1)) done_secs=$((done_secs + secs))
    echo "$name $secs" >> "$durations.new"
    case $rc in
    0)
        echo "PASS $name ($secs s)"
        passed=$((passed + 1)) ;;
    77)
        reason=$(grep -m1 '^SKIP: ' "$log" | sed 's/^SKIP: //')
        echo "SKIP $name: ${reason:-no reason given}"
        skipped=$((skipped + 1)) ;;
    *)
        if [ $rc = 124 ] || [ $rc = 137 ]; then
            echo "*** $name killed after the ${limit} s timeout" >>"$log"
        fi
        echo "FAIL $name (see log)"
        failed=$((failed + 1)) ;;
    esac
done

# Keep what this run measured, and the last figure of tests it did not run.
for n in "${!last_secs[@]}"; do
    grep -q "^$n " "$durations.new" || echo "$n ${last_secs[$n]}" >> "$durations.new"
done
mv "$durations.new" "$durations"
echo "logs: $SRM_TEST_LOG_DIR"
echo "system: $passed passed, $failed failed, $skipped skipped"
[ "$failed" -eq 0 ]
