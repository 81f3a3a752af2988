/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Sends and receives that skip the agent: an active message to another
 * node is written by this process to the socket of its node's channel
 * (small, or bulk above LARGE_THRESH), through the channel's direct lane
 * (srm_lane_shared.h), when the lane is open, has room, and nothing of
 * this port to that node is still in its ring (nor, for a small one, may
 * still be in the bulk lane's log).
 * Everything else, and every send the lane cannot take at once, goes
 * through the ring as before.
 *
 * UCX_SRM_DIRECT=auto writes a small message directly only among the first
 * sends after a receive (SRM_LANE_DIRECT_BURST), while the agent sleeps
 * (requests, replies, a window of messages: where the agent's wakeup is
 * the cost); a longer stream stays in the ring, where the agent coalesces
 * it. A bulk message goes directly whenever its lane takes it: there is
 * nothing to coalesce, and the agents' work per byte is what bounds the
 * bulk channel.
 *
 * With UCX_SRM_DIRECT_RECV, progress also reads the sockets of the lanes
 * this process mapped: the frames at the head of one that are AMs for
 * this port, next in order, with nothing of this port still in its ring,
 * are taken from the socket here (and acks, for the agent). While
 * processes poll a lane the agent does not listen to its socket, so the
 * message wakes nobody; a frame left for the agent comes with a kick, and
 * so does going to sleep (uct_srm_direct_stop_polling).
 */
#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "srm_uct.h"

#include <ucx_srm/common/srm_lane_shared.h>

#include <ucs/debug/log.h>
#include <ucs/debug/memtrack.h>
#include <ucs/sys/math.h>

#include <errno.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

typedef enum {
    UCT_SRM_LANE_UNASKED = 0,
    UCT_SRM_LANE_NONE,     /* the agent said no: never ask again */
    UCT_SRM_LANE_MAPPED
} uct_srm_lane_state_t;

/* Polls of a lane between two marks in its rx_polls: far fewer than a
 * poller makes in SRM_LANE_POLL_STALE_MS. */
#define UCT_SRM_POLLS_PER_MARK 16

/* Progress calls between two looks at a bulk lane's socket while looks
 * find nothing there: each look is a system call, and every progress call
 * looking at both lanes halved the small-message rate; a bulk frame takes
 * longer to arrive than these calls. */
#define UCT_SRM_BULK_LOOK_EVERY 8

/* A first look at a lane's socket: a few small frames. Only a frame of
 * ours that does not fit makes it look again, at up to the whole
 * rx_frame: most looks find a frame of another process, or nothing. */
#define UCT_SRM_RX_FIRST_PEEK  1024

/* This process's view of one node's lane of one channel. */
struct uct_srm_lane {
    uct_srm_lane_state_t state;
    srm_lane_t           *shm;
    uint32_t             log_size;   /* as mapped */
    int                  fd;         /* the channel's socket, or -1 */
    uint32_t             generation; /* of fd */
    uint32_t             asked;      /* the generation last asked for */
    int                  polling;    /* counted in the lane's rx_pollers */
    unsigned             polls;      /* its own: every UCT_SRM_POLLS_PER_MARK
                                        of them move rx_polls */
    int                  left;       /* its head is another's: wait for
                                        rx_changes to move from left_at */
    uint32_t             left_at;
    unsigned             idle_looks; /* in a row that found nothing */
};

/* This process's lanes to one node. */
struct uct_srm_node_lanes {
    uct_srm_lane_t       lane[SRM_CHANNEL_KINDS];
    int                  last_kind;    /* of the last frame this port wrote
                                          directly to the node, or -1 */
    uint32_t             last_absorbs; /* that lane's absorbs then: until it
                                          moves, the frame may be in its
                                          log, and one of the other lane
                                          would be taken before it */
    int                  wrote;        /* a frame directly, ever: only then
                                          does this process read the small
                                          lane (a receiver that never
                                          replies is served faster by the
                                          agent's batches into its ring) */
};

/* Asks the agent for a lane, or for its current socket. */
static void uct_srm_direct_ask(uct_srm_iface_t *iface, uint32_t node,
                               int kind, uct_srm_lane_t *lane)
{
    uct_srm_md_t *md = ucs_derived_of(iface->super.md, uct_srm_md_t);
    int fds[SRM_PROTO_MAX_FDS];
    srm_lane_req_t req;
    srm_lane_rep_t rep;
    ucs_status_t status;
    int nfds = 2, i;

    memset(&req, 0, sizeof(req));
    srm_msg_hdr_init(&req.hdr, SRM_MSG_LANE_REQ);
    req.port = iface->agent.port;
    req.key  = iface->agent.key;
    req.node    = node;
    req.channel = (uint32_t)kind;
    pthread_mutex_lock(&md->mem_lock);
    status = uct_srm_md_call(md, &req, sizeof(req), -1, &rep, sizeof(rep),
                             SRM_MSG_LANE_REP, 1, fds, &nfds);
    pthread_mutex_unlock(&md->mem_lock);
    if ((status != UCS_OK) || (rep.status != 0)) {
        if (status == UCS_OK) {
            rep.error[sizeof(rep.error) - 1] = '\0';
        }
        ucs_diag("srm: port %u: %s messages to node entry %u go through "
                 "the agent: %s", iface->agent.port,
                 (kind == SRM_CHANNEL_SMALL) ? "small" : "bulk", node,
                 (status != UCS_OK) ? ucs_status_string(status) : rep.error);
        for (i = 0; i < nfds; ++i) {
            close(fds[i]);
        }
        if (lane->state == UCT_SRM_LANE_UNASKED) {
            lane->state = UCT_SRM_LANE_NONE;
        }
        return;
    }

    if ((lane->state == UCT_SRM_LANE_UNASKED) && (nfds > 0)) {
        if (srm_lane_map(fds[0], &lane->shm, &lane->log_size) != 0) {
            ucs_diag("srm: port %u: cannot map the lane to node entry %u: "
                     "%m", iface->agent.port, node);
            lane->state = UCT_SRM_LANE_NONE;
        } else if (srm_load_relaxed(&lane->shm->channel) != (uint32_t)kind) {
            ucs_diag("srm: port %u: the agent passed a lane of another "
                     "channel for node entry %u", iface->agent.port, node);
            srm_lane_unmap(lane->shm, lane->log_size);
            lane->state = UCT_SRM_LANE_NONE;
        } else {
            lane->state = UCT_SRM_LANE_MAPPED;
        }
    }
    if (nfds > 0) {
        close(fds[0]);
    }
    lane->asked = rep.generation;
    if (nfds > 1) {
        if (lane->fd >= 0) {
            close(lane->fd);
        }
        lane->fd         = fds[1];
        lane->generation = rep.generation;
    }
    ucs_debug("srm: port %u: lane to node entry %u generation %u%s%s",
              iface->agent.port, node, rep.generation,
              (nfds > 1) ? ", socket passed" : "", rep.open ? ", open" : "");
}

/* The agent retired the lane (a writer held it too long): forget it and
 * its socket, to ask for the new one. */
static void uct_srm_direct_forget(uct_srm_iface_t *iface, uint32_t node,
                                  int kind, uct_srm_lane_t *lane)
{
    uct_srm_node_lanes_t *lanes = &iface->lanes[node];

    ucs_diag("srm: port %u: the agent retired the lane to node entry %u; "
             "asking for a new one", iface->agent.port, node);
    if (lanes->last_kind == kind) {
        lanes->last_kind = -1; /* the agent took its log as it retired it */
    }
    srm_lane_unmap(lane->shm, lane->log_size);
    lane->shm     = NULL;
    lane->polling = 0; /* the new lane counts its own pollers */
    if (lane->fd >= 0) {
        close(lane->fd);
        lane->fd = -1;
    }
    lane->state = UCT_SRM_LANE_UNASKED;
}

/* Whether the lane's socket is of its current generation: asks for the
 * new one once per generation. */
static int uct_srm_direct_socket_current(uct_srm_iface_t *iface,
                                         uint32_t node, int kind,
                                         uct_srm_lane_t *lane)
{
    uint32_t generation = srm_load_relaxed(&lane->shm->generation);

    if ((lane->fd >= 0) && (generation == lane->generation)) {
        return 1;
    } else if (generation == lane->asked) {
        return 0; /* asked already; it had no socket to give */
    }
    uct_srm_direct_ask(iface, node, kind, lane);
    return (lane->fd >= 0) && (lane->generation == generation);
}

/* This process's lanes, allocated on first use; NULL if out of memory. */
static uct_srm_node_lanes_t *uct_srm_direct_lanes(uct_srm_iface_t *iface)
{
    unsigned i;
    int kind;

    if (iface->lanes != NULL) {
        return iface->lanes;
    }
    iface->lanes = ucs_calloc(SRM_SHM_MAX_NODES, sizeof(*iface->lanes),
                              "srm_lanes");
    if (iface->lanes == NULL) {
        iface->config.direct = UCT_SRM_DIRECT_NO;
        return NULL;
    }
    if (iface->config.direct_recv) {
        iface->rx_frame = ucs_malloc(UCT_SRM_RX_FRAME_SIZE, "srm_rx_frame");
        if (iface->rx_frame == NULL) {
            iface->config.direct_recv = 0;
        }
    }
    for (i = 0; i < SRM_SHM_MAX_NODES; ++i) {
        iface->lanes[i].last_kind = -1;
        for (kind = 0; kind < SRM_CHANNEL_KINDS; ++kind) {
            iface->lanes[i].lane[kind].fd = -1;
        }
    }
    return iface->lanes;
}

/* Maps the node's lane of the channel, if not yet: the state it is in. */
static uct_srm_lane_state_t uct_srm_direct_map(uct_srm_iface_t *iface,
                                               uint32_t node, int kind)
{
    uct_srm_lane_t *lane = &iface->lanes[node].lane[kind];

    if ((lane->state == UCT_SRM_LANE_MAPPED) &&
        srm_load_acquire(&lane->shm->retired)) {
        uct_srm_direct_forget(iface, node, kind, lane);
    }
    if (lane->state == UCT_SRM_LANE_UNASKED) {
        uct_srm_direct_ask(iface, node, kind, lane);
        if ((lane->state == UCT_SRM_LANE_MAPPED) &&
            (kind == SRM_CHANNEL_SMALL)) {
            iface->direct_bulk_above =
                    srm_load_relaxed(&lane->shm->bulk_above);
        }
    }
    return lane->state;
}

void uct_srm_direct_prepare(uct_srm_iface_t *iface, uint32_t node)
{
    if ((node == 0) || (iface->config.direct == UCT_SRM_DIRECT_NO) ||
        (uct_srm_direct_lanes(iface) == NULL) ||
        (uct_srm_direct_map(iface, node, SRM_CHANNEL_SMALL) !=
         UCT_SRM_LANE_MAPPED) ||
        !iface->config.direct_bulk) {
        return;
    }
    uct_srm_direct_map(iface, node, SRM_CHANNEL_BULK);
}

/*
 * The lane to the node for a frame of max_length payload bytes, with a
 * socket of the current generation, or NULL. Asking for the small lane
 * asks for the bulk one too, so that this process reads both.
 */
static uct_srm_lane_t *uct_srm_direct_lane(uct_srm_iface_t *iface,
                                           uint32_t node, size_t max_length,
                                           int *kind_p)
{
    uct_srm_lane_t *lane;
    int kind;

    if ((node == 0) || (uct_srm_direct_lanes(iface) == NULL) ||
        (uct_srm_direct_map(iface, node, SRM_CHANNEL_SMALL) !=
         UCT_SRM_LANE_MAPPED)) {
        return NULL; /* this node (rings only), or no lanes */
    }
    kind = (max_length > iface->direct_bulk_above) ? SRM_CHANNEL_BULK :
                                                     SRM_CHANNEL_SMALL;
    if ((!iface->config.direct_bulk ||
         (uct_srm_direct_map(iface, node, SRM_CHANNEL_BULK) !=
          UCT_SRM_LANE_MAPPED)) &&
        (kind == SRM_CHANNEL_BULK)) {
        return NULL;
    }
    lane = &iface->lanes[node].lane[kind];
    if (!srm_load_acquire(&lane->shm->open) ||
        !uct_srm_direct_socket_current(iface, node, kind, lane)) {
        return NULL;
    }
    *kind_p = kind;
    return lane;
}

/* Whether every frame this port put in the ring has reached a channel
 * (the agent may still keep some there until they are acknowledged). */
static int uct_srm_direct_ring_idle(const uct_srm_ep_t *ep)
{
    const srm_ring_t *ring = &ep->tx->ring;

    return srm_load_acquire(&ring->shared->passed) == ring->local;
}

/* The agent wakes for the lane: to absorb a full log, or write the rest. */
static void uct_srm_direct_kick(uct_srm_iface_t *iface, srm_lane_t *shm)
{
    srm_store_relaxed(&shm->kick, 1);
    uct_srm_iface_ring_doorbell(iface); /* fences before it looks */
}

/*
 * Whether a small frame must wait because this port's last direct frame to
 * the node, a bulk one, may still be in the bulk lane's log: the agent
 * takes the small lane's log first, and would find this frame ahead of
 * that one in the port's order. The agent is kicked to take that log. (A
 * bulk frame after a small one needs no wait: that order is the agent's.)
 */
static int uct_srm_direct_other_pending(uct_srm_iface_t *iface,
                                        uint32_t node, int kind)
{
    uct_srm_node_lanes_t *lanes = &iface->lanes[node];
    uct_srm_lane_t *other;

    if ((lanes->last_kind != SRM_CHANNEL_BULK) ||
        (kind != SRM_CHANNEL_SMALL)) {
        return 0;
    }
    other = &lanes->lane[lanes->last_kind];
    if ((other->state != UCT_SRM_LANE_MAPPED) ||
        (srm_load_acquire(&other->shm->absorbs) != lanes->last_absorbs)) {
        lanes->last_kind = -1;
        return 0;
    }
    uct_srm_direct_kick(iface, other->shm);
    return 1;
}

/* The log bytes a frame of record bytes may take: none if it does not fit
 * within the log and the room the agent leaves writers. */
static int uct_srm_direct_log_fits(const uct_srm_lane_t *lane,
                                   uint32_t log_len, size_t record)
{
    uint32_t room  = srm_load_relaxed(&lane->shm->room);
    uint32_t limit = (room < lane->log_size) ? room : lane->log_size;

    return (record <= limit) && (log_len <= limit - record);
}

ssize_t uct_srm_direct_send(uct_srm_iface_t *iface, uct_srm_ep_t *ep,
                            uint8_t am_id, uct_pack_callback_t pack,
                            void *arg, size_t max_length,
                            const void **packed)
{
    size_t record = sizeof(srm_frame_hdr_t) + max_length;
    uct_srm_lane_t *lane;
    srm_frame_hdr_t hdr;
    srm_lane_t *shm;
    uint8_t *frame;
    size_t length, size;
    ssize_t sent;
    uint32_t log_len;
    int kick, ret, kind;

    lane = uct_srm_direct_lane(iface, ep->dst_node, max_length, &kind);
    if ((lane == NULL) || !uct_srm_direct_ring_idle(ep) ||
        uct_srm_direct_other_pending(iface, ep->dst_node, kind)) {
        return -1;
    }
    shm = lane->shm;
    if ((max_length > srm_load_relaxed(&shm->max_payload)) ||
        srm_load_relaxed(&shm->agent_waits)) {
        return -1;
    }
    ret = srm_lane_trylock(shm);
    if (ret != 0) {
        if (ret > 0) {
            srm_lane_unlock(shm); /* a writer died: the agent mends it */
            uct_srm_direct_kick(iface, shm);
        }
        return -1;
    }
    log_len = srm_load_relaxed(&shm->log_len);
    if (!shm->open || (shm->generation != lane->generation) ||
        !uct_srm_direct_log_fits(lane, log_len, record)) {
        /* A full log waits for the agent; a full window for acks, which
         * the agent reads itself (ack_wanted). */
        kick = shm->open && (log_len > lane->log_size / 2);
        srm_lane_unlock(shm);
        if (kick) {
            uct_srm_direct_kick(iface, shm);
        }
        return -1;
    }

    /* Into the log first: should this process die in the write, the
     * agent still has the whole frame to resend. */
    frame  = shm->log + log_len;
    length = pack(frame + sizeof(hdr), arg);
    ucs_assertv(length <= max_length, "length=%zu", length);
    srm_frame_hdr_init(&hdr, SRM_FRAME_AM, (uint32_t)length);
    hdr.src_port = iface->agent.port;
    hdr.dst_port = ep->dst_port;
    hdr.dst_key  = ep->dst_key;
    hdr.chan_seq = shm->next_chan_seq;
    hdr.am_id    = am_id;
    hdr.seq      = iface->ctl->node_seq[ep->dst_node];
    memcpy(frame, &hdr, sizeof(hdr));
    size           = sizeof(hdr) + length;
    shm->unwritten = (uint32_t)size;
    if (srm_lane_append(shm, (uint32_t)size) != 0) {
        /* Retired while this process held the lock: the agent did not
         * take the frame. Its bytes stay mapped until the lane is
         * forgotten, at the next send. */
        srm_lane_unlock(shm);
        *packed = frame + sizeof(hdr);
        return (ssize_t)length;
    }
    shm->next_chan_seq++;
    iface->ctl->node_seq[ep->dst_node]++;
    iface->lanes[ep->dst_node].wrote        = 1;
    iface->lanes[ep->dst_node].last_kind    = kind;
    iface->lanes[ep->dst_node].last_absorbs = srm_load_relaxed(&shm->absorbs);

    sent = send(lane->fd, frame, size, MSG_DONTWAIT | MSG_NOSIGNAL);
    if (sent < 0) {
        sent = 0; /* the agent sees the error on its side, or room later */
    }
    shm->unwritten = (uint32_t)(size - (size_t)sent);
    kick           = (shm->unwritten > 0) ||
                     (shm->log_len > lane->log_size / 2);
    if (shm->unwritten > 0) {
        shm->open = 0; /* mid-frame: only the agent may go on */
    }
    srm_lane_unlock(shm);
    if (kick) {
        uct_srm_direct_kick(iface, shm);
    }
    ++ep->seq;
    return (ssize_t)length;
}

/* Whether a frame from src_port with seq is the next the agent expects;
 * the entry to move on, or NULL. */
static srm_lane_rx_port_t *uct_srm_direct_rx_port(srm_lane_t *shm,
                                                  uint32_t src_port,
                                                  uint32_t seq)
{
    uint32_t n = shm->rx_num_ports, i;

    for (i = 0; (i < n) && (i < SRM_LANE_RX_PORTS); ++i) {
        if (shm->rx_ports[i].src_port == src_port) {
            return (shm->rx_ports[i].expected == seq) ? &shm->rx_ports[i] :
                                                        NULL;
        }
    }
    return NULL;
}

/* What this process may do with the frame at the head of a lane. */
typedef enum {
    UCT_SRM_RX_LEAVE,  /* the agent's to read */
    UCT_SRM_RX_WAIT,   /* ours, not whole yet */
    UCT_SRM_RX_AM,     /* ours: take it and hand it on */
    UCT_SRM_RX_ACK,    /* an ack the agent does not wait for: take it
                          for the agent to apply later */
} uct_srm_rx_verdict_t;

static uct_srm_rx_verdict_t
uct_srm_direct_judge(uct_srm_iface_t *iface, srm_lane_t *shm,
                     const srm_frame_hdr_t *hdr, srm_frame_status_t status,
                     size_t size, srm_lane_rx_port_t **entry_p)
{
    if (status != SRM_FRAME_OK) {
        return UCT_SRM_RX_LEAVE;
    } else if ((hdr->type == SRM_FRAME_ACK) && (hdr->length == 0) &&
               !srm_load_relaxed(&shm->ack_wanted)) {
        return (size > 0) ? UCT_SRM_RX_ACK : UCT_SRM_RX_WAIT;
    } else if ((hdr->type != SRM_FRAME_AM) ||
               (hdr->dst_port != iface->agent.port) ||
               (hdr->dst_key != iface->agent.key) ||
               (hdr->chan_seq != shm->rx_expected)) {
        return UCT_SRM_RX_LEAVE;
    }
    *entry_p = uct_srm_direct_rx_port(shm, hdr->src_port, hdr->seq);
    if (*entry_p == NULL) {
        return UCT_SRM_RX_LEAVE;
    } else if (size > 0) {
        return UCT_SRM_RX_AM;
    }
    /* A frame larger than rx_frame never comes whole here. */
    return ((sizeof(*hdr) + hdr->length) > UCT_SRM_RX_FRAME_SIZE) ?
                   UCT_SRM_RX_LEAVE : UCT_SRM_RX_WAIT;
}

/*
 * Peeks at the head of the lane's socket into rx_frame: a first look of
 * UCT_SRM_RX_FIRST_PEEK, and a longer one only when the frame at the head
 * is ours, does not fit in the first, and the socket holds it whole (a
 * bulk frame arrives over many reads: copying it again on every look
 * would cost more than the frame). How many bytes, or -1.
 */
static ssize_t uct_srm_direct_peek(uct_srm_iface_t *iface, uct_srm_lane_t *lane)
{
    srm_lane_rx_port_t *entry;
    srm_frame_status_t status;
    srm_frame_hdr_t hdr;
    size_t size;
    ssize_t got;
    int avail;

    got = recv(lane->fd, iface->rx_frame, UCT_SRM_RX_FIRST_PEEK,
               MSG_PEEK | MSG_DONTWAIT);
    if (got < UCT_SRM_RX_FIRST_PEEK) {
        return got;
    }
    status = srm_frame_next(iface->rx_frame, (size_t)got, &hdr, &size);
    if ((uct_srm_direct_judge(iface, lane->shm, &hdr, status, size, &entry) !=
         UCT_SRM_RX_WAIT) ||
        (sizeof(hdr) + hdr.length <= UCT_SRM_RX_FIRST_PEEK) ||
        (ioctl(lane->fd, FIONREAD, &avail) != 0) ||
        ((size_t)avail < sizeof(hdr) + hdr.length)) {
        return got;
    }
    return recv(lane->fd, iface->rx_frame,
                ucs_min((size_t)avail, UCT_SRM_RX_FRAME_SIZE),
                MSG_PEEK | MSG_DONTWAIT); /* ours, larger, and whole */
}

/*
 * Under the lane's lock: takes the frames at the head of the lane's socket
 * that are this process's to take, at most budget AMs. Returns how many
 * bytes of them are in iface->rx_frame (0: none taken); *kick when the
 * agent has to look at the lane.
 */
static size_t uct_srm_direct_take_locked(uct_srm_iface_t *iface,
                                         uct_srm_lane_t *lane,
                                         unsigned budget, int *kick)
{
    srm_lane_t *shm = lane->shm;
    uint32_t taken  = srm_load_relaxed(&shm->rx_taken);
    uct_srm_rx_verdict_t verdict = UCT_SRM_RX_WAIT;
    srm_lane_rx_port_t *entry;
    uint32_t frames = 0, bytes = 0;
    size_t offset   = 0, size;
    srm_frame_status_t status;
    srm_frame_hdr_t hdr;
    unsigned ams    = 0;
    ssize_t got;

    if (!shm->rx_open || (shm->generation != lane->generation) ||
        srm_ring_has_data(&iface->rx) || (taken >= SRM_LANE_RX_LOG)) {
        *kick = (taken >= SRM_LANE_RX_LOG);
        return 0; /* the agent reads it, or delivered first */
    }
    got = uct_srm_direct_peek(iface, lane);
    if (got < (ssize_t)sizeof(hdr)) {
        return 0;
    }

    /* The hints move as frames are taken: the agent publishes its own
     * count again whenever it lets go of the lane, so a failure below
     * leaves nothing wrong behind. */
    while ((ams < budget) && ((taken + frames) < SRM_LANE_RX_LOG)) {
        entry   = NULL;
        status  = srm_frame_next(iface->rx_frame + offset, (size_t)got - offset,
                                 &hdr, &size);
        verdict = ((size_t)got - offset < sizeof(hdr)) ? UCT_SRM_RX_WAIT :
                  uct_srm_direct_judge(iface, shm, &hdr, status, size, &entry);
        if ((verdict == UCT_SRM_RX_LEAVE) || (verdict == UCT_SRM_RX_WAIT)) {
            break;
        }
        shm->rx_log[taken + frames++] = hdr;
        offset += size;
        if (verdict == UCT_SRM_RX_AM) {
            shm->rx_expected++;
            entry->expected++;
            bytes += hdr.length;
            ++ams;
        }
    }
    /* A frame left in the socket is the agent's to read, and it may not
     * be listening; until someone takes it, looking again is for nothing. */
    if (verdict == UCT_SRM_RX_LEAVE) {
        *kick         = 1;
        lane->left    = 1;
        lane->left_at = shm->rx_changes + frames;
    }
    if (frames == 0) {
        return 0;
    }

    /* They are all queued and only the lock holder reads: this takes
     * them, without copying them again. */
    got = recv(lane->fd, NULL, offset, MSG_TRUNC | MSG_DONTWAIT);
    if (got != (ssize_t)offset) {
        /* Never seen; the stream is no longer at a frame boundary, so
         * only the agent may go on (it resets the connection). */
        ucs_diag("srm: port %u: took %zd of %zu bytes of frames from a lane",
                 iface->agent.port, got, offset);
        shm->rx_open = 0;
        *kick        = 1;
        return 0;
    }
    if (srm_lane_record_taken(shm, frames) != 0) {
        return 0; /* retired under us: they come again, through the agent */
    }
    shm->rx_changes     += frames;
    shm->rx_taken_bytes += bytes;
    /* The agent books and acknowledges them now and then, or their
     * senders run out of room. */
    *kick = *kick ||
            ((taken + frames) >= SRM_LANE_RX_KICK_FRAMES) ||
            (shm->rx_taken_bytes >= srm_load_relaxed(&shm->rx_kick_bytes));
    return offset;
}

/* Hands the AMs of frames [0, length) of iface->rx_frame on; how many. */
static unsigned uct_srm_direct_dispatch(uct_srm_iface_t *iface, size_t length)
{
    unsigned count = 0;
    srm_frame_hdr_t hdr;
    size_t offset;
    uint8_t *payload;

    for (offset = 0; offset < length;
         offset += sizeof(hdr) + hdr.length) {
        memcpy(&hdr, iface->rx_frame + offset, sizeof(hdr));
        if (hdr.type != SRM_FRAME_AM) {
            continue;
        }
        payload = iface->rx_frame + offset + sizeof(hdr);
        uct_iface_trace_am(&iface->super, UCT_AM_TRACE_TYPE_RECV, hdr.am_id,
                           payload, hdr.length, "RX: AM port %u (direct)",
                           hdr.src_port);
        uct_iface_invoke_am(&iface->super, hdr.am_id, payload, hdr.length, 0);
        ++count;
    }
    return count;
}

/* Takes what is this process's from one lane's socket and hands it on;
 * how many AMs. */
static unsigned uct_srm_direct_receive_lane(uct_srm_iface_t *iface,
                                            uint32_t node, int kind,
                                            unsigned budget)
{
    uct_srm_lane_t *lane = &iface->lanes[node].lane[kind];
    size_t length;
    int kick, ret;

    if ((lane->state != UCT_SRM_LANE_MAPPED) ||
        srm_load_relaxed(&lane->shm->retired) ||
        ((kind == SRM_CHANNEL_SMALL) && !iface->lanes[node].wrote)) {
        return 0;
    }
    if (!uct_srm_direct_socket_current(iface, node, kind, lane)) {
        return 0; /* not counted as polling: the agent listens after a
                     while */
    }
    if (!lane->polling) {
        __atomic_fetch_add(&lane->shm->rx_pollers, 1, __ATOMIC_RELAXED);
        lane->polling = 1;
    }
    if ((++lane->polls % UCT_SRM_POLLS_PER_MARK) == 0) {
        /* Now and then: every poller of the node shares the line. */
        __atomic_fetch_add(&lane->shm->rx_polls, 1, __ATOMIC_RELAXED);
    }
    if (!srm_load_acquire(&lane->shm->rx_open) ||
        srm_load_relaxed(&lane->shm->agent_waits) ||
        (lane->left &&
         (srm_load_relaxed(&lane->shm->rx_changes) == lane->left_at))) {
        return 0; /* the agent is reading it, or will */
    }
    if ((kind == SRM_CHANNEL_BULK) && (lane->idle_looks > 0) &&
        ((lane->polls % UCT_SRM_BULK_LOOK_EVERY) != 0)) {
        return 0;
    }
    lane->left = 0;
    ret = srm_lane_trylock(lane->shm);
    if (ret != 0) {
        if (ret > 0) {
            srm_lane_unlock(lane->shm); /* the agent mends it */
            uct_srm_direct_kick(iface, lane->shm);
        }
        return 0;
    }
    kick   = 0;
    length = uct_srm_direct_take_locked(iface, lane, budget, &kick);
    srm_lane_unlock(lane->shm);
    lane->idle_looks = (length > 0) ? 0 : (lane->idle_looks + 1);
    if (kick) {
        uct_srm_direct_kick(iface, lane->shm);
    }
    /* Outside the lock: a handler may send through this lane. */
    return uct_srm_direct_dispatch(iface, length);
}

unsigned uct_srm_direct_receive(uct_srm_iface_t *iface, unsigned budget)
{
    unsigned count = 0;
    uint32_t node;
    int kind;

    for (node = 1; (node < iface->num_nodes) && (count < budget); ++node) {
        for (kind = 0; (kind < SRM_CHANNEL_KINDS) && (count < budget);
             ++kind) {
            count += uct_srm_direct_receive_lane(iface, node, kind,
                                                 budget - count);
        }
    }
    return count;
}

void uct_srm_direct_stop_polling(uct_srm_iface_t *iface)
{
    uct_srm_lane_t *lane;
    uint32_t node;
    int kind;

    if (iface->lanes == NULL) {
        return;
    }
    for (node = 1; node < iface->num_nodes; ++node) {
        for (kind = 0; kind < SRM_CHANNEL_KINDS; ++kind) {
            lane = &iface->lanes[node].lane[kind];
            if ((lane->state != UCT_SRM_LANE_MAPPED) || !lane->polling) {
                continue;
            }
            __atomic_fetch_sub(&lane->shm->rx_pollers, 1, __ATOMIC_RELAXED);
            lane->polling = 0;
            if (srm_load_relaxed(&lane->shm->rx_agent_deaf)) {
                uct_srm_direct_kick(iface, lane->shm); /* listen again */
            }
        }
    }
}

void uct_srm_direct_cleanup(uct_srm_iface_t *iface)
{
    uct_srm_lane_t *lane;
    unsigned i;
    int kind;

    if (iface->lanes == NULL) {
        return;
    }
    uct_srm_direct_stop_polling(iface);
    for (i = 0; i < SRM_SHM_MAX_NODES; ++i) {
        for (kind = 0; kind < SRM_CHANNEL_KINDS; ++kind) {
            lane = &iface->lanes[i].lane[kind];
            if (lane->fd >= 0) {
                close(lane->fd);
            }
            if (lane->state == UCT_SRM_LANE_MAPPED) {
                srm_lane_unmap(lane->shm, lane->log_size);
            }
        }
    }
    ucs_free(iface->lanes);
    iface->lanes = NULL;
    ucs_free(iface->rx_frame);
    iface->rx_frame = NULL;
}
