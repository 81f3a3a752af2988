/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Inside the verbs wire: the open device and its queue pairs, shared by
 * the device (srm_wire_verbs_dev.c), its shared receive queue (_srq.c),
 * its send pool (_tx.c), the queue pairs' streams (_qp.c), their one-sided
 * operations and memory registrations (_rma.c), and the XRC objects
 * (srm_wire_verbs_xrc.c). Only for builds with libibverbs (the Makefile
 * builds srm_wire_verbs_none.c without); nothing outside ucx_srm/wire
 * includes it.
 */
#ifndef SRM_WIRE_VERBS_DEV_H
#define SRM_WIRE_VERBS_DEV_H

#include "srm_wire_verbs.h"
#include "srm_wire_verbs_xrc.h"

#include <infiniband/verbs.h>

struct srm_wire_verbs_dev {
    char                     name[64];      /* "rxe0:1" */
    struct ibv_context       *ctx;
    struct ibv_pd            *pd;
    struct ibv_comp_channel  *channel;
    uint8_t                  port;
    uint8_t                  link_layer;
    uint8_t                  gid_index;
    uint8_t                  mtu;
    uint16_t                 lid;
    union ibv_gid            gid;
    int                      xrc;           /* 1: XRC chosen, 0: RC only */
    const char               *xrc_why;
    srm_wire_verbs_xrc_domain_t   *xrc_domain;   /* the node's, when xrc */
    /* The shared receive queue of every RC queue pair (_srq.c). */
    struct ibv_srq           *srq;
    struct ibv_mr            *srq_mr;
    uint8_t                  *srq_buf;      /* slots of SLOT_SIZE */
    uint8_t *srq_state; /* per slot: srm_wire_verbs_slot_t */
    uint32_t *srq_free; /* slots to post, a stack */
    unsigned srq_num_free;
    unsigned                 srq_target;    /* slots to keep posted */
    srm_wire_verbs_srq_stats_t    srq_stats;
    /* The pool of send buffers, and the queue pairs that draw on it. */
    struct ibv_mr            *tx_mr;
    uint8_t                  *tx_buf;       /* slots of SLOT_SIZE */
    uint32_t                 *tx_free;      /* a stack */
    srm_wire_verbs_tx_stats_t     tx_stats;      /* .free: its depth */
    int                      tx_ran_out;    /* since room last came back */
    int                      tx_room_back;
    srm_wire_verbs_qp_t           *qps;
};

/* A random 24-bit packet sequence number to start a queue pair at. */
uint32_t srm_wire_verbs_new_psn(void);

/*
 * The RTR attributes every connected queue pair of ours needs toward a
 * remote one (path MTU, destination, address vector): -1 with errno EPROTO
 * if remote is not a queue pair we could connect to.
 */
int srm_wire_verbs_dev_rtr_attr(const srm_wire_verbs_dev_t *dev,
                                const srm_hello_qp_t *remote,
                                struct ibv_qp_attr *attr);

#define SRM_WIRE_VERBS_SIGNAL_EVERY (SRM_WIRE_VERBS_SEND_SLOTS / 4)
#define SRM_WIRE_VERBS_MAX_INLINE    256u
#define SRM_WIRE_VERBS_POLL_BATCH    16
#define SRM_WIRE_VERBS_POST_BATCH    64u
#define SRM_WIRE_VERBS_FLUSH_WAIT_US 200 /* for a dying QP's receives */
/* A work request's wr_id: an RDMA op's has RMA_WR, a receive's RECV_WR
 * | its slot; a send that holds no buffer is in slot NO_SLOT. */
#define SRM_WIRE_VERBS_RMA_WR        (1ull << 63)
#define SRM_WIRE_VERBS_RECV_WR       (1ull << 62)
#define SRM_WIRE_VERBS_NO_SLOT       UINT32_MAX

/* Where a receive buffer of the shared queue is. */
typedef enum {
    SRM_WIRE_VERBS_SLOT_FREE = 0, /* with the agent, to be posted */
    SRM_WIRE_VERBS_SLOT_POSTED,   /* in the queue, or being filled */
    SRM_WIRE_VERBS_SLOT_HELD      /* received by a queue pair, unread */
} srm_wire_verbs_slot_t;


/* A queue pair's completion queue: its sends, its RDMA operations, and
 * every receive it could take from the shared queue. */
static inline unsigned srm_wire_verbs_cq_size(unsigned recv_total)
{
    return SRM_WIRE_VERBS_SEND_SLOTS + SRM_WIRE_VERBS_RMA_SLOTS + recv_total;
}


/* A received buffer waiting to be read. */
typedef struct srm_wire_verbs_rx {
    uint32_t slot;
    uint32_t len;
} srm_wire_verbs_rx_t;

/* A finished RDMA operation waiting to be collected. */
typedef struct srm_wire_verbs_rma_done {
    uint64_t id;
    int      ok;
} srm_wire_verbs_rma_done_t;

struct srm_wire_verbs_qp {
    srm_wire_verbs_dev_t   *dev;
    unsigned          owner;
    struct ibv_cq     *cq;
    struct ibv_qp     *qp;
    srm_wire_verbs_qp_t    *next;         /* in dev->qps */
    uint32_t          psn;
    uint32_t          remote_qpn;
    uint32_t          max_inline;
    uint64_t          send_head;     /* sends posted */
    uint64_t          send_done;     /* sends known complete */
    uint64_t          last_signaled; /* send_head after the last signaled */
    uint32_t          tx_slot[SRM_WIRE_VERBS_SEND_SLOTS]; /* of send n at n % */
    srm_wire_verbs_rx_t    rx[SRM_WIRE_VERBS_QP_HELD]; /* completed, unread */
    unsigned          rx_first, rx_count;
    size_t            rx_offset;     /* bytes of rx[rx_first] already read */
    size_t            rx_bytes;      /* unread bytes: spill and rx[] */
    uint8_t           *spill;        /* input older than rx[], copied out */
    size_t            spill_off, spill_len, spill_cap;
    unsigned          rma_inflight;
    srm_wire_verbs_rma_done_t rma_done[SRM_WIRE_VERBS_RMA_SLOTS];
    unsigned          rma_first, rma_count;
    int               failed;
    char              error[96];
    srm_wire_verbs_stats_t stats;
};

static inline uint8_t *srm_wire_verbs_send_slot(const srm_wire_verbs_dev_t *dev,
                                                uint32_t slot)
{
    return dev->tx_buf + slot * (size_t)SRM_WIRE_VERBS_SLOT_SIZE;
}

static inline uint8_t *srm_wire_verbs_recv_slot(const srm_wire_verbs_dev_t *dev,
                                                uint32_t slot)
{
    return dev->srq_buf + slot * (size_t)SRM_WIRE_VERBS_SLOT_SIZE;
}

/* srm_wire_verbs_srq.c: the shared receive queue. */
int srm_wire_verbs_srq_refill(srm_wire_verbs_dev_t *dev);
void srm_wire_verbs_srq_give(srm_wire_verbs_dev_t *dev, uint32_t slot);
void srm_wire_verbs_rx_pop(srm_wire_verbs_qp_t *qp);
int srm_wire_verbs_srq_open(srm_wire_verbs_dev_t *dev, unsigned recv_bufs);
void srm_wire_verbs_srq_close(srm_wire_verbs_dev_t *dev);
void srm_wire_verbs_srq_low(srm_wire_verbs_dev_t *dev);

/* srm_wire_verbs_tx.c: the pool of send buffers. */
int srm_wire_verbs_tx_open(srm_wire_verbs_dev_t *dev, unsigned send_bufs);
void srm_wire_verbs_tx_close(srm_wire_verbs_dev_t *dev);
void srm_wire_verbs_tx_done(srm_wire_verbs_qp_t *qp, uint64_t upto);
int srm_wire_verbs_post_empty(srm_wire_verbs_qp_t *qp);
void srm_wire_verbs_tx_reclaim(srm_wire_verbs_dev_t *dev);

/* srm_wire_verbs_qp.c: a queue pair's stream. */
void srm_wire_verbs_fail(srm_wire_verbs_qp_t *qp, const char *fmt,
                         const char *what);

/* srm_wire_verbs_rma.c: one-sided operations. */
void srm_wire_verbs_rma_complete(srm_wire_verbs_qp_t *qp,
                                 const struct ibv_wc *wc);

#endif
