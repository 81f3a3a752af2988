/* SPDX-License-Identifier: BSD-3-Clause */
#include "srm_agent.h"

#include <ucx_srm/common/srm_log.h>

#include <stdlib.h>
#include <string.h>

srm_ring_mem_t *srm_ring_mem_new(void *base, const srm_shm_layout_t *layout)
{
    srm_ring_mem_t *mem = calloc(1, sizeof(*mem));

    if (mem != NULL) {
        mem->refs   = 1;
        mem->base   = base;
        mem->layout = *layout;
    }
    return mem;
}

void srm_ring_mem_put(srm_ring_mem_t *mem)
{
    unsigned ring;

    if ((mem == NULL) || (--mem->refs > 0)) {
        return;
    }
    for (ring = 0; ring < SRM_SHM_MAX_TX_RINGS; ++ring) {
        srm_link_dereg_paths(mem->mr[ring]);
    }
    srm_shm_unmap(&mem->layout, mem->base);
    free(mem);
}

size_t srm_ring_mem_registered(const srm_ring_mem_t *mem, unsigned *rings)
{
    unsigned ring, count = 0;

    for (ring = 0; ring < SRM_SHM_MAX_TX_RINGS; ++ring) {
        count += (mem->mr[ring][0] != NULL);
        count += (mem->mr[ring][1] != NULL) &&
                 (mem->mr[ring][1] != mem->mr[ring][0]);
    }
    *rings = count;
    return count * mem->layout.tx_ring_size;
}

/* The registration of a TX ring with the device of path, made on first
 * use; shared by both paths when they have one device. */
static const srm_wire_verbs_mr_t *srm_ring_mem_mr(srm_agent_t *agent,
                                                  srm_ring_mem_t *mem,
                                                  unsigned ring, int path)
{
    srm_wire_verbs_dev_t *dev = srm_link_path_verbs(agent, path);
    int other            = 1 - path;

    if (mem->reg_tried[ring][path]) {
        return mem->mr[ring][path];
    }
    mem->reg_tried[ring][path] = 1;
    if ((dev == NULL) || !agent->config.verbs_in_place) {
        return NULL;
    } else if (mem->reg_tried[ring][other] &&
               (srm_link_path_verbs(agent, other) == dev)) {
        mem->mr[ring][path] = mem->mr[ring][other];
    } else {
        mem->mr[ring][path] = srm_wire_verbs_mr_reg_send(
                dev, (uint8_t*)mem->base + mem->layout.tx_offset[ring],
                mem->layout.tx_ring_size);
        if (mem->mr[ring][path] == NULL) {
            srm_warn("%s: cannot register a TX ring of %zu KB (%m): frames "
                     "from it are copied to the send pool",
                     srm_wire_verbs_dev_name(dev),
                     (size_t)(mem->layout.tx_ring_size >> 10));
        }
    }
    return mem->mr[ring][path];
}

static srm_hole_t *srm_holes_at(const srm_holes_t *holes, unsigned i)
{
    return &holes->slots[(holes->first + i) & (holes->cap - 1)];
}

ucs_status_t srm_holes_reserve(srm_holes_t *holes)
{
    srm_hole_t *slots;
    unsigned cap, i;

    if (holes->count < holes->cap) {
        return UCS_OK;
    }
    cap   = (holes->cap == 0) ? 64 : (2 * holes->cap);
    slots = malloc(cap * sizeof(*slots));
    if (slots == NULL) {
        return UCS_ERR_NO_MEMORY;
    }
    for (i = 0; i < holes->count; ++i) {
        slots[i] = *srm_holes_at(holes, i);
    }
    free(holes->slots);
    holes->slots = slots;
    holes->first = 0;
    holes->cap   = cap;
    return UCS_OK;
}

void srm_holes_push(srm_holes_t *holes, const srm_hole_t *hole)
{
    *srm_holes_at(holes, holes->count++) = *hole;
    hole->mem->refs++;
}

/* The hole goes: its frame's place in the ring is freed, if it has one. */
static void srm_hole_forget(srm_agent_t *agent, srm_hole_t *hole)
{
    srm_client_t *client;

    if (hole->queue != NULL) {
        client = hole->queue->owner;
        if (srm_sched_free_kept(hole->queue, hole->kept)) {
            srm_deliver_mark_tx_room(agent, client);
        }
    }
    srm_ring_mem_put(hole->mem);
}

void srm_holes_release(srm_agent_t *agent, srm_holes_t *holes, uint64_t head)
{
    srm_hole_t *hole;

    while (holes->count > 0) {
        hole = srm_holes_at(holes, 0);
        if (hole->offset + hole->length > head) {
            break;
        }
        srm_hole_forget(agent, hole);
        holes->first = (holes->first + 1) & (holes->cap - 1);
        --holes->count;
    }
}

void srm_holes_drop(srm_agent_t *agent, srm_holes_t *holes)
{
    while (holes->count > 0) {
        srm_hole_forget(agent, srm_holes_at(holes, --holes->count));
    }
    free(holes->slots);
    memset(holes, 0, sizeof(*holes));
}

unsigned srm_holes_fill(srm_holes_t *holes, const srm_mirror_t *out,
                        const void *owner)
{
    unsigned i, filled = 0;
    srm_hole_t *hole;

    for (i = 0; i < holes->count; ++i) {
        hole = srm_holes_at(holes, i);
        if ((hole->queue != NULL) && (hole->queue->owner == owner)) {
            memcpy(srm_mirror_at(out, hole->offset), hole->payload,
                   hole->length);
            hole->queue   = NULL;
            hole->payload = NULL;
            ++filled;
        }
    }
    return filled;
}

static int srm_holes_add_iov(struct iovec *iov, const srm_wire_verbs_mr_t **mrs,
                             int n, void *base, size_t len,
                             const srm_wire_verbs_mr_t *mr)
{
    iov[n].iov_base = base;
    iov[n].iov_len  = len;
    mrs[n]          = mr;
    return n + 1;
}

int srm_holes_gather(srm_agent_t *agent, const srm_holes_t *holes,
                     const srm_mirror_t *out, const srm_wire_verbs_mr_t *out_mr,
                     int path, uint64_t from, uint64_t to, struct iovec *iov,
                     const srm_wire_verbs_mr_t **mrs, int max, uint64_t *end)
{
    uint64_t pos = from, hole_end;
    srm_hole_t *hole;
    unsigned i;
    int n = 0;

    for (i = 0; (i < holes->count) && (pos < to) && (n < max); ++i) {
        hole     = srm_holes_at(holes, i);
        hole_end = hole->offset + hole->length;
        if ((hole->queue == NULL) || (hole_end <= pos)) {
            continue; /* filled: its bytes are the stream's */
        } else if (hole->offset >= to) {
            break;
        }
        if (hole->offset > pos) {
            n   = srm_holes_add_iov(iov, mrs, n, srm_mirror_at(out, pos),
                                    hole->offset - pos, out_mr);
            pos = hole->offset;
            if (n == max) {
                break;
            }
        }
        hole_end = (hole_end < to) ? hole_end : to;
        n        = srm_holes_add_iov(iov, mrs, n,
                                     (uint8_t*)hole->payload +
                                             (pos - hole->offset),
                                     hole_end - pos,
                                     srm_ring_mem_mr(agent, hole->mem,
                                                     hole->ring, path));
        pos      = hole_end;
    }
    if ((pos < to) && (n < max)) {
        n   = srm_holes_add_iov(iov, mrs, n, srm_mirror_at(out, pos), to - pos,
                                out_mr);
        pos = to;
    }
    *end = pos;
    return n;
}
