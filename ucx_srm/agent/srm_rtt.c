/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * A channel's turn time (srm_rtt.h): one probe at a time, smoothed like
 * TCP's SRTT, with the shortest turn kept beside it.
 */
#include "srm_rtt.h"

void srm_rtt_init(srm_rtt_t *rtt)
{
    rtt->probing   = 0;
    rtt->probe_seq = 0;
    rtt->probe_at  = 0;
    rtt->smoothed  = 0;
    rtt->min       = 0;
    rtt->samples   = 0;
}

void srm_rtt_sent(srm_rtt_t *rtt, uint32_t seq, double now)
{
    if (rtt->probing) {
        return;
    }
    rtt->probing   = 1;
    rtt->probe_seq = seq;
    rtt->probe_at  = now;
}

void srm_rtt_acked(srm_rtt_t *rtt, uint32_t ack, double now)
{
    double sample;

    /* The ack covers the probe when ack > probe_seq (sequence space). */
    if (!rtt->probing || ((int32_t)(ack - rtt->probe_seq) <= 0)) {
        return;
    }
    rtt->probing = 0;
    sample       = (now > rtt->probe_at) ? (now - rtt->probe_at) : 0;
    if (rtt->samples == 0) {
        rtt->smoothed = sample;
        rtt->min      = sample;
    } else {
        rtt->smoothed += SRM_RTT_GAIN * (sample - rtt->smoothed);
        if (sample < rtt->min) {
            rtt->min = sample;
        }
    }
    rtt->samples++;
}

void srm_rtt_restart(srm_rtt_t *rtt)
{
    rtt->probing = 0;
}
