/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The srm iface: one port on the node agent. Receives by polling its RX
 * ring, sleeps on an event fd the agent signals, and turns the loss of the
 * agent into endpoint errors.
 */
#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "srm_uct.h"

#include <ucs/async/async.h>
#include <ucs/debug/log.h>
#include <ucs/sys/string.h>

#include <errno.h>
#include <sched.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

static uct_iface_ops_t uct_srm_iface_ops;

void uct_srm_iface_ring_doorbell(uct_srm_iface_t *iface)
{
    const uint64_t one = 1;

    if (srm_shm_flag_take(&iface->ctl->agent_sleeping) &&
        (write(iface->agent.doorbell_fd, &one, sizeof(one)) < 0) &&
        (errno != EAGAIN)) {
        ucs_debug("srm: doorbell write failed: %m");
    }
}

/*
 * Reports every ep whose peer is unreachable, one at a time: the error
 * handler may destroy eps (this one or others), so restart the walk after
 * each call.
 */
void uct_srm_iface_report_errors(uct_srm_iface_t *iface)
{
    ucs_status_t status;
    uct_srm_ep_t *ep;
    uint64_t dst_node;
    uint32_t dst_port;
    int found;

    do {
        found = 0;
        ucs_list_for_each(ep, &iface->eps, list) {
            if (((ep->failed == SRM_SHM_NODE_FAILED) || iface->agent_lost) &&
                !ep->error_reported) {
                ep->error_reported = 1;
                found              = 1;
                /* The handler may destroy the ep: what we log, first. */
                dst_port = ep->dst_port;
                dst_node = (ep->dst_node == 0) ? iface->agent.node_id :
                           iface->ctl->nodes[ep->dst_node].node_id;
                status   = uct_iface_handle_ep_err(&iface->super.super,
                                                   &ep->super.super,
                                                   UCS_ERR_ENDPOINT_TIMEOUT);
                /* Unhandled (no error mode in UCP): fatal, as in UCX's own
                 * transports, so that the job dies instead of hanging. */
                ucs_log(uct_base_iface_failure_log_level(
                                &iface->super, status,
                                UCS_ERR_ENDPOINT_TIMEOUT),
                        "srm: port %u: endpoint to port %u on node "
                        "0x%016llx failed: %s", iface->agent.port, dst_port,
                        (unsigned long long)dst_node,
                        iface->agent_lost ? "the node agent is gone" :
                                            "that node is unreachable "
                                            "(UCX_SRM_PEER_TIMEOUT)");
                break;
            }
        }
    } while (found);
    iface->errors_reported = 1;
}

/*
 * The agent changed the state of nodes in our table: eps to a failed node
 * report it now; eps to a node whose agent left fail when used.
 */
void uct_srm_iface_check_nodes(uct_srm_iface_t *iface)
{
    uct_srm_ep_t *ep;
    uint16_t state;
    int report = 0;

    if (!srm_shm_flag_take(&iface->ctl->nodes_changed)) {
        return;
    }
    ucs_list_for_each(ep, &iface->eps, list) {
        state = srm_load_relaxed(&iface->ctl->nodes[ep->dst_node].state);
        if ((ep->dst_node != 0) && (state != SRM_SHM_NODE_OK) &&
            (ep->failed == SRM_SHM_NODE_OK)) {
            ep->failed = state;
            report    |= (state == SRM_SHM_NODE_FAILED);
        }
    }
    if (report) {
        uct_srm_iface_report_errors(iface);
    }
}

/* Async thread: the agent closed our control socket, i.e. it is gone. */
static void uct_srm_iface_agent_event(int fd, ucs_event_set_types_t events,
                                      void *arg)
{
    uct_srm_iface_t *iface = arg;
    const uint64_t one     = 1;
    char byte;
    ssize_t ret;

    ret = recv(fd, &byte, sizeof(byte), MSG_DONTWAIT);
    if ((ret < 0) && ((errno == EAGAIN) || (errno == EINTR))) {
        return;
    }
    if (!iface->agent_lost) {
        ucs_error("srm: lost the node agent (port %u): %s; endpoints will "
                  "fail", iface->agent.port,
                  (ret == 0) ? "it closed the connection" :
                  (ret < 0)  ? strerror(errno) : "unexpected message");
    }
    iface->agent_lost = 1;
    /* A hung-up socket stays readable: stop watching it, or we spin. */
    ucs_async_remove_handler(fd, 0);
    /* Wake a thread blocked on our event fd so that it sees the errors. */
    if (write(iface->agent.event_fd, &one, sizeof(one)) < 0) {
        ucs_debug("srm: event fd write failed: %m");
    }
}

static ucs_status_t uct_srm_iface_query(uct_iface_h tl_iface,
                                        uct_iface_attr_t *attr)
{
    uct_srm_iface_t *iface = ucs_derived_of(tl_iface, uct_srm_iface_t);

    uct_base_iface_query(&iface->super, attr);

    attr->iface_addr_len          = sizeof(srm_iface_addr_t);
    attr->device_addr_len         = sizeof(srm_device_addr_t);
    attr->ep_addr_len             = 0;
    attr->max_conn_priv           = 0;
    attr->cap.flags               = UCT_IFACE_FLAG_CONNECT_TO_IFACE |
                                    UCT_IFACE_FLAG_AM_SHORT |
                                    UCT_IFACE_FLAG_AM_BCOPY |
                                    UCT_IFACE_FLAG_AM_ZCOPY |
                                    UCT_IFACE_FLAG_PENDING |
                                    UCT_IFACE_FLAG_CB_SYNC |
                                    UCT_IFACE_FLAG_ERRHANDLE_PEER_FAILURE |
                                    UCT_IFACE_FLAG_EP_CHECK |
                                    SRM_UCX_IFACE_FLAG_INTER_NODE;
    if (iface->config.rma_offered) {
        attr->cap.flags          |= UCT_IFACE_FLAG_PUT_ZCOPY |
                                    UCT_IFACE_FLAG_GET_ZCOPY;
        attr->cap.put.min_zcopy       = 0;
        attr->cap.put.max_zcopy       = iface->config.max_rma;
        attr->cap.put.opt_zcopy_align = 1;
        attr->cap.put.align_mtu       = 1;
        attr->cap.put.max_iov         = 1;
        attr->cap.get.min_zcopy       = 0;
        attr->cap.get.max_zcopy       = iface->config.max_rma;
        attr->cap.get.opt_zcopy_align = 1;
        attr->cap.get.align_mtu       = 1;
        attr->cap.get.max_iov         = 1;
    }
    attr->cap.event_flags         = UCT_IFACE_FLAG_EVENT_SEND_COMP |
                                    UCT_IFACE_FLAG_EVENT_RECV |
                                    UCT_IFACE_FLAG_EVENT_FD;

    attr->cap.am.max_short        = iface->config.max_short;
    attr->cap.am.max_bcopy        = iface->config.max_bcopy;
    attr->cap.am.min_zcopy        = 0;
    attr->cap.am.max_zcopy        = iface->config.max_zcopy;
    attr->cap.am.opt_zcopy_align  = 1;
    attr->cap.am.align_mtu        = 1;
    attr->cap.am.max_hdr          = UCT_SRM_MAX_HDR;
    attr->cap.am.max_iov          = 16;

    /* Two ring hops and a wakeup when the agent sleeps (docs/design.md). */
    attr->latency                 = ucs_linear_func_make(3e-6, 0);
    attr->bandwidth.dedicated     = 0;
    attr->bandwidth.shared        = 6000.0 * UCS_MBYTE;
    attr->overhead                = 100e-9;
    attr->priority                = 0;
    return UCS_OK;
}

static ucs_status_t uct_srm_iface_get_device_address(uct_iface_h tl_iface,
                                                     uct_device_addr_t *addr)
{
    uct_srm_iface_t *iface        = ucs_derived_of(tl_iface, uct_srm_iface_t);
    srm_device_addr_t *dev_addr   = (srm_device_addr_t*)addr;

    dev_addr->node_id = iface->agent.node_id;
    return UCS_OK;
}

static ucs_status_t uct_srm_iface_get_address(uct_iface_h tl_iface,
                                              uct_iface_addr_t *addr)
{
    uct_srm_iface_t *iface       = ucs_derived_of(tl_iface, uct_srm_iface_t);
    srm_iface_addr_t *iface_addr = (srm_iface_addr_t*)addr;

    iface_addr->port = iface->agent.port;
    iface_addr->key  = iface->agent.key;
    memcpy(iface_addr->wire, iface->agent.wire, sizeof(iface_addr->wire));
    return UCS_OK;
}

/* An IPv4-only host does not reach an IPv6 one: UCX had better pick
 * another transport. */
int uct_srm_iface_can_dial(const uct_srm_iface_t *iface,
                           const srm_iface_addr_t *addr)
{
    const srm_wire_addr_t *ours = &iface->agent.wire[0];

    return srm_wire_addr_is_set(ours) && srm_wire_addrs_are_valid(addr->wire) &&
           (addr->wire[0].family == ours->family);
}

/* The same agent, or another agent that our agent can dial. */
static int uct_srm_iface_is_reachable(const uct_iface_h tl_iface,
                                      const uct_device_addr_t *dev_addr,
                                      const uct_iface_addr_t *iface_addr)
{
    uct_srm_iface_t *iface = ucs_derived_of(tl_iface, uct_srm_iface_t);
    srm_device_addr_t dev;
    srm_iface_addr_t port;

    if ((dev_addr == NULL) || (iface_addr == NULL)) {
        return 0;
    }
    memcpy(&dev, dev_addr, sizeof(dev));
    memcpy(&port, iface_addr, sizeof(port));
    if (dev.node_id == iface->agent.node_id) {
        return 1;
    }
    return uct_srm_iface_can_dial(iface, &port);
}

/*
 * From UCX 1.16 each transport brings its own internal operations, and UCP
 * asks reachability (and whether an ep goes to an address) through them;
 * before, the base ones called iface_is_reachable.
 */
#if SRM_UCX_AT_LEAST(1, 16)
static int
uct_srm_iface_is_reachable_v2(const uct_iface_h tl_iface,
                              const uct_iface_is_reachable_params_t *params)
{
    if (!uct_iface_is_reachable_params_valid(
                params, UCT_IFACE_IS_REACHABLE_FIELD_DEVICE_ADDR |
                        UCT_IFACE_IS_REACHABLE_FIELD_IFACE_ADDR)) {
        return 0;
    }
    if (!uct_srm_iface_is_reachable(tl_iface, params->device_addr,
                                    params->iface_addr)) {
        if (params->field_mask & UCT_IFACE_IS_REACHABLE_FIELD_INFO_STRING) {
            ucs_snprintf_zero(params->info_string, params->info_string_length,
                              "no wire to that node's agent");
        }
        return 0;
    }
    return uct_iface_scope_is_reachable(tl_iface, params);
}

/* Whether the ep goes to the port that the addresses name. */
static int uct_srm_ep_is_connected(const uct_ep_h tl_ep,
                                   const uct_ep_is_connected_params_t *params)
{
    const uct_srm_ep_t *ep = ucs_derived_of(tl_ep, uct_srm_ep_t);
    uct_srm_iface_t *iface = ucs_derived_of(tl_ep->iface, uct_srm_iface_t);
    srm_device_addr_t dev;
    srm_iface_addr_t port;
    uint64_t node_id;

    if (!(params->field_mask & UCT_EP_IS_CONNECTED_FIELD_DEVICE_ADDR) ||
        !(params->field_mask & UCT_EP_IS_CONNECTED_FIELD_IFACE_ADDR)) {
        return 0;
    }
    memcpy(&dev, params->device_addr, sizeof(dev));
    memcpy(&port, params->iface_addr, sizeof(port));
    node_id = (ep->dst_node == 0) ? iface->agent.node_id :
                                    iface->ctl->nodes[ep->dst_node].node_id;
    return (dev.node_id == node_id) && (port.port == ep->dst_port) &&
           (port.key == ep->dst_key);
}

static uct_iface_internal_ops_t uct_srm_iface_internal_ops = {
    .iface_estimate_perf   = uct_base_iface_estimate_perf,
    .iface_vfs_refresh     = SRM_UCX_STUB(uct_iface_vfs_refresh_func_t,
                                          ucs_empty_function),
    .ep_query              = SRM_UCX_UNSUPPORTED(uct_ep_query_func_t),
    .ep_invalidate         = SRM_UCX_UNSUPPORTED(uct_ep_invalidate_func_t),
    .ep_connect_to_ep_v2   =
            SRM_UCX_UNSUPPORTED(uct_ep_connect_to_ep_v2_func_t),
    .iface_is_reachable_v2 = uct_srm_iface_is_reachable_v2,
    .ep_is_connected       = uct_srm_ep_is_connected,
#  if SRM_UCX_HAS_EP_GET_DEVICE_EP
    .ep_get_device_ep      = SRM_UCX_UNSUPPORTED(uct_ep_get_device_ep_func_t),
#  endif
#  if SRM_UCX_HAS_IFACE_MEM_ELEMENT_PACK
    .iface_mem_element_pack =
            SRM_UCX_UNSUPPORTED(uct_iface_mem_element_pack_func_t),
#  endif
#  if SRM_UCX_HAS_IFACE_QUERY_V2
    .iface_query_v2        = uct_iface_base_query_v2,
#  endif
#  if SRM_UCX_HAS_EP_PUT_SGL_ZCOPY
    .ep_put_sgl_zcopy      = SRM_UCX_UNSUPPORTED(uct_ep_put_sgl_zcopy_func_t),
#  endif
#  if SRM_UCX_HAS_EP_GET_SGL_ZCOPY
    .ep_get_sgl_zcopy      = SRM_UCX_UNSUPPORTED(uct_ep_get_sgl_zcopy_func_t),
#  endif
#  if SRM_UCX_HAS_EP_OUTSTANDING_PURGE
    .ep_outstanding_purge  =
            SRM_UCX_UNSUPPORTED(uct_ep_outstanding_purge_func_t),
#  endif
};
#  define UCT_SRM_IFACE_INTERNAL_OPS (&uct_srm_iface_internal_ops)
#else
#  define UCT_SRM_IFACE_INTERNAL_OPS (&uct_base_iface_internal_ops)
#endif

static unsigned uct_srm_iface_progress(uct_iface_h tl_iface)
{
    uct_srm_iface_t *iface = ucs_derived_of(tl_iface, uct_srm_iface_t);
    unsigned count         = 0;
    srm_ring_status_t status;
    srm_frame_hdr_t hdr;
    void *payload;

    if (ucs_unlikely(iface->agent_lost)) {
        if (!iface->errors_reported) {
            uct_srm_iface_report_errors(iface);
        }
        return 0;
    }

    while (count < iface->config.rx_max_poll) {
        status = srm_ring_peek(&iface->rx, SRM_FRAME_MAX_PAYLOAD, &hdr,
                               &payload);
        if (status != SRM_RING_OK) {
            if (ucs_unlikely(status == SRM_RING_CORRUPT)) {
                ucs_error("srm: port %u: corrupt receive ring; dropping the "
                          "agent connection", iface->agent.port);
                iface->agent_lost = 1;
            }
            break;
        }
        if (ucs_unlikely(hdr.type == SRM_FRAME_RMA_DONE)) {
            uct_srm_ep_rma_done(iface, payload, hdr.length);
            srm_ring_release(&iface->rx);
            ++count;
            continue;
        }
        uct_iface_trace_am(&iface->super, UCT_AM_TRACE_TYPE_RECV, hdr.am_id,
                           payload, hdr.length, "RX: AM port %u",
                           hdr.src_port);
        uct_iface_invoke_am(&iface->super, hdr.am_id, payload, hdr.length, 0);
        srm_ring_release(&iface->rx);
        ++count;
    }
    /* A look at a lane's socket is a system call: not for a process
     * that is sending, and so not waiting (as UCX_SRM_YIELD). */
    if ((iface->lanes != NULL) && iface->config.direct_recv &&
        !iface->sent_since_progress && (count < iface->config.rx_max_poll)) {
        count += uct_srm_direct_receive(iface,
                                        iface->config.rx_max_poll - count);
    }

    /* The take fences: our RX release must be visible before we look at
     * whether the agent waits for room, or both may miss the other. */
    if ((count > 0) && srm_shm_flag_take(&iface->ctl->rx_space_wanted)) {
        uct_srm_iface_ring_doorbell(iface);
    }
    if (ucs_unlikely(iface->num_flushes > 0)) {
        count += uct_srm_flush_progress(iface);
    }

    if (ucs_unlikely(srm_load_relaxed(&iface->ctl->nodes_changed.value))) {
        uct_srm_iface_check_nodes(iface);
    }
    uct_srm_ep_dispatch_pending(iface);
    /* A process that is sending is not waiting: yielding after every
     * message would hand the agent one message per wakeup. */
    if ((count == 0) && iface->config.yield && !iface->sent_since_progress) {
        sched_yield();
    } else if (count > 0) {
        iface->sent_since_receive = 0;
    }
    iface->sent_since_progress = 0;
    return count;
}

static int uct_srm_iface_has_pending(uct_srm_iface_t *iface)
{
    unsigned i;

    for (i = 0; i < iface->agent.layout.num_tx_rings; ++i) {
        if (!ucs_arbiter_is_empty(&iface->tx[i].pending)) {
            return 1;
        }
    }
    return 0;
}

static ucs_status_t uct_srm_iface_flush(uct_iface_h tl_iface, unsigned flags,
                                        uct_completion_t *comp)
{
    uct_srm_iface_t *iface = ucs_derived_of(tl_iface, uct_srm_iface_t);

    if (comp != NULL) {
        return UCS_ERR_UNSUPPORTED;
    }
    if (uct_srm_iface_has_pending(iface)) {
        return UCS_ERR_NO_RESOURCE;
    }
    return uct_srm_flush_start(iface, NULL, NULL);
}

static ucs_status_t uct_srm_iface_event_fd_get(uct_iface_h tl_iface, int *fd_p)
{
    *fd_p = ucs_derived_of(tl_iface, uct_srm_iface_t)->agent.event_fd;
    return UCS_OK;
}

/* The sleeping side of the doorbell protocol (srm_shm.h). */
static ucs_status_t uct_srm_iface_event_arm(uct_iface_h tl_iface,
                                            unsigned events)
{
    uct_srm_iface_t *iface = ucs_derived_of(tl_iface, uct_srm_iface_t);
    uint64_t count;

    if (iface->agent_lost) {
        return UCS_ERR_BUSY; /* progress reports the errors */
    }
    while (read(iface->agent.event_fd, &count, sizeof(count)) > 0) {
    }
    uct_srm_direct_stop_polling(iface);

    srm_shm_flag_raise(&iface->ctl->client_sleeping);
    if (srm_load_relaxed(&iface->ctl->nodes_changed.value) ||
        ((events & UCT_EVENT_RECV) && srm_ring_has_data(&iface->rx)) ||
        ((events & UCT_EVENT_SEND_COMP) &&
         (uct_srm_iface_has_pending(iface) ||
          ((iface->num_flushes > 0) && !uct_srm_flush_waiting(iface))))) {
        return UCS_ERR_BUSY;
    }
    return UCS_OK;
}

static UCS_CLASS_INIT_FUNC(uct_srm_iface_t, uct_md_h tl_md,
                           uct_worker_h worker,
                           const uct_iface_params_t *params,
                           const uct_iface_config_t *tl_config)
{
    uct_srm_iface_config_t *config = ucs_derived_of(tl_config,
                                                    uct_srm_iface_config_t);
    uct_srm_md_t *md = ucs_derived_of(tl_md, uct_srm_md_t);
    ucs_async_context_t *async;
    ucs_status_t status;
    uint8_t *base;
    size_t max_zcopy;
    unsigned i;

    UCS_CLASS_CALL_SUPER_INIT(uct_base_iface_t, &uct_srm_iface_ops,
                              UCT_SRM_IFACE_INTERNAL_OPS, tl_md, worker,
                              params, tl_config
                              UCS_STATS_ARG(params->stats_root)
                              UCS_STATS_ARG(UCT_SRM_NAME));

    status = uct_srm_agent_attach(md, config, &self->agent);
    if (status != UCS_OK) {
        return status;
    }
    uct_srm_agent_check_settings(md);
    max_zcopy = (config->max_zcopy == UCS_MEMUNITS_AUTO) ?
                        (self->agent.max_payload - UCT_SRM_MAX_HDR) :
                        config->max_zcopy;
    if ((max_zcopy + UCT_SRM_MAX_HDR) > self->agent.max_payload) {
        ucs_error("srm: UCX_SRM_MAX_ZCOPY (%zu) plus header exceeds the "
                  "agent's frame limit (%u)", max_zcopy,
                  self->agent.max_payload);
        uct_srm_agent_detach(&self->agent);
        return UCS_ERR_INVALID_PARAM;
    }
    if ((config->seg_size < 64) || (config->seg_size > max_zcopy)) {
        ucs_error("srm: UCX_SRM_SEG_SIZE (%zu) must be 64 or more and not "
                  "above UCX_SRM_MAX_ZCOPY (%zu)", config->seg_size,
                  max_zcopy);
        uct_srm_agent_detach(&self->agent);
        return UCS_ERR_INVALID_PARAM;
    }

    base                     = self->agent.shm;
    self->ctl                = self->agent.shm;
    self->config.max_bcopy   = config->seg_size;
    self->config.max_short   = config->seg_size - sizeof(uint64_t);
    self->config.max_zcopy   = max_zcopy;
    self->config.rx_max_poll = config->rx_max_poll;
    self->config.yield       = config->yield;
    self->config.direct      = config->direct;
    self->config.direct_recv = config->direct_recv &&
                               (config->direct != UCT_SRM_DIRECT_NO);
    self->config.direct_bulk = config->direct_bulk;
    /* PUT/GET only where the agent serves them for every peer (elsewhere
     * UCP emulates RMA over AM), and only with memory the md allocates. */
    self->config.rma_offered = md->mem_alloc &&
                               (self->agent.flags & SRM_ATTACH_FLAG_RMA);
    self->config.max_rma     = config->max_rma;
    self->rma_outstanding    = 0;
    uct_srm_rma_slots_init(&self->rma_slots);
    self->sent_since_progress = 0;
    self->sent_since_receive  = 0;
    self->lanes              = NULL;
    self->direct_bulk_above  = SIZE_MAX; /* until a small lane says */
    self->rx_frame           = NULL;
    self->fenced             = 0;
    self->num_flushes        = 0;
    self->num_nodes          = 1; /* entry 0 is this node */
    self->dispatch_ep        = NULL;
    self->agent_lost         = 0;
    self->errors_reported    = 0;
    ucs_list_head_init(&self->eps);

    srm_ring_init_consumer(&self->rx, &self->ctl->rx,
                           base + self->agent.layout.rx_offset,
                           self->agent.layout.rx_ring_size);
    for (i = 0; i < self->agent.layout.num_tx_rings; ++i) {
        srm_ring_init_producer(&self->tx[i].ring, &self->ctl->tx[i],
                               base + self->agent.layout.tx_offset[i],
                               self->agent.layout.tx_ring_size);
        ucs_arbiter_init(&self->tx[i].pending);
    }

    async  = self->super.worker->async;
    status = ucs_async_set_event_handler(async->mode, self->agent.sock_fd,
                                         UCS_EVENT_SET_EVREAD |
                                         UCS_EVENT_SET_EVERR,
                                         uct_srm_iface_agent_event, self,
                                         async);
    if (status != UCS_OK) {
        ucs_error("srm: cannot watch the agent connection: %s",
                  ucs_status_string(status));
        uct_srm_agent_detach(&self->agent);
        return status;
    }

    ucs_debug("srm: iface %p is port %u on node 0x%016llx", self,
              self->agent.port, (unsigned long long)self->agent.node_id);
    return UCS_OK;
}

static UCS_CLASS_CLEANUP_FUNC(uct_srm_iface_t)
{
    unsigned i;

    uct_base_iface_progress_disable(&self->super.super,
                                    UCT_PROGRESS_SEND | UCT_PROGRESS_RECV);
    ucs_async_remove_handler(self->agent.sock_fd, 1);
    for (i = 0; i < self->agent.layout.num_tx_rings; ++i) {
        ucs_arbiter_cleanup(&self->tx[i].pending);
    }
    uct_srm_direct_cleanup(self);
    uct_srm_agent_detach(&self->agent);
    uct_srm_rma_slots_cleanup(&self->rma_slots);
}

UCS_CLASS_DEFINE(uct_srm_iface_t, uct_base_iface_t);

UCS_CLASS_DEFINE_NEW_FUNC(uct_srm_iface_t, uct_iface_t, uct_md_h,
                          uct_worker_h, const uct_iface_params_t*,
                          const uct_iface_config_t*);

static UCS_CLASS_DEFINE_DELETE_FUNC(uct_srm_iface_t, uct_iface_t);

static uct_iface_ops_t uct_srm_iface_ops = {
    .ep_am_short              = uct_srm_ep_am_short,
    .ep_am_short_iov          = uct_srm_ep_am_short_iov,
    .ep_am_bcopy              = uct_srm_ep_am_bcopy,
    .ep_am_zcopy              = uct_srm_ep_am_zcopy,
    .ep_put_zcopy             = uct_srm_ep_put_zcopy,
    .ep_get_zcopy             = uct_srm_ep_get_zcopy,
    .ep_pending_add           = uct_srm_ep_pending_add,
    .ep_pending_purge         = uct_srm_ep_pending_purge,
    .ep_flush                 = uct_srm_ep_flush,
    .ep_fence                 = uct_srm_ep_fence,
    .ep_check                 = uct_srm_ep_check,
    .ep_create                = UCS_CLASS_NEW_FUNC_NAME(uct_srm_ep_t),
    .ep_destroy               = UCS_CLASS_DELETE_FUNC_NAME(uct_srm_ep_t),
    .iface_flush              = uct_srm_iface_flush,
    .iface_fence              = uct_srm_iface_fence,
    .iface_progress_enable    = uct_base_iface_progress_enable,
    .iface_progress_disable   = uct_base_iface_progress_disable,
    .iface_progress           = uct_srm_iface_progress,
    .iface_event_fd_get       = uct_srm_iface_event_fd_get,
    .iface_event_arm          = uct_srm_iface_event_arm,
    .iface_close              = UCS_CLASS_DELETE_FUNC_NAME(uct_srm_iface_t),
    .iface_query              = uct_srm_iface_query,
    .iface_get_device_address = uct_srm_iface_get_device_address,
    .iface_get_address        = uct_srm_iface_get_address,
    .iface_is_reachable       = uct_srm_iface_is_reachable,
};
