/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The srm transport as UCX sees it: component and md (srm_md.c), iface
 * (srm_iface.c), ep (srm_ep.c), and the connection to the node agent
 * (srm_agent_conn.c). Every byte goes through the agent's rings, but for
 * the small AMs a process writes to another node's channel itself
 * (srm_direct.c).
 */
#ifndef UCT_SRM_H
#define UCT_SRM_H

#include <ucx_srm/common/srm_address.h>
#include <ucx_srm/common/srm_config.h>
#include <ucx_srm/common/srm_lane_shared.h>
#include <ucx_srm/common/srm_proto.h>
#include <ucx_srm/common/srm_rkey.h>
#include <ucx_srm/common/srm_shm.h>

#include <uct/base/uct_iface.h>
#include <uct/base/uct_md.h>
#include <ucs/datastruct/arbiter.h>
#include <ucs/datastruct/list.h>

#include <limits.h>
#include <pthread.h>

#define UCT_SRM_NAME        "srm"
#define UCT_SRM_CONFIG_PREFIX SRM_CONFIG_PREFIX
#define UCT_SRM_MAX_HDR     SRM_FRAME_AM_HDR_ALLOWANCE
#define UCT_SRM_MAX_FLUSHES 64   /* flushes waiting with a completion */
/* Most bytes of frames read from a lane's socket at once (srm_direct.c):
 * the largest frame. */
#define UCT_SRM_RX_FRAME_SIZE (sizeof(srm_frame_hdr_t) + SRM_FRAME_MAX_PAYLOAD)

extern uct_component_t uct_srm_component;
/* srm_uct_config.c */
extern ucs_config_field_t uct_srm_md_config_table[];
extern ucs_config_field_t uct_srm_iface_config_table[];

/* A non-NULL handle for registered user memory: UCP treats NULL as "not
 * registered"; it names no memory the agent knows (srm_md_mem.c). */
#define UCT_SRM_MEMH ((uct_mem_h)(uintptr_t)0x5352)

typedef struct uct_srm_md_config {
    uct_md_config_t   super;
    srm_node_config_t node;
    int               mem_alloc;   /* offer UCT_MD_FLAG_ALLOC */
} uct_srm_md_config_t;

typedef struct uct_srm_md {
    uct_md_t           super;
    srm_agent_mode_t   agent_mode;
    double             connect_timeout;
    int                mem_alloc;
    int                mem_sock;     /* the md's agent connection, or -1 */
    pthread_mutex_t    mem_lock;     /* one memory request at a time */
    char               socket_name[108];
    srm_agent_choice_t agent_choice; /* how socket_name was chosen */
    int                settings_checked; /* against the agent's, once */
    char               agent_path[PATH_MAX];
    char               dev_name[UCT_DEVICE_NAME_MAX]; /* srm_config_device_name */
} uct_srm_md_t;

/* Memory the md allocated (srm_md_mem.c). */
typedef struct uct_srm_memh {
    void       *address;
    size_t     length;
    srm_rkey_t key;                /* what mkey_pack packs */
} uct_srm_memh_t;

/* UCX_SRM_DIRECT: which sends a process writes to a node's channel
 * socket itself (srm_direct.c). */
typedef enum {
    UCT_SRM_DIRECT_NO,
    UCT_SRM_DIRECT_AUTO,   /* one that follows a receive, agent asleep */
    UCT_SRM_DIRECT_ALWAYS, /* every send the lane can take */
    UCT_SRM_DIRECT_LAST
} uct_srm_direct_mode_t;

typedef struct uct_srm_lane uct_srm_lane_t;
typedef struct uct_srm_node_lanes uct_srm_node_lanes_t;

typedef struct uct_srm_iface_config {
    uct_iface_config_t super;
    size_t             seg_size;      /* AM bcopy/short limit */
    size_t             max_zcopy;     /* AM zcopy limit */
    size_t             max_rma;       /* PUT/GET zcopy limit */
    unsigned           tx_rings;
    size_t             tx_ring_size;
    size_t             rx_ring_size;
    unsigned           rx_max_poll;
    int                yield;         /* sched_yield when progress is idle */
    int                direct;        /* uct_srm_direct_mode_t */
    int                direct_recv;   /* read lanes' sockets in progress */
    int                direct_bulk;   /* the bulk channel's lane too */
} uct_srm_iface_config_t;

/* What attaching to the agent gives an iface. */
typedef struct uct_srm_attachment {
    int              sock_fd;
    int              doorbell_fd;
    int              event_fd;
    uint32_t         port;
    uint32_t         key;
    uint64_t         node_id;
    uint32_t         max_payload;
    uint32_t         flags;        /* SRM_ATTACH_FLAG_* */
    srm_wire_addr_t  wire[SRM_WIRE_PATHS]; /* the agent's channel addresses */
    srm_shm_layout_t layout;
    void             *shm;
} uct_srm_attachment_t;

/* A request behind an RMA frame; see srm_rma_slots.c. */
typedef struct uct_srm_rma_slot {
    uct_completion_t *comp;
    uint32_t         generation; /* in the cookie; changes on release */
    uint32_t         next_free;
    int              in_use;
} uct_srm_rma_slot_t;

typedef struct uct_srm_rma_slots {
    uct_srm_rma_slot_t *slot;
    uint32_t           capacity;
    uint32_t           free_head;
} uct_srm_rma_slots_t;

/* A flush waiting for the agent to take frames and answer RMA. */
typedef struct uct_srm_flush {
    uct_completion_t *comp;
    uint64_t         head[SRM_SHM_MAX_TX_RINGS]; /* each ring's, to pass */
} uct_srm_flush_t;

/* One TX ring and the sends waiting for room in it. */
typedef struct uct_srm_tx_ring {
    srm_ring_t    ring;
    ucs_arbiter_t pending;
} uct_srm_tx_ring_t;

typedef struct uct_srm_iface {
    uct_base_iface_t     super;
    uct_srm_attachment_t agent;
    srm_shm_ctl_t        *ctl;
    uct_srm_tx_ring_t    tx[SRM_SHM_MAX_TX_RINGS];
    srm_ring_t           rx;
    ucs_list_link_t      eps;
    struct {
        size_t           max_short;
        size_t           max_bcopy;
        size_t           max_zcopy;
        size_t           max_rma;
        int              rma_offered;   /* PUT/GET zcopy in the attributes */
        unsigned         rx_max_poll;
        int              yield;
        int              direct;        /* uct_srm_direct_mode_t */
        int              direct_recv;
        int              direct_bulk;
    } config;
    unsigned             rma_outstanding; /* RMA frames not yet answered */
    uct_srm_rma_slots_t  rma_slots;     /* their requests, by cookie */
    int                  fenced;        /* set only while that count > 0;
                                           sends wait until it is 0 */
    unsigned             num_flushes;
    uct_srm_flush_t      flushes[UCT_SRM_MAX_FLUSHES]; /* srm_flush.c */
    uint32_t             num_nodes;     /* node table entries in use */
    struct uct_srm_ep    *dispatch_ep;  /* whose pending request runs */
    volatile int         agent_lost;    /* set by the async socket handler */
    int                  sent_since_progress; /* see UCX_SRM_YIELD */
    unsigned             sent_since_receive; /* see UCX_SRM_DIRECT */
    uct_srm_node_lanes_t *lanes;        /* by node table entry, or NULL */
    size_t               direct_bulk_above; /* payloads larger take the
                                               bulk lane */
    uint8_t              *rx_frame;     /* a frame read from a lane */
    int                  errors_reported;
} uct_srm_iface_t;

typedef struct uct_srm_ep {
    uct_base_ep_t       super;
    ucs_list_link_t     list;          /* in iface->eps */
    uct_srm_tx_ring_t   *tx;
    uint32_t            dst_node;      /* agent-local node index */
    uint32_t            dst_port;
    uint32_t            dst_key;
    uint32_t            seq;
    ucs_arbiter_group_t pending;
    uint16_t            failed;        /* srm_shm_node_state_t of its node */
    int                 error_reported;
} uct_srm_ep_t;

/* srm_agent_conn.c */
ucs_status_t uct_srm_agent_connect(const uct_srm_md_t *md, int *fd_p);
/* Warns once, naming them, when settings this process sets differ from
 * those the running agent read when it started. */
void uct_srm_agent_check_settings(uct_srm_md_t *md);
ucs_status_t uct_srm_agent_attach(const uct_srm_md_t *md,
                                  const uct_srm_iface_config_t *config,
                                  uct_srm_attachment_t *att);
void uct_srm_agent_detach(uct_srm_attachment_t *att);

/* srm_md_mem.c */
/* One request and its reply on the md's connection (hold md->mem_lock);
 * fds received with the reply go to fds[0..*nfds) when fds is given. */
ucs_status_t uct_srm_md_call(uct_srm_md_t *md, const void *req,
                             size_t req_len, int fd, void *rep,
                             size_t rep_len, srm_msg_type_t rep_type,
                             int may_connect, int *fds, int *nfds);
ucs_status_t uct_srm_mem_alloc(uct_md_h tl_md, size_t *length_p,
                               void **address_p, ucs_memory_type_t mem_type,
                               unsigned flags, const char *alloc_name,
                               uct_mem_h *memh_p);
ucs_status_t uct_srm_mem_free(uct_md_h tl_md, uct_mem_h tl_memh);
ucs_status_t uct_srm_mkey_pack(uct_md_h md, uct_mem_h tl_memh,
                               const uct_md_mkey_pack_params_t *params,
                               void *rkey_buffer);
ucs_status_t uct_srm_rkey_unpack(uct_component_t *component,
                                 const void *rkey_buffer, uct_rkey_t *rkey_p,
                                 void **handle_p);
ucs_status_t uct_srm_rkey_release(uct_component_t *component, uct_rkey_t rkey,
                                  void *handle);

/* srm_rma_slots.c */
void uct_srm_rma_slots_init(uct_srm_rma_slots_t *slots);
void uct_srm_rma_slots_cleanup(uct_srm_rma_slots_t *slots);
/* A cookie for an RMA frame whose completion is comp (NULL allowed). */
ucs_status_t uct_srm_rma_slot_take(uct_srm_rma_slots_t *slots,
                                   uct_completion_t *comp, uint64_t *cookie_p);
/* The request of a cookie the agent echoed, released; UCS_ERR_NO_ELEM if
 * the cookie names no outstanding request of ours. */
ucs_status_t uct_srm_rma_slot_release(uct_srm_rma_slots_t *slots,
                                      uint64_t cookie,
                                      uct_completion_t **comp_p);

/* srm_flush.c */
/* Flushes what was sent on one TX ring (only), or on all (NULL): UCS_OK if
 * it has all left, else UCS_INPROGRESS with comp invoked later. */
ucs_status_t uct_srm_flush_start(uct_srm_iface_t *iface,
                                 const uct_srm_tx_ring_t *only,
                                 uct_completion_t *comp);
/* Completes the waiting flushes that can; how many. */
unsigned uct_srm_flush_progress(uct_srm_iface_t *iface);
/* For event_arm: 1 if flushes wait and none can complete yet (the agent
 * was asked to wake us), 0 otherwise. */
int uct_srm_flush_waiting(uct_srm_iface_t *iface);

/* srm_iface.c */
void uct_srm_iface_ring_doorbell(uct_srm_iface_t *iface);
void uct_srm_iface_report_errors(uct_srm_iface_t *iface);
void uct_srm_iface_check_nodes(uct_srm_iface_t *iface);

/* Whether our agent can dial the node whose agent listens at addr's wire:
 * valid addresses (srm_wire_addrs_are_valid) of the family ours uses. */
int uct_srm_iface_can_dial(const uct_srm_iface_t *iface,
                           const srm_iface_addr_t *addr);

/* srm_direct.c */
/* Writes an AM of at most max_length payload bytes (packed by pack) to
 * the ep's node directly: its length, or -1 if it must go to the ring.
 * With *packed set, the AM was packed there but the lane was retired in
 * between: the caller puts those bytes in the ring (pack runs once). */
ssize_t uct_srm_direct_send(uct_srm_iface_t *iface, uct_srm_ep_t *ep,
                            uint8_t am_id, uct_pack_callback_t pack,
                            void *arg, size_t max_length,
                            const void **packed);
/* Takes at most budget AMs for this port from the lanes' sockets and
 * hands them to their handlers; how many. */
unsigned uct_srm_direct_receive(uct_srm_iface_t *iface, unsigned budget);
/* An ep to the node was made: maps its lanes, so that this process reads
 * them even before it writes to them. */
void uct_srm_direct_prepare(uct_srm_iface_t *iface, uint32_t node);
/* This process is about to sleep: the agents read the lanes' sockets. */
void uct_srm_direct_stop_polling(uct_srm_iface_t *iface);
void uct_srm_direct_cleanup(uct_srm_iface_t *iface);

/* auto: a small message only when it spares a wakeup, with the agent
 * asleep, and only the first sends after a receive (a reply, a window's
 * worth); a bulk one always (srm_direct.c). */
static inline int uct_srm_direct_wanted(const uct_srm_iface_t *iface,
                                        size_t max_length)
{
    return (iface->config.direct == UCT_SRM_DIRECT_ALWAYS) ||
           ((iface->config.direct == UCT_SRM_DIRECT_AUTO) &&
            (max_length > iface->direct_bulk_above)) ||
           ((iface->config.direct == UCT_SRM_DIRECT_AUTO) &&
            (iface->sent_since_receive < SRM_LANE_DIRECT_BURST) &&
            srm_load_relaxed(&iface->ctl->agent_sleeping.value));
}

/* srm_ep.c */
UCS_CLASS_DECLARE_NEW_FUNC(uct_srm_ep_t, uct_ep_t, const uct_ep_params_t*);
UCS_CLASS_DECLARE_DELETE_FUNC(uct_srm_ep_t, uct_ep_t);
ucs_status_t uct_srm_ep_am_short(uct_ep_h tl_ep, uint8_t id, uint64_t header,
                                 const void *payload, unsigned length);
ucs_status_t uct_srm_ep_am_short_iov(uct_ep_h tl_ep, uint8_t id,
                                     const uct_iov_t *iov, size_t iovcnt);
ssize_t uct_srm_ep_am_bcopy(uct_ep_h tl_ep, uint8_t id,
                            uct_pack_callback_t pack_cb, void *arg,
                            unsigned flags);
ucs_status_t uct_srm_ep_am_zcopy(uct_ep_h tl_ep, uint8_t id,
                                 const void *header, unsigned header_length,
                                 const uct_iov_t *iov, size_t iovcnt,
                                 unsigned flags, uct_completion_t *comp);
ucs_status_t uct_srm_ep_put_zcopy(uct_ep_h tl_ep, const uct_iov_t *iov,
                                  size_t iovcnt, uint64_t remote_addr,
                                  uct_rkey_t rkey, uct_completion_t *comp);
ucs_status_t uct_srm_ep_get_zcopy(uct_ep_h tl_ep, const uct_iov_t *iov,
                                  size_t iovcnt, uint64_t remote_addr,
                                  uct_rkey_t rkey, uct_completion_t *comp);
void uct_srm_ep_rma_done(uct_srm_iface_t *iface, const void *payload,
                         size_t length);
ucs_status_t uct_srm_ep_pending_add(uct_ep_h tl_ep, uct_pending_req_t *req,
                                    unsigned flags);
void uct_srm_ep_pending_purge(uct_ep_h tl_ep, uct_pending_purge_callback_t cb,
                              void *arg);
ucs_status_t uct_srm_ep_flush(uct_ep_h tl_ep, unsigned flags,
                              uct_completion_t *comp);
ucs_status_t uct_srm_ep_fence(uct_ep_h tl_ep, unsigned flags);
ucs_status_t uct_srm_iface_fence(uct_iface_h tl_iface, unsigned flags);
ucs_status_t uct_srm_ep_check(uct_ep_h tl_ep, unsigned flags,
                              uct_completion_t *comp);
void uct_srm_ep_dispatch_pending(uct_srm_iface_t *iface);

#endif
