/* SPDX-License-Identifier: BSD-3-Clause */
#include "srm_notify.h"

#include <ucx_srm/common/srm_log.h>

#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

void srm_notify(const char *state)
{
    const char *path = getenv("NOTIFY_SOCKET");
    struct sockaddr_un addr = {.sun_family = AF_UNIX};
    size_t path_len;
    int fd;

    if ((path == NULL) || ((path[0] != '/') && (path[0] != '@'))) {
        return;
    }
    path_len = strlen(path);
    if (path_len >= sizeof(addr.sun_path)) {
        srm_warn("NOTIFY_SOCKET is too long for a unix socket address");
        return;
    }
    memcpy(addr.sun_path, path, path_len);
    if (path[0] == '@') {
        addr.sun_path[0] = '\0'; /* abstract */
    }

    fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if ((fd < 0) ||
        (sendto(fd, state, strlen(state), MSG_NOSIGNAL,
                (const struct sockaddr*)&addr,
                offsetof(struct sockaddr_un, sun_path) + path_len) < 0)) {
        srm_warn("cannot tell the service manager '%s' on %s: %m", state,
                 path);
    }
    if (fd >= 0) {
        close(fd);
    }
}
