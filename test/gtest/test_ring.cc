/* SPDX-License-Identifier: BSD-3-Clause */
/* The shared-memory frame ring: order, wraparound, full, corruption. */
extern "C" {
#include <ucx_srm/common/srm_ring.h>
}

#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <thread>
#include <vector>

namespace {

class ring_test : public ::testing::Test {
protected:
    void make(uint64_t size)
    {
        data_.assign(size, 0);
        srm_ring_shared_reset(&shared_);
        srm_ring_init_producer(&prod_, &shared_, data_.data(), size);
        srm_ring_init_consumer(&cons_, &shared_, data_.data(), size);
    }

    srm_ring_status_t push(uint32_t seq, uint32_t length)
    {
        srm_frame_hdr_t *hdr;
        srm_ring_status_t status = srm_ring_reserve(
                &prod_, srm_frame_record_size(length), &hdr);
        if (status != SRM_RING_OK) {
            return status;
        }
        std::memset(hdr, 0, sizeof(*hdr));
        hdr->magic   = SRM_FRAME_MAGIC;
        hdr->version = SRM_FRAME_VERSION;
        hdr->type    = SRM_FRAME_AM;
        hdr->length  = length;
        hdr->seq     = seq;
        uint8_t *p   = static_cast<uint8_t*>(srm_frame_payload(hdr));
        for (uint32_t i = 0; i < length; ++i) {
            p[i] = static_cast<uint8_t>(seq + i);
        }
        srm_ring_commit(&prod_, srm_frame_record_size(length));
        return SRM_RING_OK;
    }

    /* Pops one frame and checks it is frame `seq` with intact payload. */
    srm_ring_status_t pop_check(uint32_t seq, uint32_t *length = nullptr)
    {
        srm_frame_hdr_t hdr;
        void *payload;
        srm_ring_status_t status = srm_ring_peek(&cons_, 1u << 20, &hdr,
                                                 &payload);
        if (status != SRM_RING_OK) {
            return status;
        }
        EXPECT_EQ(seq, hdr.seq);
        const uint8_t *p = static_cast<const uint8_t*>(payload);
        for (uint32_t i = 0; i < hdr.length; ++i) {
            if (p[i] != static_cast<uint8_t>(seq + i)) {
                ADD_FAILURE() << "frame " << seq << " byte " << i << " bad";
                break;
            }
        }
        if (length != nullptr) {
            *length = hdr.length;
        }
        srm_ring_release(&cons_);
        return SRM_RING_OK;
    }

    srm_ring_shared_t shared_;
    std::vector<uint8_t> data_;
    srm_ring_t prod_, cons_;
};

} // namespace

TEST_F(ring_test, empty_ring_has_nothing)
{
    make(4096);
    EXPECT_EQ(SRM_RING_EMPTY, pop_check(0));
    EXPECT_FALSE(srm_ring_has_data(&cons_));
}

TEST_F(ring_test, frames_come_out_in_order_across_many_wraps)
{
    make(4096);
    std::mt19937 rng(1);
    uint32_t next_push = 0, next_pop = 0;

    while (next_pop < 20000) {
        /* Sizes that do not divide the ring, so pads appear at the end. */
        while ((next_push - next_pop < 5) &&
               (push(next_push, rng() % 700) == SRM_RING_OK)) {
            ++next_push;
        }
        ASSERT_EQ(SRM_RING_OK, pop_check(next_pop));
        ++next_pop;
    }
    EXPECT_GT(prod_.local, 100 * 4096u) << "the test must wrap many times";
}

TEST_F(ring_test, full_ring_refuses_then_accepts_after_release)
{
    make(4096);
    uint32_t pushed = 0;
    while (push(pushed, 200) == SRM_RING_OK) {
        ++pushed;
    }
    EXPECT_EQ(4096u / srm_frame_record_size(200), pushed);
    EXPECT_EQ(SRM_RING_FULL, push(pushed, 200));

    ASSERT_EQ(SRM_RING_OK, pop_check(0));
    EXPECT_EQ(SRM_RING_OK, push(pushed, 200));
    for (uint32_t i = 1; i <= pushed; ++i) {
        ASSERT_EQ(SRM_RING_OK, pop_check(i));
    }
    EXPECT_EQ(SRM_RING_EMPTY, pop_check(0));
}

TEST_F(ring_test, record_exactly_at_the_end_needs_no_pad)
{
    make(4096);
    /* 4 records of 1024 fill the ring exactly. */
    for (uint32_t i = 0; i < 4; ++i) {
        ASSERT_EQ(SRM_RING_OK, push(i, 1024 - sizeof(srm_frame_hdr_t)));
    }
    EXPECT_EQ(SRM_RING_FULL, push(4, 0));
    for (uint32_t i = 0; i < 4; ++i) {
        ASSERT_EQ(SRM_RING_OK, pop_check(i));
    }
    EXPECT_EQ(SRM_RING_OK, push(4, 1024 - sizeof(srm_frame_hdr_t)));
    EXPECT_EQ(SRM_RING_OK, pop_check(4));
}

TEST_F(ring_test, concurrent_producer_and_consumer_lose_nothing)
{
    const uint32_t count = 300000;
    make(64 * 1024);

    std::thread producer([&] {
        std::mt19937 rng(7);
        for (uint32_t seq = 0; seq < count;) {
            if (push(seq, rng() % 2000) == SRM_RING_OK) {
                ++seq;
            }
        }
    });

    uint32_t seq = 0;
    while (seq < count) {
        srm_ring_status_t status = pop_check(seq);
        ASSERT_NE(SRM_RING_CORRUPT, status);
        if (status == SRM_RING_OK) {
            ++seq;
        }
    }
    producer.join();
    EXPECT_EQ(SRM_RING_EMPTY, pop_check(count));
}

TEST_F(ring_test, consumer_rejects_impossible_head)
{
    make(4096);
    shared_.head = 4096 + 8; /* more than the ring holds */
    EXPECT_EQ(SRM_RING_CORRUPT, pop_check(0));

    make(4096);
    shared_.head = 12; /* not aligned */
    EXPECT_EQ(SRM_RING_CORRUPT, pop_check(0));
}

TEST_F(ring_test, consumer_rejects_garbage_and_overlong_records)
{
    make(4096);
    ASSERT_EQ(SRM_RING_OK, push(0, 64));
    data_[0] = 0xff; /* magic */
    EXPECT_EQ(SRM_RING_CORRUPT, pop_check(0));

    make(4096);
    ASSERT_EQ(SRM_RING_OK, push(0, 64));
    reinterpret_cast<srm_frame_hdr_t*>(data_.data())->length = 2000;
    EXPECT_EQ(SRM_RING_CORRUPT, pop_check(0)) << "length past published head";

    make(4096);
    ASSERT_EQ(SRM_RING_OK, push(0, 64));
    shared_.head = 16; /* head inside the header */
    EXPECT_EQ(SRM_RING_CORRUPT, pop_check(0));
}

TEST_F(ring_test, view_attached_to_corrupt_indices_touches_nothing)
{
    /* Found by the fuzzer: an unaligned index at attach time. */
    make(4096);
    shared_.tail = 4093;
    shared_.head = 4093 + 64;
    srm_ring_init_consumer(&cons_, &shared_, data_.data(), 4096);
    EXPECT_EQ(SRM_RING_CORRUPT, pop_check(0));

    make(4096);
    shared_.head = 4093;
    srm_ring_init_producer(&prod_, &shared_, data_.data(), 4096);
    EXPECT_EQ(SRM_RING_CORRUPT, push(0, 8));
}

TEST_F(ring_test, producer_rejects_impossible_tail)
{
    make(4096);
    while (push(0, 100) == SRM_RING_OK) {
    }
    shared_.tail = prod_.local + 8; /* consumer "ahead" of producer */
    EXPECT_EQ(SRM_RING_CORRUPT, push(0, 100));
}
