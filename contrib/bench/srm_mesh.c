/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * srm_mesh - MPI traffic generator for the one-to-many and full-mesh
 * experiments (contrib/bench/mesh.sh, resources.sh): windowed, acknowledged
 * streams of checked messages, message rate and latency percentiles.
 *
 * Usage: srm_mesh [-p mesh|one-to-many] [-s BYTES[,...]] [-t SECONDS]
 *                 [-w WARMUP_SECONDS] [-W WINDOW] [-a ACK_EVERY]
 *                 [-H HOLD_SECONDS [-F FILE]] [-C N] [-v]
 *
 * Patterns:
 *   mesh         every rank streams to every other rank
 *   one-to-many  rank 0 streams, round robin, to every rank on the other
 *                hosts (host = MPI_Get_processor_name); the other ranks of
 *                rank 0's host only wait
 * A sender keeps at most WINDOW unacknowledged messages per target; the
 * receiver returns an 8 B acknowledgement for every ACK_EVERY-th message
 * (carrying its sequence number), which gives the sender credit and one
 * latency sample: half the time from posting that message to receiving its
 * acknowledgement. With -W 1 -a 1 (the mesh default) this is a ping-pong
 * per pair, all pairs at once. Every message carries its sequence number,
 * source and a check byte in its first 8 bytes and a pattern after them;
 * receivers check source, length, order, check byte and pattern.
 *
 * Only what happens in the measured window (after the warm-up, SECONDS
 * long) is counted. -s takes a list (8,65536): the n-th message of every stream has the
 * (n mod count)-th size.
 *
 * At the end rank 0 prints one line of key=value pairs:
 *   srm_mesh: result pattern=P size=S ranks=R hosts=H senders=.. ...
 *     msgs (data messages received in the window, all ranks), msg_rate
 *     (msgs/s), mb_rate (MB/s of data, MB = 2^20 B), acks, ack_rate,
 *     lat_samples, lat_p50_us, lat_p99_us, lat_p999_us, lat_max_us,
 *     errors
 * and exits 1 on every rank if errors > 0.
 *
 * -C N flips a payload bit of every N-th data message a rank sends (and
 * so for -s 8, where there is no payload, a bit of its check byte): a
 * test of the checks, which must then count errors.
 *
 * With -H the ranks, once done, stay in the job for HOLD_SECONDS without
 * traffic (every endpoint stays connected) after rank 0 printed
 * "srm_mesh: holding H s", so that connections and memory can be counted
 * from outside; with -F the hold ends as soon as FILE exists (rank 0
 * looks every 50 ms).
 */
#include <mpi.h>

#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define TAG_DATA     21
#define TAG_ACK      22
#define HDR_BYTES    8
#define KIND_DATA    1
#define KIND_END     2
#define KIND_ACK     3
#define MAX_REPORTED 10
/* Latency histogram: exact below 64 ns, then 32 buckets per power of 2
 * (at most 3 % off), up to 2^40 ns. */
#define HIST_SUB     32
#define HIST_BUCKETS (64 + (40 - 6) * HIST_SUB)

typedef struct {
    uint32_t seq;
    uint16_t src;
    uint8_t  kind;
    uint8_t  check;
} mesh_hdr_t;

/* What this rank sends to one target. */
typedef struct {
    int          rank;
    uint32_t     sent;      /* messages posted (data and end) */
    uint32_t     acked;     /* every seq below is acknowledged */
    uint32_t     acks_posted;
    uint32_t     acks_done; /* acks handled, in the order they were posted */
    int          ended;     /* the end messages are out */
    MPI_Request *send_req;  /* [2 * window] by seq */
    uint8_t    **send_buf;
    double      *send_time;
    MPI_Request *ack_req;   /* [2 * window] by ack number */
    uint32_t    *ack_seq;   /* the seq each posted ack receive must carry */
    uint8_t    (*ack_buf)[HDR_BYTES];
    uint8_t     *ack_ready; /* completed, not yet handled */
} mesh_target_t;

/* What this rank receives from one source. */
typedef struct {
    int          rank;
    uint32_t     posted;    /* receives posted so far = next seq to post */
    uint32_t     handled;   /* messages handled (in order) */
    int          ends;      /* end messages received */
    uint32_t     acks_sent;
    MPI_Request *recv_req;  /* [window] */
    uint32_t    *recv_seq;
    uint8_t    **recv_buf;
    uint8_t     *recv_ready; /* completed, not yet handled */
    MPI_Status  *recv_status;
    MPI_Request *ack_req;   /* [2 * window] */
    uint8_t    (*ack_buf)[HDR_BYTES];
} mesh_source_t;

static int      g_rank, g_size;
static size_t   g_msg_size = 8; /* the largest of g_sizes */
static size_t   g_sizes[16] = {8};
static int      g_nsizes = 1;
static char     g_size_arg[128] = "8";
static uint32_t g_window, g_ack_every;
static uint8_t *g_pattern;  /* g_msg_size + 256 bytes */
static long     g_errors;
static double   g_win_start, g_win_end;
static unsigned long long g_hist[HIST_BUCKETS];
static unsigned long long g_msgs, g_acks, g_bytes;
static double   g_lat_max;
static unsigned long g_corrupt_every;

static void fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static void fail(const char *fmt, ...)
{
    va_list ap;

    if (g_errors++ >= MAX_REPORTED) {
        return;
    }
    fprintf(stderr, "srm_mesh: rank %d: ", g_rank);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
}

static void *xcalloc(size_t n, size_t size)
{
    void *p = calloc(n ? n : 1, size ? size : 1);

    if (p == NULL) {
        fprintf(stderr, "srm_mesh: rank %d: out of memory\n", g_rank);
        MPI_Abort(MPI_COMM_WORLD, 3);
    }
    return p;
}

static uint8_t check_byte(uint32_t seq, int src, int dst, int kind)
{
    uint32_t x = seq * 2654435761u ^ (uint32_t)src * 40503u ^
                 (uint32_t)dst * 97u ^ (uint32_t)kind * 0x9e37u;

    return (uint8_t)(x ^ (x >> 8) ^ (x >> 16) ^ (x >> 24));
}

/* Where in g_pattern the payload of message seq from src to dst starts. */
static size_t pattern_offset(uint32_t seq, int src, int dst)
{
    return ((size_t)seq * 7 + (size_t)src * 3 + (size_t)dst) % 251;
}

static void put_hdr(uint8_t *buf, uint32_t seq, int dst, int kind)
{
    mesh_hdr_t h = {seq, (uint16_t)g_rank, (uint8_t)kind,
                    check_byte(seq, g_rank, dst, kind)};

    memcpy(buf, &h, sizeof(h));
}

/* Checks a received header (an error is counted); returns the kind it
 * names, which the protocol follows even when the rest is wrong. */
static int get_hdr(const uint8_t *buf, int src, uint32_t want_seq,
                   const char *what)
{
    mesh_hdr_t h;

    memcpy(&h, buf, sizeof(h));
    if ((h.src != (uint16_t)src) || (h.seq != want_seq) ||
        (h.check != check_byte(h.seq, h.src, g_rank, h.kind))) {
        fail("%s from %d: header src %u seq %u kind %u check %u, want src "
             "%d seq %u", what, src, h.src, h.seq, h.kind, h.check, src,
             want_seq);
    }
    return h.kind;
}

static void hist_add(double seconds)
{
    uint64_t ns = (uint64_t)(seconds * 1e9 + 0.5);
    int e = 63 - __builtin_clzll(ns | 1);
    int i;

    if (ns < 64) {
        i = (int)ns;
    } else {
        if (e >= 40) {
            e  = 39;
            ns = (2ull << 39) - 1;
        }
        i = 64 + (e - 6) * HIST_SUB +
            (int)((ns >> (e - 5)) & (HIST_SUB - 1));
    }
    g_hist[i]++;
    if (seconds > g_lat_max) {
        g_lat_max = seconds;
    }
}

/* The middle of bucket i, in microseconds. */
static double hist_value_us(int i)
{
    int e;
    double lo, width;

    if (i < 64) {
        return i / 1000.0;
    }
    e     = (i - 64) / HIST_SUB + 6;
    width = (double)(1ull << (e - 5));
    lo    = (double)(1ull << e) + ((i - 64) % HIST_SUB) * width;
    return (lo + width / 2) / 1000.0;
}

/* The q-quantile of the histogram, at most max_us. */
static double hist_percentile_us(const unsigned long long *hist,
                                 unsigned long long n, double q,
                                 double max_us)
{
    unsigned long long want = (unsigned long long)(q * (double)n), seen = 0;
    int i;

    if (n == 0) {
        return 0;
    }
    if (want >= n) {
        want = n - 1;
    }
    for (i = 0; i < HIST_BUCKETS; i++) {
        seen += hist[i];
        if (seen > want) {
            return hist_value_us(i) < max_us ? hist_value_us(i) : max_us;
        }
    }
    return max_us;
}

/* Message seq of every stream has the (seq mod n)-th size of -s. */
static size_t msg_len(uint32_t seq)
{
    return g_sizes[seq % (uint32_t)g_nsizes];
}

/* -s LIST: sizes separated by commas; 0 if it is not one. */
static int parse_sizes(const char *arg)
{
    char *end;

    g_nsizes   = 0;
    g_msg_size = 0;
    snprintf(g_size_arg, sizeof(g_size_arg), "%s", arg);
    do {
        if (g_nsizes == 16) {
            return 0;
        }
        errno = 0;
        g_sizes[g_nsizes] = strtoul(arg, &end, 0);
        if (errno || (end == arg) || (g_sizes[g_nsizes] < HDR_BYTES) ||
            (g_sizes[g_nsizes] > (1u << 30))) {
            return 0;
        }
        if (g_sizes[g_nsizes] > g_msg_size) {
            g_msg_size = g_sizes[g_nsizes];
        }
        g_nsizes++;
        arg = end + 1;
    } while (*end == ',');
    return *end == '\0';
}

static int in_window(double t)
{
    return (t >= g_win_start) && (t < g_win_end);
}

/* Reuse a request slot: the operation it held must be complete. */
static void slot_free(MPI_Request *req)
{
    if (*req != MPI_REQUEST_NULL) {
        MPI_Wait(req, MPI_STATUS_IGNORE);
    }
}

/* Post one message (data, or an 8 B end) to target t. */
static void send_one(mesh_target_t *t, int kind, double now)
{
    uint32_t seq  = t->sent++;
    uint32_t slot = seq % (2 * g_window);
    uint8_t *buf;
    int len = kind == KIND_DATA ? (int)msg_len(seq) : HDR_BYTES;

    /* The acknowledgement of this message, if it gets one, is received
     * into a receive posted before the message leaves. */
    if ((kind == KIND_END) || (((seq + 1) % g_ack_every) == 0)) {
        uint32_t a = t->acks_posted++ % (2 * g_window);

        if (t->ack_req[a] != MPI_REQUEST_NULL) {
            fprintf(stderr, "srm_mesh: rank %d: ack slot %u to %d busy\n",
                    g_rank, a, t->rank);
            MPI_Abort(MPI_COMM_WORLD, 3);
        }
        t->ack_seq[a] = seq;
        MPI_Irecv(t->ack_buf[a], HDR_BYTES, MPI_BYTE, t->rank, TAG_ACK,
                  MPI_COMM_WORLD, &t->ack_req[a]);
    }
    slot_free(&t->send_req[slot]);
    buf = t->send_buf[slot];
    put_hdr(buf, seq, t->rank, kind);
    if (kind == KIND_DATA) {
        memcpy(buf + HDR_BYTES, g_pattern + pattern_offset(seq, g_rank,
                                                           t->rank),
               (size_t)len - HDR_BYTES);
    }
    if ((kind == KIND_DATA) && g_corrupt_every &&
        ((seq % g_corrupt_every) == g_corrupt_every - 1)) {
        buf[len - 1] ^= 4;
    }
    t->send_time[slot] = now;
    MPI_Isend(buf, len, MPI_BYTE, t->rank, TAG_DATA, MPI_COMM_WORLD,
              &t->send_req[slot]);
}

static void post_recv(mesh_source_t *s, uint32_t slot)
{
    s->recv_seq[slot] = s->posted++;
    MPI_Irecv(s->recv_buf[slot], (int)g_msg_size, MPI_BYTE, s->rank,
              TAG_DATA, MPI_COMM_WORLD, &s->recv_req[slot]);
}

static void on_data(mesh_source_t *s, uint32_t slot, MPI_Status *st,
                    double now)
{
    uint32_t seq = s->recv_seq[slot];
    const uint8_t *buf = s->recv_buf[slot];
    int len, kind;

    MPI_Get_count(st, MPI_BYTE, &len);
    kind = get_hdr(buf, s->rank, seq, "message");
    if ((kind != KIND_DATA) && (kind != KIND_END)) {
        fail("message %u from %d: kind %d", seq, s->rank, kind);
        kind = KIND_DATA;       /* keep the stream going */
    }
    if (kind == KIND_DATA) {
        if (len != (int)msg_len(seq)) {
            fail("message %u from %d: %d B, want %zu", seq, s->rank, len,
                 msg_len(seq));
        } else if (memcmp(buf + HDR_BYTES,
                          g_pattern + pattern_offset(seq, s->rank, g_rank),
                          (size_t)len - HDR_BYTES) != 0) {
            fail("message %u from %d: payload differs", seq, s->rank);
        } else if (in_window(now)) {
            g_msgs++;
            g_bytes += (unsigned long long)len;
        }
    } else if (kind == KIND_END) {
        if (len != HDR_BYTES) {
            fail("end %u from %d: %d B, want %d", seq, s->rank, len,
                 HDR_BYTES);
        }
        s->ends++;
    }

    if ((kind == KIND_END) || (((seq + 1) % g_ack_every) == 0)) {
        uint32_t a = s->acks_sent++ % (2 * g_window);

        slot_free(&s->ack_req[a]);
        put_hdr(s->ack_buf[a], seq, s->rank, KIND_ACK);
        MPI_Isend(s->ack_buf[a], HDR_BYTES, MPI_BYTE, s->rank, TAG_ACK,
                  MPI_COMM_WORLD, &s->ack_req[a]);
    }
    /* A data message makes room for one more; an end does not (the
     * sender sends exactly window ends, one per receive still posted). */
    if (kind == KIND_DATA) {
        post_recv(s, slot);
    }
}

static void on_ack(mesh_target_t *t, uint32_t a, double now)
{
    uint32_t seq = t->ack_seq[a];

    if (get_hdr(t->ack_buf[a], t->rank, seq, "ack") != KIND_ACK) {
        fail("ack %u from %d: not an ack", seq, t->rank);
    }
    t->acked = seq + 1;
    /* One sample per acknowledged data message in the window (the end
     * messages are not part of the measurement). */
    if (in_window(now) && (seq < t->sent) &&
        in_window(t->send_time[seq % (2 * g_window)])) {
        hist_add((now - t->send_time[seq % (2 * g_window)]) / 2);
        g_acks++;
    }
}

/* Waits for the others without spinning, so that ranks that are done (or
 * had nothing to do) leave the CPU to those still working. */
static void quiet_barrier(void)
{
    struct timespec ts = {0, 200000};
    MPI_Request req;
    int done = 0;

    MPI_Ibarrier(MPI_COMM_WORLD, &req);
    while (!done) {
        MPI_Test(&req, &done, MPI_STATUS_IGNORE);
        if (!done) {
            nanosleep(&ts, NULL);
        }
    }
}

/* host[] of every rank: index of its processor name in order of first
 * appearance. Returns the number of hosts. */
static int find_hosts(int *host)
{
    char name[MPI_MAX_PROCESSOR_NAME], *all;
    int len, r, q, nhosts = 0;

    memset(name, 0, sizeof(name));
    MPI_Get_processor_name(name, &len);
    all = xcalloc((size_t)g_size, MPI_MAX_PROCESSOR_NAME);
    MPI_Allgather(name, MPI_MAX_PROCESSOR_NAME, MPI_CHAR, all,
                  MPI_MAX_PROCESSOR_NAME, MPI_CHAR, MPI_COMM_WORLD);
    for (r = 0; r < g_size; r++) {
        host[r] = -1;
        for (q = 0; q < r; q++) {
            if (!strncmp(all + (size_t)q * MPI_MAX_PROCESSOR_NAME,
                         all + (size_t)r * MPI_MAX_PROCESSOR_NAME,
                         MPI_MAX_PROCESSOR_NAME)) {
                host[r] = host[q];
                break;
            }
        }
        if (host[r] < 0) {
            host[r] = nhosts++;
        }
    }
    free(all);
    return nhosts;
}

static void usage(const char *prog)
{
    if (g_rank == 0) {
        fprintf(stderr,
                "usage: %s [-p mesh|one-to-many] [-s BYTES[,BYTES...]] "
                "[-t SECONDS]\n"
                "          [-w WARMUP_SECONDS] [-W WINDOW] [-a ACK_EVERY]\n"
                "          [-H HOLD_SECONDS [-F FILE]] [-C N] [-v]\n", prog);
    }
}

int main(int argc, char **argv)
{
    const char *pattern = "mesh", *release = NULL;
    double seconds = 2, warmup = -1, hold = 0, now, t0, t_stop;
    long window = -1, ack_every = -1, total_errors;
    int verbose = 0, one_to_many, opt, nhosts, r, i, k, idx, done, outcount;
    int *host, ntargets = 0, nsources = 0, nreq, senders, receivers;
    mesh_target_t *targets;
    mesh_source_t *sources;
    MPI_Request *reqs;
    MPI_Status *stats;
    int *indices;
    unsigned long long sums[4], all_sums[4], all_hist[HIST_BUCKETS];
    double lat_max = 0;
    char *end;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
    MPI_Comm_size(MPI_COMM_WORLD, &g_size);

    while ((opt = getopt(argc, argv, "p:s:t:w:W:a:H:F:C:vh")) != -1) {
        errno = 0;
        end   = NULL;
        switch (opt) {
        case 'p': pattern    = optarg; break;
        case 's':
            if (!parse_sizes(optarg)) {
                if (g_rank == 0) {
                    fprintf(stderr, "srm_mesh: -s: bad size list '%s'\n",
                            optarg);
                }
                MPI_Finalize();
                return 2;
            }
            break;
        case 't': seconds    = strtod(optarg, &end); break;
        case 'w': warmup     = strtod(optarg, &end); break;
        case 'W': window     = strtol(optarg, &end, 0); break;
        case 'a': ack_every  = strtol(optarg, &end, 0); break;
        case 'H': hold       = strtod(optarg, &end); break;
        case 'F': release    = optarg; break;
        case 'C': g_corrupt_every = strtoul(optarg, &end, 0); break;
        case 'v': verbose    = 1; break;
        default:
            usage(argv[0]);
            MPI_Finalize();
            return 2;
        }
        if ((end != NULL) && ((*end != '\0') || errno)) {
            if (g_rank == 0) {
                fprintf(stderr, "srm_mesh: -%c: bad number '%s'\n", opt,
                        optarg);
            }
            MPI_Finalize();
            return 2;
        }
    }
    one_to_many = !strcmp(pattern, "one-to-many");
    if (!one_to_many && strcmp(pattern, "mesh")) {
        usage(argv[0]);
        MPI_Finalize();
        return 2;
    }
    if (window < 0) {
        window = one_to_many ? 16 : 1;
    }
    if (ack_every < 0) {
        ack_every = window > 1 ? window / 2 : 1;
    }
    if (warmup < 0) {
        warmup = seconds / 10 > 0.2 ? seconds / 10 : 0.2;
    }
    if ((seconds <= 0) || (hold < 0) || (window < 1) || (window > 4096) ||
        (ack_every < 1) || (ack_every > window) || (g_size < 2) ||
        (g_size > 65535)) {
        if (g_rank == 0) {
            fprintf(stderr, "srm_mesh: bad arguments: need -s >= %d, -t > 0, "
                    "1 <= -a <= -W <= 4096, 2..65535 ranks\n", HDR_BYTES);
        }
        MPI_Finalize();
        return 2;
    }
    g_window    = (uint32_t)window;
    g_ack_every = (uint32_t)ack_every;

    host   = xcalloc((size_t)g_size, sizeof(*host));
    nhosts = find_hosts(host);
    if (one_to_many && (nhosts < 2)) {
        if (g_rank == 0) {
            fprintf(stderr, "srm_mesh: one-to-many needs ranks on at least "
                    "2 hosts (all %d are on one)\n", g_size);
        }
        MPI_Finalize();
        return 2;
    }

    g_pattern = xcalloc(g_msg_size + 256, 1);
    for (i = 0; i < (int)(g_msg_size + 256); i++) {
        g_pattern[i] = (uint8_t)((i * 131) ^ (i >> 8) ^ 0x5a);
    }

    /* Who sends to whom. */
    targets = xcalloc((size_t)g_size, sizeof(*targets));
    sources = xcalloc((size_t)g_size, sizeof(*sources));
    for (r = 0; r < g_size; r++) {
        if (r == g_rank) {
            continue;
        }
        if (one_to_many) {
            if ((g_rank == 0) && (host[r] != host[0])) {
                targets[ntargets++].rank = r;
            }
            if ((r == 0) && (host[g_rank] != host[0])) {
                sources[nsources++].rank = r;
            }
        } else {
            targets[ntargets++].rank = r;
            sources[nsources++].rank = r;
        }
    }
    senders   = one_to_many ? 1 : g_size;
    receivers = g_size;
    if (one_to_many) {
        receivers = 0;
        for (r = 0; r < g_size; r++) {
            receivers += host[r] != host[0];
        }
    }

    /* One request array: per target 2W sends and 2W ack receives, per
     * source W receives and 2W ack sends. */
    nreq    = ntargets * 4 * (int)g_window + nsources * 3 * (int)g_window;
    reqs    = xcalloc((size_t)nreq, sizeof(*reqs));
    stats   = xcalloc((size_t)nreq, sizeof(*stats));
    indices = xcalloc((size_t)nreq, sizeof(*indices));
    for (i = 0; i < nreq; i++) {
        reqs[i] = MPI_REQUEST_NULL;
    }
    idx = 0;
    for (i = 0; i < ntargets; i++) {
        mesh_target_t *t = &targets[i];
        uint32_t k;

        t->send_req  = &reqs[idx];
        idx         += 2 * (int)g_window;
        t->ack_req   = &reqs[idx];
        idx         += 2 * (int)g_window;
        t->send_buf  = xcalloc(2 * g_window, sizeof(*t->send_buf));
        t->send_time = xcalloc(2 * g_window, sizeof(*t->send_time));
        t->ack_seq   = xcalloc(2 * g_window, sizeof(*t->ack_seq));
        t->ack_buf   = xcalloc(2 * g_window, sizeof(*t->ack_buf));
        t->ack_ready = xcalloc(2 * g_window, 1);
        for (k = 0; k < 2 * g_window; k++) {
            t->send_buf[k] = xcalloc(g_msg_size, 1);
        }
    }
    for (i = 0; i < nsources; i++) {
        mesh_source_t *s = &sources[i];
        uint32_t k;

        s->recv_req  = &reqs[idx];
        idx         += (int)g_window;
        s->ack_req   = &reqs[idx];
        idx         += 2 * (int)g_window;
        s->recv_seq  = xcalloc(g_window, sizeof(*s->recv_seq));
        s->recv_buf  = xcalloc(g_window, sizeof(*s->recv_buf));
        s->ack_buf   = xcalloc(2 * g_window, sizeof(*s->ack_buf));
        s->recv_ready  = xcalloc(g_window, 1);
        s->recv_status = xcalloc(g_window, sizeof(*s->recv_status));
        for (k = 0; k < g_window; k++) {
            s->recv_buf[k] = xcalloc(g_msg_size, 1);
        }
    }

    /* Every receive is posted before anybody sends. */
    for (i = 0; i < nsources; i++) {
        uint32_t k;

        for (k = 0; k < g_window; k++) {
            post_recv(&sources[i], k);
        }
    }
    MPI_Barrier(MPI_COMM_WORLD);
    t0          = MPI_Wtime();
    g_win_start = t0 + warmup;
    g_win_end   = g_win_start + seconds;
    t_stop      = g_win_end;

    /* A rank with nothing to do (one-to-many, the sender's neighbours)
     * does not poll. */
    done = (ntargets == 0) && (nsources == 0);
    while (!done) {
        int more;

        now = MPI_Wtime();
        /* Round robin over the targets, one message each while any has
         * credit; after the window, the end messages instead. */
        do {
            more = 0;
            for (i = 0; i < ntargets; i++) {
                mesh_target_t *t = &targets[i];

                if (t->ended) {
                    continue;
                }
                if (now >= t_stop) {
                    uint32_t k;

                    for (k = 0; k < g_window; k++) {
                        send_one(t, KIND_END, now);
                    }
                    t->ended = 1;
                } else if (t->sent - t->acked < g_window) {
                    send_one(t, KIND_DATA, now);
                    more = 1;
                }
            }
        } while (more);

        MPI_Testsome(nreq, reqs, &outcount, indices, stats);
        if (outcount == MPI_UNDEFINED) {
            outcount = 0;
        }
        now = MPI_Wtime();
        for (i = 0; i < outcount; i++) {
            int q = indices[i], base = 0;

            for (k = 0; k < ntargets; k++) {
                int w2 = 2 * (int)g_window;

                if (q < base + w2) {
                    break;          /* a send completed: nothing to do */
                }
                if (q < base + 2 * w2) {
                    targets[k].ack_ready[q - base - w2] = 1;
                    break;
                }
                base += 2 * w2;
            }
            if (k < ntargets) {
                continue;
            }
            for (k = 0; k < nsources; k++) {
                if (q < base + (int)g_window) {
                    sources[k].recv_ready[q - base]  = 1;
                    sources[k].recv_status[q - base] = stats[i];
                    break;
                }
                base += 3 * (int)g_window;
                if (q < base) {
                    break;          /* an ack send completed */
                }
            }
        }

        /* Receives of one source (and tag) match in the order they were
         * posted, so handle them in that order: then the message of seq n
         * is always in slot n % window, and acks leave in order. */
        for (k = 0; k < nsources; k++) {
            mesh_source_t *s = &sources[k];
            uint32_t slot;

            while (s->recv_ready[slot = s->handled % g_window]) {
                s->recv_ready[slot] = 0;
                s->handled++;
                on_data(s, slot, &s->recv_status[slot], now);
            }
        }
        for (k = 0; k < ntargets; k++) {
            mesh_target_t *t = &targets[k];
            uint32_t a;

            while (t->ack_ready[a = t->acks_done % (2 * g_window)]) {
                t->ack_ready[a] = 0;
                t->acks_done++;
                on_ack(t, a, now);
            }
        }

        if (now < t_stop) {
            continue;
        }
        done = 1;
        for (i = 0; (i < ntargets) && done; i++) {
            done = targets[i].ended && (targets[i].acked == targets[i].sent) &&
                   (targets[i].acks_done == targets[i].acks_posted);
        }
        for (i = 0; (i < nsources) && done; i++) {
            done = sources[i].ends == (int)g_window;
        }
    }
    /* The last acknowledgements and sends. */
    MPI_Waitall(nreq, reqs, MPI_STATUSES_IGNORE);

    if (verbose) {
        fprintf(stderr, "srm_mesh: rank %d host %d: %d targets, %d sources, "
                "%llu msgs, %llu acks in the window, %ld errors\n", g_rank,
                host[g_rank], ntargets, nsources, g_msgs, g_acks, g_errors);
    }

    quiet_barrier();
    sums[0] = g_msgs;
    sums[1] = g_acks;
    sums[2] = (unsigned long long)g_errors;
    sums[3] = g_bytes;
    MPI_Reduce(sums, all_sums, 4, MPI_UNSIGNED_LONG_LONG, MPI_SUM, 0,
               MPI_COMM_WORLD);
    MPI_Reduce(g_hist, all_hist, HIST_BUCKETS, MPI_UNSIGNED_LONG_LONG,
               MPI_SUM, 0, MPI_COMM_WORLD);
    MPI_Reduce(&g_lat_max, &lat_max, 1, MPI_DOUBLE, MPI_MAX, 0,
               MPI_COMM_WORLD);
    if (g_rank == 0) {
        printf("srm_mesh: result pattern=%s size=%s ranks=%d hosts=%d "
               "senders=%d receivers=%d window=%u ack_every=%u "
               "seconds=%.3f msgs=%llu msg_rate=%.1f mb_rate=%.3f "
               "acks=%llu ack_rate=%.1f lat_samples=%llu lat_p50_us=%.2f "
               "lat_p99_us=%.2f lat_p999_us=%.2f lat_max_us=%.2f "
               "errors=%llu\n",
               pattern, g_size_arg, g_size, nhosts, senders, receivers,
               g_window, g_ack_every, seconds, all_sums[0],
               all_sums[0] / seconds,
               all_sums[3] / seconds / 1048576.0,
               all_sums[1], all_sums[1] / seconds, all_sums[1],
               hist_percentile_us(all_hist, all_sums[1], 0.50, lat_max * 1e6),
               hist_percentile_us(all_hist, all_sums[1], 0.99, lat_max * 1e6),
               hist_percentile_us(all_hist, all_sums[1], 0.999,
                                  lat_max * 1e6),
               lat_max * 1e6, all_sums[2]);
        fflush(stdout);
    }
    total_errors = (long)all_sums[2];
    MPI_Bcast(&total_errors, 1, MPI_LONG, 0, MPI_COMM_WORLD);

    if (hold > 0) {
        if (g_rank == 0) {
            printf("srm_mesh: holding %.1f s\n", hold);
            fflush(stdout);
        }
        /* Rank 0 decides when the hold ends; the others wait for it in
         * the barrier, asleep. */
        if (g_rank == 0) {
            double until = MPI_Wtime() + hold;

            while ((MPI_Wtime() < until) &&
                   ((release == NULL) || (access(release, F_OK) != 0))) {
                usleep(50000);
            }
        }
        quiet_barrier();
    }
    MPI_Finalize();
    return total_errors ? 1 : 0;
}
