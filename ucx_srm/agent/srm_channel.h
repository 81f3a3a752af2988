/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * What the channel's four files share: its life and links (srm_channel.c),
 * its outgoing stream (srm_channel_queue.c), writing that stream and taking
 * the peer's acks (srm_channel_write.c), and receiving (srm_channel_rx.c).
 * The rest of the agent sees channels through srm_agent.h.
 */
#ifndef SRM_CHANNEL_H
#define SRM_CHANNEL_H

#include "srm_agent.h"

#define SRM_CHANNEL_MAX_DEPTH (64u * 1024u * 1024u)
#define SRM_ACK_DELAY         0.0005 /* seconds an ack waits for a ride */
#define SRM_CHANNEL_CTL_SLACK (32u * 1024u) /* room for control frames past
                                               the depth limit: a thousand
                                               PAUSEs and RESUMEs */
#define SRM_CHANNEL_WRITE_IOVS   64 /* pieces of the stream per write */
#define SRM_CHANNEL_WRITE_ROUNDS 8  /* writes per call, while all goes */
#define SRM_NODE_MAX_PAUSED      4096 /* a node's ports that may PAUSE us */

/* The header of the frame at `offset` of the stream, copied out (frames
 * in the stream are not aligned); returns the frame's whole size. */
size_t srm_channel_peek(const srm_channel_t *chan, uint64_t offset,
                        srm_frame_hdr_t *hdr);

/* PAUSE or RESUME from the peer: which of its ports we may send to. */
void srm_node_set_paused(srm_node_t *node, uint32_t port, int paused);

/* Bookkeeping after bytes of the stream were written (srm_channel_write.c). */
void srm_channel_advance(srm_agent_t *agent, srm_channel_t *chan,
                         size_t bytes, double write_at);

/*
 * A frame or an ack came on a link of the channel that is not its active
 * one: the peer writes on the other path. Where both sides write on one
 * connection, a process that reads the channel's socket directly finds
 * what it waits for (srm_lane.c); so the agent of the lower node id moves
 * to the peer's path, while nothing of its own is unacknowledged (only
 * one side moves, or both could swap paths for ever). Only where the node
 * has a bulk lane, and only before the channel's first failover. Inside
 * the lanes' enter.
 */
void srm_channel_follow_peer(srm_agent_t *agent, srm_link_t *link);

#endif
