/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Test helpers that speak the agent protocol directly: a private srmd on a
 * unique socket, and raw clients that attach, send and receive frames (or
 * misbehave on purpose).
 */
#ifndef SRM_TEST_AGENT_H
#define SRM_TEST_AGENT_H

extern "C" {
#include <ucx_srm/common/srm_proto.h>
#include <ucx_srm/common/srm_shm.h>
}

#include <string>
#include <sys/types.h>
#include <vector>

namespace srm_test {

/* The srmd built next to this test (SRM_TEST_SRMD overrides). */
std::string srmd_path();

/*
 * The agents' UCX_SRM_DEVICES setting for channels between them: the
 * loopback interface (tcp wire), or what SRM_TEST_WIRE_DEVICE names, e.g.
 * "rxe0:1" to run the same tests on the verbs wire (test_vm_verbs does,
 * in the soft-RoCE VM).
 */
std::string wire_devices();

/* A blocking TCP connection to an agent's wire address, whose receives
 * time out after recv_timeout_s (0: never); -1 and errno. */
int connect_wire(const srm_wire_addr_t &to, int recv_timeout_s = 0);

srm_wire_addr_t wire_with_port(srm_wire_addr_t addr, uint16_t port);

/* A private agent, killed when the object goes away. */
class agent {
public:
    explicit agent(const std::vector<std::string> &env = {});
    ~agent();
    const std::string &socket() const { return socket_; }
    pid_t pid() const { return pid_; }
    std::string status() const;          /* srmctl status text */
    std::string fault(bool mute) const;  /* srmctl fault [--mute] */
    unsigned long long counter(const std::string &name) const;
    double cpu_seconds() const;          /* user + system time so far */
    void kill_now();

private:
    std::string ask(const void *req, size_t size) const;

    std::string socket_;
    pid_t       pid_ = -1;
};

struct frame {
    srm_frame_hdr_t      hdr;
    std::vector<uint8_t> payload;
};

class raw_client {
public:
    /* Attached with one TX ring; both rings of ring_size bytes. */
    explicit raw_client(const std::string &socket,
                        uint32_t ring_size = 1 << 20);
    ~raw_client();

    uint32_t port() const { return port_; }
    uint32_t key() const { return key_; }
    uint64_t node_id() const { return node_id_; }
    /* Where the agent listens for other agents (path 0). */
    const srm_wire_addr_t &wire() const { return wire_; }

    /* Names another agent's node in our node table, as the module does
     * (path1: its second path's address, if any). */
    void name_node(uint32_t index, uint64_t node_id,
                   const srm_wire_addr_t &path0,
                   const srm_wire_addr_t &path1 = srm_wire_addr_t{});
    int sock_fd() const { return sock_fd_; }
    int doorbell_fd() const { return doorbell_fd_; }
    int event_fd() const { return event_fd_; }

    /* false if the TX ring is full */
    bool send(uint32_t dst_port, uint32_t dst_key, const void *data,
              uint32_t length, uint32_t seq = 0, uint32_t dst_node = 0);
    /* false if nothing arrived */
    bool recv(frame *out);
    /* Waits up to timeout_ms for a frame. */
    bool recv_wait(frame *out, int timeout_ms);
    /* True if the agent closed our control socket within timeout_ms. */
    bool dropped_within(int timeout_ms);

    /* Raw access for misbehaving on purpose. */
    srm_shm_ctl_t *ctl() { return ctl_; }
    uint8_t *tx_data() { return base_ + layout_.tx_offset[0]; }
    size_t tx_size() const { return layout_.tx_ring_size; }
    void ring_doorbell();

private:
    int              sock_fd_ = -1, doorbell_fd_ = -1, event_fd_ = -1;
    uint32_t         port_ = 0, key_ = 0;
    uint64_t         node_id_ = 0;
    srm_wire_addr_t  wire_    = {};
    srm_shm_layout_t layout_;
    uint8_t          *base_ = nullptr;
    srm_shm_ctl_t    *ctl_  = nullptr;
    srm_ring_t       tx_, rx_;
};

} // namespace srm_test

#endif
