/* SPDX-License-Identifier: BSD-3-Clause */
#include "srm_ring.h"

#include <string.h>

/* The first 8 bytes of a header: enough to recognise PAD at the ring's end. */
#define SRM_RING_PAD_PREFIX 8

static void srm_ring_init_view(srm_ring_t *ring, srm_ring_shared_t *shared,
                               void *data, uint64_t size)
{
    ring->shared  = shared;
    ring->data    = data;
    ring->size    = size;
    ring->pending = 0;
    ring->keeping = 0;
}

/*
 * Each side starts from what is published (a view may attach late), with
 * its copy of the other side's index set so that the first reserve or peek
 * reloads it and validates both indices before anything is touched.
 */
void srm_ring_init_producer(srm_ring_t *ring, srm_ring_shared_t *shared,
                            void *data, uint64_t size)
{
    srm_ring_init_view(ring, shared, data, size);
    ring->local       = srm_load_acquire(&shared->head);
    ring->peer_cached = ring->local - size; /* "full": forces a reload */
}

void srm_ring_init_consumer(srm_ring_t *ring, srm_ring_shared_t *shared,
                            void *data, uint64_t size)
{
    srm_ring_init_view(ring, shared, data, size);
    ring->local       = srm_load_acquire(&shared->tail);
    ring->peer_cached = ring->local; /* "empty": forces a reload */
}

void srm_ring_shared_reset(srm_ring_shared_t *shared)
{
    memset(shared, 0, sizeof(*shared));
    srm_fence();
}

static int srm_ring_indices_valid(const srm_ring_t *ring, uint64_t head,
                                  uint64_t tail)
{
    return ((head - tail) <= ring->size) &&
           (((head | tail) & (SRM_FRAME_ALIGN - 1)) == 0);
}

srm_ring_status_t srm_ring_reserve(srm_ring_t *ring, size_t record_size,
                                   srm_frame_hdr_t **hdr_p)
{
    uint64_t head   = ring->local;
    uint64_t offset = head & (ring->size - 1);
    uint64_t to_end = ring->size - offset;
    uint64_t pad    = (record_size > to_end) ? to_end : 0;
    uint64_t need   = pad + record_size;
    srm_frame_hdr_t *pad_hdr;

    if ((ring->size - (head - ring->peer_cached)) < need) {
        ring->peer_cached = srm_load_acquire(&ring->shared->tail);
        if (!srm_ring_indices_valid(ring, head, ring->peer_cached)) {
            return SRM_RING_CORRUPT;
        }
        if ((ring->size - (head - ring->peer_cached)) < need) {
            return SRM_RING_FULL;
        }
    }

    if (pad != 0) {
        /* Only the first 8 bytes are sure to fit before the end. */
        pad_hdr = (srm_frame_hdr_t*)(ring->data + offset);
        memset(pad_hdr, 0, SRM_RING_PAD_PREFIX);
        pad_hdr->magic   = SRM_FRAME_MAGIC;
        pad_hdr->version = SRM_FRAME_VERSION;
        pad_hdr->type    = SRM_FRAME_PAD;
        offset           = 0;
    }

    ring->pending = pad;
    *hdr_p        = (srm_frame_hdr_t*)(ring->data + offset);
    return SRM_RING_OK;
}

srm_ring_status_t srm_ring_peek(srm_ring_t *ring, size_t max_payload,
                                srm_frame_hdr_t *hdr, void **payload)
{
    uint64_t offset, to_end, avail, record_size;

    for (;;) {
        if (ring->local == ring->peer_cached) {
            ring->peer_cached = srm_load_acquire(&ring->shared->head);
            if (!srm_ring_indices_valid(ring, ring->peer_cached,
                                        ring->local)) {
                return SRM_RING_CORRUPT;
            }
            if (ring->local == ring->peer_cached) {
                return SRM_RING_EMPTY;
            }
        }

        offset = ring->local & (ring->size - 1);
        to_end = ring->size - offset;
        avail  = ring->peer_cached - ring->local;

        memcpy(hdr, ring->data + offset, SRM_RING_PAD_PREFIX);
        if ((hdr->magic == SRM_FRAME_MAGIC) && (hdr->type == SRM_FRAME_PAD)) {
            if (avail < to_end) {
                return SRM_RING_CORRUPT;
            }
            ring->pending = to_end;
            srm_ring_release(ring);
            continue;
        }

        if ((to_end < sizeof(*hdr)) || (avail < sizeof(*hdr))) {
            return SRM_RING_CORRUPT;
        }
        memcpy(hdr, ring->data + offset, sizeof(*hdr));
        if ((srm_frame_validate(hdr, max_payload) != SRM_FRAME_OK) ||
            (hdr->type == SRM_FRAME_PAD)) {
            return SRM_RING_CORRUPT;
        }

        record_size = srm_frame_record_size(hdr->length);
        if ((record_size > to_end) || (record_size > avail)) {
            return SRM_RING_CORRUPT;
        }

        ring->pending = record_size;
        *payload      = ring->data + offset + sizeof(*hdr);
        return SRM_RING_OK;
    }
}

uint64_t srm_ring_used(const srm_ring_shared_t *shared)
{
    return srm_load_acquire(&shared->head) - srm_load_acquire(&shared->tail);
}
