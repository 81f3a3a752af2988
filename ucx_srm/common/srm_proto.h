/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The control protocol between a client (or srmctl) and its node agent, on
 * an abstract SOCK_SEQPACKET socket: one message per packet. After ATTACH the
 * socket carries no data; it stays open so each side notices the other die.
 * The md has a connection of its own that never attaches: it registers the
 * memory it allocates (MEM_REG with the memfd, MEM_DEREG), one request and
 * its reply at a time; the agent drops its regions when it closes.
 */
#ifndef SRM_PROTO_H
#define SRM_PROTO_H

#include "srm_address.h"

#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <sys/un.h>

#define SRM_PROTO_MAGIC     0x53524d43u /* "SRMC" */
#define SRM_PROTO_VERSION   7u
#define SRM_PROTO_NAME_MAX  64
#define SRM_PROTO_ERROR_MAX 160
#define SRM_PROTO_TEXT_MAX  (60 * 1024)
#define SRM_PROTO_MAX_FDS   4

typedef enum {
    SRM_MSG_ATTACH_REQ = 1,
    SRM_MSG_ATTACH_REP,
    SRM_MSG_STATUS_REQ,
    SRM_MSG_STATUS_REP,
    SRM_MSG_FAULT_REQ,  /* testing: break channel links; answered by text */
    SRM_MSG_MEM_REG_REQ,   /* with the region's memfd */
    SRM_MSG_MEM_REG_REP,
    SRM_MSG_MEM_DEREG_REQ,
    SRM_MSG_MEM_DEREG_REP,
    SRM_MSG_LANE_REQ,      /* on the md's connection */
    SRM_MSG_LANE_REP,      /* with the lane's memfd, and its socket */
    SRM_MSG_LAST
} srm_msg_type_t;

typedef struct srm_msg_hdr {
    uint32_t magic;
    uint16_t version;
    uint16_t type;
} srm_msg_hdr_t;

typedef struct srm_attach_req {
    srm_msg_hdr_t hdr;
    uint32_t      num_tx_rings;
    uint32_t      reserved;
    uint64_t      tx_ring_size;
    uint64_t      rx_ring_size;
    char          name[SRM_PROTO_NAME_MAX]; /* shown by srmctl */
} srm_attach_req_t;

/* The agent's wire is verbs: md-allocated memory gets real rkeys there. */
#define SRM_ATTACH_FLAG_RDMA 0x1u
/* The agent serves PUT/GET zcopy to every peer it reaches: one without a
 * wire (every peer is on this node), or one on the verbs wire (RDMA
 * WRITE/READ to other nodes' agents). */
#define SRM_ATTACH_FLAG_RMA  0x2u

/* Followed by the fds: shared segment, doorbell (to the agent), rx event. */
typedef struct srm_attach_rep {
    srm_msg_hdr_t hdr;
    int32_t       status;      /* 0 or a positive errno */
    uint32_t      port;
    uint32_t      key;
    uint32_t      max_payload;
    uint32_t      flags;       /* SRM_ATTACH_FLAG_* */
    uint32_t      reserved;
    uint64_t      node_id;
    uint64_t      shm_size;
    srm_wire_addr_t wire[SRM_WIRE_PATHS]; /* channel addresses (NONE: none) */
    char          error[SRM_PROTO_ERROR_MAX];
} srm_attach_rep_t;

#define SRM_STATUS_FLAG_JSON 1u /* the answer as JSON (docs/status-json.md) */
/* Only the agent's settings, "UCX_SRM_NAME=VALUE" lines (an older agent
 * answers the status text instead). */
#define SRM_STATUS_FLAG_SETTINGS 2u
/* srmctl top's counters, plain lines (srm_status_format_top). */
#define SRM_STATUS_FLAG_TOP 4u

typedef struct srm_status_req {
    srm_msg_hdr_t hdr;
    uint32_t      flags;       /* SRM_STATUS_FLAG_*; older agents ignore it */
    uint32_t      reserved;
} srm_status_req_t;

typedef enum {
    SRM_FAULT_RESET = 0, /* close the link with a TCP reset */
    SRM_FAULT_MUTE  = 1, /* stop sending and hearing on it: a dead path */
} srm_fault_how_t;

#define SRM_FAULT_ALL_NODES UINT32_MAX

/* Breaks the active link of the chosen channels (srmctl fault). */
typedef struct srm_fault_req {
    srm_msg_hdr_t hdr;
    uint32_t      node;        /* agent node index, or SRM_FAULT_ALL_NODES */
    int32_t       kind;        /* SRM_CHANNEL_SMALL/BULK, or -1 for both */
    uint32_t      how;         /* srm_fault_how_t */
    uint32_t      reserved;
} srm_fault_req_t;

typedef struct srm_status_rep {
    srm_msg_hdr_t hdr;
    uint32_t      length;
    uint32_t      reserved;
    char          text[SRM_PROTO_TEXT_MAX];
} srm_status_rep_t;

/* Register length bytes of the memfd that comes with it, mapped at address
 * in the client (a memfd sealed against shrinking, at least length long). */
typedef struct srm_mem_reg_req {
    srm_msg_hdr_t hdr;
    uint64_t      address;
    uint64_t      length;
} srm_mem_reg_req_t;

typedef struct srm_mem_reg_rep {
    srm_msg_hdr_t hdr;
    int32_t       status;      /* 0 or a positive errno */
    uint32_t      flags;       /* SRM_ATTACH_FLAG_RDMA: keys below are real */
    uint32_t      region_id;
    uint32_t      generation;
    uint64_t      node_id;
    uint64_t      agent_addr;
    uint32_t      rkey[SRM_WIRE_PATHS];
    uint32_t      token;       /* what a key must carry to reach it */
    char          error[SRM_PROTO_ERROR_MAX];
} srm_mem_reg_rep_t;

typedef struct srm_mem_dereg_req {
    srm_msg_hdr_t hdr;
    uint32_t      region_id;
    uint32_t      generation;
} srm_mem_dereg_req_t;

typedef struct srm_mem_dereg_rep {
    srm_msg_hdr_t hdr;
    int32_t       status;      /* 0 or a positive errno */
    uint32_t      reserved;
} srm_mem_dereg_rep_t;

/* The direct lane to a node (srm_lane_shared.h), for an attached port of the
 * requesting process, named by the port's node table entry. */
typedef struct srm_lane_req {
    srm_msg_hdr_t hdr;
    uint32_t      port;
    uint32_t      key;
    uint32_t      node;
    uint32_t      channel;     /* SRM_CHANNEL_SMALL or _BULK */
} srm_lane_req_t;

/* Followed by the lane's memfd and, if open, the channel's socket, of
 * that generation. */
typedef struct srm_lane_rep {
    srm_msg_hdr_t hdr;
    int32_t       status;      /* 0 or a positive errno */
    uint32_t      open;
    uint32_t      generation;
    uint32_t      reserved;
    char          error[SRM_PROTO_ERROR_MAX];
} srm_lane_rep_t;

void srm_msg_hdr_init(srm_msg_hdr_t *hdr, srm_msg_type_t type);

/* 0 if the header is ours, of this version and of the expected type. */
int srm_msg_hdr_check(const srm_msg_hdr_t *hdr, size_t length,
                      srm_msg_type_t type, size_t min_length);

/* 0 if length bytes received hold a status reply (text or JSON, the
 * settings, top's lines) whose text length lies within them. */
int srm_status_rep_check(const srm_status_rep_t *rep, size_t length);

/* The abstract address "\0<name>"; -1 if the name is too long or empty. */
int srm_sock_addr(const char *name, struct sockaddr_un *addr,
                  socklen_t *addrlen);

/* Sends one packet with optional fds (SCM_RIGHTS); -1 with errno. */
ssize_t srm_sock_send(int fd, const void *buf, size_t len, const int *fds,
                      int nfds);

/*
 * Receives one packet; received fds go to fds[0..*nfds) (at most the value
 * *nfds had on entry; any more are closed). -1 with errno, 0 on hang-up.
 */
ssize_t srm_sock_recv(int fd, void *buf, size_t len, int *fds, int *nfds);

/*
 * A connected client socket to the agent called name (blocking, as the
 * protocol's calls expect). -1 with errno; EAGAIN: its listener's queue is
 * full. The connect itself never waits: a process that holds the name and
 * never accepts would otherwise hang every caller for ever.
 */
int srm_sock_connect(const char *name);

/* srm_sock_connect, tried again while the queue is full, for up to
 * `seconds` (a busy agent accepts soon; a squatter never does). */
int srm_sock_connect_within(const char *name, double seconds);

/* The uid of the process at the other end of a unix socket. -1 with errno. */
int srm_sock_peer_uid(int fd, uid_t *uid_p);

/* The site's agent, the srmd service: its socket and its system user. */
#define SRM_SITE_SOCKET "srmd"
#define SRM_SITE_USER   "srmd"
/* It is trusted only as a system account (Debian's SYS_UID_MAX is 999). */
#define SRM_SITE_USER_UID_MAX 1000

/*
 * 0 if a process of this uid may serve us as our agent: our own uid, root,
 * or the site's system user SRM_SITE_USER (a system uid, which only root
 * can create). An
 * agent of any other uid could read what we send and forge what we receive.
 */
int srm_sock_agent_uid_trusted(uid_t uid);

/* The default agent socket name for this user: "srmd.<uid>". */
void srm_sock_default_name(char *buf, size_t size);

typedef enum {
    SRM_AGENT_CONFIGURED, /* UCX_SRM_SOCKET names it */
    SRM_AGENT_SITE,       /* the site's service answers on SRM_SITE_SOCKET */
    SRM_AGENT_OWN,        /* this user's own agent, srmd.<uid> */
    SRM_AGENT_OWN_SQUATTED /* own, and SRM_SITE_SOCKET is held by an
                              untrusted uid (in *squatter_p), or by a
                              listener that takes no connection (-1) */
} srm_agent_choice_t;

/*
 * Which agent to use: the one UCX_SRM_SOCKET names (configured, non-empty),
 * else the site's service when a trusted one answers on SRM_SITE_SOCKET,
 * else this user's own. Writes the socket name into buf.
 */
srm_agent_choice_t srm_sock_choose_agent(const char *configured, char *buf,
                                         size_t size, uid_t *squatter_p);

#endif
