/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * A channel's outgoing stream (srm_channel.c has the whole picture): frames
 * appended from the clients' rings (large payloads left in the TX rings as
 * holes), control frames ahead of the depth limit, the PAUSE state of the
 * peer's ports, and the frames clients wrote through their direct lane
 * absorbed into the stream.
 */
#define _GNU_SOURCE
#include "srm_channel.h"

#include <ucx_srm/common/srm_log.h>

#include <stdlib.h>
#include <string.h>

/*
 * Registers a new stream buffer with each path's verbs device, so that
 * the queue pairs send from it in place. Without (the tcp wire, or a
 * device that refused: then the queue pair copies into its send pool) mr
 * stays NULL. Not without failover either: nothing then holds the bytes
 * a queue pair may still read (no acks; the head moves as they are
 * posted).
 */
static void srm_channel_out_reg(srm_agent_t *agent, const srm_mirror_t *out,
                                srm_wire_verbs_mr_t *mr[SRM_WIRE_PATHS])
{
    srm_wire_verbs_dev_t *dev, *prev = NULL;
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
        mr[path] = srm_wire_verbs_mr_reg_send(dev, out->base, 2 * out->size);
        if (mr[path] == NULL) {
            srm_warn("%s: cannot register a channel's stream of %zu KB "
                     "(%m): its frames are copied to the send pool",
                     srm_wire_verbs_dev_name(dev), out->size >> 10);
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
static ucs_status_t
srm_channel_out_grow(srm_agent_t *agent, srm_channel_t *chan, size_t needed)
{
    size_t min = srm_channel_depth(agent) + sizeof(srm_frame_hdr_t) +
                 SRM_FRAME_MAX_PAYLOAD + SRM_CHANNEL_CTL_SLACK;
    srm_wire_verbs_mr_t *mr[SRM_WIRE_PATHS];
    srm_outgrown_t *outgrown = NULL;
    srm_mirror_t out;
    int path, registered = 0;

    for (path = 0; path < SRM_WIRE_PATHS; ++path) {
        registered |= (chan->out_mr[path] != NULL);
    }
    if (registered && ((outgrown = malloc(sizeof(*outgrown))) == NULL)) {
        return UCS_ERR_NO_MEMORY;
    }
    if (srm_mirror_create(&out, (needed > min) ? needed : min) != UCS_OK) {
        free(outgrown);
        return UCS_ERR_NO_MEMORY;
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
    return UCS_OK;
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
        (srm_channel_out_grow(agent, chan, needed) != UCS_OK)) {
        return NULL;
    }
    buf         = srm_mirror_at(&chan->out, chan->tail);
    chan->tail += size;
    node->dirty = 1;
    return buf;
}

/* Numbers a frame and queues it; without payload (NULL) its bytes keep
 * their place in the stream unwritten (a hole). */
static ucs_status_t srm_channel_put(srm_agent_t *agent, srm_node_t *node,
                                    srm_channel_t *chan, srm_frame_hdr_t *hdr,
                                    const void *payload)
{
    uint8_t *out = srm_channel_append(agent, node, chan,
                                      sizeof(*hdr) + hdr->length);

    if (out == NULL) {
        return UCS_ERR_NO_MEMORY;
    }
    hdr->chan_seq = chan->next_seq++;
    memcpy(out, hdr, sizeof(*hdr));
    if ((payload != NULL) && (hdr->length > 0)) {
        memcpy(out + sizeof(*hdr), payload, hdr->length);
    }
    return UCS_OK;
}

/*
 * As srm_channel_put, but the payload stays in the sender's TX ring, kept
 * there until acknowledged (srm_holes.h). UCS_ERR_NO_RESOURCE: the ring
 * keeps all it can, so the frame is to be copied after all;
 * UCS_ERR_NO_MEMORY.
 */
static ucs_status_t
srm_channel_put_hole(srm_agent_t *agent, srm_node_t *node, srm_channel_t *chan,
                     srm_sched_queue_t *queue, srm_frame_hdr_t *hdr,
                     const void *payload)
{
    srm_client_t *src = queue->owner;
    srm_hole_t hole;

    if (srm_holes_reserve(&chan->holes) != UCS_OK) {
        return UCS_ERR_NO_MEMORY;
    } else if (srm_sched_keep(queue, &hole.kept) != UCS_OK) {
        return UCS_ERR_NO_RESOURCE;
    }
    if (srm_channel_put(agent, node, chan, hdr, NULL) != UCS_OK) {
        /* The scheduler will not pass the frame: it must not stay kept. */
        srm_sched_free_kept(queue, hole.kept);
        return UCS_ERR_NO_MEMORY;
    }
    hole.offset  = chan->tail - hdr->length;
    hole.length  = hdr->length;
    hole.queue   = queue;
    hole.payload = payload;
    hole.mem     = src->mem;
    hole.ring    = (unsigned)(queue - src->tx);
    srm_holes_push(&chan->holes, &hole);
    chan->ring_frames++;
    return UCS_OK;
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
void srm_node_set_paused(srm_node_t *node, uint32_t port, int paused)
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
    ucs_status_t status;
    int kind;

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
    status = srm_channel_from_ring(agent, queue, hdr) ?
             srm_channel_put_hole(agent, node, chan, queue, &frame, payload) :
             UCS_ERR_NO_RESOURCE;
    if (status == UCS_ERR_NO_RESOURCE) { /* not kept in the ring: copied */
        status = srm_channel_put(agent, node, chan, &frame, payload);
    }
    if (status != UCS_OK) {
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
 * the small channel to a node: UCS_ERR_UNREACHABLE if the node is invalid,
 * UCS_ERR_NO_MEMORY.
 */
static ucs_status_t srm_channel_put_control(srm_agent_t *agent,
                                            srm_node_t *node,
                                            srm_frame_hdr_t *frame,
                                            const void *payload, uint32_t port)
{
    ucs_status_t status;

    if (node->state == SRM_NODE_INVALID) {
        return UCS_ERR_UNREACHABLE; /* nobody to tell; its queue stays empty */
    }
    /* Control frames ignore the depth limit: they are what lifts it, or
     * (RMA) bounded by the operations in flight. */
    srm_lane_enter(agent, node);
    status = srm_channel_put(agent, node, &node->chan[SRM_CHANNEL_SMALL],
                             frame, payload);
    srm_lane_leave(agent, node);
    if (status != UCS_OK) {
        srm_error("out of memory: %s for port %u to node %u not sent",
                  srm_channel_control_name(frame), port, node->index);
        return status;
    }
    srm_debug("sent %s for port %u to node %u",
              srm_channel_control_name(frame), port, node->index);
    return UCS_OK;
}

ucs_status_t srm_channel_send_rma(srm_agent_t *agent, srm_node_t *node,
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

ucs_status_t srm_channel_absorb(srm_agent_t *agent, srm_node_t *node,
                                int kind, const uint8_t *frames, size_t len,
                                size_t unwritten, srm_absorb_result_t *result)
{
    srm_channel_t *chan = &node->chan[kind];
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
        return UCS_ERR_NO_MEMORY;
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
            (srm_lane_check_writer(agent, node, &hdr) != UCS_OK)) {
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
    return UCS_OK;
}
