/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Placement on the tcp wire (agent/srm_place.c): a large frame whose header
 * has arrived is read on straight into its destination's RX ring. A
 * made-up peer agent sends a frame in two pieces, and between them the test
 * does what could go wrong: frames for the same port, the port leaving, the
 * frame arriving whole on the other path, the connection going.
 */
#include "srm_test_agent.h"
#include "srm_test_peer.h"

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <unistd.h>
#include <vector>

using srm_test::agent;
using srm_test::frame;
using srm_test::raw_client;
using srm_test::raw_peer;

namespace {

const uint64_t kPeerId      = 0x5360;
const size_t kFrameLength   = 65536;
const size_t kFirstPiece    = 1000; /* of the payload, with the header */
const std::vector<std::string> kEnv = {"UCX_SRM_DEVICES=lo",
                                       "UCX_SRM_FAILOVER_TIMEOUT=5s",
                                       "UCX_SRM_PEER_TIMEOUT=20s",
                                       "UCX_SRM_PLACE=y"};

std::vector<uint8_t> pattern(size_t length, uint8_t salt)
{
    std::vector<uint8_t> data(length);
    for (size_t i = 0; i < length; ++i) {
        data[i] = static_cast<uint8_t>((i * 13) ^ (i >> 8) ^ salt);
    }
    return data;
}

/* Waits up to 5 s for the agent's first channel line to say NAME VALUE. */
bool wait_counter(const agent &node, const std::string &name,
                  unsigned long long value)
{
    for (int i = 0; i < 500; ++i) {
        if (node.counter(name) == value) {
            return true;
        }
        usleep(10000);
    }
    return false;
}

/* A frame the peer sends in two pieces: the header and kFirstPiece bytes
 * of payload, then the rest. */
struct split_frame {
    split_frame(uint32_t chan_seq, uint32_t seq, const raw_client &dst,
                uint8_t salt)
        : data(pattern(kFrameLength, salt)),
          bytes(raw_peer::am(chan_seq, seq, dst, data.data(), data.size()))
    {
    }

    void send_first(raw_peer &peer) const
    {
        peer.send_bytes(bytes.data(), sizeof(srm_frame_hdr_t) + kFirstPiece);
    }

    void send_rest(raw_peer &peer) const
    {
        size_t first = sizeof(srm_frame_hdr_t) + kFirstPiece;
        peer.send_bytes(bytes.data() + first, bytes.size() - first);
    }

    std::vector<uint8_t> data, bytes;
};

void expect_frame(raw_client &dst, const std::vector<uint8_t> &data,
                  uint32_t seq, const agent &node)
{
    frame f;
    ASSERT_TRUE(dst.recv_wait(&f, 5000)) << "frame " << seq << " stuck\n"
                                         << node.status();
    EXPECT_EQ(seq, f.hdr.seq);
    EXPECT_TRUE(f.payload == data) << "frame " << seq << ": payload differs";
}

} // namespace

TEST(place, a_large_frame_is_read_straight_into_its_ports_ring)
{
    agent node(kEnv);
    raw_client b(node.socket());
    raw_peer peer(b.wire(), kPeerId);
    split_frame big(0, 0, b, 1);

    big.send_first(peer);
    ASSERT_TRUE(wait_counter(node, "placing", 1)) << node.status();
    frame f;
    EXPECT_FALSE(b.recv_wait(&f, 100)) << "published before it was whole";

    big.send_rest(peer);
    expect_frame(b, big.data, 0, node);
    EXPECT_EQ(0u, node.counter("placing"));
    EXPECT_EQ(1u, node.counter("placed")) << node.status();
    EXPECT_NE(std::string::npos,
              node.status().find(" placed 1/" + std::to_string(kFrameLength) +
                                 " "))
            << node.status();

    /* Small frames go the usual way. */
    peer.send_am(1, 1, b, "small");
    ASSERT_TRUE(b.recv_wait(&f, 5000)) << node.status();
    EXPECT_EQ(1u, f.hdr.seq);
    EXPECT_EQ(1u, node.counter("placed")) << node.status();
}

TEST(place, is_off_when_switched_off)
{
    std::vector<std::string> env = kEnv;
    env.back() = "UCX_SRM_PLACE=n";
    agent node(env);
    raw_client b(node.socket());
    raw_peer peer(b.wire(), kPeerId);
    split_frame big(0, 0, b, 6);

    big.send_first(peer);
    usleep(200000);
    EXPECT_EQ(0u, node.counter("placing")) << node.status();
    big.send_rest(peer);
    expect_frame(b, big.data, 0, node);
    EXPECT_EQ(0u, node.counter("placed")) << node.status();
}

TEST(place, frames_for_the_port_meanwhile_follow_the_placed_one)
{
    agent node(kEnv);
    raw_client b(node.socket()), local(node.socket());
    raw_peer peer(b.wire(), kPeerId);
    split_frame big(0, 0, b, 2);

    big.send_first(peer);
    ASSERT_TRUE(wait_counter(node, "placing", 1)) << node.status();
    const char text[] = "from this node";
    ASSERT_TRUE(local.send(b.port(), b.key(), text, sizeof(text), 7));
    usleep(100000);

    big.send_rest(peer);
    expect_frame(b, big.data, 0, node);
    frame f;
    ASSERT_TRUE(b.recv_wait(&f, 5000)) << "the local frame is stuck\n"
                                       << node.status();
    EXPECT_EQ(7u, f.hdr.seq);
    EXPECT_EQ(local.port(), f.hdr.src_port);
}

TEST(place, a_port_that_leaves_mid_frame_costs_only_that_frame)
{
    agent node(kEnv);
    auto b = std::make_unique<raw_client>(node.socket());
    raw_client c(node.socket());
    raw_peer peer(c.wire(), kPeerId);
    split_frame big(0, 0, *b, 3);

    big.send_first(peer);
    ASSERT_TRUE(wait_counter(node, "placing", 1)) << node.status();
    b.reset();
    ASSERT_TRUE(wait_counter(node, "attached", 1)) << node.status();
    EXPECT_EQ(0u, node.counter("placing"));

    /* The rest comes into the link's input: dropped as a frame to a port
     * that left, and the frames after it flow. */
    big.send_rest(peer);
    peer.send_am(1, 1, c, "after");
    frame f;
    ASSERT_TRUE(c.recv_wait(&f, 5000)) << node.status();
    EXPECT_EQ(1u, f.hdr.seq);
    EXPECT_EQ("after", std::string(f.payload.begin(), f.payload.end()));
    EXPECT_EQ(1u, node.counter("bad_dest")) << node.status();
    EXPECT_EQ(0u, node.counter("placed"));
    EXPECT_TRUE(peer.connected()) << node.status();
}

TEST(place, a_frame_delivered_meanwhile_on_the_other_path_is_not_placed_twice)
{
    agent node(kEnv);
    raw_client b(node.socket());
    raw_peer path0(b.wire(), kPeerId, 0, 0);
    raw_peer path1(b.wire(), kPeerId, 0, 1);
    split_frame big(0, 0, b, 4);

    big.send_first(path0);
    ASSERT_TRUE(wait_counter(node, "placing", 1)) << node.status();

    /* As after a failover: the sender resends it whole on the standby.
     * It is taken there, and waits in the port's backlog for the ring. */
    path1.send_bytes(big.bytes.data(), big.bytes.size());
    ASSERT_TRUE(wait_counter(node, "rx", 1)) << node.status();

    big.send_rest(path0);
    expect_frame(b, big.data, 0, node);
    EXPECT_EQ(0u, node.counter("placing"));
    frame f;
    EXPECT_FALSE(b.recv_wait(&f, 200)) << "frame " << f.hdr.seq << " twice";
    EXPECT_EQ(0u, node.counter("placed")) << node.status();
    EXPECT_EQ(1u, node.counter("dups")) << node.status();

    /* Both connections go on. */
    path0.send_am(1, 1, b, "on path 0");
    path1.send_am(2, 2, b, "on path 1");
    for (uint32_t seq = 1; seq <= 2; ++seq) {
        ASSERT_TRUE(b.recv_wait(&f, 5000)) << node.status();
        EXPECT_EQ(seq, f.hdr.seq);
    }
}

TEST(place, a_connection_lost_mid_frame_frees_the_port_for_the_resent_frame)
{
    agent node(kEnv);
    raw_client b(node.socket()), local(node.socket());
    raw_peer peer(b.wire(), kPeerId);
    split_frame big(0, 0, b, 5);

    big.send_first(peer);
    ASSERT_TRUE(wait_counter(node, "placing", 1)) << node.status();
    peer.drop_connection();
    ASSERT_TRUE(wait_counter(node, "placing", 0)) << node.status();

    /* The port takes frames at once, and nothing of the half frame. */
    const char text[] = "local";
    ASSERT_TRUE(local.send(b.port(), b.key(), text, sizeof(text), 9));
    frame f;
    ASSERT_TRUE(b.recv_wait(&f, 5000)) << node.status();
    EXPECT_EQ(9u, f.hdr.seq);
    EXPECT_FALSE(b.recv_wait(&f, 100)) << "a half frame was published";

    /* The frame was never acknowledged: it comes again, whole, once. */
    raw_peer again(b.wire(), kPeerId, 0, 1);
    again.send_bytes(big.bytes.data(), big.bytes.size());
    expect_frame(b, big.data, 0, node);
    EXPECT_FALSE(b.recv_wait(&f, 200)) << "frame " << f.hdr.seq << " twice";
}
