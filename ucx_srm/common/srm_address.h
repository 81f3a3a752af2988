/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * What a UCX worker address carries for srm. The device address names the
 * node (its agent); the iface address names one port on it.
 * UCP limits: device address <= 31 bytes, iface address <= 63 bytes.
 */
#ifndef SRM_ADDRESS_H
#define SRM_ADDRESS_H

#include <stdint.h>

/* Paths between two agents: the active and the standby connection. */
#define SRM_WIRE_PATHS 2

/* Where an agent listens on one path's interface (0.0.0.0:0 = none). */
typedef struct __attribute__((packed)) srm_wire_addr {
    uint32_t ipv4;     /* network order */
    uint16_t port;     /* network order */
} srm_wire_addr_t;

typedef struct __attribute__((packed)) srm_device_addr {
    uint64_t        node_id;  /* random per agent instance */
    srm_wire_addr_t wire[SRM_WIRE_PATHS]; /* [1] zero: one interface */
    uint16_t        flags;
} srm_device_addr_t;

typedef struct __attribute__((packed)) srm_iface_addr {
    uint32_t port;
    uint32_t key;
} srm_iface_addr_t;

#ifndef __cplusplus
_Static_assert(sizeof(srm_device_addr_t) <= 31, "UCP device address limit");
_Static_assert(sizeof(srm_iface_addr_t) <= 63, "UCP iface address limit");
#endif

#endif
