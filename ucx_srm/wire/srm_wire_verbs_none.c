/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The verbs wire in a build without libibverbs: every function fails with
 * ENOSYS (srm_wire_verbs.h), so the agent runs on the tcp wire only.
 */
#include "srm_wire_verbs.h"

#include <ucx_srm/common/srm_log.h>

#include <errno.h>

int srm_wire_verbs_built(void)
{
    return 0;
}

int srm_wire_verbs_dev_open(const char *spec,
                            const srm_wire_verbs_dev_params_t *params,
                            srm_wire_verbs_dev_t **dev_p, char *netdev,
                            size_t netdev_size)
{
    srm_error("UCX_SRM_DEVICES: '%s' is a verbs device, but this srmd was "
              "built without libibverbs (install libibverbs-dev and "
              "rebuild)", spec);
    errno = ENOSYS;
    return -1;
}

void srm_wire_verbs_dev_close(srm_wire_verbs_dev_t *dev) {}
const char *srm_wire_verbs_dev_name(const srm_wire_verbs_dev_t *dev)
{
    return "";
}
int srm_wire_verbs_dev_event_fd(const srm_wire_verbs_dev_t *dev)
{
    return -1;
}
int srm_wire_verbs_dev_async_fd(const srm_wire_verbs_dev_t *dev)
{
    return -1;
}
void srm_wire_verbs_dev_async(srm_wire_verbs_dev_t *dev)
{
}
const srm_wire_verbs_srq_stats_t *
srm_wire_verbs_dev_srq_stats(const srm_wire_verbs_dev_t *dev)
{
    return NULL;
}
const srm_wire_verbs_tx_stats_t *
srm_wire_verbs_dev_tx_stats(const srm_wire_verbs_dev_t *dev)
{
    return NULL;
}
int srm_wire_verbs_dev_take_room(srm_wire_verbs_dev_t *dev) { return 0; }
int srm_wire_verbs_dev_xrc(const srm_wire_verbs_dev_t *dev, const char **why)
{
    *why = "no verbs";
    return 0;
}
srm_wire_verbs_qp_t *srm_wire_verbs_dev_next_event(srm_wire_verbs_dev_t *dev)
{
    return NULL;
}
srm_wire_verbs_qp_t *
srm_wire_verbs_qp_create(srm_wire_verbs_dev_t *dev, unsigned owner)
{
    errno = ENOSYS;
    return NULL;
}
void srm_wire_verbs_qp_destroy(srm_wire_verbs_qp_t *qp) {}
unsigned srm_wire_verbs_qp_owner(const srm_wire_verbs_qp_t *qp) { return 0; }
void srm_wire_verbs_qp_local(const srm_wire_verbs_qp_t *qp,
                             srm_hello_qp_t *info)
{
    memset(info, 0, sizeof(*info));
}
int srm_wire_verbs_qp_connect(srm_wire_verbs_qp_t *qp,
                              const srm_hello_qp_t *remote)
{
    errno = ENOSYS;
    return -1;
}
ssize_t srm_wire_verbs_qp_sendv(srm_wire_verbs_qp_t *qp,
                                const struct iovec *iov, int iovcnt)
{
    errno = ENOSYS;
    return -1;
}
ssize_t
srm_wire_verbs_qp_sendv_mr(srm_wire_verbs_qp_t *qp, const struct iovec *iov,
                           const srm_wire_verbs_mr_t *const *mrs, int iovcnt)
{
    errno = ENOSYS;
    return -1;
}
ssize_t srm_wire_verbs_qp_recv(srm_wire_verbs_qp_t *qp, void *buf, size_t len)
{
    errno = ENOSYS;
    return -1;
}
ssize_t srm_wire_verbs_qp_recvv(srm_wire_verbs_qp_t *qp,
                                const struct iovec *iov, int iovcnt)
{
    errno = ENOSYS;
    return -1;
}
int srm_wire_verbs_qp_poll(srm_wire_verbs_qp_t *qp) { return -1; }
size_t srm_wire_verbs_qp_pending(const srm_wire_verbs_qp_t *qp) { return 0; }
int srm_wire_verbs_qp_drain(srm_wire_verbs_qp_t *qp, double timeout)
{
    return -1;
}
void srm_wire_verbs_qp_force_error(srm_wire_verbs_qp_t *qp)
{
}
const char *srm_wire_verbs_qp_error(const srm_wire_verbs_qp_t *qp)
{
    return "no verbs";
}
uint32_t srm_wire_verbs_qp_num(const srm_wire_verbs_qp_t *qp)
{
    return 0;
}
uint32_t srm_wire_verbs_qp_remote_num(const srm_wire_verbs_qp_t *qp)
{
    return 0;
}
const srm_wire_verbs_stats_t *
srm_wire_verbs_qp_stats(const srm_wire_verbs_qp_t *qp)
{
    return NULL;
}

srm_wire_verbs_mr_t *
srm_wire_verbs_mr_reg(srm_wire_verbs_dev_t *dev, void *addr, size_t length)
{
    errno = ENOSYS;
    return NULL;
}

srm_wire_verbs_mr_t *
srm_wire_verbs_mr_reg_send(srm_wire_verbs_dev_t *dev, void *addr, size_t length)
{
    errno = ENOSYS;
    return NULL;
}

int srm_wire_verbs_qp_rdma(srm_wire_verbs_qp_t *qp, int write, void *local,
                           uint32_t lkey, uint64_t remote, uint32_t rkey,
                           uint32_t length, uint64_t id)
{
    errno = ENOSYS;
    return -1;
}

int srm_wire_verbs_qp_rma_next(srm_wire_verbs_qp_t *qp, uint64_t *id, int *ok)
{
    return 0;
}

void srm_wire_verbs_mr_dereg(srm_wire_verbs_mr_t *mr) {}
uint32_t srm_wire_verbs_mr_lkey(const srm_wire_verbs_mr_t *mr) { return 0; }
uint32_t srm_wire_verbs_mr_rkey(const srm_wire_verbs_mr_t *mr) { return 0; }
