#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
#
# run.sh - builds the libFuzzer targets (clang, ASan, UBSan) and runs each
# for a bounded time. Prints a result line per target, then
# "fuzz: N passed, M failed" (or a loud SKIP).
#
set -uo pipefail

targets="fuzz_frames fuzz_attach fuzz_wire"

usage() {
    cat <<TXT
Usage: test/fuzz/run.sh [--seconds N] [--out DIR]

Builds each target with clang -fsanitize=fuzzer,address,undefined and runs
it for N seconds (default 20), one after the other:
  fuzz_frames  the frame, ring and protocol parsers in ucx_srm/common
  fuzz_attach  a real agent's client protocol, end to end: attach, status,
               passed fds, TX and RX rings, drops; no client, queue or fd
               may outlive its connection
  fuzz_wire    a real agent's wire to made-up peer agents on 127.0.0.1:
               handshakes both ways with and without a cluster secret,
               numbered frames, acks, pauses, failover, BYE, garbage; what
               the agent sends and delivers is checked (order, no
               duplicates, the secret), and no node, link or fd may
               outlive the peers
A crash, sanitizer report, abort or hang (10 s per input) fails the target
and leaves the reproducer in DIR/<target> (default /tmp/srm-fuzz); rerun it
with DIR/<target>/<target> <reproducer>.
TXT
}

top=$(cd "$(dirname "$0")/../.." && pwd)
seconds=20
out=${SRM_FUZZ_DIR:-/tmp/srm-fuzz}
while [ $# -gt 0 ]; do
    case "$1" in
    --seconds) seconds=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    -h|--help) usage; exit 0 ;;
    *) echo "fuzz: unknown option '$1'" >&2; exit 2 ;;
    esac
done

if ! command -v clang >/dev/null; then
    echo "SKIP: fuzz: clang is not installed (contrib/install-deps.sh installs it)"
    echo "fuzz: 0 passed, 0 failed, 3 skipped"
    exit 0
fi

# What each target links, besides its own source.
common=$top/ucx_srm/common
agent=$top/ucx_srm/agent
wire=$top/ucx_srm/wire
link_fuzz_frames="$common/srm_frame.c $common/srm_ring.c $common/srm_proto.c"
link_fuzz_attach="$agent/srm_agent.c $agent/srm_auth.c $agent/srm_channel.c \
    $agent/srm_channel_queue.c $agent/srm_channel_write.c $agent/srm_channel_rx.c \
    $agent/srm_client.c $agent/srm_cpus.c $agent/srm_deliver.c \
    $agent/srm_lane.c \
    $agent/srm_holes.c $agent/srm_link.c $agent/srm_link_handshake.c \
    $agent/srm_link_input.c $agent/srm_regions.c $agent/srm_mirror.c \
    $agent/srm_node.c $agent/srm_order.c \
    $agent/srm_place.c \
    $agent/srm_retrans.c $agent/srm_rma.c $agent/srm_rtt.c $agent/srm_sched.c \
    $agent/srm_status.c $agent/srm_status_json.c $agent/srm_json.c \
    $wire/srm_wire.c $wire/srm_wire_tcp.c $wire/srm_wire_tcp_info.c \
    $wire/srm_wire_verbs_none.c $wire/srm_wire_verbs_xrc_choose.c \
    $common/srm_config.c $common/srm_frame.c $common/srm_lane_shared.c \
    $common/srm_log.c $common/srm_proto.c $common/srm_ring.c \
    $common/srm_rkey.c $common/srm_shm.c \
    $(pkg-config --libs ucx-ucs libcrypto)"
link_fuzz_wire="$link_fuzz_attach"
# fuzz_wire runs the agent on a clock of its own, keeps it from dialling any
# address but its own sockets, and gives its sockets small send buffers.
flags_fuzz_wire="-Wl,--wrap=srm_agent_now -Wl,--wrap=srm_wire_tcp_connect \
    -Wl,--wrap=srm_wire_tcp_accept"

# Keeps UCS's own error handlers out of the sanitizers' way.
export UCX_HANDLE_ERRORS=none

passed=0
failed=0
for target in $targets; do
    dir=$out/$target
    bin=$dir/$target
    link=link_$target
    flags=flags_$target
    # An older run.sh left its binary where the directory now goes.
    [ -f "$dir" ] && rm -f "$dir"
    mkdir -p "$dir/corpus"
    if ! clang -g -O1 -fsanitize=fuzzer,address,undefined \
            -fno-sanitize-recover=undefined -I"$top" \
            $(pkg-config --cflags ucx-uct) \
            "$top/test/fuzz/$target.c" ${!link} ${!flags:-} -o "$bin"; then
        echo "fuzz: $target: build failed"
        failed=$((failed + 1))
        continue
    fi
    seeds=()
    if [ -x "$top/test/fuzz/${target}_seeds.sh" ] &&
       "$top/test/fuzz/${target}_seeds.sh" "$dir/seeds"; then
        seeds=("$dir/seeds")
    fi
    echo "fuzz: running $target for $seconds s"
    if (cd "$dir" && "$bin" -max_total_time="$seconds" -max_len=8192 \
            -timeout=10 -print_final_stats=1 corpus "${seeds[@]}") \
            > "$dir/fuzz.log" 2>&1; then
        runs=$(sed -n 's/^stat::number_of_executed_units: *//p' \
               "$dir/fuzz.log")
        cov=$(grep -o 'cov: [0-9]*' "$dir/fuzz.log" | tail -n 1)
        echo "fuzz: $target passed: ${runs:-?} inputs in $seconds s, ${cov:-cov: ?}"
        passed=$((passed + 1))
    else
        tail -40 "$dir/fuzz.log"
        echo "fuzz: $target FAILED; reproducer in $dir (crash-*, leak-*, timeout-*)"
        failed=$((failed + 1))
    fi
done
echo "fuzz: $passed passed, $failed failed"
[ "$failed" = 0 ]
