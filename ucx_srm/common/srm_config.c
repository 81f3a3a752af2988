/* SPDX-License-Identifier: BSD-3-Clause */
#include "srm_config.h"

#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/in.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>

#define SRM_CONFIG_NO_WIRE_DEVICE "node"

int srm_config_addr_usable(const struct sockaddr *sa, unsigned family)
{
    const struct sockaddr_in6 *sin6 = (const struct sockaddr_in6*)sa;

    if (sa->sa_family == AF_INET) {
        return family != SRM_ADDRESS_FAMILY_IPV6;
    }
    return (sa->sa_family == AF_INET6) &&
           (family != SRM_ADDRESS_FAMILY_IPV4) &&
           !IN6_IS_ADDR_LINKLOCAL(&sin6->sin6_addr);
}

/* The first interface that is up, is not loopback, and has an address of
 * the family (srm_config_addr_usable). */
static int srm_config_auto_interface(unsigned family, char *name,
                                     size_t size)
{
    struct ifaddrs *ifaddrs, *ifa;
    int found = -1;

    if (getifaddrs(&ifaddrs) != 0) {
        return -1;
    }
    for (ifa = ifaddrs; ifa != NULL; ifa = ifa->ifa_next) {
        if ((ifa->ifa_addr != NULL) &&
            srm_config_addr_usable(ifa->ifa_addr, family) &&
            (ifa->ifa_flags & IFF_UP) && !(ifa->ifa_flags & IFF_LOOPBACK)) {
            snprintf(name, size, "%s", ifa->ifa_name);
            found = 0;
            break;
        }
    }
    freeifaddrs(ifaddrs);
    return found;
}

void srm_config_device_name(const char *devices, unsigned family, char *name,
                            size_t size)
{
    size_t len = strcspn(devices, ",@"); /* path 0; an RDMA port's own name */

    if ((len == 0) || (strcmp(devices, "none") == 0)) {
        snprintf(name, size, "%s", SRM_CONFIG_NO_WIRE_DEVICE);
    } else if ((strncmp(devices, "auto", len) == 0) && (len == 4)) {
        if (srm_config_auto_interface(family, name, size) != 0) {
            snprintf(name, size, "%s", SRM_CONFIG_NO_WIRE_DEVICE);
        }
    } else {
        snprintf(name, size, "%.*s", (int)len, devices);
    }
}

void srm_config_env_device_name(char *name, size_t size)
{
    srm_agent_config_t config;

    if (srm_ucx_config_fill(&config, srm_agent_config_table, "UCX_",
                            SRM_CONFIG_PREFIX) != UCS_OK) {
        srm_config_device_name("auto", SRM_ADDRESS_FAMILY_AUTO, name, size);
        return;
    }
    srm_config_device_name(config.devices, config.address_family, name,
                           size);
    ucs_config_parser_release_opts(&config, srm_agent_config_table);
}

const char *srm_agent_mode_names[] = {
    [SRM_AGENT_MODE_AUTO]  = "auto",
    [SRM_AGENT_MODE_NEVER] = "never",
    [SRM_AGENT_MODE_LAST]  = NULL
};

const char *srm_poll_policy_names[] = {
    [SRM_POLL_AUTO]   = "auto",
    [SRM_POLL_SPIN]   = "spin",
    [SRM_POLL_BLOCK]  = "block",
    [SRM_POLL_HYBRID] = "hybrid",
    [SRM_POLL_LOCAL]  = "local",
    [SRM_POLL_LAST]   = NULL
};

const char *srm_address_family_names[] = {
    [SRM_ADDRESS_FAMILY_AUTO] = "auto",
    [SRM_ADDRESS_FAMILY_IPV4] = "ipv4",
    [SRM_ADDRESS_FAMILY_IPV6] = "ipv6",
    [SRM_ADDRESS_FAMILY_LAST] = NULL
};

const char *srm_xrc_mode_names[] = {
    [SRM_XRC_AUTO] = "auto",
    [SRM_XRC_NO]   = "no",
    [SRM_XRC_YES]  = "yes",
    [SRM_XRC_LAST] = NULL
};

ucs_config_field_t srm_node_config_table[] = {
    {"SOCKET", "",
     "Name of the node agent's abstract UNIX socket (per network namespace).\n"
     "Empty: the site's agent (the srmd service, socket srmd) when root or\n"
     "the srmd system user runs one, else srmd.<uid>, the per-user agent.",
     offsetof(srm_node_config_t, socket), UCS_CONFIG_TYPE_STRING},

    {"AGENT", "auto",
     "What to do when no node agent answers on the socket:\n"
     " auto  - start srmd in the background and attach to it.\n"
     " never - fail to open the interface (other transports still work).",
     offsetof(srm_node_config_t, agent_mode),
     UCS_CONFIG_TYPE_ENUM(srm_agent_mode_names)},

    {"AGENT_PATH", "",
     "The srmd program to start when AGENT=auto. Empty means the srmd\n"
     "installed with this module.",
     offsetof(srm_node_config_t, agent_path), UCS_CONFIG_TYPE_STRING},

    {"CONNECT_TIMEOUT", "10s",
     "How long to wait for the node agent to answer, including its start.",
     offsetof(srm_node_config_t, connect_timeout), UCS_CONFIG_TYPE_TIME},

    {NULL}
};

ucs_config_field_t srm_agent_config_table[] = {
    {"POLL", "auto",
     "How the node agent waits for work (read by srmd):\n"
     " auto   - like hybrid while the agent's cores (AGENT_CPUS) were idle\n"
     "          half a core or more over the last half second, otherwise\n"
     "          like block: an agent that spins on a full node takes the\n"
     "          CPU from the ranks it serves (and from the other ranks'\n"
     "          agent hops).\n"
     " hybrid - after work, spin for SPIN_TIME, then sleep: the next message\n"
     "          of a conversation usually finds it awake (best latency and\n"
     "          message rate where the agent has a core to spin on).\n"
     " local  - like hybrid after it moved a message between two processes\n"
     "          of this node, like block after any other work: an answer from\n"
     "          another node takes longer than a spin, and a sleeping agent\n"
     "          lets its processes write to other nodes directly\n"
     "          (UCX_SRM_DIRECT). Best ucx_perftest latency between nodes,\n"
     "          but streams with answers (MPI) lose to hybrid.\n"
     " block  - sleep on its doorbell as soon as there is no work (least CPU;\n"
     "          best large-message bandwidth on a full node).\n"
     " spin   - never sleep; only for an agent with a core of its own.",
     offsetof(srm_agent_config_t, poll_policy),
     UCS_CONFIG_TYPE_ENUM(srm_poll_policy_names)},

    {"SPIN_TIME", "20us",
     "How long the agent spins on empty rings before it sleeps (hybrid, local,\n"
     "auto).\n"
     "Keep it short: an agent spinning longer than a message's round trip\n"
     "takes a core from the ranks.",
     offsetof(srm_agent_config_t, spin_time), UCS_CONFIG_TYPE_TIME},

    {"IDLE_TIMEOUT", "10s",
     "An agent started on demand exits this long after its last client left.",
     offsetof(srm_agent_config_t, idle_timeout), UCS_CONFIG_TYPE_TIME},

    {"SAFETY_WAKEUP", "100ms",
     "A sleeping agent wakes this often without a doorbell and looks at its\n"
     "rings, a net should a wakeup ever be lost. Frames it then finds to\n"
     "move count as late_wakeups in srmctl status: a bug to report.",
     offsetof(srm_agent_config_t, safety_wakeup), UCS_CONFIG_TYPE_TIME},

    {"DEPART_TIMEOUT", "30s",
     "How long the agent keeps delivering the frames a process left in its\n"
     "send rings when it exited (or closed its interface) before it gives\n"
     "up on them and logs what was not delivered.",
     offsetof(srm_agent_config_t, depart_timeout), UCS_CONFIG_TYPE_TIME},

    {"QUANTUM", "8k",
     "Scheduling unit: bytes a sender may move per round-robin visit.",
     offsetof(srm_agent_config_t, quantum), UCS_CONFIG_TYPE_MEMUNITS},

    {"PORT_BACKLOG", "256k",
     "Bytes the agent holds for a destination port whose receive ring is full\n"
     "before it leaves frames in the senders' rings (back-pressure).",
     offsetof(srm_agent_config_t, port_backlog), UCS_CONFIG_TYPE_MEMUNITS},

    {"NICE", "-10",
     "Niceness srmd asks for at start (kept if not permitted). A sleeping\n"
     "agent must preempt busy-polling ranks when woken; at nice 0 the\n"
     "kernel's EEVDF scheduler often lets the poller finish its slice first.",
     offsetof(srm_agent_config_t, nice), UCS_CONFIG_TYPE_INT},

    {"DEVICES", "auto",
     "Network interfaces whose addresses (ADDRESS_FAMILY) srmd listens on\n"
     "for channels from other nodes' agents: one, or two separated by a\n"
     "comma (the standby connection to each node then takes the second, so\n"
     "a dead link is survived, not just a dead socket). auto: the first\n"
     "interface that is up, not loopback, and has an address of that\n"
     "family (IPv6: not link-local). none: no channels.\n"
     "A verbs device, NAME:PORT[@INTERFACE] (mlx5_0:1, rxe0:1@eth0), puts\n"
     "the channels on RC queue pairs; the handshake goes over INTERFACE,\n"
     "by default the one of the port's RoCE v2 IPv4 address.",
     offsetof(srm_agent_config_t, devices), UCS_CONFIG_TYPE_STRING},

    {"ADDRESS_FAMILY", "auto",
     "Which address of a DEVICES interface the tcp wire uses.\n"
     " auto - its IPv4 address, else its IPv6 one.\n"
     " ipv4 - IPv4 only.\n"
     " ipv6 - IPv6 only (not link-local: fe80:: addresses differ per host).\n"
     "Every node's agent must use the same family: a node whose agent listens\n"
     "on the other one is unreachable, and UCX picks another transport.",
     offsetof(srm_agent_config_t, address_family),
     UCS_CONFIG_TYPE_ENUM(srm_address_family_names)},

    {"TCP_PORT", "0",
     "TCP port srmd listens on for other agents; 0 picks a free one (peers\n"
     "learn it from the UCX worker address).",
     offsetof(srm_agent_config_t, tcp_port), UCS_CONFIG_TYPE_UINT},

    {"MEM_LIMIT", "auto",
     "Most bytes of md-allocated memory (UCX_SRM_MEM_ALLOC=y) the processes\n"
     "of one user may have mapped and, on the verbs wire, pinned by the\n"
     "agent at a time; an\n"
     "allocation past it fails with a message saying so. auto: a quarter of\n"
     "the node's physical memory; inf: no limit.",
     offsetof(srm_agent_config_t, mem_limit), UCS_CONFIG_TYPE_MEMUNITS},

    {"CHANNEL_DEPTH", "256k",
     "Bytes queued on one node channel before senders to that node wait.",
     offsetof(srm_agent_config_t, channel_depth), UCS_CONFIG_TYPE_MEMUNITS},

    {"LARGE_THRESH", "8k",
     "Messages with more payload than this go on the node's bulk channel, so\n"
     "that they never delay small ones (no head-of-line blocking); inf puts\n"
     "everything on the small channel. Up to 128 bytes of the upper layer's\n"
     "header (UCP's) do not count: an 8 KB message stays small.",
     offsetof(srm_agent_config_t, large_thresh), UCS_CONFIG_TYPE_MEMUNITS},

    {"RING_SEND_MIN", "auto",
     "Messages to another node with at least this much payload are sent\n"
     "from the sender's send ring where they lie, not copied into the node\n"
     "channel first: the ring keeps them until the other node acknowledges\n"
     "them (a process that exits sooner has them copied then), as long as\n"
     "what it keeps spans at most a quarter of it. On the verbs wire the\n"
     "send rings are registered when first sent from, one 1 MB\n"
     "(TX_RING_SIZE) region per ring in use (VERBS_IN_PLACE=n: copied to the\n"
     "send pool instead). Needs FAILOVER=y. inf: copy every message.\n"
     "auto: 4k on the verbs wire; inf on tcp, where a ring that holds its\n"
     "messages for a round trip moved 1 MB messages no faster than copies\n"
     "and 4 MB messages slower (a copy costs the agent less than the wait\n"
     "costs the sender).",
     offsetof(srm_agent_config_t, ring_send_min), UCS_CONFIG_TYPE_MEMUNITS},

    {"PLACE", "y",
     "Read the rest of a large message that arrives from another node in\n"
     "pieces straight into the destination's receive ring, not through the\n"
     "agent's input buffer: a copy less. The ring is reserved until the\n"
     "message is whole, so smaller messages to that same process wait\n"
     "behind it (never those to other processes).",
     offsetof(srm_agent_config_t, place), UCS_CONFIG_TYPE_BOOL},

    {"FAILOVER", "y",
     "Keep every frame sent to another node until that node acknowledges it,\n"
     "and a standby connection per node channel: a connection that fails is\n"
     "replaced without losing, duplicating or reordering a message. n: frames\n"
     "are freed once written, and a lost connection fails the node's\n"
     "endpoints (for measuring what reliability costs).",
     offsetof(srm_agent_config_t, failover), UCS_CONFIG_TYPE_BOOL},

    {"FAILOVER_TIMEOUT", "300ms",
     "A connection to another agent on which nothing (data, ack or\n"
     "heartbeat) arrived for this long is declared dead, and its traffic\n"
     "moves to the standby. Heartbeats go every quarter of it.",
     offsetof(srm_agent_config_t, failover_timeout), UCS_CONFIG_TYPE_TIME},

    {"RETRANS_LIMIT", "16",
     "A connection to another agent that retransmits this many TCP segments\n"
     "within one second, and at least 1 in 500 of those it sent (a TCP\n"
     "filling its path loses fewer), is closed while the standby of its\n"
     "channel is up: the channel goes on at once on the standby, losing\n"
     "nothing, and the closed path reconnects as the new standby. A\n"
     "connection in loss recovery stalls its channel, and one that recovered\n"
     "may stay slow. At most once per channel every 2 seconds; and where the\n"
     "connection it moved to retransmits as much within 10 seconds, the move\n"
     "did not help (congestion goes with the channel, a bad link stays\n"
     "behind): the channel stays put for 10 seconds, doubling while that\n"
     "goes on. A connection is not judged in the 2 seconds after it took\n"
     "the channel over: it was idle, and restarts from slow start under\n"
     "the resent backlog. 0: never.",
     offsetof(srm_agent_config_t, retrans_limit), UCS_CONFIG_TYPE_UINT},

    {"PEER_TIMEOUT", "5s",
     "A node that cannot be reached on any path for this long is declared\n"
     "failed: its queued frames are dropped and every endpoint to it reports\n"
     "a peer failure to UCX.",
     offsetof(srm_agent_config_t, peer_timeout), UCS_CONFIG_TYPE_TIME},

    {"SECRET_FILE", "",
     "File with a cluster secret (at least 16 bytes, readable by its owner\n"
     "only). Agents then prove to each other that they know it (HMAC-SHA256\n"
     "over fresh nonces) before a channel carries anything; an agent without\n"
     "it, or with another one, is refused and logged. Empty: no check.",
     offsetof(srm_agent_config_t, secret_file), UCS_CONFIG_TYPE_STRING},

    {"XRC", "auto",
     "XRC on a verbs device (DEVICES=NAME:PORT): each client then owns an\n"
     "XRC receive queue that other nodes' agents send into directly.\n"
     " auto - where the device has XRC (ConnectX); RC queue pairs elsewhere.\n"
     " no   - RC queue pairs only.\n"
     " yes  - require XRC: srmd fails to start on a device without it.\n"
     "srmctl status shows the choice and why. The XRC sends themselves are\n"
     "not wired into the channels yet: frames still travel on RC.",
     offsetof(srm_agent_config_t, xrc),
     UCS_CONFIG_TYPE_ENUM(srm_xrc_mode_names)},

    {"VERBS_RECV_BUFS", "256",
     "Receive buffers (8 KB each) of a verbs device's one shared receive\n"
     "queue, which every queue pair of the agent receives from, whatever\n"
     "the number of nodes; a quarter as many more are kept in reserve and\n"
     "posted when the device says the queue runs low. At least 64.",
     offsetof(srm_agent_config_t, verbs_recv_bufs), UCS_CONFIG_TYPE_UINT},

    {"VERBS_SEND_BUFS", "128",
     "Send buffers (8 KB each) of a verbs device, shared by its queue pairs:\n"
     "a send that is neither inline nor in place (VERBS_IN_PLACE) is copied\n"
     "into one until it completes. At least 16.",
     offsetof(srm_agent_config_t, verbs_send_bufs), UCS_CONFIG_TYPE_UINT},

    {"VERBS_IN_PLACE", "y",
     "Register each node channel's outgoing stream with the verbs device, so\n"
     "that its queue pairs send frames from where the agent queued them,\n"
     "without copying them into the send pool. Costs one registration per\n"
     "channel in use, two per remote node, of CHANNEL_DEPTH, a largest\n"
     "frame and 32 KB for control frames, rounded up to a power of two\n"
     "(512 KB by default, mapped twice: 1 MB of address space). n: copy into\n"
     "the send pool; the registered memory then stays the same whatever the\n"
     "number of nodes. FAILOVER=n copies too: nothing then keeps a frame\n"
     "until the device has read it.",
     offsetof(srm_agent_config_t, verbs_in_place), UCS_CONFIG_TYPE_BOOL},

    {"LOG_FILE", "",
     "Where srmd writes its log; empty means standard error.",
     offsetof(srm_agent_config_t, log_file), UCS_CONFIG_TYPE_STRING},

    {"AGENT_CPUS", "auto",
     "Cores the agent runs on. auto: of the cores this node's cpuset allows,\n"
     "those near the NIC of the wire (hwloc), leaving out the cores ranks\n"
     "are bound to while others remain; an agent started by a bound rank\n"
     "does not stay on that rank's core. inherit: where it was started.\n"
     "A list (0-3,8): those cores, all within the cpuset. srmctl status\n"
     "shows the choice, and POLL=auto spins only while the agent's cores\n"
     "have time to spare.",
     offsetof(srm_agent_config_t, agent_cpus), UCS_CONFIG_TYPE_STRING},

    {NULL}
};

int srm_config_format_settings(const void *opts, ucs_config_field_t *table,
                               char *buf, size_t size)
{
    const ucs_config_field_t *field;
    char value[256];
    size_t len = 0;
    int n;

    buf[0] = '\0';
    for (field = table; field->name != NULL; ++field) {
        if (field->name[0] == '\0') {
            continue; /* embedded tables: none in the agent's */
        }
        value[0] = '\0';
        field->parser.write(value, sizeof(value),
                            (void*)((const char*)opts + field->offset),
                            field->parser.arg);
        n = snprintf(buf + len, size - len, "UCX_%s%s=%s\n",
                     SRM_CONFIG_PREFIX, field->name, value);
        if ((n < 0) || ((size_t)n >= size - len)) {
            return -1;
        }
        len += (size_t)n;
    }
    return (int)len;
}
