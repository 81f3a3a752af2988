/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Single-producer single-consumer ring of frames in shared memory.
 *
 * Indices are free-running 64-bit byte counts; a record never wraps: when it
 * does not fit before the end, the producer writes a PAD record there and
 * starts again at offset 0. head and tail live in different cache lines, and
 * each side keeps a private copy of the other's index so that the common case
 * touches no shared line but its own.
 *
 * The agent is the consumer of client TX rings and the producer of client RX
 * rings, and trusts neither index the client publishes: every index and every
 * record is checked before use (SRM_RING_CORRUPT).
 */
#ifndef SRM_RING_H
#define SRM_RING_H

#include "srm_atomic.h"
#include "srm_frame.h"

#include <stdint.h>

#define SRM_CACHE_LINE 64

typedef struct srm_ring_shared {
    uint64_t head;    /* written by the producer only */
    uint8_t          pad0[SRM_CACHE_LINE - sizeof(uint64_t)];
    uint64_t tail;    /* written by the consumer only */
    uint64_t passed;  /* consumer: taken from the ring, though kept there
                         while it keeps frames (tail <= passed <= head) */
    uint8_t          pad1[SRM_CACHE_LINE - 2 * sizeof(uint64_t)];
} srm_ring_shared_t;

typedef enum {
    SRM_RING_OK = 0,
    SRM_RING_EMPTY,   /* consumer: nothing to read */
    SRM_RING_FULL,    /* producer: no room for the record now */
    SRM_RING_CORRUPT, /* the other side published an impossible index/record */
} srm_ring_status_t;

/* One side's view of a ring; not shared. */
typedef struct srm_ring {
    srm_ring_shared_t *shared;
    uint8_t           *data;
    uint64_t          size;        /* power of two */
    uint64_t          local;       /* producer: head; consumer: tail */
    uint64_t          peer_cached; /* producer: last tail; consumer: last head */
    uint64_t          pending;     /* producer: pad before the reserved record;
                                      consumer: size of the peeked record */
    int               keeping;     /* consumer: frames passed are kept; the
                                      tail moves by srm_ring_free_to only */
} srm_ring_t;

/* Attaches one side's view to an existing ring; the memory must stay mapped. */
void srm_ring_init_producer(srm_ring_t *ring, srm_ring_shared_t *shared,
                            void *data, uint64_t size);
void srm_ring_init_consumer(srm_ring_t *ring, srm_ring_shared_t *shared,
                            void *data, uint64_t size);

/* Resets the indices; only the creator does this, before anyone attaches. */
void srm_ring_shared_reset(srm_ring_shared_t *shared);

/*
 * Producer: finds room for a record of record_size bytes (see
 * srm_frame_record_size) and returns where to write it. Nothing is visible
 * to the consumer until srm_ring_commit.
 */
srm_ring_status_t srm_ring_reserve(srm_ring_t *ring, size_t record_size,
                                   srm_frame_hdr_t **hdr_p);

/* Producer: publishes the reserved record, which may have shrunk. */
static inline void srm_ring_commit(srm_ring_t *ring, size_t record_size)
{
    ring->local += ring->pending + record_size;
    ring->pending = 0;
    srm_store_release(&ring->shared->head, ring->local);
}

/*
 * Consumer: the next frame, skipping padding. The header is copied into
 * *hdr (so a producer that rewrites it afterwards cannot change what was
 * validated); *payload points into the ring and stays valid until
 * srm_ring_release. Headers are validated against max_payload.
 */
srm_ring_status_t srm_ring_peek(srm_ring_t *ring, size_t max_payload,
                                srm_frame_hdr_t *hdr, void **payload);

/* Consumer: frees the frame returned by the last successful peek (or,
 * while keeping, passes it: its space is freed with the kept ones). */
static inline void srm_ring_release(srm_ring_t *ring)
{
    ring->local  += ring->pending;
    ring->pending = 0;
    if (!ring->keeping) {
        srm_store_release(&ring->shared->tail, ring->local);
    }
    srm_store_release(&ring->shared->passed, ring->local);
}

/* Consumer: frees everything before tail (at most local), for the owner of
 * the frames kept. */
static inline void srm_ring_free_to(srm_ring_t *ring, uint64_t tail)
{
    srm_store_release(&ring->shared->tail, tail);
}

/* Consumer: whether anything was published that is not yet consumed. */
static inline int srm_ring_has_data(srm_ring_t *ring)
{
    return srm_load_acquire(&ring->shared->head) != ring->local;
}

/* Bytes published and not yet released, as seen from the shared indices. */
uint64_t srm_ring_used(const srm_ring_shared_t *shared);

#endif
