/* SPDX-License-Identifier: BSD-3-Clause */
#include "srm_rkey.h"

#include <string.h>

/* FNV-1a: catches a truncated or scribbled key, not an attacker (a forged
 * key still only names memory its agent validates). */
static uint32_t srm_rkey_checksum(const srm_rkey_packed_t *packed)
{
    const uint8_t *p = (const uint8_t*)packed;
    uint32_t hash    = 2166136261u;
    size_t i;

    for (i = 0; i < offsetof(srm_rkey_packed_t, check); ++i) {
        hash = (hash ^ p[i]) * 16777619u;
    }
    return hash;
}

void srm_rkey_pack(const srm_rkey_t *key, void *buffer)
{
    srm_rkey_packed_t packed;
    unsigned i;

    memset(&packed, 0, sizeof(packed));
    packed.magic       = SRM_RKEY_MAGIC;
    packed.version     = SRM_RKEY_VERSION;
    packed.flags       = (uint8_t)key->flags;
    packed.node_id     = key->node_id;
    packed.client_addr = key->client_addr;
    packed.agent_addr  = key->agent_addr;
    packed.length      = key->length;
    packed.region_id   = key->region_id;
    packed.generation  = key->generation;
    packed.token       = key->token;
    for (i = 0; i < SRM_WIRE_PATHS; ++i) {
        packed.rkey[i] = key->rkey[i];
    }
    packed.check = srm_rkey_checksum(&packed);
    memcpy(buffer, &packed, sizeof(packed));
}

srm_rkey_status_t srm_rkey_unpack(const void *buffer, srm_rkey_t *key)
{
    srm_rkey_packed_t packed;
    unsigned i;

    memcpy(&packed, buffer, sizeof(packed)); /* the buffer may be unaligned */
    if (packed.magic != SRM_RKEY_MAGIC) {
        return SRM_RKEY_ERR_MAGIC;
    }
    if (packed.version != SRM_RKEY_VERSION) {
        return SRM_RKEY_ERR_VERSION;
    }
    if (packed.check != srm_rkey_checksum(&packed)) {
        return SRM_RKEY_ERR_CHECK;
    }
    if ((packed.flags & ~SRM_RKEY_FLAG_RDMA) != 0) {
        return SRM_RKEY_ERR_FLAGS;
    }
    /* A key without RDMA names no memory; one with it names a real range. */
    if ((packed.flags & SRM_RKEY_FLAG_RDMA) &&
        ((packed.length == 0) ||
         (packed.client_addr + packed.length < packed.client_addr) ||
         (packed.agent_addr + packed.length < packed.agent_addr) ||
         (packed.region_id == 0))) {
        return SRM_RKEY_ERR_RANGE;
    }

    memset(key, 0, sizeof(*key));
    key->flags       = packed.flags;
    key->node_id     = packed.node_id;
    key->client_addr = packed.client_addr;
    key->agent_addr  = packed.agent_addr;
    key->length      = packed.length;
    key->region_id   = packed.region_id;
    key->generation  = packed.generation;
    key->token       = packed.token;
    for (i = 0; i < SRM_WIRE_PATHS; ++i) {
        key->rkey[i] = packed.rkey[i];
    }
    return SRM_RKEY_OK;
}

const char *srm_rkey_status_str(srm_rkey_status_t status)
{
    switch (status) {
    case SRM_RKEY_OK:          return "ok";
    case SRM_RKEY_ERR_MAGIC:   return "not an srm key";
    case SRM_RKEY_ERR_VERSION: return "unsupported key version";
    case SRM_RKEY_ERR_CHECK:   return "corrupt key (checksum)";
    case SRM_RKEY_ERR_FLAGS:   return "unknown key flags";
    case SRM_RKEY_ERR_RANGE:   return "key names an invalid range";
    }
    return "unknown";
}
