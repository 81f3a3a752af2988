#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
#
# test_vm_kill_soak: test_netns_kill_soak on the verbs wire, in the QEMU
# test VM on soft-RoCE (contrib/vm-rxe; SKIP, loudly, without QEMU or an
# image): SRM_KILL_ROUNDS (12: under TCG a round takes 25 s) ucx_perftest
# pairs between two hosts, each killed with SIGKILL once it streams, while
# a stream check runs; both agents live, nothing lost for the ranks that
# stay.
#
# srm-test-timeout: 720
. "$(dirname "$0")/lib.sh"

[ "${1:-}" = --guest ] || SRM_VM_TIMEOUT=${SRM_VM_TIMEOUT:-660} srm_vm_self 1024

# ------------------------------------------------------------ the guest --
[ "${SRM_VM_GUEST:-}" = 1 ] || { srm_fail "--guest outside the VM"; srm_done; }
srm_netns_require rdma
# Agents sleep when idle: under TCG a spinning agent takes a whole vCPU.
export UCX_SRM_FAILOVER_TIMEOUT=2s UCX_SRM_PEER_TIMEOUT=20s UCX_SRM_POLL=block
export SRM_KILL_WIRE=verbs SRM_KILL_ROUNDS=${SRM_KILL_ROUNDS:-12}
. "$SRM_SYSTEM_DIR/test_netns_kill_soak.sh"
