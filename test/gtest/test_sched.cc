/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The agent's scheduler: deficit round robin in quantum units over TX
 * rings. Fairness: a sender of small frames is not starved by a sender of
 * large ones, and bytes are shared evenly between saturated senders.
 */
extern "C" {
#include <ucx_srm/agent/srm_sched.h>
}

#include <gtest/gtest.h>

#include <cstring>
#include <map>
#include <vector>

namespace {

struct sender {
    srm_ring_shared_t    shared;
    std::vector<uint8_t> data;
    srm_ring_t           prod;
    srm_sched_queue_t    queue;
    uint32_t             frame_size;
    uint32_t             next_seq = 0;

    sender(uint32_t size, uint32_t frame) :
        data(size), frame_size(frame)
    {
        srm_ring_shared_reset(&shared);
        srm_ring_init_producer(&prod, &shared, data.data(), size);
        std::memset(&queue, 0, sizeof(queue));
        srm_ring_init_consumer(&queue.ring, &shared, data.data(), size);
        queue.owner = this;
    }

    /* Keeps the ring as full as it goes. */
    void fill()
    {
        push(UINT32_MAX);
    }

    void push(uint32_t count)
    {
        srm_frame_hdr_t *hdr;
        while ((count-- > 0) &&
               (srm_ring_reserve(&prod, srm_frame_record_size(frame_size),
                                 &hdr) == SRM_RING_OK)) {
            std::memset(hdr, 0, sizeof(*hdr));
            hdr->magic   = SRM_FRAME_MAGIC;
            hdr->version = SRM_FRAME_VERSION;
            hdr->type    = SRM_FRAME_AM;
            hdr->length  = frame_size;
            hdr->seq     = next_seq++;
            srm_ring_commit(&prod, srm_frame_record_size(frame_size));
        }
    }
};

struct sink {
    std::map<void*, uint64_t> bytes, frames;
    std::map<void*, uint32_t> next_seq;
    int block_after = -1; /* deliveries before reporting BLOCKED */
    std::vector<void*> order;
};

srm_sched_result_t deliver(void *arg, srm_sched_queue_t *queue,
                           const srm_frame_hdr_t *hdr, const void *)
{
    sink *s = static_cast<sink*>(arg);
    if (s->block_after == 0) {
        return SRM_SCHED_BLOCKED;
    }
    if (s->block_after > 0) {
        --s->block_after;
    }
    EXPECT_EQ(s->next_seq[queue->owner]++, hdr->seq) << "order broken";
    s->bytes[queue->owner] += sizeof(*hdr) + hdr->length;
    s->frames[queue->owner]++;
    s->order.push_back(queue->owner);
    return SRM_SCHED_DELIVERED;
}

class sched_test : public ::testing::Test {
protected:
    void SetUp() override { srm_sched_init(&sched_, 8192, 64 * 1024); }
    void TearDown() override { srm_sched_cleanup(&sched_); }

    unsigned round()
    {
        srm_sched_queue_t *failed;
        unsigned n = srm_sched_round(&sched_, deliver, &sink_, &failed);
        EXPECT_EQ(nullptr, failed);
        return n;
    }

    srm_sched_t sched_;
    sink        sink_;
};

} // namespace

TEST_F(sched_test, small_sender_is_not_starved_by_a_bulk_sender)
{
    sender bulk(1 << 20, 64 * 1024 - 64); /* 64 KB frames */
    sender small(1 << 16, 8);
    ASSERT_EQ(UCS_OK, srm_sched_add(&sched_, &bulk.queue));
    ASSERT_EQ(UCS_OK, srm_sched_add(&sched_, &small.queue));

    for (int r = 0; r < 64; ++r) {
        bulk.fill();
        if (r % 4 == 0) {
            small.push(20); /* the slow one sends only now and then */
        }
        round();
        /* Every burst of the small sender goes out in the round it came. */
        ASSERT_EQ(small.next_seq, sink_.frames[&small]) << "round " << r;
    }
    /* The bulk sender still got its share: 64 rounds x 8 KB = 8 frames. */
    EXPECT_GE(sink_.frames[&bulk], 7u);
    EXPECT_LE(sink_.frames[&bulk], 9u);
}

TEST_F(sched_test, saturated_senders_share_bytes_evenly)
{
    sender a(1 << 20, 100);
    sender b(1 << 20, 8000);
    sender c(1 << 20, 30000);
    ASSERT_EQ(UCS_OK, srm_sched_add(&sched_, &a.queue));
    ASSERT_EQ(UCS_OK, srm_sched_add(&sched_, &b.queue));
    ASSERT_EQ(UCS_OK, srm_sched_add(&sched_, &c.queue));

    for (int r = 0; r < 400; ++r) {
        a.fill();
        b.fill();
        c.fill();
        round();
    }
    double total = sink_.bytes[&a] + sink_.bytes[&b] + sink_.bytes[&c];
    for (sender *s : {&a, &b, &c}) {
        double share = sink_.bytes[s] / total;
        EXPECT_NEAR(1.0 / 3, share, 0.03) << "frame size " << s->frame_size;
    }
}

TEST_F(sched_test, frame_larger_than_quantum_is_reported_as_pending_work)
{
    sender big(1 << 20, 64 * 1024 - 64);
    ASSERT_EQ(UCS_OK, srm_sched_add(&sched_, &big.queue));
    big.push(1);

    unsigned rounds = 0;
    while (sink_.frames[&big] == 0) {
        unsigned delivered = round();
        ++rounds;
        /* A round that only builds credit must still say work is left. */
        EXPECT_TRUE((delivered > 0) || (sched_.saving == 1)) << rounds;
        ASSERT_LT(rounds, 100u);
    }
    EXPECT_EQ(8u, rounds) << "64 KB in 8 KB units";
    round();
    EXPECT_EQ(0u, sched_.saving) << "an empty queue is not waiting";
}

TEST_F(sched_test, blocked_queue_keeps_its_frame_and_order)
{
    sender a(1 << 16, 100);
    ASSERT_EQ(UCS_OK, srm_sched_add(&sched_, &a.queue));
    a.fill();
    uint32_t queued   = a.next_seq;
    sink_.block_after = 3;
    round();
    EXPECT_EQ(3u, sink_.frames[&a]);
    EXPECT_TRUE(a.queue.blocked);

    sink_.block_after = -1;
    while (sink_.frames[&a] < queued) {
        ASSERT_GT(round(), 0u);
    }
    EXPECT_FALSE(a.queue.blocked);
}

TEST_F(sched_test, corrupt_ring_is_reported_and_others_keep_going)
{
    sender good(1 << 16, 100), bad(1 << 16, 100);
    ASSERT_EQ(UCS_OK, srm_sched_add(&sched_, &good.queue));
    ASSERT_EQ(UCS_OK, srm_sched_add(&sched_, &bad.queue));
    good.fill();
    bad.fill();
    bad.data[0] = 0; /* breaks the first frame's magic */

    srm_sched_queue_t *failed = nullptr;
    for (int i = 0; (i < 4) && (failed == nullptr); ++i) {
        srm_sched_round(&sched_, deliver, &sink_, &failed);
    }
    ASSERT_EQ(&bad.queue, failed);
    srm_sched_remove(&sched_, &bad.queue);

    uint32_t queued = good.next_seq;
    while (sink_.frames[&good] < queued) {
        ASSERT_GT(round(), 0u);
    }
    EXPECT_EQ(0u, sink_.frames[&bad]);
}

TEST_F(sched_test, removing_queues_keeps_round_robin_order)
{
    std::vector<sender*> senders;
    for (int i = 0; i < 5; ++i) {
        senders.push_back(new sender(1 << 16, 8000));
        ASSERT_EQ(UCS_OK, srm_sched_add(&sched_, &senders.back()->queue));
    }
    srm_sched_remove(&sched_, &senders[2]->queue);
    srm_sched_remove(&sched_, &senders[0]->queue);
    for (sender *s : senders) {
        s->fill();
    }
    round();
    /* One 8 KB quantum each: one 8000-byte frame each, in add order. */
    std::vector<void*> want = {senders[1], senders[3], senders[4]};
    EXPECT_EQ(want, sink_.order);
    for (sender *s : senders) {
        delete s;
    }
}

namespace {

/* Keeps every frame it is given in its ring, noting the ids. */
struct keeper {
    std::vector<uint32_t> ids;
};

srm_sched_result_t keep_frame(void *arg, srm_sched_queue_t *queue,
                              const srm_frame_hdr_t *, const void *)
{
    uint32_t id;
    if (srm_sched_keep(queue, &id) != UCS_OK) {
        return SRM_SCHED_BLOCKED;
    }
    static_cast<keeper*>(arg)->ids.push_back(id);
    return SRM_SCHED_DELIVERED;
}

} // namespace

TEST_F(sched_test, kept_frames_hold_the_ring_until_the_oldest_is_freed)
{
    /* 4 KB frames in a 64 KB ring: the ring wraps (a PAD) within 20. */
    const uint32_t frame = 4000;
    const uint64_t record = srm_frame_record_size(frame);
    sender s(1 << 16, frame);
    keeper k;
    srm_sched_queue_t *failed;
    ASSERT_EQ(UCS_OK, srm_sched_add(&sched_, &s.queue));

    s.push(10);
    while (srm_sched_round(&sched_, keep_frame, &k, &failed) > 0) {
    }
    ASSERT_EQ(10u, k.ids.size());
    /* Passed, but nothing freed: the producer sees a ring with 10 frames. */
    EXPECT_EQ(10 * record, srm_ring_used(&s.shared));

    /* Freed out of order: the tail waits for the oldest... */
    EXPECT_EQ(0, srm_sched_free_kept(&s.queue, k.ids[1]));
    EXPECT_EQ(0, srm_sched_free_kept(&s.queue, k.ids[2]));
    EXPECT_EQ(10 * record, srm_ring_used(&s.shared));
    /* ...then moves past every freed one behind it. */
    EXPECT_EQ(1, srm_sched_free_kept(&s.queue, k.ids[0]));
    EXPECT_EQ(7 * record, srm_ring_used(&s.shared));

    /* More frames wrap around the end of the ring while 7 stay kept. */
    s.push(8);
    while (srm_sched_round(&sched_, keep_frame, &k, &failed) > 0) {
    }
    ASSERT_EQ(18u, k.ids.size());
    EXPECT_EQ(0, srm_sched_free_kept(&s.queue, k.ids[17]));
    for (size_t i = 3; i < 17; ++i) {
        EXPECT_EQ(1, srm_sched_free_kept(&s.queue, k.ids[i])) << i;
    }
    /* All freed: the ring is empty, the pad at its end included. */
    EXPECT_EQ(0u, srm_ring_used(&s.shared));
    EXPECT_EQ(0, s.queue.ring.keeping);
}

TEST_F(sched_test, a_queue_keeps_at_most_its_limit_and_then_waits)
{
    sender s(1 << 20, 100);
    keeper k;
    srm_sched_queue_t *failed;
    ASSERT_EQ(UCS_OK, srm_sched_add(&sched_, &s.queue));

    s.push(SRM_SCHED_KEPT_MAX + 5);
    while (srm_sched_round(&sched_, keep_frame, &k, &failed) > 0) {
    }
    EXPECT_EQ(SRM_SCHED_KEPT_MAX, k.ids.size());
    EXPECT_TRUE(s.queue.blocked);
    EXPECT_EQ(1, srm_sched_free_kept(&s.queue, k.ids[0]));
    while (srm_sched_round(&sched_, keep_frame, &k, &failed) > 0) {
    }
    EXPECT_EQ(SRM_SCHED_KEPT_MAX + 1, k.ids.size());
}
