/* SPDX-License-Identifier: BSD-3-Clause */
#include "srm_sched.h"

#include <stdlib.h>
#include <string.h>

ucs_status_t srm_sched_keep(srm_sched_queue_t *queue, uint32_t *id)
{
    unsigned slot;

    if (queue->kept_count == SRM_SCHED_KEPT_MAX) {
        return UCS_ERR_EXCEEDS_LIMIT;
    }
    *id                      = queue->kept_first + queue->kept_count++;
    slot                     = *id % SRM_SCHED_KEPT_MAX;
    queue->kept_at[slot]     = queue->ring.local; /* the frame being peeked */
    queue->kept_freed[slot]  = 0;
    queue->ring.keeping      = 1;
    return UCS_OK;
}

int srm_sched_free_kept(srm_sched_queue_t *queue, uint32_t id)
{
    uint32_t first = queue->kept_first;

    queue->kept_freed[id % SRM_SCHED_KEPT_MAX] = 1;
    while ((queue->kept_count > 0) &&
           queue->kept_freed[queue->kept_first % SRM_SCHED_KEPT_MAX]) {
        ++queue->kept_first;
        --queue->kept_count;
    }
    if (queue->kept_first == first) {
        return 0;
    }
    if (queue->kept_count > 0) {
        srm_ring_free_to(&queue->ring,
                         queue->kept_at[queue->kept_first %
                                        SRM_SCHED_KEPT_MAX]);
    } else {
        queue->ring.keeping = 0;
        srm_ring_free_to(&queue->ring, queue->ring.local);
    }
    return 1;
}

void srm_sched_init(srm_sched_t *sched, size_t quantum, size_t max_payload)
{
    memset(sched, 0, sizeof(*sched));
    sched->quantum     = quantum;
    sched->max_payload = max_payload;
}

void srm_sched_cleanup(srm_sched_t *sched)
{
    free(sched->queues);
    sched->queues = NULL;
    sched->count  = 0;
}

ucs_status_t srm_sched_add(srm_sched_t *sched, srm_sched_queue_t *queue)
{
    srm_sched_queue_t **queues;
    unsigned capacity;

    if (sched->count == sched->capacity) {
        capacity = (sched->capacity == 0) ? 16 : (sched->capacity * 2);
        queues   = realloc(sched->queues, capacity * sizeof(*queues));
        if (queues == NULL) {
            return UCS_ERR_NO_MEMORY;
        }
        sched->queues   = queues;
        sched->capacity = capacity;
    }
    queue->credit               = 0;
    queue->blocked              = 0;
    queue->index                = sched->count;
    sched->queues[sched->count] = queue;
    ++sched->count;
    return UCS_OK;
}

void srm_sched_remove(srm_sched_t *sched, srm_sched_queue_t *queue)
{
    unsigned i;

    /* Keep the visiting order of the others: shift, do not swap. */
    for (i = queue->index + 1; i < sched->count; ++i) {
        sched->queues[i - 1]        = sched->queues[i];
        sched->queues[i - 1]->index = i - 1;
    }
    --sched->count;
    if (sched->cursor > queue->index) {
        --sched->cursor;
    }
    if (sched->cursor >= sched->count) {
        sched->cursor = 0;
    }
}

/* Sends from one queue while its credit lasts. */
static srm_sched_result_t
srm_sched_visit(srm_sched_t *sched, srm_sched_queue_t *queue,
                srm_sched_deliver_cb_t deliver, void *arg,
                unsigned *delivered)
{
    srm_sched_result_t result;
    srm_ring_status_t status;
    srm_frame_hdr_t hdr;
    void *payload;
    size_t cost;

    queue->credit += sched->quantum;
    for (;;) {
        status = srm_ring_peek(&queue->ring, sched->max_payload, &hdr,
                               &payload);
        if (status == SRM_RING_EMPTY) {
            queue->credit  = 0; /* DRR: an idle queue keeps no credit */
            queue->blocked = 0;
            return SRM_SCHED_DELIVERED;
        } else if (status != SRM_RING_OK) {
            return SRM_SCHED_FAILED;
        }

        cost = sizeof(hdr) + hdr.length;
        if (cost > queue->credit) {
            ++sched->saving;
            return SRM_SCHED_DELIVERED;
        }

        result = deliver(arg, queue, &hdr, payload);
        if (result == SRM_SCHED_BLOCKED) {
            queue->blocked = 1;
            /* Blocked credit must not pile up into a later burst. */
            if (queue->credit > cost) {
                queue->credit = cost;
            }
            return result;
        } else if (result == SRM_SCHED_FAILED) {
            return result;
        }

        srm_ring_release(&queue->ring);
        queue->blocked  = 0;
        queue->credit  -= cost;
        ++(*delivered);
    }
}

unsigned srm_sched_round(srm_sched_t *sched, srm_sched_deliver_cb_t deliver,
                         void *arg, srm_sched_queue_t **failed)
{
    unsigned delivered = 0;
    unsigned visits;
    srm_sched_queue_t *queue;

    *failed       = NULL;
    sched->saving = 0;
    for (visits = 0; visits < sched->count; ++visits) {
        if (sched->cursor >= sched->count) {
            sched->cursor = 0;
        }
        queue = sched->queues[sched->cursor++];
        if (srm_sched_visit(sched, queue, deliver, arg, &delivered) ==
            SRM_SCHED_FAILED) {
            *failed = queue;
            break;
        }
    }
    return delivered;
}
