/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The packed remote key of memory the srm md allocated (uct_md_mkey_pack):
 * which agent registered it, where, and under which keys. It travels inside
 * UCP's packed rkeys to other processes, so it has a fixed size and a
 * version, and unpacking checks every field: garbage from the network is an
 * error, never a crash or an RDMA with a made-up key.
 */
#ifndef SRM_RKEY_H
#define SRM_RKEY_H

#include "srm_address.h"

#include <stddef.h>
#include <stdint.h>

#define SRM_RKEY_MAGIC   0x4b4d5253u /* "SRMK" */
#define SRM_RKEY_VERSION 2u

/* The memory is registered in its agent's PD: RDMA may target it. */
#define SRM_RKEY_FLAG_RDMA 0x1u

/* 64 bytes, in host order as the host (the cluster is homogeneous). */
typedef struct srm_rkey_packed {
    uint32_t magic;
    uint8_t  version;
    uint8_t  flags;                   /* SRM_RKEY_FLAG_* */
    uint16_t reserved;
    uint64_t node_id;                 /* the agent that registered it */
    uint64_t client_addr;             /* the owner's address of the region */
    uint64_t agent_addr;              /* the agent's mapping (RDMA address) */
    uint64_t length;
    uint32_t region_id;               /* in the agent's registry */
    uint32_t generation;
    uint32_t rkey[SRM_WIRE_PATHS];    /* per path (device); 0: none */
    uint32_t token;                   /* the agent's random secret of the
                                         region: its RMA needs it */
    uint32_t check;                   /* over everything before it */
} srm_rkey_packed_t;

#ifndef __cplusplus
_Static_assert(sizeof(srm_rkey_packed_t) == 64, "packed rkey is fixed");
#endif

/* What an unpacked key says; also what the md packs. */
typedef struct srm_rkey {
    uint64_t node_id;
    uint64_t client_addr;
    uint64_t agent_addr;
    uint64_t length;
    uint32_t region_id;
    uint32_t generation;
    uint32_t rkey[SRM_WIRE_PATHS];
    uint32_t token;
    unsigned flags;
} srm_rkey_t;

typedef enum {
    SRM_RKEY_OK = 0,
    SRM_RKEY_ERR_MAGIC,
    SRM_RKEY_ERR_VERSION,
    SRM_RKEY_ERR_CHECK,
    SRM_RKEY_ERR_FLAGS,
    SRM_RKEY_ERR_RANGE,
} srm_rkey_status_t;

void srm_rkey_pack(const srm_rkey_t *key, void *buffer);

/* Validates buffer (sizeof(srm_rkey_packed_t) bytes) and fills *key. */
srm_rkey_status_t srm_rkey_unpack(const void *buffer, srm_rkey_t *key);

const char *srm_rkey_status_str(srm_rkey_status_t status);

/*
 * Whether [addr, addr + length) lies inside [base, base + size), without
 * overflow: the one bounds check for regions, used on both sides.
 */
static inline int srm_range_inside(uint64_t base, uint64_t size,
                                   uint64_t addr, uint64_t length)
{
    return (addr >= base) && (length <= size) &&
           (addr - base <= size - length);
}

#endif
