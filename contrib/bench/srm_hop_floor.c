/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * srm_hop_floor: what an agent hop costs on this machine, with no srm and no
 * UCX in the way. An 8-byte ping-pong between two ranks, either over one TCP
 * connection of their own (what UCX's tcp does), or through two agents: rank
 * -> shared slot -> agent -> TCP -> agent -> shared slot -> rank, the agents
 * sleeping in epoll_wait on an eventfd doorbell and their socket (what srmd
 * does on a full node). The ranks busy-poll, or yield the CPU while they
 * wait (mpi_yield_when_idle 1). The ratio of the two is the floor under
 * srm's latency here: srmd does this and more.
 *
 * A third path is the floor of a design srm does not have yet: each rank
 * writes its node's shared socket itself (under a lock, after a copy into
 * the resend log), and the agents only receive. It saves the sending
 * agent's wakeup.
 */
#define _GNU_SOURCE
#include "bench_clock.h"

#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define HOP_CACHE_LINE 64
#define HOP_SAFETY_MS  100 /* an agent's sleep never lasts longer */
#define HOP_TIME_LIMIT_S 30 /* per mode, plus a second per 1000 trips */

/* One direction of a rank-agent pair, each word on its own cache line. */
typedef struct {
    volatile uint64_t seq;
    char              pad[HOP_CACHE_LINE - sizeof(uint64_t)];
} hop_word_t;

#define HOP_LOG_WORDS 64

typedef struct {
    hop_word_t to_agent;       /* the rank's last message number */
    hop_word_t to_rank;        /* the last number the agent got back */
    hop_word_t agent_sleeping; /* 1: ring the doorbell */
    hop_word_t socket_lock;    /* writers: held while writing the socket */
    uint64_t   log_head;       /* writers: the resend log, under the lock */
    uint64_t   log[HOP_LOG_WORDS];
} hop_pair_t;

typedef enum {
    HOP_DIRECT,  /* one socket between the ranks */
    HOP_AGENTS,  /* ranks hand messages to agents, which relay them */
    HOP_WRITER,  /* ranks write the agents' socket, agents only receive */
} hop_path_t;

typedef struct {
    const char *name;
    hop_path_t path;
    int        yield;
} hop_mode_t;

static const hop_mode_t hop_modes[] = {
    {"direct-busy",  HOP_DIRECT, 0},
    {"agents-busy",  HOP_AGENTS, 0},
    {"writer-busy",  HOP_WRITER, 0},
    {"direct-yield", HOP_DIRECT, 1},
    {"agents-yield", HOP_AGENTS, 1},
    {"writer-yield", HOP_WRITER, 1},
};
#define HOP_NUM_MODES (sizeof(hop_modes) / sizeof(hop_modes[0]))

static void usage(FILE *out)
{
    fprintf(out,
            "Usage: srm_hop_floor [--iters N] [--spin-us US] [--mode NAME]...\n"
            "\n"
            "An 8 B ping-pong between two processes on this machine, on\n"
            "loopback, without srm or UCX, in these modes (all by default):\n"
            "  direct-busy   one TCP connection between the ranks, both\n"
            "                busy-polling it (as UCX's tcp does)\n"
            "  agents-busy   each rank hands its message to an agent of its\n"
            "                own through shared memory; the agents relay it\n"
            "                over TCP; idle, they spin for --spin-us, then\n"
            "                sleep in epoll_wait (an eventfd doorbell, rung\n"
            "                only when the agent said it sleeps); the ranks\n"
            "                busy-poll\n"
            "  writer-busy   as agents-busy, but each rank writes its\n"
            "                message to its agent's socket itself (taking a\n"
            "                lock in shared memory and copying it into a\n"
            "                resend log first); the agents only receive\n"
            "  direct-yield, agents-yield, writer-yield\n"
            "                the same, with ranks that sched_yield() while\n"
            "                they wait (Open MPI's mpi_yield_when_idle 1)\n"
            "\n"
            "Prints one line per mode:\n"
            "  hop_floor MODE p50 P50_US p99 P99_US iters N\n"
            "latency being half of each round trip, in microseconds, after a\n"
            "tenth of N as warm-up. Exits 1 if a process of a mode fails.\n"
            "\n"
            "  --iters N   round trips per mode (default 20000)\n"
            "  --spin-us US how long an idle agent spins before it sleeps\n"
            "              (default 20, srmd's UCX_SRM_SPIN_TIME; 0: never)\n"
            "  --mode NAME run only this mode (repeatable)\n"
            "  -h, --help  this text\n");
}

/* A connected TCP pair on loopback, with TCP_NODELAY: 0 or -1. */
static int hop_tcp_pair(int fds[2])
{
    struct sockaddr_in sin = {.sin_family      = AF_INET,
                              .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len          = sizeof(sin);
    int one = 1, listen_fd, i;

    listen_fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if ((listen_fd < 0) ||
        (bind(listen_fd, (struct sockaddr*)&sin, sizeof(sin)) != 0) ||
        (listen(listen_fd, 1) != 0) ||
        (getsockname(listen_fd, (struct sockaddr*)&sin, &len) != 0)) {
        return -1;
    }
    fds[0] = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if ((fds[0] < 0) ||
        (connect(fds[0], (struct sockaddr*)&sin, sizeof(sin)) != 0)) {
        return -1;
    }
    fds[1] = accept(listen_fd, NULL, NULL);
    close(listen_fd);
    for (i = 0; i < 2; ++i) {
        if ((fds[i] < 0) ||
            (setsockopt(fds[i], IPPROTO_TCP, TCP_NODELAY, &one,
                        sizeof(one)) != 0)) {
            return -1;
        }
    }
    return 0;
}

static void hop_idle(int yield)
{
    if (yield) {
        sched_yield();
    }
}

/* Reads exactly 8 bytes, polling; exits when the peer is gone. */
static uint64_t hop_recv_word(int fd, int yield)
{
    uint64_t value;
    size_t got = 0;
    ssize_t ret;

    while (got < sizeof(value)) {
        ret = recv(fd, (char*)&value + got, sizeof(value) - got,
                   MSG_DONTWAIT);
        if (ret > 0) {
            got += (size_t)ret;
        } else if ((ret == 0) || ((errno != EAGAIN) && (errno != EINTR))) {
            _exit(1);
        } else {
            hop_idle(yield);
        }
    }
    return value;
}

static void hop_send_word(int fd, uint64_t value)
{
    if (send(fd, &value, sizeof(value), MSG_NOSIGNAL) != sizeof(value)) {
        _exit(1);
    }
}

/* Hands a message number to the agent, ringing only a sleeping one. */
static void hop_rank_post(hop_pair_t *pair, int doorbell, uint64_t seq)
{
    const uint64_t one = 1;

    pair->to_agent.seq = seq;
    __atomic_thread_fence(__ATOMIC_SEQ_CST);
    if (__atomic_exchange_n(&pair->agent_sleeping.seq, 0, __ATOMIC_SEQ_CST) &&
        (write(doorbell, &one, sizeof(one)) != sizeof(one))) {
        _exit(1);
    }
}

/* Writes a message to the node's socket itself, as a rank sharing its
 * agent's connection would: under a lock in shared memory, with a copy into
 * the resend log first. The agent only receives. */
static void hop_rank_write(hop_pair_t *pair, int fd, uint64_t seq)
{
    while (__atomic_exchange_n(&pair->socket_lock.seq, 1, __ATOMIC_ACQUIRE)) {
        sched_yield(); /* the holder may be off the CPU */
    }
    pair->log[pair->log_head++ % HOP_LOG_WORDS] = seq;
    hop_send_word(fd, seq);
    __atomic_store_n(&pair->socket_lock.seq, 0, __ATOMIC_RELEASE);
}

static void hop_rank_wait(hop_pair_t *pair, uint64_t seq, int yield)
{
    while (__atomic_load_n(&pair->to_rank.seq, __ATOMIC_ACQUIRE) != seq) {
        hop_idle(yield);
    }
}

/* A rank: `first` starts each round trip; lat gets half of each. */
static void hop_rank(const hop_mode_t *mode, hop_pair_t *pair, int doorbell,
                     int fd, int first, int iters, double *lat)
{
    double start;
    uint64_t seq;

    for (seq = 1; seq <= (uint64_t)iters; ++seq) {
        start = bench_now();
        if (mode->path == HOP_DIRECT) {
            if (!first) {
                hop_recv_word(fd, mode->yield);
            }
            hop_send_word(fd, seq);
            if (first) {
                hop_recv_word(fd, mode->yield);
            }
        } else {
            if (!first) {
                hop_rank_wait(pair, seq, mode->yield);
            }
            if (mode->path == HOP_WRITER) {
                hop_rank_write(pair, fd, seq);
            } else {
                hop_rank_post(pair, doorbell, seq);
            }
            if (first) {
                hop_rank_wait(pair, seq, mode->yield);
            }
        }
        if (lat != NULL) {
            lat[seq - 1] = (bench_now() - start) / 2;
        }
    }
}

/* An agent: relays its rank's numbers to the socket and back; idle, it
 * spins for spin_s, then sleeps without losing a wakeup (flag, fence, look
 * again, then epoll_wait). A writer rank hands it nothing: it only
 * receives. */
static void hop_agent(hop_pair_t *pair, int doorbell, int fd, double spin_s)
{
    struct epoll_event ev = {.events = EPOLLIN}, events[2];
    uint64_t relayed = 0, value;
    double last_work = bench_now();
    int epfd, n, i;

    epfd = epoll_create1(EPOLL_CLOEXEC);
    ev.data.fd = doorbell;
    if ((epfd < 0) || (epoll_ctl(epfd, EPOLL_CTL_ADD, doorbell, &ev) != 0)) {
        _exit(1);
    }
    ev.data.fd = fd;
    if (epoll_ctl(epfd, EPOLL_CTL_ADD, fd, &ev) != 0) {
        _exit(1);
    }
    for (;;) {
        value = __atomic_load_n(&pair->to_agent.seq, __ATOMIC_ACQUIRE);
        if (value != relayed) {
            hop_send_word(fd, value);
            relayed   = value;
            last_work = 0;
            continue;
        }
        n = (int)recv(fd, &value, sizeof(value), MSG_DONTWAIT);
        if (n == sizeof(value)) {
            __atomic_store_n(&pair->to_rank.seq, value, __ATOMIC_RELEASE);
            last_work = 0;
            continue;
        } else if (n == 0) {
            _exit(0); /* the other agent is gone: the mode is over */
        }
        if (last_work == 0) {
            last_work = bench_now(); /* the clock is read when idle only */
        }
        if ((bench_now() - last_work) < spin_s) {
            continue;
        }
        __atomic_store_n(&pair->agent_sleeping.seq, 1, __ATOMIC_SEQ_CST);
        if (__atomic_load_n(&pair->to_agent.seq, __ATOMIC_SEQ_CST) !=
            relayed) {
            __atomic_store_n(&pair->agent_sleeping.seq, 0, __ATOMIC_SEQ_CST);
            continue;
        }
        n = epoll_wait(epfd, events, 2, HOP_SAFETY_MS);
        __atomic_store_n(&pair->agent_sleeping.seq, 0, __ATOMIC_SEQ_CST);
        last_work = bench_now();
        for (i = 0; i < n; ++i) {
            if ((events[i].data.fd == doorbell) &&
                (read(doorbell, &value, sizeof(value)) < 0) &&
                (errno != EAGAIN)) {
                _exit(1);
            }
        }
    }
}

typedef enum {
    HOP_AGENT_0, /* relays for rank 0 (this process) */
    HOP_AGENT_1, /* relays for rank 1 */
    HOP_RANK_1,  /* answers each message of rank 0 */
} hop_role_t;

static void hop_close(int fd)
{
    if (fd >= 0) {
        close(fd);
    }
}

/* Forks a process of the mode in its role; its pid, or -1. */
static pid_t hop_spawn(const hop_mode_t *mode, hop_role_t role,
                       hop_pair_t *pairs, const int doorbells[2],
                       const int fds[2], int iters, double spin_s)
{
    pid_t pid = fork();

    if (pid != 0) {
        return pid;
    }
    prctl(PR_SET_PDEATHSIG, SIGKILL); /* never outlive the measurement */
    switch (role) {
    case HOP_AGENT_0:
        hop_close(fds[1]);
        hop_agent(&pairs[0], doorbells[0], fds[0], spin_s);
        break;
    case HOP_AGENT_1:
        hop_close(fds[0]);
        hop_agent(&pairs[1], doorbells[1], fds[1], spin_s);
        break;
    case HOP_RANK_1:
        hop_close(fds[0]);
        hop_rank(mode, &pairs[1], doorbells[1], fds[1], 0, iters, NULL);
        break;
    }
    _exit(0);
}

static void hop_on_alarm(int sig)
{
    static const char msg[] = "srm_hop_floor: a mode made no progress for "
                              "its time limit: a process of it failed\n";

    (void)sig;
    if (write(STDERR_FILENO, msg, sizeof(msg) - 1) < 0) {
        _exit(1);
    }
    _exit(1);
}

/* Runs one mode; 0 and the line printed, or -1. */
static int hop_run(const hop_mode_t *mode, int iters, double spin_s)
{
    int warmup = iters / 10, fds[2], doorbells[2] = {-1, -1}, status, ret = 0;
    const int no_fds[2] = {-1, -1};
    int total  = iters + warmup, i, num_children = 0;
    pid_t children[3];
    hop_pair_t *pairs;
    double *lat;

    pairs = mmap(NULL, 2 * sizeof(*pairs), PROT_READ | PROT_WRITE,
                 MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    lat   = calloc((size_t)total, sizeof(*lat));
    if ((pairs == MAP_FAILED) || (lat == NULL) || (hop_tcp_pair(fds) != 0)) {
        fprintf(stderr, "srm_hop_floor: %s: set-up failed: %s\n", mode->name,
                strerror(errno));
        return -1;
    }
    if (mode->path != HOP_DIRECT) {
        for (i = 0; i < 2; ++i) {
            doorbells[i] = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
            if (doorbells[i] < 0) {
                return -1;
            }
        }
        children[num_children++] = hop_spawn(mode, HOP_AGENT_0, pairs,
                                             doorbells, fds, total, spin_s);
        children[num_children++] = hop_spawn(mode, HOP_AGENT_1, pairs,
                                             doorbells, fds, total, spin_s);
        /* Relaying agents own the socket; writers share it with theirs. */
        children[num_children++] = hop_spawn(
                mode, HOP_RANK_1, pairs, doorbells,
                (mode->path == HOP_WRITER) ? fds : no_fds, total, spin_s);
        close(fds[1]);
        if (mode->path == HOP_AGENTS) {
            close(fds[0]);
            fds[0] = -1;
        }
    } else {
        children[num_children++] = hop_spawn(mode, HOP_RANK_1, pairs,
                                             doorbells, fds, total, spin_s);
        close(fds[1]);
    }
    /* A process that fails leaves the other side polling for ever. */
    alarm(HOP_TIME_LIMIT_S + (unsigned)(total / 1000));

    hop_rank(mode, &pairs[0], doorbells[0], fds[0], 1, total, lat);
    alarm(0);
    hop_close(fds[0]);
    for (i = 0; i < num_children; ++i) {
        if ((mode->path != HOP_DIRECT) && (i < 2)) {
            kill(children[i], SIGTERM); /* agents relay until stopped */
        }
    }
    for (i = 0; i < num_children; ++i) {
        if ((waitpid(children[i], &status, 0) < 0) ||
            (!((mode->path != HOP_DIRECT) && (i < 2)) &&
             (!WIFEXITED(status) || (WEXITSTATUS(status) != 0)))) {
            fprintf(stderr, "srm_hop_floor: %s: a process failed\n",
                    mode->name);
            ret = -1;
        }
    }
    if (ret == 0) {
        qsort(lat + warmup, (size_t)iters, sizeof(*lat), bench_cmp_double);
        printf("hop_floor %s p50 %.2f p99 %.2f iters %d\n", mode->name,
               lat[warmup + iters / 2] * 1e6,
               lat[warmup + (int)(iters * 0.99)] * 1e6, iters);
        fflush(stdout);
    }
    for (i = 0; i < 2; ++i) {
        if (doorbells[i] >= 0) {
            close(doorbells[i]);
        }
    }
    munmap(pairs, 2 * sizeof(*pairs));
    free(lat);
    return ret;
}

int main(int argc, char **argv)
{
    static const struct option options[] = {
        {"iters", required_argument, NULL, 'n'},
        {"mode", required_argument, NULL, 'm'},
        {"spin-us", required_argument, NULL, 's'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0}};
    int chosen[HOP_NUM_MODES] = {0}, any = 0, iters = 20000, opt, failed = 0;
    double spin_us = 20;
    struct sigaction alarm_action = {.sa_handler = hop_on_alarm};
    unsigned m;
    char *end;

    while ((opt = getopt_long(argc, argv, "h", options, NULL)) != -1) {
        switch (opt) {
        case 'n':
            iters = (int)strtol(optarg, &end, 10);
            if ((*end != '\0') || (iters < 10) || (iters > 100000000)) {
                fprintf(stderr, "srm_hop_floor: --iters '%s': want a "
                        "number from 10 to 100000000\n", optarg);
                return 2;
            }
            break;
        case 'm':
            for (m = 0; m < HOP_NUM_MODES; ++m) {
                if (strcmp(optarg, hop_modes[m].name) == 0) {
                    chosen[m] = any = 1;
                    break;
                }
            }
            if (m == HOP_NUM_MODES) {
                fprintf(stderr, "srm_hop_floor: no mode '%s' (see "
                        "--help)\n", optarg);
                return 2;
            }
            break;
        case 's':
            spin_us = strtod(optarg, &end);
            if ((*end != '\0') || !(spin_us >= 0) || (spin_us > 1e6)) {
                fprintf(stderr, "srm_hop_floor: --spin-us '%s': want a "
                        "number from 0 to 1000000\n", optarg);
                return 2;
            }
            break;
        case 'h':
            usage(stdout);
            return 0;
        default:
            usage(stderr);
            return 2;
        }
    }
    if (optind < argc) {
        fprintf(stderr, "srm_hop_floor: unexpected argument '%s'\n",
                argv[optind]);
        return 2;
    }
    sigaction(SIGALRM, &alarm_action, NULL);
    for (m = 0; m < HOP_NUM_MODES; ++m) {
        if ((!any || chosen[m]) && (hop_run(&hop_modes[m], iters, spin_us * 1e-6) != 0)) {
            failed = 1;
        }
    }
    return failed;
}
