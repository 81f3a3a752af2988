/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The two wires behind the seam of srm_wire.h: the calls of each wire's
 * own file, with the few things the agent must not know of either.
 */
#include "srm_wire.h"

#include <ucx_srm/wire/srm_wire_tcp.h>

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

int srm_wire_verbs_is_device_spec(const char *spec)
{
    /* Interface names cannot hold ':' (aliases aside, which have no
     * address of their own here); device specs always do. */
    return strchr(spec, ':') != NULL;
}

/* ------------------------------------------------------------------ tcp */

static void srm_wire_tcp_local(const srm_wire_conn_t *conn,
                               srm_hello_qp_t *info)
{
    memset(info, 0, sizeof(*info));
}

static ssize_t srm_wire_tcp_conn_sendv(srm_wire_conn_t *conn,
                                       const struct iovec *iov,
                                       const srm_wire_verbs_mr_t *const *mrs,
                                       int iovcnt)
{
    return srm_wire_tcp_sendv(conn->fd, iov, iovcnt);
}

static ssize_t srm_wire_tcp_conn_recvv(srm_wire_conn_t *conn,
                                       const struct iovec *iov, int iovcnt)
{
    return srm_wire_tcp_recvv(conn->fd, iov, iovcnt);
}

static size_t srm_wire_tcp_pending(const srm_wire_conn_t *conn)
{
    return 0; /* the socket says when there is more */
}

static ucs_status_t srm_wire_tcp_poll(srm_wire_conn_t *conn)
{
    return UCS_OK;
}

static srm_log_level_t srm_wire_tcp_why(const srm_wire_conn_t *conn, int err,
                                        char *buf, size_t size)
{
    if (err == 0) {
        snprintf(buf, size, "the peer closed it");
        return SRM_LOG_INFO;
    }
    snprintf(buf, size, "receive failed: %s", strerror(err));
    return SRM_LOG_WARN;
}

static ucs_status_t srm_wire_tcp_conn_retransmits(const srm_wire_conn_t *conn,
                                                  uint32_t *resent,
                                                  uint32_t *sent)
{
    return (srm_wire_tcp_retransmits(conn->fd, resent, sent) == 0) ?
                   UCS_OK : UCS_ERR_IO_ERROR;
}

static void srm_wire_tcp_drain(srm_wire_conn_t *conn, double timeout)
{
    /* The kernel sends what it took after close. */
}

static int srm_wire_tcp_fail(srm_wire_conn_t *conn, const char **what)
{
    struct linger abort_close = {.l_onoff = 1, .l_linger = 0};

    /* Closing it now resets the connection. */
    setsockopt(conn->fd, SOL_SOCKET, SO_LINGER, &abort_close,
               sizeof(abort_close));
    *what = "connection reset";
    return 1;
}

static int srm_wire_tcp_usable(const srm_wire_conn_t *conn)
{
    return 1;
}

static unsigned srm_wire_tcp_counters(const srm_wire_conn_t *conn,
                                      srm_wire_counter_t *out)
{
    return 0; /* the kernel's are in TCP_INFO (retransmits) */
}

const srm_wire_ops_t srm_wire_tcp_ops = {
    .name        = "tcp",
    .caps        = SRM_WIRE_CAP_SHARED_FD | SRM_WIRE_CAP_RETRANS,
    .hello_wire  = SRM_HELLO_WIRE_TCP,
    .make        = NULL,
    .local       = srm_wire_tcp_local,
    .connect     = NULL,
    .sendv       = srm_wire_tcp_conn_sendv,
    .recvv       = srm_wire_tcp_conn_recvv,
    .pending     = srm_wire_tcp_pending,
    .poll        = srm_wire_tcp_poll,
    .why         = srm_wire_tcp_why,
    .retransmits = srm_wire_tcp_conn_retransmits,
    .drain       = srm_wire_tcp_drain,
    .fail        = srm_wire_tcp_fail,
    .rdma        = NULL,
    .rdma_next   = NULL,
    .usable      = srm_wire_tcp_usable,
    .counters    = srm_wire_tcp_counters,
};

/* ---------------------------------------------------------------- verbs */

static ucs_status_t srm_wire_verbs_conn_make(srm_wire_conn_t *conn,
                                             srm_wire_verbs_dev_t *dev,
                                             unsigned owner)
{
    if (conn->qp == NULL) {
        conn->qp = srm_wire_verbs_qp_create(dev, owner);
    }
    return (conn->qp != NULL) ? UCS_OK : UCS_ERR_IO_ERROR;
}

static void srm_wire_verbs_conn_local(const srm_wire_conn_t *conn,
                                      srm_hello_qp_t *info)
{
    memset(info, 0, sizeof(*info));
    if (conn->qp != NULL) {
        srm_wire_verbs_qp_local(conn->qp, info);
    }
}

static ucs_status_t srm_wire_verbs_conn_connect(srm_wire_conn_t *conn,
                                                const srm_hello_qp_t *peer)
{
    return (srm_wire_verbs_qp_connect(conn->qp, peer) == 0) ?
                   UCS_OK : UCS_ERR_IO_ERROR;
}

static ssize_t srm_wire_verbs_conn_sendv(srm_wire_conn_t *conn,
                                         const struct iovec *iov,
                                         const srm_wire_verbs_mr_t *const *mrs,
                                         int iovcnt)
{
    return srm_wire_verbs_qp_sendv_mr(conn->qp, iov, mrs, iovcnt);
}

static ssize_t srm_wire_verbs_conn_recvv(srm_wire_conn_t *conn,
                                         const struct iovec *iov, int iovcnt)
{
    return srm_wire_verbs_qp_recvv(conn->qp, iov, iovcnt);
}

static size_t srm_wire_verbs_conn_pending(const srm_wire_conn_t *conn)
{
    return srm_wire_verbs_qp_pending(conn->qp);
}

/* A link on the verbs wire whose queue pair is not made yet (or could
 * not be) has nothing to poll, nor RDMA to collect. */
static ucs_status_t srm_wire_verbs_conn_poll(srm_wire_conn_t *conn)
{
    return ((conn->qp == NULL) || (srm_wire_verbs_qp_poll(conn->qp) == 0)) ?
                   UCS_OK : UCS_ERR_IO_ERROR;
}

static srm_log_level_t srm_wire_verbs_conn_why(const srm_wire_conn_t *conn,
                                               int err, char *buf, size_t size)
{
    snprintf(buf, size, "queue pair 0x%x: %s", srm_wire_verbs_qp_num(conn->qp),
             srm_wire_verbs_qp_error(conn->qp));
    return SRM_LOG_WARN;
}

static ucs_status_t srm_wire_verbs_conn_retransmits(const srm_wire_conn_t *conn,
                                                    uint32_t *resent,
                                                    uint32_t *sent)
{
    return UCS_ERR_UNSUPPORTED; /* the device retries by itself */
}

static void srm_wire_verbs_conn_drain(srm_wire_conn_t *conn, double timeout)
{
    /* Destroying a queue pair drops what it has not sent yet. */
    srm_wire_verbs_qp_drain(conn->qp, timeout);
}

static int srm_wire_verbs_conn_fail(srm_wire_conn_t *conn, const char **what)
{
    /* Its flushed work requests fail the link, as a real error would. */
    srm_wire_verbs_qp_force_error(conn->qp);
    *what = "queue pair moved to the error state";
    return 0;
}

static ucs_status_t srm_wire_verbs_conn_rdma(srm_wire_conn_t *conn, int write,
                                             void *local, uint32_t lkey,
                                             uint64_t remote, uint32_t rkey,
                                             uint32_t length, uint64_t id)
{
    int ret = srm_wire_verbs_qp_rdma(conn->qp, write, local, lkey, remote,
                                     rkey, length, id);

    return (ret > 0) ? UCS_OK : (ret == 0) ? UCS_ERR_NO_RESOURCE :
                                             UCS_ERR_IO_ERROR;
}

static int srm_wire_verbs_conn_rdma_next(srm_wire_conn_t *conn, uint64_t *id,
                                         int *ok)
{
    return (conn->qp != NULL) && srm_wire_verbs_qp_rma_next(conn->qp, id, ok);
}

static int srm_wire_verbs_conn_usable(const srm_wire_conn_t *conn)
{
    return (conn->qp != NULL) && (srm_wire_verbs_qp_error(conn->qp)[0] == '\0');
}

static unsigned srm_wire_verbs_conn_counters(const srm_wire_conn_t *conn,
                                             srm_wire_counter_t *out)
{
    const srm_wire_verbs_stats_t *stats;
    unsigned n = 0;

    if (conn->qp == NULL) {
        return 0;
    }
    stats    = srm_wire_verbs_qp_stats(conn->qp);
    out[n++] = (srm_wire_counter_t){"qp", srm_wire_verbs_qp_num(conn->qp), 1};
    out[n++] = (srm_wire_counter_t){"remote_qp",
                                    srm_wire_verbs_qp_remote_num(conn->qp), 1};
    out[n++] = (srm_wire_counter_t){"send_wrs", stats->send_wrs, 0};
    out[n++] = (srm_wire_counter_t){"doorbells", stats->doorbells, 0};
    out[n++] = (srm_wire_counter_t){"signaled", stats->signaled, 0};
    out[n++] = (srm_wire_counter_t){"inline", stats->inline_wrs, 0};
    out[n++] = (srm_wire_counter_t){"in_place", stats->in_place_wrs, 0};
    out[n++] = (srm_wire_counter_t){"recv_wrs", stats->recv_wrs, 0};
    return n; /* SRM_WIRE_COUNTERS_MAX */
}

const srm_wire_ops_t srm_wire_verbs_ops = {
    .name        = "verbs",
    .caps        = SRM_WIRE_CAP_RDMA | SRM_WIRE_CAP_COMPLETIONS |
                   SRM_WIRE_CAP_ENDPOINT,
    .hello_wire  = SRM_HELLO_WIRE_VERBS,
    .make        = srm_wire_verbs_conn_make,
    .local       = srm_wire_verbs_conn_local,
    .connect     = srm_wire_verbs_conn_connect,
    .sendv       = srm_wire_verbs_conn_sendv,
    .recvv       = srm_wire_verbs_conn_recvv,
    .pending     = srm_wire_verbs_conn_pending,
    .poll        = srm_wire_verbs_conn_poll,
    .why         = srm_wire_verbs_conn_why,
    .retransmits = srm_wire_verbs_conn_retransmits,
    .drain       = srm_wire_verbs_conn_drain,
    .fail        = srm_wire_verbs_conn_fail,
    .rdma        = srm_wire_verbs_conn_rdma,
    .rdma_next   = srm_wire_verbs_conn_rdma_next,
    .usable      = srm_wire_verbs_conn_usable,
    .counters    = srm_wire_verbs_conn_counters,
};

void srm_wire_conn_close(srm_wire_conn_t *conn)
{
    if (conn->fd >= 0) {
        close(conn->fd);
        conn->fd = -1;
    }
    srm_wire_verbs_qp_destroy(conn->qp);
    conn->qp = NULL;
}
