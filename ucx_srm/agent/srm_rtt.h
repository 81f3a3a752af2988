/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * A channel's turn time: from writing a frame until the peer's ack of it
 * comes back, what `srmctl status` shows as rtt_us.
 *
 * A channel keeps at most CHANNEL_DEPTH unacknowledged, so it moves at
 * most CHANNEL_DEPTH per turn: with this time measured, a bandwidth can be
 * checked against that bound. The turn includes everything between the
 * two agents: the sender's TCP stack, the receiver's wakeup, its reading
 * and delivering, its ack policy (ACK_DELAY, a quarter of the depth) and
 * the sender's wakeup for the ack.
 *
 * One frame is timed at a time, as TCP does: the first frame written
 * while no probe is out, until an ack covers it. A probe is dropped when
 * the channel starts again on another connection (its frame may be
 * written twice, and a turn measured from the first write would be too
 * long).
 */
#ifndef SRM_RTT_H
#define SRM_RTT_H

#include <stdint.h>

#define SRM_RTT_GAIN 0.125 /* weight of a new sample in the smoothed time */

typedef struct srm_rtt {
    int      probing;    /* a frame is being timed */
    uint32_t probe_seq;  /* its chan_seq */
    double   probe_at;   /* when it was written */
    double   smoothed;   /* seconds; valid once samples > 0 */
    double   min;        /* the shortest turn seen */
    uint64_t samples;
} srm_rtt_t;

void srm_rtt_init(srm_rtt_t *rtt);

/* A frame, chan_seq `seq`, was written for the first time at `now`: it
 * is timed unless another one is. */
void srm_rtt_sent(srm_rtt_t *rtt, uint32_t seq, double now);

/* The peer has every frame before `ack` (cumulative), seen at `now`. */
void srm_rtt_acked(srm_rtt_t *rtt, uint32_t ack, double now);

/* The channel starts again on another connection. */
void srm_rtt_restart(srm_rtt_t *rtt);

#endif
