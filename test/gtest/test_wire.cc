/*
 * Two agents on one machine talking over the tcp wire (loopback): frames
 * from a client of one reach a client of the other, in order, on the small
 * and the bulk channel; a vanished peer agent costs nothing else.
 */
#include "srm_test_agent.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

using srm_test::agent;
using srm_test::frame;
using srm_test::raw_client;

namespace {

const std::vector<std::string> kLoopbackWire = {"UCX_SRM_NET_DEVICE=lo"};

std::vector<uint8_t> payload(uint32_t seq, uint32_t length)
{
    std::vector<uint8_t> data(length);
    for (uint32_t i = 0; i < length; ++i) {
        data[i] = static_cast<uint8_t>(seq ^ (i * 7));
    }
    return data;
}

} // namespace

TEST(wire, frames_cross_to_another_agent_in_order_on_both_channels)
{
    agent node_a(kLoopbackWire), node_b(kLoopbackWire);
    raw_client a(node_a.socket()), b(node_b.socket());
    ASSERT_NE(0u, b.wire_port()) << "agent B has no wire";
    ASSERT_NE(a.node_id(), b.node_id());
    a.name_node(1, b.node_id(), b.wire_ipv4(), b.wire_port());

    /* Alternate small and bulk frames: order must survive two channels. */
    const uint32_t count = 600;
    uint32_t sent = 0, received = 0;
    frame f;
    while (received < count) {
        if (sent < count) {
            uint32_t length = (sent % 3 == 0) ? 40000 : 16;
            std::vector<uint8_t> data = payload(sent, length);
            if (a.send(b.port(), b.key(), data.data(), length, sent, 1)) {
                ++sent;
            }
        }
        if (b.recv(&f) || ((sent == count) && b.recv_wait(&f, 5000))) {
            uint32_t length = (received % 3 == 0) ? 40000 : 16;
            ASSERT_EQ(length, f.hdr.length) << "frame " << received;
            ASSERT_EQ(payload(received, length), f.payload) << received;
            ASSERT_EQ(a.port(), f.hdr.src_port);
            ++received;
        } else if (sent == count) {
            FAIL() << "stuck at " << received << " of " << count << "\n"
                   << node_a.status();
        }
    }

    std::string status = node_a.status();
    EXPECT_NE(std::string::npos, status.find("small ready")) << status;
    EXPECT_NE(std::string::npos, status.find("bulk  ready")) << status;
}

TEST(wire, unknown_or_unreachable_node_costs_only_its_own_frames)
{
    agent node_a(kLoopbackWire);
    raw_client a(node_a.socket()), local(node_a.socket());
    uint16_t dead_port;
    uint64_t dead_id;
    uint32_t dead_ip;
    {
        agent node_b(kLoopbackWire);
        raw_client b(node_b.socket());
        dead_id   = b.node_id();
        dead_ip   = b.wire_ipv4();
        dead_port = b.wire_port();
    } /* node B is gone */

    a.name_node(1, dead_id, dead_ip, dead_port);
    for (uint32_t i = 0; i < 50; ++i) {
        ASSERT_TRUE(a.send(12345, 1, "lost?", 5, i, 1));
    }
    /* A node index never named is dropped and counted, not a crash. */
    ASSERT_TRUE(a.send(local.port(), local.key(), "x", 1, 0, 7));

    /* Local traffic of the same agent keeps flowing meanwhile. */
    frame f;
    for (uint32_t i = 0; i < 100; ++i) {
        ASSERT_TRUE(a.send(local.port(), local.key(), &i, sizeof(i)));
        ASSERT_TRUE(local.recv_wait(&f, 5000)) << i;
    }
    EXPECT_GE(node_a.counter("bad_dest"), 1u);
    std::string status = node_a.status();
    EXPECT_NE(std::string::npos, status.find("small down")) << status;
}
