/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * UCX_SRM_* configuration shared by the module and the agent. Both parse the
 * same tables with UCX's own parser, so a name means the same thing in a
 * rank and in srmd, and `ucx_info -c -f` documents all of them.
 */
#ifndef SRM_CONFIG_H
#define SRM_CONFIG_H

#include "srm_ucx_compat.h"

#include <ucs/config/parser.h>

#include <stddef.h>

#define SRM_CONFIG_PREFIX    "SRM_"
#define SRM_CHANNEL_SMALL    0
#define SRM_CHANNEL_BULK     1
#define SRM_CHANNEL_KINDS    2

typedef enum {
    SRM_AGENT_MODE_AUTO,  /* start an agent when none answers */
    SRM_AGENT_MODE_NEVER, /* fail if none answers */
    SRM_AGENT_MODE_LAST
} srm_agent_mode_t;

typedef enum {
    SRM_POLL_AUTO,   /* spin only while a core is idle, else block */
    SRM_POLL_SPIN,   /* never sleep */
    SRM_POLL_BLOCK,  /* sleep as soon as there is no work */
    SRM_POLL_HYBRID, /* spin for SPIN_TIME, then sleep */
    SRM_POLL_LOCAL,  /* hybrid after work between this node's processes,
                        block after other work */
    SRM_POLL_LAST
} srm_poll_policy_t;

/* Whether verbs devices carry frames to other nodes' clients over XRC. */
typedef enum {
    SRM_XRC_AUTO, /* where the device has XRC */
    SRM_XRC_NO,   /* never: RC queue pairs only */
    SRM_XRC_YES,  /* required: a device without XRC is an error */
    SRM_XRC_LAST
} srm_xrc_mode_t;

/* Which address of an interface the tcp wire listens on. */
typedef enum {
    SRM_ADDRESS_FAMILY_AUTO, /* IPv4 if the interface has it, else IPv6 */
    SRM_ADDRESS_FAMILY_IPV4,
    SRM_ADDRESS_FAMILY_IPV6,
    SRM_ADDRESS_FAMILY_LAST
} srm_address_family_t;

/* How to reach the node agent: read by the md and by srmd. */
typedef struct srm_node_config {
    char     *socket;          /* abstract socket name; "" = srmd.<uid> */
    unsigned agent_mode;       /* srm_agent_mode_t */
    char     *agent_path;      /* srmd to start; "" = the installed one */
    double   connect_timeout;  /* seconds */
} srm_node_config_t;

/* The agent's own knobs. */
typedef struct srm_agent_config {
    unsigned poll_policy;      /* srm_poll_policy_t */
    double   spin_time;        /* seconds */
    double   idle_timeout;     /* seconds; exit this long after last client */
    double   depart_timeout;   /* seconds a departed client's rings drain */
    double   safety_wakeup;    /* seconds; the longest sleep of the agent */
    size_t   quantum;          /* scheduler unit in bytes */
    size_t   port_backlog;     /* per destination port, bytes */
    char     *log_file;        /* "" = stderr */
    char     *agent_cpus;      /* auto, inherit, or a CPU list */
    int      nice;             /* scheduling niceness to ask for */
    char     *devices;         /* interfaces of the paths, comma separated */
    unsigned address_family;   /* srm_address_family_t */
    unsigned tcp_port;         /* listening port, 0 = any */
    size_t   channel_depth;    /* bytes queued per channel */
    size_t   large_thresh;     /* payloads above this take the bulk channel */
    size_t   ring_send_min;    /* payloads sent from the sender's TX ring */
    int      place;            /* read large frames into RX rings directly */
    int      failover;         /* acks, resend buffers and standby paths */
    double   failover_timeout; /* seconds of silence that kill a connection */
    unsigned retrans_limit;    /* segments resent within a second that move
                                  a channel to its standby; 0: never */
    double   peer_timeout;     /* seconds without a path before a node fails */
    char     *secret_file;     /* cluster secret for agent handshakes; "" none */
    unsigned xrc;              /* srm_xrc_mode_t */
    unsigned verbs_recv_bufs;  /* per device: its shared receive queue */
    unsigned verbs_send_bufs;  /* per device: its send pool */
    int      verbs_in_place;   /* channels' streams registered, sent from */
    size_t   mem_limit;        /* md-allocated bytes mapped per process */
} srm_agent_config_t;

/*
 * The name of srm's UCX device: the device the agent's first path uses, as
 * UCX_SRM_DEVICES names it (an interface, or an RDMA port such as
 * mlx5_0:1), "auto" resolved as the agent does for the address family
 * (srm_address_family_t); "node" with no wire. A
 * site that pins UCX_NET_DEVICES to that device keeps srm.
 */
void srm_config_device_name(const char *devices, unsigned family, char *name,
                            size_t size);

/* srm_config_device_name of the agent settings in this process's
 * environment (UCX_SRM_DEVICES, UCX_SRM_ADDRESS_FAMILY; the defaults where
 * a value does not parse): the device a process, or srmctl, names. */
void srm_config_env_device_name(char *name, size_t size);

/* Whether an interface address can reach other hosts with the family
 * (srm_address_family_t): IPv4, or IPv6 that is not link-local (fe80::
 * names another interface on every host). */
struct sockaddr;
int srm_config_addr_usable(const struct sockaddr *sa, unsigned family);

extern const char *srm_agent_mode_names[];
extern const char *srm_poll_policy_names[];
extern const char *srm_xrc_mode_names[];
extern const char *srm_address_family_names[];
extern ucs_config_field_t srm_node_config_table[];
extern ucs_config_field_t srm_agent_config_table[];

/*
 * The settings of opts (filled from table) as "UCX_SRM_NAME=VALUE" lines,
 * every field of the table, values as UCX writes them back (so that two
 * spellings of one value compare equal). Returns the length, or -1 when
 * size is too small.
 */
int srm_config_format_settings(const void *opts, ucs_config_field_t *table,
                               char *buf, size_t size);

#endif
