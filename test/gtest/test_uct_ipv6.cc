/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The tcp wire on IPv6: two private agents on loopback's ::1
 * (UCX_SRM_ADDRESS_FAMILY=ipv6), a port on each, AMs between them through
 * both agents. A worker address names where the peer's agent listens in
 * its iface address; a port whose agent listens on the other family, or
 * an address of no family, is not reachable.
 */
#include "srm_test_agent.h"
#include "srm_test_uct.h"

extern "C" {
#include <ucx_srm/common/srm_address.h>
#include <uct/api/uct.h>
}

#include <gtest/gtest.h>

#include <arpa/inet.h>
#include <chrono>
#include <cstring>
#include <fstream>
#include <memory>
#include <netinet/in.h>
#include <string>
#include <vector>

using srm_test::agent;

namespace {

const std::vector<std::string> kIpv4 = {"UCX_SRM_DEVICES=lo",
                                        "UCX_SRM_ADDRESS_FAMILY=ipv4"};
const std::vector<std::string> kIpv6 = {"UCX_SRM_DEVICES=lo",
                                        "UCX_SRM_ADDRESS_FAMILY=ipv6"};

/* Whether loopback has ::1 here (a kernel may run with IPv6 disabled). */
bool loopback_has_ipv6()
{
    std::ifstream file("/proc/net/if_inet6");
    std::string line;
    while (std::getline(file, line)) {
        if ((line.compare(0, 32, std::string(31, '0') + "1") == 0) &&
            (line.find(" lo") != std::string::npos)) {
            return true;
        }
    }
    return false;
}

class uct_ipv6_test : public srm_test::two_port_test {
protected:
    void SetUp() override
    {
        if (!loopback_has_ipv6()) {
            GTEST_SKIP() << "SKIPPED LOUDLY: loopback has no ::1 on this "
                            "machine (IPv6 disabled), so no agent can "
                            "listen on IPv6 here";
        }
    }

    void start(const std::vector<std::string> &env_a,
               const std::vector<std::string> &env_b)
    {
        node_a_.reset(new agent(env_a));
        node_b_.reset(new agent(env_b));
        ASSERT_NO_FATAL_FAILURE(open_port(0, node_a_->socket()));
        ASSERT_NO_FATAL_FAILURE(open_port(1, node_b_->socket()));
    }

    void addresses(int i, std::vector<char> *dev, srm_iface_addr_t *addr)
    {
        uct_iface_attr_t attr;
        ASSERT_EQ(UCS_OK, uct_iface_query(iface_[i], &attr));
        ASSERT_EQ(sizeof(*addr), attr.iface_addr_len);
        dev->resize(attr.device_addr_len);
        ASSERT_EQ(UCS_OK, uct_iface_get_device_address(
                                  iface_[i], (uct_device_addr_t*)dev->data()));
        ASSERT_EQ(UCS_OK,
                  uct_iface_get_address(iface_[i], (uct_iface_addr_t*)addr));
    }

    bool reachable(int from, const std::vector<char> &dev,
                   const srm_iface_addr_t &addr)
    {
        return uct_iface_is_reachable(iface_[from],
                                      (const uct_device_addr_t*)dev.data(),
                                      (const uct_iface_addr_t*)&addr);
    }

    static ucs_status_t on_am(void *arg, void *data, size_t length,
                              unsigned flags)
    {
        auto *self = static_cast<uct_ipv6_test*>(arg);
        uint64_t seq;
        memcpy(&seq, data, sizeof(seq));
        self->in_order_ += (seq == self->received_);
        self->received_++;
        return UCS_OK;
    }

    std::unique_ptr<agent> node_a_, node_b_;
    uint64_t               received_ = 0;
    uint64_t               in_order_ = 0;
};

TEST_F(uct_ipv6_test, messages_cross_two_agents_that_listen_on_ipv6)
{
    ASSERT_NO_FATAL_FAILURE(start(kIpv6, kIpv6));
    std::vector<char> dev;
    srm_iface_addr_t addr;
    ASSERT_NO_FATAL_FAILURE(addresses(1, &dev, &addr));
    EXPECT_EQ(SRM_WIRE_ADDR_IPV6, addr.wire[0].family);
    EXPECT_EQ(0, memcmp(addr.wire[0].ip, &in6addr_loopback, 16));
    EXPECT_NE(0, addr.wire[0].port);

    ASSERT_NO_FATAL_FAILURE(create_ep(on_am, this));
    const uint64_t count = 200;
    auto end = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    for (uint64_t sent = 0;
         (received_ < count) && (std::chrono::steady_clock::now() < end);) {
        if ((sent < count) &&
            (uct_ep_am_short(ep_, 9, sent, nullptr, 0) == UCS_OK)) {
            ++sent;
        }
        uct_worker_progress(worker_);
    }
    EXPECT_EQ(count, received_) << node_a_->status();
    EXPECT_EQ(count, in_order_);

    /* They went over the wire: both agents talk of the peer at [::1]. */
    std::string status = node_a_->status();
    EXPECT_NE(std::string::npos, status.find("wire: tcp [::1]:")) << status;
    EXPECT_NE(std::string::npos, status.find("[::1]:" +
                                             std::to_string(ntohs(
                                                     addr.wire[0].port))))
            << status;
}

TEST_F(uct_ipv6_test, a_port_whose_agent_listens_on_the_other_family_is_unreachable)
{
    ASSERT_NO_FATAL_FAILURE(start(kIpv4, kIpv6));
    std::vector<char> dev0, dev1;
    srm_iface_addr_t addr0, addr1;
    ASSERT_NO_FATAL_FAILURE(addresses(0, &dev0, &addr0));
    ASSERT_NO_FATAL_FAILURE(addresses(1, &dev1, &addr1));
    EXPECT_EQ(SRM_WIRE_ADDR_IPV4, addr0.wire[0].family);
    EXPECT_EQ(SRM_WIRE_ADDR_IPV6, addr1.wire[0].family);
    EXPECT_FALSE(reachable(0, dev1, addr1));
    EXPECT_FALSE(reachable(1, dev0, addr0));
    /* Each still reaches its own node. */
    EXPECT_TRUE(reachable(0, dev0, addr0));
    EXPECT_TRUE(reachable(1, dev1, addr1));
}

TEST_F(uct_ipv6_test, an_address_of_no_family_or_with_stray_bytes_is_unreachable)
{
    ASSERT_NO_FATAL_FAILURE(start(kIpv4, kIpv4));
    std::vector<char> dev;
    srm_iface_addr_t addr;
    ASSERT_NO_FATAL_FAILURE(addresses(1, &dev, &addr));
    ASSERT_TRUE(reachable(0, dev, addr));
    /* No host's own address: 0.0.0.0/8, multicast, IPv6 ::, fe80::. */
    for (uint8_t first : {0, 224, 255}) {
        srm_iface_addr_t bad = addr;
        bad.wire[0].ip[0]    = first;
        EXPECT_FALSE(reachable(0, dev, bad)) << "first byte " << (int)first;
    }
    for (uint8_t first : {0x00, 0xff, 0xfe}) {
        srm_iface_addr_t bad = addr;
        bad.wire[0].family   = SRM_WIRE_ADDR_IPV6;
        memset(bad.wire[0].ip, 0, 16);
        bad.wire[0].ip[0] = first;
        bad.wire[0].ip[1] = (first == 0xfe) ? 0x80 : 0;
        EXPECT_FALSE(reachable(0, dev, bad)) << "IPv6 " << (int)first;
    }

    srm_iface_addr_t bad = addr;
    bad.wire[0].family   = 5;
    EXPECT_FALSE(reachable(0, dev, bad));
    bad                = addr;
    bad.wire[0].ip[15] = 1; /* past an IPv4 address */
    EXPECT_FALSE(reachable(0, dev, bad));
    bad              = addr;
    bad.wire[0].port = 0;
    EXPECT_FALSE(reachable(0, dev, bad));
    bad                = addr;
    bad.wire[1]        = addr.wire[0];
    bad.wire[1].family = 9; /* a standby path of no family */
    EXPECT_FALSE(reachable(0, dev, bad));

    /* UCP may create an endpoint without asking: it fails the same way,
     * and names no node in our node table. */
    uct_ep_params_t params = {};
    params.field_mask      = UCT_EP_PARAM_FIELD_IFACE |
                             UCT_EP_PARAM_FIELD_DEV_ADDR |
                             UCT_EP_PARAM_FIELD_IFACE_ADDR;
    params.iface      = iface_[0];
    params.dev_addr   = (const uct_device_addr_t*)dev.data();
    params.iface_addr = (const uct_iface_addr_t*)&bad;
    uct_ep_h ep       = nullptr;
    EXPECT_EQ(UCS_ERR_UNREACHABLE, uct_ep_create(&params, &ep));
    if (ep != nullptr) {
        uct_ep_destroy(ep);
    }
}

} // namespace
