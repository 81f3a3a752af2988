/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The wire form of an XRC target and the sending agent's table of targets
 * (built with configure --enable-xrc). The XRC verbs themselves need a
 * device with XRC (ConnectX); soft-RoCE has none, so nothing here creates
 * an XRC object.
 */
extern "C" {
#include <ucx_srm/common/srm_frame.h>
#include <ucx_srm/wire/srm_wire_verbs.h>
#include <ucx_srm/wire/srm_wire_xrc_target.h>
}

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

static_assert(sizeof(srm_xrc_target_wire_t) == 32, "32 bytes on the wire");
static_assert(sizeof(srm_frame_hdr_t) + sizeof(srm_xrc_target_wire_t) <=
                      SRM_WIRE_VERBS_SLOT_SIZE,
              "a frame announcing one target fits in one verbs SEND");

namespace {

const uint64_t kNode = 0x0102030405060708ull;

srm_xrc_target_t target(uint64_t node, uint32_t port, uint32_t srqn,
                        uint32_t generation)
{
    srm_xrc_target_t t;
    t.node_id    = node;
    t.port       = port;
    t.srqn       = srqn;
    t.generation = generation;
    return t;
}

std::vector<uint8_t> encoded(srm_xrc_target_op_t op,
                             const srm_xrc_target_t &t)
{
    srm_xrc_target_wire_t wire;
    EXPECT_EQ(SRM_XRC_TARGET_OK, srm_xrc_target_encode(op, &t, &wire));
    const uint8_t *bytes = reinterpret_cast<const uint8_t*>(&wire);
    return std::vector<uint8_t>(bytes, bytes + sizeof(wire));
}

srm_xrc_target_status_t decode(const std::vector<uint8_t> &bytes,
                               srm_xrc_target_op_t *op, srm_xrc_target_t *t)
{
    return srm_xrc_target_decode(bytes.data(), bytes.size(), op, t);
}

} // namespace

TEST(xrc_target, encodes_fields_in_network_order)
{
    const uint8_t expected[32] = {
        1, 32, SRM_XRC_TARGET_WITHDRAW, 0,  /* version, length, op, flags */
        0x00, 0xab, 0xcd, 0xef,             /* srqn */
        1, 2, 3, 4, 5, 6, 7, 8,             /* node id */
        0x00, 0x03, 0x00, 0x01,             /* port */
        0x80, 0x00, 0x00, 0x07,             /* generation */
        0, 0, 0, 0, 0, 0, 0, 0};
    std::vector<uint8_t> bytes = encoded(
            SRM_XRC_TARGET_WITHDRAW, target(kNode, 0x30001, 0xabcdef,
                                            0x80000007u));

    EXPECT_EQ(std::vector<uint8_t>(expected, expected + 32), bytes);
}

TEST(xrc_target, round_trips)
{
    const srm_xrc_target_t cases[] = {
        target(kNode, 0x30001, 0xabcdef, 7),
        target(1, 1, 1, 0),
        target(~0ull, ~0u, SRM_XRC_SRQN_MAX, ~0u),
    };
    srm_xrc_target_op_t op;
    srm_xrc_target_t out;

    for (const srm_xrc_target_t &in : cases) {
        for (srm_xrc_target_op_t sent :
             {SRM_XRC_TARGET_ANNOUNCE, SRM_XRC_TARGET_WITHDRAW}) {
            ASSERT_EQ(SRM_XRC_TARGET_OK, decode(encoded(sent, in), &op, &out));
            EXPECT_EQ(sent, op);
            EXPECT_EQ(in.node_id, out.node_id);
            EXPECT_EQ(in.port, out.port);
            EXPECT_EQ(in.srqn, out.srqn);
            EXPECT_EQ(in.generation, out.generation);
        }
    }
}

TEST(xrc_target, decode_rejects_each_kind_of_bad_input)
{
    const std::vector<uint8_t> good = encoded(
            SRM_XRC_TARGET_ANNOUNCE, target(kNode, 0x30001, 0xabcdef, 7));
    const srm_xrc_target_t untouched = target(9, 9, 9, 9);
    struct bad {
        size_t                  offset;
        uint8_t                 value;
        srm_xrc_target_status_t expected;
    };
    const bad cases[] = {
        {0, 0, SRM_XRC_TARGET_ERR_VERSION},
        {0, 2, SRM_XRC_TARGET_ERR_VERSION},
        {1, 31, SRM_XRC_TARGET_ERR_LENGTH},
        {1, 64, SRM_XRC_TARGET_ERR_LENGTH},
        {2, 0, SRM_XRC_TARGET_ERR_OP},
        {2, 3, SRM_XRC_TARGET_ERR_OP},
        {3, 0x80, SRM_XRC_TARGET_ERR_RESERVED},
        {4, 0x01, SRM_XRC_TARGET_ERR_RESERVED}, /* srqn above 24 bits */
        {24, 1, SRM_XRC_TARGET_ERR_RESERVED},
        {31, 0x80, SRM_XRC_TARGET_ERR_RESERVED},
    };
    srm_xrc_target_op_t op = SRM_XRC_TARGET_ANNOUNCE;
    srm_xrc_target_t out;
    std::vector<uint8_t> bytes;

    for (const bad &c : cases) {
        bytes         = good;
        bytes[c.offset] = c.value;
        out           = untouched;
        EXPECT_EQ(c.expected, decode(bytes, &op, &out))
                << "byte " << c.offset << " = " << int(c.value);
        EXPECT_EQ(untouched.srqn, out.srqn) << "written on error";
    }

    /* Zero where zero means nothing: srqn, node id, port. */
    const struct {
        size_t offset, len;
        srm_xrc_target_status_t expected;
    } zeros[] = {{4, 4, SRM_XRC_TARGET_ERR_SRQN},
                 {8, 8, SRM_XRC_TARGET_ERR_NODE},
                 {16, 4, SRM_XRC_TARGET_ERR_PORT}};
    for (const auto &z : zeros) {
        bytes = good;
        memset(&bytes[z.offset], 0, z.len);
        EXPECT_EQ(z.expected, decode(bytes, &op, &out)) << z.offset;
    }

    /* Lengths other than the struct's, the version byte aside. */
    for (size_t len : {size_t(1), size_t(31), size_t(33), size_t(64)}) {
        bytes = good;
        bytes.resize(len, 0);
        EXPECT_EQ(SRM_XRC_TARGET_ERR_LENGTH, decode(bytes, &op, &out)) << len;
    }
    EXPECT_EQ(SRM_XRC_TARGET_ERR_LENGTH,
              srm_xrc_target_decode(good.data(), 0, &op, &out));
    EXPECT_EQ(SRM_XRC_TARGET_ERR_LENGTH,
              srm_xrc_target_decode(nullptr, 32, &op, &out));
    EXPECT_EQ(untouched.srqn, out.srqn);
}

TEST(xrc_target, encode_refuses_what_decode_would)
{
    const srm_xrc_target_t bad[] = {
        target(kNode, 1, 0, 1), target(kNode, 1, SRM_XRC_SRQN_MAX + 1, 1),
        target(0, 1, 5, 1), target(kNode, 0, 5, 1)};
    srm_xrc_target_wire_t wire;
    const srm_xrc_target_t good = target(kNode, 1, 5, 1);

    for (const srm_xrc_target_t &t : bad) {
        memset(&wire, 0xa5, sizeof(wire));
        EXPECT_NE(SRM_XRC_TARGET_OK,
                  srm_xrc_target_encode(SRM_XRC_TARGET_ANNOUNCE, &t, &wire));
        EXPECT_EQ(0xa5, wire.version) << "written on error";
    }
    EXPECT_EQ(SRM_XRC_TARGET_ERR_OP,
              srm_xrc_target_encode(static_cast<srm_xrc_target_op_t>(3),
                                    &good, &wire));
}

/* Whatever decodes is exactly what encoding its result gives: no bit of
 * the input is ignored, and random input never crashes the decoder. */
TEST(xrc_target, decode_ignores_no_bit)
{
    std::mt19937 rng(5);
    std::vector<uint8_t> bytes(32);
    srm_xrc_target_op_t op;
    srm_xrc_target_t out;
    unsigned accepted = 0;

    for (int n = 0; n < 20000; ++n) {
        for (uint8_t &b : bytes) {
            b = static_cast<uint8_t>(rng());
        }
        bytes[0] = SRM_XRC_TARGET_VERSION;
        bytes[1] = 32;
        bytes[2] = 1 + (rng() & 1);
        if (rng() & 1) {
            bytes[3] = 0;
            bytes[4] = 0;
            memset(&bytes[24], 0, 8);
        }
        if (decode(bytes, &op, &out) == SRM_XRC_TARGET_OK) {
            ++accepted;
            ASSERT_EQ(bytes, encoded(op, out));
        }
    }
    EXPECT_GT(accepted, 1000u);
}

TEST(xrc_target, every_status_has_its_own_message)
{
    std::vector<std::string> seen;
    for (int s = SRM_XRC_TARGET_OK; s < SRM_XRC_TARGET_ERR_LAST; ++s) {
        std::string msg = srm_xrc_target_status_str(
                static_cast<srm_xrc_target_status_t>(s));
        EXPECT_EQ(std::string::npos, msg.find("unknown XRC")) << s;
        for (const std::string &other : seen) {
            EXPECT_NE(other, msg);
        }
        seen.push_back(msg);
    }
}

class xrc_table : public testing::Test {
protected:
    void SetUp() override
    {
        ASSERT_EQ(0, srm_xrc_table_init(&m_table, 8));
    }

    void TearDown() override
    {
        srm_xrc_table_cleanup(&m_table);
    }

    uint32_t srqn_of(uint64_t node, uint32_t port) const
    {
        const srm_xrc_target_t *t = srm_xrc_table_lookup(&m_table, node,
                                                         port);
        return (t != nullptr) ? t->srqn : 0;
    }

    srm_xrc_table_t m_table;
};

TEST_F(xrc_table, announce_then_lookup_of_exactly_that_port)
{
    srm_xrc_target_t t = target(kNode, 0x10005, 0x42, 1);

    EXPECT_EQ(SRM_XRC_TABLE_ADDED, srm_xrc_table_announce(&m_table, &t));
    EXPECT_EQ(1u, m_table.count);
    EXPECT_EQ(0x42u, srqn_of(kNode, 0x10005));
    EXPECT_EQ(0u, srqn_of(kNode + 1, 0x10005));
    /* The next client in the same slot has another port: never the SRQ
     * of the one before it. */
    EXPECT_EQ(0u, srqn_of(kNode, 0x20005));
}

TEST_F(xrc_table, a_later_announcement_replaces_an_earlier_one)
{
    srm_xrc_target_t first = target(kNode, 7, 0x42, 1);
    srm_xrc_target_t later = target(kNode, 7, 0x43, 2);

    ASSERT_EQ(SRM_XRC_TABLE_ADDED, srm_xrc_table_announce(&m_table, &first));
    EXPECT_EQ(SRM_XRC_TABLE_REPLACED, srm_xrc_table_announce(&m_table, &later));
    EXPECT_EQ(0x43u, srqn_of(kNode, 7));
    EXPECT_EQ(1u, m_table.count);

    /* An earlier (or the same) announcement arriving late changes nothing. */
    EXPECT_EQ(SRM_XRC_TABLE_STALE, srm_xrc_table_announce(&m_table, &first));
    EXPECT_EQ(SRM_XRC_TABLE_STALE, srm_xrc_table_announce(&m_table, &later));
    EXPECT_EQ(0x43u, srqn_of(kNode, 7));
}

TEST_F(xrc_table, generations_wrap)
{
    srm_xrc_target_t before = target(kNode, 7, 0x42, 0xffffffffu);
    srm_xrc_target_t after  = target(kNode, 7, 0x43, 1);

    ASSERT_EQ(SRM_XRC_TABLE_ADDED, srm_xrc_table_announce(&m_table, &before));
    EXPECT_EQ(SRM_XRC_TABLE_REPLACED, srm_xrc_table_announce(&m_table, &after));
    EXPECT_EQ(SRM_XRC_TABLE_STALE, srm_xrc_table_announce(&m_table, &before));
    EXPECT_EQ(0x43u, srqn_of(kNode, 7));
}

TEST_F(xrc_table, withdrawn_targets_are_never_found)
{
    srm_xrc_target_t t        = target(kNode, 7, 0x42, 1);
    srm_xrc_target_t withdraw = target(kNode, 7, 0x42, 2);

    ASSERT_EQ(SRM_XRC_TABLE_ADDED, srm_xrc_table_announce(&m_table, &t));
    EXPECT_EQ(SRM_XRC_TABLE_REMOVED,
              srm_xrc_table_withdraw(&m_table, &withdraw));
    EXPECT_EQ(nullptr, srm_xrc_table_lookup(&m_table, kNode, 7));
    EXPECT_EQ(0u, m_table.count);
    EXPECT_EQ(SRM_XRC_TABLE_NOT_FOUND,
              srm_xrc_table_withdraw(&m_table, &withdraw));
}

TEST_F(xrc_table, a_withdrawal_older_than_the_target_keeps_it)
{
    /* The client's SRQ was announced again (generation 3) after the
     * withdrawal of generation 2 was sent: the new SRQ stays. */
    srm_xrc_target_t again    = target(kNode, 7, 0x44, 3);
    srm_xrc_target_t withdraw = target(kNode, 7, 0x42, 2);

    ASSERT_EQ(SRM_XRC_TABLE_ADDED, srm_xrc_table_announce(&m_table, &again));
    EXPECT_EQ(SRM_XRC_TABLE_STALE,
              srm_xrc_table_withdraw(&m_table, &withdraw));
    EXPECT_EQ(0x44u, srqn_of(kNode, 7));
}

TEST_F(xrc_table, full_refuses_new_ports_but_replaces_known_ones)
{
    srm_xrc_target_t t;

    for (uint32_t port = 1; port <= 8; ++port) {
        t = target(kNode, port, 0x100 + port, 1);
        ASSERT_EQ(SRM_XRC_TABLE_ADDED, srm_xrc_table_announce(&m_table, &t));
    }
    t = target(kNode, 9, 0x109, 1);
    EXPECT_EQ(SRM_XRC_TABLE_FULL, srm_xrc_table_announce(&m_table, &t));
    EXPECT_EQ(0u, srqn_of(kNode, 9));

    t = target(kNode, 3, 0x203, 2);
    EXPECT_EQ(SRM_XRC_TABLE_REPLACED, srm_xrc_table_announce(&m_table, &t));
    EXPECT_EQ(0x203u, srqn_of(kNode, 3));

    t = target(kNode, 5, 0x105, 2);
    ASSERT_EQ(SRM_XRC_TABLE_REMOVED, srm_xrc_table_withdraw(&m_table, &t));
    t = target(kNode, 9, 0x109, 1);
    EXPECT_EQ(SRM_XRC_TABLE_ADDED, srm_xrc_table_announce(&m_table, &t));
    EXPECT_EQ(8u, m_table.count);
}

TEST_F(xrc_table, a_node_that_leaves_takes_all_its_targets)
{
    srm_xrc_target_t t;

    for (uint32_t port = 1; port <= 4; ++port) {
        t = target(kNode, port, port, 1);
        ASSERT_EQ(SRM_XRC_TABLE_ADDED, srm_xrc_table_announce(&m_table, &t));
        t = target(kNode + 1, port, 0x100 + port, 1);
        ASSERT_EQ(SRM_XRC_TABLE_ADDED, srm_xrc_table_announce(&m_table, &t));
    }
    EXPECT_EQ(4u, srm_xrc_table_remove_node(&m_table, kNode));
    EXPECT_EQ(4u, m_table.count);
    for (uint32_t port = 1; port <= 4; ++port) {
        EXPECT_EQ(0u, srqn_of(kNode, port));
        EXPECT_EQ(0x100 + port, srqn_of(kNode + 1, port));
    }
    EXPECT_EQ(0u, srm_xrc_table_remove_node(&m_table, kNode));
}

/* A full table of colliding targets: a node removed at once, then half of
 * the rest withdrawn in random order; every remaining target is still
 * found (the probe runs stay whole) and no removed one is. */
TEST(xrc_table_many, removals_keep_every_other_target_reachable)
{
    const unsigned kTargets = 2000, kGone = 2;
    std::vector<srm_xrc_target_t> targets;
    std::vector<bool> live(kTargets, true);
    std::vector<unsigned> order;
    std::mt19937 rng(11);
    srm_xrc_table_t table;
    srm_xrc_target_t withdraw;
    unsigned on_gone = 0;

    ASSERT_EQ(0, srm_xrc_table_init(&table, kTargets));
    for (unsigned i = 0; i < kTargets; ++i) {
        targets.push_back(target(1 + (i % 3), 0x10000 + i, 1 + i, 1));
        ASSERT_EQ(SRM_XRC_TABLE_ADDED,
                  srm_xrc_table_announce(&table, &targets[i]));
        if (targets[i].node_id == kGone) {
            live[i] = false;
            ++on_gone;
        } else {
            order.push_back(i);
        }
    }
    EXPECT_EQ(on_gone, srm_xrc_table_remove_node(&table, kGone));
    EXPECT_EQ(kTargets - on_gone, table.count);

    std::shuffle(order.begin(), order.end(), rng);
    order.resize(order.size() / 2);
    for (unsigned i : order) {
        withdraw            = targets[i];
        withdraw.generation = 2;
        ASSERT_EQ(SRM_XRC_TABLE_REMOVED,
                  srm_xrc_table_withdraw(&table, &withdraw));
        live[i] = false;
    }
    for (unsigned i = 0; i < kTargets; ++i) {
        const srm_xrc_target_t *t = srm_xrc_table_lookup(
                &table, targets[i].node_id, targets[i].port);
        if (live[i]) {
            ASSERT_NE(nullptr, t) << i;
            EXPECT_EQ(targets[i].srqn, t->srqn);
        } else {
            EXPECT_EQ(nullptr, t) << i;
        }
    }
    srm_xrc_table_cleanup(&table);
}

TEST(xrc_table_many, refuses_an_impossible_capacity)
{
    srm_xrc_table_t table;

    EXPECT_EQ(-1, srm_xrc_table_init(&table, 0x80000000u));
}
