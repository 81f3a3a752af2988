#!/usr/bin/env bash
#
# run-main-job.sh - the main job: build ucx-srm, bring up a simulated host
# (network, UTS and IPC namespaces), and inside it run real UCX traffic over
# srm next to UCX's own tcp and shared-memory transports, printing the
# comparison; then an Open MPI job over srm alone.
#
set -euo pipefail

usage() {
    cat <<TXT
Usage: contrib/run-main-job.sh [--no-deps] [--build DIR] [--quick]

  1. builds ucx-srm (contrib/build.sh)
  2. contrib/netns-cluster up 1 --prefix srmjob: host h1 with its own
     network, hostname and IPC namespace (its own srmd)
  3. inside h1: contrib/bench/local.sh - ucx_perftest latency, bandwidth and
     message rate for srm, tcp (loopback) and posix shared memory
  4. inside h1: Open MPI, 4 ranks, UCX_TLS=srm, the data-checking program
  5. tears the host down (also on failure or Ctrl-C)

This release carries srm between processes of one node through the node
agent; agent-to-agent channels between hosts are the next step (issue 3),
so every rank here lives on the one simulated host.
TXT
}

top=$(cd "$(dirname "$0")/.." && pwd)
build=${SRM_BUILD_DIR:-$top/build}
build_args=()
bench_args=()
while [ $# -gt 0 ]; do
    case "$1" in
    --no-deps) build_args+=(--no-deps); shift ;;
    --build) build=$2; shift 2 ;;
    --quick) bench_args+=(--quick); shift ;;
    -h|--help) usage; exit 0 ;;
    *) echo "run-main-job.sh: unknown option '$1'" >&2; usage >&2; exit 2 ;;
    esac
done
export SRM_BUILD_DIR=$build

"$top/contrib/build.sh" "${build_args[@]}" --build "$build"

cluster="$top/contrib/netns-cluster"
cleanup() { "$cluster" down --prefix srmjob >/dev/null 2>&1 || true; }
trap cleanup EXIT INT TERM
"$cluster" up 1 --prefix srmjob --replace
host=$("$cluster" hosts --prefix srmjob | head -n 1)

echo "== ucx_perftest inside simulated host $host: srm vs tcp vs posix"
"$cluster" exec "$host" env SRM_BUILD_DIR="$build" \
    "$top/contrib/bench/local.sh" --build "$build" "${bench_args[@]}"

echo "== Open MPI inside $host: 4 ranks, UCX_TLS=srm only"
mpicc -O2 -o "$build/srm_mpi_check" "$top/test/mpi/srm_mpi_check.c"
"$cluster" exec "$host" env SRM_MODULE="$build/.libs/libuct_srm.so.0" \
    UCX_SRM_AGENT_PATH="$build/srmd" \
    "$build/contrib/srm-run" mpirun --allow-run-as-root -np 4 \
    --bind-to none --oversubscribe --mca btl ^openib,ofi \
    --mca mpi_yield_when_idle 1 -x UCX_TLS=srm "$build/srm_mpi_check" -i 3
