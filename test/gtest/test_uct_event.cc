/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Blocking progress: an srm iface's event fd must wake a sleeping receiver
 * when a message arrives, and arm must refuse (BUSY) while data is waiting.
 * And the pending queue: a flush queued behind sends (what UCP does when
 * uct_ep_flush says NO_RESOURCE) must complete once the sends went out.
 * Two ifaces of one process are two ports of the same agent.
 */
#include "srm_test_agent.h"
#include "srm_test_uct.h"

extern "C" {
#include <uct/api/uct.h>
}

#include <gtest/gtest.h>

#include <chrono>
#include <cstring>
#include <poll.h>
#include <string>
#include <unistd.h>
#include <vector>

namespace {

class uct_event_test : public ::testing::Test {
protected:
    void SetUp() override
    {
        ASSERT_EQ(UCS_OK, ucs_async_context_create(UCS_ASYNC_MODE_THREAD_SPINLOCK,
                                                   &async_));
        ASSERT_EQ(UCS_OK, uct_worker_create(async_, UCS_THREAD_MODE_SINGLE,
                                            &worker_));
        open_md();
        if (md_ == nullptr) {
            GTEST_FAIL() << "no srm transport: is libuct_srm.so.0 preloaded?";
        }
        open_iface(&sender_);
        open_iface(&receiver_);
        ASSERT_EQ(UCS_OK, uct_iface_set_am_handler(receiver_, 7, on_am, this,
                                                   0));
        connect();
    }

    void TearDown() override
    {
        if (ep_ != nullptr) {
            uct_ep_destroy(ep_);
        }
        for (uct_iface_h iface : {sender_, receiver_}) {
            if (iface != nullptr) {
                uct_iface_close(iface);
            }
        }
        if (md_ != nullptr) {
            uct_md_close(md_);
        }
        if (worker_ != nullptr) {
            uct_worker_destroy(worker_);
        }
        if (async_ != nullptr) {
            ucs_async_context_destroy(async_);
        }
    }

    static ucs_status_t on_am(void *arg, void *data, size_t length,
                              unsigned flags)
    {
        static_cast<uct_event_test*>(arg)->received_++;
        return UCS_OK;
    }

    void open_md()
    {
        ucs_status_t status = srm_test::open_srm_md(md_settings_, &md_);
        ASSERT_TRUE((status == UCS_OK) || (status == UCS_ERR_NO_DEVICE))
                << ucs_status_string(status);
    }

    void open_iface(uct_iface_h *iface)
    {
        ASSERT_EQ(UCS_OK, srm_test::open_srm_iface(md_, worker_, iface));
    }

    void connect()
    {
        uct_iface_attr_t attr;
        ASSERT_EQ(UCS_OK, uct_iface_query(receiver_, &attr));
        ASSERT_TRUE(attr.cap.event_flags & UCT_IFACE_FLAG_EVENT_FD);
        std::vector<char> dev(attr.device_addr_len), addr(attr.iface_addr_len);
        ASSERT_EQ(UCS_OK, uct_iface_get_device_address(
                                  receiver_, (uct_device_addr_t*)dev.data()));
        ASSERT_EQ(UCS_OK, uct_iface_get_address(
                                  receiver_, (uct_iface_addr_t*)addr.data()));
        uct_ep_params_t params = {};
        params.field_mask = UCT_EP_PARAM_FIELD_IFACE |
                            UCT_EP_PARAM_FIELD_DEV_ADDR |
                            UCT_EP_PARAM_FIELD_IFACE_ADDR;
        params.iface      = sender_;
        params.dev_addr   = (const uct_device_addr_t*)dev.data();
        params.iface_addr = (const uct_iface_addr_t*)addr.data();
        ASSERT_EQ(UCS_OK, uct_ep_create(&params, &ep_));
    }

    bool readable(int fd, int timeout_ms)
    {
        struct pollfd pfd = {fd, POLLIN, 0};
        return poll(&pfd, 1, timeout_ms) == 1;
    }

    srm_test::md_settings md_settings_; /* none: make check's agent */
    ucs_async_context_t *async_ = nullptr;
    uct_worker_h worker_        = nullptr;
    uct_md_h md_                = nullptr;
    uct_iface_h sender_         = nullptr;
    uct_iface_h receiver_       = nullptr;
    uct_ep_h ep_                = nullptr;
    unsigned received_          = 0;
};

} // namespace

TEST_F(uct_event_test, armed_receiver_is_woken_by_a_message)
{
    int fd;
    ASSERT_EQ(UCS_OK, uct_iface_event_fd_get(receiver_, &fd));

    for (int round = 0; round < 50; ++round) {
        ASSERT_EQ(UCS_OK, uct_iface_event_arm(receiver_, UCT_EVENT_RECV));
        EXPECT_FALSE(readable(fd, 0)) << "nothing sent yet, round " << round;

        ASSERT_EQ(UCS_OK, uct_ep_am_short(ep_, 7, round, "ping", 4));
        ASSERT_TRUE(readable(fd, 5000)) << "lost wakeup in round " << round;

        unsigned before = received_;
        while (received_ == before) {
            uct_worker_progress(worker_);
        }
    }
    EXPECT_EQ(50u, received_);
}

TEST_F(uct_event_test, arm_is_busy_while_a_message_waits)
{
    ASSERT_EQ(UCS_OK, uct_ep_am_short(ep_, 7, 0, "x", 1));
    ucs_status_t status = UCS_OK;
    for (int i = 0; (i < 5000) && (status == UCS_OK); ++i) {
        status = uct_iface_event_arm(receiver_, UCT_EVENT_RECV);
        if (status == UCS_OK) {
            int fd;
            uct_iface_event_fd_get(receiver_, &fd);
            readable(fd, 1); /* wait for the agent to move the frame */
        }
    }
    EXPECT_EQ(UCS_ERR_BUSY, status);
    while (received_ == 0) {
        uct_worker_progress(worker_);
    }
}

namespace {

/* A pending request as UCP makes them: its callback retries the operation
 * and returns what the transport said. */
struct pending_op {
    uct_pending_req_t req;   /* first: the callback gets its address */
    uct_ep_h          ep;
    bool              flush; /* uct_ep_flush, else an 8 KB am_bcopy */
    bool              done;
};

size_t pack_8k(void *dest, void *arg)
{
    memset(dest, 0x5a, 8192);
    return 8192;
}

ucs_status_t pending_op_progress(uct_pending_req_t *req)
{
    pending_op *op = reinterpret_cast<pending_op*>(req);
    ucs_status_t status;

    if (op->flush) {
        status = uct_ep_flush(op->ep, 0, nullptr);
    } else {
        ssize_t len = uct_ep_am_bcopy(op->ep, 7, pack_8k, nullptr, 0);
        status      = (len < 0) ? static_cast<ucs_status_t>(len) : UCS_OK;
    }
    op->done = (status == UCS_OK);
    return status;
}

} // namespace

/*
 * UCP's ep flush (ucp_ep_flush_progress_pending, also when it discards a
 * uct ep) calls uct_ep_flush from its own pending callback. The ep's
 * pending group is not empty then (the arbiter keeps a placeholder for the
 * element it dispatches): a flush that counts that as "sends still pending"
 * says NO_RESOURCE forever, stops the dispatch of its TX ring, and every ep
 * to that node that ever goes pending hangs with it (MPI over srm hung in
 * a full mesh).
 */
TEST_F(uct_event_test, flush_queued_behind_sends_completes)
{
    /* The receiver does not progress: its ring, its backlog in the agent,
     * then our TX ring fill up. */
    unsigned sent = 0, refused = 0;
    while ((refused < 200) && (sent < 100000)) {
        if (uct_ep_am_bcopy(ep_, 7, pack_8k, nullptr, 0) >= 0) {
            ++sent;
            refused = 0;
        } else {
            ++refused;
            usleep(1000); /* the agent may still be moving frames */
        }
    }
    ASSERT_EQ(200u, refused) << "the TX ring never stayed full";

    pending_op send = {}, flush = {};
    send.req.func  = pending_op_progress;
    send.ep        = ep_;
    flush.req.func = pending_op_progress;
    flush.ep       = ep_;
    flush.flush    = true;
    ASSERT_EQ(UCS_OK, uct_ep_pending_add(ep_, &send.req, 0));
    ASSERT_EQ(UCS_ERR_NO_RESOURCE, uct_ep_flush(ep_, 0, nullptr))
            << "a send is pending";
    ASSERT_EQ(UCS_OK, uct_ep_pending_add(ep_, &flush.req, 0));

    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    while (!flush.done && (std::chrono::steady_clock::now() < deadline)) {
        uct_worker_progress(worker_);
    }
    if (!flush.done) {
        uct_ep_pending_purge(ep_, nullptr, nullptr); /* they live here */
    }
    EXPECT_TRUE(send.done) << "the pending send never went out";
    ASSERT_TRUE(flush.done) << "the pending flush never completed";
    EXPECT_EQ(UCS_OK, uct_ep_flush(ep_, 0, nullptr));

    /* The ep is usable again, and everything arrives. */
    while (uct_ep_am_short(ep_, 7, 0, "x", 1) != UCS_OK) {
        uct_worker_progress(worker_);
    }
    while (received_ < sent + 2) {
        uct_worker_progress(worker_);
    }
    EXPECT_EQ(sent + 2, received_);
}

namespace {

/* Both ifaces on an agent of their own that sleeps when idle and whose
 * safety net is an hour away. */
class uct_event_sleep_test : public uct_event_test {
protected:
    uct_event_sleep_test() :
        srmd_({"UCX_SRM_POLL=block", "UCX_SRM_SAFETY_WAKEUP=3600s",
               "UCX_SRM_PORT_BACKLOG=4k"})
    {
        md_settings_ = {{"SOCKET", srmd_.socket()}, {"AGENT", "never"}};
    }

    srm_test::agent srmd_;
};

} // namespace

/*
 * Every sleeper is woken by the one who has work for it, through the
 * module too: the receiver sleeps in its event fd whenever it has nothing
 * to do, the sender fills its TX ring, the receiver's RX ring and its
 * backlog in the agent again and again, and the agent sleeps when idle.
 * A wakeup lost anywhere (the module's reads of the RX ring before its
 * look at rx_space_wanted, its doorbells, the agent's) stalls the stream
 * with nobody to end the sleep but the safety net, an hour away here: this
 * fails after 5 s of it.
 */
TEST_F(uct_event_sleep_test, a_stream_through_full_rings_needs_no_safety_net)
{
    const unsigned count = 20000;
    unsigned sent = 0, sleeps = 0;
    int fds[2];

    ASSERT_EQ(UCS_OK, uct_iface_event_fd_get(sender_, &fds[0]));
    ASSERT_EQ(UCS_OK, uct_iface_event_fd_get(receiver_, &fds[1]));
    while (received_ < count) {
        while ((sent < count) &&
               (uct_ep_am_bcopy(ep_, 7, pack_8k, nullptr, 0) >= 0)) {
            ++sent;
        }
        if ((sent < count) && (sent % 8 == 0)) {
            /* The TX ring is full, so the agent waits for room in our RX
             * ring: long enough to fall asleep, which it may wake from
             * only when we read. */
            usleep(2000);
        }
        if ((uct_worker_progress(worker_) > 0) ||
            (uct_iface_event_arm(receiver_, UCT_EVENT_RECV) != UCS_OK) ||
            (uct_iface_event_arm(sender_, UCT_EVENT_SEND_COMP) != UCS_OK)) {
            continue;
        }
        if ((sent < count) &&
            (uct_ep_am_bcopy(ep_, 7, pack_8k, nullptr, 0) >= 0)) {
            ++sent; /* room came between the last try and the arm */
            continue;
        }
        struct pollfd pfds[2] = {{fds[0], POLLIN, 0}, {fds[1], POLLIN, 0}};
        ++sleeps;
        if (poll(pfds, 2, 5000) == 0) {
            break;
        }
    }
    EXPECT_EQ(count, received_) << "stalled: sent " << sent << ", "
                                << sleeps << " sleeps\n" << srmd_.status();
    /* The pauses above made the agent sleep with our frames blocked. */
    EXPECT_GT(srmd_.counter("sleeps"), 10ull) << srmd_.status();
}
