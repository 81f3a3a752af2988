/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The frame: the unit that moves through the client rings, the agent's
 * scheduler and (later) the node channels. One format everywhere, so the
 * agent validates a frame once, the same way, whatever room it came from.
 */
#ifndef SRM_FRAME_H
#define SRM_FRAME_H

#include "srm_address.h"

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#define SRM_FRAME_MAGIC    0x5352u /* "SR" */
#define SRM_FRAME_VERSION  6u /* 6: HELLO carries IPv6 addresses */
#define SRM_FRAME_ALIGN    8u

/* Largest payload a frame may carry; a client may choose less. */
#define SRM_FRAME_MAX_PAYLOAD (128u * 1024u)

/* Of an AM's payload, the bytes of the upper layer's own header (UCP's)
 * that do not count as message: the largest an AM zcopy may carry, and
 * what a frame may exceed LARGE_THRESH by and still be small, so that an
 * 8 KB message is not a message "over 8 KB". */
#define SRM_FRAME_AM_HDR_ALLOWANCE 128u

typedef enum {
    SRM_FRAME_PAD = 1, /* ring filler up to the wrap point, no header after */
    SRM_FRAME_AM  = 2, /* active message for a client port */
    SRM_FRAME_HELLO = 3, /* wire: channel handshake, initiator to acceptor */
    SRM_FRAME_HELLO_ACK = 4, /* wire: the acceptor's answer */
    SRM_FRAME_PAUSE = 5, /* wire: stop sending to dst_port (it is full) */
    SRM_FRAME_RESUME = 6, /* wire: dst_port has room again */
    SRM_FRAME_ACK = 7, /* wire: cumulative ack (seq), also the heartbeat */
    SRM_FRAME_AUTH = 8, /* wire: the initiator's proof of the secret */
    SRM_FRAME_BYE = 9, /* wire: the sending agent is leaving for good */
    SRM_FRAME_RMA = 10, /* TX ring only: a PUT/GET for the agent (srm_rma.h) */
    SRM_FRAME_RMA_DONE = 11, /* RX ring only: the agent finished an RMA */
    SRM_FRAME_PORT_GONE = 12, /* wire: src_port left; seq: the number of
                                 frames it sent to the receiving node */
    SRM_FRAME_PORT_REFUSED = 13, /* wire: the receiving node's dst_port kept
                                    missing port keys; its frames are dropped */
    SRM_FRAME_RMA_REMOTE = 14, /* wire: a client's RMA on the receiving
                                  node's memory, for its agent to check and
                                  do (srm_rma.h) */
    SRM_FRAME_RMA_REMOTE_DONE = 15, /* wire: the answer to one */
    SRM_FRAME_LAST
} srm_frame_type_t;

/*
 * 32 bytes. The first 8 bytes alone must identify a PAD record: a ring may
 * have only 8 bytes left before its end.
 */
typedef struct srm_frame_hdr {
    uint16_t magic;
    uint8_t  version;
    uint8_t  type;      /* srm_frame_type_t */
    uint32_t length;    /* payload bytes after the header */
    uint32_t src_port;
    uint32_t dst_port;
    uint32_t dst_key;   /* must match the destination port's key */
    union {
        uint32_t dst_node;  /* TX ring: the client's node table index of the
                               destination (0 = this node) */
        uint32_t chan_seq;  /* wire: the frame's number on its channel, for
                               acks and for dropping resent duplicates */
    };
    uint8_t  am_id;
    uint8_t  flags;
    uint16_t reserved;
    uint32_t seq;       /* wire: per (source port, destination node) order;
                           ACK: the next chan_seq the sender expects */
} srm_frame_hdr_t;

#define SRM_AUTH_NONCE_LEN 16
#define SRM_AUTH_MAC_LEN   32

/* How a link carries its frames once the handshake is done. */
typedef enum {
    SRM_HELLO_WIRE_TCP   = 0, /* on the handshake's own TCP connection */
    SRM_HELLO_WIRE_VERBS = 1, /* on an RC queue pair; TCP stays as control */
} srm_hello_wire_t;

/* The verbs wire: what the other side needs to connect its RC QP to ours. */
typedef struct srm_hello_qp {
    uint8_t  gid[16];
    uint32_t qpn;
    uint32_t psn;
    uint16_t lid;       /* InfiniBand; 0 on RoCE */
    uint8_t  mtu;       /* enum ibv_mtu of the port */
    uint8_t  reserved[5];
} srm_hello_qp_t;

/*
 * Payload of HELLO and HELLO_ACK: who is on the other end of a channel, and
 * (with a cluster secret) the acceptor's proof that it knows the secret.
 */
typedef struct srm_hello {
    uint64_t node_id;
    srm_wire_addr_t wire[SRM_WIRE_PATHS]; /* where the sender listens */
    uint8_t  kind;      /* srm channel kind: 0 small, 1 bulk */
    uint8_t  path;      /* 0 or 1: which of the paths this connection is */
    uint8_t  accepted;  /* HELLO_ACK: 1 if this connection carries the kind */
    uint8_t  secret;    /* 1 if the sender authenticates with a secret */
    uint8_t  wire_kind; /* srm_hello_wire_t of this path */
    uint8_t  reserved[5]; /* the nonce at a multiple of 8 */
    uint8_t  nonce[SRM_AUTH_NONCE_LEN];
    uint8_t  mac[SRM_AUTH_MAC_LEN]; /* HELLO_ACK: see srm_auth.h */
    srm_hello_qp_t qp;  /* wire VERBS: the sender's queue pair */
} srm_hello_t;

#ifndef __cplusplus
_Static_assert(sizeof(srm_hello_t) == 136, "HELLO has no hidden padding");
#endif

/* Payload of AUTH: the initiator's proof (srm_auth.h). */
typedef struct srm_auth_proof {
    uint8_t mac[SRM_AUTH_MAC_LEN];
} srm_auth_proof_t;

typedef enum {
    SRM_FRAME_OK = 0,
    SRM_FRAME_ERR_MAGIC,
    SRM_FRAME_ERR_VERSION,
    SRM_FRAME_ERR_TYPE,
    SRM_FRAME_ERR_LENGTH,
    SRM_FRAME_ERR_AM_ID,
} srm_frame_status_t;

static inline size_t srm_frame_align(size_t n)
{
    return (n + SRM_FRAME_ALIGN - 1) & ~(size_t)(SRM_FRAME_ALIGN - 1);
}

/* Bytes a frame with this payload occupies in a ring. */
static inline size_t srm_frame_record_size(size_t payload)
{
    return srm_frame_align(sizeof(srm_frame_hdr_t) + payload);
}

/* A header of this version with everything else zero. */
static inline void srm_frame_hdr_init(srm_frame_hdr_t *hdr,
                                      srm_frame_type_t type, uint32_t length)
{
    memset(hdr, 0, sizeof(*hdr));
    hdr->magic   = SRM_FRAME_MAGIC;
    hdr->version = SRM_FRAME_VERSION;
    hdr->type    = (uint8_t)type;
    hdr->length  = length;
}

/* Whether sequence number a comes before b (32-bit, wrapping). */
static inline int srm_seq_before(uint32_t a, uint32_t b)
{
    return (int32_t)(a - b) < 0;
}

static inline void *srm_frame_payload(srm_frame_hdr_t *hdr)
{
    return hdr + 1;
}

/*
 * Checks a header that came from a less trusted party (a client ring or the
 * network). max_payload is the receiver's own limit.
 */
srm_frame_status_t srm_frame_validate(const srm_frame_hdr_t *hdr,
                                      size_t max_payload);

const char *srm_frame_status_str(srm_frame_status_t status);

/*
 * Splits a byte stream (the wire) into frames: validates the header at buf
 * and, if the whole frame is there, gives its size. SRM_FRAME_OK with
 * *size 0 means "need more bytes". PAD never travels on the wire.
 */
srm_frame_status_t srm_frame_next(const uint8_t *buf, size_t len,
                                  srm_frame_hdr_t *hdr, size_t *size);

#endif
