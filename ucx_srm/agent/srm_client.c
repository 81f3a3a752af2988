/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The client registry: accepting connections, checking who connects,
 * attaching a client (its port, key, rings and doorbells), answering srmctl,
 * and dropping a client that left or broke the protocol.
 */
#define _GNU_SOURCE
#include "srm_agent.h"

#include <ucx_srm/common/srm_log.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <unistd.h>

#define SRM_PORT_SLOT_BITS 16
#define SRM_PORT_SLOT_MASK ((1u << SRM_PORT_SLOT_BITS) - 1)
#define SRM_MAX_CLIENTS    (SRM_PORT_SLOT_MASK - 1)


srm_client_t *srm_client_lookup_attached(srm_agent_t *agent, uint32_t port)
{
    uint32_t slot = (port & SRM_PORT_SLOT_MASK) - 1;
    srm_client_t *client;

    if (slot >= agent->num_slots) {
        return NULL;
    }
    client = agent->slots[slot];
    if ((client == NULL) || (client->port != port) ||
        (client->state != SRM_CLIENT_ATTACHED)) {
        return NULL;
    }
    return client;
}

uint64_t srm_client_tx_queued(const srm_client_t *client)
{
    uint64_t used = 0;
    unsigned r;

    for (r = 0; r < client->layout.num_tx_rings; ++r) {
        used += srm_ring_used(&client->ctl->tx[r]);
    }
    return used;
}

srm_client_t *srm_client_lookup(srm_agent_t *agent, uint32_t port)
{
    srm_client_t *client = srm_client_lookup_attached(agent, port);

    if ((client == NULL) || (client->failed != NULL) ||
        (client->departed_at != 0)) {
        return NULL;
    }
    return client;
}

static ucs_status_t
srm_client_alloc_slot(srm_agent_t *agent, srm_client_t *client)
{
    srm_client_t **slots;
    unsigned i, num;

    for (i = 0; i < agent->num_slots; ++i) {
        if (agent->slots[i] == NULL) {
            goto found;
        }
    }
    if (agent->num_slots >= SRM_MAX_CLIENTS) {
        return UCS_ERR_EXCEEDS_LIMIT;
    }
    num   = (agent->num_slots == 0) ? 64 : (agent->num_slots * 2);
    num   = (num > SRM_MAX_CLIENTS) ? SRM_MAX_CLIENTS : num;
    slots = realloc(agent->slots, num * sizeof(*slots));
    if (slots == NULL) {
        return UCS_ERR_NO_MEMORY;
    }
    memset(slots + agent->num_slots, 0,
           (num - agent->num_slots) * sizeof(*slots));
    agent->slots     = slots;
    i                = agent->num_slots;
    agent->num_slots = num;

found:
    /* The generation keeps a reused slot from matching a stale port. */
    agent->generation = (agent->generation + 1) & 0x7fff;
    client->port      = ((agent->generation + 1) << SRM_PORT_SLOT_BITS) |
                        (i + 1);
    agent->slots[i]   = client;
    return UCS_OK;
}

static ucs_status_t
srm_client_epoll_add(srm_agent_t *agent, int fd, uint32_t kind, uint32_t slot)
{
    struct epoll_event ev = {.events = EPOLLIN,
                             .data.u64 = SRM_EPOLL_DATA(kind, slot)};
    return (epoll_ctl(agent->epoll_fd, EPOLL_CTL_ADD, fd, &ev) == 0) ?
                   UCS_OK : UCS_ERR_IO_ERROR;
}

/* Until ATTACH names it: the peer's command name (what srmctl and other
 * control clients are known by in the log), else "?". */
static void srm_client_default_name(srm_client_t *client)
{
    char path[64];
    size_t n = 0;
    FILE *f;

    snprintf(path, sizeof(path), "/proc/%d/comm", (int)client->pid);
    f = fopen(path, "r");
    if (f != NULL) {
        n = fread(client->name, 1, sizeof(client->name) - 1, f);
        fclose(f);
    }
    while ((n > 0) && (client->name[n - 1] == '\n')) {
        --n;
    }
    if (n == 0) {
        client->name[n++] = '?';
    }
    client->name[n] = '\0';
}

/* A name is the client's word: shown in logs, srmctl status and top, on
 * an administrator's terminal. No control characters (an escape sequence,
 * a line break that would forge a line), no space, not empty. */
static void srm_client_clean_name(srm_client_t *client)
{
    char *c;

    for (c = client->name; *c != '\0'; ++c) {
        if ((unsigned char)*c <= ' ') {
            *c = '_';
        } else if ((unsigned char)*c >= 0x7f) {
            *c = '?';
        }
    }
    if (client->name[0] == '\0') {
        snprintf(client->name, sizeof(client->name), "?");
    }
}

void srm_client_accept(srm_agent_t *agent)
{
    struct ucred cred;
    socklen_t len = sizeof(cred);
    srm_client_t *client;
    int fd;

    fd = accept4(agent->listen_fd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
    if (fd < 0) {
        srm_agent_accept_failed(agent, "the clients' socket");
        return;
    }

    if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0) {
        srm_warn("SO_PEERCRED failed: %m; connection refused");
        close(fd);
        return;
    }
    if (!agent->any_user && (cred.uid != agent->uid)) {
        /* The peer learns why from the closed socket and its own log. */
        srm_warn("refused pid %d: uid %u is not served by this agent (uid %u)",
                 (int)cred.pid, (unsigned)cred.uid, (unsigned)agent->uid);
        close(fd);
        return;
    }

    client = calloc(1, sizeof(*client));
    if ((client == NULL) || (srm_client_alloc_slot(agent, client) != UCS_OK)) {
        srm_error("no room for a new client (pid %d); connection refused",
                  (int)cred.pid);
        free(client);
        close(fd);
        return;
    }
    client->state       = SRM_CLIENT_CONNECTED;
    client->sock_fd     = fd;
    client->doorbell_fd = -1;
    client->event_fd    = -1;
    client->shm_fd      = -1;
    client->pid         = cred.pid;
    client->uid         = cred.uid;
    srm_client_default_name(client);

    if (srm_client_epoll_add(agent, fd, SRM_EPOLL_SOCKET,
                             (client->port & SRM_PORT_SLOT_MASK) - 1) !=
        UCS_OK) {
        srm_client_drop(agent, client, "epoll_ctl failed");
    }
}

/* Memory registered by this agent can take RDMA: its wire is verbs. */
static uint32_t srm_client_rdma_flags(const srm_agent_t *agent)
{
    return (agent->verbs[0] != NULL) ? SRM_ATTACH_FLAG_RDMA : 0;
}

static void srm_client_attach_reply(srm_agent_t *agent, srm_client_t *client,
                                    int status, const char *error)
{
    srm_attach_rep_t rep;
    int fds[3] = {client->shm_fd, client->doorbell_fd, client->event_fd};

    memset(&rep, 0, sizeof(rep));
    srm_msg_hdr_init(&rep.hdr, SRM_MSG_ATTACH_REP);
    rep.status = status;
    if (status == 0) {
        rep.port        = client->port;
        rep.key         = client->key;
        rep.node_id     = agent->node_id;
        rep.max_payload = SRM_FRAME_MAX_PAYLOAD;
        rep.flags       = srm_client_rdma_flags(agent) |
                          ((!srm_wire_addr_is_set(&agent->wire[0]) ||
                            (agent->verbs[0] != NULL)) ?
                           SRM_ATTACH_FLAG_RMA : 0);
        rep.shm_size    = client->layout.total_size;
        memcpy(rep.wire, agent->wire, sizeof(rep.wire));
    }
    if (error != NULL) {
        snprintf(rep.error, sizeof(rep.error), "%s", error);
    }
    if (srm_sock_send(client->sock_fd, &rep, sizeof(rep), fds,
                      (status == 0) ? 3 : 0) < 0) {
        srm_warn("port %u: could not send attach reply: %m", client->port);
    }
}

static ucs_status_t srm_client_attach(srm_agent_t *agent, srm_client_t *client,
                                      const srm_attach_req_t *req)
{
    char shm_name[32];
    uint32_t i, slot = (client->port & SRM_PORT_SLOT_MASK) - 1;
    uint8_t *base;

    memcpy(client->name, req->name, sizeof(client->name));
    client->name[sizeof(client->name) - 1] = '\0';
    srm_client_clean_name(client);

    if ((srm_shm_layout_init(&client->layout, req->num_tx_rings,
                             req->tx_ring_size, req->rx_ring_size) != 0) ||
        (req->tx_ring_size < 4 * srm_frame_record_size(SRM_FRAME_MAX_PAYLOAD)) ||
        (req->rx_ring_size < 4 * srm_frame_record_size(SRM_FRAME_MAX_PAYLOAD))) {
        srm_client_attach_reply(agent, client, EINVAL,
                                "ring count or sizes out of range (rings must "
                                "be powers of two of at least 1 MiB)");
        return UCS_ERR_INVALID_PARAM;
    }

    if (getrandom(&client->key, sizeof(client->key), 0) !=
        sizeof(client->key)) {
        srm_client_attach_reply(agent, client, EIO,
                                "no randomness for a port key");
        return UCS_ERR_IO_ERROR;
    }

    snprintf(shm_name, sizeof(shm_name), "srm-port-%u", client->port);
    client->doorbell_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    client->event_fd    = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if ((client->doorbell_fd < 0) || (client->event_fd < 0) ||
        (srm_shm_create(&client->layout, shm_name, &client->shm_fd,
                        &client->shm) != 0)) {
        srm_error("port %u: cannot create rings or doorbells: %m",
                  client->port);
        srm_client_attach_reply(agent, client, ENOMEM,
                                "agent out of resources");
        return UCS_ERR_NO_MEMORY;
    }

    client->mem = srm_ring_mem_new(client->shm, &client->layout);
    if (client->mem == NULL) {
        srm_client_attach_reply(agent, client, ENOMEM, "agent out of memory");
        return UCS_ERR_NO_MEMORY;
    }
    base        = client->shm;
    client->ctl = client->shm;
    srm_ring_init_producer(&client->rx, &client->ctl->rx,
                           base + client->layout.rx_offset,
                           client->layout.rx_ring_size);
    for (i = 0; i < client->layout.num_tx_rings; ++i) {
        srm_ring_init_consumer(&client->tx[i].ring, &client->ctl->tx[i],
                               base + client->layout.tx_offset[i],
                               client->layout.tx_ring_size);
        client->tx[i].owner = client;
        if (srm_sched_add(&agent->sched, &client->tx[i]) != UCS_OK) {
            while (i-- > 0) {
                srm_sched_remove(&agent->sched, &client->tx[i]);
            }
            srm_client_attach_reply(agent, client, ENOMEM,
                                    "agent out of memory");
            return UCS_ERR_NO_MEMORY;
        }
    }
    client->state = SRM_CLIENT_ATTACHED;
    agent->num_clients++;

    if (srm_client_epoll_add(agent, client->doorbell_fd,
                             SRM_EPOLL_DOORBELL, slot) != UCS_OK) {
        srm_client_attach_reply(agent, client, EIO, "agent epoll failure");
        return UCS_ERR_IO_ERROR;
    }

    srm_client_attach_reply(agent, client, 0, NULL);
    /* The client has its copy; the mapping keeps the memory alive. */
    close(client->shm_fd);
    client->shm_fd = -1;

    agent->stats.clients_attached++;
    srm_info("attached port %u (%s, pid %d, uid %u): %u TX rings of %lu KiB, "
             "RX ring %lu KiB", client->port, client->name, (int)client->pid,
             (unsigned)client->uid, client->layout.num_tx_rings,
             (unsigned long)(client->layout.tx_ring_size >> 10),
             (unsigned long)(client->layout.rx_ring_size >> 10));
    return UCS_OK;
}

static void srm_client_reply_text(srm_client_t *client,
                                  srm_status_rep_t *rep)
{
    srm_msg_hdr_init(&rep->hdr, SRM_MSG_STATUS_REP);
    if (srm_sock_send(client->sock_fd, rep,
                      offsetof(srm_status_rep_t, text) + rep->length, NULL,
                      0) < 0) {
        srm_debug("could not answer pid %d: %m", (int)client->pid);
    }
}

static void srm_client_status(srm_agent_t *agent, srm_client_t *client,
                              uint32_t flags)
{
    srm_status_rep_t *rep = malloc(sizeof(*rep));

    if (rep == NULL) {
        return;
    }
    if (flags & SRM_STATUS_FLAG_TOP) {
        rep->length = (uint32_t)srm_status_format_top(agent, rep->text,
                                                      sizeof(rep->text));
    } else if (flags & SRM_STATUS_FLAG_SETTINGS) {
        rep->length = (uint32_t)srm_status_format_settings(agent, rep->text,
                                                           sizeof(rep->text));
    } else if (flags & SRM_STATUS_FLAG_JSON) {
        rep->length = (uint32_t)srm_status_format_json(agent, rep->text,
                                                       sizeof(rep->text));
    } else {
        rep->length = (uint32_t)srm_status_format(agent, rep->text,
                                                  sizeof(rep->text));
    }
    srm_client_reply_text(client, rep);
    free(rep);
}

/* Testing aid; only the agent's own user (or root) may break its links. */
static void srm_client_fault(srm_agent_t *agent, srm_client_t *client,
                             const srm_fault_req_t *req)
{
    srm_status_rep_t *rep;
    unsigned count;

    if ((client->uid != agent->uid) && (client->uid != 0)) {
        srm_client_drop(agent, client, "fault request from another user");
        return;
    }
    if ((req->how > SRM_FAULT_MUTE) || (req->kind >= SRM_CHANNEL_KINDS) ||
        (req->kind < -1)) {
        srm_client_drop(agent, client, "malformed fault request");
        return;
    }
    rep = malloc(sizeof(*rep));
    if (rep == NULL) {
        return;
    }
    count       = srm_link_inject_fault(agent, req->node, req->kind,
                                        (srm_fault_how_t)req->how);
    rep->length = (uint32_t)snprintf(rep->text, sizeof(rep->text),
                                     "%s %u link(s)\n",
                                     (req->how == SRM_FAULT_MUTE) ? "muted" :
                                                                    "reset",
                                     count);
    srm_client_reply_text(client, rep);
    free(rep);
}

/* Whether length more bytes would take client past UCX_SRM_MEM_LIMIT; if
 * so, why in error. */
static int srm_client_over_mem_limit(srm_agent_t *agent,
                                     const srm_client_t *client,
                                     uint64_t length, char *error,
                                     size_t size)
{
    uint64_t limit = agent->config.mem_limit;
    uint64_t used  = 0;
    const srm_client_t *other;
    unsigned i;

    /* Per user: a process could open as many connections as it likes. */
    for (i = 0; i < agent->num_slots; ++i) {
        other = agent->slots[i];
        if ((other != NULL) && (other->uid == client->uid)) {
            used += srm_regions_owner_bytes(&agent->regions, other->port);
        }
    }
    if ((length <= limit) && (used <= limit - length)) {
        return 0;
    }
    snprintf(error, size, "%llu more bytes would pass UCX_SRM_MEM_LIMIT "
             "(%llu of %llu bytes in use by uid %u)",
             (unsigned long long)length, (unsigned long long)used,
             (unsigned long long)limit, (unsigned)client->uid);
    srm_info("port %u (%s, pid %d): memory refused: %s", client->port,
             client->name, (int)client->pid, error);
    return 1;
}

static void srm_client_mem_reg(srm_agent_t *agent, srm_client_t *client,
                               const srm_mem_reg_req_t *req, int fd)
{
    const srm_region_t *region;
    srm_mem_reg_rep_t rep;
    unsigned i;

    memset(&rep, 0, sizeof(rep));
    srm_msg_hdr_init(&rep.hdr, SRM_MSG_MEM_REG_REP);
    if (fd < 0) {
        rep.status = EBADF;
        snprintf(rep.error, sizeof(rep.error), "no memfd with the request");
    } else if (srm_client_over_mem_limit(agent, client, req->length,
                                         rep.error, sizeof(rep.error))) {
        rep.status = ENOMEM;
        agent->regions.rejected++;
    } else if (srm_regions_add(&agent->regions, client->port, fd, req->address,
                               req->length, agent->verbs, &region) != UCS_OK) {
        rep.status = errno;
        snprintf(rep.error, sizeof(rep.error),
                 "cannot register %llu bytes: %m",
                 (unsigned long long)req->length);
    } else {
        rep.flags      = srm_client_rdma_flags(agent);
        rep.region_id  = region->id;
        rep.generation = region->generation;
        rep.token      = region->token;
        rep.node_id    = agent->node_id;
        rep.agent_addr = (uintptr_t)region->addr;
        for (i = 0; i < SRM_WIRE_PATHS; ++i) {
            rep.rkey[i] = (region->mr[i] != NULL) ?
                          srm_wire_verbs_mr_rkey(region->mr[i]) : 0;
        }
        srm_debug("port %u (%s): region %u.%u, %llu bytes at 0x%llx",
                  client->port, client->name, region->id,
                  region->generation, (unsigned long long)region->length,
                  (unsigned long long)region->client_addr);
    }
    if (srm_sock_send(client->sock_fd, &rep, sizeof(rep), NULL, 0) < 0) {
        srm_debug("port %u: could not answer a memory request: %m",
                  client->port);
    }
}

static void srm_client_mem_dereg(srm_agent_t *agent, srm_client_t *client,
                                 const srm_mem_dereg_req_t *req)
{
    srm_mem_dereg_rep_t rep;

    memset(&rep, 0, sizeof(rep));
    srm_msg_hdr_init(&rep.hdr, SRM_MSG_MEM_DEREG_REP);
    if (srm_regions_remove(&agent->regions, client->port, req->region_id,
                           req->generation) != UCS_OK) {
        rep.status = errno;
    }
    if (srm_sock_send(client->sock_fd, &rep, sizeof(rep), NULL, 0) < 0) {
        srm_debug("port %u: could not answer a memory request: %m",
                  client->port);
    }
}

static void srm_client_lane(srm_agent_t *agent, srm_client_t *client,
                            const srm_lane_req_t *req)
{
    int fds[SRM_PROTO_MAX_FDS];
    srm_lane_rep_t rep;
    int nfds;

    memset(&rep, 0, sizeof(rep));
    srm_msg_hdr_init(&rep.hdr, SRM_MSG_LANE_REP);
    srm_lane_answer(agent, client, req, &rep, fds, &nfds);
    if (srm_sock_send(client->sock_fd, &rep, sizeof(rep), fds, nfds) < 0) {
        srm_debug("pid %d: could not answer a lane request: %m",
                  (int)client->pid);
    }
}

/* Bytes a client published in its TX rings that the agent has not taken. */
static uint64_t srm_client_unsent(const srm_client_t *client)
{
    uint64_t bytes = 0;
    uint32_t i;

    for (i = 0; i < client->layout.num_tx_rings; ++i) {
        bytes += srm_load_acquire(&client->tx[i].ring.shared->head) -
                 client->tx[i].ring.local;
    }
    return bytes;
}

/*
 * The client hung up. What it left in its TX rings was sent as far as it
 * knows (its flush only waits for the agent to take frames): deliver it,
 * then drop the client. Frames to the client itself are refused from now
 * on (srm_client_lookup), as to any port that is gone.
 */
static void srm_client_depart(srm_agent_t *agent, srm_client_t *client)
{
    uint64_t unsent;

    if ((client->state != SRM_CLIENT_ATTACHED) || (client->failed != NULL)) {
        srm_client_drop(agent, client, NULL);
        return;
    }
    unsent = srm_client_unsent(client);
    if (unsent == 0) {
        srm_client_drop(agent, client, NULL);
        return;
    }
    epoll_ctl(agent->epoll_fd, EPOLL_CTL_DEL, client->sock_fd, NULL);
    client->departed_at = srm_agent_now();
    agent->num_departing++;
    srm_info("port %u (%s, pid %d) left %llu bytes in its send rings: "
             "delivering them before it goes", client->port, client->name,
             (int)client->pid, (unsigned long long)unsent);
}

void srm_client_reap_departed(srm_agent_t *agent)
{
    double now = srm_agent_now();
    srm_client_t *client;
    char reason[128];
    uint64_t unsent;
    unsigned i;

    for (i = 0; (i < agent->num_slots) && (agent->num_departing > 0); ++i) {
        client = agent->slots[i];
        if ((client == NULL) || (client->departed_at == 0)) {
            continue;
        }
        unsent = srm_client_unsent(client);
        if (unsent == 0) {
            srm_client_drop(agent, client, NULL);
        } else if (now - client->departed_at > agent->config.depart_timeout) {
            snprintf(reason, sizeof(reason),
                     "left %llu bytes in its send rings that could not be "
                     "delivered within %.1f s (UCX_SRM_DEPART_TIMEOUT)",
                     (unsigned long long)unsent, agent->config.depart_timeout);
            srm_client_drop(agent, client, reason);
        }
    }
}

void srm_client_handle_socket(srm_agent_t *agent, srm_client_t *client)
{
    union {
        srm_msg_hdr_t       hdr;
        srm_attach_req_t    attach;
        srm_status_req_t    status;
        srm_fault_req_t     fault;
        srm_mem_reg_req_t   mem_reg;
        srm_mem_dereg_req_t mem_dereg;
        srm_lane_req_t      lane;
    } msg;
    int fds[SRM_PROTO_MAX_FDS];
    int nfds = 1; /* a memfd with MEM_REG; any other fd is closed */
    int fd   = -1;
    ssize_t len;

    len = srm_sock_recv(client->sock_fd, &msg, sizeof(msg), fds, &nfds);
    if ((len >= 0) && (nfds > 0)) {
        fd = fds[0]; /* even with no bytes: a peer may send an fd alone */
    }
    if (len == 0) {
        if (fd >= 0) {
            close(fd);
        }
        srm_client_depart(agent, client);
        return;
    } else if (len < 0) {
        if ((errno != EAGAIN) && (errno != EINTR)) {
            srm_client_drop(agent, client,
                            (errno == EMSGSIZE) ? "oversized control message"
                                                : "control socket error");
        }
        return;
    }

    if (client->state == SRM_CLIENT_ATTACHED) {
        srm_client_drop(agent, client, "control message after attach");
    } else if (srm_msg_hdr_check(&msg.hdr, (size_t)len, SRM_MSG_ATTACH_REQ,
                                 sizeof(msg.attach)) == 0) {
        if (srm_client_attach(agent, client, &msg.attach) != UCS_OK) {
            srm_client_drop(agent, client, "attach failed");
        }
    } else if (srm_msg_hdr_check(&msg.hdr, (size_t)len, SRM_MSG_STATUS_REQ,
                                 sizeof(msg.status)) == 0) {
        srm_client_status(agent, client, msg.status.flags);
    } else if (srm_msg_hdr_check(&msg.hdr, (size_t)len, SRM_MSG_FAULT_REQ,
                                 sizeof(msg.fault)) == 0) {
        srm_client_fault(agent, client, &msg.fault);
    } else if (srm_msg_hdr_check(&msg.hdr, (size_t)len, SRM_MSG_MEM_REG_REQ,
                                 sizeof(msg.mem_reg)) == 0) {
        srm_client_mem_reg(agent, client, &msg.mem_reg, fd);
    } else if (srm_msg_hdr_check(&msg.hdr, (size_t)len,
                                 SRM_MSG_MEM_DEREG_REQ,
                                 sizeof(msg.mem_dereg)) == 0) {
        srm_client_mem_dereg(agent, client, &msg.mem_dereg);
    } else if (srm_msg_hdr_check(&msg.hdr, (size_t)len, SRM_MSG_LANE_REQ,
                                 sizeof(msg.lane)) == 0) {
        srm_client_lane(agent, client, &msg.lane);
    } else if (errno == EPROTONOSUPPORT) {
        srm_client_drop(agent, client, "unsupported protocol version");
    } else {
        srm_client_drop(agent, client, "malformed control message");
    }
    if (fd >= 0) {
        close(fd); /* a registered region keeps its own mapping */
    }
}

void srm_client_fail(srm_agent_t *agent, srm_client_t *client,
                     const char *reason)
{
    if (client->failed == NULL) {
        client->failed = reason;
        agent->num_failed++;
    }
}

void srm_client_reap(srm_agent_t *agent)
{
    unsigned i;

    for (i = 0; (i < agent->num_slots) && (agent->num_failed > 0); ++i) {
        if ((agent->slots[i] != NULL) && (agent->slots[i]->failed != NULL)) {
            srm_client_drop(agent, agent->slots[i], agent->slots[i]->failed);
        }
    }
}

/* Takes what the client wrote to other nodes directly into the agent's
 * count of its frames. */
static void srm_client_catch_up_lanes(srm_agent_t *agent,
                                      srm_client_t *client)
{
    uint32_t idx;

    for (idx = 1; idx < SRM_SHM_MAX_NODES; ++idx) {
        if (client->node_seq_shared[idx]) {
            srm_lane_catch_up(agent,
                              agent->nodes[client->node_map[idx] - 1]);
        }
    }
}

/*
 * Tells every node the client sent frames to that its port is gone, with
 * the number of frames it sent there, so that the node frees what it keeps
 * for the port once the last of them arrived. After the client's queues
 * left the scheduler: no frame of it is numbered after this.
 */
static void srm_client_say_gone(srm_agent_t *agent, srm_client_t *client)
{
    srm_node_t *node;
    uint32_t idx, final;

    for (idx = 1; idx < SRM_SHM_MAX_NODES; ++idx) {
        if (client->node_map[idx] == 0) {
            continue;
        }
        node  = agent->nodes[client->node_map[idx] - 1];
        final = client->node_seq[idx]; /* frames it wrote directly too */
        if (final != 0) {
            srm_channel_send_port_gone(agent, node, client->port, final);
        }
    }
}

void srm_client_drop(srm_agent_t *agent, srm_client_t *client,
                     const char *reason)
{
    uint32_t i, slot = (client->port & SRM_PORT_SLOT_MASK) - 1;
    srm_client_t **notify_p;
    unsigned n;

    if (client->state == SRM_CLIENT_ATTACHED) {
        srm_client_catch_up_lanes(agent, client); /* may fail it: first */
    }
    if (reason != NULL) {
        srm_warn("dropping port %u (%s, pid %d): %s", client->port,
                 client->name, (int)client->pid, reason);
        agent->stats.clients_dropped++;
    } else if (client->state == SRM_CLIENT_ATTACHED) {
        srm_info("port %u (%s, pid %d) detached", client->port, client->name,
                 (int)client->pid);
    }
    if (client->failed != NULL) {
        agent->num_failed--;
    }
    if (client->departed_at != 0) {
        agent->num_departing--;
    }
    srm_place_abandon(client); /* while its ring is still mapped */

    if (client->state == SRM_CLIENT_ATTACHED) {
        srm_channel_forget_client(agent, client);
        for (i = 0; i < client->layout.num_tx_rings; ++i) {
            srm_sched_remove(&agent->sched, &client->tx[i]);
        }
        agent->num_clients--;
        if (agent->num_clients == 0) {
            agent->idle_since = srm_agent_now();
        }
    }
    srm_deliver_release_backlog(client);
    n = srm_regions_remove_owner(&agent->regions, client->port);
    if (n > 0) {
        srm_info("port %u (%s, pid %d): released %u memory regions",
                 client->port, client->name, (int)client->pid, n);
    }
    for (i = 0; i < client->num_paused_nodes; ++i) {
        srm_channel_send_flow(agent, client->paused_nodes[i], SRM_FRAME_RESUME,
                              client->port);
    }
    if (client->state == SRM_CLIENT_ATTACHED) {
        srm_client_say_gone(agent, client);
    }
    /* Dropped in the middle of a progress pass, it may wait for a wakeup. */
    if (client->notify) {
        for (notify_p = &agent->notify_list;
             (*notify_p != NULL) && (*notify_p != client);
             notify_p = &(*notify_p)->notify_next) {
        }
        if (*notify_p != NULL) {
            *notify_p = client->notify_next;
        }
    }

    /*
     * Closing an fd removes it from the epoll set only with the file's last
     * reference, and the client holds one of the doorbell: left there, a
     * doorbell it rings after the drop would wake the agent forever.
     */
    close(client->sock_fd);
    if (client->doorbell_fd >= 0) {
        epoll_ctl(agent->epoll_fd, EPOLL_CTL_DEL, client->doorbell_fd, NULL);
        close(client->doorbell_fd);
    }
    if (client->event_fd >= 0) {
        close(client->event_fd);
    }
    if (client->shm_fd >= 0) {
        close(client->shm_fd);
    }
    if (client->mem != NULL) {
        srm_ring_mem_put(client->mem); /* holes may keep it a while */
    } else if (client->shm != NULL) {
        srm_shm_unmap(&client->layout, client->shm);
    }
    agent->slots[slot] = NULL;
    free(client);
}
