/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The agent's life: the listening socket, the event loop, and the choice
 * between spinning and sleeping (docs/design.md: never spin on a node whose
 * cores are all busy; sleep with the doorbell protocol of srm_shm.h).
 */
#define _GNU_SOURCE
#include "srm_agent.h"

#include <ucx_srm/common/srm_log.h>

#include <ucs/sys/string.h> /* UCS_MEMUNITS_AUTO */

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/random.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define SRM_AGENT_EVENT_BATCH      64
#define SRM_AGENT_POLL_EVERY       64   /* progress loops between fd polls */
#define SRM_AGENT_LOAD_PERIOD      0.5  /* seconds between looks at the cores */
#define SRM_AGENT_ACCEPT_PAUSE_MS  100  /* listeners rest after EMFILE */

double srm_agent_now(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/*
 * Our name is bound already: by one of our own agents (or the site's, run by
 * root), which our clients will use, and we leave (UCS_ERR_ALREADY_EXISTS);
 * or by someone our clients will refuse, which is an error worth naming.
 */
static ucs_status_t srm_agent_name_taken(const srm_agent_t *agent)
{
    uid_t uid;
    int fd;

    fd = srm_sock_connect_within(agent->socket_name, 1.0);
    if (fd < 0) {
        srm_error("@%s is bound by a process that does not accept "
                  "connections (%m); cannot serve it", agent->socket_name);
        return UCS_ERR_REJECTED;
    }
    if (srm_sock_peer_uid(fd, &uid) != 0) {
        srm_error("@%s is taken and SO_PEERCRED failed: %m",
                  agent->socket_name);
        close(fd);
        return UCS_ERR_REJECTED;
    }
    close(fd);
    if (srm_sock_agent_uid_trusted(uid) != 0) {
        srm_error("@%s is held by uid %u, not by uid %u or root: our clients "
                  "will refuse it; is another user posing as our agent?",
                  agent->socket_name, (unsigned)uid, (unsigned)getuid());
        return UCS_ERR_REJECTED;
    }
    srm_info("an agent of uid %u already serves @%s in this network "
             "namespace", (unsigned)uid, agent->socket_name);
    return UCS_ERR_ALREADY_EXISTS;
}

ucs_status_t srm_agent_init(srm_agent_t *agent)
{
    struct epoll_event ev = {.events   = EPOLLIN,
                             .data.u64 = SRM_EPOLL_DATA(SRM_EPOLL_LISTEN, 0)};
    struct sockaddr_un addr;
    ucs_status_t status;
    socklen_t addrlen;

    agent->uid        = getuid();
    agent->start_time = srm_agent_now();
    agent->idle_since = agent->start_time;
    agent->listen_fd  = -1;
    agent->epoll_fd   = -1;
    srm_sched_init(&agent->sched, agent->config.quantum,
                   SRM_FRAME_MAX_PAYLOAD);
    srm_regions_init(&agent->regions);
    if (agent->config.mem_limit == UCS_MEMUNITS_AUTO) {
        agent->config.mem_limit = (size_t)sysconf(_SC_PHYS_PAGES) / 4 *
                                  (size_t)sysconf(_SC_PAGESIZE);
    }

    if (getrandom(&agent->node_id, sizeof(agent->node_id), 0) !=
        sizeof(agent->node_id)) {
        srm_error("getrandom failed: %m");
        return UCS_ERR_IO_ERROR;
    }

    if (srm_sock_addr(agent->socket_name, &addr, &addrlen) != 0) {
        srm_error("invalid socket name '%s'", agent->socket_name);
        return UCS_ERR_IO_ERROR;
    }
    agent->listen_fd = socket(AF_UNIX,
                              SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK,
                              0);
    if (agent->listen_fd < 0) {
        srm_error("socket() failed: %m");
        return UCS_ERR_IO_ERROR;
    }
    if (bind(agent->listen_fd, (struct sockaddr*)&addr, addrlen) != 0) {
        if (errno == EADDRINUSE) {
            return srm_agent_name_taken(agent);
        } else {
            srm_error("bind(@%s) failed: %m", agent->socket_name);
        }
        return UCS_ERR_IO_ERROR;
    }
    if (listen(agent->listen_fd, 128) != 0) {
        srm_error("listen(@%s) failed: %m", agent->socket_name);
        return UCS_ERR_IO_ERROR;
    }

    agent->epoll_fd = epoll_create1(EPOLL_CLOEXEC);
    if ((agent->epoll_fd < 0) ||
        (epoll_ctl(agent->epoll_fd, EPOLL_CTL_ADD, agent->listen_fd, &ev) !=
         0)) {
        srm_error("epoll setup failed: %m");
        return UCS_ERR_IO_ERROR;
    }
    status = srm_link_init(agent);
    if (status != UCS_OK) {
        return status;
    }
    status = srm_cpus_init(agent);
    if (status != UCS_OK) {
        return status;
    }
    if (agent->config.ring_send_min == UCS_MEMUNITS_AUTO) {
        agent->config.ring_send_min = (agent->verbs[0] != NULL) ?
                                      SRM_RING_SEND_MIN_VERBS :
                                      UCS_MEMUNITS_INF;
    }

    if (setpriority(PRIO_PROCESS, 0, agent->config.nice) != 0) {
        srm_info("could not set nice %d (%m); woken agent may wait for "
                 "busy-polling ranks", agent->config.nice);
    }

    srm_info("serving @%s, node 0x%016llx, poll %s, quantum %zu, "
             "port backlog %zu", agent->socket_name,
             (unsigned long long)agent->node_id,
             srm_poll_policy_names[agent->config.poll_policy],
             agent->config.quantum, agent->config.port_backlog);
    if (agent->config.mem_limit == UCS_MEMUNITS_INF) {
        srm_info("md-allocated memory: no limit per user");
    } else {
        srm_info("md-allocated memory: at most %zu MB per user",
                 agent->config.mem_limit >> 20);
    }
    return UCS_OK;
}

void srm_agent_cleanup(srm_agent_t *agent)
{
    unsigned i;

    srm_cpus_cleanup(agent);
    for (i = 0; i < agent->num_slots; ++i) {
        if (agent->slots[i] != NULL) {
            srm_client_drop(agent, agent->slots[i], NULL);
        }
    }
    free(agent->slots);
    srm_rma_cleanup(agent);
    srm_regions_cleanup(&agent->regions); /* before the devices' PDs go */
    /* Closing the links may fail their nodes, which tells the clients. */
    agent->slots     = NULL;
    agent->num_slots = 0;
    srm_node_cleanup(agent);
    srm_sched_cleanup(&agent->sched);
    if (agent->epoll_fd >= 0) {
        close(agent->epoll_fd);
    }
    if (agent->listen_fd >= 0) {
        close(agent->listen_fd);
    }
}

/* The clients' and the wire's listeners wait for `events` (0: they rest). */
static void srm_agent_listen(srm_agent_t *agent, uint32_t events)
{
    struct epoll_event ev;

    memset(&ev, 0, sizeof(ev));
    ev.events   = events;
    ev.data.u64 = SRM_EPOLL_DATA(SRM_EPOLL_LISTEN, 0);
    epoll_ctl(agent->epoll_fd, EPOLL_CTL_MOD, agent->listen_fd, &ev);
    srm_link_listen_events(agent, events);
}

void srm_agent_accept_failed(srm_agent_t *agent, const char *which)
{
    if ((errno == EAGAIN) || (errno == EINTR) || (errno == ECONNABORTED)) {
        return;
    }
    if ((errno != EMFILE) && (errno != ENFILE) && (errno != ENOBUFS) &&
        (errno != ENOMEM)) {
        srm_warn("accept on %s failed: %m", which);
        return;
    }
    /* The same accept would fail at once again, and the level-triggered
     * listener would wake us on every pass, each with a line of log. */
    srm_warn("accept on %s failed: %m; no connection is accepted for "
             "%d ms", which, SRM_AGENT_ACCEPT_PAUSE_MS);
    agent->accept_paused_until = srm_agent_now() +
                                 SRM_AGENT_ACCEPT_PAUSE_MS / 1e3;
    srm_agent_listen(agent, 0);
}

/* Moves what can move: one scheduler round, then the backlogs. */
static unsigned srm_agent_progress(srm_agent_t *agent)
{
    srm_sched_queue_t *failed;
    unsigned count;

    count = srm_deliver_backlogs(agent);
    do {
        count += srm_sched_round(&agent->sched, srm_deliver_frame, agent,
                                 &failed);
        count += agent->sched.saving; /* not idle: credit is building up */
        if (failed != NULL) {
            srm_client_fail(agent, failed->owner,
                            "malformed frame or ring index in its TX ring");
            srm_client_reap(agent); /* before the next round visits it */
        }
    } while (failed != NULL);

    count += srm_node_progress(agent);
    count += srm_lane_progress(agent);
    if (agent->rma_busy > 0) {
        count += srm_rma_progress(agent);
    }
    srm_deliver_notify(agent);
    if (agent->num_failed > 0) {
        srm_client_reap(agent);
    }
    if (agent->num_departing > 0) {
        srm_client_reap_departed(agent);
    }
    if ((agent->accept_paused_until > 0) &&
        (srm_agent_now() >= agent->accept_paused_until)) {
        srm_agent_listen(agent, EPOLLIN);
        agent->accept_paused_until = 0;
    }
    return count;
}

static void srm_agent_handle_event(srm_agent_t *agent,
                                   const struct epoll_event *ev)
{
    uint32_t kind = (uint32_t)(ev->data.u64 >> 32);
    uint32_t slot = (uint32_t)ev->data.u64;
    srm_client_t *client;
    uint64_t count;

    if (kind == SRM_EPOLL_LISTEN) {
        srm_client_accept(agent);
        return;
    } else if (kind == SRM_EPOLL_WIRE) {
        srm_link_accept(agent, slot);
        return;
    } else if (kind == SRM_EPOLL_LINK) {
        srm_link_event(agent, slot, ev->events);
        return;
    } else if (kind == SRM_EPOLL_VERBS) {
        srm_link_verbs_event(agent, slot);
        return;
    } else if (kind == SRM_EPOLL_VERBS_ASYNC) {
        if ((slot < SRM_WIRE_PATHS) && (agent->verbs[slot] != NULL)) {
            srm_wire_verbs_dev_async(agent->verbs[slot]);
        }
        return;
    }
    client = (slot < agent->num_slots) ? agent->slots[slot] : NULL;
    if (client == NULL) {
        return; /* dropped earlier in this batch */
    }
    if (kind == SRM_EPOLL_SOCKET) {
        srm_client_handle_socket(agent, client);
    } else if (read(client->doorbell_fd, &count, sizeof(count)) < 0) {
        (void)count; /* EAGAIN: already drained */
    }
}

static unsigned srm_agent_poll_events(srm_agent_t *agent, int timeout_ms)
{
    struct epoll_event events[SRM_AGENT_EVENT_BATCH];
    int i, n;

    n = epoll_wait(agent->epoll_fd, events, SRM_AGENT_EVENT_BATCH, timeout_ms);
    if ((n < 0) && (errno != EINTR)) {
        srm_error("epoll_wait failed: %m");
        agent->stop = 1;
        return 0;
    }
    for (i = 0; i < n; ++i) {
        srm_agent_handle_event(agent, &events[i]);
    }
    return (n > 0) ? (unsigned)n : 0;
}

static void srm_agent_set_sleeping(srm_agent_t *agent, int sleeping)
{
    srm_client_t *client;
    unsigned i;

    for (i = 0; i < agent->num_slots; ++i) {
        client = agent->slots[i];
        if ((client != NULL) && (client->state == SRM_CLIENT_ATTACHED)) {
            srm_store_relaxed(&client->ctl->agent_sleeping.value,
                              (uint32_t)sleeping);
        }
    }
    srm_fence();
}

static int srm_agent_should_spin(srm_agent_t *agent, double idle_for)
{
    switch (agent->config.poll_policy) {
    case SRM_POLL_SPIN:
        return 1;
    case SRM_POLL_BLOCK:
        return 0;
    case SRM_POLL_HYBRID:
        return idle_for < agent->config.spin_time;
    case SRM_POLL_LOCAL:
        return agent->moved_locally && (idle_for < agent->config.spin_time);
    default:
        return agent->spinning && (idle_for < agent->config.spin_time);
    }
}

static int srm_agent_ms_until(double deadline, double now, int limit_ms)
{
    double left_ms = (deadline - now) * 1e3;

    return (left_ms <= 0) ? 0 : (left_ms < limit_ms) ? (int)left_ms + 1 :
                                                       limit_ms;
}

static int srm_agent_safety_ms(const srm_agent_t *agent)
{
    double ms = agent->config.safety_wakeup * 1e3;

    return (ms >= INT_MAX) ? INT_MAX : (ms < 1) ? 1 : (int)ms;
}

/* How long a sleep may last; decides the idle exit, too. */
static int srm_agent_sleep_timeout_ms(srm_agent_t *agent, double now)
{
    int timeout_ms = srm_agent_safety_ms(agent);
    double idle_end;

    if (agent->exit_when_idle && (agent->num_clients == 0) &&
        (agent->regions.count == 0)) {
        idle_end = agent->idle_since + agent->config.idle_timeout;
        if (now >= idle_end) {
            srm_info("no clients for %.1f s: exiting",
                     agent->config.idle_timeout);
            agent->stop = 1;
            return 0;
        }
        timeout_ms = srm_agent_ms_until(idle_end, now, timeout_ms);
    }
    if (agent->accept_paused_until > 0) {
        timeout_ms = srm_agent_ms_until(agent->accept_paused_until, now,
                                        timeout_ms);
    }
    if ((agent->num_nodes > 0) || (agent->num_links > 0)) {
        /* Channel timers: acks owed, heartbeats, reconnects. */
        timeout_ms = srm_agent_ms_until(agent->next_timer, now, timeout_ms);
    }
    return timeout_ms;
}

/* Sleep without losing a wakeup: flag, fence, look once more, then wait. */
static void srm_agent_sleep(srm_agent_t *agent, double now)
{
    int timeout_ms = srm_agent_sleep_timeout_ms(agent, now);
    uint64_t frames;

    if (agent->stop) {
        return;
    }
    agent->moved_locally = 0; /* what it moves from here on counts */
    srm_agent_set_sleeping(agent, 1);
    if (srm_agent_progress(agent) == 0) {
        agent->stats.sleeps++;
        if ((srm_agent_poll_events(agent, timeout_ms) == 0) &&
            (timeout_ms == srm_agent_safety_ms(agent))) {
            /* Only the net woke us: frames to move now were announced by
             * no doorbell (a lost wakeup). */
            frames = agent->stats.frames;
            srm_agent_progress(agent);
            if (agent->stats.frames != frames) {
                agent->stats.late_wakeups++;
            }
        }
    }
    srm_agent_set_sleeping(agent, 0);
}

unsigned srm_agent_step(srm_agent_t *agent, int timeout_ms)
{
    unsigned count = srm_agent_progress(agent);

    return count + srm_agent_poll_events(agent, timeout_ms);
}

void srm_agent_run(srm_agent_t *agent)
{
    double now, last_work, load_time = 0;
    unsigned loops = 0, work;

    last_work = srm_agent_now();
    while (!agent->stop) {
        work = srm_agent_progress(agent);
        if (work > 0) {
            last_work = 0; /* sampled lazily below */
        }
        if ((++loops % SRM_AGENT_POLL_EVERY) == 0) {
            srm_agent_poll_events(agent, 0);
            srm_agent_sleep_timeout_ms(agent, srm_agent_now());
        }

        now = srm_agent_now();
        if ((now - load_time) > SRM_AGENT_LOAD_PERIOD) {
            agent->spinning = srm_cpus_update(agent, now);
            load_time       = now;
        }
        if (last_work == 0) {
            last_work = now;
            continue;
        }
        if (srm_agent_should_spin(agent, now - last_work)) {
            /* Sockets of other agents are only heard through epoll: an
             * agent spinning for a reply from another node looks at them
             * on every idle pass, not only every POLL_EVERY passes (an
             * agent about to sleep hears them in its sleep). */
            if (agent->num_links > 0) {
                srm_agent_poll_events(agent, 0);
            }
        } else {
            srm_agent_sleep(agent, now);
            last_work = srm_agent_now();
            agent->stats.wakeups++;
        }
    }
}
