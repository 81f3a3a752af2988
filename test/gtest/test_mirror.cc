/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The mirrored stream buffer of a channel (srm_mirror.h): the second half
 * is the first, so a run that crosses the end is contiguous, and a stream
 * that goes round and round never moves.
 */
extern "C" {
#include <ucx_srm/agent/srm_mirror.h>
}

#include <gtest/gtest.h>

#include <cerrno>
#include <cstring>
#include <deque>
#include <unistd.h>
#include <vector>

namespace {

class mirror_test : public ::testing::Test {
protected:
    srm_mirror_t mirror = {};

    void TearDown() override
    {
        srm_mirror_destroy(&mirror);
    }
};

TEST_F(mirror_test, size_is_a_power_of_two_of_whole_pages_at_least_asked)
{
    const size_t page = (size_t)sysconf(_SC_PAGESIZE);

    ASSERT_EQ(UCS_OK, srm_mirror_create(&mirror, 1));
    EXPECT_EQ(page, mirror.size);
    srm_mirror_destroy(&mirror);

    ASSERT_EQ(UCS_OK, srm_mirror_create(&mirror, 384 * 1024 + 40));
    EXPECT_EQ(512u * 1024u, mirror.size);
    EXPECT_EQ(0u, mirror.size & (mirror.size - 1));
}

TEST_F(mirror_test, a_write_past_the_end_is_a_write_at_the_start)
{
    ASSERT_EQ(UCS_OK, srm_mirror_create(&mirror, 64 * 1024));
    memset(mirror.base, 0, mirror.size);
    memset(mirror.base + mirror.size, 0xab, 100);
    for (size_t i = 0; i < 100; ++i) {
        ASSERT_EQ(0xab, mirror.base[i]) << "byte " << i;
    }
    EXPECT_EQ(0, mirror.base[100]);
}

TEST_F(mirror_test, a_stream_going_round_keeps_its_last_size_bytes_whole)
{
    const size_t frame = 3000; /* does not divide the size: frames cross */
    std::deque<uint64_t> kept; /* offsets of the frames not yet "acked" */
    std::vector<uint8_t> bytes(frame), got(frame);
    uint64_t tail = 0;
    unsigned crossed = 0;

    ASSERT_EQ(UCS_OK, srm_mirror_create(&mirror, 16 * 1024));
    auto fill = [&](uint64_t offset) {
        for (size_t i = 0; i < frame; ++i) {
            bytes[i] = (uint8_t)(offset / frame * 31 + i);
        }
    };
    for (unsigned n = 0; n < 200; ++n) {
        /* As a channel: the oldest frames go before the new one would
         * not fit in the size with them. */
        while (!kept.empty() && (tail + frame - kept.front() > mirror.size)) {
            kept.pop_front();
        }
        fill(tail);
        memcpy(srm_mirror_at(&mirror, tail), bytes.data(), frame);
        crossed += ((tail & (mirror.size - 1)) + frame > mirror.size);
        kept.push_back(tail);
        tail += frame;
        /* One contiguous run from the oldest kept frame, as a writev or
         * a posted send reads it: frames past the buffer's end are found
         * at its start only through the second mapping. */
        const uint8_t *run = srm_mirror_at(&mirror, kept.front());
        for (uint64_t offset : kept) {
            fill(offset);
            memcpy(got.data(), run + (offset - kept.front()), frame);
            ASSERT_EQ(bytes, got) << "frame at " << offset << ", after "
                                  << n + 1 << " frames";
        }
    }
    EXPECT_GT(crossed, 10u);
    EXPECT_EQ(mirror.size / frame, kept.size());
}

TEST_F(mirror_test, an_impossible_size_is_refused)
{
    errno = 0;
    EXPECT_EQ(UCS_ERR_EXCEEDS_LIMIT,
              srm_mirror_create(&mirror, (size_t)1 << 40));
    EXPECT_EQ(EINVAL, errno);
    EXPECT_EQ(nullptr, mirror.base);
    EXPECT_EQ(0u, mirror.size);
}

} // namespace
