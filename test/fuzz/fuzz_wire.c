/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * libFuzzer target: the wire between agents, its handshake and its acks.
 * Each input starts a real agent listening on 127.0.0.1 (a fixed node id,
 * a clock that moves only when the input says so) with one attached
 * client, and is a script for up to four TCP connections of made-up peer
 * agents: dialled by us (HELLO, AUTH) or by the agent to our listeners
 * (HELLO_ACK), numbered AM, PAUSE, RESUME, PORT_GONE and RMA_REMOTE(_DONE)
 * frames, ACKs, BYE, garbage, partial frames, closes and resets, time
 * passing, the client sending to those peers and reading what they sent,
 * a buggy process writing the direct lanes' logs and counts, srmctl
 * status and fault. The
 * first byte picks the agent's mode: a cluster secret or none, failover or
 * none, a port backlog smaller than a frame or not, and how the input ends:
 * with the check below or not, or the agent stopping with all still live.
 *
 * What the agent sends a peer is checked as that peer would: well-formed
 * frames, the handshake first, proofs that verify, nothing on a channel
 * before the peer proved the secret, no numbers skipped, no ack for a frame
 * never sent, and the client's frames whole, for that peer, never twice.
 * What reaches the client must come from a peer that proved the secret, to
 * its key, once, in order per (peer, source port). The check: a well-formed
 * peer is still accepted, and still reached when the agent dials it, and
 * frames go both ways. Then every peer vanishes: within the timeouts every
 * node is invalid (or idle, without failover), no link, held frame, queued
 * frame or backlog is left. The agent is destroyed: no leak, no fd left.
 *
 * Input: the mode byte, then ops; an op byte is kind (bits 0-3), connection
 * (bits 4-5) and a variant (bits 6-7), followed by the op's own bytes
 * (missing bytes read as 0).
 */
#define _GNU_SOURCE
#include <ucx_srm/agent/srm_agent.h>
#include <ucx_srm/common/srm_lane_shared.h>
#include <ucx_srm/common/srm_log.h>
#include <ucx_srm/common/srm_rma.h>
#include <ucx_srm/wire/srm_wire_tcp.h>

#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#define FUZZ_CONNS       4    /* the script's connections */
#define FUZZ_ALL_CONNS   8    /* and the check's */
#define FUZZ_PEERS       4    /* the script's made-up agents */
#define FUZZ_CHECK_PEER  4    /* the check's own */
#define FUZZ_ALL_PEERS   5
#define FUZZ_SRC_PORTS   4
#define FUZZ_MAX_STEPS   1000 /* agent passes before "it does not settle" */
#define FUZZ_SEND_TRIES  64   /* passes a peer waits for room, then resets */
#define FUZZ_MAX_STAMPS  8192
#define FUZZ_BUDGET      (8u << 20) /* bytes per input before frames shrink */
#define FUZZ_BUF_SIZE    (2u << 20)
#define FUZZ_IN_BUF      (2 * (32 + SRM_FRAME_MAX_PAYLOAD)) /* as the agent's */
#define FUZZ_AGENT_ID    0x8000000000000000ull
#define FUZZ_CLOCK_START 1000.0
#define FUZZ_WIND_DOWN   0.05 /* seconds per pass once the peers are gone */
#define FUZZ_NO_STAMP    UINT32_MAX
#define FUZZ_CLIENT_TX   0    /* the client's TX ring to the script's peers */
#define FUZZ_CHECK_TX    1    /* and to the check's, which they cannot block */
#define FUZZ_RCVBUF      65536 /* so that a peer that stops reading is full */
#define FUZZ_SNDBUF      16384 /* the agent's: and its writes wait for room */

enum {
    FUZZ_MODE_SECRET       = 1,
    FUZZ_MODE_NO_FAILOVER  = 2,
    FUZZ_MODE_CHECK        = 4,
    FUZZ_MODE_TINY_BACKLOG = 8,  /* smaller than a frame */
    FUZZ_MODE_ABRUPT       = 16, /* the agent stops with everything live */
    FUZZ_CONFIGS           = 8
};

enum {
    FUZZ_OP_HELLO,     /* we dial: HELLO with fuzzed fields */
    FUZZ_OP_HELLO_ACK, /* the agent dialled: our answer */
    FUZZ_OP_AUTH,      /* our proof, valid or not */
    FUZZ_OP_AM,        /* a burst of numbered AMs */
    FUZZ_OP_FLOW,      /* PAUSE, RESUME, PORT_GONE, RMA_REMOTE(_DONE) */
    FUZZ_OP_ACK,       /* a cumulative ack, right or not */
    FUZZ_OP_OTHER,     /* BYE, or any type without payload */
    FUZZ_OP_RAW,       /* bytes */
    FUZZ_OP_CLOSE,     /* half-close, close, reset, or stop reading */
    FUZZ_OP_ACCEPT,    /* take a connection the agent dialled */
    FUZZ_OP_STEP,      /* agent passes, time passing */
    FUZZ_OP_SEND,      /* the client sends to a peer */
    FUZZ_OP_RECV,      /* the client reads its RX ring */
    FUZZ_OP_CTL,       /* srmctl status or fault */
    FUZZ_OP_DIAL,      /* a new connection to the agent */
    FUZZ_OP_HANDSHAKE, /* a whole valid handshake, either way */
};

typedef struct {
    const uint8_t *data;
    size_t        size;
} fuzz_input_t;

/* A frame with a stamp: a peer's to the client, or the client's to a peer. */
typedef struct {
    uint8_t  to_client;
    uint8_t  peer;      /* the sender, or the destination */
    uint8_t  port;      /* index of the source port (to the client) */
    uint8_t  known;     /* sent where the agent knows the peer as we do */
    uint8_t  authed;    /* sent where the peer had proved the secret */
    uint8_t  right_dst; /* to the client's port with its key */
    uint8_t  whole;     /* every byte of it was ours */
    uint8_t  seen;
    uint32_t src_port;
    uint32_t dst_port;
    uint32_t dst_key;
    uint32_t seq;
    uint32_t length;
} fuzz_stamp_t;

/* One channel between a peer and the agent, as the peer sees it. */
typedef struct {
    uint32_t tx_next;  /* chan_seq of our next frame */
    uint32_t tx_hi;    /* every chan_seq before it was sent at least once */
    uint32_t rx_next;  /* the next chan_seq of the agent's we take */
    uint32_t acked;    /* what the agent last acknowledged */
    uint32_t rx_seq;   /* lowest seq the client's next frame may have */
} fuzz_chan_t;

typedef struct {
    uint64_t    id;
    fuzz_chan_t chan[SRM_CHANNEL_KINDS];
    uint32_t    order[FUZZ_SRC_PORTS];     /* seq of our next AM */
    uint32_t    delivered[FUZZ_SRC_PORTS]; /* lowest seq the client may get */
    int         listen_fd;
    uint16_t    listen_port;               /* network order */
} fuzz_peer_t;

typedef struct {
    int      fd;         /* -1: none */
    int      dialled;    /* we connected; else the agent did */
    int      listener;   /* accepted: whose listener */
    int      peer;       /* the peer we said we are, -1 none (yet) */
    uint64_t claimed_id;
    int      kind, path; /* ours (dialled) or the agent's (accepted) */
    int      ack_kind, ack_path, ack_ok; /* accepted: our HELLO_ACK */
    uint8_t  nonce[SRM_AUTH_NONCE_LEN];
    uint8_t  agent_nonce[SRM_AUTH_NONCE_LEN];
    int      hello_sent; /* dialled: HELLO; accepted: HELLO_ACK */
    int      hello_ok;   /* dialled: a HELLO the agent must answer */
    int      got_hello;  /* dialled: HELLO_ACK; accepted: the agent's HELLO */
    int      accepted;   /* dialled: the agent's HELLO_ACK says so */
    int      auth_sent;
    int      got_auth;   /* accepted, with a secret: the agent's AUTH */
    int      ready;      /* we did what a peer must: the agent may use it */
    int      raw;        /* bytes not of the model's making went on it */
    int      deaf;       /* reads nothing for now: the agent's writes wait */
    uint8_t  *in;
    size_t   in_len;
} fuzz_conn_t;

typedef struct {
    int              sock_fd, doorbell_fd, event_fd;
    uint32_t         port, key;
    srm_shm_layout_t layout;
    uint8_t          *shm;
    srm_shm_ctl_t    *ctl;
    srm_ring_t       tx[2], rx;
} fuzz_client_t;

static const uint64_t fuzz_peer_ids[FUZZ_ALL_PEERS] = {
    /* Two below the agent's id and two above: both tie-break outcomes. */
    0x10, FUZZ_AGENT_ID - 0x10, FUZZ_AGENT_ID + 0x10, ~0ull - 0x10,
    0x434845434bull
};
static const uint32_t fuzz_src_ports[FUZZ_SRC_PORTS] = {
    1, 2, 0x10001, 0xfffffffe
};

static srm_agent_config_t fuzz_configs[FUZZ_CONFIGS];
static srm_agent_t        fuzz_agent;
static srm_auth_t         fuzz_auth;
static char               fuzz_secret_path[64];
static int                fuzz_mode;
static double             fuzz_clock;
static fuzz_peer_t        fuzz_peers[FUZZ_ALL_PEERS];
static fuzz_conn_t        fuzz_conns[FUZZ_ALL_CONNS];
static fuzz_chan_t        fuzz_scratch_chan;
static uint32_t           fuzz_scratch_order;
static fuzz_client_t      fuzz_client;
static fuzz_stamp_t       fuzz_stamps[FUZZ_MAX_STAMPS];
static uint32_t           fuzz_num_stamps;
static uint32_t           fuzz_stamp_magic; /* from the input: unforgeable */
static int                fuzz_tainted;     /* the channel models may lie */
static srm_lane_t         *fuzz_lanes[FUZZ_PEERS][SRM_CHANNEL_KINDS]; /* mapped,
                                                            written into */
static uint32_t           fuzz_lane_log_sizes[FUZZ_PEERS][SRM_CHANNEL_KINDS];
static int                fuzz_lane_written; /* frames of nobody's may come */
static int                fuzz_winding_down;
static size_t             fuzz_bytes;
static int                fuzz_closed_fd = -1; /* bound, never listening */
static uint16_t           fuzz_closed_port;
static unsigned long      fuzz_redirects;
static int                fuzz_verbose;
static uint8_t            fuzz_buf[FUZZ_BUF_SIZE];

static void fuzz_step_all(void);
static unsigned fuzz_step(void);
static void fuzz_check_agent(void);

static void __attribute__((noreturn, format(printf, 1, 2)))
fuzz_fail(const char *fmt, ...)
{
    va_list ap;

    fprintf(stderr, "fuzz_wire: ");
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fprintf(stderr, " (mode %d)\n", fuzz_mode);
    abort();
}

/* SRM_FUZZ_LOG: what the peers and the client do and get, on stderr. */
static void __attribute__((format(printf, 1, 2))) fuzz_trace(const char *fmt,
                                                              ...)
{
    va_list ap;

    if (!fuzz_verbose) {
        return;
    }
    fprintf(stderr, "fuzz_wire: t+%.4f ", fuzz_clock - FUZZ_CLOCK_START);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fprintf(stderr, "\n");
}

/* The agent's clock: it moves only when the input says so (run.sh wraps
 * srm_agent_now, srm_wire_tcp_connect and srm_wire_tcp_accept). */
double __wrap_srm_agent_now(void)
{
    return fuzz_clock;
}

int __real_srm_wire_tcp_connect(const srm_wire_addr_t *addr);
int __real_srm_wire_tcp_accept(int listen_fd);

/* The agent's wire sockets get small send buffers (and loopback none to
 * speak of), so that a peer that stops reading makes its writes wait. */
static int fuzz_sndbuf(int fd)
{
    int size = FUZZ_SNDBUF;

    if (fd >= 0) {
        setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &size, sizeof(size));
    }
    return fd;
}

int __wrap_srm_wire_tcp_accept(int listen_fd)
{
    return fuzz_sndbuf(__real_srm_wire_tcp_accept(listen_fd));
}

static void fuzz_loopback(srm_wire_addr_t *addr, uint16_t port)
{
    uint32_t loopback = htonl(INADDR_LOOPBACK);

    memset(addr, 0, sizeof(*addr));
    addr->family = SRM_WIRE_ADDR_IPV4;
    addr->port   = port;
    memcpy(addr->ip, &loopback, 4);
}

static int fuzz_addr_ours(const srm_wire_addr_t *addr)
{
    uint32_t loopback = htonl(INADDR_LOOPBACK);
    uint16_t port     = addr->port;
    int i;

    if ((addr->family != SRM_WIRE_ADDR_IPV4) ||
        (memcmp(addr->ip, &loopback, 4) != 0)) {
        return 0;
    }
    for (i = 0; i < FUZZ_ALL_PEERS; ++i) {
        if (port == fuzz_peers[i].listen_port) {
            return 1;
        }
    }
    return (port == fuzz_closed_port) || (port == fuzz_agent.wire[0].port);
}

/*
 * A peer may claim any address (garbage, a HELLO in a payload); the agent
 * dials it. Only our own sockets may be dialled: anything else finds the
 * port where nothing listens, as an address of nobody would.
 */
int __wrap_srm_wire_tcp_connect(const srm_wire_addr_t *addr)
{
    srm_wire_addr_t closed;

    if (!fuzz_addr_ours(addr)) {
        ++fuzz_redirects;
        fuzz_loopback(&closed, fuzz_closed_port);
        addr = &closed;
    }
    return fuzz_sndbuf(__real_srm_wire_tcp_connect(addr));
}

static uint8_t fuzz_u8(fuzz_input_t *in)
{
    if (in->size == 0) {
        return 0;
    }
    --in->size;
    return *in->data++;
}

/* Fills len bytes from the input, zeros past its end. */
static void fuzz_take(fuzz_input_t *in, void *buf, size_t len)
{
    size_t n = (len < in->size) ? len : in->size;

    memcpy(buf, in->data, n);
    memset((uint8_t*)buf + n, 0, len - n);
    in->data += n;
    in->size -= n;
}

static int fuzz_seq_before(uint32_t a, uint32_t b)
{
    return (int32_t)(a - b) < 0;
}

static int fuzz_secret(void)
{
    return (fuzz_mode & FUZZ_MODE_SECRET) != 0;
}

/* The agent configuration of a mode (every bit but CHECK). */
static int fuzz_config_index(int mode)
{
    return (mode & (FUZZ_MODE_SECRET | FUZZ_MODE_NO_FAILOVER)) |
           ((mode & FUZZ_MODE_TINY_BACKLOG) ? 4 : 0);
}

static int fuzz_count_fds(void)
{
    DIR *dir = opendir("/proc/self/fd");
    struct dirent *entry;
    int count = 0;

    if (dir == NULL) {
        fuzz_fail("cannot list /proc/self/fd");
    }
    while ((entry = readdir(dir)) != NULL) {
        count += (entry->d_name[0] != '.');
    }
    closedir(dir);
    return count;
}

static void fuzz_nodelay(int fd)
{
    int one = 1;

    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
}

static void fuzz_rcvbuf(int fd)
{
    int size = FUZZ_RCVBUF;

    setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &size, sizeof(size));
}

static void fuzz_listen(int *fd_p, uint16_t *port_p, int listening)
{
    struct sockaddr_in sin = {.sin_family      = AF_INET,
                              .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len          = sizeof(sin);
    int fd;

    fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd >= 0) {
        fuzz_rcvbuf(fd); /* the connections it accepts inherit it */
    }
    if ((fd < 0) || (bind(fd, (struct sockaddr*)&sin, sizeof(sin)) != 0) ||
        (listening && (listen(fd, 64) != 0)) ||
        (getsockname(fd, (struct sockaddr*)&sin, &len) != 0)) {
        fuzz_fail("cannot bind a socket on 127.0.0.1: %s", strerror(errno));
    }
    *fd_p   = fd;
    *port_p = sin.sin_port;
}

/* ---- stamps ---- */

static uint32_t fuzz_stamp_new(const fuzz_stamp_t *stamp, uint32_t length)
{
    if ((length < 8) || (fuzz_num_stamps == FUZZ_MAX_STAMPS)) {
        return FUZZ_NO_STAMP;
    }
    fuzz_stamps[fuzz_num_stamps] = *stamp;
    return fuzz_num_stamps++;
}

static uint8_t fuzz_pattern(uint32_t index, uint32_t i)
{
    return (uint8_t)(index * 13 + i * 7 + 1);
}

static void fuzz_payload(uint8_t *payload, uint32_t length, uint32_t index)
{
    uint32_t i;

    for (i = 0; i < length; ++i) {
        payload[i] = fuzz_pattern(index, i);
    }
    if (index != FUZZ_NO_STAMP) {
        memcpy(payload, &fuzz_stamp_magic, 4);
        memcpy(payload + 4, &index, 4);
    }
}

static uint32_t fuzz_payload_stamp(const uint8_t *payload, uint32_t length)
{
    uint32_t magic, index;

    if (length < 8) {
        return FUZZ_NO_STAMP;
    }
    memcpy(&magic, payload, 4);
    memcpy(&index, payload + 4, 4);
    return ((magic == fuzz_stamp_magic) && (index < fuzz_num_stamps)) ?
                   index : FUZZ_NO_STAMP;
}

static int fuzz_payload_intact(const uint8_t *payload, uint32_t length,
                               uint32_t index)
{
    uint32_t i;

    for (i = 8; i < length; ++i) {
        if (payload[i] != fuzz_pattern(index, i)) {
            return 0;
        }
    }
    return 1;
}

/* ---- the client ---- */

static int fuzz_unix_connect(void)
{
    struct sockaddr_un addr;
    socklen_t addrlen;
    int fd, steps = 0;

    fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if ((fd < 0) ||
        (srm_sock_addr(fuzz_agent.socket_name, &addr, &addrlen) != 0)) {
        fuzz_fail("cannot create a client socket");
    }
    while (connect(fd, (struct sockaddr*)&addr, addrlen) != 0) {
        if ((errno != EAGAIN) || (steps++ == FUZZ_MAX_STEPS)) {
            fuzz_fail("cannot connect to the agent: %s", strerror(errno));
        }
        fuzz_step();
    }
    return fd;
}

static void fuzz_client_attach(void)
{
    fuzz_client_t *client = &fuzz_client;
    int fds[SRM_PROTO_MAX_FDS], nfds = 0, steps;
    srm_attach_req_t req;
    srm_attach_rep_t rep;
    ssize_t len = -1;
    void *addr;
    uint32_t i;

    memset(&req, 0, sizeof(req));
    srm_msg_hdr_init(&req.hdr, SRM_MSG_ATTACH_REQ);
    req.num_tx_rings = 2;
    req.tx_ring_size = 1 << 20;
    req.rx_ring_size = 1 << 20;
    snprintf(req.name, sizeof(req.name), "fuzz-wire");
    client->sock_fd = fuzz_unix_connect();
    if (srm_sock_send(client->sock_fd, &req, sizeof(req), NULL, 0) < 0) {
        fuzz_fail("cannot send ATTACH_REQ");
    }
    for (steps = 0; steps < FUZZ_MAX_STEPS; ++steps) {
        srm_agent_step(&fuzz_agent, 0);
        nfds = SRM_PROTO_MAX_FDS;
        len  = srm_sock_recv(client->sock_fd, &rep, sizeof(rep), fds, &nfds);
        if ((len >= 0) || (errno != EAGAIN)) {
            break;
        }
    }
    if ((len != sizeof(rep)) || (rep.status != 0) || (nfds != 3) ||
        (srm_shm_layout_init(&client->layout, 2, 1 << 20, 1 << 20) != 0) ||
        (srm_shm_map(&client->layout, fds[0], &addr) != 0)) {
        fuzz_fail("cannot attach the client");
    }
    close(fds[0]);
    client->doorbell_fd = fds[1];
    client->event_fd    = fds[2];
    client->port        = rep.port;
    client->key         = rep.key;
    client->shm         = addr;
    client->ctl         = addr;
    for (i = 0; i < 2; ++i) {
        srm_ring_init_producer(&client->tx[i], &client->ctl->tx[i],
                               client->shm + client->layout.tx_offset[i],
                               client->layout.tx_ring_size);
    }
    srm_ring_init_consumer(&client->rx, &client->ctl->rx,
                           client->shm + client->layout.rx_offset,
                           client->layout.rx_ring_size);
}

static void fuzz_lanes_unmap(void)
{
    int peer, kind;

    for (peer = 0; peer < FUZZ_PEERS; ++peer) {
        for (kind = 0; kind < SRM_CHANNEL_KINDS; ++kind) {
            if (fuzz_lanes[peer][kind] != NULL) {
                srm_lane_unmap(fuzz_lanes[peer][kind],
                               fuzz_lane_log_sizes[peer][kind]);
                fuzz_lanes[peer][kind] = NULL;
            }
        }
    }
}

static void fuzz_client_close(void)
{
    fuzz_client_t *client = &fuzz_client;

    if (client->shm != NULL) {
        srm_shm_unmap(&client->layout, client->shm);
    }
    close(client->sock_fd);
    close(client->doorbell_fd);
    close(client->event_fd);
    memset(client, 0, sizeof(*client));
}

/* What the agent delivered to the client. */
static void fuzz_on_delivered(const srm_frame_hdr_t *hdr,
                              const uint8_t *payload)
{
    uint32_t index = fuzz_payload_stamp(payload, hdr->length);
    fuzz_stamp_t *stamp;
    uint32_t *next;

    if ((hdr->type != SRM_FRAME_AM) || (hdr->dst_port != fuzz_client.port) ||
        (hdr->dst_key != fuzz_client.key)) {
        fuzz_fail("the client got a frame of type %u for port %u key %u",
                  hdr->type, hdr->dst_port, hdr->dst_key);
    }
    fuzz_trace("client got length %u src_port %u seq %u stamp %d",
               hdr->length, hdr->src_port, hdr->seq, (int)index);
    if (index == FUZZ_NO_STAMP) {
        /* Short, or completed by bytes the model does not know. */
        if ((hdr->length >= 8) && !fuzz_tainted) {
            fuzz_fail("the client got a frame nobody sent");
        }
        return;
    }
    stamp = &fuzz_stamps[index];
    if (!stamp->to_client) {
        fuzz_fail("the client got its own frame %u back", index);
    } else if (stamp->seen) {
        fuzz_fail("frame %u (peer %u port %u seq %u) delivered twice", index,
                  stamp->peer, stamp->port, stamp->seq);
    } else if (!stamp->right_dst) {
        fuzz_fail("frame %u to a wrong port or key was delivered", index);
    } else if (fuzz_secret() && !stamp->authed) {
        fuzz_fail("frame %u from a peer that never proved the secret was "
                  "delivered", index);
    } else if ((hdr->length != stamp->length) ||
               (hdr->src_port != stamp->src_port) ||
               (hdr->seq != stamp->seq) ||
               (stamp->whole &&
                !fuzz_payload_intact(payload, hdr->length, index))) {
        fuzz_fail("frame %u changed on its way to the client", index);
    }
    stamp->seen = 1;
    if (!stamp->known) {
        return;
    }
    next = &fuzz_peers[stamp->peer].delivered[stamp->port];
    if (fuzz_seq_before(hdr->seq, *next)) {
        fuzz_fail("peer %u port %u: seq %u delivered after seq %u (twice or "
                  "out of order)", stamp->peer, stamp->port, hdr->seq,
                  *next - 1);
    }
    *next = hdr->seq + 1;
}

static unsigned fuzz_client_recv(unsigned max)
{
    srm_frame_hdr_t hdr;
    unsigned count = 0;
    void *payload;

    while (count < max) {
        switch (srm_ring_peek(&fuzz_client.rx, SRM_FRAME_MAX_PAYLOAD, &hdr,
                              &payload)) {
        case SRM_RING_OK:
            break;
        case SRM_RING_EMPTY:
            return count;
        default:
            fuzz_fail("the agent wrote a corrupt RX ring");
        }
        fuzz_on_delivered(&hdr, payload);
        srm_ring_release(&fuzz_client.rx);
        ++count;
    }
    return count;
}

/* The client names a peer in its node table (once; the agent reads once). */
static uint16_t fuzz_addr_port(int peer, unsigned choice);

static void fuzz_client_name(uint32_t index, uint64_t id, int peer,
                             uint8_t addr)
{
    srm_shm_node_t *entry = &fuzz_client.ctl->nodes[index];

    if (entry->valid) {
        return;
    }
    entry->node_id = id;
    fuzz_loopback(&entry->wire[0], fuzz_addr_port(peer, addr));
    if (addr & 0x80) {
        fuzz_loopback(&entry->wire[1], fuzz_addr_port(peer, addr >> 3));
    }
    srm_store_release(&entry->valid, (uint16_t)1);
}

/* One stamped frame into a TX ring; the stamp, or FUZZ_NO_STAMP if full. */
static uint32_t fuzz_client_put(int ring, int peer, uint32_t node_index,
                                uint32_t length, uint8_t dst)
{
    fuzz_stamp_t stamp = {0};
    srm_frame_hdr_t *hdr;
    uint32_t index;

    if (srm_ring_reserve(&fuzz_client.tx[ring], srm_frame_record_size(length),
                         &hdr) != SRM_RING_OK) {
        return FUZZ_NO_STAMP;
    }
    stamp.peer     = (uint8_t)peer;
    stamp.dst_port = fuzz_src_ports[dst & 3];
    stamp.dst_key  = dst * 0x01010101u;
    stamp.length   = length;
    stamp.whole    = 1;
    index          = fuzz_stamp_new(&stamp, length);
    memset(hdr, 0, sizeof(*hdr));
    hdr->magic    = SRM_FRAME_MAGIC;
    hdr->version  = SRM_FRAME_VERSION;
    hdr->type     = SRM_FRAME_AM;
    hdr->length   = length;
    hdr->dst_port = stamp.dst_port;
    hdr->dst_key  = stamp.dst_key;
    hdr->dst_node = node_index;
    fuzz_payload(srm_frame_payload(hdr), length, index);
    srm_ring_commit(&fuzz_client.tx[ring], srm_frame_record_size(length));
    fuzz_bytes += length;
    return index;
}

static void fuzz_client_doorbell(void)
{
    const uint64_t one = 1;

    if (write(fuzz_client.doorbell_fd, &one, sizeof(one)) < 0) {
        /* a full counter: the agent has a wakeup pending anyway */
    }
}

/* ---- connections ---- */

static void fuzz_conn_reset(fuzz_conn_t *conn)
{
    uint8_t *in = conn->in;

    memset(conn, 0, sizeof(*conn));
    conn->in       = in;
    conn->fd       = -1;
    conn->peer     = -1;
    conn->listener = -1;
}

static void fuzz_conn_close(fuzz_conn_t *conn, int reset)
{
    struct linger abort_close = {.l_onoff = 1, .l_linger = 0};

    if (conn->fd >= 0) {
        if (reset) {
            setsockopt(conn->fd, SOL_SOCKET, SO_LINGER, &abort_close,
                       sizeof(abort_close));
        }
        close(conn->fd);
    }
    fuzz_conn_reset(conn);
}

static void fuzz_taint(fuzz_conn_t *conn)
{
    conn->raw    = 1;
    fuzz_tainted = 1;
}

static fuzz_chan_t *fuzz_conn_chan(const fuzz_conn_t *conn)
{
    if ((conn->peer < 0) || (conn->kind < 0) ||
        (conn->kind >= SRM_CHANNEL_KINDS)) {
        return &fuzz_scratch_chan;
    }
    return &fuzz_peers[conn->peer].chan[conn->kind];
}

static void fuzz_mac(const fuzz_conn_t *conn, srm_auth_role_t role, int kind,
                     int path, uint8_t mac[SRM_AUTH_MAC_LEN])
{
    srm_auth_context_t ctx;

    memset(&ctx, 0, sizeof(ctx)); /* no queue pairs on the tcp wire */
    ctx.initiator_id = conn->dialled ? conn->claimed_id : FUZZ_AGENT_ID;
    ctx.acceptor_id  = conn->dialled ? FUZZ_AGENT_ID : conn->claimed_id;
    memcpy(ctx.initiator_nonce, conn->dialled ? conn->nonce :
                                                conn->agent_nonce,
           SRM_AUTH_NONCE_LEN);
    memcpy(ctx.acceptor_nonce, conn->dialled ? conn->agent_nonce :
                                               conn->nonce,
           SRM_AUTH_NONCE_LEN);
    ctx.kind = (uint8_t)kind;
    ctx.path = (uint8_t)path;
    srm_auth_prove(&fuzz_auth, role, &ctx, mac);
}

/* The agent's HELLO (it dialled us) or HELLO_ACK (we dialled it). */
static void fuzz_on_hello(fuzz_conn_t *conn, int type,
                          const srm_hello_t *hello)
{
    const char *name = (type == SRM_FRAME_HELLO) ? "HELLO" : "HELLO_ACK";
    uint8_t mac[SRM_AUTH_MAC_LEN];

    if ((hello->node_id != FUZZ_AGENT_ID) ||
        (hello->kind >= SRM_CHANNEL_KINDS) ||
        (hello->path >= SRM_WIRE_PATHS) ||
        (hello->secret != (fuzz_secret() ? 1 : 0)) ||
        (memcmp(&hello->wire[0], &fuzz_agent.wire[0],
                sizeof(hello->wire[0])) != 0)) {
        fuzz_fail("the agent's %s has a wrong field", name);
    }
    if (conn->raw) {
        return; /* an answer to bytes the model does not know */
    }
    if (type == SRM_FRAME_HELLO) {
        if (conn->dialled || conn->got_hello) {
            fuzz_fail("a HELLO from the acceptor, or a second one");
        }
        conn->got_hello = 1;
        conn->kind      = hello->kind;
        conn->path      = hello->path;
        memcpy(conn->agent_nonce, hello->nonce, SRM_AUTH_NONCE_LEN);
        if (conn->hello_sent) { /* we answered before it spoke */
            conn->ready = conn->ack_ok && (conn->ack_kind == conn->kind) &&
                          (conn->ack_path == conn->path);
        }
        return;
    }

    if (!conn->dialled || !conn->hello_sent || conn->got_hello) {
        fuzz_fail("a HELLO_ACK that answers no HELLO");
    } else if (!conn->hello_ok) {
        fuzz_fail("the agent answered a HELLO it must refuse");
    } else if ((hello->kind != conn->kind) || (hello->path != conn->path)) {
        fuzz_fail("the HELLO_ACK is about another channel");
    }
    conn->got_hello = 1;
    conn->accepted  = hello->accepted;
    memcpy(conn->agent_nonce, hello->nonce, SRM_AUTH_NONCE_LEN);
    if (fuzz_secret()) {
        fuzz_mac(conn, SRM_AUTH_ROLE_ACCEPTOR, conn->kind, conn->path, mac);
        if (memcmp(mac, hello->mac, sizeof(mac)) != 0) {
            fuzz_fail("the agent's proof in its HELLO_ACK does not verify");
        }
    } else {
        conn->ready = conn->accepted;
    }
}

static void fuzz_on_auth(fuzz_conn_t *conn, const srm_auth_proof_t *proof)
{
    uint8_t mac[SRM_AUTH_MAC_LEN];

    if (!fuzz_secret()) {
        fuzz_fail("an AUTH from an agent without a secret");
    }
    if (conn->raw) {
        return;
    }
    if (conn->dialled || !conn->hello_sent || conn->got_auth) {
        fuzz_fail("an AUTH out of place");
    } else if (!conn->ready) {
        fuzz_fail("the agent took a HELLO_ACK it must refuse");
    }
    fuzz_mac(conn, SRM_AUTH_ROLE_INITIATOR, conn->kind, conn->path, mac);
    if (memcmp(mac, proof->mac, sizeof(mac)) != 0) {
        fuzz_fail("the agent's AUTH does not verify");
    }
    conn->got_auth = 1;
}

/* A client frame the agent sent to a peer, taken in channel order. */
static void fuzz_on_client_frame(fuzz_conn_t *conn, fuzz_chan_t *chan,
                                 const srm_frame_hdr_t *hdr,
                                 const uint8_t *payload)
{
    uint32_t index = fuzz_payload_stamp(payload, hdr->length);
    fuzz_stamp_t *stamp;

    if (index == FUZZ_NO_STAMP) {
        if (fuzz_lane_written) {
            return; /* a frame the script put in a lane's log */
        }
        fuzz_fail("the agent sent a peer a frame its client never wrote");
    }
    stamp = &fuzz_stamps[index];
    if (stamp->to_client || (stamp->peer != conn->peer)) {
        fuzz_fail("frame %u for peer %u arrived at peer %d", index,
                  stamp->peer, conn->peer);
    } else if (stamp->seen) {
        fuzz_fail("frame %u reached its peer twice", index);
    } else if ((hdr->length != stamp->length) ||
               (hdr->src_port != fuzz_client.port) ||
               (hdr->dst_port != stamp->dst_port) ||
               (hdr->dst_key != stamp->dst_key) ||
               !fuzz_payload_intact(payload, hdr->length, index)) {
        fuzz_fail("frame %u changed on its way to its peer", index);
    } else if (fuzz_seq_before(hdr->seq, chan->rx_seq)) {
        fuzz_fail("the client's frames to peer %d out of order", conn->peer);
    }
    stamp->seen  = 1;
    chan->rx_seq = hdr->seq + 1;
}

/* AM, PAUSE, RESUME or ACK from the agent: the channel is up. */
static void fuzz_on_channel_frame(fuzz_conn_t *conn,
                                  const srm_frame_hdr_t *hdr,
                                  const uint8_t *payload)
{
    fuzz_chan_t *chan;
    int32_t ahead;

    /* Only our own valid proof readies a connection, whatever else went
     * on it: the secret holds even where the model does not. */
    if (!conn->ready && (!conn->raw || fuzz_secret())) {
        fuzz_fail("the agent sent frame type %u on a connection whose "
                  "handshake %s", hdr->type,
                  fuzz_secret() ? "did not prove the secret" :
                                  "is not complete");
    }
    if (conn->raw || (conn->peer < 0)) {
        return;
    }
    if (fuzz_secret() && !conn->dialled && !conn->got_auth) {
        fuzz_fail("the agent used a channel before its AUTH");
    }
    chan = fuzz_conn_chan(conn);
    if (hdr->type == SRM_FRAME_ACK) {
        if (hdr->length != 0) {
            fuzz_fail("an ACK with a payload");
        }
        if (!fuzz_tainted && fuzz_seq_before(chan->tx_hi, hdr->seq)) {
            fuzz_fail("the agent acknowledges up to %u, the peer sent up to "
                      "%u", hdr->seq, chan->tx_hi);
        }
        if (fuzz_seq_before(chan->acked, hdr->seq)) {
            chan->acked = hdr->seq;
        }
        return;
    }

    ahead = (int32_t)(hdr->chan_seq - chan->rx_next);
    if (ahead < 0) {
        return; /* resent, and we have it */
    } else if ((ahead > 0) && !fuzz_tainted) {
        fuzz_fail("the agent skipped frames %u to %u of a channel",
                  chan->rx_next, hdr->chan_seq - 1);
    }
    chan->rx_next = hdr->chan_seq + 1;
    if (hdr->type == SRM_FRAME_AM) {
        fuzz_on_client_frame(conn, chan, hdr, payload);
    } else if (hdr->type == SRM_FRAME_PORT_GONE) {
        /* A blanked lane frame names port 0 and ends at 0: a no-op. */
        if ((hdr->length != 0) ||
            ((hdr->src_port != fuzz_client.port) &&
             !(fuzz_lane_written && (hdr->src_port == 0) &&
               (hdr->seq == 0)))) {
            fuzz_fail("a PORT_GONE for port %u", hdr->src_port);
        }
    } else if (hdr->type == SRM_FRAME_PORT_REFUSED) {
        /* One of our ports kept missing the client's key. */
        if (hdr->length != 0) {
            fuzz_fail("a PORT_REFUSED of %u bytes", hdr->length);
        }
    } else if (hdr->type == SRM_FRAME_RMA_REMOTE_DONE) {
        /* The answer to an RMA_REMOTE of ours. */
        if (hdr->length != sizeof(srm_rma_remote_done_t)) {
            fuzz_fail("an RMA_REMOTE_DONE of %u bytes", hdr->length);
        }
    } else if ((hdr->length != 0) || (hdr->dst_port != fuzz_client.port)) {
        fuzz_fail("a %s for port %u", (hdr->type == SRM_FRAME_PAUSE) ?
                                              "PAUSE" : "RESUME",
                  hdr->dst_port);
    }
}

static void fuzz_conn_on_frame(fuzz_conn_t *conn, const srm_frame_hdr_t *hdr,
                               const uint8_t *payload)
{
    srm_auth_proof_t proof;
    srm_hello_t hello;

    fuzz_trace("conn %d (peer %d kind %d path %d) got type %u length %u "
               "chan_seq %u seq %u", (int)(conn - fuzz_conns), conn->peer,
               conn->kind, conn->path, hdr->type, hdr->length, hdr->chan_seq,
               hdr->seq);
    switch (hdr->type) {
    case SRM_FRAME_HELLO:
    case SRM_FRAME_HELLO_ACK:
        if (hdr->length != sizeof(hello)) {
            fuzz_fail("the agent sent a HELLO of %u bytes", hdr->length);
        }
        memcpy(&hello, payload, sizeof(hello));
        fuzz_on_hello(conn, hdr->type, &hello);
        return;
    case SRM_FRAME_AUTH:
        if (hdr->length != sizeof(proof)) {
            fuzz_fail("the agent sent an AUTH of %u bytes", hdr->length);
        }
        memcpy(&proof, payload, sizeof(proof));
        fuzz_on_auth(conn, &proof);
        return;
    case SRM_FRAME_AM:
    case SRM_FRAME_PAUSE:
    case SRM_FRAME_RESUME:
    case SRM_FRAME_PORT_GONE:
    case SRM_FRAME_PORT_REFUSED:
    case SRM_FRAME_RMA_REMOTE_DONE:
    case SRM_FRAME_ACK:
        fuzz_on_channel_frame(conn, hdr, payload);
        return;
    case SRM_FRAME_BYE:
        return;
    default:
        fuzz_fail("the agent sent a frame of type %u", hdr->type);
    }
}

static void fuzz_conn_parse(fuzz_conn_t *conn)
{
    srm_frame_status_t status;
    size_t offset = 0, size;
    srm_frame_hdr_t hdr;

    for (;;) {
        status = srm_frame_next(conn->in + offset, conn->in_len - offset, &hdr,
                                &size);
        if (status != SRM_FRAME_OK) {
            fuzz_fail("the agent sent a malformed frame: %s",
                      srm_frame_status_str(status));
        }
        if (size == 0) {
            break;
        }
        fuzz_conn_on_frame(conn, &hdr, conn->in + offset + sizeof(hdr));
        offset += size;
    }
    memmove(conn->in, conn->in + offset, conn->in_len - offset);
    conn->in_len -= offset;
}

/* Whatever the agent sent; 1 if anything happened. */
static unsigned fuzz_conn_read(fuzz_conn_t *conn)
{
    unsigned count = 0;
    ssize_t got;

    while ((conn->fd >= 0) && !conn->deaf) {
        got = recv(conn->fd, conn->in + conn->in_len,
                   FUZZ_IN_BUF - conn->in_len, MSG_DONTWAIT);
        if (got > 0) {
            conn->in_len += (size_t)got;
            fuzz_conn_parse(conn);
            count = 1;
            continue;
        }
        if ((got == 0) || ((errno != EAGAIN) && (errno != EINTR))) {
            fuzz_conn_close(conn, 0); /* the agent closed or reset it */
            count = 1;
        }
        break;
    }
    return count;
}

static void fuzz_conn_dial(fuzz_conn_t *conn)
{
    struct sockaddr_in sin = {.sin_family = AF_INET,
                              .sin_port   = fuzz_agent.wire[0].port};
    struct pollfd pfd;
    int fd, steps;

    memcpy(&sin.sin_addr, fuzz_agent.wire[0].ip, 4); /* checked at start */
    fuzz_conn_close(conn, 1);
    fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) {
        fuzz_fail("socket: %s", strerror(errno));
    }
    fuzz_nodelay(fd);
    fuzz_rcvbuf(fd);
    if ((connect(fd, (struct sockaddr*)&sin, sizeof(sin)) != 0) &&
        (errno != EINPROGRESS)) {
        fuzz_fail("cannot connect to the agent: %s", strerror(errno));
    }
    pfd.fd     = fd;
    pfd.events = POLLOUT;
    for (steps = 0; poll(&pfd, 1, 0) == 0; ++steps) {
        if (steps == FUZZ_MAX_STEPS) {
            fuzz_fail("the agent's wire port does not take a connection");
        }
        fuzz_step();
    }
    if (srm_wire_tcp_connect_result(fd) != 0) {
        fuzz_fail("connection to the agent's wire port failed");
    }
    conn->fd      = fd;
    conn->dialled = 1;
}

/* A connection the agent dialled to a peer's listener; -1 if none. */
static int fuzz_conn_accept(fuzz_conn_t *conn, int listener)
{
    int fd = accept4(fuzz_peers[listener].listen_fd, NULL, NULL,
                     SOCK_NONBLOCK | SOCK_CLOEXEC);

    if (fd < 0) {
        if ((errno != EAGAIN) && (errno != ECONNABORTED)) {
            fuzz_fail("accept: %s", strerror(errno));
        }
        return -1;
    }
    fuzz_nodelay(fd);
    fuzz_conn_close(conn, 1);
    conn->fd       = fd;
    conn->listener = listener;
    return 0;
}

/* The same, giving the agent a few passes to dial. */
static int fuzz_conn_take(fuzz_conn_t *conn, int listener)
{
    int tries;

    for (tries = 0; tries < 4; ++tries) {
        if (fuzz_conn_accept(conn, listener) == 0) {
            fuzz_step_all();
            return 0;
        }
        fuzz_step();
    }
    return -1;
}

/* Winding down: the agent's connections find nobody who answers. */
static unsigned fuzz_reject_dials(void)
{
    fuzz_conn_t conn;
    unsigned count = 0;
    int i;

    conn.in = NULL;
    fuzz_conn_reset(&conn);
    for (i = 0; i < FUZZ_ALL_PEERS; ++i) {
        while (fuzz_conn_accept(&conn, i) == 0) {
            fuzz_conn_close(&conn, 1);
            ++count;
        }
    }
    return count;
}

/* One agent pass, then what it sent; 0 if nothing happened. */
static unsigned fuzz_step(void)
{
    unsigned count = srm_agent_step(&fuzz_agent, 0);
    int i;

    for (i = 0; i < FUZZ_ALL_CONNS; ++i) {
        count += fuzz_conn_read(&fuzz_conns[i]);
    }
    if (fuzz_winding_down) {
        count += fuzz_reject_dials();
    }
    return count;
}

static void fuzz_settle(void)
{
    int steps, quiet = 0;

    for (steps = 0; quiet < 2; ++steps) {
        if (steps == FUZZ_MAX_STEPS) {
            fuzz_fail("the agent does not settle");
        }
        quiet = (fuzz_step() == 0) ? quiet + 1 : 0;
    }
}

static void fuzz_step_all(void)
{
    fuzz_step();
    fuzz_step();
}

/*
 * Writes all of buf, giving the agent passes while it has no room; a peer
 * whose bytes do not leave gives up and resets the connection.
 */
static void fuzz_conn_write(fuzz_conn_t *conn, const uint8_t *buf, size_t len)
{
    int tries = 0;
    ssize_t sent;

    while ((len > 0) && (conn->fd >= 0)) {
        sent = send(conn->fd, buf, len, MSG_DONTWAIT | MSG_NOSIGNAL);
        if (sent > 0) {
            buf        += sent;
            len        -= (size_t)sent;
            fuzz_bytes += (size_t)sent;
            tries       = 0;
            continue;
        }
        if ((errno != EAGAIN) && (errno != EINTR)) {
            fuzz_conn_close(conn, 0); /* the agent closed it */
            return;
        }
        if (++tries > FUZZ_SEND_TRIES) {
            fuzz_conn_close(conn, 1);
            return;
        }
        fuzz_step();
    }
}

/*
 * Sends len bytes of fuzz_buf as the variant says: 2 in two writes with
 * agent passes between, 3 cut short (the rest never comes). Returns how
 * many bytes went.
 */
static size_t fuzz_conn_send(fuzz_input_t *in, fuzz_conn_t *conn, size_t len,
                             int variant)
{
    size_t cut = len;

    if ((variant >= 2) && (len > 1)) {
        cut = 1 + (fuzz_u8(in) * (len - 1)) / 256;
    }
    fuzz_trace("conn %d (peer %d) sends %zu of %zu bytes, type %u",
               (int)(conn - fuzz_conns), conn->peer, cut, len, fuzz_buf[3]);
    fuzz_conn_write(conn, fuzz_buf, cut);
    if (variant == 2) {
        fuzz_step_all();
        fuzz_conn_write(conn, fuzz_buf + cut, len - cut);
        return len;
    } else if (cut < len) {
        fuzz_taint(conn);
    }
    return cut;
}

static void fuzz_hdr(srm_frame_hdr_t *hdr, int type, uint32_t length)
{
    memset(hdr, 0, sizeof(*hdr));
    hdr->magic   = SRM_FRAME_MAGIC;
    hdr->version = SRM_FRAME_VERSION;
    hdr->type    = (uint8_t)type;
    hdr->length  = length;
}

/*
 * Mostly a valid header; sometimes a wrong magic, version or AM id, a
 * length a little off (the payload follows the new length), or another
 * type: then the model no longer knows what the agent makes of it.
 * Returns 1 if the header was left alone.
 */
static int fuzz_tweak(fuzz_conn_t *conn, srm_frame_hdr_t *hdr, uint8_t t)
{
    srm_frame_hdr_t before = *hdr;

    if (t < 224) {
        return 1;
    } else if (t < 228) {
        hdr->magic ^= (uint16_t)(1u << (t & 3));
    } else if (t < 232) {
        hdr->version = (uint8_t)(t & 3);
    } else if (t < 240) {
        hdr->am_id = (uint8_t)(32 + (t & 7));
    } else if (t < 248) {
        if (hdr->type != t - 240) {
            hdr->type = (uint8_t)(t - 240);
            fuzz_taint(conn);
        }
    } else if (t < 252) {
        hdr->length += t - 247;
    } else {
        hdr->length -= (hdr->length < t - 251u) ? hdr->length : t - 251u;
    }
    return memcmp(&before, hdr, sizeof(before)) == 0;
}

/* Copies a frame into fuzz_buf at offset; returns the new end. */
static size_t fuzz_frame(size_t offset, const srm_frame_hdr_t *hdr,
                         const void *payload, size_t payload_len)
{
    size_t n = (hdr->length < payload_len) ? hdr->length : payload_len;

    memcpy(fuzz_buf + offset, hdr, sizeof(*hdr));
    if (n > 0) {
        memcpy(fuzz_buf + offset + sizeof(*hdr), payload, n);
    }
    memset(fuzz_buf + offset + sizeof(*hdr) + n, 0, hdr->length - n);
    return offset + sizeof(*hdr) + hdr->length;
}

/* What a numbered frame or an ack we sent tells the model. */
static void fuzz_note_sent(fuzz_conn_t *conn, const srm_frame_hdr_t *hdr,
                           int model)
{
    fuzz_chan_t *chan = fuzz_conn_chan(conn);

    switch (hdr->type) {
    case SRM_FRAME_AM:
    case SRM_FRAME_PAUSE:
    case SRM_FRAME_RESUME:
    case SRM_FRAME_PORT_GONE:
    case SRM_FRAME_RMA_REMOTE:
    case SRM_FRAME_RMA_REMOTE_DONE:
        if (fuzz_seq_before(chan->tx_hi, hdr->chan_seq + 1)) {
            chan->tx_hi = hdr->chan_seq + 1;
        }
        if (model) {
            chan->tx_next = hdr->chan_seq + 1;
        }
        break;
    case SRM_FRAME_ACK:
        /* We claim to have them: the agent need not send them again. */
        if (fuzz_seq_before(chan->rx_next, hdr->seq)) {
            chan->rx_next = hdr->seq;
        }
        break;
    default:
        break;
    }
}

/*
 * chan_seq for our next numbered frame: the next one, a little off, or
 * where the agent's last ack says (a peer resending); *model tells
 * whether the model moves on with it.
 */
static uint32_t fuzz_chan_seq(fuzz_conn_t *conn, uint8_t b, int *model)
{
    fuzz_chan_t *chan = fuzz_conn_chan(conn);

    *model = 1;
    if (b == 255) {
        chan->tx_next = chan->acked;
    } else if (b >= 192) {
        *model = 0;
        return chan->tx_next + (uint32_t)((int)b - 223);
    }
    return chan->tx_next;
}

/* ---- ops ---- */

/* A node id from a small set: the peers, 0, or the agent's own. */
static int fuzz_pick_peer(uint8_t b, uint64_t *id)
{
    int peer;

    switch (b & 7) {
    case 4:
        *id = 0;
        return -1;
    case 5:
        *id = FUZZ_AGENT_ID;
        return -1;
    default:
        peer = ((b & 7) < 4) ? (b & 3) : ((b >> 3) & 3);
        *id  = fuzz_peers[peer].id;
        return peer;
    }
}

/*
 * Where a peer says it listens: its own listener mostly, another peer's,
 * a port where nothing listens, or the agent itself.
 */
static uint16_t fuzz_addr_port(int peer, unsigned choice)
{
    peer = (peer < 0) ? 0 : peer;
    switch (choice & 3) {
    case 2:
        return (choice & 4) ?
               fuzz_peers[(peer + 1) % FUZZ_PEERS].listen_port :
               fuzz_closed_port;
    case 3:
        return fuzz_agent.wire[0].port;
    default:
        return fuzz_peers[peer].listen_port;
    }
}

/* Bit 6 of b: an address of no family, for which the HELLO is refused. */
static void fuzz_hello_addrs(srm_hello_t *hello, int peer, uint8_t b)
{
    fuzz_loopback(&hello->wire[0], fuzz_addr_port(peer, b));
    if (b & 0x40) {
        hello->wire[0].family = 5;
    }
    if (b & 0x80) {
        fuzz_loopback(&hello->wire[1], fuzz_addr_port(peer, b >> 3));
    }
}

static void fuzz_send_hello(fuzz_input_t *in, fuzz_conn_t *conn,
                            const srm_hello_t *hello, int peer, uint8_t tweak,
                            int variant)
{
    srm_frame_hdr_t hdr;
    int valid;

    if (conn->fd < 0) {
        fuzz_conn_dial(conn);
    }
    fuzz_hdr(&hdr, SRM_FRAME_HELLO, sizeof(*hello));
    valid = fuzz_tweak(conn, &hdr, tweak);
    if (conn->dialled && !conn->hello_sent) {
        conn->hello_sent = 1;
        conn->claimed_id = hello->node_id;
        memcpy(conn->nonce, hello->nonce, SRM_AUTH_NONCE_LEN);
        conn->hello_ok = valid && (peer >= 0) &&
                         (hello->kind < SRM_CHANNEL_KINDS) &&
                         (hello->path < SRM_WIRE_PATHS) &&
                         (hello->secret == (fuzz_secret() ? 1 : 0)) &&
                         (hello->wire[0].family == SRM_WIRE_ADDR_IPV4);
        if (conn->hello_ok) {
            conn->peer = peer;
            conn->kind = hello->kind;
            conn->path = hello->path;
        }
    }
    fuzz_conn_send(in, conn, fuzz_frame(0, &hdr, hello, sizeof(*hello)),
                   variant);
}

static void fuzz_op_hello(fuzz_input_t *in, fuzz_conn_t *conn, int variant)
{
    uint8_t who = fuzz_u8(in), kp = fuzz_u8(in), flags = fuzz_u8(in);
    uint8_t addr = fuzz_u8(in);
    srm_hello_t hello;
    int peer;

    memset(&hello, 0, sizeof(hello));
    peer = fuzz_pick_peer(who, &hello.node_id);
    fuzz_take(in, hello.nonce, sizeof(hello.nonce));
    hello.kind = kp & 1;
    hello.path = (kp >> 1) & 1;
    if (kp & 0x80) {
        hello.kind = (kp >> 2) & 7;
        hello.path = (kp >> 5) & 3;
    }
    hello.secret   = (uint8_t)(fuzz_secret() ^ (flags & 1));
    hello.accepted = (flags >> 2) & 1;
    hello.reserved[0] = flags >> 3;
    if ((flags & 0xf8) == 0xf8) {
        hello.wire_kind = (uint8_t)(flags >> 6); /* not ours: refused */
    }
    if (flags & 2) {
        hello.secret = flags;
    }
    fuzz_hello_addrs(&hello, peer, addr);
    fuzz_send_hello(in, conn, &hello, peer, fuzz_u8(in), variant);
}

/* mac: 0 valid, 1 a bit flipped, 2 zeros, 3 from the input */
static void fuzz_proof(fuzz_input_t *in, unsigned how, uint8_t *mac)
{
    switch (how & 3) {
    case 1:
        mac[how % SRM_AUTH_MAC_LEN] ^= 0x10;
        break;
    case 2:
        memset(mac, 0, SRM_AUTH_MAC_LEN);
        break;
    case 3:
        fuzz_take(in, mac, SRM_AUTH_MAC_LEN);
        break;
    default:
        break;
    }
}

static void fuzz_send_hello_ack(fuzz_input_t *in, fuzz_conn_t *conn,
                                srm_hello_t *ack, int peer, unsigned mac_how,
                                uint8_t tweak, int variant)
{
    srm_frame_hdr_t hdr;
    int valid;

    fuzz_hdr(&hdr, SRM_FRAME_HELLO_ACK, sizeof(*ack));
    valid = fuzz_tweak(conn, &hdr, tweak);
    if (!conn->dialled && !conn->hello_sent) {
        conn->hello_sent = 1;
        conn->claimed_id = ack->node_id;
        conn->ack_kind   = ack->kind;
        conn->ack_path   = ack->path;
        memcpy(conn->nonce, ack->nonce, SRM_AUTH_NONCE_LEN);
        fuzz_mac(conn, SRM_AUTH_ROLE_ACCEPTOR, ack->kind, ack->path,
                 ack->mac);
        conn->ack_ok = valid && (peer >= 0) && (ack->accepted != 0) &&
                       ((ack->secret != 0) == fuzz_secret()) &&
                       (!fuzz_secret() ||
                        (((mac_how & 3) == 0) && conn->got_hello));
        if (conn->ack_ok) {
            conn->peer = peer;
        }
        if (conn->got_hello) {
            conn->ready = conn->ack_ok && (ack->kind == conn->kind) &&
                          (ack->path == conn->path);
        }
    }
    fuzz_proof(in, mac_how, ack->mac);
    fuzz_conn_send(in, conn, fuzz_frame(0, &hdr, ack, sizeof(*ack)), variant);
}

static void fuzz_op_hello_ack(fuzz_input_t *in, fuzz_conn_t *conn,
                              int variant)
{
    uint8_t who = fuzz_u8(in), kp = fuzz_u8(in), flags = fuzz_u8(in);
    uint8_t addr = fuzz_u8(in);
    srm_hello_t ack;
    int peer;

    memset(&ack, 0, sizeof(ack));
    fuzz_take(in, ack.nonce, sizeof(ack.nonce));
    if ((conn->fd < 0) && (fuzz_conn_take(conn, who & 3) != 0)) {
        return;
    }
    fuzz_conn_read(conn); /* the agent's HELLO, if it is there */
    if (conn->fd < 0) {
        return;
    }
    if ((who < 0xc0) && (conn->listener >= 0)) {
        peer        = conn->listener;
        ack.node_id = fuzz_peers[peer].id;
    } else {
        peer = fuzz_pick_peer(who, &ack.node_id);
    }
    ack.kind = (uint8_t)(conn->got_hello ? conn->kind : 0);
    ack.path = (uint8_t)(conn->got_hello ? conn->path : 0);
    if (kp & 1) {
        ack.kind = (kp >> 1) & 3;
        ack.path = (kp >> 3) & 3;
    }
    ack.accepted = (flags & 1) ? (flags >> 4) : 1;
    ack.secret   = (uint8_t)(fuzz_secret() ^ ((flags >> 1) & 1));
    fuzz_hello_addrs(&ack, peer, addr);
    fuzz_send_hello_ack(in, conn, &ack, peer, flags >> 2, fuzz_u8(in),
                        variant);
}

static void fuzz_send_auth(fuzz_input_t *in, fuzz_conn_t *conn,
                           unsigned mac_how, uint8_t tweak, int variant)
{
    srm_auth_proof_t proof;
    srm_frame_hdr_t hdr;
    int valid;

    if (conn->fd < 0) {
        fuzz_conn_dial(conn);
    }
    fuzz_hdr(&hdr, SRM_FRAME_AUTH, sizeof(proof));
    valid = fuzz_tweak(conn, &hdr, tweak);
    fuzz_mac(conn, SRM_AUTH_ROLE_INITIATOR, conn->kind, conn->path,
             proof.mac);
    fuzz_proof(in, mac_how, proof.mac);
    if (conn->dialled && !conn->auth_sent) {
        conn->auth_sent = 1;
        if (fuzz_secret() && valid && ((mac_how & 3) == 0) &&
            conn->hello_ok && conn->got_hello && conn->accepted) {
            conn->ready = 1;
        }
    }
    fuzz_conn_send(in, conn, fuzz_frame(0, &hdr, &proof, sizeof(proof)),
                   variant);
}

static uint32_t fuzz_am_length(unsigned shape, uint8_t b)
{
    switch (shape) {
    case 10:
        return 8 + b * 32u;
    case 11:
        return 8192 + 1 + b; /* over LARGE_THRESH */
    case 12:
        return 65536;
    case 13:
        return SRM_FRAME_MAX_PAYLOAD;
    case 14:
        return SRM_FRAME_MAX_PAYLOAD + 1;
    case 15:
        return b * 512u;
    default:
        return b;
    }
}

static void fuzz_op_am(fuzz_input_t *in, fuzz_conn_t *conn, int variant)
{
    uint8_t shape = fuzz_u8(in), len_b = fuzz_u8(in), chan_b = fuzz_u8(in);
    uint8_t seq_b = fuzz_u8(in), port_b = fuzz_u8(in), tweak = fuzz_u8(in);
    uint32_t length = fuzz_am_length(shape >> 4, len_b);
    unsigned burst  = 1 + (shape & 15), port = port_b & 3, i, n;
    uint32_t first[16], *order, seq0, chan_seq = 0;
    fuzz_stamp_t stamp = {0};
    size_t len = 0, ends[16], cut;
    srm_frame_hdr_t hdr;
    int model = 0;

    if (conn->fd < 0) {
        fuzz_conn_dial(conn);
    }
    if ((fuzz_bytes + burst * (size_t)length) > FUZZ_BUDGET) {
        length = (length < 64) ? length : 64;
    }
    order = (conn->peer >= 0) ? &fuzz_peers[conn->peer].order[port] :
                                &fuzz_scratch_order;
    seq0  = *order + ((seq_b < 192) ? 0 : (uint32_t)((int)seq_b - 223));
    for (n = 0; n < burst; ++n) {
        if ((len + 2 * sizeof(hdr) + length + 8) > FUZZ_BUF_SIZE) {
            break;
        }
        fuzz_hdr(&hdr, SRM_FRAME_AM, length);
        hdr.src_port = fuzz_src_ports[port];
        hdr.dst_port = fuzz_client.port;
        hdr.dst_key  = fuzz_client.key;
        if ((port_b & 0x0c) == 0x08) {
            hdr.dst_key ^= 0x5a5a;
        } else if ((port_b & 0x0c) == 0x0c) {
            hdr.dst_port ^= 0x10000; /* the same slot, another generation */
        }
        hdr.am_id    = port_b >> 4;
        chan_seq     = (n == 0) ? fuzz_chan_seq(conn, chan_b, &model) :
                                  chan_seq + 1;
        hdr.chan_seq = chan_seq;
        hdr.seq      = seq0 + n;
        if (n == burst - 1) {
            fuzz_tweak(conn, &hdr, tweak);
        }
        stamp.to_client = 1;
        stamp.peer      = (uint8_t)((conn->peer >= 0) ? conn->peer : 0);
        stamp.port      = (uint8_t)port;
        stamp.known     = !conn->raw && (conn->peer >= 0);
        stamp.authed    = conn->ready;
        stamp.right_dst = (hdr.dst_port == fuzz_client.port) &&
                          (hdr.dst_key == fuzz_client.key);
        stamp.whole     = 1;
        stamp.src_port  = hdr.src_port;
        stamp.seq       = hdr.seq;
        stamp.length    = hdr.length;
        first[n]        = fuzz_stamp_new(&stamp, hdr.length);
        memcpy(fuzz_buf + len, &hdr, sizeof(hdr));
        fuzz_payload(fuzz_buf + len + sizeof(hdr), hdr.length, first[n]);
        len    += sizeof(hdr) + hdr.length;
        ends[n] = len;
        fuzz_note_sent(conn, &hdr, model);
    }
    if (seq_b < 192) {
        *order = seq0 + n;
    }
    cut = fuzz_conn_send(in, conn, len, variant);
    for (i = 0; i < n; ++i) {
        if ((ends[i] > cut) && (first[i] != FUZZ_NO_STAMP)) {
            fuzz_stamps[first[i]].whole = 0;
            fuzz_stamps[first[i]].known = 0;
        }
    }
}

static void fuzz_op_flow(fuzz_input_t *in, fuzz_conn_t *conn, int variant)
{
    uint8_t type_b = fuzz_u8(in), port_b = fuzz_u8(in), chan_b = fuzz_u8(in);
    uint8_t tweak = fuzz_u8(in);
    union {
        srm_rma_remote_t      req;
        srm_rma_remote_done_t done;
    } rma;
    srm_frame_hdr_t hdr;
    size_t length = 0;
    int model;

    if (conn->fd < 0) {
        fuzz_conn_dial(conn);
    }
    memset(&rma, 0, sizeof(rma));
    if ((type_b & 7) == 7) {
        /* A port the AMs here never come from: the model stays whole. */
        fuzz_hdr(&hdr, SRM_FRAME_PORT_GONE, 0);
        hdr.src_port = 0x10000u + port_b;
        hdr.seq      = type_b >> 3;
    } else if ((type_b & 7) >= 5) {
        /* An RMA on memory this agent does not have (it answers with an
         * error), or an answer to an RMA it never asked for. */
        fuzz_hdr(&hdr, ((type_b & 7) == 6) ? SRM_FRAME_RMA_REMOTE :
                                             SRM_FRAME_RMA_REMOTE_DONE,
                 ((type_b & 7) == 6) ? sizeof(rma.req) : sizeof(rma.done));
        hdr.src_port        = 0x20000u + port_b;
        rma.req.id          = port_b;
        rma.req.op          = type_b >> 6;
        rma.req.region_id   = (type_b >> 3) & 1;
        rma.req.generation  = 1;
        rma.req.length      = (uint64_t)port_b << (tweak & 31);
        length              = hdr.length;
    } else {
        fuzz_hdr(&hdr, (type_b & 1) ? SRM_FRAME_RESUME : SRM_FRAME_PAUSE, 0);
        hdr.dst_port = (port_b < 0xf0) ? fuzz_src_ports[port_b & 3] :
                                         fuzz_client.port;
        hdr.src_port = type_b >> 1;
    }
    hdr.chan_seq = fuzz_chan_seq(conn, chan_b, &model);
    fuzz_tweak(conn, &hdr, tweak);
    fuzz_note_sent(conn, &hdr, model);
    fuzz_conn_send(in, conn, fuzz_frame(0, &hdr, &rma, length), variant);
}

static void fuzz_op_ack(fuzz_input_t *in, fuzz_conn_t *conn, int variant)
{
    uint8_t b = fuzz_u8(in), tweak;
    fuzz_chan_t *chan;
    srm_frame_hdr_t hdr;
    uint32_t raw;

    fuzz_take(in, &raw, sizeof(raw));
    tweak = fuzz_u8(in);
    if (conn->fd < 0) {
        fuzz_conn_dial(conn);
    }
    chan = fuzz_conn_chan(conn);
    fuzz_hdr(&hdr, SRM_FRAME_ACK, 0);
    hdr.seq = (b < 192) ? chan->rx_next :
              (b == 255) ? raw : chan->rx_next + (uint32_t)((int)b - 223);
    fuzz_tweak(conn, &hdr, tweak);
    fuzz_note_sent(conn, &hdr, 0);
    fuzz_conn_send(in, conn, fuzz_frame(0, &hdr, NULL, 0), variant);
}

static void fuzz_op_other(fuzz_input_t *in, fuzz_conn_t *conn, int variant)
{
    uint8_t type_b = fuzz_u8(in), chan_b = fuzz_u8(in), tweak = fuzz_u8(in);
    srm_frame_hdr_t hdr;
    int model;

    if (conn->fd < 0) {
        fuzz_conn_dial(conn);
    }
    fuzz_hdr(&hdr, (type_b < 128) ? SRM_FRAME_BYE : (type_b & 15), 0);
    hdr.chan_seq = fuzz_chan_seq(conn, chan_b, &model);
    fuzz_tweak(conn, &hdr, tweak);
    fuzz_note_sent(conn, &hdr, model);
    fuzz_conn_send(in, conn, fuzz_frame(0, &hdr, NULL, 0), variant);
}

static void fuzz_op_raw(fuzz_input_t *in, fuzz_conn_t *conn)
{
    size_t len = fuzz_u8(in);

    fuzz_take(in, fuzz_buf, len);
    if (conn->fd < 0) {
        fuzz_conn_dial(conn);
    }
    fuzz_taint(conn);
    fuzz_conn_write(conn, fuzz_buf, len);
}

static void fuzz_op_close(fuzz_input_t *in, fuzz_conn_t *conn)
{
    switch (fuzz_u8(in) & 3) {
    case 0:
        if (conn->fd >= 0) {
            shutdown(conn->fd, SHUT_WR);
        }
        break;
    case 1:
        fuzz_conn_close(conn, 1);
        break;
    case 2:
        fuzz_conn_close(conn, 0);
        break;
    default:
        conn->deaf = !conn->deaf && (conn->fd >= 0);
        break;
    }
}

static void fuzz_op_accept(fuzz_input_t *in, fuzz_conn_t *conn)
{
    uint8_t b = fuzz_u8(in);

    fuzz_conn_take(conn, b % FUZZ_PEERS);
}

static void fuzz_op_step(fuzz_input_t *in)
{
    static const double advance[8] = {0, 0.0001, 0.0006, 0.005, 0.03, 0.06,
                                      0.25, 1.1};
    uint8_t b = fuzz_u8(in);
    int steps = b & 7;

    fuzz_clock += advance[(b >> 3) & 7];
    if (steps == 0) {
        fuzz_settle();
    }
    while (steps-- > 0) {
        fuzz_step();
    }
}

static void fuzz_op_send(fuzz_input_t *in)
{
    uint8_t who = fuzz_u8(in), addr = fuzz_u8(in), len_b = fuzz_u8(in);
    uint8_t shape = fuzz_u8(in), dst = fuzz_u8(in);
    unsigned burst = 1 + (shape & 15), i;
    int peer       = who & 3;
    uint32_t index = peer + 1, length;

    switch ((who >> 2) & 3) {
    case 2:
        index = SRM_SHM_MAX_NODES - 1 - peer; /* never named */
        break;
    case 3:
        index = 10 + peer; /* names this agent itself */
        fuzz_client_name(index, FUZZ_AGENT_ID, peer, addr);
        break;
    default:
        fuzz_client_name(index, fuzz_peers[peer].id, peer, addr);
        break;
    }
    switch (shape >> 4) {
    case 12:
        length = 8192 + 1 + len_b; /* the bulk channel */
        break;
    case 13:
        length = 8 + len_b * 64u;
        break;
    case 14:
        length = 65536;
        break;
    case 15:
        length = SRM_FRAME_MAX_PAYLOAD;
        break;
    default:
        length = 8 + len_b;
        break;
    }
    if ((fuzz_bytes + burst * (size_t)length) > FUZZ_BUDGET) {
        length = 64;
    }
    for (i = 0; i < burst; ++i) {
        if (fuzz_client_put(FUZZ_CLIENT_TX, peer, index, length, dst) ==
            FUZZ_NO_STAMP) {
            break;
        }
    }
    fuzz_client_doorbell();
}

static void fuzz_op_recv(fuzz_input_t *in)
{
    uint8_t b = fuzz_u8(in);

    fuzz_client_recv((b == 0) ? UINT32_MAX : b);
}

/* The client's direct lane to a peer's node for a channel, asked for on a
 * connection of its own (as the module's md does) and mapped; NULL if
 * refused. */
static srm_lane_t *fuzz_lane_get(int peer, int kind)
{
    int fds[SRM_PROTO_MAX_FDS], nfds = 0, fd, steps, i;
    srm_lane_rep_t rep;
    srm_lane_req_t req;
    srm_lane_t *lane = NULL;
    ssize_t len = -1;

    if (fuzz_lanes[peer][kind] != NULL) {
        return fuzz_lanes[peer][kind];
    }
    memset(&req, 0, sizeof(req));
    srm_msg_hdr_init(&req.hdr, SRM_MSG_LANE_REQ);
    req.port = fuzz_client.port;
    req.key  = fuzz_client.key;
    req.node    = (uint32_t)peer + 1;
    req.channel = (uint32_t)kind;
    fd          = fuzz_unix_connect();
    if (srm_sock_send(fd, &req, sizeof(req), NULL, 0) < 0) {
        fuzz_fail("cannot send a lane request");
    }
    for (steps = 0; steps < FUZZ_MAX_STEPS; ++steps) {
        fuzz_step();
        nfds = SRM_PROTO_MAX_FDS;
        len  = srm_sock_recv(fd, &rep, sizeof(rep), fds, &nfds);
        if ((len >= 0) || (errno != EAGAIN)) {
            break;
        }
    }
    if ((len == sizeof(rep)) && (rep.status == 0) && (nfds >= 1) &&
        (srm_lane_map(fds[0], &lane, &fuzz_lane_log_sizes[peer][kind]) !=
         0)) {
        fuzz_fail("the agent's lane does not map");
    }
    for (i = 0; (len > 0) && (i < nfds); ++i) {
        close(fds[i]); /* the socket too: only the log is written */
    }
    close(fd);
    fuzz_lanes[peer][kind] = lane;
    return lane;
}

/*
 * Records of frames read from the lane's socket that no process read: AMs
 * for ports without the lane (the client's own would rightly get it
 * dropped), numbered as the agent publishes or not, and ACKs.
 */
static void fuzz_lane_records(fuzz_input_t *in, srm_lane_t *lane, unsigned n)
{
    uint32_t taken = srm_load_relaxed(&lane->rx_taken) & ~SRM_LANE_SEALED;
    srm_frame_hdr_t hdr;
    unsigned i;
    uint8_t v;

    for (i = 0; (i <= n) && (taken + i < SRM_LANE_RX_LOG); ++i) {
        v = fuzz_u8(in);
        srm_frame_hdr_init(&hdr, (v & 1) ? SRM_FRAME_ACK : SRM_FRAME_AM,
                           (v & 1) ? 0 : v);
        hdr.src_port = (v & 2) ? lane->rx_ports[v % SRM_LANE_RX_PORTS].src_port :
                                 fuzz_src_ports[v & 3];
        hdr.dst_port = (v & 4) ? 0x7000u + v : fuzz_src_ports[(v >> 3) & 3];
        hdr.chan_seq = lane->rx_expected + ((v & 8) ? v : i);
        hdr.seq      = (v & 1) ? lane->rx_expected + v :
                       lane->rx_ports[v % SRM_LANE_RX_PORTS].expected;
        lane->rx_log[taken + i] = hdr;
    }
    srm_lane_record_taken(lane, i);
}

/*
 * A buggy process of the agent's user writes a lane's log and counts
 * (not the socket): garbage, frames of ports without the lane, numbering
 * out of step, a writer that died, lengths out of range, records of
 * frames nobody read, a record count out of range. The agent must
 * keep its channel's numbering, drop only what is wrong, and live; the
 * client's own frames are not forged, so it is not dropped for them.
 */
static void fuzz_op_lane(fuzz_input_t *in, uint8_t b)
{
    uint8_t n = fuzz_u8(in), v = fuzz_u8(in);
    int peer  = b & (FUZZ_PEERS - 1), kind = (b >> 6) & 1;
    srm_lane_t *lane = fuzz_lane_get(peer, kind);
    uint32_t size    = fuzz_lane_log_sizes[peer][kind];
    srm_frame_hdr_t hdr;
    uint32_t len;

    if (lane == NULL) {
        return;
    }
    fuzz_lane_written = 1;
    fuzz_tainted      = 1;
    len = srm_load_relaxed(&lane->log_len) & ~SRM_LANE_SEALED;
    switch ((b >> 2) & 7) {
    case 0: /* bytes */
        if ((len <= size) && (n <= size - len)) {
            fuzz_take(in, lane->log + len, n);
            lane->log_len = len + n;
        }
        break;
    case 1: /* an AM of a port with no lane, numbered right or not */
        if ((len <= size) && (sizeof(hdr) + n <= size - len)) {
            srm_frame_hdr_init(&hdr, SRM_FRAME_AM, n);
            hdr.src_port = 0x7000u + v;
            hdr.dst_port = fuzz_src_ports[v & 3];
            hdr.chan_seq = lane->next_chan_seq + ((v & 8) ? v : 0);
            hdr.seq      = v;
            memcpy(lane->log + len, &hdr, sizeof(hdr));
            memset(lane->log + len + sizeof(hdr), v, n);
            lane->log_len = len + (uint32_t)sizeof(hdr) + n;
            lane->next_chan_seq++;
        }
        break;
    case 2:
        lane->next_chan_seq += n;
        break;
    case 3:
        lane->owner_died = 1;
        break;
    case 4:
        lane->unwritten = (uint32_t)n * v;
        break;
    case 5:
        lane->log_len = ((uint32_t)n << 24) | ((uint32_t)v << 8) | n;
        break;
    case 6:
        fuzz_lane_records(in, lane, n & 7);
        break;
    case 7:
        lane->rx_taken = ((uint32_t)n << 8) | v;
        break;
    }
    srm_store_relaxed(&lane->kick, 1);
}

static void fuzz_op_ctl(fuzz_input_t *in)
{
    static srm_status_rep_t rep;
    uint8_t b = fuzz_u8(in);
    union {
        srm_status_req_t status;
        srm_fault_req_t  fault;
    } req;
    ssize_t len = -1;
    size_t size;
    int fd, steps;

    if ((b & 0xa0) == 0xa0) {
        fuzz_op_lane(in, b);
        return;
    }
    memset(&req, 0, sizeof(req));
    if (b & 1) {
        srm_msg_hdr_init(&req.status.hdr, SRM_MSG_STATUS_REQ);
        size = sizeof(req.status);
    } else {
        srm_msg_hdr_init(&req.fault.hdr, SRM_MSG_FAULT_REQ);
        req.fault.node = (((b >> 1) & 7) == 7) ? SRM_FAULT_ALL_NODES :
                                                 (b >> 1) & 7;
        req.fault.kind = (int32_t)((b >> 4) & 3) - 1;
        req.fault.how  = (b >> 6) & 1;
        size           = sizeof(req.fault);
    }
    fd = fuzz_unix_connect();
    if (srm_sock_send(fd, &req, size, NULL, 0) < 0) {
        fuzz_fail("cannot send a control request");
    }
    for (steps = 0; steps < FUZZ_MAX_STEPS; ++steps) {
        fuzz_step();
        len = srm_sock_recv(fd, &rep, sizeof(rep), NULL, NULL);
        if ((len >= 0) || (errno != EAGAIN)) {
            break;
        }
    }
    if ((len > 0) &&
        ((srm_msg_hdr_check(&rep.hdr, (size_t)len, SRM_MSG_STATUS_REP,
                            offsetof(srm_status_rep_t, text)) != 0) ||
         (len != (ssize_t)(offsetof(srm_status_rep_t, text) + rep.length)))) {
        fuzz_fail("a malformed answer to srmctl");
    }
    close(fd);
}

/* We dial and complete a handshake as peer; ready or not, it is done. */
static void fuzz_handshake_dial(fuzz_conn_t *conn, int peer, int kind,
                                int path, uint8_t addr)
{
    srm_hello_t hello;

    fuzz_conn_dial(conn);
    memset(&hello, 0, sizeof(hello));
    hello.node_id = fuzz_peers[peer].id;
    hello.kind    = (uint8_t)kind;
    hello.path    = (uint8_t)path;
    hello.secret  = (uint8_t)fuzz_secret();
    hello.nonce[0] = (uint8_t)(peer + 1);
    fuzz_hello_addrs(&hello, peer, addr);
    fuzz_send_hello(NULL, conn, &hello, peer, 0, 0);
    fuzz_settle();
    if (fuzz_secret() && (conn->fd >= 0) && conn->accepted) {
        fuzz_send_auth(NULL, conn, 0, 0, 0);
        fuzz_settle();
    }
}

/* We answer a connection the agent dialled with a valid HELLO_ACK. */
static void fuzz_handshake_answer(fuzz_conn_t *conn, int peer)
{
    srm_hello_t ack;

    memset(&ack, 0, sizeof(ack));
    ack.node_id  = fuzz_peers[peer].id;
    ack.kind     = (uint8_t)conn->kind;
    ack.path     = (uint8_t)conn->path;
    ack.accepted = 1;
    ack.secret   = (uint8_t)fuzz_secret();
    ack.nonce[0] = (uint8_t)(peer + 0x11);
    fuzz_hello_addrs(&ack, peer, 0);
    fuzz_send_hello_ack(NULL, conn, &ack, peer, 0, 0, 0);
    fuzz_settle();
}

static void fuzz_op_handshake(fuzz_input_t *in, fuzz_conn_t *conn,
                              int variant)
{
    uint8_t who = fuzz_u8(in), kp = fuzz_u8(in), addr = fuzz_u8(in);
    int peer    = who % FUZZ_PEERS;

    if (!(variant & 1)) {
        fuzz_handshake_dial(conn, peer, kp & 1, (kp >> 1) & 1, addr);
        return;
    }
    if (fuzz_conn_take(conn, peer) != 0) {
        return;
    }
    fuzz_settle();
    if ((conn->fd >= 0) && conn->got_hello) {
        fuzz_handshake_answer(conn, peer);
    }
}

static void fuzz_run_ops(fuzz_input_t *in)
{
    fuzz_conn_t *conn;
    int variant;
    uint8_t op;

    while (in->size > 0) {
        op      = fuzz_u8(in);
        conn    = &fuzz_conns[(op >> 4) & (FUZZ_CONNS - 1)];
        variant = op >> 6;
        fuzz_trace("op %d conn %d variant %d", op & 15, (op >> 4) & 3,
                   variant);
        switch (op & 15) {
        case FUZZ_OP_HELLO:
            fuzz_op_hello(in, conn, variant);
            break;
        case FUZZ_OP_HELLO_ACK:
            fuzz_op_hello_ack(in, conn, variant);
            break;
        case FUZZ_OP_AUTH: {
            uint8_t how = fuzz_u8(in);
            fuzz_send_auth(in, conn, how, fuzz_u8(in), variant);
            break;
        }
        case FUZZ_OP_AM:
            fuzz_op_am(in, conn, variant);
            break;
        case FUZZ_OP_FLOW:
            fuzz_op_flow(in, conn, variant);
            break;
        case FUZZ_OP_ACK:
            fuzz_op_ack(in, conn, variant);
            break;
        case FUZZ_OP_OTHER:
            fuzz_op_other(in, conn, variant);
            break;
        case FUZZ_OP_RAW:
            fuzz_op_raw(in, conn);
            break;
        case FUZZ_OP_CLOSE:
            fuzz_op_close(in, conn);
            break;
        case FUZZ_OP_ACCEPT:
            fuzz_op_accept(in, conn);
            break;
        case FUZZ_OP_STEP:
            fuzz_op_step(in);
            break;
        case FUZZ_OP_SEND:
            fuzz_op_send(in);
            break;
        case FUZZ_OP_RECV:
            fuzz_op_recv(in);
            break;
        case FUZZ_OP_CTL:
            fuzz_op_ctl(in);
            break;
        case FUZZ_OP_DIAL:
            fuzz_conn_dial(conn);
            break;
        default:
            fuzz_op_handshake(in, conn, variant);
            break;
        }
        fuzz_step();
        fuzz_check_agent();
    }
}

/* ---- invariants ---- */

/* The agent's own bookkeeping: links, channels and held frames agree. */
static void fuzz_check_agent(void)
{
    srm_agent_t *agent = &fuzz_agent;
    const srm_held_frame_t *held;
    const srm_channel_t *chan;
    const srm_link_t *link;
    const srm_node_t *node;
    unsigned i, o;
    int kind, path;
    size_t bytes;

    for (i = 0; i < agent->num_links; ++i) {
        link = agent->links[i];
        if (link == NULL) {
            continue;
        }
        if (link->index != i) {
            fuzz_fail("link %u thinks it is link %u", i, link->index);
        }
        if ((link->state == SRM_LINK_READY) && (link->node == NULL)) {
            fuzz_fail("link %u is ready for no node", i);
        }
        if ((link->node != NULL) &&
            ((link->kind < 0) || (link->kind >= SRM_CHANNEL_KINDS) ||
             (link->path < 0) || (link->path >= SRM_WIRE_PATHS) ||
             (link->node->chan[link->kind].links[link->path] != link))) {
            fuzz_fail("link %u of node %u is not in its channel", i,
                      link->node->index);
        }
    }
    for (i = 0; i < agent->num_nodes; ++i) {
        node  = agent->nodes[i];
        bytes = 0;
        for (o = 0; o < node->num_orders; ++o) {
            for (held = node->orders[o].held; held != NULL;
                 held = held->next) {
                bytes += held->hdr.length;
                if (fuzz_seq_before(held->hdr.seq,
                                    node->orders[o].expected) ||
                    ((held->next != NULL) &&
                     fuzz_seq_before(held->next->hdr.seq, held->hdr.seq))) {
                    fuzz_fail("node %u holds frame %u of port %u out of order "
                              "(next expected %u)", i, held->hdr.seq,
                              node->orders[o].src_port,
                              node->orders[o].expected);
                }
            }
        }
        if ((node->index != i) || (bytes != node->held_bytes)) {
            fuzz_fail("node %u: index %u, held %zu bytes of %zu", i,
                      node->index, node->held_bytes, bytes);
        }
        for (kind = 0; kind < SRM_CHANNEL_KINDS; ++kind) {
            chan = &node->chan[kind];
            if ((chan->head > chan->frame_end) ||
                (chan->frame_end > chan->sent) ||
                (chan->sent > chan->tail) ||
                ((chan->tail - chan->head) > chan->out.size)) {
                fuzz_fail("node %u %s channel: offsets out of order", i,
                          srm_node_kind_name(kind));
            }
            if ((node->state == SRM_NODE_INVALID) &&
                (srm_channel_queued(chan) > 0)) {
                fuzz_fail("invalid node %u keeps frames", i);
            }
            for (path = 0; path < SRM_WIRE_PATHS; ++path) {
                link = chan->links[path];
                if ((link == NULL) || ((link->index < agent->num_links) &&
                                       (agent->links[link->index] == link) &&
                                       (link->node == node) &&
                                       (link->kind == kind) &&
                                       (link->path == path) &&
                                       (node->state != SRM_NODE_INVALID))) {
                    continue;
                }
                fuzz_fail("node %u %s channel path %d: a link that is gone or "
                          "not its own", i, srm_node_kind_name(kind), path);
            }
        }
        if ((node->state == SRM_NODE_INVALID) &&
            ((node->held_bytes > 0) || (node->num_paused > 0) ||
             (node->orders != NULL) || (node->paused_ports != NULL) ||
             (node->chan[SRM_CHANNEL_SMALL].out.base != NULL) ||
             (node->chan[SRM_CHANNEL_BULK].out.base != NULL))) {
            fuzz_fail("invalid node %u keeps frames, pauses or memory", i);
        }
    }
}

/*
 * A well-formed peer is still accepted: it dials, proves itself and its
 * frame reaches the client. The agent still reaches it: a bulk frame of
 * the client makes the agent dial the rest of its paths, which the peer
 * answers, and the frame arrives.
 */
static void fuzz_check_peer(void)
{
    fuzz_conn_t *conn   = &fuzz_conns[FUZZ_CONNS];
    fuzz_peer_t *peer   = &fuzz_peers[FUZZ_CHECK_PEER];
    uint32_t stamp, out = FUZZ_NO_STAMP;
    fuzz_stamp_t record = {0};
    srm_frame_hdr_t hdr;
    int round, i;

    fuzz_handshake_dial(conn, FUZZ_CHECK_PEER, SRM_CHANNEL_SMALL, 0, 0);
    if (!conn->ready || (conn->fd < 0)) {
        fuzz_fail("the agent refuses a well-formed peer");
    }
    fuzz_hdr(&hdr, SRM_FRAME_AM, 16);
    hdr.src_port     = fuzz_src_ports[0];
    hdr.dst_port     = fuzz_client.port;
    hdr.dst_key      = fuzz_client.key;
    hdr.chan_seq     = peer->chan[SRM_CHANNEL_SMALL].tx_next;
    record.to_client = 1;
    record.peer      = FUZZ_CHECK_PEER;
    record.known     = 1;
    record.authed    = 1;
    record.right_dst = 1;
    record.whole     = 1;
    record.src_port  = hdr.src_port;
    record.length    = hdr.length;
    stamp            = fuzz_stamp_new(&record, hdr.length);
    memcpy(fuzz_buf, &hdr, sizeof(hdr));
    fuzz_payload(fuzz_buf + sizeof(hdr), hdr.length, stamp);
    fuzz_note_sent(conn, &hdr, 1);
    fuzz_conn_write(conn, fuzz_buf, sizeof(hdr) + hdr.length);

    fuzz_client_name(FUZZ_CHECK_PEER + 1, peer->id, FUZZ_CHECK_PEER, 0);
    for (round = 0; round < 16; ++round) {
        fuzz_settle();
        while ((fuzz_client_recv(UINT32_MAX) > 0) || (fuzz_step() > 0)) {
        }
        if ((out == FUZZ_NO_STAMP) && (stamp != FUZZ_NO_STAMP) &&
            fuzz_stamps[stamp].seen) {
            out = fuzz_client_put(FUZZ_CHECK_TX, FUZZ_CHECK_PEER,
                                  FUZZ_CHECK_PEER + 1, 9000, 0);
            fuzz_client_doorbell();
        }
        for (i = FUZZ_CONNS + 1; i < FUZZ_ALL_CONNS; ++i) {
            if (fuzz_conns[i].fd < 0) {
                fuzz_conn_accept(&fuzz_conns[i], FUZZ_CHECK_PEER);
            }
        }
        fuzz_step_all();
        for (i = FUZZ_CONNS + 1; i < FUZZ_ALL_CONNS; ++i) {
            if ((fuzz_conns[i].fd >= 0) && fuzz_conns[i].got_hello &&
                !fuzz_conns[i].hello_sent) {
                fuzz_handshake_answer(&fuzz_conns[i], FUZZ_CHECK_PEER);
            }
        }
        if ((out != FUZZ_NO_STAMP) && fuzz_stamps[out].seen) {
            break;
        }
    }
    if ((stamp == FUZZ_NO_STAMP) || !fuzz_stamps[stamp].seen) {
        fuzz_fail("a well-formed peer's frame does not reach the client");
    } else if ((out == FUZZ_NO_STAMP) || !fuzz_stamps[out].seen) {
        fuzz_fail("the client's frame does not reach a well-formed peer");
    }
}

/* Whether the agent has let go of every vanished peer; why not, else. */
static const char *fuzz_agent_idle(void)
{
    srm_agent_t *agent = &fuzz_agent;
    srm_client_t *client;
    srm_node_t *node;
    unsigned i;
    int kind;

    for (i = 0; i < agent->num_links; ++i) {
        if (agent->links[i] != NULL) {
            return "a link outlives every peer";
        }
    }
    for (i = 0; i < agent->num_nodes; ++i) {
        node = agent->nodes[i];
        if (node->state == SRM_NODE_INVALID) {
            continue;
        } else if (agent->config.failover) {
            return "a node of a vanished peer is not invalid";
        }
        for (kind = 0; kind < SRM_CHANNEL_KINDS; ++kind) {
            if (srm_channel_queued(&node->chan[kind]) > 0) {
                return "a node of a vanished peer keeps frames";
            }
        }
    }
    client = srm_client_lookup(agent, fuzz_client.port);
    if (client == NULL) {
        fuzz_fail("the agent dropped the client");
    }
    if ((client->backlog_head != NULL) ||
        srm_ring_has_data(&fuzz_client.rx) ||
        (srm_ring_used(&fuzz_client.ctl->tx[FUZZ_CLIENT_TX]) > 0) ||
        (srm_ring_used(&fuzz_client.ctl->tx[FUZZ_CHECK_TX]) > 0)) {
        return "frames stuck in the client's rings or backlog";
    }
    return NULL;
}

static void fuzz_finish(int check)
{
    srm_agent_t *agent = &fuzz_agent;
    const char *busy   = "";
    srm_client_t *client;
    double until;
    unsigned idx;
    int i;

    for (i = 0; i < FUZZ_ALL_CONNS; ++i) {
        fuzz_conns[i].deaf = 0;
    }
    fuzz_settle();
    fuzz_client_recv(UINT32_MAX);
    if (check) {
        fuzz_check_peer();
    }
    for (i = 0; i < FUZZ_ALL_CONNS; ++i) {
        fuzz_conn_close(&fuzz_conns[i], i & 1);
    }

    /* Every peer is gone; what the agent dials finds nobody who answers.
     * A node the client names late fails a PEER_TIMEOUT later. */
    fuzz_winding_down = 1;
    until = fuzz_clock + (FUZZ_ALL_PEERS + 2) *
                         (agent->config.peer_timeout +
                          2 * agent->config.failover_timeout);
    while (fuzz_clock < until) {
        fuzz_clock += FUZZ_WIND_DOWN;
        fuzz_settle();
        while (fuzz_client_recv(UINT32_MAX) > 0) {
            fuzz_settle();
        }
        fuzz_check_agent();
        busy = fuzz_agent_idle();
        if (busy == NULL) {
            break;
        }
    }
    fuzz_winding_down = 0;
    if (busy != NULL) {
        fuzz_fail("%s", busy);
    }

    /* Its clients are told of the nodes that failed them. */
    client = srm_client_lookup(agent, fuzz_client.port);
    for (idx = 1; idx < SRM_SHM_MAX_NODES; ++idx) {
        if ((client->node_map[idx] != 0) &&
            (agent->nodes[client->node_map[idx] - 1]->state ==
             SRM_NODE_INVALID) &&
            (fuzz_client.ctl->nodes[idx].state == SRM_SHM_NODE_OK)) {
            fuzz_fail("node table entry %u: its node is invalid, the client "
                      "was not told", idx);
        }
    }

    fuzz_trace("done: %u stamps, %zu bytes, %lu dials redirected so far",
               fuzz_num_stamps, fuzz_bytes, fuzz_redirects);
    srm_agent_cleanup(agent);
    fuzz_lanes_unmap();
    fuzz_client_close();
    for (i = 0; i < FUZZ_ALL_PEERS; ++i) {
        close(fuzz_peers[i].listen_fd);
    }
}

/*
 * The agent stops with peers, frames and held frames still there: it says
 * BYE where it may, and frees everything (LeakSanitizer checks that).
 */
static void fuzz_stop_abruptly(void)
{
    int i;

    fuzz_client_recv(UINT32_MAX);
    srm_agent_cleanup(&fuzz_agent);
    for (i = 0; i < FUZZ_ALL_CONNS; ++i) {
        fuzz_conns[i].deaf = 0;
        fuzz_conn_read(&fuzz_conns[i]);
        fuzz_conn_close(&fuzz_conns[i], 1);
    }
    fuzz_lanes_unmap();
    fuzz_client_close();
    for (i = 0; i < FUZZ_ALL_PEERS; ++i) {
        close(fuzz_peers[i].listen_fd);
    }
}

static void fuzz_start(const uint8_t *data, size_t size)
{
    srm_agent_t *agent = &fuzz_agent;
    uint32_t hash      = 2166136261u;
    srm_wire_addr_t loopback;
    size_t n;
    int i;

    fuzz_clock = FUZZ_CLOCK_START;
    memset(agent, 0, sizeof(*agent));
    agent->config = fuzz_configs[fuzz_config_index(fuzz_mode)];
    snprintf(agent->socket_name, sizeof(agent->socket_name),
             "srm-fuzz-wire-%d", (int)getpid());
    if (srm_agent_init(agent) != UCS_OK) {
        fuzz_fail("cannot start the agent");
    }
    agent->node_id = FUZZ_AGENT_ID; /* fixed: inputs replay */
    fuzz_loopback(&loopback, agent->wire[0].port);
    if ((agent->wire[0].port == 0) ||
        (memcmp(&agent->wire[0], &loopback, sizeof(loopback)) != 0)) {
        fuzz_fail("the agent does not listen on 127.0.0.1");
    }

    memset(fuzz_peers, 0, sizeof(fuzz_peers));
    for (i = 0; i < FUZZ_ALL_PEERS; ++i) {
        fuzz_peers[i].id = fuzz_peer_ids[i];
        fuzz_listen(&fuzz_peers[i].listen_fd, &fuzz_peers[i].listen_port, 1);
    }
    for (i = 0; i < FUZZ_ALL_CONNS; ++i) {
        fuzz_conn_reset(&fuzz_conns[i]);
    }
    memset(&fuzz_scratch_chan, 0, sizeof(fuzz_scratch_chan));
    /* A stamp the input cannot forge: it would have to contain its hash. */
    for (n = 0; n < size; ++n) {
        hash = (hash ^ data[n]) * 16777619u;
    }
    fuzz_stamp_magic = hash;
    fuzz_num_stamps   = 0;
    fuzz_tainted      = 0;
    fuzz_lane_written = 0;
    fuzz_bytes       = 0;
    fuzz_client_attach();
}

/*
 * The cluster secret, in a file already unlinked (a crash leaves nothing
 * behind), which every agent reads again through /proc/self/fd.
 */
static void fuzz_write_secret(void)
{
    static const char secret[] = "fuzz_wire's cluster secret, 42 bytes long\n";
    char path[64];
    int fd;

    snprintf(path, sizeof(path), "/tmp/srm-fuzz-wire-%d.secret",
             (int)getpid());
    unlink(path);
    fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if ((fd < 0) ||
        (write(fd, secret, sizeof(secret) - 1) != sizeof(secret) - 1)) {
        fuzz_fail("cannot write %s", path);
    }
    unlink(path);
    snprintf(fuzz_secret_path, sizeof(fuzz_secret_path), "/proc/self/fd/%d",
             fd);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    const char *verbose = getenv("SRM_FUZZ_LOG");
    srm_agent_config_t *config;
    int mode, i;

    fuzz_verbose = (verbose != NULL);
    /* Every log line is formatted (its arguments are code too); SRM_FUZZ_LOG
     * shows them. */
    srm_log_init("fuzz_wire", SRM_LOG_DEBUG,
                 (verbose != NULL) ? stderr : fopen("/dev/null", "w"));

    /* Small queues and timeouts, so that limits and timers come quickly. */
    setenv("UCX_SRM_DEVICES", "lo", 1);
    setenv("UCX_SRM_TCP_PORT", "0", 1);
    setenv("UCX_SRM_NICE", "0", 1);
    setenv("UCX_SRM_CHANNEL_DEPTH", "64k", 1);
    setenv("UCX_SRM_LARGE_THRESH", "8k", 1);
    setenv("UCX_SRM_FAILOVER_TIMEOUT", "200ms", 1);
    setenv("UCX_SRM_PEER_TIMEOUT", "1s", 1);
    fuzz_write_secret();
    for (mode = 0; mode < 16; ++mode) {
        if ((mode & FUZZ_MODE_CHECK) != 0) {
            continue;
        }
        setenv("UCX_SRM_SECRET_FILE",
               (mode & FUZZ_MODE_SECRET) ? fuzz_secret_path : "", 1);
        setenv("UCX_SRM_FAILOVER", (mode & FUZZ_MODE_NO_FAILOVER) ? "n" : "y",
               1);
        setenv("UCX_SRM_PORT_BACKLOG",
               (mode & FUZZ_MODE_TINY_BACKLOG) ? "1k" : "16k", 1);
        config = &fuzz_configs[fuzz_config_index(mode)];
        if (srm_ucx_config_fill(config, srm_agent_config_table, "UCX_",
                                SRM_CONFIG_PREFIX) != UCS_OK) {
            fuzz_fail("cannot read the agent's configuration");
        }
    }
    if (srm_auth_load(&fuzz_auth, fuzz_secret_path) != UCS_OK) {
        fuzz_fail("cannot load the secret");
    }

    fuzz_listen(&fuzz_closed_fd, &fuzz_closed_port, 0);
    for (i = 0; i < FUZZ_ALL_CONNS; ++i) {
        fuzz_conns[i].in = malloc(FUZZ_IN_BUF);
        if (fuzz_conns[i].in == NULL) {
            fuzz_fail("no memory");
        }
        fuzz_conn_reset(&fuzz_conns[i]);
    }
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fuzz_input_t in = {.data = data, .size = size};
    int fds         = fuzz_count_fds();

    fuzz_mode = fuzz_u8(&in);
    fuzz_start(data, size);
    fuzz_run_ops(&in);
    if (fuzz_mode & FUZZ_MODE_ABRUPT) {
        fuzz_stop_abruptly();
    } else {
        fuzz_finish(fuzz_mode & FUZZ_MODE_CHECK);
    }
    if (fuzz_count_fds() != fds) {
        fuzz_fail("fd leak");
    }
    return 0;
}
