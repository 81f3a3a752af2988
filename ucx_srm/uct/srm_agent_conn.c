/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The client's side of the agent protocol: find the node agent (starting
 * one if allowed), attach, and map the rings it hands over.
 */
#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "srm_uct.h"

#include <ucx_srm/common/srm_proto.h>

#include <ucs/debug/log.h>
#include <ucs/sys/string.h>
#include <ucs/sys/sys.h>
#include <ucs/time/time.h>

#include <errno.h>
#include <pwd.h>
#include <spawn.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

#define UCT_SRM_CONNECT_RETRY_US 5000

/* Starts "srmd --daemonize", which returns once it serves the socket. */
static ucs_status_t uct_srm_agent_spawn(const uct_srm_md_t *md)
{
    char *argv[] = {(char*)"srmd", (char*)"--daemonize",
                    (char*)"--exit-when-idle", (char*)"--socket",
                    (char*)md->socket_name, NULL};
    int ret, wstatus;
    pid_t pid;

    if (access(md->agent_path, X_OK) != 0) {
        ucs_error("srm: no node agent at @%s and cannot start %s: %m "
                  "(set UCX_SRM_AGENT_PATH, or start srmd yourself)",
                  md->socket_name, md->agent_path);
        return UCS_ERR_NO_DEVICE;
    }

    ret = posix_spawn(&pid, md->agent_path, NULL, NULL, argv, environ);
    if (ret != 0) {
        ucs_error("srm: failed to start %s: %s", md->agent_path,
                  strerror(ret));
        return UCS_ERR_NO_DEVICE;
    }
    while ((waitpid(pid, &wstatus, 0) < 0) && (errno == EINTR)) {
    }
    if (!WIFEXITED(wstatus) || (WEXITSTATUS(wstatus) != 0)) {
        ucs_error("srm: %s failed to start (status 0x%x); see its log in "
                  "$TMPDIR or /tmp", md->agent_path, wstatus);
        return UCS_ERR_NO_DEVICE;
    }
    ucs_debug("srm: started node agent %s on @%s", md->agent_path,
              md->socket_name);
    return UCS_OK;
}

/* The agent sees everything we send and writes what we receive: refuse a
 * socket of anyone but ourselves or root before saying a word to it. */
static ucs_status_t uct_srm_agent_check_peer(const uct_srm_md_t *md, int fd)
{
    struct passwd *pw;
    uid_t uid;

    if (srm_sock_peer_uid(fd, &uid) != 0) {
        ucs_error("srm: cannot tell who serves @%s (SO_PEERCRED: %m)",
                  md->socket_name);
        return UCS_ERR_NO_DEVICE;
    }
    if (srm_sock_agent_uid_trusted(uid) == 0) {
        return UCS_OK;
    }
    pw = getpwuid(uid);
    ucs_error("srm: the node agent socket @%s is held by uid %u (%s), not by "
              "you (uid %u), root or the " SRM_SITE_USER " user: refusing it, "
              "another user may be posing as your agent; set UCX_SRM_SOCKET "
              "to another name or ask that user to stop", md->socket_name,
              (unsigned)uid, (pw != NULL) ? pw->pw_name : "no such user",
              (unsigned)getuid());
    return UCS_ERR_NO_DEVICE;
}

ucs_status_t uct_srm_agent_connect(const uct_srm_md_t *md, int *fd_p)
{
    ucs_time_t deadline = ucs_get_time() +
                          ucs_time_from_sec(md->connect_timeout);
    int spawned         = 0;
    ucs_status_t status;
    int fd;

    for (;;) {
        fd = srm_sock_connect(md->socket_name);
        if (fd >= 0) {
            status = uct_srm_agent_check_peer(md, fd);
            if (status != UCS_OK) {
                close(fd);
                return status;
            }
            *fd_p = fd;
            return UCS_OK;
        }
        if ((errno != ECONNREFUSED) && (errno != ENOENT) &&
            (errno != EAGAIN)) {
            ucs_error("srm: cannot connect to node agent @%s: %m",
                      md->socket_name);
            return UCS_ERR_NO_DEVICE;
        }
        if (errno == EAGAIN) {
            /* Its queue is full: a busy agent accepts soon, a process
             * that holds the name and never accepts does not. Neither is
             * a reason to start another agent. */
            if (ucs_get_time() > deadline) {
                ucs_error("srm: the node agent socket @%s accepted no "
                          "connection within %.1f s: its queue stays full "
                          "(an agent that stopped serving, or a process "
                          "that holds the name and never accepts)",
                          md->socket_name, md->connect_timeout);
                return UCS_ERR_NO_DEVICE;
            }
            usleep(UCT_SRM_CONNECT_RETRY_US);
            continue;
        }
        if (md->agent_choice == SRM_AGENT_SITE) {
            /* Restarting, perhaps: wait for it, never start one of ours on
             * the site's name. */
            if (ucs_get_time() > deadline) {
                ucs_error("srm: the site's node agent @%s stopped answering "
                          "(%m) and did not come back within %.1f s",
                          md->socket_name, md->connect_timeout);
                return UCS_ERR_NO_DEVICE;
            }
            usleep(UCT_SRM_CONNECT_RETRY_US);
            continue;
        }
        if (md->agent_mode == SRM_AGENT_MODE_NEVER) {
            ucs_error("srm: no node agent listens on @%s and "
                      "UCX_SRM_AGENT=never; start srmd or set "
                      "UCX_SRM_AGENT=auto", md->socket_name);
            return UCS_ERR_NO_DEVICE;
        }
        if (!spawned) {
            status = uct_srm_agent_spawn(md);
            if (status != UCS_OK) {
                return status;
            }
            spawned = 1;
            continue;
        }
        if (ucs_get_time() > deadline) {
            ucs_error("srm: node agent @%s did not answer within %.1f s",
                      md->socket_name, md->connect_timeout);
            return UCS_ERR_NO_DEVICE;
        }
        usleep(UCT_SRM_CONNECT_RETRY_US);
    }
}

static ucs_status_t uct_srm_agent_request(const uct_srm_md_t *md,
                                          const uct_srm_iface_config_t *config,
                                          uct_srm_attachment_t *att)
{
    struct timeval tv = {.tv_sec = (time_t)md->connect_timeout + 1};
    srm_attach_req_t req;
    srm_attach_rep_t rep;
    int fds[3], nfds = 3, i;
    const char *exe;
    ssize_t len;

    memset(&req, 0, sizeof(req));
    srm_msg_hdr_init(&req.hdr, SRM_MSG_ATTACH_REQ);
    req.num_tx_rings = config->tx_rings;
    req.tx_ring_size = config->tx_ring_size;
    req.rx_ring_size = config->rx_ring_size;
    exe = strrchr(ucs_get_exe(), '/');
    ucs_snprintf_zero(req.name, sizeof(req.name), "%s:%d",
                      (exe != NULL) ? exe + 1 : ucs_get_exe(), (int)getpid());
    setsockopt(att->sock_fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));

    if (srm_sock_send(att->sock_fd, &req, sizeof(req), NULL, 0) < 0) {
        ucs_error("srm: cannot send attach request to @%s: %m",
                  md->socket_name);
        return UCS_ERR_IO_ERROR;
    }
    len = srm_sock_recv(att->sock_fd, &rep, sizeof(rep), fds, &nfds);
    if (len <= 0) {
        ucs_error("srm: node agent @%s refused or did not answer: %s",
                  md->socket_name,
                  (len == 0) ? "connection closed (another user's agent?)" :
                               strerror(errno));
        return UCS_ERR_IO_ERROR;
    }
    if (srm_msg_hdr_check(&rep.hdr, (size_t)len, SRM_MSG_ATTACH_REP,
                          sizeof(rep)) != 0) {
        ucs_error("srm: bad attach reply from @%s (%m): agent and module "
                  "versions differ?", md->socket_name);
        goto err_close_fds;
    }
    if (rep.status != 0) {
        ucs_error("srm: node agent @%s refused to attach: %.*s",
                  md->socket_name, (int)sizeof(rep.error), rep.error);
        goto err_close_fds;
    }
    if (nfds != 3) {
        ucs_error("srm: attach reply from @%s carried %d fds, expected 3",
                  md->socket_name, nfds);
        goto err_close_fds;
    }
    if ((rep.max_payload <= UCT_SRM_MAX_HDR) ||
        (rep.max_payload > SRM_FRAME_MAX_PAYLOAD)) {
        ucs_error("srm: node agent @%s reports a frame limit of %u bytes, "
                  "outside (%u, %u]", md->socket_name, rep.max_payload,
                  UCT_SRM_MAX_HDR, SRM_FRAME_MAX_PAYLOAD);
        goto err_close_fds;
    }

    att->port        = rep.port;
    att->key         = rep.key;
    att->node_id     = rep.node_id;
    att->max_payload = rep.max_payload;
    att->flags       = rep.flags;
    memcpy(att->wire, rep.wire, sizeof(att->wire));
    att->doorbell_fd = fds[1];
    att->event_fd    = fds[2];
    if ((srm_shm_layout_init(&att->layout, config->tx_rings,
                             config->tx_ring_size, config->rx_ring_size) != 0) ||
        (att->layout.total_size != rep.shm_size) ||
        (srm_shm_map(&att->layout, fds[0], &att->shm) != 0)) {
        ucs_error("srm: cannot map the rings from @%s (%m): not a segment sealed "
                  "against shrinking, or not of the size and layout asked "
                  "for", md->socket_name);
        close(fds[0]);
        return UCS_ERR_IO_ERROR;
    }
    close(fds[0]);
    return UCS_OK;

err_close_fds:
    for (i = 0; i < nfds; ++i) {
        close(fds[i]);
    }
    return UCS_ERR_IO_ERROR;
}

ucs_status_t uct_srm_agent_attach(const uct_srm_md_t *md,
                                  const uct_srm_iface_config_t *config,
                                  uct_srm_attachment_t *att)
{
    ucs_status_t status;

    memset(att, 0, sizeof(*att));
    att->doorbell_fd = -1;
    att->event_fd    = -1;

    status = uct_srm_agent_connect(md, &att->sock_fd);
    if (status != UCS_OK) {
        return status;
    }
    status = uct_srm_agent_request(md, config, att);
    if (status != UCS_OK) {
        uct_srm_agent_detach(att);
        return status;
    }
    ucs_info("srm: attached to %s node agent @%s as port %u",
             (md->agent_choice == SRM_AGENT_SITE)       ? "the site's" :
             (md->agent_choice == SRM_AGENT_CONFIGURED) ? "the configured "
                                                          "(UCX_SRM_SOCKET)" :
                                                          "this user's own",
             md->socket_name, att->port);
    return UCS_OK;
}

/* The agent's settings, "UCX_SRM_NAME=VALUE" lines, into rep->text;
 * -1 if it cannot say (an agent older than SRM_STATUS_FLAG_SETTINGS
 * answers with its status text, which holds no such line first). */
static int uct_srm_agent_settings(const uct_srm_md_t *md,
                                  srm_status_rep_t *rep)
{
    struct timeval tv = {.tv_sec = 2};
    srm_status_req_t req;
    ssize_t len;
    int fd;

    fd = srm_sock_connect_within(md->socket_name, 1.0);
    if ((fd < 0) || (uct_srm_agent_check_peer(md, fd) != UCS_OK)) {
        goto err;
    }
    memset(&req, 0, sizeof(req));
    srm_msg_hdr_init(&req.hdr, SRM_MSG_STATUS_REQ);
    req.flags = SRM_STATUS_FLAG_SETTINGS;
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    if (srm_sock_send(fd, &req, sizeof(req), NULL, 0) < 0) {
        goto err;
    }
    len = srm_sock_recv(fd, rep, sizeof(*rep), NULL, NULL);
    if ((len <= 0) || (srm_status_rep_check(rep, (size_t)len) != 0) ||
        (rep->length >= sizeof(rep->text)) ||
        (rep->length < strlen("UCX_" SRM_CONFIG_PREFIX)) ||
        (strncmp(rep->text, "UCX_" SRM_CONFIG_PREFIX,
                 strlen("UCX_" SRM_CONFIG_PREFIX)) != 0)) {
        goto err;
    }
    rep->text[rep->length] = '\0';
    close(fd);
    return 0;

err:
    if (fd >= 0) {
        close(fd);
    }
    return -1;
}

/* The line of settings that starts with prefix (NAME=), or NULL. */
static const char *uct_srm_settings_find(const char *settings,
                                         const char *prefix, size_t length)
{
    const char *line;

    for (line = settings; *line != '\0'; line += strcspn(line, "\n") + 1) {
        if (strncmp(line, prefix, length) == 0) {
            return line;
        }
        if (line[strcspn(line, "\n")] == '\0') {
            break;
        }
    }
    return NULL;
}

void uct_srm_agent_check_settings(uct_srm_md_t *md)
{
    char mine[4096], differ[1024] = "", *line, *next;
    const char *theirs;
    srm_agent_config_t config;
    srm_status_rep_t *rep;
    size_t name_len;
    int len, set;

    if (md->settings_checked) {
        return;
    }
    md->settings_checked = 1;
    if (srm_ucx_config_fill(&config, srm_agent_config_table, "UCX_",
                            SRM_CONFIG_PREFIX) != UCS_OK) {
        return;
    }
    len = srm_config_format_settings(&config, srm_agent_config_table, mine,
                                     sizeof(mine));
    ucs_config_parser_release_opts(&config, srm_agent_config_table);
    rep = ucs_malloc(sizeof(*rep), "srm_settings_rep");
    if ((len < 0) || (rep == NULL) || (uct_srm_agent_settings(md, rep) != 0)) {
        ucs_debug("srm: could not compare settings with the agent @%s",
                  md->socket_name);
        ucs_free(rep);
        return;
    }

    /* Only what this process sets: the rest is the agent's to choose. */
    for (line = mine; (next = strchr(line, '\n')) != NULL; line = next + 1) {
        *next    = '\0';
        name_len = strcspn(line, "=");
        line[name_len] = '\0';
        set = (getenv(line) != NULL);
        line[name_len] = '=';
        theirs = uct_srm_settings_find(rep->text, line, name_len + 1);
        if (!set || ((theirs != NULL) &&
                     (strcspn(theirs, "\n") == strlen(line)) &&
                     (strncmp(theirs, line, strlen(line)) == 0))) {
            continue;
        }
        ucs_snprintf_safe(differ + strlen(differ),
                          sizeof(differ) - strlen(differ),
                          "%s%s (the agent's: %.*s)",
                          (differ[0] != '\0') ? ", " : "", line,
                          (theirs == NULL) ? 4 :
                          (int)(strcspn(theirs, "\n") - name_len - 1),
                          (theirs == NULL) ? "none" : theirs + name_len + 1);
    }
    if (differ[0] != '\0') {
        ucs_warn("srm: the node agent @%s runs with other settings than this "
                 "process's environment asks for: %s. The agent's apply (it "
                 "read them when it started; srmctl status shows them): "
                 "give every process of the node the same, or restart the "
                 "agent", md->socket_name, differ);
    }
    ucs_free(rep);
}

void uct_srm_agent_detach(uct_srm_attachment_t *att)
{
    if (att->shm != NULL) {
        srm_shm_unmap(&att->layout, att->shm);
        att->shm = NULL;
    }
    if (att->doorbell_fd >= 0) {
        close(att->doorbell_fd);
    }
    if (att->event_fd >= 0) {
        close(att->event_fd);
    }
    close(att->sock_fd);
    att->sock_fd = att->doorbell_fd = att->event_fd = -1;
}
