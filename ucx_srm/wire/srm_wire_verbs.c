/*
 * The verbs wire (see srm_wire_verbs.h): devices, RC queue pairs, and the
 * byte stream over SEND/RECV.
 *
 * A queue pair has at most SRM_VERBS_SEND_SLOTS sends in flight; those
 * that are not inline hold a buffer of the device's send pool. Only some
 * sends ask for a completion (every quarter of the ring, and the last of a
 * batch that ran out of room); since RC completes in order, a completion
 * gives back its buffer and those of every send before it.
 *
 * Receive buffers belong to the device's shared receive queue. A receive
 * completes on the queue pair that took it, which keeps the buffer until
 * its bytes are read (or copied aside: SRM_VERBS_QP_HELD) and then gives
 * it back; given-back buffers are posted again in one batch.
 */
#define _GNU_SOURCE
#include "srm_wire_verbs.h"

#ifdef HAVE_CONFIG_H
#  include "config.h"   /* HAVE_VERBS; the fuzz builds go without */
#endif
#include <ucx_srm/common/srm_log.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int srm_verbs_is_device_spec(const char *spec)
{
    /* Interface names cannot hold ':' (aliases aside, which have no
     * address of their own here); device specs always do. */
    return strchr(spec, ':') != NULL;
}

#if defined(HAVE_VERBS) && HAVE_VERBS

#include "srm_wire_verbs_dev.h"

#include <fcntl.h>
#include <net/if.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#define SRM_VERBS_SIGNAL_EVERY (SRM_VERBS_SEND_SLOTS / 4)
#define SRM_VERBS_MAX_INLINE   256u
#define SRM_VERBS_POLL_BATCH   16
#define SRM_VERBS_RMA_WR       (1ull << 63) /* wr_id of an RDMA op */
#define SRM_VERBS_RECV_WR      (1ull << 62) /* wr_id of a receive: | slot */
#define SRM_VERBS_POST_BATCH   64u
#define SRM_VERBS_FLUSH_WAIT_US 200 /* for a dying QP's receives */
#define SRM_VERBS_NO_SLOT      UINT32_MAX   /* a send that holds no buffer */

/* Where a receive buffer of the shared queue is. */
typedef enum {
    SRM_VERBS_SLOT_FREE = 0, /* with the agent, to be posted */
    SRM_VERBS_SLOT_POSTED,   /* in the queue, or being filled */
    SRM_VERBS_SLOT_HELD      /* received by a queue pair, unread */
} srm_verbs_slot_t;

/* A queue pair's completion queue: its sends, its RDMA operations, and
 * every receive it could take from the shared queue. */
static unsigned srm_verbs_cq_size(unsigned recv_total)
{
    return SRM_VERBS_SEND_SLOTS + SRM_VERBS_RMA_SLOTS + recv_total;
}

/* A received buffer waiting to be read. */
typedef struct srm_verbs_rx {
    uint32_t slot;
    uint32_t len;
} srm_verbs_rx_t;

/* A finished RDMA operation waiting to be collected. */
typedef struct srm_verbs_rma_done {
    uint64_t id;
    int      ok;
} srm_verbs_rma_done_t;

struct srm_verbs_qp {
    srm_verbs_dev_t   *dev;
    unsigned          owner;
    struct ibv_cq     *cq;
    struct ibv_qp     *qp;
    srm_verbs_qp_t    *next;         /* in dev->qps */
    uint32_t          psn;
    uint32_t          remote_qpn;
    uint32_t          max_inline;
    uint64_t          send_head;     /* sends posted */
    uint64_t          send_done;     /* sends known complete */
    uint64_t          last_signaled; /* send_head after the last signaled */
    uint32_t          tx_slot[SRM_VERBS_SEND_SLOTS]; /* of send n at n % */
    srm_verbs_rx_t    rx[SRM_VERBS_QP_HELD]; /* completed, unread */
    unsigned          rx_first, rx_count;
    size_t            rx_offset;     /* bytes of rx[rx_first] already read */
    size_t            rx_bytes;      /* unread bytes: spill and rx[] */
    uint8_t           *spill;        /* input older than rx[], copied out */
    size_t            spill_off, spill_len, spill_cap;
    unsigned          rma_inflight;
    srm_verbs_rma_done_t rma_done[SRM_VERBS_RMA_SLOTS];
    unsigned          rma_first, rma_count;
    int               failed;
    char              error[96];
    srm_verbs_stats_t stats;
};

int srm_verbs_built(void)
{
    return 1;
}

static uint8_t *srm_verbs_send_slot(const srm_verbs_dev_t *dev,
                                    uint32_t slot)
{
    return dev->tx_buf + slot * (size_t)SRM_VERBS_SLOT_SIZE;
}

static uint8_t *srm_verbs_recv_slot(const srm_verbs_dev_t *dev,
                                    uint32_t slot)
{
    return dev->srq_buf + slot * (size_t)SRM_VERBS_SLOT_SIZE;
}

/* "NAME[:PORT][@NETDEV]" into its parts. */
static int srm_verbs_parse_spec(const char *spec, char *name, size_t size,
                                unsigned *port, char *netdev,
                                size_t netdev_size)
{
    const char *colon = strchr(spec, ':'), *at = strchr(spec, '@');
    size_t name_len = colon ? (size_t)(colon - spec) :
                      at    ? (size_t)(at - spec) : strlen(spec);
    char *end;

    if ((name_len == 0) || (name_len >= size)) {
        return -1;
    }
    memcpy(name, spec, name_len);
    name[name_len] = '\0';
    *port          = 1;
    if (colon != NULL) {
        *port = (unsigned)strtoul(colon + 1, &end, 10);
        if ((end == colon + 1) || ((*end != '\0') && (*end != '@')) ||
            (*port == 0) || (*port > 255)) {
            return -1;
        }
    }
    netdev[0] = '\0';
    if (at != NULL) {
        if ((at[1] == '\0') || (strlen(at + 1) >= netdev_size)) {
            return -1;
        }
        snprintf(netdev, netdev_size, "%s", at + 1);
    }
    return 0;
}

static int srm_verbs_is_ipv4_gid(const union ibv_gid *gid)
{
    static const uint8_t prefix[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
                                       0xff, 0xff};

    return memcmp(gid->raw, prefix, sizeof(prefix)) == 0;
}

/*
 * RoCE: the port's RoCE v2 GID of an IPv4 address, which is what routes
 * between hosts. Without a named interface, the GID's own interface is the
 * handshake's; with one, a GID on it is preferred, but any will do (the
 * device's interface may be in another network namespace, whose index
 * means nothing here).
 */
static int srm_verbs_find_gid(srm_verbs_dev_t *dev, int gid_table_len,
                              char *netdev, size_t netdev_size)
{
    struct ibv_gid_entry entry;
    char ifname[IF_NAMESIZE];
    int i, found = -1;

    for (i = 0; i < gid_table_len; ++i) {
        if ((ibv_query_gid_ex(dev->ctx, dev->port, (uint32_t)i, &entry, 0) !=
             0) ||
            (entry.gid_type != IBV_GID_TYPE_ROCE_V2) ||
            !srm_verbs_is_ipv4_gid(&entry.gid)) {
            continue;
        }
        if (if_indextoname(entry.ndev_ifindex, ifname) == NULL) {
            ifname[0] = '\0';
        }
        if ((netdev[0] == '\0') && (ifname[0] != '\0')) {
            snprintf(netdev, netdev_size, "%s", ifname);
        } else if ((netdev[0] == '\0') ||
                   ((strcmp(netdev, ifname) != 0) && (found >= 0))) {
            continue;
        }
        found          = i;
        dev->gid_index = (uint8_t)i;
        dev->gid       = entry.gid;
        if (strcmp(netdev, ifname) == 0) {
            break;
        }
    }
    return (found >= 0) ? 0 : -1;
}

static int srm_verbs_set_nonblock(int fd)
{
    int flags = fcntl(fd, F_GETFL);

    return ((flags < 0) || (fcntl(fd, F_SETFL, flags | O_NONBLOCK) != 0)) ?
                   -1 : 0;
}

static struct ibv_context *srm_verbs_open_by_name(const char *name)
{
    struct ibv_device **list;
    struct ibv_context *ctx = NULL;
    int i, num;

    list = ibv_get_device_list(&num);
    if (list == NULL) {
        return NULL;
    }
    for (i = 0; i < num; ++i) {
        if (strcmp(ibv_get_device_name(list[i]), name) == 0) {
            ctx = ibv_open_device(list[i]);
            break;
        }
    }
    if (i == num) {
        errno = ENODEV;
    }
    ibv_free_device_list(list);
    return ctx;
}

/*
 * XRC or RC (srm_verbs_xrc_choose). With XRC the node's domain is opened
 * now, on a memfd for the clients to open it by (once they do), so that a
 * device that claims XRC but gives no domain is found out at start.
 */
static int srm_verbs_dev_init_xrc(srm_verbs_dev_t *dev, unsigned mode)
{
    struct ibv_device_attr_ex attr;
    uint64_t caps;
    int fd;

    caps     = (ibv_query_device_ex(dev->ctx, NULL, &attr) == 0) ?
               attr.orig_attr.device_cap_flags : 0;
    dev->xrc = srm_verbs_xrc_choose(mode, srm_verbs_xrc_built(), caps,
                                    &dev->xrc_why);
    if (dev->xrc < 0) {
        srm_error("verbs device %s: UCX_SRM_XRC=yes, but %s", dev->name,
                  dev->xrc_why);
        return -1;
    }
    if (dev->xrc) {
        fd = memfd_create("srm-xrc-domain", MFD_CLOEXEC);
        dev->xrc_domain = (fd >= 0) ? srm_verbs_xrc_domain_open(dev, fd) :
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

/* Posts free buffers until the queue holds srq_target of them, in one
 * ibv_post_srq_recv per batch; -1 with errno if the device refused. */
static int srm_verbs_srq_refill(srm_verbs_dev_t *dev)
{
    struct ibv_recv_wr wr[SRM_VERBS_POST_BATCH], *bad;
    struct ibv_sge sge[SRM_VERBS_POST_BATCH];
    srm_verbs_srq_stats_t *stats = &dev->srq_stats;
    unsigned count, i;
    uint32_t slot;
    int ret;

    while ((stats->posted < dev->srq_target) && (dev->srq_num_free > 0)) {
        count = dev->srq_target - stats->posted;
        if (count > dev->srq_num_free) {
            count = dev->srq_num_free;
        }
        if (count > SRM_VERBS_POST_BATCH) {
            count = SRM_VERBS_POST_BATCH;
        }
        for (i = 0; i < count; ++i) {
            slot          = dev->srq_free[dev->srq_num_free - 1 - i];
            sge[i].addr   = (uintptr_t)srm_verbs_recv_slot(dev, slot);
            sge[i].length = SRM_VERBS_SLOT_SIZE;
            sge[i].lkey   = dev->srq_mr->lkey;
            wr[i].wr_id   = SRM_VERBS_RECV_WR | slot;
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
                    SRM_VERBS_SLOT_POSTED;
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
static void srm_verbs_srq_give(srm_verbs_dev_t *dev, uint32_t slot)
{
    dev->srq_state[slot]               = SRM_VERBS_SLOT_FREE;
    dev->srq_free[dev->srq_num_free++] = slot;
}

/* The oldest held buffer is read (or copied aside): back to the queue. */
static void srm_verbs_rx_pop(srm_verbs_qp_t *qp)
{
    srm_verbs_srq_give(qp->dev, qp->rx[qp->rx_first].slot);
    qp->dev->srq_stats.held--;
    qp->rx_first  = (qp->rx_first + 1) % SRM_VERBS_QP_HELD;
    qp->rx_count--;
    qp->rx_offset = 0;
}

/* Asks the device to say when fewer than srq_stats.low buffers are left
 * in the queue (it says so once per arming). */
static void srm_verbs_srq_arm(srm_verbs_dev_t *dev)
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
static int srm_verbs_check_limits(srm_verbs_dev_t *dev, unsigned recv_total)
{
    struct ibv_device_attr attr;

    if (ibv_query_device(dev->ctx, &attr) != 0) {
        srm_error("verbs device %s: ibv_query_device failed: %m", dev->name);
        return -1;
    }
    if ((attr.max_srq == 0) || ((unsigned)attr.max_srq_wr < recv_total) ||
        ((unsigned)attr.max_cqe < srm_verbs_cq_size(recv_total))) {
        srm_error("verbs device %s: %u receive buffers in a shared queue "
                  "(UCX_SRM_VERBS_RECV_BUFS and its reserve) need a shared "
                  "receive queue of that depth and completion queues of %u; "
                  "the device has %d of at most %d and completion queues of "
                  "at most %d", dev->name, recv_total,
                  srm_verbs_cq_size(recv_total), attr.max_srq,
                  attr.max_srq_wr, attr.max_cqe);
        return -1;
    }
    return 0;
}

static int srm_verbs_srq_open(srm_verbs_dev_t *dev, unsigned recv_bufs)
{
    const unsigned total = recv_bufs + recv_bufs / 4;
    struct ibv_srq_init_attr init = {.attr = {.max_wr  = total,
                                              .max_sge = 1}};
    size_t size = (size_t)total * SRM_VERBS_SLOT_SIZE;
    unsigned i;

    if (srm_verbs_check_limits(dev, total) != 0) {
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
        srm_verbs_srq_give(dev, total - 1 - i);
    }
    dev->srq_stats.slots   = total;
    dev->srq_stats.reserve = total - recv_bufs;
    dev->srq_stats.low     = recv_bufs / 8;
    dev->srq_target        = recv_bufs;
    if (srm_verbs_srq_refill(dev) != 0) {
        return -1;
    }
    srm_verbs_srq_arm(dev);
    return 0;
}

static void srm_verbs_srq_close(srm_verbs_dev_t *dev)
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

static int srm_verbs_tx_open(srm_verbs_dev_t *dev, unsigned send_bufs)
{
    size_t size = (size_t)send_bufs * SRM_VERBS_SLOT_SIZE;
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

static void srm_verbs_tx_close(srm_verbs_dev_t *dev)
{
    if (dev->tx_mr != NULL) {
        ibv_dereg_mr(dev->tx_mr);
    }
    free(dev->tx_buf);
    free(dev->tx_free);
}

/* Sends before send number `upto` are done: their buffers go back. */
static void srm_verbs_tx_done(srm_verbs_qp_t *qp, uint64_t upto)
{
    srm_verbs_dev_t *dev = qp->dev;
    uint32_t slot;

    for (; qp->send_done < upto; qp->send_done++) {
        slot = qp->tx_slot[qp->send_done % SRM_VERBS_SEND_SLOTS];
        if (slot != SRM_VERBS_NO_SLOT) {
            dev->tx_free[dev->tx_stats.free++] = slot;
        }
    }
    if (dev->tx_ran_out && (dev->tx_stats.free > 0)) {
        dev->tx_ran_out   = 0;
        dev->tx_room_back = 1;
    }
}

/* Posts an empty send that asks for a completion; 0 or an errno. */
static int srm_verbs_post_empty(srm_verbs_qp_t *qp)
{
    struct ibv_send_wr wr = {.wr_id      = qp->send_head,
                             .opcode     = IBV_WR_SEND,
                             .send_flags = IBV_SEND_SIGNALED}, *bad;
    int ret               = ibv_post_send(qp->qp, &wr, &bad);

    if (ret == 0) {
        qp->tx_slot[qp->send_head % SRM_VERBS_SEND_SLOTS] = SRM_VERBS_NO_SLOT;
        qp->last_signaled = ++qp->send_head;
    }
    return ret;
}

/*
 * The pool ran out: every queue pair whose last sends asked for no
 * completion gets an empty send that does (the peer reads zero bytes), so
 * that the buffers held by quiet links come back.
 */
static void srm_verbs_tx_reclaim(srm_verbs_dev_t *dev)
{
    srm_verbs_qp_t *qp;

    for (qp = dev->qps; qp != NULL; qp = qp->next) {
        if (!qp->failed && (qp->remote_qpn != 0) &&
            (qp->last_signaled != qp->send_head) &&
            ((qp->send_head - qp->send_done) < SRM_VERBS_SEND_SLOTS) &&
            (srm_verbs_post_empty(qp) == 0)) {
            dev->tx_stats.reclaims++;
        }
    }
}

int srm_verbs_dev_take_room(srm_verbs_dev_t *dev)
{
    int back = dev->tx_room_back;

    dev->tx_room_back = 0;
    return back;
}

const srm_verbs_tx_stats_t *srm_verbs_dev_tx_stats(const srm_verbs_dev_t *dev)
{
    return &dev->tx_stats;
}

/*
 * The queue ran low although the agent posts every buffer it gets back:
 * buffers are still being filled, or were lost with a queue pair that died
 * while filling them. The reserve goes in; were it gone already, the
 * queue is short of buffers for good, which the log says once.
 */
static void srm_verbs_srq_low(srm_verbs_dev_t *dev)
{
    srm_verbs_srq_stats_t *stats = &dev->srq_stats;

    stats->low_water++;
    if (dev->srq_target < stats->slots) {
        srm_info("verbs device %s: the shared receive queue fell below %u "
                 "buffers (%u posted and not yet seen completed, %u held "
                 "unread): posting the %u in reserve", dev->name,
                 stats->low, stats->posted, stats->held,
                 stats->slots - dev->srq_target);
        dev->srq_target = stats->slots;
        srm_verbs_srq_refill(dev);
    } else if (stats->low_water == 2) {
        srm_warn("verbs device %s: the shared receive queue runs low again "
                 "with its reserve posted (%u posted, %u held of %u): "
                 "senders wait for receive buffers (RNR)", dev->name,
                 stats->posted, stats->held, stats->slots);
    }
    srm_verbs_srq_arm(dev);
}

int srm_verbs_dev_async_fd(const srm_verbs_dev_t *dev)
{
    return dev->ctx->async_fd;
}

void srm_verbs_dev_async(srm_verbs_dev_t *dev)
{
    struct ibv_async_event event;

    while (ibv_get_async_event(dev->ctx, &event) == 0) {
        if (event.event_type == IBV_EVENT_SRQ_LIMIT_REACHED) {
            srm_verbs_srq_low(dev);
        } else {
            /* Queue pair errors also show in their completions. */
            srm_debug("verbs device %s: %s", dev->name,
                      ibv_event_type_str(event.event_type));
        }
        ibv_ack_async_event(&event);
    }
}

const srm_verbs_srq_stats_t *srm_verbs_dev_srq_stats(const srm_verbs_dev_t *dev)
{
    return &dev->srq_stats;
}

int srm_verbs_dev_open(const char *spec, const srm_verbs_dev_params_t *params,
                       srm_verbs_dev_t **dev_p, char *netdev,
                       size_t netdev_size)
{
    struct ibv_port_attr port_attr;
    char name[48];
    unsigned port;
    srm_verbs_dev_t *dev;

    if (srm_verbs_parse_spec(spec, name, sizeof(name), &port, netdev,
                             netdev_size) != 0) {
        srm_error("UCX_SRM_DEVICES: '%s' is not NAME:PORT[@INTERFACE]", spec);
        return -1;
    }
    dev = calloc(1, sizeof(*dev));
    if (dev == NULL) {
        srm_error("no memory for verbs device %s", spec);
        return -1;
    }
    dev->port = (uint8_t)port;
    snprintf(dev->name, sizeof(dev->name), "%s:%u", name, port);

    dev->ctx = srm_verbs_open_by_name(name);
    if (dev->ctx == NULL) {
        srm_error("verbs device %s: %s", name,
                  (errno == ENODEV) ? "no such device (see ibv_devices)" :
                                      strerror(errno));
        goto err;
    }
    if (ibv_query_port(dev->ctx, dev->port, &port_attr) != 0) {
        srm_error("verbs device %s: no port %u", name, port);
        goto err;
    }
    if (port_attr.state != IBV_PORT_ACTIVE) {
        srm_error("verbs device %s: port is %s, not active", dev->name,
                  ibv_port_state_str(port_attr.state));
        goto err;
    }
    dev->link_layer = port_attr.link_layer;
    dev->mtu        = (uint8_t)port_attr.active_mtu;
    dev->lid        = port_attr.lid;
    if (dev->link_layer == IBV_LINK_LAYER_ETHERNET) {
        if (srm_verbs_find_gid(dev, port_attr.gid_tbl_len, netdev,
                               netdev_size) != 0) {
            srm_error("verbs device %s: no RoCE v2 GID with an IPv4 address%s%s"
                      " (give the interface an IPv4 address)", dev->name,
                      (netdev[0] != '\0') ? " on " : "", netdev);
            goto err;
        }
    } else {
        if (netdev[0] == '\0') {
            srm_error("verbs device %s is InfiniBand: name the IPoIB "
                      "interface for the handshake, as %s@ib0", dev->name,
                      dev->name);
            goto err;
        }
        dev->gid_index = 0;
        if (ibv_query_gid(dev->ctx, dev->port, 0, &dev->gid) != 0) {
            memset(&dev->gid, 0, sizeof(dev->gid));
        }
    }

    dev->pd      = ibv_alloc_pd(dev->ctx);
    dev->channel = ibv_create_comp_channel(dev->ctx);
    if ((dev->pd == NULL) || (dev->channel == NULL)) {
        srm_error("verbs device %s: cannot allocate a protection domain or "
                  "completion channel: %m", dev->name);
        goto err;
    }
    if ((srm_verbs_set_nonblock(dev->channel->fd) != 0) ||
        (srm_verbs_set_nonblock(dev->ctx->async_fd) != 0)) {
        srm_error("verbs device %s: completion channel or event file: %m",
                  dev->name);
        goto err;
    }
    if ((params->recv_bufs < SRM_VERBS_MIN_RECV_BUFS) ||
        (params->send_bufs < SRM_VERBS_MIN_SEND_BUFS)) {
        srm_error("verbs device %s: UCX_SRM_VERBS_RECV_BUFS (%u) must be at "
                  "least %u and UCX_SRM_VERBS_SEND_BUFS (%u) at least %u",
                  dev->name, params->recv_bufs, SRM_VERBS_MIN_RECV_BUFS,
                  params->send_bufs, SRM_VERBS_MIN_SEND_BUFS);
        goto err;
    }
    if ((srm_verbs_srq_open(dev, params->recv_bufs) != 0) ||
        (srm_verbs_tx_open(dev, params->send_bufs) != 0) ||
        (srm_verbs_dev_init_xrc(dev, params->xrc_mode) != 0)) {
        goto err;
    }
    srm_info("verbs device %s: %s, mtu %d, gid index %u, handshake on %s, "
             "xrc: %s (%s), %u receive and %u send buffers shared",
             dev->name,
             (dev->link_layer == IBV_LINK_LAYER_ETHERNET) ? "RoCE v2" :
                                                             "InfiniBand",
             128 << dev->mtu, dev->gid_index, netdev,
             dev->xrc ? "yes" : "no", dev->xrc_why, dev->srq_stats.slots,
             dev->tx_stats.slots);
    *dev_p = dev;
    return 0;

err:
    srm_verbs_dev_close(dev);
    return -1;
}

void srm_verbs_dev_close(srm_verbs_dev_t *dev)
{
    if (dev == NULL) {
        return;
    }
    srm_verbs_xrc_domain_close(dev->xrc_domain);
    srm_verbs_srq_close(dev);
    srm_verbs_tx_close(dev);
    if (dev->channel != NULL) {
        ibv_destroy_comp_channel(dev->channel);
    }
    if (dev->pd != NULL) {
        ibv_dealloc_pd(dev->pd);
    }
    if (dev->ctx != NULL) {
        ibv_close_device(dev->ctx);
    }
    free(dev);
}

const char *srm_verbs_dev_name(const srm_verbs_dev_t *dev)
{
    return dev->name;
}

int srm_verbs_dev_event_fd(const srm_verbs_dev_t *dev)
{
    return dev->channel->fd;
}

int srm_verbs_dev_xrc(const srm_verbs_dev_t *dev, const char **why)
{
    *why = dev->xrc_why;
    return dev->xrc;
}

uint32_t srm_verbs_new_psn(void)
{
    uint32_t psn;

    if (getrandom(&psn, sizeof(psn), 0) != sizeof(psn)) {
        psn = (uint32_t)time(NULL);
    }
    return psn & 0xffffff;
}

srm_verbs_qp_t *srm_verbs_dev_next_event(srm_verbs_dev_t *dev)
{
    struct ibv_cq *cq;
    void *context;

    if (ibv_get_cq_event(dev->channel, &cq, &context) != 0) {
        return NULL;
    }
    ibv_ack_cq_events(cq, 1);
    ibv_req_notify_cq(cq, 0);
    return context;
}

static void srm_verbs_fail(srm_verbs_qp_t *qp, const char *fmt, const char *what)
{
    if (!qp->failed) {
        qp->failed = 1;
        snprintf(qp->error, sizeof(qp->error), fmt, what);
    }
}

static int srm_verbs_to_init(srm_verbs_qp_t *qp)
{
    struct ibv_qp_attr attr = {
        .qp_state        = IBV_QPS_INIT,
        .pkey_index      = 0,
        .port_num        = qp->dev->port,
        /* No remote access before the peer is proven: granted when the
         * queue pair is connected (srm_verbs_qp_connect). */
        .qp_access_flags = 0,
    };

    return ibv_modify_qp(qp->qp, &attr,
                         IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
                         IBV_QP_ACCESS_FLAGS);
}

srm_verbs_qp_t *srm_verbs_qp_create(srm_verbs_dev_t *dev, unsigned owner)
{
    struct ibv_qp_init_attr init = {
        .cap = {.max_send_wr     = SRM_VERBS_SEND_SLOTS +
                                   SRM_VERBS_RMA_SLOTS,
                .max_send_sge    = 1,
                .max_inline_data = SRM_VERBS_MAX_INLINE},
        .srq        = dev->srq,
        .qp_type    = IBV_QPT_RC,
        .sq_sig_all = 0,
    };
    srm_verbs_qp_t *qp;

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
                              (int)srm_verbs_cq_size(dev->srq_stats.slots),
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
    if (srm_verbs_to_init(qp) != 0) {
        srm_error("%s: queue pair 0x%x to INIT failed: %m", dev->name,
                  qp->qp->qp_num);
        goto err;
    }
    qp->psn = srm_verbs_new_psn();
    return qp;

err:
    srm_verbs_qp_destroy(qp);
    return NULL;
}

/*
 * A queue pair to be destroyed gives back the buffers it took from the
 * shared queue: those it holds, and those it was filling, which the error
 * state flushes to its completion queue (on devices that do: rxe loses
 * the one being filled, which is what the reserve is for).
 */
static void srm_verbs_qp_flush(srm_verbs_qp_t *qp)
{
    struct ibv_qp_attr attr = {.qp_state = IBV_QPS_ERR};
    struct timespec start, now;
    long waited_us;

    if (ibv_modify_qp(qp->qp, &attr, IBV_QP_STATE) != 0) {
        return;
    }
    clock_gettime(CLOCK_MONOTONIC, &start);
    do {
        srm_verbs_qp_poll(qp);
        clock_gettime(CLOCK_MONOTONIC, &now);
        waited_us = (now.tv_sec - start.tv_sec) * 1000000L +
                    (now.tv_nsec - start.tv_nsec) / 1000;
    } while (waited_us < SRM_VERBS_FLUSH_WAIT_US);
}

void srm_verbs_qp_destroy(srm_verbs_qp_t *qp)
{
    srm_verbs_qp_t **link;
    srm_verbs_dev_t *dev;

    if (qp == NULL) {
        return;
    }
    dev = qp->dev;
    if (qp->qp != NULL) {
        srm_verbs_qp_flush(qp);
        ibv_destroy_qp(qp->qp);
    }
    if (qp->cq != NULL) {
        ibv_destroy_cq(qp->cq);
    }
    srm_verbs_tx_done(qp, qp->send_head); /* the device reads them no more */
    for (link = &dev->qps; *link != qp; link = &(*link)->next) {
    }
    *link = qp->next;
    while (qp->rx_count > 0) {
        srm_verbs_rx_pop(qp);
    }
    srm_verbs_srq_refill(dev);
    free(qp->spill);
    free(qp);
}

unsigned srm_verbs_qp_owner(const srm_verbs_qp_t *qp)
{
    return qp->owner;
}

void srm_verbs_qp_local(const srm_verbs_qp_t *qp, srm_hello_qp_t *info)
{
    memset(info, 0, sizeof(*info));
    memcpy(info->gid, qp->dev->gid.raw, sizeof(info->gid));
    info->qpn = qp->qp->qp_num;
    info->psn = qp->psn;
    info->lid = qp->dev->lid;
    info->mtu = qp->dev->mtu;
}

int srm_verbs_dev_rtr_attr(const srm_verbs_dev_t *dev,
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

int srm_verbs_qp_connect(srm_verbs_qp_t *qp, const srm_hello_qp_t *remote)
{
    struct ibv_qp_attr attr;
    int ret;

    if (srm_verbs_dev_rtr_attr(qp->dev, remote, &attr) != 0) {
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

static void srm_verbs_rma_complete(srm_verbs_qp_t *qp,
                                   const struct ibv_wc *wc)
{
    srm_verbs_rma_done_t *done;

    if ((qp->rma_inflight == 0) ||
        (qp->rma_count == SRM_VERBS_RMA_SLOTS)) {
        srm_verbs_fail(qp, "%s", "an RDMA operation completed twice");
        return;
    }
    if (wc->status != IBV_WC_SUCCESS) {
        srm_verbs_fail(qp, "RDMA operation failed: %s",
                       ibv_wc_status_str(wc->status));
    }
    done     = &qp->rma_done[(qp->rma_first + qp->rma_count) %
                             SRM_VERBS_RMA_SLOTS];
    done->id = wc->wr_id & ~SRM_VERBS_RMA_WR;
    done->ok = (wc->status == IBV_WC_SUCCESS);
    qp->rma_count++;
    qp->rma_inflight--;
}

int srm_verbs_qp_rdma(srm_verbs_qp_t *qp, int write, void *local,
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
    if ((qp->rma_inflight + qp->rma_count) >= SRM_VERBS_RMA_SLOTS) {
        return 0;
    }
    memset(&wr, 0, sizeof(wr));
    wr.wr_id               = SRM_VERBS_RMA_WR | id;
    wr.sg_list             = &sge;
    wr.num_sge             = 1;
    wr.opcode              = write ? IBV_WR_RDMA_WRITE : IBV_WR_RDMA_READ;
    wr.send_flags          = IBV_SEND_SIGNALED;
    wr.wr.rdma.remote_addr = remote;
    wr.wr.rdma.rkey        = rkey;
    ret = ibv_post_send(qp->qp, &wr, &bad);
    if (ret != 0) {
        srm_verbs_fail(qp, "ibv_post_send (RDMA) failed: %s", strerror(ret));
        errno = ret;
        return -1;
    }
    qp->rma_inflight++;
    return 1;
}

int srm_verbs_qp_rma_next(srm_verbs_qp_t *qp, uint64_t *id, int *ok)
{
    if (qp->rma_count == 0) {
        return 0;
    }
    *id           = qp->rma_done[qp->rma_first].id;
    *ok           = qp->rma_done[qp->rma_first].ok;
    qp->rma_first = (qp->rma_first + 1) % SRM_VERBS_RMA_SLOTS;
    qp->rma_count--;
    return 1;
}

/*
 * Copies the oldest held buffer's unread bytes to the end of the spill and
 * gives the buffer back. -1 (the queue pair failed) past SPILL_MAX.
 */
static int srm_verbs_spill_oldest(srm_verbs_qp_t *qp)
{
    srm_verbs_rx_t *rx = &qp->rx[qp->rx_first];
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
    if (need > SRM_VERBS_SPILL_MAX) {
        srm_verbs_fail(qp, "%s", "the peer sent more than any channel "
                       "window allows while its input was not read");
        return -1;
    }
    if (need > qp->spill_cap) {
        cap   = (qp->spill_cap == 0) ? 4 * SRM_VERBS_SLOT_SIZE :
                                       2 * qp->spill_cap;
        cap   = (cap < need) ? need : cap;
        spill = realloc(qp->spill, cap);
        if (spill == NULL) {
            srm_verbs_fail(qp, "%s", "no memory for input not yet read");
            return -1;
        }
        qp->spill     = spill;
        qp->spill_cap = cap;
    }
    memcpy(qp->spill + qp->spill_len,
           srm_verbs_recv_slot(qp->dev, rx->slot) + qp->rx_offset, bytes);
    qp->spill_len                    += bytes;
    qp->dev->srq_stats.spilled_bytes += bytes;
    srm_verbs_rx_pop(qp);
    return 0;
}

/* A receive of the shared queue completed on this queue pair. */
static void srm_verbs_recv_complete(srm_verbs_qp_t *qp,
                                    const struct ibv_wc *wc)
{
    uint64_t slot        = wc->wr_id & ~SRM_VERBS_RECV_WR;
    srm_verbs_dev_t *dev = qp->dev;
    srm_verbs_rx_t *rx;

    if ((slot >= dev->srq_stats.slots) ||
        (dev->srq_state[slot] != SRM_VERBS_SLOT_POSTED)) {
        srm_verbs_fail(qp, "%s", "a receive completed twice");
        return;
    }
    dev->srq_stats.posted--;
    if ((wc->status != IBV_WC_SUCCESS) || qp->failed ||
        ((qp->rx_count == SRM_VERBS_QP_HELD) &&
         (srm_verbs_spill_oldest(qp) != 0))) {
        srm_verbs_fail(qp, "work request failed: %s",
                       ibv_wc_status_str(wc->status));
        srm_verbs_srq_give(dev, (uint32_t)slot);
        return;
    }
    dev->srq_state[slot] = SRM_VERBS_SLOT_HELD;
    dev->srq_stats.held++;
    rx       = &qp->rx[(qp->rx_first + qp->rx_count) % SRM_VERBS_QP_HELD];
    rx->slot = (uint32_t)slot;
    rx->len  = wc->byte_len;
    qp->rx_count++;
    qp->rx_bytes += wc->byte_len;
    qp->stats.recv_wrs++;
    qp->stats.recv_bytes += wc->byte_len;
}

int srm_verbs_qp_poll(srm_verbs_qp_t *qp)
{
    struct ibv_wc wc[SRM_VERBS_POLL_BATCH];
    int i, n;

    do {
        n = ibv_poll_cq(qp->cq, SRM_VERBS_POLL_BATCH, wc);
        if (n < 0) {
            srm_verbs_fail(qp, "%s", "ibv_poll_cq failed");
            break;
        }
        for (i = 0; i < n; ++i) {
            /* By wr_id, before the status: a failed completion has no
             * opcode. */
            if (wc[i].wr_id & SRM_VERBS_RMA_WR) {
                srm_verbs_rma_complete(qp, &wc[i]);
            } else if (wc[i].wr_id & SRM_VERBS_RECV_WR) {
                srm_verbs_recv_complete(qp, &wc[i]);
            } else if (wc[i].status != IBV_WC_SUCCESS) {
                srm_verbs_fail(qp, "work request failed: %s",
                               ibv_wc_status_str(wc[i].status));
            } else {
                srm_verbs_tx_done(qp, wc[i].wr_id + 1);
            }
        }
    } while (n == SRM_VERBS_POLL_BATCH);
    /* Buffers spilled or flushed go back in at once. */
    srm_verbs_srq_refill(qp->dev);
    return qp->failed ? -1 : 0;
}

/* Gathers up to `len` bytes of iov from (*i, *off) on into dst. */
static void srm_verbs_gather(uint8_t *dst, size_t len, const struct iovec *iov,
                             int *i, size_t *off)
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
static size_t srm_verbs_copied_run(const struct iovec *iov,
                                   const srm_verbs_mr_t *const *mrs,
                                   int iovcnt, int i, size_t off)
{
    size_t run = 0;

    for (; (i < iovcnt) && ((mrs == NULL) || (mrs[i] == NULL)); ++i) {
        run += iov[i].iov_len - off;
        off  = 0;
    }
    return run;
}

ssize_t srm_verbs_qp_sendv(srm_verbs_qp_t *qp, const struct iovec *iov,
                           int iovcnt)
{
    return srm_verbs_qp_sendv_mr(qp, iov, NULL, iovcnt);
}

ssize_t srm_verbs_qp_sendv_mr(srm_verbs_qp_t *qp, const struct iovec *iov,
                              const srm_verbs_mr_t *const *mrs, int iovcnt)
{
    struct ibv_send_wr wr[SRM_VERBS_SEND_SLOTS], *bad;
    struct ibv_sge sge[SRM_VERBS_SEND_SLOTS];
    uint8_t inl[SRM_VERBS_SEND_SLOTS][SRM_VERBS_MAX_INLINE];
    srm_verbs_dev_t *dev = qp->dev;
    size_t iov_off = 0, total = 0, left = 0, len;
    unsigned count = 0, room, taken = 0, in_place = 0;
    const struct ibv_mr *mr;
    uint32_t slot, lkey;
    uint8_t *buf;
    int i, ret, short_of_room, pool_out;

    if ((qp->send_head - qp->send_done) >= SRM_VERBS_SEND_SLOTS / 2) {
        srm_verbs_qp_poll(qp);
    }
    if (qp->failed) {
        errno = EIO;
        return -1;
    }
    for (i = 0; i < iovcnt; ++i) {
        left += iov[i].iov_len;
    }
    i    = 0;
    room = SRM_VERBS_SEND_SLOTS - (unsigned)(qp->send_head - qp->send_done);
    while ((count < room) && (left > 0)) {
        while (iov_off == iov[i].iov_len) {
            ++i;
            iov_off = 0;
        }
        memset(&wr[count], 0, sizeof(wr[count]));
        mr   = (mrs != NULL) ? (const struct ibv_mr*)mrs[i] : NULL;
        slot = SRM_VERBS_NO_SLOT;
        if (mr != NULL) {
            /* Registered memory the caller keeps unchanged until the peer
             * has it: the device reads it where it is. */
            len  = iov[i].iov_len - iov_off;
            len  = (len < SRM_VERBS_SLOT_SIZE) ? len : SRM_VERBS_SLOT_SIZE;
            buf  = (uint8_t*)iov[i].iov_base + iov_off;
            lkey = mr->lkey;
            if (len <= qp->max_inline) {
                wr[count].send_flags |= IBV_SEND_INLINE;
            } else {
                ++in_place;
            }
            iov_off += len;
        } else {
            len = srm_verbs_copied_run(iov, mrs, iovcnt, i, iov_off);
            len = (len < SRM_VERBS_SLOT_SIZE) ? len : SRM_VERBS_SLOT_SIZE;
            if (len <= qp->max_inline) {
                /* Copied at the post: it needs no buffer of the pool. */
                buf                   = inl[count];
                wr[count].send_flags |= IBV_SEND_INLINE;
            } else if (taken < dev->tx_stats.free) {
                slot = dev->tx_free[dev->tx_stats.free - 1 - taken++];
                buf  = srm_verbs_send_slot(dev, slot);
            } else {
                break;
            }
            srm_verbs_gather(buf, len, iov, &i, &iov_off);
            lkey = dev->tx_mr->lkey;
        }
        qp->tx_slot[(qp->send_head + count) % SRM_VERBS_SEND_SLOTS] = slot;
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
            srm_verbs_tx_reclaim(dev);
        }
        return 0;
    }
    /* A completion every quarter ring, and for the last send of a batch
     * that ran out of room (else nothing would tell us when room comes
     * back). */
    for (i = 0; i < (int)count; ++i) {
        if ((((qp->send_head + i + 1) % SRM_VERBS_SIGNAL_EVERY) == 0) ||
            (short_of_room && (i + 1 == (int)count))) {
            wr[i].send_flags |= IBV_SEND_SIGNALED;
            qp->stats.signaled++;
            qp->last_signaled = qp->send_head + i + 1;
        }
        qp->stats.inline_wrs += !!(wr[i].send_flags & IBV_SEND_INLINE);
    }
    ret = ibv_post_send(qp->qp, wr, &bad);
    if (ret != 0) {
        srm_verbs_fail(qp, "ibv_post_send failed: %s", strerror(ret));
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
        srm_verbs_tx_reclaim(dev); /* this one's last send asks already */
    }
    return (ssize_t)total;
}

/* Copies len bytes from src into iov from (*i, *off) on; how many fit. */
static size_t srm_verbs_scatter(const struct iovec *iov, int iovcnt, int *i,
                                size_t *off, const uint8_t *src, size_t len)
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

ssize_t srm_verbs_qp_recvv(srm_verbs_qp_t *qp, const struct iovec *iov,
                           int iovcnt)
{
    srm_verbs_dev_t *dev = qp->dev;
    size_t total = 0, off = 0, chunk;
    srm_verbs_rx_t *rx;
    int i = 0;

    if (srm_verbs_qp_poll(qp) != 0) {
        errno = EIO;
        return -1;
    }
    if (qp->spill_len > qp->spill_off) {
        /* The oldest input first: what was copied aside. */
        chunk          = srm_verbs_scatter(iov, iovcnt, &i, &off,
                                           qp->spill + qp->spill_off,
                                           qp->spill_len - qp->spill_off);
        total          = chunk;
        qp->spill_off += chunk;
        qp->rx_bytes  -= chunk;
    }
    while ((qp->rx_count > 0) && (i < iovcnt)) {
        rx    = &qp->rx[qp->rx_first];
        chunk = srm_verbs_scatter(iov, iovcnt, &i, &off,
                                  srm_verbs_recv_slot(dev, rx->slot) +
                                          qp->rx_offset,
                                  rx->len - qp->rx_offset);
        total         += chunk;
        qp->rx_offset += chunk;
        qp->rx_bytes  -= chunk;
        if (qp->rx_offset == rx->len) {
            srm_verbs_rx_pop(qp);
        }
    }
    if (srm_verbs_srq_refill(dev) != 0) {
        srm_verbs_fail(qp, "%s", "the shared receive queue takes no more "
                       "buffers");
        return -1;
    }
    return (ssize_t)total;
}

ssize_t srm_verbs_qp_recv(srm_verbs_qp_t *qp, void *buf, size_t len)
{
    struct iovec iov = {.iov_base = buf, .iov_len = len};

    return srm_verbs_qp_recvv(qp, &iov, 1);
}

size_t srm_verbs_qp_pending(const srm_verbs_qp_t *qp)
{
    return qp->rx_bytes;
}

int srm_verbs_qp_drain(srm_verbs_qp_t *qp, double timeout)
{
    struct timespec start, now;

    if (qp->failed || (qp->send_head == qp->send_done)) {
        return qp->failed ? -1 : 0;
    }
    if ((qp->send_head - qp->send_done) < SRM_VERBS_SEND_SLOTS) {
        /* An empty send that asks for a completion covers the unsignaled
         * ones before it; the peer reads zero bytes. */
        srm_verbs_post_empty(qp);
    }
    clock_gettime(CLOCK_MONOTONIC, &start);
    do {
        if (srm_verbs_qp_poll(qp) != 0) {
            return -1;
        }
        clock_gettime(CLOCK_MONOTONIC, &now);
    } while ((qp->send_done != qp->send_head) &&
             ((double)(now.tv_sec - start.tv_sec) +
              (double)(now.tv_nsec - start.tv_nsec) * 1e-9 < timeout));
    return (qp->send_done == qp->send_head) ? 0 : -1;
}

void srm_verbs_qp_force_error(srm_verbs_qp_t *qp)
{
    struct ibv_qp_attr attr = {.qp_state = IBV_QPS_ERR};

    if (ibv_modify_qp(qp->qp, &attr, IBV_QP_STATE) != 0) {
        return;
    }
    /* Its receives belong to the shared queue, which the error state does
     * not flush: a send flushed at once shows the error on the completion
     * queue, where a real failure would. */
    srm_verbs_post_empty(qp);
}

const char *srm_verbs_qp_error(const srm_verbs_qp_t *qp)
{
    return qp->error;
}

uint32_t srm_verbs_qp_num(const srm_verbs_qp_t *qp)
{
    return qp->qp->qp_num;
}

uint32_t srm_verbs_qp_remote_num(const srm_verbs_qp_t *qp)
{
    return qp->remote_qpn;
}

const srm_verbs_stats_t *srm_verbs_qp_stats(const srm_verbs_qp_t *qp)
{
    return &qp->stats;
}

srm_verbs_mr_t *srm_verbs_mr_reg(srm_verbs_dev_t *dev, void *addr,
                                 size_t length)
{
    struct ibv_mr *mr = ibv_reg_mr(dev->pd, addr, length,
                                   IBV_ACCESS_LOCAL_WRITE |
                                   IBV_ACCESS_REMOTE_READ |
                                   IBV_ACCESS_REMOTE_WRITE);

    return (srm_verbs_mr_t*)mr; /* an ibv_mr behind an opaque name */
}

srm_verbs_mr_t *srm_verbs_mr_reg_send(srm_verbs_dev_t *dev, void *addr,
                                      size_t length)
{
    return (srm_verbs_mr_t*)ibv_reg_mr(dev->pd, addr, length, 0);
}

void srm_verbs_mr_dereg(srm_verbs_mr_t *mr)
{
    if (mr != NULL) {
        ibv_dereg_mr((struct ibv_mr*)mr);
    }
}

uint32_t srm_verbs_mr_lkey(const srm_verbs_mr_t *mr)
{
    return ((const struct ibv_mr*)mr)->lkey;
}

uint32_t srm_verbs_mr_rkey(const srm_verbs_mr_t *mr)
{
    return ((const struct ibv_mr*)mr)->rkey;
}

#else /* !HAVE_VERBS */

int srm_verbs_built(void)
{
    return 0;
}

int srm_verbs_dev_open(const char *spec, const srm_verbs_dev_params_t *params,
                       srm_verbs_dev_t **dev_p, char *netdev,
                       size_t netdev_size)
{
    srm_error("UCX_SRM_DEVICES: '%s' is a verbs device, but this srmd was "
              "built without libibverbs (install libibverbs-dev and "
              "rebuild)", spec);
    errno = ENOSYS;
    return -1;
}

void srm_verbs_dev_close(srm_verbs_dev_t *dev) {}
const char *srm_verbs_dev_name(const srm_verbs_dev_t *dev) { return ""; }
int srm_verbs_dev_event_fd(const srm_verbs_dev_t *dev) { return -1; }
int srm_verbs_dev_async_fd(const srm_verbs_dev_t *dev) { return -1; }
void srm_verbs_dev_async(srm_verbs_dev_t *dev) {}
const srm_verbs_srq_stats_t *srm_verbs_dev_srq_stats(const srm_verbs_dev_t *dev)
{
    return NULL;
}
const srm_verbs_tx_stats_t *srm_verbs_dev_tx_stats(const srm_verbs_dev_t *dev)
{
    return NULL;
}
int srm_verbs_dev_take_room(srm_verbs_dev_t *dev) { return 0; }
int srm_verbs_dev_xrc(const srm_verbs_dev_t *dev, const char **why)
{
    *why = "no verbs";
    return 0;
}
srm_verbs_qp_t *srm_verbs_dev_next_event(srm_verbs_dev_t *dev) { return NULL; }
srm_verbs_qp_t *srm_verbs_qp_create(srm_verbs_dev_t *dev, unsigned owner)
{
    errno = ENOSYS;
    return NULL;
}
void srm_verbs_qp_destroy(srm_verbs_qp_t *qp) {}
unsigned srm_verbs_qp_owner(const srm_verbs_qp_t *qp) { return 0; }
void srm_verbs_qp_local(const srm_verbs_qp_t *qp, srm_hello_qp_t *info)
{
    memset(info, 0, sizeof(*info));
}
int srm_verbs_qp_connect(srm_verbs_qp_t *qp, const srm_hello_qp_t *remote)
{
    errno = ENOSYS;
    return -1;
}
ssize_t srm_verbs_qp_sendv(srm_verbs_qp_t *qp, const struct iovec *iov,
                           int iovcnt)
{
    errno = ENOSYS;
    return -1;
}
ssize_t srm_verbs_qp_sendv_mr(srm_verbs_qp_t *qp, const struct iovec *iov,
                              const srm_verbs_mr_t *const *mrs, int iovcnt)
{
    errno = ENOSYS;
    return -1;
}
ssize_t srm_verbs_qp_recv(srm_verbs_qp_t *qp, void *buf, size_t len)
{
    errno = ENOSYS;
    return -1;
}
ssize_t srm_verbs_qp_recvv(srm_verbs_qp_t *qp, const struct iovec *iov,
                           int iovcnt)
{
    errno = ENOSYS;
    return -1;
}
int srm_verbs_qp_poll(srm_verbs_qp_t *qp) { return -1; }
size_t srm_verbs_qp_pending(const srm_verbs_qp_t *qp) { return 0; }
int srm_verbs_qp_drain(srm_verbs_qp_t *qp, double timeout) { return -1; }
void srm_verbs_qp_force_error(srm_verbs_qp_t *qp) {}
const char *srm_verbs_qp_error(const srm_verbs_qp_t *qp) { return "no verbs"; }
uint32_t srm_verbs_qp_num(const srm_verbs_qp_t *qp) { return 0; }
uint32_t srm_verbs_qp_remote_num(const srm_verbs_qp_t *qp) { return 0; }
const srm_verbs_stats_t *srm_verbs_qp_stats(const srm_verbs_qp_t *qp)
{
    return NULL;
}

srm_verbs_mr_t *srm_verbs_mr_reg(srm_verbs_dev_t *dev, void *addr,
                                 size_t length)
{
    errno = ENOSYS;
    return NULL;
}

srm_verbs_mr_t *srm_verbs_mr_reg_send(srm_verbs_dev_t *dev, void *addr,
                                      size_t length)
{
    errno = ENOSYS;
    return NULL;
}

int srm_verbs_qp_rdma(srm_verbs_qp_t *qp, int write, void *local,
                      uint32_t lkey, uint64_t remote, uint32_t rkey,
                      uint32_t length, uint64_t id)
{
    errno = ENOSYS;
    return -1;
}

int srm_verbs_qp_rma_next(srm_verbs_qp_t *qp, uint64_t *id, int *ok)
{
    return 0;
}

void srm_verbs_mr_dereg(srm_verbs_mr_t *mr) {}
uint32_t srm_verbs_mr_lkey(const srm_verbs_mr_t *mr) { return 0; }
uint32_t srm_verbs_mr_rkey(const srm_verbs_mr_t *mr) { return 0; }

#endif
