/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * One-sided operations on md-allocated memory (srm_rkey.h). A client puts
 * an RMA frame in its TX ring, in order with its other frames; its agent
 * checks both ends against its region registry and the key, moves the data
 * (a copy between its own mappings when both regions are on this node),
 * and answers with an RMA_DONE frame in the client's RX ring. When the
 * target is on another node, the agent hands the request to that node's
 * agent (RMA_REMOTE), which checks the key against its own registry and
 * moves the data itself, by an RDMA READ or WRITE of the requester's bytes
 * under its agent's registration, and answers (RMA_REMOTE_DONE): a key a
 * client made up is refused by an agent, never tried on a NIC.
 */
#ifndef SRM_RMA_H
#define SRM_RMA_H

#include "srm_rkey.h"

#include <stdint.h>

typedef enum {
    SRM_RMA_PUT = 1, /* local -> remote */
    SRM_RMA_GET = 2, /* remote -> local */
} srm_rma_op_t;

/* Payload of SRM_FRAME_RMA. */
typedef struct srm_rma_req {
    uint64_t          cookie;          /* echoed in RMA_DONE */
    uint8_t           op;              /* srm_rma_op_t */
    uint8_t           reserved[3];
    uint32_t          local_region;    /* the client's md allocation */
    uint32_t          local_generation;
    uint32_t          reserved2;
    uint64_t          local_addr;      /* in the client's address space */
    uint64_t          length;
    uint64_t          remote_addr;     /* in the key owner's address space */
    srm_rkey_packed_t rkey;            /* as packed by the remote md */
} srm_rma_req_t;

/* Payload of SRM_FRAME_RMA_DONE. */
typedef struct srm_rma_done {
    uint64_t cookie;
    int32_t  status;                   /* 0 or a positive errno */
    uint32_t reserved;
} srm_rma_done_t;

/* Payload of SRM_FRAME_RMA_REMOTE (src_port: the requesting port). */
typedef struct srm_rma_remote {
    uint64_t id;                       /* echoed in RMA_REMOTE_DONE */
    uint8_t  op;                       /* srm_rma_op_t, as the client asked */
    uint8_t  reserved[3];
    uint32_t region_id;                /* the target, as the key names it */
    uint32_t generation;
    uint32_t token;
    uint64_t remote_addr;              /* in the key owner's address space */
    uint64_t length;
    uint64_t peer_addr;                /* the requester's bytes, in its
                                          agent's mapping */
    uint32_t peer_rkey[SRM_WIRE_PATHS]; /* their rkey per path; 0: none */
} srm_rma_remote_t;

/* Payload of SRM_FRAME_RMA_REMOTE_DONE. */
typedef struct srm_rma_remote_done {
    uint64_t id;
    int32_t  status;                   /* 0 or a positive errno */
    uint32_t reserved;
} srm_rma_remote_done_t;

#endif
