/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * What a flushed or closed interface leaves behind. A flush completes only
 * once the agent has taken every frame sent before it; whatever a process
 * leaves in its TX rings when it closes the interface (or exits) is still
 * delivered, as UCX's tcp delivers what sits in the kernel's buffer.
 */
#include "srm_test_agent.h"
#include "srm_test_uct.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cstring>
#include <string>
#include <unistd.h>
#include <vector>

using srm_test::agent;

namespace {

const size_t kLength = 1000;

class uct_flush_test : public srm_test::two_port_test {
protected:
    using clock = std::chrono::steady_clock;

    static size_t pack(void *dest, void *arg)
    {
        uint64_t seq = *static_cast<uint64_t*>(arg);
        std::memset(dest, (int)(seq & 0xff), kLength);
        std::memcpy(dest, &seq, sizeof(seq));
        return kLength;
    }

    static ucs_status_t on_am(void *arg, void *data, size_t length,
                              unsigned flags)
    {
        auto *self = static_cast<uct_flush_test*>(arg);
        uint64_t seq;
        std::memcpy(&seq, data, sizeof(seq));
        if ((length != kLength) || (seq != self->received_)) {
            self->disorder_++;
        }
        self->received_++;
        return UCS_OK;
    }

    /* Port 0 on node_a, port 1 on node_b (may be the same agent). */
    void start(const std::vector<std::string> &env, bool two_nodes)
    {
        node_a_.reset(new agent(env));
        if (two_nodes) {
            node_b_.reset(new agent(env));
        }
        ASSERT_NO_FATAL_FAILURE(open_port(0, node_a_->socket()));
        ASSERT_NO_FATAL_FAILURE(
                open_port(1, (two_nodes ? node_b_ : node_a_)->socket()));
        ASSERT_NO_FATAL_FAILURE(create_ep(on_am, this));
    }

    /* Sends without progress until the rings and the channel are full and
     * stay full: the agent cannot take more while port 1 does not read. */
    void fill()
    {
        auto quiet_since = clock::now();
        while (clock::now() - quiet_since < std::chrono::milliseconds(200)) {
            ssize_t length = uct_ep_am_bcopy(ep_, 9, pack, &sent_, 0);
            if (length == (ssize_t)kLength) {
                ++sent_;
                quiet_since = clock::now();
            } else {
                ASSERT_EQ(UCS_ERR_NO_RESOURCE, (ucs_status_t)length);
                usleep(1000);
            }
        }
        ASSERT_GT(sent_, 1000u);
    }

    bool progress_until_all_arrived(double seconds)
    {
        auto end = clock::now() + std::chrono::duration<double>(seconds);
        while ((received_ < sent_) && (clock::now() < end)) {
            uct_worker_progress(worker_);
        }
        return received_ == sent_;
    }

    std::string status() const
    {
        return node_a_->status() + (node_b_ ? node_b_->status() : "");
    }

    std::unique_ptr<agent> node_a_, node_b_;
    uint64_t               sent_     = 0;
    uint64_t               received_ = 0;
    unsigned               disorder_ = 0;
};

const std::vector<std::string> kOneNode = {"UCX_SRM_PORT_BACKLOG=64k",
                                           "UCX_SRM_DIRECT=no"};
/* On the verbs wire too, in the soft-RoCE VM (test_vm_verbs). */
const std::vector<std::string> kTwoNodes = {srm_test::wire_devices(),
                                            "UCX_SRM_PORT_BACKLOG=64k",
                                            "UCX_SRM_DIRECT=no"};

TEST_F(uct_flush_test, a_flush_waits_until_the_agent_took_every_frame)
{
    ASSERT_NO_FATAL_FAILURE(start(kOneNode, false));
    ASSERT_NO_FATAL_FAILURE(fill());
    EXPECT_EQ(UCS_INPROGRESS, uct_ep_flush(ep_, 0, nullptr))
            << "frames are still in the TX ring";
    EXPECT_EQ(UCS_INPROGRESS, uct_iface_flush(iface_[0], 0, nullptr));

    auto end = clock::now() + std::chrono::seconds(30);
    ucs_status_t flushed;
    while ((flushed = uct_ep_flush(ep_, 0, nullptr)) == UCS_INPROGRESS) {
        ASSERT_LT(clock::now(), end) << status();
        uct_worker_progress(worker_);
    }
    EXPECT_EQ(UCS_OK, flushed);
    EXPECT_TRUE(progress_until_all_arrived(10)) << received_ << " of " << sent_;
    EXPECT_EQ(0u, disorder_);
}

/* The flush's completion, given one, comes once the frames are taken. */
TEST_F(uct_flush_test, a_flush_with_a_completion_completes_when_taken)
{
    struct counted : uct_completion_t {
        int calls = 0;
    } comp;
    uct_completion_t *base = &comp;
    base->func   = [](uct_completion_t *c) { ++static_cast<counted*>(c)->calls; };
    base->count  = 1;
    base->status = UCS_OK;

    ASSERT_NO_FATAL_FAILURE(start(kOneNode, false));
    ASSERT_NO_FATAL_FAILURE(fill());
    ASSERT_EQ(UCS_INPROGRESS, uct_ep_flush(ep_, 0, base));
    EXPECT_EQ(0, comp.calls);
    EXPECT_TRUE(progress_until_all_arrived(30)) << received_ << " of " << sent_;
    for (int i = 0; (i < 1000) && (comp.calls == 0); ++i) {
        uct_worker_progress(worker_);
    }
    EXPECT_EQ(1, comp.calls);
}

/* A flush in the pending queue, as UCP queues one when a send before it
 * found no room. Called kMaxCalls times within one progress call, it gives
 * up, so that a dispatch that never ends fails the test instead of hanging
 * it. (The bound is per progress call, not in all: how many progress calls
 * the agent needs to take the frames depends on how fast the machine is.) */
struct pending_flush : uct_pending_req_t {
    static const unsigned kMaxCalls = 1000;

    static ucs_status_t progress(uct_pending_req_t *req)
    {
        auto *self = static_cast<pending_flush*>(req);
        ++self->calls;
        if (++self->calls_in_progress > kMaxCalls) {
            return UCS_OK;
        }
        ucs_status_t status = uct_ep_flush(self->ep, 0, nullptr);
        self->done          = (status == UCS_OK);
        return status;
    }

    uct_ep_h ep                = nullptr;
    unsigned calls             = 0;
    unsigned calls_in_progress = 0; /* reset before each progress call */
    unsigned most_in_progress  = 0;
    bool     done              = false;
};

/*
 * A pending flush that must wait for the agent says INPROGRESS until a
 * later progress: the dispatch must leave it for the next progress, not
 * call it again at once (one progress call never returned: the agent
 * cannot take frames while this process does not read).
 */
TEST_F(uct_flush_test, a_pending_flush_waiting_for_the_agent_lets_progress_return)
{
    ASSERT_NO_FATAL_FAILURE(start(kOneNode, false));
    ASSERT_NO_FATAL_FAILURE(fill());
    pending_flush flush;
    flush.func = pending_flush::progress;
    flush.ep   = ep_;
    ASSERT_EQ(UCS_OK, uct_ep_pending_add(ep_, &flush, 0));

    unsigned progress_calls = 0;
    auto end                = clock::now() + std::chrono::seconds(30);
    while (!flush.done &&
           (flush.most_in_progress <= pending_flush::kMaxCalls) &&
           (clock::now() < end)) {
        flush.calls_in_progress = 0;
        uct_worker_progress(worker_);
        flush.most_in_progress  = std::max(flush.most_in_progress,
                                           flush.calls_in_progress);
        ++progress_calls;
    }
    EXPECT_TRUE(flush.done) << flush.calls << " calls of the pending flush in "
                            << progress_calls << " progress calls";
    EXPECT_LE(flush.calls, progress_calls) << "called again within a dispatch";
    EXPECT_TRUE(progress_until_all_arrived(30)) << received_ << " of " << sent_;
    EXPECT_EQ(0u, disorder_);
}

/*
 * A sender fills its rings and the channel to another node to their depth,
 * then closes its interface at once (as a process that exits): every frame
 * arrives, in order, and the sender's agent lets the port go only then.
 */
TEST_F(uct_flush_test, a_sender_that_closes_at_once_loses_nothing)
{
    ASSERT_NO_FATAL_FAILURE(start(kTwoNodes, true));
    ASSERT_NO_FATAL_FAILURE(fill());
    uct_ep_destroy(ep_);
    ep_ = nullptr;
    uct_iface_close(iface_[0]);
    iface_[0] = nullptr;

    EXPECT_TRUE(progress_until_all_arrived(30))
            << received_ << " of " << sent_ << "\n" << status();
    EXPECT_EQ(0u, disorder_);
    EXPECT_EQ(0ull, node_a_->counter("dropped")) << status();

    /* Its agent said PORT_GONE: the receiving node keeps nothing for it.
     * (The field ends the node's line on the tcp wire; the verbs wire's
     * queue pair fields follow it.) */
    auto keeps_nothing = [this] {
        const std::string text = node_b_->status();
        return (text.find(" sources 0 retired 1\n") != std::string::npos) ||
               (text.find(" sources 0 retired 1 ") != std::string::npos);
    };
    auto end = clock::now() + std::chrono::seconds(10);
    while (!keeps_nothing() && (clock::now() < end)) {
        usleep(10000);
    }
    EXPECT_TRUE(keeps_nothing()) << status();
}

/* The same with a flush first, as ucp_ep_close(FLUSH) and MPI_Finalize do:
 * the flush says done only when the agent holds the frames. */
TEST_F(uct_flush_test, a_sender_that_flushes_and_closes_loses_nothing)
{
    ASSERT_NO_FATAL_FAILURE(start(kTwoNodes, true));
    ASSERT_NO_FATAL_FAILURE(fill());
    auto end = clock::now() + std::chrono::seconds(30);
    while (uct_ep_flush(ep_, 0, nullptr) == UCS_INPROGRESS) {
        ASSERT_LT(clock::now(), end) << status();
        uct_worker_progress(worker_);
    }
    uct_ep_destroy(ep_);
    ep_ = nullptr;
    uct_iface_close(iface_[0]);
    iface_[0] = nullptr;

    EXPECT_TRUE(progress_until_all_arrived(30))
            << received_ << " of " << sent_ << "\n" << status();
    EXPECT_EQ(0u, disorder_);
}

} // namespace
