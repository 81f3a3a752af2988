/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The region registry (srm_regions.h): slots, generations and bounds.
 */
#define _GNU_SOURCE
#include "srm_regions.h"

#include <ucx_srm/common/srm_log.h>
#include <ucx_srm/common/srm_rkey.h>
#include <ucx_srm/common/srm_shm.h>

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/random.h>

void srm_regions_init(srm_regions_t *mem)
{
    memset(mem, 0, sizeof(*mem));
}

static void srm_regions_release(srm_regions_t *mem, srm_region_t *region)
{
    unsigned i;

    for (i = 0; i < SRM_WIRE_PATHS; ++i) {
        srm_wire_verbs_mr_dereg(region->mr[i]);
    }
    munmap(region->addr, region->length);
    mem->count--;
    mem->bytes -= region->length;
    mem->removed++;
    memset(region, 0, sizeof(*region));
}

void srm_regions_cleanup(srm_regions_t *mem)
{
    unsigned i;

    for (i = 0; i < mem->num_slots; ++i) {
        if (mem->regions[i].id != 0) {
            srm_regions_release(mem, &mem->regions[i]);
        }
    }
    free(mem->regions);
    mem->regions   = NULL;
    mem->num_slots = 0;
}

static srm_region_t *srm_regions_free_slot(srm_regions_t *mem)
{
    srm_region_t *regions;
    unsigned i, num;

    for (i = 0; i < mem->num_slots; ++i) {
        if (mem->regions[i].id == 0) {
            mem->regions[i].id = i + 1;
            return &mem->regions[i];
        }
    }
    if (mem->num_slots >= SRM_MEM_MAX_REGIONS) {
        errno = ENOSPC;
        return NULL;
    }
    num     = (mem->num_slots == 0) ? 16 : (mem->num_slots * 2);
    num     = (num > SRM_MEM_MAX_REGIONS) ? SRM_MEM_MAX_REGIONS : num;
    regions = realloc(mem->regions, num * sizeof(*regions));
    if (regions == NULL) {
        errno = ENOMEM;
        return NULL;
    }
    memset(regions + mem->num_slots, 0,
           (num - mem->num_slots) * sizeof(*regions));
    mem->regions   = regions;
    i              = mem->num_slots;
    mem->num_slots = num;
    mem->regions[i].id = i + 1;
    return &mem->regions[i];
}

ucs_status_t srm_regions_add(srm_regions_t *mem, uint32_t owner, int fd,
                             uint64_t client_addr, uint64_t length,
                             srm_wire_verbs_dev_t *const devs[SRM_WIRE_PATHS],
                             const srm_region_t **region_p)
{
    srm_region_t *region;
    unsigned i;
    int saved;
    void *addr;

    if ((length == 0) || (length > SRM_MEM_MAX_LENGTH) ||
        (client_addr + length < client_addr) ||
        (srm_fd_check_sealed(fd, length) != 0)) {
        errno = EINVAL;
        return UCS_ERR_INVALID_PARAM;
    }

    addr = mmap(NULL, length, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (addr == MAP_FAILED) {
        return UCS_ERR_NO_MEMORY;
    }
    region = srm_regions_free_slot(mem);
    if ((region == NULL) ||
        (getrandom(&region->token, sizeof(region->token), 0) !=
         sizeof(region->token))) {
        saved = errno;
        munmap(addr, length);
        errno = saved;
        return UCS_ERR_NO_RESOURCE;
    }
    mem->generation = (mem->generation + 1 == 0) ? 1 : mem->generation + 1;
    region->generation  = mem->generation;
    region->owner       = owner;
    region->client_addr = client_addr;
    region->length      = length;
    region->addr        = addr;
    mem->count++;
    mem->bytes += length;
    mem->added++;

    for (i = 0; i < SRM_WIRE_PATHS; ++i) {
        if ((devs == NULL) || (devs[i] == NULL)) {
            continue;
        }
        region->mr[i] = srm_wire_verbs_mr_reg(devs[i], addr, length);
        if (region->mr[i] == NULL) {
            saved = errno;
            srm_warn("cannot register %llu bytes of port %u in %s: %m",
                     (unsigned long long)length, owner,
                     srm_wire_verbs_dev_name(devs[i]));
            srm_regions_release(mem, region);
            errno = saved;
            return UCS_ERR_IO_ERROR;
        }
    }
    *region_p = region;
    return UCS_OK;
}

/* Removed: released now, or by the last RDMA operation that holds it. */
static void srm_regions_retire(srm_regions_t *mem, srm_region_t *region)
{
    if (region->holds > 0) {
        region->dying = 1;
    } else {
        srm_regions_release(mem, region);
    }
}

void srm_regions_hold(srm_region_t *region)
{
    region->holds++;
}

void srm_regions_release_hold(srm_regions_t *mem, uint32_t id)
{
    srm_region_t *region;

    if ((id == 0) || (id > mem->num_slots) ||
        (mem->regions[id - 1].holds == 0)) {
        return; /* released by srm_regions_cleanup already */
    }
    region = &mem->regions[id - 1];
    if ((--region->holds == 0) && region->dying) {
        srm_regions_release(mem, region);
    }
}

static srm_region_t *srm_regions_slot(srm_regions_t *mem, uint32_t owner,
                                      uint32_t id, uint32_t generation)
{
    srm_region_t *region;

    if ((id == 0) || (id > mem->num_slots)) {
        return NULL;
    }
    region = &mem->regions[id - 1];
    if ((region->id != id) || (region->generation != generation) ||
        region->dying ||
        ((owner != SRM_MEM_ANY_OWNER) && (region->owner != owner))) {
        return NULL;
    }
    return region;
}

ucs_status_t srm_regions_remove(srm_regions_t *mem, uint32_t owner, uint32_t id,
                                uint32_t generation)
{
    srm_region_t *region = srm_regions_slot(mem, owner, id, generation);

    if (region == NULL) {
        mem->rejected++;
        errno = ENOENT;
        return UCS_ERR_NO_ELEM;
    }
    srm_regions_retire(mem, region);
    return UCS_OK;
}

uint64_t srm_regions_owner_bytes(const srm_regions_t *mem, uint32_t owner)
{
    uint64_t bytes = 0;
    unsigned i;

    for (i = 0; i < mem->num_slots; ++i) {
        /* A dying region is still mapped: it counts until released. */
        if ((mem->regions[i].id != 0) && (mem->regions[i].owner == owner)) {
            bytes += mem->regions[i].length;
        }
    }
    return bytes;
}

unsigned srm_regions_remove_owner(srm_regions_t *mem, uint32_t owner)
{
    unsigned i, count = 0;

    for (i = 0; (i < mem->num_slots) && (mem->count > 0); ++i) {
        if ((mem->regions[i].id != 0) && (mem->regions[i].owner == owner) &&
            !mem->regions[i].dying) {
            srm_regions_retire(mem, &mem->regions[i]);
            ++count;
        }
    }
    return count;
}

srm_region_t *srm_regions_find(srm_regions_t *mem, uint32_t owner, uint32_t id,
                               uint32_t generation, uint64_t client_addr,
                               uint64_t length)
{
    srm_region_t *region = srm_regions_slot(mem, owner, id, generation);

    if ((region == NULL) ||
        !srm_range_inside(region->client_addr, region->length, client_addr,
                          length)) {
        mem->rejected++;
        return NULL;
    }
    return region;
}
