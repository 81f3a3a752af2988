/*
 * Links: the connections between agents that carry channels, and their
 * handshake.
 *
 *   initiator                          acceptor
 *   HELLO (id, kind, path, nonce) ->
 *                                  <-  HELLO_ACK (id, accepted, nonce, proof)
 *   AUTH (proof)                  ->   (only with a cluster secret)
 *
 * Both agents may connect the same (kind, path) at once; the connection
 * initiated by the lower node id wins. An acceptor trusts nothing a HELLO
 * claims (node id, addresses) until the initiator has proven the secret.
 * A link on which nothing arrives for FAILOVER_TIMEOUT is dead: both sides
 * send a heartbeat (an ACK) every quarter of it when idle.
 */
#define _GNU_SOURCE
#include "srm_agent.h"

#include <ucx_srm/common/srm_log.h>
#include <ucx_srm/common/srm_rma.h>
#include <ucx_srm/wire/srm_wire_tcp.h>

#include <arpa/inet.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#define SRM_LINK_IN_BUF   (2 * (sizeof(srm_frame_hdr_t) + SRM_FRAME_MAX_PAYLOAD))
#define SRM_LINK_RETRY    0.1 /* seconds between connects of one path, */
#define SRM_LINK_RETRY_MAX_SHIFT 3 /* doubled after each failure up to 8x */

#define SRM_LINK_MAX_HANDSHAKES     64  /* accepted, not yet proven */
#define SRM_LINK_HANDSHAKE_DEADLINE 5.0 /* seconds from accept or connect */

static const char *srm_link_state_names[] = {
    [SRM_LINK_CONNECTING] = "connecting",
    [SRM_LINK_HELLO_SENT] = "hello-sent",
    [SRM_LINK_HELLO_WAIT] = "hello-wait",
    [SRM_LINK_AUTH_WAIT]  = "auth-wait",
    [SRM_LINK_QP_WAIT]    = "qp-wait",
    [SRM_LINK_READY]      = "ready",
};

const char *srm_link_state_name(srm_link_state_t state)
{
    return ((unsigned)state < SRM_LINK_STATES) ? srm_link_state_names[state] :
                                                 "?";
}

static int srm_link_ready(srm_agent_t *agent, srm_link_t *link);
static int srm_link_read_qp(srm_agent_t *agent, srm_link_t *link);

/* After `failures` failed connects of a path in a row. */
static double srm_link_retry_delay(unsigned failures)
{
    unsigned shift = (failures == 0) ? 0 : (failures - 1);

    if (shift > SRM_LINK_RETRY_MAX_SHIFT) {
        shift = SRM_LINK_RETRY_MAX_SHIFT;
    }
    return SRM_LINK_RETRY * (double)(1u << shift);
}

void srm_link_dereg_paths(srm_verbs_mr_t *mr[SRM_WIRE_PATHS])
{
    int path;

    for (path = SRM_WIRE_PATHS - 1; path >= 0; --path) {
        if ((path == 0) || (mr[path] != mr[path - 1])) {
            srm_verbs_mr_dereg(mr[path]);
        }
        mr[path] = NULL;
    }
}

/* The verbs device of a path, or NULL for tcp. With one device, both
 * paths are on it, as both go to the one interface on the tcp wire. */
srm_verbs_dev_t *srm_link_path_verbs(const srm_agent_t *agent, int path)
{
    return agent->verbs[((unsigned)path < agent->num_devices) ? path : 0];
}

static int srm_link_on_qp(const srm_link_t *link)
{
    return (link->qp != NULL) && (link->state == SRM_LINK_READY);
}

void srm_link_set_events(srm_agent_t *agent, srm_link_t *link)
{
    struct epoll_event ev = {
        .events   = ((link->in_blocked || link->clients_poll) ? 0 :
                                                            EPOLLIN) |
                    (link->want_write ? EPOLLOUT : 0),
        .data.u64 = SRM_EPOLL_DATA(SRM_EPOLL_LINK, link->index)
    };

    if (srm_link_on_qp(link)) {
        /* The socket only tells that the peer left; room and input are
         * the queue pair's completions. */
        ev.events = EPOLLIN;
    }
    /* Called after every read: a system call only when the set changes. */
    if (ev.events != link->epoll_events) {
        link->epoll_events = ev.events;
        epoll_ctl(agent->epoll_fd, EPOLL_CTL_MOD, link->fd, &ev);
    }
}

ssize_t srm_link_sendv_mr(srm_link_t *link, const struct iovec *iov,
                          const srm_verbs_mr_t *const *mrs, int iovcnt)
{
    if (srm_link_on_qp(link)) {
        return srm_verbs_qp_sendv_mr(link->qp, iov, mrs, iovcnt);
    }
    return srm_wire_tcp_sendv(link->fd, iov, iovcnt);
}

ssize_t srm_link_sendv(srm_link_t *link, const struct iovec *iov, int iovcnt)
{
    return srm_link_sendv_mr(link, iov, NULL, iovcnt);
}

static srm_link_t *srm_link_new(srm_agent_t *agent, int fd, int initiator)
{
    struct epoll_event ev;
    srm_link_t **links, *link;
    unsigned i, num;

    for (i = 0; (i < agent->num_links) && (agent->links[i] != NULL); ++i) {
    }
    if (i == agent->num_links) {
        num   = (agent->num_links == 0) ? 16 : 2 * agent->num_links;
        links = realloc(agent->links, num * sizeof(*links));
        if (links == NULL) {
            return NULL;
        }
        memset(links + agent->num_links, 0,
               (num - agent->num_links) * sizeof(*links));
        agent->links     = links;
        agent->num_links = num;
    }

    link = calloc(1, sizeof(*link));
    if ((link == NULL) ||
        ((link->in_buf = malloc(SRM_LINK_IN_BUF)) == NULL) ||
        (srm_auth_nonce(link->nonce) != 0)) {
        if (link != NULL) {
            free(link->in_buf);
        }
        free(link);
        return NULL;
    }
    link->fd         = fd;
    link->index      = i;
    link->initiator  = initiator;
    link->state      = initiator ? SRM_LINK_CONNECTING : SRM_LINK_HELLO_WAIT;
    link->kind       = -1;
    link->path       = -1;
    link->want_write = initiator;
    link->last_rx    = srm_agent_now();
    link->last_tx    = link->last_rx;
    link->born       = link->last_rx;
    srm_retrans_watch_init(&link->retrans);
    ev.events        = EPOLLIN | (initiator ? EPOLLOUT : 0);
    ev.data.u64      = SRM_EPOLL_DATA(SRM_EPOLL_LINK, i);
    link->epoll_events = ev.events;
    if (epoll_ctl(agent->epoll_fd, EPOLL_CTL_ADD, fd, &ev) != 0) {
        free(link->in_buf);
        free(link);
        return NULL;
    }
    agent->links[i] = link;
    return link;
}

static const char *srm_link_peer_str(const srm_link_t *link, char *buf,
                                     size_t size)
{
    const srm_wire_addr_t *wire;
    int path = (link->path > 0) ? link->path : 0;

    if (link->node != NULL) {
        wire = link->node->wire;
    } else if (link->peer_id != 0) {
        wire = link->peer_wire;
    } else {
        return "an unknown agent";
    }
    if (wire[path].ipv4 == 0) {
        path = 0; /* one interface: both paths go there */
    }
    return srm_wire_tcp_str(wire[path].ipv4, wire[path].port, buf, size);
}

void srm_link_close(srm_agent_t *agent, srm_link_t *link,
                    srm_log_level_t level, const char *fmt, ...)
{
    srm_channel_t *chan = NULL;
    char reason[160], peer[32];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(reason, sizeof(reason), fmt, ap);
    va_end(ap);

    if ((link->node != NULL) && (link->kind >= 0) && (link->path >= 0)) {
        chan = &link->node->chan[link->kind];
        if (chan->links[link->path] != link) {
            chan = NULL;
        }
    }
    if ((chan != NULL) && (chan->failures[link->path] > 0) &&
        (link->state != SRM_LINK_READY) && (level > SRM_LOG_DEBUG)) {
        level = SRM_LOG_DEBUG; /* said once already; retries are quiet */
    }
    srm_log(level, "%s channel path %d link to %s closed: %s",
            (link->kind >= 0) ? srm_node_kind_name(link->kind) : "new",
            link->path, srm_link_peer_str(link, peer, sizeof(peer)), reason);

    /* Out of the table first: losing it may invalidate the node, which
     * closes the node's other links. */
    agent->links[link->index] = NULL;
    srm_place_cancel(link);
    if (chan != NULL) {
        if (link->state != SRM_LINK_READY) {
            chan->failures[link->path]++;
        }
        chan->retry_at[link->path] = srm_agent_now() +
                srm_link_retry_delay(chan->failures[link->path]);
        srm_channel_link_lost(agent, link);
    }
    if (link->shared) {
        /* Clients hold the socket too: end the connection itself. */
        shutdown(link->fd, SHUT_RDWR);
    }
    close(link->fd);
    if (link->qp != NULL) {
        srm_rma_link_lost(agent, link);
    }
    srm_verbs_qp_destroy(link->qp);
    free(link->in_buf);
    free(link);
}

/*
 * Has the peer's connection of (kind, path) been accepted here, with its
 * handshake not yet done (a queue pair or a secret: waiting for AUTH)?
 * Its initiator holds it ready already. A connection of ours now would be
 * refused by the peer, whose own is ready, while this side, at AUTH, would
 * drop the accepted one for ours if it has the lower node id: both would
 * close, and the channel fail over for nothing (seen on rxe). A pending
 * link lasts at most FAILOVER_TIMEOUT.
 */
static int srm_link_accept_pending(const srm_agent_t *agent,
                                   const srm_node_t *node, int kind, int path)
{
    const srm_link_t *link;
    unsigned i;

    for (i = 0; i < agent->num_links; ++i) {
        link = agent->links[i];
        if ((link != NULL) && !link->initiator && link->accepted &&
            (link->state == SRM_LINK_AUTH_WAIT) &&
            (link->peer_id == node->node_id) && (link->kind == kind) &&
            (link->path == path)) {
            return 1;
        }
    }
    return 0;
}

void srm_link_connect(srm_agent_t *agent, srm_node_t *node, int kind,
                      int path)
{
    srm_channel_t *chan = &node->chan[kind];
    const srm_wire_addr_t *wire;
    srm_verbs_dev_t *verbs;
    srm_link_t *link;
    char addr[32];
    double now;
    int fd;

    now = srm_agent_now();
    if ((chan->links[path] != NULL) || (now < chan->retry_at[path]) ||
        srm_link_accept_pending(agent, node, kind, path)) {
        return;
    }
    chan->retry_at[path] = now + SRM_LINK_RETRY;
    /* A node with one interface is reached on it by both paths. */
    wire = (node->wire[path].ipv4 != 0) ? &node->wire[path] : &node->wire[0];

    fd = srm_wire_tcp_connect(wire->ipv4, wire->port);
    if (fd < 0) {
        if (chan->failures[path]++ == 0) {
            srm_warn("cannot connect %s channel path %d to %s: %m",
                     srm_node_kind_name(kind), path,
                     srm_wire_tcp_str(wire->ipv4, wire->port, addr,
                                      sizeof(addr)));
        }
        return;
    }
    link = srm_link_new(agent, fd, 1);
    if (link == NULL) {
        close(fd);
        return;
    }
    link->node         = node;
    link->kind         = kind;
    link->path         = path;
    chan->links[path]  = link;
    chan->connects++;
    verbs = srm_link_path_verbs(agent, path);
    if ((verbs != NULL) &&
        ((link->qp = srm_verbs_qp_create(verbs, link->index)) == NULL)) {
        srm_link_close(agent, link, SRM_LOG_WARN, "no queue pair");
    }
}

static unsigned srm_link_num_handshaking(const srm_agent_t *agent)
{
    unsigned i, count = 0;

    for (i = 0; i < agent->num_links; ++i) {
        count += (agent->links[i] != NULL) && !agent->links[i]->initiator &&
                 (agent->links[i]->state != SRM_LINK_READY);
    }
    return count;
}

void srm_link_listen_events(srm_agent_t *agent, uint32_t events)
{
    struct epoll_event ev;
    unsigned path;

    for (path = 0; path < SRM_WIRE_PATHS; ++path) {
        if (agent->wire_fd[path] >= 0) {
            ev.events   = events;
            ev.data.u64 = SRM_EPOLL_DATA(SRM_EPOLL_WIRE, path);
            epoll_ctl(agent->epoll_fd, EPOLL_CTL_MOD, agent->wire_fd[path],
                      &ev);
        }
    }
}

/*
 * Connections from anyone who can reach the port: until one proves the
 * secret it costs a buffer and an fd, so only so many may wait at once
 * (others are closed as they come), and an accept that fails for want of
 * fds or memory pauses the level-triggered listeners instead of spinning.
 */
void srm_link_accept(srm_agent_t *agent, unsigned path)
{
    int fd = srm_wire_tcp_accept(agent->wire_fd[path]);

    if (fd < 0) {
        srm_agent_accept_failed(agent, "the wire");
        return;
    }
    if (srm_link_num_handshaking(agent) >= SRM_LINK_MAX_HANDSHAKES) {
        agent->stats.handshakes_refused++;
        srm_debug("%u connections wait for their handshake: one more "
                  "closed", SRM_LINK_MAX_HANDSHAKES);
        close(fd);
        return;
    }
    if (srm_link_new(agent, fd, 0) == NULL) {
        srm_error("no memory for a new channel connection");
        close(fd);
    }
}

/* Our queue pair as HELLO carries it; all zero on the tcp wire. */
static void srm_link_local_qp(const srm_link_t *link, srm_hello_qp_t *qp)
{
    memset(qp, 0, sizeof(*qp));
    if (link->qp != NULL) {
        srm_verbs_qp_local(link->qp, qp);
    }
}

static void srm_link_auth_context(const srm_agent_t *agent,
                                  const srm_link_t *link,
                                  srm_auth_context_t *ctx)
{
    ctx->initiator_id = link->initiator ? agent->node_id : link->peer_id;
    ctx->acceptor_id  = link->initiator ? link->peer_id : agent->node_id;
    memcpy(ctx->initiator_nonce,
           link->initiator ? link->nonce : link->peer_nonce,
           SRM_AUTH_NONCE_LEN);
    memcpy(ctx->acceptor_nonce,
           link->initiator ? link->peer_nonce : link->nonce,
           SRM_AUTH_NONCE_LEN);
    ctx->kind = (uint8_t)link->kind;
    ctx->path = (uint8_t)link->path;
    srm_link_local_qp(link, link->initiator ? &ctx->initiator_qp :
                                              &ctx->acceptor_qp);
    memcpy(link->initiator ? &ctx->acceptor_qp : &ctx->initiator_qp,
           &link->peer_qp, sizeof(link->peer_qp));
}

/* Handshake frames are small: a fresh socket always has room for them. */
static int srm_link_send_raw(srm_link_t *link, const void *msg, size_t size)
{
    struct iovec iov = {.iov_base = (void*)msg, .iov_len = size};

    if (srm_link_sendv(link, &iov, 1) != (ssize_t)size) {
        return -1;
    }
    link->last_tx = srm_agent_now();
    return 0;
}

static int srm_link_send_hello(srm_agent_t *agent, srm_link_t *link,
                               srm_frame_type_t type)
{
    srm_auth_context_t ctx;
    struct {
        srm_frame_hdr_t hdr;
        srm_hello_t     hello;
    } msg;
    int path;

    memset(&msg, 0, sizeof(msg));
    srm_frame_hdr_init(&msg.hdr, type, sizeof(msg.hello));
    msg.hello.node_id  = agent->node_id;
    for (path = 0; path < SRM_WIRE_PATHS; ++path) {
        msg.hello.ipv4[path] = agent->wire[path].ipv4;
        msg.hello.port[path] = agent->wire[path].port;
    }
    msg.hello.kind     = (uint8_t)link->kind;
    msg.hello.path     = (uint8_t)link->path;
    msg.hello.accepted = (uint8_t)link->accepted;
    msg.hello.secret   = agent->auth.len > 0;
    if (link->qp != NULL) {
        msg.hello.wire = SRM_HELLO_WIRE_VERBS;
    }
    srm_link_local_qp(link, &msg.hello.qp);
    memcpy(msg.hello.nonce, link->nonce, SRM_AUTH_NONCE_LEN);
    if ((type == SRM_FRAME_HELLO_ACK) && (agent->auth.len > 0)) {
        srm_link_auth_context(agent, link, &ctx);
        srm_auth_prove(&agent->auth, SRM_AUTH_ROLE_ACCEPTOR, &ctx,
                       msg.hello.mac);
    }
    return srm_link_send_raw(link, &msg, sizeof(msg));
}

/* Acceptor, authenticated: the link takes its place in the channel. */
static int srm_link_install(srm_agent_t *agent, srm_link_t *link)
{
    srm_channel_t *chan;
    srm_node_t *node;
    srm_link_t *old;

    node = srm_node_find(agent, link->peer_id);
    if (node == NULL) {
        node = srm_node_create(agent, link->peer_id, link->peer_wire);
        if (node == NULL) {
            srm_link_close(agent, link, SRM_LOG_ERROR, "out of memory");
            return -1;
        }
    }
    if ((node->state == SRM_NODE_INVALID) &&
        !srm_node_revive(agent, node, link->peer_wire, "its agent called")) {
        srm_link_close(agent, link, SRM_LOG_INFO,
                       "node 0x%016llx was declared failed",
                       (unsigned long long)link->peer_id);
        return -1;
    }
    chan = &node->chan[link->kind];
    old  = chan->links[link->path];
    if ((old != NULL) && (old != link)) {
        if ((old->state == SRM_LINK_READY) || (link->peer_id > agent->node_id)) {
            /* Ours is up (or won the tie-break) meanwhile. */
            srm_link_close(agent, link, SRM_LOG_DEBUG, "lost the tie-break");
            return -1;
        }
        srm_link_close(agent, old, SRM_LOG_DEBUG,
                       "replaced by the peer's connection");
    }
    link->node               = node;
    chan->links[link->path]  = link;
    return srm_link_ready(agent, link);
}

/* Both ends of a path must use the same wire; 0 if they do. */
static int srm_link_check_wire(srm_agent_t *agent, srm_link_t *link,
                               uint8_t peer_wire)
{
    static const char *names[] = {"tcp", "verbs"};
    uint8_t ours = (srm_link_path_verbs(agent, link->path) != NULL) ?
                   SRM_HELLO_WIRE_VERBS : SRM_HELLO_WIRE_TCP;

    if (peer_wire == ours) {
        return 0;
    }
    srm_link_close(agent, link, SRM_LOG_WARN,
                   "refused: path %d of the peer is on the %s wire, ours on "
                   "the %s wire (UCX_SRM_DEVICES must name the same kind of "
                   "device on every node)", link->path,
                   (peer_wire <= SRM_HELLO_WIRE_VERBS) ? names[peer_wire] :
                                                         "unknown",
                   names[ours]);
    return -1;
}

/* Verbs wire: our queue pair, made if need be; it stays in INIT, where
 * it neither sends nor receives, until srm_link_connect_qp. */
static int srm_link_make_qp(srm_agent_t *agent, srm_link_t *link)
{
    if ((link->qp == NULL) &&
        ((link->qp = srm_verbs_qp_create(srm_link_path_verbs(agent,
                                                             link->path),
                                         link->index)) == NULL)) {
        srm_link_close(agent, link, SRM_LOG_WARN, "no queue pair");
        return -1;
    }
    return 0;
}

/* Verbs wire: our queue pair, connected to the peer's: only once the peer
 * proved the cluster secret (it may then write to our regions). */
static int srm_link_connect_qp(srm_agent_t *agent, srm_link_t *link,
                               const srm_hello_qp_t *peer)
{
    if (srm_link_make_qp(agent, link) != 0) {
        return -1;
    }
    if (srm_verbs_qp_connect(link->qp, peer) != 0) {
        srm_link_close(agent, link, SRM_LOG_WARN,
                       "cannot connect queue pair 0x%x to the peer's 0x%x: %m",
                       srm_verbs_qp_num(link->qp), peer->qpn);
        return -1;
    }
    return 0;
}

/* Called while the handshake is parsed; -1 if the link died meanwhile. */
static int srm_link_ready(srm_agent_t *agent, srm_link_t *link)
{
    unsigned index = link->index;

    /* The acceptor heard the peer's own addresses in its HELLO. */
    srm_node_path_ready(link->node, link->path,
                        link->initiator ? NULL : link->peer_wire);
    link->state = SRM_LINK_READY;
    srm_link_set_events(agent, link);
    srm_channel_link_ready(agent, link);
    if (agent->links[index] != link) {
        return -1;
    }
    /* The peer's queue pair may have sent before this side was ready:
     * read once the handshake's input is parsed. */
    link->qp_unread = (link->qp != NULL);
    return 0;
}

static int srm_link_on_hello(srm_agent_t *agent, srm_link_t *link,
                             const srm_hello_t *hello)
{
    srm_node_t *node;
    srm_link_t *old;
    int path;

    if ((hello->kind >= SRM_CHANNEL_KINDS) ||
        (hello->path >= SRM_WIRE_PATHS) || (hello->node_id == 0) ||
        (hello->node_id == agent->node_id)) {
        srm_link_close(agent, link, SRM_LOG_WARN, "bad HELLO");
        return -1;
    }
    link->peer_id = hello->node_id;
    link->kind    = hello->kind;
    link->path    = hello->path;
    for (path = 0; path < SRM_WIRE_PATHS; ++path) {
        link->peer_wire[path].ipv4 = hello->ipv4[path];
        link->peer_wire[path].port = hello->port[path];
    }
    memcpy(link->peer_nonce, hello->nonce, SRM_AUTH_NONCE_LEN);
    memcpy(&link->peer_qp, &hello->qp, sizeof(link->peer_qp));
    if (hello->secret != (agent->auth.len > 0)) {
        srm_link_close(agent, link, SRM_LOG_WARN,
                       "refused: %s a cluster secret, this agent %s",
                       hello->secret ? "the peer uses" : "the peer has no",
                       (agent->auth.len > 0) ? "requires one" : "has none");
        return -1;
    }

    if (srm_link_check_wire(agent, link, hello->wire) != 0) {
        return -1;
    }

    node         = srm_node_find(agent, hello->node_id);
    old          = (node != NULL) ? node->chan[link->kind].links[link->path] :
                                    NULL;
    link->accepted = (old == NULL) || (old->state != SRM_LINK_READY &&
                                       hello->node_id < agent->node_id);
    /* Its number goes in our answer; it is connected at AUTH. */
    if (link->accepted && (hello->wire == SRM_HELLO_WIRE_VERBS) &&
        (srm_link_make_qp(agent, link) != 0)) {
        return -1;
    }
    if (srm_link_send_hello(agent, link, SRM_FRAME_HELLO_ACK) != 0) {
        srm_link_close(agent, link, SRM_LOG_WARN, "cannot answer HELLO: %m");
        return -1;
    }
    if (!link->accepted) {
        srm_link_close(agent, link, SRM_LOG_DEBUG,
                       "our connection to that node stays");
        return -1;
    }
    if ((agent->auth.len > 0) || (link->qp != NULL)) {
        /* A queue pair also waits for AUTH: it says the initiator's
         * queue pair is ready to receive. */
        link->state = SRM_LINK_AUTH_WAIT;
        return 0;
    }
    return srm_link_install(agent, link);
}

/* Acceptor, the peer proven: our queue pair is connected, and the
 * initiator told (an AUTH back, without proof) that it may send. */
static int srm_link_qp_proven(srm_agent_t *agent, srm_link_t *link)
{
    struct {
        srm_frame_hdr_t  hdr;
        srm_auth_proof_t proof;
    } msg;

    if (srm_link_connect_qp(agent, link, &link->peer_qp) != 0) {
        return -1;
    }
    srm_frame_hdr_init(&msg.hdr, SRM_FRAME_AUTH, sizeof(msg.proof));
    memset(&msg.proof, 0, sizeof(msg.proof));
    if (srm_link_send_raw(link, &msg, sizeof(msg)) != 0) {
        srm_link_close(agent, link, SRM_LOG_WARN,
                       "cannot say the queue pair is ready: %m");
        return -1;
    }
    return 0;
}

static int srm_link_on_hello_ack(srm_agent_t *agent, srm_link_t *link,
                                 const srm_hello_t *ack)
{
    srm_auth_context_t ctx;
    struct {
        srm_frame_hdr_t  hdr;
        srm_auth_proof_t proof;
    } msg;

    if ((ack->node_id != link->node->node_id) ||
        (ack->kind != (uint8_t)link->kind) ||
        (ack->path != (uint8_t)link->path)) {
        srm_link_close(agent, link, SRM_LOG_WARN,
                       "HELLO_ACK from an unexpected node 0x%016llx (a new "
                       "agent at that address?)",
                       (unsigned long long)ack->node_id);
        return -1;
    }
    link->peer_id = ack->node_id;
    memcpy(link->peer_nonce, ack->nonce, SRM_AUTH_NONCE_LEN);
    memcpy(&link->peer_qp, &ack->qp, sizeof(link->peer_qp));
    if (agent->auth.len > 0) {
        srm_link_auth_context(agent, link, &ctx);
        if (!ack->secret ||
            !srm_auth_check(&agent->auth, SRM_AUTH_ROLE_ACCEPTOR, &ctx,
                            ack->mac)) {
            srm_link_close(agent, link, SRM_LOG_WARN,
                           "refused: the peer %s",
                           ack->secret ? "proved another cluster secret (or "
                                         "its HELLO_ACK was changed on the "
                                         "way)" :
                                         "has no cluster secret");
            return -1;
        }
    } else if (ack->secret) {
        srm_link_close(agent, link, SRM_LOG_WARN,
                       "refused: the peer uses a cluster secret, this agent "
                       "has none");
        return -1;
    }
    if (!ack->accepted) {
        srm_link_close(agent, link, SRM_LOG_DEBUG,
                       "the peer's connection won the tie-break");
        return -1;
    }
    if ((srm_link_check_wire(agent, link, ack->wire) != 0) ||
        ((link->qp != NULL) &&
         (srm_link_connect_qp(agent, link, &ack->qp) != 0))) {
        return -1;
    }
    if ((agent->auth.len > 0) || (link->qp != NULL)) {
        srm_frame_hdr_init(&msg.hdr, SRM_FRAME_AUTH, sizeof(msg.proof));
        memset(&msg.proof, 0, sizeof(msg.proof));
        if (agent->auth.len > 0) {
            srm_auth_prove(&agent->auth, SRM_AUTH_ROLE_INITIATOR, &ctx,
                           msg.proof.mac);
        }
        if (srm_link_send_raw(link, &msg, sizeof(msg)) != 0) {
            srm_link_close(agent, link, SRM_LOG_WARN, "cannot send AUTH: %m");
            return -1;
        }
    }
    if (link->qp != NULL) {
        link->state = SRM_LINK_QP_WAIT; /* until the peer's QP is connected */
        return 0;
    }
    return srm_link_ready(agent, link);
}

static int srm_link_on_auth(srm_agent_t *agent, srm_link_t *link,
                            const srm_auth_proof_t *proof)
{
    srm_auth_context_t ctx;

    srm_link_auth_context(agent, link, &ctx);
    if ((agent->auth.len > 0) &&
        !srm_auth_check(&agent->auth, SRM_AUTH_ROLE_INITIATOR, &ctx,
                        proof->mac)) {
        srm_link_close(agent, link, SRM_LOG_WARN,
                       "refused: the peer proved another cluster secret (or "
                       "the handshake was changed on the way)");
        return -1;
    }
    if ((link->qp != NULL) && (srm_link_qp_proven(agent, link) != 0)) {
        return -1;
    }
    return srm_link_install(agent, link);
}

/* The payload length a numbered frame of this type must have (an AM: any
 * it has, within the frame limits its parser checked). */
static uint32_t srm_link_payload_length(uint8_t type, uint32_t length)
{
    switch (type) {
    case SRM_FRAME_AM:
        return length;
    case SRM_FRAME_RMA_REMOTE:
        return sizeof(srm_rma_remote_t);
    case SRM_FRAME_RMA_REMOTE_DONE:
        return sizeof(srm_rma_remote_done_t);
    default:
        return 0;
    }
}

/* One frame of a ready link: 1 consumed, 0 no room yet, -1 link closed. */
static int srm_link_on_frame(srm_agent_t *agent, srm_link_t *link,
                             const srm_frame_hdr_t *hdr, const void *payload)
{
    int ret;

    switch (hdr->type) {
    case SRM_FRAME_AM:
    case SRM_FRAME_PAUSE:
    case SRM_FRAME_RESUME:
    case SRM_FRAME_PORT_GONE:
    case SRM_FRAME_PORT_REFUSED:
    case SRM_FRAME_RMA_REMOTE:
    case SRM_FRAME_RMA_REMOTE_DONE:
        if (hdr->length != srm_link_payload_length(hdr->type, hdr->length)) {
            break;
        }
        ret = srm_channel_receive(agent, link, hdr, payload);
        if (ret < 0) {
            srm_link_close(agent, link, SRM_LOG_WARN,
                           "frame %u arrived before frame %u of the channel",
                           hdr->chan_seq,
                           link->node->chan[link->kind].rx_expected);
        }
        return ret;
    case SRM_FRAME_ACK:
        if (hdr->length != 0) {
            break;
        }
        if (srm_channel_on_ack(agent, link, hdr->seq) != 0) {
            srm_link_close(agent, link, SRM_LOG_WARN,
                           "ack %u for frames never sent", hdr->seq);
            return -1;
        }
        return 1;
    case SRM_FRAME_BYE:
        srm_node_invalidate(agent, link->node, 0, "its agent left");
        return -1;
    default:
        break;
    }
    link->node->bad_frames++;
    agent->stats.bad_frames++;
    srm_link_close(agent, link, SRM_LOG_WARN,
                   "frame type %u (length %u) not expected on a ready link",
                   hdr->type, hdr->length);
    return -1;
}

/* A handshake frame: 0 handled, -1 link closed. */
static int srm_link_on_handshake(srm_agent_t *agent, srm_link_t *link,
                                 const srm_frame_hdr_t *hdr,
                                 const void *payload)
{
    if ((hdr->type == SRM_FRAME_HELLO) &&
        (link->state == SRM_LINK_HELLO_WAIT) &&
        (hdr->length == sizeof(srm_hello_t))) {
        return srm_link_on_hello(agent, link, payload);
    } else if ((hdr->type == SRM_FRAME_HELLO_ACK) &&
               (link->state == SRM_LINK_HELLO_SENT) &&
               (hdr->length == sizeof(srm_hello_t))) {
        return srm_link_on_hello_ack(agent, link, payload);
    } else if ((hdr->type == SRM_FRAME_AUTH) &&
               (link->state == SRM_LINK_AUTH_WAIT) &&
               (hdr->length == sizeof(srm_auth_proof_t))) {
        return srm_link_on_auth(agent, link, payload);
    } else if ((hdr->type == SRM_FRAME_AUTH) &&
               (link->state == SRM_LINK_QP_WAIT) &&
               (hdr->length == sizeof(srm_auth_proof_t))) {
        return srm_link_ready(agent, link); /* the peer's QP is connected */
    }
    agent->stats.bad_frames++;
    srm_link_close(agent, link, SRM_LOG_WARN,
                   "frame type %u (length %u) not expected in state %s",
                   hdr->type, hdr->length, srm_link_state_names[link->state]);
    return -1;
}

/* Handles the complete frames in the input buffer; -1 if the link died. */
static int srm_link_parse(srm_agent_t *agent, srm_link_t *link)
{
    size_t offset = 0, size;
    srm_frame_status_t status;
    srm_frame_hdr_t hdr;
    const uint8_t *payload;
    int ret;

    link->in_blocked = 0;
    for (;;) {
        status = srm_frame_next(link->in_buf + offset, link->in_len - offset,
                                &hdr, &size);
        if (status != SRM_FRAME_OK) {
            if (link->node != NULL) {
                link->node->bad_frames++;
            }
            agent->stats.bad_frames++;
            srm_link_close(agent, link, SRM_LOG_WARN,
                           "malformed frame: %s (type %u, version %u)",
                           srm_frame_status_str(status), hdr.type,
                           hdr.version);
            return -1;
        }
        if (size == 0) {
            /* The rest of the frame is still on its way: maybe straight
             * into its destination's ring. */
            if ((link->in_len - offset >= sizeof(hdr)) &&
                srm_place_begin(agent, link, &hdr,
                                link->in_buf + offset + sizeof(hdr),
                                link->in_len - offset - sizeof(hdr))) {
                offset = link->in_len;
            }
            break;
        }
        payload = link->in_buf + offset + sizeof(hdr);
        if (link->state == SRM_LINK_READY) {
            ret = srm_link_on_frame(agent, link, &hdr, payload);
            if (ret < 0) {
                return -1;
            } else if (ret == 0) {
                link->in_blocked = 1;
                break;
            }
        } else if (srm_link_on_handshake(agent, link, &hdr, payload) != 0) {
            return -1;
        }
        offset += size;
    }

    memmove(link->in_buf, link->in_buf + offset, link->in_len - offset);
    link->in_len -= offset;
    srm_link_set_events(agent, link);
    if (link->qp_unread) {
        link->qp_unread = 0;
        return srm_link_read_qp(agent, link);
    }
    return 0;
}

/* Verbs: what the queue pair received, parsed as the socket's input
 * would be, until it is all taken or the input waits for room. -1 if the
 * link died. */
static int srm_link_read_qp(srm_agent_t *agent, srm_link_t *link)
{
    struct iovec iov[2];
    ssize_t got;
    int iovcnt;

    while (!link->in_blocked) {
        /* As from a socket: a frame being placed first (srm_place.c). */
        iovcnt               = srm_place_iov(link, &iov[0]);
        iov[iovcnt].iov_base = link->in_buf + link->in_len;
        iov[iovcnt].iov_len  = SRM_LINK_IN_BUF - link->in_len;
        ++iovcnt;
        got = srm_verbs_qp_recvv(link->qp, iov, iovcnt);
        if (got < 0) {
            srm_link_close(agent, link, SRM_LOG_WARN,
                           "queue pair 0x%x: %s", srm_verbs_qp_num(link->qp),
                           srm_verbs_qp_error(link->qp));
            return -1;
        }
        if ((got == 0) && ((srm_verbs_qp_pending(link->qp) == 0) ||
                           (link->in_len == SRM_LINK_IN_BUF))) {
            return 0;
        }
        if (link->muted) {
            srm_place_cancel(link);
            continue; /* a dead path: what arrives is lost */
        }
        link->last_rx  = srm_agent_now();
        link->in_len  += srm_place_fill(agent, link, (size_t)got);
        if (srm_link_parse(agent, link) != 0) {
            return -1;
        }
    }
    return 0;
}

/* Verbs: the link's socket carries nothing after the handshake but the
 * news that the peer went away. */
static void srm_link_read_control(srm_agent_t *agent, srm_link_t *link)
{
    uint8_t byte;
    ssize_t got = srm_wire_tcp_recv(link->fd, &byte, sizeof(byte));

    if ((got < 0) && (errno == 0)) {
        srm_link_close(agent, link, SRM_LOG_INFO, "the peer closed it");
    } else if (got < 0) {
        srm_link_close(agent, link, SRM_LOG_WARN,
                       "control connection failed: %m");
    } else if (got > 0) {
        agent->stats.bad_frames++;
        srm_link_close(agent, link, SRM_LOG_WARN,
                       "bytes on the control connection of a queue pair");
    }
}

static void srm_link_read(srm_agent_t *agent, srm_link_t *link)
{
    struct iovec iov[2];
    ssize_t got;
    int iovcnt;

    if (srm_link_on_qp(link)) {
        srm_link_read_control(agent, link);
        return;
    }
    if (link->in_blocked) {
        return;
    }
    /* A frame being placed first, then what comes after it. Reading only
     * headers into in_buf, to place every large frame, measured slower:
     * a system call per frame costs more here than the copy it saves. */
    iovcnt               = srm_place_iov(link, &iov[0]);
    iov[iovcnt].iov_base = link->in_buf + link->in_len;
    iov[iovcnt].iov_len  = SRM_LINK_IN_BUF - link->in_len;
    ++iovcnt;
    got = srm_wire_tcp_recvv(link->fd, iov, iovcnt);
    if ((got > 0) && link->muted) {
        srm_place_cancel(link);
        return; /* a dead path: what arrives is lost */
    }
    if (got < 0) {
        if (errno == 0) {
            srm_link_close(agent, link, SRM_LOG_INFO, "the peer closed it");
        } else {
            srm_link_close(agent, link, SRM_LOG_WARN, "receive failed: %m");
        }
        return;
    }
    if (got > 0) {
        link->last_rx = srm_agent_now();
    }
    link->in_len += srm_place_fill(agent, link, (size_t)got);
    srm_link_parse(agent, link);
}

/* Reads inside the node's lane: its clients may read the socket too, and
 * what the agent delivers moves the order they check against. */
void srm_link_read_in_lane(srm_agent_t *agent, srm_link_t *link)
{
    srm_node_t *node = link->node;
    unsigned index   = link->index;

    if (node == NULL) {
        srm_link_read(agent, link);
        return;
    }
    srm_lane_enter(agent, node);
    if (agent->links[index] == link) { /* entering may close it */
        srm_link_read(agent, link);
    }
    srm_lane_leave(agent, node);
}

static void srm_link_connected(srm_agent_t *agent, srm_link_t *link)
{
    int error = srm_wire_tcp_connect_result(link->fd);
    srm_node_t *node;
    int path;

    if (error == ECONNREFUSED) {
        node = link->node;
        path = link->path;
        if (!srm_node_path_refused(node, path)) {
            /* A firewall, or a wrong second address: the channels go on
             * on the other path, and this one is tried again later. */
            if (node->chan[link->kind].failures[path] == 0) {
                srm_warn("node %u: path %d refused the %s channel's "
                         "connection; it goes on without it, retrying",
                         node->index, path, srm_node_kind_name(link->kind));
            }
            srm_link_close(agent, link, SRM_LOG_DEBUG, "connect refused");
            return;
        }
        srm_link_close(agent, link, SRM_LOG_INFO, "connect refused");
        /* Nothing listens on any path: the agent of that node is gone for
         * good (a new one would have a new node id), or its address was
         * wrong (srm_node_revive). */
        srm_node_invalidate(agent, node, 1,
                            "nothing listens at its address any more");
        return;
    } else if (error != 0) {
        srm_link_close(agent, link, SRM_LOG_WARN, "connect failed: %s",
                       strerror(error));
        return;
    }
    link->want_write = 0;
    link->state      = SRM_LINK_HELLO_SENT;
    srm_link_set_events(agent, link);
    if (srm_link_send_hello(agent, link, SRM_FRAME_HELLO) != 0) {
        srm_link_close(agent, link, SRM_LOG_WARN, "cannot send HELLO: %m");
    }
}

void srm_link_event(srm_agent_t *agent, unsigned index, uint32_t events)
{
    srm_link_t *link = (index < agent->num_links) ? agent->links[index] : NULL;

    if (link == NULL) {
        return;
    }
    if (link->state == SRM_LINK_CONNECTING) {
        if (events & (EPOLLOUT | EPOLLERR | EPOLLHUP)) {
            srm_link_connected(agent, link);
        }
        return;
    }
    if (link->in_blocked && (events & (EPOLLERR | EPOLLHUP))) {
        /* Epoll reports these whatever we ask for: a reset connection
         * whose input waits for room would wake us on every pass, and
         * count as ready while it waits. What it carried unacknowledged
         * goes again on another path. */
        srm_link_close(agent, link, SRM_LOG_WARN,
                       "connection lost while its input waited for room");
        return;
    }
    if (events & (EPOLLIN | EPOLLERR | EPOLLHUP)) {
        srm_link_read_in_lane(agent, link);
        link = agent->links[index];
    }
    if ((link != NULL) && (events & EPOLLOUT) &&
        (link->state == SRM_LINK_READY)) {
        srm_channel_write_link(agent, link, 0);
    }
}

/* A verbs device's completion queues fired: their links read and write. */
void srm_link_verbs_event(srm_agent_t *agent, unsigned path)
{
    srm_verbs_qp_t *qp;
    srm_link_t *link;
    unsigned index;

    if ((path >= SRM_WIRE_PATHS) || (agent->verbs[path] == NULL)) {
        return;
    }
    while ((qp = srm_verbs_dev_next_event(agent->verbs[path])) != NULL) {
        index = srm_verbs_qp_owner(qp);
        link  = (index < agent->num_links) ? agent->links[index] : NULL;
        if ((link == NULL) || (link->qp != qp)) {
            continue;
        }
        if (srm_verbs_qp_poll(qp) != 0) {
            srm_link_close(agent, link, SRM_LOG_WARN, "queue pair 0x%x: %s",
                           srm_verbs_qp_num(qp), srm_verbs_qp_error(qp));
            continue;
        }
        if (link->state != SRM_LINK_READY) {
            continue; /* what came early waits for srm_link_ready */
        }
        if ((srm_link_read_qp(agent, link) == 0) && link->want_write) {
            srm_channel_write_link(agent, link, 0);
        }
    }
    if (srm_verbs_dev_take_room(agent->verbs[path])) {
        /* The device's send buffers had run out: whoever waited for
         * them tries again (a link whose room comes from its own
         * completions is among them, and finds it). */
        for (index = 0; index < agent->num_links; ++index) {
            link = agent->links[index];
            if ((link != NULL) && srm_link_on_qp(link) && link->want_write) {
                srm_channel_write_link(agent, link, 0);
            }
        }
    }
}

/* Links whose input waited for room try again; returns how many went on. */
unsigned srm_link_progress(srm_agent_t *agent)
{
    unsigned count = 0, i;
    srm_node_t *node;
    srm_link_t *link;
    int ret;

    for (i = 0; i < agent->num_links; ++i) {
        link = agent->links[i];
        if ((link == NULL) || !link->in_blocked) {
            continue;
        }
        node = link->node;
        if (node != NULL) {
            srm_lane_enter(agent, node);
        }
        /* Entering may close it. */
        ret = (agent->links[i] == link) ? srm_link_parse(agent, link) : -1;
        if (node != NULL) {
            srm_lane_leave(agent, node);
        }
        if ((ret == 0) && !link->in_blocked) {
            ++count;
            if (link->qp != NULL) {
                srm_link_read_qp(agent, link); /* no event will come */
            }
        }
    }
    return count;
}

/*
 * The active connection of a channel whose standby is up, if it carried
 * data since the last look: closed when it retransmits too much
 * (srm_retrans.h). 1 if it was closed.
 */
static int srm_link_replace_if_lossy(srm_agent_t *agent, srm_link_t *link,
                                     double now)
{
    srm_channel_t *chan;
    srm_link_t *standby;
    uint32_t total;

    if ((agent->config.retrans_limit == 0) || !agent->config.failover ||
        (link->state != SRM_LINK_READY) || (link->qp != NULL) ||
        link->muted || (link->node == NULL)) {
        return 0;
    }
    chan    = &link->node->chan[link->kind];
    standby = chan->links[1 - link->path];
    if ((chan->links[chan->active] != link) || (standby == NULL) ||
        (standby->state != SRM_LINK_READY) || standby->muted ||
        (chan->tx_bytes == link->retrans_tx_seen) ||
        !srm_retrans_look_due(&link->retrans, now)) {
        return 0;
    }
    link->retrans_tx_seen = chan->tx_bytes;
    if ((srm_wire_tcp_retransmits(link->fd, &total) != 0) ||
        !srm_retrans_judge(&link->retrans, total, now,
                           agent->config.retrans_limit,
                           (chan->replaced > 0) ? chan->replaced_at : -1.0)) {
        return 0;
    }
    chan->replaced++;
    chan->replaced_at = now;
    srm_link_close(agent, link, SRM_LOG_WARN,
                   "%u TCP segments retransmitted within %.0f ms: the "
                   "channel moves to its standby connection "
                   "(UCX_SRM_RETRANS_LIMIT=%u)", link->retrans.in_window,
                   (now - link->retrans.window_start) * 1e3,
                   agent->config.retrans_limit);
    return 1;
}

/*
 * Every link is checked for silence and for retransmitting too much, and
 * when idle sends a heartbeat;
 * one we do not read (its receiver is full) too, or the peer would hear
 * nothing from it and fail it over.
 */
void srm_link_timers(srm_agent_t *agent, double now)
{
    double timeout = agent->config.failover_timeout;
    srm_link_t *link;
    unsigned i;

    /* What clients read themselves was heard, too. */
    for (i = 0; i < agent->num_nodes; ++i) {
        srm_lane_catch_up(agent, agent->nodes[i]);
    }
    for (i = 0; i < agent->num_links; ++i) {
        link = agent->links[i];
        if (link == NULL) {
            continue;
        }
        if (link->in_blocked) {
            link->last_rx = now; /* we are the ones not reading */
        } else if (((now - link->last_rx) > timeout) &&
            (link->state != SRM_LINK_CONNECTING)) {
            /*
             * Our own absence is no silence of the peer: an agent that was
             * not scheduled for a while (a busy node) comes back here
             * before it polls its sockets, where the peer's heartbeats
             * wait. Read them first, or every link of every node fails
             * over at once.
             */
            if (srm_link_on_qp(link)) {
                srm_link_read_qp(agent, link);
            } else {
                srm_link_read_in_lane(agent, link);
            }
            link = agent->links[i];
            if (link == NULL) {
                continue;
            }
        }
        if ((link->state != SRM_LINK_READY) &&
            (link->state != SRM_LINK_CONNECTING) &&
            ((now - link->born) > SRM_LINK_HANDSHAKE_DEADLINE)) {
            /* A byte now and then must not keep a handshake open. */
            srm_link_close(agent, link, SRM_LOG_INFO,
                           "handshake not done within %.0f ms (%s)",
                           SRM_LINK_HANDSHAKE_DEADLINE * 1e3,
                           srm_link_state_names[link->state]);
            continue;
        }
        if ((now - link->last_rx) > timeout) {
            if (link->state != SRM_LINK_READY) {
                srm_link_close(agent, link, SRM_LOG_INFO,
                               "no answer within %.0f ms (%s)",
                               timeout * 1e3,
                               srm_link_state_names[link->state]);
                continue;
            } else if (agent->config.failover) {
                srm_link_close(agent, link, SRM_LOG_WARN,
                               "nothing heard for %.0f ms",
                               (now - link->last_rx) * 1e3);
                continue;
            }
        }
        if (srm_link_replace_if_lossy(agent, link, now)) {
            continue;
        }
        if ((link->state == SRM_LINK_READY) && agent->config.failover &&
            ((now - link->last_tx) > (timeout / 4))) {
            srm_channel_write_link(agent, link, 1); /* heartbeat */
        }
    }
}

void srm_link_say_bye(srm_agent_t *agent)
{
    srm_frame_hdr_t bye;
    srm_node_t *node;
    srm_link_t *link;
    unsigned i;

    srm_frame_hdr_init(&bye, SRM_FRAME_BYE, 0);
    for (i = 0; i < agent->num_links; ++i) {
        link = agent->links[i];
        if ((link == NULL) || (link->state != SRM_LINK_READY)) {
            continue;
        }
        node = link->node;
        srm_lane_enter(agent, node); /* no client writes in between */
        if ((link->ctl_left == 0) && srm_channel_at_boundary(link) &&
            (srm_link_send_raw(link, &bye, sizeof(bye)) == 0) &&
            (link->qp != NULL)) {
            /* Closing a queue pair drops what it has not sent yet. */
            srm_verbs_qp_drain(link->qp, 0.1);
        }
        srm_lane_leave(agent, node);
    }
}

/* Breaks the active links of the chosen channels; returns how many. */
unsigned srm_link_inject_fault(srm_agent_t *agent, uint32_t node_index,
                               int kind, srm_fault_how_t how)
{
    struct linger abort_close = {.l_onoff = 1, .l_linger = 0};
    unsigned count = 0, i;
    srm_channel_t *chan;
    srm_link_t *link;
    int k;

    for (i = 0; i < agent->num_nodes; ++i) {
        if ((node_index != SRM_FAULT_ALL_NODES) && (node_index != i)) {
            continue;
        }
        for (k = 0; k < SRM_CHANNEL_KINDS; ++k) {
            chan = &agent->nodes[i]->chan[k];
            link = chan->links[chan->active];
            if (((kind >= 0) && (kind != k)) || (link == NULL) ||
                link->muted) {
                continue;
            }
            ++count;
            if (how == SRM_FAULT_MUTE) {
                srm_warn("fault injected: node %u %s channel path %d muted",
                         i, srm_node_kind_name(k), link->path);
                srm_lane_enter(agent, agent->nodes[i]);
                link->muted = 1; /* for clients, too */
                srm_lane_leave(agent, agent->nodes[i]);
                if (link->want_write) {
                    /* It writes no more: room on it must not wake us. */
                    link->want_write = 0;
                    srm_link_set_events(agent, link);
                }
                continue;
            }
            if (link->qp != NULL) {
                /* Its flushed work requests fail the link, as a real
                 * queue pair error would. */
                srm_warn("fault injected: node %u %s channel path %d queue "
                         "pair 0x%x moved to the error state", i,
                         srm_node_kind_name(k), link->path,
                         srm_verbs_qp_num(link->qp));
                srm_verbs_qp_force_error(link->qp);
                continue;
            }
            setsockopt(link->fd, SOL_SOCKET, SO_LINGER, &abort_close,
                       sizeof(abort_close));
            srm_link_close(agent, link, SRM_LOG_WARN,
                           "fault injected: connection reset");
        }
    }
    return count;
}

static int srm_link_listen(srm_agent_t *agent, unsigned path,
                           const char *device)
{
    struct epoll_event ev = {.events   = EPOLLIN,
                             .data.u64 = SRM_EPOLL_DATA(SRM_EPOLL_WIRE, path)};
    uint16_t port = (path > 0) ? agent->wire[0].port :
                                 htons((uint16_t)agent->config.tcp_port);
    struct epoll_event verbs_ev = {
        .events   = EPOLLIN,
        .data.u64 = SRM_EPOLL_DATA(SRM_EPOLL_VERBS, path)};
    struct epoll_event async_ev = {
        .events   = EPOLLIN,
        .data.u64 = SRM_EPOLL_DATA(SRM_EPOLL_VERBS_ASYNC, path)};
    srm_verbs_dev_params_t params = {
        .xrc_mode  = agent->config.xrc,
        .recv_bufs = agent->config.verbs_recv_bufs,
        .send_bufs = agent->config.verbs_send_bufs};
    uint16_t bound_port = 0;
    char addr[32], netdev[32];
    uint32_t ipv4;
    int fd;

    if (srm_verbs_is_device_spec(device)) {
        /* Frames go on queue pairs; handshakes on the port's interface. */
        if ((srm_verbs_dev_open(device, &params,
                                &agent->verbs[path], netdev,
                                sizeof(netdev)) != 0)) {
            return -1;
        }
        if ((epoll_ctl(agent->epoll_fd, EPOLL_CTL_ADD,
                       srm_verbs_dev_event_fd(agent->verbs[path]),
                       &verbs_ev) != 0) ||
            (epoll_ctl(agent->epoll_fd, EPOLL_CTL_ADD,
                       srm_verbs_dev_async_fd(agent->verbs[path]),
                       &async_ev) != 0)) {
            srm_error("epoll on the completions or events of %s failed: %m",
                      device);
            return -1;
        }
        device = netdev;
    }
    if (srm_wire_tcp_iface_addr(device, &ipv4, agent->wire_device[path],
                                sizeof(agent->wire_device[path])) != 0) {
        if (strcmp(device, "auto") == 0) {
            srm_info("no network interface with IPv4: this agent serves "
                     "its own node only");
            return 1;
        }
        srm_error("UCX_SRM_DEVICES: '%s' is not an interface that is up and "
                  "has an IPv4 address", device);
        return -1;
    }
    /* The second path tries the first one's port, so that one port
     * number names the agent; any port will do if it is taken. */
    fd = srm_wire_tcp_listen(ipv4, port, &bound_port);
    if ((fd < 0) && (path > 0)) {
        fd = srm_wire_tcp_listen(ipv4, 0, &bound_port);
    }
    if ((fd < 0) ||
        (epoll_ctl(agent->epoll_fd, EPOLL_CTL_ADD, fd, &ev) != 0)) {
        srm_error("cannot listen for other agents on %s (%s): %m",
                  srm_wire_tcp_str(ipv4, port, addr, sizeof(addr)),
                  agent->wire_device[path]);
        if (fd >= 0) {
            close(fd);
        }
        return -1;
    }
    agent->wire_fd[path]   = fd;
    agent->wire[path].ipv4 = ipv4;
    agent->wire[path].port = bound_port;
    if (agent->verbs[path] != NULL) {
        snprintf(agent->wire_device[path], sizeof(agent->wire_device[path]),
                 "%s (%s)", srm_verbs_dev_name(agent->verbs[path]), netdev);
    }
    srm_info("path %u: channels to other nodes on %s (%s)", path,
             srm_wire_tcp_str(ipv4, bound_port, addr, sizeof(addr)),
             agent->wire_device[path]);
    return 0;
}

int srm_link_init(srm_agent_t *agent)
{
    char devices[128], *device, *save = NULL;
    unsigned path;
    int ret;

    for (path = 0; path < SRM_WIRE_PATHS; ++path) {
        agent->wire_fd[path] = -1;
    }
    if (srm_auth_load(&agent->auth, agent->config.secret_file) != 0) {
        return -1;
    }
    if (strcmp(agent->config.devices, "none") == 0) {
        srm_info("UCX_SRM_DEVICES=none: no channels to other nodes");
        return 0;
    }
    snprintf(devices, sizeof(devices), "%s", agent->config.devices);
    for (device = strtok_r(devices, ",", &save), path = 0; device != NULL;
         device = strtok_r(NULL, ",", &save), ++path) {
        if (path >= SRM_WIRE_PATHS) {
            srm_error("UCX_SRM_DEVICES=%s: at most %d interfaces",
                      agent->config.devices, SRM_WIRE_PATHS);
            return -1;
        }
        ret = srm_link_listen(agent, path, device);
        if (ret != 0) {
            return (ret > 0) ? 0 : -1;
        }
        agent->num_devices = path + 1;
    }
    if (!agent->config.failover) {
        srm_info("UCX_SRM_FAILOVER=n: no acks, no standby connections; a "
                 "lost connection fails its node");
    }
    return 0;
}

void srm_link_cleanup(srm_agent_t *agent)
{
    unsigned i;

    for (i = 0; i < agent->num_links; ++i) {
        if (agent->links[i] != NULL) {
            srm_link_close(agent, agent->links[i], SRM_LOG_DEBUG,
                           "agent stopping");
        }
    }
    free(agent->links);
    agent->links     = NULL;
    agent->num_links = 0;
    for (i = 0; i < SRM_WIRE_PATHS; ++i) {
        if (agent->wire_fd[i] >= 0) {
            close(agent->wire_fd[i]);
            agent->wire_fd[i] = -1;
        }
    }
}

void srm_link_close_devices(srm_agent_t *agent)
{
    unsigned i;

    for (i = 0; i < SRM_WIRE_PATHS; ++i) {
        srm_verbs_dev_close(agent->verbs[i]);
        agent->verbs[i] = NULL;
    }
}
