/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The retransmission watch (srm_retrans.h): counting in one-second
 * windows against a limit; moving a channel, or keeping it where a move
 * did not help.
 */
#include "srm_retrans.h"

void srm_retrans_watch_init(srm_retrans_watch_t *watch)
{
    watch->window_start = -1.0;
    watch->resent_base  = 0;
    watch->sent_base    = 0;
    watch->resent       = 0;
    watch->sent         = 0;
    watch->looked_at    = -1.0;
    watch->quiet_until  = -1.0;
}

void srm_retrans_settle(srm_retrans_watch_t *watch, double now)
{
    watch->quiet_until  = now + SRM_RETRANS_SETTLE;
    watch->window_start = -1.0;
}

int srm_retrans_look_due(srm_retrans_watch_t *watch, double now)
{
    if ((watch->looked_at >= 0) &&
        ((now - watch->looked_at) < SRM_RETRANS_LOOK)) {
        return 0;
    }
    watch->looked_at = now;
    return 1;
}

int srm_retrans_tripped(srm_retrans_watch_t *watch, uint32_t resent,
                        uint32_t sent, double now, unsigned limit)
{
    if (now < watch->quiet_until) {
        watch->window_start = -1.0; /* count from its end on */
        return 0;
    }
    if ((watch->window_start < 0) ||
        ((now - watch->window_start) >= SRM_RETRANS_WINDOW)) {
        watch->window_start = now;
        watch->resent_base  = resent;
        watch->sent_base    = sent;
        watch->resent       = 0;
        watch->sent         = 0;
        return 0;
    }
    /* the counts wrap */
    watch->resent = resent - watch->resent_base;
    watch->sent   = sent - watch->sent_base;
    return (limit > 0) && (watch->resent >= limit) &&
           ((watch->sent == 0) ||
            ((uint64_t)watch->resent * SRM_RETRANS_MIN_SHARE >= watch->sent));
}

void srm_retrans_moves_init(srm_retrans_moves_t *moves)
{
    moves->moved_at   = -1.0;
    moves->kept_until = -1.0;
    moves->keep       = SRM_RETRANS_PROOF;
    moves->kept       = 0;
}

srm_retrans_verdict_t srm_retrans_decide(srm_retrans_moves_t *moves,
                                         double now)
{
    if (now < moves->kept_until) {
        return SRM_RETRANS_STAY;
    }
    if (moves->kept && ((now - moves->kept_until) >= SRM_RETRANS_PROOF)) {
        moves->kept = 0; /* calm since it was kept: the congestion ended */
    }
    if ((moves->moved_at >= 0) && !moves->kept &&
        ((now - moves->moved_at) < SRM_RETRANS_PROOF)) {
        /* The connection it moved to loses as well. */
        moves->kept_until = now + moves->keep;
        moves->keep       = (2 * moves->keep < SRM_RETRANS_KEEP_MAX) ?
                                    2 * moves->keep : SRM_RETRANS_KEEP_MAX;
        moves->kept       = 1;
        return SRM_RETRANS_CONGESTED;
    }
    if (!moves->kept) {
        moves->keep = SRM_RETRANS_PROOF; /* the last move helped */
    }
    moves->kept       = 0;
    moves->moved_at   = now;
    moves->kept_until = now + SRM_RETRANS_HOLD;
    return SRM_RETRANS_MOVE;
}
