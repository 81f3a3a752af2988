/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * A made-up agent on the tcp wire, for tests that need a peer which says
 * exactly what they choose: it dials an agent, says HELLO as the given node
 * id (no cluster secret) for one channel kind and path, and then sends
 * frames numbered as it likes, whole or in pieces. It listens where it says
 * it does, and answers nothing there.
 */
#ifndef SRM_TEST_PEER_H
#define SRM_TEST_PEER_H

#include "srm_test_agent.h"

#include <cstdint>
#include <string>
#include <vector>

namespace srm_test {

class raw_peer {
public:
    raw_peer(const srm_wire_addr_t &to, uint64_t id, uint8_t kind = 0,
             uint8_t path = 0);
    ~raw_peer();

    /* An AM from source port src_port, as bytes on the wire. */
    static std::vector<uint8_t> am(uint32_t chan_seq, uint32_t seq,
                                   const raw_client &dst, const void *data,
                                   size_t length, uint32_t src_port = 1);

    void send_bytes(const void *data, size_t length);
    void send_am(uint32_t chan_seq, uint32_t seq, const raw_client &dst,
                 const std::string &text);
    /* PORT_GONE: source port src_port left, having sent final frames. */
    void send_port_gone(uint32_t chan_seq, uint32_t src_port, uint32_t final);
    /* An ack of nothing: what keeps a connection heard. */
    void heartbeat();
    /* Whether the agent still keeps the connection (what it sent, read). */
    bool connected();
    /* Closes the connection (a reset); the listener stays. */
    void drop_connection();

private:
    int fd_ = -1, listen_fd_ = -1;
};

} // namespace srm_test

#endif
