/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * A channel's receiving side: exactly the next frame of the channel is
 * taken, older ones (resent duplicates) are dropped, and what was taken is
 * acknowledged cumulatively (srm_channel.c says when).
 */
#define _GNU_SOURCE
#include "srm_channel.h"

#include <ucx_srm/common/srm_log.h>

#include <stdlib.h>
#include <string.h>

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

void srm_channel_count_rx(srm_agent_t *agent, srm_node_t *node, int kind,
                          const srm_frame_hdr_t *hdr)
{
    node->chan[kind].rx_frames++;
    node->chan[kind].rx_bytes += hdr->length;
    agent->stats.frames++;
    agent->stats.bytes += hdr->length;
}

/* An AM in channel order: UCS_OK consumed, UCS_ERR_NO_RESOURCE no room
 * (retry later). */
static ucs_status_t srm_channel_deliver(srm_agent_t *agent, srm_link_t *link,
                                        const srm_frame_hdr_t *hdr,
                                        const void *payload)
{
    srm_node_t *node   = link->node;
    srm_order_t *order = srm_order_get(node, hdr->src_port);
    int32_t ahead;

    if (order == NULL) {
        if (!srm_order_full(node)) {
            return UCS_ERR_NO_RESOURCE; /* out of memory: later */
        }
        node->bad_frames++;
        return UCS_OK;
    }
    ahead = (int32_t)(hdr->seq - order->expected);
    if (ahead < 0) {
        node->bad_frames++; /* the sender numbered twice: never deliver twice */
        return UCS_OK;
    } else if (ahead > 0) {
        return srm_order_hold(node, order, link->kind, hdr, payload);
    }

    if (srm_order_deliver(agent, node, order, hdr, payload) != UCS_OK) {
        return UCS_ERR_NO_RESOURCE;
    }
    srm_order_advance(agent, node, order, link->kind, hdr);
    return UCS_OK;
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
 * RMA_REMOTE_DONE) from a ready link: UCS_OK consumed, UCS_ERR_NO_RESOURCE
 * no room (retry later), UCS_ERR_OUT_OF_RANGE a gap in the numbering (the
 * link lies).
 */
ucs_status_t srm_channel_receive(srm_agent_t *agent, srm_link_t *link,
                                 const srm_frame_hdr_t *hdr,
                                 const void *payload)
{
    srm_node_t *node    = link->node;
    srm_channel_t *chan = &node->chan[link->kind];
    int32_t ahead       = (int32_t)(hdr->chan_seq - chan->rx_expected);

    if (ahead < 0) {
        chan->duplicates++;
        if (agent->config.failover && (chan->ack_due == 0)) {
            srm_channel_owe_ack(agent, chan, srm_agent_now()); /* it resends */
        }
        return UCS_OK;
    } else if (ahead > 0) {
        return UCS_ERR_OUT_OF_RANGE;
    }

    if (hdr->type == SRM_FRAME_AM) {
        if (srm_channel_deliver(agent, link, hdr, payload) != UCS_OK) {
            return UCS_ERR_NO_RESOURCE;
        }
        if (link != chan->links[chan->active]) {
            srm_channel_follow_peer(agent, link);
        }
    } else if (hdr->type == SRM_FRAME_PORT_GONE) {
        srm_order_port_gone(node, hdr->src_port, hdr->seq);
        srm_lane_enter(agent, node);
        srm_node_set_paused(node, hdr->src_port, 0); /* in case */
        srm_lane_leave(agent, node);
    } else if (hdr->type == SRM_FRAME_PORT_REFUSED) {
        srm_channel_on_port_refused(agent, node, hdr->dst_port);
    } else if (hdr->type == SRM_FRAME_RMA_REMOTE) {
        if (srm_rma_serve(agent, link, hdr, payload) != UCS_OK) {
            return UCS_ERR_NO_RESOURCE;
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
    return UCS_OK;
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

ucs_status_t srm_channel_taken(srm_agent_t *agent, srm_node_t *node,
                               int kind, const srm_frame_hdr_t *hdr)
{
    srm_channel_t *chan = &node->chan[kind];
    srm_link_t *link    = node->lanes[kind].link;
    srm_order_t *order;
    srm_client_t *dst;

    if (hdr->type == SRM_FRAME_ACK) {
        /* Without its link the next one resends what was not acked. */
        return (link == NULL) ? UCS_OK :
                                srm_channel_on_ack(agent, link, hdr->seq);
    } else if ((hdr->type != SRM_FRAME_AM) ||
               !srm_channel_is_next(node, kind, hdr)) {
        return UCS_ERR_INVALID_PARAM;
    }
    order = srm_order_get(node, hdr->src_port);
    dst   = srm_client_lookup(agent, hdr->dst_port);
    if (dst != NULL) {
        dst->stats.rx_frames++;
        dst->stats.rx_bytes += hdr->length;
    }
    chan->taken_frames++;
    srm_order_advance(agent, node, order, kind, hdr);
    srm_channel_consumed(agent, node, chan, hdr);
    return UCS_OK;
}

void srm_channel_placed(srm_agent_t *agent, srm_link_t *link,
                        const srm_frame_hdr_t *hdr)
{
    srm_node_t *node    = link->node;
    srm_channel_t *chan = &node->chan[link->kind];

    chan->placed_frames++;
    chan->placed_bytes += hdr->length;
    if (link != chan->links[chan->active]) {
        srm_channel_follow_peer(agent, link);
    }
    srm_order_advance(agent, node, srm_order_get(node, hdr->src_port),
                      link->kind, hdr);
    srm_channel_consumed(agent, node, chan, hdr);
}
