/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * A link's handshake (the diagram is in srm_link.c): HELLO, HELLO_ACK and
 * AUTH, the tie-break between two connections of one path, the cluster
 * secret's proof, and the wire's endpoint connected once the peer is
 * proven.
 */
#include "srm_link.h"

#include <ucx_srm/common/srm_log.h>

#include <string.h>

static ucs_status_t srm_link_ready(srm_agent_t *agent, srm_link_t *link);

/* Our queue pair as HELLO carries it; all zero on the tcp wire. */
static void srm_link_local_qp(const srm_link_t *link, srm_hello_qp_t *qp)
{
    link->wire->local(&link->conn, qp);
}

static void srm_link_auth_context(const srm_agent_t *agent,
                                  const srm_link_t *link,
                                  srm_auth_context_t *ctx)
{
    ctx->initiator_id = link->initiator ? agent->node_id : link->peer_id;
    ctx->acceptor_id  = link->initiator ? link->peer_id : agent->node_id;
    memcpy(ctx->initiator_nonce,
           link->initiator ? link->nonce : link->peer_nonce,
           SRM_AUTH_NONCE_LEN);
    memcpy(ctx->acceptor_nonce,
           link->initiator ? link->peer_nonce : link->nonce,
           SRM_AUTH_NONCE_LEN);
    ctx->kind = (uint8_t)link->kind;
    ctx->path = (uint8_t)link->path;
    srm_link_local_qp(link, link->initiator ? &ctx->initiator_qp :
                                              &ctx->acceptor_qp);
    memcpy(link->initiator ? &ctx->acceptor_qp : &ctx->initiator_qp,
           &link->peer_qp, sizeof(link->peer_qp));
}

ucs_status_t srm_link_send_raw(srm_link_t *link, const void *msg, size_t size)
{
    struct iovec iov = {.iov_base = (void*)msg, .iov_len = size};

    if (srm_link_sendv(link, &iov, 1) != (ssize_t)size) {
        return UCS_ERR_IO_ERROR;
    }
    link->last_tx = srm_agent_now();
    return UCS_OK;
}

ucs_status_t srm_link_send_hello(srm_agent_t *agent, srm_link_t *link,
                                 srm_frame_type_t type)
{
    srm_auth_context_t ctx;
    struct {
        srm_frame_hdr_t hdr;
        srm_hello_t     hello;
    } msg;

    memset(&msg, 0, sizeof(msg));
    srm_frame_hdr_init(&msg.hdr, type, sizeof(msg.hello));
    msg.hello.node_id   = agent->node_id;
    msg.hello.kind      = (uint8_t)link->kind;
    msg.hello.path      = (uint8_t)link->path;
    msg.hello.accepted  = (uint8_t)link->accepted;
    msg.hello.secret    = agent->auth.len > 0;
    msg.hello.wire_kind = link->wire->hello_wire;
    memcpy(msg.hello.wire, agent->wire, sizeof(msg.hello.wire));
    srm_link_local_qp(link, &msg.hello.qp);
    memcpy(msg.hello.nonce, link->nonce, SRM_AUTH_NONCE_LEN);
    if ((type == SRM_FRAME_HELLO_ACK) && (agent->auth.len > 0)) {
        srm_link_auth_context(agent, link, &ctx);
        srm_auth_prove(&agent->auth, SRM_AUTH_ROLE_ACCEPTOR, &ctx,
                       msg.hello.mac);
    }
    return srm_link_send_raw(link, &msg, sizeof(msg));
}

/* Acceptor, authenticated: the link takes its place in the channel. */
static ucs_status_t srm_link_install(srm_agent_t *agent, srm_link_t *link)
{
    srm_channel_t *chan;
    srm_node_t *node;
    srm_link_t *old;

    node = srm_node_find(agent, link->peer_id);
    if (node == NULL) {
        node = srm_node_create(agent, link->peer_id, link->peer_wire);
        if (node == NULL) {
            srm_link_close(agent, link, SRM_LOG_ERROR, "out of memory");
            return UCS_ERR_CONNECTION_RESET;
        }
    }
    if ((node->state == SRM_NODE_INVALID) &&
        !srm_node_revive(agent, node, link->peer_wire, "its agent called")) {
        srm_link_close(agent, link, SRM_LOG_INFO,
                       "node 0x%016llx was declared failed",
                       (unsigned long long)link->peer_id);
        return UCS_ERR_CONNECTION_RESET;
    }
    chan = &node->chan[link->kind];
    old  = chan->links[link->path];
    if ((old != NULL) && (old != link)) {
        if ((old->state == SRM_LINK_READY) || (link->peer_id > agent->node_id)) {
            /* Ours is up (or won the tie-break) meanwhile. */
            srm_link_close(agent, link, SRM_LOG_DEBUG, "lost the tie-break");
            return UCS_ERR_CONNECTION_RESET;
        }
        srm_link_close(agent, old, SRM_LOG_DEBUG,
                       "replaced by the peer's connection");
    }
    link->node               = node;
    chan->links[link->path]  = link;
    return srm_link_ready(agent, link);
}

/* Both ends of a path must use the same wire: UCS_OK if they do, and the
 * link is on it; else UCS_ERR_CONNECTION_RESET, the link closed. */
static ucs_status_t srm_link_check_wire(srm_agent_t *agent, srm_link_t *link,
                                        uint8_t peer_wire)
{
    static const char *names[] = {"tcp", "verbs"};
    const srm_wire_ops_t *wire = srm_wire_of(srm_link_path_verbs(agent,
                                                                 link->path));
    uint8_t ours               = wire->hello_wire;

    if (peer_wire == ours) {
        link->wire = wire;
        return UCS_OK;
    }
    srm_link_close(agent, link, SRM_LOG_WARN,
                   "refused: path %d of the peer is on the %s wire, ours on "
                   "the %s wire (UCX_SRM_DEVICES must name the same kind of "
                   "device on every node)", link->path,
                   (peer_wire <= SRM_HELLO_WIRE_VERBS) ? names[peer_wire] :
                                                         "unknown",
                   names[ours]);
    return UCS_ERR_CONNECTION_RESET;
}

/* A wire with an endpoint (a verbs queue pair): ours, made if need be;
 * it neither sends nor receives until srm_link_connect_endpoint. */
static ucs_status_t srm_link_make_endpoint(srm_agent_t *agent, srm_link_t *link)
{
    if (link->wire->make(&link->conn, srm_link_path_verbs(agent, link->path),
                         link->index) != UCS_OK) {
        srm_link_close(agent, link, SRM_LOG_WARN, "no %s endpoint",
                       link->wire->name);
        return UCS_ERR_CONNECTION_RESET;
    }
    return UCS_OK;
}

/* Our endpoint, connected to the peer's: only once the peer proved the
 * cluster secret (it may then write to our regions). */
static ucs_status_t srm_link_connect_endpoint(srm_agent_t *agent,
                                              srm_link_t *link,
                                              const srm_hello_qp_t *peer)
{
    if (srm_link_make_endpoint(agent, link) != UCS_OK) {
        return UCS_ERR_CONNECTION_RESET;
    }
    if (link->wire->connect(&link->conn, peer) != UCS_OK) {
        srm_link_close(agent, link, SRM_LOG_WARN,
                       "cannot connect its %s endpoint to the peer's 0x%x: %m",
                       link->wire->name, peer->qpn);
        return UCS_ERR_CONNECTION_RESET;
    }
    return UCS_OK;
}

/* Called while the handshake is parsed; UCS_ERR_CONNECTION_RESET if the
 * link was closed meanwhile. */
static ucs_status_t srm_link_ready(srm_agent_t *agent, srm_link_t *link)
{
    unsigned index = link->index;

    /* The acceptor heard the peer's own addresses in its HELLO. */
    srm_node_path_ready(link->node, link->path,
                        link->initiator ? NULL : link->peer_wire);
    link->state = SRM_LINK_READY;
    srm_link_set_events(agent, link);
    srm_channel_link_ready(agent, link);
    if (agent->links[index] != link) {
        return UCS_ERR_CONNECTION_RESET;
    }
    /* The peer's endpoint may have sent before this side was ready:
     * read once the handshake's input is parsed. */
    link->endpoint_unread = srm_wire_can(link->wire,
                                         SRM_WIRE_CAP_COMPLETIONS);
    return UCS_OK;
}

static ucs_status_t srm_link_on_hello(srm_agent_t *agent, srm_link_t *link,
                                      const srm_hello_t *hello)
{
    srm_node_t *node;
    srm_link_t *old;

    if ((hello->kind >= SRM_CHANNEL_KINDS) ||
        (hello->path >= SRM_WIRE_PATHS) || (hello->node_id == 0) ||
        (hello->node_id == agent->node_id) ||
        !srm_wire_addrs_are_valid(hello->wire)) {
        srm_link_close(agent, link, SRM_LOG_WARN, "bad HELLO");
        return UCS_ERR_CONNECTION_RESET;
    }
    link->peer_id = hello->node_id;
    link->kind    = hello->kind;
    link->path    = hello->path;
    memcpy(link->peer_wire, hello->wire, sizeof(link->peer_wire));
    memcpy(link->peer_nonce, hello->nonce, SRM_AUTH_NONCE_LEN);
    memcpy(&link->peer_qp, &hello->qp, sizeof(link->peer_qp));
    if (hello->secret != (agent->auth.len > 0)) {
        srm_link_close(agent, link, SRM_LOG_WARN,
                       "refused: %s a cluster secret, this agent %s",
                       hello->secret ? "the peer uses" : "the peer has no",
                       (agent->auth.len > 0) ? "requires one" : "has none");
        return UCS_ERR_CONNECTION_RESET;
    }

    if (srm_link_check_wire(agent, link, hello->wire_kind) != UCS_OK) {
        return UCS_ERR_CONNECTION_RESET;
    }

    node         = srm_node_find(agent, hello->node_id);
    old          = (node != NULL) ? node->chan[link->kind].links[link->path] :
                                    NULL;
    link->accepted = (old == NULL) || (old->state != SRM_LINK_READY &&
                                       hello->node_id < agent->node_id);
    /* Its number goes in our answer; it is connected at AUTH. */
    if (link->accepted && srm_wire_can(link->wire, SRM_WIRE_CAP_ENDPOINT) &&
        (srm_link_make_endpoint(agent, link) != UCS_OK)) {
        return UCS_ERR_CONNECTION_RESET;
    }
    if (srm_link_send_hello(agent, link, SRM_FRAME_HELLO_ACK) != UCS_OK) {
        srm_link_close(agent, link, SRM_LOG_WARN, "cannot answer HELLO: %m");
        return UCS_ERR_CONNECTION_RESET;
    }
    if (!link->accepted) {
        srm_link_close(agent, link, SRM_LOG_DEBUG,
                       "our connection to that node stays");
        return UCS_ERR_CONNECTION_RESET;
    }
    if ((agent->auth.len > 0) ||
        srm_wire_can(link->wire, SRM_WIRE_CAP_ENDPOINT)) {
        /* An endpoint also waits for AUTH: it says the initiator's
         * endpoint is ready to receive. */
        link->state = SRM_LINK_AUTH_WAIT;
        return UCS_OK;
    }
    return srm_link_install(agent, link);
}

/* Acceptor, the peer proven: our endpoint is connected, and the
 * initiator told (an AUTH back, without proof) that it may send. */
static ucs_status_t
srm_link_endpoint_proven(srm_agent_t *agent, srm_link_t *link)
{
    struct {
        srm_frame_hdr_t  hdr;
        srm_auth_proof_t proof;
    } msg;

    if (srm_link_connect_endpoint(agent, link, &link->peer_qp) != UCS_OK) {
        return UCS_ERR_CONNECTION_RESET;
    }
    srm_frame_hdr_init(&msg.hdr, SRM_FRAME_AUTH, sizeof(msg.proof));
    memset(&msg.proof, 0, sizeof(msg.proof));
    if (srm_link_send_raw(link, &msg, sizeof(msg)) != UCS_OK) {
        srm_link_close(agent, link, SRM_LOG_WARN,
                       "cannot say the queue pair is ready: %m");
        return UCS_ERR_CONNECTION_RESET;
    }
    return UCS_OK;
}

static ucs_status_t srm_link_on_hello_ack(srm_agent_t *agent, srm_link_t *link,
                                          const srm_hello_t *ack)
{
    srm_auth_context_t ctx;
    struct {
        srm_frame_hdr_t  hdr;
        srm_auth_proof_t proof;
    } msg;

    if ((ack->node_id != link->node->node_id) ||
        (ack->kind != (uint8_t)link->kind) ||
        (ack->path != (uint8_t)link->path)) {
        srm_link_close(agent, link, SRM_LOG_WARN,
                       "HELLO_ACK from an unexpected node 0x%016llx (a new "
                       "agent at that address?)",
                       (unsigned long long)ack->node_id);
        return UCS_ERR_CONNECTION_RESET;
    }
    link->peer_id = ack->node_id;
    memcpy(link->peer_nonce, ack->nonce, SRM_AUTH_NONCE_LEN);
    memcpy(&link->peer_qp, &ack->qp, sizeof(link->peer_qp));
    if (agent->auth.len > 0) {
        srm_link_auth_context(agent, link, &ctx);
        if (!ack->secret ||
            !srm_auth_check(&agent->auth, SRM_AUTH_ROLE_ACCEPTOR, &ctx,
                            ack->mac)) {
            srm_link_close(agent, link, SRM_LOG_WARN,
                           "refused: the peer %s",
                           ack->secret ? "proved another cluster secret (or "
                                         "its HELLO_ACK was changed on the "
                                         "way)" :
                                         "has no cluster secret");
            return UCS_ERR_CONNECTION_RESET;
        }
    } else if (ack->secret) {
        srm_link_close(agent, link, SRM_LOG_WARN,
                       "refused: the peer uses a cluster secret, this agent "
                       "has none");
        return UCS_ERR_CONNECTION_RESET;
    }
    if (!ack->accepted) {
        srm_link_close(agent, link, SRM_LOG_DEBUG,
                       "the peer's connection won the tie-break");
        return UCS_ERR_CONNECTION_RESET;
    }
    if ((srm_link_check_wire(agent, link, ack->wire_kind) != UCS_OK) ||
        (srm_wire_can(link->wire, SRM_WIRE_CAP_ENDPOINT) &&
         (srm_link_connect_endpoint(agent, link, &ack->qp) != UCS_OK))) {
        return UCS_ERR_CONNECTION_RESET;
    }
    if ((agent->auth.len > 0) ||
        srm_wire_can(link->wire, SRM_WIRE_CAP_ENDPOINT)) {
        srm_frame_hdr_init(&msg.hdr, SRM_FRAME_AUTH, sizeof(msg.proof));
        memset(&msg.proof, 0, sizeof(msg.proof));
        if (agent->auth.len > 0) {
            srm_auth_prove(&agent->auth, SRM_AUTH_ROLE_INITIATOR, &ctx,
                           msg.proof.mac);
        }
        if (srm_link_send_raw(link, &msg, sizeof(msg)) != UCS_OK) {
            srm_link_close(agent, link, SRM_LOG_WARN, "cannot send AUTH: %m");
            return UCS_ERR_CONNECTION_RESET;
        }
    }
    if (srm_wire_can(link->wire, SRM_WIRE_CAP_ENDPOINT)) {
        link->state = SRM_LINK_QP_WAIT; /* until the peer's is connected */
        return UCS_OK;
    }
    return srm_link_ready(agent, link);
}

static ucs_status_t srm_link_on_auth(srm_agent_t *agent, srm_link_t *link,
                                     const srm_auth_proof_t *proof)
{
    srm_auth_context_t ctx;

    srm_link_auth_context(agent, link, &ctx);
    if ((agent->auth.len > 0) &&
        !srm_auth_check(&agent->auth, SRM_AUTH_ROLE_INITIATOR, &ctx,
                        proof->mac)) {
        srm_link_close(agent, link, SRM_LOG_WARN,
                       "refused: the peer proved another cluster secret (or "
                       "the handshake was changed on the way)");
        return UCS_ERR_CONNECTION_RESET;
    }
    if (srm_wire_can(link->wire, SRM_WIRE_CAP_ENDPOINT) &&
        (srm_link_endpoint_proven(agent, link) != UCS_OK)) {
        return UCS_ERR_CONNECTION_RESET;
    }
    return srm_link_install(agent, link);
}

ucs_status_t srm_link_on_handshake(srm_agent_t *agent, srm_link_t *link,
                                   const srm_frame_hdr_t *hdr,
                                   const void *payload)
{
    if ((hdr->type == SRM_FRAME_HELLO) &&
        (link->state == SRM_LINK_HELLO_WAIT) &&
        (hdr->length == sizeof(srm_hello_t))) {
        return srm_link_on_hello(agent, link, payload);
    } else if ((hdr->type == SRM_FRAME_HELLO_ACK) &&
               (link->state == SRM_LINK_HELLO_SENT) &&
               (hdr->length == sizeof(srm_hello_t))) {
        return srm_link_on_hello_ack(agent, link, payload);
    } else if ((hdr->type == SRM_FRAME_AUTH) &&
               (link->state == SRM_LINK_AUTH_WAIT) &&
               (hdr->length == sizeof(srm_auth_proof_t))) {
        return srm_link_on_auth(agent, link, payload);
    } else if ((hdr->type == SRM_FRAME_AUTH) &&
               (link->state == SRM_LINK_QP_WAIT) &&
               (hdr->length == sizeof(srm_auth_proof_t))) {
        return srm_link_ready(agent, link); /* the peer's QP is connected */
    }
    agent->stats.bad_frames++;
    srm_link_close(agent, link, SRM_LOG_WARN,
                   "frame type %u (length %u) not expected in state %s",
                   hdr->type, hdr->length, srm_link_state_name(link->state));
    return UCS_ERR_CONNECTION_RESET;
}
