/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * A direct lane of one remote node: how processes of this node write
 * frames to one of that node's channel sockets themselves, and read those
 * for them, so that a message between two polling processes wakes no
 * agent (instead of two). Each channel has its own lane: the small one
 * for messages up to LARGE_THRESH, the bulk one for the larger.
 *
 * The agent owns the channel; the lane is the part of its sending state
 * that clients share, in a memfd the agent creates per remote node and
 * channel and passes with the channel's socket. Under the lock a client may write one
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
 *
 * The lane carries the receiving side too, under the same lock: a client
 * may read whole frames from the socket itself while the agent says the
 * socket is readable (rx_open: its own input from that connection is
 * empty, at a frame boundary, and no frame from that node waits in a
 * backlog), each either an AM for the client's own port that is next in
 * the channel's numbering and in its source port's order (the agent
 * publishes both, rx_expected and rx_ports), or an ACK the agent does not
 * wait for (ack_wanted; it applies it when it books it: acks are
 * cumulative). The client records the frames' headers in rx_log before
 * it lets go of the lock, so the agent can count them, acknowledge them,
 * and release what it held behind them.
 * The seal covers rx_taken as it covers log_len: a client that read
 * frames but finds its record sealed drops them, and their sender resends
 * them on the next connection.
 *
 * While clients poll the socket (rx_pollers, and rx_polls moving), the
 * agent stops listening to it, so that a frame a client takes wakes
 * nobody. A client that finds a frame it may not take kicks the agent,
 * which reads it; one that goes to sleep leaves the pollers and kicks it
 * too. A poller that stops without leaving (killed, stopped) is noticed
 * when rx_polls stands still for SRM_LANE_POLL_STALE_MS.
 */
#ifndef SRM_LANE_SHARED_H
#define SRM_LANE_SHARED_H

#include "srm_atomic.h"
#include "srm_frame.h"

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#define SRM_LANE_MAGIC    0x53524d4cu /* "SRML" */
#define SRM_LANE_VERSION  4u
#define SRM_LANE_LOG_SIZE (64u * 1024u)   /* of a small channel's lane */
#define SRM_LANE_BULK_LOG_SIZE (1024u * 1024u) /* of a bulk channel's lane:
                                             its frames are up to 128 KB */
#define SRM_LANE_BULK_WINDOWS  1u   /* of the channel's depth a bulk lane's
                                       writers may have unacknowledged:
                                       with 4 the simulated network lost
                                       packets under two such streams, and
                                       the retransmission watch moved
                                       healthy channels
                                       (docs/performance.md) */
#define SRM_LANE_SEALED   0x80000000u /* in log_len: the lane is retired */
#define SRM_LANE_HOLD_LIMIT_MS 100    /* longer, and the holder is stuck */
#define SRM_LANE_RX_LOG   512u         /* headers of frames clients took */
#define SRM_LANE_RX_PORTS 64u          /* source ports whose order clients
                                          may check; the others' frames are
                                          the agent's to read */
#define SRM_LANE_RX_KICK_FRAMES 256u   /* taken since the agent last looked:
                                          it books and acknowledges them */
#define SRM_LANE_RX_KICK_BYTES  (32u * 1024u)
#define SRM_LANE_POLL_STALE_MS  5      /* pollers idle this long are gone */
#define SRM_LANE_LISTEN_WINDOWS 8      /* of that length, that the agent
                                          listens after clients took less
                                          than half the frames of one */
#define SRM_LANE_DIRECT_BURST   16u    /* UCX_SRM_DIRECT=auto: sends after a
                                          receive a process writes itself;
                                          a longer stream is the agent's to
                                          coalesce */

/* The next per-port seq the agent expects from a source port. */
typedef struct srm_lane_rx_port {
    uint32_t src_port;
    uint32_t expected;
} srm_lane_rx_port_t;

typedef struct srm_lane {
    uint32_t        magic;
    uint32_t        version;
    uint32_t        log_size;     /* bytes of log; set at creation */
    uint32_t        channel;      /* SRM_CHANNEL_SMALL or _BULK */
    pthread_mutex_t lock;         /* robust, process-shared */
    uint32_t        open;         /* clients may write (agent, under lock) */
    uint32_t        generation;   /* of the socket clients hold; bumped
                                     when the channel's link changes */
    uint32_t        next_chan_seq;
    uint32_t        max_payload;  /* largest payload a client may write */
    uint32_t        bulk_above;   /* payloads larger go on the bulk lane */
    uint32_t        kick;         /* a client wants the agent to absorb */
    uint32_t        agent_waits;  /* for the lock: clients let it go first */
    uint32_t        owner_died;   /* a writer died holding the lock: the
                                     socket may hold part of a frame */
    uint32_t        log_len;      /* bytes of frames in log; grown with
                                     a compare-and-swap, so a seal wins or
                                     loses against an append as a whole */
    uint32_t        unwritten;    /* of the log's last frame, bytes that
                                     did not reach the socket */
    uint32_t        retired;      /* the agent gave the lane up: map the
                                     new one it hands out */
    uint32_t        room;         /* log bytes writers may add now: the
                                     channel's window less what it has
                                     unacknowledged */
    uint32_t        absorbs;      /* moves whenever the agent took the log:
                                     a port whose last direct frame went to
                                     the bulk lane writes a small one only
                                     after that, as the agent takes the
                                     small log first */
    /* Receiving (under the lock too). */
    uint32_t        rx_open;      /* clients may read the socket */
    uint32_t        rx_expected;  /* chan_seq of the channel's next frame */
    uint32_t        rx_num_ports;
    uint32_t        rx_taken;     /* headers in rx_log; grown with a
                                     compare-and-swap, sealed as log_len */
    uint32_t        rx_taken_bytes; /* their payload bytes */
    uint32_t        rx_pollers;   /* clients that poll the socket */
    uint32_t        rx_polls;     /* moves while they do */
    uint32_t        rx_agent_deaf; /* the agent does not listen to the
                                      socket: kick it to have it read */
    uint32_t        rx_changes;   /* moves whenever a frame is taken or
                                     the agent lets go: a client that
                                     left a frame to others looks again */
    uint32_t        ack_wanted;   /* the agent waits for the peer's acks
                                     (its channel fills): it listens, and
                                     clients leave acks to it */
    uint32_t        rx_kick_bytes; /* taken since the agent last looked:
                                      it books and acknowledges them */
    srm_lane_rx_port_t rx_ports[SRM_LANE_RX_PORTS];
    srm_frame_hdr_t rx_log[SRM_LANE_RX_LOG];
    uint8_t         pad[64];
    uint8_t         log[];        /* log_size bytes */
} srm_lane_t;

/* Agent: a sealed memfd holding a fresh, closed lane with a log of
 * log_size bytes. */
int srm_lane_create(const char *name, uint32_t log_size, int *fd_p,
                    srm_lane_t **lane_p);

/* Client: maps a lane the agent passed and checks its header; its log's
 * size in *log_size_p, as the memfd's size confirms it (the field is
 * shared, so neither side reads it again). */
int srm_lane_map(int fd, srm_lane_t **lane_p, uint32_t *log_size_p);

void srm_lane_unmap(srm_lane_t *lane, uint32_t log_size);

/*
 * Client: takes the lock if it is free; 1 if the previous owner died
 * holding it (the lock is taken and made consistent; owner_died is set).
 * -1 if busy, or on error.
 */
int srm_lane_trylock(srm_lane_t *lane);

/* Agent: as srm_lane_trylock, waiting at most timeout_ms for the lock
 * (-1 with ETIMEDOUT after that). Clients see agent_waits meanwhile and
 * do not take it. */
int srm_lane_lock_timed(srm_lane_t *lane, int timeout_ms);

/* Client: grows a sealable length by n, unless it was sealed (0, or -1
 * when sealed). */
static inline int srm_lane_grow(uint32_t *len_p, uint32_t n)
{
    uint32_t len = srm_load_relaxed(len_p);

    return ((len & SRM_LANE_SEALED) ||
            !__atomic_compare_exchange_n(len_p, &len, len + n, 0,
                                         __ATOMIC_RELEASE, __ATOMIC_RELAXED)) ?
                   -1 : 0;
}

/* Client: appends size bytes written past the log's end, unless the log
 * was sealed (0, or -1 when sealed). */
static inline int srm_lane_append(srm_lane_t *lane, uint32_t size)
{
    return srm_lane_grow(&lane->log_len, size);
}

/* Client: records the n frame headers written from rx_log[rx_taken] on,
 * unless the lane was sealed (0, or -1 when sealed). */
static inline int srm_lane_record_taken(srm_lane_t *lane, uint32_t n)
{
    return srm_lane_grow(&lane->rx_taken, n);
}

/* Agent: seals a length; returns it as it was before the seal. */
static inline uint32_t srm_lane_seal_len(uint32_t *len_p)
{
    return __atomic_fetch_or(len_p, SRM_LANE_SEALED, __ATOMIC_ACQUIRE) &
           ~SRM_LANE_SEALED;
}

/* Agent: seals the log; returns its length before the seal. */
static inline uint32_t srm_lane_seal(srm_lane_t *lane)
{
    return srm_lane_seal_len(&lane->log_len);
}

static inline void srm_lane_unlock(srm_lane_t *lane)
{
    pthread_mutex_unlock(&lane->lock);
}

#endif
