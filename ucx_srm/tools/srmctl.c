/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * srmctl: asks the node agent what it is doing. See `srmctl --help`.
 */
#define _GNU_SOURCE
#include <ucx_srm/common/srm_config.h>
#include <ucx_srm/common/srm_proto.h>
#include <ucx_srm/tools/srmctl.h>

#include <config.h>
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

static void srmctl_usage(FILE *stream)
{
    fprintf(stream,
        "Usage: srmctl [-s NAME] COMMAND\n"
        "Query the SRM node agent (srmd) of this node / network namespace.\n"
        "\n"
        "Commands:\n"
        "  status    the agent, its policy and counters, and one line per\n"
        "            attached port: rings, queued bytes, backlog, frames and\n"
        "            bytes each way, times senders blocked, wakeups sent;\n"
        "            with --json the same as one JSON object (its schema:\n"
        "            docs/status-json.md)\n"
        "  top       the channels to other nodes and the attached\n"
        "            processes with their rates (frames/s, MB/s), queues,\n"
        "            pauses and failovers, refreshed every --delay seconds\n"
        "            (q quits); --json: one object of the rates over one\n"
        "            delay, then exit\n"
        "  ping      exit 0 if an agent answers, 1 if none does\n"
        "  device    print the name of srm's UCX device here: the agent's\n"
        "            first wire device as UCX_SRM_DEVICES names it (what\n"
        "            ucx_perftest -d and UCX_NET_DEVICES take); asks no agent\n"
        "  fault     (testing) break the active connection of node channels:\n"
        "            reset it (TCP RST), or with --mute stop all traffic on it\n"
        "            as a dead link would; traffic must fail over, nothing\n"
        "            lost. Only the agent's own user or root may do this.\n"
        "\n"
        "Options:\n"
        "  -s, --socket NAME  agent socket (default: UCX_SRM_SOCKET, else the\n"
        "                     site's srmd service (srmd) if it runs, else\n"
        "                     srmd.<uid>)\n"
        "  -t, --timeout SEC  how long to wait for an answer (default 5)\n"
        "  -n, --node INDEX   fault: only node INDEX (as in status; default all)\n"
        "  -k, --kind KIND    fault: only the small or the bulk channel\n"
        "  -m, --mute         fault: mute instead of reset\n"
        "  -j, --json         status, top: as JSON\n"
        "  -d, --delay SEC    top: seconds between refreshes (default 1)\n"
        "  -i, --iterations N top: stop after N refreshes (default: q)\n"
        "  -h, --help         print this help\n"
        "  -V, --version      print the version\n"
        "\n"
        "Exit status: 0 on success, 1 if no agent answered, 2 on bad usage.\n");
}

srm_status_rep_t *srmctl_ask(const char *socket_name, double timeout,
                             const void *req, size_t req_size)
{
    srm_status_rep_t *rep;
    struct timeval tv;
    ssize_t len;
    int fd;

    fd = srm_sock_connect_within(socket_name, timeout);
    if (fd < 0) {
        fprintf(stderr, "srmctl: no agent at @%s: %s\n", socket_name,
                (errno == EAGAIN) ?
                "it accepts no connection (its queue stays full)" :
                strerror(errno));
        return NULL;
    }
    tv.tv_sec  = (time_t)timeout;
    tv.tv_usec = (suseconds_t)((timeout - (double)tv.tv_sec) * 1e6);
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));

    rep = malloc(sizeof(*rep) + 1); /* room for the text's NUL */
    if ((rep == NULL) || (srm_sock_send(fd, req, req_size, NULL, 0) < 0)) {
        fprintf(stderr, "srmctl: cannot send to @%s: %s\n", socket_name,
                strerror(errno));
        goto err;
    }

    len = srm_sock_recv(fd, rep, sizeof(*rep), NULL, NULL);
    if (len <= 0) {
        fprintf(stderr, "srmctl: no answer from @%s: %s\n", socket_name,
                (len == 0) ? "connection closed (refused?)" : strerror(errno));
        goto err;
    }
    if (srm_status_rep_check(rep, (size_t)len) != 0) {
        fprintf(stderr, "srmctl: malformed answer from @%s (version "
                "mismatch?)\n", socket_name);
        goto err;
    }
    rep->text[rep->length] = '\0';
    close(fd);
    return rep;

err:
    free(rep);
    close(fd);
    return NULL;
}

/* Sends one request; the answer is text (printed if print_answer), JSON
 * if want_json. */
static int srmctl_query(const char *socket_name, double timeout,
                        const void *req, size_t req_size, int print_answer,
                        int want_json)
{
    srm_status_rep_t *rep = srmctl_ask(socket_name, timeout, req, req_size);

    if (rep == NULL) {
        return 1;
    }
    if (want_json && ((rep->length == 0) || (rep->text[0] != '{'))) {
        fprintf(stderr, "srmctl: the agent at @%s answered in text: it "
                "predates status --json (upgrade srmd)\n", socket_name);
        free(rep);
        return 1;
    }
    if (print_answer) {
        fwrite(rep->text, 1, rep->length, stdout);
    }
    free(rep);
    return 0;
}

int main(int argc, char **argv)
{
    static const struct option options[] = {
        {"socket",  required_argument, NULL, 's'},
        {"timeout", required_argument, NULL, 't'},
        {"help",    no_argument,       NULL, 'h'},
        {"version", no_argument,       NULL, 'V'},
        {"node",    required_argument, NULL, 'n'},
        {"kind",    required_argument, NULL, 'k'},
        {"mute",    no_argument,       NULL, 'm'},
        {"json",    no_argument,       NULL, 'j'},
        {"delay",   required_argument, NULL, 'd'},
        {"iterations", required_argument, NULL, 'i'},
        {NULL, 0, NULL, 0}
    };
    srm_status_req_t status_req;
    srm_fault_req_t fault_req;
    char socket_name[108], device[64], *end;
    const char *command;
    double timeout = 5, delay = 1;
    unsigned iterations = 0;
    uid_t squatter;
    int c;

    /* The agent this user's processes would use. */
    srm_sock_choose_agent(getenv("UCX_SRM_SOCKET"), socket_name,
                          sizeof(socket_name), &squatter);

    memset(&status_req, 0, sizeof(status_req));
    srm_msg_hdr_init(&status_req.hdr, SRM_MSG_STATUS_REQ);
    memset(&fault_req, 0, sizeof(fault_req));
    srm_msg_hdr_init(&fault_req.hdr, SRM_MSG_FAULT_REQ);
    fault_req.node = SRM_FAULT_ALL_NODES;
    fault_req.kind = -1;
    fault_req.how  = SRM_FAULT_RESET;

    while ((c = getopt_long(argc, argv, "s:t:n:k:mjd:i:hV", options,
                            NULL)) != -1) {
        switch (c) {
        case 's': snprintf(socket_name, sizeof(socket_name), "%s", optarg);
                  break;
        case 't': timeout = atof(optarg); break;
        case 'n': fault_req.node = (uint32_t)strtoul(optarg, &end, 10);
                  if ((*end != '\0') || (optarg[0] == '\0')) {
                      fprintf(stderr, "srmctl: --node wants a number\n");
                      return 2;
                  }
                  break;
        case 'k': if (strcmp(optarg, "small") == 0) {
                      fault_req.kind = 0;
                  } else if (strcmp(optarg, "bulk") == 0) {
                      fault_req.kind = 1;
                  } else {
                      fprintf(stderr, "srmctl: --kind is small or bulk\n");
                      return 2;
                  }
                  break;
        case 'm': fault_req.how = SRM_FAULT_MUTE; break;
        case 'j': status_req.flags |= SRM_STATUS_FLAG_JSON; break;
        case 'd': delay = strtod(optarg, &end);
                  if ((*end != '\0') || !(delay >= 0.1) || (delay > 3600)) {
                      fprintf(stderr, "srmctl: --delay wants seconds, from "
                              "0.1 to 3600\n");
                      return 2;
                  }
                  break;
        case 'i': iterations = (unsigned)strtoul(optarg, &end, 10);
                  if ((*end != '\0') || (optarg[0] == '\0')) {
                      fprintf(stderr, "srmctl: --iterations wants a "
                              "number\n");
                      return 2;
                  }
                  break;
        case 'h': srmctl_usage(stdout); return 0;
        case 'V': printf("srmctl (ucx-srm) %s\n", PACKAGE_VERSION); return 0;
        default:  srmctl_usage(stderr); return 2;
        }
    }
    if ((optind != argc - 1) || (timeout <= 0)) {
        srmctl_usage(stderr);
        return 2;
    }

    command = argv[optind];
    if (strcmp(command, "device") == 0) {
        srm_config_env_device_name(device, sizeof(device));
        printf("%s\n", device);
        return 0;
    } else if (strcmp(command, "status") == 0) {
        return srmctl_query(socket_name, timeout, &status_req,
                            sizeof(status_req), 1,
                            status_req.flags & SRM_STATUS_FLAG_JSON);
    } else if (strcmp(command, "top") == 0) {
        return srmctl_top(socket_name, timeout, delay, iterations,
                          status_req.flags & SRM_STATUS_FLAG_JSON);
    } else if (strcmp(command, "ping") == 0) {
        status_req.flags = 0;
        return srmctl_query(socket_name, timeout, &status_req,
                            sizeof(status_req), 0, 0);
    } else if (strcmp(command, "fault") == 0) {
        return srmctl_query(socket_name, timeout, &fault_req,
                            sizeof(fault_req), 1, 0);
    }
    fprintf(stderr, "srmctl: unknown command '%s'\n", command);
    srmctl_usage(stderr);
    return 2;
}
