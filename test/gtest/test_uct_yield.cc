/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * UCX_SRM_YIELD: a progress call that finds nothing, with nothing sent since
 * the last one, gives up the CPU, since what the process waits for is done
 * by the agent, which may need this very core; with n it keeps polling.
 * Seen from a second thread on the same core that only yields: when the
 * polling thread yields, the two take turns at every call; when it does
 * not, it keeps the core until the scheduler takes it away.
 */
#include "srm_test_uct.h"

extern "C" {
#include <uct/api/uct.h>
}

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <functional>
#include <pthread.h>
#include <sched.h>
#include <thread>

namespace {

class uct_yield_test : public srm_test::two_port_test {
protected:
    void TearDown() override
    {
        unsetenv("UCX_SRM_YIELD");
        srm_test::two_port_test::TearDown();
    }

    /* Opens `count` ports with YIELD=value. */
    void open_ports(const char *value, int count)
    {
        setenv("UCX_SRM_YIELD", value, 1);
        create_worker();
        for (int i = 0; i < count; ++i) {
            ASSERT_EQ(UCS_OK, srm_test::open_srm_md({}, &md_[i]));
            ASSERT_EQ(UCS_OK, srm_test::open_srm_iface(md_[i], worker_,
                                                       &iface_[i]));
        }
    }

    static ucs_status_t on_am(void *arg, void *data, size_t length,
                              unsigned flags)
    {
        ++*static_cast<long*>(arg);
        return UCS_OK;
    }

    /* Runs `work` on one core shared with a thread that yields in a loop;
     * how many turns that thread got meanwhile. */
    long turns_of_a_neighbour(const std::function<void()> &work)
    {
        std::atomic<long> turns{0};
        std::atomic<bool> stop{false};
        cpu_set_t saved, one;
        int cpu = sched_getcpu();

        EXPECT_GE(cpu, 0);
        pthread_getaffinity_np(pthread_self(), sizeof(saved), &saved);
        CPU_ZERO(&one);
        CPU_SET(cpu, &one);
        EXPECT_EQ(0, pthread_setaffinity_np(pthread_self(), sizeof(one),
                                            &one));
        std::thread neighbour([&] {
            pthread_setaffinity_np(pthread_self(), sizeof(one), &one);
            while (!stop.load(std::memory_order_relaxed)) {
                sched_yield();
                turns.fetch_add(1, std::memory_order_relaxed);
            }
        });
        /* Let the neighbour start, then count from here. */
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
        long start = turns.load();
        work();
        long counted = turns.load() - start;
        stop         = true;
        neighbour.join();
        pthread_setaffinity_np(pthread_self(), sizeof(saved), &saved);
        return counted;
    }
};

/*
 * Calls of progress on an idle iface. Counted in calls, not in time: on a
 * busy machine (make check -j2) other processes take turns on the core
 * too, and 50 ms of progress once gave the neighbour 765 turns, not the
 * 1000 a test of time expected.
 */
const long kProgressCalls = 2000;

static void progress_calls(uct_iface_h iface)
{
    for (long i = 0; i < kProgressCalls; ++i) {
        uct_iface_progress(iface);
    }
}

TEST_F(uct_yield_test, an_idle_progress_call_lets_a_thread_on_its_core_run)
{
    open_ports("y", 1);
    long turns = turns_of_a_neighbour([&] { progress_calls(iface_[0]); });

    /* A turn per call; a poller that never yields leaves only scheduler
     * ticks, a handful in the few milliseconds the calls take. */
    EXPECT_GT(turns, kProgressCalls / 2)
            << "turns of the neighbour in " << kProgressCalls << " calls";
}

TEST_F(uct_yield_test, with_yield_off_progress_keeps_the_core)
{
    open_ports("n", 1);
    long turns = turns_of_a_neighbour([&] { progress_calls(iface_[0]); });

    EXPECT_LT(turns, kProgressCalls / 10)
            << "turns of the neighbour in " << kProgressCalls << " calls";
}

TEST_F(uct_yield_test, a_process_that_sends_between_calls_keeps_the_core)
{
    const long num_msgs = 5000; /* well within port 1's ring */
    long received = 0;

    open_ports("y", 2);
    create_ep(on_am, &received);
    long turns = turns_of_a_neighbour([&] {
        for (long i = 0; i < num_msgs; ++i) {
            ASSERT_EQ(UCS_OK, uct_ep_am_short(ep_, 9, 0, nullptr, 0));
            uct_iface_progress(iface_[0]);
        }
    });

    /* Port 0 finds nothing, but has sent since its last call: yielding
     * there would hand the agent one message per wakeup (a turn per
     * message). Port 1 polls only afterwards. */
    EXPECT_LT(turns, num_msgs / 5) << "turns of the neighbour";
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
    while ((received < num_msgs) &&
           (std::chrono::steady_clock::now() < deadline)) {
        uct_iface_progress(iface_[1]);
    }
    EXPECT_EQ(num_msgs, received);
}

} // namespace
