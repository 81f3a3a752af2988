/* SPDX-License-Identifier: BSD-3-Clause */
/* The text srmctl status prints: the agent, then one line per port. */
#include "srm_agent.h"

#include <ucx_srm/wire/srm_wire_tcp.h>

#include <ucs/sys/string.h> /* UCS_MEMUNITS_INF */

#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

typedef struct {
    char   *buf;
    size_t size;
    size_t len;
} srm_text_t;

static void srm_text_add(srm_text_t *text, const char *fmt, ...)
        __attribute__((format(printf, 2, 3)));

static void srm_text_add(srm_text_t *text, const char *fmt, ...)
{
    va_list ap;
    int n;

    if (text->len >= text->size) {
        return;
    }
    va_start(ap, fmt);
    n = vsnprintf(text->buf + text->len, text->size - text->len, fmt, ap);
    va_end(ap);
    if (n > 0) {
        text->len += (size_t)n;
        if (text->len > text->size - 1) {
            text->len = text->size - 1;
        }
    }
}

/* "receives DEV: ..." and "sends DEV: ..." for a verbs device: its
 * shared receive queue and its pool of send buffers. */
static void
srm_status_buffers(const srm_wire_verbs_dev_t *dev, srm_text_t *text)
{
    const srm_wire_verbs_srq_stats_t *srq;
    const srm_wire_verbs_tx_stats_t *tx;

    if ((dev == NULL) || ((srq = srm_wire_verbs_dev_srq_stats(dev)) == NULL) ||
        ((tx = srm_wire_verbs_dev_tx_stats(dev)) == NULL)) {
        return;
    }
    srm_text_add(text, "receives %s: shared queue of %u x %u B (%u in "
                 "reserve), posted %u held %u refills %llu low_water %llu "
                 "spilled %llu B\n", srm_wire_verbs_dev_name(dev), srq->slots,
                 SRM_WIRE_VERBS_SLOT_SIZE, srq->reserve, srq->posted,
                 srq->held, (unsigned long long)srq->refills,
                 (unsigned long long)srq->low_water,
                 (unsigned long long)srq->spilled_bytes);
    srm_text_add(text, "sends %s: pool of %u x %u B, free %u waits %llu "
                 "reclaims %llu\n", srm_wire_verbs_dev_name(dev), tx->slots,
                 SRM_WIRE_VERBS_SLOT_SIZE, tx->free,
                 (unsigned long long)tx->waits,
                 (unsigned long long)tx->reclaims);
}

void srm_status_registered(const srm_agent_t *agent,
                           srm_status_registered_t *reg)
{
    const srm_channel_t *chan;
    const srm_client_t *client;
    unsigned i, rings;
    int kind;

    memset(reg, 0, sizeof(*reg));
    if (!agent->config.verbs_in_place || !agent->config.failover) {
        reg->not_why = !agent->config.verbs_in_place ? "VERBS_IN_PLACE=n" :
                                                       "FAILOVER=n";
        return;
    }
    for (i = 0; i < agent->num_nodes; ++i) {
        for (kind = 0; kind < SRM_CHANNEL_KINDS; ++kind) {
            chan = &agent->nodes[i]->chan[kind];
            if (chan->out_mr[0] != NULL) {
                ++reg->streams;
                reg->stream_bytes = chan->out.size;
            }
        }
    }
    for (i = 0; i < agent->num_slots; ++i) {
        client = agent->slots[i];
        if ((client != NULL) && (client->mem != NULL)) {
            reg->tx_ring_bytes += srm_ring_mem_registered(client->mem, &rings);
            reg->tx_rings      += rings;
        }
    }
}

/* "streams: ..." on the verbs wire: the channels' outgoing streams that
 * the queue pairs send from in place. */
static void srm_status_streams(const srm_agent_t *agent, srm_text_t *text)
{
    srm_status_registered_t reg;

    srm_status_registered(agent, &reg);
    if (reg.not_why != NULL) {
        srm_text_add(text, "streams: not registered (%s), sends are copied "
                     "to the send pool\n", reg.not_why);
        return;
    }
    srm_text_add(text, "streams: %u channel streams registered for sends in "
                 "place, %zu KB each (mapped twice); tx_rings: %u clients' TX "
                 "rings registered, %zu KB (sent from in place)\n",
                 reg.streams, reg.stream_bytes >> 10, reg.tx_rings,
                 reg.tx_ring_bytes >> 10);
}

/*
 * Which memory the transport can hand to RDMA: md-allocated regions (memfds
 * the agent registers in its own PD) on the verbs wire; user memory never,
 * for want of ibv_import_pd (docs/design.md, "The verbs wire").
 */
static void srm_status_memory(srm_agent_t *agent, srm_text_t *text)
{
    const char *dev = (agent->verbs[0] != NULL) ?
                      srm_wire_verbs_dev_name(agent->verbs[0]) : NULL;
    char limit[64];

    if (dev != NULL) {
        srm_text_add(text, "memory: md-allocated regions registered in the "
                     "agent PD (%u regions, %llu KB); user memory: not "
                     "registrable (%s: no ibv_import_pd used), UCP pipelines "
                     "through the rings",
                     agent->regions.count,
                     (unsigned long long)(agent->regions.bytes >> 10), dev);
    } else {
        srm_text_add(text, "memory: md-allocated regions mapped by the agent "
                     "(%u regions, %llu KB), no RDMA on the %s wire; user "
                     "memory: not registrable, UCP pipelines through the "
                     "rings", agent->regions.count,
                     (unsigned long long)(agent->regions.bytes >> 10),
                     srm_wire_addr_is_set(&agent->wire[0]) ? "tcp" : "local");
    }
    if (agent->config.mem_limit == UCS_MEMUNITS_INF) {
        snprintf(limit, sizeof(limit), "no limit");
    } else {
        snprintf(limit, sizeof(limit), "limit %llu KB per user",
                 (unsigned long long)(agent->config.mem_limit >> 10));
    }
    srm_text_add(text, " (added %llu removed %llu rejected %llu, %s)\n"
                 "rma: %s; ops %llu bytes %llu failed %llu served %llu\n",
                 (unsigned long long)agent->regions.added,
                 (unsigned long long)agent->regions.removed,
                 (unsigned long long)agent->regions.rejected, limit,
                 !srm_wire_addr_is_set(&agent->wire[0]) ?
                 "PUT/GET zcopy for every peer (no wire: all on this node)" :
                 (agent->verbs[0] != NULL) ?
                 "PUT/GET zcopy for every peer (to other nodes: their "
                 "agents check the key and RDMA READ or WRITE it)" :
                 "PUT/GET zcopy between this node's ports only (no RDMA on "
                 "tcp), not offered to UCT",
                 (unsigned long long)agent->stats.rma_ops,
                 (unsigned long long)agent->stats.rma_bytes,
                 (unsigned long long)agent->stats.rma_failed,
                 (unsigned long long)agent->stats.rma_served);
}

size_t srm_status_format_settings(srm_agent_t *agent, char *buf, size_t size)
{
    int len;

    if (agent->settings[0] != '\0') {
        len = snprintf(buf, size, "%s", agent->settings);
        return ((len < 0) || ((size_t)len >= size)) ? 0 : (size_t)len;
    }
    len = srm_config_format_settings(&agent->config, srm_agent_config_table,
                                     buf, size);
    return (len < 0) ? 0 : (size_t)len;
}

size_t srm_status_format_top(srm_agent_t *agent, char *buf, size_t size)
{
    srm_text_t text = {.buf = buf, .size = size, .len = 0};
    srm_client_t *client;
    unsigned i;

    srm_text_add(&text, "agent %d %.3f %u %llu %llu %llu %llu\n",
                 (int)getpid(), srm_agent_now() - agent->start_time,
                 agent->num_clients, (unsigned long long)agent->stats.frames,
                 (unsigned long long)agent->stats.bytes,
                 (unsigned long long)agent->stats.sleeps,
                 (unsigned long long)agent->stats.wakeups);
    if (srm_wire_addr_is_set(&agent->wire[0])) {
        srm_node_format_top(agent, text.buf, text.size, &text.len);
    }
    for (i = 0; i < agent->num_slots; ++i) {
        client = agent->slots[i];
        if ((client == NULL) || (client->state != SRM_CLIENT_ATTACHED)) {
            continue;
        }
        srm_text_add(&text, "port %u %d %llu %llu %zu %llu %llu %llu %llu "
                     "%llu %llu %s\n", client->port, (int)client->pid,
                     (unsigned long long)srm_client_tx_queued(client),
                     (unsigned long long)srm_ring_used(&client->ctl->rx),
                     client->backlog_bytes,
                     (unsigned long long)client->stats.tx_frames,
                     (unsigned long long)client->stats.tx_bytes,
                     (unsigned long long)client->stats.rx_frames,
                     (unsigned long long)client->stats.rx_bytes,
                     (unsigned long long)client->stats.blocked,
                     (unsigned long long)client->stats.wakeups, client->name);
    }
    return text.len;
}

/* "settings: POLL=auto SPIN_TIME=20us ...": one line, names unprefixed. */
static void srm_status_settings_line(srm_agent_t *agent, srm_text_t *text)
{
    static const char prefix[] = "UCX_" SRM_CONFIG_PREFIX;
    char settings[4096], *line, *next;

    srm_status_format_settings(agent, settings, sizeof(settings));
    srm_text_add(text, "settings:");
    for (line = settings; *line != '\0'; line = next) {
        next = strchr(line, '\n');
        if (next == NULL) {
            break;
        }
        *next++ = '\0';
        if (strncmp(line, prefix, sizeof(prefix) - 1) == 0) {
            line += sizeof(prefix) - 1;
        }
        srm_text_add(text, " %s", line);
    }
    srm_text_add(text, "\n");
}

size_t srm_status_format(srm_agent_t *agent, char *buf, size_t size)
{
    srm_text_t text = {.buf = buf, .size = size, .len = 0};
    char cpus[8192];
    srm_client_t *client;
    const char *xrc_why;
    unsigned i;
    char addr[SRM_WIRE_ADDR_STRLEN];
    int xrc;

    srm_text_add(&text,
                 "agent: socket @%s node 0x%016llx pid %d uptime %.1f s\n"
                 "policy: poll %s, quantum %zu B, channel depth %zu B, "
                 "port backlog %zu B\n"
                 "clients: attached %u departing %u total %llu dropped %llu\n"
                 "counters: frames %llu bytes %llu bad_dest %llu "
                 "sleeps %llu wakeups %llu late_wakeups %llu\n",
                 agent->socket_name, (unsigned long long)agent->node_id,
                 (int)getpid(), srm_agent_now() - agent->start_time,
                 srm_poll_policy_names[agent->config.poll_policy],
                 agent->config.quantum, srm_channel_depth(agent),
                 agent->config.port_backlog,
                 agent->num_clients, agent->num_departing,
                 (unsigned long long)agent->stats.clients_attached,
                 (unsigned long long)agent->stats.clients_dropped,
                 (unsigned long long)agent->stats.frames,
                 (unsigned long long)agent->stats.bytes,
                 (unsigned long long)agent->stats.bad_dest,
                 (unsigned long long)agent->stats.sleeps,
                 (unsigned long long)agent->stats.wakeups,
                 (unsigned long long)agent->stats.late_wakeups);

    srm_cpus_describe(agent, cpus, sizeof(cpus));
    srm_text_add(&text, "cpus: %s\n", cpus);
    srm_status_settings_line(agent, &text);
    srm_status_memory(agent, &text);

    if (srm_wire_addr_is_set(&agent->wire[0])) {
        for (i = 0; i < agent->num_devices; ++i) {
            srm_text_add(&text, "%s%s %s on %s", (i == 0) ? "wire: " : " and ",
                         (agent->verbs[i] != NULL) ? "verbs" : "tcp",
                         srm_wire_tcp_str(&agent->wire[i], addr, sizeof(addr)),
                         agent->wire_device[i]);
            if (agent->verbs[i] != NULL) {
                xrc = srm_wire_verbs_dev_xrc(agent->verbs[i], &xrc_why);
                /* Until the channels send on XRC, say that they do not. */
                srm_text_add(&text, ", xrc: %s (%s%s)", xrc ? "yes" : "no",
                             xrc_why, xrc ? "; frames still on RC" : "");
            }
        }
        srm_text_add(&text, ", %u remote nodes, bad_frames %llu, "
                     "handshakes_refused %llu, failover "
                     "%s (timeout %.0f ms, peer timeout %.1f s), secret %s\n",
                     agent->num_nodes,
                     (unsigned long long)agent->stats.bad_frames,
                     (unsigned long long)agent->stats.handshakes_refused,
                     agent->config.failover ? "on" : "off",
                     agent->config.failover_timeout * 1e3,
                     agent->config.peer_timeout,
                     (agent->auth.len > 0) ?
                             "required (handshake only: frames after it are "
                             "not authenticated)" : "none");
        for (i = 0; i < agent->num_devices; ++i) {
            srm_status_buffers(agent->verbs[i], &text);
        }
        if (agent->verbs[0] != NULL) {
            srm_status_streams(agent, &text);
        }
        srm_node_format(agent, text.buf, text.size, &text.len);
    } else {
        srm_text_add(&text, "wire: none (this node only)\n");
    }

    srm_text_add(&text, "%-10s %-7s %-24s %5s %9s %9s %9s %10s %12s %10s "
                 "%12s %8s %8s\n", "PORT", "PID", "NAME", "RINGS", "TX_QUEUED",
                 "RX_QUEUED", "BACKLOG", "TX_FRAMES", "TX_BYTES", "RX_FRAMES",
                 "RX_BYTES", "BLOCKED", "WAKEUPS");
    for (i = 0; i < agent->num_slots; ++i) {
        client = agent->slots[i];
        if ((client == NULL) || (client->state != SRM_CLIENT_ATTACHED)) {
            continue;
        }
        srm_text_add(&text, "%-10u %-7d %-24.24s %5u %9llu %9llu %9zu %10llu "
                     "%12llu %10llu %12llu %8llu %8llu\n",
                     client->port, (int)client->pid, client->name,
                     client->layout.num_tx_rings,
                     (unsigned long long)srm_client_tx_queued(client),
                     (unsigned long long)srm_ring_used(&client->ctl->rx),
                     client->backlog_bytes,
                     (unsigned long long)client->stats.tx_frames,
                     (unsigned long long)client->stats.tx_bytes,
                     (unsigned long long)client->stats.rx_frames,
                     (unsigned long long)client->stats.rx_bytes,
                     (unsigned long long)client->stats.blocked,
                     (unsigned long long)client->stats.wakeups);
    }
    return text.len;
}
