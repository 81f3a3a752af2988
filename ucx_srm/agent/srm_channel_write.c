/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Writing a channel's stream to its active link, in as few system calls as
 * the wire takes, and taking the peer's cumulative acks, which free the
 * stream's space.
 */
#define _GNU_SOURCE
#include "srm_channel.h"

#include <ucx_srm/common/srm_log.h>

#include <stdlib.h>
#include <string.h>

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
void srm_channel_advance(srm_agent_t *agent, srm_channel_t *chan,
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

/*
 * Writes to link: an owed ack first (only at a frame boundary of the data
 * stream, and only with `ack` or data to ride along), then, on the active
 * link, the unsent frames. Whether bytes went out (not if the link died:
 * it is closed here).
 */
static int srm_channel_write(srm_agent_t *agent, srm_node_t *node, int kind,
                             srm_link_t *link, int ack)
{
    srm_channel_t *chan = &node->chan[kind];
    int data            = (link == chan->links[chan->active]) &&
                          (chan->sent < chan->tail);
    const srm_wire_verbs_mr_t *mrs[SRM_CHANNEL_WRITE_IOVS];
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
            return 0;
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
    return srm_channel_write(agent, node, kind, link, ack);
}

int srm_channel_flush(srm_agent_t *agent, srm_node_t *node, int kind)
{
    int ret;

    srm_lane_enter(agent, node);
    ret = srm_channel_flush_locked(agent, node, kind);
    srm_lane_leave(agent, node);
    return ret;
}

/* More bytes for a ready link; with `ack`, an ack even if none is owed
 * (the heartbeat). */
void srm_channel_write_link(srm_agent_t *agent, srm_link_t *link, int ack)
{
    srm_node_t *node = link->node;
    int kind         = link->kind;

    srm_lane_enter(agent, node);
    srm_channel_write(agent, node, kind, link, ack);
    srm_lane_leave(agent, node);
}

static ucs_status_t srm_channel_take_ack(srm_agent_t *agent,
                                         srm_channel_t *chan, srm_node_t *node,
                                         uint32_t ack)
{
    if (!srm_seq_before(chan->acked_seq, ack)) {
        return UCS_OK; /* old news, or a heartbeat */
    }
    if (srm_seq_before(chan->sent_seq_hi, ack)) {
        return UCS_ERR_OUT_OF_RANGE; /* acknowledges frames never sent */
    }
    chan->acked_seq = ack;
    srm_rtt_acked(&chan->rtt, ack, srm_agent_now());
    srm_channel_release(agent, chan);
    node->dirty = 1; /* space for blocked senders */
    return UCS_OK;
}

ucs_status_t
srm_channel_on_ack(srm_agent_t *agent, srm_link_t *link, uint32_t ack)
{
    srm_node_t *node = link->node;
    int kind         = link->kind;
    ucs_status_t status;

    /* Frames written directly are acknowledged too: absorbed first. */
    srm_lane_enter(agent, node);
    status = srm_channel_take_ack(agent, &node->chan[kind], node, ack);
    if ((status == UCS_OK) &&
        (link != node->chan[kind].links[node->chan[kind].active])) {
        srm_channel_follow_peer(agent, link); /* now that all may be acked */
    }
    srm_lane_leave(agent, node);
    return status;
}
