/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * A verbs queue pair's byte stream: made, connected, and the channel's
 * stream sent and received over SEND/RECV, at most SRM_WIRE_VERBS_SEND_SLOTS
 * sends in flight.
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

void srm_wire_verbs_fail(srm_wire_verbs_qp_t *qp, const char *fmt,
                         const char *what)
{
    if (!qp->failed) {
        qp->failed = 1;
        snprintf(qp->error, sizeof(qp->error), fmt, what);
    }
}

static int srm_wire_verbs_to_init(srm_wire_verbs_qp_t *qp)
{
    struct ibv_qp_attr attr = {
        .qp_state        = IBV_QPS_INIT,
        .pkey_index      = 0,
        .port_num        = qp->dev->port,
        /* No remote access before the peer is proven: granted when the
         * queue pair is connected (srm_wire_verbs_qp_connect). */
        .qp_access_flags = 0,
    };

    return ibv_modify_qp(qp->qp, &attr,
                         IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
                         IBV_QP_ACCESS_FLAGS);
}

srm_wire_verbs_qp_t *
srm_wire_verbs_qp_create(srm_wire_verbs_dev_t *dev, unsigned owner)
{
    struct ibv_qp_init_attr init = {
        .cap = {.max_send_wr     = SRM_WIRE_VERBS_SEND_SLOTS +
                                   SRM_WIRE_VERBS_RMA_SLOTS,
                .max_send_sge    = 1,
                .max_inline_data = SRM_WIRE_VERBS_MAX_INLINE},
        .srq        = dev->srq,
        .qp_type    = IBV_QPT_RC,
        .sq_sig_all = 0,
    };
    srm_wire_verbs_qp_t *qp;

    qp = calloc(1, sizeof(*qp));
    if (qp == NULL) {
        srm_error("no memory for a queue pair on %s", dev->name);
        return NULL;
    }
    qp->dev   = dev;
    qp->owner = owner;
    qp->next  = dev->qps;
    dev->qps  = qp;
    qp->cq    = ibv_create_cq(dev->ctx,
                              (int)srm_wire_verbs_cq_size(dev->srq_stats.slots),
                              qp, dev->channel, 0);
    if ((qp->cq == NULL) || (ibv_req_notify_cq(qp->cq, 0) != 0)) {
        srm_error("%s: cannot create a completion queue: %m", dev->name);
        goto err;
    }
    init.send_cq = qp->cq;
    init.recv_cq = qp->cq;
    qp->qp       = ibv_create_qp(dev->pd, &init);
    if (qp->qp == NULL) {
        init.cap.max_inline_data = 0; /* the provider may have no inline */
        qp->qp = ibv_create_qp(dev->pd, &init);
    }
    if (qp->qp == NULL) {
        srm_error("%s: cannot create an RC queue pair: %m", dev->name);
        goto err;
    }
    qp->max_inline = init.cap.max_inline_data;
    if (srm_wire_verbs_to_init(qp) != 0) {
        srm_error("%s: queue pair 0x%x to INIT failed: %m", dev->name,
                  qp->qp->qp_num);
        goto err;
    }
    qp->psn = srm_wire_verbs_new_psn();
    return qp;

err:
    srm_wire_verbs_qp_destroy(qp);
    return NULL;
}

/*
 * A queue pair to be destroyed gives back the buffers it took from the
 * shared queue: those it holds, and those it was filling, which the error
 * state flushes to its completion queue (on devices that do: rxe loses
 * the one being filled, which is what the reserve is for).
 */
static void srm_wire_verbs_qp_flush(srm_wire_verbs_qp_t *qp)
{
    struct ibv_qp_attr attr = {.qp_state = IBV_QPS_ERR};
    struct timespec start, now;
    long waited_us;

    if (ibv_modify_qp(qp->qp, &attr, IBV_QP_STATE) != 0) {
        return;
    }
    clock_gettime(CLOCK_MONOTONIC, &start);
    do {
        srm_wire_verbs_qp_poll(qp);
        clock_gettime(CLOCK_MONOTONIC, &now);
        waited_us = (now.tv_sec - start.tv_sec) * 1000000L +
                    (now.tv_nsec - start.tv_nsec) / 1000;
    } while (waited_us < SRM_WIRE_VERBS_FLUSH_WAIT_US);
}

void srm_wire_verbs_qp_destroy(srm_wire_verbs_qp_t *qp)
{
    srm_wire_verbs_qp_t **link;
    srm_wire_verbs_dev_t *dev;

    if (qp == NULL) {
        return;
    }
    dev = qp->dev;
    if (qp->qp != NULL) {
        srm_wire_verbs_qp_flush(qp);
        ibv_destroy_qp(qp->qp);
    }
    if (qp->cq != NULL) {
        ibv_destroy_cq(qp->cq);
    }
    srm_wire_verbs_tx_done(qp,
                           qp->send_head); /* the device reads them no more */
    for (link = &dev->qps; *link != qp; link = &(*link)->next) {
    }
    *link = qp->next;
    while (qp->rx_count > 0) {
        srm_wire_verbs_rx_pop(qp);
    }
    srm_wire_verbs_srq_refill(dev);
    free(qp->spill);
    free(qp);
}

unsigned srm_wire_verbs_qp_owner(const srm_wire_verbs_qp_t *qp)
{
    return qp->owner;
}

void srm_wire_verbs_qp_local(const srm_wire_verbs_qp_t *qp,
                             srm_hello_qp_t *info)
{
    memset(info, 0, sizeof(*info));
    memcpy(info->gid, qp->dev->gid.raw, sizeof(info->gid));
    info->qpn = qp->qp->qp_num;
    info->psn = qp->psn;
    info->lid = qp->dev->lid;
    info->mtu = qp->dev->mtu;
}

int srm_wire_verbs_dev_rtr_attr(const srm_wire_verbs_dev_t *dev,
                                const srm_hello_qp_t *remote,
                                struct ibv_qp_attr *attr)
{
    if ((remote->qpn == 0) || (remote->qpn > 0xffffff) ||
        (remote->mtu < IBV_MTU_256) || (remote->mtu > IBV_MTU_4096)) {
        errno = EPROTO;
        return -1;
    }
    memset(attr, 0, sizeof(*attr));
    attr->qp_state         = IBV_QPS_RTR;
    attr->path_mtu         = (remote->mtu < dev->mtu) ?
                             (enum ibv_mtu)remote->mtu :
                             (enum ibv_mtu)dev->mtu;
    attr->dest_qp_num      = remote->qpn;
    attr->rq_psn           = remote->psn & 0xffffff;
    attr->ah_attr.port_num = dev->port;
    if (dev->link_layer == IBV_LINK_LAYER_ETHERNET) {
        attr->ah_attr.is_global      = 1;
        attr->ah_attr.grh.sgid_index = dev->gid_index;
        attr->ah_attr.grh.hop_limit  = 64;
        memcpy(attr->ah_attr.grh.dgid.raw, remote->gid, sizeof(remote->gid));
    } else {
        attr->ah_attr.dlid = remote->lid;
    }
    return 0;
}

int srm_wire_verbs_qp_connect(srm_wire_verbs_qp_t *qp,
                              const srm_hello_qp_t *remote)
{
    struct ibv_qp_attr attr;
    int ret;

    if (srm_wire_verbs_dev_rtr_attr(qp->dev, remote, &attr) != 0) {
        return -1;
    }
    attr.max_dest_rd_atomic = 1;
    attr.min_rnr_timer      = 12; /* 0.64 ms */
    /* The peer agent's RDMA into our registered regions (srm_regions.h); each
     * region's MR still decides what it allows. */
    attr.qp_access_flags    = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ;
    ret = ibv_modify_qp(qp->qp, &attr,
                        IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU |
                        IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
                        IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER |
                        IBV_QP_ACCESS_FLAGS);
    if (ret != 0) {
        errno = ret;
        return -1;
    }

    memset(&attr, 0, sizeof(attr));
    attr.qp_state      = IBV_QPS_RTS;
    attr.timeout       = 14; /* 67 ms per try */
    attr.retry_cnt     = 7;
    attr.rnr_retry     = 7;  /* a receiver out of buffers: wait, forever */
    attr.sq_psn        = qp->psn;
    attr.max_rd_atomic = 1;
    ret = ibv_modify_qp(qp->qp, &attr,
                        IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
                        IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN |
                        IBV_QP_MAX_QP_RD_ATOMIC);
    if (ret != 0) {
        errno = ret;
        return -1;
    }
    qp->remote_qpn = remote->qpn;
    return 0;
}

/*
 * Copies the oldest held buffer's unread bytes to the end of the spill and
 * gives the buffer back. -1 (the queue pair failed) past SPILL_MAX.
 */
static int srm_wire_verbs_spill_oldest(srm_wire_verbs_qp_t *qp)
{
    srm_wire_verbs_rx_t *rx = &qp->rx[qp->rx_first];
    size_t bytes       = rx->len - qp->rx_offset;
    size_t need, cap;
    uint8_t *spill;

    if (qp->spill_off > 0) {
        memmove(qp->spill, qp->spill + qp->spill_off,
                qp->spill_len - qp->spill_off);
        qp->spill_len -= qp->spill_off;
        qp->spill_off  = 0;
    }
    need = qp->spill_len + bytes;
    if (need > SRM_WIRE_VERBS_SPILL_MAX) {
        srm_wire_verbs_fail(qp, "%s", "the peer sent more than any channel "
                            "window allows while its input was not read");
        return -1;
    }
    if (need > qp->spill_cap) {
        cap   = (qp->spill_cap == 0) ? 4 * SRM_WIRE_VERBS_SLOT_SIZE :
                                       2 * qp->spill_cap;
        cap   = (cap < need) ? need : cap;
        spill = realloc(qp->spill, cap);
        if (spill == NULL) {
            srm_wire_verbs_fail(qp, "%s", "no memory for input not yet read");
            return -1;
        }
        qp->spill     = spill;
        qp->spill_cap = cap;
    }
    memcpy(qp->spill + qp->spill_len,
           srm_wire_verbs_recv_slot(qp->dev, rx->slot) + qp->rx_offset, bytes);
    qp->spill_len                    += bytes;
    qp->dev->srq_stats.spilled_bytes += bytes;
    srm_wire_verbs_rx_pop(qp);
    return 0;
}

/* A receive of the shared queue completed on this queue pair. */
static void srm_wire_verbs_recv_complete(srm_wire_verbs_qp_t *qp,
                                         const struct ibv_wc *wc)
{
    uint64_t slot        = wc->wr_id & ~SRM_WIRE_VERBS_RECV_WR;
    srm_wire_verbs_dev_t *dev = qp->dev;
    srm_wire_verbs_rx_t *rx;

    if ((slot >= dev->srq_stats.slots) ||
        (dev->srq_state[slot] != SRM_WIRE_VERBS_SLOT_POSTED)) {
        srm_wire_verbs_fail(qp, "%s", "a receive completed twice");
        return;
    }
    dev->srq_stats.posted--;
    if ((wc->status != IBV_WC_SUCCESS) || qp->failed ||
        ((qp->rx_count == SRM_WIRE_VERBS_QP_HELD) &&
         (srm_wire_verbs_spill_oldest(qp) != 0))) {
        srm_wire_verbs_fail(qp, "work request failed: %s",
                            ibv_wc_status_str(wc->status));
        srm_wire_verbs_srq_give(dev, (uint32_t)slot);
        return;
    }
    dev->srq_state[slot] = SRM_WIRE_VERBS_SLOT_HELD;
    dev->srq_stats.held++;
    rx       = &qp->rx[(qp->rx_first + qp->rx_count) % SRM_WIRE_VERBS_QP_HELD];
    rx->slot = (uint32_t)slot;
    rx->len  = wc->byte_len;
    qp->rx_count++;
    qp->rx_bytes += wc->byte_len;
    qp->stats.recv_wrs++;
    qp->stats.recv_bytes += wc->byte_len;
}

int srm_wire_verbs_qp_poll(srm_wire_verbs_qp_t *qp)
{
    struct ibv_wc wc[SRM_WIRE_VERBS_POLL_BATCH];
    int i, n;

    do {
        n = ibv_poll_cq(qp->cq, SRM_WIRE_VERBS_POLL_BATCH, wc);
        if (n < 0) {
            srm_wire_verbs_fail(qp, "%s", "ibv_poll_cq failed");
            break;
        }
        for (i = 0; i < n; ++i) {
            /* By wr_id, before the status: a failed completion has no
             * opcode. */
            if (wc[i].wr_id & SRM_WIRE_VERBS_RMA_WR) {
                srm_wire_verbs_rma_complete(qp, &wc[i]);
            } else if (wc[i].wr_id & SRM_WIRE_VERBS_RECV_WR) {
                srm_wire_verbs_recv_complete(qp, &wc[i]);
            } else if (wc[i].status != IBV_WC_SUCCESS) {
                srm_wire_verbs_fail(qp, "work request failed: %s",
                                    ibv_wc_status_str(wc[i].status));
            } else {
                srm_wire_verbs_tx_done(qp, wc[i].wr_id + 1);
            }
        }
    } while (n == SRM_WIRE_VERBS_POLL_BATCH);
    /* Buffers spilled or flushed go back in at once. */
    srm_wire_verbs_srq_refill(qp->dev);
    return qp->failed ? -1 : 0;
}

/* Gathers up to `len` bytes of iov from (*i, *off) on into dst. */
static void srm_wire_verbs_gather(uint8_t *dst, size_t len,
                                  const struct iovec *iov, int *i, size_t *off)
{
    size_t done = 0, chunk;

    while (done < len) {
        chunk = iov[*i].iov_len - *off;
        if (chunk > len - done) {
            chunk = len - done;
        }
        memcpy(dst + done, (const uint8_t*)iov[*i].iov_base + *off, chunk);
        done += chunk;
        *off += chunk;
        if (*off == iov[*i].iov_len) {
            ++*i;
            *off = 0;
        }
    }
}

/* Bytes from (i, off) on up to the next iovec the device can read in
 * place: what must be copied, inline or into the pool. */
static size_t srm_wire_verbs_copied_run(const struct iovec *iov,
                                        const srm_wire_verbs_mr_t *const *mrs,
                                        int iovcnt, int i, size_t off)
{
    size_t run = 0;

    for (; (i < iovcnt) && ((mrs == NULL) || (mrs[i] == NULL)); ++i) {
        run += iov[i].iov_len - off;
        off  = 0;
    }
    return run;
}

ssize_t srm_wire_verbs_qp_sendv(srm_wire_verbs_qp_t *qp,
                                const struct iovec *iov, int iovcnt)
{
    return srm_wire_verbs_qp_sendv_mr(qp, iov, NULL, iovcnt);
}

ssize_t
srm_wire_verbs_qp_sendv_mr(srm_wire_verbs_qp_t *qp, const struct iovec *iov,
                           const srm_wire_verbs_mr_t *const *mrs, int iovcnt)
{
    struct ibv_send_wr wr[SRM_WIRE_VERBS_SEND_SLOTS], *bad;
    struct ibv_sge sge[SRM_WIRE_VERBS_SEND_SLOTS];
    uint8_t inl[SRM_WIRE_VERBS_SEND_SLOTS][SRM_WIRE_VERBS_MAX_INLINE];
    srm_wire_verbs_dev_t *dev = qp->dev;
    size_t iov_off = 0, total = 0, left = 0, len;
    unsigned count = 0, room, taken = 0, in_place = 0;
    const struct ibv_mr *mr;
    uint32_t slot, lkey;
    uint8_t *buf;
    int i, ret, short_of_room, pool_out;

    if ((qp->send_head - qp->send_done) >= SRM_WIRE_VERBS_SEND_SLOTS / 2) {
        srm_wire_verbs_qp_poll(qp);
    }
    if (qp->failed) {
        errno = EIO;
        return -1;
    }
    for (i = 0; i < iovcnt; ++i) {
        left += iov[i].iov_len;
    }
    i    = 0;
    room = SRM_WIRE_VERBS_SEND_SLOTS -
           (unsigned)(qp->send_head - qp->send_done);
    while ((count < room) && (left > 0)) {
        while (iov_off == iov[i].iov_len) {
            ++i;
            iov_off = 0;
        }
        memset(&wr[count], 0, sizeof(wr[count]));
        mr   = (mrs != NULL) ? (const struct ibv_mr*)mrs[i] : NULL;
        slot = SRM_WIRE_VERBS_NO_SLOT;
        if (mr != NULL) {
            /* Registered memory the caller keeps unchanged until the peer
             * has it: the device reads it where it is. */
            len  = iov[i].iov_len - iov_off;
            len  = (len < SRM_WIRE_VERBS_SLOT_SIZE) ? len :
                                                      SRM_WIRE_VERBS_SLOT_SIZE;
            buf  = (uint8_t*)iov[i].iov_base + iov_off;
            lkey = mr->lkey;
            if (len <= qp->max_inline) {
                wr[count].send_flags |= IBV_SEND_INLINE;
            } else {
                ++in_place;
            }
            iov_off += len;
        } else {
            len = srm_wire_verbs_copied_run(iov, mrs, iovcnt, i, iov_off);
            len = (len < SRM_WIRE_VERBS_SLOT_SIZE) ? len :
                                                     SRM_WIRE_VERBS_SLOT_SIZE;
            if (len <= qp->max_inline) {
                /* Copied at the post: it needs no buffer of the pool. */
                buf                   = inl[count];
                wr[count].send_flags |= IBV_SEND_INLINE;
            } else if (taken < dev->tx_stats.free) {
                slot = dev->tx_free[dev->tx_stats.free - 1 - taken++];
                buf  = srm_wire_verbs_send_slot(dev, slot);
            } else {
                break;
            }
            srm_wire_verbs_gather(buf, len, iov, &i, &iov_off);
            lkey = dev->tx_mr->lkey;
        }
        qp->tx_slot[(qp->send_head + count) % SRM_WIRE_VERBS_SEND_SLOTS] = slot;
        sge[count].addr   = (uintptr_t)buf;
        sge[count].length = (uint32_t)len;
        sge[count].lkey   = lkey;
        wr[count].wr_id   = qp->send_head + count;
        wr[count].sg_list = &sge[count];
        wr[count].num_sge = 1;
        wr[count].opcode  = IBV_WR_SEND;
        if (count > 0) {
            wr[count - 1].next = &wr[count];
        }
        total += len;
        left  -= len;
        ++count;
    }
    short_of_room = (left > 0);
    pool_out      = short_of_room && (count < room);
    if (pool_out) {
        dev->tx_stats.waits++;
        dev->tx_ran_out = 1;
    }
    if (count == 0) {
        if (pool_out) {
            srm_wire_verbs_tx_reclaim(dev);
        }
        return 0;
    }
    /* A completion every quarter ring, and for the last send of a batch
     * that ran out of room (else nothing would tell us when room comes
     * back). */
    for (i = 0; i < (int)count; ++i) {
        if ((((qp->send_head + i + 1) % SRM_WIRE_VERBS_SIGNAL_EVERY) == 0) ||
            (short_of_room && (i + 1 == (int)count))) {
            wr[i].send_flags |= IBV_SEND_SIGNALED;
            qp->stats.signaled++;
            qp->last_signaled = qp->send_head + i + 1;
        }
        qp->stats.inline_wrs += !!(wr[i].send_flags & IBV_SEND_INLINE);
    }
    ret = ibv_post_send(qp->qp, wr, &bad);
    if (ret != 0) {
        srm_wire_verbs_fail(qp, "ibv_post_send failed: %s", strerror(ret));
        errno = ret;
        return -1;
    }
    dev->tx_stats.free     -= taken;
    qp->send_head          += count;
    qp->stats.send_wrs     += count;
    qp->stats.in_place_wrs += in_place;
    qp->stats.send_bytes   += total;
    qp->stats.doorbells++;
    if (pool_out) {
        srm_wire_verbs_tx_reclaim(dev); /* this one's last send asks already */
    }
    return (ssize_t)total;
}

/* Copies len bytes from src into iov from (*i, *off) on; how many fit. */
static size_t srm_wire_verbs_scatter(const struct iovec *iov, int iovcnt,
                                     int *i, size_t *off, const uint8_t *src,
                                     size_t len)
{
    size_t done = 0, chunk;

    while ((done < len) && (*i < iovcnt)) {
        chunk = iov[*i].iov_len - *off;
        if (chunk > len - done) {
            chunk = len - done;
        }
        memcpy((uint8_t*)iov[*i].iov_base + *off, src + done, chunk);
        done += chunk;
        *off += chunk;
        if (*off == iov[*i].iov_len) {
            ++*i;
            *off = 0;
        }
    }
    return done;
}

ssize_t srm_wire_verbs_qp_recvv(srm_wire_verbs_qp_t *qp,
                                const struct iovec *iov, int iovcnt)
{
    srm_wire_verbs_dev_t *dev = qp->dev;
    size_t total = 0, off = 0, chunk;
    srm_wire_verbs_rx_t *rx;
    int i = 0;

    if (srm_wire_verbs_qp_poll(qp) != 0) {
        errno = EIO;
        return -1;
    }
    if (qp->spill_len > qp->spill_off) {
        /* The oldest input first: what was copied aside. */
        chunk          = srm_wire_verbs_scatter(iov, iovcnt, &i, &off,
                                                qp->spill + qp->spill_off,
                                                qp->spill_len - qp->spill_off);
        total          = chunk;
        qp->spill_off += chunk;
        qp->rx_bytes  -= chunk;
    }
    while ((qp->rx_count > 0) && (i < iovcnt)) {
        rx    = &qp->rx[qp->rx_first];
        chunk = srm_wire_verbs_scatter(iov, iovcnt, &i, &off,
                                       srm_wire_verbs_recv_slot(dev, rx->slot) +
                                          qp->rx_offset,
                                  rx->len - qp->rx_offset);
        total         += chunk;
        qp->rx_offset += chunk;
        qp->rx_bytes  -= chunk;
        if (qp->rx_offset == rx->len) {
            srm_wire_verbs_rx_pop(qp);
        }
    }
    if (srm_wire_verbs_srq_refill(dev) != 0) {
        srm_wire_verbs_fail(qp, "%s", "the shared receive queue takes no more "
                            "buffers");
        return -1;
    }
    return (ssize_t)total;
}

ssize_t srm_wire_verbs_qp_recv(srm_wire_verbs_qp_t *qp, void *buf, size_t len)
{
    struct iovec iov = {.iov_base = buf, .iov_len = len};

    return srm_wire_verbs_qp_recvv(qp, &iov, 1);
}

size_t srm_wire_verbs_qp_pending(const srm_wire_verbs_qp_t *qp)
{
    return qp->rx_bytes;
}

int srm_wire_verbs_qp_drain(srm_wire_verbs_qp_t *qp, double timeout)
{
    struct timespec start, now;

    if (qp->failed || (qp->send_head == qp->send_done)) {
        return qp->failed ? -1 : 0;
    }
    if ((qp->send_head - qp->send_done) < SRM_WIRE_VERBS_SEND_SLOTS) {
        /* An empty send that asks for a completion covers the unsignaled
         * ones before it; the peer reads zero bytes. */
        srm_wire_verbs_post_empty(qp);
    }
    clock_gettime(CLOCK_MONOTONIC, &start);
    do {
        if (srm_wire_verbs_qp_poll(qp) != 0) {
            return -1;
        }
        clock_gettime(CLOCK_MONOTONIC, &now);
    } while ((qp->send_done != qp->send_head) &&
             ((double)(now.tv_sec - start.tv_sec) +
              (double)(now.tv_nsec - start.tv_nsec) * 1e-9 < timeout));
    return (qp->send_done == qp->send_head) ? 0 : -1;
}

void srm_wire_verbs_qp_force_error(srm_wire_verbs_qp_t *qp)
{
    struct ibv_qp_attr attr = {.qp_state = IBV_QPS_ERR};

    if (ibv_modify_qp(qp->qp, &attr, IBV_QP_STATE) != 0) {
        return;
    }
    /* Its receives belong to the shared queue, which the error state does
     * not flush: a send flushed at once shows the error on the completion
     * queue, where a real failure would. */
    srm_wire_verbs_post_empty(qp);
}

const char *srm_wire_verbs_qp_error(const srm_wire_verbs_qp_t *qp)
{
    return qp->error;
}

uint32_t srm_wire_verbs_qp_num(const srm_wire_verbs_qp_t *qp)
{
    return qp->qp->qp_num;
}

uint32_t srm_wire_verbs_qp_remote_num(const srm_wire_verbs_qp_t *qp)
{
    return qp->remote_qpn;
}

const srm_wire_verbs_stats_t *
srm_wire_verbs_qp_stats(const srm_wire_verbs_qp_t *qp)
{
    return &qp->stats;
}
