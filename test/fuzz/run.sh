#!/usr/bin/env bash
#
# run.sh - builds the libFuzzer target (clang, ASan, UBSan) and runs it for
# a bounded time. Prints "fuzz: N passed, M failed" (or a loud SKIP).
#
set -uo pipefail

usage() {
    cat <<TXT
Usage: test/fuzz/run.sh [--seconds N] [--out DIR]

Builds test/fuzz/fuzz_frames.c with clang -fsanitize=fuzzer,address,undefined
against the frame, ring and protocol parsers in ucx_srm/common, then runs it
for N seconds (default 30). A crash, sanitizer report or abort fails and
leaves the reproducer in DIR (default /tmp/srm-fuzz).
TXT
}

top=$(cd "$(dirname "$0")/../.." && pwd)
seconds=30
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
    echo "fuzz: 0 passed, 0 failed, 1 skipped"
    exit 0
fi
mkdir -p "$out/corpus"
bin="$out/fuzz_frames"
if ! clang -g -O1 -fsanitize=fuzzer,address,undefined \
        -fno-sanitize-recover=undefined -I"$top" \
        $(pkg-config --cflags ucx-uct) \
        "$top/test/fuzz/fuzz_frames.c" "$top/ucx_srm/common/srm_frame.c" \
        "$top/ucx_srm/common/srm_ring.c" "$top/ucx_srm/common/srm_proto.c" \
        -o "$bin"; then
    echo "fuzz: build failed"
    echo "fuzz: 0 passed, 1 failed, 0 skipped"
    exit 1
fi
echo "fuzz: running $bin for $seconds s"
if (cd "$out" && "$bin" -max_total_time="$seconds" -max_len=8192 \
        -print_final_stats=1 corpus) > "$out/fuzz.log" 2>&1; then
    grep -E "stat::number_of_executed_units|Done" "$out/fuzz.log" | tail -2
    echo "fuzz: 1 passed, 0 failed"
else
    tail -40 "$out/fuzz.log"
    echo "fuzz: the target crashed; reproducer in $out (crash-*)"
    echo "fuzz: 0 passed, 1 failed"
    exit 1
fi
