#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
#
# run-main-job.sh - the main job: build ucx-srm, then carry real UCX traffic
# over srm between simulated hosts (network, UTS and IPC namespaces), side
# by side with UCX's own tcp transport, and run an Open MPI job over srm
# alone across three hosts.
#
set -euo pipefail

usage() {
    cat <<TXT
Usage: contrib/run-main-job.sh [--no-deps] [--build DIR] [--quick]

  1. builds ucx-srm (contrib/build.sh)
  2. contrib/bench/hosts.sh: two simulated hosts, one srmd each; ucx_perftest
     latency and bandwidth over a range of sizes and message rate (1, 2, 4,
     8 process pairs) for srm and for UCX tcp between the same hosts, as a
     markdown table with ratios (DIR/main-job-bench.md) and PNG plots
     next to it (DIR/main-job-bench-{lat,bw,mr}.png, with gnuplot); both
     hosts run TCP with reno (hosts.sh --tcp-cc reno), which every kernel
     allows, so that the tcp baseline is what a loss-based congestion
     control gives: a pacing one (bbr) makes the veths between the hosts
     reorder packets, and UCX's tcp then loses most of its bandwidth to
     spurious recoveries
  3. three simulated hosts x 2 ranks: Open MPI with UCX_TLS=srm only, the
     data-checking program (ping-pong, all-to-all, allreduce), then each
     host's node channels as srmctl status shows them
  4. tears everything down, also on failure or Ctrl-C

  --quick      tiny iteration counts (about a minute in all)
  --no-deps    skip the package check
  --build DIR  build directory (default build/, or SRM_BUILD_DIR)
TXT
}

top=$(cd "$(dirname "$0")/.." && pwd)
build=${SRM_BUILD_DIR:-$top/build}
build_args=()
bench_args=()
iterations=3
while [ $# -gt 0 ]; do
    case "$1" in
    --no-deps) build_args+=(--no-deps); shift ;;
    --build) build=$2; shift 2 ;;
    --quick) bench_args+=(--quick); iterations=1; shift ;;
    -h|--help) usage; exit 0 ;;
    *) echo "run-main-job.sh: unknown option '$1'" >&2; usage >&2; exit 2 ;;
    esac
done
export SRM_BUILD_DIR=$build

"$top/contrib/build.sh" "${build_args[@]}" --build "$build"

echo
echo "== srm vs UCX tcp between two simulated hosts (ucx_perftest)"
"$top/contrib/bench/hosts.sh" --build "$build" --tcp-cc reno "${bench_args[@]}" \
    --out "$build/main-job-bench.md"

echo
echo "== Open MPI over srm alone: 3 simulated hosts x 2 ranks"
cluster="$top/contrib/netns-cluster"
prefix="srmjob$$"
socket="srm-main-job-$$"
agents=()
cleanup() {
    [ ${#agents[@]} -gt 0 ] && kill "${agents[@]}" 2>/dev/null
    "$cluster" down --prefix "$prefix" >/dev/null 2>&1 || true
}
trap cleanup EXIT INT TERM
"$cluster" up 3 --prefix "$prefix" >/dev/null
hosts=$("$cluster" hosts --prefix "$prefix")
for host in $hosts; do
    "$cluster" exec "$host" "$build/srmd" -q -s "$socket" \
        -l "$build/main-job-srmd.$host.log" &
    agents+=($!)
done
for host in $hosts; do
    for _ in $(seq 100); do
        "$cluster" exec "$host" "$build/srmctl" -s "$socket" ping \
            2>/dev/null && break
        sleep 0.1
    done
done

mpicc -O2 -o "$build/srm_mpi_check" "$top/test/mpi/srm_mpi_check.c"
"$top/contrib/netns-mpirun" --prefix "$prefix" --ppn 2 --timeout 300 \
    -x LD_PRELOAD="$build/.libs/libuct_srm.so.0" -x UCX_TLS=srm \
    -x UCX_SRM_SOCKET="$socket" -x UCX_SRM_AGENT=never \
    -x UCX_WARN_UNUSED_ENV_VARS=n \
    -- "$build/srm_mpi_check" -i "$iterations"

echo
for host in $hosts; do
    echo "== node channels of $host after the job (srmctl status)"
    "$cluster" exec "$host" "$build/srmctl" -s "$socket" status |
        grep -E '^(wire|node|counters)'
done
