/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Receive order per source port of a peer node. Each of its ports numbers
 * the frames it sends to this node (seq); they may arrive out of order
 * across the two channels and after a failover, so each port has an entry
 * with the next number it expects and the frames that came ahead of it.
 *
 * Entries are bounded per node and freed: when a port of the peer goes, its
 * agent says so (PORT_GONE, with the number the port ended at), and the
 * entry goes once every frame before that number has been delivered. A
 * port number the peer uses again later starts a new entry at zero.
 */
#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "srm_agent.h"

#include <stdlib.h>
#include <string.h>

/* Frames held back for order, per node, and source ports it may name:
 * far more than the processes of a node, a bound against a peer that
 * names a new port in every frame. */
#define SRM_ORDER_HELD_LIMIT  (8u * 1024u * 1024u)
#define SRM_ORDER_MAX_SOURCES 4096u
/* Frames of one source port to ports of this node with wrong keys before
 * it is refused: keys are 32 random bits, so a port that keeps missing
 * them is searching (as for local senders, srm_deliver.c). */
#define SRM_ORDER_BAD_KEYS_MAX 64u

int srm_order_full(const srm_node_t *node)
{
    return node->num_orders == SRM_ORDER_MAX_SOURCES;
}

static srm_order_t *srm_order_find(srm_node_t *node, uint32_t src_port)
{
    unsigned i;

    for (i = 0; i < node->num_orders; ++i) {
        if (node->orders[i].src_port == src_port) {
            return &node->orders[i];
        }
    }
    return NULL;
}

srm_order_t *srm_order_get(srm_node_t *node, uint32_t src_port)
{
    srm_order_t *order = srm_order_find(node, src_port);
    srm_order_t *orders;
    unsigned cap;

    if (order != NULL) {
        return order;
    }
    if (node->num_orders == SRM_ORDER_MAX_SOURCES) {
        if (!node->orders_full_logged) {
            srm_error("node %u names more than %u source ports: frames "
                      "from the others are dropped (bad_frames)",
                      node->index, SRM_ORDER_MAX_SOURCES);
            node->orders_full_logged = 1;
        }
        return NULL;
    }
    if (node->num_orders == node->cap_orders) {
        cap    = (node->cap_orders == 0) ? 16 : (2 * node->cap_orders);
        orders = realloc(node->orders, cap * sizeof(*orders));
        if (orders == NULL) {
            return NULL;
        }
        node->orders     = orders;
        node->cap_orders = cap;
    }
    memset(&node->orders[node->num_orders], 0, sizeof(*node->orders));
    node->orders[node->num_orders].src_port = src_port;
    return &node->orders[node->num_orders++];
}

static void srm_order_drop_held(srm_node_t *node, srm_order_t *order)
{
    srm_held_frame_t *held;

    while ((held = order->held) != NULL) {
        order->held       = held->next;
        node->held_bytes -= held->hdr.length;
        free(held);
    }
}

/* Frees a gone port's entry once everything it sent was delivered:
 * 1 if it went (the entry at its place is now another one). */
static int srm_order_retire(srm_node_t *node, srm_order_t *order)
{
    unsigned i = (unsigned)(order - node->orders);

    if (!order->gone || (order->expected != order->final)) {
        return 0;
    }
    if (order->held != NULL) {
        /* Numbered at or past its own end: nothing to wait for. */
        node->bad_frames++;
        srm_order_drop_held(node, order);
    }
    node->orders[i] = node->orders[--node->num_orders];
    node->orders_retired++;
    return 1;
}

static void srm_order_miss(srm_agent_t *agent, srm_node_t *node,
                           srm_order_t *order)
{
    node->miskeyed++;
    if (++order->bad_keys == SRM_ORDER_BAD_KEYS_MAX) {
        order->refused = 1;
        node->sources_refused++;
        srm_warn("node %u: its port %u missed the keys of this node's "
                 "ports %u times: what it sends is dropped from now on, "
                 "and its agent is told to drop it", node->index,
                 order->src_port, SRM_ORDER_BAD_KEYS_MAX);
        srm_channel_send_port_refused(agent, node, order->src_port);
    }
}

int srm_order_refused(srm_node_t *node, uint32_t src_port)
{
    srm_order_t *order = srm_order_find(node, src_port);

    return (order != NULL) && order->refused;
}

ucs_status_t srm_order_deliver(srm_agent_t *agent, srm_node_t *node,
                               srm_order_t *order, const srm_frame_hdr_t *hdr,
                               const void *payload)
{
    ucs_status_t status;

    if (order->refused) {
        node->miskeyed++; /* counted with the misses that refused it */
        return UCS_OK;
    }
    status = srm_deliver_to_port(agent, node, hdr, payload);
    if (status == UCS_ERR_NO_RESOURCE) {
        return status;
    } else if (status != UCS_ERR_REJECTED) {
        return UCS_OK; /* delivered, or dropped: no such port */
    }
    srm_order_miss(agent, node, order);
    return UCS_OK;
}

/* Delivers the held frames that are now next in order. */
static unsigned srm_order_release(srm_agent_t *agent, srm_node_t *node,
                                  srm_order_t *order)
{
    srm_held_frame_t *held;
    unsigned count = 0;

    while ((held = order->held) != NULL) {
        if (srm_seq_before(held->hdr.seq, order->expected)) {
            /* The sender numbered twice: never deliver twice, and never
             * let it stand in front of the frames after it. */
            node->bad_frames++;
        } else if ((held->hdr.seq != order->expected) ||
                   (srm_order_deliver(agent, node, order, &held->hdr,
                                      held->payload) != UCS_OK)) {
            break;
        } else {
            order->expected++;
            srm_channel_count_rx(agent, node, held->kind, &held->hdr);
            ++count;
        }
        order->held       = held->next;
        node->held_bytes -= held->hdr.length;
        free(held);
    }
    return count;
}

unsigned srm_order_release_all(srm_agent_t *agent, srm_node_t *node)
{
    unsigned count = 0, o = 0;

    while (o < node->num_orders) {
        count += srm_order_release(agent, node, &node->orders[o]);
        if (!srm_order_retire(node, &node->orders[o])) {
            ++o;
        }
    }
    return count;
}

ucs_status_t srm_order_hold(srm_node_t *node, srm_order_t *order, int kind,
                            const srm_frame_hdr_t *hdr, const void *payload)
{
    srm_held_frame_t *held, **pos;

    if ((node->held_bytes + hdr->length) > SRM_ORDER_HELD_LIMIT) {
        return UCS_ERR_NO_RESOURCE;
    }
    held = malloc(sizeof(*held) + hdr->length);
    if (held == NULL) {
        return UCS_ERR_NO_RESOURCE;
    }
    held->hdr  = *hdr;
    held->kind = kind;
    memcpy(held->payload, payload, hdr->length);
    for (pos = &order->held;
         (*pos != NULL) && srm_seq_before((*pos)->hdr.seq, hdr->seq);
         pos = &(*pos)->next) {
    }
    held->next        = *pos;
    *pos              = held;
    node->held_bytes += hdr->length;
    node->reordered++;
    return UCS_OK;
}

void srm_order_advance(srm_agent_t *agent, srm_node_t *node,
                       srm_order_t *order, int kind,
                       const srm_frame_hdr_t *hdr)
{
    order->expected++;
    srm_channel_count_rx(agent, node, kind, hdr);
    srm_order_release(agent, node, order);
    srm_order_retire(node, order);
}

void srm_order_port_gone(srm_node_t *node, uint32_t src_port, uint32_t final)
{
    srm_order_t *order;

    if (final == 0) {
        return; /* it sent us nothing */
    }
    /* Its frames on the other channel may still be on their way: then the
     * entry comes first, and goes with the last of them. */
    order = srm_order_get(node, src_port);
    if (order == NULL) {
        return;
    }
    if (srm_seq_before(final, order->expected)) {
        node->bad_frames++; /* it ended before frames it sent */
        final = order->expected;
    }
    order->gone  = 1;
    order->final = final;
    srm_order_retire(node, order);
}

void srm_order_free_all(srm_node_t *node)
{
    unsigned o;

    for (o = 0; o < node->num_orders; ++o) {
        srm_order_drop_held(node, &node->orders[o]);
    }
    free(node->orders);
    node->orders     = NULL;
    node->num_orders = 0;
    node->cap_orders = 0;
    node->held_bytes = 0;
}
