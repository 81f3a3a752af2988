/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Direct lanes (srm_lane_shared.h): a process writes small AMs to another node's
 * channel socket itself, and reads those for it. Two private agents on
 * loopback, an iface on each, eps both ways. The tests count what the
 * sending agent says was written directly ("direct" in its status) and
 * what the receiving one says its clients took ("taken"), and check that
 * every AM arrives once, in order, also when the channel's connection is
 * reset under the writers and when a writer dies holding the lane's lock.
 */
#include "srm_test_agent.h"
#include "srm_test_uct.h"

extern "C" {
#include <ucx_srm/common/srm_address.h>
#include <ucx_srm/common/srm_lane_shared.h>
#include <uct/api/uct.h>
}

#include <gtest/gtest.h>

#include <chrono>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <memory>
#include <poll.h>
#include <sstream>
#include <string>
#include <sys/wait.h>
#include <unistd.h>
#include <vector>

using srm_test::agent;

namespace {

const std::vector<std::string> kAgentEnv = {
        "UCX_SRM_DEVICES=lo", "UCX_SRM_FAILOVER_TIMEOUT=300ms",
        "UCX_SRM_PEER_TIMEOUT=10s"};

size_t pack_numbered_4k(void *dest, void *arg);

class uct_direct_test : public srm_test::two_port_test {
protected:
    using clock = std::chrono::steady_clock;

    void TearDown() override
    {
        two_port_test::TearDown();
        unsetenv("UCX_SRM_DIRECT");
        unsetenv("UCX_SRM_DIRECT_RECV");
        unsetenv("UCX_SRM_DIRECT_BULK");
    }

    static ucs_status_t on_am(void *arg, void *data, size_t length,
                              unsigned flags)
    {
        auto *self = static_cast<uct_direct_test*>(arg);
        uint64_t seq;
        memcpy(&seq, data, sizeof(seq));
        if (seq != self->received_) {
            self->out_of_order_++;
        }
        self->received_++;
        return UCS_OK;
    }

    static ucs_status_t on_reply(void *arg, void *data, size_t length,
                                 unsigned flags)
    {
        static_cast<uct_direct_test*>(arg)->replies_++;
        return UCS_OK;
    }

    /* Agents (with agent_env too), ifaces with UCX_SRM_DIRECT=mode, ep_
     * 0 -> 1, back_ep_ 1 -> 0. */
    void start(const char *mode,
               const std::vector<std::string> &agent_env = {})
    {
        std::vector<std::string> env = kAgentEnv;
        env.insert(env.end(), agent_env.begin(), agent_env.end());
        setenv("UCX_SRM_DIRECT", mode, 1);
        node_a_.reset(new agent(env));
        node_b_.reset(new agent(env));
        ASSERT_NO_FATAL_FAILURE(open_port(0, node_a_->socket()));
        ASSERT_NO_FATAL_FAILURE(open_port(1, node_b_->socket()));
        ASSERT_NO_FATAL_FAILURE(create_ep(on_am, this));
        ASSERT_NO_FATAL_FAILURE(create_back_ep(10, on_reply, this));
    }

    template <typename F> bool progress_until(F cond, double seconds)
    {
        auto end = clock::now() + std::chrono::duration<double>(seconds);
        while (!cond()) {
            if (clock::now() > end) {
                return false;
            }
            uct_worker_progress(worker_);
        }
        return true;
    }

    /* Sends AMs numbered sent_.. until count went, progressing between. */
    void stream(uint64_t count, double seconds = 30)
    {
        uint64_t end = sent_ + count;
        ASSERT_TRUE(progress_until([&] {
            if ((sent_ < end) &&
                (uct_ep_am_short(ep_, 9, sent_, "payload", 7) == UCS_OK)) {
                ++sent_;
            }
            return sent_ == end;
        }, seconds)) << "sent " << sent_ << " of " << end;
    }

    /* Sends count AMs, each once the one before it arrived: the ring is
     * empty and the agent idle at every send. */
    void paced(unsigned count)
    {
        for (unsigned i = 0; i < count; ++i) {
            ASSERT_NO_FATAL_FAILURE(stream(1, 10));
            ASSERT_TRUE(progress_until([&] { return received_ >= sent_; },
                                       10))
                    << "received " << received_ << " of " << sent_;
        }
    }

    /* Sends count AMs as fast as they go, every third a 4 KB bcopy (the
     * bulk channel with LARGE_THRESH=1k), the others short. */
    void stream_mixed(uint64_t count)
    {
        uint64_t end = sent_ + count;
        ASSERT_TRUE(progress_until([&] {
            ucs_status_t status;
            if (sent_ == end) {
                return true;
            } else if ((sent_ % 3) == 0) {
                ssize_t length = uct_ep_am_bcopy(ep_, 9, pack_numbered_4k,
                                                 &sent_, 0);
                status = (length < 0) ? (ucs_status_t)length : UCS_OK;
            } else {
                status = uct_ep_am_short(ep_, 9, sent_, "payload", 7);
            }
            if (status == UCS_OK) {
                ++sent_;
            }
            return false;
        }, 60)) << "sent " << sent_ << " of " << end;
    }

    /* Sends an AM of `length` bytes by zcopy (as UCP sends large ones), its
     * number first, once the one before it arrived. */
    void send_paced_zcopy(size_t length)
    {
        std::vector<char> payload(length, 'p');
        memcpy(payload.data(), &sent_, sizeof(sent_));
        uct_iov_t iov = {};
        iov.buffer    = payload.data();
        iov.length    = payload.size();
        iov.memh      = UCT_MEM_HANDLE_NULL;
        iov.count     = 1;
        ASSERT_TRUE(progress_until([&] {
            return uct_ep_am_zcopy(ep_, 9, nullptr, 0, &iov, 1, 0, nullptr) ==
                   UCS_OK;
        }, 10));
        ++sent_;
        ASSERT_TRUE(progress_until([&] { return received_ >= sent_; }, 10))
                << node_b_->status();
    }

    /* Paced rounds of 100 until the agent counts `direct` frames written
     * directly, for at most 30 s: after a reset, sends go by the ring until
     * the new connection and lane are up, which on a busy machine takes
     * longer than any number of rounds (10 of them once took 0.3 s, and
     * the lane came in the last). */
    void paced_until_direct(unsigned long long direct_wanted)
    {
        auto deadline = std::chrono::steady_clock::now() +
                        std::chrono::seconds(30);
        while ((direct() < direct_wanted) &&
               (std::chrono::steady_clock::now() < deadline)) {
            ASSERT_NO_FATAL_FAILURE(paced(100));
        }
    }

    void expect_all_arrive()
    {
        EXPECT_TRUE(progress_until([&] { return received_ >= sent_; }, 30))
                << "received " << received_ << " of " << sent_ << "\n"
                << node_a_->status();
        progress_until([] { return false; }, 0.05); /* nothing more */
        EXPECT_EQ(sent_, received_);
        EXPECT_EQ(0u, out_of_order_);
    }

    /* One request, and its reply from port 1, count times. */
    void ping_pong(unsigned count)
    {
        for (unsigned i = 0; i < count; ++i) {
            ASSERT_TRUE(progress_until([&] {
                return uct_ep_am_short(ep_, 9, sent_, "ping", 4) == UCS_OK;
            }, 10));
            ++sent_;
            ASSERT_TRUE(progress_until([&] { return received_ >= sent_; },
                                       10));
            unsigned replies = replies_ + 1;
            ASSERT_TRUE(progress_until([&] {
                return uct_ep_am_short(back_ep_, 10, 0, "pong", 4) == UCS_OK;
            }, 10));
            ASSERT_TRUE(progress_until([&] { return replies_ == replies; },
                                       10));
        }
    }

    unsigned long long direct() const { return node_a_->counter("direct"); }

    std::unique_ptr<agent> node_a_, node_b_;
    uint64_t sent_      = 0;
    uint64_t received_  = 0;
    unsigned replies_   = 0;
    unsigned out_of_order_ = 0;
};

/* The small channels' lanes this process mapped (or the bulk ones'),
 * found by their memfds' names. */
std::vector<srm_lane_t*> mapped_lanes(const char *name = "memfd:srm-lane-")
{
    std::ifstream maps("/proc/self/maps");
    std::vector<srm_lane_t*> lanes;
    std::string line;
    while (std::getline(maps, line)) {
        if (line.find(name) != std::string::npos) {
            lanes.push_back(reinterpret_cast<srm_lane_t*>(
                    std::strtoull(line.c_str(), nullptr, 16)));
        }
    }
    return lanes;
}

/* Of the lanes this process mapped (both ports map theirs as their eps
 * are made), the one most frames were written to: port 0's, in the tests
 * that send from port 0 before they look. */
srm_lane_t *mapped_lane(const char *name = "memfd:srm-lane-")
{
    srm_lane_t *most = nullptr;
    for (srm_lane_t *lane : mapped_lanes(name)) {
        if ((most == nullptr) ||
            (srm_load_relaxed(&lane->next_chan_seq) >
             srm_load_relaxed(&most->next_chan_seq))) {
            most = lane;
        }
    }
    return most;
}

/* A child process takes the lane's lock and exits holding it. */
void die_holding(srm_lane_t *lane)
{
    pid_t pid = fork();
    if (pid == 0) {
        pthread_mutex_lock(&lane->lock);
        _exit(0); /* the robust lock remembers who held it */
    }
    ASSERT_GT(pid, 0);
    int wstatus;
    ASSERT_EQ(pid, waitpid(pid, &wstatus, 0));
}

const char kBulkLane[] = "memfd:srm-bulk-lane-";

/* Packs a 4 KB AM that begins with its number. */
size_t pack_numbered_4k(void *dest, void *arg)
{
    memset(dest, 0x5a, 4096);
    memcpy(dest, arg, sizeof(uint64_t));
    return 4096;
}

} // namespace

/*
 * A process writes small AMs directly, queues a large one in its ring, and
 * closes at once (as one that exits): the agent, taking the lane's log
 * while the port departs, must count the direct ones as the port's, or the
 * large one gets a number the peer already had and is dropped as sent
 * twice (the departing port's frames were taken as written by nobody).
 */
TEST_F(uct_direct_test, a_writer_that_exits_after_direct_writes_loses_nothing)
{
    ASSERT_NO_FATAL_FAILURE(start("always"));
    ASSERT_NO_FATAL_FAILURE(paced(100));
    for (int round = 0; round < 5; ++round) {
        ASSERT_NO_FATAL_FAILURE(stream(5));
        /* 16 KB by zcopy: over LARGE_THRESH, the bulk channel's. */
        std::vector<uint8_t> large(16384, 0x6b);
        memcpy(large.data(), &sent_, sizeof(sent_));
        uct_iov_t iov = {large.data(), large.size(), UCT_MEM_HANDLE_NULL, 0,
                         1};
        ucs_status_t status = UCS_ERR_NO_RESOURCE;
        ASSERT_TRUE(progress_until([&] {
            status = uct_ep_am_zcopy(ep_, 9, nullptr, 0, &iov, 1, 0, nullptr);
            return status != UCS_ERR_NO_RESOURCE;
        }, 10));
        ASSERT_EQ(UCS_OK, status) << "the ring copies it at once";
        ++sent_;
        if (round < 4) {
            ASSERT_TRUE(progress_until([&] { return received_ >= sent_; },
                                       10))
                    << "received " << received_ << " of " << sent_;
        }
    }
    uct_ep_destroy(ep_);
    ep_ = nullptr;
    uct_iface_close(iface_[0]);
    iface_[0] = nullptr;
    expect_all_arrive();
    std::string status = node_a_->status();
    EXPECT_NE(std::string::npos, status.find(" foreign 0 ")) << status;
}

TEST_F(uct_direct_test, always_writes_messages_itself_and_all_arrive_in_order)
{
    ASSERT_NO_FATAL_FAILURE(start("always"));
    ASSERT_NO_FATAL_FAILURE(paced(300));
    /* Most: the lane closes while the agent writes itself (an ack, a
     * heartbeat: the slower the machine, the more of them fall within the
     * 300; 233 in a CI run with a build beside it) or before the channel
     * is connected. */
    EXPECT_GE(direct(), 150u) << node_a_->status();
    EXPECT_LE(direct(), 300u) << node_a_->status();
    /* A stream mixes both ways, whenever the ring is not yet empty. */
    ASSERT_NO_FATAL_FAILURE(stream(5000));
    expect_all_arrive();
}

TEST_F(uct_direct_test, no_leaves_every_message_to_the_agent)
{
    ASSERT_NO_FATAL_FAILURE(start("no"));
    ASSERT_NO_FATAL_FAILURE(paced(100));
    ASSERT_NO_FATAL_FAILURE(ping_pong(50));
    ASSERT_NO_FATAL_FAILURE(stream(2000));
    expect_all_arrive();
    EXPECT_EQ(0u, direct()) << node_a_->status();
    EXPECT_EQ(nullptr, mapped_lane());
}

TEST_F(uct_direct_test, auto_writes_replies_but_leaves_streams_to_the_agent)
{
    /* auto writes only what would wake a sleeping agent: agents that
     * never spin sleep at every request. */
    ASSERT_NO_FATAL_FAILURE(start("auto", {"UCX_SRM_POLL=block"}));
    ASSERT_NO_FATAL_FAILURE(ping_pong(200));
    unsigned long long after_ping_pong = direct();
    /* Every request follows a reply: nearly all go directly. */
    EXPECT_GE(after_ping_pong, 150u) << node_a_->status();
    ASSERT_NO_FATAL_FAILURE(stream(3000));
    expect_all_arrive();
    /* A stream follows no receive: at most its first few messages. */
    EXPECT_LE(direct() - after_ping_pong, SRM_LANE_DIRECT_BURST)
            << node_a_->status();
}

TEST_F(uct_direct_test, auto_leaves_a_message_to_an_agent_that_is_awake)
{
    /* Agents that spin without end never sleep: writing directly would
     * spare no wakeup. */
    ASSERT_NO_FATAL_FAILURE(start("auto", {"UCX_SRM_POLL=spin"}));
    ASSERT_NO_FATAL_FAILURE(ping_pong(100));
    expect_all_arrive();
    EXPECT_EQ(0u, direct()) << node_a_->status();
}

TEST_F(uct_direct_test, a_reset_connection_loses_nothing_written_directly)
{
    ASSERT_NO_FATAL_FAILURE(start("always"));
    ASSERT_NO_FATAL_FAILURE(paced(200));
    unsigned long long before = direct();
    ASSERT_GE(before, 150u) << node_a_->status();
    for (int i = 0; i < 3; ++i) {
        /* Resets the active connections, with direct frames in flight. */
        ASSERT_NO_FATAL_FAILURE(stream(1000));
        node_a_->fault(false);
        ASSERT_NO_FATAL_FAILURE(stream(1000));
        ASSERT_NO_FATAL_FAILURE(paced(100));
    }
    expect_all_arrive();
    EXPECT_GE(node_a_->counter("failovers"), 3u) << node_a_->status();
    /* The writers went on directly on the new connections. */
    EXPECT_GE(direct(), before + 200u) << node_a_->status();
}

TEST_F(uct_direct_test, a_writer_that_dies_holding_the_lock_stops_nothing)
{
    ASSERT_NO_FATAL_FAILURE(start("always"));
    ASSERT_NO_FATAL_FAILURE(paced(100));
    srm_lane_t *lane = mapped_lane();
    ASSERT_NE(nullptr, lane);

    ASSERT_NO_FATAL_FAILURE(die_holding(lane));

    unsigned long long before = direct();
    ASSERT_NO_FATAL_FAILURE(stream(1000));
    ASSERT_NO_FATAL_FAILURE(paced_until_direct(before + 200u));
    expect_all_arrive();
    /* The agent mended the lane (a new connection) and writers went on. */
    EXPECT_GE(node_a_->counter("failovers"), 1u) << node_a_->status();
    EXPECT_GE(direct(), before + 200u) << node_a_->status();
    EXPECT_EQ(0, pthread_mutex_trylock(&lane->lock));
    pthread_mutex_unlock(&lane->lock);
}

/*
 * The lock's owner dies and the next one to take it is the agent closing
 * that very connection (a reset, here injected): the absorb must not close
 * the link under its caller (once a double free that took the agent, and
 * every job on the node, down). Both agents live; nothing is lost.
 */
TEST_F(uct_direct_test, a_writer_that_dies_holding_the_lock_before_a_reset)
{
    ASSERT_NO_FATAL_FAILURE(start("always"));
    for (int round = 0; round < 5; ++round) {
        ASSERT_NO_FATAL_FAILURE(paced(50));
        srm_lane_t *lane = mapped_lane();
        ASSERT_NE(nullptr, lane);
        pid_t pid = fork();
        if (pid == 0) {
            pthread_mutex_lock(&lane->lock);
            _exit(0);
        }
        ASSERT_GT(pid, 0);
        int wstatus;
        ASSERT_EQ(pid, waitpid(pid, &wstatus, 0));
        node_a_->fault(false);
        ASSERT_NO_FATAL_FAILURE(stream(500));
        ASSERT_EQ(0, kill(node_a_->pid(), 0)) << "agent a died";
        ASSERT_EQ(0, kill(node_b_->pid(), 0)) << "agent b died";
    }
    expect_all_arrive();
    EXPECT_GE(node_a_->counter("failovers"), 5u) << node_a_->status();
}

/*
 * A process breaks the lane's numbering (it counts a frame it never
 * logged) while the log is empty: the agent keeps the channel's own count
 * and resets the connection. It used to take the lane's count as the
 * channel's then, so that every frame after it was a gap to the peer.
 */
TEST_F(uct_direct_test, a_process_that_breaks_the_lanes_numbering_stops_nothing)
{
    ASSERT_NO_FATAL_FAILURE(start("always"));
    ASSERT_NO_FATAL_FAILURE(paced(100));
    srm_lane_t *lane = mapped_lane();
    ASSERT_NE(nullptr, lane);
    /* Once the agent took the log: it then has nothing to check the
     * count against but its own. */
    auto end = clock::now() + std::chrono::seconds(10);
    for (;;) {
        pthread_mutex_lock(&lane->lock);
        if (lane->log_len == 0) {
            break;
        }
        pthread_mutex_unlock(&lane->lock);
        ASSERT_LT(clock::now(), end) << "the agent never took the log";
        usleep(1000);
    }
    lane->next_chan_seq += 1000;
    pthread_mutex_unlock(&lane->lock);

    unsigned long long before = direct();
    ASSERT_NO_FATAL_FAILURE(stream(1000));
    ASSERT_NO_FATAL_FAILURE(paced_until_direct(before + 200u));
    expect_all_arrive();
    EXPECT_GE(node_a_->counter("failovers"), 1u) << node_a_->status();
}

/*
 * A frame logged in the lane as a port that has no lane (a buggy process
 * writing as another): it is never delivered, and the frames around it
 * are. It used to join the channel's stream as it was and reach port 1
 * with the resend after the reset its missing bytes caused.
 */
TEST_F(uct_direct_test, a_frame_logged_as_a_port_without_the_lane_is_dropped)
{
    ASSERT_NO_FATAL_FAILURE(start("always"));
    ASSERT_NO_FATAL_FAILURE(paced(100));
    srm_lane_t *lane = mapped_lane();
    ASSERT_NE(nullptr, lane);
    srm_iface_addr_t to;
    ASSERT_EQ(UCS_OK, uct_iface_get_address(
                              iface_[1], reinterpret_cast<uct_iface_addr_t*>(&to)));

    const uint64_t forged_payload = ~0ull;
    srm_frame_hdr_t hdr;
    srm_frame_hdr_init(&hdr, SRM_FRAME_AM, sizeof(forged_payload));
    hdr.src_port = 4242;
    hdr.dst_port = to.port;
    hdr.dst_key  = to.key;
    hdr.am_id    = 9;
    pthread_mutex_lock(&lane->lock);
    hdr.chan_seq = lane->next_chan_seq;
    uint8_t *at  = lane->log + lane->log_len;
    memcpy(at, &hdr, sizeof(hdr));
    memcpy(at + sizeof(hdr), &forged_payload, sizeof(forged_payload));
    ASSERT_EQ(0, srm_lane_append(lane, sizeof(hdr) + sizeof(forged_payload)));
    lane->next_chan_seq++;
    pthread_mutex_unlock(&lane->lock);

    unsigned long long before = direct();
    ASSERT_NO_FATAL_FAILURE(stream(1000));
    ASSERT_NO_FATAL_FAILURE(paced_until_direct(before + 200u));
    expect_all_arrive(); /* the forged one would be one too many */
    std::string status = node_a_->status();
    EXPECT_NE(std::string::npos, status.find(" foreign 1 ")) << status;
}

/*
 * A record in a lane's receive log of a frame that nobody read: an AM for a
 * port without the lane, numbered as the next frame from port 0 (a buggy
 * process writing another's record). It must not be booked (its number's
 * real frame would be acknowledged unread, and dropped as sent twice when
 * it came), and the genuine records after it must be: the agent used to
 * stop at the first bad record, and the frames that port 1 had read after
 * it came again, 60 delivered twice and 641 out of order.
 */
TEST_F(uct_direct_test, a_frame_recorded_as_read_for_a_port_without_the_lane_loses_nothing)
{
    ASSERT_NO_FATAL_FAILURE(start("always"));
    ASSERT_NO_FATAL_FAILURE(ping_pong(20)); /* both ports map their lanes */
    srm_iface_addr_t from;
    ASSERT_EQ(UCS_OK, uct_iface_get_address(
                              iface_[0], reinterpret_cast<uct_iface_addr_t*>(&from)));
    /* The receiving side's lane: its agent publishes the order of port
     * 0's frames there. */
    srm_lane_t *lane = nullptr;
    const srm_lane_rx_port_t *rx_port = nullptr;
    auto end = clock::now() + std::chrono::seconds(10);
    while ((rx_port == nullptr) && (clock::now() < end)) {
        ASSERT_NO_FATAL_FAILURE(ping_pong(1));
        for (srm_lane_t *l : mapped_lanes()) {
            pthread_mutex_lock(&l->lock);
            for (uint32_t i = 0; i < l->rx_num_ports; ++i) {
                if (l->rx_ports[i].src_port == from.port) {
                    lane    = l;
                    rx_port = &l->rx_ports[i];
                }
            }
            pthread_mutex_unlock(&l->lock);
        }
    }
    ASSERT_NE(nullptr, rx_port) << "no lane publishes port 0's order";

    pthread_mutex_lock(&lane->lock);
    srm_frame_hdr_t hdr;
    srm_frame_hdr_init(&hdr, SRM_FRAME_AM, sizeof(uint64_t));
    hdr.src_port = rx_port->src_port;
    hdr.seq      = rx_port->expected;
    hdr.chan_seq = lane->rx_expected;
    hdr.dst_port = 4242;
    hdr.am_id    = 9;
    uint32_t taken = lane->rx_taken;
    ASSERT_LT(taken, SRM_LANE_RX_LOG);
    lane->rx_log[taken] = hdr;
    ASSERT_EQ(0, srm_lane_record_taken(lane, 1));
    srm_store_relaxed(&lane->kick, 1u);
    pthread_mutex_unlock(&lane->lock);

    ASSERT_NO_FATAL_FAILURE(stream(1000));
    ASSERT_NO_FATAL_FAILURE(paced(100));
    expect_all_arrive(); /* the frame numbered as the record was, too */
}

namespace {

/* A fresh path for an agent's UCX_SRM_LOG_FILE, per test and process. */
std::string agent_log_path(const char *test)
{
    std::string path = "/tmp/srm-gtest-" + std::string(test) + "-" +
                       std::to_string(getpid()) + ".log";
    unlink(path.c_str());
    return path;
}

/* The agent's log, when it was started with UCX_SRM_LOG_FILE=path. */
std::string read_file(const std::string &path)
{
    std::ifstream file(path);
    std::stringstream text;
    text << file.rdbuf();
    return text.str();
}

struct slow_pack_args {
    uint64_t     seq;
    unsigned     sleep_ms;
    const agent *asked;   /* asked for its status meanwhile, or null */
};

/* A child process, killed when the test ends however it ends. */
struct child_guard {
    pid_t pid;
    ~child_guard()
    {
        if (pid > 0) {
            kill(pid, SIGKILL);
            waitpid(pid, nullptr, 0);
        }
    }
};

/* A pack callback that takes its time, as a process stopped in it would,
 * and meanwhile asks an agent for its status (which needs every lane). */
size_t slow_pack(void *dest, void *arg)
{
    const auto *args = static_cast<const slow_pack_args*>(arg);
    if (args->asked != nullptr) {
        args->asked->status();
    }
    usleep(args->sleep_ms * 1000);
    memcpy(dest, &args->seq, sizeof(args->seq));
    return sizeof(args->seq);
}

} // namespace

TEST(srm_lane_log, a_seal_wins_or_loses_against_an_append_as_a_whole)
{
    std::unique_ptr<srm_lane_t> lane(new srm_lane_t());
    EXPECT_EQ(0, srm_lane_append(lane.get(), 48));
    EXPECT_EQ(0, srm_lane_append(lane.get(), 64));
    EXPECT_EQ(112u, srm_lane_seal(lane.get()));
    /* Sealed: an append fails and leaves the length alone. */
    EXPECT_EQ(-1, srm_lane_append(lane.get(), 48));
    EXPECT_EQ(112u | SRM_LANE_SEALED, lane->log_len);
    EXPECT_EQ(112u, srm_lane_seal(lane.get()));
}

TEST(srm_lane_log, a_seal_stops_the_record_of_frames_read_too)
{
    std::unique_ptr<srm_lane_t> lane(new srm_lane_t());
    EXPECT_EQ(0, srm_lane_record_taken(lane.get(), 3));
    EXPECT_EQ(0, srm_lane_record_taken(lane.get(), 1));
    EXPECT_EQ(4u, srm_lane_seal_len(&lane->rx_taken));
    /* A reader that finds the seal drops what it read: it comes again. */
    EXPECT_EQ(-1, srm_lane_record_taken(lane.get(), 2));
    EXPECT_EQ(4u | SRM_LANE_SEALED, lane->rx_taken);
}

TEST_F(uct_direct_test, receivers_read_their_messages_and_their_agents_sleep)
{
    /* Agents that never spin: every frame they read cost a wakeup. */
    ASSERT_NO_FATAL_FAILURE(start("auto", {"UCX_SRM_POLL=block"}));
    ASSERT_NO_FATAL_FAILURE(ping_pong(20)); /* both ports map their lanes */
    /* A receiver off the CPU for 5 ms (SRM_LANE_POLL_STALE_MS) counts as
     * gone, and its agent reads for it a while: under make check -j2 that
     * was 314 of 320 once. So rounds of 300 go until one meets the
     * counts, within 30 s. */
    auto deadline = std::chrono::steady_clock::now() +
                    std::chrono::seconds(30);
    unsigned long long taken_a, taken_b, wakeups_b;
    do {
        unsigned long long taken_a0   = node_a_->counter("taken");
        unsigned long long taken_b0   = node_b_->counter("taken");
        unsigned long long wakeups_b0 = node_b_->counter("wakeups");
        ASSERT_NO_FATAL_FAILURE(ping_pong(300));
        taken_a   = node_a_->counter("taken") - taken_a0;
        taken_b   = node_b_->counter("taken") - taken_b0;
        wakeups_b = node_b_->counter("wakeups") - wakeups_b0;
    } while (((taken_a < 250u) || (taken_b < 250u) || (wakeups_b >= 60u)) &&
             (std::chrono::steady_clock::now() < deadline));
    expect_all_arrive();
    /* Nearly every request and reply was taken from the socket by the
     * process it was for... */
    EXPECT_GE(taken_b, 250u) << node_b_->status();
    EXPECT_GE(taken_a, 250u) << node_a_->status();
    /* ...while the agent that would have read it did not listen. */
    EXPECT_LT(wakeups_b, 60u) << node_b_->status();
}

TEST_F(uct_direct_test, with_direct_recv_off_the_agents_read_everything)
{
    setenv("UCX_SRM_DIRECT_RECV", "n", 1);
    ASSERT_NO_FATAL_FAILURE(start("auto", {"UCX_SRM_POLL=block"}));
    ASSERT_NO_FATAL_FAILURE(ping_pong(20));
    unsigned long long wakeups_b = node_b_->counter("wakeups");
    ASSERT_NO_FATAL_FAILURE(ping_pong(300));
    expect_all_arrive();
    EXPECT_EQ(0u, node_a_->counter("taken")) << node_a_->status();
    EXPECT_EQ(0u, node_b_->counter("taken")) << node_b_->status();
    /* Each request wakes the agent that reads it. */
    EXPECT_GE(node_b_->counter("wakeups") - wakeups_b, 250u)
            << node_b_->status();
}

/* Frames an agent's bulk channel received, from its status. */
/* A counter of the node's bulk channel in the agent's status. */
static unsigned long long bulk_counter(const agent &node,
                                       const std::string &name)
{
    std::string status = node.status();
    size_t bulk        = status.find(" bulk ");
    EXPECT_NE(std::string::npos, bulk) << status;
    size_t at = (bulk == std::string::npos) ?
                        std::string::npos : status.find(" " + name + " ", bulk);
    EXPECT_NE(std::string::npos, at) << status;
    return (at == std::string::npos) ?
                   0 : std::strtoull(status.c_str() + at + name.size() + 2,
                                     nullptr, 10);
}

static unsigned long long bulk_rx_frames(const agent &node)
{
    return bulk_counter(node, "rx");
}

TEST_F(uct_direct_test, order_holds_when_receivers_read_one_channel_of_two)
{
    /* Messages over 1 KB take the bulk channel, the short ones between
     * them the small one; with the bulk lane off, only agents read the
     * bulk channel, while the short ones may be taken from the small. */
    setenv("UCX_SRM_DIRECT_BULK", "n", 1);
    ASSERT_NO_FATAL_FAILURE(start("always", {"UCX_SRM_LARGE_THRESH=1k"}));
    ASSERT_NO_FATAL_FAILURE(ping_pong(20));
    unsigned long long taken_b = node_b_->counter("taken");
    ASSERT_NO_FATAL_FAILURE(stream_mixed(3000));
    expect_all_arrive();
    EXPECT_GT(node_b_->counter("taken"), taken_b) << node_b_->status();
    /* Every third one came by the bulk channel. */
    EXPECT_EQ(1000u, bulk_rx_frames(*node_b_)) << node_b_->status();
}

/* Both lanes at once: every third message takes the bulk channel, and
 * both are written and read directly; the order holds across them (a
 * port's frame waits while its last one may still be in the other lane's
 * log). */
TEST_F(uct_direct_test, order_holds_when_both_channels_are_written_directly)
{
    setenv("UCX_SRM_DIRECT_BULK", "y", 1);
    ASSERT_NO_FATAL_FAILURE(start("always", {"UCX_SRM_LARGE_THRESH=1k"}));
    ASSERT_NO_FATAL_FAILURE(ping_pong(20));
    ASSERT_NO_FATAL_FAILURE(stream_mixed(3000));
    expect_all_arrive();
    EXPECT_EQ(1000u, bulk_rx_frames(*node_b_)) << node_b_->status();
    EXPECT_GT(bulk_counter(*node_a_, "direct"), 0u) << node_a_->status();
    EXPECT_GT(bulk_counter(*node_b_, "taken"), 0u) << node_b_->status();
}

/* A 64 KB message between two polling processes goes rank -> socket ->
 * rank on the bulk channel, as a small one does on the small channel
 * (UCX_SRM_DIRECT=auto, the default): neither agent carries it. With
 * DIRECT_BULK=n both agents do. */
TEST_F(uct_direct_test, a_large_message_skips_both_agents_on_the_bulk_channel)
{
    setenv("UCX_SRM_DIRECT_BULK", "y", 1);
    ASSERT_NO_FATAL_FAILURE(start("auto"));
    ASSERT_NO_FATAL_FAILURE(ping_pong(20));
    /* Not every one: the lane is shut for a moment while an agent writes
     * (an ack), and a send then goes by the ring; and the receiving agent
     * reads what arrives while the receiver is off the CPU, which on a
     * busy machine (make check -j2) was 84 of 100. So rounds of 100 go
     * until 60 went each way directly, within 30 s. */
    auto deadline = std::chrono::steady_clock::now() +
                    std::chrono::seconds(30);
    unsigned long long sent = 0;
    do {
        for (int i = 0; i < 100; ++i) {
            ASSERT_NO_FATAL_FAILURE(send_paced_zcopy(64 * 1024));
        }
        sent += 100;
    } while (((bulk_counter(*node_a_, "direct") < 60u) ||
              (bulk_counter(*node_b_, "taken") < 60u)) &&
             (std::chrono::steady_clock::now() < deadline));
    expect_all_arrive();
    EXPECT_EQ(sent, bulk_rx_frames(*node_b_)) << node_b_->status();
    EXPECT_GE(bulk_counter(*node_a_, "direct"), 60u) << node_a_->status();
    EXPECT_GE(bulk_counter(*node_b_, "taken"), 60u) << node_b_->status();
}

TEST_F(uct_direct_test, with_direct_bulk_off_the_agents_carry_large_messages)
{
    setenv("UCX_SRM_DIRECT_BULK", "n", 1);
    ASSERT_NO_FATAL_FAILURE(start("always"));
    ASSERT_NO_FATAL_FAILURE(ping_pong(20));
    for (int i = 0; i < 20; ++i) {
        ASSERT_NO_FATAL_FAILURE(send_paced_zcopy(64 * 1024));
    }
    expect_all_arrive();
    EXPECT_EQ(20u, bulk_rx_frames(*node_b_)) << node_b_->status();
    EXPECT_EQ(0u, bulk_counter(*node_a_, "direct")) << node_a_->status();
    EXPECT_EQ(0u, bulk_counter(*node_b_, "taken")) << node_b_->status();
    EXPECT_TRUE(mapped_lanes(kBulkLane).empty());
}

/* A process dies holding the bulk lane's lock (killed while writing or
 * reading its socket): the agent mends it at its next enter (the socket
 * may hold part of a frame: a new connection resends from the oldest
 * unacknowledged one), and large messages go on, directly again. */
TEST_F(uct_direct_test, a_writer_that_dies_holding_the_bulk_lock_stops_nothing)
{
    setenv("UCX_SRM_DIRECT_BULK", "y", 1);
    ASSERT_NO_FATAL_FAILURE(start("always"));
    ASSERT_NO_FATAL_FAILURE(ping_pong(20));
    for (int i = 0; i < 20; ++i) {
        ASSERT_NO_FATAL_FAILURE(send_paced_zcopy(16 * 1024));
    }
    srm_lane_t *lane = mapped_lane(kBulkLane);
    ASSERT_NE(nullptr, lane);

    ASSERT_NO_FATAL_FAILURE(die_holding(lane));

    unsigned long long before = bulk_counter(*node_a_, "direct");
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    while ((bulk_counter(*node_a_, "direct") < before + 50u) &&
           (std::chrono::steady_clock::now() < deadline)) {
        for (int i = 0; i < 20; ++i) {
            ASSERT_NO_FATAL_FAILURE(send_paced_zcopy(16 * 1024));
        }
    }
    expect_all_arrive();
    EXPECT_GE(bulk_counter(*node_a_, "failovers"), 1u) << node_a_->status();
    EXPECT_GE(bulk_counter(*node_a_, "direct"), before + 50u)
            << node_a_->status();
    EXPECT_EQ(0, pthread_mutex_trylock(&lane->lock));
    pthread_mutex_unlock(&lane->lock);
}

/* An 8 KB message is not one over LARGE_THRESH (8k): the AM header of the
 * layer above (up to 128 bytes, UCP's) does not count. Sent by zcopy, as
 * UCP sends it, it stays on the small channel and is written directly;
 * one byte more, and it takes the bulk channel. */
TEST_F(uct_direct_test, an_8k_message_and_its_header_stay_on_the_small_channel)
{
    ASSERT_NO_FATAL_FAILURE(start("always"));
    ASSERT_NO_FATAL_FAILURE(ping_pong(20));
    std::vector<char> header(128, 'h'), payload(8193, 'p');
    auto send_zcopy = [&](size_t length) {
        memcpy(header.data(), &sent_, sizeof(sent_));
        uct_iov_t iov = {};
        iov.buffer    = payload.data();
        iov.length    = length;
        iov.memh      = UCT_MEM_HANDLE_NULL;
        iov.count     = 1;
        ASSERT_TRUE(progress_until([&] {
            return uct_ep_am_zcopy(ep_, 9, header.data(),
                                   (unsigned)header.size(), &iov, 1, 0,
                                   nullptr) == UCS_OK;
        }, 10));
        ++sent_;
        ASSERT_TRUE(progress_until([&] { return received_ >= sent_; }, 10));
    };

    unsigned long long direct_before = direct();
    for (int i = 0; i < 50; ++i) {
        ASSERT_NO_FATAL_FAILURE(send_zcopy(8192));
    }
    /* Most of them: the lane is shut for a moment whenever the agent
     * writes (an ack), and a send then goes by the ring (36-39 of 50
     * direct were seen in about one run in ten; 0 if the lane refused
     * them). */
    EXPECT_GE(direct(), direct_before + 30u) << node_a_->status();
    EXPECT_EQ(0u, bulk_rx_frames(*node_b_));

    for (int i = 0; i < 20; ++i) {
        ASSERT_NO_FATAL_FAILURE(send_zcopy(8193));
    }
    EXPECT_EQ(20u, bulk_rx_frames(*node_b_));
    expect_all_arrive();
}

TEST_F(uct_direct_test, a_receiver_that_goes_to_sleep_is_still_woken)
{
    ASSERT_NO_FATAL_FAILURE(start("auto", {"UCX_SRM_POLL=block"}));
    ASSERT_NO_FATAL_FAILURE(ping_pong(20));
    std::vector<srm_lane_t*> lanes = mapped_lanes();
    ASSERT_EQ(2u, lanes.size());
    for (srm_lane_t *lane : lanes) {
        EXPECT_EQ(1u, srm_load_relaxed(&lane->rx_pollers));
    }

    /* Port 1 goes to sleep: it stops polling its lane... */
    int fd;
    ASSERT_EQ(UCS_OK, uct_iface_event_fd_get(iface_[1], &fd));
    ASSERT_EQ(UCS_OK, uct_iface_event_arm(iface_[1], UCT_EVENT_RECV));
    EXPECT_EQ(1u, srm_load_relaxed(&lanes[0]->rx_pollers) +
                          srm_load_relaxed(&lanes[1]->rx_pollers));
    /* ...so a message for it wakes it, through its agent. */
    ASSERT_EQ(UCS_OK, uct_ep_am_short(ep_, 9, sent_, "wake up", 7));
    ++sent_;
    struct pollfd pfd = {fd, POLLIN, 0};
    EXPECT_EQ(1, poll(&pfd, 1, 10000)) << node_b_->status();
    expect_all_arrive();
    /* Polling again, it reads for itself again. */
    ASSERT_NO_FATAL_FAILURE(ping_pong(20));
    for (srm_lane_t *lane : lanes) {
        EXPECT_EQ(1u, srm_load_relaxed(&lane->rx_pollers));
    }
}

TEST_F(uct_direct_test, a_writer_stopped_holding_the_lock_stops_nothing)
{
    std::string log = agent_log_path("lane-stopped");
    ASSERT_NO_FATAL_FAILURE(start("always", {"UCX_SRM_LOG_FILE=" + log}));
    ASSERT_NO_FATAL_FAILURE(paced(100));
    srm_lane_t *lane = mapped_lane();
    ASSERT_NE(nullptr, lane);

    /* A process that takes the lock and never lets go: stopped. */
    child_guard child = {fork()};
    if (child.pid == 0) {
        pthread_mutex_lock(&lane->lock);
        for (;;) {
            pause();
        }
    }
    ASSERT_GT(child.pid, 0);
    while (pthread_mutex_trylock(&lane->lock) == 0) {
        pthread_mutex_unlock(&lane->lock);
        usleep(1000);
    }

    unsigned long long before = direct();
    ASSERT_NO_FATAL_FAILURE(stream(1000));
    ASSERT_NO_FATAL_FAILURE(paced_until_direct(before + 200u));
    expect_all_arrive();

    EXPECT_NE(std::string::npos,
              read_file(log).find("held its direct lane for over"))
            << read_file(log);
    /* A new connection, and writers went on directly: through a new lane,
     * since the stopped process still holds the old one's lock. */
    EXPECT_GE(node_a_->counter("failovers"), 1u) << node_a_->status();
    EXPECT_GE(direct(), before + 200u) << node_a_->status();
    unlink(log.c_str());
}

TEST_F(uct_direct_test, a_frame_packed_for_a_retired_lane_goes_by_the_ring)
{
    std::string log = agent_log_path("lane-packed");
    ASSERT_NO_FATAL_FAILURE(start("always", {"UCX_SRM_LOG_FILE=" + log}));
    ASSERT_NO_FATAL_FAILURE(paced(50));
    srm_lane_t *lane = mapped_lane(); /* port 0's */
    ASSERT_NE(nullptr, lane);
    ASSERT_NO_FATAL_FAILURE(ping_pong(20));
    /* The agent reads the socket under the lane's lock too: let it finish
     * with the last reply, so the send below finds the lane free. */
    progress_until([] { return false; }, 0.05);
    ASSERT_EQ(1u, srm_load_acquire(&lane->open));

    /* The status request makes the agent want the lane the pack holds. */
    unsigned long long before = direct();
    slow_pack_args args = {sent_, 2 * SRM_LANE_HOLD_LIMIT_MS, node_a_.get()};
    ssize_t length      = uct_ep_am_bcopy(ep_, 9, slow_pack, &args, 0);
    ASSERT_EQ((ssize_t)sizeof(uint64_t), length);
    ++sent_;
    /* The lane was retired under the pack, and the message arrives: the
     * agent did not take it from the sealed log, so the ring carried it. */
    EXPECT_EQ(1u, srm_load_relaxed(&lane->retired));
    expect_all_arrive();
    EXPECT_NE(std::string::npos,
              read_file(log).find("held its direct lane for over"))
            << read_file(log);
    /* Direct sends go on through the new lane (the hold may also have
     * made the link look silent and replaced it: then through the lane of
     * the new connection, once it is up). */
    ASSERT_NO_FATAL_FAILURE(paced_until_direct(before + 50u));
    expect_all_arrive();
    EXPECT_GE(direct(), before + 50u) << node_a_->status();
    unlink(log.c_str());
}
