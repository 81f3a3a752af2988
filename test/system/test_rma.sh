#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
#
# test_rma: PUT/GET zcopy on memory the srm md allocates
# (UCX_SRM_MEM_ALLOC=y), served by one private agent without a wire
# (UCX_SRM_DEVICES=none: every peer is on this node, so the agent offers
# RMA to all of them). UCT ucx_perftest put_bw, put_lat and get (ucx_perftest has no get_bw) zcopy must pass
# and the agent must count the RMA operations; UCP (tag, put, get) must
# keep working with an md that allocates but does not register user
# memory. ucx_perftest checks no data: the gtests uct_rma_test.* do.
#
. "$(dirname "$0")/lib.sh"

srm_require_cmd ucx_perftest timeout

PAIR_TIMEOUT=${SRM_PERFTEST_TIMEOUT:-90}
export UCX_SRM_DEVICES=none UCX_SRM_MEM_ALLOC=y

srm_agent_start || { srm_fail "cannot start srmd"; srm_done; }
export UCX_SRM_AGENT=never
export UCX_TLS=srm

rma_ops() { srm_agent_status_get .rma.ops; }

# Every peer: all of them on this node (no wire), or RDMA to the others.
rma_reach=$(srm_agent_status_get .rma.between_nodes)
case "$rma_reach" in
none|rdma) srm_pass "srmctl status: the agent offers RMA to every peer ($rma_reach)" ;;
*)  srm_fail "srmctl status: RMA between nodes is '$rma_reach', not none or rdma"
    srm_agent_status | sed 's/^/    | /' ;;
esac

# run_case LABEL MIN-RMA-OPS PERFTEST-ARGS...
run_case() {
    local label=$1 min_ops=$2 r0 r1
    shift 2

    r0=$(rma_ops)
    if ! srm_perftest_pair "$label" "$PAIR_TIMEOUT" "$@"; then
        srm_fail "$label: client=$SRM_CLIENT_RC server=$SRM_SERVER_RC"
        srm_show_log "$SRM_CLIENT_LOG" 8
        srm_show_log "$SRM_SERVER_LOG" 8
        return
    fi
    r1=$(rma_ops)
    if [ -z "$r0" ] || [ -z "$r1" ] || [ $((r1 - r0)) -lt "$min_ops" ]; then
        srm_fail "$label: the agent counted $r0 -> $r1 RMA ops (want" \
                 "$min_ops more)"
        return
    fi
    srm_pass "$label ($SRM_PAIR_SECS s, $((r1 - r0)) RMA ops): $SRM_FINAL"
}

uct="-d $(srm_uct_device) -x srm"
# shellcheck disable=SC2086
{
run_case uct-put_bw-zcopy-64k 2000 -t put_bw -s 65536   -n 2000 $uct -w 100 -D zcopy
run_case uct-get-zcopy-64k    2000 -t get    -s 65536   -n 2000 $uct -w 100 -D zcopy
run_case uct-put_bw-zcopy-1m  200  -t put_bw -s 1048576 -n 200  $uct -w 10  -D zcopy
run_case uct-get-zcopy-1m     200  -t get    -s 1048576 -n 200  $uct -w 10  -D zcopy
run_case uct-put_lat-zcopy-8  0    -t put_lat -s 8      -n 1000 $uct -w 100 -D zcopy
}

# UCP: never offered RMA lanes on srm (no PUT/GET short or bcopy), and no
# REG in the md: everything goes through the rings, and must still work.
run_case ucp-tag_bw-1m      0 -t tag_bw     -s 1048576 -n 100  -w 10
run_case ucp-tag_lat-8      0 -t tag_lat    -s 8       -n 2000 -w 100
run_case ucp-put_bw-65536   0 -t ucp_put_bw -s 65536   -n 500  -w 50
run_case ucp-get-65536      0 -t ucp_get    -s 65536   -n 500  -w 50

srm_log "agent status at the end:"
srm_agent_status | sed 's/^/  /'
srm_agent_stop || srm_fail "srmd did not stop cleanly (exit $?)"
srm_done
