/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * srm_wake_cost: what waking a sleeping process costs on this machine,
 * depending on where it sleeps. A thread blocks in epoll_wait on an eventfd
 * (as srmd does when idle); another writes the eventfd and times until the
 * sleeper runs. An agent hop pays this once per message whenever the agent
 * sleeps, while ranks that busy-poll a socket of their own (UCX's tcp) pay
 * it never: on a virtual machine whose CPUs wake each other slowly this,
 * not srm's code, sets the floor under srm's latency.
 */
#define _GNU_SOURCE
#include "bench_clock.h"

#include <errno.h>
#include <getopt.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#define WAKE_SETTLE_US 200 /* the sleeper's CPU goes idle (or back to its
                              other task) before the next wakeup */

typedef enum {
    WAKE_SAME_CPU,   /* the waker yields its CPU to the sleeper */
    WAKE_OTHER_BUSY, /* the sleeper's CPU runs a process that yields */
    WAKE_OTHER_IDLE, /* the sleeper's CPU has nothing else to run */
} wake_case_t;

static const char *const wake_case_names[] = {
    [WAKE_SAME_CPU]   = "same-cpu",
    [WAKE_OTHER_BUSY] = "other-cpu-busy",
    [WAKE_OTHER_IDLE] = "other-cpu-idle",
};
#define WAKE_NUM_CASES (sizeof(wake_case_names) / sizeof(wake_case_names[0]))

/* The first two CPUs this process may use: the waker's, then the other. */
static int wake_cpus[2];

typedef struct {
    wake_case_t   which;
    int           event_fd;
    int           epoll_fd;
    int           sleeper_cpu;
    atomic_int    stop;
    atomic_int    asleep;   /* the sleeper is about to block */
    atomic_uint   woken;    /* wakeups the sleeper has seen */
    _Atomic double woke_at; /* when it last ran after one */
} wake_run_t;

static void usage(FILE *out)
{
    fprintf(out,
            "Usage: srm_wake_cost [--iters N] [--case NAME]...\n"
            "\n"
            "Times the wakeup of a thread blocked in epoll_wait on an\n"
            "eventfd, from the eventfd write to the sleeper running, in\n"
            "these cases (all by default):\n"
            "  same-cpu        the sleeper shares the waker's CPU; the waker\n"
            "                  then yields (a rank handing work to its agent)\n"
            "  other-cpu-busy  the sleeper's CPU runs a thread that spins\n"
            "                  on sched_yield() (a rank waiting for it)\n"
            "  other-cpu-idle  the sleeper's CPU has nothing else to run\n"
            "\n"
            "Prints one line per case:\n"
            "  wake_cost CASE p50 P50_US p99 P99_US iters N\n"
            "or, where this process may use only one CPU, for the cases\n"
            "that need two:\n"
            "  wake_cost CASE skipped: one CPU allowed\n"
            "\n"
            "  --iters N   wakeups per case (default 2000; 10 to 1000000)\n"
            "  --case NAME run only this case (repeatable)\n"
            "  -h, --help  this text\n");
}

/* Fills wake_cpus (-1 for a second CPU this process may not use). */
static int wake_allowed_cpus(void)
{
    cpu_set_t cpus;
    int cpu, found = 0;

    if (sched_getaffinity(0, sizeof(cpus), &cpus) != 0) {
        return -1;
    }
    wake_cpus[0] = wake_cpus[1] = -1;
    for (cpu = 0; (cpu < CPU_SETSIZE) && (found < 2); ++cpu) {
        if (CPU_ISSET(cpu, &cpus)) {
            wake_cpus[found++] = cpu;
        }
    }
    return 0;
}

static int wake_pin(int cpu)
{
    cpu_set_t cpus;

    CPU_ZERO(&cpus);
    CPU_SET(cpu, &cpus);
    return pthread_setaffinity_np(pthread_self(), sizeof(cpus), &cpus);
}

static void wake_pause_us(double us)
{
    double end = bench_now() + us * 1e-6;

    while (bench_now() < end) {
    }
}

static void *wake_sleeper(void *arg)
{
    wake_run_t *run = arg;
    struct epoll_event ev;
    uint64_t count;

    while (!atomic_load(&run->stop)) {
        atomic_store(&run->asleep, 1);
        if (epoll_wait(run->epoll_fd, &ev, 1, -1) != 1) {
            continue; /* EINTR */
        }
        atomic_store(&run->woke_at, bench_now());
        if (read(run->event_fd, &count, sizeof(count)) != sizeof(count)) {
            continue;
        }
        atomic_fetch_add(&run->woken, 1);
    }
    return NULL;
}

/* The other task of the sleeper's CPU in other-cpu-busy. */
static void *wake_yielder(void *arg)
{
    wake_run_t *run = arg;

    while (!atomic_load(&run->stop)) {
        sched_yield();
    }
    return NULL;
}

/* A thread bound to cpu from its start: 0, or an errno. */
static int wake_thread(pthread_t *thread, int cpu, void *(*func)(void*),
                       void *arg)
{
    pthread_attr_t attr;
    cpu_set_t cpus;
    int ret;

    CPU_ZERO(&cpus);
    CPU_SET(cpu, &cpus);
    ret = pthread_attr_init(&attr);
    if (ret != 0) {
        return ret;
    }
    ret = pthread_attr_setaffinity_np(&attr, sizeof(cpus), &cpus);
    if (ret == 0) {
        ret = pthread_create(thread, &attr, func, arg);
    }
    pthread_attr_destroy(&attr);
    return ret;
}

/* Measures one case into samples[iters] (seconds); 0, or -1 with errno. */
static int wake_measure(wake_case_t which, unsigned iters, double *samples)
{
    struct epoll_event ev = {.events = EPOLLIN};
    pthread_t sleeper, yielder;
    int have_yielder = 0, ret = -1;
    wake_run_t run;
    uint64_t one = 1;
    unsigned i, seen;
    double start;

    memset(&run, 0, sizeof(run));
    run.which       = which;
    run.sleeper_cpu = wake_cpus[(which == WAKE_SAME_CPU) ? 0 : 1];
    run.event_fd    = eventfd(0, EFD_CLOEXEC);
    run.epoll_fd    = epoll_create1(EPOLL_CLOEXEC);
    if ((run.event_fd < 0) || (run.epoll_fd < 0) ||
        (epoll_ctl(run.epoll_fd, EPOLL_CTL_ADD, run.event_fd, &ev) != 0) ||
        ((errno = wake_pin(wake_cpus[0])) != 0)) {
        goto out;
    }
    errno = wake_thread(&sleeper, run.sleeper_cpu, wake_sleeper, &run);
    if (errno != 0) {
        goto out;
    }
    if (which == WAKE_OTHER_BUSY) {
        errno = wake_thread(&yielder, run.sleeper_cpu, wake_yielder, &run);
        have_yielder = (errno == 0);
    }

    for (i = 0; (i < iters) && ((which != WAKE_OTHER_BUSY) || have_yielder);
         ++i) {
        while (!atomic_load(&run.asleep)) {
            sched_yield();
        }
        if (which != WAKE_SAME_CPU) {
            wake_pause_us(WAKE_SETTLE_US); /* really blocked, CPU settled */
        } else {
            usleep(WAKE_SETTLE_US);
        }
        seen = atomic_load(&run.woken);
        atomic_store(&run.asleep, 0);
        start = bench_now();
        if (write(run.event_fd, &one, sizeof(one)) != sizeof(one)) {
            break;
        }
        while (atomic_load(&run.woken) == seen) {
            if (which == WAKE_SAME_CPU) {
                sched_yield();
            }
        }
        samples[i] = atomic_load(&run.woke_at) - start;
    }
    ret = (i == iters) ? 0 : -1;

    atomic_store(&run.stop, 1);
    if (write(run.event_fd, &one, sizeof(one)) < 0) {
        ret = -1;
    }
    pthread_join(sleeper, NULL);
    if (have_yielder) {
        pthread_join(yielder, NULL);
    }
out:
    if (run.event_fd >= 0) {
        close(run.event_fd);
    }
    if (run.epoll_fd >= 0) {
        close(run.epoll_fd);
    }
    return ret;
}

int main(int argc, char **argv)
{
    static const struct option options[] = {
            {"iters", required_argument, NULL, 'n'},
            {"case", required_argument, NULL, 'c'},
            {"help", no_argument, NULL, 'h'},
            {NULL, 0, NULL, 0}};
    int chosen[WAKE_NUM_CASES] = {0}, any_chosen = 0, failed = 0, opt;
    unsigned long iters = 2000;
    double *samples;
    char *end;
    unsigned c;

    while ((opt = getopt_long(argc, argv, "h", options, NULL)) != -1) {
        switch (opt) {
        case 'n':
            errno = 0;
            iters = strtoul(optarg, &end, 10);
            if ((errno != 0) || (*end != '\0') || (iters < 10) ||
                (iters > 1000000)) {
                fprintf(stderr, "srm_wake_cost: --iters wants 10 to 1000000, "
                                "not '%s'\n", optarg);
                return 2;
            }
            break;
        case 'c':
            for (c = 0; c < WAKE_NUM_CASES; ++c) {
                if (strcmp(optarg, wake_case_names[c]) == 0) {
                    break;
                }
            }
            if (c == WAKE_NUM_CASES) {
                fprintf(stderr, "srm_wake_cost: no case '%s'\n", optarg);
                usage(stderr);
                return 2;
            }
            chosen[c]  = 1;
            any_chosen = 1;
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
        fprintf(stderr, "srm_wake_cost: unexpected argument '%s'\n",
                argv[optind]);
        return 2;
    }

    if (wake_allowed_cpus() != 0) {
        fprintf(stderr, "srm_wake_cost: sched_getaffinity: %s\n",
                strerror(errno));
        return 1;
    }
    samples = calloc(iters, sizeof(*samples));
    if (samples == NULL) {
        fprintf(stderr, "srm_wake_cost: out of memory\n");
        return 1;
    }
    for (c = 0; c < WAKE_NUM_CASES; ++c) {
        if (any_chosen && !chosen[c]) {
            continue;
        }
        if ((c != WAKE_SAME_CPU) && (wake_cpus[1] < 0)) {
            printf("wake_cost %s skipped: one CPU allowed\n",
                   wake_case_names[c]);
            continue;
        }
        if (wake_measure((wake_case_t)c, (unsigned)iters, samples) != 0) {
            fprintf(stderr, "srm_wake_cost: %s failed: %s\n",
                    wake_case_names[c], strerror(errno));
            failed = 1;
            continue;
        }
        qsort(samples, iters, sizeof(*samples), bench_cmp_double);
        printf("wake_cost %s p50 %.2f p99 %.2f iters %lu\n",
               wake_case_names[c], samples[iters / 2] * 1e6,
               samples[(iters * 99) / 100] * 1e6, iters);
        fflush(stdout);
    }
    free(samples);
    return failed;
}
