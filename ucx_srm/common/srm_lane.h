/*
 * The direct lane of one remote node: how processes of this node write
 * small frames to that node's channel socket themselves, so that a message
 * costs one agent wakeup (the receiver's) instead of two.
 *
 * The agent owns the channel; the lane is the part of its sending state
 * that clients share, in a memfd the agent creates per remote node and
 * passes with the channel's socket. Under the lock a client may write one
 * whole frame to the socket, only while the agent says the lane is open:
 * its stream is at a frame boundary with nothing unsent, no ack half
 * written, no receiver paused. The client numbers the frame (chan_seq from
 * the lane, the per-port seq from its own segment) and copies it into the
 * lane's log before writing it, so the agent can take it into its resend
 * stream later ("absorb"): a frame written directly is resent after a
 * failover like any other. A short write closes the lane and kicks the
 * agent, which writes the rest.
 */
#ifndef SRM_LANE_H
#define SRM_LANE_H

#include "srm_atomic.h"
#include "srm_frame.h"

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#define SRM_LANE_MAGIC    0x53524d4cu /* "SRML" */
#define SRM_LANE_VERSION  1u
#define SRM_LANE_LOG_SIZE (64u * 1024u)

typedef struct srm_lane {
    uint32_t        magic;
    uint32_t        version;
    pthread_mutex_t lock;         /* robust, process-shared */
    uint32_t        open;         /* clients may write (agent, under lock) */
    uint32_t        generation;   /* of the socket clients hold; bumped
                                     when the channel's link changes */
    uint32_t        next_chan_seq;
    uint32_t        max_payload;  /* largest payload a client may write */
    uint32_t        kick;         /* a client wants the agent to absorb */
    uint32_t        owner_died;   /* a writer died holding the lock: the
                                     socket may hold part of a frame */
    uint32_t        log_len;      /* bytes of frames in log */
    uint32_t        unwritten;    /* of the log's last frame, bytes that
                                     did not reach the socket */
    uint8_t         pad[64];
    uint8_t         log[SRM_LANE_LOG_SIZE];
} srm_lane_t;

/* Agent: a sealed memfd holding a fresh, closed lane. */
int srm_lane_create(const char *name, int *fd_p, srm_lane_t **lane_p);

/* Client: maps a lane the agent passed and checks its header. */
int srm_lane_map(int fd, srm_lane_t **lane_p);

void srm_lane_unmap(srm_lane_t *lane);

/*
 * Takes the lock; 1 if the previous owner died holding it (the lock is
 * taken and made consistent; owner_died is set). -1 if busy and nowait is
 * set, or on error.
 */
int srm_lane_lock(srm_lane_t *lane, int nowait);

static inline void srm_lane_unlock(srm_lane_t *lane)
{
    pthread_mutex_unlock(&lane->lock);
}

#endif
