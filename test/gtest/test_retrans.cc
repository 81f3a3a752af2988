/*
 * The retransmission watch (srm_retrans.h): a connection is replaced when
 * it resends `limit` segments within one window, never twice within the
 * hold, and never with the limit at 0.
 */
extern "C" {
#include <ucx_srm/agent/srm_retrans.h>
}

#include <gtest/gtest.h>

namespace {

const uint32_t limit = 16;

class retrans_test : public ::testing::Test {
protected:
    srm_retrans_watch_t watch;

    void SetUp() override
    {
        srm_retrans_watch_init(&watch);
    }

    int judge(uint32_t total, double now, double replaced_at = -1.0)
    {
        return srm_retrans_judge(&watch, total, now, limit, replaced_at);
    }
};

TEST_F(retrans_test, what_was_resent_before_the_first_look_does_not_count)
{
    EXPECT_EQ(0, judge(5000, 100.0));
    EXPECT_EQ(0, judge(5000 + limit - 1, 100.5));
    EXPECT_EQ(limit - 1, watch.in_window);
    EXPECT_EQ(1, judge(5000 + limit, 100.6));
}

TEST_F(retrans_test, a_slow_trickle_over_many_windows_is_not_a_storm)
{
    uint32_t total = 0;
    double now     = 10.0;
    int i;

    EXPECT_EQ(0, judge(total, now));
    for (i = 0; i < 100; ++i) {
        now   += 0.25;
        total += limit / 5; /* under the limit in every window */
        EXPECT_EQ(0, judge(total, now)) << "look " << i;
    }
}

TEST_F(retrans_test, a_new_window_starts_from_the_count_it_finds)
{
    EXPECT_EQ(0, judge(0, 10.0));
    EXPECT_EQ(0, judge(limit - 1, 10.9));
    /* The window ended: those resent in it are history. */
    EXPECT_EQ(0, judge(limit + 2, 11.0));
    EXPECT_EQ(0u, watch.in_window);
    EXPECT_EQ(0, judge(2 * limit, 11.5));
    EXPECT_EQ(1, judge(2 * limit + 2, 11.6));
}

TEST_F(retrans_test, the_count_may_wrap)
{
    EXPECT_EQ(0, judge(UINT32_MAX - 3, 10.0));
    EXPECT_EQ(1, judge(limit - 4, 10.1));
    EXPECT_EQ(limit, watch.in_window);
}

TEST_F(retrans_test, a_channel_replaces_at_most_once_per_hold)
{
    EXPECT_EQ(0, judge(0, 50.0));
    EXPECT_EQ(0, judge(10 * limit, 50.5, 50.5 - SRM_RETRANS_HOLD / 2));
    EXPECT_EQ(1, judge(10 * limit, 50.6, 50.6 - SRM_RETRANS_HOLD));
}

TEST_F(retrans_test, a_connection_is_looked_at_once_per_look_period)
{
    EXPECT_EQ(1, srm_retrans_look_due(&watch, 20.0));
    EXPECT_EQ(0, srm_retrans_look_due(&watch, 20.0 + SRM_RETRANS_LOOK / 2));
    EXPECT_EQ(1, srm_retrans_look_due(&watch, 20.0 + SRM_RETRANS_LOOK));
}

TEST_F(retrans_test, a_limit_of_zero_never_replaces)
{
    EXPECT_EQ(0, srm_retrans_judge(&watch, 0, 1.0, 0, -1.0));
    EXPECT_EQ(0, srm_retrans_judge(&watch, 1000000, 1.5, 0, -1.0));
}

} // namespace
