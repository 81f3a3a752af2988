/* SPDX-License-Identifier: BSD-3-Clause */
#include "srm_test_agent.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <fstream>
#include <iterator>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sstream>
#include <sys/socket.h>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>

namespace srm_test {

std::string srmd_path()
{
    const char *env = getenv("SRM_TEST_SRMD");
    return (env != nullptr) ? env : SRM_TEST_BUILDDIR "/srmd";
}

std::string wire_devices()
{
    const char *device = getenv("SRM_TEST_WIRE_DEVICE");

    return std::string("UCX_SRM_DEVICES=") +
           (((device != nullptr) && (*device != '\0')) ? device : "lo");
}

agent::agent(const std::vector<std::string> &env)
{
    static int counter;
    socket_ = "srm-gtest-" + std::to_string(getpid()) + "-" +
              std::to_string(counter++);

    pid_ = fork();
    if (pid_ == 0) {
        /* A test that crashes must not leave its agents behind. */
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        for (const std::string &e : env) {
            putenv(strdup(e.c_str()));
        }
        std::string path = srmd_path();
        execl(path.c_str(), "srmd", "-q", "-s", socket_.c_str(), nullptr);
        _exit(127);
    }
    for (int i = 0; i < 500; ++i) {
        int fd = srm_sock_connect(socket_.c_str());
        if (fd >= 0) {
            close(fd);
            return;
        }
        usleep(10000);
    }
    ADD_FAILURE() << "srmd (" << srmd_path() << ") did not start on @"
                  << socket_;
}

agent::~agent()
{
    kill_now();
}

void agent::kill_now()
{
    if (pid_ > 0) {
        kill(pid_, SIGKILL);
        waitpid(pid_, nullptr, 0);
        pid_ = -1;
    }
}

std::string agent::status() const
{
    srm_status_req_t req = {};
    srm_msg_hdr_init(&req.hdr, SRM_MSG_STATUS_REQ);
    return ask(&req, sizeof(req));
}

std::string agent::fault(bool mute) const
{
    srm_fault_req_t req = {};
    srm_msg_hdr_init(&req.hdr, SRM_MSG_FAULT_REQ);
    req.node = SRM_FAULT_ALL_NODES;
    req.kind = -1;
    req.how  = mute ? SRM_FAULT_MUTE : SRM_FAULT_RESET;
    return ask(&req, sizeof(req));
}

std::string agent::ask(const void *req, size_t size) const
{
    int fd = srm_sock_connect(socket_.c_str());
    if (fd < 0) {
        return "";
    }
    srm_sock_send(fd, req, size, nullptr, 0);
    std::vector<char> buf(sizeof(srm_status_rep_t));
    ssize_t len = srm_sock_recv(fd, buf.data(), buf.size(), nullptr, nullptr);
    close(fd);
    if (len < (ssize_t)offsetof(srm_status_rep_t, text)) {
        return "";
    }
    const srm_status_rep_t *rep = reinterpret_cast<srm_status_rep_t*>(
            buf.data());
    return std::string(rep->text, rep->length);
}

unsigned long long agent::counter(const std::string &name) const
{
    std::string text = status();
    size_t pos       = text.find(" " + name + " ");
    if (pos == std::string::npos) {
        ADD_FAILURE() << "no counter " << name << " in:\n" << text;
        return 0;
    }
    return std::strtoull(text.c_str() + pos + name.size() + 2, nullptr, 10);
}

double agent::cpu_seconds() const
{
    std::ifstream stat("/proc/" + std::to_string(pid_) + "/stat");
    std::string text((std::istreambuf_iterator<char>(stat)),
                     std::istreambuf_iterator<char>());
    /* After "pid (comm)": state is field 3, utime and stime 14 and 15. */
    std::istringstream fields(text.substr(text.rfind(')') + 2));
    std::string skip;
    unsigned long long utime = 0, stime = 0;
    for (int i = 3; i < 14; ++i) {
        fields >> skip;
    }
    fields >> utime >> stime;
    return (double)(utime + stime) / sysconf(_SC_CLK_TCK);
}

raw_client::raw_client(const std::string &socket, uint32_t ring_size)
{
    sock_fd_ = srm_sock_connect(socket.c_str());
    EXPECT_GE(sock_fd_, 0) << "connect @" << socket << ": "
                           << strerror(errno);

    srm_attach_req_t req = {};
    srm_msg_hdr_init(&req.hdr, SRM_MSG_ATTACH_REQ);
    req.num_tx_rings = 1;
    req.tx_ring_size = ring_size;
    req.rx_ring_size = ring_size;
    snprintf(req.name, sizeof(req.name), "gtest");
    EXPECT_GT(srm_sock_send(sock_fd_, &req, sizeof(req), nullptr, 0), 0);

    srm_attach_rep_t rep = {};
    int fds[3], nfds = 3;
    ssize_t len = srm_sock_recv(sock_fd_, &rep, sizeof(rep), fds, &nfds);
    EXPECT_EQ((ssize_t)sizeof(rep), len);
    EXPECT_EQ(0, rep.status) << rep.error;
    EXPECT_EQ(3, nfds);
    if ((len != sizeof(rep)) || (rep.status != 0) || (nfds != 3)) {
        return;
    }
    port_        = rep.port;
    key_         = rep.key;
    node_id_     = rep.node_id;
    wire_        = rep.wire[0];
    doorbell_fd_ = fds[1];
    event_fd_    = fds[2];
    EXPECT_EQ(0, srm_shm_layout_init(&layout_, 1, 1 << 20, 1 << 20));
    void *addr;
    EXPECT_EQ(0, srm_shm_map(&layout_, fds[0], &addr));
    close(fds[0]);
    base_ = static_cast<uint8_t*>(addr);
    ctl_  = static_cast<srm_shm_ctl_t*>(addr);
    srm_ring_init_producer(&tx_, &ctl_->tx[0], base_ + layout_.tx_offset[0],
                           layout_.tx_ring_size);
    srm_ring_init_consumer(&rx_, &ctl_->rx, base_ + layout_.rx_offset,
                           layout_.rx_ring_size);
}

raw_client::~raw_client()
{
    if (base_ != nullptr) {
        srm_shm_unmap(&layout_, base_);
    }
    for (int fd : {sock_fd_, doorbell_fd_, event_fd_}) {
        if (fd >= 0) {
            close(fd);
        }
    }
}

void raw_client::ring_doorbell()
{
    const uint64_t one = 1;
    if (srm_shm_flag_take(&ctl_->agent_sleeping)) {
        EXPECT_EQ((ssize_t)sizeof(one), write(doorbell_fd_, &one, sizeof(one)));
    }
}

void raw_client::name_node(uint32_t index, uint64_t node_id,
                           const srm_wire_addr_t &path0,
                           const srm_wire_addr_t &path1)
{
    srm_shm_node_t *entry = &ctl_->nodes[index];
    entry->node_id        = node_id;
    entry->wire[0]        = path0;
    entry->wire[1]        = path1;
    srm_store_release(&entry->valid, (uint16_t)1);
}

srm_wire_addr_t wire_with_port(srm_wire_addr_t addr, uint16_t port)
{
    addr.port = port;
    return addr;
}

int connect_wire(const srm_wire_addr_t &to, int recv_timeout_s)
{
    timeval timeout = {recv_timeout_s, 0};
    sockaddr_storage ss = {};
    socklen_t len;
    if (to.family == SRM_WIRE_ADDR_IPV6) {
        sockaddr_in6 *sin6 = reinterpret_cast<sockaddr_in6*>(&ss);
        sin6->sin6_family  = AF_INET6;
        sin6->sin6_port    = to.port;
        memcpy(&sin6->sin6_addr, to.ip, 16);
        len = sizeof(*sin6);
    } else {
        sockaddr_in *sin = reinterpret_cast<sockaddr_in*>(&ss);
        sin->sin_family  = AF_INET;
        sin->sin_port    = to.port;
        memcpy(&sin->sin_addr, to.ip, 4);
        len = sizeof(*sin);
    }
    int fd = socket(ss.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if ((fd >= 0) && (connect(fd, (sockaddr*)&ss, len) != 0)) {
        int saved = errno;
        close(fd);
        errno = saved;
        return -1;
    }
    if ((fd >= 0) && (recv_timeout_s > 0)) {
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof(timeout));
    }
    return fd;
}

bool raw_client::send(uint32_t dst_port, uint32_t dst_key, const void *data,
                      uint32_t length, uint32_t seq, uint32_t dst_node)
{
    srm_frame_hdr_t *hdr;
    if (srm_ring_reserve(&tx_, srm_frame_record_size(length), &hdr) !=
        SRM_RING_OK) {
        return false;
    }
    srm_frame_hdr_init(hdr, SRM_FRAME_AM, length);
    hdr->src_port = 0xdead; /* the agent must overwrite this */
    hdr->dst_port = dst_port;
    hdr->dst_key  = dst_key;
    hdr->dst_node = dst_node;
    hdr->seq      = seq;
    std::memcpy(srm_frame_payload(hdr), data, length);
    srm_ring_commit(&tx_, srm_frame_record_size(length));
    ring_doorbell();
    return true;
}

bool raw_client::recv(frame *out)
{
    void *payload;
    if (srm_ring_peek(&rx_, SRM_FRAME_MAX_PAYLOAD, &out->hdr, &payload) !=
        SRM_RING_OK) {
        return false;
    }
    const uint8_t *p = static_cast<const uint8_t*>(payload);
    out->payload.assign(p, p + out->hdr.length);
    srm_ring_release(&rx_);
    if (srm_shm_flag_take(&ctl_->rx_space_wanted)) {
        ring_doorbell();
    }
    return true;
}

bool raw_client::recv_wait(frame *out, int timeout_ms)
{
    auto deadline = std::chrono::steady_clock::now() +
                    std::chrono::milliseconds(timeout_ms);
    while (!recv(out)) {
        if (std::chrono::steady_clock::now() > deadline) {
            return false;
        }
        std::this_thread::yield();
    }
    return true;
}

bool raw_client::dropped_within(int timeout_ms)
{
    struct pollfd pfd = {sock_fd_, POLLIN, 0};
    char byte;
    if (poll(&pfd, 1, timeout_ms) <= 0) {
        return false;
    }
    return ::recv(sock_fd_, &byte, 1, MSG_DONTWAIT) == 0;
}

} // namespace srm_test
