/* SPDX-License-Identifier: BSD-3-Clause */
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
#include "srm_link.h"

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

/* After `failures` failed connects of a path in a row. */
static double srm_link_retry_delay(unsigned failures)
{
    unsigned shift = (failures == 0) ? 0 : (failures - 1);

    if (shift > SRM_LINK_RETRY_MAX_SHIFT) {
        shift = SRM_LINK_RETRY_MAX_SHIFT;
    }
    return SRM_LINK_RETRY * (double)(1u << shift);
}

void srm_link_dereg_paths(srm_wire_verbs_mr_t *mr[SRM_WIRE_PATHS])
{
    int path;

    for (path = SRM_WIRE_PATHS - 1; path >= 0; --path) {
        if ((path == 0) || (mr[path] != mr[path - 1])) {
            srm_wire_verbs_mr_dereg(mr[path]);
        }
        mr[path] = NULL;
    }
}

/* The verbs device of a path, or NULL for tcp. With one device, both
 * paths are on it, as both go to the one interface on the tcp wire. */
srm_wire_verbs_dev_t *srm_link_path_verbs(const srm_agent_t *agent, int path)
{
    return agent->verbs[((unsigned)path < agent->num_devices) ? path : 0];
}

void srm_link_set_events(srm_agent_t *agent, srm_link_t *link)
{
    struct epoll_event ev = {
        .events   = ((link->in_blocked || link->clients_poll) ? 0 :
                                                            EPOLLIN) |
                    (link->want_write ? EPOLLOUT : 0),
        .data.u64 = SRM_EPOLL_DATA(SRM_EPOLL_LINK, link->index)
    };

    if (srm_link_on_completions(link)) {
        /* The socket only tells that the peer left; room and input are
         * the endpoint's completions. */
        ev.events = EPOLLIN;
    }
    /* Called after every read: a system call only when the set changes. */
    if (ev.events != link->epoll_events) {
        link->epoll_events = ev.events;
        epoll_ctl(agent->epoll_fd, EPOLL_CTL_MOD, link->conn.fd, &ev);
    }
}

ssize_t srm_link_sendv_mr(srm_link_t *link, const struct iovec *iov,
                          const srm_wire_verbs_mr_t *const *mrs, int iovcnt)
{
    /* Until it is ready, whatever its wire, the link is its socket. */
    const srm_wire_ops_t *wire = (link->state == SRM_LINK_READY) ?
                                 link->wire : &srm_wire_tcp_ops;

    return wire->sendv(&link->conn, iov, mrs, iovcnt);
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
        (srm_auth_nonce(link->nonce) != UCS_OK)) {
        if (link != NULL) {
            free(link->in_buf);
        }
        free(link);
        return NULL;
    }
    link->conn.fd    = fd;
    link->wire       = &srm_wire_tcp_ops; /* until the path is known */
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
    return srm_wire_tcp_str(srm_wire_addr_of_path(wire, path), buf, size);
}

void srm_link_close(srm_agent_t *agent, srm_link_t *link,
                    srm_log_level_t level, const char *fmt, ...)
{
    srm_channel_t *chan = NULL;
    char reason[160], peer[SRM_WIRE_ADDR_STRLEN];
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
        shutdown(link->conn.fd, SHUT_RDWR);
    }
    if (link->conn.qp != NULL) {
        srm_rma_link_lost(agent, link);
    }
    srm_wire_conn_close(&link->conn);
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
    srm_wire_verbs_dev_t *verbs;
    srm_link_t *link;
    char addr[SRM_WIRE_ADDR_STRLEN];
    double now;
    int fd;

    now = srm_agent_now();
    if ((chan->links[path] != NULL) || (now < chan->retry_at[path]) ||
        srm_link_accept_pending(agent, node, kind, path)) {
        return;
    }
    chan->retry_at[path] = now + SRM_LINK_RETRY;
    wire = srm_wire_addr_of_path(node->wire, path);

    fd = srm_wire_tcp_connect(wire);
    if (fd < 0) {
        if (chan->failures[path]++ == 0) {
            srm_warn("cannot connect %s channel path %d to %s: %m",
                     srm_node_kind_name(kind), path,
                     srm_wire_tcp_str(wire, addr, sizeof(addr)));
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
    verbs              = srm_link_path_verbs(agent, path);
    link->wire         = srm_wire_of(verbs);
    if ((link->wire->make != NULL) &&
        (link->wire->make(&link->conn, verbs, link->index) != UCS_OK)) {
        srm_link_close(agent, link, SRM_LOG_WARN, "no %s endpoint",
                       link->wire->name);
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

static void srm_link_connected(srm_agent_t *agent, srm_link_t *link)
{
    int error = srm_wire_tcp_connect_result(link->conn.fd);
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
    if (srm_link_send_hello(agent, link, SRM_FRAME_HELLO) != UCS_OK) {
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
    srm_wire_verbs_qp_t *qp;
    srm_link_t *link;
    unsigned index;
    char why[128];

    if ((path >= SRM_WIRE_PATHS) || (agent->verbs[path] == NULL)) {
        return;
    }
    while ((qp = srm_wire_verbs_dev_next_event(agent->verbs[path])) != NULL) {
        index = srm_wire_verbs_qp_owner(qp);
        link  = (index < agent->num_links) ? agent->links[index] : NULL;
        if ((link == NULL) || (link->conn.qp != qp)) {
            continue;
        }
        if (link->wire->poll(&link->conn) != UCS_OK) {
            srm_link_close(agent, link,
                           link->wire->why(&link->conn, errno, why,
                                           sizeof(why)),
                           "%s", why);
            continue;
        }
        if (link->state != SRM_LINK_READY) {
            continue; /* what came early waits for srm_link_ready */
        }
        if ((srm_link_read_endpoint(agent, link) == UCS_OK) &&
            link->want_write) {
            srm_channel_write_link(agent, link, 0);
        }
    }
    if (srm_wire_verbs_dev_take_room(agent->verbs[path])) {
        /* The device's send buffers had run out: whoever waited for
         * them tries again (a link whose room comes from its own
         * completions is among them, and finds it). */
        for (index = 0; index < agent->num_links; ++index) {
            link = agent->links[index];
            if ((link != NULL) && srm_link_on_completions(link) &&
                link->want_write) {
                srm_channel_write_link(agent, link, 0);
            }
        }
    }
}

/*
 * The active connection of a channel whose standby is up, if it carried
 * data since the last look: closed when it retransmits too much
 * (srm_retrans.h). 1 if it was closed.
 */
static int srm_link_replace_if_lossy(srm_agent_t *agent, srm_link_t *link,
                                     double now)
{
    srm_retrans_verdict_t verdict;
    char peer[64];
    srm_channel_t *chan;
    srm_link_t *standby;
    uint32_t resent, sent;

    if ((agent->config.retrans_limit == 0) || !agent->config.failover ||
        (link->state != SRM_LINK_READY) ||
        !srm_wire_can(link->wire, SRM_WIRE_CAP_RETRANS) ||
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
    if ((link->wire->retransmits(&link->conn, &resent, &sent) != UCS_OK) ||
        !srm_retrans_tripped(&link->retrans, resent, sent, now,
                             agent->config.retrans_limit)) {
        return 0;
    }
    verdict = srm_retrans_decide(&chan->retrans_moves, now);
    if (verdict == SRM_RETRANS_CONGESTED) {
        chan->kept++;
        srm_log(SRM_LOG_INFO, "%s channel path %d link to %s: %u of %u TCP "
                "segments retransmitted within %.0f ms on the connection "
                "it moved to: congestion, not a bad link; it stays for "
                "%.0f s", srm_node_kind_name(link->kind), link->path,
                srm_link_peer_str(link, peer, sizeof(peer)),
                link->retrans.resent, link->retrans.sent,
                (now - link->retrans.window_start) * 1e3,
                chan->retrans_moves.kept_until - now);
        return 0;
    } else if (verdict != SRM_RETRANS_MOVE) {
        return 0;
    }
    chan->replaced++;
    srm_link_close(agent, link, SRM_LOG_WARN,
                   "%u TCP segments retransmitted within %.0f ms, of %u "
                   "data segments sent: the channel moves to its standby "
                   "connection (UCX_SRM_RETRANS_LIMIT=%u)",
                   link->retrans.resent,
                   (now - link->retrans.window_start) * 1e3,
                   link->retrans.sent, agent->config.retrans_limit);
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
            if (srm_link_on_completions(link)) {
                srm_link_read_endpoint(agent, link);
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
            (srm_link_send_raw(link, &bye, sizeof(bye)) == UCS_OK)) {
            link->wire->drain(&link->conn, 0.1);
        }
        srm_lane_leave(agent, node);
    }
}

/* Breaks the active links of the chosen channels; returns how many. */
unsigned srm_link_inject_fault(srm_agent_t *agent, uint32_t node_index,
                               int kind, srm_fault_how_t how)
{
    unsigned count = 0, i;
    srm_channel_t *chan;
    const char *what;
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
            if (link->wire->fail(&link->conn, &what)) {
                srm_link_close(agent, link, SRM_LOG_WARN,
                               "fault injected: %s", what);
                continue;
            }
            /* The wire fails the link by itself, as a real error would. */
            srm_warn("fault injected: node %u %s channel path %d: %s", i,
                     srm_node_kind_name(k), link->path, what);
        }
    }
    return count;
}

static ucs_status_t srm_link_listen(srm_agent_t *agent, unsigned path,
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
    srm_wire_verbs_dev_params_t params = {
        .xrc_mode  = agent->config.xrc,
        .recv_bufs = agent->config.verbs_recv_bufs,
        .send_bufs = agent->config.verbs_send_bufs};
    unsigned family = agent->config.address_family;
    srm_wire_addr_t wire;
    uint16_t bound_port = 0;
    char addr[SRM_WIRE_ADDR_STRLEN], netdev[32];
    int fd;

    if (srm_wire_verbs_is_device_spec(device)) {
        /* Frames go on queue pairs; handshakes on the port's interface. */
        if ((srm_wire_verbs_dev_open(device, &params,
                                     &agent->verbs[path], netdev,
                                     sizeof(netdev)) != 0)) {
            return UCS_ERR_IO_ERROR;
        }
        if ((epoll_ctl(agent->epoll_fd, EPOLL_CTL_ADD,
                       srm_wire_verbs_dev_event_fd(agent->verbs[path]),
                       &verbs_ev) != 0) ||
            (epoll_ctl(agent->epoll_fd, EPOLL_CTL_ADD,
                       srm_wire_verbs_dev_async_fd(agent->verbs[path]),
                       &async_ev) != 0)) {
            srm_error("epoll on the completions or events of %s failed: %m",
                      device);
            return UCS_ERR_IO_ERROR;
        }
        device = netdev;
    }
    if (srm_wire_tcp_iface_addr(device, family, &wire,
                                agent->wire_device[path],
                                sizeof(agent->wire_device[path])) != 0) {
        if (strcmp(device, "auto") == 0) {
            srm_info("no network interface with an address of "
                     "UCX_SRM_ADDRESS_FAMILY=%s: this agent serves its own "
                     "node only", srm_address_family_names[family]);
            return UCS_ERR_UNREACHABLE; /* not an error: no other nodes */
        }
        srm_error("UCX_SRM_DEVICES: '%s' is not an interface that is up and "
                  "has an address of UCX_SRM_ADDRESS_FAMILY=%s", device,
                  srm_address_family_names[family]);
        return UCS_ERR_IO_ERROR;
    }
    /* The second path tries the first one's port, so that one port
     * number names the agent; any port will do if it is taken. */
    wire.port = port;
    fd        = srm_wire_tcp_listen(&wire, &bound_port);
    if ((fd < 0) && (path > 0)) {
        wire.port = 0;
        fd        = srm_wire_tcp_listen(&wire, &bound_port);
    }
    if ((fd < 0) ||
        (epoll_ctl(agent->epoll_fd, EPOLL_CTL_ADD, fd, &ev) != 0)) {
        wire.port = port;
        srm_error("cannot listen for other agents on %s (%s): %m",
                  srm_wire_tcp_str(&wire, addr, sizeof(addr)),
                  agent->wire_device[path]);
        if (fd >= 0) {
            close(fd);
        }
        return UCS_ERR_IO_ERROR;
    }
    wire.port            = bound_port;
    agent->wire_fd[path] = fd;
    agent->wire[path]    = wire;
    if (agent->verbs[path] != NULL) {
        snprintf(agent->wire_device[path], sizeof(agent->wire_device[path]),
                 "%s (%s)", srm_wire_verbs_dev_name(agent->verbs[path]),
                 netdev);
    }
    srm_info("path %u: channels to other nodes on %s (%s)", path,
             srm_wire_tcp_str(&wire, addr, sizeof(addr)),
             agent->wire_device[path]);
    return UCS_OK;
}

ucs_status_t srm_link_init(srm_agent_t *agent)
{
    char devices[128], *device, *save = NULL;
    ucs_status_t status;
    unsigned path;

    for (path = 0; path < SRM_WIRE_PATHS; ++path) {
        agent->wire_fd[path] = -1;
    }
    if (srm_auth_load(&agent->auth, agent->config.secret_file) != UCS_OK) {
        return UCS_ERR_INVALID_PARAM;
    }
    if (strcmp(agent->config.devices, "none") == 0) {
        srm_info("UCX_SRM_DEVICES=none: no channels to other nodes");
        return UCS_OK;
    }
    snprintf(devices, sizeof(devices), "%s", agent->config.devices);
    for (device = strtok_r(devices, ",", &save), path = 0; device != NULL;
         device = strtok_r(NULL, ",", &save), ++path) {
        if (path >= SRM_WIRE_PATHS) {
            srm_error("UCX_SRM_DEVICES=%s: at most %d interfaces",
                      agent->config.devices, SRM_WIRE_PATHS);
            return UCS_ERR_INVALID_PARAM;
        }
        status = srm_link_listen(agent, path, device);
        if (status == UCS_ERR_UNREACHABLE) {
            return UCS_OK;
        } else if (status != UCS_OK) {
            return status;
        }
        agent->num_devices = path + 1;
    }
    if (!agent->config.failover) {
        srm_info("UCX_SRM_FAILOVER=n: no acks, no standby connections; a "
                 "lost connection fails its node");
    }
    return UCS_OK;
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
        srm_wire_verbs_dev_close(agent->verbs[i]);
        agent->verbs[i] = NULL;
    }
}
