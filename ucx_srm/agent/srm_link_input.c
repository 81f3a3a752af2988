/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * A link's input: its socket or its wire's endpoint read into the link's
 * buffer (or past it, straight into a ring: srm_place.c), and the frames
 * parsed and handed to the handshake or the channel.
 */
#include "srm_link.h"

#include <ucx_srm/common/srm_log.h>
#include <ucx_srm/common/srm_rma.h>
#include <ucx_srm/wire/srm_wire_tcp.h>

#include <errno.h>
#include <string.h>

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

/* One frame of a ready link: UCS_OK consumed, UCS_ERR_NO_RESOURCE no room
 * yet, UCS_ERR_CONNECTION_RESET the link was closed. */
static ucs_status_t srm_link_on_frame(srm_agent_t *agent, srm_link_t *link,
                                      const srm_frame_hdr_t *hdr,
                                      const void *payload)
{
    ucs_status_t status;

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
        status = srm_channel_receive(agent, link, hdr, payload);
        if (status == UCS_ERR_OUT_OF_RANGE) {
            srm_link_close(agent, link, SRM_LOG_WARN,
                           "frame %u arrived before frame %u of the channel",
                           hdr->chan_seq,
                           link->node->chan[link->kind].rx_expected);
            return UCS_ERR_CONNECTION_RESET;
        }
        return status;
    case SRM_FRAME_ACK:
        if (hdr->length != 0) {
            break;
        }
        if (srm_channel_on_ack(agent, link, hdr->seq) != UCS_OK) {
            srm_link_close(agent, link, SRM_LOG_WARN,
                           "ack %u for frames never sent", hdr->seq);
            return UCS_ERR_CONNECTION_RESET;
        }
        return UCS_OK;
    case SRM_FRAME_BYE:
        srm_node_invalidate(agent, link->node, 0, "its agent left");
        return UCS_ERR_CONNECTION_RESET;
    default:
        break;
    }
    link->node->bad_frames++;
    agent->stats.bad_frames++;
    srm_link_close(agent, link, SRM_LOG_WARN,
                   "frame type %u (length %u) not expected on a ready link",
                   hdr->type, hdr->length);
    return UCS_ERR_CONNECTION_RESET;
}

/* Handles the complete frames in the input buffer; UCS_ERR_CONNECTION_RESET
 * if the link was closed. */
static ucs_status_t srm_link_parse(srm_agent_t *agent, srm_link_t *link)
{
    size_t offset = 0, size;
    srm_frame_status_t status;
    srm_frame_hdr_t hdr;
    const uint8_t *payload;
    ucs_status_t frame_status;

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
            return UCS_ERR_CONNECTION_RESET;
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
            frame_status = srm_link_on_frame(agent, link, &hdr, payload);
            if (frame_status == UCS_ERR_NO_RESOURCE) {
                link->in_blocked = 1;
                break;
            } else if (frame_status != UCS_OK) {
                return frame_status;
            }
        } else if (srm_link_on_handshake(agent, link, &hdr, payload) !=
                   UCS_OK) {
            return UCS_ERR_CONNECTION_RESET;
        }
        offset += size;
    }

    memmove(link->in_buf, link->in_buf + offset, link->in_len - offset);
    link->in_len -= offset;
    srm_link_set_events(agent, link);
    if (link->endpoint_unread) {
        link->endpoint_unread = 0;
        return srm_link_read_endpoint(agent, link);
    }
    return UCS_OK;
}

ucs_status_t srm_link_read_endpoint(srm_agent_t *agent, srm_link_t *link)
{
    struct iovec iov[2];
    char why[128];
    ssize_t got;
    int iovcnt;

    while (!link->in_blocked) {
        /* As from a socket: a frame being placed first (srm_place.c). */
        iovcnt               = srm_place_iov(link, &iov[0]);
        iov[iovcnt].iov_base = link->in_buf + link->in_len;
        iov[iovcnt].iov_len  = SRM_LINK_IN_BUF - link->in_len;
        ++iovcnt;
        got = link->wire->recvv(&link->conn, iov, iovcnt);
        if (got < 0) {
            srm_link_close(agent, link,
                           link->wire->why(&link->conn, errno, why,
                                           sizeof(why)),
                           "%s", why);
            return UCS_ERR_CONNECTION_RESET;
        }
        if ((got == 0) && ((link->wire->pending(&link->conn) == 0) ||
                           (link->in_len == SRM_LINK_IN_BUF))) {
            return UCS_OK;
        }
        if (link->muted) {
            srm_place_cancel(link);
            continue; /* a dead path: what arrives is lost */
        }
        link->last_rx  = srm_agent_now();
        link->in_len  += srm_place_fill(agent, link, (size_t)got);
        if (srm_link_parse(agent, link) != UCS_OK) {
            return UCS_ERR_CONNECTION_RESET;
        }
    }
    return UCS_OK;
}

/* On completions, the link's socket carries nothing after the handshake
 * but the news that the peer went away. */
static void srm_link_read_control(srm_agent_t *agent, srm_link_t *link)
{
    uint8_t byte;
    ssize_t got = srm_wire_tcp_recv(link->conn.fd, &byte, sizeof(byte));

    if ((got < 0) && (errno == 0)) {
        srm_link_close(agent, link, SRM_LOG_INFO, "the peer closed it");
    } else if (got < 0) {
        srm_link_close(agent, link, SRM_LOG_WARN,
                       "control connection failed: %m");
    } else if (got > 0) {
        agent->stats.bad_frames++;
        srm_link_close(agent, link, SRM_LOG_WARN,
                       "bytes on the control connection of a %s link",
                       link->wire->name);
    }
}

/* The link's socket: the handshake, and the frames of the tcp wire. */
static void srm_link_read(srm_agent_t *agent, srm_link_t *link)
{
    struct iovec iov[2];
    char why[128];
    ssize_t got;
    int iovcnt;

    if (srm_link_on_completions(link)) {
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
    got = srm_wire_tcp_recvv(link->conn.fd, iov, iovcnt);
    if ((got > 0) && link->muted) {
        srm_place_cancel(link);
        return; /* a dead path: what arrives is lost */
    }
    if (got < 0) {
        srm_link_close(agent, link,
                       srm_wire_tcp_ops.why(&link->conn, errno, why,
                                            sizeof(why)),
                       "%s", why);
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

/* Links whose input waited for room try again; returns how many went on. */
unsigned srm_link_progress(srm_agent_t *agent)
{
    unsigned count = 0, i;
    srm_node_t *node;
    srm_link_t *link;
    ucs_status_t status;

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
        status = (agent->links[i] == link) ? srm_link_parse(agent, link) :
                                             UCS_ERR_CONNECTION_RESET;
        if (node != NULL) {
            srm_lane_leave(agent, node);
        }
        if ((status == UCS_OK) && !link->in_blocked) {
            ++count;
            if (srm_link_on_completions(link)) {
                srm_link_read_endpoint(agent, link); /* no event will come */
            }
        }
    }
    return count;
}
