/*
 * Inside the verbs wire: the open device, shared by the RC queue pairs
 * (srm_wire_verbs.c) and the XRC objects (srm_wire_verbs_xrc.c). Only for
 * builds with libibverbs; nothing outside ucx_srm/wire includes it.
 */
#ifndef SRM_WIRE_VERBS_DEV_H
#define SRM_WIRE_VERBS_DEV_H

#include "srm_wire_verbs.h"
#include "srm_wire_verbs_xrc.h"

#include <infiniband/verbs.h>

struct srm_verbs_dev {
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
    srm_verbs_xrc_domain_t   *xrc_domain;   /* the node's, when xrc */
    /* The shared receive queue of every RC queue pair (srm_wire_verbs.c). */
    struct ibv_srq           *srq;
    struct ibv_mr            *srq_mr;
    uint8_t                  *srq_buf;      /* slots of SLOT_SIZE */
    uint8_t                  *srq_state;    /* per slot: srm_verbs_slot_t */
    uint32_t                 *srq_free;     /* slots to post, a stack */
    unsigned                 srq_num_free;
    unsigned                 srq_target;    /* slots to keep posted */
    srm_verbs_srq_stats_t    srq_stats;
    /* The pool of send buffers, and the queue pairs that draw on it. */
    struct ibv_mr            *tx_mr;
    uint8_t                  *tx_buf;       /* slots of SLOT_SIZE */
    uint32_t                 *tx_free;      /* a stack */
    srm_verbs_tx_stats_t     tx_stats;      /* .free: its depth */
    int                      tx_ran_out;    /* since room last came back */
    int                      tx_room_back;
    srm_verbs_qp_t           *qps;
};

/* A random 24-bit packet sequence number to start a queue pair at. */
uint32_t srm_verbs_new_psn(void);

/*
 * The RTR attributes every connected queue pair of ours needs toward a
 * remote one (path MTU, destination, address vector): -1 with errno EPROTO
 * if remote is not a queue pair we could connect to.
 */
int srm_verbs_dev_rtr_attr(const srm_verbs_dev_t *dev,
                           const srm_hello_qp_t *remote,
                           struct ibv_qp_attr *attr);

#endif
