/* SPDX-License-Identifier: BSD-3-Clause */
/* Frame header validation: everything from a client or the network. */
extern "C" {
#include <ucx_srm/common/srm_frame.h>
}

#include <gtest/gtest.h>

namespace {

srm_frame_hdr_t good_am(uint32_t length)
{
    srm_frame_hdr_t hdr = {};
    hdr.magic   = SRM_FRAME_MAGIC;
    hdr.version = SRM_FRAME_VERSION;
    hdr.type    = SRM_FRAME_AM;
    hdr.length  = length;
    hdr.am_id   = 5;
    return hdr;
}

} // namespace

TEST(frame, header_is_32_bytes_and_records_are_aligned)
{
    EXPECT_EQ(32u, sizeof(srm_frame_hdr_t));
    EXPECT_EQ(32u, srm_frame_record_size(0));
    EXPECT_EQ(40u, srm_frame_record_size(1));
    EXPECT_EQ(40u, srm_frame_record_size(8));
    EXPECT_EQ(48u, srm_frame_record_size(9));
}

TEST(frame, accepts_a_good_header)
{
    srm_frame_hdr_t hdr = good_am(100);
    EXPECT_EQ(SRM_FRAME_OK, srm_frame_validate(&hdr, 1024));
}

TEST(frame, rejects_each_kind_of_bad_header)
{
    srm_frame_hdr_t hdr;

    hdr       = good_am(8);
    hdr.magic = 0x1234;
    EXPECT_EQ(SRM_FRAME_ERR_MAGIC, srm_frame_validate(&hdr, 1024));

    hdr         = good_am(8);
    hdr.version = SRM_FRAME_VERSION + 1;
    EXPECT_EQ(SRM_FRAME_ERR_VERSION, srm_frame_validate(&hdr, 1024));

    hdr      = good_am(8);
    hdr.type = 0;
    EXPECT_EQ(SRM_FRAME_ERR_TYPE, srm_frame_validate(&hdr, 1024));
    hdr.type = SRM_FRAME_LAST;
    EXPECT_EQ(SRM_FRAME_ERR_TYPE, srm_frame_validate(&hdr, 1024));

    hdr = good_am(1025);
    EXPECT_EQ(SRM_FRAME_ERR_LENGTH, srm_frame_validate(&hdr, 1024));
    hdr = good_am(SRM_FRAME_MAX_PAYLOAD + 1);
    EXPECT_EQ(SRM_FRAME_ERR_LENGTH,
              srm_frame_validate(&hdr, 2 * SRM_FRAME_MAX_PAYLOAD));
    hdr = good_am(0xffffffffu);
    EXPECT_EQ(SRM_FRAME_ERR_LENGTH, srm_frame_validate(&hdr, SIZE_MAX));

    hdr       = good_am(8);
    hdr.am_id = 32;
    EXPECT_EQ(SRM_FRAME_ERR_AM_ID, srm_frame_validate(&hdr, 1024));
}

TEST(frame, every_status_has_a_message)
{
    for (int s = SRM_FRAME_OK; s <= SRM_FRAME_ERR_AM_ID; ++s) {
        EXPECT_STRNE("unknown frame error",
                     srm_frame_status_str(static_cast<srm_frame_status_t>(s)));
    }
}
