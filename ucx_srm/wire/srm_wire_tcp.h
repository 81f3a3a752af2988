/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The tcp wire: how one agent reaches another over any IP network. Only
 * sockets live here; what travels on them (frames, handshake, order) is the
 * channel layer's business (agent/srm_channel.c).
 */
#ifndef SRM_WIRE_TCP_H
#define SRM_WIRE_TCP_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <sys/uio.h>

#include <ucx_srm/common/srm_address.h>

/*
 * The address of an interface ("auto": the first up and not loopback that
 * has one), port 0, of the family (srm_address_family_t; AUTO: its first
 * IPv4 address if it has one, else its first IPv6 one). IPv6 link-local
 * addresses are never taken: they name a different interface on every
 * host.
 */
int srm_wire_tcp_iface_addr(const char *device, unsigned family,
                            srm_wire_addr_t *addr, char *name,
                            size_t name_size);

/* A listening socket on addr (port 0: any); *port_p gets the port. */
int srm_wire_tcp_listen(const srm_wire_addr_t *addr, uint16_t *port_p);

/* Non-blocking connect; completion is signalled by EPOLLOUT. */
int srm_wire_tcp_connect(const srm_wire_addr_t *addr);

/* 0 once a non-blocking connect succeeded, else the errno. */
int srm_wire_tcp_connect_result(int fd);

int srm_wire_tcp_accept(int listen_fd);

/* Bytes sent or read (>= 0), 0 also for EAGAIN; -1 on error, or on EOF
 * with errno 0. */
ssize_t srm_wire_tcp_send(int fd, const void *buf, size_t len);
ssize_t srm_wire_tcp_recv(int fd, void *buf, size_t len);
ssize_t srm_wire_tcp_sendv(int fd, const struct iovec *iov, int iovcnt);
/* Fills the buffers in order, as one read. */
ssize_t srm_wire_tcp_recvv(int fd, const struct iovec *iov, int iovcnt);

/* Segments the connection retransmitted since it was made, and data
 * segments it sent (TCP_INFO; *sent 0 where the kernel does not count them). */
int srm_wire_tcp_retransmits(int fd, uint32_t *resent, uint32_t *sent);

/* "a.b.c.d:port", "[v6]:port" or "none"; size SRM_WIRE_ADDR_STRLEN. */
const char *srm_wire_tcp_str(const srm_wire_addr_t *addr, char *buf,
                             size_t size);

#endif
