/*
 * The agent's poll policy UCX_SRM_POLL=local (the default): it spins after
 * moving a message between two processes of its node, whose answer comes
 * within the spin, and sleeps at once after other work, where an answer
 * from another node would come after the spin. Counted by the agent's
 * "sleeps" over ping-pongs, against block and hybrid in the same test.
 */
#include "srm_test_agent.h"
#include "srm_test_uct.h"

extern "C" {
#include <uct/api/uct.h>
}

#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

using srm_test::agent;

namespace {

class agent_poll_test : public srm_test::two_port_test {
protected:
    using clock = std::chrono::steady_clock;

    void TearDown() override
    {
        if (back_ep_ != nullptr) {
            uct_ep_destroy(back_ep_);
        }
        two_port_test::TearDown();
        unsetenv("UCX_SRM_DIRECT");
    }

    static ucs_status_t on_am(void *arg, void *data, size_t length,
                              unsigned flags)
    {
        static_cast<agent_poll_test*>(arg)->received_++;
        return UCS_OK;
    }

    void open(int i, const std::string &socket)
    {
        create_worker();
        ASSERT_EQ(UCS_OK, srm_test::open_srm_md(
                                  {{"SOCKET", socket}, {"AGENT", "never"}},
                                  &md_[i]));
        ASSERT_EQ(UCS_OK, srm_test::open_srm_iface(md_[i], worker_,
                                                   &iface_[i]));
    }

    /* Ports 0 and 1 on one agent (remote: one agent each) with POLL=policy;
     * the agents relay every message (UCX_SRM_DIRECT=no). */
    void start(const std::string &policy, bool remote)
    {
        std::vector<std::string> env = {"UCX_SRM_DEVICES=lo",
                                        "UCX_SRM_POLL=" + policy};
        setenv("UCX_SRM_DIRECT", "no", 1);
        node_a_.reset(new agent(env));
        if (remote) {
            node_b_.reset(new agent(env));
        }
        ASSERT_NO_FATAL_FAILURE(open(0, node_a_->socket()));
        ASSERT_NO_FATAL_FAILURE(
                open(1, (remote ? node_b_ : node_a_)->socket()));
        ASSERT_NO_FATAL_FAILURE(create_ep(on_am, this));

        uct_iface_attr_t attr;
        ASSERT_EQ(UCS_OK, uct_iface_query(iface_[0], &attr));
        std::vector<char> dev(attr.device_addr_len), addr(attr.iface_addr_len);
        ASSERT_EQ(UCS_OK, uct_iface_get_device_address(
                                  iface_[0], (uct_device_addr_t*)dev.data()));
        ASSERT_EQ(UCS_OK, uct_iface_get_address(
                                  iface_[0], (uct_iface_addr_t*)addr.data()));
        ASSERT_EQ(UCS_OK, uct_iface_set_am_handler(iface_[0], 9, on_am, this,
                                                   0));
        uct_ep_params_t params = {};
        params.field_mask = UCT_EP_PARAM_FIELD_IFACE |
                            UCT_EP_PARAM_FIELD_DEV_ADDR |
                            UCT_EP_PARAM_FIELD_IFACE_ADDR;
        params.iface      = iface_[1];
        params.dev_addr   = (const uct_device_addr_t*)dev.data();
        params.iface_addr = (const uct_iface_addr_t*)addr.data();
        ASSERT_EQ(UCS_OK, uct_ep_create(&params, &back_ep_));
    }

    void send_and_wait(uct_ep_h ep)
    {
        uint64_t want = received_ + 1;
        auto end      = clock::now() + std::chrono::seconds(10);
        while (uct_ep_am_short(ep, 9, 0, "ping", 4) != UCS_OK) {
            uct_worker_progress(worker_);
            ASSERT_LT(clock::now(), end);
        }
        while (received_ < want) {
            uct_worker_progress(worker_);
            ASSERT_LT(clock::now(), end) << "no answer";
        }
    }

    /* The sleeps of the first agent over count round trips. */
    unsigned long long sleeps_over_ping_pongs(unsigned count)
    {
        for (unsigned i = 0; i < 20; ++i) { /* connect, warm up */
            send_and_wait(ep_);
            send_and_wait(back_ep_);
        }
        unsigned long long before = node_a_->counter("sleeps");
        for (unsigned i = 0; (i < count) && !HasFatalFailure(); ++i) {
            send_and_wait(ep_);
            send_and_wait(back_ep_);
        }
        return node_a_->counter("sleeps") - before;
    }

    std::unique_ptr<agent> node_a_, node_b_;
    uct_ep_h back_ep_  = nullptr;
    uint64_t received_ = 0;
};

} // namespace

TEST_F(agent_poll_test, local_spins_for_the_answer_between_local_ports)
{
    ASSERT_NO_FATAL_FAILURE(start("local", false));
    unsigned long long sleeps = sleeps_over_ping_pongs(500);
    std::cout << "POLL=local, one node: " << sleeps
              << " sleeps over 500 round trips\n";
    /* 10-311 measured, as the scheduler lets the spin catch the answer;
     * an agent that never spins sleeps twice a round trip (block). */
    EXPECT_LT(sleeps, 600u);
}

TEST_F(agent_poll_test, block_sleeps_after_every_local_message)
{
    ASSERT_NO_FATAL_FAILURE(start("block", false));
    unsigned long long sleeps = sleeps_over_ping_pongs(500);
    std::cout << "POLL=block, one node: " << sleeps
              << " sleeps over 500 round trips\n";
    EXPECT_GE(sleeps, 900u);
}

TEST_F(agent_poll_test, local_sleeps_at_once_after_traffic_between_nodes)
{
    ASSERT_NO_FATAL_FAILURE(start("local", true));
    unsigned long long sleeps = sleeps_over_ping_pongs(300);
    std::cout << "POLL=local, two nodes: " << sleeps
              << " sleeps over 300 round trips\n";
    /* Once after sending the request, once after delivering the answer
     * (600 measured). */
    EXPECT_GE(sleeps, 500u);
}

TEST_F(agent_poll_test, hybrid_spins_after_traffic_between_nodes)
{
    ASSERT_NO_FATAL_FAILURE(start("hybrid", true));
    unsigned long long sleeps = sleeps_over_ping_pongs(300);
    std::cout << "POLL=hybrid, two nodes: " << sleeps
              << " sleeps over 300 round trips\n";
    /* Its spin often catches the answer on loopback (216 measured). */
    EXPECT_LT(sleeps, 500u);
}
