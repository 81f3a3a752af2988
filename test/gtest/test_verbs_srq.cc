/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The verbs wire's shared receive queue and send pool, on a real device:
 * queue pairs
 * connected to each other on the device that SRM_TEST_WIRE_DEVICE names
 * (test/system/test_vm_verbs.sh runs these on rxe in the soft-RoCE VM).
 * Without a device there is nothing to test: make check leaves the suite
 * out (GTEST_FILTER in test/gtest/Makefile.inc), and a run that asks for
 * it anyway fails here, rather than passing on nothing.
 */
extern "C" {
#include <ucx_srm/agent/srm_mirror.h>
#include <ucx_srm/common/srm_config.h>
#include <ucx_srm/common/srm_frame.h>
#include <ucx_srm/wire/srm_wire_verbs.h>
}

#include <gtest/gtest.h>

#include <sys/uio.h>
#include <time.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <vector>

namespace {

/* The defaults of UCX_SRM_VERBS_RECV_BUFS and UCX_SRM_VERBS_SEND_BUFS. */
const unsigned kRecvBufs    = 256;
const unsigned kRecvReserve = kRecvBufs / 4;
const unsigned kRecvLow     = kRecvBufs / 8;
const unsigned kSendBufs    = 128;

double now_s()
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* SRM_TEST_TIME_SCALE: an emulated machine is ten times slower or more. */
double time_limit_s(double seconds)
{
    const char *scale = getenv("SRM_TEST_TIME_SCALE");
    double value      = (scale != nullptr) ? atof(scale) : 1.0;

    return seconds * ((value >= 1.0) ? value : 1.0);
}

struct dev_closer {
    void operator()(srm_wire_verbs_dev_t *dev) const
    {
        srm_wire_verbs_dev_close(dev);
    }
};

struct qp_destroyer {
    void operator()(srm_wire_verbs_qp_t *qp) const
    {
        srm_wire_verbs_qp_destroy(qp);
    }
};

using dev_ptr = std::unique_ptr<srm_wire_verbs_dev_t, dev_closer>;
using qp_ptr  = std::unique_ptr<srm_wire_verbs_qp_t, qp_destroyer>;

/* Byte i of stream `id`: a pattern that shows a lost, doubled or
 * misplaced piece. */
uint8_t pattern(unsigned id, size_t i)
{
    return static_cast<uint8_t>((i * 131u) + (i >> 13) + id * 17u);
}

class verbs_srq : public ::testing::Test {
protected:
    void SetUp() override
    {
        const char *spec = getenv("SRM_TEST_WIRE_DEVICE");
        char netdev[32];
        srm_wire_verbs_dev_t *dev = nullptr;

        ASSERT_TRUE((spec != nullptr) && (*spec != '\0'))
                << "SRM_TEST_WIRE_DEVICE names no verbs device: these tests "
                   "need one (test_vm_verbs runs them on rxe)";
        ASSERT_TRUE(srm_wire_verbs_built()) << "built without libibverbs";
        srm_wire_verbs_dev_params_t params = {SRM_XRC_NO, kRecvBufs, kSendBufs};

        ASSERT_EQ(0, srm_wire_verbs_dev_open(spec, &params, &dev, netdev,
                                             sizeof(netdev)));
        m_dev.reset(dev);
    }

    const srm_wire_verbs_srq_stats_t &srq() const
    {
        return *srm_wire_verbs_dev_srq_stats(m_dev.get());
    }

    const srm_wire_verbs_tx_stats_t &tx() const
    {
        return *srm_wire_verbs_dev_tx_stats(m_dev.get());
    }

    /* Two queue pairs of the device, connected to each other. */
    void connected_pair(qp_ptr *a, qp_ptr *b)
    {
        srm_hello_qp_t info_a, info_b;

        a->reset(srm_wire_verbs_qp_create(m_dev.get(), 0));
        b->reset(srm_wire_verbs_qp_create(m_dev.get(), 1));
        ASSERT_TRUE(*a && *b);
        srm_wire_verbs_qp_local(a->get(), &info_a);
        srm_wire_verbs_qp_local(b->get(), &info_b);
        ASSERT_EQ(0, srm_wire_verbs_qp_connect(a->get(), &info_b));
        ASSERT_EQ(0, srm_wire_verbs_qp_connect(b->get(), &info_a));
    }

    /* Sends what room there is of stream id's bytes [*sent, total). */
    void send_some(srm_wire_verbs_qp_t *qp, unsigned id, size_t total,
                   size_t *sent)
    {
        uint8_t buf[4 * SRM_WIRE_VERBS_SLOT_SIZE];
        size_t len = std::min(sizeof(buf), total - *sent), i;
        struct iovec iov;
        ssize_t got;

        if (len == 0) {
            ASSERT_EQ(0, srm_wire_verbs_qp_poll(qp));
            return;
        }
        for (i = 0; i < len; ++i) {
            buf[i] = pattern(id, *sent + i);
        }
        iov.iov_base = buf;
        iov.iov_len  = len;
        got          = srm_wire_verbs_qp_sendv(qp, &iov, 1);
        ASSERT_GE(got, 0) << srm_wire_verbs_qp_error(qp);
        *sent += static_cast<size_t>(got);
    }

    /* Reads what arrived of stream id, checking every byte. */
    void read_some(srm_wire_verbs_qp_t *qp, unsigned id, size_t *received)
    {
        std::vector<uint8_t> buf(64 * 1024);
        ssize_t got = srm_wire_verbs_qp_recv(qp, buf.data(), buf.size());
        ssize_t i;

        ASSERT_GE(got, 0) << srm_wire_verbs_qp_error(qp);
        for (i = 0; i < got; ++i) {
            ASSERT_EQ(pattern(id, *received + i), buf[i])
                    << "stream " << id << " byte " << (*received + i);
        }
        *received += static_cast<size_t>(got);
    }

    dev_ptr m_dev;
};

TEST_F(verbs_srq, buffer_counts_the_device_cannot_have_are_refused)
{
    const char *spec = getenv("SRM_TEST_WIRE_DEVICE");
    const srm_wire_verbs_dev_params_t bad[] = {
        {SRM_XRC_NO, SRM_WIRE_VERBS_MIN_RECV_BUFS - 1, kSendBufs},
        {SRM_XRC_NO, kRecvBufs, SRM_WIRE_VERBS_MIN_SEND_BUFS - 1},
        {SRM_XRC_NO, 1u << 30, kSendBufs}, /* deeper than any device */
    };
    char netdev[32];
    srm_wire_verbs_dev_t *dev;

    for (const srm_wire_verbs_dev_params_t &params : bad) {
        dev = nullptr;
        EXPECT_EQ(-1, srm_wire_verbs_dev_open(spec, &params, &dev, netdev,
                                              sizeof(netdev)))
                << params.recv_bufs << " receive, " << params.send_bufs
                << " send buffers";
        EXPECT_EQ(nullptr, dev);
    }
}

TEST_F(verbs_srq, queue_pairs_share_one_receive_queue)
{
    const unsigned pairs = 4;
    const size_t total   = 256 * 1024;
    qp_ptr a[pairs], b[pairs];
    size_t sent[pairs] = {}, received[pairs] = {};
    unsigned p, done = 0;
    double deadline;

    EXPECT_EQ(kRecvBufs + kRecvReserve, srq().slots);
    EXPECT_EQ(kRecvBufs, srq().posted);
    for (p = 0; p < pairs; ++p) {
        connected_pair(&a[p], &b[p]);
    }
    /* Eight queue pairs and still the one queue: no buffers per pair. */
    EXPECT_EQ(kRecvBufs + kRecvReserve, srq().slots);
    EXPECT_EQ(kRecvBufs, srq().posted);

    deadline = now_s() + time_limit_s(20);
    while ((done < pairs) && (now_s() < deadline)) {
        done = 0;
        for (p = 0; p < pairs; ++p) {
            send_some(a[p].get(), p, total, &sent[p]);
            read_some(b[p].get(), p, &received[p]);
            done += (received[p] == total);
        }
    }
    for (p = 0; p < pairs; ++p) {
        EXPECT_EQ(total, received[p]) << "pair " << p;
    }
    /* Every buffer read went back in. */
    EXPECT_EQ(0u, srq().held);
    EXPECT_EQ(kRecvBufs, srq().posted);
    EXPECT_EQ(0u, srq().spilled_bytes);
    EXPECT_GT(srq().refills, 1u);
}

/*
 * A link whose input is not read (its receiver waits for room) keeps
 * QP_HELD buffers and has the rest copied aside, so the queue never runs
 * dry and the other pairs go on. Without that the unread pair would take
 * every buffer, and both pairs would wait on RNR.
 */
TEST_F(verbs_srq, an_unread_queue_pair_does_not_starve_the_others)
{
    const size_t stalled_total =
            2 * (kRecvBufs + kRecvReserve) *
            SRM_WIRE_VERBS_SLOT_SIZE;
    const size_t flowing_total = 1024 * 1024;
    qp_ptr sa, sb, fa, fb;
    size_t stalled_sent = 0, stalled_received = 0;
    size_t flowing_sent = 0, flowing_received = 0;
    double deadline;

    connected_pair(&sa, &sb);
    connected_pair(&fa, &fb);
    deadline = now_s() + time_limit_s(30);
    while (((stalled_sent < stalled_total) ||
            (flowing_received < flowing_total)) &&
           (now_s() < deadline)) {
        send_some(sa.get(), 1, stalled_total, &stalled_sent);
        ASSERT_EQ(0, srm_wire_verbs_qp_poll(sb.get())); /* polled, never read */
        send_some(fa.get(), 2, flowing_total, &flowing_sent);
        read_some(fb.get(), 2, &flowing_received);
        /* The unread pair's share, and what the read pair's sender can
         * have in flight. */
        ASSERT_LE(srq().held,
                  SRM_WIRE_VERBS_QP_HELD + SRM_WIRE_VERBS_SEND_SLOTS);
    }
    EXPECT_EQ(flowing_total, flowing_received)
            << "the pair that was read stalled behind the one that was not";
    EXPECT_EQ(stalled_total, stalled_sent)
            << "the unread pair's sender waited for receive buffers";
    EXPECT_LE(srq().held, SRM_WIRE_VERBS_QP_HELD);
    EXPECT_GT(srq().spilled_bytes, 0u);

    /* Read at last: all of it, in order. */
    deadline = now_s() + time_limit_s(20);
    while ((stalled_received < stalled_total) && (now_s() < deadline)) {
        read_some(sb.get(), 1, &stalled_received);
    }
    EXPECT_EQ(stalled_total, stalled_received);
    EXPECT_EQ(0u, srq().held);
    EXPECT_EQ(kRecvBufs, srq().posted);
}

TEST_F(verbs_srq, a_destroyed_queue_pair_gives_its_buffers_back)
{
    const size_t total = 10 * SRM_WIRE_VERBS_SLOT_SIZE;
    qp_ptr a, b;
    size_t sent = 0;
    double deadline;

    connected_pair(&a, &b);
    deadline = now_s() + time_limit_s(10);
    while ((srq().held < 10) && (now_s() < deadline)) {
        send_some(a.get(), 3, total, &sent);
        ASSERT_EQ(0, srm_wire_verbs_qp_poll(b.get()));
    }
    ASSERT_EQ(10u, srq().held);
    EXPECT_EQ(kRecvBufs, srq().posted); /* refilled meanwhile */
    EXPECT_EQ(total, srm_wire_verbs_qp_pending(b.get()));

    b.reset();
    EXPECT_EQ(0u, srq().held);
    EXPECT_EQ(kRecvBufs, srq().posted);
}

TEST_F(verbs_srq, a_queue_pair_in_error_fails_and_keeps_no_buffer)
{
    const size_t total = 4 * SRM_WIRE_VERBS_SLOT_SIZE;
    qp_ptr a, b;
    size_t sent = 0, received = 0;
    double deadline;

    connected_pair(&a, &b);
    deadline = now_s() + time_limit_s(10);
    while ((received < total) && (now_s() < deadline)) {
        send_some(a.get(), 4, total, &sent);
        read_some(b.get(), 4, &received);
    }
    ASSERT_EQ(total, received);

    srm_wire_verbs_qp_force_error(b.get());
    std::vector<uint8_t> buf(SRM_WIRE_VERBS_SLOT_SIZE);
    deadline = now_s() + time_limit_s(5);
    while ((srm_wire_verbs_qp_recv(b.get(), buf.data(), buf.size()) >= 0) &&
           (now_s() < deadline)) {
        /* the error shows once its flushed completions are polled */
    }
    EXPECT_EQ(-1, srm_wire_verbs_qp_recv(b.get(), buf.data(), buf.size()));
    EXPECT_STRNE("", srm_wire_verbs_qp_error(b.get()));
    b.reset();
    EXPECT_EQ(0u, srq().held);
    EXPECT_EQ(kRecvBufs, srq().posted);
}

/*
 * Receives the agent has not collected yet leave the queue short: below
 * kRecvLow the device says so, and the reserve goes in.
 */
TEST_F(verbs_srq, a_queue_running_low_gets_its_reserve)
{
    const size_t total = (kRecvBufs - kRecvLow + 8) *
                         (size_t)SRM_WIRE_VERBS_SLOT_SIZE;
    qp_ptr a, b;
    size_t sent = 0, received = 0;
    double deadline;

    connected_pair(&a, &b);
    deadline = now_s() + time_limit_s(10);
    while ((srq().low_water == 0) && (now_s() < deadline)) {
        send_some(a.get(), 6, total, &sent); /* b's completions wait */
        srm_wire_verbs_dev_async(m_dev.get());
    }
    ASSERT_EQ(1u, srq().low_water) << "no low-water event with " << sent
                                   << " bytes in receives not collected";
    EXPECT_EQ(srq().slots, srq().posted) << "the reserve did not go in";

    deadline = now_s() + time_limit_s(10);
    while ((received < total) && (now_s() < deadline)) {
        send_some(a.get(), 6, total, &sent);
        read_some(b.get(), 6, &received);
    }
    EXPECT_EQ(total, received);
    EXPECT_EQ(0u, srq().held);
    EXPECT_EQ(srq().slots, srq().posted); /* the reserve stays posted */
}

/*
 * Quiet links hold send buffers whose sends asked for no completion. When
 * they hold the whole pool, a link with data to send must still get some:
 * the quiet ones are made to complete (an empty signaled send each), and
 * the stream goes on.
 */
TEST_F(verbs_srq, quiet_links_give_the_send_pool_back_to_a_busy_one)
{
    /* Sends 1..7 of a queue pair ask for no completion: together they
     * hold exactly the pool, and none of them ran out. */
    const unsigned per_quiet = SRM_WIRE_VERBS_SEND_SLOTS / 4 - 1;
    const unsigned quiet     = (kSendBufs + per_quiet - 1) /
                               per_quiet;
    const size_t stream      = 1024 * 1024;
    std::vector<qp_ptr> qa(quiet), qb(quiet);
    std::vector<size_t> qsent(quiet), qreceived(quiet), qtotal(quiet);
    qp_ptr a, b;
    size_t sent = 0, received = 0;
    unsigned q;
    double deadline;

    EXPECT_EQ(kSendBufs, tx().slots);
    EXPECT_EQ(kSendBufs, tx().free);
    for (q = 0; q < quiet; ++q) {
        qtotal[q] = ((q + 1 < quiet) ? per_quiet :
                     kSendBufs - per_quiet * (quiet - 1)) *
                    SRM_WIRE_VERBS_SLOT_SIZE;
        connected_pair(&qa[q], &qb[q]);
    }
    connected_pair(&a, &b);
    deadline = now_s() + time_limit_s(10);
    while ((tx().free > 0) && (now_s() < deadline)) {
        for (q = 0; q < quiet; ++q) {
            send_some(qa[q].get(), 10 + q, qtotal[q], &qsent[q]);
            read_some(qb[q].get(), 10 + q, &qreceived[q]);
        }
    }
    ASSERT_EQ(0u, tx().free) << "the quiet links did not take the pool";
    EXPECT_EQ(0u, tx().reclaims);

    deadline = now_s() + time_limit_s(20);
    while ((received < stream) && (now_s() < deadline)) {
        send_some(a.get(), 5, stream, &sent);
        read_some(b.get(), 5, &received);
        for (q = 0; q < quiet; ++q) {
            ASSERT_EQ(0, srm_wire_verbs_qp_poll(qa[q].get()));
            read_some(qb[q].get(), 10 + q, &qreceived[q]);
        }
    }
    EXPECT_EQ(stream, received) << "the busy link found no send buffer";
    for (q = 0; q < 100; ++q) {
        ASSERT_EQ(0,
                  srm_wire_verbs_qp_poll(a.get())); /* its last completions */
    }
    EXPECT_GT(tx().waits, 0u);
    EXPECT_GE(tx().reclaims, quiet - 1);
    for (q = 0; q < quiet; ++q) {
        EXPECT_EQ(qsent[q], qreceived[q]) << "quiet pair " << q;
    }
    /* Only the stream's last unsignaled sends may still hold buffers. */
    EXPECT_GE(tx().free, kSendBufs - per_quiet);
    a.reset();
    EXPECT_EQ(kSendBufs, tx().free) << "a destroyed queue pair "
                                                "kept send buffers";
}

/*
 * A channel's stream as the agent sends it: a header of the link's own
 * (not registered) in front of a run of the registered stream buffer,
 * which goes round the buffer's end. The run is sent in place, the header
 * inline, nothing through the pool, and every byte arrives in order.
 */
TEST_F(verbs_srq, a_registered_stream_is_sent_in_place)
{
    const size_t run = 20000; /* not a divisor of the buffer: runs cross */
    struct mr_deleter {
        void operator()(srm_wire_verbs_mr_t *mr) const
        {
            srm_wire_verbs_mr_dereg(mr);
        }
    };
    std::unique_ptr<srm_wire_verbs_mr_t, mr_deleter> mr;
    std::vector<uint8_t> expect, got(64 * 1024);
    uint8_t header[24];
    srm_mirror_t stream = {};
    uint64_t tail = 0;
    size_t received = 0, sent, i;
    unsigned round, crossed = 0;
    qp_ptr a, b;
    ssize_t n;
    double deadline;

    connected_pair(&a, &b);
    ASSERT_EQ(UCS_OK, srm_mirror_create(&stream, 64 * 1024));
    mr.reset(srm_wire_verbs_mr_reg_send(m_dev.get(), stream.base,
                                        2 * stream.size));
    ASSERT_TRUE(mr) << "registering the stream buffer failed";
    const srm_wire_verbs_mr_t *mrs[2] = {nullptr, mr.get()};

    deadline = now_s() + time_limit_s(20);
    for (round = 0; round < 12; ++round) {
        for (i = 0; i < sizeof(header); ++i) {
            header[i] = pattern(round, i);
            expect.push_back(header[i]);
        }
        for (i = 0; i < run; ++i) {
            srm_mirror_at(&stream, tail)[i] = pattern(100 + round, i);
            expect.push_back(pattern(100 + round, i));
        }
        crossed += ((tail & (stream.size - 1)) + run > stream.size);
        struct iovec iov[2] = {{header, sizeof(header)},
                               {srm_mirror_at(&stream, tail), run}};
        for (sent = 0; sent < sizeof(header) + run;) {
            /* What is left of the two, from where the last call stopped. */
            struct iovec left[2];
            int cnt = 0;
            size_t skip = sent;
            for (i = 0; i < 2; ++i) {
                if (skip >= iov[i].iov_len) {
                    skip -= iov[i].iov_len;
                    continue;
                }
                left[cnt].iov_base = (uint8_t*)iov[i].iov_base + skip;
                left[cnt].iov_len  = iov[i].iov_len - skip;
                mrs[cnt]           = (i == 0) ? nullptr : mr.get();
                ++cnt;
                skip = 0;
            }
            n = srm_wire_verbs_qp_sendv_mr(a.get(), left, mrs, cnt);
            ASSERT_GE(n, 0) << srm_wire_verbs_qp_error(a.get());
            sent += (size_t)n;
            ASSERT_LT(now_s(), deadline) << "round " << round << " stuck";
        }
        tail += run;
        /* The buffer's bytes may change only once the peer has them. */
        while (received < expect.size()) {
            n = srm_wire_verbs_qp_recv(b.get(), got.data(), got.size());
            ASSERT_GE(n, 0) << srm_wire_verbs_qp_error(b.get());
            for (i = 0; i < (size_t)n; ++i) {
                ASSERT_EQ(expect[received + i], got[i])
                        << "byte " << (received + i) << ", round " << round;
            }
            received += (size_t)n;
            ASSERT_EQ(0, srm_wire_verbs_qp_poll(a.get()));
            ASSERT_LT(now_s(), deadline) << "round " << round << " stuck";
        }
    }
    EXPECT_GT(crossed, 2u);
    const srm_wire_verbs_stats_t *stats = srm_wire_verbs_qp_stats(a.get());
    /* 20000 bytes are three units: 8 KB, 8 KB and the rest. */
    EXPECT_EQ(3u * round, stats->in_place_wrs);
    EXPECT_EQ(round, stats->inline_wrs);
    EXPECT_EQ(stats->send_wrs, stats->in_place_wrs + stats->inline_wrs);
    EXPECT_EQ(kSendBufs, tx().free);
    EXPECT_EQ(0u, tx().waits);
    a.reset();
    b.reset();
    mr.reset();
    srm_mirror_destroy(&stream);
}

} // namespace
