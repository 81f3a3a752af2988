/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * A channel's turn time (srm_rtt.h): one frame timed at a time, from its
 * first write until an ack covers it; smoothed, with the shortest kept;
 * nothing measured across a restart on another connection.
 */
extern "C" {
#include <ucx_srm/agent/srm_rtt.h>
}

#include <gtest/gtest.h>

namespace {

class rtt_test : public ::testing::Test {
protected:
    srm_rtt_t rtt;

    void SetUp() override
    {
        srm_rtt_init(&rtt);
    }

    void sent(uint32_t seq, double now)
    {
        srm_rtt_sent(&rtt, seq, now);
    }
};

TEST_F(rtt_test, the_first_turn_is_both_the_smoothed_and_the_shortest)
{
    EXPECT_EQ(0u, rtt.samples);
    sent(7, 10.0);
    srm_rtt_acked(&rtt, 8, 10.000200);
    EXPECT_EQ(1u, rtt.samples);
    EXPECT_NEAR(200e-6, rtt.smoothed, 1e-9);
    EXPECT_NEAR(200e-6, rtt.min, 1e-9);
}

TEST_F(rtt_test, an_ack_that_does_not_cover_the_probe_is_no_sample)
{
    sent(7, 10.0);
    srm_rtt_acked(&rtt, 7, 10.001); /* every frame before 7: not 7 itself */
    EXPECT_EQ(0u, rtt.samples);
    EXPECT_TRUE(rtt.probing);
    srm_rtt_acked(&rtt, 9, 10.002);
    EXPECT_EQ(1u, rtt.samples);
    EXPECT_NEAR(0.002, rtt.smoothed, 1e-9);
}

TEST_F(rtt_test, frames_written_while_one_is_timed_do_not_restart_the_clock)
{
    sent(1, 10.0);
    sent(2, 10.5);
    sent(3, 10.9);
    srm_rtt_acked(&rtt, 4, 11.0); /* covers all three: timed from frame 1 */
    EXPECT_EQ(1u, rtt.samples);
    EXPECT_NEAR(1.0, rtt.smoothed, 1e-9);
    EXPECT_FALSE(rtt.probing);
}

TEST_F(rtt_test, later_turns_are_smoothed_and_the_shortest_is_kept)
{
    sent(1, 0.0);
    srm_rtt_acked(&rtt, 2, 0.000800);
    sent(2, 1.0);
    srm_rtt_acked(&rtt, 3, 1.000000); /* a turn of 0 */
    EXPECT_NEAR(800e-6 * (1 - SRM_RTT_GAIN), rtt.smoothed, 1e-12);
    EXPECT_EQ(0.0, rtt.min);
    sent(3, 2.0);
    srm_rtt_acked(&rtt, 4, 2.001600);
    EXPECT_NEAR(800e-6 * (1 - SRM_RTT_GAIN) * (1 - SRM_RTT_GAIN) +
                        1600e-6 * SRM_RTT_GAIN,
                rtt.smoothed, 1e-12);
    EXPECT_EQ(0.0, rtt.min);
    EXPECT_EQ(3u, rtt.samples);
}

TEST_F(rtt_test, a_restart_on_another_connection_drops_the_probe)
{
    sent(5, 10.0);
    srm_rtt_restart(&rtt); /* frame 5 may be written again: not timed */
    srm_rtt_acked(&rtt, 6, 12.0);
    EXPECT_EQ(0u, rtt.samples);
    sent(6, 12.0); /* the first frame written afterwards is timed anew */
    srm_rtt_acked(&rtt, 7, 12.000300);
    EXPECT_EQ(1u, rtt.samples);
    EXPECT_NEAR(300e-6, rtt.smoothed, 1e-9);
}

TEST_F(rtt_test, the_sequence_numbers_may_wrap)
{
    sent(0xffffffffu, 10.0);
    srm_rtt_acked(&rtt, 0xffffffffu, 10.1);
    EXPECT_EQ(0u, rtt.samples);
    srm_rtt_acked(&rtt, 0, 10.2); /* 0 comes after 0xffffffff */
    EXPECT_EQ(1u, rtt.samples);
    EXPECT_NEAR(0.2, rtt.smoothed, 1e-9);
}

} // namespace
