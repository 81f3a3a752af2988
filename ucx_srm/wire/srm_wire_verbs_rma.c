/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The verbs wire's one-sided operations beside a queue pair's stream, and
 * the memory registrations they and in-place sends use.
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

void srm_wire_verbs_rma_complete(srm_wire_verbs_qp_t *qp,
                                 const struct ibv_wc *wc)
{
    srm_wire_verbs_rma_done_t *done;

    if ((qp->rma_inflight == 0) ||
        (qp->rma_count == SRM_WIRE_VERBS_RMA_SLOTS)) {
        srm_wire_verbs_fail(qp, "%s", "an RDMA operation completed twice");
        return;
    }
    if (wc->status != IBV_WC_SUCCESS) {
        srm_wire_verbs_fail(qp, "RDMA operation failed: %s",
                            ibv_wc_status_str(wc->status));
    }
    done     = &qp->rma_done[(qp->rma_first + qp->rma_count) %
                             SRM_WIRE_VERBS_RMA_SLOTS];
    done->id = wc->wr_id & ~SRM_WIRE_VERBS_RMA_WR;
    done->ok = (wc->status == IBV_WC_SUCCESS);
    qp->rma_count++;
    qp->rma_inflight--;
}

int srm_wire_verbs_qp_rdma(srm_wire_verbs_qp_t *qp, int write, void *local,
                           uint32_t lkey, uint64_t remote, uint32_t rkey,
                           uint32_t length, uint64_t id)
{
    struct ibv_sge sge = {.addr = (uintptr_t)local, .length = length,
                          .lkey = lkey};
    struct ibv_send_wr wr, *bad;
    int ret;

    if (qp->failed) {
        errno = EIO;
        return -1;
    }
    /* Room for the op and for the completion it will leave behind. */
    if ((qp->rma_inflight + qp->rma_count) >= SRM_WIRE_VERBS_RMA_SLOTS) {
        return 0;
    }
    memset(&wr, 0, sizeof(wr));
    wr.wr_id               = SRM_WIRE_VERBS_RMA_WR | id;
    wr.sg_list             = &sge;
    wr.num_sge             = 1;
    wr.opcode              = write ? IBV_WR_RDMA_WRITE : IBV_WR_RDMA_READ;
    wr.send_flags          = IBV_SEND_SIGNALED;
    wr.wr.rdma.remote_addr = remote;
    wr.wr.rdma.rkey        = rkey;
    ret = ibv_post_send(qp->qp, &wr, &bad);
    if (ret != 0) {
        srm_wire_verbs_fail(qp, "ibv_post_send (RDMA) failed: %s",
                            strerror(ret));
        errno = ret;
        return -1;
    }
    qp->rma_inflight++;
    return 1;
}

int srm_wire_verbs_qp_rma_next(srm_wire_verbs_qp_t *qp, uint64_t *id, int *ok)
{
    if (qp->rma_count == 0) {
        return 0;
    }
    *id           = qp->rma_done[qp->rma_first].id;
    *ok           = qp->rma_done[qp->rma_first].ok;
    qp->rma_first = (qp->rma_first + 1) % SRM_WIRE_VERBS_RMA_SLOTS;
    qp->rma_count--;
    return 1;
}

srm_wire_verbs_mr_t *
srm_wire_verbs_mr_reg(srm_wire_verbs_dev_t *dev, void *addr, size_t length)
{
    struct ibv_mr *mr = ibv_reg_mr(dev->pd, addr, length,
                                   IBV_ACCESS_LOCAL_WRITE |
                                   IBV_ACCESS_REMOTE_READ |
                                   IBV_ACCESS_REMOTE_WRITE);

    return (srm_wire_verbs_mr_t*)mr; /* an ibv_mr behind an opaque name */
}

srm_wire_verbs_mr_t *
srm_wire_verbs_mr_reg_send(srm_wire_verbs_dev_t *dev, void *addr, size_t length)
{
    return (srm_wire_verbs_mr_t*)ibv_reg_mr(dev->pd, addr, length, 0);
}

void srm_wire_verbs_mr_dereg(srm_wire_verbs_mr_t *mr)
{
    if (mr != NULL) {
        ibv_dereg_mr((struct ibv_mr*)mr);
    }
}

uint32_t srm_wire_verbs_mr_lkey(const srm_wire_verbs_mr_t *mr)
{
    return ((const struct ibv_mr*)mr)->lkey;
}

uint32_t srm_wire_verbs_mr_rkey(const srm_wire_verbs_mr_t *mr)
{
    return ((const struct ibv_mr*)mr)->rkey;
}
