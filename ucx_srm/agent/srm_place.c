/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Placement: the payload of a large AM is read from its link (a socket, or
 * a queue pair's received buffers) straight into the destination client's
 * RX ring, not through the link's input buffer and a copy.
 *
 * A placement starts when a frame's header is in and most of its payload
 * is still to come, for a frame the channel would deliver at once (next on
 * its channel and of its source port) to a port whose ring has room and no
 * backlog. The ring is reserved for it meanwhile; frames to that port wait
 * in its backlog. The link's next reads fill the record first and the input
 * buffer after it, in one system call.
 *
 * What ends one early:
 * - its link closes: the record is never published, the frame was not
 *   acknowledged, so the channel resends it;
 * - its port leaves: the frame goes back into the link's input, to be
 *   dropped when whole like any frame for a port that left;
 * - another link of the channel delivered the frame meanwhile (a resend
 *   after failover): the record is never published.
 */
#include "srm_agent.h"

#include <string.h>

/* Below this much payload still to come, reading through in_buf is as
 * cheap: the copy saved would be smaller than a reservation held open. */
#define SRM_PLACE_MIN_REST 4096u

int srm_place_begin(srm_agent_t *agent, srm_link_t *link,
                    const srm_frame_hdr_t *hdr, const uint8_t *have,
                    size_t have_len)
{
    srm_frame_hdr_t *record;
    srm_client_t *dst;

    if (!agent->config.place || (hdr->type != SRM_FRAME_AM) ||
        link->muted ||
        (link->state != SRM_LINK_READY) || (link->place.dst != NULL) ||
        (have_len >= hdr->length) ||
        ((hdr->length - have_len) < SRM_PLACE_MIN_REST) ||
        !srm_channel_is_next(link->node, link->kind, hdr)) {
        return 0;
    }
    dst = srm_client_lookup(agent, hdr->dst_port);
    if ((dst == NULL) || (dst->key != hdr->dst_key) || (dst->failed != NULL) ||
        srm_order_get(link->node, hdr->src_port)->refused) {
        return 0; /* the usual path counts and drops it */
    }
    record = srm_deliver_reserve(agent, dst, hdr);
    if (record == NULL) {
        return 0;
    }
    link->place.dst     = dst;
    link->place.hdr     = *hdr;
    link->place.payload = (uint8_t*)srm_frame_payload(record);
    link->place.filled  = have_len;
    memcpy(link->place.payload, have, have_len);
    dst->placing        = link;
    return 1;
}

int srm_place_iov(const srm_link_t *link, struct iovec *iov)
{
    if (link->place.dst == NULL) {
        return 0;
    }
    iov->iov_base = link->place.payload + link->place.filled;
    iov->iov_len  = link->place.hdr.length - link->place.filled;
    return 1;
}

static void srm_place_end(srm_link_t *link)
{
    link->place.dst->placing = NULL;
    link->place.dst          = NULL;
}

size_t srm_place_fill(srm_agent_t *agent, srm_link_t *link, size_t got)
{
    srm_placement_t *place = &link->place;
    size_t rest, take;
    srm_client_t *dst;

    if (place->dst == NULL) {
        return got;
    }
    rest          = place->hdr.length - place->filled;
    take          = (got < rest) ? got : rest;
    place->filled += take;
    if (place->filled < place->hdr.length) {
        return 0;
    }

    dst = place->dst;
    srm_place_end(link);
    if (!srm_channel_is_next(link->node, link->kind, &place->hdr)) {
        link->node->chan[link->kind].duplicates++;
        return got - take;
    }
    srm_deliver_commit(agent, dst, &place->hdr);
    srm_channel_placed(agent, link, &place->hdr);
    return got - take;
}

void srm_place_cancel(srm_link_t *link)
{
    if (link->place.dst != NULL) {
        srm_place_end(link);
    }
}

void srm_place_abandon(srm_client_t *client)
{
    srm_link_t *link = client->placing;
    srm_placement_t *place;

    if (link == NULL) {
        return;
    }
    /* While a placement is under way every byte read goes to it, so the
     * input buffer is empty: the frame goes back there whole so far. */
    place = &link->place;
    memcpy(link->in_buf, &place->hdr, sizeof(place->hdr));
    memcpy(link->in_buf + sizeof(place->hdr), place->payload, place->filled);
    link->in_len = sizeof(place->hdr) + place->filled;
    srm_place_end(link);
}
