/* SPDX-License-Identifier: BSD-3-Clause */
#define _GNU_SOURCE
#include "srm_wire_tcp.h"

#include <ucx_srm/common/srm_config.h>

#include <arpa/inet.h>
#include <errno.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

int srm_wire_tcp_iface_addr(const char *device, unsigned family,
                            srm_wire_addr_t *addr, char *name,
                            size_t name_size)
{
    struct ifaddrs *ifaddrs, *ifa;
    const struct sockaddr *best = NULL;
    char chosen[IF_NAMESIZE + 8];

    if (strcmp(device, "auto") == 0) {
        /* The module names srm's UCX device after the same choice. */
        srm_config_device_name(device, family, chosen, sizeof(chosen));
        device = chosen;
    }
    if (getifaddrs(&ifaddrs) != 0) {
        return -1;
    }
    for (ifa = ifaddrs; ifa != NULL; ifa = ifa->ifa_next) {
        if ((ifa->ifa_addr == NULL) || !(ifa->ifa_flags & IFF_UP) ||
            (strcmp(ifa->ifa_name, device) != 0) ||
            !srm_config_addr_usable(ifa->ifa_addr, family)) {
            continue;
        }
        /* The first address, but IPv4 before IPv6 (with AUTO), so that
         * adding IPv6 to a host changes nothing. */
        if ((best == NULL) || ((best->sa_family != AF_INET) &&
                               (ifa->ifa_addr->sa_family == AF_INET))) {
            best = ifa->ifa_addr;
        }
    }
    if (best != NULL) {
        memset(addr, 0, sizeof(*addr));
        if (best->sa_family == AF_INET) {
            addr->family = SRM_WIRE_ADDR_IPV4;
            memcpy(addr->ip, &((const struct sockaddr_in*)best)->sin_addr, 4);
        } else {
            addr->family = SRM_WIRE_ADDR_IPV6;
            memcpy(addr->ip, &((const struct sockaddr_in6*)best)->sin6_addr,
                   16);
        }
        snprintf(name, name_size, "%s", device);
    }
    freeifaddrs(ifaddrs);
    if (best == NULL) {
        errno = ENODEV;
        return -1;
    }
    return 0;
}

/* The socket address of addr; its length, 0 if addr has no family. */
static socklen_t srm_wire_tcp_sockaddr(const srm_wire_addr_t *addr,
                                       struct sockaddr_storage *ss)
{
    struct sockaddr_in *sin   = (struct sockaddr_in*)ss;
    struct sockaddr_in6 *sin6 = (struct sockaddr_in6*)ss;

    memset(ss, 0, sizeof(*ss));
    switch (addr->family) {
    case SRM_WIRE_ADDR_IPV4:
        sin->sin_family = AF_INET;
        sin->sin_port   = addr->port;
        memcpy(&sin->sin_addr, addr->ip, 4);
        return sizeof(*sin);
    case SRM_WIRE_ADDR_IPV6:
        sin6->sin6_family = AF_INET6;
        sin6->sin6_port   = addr->port;
        memcpy(&sin6->sin6_addr, addr->ip, 16);
        return sizeof(*sin6);
    default:
        errno = EAFNOSUPPORT;
        return 0;
    }
}

static void srm_wire_tcp_tune(int fd)
{
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
}

int srm_wire_tcp_listen(const srm_wire_addr_t *addr, uint16_t *port_p)
{
    struct sockaddr_storage ss;
    socklen_t len = srm_wire_tcp_sockaddr(addr, &ss);
    int fd, one = 1, saved;

    if (len == 0) {
        return -1;
    }
    fd = socket(ss.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) {
        return -1;
    }
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    if (ss.ss_family == AF_INET6) {
        /* An address the kernel still checks for duplicates (the first
         * seconds after boot) cannot be bound otherwise, and srmd would
         * not start. IP_FREEBIND covers IPv6 sockets too (glibc has no
         * IPV6_FREEBIND). */
        setsockopt(fd, IPPROTO_IP, IP_FREEBIND, &one, sizeof(one));
    }
    if ((bind(fd, (struct sockaddr*)&ss, len) != 0) ||
        (listen(fd, 128) != 0) ||
        (getsockname(fd, (struct sockaddr*)&ss, &len) != 0)) {
        saved = errno;
        close(fd);
        errno = saved;
        return -1;
    }
    /* The port field sits at the same offset in both families. */
    *port_p = ((struct sockaddr_in*)&ss)->sin_port;
    return fd;
}

int srm_wire_tcp_connect(const srm_wire_addr_t *addr)
{
    struct sockaddr_storage ss;
    socklen_t len = srm_wire_tcp_sockaddr(addr, &ss);
    int fd, saved;

    if (len == 0) {
        return -1;
    }
    fd = socket(ss.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) {
        return -1;
    }
    srm_wire_tcp_tune(fd);
    if ((connect(fd, (struct sockaddr*)&ss, len) != 0) &&
        (errno != EINPROGRESS)) {
        saved = errno;
        close(fd);
        errno = saved;
        return -1;
    }
    return fd;
}

int srm_wire_tcp_connect_result(int fd)
{
    socklen_t len = sizeof(int);
    int error     = 0;

    if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &error, &len) != 0) {
        return errno;
    }
    return error;
}

int srm_wire_tcp_accept(int listen_fd)
{
    int fd = accept4(listen_fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);

    if (fd >= 0) {
        srm_wire_tcp_tune(fd);
    }
    return fd;
}

ssize_t srm_wire_tcp_send(int fd, const void *buf, size_t len)
{
    ssize_t ret = send(fd, buf, len, MSG_DONTWAIT | MSG_NOSIGNAL);

    if (ret >= 0) {
        return ret;
    }
    return ((errno == EAGAIN) || (errno == EINTR)) ? 0 : -1;
}

ssize_t srm_wire_tcp_sendv(int fd, const struct iovec *iov, int iovcnt)
{
    struct msghdr msg = {.msg_iov = (struct iovec*)iov, .msg_iovlen = iovcnt};
    ssize_t ret       = sendmsg(fd, &msg, MSG_DONTWAIT | MSG_NOSIGNAL);

    if (ret >= 0) {
        return ret;
    }
    return ((errno == EAGAIN) || (errno == EINTR)) ? 0 : -1;
}

ssize_t srm_wire_tcp_recv(int fd, void *buf, size_t len)
{
    struct iovec iov = {.iov_base = buf, .iov_len = len};

    return srm_wire_tcp_recvv(fd, &iov, 1);
}

ssize_t srm_wire_tcp_recvv(int fd, const struct iovec *iov, int iovcnt)
{
    struct msghdr msg = {.msg_iov = (struct iovec*)iov, .msg_iovlen = iovcnt};
    ssize_t ret       = recvmsg(fd, &msg, MSG_DONTWAIT);

    if (ret > 0) {
        return ret;
    } else if (ret == 0) {
        errno = 0; /* orderly close: the peer agent left */
        return -1;
    }
    return ((errno == EAGAIN) || (errno == EINTR)) ? 0 : -1;
}

const char *srm_wire_tcp_str(const srm_wire_addr_t *addr, char *buf,
                             size_t size)
{
    char ip[INET6_ADDRSTRLEN];

    switch (addr->family) {
    case SRM_WIRE_ADDR_IPV4:
        inet_ntop(AF_INET, addr->ip, ip, sizeof(ip));
        snprintf(buf, size, "%s:%u", ip, (unsigned)ntohs(addr->port));
        break;
    case SRM_WIRE_ADDR_IPV6:
        inet_ntop(AF_INET6, addr->ip, ip, sizeof(ip));
        snprintf(buf, size, "[%s]:%u", ip, (unsigned)ntohs(addr->port));
        break;
    default:
        snprintf(buf, size, "none");
        break;
    }
    return buf;
}
