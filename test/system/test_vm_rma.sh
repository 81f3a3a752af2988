#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
#
# test_vm_rma: memory the srm md allocates (UCX_SRM_MEM_ALLOC=y) on the
# verbs wire, on soft-RoCE in the QEMU test VM (contrib/vm-rxe); runs this
# file in the guest with --guest (SKIP, loudly, without QEMU or an image).
#
# In the guest:
#   1. the md gtests (uct_mem_test.*, uct_rma_test.*) against a private
#      agent on rxe (SRM_TEST_EXPECT_RDMA): allocations are registered in
#      the agent's PD (ibv_reg_mr of its memfd mapping), keys carry the
#      rkey, srmctl status says so, regions go on free and on md close, and
#      PUT/GET between the agent's own ports (a copy between its mappings)
#      move the data; RMA to a freed region fails and the next one works;
#   2. two hosts on the verbs wire with MEM_ALLOC=y in the ranks:
#      ucx_perftest UCT am_bw zcopy (its buffers from the md, so registered in
#      both agents' PDs) and UCP tag_bw 64 KB must pass, the queue pairs
#      stay usable, and the regions are gone once the ranks exit.
# Not here yet: RDMA WRITE/READ between agents (the agent does not post
# them; its iface does not offer PUT/GET zcopy on the verbs wire).
#
# srm-test-timeout: 600
. "$(dirname "$0")/lib.sh"

[ "${1:-}" = --guest ] || SRM_VM_TIMEOUT=${SRM_VM_TIMEOUT:-480} srm_vm_self 1024

# ------------------------------------------------------------ the guest --
[ "${SRM_VM_GUEST:-}" = 1 ] || { srm_fail "--guest outside the VM"; srm_done; }
srm_netns_require rdma
STEP_TIMEOUT=180
export UCX_SRM_FAILOVER_TIMEOUT=2s UCX_SRM_PEER_TIMEOUT=20s UCX_SRM_POLL=block

# --- 1. the md gtests on rxe -------------------------------------------------
srm_vm_gtests "md gtests with the agent" 10.79.251.1 \
    'uct_mem_test.*:uct_rma_test.*:uct_rma_2nodes_test.*' 300 \
    UCX_SRM_DEVICES=rxe_gt:1@srmvg0 SRM_TEST_EXPECT_RDMA=1

# --- 2. two hosts, allocating md in the ranks --------------------------------
declare -A SRM_NETNS_AGENT_PID=()
srm_vm_hosts_up 2 vm
for h in "${SRM_HOSTS[@]}"; do
    srm_netns_agent_start "$h" "$SRM_LOG/srmd.$h.log" \
        UCX_SRM_DEVICES="rxe_$h:1@eth0" || srm_done
done
# md memory is registered in the agent's PD on its device: RMA by RDMA.
mem=$(srm_netns_status_get vmh1 '"\(.rma.between_nodes) on \(.wire.paths[0].device)"')
if [ "$mem" = "rdma on rxe_vmh1:1" ]; then
    srm_pass "srmd in vmh1: RMA between nodes $mem"
else
    srm_fail "srmd in vmh1 does not do RMA by RDMA on rxe_vmh1:1: '$mem'"
    srm_netns_status vmh1 | grep -E '^(memory|rma)' | sed 's/^/    | /'
fi

export UCX_TLS=srm UCX_SRM_AGENT=never UCX_SRM_MEM_ALLOC=y
dev=$(srm_uct_device "${SRM_HOSTS[0]}")
port=13600
for spec in uct:am_bw:65536:100:zcopy uct:put_bw:65536:200:zcopy \
            uct:get:65536:200:zcopy uct:put_bw:1048576:20:zcopy \
            ucp:tag_bw:65536:50:; do
    IFS=: read -r layer t size iters layout <<<"$spec"
    args=(-t "$t" -s "$size" -n "$iters" -w 2)
    [ "$layer" = uct ] && args+=(-x srm -d "$dev" -D "$layout")
    label=perftest-$t-$size
    srm_netns_perftest_pair "$label" "$port" "$STEP_TIMEOUT" "${args[@]}"
    port=$((port + 1))
    final=$(grep '^Final:' "$SRM_LOG/$label.client.log" | tail -n 1 | sed 's/  */ /g')
    if [ "$SRM_CLIENT_RC" = 0 ] && [ "$SRM_SERVER_RC" = 0 ] && [ -n "$final" ]; then
        srm_pass "ucx_perftest $layer $t $size B x $iters, MEM_ALLOC=y, over srm/verbs: $final"
    else
        srm_fail "ucx_perftest $layer $t $size B: client $SRM_CLIENT_RC, server $SRM_SERVER_RC"
        srm_show_log "$SRM_LOG/$label.client.log" 8
        srm_show_log "$SRM_LOG/$label.server.log" 8
    fi
done
for h in "${SRM_HOSTS[@]}"; do
    for i in $(seq 1 20); do # the agent sees the ranks' sockets close
        read -r left bytes a r < <(srm_netns_status_get "$h" \
            '.memory | "\(.regions) \(.bytes) \(.added) \(.removed)"')
        [ "$left/$bytes" = 0/0 ] && break
        sleep 0.5
    done
    if [ -n "$a" ] && [ "$a" -gt 0 ] && [ "$a" = "$r" ] &&
       [ "$left/$bytes" = 0/0 ]; then
        srm_pass "$h: the ranks' $a regions were registered and all released"
    else
        srm_fail "$h: regions added $a removed $r, $left left ($bytes bytes)"
        srm_netns_status "$h" | grep '^memory:' | sed 's/^/    | /'
    fi
done
srm_netns_status vmh2 | grep -E '^(node|memory|rma)' | sed 's/^/    /'
srm_done
