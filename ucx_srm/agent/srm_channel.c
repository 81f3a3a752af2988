/*
 * The channel: the stream of frames of one kind between this node and
 * another, which outlives the connections (links) that carry it.
 *
 * - Frames queue per channel (at most CHANNEL_DEPTH bytes, counting those
 *   sent but not yet acknowledged); everything queued goes out in one
 *   system call per wakeup, so small frames of many processes to one node
 *   are coalesced, and an owed ack rides in front of them.
 * - Every frame carries chan_seq. The receiver accepts exactly the next
 *   one, drops older ones (resent duplicates) and acknowledges cumulatively
 *   (after ACK_DELAY, after a quarter of the depth, or with data going the
 *   other way). Acknowledged frames free their space.
 * - When the active link changes (failover, or a first connection), the
 *   new link starts again at the oldest unacknowledged frame.
 * - Order per (source port, destination node) is kept across the small and
 *   bulk channels: frames carry a per-port seq and one that arrives early is
 *   held back until its predecessors are in.
 */
#define _GNU_SOURCE
#include "srm_agent.h"

#include <ucx_srm/common/srm_log.h>
#include <ucx_srm/wire/srm_wire_tcp.h>

#include <stdlib.h>
#include <string.h>

#define SRM_CHANNEL_MAX_DEPTH (64u * 1024u * 1024u)
#define SRM_ACK_DELAY         0.0005 /* seconds an ack waits for a ride */
#define SRM_CHANNEL_CTL_SLACK (32u * 1024u) /* room for control frames past
                                               the depth limit: a thousand
                                               PAUSEs and RESUMEs */
#define SRM_CHANNEL_WRITE_IOVS   64 /* pieces of the stream per write */
#define SRM_CHANNEL_WRITE_ROUNDS 8  /* writes per call, while all goes */
#define SRM_NODE_MAX_PAUSED      4096 /* a node's ports that may PAUSE us */

size_t srm_channel_depth(const srm_agent_t *agent)
{
    return (agent->config.channel_depth > SRM_CHANNEL_MAX_DEPTH) ?
                   SRM_CHANNEL_MAX_DEPTH : agent->config.channel_depth;
}

/* The largest payload of a frame for the small channel: LARGE_THRESH and
 * the upper layer's header with it (SRM_FRAME_AM_HDR_ALLOWANCE). */
size_t srm_channel_small_max(const srm_agent_t *agent)
{
    size_t thresh = agent->config.large_thresh;

    return (thresh > (SIZE_MAX - SRM_FRAME_AM_HDR_ALLOWANCE)) ?
                   SIZE_MAX : (thresh + SRM_FRAME_AM_HDR_ALLOWANCE);
}

size_t srm_channel_queued(const srm_channel_t *chan)
{
    return chan->tail - chan->head;
}

/* Frames in the stream are not aligned: headers are copied out. */
static size_t srm_channel_peek(const srm_channel_t *chan, uint64_t offset,
                               srm_frame_hdr_t *hdr)
{
    memcpy(hdr, srm_mirror_at(&chan->out, offset), sizeof(*hdr));
    return sizeof(*hdr) + hdr->length;
}

/* The queue is allocated on first use: a node that only calls us, or a
 * peer that merely says HELLO, costs no buffer. */
int srm_channel_init(srm_agent_t *agent, srm_channel_t *chan)
{
    memset(chan, 0, sizeof(*chan));
    srm_rtt_init(&chan->rtt);
    return 0;
}

/* Only once no queue pair can read from them: the links are gone. */
void srm_channel_cleanup(srm_agent_t *agent, srm_channel_t *chan)
{
    srm_outgrown_t *outgrown;

    srm_holes_drop(agent, &chan->holes);
    while ((outgrown = chan->outgrown) != NULL) {
        chan->outgrown = outgrown->next;
        srm_link_dereg_paths(outgrown->mr);
        srm_mirror_destroy(&outgrown->out);
        free(outgrown);
    }
    srm_link_dereg_paths(chan->out_mr);
    srm_mirror_destroy(&chan->out);
}

/* Forgets every queued frame and the queue itself (the node is gone). */
void srm_channel_drop_all(srm_agent_t *agent, srm_channel_t *chan)
{
    chan->head = chan->sent = chan->frame_end = chan->tail;
    chan->ack_due = 0;
    srm_channel_cleanup(agent, chan);
}

/*
 * Registers a new stream buffer with each path's verbs device, so that
 * the queue pairs send from it in place. Without (the tcp wire, or a
 * device that refused: then the queue pair copies into its send pool) mr
 * stays NULL. Not without failover either: nothing then holds the bytes
 * a queue pair may still read (no acks; the head moves as they are
 * posted).
 */
static void srm_channel_out_reg(srm_agent_t *agent, const srm_mirror_t *out,
                                srm_verbs_mr_t *mr[SRM_WIRE_PATHS])
{
    srm_verbs_dev_t *dev, *prev = NULL;
    int path;

    for (path = 0; path < SRM_WIRE_PATHS; ++path) {
        dev      = srm_link_path_verbs(agent, path);
        mr[path] = NULL;
        if ((dev == NULL) || !agent->config.verbs_in_place ||
            !agent->config.failover) {
            continue;
        } else if (dev == prev) {
            mr[path] = mr[path - 1]; /* both paths on one device */
            continue;
        }
        prev     = dev;
        mr[path] = srm_verbs_mr_reg_send(dev, out->base, 2 * out->size);
        if (mr[path] == NULL) {
            srm_warn("%s: cannot register a channel's stream of %zu KB "
                     "(%m): its frames are copied to the send pool",
                     srm_verbs_dev_name(dev), out->size >> 10);
        }
    }
}

/*
 * A buffer for the stream of at least `needed` bytes, with what is queued
 * copied into it. The old one may still be read by queue pairs that were
 * handed frames from it: it is kept until the channel goes (this happens
 * only when control frames, which ignore the depth limit, fill
 * SRM_CHANNEL_CTL_SLACK).
 */
static int srm_channel_out_grow(srm_agent_t *agent, srm_channel_t *chan,
                                size_t needed)
{
    size_t min = srm_channel_depth(agent) + sizeof(srm_frame_hdr_t) +
                 SRM_FRAME_MAX_PAYLOAD + SRM_CHANNEL_CTL_SLACK;
    srm_verbs_mr_t *mr[SRM_WIRE_PATHS];
    srm_outgrown_t *outgrown = NULL;
    srm_mirror_t out;
    int path, registered = 0;

    for (path = 0; path < SRM_WIRE_PATHS; ++path) {
        registered |= (chan->out_mr[path] != NULL);
    }
    if (registered && ((outgrown = malloc(sizeof(*outgrown))) == NULL)) {
        return -1;
    }
    if (srm_mirror_create(&out, (needed > min) ? needed : min) != 0) {
        free(outgrown);
        return -1;
    }
    srm_channel_out_reg(agent, &out, mr);
    if (chan->tail > chan->head) {
        memcpy(srm_mirror_at(&out, chan->head),
               srm_mirror_at(&chan->out, chan->head), chan->tail - chan->head);
    }
    if (outgrown != NULL) {
        outgrown->out  = chan->out;
        memcpy(outgrown->mr, chan->out_mr, sizeof(outgrown->mr));
        outgrown->next = chan->outgrown;
        chan->outgrown = outgrown;
    } else {
        srm_mirror_destroy(&chan->out);
    }
    chan->out = out;
    memcpy(chan->out_mr, mr, sizeof(mr));
    return 0;
}

/*
 * Room for `size` bytes at the tail (the caller has applied the depth
 * limit). Control frames bypass the limit, so the buffer grows if even
 * they find no room. NULL only when out of memory.
 */
static uint8_t *srm_channel_append(srm_agent_t *agent, srm_node_t *node,
                                   srm_channel_t *chan, size_t size)
{
    size_t needed = (size_t)(chan->tail - chan->head) + size;
    uint8_t *buf;

    if ((needed > chan->out.size) &&
        (srm_channel_out_grow(agent, chan, needed) != 0)) {
        return NULL;
    }
    buf         = srm_mirror_at(&chan->out, chan->tail);
    chan->tail += size;
    node->dirty = 1;
    return buf;
}

/* Numbers a frame and queues it; without payload (NULL) its bytes keep
 * their place in the stream unwritten (a hole). */
static int srm_channel_put(srm_agent_t *agent, srm_node_t *node,
                           srm_channel_t *chan, srm_frame_hdr_t *hdr,
                           const void *payload)
{
    uint8_t *out = srm_channel_append(agent, node, chan,
                                      sizeof(*hdr) + hdr->length);

    if (out == NULL) {
        return -1;
    }
    hdr->chan_seq = chan->next_seq++;
    memcpy(out, hdr, sizeof(*hdr));
    if ((payload != NULL) && (hdr->length > 0)) {
        memcpy(out + sizeof(*hdr), payload, hdr->length);
    }
    return 0;
}

/*
 * As srm_channel_put, but the payload stays in the sender's TX ring, kept
 * there until acknowledged (srm_holes.h). 1 if so, 0 if the frame is to be
 * copied after all (the queue keeps all it can), -1 out of memory.
 */
static int srm_channel_put_hole(srm_agent_t *agent, srm_node_t *node,
                                srm_channel_t *chan, srm_sched_queue_t *queue,
                                srm_frame_hdr_t *hdr, const void *payload)
{
    srm_client_t *src = queue->owner;
    srm_hole_t hole;

    if (srm_holes_reserve(&chan->holes) != 0) {
        return -1;
    } else if (srm_sched_keep(queue, &hole.kept) != 0) {
        return 0;
    }
    if (srm_channel_put(agent, node, chan, hdr, NULL) != 0) {
        /* The scheduler will not pass the frame: it must not stay kept. */
        srm_sched_free_kept(queue, hole.kept);
        return -1;
    }
    hole.offset  = chan->tail - hdr->length;
    hole.length  = hdr->length;
    hole.queue   = queue;
    hole.payload = payload;
    hole.mem     = src->mem;
    hole.ring    = (unsigned)(queue - src->tx);
    srm_holes_push(&chan->holes, &hole);
    chan->ring_frames++;
    return 1;
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
    if (node->num_paused == SRM_NODE_MAX_PAUSED) {
        node->bad_frames++; /* more full ports than it could have */
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

/* Whether a frame's payload is to stay in the sender's ring: only while
 * what the ring keeps spans at most a quarter of it, as a kept frame holds
 * its place there for a round trip and the sender needs room ahead. */
static int srm_channel_from_ring(const srm_agent_t *agent,
                                 const srm_sched_queue_t *queue,
                                 const srm_frame_hdr_t *hdr)
{
    return agent->config.failover &&
           (hdr->length >= agent->config.ring_send_min) &&
           (srm_sched_kept_span(queue) + queue->ring.pending <=
            queue->ring.size / 4);
}

srm_sched_result_t srm_channel_enqueue(srm_agent_t *agent,
                                       srm_sched_queue_t *queue,
                                       const srm_frame_hdr_t *hdr,
                                       const void *payload)
{
    srm_client_t *src = queue->owner;
    size_t size       = sizeof(*hdr) + hdr->length;
    srm_frame_hdr_t frame;
    srm_channel_t *chan;
    uint32_t *next_seq;
    srm_node_t *node;
    int kind, ret = 0;

    node = srm_node_resolve(agent, src, hdr->dst_node);
    if (node == NULL) {
        src->stats.bad_dest++;
        agent->stats.bad_dest++;
        srm_debug("port %u: no route to its node entry %u", src->port,
                  hdr->dst_node);
        return SRM_SCHED_DELIVERED;
    }
    if (node->state == SRM_NODE_INVALID) {
        node->dropped++; /* the client's eps to it are told (node table) */
        return SRM_SCHED_DELIVERED;
    }
    if ((node->num_paused > 0) && srm_node_port_paused(node, hdr->dst_port)) {
        return SRM_SCHED_BLOCKED; /* that receiver is full: only we wait */
    }

    kind = (hdr->length > srm_channel_small_max(agent)) ? SRM_CHANNEL_BULK :
                                                          SRM_CHANNEL_SMALL;
    chan = &node->chan[kind];
    if ((srm_channel_queued(chan) > 0) &&
        ((srm_channel_queued(chan) + size) > srm_channel_depth(agent))) {
        return SRM_SCHED_BLOCKED;
    }

    /* The agent's own count, which its enter brought up to date with the
     * frames the client wrote directly; a client that may write directly
     * is told the next number in its segment (under the lane's lock). */
    next_seq = &src->node_seq[hdr->dst_node];
    srm_lane_enter(agent, node);
    frame     = *hdr;
    frame.seq = *next_seq;
    if (srm_channel_from_ring(agent, queue, hdr)) {
        ret = srm_channel_put_hole(agent, node, chan, queue, &frame, payload);
    }
    if ((ret < 0) ||
        ((ret == 0) &&
         (srm_channel_put(agent, node, chan, &frame, payload) != 0))) {
        srm_lane_leave(agent, node);
        return SRM_SCHED_BLOCKED;
    }
    ++*next_seq;
    if (src->node_seq_shared[hdr->dst_node]) {
        srm_store_relaxed(&src->ctl->node_seq[hdr->dst_node], *next_seq);
    }
    chan->tx_frames++;
    chan->tx_bytes += hdr->length;
    srm_lane_leave(agent, node);
    return SRM_SCHED_DELIVERED;
}

void srm_channel_forget_client(srm_agent_t *agent, srm_client_t *client)
{
    srm_channel_t *chan;
    unsigned i;
    int kind;

    for (i = 0; i < agent->num_nodes; ++i) {
        for (kind = 0; kind < SRM_CHANNEL_KINDS; ++kind) {
            chan = &agent->nodes[i]->chan[kind];
            chan->ring_filled += srm_holes_fill(&chan->holes, &chan->out,
                                                client);
        }
    }
}

static const char *srm_channel_control_name(const srm_frame_hdr_t *frame)
{
    switch (frame->type) {
    case SRM_FRAME_PAUSE:
        return "PAUSE";
    case SRM_FRAME_RESUME:
        return "RESUME";
    case SRM_FRAME_PORT_REFUSED:
        return "PORT_REFUSED";
    case SRM_FRAME_RMA_REMOTE:
        return "RMA_REMOTE";
    case SRM_FRAME_RMA_REMOTE_DONE:
        return "RMA_REMOTE_DONE";
    default:
        return "PORT_GONE";
    }
}

/*
 * Queues a numbered control frame (payload: its bytes, or NULL for none) on
 * the small channel to a node: 0, or -1 if the node is invalid or memory
 * ran out.
 */
static int srm_channel_put_control(srm_agent_t *agent, srm_node_t *node,
                                   srm_frame_hdr_t *frame, const void *payload,
                                   uint32_t port)
{
    int ret;

    if (node->state == SRM_NODE_INVALID) {
        return -1; /* nobody to tell; its queue must stay empty */
    }
    /* Control frames ignore the depth limit: they are what lifts it, or
     * (RMA) bounded by the operations in flight. */
    srm_lane_enter(agent, node);
    ret = srm_channel_put(agent, node, &node->chan[SRM_CHANNEL_SMALL], frame,
                          payload);
    srm_lane_leave(agent, node);
    if (ret != 0) {
        srm_error("out of memory: %s for port %u to node %u not sent",
                  srm_channel_control_name(frame), port, node->index);
        return -1;
    }
    srm_debug("sent %s for port %u to node %u",
              srm_channel_control_name(frame), port, node->index);
    return 0;
}

int srm_channel_send_rma(srm_agent_t *agent, srm_node_t *node,
                         srm_frame_type_t type, uint32_t port,
                         const void *payload, uint32_t length)
{
    srm_frame_hdr_t frame;

    srm_frame_hdr_init(&frame, type, length);
    frame.src_port = port;
    return srm_channel_put_control(agent, node, &frame, payload, port);
}

void srm_channel_send_flow(srm_agent_t *agent, unsigned node_index,
                           srm_frame_type_t type, uint32_t port)
{
    srm_frame_hdr_t frame;

    srm_frame_hdr_init(&frame, type, 0);
    frame.dst_port = port;
    srm_channel_put_control(agent, agent->nodes[node_index], &frame, NULL,
                            port);
}

void srm_channel_send_port_gone(srm_agent_t *agent, srm_node_t *node,
                                uint32_t port, uint32_t final)
{
    srm_frame_hdr_t frame;

    srm_frame_hdr_init(&frame, SRM_FRAME_PORT_GONE, 0);
    frame.src_port = port;
    frame.seq      = final;
    srm_channel_put_control(agent, node, &frame, NULL, port);
}

void srm_channel_send_port_refused(srm_agent_t *agent, srm_node_t *node,
                                   uint32_t port)
{
    srm_frame_hdr_t frame;

    srm_frame_hdr_init(&frame, SRM_FRAME_PORT_REFUSED, 0);
    frame.dst_port = port;
    srm_channel_put_control(agent, node, &frame, NULL, port);
}

/*
 * PORT_REFUSED: the node dropped our port's frames for missing keys. The
 * port goes, if it is a client that sent that node frames: a peer cannot
 * thus drop a process that never sent to it.
 */
static void srm_channel_on_port_refused(srm_agent_t *agent, srm_node_t *node,
                                        uint32_t port)
{
    srm_client_t *client = srm_client_lookup(agent, port);
    unsigned idx;

    if (client == NULL) {
        return;
    }
    for (idx = 1; idx < SRM_SHM_MAX_NODES; ++idx) {
        if ((client->node_map[idx] == node->index + 1) &&
            ((client->node_seq[idx] != 0) || client->node_seq_shared[idx])) {
            srm_warn("port %u (pid %d): node %u refused it for frames to "
                     "its ports with wrong keys", port, (int)client->pid,
                     node->index);
            srm_client_fail(agent, client, "another node refused it: too "
                                           "many frames to its ports with "
                                           "wrong keys");
            return;
        }
    }
}

/* Frees the acknowledged frames that the active link has written whole. */
static void srm_channel_release(srm_agent_t *agent, srm_channel_t *chan)
{
    srm_frame_hdr_t hdr;
    size_t size;

    while (chan->head < chan->frame_end) {
        size = srm_channel_peek(chan, chan->head, &hdr);
        if (!srm_seq_before(hdr.chan_seq, chan->acked_seq)) {
            break;
        }
        chan->head += size;
    }
    srm_holes_release(agent, &chan->holes, chan->head);
}

/*
 * After a change of link, frames the peer acknowledged (it got them on the
 * old link) need not be written again; only at a frame boundary may the
 * stream skip.
 */
static void srm_channel_skip_acked(srm_agent_t *agent, srm_channel_t *chan)
{
    srm_frame_hdr_t hdr;
    size_t size;

    while ((chan->sent == chan->frame_end) && (chan->sent < chan->tail)) {
        size = srm_channel_peek(chan, chan->sent, &hdr);
        if (!srm_seq_before(hdr.chan_seq, chan->acked_seq)) {
            break;
        }
        chan->sent     += size;
        chan->frame_end = chan->sent;
    }
    srm_channel_release(agent, chan);
}

/* Bookkeeping after `bytes` more of the stream were written by a write
 * that began at `write_at` (< 0: by clients, at times unknown). */
static void srm_channel_advance(srm_agent_t *agent, srm_channel_t *chan,
                                size_t bytes, double write_at)
{
    srm_frame_hdr_t hdr;
    size_t size;

    chan->sent += bytes;
    while (chan->frame_end < chan->tail) {
        size = srm_channel_peek(chan, chan->frame_end, &hdr);
        if (chan->frame_end + size > chan->sent) {
            break; /* partly written */
        }
        chan->frame_end += size;
        if (srm_seq_before(hdr.chan_seq, chan->sent_seq_hi)) {
            chan->resent++;
        } else {
            chan->sent_seq_hi = hdr.chan_seq + 1;
            if (write_at >= 0) {
                srm_rtt_sent(&chan->rtt, hdr.chan_seq, write_at);
            }
        }
    }
    if (!agent->config.failover) {
        chan->head = chan->frame_end; /* nothing is ever written again */
    }
}

/* Whether frames of this type take a number on a channel. */
static int srm_channel_numbered(uint8_t type)
{
    return (type == SRM_FRAME_AM) || (type == SRM_FRAME_PAUSE) ||
           (type == SRM_FRAME_RESUME) || (type == SRM_FRAME_PORT_GONE) ||
           (type == SRM_FRAME_PORT_REFUSED) ||
           (type == SRM_FRAME_RMA_REMOTE) ||
           (type == SRM_FRAME_RMA_REMOTE_DONE);
}

/* Turns the frame at `at` (whose header is hdr, left bytes on) into a
 * header alone that the peer consumes and ignores. */
static void srm_channel_blank_frame(uint8_t *at, const srm_frame_hdr_t *hdr,
                                    size_t left)
{
    srm_frame_hdr_t blank;
    size_t size = sizeof(*hdr) + hdr->length;

    srm_frame_hdr_init(&blank, SRM_FRAME_PORT_GONE, 0);
    blank.chan_seq = hdr->chan_seq; /* final 0: names no port */
    memcpy(at, &blank, sizeof(blank));
    memmove(at + sizeof(blank), at + size, left - size);
}

int srm_channel_absorb(srm_agent_t *agent, srm_node_t *node,
                       const uint8_t *frames, size_t len, size_t unwritten,
                       srm_absorb_result_t *result)
{
    srm_channel_t *chan = &node->chan[SRM_CHANNEL_SMALL];
    int written         = (chan->sent == chan->tail);
    uint64_t count = 0, bytes = 0;
    srm_frame_hdr_t hdr;
    size_t offset, left;
    uint8_t *out;

    memset(result, 0, sizeof(*result));
    /* Copied once, from memory its writers share, into the channel's own
     * stream; what is checked and kept is that copy. */
    out = srm_channel_append(agent, node, chan, len);
    if (out == NULL) {
        return -1;
    }
    memcpy(out, frames, len);
    for (offset = 0; offset < len; offset += sizeof(hdr) + hdr.length) {
        left = len - offset;
        if (left >= sizeof(hdr)) {
            memcpy(&hdr, out + offset, sizeof(hdr));
        }
        if ((left < sizeof(hdr)) ||
            (srm_frame_validate(&hdr, SRM_FRAME_MAX_PAYLOAD) != SRM_FRAME_OK) ||
            !srm_channel_numbered(hdr.type) ||
            (hdr.length > left - sizeof(hdr))) {
            /* Malformed, so where the next frame starts is not known, or
             * of a kind without a number (an ACK, a BYE: the peer acts on
             * it at once): what follows is lost, its writers told the
             * send went. */
            result->lost_bytes = left;
            chan->tail        -= left;
            len                = offset;
            unwritten          = (unwritten > left) ? (unwritten - left) : 0;
            break;
        }
        /* The channel's numbering is the agent's: a frame numbered
         * otherwise gets the next number (the peer never took it: it
         * expects that number), and the connection, which carried the
         * wrong one, is reset. */
        if (hdr.chan_seq != chan->next_seq) {
            hdr.chan_seq = chan->next_seq;
            memcpy(out + offset, &hdr, sizeof(hdr));
            result->renumbered++;
        }
        chan->next_seq++;
        if ((hdr.type != SRM_FRAME_AM) ||
            (srm_lane_check_writer(agent, node, &hdr) != 0)) {
            /* Not resent as it is: it keeps its number, as a PORT_GONE
             * that names nobody, and its payload leaves the stream. */
            srm_channel_blank_frame(out + offset, &hdr, len - offset);
            chan->tail -= hdr.length;
            len        -= hdr.length;
            unwritten   = 0; /* the connection is reset: all is resent */
            result->foreign++;
            hdr.length  = 0;
        }
        ++count;
        bytes += hdr.length;
    }
    chan->tx_frames     += count;
    chan->tx_bytes      += bytes;
    chan->direct_frames += count;
    if (written) {
        srm_channel_advance(agent, chan, len - unwritten, -1.0);
    }
    return 0;
}

/*
 * Writes to link: an owed ack first (only at a frame boundary of the data
 * stream, and only with `ack` or data to ride along), then, on the active
 * link, the unsent frames. Returns 1 if bytes went out, -1 if the link
 * died (closed here).
 */
static int srm_channel_write(srm_agent_t *agent, srm_node_t *node, int kind,
                             srm_link_t *link, int ack)
{
    srm_channel_t *chan = &node->chan[kind];
    int data            = (link == chan->links[chan->active]) &&
                          (chan->sent < chan->tail);
    const srm_verbs_mr_t *mrs[SRM_CHANNEL_WRITE_IOVS];
    struct iovec iov[SRM_CHANNEL_WRITE_IOVS];
    size_t ctl_sent, offered;
    uint64_t gathered;
    double write_at;
    ssize_t sent;
    int iovcnt, rounds = 0, wrote = 0;

    if (link->muted) {
        return 0; /* fault injected: a dead path */
    }
    if (data && (chan->sent == chan->frame_end)) {
        srm_channel_skip_acked(agent, chan);
        data = chan->sent < chan->tail;
    }
    if ((link->ctl_left == 0) && agent->config.failover &&
        (ack || (data && (chan->rx_expected != chan->rx_acked))) &&
        (!data || (chan->sent == chan->frame_end))) {
        srm_frame_hdr_init(&link->ctl, SRM_FRAME_ACK, 0);
        link->ctl.seq     = chan->rx_expected;
        link->ctl_left    = sizeof(link->ctl);
        chan->rx_acked    = chan->rx_expected;
        chan->rx_unacked  = 0;
        chan->ack_due     = 0;
    }
    /* Holes split the stream into more pieces than one system call (or
     * one iovec) takes: a few rounds while everything offered goes out. */
    do {
        iovcnt = 0;
        if (link->ctl_left > 0) {
            iov[iovcnt].iov_base = (uint8_t*)&link->ctl +
                                   (sizeof(link->ctl) - link->ctl_left);
            iov[iovcnt].iov_len  = link->ctl_left;
            mrs[iovcnt++]        = NULL;
        }
        gathered = chan->sent;
        if (data) {
            iovcnt += srm_holes_gather(agent, &chan->holes, &chan->out,
                                       chan->out_mr[link->path], link->path,
                                       chan->sent, chan->tail, iov + iovcnt,
                                       mrs + iovcnt,
                                       SRM_CHANNEL_WRITE_IOVS - iovcnt,
                                       &gathered);
        }
        if (iovcnt == 0) {
            return 0; /* nothing to write at all */
        }
        offered  = link->ctl_left + (size_t)(gathered - chan->sent);
        write_at = srm_agent_now();
        sent     = srm_link_sendv_mr(link, iov, mrs, iovcnt);
        if (sent < 0) {
            srm_link_close(agent, link, SRM_LOG_WARN, "send failed: %m");
            return -1;
        }
        ctl_sent        = ((size_t)sent < link->ctl_left) ? (size_t)sent :
                                                             link->ctl_left;
        link->ctl_left -= ctl_sent;
        if ((size_t)sent > ctl_sent) {
            srm_channel_advance(agent, chan, (size_t)sent - ctl_sent,
                                write_at);
        }
        if (sent > 0) {
            link->last_tx = write_at;
            wrote         = 1;
        }
    } while (((size_t)sent == offered) && data && (chan->sent < chan->tail) &&
             (++rounds < SRM_CHANNEL_WRITE_ROUNDS));
    if (link->want_write != ((link->ctl_left > 0) ||
                             (data && (chan->sent < chan->tail)))) {
        link->want_write = !link->want_write;
        srm_link_set_events(agent, link);
    }
    return wrote;
}

static srm_link_t *srm_channel_ready_link(srm_channel_t *chan)
{
    srm_link_t *link = chan->links[chan->active];
    int path;

    if ((link != NULL) && (link->state == SRM_LINK_READY)) {
        return link;
    }
    for (path = 0; path < SRM_WIRE_PATHS; ++path) {
        link = chan->links[path];
        if ((link != NULL) && (link->state == SRM_LINK_READY)) {
            return link;
        }
    }
    return NULL;
}

/* 1 if bytes went out. Acks owed go on any ready link of the channel. */
static int srm_channel_flush_locked(srm_agent_t *agent, srm_node_t *node,
                                    int kind)
{
    srm_channel_t *chan = &node->chan[kind];
    srm_link_t *link    = chan->links[chan->active];
    double now;
    int ack;

    if ((chan->rx_expected != chan->rx_acked) && (chan->ack_due != 0)) {
        now = srm_agent_now();
        ack = (now >= chan->ack_due) ||
              (chan->rx_unacked >= srm_channel_depth(agent) / 4);
        if (ack && ((link == NULL) || (link->state != SRM_LINK_READY))) {
            link = srm_channel_ready_link(chan);
        }
    } else {
        ack = 0;
    }
    if ((link == NULL) || (link->state != SRM_LINK_READY)) {
        return 0;
    }
    return srm_channel_write(agent, node, kind, link, ack) > 0;
}

/* The small channel's sending state is shared with its lane's writers. */
static void srm_channel_enter(srm_agent_t *agent, srm_node_t *node, int kind)
{
    if (kind == SRM_CHANNEL_SMALL) {
        srm_lane_enter(agent, node);
    }
}

static void srm_channel_leave(srm_agent_t *agent, srm_node_t *node, int kind)
{
    if (kind == SRM_CHANNEL_SMALL) {
        srm_lane_leave(agent, node);
    }
}

int srm_channel_flush(srm_agent_t *agent, srm_node_t *node, int kind)
{
    int ret;

    srm_channel_enter(agent, node, kind);
    ret = srm_channel_flush_locked(agent, node, kind);
    srm_channel_leave(agent, node, kind);
    return ret;
}

/* More bytes for a ready link; with `ack`, an ack even if none is owed
 * (the heartbeat). 1 if bytes went out, -1 if the link died. */
int srm_channel_write_link(srm_agent_t *agent, srm_link_t *link, int ack)
{
    srm_node_t *node = link->node;
    int kind         = link->kind;
    int ret;

    srm_channel_enter(agent, node, kind);
    ret = srm_channel_write(agent, node, kind, link, ack);
    srm_channel_leave(agent, node, kind);
    return ret;
}

/* Whether a frame of our own may be written to link now. */
int srm_channel_at_boundary(const srm_link_t *link)
{
    const srm_channel_t *chan = &link->node->chan[link->kind];

    return (link != chan->links[chan->active]) ||
           (chan->sent == chan->frame_end);
}

int srm_channel_ack_owed(const srm_channel_t *chan)
{
    return chan->rx_expected != chan->rx_acked;
}

/* Makes `path` the active one; its link starts at the oldest unacked frame. */
static void srm_channel_activate(srm_agent_t *agent, srm_node_t *node,
                                 int kind, int path)
{
    srm_channel_t *chan = &node->chan[kind];

    chan->active    = path;
    chan->sent      = chan->head;
    chan->frame_end = chan->head;
    node->dirty     = 1;
    srm_rtt_restart(&chan->rtt);
}

void srm_channel_link_ready(srm_agent_t *agent, srm_link_t *link)
{
    srm_channel_t *chan = &link->node->chan[link->kind];
    srm_link_t *active  = chan->links[chan->active];
    const srm_wire_addr_t *wire;
    char addr[32];

    srm_channel_enter(agent, link->node, link->kind);
    if ((active == NULL) || (active->state != SRM_LINK_READY) ||
        (active == link)) {
        if (chan->sent > chan->head) {
            wire = &link->node->wire[link->path];
            if (wire->ipv4 == 0) {
                wire = &link->node->wire[0]; /* one interface, both paths */
            }
            srm_info("node %u %s channel: resending %llu unacknowledged "
                     "bytes on path %d (%s)", link->node->index,
                     srm_node_kind_name(link->kind),
                     (unsigned long long)(chan->sent - chan->head),
                     link->path,
                     srm_wire_tcp_str(wire->ipv4, wire->port, addr,
                                      sizeof(addr)));
        }
        srm_channel_activate(agent, link->node, link->kind, link->path);
    }
    chan->failures[link->path] = 0;
    link->node->dirty          = 1;
    srm_channel_leave(agent, link->node, link->kind);
}

/* The link is gone: its channel goes on on the other path if it can. */
static void srm_channel_switch_path(srm_agent_t *agent, srm_link_t *link)
{
    srm_node_t *node    = link->node;
    srm_channel_t *chan = &node->chan[link->kind];
    int was_ready       = (link->state == SRM_LINK_READY);
    int other           = 1 - link->path;

    chan->links[link->path] = NULL;
    if (!was_ready || (chan->active != link->path)) {
        return;
    }
    chan->failovers++;
    if (!agent->config.failover) {
        srm_node_invalidate(agent, node, 1,
                            "its channel connection was lost and "
                            "UCX_SRM_FAILOVER=n keeps nothing to resend");
        return;
    }
    if ((chan->links[other] != NULL) &&
        (chan->links[other]->state == SRM_LINK_READY)) {
        if (chan->sent > chan->head) {
            srm_info("node %u %s channel: failover to path %d, resending "
                     "%llu unacknowledged bytes", node->index,
                     srm_node_kind_name(link->kind), other,
                     (unsigned long long)(chan->sent - chan->head));
        }
        srm_channel_activate(agent, node, link->kind, other);
    } else {
        srm_channel_activate(agent, node, link->kind, link->path);
    }
}

void srm_channel_link_lost(srm_agent_t *agent, srm_link_t *link)
{
    srm_node_t *node = link->node;
    int kind         = link->kind;

    srm_channel_enter(agent, node, kind);
    if (kind == SRM_CHANNEL_SMALL) {
        srm_lane_link_lost(node, link);
    }
    srm_channel_switch_path(agent, link);
    srm_channel_leave(agent, node, kind);
}

static int srm_channel_take_ack(srm_agent_t *agent, srm_channel_t *chan,
                                srm_node_t *node, uint32_t ack)
{
    if (!srm_seq_before(chan->acked_seq, ack)) {
        return 0; /* old news, or a heartbeat */
    }
    if (srm_seq_before(chan->sent_seq_hi, ack)) {
        return -1; /* acknowledges frames never sent */
    }
    chan->acked_seq = ack;
    srm_rtt_acked(&chan->rtt, ack, srm_agent_now());
    srm_channel_release(agent, chan);
    node->dirty = 1; /* space for blocked senders */
    return 0;
}

int srm_channel_on_ack(srm_agent_t *agent, srm_link_t *link, uint32_t ack)
{
    srm_node_t *node = link->node;
    int kind         = link->kind;
    int ret;

    /* Frames written directly are acknowledged too: absorbed first. */
    srm_channel_enter(agent, node, kind);
    ret = srm_channel_take_ack(agent, &node->chan[kind], node, ack);
    srm_channel_leave(agent, node, kind);
    return ret;
}

void srm_channel_count_rx(srm_agent_t *agent, srm_node_t *node, int kind,
                          const srm_frame_hdr_t *hdr)
{
    node->chan[kind].rx_frames++;
    node->chan[kind].rx_bytes += hdr->length;
    agent->stats.frames++;
    agent->stats.bytes += hdr->length;
}

/* An AM in channel order: 1 consumed, 0 no room (retry later). */
static int srm_channel_deliver(srm_agent_t *agent, srm_link_t *link,
                               const srm_frame_hdr_t *hdr,
                               const void *payload)
{
    srm_node_t *node   = link->node;
    srm_order_t *order = srm_order_get(node, hdr->src_port);
    int32_t ahead;

    if (order == NULL) {
        if (!srm_order_full(node)) {
            return 0; /* out of memory: later */
        }
        node->bad_frames++;
        return 1;
    }
    ahead = (int32_t)(hdr->seq - order->expected);
    if (ahead < 0) {
        node->bad_frames++; /* the sender numbered twice: never deliver twice */
        return 1;
    } else if (ahead > 0) {
        return srm_order_hold(node, order, link->kind, hdr, payload);
    }

    if (!srm_order_deliver(agent, node, order, hdr, payload)) {
        return 0;
    }
    srm_order_advance(agent, node, order, link->kind, hdr);
    return 1;
}

/* An ack goes out by `due`; the timer tick may be much later. */
static void srm_channel_owe_ack(srm_agent_t *agent, srm_channel_t *chan,
                                double due)
{
    chan->ack_due = due;
    srm_agent_timer_by(agent, due);
}

/* The channel's next frame was taken: it counts for the next ack. */
static void srm_channel_consumed(srm_agent_t *agent, srm_node_t *node,
                                 srm_channel_t *chan,
                                 const srm_frame_hdr_t *hdr)
{
    chan->rx_expected++;
    node->dirty = 1;
    if (!agent->config.failover) {
        chan->rx_acked = chan->rx_expected; /* nobody waits for acks */
        return;
    }
    chan->rx_unacked += sizeof(*hdr) + hdr->length;
    if (chan->ack_due == 0) {
        srm_channel_owe_ack(agent, chan, srm_agent_now() + SRM_ACK_DELAY);
    }
}

/*
 * A numbered frame (AM, PAUSE, RESUME, PORT_GONE, PORT_REFUSED, RMA_REMOTE,
 * RMA_REMOTE_DONE) from a ready link: 1
 * consumed, 0 no room (retry later), -1 a gap in the numbering (the link
 * lies).
 */
int srm_channel_receive(srm_agent_t *agent, srm_link_t *link,
                        const srm_frame_hdr_t *hdr, const void *payload)
{
    srm_node_t *node    = link->node;
    srm_channel_t *chan = &node->chan[link->kind];
    int32_t ahead       = (int32_t)(hdr->chan_seq - chan->rx_expected);

    if (ahead < 0) {
        chan->duplicates++;
        if (agent->config.failover && (chan->ack_due == 0)) {
            srm_channel_owe_ack(agent, chan, srm_agent_now()); /* it resends */
        }
        return 1;
    } else if (ahead > 0) {
        return -1;
    }

    if (hdr->type == SRM_FRAME_AM) {
        if (!srm_channel_deliver(agent, link, hdr, payload)) {
            return 0;
        }
    } else if (hdr->type == SRM_FRAME_PORT_GONE) {
        srm_order_port_gone(node, hdr->src_port, hdr->seq);
        srm_lane_enter(agent, node);
        srm_node_set_paused(node, hdr->src_port, 0); /* in case */
        srm_lane_leave(agent, node);
    } else if (hdr->type == SRM_FRAME_PORT_REFUSED) {
        srm_channel_on_port_refused(agent, node, hdr->dst_port);
    } else if (hdr->type == SRM_FRAME_RMA_REMOTE) {
        if (!srm_rma_serve(agent, link, hdr, payload)) {
            return 0;
        }
    } else if (hdr->type == SRM_FRAME_RMA_REMOTE_DONE) {
        srm_rma_remote_done(agent, node, payload);
    } else {
        /* Direct writers must see a pause before their next frame. */
        srm_lane_enter(agent, node);
        srm_node_set_paused(node, hdr->dst_port, hdr->type == SRM_FRAME_PAUSE);
        srm_lane_leave(agent, node);
        node->dirty = 1; /* RESUME: blocked senders may go */
    }
    srm_channel_consumed(agent, node, chan, hdr);
    return 1;
}

int srm_channel_is_next(srm_node_t *node, int kind, const srm_frame_hdr_t *hdr)
{
    srm_order_t *order;

    if (hdr->chan_seq != node->chan[kind].rx_expected) {
        return 0;
    }
    order = srm_order_get(node, hdr->src_port);
    return (order != NULL) && (hdr->seq == order->expected);
}

int srm_channel_taken(srm_agent_t *agent, srm_node_t *node,
                      const srm_frame_hdr_t *hdr)
{
    srm_channel_t *chan = &node->chan[SRM_CHANNEL_SMALL];
    srm_order_t *order;
    srm_client_t *dst;

    if (hdr->type == SRM_FRAME_ACK) {
        /* Without its link the next one resends what was not acked. */
        return (node->lane_link == NULL) ? 0 :
               srm_channel_on_ack(agent, node->lane_link, hdr->seq);
    } else if ((hdr->type != SRM_FRAME_AM) ||
               !srm_channel_is_next(node, SRM_CHANNEL_SMALL, hdr)) {
        return -1;
    }
    order = srm_order_get(node, hdr->src_port);
    dst   = srm_client_lookup(agent, hdr->dst_port);
    if (dst != NULL) {
        dst->stats.rx_frames++;
        dst->stats.rx_bytes += hdr->length;
    }
    chan->taken_frames++;
    srm_order_advance(agent, node, order, SRM_CHANNEL_SMALL, hdr);
    srm_channel_consumed(agent, node, chan, hdr);
    return 0;
}

void srm_channel_placed(srm_agent_t *agent, srm_link_t *link,
                        const srm_frame_hdr_t *hdr)
{
    srm_node_t *node    = link->node;
    srm_channel_t *chan = &node->chan[link->kind];

    chan->placed_frames++;
    chan->placed_bytes += hdr->length;
    srm_order_advance(agent, node, srm_order_get(node, hdr->src_port),
                      link->kind, hdr);
    srm_channel_consumed(agent, node, chan, hdr);
}
