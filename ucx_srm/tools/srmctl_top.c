/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * srmctl top: samples the agent's counters (SRM_STATUS_FLAG_TOP) every
 * delay seconds and shows each channel and process with its rates, as
 * top(1) does processes: a refreshing screen on a terminal, one frame
 * after another otherwise, or one JSON object.
 */
#define _GNU_SOURCE
#include <ucx_srm/tools/srmctl.h>

#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

typedef unsigned long long top_count_t;

typedef struct {
    unsigned    index;
    char        id[24];
    char        kind[8];
    char        state[16];
    top_count_t queued, unacked, tx_frames, tx_bytes, rx_frames, rx_bytes;
    top_count_t direct, taken, failovers, pauses;
    unsigned    paused;
    double      rtt_us;
} top_chan_t;

typedef struct {
    unsigned    port;
    int         pid;
    top_count_t tx_queued, rx_queued, backlog, tx_frames, tx_bytes;
    top_count_t rx_frames, rx_bytes, blocked, wakeups;
    char        name[64];
} top_port_t;

typedef struct {
    double      when; /* CLOCK_MONOTONIC seconds */
    int         pid;
    double      uptime;
    unsigned    clients;
    top_count_t frames, bytes, sleeps, wakeups;
    top_chan_t  *chans;
    unsigned    num_chans;
    top_port_t  *ports;
    unsigned    num_ports;
} top_sample_t;

static volatile sig_atomic_t top_stop;

static void top_on_signal(int signo)
{
    top_stop = 1;
}

static double top_now(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void top_sample_free(top_sample_t *sample)
{
    free(sample->chans);
    free(sample->ports);
    memset(sample, 0, sizeof(*sample));
}

/* Appends one element to a growing array; 0 or -1 (out of memory). */
static int top_grow(void **array, unsigned *count, size_t elem_size)
{
    void *grown = realloc(*array, (*count + 1) * elem_size);

    if (grown == NULL) {
        return -1;
    }
    *array = grown;
    memset((char*)grown + (*count * elem_size), 0, elem_size);
    ++*count;
    return 0;
}

/* Parses the agent's answer; -1 when it is not what SRM_STATUS_FLAG_TOP
 * gives (an agent that predates it answers its status text). */
static int top_parse(const char *text, top_sample_t *sample)
{
    const char *line;
    top_chan_t *chan;
    top_port_t *port;
    int have_agent = 0;

    for (line = text; *line != '\0'; line += strcspn(line, "\n") + 1) {
        if (strncmp(line, "agent ", 6) == 0) {
            have_agent = (sscanf(line, "agent %d %lf %u %llu %llu %llu %llu",
                                 &sample->pid, &sample->uptime,
                                 &sample->clients, &sample->frames,
                                 &sample->bytes, &sample->sleeps,
                                 &sample->wakeups) == 7);
        } else if (strncmp(line, "chan ", 5) == 0) {
            if (top_grow((void**)&sample->chans, &sample->num_chans,
                         sizeof(*chan)) != 0) {
                return -1;
            }
            chan = &sample->chans[sample->num_chans - 1];
            if (sscanf(line, "chan %u %23s %7s %15s %llu %llu %llu %llu %llu "
                       "%llu %llu %llu %llu %u %llu %lf", &chan->index,
                       chan->id, chan->kind, chan->state, &chan->queued,
                       &chan->unacked, &chan->tx_frames, &chan->tx_bytes,
                       &chan->rx_frames, &chan->rx_bytes, &chan->direct,
                       &chan->taken, &chan->failovers, &chan->paused,
                       &chan->pauses, &chan->rtt_us) != 16) {
                --sample->num_chans; /* not one we can read: left out */
            }
        } else if (strncmp(line, "port ", 5) == 0) {
            if (top_grow((void**)&sample->ports, &sample->num_ports,
                         sizeof(*port)) != 0) {
                return -1;
            }
            port = &sample->ports[sample->num_ports - 1];
            if (sscanf(line, "port %u %d %llu %llu %llu %llu %llu %llu %llu "
                       "%llu %llu %63[^\n]", &port->port, &port->pid,
                       &port->tx_queued, &port->rx_queued, &port->backlog,
                       &port->tx_frames, &port->tx_bytes, &port->rx_frames,
                       &port->rx_bytes, &port->blocked, &port->wakeups,
                       port->name) != 12) {
                --sample->num_ports;
            }
        }
        if (line[strcspn(line, "\n")] == '\0') {
            break;
        }
    }
    return have_agent ? 0 : -1;
}

static int top_take(const char *socket_name, double timeout,
                    top_sample_t *sample)
{
    srm_status_req_t req;
    srm_status_rep_t *rep;
    int ret;

    memset(&req, 0, sizeof(req));
    srm_msg_hdr_init(&req.hdr, SRM_MSG_STATUS_REQ);
    req.flags = SRM_STATUS_FLAG_TOP;
    rep = srmctl_ask(socket_name, timeout, &req, sizeof(req));
    if (rep == NULL) {
        return -1;
    }
    memset(sample, 0, sizeof(*sample));
    sample->when = top_now();
    ret = top_parse(rep->text, sample);
    if (ret != 0) {
        fprintf(stderr, "srmctl: the agent at @%s does not answer top's "
                "request (an older srmd?)\n", socket_name);
        top_sample_free(sample);
    }
    free(rep);
    return ret;
}

/* Per second between two counts; a counter that went back (a restarted
 * agent) counts from zero. */
static double top_rate(top_count_t now, top_count_t before, double secs)
{
    return (double)((now >= before) ? (now - before) : now) / secs;
}

static const top_chan_t *top_find_chan(const top_sample_t *sample,
                                       const top_chan_t *chan)
{
    unsigned i;

    for (i = 0; i < sample->num_chans; ++i) {
        if ((sample->chans[i].index == chan->index) &&
            (strcmp(sample->chans[i].kind, chan->kind) == 0)) {
            return &sample->chans[i];
        }
    }
    return chan; /* new: rates from zero time, shown as 0 */
}

static const top_port_t *top_find_port(const top_sample_t *sample,
                                       const top_port_t *port)
{
    unsigned i;

    for (i = 0; i < sample->num_ports; ++i) {
        if (sample->ports[i].port == port->port) {
            return &sample->ports[i];
        }
    }
    return port;
}

static void top_show_text(const char *socket_name, const top_sample_t *now,
                          const top_sample_t *before, int screen)
{
    double secs = now->when - before->when;
    const top_chan_t *chan, *old_chan;
    const top_port_t *port, *old_port;
    unsigned i;

    if (screen) {
        fputs("\033[H\033[2J", stdout);
    }
    printf("srmctl top: agent @%s pid %d, up %.0f s, %u processes; "
           "%.1f k frames/s, %.1f MB/s delivered; every %.1f s%s\n\n",
           socket_name, now->pid, now->uptime, now->clients,
           top_rate(now->frames, before->frames, secs) / 1e3,
           top_rate(now->bytes, before->bytes, secs) / 1e6, secs,
           screen ? "; q quits" : "");

    printf("%-4s %-18s %-5s %-10s %8s %8s %9s %8s %9s %8s %8s %8s %5s %6s "
           "%7s\n", "NODE", "ID", "CHAN", "STATE", "QUEUED", "UNACKED",
           "TX_FR/S", "TX_MB/S", "RX_FR/S", "RX_MB/S", "DIRECT/S", "TAKEN/S",
           "FAILS", "PAUSED", "RTT_US");
    for (i = 0; i < now->num_chans; ++i) {
        chan     = &now->chans[i];
        old_chan = top_find_chan(before, chan);
        printf("%-4u %-18s %-5s %-10s %8llu %8llu %9.0f %8.1f %9.0f %8.1f "
               "%8.0f %8.0f %5llu %6u %7.0f\n", chan->index, chan->id,
               chan->kind, chan->state, chan->queued, chan->unacked,
               top_rate(chan->tx_frames, old_chan->tx_frames, secs),
               top_rate(chan->tx_bytes, old_chan->tx_bytes, secs) / 1e6,
               top_rate(chan->rx_frames, old_chan->rx_frames, secs),
               top_rate(chan->rx_bytes, old_chan->rx_bytes, secs) / 1e6,
               top_rate(chan->direct, old_chan->direct, secs),
               top_rate(chan->taken, old_chan->taken, secs),
               chan->failovers, chan->paused, chan->rtt_us);
    }
    if (now->num_chans == 0) {
        printf("(no other nodes)\n");
    }

    printf("\n%-10s %-7s %-24s %9s %8s %9s %8s %9s %9s %8s %9s\n", "PORT",
           "PID", "NAME", "TX_FR/S", "TX_MB/S", "RX_FR/S", "RX_MB/S",
           "TX_QUEUED", "RX_QUEUED", "BACKLOG", "BLOCKED/S");
    for (i = 0; i < now->num_ports; ++i) {
        port     = &now->ports[i];
        old_port = top_find_port(before, port);
        printf("%-10u %-7d %-24.24s %9.0f %8.1f %9.0f %8.1f %9llu %9llu "
               "%8llu %9.1f\n", port->port, port->pid, port->name,
               top_rate(port->tx_frames, old_port->tx_frames, secs),
               top_rate(port->tx_bytes, old_port->tx_bytes, secs) / 1e6,
               top_rate(port->rx_frames, old_port->rx_frames, secs),
               top_rate(port->rx_bytes, old_port->rx_bytes, secs) / 1e6,
               port->tx_queued, port->rx_queued, port->backlog,
               top_rate(port->blocked, old_port->blocked, secs));
    }
    if (now->num_ports == 0) {
        printf("(no processes attached)\n");
    }
    if (!screen) {
        putchar('\n');
    }
    fflush(stdout);
}

/* A process name as a JSON string: quotes, backslashes and controls
 * escaped. */
static void top_json_string(const char *text)
{
    putchar('"');
    for (; *text != '\0'; ++text) {
        if ((*text == '"') || (*text == '\\')) {
            printf("\\%c", *text);
        } else if ((unsigned char)*text < 0x20) {
            printf("\\u%04x", (unsigned char)*text);
        } else {
            putchar(*text);
        }
    }
    putchar('"');
}

static void top_show_json(const char *socket_name, const top_sample_t *now,
                          const top_sample_t *before)
{
    double secs = now->when - before->when;
    const top_chan_t *chan, *old_chan;
    const top_port_t *port, *old_port;
    unsigned i;

    printf("{\"socket\": ");
    top_json_string(socket_name);
    printf(", \"pid\": %d, \"uptime_s\": %.3f, \"interval_s\": %.3f, "
           "\"clients\": %u, \"frames_per_s\": %.1f, \"bytes_per_s\": %.1f, "
           "\"channels\": [", now->pid, now->uptime, secs, now->clients,
           top_rate(now->frames, before->frames, secs),
           top_rate(now->bytes, before->bytes, secs));
    for (i = 0; i < now->num_chans; ++i) {
        chan     = &now->chans[i];
        old_chan = top_find_chan(before, chan);
        printf("%s{\"node\": %u, \"id\": \"%s\", \"kind\": \"%s\", "
               "\"state\": \"%s\", \"queued\": %llu, \"unacked\": %llu, "
               "\"tx_frames_per_s\": %.1f, \"tx_bytes_per_s\": %.1f, "
               "\"rx_frames_per_s\": %.1f, \"rx_bytes_per_s\": %.1f, "
               "\"direct_per_s\": %.1f, \"taken_per_s\": %.1f, "
               "\"failovers\": %llu, \"paused\": %u, \"pauses\": %llu, "
               "\"rtt_us\": %.1f}", (i > 0) ? ", " : "", chan->index,
               chan->id, chan->kind, chan->state, chan->queued,
               chan->unacked,
               top_rate(chan->tx_frames, old_chan->tx_frames, secs),
               top_rate(chan->tx_bytes, old_chan->tx_bytes, secs),
               top_rate(chan->rx_frames, old_chan->rx_frames, secs),
               top_rate(chan->rx_bytes, old_chan->rx_bytes, secs),
               top_rate(chan->direct, old_chan->direct, secs),
               top_rate(chan->taken, old_chan->taken, secs),
               chan->failovers, chan->paused, chan->pauses, chan->rtt_us);
    }
    printf("], \"ports\": [");
    for (i = 0; i < now->num_ports; ++i) {
        port     = &now->ports[i];
        old_port = top_find_port(before, port);
        printf("%s{\"port\": %u, \"pid\": %d, \"name\": ", (i > 0) ? ", " : "",
               port->port, port->pid);
        top_json_string(port->name);
        printf(", \"tx_frames_per_s\": %.1f, \"tx_bytes_per_s\": %.1f, "
               "\"rx_frames_per_s\": %.1f, \"rx_bytes_per_s\": %.1f, "
               "\"tx_queued\": %llu, \"rx_queued\": %llu, \"backlog\": %llu, "
               "\"blocked_per_s\": %.1f}",
               top_rate(port->tx_frames, old_port->tx_frames, secs),
               top_rate(port->tx_bytes, old_port->tx_bytes, secs),
               top_rate(port->rx_frames, old_port->rx_frames, secs),
               top_rate(port->rx_bytes, old_port->rx_bytes, secs),
               port->tx_queued, port->rx_queued, port->backlog,
               top_rate(port->blocked, old_port->blocked, secs));
    }
    printf("]}\n");
}

/* Waits delay seconds; 1 when the user typed q (or a signal came). */
static int top_wait(double delay, int keys)
{
    double end = top_now() + delay, left;
    struct pollfd pfd = {.fd = STDIN_FILENO, .events = POLLIN};
    char key;

    while (!top_stop && ((left = end - top_now()) > 0)) {
        if (poll(keys ? &pfd : NULL, keys ? 1 : 0, (int)(left * 1e3) + 1) > 0) {
            if ((read(STDIN_FILENO, &key, 1) == 1) &&
                ((key == 'q') || (key == 'Q'))) {
                return 1;
            }
        }
    }
    return top_stop;
}

int srmctl_top(const char *socket_name, double timeout, double delay,
               unsigned iterations, int json)
{
    int screen = !json && isatty(STDOUT_FILENO);
    int keys   = screen && isatty(STDIN_FILENO);
    top_sample_t before, now;
    struct termios saved, raw;
    struct sigaction sa;
    unsigned shown = 0;
    int ret        = 0;

    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = top_on_signal;
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGQUIT, &sa, NULL);
    sigaction(SIGHUP, &sa, NULL);
    if (keys && (tcgetattr(STDIN_FILENO, &saved) == 0)) {
        raw = saved;
        raw.c_lflag &= ~(ICANON | ECHO);
        raw.c_cc[VMIN]  = 0;
        raw.c_cc[VTIME] = 0;
        tcsetattr(STDIN_FILENO, TCSANOW, &raw);
    } else {
        keys = 0;
    }

    if (top_take(socket_name, timeout, &before) != 0) {
        ret = 1;
        goto out;
    }
    while (!top_wait(delay, keys)) {
        if (top_take(socket_name, timeout, &now) != 0) {
            ret = 1;
            break;
        }
        if (json) {
            top_show_json(socket_name, &now, &before);
        } else {
            top_show_text(socket_name, &now, &before, screen);
        }
        top_sample_free(&before);
        before = now;
        if (json || ((iterations > 0) && (++shown >= iterations))) {
            break;
        }
    }
    top_sample_free(&before);

out:
    if (keys) {
        tcsetattr(STDIN_FILENO, TCSANOW, &saved);
    }
    return ret;
}
