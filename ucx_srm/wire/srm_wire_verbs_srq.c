/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The verbs wire's shared receive queue, one per device, whatever the
 * number of queue pairs. A receive completes on the queue pair that took
 * it, which keeps the buffer until its bytes are read (or copied aside:
 * SRM_WIRE_VERBS_QP_HELD) and then gives it back; given-back buffers are posted
 * again in one batch.
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

/* Posts free buffers until the queue holds srq_target of them, in one
 * ibv_post_srq_recv per batch; -1 with errno if the device refused. */
int srm_wire_verbs_srq_refill(srm_wire_verbs_dev_t *dev)
{
    struct ibv_recv_wr wr[SRM_WIRE_VERBS_POST_BATCH], *bad;
    struct ibv_sge sge[SRM_WIRE_VERBS_POST_BATCH];
    srm_wire_verbs_srq_stats_t *stats = &dev->srq_stats;
    unsigned count, i;
    uint32_t slot;
    int ret;

    while ((stats->posted < dev->srq_target) && (dev->srq_num_free > 0)) {
        count = dev->srq_target - stats->posted;
        if (count > dev->srq_num_free) {
            count = dev->srq_num_free;
        }
        if (count > SRM_WIRE_VERBS_POST_BATCH) {
            count = SRM_WIRE_VERBS_POST_BATCH;
        }
        for (i = 0; i < count; ++i) {
            slot          = dev->srq_free[dev->srq_num_free - 1 - i];
            sge[i].addr   = (uintptr_t)srm_wire_verbs_recv_slot(dev, slot);
            sge[i].length = SRM_WIRE_VERBS_SLOT_SIZE;
            sge[i].lkey   = dev->srq_mr->lkey;
            wr[i].wr_id   = SRM_WIRE_VERBS_RECV_WR | slot;
            wr[i].sg_list = &sge[i];
            wr[i].num_sge = 1;
            wr[i].next    = (i + 1 < count) ? &wr[i + 1] : NULL;
        }
        ret = ibv_post_srq_recv(dev->srq, wr, &bad);
        if (ret != 0) {
            count = (unsigned)(bad - wr); /* those before it are in */
        }
        for (i = 0; i < count; ++i) {
            dev->srq_state[dev->srq_free[--dev->srq_num_free]] =
                    SRM_WIRE_VERBS_SLOT_POSTED;
        }
        stats->posted += count;
        stats->refills++;
        if (ret != 0) {
            srm_error("verbs device %s: ibv_post_srq_recv failed: %s",
                      dev->name, strerror(ret));
            errno = ret;
            return -1;
        }
    }
    return 0;
}

/* A buffer that is free again; posted at the next refill. */
void srm_wire_verbs_srq_give(srm_wire_verbs_dev_t *dev, uint32_t slot)
{
    dev->srq_state[slot]               = SRM_WIRE_VERBS_SLOT_FREE;
    dev->srq_free[dev->srq_num_free++] = slot;
}

/* The oldest held buffer is read (or copied aside): back to the queue. */
void srm_wire_verbs_rx_pop(srm_wire_verbs_qp_t *qp)
{
    srm_wire_verbs_srq_give(qp->dev, qp->rx[qp->rx_first].slot);
    qp->dev->srq_stats.held--;
    qp->rx_first  = (qp->rx_first + 1) % SRM_WIRE_VERBS_QP_HELD;
    qp->rx_count--;
    qp->rx_offset = 0;
}

/* Asks the device to say when fewer than srq_stats.low buffers are left
 * in the queue (it says so once per arming). */
static void srm_wire_verbs_srq_arm(srm_wire_verbs_dev_t *dev)
{
    struct ibv_srq_attr attr = {.srq_limit = dev->srq_stats.low};

    if (ibv_modify_srq(dev->srq, &attr, IBV_SRQ_LIMIT) != 0) {
        srm_debug("verbs device %s: no low-water event on the shared "
                  "receive queue: %m", dev->name);
    }
}

/*
 * What the device allows: the shared queue's buffers and the completion
 * queue of a queue pair, which must hold every receive it could take.
 */
static int
srm_wire_verbs_check_limits(srm_wire_verbs_dev_t *dev, unsigned recv_total)
{
    struct ibv_device_attr attr;

    if (ibv_query_device(dev->ctx, &attr) != 0) {
        srm_error("verbs device %s: ibv_query_device failed: %m", dev->name);
        return -1;
    }
    if ((attr.max_srq == 0) || ((unsigned)attr.max_srq_wr < recv_total) ||
        ((unsigned)attr.max_cqe < srm_wire_verbs_cq_size(recv_total))) {
        srm_error("verbs device %s: %u receive buffers in a shared queue "
                  "(UCX_SRM_VERBS_RECV_BUFS and its reserve) need a shared "
                  "receive queue of that depth and completion queues of %u; "
                  "the device has %d of at most %d and completion queues of "
                  "at most %d", dev->name, recv_total,
                  srm_wire_verbs_cq_size(recv_total), attr.max_srq,
                  attr.max_srq_wr, attr.max_cqe);
        return -1;
    }
    return 0;
}

int srm_wire_verbs_srq_open(srm_wire_verbs_dev_t *dev, unsigned recv_bufs)
{
    const unsigned total = recv_bufs + recv_bufs / 4;
    struct ibv_srq_init_attr init = {.attr = {.max_wr  = total,
                                              .max_sge = 1}};
    size_t size = (size_t)total * SRM_WIRE_VERBS_SLOT_SIZE;
    unsigned i;

    if (srm_wire_verbs_check_limits(dev, total) != 0) {
        return -1;
    }
    if ((posix_memalign((void**)&dev->srq_buf, 4096, size) != 0) ||
        ((dev->srq_state = calloc(total, sizeof(*dev->srq_state))) == NULL) ||
        ((dev->srq_free = calloc(total, sizeof(*dev->srq_free))) == NULL)) {
        srm_error("verbs device %s: no memory for receive buffers",
                  dev->name);
        return -1;
    }
    dev->srq_mr = ibv_reg_mr(dev->pd, dev->srq_buf, size,
                             IBV_ACCESS_LOCAL_WRITE);
    dev->srq    = ibv_create_srq(dev->pd, &init);
    if ((dev->srq_mr == NULL) || (dev->srq == NULL)) {
        srm_error("verbs device %s: cannot %s: %m", dev->name,
                  (dev->srq_mr == NULL) ? "register receive buffers" :
                                          "create a shared receive queue");
        return -1;
    }
    /* Lowest slots on top of the stack: they are posted first. */
    for (i = 0; i < total; ++i) {
        srm_wire_verbs_srq_give(dev, total - 1 - i);
    }
    dev->srq_stats.slots   = total;
    dev->srq_stats.reserve = total - recv_bufs;
    dev->srq_stats.low     = recv_bufs / 8;
    dev->srq_target        = recv_bufs;
    if (srm_wire_verbs_srq_refill(dev) != 0) {
        return -1;
    }
    srm_wire_verbs_srq_arm(dev);
    return 0;
}

void srm_wire_verbs_srq_close(srm_wire_verbs_dev_t *dev)
{
    if (dev->srq != NULL) {
        ibv_destroy_srq(dev->srq);
    }
    if (dev->srq_mr != NULL) {
        ibv_dereg_mr(dev->srq_mr);
    }
    free(dev->srq_buf);
    free(dev->srq_state);
    free(dev->srq_free);
}

/*
 * The queue ran low although the agent posts every buffer it gets back:
 * buffers are still being filled, or were lost with a queue pair that died
 * while filling them. The reserve goes in; were it gone already, the
 * queue is short of buffers for good, which the log says once.
 */
void srm_wire_verbs_srq_low(srm_wire_verbs_dev_t *dev)
{
    srm_wire_verbs_srq_stats_t *stats = &dev->srq_stats;

    stats->low_water++;
    if (dev->srq_target < stats->slots) {
        srm_info("verbs device %s: the shared receive queue fell below %u "
                 "buffers (%u posted and not yet seen completed, %u held "
                 "unread): posting the %u in reserve", dev->name,
                 stats->low, stats->posted, stats->held,
                 stats->slots - dev->srq_target);
        dev->srq_target = stats->slots;
        srm_wire_verbs_srq_refill(dev);
    } else if (stats->low_water == 2) {
        srm_warn("verbs device %s: the shared receive queue runs low again "
                 "with its reserve posted (%u posted, %u held of %u): "
                 "senders wait for receive buffers (RNR)", dev->name,
                 stats->posted, stats->held, stats->slots);
    }
    srm_wire_verbs_srq_arm(dev);
}

const srm_wire_verbs_srq_stats_t *
srm_wire_verbs_dev_srq_stats(const srm_wire_verbs_dev_t *dev)
{
    return &dev->srq_stats;
}
