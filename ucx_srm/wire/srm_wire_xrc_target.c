/* SPDX-License-Identifier: BSD-3-Clause */
/* XRC targets (see srm_wire_xrc_target.h): their wire form and the table. */
#include "srm_wire_xrc_target.h"

#include <arpa/inet.h>
#include <endian.h>
#include <stdlib.h>
#include <string.h>

static srm_xrc_target_status_t
srm_xrc_target_check(unsigned op, const srm_xrc_target_t *target)
{
    if ((op != SRM_XRC_TARGET_ANNOUNCE) && (op != SRM_XRC_TARGET_WITHDRAW)) {
        return SRM_XRC_TARGET_ERR_OP;
    }
    if (target->node_id == 0) {
        return SRM_XRC_TARGET_ERR_NODE;
    }
    if (target->port == 0) {
        return SRM_XRC_TARGET_ERR_PORT;
    }
    if ((target->srqn == 0) || (target->srqn > SRM_XRC_SRQN_MAX)) {
        return SRM_XRC_TARGET_ERR_SRQN;
    }
    return SRM_XRC_TARGET_OK;
}

srm_xrc_target_status_t srm_xrc_target_encode(srm_xrc_target_op_t op,
                                              const srm_xrc_target_t *target,
                                              srm_xrc_target_wire_t *wire)
{
    srm_xrc_target_status_t status = srm_xrc_target_check(op, target);

    if (status != SRM_XRC_TARGET_OK) {
        return status;
    }
    memset(wire, 0, sizeof(*wire));
    wire->version    = SRM_XRC_TARGET_VERSION;
    wire->length     = sizeof(*wire);
    wire->op         = (uint8_t)op;
    wire->srqn       = htonl(target->srqn);
    wire->node_id    = htobe64(target->node_id);
    wire->port       = htonl(target->port);
    wire->generation = htonl(target->generation);
    return SRM_XRC_TARGET_OK;
}

srm_xrc_target_status_t srm_xrc_target_decode(const void *buf, size_t len,
                                              srm_xrc_target_op_t *op,
                                              srm_xrc_target_t *target)
{
    static const uint8_t zero[sizeof(((srm_xrc_target_wire_t*)0)->reserved)];
    srm_xrc_target_wire_t wire;
    srm_xrc_target_t decoded;
    srm_xrc_target_status_t status;

    /* The version first: a later one may well be longer. */
    if ((len < 1) || (buf == NULL)) {
        return SRM_XRC_TARGET_ERR_LENGTH;
    }
    if (*(const uint8_t*)buf != SRM_XRC_TARGET_VERSION) {
        return SRM_XRC_TARGET_ERR_VERSION;
    }
    if (len != sizeof(wire)) {
        return SRM_XRC_TARGET_ERR_LENGTH;
    }
    memcpy(&wire, buf, sizeof(wire));
    if (wire.length != sizeof(wire)) {
        return SRM_XRC_TARGET_ERR_LENGTH;
    }
    if ((wire.flags != 0) || (memcmp(wire.reserved, zero, sizeof(zero)) != 0) ||
        ((ntohl(wire.srqn) & ~SRM_XRC_SRQN_MAX) != 0)) {
        return SRM_XRC_TARGET_ERR_RESERVED;
    }
    decoded.srqn       = ntohl(wire.srqn);
    decoded.node_id    = be64toh(wire.node_id);
    decoded.port       = ntohl(wire.port);
    decoded.generation = ntohl(wire.generation);
    status             = srm_xrc_target_check(wire.op, &decoded);
    if (status == SRM_XRC_TARGET_OK) {
        *op     = (srm_xrc_target_op_t)wire.op;
        *target = decoded;
    }
    return status;
}

const char *srm_xrc_target_status_str(srm_xrc_target_status_t status)
{
    switch (status) {
    case SRM_XRC_TARGET_OK:           return "ok";
    case SRM_XRC_TARGET_ERR_LENGTH:   return "wrong length";
    case SRM_XRC_TARGET_ERR_VERSION:  return "unsupported version";
    case SRM_XRC_TARGET_ERR_RESERVED: return "reserved bits set";
    case SRM_XRC_TARGET_ERR_OP:       return "unknown operation";
    case SRM_XRC_TARGET_ERR_NODE:     return "node id 0";
    case SRM_XRC_TARGET_ERR_PORT:     return "port 0";
    case SRM_XRC_TARGET_ERR_SRQN:     return "SRQ number 0 or above 24 bits";
    case SRM_XRC_TARGET_ERR_LAST:     break;
    }
    return "unknown XRC target error";
}

/* Generations wrap: b is later than a if less than half the space ahead. */
static int srm_xrc_later(uint32_t b, uint32_t a)
{
    return (int32_t)(b - a) > 0;
}

static unsigned srm_xrc_table_home(const srm_xrc_table_t *table,
                                   uint64_t node_id, uint32_t port)
{
    uint64_t key = (node_id ^ ((uint64_t)port << 32) ^ port) *
                   0x9e3779b97f4a7c15ull;

    return (unsigned)(key >> 32) & table->mask;
}

/* The entry of (node, port), or the free one where it would go. */
static srm_xrc_target_t *srm_xrc_table_find(const srm_xrc_table_t *table,
                                            uint64_t node_id, uint32_t port)
{
    unsigned i = srm_xrc_table_home(table, node_id, port);
    srm_xrc_target_t *entry;

    for (;; i = (i + 1) & table->mask) {
        entry = &table->entries[i];
        if ((entry->srqn == 0) ||
            ((entry->node_id == node_id) && (entry->port == port))) {
            return entry;
        }
    }
}

int srm_xrc_table_init(srm_xrc_table_t *table, unsigned capacity)
{
    unsigned size = 2;

    if (capacity > (1u << 30)) {
        table->entries = NULL;
        return -1;
    }
    /* At most half full, so that probes stay short and always end. */
    while (size < 2 * capacity) {
        size *= 2;
    }
    table->entries  = calloc(size, sizeof(*table->entries));
    table->mask     = size - 1;
    table->capacity = capacity;
    table->count    = 0;
    return (table->entries != NULL) ? 0 : -1;
}

void srm_xrc_table_cleanup(srm_xrc_table_t *table)
{
    free(table->entries);
    table->entries = NULL;
    table->count   = 0;
}

srm_xrc_table_result_t srm_xrc_table_announce(srm_xrc_table_t *table,
                                              const srm_xrc_target_t *target)
{
    srm_xrc_target_t *entry = srm_xrc_table_find(table, target->node_id,
                                                 target->port);

    if (entry->srqn != 0) {
        if (!srm_xrc_later(target->generation, entry->generation)) {
            return SRM_XRC_TABLE_STALE;
        }
        *entry = *target;
        return SRM_XRC_TABLE_REPLACED;
    }
    if (table->count == table->capacity) {
        return SRM_XRC_TABLE_FULL;
    }
    *entry = *target;
    table->count++;
    return SRM_XRC_TABLE_ADDED;
}

/*
 * Frees entry i, then moves back each later entry of the probe run that
 * would no longer be found past the gap (linear probing without tombstones).
 */
static void srm_xrc_table_free_entry(srm_xrc_table_t *table, unsigned i)
{
    unsigned j = i, home;

    table->entries[i].srqn = 0;
    table->count--;
    for (;;) {
        j = (j + 1) & table->mask;
        if (table->entries[j].srqn == 0) {
            return;
        }
        home = srm_xrc_table_home(table, table->entries[j].node_id,
                                  table->entries[j].port);
        if (((j - home) & table->mask) >= ((j - i) & table->mask)) {
            table->entries[i]      = table->entries[j];
            table->entries[j].srqn = 0;
            i                      = j;
        }
    }
}

srm_xrc_table_result_t srm_xrc_table_withdraw(srm_xrc_table_t *table,
                                              const srm_xrc_target_t *target)
{
    srm_xrc_target_t *entry = srm_xrc_table_find(table, target->node_id,
                                                 target->port);

    if (entry->srqn == 0) {
        return SRM_XRC_TABLE_NOT_FOUND;
    }
    if (!srm_xrc_later(target->generation, entry->generation)) {
        return SRM_XRC_TABLE_STALE;
    }
    srm_xrc_table_free_entry(table, (unsigned)(entry - table->entries));
    return SRM_XRC_TABLE_REMOVED;
}

unsigned srm_xrc_table_remove_node(srm_xrc_table_t *table, uint64_t node_id)
{
    unsigned i, removed = 0;

    /* Freeing i may move a later entry into it: look at i again. No entry
     * of the node moves behind i: the only ones that move from before i
     * (a probe run wrapping past the end) were looked at already. */
    for (i = 0; i <= table->mask; ++i) {
        while ((table->entries[i].srqn != 0) &&
               (table->entries[i].node_id == node_id)) {
            srm_xrc_table_free_entry(table, i);
            ++removed;
        }
    }
    return removed;
}

const srm_xrc_target_t *srm_xrc_table_lookup(const srm_xrc_table_t *table,
                                             uint64_t node_id, uint32_t port)
{
    const srm_xrc_target_t *entry = srm_xrc_table_find(table, node_id, port);

    return (entry->srqn != 0) ? entry : NULL;
}
