/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The srm endpoint: a (node, port, key) triple. Every send writes one frame
 * into the TX ring of the destination's node group and rings the agent's
 * doorbell only if the agent said it sleeps. A full ring means
 * UCS_ERR_NO_RESOURCE and the pending queue, never a drop.
 */
#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "srm_uct.h"

#include <ucx_srm/common/srm_rma.h>

#include <uct/base/uct_iov.inl>
#include <ucs/debug/log.h>

#include <string.h>

/*
 * The index of the peer's node in our node table, which tells the agent
 * where to send (srm_shm.h): 0 for this node, else an entry we fill once.
 */
static ucs_status_t uct_srm_ep_node_index(uct_srm_iface_t *iface,
                                          uint64_t node_id,
                                          const srm_wire_addr_t *wire,
                                          uint32_t *index_p)
{
    srm_shm_node_t *entry;
    uint32_t i;

    if (node_id == iface->agent.node_id) {
        *index_p = 0;
        return UCS_OK;
    }
    for (i = 1; i < iface->num_nodes; ++i) {
        if (iface->ctl->nodes[i].node_id == node_id) {
            if (srm_load_relaxed(&iface->ctl->nodes[i].state) !=
                SRM_SHM_NODE_OK) {
                ucs_debug("srm: port %u: node 0x%016llx is unreachable",
                          iface->agent.port,
                          (unsigned long long)node_id);
                return UCS_ERR_UNREACHABLE;
            }
            *index_p = i;
            return UCS_OK;
        }
    }
    if (iface->num_nodes >= SRM_SHM_MAX_NODES) {
        ucs_error("srm: port %u: more than %u remote nodes",
                  iface->agent.port, SRM_SHM_MAX_NODES - 1);
        return UCS_ERR_EXCEEDS_LIMIT;
    }

    entry           = &iface->ctl->nodes[iface->num_nodes];
    entry->node_id = node_id;
    memcpy(entry->wire, wire, sizeof(entry->wire));
    /* Published before any frame names it (the ring commit releases). */
    srm_store_release(&entry->valid, (uint16_t)1);
    *index_p = iface->num_nodes++;
    return UCS_OK;
}

static UCS_CLASS_INIT_FUNC(uct_srm_ep_t, const uct_ep_params_t *params)
{
    uct_srm_iface_t *iface = ucs_derived_of(params->iface, uct_srm_iface_t);
    srm_iface_addr_t iface_addr;
    srm_device_addr_t dev_addr;
    ucs_status_t status;

    UCT_EP_PARAMS_CHECK_DEV_IFACE_ADDRS(params);
    UCS_CLASS_CALL_SUPER_INIT(uct_base_ep_t, &iface->super);

    memcpy(&iface_addr, params->iface_addr, sizeof(iface_addr));
    memcpy(&dev_addr, params->dev_addr, sizeof(dev_addr));
    if ((dev_addr.node_id != iface->agent.node_id) &&
        !uct_srm_iface_can_dial(iface, &iface_addr)) {
        ucs_debug("srm: port %u: node 0x%016llx has no address our agent "
                  "can dial", iface->agent.port,
                  (unsigned long long)dev_addr.node_id);
        return UCS_ERR_UNREACHABLE;
    }
    status = uct_srm_ep_node_index(iface, dev_addr.node_id, iface_addr.wire,
                                   &self->dst_node);
    if (status != UCS_OK) {
        return status;
    }
    self->dst_port       = iface_addr.port;
    self->dst_key        = iface_addr.key;
    self->seq            = 0;
    self->failed         = 0;
    self->error_reported = 0;
    self->tx = &iface->tx[self->dst_node % iface->agent.layout.num_tx_rings];
    ucs_arbiter_group_init(&self->pending);
    ucs_list_add_tail(&iface->eps, &self->list);
    uct_srm_direct_prepare(iface, self->dst_node);

    ucs_debug("srm: ep %p -> node %u port %u", self, self->dst_node,
              self->dst_port);
    return UCS_OK;
}

static UCS_CLASS_CLEANUP_FUNC(uct_srm_ep_t)
{
    ucs_arbiter_group_purge(&self->tx->pending, &self->pending,
                            SRM_UCX_STUB(ucs_arbiter_callback_t,
                                         ucs_empty_function_return_zero),
                            NULL);
    ucs_arbiter_group_cleanup(&self->pending);
    ucs_list_del(&self->list);
}

UCS_CLASS_DEFINE(uct_srm_ep_t, uct_base_ep_t);
UCS_CLASS_DEFINE_NEW_FUNC(uct_srm_ep_t, uct_ep_t, const uct_ep_params_t*);
UCS_CLASS_DEFINE_DELETE_FUNC(uct_srm_ep_t, uct_ep_t);

/*
 * Whether the ep may send now. Sends of an ep with queued pending requests
 * must wait behind them (order), except the ones the pending dispatch
 * itself makes.
 */
static UCS_F_ALWAYS_INLINE ucs_status_t
uct_srm_ep_may_send(uct_srm_ep_t *ep, uct_srm_iface_t *iface)
{
    if (ucs_unlikely(ep->failed || iface->agent_lost)) {
        return UCS_ERR_ENDPOINT_TIMEOUT;
    }
    if (ucs_unlikely((iface->dispatch_ep == NULL) &&
                     !ucs_arbiter_group_is_empty(&ep->pending))) {
        return UCS_ERR_NO_RESOURCE;
    }
    if (ucs_unlikely(iface->fenced)) {
        return UCS_ERR_NO_RESOURCE; /* behind the fence */
    }
    return UCS_OK;
}

/* Room in the ring for one frame of up to `length` payload bytes. */
static UCS_F_ALWAYS_INLINE ucs_status_t
uct_srm_ep_reserve(uct_srm_ep_t *ep, uct_srm_iface_t *iface, uint8_t am_id,
                   size_t length, srm_frame_hdr_t **hdr_p)
{
    srm_ring_status_t status;
    srm_frame_hdr_t *hdr;
    ucs_status_t may;

    may = uct_srm_ep_may_send(ep, iface);
    if (ucs_unlikely(may != UCS_OK)) {
        return may;
    }

    status = srm_ring_reserve(&ep->tx->ring, srm_frame_record_size(length),
                              &hdr);
    if (ucs_unlikely(status != SRM_RING_OK)) {
        if (status == SRM_RING_FULL) {
            return UCS_ERR_NO_RESOURCE;
        }
        ucs_error("srm: port %u: corrupt send ring; dropping the agent "
                  "connection", iface->agent.port);
        iface->agent_lost = 1;
        return UCS_ERR_IO_ERROR;
    }

    hdr->magic    = SRM_FRAME_MAGIC;
    hdr->version  = SRM_FRAME_VERSION;
    hdr->type     = SRM_FRAME_AM;
    hdr->src_port = iface->agent.port;
    hdr->dst_port = ep->dst_port;
    hdr->dst_key  = ep->dst_key;
    hdr->dst_node = ep->dst_node;
    hdr->am_id    = am_id;
    hdr->flags    = 0;
    hdr->reserved = 0;
    hdr->seq      = ep->seq;
    *hdr_p        = hdr;
    return UCS_OK;
}

/* A message left, by the ring or directly (UCX_SRM_YIELD, _DIRECT). */
static UCS_F_ALWAYS_INLINE void uct_srm_ep_sent(uct_srm_iface_t *iface)
{
    iface->sent_since_progress = 1;
    iface->sent_since_receive++;
}

static UCS_F_ALWAYS_INLINE void
uct_srm_ep_commit(uct_srm_ep_t *ep, uct_srm_iface_t *iface,
                  srm_frame_hdr_t *hdr, size_t length)
{
    hdr->length = (uint32_t)length;
    ++ep->seq;
    srm_ring_commit(&ep->tx->ring, srm_frame_record_size(length));
    uct_srm_ep_sent(iface);
    uct_srm_iface_ring_doorbell(iface);
}

/*
 * Tries the node's direct lane (srm_direct.c) for an AM the ep may send:
 * its length, or -1 if the AM must go to the ring.
 */
static UCS_F_ALWAYS_INLINE ssize_t
uct_srm_ep_send_direct(uct_srm_ep_t *ep, uct_srm_iface_t *iface,
                       uint8_t am_id, uct_pack_callback_t pack, void *arg,
                       size_t max_length)
{
    const void *packed = NULL;
    srm_frame_hdr_t *hdr;
    ssize_t length;

    if (!uct_srm_direct_wanted(iface, max_length) ||
        (uct_srm_ep_may_send(ep, iface) != UCS_OK)) {
        return -1;
    }
    length = uct_srm_direct_send(iface, ep, am_id, pack, arg, max_length,
                                 &packed);
    if ((length >= 0) && (packed != NULL)) {
        /* Packed for a lane retired meanwhile: the ring, which is empty,
         * takes the bytes, so that pack runs once. */
        if (uct_srm_ep_reserve(ep, iface, am_id, length, &hdr) != UCS_OK) {
            return -1;
        }
        memcpy(srm_frame_payload(hdr), packed, length);
        uct_srm_ep_commit(ep, iface, hdr, length);
        return length;
    }
    if (length >= 0) {
        uct_srm_ep_sent(iface);
    }
    return length;
}

typedef struct {
    uint64_t   header;
    const void *payload;
    unsigned   length;
} uct_srm_short_args_t;

static size_t uct_srm_ep_pack_short(void *dest, void *arg)
{
    const uct_srm_short_args_t *args = arg;

    memcpy(dest, &args->header, sizeof(args->header));
    memcpy(UCS_PTR_BYTE_OFFSET(dest, sizeof(args->header)), args->payload,
           args->length);
    return sizeof(args->header) + args->length;
}

ucs_status_t uct_srm_ep_am_short(uct_ep_h tl_ep, uint8_t id, uint64_t header,
                                 const void *payload, unsigned length)
{
    uct_srm_ep_t *ep       = ucs_derived_of(tl_ep, uct_srm_ep_t);
    uct_srm_iface_t *iface = ucs_derived_of(tl_ep->iface, uct_srm_iface_t);
    size_t total           = sizeof(header) + length;
    srm_frame_hdr_t *hdr;
    ucs_status_t status;
    uint8_t *data;

    uct_srm_short_args_t args = {header, payload, length};

    UCT_CHECK_AM_ID(id);
    UCT_CHECK_LENGTH(total, 0, iface->config.max_bcopy, "am_short");

    if (uct_srm_ep_send_direct(ep, iface, id, uct_srm_ep_pack_short, &args,
                               total) >= 0) {
        UCT_TL_EP_STAT_OP(&ep->super, AM, SHORT, total);
        return UCS_OK;
    }
    status = uct_srm_ep_reserve(ep, iface, id, total, &hdr);
    if (ucs_unlikely(status != UCS_OK)) {
        return status;
    }
    data = srm_frame_payload(hdr);
    memcpy(data, &header, sizeof(header));
    memcpy(data + sizeof(header), payload, length);
    uct_iface_trace_am(&iface->super, UCT_AM_TRACE_TYPE_SEND, id, data, total,
                       "TX: AM_SHORT port %u", ep->dst_port);
    UCT_TL_EP_STAT_OP(&ep->super, AM, SHORT, total);
    uct_srm_ep_commit(ep, iface, hdr, total);
    return UCS_OK;
}

ucs_status_t uct_srm_ep_am_short_iov(uct_ep_h tl_ep, uint8_t id,
                                     const uct_iov_t *iov, size_t iovcnt)
{
    uct_srm_ep_t *ep       = ucs_derived_of(tl_ep, uct_srm_ep_t);
    uct_srm_iface_t *iface = ucs_derived_of(tl_ep->iface, uct_srm_iface_t);
    size_t total           = uct_iov_total_length(iov, iovcnt);
    ucs_iov_iter_t iov_iter;
    srm_frame_hdr_t *hdr;
    ucs_status_t status;

    UCT_CHECK_AM_ID(id);
    UCT_CHECK_LENGTH(total, 0, iface->config.max_bcopy, "am_short_iov");

    status = uct_srm_ep_reserve(ep, iface, id, total, &hdr);
    if (ucs_unlikely(status != UCS_OK)) {
        return status;
    }
    ucs_iov_iter_init(&iov_iter);
    uct_iov_to_buffer(iov, iovcnt, &iov_iter, srm_frame_payload(hdr),
                      SIZE_MAX);
    UCT_TL_EP_STAT_OP(&ep->super, AM, SHORT, total);
    uct_srm_ep_commit(ep, iface, hdr, total);
    return UCS_OK;
}

ssize_t uct_srm_ep_am_bcopy(uct_ep_h tl_ep, uint8_t id,
                            uct_pack_callback_t pack_cb, void *arg,
                            unsigned flags)
{
    uct_srm_ep_t *ep       = ucs_derived_of(tl_ep, uct_srm_ep_t);
    uct_srm_iface_t *iface = ucs_derived_of(tl_ep->iface, uct_srm_iface_t);
    srm_frame_hdr_t *hdr;
    ucs_status_t status;
    ssize_t direct;
    size_t length;

    UCT_CHECK_AM_ID(id);

    direct = uct_srm_ep_send_direct(ep, iface, id, pack_cb, arg,
                                    iface->config.max_bcopy);
    if (direct >= 0) {
        UCT_TL_EP_STAT_OP(&ep->super, AM, BCOPY, direct);
        return direct;
    }
    status = uct_srm_ep_reserve(ep, iface, id, iface->config.max_bcopy, &hdr);
    if (ucs_unlikely(status != UCS_OK)) {
        return status;
    }
    length = pack_cb(srm_frame_payload(hdr), arg);
    /* pack_cb has written at most max_bcopy by contract; check anyway. */
    ucs_assertv(length <= iface->config.max_bcopy, "length=%zu", length);
    uct_iface_trace_am(&iface->super, UCT_AM_TRACE_TYPE_SEND, id,
                       srm_frame_payload(hdr), length, "TX: AM_BCOPY port %u",
                       ep->dst_port);
    UCT_TL_EP_STAT_OP(&ep->super, AM, BCOPY, length);
    uct_srm_ep_commit(ep, iface, hdr, length);
    return length;
}

typedef struct {
    const void      *header;
    unsigned        header_length;
    const uct_iov_t *iov;
    size_t          iovcnt;
} uct_srm_zcopy_args_t;

static size_t uct_srm_ep_pack_zcopy(void *dest, void *arg)
{
    const uct_srm_zcopy_args_t *args = arg;
    ucs_iov_iter_t iov_iter;

    memcpy(dest, args->header, args->header_length);
    ucs_iov_iter_init(&iov_iter);
    return args->header_length +
           uct_iov_to_buffer(args->iov, args->iovcnt, &iov_iter,
                             UCS_PTR_BYTE_OFFSET(dest, args->header_length),
                             SIZE_MAX);
}

/*
 * The data is copied at once (into the node's lane, for a message the
 * small channel takes, or into the ring), so the operation is complete on
 * return (UCS_OK) and comp is never called; UCT allows that.
 */
ucs_status_t uct_srm_ep_am_zcopy(uct_ep_h tl_ep, uint8_t id,
                                 const void *header, unsigned header_length,
                                 const uct_iov_t *iov, size_t iovcnt,
                                 unsigned flags, uct_completion_t *comp)
{
    uct_srm_ep_t *ep       = ucs_derived_of(tl_ep, uct_srm_ep_t);
    uct_srm_iface_t *iface = ucs_derived_of(tl_ep->iface, uct_srm_iface_t);
    size_t total           = header_length + uct_iov_total_length(iov, iovcnt);
    uct_srm_zcopy_args_t args;
    srm_frame_hdr_t *hdr;
    ucs_status_t status;
    uint8_t *data;

    UCT_CHECK_AM_ID(id);
    UCT_CHECK_LENGTH(header_length, 0, UCT_SRM_MAX_HDR, "am_zcopy header");
    UCT_CHECK_LENGTH(total, 0, iface->config.max_zcopy + UCT_SRM_MAX_HDR,
                     "am_zcopy");

    args.header        = header;
    args.header_length = header_length;
    args.iov           = iov;
    args.iovcnt        = iovcnt;
    if (uct_srm_ep_send_direct(ep, iface, id, uct_srm_ep_pack_zcopy, &args,
                               total) >= 0) {
        UCT_TL_EP_STAT_OP(&ep->super, AM, ZCOPY, total);
        return UCS_OK;
    }
    status = uct_srm_ep_reserve(ep, iface, id, total, &hdr);
    if (ucs_unlikely(status != UCS_OK)) {
        return status;
    }
    data = srm_frame_payload(hdr);
    uct_srm_ep_pack_zcopy(data, &args);
    uct_iface_trace_am(&iface->super, UCT_AM_TRACE_TYPE_SEND, id, data, total,
                       "TX: AM_ZCOPY port %u", ep->dst_port);
    UCT_TL_EP_STAT_OP(&ep->super, AM, ZCOPY, total);
    uct_srm_ep_commit(ep, iface, hdr, total);
    return UCS_OK;
}

/*
 * PUT/GET zcopy: a request frame in the TX ring, in order with the ep's
 * other frames; the agent moves the data between md-allocated regions and
 * answers in the RX ring (uct_srm_ep_rma_done). Only memory the md
 * allocated can take part: the agent knows no other (docs/design.md, "The
 * verbs wire").
 */
static ucs_status_t uct_srm_ep_rma(uct_ep_h tl_ep, srm_rma_op_t op,
                                   const uct_iov_t *iov, size_t iovcnt,
                                   uint64_t remote_addr, uct_rkey_t rkey,
                                   uct_completion_t *comp)
{
    uct_srm_ep_t *ep       = ucs_derived_of(tl_ep, uct_srm_ep_t);
    uct_srm_iface_t *iface = ucs_derived_of(tl_ep->iface, uct_srm_iface_t);
    const srm_rkey_t *key  = (const srm_rkey_t*)rkey;
    const uct_srm_memh_t *memh;
    srm_frame_hdr_t *hdr;
    srm_rma_req_t *req;
    ucs_status_t status;
    uint64_t cookie;
    size_t length;

    UCT_CHECK_PARAM(iovcnt == 1, "srm RMA takes one iov, not %zu", iovcnt);
    memh   = iov[0].memh;
    length = uct_iov_get_length(&iov[0]);
    if ((memh == NULL) || (memh == UCT_SRM_MEMH) || (key == NULL) ||
        (key->region_id == 0)) {
        return UCS_ERR_UNSUPPORTED; /* user memory, or a key naming none */
    }
    if (!srm_range_inside(memh->key.client_addr, memh->key.length,
                          (uintptr_t)iov[0].buffer, length) ||
        !srm_range_inside(key->client_addr, key->length, remote_addr,
                          length) ||
        (length > iface->config.max_rma)) {
        return UCS_ERR_INVALID_PARAM;
    }

    status = uct_srm_rma_slot_take(&iface->rma_slots, comp, &cookie);
    if (ucs_unlikely(status != UCS_OK)) {
        return status;
    }
    status = uct_srm_ep_reserve(ep, iface, 0, sizeof(*req), &hdr);
    if (ucs_unlikely(status != UCS_OK)) {
        uct_srm_rma_slot_release(&iface->rma_slots, cookie, &comp);
        return status;
    }
    hdr->type = SRM_FRAME_RMA;
    req       = srm_frame_payload(hdr);
    memset(req, 0, sizeof(*req));
    req->cookie           = cookie;
    req->op               = (uint8_t)op;
    req->local_region     = memh->key.region_id;
    req->local_generation = memh->key.generation;
    req->local_addr       = (uintptr_t)iov[0].buffer;
    req->length           = length;
    req->remote_addr      = remote_addr;
    srm_rkey_pack(key, &req->rkey);
    iface->rma_outstanding++;
    uct_srm_ep_commit(ep, iface, hdr, sizeof(*req));
    return UCS_INPROGRESS;
}

ucs_status_t uct_srm_ep_put_zcopy(uct_ep_h tl_ep, const uct_iov_t *iov,
                                  size_t iovcnt, uint64_t remote_addr,
                                  uct_rkey_t rkey, uct_completion_t *comp)
{
    ucs_status_t status = uct_srm_ep_rma(tl_ep, SRM_RMA_PUT, iov, iovcnt,
                                         remote_addr, rkey, comp);

    UCT_TL_EP_STAT_OP_IF_SUCCESS(status, ucs_derived_of(tl_ep, uct_base_ep_t),
                                 PUT, ZCOPY, uct_iov_total_length(iov, iovcnt));
    return status;
}

ucs_status_t uct_srm_ep_get_zcopy(uct_ep_h tl_ep, const uct_iov_t *iov,
                                  size_t iovcnt, uint64_t remote_addr,
                                  uct_rkey_t rkey, uct_completion_t *comp)
{
    ucs_status_t status = uct_srm_ep_rma(tl_ep, SRM_RMA_GET, iov, iovcnt,
                                         remote_addr, rkey, comp);

    UCT_TL_EP_STAT_OP_IF_SUCCESS(status, ucs_derived_of(tl_ep, uct_base_ep_t),
                                 GET, ZCOPY, uct_iov_total_length(iov, iovcnt));
    return status;
}

static ucs_status_t uct_srm_rma_status(int32_t err)
{
    switch (err) {
    case 0:       return UCS_OK;
    case ENOTSUP: return UCS_ERR_UNSUPPORTED;
    case EACCES:  return UCS_ERR_REJECTED;
    case EFAULT:
    case EINVAL:  return UCS_ERR_INVALID_PARAM;
    default:      return UCS_ERR_IO_ERROR;
    }
}

/* An RMA_DONE frame from the agent: complete the request, then the flushes
 * that waited for it. */
void uct_srm_ep_rma_done(uct_srm_iface_t *iface, const void *payload,
                         size_t length)
{
    uct_completion_t *comp;
    srm_rma_done_t done;

    if ((length != sizeof(done)) || (iface->rma_outstanding == 0)) {
        ucs_error("srm: port %u: unexpected RMA completion (%zu bytes)",
                  iface->agent.port, length);
        return;
    }
    memcpy(&done, payload, sizeof(done));
    if (uct_srm_rma_slot_release(&iface->rma_slots, done.cookie, &comp) !=
        UCS_OK) {
        ucs_error("srm: port %u: the agent completed an RMA request we did "
                  "not make (cookie 0x%llx); ignored", iface->agent.port,
                  (unsigned long long)done.cookie);
        return;
    }
    if (done.status != 0) {
        ucs_debug("srm: port %u: RMA failed in the agent: %s",
                  iface->agent.port, strerror(done.status));
    }
    if (comp != NULL) {
        uct_invoke_completion(comp, uct_srm_rma_status(done.status));
    }
    if (--iface->rma_outstanding == 0) {
        iface->fenced = 0; /* the sends behind it go at the pending dispatch */
    }
    if ((iface->rma_outstanding == 0) && (iface->num_flushes > 0)) {
        uct_srm_flush_progress(iface);
    }
}

ucs_status_t uct_srm_ep_pending_add(uct_ep_h tl_ep, uct_pending_req_t *req,
                                    unsigned flags)
{
    uct_srm_ep_t *ep       = ucs_derived_of(tl_ep, uct_srm_ep_t);
    uct_srm_iface_t *iface = ucs_derived_of(tl_ep->iface, uct_srm_iface_t);

    uct_pending_req_arb_group_push(&ep->pending, req);
    ucs_arbiter_group_schedule(&ep->tx->pending, &ep->pending);
    /* If we sleep, the agent wakes us when it frees room in a TX ring. */
    srm_shm_flag_raise(&iface->ctl->tx_space_wanted);
    UCT_TL_EP_STAT_PEND(&ep->super);
    return UCS_OK;
}

static ucs_arbiter_cb_result_t
uct_srm_ep_pending_purge_cb(ucs_arbiter_t *arbiter, ucs_arbiter_group_t *group,
                            ucs_arbiter_elem_t *elem, void *arg)
{
    uct_pending_req_t *req = ucs_container_of(elem, uct_pending_req_t, priv);
    uct_purge_cb_args_t *args = arg;

    if (args->cb != NULL) {
        args->cb(req, args->arg);
    }
    return UCS_ARBITER_CB_RESULT_REMOVE_ELEM;
}

void uct_srm_ep_pending_purge(uct_ep_h tl_ep, uct_pending_purge_callback_t cb,
                              void *arg)
{
    uct_srm_ep_t *ep         = ucs_derived_of(tl_ep, uct_srm_ep_t);
    uct_purge_cb_args_t args = {cb, arg};

    ucs_arbiter_group_purge(&ep->tx->pending, &ep->pending,
                            uct_srm_ep_pending_purge_cb, &args);
}

static ucs_arbiter_cb_result_t
uct_srm_ep_pending_dispatch_cb(ucs_arbiter_t *arbiter,
                               ucs_arbiter_group_t *group,
                               ucs_arbiter_elem_t *elem, void *arg)
{
    uct_pending_req_t *req = ucs_container_of(elem, uct_pending_req_t, priv);
    uct_srm_iface_t *iface = arg;
    ucs_status_t status;

    iface->dispatch_ep = ucs_container_of(group, uct_srm_ep_t, pending);
    status             = req->func(req);
    iface->dispatch_ep = NULL;
    if (status == UCS_OK) {
        return UCS_ARBITER_CB_RESULT_REMOVE_ELEM;
    } else if (status == UCS_INPROGRESS) {
        /* Not NEXT_GROUP: the arbiter would call it again in this dispatch,
         * and a flush that waits for the agent says INPROGRESS until a
         * later progress, so the dispatch would never end. */
        return UCS_ARBITER_CB_RESULT_RESCHED_GROUP;
    }
    /* The ring is full for every ep that shares it. */
    return UCS_ARBITER_CB_RESULT_STOP;
}

void uct_srm_ep_dispatch_pending(uct_srm_iface_t *iface)
{
    unsigned i;

    for (i = 0; i < iface->agent.layout.num_tx_rings; ++i) {
        if (ucs_likely(ucs_arbiter_is_empty(&iface->tx[i].pending))) {
            continue;
        }
        ucs_arbiter_dispatch(&iface->tx[i].pending, 1,
                             uct_srm_ep_pending_dispatch_cb, iface);
    }
}

ucs_status_t uct_srm_ep_flush(uct_ep_h tl_ep, unsigned flags,
                              uct_completion_t *comp)
{
    uct_srm_ep_t *ep       = ucs_derived_of(tl_ep, uct_srm_ep_t);
    uct_srm_iface_t *iface = ucs_derived_of(tl_ep->iface, uct_srm_iface_t);
    ucs_status_t status;

    /*
     * Requests still pending come before the flush, except when it is
     * called from one of the ep's own pending requests (UCP's pending flush
     * does that): those before it have gone, and the arbiter keeps only a
     * placeholder in the group while it runs. Counting that placeholder
     * said NO_RESOURCE forever and stopped the dispatch of the whole TX ring.
     */
    if ((iface->dispatch_ep != ep) &&
        !ucs_arbiter_group_is_empty(&ep->pending)) {
        UCT_TL_EP_STAT_FLUSH_WAIT(&ep->super);
        return UCS_ERR_NO_RESOURCE;
    }
    /* RMA is counted for the iface: conservative for an ep, never early. */
    status = uct_srm_flush_start(iface, ep->tx, comp);
    if (status == UCS_OK) {
        UCT_TL_EP_STAT_FLUSH(&ep->super);
    } else if (status == UCS_INPROGRESS) {
        UCT_TL_EP_STAT_FLUSH_WAIT(&ep->super);
    }
    return status;
}

/*
 * A fence: nothing sent after it may start before the RMA sent before it is
 * done. Frames leave the TX ring in order, and the agent moves RMA data on
 * this node before it reads the next frame; but a PUT to another node goes
 * out on the bulk channel's queue pair and an AM on the small channel's,
 * and the AM can land first. So while an RMA operation from before the
 * fence is unanswered, sends say NO_RESOURCE (UCP queues them as pending)
 * and go when the last answer comes. One flag for the iface: for an ep's
 * fence that is conservative, never early.
 */
static void uct_srm_iface_fence_rma(uct_srm_iface_t *iface)
{
    if (iface->rma_outstanding > 0) {
        iface->fenced = 1;
    }
}

ucs_status_t uct_srm_ep_fence(uct_ep_h tl_ep, unsigned flags)
{
    uct_srm_iface_fence_rma(ucs_derived_of(tl_ep->iface, uct_srm_iface_t));
    UCT_TL_EP_STAT_FENCE(ucs_derived_of(tl_ep, uct_base_ep_t));
    return UCS_OK;
}

ucs_status_t uct_srm_iface_fence(uct_iface_h tl_iface, unsigned flags)
{
    uct_srm_iface_fence_rma(ucs_derived_of(tl_iface, uct_srm_iface_t));
    UCT_TL_IFACE_STAT_FENCE(ucs_derived_of(tl_iface, uct_base_iface_t));
    return UCS_OK;
}

/*
 * Keepalive: the agent is the only thing between us and a local peer, and
 * its loss is already watched by the async handler; report it here too.
 */
ucs_status_t uct_srm_ep_check(uct_ep_h tl_ep, unsigned flags,
                              uct_completion_t *comp)
{
    uct_srm_ep_t *ep       = ucs_derived_of(tl_ep, uct_srm_ep_t);
    uct_srm_iface_t *iface = ucs_derived_of(tl_ep->iface, uct_srm_iface_t);

    SRM_UCX_EP_CHECK_PARAMS(flags, comp);
    if (iface->agent_lost || ep->failed) {
        return UCS_ERR_ENDPOINT_TIMEOUT;
    }
    return UCS_OK;
}
