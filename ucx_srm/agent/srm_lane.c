/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The agent's side of the direct lanes (srm_lane_shared.h): one per remote
 * node and channel, on the tcp wire, made when a client first asks.
 *
 * Every change the agent makes to a channel's sending state, every write
 * to its socket, every read from the node's links and every change to the
 * node's receive order happens between srm_lane_enter and srm_lane_leave.
 * Enter takes the locks of the node's lanes (small, then bulk: clients
 * only ever try one) and absorbs what clients wrote and read directly, so
 * the channels' streams are whole again (the small log first: a client
 * writes a small frame after a bulk one only once the bulk log it went to
 * was taken, so each port's frames come in its order); leave decides whether clients may
 * write (open) and read (rx_open), publishes what they need to check the
 * order, and lets go. They nest: closing a link inside a write closes it
 * inside the same locks. Both lanes are held together because the receive
 * order spans both channels: a frame taken from one moves what the
 * clients of the other check against.
 */
#define _GNU_SOURCE
#include "srm_agent.h"

#include <ucx_srm/common/srm_lane_shared.h>
#include <ucx_srm/common/srm_log.h>

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

static void srm_lane_set_polled(srm_agent_t *agent, srm_link_t *link,
                                int polled);

/* The client's node table entry for node whose lane it asked for, or 0:
 * only such a client may write to the lane or read from it. */
static uint32_t srm_lane_entry_of(const srm_client_t *client,
                                  const srm_node_t *node)
{
    uint32_t idx;

    for (idx = 1; idx < SRM_SHM_MAX_NODES; ++idx) {
        if ((client->node_map[idx] == node->index + 1) &&
            client->node_seq_shared[idx]) {
            return idx;
        }
    }
    return 0;
}

/*
 * Books one frame a client recorded as read (a copy: the log is shared).
 * A client reads only AMs for its own port, so an AM for a port without
 * the lane was recorded by another: nobody can be blamed. One for a
 * holder that is not next in the channel's order is its reader's fault.
 */
static ucs_status_t srm_lane_book_rx(srm_agent_t *agent, srm_node_t *node,
                                     int kind, const srm_frame_hdr_t *hdr)
{
    srm_client_t *reader;

    if (hdr->type == SRM_FRAME_AM) {
        reader = srm_client_lookup_attached(agent, hdr->dst_port);
        if ((reader == NULL) || (srm_lane_entry_of(reader, node) == 0) ||
            ((kind == SRM_CHANNEL_SMALL) &&
             (hdr->length > srm_channel_small_max(agent)))) {
            return UCS_ERR_INVALID_PARAM;
        }
        if (srm_channel_taken(agent, node, kind, hdr) != UCS_OK) {
            srm_client_fail(agent, reader, "it recorded a frame it read "
                                           "directly that was not the "
                                           "next in the channel's order");
            return UCS_ERR_INVALID_PARAM;
        }
        return UCS_OK;
    }
    return srm_channel_taken(agent, node, kind, hdr);
}

/*
 * Books the frames clients read themselves, up to `taken` of the log, each
 * checked as copied: a bad record is skipped (the frame it stands for is
 * not acknowledged, so its sender resends it), the records after it still
 * count (their frames were delivered). How many were bad; all of them when
 * the count is impossible.
 */
static uint32_t srm_lane_absorb_rx(srm_agent_t *agent, srm_node_t *node,
                                   int kind, uint32_t taken)
{
    srm_frame_hdr_t copy[SRM_LANE_RX_LOG];
    srm_link_t *link = node->lanes[kind].link;
    uint32_t i, bad  = 0;

    if (taken > SRM_LANE_RX_LOG) {
        return taken;
    }
    memcpy(copy, node->lanes[kind].shm->rx_log, taken * sizeof(copy[0]));
    for (i = 0; i < taken; ++i) {
        bad += (srm_lane_book_rx(agent, node, kind, &copy[i]) != UCS_OK);
    }
    if ((taken > bad) && (link != NULL)) {
        link->last_rx = srm_agent_now(); /* its peer is alive */
    }
    return bad;
}

/*
 * What the link's socket holds is no longer known to be whole frames: it
 * must go, and a new link starts again from the oldest unacknowledged frame.
 * Not closed here: enter runs inside the agent's own uses of that link
 * (writes, heartbeats, its close), which would go on with it freed. Shut
 * down, it is closed by its own read or write, as after a reset.
 */
static void srm_lane_shut_link(srm_agent_t *agent, srm_node_t *node,
                               srm_link_t *link, const char *why)
{
    if (link->lane_shut) {
        return;
    }
    srm_warn("node %u: %s; resetting its %s channel's connection",
             node->index, why, srm_node_kind_name(link->kind));
    link->lane_shut = 1;
    srm_lane_set_polled(agent, link, 0);
    shutdown(link->conn.fd, SHUT_RDWR);
}

ucs_status_t srm_lane_check_writer(srm_agent_t *agent, srm_node_t *node,
                                   const srm_frame_hdr_t *hdr)
{
    /* A writer that exited right after its write still wrote it. */
    srm_client_t *client = srm_client_lookup_attached(agent, hdr->src_port);
    uint32_t idx;

    if (client == NULL) {
        return UCS_ERR_INVALID_PARAM; /* gone since, or never ours */
    }
    idx = srm_lane_entry_of(client, node);
    if (idx == 0) {
        /* a port without the lane could not write it */
        return UCS_ERR_INVALID_PARAM;
    }
    if (hdr->seq != client->node_seq[idx]) {
        /* The count stays: the peer took no frame of this number, and
         * PORT_GONE will say where the port's frames ended. */
        srm_client_fail(agent, client, "it wrote a frame to another node "
                                       "directly out of its port's order");
        return UCS_ERR_INVALID_PARAM;
    }
    client->node_seq[idx]++;
    return UCS_OK;
}

/* The AMs in the first len bytes of the log, read header by header. */
static uint64_t srm_lane_count_logged(const srm_lane_t *lane, uint32_t len)
{
    uint64_t frames = 0;
    srm_frame_hdr_t hdr;
    uint32_t offset;

    for (offset = 0; len - offset >= sizeof(hdr);
         offset += sizeof(hdr) + hdr.length) {
        memcpy(&hdr, lane->log + offset, sizeof(hdr));
        if (hdr.length > len - offset - sizeof(hdr)) {
            break;
        }
        frames += (hdr.type == SRM_FRAME_AM);
    }
    return frames;
}

/* Takes the frames of the log into the channel: why the connection must be
 * reset, or NULL. */
static const char *srm_lane_take_log(srm_agent_t *agent, srm_node_t *node,
                                     int kind, uint32_t len,
                                     uint32_t unwritten)
{
    srm_lane_t *lane    = node->lanes[kind].shm;
    srm_channel_t *chan = &node->chan[kind];
    srm_absorb_result_t result = {0};

    if (node->state == SRM_NODE_INVALID) {
        /* Logged by a process that took the lock before the node failed:
         * nothing goes to it again, so they are counted as dropped, and
         * the node keeps no queue (found by fuzz_wire). */
        node->dropped += srm_lane_count_logged(lane, len);
        return NULL;
    }
    if ((len > 0) && (srm_channel_absorb(agent, node, kind, lane->log, len,
                                         unwritten, &result) != UCS_OK)) {
        return "no memory to keep the frames written to it directly";
    }
    if (result.lost_bytes > 0) {
        srm_error("node %u: a process wrote a malformed frame to it "
                  "directly; the %zu bytes from there on, frames other "
                  "processes may have written too, are lost",
                  node->index, result.lost_bytes);
        return "a malformed frame was written to it directly";
    }
    if (result.foreign > 0) {
        node->lane_foreign += result.foreign;
        return "a process wrote frames as a port that may not, or out of "
               "their port's order";
    }
    if (result.renumbered > 0) {
        return "a process numbered frames out of the channel's order";
    }
    /* A client numbers a frame only once it is in the log. */
    return (srm_load_relaxed(&lane->next_chan_seq) == chan->next_seq) ?
                   NULL :
                   "a process numbered a frame it did not log";
}

static void srm_lane_absorb(srm_agent_t *agent, srm_node_t *node, int kind)
{
    srm_node_lane_t *nl = &node->lanes[kind];
    srm_lane_t *lane    = nl->shm;
    srm_channel_t *chan = &node->chan[kind];
    uint32_t len        = lane->log_len;
    uint32_t unwritten  = lane->unwritten;
    srm_link_t *link    = chan->links[chan->active];
    const char *why;

    srm_store_relaxed(&lane->kick, 0);
    if (lane->owner_died && (unwritten > len)) {
        /* It died marking a frame it never logged (nor sent): the log is
         * whole, and the connection is reset anyway. */
        unwritten = 0;
    }
    if ((len > nl->log_size) || (unwritten > len)) {
        srm_error("node %u: a process left its %s lane's log corrupt "
                  "(%u bytes, %u unwritten): the frames in it are lost",
                  node->index, srm_node_kind_name(kind), len, unwritten);
        why = "a process left a corrupt lane log";
    } else {
        why = srm_lane_take_log(agent, node, kind, len, unwritten);
    }
    if (lane->owner_died) {
        why = "a process died writing to it directly";
    }
    lane->log_len    = 0;
    lane->unwritten  = 0;
    lane->owner_died = 0;
    if (len > 0) {
        srm_store_release(&lane->absorbs, lane->absorbs + 1);
    }
    if ((why != NULL) && (link != NULL)) {
        srm_lane_shut_link(agent, node, link, why);
    }

    /* After the frames written: an ack read may acknowledge them. */
    if ((srm_lane_absorb_rx(agent, node, kind, lane->rx_taken) != 0) &&
        (nl->link != NULL)) {
        srm_lane_shut_link(agent, node, nl->link,
                           "a process recorded a frame it read from it "
                           "directly that it may not have read");
    }
    lane->rx_taken       = 0;
    lane->rx_taken_bytes = 0;
}

/*
 * A process holds the lock and does not let go (stopped in a debugger, or
 * by SIGSTOP): the agent gives the lane up without the lock. Frames logged
 * before the seal join the channel; a writer that appends after it takes
 * its frame back (srm_lane_append). The socket is shut down, so that no
 * byte of anyone reaches it any more: its link closes, and the next one
 * resends what was not acknowledged. Clients see `retired` and ask for the
 * new lane.
 */
static void srm_lane_retire(srm_agent_t *agent, srm_node_t *node, int kind)
{
    srm_node_lane_t *nl = &node->lanes[kind];
    srm_lane_t *lane    = nl->shm;
    srm_link_t *link    = nl->link;
    uint32_t len        = srm_lane_seal(lane);
    uint32_t taken      = srm_lane_seal_len(&lane->rx_taken);

    srm_store_relaxed(&lane->open, 0);
    srm_store_relaxed(&lane->rx_open, 0);
    srm_store_release(&lane->retired, 1);
    srm_warn("node %u: a process held its direct lane for over %d ms "
             "(%s channel; stopped?): the lane is retired and its "
             "connection reset; a new lane is made when asked", node->index,
             SRM_LANE_HOLD_LIMIT_MS, srm_node_kind_name(kind));
    if ((len > nl->log_size) ||
        (srm_lane_take_log(agent, node, kind, len, 0) != NULL)) {
        srm_warn("node %u: the retired lane's log (%u bytes) is corrupt or "
                 "too large to keep; what it holds may be lost",
                 node->index, len);
    }
    if (srm_lane_absorb_rx(agent, node, kind, taken) != 0) {
        srm_warn("node %u: the retired lane's receive log has records the "
                 "agent could not book; their frames come again", node->index);
    }
    if (link != NULL) {
        shutdown(link->conn.fd, SHUT_RDWR); /* its reads see the end: it closes */
    }
    nl->shm  = NULL;
    nl->link = NULL;
    srm_lane_unmap(lane, nl->log_size);
    close(nl->fd);
    nl->fd = -1;
}

void srm_lane_enter(srm_agent_t *agent, srm_node_t *node)
{
    srm_node_lane_t *nl;
    int kind;

    if (node->lane_depth++ > 0) {
        return;
    }
    for (kind = 0; kind < SRM_CHANNEL_KINDS; ++kind) {
        nl = &node->lanes[kind];
        if (nl->shm == NULL) {
            continue;
        }
        if (srm_lane_lock_timed(nl->shm, SRM_LANE_HOLD_LIMIT_MS) < 0) {
            if (errno == ETIMEDOUT) {
                srm_lane_retire(agent, node, kind);
                continue;
            }
            srm_error("node %u: cannot lock its %s direct lane: %m",
                      node->index, srm_node_kind_name(kind));
        }
        srm_lane_absorb(agent, node, kind);
    }
}

/* Whether clients may write the channel's socket now. */
static srm_link_t *srm_lane_writable_link(const srm_node_t *node, int kind)
{
    const srm_channel_t *chan = &node->chan[kind];
    srm_link_t *link          = chan->links[chan->active];

    if ((link == NULL) || (link->state != SRM_LINK_READY) ||
        !srm_wire_can(link->wire, SRM_WIRE_CAP_SHARED_FD) || link->muted ||
        link->lane_shut ||
        (link->ctl_left > 0) ||
        (chan->sent != chan->tail) || (node->state == SRM_NODE_INVALID) ||
        (node->num_paused > 0)) {
        return NULL;
    }
    return link;
}

/*
 * Whether clients may read the lane's socket now: the agent's own input
 * from it is empty (at a frame boundary), and no frame of the node waits
 * in a port's backlog, where the order checks do not see it.
 */
static int srm_lane_readable(const srm_node_t *node, int kind)
{
    const srm_link_t *link = node->lanes[kind].link;

    return (link != NULL) && (link->state == SRM_LINK_READY) &&
           (link->in_len == 0) && (link->place.dst == NULL) &&
           !link->muted && !link->lane_shut && (node->backlogged == 0) &&
           (node->state != SRM_NODE_INVALID);
}

static void srm_lane_set_polled(srm_agent_t *agent, srm_link_t *link,
                                int polled)
{
    if ((link != NULL) && (link->clients_poll != polled)) {
        link->clients_poll = polled;
        srm_link_set_events(agent, link);
    }
}

/*
 * Whether the clients took most frames of the window that just ended
 * (when one ended). Where they do not (many processes, each finding the
 * frames of the others at the head), the agent reads the socket alone,
 * and lets them try again only every SRM_LANE_LISTEN_WINDOWS windows.
 */
static int srm_lane_clients_take(srm_node_t *node, int kind, double now)
{
    const srm_channel_t *chan = &node->chan[kind];
    srm_node_lane_t *nl       = &node->lanes[kind];
    uint64_t rx, taken;

    if ((now - nl->window_start) < SRM_LANE_POLL_STALE_MS * 1e-3) {
        return nl->listen_windows == 0;
    }
    rx    = chan->rx_frames - nl->window_rx;
    taken = chan->taken_frames - nl->window_taken;
    if (nl->listen_windows > 0) {
        nl->listen_windows--;
    } else if (nl->window_polled && ((2 * taken) < rx)) {
        nl->listen_windows = SRM_LANE_LISTEN_WINDOWS;
    }
    nl->window_polled = srm_load_relaxed(&nl->shm->rx_pollers) > 0;
    nl->window_start  = now;
    nl->window_rx     = chan->rx_frames;
    nl->window_taken  = chan->taken_frames;
    return nl->listen_windows == 0;
}

/*
 * Listens to the lane's socket only while no client polls it: a frame a
 * polling client takes then wakes nobody. While it does not listen, its
 * timer looks at the pollers every SRM_LANE_POLL_STALE_MS.
 */
static void srm_lane_watch(srm_agent_t *agent, srm_node_t *node, int kind,
                           int readable, double now)
{
    const double stale  = SRM_LANE_POLL_STALE_MS * 1e-3;
    srm_node_lane_t *nl = &node->lanes[kind];
    srm_lane_t *lane    = nl->shm;
    uint32_t polls      = srm_load_relaxed(&lane->rx_polls);
    int polled;

    if (polls != nl->polls_seen) {
        nl->polls_seen = polls;
        nl->polled_at  = now;
    }
    /* Not either while its channel waits for acks: it reads them at
     * once, where a client that took one would have to kick it. */
    polled = readable && !lane->ack_wanted &&
             (srm_load_relaxed(&lane->rx_pollers) > 0) &&
             ((now - nl->polled_at) < stale);
    srm_lane_set_polled(agent, nl->link, polled);
    srm_store_relaxed(&lane->rx_agent_deaf, (uint32_t)polled);
    if (polled) {
        srm_agent_timer_by(agent, now + stale);
    }
}

/* What a client checks a frame against before it takes it. */
static void srm_lane_publish_rx(srm_agent_t *agent, srm_node_t *node,
                                int kind, double now)
{
    srm_lane_t *lane = node->lanes[kind].shm;
    unsigned i, n;
    int readable;

    /* A refused source is left out: the agent reads its frames, and drops
     * them. */
    for (i = 0, n = 0; (i < node->num_orders) && (n < SRM_LANE_RX_PORTS);
         ++i) {
        if (!node->orders[i].refused) {
            lane->rx_ports[n].src_port   = node->orders[i].src_port;
            lane->rx_ports[n++].expected = node->orders[i].expected;
        }
    }
    lane->rx_num_ports = n;
    lane->rx_expected  = node->chan[kind].rx_expected;
    lane->rx_changes++;
    /* Not while they leave most frames to the agent anyway: their looks
     * and their hold on the lock would only slow it down. */
    readable           = srm_lane_readable(node, kind) &&
                         srm_lane_clients_take(node, kind, now);
    srm_lane_watch(agent, node, kind, readable, now);
    srm_store_release(&lane->rx_open, (uint32_t)readable);
}

/* Whether the channel waits for acks: a quarter of its depth not
 * acknowledged, or frames queued behind it. */
static uint32_t srm_lane_acks_wanted(const srm_agent_t *agent,
                                     const srm_node_t *node, int kind)
{
    const srm_channel_t *chan = &node->chan[kind];

    return (chan->sent != chan->tail) ||
           ((chan->sent - chan->head) > (agent->config.channel_depth / 4));
}

/*
 * Bytes writers may add to the log before the agent takes it: on the bulk
 * channel, the window of SRM_LANE_BULK_WINDOWS depths less what the
 * channel has not had acknowledged; on the small one, the whole log (its
 * frames are small, and the log itself bounds them).
 */
static uint32_t srm_lane_room(const srm_agent_t *agent, const srm_node_t *node,
                              int kind)
{
    const srm_channel_t *chan = &node->chan[kind];
    uint64_t window, unacked;

    if (kind == SRM_CHANNEL_SMALL) {
        return node->lanes[kind].log_size;
    }
    window  = (uint64_t)SRM_LANE_BULK_WINDOWS * agent->config.channel_depth;
    unacked = chan->tail - chan->head;
    if (unacked >= window) {
        return 0;
    }
    return (uint32_t)((window - unacked < node->lanes[kind].log_size) ?
                              window - unacked : node->lanes[kind].log_size);
}

static void srm_lane_leave_one(srm_agent_t *agent, srm_node_t *node,
                               int kind, double now)
{
    srm_node_lane_t *nl = &node->lanes[kind];
    srm_lane_t *lane    = nl->shm;
    srm_link_t *link;

    link = srm_lane_writable_link(node, kind);
    if ((link != NULL) && (link != nl->link)) {
        srm_lane_set_polled(agent, nl->link, 0);
        nl->link = link;
        lane->generation++;
    }
    lane->next_chan_seq = node->chan[kind].next_seq;
    lane->ack_wanted    = srm_lane_acks_wanted(agent, node, kind);
    lane->room          = srm_lane_room(agent, node, kind);
    srm_store_release(&lane->open, (uint32_t)(link != NULL));
    srm_lane_publish_rx(agent, node, kind, now);
    srm_lane_unlock(lane);
}

void srm_lane_leave(srm_agent_t *agent, srm_node_t *node)
{
    double now = 0;
    int kind;

    if (--node->lane_depth > 0) {
        return;
    }
    for (kind = SRM_CHANNEL_KINDS - 1; kind >= 0; --kind) {
        if (node->lanes[kind].shm == NULL) {
            continue;
        }
        if (now == 0) {
            now = srm_agent_now(); /* once: on this guest the clock is a
                                      tenth of the agent's time */
        }
        srm_lane_leave_one(agent, node, kind, now);
    }
}

void srm_lane_catch_up(srm_agent_t *agent, srm_node_t *node)
{
    srm_lane_enter(agent, node);
    srm_lane_leave(agent, node);
}

void srm_lane_link_lost(srm_node_t *node, srm_link_t *link)
{
    srm_node_lane_t *nl;
    int kind;

    for (kind = 0; kind < SRM_CHANNEL_KINDS; ++kind) {
        nl = &node->lanes[kind];
        if ((nl->shm == NULL) || (nl->link != link)) {
            continue;
        }
        nl->link           = NULL;
        link->clients_poll = 0; /* it is closing */
        srm_store_relaxed(&nl->shm->open, 0);
        srm_store_relaxed(&nl->shm->rx_open, 0);
        srm_store_relaxed(&nl->shm->rx_agent_deaf, 0);
        nl->shm->generation++;
    }
}

void srm_lane_destroy(srm_node_t *node)
{
    srm_node_lane_t *nl;
    int kind;

    for (kind = 0; kind < SRM_CHANNEL_KINDS; ++kind) {
        nl = &node->lanes[kind];
        if (nl->shm != NULL) {
            srm_lane_unmap(nl->shm, nl->log_size);
            close(nl->fd);
            nl->shm = NULL;
        }
    }
}

/* The node's lane of a channel, made on first use; NULL with a reason. */
static srm_lane_t *srm_lane_get(srm_agent_t *agent, srm_node_t *node,
                                int kind, const char **why)
{
    srm_node_lane_t *nl = &node->lanes[kind];
    uint32_t log_size   = (kind == SRM_CHANNEL_SMALL) ?
                                  SRM_LANE_LOG_SIZE : SRM_LANE_BULK_LOG_SIZE;
    srm_lane_t *lane;
    size_t small_max;
    char name[32];

    if (nl->shm != NULL) {
        return nl->shm;
    }
    /* Tests tell the lanes apart by these names. */
    snprintf(name, sizeof(name), "srm-%slane-%u",
             (kind == SRM_CHANNEL_SMALL) ? "" : "bulk-", node->index);
    if (srm_lane_create(name, log_size, &nl->fd, &lane) != 0) {
        *why = "cannot create its shared memory";
        srm_warn("node %u: cannot create a direct lane: %m", node->index);
        return NULL;
    }
    small_max     = srm_channel_small_max(agent);
    lane->channel = (uint32_t)kind;
    lane->bulk_above = (small_max < UINT32_MAX) ? (uint32_t)small_max :
                                                  UINT32_MAX;
    if (kind == SRM_CHANNEL_SMALL) {
        lane->max_payload   = (small_max < log_size / 4) ?
                                      (uint32_t)small_max : log_size / 4;
        lane->rx_kick_bytes = SRM_LANE_RX_KICK_BYTES;
    } else {
        lane->max_payload   = SRM_FRAME_MAX_PAYLOAD;
        lane->rx_kick_bytes = (uint32_t)(agent->config.channel_depth / 4);
    }
    /* Numbering goes on from the channel's; no client knows the lane yet,
     * so the first enter finds nothing to absorb. */
    lane->next_chan_seq = node->chan[kind].next_seq;
    nl->log_size        = log_size;
    nl->link            = NULL;
    srm_lane_enter(agent, node);
    /* Nobody else knows it yet: the lock is free, whatever order the
     * other lane's was taken in. */
    srm_lane_trylock(lane);
    nl->shm = lane;
    srm_lane_leave(agent, node);
    return lane;
}

/*
 * A LANE request from the md connection `requester` for the port and
 * channel it names. Fills the reply and the fds to pass: the lane's memfd,
 * and the socket while the lane is open.
 */
void srm_lane_answer(srm_agent_t *agent, const srm_client_t *requester,
                     const srm_lane_req_t *req, srm_lane_rep_t *rep,
                     int *fds, int *nfds)
{
    srm_client_t *client = srm_client_lookup(agent, req->port);
    const char *why      = NULL;
    srm_node_t *node     = NULL;
    srm_node_lane_t *nl  = NULL;
    srm_lane_t *lane;

    *nfds = 0;
    if ((client == NULL) || (client->key != req->key) ||
        (client->state != SRM_CLIENT_ATTACHED) ||
        (client->pid != requester->pid)) {
        why = "no such port of this process";
    } else if (req->channel >= SRM_CHANNEL_KINDS) {
        why = "no such channel";
    } else if (agent->any_user) {
        why = "the agent serves every user (--any-user): no process may "
              "write its channels";
    } else if ((node = srm_node_resolve(agent, client, req->node)) == NULL) {
        why = "no route to that node";
    } else if (agent->verbs[0] != NULL) {
        why = "the channels run on verbs";
    }
    lane = (why == NULL) ? srm_lane_get(agent, node, (int)req->channel, &why) :
                           NULL;
    if (lane != NULL) {
        srm_lane_enter(agent, node);
        if (!client->node_seq_shared[req->node]) {
            srm_store_relaxed(&client->ctl->node_seq[req->node],
                              client->node_seq[req->node]);
            client->node_seq_shared[req->node] = 1;
        }
        srm_lane_leave(agent, node); /* open and generation as of now */
        nl = &node->lanes[req->channel];
        if (nl->shm == NULL) {
            why = "its lane was just retired"; /* asked again later */
        }
    }
    if (why != NULL) {
        rep->status = EPERM;
        snprintf(rep->error, sizeof(rep->error), "%s", why);
        srm_debug("port %u: no direct lane to node entry %u: %s", req->port,
                  req->node, why);
        return;
    }

    /* The socket of the generation, even while the lane is shut for a
     * moment (the agent writing): clients look at open before writing. */
    rep->status     = 0;
    rep->open       = srm_load_relaxed(&nl->shm->open);
    rep->generation = nl->shm->generation;
    fds[(*nfds)++]  = nl->fd;
    if (nl->link != NULL) {
        nl->link->shared = 1;
        fds[(*nfds)++]   = nl->link->conn.fd;
    }
}

/* For every lane a client kicked: absorbs (the flush enters the lanes),
 * sends on, and reads what its socket holds; work done. */
unsigned srm_lane_progress(srm_agent_t *agent)
{
    unsigned count = 0, i;
    srm_node_lane_t *nl;
    srm_node_t *node;
    int kind;

    for (i = 0; i < agent->num_nodes; ++i) {
        node = agent->nodes[i];
        for (kind = 0; kind < SRM_CHANNEL_KINDS; ++kind) {
            nl = &node->lanes[kind];
            if ((nl->shm == NULL) || !srm_load_relaxed(&nl->shm->kick)) {
                continue;
            }
            srm_channel_flush(agent, node, kind);
            if (nl->link != NULL) {
                srm_link_read_in_lane(agent, nl->link);
            }
            ++count;
        }
    }
    return count;
}
