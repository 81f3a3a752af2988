/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Remote nodes and the node-level channels to them (the point of SRM: one
 * small and one bulk channel per remote node, shared by every process of
 * this node).
 *
 * A *link* is one connection of the wire. A *channel* is what outlives
 * links: the stream of frames of one kind to one node, numbered, kept until
 * the peer acknowledges them, carried by the link of its active path; the
 * link of the other path stands by (srm_channel.c). A *node* ties its
 * channels together and moves through Init -> Normal -> Restoring ->
 * Normal | Invalid (srm_node.c).
 */
#ifndef SRM_NODE_H
#define SRM_NODE_H

#include <ucx_srm/common/srm_address.h>
#include <ucx_srm/common/srm_config.h>
#include <ucx_srm/common/srm_frame.h>
#include <ucx_srm/wire/srm_wire.h>

#include "srm_holes.h"
#include "srm_mirror.h"
#include "srm_retrans.h"
#include "srm_rtt.h"

#include <stddef.h>
#include <stdint.h>

typedef struct srm_node srm_node_t;
typedef struct srm_wire_verbs_qp srm_wire_verbs_qp_t;
typedef struct srm_lane srm_lane_t;
typedef struct srm_wire_verbs_mr srm_wire_verbs_mr_t;

/* A large AM read from a link's socket straight into its destination's RX
 * ring (srm_place.c). */
typedef struct srm_placement {
    struct srm_client *dst;       /* NULL: none under way */
    srm_frame_hdr_t   hdr;
    uint8_t           *payload;   /* in dst's reserved ring record */
    size_t            filled;     /* payload bytes read so far */
} srm_placement_t;

typedef enum {
    SRM_LINK_CONNECTING, /* our connect in progress */
    SRM_LINK_HELLO_SENT, /* initiator: we wait for HELLO_ACK */
    SRM_LINK_HELLO_WAIT, /* acceptor: we wait for HELLO */
    SRM_LINK_AUTH_WAIT,  /* acceptor: we wait for the initiator's AUTH */
    SRM_LINK_QP_WAIT,    /* initiator, verbs: we wait for the acceptor's
                            AUTH, sent once its queue pair is connected */
    SRM_LINK_READY,
    SRM_LINK_STATES
} srm_link_state_t;

typedef struct srm_link {
    srm_wire_conn_t  conn;        /* its TCP connection (the handshake;
                                     then the frames, or on verbs only the
                                     peer's exit) and its wire's endpoint */
    const srm_wire_ops_t *wire;   /* the path's wire: carries the frames
                                     once the link is ready */
    int              endpoint_unread; /* ready: read what the endpoint
                                         received meanwhile */
    unsigned         index;       /* in agent->links, for epoll */
    srm_link_state_t state;
    int              initiator;
    int              kind;        /* SRM_CHANNEL_SMALL/BULK, once known */
    int              path;        /* 0 or 1, once known */
    srm_node_t       *node;       /* once known */
    int              want_write;  /* EPOLLOUT armed */
    uint8_t          *in_buf;
    size_t           in_len;
    int              in_blocked;  /* a received frame waits for room */
    srm_placement_t  place;       /* the frame being read past in_buf */
    uint32_t         epoll_events; /* what the agent's epoll set asks of fd */
    int              muted;       /* fault injected: neither side hears */
    int              lane_shut;   /* shut down by srm_lane_absorb: closes
                                     at its next read or write */
    double           last_rx;     /* when bytes last arrived (or creation) */
    double           born;        /* the handshake's deadline counts from it */
    double           last_tx;     /* when bytes last left */
    /* A control frame (ACK) being written ahead of the channel's data. */
    srm_frame_hdr_t  ctl;
    size_t           ctl_left;
    /* Handshake: the peer's claims, trusted only once it is authenticated. */
    uint8_t          nonce[SRM_AUTH_NONCE_LEN];      /* ours */
    uint8_t          peer_nonce[SRM_AUTH_NONCE_LEN];
    srm_hello_qp_t   peer_qp;     /* as its HELLO or HELLO_ACK carried it */
    uint64_t         peer_id;
    srm_wire_addr_t  peer_wire[SRM_WIRE_PATHS];
    int              accepted;    /* acceptor: it won the tie-break */
    int              shared;      /* its socket was passed to clients (a
                                     direct lane): closing it must end the
                                     connection they hold too */
    int              clients_poll; /* they read it: no EPOLLIN for us */
    srm_retrans_watch_t retrans;  /* while it is its channel's active */
    uint64_t         retrans_tx_seen; /* channel's tx_bytes at that look */
} srm_link_t;

/* A stream buffer the channel outgrew while queue pairs could still be
 * reading from it: kept until the channel goes. */
typedef struct srm_outgrown {
    struct srm_outgrown *next;
    srm_mirror_t        out;
    srm_wire_verbs_mr_t      *mr[SRM_WIRE_PATHS];
} srm_outgrown_t;

/*
 * One direction-pair of a kind to one node. The frames we send live in
 * `out` as a stream, by absolute byte offsets (srm_mirror_at):
 *
 *   head <= sent <= tail, tail - head <= out.size
 *   [head, sent)  written to the active link, not yet acknowledged
 *   [sent, tail)  not yet written
 *
 * A new or changed active link starts again at head (the receiver drops
 * what it has already seen by chan_seq), which is what failover is. On the
 * verbs wire `out` is registered with each path's device and the queue
 * pairs send from it in place: bytes before head are the only ones that
 * may change. The payloads of large frames stay in their senders' TX rings
 * until acknowledged: `holes` says where (srm_holes.h).
 */
typedef struct srm_channel {
    srm_link_t *links[SRM_WIRE_PATHS];
    int        active;            /* the path our frames go on */
    srm_mirror_t   out;           /* allocated on first use */
    srm_wire_verbs_mr_t *out_mr[SRM_WIRE_PATHS]; /* per path with a device */
    srm_outgrown_t *outgrown;
    srm_holes_t    holes;         /* payloads left in clients' TX rings */
    uint64_t   head, sent, tail;
    uint64_t   frame_end;         /* start of the first frame not yet
                                     written whole (== sent at a frame
                                     boundary); [head, frame_end) may go */
    uint32_t   next_seq;          /* chan_seq of the next frame queued */
    uint32_t   acked_seq;         /* the peer has every frame before it */
    uint32_t   sent_seq_hi;       /* every frame before it was written once */

    uint32_t   rx_expected;       /* the next chan_seq we accept */
    uint32_t   rx_acked;          /* rx_expected as last told to the peer */
    size_t     rx_unacked;        /* bytes consumed since that ack */
    double     ack_due;           /* 0: no ack owed */

    uint64_t   tx_frames, tx_bytes, rx_frames, rx_bytes;
    uint64_t   placed_frames;     /* of rx, read straight into a ring */
    uint64_t   placed_bytes;
    uint64_t   connects;
    uint64_t   failovers;         /* times the active link was lost */
    uint64_t   replaced;          /* of those, closed for retransmitting */
    uint64_t   kept;              /* times it stayed, retransmitting, where
                                     a move had not helped (congestion) */
    srm_retrans_moves_t retrans_moves;
    srm_rtt_t  rtt;               /* turn time of our frames */
    uint64_t   resent;            /* frames written more than once */
    uint64_t   ring_frames;       /* of tx, sent from the sender's TX ring */
    uint64_t   ring_filled;       /* of those, copied here as it left */
    uint64_t   direct_frames;     /* of tx, written by clients themselves */
    uint64_t   taken_frames;      /* of rx, read by clients themselves */
    uint64_t   duplicates;        /* frames received twice and dropped */
    double     retry_at[SRM_WIRE_PATHS];
    unsigned   failures[SRM_WIRE_PATHS]; /* connects failed in a row */
} srm_channel_t;

/* A frame from the network that arrived ahead of an earlier one. */
typedef struct srm_held_frame {
    struct srm_held_frame *next;
    int                   kind;      /* the channel it came on */
    srm_frame_hdr_t       hdr;
    uint8_t               payload[];
} srm_held_frame_t;

/* One channel's direct lane, as the agent keeps it: its own copy of what
 * it must not read back from the memory clients share. */
typedef struct srm_node_lane {
    srm_lane_t       *shm;
    int              fd;
    uint32_t         log_size;
    srm_link_t       *link;       /* whose socket the lane's generation
                                     names, or NULL */
    uint32_t         polls_seen;  /* rx_polls when last looked at */
    double           polled_at;   /* when it last moved */
    /* Whether clients take enough to be left the socket (srm_lane_watch):
     * over windows of SRM_LANE_POLL_STALE_MS. */
    double           window_start;
    int              window_polled; /* clients polled as it began */
    uint64_t         window_rx;     /* the channel's rx_frames then */
    uint64_t         window_taken;  /* and taken_frames */
    unsigned         listen_windows; /* left to listen before a try */
} srm_node_lane_t;

/* Receive order of one source port of this node's peer (srm_order.c). */
typedef struct srm_order {
    uint32_t         src_port;
    uint32_t         expected;
    uint32_t         final;       /* gone: the seq it ended at */
    int              gone;        /* its agent said PORT_GONE */
    uint32_t         bad_keys;    /* its frames to ports with wrong keys */
    int              refused;     /* searching for keys: dropped, its agent
                                     told (PORT_REFUSED) */
    srm_held_frame_t *held;       /* sorted by seq */
} srm_order_t;

typedef enum {
    SRM_NODE_INIT,      /* no channel has been ready yet */
    SRM_NODE_NORMAL,    /* every kind has a ready link */
    SRM_NODE_RESTORING, /* a kind lost its links; reconnecting */
    SRM_NODE_INVALID,   /* unreachable for PEER_TIMEOUT, or it said BYE */
    SRM_NODE_STATES
} srm_node_state_t;

struct srm_node {
    uint64_t         node_id;
    srm_wire_addr_t  wire[SRM_WIRE_PATHS];
    unsigned         index;
    srm_node_state_t state;
    double           state_since;
    double           down_since;  /* no ready link of some kind since */
    const char       *why_invalid;
    int              ever_ready;  /* a link was ready once: its address
                                     works, and frames may have gone */
    unsigned         refused;     /* paths whose connects were refused
                                     since they were last ready (bits) */
    srm_channel_t    chan[SRM_CHANNEL_KINDS];
    int              dirty;       /* has frames to flush */
    srm_order_t      *orders;
    unsigned         num_orders;
    unsigned         cap_orders;
    size_t           held_bytes;
    uint64_t         orders_retired; /* entries of gone ports freed */
    unsigned         sources_refused; /* its ports refused for key misses */
    uint64_t         miskeyed;    /* its frames to ports with wrong keys */
    int              orders_full_logged;
    uint32_t         *paused_ports; /* its ports that told us to PAUSE */
    unsigned         num_paused;
    uint64_t         pauses;      /* PAUSE frames received */
    uint64_t         bad_frames;  /* malformed frames from this node */
    uint64_t         reordered;   /* frames held back for order */
    uint64_t         dropped;     /* frames for it dropped (node invalid) */
    unsigned         backlogged;  /* its frames waiting in port backlogs */
    /* The channels' direct lanes (srm_lane.c), once a client asked. */
    srm_node_lane_t  lanes[SRM_CHANNEL_KINDS];
    unsigned         lane_depth;  /* srm_lane_enter nesting */
    uint64_t         lane_foreign; /* frames written to it directly by no
                                      writer of its lane, or out of their
                                      port's order */
};

#endif
