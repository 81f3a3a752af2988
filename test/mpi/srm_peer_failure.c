/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * srm_peer_failure: a host disappears; UCX's peer error mode must say so.
 *
 * MPI only launches the ranks and exchanges their UCP worker addresses
 * (MPI_Allgather); everything else is UCP: one context (UCP_FEATURE_AM),
 * one worker, and an endpoint to every other rank created with
 * UCP_ERR_HANDLING_MODE_PEER and an error callback that records the time
 * (CLOCK_REALTIME) and the status. Open MPI 4.1's pml ucx creates its
 * endpoints without an error mode, and UCX aborts a process whose
 * endpoint fails unhandled: run this program with a pml that keeps no UCX
 * endpoints (--mca pml ob1).
 *
 * Every rank streams active messages to every other rank (window of
 * WINDOW messages per peer, acknowledged by the receiver every ACK_EVERY;
 * payload 0..1 KB, checked). The test then cuts DEAD_HOST off the network
 * and writes the time it did so (seconds since the epoch, CLOCK_REALTIME)
 * to CUT_FILE. Each rank expects an error callback for every endpoint to
 * a rank on the other side of the cut (ranks on DEAD_HOST: for every
 * endpoint that leaves DEAD_HOST) and none for the others, and keeps
 * exchanging messages with the ranks on its side: after the last expected
 * error it wants MIN_AFTER more messages from each of them.
 *
 * When a rank has all that, it tells its peers (DONE); when all its peers
 * on its side are done it prints its result line and says BYE; when they
 * all said BYE (or 5 s later) it exits with _exit(0), without MPI_Finalize
 * (which would wait for the ranks that are gone). A rank still incomplete
 * LIMIT seconds after the cut prints its result anyway and exits 1.
 *
 * Usage: srm_peer_failure -d DEAD_HOST -c CUT_FILE [-o OUT_DIR]
 *                         [-m MIN_AFTER] [-t LIMIT_S] [-T MAX_S]
 *   -o  also write the result line to OUT_DIR/result.RANK (the standard
 *       output of ranks on a host cut off never reaches mpirun)
 *   -m  messages wanted from every live peer after the last error (500)
 *   -t  seconds after the cut to give up (20)
 *   -T  seconds after the start to give up if no cut comes (300)
 *
 * Prints "ready rank R host H peers N" once messages flow with every peer,
 * then one line
 *   result rank R host H dead_eps D errors E status S detect_ms MIN MAX
 *   closed C live_eps L live_errors X send_errors Y during_min A
 *   after_min B gaps G corrupt K sent N received M state complete|timeout
 * detect_ms: error time minus cut time over the endpoints expected to fail
 * (-1 when missing); closed: of those, closed with UCP_EP_CLOSE_FLAG_FORCE;
 * live_errors: error callbacks on endpoints that should have lived;
 * send_errors: sends to live peers that failed; during_min/after_min: the
 * fewest messages received from a live peer between the cut and the last
 * error / since the last error.
 */
#include <mpi.h>
#include <ucp/api/ucp.h>

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define AM_DATA     11
#define AM_CTRL     12
#define WINDOW      64
#define ACK_EVERY   16
#define MAX_PAYLOAD 1024
#define READY_MSGS  100

enum {
    CTRL_DONE = 1, /* the sender has what it wants */
    CTRL_BYE  = 2  /* the sender printed its result and leaves */
};

typedef struct {
    uint32_t src;
    uint32_t flags; /* AM_CTRL: CTRL_DONE | CTRL_BYE */
    uint64_t value; /* AM_DATA: sequence number; AM_CTRL: messages received */
} msg_hdr_t;

typedef struct {
    int       busy; /* a send from this slot is in progress */
    int       peer;
    msg_hdr_t hdr;
    uint8_t   data[MAX_PAYLOAD];
} slot_t;

typedef struct {
    ucp_ep_h     ep;
    int          expect_dead; /* on the other side of the cut */
    int          failed;      /* the error callback came */
    ucs_status_t err_status;
    double       err_time;
    void         *close_req;
    int          closing, closed;
    /* sending */
    uint64_t     sent, acked;
    unsigned long long send_errors;
    slot_t       slot[WINDOW];
    slot_t       ctrl;
    uint64_t     ctrl_count;  /* "received" in the last ctrl sent */
    uint32_t     ctrl_flags;  /* flags in the last ctrl sent */
    double       ctrl_time;
    /* receiving */
    uint64_t     received, expected_seq;
    unsigned long long gaps, corrupt;
    uint64_t     at_cut, at_detect;
    uint32_t     peer_flags;
} peer_t;

static peer_t *peers;
static int rank, size;

static double now_realtime(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_REALTIME, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static size_t payload_length(int src, uint64_t seq)
{
    return (size_t)((seq * 2654435761u + (uint64_t)src * 40503u) %
                    (MAX_PAYLOAD + 1));
}

static uint8_t payload_byte(int src, uint64_t seq, size_t i)
{
    return (uint8_t)(seq * 31u + (uint64_t)src + i * 7u);
}

static void on_ep_error(void *arg, ucp_ep_h ep, ucs_status_t status)
{
    peer_t *p = arg;

    if (!p->failed) {
        p->failed     = 1;
        p->err_status = status;
        p->err_time   = now_realtime();
    }
}

static void on_send_done(void *request, ucs_status_t status, void *user_data)
{
    slot_t *s = user_data;

    s->busy = 0;
    if (status != UCS_OK) {
        peers[s->peer].send_errors++;
    }
    ucp_request_free(request);
}

static ucs_status_t on_data(void *arg, const void *header,
                            size_t header_length, void *data, size_t length,
                            const ucp_am_recv_param_t *param)
{
    const uint8_t *bytes = data;
    msg_hdr_t hdr;
    peer_t *p;
    size_t i;

    if (header_length != sizeof(hdr)) {
        return UCS_OK; /* cannot tell whose: counted nowhere, caught by gaps */
    }
    memcpy(&hdr, header, sizeof(hdr));
    if ((int)hdr.src >= size) {
        return UCS_OK;
    }
    p = &peers[hdr.src];
    p->received++;
    if (hdr.value != p->expected_seq) {
        p->gaps++;
    }
    p->expected_seq = hdr.value + 1;
    /* Sent eager: the data is here (a rendezvous would be a surprise). */
    if ((param->recv_attr & UCP_AM_RECV_ATTR_FLAG_RNDV) ||
        (length != payload_length(hdr.src, hdr.value))) {
        p->corrupt++;
        return UCS_OK;
    }
    for (i = 0; i < length; ++i) {
        if (bytes[i] != payload_byte(hdr.src, hdr.value, i)) {
            p->corrupt++;
            break;
        }
    }
    return UCS_OK;
}

static ucs_status_t on_ctrl(void *arg, const void *header,
                            size_t header_length, void *data, size_t length,
                            const ucp_am_recv_param_t *param)
{
    msg_hdr_t hdr;
    peer_t *p;

    if (header_length != sizeof(hdr)) {
        return UCS_OK;
    }
    memcpy(&hdr, header, sizeof(hdr));
    if ((int)hdr.src >= size) {
        return UCS_OK;
    }
    p = &peers[hdr.src];
    if (hdr.value > p->acked) {
        p->acked = hdr.value;
    }
    p->peer_flags |= hdr.flags;
    return UCS_OK;
}

static void set_am_handler(ucp_worker_h worker, unsigned id,
                           ucp_am_recv_callback_t cb)
{
    ucp_am_handler_param_t param;

    memset(&param, 0, sizeof(param));
    param.field_mask = UCP_AM_HANDLER_PARAM_FIELD_ID |
                       UCP_AM_HANDLER_PARAM_FIELD_CB;
    param.id         = id;
    param.cb         = cb;
    if (ucp_worker_set_am_recv_handler(worker, &param) != UCS_OK) {
        fprintf(stderr, "rank %d: ucp_worker_set_am_recv_handler failed\n",
                rank);
        MPI_Abort(MPI_COMM_WORLD, 3);
    }
}

/* Sends the slot's header and len bytes of data; 0 when started or done. */
static int send_slot(peer_t *p, unsigned am_id, slot_t *s, size_t len)
{
    ucp_request_param_t param;
    ucs_status_ptr_t req;

    memset(&param, 0, sizeof(param));
    param.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK |
                         UCP_OP_ATTR_FIELD_USER_DATA |
                         UCP_OP_ATTR_FIELD_FLAGS;
    param.cb.send      = on_send_done;
    param.user_data    = s;
    param.flags        = UCP_AM_SEND_FLAG_EAGER;
    s->busy            = 1;
    req = ucp_am_send_nbx(p->ep, am_id, &s->hdr, sizeof(s->hdr), s->data, len,
                          &param);
    if (req == NULL) {
        s->busy = 0;
    } else if (UCS_PTR_IS_ERR(req)) {
        s->busy = 0;
        p->send_errors++;
        return -1;
    }
    return 0;
}

static void send_data(peer_t *p, int *did)
{
    slot_t *s;
    size_t len, i;

    while ((p->sent - p->acked) < WINDOW) {
        s = &p->slot[p->sent % WINDOW];
        if (s->busy) {
            break;
        }
        len          = payload_length(rank, p->sent);
        s->hdr.src   = (uint32_t)rank;
        s->hdr.flags = 0;
        s->hdr.value = p->sent;
        for (i = 0; i < len; ++i) {
            s->data[i] = payload_byte(rank, p->sent, i);
        }
        if (send_slot(p, AM_DATA, s, len) != 0) {
            break;
        }
        p->sent++;
        *did = 1;
    }
}

static void send_ctrl(peer_t *p, uint32_t flags, double now, int *did)
{
    if (p->ctrl.busy) {
        return;
    }
    if (((p->received - p->ctrl_count) < ACK_EVERY) &&
        (flags == p->ctrl_flags) &&
        !((p->received > p->ctrl_count) && (now - p->ctrl_time > 0.01))) {
        return;
    }
    p->ctrl.hdr.src   = (uint32_t)rank;
    p->ctrl.hdr.flags = flags;
    p->ctrl.hdr.value = p->received;
    if (send_slot(p, AM_CTRL, &p->ctrl, 0) == 0) {
        p->ctrl_count = p->received;
        p->ctrl_flags = flags;
        p->ctrl_time  = now;
        *did          = 1;
    }
}

/* A failed endpoint is closed (forced) from the main loop, not from its
 * error callback; its close must not hang either. */
static void close_failed(peer_t *p)
{
    ucp_request_param_t param;
    ucs_status_t status;

    if (!p->closing) {
        memset(&param, 0, sizeof(param));
        param.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS;
        param.flags        = UCP_EP_CLOSE_FLAG_FORCE;
        p->close_req       = ucp_ep_close_nbx(p->ep, &param);
        p->closing         = 1;
        p->ep              = NULL;
        if (p->close_req == NULL) {
            p->closed = 1;
        } else if (UCS_PTR_IS_ERR(p->close_req)) {
            p->closed    = 1; /* closed, with an error: still not a hang */
            p->close_req = NULL;
        }
        return;
    }
    if (p->close_req != NULL) {
        status = ucp_request_check_status(p->close_req);
        if (status != UCS_INPROGRESS) {
            ucp_request_free(p->close_req);
            p->close_req = NULL;
            p->closed    = 1;
        }
    }
}

static int read_cut_file(const char *path, double *cut)
{
    FILE *f;
    int ok;

    if (access(path, R_OK) != 0) {
        return 0;
    }
    f = fopen(path, "r");
    if (f == NULL) {
        return 0;
    }
    ok = (fscanf(f, "%lf", cut) == 1) && (*cut > 0);
    fclose(f);
    return ok;
}

static void status_word(ucs_status_t status, char *buf, size_t max)
{
    size_t i;

    snprintf(buf, max, "%s", ucs_status_string(status));
    for (i = 0; buf[i] != '\0'; ++i) {
        if (buf[i] == ' ') {
            buf[i] = '_';
        }
    }
}

static void print_result(const char *host, const char *out_dir, double cut,
                         int detect_seen, const char *state)
{
    uint64_t detected;
    unsigned long long during_min = ~0ull, after_min = ~0ull, gaps = 0;
    unsigned long long corrupt = 0, sent = 0, received = 0, send_errors = 0;
    int dead_eps = 0, errors = 0, closed = 0, live_eps = 0, live_errors = 0;
    double dmin = -1, dmax = -1, d;
    char status[64] = "none", line[768], path[4096], tmp[4200];
    ucs_status_t first = UCS_OK;
    FILE *f;
    peer_t *p;
    int i;

    for (i = 0; i < size; ++i) {
        p = &peers[i];
        if (i == rank) {
            continue;
        }
        sent     += p->sent;
        received += p->received;
        gaps     += p->gaps;
        corrupt  += p->corrupt;
        if (p->expect_dead) {
            dead_eps++;
            if (!p->failed) {
                continue;
            }
            errors++;
            closed += p->closed;
            if (first == UCS_OK) {
                first = p->err_status;
            } else if (p->err_status != first) {
                first = UCS_ERR_LAST; /* printed as "mixed" */
            }
            if (cut > 0) {
                d = (p->err_time - cut) * 1e3;
                if ((dmin < 0) || (d < dmin)) {
                    dmin = d;
                }
                if (d > dmax) {
                    dmax = d;
                }
            }
        } else {
            live_eps++;
            live_errors += p->failed;
            send_errors += p->send_errors;
            /* no detection yet: everything since the cut is "during" */
            detected     = !detect_seen ? p->received :
                           (p->at_detect > p->at_cut) ? p->at_detect :
                           p->at_cut;
            if ((detected - p->at_cut) < during_min) {
                during_min = detected - p->at_cut;
            }
            if ((p->received - detected) < after_min) {
                after_min = p->received - detected;
            }
        }
    }
    if (errors < dead_eps) {
        dmax = -1; /* one is missing: no maximum */
    }
    if (live_eps == 0) {
        during_min = after_min = 0;
    }
    if (first == UCS_ERR_LAST) {
        snprintf(status, sizeof(status), "mixed");
    } else if (errors > 0) {
        status_word(first, status, sizeof(status));
    }
    snprintf(line, sizeof(line),
             "result rank %d host %s dead_eps %d errors %d status %s "
             "detect_ms %.0f %.0f closed %d live_eps %d live_errors %d "
             "send_errors %llu during_min %llu after_min %llu gaps %llu "
             "corrupt %llu sent %llu received %llu state %s\n",
             rank, host, dead_eps, errors, status, dmin, dmax, closed,
             live_eps, live_errors, send_errors, during_min, after_min, gaps,
             corrupt, sent, received, state);
    fputs(line, stdout);
    fflush(stdout);
    if (out_dir == NULL) {
        return;
    }
    snprintf(path, sizeof(path), "%s/result.%d", out_dir, rank);
    snprintf(tmp, sizeof(tmp), "%s.tmp", path);
    f = fopen(tmp, "w");
    if (f == NULL) {
        fprintf(stderr, "rank %d: %s: %s\n", rank, tmp, strerror(errno));
        return;
    }
    fputs(line, f);
    if ((fclose(f) != 0) || (rename(tmp, path) != 0)) {
        fprintf(stderr, "rank %d: %s: %s\n", rank, path, strerror(errno));
    }
}

static void usage(const char *prog)
{
    if (rank == 0) {
        fprintf(stderr, "usage: %s -d DEAD_HOST -c CUT_FILE [-o OUT_DIR] "
                "[-m MIN_AFTER] [-t LIMIT_S] [-T MAX_S]\n", prog);
    }
    MPI_Abort(MPI_COMM_WORLD, 2);
}

int main(int argc, char **argv)
{
    const char *dead_host = NULL, *cut_file = NULL, *out_dir = NULL;
    unsigned long long min_after = 500;
    double limit = 20, max_time = 300, start, now, cut = 0;
    double last_check = 0, detect_time = 0, bye_time = 0;
    int opt, i, k, len, did, idle = 0, ready = 0, expected = 0, failed;
    int local_done, all_done, all_bye, printed = 0, on_dead, live_failed;
    char host[MPI_MAX_PROCESSOR_NAME], *hosts;
    int *addr_lens, *displs, total;
    ucp_worker_attr_t wattr;
    ucp_worker_params_t wparams;
    ucp_ep_params_t eparams;
    ucp_config_t *config;
    ucp_context_h context;
    ucp_worker_h worker;
    ucp_params_t params;
    uint32_t flags;
    char *addrs;
    peer_t *p;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    while ((opt = getopt(argc, argv, "d:c:o:m:t:T:")) != -1) {
        switch (opt) {
        case 'd': dead_host = optarg; break;
        case 'c': cut_file  = optarg; break;
        case 'o': out_dir   = optarg; break;
        case 'm': min_after = strtoull(optarg, NULL, 0); break;
        case 't': limit     = atof(optarg); break;
        case 'T': max_time  = atof(optarg); break;
        default:  usage(argv[0]);
        }
    }
    if ((dead_host == NULL) || (cut_file == NULL) || (size < 2)) {
        usage(argv[0]);
    }

    memset(host, 0, sizeof(host));
    MPI_Get_processor_name(host, &len);
    hosts = calloc((size_t)size, MPI_MAX_PROCESSOR_NAME);
    peers = calloc((size_t)size, sizeof(*peers));
    if ((hosts == NULL) || (peers == NULL)) {
        MPI_Abort(MPI_COMM_WORLD, 3);
    }
    MPI_Allgather(host, MPI_MAX_PROCESSOR_NAME, MPI_CHAR, hosts,
                  MPI_MAX_PROCESSOR_NAME, MPI_CHAR, MPI_COMM_WORLD);
#define HOST_OF(r) (hosts + (size_t)(r) * MPI_MAX_PROCESSOR_NAME)
    on_dead = !strcmp(host, dead_host);
    for (i = 0; i < size; ++i) {
        peers[i].expect_dead = (i != rank) &&
                               (on_dead != !strcmp(HOST_OF(i), dead_host));
        expected            += peers[i].expect_dead;
        peers[i].ctrl.peer   = i;
        for (k = 0; k < WINDOW; ++k) {
            peers[i].slot[k].peer = i;
        }
    }
    if (expected == 0) {
        if (rank == 0) {
            fprintf(stderr, "srm_peer_failure: no rank runs on %s (or every "
                    "rank does)\n", dead_host);
        }
        MPI_Abort(MPI_COMM_WORLD, 2);
    }

    /* UCP: a context for active messages, one worker, its address to all. */
    memset(&params, 0, sizeof(params));
    params.field_mask = UCP_PARAM_FIELD_FEATURES;
    params.features   = UCP_FEATURE_AM;
    if ((ucp_config_read(NULL, NULL, &config) != UCS_OK) ||
        (ucp_init(&params, config, &context) != UCS_OK)) {
        fprintf(stderr, "rank %d: ucp_init failed\n", rank);
        MPI_Abort(MPI_COMM_WORLD, 3);
    }
    ucp_config_release(config);
    memset(&wparams, 0, sizeof(wparams));
    wparams.field_mask  = UCP_WORKER_PARAM_FIELD_THREAD_MODE;
    wparams.thread_mode = UCS_THREAD_MODE_SINGLE;
    if (ucp_worker_create(context, &wparams, &worker) != UCS_OK) {
        fprintf(stderr, "rank %d: ucp_worker_create failed\n", rank);
        MPI_Abort(MPI_COMM_WORLD, 3);
    }
    set_am_handler(worker, AM_DATA, on_data);
    set_am_handler(worker, AM_CTRL, on_ctrl);
    wattr.field_mask = UCP_WORKER_ATTR_FIELD_ADDRESS;
    if (ucp_worker_query(worker, &wattr) != UCS_OK) {
        MPI_Abort(MPI_COMM_WORLD, 3);
    }
    addr_lens = calloc((size_t)size, sizeof(int));
    displs    = calloc((size_t)size, sizeof(int));
    len       = (int)wattr.address_length;
    MPI_Allgather(&len, 1, MPI_INT, addr_lens, 1, MPI_INT, MPI_COMM_WORLD);
    for (total = 0, i = 0; i < size; ++i) {
        displs[i] = total;
        total    += addr_lens[i];
    }
    addrs = malloc((size_t)total);
    MPI_Allgatherv(wattr.address, len, MPI_BYTE, addrs, addr_lens, displs,
                   MPI_BYTE, MPI_COMM_WORLD);
    ucp_worker_release_address(worker, wattr.address);

    for (i = 0; i < size; ++i) {
        if (i == rank) {
            continue;
        }
        memset(&eparams, 0, sizeof(eparams));
        eparams.field_mask      = UCP_EP_PARAM_FIELD_REMOTE_ADDRESS |
                                  UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE |
                                  UCP_EP_PARAM_FIELD_ERR_HANDLER;
        eparams.address         = (const ucp_address_t*)(addrs + displs[i]);
        eparams.err_mode        = UCP_ERR_HANDLING_MODE_PEER;
        eparams.err_handler.cb  = on_ep_error;
        eparams.err_handler.arg = &peers[i];
        if (ucp_ep_create(worker, &eparams, &peers[i].ep) != UCS_OK) {
            fprintf(stderr, "rank %d: ucp_ep_create to rank %d failed\n",
                    rank, i);
            MPI_Abort(MPI_COMM_WORLD, 3);
        }
    }
    MPI_Barrier(MPI_COMM_WORLD);
    /* No MPI call from here on: some ranks are about to become unreachable. */

    start = now_realtime();
    flags = 0;
    for (;;) {
        now = now_realtime();
        did = 0;
        for (i = 0; i < size; ++i) {
            p = &peers[i];
            if (i == rank) {
                continue;
            }
            if (p->failed) {
                if (!p->closed) {
                    close_failed(p);
                }
                continue;
            }
            send_data(p, &did);
            send_ctrl(p, flags, now, &did);
        }
        if (ucp_worker_progress(worker) != 0) {
            did = 1;
        }
        if (!did && (++idle > 64)) {
            /* Leave the cores to the agents now and then. */
            struct timespec ts = {0, 50000};
            nanosleep(&ts, NULL);
            idle = 0;
        } else if (did) {
            idle = 0;
        }
        if (now - last_check < 0.005) {
            continue;
        }
        last_check = now;

        if (!ready) {
            ready = 1;
            for (i = 0; i < size; ++i) {
                ready &= (i == rank) || (peers[i].received >= READY_MSGS);
            }
            if (ready) {
                printf("ready rank %d host %s peers %d\n", rank, host,
                       size - 1);
                fflush(stdout);
            }
        }
        if ((cut == 0) && read_cut_file(cut_file, &cut)) {
            for (i = 0; i < size; ++i) {
                peers[i].at_cut = peers[i].received;
            }
        }

        failed = live_failed = 0;
        for (i = 0; i < size; ++i) {
            failed      += peers[i].expect_dead && peers[i].failed;
            live_failed += !peers[i].expect_dead && peers[i].failed;
        }
        if ((detect_time == 0) && (failed == expected)) {
            detect_time = now;
            for (i = 0; i < size; ++i) {
                peers[i].at_detect = peers[i].received;
            }
        }

        /* Done: all expected errors, and traffic with every live peer
         * since. All done: we and every live peer. */
        local_done = (detect_time != 0) && !live_failed;
        all_done   = 1;
        all_bye    = 1;
        for (i = 0; i < size; ++i) {
            p = &peers[i];
            if ((i == rank) || p->expect_dead) {
                continue;
            }
            local_done &= (p->received - p->at_detect) >= min_after;
            all_done   &= (p->peer_flags & CTRL_DONE) != 0;
            all_bye    &= (p->peer_flags & CTRL_BYE) != 0;
        }
        if (local_done) {
            flags |= CTRL_DONE;
        }
        all_done &= (flags & CTRL_DONE) != 0;
        if (all_done && !printed) {
            print_result(host, out_dir, cut, detect_time != 0, "complete");
            printed  = 1;
            flags   |= CTRL_BYE;
            bye_time = now;
        }
        if (printed && (all_bye || (now - bye_time > 5))) {
            fflush(stdout);
            _exit(0);
        }
        if (!printed && (((cut > 0) && (now - cut > limit)) ||
                         (now - start > max_time))) {
            print_result(host, out_dir, cut, detect_time != 0, "timeout");
            fflush(stdout);
            _exit(1);
        }
    }
}
