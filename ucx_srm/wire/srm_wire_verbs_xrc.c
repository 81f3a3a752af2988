/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * XRC on the verbs wire (see srm_wire_verbs_xrc.h), built with configure
 * --enable-xrc: the device's choice and domain, and the verbs objects, each
 * the shortest correct use of its verb (rdma-core's ibv_xsrq_pingpong shows
 * the same sequence).
 */
#define _GNU_SOURCE
#include "srm_wire_verbs_xrc.h"
#include "srm_wire_verbs_dev.h"
#include "srm_wire_xrc_target.h"

#include <ucx_srm/common/srm_log.h>

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

_Static_assert(SRM_WIRE_VERBS_DEVICE_XRC == IBV_DEVICE_XRC,
               "SRM_WIRE_VERBS_DEVICE_XRC is rdma-core's IBV_DEVICE_XRC");

struct srm_wire_verbs_xrc_domain {
    srm_wire_verbs_dev_t *dev;
    struct ibv_xrcd *xrcd;
    int             fd;
};

struct srm_wire_verbs_xrc_srq {
    struct ibv_cq  *cq;   /* its receive completions */
    struct ibv_srq *srq;
    uint32_t       num;
};

struct srm_wire_verbs_xrc_qp {
    srm_wire_verbs_dev_t *dev;
    struct ibv_cq   *cq;  /* INI: its send completions; TGT: none */
    struct ibv_qp   *qp;
    uint32_t        psn;
};

srm_wire_verbs_xrc_domain_t *
srm_wire_verbs_xrc_domain_open(srm_wire_verbs_dev_t *dev, int fd)
{
    struct ibv_xrcd_init_attr attr = {
        .comp_mask = IBV_XRCD_INIT_ATTR_FD | IBV_XRCD_INIT_ATTR_OFLAGS,
        .fd        = fd,
        .oflags    = O_CREAT,
    };
    srm_wire_verbs_xrc_domain_t *domain = calloc(1, sizeof(*domain));

    if (domain == NULL) {
        return NULL;
    }
    domain->dev  = dev;
    domain->fd   = fd;
    domain->xrcd = ibv_open_xrcd(dev->ctx, &attr);
    if (domain->xrcd == NULL) {
        free(domain);
        return NULL;
    }
    return domain;
}

void srm_wire_verbs_xrc_domain_close(srm_wire_verbs_xrc_domain_t *domain)
{
    if (domain == NULL) {
        return;
    }
    ibv_close_xrcd(domain->xrcd);
    close(domain->fd);
    free(domain);
}

int srm_wire_verbs_xrc_domain_fd(const srm_wire_verbs_xrc_domain_t *domain)
{
    return domain->fd;
}

srm_wire_verbs_xrc_srq_t *
srm_wire_verbs_xrc_srq_create(srm_wire_verbs_xrc_domain_t *domain,
                              unsigned max_wr)
{
    struct ibv_srq_init_attr_ex attr;
    srm_wire_verbs_xrc_srq_t *srq = calloc(1, sizeof(*srq));
    int err;

    if (srq == NULL) {
        return NULL;
    }
    srq->cq = ibv_create_cq(domain->dev->ctx, (int)max_wr, srq, NULL, 0);
    if (srq->cq == NULL) {
        goto err;
    }
    memset(&attr, 0, sizeof(attr));
    attr.attr.max_wr  = max_wr;
    attr.attr.max_sge = 1;
    attr.comp_mask    = IBV_SRQ_INIT_ATTR_TYPE | IBV_SRQ_INIT_ATTR_XRCD |
                        IBV_SRQ_INIT_ATTR_CQ | IBV_SRQ_INIT_ATTR_PD;
    attr.srq_type     = IBV_SRQT_XRC;
    attr.xrcd         = domain->xrcd;
    attr.cq           = srq->cq;
    attr.pd           = domain->dev->pd;
    srq->srq          = ibv_create_srq_ex(domain->dev->ctx, &attr);
    if ((srq->srq == NULL) || (ibv_get_srq_num(srq->srq, &srq->num) != 0)) {
        goto err;
    }
    return srq;

err:
    err = errno;
    srm_wire_verbs_xrc_srq_destroy(srq);
    errno = err;
    return NULL;
}

void srm_wire_verbs_xrc_srq_destroy(srm_wire_verbs_xrc_srq_t *srq)
{
    if (srq == NULL) {
        return;
    }
    if (srq->srq != NULL) {
        ibv_destroy_srq(srq->srq);
    }
    if (srq->cq != NULL) {
        ibv_destroy_cq(srq->cq);
    }
    free(srq);
}

uint32_t srm_wire_verbs_xrc_srq_num(const srm_wire_verbs_xrc_srq_t *srq)
{
    return srq->num;
}

/* Creates the queue pair of init (with a send queue of cq_size, if any)
 * and moves it to INIT. */
static srm_wire_verbs_xrc_qp_t *srm_wire_verbs_xrc_qp_create(
        srm_wire_verbs_dev_t *dev, struct ibv_qp_init_attr_ex *init,
        unsigned cq_size)
{
    struct ibv_qp_attr attr = {
        .qp_state        = IBV_QPS_INIT,
        .pkey_index      = 0,
        .port_num        = dev->port,
        .qp_access_flags = 0, /* SEND only */
    };
    srm_wire_verbs_xrc_qp_t *qp = calloc(1, sizeof(*qp));
    int err;

    if (qp == NULL) {
        return NULL;
    }
    qp->dev = dev;
    qp->psn = srm_wire_verbs_new_psn();
    if (cq_size > 0) {
        qp->cq = ibv_create_cq(dev->ctx, (int)cq_size, qp, NULL, 0);
        if (qp->cq == NULL) {
            goto err;
        }
        init->send_cq = qp->cq;
    }
    qp->qp = ibv_create_qp_ex(dev->ctx, init);
    if (qp->qp == NULL) {
        goto err;
    }
    err = ibv_modify_qp(qp->qp, &attr,
                        IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
                        IBV_QP_ACCESS_FLAGS);
    if (err != 0) {
        errno = err;
        goto err;
    }
    return qp;

err:
    err = errno;
    srm_wire_verbs_xrc_qp_destroy(qp);
    errno = err;
    return NULL;
}

srm_wire_verbs_xrc_qp_t *
srm_wire_verbs_xrc_tgt_create(srm_wire_verbs_xrc_domain_t *domain)
{
    struct ibv_qp_init_attr_ex init = {
        .qp_type   = IBV_QPT_XRC_RECV,
        .comp_mask = IBV_QP_INIT_ATTR_XRCD,
        .xrcd      = domain->xrcd,
    };

    return srm_wire_verbs_xrc_qp_create(domain->dev, &init, 0);
}

srm_wire_verbs_xrc_qp_t *
srm_wire_verbs_xrc_ini_create(srm_wire_verbs_dev_t *dev, unsigned max_send_wr)
{
    struct ibv_qp_init_attr_ex init = {
        .qp_type   = IBV_QPT_XRC_SEND,
        .cap       = {.max_send_wr = max_send_wr, .max_send_sge = 1},
        .comp_mask = IBV_QP_INIT_ATTR_PD,
        .pd        = dev->pd,
    };

    return srm_wire_verbs_xrc_qp_create(dev, &init, max_send_wr);
}

void srm_wire_verbs_xrc_qp_destroy(srm_wire_verbs_xrc_qp_t *qp)
{
    if (qp == NULL) {
        return;
    }
    if (qp->qp != NULL) {
        ibv_destroy_qp(qp->qp);
    }
    if (qp->cq != NULL) {
        ibv_destroy_cq(qp->cq);
    }
    free(qp);
}

void srm_wire_verbs_xrc_qp_local(const srm_wire_verbs_xrc_qp_t *qp,
                                 srm_hello_qp_t *info)
{
    memset(info, 0, sizeof(*info));
    memcpy(info->gid, qp->dev->gid.raw, sizeof(info->gid));
    info->qpn = qp->qp->qp_num;
    info->psn = qp->psn;
    info->lid = qp->dev->lid;
    info->mtu = qp->dev->mtu;
}

int srm_wire_verbs_xrc_qp_connect(srm_wire_verbs_xrc_qp_t *qp,
                                  const srm_hello_qp_t *remote)
{
    int mask = IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
               IBV_QP_RQ_PSN;
    struct ibv_qp_attr attr;
    int ret;

    if (srm_wire_verbs_dev_rtr_attr(qp->dev, remote, &attr) != 0) {
        return -1;
    }
    if (qp->qp->qp_type == IBV_QPT_XRC_RECV) {
        /* Only the target responds: it takes an RC responder's limits. */
        attr.max_dest_rd_atomic = 1;
        attr.min_rnr_timer      = 12; /* 0.64 ms */
        mask |= IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER;
    }
    ret = ibv_modify_qp(qp->qp, &attr, mask);
    if ((ret == 0) && (qp->qp->qp_type == IBV_QPT_XRC_SEND)) {
        memset(&attr, 0, sizeof(attr));
        attr.qp_state      = IBV_QPS_RTS;
        attr.timeout       = 14; /* as the RC queue pairs */
        attr.retry_cnt     = 7;
        attr.rnr_retry     = 7;
        attr.sq_psn        = qp->psn;
        attr.max_rd_atomic = 1;
        ret = ibv_modify_qp(qp->qp, &attr,
                            IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
                            IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN |
                            IBV_QP_MAX_QP_RD_ATOMIC);
    }
    if (ret != 0) {
        errno = ret;
        return -1;
    }
    return 0;
}

int srm_wire_verbs_xrc_send(srm_wire_verbs_xrc_qp_t *ini, uint32_t remote_srqn,
                            const void *buf, uint32_t len, uint32_t lkey,
                            uint64_t wr_id, int signaled)
{
    struct ibv_sge sge = {.addr = (uintptr_t)buf, .length = len,
                          .lkey = lkey};
    struct ibv_send_wr wr = {
        .wr_id      = wr_id,
        .sg_list    = &sge,
        .num_sge    = 1,
        .opcode     = IBV_WR_SEND,
        .send_flags = signaled ? IBV_SEND_SIGNALED : 0,
    }, *bad;
    int ret;

    if ((ini->qp->qp_type != IBV_QPT_XRC_SEND) || (remote_srqn == 0) ||
        (remote_srqn > SRM_XRC_SRQN_MAX)) {
        errno = EINVAL;
        return -1;
    }
    wr.qp_type.xrc.remote_srqn = remote_srqn;
    ret = ibv_post_send(ini->qp, &wr, &bad);
    if (ret != 0) {
        errno = ret;
        return -1;
    }
    return 0;
}

/*
 * XRC or RC (srm_wire_verbs_xrc_choose). With XRC the node's domain is opened
 * now, on a memfd for the clients to open it by (once they do), so that a
 * device that claims XRC but gives no domain is found out at start.
 */
int srm_wire_verbs_xrc_dev_init(srm_wire_verbs_dev_t *dev, unsigned mode)
{
    struct ibv_device_attr_ex attr;
    uint64_t caps;
    int fd;

    caps     = (ibv_query_device_ex(dev->ctx, NULL, &attr) == 0) ?
               attr.orig_attr.device_cap_flags : 0;
    dev->xrc = srm_wire_verbs_xrc_choose(mode, 1, caps, &dev->xrc_why);
    if (dev->xrc < 0) {
        srm_error("verbs device %s: UCX_SRM_XRC=yes, but %s", dev->name,
                  dev->xrc_why);
        return -1;
    }
    if (dev->xrc) {
        fd = memfd_create("srm-xrc-domain", MFD_CLOEXEC);
        dev->xrc_domain = (fd >= 0) ? srm_wire_verbs_xrc_domain_open(dev, fd) :
                                      NULL;
        if (dev->xrc_domain == NULL) {
            srm_log((mode == SRM_XRC_YES) ? SRM_LOG_ERROR : SRM_LOG_WARN,
                    "verbs device %s: cannot open an XRC domain: %m%s",
                    dev->name, (mode == SRM_XRC_YES) ? "" : "; using RC");
            if (fd >= 0) {
                close(fd);
            }
            if (mode == SRM_XRC_YES) {
                return -1;
            }
            dev->xrc     = 0;
            dev->xrc_why = "the XRC domain could not be opened";
        }
    }
    return 0;
}

void srm_wire_verbs_xrc_dev_close(srm_wire_verbs_dev_t *dev)
{
    srm_wire_verbs_xrc_domain_close(dev->xrc_domain);
    dev->xrc_domain = NULL;
}
