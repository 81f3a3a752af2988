/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * libFuzzer target: everything srmd parses from parties it does not trust.
 * The input is used three ways: as a byte stream from another agent (the
 * wire's frame splitter), as the contents and indices of a client's TX
 * ring, and as a control message. Any crash, overread (ASan) or undefined
 * behaviour (UBSan) fails.
 */
#include <ucx_srm/common/srm_frame.h>
#include <ucx_srm/common/srm_proto.h>
#include <ucx_srm/common/srm_ring.h>

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define FUZZ_RING_SIZE 4096

static void fuzz_stream(const uint8_t *data, size_t size)
{
    srm_frame_hdr_t hdr;
    size_t offset = 0, frame_size;

    while (srm_frame_next(data + offset, size - offset, &hdr, &frame_size) ==
           SRM_FRAME_OK) {
        if (frame_size == 0) {
            return;
        }
        if ((frame_size > size - offset) ||
            (frame_size != sizeof(hdr) + hdr.length)) {
            abort(); /* the splitter promised a frame that is not there */
        }
        offset += frame_size;
    }
}

static void fuzz_ring(const uint8_t *data, size_t size)
{
    static uint8_t ring_data[FUZZ_RING_SIZE];
    srm_ring_shared_t shared;
    srm_frame_hdr_t hdr;
    srm_ring_t ring;
    uint64_t head = 0, tail = 0;
    void *payload;
    int i;

    if (size < 16) {
        return;
    }
    memcpy(&head, data, 8);
    memcpy(&tail, data + 8, 8);
    memset(ring_data, 0, sizeof(ring_data));
    memcpy(ring_data, data + 16,
           (size - 16 < sizeof(ring_data)) ? size - 16 : sizeof(ring_data));

    srm_ring_shared_reset(&shared);
    shared.tail = tail;
    shared.head = head;
    srm_ring_init_consumer(&ring, &shared, ring_data, FUZZ_RING_SIZE);
    for (i = 0; i < 64; ++i) {
        if (srm_ring_peek(&ring, 1024, &hdr, &payload) != SRM_RING_OK) {
            return;
        }
        if (((uint8_t*)payload < ring_data) ||
            ((uint8_t*)payload + hdr.length > ring_data + FUZZ_RING_SIZE)) {
            abort(); /* a validated frame must lie inside the ring */
        }
        srm_ring_release(&ring);
    }
}

static void fuzz_control(const uint8_t *data, size_t size)
{
    srm_attach_req_t req;

    memset(&req, 0, sizeof(req));
    memcpy(&req, data, (size < sizeof(req)) ? size : sizeof(req));
    (void)srm_msg_hdr_check(&req.hdr, size, SRM_MSG_ATTACH_REQ, sizeof(req));
    (void)srm_msg_hdr_check(&req.hdr, size, SRM_MSG_STATUS_REQ,
                            sizeof(srm_status_req_t));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fuzz_stream(data, size);
    fuzz_ring(data, size);
    fuzz_control(data, size);
    return 0;
}
