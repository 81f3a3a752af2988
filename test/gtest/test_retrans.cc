/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The retransmission watch (srm_retrans.h): a connection trips it when it
 * resends `limit` segments within one window; its channel moves, never
 * twice within the hold, and stays put where a move did not help.
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
    srm_retrans_moves_t moves;

    void SetUp() override
    {
        srm_retrans_watch_init(&watch);
        srm_retrans_moves_init(&moves);
    }

    int judge(uint32_t total, double now, unsigned lim = limit)
    {
        return srm_retrans_tripped(&watch, total, 0, now, lim);
    }
};

TEST_F(retrans_test, what_was_resent_before_the_first_look_does_not_count)
{
    EXPECT_EQ(0, judge(5000, 100.0));
    EXPECT_EQ(0, judge(5000 + limit - 1, 100.5));
    EXPECT_EQ(limit - 1, watch.resent);
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
    EXPECT_EQ(0u, watch.resent);
    EXPECT_EQ(0, judge(2 * limit, 11.5));
    EXPECT_EQ(1, judge(2 * limit + 2, 11.6));
}

TEST_F(retrans_test, the_count_may_wrap)
{
    EXPECT_EQ(0, judge(UINT32_MAX - 3, 10.0));
    EXPECT_EQ(1, judge(limit - 4, 10.1));
    EXPECT_EQ(limit, watch.resent);
}

TEST_F(retrans_test, the_window_counts_what_was_sent_too)
{
    EXPECT_EQ(0, srm_retrans_tripped(&watch, 10, 1000, 5.0, limit));
    EXPECT_EQ(1, srm_retrans_tripped(&watch, 10 + limit, 1800, 5.5, limit));
    EXPECT_EQ(limit, watch.resent);
    EXPECT_EQ(800u, watch.sent);
}

/* As many resent out of many more sent is a loss-based TCP filling the
 * path, not a bad link: 46 of 61831 moved a healthy host's channel. */
TEST_F(retrans_test, a_small_share_of_the_segments_sent_does_not_trip)
{
    EXPECT_EQ(0, srm_retrans_tripped(&watch, 0, 0, 5.0, limit));
    EXPECT_EQ(0, srm_retrans_tripped(&watch, 46, 61831, 5.5, limit));
    EXPECT_EQ(0, srm_retrans_tripped(&watch, 46 + 74, 61831 + 60000, 5.9,
                                     limit)); /* 120 of 121831 */
    /* A bad link: 45 of 10950 (measured with 3% of large packets lost). */
    EXPECT_EQ(0, srm_retrans_tripped(&watch, 0, 0, 10.0, limit));
    EXPECT_EQ(1, srm_retrans_tripped(&watch, 45, 10950, 10.2, limit));
}

/* A connection that just took its channel over restarts from slow start
 * under the resent backlog: not judged while it settles, and what it
 * resent then does not count after. */
TEST_F(retrans_test, a_connection_that_settles_is_not_judged)
{
    srm_retrans_settle(&watch, 20.0);
    EXPECT_EQ(0, judge(0, 20.1));
    EXPECT_EQ(0, judge(10 * limit, 20.5));
    EXPECT_EQ(0, judge(10 * limit, 20.0 + SRM_RETRANS_SETTLE));
    EXPECT_EQ(0u, watch.resent);
    EXPECT_EQ(1, judge(11 * limit, 20.2 + SRM_RETRANS_SETTLE));
}

TEST_F(retrans_test, a_channel_moves_at_most_once_per_hold)
{
    EXPECT_EQ(SRM_RETRANS_MOVE, srm_retrans_decide(&moves, 50.0));
    EXPECT_EQ(SRM_RETRANS_STAY,
              srm_retrans_decide(&moves, 50.0 + SRM_RETRANS_HOLD / 2));
}

/* A bad link stays behind: the connection moved to does not trip, and a
 * link that goes bad later is left as the first was. */
TEST_F(retrans_test, a_move_that_helped_is_followed_by_another_when_needed)
{
    EXPECT_EQ(SRM_RETRANS_MOVE, srm_retrans_decide(&moves, 100.0));
    EXPECT_EQ(SRM_RETRANS_MOVE,
              srm_retrans_decide(&moves, 100.0 + SRM_RETRANS_PROOF));
    EXPECT_EQ(SRM_RETRANS_MOVE,
              srm_retrans_decide(&moves, 100.0 + 2 * SRM_RETRANS_PROOF + 1));
}

/* Congestion goes with the channel: the connection it moved to trips too. */
TEST_F(retrans_test, a_move_that_did_not_help_keeps_the_channel_put)
{
    double now = 200.0;

    EXPECT_EQ(SRM_RETRANS_MOVE, srm_retrans_decide(&moves, now));
    now += SRM_RETRANS_HOLD + 0.1;
    EXPECT_EQ(SRM_RETRANS_CONGESTED, srm_retrans_decide(&moves, now));
    EXPECT_EQ(now + SRM_RETRANS_PROOF, moves.kept_until);
    /* Trips while it is kept change nothing. */
    EXPECT_EQ(SRM_RETRANS_STAY, srm_retrans_decide(&moves, now + 1));
    EXPECT_EQ(SRM_RETRANS_STAY,
              srm_retrans_decide(&moves, now + SRM_RETRANS_PROOF - 0.1));
}

TEST_F(retrans_test, congestion_that_lasts_costs_fewer_and_fewer_moves)
{
    double now     = 300.0;
    int moves_made = 0, i;

    /* The watch trips at every look, for ten minutes. */
    for (i = 0; i < 600 * 20; ++i, now += SRM_RETRANS_LOOK) {
        if (srm_retrans_decide(&moves, now) == SRM_RETRANS_MOVE) {
            ++moves_made;
        }
    }
    /* Kept for 10, 20, 40, 80, 160, 160, 160 s: one move after each. */
    EXPECT_LE(moves_made, 8);
    EXPECT_GE(moves_made, 5); /* a link that went bad meanwhile is left */
    EXPECT_EQ(SRM_RETRANS_KEEP_MAX, moves.keep);
}

TEST_F(retrans_test, a_move_that_helped_starts_the_keeping_over)
{
    double now = 400.0;

    EXPECT_EQ(SRM_RETRANS_MOVE, srm_retrans_decide(&moves, now));
    now += SRM_RETRANS_HOLD;
    EXPECT_EQ(SRM_RETRANS_CONGESTED, srm_retrans_decide(&moves, now));
    now = moves.kept_until;
    EXPECT_EQ(SRM_RETRANS_MOVE, srm_retrans_decide(&moves, now));
    EXPECT_EQ(2 * SRM_RETRANS_PROOF, moves.keep);
    /* That move helped: nothing tripped for the proof's time. */
    now += SRM_RETRANS_PROOF;
    EXPECT_EQ(SRM_RETRANS_MOVE, srm_retrans_decide(&moves, now));
    EXPECT_EQ(SRM_RETRANS_PROOF, moves.keep);
}

TEST_F(retrans_test, a_connection_is_looked_at_once_per_look_period)
{
    EXPECT_EQ(1, srm_retrans_look_due(&watch, 20.0));
    EXPECT_EQ(0, srm_retrans_look_due(&watch, 20.0 + SRM_RETRANS_LOOK / 2));
    EXPECT_EQ(1, srm_retrans_look_due(&watch, 20.0 + SRM_RETRANS_LOOK));
}

/* Congestion that ended: the next trip, long after the channel was last
 * kept, is judged afresh, with the shortest keep. */
TEST_F(retrans_test, a_calm_spell_after_keeping_starts_over)
{
    double now = 500.0;

    EXPECT_EQ(SRM_RETRANS_MOVE, srm_retrans_decide(&moves, now));
    now += SRM_RETRANS_HOLD;
    EXPECT_EQ(SRM_RETRANS_CONGESTED, srm_retrans_decide(&moves, now));
    EXPECT_EQ(2 * SRM_RETRANS_PROOF, moves.keep);
    now = moves.kept_until + SRM_RETRANS_PROOF + 3600;
    EXPECT_EQ(SRM_RETRANS_MOVE, srm_retrans_decide(&moves, now));
    EXPECT_EQ(SRM_RETRANS_PROOF, moves.keep);
    /* and a move that then does not help keeps it for the shortest while */
    now += SRM_RETRANS_HOLD;
    EXPECT_EQ(SRM_RETRANS_CONGESTED, srm_retrans_decide(&moves, now));
    EXPECT_EQ(now + SRM_RETRANS_PROOF, moves.kept_until);
}

TEST_F(retrans_test, a_limit_of_zero_never_trips)
{
    EXPECT_EQ(0, judge(0, 1.0, 0));
    EXPECT_EQ(0, judge(1000000, 1.5, 0));
}

} // namespace
