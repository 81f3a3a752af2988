/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Remote nodes: created when a client first names one (or its agent first
 * calls), kept connected on every path, and watched:
 *
 *   Init -> Normal        every kind has a ready link
 *   Normal -> Restoring   a kind lost all its links; reconnecting
 *   Restoring -> Normal   a link is back (unacknowledged frames resent)
 *   Init | Restoring -> Invalid
 *                         no way back within PEER_TIMEOUT, nothing listens on
 *                         any of its paths, or its agent said BYE
 *   Invalid -> Init       never reached, and a client names it at another
 *                         address or its agent calls (srm_node_revive)
 *
 * A path that refuses while another does not only waits for its retries.
 * Addresses a client names are tried first; the peer's own, from its
 * handshake, replace them.
 *
 * An invalid node's frames are dropped and every client that named it is
 * told through its node table, so its endpoints fail instead of hanging.
 */
#define _GNU_SOURCE
#include "srm_agent.h"
#include "srm_json.h"

#include <ucx_srm/common/srm_lane_shared.h>
#include <ucx_srm/common/srm_log.h>
#include <ucx_srm/wire/srm_wire_tcp.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SRM_NODE_TICK_ACK 0.0005 /* timer period while an ack is owed */

static const char *srm_node_state_names[] = {
    [SRM_NODE_INIT]      = "init",
    [SRM_NODE_NORMAL]    = "normal",
    [SRM_NODE_RESTORING] = "restoring",
    [SRM_NODE_INVALID]   = "invalid",
};

static const char *srm_channel_kind_names[] = {"small", "bulk"};

const char *srm_node_kind_name(int kind)
{
    return srm_channel_kind_names[kind];
}

srm_node_t *srm_node_find(srm_agent_t *agent, uint64_t node_id)
{
    unsigned i;

    for (i = 0; i < agent->num_nodes; ++i) {
        if (agent->nodes[i]->node_id == node_id) {
            return agent->nodes[i];
        }
    }
    return NULL;
}

static void srm_node_set_state(srm_node_t *node, srm_node_state_t state,
                               double now)
{
    node->state       = state;
    node->state_since = now;
}

srm_node_t *srm_node_create(srm_agent_t *agent, uint64_t node_id,
                            const srm_wire_addr_t wire[SRM_WIRE_PATHS])
{
    srm_node_t **nodes, *node;
    char addr[SRM_WIRE_ADDR_STRLEN];
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
    node->node_id = node_id;
    memcpy(node->wire, wire, sizeof(node->wire));
    node->index   = agent->num_nodes;
    for (kind = 0; kind < SRM_CHANNEL_KINDS; ++kind) {
        srm_channel_init(agent, &node->chan[kind]);
        node->lanes[kind].fd = -1;
    }
    srm_node_set_state(node, SRM_NODE_INIT, srm_agent_now());
    node->down_since = node->state_since;
    node->dirty      = 1;
    agent->nodes[agent->num_nodes++] = node;
    srm_info("node 0x%016llx at %s is node %u", (unsigned long long)node_id,
             srm_wire_tcp_str(&wire[0], addr, sizeof(addr)), node->index);
    return node;
}

/* Tells a client that named the node (entry idx) what became of it. */
static void srm_node_tell_client(srm_agent_t *agent, srm_client_t *client,
                                 uint32_t idx, const srm_node_t *node)
{
    uint16_t state = (node->state != SRM_NODE_INVALID) ? SRM_SHM_NODE_OK :
                     (node->why_invalid != NULL)       ? SRM_SHM_NODE_FAILED :
                                                         SRM_SHM_NODE_GONE;

    srm_store_relaxed(&client->ctl->nodes[idx].state, state);
    srm_shm_flag_raise(&client->ctl->nodes_changed);
    srm_deliver_mark_notify(agent, client);
}

/* Tells every client that named the node. */
static void srm_node_tell_clients(srm_agent_t *agent, const srm_node_t *node)
{
    srm_client_t *client;
    unsigned i, idx;

    for (i = 0; i < agent->num_slots; ++i) {
        client = agent->slots[i];
        if ((client == NULL) || (client->state != SRM_CLIENT_ATTACHED)) {
            continue;
        }
        for (idx = 1; idx < SRM_SHM_MAX_NODES; ++idx) {
            if (client->node_map[idx] == node->index + 1) {
                srm_node_tell_client(agent, client, idx, node);
            }
        }
    }
}

static int srm_node_same_wire(const srm_wire_addr_t a[SRM_WIRE_PATHS],
                              const srm_wire_addr_t b[SRM_WIRE_PATHS])
{
    return memcmp(a, b, SRM_WIRE_PATHS * sizeof(*a)) == 0;
}

/* Every port's count of the frames it sent the node starts at 0 again. */
static void srm_node_reset_port_counts(srm_agent_t *agent, srm_node_t *node)
{
    srm_client_t *client;
    unsigned i, idx;

    for (i = 0; i < agent->num_slots; ++i) {
        client = agent->slots[i];
        if (client == NULL) {
            continue;
        }
        for (idx = 1; idx < SRM_SHM_MAX_NODES; ++idx) {
            if (client->node_map[idx] != node->index + 1) {
                continue;
            }
            client->node_seq[idx] = 0;
            if (client->node_seq_shared[idx]) {
                srm_store_relaxed(&client->ctl->node_seq[idx], 0u);
            }
        }
    }
}

int srm_node_revive(srm_agent_t *agent, srm_node_t *node,
                    const srm_wire_addr_t wire[SRM_WIRE_PATHS],
                    const char *how)
{
    char addr[SRM_WIRE_ADDR_STRLEN];
    int kind, path;

    if ((node->state != SRM_NODE_INVALID) || node->ever_ready ||
        (node->why_invalid == NULL)) {
        return 0;
    }
    for (kind = 0; kind < SRM_CHANNEL_KINDS; ++kind) {
        for (path = 0; path < SRM_WIRE_PATHS; ++path) {
            if (node->chan[kind].links[path] != NULL) {
                return 0; /* not yet closed: not yet over */
            }
        }
    }
    /* Its channels start afresh, and so do the counts of the frames each
     * port sent it: the peer never took a frame of them, and their queues
     * went with the invalidation. The lane's count follows at leave. */
    srm_lane_enter(agent, node);
    for (kind = 0; kind < SRM_CHANNEL_KINDS; ++kind) {
        srm_channel_init(agent, &node->chan[kind]);
    }
    srm_node_reset_port_counts(agent, node);
    if (srm_wire_addr_is_set(&wire[0])) {
        memcpy(node->wire, wire, sizeof(node->wire));
    }
    srm_node_set_state(node, SRM_NODE_INIT, srm_agent_now());
    node->down_since  = node->state_since;
    node->why_invalid = NULL;
    node->refused     = 0;
    node->dirty       = 1;
    srm_lane_leave(agent, node);
    srm_info("node %u (0x%016llx): %s, at %s: tried again", node->index,
             (unsigned long long)node->node_id, how,
             srm_wire_tcp_str(&node->wire[0], addr, sizeof(addr)));
    srm_node_tell_clients(agent, node); /* new endpoints may connect */
    return 1;
}

/* A path's bit in node->refused: with one interface, both paths go to its
 * one address and share bit 0. */
static unsigned srm_node_path_bit(const srm_node_t *node, int path)
{
    return srm_wire_addr_is_set(&node->wire[1]) ? (1u << path) : 1u;
}

int srm_node_path_refused(srm_node_t *node, int path)
{
    unsigned paths = srm_node_path_bit(node, 0) | srm_node_path_bit(node, 1);

    node->refused |= srm_node_path_bit(node, path);
    return (node->refused & paths) == paths;
}

void srm_node_path_ready(srm_node_t *node, int path,
                         const srm_wire_addr_t wire[SRM_WIRE_PATHS])
{
    node->ever_ready = 1; /* frames may have gone: no fresh start */
    node->refused   &= ~srm_node_path_bit(node, path);
    if ((wire != NULL) && srm_wire_addr_is_set(&wire[0])) {
        memcpy(node->wire, wire, sizeof(node->wire));
    }
}

/* The agent node a client means by its node table entry idx. */
srm_node_t *srm_node_resolve(srm_agent_t *agent, srm_client_t *client,
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
    if (!entry.valid || !srm_wire_addrs_are_valid(entry.wire) ||
        (entry.node_id == agent->node_id) ||
        !srm_wire_addr_is_set(&agent->wire[0])) {
        return NULL;
    }
    node = srm_node_find(agent, entry.node_id);
    if (node == NULL) {
        node = srm_node_create(agent, entry.node_id, entry.wire);
        if (node == NULL) {
            return NULL;
        }
    } else if ((node->state == SRM_NODE_INVALID) &&
               !srm_node_same_wire(node->wire, entry.wire)) {
        /* One process's wrong address must not cut off the others. */
        srm_node_revive(agent, node, entry.wire,
                        "named at another address");
    }
    client->node_map[idx] = (uint16_t)(node->index + 1);
    if (node->state == SRM_NODE_INVALID) {
        srm_node_tell_client(agent, client, idx, node);
    }
    return node;
}

static uint64_t srm_node_count_frames(srm_channel_t *chan)
{
    uint64_t frames = 0, offset;
    srm_frame_hdr_t hdr;

    for (offset = chan->head; offset < chan->tail;
         offset += sizeof(hdr) + hdr.length) {
        memcpy(&hdr, srm_mirror_at(&chan->out, offset), sizeof(hdr));
        frames += (hdr.type == SRM_FRAME_AM);
    }
    return frames;
}

/*
 * failed: unreachable (eps report a peer failure at once); else its agent
 * left cleanly (eps fail when used). Idempotent.
 */
void srm_node_invalidate(srm_agent_t *agent, srm_node_t *node, int failed,
                         const char *why)
{
    uint64_t frames = 0;
    unsigned i;
    int kind;

    if (node->state == SRM_NODE_INVALID) {
        return;
    }
    srm_lane_enter(agent, node); /* what clients wrote is counted, too */
    srm_node_set_state(node, SRM_NODE_INVALID, srm_agent_now());
    node->why_invalid = failed ? why : NULL;
    for (i = 0; i < agent->num_links; ++i) {
        if ((agent->links[i] != NULL) && (agent->links[i]->node == node)) {
            srm_link_close(agent, agent->links[i], SRM_LOG_DEBUG,
                           "its node is invalid");
        }
    }
    for (kind = 0; kind < SRM_CHANNEL_KINDS; ++kind) {
        frames += srm_node_count_frames(&node->chan[kind]);
        srm_channel_drop_all(agent, &node->chan[kind]);
    }
    srm_rma_node_lost(agent, node);
    node->dropped   += frames;
    /* Nothing comes from it or goes to it again: an invalid node keeps no
     * memory but its counters (agents restart with new node ids). */
    srm_order_free_all(node);
    free(node->paused_ports);
    node->paused_ports = NULL;
    node->num_paused   = 0;
    srm_lane_leave(agent, node); /* closed for good */

    srm_log(failed ? SRM_LOG_WARN : SRM_LOG_INFO,
            "node %u (0x%016llx) is invalid: %s; %llu queued messages "
            "dropped, its endpoints %s", node->index,
            (unsigned long long)node->node_id, why,
            (unsigned long long)frames,
            failed ? "report a peer failure" : "fail when used");
    srm_node_tell_clients(agent, node);
}

/*
 * Whether every kind has a ready link, or needs none: without failover a
 * kind connects only when it has frames to send, and idle is no fault.
 */
static int srm_node_connected(const srm_agent_t *agent,
                              const srm_node_t *node)
{
    const srm_link_t *link;
    int kind, path, ready;

    for (kind = 0; kind < SRM_CHANNEL_KINDS; ++kind) {
        ready = !agent->config.failover &&
                (srm_channel_queued(&node->chan[kind]) == 0);
        for (path = 0; path < SRM_WIRE_PATHS; ++path) {
            link   = node->chan[kind].links[path];
            ready |= (link != NULL) && (link->state == SRM_LINK_READY);
        }
        if (!ready) {
            return 0;
        }
    }
    return 1;
}

static void srm_node_update_state(srm_agent_t *agent, srm_node_t *node,
                                  double now)
{
    if (srm_node_connected(agent, node)) {
        if (node->state == SRM_NODE_RESTORING) {
            srm_info("node %u restored after %.0f ms", node->index,
                     (now - node->state_since) * 1e3);
        }
        if (node->state != SRM_NODE_NORMAL) {
            srm_node_set_state(node, SRM_NODE_NORMAL, now);
        }
        node->down_since = 0;
        return;
    }
    if (node->state == SRM_NODE_NORMAL) {
        srm_node_set_state(node, SRM_NODE_RESTORING, now);
        node->down_since = now;
        srm_info("node %u: restoring its channels", node->index);
    }
    if ((now - node->down_since) > agent->config.peer_timeout) {
        srm_node_invalidate(agent, node, 1,
                            (node->state == SRM_NODE_INIT) ?
                                    "never reachable within PEER_TIMEOUT" :
                                    "unreachable for PEER_TIMEOUT");
    }
}

/*
 * With failover every path of every kind is kept connected (the standby is
 * ready before it is needed); without, a kind connects its first path when
 * it has frames to send.
 */
static void srm_node_connect_paths(srm_agent_t *agent, srm_node_t *node)
{
    srm_channel_t *chan;
    int kind, path;

    for (kind = 0; kind < SRM_CHANNEL_KINDS; ++kind) {
        chan = &node->chan[kind];
        if (agent->config.failover) {
            for (path = 0; path < SRM_WIRE_PATHS; ++path) {
                srm_link_connect(agent, node, kind, path);
            }
        } else if (srm_channel_queued(chan) > 0) {
            srm_link_connect(agent, node, kind, 0);
        }
        if (node->state == SRM_NODE_INVALID) {
            return; /* a connect found nothing listening */
        }
    }
}

static void srm_node_timers(srm_agent_t *agent, double now)
{
    srm_node_t *node;
    unsigned i;
    int kind;

    srm_link_timers(agent, now);
    for (i = 0; i < agent->num_nodes; ++i) {
        node = agent->nodes[i];
        if (node->state == SRM_NODE_INVALID) {
            continue;
        }
        srm_node_connect_paths(agent, node); /* e.g. a lost standby */
        if (node->state == SRM_NODE_INVALID) {
            continue;
        }
        srm_node_update_state(agent, node, now);
        for (kind = 0; kind < SRM_CHANNEL_KINDS; ++kind) {
            if (srm_channel_ack_owed(&node->chan[kind])) {
                srm_channel_flush(agent, node, kind);
            }
        }
    }
}

unsigned srm_node_progress(srm_agent_t *agent)
{
    unsigned count = srm_link_progress(agent), i;
    int kind, owed = 0;
    srm_node_t *node;
    double now;

    for (i = 0; i < agent->num_nodes; ++i) {
        node = agent->nodes[i];
        if (node->held_bytes > 0) {
            srm_lane_enter(agent, node); /* the order clients check moves */
            count += srm_order_release_all(agent, node);
            srm_lane_leave(agent, node);
        }
        if (node->dirty && (node->state != SRM_NODE_INVALID)) {
            node->dirty = 0;
            srm_node_connect_paths(agent, node); /* first use: at once */
            for (kind = 0; kind < SRM_CHANNEL_KINDS; ++kind) {
                count += srm_channel_flush(agent, node, kind);
                if (node->chan[kind].sent < node->chan[kind].tail) {
                    node->dirty = 1;
                }
            }
        }
    }
    if ((agent->num_nodes == 0) && (agent->num_links == 0)) {
        return count;
    }

    now = srm_agent_now();
    if (now < agent->next_timer) {
        return count;
    }
    srm_node_timers(agent, now);
    for (i = 0; (i < agent->num_nodes) && !owed; ++i) {
        for (kind = 0; kind < SRM_CHANNEL_KINDS; ++kind) {
            owed |= srm_channel_ack_owed(&agent->nodes[i]->chan[kind]);
        }
    }
    agent->next_timer = now + (owed ? SRM_NODE_TICK_ACK :
                                      agent->config.failover_timeout / 8);
    for (i = 0; i < agent->num_nodes; ++i) {
        node = agent->nodes[i];
        for (kind = 0; kind < SRM_CHANNEL_KINDS; ++kind) {
            if ((node->lanes[kind].link != NULL) &&
                node->lanes[kind].link->clients_poll) {
                srm_agent_timer_by(agent,
                                   now + SRM_LANE_POLL_STALE_MS * 1e-3);
            }
        }
    }
    return count;
}

void srm_node_cleanup(srm_agent_t *agent)
{
    srm_node_t *node;
    unsigned i;
    int kind;

    srm_link_say_bye(agent);
    srm_link_cleanup(agent);
    for (i = 0; i < agent->num_nodes; ++i) {
        node = agent->nodes[i];
        srm_order_free_all(node);
        for (kind = 0; kind < SRM_CHANNEL_KINDS; ++kind) {
            srm_channel_cleanup(agent, &node->chan[kind]);
        }
        free(node->paused_ports);
        srm_lane_destroy(node);
        free(node);
    }
    free(agent->nodes);
    agent->nodes     = NULL;
    agent->num_nodes = 0;
    srm_link_close_devices(agent); /* the streams' registrations are gone */
}

/* How many of the channel's links are reading a frame into a ring. */
static int srm_node_placing(const srm_channel_t *chan)
{
    int path, count = 0;

    for (path = 0; path < SRM_WIRE_PATHS; ++path) {
        count += (chan->links[path] != NULL) &&
                 (chan->links[path]->place.dst != NULL);
    }
    return count;
}

/* A turn time of the channel in whole microseconds, "-" before the first. */
static const char *srm_node_usecs(const srm_rtt_t *rtt, double seconds,
                                  char *buf, size_t size)
{
    if (rtt->samples == 0) {
        return "-";
    }
    snprintf(buf, size, "%.0f", seconds * 1e6);
    return buf;
}

/* The link's wire counters as " name value ..." (queue pairs in hex), for
 * the text line and the JSON's wire_counters; the length. */
static size_t srm_node_wire_counters(const srm_link_t *link, char *buf,
                                     size_t size)
{
    srm_wire_counter_t counters[SRM_WIRE_COUNTERS_MAX];
    unsigned i, n = link->wire->counters(&link->conn, counters);
    size_t len = 0;
    int ret;

    buf[0] = '\0';
    for (i = 0; i < n; ++i) {
        ret = snprintf(buf + len, size - len,
                       counters[i].names_object ? " %s 0x%llx" : " %s %llu",
                       counters[i].name, (unsigned long long)counters[i].value);
        if ((ret < 0) || ((size_t)ret >= size - len)) {
            break;
        }
        len += (size_t)ret;
    }
    return len;
}

void srm_node_format(srm_agent_t *agent, char *buf, size_t size,
                     size_t *len)
{
    const srm_channel_t *chan;
    const srm_link_t *link;
    char addr[SRM_WIRE_ADDR_STRLEN], paths[64], rtt[24], rtt_min[24];
    char wire[256];
    srm_node_t *node;
    unsigned i;
    int kind, n, path, used;

    for (i = 0; i < agent->num_nodes; ++i) {
        node = agent->nodes[i];
        srm_lane_catch_up(agent, node);
        for (kind = 0; kind < SRM_CHANNEL_KINDS; ++kind) {
            chan = &node->chan[kind];
            used = 0;
            for (path = 0; path < SRM_WIRE_PATHS; ++path) {
                link  = chan->links[path];
                used += snprintf(paths + used, sizeof(paths) - used,
                                 "%s%d:%s%s", (path > 0) ? "," : "", path,
                                 (link == NULL) ? "down" :
                                         srm_link_state_name(link->state),
                                 (path == chan->active) ? "*" : "");
            }
            link = chan->links[chan->active];
            n = snprintf(buf + *len, size - *len,
                         "node %-3u 0x%016llx %-21s %-5s %-10s state %-9s "
                         "paths %s "
                         "queued %llu unacked %llu rtt_us %s min_rtt_us %s "
                         "tx %llu/%llu "
                         "from_rings %llu filled %llu direct %llu "
                         "rx %llu/%llu "
                         "taken %llu "
                         "placed %llu/%llu placing %d "
                         "connects %llu failovers %llu replaced %llu "
                         "kept %llu resent %llu dups %llu held %zu reordered %llu "
                         "paused %u pauses %llu bad %llu dropped %llu "
                         "foreign %llu sources %u retired %llu "
                         "miskeyed %llu refused %u\n",
                         node->index, (unsigned long long)node->node_id,
                         srm_wire_tcp_str(&node->wire[0], addr,
                                          sizeof(addr)),
                         srm_channel_kind_names[kind],
                         (link == NULL) ? "down" :
                                          srm_link_state_name(link->state),
                         srm_node_state_names[node->state], paths,
                         (unsigned long long)(chan->tail - chan->sent),
                         (unsigned long long)(chan->sent - chan->head),
                         srm_node_usecs(&chan->rtt, chan->rtt.smoothed, rtt,
                                        sizeof(rtt)),
                         srm_node_usecs(&chan->rtt, chan->rtt.min, rtt_min,
                                        sizeof(rtt_min)),
                         (unsigned long long)chan->tx_frames,
                         (unsigned long long)chan->tx_bytes,
                         (unsigned long long)chan->ring_frames,
                         (unsigned long long)chan->ring_filled,
                         (unsigned long long)chan->direct_frames,
                         (unsigned long long)chan->rx_frames,
                         (unsigned long long)chan->rx_bytes,
                         (unsigned long long)chan->taken_frames,
                         (unsigned long long)chan->placed_frames,
                         (unsigned long long)chan->placed_bytes,
                         srm_node_placing(chan),
                         (unsigned long long)chan->connects,
                         (unsigned long long)chan->failovers,
                         (unsigned long long)chan->replaced,
                         (unsigned long long)chan->kept,
                         (unsigned long long)chan->resent,
                         (unsigned long long)chan->duplicates,
                         node->held_bytes,
                         (unsigned long long)node->reordered,
                         node->num_paused,
                         (unsigned long long)node->pauses,
                         (unsigned long long)node->bad_frames,
                         (unsigned long long)node->dropped,
                         (unsigned long long)node->lane_foreign,
                         node->num_orders,
                         (unsigned long long)node->orders_retired,
                         (unsigned long long)node->miskeyed,
                         node->sources_refused);
            if ((n < 0) || ((size_t)n >= size - *len)) {
                return;
            }
            *len += (size_t)n;
            if ((link != NULL) &&
                (srm_node_wire_counters(link, wire, sizeof(wire)) > 0)) {
                /* The wire's own counters go on the same line. */
                n = snprintf(buf + *len - 1, size - *len + 1, "%s\n", wire);
                if ((n < 0) || ((size_t)n >= size - *len + 1)) {
                    return;
                }
                *len += (size_t)n - 1;
            }
        }
    }
}

/* srmctl top's lines: "chan" and, per channel, index, node id, kind, the
 * active link's state, then counters as plain numbers (srm_status_top). */
void srm_node_format_top(srm_agent_t *agent, char *buf, size_t size,
                         size_t *len)
{
    const srm_channel_t *chan;
    const srm_link_t *link;
    srm_node_t *node;
    unsigned i;
    int kind, n;

    for (i = 0; i < agent->num_nodes; ++i) {
        node = agent->nodes[i];
        srm_lane_catch_up(agent, node);
        for (kind = 0; kind < SRM_CHANNEL_KINDS; ++kind) {
            chan = &node->chan[kind];
            link = chan->links[chan->active];
            n = snprintf(buf + *len, size - *len,
                         "chan %u 0x%016llx %s %s %llu %llu %llu %llu %llu "
                         "%llu %llu %llu %llu %u %llu %.0f\n",
                         node->index, (unsigned long long)node->node_id,
                         srm_channel_kind_names[kind],
                         (link == NULL) ? "down" :
                                          srm_link_state_name(link->state),
                         (unsigned long long)(chan->tail - chan->sent),
                         (unsigned long long)(chan->sent - chan->head),
                         (unsigned long long)chan->tx_frames,
                         (unsigned long long)chan->tx_bytes,
                         (unsigned long long)chan->rx_frames,
                         (unsigned long long)chan->rx_bytes,
                         (unsigned long long)chan->direct_frames,
                         (unsigned long long)chan->taken_frames,
                         (unsigned long long)chan->failovers,
                         node->num_paused, (unsigned long long)node->pauses,
                         chan->rtt.smoothed * 1e6);
            if ((n < 0) || ((size_t)n >= size - *len)) {
                return;
            }
            *len += (size_t)n;
        }
    }
}

/* The counters of srm_node_format's lines, by the same names. */
static void srm_node_channel_json(const srm_channel_t *chan, int kind,
                                  srm_json_t *json)
{
    const srm_link_t *link = chan->links[chan->active];
    srm_wire_counter_t counters[SRM_WIRE_COUNTERS_MAX];
    char wire[256];
    int path, n, i;

    srm_json_object(json, NULL);
    srm_json_string(json, "kind", srm_channel_kind_names[kind]);
    srm_json_string(json, "state", (link == NULL) ? "down" :
                                       srm_link_state_name(link->state));
    srm_json_array(json, "paths");
    for (path = 0; path < SRM_WIRE_PATHS; ++path) {
        srm_json_object(json, NULL);
        srm_json_int(json, "path", path);
        srm_json_string(json, "state", (chan->links[path] == NULL) ? "down" :
                        srm_link_state_name(chan->links[path]->state));
        srm_json_bool(json, "active", path == chan->active);
        srm_json_end_object(json);
    }
    srm_json_end_array(json);
    srm_json_uint(json, "queued", chan->tail - chan->sent);
    srm_json_uint(json, "unacked", chan->sent - chan->head);
    if (chan->rtt.samples == 0) {
        srm_json_null(json, "rtt_us");
        srm_json_null(json, "min_rtt_us");
    } else {
        srm_json_double(json, "rtt_us", chan->rtt.smoothed * 1e6);
        srm_json_double(json, "min_rtt_us", chan->rtt.min * 1e6);
    }
    srm_json_uint(json, "tx_frames", chan->tx_frames);
    srm_json_uint(json, "tx_bytes", chan->tx_bytes);
    srm_json_uint(json, "from_rings", chan->ring_frames);
    srm_json_uint(json, "filled", chan->ring_filled);
    srm_json_uint(json, "direct", chan->direct_frames);
    srm_json_uint(json, "rx_frames", chan->rx_frames);
    srm_json_uint(json, "rx_bytes", chan->rx_bytes);
    srm_json_uint(json, "taken", chan->taken_frames);
    srm_json_uint(json, "placed_frames", chan->placed_frames);
    srm_json_uint(json, "placed_bytes", chan->placed_bytes);
    srm_json_int(json, "placing", srm_node_placing(chan));
    srm_json_uint(json, "connects", chan->connects);
    srm_json_uint(json, "failovers", chan->failovers);
    srm_json_uint(json, "replaced", chan->replaced);
    srm_json_uint(json, "kept", chan->kept);
    srm_json_uint(json, "resent", chan->resent);
    srm_json_uint(json, "dups", chan->duplicates);
    if (link != NULL) {
        srm_json_string(json, "wire", link->wire->name);
        /* The wire's own counters: as the text line has them, and each. */
        if (srm_node_wire_counters(link, wire, sizeof(wire)) > 0) {
            srm_json_string(json, "wire_counters", wire + 1);
        }
        n = (int)link->wire->counters(&link->conn, counters);
        if (n > 0) {
            srm_json_object(json, "wire_stats");
            for (i = 0; i < n; ++i) {
                srm_json_uint(json, counters[i].name, counters[i].value);
            }
            srm_json_end_object(json);
        }
    }
    srm_json_end_object(json);
}

void srm_node_format_json(srm_agent_t *agent, srm_json_t *json)
{
    srm_node_t *node;
    char addr[SRM_WIRE_ADDR_STRLEN];
    unsigned i;
    int kind;

    srm_json_array(json, "nodes");
    for (i = 0; i < agent->num_nodes; ++i) {
        node = agent->nodes[i];
        srm_lane_catch_up(agent, node);
        srm_json_object(json, NULL);
        srm_json_uint(json, "index", node->index);
        snprintf(addr, sizeof(addr), "0x%016llx",
                 (unsigned long long)node->node_id);
        srm_json_string(json, "id", addr);
        srm_json_string(json, "address",
                        srm_wire_tcp_str(&node->wire[0], addr,
                                         sizeof(addr)));
        srm_json_string(json, "state", srm_node_state_names[node->state]);
        srm_json_uint(json, "held", node->held_bytes);
        srm_json_uint(json, "reordered", node->reordered);
        srm_json_uint(json, "paused", node->num_paused);
        srm_json_uint(json, "pauses", node->pauses);
        srm_json_uint(json, "bad", node->bad_frames);
        srm_json_uint(json, "dropped", node->dropped);
        srm_json_uint(json, "foreign", node->lane_foreign);
        srm_json_uint(json, "sources", node->num_orders);
        srm_json_uint(json, "retired", node->orders_retired);
        srm_json_uint(json, "miskeyed", node->miskeyed);
        srm_json_uint(json, "refused", node->sources_refused);
        srm_json_array(json, "channels");
        for (kind = 0; kind < SRM_CHANNEL_KINDS; ++kind) {
            srm_node_channel_json(&node->chan[kind], kind, json);
        }
        srm_json_end_array(json);
        srm_json_end_object(json);
    }
    srm_json_end_array(json);
}
