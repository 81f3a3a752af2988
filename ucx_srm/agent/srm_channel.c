/* SPDX-License-Identifier: BSD-3-Clause */
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
#include "srm_channel.h"

#include <ucx_srm/common/srm_log.h>
#include <ucx_srm/wire/srm_wire_tcp.h>

#include <stdlib.h>
#include <string.h>

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
size_t srm_channel_peek(const srm_channel_t *chan, uint64_t offset,
                        srm_frame_hdr_t *hdr)
{
    memcpy(hdr, srm_mirror_at(&chan->out, offset), sizeof(*hdr));
    return sizeof(*hdr) + hdr->length;
}

/* The queue is allocated on first use: a node that only calls us, or a
 * peer that merely says HELLO, costs no buffer. */
void srm_channel_init(srm_agent_t *agent, srm_channel_t *chan)
{
    memset(chan, 0, sizeof(*chan));
    srm_rtt_init(&chan->rtt);
    srm_retrans_moves_init(&chan->retrans_moves);
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
    if (chan->links[path] != NULL) {
        srm_retrans_settle(&chan->links[path]->retrans, srm_agent_now());
    }
    srm_rtt_restart(&chan->rtt);
}

void srm_channel_follow_peer(srm_agent_t *agent, srm_link_t *link)
{
    srm_node_t *node    = link->node;
    srm_channel_t *chan = &node->chan[link->kind];
    srm_link_t *active  = chan->links[chan->active];

    /* Only to settle the first choice: after a failover both sides went
     * to the connection left, and a move away from a retransmitting one
     * must not be undone (test_netns_retrans). */
    if ((active == link) || (link->state != SRM_LINK_READY) ||
        (node->lanes[SRM_CHANNEL_BULK].shm == NULL) || /* only bulk lanes
                                                          were measured */
        (chan->failovers > 0) ||
        (agent->node_id > node->node_id) || (chan->head != chan->tail) ||
        ((active != NULL) && (active->ctl_left > 0))) {
        return;
    }
    srm_debug("node %u %s channel: follows its peer to path %d",
              node->index, srm_node_kind_name(link->kind), link->path);
    srm_channel_activate(agent, node, link->kind, link->path);
}

void srm_channel_link_ready(srm_agent_t *agent, srm_link_t *link)
{
    srm_channel_t *chan = &link->node->chan[link->kind];
    srm_link_t *active  = chan->links[chan->active];
    const srm_wire_addr_t *wire;
    char addr[SRM_WIRE_ADDR_STRLEN];

    srm_lane_enter(agent, link->node);
    if ((active == NULL) || (active->state != SRM_LINK_READY) ||
        (active == link)) {
        if (chan->sent > chan->head) {
            wire = srm_wire_addr_of_path(link->node->wire, link->path);
            srm_info("node %u %s channel: resending %llu unacknowledged "
                     "bytes on path %d (%s)", link->node->index,
                     srm_node_kind_name(link->kind),
                     (unsigned long long)(chan->sent - chan->head),
                     link->path,
                     srm_wire_tcp_str(wire, addr, sizeof(addr)));
        }
        srm_channel_activate(agent, link->node, link->kind, link->path);
    }
    chan->failures[link->path] = 0;
    link->node->dirty          = 1;
    srm_lane_leave(agent, link->node);
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

    srm_lane_enter(agent, node);
    srm_lane_link_lost(node, link);
    srm_channel_switch_path(agent, link);
    srm_lane_leave(agent, node);
}
