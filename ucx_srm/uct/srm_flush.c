/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Flush: everything sent before it has left the process. An AM has left
 * once the agent took it from the TX ring (the ring's passed index): from
 * there the agent delivers it even if we exit (it drains a departed port's
 * rings, and it owns the segment). An RMA operation has left once the agent
 * answered it. A flush that cannot complete at once waits here, with the
 * ring positions it waits for, and completes from progress.
 */
#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "srm_uct.h"

/* Each ring's published head now, or only that of one ring (others 0). */
static void uct_srm_flush_mark(const uct_srm_iface_t *iface,
                               const uct_srm_tx_ring_t *only, uint64_t *head)
{
    unsigned i;

    for (i = 0; i < SRM_SHM_MAX_TX_RINGS; ++i) {
        head[i] = 0;
    }
    for (i = 0; i < iface->agent.layout.num_tx_rings; ++i) {
        if ((only == NULL) || (only == &iface->tx[i])) {
            head[i] = iface->tx[i].ring.local;
        }
    }
}

static int uct_srm_flush_reached(const uct_srm_iface_t *iface,
                                 const uint64_t *head)
{
    unsigned i;

    if (iface->rma_outstanding > 0) {
        return 0;
    }
    for (i = 0; i < iface->agent.layout.num_tx_rings; ++i) {
        if (srm_load_acquire(&iface->ctl->tx[i].passed) < head[i]) {
            return 0;
        }
    }
    return 1;
}

ucs_status_t uct_srm_flush_start(uct_srm_iface_t *iface,
                                 const uct_srm_tx_ring_t *only,
                                 uct_completion_t *comp)
{
    uct_srm_flush_t *flush;
    uint64_t head[SRM_SHM_MAX_TX_RINGS];

    uct_srm_flush_mark(iface, only, head);
    if (uct_srm_flush_reached(iface, head)) {
        return UCS_OK;
    }
    if (iface->agent_lost) {
        return UCS_ERR_ENDPOINT_TIMEOUT; /* nobody will take them now */
    }
    /* The agent wakes a sleeping process when it takes its frames. */
    srm_shm_flag_raise(&iface->ctl->tx_space_wanted);
    if (comp == NULL) {
        return UCS_INPROGRESS;
    }
    if (iface->num_flushes == UCT_SRM_MAX_FLUSHES) {
        return UCS_ERR_NO_RESOURCE;
    }
    flush       = &iface->flushes[iface->num_flushes++];
    flush->comp = comp;
    memcpy(flush->head, head, sizeof(head));
    return UCS_INPROGRESS;
}

unsigned uct_srm_flush_progress(uct_srm_iface_t *iface)
{
    unsigned i = 0, done = 0;
    uct_completion_t *comp;

    while (i < iface->num_flushes) {
        if (!uct_srm_flush_reached(iface, iface->flushes[i].head)) {
            ++i;
            continue;
        }
        comp               = iface->flushes[i].comp;
        iface->flushes[i]  = iface->flushes[--iface->num_flushes];
        uct_invoke_completion(comp, UCS_OK);
        ++done;
    }
    return done;
}

int uct_srm_flush_waiting(uct_srm_iface_t *iface)
{
    unsigned i;

    if (iface->num_flushes == 0) {
        return 0;
    }
    /* Asked first, looked after: a take between the two is not missed. */
    srm_shm_flag_raise(&iface->ctl->tx_space_wanted);
    for (i = 0; i < iface->num_flushes; ++i) {
        if (uct_srm_flush_reached(iface, iface->flushes[i].head)) {
            return 0; /* one completes on the next progress */
        }
    }
    return 1;
}
