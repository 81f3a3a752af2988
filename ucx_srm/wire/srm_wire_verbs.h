/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The verbs wire: RC queue pairs between agents, owned by the agent.
 *
 * A queue pair here carries exactly what a TCP connection carries on the
 * tcp wire: the channel's byte stream of frames. Each SEND moves the next
 * piece of the stream (at most one 8 KB scheduling unit), RC delivers the
 * pieces in order, and the receiver appends them to the link's input as a
 * socket read would. So framing, acks, order, flow control and failover stay
 * in the channel layer, the same for both wires. The handshake, and the
 * news that a peer went away, stay on the link's TCP connection.
 *
 * Built without libibverbs, every function fails with ENOSYS.
 */
#ifndef SRM_WIRE_VERBS_H
#define SRM_WIRE_VERBS_H

#include <ucx_srm/common/srm_frame.h>

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <sys/uio.h>

#define SRM_WIRE_VERBS_SLOT_SIZE  8192u /* bytes per work request: one unit */
#define SRM_WIRE_VERBS_SEND_SLOTS 32u /* 256 KB in flight: the channel depth */
#define SRM_WIRE_VERBS_RMA_SLOTS  16u /* RDMA WRITE/READ in flight per QP */

/*
 * Sends that are not inline are copied into buffers of one pool per
 * device (send_bufs), shared by its queue pairs, as receives share one
 * queue: memory that does not grow with the number of remote nodes. A
 * queue pair gets its buffers back from its own completions; when the
 * pool runs out, the queue pairs that hold buffers without a completion to
 * come (the last sends of a quiet link) get an empty signaled send, so
 * that everything comes back.
 *
 * Receives come from one shared receive queue per device, whatever the
 * number of queue pairs: recv_bufs buffers posted, and a reserve of a
 * quarter as many more posted only once the device says that fewer than
 * an eighth are left (buffers not collected yet, or taken by a queue pair
 * that never completed them, as rxe loses the one a dying queue pair was
 * filling). A queue pair keeps at most QP_HELD received buffers unread;
 * what arrives beyond that (its link not being read: the receiver waits
 * for room) is copied aside, so that one stalled link cannot starve the
 * others. The peer's channel window bounds that copy; SPILL_MAX is only a
 * guard against a peer that ignores it.
 */
#define SRM_WIRE_VERBS_MIN_RECV_BUFS 64u
#define SRM_WIRE_VERBS_MIN_SEND_BUFS 16u
#define SRM_WIRE_VERBS_QP_HELD       16u
#define SRM_WIRE_VERBS_SPILL_MAX     (16u << 20)

/* How to open a device: srm_wire_verbs_dev_open. */
typedef struct srm_wire_verbs_dev_params {
    unsigned xrc_mode;   /* srm_xrc_mode_t, with the device's capabilities */
    unsigned recv_bufs;  /* UCX_SRM_VERBS_RECV_BUFS */
    unsigned send_bufs;  /* UCX_SRM_VERBS_SEND_BUFS */
} srm_wire_verbs_dev_params_t;

typedef struct srm_wire_verbs_dev srm_wire_verbs_dev_t;
typedef struct srm_wire_verbs_qp  srm_wire_verbs_qp_t;
typedef struct srm_wire_verbs_mr  srm_wire_verbs_mr_t;

typedef struct srm_wire_verbs_stats {
    uint64_t send_wrs;      /* SEND work requests posted */
    uint64_t inline_wrs;    /* of them, with the data inline */
    uint64_t in_place_wrs;  /* of them, read by the device where the data
                               was: in registered memory, not copied */
    uint64_t signaled;      /* of them, asking for a completion */
    uint64_t doorbells;     /* ibv_post_send calls: one per batch */
    uint64_t send_bytes;
    uint64_t recv_wrs;      /* receives completed */
    uint64_t recv_bytes;
} srm_wire_verbs_stats_t;

/* The device's shared receive queue. */
typedef struct srm_wire_verbs_srq_stats {
    unsigned slots;         /* receive buffers, the reserve included */
    unsigned reserve;       /* of them, posted only once the queue ran low */
    unsigned low;           /* the device says so below this many */
    unsigned posted;        /* in the queue, as far as the agent knows */
    unsigned held;          /* received by a queue pair, not yet read */
    uint64_t refills;       /* ibv_post_srq_recv calls: one per batch */
    uint64_t low_water;     /* times the device said the queue ran low */
    uint64_t spilled_bytes; /* copied aside for links not being read */
} srm_wire_verbs_srq_stats_t;

/* The device's pool of send buffers. */
typedef struct srm_wire_verbs_tx_stats {
    unsigned slots;         /* send buffers */
    unsigned free;          /* of them, not in flight */
    uint64_t waits;         /* batches cut short for want of one */
    uint64_t reclaims;      /* empty sends posted to have buffers back */
} srm_wire_verbs_tx_stats_t;

/* Whether this build has the verbs wire. */
int srm_wire_verbs_built(void);

/* Whether a UCX_SRM_DEVICES entry names a verbs device ("mlx5_0:1",
 * "rxe0:1@eth0") rather than a network interface. */
int srm_wire_verbs_is_device_spec(const char *spec);

/*
 * Opens "NAME[:PORT][@NETDEV]": the device, one protection domain, one
 * completion channel, its shared receive queue and send pool, and with XRC
 * (the params' xrc_mode and the device's capabilities decide:
 * srm_wire_verbs_xrc.h) the node's XRC domain. netdev gets the interface
 * the handshake connections use: NETDEV if given, else the one behind the
 * port's RoCE v2 IPv4 GID. On error, -1 with the reason logged.
 */
int srm_wire_verbs_dev_open(const char *spec,
                            const srm_wire_verbs_dev_params_t *params,
                            srm_wire_verbs_dev_t **dev_p, char *netdev,
                            size_t netdev_size);
void srm_wire_verbs_dev_close(srm_wire_verbs_dev_t *dev);

/* "rxe0:1"; the file descriptor that becomes readable on completions. */
const char *srm_wire_verbs_dev_name(const srm_wire_verbs_dev_t *dev);
int srm_wire_verbs_dev_event_fd(const srm_wire_verbs_dev_t *dev);

/* The file descriptor of the device's asynchronous events, and their
 * handler (nothing to do when there are none). */
int srm_wire_verbs_dev_async_fd(const srm_wire_verbs_dev_t *dev);
void srm_wire_verbs_dev_async(srm_wire_verbs_dev_t *dev);

const srm_wire_verbs_srq_stats_t *
srm_wire_verbs_dev_srq_stats(const srm_wire_verbs_dev_t *dev);
const srm_wire_verbs_tx_stats_t *
srm_wire_verbs_dev_tx_stats(const srm_wire_verbs_dev_t *dev);

/* 1, once, after send buffers came back to a pool that had run out: the
 * links that wait for room may write again. */
int srm_wire_verbs_dev_take_room(srm_wire_verbs_dev_t *dev);

/* 1 if the device was opened with XRC, else 0; *why says why. */
int srm_wire_verbs_dev_xrc(const srm_wire_verbs_dev_t *dev, const char **why);

/* A queue pair whose completion queue fired (the event acknowledged and the
 * queue armed again), or NULL when there is none left. */
srm_wire_verbs_qp_t *srm_wire_verbs_dev_next_event(srm_wire_verbs_dev_t *dev);

/* A new RC queue pair on the device's shared receive queue; owner is
 * returned by srm_wire_verbs_qp_owner (the link's index). NULL with the reason
 * logged. Destroying it gives the buffers it holds back to the queue. */
srm_wire_verbs_qp_t *
srm_wire_verbs_qp_create(srm_wire_verbs_dev_t *dev, unsigned owner);
void srm_wire_verbs_qp_destroy(srm_wire_verbs_qp_t *qp);
unsigned srm_wire_verbs_qp_owner(const srm_wire_verbs_qp_t *qp);

void srm_wire_verbs_qp_local(const srm_wire_verbs_qp_t *qp,
                             srm_hello_qp_t *info);
/* To RTR and RTS against the peer's queue pair; -1 with errno. */
int srm_wire_verbs_qp_connect(srm_wire_verbs_qp_t *qp,
                              const srm_hello_qp_t *remote);

/*
 * Posts as much of iov as there is send room for, in units of at most
 * SRM_WIRE_VERBS_SLOT_SIZE, all in one ibv_post_send. Returns the bytes taken
 * (0: no room; a completion of this queue pair, or the pool's room coming
 * back, srm_wire_verbs_dev_take_room, will make some), or -1 with errno.
 */
ssize_t srm_wire_verbs_qp_sendv(srm_wire_verbs_qp_t *qp,
                                const struct iovec *iov, int iovcnt);

/*
 * The same, where mrs[i] (if not NULL) is a registration of the device
 * that covers iov[i]: those bytes are sent from where they are, without a
 * copy, so the caller must leave them unchanged until the peer has them.
 * Units then end where such an iovec ends.
 */
ssize_t
srm_wire_verbs_qp_sendv_mr(srm_wire_verbs_qp_t *qp, const struct iovec *iov,
                           const srm_wire_verbs_mr_t *const *mrs, int iovcnt);

/* Copies received bytes, in order, into buf; 0 if none. -1 (errno EIO) once
 * a work request failed: the queue pair is in the error state. */
ssize_t srm_wire_verbs_qp_recv(srm_wire_verbs_qp_t *qp, void *buf, size_t len);

/* The same into iov, filling each piece before the next. */
ssize_t srm_wire_verbs_qp_recvv(srm_wire_verbs_qp_t *qp,
                                const struct iovec *iov, int iovcnt);

/* Takes the completions that are there; -1 once the queue pair failed. */
int srm_wire_verbs_qp_poll(srm_wire_verbs_qp_t *qp);

/* Bytes received and not yet taken by srm_wire_verbs_qp_recv. */
size_t srm_wire_verbs_qp_pending(const srm_wire_verbs_qp_t *qp);

/* Waits (polling) until everything posted has completed, for at most
 * timeout seconds; 0 if it did. */
int srm_wire_verbs_qp_drain(srm_wire_verbs_qp_t *qp, double timeout);

/* Moves the queue pair to the error state (fault injection). */
void srm_wire_verbs_qp_force_error(srm_wire_verbs_qp_t *qp);

/* Why the queue pair failed ("" if it did not). */
const char *srm_wire_verbs_qp_error(const srm_wire_verbs_qp_t *qp);

uint32_t srm_wire_verbs_qp_num(const srm_wire_verbs_qp_t *qp);
uint32_t srm_wire_verbs_qp_remote_num(const srm_wire_verbs_qp_t *qp);
const srm_wire_verbs_stats_t *
srm_wire_verbs_qp_stats(const srm_wire_verbs_qp_t *qp);

/*
 * One-sided operations beside the byte stream, on the same queue pair, in
 * send-queue slots of their own. Both keys must name live registrations:
 * the caller checks that (srm_regions.h), or the QP fails for every user.
 * srm_wire_verbs_qp_rdma: 1 posted, 0 no slot free now, -1 (errno) failed.
 * Their completions (any poll collects them) come out of
 * srm_wire_verbs_qp_rma_next: 1 with *id and *ok, 0 when there is none. A QP
 * that fails completes what it had in flight with *ok 0, if it is polled
 * before it is destroyed; its owner must fail the rest itself.
 */
int srm_wire_verbs_qp_rdma(srm_wire_verbs_qp_t *qp, int write, void *local,
                           uint32_t lkey, uint64_t remote, uint32_t rkey,
                           uint32_t length, uint64_t id);
int srm_wire_verbs_qp_rma_next(srm_wire_verbs_qp_t *qp, uint64_t *id, int *ok);

/*
 * Registers memory the agent mapped (a client's memfd region) in the
 * device's PD for local writes and remote reads and writes. NULL with errno.
 */
srm_wire_verbs_mr_t *
srm_wire_verbs_mr_reg(srm_wire_verbs_dev_t *dev, void *addr, size_t length);
/* Memory the device only reads from, for sends in place: no remote
 * access. NULL with errno. */
srm_wire_verbs_mr_t *srm_wire_verbs_mr_reg_send(srm_wire_verbs_dev_t *dev,
                                                void *addr, size_t length);
void srm_wire_verbs_mr_dereg(srm_wire_verbs_mr_t *mr);
uint32_t srm_wire_verbs_mr_lkey(const srm_wire_verbs_mr_t *mr);
uint32_t srm_wire_verbs_mr_rkey(const srm_wire_verbs_mr_t *mr);

#endif
