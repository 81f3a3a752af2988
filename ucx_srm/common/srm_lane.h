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
 *
 * A process stopped while it holds the lock (a debugger, SIGSTOP) must not
 * stop the agent: after SRM_LANE_HOLD_LIMIT_MS the agent retires the lane
 * without the lock. It seals the log (a frame appended after that never
 * counts), takes the frames logged before the seal, shuts the socket down
 * so that nobody writes to it any more, and makes a new lane when asked.
 * A client that finds its append sealed takes its frame back and sends it
 * through the ring.
 */
#ifndef SRM_LANE_H
#define SRM_LANE_H

#include "srm_atomic.h"
#include "srm_frame.h"

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#define SRM_LANE_MAGIC    0x53524d4cu /* "SRML" */
#define SRM_LANE_VERSION  2u
#define SRM_LANE_LOG_SIZE (64u * 1024u)
#define SRM_LANE_SEALED   0x80000000u /* in log_len: the lane is retired */
#define SRM_LANE_HOLD_LIMIT_MS 100    /* longer, and the holder is stuck */

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
    uint32_t        log_len;      /* bytes of frames in log; grown with
                                     a compare-and-swap, so a seal wins or
                                     loses against an append as a whole */
    uint32_t        unwritten;    /* of the log's last frame, bytes that
                                     did not reach the socket */
    uint32_t        retired;      /* the agent gave the lane up: map the
                                     new one it hands out */
    uint8_t         pad[64];
    uint8_t         log[SRM_LANE_LOG_SIZE];
} srm_lane_t;

/* Agent: a sealed memfd holding a fresh, closed lane. */
int srm_lane_create(const char *name, int *fd_p, srm_lane_t **lane_p);

/* Client: maps a lane the agent passed and checks its header. */
int srm_lane_map(int fd, srm_lane_t **lane_p);

void srm_lane_unmap(srm_lane_t *lane);

/*
 * Client: takes the lock if it is free; 1 if the previous owner died
 * holding it (the lock is taken and made consistent; owner_died is set).
 * -1 if busy, or on error.
 */
int srm_lane_trylock(srm_lane_t *lane);

/* Agent: as srm_lane_trylock, waiting at most timeout_ms for the lock
 * (-1 with ETIMEDOUT after that). */
int srm_lane_lock_timed(srm_lane_t *lane, int timeout_ms);

/* Client: appends size bytes written past the log's end, unless the log
 * was sealed (0, or -1 when sealed). */
static inline int srm_lane_append(srm_lane_t *lane, uint32_t size)
{
    uint32_t len = srm_load_relaxed(&lane->log_len);

    return ((len & SRM_LANE_SEALED) ||
            !__atomic_compare_exchange_n(&lane->log_len, &len, len + size, 0,
                                         __ATOMIC_RELEASE, __ATOMIC_RELAXED)) ?
                   -1 : 0;
}

/* Agent: seals the log; returns its length before the seal. */
static inline uint32_t srm_lane_seal(srm_lane_t *lane)
{
    return __atomic_fetch_or(&lane->log_len, SRM_LANE_SEALED,
                             __ATOMIC_ACQUIRE) & ~SRM_LANE_SEALED;
}

static inline void srm_lane_unlock(srm_lane_t *lane)
{
    pthread_mutex_unlock(&lane->lock);
}

#endif
