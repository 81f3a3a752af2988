/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * srmd: the SRM node agent. See srmd(8) / `srmd --help`.
 */
#define _GNU_SOURCE
#include "srm_agent.h"
#include "srm_notify.h"
#include "srmd_config.h"

#include <ucx_srm/common/srm_log.h>

#include <config.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

static srm_agent_t srmd_agent;

static void srmd_usage(FILE *stream)
{
    fprintf(stream,
        "Usage: srmd [OPTION]...\n"
        "The SRM node agent: shares node-level channels among all UCX\n"
        "processes of this node (network namespace) that use UCX_TLS=srm.\n"
        "\n"
        "Clients attach over the abstract UNIX socket @srmd.<uid> (or\n"
        "UCX_SRM_SOCKET), get shared-memory rings and a port, and the agent\n"
        "schedules their messages in 8 KB units, round robin.\n"
        "\n"
        "Options:\n"
        "  -s, --socket NAME     abstract socket name (default: UCX_SRM_SOCKET,\n"
        "                        else srmd.<uid>)\n"
        "  -d, --daemonize       detach from the terminal; exit 0 once serving\n"
        "  -i, --exit-when-idle  exit UCX_SRM_IDLE_TIMEOUT after the last\n"
        "                        client leaves (how auto-started agents run)\n"
        "  -a, --any-user        serve clients of every uid (system service);\n"
        "                        default: only this agent's own uid\n"
        "  -l, --log FILE        log to FILE (default: UCX_SRM_LOG_FILE, else\n"
        "                        stderr; when daemonized, $TMPDIR/srmd-<socket>-\n"
        "                        <hostname>.log)\n"
        "  -v, --verbose         more log output (repeat for debug)\n"
        "  -q, --quiet           errors and warnings only\n"
        "  -c, --config          print the UCX_SRM_* settings in force and exit\n"
        "  -V, --version         print the version and exit\n"
        "  -h, --help            print this help and exit\n"
        "\n"
        "Environment: every UCX_SRM_* variable listed by `srmd --config`\n"
        "(also shown by `ucx_info -c -f` with the module loaded).\n"
        "\n"
        "Exit status: 0 on a clean stop (SIGTERM, SIGINT, idle timeout, or\n"
        "another agent already serving the socket), 1 on errors.\n");
}

static void srmd_on_signal(int signo)
{
    srmd_agent.stop = 1;
}

/*
 * The default log sits in a directory every user can write (/tmp), under a
 * name anyone can guess: no symlink is followed, and only a regular file
 * of our own is appended to.
 */
static FILE *srmd_open_log(const char *path)
{
    struct stat st;
    const char *why;
    FILE *file;
    int fd;

    fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_NOFOLLOW | O_CLOEXEC,
              0600);
    if (fd < 0) {
        why = (errno == ELOOP) ? "it is a symbolic link" : strerror(errno);
        goto err;
    }
    if ((fstat(fd, &st) != 0) || !S_ISREG(st.st_mode) ||
        (st.st_uid != geteuid())) {
        why = "not a regular file of ours (another user's, or a device)";
        close(fd);
        goto err;
    }
    file = fdopen(fd, "a");
    if (file == NULL) {
        why = strerror(errno);
        close(fd);
        goto err;
    }
    return file;

err:
    fprintf(stderr, "srmd: cannot open log file %s: %s\n", path, why);
    return NULL;
}

/*
 * Forks; the parent waits for the child's word (0: serving, else failed)
 * and exits with it, so whoever started us knows the socket is ready.
 */
static ucs_status_t srmd_daemonize(int *ready_fd)
{
    int pipefd[2], null_fd;
    char status = 1;
    pid_t pid;

    if (pipe2(pipefd, O_CLOEXEC) != 0) {
        return UCS_ERR_IO_ERROR;
    }
    pid = fork();
    if (pid < 0) {
        return UCS_ERR_IO_ERROR;
    } else if (pid > 0) {
        close(pipefd[1]);
        if (read(pipefd[0], &status, 1) != 1) {
            status = 1;
        }
        _exit(status);
    }

    close(pipefd[0]);
    setsid();
    if (chdir("/") != 0) {
        /* not fatal: only keeps a mount busy */
    }
    null_fd = open("/dev/null", O_RDWR);
    if (null_fd >= 0) {
        dup2(null_fd, STDIN_FILENO);
        dup2(null_fd, STDOUT_FILENO);
        close(null_fd);
    }
    *ready_fd = pipefd[1];
    return UCS_OK;
}

static void srmd_report_ready(int *ready_fd, char status)
{
    if (*ready_fd >= 0) {
        if (write(*ready_fd, &status, 1) != 1) {
            /* the parent is gone; nothing to tell */
        }
        close(*ready_fd);
        *ready_fd = -1;
    }
}

int main(int argc, char **argv)
{
    static const struct option options[] = {
        {"socket",         required_argument, NULL, 's'},
        {"daemonize",      no_argument,       NULL, 'd'},
        {"exit-when-idle", no_argument,       NULL, 'i'},
        {"any-user",       no_argument,       NULL, 'a'},
        {"log",            required_argument, NULL, 'l'},
        {"verbose",        no_argument,       NULL, 'v'},
        {"quiet",          no_argument,       NULL, 'q'},
        {"config",         no_argument,       NULL, 'c'},
        {"version",        no_argument,       NULL, 'V'},
        {"help",           no_argument,       NULL, 'h'},
        {NULL, 0, NULL, 0}
    };
    srm_agent_t *agent = &srmd_agent;
    const char *socket_opt = NULL, *log_path = NULL;
    int daemonize = 0, print_config = 0, ready_fd = -1, ret, c;
    srm_log_level_t level = SRM_LOG_INFO;
    char default_log[PATH_MAX], hostname[64], state[160];
    struct sigaction sa;
    FILE *log_file = NULL;
    ucs_status_t status;

    while ((c = getopt_long(argc, argv, "s:dial:vqcVh", options, NULL)) !=
           -1) {
        switch (c) {
        case 's': socket_opt = optarg; break;
        case 'd': daemonize = 1; break;
        case 'i': agent->exit_when_idle = 1; break;
        case 'a': agent->any_user = 1; break;
        case 'l': log_path = optarg; break;
        case 'v': level = (level < SRM_LOG_DEBUG) ? level + 1 : level; break;
        case 'q': level = SRM_LOG_WARN; break;
        case 'c': print_config = 1; break;
        case 'V': printf("srmd (ucx-srm) %s, built for UCX %s\n",
                         PACKAGE_VERSION, SRM_UCX_VERSION);
                  return 0;
        case 'h': srmd_usage(stdout); return 0;
        default:  srmd_usage(stderr); return 1;
        }
    }
    if (optind < argc) {
        fprintf(stderr, "srmd: unexpected argument '%s'\n", argv[optind]);
        srmd_usage(stderr);
        return 1;
    }

    if (daemonize) {
        /* Started by a process, not by the service manager: a
         * NOTIFY_SOCKET we inherited is that process's manager's. */
        unsetenv("NOTIFY_SOCKET");
    }
    if (srmd_config_read(agent) != UCS_OK) {
        return 1;
    }
    if (print_config) {
        srm_ucx_config_print(stdout, "node agent connection",
                             &agent->node_config, srm_node_config_table,
                             SRM_CONFIG_PREFIX, "UCX_",
                             UCS_CONFIG_PRINT_CONFIG | UCS_CONFIG_PRINT_DOC);
        srm_ucx_config_print(stdout, "srmd", &agent->config,
                             srm_agent_config_table, SRM_CONFIG_PREFIX, "UCX_",
                             UCS_CONFIG_PRINT_CONFIG | UCS_CONFIG_PRINT_DOC);
        return 0;
    }

    if (socket_opt != NULL) {
        snprintf(agent->socket_name, sizeof(agent->socket_name), "%s",
                 socket_opt);
    } else if (agent->node_config.socket[0] != '\0') {
        snprintf(agent->socket_name, sizeof(agent->socket_name), "%s",
                 agent->node_config.socket);
    } else {
        srm_sock_default_name(agent->socket_name, sizeof(agent->socket_name));
    }

    if ((log_path == NULL) && (agent->config.log_file[0] != '\0')) {
        log_path = agent->config.log_file;
    }
    if ((log_path == NULL) && daemonize) {
        gethostname(hostname, sizeof(hostname));
        hostname[sizeof(hostname) - 1] = '\0';
        if (snprintf(default_log, sizeof(default_log), "%s/srmd-%s-%s.log",
                     (getenv("TMPDIR") != NULL) ? getenv("TMPDIR") : "/tmp",
                     agent->socket_name, hostname) >=
            (int)sizeof(default_log)) {
            fprintf(stderr, "srmd: $TMPDIR is too long for a log path\n");
            return 1;
        }
        log_path = default_log;
    }
    if (log_path != NULL) {
        log_file = srmd_open_log(log_path);
        if (log_file == NULL) {
            return 1;
        }
    }
    srm_log_init("srmd", level, log_file);

    if (daemonize && (srmd_daemonize(&ready_fd) != UCS_OK)) {
        srm_error("cannot daemonize: %m");
        return 1;
    }
    if (log_file != NULL) {
        dup2(fileno(log_file), STDERR_FILENO);
    }

    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = srmd_on_signal;
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);
    signal(SIGPIPE, SIG_IGN);

    status = srm_agent_init(agent);
    if (status != UCS_OK) {
        ret = (status == UCS_ERR_ALREADY_EXISTS) ? 0 : 1;
        srmd_report_ready(&ready_fd, (char)ret);
        srm_agent_cleanup(agent);
        return ret;
    }
    srmd_report_ready(&ready_fd, 0);
    snprintf(state, sizeof(state), "READY=1\nSTATUS=serving @%.100s%s",
             agent->socket_name, agent->any_user ? " for every user" : "");
    srm_notify(state);

    srm_agent_run(agent);
    srm_notify("STOPPING=1");
    srm_info("stopping: %u clients attached, %llu frames moved",
             agent->num_clients, (unsigned long long)agent->stats.frames);
    srm_agent_cleanup(agent);
    ucs_config_parser_release_opts(&agent->config, srm_agent_config_table);
    ucs_config_parser_release_opts(&agent->node_config,
                                   srm_node_config_table);
    return 0;
}
