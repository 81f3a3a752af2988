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

#include <stddef.h>

typedef enum {
    SRM_SCHED_DELIVERED, /* consumed: the scheduler releases the frame */
    SRM_SCHED_BLOCKED,   /* no room downstream: try this ring later */
    SRM_SCHED_FAILED,    /* the ring's owner misbehaved: stop this round */
} srm_sched_result_t;

typedef struct srm_sched_queue {
    srm_ring_t ring;         /* consumer view of one TX ring */
    void       *owner;       /* the client */
    size_t     credit;       /* deficit counter, bytes */
    unsigned   index;        /* position in the scheduler, for removal */
    int        blocked;      /* the head frame could not be delivered */
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

void srm_sched_init(srm_sched_t *sched, size_t quantum, size_t max_payload);
void srm_sched_cleanup(srm_sched_t *sched);
int srm_sched_add(srm_sched_t *sched, srm_sched_queue_t *queue);
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
