/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * What a UCX worker address carries for srm. The device address names the
 * node (its agent); the iface address names one port on it and where that
 * node's agent listens.
 * UCP limits: device address <= 31 bytes, iface address <= 63 bytes.
 */
#ifndef SRM_ADDRESS_H
#define SRM_ADDRESS_H

#include <stdint.h>
#include <string.h>

/* Paths between two agents: the active and the standby connection. */
#define SRM_WIRE_PATHS 2

/* srm_wire_addr_t.family: the IP version, so the values read well in dumps. */
#define SRM_WIRE_ADDR_NONE 0
#define SRM_WIRE_ADDR_IPV4 4
#define SRM_WIRE_ADDR_IPV6 6

/* Longest srm_wire_tcp_str(): "[v6 address]:port". */
#define SRM_WIRE_ADDR_STRLEN 56

/* Where an agent listens on one path's interface (family NONE: nowhere). */
typedef struct __attribute__((packed)) srm_wire_addr {
    uint8_t  family;   /* SRM_WIRE_ADDR_* */
    uint8_t  ip[16];   /* network order; IPv4 in the first 4, the rest 0 */
    uint16_t port;     /* network order */
} srm_wire_addr_t;

typedef struct __attribute__((packed)) srm_device_addr {
    uint64_t node_id;  /* random per agent instance */
} srm_device_addr_t;

typedef struct __attribute__((packed)) srm_iface_addr {
    uint32_t        port;
    uint32_t        key;
    srm_wire_addr_t wire[SRM_WIRE_PATHS]; /* [1] NONE: one interface */
} srm_iface_addr_t;

#ifndef __cplusplus
_Static_assert(sizeof(srm_device_addr_t) <= 31, "UCP device address limit");
_Static_assert(sizeof(srm_iface_addr_t) <= 63, "UCP iface address limit");
#endif

static inline int srm_wire_addr_is_set(const srm_wire_addr_t *addr)
{
    return addr->family != SRM_WIRE_ADDR_NONE;
}

/* Where a node's agent listens for `path`: with one interface (path 1
 * NONE), both paths go to path 0's address. */
static inline const srm_wire_addr_t *
srm_wire_addr_of_path(const srm_wire_addr_t addr[SRM_WIRE_PATHS], int path)
{
    return srm_wire_addr_is_set(&addr[path]) ? &addr[path] : &addr[0];
}

/*
 * Whether an address that came from elsewhere (a peer's handshake, a
 * worker address, a rank's node table) is one an agent can dial as is: a
 * known family, a port, nothing in the bytes IPv4 does not use, and one
 * host's unicast address (not 0.0.0.0/8 or ::, not multicast or IPv4's
 * reserved 240/4, not IPv6 link-local, which needs an interface to mean
 * anything).
 */
static inline int srm_wire_addr_is_valid(const srm_wire_addr_t *addr)
{
    static const uint8_t zero[16] = {0};

    if (addr->port == 0) {
        return 0;
    }
    switch (addr->family) {
    case SRM_WIRE_ADDR_IPV4:
        return (memcmp(&addr->ip[4], zero, 12) == 0) && (addr->ip[0] != 0) &&
               (addr->ip[0] < 224);
    case SRM_WIRE_ADDR_IPV6:
        return (memcmp(addr->ip, zero, 16) != 0) && (addr->ip[0] != 0xff) &&
               !((addr->ip[0] == 0xfe) && ((addr->ip[1] & 0xc0) == 0x80));
    default:
        return 0;
    }
}

/* Whether a path's address list is usable: path 0 valid, path 1 valid or
 * NONE (one interface serves both paths). */
static inline int srm_wire_addrs_are_valid(
        const srm_wire_addr_t addr[SRM_WIRE_PATHS])
{
    return srm_wire_addr_is_valid(&addr[0]) &&
           (!srm_wire_addr_is_set(&addr[1]) ||
            srm_wire_addr_is_valid(&addr[1]));
}

#endif
