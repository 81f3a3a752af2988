/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Where the agent runs (UCX_SRM_AGENT_CPUS) and whether its cores have
 * time to spare for spinning (UCX_SRM_POLL=auto).
 *
 * An agent started by a rank inherits that rank's binding: it would fight
 * the rank for its one core. So it moves to the cores the node's cpuset
 * allows, those near the wire's NIC where hwloc knows the locality, and
 * away from cores ranks are bound to while others remain; this is looked
 * at again as ranks come and go. Spare time is the idle time of the
 * agent's own cores (/proc/stat), not the whole machine's run queue: a
 * container's cpuset is not the host's.
 */
#define _GNU_SOURCE
#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "srm_cpus.h"
#include "srm_agent.h"
#include "srm_json.h"

#ifdef HAVE_HWLOC
#  include <hwloc.h>
#  include <hwloc/glibc-sched.h>
#endif

#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* Spin only while the agent's cores were idle at least this much of one
 * core over the last period. */
#define SRM_CPUS_SPARE_MIN 0.5

/* A CPU list as text at its longest: every other CPU of CPU_SETSIZE. */
#define SRM_CPUS_TEXT_MAX (CPU_SETSIZE * 3)

struct srm_cpus {
    cpu_set_t allowed;        /* the cpuset, or the AGENT_CPUS list */
    cpu_set_t near;           /* of those, near the wire's NIC */
    cpu_set_t current;        /* where the agent runs now */
    int       fixed;          /* inherit, or a list: never moved */
    char      near_what[64];  /* "eth0", or "" when locality is unknown */
    unsigned  ranks_bound;    /* attached ranks bound to some cores */
    double    spare;          /* cores' time unused by others, in cores */
    /* /proc/stat at the last look */
    unsigned long long idle_ticks, busy_ticks;
    double    when;
};

static void srm_cpus_format(const cpu_set_t *set, char *buf, size_t size)
{
    int cpu, first = -1, len = 0;

    buf[0] = '\0';
    for (cpu = 0; cpu <= CPU_SETSIZE; ++cpu) {
        if ((cpu < CPU_SETSIZE) && CPU_ISSET(cpu, set)) {
            if (first < 0) {
                first = cpu;
            }
            continue;
        }
        if (first >= 0) {
            len += snprintf(buf + len, size - len, (cpu - 1 > first) ?
                            "%s%d-%d" : "%s%d", (len > 0) ? "," : "", first,
                            cpu - 1);
            if ((size_t)len >= size) {
                return;
            }
            first = -1;
        }
    }
}

/* "0-3,8" into set; -1 when it is not such a list. */
static int srm_cpus_parse(const char *list, cpu_set_t *set)
{
    unsigned long first, last;
    char *end;

    CPU_ZERO(set);
    while (*list != '\0') {
        first = strtoul(list, &end, 10);
        if (end == list) {
            return -1;
        }
        last = first;
        if (*end == '-') {
            list = end + 1;
            last = strtoul(list, &end, 10);
            if ((end == list) || (last < first)) {
                return -1;
            }
        }
        if (last >= CPU_SETSIZE) {
            return -1;
        }
        for (; first <= last; ++first) {
            CPU_SET(first, set);
        }
        if (*end == ',') {
            ++end;
        } else if (*end != '\0') {
            return -1;
        }
        list = end;
    }
    return CPU_COUNT(set) > 0 ? 0 : -1;
}

/* Without hwloc: the online CPUs (/sys/devices/system/cpu/online), else
 * CPUs 0..N-1. */
static void srm_cpus_online(cpu_set_t *set)
{
    char line[4096];
    long cpu, count;
    FILE *file;

    file = fopen("/sys/devices/system/cpu/online", "r");
    if (file != NULL) {
        if (fgets(line, sizeof(line), file) != NULL) {
            line[strcspn(line, "\n")] = '\0';
        } else {
            line[0] = '\0';
        }
        fclose(file);
        if (srm_cpus_parse(line, set) == 0) {
            return;
        }
    }
    CPU_ZERO(set);
    count = sysconf(_SC_NPROCESSORS_ONLN);
    for (cpu = 0; (cpu < count) && (cpu < CPU_SETSIZE); ++cpu) {
        CPU_SET(cpu, set);
    }
}

/*
 * The cores the node's cpuset allows (hwloc reads the cgroup), and those
 * of them near the NIC called device. Without hwloc: every online core,
 * locality unknown.
 */
static void srm_cpus_topology(struct srm_cpus *cpus, const char *device)
{
#ifdef HAVE_HWLOC
    hwloc_topology_t topo;
    hwloc_bitmap_t near;
    hwloc_obj_t os = NULL, parent;

    if (hwloc_topology_init(&topo) != 0) {
        goto no_hwloc;
    }
    if ((hwloc_topology_set_io_types_filter(topo,
                                  HWLOC_TYPE_FILTER_KEEP_IMPORTANT) != 0) ||
        (hwloc_topology_load(topo) != 0)) {
        hwloc_topology_destroy(topo);
        goto no_hwloc;
    }
    hwloc_cpuset_to_glibc_sched_affinity(
            topo, hwloc_topology_get_allowed_cpuset(topo), &cpus->allowed,
            sizeof(cpus->allowed));
    while ((device[0] != '\0') &&
           ((os = hwloc_get_next_osdev(topo, os)) != NULL) &&
           (strcmp(os->name, device) != 0)) {
    }
    parent = (os != NULL) ? hwloc_get_non_io_ancestor_obj(topo, os) :
                            NULL;
    if ((parent != NULL) && (parent->cpuset != NULL)) {
        near = hwloc_bitmap_dup(parent->cpuset);
        hwloc_bitmap_and(near, near,
                         hwloc_topology_get_allowed_cpuset(topo));
        if (!hwloc_bitmap_iszero(near)) {
            hwloc_cpuset_to_glibc_sched_affinity(topo, near, &cpus->near,
                                                 sizeof(cpus->near));
            snprintf(cpus->near_what, sizeof(cpus->near_what), "%s",
                     device);
        }
        hwloc_bitmap_free(near);
    }
    hwloc_topology_destroy(topo);
    if (CPU_COUNT(&cpus->allowed) > 0) {
        if (cpus->near_what[0] == '\0') {
            cpus->near = cpus->allowed;
        }
        return;
    }
no_hwloc:
#endif
    srm_cpus_online(&cpus->allowed);
    cpus->near = cpus->allowed;
}

ucs_status_t srm_cpus_init(srm_agent_t *agent)
{
    const char *setting = (agent->config.agent_cpus != NULL) ?
                          agent->config.agent_cpus : "auto";
    char device[64], text[2][SRM_CPUS_TEXT_MAX];
    struct srm_cpus *cpus;
    cpu_set_t listed;

    cpus = calloc(1, sizeof(*cpus));
    if (cpus == NULL) {
        return UCS_ERR_NO_MEMORY;
    }
    agent->cpus = cpus;
    snprintf(device, sizeof(device), "%.*s",
             (int)strcspn(agent->wire_device[0], " "), agent->wire_device[0]);
    srm_cpus_topology(cpus, device);

    if (strcmp(setting, "inherit") == 0) {
        cpus->fixed = 1;
        sched_getaffinity(0, sizeof(cpus->current), &cpus->current);
        return UCS_OK;
    }
    if (strcmp(setting, "auto") != 0) {
        if (srm_cpus_parse(setting, &listed) != 0) {
            srm_error("UCX_SRM_AGENT_CPUS='%s' is not auto, inherit or a "
                      "CPU list such as 0-3,8", setting);
            return UCS_ERR_INVALID_PARAM;
        }
        CPU_AND(&cpus->near, &listed, &cpus->allowed);
        if (!CPU_EQUAL(&cpus->near, &listed)) {
            srm_cpus_format(&listed, text[0], sizeof(text[0]));
            srm_cpus_format(&cpus->allowed, text[1], sizeof(text[1]));
            srm_error("UCX_SRM_AGENT_CPUS=%s: not all within the cores this "
                      "node's cpuset allows (%s)", text[0], text[1]);
            return UCS_ERR_INVALID_PARAM;
        }
        cpus->fixed     = 1;
        cpus->allowed   = listed;
        cpus->near_what[0] = '\0';
    }
    cpus->current = cpus->near;
    if (sched_setaffinity(0, sizeof(cpus->current), &cpus->current) != 0) {
        srm_cpus_format(&cpus->current, text[0], sizeof(text[0]));
        srm_error("cannot run on cores %s (UCX_SRM_AGENT_CPUS=%s): %m",
                  text[0], setting);
        return UCS_ERR_INVALID_PARAM;
    }
    srm_cpus_format(&cpus->current, text[0], sizeof(text[0]));
    srm_info("runs on cores %s (UCX_SRM_AGENT_CPUS=%s%s%s)", text[0], setting,
             (cpus->near_what[0] != '\0') ? ", near " : "", cpus->near_what);
    return UCS_OK;
}

void srm_cpus_cleanup(srm_agent_t *agent)
{
    free(agent->cpus);
    agent->cpus = NULL;
}

/* Away from cores ranks are bound to, while any others remain. */
static void srm_cpus_place(srm_agent_t *agent)
{
    struct srm_cpus *cpus = agent->cpus;
    cpu_set_t bound, rank, target, free_near, free_all;
    srm_client_t *client;
    char text[SRM_CPUS_TEXT_MAX];
    unsigned i;

    CPU_ZERO(&bound);
    cpus->ranks_bound = 0;
    for (i = 0; i < agent->num_slots; ++i) {
        client = agent->slots[i];
        /* pid 0: a client in a pid namespace we cannot see (and
         * sched_getaffinity(0) would be our own mask). */
        if ((client == NULL) || (client->state != SRM_CLIENT_ATTACHED) ||
            (client->pid <= 0) ||
            (sched_getaffinity(client->pid, sizeof(rank), &rank) != 0)) {
            continue;
        }
        CPU_AND(&target, &rank, &cpus->allowed);
        if (!CPU_EQUAL(&target, &cpus->allowed)) { /* bound to some */
            CPU_OR(&bound, &bound, &rank);
            ++cpus->ranks_bound;
        }
    }
    CPU_XOR(&free_near, &cpus->near, &bound);
    CPU_AND(&free_near, &free_near, &cpus->near);
    CPU_XOR(&free_all, &cpus->allowed, &bound);
    CPU_AND(&free_all, &free_all, &cpus->allowed);
    target = (CPU_COUNT(&free_near) > 0) ? free_near :
             (CPU_COUNT(&free_all) > 0)  ? free_all  : cpus->near;
    if (CPU_EQUAL(&target, &cpus->current) ||
        (sched_setaffinity(0, sizeof(target), &target) != 0)) {
        return;
    }
    sched_getaffinity(0, sizeof(cpus->current), &cpus->current);
    cpus->when = 0; /* the idle ticks were of other cores */
    srm_cpus_format(&cpus->current, text, sizeof(text));
    srm_info("moved to cores %s (%u ranks bound)", text, cpus->ranks_bound);
}

/* Ticks the agent's cores spent idle, and busy, since boot. */
static void srm_cpus_ticks(const struct srm_cpus *cpus,
                           unsigned long long *idle,
                           unsigned long long *busy)
{
    unsigned long long user, nice, sys, idl, iowait, irq, softirq, steal;
    char line[256];
    FILE *file;
    int cpu;

    *idle = *busy = 0;
    file = fopen("/proc/stat", "r");
    if (file == NULL) {
        return;
    }
    while (fgets(line, sizeof(line), file) != NULL) {
        /* "cpu0 ..." lines only: %d would read the total line "cpu  ..."
         * as a CPU numbered by its first count. */
        if ((strncmp(line, "cpu", 3) == 0) && (line[3] >= '0') &&
            (line[3] <= '9') &&
            (sscanf(line, "cpu%d %llu %llu %llu %llu %llu %llu %llu %llu",
                    &cpu, &user, &nice, &sys, &idl, &iowait, &irq, &softirq,
                    &steal) == 9) &&
            (cpu >= 0) && (cpu < CPU_SETSIZE) &&
            CPU_ISSET(cpu, &cpus->current)) {
            *idle += idl + iowait;
            *busy += user + nice + sys + irq + softirq + steal;
        }
    }
    fclose(file);
}

int srm_cpus_update(srm_agent_t *agent, double now)
{
    struct srm_cpus *cpus = agent->cpus;
    unsigned long long idle, busy, ticks;

    if (!cpus->fixed) {
        srm_cpus_place(agent);
    }
    srm_cpus_ticks(cpus, &idle, &busy);
    ticks = (idle - cpus->idle_ticks) + (busy - cpus->busy_ticks);
    if ((cpus->when > 0) && (ticks > 0)) {
        /* Idle time only: the agent's own spinning is time a yielding rank
         * would have taken (tried: counting it as spare made auto spin
         * through bulk transfers, 1 MB tag_bw 15% slower). */
        cpus->spare = ((double)(idle - cpus->idle_ticks) / (double)ticks) *
                      (double)CPU_COUNT(&cpus->current);
    }
    cpus->idle_ticks = idle;
    cpus->busy_ticks = busy;
    cpus->when       = now;
    return cpus->spare >= SRM_CPUS_SPARE_MIN;
}

void srm_cpus_describe(const srm_agent_t *agent, char *buf, size_t size)
{
    const struct srm_cpus *cpus = agent->cpus;
    char current[SRM_CPUS_TEXT_MAX], allowed[SRM_CPUS_TEXT_MAX];

    if (cpus == NULL) {
        snprintf(buf, size, "unknown");
        return;
    }
    srm_cpus_format(&cpus->current, current, sizeof(current));
    srm_cpus_format(&cpus->allowed, allowed, sizeof(allowed));
    snprintf(buf, size, "%s of %s (%s%s%s), %u ranks bound, spare %.2f cores",
             current, allowed, agent->config.agent_cpus,
             (cpus->near_what[0] != '\0') ? ", near " : "", cpus->near_what,
             cpus->ranks_bound, cpus->spare);
}

void srm_cpus_json(const srm_agent_t *agent, srm_json_t *json)
{
    const struct srm_cpus *cpus = agent->cpus;
    char text[SRM_CPUS_TEXT_MAX];

    if (cpus == NULL) {
        srm_json_null(json, "cpus");
        return;
    }
    srm_json_object(json, "cpus");
    srm_json_string(json, "setting", agent->config.agent_cpus);
    srm_cpus_format(&cpus->current, text, sizeof(text));
    srm_json_string(json, "current", text);
    srm_cpus_format(&cpus->allowed, text, sizeof(text));
    srm_json_string(json, "allowed", text);
    if (cpus->near_what[0] != '\0') {
        srm_json_string(json, "near", cpus->near_what);
    } else {
        srm_json_null(json, "near");
    }
    srm_json_uint(json, "ranks_bound", cpus->ranks_bound);
    srm_json_double(json, "spare_cores", cpus->spare);
    srm_json_end_object(json);
}
