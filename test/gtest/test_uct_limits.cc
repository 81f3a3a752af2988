/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The iface's message limits and how they are configured. UCX_SRM_MAX_ZCOPY
 * defaults to auto, the largest AM the agent takes (its frame limit less
 * the AM header): every zcopy message costs the agents a wakeup or more,
 * so bulk data goes in as few of them as the frame allows. An explicit
 * value is kept; one the agent could not carry, or one below SEG_SIZE, is
 * refused when the iface opens, and so is an agent whose frame limit is
 * impossible.
 */
#include "srm_test_uct.h"

extern "C" {
#include <ucx_srm/common/srm_frame.h>
#include <ucx_srm/common/srm_proto.h>
#include <ucx_srm/common/srm_shm.h>
#include <uct/api/uct.h>
}

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <poll.h>
#include <string>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <thread>
#include <unistd.h>
#include <vector>

namespace {

class uct_limits_test : public srm_test::two_port_test {
protected:
    void TearDown() override
    {
        unsetenv("UCX_SRM_MAX_ZCOPY");
        unsetenv("UCX_SRM_SEG_SIZE");
        srm_test::two_port_test::TearDown();
    }

    /* Opens port i with the iface settings of the environment. */
    ucs_status_t open(int i)
    {
        create_worker();
        EXPECT_EQ(UCS_OK, srm_test::open_srm_md({}, &md_[i]));
        return srm_test::open_srm_iface(md_[i], worker_, &iface_[i]);
    }

    size_t max_zcopy(int i)
    {
        uct_iface_attr_t attr;

        EXPECT_EQ(UCS_OK, uct_iface_query(iface_[i], &attr));
        return attr.cap.am.max_zcopy;
    }

    struct received {
        std::vector<unsigned char> data;
        long                       count = 0;
    };

    static ucs_status_t on_am(void *arg, void *data, size_t length,
                              unsigned flags)
    {
        auto *got = static_cast<received*>(arg);
        const auto *bytes = static_cast<const unsigned char*>(data);

        got->data.assign(bytes, bytes + length);
        ++got->count;
        return UCS_OK;
    }
};

TEST_F(uct_limits_test, max_zcopy_auto_is_the_agents_frame_limit)
{
    uct_iface_attr_t attr;

    ASSERT_EQ(UCS_OK, open(0));
    ASSERT_EQ(UCS_OK, uct_iface_query(iface_[0], &attr));
    EXPECT_EQ(SRM_FRAME_MAX_PAYLOAD - attr.cap.am.max_hdr,
              attr.cap.am.max_zcopy);
    EXPECT_LT(attr.cap.am.max_bcopy, attr.cap.am.max_zcopy);
}

/* The agent carries the largest zcopy message whole, header and all. */
TEST_F(uct_limits_test, the_largest_zcopy_message_arrives_whole)
{
    received got;

    ASSERT_EQ(UCS_OK, open(0));
    ASSERT_EQ(UCS_OK, open(1));
    create_ep(on_am, &got);

    uct_iface_attr_t attr;
    ASSERT_EQ(UCS_OK, uct_iface_query(iface_[0], &attr));
    const size_t hdr_len = attr.cap.am.max_hdr;
    const size_t length  = attr.cap.am.max_zcopy;
    std::vector<unsigned char> hdr(hdr_len), payload(length);
    for (size_t i = 0; i < hdr_len; ++i) {
        hdr[i] = (unsigned char)(i * 7 + 1);
    }
    for (size_t i = 0; i < length; ++i) {
        payload[i] = (unsigned char)(i * 31 + (i >> 9));
    }

    uct_iov_t iov = {};
    iov.buffer    = payload.data();
    iov.length    = length;
    iov.memh      = UCT_MEM_HANDLE_NULL;
    iov.count     = 1;
    ucs_status_t status;
    do {
        status = uct_ep_am_zcopy(ep_, 9, hdr.data(), (unsigned)hdr_len, &iov,
                                 1, 0, nullptr);
        uct_worker_progress(worker_);
    } while (status == UCS_ERR_NO_RESOURCE);
    ASSERT_TRUE((status == UCS_OK) || (status == UCS_INPROGRESS))
            << ucs_status_string(status);

    for (int spins = 0; (got.count == 0) && (spins < 20000000); ++spins) {
        uct_worker_progress(worker_);
    }
    ASSERT_EQ(1, got.count);
    ASSERT_EQ(hdr_len + length, got.data.size());
    EXPECT_TRUE(std::equal(hdr.begin(), hdr.end(), got.data.begin()));
    EXPECT_TRUE(std::equal(payload.begin(), payload.end(),
                           got.data.begin() + hdr_len));
}

TEST_F(uct_limits_test, an_explicit_max_zcopy_is_kept)
{
    setenv("UCX_SRM_MAX_ZCOPY", "64k", 1);
    ASSERT_EQ(UCS_OK, open(0));
    EXPECT_EQ(64u * 1024u, max_zcopy(0));
}

TEST_F(uct_limits_test, a_max_zcopy_the_agent_cannot_carry_is_refused)
{
    setenv("UCX_SRM_MAX_ZCOPY", "128k", 1); /* no room left for the header */
    EXPECT_EQ(UCS_ERR_INVALID_PARAM, open(0));
}

TEST_F(uct_limits_test, a_seg_size_above_max_zcopy_is_refused)
{
    setenv("UCX_SRM_SEG_SIZE", "16k", 1);
    setenv("UCX_SRM_MAX_ZCOPY", "8k", 1);
    EXPECT_EQ(UCS_ERR_INVALID_PARAM, open(0));
}

/* Opens port 0 against a fake agent that answers the attach with
 * everything right but its frame limit; the status of md and iface open. */
ucs_status_t open_with_agent_frame_limit(uct_md_h *md_p, uct_worker_h worker,
                                         uct_iface_h *iface_p,
                                         uint32_t max_payload)
{
    std::string name = "srm-gtest-limit-" + std::to_string(getpid());
    struct sockaddr_un addr;
    socklen_t addrlen;
    EXPECT_EQ(0, srm_sock_addr(name.c_str(), &addr, &addrlen));
    int listen_fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
    EXPECT_GE(listen_fd, 0);
    EXPECT_EQ(0, bind(listen_fd, (struct sockaddr*)&addr, addrlen));
    EXPECT_EQ(0, listen(listen_fd, 1));

    std::thread fake_agent([listen_fd, max_payload] {
        struct pollfd pfd = {listen_fd, POLLIN, 0};
        if (poll(&pfd, 1, 10000) != 1) {
            return; /* nobody came: the caller's open fails */
        }
        int fd = accept(listen_fd, nullptr, nullptr);
        srm_attach_req_t req;
        int nfds = 0;
        srm_sock_recv(fd, &req, sizeof(req), nullptr, &nfds);
        srm_attach_rep_t rep = {};
        srm_msg_hdr_init(&rep.hdr, SRM_MSG_ATTACH_REP);
        rep.max_payload = max_payload;
        srm_shm_layout_t layout;
        void *shm = nullptr;
        int fds[3] = {-1, eventfd(0, EFD_CLOEXEC), eventfd(0, EFD_CLOEXEC)};
        if ((srm_shm_layout_init(&layout, req.num_tx_rings, req.tx_ring_size,
                                 req.rx_ring_size) == 0) &&
            (srm_shm_create(&layout, "srm-gtest-limit", &fds[0], &shm) == 0)) {
            rep.shm_size = layout.total_size;
            srm_sock_send(fd, &rep, sizeof(rep), fds, 3);
            srm_shm_unmap(&layout, shm);
        }
        for (int f : fds) {
            if (f >= 0) {
                close(f);
            }
        }
        char byte;
        while (recv(fd, &byte, sizeof(byte), 0) > 0) {
        } /* until the module hangs up */
        close(fd);
    });

    ucs_status_t status = srm_test::open_srm_md({{"SOCKET", name},
                                                 {"AGENT", "never"}},
                                                md_p);
    if (status == UCS_OK) {
        status = srm_test::open_srm_iface(*md_p, worker, iface_p);
        if (status == UCS_OK) {
            uct_iface_close(*iface_p); /* hangs up: the fake agent ends */
            *iface_p = nullptr;
        }
        uct_md_close(*md_p);
        *md_p = nullptr;
    }
    fake_agent.join();
    close(listen_fd);
    return status;
}

/* A frame limit no AM fits in, or one beyond the protocol's: the iface is
 * refused, with an error, instead of sizing its messages by it. */
TEST_F(uct_limits_test, an_agent_with_an_impossible_frame_limit_is_refused)
{
    create_worker();
    EXPECT_NE(UCS_OK, open_with_agent_frame_limit(&md_[0], worker_, &iface_[0],
                                                  64));
    EXPECT_NE(UCS_OK, open_with_agent_frame_limit(&md_[0], worker_, &iface_[0],
                                                  SRM_FRAME_MAX_PAYLOAD * 2));
}

} // namespace
