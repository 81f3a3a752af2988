/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * RMA requests from clients (srm_rma.h): validated against the region
 * registry before any byte moves. Both ends on this node: a copy between
 * the agent's mappings. The target on another node: the request goes to
 * that node's agent (RMA_REMOTE on the small channel), which checks the
 * key against its own registry and moves the data on the queue pair of
 * its bulk link to us (or of the link the request came on, while that one
 * is not up): an RDMA READ of our bytes for a PUT, a WRITE into them for a
 * GET, under the rkey of our own registration, never one a client gave.
 * Its answer (RMA_REMOTE_DONE) answers the client; a refused key counts
 * against the client here, as one of this node's would. Both
 * regions are held while an operation is in flight. A failed operation
 * thus fails no queue pair that other processes' traffic uses; only a
 * region freed between the check and the RDMA still can (a race of its
 * owner's own making).
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
/* Operations this agent's clients may have with other nodes at once: the
 * rest of SRM_RMA_MAX_OPS is for serving theirs, which must never wait for
 * an answer of theirs behind them on the channel. */
#define SRM_RMA_MAX_ASKED    (SRM_RMA_MAX_OPS / 2)

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

/* The id an operation is known by, to completions and to other agents. */
static uint64_t srm_rma_op_id(const srm_agent_t *agent,
                              const srm_rma_inflight_t *op)
{
    return ((uint64_t)op->gen << 16) | (uint64_t)(op - agent->rma_ops);
}

/* The operation an id names, if it is still in flight; else NULL. */
static srm_rma_inflight_t *srm_rma_op_of(srm_agent_t *agent, uint64_t id)
{
    uint64_t index = id & 0xffff;
    srm_rma_inflight_t *op;

    if ((index >= SRM_RMA_MAX_OPS) || ((id >> 32) != 0)) {
        return NULL;
    }
    op = &agent->rma_ops[index];
    return ((op->state == SRM_RMA_OP_POSTED) &&
            (op->gen == (uint16_t)(id >> 16))) ? op : NULL;
}

/* The operation is under way; its region stays registered meanwhile. */
static int srm_rma_op_posted(srm_agent_t *agent, srm_rma_inflight_t *op,
                             srm_node_t *node, srm_link_t *link,
                             srm_region_t *region, uint64_t length)
{
    op->state  = SRM_RMA_OP_POSTED;
    op->status = 0;
    op->length = length;
    op->node   = node;
    op->link   = link;
    op->region = region->id;
    srm_regions_hold(region);
    agent->rma_busy++;
    return SRM_RMA_POSTED;
}

/* The device of a path: with one, both paths are on it (on either side,
 * srm_link_path_verbs), and its registration is the one at index 0. */
static unsigned srm_rma_dev(const srm_agent_t *agent, int path)
{
    return ((unsigned)path < agent->num_devices) ? (unsigned)path : 0;
}

/*
 * Hands the request to the key's node: SRM_RMA_POSTED, BLOCKED (no free
 * operation) or an errno.
 */
static int srm_rma_forward(srm_agent_t *agent, srm_client_t *src,
                           const srm_frame_hdr_t *hdr, const srm_rma_req_t *req,
                           srm_region_t *local, const srm_rkey_t *key)
{
    srm_rma_inflight_t *op;
    srm_rma_remote_t fwd;
    srm_node_t *node;
    unsigned index;
    int path;

    node = srm_node_resolve(agent, src, hdr->dst_node);
    if ((node == NULL) || (node->node_id != key->node_id)) {
        return EINVAL; /* the key is not of the node the ep talks to */
    }
    if (node->state == SRM_NODE_INVALID) {
        return EHOSTUNREACH;
    }
    if ((agent->verbs[0] == NULL) || !(key->flags & SRM_RKEY_FLAG_RDMA) ||
        (req->length > UINT32_MAX)) {
        return ENOTSUP; /* no RDMA on this wire, or not on the key's */
    }
    memset(&fwd, 0, sizeof(fwd));
    for (path = 0; path < SRM_WIRE_PATHS; ++path) {
        index = srm_rma_dev(agent, path);
        fwd.peer_rkey[path] = (local->mr[index] == NULL) ? 0 :
                              srm_wire_verbs_mr_rkey(local->mr[index]);
    }
    if (fwd.peer_rkey[0] == 0) {
        return ENOTSUP;
    }
    op = (agent->rma_asked < SRM_RMA_MAX_ASKED) ?
         srm_rma_op_alloc(agent, &index) : NULL;
    if (op == NULL) {
        return SRM_RMA_BLOCKED; /* the client's own ring waits */
    }
    op->gen++;
    fwd.id          = srm_rma_op_id(agent, op);
    fwd.op          = req->op;
    fwd.region_id   = key->region_id;
    fwd.generation  = key->generation;
    fwd.token       = key->token;
    fwd.remote_addr = req->remote_addr;
    fwd.length      = req->length;
    fwd.peer_addr   = (uintptr_t)srm_region_agent_addr(local, req->local_addr);
    if (srm_channel_send_rma(agent, node, SRM_FRAME_RMA_REMOTE, src->port,
                             &fwd, sizeof(fwd)) != UCS_OK) {
        return ENOMEM;
    }
    op->served = 0;
    op->port   = src->port;
    op->cookie = req->cookie;
    agent->rma_asked++;
    return srm_rma_op_posted(agent, op, node, NULL, local, req->length);
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
/* One more key of the client's refused: the SRM_RMA_BAD_KEYS_MAXth drops
 * it, for `reason`. */
static void srm_rma_count_bad_key(srm_agent_t *agent, srm_client_t *client,
                                  const char *reason)
{
    if (++client->stats.bad_keys == SRM_RMA_BAD_KEYS_MAX) {
        srm_client_fail(agent, client, reason);
    }
}

static void srm_rma_bad_key(srm_agent_t *agent, srm_client_t *src,
                            const srm_rkey_t *key, const char *why)
{
    agent->regions.rejected++;
    srm_rma_count_bad_key(agent, src, "too many RMA requests with forged keys");
    srm_warn("port %u (%s, pid %d, uid %u): RMA to region %u.%u refused: "
             "%s (%llu so far)", src->port, src->name, (int)src->pid,
             (unsigned)src->uid, key->region_id, key->generation, why,
             (unsigned long long)src->stats.bad_keys);
}

/* Another node refused a key of this client's (a wrong token): a guess
 * as much as one of this node's memory, and counted the same way. */
static void srm_rma_refused(srm_agent_t *agent, srm_client_t *client,
                            const srm_node_t *node)
{
    srm_rma_count_bad_key(agent, client, "too many RMA keys that other "
                                         "nodes refused");
    srm_warn("port %u (%s, pid %d, uid %u): node %u refused its RMA key "
             "(%llu refused so far)", client->port, client->name,
             (int)client->pid, (unsigned)client->uid, node->index,
             (unsigned long long)client->stats.bad_keys);
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
        return srm_rma_forward(agent, src, hdr, req, local, &key);
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
    if (srm_deliver_to_port(agent, NULL, &done_hdr, &done) ==
        UCS_ERR_NO_RESOURCE) {
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

/* A served operation: 1 once its requester is answered (or gone), 0 if
 * memory ran out. */
static int srm_rma_answer_node(srm_agent_t *agent, srm_rma_inflight_t *op)
{
    srm_rma_remote_done_t done;

    memset(&done, 0, sizeof(done));
    done.id     = op->cookie;
    done.status = op->status;
    if ((op->node->state != SRM_NODE_INVALID) &&
        (srm_channel_send_rma(agent, op->node, SRM_FRAME_RMA_REMOTE_DONE, 0,
                              &done, sizeof(done)) != UCS_OK)) {
        return 0;
    }
    agent->stats.rma_served++;
    return 1;
}

/* An operation a client asked for: 1 once it has its answer (or is gone),
 * 0 if its ring is full. */
static int srm_rma_answer_client(srm_agent_t *agent, srm_rma_inflight_t *op)
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
        if (srm_deliver_to_port(agent, NULL, &hdr, &done) ==
            UCS_ERR_NO_RESOURCE) {
            return 0;
        }
    }
    agent->stats.rma_ops++;
    agent->stats.rma_bytes += op->length;
    agent->stats.rma_failed += (op->status != 0);
    return 1;
}

static void srm_rma_answer(srm_agent_t *agent, srm_rma_inflight_t *op)
{
    if (op->served ? srm_rma_answer_node(agent, op) :
                     srm_rma_answer_client(agent, op)) {
        agent->rma_asked -= !op->served;
        op->state = SRM_RMA_OP_FREE;
        op->node  = NULL;
        agent->rma_busy--;
    }
}

static void srm_rma_finish(srm_agent_t *agent, srm_rma_inflight_t *op, int status)
{
    op->state  = SRM_RMA_OP_DONE;
    op->status = status;
    op->link   = NULL;
    srm_regions_release_hold(&agent->regions, op->region);
    op->region = 0;
}

/* Whether RDMA may be posted on the link's wire now. */
static int srm_rma_link_usable(srm_link_t *link)
{
    return (link != NULL) && (link->state == SRM_LINK_READY) &&
           srm_wire_can(link->wire, SRM_WIRE_CAP_RDMA) && !link->muted &&
           link->wire->usable(&link->conn);
}

/*
 * RMA_REMOTE, which came on `from`: SRM_RMA_POSTED, BLOCKED (no free
 * operation or send slot: both free as RDMA completes) or an errno to
 * answer with.
 */
static int srm_rma_serve_post(srm_agent_t *agent, srm_link_t *from,
                              const srm_frame_hdr_t *hdr,
                              const srm_rma_remote_t *req)
{
    srm_node_t *node    = from->node;
    srm_channel_t *chan = &node->chan[SRM_CHANNEL_BULK];
    srm_link_t *link    = chan->links[chan->active];
    srm_rma_inflight_t *op;
    srm_region_t *region;
    unsigned index, dev;
    uint32_t rkey;
    ucs_status_t status;

    if (((req->op != SRM_RMA_PUT) && (req->op != SRM_RMA_GET)) ||
        (req->length > UINT32_MAX)) {
        return EINVAL;
    }
    if (srm_order_refused(node, hdr->src_port)) {
        return EACCES;
    }
    region = srm_regions_find(&agent->regions, SRM_MEM_ANY_OWNER,
                              req->region_id, req->generation,
                              req->remote_addr, req->length);
    if (region == NULL) {
        return EFAULT;
    }
    if (req->token != region->token) {
        return EACCES; /* counted against the client by its own agent */
    }
    /* The bulk link's queue pair, or, while it is not there (connecting,
     * failing over, or never used: without failover it is made only for
     * frames), the one this request came on: never wait for it here,
     * where everything behind the request would wait too. */
    if (!srm_rma_link_usable(link)) {
        link = from;
    }
    if (!srm_rma_link_usable(link)) {
        return ENOTSUP; /* the tcp wire */
    }
    dev  = srm_rma_dev(agent, link->path);
    rkey = (req->peer_rkey[link->path] != 0) ? req->peer_rkey[link->path] :
                                               req->peer_rkey[0];
    if ((region->mr[dev] == NULL) || (rkey == 0)) {
        return ENOTSUP;
    }
    op = srm_rma_op_alloc(agent, &index);
    if (op == NULL) {
        return SRM_RMA_BLOCKED;
    }
    op->gen++;
    /* A PUT brings the requester's bytes here: a READ of them. */
    status = link->wire->rdma(&link->conn, req->op == SRM_RMA_GET,
                           srm_region_agent_addr(region, req->remote_addr),
                           srm_wire_verbs_mr_lkey(region->mr[dev]),
                           req->peer_addr, rkey, (uint32_t)req->length,
                           srm_rma_op_id(agent, op));
    if (status == UCS_ERR_NO_RESOURCE) {
        return SRM_RMA_BLOCKED;
    } else if (status != UCS_OK) {
        return EIO; /* the link notices its queue pair failed */
    }
    op->served = 1;
    op->port   = 0;
    op->cookie = req->id;
    return srm_rma_op_posted(agent, op, node, link, region, req->length);
}

ucs_status_t srm_rma_serve(srm_agent_t *agent, srm_link_t *from,
                           const srm_frame_hdr_t *hdr, const void *payload)
{
    srm_node_t *node = from->node;
    srm_rma_remote_done_t done;
    srm_rma_remote_t req;
    int error; /* the errno the requester is answered with */

    memcpy(&req, payload, sizeof(req));
    error = srm_rma_serve_post(agent, from, hdr, &req);
    if (error == SRM_RMA_BLOCKED) {
        return UCS_ERR_NO_RESOURCE;
    } else if (error == SRM_RMA_POSTED) {
        return UCS_OK;
    }
    srm_debug("node %u port %u: RMA on region %u.%u refused: %s",
              node->index, hdr->src_port, req.region_id, req.generation,
              strerror(error));
    memset(&done, 0, sizeof(done));
    done.id     = req.id;
    done.status = error;
    if (srm_channel_send_rma(agent, node, SRM_FRAME_RMA_REMOTE_DONE, 0, &done,
                             sizeof(done)) != UCS_OK) {
        return UCS_ERR_NO_RESOURCE; /* out of memory: read again later */
    }
    node->miskeyed += (error == EACCES);
    agent->stats.rma_served++;
    return UCS_OK;
}

void srm_rma_remote_done(srm_agent_t *agent, srm_node_t *node,
                         const void *payload)
{
    srm_rma_remote_done_t done;
    srm_rma_inflight_t *op;
    srm_client_t *client;

    memcpy(&done, payload, sizeof(done));
    op = srm_rma_op_of(agent, done.id);
    if ((op == NULL) || op->served || (op->node != node)) {
        srm_warn("node %u answered RMA 0x%llx, which it was not asked",
                 node->index, (unsigned long long)done.id);
        node->bad_frames++;
        return;
    }
    /* Its errno, which the client maps to a UCS status: one it knows, or
     * EIO. */
    srm_rma_finish(agent, op, ((done.status >= 0) && (done.status < 4096)) ?
                                      done.status : EIO);
    if ((done.status == EACCES) &&
        ((client = srm_client_lookup(agent, op->port)) != NULL)) {
        srm_rma_refused(agent, client, node);
    }
}

void srm_rma_node_lost(srm_agent_t *agent, srm_node_t *node)
{
    srm_rma_inflight_t *op;
    unsigned i;

    for (i = 0; i < SRM_RMA_MAX_OPS; ++i) {
        op = &agent->rma_ops[i];
        if ((op->state == SRM_RMA_OP_POSTED) && !op->served &&
            (op->node == node)) {
            srm_rma_finish(agent, op, EHOSTUNREACH);
        }
    }
}

/* The completions the link's queue pair has collected. */
static unsigned srm_rma_collect(srm_agent_t *agent, srm_link_t *link)
{
    unsigned count = 0, index;
    srm_rma_inflight_t *op;
    uint64_t id;
    int ok;

    while (link->wire->rdma_next(&link->conn, &id, &ok)) {
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
    char why[128];

    for (i = 0; i < agent->num_links; ++i) {
        link = agent->links[i];
        if ((link == NULL) || !srm_wire_can(link->wire, SRM_WIRE_CAP_RDMA)) {
            continue;
        }
        if (link->wire->poll(&link->conn) != UCS_OK) {
            /* Close it before its failures are answered: a client that
             * tries again at once must find the standby, not this one. */
            srm_link_close(agent, link,
                           link->wire->why(&link->conn, errno, why,
                                           sizeof(why)),
                           "%s", why);
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

    link->wire->poll(&link->conn);
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
    agent->rma_busy  = 0;
    agent->rma_asked = 0;
}
