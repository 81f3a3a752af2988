/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Frames a channel sends from its clients' TX rings where they lie
 * (docs/design.md: a ring's space is released only on the peer's ack).
 *
 * A large AM is not copied into the channel's stream. Its header is; its
 * payload keeps its place in the stream, as a *hole* that says where the
 * payload lies in the sender's TX ring. The scheduler passes the frame but
 * keeps it in the ring (srm_sched_keep) until the peer acknowledges it.
 * A write gathers the stream and its holes into one iovec; on the verbs
 * wire the queue pairs read the ring in place, through a registration of
 * it. A client that goes while it has holes gets them *filled*: the
 * payloads are copied to their places in the stream, and resends come from
 * there. Its rings stay mapped, and registered, until no hole names them:
 * a queue pair may still be reading what was posted from them.
 */
#ifndef SRM_HOLES_H
#define SRM_HOLES_H

#include "srm_mirror.h"
#include "srm_sched.h"

#include <ucx_srm/common/srm_address.h>
#include <ucx_srm/common/srm_shm.h>

#include <stdint.h>
#include <sys/uio.h>

typedef struct srm_agent srm_agent_t;
typedef struct srm_wire_verbs_mr srm_wire_verbs_mr_t;

/* A client's segment as channels send from it. */
typedef struct srm_ring_mem {
    unsigned         refs;        /* its client, and each hole in it */
    void             *base;       /* the segment, mapped */
    srm_shm_layout_t layout;
    /* A TX ring's registration per path, made when first sent from. */
    srm_wire_verbs_mr_t   *mr[SRM_SHM_MAX_TX_RINGS][SRM_WIRE_PATHS];
    uint8_t          reg_tried[SRM_SHM_MAX_TX_RINGS][SRM_WIRE_PATHS];
} srm_ring_mem_t;

typedef struct srm_hole {
    uint64_t          offset;     /* of the payload in the channel's stream */
    uint32_t          length;
    uint32_t          kept;       /* its frame's id among queue's kept */
    srm_sched_queue_t *queue;     /* NULL once filled */
    const uint8_t     *payload;   /* in the queue's ring */
    srm_ring_mem_t    *mem;
    unsigned          ring;       /* the queue's TX ring in mem */
} srm_hole_t;

/* A channel's holes, by stream offset: a circular array. */
typedef struct srm_holes {
    srm_hole_t *slots;
    unsigned   first, count, cap; /* cap: 0 or a power of two */
} srm_holes_t;

/* The segment of a client just attached (one reference: the client's).
 * NULL when out of memory. */
srm_ring_mem_t *srm_ring_mem_new(void *base, const srm_shm_layout_t *layout);

/* Drops a reference; the last one deregisters and unmaps. */
void srm_ring_mem_put(srm_ring_mem_t *mem);

/* Bytes of TX rings registered with devices, and how many rings. */
size_t srm_ring_mem_registered(const srm_ring_mem_t *mem, unsigned *rings);

/* Room for one more hole, or UCS_ERR_NO_MEMORY. */
ucs_status_t srm_holes_reserve(srm_holes_t *holes);

/* Appends a hole (after srm_holes_reserve) and takes a reference on its
 * mem. */
void srm_holes_push(srm_holes_t *holes, const srm_hole_t *hole);

/* The frames before head were acknowledged: their holes go, and so does
 * their frames' place in the clients' rings. */
void srm_holes_release(srm_agent_t *agent, srm_holes_t *holes,
                       uint64_t head);

/* Every hole goes (the channel's frames are dropped, or it is cleaned up). */
void srm_holes_drop(srm_agent_t *agent, srm_holes_t *holes);

/* The client that owns queues (queue->owner) goes: its holes are filled
 * from its rings into the stream `out`. Returns how many. */
unsigned srm_holes_fill(srm_holes_t *holes, const srm_mirror_t *out,
                        const void *owner);

/*
 * The bytes [from, to) of the stream `out` (registered as out_mr with the
 * device of `path`, or NULL) as at most max iovecs, with the registration
 * of each in mrs. Returns how many; *end is where they stop (to, unless
 * max ran out first).
 */
int srm_holes_gather(srm_agent_t *agent, const srm_holes_t *holes,
                     const srm_mirror_t *out, const srm_wire_verbs_mr_t *out_mr,
                     int path, uint64_t from, uint64_t to, struct iovec *iov,
                     const srm_wire_verbs_mr_t **mrs, int max, uint64_t *end);

#endif
