/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The verbs wire's pool of send buffers, one per device. Sends that are not
 * inline hold a buffer; only some sends ask for a completion (every quarter
 * of the ring, and the last of a batch that ran out of room), and since RC
 * completes in order a completion gives back its buffer and those of every
 * send before it.
 */
#define _GNU_SOURCE
#include "srm_wire_verbs_dev.h"

#include <ucx_srm/common/srm_log.h>

#include <errno.h>
#include <fcntl.h>
#include <net/if.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

int srm_wire_verbs_tx_open(srm_wire_verbs_dev_t *dev, unsigned send_bufs)
{
    size_t size = (size_t)send_bufs * SRM_WIRE_VERBS_SLOT_SIZE;
    uint32_t i;

    if ((posix_memalign((void**)&dev->tx_buf, 4096, size) != 0) ||
        ((dev->tx_free = calloc(send_bufs, sizeof(*dev->tx_free))) == NULL)) {
        srm_error("verbs device %s: no memory for send buffers", dev->name);
        return -1;
    }
    dev->tx_mr = ibv_reg_mr(dev->pd, dev->tx_buf, size,
                            IBV_ACCESS_LOCAL_WRITE);
    if (dev->tx_mr == NULL) {
        srm_error("verbs device %s: cannot register send buffers: %m",
                  dev->name);
        return -1;
    }
    for (i = 0; i < send_bufs; ++i) {
        dev->tx_free[i] = send_bufs - 1 - i;
    }
    dev->tx_stats.slots = send_bufs;
    dev->tx_stats.free  = send_bufs;
    return 0;
}

void srm_wire_verbs_tx_close(srm_wire_verbs_dev_t *dev)
{
    if (dev->tx_mr != NULL) {
        ibv_dereg_mr(dev->tx_mr);
    }
    free(dev->tx_buf);
    free(dev->tx_free);
}

/* Sends before send number `upto` are done: their buffers go back. */
void srm_wire_verbs_tx_done(srm_wire_verbs_qp_t *qp, uint64_t upto)
{
    srm_wire_verbs_dev_t *dev = qp->dev;
    uint32_t slot;

    for (; qp->send_done < upto; qp->send_done++) {
        slot = qp->tx_slot[qp->send_done % SRM_WIRE_VERBS_SEND_SLOTS];
        if (slot != SRM_WIRE_VERBS_NO_SLOT) {
            dev->tx_free[dev->tx_stats.free++] = slot;
        }
    }
    if (dev->tx_ran_out && (dev->tx_stats.free > 0)) {
        dev->tx_ran_out   = 0;
        dev->tx_room_back = 1;
    }
}

/* Posts an empty send that asks for a completion; 0 or an errno. */
int srm_wire_verbs_post_empty(srm_wire_verbs_qp_t *qp)
{
    struct ibv_send_wr wr = {.wr_id      = qp->send_head,
                             .opcode     = IBV_WR_SEND,
                             .send_flags = IBV_SEND_SIGNALED}, *bad;
    int ret               = ibv_post_send(qp->qp, &wr, &bad);

    if (ret == 0) {
        qp->tx_slot[qp->send_head % SRM_WIRE_VERBS_SEND_SLOTS] =
                SRM_WIRE_VERBS_NO_SLOT;
        qp->last_signaled = ++qp->send_head;
    }
    return ret;
}

/*
 * The pool ran out: every queue pair whose last sends asked for no
 * completion gets an empty send that does (the peer reads zero bytes), so
 * that the buffers held by quiet links come back.
 */
void srm_wire_verbs_tx_reclaim(srm_wire_verbs_dev_t *dev)
{
    srm_wire_verbs_qp_t *qp;

    for (qp = dev->qps; qp != NULL; qp = qp->next) {
        if (!qp->failed && (qp->remote_qpn != 0) &&
            (qp->last_signaled != qp->send_head) &&
            ((qp->send_head - qp->send_done) < SRM_WIRE_VERBS_SEND_SLOTS) &&
            (srm_wire_verbs_post_empty(qp) == 0)) {
            dev->tx_stats.reclaims++;
        }
    }
}

int srm_wire_verbs_dev_take_room(srm_wire_verbs_dev_t *dev)
{
    int back = dev->tx_room_back;

    dev->tx_room_back = 0;
    return back;
}

const srm_wire_verbs_tx_stats_t *
srm_wire_verbs_dev_tx_stats(const srm_wire_verbs_dev_t *dev)
{
    return &dev->tx_stats;
}
