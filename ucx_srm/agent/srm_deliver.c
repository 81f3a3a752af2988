/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Intra-node delivery: a frame from one client's TX ring into another
 * client's RX ring, or into the destination port's bounded backlog when that
 * ring is full. Per-port back-pressure: a full backlog blocks only the
 * senders to that port, never the rest of the node.
 */
#include "srm_agent.h"

#include <ucx_srm/common/srm_log.h>

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void srm_deliver_mark(srm_agent_t *agent, srm_client_t *client,
                             unsigned reason)
{
    if (!client->notify) {
        client->notify_next = agent->notify_list;
        agent->notify_list  = client;
    }
    client->notify |= reason;
}

void srm_deliver_mark_notify(srm_agent_t *agent, srm_client_t *client)
{
    srm_deliver_mark(agent, client, SRM_NOTIFY_WAKE);
}

void srm_deliver_mark_tx_room(srm_agent_t *agent, srm_client_t *client)
{
    if (!(client->notify & SRM_NOTIFY_TX_ROOM)) {
        srm_deliver_mark(agent, client, SRM_NOTIFY_TX_ROOM);
    }
}

/* Room for hdr's record in dst's RX ring: UCS_OK (*slot_p is where),
 * UCS_ERR_NO_RESOURCE none now, UCS_ERR_CONNECTION_RESET if the client broke
 * its ring (and was failed). */
static ucs_status_t
srm_deliver_ring_reserve(srm_agent_t *agent, srm_client_t *dst,
                         const srm_frame_hdr_t *hdr, srm_frame_hdr_t **slot_p)
{
    if (dst->placing != NULL) {
        return UCS_ERR_NO_RESOURCE; /* its one reservation: a placement's */
    }
    switch (srm_ring_reserve(&dst->rx, srm_frame_record_size(hdr->length),
                             slot_p)) {
    case SRM_RING_OK:
        return UCS_OK;
    case SRM_RING_FULL:
        return UCS_ERR_NO_RESOURCE;
    default:
        srm_client_fail(agent, dst, "corrupt RX ring index");
        return UCS_ERR_CONNECTION_RESET;
    }
}

static void srm_deliver_ring_commit(srm_agent_t *agent, srm_client_t *dst,
                                    const srm_frame_hdr_t *hdr)
{
    srm_ring_commit(&dst->rx, srm_frame_record_size(hdr->length));
    dst->stats.rx_frames++;
    dst->stats.rx_bytes += hdr->length;
    srm_deliver_mark_notify(agent, dst);
}

/* UCS_OK written; as srm_deliver_ring_reserve otherwise. */
static ucs_status_t srm_deliver_to_ring(srm_agent_t *agent, srm_client_t *dst,
                                        const srm_frame_hdr_t *hdr,
                                        const void *payload)
{
    srm_frame_hdr_t *slot;
    ucs_status_t status;

    status = srm_deliver_ring_reserve(agent, dst, hdr, &slot);
    if (status != UCS_OK) {
        if ((status == UCS_ERR_NO_RESOURCE) && (dst->placing == NULL)) {
            srm_shm_flag_raise(&dst->ctl->rx_space_wanted);
        }
        return status;
    }
    memcpy(slot, hdr, sizeof(*hdr));
    memcpy(srm_frame_payload(slot), payload, hdr->length);
    srm_deliver_ring_commit(agent, dst, hdr);
    return UCS_OK;
}

/*
 * A remote sender keeps sending for a while after we PAUSE it (its queue
 * and the sockets' buffers): those frames go over the backlog limit up to
 * this many times it, and only past that does the whole channel wait.
 */
#define SRM_DELIVER_INFLIGHT_FACTOR 64
#define SRM_DELIVER_BAD_KEYS_MAX    64u /* frames to wrong keys before a drop */

/* Tells node `from` to stop sending to this port, once. */
static void srm_deliver_pause(srm_agent_t *agent, srm_client_t *dst,
                              srm_node_t *from)
{
    unsigned i;

    for (i = 0; i < dst->num_paused_nodes; ++i) {
        if (dst->paused_nodes[i] == from->index) {
            return;
        }
    }
    if (dst->num_paused_nodes == SRM_MAX_PAUSED_NODES) {
        return; /* past that, the channel's own back-pressure applies */
    }
    dst->paused_nodes[dst->num_paused_nodes++] = (uint16_t)from->index;
    srm_channel_send_flow(agent, from->index, SRM_FRAME_PAUSE, dst->port);
}

static void srm_deliver_resume(srm_agent_t *agent, srm_client_t *dst)
{
    while (dst->num_paused_nodes > 0) {
        srm_channel_send_flow(agent, dst->paused_nodes[--dst->num_paused_nodes],
                              SRM_FRAME_RESUME, dst->port);
    }
}

static int srm_deliver_to_backlog(srm_agent_t *agent, srm_client_t *dst,
                                  srm_node_t *from,
                                  const srm_frame_hdr_t *hdr,
                                  const void *payload)
{
    size_t limit = agent->config.port_backlog;
    srm_backlog_frame_t *frame;

    if ((from != NULL) && ((dst->backlog_bytes + hdr->length) > limit)) {
        srm_deliver_pause(agent, dst, from);
        limit *= SRM_DELIVER_INFLIGHT_FACTOR;
    }
    if ((dst->backlog_bytes + hdr->length) > limit) {
        return 0;
    }
    frame = malloc(sizeof(*frame) + hdr->length);
    if (frame == NULL) {
        return 0; /* stays in the sender's ring: slower, never lost */
    }
    frame->next = NULL;
    frame->from = from;
    frame->hdr  = *hdr;
    if (from != NULL) {
        from->backlogged++; /* its port order now runs through here */
    }
    memcpy(frame->payload, payload, hdr->length);
    if (dst->backlog_tail == NULL) {
        dst->backlog_head = frame;
    } else {
        dst->backlog_tail->next = frame;
    }
    dst->backlog_tail   = frame;
    dst->backlog_bytes += hdr->length;
    dst->stats.backlogged++;
    return 1;
}

ucs_status_t srm_deliver_to_port(srm_agent_t *agent, srm_node_t *from,
                                 const srm_frame_hdr_t *hdr,
                                 const void *payload)
{
    srm_client_t *dst = srm_client_lookup(agent, hdr->dst_port);
    ucs_status_t status;

    if ((dst == NULL) || (dst->key != hdr->dst_key)) {
        /* A port that left, or a forged key: counted, never delivered. */
        agent->stats.bad_dest++;
        srm_debug("dropped frame from port %u to port %u (%s)",
                  hdr->src_port, hdr->dst_port,
                  (dst == NULL) ? "no such port" : "key mismatch");
        return (dst == NULL) ? UCS_ERR_NO_ELEM : UCS_ERR_REJECTED;
    }

    /* Written, or the destination broke its ring and is being dropped. */
    if (dst->backlog_head == NULL) {
        status = srm_deliver_to_ring(agent, dst, hdr, payload);
        if ((status == UCS_OK) && (dst->num_paused_nodes > 0)) {
            /* Paused by a frame too large for the backlog, which waited
             * instead: no backlog drains to resume them. */
            srm_deliver_resume(agent, dst);
        }
        if (status != UCS_ERR_NO_RESOURCE) {
            return UCS_OK;
        }
    }
    if (!srm_deliver_to_backlog(agent, dst, from, hdr, payload)) {
        if (dst->placing == NULL) {
            srm_shm_flag_raise(&dst->ctl->rx_space_wanted);
        }
        return UCS_ERR_NO_RESOURCE;
    }
    return UCS_OK;
}

srm_frame_hdr_t *srm_deliver_reserve(srm_agent_t *agent, srm_client_t *dst,
                                     const srm_frame_hdr_t *hdr)
{
    srm_frame_hdr_t *slot;

    if ((dst->backlog_head != NULL) ||
        (srm_deliver_ring_reserve(agent, dst, hdr, &slot) != UCS_OK)) {
        return NULL;
    }
    memcpy(slot, hdr, sizeof(*hdr));
    return slot;
}

void srm_deliver_commit(srm_agent_t *agent, srm_client_t *dst,
                        const srm_frame_hdr_t *hdr)
{
    srm_deliver_ring_commit(agent, dst, hdr);
    if (dst->num_paused_nodes > 0) {
        srm_deliver_resume(agent, dst); /* as srm_deliver_to_port does */
    }
}

srm_sched_result_t srm_deliver_frame(void *arg, srm_sched_queue_t *queue,
                                     const srm_frame_hdr_t *hdr,
                                     const void *payload)
{
    srm_agent_t *agent = arg;
    srm_client_t *src  = queue->owner;
    srm_sched_result_t result;
    srm_frame_hdr_t frame;
    ucs_status_t status;

    if (hdr->type == SRM_FRAME_RMA) {
        return srm_rma_request(agent, src, hdr, payload);
    } else if (hdr->type != SRM_FRAME_AM) {
        return SRM_SCHED_FAILED;
    }

    frame          = *hdr;
    frame.src_port = src->port; /* never trust the sender to name itself */

    if (hdr->dst_node != 0) {
        result = srm_channel_enqueue(agent, queue, &frame, payload);
        if (result == SRM_SCHED_BLOCKED) {
            src->stats.blocked++;
            return result;
        }
    } else {
        status = srm_deliver_to_port(agent, NULL, &frame, payload);
        if (status == UCS_ERR_NO_RESOURCE) {
            src->stats.blocked++;
            return SRM_SCHED_BLOCKED;
        } else if (status != UCS_OK) {
            src->stats.bad_dest++;
            if ((status == UCS_ERR_REJECTED) &&
                (++src->stats.bad_port_keys == SRM_DELIVER_BAD_KEYS_MAX)) {
                /* Keys are 32 random bits: a sender that keeps missing
                 * them is searching. A port that left is no miss. */
                srm_client_fail(agent, src, "too many frames to ports of "
                                            "this node with wrong keys");
            }
        } else {
            agent->moved_locally = 1;
        }
    }

    src->stats.tx_frames++;
    src->stats.tx_bytes += hdr->length;
    agent->stats.frames++;
    agent->stats.bytes += hdr->length;
    /* Whether it waits for the room is read in srm_deliver_notify, after
     * the scheduler released the frame: read here, before, a client that
     * asks in between would be missed. */
    srm_deliver_mark_tx_room(agent, src);
    return SRM_SCHED_DELIVERED;
}

static unsigned srm_deliver_backlog(srm_agent_t *agent, srm_client_t *dst)
{
    srm_backlog_frame_t *frame;
    unsigned count = 0;

    while ((frame = dst->backlog_head) != NULL) {
        if (srm_deliver_to_ring(agent, dst, &frame->hdr, frame->payload) !=
            UCS_OK) {
            break; /* full, or the client was dropped with its backlog */
        }
        dst->backlog_head   = frame->next;
        dst->backlog_bytes -= frame->hdr.length;
        if (dst->backlog_head == NULL) {
            dst->backlog_tail = NULL;
        }
        if (frame->from != NULL) {
            frame->from->backlogged--;
        }
        free(frame);
        ++count;
    }
    /* Only once the port took frames: a frame too large for the backlog
     * that waits in its link would pause them again at once, every pass. */
    if ((count > 0) && (dst->num_paused_nodes > 0) &&
        (dst->backlog_bytes <= agent->config.port_backlog / 2)) {
        srm_deliver_resume(agent, dst);
    }
    return count;
}

unsigned srm_deliver_backlogs(srm_agent_t *agent)
{
    unsigned count = 0;
    unsigned i;

    for (i = 0; i < agent->num_slots; ++i) {
        if ((agent->slots[i] != NULL) &&
            (agent->slots[i]->backlog_head != NULL)) {
            count += srm_deliver_backlog(agent, agent->slots[i]);
        }
    }
    return count;
}

void srm_deliver_release_backlog(srm_client_t *client)
{
    srm_backlog_frame_t *frame;

    while ((frame = client->backlog_head) != NULL) {
        client->backlog_head = frame->next;
        if (frame->from != NULL) {
            frame->from->backlogged--;
        }
        free(frame);
    }
    client->backlog_tail  = NULL;
    client->backlog_bytes = 0;
}

/*
 * Signals every client that got frames (or TX room it waits for) since the
 * last call, but only those that said they sleep: a polling client costs no
 * system call. The fence orders the rings' updates of this pass before the
 * flags are read; the client raises its flag, fences and then looks at the
 * rings, so one of the two sides always sees the other.
 */
void srm_deliver_notify(srm_agent_t *agent)
{
    const uint64_t one = 1;
    srm_client_t *client;
    unsigned reasons;
    ssize_t ret;
    int wake;

    if (agent->notify_list == NULL) {
        return;
    }
    srm_fence();
    while ((client = agent->notify_list) != NULL) {
        agent->notify_list = client->notify_next;
        reasons            = client->notify;
        client->notify     = 0;
        /* The room request stays raised until a wakeup answers it: taken
         * from a client not yet asleep, it would be gone when it sleeps. */
        wake = (reasons & SRM_NOTIFY_WAKE) ||
               srm_load_relaxed(&client->ctl->tx_space_wanted.value);
        if (wake && srm_shm_flag_take_fenced(&client->ctl->client_sleeping)) {
            srm_shm_flag_clear(&client->ctl->tx_space_wanted);
            ret = write(client->event_fd, &one, sizeof(one));
            (void)ret; /* a full counter already means "wake up" */
            client->stats.wakeups++;
        }
    }
}
