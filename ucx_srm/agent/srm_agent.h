/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * srmd, the node agent: one per node (per network namespace). It owns the
 * clients' shared rings, schedules their frames and delivers them.
 */
#ifndef SRM_AGENT_H
#define SRM_AGENT_H

#include "srm_auth.h"
#include "srm_cpus.h"
#include "srm_regions.h"
#include "srm_node.h"
#include "srm_sched.h"

#include <ucx_srm/common/srm_config.h>
#include <ucx_srm/common/srm_log.h>
#include <ucx_srm/common/srm_proto.h>
#include <ucx_srm/common/srm_shm.h>
#include <ucx_srm/wire/srm_wire_verbs.h>

#include <stdint.h>
#include <sys/types.h>
#include <sys/uio.h>

#define SRM_MAX_PAUSED_NODES 32
/* UCX_SRM_RING_SEND_MIN=auto on the verbs wire; on tcp: inf (copies). */
#define SRM_RING_SEND_MIN_VERBS 4096u

/* What an epoll event is about: the kind in the high 32 bits, a slot below. */
enum {
    SRM_EPOLL_LISTEN   = 0,
    SRM_EPOLL_SOCKET   = 1,
    SRM_EPOLL_DOORBELL = 2,
    SRM_EPOLL_WIRE     = 3, /* the tcp wire's listening socket (slot: path) */
    SRM_EPOLL_LINK     = 4, /* a connection to another agent */
    SRM_EPOLL_VERBS    = 5, /* a verbs device's completions (slot: path) */
    SRM_EPOLL_VERBS_ASYNC = 6, /* its asynchronous events (slot: path) */
};

#define SRM_EPOLL_DATA(_kind, _slot) (((uint64_t)(_kind) << 32) | (_slot))

#define SRM_RMA_MAX_OPS 256 /* RDMA operations in flight, whole agent */

/*
 * An RMA between nodes (srm_rma.c): one a client asked for, handed to the
 * target node's agent, or one that agent serves, by RDMA on its queue pair.
 */
typedef struct srm_rma_inflight {
    uint8_t          state;    /* SRM_RMA_OP_* */
    uint8_t          served;   /* 1: for another node's client */
    uint16_t         gen;      /* tells a stale completion id apart */
    int32_t          status;   /* once done: 0 or a positive errno */
    uint32_t         port;     /* asked: the client to answer */
    uint64_t         cookie;   /* asked: the client's; served: the
                                  requesting agent's id */
    uint64_t         length;
    srm_node_t       *node;    /* asked: the node doing it; served: the
                                  node to answer */
    srm_link_t       *link;    /* served: whose queue pair carries it */
    uint32_t         region;   /* the local end's id, held while in flight */
} srm_rma_inflight_t;

enum {
    SRM_RMA_OP_FREE = 0,
    SRM_RMA_OP_POSTED,
    SRM_RMA_OP_DONE,           /* the answer waits for room in the RX ring */
};

/* A frame held by the agent because its destination's RX ring was full. */
typedef struct srm_backlog_frame {
    struct srm_backlog_frame *next;
    srm_node_t               *from;  /* the node it came from, or NULL */
    srm_frame_hdr_t          hdr;
    uint8_t                  payload[];
} srm_backlog_frame_t;

typedef struct srm_client_stats {
    uint64_t tx_frames;      /* taken from this client's TX rings */
    uint64_t tx_bytes;
    uint64_t rx_frames;      /* written into this client's RX ring */
    uint64_t rx_bytes;
    uint64_t backlogged;     /* frames that waited in its backlog */
    uint64_t blocked;        /* times a sender waited for its RX room */
    uint64_t bad_dest;       /* its frames to unknown ports or wrong keys */
    uint64_t bad_keys;       /* its RMA requests with a wrong region token */
    uint64_t bad_port_keys;  /* its frames to a port here with a wrong key */
    uint64_t wakeups;        /* event-fd signals sent to it */
} srm_client_stats_t;

/* Why a client is on the agent's notify list (bits). */
enum {
    SRM_NOTIFY_WAKE    = 1u << 0,
    SRM_NOTIFY_TX_ROOM = 1u << 1,
};

typedef enum {
    SRM_CLIENT_CONNECTED, /* socket accepted, no request yet */
    SRM_CLIENT_ATTACHED,  /* has rings and a port */
} srm_client_state_t;

typedef struct srm_client {
    srm_client_state_t  state;
    const char          *failed;       /* why it must be dropped, or NULL */
    double              departed_at;   /* its socket closed with frames left
                                          in its TX rings, which are still
                                          delivered (srm_client_depart); 0:
                                          it has not left */
    int                 sock_fd;
    int                 doorbell_fd;   /* the client writes, the agent waits */
    int                 event_fd;      /* the agent writes, the client waits */
    int                 shm_fd;
    pid_t               pid;
    uid_t               uid;
    uint32_t            port;
    uint32_t            key;
    char                name[SRM_PROTO_NAME_MAX];

    srm_shm_layout_t    layout;
    void                *shm;
    srm_ring_mem_t      *mem;           /* shm as channels send from it */
    srm_shm_ctl_t       *ctl;
    srm_ring_t          rx;             /* producer view */
    srm_sched_queue_t   tx[SRM_SHM_MAX_TX_RINGS];

    srm_backlog_frame_t *backlog_head;
    srm_backlog_frame_t *backlog_tail;
    size_t              backlog_bytes;
    unsigned            notify;         /* SRM_NOTIFY_* since the last
                                           srm_deliver_notify */
    struct srm_client   *notify_next;

    srm_client_stats_t  stats;
    srm_link_t          *placing;       /* reading a frame into its RX ring
                                           (srm_place.c), or NULL */

    /* Nodes told to PAUSE sending to this port (by agent node index). */
    uint16_t            paused_nodes[SRM_MAX_PAUSED_NODES];
    unsigned            num_paused_nodes;

    /* The client's node table resolved: agent node index + 1, 0 unknown. */
    uint16_t            node_map[SRM_SHM_MAX_NODES];
    /* Next wire sequence number per destination node (client index). */
    uint32_t            node_seq[SRM_SHM_MAX_NODES];
    /* 1: the client may write to that node directly, and node_seq lives in
     * its segment (srm_lane.c). */
    uint8_t             node_seq_shared[SRM_SHM_MAX_NODES];
} srm_client_t;

typedef struct srm_agent_stats {
    uint64_t frames;
    uint64_t bytes;
    uint64_t sleeps;
    uint64_t wakeups;
    uint64_t late_wakeups;      /* woken by SAFETY_WAKEUP with frames to move */
    uint64_t clients_attached;
    uint64_t clients_dropped;   /* for a protocol or ring violation */
    uint64_t handshakes_refused; /* wire connections closed at accept: too
                                    many waited for their handshake */
    uint64_t bad_dest;
    uint64_t bad_frames;        /* malformed frames from other agents */
    uint64_t rma_ops;           /* RMA requests answered */
    uint64_t rma_bytes;
    uint64_t rma_failed;        /* of them, refused or failed */
    uint64_t rma_served;        /* other nodes' requests answered */
} srm_agent_stats_t;

typedef struct srm_agent {
    srm_node_config_t  node_config;
    srm_agent_config_t config;
    /* The settings as read at start, before "auto" values resolve (what
     * processes compare theirs with: srm_status_format_settings). */
    char               settings[4096];
    char               socket_name[108];
    int                exit_when_idle;
    int                any_user;
    int                listen_fd;
    int                epoll_fd;
    uint64_t           node_id;
    uid_t              uid;
    double             start_time;
    double             idle_since;     /* last time the client count hit 0 */
    volatile int       stop;

    srm_client_t       **slots;         /* index = port's low 16 bits - 1 */
    unsigned           num_slots;
    unsigned           num_clients;
    uint32_t           generation;

    srm_sched_t        sched;
    srm_regions_t      regions;         /* md-allocated (srm_regions.h) */
    srm_rma_inflight_t rma_ops[SRM_RMA_MAX_OPS];
    unsigned           rma_busy;        /* rma_ops not FREE */
    unsigned           rma_asked;       /* of them, for this node's clients
                                           (not served for other nodes) */

    /* The wire: other nodes' agents, on one or two interfaces (paths). */
    int                wire_fd[SRM_WIRE_PATHS];
    double             accept_paused_until; /* after EMFILE and the like:
                                               the wire listeners rest */
    srm_wire_addr_t    wire[SRM_WIRE_PATHS]; /* [0] NONE: no wire */
    char               wire_device[SRM_WIRE_PATHS][64];
    srm_wire_verbs_dev_t    *verbs[SRM_WIRE_PATHS]; /* NULL: the path is tcp */
    unsigned           num_devices;
    srm_auth_t         auth;
    srm_node_t         **nodes;
    unsigned           num_nodes;
    srm_link_t         **links;         /* index = epoll slot */
    unsigned           num_links;
    double             next_timer;      /* when channel timers are due */
    srm_client_t       *notify_list;
    int                spinning;        /* auto policy's current choice */
    struct srm_cpus    *cpus;           /* where it runs (srm_cpus.c) */
    int                moved_locally;   /* a frame went between two ports of
                                           this node since the last sleep */
    unsigned           num_failed;      /* clients waiting for srm_client_reap */
    unsigned           num_departing;   /* clients with departed_at set */
    srm_agent_stats_t  stats;
} srm_agent_t;

/* srm_agent.c */
ucs_status_t srm_agent_init(srm_agent_t *agent);
void srm_agent_cleanup(srm_agent_t *agent);
void srm_agent_run(srm_agent_t *agent);
/*
 * One pass of the loop without the spin/sleep policy (tests, the fuzzer):
 * progress, then the events ready within timeout_ms. 0 means idle.
 */
unsigned srm_agent_step(srm_agent_t *agent, int timeout_ms);
double srm_agent_now(void);

/* srm_client.c */
/* Bytes waiting in the client's TX rings (srmctl status: TX_QUEUED). */
uint64_t srm_client_tx_queued(const srm_client_t *client);
void srm_client_accept(srm_agent_t *agent);
void srm_client_handle_socket(srm_agent_t *agent, srm_client_t *client);
void srm_client_drop(srm_agent_t *agent, srm_client_t *client,
                     const char *reason);
void srm_client_fail(srm_agent_t *agent, srm_client_t *client,
                     const char *reason);
void srm_client_reap(srm_agent_t *agent);
/* Drops the departed clients whose TX rings are empty, or that waited
 * longer than DEPART_TIMEOUT for them to empty. */
void srm_client_reap_departed(srm_agent_t *agent);
/* The attached client of a port, also while it departs or is failed. */
srm_client_t *srm_client_lookup_attached(srm_agent_t *agent, uint32_t port);
/* An attached client that is not failed and has not departed, by port. */
srm_client_t *srm_client_lookup(srm_agent_t *agent, uint32_t port);

/* srm_deliver.c */
srm_sched_result_t srm_deliver_frame(void *arg, srm_sched_queue_t *queue,
                                     const srm_frame_hdr_t *hdr,
                                     const void *payload);
unsigned srm_deliver_backlogs(srm_agent_t *agent);
void srm_deliver_notify(srm_agent_t *agent);
void srm_deliver_release_backlog(srm_client_t *client);
/* The client is woken if it sleeps: frames arrived, or its nodes changed. */
void srm_deliver_mark_notify(srm_agent_t *agent, srm_client_t *client);
/* Room was freed in the client's TX rings: woken if it sleeps and asked
 * for room (tx_space_wanted). */
void srm_deliver_mark_tx_room(srm_agent_t *agent, srm_client_t *client);

/*
 * srm_deliver.c: UCS_OK delivered (or its port broke its ring and was
 * failed), UCS_ERR_NO_RESOURCE no room (retry later); dropped and counted:
 * UCS_ERR_NO_ELEM no such port, UCS_ERR_REJECTED a wrong key. from is the
 * node a frame came
 * from, or NULL for this node's own clients: a remote sender that fills the
 * port's backlog is told to PAUSE instead of blocking the whole channel.
 */
ucs_status_t srm_deliver_to_port(srm_agent_t *agent, srm_node_t *from,
                                 const srm_frame_hdr_t *hdr,
                                 const void *payload);
/*
 * srm_deliver.c, for srm_place.c: holds the ring's reservation for a frame
 * whose payload is yet to be written there, and returns its record (the
 * header copied in), or NULL if the port cannot take it now: ring full,
 * frames waiting in its backlog, or another placement under way. Until
 * srm_deliver_commit publishes it, frames to the port wait in its backlog.
 */
srm_frame_hdr_t *srm_deliver_reserve(srm_agent_t *agent, srm_client_t *dst,
                                     const srm_frame_hdr_t *hdr);
void srm_deliver_commit(srm_agent_t *agent, srm_client_t *dst,
                        const srm_frame_hdr_t *hdr);

/* srm_channel.c: the numbered, acknowledged frame stream of a channel */
void srm_channel_init(srm_agent_t *agent, srm_channel_t *chan);
size_t srm_channel_small_max(const srm_agent_t *agent);
size_t srm_channel_depth(const srm_agent_t *agent); /* most unacknowledged */
void srm_channel_cleanup(srm_agent_t *agent, srm_channel_t *chan);
srm_sched_result_t srm_channel_enqueue(srm_agent_t *agent,
                                       srm_sched_queue_t *queue,
                                       const srm_frame_hdr_t *hdr,
                                       const void *payload);
/* The client goes: what its rings still hold for the channels is copied
 * into their streams. */
void srm_channel_forget_client(srm_agent_t *agent, srm_client_t *client);
void srm_channel_send_flow(srm_agent_t *agent, unsigned node_index,
                           srm_frame_type_t type, uint32_t port);
/* Tells a node that port is gone, having sent it `final` frames. */
void srm_channel_send_port_gone(srm_agent_t *agent, srm_node_t *node,
                                uint32_t port, uint32_t final);
/* PORT_REFUSED to node: its port `port` is dropped here for key misses. */
void srm_channel_send_port_refused(srm_agent_t *agent, srm_node_t *node,
                                   uint32_t port);
/* An RMA_REMOTE or RMA_REMOTE_DONE to node: UCS_ERR_UNREACHABLE for an
 * invalid node, UCS_ERR_NO_MEMORY. */
ucs_status_t srm_channel_send_rma(srm_agent_t *agent, srm_node_t *node,
                                  srm_frame_type_t type, uint32_t port,
                                  const void *payload, uint32_t length);
int srm_channel_flush(srm_agent_t *agent, srm_node_t *node, int kind);
void srm_channel_write_link(srm_agent_t *agent, srm_link_t *link, int ack);
int srm_channel_at_boundary(const srm_link_t *link);
int srm_channel_ack_owed(const srm_channel_t *chan);
ucs_status_t srm_channel_receive(srm_agent_t *agent, srm_link_t *link,
                                 const srm_frame_hdr_t *hdr,
                                 const void *payload);
/* Whether an AM is the next frame of its channel and of its source port,
 * so that it would be delivered as soon as it is whole. */
int srm_channel_is_next(srm_node_t *node, int kind,
                        const srm_frame_hdr_t *hdr);
/* Books such an AM that srm_place.c read into its port's ring. */
void srm_channel_placed(srm_agent_t *agent, srm_link_t *link,
                        const srm_frame_hdr_t *hdr);
/* Books a frame a client read from a channel's socket itself
 * (srm_lane_shared.h): an AM, which must be the next one, or an ACK.
 * UCS_ERR_INVALID_PARAM if it was neither, UCS_ERR_OUT_OF_RANGE an ack of
 * frames never sent. */
ucs_status_t srm_channel_taken(srm_agent_t *agent, srm_node_t *node,
                               int kind, const srm_frame_hdr_t *hdr);
/* UCS_ERR_OUT_OF_RANGE: ack acknowledges frames never sent. */
ucs_status_t srm_channel_on_ack(srm_agent_t *agent, srm_link_t *link,
                                uint32_t ack);
void srm_channel_link_ready(srm_agent_t *agent, srm_link_t *link);
void srm_channel_link_lost(srm_agent_t *agent, srm_link_t *link);
void srm_channel_drop_all(srm_agent_t *agent, srm_channel_t *chan);
/* What srm_channel_absorb found wrong in a lane's log. */
typedef struct srm_absorb_result {
    size_t   lost_bytes;  /* from a malformed frame on: not kept */
    unsigned renumbered;  /* frames not numbered as the channel's next */
    unsigned foreign;     /* frames of no writer of the lane, or out of
                             their port's order (srm_lane_check_writer) */
} srm_absorb_result_t;
/* Takes frames clients wrote to a channel's active link themselves into
 * its stream, checked as they are copied; UCS_ERR_NO_MEMORY (nothing
 * taken). */
ucs_status_t srm_channel_absorb(srm_agent_t *agent, srm_node_t *node,
                                int kind, const uint8_t *frames, size_t len,
                                size_t unwritten, srm_absorb_result_t *result);
size_t srm_channel_queued(const srm_channel_t *chan);
/* Counts a frame of the channel kind delivered to a port of this node. */
void srm_channel_count_rx(srm_agent_t *agent, srm_node_t *node, int kind,
                          const srm_frame_hdr_t *hdr);

/* srm_order.c: receive order per source port of a peer node */
/* The port's entry, made if new; NULL if out of memory or the node names
 * too many ports (srm_order_full). */
srm_order_t *srm_order_get(srm_node_t *node, uint32_t src_port);
int srm_order_full(const srm_node_t *node);
/* Keeps a frame that came ahead of its turn: UCS_OK, or UCS_ERR_NO_RESOURCE
 * if no room now. */
ucs_status_t srm_order_hold(srm_node_t *node, srm_order_t *order, int kind,
                            const srm_frame_hdr_t *hdr, const void *payload);
/* The port's next frame was delivered: those held behind it follow. The
 * entry may go (a gone port's last frame): order is not to be used after. */
void srm_order_advance(srm_agent_t *agent, srm_node_t *node,
                       srm_order_t *order, int kind,
                       const srm_frame_hdr_t *hdr);
/* Whether the node's src_port was refused. */
int srm_order_refused(srm_node_t *node, uint32_t src_port);
/* Delivers a frame of the port whose turn it is: UCS_OK consumed
 * (delivered, or dropped: no such port, a wrong key, a refused source),
 * UCS_ERR_NO_RESOURCE no room. */
ucs_status_t srm_order_deliver(srm_agent_t *agent, srm_node_t *node,
                               srm_order_t *order, const srm_frame_hdr_t *hdr,
                               const void *payload);
/* Delivers the held frames whose turn came (ports had room again). */
unsigned srm_order_release_all(srm_agent_t *agent, srm_node_t *node);
/* PORT_GONE: the port sent `final` frames in all; its entry goes with the
 * last of them. */
void srm_order_port_gone(srm_node_t *node, uint32_t src_port, uint32_t final);
void srm_order_free_all(srm_node_t *node);

/* srm_agent.c: an accept on `which` failed (errno); out of fds or memory,
 * every listener rests a while instead of waking the agent on each pass. */
void srm_agent_accept_failed(srm_agent_t *agent, const char *which);

/* srm_link.c: connections to other agents and their handshake */
const char *srm_link_state_name(srm_link_state_t state);
ucs_status_t srm_link_init(srm_agent_t *agent);
/* Closes every link, then (srm_link_close_devices) the verbs devices: only
 * once nothing registered with them is left (the channels' streams). */
void srm_link_cleanup(srm_agent_t *agent);
void srm_link_close_devices(srm_agent_t *agent);
void srm_link_accept(srm_agent_t *agent, unsigned path);
/* Listens again once an accept failure's pause is over. */
/* The wire's listeners wait for `events` (0: they rest). */
void srm_link_listen_events(srm_agent_t *agent, uint32_t events);
void srm_link_connect(srm_agent_t *agent, srm_node_t *node, int kind,
                      int path);
void srm_link_event(srm_agent_t *agent, unsigned index, uint32_t events);
void srm_link_verbs_event(srm_agent_t *agent, unsigned path);
/* Writes to the link's wire (its socket, or its queue pair): the bytes
 * taken (0: no room now), or -1 with errno. */
ssize_t srm_link_sendv(srm_link_t *link, const struct iovec *iov,
                       int iovcnt);
/* The same, where mrs[i], if not NULL, registers iov[i] with the device of
 * the link's path: a queue pair sends those bytes in place. */
ssize_t srm_link_sendv_mr(srm_link_t *link, const struct iovec *iov,
                          const srm_wire_verbs_mr_t *const *mrs, int iovcnt);
/* The verbs device of a path, or NULL on the tcp wire. */
srm_wire_verbs_dev_t *srm_link_path_verbs(const srm_agent_t *agent, int path);
/* Deregisters one memory's registrations, one per path; paths on one
 * device share theirs, which goes once. All are NULL after. */
void srm_link_dereg_paths(srm_wire_verbs_mr_t *mr[SRM_WIRE_PATHS]);
unsigned srm_link_progress(srm_agent_t *agent);
void srm_link_timers(srm_agent_t *agent, double now);
void srm_link_close(srm_agent_t *agent, srm_link_t *link,
                    srm_log_level_t level, const char *fmt, ...)
        __attribute__((format(printf, 4, 5)));
void srm_link_set_events(srm_agent_t *agent, srm_link_t *link);
/* Reads what the link's socket holds, inside its node's direct lane. */
void srm_link_read_in_lane(srm_agent_t *agent, srm_link_t *link);
void srm_link_say_bye(srm_agent_t *agent);
unsigned srm_link_inject_fault(srm_agent_t *agent, uint32_t node, int kind,
                               srm_fault_how_t how);

/* srm_node.c: remote nodes, their states and timers */
srm_node_t *srm_node_find(srm_agent_t *agent, uint64_t node_id);
srm_node_t *srm_node_create(srm_agent_t *agent, uint64_t node_id,
                            const srm_wire_addr_t wire[SRM_WIRE_PATHS]);
srm_node_t *srm_node_resolve(srm_agent_t *agent, srm_client_t *client,
                             uint32_t idx);
void srm_node_invalidate(srm_agent_t *agent, srm_node_t *node, int failed,
                         const char *why);
/* A node declared failed before it was ever reached, named again at
 * another address or calling us itself: tried again there (1), unless
 * it was reached once or its agent left (0). */
int srm_node_revive(srm_agent_t *agent, srm_node_t *node,
                    const srm_wire_addr_t wire[SRM_WIRE_PATHS],
                    const char *how);
/* A connect to the node on path was refused: 1 if every path it has now
 * was refused since it was last ready (nothing listens there). */
int srm_node_path_refused(srm_node_t *node, int path);
/* An authenticated handshake on path: the peer's own addresses. */
void srm_node_path_ready(srm_node_t *node, int path,
                         const srm_wire_addr_t wire[SRM_WIRE_PATHS]);
unsigned srm_node_progress(srm_agent_t *agent);
void srm_node_cleanup(srm_agent_t *agent);
void srm_node_format_top(srm_agent_t *agent, char *buf, size_t size,
                         size_t *len);
void srm_node_format(srm_agent_t *agent, char *buf, size_t size,
                     size_t *len);
/* The same as a JSON array "nodes" (docs/status-json.md). */
struct srm_json;
void srm_node_format_json(srm_agent_t *agent, struct srm_json *json);
const char *srm_node_kind_name(int kind);

/* srm_place.c: large AMs read from the tcp wire straight into RX rings */
/* Called with a ready link's last, partial frame: 1 if its payload is to
 * be read into its port's ring, its have_len bytes so far copied there
 * (the caller drops them from its input), 0 if it goes the usual way. */
int srm_place_begin(srm_agent_t *agent, srm_link_t *link,
                    const srm_frame_hdr_t *hdr, const uint8_t *have,
                    size_t have_len);
/* Where the link's next read goes first: 1 (*iov set) or 0 (nowhere). */
int srm_place_iov(const srm_link_t *link, struct iovec *iov);
/* Books got bytes read into that iov and on into the input buffer, and
 * delivers the frame once whole; returns the bytes that went on. */
size_t srm_place_fill(srm_agent_t *agent, srm_link_t *link, size_t got);
/* The link closes: its placement is never published. */
void srm_place_cancel(srm_link_t *link);
/* The client leaves: a frame being placed for it goes back to its link. */
void srm_place_abandon(srm_client_t *client);

/* srm_rma.c: a client's SRM_FRAME_RMA, from its TX ring */
srm_sched_result_t srm_rma_request(srm_agent_t *agent, srm_client_t *src,
                                   const srm_frame_hdr_t *hdr,
                                   const void *payload);
/* Collects RDMA completions and answers the clients; work done. */
unsigned srm_rma_progress(srm_agent_t *agent);
/* RMA_REMOTE that came on link `from`: UCS_OK taken (posted, or answered
 * at once), UCS_ERR_NO_RESOURCE no room now (a free operation or send
 * slot). */
ucs_status_t srm_rma_serve(srm_agent_t *agent, srm_link_t *from,
                           const srm_frame_hdr_t *hdr, const void *payload);
/* RMA_REMOTE_DONE from node. */
void srm_rma_remote_done(srm_agent_t *agent, srm_node_t *node,
                         const void *payload);
/* The link's queue pair goes: what it had in flight has failed. */
void srm_rma_link_lost(srm_agent_t *agent, srm_link_t *link);
/* The node is invalid: what it was asked to do has failed. */
void srm_rma_node_lost(srm_agent_t *agent, srm_node_t *node);
/* The agent stops: forget every operation, release their regions. */
void srm_rma_cleanup(srm_agent_t *agent);

/* The channel timers run by `due` at the latest. */
static inline void srm_agent_timer_by(srm_agent_t *agent, double due)
{
    if (agent->next_timer > due) {
        agent->next_timer = due;
    }
}

/* srm_lane.c: clients that write and read the channels' sockets themselves.
 * Enter and leave go around every change to a node's channels' sending
 * state, which the lanes' writers share. */
void srm_lane_enter(srm_agent_t *agent, srm_node_t *node);
/* A frame a client wrote directly to the node: UCS_OK if its source port
 * is a writer of the lane and its seq the next the agent counted for it,
 * else UCS_ERR_INVALID_PARAM; a writer out of its port's order is failed
 * (and counted as the peer saw it). */
ucs_status_t srm_lane_check_writer(srm_agent_t *agent, srm_node_t *node,
                                   const srm_frame_hdr_t *hdr);
void srm_lane_leave(srm_agent_t *agent, srm_node_t *node);
/* Books what clients wrote and read directly, as of now. */
void srm_lane_catch_up(srm_agent_t *agent, srm_node_t *node);
void srm_lane_link_lost(srm_node_t *node, srm_link_t *link);
void srm_lane_destroy(srm_node_t *node);
void srm_lane_answer(srm_agent_t *agent, const srm_client_t *requester,
                     const srm_lane_req_t *req, srm_lane_rep_t *rep,
                     int *fds, int *nfds);
unsigned srm_lane_progress(srm_agent_t *agent);

/* srm_status.c: srmctl status, as text or (srm_status_json.c) JSON */
/* What the queue pairs send from in place on the verbs wire. */
typedef struct srm_status_registered {
    const char *not_why;      /* why nothing is registered, or NULL */
    unsigned   streams;       /* channels' outgoing streams */
    size_t     stream_bytes;  /* each (mapped twice) */
    unsigned   tx_rings;      /* clients' TX rings */
    size_t     tx_ring_bytes; /* all of them */
} srm_status_registered_t;
void srm_status_registered(const srm_agent_t *agent,
                           srm_status_registered_t *reg);
size_t srm_status_format(srm_agent_t *agent, char *buf, size_t size);
size_t srm_status_format_json(srm_agent_t *agent, char *buf, size_t size);
/* The settings it runs with, "UCX_SRM_NAME=VALUE" lines (srmctl, and
 * processes that compare them with theirs). */
size_t srm_status_format_settings(srm_agent_t *agent, char *buf, size_t size);
/* What srmctl top shows, as plain lines of numbers (docs/status-json.md
 * names the counters; the layout is srmctl's own business). */
size_t srm_status_format_top(srm_agent_t *agent, char *buf, size_t size);

#endif
