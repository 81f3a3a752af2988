/*
 * Retransmission watch: whether the TCP connection carrying a channel
 * resends so much that the channel is better off on its other connection
 * (UCX_SRM_RETRANS_LIMIT).
 *
 * A channel keeps at most CHANNEL_DEPTH unacknowledged, so a connection in
 * loss recovery stalls it; and a connection that recovered once may stay
 * slow (its congestion state outlives the loss). The standby path is a
 * second connection that is already up, and moving a channel to it loses
 * nothing (failover), so a connection that retransmitted `limit` segments
 * or more within one window is closed: the channel goes on at once on the
 * standby, and the closed path reconnects afresh as the new standby.
 * A channel does so at most once per SRM_RETRANS_HOLD, so a path that is
 * lossy either way costs one reconnection per hold, not a storm.
 */
#ifndef SRM_RETRANS_H
#define SRM_RETRANS_H

#include <stdint.h>

#define SRM_RETRANS_WINDOW 1.0 /* seconds over which segments are counted */
#define SRM_RETRANS_HOLD   2.0 /* seconds between two replacements */
#define SRM_RETRANS_LOOK   0.05 /* seconds between two looks at a connection
                                   (the agent's timer ticks far more often
                                   while it owes acks) */

typedef struct srm_retrans_watch {
    double   window_start; /* < 0: no window yet */
    uint32_t window_base;  /* the connection's count when it started */
    uint32_t in_window;    /* segments resent in it so far */
    double   looked_at;    /* < 0: never */
} srm_retrans_watch_t;

void srm_retrans_watch_init(srm_retrans_watch_t *watch);

/* Whether it is time for another look (and, if so, notes that it is). */
int srm_retrans_look_due(srm_retrans_watch_t *watch, double now);

/*
 * Takes the connection's count of retransmitted segments (TCP_INFO
 * tcpi_total_retrans) at `now`. 1 if the connection should be replaced:
 * `limit` (> 0) or more resent within the current window, and the channel
 * last replaced one (`replaced_at`, < 0: never) at least SRM_RETRANS_HOLD
 * ago.
 */
int srm_retrans_judge(srm_retrans_watch_t *watch, uint32_t total, double now,
                      unsigned limit, double replaced_at);

#endif
