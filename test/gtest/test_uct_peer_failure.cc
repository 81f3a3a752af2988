/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * A remote node that stops answering fails the UCT endpoints to it: two
 * private agents on loopback (PEER_TIMEOUT 1 s, FAILOVER_TIMEOUT 200 ms),
 * an iface on each, an endpoint from the first to the second. Once active
 * messages flow, the second agent is frozen (SIGSTOP: its connections go
 * silent, new ones are accepted by the kernel and never answered). The
 * sender's error handler must be called for the endpoint with
 * UCS_ERR_ENDPOINT_TIMEOUT, not before PEER_TIMEOUT and not much after,
 * and the endpoint must then refuse sends and fail ep_check; a sender
 * asleep on its event fd must be woken for it.
 */
#include "srm_test_agent.h"
#include "srm_test_uct.h"

extern "C" {
#include <uct/api/uct.h>
}

#include <gtest/gtest.h>

#include <chrono>
#include <memory>
#include <poll.h>
#include <signal.h>
#include <string>
#include <vector>

using srm_test::agent;

namespace {

const std::vector<std::string> kFastFailure = {
        "UCX_SRM_DEVICES=lo", "UCX_SRM_PEER_TIMEOUT=1s",
        "UCX_SRM_FAILOVER_TIMEOUT=200ms"};

class uct_peer_failure_test : public srm_test::two_port_test {
protected:
    using clock = std::chrono::steady_clock;


    static ucs_status_t on_am(void *arg, void *data, size_t length,
                              unsigned flags)
    {
        static_cast<uct_peer_failure_test*>(arg)->received_++;
        return UCS_OK;
    }

    static ucs_status_t on_error(void *arg, uct_ep_h ep, ucs_status_t status)
    {
        auto *self = static_cast<uct_peer_failure_test*>(arg);
        if (self->errors_++ == 0) {
            self->error_ep_     = ep;
            self->error_status_ = status;
            self->error_time_   = clock::now();
        }
        return UCS_OK;
    }

    /* An md and an iface of srm on the agent at socket; i 0 sends, 1
     * receives. */
    void open(int i, const std::string &socket)
    {
        create_worker();
        ucs_status_t status = srm_test::open_srm_md(
                {{"SOCKET", socket}, {"AGENT", "never"}}, &md_[i]);
        if (status == UCS_ERR_NO_DEVICE) {
            GTEST_FAIL() << "no srm transport: is libuct_srm.so.0 preloaded?";
        }
        ASSERT_EQ(UCS_OK, status) << ucs_status_string(status);
        ASSERT_EQ(UCS_OK, srm_test::open_srm_iface(md_[i], worker_,
                                                   &iface_[i], on_error,
                                                   this));
    }

    void connect()
    {
        uct_iface_attr_t attr;
        ASSERT_EQ(UCS_OK, uct_iface_query(iface_[1], &attr));
        ASSERT_TRUE(attr.cap.flags & UCT_IFACE_FLAG_ERRHANDLE_PEER_FAILURE);
        ASSERT_NO_FATAL_FAILURE(create_ep(on_am, this));
    }

    /* Progress until cond() or seconds pass; tries to send one AM per
     * round while send is set (sent_ counts those that went). */
    template <typename F>
    bool progress_until(F cond, double seconds, bool send)
    {
        auto end = clock::now() + std::chrono::duration<double>(seconds);
        while (!cond()) {
            if (clock::now() > end) {
                return false;
            }
            if (send && (errors_ == 0) &&
                (uct_ep_am_short(ep_, 9, sent_, "ping", 4) == UCS_OK)) {
                ++sent_;
            }
            uct_worker_progress(worker_);
        }
        return true;
    }

    /* Two agents, an iface on each, an endpoint from 0 to 1, and messages
     * crossing for longer than PEER_TIMEOUT without a failure. */
    void start()
    {
        node_a_.reset(new agent(kFastFailure));
        node_b_.reset(new agent(kFastFailure));
        ASSERT_NO_FATAL_FAILURE(open(0, node_a_->socket()));
        ASSERT_NO_FATAL_FAILURE(open(1, node_b_->socket()));
        ASSERT_NO_FATAL_FAILURE(connect());
        ASSERT_FALSE(HasFailure());

        auto begin = clock::now();
        ASSERT_TRUE(progress_until([&] {
            return (received_ >= 100) &&
                   (clock::now() - begin > std::chrono::milliseconds(1500));
        }, 20, true)) << "received " << received_ << "\n"
                      << node_a_->status();
        EXPECT_EQ(0u, errors_);
        EXPECT_NE(std::string::npos, node_a_->status().find("state normal"))
                << node_a_->status();
        EXPECT_NE(std::string::npos, node_b_->status().find("state normal"))
                << node_b_->status();
    }

    /* the agents outlive the ifaces, which TearDown closes */
    std::unique_ptr<agent> node_a_, node_b_;
    uint64_t sent_              = 0;
    unsigned received_          = 0;
    unsigned errors_            = 0;
    uct_ep_h error_ep_          = nullptr;
    ucs_status_t error_status_  = UCS_OK;
    clock::time_point error_time_;
};

} // namespace

TEST_F(uct_peer_failure_test, frozen_node_fails_its_endpoints_in_peer_timeout)
{
    ASSERT_NO_FATAL_FAILURE(start());
    ASSERT_FALSE(HasFailure());

    ASSERT_EQ(0, kill(node_b_->pid(), SIGSTOP));
    auto frozen = clock::now();
    bool failed = progress_until([&] { return errors_ > 0; }, 15, true);
    double seconds = std::chrono::duration<double>(error_time_ - frozen)
                             .count();
    std::string status = node_a_->status();
    kill(node_b_->pid(), SIGCONT);

    ASSERT_TRUE(failed) << "no error callback 15 s after the peer froze\n"
                        << status;
    EXPECT_EQ(ep_, error_ep_);
    EXPECT_EQ(UCS_ERR_ENDPOINT_TIMEOUT, error_status_)
            << ucs_status_string(error_status_);
    EXPECT_GE(seconds, 1.0) << "failed before PEER_TIMEOUT";
    EXPECT_LT(seconds, 1.2 + 3.0) << "PEER_TIMEOUT 1 s, FAILOVER_TIMEOUT "
                                     "200 ms, and 3 s of slack";
    EXPECT_NE(std::string::npos, status.find("state invalid")) << status;

    /* Once only, and the endpoint stays failed. */
    progress_until([] { return false; }, 0.2, false);
    EXPECT_EQ(1u, errors_);
    EXPECT_EQ(UCS_ERR_ENDPOINT_TIMEOUT, uct_ep_am_short(ep_, 9, 0, "x", 1));
    EXPECT_EQ(UCS_ERR_ENDPOINT_TIMEOUT, uct_ep_check(ep_, 0, nullptr));
}

/* A sender asleep on its event fd (nothing to send, nothing to receive)
 * is woken by the failure, so that a blocked application sees it. */
TEST_F(uct_peer_failure_test, sleeping_sender_is_woken_by_the_failure)
{
    ASSERT_NO_FATAL_FAILURE(start());
    ASSERT_FALSE(HasFailure());

    /* Quiet: everything sent has arrived. */
    progress_until([&] { return received_ == sent_; }, 10, false);
    ASSERT_EQ(sent_, received_);
    int fd;
    ASSERT_EQ(UCS_OK, uct_iface_event_fd_get(iface_[0], &fd));
    ucs_status_t armed = UCS_ERR_BUSY;
    for (int i = 0; (i < 1000) && (armed == UCS_ERR_BUSY); ++i) {
        uct_worker_progress(worker_);
        armed = uct_iface_event_arm(iface_[0], UCT_EVENT_RECV |
                                               UCT_EVENT_SEND_COMP);
    }
    ASSERT_EQ(UCS_OK, armed);

    ASSERT_EQ(0, kill(node_b_->pid(), SIGSTOP));
    auto frozen = clock::now();
    struct pollfd pfd = {fd, POLLIN, 0};
    int ready = poll(&pfd, 1, 8000);
    double seconds = std::chrono::duration<double>(clock::now() - frozen)
                             .count();
    progress_until([&] { return errors_ > 0; }, 1, false);
    std::string status = node_a_->status();
    kill(node_b_->pid(), SIGCONT);

    ASSERT_EQ(1, ready) << "not woken 8 s after the peer froze\n" << status;
    EXPECT_GE(seconds, 1.0) << "woken before PEER_TIMEOUT: by what?";
    EXPECT_LT(seconds, 1.1 + 3.0);
    EXPECT_EQ(1u, errors_) << status;
    EXPECT_EQ(UCS_ERR_ENDPOINT_TIMEOUT, error_status_);
}
