/* SPDX-License-Identifier: BSD-3-Clause */
#define _GNU_SOURCE
#include "srm_proto.h"

#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <pwd.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

void srm_msg_hdr_init(srm_msg_hdr_t *hdr, srm_msg_type_t type)
{
    hdr->magic   = SRM_PROTO_MAGIC;
    hdr->version = SRM_PROTO_VERSION;
    hdr->type    = (uint16_t)type;
}

int srm_msg_hdr_check(const srm_msg_hdr_t *hdr, size_t length,
                      srm_msg_type_t type, size_t min_length)
{
    if ((length < sizeof(*hdr)) || (hdr->magic != SRM_PROTO_MAGIC)) {
        errno = EPROTO;
        return -1;
    }
    if (hdr->version != SRM_PROTO_VERSION) {
        errno = EPROTONOSUPPORT;
        return -1;
    }
    if ((hdr->type != type) || (length < min_length)) {
        errno = EBADMSG;
        return -1;
    }
    return 0;
}

int srm_status_rep_check(const srm_status_rep_t *rep, size_t length)
{
    if (srm_msg_hdr_check(&rep->hdr, length, SRM_MSG_STATUS_REP,
                          offsetof(srm_status_rep_t, text)) != 0) {
        return -1;
    }
    if (rep->length > length - offsetof(srm_status_rep_t, text)) {
        errno = EBADMSG;
        return -1;
    }
    return 0;
}

int srm_sock_addr(const char *name, struct sockaddr_un *addr,
                  socklen_t *addrlen)
{
    size_t len = strlen(name);

    if ((len == 0) || (len >= sizeof(addr->sun_path) - 1)) {
        errno = ENAMETOOLONG;
        return -1;
    }
    memset(addr, 0, sizeof(*addr));
    addr->sun_family = AF_UNIX;
    memcpy(addr->sun_path + 1, name, len); /* leading NUL: abstract */
    *addrlen = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + len);
    return 0;
}

ssize_t srm_sock_send(int fd, const void *buf, size_t len, const int *fds,
                      int nfds)
{
    union {
        char           buf[CMSG_SPACE(sizeof(int) * SRM_PROTO_MAX_FDS)];
        struct cmsghdr align;
    } control;
    struct iovec iov = {.iov_base = (void*)buf, .iov_len = len};
    struct msghdr msg = {.msg_iov = &iov, .msg_iovlen = 1};
    struct cmsghdr *cmsg;
    ssize_t ret;

    if (nfds > SRM_PROTO_MAX_FDS) {
        errno = EINVAL;
        return -1;
    }
    if (nfds > 0) {
        memset(&control, 0, sizeof(control));
        msg.msg_control    = control.buf;
        msg.msg_controllen = CMSG_SPACE(sizeof(int) * (size_t)nfds);
        cmsg               = CMSG_FIRSTHDR(&msg);
        cmsg->cmsg_level   = SOL_SOCKET;
        cmsg->cmsg_type    = SCM_RIGHTS;
        cmsg->cmsg_len     = CMSG_LEN(sizeof(int) * (size_t)nfds);
        memcpy(CMSG_DATA(cmsg), fds, sizeof(int) * (size_t)nfds);
    }

    do {
        ret = sendmsg(fd, &msg, MSG_NOSIGNAL);
    } while ((ret < 0) && (errno == EINTR));
    return ret;
}

ssize_t srm_sock_recv(int fd, void *buf, size_t len, int *fds, int *nfds)
{
    union {
        char           buf[CMSG_SPACE(sizeof(int) * SRM_PROTO_MAX_FDS)];
        struct cmsghdr align;
    } control;
    struct iovec iov = {.iov_base = buf, .iov_len = len};
    struct msghdr msg = {.msg_iov = &iov, .msg_iovlen = 1,
                         .msg_control = control.buf,
                         .msg_controllen = sizeof(control.buf)};
    int max_fds = (nfds != NULL) ? *nfds : 0;
    struct cmsghdr *cmsg;
    int got = 0, i, n, rfd;
    ssize_t ret;

    do {
        ret = recvmsg(fd, &msg, MSG_CMSG_CLOEXEC);
    } while ((ret < 0) && (errno == EINTR));
    if (ret < 0) {
        return ret;
    }

    for (cmsg = CMSG_FIRSTHDR(&msg); cmsg != NULL;
         cmsg = CMSG_NXTHDR(&msg, cmsg)) {
        if ((cmsg->cmsg_level != SOL_SOCKET) ||
            (cmsg->cmsg_type != SCM_RIGHTS)) {
            continue;
        }
        n = (int)((cmsg->cmsg_len - CMSG_LEN(0)) / sizeof(int));
        for (i = 0; i < n; ++i) {
            memcpy(&rfd, CMSG_DATA(cmsg) + i * sizeof(int), sizeof(int));
            if (got < max_fds) {
                fds[got++] = rfd;
            } else {
                close(rfd); /* never leak what a peer pushed on us */
            }
        }
    }
    if ((msg.msg_flags & MSG_TRUNC) != 0) {
        for (i = 0; i < got; ++i) {
            close(fds[i]);
        }
        errno = EMSGSIZE;
        return -1;
    }
    if (nfds != NULL) {
        *nfds = got;
    }
    return ret;
}

int srm_sock_connect(const char *name)
{
    struct sockaddr_un addr;
    socklen_t addrlen;
    int fd, flags, saved;

    if (srm_sock_addr(name, &addr, &addrlen) != 0) {
        return -1;
    }
    fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (fd < 0) {
        return -1;
    }
    flags = fcntl(fd, F_GETFL);
    if ((connect(fd, (struct sockaddr*)&addr, addrlen) != 0) ||
        (flags < 0) || (fcntl(fd, F_SETFL, flags & ~O_NONBLOCK) != 0)) {
        saved = errno;
        close(fd);
        errno = saved;
        return -1;
    }
    return fd;
}

int srm_sock_connect_within(const char *name, double seconds)
{
    struct timespec start, now, nap = {.tv_nsec = 2000000};
    int fd;

    clock_gettime(CLOCK_MONOTONIC, &start);
    for (;;) {
        fd = srm_sock_connect(name);
        if ((fd >= 0) || (errno != EAGAIN)) {
            return fd;
        }
        clock_gettime(CLOCK_MONOTONIC, &now);
        if (((double)(now.tv_sec - start.tv_sec) +
             (double)(now.tv_nsec - start.tv_nsec) * 1e-9) >= seconds) {
            errno = EAGAIN;
            return -1;
        }
        nanosleep(&nap, NULL);
    }
}

int srm_sock_peer_uid(int fd, uid_t *uid_p)
{
    struct ucred cred;
    socklen_t len = sizeof(cred);

    if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0) {
        return -1;
    }
    *uid_p = cred.uid;
    return 0;
}

int srm_sock_agent_uid_trusted(uid_t uid)
{
    struct passwd pw, *found;
    char buf[1024];

    if ((uid == getuid()) || (uid == 0)) {
        return 0;
    }
    /* Looked up only now: with LDAP behind NSS a lookup may be slow. Only
     * a system uid: a container image's or a directory's own "srmd" entry
     * could otherwise name an ordinary user's uid. */
    if ((uid < SRM_SITE_USER_UID_MAX) &&
        (getpwnam_r(SRM_SITE_USER, &pw, buf, sizeof(buf), &found) == 0) &&
        (found != NULL) && (found->pw_uid == uid)) {
        return 0;
    }
    return -1;
}

void srm_sock_default_name(char *buf, size_t size)
{
    snprintf(buf, size, "srmd.%u", (unsigned)getuid());
}

srm_agent_choice_t srm_sock_choose_agent(const char *configured, char *buf,
                                         size_t size, uid_t *squatter_p)
{
    srm_agent_choice_t choice = SRM_AGENT_OWN;
    uid_t uid;
    int fd;

    if ((configured != NULL) && (configured[0] != '\0')) {
        snprintf(buf, size, "%s", configured);
        return SRM_AGENT_CONFIGURED;
    }
    /* One try: a socket whose listener never accepts (its queue full)
     * must not hold up every process that opens srm here. */
    fd = srm_sock_connect(SRM_SITE_SOCKET);
    if ((fd < 0) && (errno == EAGAIN)) {
        *squatter_p = (uid_t)-1;
        choice      = SRM_AGENT_OWN_SQUATTED;
    } else if (fd >= 0) {
        if (srm_sock_peer_uid(fd, &uid) != 0) {
            uid = (uid_t)-1;
        }
        close(fd);
        if ((uid != (uid_t)-1) && (srm_sock_agent_uid_trusted(uid) == 0)) {
            snprintf(buf, size, "%s", SRM_SITE_SOCKET);
            return SRM_AGENT_SITE;
        }
        *squatter_p = uid;
        choice      = SRM_AGENT_OWN_SQUATTED;
    }
    srm_sock_default_name(buf, size);
    return choice;
}
