/*
 * Remote nodes and the node-level channels to them (the point of SRM: one
 * small and one bulk channel per remote node, shared by every process of
 * this node). A *link* is one connection of the wire; a *channel* is what
 * outlives links: the queue of frames to send and the per-kind counters.
 */
#ifndef SRM_NODE_H
#define SRM_NODE_H

#include <ucx_srm/common/srm_config.h>
#include <ucx_srm/common/srm_frame.h>

#include <stddef.h>
#include <stdint.h>

typedef struct srm_node srm_node_t;

typedef enum {
    SRM_LINK_CONNECTING, /* our connect in progress */
    SRM_LINK_HELLO_SENT, /* we wait for HELLO_ACK */
    SRM_LINK_HELLO_WAIT, /* accepted; we wait for HELLO */
    SRM_LINK_READY,
} srm_link_state_t;

typedef struct srm_link {
    int              fd;
    unsigned         index;       /* in agent->links, for epoll */
    srm_link_state_t state;
    int              initiator;
    int              kind;        /* SRM_CHANNEL_SMALL/BULK, once known */
    srm_node_t       *node;       /* once known */
    int              want_write;  /* EPOLLOUT armed */
    uint8_t          *in_buf;
    size_t           in_len;
    int              in_blocked;  /* a received frame waits for room */
} srm_link_t;

typedef struct srm_channel {
    srm_link_t *link;             /* the connection carrying it, if any */
    uint8_t    *out;              /* queued frames, whole */
    size_t     out_head;
    size_t     out_tail;
    size_t     out_cap;
    uint64_t   tx_frames, tx_bytes, rx_frames, rx_bytes;
    uint64_t   connects;
    double     retry_at;          /* no new connect before this time */
    unsigned   failures;          /* connects failed in a row */
} srm_channel_t;

/* A frame from the network that arrived ahead of an earlier one. */
typedef struct srm_held_frame {
    struct srm_held_frame *next;
    int                   kind;      /* the channel it came on */
    srm_frame_hdr_t       hdr;
    uint8_t               payload[];
} srm_held_frame_t;

/* Receive order of one source port of this node's peer. */
typedef struct srm_order {
    uint32_t         src_port;
    uint32_t         expected;
    srm_held_frame_t *held;       /* sorted by seq */
} srm_order_t;

struct srm_node {
    uint64_t      node_id;
    uint32_t      ipv4;           /* network order */
    uint16_t      tcp_port;       /* network order */
    unsigned      index;
    srm_channel_t chan[SRM_CHANNEL_KINDS];
    int           dirty;          /* has frames to flush */
    srm_order_t   *orders;
    unsigned      num_orders;
    unsigned      cap_orders;
    size_t        held_bytes;
    uint32_t      *paused_ports;  /* its ports that told us to PAUSE */
    unsigned      num_paused;
    uint64_t      pauses;         /* PAUSE frames received */
    uint64_t      bad_frames;     /* malformed frames from this node */
    uint64_t      reordered;      /* frames held back for order */
};

#endif
