/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The agent's scheduler: deficit round robin over every client's TX rings
 * (one ring per client and destination-node group), in units of QUANTUM
 * bytes (8 KB, the paper's scheduling unit). Each visit grants a ring one
 * quantum; a ring sends whole frames while its credit lasts, so a process
 * sending large messages cannot starve one sending small ones, and the
 * order of each ring is kept.
 */
#ifndef SRM_SCHED_H
#define SRM_SCHED_H

#include <ucx_srm/common/srm_ring.h>

#include <ucs/type/status.h>

#include <stddef.h>

#define SRM_SCHED_KEPT_MAX 64u /* frames a queue keeps in its ring at once */

typedef enum {
    SRM_SCHED_DELIVERED, /* consumed: the scheduler releases the frame
                            (unless it was kept: srm_sched_keep) */
    SRM_SCHED_BLOCKED,   /* no room downstream: try this ring later */
    SRM_SCHED_FAILED,    /* the ring's owner misbehaved: stop this round */
} srm_sched_result_t;

typedef struct srm_sched_queue {
    srm_ring_t ring;         /* consumer view of one TX ring */
    void       *owner;       /* the client */
    size_t     credit;       /* deficit counter, bytes */
    unsigned   index;        /* position in the scheduler, for removal */
    int        blocked;      /* the head frame could not be delivered */
    /* Frames delivered but kept in the ring until freed, oldest first:
     * the ring's tail waits at the oldest. */
    uint32_t   kept_first;   /* id of the oldest */
    unsigned   kept_count;
    uint64_t   kept_at[SRM_SCHED_KEPT_MAX];   /* ring offset of each */
    uint8_t    kept_freed[SRM_SCHED_KEPT_MAX];
} srm_sched_queue_t;

/*
 * Called for each frame in turn. hdr is a validated private copy; payload
 * points into the ring and is valid only during the call.
 */
typedef srm_sched_result_t (*srm_sched_deliver_cb_t)(
        void *arg, srm_sched_queue_t *queue, const srm_frame_hdr_t *hdr,
        const void *payload);

typedef struct srm_sched {
    srm_sched_queue_t **queues;
    unsigned          count;
    unsigned          capacity;
    unsigned          cursor;      /* next queue to visit */
    size_t            quantum;
    size_t            max_payload;
    unsigned          saving;      /* queues left waiting for more credit */
} srm_sched_t;

/*
 * From the deliver callback: the frame being delivered stays in the ring
 * (its payload is read from there later) until srm_sched_free_kept(*id).
 * UCS_ERR_EXCEEDS_LIMIT if the queue keeps SRM_SCHED_KEPT_MAX frames
 * already.
 */
ucs_status_t srm_sched_keep(srm_sched_queue_t *queue, uint32_t *id);

/* The kept frame may go. Returns 1 if the ring's tail moved (its producer
 * has more room), 0 if an older frame still holds it. */
int srm_sched_free_kept(srm_sched_queue_t *queue, uint32_t id);

/* Bytes of the ring its kept frames hold: from the oldest to the frame
 * being peeked (0 when none is kept). */
static inline uint64_t srm_sched_kept_span(const srm_sched_queue_t *queue)
{
    return (queue->kept_count == 0) ?
                   0 : (queue->ring.local -
                        queue->kept_at[queue->kept_first % SRM_SCHED_KEPT_MAX]);
}

void srm_sched_init(srm_sched_t *sched, size_t quantum, size_t max_payload);
void srm_sched_cleanup(srm_sched_t *sched);
ucs_status_t srm_sched_add(srm_sched_t *sched, srm_sched_queue_t *queue);
void srm_sched_remove(srm_sched_t *sched, srm_sched_queue_t *queue);

/*
 * One round: visits every queue once, starting where the last round
 * stopped. Returns the number of frames delivered; sched->saving then says
 * how many queues hold a frame larger than their credit so far (work for
 * the next rounds, although none was delivered). If a ring is corrupt or
 * the callback returns FAILED, the round stops and *failed is set to that
 * queue (the caller removes its owner and may call again).
 */
unsigned srm_sched_round(srm_sched_t *sched, srm_sched_deliver_cb_t deliver,
                         void *arg, srm_sched_queue_t **failed);

#endif
