#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
#
# test_harness: contrib/srm-harness.sh and the benchmarks' layer on it,
# where they must hold under the benchmarks' `set -euo pipefail`, against
# stand-ins of netns-cluster and srmctl:
#   1. srm_hosts_taken sees a cluster that is up even when `netns-cluster
#      list` goes on writing after the line that says so (with `list | grep
#      -q`, list died of SIGPIPE and pipefail made a cluster that is up, not
#      ours, count as free: a benchmark would have used and then taken down
#      someone else's hosts);
#   2. srm_netns_status_get prints nothing and succeeds when the agent does
#      not answer (it failed, and set -e ended the benchmark silently);
#   3. stats with no values is "0 0 0", whatever stdin holds (it read the
#      caller's stdin as the values).
#
# srm-test-timeout: 30
. "$(dirname "$0")/lib.sh"

srm_require_cmd jq

fake=$SRM_LOG/fake
mkdir -p "$fake"
cat >"$fake/netns-cluster" <<'SH'
#!/bin/bash
case $1 in
list) [ "$3" = busy ] || exit 0
      echo "cluster busy: up"
      sleep 0.3
      for i in $(seq 1 200); do echo "  busyh$i 10.77.0.$i eth0"; done ;;
exec) shift 2; exec "$@" ;;
esac
SH
printf '#!/bin/sh\necho "srmctl: no agent answers" >&2\nexit 1\n' >"$fake/srmctl"
chmod +x "$fake/netns-cluster" "$fake/srmctl"

# in_bench_shell CODE: CODE in a shell as the benchmarks run, on the
# stand-ins; its exit status.
in_bench_shell() {
    SRM_NETNS_CLUSTER=$fake/netns-cluster SRM_SRMCTL=$fake/srmctl \
        SRM_SOCKET=nobody bash -c '
        set -euo pipefail
        PROG=test_harness
        . "$1/contrib/bench/lib.sh"
        eval "$2"' _ "$SRM_SRCDIR" "$1" </dev/null
}

if in_bench_shell 'srm_hosts_taken busy'; then
    srm_pass "a cluster that is up is taken, however long list writes on"
else
    srm_fail "srm_hosts_taken: a cluster that is up counts as free under pipefail"
fi
if in_bench_shell 'srm_hosts_taken free'; then
    srm_fail "srm_hosts_taken: a prefix nobody uses counts as taken"
else
    srm_pass "a prefix nobody uses is free"
fi

out=$(in_bench_shell 'v=$(srm_netns_status_get h1 .agent.pid); echo "got [$v]"' 2>&1)
if [ "$out" = "got []" ]; then
    srm_pass "an agent that does not answer: srm_netns_status_get prints nothing and the benchmark goes on"
else
    srm_fail "an agent that does not answer: '$out' (want 'got []')"
fi

out=$(echo "5 6" | SRM_SRCDIR=$SRM_SRCDIR bash -c '
    set -euo pipefail
    PROG=test_harness
    . "$SRM_SRCDIR/contrib/bench/lib.sh"
    stats' 2>&1)
if [ "$out" = "0 0 0" ]; then
    srm_pass "stats of no values: 0 0 0, stdin untouched"
else
    srm_fail "stats of no values: '$out' (want 0 0 0)"
fi
srm_done
