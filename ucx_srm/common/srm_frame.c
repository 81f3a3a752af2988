/* SPDX-License-Identifier: BSD-3-Clause */
#include "srm_frame.h"

#include <string.h>

/* UCT allows AM ids below UCT_AM_ID_MAX (32); the agent must not trust more. */
#define SRM_FRAME_AM_ID_LIMIT 32

_Static_assert(sizeof(srm_frame_hdr_t) == 32, "frame header is 32 bytes");
_Static_assert(sizeof(srm_frame_hdr_t) % SRM_FRAME_ALIGN == 0,
               "records stay aligned");

srm_frame_status_t srm_frame_validate(const srm_frame_hdr_t *hdr,
                                      size_t max_payload)
{
    if (hdr->magic != SRM_FRAME_MAGIC) {
        return SRM_FRAME_ERR_MAGIC;
    }
    if (hdr->version != SRM_FRAME_VERSION) {
        return SRM_FRAME_ERR_VERSION;
    }
    if ((hdr->type == 0) || (hdr->type >= SRM_FRAME_LAST)) {
        return SRM_FRAME_ERR_TYPE;
    }
    if (hdr->type == SRM_FRAME_PAD) {
        return SRM_FRAME_OK;
    }
    if ((hdr->length > max_payload) ||
        (hdr->length > SRM_FRAME_MAX_PAYLOAD)) {
        return SRM_FRAME_ERR_LENGTH;
    }
    if (hdr->am_id >= SRM_FRAME_AM_ID_LIMIT) {
        return SRM_FRAME_ERR_AM_ID;
    }
    return SRM_FRAME_OK;
}

srm_frame_status_t srm_frame_next(const uint8_t *buf, size_t len,
                                  srm_frame_hdr_t *hdr, size_t *size)
{
    srm_frame_status_t status;

    *size = 0;
    if (len < sizeof(*hdr)) {
        return SRM_FRAME_OK;
    }
    memcpy(hdr, buf, sizeof(*hdr));
    status = srm_frame_validate(hdr, SRM_FRAME_MAX_PAYLOAD);
    if (status != SRM_FRAME_OK) {
        return status;
    }
    if (hdr->type == SRM_FRAME_PAD) {
        return SRM_FRAME_ERR_TYPE;
    }
    if ((len - sizeof(*hdr)) >= hdr->length) {
        *size = sizeof(*hdr) + hdr->length;
    }
    return SRM_FRAME_OK;
}

const char *srm_frame_status_str(srm_frame_status_t status)
{
    switch (status) {
    case SRM_FRAME_OK:          return "ok";
    case SRM_FRAME_ERR_MAGIC:   return "bad magic";
    case SRM_FRAME_ERR_VERSION: return "unsupported version";
    case SRM_FRAME_ERR_TYPE:    return "unknown frame type";
    case SRM_FRAME_ERR_LENGTH:  return "payload length out of range";
    case SRM_FRAME_ERR_AM_ID:   return "active message id out of range";
    }
    return "unknown frame error";
}
