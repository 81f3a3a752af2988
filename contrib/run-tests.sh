#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
#
# run-tests.sh - the one command that runs every test of ucx-srm on a fresh
# Debian 12 machine (as root): packages, build, unit and UCT-level tests
# (make check), then the system tests (ucx_perftest, Open MPI, agent faults).
#
set -uo pipefail

usage() {
    cat <<TXT
Usage: contrib/run-tests.sh [--no-deps] [--build DIR] [--skip-system]

Builds ucx-srm (contrib/build.sh) and runs, in order:
  1. make check: the googletest binary (ABI, ring, frames, scheduler, the
     agent's protocol and rogue clients, UCT-level streams between two
     processes through the module and srmd), then the evaluation's smoke
     run (contrib/bench/eval.sh --smoke, test/bench/smoke.sh)
  2. test/system/run.sh: ucx_info, every ucx_perftest test with UCX_TLS=srm,
     Open MPI with UCX_TLS=srm, missing agent, agent killed under load, and
     between simulated hosts (network namespaces): perftest, Open MPI 3x4,
     connection counts against UCX tcp, a garbage-speaking peer, head of line;
     verbs over soft-RoCE in a QEMU guest (contrib/vm-rxe: rc_verbs, srm's
     verbs wire, QP counts of a 3x4 job; skipped, loudly, without QEMU or
     the kernel package); Debian 13 and sid in chroots
     (contrib/debian-chroot.sh: UCX 1.18.1's / 1.23's build, gtests, Open
     MPI 5 / 6, ucx_perftest), UCX built from source (1.22.0); MPICH over
     srm, one host and two; each skipped, loudly, without its UCX source
  3. test/fuzz/run.sh: libFuzzer on the frame, ring and control parsers,
     on the agent's client protocol and on its wire to other agents
     (handshake, acks, failover, the direct lanes' logs), SRM_FUZZ_SECONDS
     each (default 20)
Ends with one line "tests: N passed, M failed, K skipped"; exits non-zero
if anything failed. Logs: build/test-suite.log, build/system-tests/.
TXT
}

top=$(cd "$(dirname "$0")/.." && pwd)
build=${SRM_BUILD_DIR:-$top/build}
build_args=()
system=1
while [ $# -gt 0 ]; do
    case "$1" in
    --no-deps) build_args+=(--no-deps); shift ;;
    --build) build=$2; shift 2 ;;
    --skip-system) system=0; shift ;;
    -h|--help) usage; exit 0 ;;
    *) echo "run-tests.sh: unknown option '$1'" >&2; usage >&2; exit 2 ;;
    esac
done
export SRM_BUILD_DIR=$build

# Each part's wall time, said at the end (the README's table of how long
# the run takes comes from these).
t_start=$SECONDS
times=()
took() { times+=("$1 $(( SECONDS - t_part )) s"); t_part=$SECONDS; }
t_part=$SECONDS

if ! "$top/contrib/build.sh" "${build_args[@]}" --build "$build"; then
    echo "run-tests.sh: build failed"
    echo "tests: 0 passed, 1 failed, 0 skipped"
    exit 1
fi

took build
passed=0 failed=0 skipped=0

echo "== make check (googletest)"
(cd "$build" && make check) ; check_rc=$?
gtest_log="$build/test/gtest/gtest.log"
if [ -f "$gtest_log" ]; then
    grep -E '^\[  (PASSED|FAILED|SKIPPED) \]|^\[  FAILED  \] [a-zA-Z]' \
        "$gtest_log" | tail -20
    n=$(sed -n 's/^\[  PASSED  \] \([0-9]*\) test.*/\1/p' "$gtest_log" | tail -1)
    f=$(sed -n 's/^ *\([0-9]*\) FAILED TEST.*/\1/p' "$gtest_log" | tail -1)
    s=$(sed -n 's/^\[  SKIPPED \] \([0-9]*\) test.*/\1/p' "$gtest_log" | tail -1)
    passed=$((passed + ${n:-0}))
    failed=$((failed + ${f:-0}))
    skipped=$((skipped + ${s:-0}))
fi
# The evaluation's smoke run (test/bench/smoke.sh, eval.sh --smoke): one
# test, its result in its .trs file.
smoke_trs="$build/test/bench/smoke.sh.trs"
smoke=$(sed -n 's/^:test-result: *//p' "$smoke_trs" 2>/dev/null | head -n 1)
case $smoke in
PASS) passed=$((passed + 1)); echo "PASS bench smoke (eval.sh --smoke)" ;;
SKIP) skipped=$((skipped + 1))
      echo "SKIP bench smoke: $(grep -m1 '^SKIP: ' "$build/test/bench/smoke.sh.log" | sed 's/^SKIP: //')" ;;
FAIL|ERROR) failed=$((failed + 1)); echo "FAIL bench smoke (see $build/test/bench/smoke.sh.log)" ;;
esac
if [ "$check_rc" != 0 ] && [ "${f:-0}" = 0 ] && [ "$smoke" != FAIL ] && [ "$smoke" != ERROR ]; then
    echo "run-tests.sh: make check failed before gtest reported (see $build/test-suite.log)"
    failed=$((failed + 1))
fi

took "make check"

if [ "$system" = 1 ]; then
    echo "== system tests"
    SRM_TEST_LOG_DIR="$build/system-tests" "$top/test/system/run.sh" |
        tee "$build/system-tests.out"
    summary=$(tail -n 1 "$build/system-tests.out")
    n=$(echo "$summary" | sed -n 's/.* \([0-9]*\) passed.*/\1/p')
    f=$(echo "$summary" | sed -n 's/.* \([0-9]*\) failed.*/\1/p')
    s=$(echo "$summary" | sed -n 's/.* \([0-9]*\) skipped.*/\1/p')
    if [ -z "$n" ]; then
        echo "run-tests.sh: the system tests did not report a summary"
        failed=$((failed + 1))
    fi
    passed=$((passed + ${n:-0}))
    failed=$((failed + ${f:-0}))
    skipped=$((skipped + ${s:-0}))
    # of which: the VM, and the other Debian suites and UCX versions
    part_of() { # NAME-PREFIX: seconds of the tests so named
        awk -v p="$1" 'index($2, p) == 1 && $NF == "s)" {
                           x = $(NF - 1); sub(/^\(/, "", x); t += x }
                       END { print t + 0 }' "$build/system-tests.out"
    }
    took "system tests (VM $(part_of test_vm_) s; trixie and sid and UCX from source $(( $(part_of test_distro_) + $(part_of test_ucx_from_source) )) s)"
fi

echo "== fuzzing the parsers and the agent (bounded)"
"$top/test/fuzz/run.sh" --seconds "${SRM_FUZZ_SECONDS:-20}" \
    --out "$build/fuzz" | tee "$build/fuzz.out"
summary=$(tail -n 1 "$build/fuzz.out")
n=$(echo "$summary" | sed -n 's/.* \([0-9]*\) passed.*/\1/p')
f=$(echo "$summary" | sed -n 's/.* \([0-9]*\) failed.*/\1/p')
s=$(echo "$summary" | sed -n 's/.* \([0-9]*\) skipped.*/\1/p')
[ -n "$n" ] || { echo "run-tests.sh: the fuzzer did not report"; f=1; }
passed=$((passed + ${n:-0}))
failed=$((failed + ${f:-0}))
skipped=$((skipped + ${s:-0}))
took fuzzing

# CI keeps only the end of this output: say there what failed and why.
if [ "$failed" != 0 ]; then
    echo "== what failed"
    [ -f "$gtest_log" ] && grep -E '^\[  FAILED  \] [a-zA-Z]' "$gtest_log" |
        sort -u | head -n 8
    # eval.sh ends its output with the failed experiment's log tail.
    if [ "$smoke" = FAIL ] || [ "$smoke" = ERROR ]; then
        echo "bench smoke (the end of $build/test/bench/smoke.sh.log):"
        tail -n 45 "$build/test/bench/smoke.sh.log" | cut -c 1-300 |
            sed 's/^/  /'
    fi
    if [ "$system" = 1 ]; then
        for name in $(sed -n 's/^FAIL \([^ ]*\) .*/\1/p' "$build/system-tests.out"); do
            log=$build/system-tests/$name.log
            echo "$name:"
            grep -E '^FAIL - |^\*\*\* .* killed after' "$log" | sort -u |
                head -n 6 | cut -c 1-300 | sed 's/^/  /'
        done
    fi
    grep -E 'failed|crash|leak' "$build/fuzz.out" | grep -v ' 0 failed' |
        head -n 4
fi
echo "time: $(printf '%s, ' "${times[@]}")total $(( (SECONDS - t_start) / 60 )) min"
echo "tests: $passed passed, $failed failed, $skipped skipped"
[ "$failed" = 0 ]
