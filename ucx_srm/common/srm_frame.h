/*
 * The frame: the unit that moves through the client rings, the agent's
 * scheduler and (later) the node channels. One format everywhere, so the
 * agent validates a frame once, the same way, whatever room it came from.
 */
#ifndef SRM_FRAME_H
#define SRM_FRAME_H

#include <stddef.h>
#include <stdint.h>

#define SRM_FRAME_MAGIC    0x5352u /* "SR" */
#define SRM_FRAME_VERSION  1u
#define SRM_FRAME_ALIGN    8u

/* Largest payload a frame may carry; a client may choose less. */
#define SRM_FRAME_MAX_PAYLOAD (128u * 1024u)

typedef enum {
    SRM_FRAME_PAD = 1, /* ring filler up to the wrap point, no header after */
    SRM_FRAME_AM  = 2, /* active message for a client port */
    SRM_FRAME_HELLO = 3, /* wire: channel handshake, initiator to acceptor */
    SRM_FRAME_HELLO_ACK = 4, /* wire: the acceptor's answer */
    SRM_FRAME_PAUSE = 5, /* wire: stop sending to dst_port (it is full) */
    SRM_FRAME_RESUME = 6, /* wire: dst_port has room again */
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
    uint32_t dst_node;  /* TX ring: the client's node table index (0 = this
                           node); wire: unused (0) */
    uint8_t  am_id;
    uint8_t  flags;
    uint16_t reserved;
    uint32_t seq;       /* wire: per (source port, destination node) order */
} srm_frame_hdr_t;

/* Payload of HELLO and HELLO_ACK: who is on the other end of a channel. */
typedef struct srm_hello {
    uint64_t node_id;
    uint32_t ipv4;      /* sender's listening address, network order */
    uint16_t tcp_port;  /* network order */
    uint8_t  kind;      /* srm channel kind: 0 small, 1 bulk */
    uint8_t  accepted;  /* HELLO_ACK: 1 if this connection carries the kind */
} srm_hello_t;

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
