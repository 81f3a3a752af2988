#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
#
# smoke.sh - "make check" runs the whole evaluation (contrib/bench/eval.sh
# --smoke: experiments 1-8 at their smallest sizes) so that it cannot rot.
# Passes when eval.sh exits 0 and its results folder holds bench-report.md
# with the Targets table, every experiment's section, the ping-pong's
# (issue 3's yielding-ranks target, and its floor measured without srm),
# the cost file and (with gnuplot)
# every experiment's plots. Fails when any experiment
# fails. Skips (77) without root or the tools the experiments need.
#
# The build under test: $SRM_BUILD_DIR, else the current directory (make
# check runs in the build tree). Results: $SRM_SMOKE_OUT (kept), else a
# temporary folder, removed when the test passes.
#
set -uo pipefail

top=$(cd "$(dirname "$0")/../.." && pwd)
build=${SRM_BUILD_DIR:-$PWD}

skip() { printf 'SKIP: %s\n' "$*"; exit 77; }
[ "$(id -u)" = 0 ] || skip "needs root (network namespaces)"
for c in ip nsenter ss timeout mpirun mpicc ucx_perftest ucx_info; do
    command -v "$c" >/dev/null 2>&1 || skip "$c not found"
done
[ -x "$build/srmd" ] || skip "no srm build in $build"
[ -x "$build/srm_flowgen" ] || skip "$build/srm_flowgen not built (configure found no mpicc)"

# make check's environment is for the googletest binary: the module
# preloaded, agents on loopback. The experiments set what they need.
unset LD_PRELOAD
for v in $(compgen -e); do
    case $v in UCX_*) unset "$v" ;; esac
done

if [ -n "${SRM_SMOKE_OUT:-}" ]; then
    out=$SRM_SMOKE_OUT keep=1
else
    out=$(mktemp -d "${TMPDIR:-/tmp}/srm-bench-smoke.XXXXXX") keep=0
fi
t0=$(date +%s)
# Progress every 2 s: an experiment that runs longer must say how far it
# got (its "[run/runs]" lines, relayed).
SRM_EVAL_PROGRESS=2 "$top/contrib/bench/eval.sh" --smoke --build "$build" \
    --out "$out" 2>"$out.stderr"
rc=$?
cat "$out.stderr" >&2
secs=$(( $(date +%s) - t0 ))
echo "eval.sh --smoke: exit $rc after $secs s; results in $out"
[ "$rc" = 0 ] || { echo "FAIL: eval.sh --smoke exit $rc"; exit 1; }

fail=0
check() { if "$@"; then :; else echo "FAIL: $*"; fail=1; fi; }
check grep -Eq '^eval\.sh: \[ *[0-9]+ s\] experiment 1 \(hosts\.sh\), [0-9]+ s: \[[0-9]+/[0-9]+\] ' "$out.stderr"
rm -f "$out.stderr"
report=$out/bench-report.md
check test -s "$report"
check grep -q '^## Targets' "$report"
for n in 'Experiment 1:' 'Experiments 2 and 3:' 'Experiment 4:' 'Experiment 5:' 'Experiment 6:' 'Experiment 7:' 'Experiment 8:'; do
    check grep -q "^## $n" "$report"
done
check grep -q 'Ping-pong between two hosts' "$report"
check grep -q -- '- \*\*Target\*\* (yielding ranks' "$report"
check grep -Eq '^\| yielding( \| [0-9.]+ \([0-9.]+\)){3} \| \*\*[0-9.]+x\*\* \| [0-9.]+ \([0-9.]+\) \| \*\*[0-9.]+x\*\* \|$' "$report"
# 64 KB goes on the bulk channel: its turn and the bound it gives.
check grep -Eq '^- srm tag_bw 64 KB: the bulk channel .* took [0-9]+ us .* per turn .* allows at most [0-9]+ MB/s, and srm moved [0-9.]+ MB/s$' "$out/hosts.md"
# and what its agents' own work per MiB would take at 0.8 x tcp.
check grep -Eq '^- srm tag_bw 64 KB: its two agents used [0-9.]+ CPU-ms \[[0-9.]+, [0-9.]+\] per MiB moved .* would take [0-9.]+ CPUs, of the [0-9]+ of this machine$' "$out/hosts.md"
check test -s "$out/resources-costs.txt"
# the halo exchange's data, and its target evaluated from it
check test -s "$out/halo.dat"
check grep -Eq '^\| T5 \| .* \| [0-9]+ hosts: srm [0-9]+ us, tcp [0-9]+ us \|' "$report"
# and the many-to-many one's (its smoke has 1 rank per host: T6 is not
# evaluated, and says why)
check test -s "$out/many.dat"
check grep -Eq '^\| T6 \| .* not evaluated \(no 4 or more ranks per host' "$report"
check test -s "$out/commands.sh"
if command -v gnuplot >/dev/null 2>&1; then
    for png in hosts-lat hosts-bw hosts-mr mesh-o2m mesh-rate mesh-lat \
               resources-conn resources-mem flows-p99 model-conn model-mem; do
        check test -s "$out/$png.png"
    done
fi
if [ "$fail" = 0 ]; then
    echo "PASS: bench-report.md complete ($secs s)"
    [ "$keep" = 1 ] || rm -rf "$out"
fi
exit "$fail"
