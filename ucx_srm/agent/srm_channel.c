/*
 * Node channels: per remote node a small and a bulk channel, each carried by
 * one connection of the wire, shared by every process of this node.
 *
 * - Frames queue per channel (at most CHANNEL_DEPTH bytes); everything
 *   queued goes out in one send per wakeup, so small frames of many
 *   processes to one node are coalesced into one system call.
 * - Messages above LARGE_THRESH take the bulk channel: a 4 MB transfer never
 *   sits in front of an 8-byte message of another process.
 * - Order per (source port, destination node) is kept across the two
 *   channels: frames carry a sequence number and one that arrives early is
 *   held back until its predecessors are in.
 * - Both agents may connect at once; the connection initiated by the lower
 *   node id wins, so each pair of nodes ends with one connection per kind.
 */
#define _GNU_SOURCE
#include "srm_agent.h"

#include <ucx_srm/common/srm_log.h>
#include <ucx_srm/wire/srm_wire_tcp.h>

#include <arpa/inet.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <unistd.h>

#define SRM_LINK_IN_BUF    (2 * (sizeof(srm_frame_hdr_t) + SRM_FRAME_MAX_PAYLOAD))
#define SRM_HELD_LIMIT     (8u * 1024u * 1024u)
#define SRM_CHANNEL_MAX_DEPTH (64u * 1024u * 1024u)
#define SRM_CHANNEL_RETRY     0.1 /* seconds between connects to a node */

static const char *srm_channel_kind_names[] = {"small", "bulk"};

static void srm_link_set_events(srm_agent_t *agent, srm_link_t *link)
{
    struct epoll_event ev = {
        .events   = (link->in_blocked ? 0 : EPOLLIN) |
                    (link->want_write ? EPOLLOUT : 0),
        .data.u64 = SRM_EPOLL_DATA(SRM_EPOLL_LINK, link->index)
    };
    epoll_ctl(agent->epoll_fd, EPOLL_CTL_MOD, link->fd, &ev);
}

static size_t srm_channel_queued(const srm_channel_t *chan)
{
    return chan->out_tail - chan->out_head;
}

/*
 * Room for a frame of `size` bytes at the tail of a channel's queue (the
 * caller has applied the depth limit); progress sends it, connecting first
 * if need be. Control frames bypass the limit, so the buffer grows if even
 * a compacted queue has no room. NULL only when out of memory.
 */
static srm_frame_hdr_t *srm_channel_append(srm_node_t *node,
                                           srm_channel_t *chan, size_t size)
{
    size_t queued = srm_channel_queued(chan);
    srm_frame_hdr_t *out;
    uint8_t *buf;

    if ((chan->out_tail + size) > chan->out_cap) {
        memmove(chan->out, chan->out + chan->out_head, queued);
        chan->out_head = 0;
        chan->out_tail = queued;
    }
    if ((queued + size) > chan->out_cap) {
        buf = realloc(chan->out, queued + size);
        if (buf == NULL) {
            return NULL;
        }
        chan->out     = buf;
        chan->out_cap = queued + size;
    }
    out             = (srm_frame_hdr_t*)(chan->out + chan->out_tail);
    chan->out_tail += size;
    node->dirty     = 1;
    return out;
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
        ((link->in_buf = malloc(SRM_LINK_IN_BUF)) == NULL)) {
        free(link);
        return NULL;
    }
    link->fd         = fd;
    link->index      = i;
    link->initiator  = initiator;
    link->state      = initiator ? SRM_LINK_CONNECTING : SRM_LINK_HELLO_WAIT;
    link->kind       = -1;
    link->want_write = initiator;
    ev.events        = EPOLLIN | (initiator ? EPOLLOUT : 0);
    ev.data.u64      = SRM_EPOLL_DATA(SRM_EPOLL_LINK, i);
    if (epoll_ctl(agent->epoll_fd, EPOLL_CTL_ADD, fd, &ev) != 0) {
        free(link->in_buf);
        free(link);
        return NULL;
    }
    agent->links[i] = link;
    return link;
}

static void srm_link_close(srm_agent_t *agent, srm_link_t *link,
                           srm_log_level_t level, const char *fmt, ...)
        __attribute__((format(printf, 4, 5)));

static void srm_link_close(srm_agent_t *agent, srm_link_t *link,
                           srm_log_level_t level, const char *fmt, ...)
{
    char reason[160], peer[32] = "?";
    srm_channel_t *chan;
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(reason, sizeof(reason), fmt, ap);
    va_end(ap);
    if (link->node != NULL) {
        srm_wire_tcp_str(link->node->ipv4, link->node->tcp_port, peer,
                         sizeof(peer));
    }
    if ((link->node != NULL) && (link->kind >= 0) &&
        (link->node->chan[link->kind].failures > 0) &&
        (link->state != SRM_LINK_READY)) {
        level = SRM_LOG_DEBUG; /* said once already; retries are quiet */
    }
    srm_log(level, "%s channel link to %s closed: %s",
            (link->kind >= 0) ? srm_channel_kind_names[link->kind] : "new",
            peer, reason);

    if ((link->node != NULL) && (link->kind >= 0) &&
        (link->node->chan[link->kind].link == link)) {
        chan           = &link->node->chan[link->kind];
        chan->link     = NULL;
        chan->retry_at = srm_agent_now() + SRM_CHANNEL_RETRY;
        if (link->state != SRM_LINK_READY) {
            chan->failures++;
        }
        if (srm_channel_queued(chan) > 0) {
            link->node->dirty = 1; /* progress reconnects */
        }
    }
    close(link->fd);
    agent->links[link->index] = NULL;
    free(link->in_buf);
    free(link);
}

static srm_node_t *srm_node_find(srm_agent_t *agent, uint64_t node_id)
{
    unsigned i;

    for (i = 0; i < agent->num_nodes; ++i) {
        if (agent->nodes[i]->node_id == node_id) {
            return agent->nodes[i];
        }
    }
    return NULL;
}

static size_t srm_channel_depth(srm_agent_t *agent)
{
    return (agent->config.channel_depth > SRM_CHANNEL_MAX_DEPTH) ?
                   SRM_CHANNEL_MAX_DEPTH : agent->config.channel_depth;
}

static srm_node_t *srm_node_create(srm_agent_t *agent, uint64_t node_id,
                                   uint32_t ipv4, uint16_t tcp_port)
{
    srm_node_t **nodes, *node;
    char addr[32];
    int kind;

    if (agent->num_nodes >= UINT16_MAX - 1) {
        return NULL;
    }
    nodes = realloc(agent->nodes, (agent->num_nodes + 1) * sizeof(*nodes));
    if (nodes == NULL) {
        return NULL;
    }
    agent->nodes = nodes;
    node         = calloc(1, sizeof(*node));
    if (node == NULL) {
        return NULL;
    }
    node->node_id  = node_id;
    node->ipv4     = ipv4;
    node->tcp_port = tcp_port;
    node->index    = agent->num_nodes;
    for (kind = 0; kind < SRM_CHANNEL_KINDS; ++kind) {
        node->chan[kind].out_cap = srm_channel_depth(agent) +
                                   sizeof(srm_frame_hdr_t) +
                                   SRM_FRAME_MAX_PAYLOAD;
        node->chan[kind].out     = malloc(node->chan[kind].out_cap);
        if (node->chan[kind].out == NULL) {
            free(node->chan[0].out);
            free(node);
            return NULL;
        }
    }
    agent->nodes[agent->num_nodes++] = node;
    srm_info("node 0x%016llx at %s is node %u", (unsigned long long)node_id,
             srm_wire_tcp_str(ipv4, tcp_port, addr, sizeof(addr)),
             node->index);
    return node;
}

/* The agent node a client means by its node table entry idx. */
static srm_node_t *srm_node_resolve(srm_agent_t *agent, srm_client_t *client,
                                    uint32_t idx)
{
    srm_shm_node_t entry;
    srm_node_t *node;

    if ((idx == 0) || (idx >= SRM_SHM_MAX_NODES)) {
        return NULL;
    }
    if (client->node_map[idx] != 0) {
        return agent->nodes[client->node_map[idx] - 1];
    }

    memcpy(&entry, &client->ctl->nodes[idx], sizeof(entry));
    if (!entry.valid || (entry.ipv4 == 0) || (entry.tcp_port == 0) ||
        (entry.node_id == agent->node_id) || (agent->wire_ipv4 == 0)) {
        return NULL;
    }
    node = srm_node_find(agent, entry.node_id);
    if (node == NULL) {
        node = srm_node_create(agent, entry.node_id, entry.ipv4,
                               entry.tcp_port);
        if (node == NULL) {
            return NULL;
        }
    }
    client->node_map[idx] = (uint16_t)(node->index + 1);
    return node;
}

static void srm_channel_connect(srm_agent_t *agent, srm_node_t *node,
                                int kind)
{
    srm_link_t *link;
    char addr[32];
    double now;
    int fd;

    now = srm_agent_now();
    if (now < node->chan[kind].retry_at) {
        return;
    }
    node->chan[kind].retry_at = now + SRM_CHANNEL_RETRY;

    fd = srm_wire_tcp_connect(node->ipv4, node->tcp_port);
    if (fd < 0) {
        srm_warn("cannot connect %s channel to %s: %m",
                 srm_channel_kind_names[kind],
                 srm_wire_tcp_str(node->ipv4, node->tcp_port, addr,
                                  sizeof(addr)));
        return;
    }
    link = srm_link_new(agent, fd, 1);
    if (link == NULL) {
        close(fd);
        return;
    }
    link->node             = node;
    link->kind             = kind;
    node->chan[kind].link  = link;
    node->chan[kind].connects++;
}

static int srm_node_port_paused(const srm_node_t *node, uint32_t port)
{
    unsigned i;

    for (i = 0; i < node->num_paused; ++i) {
        if (node->paused_ports[i] == port) {
            return 1;
        }
    }
    return 0;
}

/* PAUSE or RESUME from the peer: which of its ports we may send to. */
static void srm_node_set_paused(srm_node_t *node, uint32_t port, int paused)
{
    uint32_t *ports;
    unsigned i;

    for (i = 0; i < node->num_paused; ++i) {
        if (node->paused_ports[i] == port) {
            if (!paused) {
                node->paused_ports[i] = node->paused_ports[--node->num_paused];
            }
            return;
        }
    }
    if (!paused) {
        return;
    }
    ports = realloc(node->paused_ports,
                    (node->num_paused + 1) * sizeof(*ports));
    if (ports != NULL) {
        node->paused_ports                     = ports;
        node->paused_ports[node->num_paused++] = port;
        node->pauses++;
    }
}

srm_sched_result_t srm_channel_enqueue(srm_agent_t *agent, srm_client_t *src,
                                       const srm_frame_hdr_t *hdr,
                                       const void *payload)
{
    size_t size = sizeof(*hdr) + hdr->length;
    srm_channel_t *chan;
    srm_frame_hdr_t *out;
    srm_node_t *node;
    size_t queued;
    int kind;

    node = srm_node_resolve(agent, src, hdr->dst_node);
    if (node == NULL) {
        src->stats.bad_dest++;
        agent->stats.bad_dest++;
        srm_debug("port %u: no route to its node entry %u", src->port,
                  hdr->dst_node);
        return SRM_SCHED_DELIVERED;
    }

    if ((node->num_paused > 0) && srm_node_port_paused(node, hdr->dst_port)) {
        return SRM_SCHED_BLOCKED; /* that receiver is full: only we wait */
    }

    kind   = (hdr->length > agent->config.large_thresh) ? SRM_CHANNEL_BULK :
                                                          SRM_CHANNEL_SMALL;
    chan   = &node->chan[kind];
    queued = srm_channel_queued(chan);
    if ((queued > 0) && ((queued + size) > srm_channel_depth(agent))) {
        return SRM_SCHED_BLOCKED;
    }
    out = srm_channel_append(node, chan, size);
    if (out == NULL) {
        return SRM_SCHED_BLOCKED;
    }

    *out          = *hdr;
    out->dst_node = 0;
    out->seq      = src->node_seq[hdr->dst_node]++;
    memcpy(out + 1, payload, hdr->length);
    chan->tx_frames++;
    chan->tx_bytes += hdr->length;
    return SRM_SCHED_DELIVERED;
}

/* 1 if bytes went out. */
static int srm_channel_flush(srm_agent_t *agent, srm_channel_t *chan)
{
    srm_link_t *link = chan->link;
    size_t queued    = srm_channel_queued(chan);
    ssize_t sent;

    if ((link == NULL) || (link->state != SRM_LINK_READY) || (queued == 0)) {
        return 0;
    }
    sent = srm_wire_tcp_send(link->fd, chan->out + chan->out_head, queued);
    if (sent < 0) {
        srm_link_close(agent, link, SRM_LOG_WARN, "send failed: %m");
        return 0;
    }
    chan->out_head += (size_t)sent;
    if (chan->out_head == chan->out_tail) {
        chan->out_head = chan->out_tail = 0;
    }
    if (link->want_write != ((size_t)sent < queued)) {
        link->want_write = ((size_t)sent < queued);
        srm_link_set_events(agent, link);
    }
    return sent > 0;
}

static srm_order_t *srm_order_get(srm_node_t *node, uint32_t src_port)
{
    srm_order_t *orders;
    unsigned i;

    for (i = 0; i < node->num_orders; ++i) {
        if (node->orders[i].src_port == src_port) {
            return &node->orders[i];
        }
    }
    if (node->num_orders == node->cap_orders) {
        node->cap_orders = (node->cap_orders == 0) ? 16 : 2 * node->cap_orders;
        orders = realloc(node->orders, node->cap_orders * sizeof(*orders));
        if (orders == NULL) {
            return NULL;
        }
        node->orders = orders;
    }
    memset(&node->orders[node->num_orders], 0, sizeof(*node->orders));
    node->orders[node->num_orders].src_port = src_port;
    return &node->orders[node->num_orders++];
}

static void srm_channel_count_rx(srm_agent_t *agent, srm_node_t *node,
                                 int kind, const srm_frame_hdr_t *hdr)
{
    node->chan[kind].rx_frames++;
    node->chan[kind].rx_bytes += hdr->length;
    agent->stats.frames++;
    agent->stats.bytes += hdr->length;
}

/* Delivers the held frames that are now next in order. */
static unsigned srm_order_release(srm_agent_t *agent, srm_node_t *node,
                                  srm_order_t *order)
{
    srm_held_frame_t *held;
    unsigned count = 0;

    while (((held = order->held) != NULL) &&
           (held->hdr.seq == order->expected) &&
           (srm_deliver_to_port(agent, node, &held->hdr, held->payload) !=
            0)) {
        order->held       = held->next;
        node->held_bytes -= held->hdr.length;
        order->expected++;
        srm_channel_count_rx(agent, node, held->kind, &held->hdr);
        free(held);
        ++count;
    }
    return count;
}

static int srm_order_hold(srm_node_t *node, srm_order_t *order, int kind,
                          const srm_frame_hdr_t *hdr, const void *payload)
{
    srm_held_frame_t *held, **pos;

    if ((node->held_bytes + hdr->length) > SRM_HELD_LIMIT) {
        return 0;
    }
    held = malloc(sizeof(*held) + hdr->length);
    if (held == NULL) {
        return 0;
    }
    held->hdr  = *hdr;
    held->kind = kind;
    memcpy(held->payload, payload, hdr->length);
    for (pos = &order->held;
         (*pos != NULL) && ((int32_t)((*pos)->hdr.seq - hdr->seq) < 0);
         pos = &(*pos)->next) {
    }
    held->next        = *pos;
    *pos              = held;
    node->held_bytes += hdr->length;
    node->reordered++;
    return 1;
}

/* A frame from the network: 1 consumed, 0 no room (retry later). */
static int srm_channel_receive(srm_agent_t *agent, srm_link_t *link,
                               const srm_frame_hdr_t *hdr,
                               const void *payload)
{
    srm_node_t *node    = link->node;
    srm_order_t *order  = srm_order_get(node, hdr->src_port);
    int32_t ahead;

    if (order == NULL) {
        return 0;
    }
    ahead = (int32_t)(hdr->seq - order->expected);
    if (ahead < 0) {
        node->bad_frames++; /* a duplicate: never deliver twice */
        return 1;
    } else if (ahead > 0) {
        return srm_order_hold(node, order, link->kind, hdr, payload);
    }

    if (srm_deliver_to_port(agent, node, hdr, payload) == 0) {
        return 0;
    }
    order->expected++;
    srm_channel_count_rx(agent, node, link->kind, hdr);
    srm_order_release(agent, node, order);
    return 1;
}

static int srm_link_send_hello(srm_agent_t *agent, srm_link_t *link,
                               srm_frame_type_t type, int accepted)
{
    struct {
        srm_frame_hdr_t hdr;
        srm_hello_t     hello;
    } msg;

    memset(&msg, 0, sizeof(msg));
    msg.hdr.magic        = SRM_FRAME_MAGIC;
    msg.hdr.version      = SRM_FRAME_VERSION;
    msg.hdr.type         = (uint8_t)type;
    msg.hdr.length       = sizeof(msg.hello);
    msg.hello.node_id    = agent->node_id;
    msg.hello.ipv4       = agent->wire_ipv4;
    msg.hello.tcp_port   = agent->wire_port;
    msg.hello.kind       = (uint8_t)link->kind;
    msg.hello.accepted   = (uint8_t)accepted;
    /* A fresh socket always has room for 56 bytes. */
    return (srm_wire_tcp_send(link->fd, &msg, sizeof(msg)) ==
            (ssize_t)sizeof(msg)) ? 0 : -1;
}

/* Acceptor: who is calling, and does this connection carry the kind? */
static int srm_link_on_hello(srm_agent_t *agent, srm_link_t *link,
                             const srm_hello_t *hello)
{
    srm_channel_t *chan;
    srm_link_t *old;
    srm_node_t *node;
    int accepted;

    if ((hello->kind >= SRM_CHANNEL_KINDS) || (hello->node_id == 0) ||
        (hello->node_id == agent->node_id)) {
        srm_link_close(agent, link, SRM_LOG_WARN, "bad HELLO");
        return -1;
    }
    node = srm_node_find(agent, hello->node_id);
    if (node == NULL) {
        node = srm_node_create(agent, hello->node_id, hello->ipv4,
                               hello->tcp_port);
        if (node == NULL) {
            srm_link_close(agent, link, SRM_LOG_ERROR, "out of memory");
            return -1;
        }
    }
    link->node = node;
    link->kind = hello->kind;
    chan       = &node->chan[link->kind];
    old        = chan->link;
    accepted   = (old == NULL) || (hello->node_id < agent->node_id);

    if (srm_link_send_hello(agent, link, SRM_FRAME_HELLO_ACK, accepted) != 0) {
        srm_link_close(agent, link, SRM_LOG_WARN, "cannot answer HELLO: %m");
        return -1;
    }
    if (!accepted) {
        /* Our own connection to that node wins; the peer closes this one. */
        link->node = NULL;
        srm_link_close(agent, link, SRM_LOG_DEBUG, "lost the tie-break");
        return -1;
    }
    if (old != NULL) {
        srm_link_close(agent, old, SRM_LOG_DEBUG,
                       "replaced by the peer's connection");
    }
    link->state    = SRM_LINK_READY;
    chan->link     = link;
    chan->failures = 0;
    node->dirty    = 1;
    return 0;
}

static int srm_link_on_hello_ack(srm_agent_t *agent, srm_link_t *link,
                                 const srm_hello_t *ack)
{
    if ((ack->node_id != link->node->node_id) ||
        (ack->kind != (uint8_t)link->kind)) {
        srm_link_close(agent, link, SRM_LOG_WARN,
                       "HELLO_ACK from an unexpected node 0x%016llx",
                       (unsigned long long)ack->node_id);
        return -1;
    }
    if (!ack->accepted) {
        srm_link_close(agent, link, SRM_LOG_DEBUG,
                       "the peer's connection won the tie-break");
        return -1;
    }
    link->state                           = SRM_LINK_READY;
    link->node->chan[link->kind].failures = 0;
    link->node->dirty                     = 1;
    return 0;
}

/* Handles the complete frames in the input buffer; -1 if the link died. */
static int srm_link_parse(srm_agent_t *agent, srm_link_t *link)
{
    size_t offset = 0, size;
    srm_frame_status_t status;
    srm_frame_hdr_t hdr;
    const uint8_t *payload;
    int ret = 0;

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
                           "malformed frame: %s (type %u)",
                           srm_frame_status_str(status), hdr.type);
            return -1;
        }
        if (size == 0) {
            break; /* the rest of the frame is still on its way */
        }
        payload = link->in_buf + offset + sizeof(hdr);

        if ((hdr.type == SRM_FRAME_AM) && (link->state == SRM_LINK_READY)) {
            if (!srm_channel_receive(agent, link, &hdr, payload)) {
                link->in_blocked = 1;
                break;
            }
        } else if (((hdr.type == SRM_FRAME_PAUSE) ||
                    (hdr.type == SRM_FRAME_RESUME)) &&
                   (link->state == SRM_LINK_READY) && (hdr.length == 0)) {
            srm_node_set_paused(link->node, hdr.dst_port,
                                hdr.type == SRM_FRAME_PAUSE);
            link->node->dirty = 1; /* RESUME: blocked senders may go */
        } else if ((hdr.type == SRM_FRAME_HELLO) &&
                   (link->state == SRM_LINK_HELLO_WAIT) &&
                   (hdr.length == sizeof(srm_hello_t))) {
            ret = srm_link_on_hello(agent, link, (const srm_hello_t*)payload);
        } else if ((hdr.type == SRM_FRAME_HELLO_ACK) &&
                   (link->state == SRM_LINK_HELLO_SENT) &&
                   (hdr.length == sizeof(srm_hello_t))) {
            ret = srm_link_on_hello_ack(agent, link,
                                        (const srm_hello_t*)payload);
        } else {
            agent->stats.bad_frames++;
            srm_link_close(agent, link, SRM_LOG_WARN,
                           "frame type %u not expected in link state %d",
                           hdr.type, link->state);
            return -1;
        }
        if (ret != 0) {
            return -1;
        }
        offset += size;
    }

    memmove(link->in_buf, link->in_buf + offset, link->in_len - offset);
    link->in_len -= offset;
    srm_link_set_events(agent, link);
    return 0;
}

static void srm_link_read(srm_agent_t *agent, srm_link_t *link)
{
    ssize_t got;

    if (link->in_blocked) {
        return;
    }
    got = srm_wire_tcp_recv(link->fd, link->in_buf + link->in_len,
                            SRM_LINK_IN_BUF - link->in_len);
    if (got < 0) {
        if (errno == 0) {
            srm_link_close(agent, link, SRM_LOG_INFO, "the peer closed it");
        } else {
            srm_link_close(agent, link, SRM_LOG_WARN, "receive failed: %m");
        }
        return;
    }
    link->in_len += (size_t)got;
    srm_link_parse(agent, link);
}

void srm_channel_link_event(srm_agent_t *agent, unsigned index,
                            uint32_t events)
{
    srm_link_t *link = (index < agent->num_links) ? agent->links[index] : NULL;
    int error;

    if (link == NULL) {
        return;
    }
    if (link->state == SRM_LINK_CONNECTING) {
        if (!(events & (EPOLLOUT | EPOLLERR | EPOLLHUP))) {
            return;
        }
        error = srm_wire_tcp_connect_result(link->fd);
        if (error != 0) {
            srm_link_close(agent, link, SRM_LOG_WARN, "connect failed: %s",
                           strerror(error));
            return;
        }
        link->want_write = 0;
        link->state      = SRM_LINK_HELLO_SENT;
        srm_link_set_events(agent, link);
        if (srm_link_send_hello(agent, link, SRM_FRAME_HELLO, 0) != 0) {
            srm_link_close(agent, link, SRM_LOG_WARN, "cannot send HELLO: %m");
        }
        return;
    }
    if (events & (EPOLLIN | EPOLLERR | EPOLLHUP)) {
        srm_link_read(agent, link);
        link = agent->links[index];
    }
    if ((link != NULL) && (events & EPOLLOUT) && (link->node != NULL) &&
        (link->kind >= 0)) {
        srm_channel_flush(agent, &link->node->chan[link->kind]);
    }
}

void srm_channel_accept(srm_agent_t *agent)
{
    int fd = srm_wire_tcp_accept(agent->wire_fd);

    if (fd < 0) {
        if ((errno != EAGAIN) && (errno != EINTR)) {
            srm_warn("accept on the wire failed: %m");
        }
        return;
    }
    if (srm_link_new(agent, fd, 0) == NULL) {
        srm_error("no memory for a new channel connection");
        close(fd);
    }
}

void srm_channel_send_flow(srm_agent_t *agent, unsigned node_index,
                           srm_frame_type_t type, uint32_t port)
{
    srm_node_t *node    = agent->nodes[node_index];
    srm_frame_hdr_t *out;

    /* Control frames ignore the depth limit: they are what lifts it. */
    out = srm_channel_append(node, &node->chan[SRM_CHANNEL_SMALL],
                             sizeof(*out));
    if (out == NULL) {
        srm_error("out of memory: %s for port %u to node %u not sent",
                  (type == SRM_FRAME_PAUSE) ? "PAUSE" : "RESUME", port,
                  node_index);
        return;
    }
    memset(out, 0, sizeof(*out));
    out->magic    = SRM_FRAME_MAGIC;
    out->version  = SRM_FRAME_VERSION;
    out->type     = (uint8_t)type;
    out->dst_port = port;
    srm_debug("sent %s for port %u to node %u",
              (type == SRM_FRAME_PAUSE) ? "PAUSE" : "RESUME", port,
              node_index);
}

unsigned srm_channel_progress(srm_agent_t *agent)
{
    unsigned count = 0, i, o;
    srm_channel_t *chan;
    srm_node_t *node;
    srm_link_t *link;
    int kind;

    for (i = 0; i < agent->num_links; ++i) {
        link = agent->links[i];
        if ((link != NULL) && link->in_blocked) {
            srm_link_parse(agent, link); /* room may have appeared */
            count += (agent->links[i] != NULL) && !link->in_blocked;
        }
    }
    for (i = 0; i < agent->num_nodes; ++i) {
        node = agent->nodes[i];
        if (node->held_bytes > 0) {
            for (o = 0; o < node->num_orders; ++o) {
                count += srm_order_release(agent, node, &node->orders[o]);
            }
        }
        if (!node->dirty) {
            continue;
        }
        node->dirty = 0;
        for (kind = 0; kind < SRM_CHANNEL_KINDS; ++kind) {
            chan = &node->chan[kind];
            if ((chan->link == NULL) && (srm_channel_queued(chan) > 0)) {
                srm_channel_connect(agent, node, kind);
            }
            count += srm_channel_flush(agent, chan);
            if (srm_channel_queued(chan) > 0) {
                node->dirty = 1;
            }
        }
    }
    return count;
}

int srm_channel_init(srm_agent_t *agent)
{
    struct epoll_event ev = {.events   = EPOLLIN,
                             .data.u64 = SRM_EPOLL_DATA(SRM_EPOLL_WIRE, 0)};
    char addr[32];

    agent->wire_fd = -1;
    if (strcmp(agent->config.net_device, "none") == 0) {
        srm_info("UCX_SRM_NET_DEVICE=none: no channels to other nodes");
        return 0;
    }
    if (srm_wire_tcp_iface_addr(agent->config.net_device, &agent->wire_ipv4,
                                agent->wire_device,
                                sizeof(agent->wire_device)) != 0) {
        if (strcmp(agent->config.net_device, "auto") == 0) {
            srm_info("no network interface with IPv4: this agent serves "
                     "its own node only");
            agent->wire_ipv4 = 0;
            return 0;
        }
        srm_error("UCX_SRM_NET_DEVICE=%s: no such interface with an IPv4 "
                  "address that is up", agent->config.net_device);
        return -1;
    }

    agent->wire_fd = srm_wire_tcp_listen(agent->wire_ipv4,
                                         htons((uint16_t)agent->config.tcp_port),
                                         &agent->wire_port);
    if ((agent->wire_fd < 0) ||
        (epoll_ctl(agent->epoll_fd, EPOLL_CTL_ADD, agent->wire_fd, &ev) != 0)) {
        srm_error("cannot listen for other agents on %s (%s): %m",
                  srm_wire_tcp_str(agent->wire_ipv4,
                                   htons((uint16_t)agent->config.tcp_port),
                                   addr, sizeof(addr)),
                  agent->wire_device);
        return -1;
    }
    srm_info("channels to other nodes on %s (%s)",
             srm_wire_tcp_str(agent->wire_ipv4, agent->wire_port, addr,
                              sizeof(addr)),
             agent->wire_device);
    return 0;
}

void srm_channel_cleanup(srm_agent_t *agent)
{
    srm_held_frame_t *held;
    srm_node_t *node;
    unsigned i, o;
    int kind;

    for (i = 0; i < agent->num_links; ++i) {
        if (agent->links[i] != NULL) {
            srm_link_close(agent, agent->links[i], SRM_LOG_DEBUG,
                           "agent stopping");
        }
    }
    free(agent->links);
    for (i = 0; i < agent->num_nodes; ++i) {
        node = agent->nodes[i];
        for (o = 0; o < node->num_orders; ++o) {
            while ((held = node->orders[o].held) != NULL) {
                node->orders[o].held = held->next;
                free(held);
            }
        }
        for (kind = 0; kind < SRM_CHANNEL_KINDS; ++kind) {
            free(node->chan[kind].out);
        }
        free(node->orders);
        free(node->paused_ports);
        free(node);
    }
    free(agent->nodes);
    if (agent->wire_fd >= 0) {
        close(agent->wire_fd);
    }
}

void srm_channel_format(srm_agent_t *agent, char *buf, size_t size,
                        size_t *len)
{
    const char *state_names[] = {"connecting", "hello-sent", "hello-wait",
                                 "ready"};
    srm_channel_t *chan;
    srm_node_t *node;
    char addr[32];
    unsigned i;
    int kind, n;

    for (i = 0; i < agent->num_nodes; ++i) {
        node = agent->nodes[i];
        for (kind = 0; kind < SRM_CHANNEL_KINDS; ++kind) {
            chan = &node->chan[kind];
            n    = snprintf(buf + *len, size - *len,
                            "node %-3u 0x%016llx %-21s %-5s %-10s "
                            "queued %zu tx %llu/%llu rx %llu/%llu "
                            "connects %llu held %zu reordered %llu "
                            "paused %u pauses %llu bad %llu\n",
                            node->index, (unsigned long long)node->node_id,
                            srm_wire_tcp_str(node->ipv4, node->tcp_port,
                                             addr, sizeof(addr)),
                            srm_channel_kind_names[kind],
                            (chan->link == NULL) ? "down" :
                                    state_names[chan->link->state],
                            srm_channel_queued(chan),
                            (unsigned long long)chan->tx_frames,
                            (unsigned long long)chan->tx_bytes,
                            (unsigned long long)chan->rx_frames,
                            (unsigned long long)chan->rx_bytes,
                            (unsigned long long)chan->connects,
                            node->held_bytes,
                            (unsigned long long)node->reordered,
                            node->num_paused,
                            (unsigned long long)node->pauses,
                            (unsigned long long)node->bad_frames);
            if ((n < 0) || ((size_t)n >= size - *len)) {
                return;
            }
            *len += (size_t)n;
        }
    }
}
