/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * `srmctl status --json`: what srm_status.c prints, as one JSON object
 * whose schema (docs/status-json.md) scripts and monitoring can rely on:
 * fields are only ever added to a schema version.
 */
#include "srm_agent.h"
#include "srm_json.h"

#include <ucx_srm/wire/srm_wire_tcp.h>

#include <ucs/sys/string.h> /* UCS_MEMUNITS_INF */

#include <stdio.h>
#include <string.h>
#include <unistd.h>

#define SRM_STATUS_JSON_SCHEMA 1

/* "settings": {"UCX_SRM_POLL": "auto", ...}, every setting it runs with. */
static void srm_status_json_settings(srm_agent_t *agent, srm_json_t *json)
{
    char settings[4096], *line, *next, *value;

    srm_status_format_settings(agent, settings, sizeof(settings));
    srm_json_object(json, "settings");
    for (line = settings; *line != '\0'; line = next) {
        next = strchr(line, '\n');
        if (next == NULL) {
            break;
        }
        *next++ = '\0';
        value = strchr(line, '=');
        if (value != NULL) {
            *value++ = '\0';
            srm_json_string(json, line, value);
        }
    }
    srm_json_end_object(json);
}

static void srm_status_json_agent(srm_agent_t *agent, srm_json_t *json)
{
    char id[24];

    snprintf(id, sizeof(id), "0x%016llx", (unsigned long long)agent->node_id);
    srm_json_object(json, "agent");
    srm_json_string(json, "socket", agent->socket_name);
    srm_json_string(json, "node", id);
    srm_json_int(json, "pid", (int)getpid());
    srm_json_double(json, "uptime_s", srm_agent_now() - agent->start_time);
    srm_json_end_object(json);

    srm_json_object(json, "policy");
    srm_json_string(json, "poll",
                    srm_poll_policy_names[agent->config.poll_policy]);
    srm_json_uint(json, "quantum", agent->config.quantum);
    srm_json_uint(json, "channel_depth", srm_channel_depth(agent));
    srm_json_uint(json, "port_backlog", agent->config.port_backlog);
    srm_json_end_object(json);

    srm_status_json_settings(agent, json);
    srm_cpus_json(agent, json);

    srm_json_object(json, "clients");
    srm_json_uint(json, "attached", agent->num_clients);
    srm_json_uint(json, "departing", agent->num_departing);
    srm_json_uint(json, "total", agent->stats.clients_attached);
    srm_json_uint(json, "dropped", agent->stats.clients_dropped);
    srm_json_end_object(json);

    srm_json_object(json, "counters");
    srm_json_uint(json, "frames", agent->stats.frames);
    srm_json_uint(json, "bytes", agent->stats.bytes);
    srm_json_uint(json, "bad_dest", agent->stats.bad_dest);
    srm_json_uint(json, "sleeps", agent->stats.sleeps);
    srm_json_uint(json, "wakeups", agent->stats.wakeups);
    srm_json_uint(json, "late_wakeups", agent->stats.late_wakeups);
    srm_json_end_object(json);
}

static void srm_status_json_memory(srm_agent_t *agent, srm_json_t *json)
{
    srm_json_object(json, "memory");
    srm_json_uint(json, "regions", agent->regions.count);
    srm_json_uint(json, "bytes", agent->regions.bytes);
    srm_json_uint(json, "added", agent->regions.added);
    srm_json_uint(json, "removed", agent->regions.removed);
    srm_json_uint(json, "rejected", agent->regions.rejected);
    if (agent->config.mem_limit == UCS_MEMUNITS_INF) {
        srm_json_null(json, "limit_per_user");
    } else {
        srm_json_uint(json, "limit_per_user", agent->config.mem_limit);
    }
    srm_json_end_object(json);

    srm_json_object(json, "rma");
    srm_json_string(json, "between_nodes",
                    !srm_wire_addr_is_set(&agent->wire[0]) ? "none" :
                    (agent->verbs[0] != NULL) ? "rdma" : "unsupported");
    srm_json_uint(json, "ops", agent->stats.rma_ops);
    srm_json_uint(json, "bytes", agent->stats.rma_bytes);
    srm_json_uint(json, "failed", agent->stats.rma_failed);
    srm_json_uint(json, "served", agent->stats.rma_served);
    srm_json_end_object(json);
}

/* A verbs device's shared receive queue and send pool. */
static void srm_status_json_device(const srm_wire_verbs_dev_t *dev,
                                   srm_json_t *json)
{
    const srm_wire_verbs_srq_stats_t *srq = srm_wire_verbs_dev_srq_stats(dev);
    const srm_wire_verbs_tx_stats_t *tx   = srm_wire_verbs_dev_tx_stats(dev);
    const char *why;

    srm_json_string(json, "device", srm_wire_verbs_dev_name(dev));
    srm_json_bool(json, "xrc", srm_wire_verbs_dev_xrc(dev, &why));
    srm_json_string(json, "xrc_why", why);
    if (srq != NULL) {
        srm_json_object(json, "receives");
        srm_json_uint(json, "slots", srq->slots);
        srm_json_uint(json, "slot_size", SRM_WIRE_VERBS_SLOT_SIZE);
        srm_json_uint(json, "reserve", srq->reserve);
        srm_json_uint(json, "posted", srq->posted);
        srm_json_uint(json, "held", srq->held);
        srm_json_uint(json, "refills", srq->refills);
        srm_json_uint(json, "low_water", srq->low_water);
        srm_json_uint(json, "spilled_bytes", srq->spilled_bytes);
        srm_json_end_object(json);
    }
    if (tx != NULL) {
        srm_json_object(json, "sends");
        srm_json_uint(json, "slots", tx->slots);
        srm_json_uint(json, "slot_size", SRM_WIRE_VERBS_SLOT_SIZE);
        srm_json_uint(json, "free", tx->free);
        srm_json_uint(json, "waits", tx->waits);
        srm_json_uint(json, "reclaims", tx->reclaims);
        srm_json_end_object(json);
    }
}

/* What the queue pairs send from in place (srm_status_registered). */
static void srm_status_json_registered(const srm_agent_t *agent,
                                       srm_json_t *json)
{
    srm_status_registered_t reg;

    srm_status_registered(agent, &reg);
    srm_json_object(json, "registered");
    if (reg.not_why != NULL) {
        srm_json_string(json, "not_why", reg.not_why);
    }
    srm_json_uint(json, "streams", reg.streams);
    srm_json_uint(json, "stream_bytes", reg.stream_bytes);
    srm_json_uint(json, "tx_rings", reg.tx_rings);
    srm_json_uint(json, "tx_ring_bytes", reg.tx_ring_bytes);
    srm_json_end_object(json);
}

static void srm_status_json_wire(srm_agent_t *agent, srm_json_t *json)
{
    char addr[SRM_WIRE_ADDR_STRLEN];
    unsigned i;

    if (!srm_wire_addr_is_set(&agent->wire[0])) {
        srm_json_null(json, "wire"); /* this node only */
        return;
    }
    srm_json_object(json, "wire");
    srm_json_array(json, "paths");
    for (i = 0; i < agent->num_devices; ++i) {
        srm_json_object(json, NULL);
        srm_json_string(json, "wire", srm_wire_of(agent->verbs[i])->name);
        srm_json_string(json, "address",
                        srm_wire_tcp_str(&agent->wire[i], addr, sizeof(addr)));
        srm_json_string(json, "interface", agent->wire_device[i]);
        if (agent->verbs[i] != NULL) {
            srm_status_json_device(agent->verbs[i], json);
        }
        srm_json_end_object(json);
    }
    srm_json_end_array(json);
    if (agent->verbs[0] != NULL) {
        srm_status_json_registered(agent, json);
    }
    srm_json_uint(json, "remote_nodes", agent->num_nodes);
    srm_json_uint(json, "bad_frames", agent->stats.bad_frames);
    srm_json_uint(json, "handshakes_refused", agent->stats.handshakes_refused);
    srm_json_bool(json, "failover", agent->config.failover);
    srm_json_double(json, "failover_timeout_ms",
                    agent->config.failover_timeout * 1e3);
    srm_json_double(json, "peer_timeout_s", agent->config.peer_timeout);
    srm_json_bool(json, "secret", agent->auth.len > 0);
    srm_json_end_object(json);
}

static void srm_status_json_ports(srm_agent_t *agent, srm_json_t *json)
{
    const srm_client_t *client;
    unsigned i;

    srm_json_array(json, "ports");
    for (i = 0; i < agent->num_slots; ++i) {
        client = agent->slots[i];
        if ((client == NULL) || (client->state != SRM_CLIENT_ATTACHED)) {
            continue;
        }
        srm_json_object(json, NULL);
        srm_json_uint(json, "port", client->port);
        srm_json_int(json, "pid", (int)client->pid);
        srm_json_string(json, "name", client->name);
        srm_json_uint(json, "rings", client->layout.num_tx_rings);
        srm_json_uint(json, "tx_queued", srm_client_tx_queued(client));
        srm_json_uint(json, "rx_queued", srm_ring_used(&client->ctl->rx));
        srm_json_uint(json, "backlog", client->backlog_bytes);
        srm_json_uint(json, "tx_frames", client->stats.tx_frames);
        srm_json_uint(json, "tx_bytes", client->stats.tx_bytes);
        srm_json_uint(json, "rx_frames", client->stats.rx_frames);
        srm_json_uint(json, "rx_bytes", client->stats.rx_bytes);
        srm_json_uint(json, "blocked", client->stats.blocked);
        srm_json_uint(json, "wakeups", client->stats.wakeups);
        srm_json_end_object(json);
    }
    srm_json_end_array(json);
}

size_t srm_status_format_json(srm_agent_t *agent, char *buf, size_t size)
{
    srm_json_t json;

    srm_json_init(&json, buf, size);
    srm_json_object(&json, NULL);
    srm_json_uint(&json, "schema", SRM_STATUS_JSON_SCHEMA);
    srm_status_json_agent(agent, &json);
    srm_status_json_memory(agent, &json);
    srm_status_json_wire(agent, &json);
    srm_node_format_json(agent, &json);
    srm_status_json_ports(agent, &json);
    srm_json_end_object(&json);
    if (json.truncated) {
        /* Valid JSON still, saying what happened. */
        srm_json_init(&json, buf, size);
        srm_json_object(&json, NULL);
        srm_json_uint(&json, "schema", SRM_STATUS_JSON_SCHEMA);
        srm_json_string(&json, "error", "status too large for one reply");
        srm_json_end_object(&json);
    }
    if (json.len + 1 < size) {
        buf[json.len++] = '\n';
        buf[json.len]   = '\0';
    }
    return json.len;
}
