/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * XRC targets: where a sending agent posts to reach one client of another
 * node. On a device with XRC each client owns an XRC SRQ; a SEND on the
 * node's XRC queue pair names that SRQ (remote_srqn) and the hardware
 * delivers into the client's own buffers, with no receiving agent between.
 *
 * The receiving agent tells every sending agent about its clients'
 * SRQs (announce when one attaches, withdraw when it leaves), and the
 * senders keep what they were told in an srm_xrc_table_t. Senders must never
 * post to a target that is gone: a SEND to an SRQ number that no longer
 * exists fails, and moves the shared queue pair of the whole node to the
 * error state. Hence the generation on every announcement, and lookups that
 * match the port exactly (its high bits are the client's generation, so a
 * reused slot never resolves to the SRQ of the client that had it before).
 *
 * Nothing calls this yet: the announcements are meant to travel as the
 * payload of a control frame on the node's small channel (numbered and
 * acknowledged like PAUSE, so in order and exactly once across failover),
 * and that frame type does not exist yet. The XRC target queue pair number
 * is per link, not per client, and belongs in HELLO when that is wired.
 */
#ifndef SRM_WIRE_XRC_TARGET_H
#define SRM_WIRE_XRC_TARGET_H

#include <stddef.h>
#include <stdint.h>

#define SRM_XRC_TARGET_VERSION 1u
#define SRM_XRC_SRQN_MAX       0xffffffu /* SRQ numbers have 24 bits */

typedef enum {
    SRM_XRC_TARGET_ANNOUNCE = 1, /* the client's SRQ takes sends from now */
    SRM_XRC_TARGET_WITHDRAW = 2, /* the client left: send nothing more */
} srm_xrc_target_op_t;

/* One client's XRC receive queue, as the sending agents know it. */
typedef struct srm_xrc_target {
    uint64_t node_id;    /* the agent the client is attached to */
    uint32_t port;       /* the client's port on that agent */
    uint32_t srqn;       /* its XRC SRQ number: the remote_srqn of sends */
    uint32_t generation; /* the announcing agent's count of target changes:
                            a later one supersedes an earlier one */
} srm_xrc_target_t;

/*
 * What travels: 32 bytes, multi-byte fields in network order, every
 * reserved bit zero (so a later version can use them and be told apart).
 */
typedef struct __attribute__((packed)) srm_xrc_target_wire {
    uint8_t  version;    /* SRM_XRC_TARGET_VERSION */
    uint8_t  length;     /* sizeof(srm_xrc_target_wire_t) */
    uint8_t  op;         /* srm_xrc_target_op_t */
    uint8_t  flags;      /* reserved */
    uint32_t srqn;       /* 24 bits, not 0 */
    uint64_t node_id;    /* not 0 */
    uint32_t port;       /* not 0 */
    uint32_t generation;
    uint8_t  reserved[8];
} srm_xrc_target_wire_t;

#ifndef __cplusplus
_Static_assert(sizeof(srm_xrc_target_wire_t) == 32,
               "an XRC target is 32 bytes on the wire");
_Static_assert(sizeof(srm_xrc_target_wire_t) % 8 == 0,
               "as a frame payload it keeps ring records aligned");
#endif

typedef enum {
    SRM_XRC_TARGET_OK = 0,
    SRM_XRC_TARGET_ERR_LENGTH,
    SRM_XRC_TARGET_ERR_VERSION,
    SRM_XRC_TARGET_ERR_RESERVED,
    SRM_XRC_TARGET_ERR_OP,
    SRM_XRC_TARGET_ERR_NODE,
    SRM_XRC_TARGET_ERR_PORT,
    SRM_XRC_TARGET_ERR_SRQN,
    SRM_XRC_TARGET_ERR_LAST
} srm_xrc_target_status_t;

/* Refuses (and leaves wire alone) what decode would refuse. */
srm_xrc_target_status_t srm_xrc_target_encode(srm_xrc_target_op_t op,
                                              const srm_xrc_target_t *target,
                                              srm_xrc_target_wire_t *wire);

/* Checks len bytes from a less trusted party (another agent). */
srm_xrc_target_status_t srm_xrc_target_decode(const void *buf, size_t len,
                                              srm_xrc_target_op_t *op,
                                              srm_xrc_target_t *target);

const char *srm_xrc_target_status_str(srm_xrc_target_status_t status);

/* The targets a sending agent knows, by (node, port); open addressing. */
typedef struct srm_xrc_table {
    srm_xrc_target_t *entries;  /* srqn 0: a free entry */
    unsigned         mask;      /* number of entries - 1 (a power of two) */
    unsigned         capacity;  /* targets it holds at most */
    unsigned         count;
} srm_xrc_table_t;

typedef enum {
    SRM_XRC_TABLE_ADDED,
    SRM_XRC_TABLE_REPLACED,  /* a later announcement for a known port */
    SRM_XRC_TABLE_REMOVED,
    SRM_XRC_TABLE_STALE,     /* not later than what the table has: ignored */
    SRM_XRC_TABLE_NOT_FOUND,
    SRM_XRC_TABLE_FULL,
} srm_xrc_table_result_t;

/* 0, or -1 without memory. */
int srm_xrc_table_init(srm_xrc_table_t *table, unsigned capacity);
void srm_xrc_table_cleanup(srm_xrc_table_t *table);

srm_xrc_table_result_t srm_xrc_table_announce(srm_xrc_table_t *table,
                                              const srm_xrc_target_t *target);
/* Removes the port's target unless the table has a later announcement. */
srm_xrc_table_result_t srm_xrc_table_withdraw(srm_xrc_table_t *table,
                                              const srm_xrc_target_t *target);
/* A node failed or left: all its targets go. Returns how many. */
unsigned srm_xrc_table_remove_node(srm_xrc_table_t *table, uint64_t node_id);

/* The live target of exactly this port, or NULL: then do not send. */
const srm_xrc_target_t *srm_xrc_table_lookup(const srm_xrc_table_t *table,
                                             uint64_t node_id, uint32_t port);

#endif
