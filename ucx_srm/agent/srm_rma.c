/*
 * RMA requests from clients (srm_rma.h): validated against the region
 * registry before any byte moves. Both ends on this node: a copy between
 * the agent's mappings. A remote end needs the verbs wire; until the agent
 * posts RDMA there, such a request completes with ENOTSUP (the iface offers
 * PUT/GET zcopy only where the agent can serve them).
 */
#include "srm_agent.h"

#include <ucx_srm/common/srm_log.h>
#include <ucx_srm/common/srm_rma.h>

#include <errno.h>
#include <string.h>

/* Whether the connection that registered a region is of process pid: a
 * client names only its own process's memory as the local end. */
static int srm_rma_owned_by(srm_agent_t *agent, uint32_t owner, pid_t pid)
{
    uint32_t slot = (owner & 0xffffu) - 1;
    srm_client_t *client;

    if (slot >= agent->num_slots) {
        return 0;
    }
    client = agent->slots[slot];
    return (client != NULL) && (client->port == owner) &&
           (client->pid == pid);
}

/* 0 or a positive errno; moves the data when both ends check out. */
static int srm_rma_execute(srm_agent_t *agent, srm_client_t *src,
                           const srm_rma_req_t *req)
{
    const srm_mem_region_t *local, *remote;
    srm_rkey_status_t kstatus;
    srm_rkey_t key;
    void *laddr, *raddr;

    if ((req->op != SRM_RMA_PUT) && (req->op != SRM_RMA_GET)) {
        return EINVAL;
    }
    local = srm_mem_find(&agent->mem, SRM_MEM_ANY_OWNER, req->local_region,
                         req->local_generation, req->local_addr,
                         req->length);
    if ((local == NULL) || !srm_rma_owned_by(agent, local->owner, src->pid)) {
        srm_debug("port %u: RMA from memory that is not its own region "
                  "%u.%u", src->port, req->local_region,
                  req->local_generation);
        return EFAULT;
    }
    kstatus = srm_rkey_unpack(&req->rkey, &key);
    if ((kstatus != SRM_RKEY_OK) || (key.region_id == 0)) {
        srm_debug("port %u: RMA with a bad remote key: %s", src->port,
                  srm_rkey_status_str(kstatus));
        agent->mem.rejected++;
        return EINVAL;
    }
    if (key.node_id != agent->node_id) {
        return ENOTSUP; /* RDMA on the verbs wire: not yet */
    }
    /* The registry, not the key, says where the region is and how long. */
    remote = srm_mem_find(&agent->mem, SRM_MEM_ANY_OWNER, key.region_id,
                          key.generation, req->remote_addr, req->length);
    if (remote == NULL) {
        srm_debug("port %u: RMA to region %u.%u, which is gone or smaller",
                  src->port, key.region_id, key.generation);
        return EFAULT;
    }
    laddr = srm_mem_agent_addr(local, req->local_addr);
    raddr = srm_mem_agent_addr(remote, req->remote_addr);
    if (req->op == SRM_RMA_PUT) {
        memmove(raddr, laddr, req->length);
    } else {
        memmove(laddr, raddr, req->length);
    }
    return 0;
}

srm_sched_result_t srm_rma_request(srm_agent_t *agent, srm_client_t *src,
                                   const srm_frame_hdr_t *hdr,
                                   const void *payload)
{
    srm_frame_hdr_t done_hdr;
    srm_rma_done_t done;
    srm_rma_req_t req;

    if (hdr->length != sizeof(req)) {
        srm_client_fail(agent, src, "malformed RMA request");
        return SRM_SCHED_FAILED;
    }
    memcpy(&req, payload, sizeof(req)); /* the client may still scribble */

    srm_frame_hdr_init(&done_hdr, SRM_FRAME_RMA_DONE, sizeof(done));
    done_hdr.src_port = src->port;
    done_hdr.dst_port = src->port;
    done_hdr.dst_key  = src->key;
    memset(&done, 0, sizeof(done));
    done.cookie = req.cookie;
    done.status = srm_rma_execute(agent, src, &req);
    /* No room for the answer: the request stays in the ring and runs
     * again later, which a copy between registered regions allows. */
    if (srm_deliver_to_port(agent, NULL, &done_hdr, &done) == 0) {
        src->stats.blocked++;
        return SRM_SCHED_BLOCKED;
    }
    src->stats.tx_frames++;
    src->stats.tx_bytes += req.length;
    agent->stats.rma_ops++;
    agent->stats.rma_bytes += req.length;
    if (done.status != 0) {
        agent->stats.rma_failed++;
    }
    return SRM_SCHED_DELIVERED;
}
