/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Retransmission watch: whether the TCP connection carrying a channel
 * loses so much that the channel is better off on its other connection
 * (UCX_SRM_RETRANS_LIMIT).
 *
 * A channel keeps at most CHANNEL_DEPTH unacknowledged, so a connection in
 * loss recovery stalls it; and a connection that recovered once may stay
 * slow (its congestion state outlives the loss). The standby path is a
 * second connection that is already up, and moving a channel to it loses
 * nothing (failover). So a connection that retransmitted `limit` segments
 * or more within one window trips the watch, and the channel moves: it
 * goes on at once on the standby, and the closed path reconnects afresh as
 * the new standby.
 *
 * Congestion trips the count too, but not the share: a loss-based TCP
 * that fills a path loses about one segment per window it grows to, a
 * share that falls as the square of the window (one in thousands at this
 * machine's windows: 45 of 52358 and 46 of 61831 were measured where
 * nothing dropped), while a bad link loses its share whatever the window
 * (1 in 200 to 1 in 50 with 3% of large packets dropped). So a window
 * trips only with at least SRM_RETRANS_MIN_SHARE of the segments sent in
 * it resent as well.
 *
 * Congestion can still trip it: queues on the way that overflow drop whatever
 * arrives, hundreds of segments a second when writers fill them, as a
 * share of the data sent no less than a bad link loses (measured on
 * shaped links, docs/performance.md). What congestion does not do is stay
 * behind when the channel moves: the channel's load goes with it and the
 * connection it moved to loses as much. A bad link stays behind. So a
 * move has to prove itself: if the connection the channel moved to trips
 * the watch within SRM_RETRANS_PROOF, the move did not help, and the
 * channel stays where it is (counted as `kept`) for a while, then tries
 * a move again; each time that one does not help either, the while
 * doubles (SRM_RETRANS_PROOF up to SRM_RETRANS_KEEP_MAX), so congestion
 * that lasts costs a move now and then, and a link that went bad while it
 * lasted is still left. A move followed by SRM_RETRANS_PROOF without a
 * trip, or SRM_RETRANS_PROOF without a trip after the channel was last
 * kept, starts over. Between two moves at least SRM_RETRANS_HOLD pass.
 */
#ifndef SRM_RETRANS_H
#define SRM_RETRANS_H

#include <stdint.h>

#define SRM_RETRANS_WINDOW   1.0  /* seconds over which segments are counted */
#define SRM_RETRANS_MIN_SHARE 500u /* a trip needs at least 1 in this many
                                      segments sent resent */
#define SRM_RETRANS_HOLD     2.0  /* seconds between two moves at least */
#define SRM_RETRANS_PROOF    10.0 /* a move not followed by a trip this long
                                     helped */
#define SRM_RETRANS_KEEP_MAX 160.0 /* the longest a channel stays put */
#define SRM_RETRANS_SETTLE   2.0  /* seconds after a connection became the
                                     channel's active one in which it does
                                     not trip: it restarts from slow start
                                     (it was idle) under the resent backlog,
                                     and overshoots */
#define SRM_RETRANS_LOOK     0.05 /* seconds between two looks at a
                                     connection (the agent's timer ticks far
                                     more often while it owes acks) */

/* One connection's counts, in windows. */
typedef struct srm_retrans_watch {
    double   window_start; /* < 0: no window yet */
    uint32_t resent_base;  /* the connection's counts when it started */
    uint32_t sent_base;
    uint32_t resent;       /* segments resent in it so far */
    uint32_t sent;         /* data segments sent in it so far (0: the
                              kernel does not count them) */
    double   looked_at;    /* < 0: never */
    double   quiet_until;  /* not judged before then (SRM_RETRANS_SETTLE) */
} srm_retrans_watch_t;

/* A channel's moves, across its connections. */
typedef struct srm_retrans_moves {
    double moved_at;   /* < 0: never moved */
    double kept_until; /* no move before then */
    double keep;       /* how long the next "did not help" keeps it */
    int    kept;       /* the last verdict kept it: the next move tries
                          again, it proves nothing yet */
} srm_retrans_moves_t;

typedef enum {
    SRM_RETRANS_STAY,      /* not tripped, or within the hold */
    SRM_RETRANS_MOVE,      /* move the channel to its standby */
    SRM_RETRANS_CONGESTED, /* tripped again on the connection it moved to:
                              stays, as srm_retrans_moves_t's kept_until */
} srm_retrans_verdict_t;

void srm_retrans_watch_init(srm_retrans_watch_t *watch);

/* The connection became its channel's active one at `now`: it is not
 * judged for SRM_RETRANS_SETTLE, and counts from then on. */
void srm_retrans_settle(srm_retrans_watch_t *watch, double now);

/* Whether it is time for another look (and, if so, notes that it is). */
int srm_retrans_look_due(srm_retrans_watch_t *watch, double now);

/*
 * Takes the connection's counts at `now` (TCP_INFO tcpi_total_retrans and
 * tcpi_data_segs_out, the latter 0 if the kernel has none). 1 if it
 * tripped: `limit` (> 0) or more resent within the current window, and
 * (where the kernel counts what was sent) at least 1 in
 * SRM_RETRANS_MIN_SHARE of the segments sent in it; never while it
 * settles (srm_retrans_settle).
 */
int srm_retrans_tripped(srm_retrans_watch_t *watch, uint32_t resent,
                        uint32_t sent, double now, unsigned limit);

void srm_retrans_moves_init(srm_retrans_moves_t *moves);

/* What a channel whose active connection tripped at `now` does (and
 * notes it). */
srm_retrans_verdict_t srm_retrans_decide(srm_retrans_moves_t *moves,
                                         double now);

#endif
