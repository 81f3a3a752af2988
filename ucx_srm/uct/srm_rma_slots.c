/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The requests behind a port's RMA frames. The agent echoes a cookie in
 * each RMA_DONE; the cookie names a slot here (index and generation), never
 * an address, so a completion arrives only for a request we made and only
 * once, whatever the other side writes into the RX ring.
 */
#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "srm_uct.h"

#include <ucs/sys/math.h>

#include <stdlib.h>

#define UCT_SRM_RMA_SLOTS_MIN 16u
#define UCT_SRM_RMA_NO_SLOT   UINT32_MAX

static uint64_t uct_srm_rma_cookie(uint32_t index, uint32_t generation)
{
    return ((uint64_t)generation << 32) | index;
}

static ucs_status_t uct_srm_rma_slots_grow(uct_srm_rma_slots_t *slots)
{
    uint32_t capacity = ucs_max(slots->capacity * 2, UCT_SRM_RMA_SLOTS_MIN);
    uct_srm_rma_slot_t *grown;
    uint32_t i;

    if (capacity <= slots->capacity) {
        return UCS_ERR_NO_MEMORY;
    }
    grown = realloc(slots->slot, capacity * sizeof(*grown));
    if (grown == NULL) {
        return UCS_ERR_NO_MEMORY;
    }
    for (i = slots->capacity; i < capacity; ++i) {
        grown[i].comp       = NULL;
        grown[i].generation = 1;
        grown[i].in_use     = 0;
        grown[i].next_free  = (i + 1 < capacity) ? i + 1 : slots->free_head;
    }
    slots->free_head = slots->capacity;
    slots->slot      = grown;
    slots->capacity  = capacity;
    return UCS_OK;
}

void uct_srm_rma_slots_init(uct_srm_rma_slots_t *slots)
{
    slots->slot      = NULL;
    slots->capacity  = 0;
    slots->free_head = UCT_SRM_RMA_NO_SLOT;
}

void uct_srm_rma_slots_cleanup(uct_srm_rma_slots_t *slots)
{
    free(slots->slot);
    uct_srm_rma_slots_init(slots);
}

ucs_status_t uct_srm_rma_slot_take(uct_srm_rma_slots_t *slots,
                                   uct_completion_t *comp, uint64_t *cookie_p)
{
    uct_srm_rma_slot_t *slot;
    ucs_status_t status;
    uint32_t index;

    if (slots->free_head == UCT_SRM_RMA_NO_SLOT) {
        status = uct_srm_rma_slots_grow(slots);
        if (status != UCS_OK) {
            return status;
        }
    }
    index            = slots->free_head;
    slot             = &slots->slot[index];
    slots->free_head = slot->next_free;
    slot->comp       = comp;
    slot->in_use     = 1;
    *cookie_p        = uct_srm_rma_cookie(index, slot->generation);
    return UCS_OK;
}

ucs_status_t uct_srm_rma_slot_release(uct_srm_rma_slots_t *slots,
                                      uint64_t cookie,
                                      uct_completion_t **comp_p)
{
    uint32_t index = (uint32_t)cookie;
    uct_srm_rma_slot_t *slot;

    if (index >= slots->capacity) {
        return UCS_ERR_NO_ELEM;
    }
    slot = &slots->slot[index];
    if (!slot->in_use ||
        (uct_srm_rma_cookie(index, slot->generation) != cookie)) {
        return UCS_ERR_NO_ELEM;
    }
    *comp_p          = slot->comp;
    slot->comp       = NULL;
    slot->in_use     = 0;
    slot->generation = (slot->generation == UINT32_MAX) ? 1 :
                                                          slot->generation + 1;
    slot->next_free  = slots->free_head;
    slots->free_head = index;
    return UCS_OK;
}
