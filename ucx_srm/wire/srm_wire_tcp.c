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

int srm_wire_tcp_iface_addr(const char *device, uint32_t *ipv4, char *name,
                            size_t name_size)
{
    struct ifaddrs *ifaddrs, *ifa;
    char chosen[IF_NAMESIZE + 8];
    int found = -1;

    if (strcmp(device, "auto") == 0) {
        /* The module names srm's UCX device after the same choice. */
        srm_config_device_name(device, chosen, sizeof(chosen));
        device = chosen;
    }
    if (getifaddrs(&ifaddrs) != 0) {
        return -1;
    }
    for (ifa = ifaddrs; ifa != NULL; ifa = ifa->ifa_next) {
        if ((ifa->ifa_addr == NULL) || (ifa->ifa_addr->sa_family != AF_INET) ||
            !(ifa->ifa_flags & IFF_UP) ||
            (strcmp(ifa->ifa_name, device) != 0)) {
            continue;
        }
        *ipv4 = ((struct sockaddr_in*)ifa->ifa_addr)->sin_addr.s_addr;
        snprintf(name, name_size, "%s", ifa->ifa_name);
        found = 0;
        break;
    }
    freeifaddrs(ifaddrs);
    if (found != 0) {
        errno = ENODEV;
    }
    return found;
}

static void srm_wire_tcp_sockaddr(struct sockaddr_in *sin, uint32_t ipv4,
                                  uint16_t port)
{
    memset(sin, 0, sizeof(*sin));
    sin->sin_family      = AF_INET;
    sin->sin_addr.s_addr = ipv4;
    sin->sin_port        = port;
}

static void srm_wire_tcp_tune(int fd)
{
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
}

int srm_wire_tcp_listen(uint32_t ipv4, uint16_t port, uint16_t *port_p)
{
    struct sockaddr_in sin;
    socklen_t len = sizeof(sin);
    int fd, one = 1, saved;

    fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) {
        return -1;
    }
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    srm_wire_tcp_sockaddr(&sin, ipv4, port);
    if ((bind(fd, (struct sockaddr*)&sin, sizeof(sin)) != 0) ||
        (listen(fd, 128) != 0) ||
        (getsockname(fd, (struct sockaddr*)&sin, &len) != 0)) {
        saved = errno;
        close(fd);
        errno = saved;
        return -1;
    }
    *port_p = sin.sin_port;
    return fd;
}

int srm_wire_tcp_connect(uint32_t ipv4, uint16_t port)
{
    struct sockaddr_in sin;
    int fd, saved;

    fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) {
        return -1;
    }
    srm_wire_tcp_tune(fd);
    srm_wire_tcp_sockaddr(&sin, ipv4, port);
    if ((connect(fd, (struct sockaddr*)&sin, sizeof(sin)) != 0) &&
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

const char *srm_wire_tcp_str(uint32_t ipv4, uint16_t port, char *buf,
                             size_t size)
{
    char ip[INET_ADDRSTRLEN];
    struct in_addr addr = {.s_addr = ipv4};

    inet_ntop(AF_INET, &addr, ip, sizeof(ip));
    snprintf(buf, size, "%s:%u", ip, (unsigned)ntohs(port));
    return buf;
}
