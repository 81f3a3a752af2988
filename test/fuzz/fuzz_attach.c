/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * libFuzzer target: the agent's client protocol, end to end. A real agent
 * (no wire to other nodes) serves an abstract socket of this process; each
 * input is a script for up to four client connections: raw packets,
 * ATTACH_REQ and STATUS_REQ with valid headers and fuzzed bodies, packets
 * carrying fds (MEM_REG_REQ and MEM_DEREG_REQ among them, sometimes with a
 * real memfd), half-closes and closes, and once attached, frames written
 * into the TX rings (AMs, and RMA requests between the regions other
 * connections registered, with valid or broken parts), flags raised and
 * ring indices broken. The agent runs
 * step by step in between (srm_agent_step). After each input all clients
 * are gone, and the agent must hold no client, queue, memory region or fd
 * more than before; every FUZZ_CHECK_EVERY inputs it must still attach a new client.
 *
 * Input: a sequence of ops; an op byte is kind (bits 0-2) and connection
 * (bits 3-4), followed by the op's own bytes (missing bytes read as 0).
 */
#define _GNU_SOURCE
#include <ucx_srm/agent/srm_agent.h>
#include <ucx_srm/common/srm_log.h>
#include <ucx_srm/common/srm_rma.h>
#include <ucx_srm/common/srm_rkey.h>

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

#define FUZZ_CONNS        4
#define FUZZ_MAX_STEPS    1000 /* agent passes before "it does not settle" */
#define FUZZ_CHECK_EVERY  16
#define FUZZ_MAX_PACKET   512
#define FUZZ_MEMFD_SIZE   65536

enum {
    FUZZ_OP_RAW,    /* one packet of fuzz bytes */
    FUZZ_OP_ATTACH, /* ATTACH_REQ: valid header, fuzzed geometry and name */
    FUZZ_OP_STATUS, /* STATUS_REQ: valid header, fuzzed flags */
    FUZZ_OP_FDS,    /* one of the above, MEM_REG_REQ or MEM_DEREG_REQ,
                       carrying fds the agent must close */
    FUZZ_OP_STEP,   /* a few agent passes, or until idle; replies are read */
    FUZZ_OP_CLOSE,  /* half-close or close; the next op reconnects */
    FUZZ_OP_TX,     /* attached: a frame into a TX ring, doorbell */
    FUZZ_OP_SHM,    /* attached: drain RX, raise flags, break indices */
};

/* What FUZZ_OP_FDS sends; the first three are also ops of their own, with
 * the same numbers. */
enum {
    FUZZ_MSG_RAW,
    FUZZ_MSG_ATTACH,
    FUZZ_MSG_STATUS,
    FUZZ_MSG_MEM_REG,   /* valid header, fuzzed address and length */
    FUZZ_MSG_MEM_DEREG, /* the last region this connection added, or fuzz */
    FUZZ_MSG_KINDS
};

typedef struct {
    int              fd;          /* -1: not connected */
    int              doorbell_fd;
    int              event_fd;
    uint32_t         port;
    uint32_t         key;
    srm_shm_layout_t layout;
    uint8_t          *shm;        /* NULL: not attached */
    srm_shm_ctl_t    *ctl;
    srm_ring_t       tx[SRM_SHM_MAX_TX_RINGS];
    unsigned         memfds_sent;   /* with any packet */
    unsigned         regions_added; /* MEM_REG_REPs with status 0 */
    uint64_t         reg_address;   /* the last MEM_REG_REQ's */
    uint64_t         reg_length;
    srm_rkey_t       region;        /* the last region the agent added */
} fuzz_conn_t;

typedef struct {
    const uint8_t *data;
    size_t        size;
} fuzz_input_t;

static srm_agent_t fuzz_agent;
static fuzz_conn_t fuzz_conns[FUZZ_CONNS];
static union {
    srm_attach_rep_t    attach;
    srm_status_rep_t    status;
    srm_mem_reg_rep_t   mem_reg;
    srm_mem_dereg_rep_t mem_dereg;
} fuzz_rep;

static void __attribute__((noreturn)) fuzz_fail(const char *what)
{
    fprintf(stderr, "fuzz_attach: %s\n", what);
    abort();
}

static uint8_t fuzz_u8(fuzz_input_t *in)
{
    if (in->size == 0) {
        return 0;
    }
    --in->size;
    return *in->data++;
}

/* Fills len bytes from the input, zeros past its end; returns bytes taken. */
static size_t fuzz_take(fuzz_input_t *in, void *buf, size_t len)
{
    size_t n = (len < in->size) ? len : in->size;

    memcpy(buf, in->data, n);
    memset((uint8_t*)buf + n, 0, len - n);
    in->data += n;
    in->size -= n;
    return n;
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

static void fuzz_conn_reset(fuzz_conn_t *conn)
{
    memset(conn, 0, sizeof(*conn));
    conn->fd          = -1;
    conn->doorbell_fd = -1;
    conn->event_fd    = -1;
}

static void fuzz_conn_close(fuzz_conn_t *conn)
{
    if (conn->shm != NULL) {
        srm_shm_unmap(&conn->layout, conn->shm);
    }
    if (conn->fd >= 0) {
        close(conn->fd);
    }
    if (conn->doorbell_fd >= 0) {
        close(conn->doorbell_fd);
    }
    if (conn->event_fd >= 0) {
        close(conn->event_fd);
    }
    fuzz_conn_reset(conn);
}

static void fuzz_conn_map(fuzz_conn_t *conn, const srm_attach_rep_t *rep,
                          const int *fds)
{
    srm_shm_ctl_t ctl;
    void *addr;
    uint32_t i;

    /* The geometry is the agent's to report: read it from the segment. */
    if ((pread(fds[0], &ctl, offsetof(srm_shm_ctl_t, pad), 0) !=
         offsetof(srm_shm_ctl_t, pad)) ||
        (srm_shm_layout_init(&conn->layout, ctl.num_tx_rings,
                             ctl.tx_ring_size, ctl.rx_ring_size) != 0) ||
        (conn->layout.total_size != rep->shm_size) ||
        (srm_shm_map(&conn->layout, fds[0], &addr) != 0)) {
        fuzz_fail("ATTACH_REP with a segment that does not match");
    }
    close(fds[0]);
    conn->doorbell_fd = fds[1];
    conn->event_fd    = fds[2];
    conn->port        = rep->port;
    conn->key         = rep->key;
    conn->shm         = addr;
    conn->ctl         = addr;
    for (i = 0; i < conn->layout.num_tx_rings; ++i) {
        srm_ring_init_producer(&conn->tx[i], &conn->ctl->tx[i],
                               conn->shm + conn->layout.tx_offset[i],
                               conn->layout.tx_ring_size);
    }
}

static void fuzz_conn_on_mem_reg_rep(fuzz_conn_t *conn)
{
    const srm_mem_reg_rep_t *rep = &fuzz_rep.mem_reg;

    if (rep->status != 0) {
        if (memchr(rep->error, '\0', sizeof(rep->error)) == NULL) {
            fuzz_fail("MEM_REG_REP with an unterminated error");
        }
    } else if (++conn->regions_added > conn->memfds_sent) {
        fuzz_fail("a region registered without a memfd");
    } else if ((rep->region_id == 0) || (rep->generation == 0)) {
        fuzz_fail("MEM_REG_REP with no region");
    } else {
        memset(&conn->region, 0, sizeof(conn->region));
        conn->region.node_id     = rep->node_id;
        conn->region.client_addr = conn->reg_address;
        conn->region.agent_addr  = rep->agent_addr;
        conn->region.length      = conn->reg_length;
        conn->region.region_id   = rep->region_id;
        conn->region.generation  = rep->generation;
        conn->region.token       = rep->token;
        memcpy(conn->region.rkey, rep->rkey, sizeof(conn->region.rkey));
    }
}

static void fuzz_conn_on_reply(fuzz_conn_t *conn, size_t len, int *fds,
                               int nfds)
{
    const srm_attach_rep_t *rep = &fuzz_rep.attach;

    if (srm_msg_hdr_check(&rep->hdr, len, SRM_MSG_STATUS_REP,
                          offsetof(srm_status_rep_t, text)) == 0) {
        if ((nfds != 0) || (fuzz_rep.status.length > SRM_PROTO_TEXT_MAX) ||
            (len != offsetof(srm_status_rep_t, text) +
                    fuzz_rep.status.length)) {
            fuzz_fail("malformed STATUS_REP");
        }
    } else if (srm_msg_hdr_check(&rep->hdr, len, SRM_MSG_MEM_REG_REP,
                                 sizeof(fuzz_rep.mem_reg)) == 0) {
        if ((nfds != 0) || (len != sizeof(fuzz_rep.mem_reg))) {
            fuzz_fail("malformed MEM_REG_REP");
        }
        fuzz_conn_on_mem_reg_rep(conn);
    } else if (srm_msg_hdr_check(&rep->hdr, len, SRM_MSG_MEM_DEREG_REP,
                                 sizeof(fuzz_rep.mem_dereg)) == 0) {
        if ((nfds != 0) || (len != sizeof(fuzz_rep.mem_dereg))) {
            fuzz_fail("malformed MEM_DEREG_REP");
        }
    } else if (srm_msg_hdr_check(&rep->hdr, len, SRM_MSG_ATTACH_REP,
                                 sizeof(*rep)) != 0) {
        fuzz_fail("the agent sent a malformed reply");
    } else if (rep->status != 0) {
        if (nfds != 0) {
            fuzz_fail("failed ATTACH_REP with fds");
        }
    } else if ((nfds != 3) || (conn->shm != NULL)) {
        fuzz_fail("ATTACH_REP without its 3 fds, or a second one");
    } else {
        fuzz_conn_map(conn, rep, fds);
        return;
    }
    while (nfds-- > 0) {
        close(fds[nfds]);
    }
}

static void fuzz_conn_read(fuzz_conn_t *conn)
{
    int fds[SRM_PROTO_MAX_FDS], nfds;
    ssize_t len;

    while (conn->fd >= 0) {
        nfds = SRM_PROTO_MAX_FDS;
        len  = srm_sock_recv(conn->fd, &fuzz_rep, sizeof(fuzz_rep), fds,
                             &nfds);
        if (len <= 0) {
            return; /* nothing more now, or the agent hung up */
        }
        fuzz_conn_on_reply(conn, (size_t)len, fds, nfds);
    }
}

/* One agent pass, then the replies. 0 if the agent found nothing to do. */
static unsigned fuzz_step(void)
{
    unsigned count = srm_agent_step(&fuzz_agent, 0);
    int i;

    for (i = 0; i < FUZZ_CONNS; ++i) {
        fuzz_conn_read(&fuzz_conns[i]);
    }
    return count;
}

static void fuzz_settle(void)
{
    int steps;

    for (steps = 0; fuzz_step() > 0; ++steps) {
        if (steps == FUZZ_MAX_STEPS) {
            fuzz_fail("the agent does not settle");
        }
    }
}

static void fuzz_conn_connect(fuzz_conn_t *conn)
{
    struct sockaddr_un addr;
    socklen_t addrlen;
    int steps = 0;

    if (conn->fd >= 0) {
        return;
    }
    conn->fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_NONBLOCK | SOCK_CLOEXEC,
                      0);
    if ((conn->fd < 0) ||
        (srm_sock_addr(fuzz_agent.socket_name, &addr, &addrlen) != 0)) {
        fuzz_fail("cannot create a client socket");
    }
    /* A full listen queue: let the agent accept, then retry. */
    while (connect(conn->fd, (struct sockaddr*)&addr, addrlen) != 0) {
        if ((errno != EAGAIN) || (steps++ == FUZZ_MAX_STEPS)) {
            fuzz_fail("cannot connect to the agent");
        }
        fuzz_step();
    }
}

static void fuzz_conn_send(fuzz_conn_t *conn, const void *buf, size_t len,
                           const int *fds, int nfds)
{
    int steps;

    fuzz_conn_connect(conn);
    for (steps = 0; steps < FUZZ_MAX_STEPS; ++steps) {
        if (srm_sock_send(conn->fd, buf, len, fds, nfds) >= 0) {
            return;
        } else if (errno != EAGAIN) {
            return; /* the agent dropped this connection */
        }
        fuzz_step();
    }
    fuzz_fail("the agent does not read its clients");
}

/* A valid header, but sometimes of another version or type. */
static void fuzz_header(fuzz_input_t *in, srm_msg_hdr_t *hdr,
                        srm_msg_type_t type)
{
    uint8_t b = fuzz_u8(in);

    srm_msg_hdr_init(hdr, type);
    if (b >= 248) {
        hdr->version = b - 248;
    } else if (b >= 240) {
        hdr->type = b - 240;
    }
}

/* The packet length: mostly the message's own, sometimes short or long. */
static size_t fuzz_length(fuzz_input_t *in, size_t len)
{
    uint8_t b = fuzz_u8(in);

    return (b < 200) ? len : (size_t)(b - 200) * 2;
}

/* A control message into buf (FUZZ_MAX_PACKET bytes); returns its length. */
static size_t fuzz_build(fuzz_input_t *in, fuzz_conn_t *conn, int kind,
                         uint8_t *buf)
{
    srm_attach_req_t *attach       = (srm_attach_req_t*)buf;
    srm_status_req_t *status       = (srm_status_req_t*)buf;
    srm_mem_reg_req_t *mem_reg     = (srm_mem_reg_req_t*)buf;
    srm_mem_dereg_req_t *mem_dereg = (srm_mem_dereg_req_t*)buf;
    uint8_t b;

    memset(buf, 0, FUZZ_MAX_PACKET);
    switch (kind) {
    case FUZZ_MSG_ATTACH:
        fuzz_header(in, &attach->hdr, SRM_MSG_ATTACH_REQ);
        attach->num_tx_rings = fuzz_u8(in) % 20;
        /* 2^16..2^31: both sides of the valid 2^20..2^30 */
        attach->tx_ring_size = 1ull << (16 + fuzz_u8(in) % 16);
        attach->rx_ring_size = 1ull << (16 + fuzz_u8(in) % 16);
        attach->reserved     = fuzz_u8(in);
        fuzz_take(in, attach->name, fuzz_u8(in) % (SRM_PROTO_NAME_MAX + 1));
        return fuzz_length(in, sizeof(*attach));
    case FUZZ_MSG_STATUS:
        fuzz_header(in, &status->hdr, SRM_MSG_STATUS_REQ);
        status->flags    = fuzz_u8(in);
        status->reserved = fuzz_u8(in);
        return fuzz_length(in, sizeof(*status));
    case FUZZ_MSG_MEM_REG:
        fuzz_header(in, &mem_reg->hdr, SRM_MSG_MEM_REG_REQ);
        mem_reg->address = (uint64_t)fuzz_u8(in) << (fuzz_u8(in) % 64);
        /* 0..2x the memfd, in 1 KiB steps, or anything */
        b               = fuzz_u8(in);
        mem_reg->length = (b < 128) ? (uint64_t)b * 1024 :
                          (uint64_t)fuzz_u8(in) << (b % 64);
        conn->reg_address = mem_reg->address;
        conn->reg_length  = mem_reg->length;
        return fuzz_length(in, sizeof(*mem_reg));
    case FUZZ_MSG_MEM_DEREG:
        fuzz_header(in, &mem_dereg->hdr, SRM_MSG_MEM_DEREG_REQ);
        b = fuzz_u8(in);
        if (b & 1) {
            mem_dereg->region_id  = conn->region.region_id;
            mem_dereg->generation = conn->region.generation + (b >> 7);
        } else {
            mem_dereg->region_id  = fuzz_u8(in);
            mem_dereg->generation = fuzz_u8(in);
        }
        return fuzz_length(in, sizeof(*mem_dereg));
    default:
        b = fuzz_u8(in);
        return fuzz_take(in, buf, b);
    }
}

/* A memfd like the md's: sealed against shrinking, FUZZ_MEMFD_SIZE long. */
static int fuzz_memfd(void)
{
    int fd = memfd_create("fuzz-region", MFD_CLOEXEC | MFD_ALLOW_SEALING);

    if ((fd < 0) || (ftruncate(fd, FUZZ_MEMFD_SIZE) != 0) ||
        (fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK) != 0)) {
        fuzz_fail("cannot create a memfd");
    }
    return fd;
}

static void fuzz_op_fds(fuzz_input_t *in, fuzz_conn_t *conn, uint8_t *buf)
{
    uint8_t b    = fuzz_u8(in);
    uint8_t how  = fuzz_u8(in);
    int nfds     = 1 + (b & 3);
    int kind     = (b >> 2) % FUZZ_MSG_KINDS;
    size_t len;
    int fds[SRM_PROTO_MAX_FDS];
    int i;

    fuzz_conn_connect(conn);
    len = fuzz_build(in, conn, kind, buf);
    for (i = 0; i < nfds; ++i) {
        /* Sometimes the connection's own socket: it must survive that. */
        if ((how & 1) && (i == 0)) {
            fds[i] = dup(conn->fd);
        } else if ((how & 2) && (i == 0)) {
            fds[i] = fuzz_memfd();
        } else {
            fds[i] = eventfd(0, EFD_CLOEXEC);
        }
        if (fds[i] < 0) {
            fuzz_fail("cannot create an fd to pass");
        }
    }
    conn->memfds_sent += ((how & 3) == 2);
    fuzz_conn_send(conn, buf, len, fds, nfds);
    for (i = 0; i < nfds; ++i) {
        close(fds[i]);
    }
}

static void fuzz_op_step(fuzz_input_t *in)
{
    int steps = fuzz_u8(in) & 7;

    if (steps == 0) {
        fuzz_settle();
    }
    while (steps-- > 0) {
        fuzz_step();
    }
}

static void fuzz_op_close(fuzz_input_t *in, fuzz_conn_t *conn)
{
    if (fuzz_u8(in) & 1) {
        fuzz_conn_close(conn);
    } else if (conn->fd >= 0) {
        shutdown(conn->fd, SHUT_WR);
    }
}

/* A place inside region for a transfer: offset and length from the fuzzed
 * ones, which may run a few bytes past its end. */
/* The region's length, which a reply matched to another request may make
 * anything, bounded so that the arithmetic below cannot wrap. */
static uint64_t fuzz_rma_span(const srm_rkey_t *region)
{
    return (region->length < (1ull << 40)) ? region->length : (1ull << 40);
}

static uint64_t fuzz_rma_place(const srm_rkey_t *region, uint64_t fuzzed)
{
    return region->client_addr + fuzzed % (fuzz_rma_span(region) + 1);
}

/* Regions come over a connection of their own, as the md's do: those of
 * connection i are used by the attached connection i ^ 2. */
static const srm_rkey_t *fuzz_region_of(const fuzz_conn_t *conn)
{
    return &fuzz_conns[(conn - fuzz_conns) ^ 2].region;
}

/*
 * Makes the RMA request in payload (fuzzed bytes) name the last region
 * registered beside the connection as its local memory and the one beside
 * dst as its target, with that one's key; its op, offsets and length stay
 * derived from the fuzzed ones.
 */
static void fuzz_rma_fix(const fuzz_conn_t *conn, const fuzz_conn_t *dst,
                         uint8_t *payload)
{
    const srm_rkey_t *local  = fuzz_region_of(conn);
    const srm_rkey_t *remote = fuzz_region_of(dst);
    srm_rma_req_t req;
    uint64_t room;

    memcpy(&req, payload, sizeof(req));
    if (!(req.op & 0x80)) {
        req.op = SRM_RMA_PUT + (req.op & 1);
    }
    req.local_region     = local->region_id;
    req.local_generation = local->generation;
    req.local_addr       = fuzz_rma_place(local, req.local_addr);
    req.remote_addr      = fuzz_rma_place(remote, req.remote_addr);
    room = fuzz_rma_span(local) - (req.local_addr - local->client_addr);
    req.length = req.length % (room + 4);
    srm_rkey_pack(remote, &req.rkey);
    memcpy(payload, &req, sizeof(req));
}

static void fuzz_op_tx(fuzz_input_t *in, fuzz_conn_t *conn)
{
    const uint64_t one = 1;
    uint8_t ring_b     = fuzz_u8(in);
    uint8_t fix        = fuzz_u8(in);
    fuzz_conn_t *dst   = &fuzz_conns[(fix >> 5) & (FUZZ_CONNS - 1)];
    uint8_t payload[UINT8_MAX];
    size_t record_size, len;
    srm_frame_hdr_t hdr, *slot;
    srm_ring_t *ring;
    int i;

    fuzz_take(in, &hdr, sizeof(hdr));
    len = fuzz_u8(in);
    memset(payload, 0, sizeof(payload));
    fuzz_take(in, payload, len);
    if (conn->shm == NULL) {
        return;
    }

    /* Each clear bit of fix makes one part of the header valid. */
    if (!(fix & 1)) {
        hdr.magic   = SRM_FRAME_MAGIC;
        hdr.version = SRM_FRAME_VERSION;
    }
    if (!(fix & 2)) {
        hdr.type = (hdr.type & 1) ? SRM_FRAME_RMA : SRM_FRAME_AM;
    }
    if (!(fix & 4)) {
        hdr.dst_port = dst->port;
        hdr.dst_key  = dst->key;
    }
    if (!(fix & 8)) {
        hdr.dst_node = 0;
    }
    if (!(fix & 16)) {
        hdr.length = (hdr.type == SRM_FRAME_RMA) ? sizeof(srm_rma_req_t) :
                     hdr.length % (SRM_FRAME_MAX_PAYLOAD + 1);
    }
    if ((hdr.type == SRM_FRAME_RMA) && !(fix & 128)) {
        fuzz_rma_fix(conn, dst, payload);
        len = (len > sizeof(srm_rma_req_t)) ? len : sizeof(srm_rma_req_t);
    }

    ring        = &conn->tx[(ring_b & 15) % conn->layout.num_tx_rings];
    record_size = (hdr.length <= SRM_FRAME_MAX_PAYLOAD) ?
                  srm_frame_record_size(hdr.length) : sizeof(hdr);
    if (len > record_size - sizeof(hdr)) {
        len = record_size - sizeof(hdr);
    }
    /* A burst of up to 16 copies fills RX rings and backlogs quickly. */
    for (i = 0; i <= (ring_b >> 4); ++i) {
        if (srm_ring_reserve(ring, record_size, &slot) != SRM_RING_OK) {
            break;
        }
        memcpy(slot, &hdr, sizeof(hdr));
        memcpy(slot + 1, payload, len); /* the rest keeps what was there */
        srm_ring_commit(ring, record_size);
    }
    if (write(conn->doorbell_fd, &one, sizeof(one)) < 0) {
        /* full counter: the agent has a wakeup pending anyway */
    }
}

static void fuzz_op_shm(fuzz_input_t *in, fuzz_conn_t *conn)
{
    uint8_t b = fuzz_u8(in);
    uint64_t value, count;

    fuzz_take(in, &value, sizeof(value));
    if (conn->shm == NULL) {
        return;
    }
    switch (b & 7) {
    case 0: /* consume everything in RX, as a client would */
        srm_store_release(&conn->ctl->rx.tail,
                          srm_load_acquire(&conn->ctl->rx.head));
        if (read(conn->event_fd, &count, sizeof(count)) < 0) {
            (void)count; /* not signalled */
        }
        break;
    case 1:
        srm_shm_flag_raise(&conn->ctl->client_sleeping);
        break;
    case 2:
        srm_shm_flag_raise(&conn->ctl->tx_space_wanted);
        break;
    case 3:
        srm_store_release(&conn->ctl->rx.tail, value);
        break;
    case 4:
        srm_store_release(&conn->ctl->tx[(b >> 3) %
                                         conn->layout.num_tx_rings].head,
                          value);
        break;
    case 5:
        srm_store_release(&conn->ctl->rx.tail,
                          srm_load_acquire(&conn->ctl->rx.tail) + value % 64);
        break;
    default:
        memcpy(&conn->ctl->nodes[value % SRM_SHM_MAX_NODES], &value,
               sizeof(value));
        break;
    }
}

static void fuzz_run_ops(fuzz_input_t *in)
{
    static uint8_t buf[FUZZ_MAX_PACKET];
    fuzz_conn_t *conn;
    uint8_t op;
    size_t len;

    while (in->size > 0) {
        op   = fuzz_u8(in);
        conn = &fuzz_conns[(op >> 3) & (FUZZ_CONNS - 1)];
        switch (op & 7) {
        case FUZZ_OP_RAW:
        case FUZZ_OP_ATTACH:
        case FUZZ_OP_STATUS:
            len = fuzz_build(in, conn, op & 7, buf);
            fuzz_conn_send(conn, buf, len, NULL, 0);
            break;
        case FUZZ_OP_FDS:
            fuzz_op_fds(in, conn, buf);
            break;
        case FUZZ_OP_STEP:
            fuzz_op_step(in);
            break;
        case FUZZ_OP_CLOSE:
            fuzz_op_close(in, conn);
            break;
        case FUZZ_OP_TX:
            fuzz_op_tx(in, conn);
            break;
        default:
            fuzz_op_shm(in, conn);
            break;
        }
    }
}

/* Every client gone: the agent must have let go of all of them. */
static void fuzz_finish(void)
{
    srm_agent_t *agent = &fuzz_agent;
    unsigned i;

    for (i = 0; i < FUZZ_CONNS; ++i) {
        fuzz_conn_close(&fuzz_conns[i]);
    }
    fuzz_settle();
    for (i = 0; i < agent->num_slots; ++i) {
        if (agent->slots[i] != NULL) {
            fuzz_fail("a client outlives its connection");
        }
    }
    if ((agent->num_clients != 0) || (agent->num_failed != 0) ||
        (agent->sched.count != 0) || (agent->notify_list != NULL) ||
        agent->stop) {
        fuzz_fail("agent state left behind by departed clients");
    }
    if ((agent->regions.count != 0) || (agent->regions.bytes != 0)) {
        fuzz_fail("a memory region outlives its connection");
    }
}

static void fuzz_check_attach(void)
{
    fuzz_conn_t *conn = &fuzz_conns[0];
    srm_attach_req_t req;

    memset(&req, 0, sizeof(req));
    srm_msg_hdr_init(&req.hdr, SRM_MSG_ATTACH_REQ);
    req.num_tx_rings = 1;
    req.tx_ring_size = 1 << 20;
    req.rx_ring_size = 1 << 20;
    snprintf(req.name, sizeof(req.name), "fuzz-check");
    fuzz_conn_send(conn, &req, sizeof(req), NULL, 0);
    fuzz_settle();
    if (conn->shm == NULL) {
        fuzz_fail("the agent no longer attaches a well-formed client");
    }
    fuzz_finish();
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    srm_agent_t *agent = &fuzz_agent;
    const char *verbose = getenv("SRM_FUZZ_LOG");
    ucs_status_t status;
    int i;

    /* The defaults, without a wire, a priority change or a big backlog. */
    setenv("UCX_SRM_DEVICES", "none", 1);
    setenv("UCX_SRM_NICE", "0", 1);
    setenv("UCX_SRM_PORT_BACKLOG", "64k", 1);
    status = srm_ucx_config_fill(&agent->config, srm_agent_config_table,
                                 "UCX_", SRM_CONFIG_PREFIX);
    if (status != UCS_OK) {
        fuzz_fail("cannot read the agent's configuration");
    }

    /* SRM_FUZZ_LOG=1: the agent's debug log on stderr; else none at all. */
    srm_log_init("fuzz_attach", (verbose != NULL) ? SRM_LOG_DEBUG :
                                                    SRM_LOG_ERROR,
                 (verbose != NULL) ? stderr : fopen("/dev/null", "w"));
    snprintf(agent->socket_name, sizeof(agent->socket_name), "srm-fuzz-%d",
             (int)getpid());
    if (srm_agent_init(agent) != UCS_OK) {
        fuzz_fail("cannot start the agent");
    }
    for (i = 0; i < FUZZ_CONNS; ++i) {
        fuzz_conn_reset(&fuzz_conns[i]);
    }
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static unsigned long runs;
    fuzz_input_t in = {.data = data, .size = size};
    int fds = fuzz_count_fds();

    fuzz_run_ops(&in);
    fuzz_finish();
    if ((runs++ % FUZZ_CHECK_EVERY) == 0) {
        fuzz_check_attach();
    }
    if (fuzz_count_fds() != fds) {
        fuzz_fail("fd leak");
    }
    return 0;
}
