/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * What the link's three files share: its life (srm_link.c), its handshake
 * (srm_link_handshake.c) and its input (srm_link_input.c). The rest of
 * the agent sees links through srm_agent.h.
 */
#ifndef SRM_LINK_H
#define SRM_LINK_H

#include "srm_agent.h"

#define SRM_LINK_IN_BUF (2 * (sizeof(srm_frame_hdr_t) + SRM_FRAME_MAX_PAYLOAD))

/* Whether the link's frames come as its wire's completions (verbs, ready)
 * rather than as readiness of its socket. */
static inline int srm_link_on_completions(const srm_link_t *link)
{
    return (link->state == SRM_LINK_READY) &&
           srm_wire_can(link->wire, SRM_WIRE_CAP_COMPLETIONS);
}

/* Handshake frames are small: a fresh socket always has room for them.
 * UCS_ERR_IO_ERROR (errno says why) if the send failed. */
ucs_status_t srm_link_send_raw(srm_link_t *link, const void *msg, size_t size);

/* The initiator's first frame, once its connection is up. */
ucs_status_t srm_link_send_hello(srm_agent_t *agent, srm_link_t *link,
                                 srm_frame_type_t type);

/* A handshake frame: UCS_OK handled, UCS_ERR_CONNECTION_RESET the link was
 * closed. */
ucs_status_t srm_link_on_handshake(srm_agent_t *agent, srm_link_t *link,
                                   const srm_frame_hdr_t *hdr,
                                   const void *payload);

/* What the endpoint of a link on completions received, parsed as the
 * socket's input would be; UCS_ERR_CONNECTION_RESET if the link was
 * closed. */
ucs_status_t srm_link_read_endpoint(srm_agent_t *agent, srm_link_t *link);

#endif
