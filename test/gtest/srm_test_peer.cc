/* SPDX-License-Identifier: BSD-3-Clause */
#include "srm_test_peer.h"

#include <gtest/gtest.h>

#include <arpa/inet.h>
#include <cerrno>
#include <cstring>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

namespace srm_test {

raw_peer::raw_peer(const srm_wire_addr_t &to, uint64_t id, uint8_t kind,
                   uint8_t path)
{
    sockaddr_in sin     = {};
    socklen_t len       = sizeof(sin);
    sin.sin_family      = AF_INET;
    sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    listen_fd_          = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    EXPECT_EQ(0, bind(listen_fd_, (sockaddr*)&sin, sizeof(sin)));
    EXPECT_EQ(0, listen(listen_fd_, 16));
    EXPECT_EQ(0, getsockname(listen_fd_, (sockaddr*)&sin, &len));

    struct {
        srm_frame_hdr_t hdr;
        srm_hello_t     hello;
    } msg = {};
    srm_frame_hdr_init(&msg.hdr, SRM_FRAME_HELLO, sizeof(msg.hello));
    msg.hello.node_id        = id;
    msg.hello.wire[0].family = SRM_WIRE_ADDR_IPV4;
    msg.hello.wire[0].port   = sin.sin_port;
    memcpy(msg.hello.wire[0].ip, &sin.sin_addr, 4);
    msg.hello.kind = kind;
    msg.hello.path = path;

    fd_ = connect_wire(to, 5);
    EXPECT_GE(fd_, 0) << strerror(errno);
    EXPECT_EQ((ssize_t)sizeof(msg),
              ::send(fd_, &msg, sizeof(msg), MSG_NOSIGNAL));
    EXPECT_EQ((ssize_t)sizeof(msg), recv(fd_, &msg, sizeof(msg), MSG_WAITALL));
    EXPECT_EQ(SRM_FRAME_HELLO_ACK, msg.hdr.type);
    EXPECT_EQ(1, msg.hello.accepted);
}

raw_peer::~raw_peer()
{
    if (fd_ >= 0) {
        close(fd_);
    }
    close(listen_fd_);
}

std::vector<uint8_t> raw_peer::am(uint32_t chan_seq, uint32_t seq,
                                  const raw_client &dst, const void *data,
                                  size_t length, uint32_t src_port)
{
    std::vector<uint8_t> bytes(sizeof(srm_frame_hdr_t) + length);
    srm_frame_hdr_t hdr;

    srm_frame_hdr_init(&hdr, SRM_FRAME_AM, length);
    hdr.src_port = src_port;
    hdr.dst_port = dst.port();
    hdr.dst_key  = dst.key();
    hdr.chan_seq = chan_seq;
    hdr.seq      = seq;
    memcpy(bytes.data(), &hdr, sizeof(hdr));
    memcpy(bytes.data() + sizeof(hdr), data, length);
    return bytes;
}

void raw_peer::send_bytes(const void *data, size_t length)
{
    EXPECT_EQ((ssize_t)length, ::send(fd_, data, length, MSG_NOSIGNAL));
}

void raw_peer::send_am(uint32_t chan_seq, uint32_t seq, const raw_client &dst,
                       const std::string &text)
{
    std::vector<uint8_t> bytes = am(chan_seq, seq, dst, text.data(),
                                    text.size());
    send_bytes(bytes.data(), bytes.size());
}

void raw_peer::send_port_gone(uint32_t chan_seq, uint32_t src_port,
                              uint32_t final)
{
    srm_frame_hdr_t hdr;

    srm_frame_hdr_init(&hdr, SRM_FRAME_PORT_GONE, 0);
    hdr.src_port = src_port;
    hdr.chan_seq = chan_seq;
    hdr.seq      = final;
    send_bytes(&hdr, sizeof(hdr));
}

void raw_peer::heartbeat()
{
    srm_frame_hdr_t hdr;
    srm_frame_hdr_init(&hdr, SRM_FRAME_ACK, 0);
    (void)::send(fd_, &hdr, sizeof(hdr), MSG_NOSIGNAL | MSG_DONTWAIT);
}

bool raw_peer::connected()
{
    char buf[4096];
    ssize_t n;
    while ((n = recv(fd_, buf, sizeof(buf), MSG_DONTWAIT)) > 0) {
    }
    return (n < 0) && ((errno == EAGAIN) || (errno == EWOULDBLOCK));
}

void raw_peer::drop_connection()
{
    linger reset = {1, 0};
    setsockopt(fd_, SOL_SOCKET, SO_LINGER, &reset, sizeof(reset));
    close(fd_);
    fd_ = -1;
}

} // namespace srm_test
