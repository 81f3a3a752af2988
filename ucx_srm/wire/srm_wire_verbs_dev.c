/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The verbs wire (srm_wire_verbs.h): a device opened by its spec, its GID
 * for RoCE, and its completion and async events (XRC: srm_wire_verbs_xrc.c).
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
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

int srm_wire_verbs_built(void)
{
    return 1;
}

/* "NAME[:PORT][@NETDEV]" into its parts. */
static int srm_wire_verbs_parse_spec(const char *spec, char *name, size_t size,
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

static int srm_wire_verbs_is_ipv4_gid(const union ibv_gid *gid)
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
static int srm_wire_verbs_find_gid(srm_wire_verbs_dev_t *dev, int gid_table_len,
                                   char *netdev, size_t netdev_size)
{
    struct ibv_gid_entry entry;
    char ifname[IF_NAMESIZE];
    int i, found = -1;

    for (i = 0; i < gid_table_len; ++i) {
        if ((ibv_query_gid_ex(dev->ctx, dev->port, (uint32_t)i, &entry, 0) !=
             0) ||
            (entry.gid_type != IBV_GID_TYPE_ROCE_V2) ||
            !srm_wire_verbs_is_ipv4_gid(&entry.gid)) {
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

static int srm_wire_verbs_set_nonblock(int fd)
{
    int flags = fcntl(fd, F_GETFL);

    return ((flags < 0) || (fcntl(fd, F_SETFL, flags | O_NONBLOCK) != 0)) ?
                   -1 : 0;
}

static struct ibv_context *srm_wire_verbs_open_by_name(const char *name)
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

int srm_wire_verbs_dev_async_fd(const srm_wire_verbs_dev_t *dev)
{
    return dev->ctx->async_fd;
}

void srm_wire_verbs_dev_async(srm_wire_verbs_dev_t *dev)
{
    struct ibv_async_event event;

    while (ibv_get_async_event(dev->ctx, &event) == 0) {
        if (event.event_type == IBV_EVENT_SRQ_LIMIT_REACHED) {
            srm_wire_verbs_srq_low(dev);
        } else {
            /* Queue pair errors also show in their completions. */
            srm_debug("verbs device %s: %s", dev->name,
                      ibv_event_type_str(event.event_type));
        }
        ibv_ack_async_event(&event);
    }
}

int srm_wire_verbs_dev_open(const char *spec,
                            const srm_wire_verbs_dev_params_t *params,
                            srm_wire_verbs_dev_t **dev_p, char *netdev,
                            size_t netdev_size)
{
    struct ibv_port_attr port_attr;
    char name[48];
    unsigned port;
    srm_wire_verbs_dev_t *dev;

    if (srm_wire_verbs_parse_spec(spec, name, sizeof(name), &port, netdev,
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

    dev->ctx = srm_wire_verbs_open_by_name(name);
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
        if (srm_wire_verbs_find_gid(dev, port_attr.gid_tbl_len, netdev,
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
    if ((srm_wire_verbs_set_nonblock(dev->channel->fd) != 0) ||
        (srm_wire_verbs_set_nonblock(dev->ctx->async_fd) != 0)) {
        srm_error("verbs device %s: completion channel or event file: %m",
                  dev->name);
        goto err;
    }
    if ((params->recv_bufs < SRM_WIRE_VERBS_MIN_RECV_BUFS) ||
        (params->send_bufs < SRM_WIRE_VERBS_MIN_SEND_BUFS)) {
        srm_error("verbs device %s: UCX_SRM_VERBS_RECV_BUFS (%u) must be at "
                  "least %u and UCX_SRM_VERBS_SEND_BUFS (%u) at least %u",
                  dev->name, params->recv_bufs, SRM_WIRE_VERBS_MIN_RECV_BUFS,
                  params->send_bufs, SRM_WIRE_VERBS_MIN_SEND_BUFS);
        goto err;
    }
    if ((srm_wire_verbs_srq_open(dev, params->recv_bufs) != 0) ||
        (srm_wire_verbs_tx_open(dev, params->send_bufs) != 0) ||
        (srm_wire_verbs_xrc_dev_init(dev, params->xrc_mode) != 0)) {
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
    srm_wire_verbs_dev_close(dev);
    return -1;
}

void srm_wire_verbs_dev_close(srm_wire_verbs_dev_t *dev)
{
    if (dev == NULL) {
        return;
    }
    srm_wire_verbs_xrc_dev_close(dev);
    srm_wire_verbs_srq_close(dev);
    srm_wire_verbs_tx_close(dev);
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

const char *srm_wire_verbs_dev_name(const srm_wire_verbs_dev_t *dev)
{
    return dev->name;
}

int srm_wire_verbs_dev_event_fd(const srm_wire_verbs_dev_t *dev)
{
    return dev->channel->fd;
}

int srm_wire_verbs_dev_xrc(const srm_wire_verbs_dev_t *dev, const char **why)
{
    *why = dev->xrc_why;
    return dev->xrc;
}

uint32_t srm_wire_verbs_new_psn(void)
{
    uint32_t psn;

    if (getrandom(&psn, sizeof(psn), 0) != sizeof(psn)) {
        psn = (uint32_t)time(NULL);
    }
    return psn & 0xffffff;
}

srm_wire_verbs_qp_t *srm_wire_verbs_dev_next_event(srm_wire_verbs_dev_t *dev)
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
