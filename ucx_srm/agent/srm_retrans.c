/*
 * The retransmission watch (srm_retrans.h): counting in one-second
 * windows, deciding against a limit and a hold.
 */
#include "srm_retrans.h"

void srm_retrans_watch_init(srm_retrans_watch_t *watch)
{
    watch->window_start = -1.0;
    watch->window_base  = 0;
    watch->in_window    = 0;
    watch->looked_at    = -1.0;
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

int srm_retrans_judge(srm_retrans_watch_t *watch, uint32_t total, double now,
                      unsigned limit, double replaced_at)
{
    if ((watch->window_start < 0) ||
        ((now - watch->window_start) >= SRM_RETRANS_WINDOW)) {
        watch->window_start = now;
        watch->window_base  = total;
        watch->in_window    = 0;
        return 0;
    }
    watch->in_window = total - watch->window_base; /* the count wraps */
    return (limit > 0) && (watch->in_window >= limit) &&
           ((replaced_at < 0) || ((now - replaced_at) >= SRM_RETRANS_HOLD));
}
