/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The agent's registry of memory regions: memfds that clients allocated
 * through the srm md and handed over, mapped by the agent and (on the verbs
 * wire) registered in its PD. An RDMA operation may name only memory that is
 * inside a live region: one work request with a stale key or a range beyond
 * its region moves a shared queue pair to error, for every process of the
 * node. So every lookup checks owner, id, generation and bounds.
 *
 * The registry knows nothing of clients or sockets (the fuzz-free gtests use
 * it as is); srm_client.c owns regions by the port of the connection that
 * registered them and removes them when that connection goes.
 */
#ifndef SRM_REGIONS_H
#define SRM_REGIONS_H

#include <ucx_srm/common/srm_address.h>
#include <ucx_srm/wire/srm_wire_verbs.h>

#include <ucs/type/status.h>

#include <stddef.h>
#include <stdint.h>

#define SRM_MEM_MAX_REGIONS 65536u
#define SRM_MEM_MAX_LENGTH  (1ull << 40)
#define SRM_MEM_ANY_OWNER   0u /* no port is 0: lookups by key, not owner */

typedef struct srm_region {
    uint32_t        id;          /* slot + 1; 0: the slot is free */
    uint32_t        generation;  /* never 0; differs for every region */
    uint32_t        owner;       /* port of the connection that added it */
    uint32_t        token;       /* random: the packed key carries it, and
                                    an RMA that does not is refused */
    uint64_t        client_addr; /* where the owner mapped it */
    uint64_t        length;
    void            *addr;       /* where the agent mapped it */
    srm_wire_verbs_mr_t  *mr[SRM_WIRE_PATHS]; /* per path with a verbs device */
    unsigned        holds;       /* RDMA operations using it right now */
    int             dying;       /* removed; released when holds drop to 0 */
} srm_region_t;

typedef struct srm_regions {
    srm_region_t *regions;
    unsigned         num_slots;
    unsigned         count;      /* live regions */
    uint32_t         generation;
    uint64_t         bytes;      /* of the live regions */
    uint64_t         added;
    uint64_t         removed;
    uint64_t         rejected;   /* lookups and removals that found nothing */
} srm_regions_t;

void srm_regions_init(srm_regions_t *mem);
void srm_regions_cleanup(srm_regions_t *mem);

/*
 * Maps length bytes of fd (a memfd sealed against shrinking), which its
 * owner has at client_addr, and registers the mapping in every device of
 * devs that is not NULL: UCS_OK and *region_p. Otherwise errno also says
 * why, for the client's reply: UCS_ERR_INVALID_PARAM (EINVAL: range, size,
 * seals), UCS_ERR_NO_MEMORY (the mapping), UCS_ERR_NO_RESOURCE (no slot:
 * ENOSPC, registry full, or ENOMEM; or no random token),
 * UCS_ERR_IO_ERROR (the registration's error).
 */
ucs_status_t srm_regions_add(srm_regions_t *mem, uint32_t owner, int fd,
                             uint64_t client_addr, uint64_t length,
                             srm_wire_verbs_dev_t *const devs[SRM_WIRE_PATHS],
                             const srm_region_t **region_p);

/* Deregisters and unmaps owner's region id/generation (once no RDMA holds
 * it); UCS_ERR_NO_ELEM (errno ENOENT) if there is no such live region of
 * that owner. */
ucs_status_t srm_regions_remove(srm_regions_t *mem, uint32_t owner, uint32_t id,
                                uint32_t generation);

/* Removes every region of owner (its connection is gone); how many. */
unsigned srm_regions_remove_owner(srm_regions_t *mem, uint32_t owner);

/* Bytes owner has mapped: its live regions, and removed ones an RDMA
 * operation still holds. */
uint64_t srm_regions_owner_bytes(const srm_regions_t *mem, uint32_t owner);

/*
 * The live region id/generation of owner (or of anyone: SRM_MEM_ANY_OWNER)
 * if [client_addr, client_addr +
 * length) lies inside it, else NULL (counted as rejected).
 */
srm_region_t *srm_regions_find(srm_regions_t *mem, uint32_t owner, uint32_t id,
                               uint32_t generation, uint64_t client_addr,
                               uint64_t length);

/*
 * An RDMA operation in flight keeps its local region registered: removing
 * it meanwhile only hides it (a deregistered key in a posted work request
 * would fail the shared queue pair); the last release frees it.
 */
void srm_regions_hold(srm_region_t *region);
/* By id: the table may have moved since (it grows by realloc). */
void srm_regions_release_hold(srm_regions_t *mem, uint32_t id);

/* The agent address of client_addr in a region found by srm_regions_find. */
static inline void *srm_region_agent_addr(const srm_region_t *region,
                                          uint64_t client_addr)
{
    return (uint8_t*)region->addr + (client_addr - region->client_addr);
}

#endif
