/*
 * RMA requests from clients (srm_rma.h): validated against the region
 * registry before any byte moves. Both ends on this node: a copy between
 * the agent's mappings. The remote end on another node: an RDMA WRITE or
 * READ on the queue pair of the node's active bulk link (verbs wire), from
 * the local region's MR in that path's PD to the remote agent's mapping
 * under the key's rkey for that path; the answer goes back when the
 * completion comes, or as a failure when the queue pair goes first. The
 * local region is held meanwhile. A stale remote key cannot be checked
 * here (the remote agent's registry is not ours): it fails the queue pair,
 * which the channel survives by failover, and the operation fails.
 */
#include "srm_agent.h"

#include <ucx_srm/common/srm_log.h>
#include <ucx_srm/common/srm_rma.h>

#include <errno.h>
#include <string.h>

/* srm_rma_execute: besides 0 and errnos, these. */
#define SRM_RMA_POSTED  (-1) /* answered when its completion comes */
#define SRM_RMA_BLOCKED (-2) /* no room now: leave it in the ring */

#define SRM_RMA_BAD_KEYS_MAX 8u /* wrong region tokens before a drop */

/* A free op slot, or NULL. */
static srm_rma_inflight_t *srm_rma_op_alloc(srm_agent_t *agent, unsigned *index_p)
{
    unsigned i;

    for (i = 0; i < SRM_RMA_MAX_OPS; ++i) {
        if (agent->rma_ops[i].state == SRM_RMA_OP_FREE) {
            *index_p = i;
            return &agent->rma_ops[i];
        }
    }
    return NULL;
}

/* RDMA on the node's active bulk link: SRM_RMA_POSTED, BLOCKED or errno. */
static int srm_rma_post(srm_agent_t *agent, srm_client_t *src,
                        const srm_frame_hdr_t *hdr, const srm_rma_req_t *req,
                        srm_region_t *local, const srm_rkey_t *key)
{
    srm_channel_t *chan;
    srm_link_t *link;
    srm_rma_inflight_t *op;
    srm_node_t *node;
    unsigned index, dev;
    uint32_t rkey;
    int ret;

    node = srm_node_resolve(agent, src, hdr->dst_node);
    if ((node == NULL) || (node->node_id != key->node_id)) {
        return EINVAL; /* the key is not of the node the ep talks to */
    }
    if (node->state == SRM_NODE_INVALID) {
        return EHOSTUNREACH;
    }
    if ((agent->verbs[0] == NULL) || !(key->flags & SRM_RKEY_FLAG_RDMA)) {
        return ENOTSUP; /* no RDMA on this wire, or not on the key's */
    }
    chan = &node->chan[SRM_CHANNEL_BULK];
    link = chan->links[chan->active];
    if ((link == NULL) || (link->state != SRM_LINK_READY) ||
        (link->qp == NULL) || link->muted ||
        (srm_verbs_qp_error(link->qp)[0] != '\0')) {
        return SRM_RMA_BLOCKED; /* connecting or failing over */
    }
    /* With one device, both paths are on it (srm_link_path_verbs), on
     * either side: its registration is the one at index 0. */
    dev  = ((unsigned)link->path < agent->num_devices) ? link->path : 0;
    rkey = (key->rkey[link->path] != 0) ? key->rkey[link->path] :
                                          key->rkey[0];
    if ((local->mr[dev] == NULL) || (rkey == 0) ||
        (req->length > UINT32_MAX)) {
        return ENOTSUP;
    }
    op = srm_rma_op_alloc(agent, &index);
    if (op == NULL) {
        return SRM_RMA_BLOCKED;
    }
    op->gen++;
    ret = srm_verbs_qp_rdma(link->qp, req->op == SRM_RMA_PUT,
                            srm_region_agent_addr(local, req->local_addr),
                            srm_verbs_mr_lkey(local->mr[dev]),
                            key->agent_addr +
                                    (req->remote_addr - key->client_addr),
                            rkey, (uint32_t)req->length,
                            ((uint64_t)op->gen << 16) | index);
    if (ret == 0) {
        return SRM_RMA_BLOCKED;
    } else if (ret < 0) {
        return EIO; /* the link notices its queue pair failed */
    }
    op->state  = SRM_RMA_OP_POSTED;
    op->status = 0;
    op->port   = src->port;
    op->cookie = req->cookie;
    op->length = req->length;
    op->link   = link;
    op->region = local->id;
    srm_regions_hold(local);
    agent->rma_busy++;
    return SRM_RMA_POSTED;
}

/* The connection that registered a region (its owner port), or NULL. */
static const srm_client_t *srm_rma_owner(srm_agent_t *agent, uint32_t owner)
{
    uint32_t slot = (owner & 0xffffu) - 1;
    srm_client_t *client;

    if (slot >= agent->num_slots) {
        return NULL;
    }
    client = agent->slots[slot];
    return ((client != NULL) && (client->port == owner)) ? client : NULL;
}

/* A client names only its own process's memory as the local end. */
static int srm_rma_owned_by(srm_agent_t *agent, uint32_t owner, pid_t pid)
{
    const srm_client_t *client = srm_rma_owner(agent, owner);

    return (client != NULL) && (client->pid == pid);
}

/* Under --any-user a key reaches only memory of its holder's own user:
 * a job is one user's, and a key one user leaked is no grant to another. */
static int srm_rma_same_user(srm_agent_t *agent, uint32_t owner, uid_t uid)
{
    const srm_client_t *client = srm_rma_owner(agent, owner);

    return (client != NULL) && (client->uid == uid);
}

/*
 * A key with the right region but not its token: a guess (ids, generations
 * and addresses are easy to learn), or a forgery; or another user's key.
 * A few are a bug; more are a search, and the searcher goes.
 */
static void srm_rma_bad_key(srm_agent_t *agent, srm_client_t *src,
                            const srm_rkey_t *key, const char *why)
{
    agent->regions.rejected++;
    if (++src->stats.bad_keys == SRM_RMA_BAD_KEYS_MAX) {
        srm_client_fail(agent, src, "too many RMA requests with forged keys");
    }
    srm_warn("port %u (%s, pid %d, uid %u): RMA to region %u.%u refused: "
             "%s (%llu so far)", src->port, src->name, (int)src->pid,
             (unsigned)src->uid, key->region_id, key->generation, why,
             (unsigned long long)src->stats.bad_keys);
}

/* 0 or a positive errno; moves the data when both ends check out. */
static int srm_rma_execute(srm_agent_t *agent, srm_client_t *src,
                           const srm_frame_hdr_t *hdr,
                           const srm_rma_req_t *req)
{
    srm_region_t *local, *remote;
    srm_rkey_status_t kstatus;
    srm_rkey_t key;
    void *laddr, *raddr;

    if ((req->op != SRM_RMA_PUT) && (req->op != SRM_RMA_GET)) {
        return EINVAL;
    }
    local = srm_regions_find(&agent->regions, SRM_MEM_ANY_OWNER,
                             req->local_region, req->local_generation,
                             req->local_addr, req->length);
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
        agent->regions.rejected++;
        return EINVAL;
    }
    if (key.node_id != agent->node_id) {
        /* The key's own range: the remote registry is out of our reach. */
        if (!srm_range_inside(key.client_addr, key.length, req->remote_addr,
                              req->length)) {
            agent->regions.rejected++;
            return EFAULT;
        }
        return srm_rma_post(agent, src, hdr, req, local, &key);
    }
    /* The registry, not the key, says where the region is and how long. */
    remote = srm_regions_find(&agent->regions, SRM_MEM_ANY_OWNER, key.region_id,
                              key.generation, req->remote_addr, req->length);
    if (remote == NULL) {
        srm_debug("port %u: RMA to region %u.%u, which is gone or smaller",
                  src->port, key.region_id, key.generation);
        return EFAULT;
    }
    if (key.token != remote->token) {
        srm_rma_bad_key(agent, src, &key, "a wrong key");
        return EACCES;
    }
    if (!srm_rma_same_user(agent, remote->owner, src->uid)) {
        srm_rma_bad_key(agent, src, &key, "the memory of another user");
        return EACCES;
    }
    laddr = srm_region_agent_addr(local, req->local_addr);
    raddr = srm_region_agent_addr(remote, req->remote_addr);
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
    done.status = srm_rma_execute(agent, src, hdr, &req);
    if (done.status == SRM_RMA_BLOCKED) {
        src->stats.blocked++;
        return SRM_SCHED_BLOCKED;
    } else if (done.status == SRM_RMA_POSTED) {
        src->stats.tx_frames++;
        src->stats.tx_bytes += req.length;
        return SRM_SCHED_DELIVERED;
    }
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

/* 1 once the client has its answer (or is gone), 0 if its ring is full. */
static int srm_rma_answer(srm_agent_t *agent, srm_rma_inflight_t *op)
{
    srm_client_t *client = srm_client_lookup(agent, op->port);
    srm_frame_hdr_t hdr;
    srm_rma_done_t done;

    if (client != NULL) {
        srm_frame_hdr_init(&hdr, SRM_FRAME_RMA_DONE, sizeof(done));
        hdr.src_port = client->port;
        hdr.dst_port = client->port;
        hdr.dst_key  = client->key;
        memset(&done, 0, sizeof(done));
        done.cookie = op->cookie;
        done.status = op->status;
        if (srm_deliver_to_port(agent, NULL, &hdr, &done) == 0) {
            return 0;
        }
    }
    agent->stats.rma_ops++;
    agent->stats.rma_bytes += op->length;
    agent->stats.rma_failed += (op->status != 0);
    op->state = SRM_RMA_OP_FREE;
    agent->rma_busy--;
    return 1;
}

static void srm_rma_finish(srm_agent_t *agent, srm_rma_inflight_t *op, int status)
{
    op->state  = SRM_RMA_OP_DONE;
    op->status = status;
    op->link   = NULL;
    srm_regions_release_hold(&agent->regions, op->region);
    op->region = 0;
}

/* The completions the link's queue pair has collected. */
static unsigned srm_rma_collect(srm_agent_t *agent, srm_link_t *link)
{
    unsigned count = 0, index;
    srm_rma_inflight_t *op;
    uint64_t id;
    int ok;

    while (srm_verbs_qp_rma_next(link->qp, &id, &ok)) {
        index = (unsigned)(id & 0xffff);
        op    = (index < SRM_RMA_MAX_OPS) ? &agent->rma_ops[index] : NULL;
        if ((op == NULL) || (op->state != SRM_RMA_OP_POSTED) ||
            (op->gen != (uint16_t)(id >> 16)) || (op->link != link)) {
            srm_warn("RDMA completion 0x%llx matches no operation",
                     (unsigned long long)id);
            continue;
        }
        srm_rma_finish(agent, op, ok ? 0 : EIO);
        ++count;
    }
    return count;
}

unsigned srm_rma_progress(srm_agent_t *agent)
{
    unsigned count = 0, i;
    srm_link_t *link;

    for (i = 0; i < agent->num_links; ++i) {
        link = agent->links[i];
        if ((link == NULL) || (link->qp == NULL)) {
            continue;
        }
        if (srm_verbs_qp_poll(link->qp) != 0) {
            /* Close it before its failures are answered: a client that
             * tries again at once must find the standby, not this one. */
            srm_link_close(agent, link, SRM_LOG_WARN, "queue pair 0x%x: %s",
                           srm_verbs_qp_num(link->qp),
                           srm_verbs_qp_error(link->qp));
            continue;
        }
        count += srm_rma_collect(agent, link);
    }
    for (i = 0; i < SRM_RMA_MAX_OPS; ++i) {
        if (agent->rma_ops[i].state == SRM_RMA_OP_DONE) {
            srm_rma_answer(agent, &agent->rma_ops[i]);
        }
    }
    return count;
}

void srm_rma_link_lost(srm_agent_t *agent, srm_link_t *link)
{
    unsigned i;

    srm_verbs_qp_poll(link->qp);
    srm_rma_collect(agent, link);
    for (i = 0; i < SRM_RMA_MAX_OPS; ++i) {
        if ((agent->rma_ops[i].state == SRM_RMA_OP_POSTED) &&
            (agent->rma_ops[i].link == link)) {
            /* Never silently lost: the client hears that it failed. */
            srm_rma_finish(agent, &agent->rma_ops[i], EIO);
        }
    }
}

void srm_rma_cleanup(srm_agent_t *agent)
{
    unsigned i;

    for (i = 0; i < SRM_RMA_MAX_OPS; ++i) {
        if (agent->rma_ops[i].state == SRM_RMA_OP_POSTED) {
            srm_regions_release_hold(&agent->regions, agent->rma_ops[i].region);
        }
        agent->rma_ops[i].state = SRM_RMA_OP_FREE;
    }
    agent->rma_busy = 0;
}
