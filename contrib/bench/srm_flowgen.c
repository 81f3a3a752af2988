/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * srm_flowgen - flow completion times (FCT) under a Poisson flow workload.
 *
 * Every process is a generator and a sink. Flows arrive at each process
 * as a Poisson process (exponential gaps) whose rate makes the processes
 * of a host offer --load times --link-rate bytes per second together;
 * a flow is one UCP tagged message (ucp_tag_send_nbx) to a destination
 * drawn uniformly among the other processes. Sizes: a fraction
 * (--short-fraction) of short flows, log-uniform in --short, the rest
 * long flows, log-uniform in --long.
 *
 * A flow completes when its sender gets the receiver's acknowledgement,
 * a zero-length tagged message the receiver sends once the whole message
 * is in its buffer and checked. Arrival and completion are both taken on
 * the sender's clock, so no clock synchronization is needed; the FCT
 * thus includes the ack's one-way trip. A synchronous send
 * (ucp_tag_send_sync_nbx) would not do: it completes when the receiver
 * matched the message, which can be before the last byte arrived.
 *
 * MPI only bootstraps (worker addresses, host names), separates the
 * phases (a non-blocking barrier while every process keeps serving its
 * flows) and gathers the results. See usage() for the options and the
 * output.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* ppoll */
#endif

#include <mpi.h>
#include <ucp/api/ucp.h>

#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <math.h>
#include <poll.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define FLOWGEN_HDR_MAGIC 0x73726d66u /* "srmf" */
#define FLOWGEN_MIN_SIZE  16          /* the header */
#define FLOWGEN_MAX_SIZE  (1u << 30)

/* Tag: kind (4 bits), ack verdict (1), rank (19), flow number (40). */
#define TAG_KIND_SHIFT 60
#define TAG_BAD_BIT    (1ull << 59)
#define TAG_RANK_SHIFT 40
#define TAG_RANK_MASK  0x7ffffull
#define TAG_SEQ_MASK   ((1ull << TAG_RANK_SHIFT) - 1)
#define TAG_KIND_MASK  (0xfull << TAG_KIND_SHIFT)
#define MAX_RANKS      (TAG_RANK_MASK + 1)

enum { KIND_DATA = 1, KIND_ACK = 2 };

typedef enum { CLASS_SHORT = 0, CLASS_LONG = 1, CLASS_WARM = 2 } flow_class_t;

typedef enum { PROGRESS_WAIT, PROGRESS_POLL } progress_mode_t;

typedef struct {
    double          duration;      /* s of arrivals */
    double          load;          /* fraction of link_rate per host */
    double          link_rate;     /* MB/s (2^20 B/s) per host */
    double          short_fraction;
    size_t          short_min, short_max, long_min, long_max;
    double          drain;         /* s after duration to finish flows */
    size_t          max_inflight;  /* bytes posted, not yet sent, per process */
    uint64_t        seed;
    uint64_t        corrupt_every; /* test of the checker; 0: never */
    int             remote_only;
    progress_mode_t progress;
    int             verbose;
} flowgen_opts_t;

/* The first bytes of every flow's payload; the rest is a pattern of
 * (src, seq, size). */
typedef struct {
    uint32_t magic;
    uint32_t src;
    uint64_t seq;
} flow_hdr_t;

/* A flow this process generates. */
typedef struct {
    double   arrival;  /* s since the start, on this process's clock */
    double   done;     /* acknowledged at (s since the start) */
    uint8_t *buf;      /* payload while the send runs */
    uint32_t size;
    int      dest;
    uint8_t  cls;      /* flow_class_t */
    uint8_t  posted, sent, acked;
} flow_t;

/* A flow this process receives. */
typedef struct rx {
    struct rx *next;   /* on the list of finished receives */
    uint8_t   *buf;
    size_t     size;
    ucp_tag_t  tag;
    ucs_status_t status;
} rx_t;

/* What each process reports to rank 0 (all doubles, for one MPI_Gather). */
enum {
    ST_FLOWS, ST_SHORT, ST_LONG, ST_COMPLETE, ST_BYTES, ST_BYTES_DONE,
    ST_LAST_DONE, ST_RX_FLOWS, ST_RX_BYTES, ST_BAD_DATA, ST_BAD_ACK,
    ST_SEND_ERRORS, ST_RECV_ERRORS, ST_PROTO_ERRORS, ST_INCOMPLETE,
    ST_LATE_POSTS, ST_COUNT
};

typedef struct {
    ucp_context_h context;
    ucp_worker_h  worker;
    ucp_ep_h     *eps;
    int           efd;
    int           rank, size;
    int          *host_of;     /* rank -> host index */
    int           nhosts, local_procs;
    flowgen_opts_t opt;

    flow_t  *flows;
    size_t   nflows, flows_cap, next_post;
    size_t   inflight;         /* bytes of flows posted and not yet sent */
    size_t   unfinished;       /* flows generated and not both sent and acked */
    rx_t    *rx_done;          /* receives finished, to check and ack */
    size_t   rx_active;        /* receives (and their acks) in progress */
    double   t0;
    double   stat[ST_COUNT];
    uint64_t rng[4];
} flowgen_t;

static const char *prog_name = "srm_flowgen";

/* ------------------------------------------------------------ messages -- */

/* The rank the launcher gives this process, before MPI_Init: only rank 0
 * prints usage errors, not every process of the job. */
static int launcher_rank(void)
{
    static const char *vars[] = {"OMPI_COMM_WORLD_RANK", "PMI_RANK",
                                 "PMIX_RANK"};
    const char *v;
    size_t i;

    for (i = 0; i < sizeof(vars) / sizeof(vars[0]); ++i) {
        v = getenv(vars[i]);
        if (v != NULL) {
            return atoi(v);
        }
    }
    return 0;
}

static void usage(FILE *out)
{
    fprintf(out,
"NAME\n"
"    srm_flowgen - flow completion times under a Poisson flow workload (UCP)\n"
"\n"
"SYNOPSIS\n"
"    mpirun ... srm_flowgen [--load X] [--link-rate MBPS] [--duration SEC]\n"
"                 [--seed N] [--remote-only] [--short MIN-MAX]\n"
"                 [--long MIN-MAX] [--short-fraction F] [--drain SEC]\n"
"                 [--max-inflight SIZE] [--progress wait|poll]\n"
"                 [--corrupt-every N] [--verbose]\n"
"    srm_flowgen -h | --help\n"
"\n"
"DESCRIPTION\n"
"    Every process of the MPI job generates flows and receives them. A flow\n"
"    is one UCP tagged message (ucp_tag_send_nbx) from its source to a\n"
"    destination drawn uniformly among the other processes (--remote-only:\n"
"    among the processes on other hosts; a host is an MPI processor name).\n"
"    MPI only starts the processes, exchanges their UCP worker addresses and\n"
"    gathers the results; every flow goes through UCP.\n"
"\n"
"    Flows arrive at each process as a Poisson process: exponentially\n"
"    distributed gaps, at the rate at which the P processes of a host offer\n"
"    X times the link rate together, i.e. rate = X * MBPS * 2^20 /\n"
"    (P * mean flow size). A fraction F of the flows (default 0.8) are\n"
"    short, log-uniform in 64 B..8 KB, the others long, log-uniform in\n"
"    100 KB..10 MB (KB = 2^10 B, MB = 2^20 B). Arrivals stop after SEC\n"
"    seconds; the processes then finish the flows under way.\n"
"\n"
"    A flow completes when its sender receives the acknowledgement that the\n"
"    receiver sends (a zero-length tagged message) once the whole message is\n"
"    in its buffer and checked. Its flow completion time (FCT) is that\n"
"    moment minus the flow's arrival (not the moment it was posted: a\n"
"    sender that falls behind adds to the FCT), both on the sender's clock;\n"
"    it includes the ack's one-way trip. The payload is a pattern of the\n"
"    source, the flow number and the size, checked byte for byte by the\n"
"    receiver, which reports a bad flow in its ack.\n"
"\n"
"    Before the clock starts, every process sends one short (the --short\n"
"    minimum) and one long (the --long minimum) warm-up flow to every other\n"
"    process, so that connections are made and rendezvous set up; they are\n"
"    checked but not counted.\n"
"\n"
"OUTPUT\n"
"    Rank 0 prints a summary and one machine-readable line:\n"
"        flowgen: procs=N hosts=H load=X link_rate_MBps=MBPS duration_s=SEC\n"
"          seed=N remote_only=0|1 flows=N short=N long=N complete=N\n"
"          short_mean_us=T short_p50_us=T short_p99_us=T long_mean_us=T\n"
"          long_p50_us=T long_p99_us=T offered_load=X achieved_load=X\n"
"          offered_MBps=R achieved_MBps=R errors=N bad_data=N bad_ack=N\n"
"          send_errors=N recv_errors=N proto_errors=N incomplete=N\n"
"    (one line; \"nan\" for the FCTs of a class without flows). Percentiles\n"
"    are nearest-rank over the completed flows of all processes. Offered\n"
"    load: bytes generated / duration / (hosts * link rate); achieved load:\n"
"    bytes of completed flows / (time of the last completion) / (hosts *\n"
"    link rate), so it is below the offered load when the flows could not\n"
"    keep up. MBps figures are per host (MB = 2^20 B).\n"
"\n"
"OPTIONS\n"
"    --load X            offered load, a fraction of the link rate per host,\n"
"                        0 < X <= 10 (default 0.3)\n"
"    --link-rate MBPS    link rate of a host in MB/s (2^20 B/s), > 0\n"
"                        (default 100)\n"
"    --duration SEC      seconds of arrivals, > 0 (default 10)\n"
"    --seed N            seed of the random sizes, destinations and gaps; the\n"
"                        same seed and job shape give the same flows\n"
"                        (default 1)\n"
"    --remote-only       destinations only among processes on other hosts\n"
"    --short MIN-MAX     short flow sizes, bytes with an optional K or M\n"
"                        suffix (default 64-8K)\n"
"    --long MIN-MAX      long flow sizes (default 100K-10M)\n"
"    --short-fraction F  fraction of short flows, 0..1 (default 0.8)\n"
"    --drain SEC         seconds after --duration for the flows under way to\n"
"                        finish; those that do not are errors (default 30)\n"
"    --max-inflight SIZE bytes a process has posted and not yet sent; a flow\n"
"                        that would exceed it waits, FIFO (default 256M)\n"
"    --progress MODE     wait: sleep on the UCP worker's event fd when idle\n"
"                        (default; the ranks leave the cores to the\n"
"                        transport); poll: spin on ucp_worker_progress\n"
"    --corrupt-every N   test of the checker: the sender spoils one byte of\n"
"                        every Nth flow after writing its pattern (default\n"
"                        0: none); the run must then fail\n"
"    --verbose           per-process counts on stderr\n"
"    -h, --help          print this help and exit\n"
"\n"
"EXIT STATUS\n"
"    0 when every flow completed with the right data; 1 when any did not\n"
"    (bad data, a failed send or receive, a flow unfinished after --drain);\n"
"    2 on bad usage; 3 when UCP or the job cannot be set up.\n"
"\n"
"EXAMPLES\n"
"    mpirun -np 6 -x UCX_TLS=srm srm_flowgen --load 0.3 --duration 10\n"
"    contrib/bench/flows.sh --quick   (srm, srm without bulk channel, tcp)\n");
}

/* A usage error: said once (by rank 0), exit 2. Called before MPI_Init. */
static void bad_usage(const char *fmt, ...)
    __attribute__((noreturn, format(printf, 1, 2)));

static void bad_usage(const char *fmt, ...)
{
    va_list ap;

    if (launcher_rank() == 0) {
        fprintf(stderr, "%s: ", prog_name);
        va_start(ap, fmt);
        vfprintf(stderr, fmt, ap);
        va_end(ap);
        fprintf(stderr, "\nTry '%s --help'.\n", prog_name);
    }
    exit(2);
}

static void die(flowgen_t *fg, const char *what, ucs_status_t status)
    __attribute__((noreturn));

static void die(flowgen_t *fg, const char *what, ucs_status_t status)
{
    fprintf(stderr, "%s: rank %d: %s: %s\n", prog_name, fg->rank, what,
            ucs_status_string(status));
    MPI_Abort(MPI_COMM_WORLD, 3);
    exit(3); /* MPI_Abort does not return; the compiler does not know */
}

/* ------------------------------------------------------------- options -- */

static double parse_double(const char *opt, const char *s, double min,
                           double max)
{
    char *end;
    double v;

    errno = 0;
    v     = strtod(s, &end);
    if ((errno != 0) || (end == s) || (*end != '\0') || !(v >= min) ||
        !(v <= max)) {
        bad_usage("%s: '%s' is not a number from %g to %g", opt, s, min, max);
    }
    return v;
}

static uint64_t parse_uint(const char *opt, const char *s)
{
    unsigned long long v;
    char *end;

    errno = 0;
    v     = strtoull(s, &end, 0);
    if ((errno != 0) || (end == s) || (*end != '\0') || (*s == '-')) {
        bad_usage("%s: '%s' is not a non-negative integer", opt, s);
    }
    return v;
}

/* "64", "8K", "10M" -> bytes; 0 if malformed. */
static size_t parse_size(const char *s, const char **end)
{
    unsigned long long v;
    char *e;

    if ((*s < '0') || (*s > '9')) {
        return 0;
    }
    errno = 0;
    v     = strtoull(s, &e, 10);
    if (errno != 0) {
        return 0;
    }
    if ((*e == 'k') || (*e == 'K')) {
        v <<= 10;
        e++;
    } else if ((*e == 'm') || (*e == 'M')) {
        v <<= 20;
        e++;
    }
    *end = e;
    return (v > FLOWGEN_MAX_SIZE) ? 0 : (size_t)v;
}

static void parse_range(const char *opt, const char *s, size_t *min,
                        size_t *max)
{
    const char *e;

    *min = parse_size(s, &e);
    if ((*min == 0) || (*e != '-')) {
        goto bad;
    }
    *max = parse_size(e + 1, &e);
    if ((*max == 0) || (*e != '\0')) {
        goto bad;
    }
    if ((*min < FLOWGEN_MIN_SIZE) || (*min > *max)) {
        bad_usage("%s: '%s': want %d <= MIN <= MAX <= 1G", opt, s,
                  FLOWGEN_MIN_SIZE);
    }
    return;
bad:
    bad_usage("%s: '%s' is not MIN-MAX (bytes, K or M suffix), e.g. 64-8K",
              opt, s);
}

static void parse_options(int argc, char **argv, flowgen_opts_t *o)
{
    enum {
        OPT_LOAD = 256, OPT_LINK_RATE, OPT_DURATION, OPT_SEED, OPT_REMOTE,
        OPT_SHORT, OPT_LONG, OPT_SHORT_FRACTION, OPT_DRAIN, OPT_INFLIGHT,
        OPT_PROGRESS, OPT_CORRUPT, OPT_VERBOSE
    };
    static const struct option longopts[] = {
        {"load", required_argument, NULL, OPT_LOAD},
        {"link-rate", required_argument, NULL, OPT_LINK_RATE},
        {"duration", required_argument, NULL, OPT_DURATION},
        {"seed", required_argument, NULL, OPT_SEED},
        {"remote-only", no_argument, NULL, OPT_REMOTE},
        {"short", required_argument, NULL, OPT_SHORT},
        {"long", required_argument, NULL, OPT_LONG},
        {"short-fraction", required_argument, NULL, OPT_SHORT_FRACTION},
        {"drain", required_argument, NULL, OPT_DRAIN},
        {"max-inflight", required_argument, NULL, OPT_INFLIGHT},
        {"progress", required_argument, NULL, OPT_PROGRESS},
        {"corrupt-every", required_argument, NULL, OPT_CORRUPT},
        {"verbose", no_argument, NULL, OPT_VERBOSE},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0}};
    const char *end;
    int c;

    o->duration       = 10;
    o->load           = 0.3;
    o->link_rate      = 100;
    o->short_fraction = 0.8;
    o->short_min      = 64;
    o->short_max      = 8 << 10;
    o->long_min       = 100 << 10;
    o->long_max       = 10 << 20;
    o->drain          = 30;
    o->max_inflight   = 256 << 20;
    o->seed           = 1;
    o->corrupt_every  = 0;
    o->remote_only    = 0;
    o->progress       = PROGRESS_WAIT;
    o->verbose        = 0;

    opterr = 0;
    while ((c = getopt_long(argc, argv, ":h", longopts, NULL)) != -1) {
        switch (c) {
        case OPT_LOAD:
            o->load = parse_double("--load", optarg, 1e-6, 10);
            break;
        case OPT_LINK_RATE:
            o->link_rate = parse_double("--link-rate", optarg, 1e-3, 1e7);
            break;
        case OPT_DURATION:
            o->duration = parse_double("--duration", optarg, 1e-3, 1e6);
            break;
        case OPT_SEED:
            o->seed = parse_uint("--seed", optarg);
            break;
        case OPT_CORRUPT:
            o->corrupt_every = parse_uint("--corrupt-every", optarg);
            break;
        case OPT_REMOTE:
            o->remote_only = 1;
            break;
        case OPT_SHORT:
            parse_range("--short", optarg, &o->short_min, &o->short_max);
            break;
        case OPT_LONG:
            parse_range("--long", optarg, &o->long_min, &o->long_max);
            break;
        case OPT_SHORT_FRACTION:
            o->short_fraction = parse_double("--short-fraction", optarg, 0,
                                             1);
            break;
        case OPT_DRAIN:
            o->drain = parse_double("--drain", optarg, 0, 1e6);
            break;
        case OPT_INFLIGHT:
            o->max_inflight = parse_size(optarg, &end);
            if ((o->max_inflight == 0) || (*end != '\0')) {
                bad_usage("--max-inflight: '%s' is not a size (bytes, K or "
                          "M suffix, at most 1G)", optarg);
            }
            break;
        case OPT_PROGRESS:
            if (!strcmp(optarg, "wait")) {
                o->progress = PROGRESS_WAIT;
            } else if (!strcmp(optarg, "poll")) {
                o->progress = PROGRESS_POLL;
            } else {
                bad_usage("--progress: '%s' is neither wait nor poll",
                          optarg);
            }
            break;
        case OPT_VERBOSE:
            o->verbose = 1;
            break;
        case 'h':
            if (launcher_rank() == 0) {
                usage(stdout);
            }
            exit(0);
        case ':':
            bad_usage("option '%s' needs a value", argv[optind - 1]);
        default:
            bad_usage("unknown option '%s'", argv[optind - 1]);
        }
    }
    if (optind < argc) {
        bad_usage("unexpected argument '%s'", argv[optind]);
    }
}

/* -------------------------------------------------------------- random -- */

/* xoshiro256** (Blackman, Vigna), seeded by splitmix64: small, fast and
 * the same everywhere, so --seed gives the same flows on any machine. */
static uint64_t splitmix64(uint64_t *x)
{
    uint64_t z = (*x += 0x9e3779b97f4a7c15ull);

    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static uint64_t rotl(uint64_t x, int k)
{
    return (x << k) | (x >> (64 - k));
}

static uint64_t rng_next(uint64_t *s)
{
    uint64_t result = rotl(s[1] * 5, 7) * 9;
    uint64_t t      = s[1] << 17;

    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3]  = rotl(s[3], 45);
    return result;
}

static void rng_seed(uint64_t *s, uint64_t seed, int rank)
{
    uint64_t x = seed ^ ((uint64_t)rank * 0xd1b54a32d192ed03ull);
    int i;

    for (i = 0; i < 4; ++i) {
        s[i] = splitmix64(&x);
    }
}

/* uniform in [0, 1) */
static double rng_uniform(uint64_t *s)
{
    return (double)(rng_next(s) >> 11) * 0x1.0p-53;
}

static size_t rng_log_uniform(uint64_t *s, size_t min, size_t max)
{
    double v = exp(log((double)min) +
                   rng_uniform(s) * (log((double)max) - log((double)min)));

    return (v < min) ? min : (v > max) ? max : (size_t)(v + 0.5);
}

/* Mean of the continuous log-uniform distribution on [min, max]. */
static double log_uniform_mean(size_t min, size_t max)
{
    return (min == max) ? (double)min :
           (double)(max - min) / log((double)max / (double)min);
}

/* ------------------------------------------------------------- payload -- */

static uint64_t pattern_base(uint32_t src, uint64_t seq, size_t size)
{
    uint64_t x = ((uint64_t)src << 40) ^ seq ^ ((uint64_t)size << 20);

    return splitmix64(&x);
}

/* Word k of the pattern after the header. */
static inline uint64_t pattern_word(uint64_t base, size_t k)
{
    return base + k * 0x9e3779b97f4a7c15ull;
}

static void payload_fill(uint8_t *buf, size_t size, uint32_t src,
                         uint64_t seq)
{
    uint64_t base = pattern_base(src, seq, size), w;
    flow_hdr_t hdr = {FLOWGEN_HDR_MAGIC, src, seq};
    size_t off, k;

    memcpy(buf, &hdr, sizeof(hdr));
    for (off = sizeof(hdr), k = 0; off < size; off += sizeof(w), ++k) {
        w = pattern_word(base, k);
        memcpy(buf + off, &w, (size - off < sizeof(w)) ? size - off :
                                                          sizeof(w));
    }
}

/* 1 if buf[0..size) is the payload of flow (src, seq). */
static int payload_ok(const uint8_t *buf, size_t size, uint32_t src,
                      uint64_t seq)
{
    uint64_t base = pattern_base(src, seq, size), w;
    flow_hdr_t hdr;
    size_t off, k, n;

    if (size < sizeof(hdr)) {
        return 0;
    }
    memcpy(&hdr, buf, sizeof(hdr));
    if ((hdr.magic != FLOWGEN_HDR_MAGIC) || (hdr.src != src) ||
        (hdr.seq != seq)) {
        return 0;
    }
    for (off = sizeof(hdr), k = 0; off < size; off += sizeof(w), ++k) {
        w = pattern_word(base, k);
        n = (size - off < sizeof(w)) ? size - off : sizeof(w);
        if (memcmp(buf + off, &w, n) != 0) {
            return 0;
        }
    }
    return 1;
}

/* ---------------------------------------------------------------- time -- */

static double now_s(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static double elapsed(const flowgen_t *fg)
{
    return now_s() - fg->t0;
}

/* ---------------------------------------------------------------- tags -- */

static ucp_tag_t make_tag(int kind, int rank, uint64_t seq)
{
    return ((ucp_tag_t)kind << TAG_KIND_SHIFT) |
           ((ucp_tag_t)rank << TAG_RANK_SHIFT) | (seq & TAG_SEQ_MASK);
}

static int tag_kind(ucp_tag_t tag)
{
    return (int)(tag >> TAG_KIND_SHIFT);
}

static int tag_rank(ucp_tag_t tag)
{
    return (int)((tag >> TAG_RANK_SHIFT) & TAG_RANK_MASK);
}

static uint64_t tag_seq(ucp_tag_t tag)
{
    return tag & TAG_SEQ_MASK;
}

/* ----------------------------------------------------------- callbacks -- */

/* Requests always complete through these (UCP_OP_ATTR_FLAG_NO_IMM_CMPL),
 * possibly inside the call that started them; they only record. */

static flowgen_t *the_fg; /* for the callbacks that have no user data */

static void on_flow_sent(void *request, ucs_status_t status, void *user_data)
{
    flow_t *f = user_data;

    if (status != UCS_OK) {
        the_fg->stat[ST_SEND_ERRORS]++;
    }
    f->sent          = 1;
    the_fg->inflight -= f->size;
    free(f->buf);
    f->buf = NULL;
    if (f->acked) {
        the_fg->unfinished--;
    }
    ucp_request_free(request);
}

static void on_rx_done(void *request, ucs_status_t status,
                       const ucp_tag_recv_info_t *info, void *user_data)
{
    rx_t *rx = user_data;

    rx->status     = status;
    rx->next       = the_fg->rx_done;
    the_fg->rx_done = rx;
    ucp_request_free(request);
}

static void on_ack_sent(void *request, ucs_status_t status, void *user_data)
{
    if (status != UCS_OK) {
        the_fg->stat[ST_SEND_ERRORS]++;
    }
    the_fg->rx_active--;
    ucp_request_free(request);
}

static void on_ack_received(void *request, ucs_status_t status,
                            const ucp_tag_recv_info_t *info, void *user_data)
{
    if (status != UCS_OK) {
        the_fg->stat[ST_RECV_ERRORS]++;
    }
    ucp_request_free(request);
}

/* -------------------------------------------------------------- flows -- */

static int draw_dest(flowgen_t *fg)
{
    int d;

    if (!fg->opt.remote_only) {
        d = (int)(rng_uniform(fg->rng) * (fg->size - 1));
        return (d >= fg->rank) ? d + 1 : d;
    }
    /* Rejection sampling: only processes on other hosts (checked that
     * there is one). */
    do {
        d = (int)(rng_uniform(fg->rng) * fg->size);
    } while (fg->host_of[d] == fg->host_of[fg->rank]);
    return d;
}

static flow_t *add_flow(flowgen_t *fg, double arrival, flow_class_t cls,
                        size_t size, int dest)
{
    flow_t *f;

    if (fg->nflows == fg->flows_cap) {
        fg->flows_cap = fg->flows_cap ? 2 * fg->flows_cap : 4096;
        fg->flows     = realloc(fg->flows, fg->flows_cap * sizeof(*fg->flows));
        if (fg->flows == NULL) {
            die(fg, "out of memory for the flow table", UCS_ERR_NO_MEMORY);
        }
    }
    f = &fg->flows[fg->nflows++];
    memset(f, 0, sizeof(*f));
    f->arrival = arrival;
    f->cls     = (uint8_t)cls;
    f->size    = (uint32_t)size;
    f->dest    = dest;
    fg->unfinished++;
    return f;
}

static void post_flow(flowgen_t *fg, flow_t *f)
{
    uint64_t seq = (uint64_t)(f - fg->flows);
    ucp_request_param_t param;
    ucs_status_ptr_t req;

    f->buf = malloc(f->size);
    if (f->buf == NULL) {
        die(fg, "out of memory for a flow's payload", UCS_ERR_NO_MEMORY);
    }
    payload_fill(f->buf, f->size, (uint32_t)fg->rank, seq);
    if ((fg->opt.corrupt_every > 0) && (f->cls != CLASS_WARM) &&
        (seq % fg->opt.corrupt_every == 0)) {
        f->buf[f->size - 1] ^= 0x40;
    }
    memset(&param, 0, sizeof(param));
    param.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK |
                         UCP_OP_ATTR_FIELD_USER_DATA |
                         UCP_OP_ATTR_FLAG_NO_IMM_CMPL;
    param.cb.send      = on_flow_sent;
    param.user_data    = f;
    f->posted          = 1;
    fg->inflight      += f->size;
    req = ucp_tag_send_nbx(fg->eps[f->dest], f->buf, f->size,
                           make_tag(KIND_DATA, fg->rank, seq), &param);
    if (UCS_PTR_IS_ERR(req)) {
        fprintf(stderr, "%s: rank %d: flow %" PRIu64 " to rank %d: %s\n",
                prog_name, fg->rank, seq, f->dest,
                ucs_status_string(UCS_PTR_STATUS(req)));
        fg->stat[ST_SEND_ERRORS]++;
        /* never acknowledged: stays unfinished, counted incomplete */
        f->sent       = 1;
        fg->inflight -= f->size;
        free(f->buf);
        f->buf = NULL;
    }
}

/* Post waiting flows in arrival order while the in-flight budget allows
 * (one at a time past it, so that a flow larger than the budget goes). */
static void post_waiting(flowgen_t *fg, double t)
{
    flow_t *f;

    while (fg->next_post < fg->nflows) {
        f = &fg->flows[fg->next_post];
        if ((f->arrival > t) ||
            ((fg->inflight > 0) &&
             (fg->inflight + f->size > fg->opt.max_inflight))) {
            return;
        }
        if (t - f->arrival > 0.001) {
            fg->stat[ST_LATE_POSTS]++;
        }
        post_flow(fg, f);
        fg->next_post++;
    }
}

static void ack_received(flowgen_t *fg, ucp_tag_t tag, double t)
{
    uint64_t seq = tag_seq(tag);
    flow_t *f;

    if ((seq >= fg->nflows) || !fg->flows[seq].posted ||
        fg->flows[seq].acked || (fg->flows[seq].dest != tag_rank(tag))) {
        fg->stat[ST_PROTO_ERRORS]++;
        return;
    }
    f        = &fg->flows[seq];
    f->acked = 1;
    f->done  = t;
    if (tag & TAG_BAD_BIT) {
        fg->stat[ST_BAD_ACK]++;
    }
    if (f->sent) {
        fg->unfinished--;
    }
}

/* Take every message that arrived: data into a buffer of its size, acks
 * (zero length, the news is in the tag) to nowhere. */
static int receive_arrivals(flowgen_t *fg)
{
    ucp_request_param_t param;
    ucp_tag_recv_info_t info;
    ucp_tag_message_h msg;
    ucs_status_ptr_t req;
    int count = 0;
    rx_t *rx;

    while ((msg = ucp_tag_probe_nb(fg->worker, 0, 0, 1, &info)) != NULL) {
        count++;
        memset(&param, 0, sizeof(param));
        param.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK |
                             UCP_OP_ATTR_FIELD_USER_DATA |
                             UCP_OP_ATTR_FLAG_NO_IMM_CMPL;
        if ((tag_kind(info.sender_tag) == KIND_ACK) && (info.length == 0)) {
            ack_received(fg, info.sender_tag, elapsed(fg));
            param.cb.recv = on_ack_received;
            req = ucp_tag_msg_recv_nbx(fg->worker, NULL, 0, msg, &param);
        } else {
            rx = calloc(1, sizeof(*rx));
            if ((rx == NULL) ||
                ((rx->buf = malloc(info.length ? info.length : 1)) == NULL)) {
                die(fg, "out of memory for a received flow",
                    UCS_ERR_NO_MEMORY);
            }
            rx->size        = info.length;
            rx->tag         = info.sender_tag;
            param.cb.recv   = on_rx_done;
            param.user_data = rx;
            fg->rx_active++;
            req = ucp_tag_msg_recv_nbx(fg->worker, rx->buf, info.length, msg,
                                       &param);
        }
        if (UCS_PTR_IS_ERR(req)) {
            fprintf(stderr, "%s: rank %d: receive of tag 0x%" PRIx64 ": %s\n",
                    prog_name, fg->rank, (uint64_t)info.sender_tag,
                    ucs_status_string(UCS_PTR_STATUS(req)));
            fg->stat[ST_RECV_ERRORS]++;
        }
    }
    return count;
}

/* Check the received flows and acknowledge them. */
static int ack_finished_receives(flowgen_t *fg)
{
    ucp_request_param_t param;
    ucs_status_ptr_t req;
    int count = 0, src, good;
    rx_t *rx;

    while ((rx = fg->rx_done) != NULL) {
        fg->rx_done = rx->next;
        count++;
        src = tag_rank(rx->tag);
        if ((tag_kind(rx->tag) != KIND_DATA) || (src >= fg->size) ||
            (src == fg->rank)) {
            fg->stat[ST_PROTO_ERRORS]++;
            fg->rx_active--;
            free(rx->buf);
            free(rx);
            continue;
        }
        if (rx->status != UCS_OK) {
            fg->stat[ST_RECV_ERRORS]++;
        }
        good = (rx->status == UCS_OK) &&
               payload_ok(rx->buf, rx->size, (uint32_t)src, tag_seq(rx->tag));
        if (!good) {
            fg->stat[ST_BAD_DATA]++;
            fprintf(stderr, "%s: rank %d: flow %" PRIu64 " from rank %d "
                    "(%zu B): bad data\n", prog_name, fg->rank,
                    tag_seq(rx->tag), src, rx->size);
        }
        fg->stat[ST_RX_FLOWS]++;
        fg->stat[ST_RX_BYTES] += (double)rx->size;
        memset(&param, 0, sizeof(param));
        param.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK |
                             UCP_OP_ATTR_FLAG_NO_IMM_CMPL;
        param.cb.send      = on_ack_sent;
        req = ucp_tag_send_nbx(fg->eps[src], NULL, 0,
                               make_tag(KIND_ACK, fg->rank, tag_seq(rx->tag)) |
                               (good ? 0 : TAG_BAD_BIT), &param);
        if (UCS_PTR_IS_ERR(req)) {
            fg->stat[ST_SEND_ERRORS]++;
            fg->rx_active--;
        }
        free(rx->buf);
        free(rx);
    }
    return count;
}

/* One round of work: UCP progress, arrivals, acks. Nonzero if anything
 * happened. */
static int serve(flowgen_t *fg)
{
    int did = 0;

    did += (int)ucp_worker_progress(fg->worker);
    did += receive_arrivals(fg);
    did += ack_finished_receives(fg);
    return did;
}

/* Nothing to do until `until` (s since the start) unless a message comes:
 * sleep on the worker's event fd (wait mode), or just return (poll). */
static void idle(flowgen_t *fg, double until)
{
    struct pollfd pfd = {fg->efd, POLLIN, 0};
    struct timespec ts;
    double dt;

    if (fg->opt.progress == PROGRESS_POLL) {
        return;
    }
    if (ucp_worker_arm(fg->worker) != UCS_OK) {
        return; /* UCS_ERR_BUSY: events are pending, progress again */
    }
    dt = until - elapsed(fg);
    if (dt <= 0) {
        return;
    }
    if (dt > 0.1) {
        dt = 0.1;
    }
    ts.tv_sec  = (time_t)dt;
    ts.tv_nsec = (long)((dt - (double)ts.tv_sec) * 1e9);
    ppoll(&pfd, 1, &ts, NULL);
}

/* Serve the others until every process got here (MPI_Ibarrier), then
 * until our acks are sent. MPI is progressed by MPI_Test only, so this
 * polls, with short naps. */
static void serve_until_all_arrive(flowgen_t *fg, double limit)
{
    struct timespec nap = {0, 50000};
    MPI_Request barrier;
    int arrived = 0, did;
    double start    = now_s();

    MPI_Ibarrier(MPI_COMM_WORLD, &barrier);
    while (!arrived) {
        did = serve(fg);
        MPI_Test(&barrier, &arrived, MPI_STATUS_IGNORE);
        if (!did) {
            nanosleep(&nap, NULL);
        }
    }
    while ((fg->rx_active > 0) && (now_s() - start < limit)) {
        if (!serve(fg)) {
            nanosleep(&nap, NULL);
        }
    }
}

/* Warm-up: a short and a long flow to every other process, not timed. */
static void warm_up(flowgen_t *fg)
{
    double start = now_s();
    int peer;

    fg->t0 = start;
    for (peer = 0; peer < fg->size; ++peer) {
        if (peer == fg->rank) {
            continue;
        }
        post_flow(fg, add_flow(fg, 0, CLASS_WARM, fg->opt.short_min, peer));
        post_flow(fg, add_flow(fg, 0, CLASS_WARM, fg->opt.long_min, peer));
    }
    fg->next_post = fg->nflows;
    while ((fg->unfinished > 0) && (now_s() - start < 60)) {
        if (!serve(fg)) {
            idle(fg, elapsed(fg) + 0.01);
        }
    }
    if (fg->unfinished > 0) {
        fprintf(stderr, "%s: rank %d: %zu warm-up flow(s) unfinished after "
                "60 s\n", prog_name, fg->rank, fg->unfinished);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    serve_until_all_arrive(fg, 60);
    /* the others' warm-up flows are in: count from zero */
    fg->stat[ST_RX_FLOWS]   = 0;
    fg->stat[ST_RX_BYTES]   = 0;
    fg->stat[ST_LATE_POSTS] = 0;
}

/* Generate, post and serve flows for the duration, then finish them
 * (at most --drain seconds more). */
static void run_flows(flowgen_t *fg)
{
    const flowgen_opts_t *o = &fg->opt;
    double mean_size, rate, next, t, wake;
    size_t size;
    int is_short;

    mean_size = o->short_fraction * log_uniform_mean(o->short_min,
                                                     o->short_max) +
                (1 - o->short_fraction) * log_uniform_mean(o->long_min,
                                                           o->long_max);
    rate = o->load * o->link_rate * 1048576.0 /
           (fg->local_procs * mean_size);
    if (o->verbose) {
        fprintf(stderr, "%s: rank %d: %.1f flows/s (mean %.0f B, %d "
                "processes on this host)\n", prog_name, fg->rank, rate,
                mean_size, fg->local_procs);
    }

    fg->t0 = now_s();
    next   = -log(1 - rng_uniform(fg->rng)) / rate;
    for (;;) {
        t = elapsed(fg);
        while (next <= t && next < o->duration) {
            is_short = rng_uniform(fg->rng) < o->short_fraction;
            size     = is_short ?
                       rng_log_uniform(fg->rng, o->short_min, o->short_max) :
                       rng_log_uniform(fg->rng, o->long_min, o->long_max);
            add_flow(fg, next, is_short ? CLASS_SHORT : CLASS_LONG, size,
                     draw_dest(fg));
            next += -log(1 - rng_uniform(fg->rng)) / rate;
        }
        post_waiting(fg, t);
        if ((next >= o->duration) && (fg->unfinished == 0)) {
            break;
        }
        if (t > o->duration + o->drain) {
            fprintf(stderr, "%s: rank %d: %zu flow(s) unfinished %g s "
                    "after the arrivals ended\n", prog_name, fg->rank,
                    fg->unfinished, o->drain);
            break;
        }
        if (serve(fg)) {
            continue;
        }
        wake = (next < o->duration) ? next : o->duration + o->drain;
        if ((fg->next_post < fg->nflows) &&
            (fg->flows[fg->next_post].arrival < wake)) {
            wake = fg->flows[fg->next_post].arrival;
        }
        idle(fg, wake);
    }
}

/* ------------------------------------------------------------- results -- */

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double*)a, y = *(const double*)b;

    return (x < y) ? -1 : (x > y);
}

/* Nearest-rank percentile P of the sorted v[0..n). */
static double percentile(const double *v, size_t n, double p)
{
    size_t k = (size_t)ceil(p / 100.0 * (double)n);

    if (n == 0) {
        return NAN;
    }
    return v[((k < 1) ? 1 : (k > n) ? n : k) - 1];
}

static double mean(const double *v, size_t n)
{
    double sum = 0;
    size_t i;

    for (i = 0; i < n; ++i) {
        sum += v[i];
    }
    return n ? sum / (double)n : NAN;
}

/* The FCTs (us) of this process's completed flows of class cls. */
static double *own_fcts(const flowgen_t *fg, flow_class_t cls, int *n)
{
    double *v = malloc((fg->nflows + 1) * sizeof(*v));
    size_t i;

    *n = 0;
    for (i = 0; (v != NULL) && (i < fg->nflows); ++i) {
        if ((fg->flows[i].cls == cls) && fg->flows[i].acked) {
            v[(*n)++] = (fg->flows[i].done - fg->flows[i].arrival) * 1e6;
        }
    }
    return v;
}

/* All processes' FCTs of class cls, sorted, at rank 0 (NULL elsewhere). */
static double *gather_fcts(flowgen_t *fg, flow_class_t cls, size_t *total)
{
    int n, i, sum = 0, *counts = NULL, *displs = NULL;
    double *mine, *all = NULL;

    mine = own_fcts(fg, cls, &n);
    if (mine == NULL) {
        die(fg, "out of memory for the results", UCS_ERR_NO_MEMORY);
    }
    if (fg->rank == 0) {
        counts = calloc((size_t)fg->size, sizeof(int));
        displs = calloc((size_t)fg->size, sizeof(int));
    }
    MPI_Gather(&n, 1, MPI_INT, counts, 1, MPI_INT, 0, MPI_COMM_WORLD);
    if (fg->rank == 0) {
        for (i = 0; i < fg->size; ++i) {
            displs[i] = sum;
            sum      += counts[i];
        }
        all = malloc(((size_t)sum + 1) * sizeof(*all));
        if (all == NULL) {
            die(fg, "out of memory for the results", UCS_ERR_NO_MEMORY);
        }
    }
    MPI_Gatherv(mine, n, MPI_DOUBLE, all, counts, displs, MPI_DOUBLE, 0,
                MPI_COMM_WORLD);
    free(mine);
    free(counts);
    free(displs);
    if (all != NULL) {
        qsort(all, (size_t)sum, sizeof(*all), cmp_double);
    }
    *total = (size_t)sum;
    return all;
}

static void count_own_flows(flowgen_t *fg)
{
    const flow_t *f;
    size_t i;

    for (i = 0; i < fg->nflows; ++i) {
        f = &fg->flows[i];
        if (f->cls == CLASS_WARM) {
            continue;
        }
        fg->stat[ST_FLOWS]++;
        fg->stat[(f->cls == CLASS_SHORT) ? ST_SHORT : ST_LONG]++;
        fg->stat[ST_BYTES] += f->size;
        if (f->acked && f->sent) {
            fg->stat[ST_COMPLETE]++;
            fg->stat[ST_BYTES_DONE] += f->size;
            if (f->done > fg->stat[ST_LAST_DONE]) {
                fg->stat[ST_LAST_DONE] = f->done;
            }
        } else {
            fg->stat[ST_INCOMPLETE]++;
        }
    }
}

static const char *size_text(size_t b, char *buf, size_t max)
{
    if ((b >= (1u << 20)) && (b % (1u << 20) == 0)) {
        snprintf(buf, max, "%zu MB", b >> 20);
    } else if ((b >= 1024) && (b % 1024 == 0)) {
        snprintf(buf, max, "%zu KB", b >> 10);
    } else {
        snprintf(buf, max, "%zu B", b);
    }
    return buf;
}

/* Rank 0: the report; returns the number of errors. */
static double report(flowgen_t *fg, const double *all_stats,
                     const double *shorts, size_t nshort,
                     const double *longs, size_t nlong)
{
    const flowgen_opts_t *o = &fg->opt;
    double s[ST_COUNT] = {0}, host_rate, offered, achieved, errors;
    double sm, s50, s99, lm, l50, l99;
    char a[32], b[32], c[32], d[32];
    int r, k;

    for (r = 0; r < fg->size; ++r) {
        for (k = 0; k < ST_COUNT; ++k) {
            if (k == ST_LAST_DONE) {
                if (all_stats[r * ST_COUNT + k] > s[k]) {
                    s[k] = all_stats[r * ST_COUNT + k];
                }
            } else {
                s[k] += all_stats[r * ST_COUNT + k];
            }
        }
    }
    host_rate = fg->nhosts * o->link_rate * 1048576.0;
    offered   = s[ST_BYTES] / o->duration / host_rate;
    achieved  = (s[ST_LAST_DONE] > 0) ?
                s[ST_BYTES_DONE] / s[ST_LAST_DONE] / host_rate : 0;
    errors    = s[ST_BAD_DATA] + s[ST_BAD_ACK] + s[ST_SEND_ERRORS] +
                s[ST_RECV_ERRORS] + s[ST_PROTO_ERRORS] + s[ST_INCOMPLETE];
    sm = mean(shorts, nshort);
    s50 = percentile(shorts, nshort, 50);
    s99 = percentile(shorts, nshort, 99);
    lm = mean(longs, nlong);
    l50 = percentile(longs, nlong, 50);
    l99 = percentile(longs, nlong, 99);

    printf("srm_flowgen: %d processes on %d host%s, load %.2f of %g MB/s per "
           "host, %g s, seed %" PRIu64 "%s, progress %s\n", fg->size,
           fg->nhosts, (fg->nhosts == 1) ? "" : "s", o->load, o->link_rate,
           o->duration, o->seed,
           o->remote_only ? ", remote destinations only" : "",
           (o->progress == PROGRESS_WAIT) ? "wait" : "poll");
    printf("  flows: %.0f (%.0f short, %.0f long), %.0f complete, %.0f "
           "received; %.0f posted more than 1 ms after their arrival\n",
           s[ST_FLOWS], s[ST_SHORT], s[ST_LONG], s[ST_COMPLETE],
           s[ST_RX_FLOWS], s[ST_LATE_POSTS]);
    printf("  load: offered %.3f (%.1f MB/s per host), achieved %.3f "
           "(%.1f MB/s per host, last flow done at %.2f s)\n", offered,
           offered * o->link_rate, achieved, achieved * o->link_rate,
           s[ST_LAST_DONE]);
    printf("  short flows (%s-%s): FCT mean %.1f us, p50 %.1f us, "
           "p99 %.1f us\n", size_text(o->short_min, a, sizeof(a)),
           size_text(o->short_max, b, sizeof(b)), sm, s50, s99);
    printf("  long flows (%s-%s): FCT mean %.1f us, p50 %.1f us, "
           "p99 %.1f us\n", size_text(o->long_min, c, sizeof(c)),
           size_text(o->long_max, d, sizeof(d)), lm, l50, l99);
    printf("  errors: %.0f (bad data %.0f, bad acks %.0f, send %.0f, "
           "receive %.0f, protocol %.0f, incomplete %.0f)\n", errors,
           s[ST_BAD_DATA], s[ST_BAD_ACK], s[ST_SEND_ERRORS],
           s[ST_RECV_ERRORS], s[ST_PROTO_ERRORS], s[ST_INCOMPLETE]);
    printf("flowgen: procs=%d hosts=%d load=%g link_rate_MBps=%g "
           "duration_s=%g seed=%" PRIu64 " remote_only=%d flows=%.0f "
           "short=%.0f long=%.0f complete=%.0f short_mean_us=%.1f "
           "short_p50_us=%.1f short_p99_us=%.1f long_mean_us=%.1f "
           "long_p50_us=%.1f long_p99_us=%.1f offered_load=%.4f "
           "achieved_load=%.4f offered_MBps=%.2f achieved_MBps=%.2f "
           "errors=%.0f bad_data=%.0f bad_ack=%.0f send_errors=%.0f "
           "recv_errors=%.0f proto_errors=%.0f incomplete=%.0f\n",
           fg->size, fg->nhosts, o->load, o->link_rate, o->duration, o->seed,
           o->remote_only, s[ST_FLOWS], s[ST_SHORT], s[ST_LONG],
           s[ST_COMPLETE], sm, s50, s99, lm, l50, l99, offered, achieved,
           offered * o->link_rate, achieved * o->link_rate, errors,
           s[ST_BAD_DATA], s[ST_BAD_ACK], s[ST_SEND_ERRORS],
           s[ST_RECV_ERRORS], s[ST_PROTO_ERRORS], s[ST_INCOMPLETE]);
    fflush(stdout);
    return errors;
}

/* --------------------------------------------------------------- setup -- */

/* Host index of every rank, from the MPI processor names. */
static void find_hosts(flowgen_t *fg)
{
    char name[MPI_MAX_PROCESSOR_NAME] = {0}, *names;
    int len, r, q;

    MPI_Get_processor_name(name, &len);
    names       = calloc((size_t)fg->size, MPI_MAX_PROCESSOR_NAME);
    fg->host_of = calloc((size_t)fg->size, sizeof(int));
    if ((names == NULL) || (fg->host_of == NULL)) {
        die(fg, "out of memory", UCS_ERR_NO_MEMORY);
    }
    MPI_Allgather(name, MPI_MAX_PROCESSOR_NAME, MPI_CHAR, names,
                  MPI_MAX_PROCESSOR_NAME, MPI_CHAR, MPI_COMM_WORLD);
    fg->nhosts = 0;
    for (r = 0; r < fg->size; ++r) {
        for (q = 0; q < r; ++q) {
            if (!strcmp(names + (size_t)q * MPI_MAX_PROCESSOR_NAME,
                        names + (size_t)r * MPI_MAX_PROCESSOR_NAME)) {
                break;
            }
        }
        fg->host_of[r] = (q < r) ? fg->host_of[q] : fg->nhosts++;
    }
    fg->local_procs = 0;
    for (r = 0; r < fg->size; ++r) {
        fg->local_procs += fg->host_of[r] == fg->host_of[fg->rank];
    }
    free(names);
}

static void ucp_setup(flowgen_t *fg)
{
    ucp_worker_params_t wparams;
    ucp_worker_attr_t wattr;
    ucp_ep_params_t eparams;
    ucp_params_t params;
    ucp_config_t *config;
    ucs_status_t status;
    int *lens, *displs, len, total, r;
    char *addrs;

    memset(&params, 0, sizeof(params));
    params.field_mask = UCP_PARAM_FIELD_FEATURES;
    params.features   = UCP_FEATURE_TAG;
    if (fg->opt.progress == PROGRESS_WAIT) {
        params.features |= UCP_FEATURE_WAKEUP;
    }
    status = ucp_config_read(NULL, NULL, &config);
    if (status != UCS_OK) {
        die(fg, "ucp_config_read", status);
    }
    status = ucp_init(&params, config, &fg->context);
    ucp_config_release(config);
    if (status != UCS_OK) {
        die(fg, "ucp_init", status);
    }
    memset(&wparams, 0, sizeof(wparams));
    wparams.field_mask  = UCP_WORKER_PARAM_FIELD_THREAD_MODE;
    wparams.thread_mode = UCS_THREAD_MODE_SINGLE;
    status = ucp_worker_create(fg->context, &wparams, &fg->worker);
    if (status != UCS_OK) {
        die(fg, "ucp_worker_create", status);
    }
    fg->efd = -1;
    if (fg->opt.progress == PROGRESS_WAIT) {
        status = ucp_worker_get_efd(fg->worker, &fg->efd);
        if (status != UCS_OK) {
            die(fg, "ucp_worker_get_efd (try --progress poll)", status);
        }
    }

    wattr.field_mask = UCP_WORKER_ATTR_FIELD_ADDRESS;
    status = ucp_worker_query(fg->worker, &wattr);
    if (status != UCS_OK) {
        die(fg, "ucp_worker_query", status);
    }
    lens   = calloc((size_t)fg->size, sizeof(int));
    displs = calloc((size_t)fg->size, sizeof(int));
    fg->eps = calloc((size_t)fg->size, sizeof(*fg->eps));
    if ((lens == NULL) || (displs == NULL) || (fg->eps == NULL)) {
        die(fg, "out of memory", UCS_ERR_NO_MEMORY);
    }
    len = (int)wattr.address_length;
    MPI_Allgather(&len, 1, MPI_INT, lens, 1, MPI_INT, MPI_COMM_WORLD);
    for (total = 0, r = 0; r < fg->size; ++r) {
        displs[r] = total;
        total    += lens[r];
    }
    addrs = malloc((size_t)total);
    if (addrs == NULL) {
        die(fg, "out of memory", UCS_ERR_NO_MEMORY);
    }
    MPI_Allgatherv(wattr.address, len, MPI_BYTE, addrs, lens, displs,
                   MPI_BYTE, MPI_COMM_WORLD);
    ucp_worker_release_address(fg->worker, wattr.address);

    for (r = 0; r < fg->size; ++r) {
        if (r == fg->rank) {
            continue;
        }
        memset(&eparams, 0, sizeof(eparams));
        eparams.field_mask = UCP_EP_PARAM_FIELD_REMOTE_ADDRESS;
        eparams.address    = (const ucp_address_t*)(addrs + displs[r]);
        status = ucp_ep_create(fg->worker, &eparams, &fg->eps[r]);
        if (status != UCS_OK) {
            die(fg, "ucp_ep_create", status);
        }
    }
    free(addrs);
    free(lens);
    free(displs);
}

/* Close every endpoint (flushing), serving the others meanwhile, as
 * Open MPI's pml ucx does at MPI_Finalize; then a barrier. */
static void ucp_teardown(flowgen_t *fg)
{
    ucp_request_param_t param;
    ucs_status_ptr_t *reqs;
    int r, pending;

    reqs = calloc((size_t)fg->size, sizeof(*reqs));
    memset(&param, 0, sizeof(param));
    for (r = 0; (reqs != NULL) && (r < fg->size); ++r) {
        if (fg->eps[r] != NULL) {
            reqs[r] = ucp_ep_close_nbx(fg->eps[r], &param);
        }
    }
    do {
        ucp_worker_progress(fg->worker);
        pending = 0;
        for (r = 0; (reqs != NULL) && (r < fg->size); ++r) {
            if ((reqs[r] == NULL) || UCS_PTR_IS_ERR(reqs[r])) {
                continue;
            }
            if (ucp_request_check_status(reqs[r]) == UCS_INPROGRESS) {
                pending = 1;
            } else {
                ucp_request_free(reqs[r]);
                reqs[r] = NULL;
            }
        }
    } while (pending);
    free(reqs);
    MPI_Barrier(MPI_COMM_WORLD);
    ucp_worker_destroy(fg->worker);
    ucp_cleanup(fg->context);
}

int main(int argc, char **argv)
{
    double *all_stats = NULL, *shorts, *longs, errors = 0;
    size_t nshort, nlong;
    flowgen_t fg;
    int fail;

    memset(&fg, 0, sizeof(fg));
    the_fg = &fg;
    parse_options(argc, argv, &fg.opt);

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &fg.rank);
    MPI_Comm_size(MPI_COMM_WORLD, &fg.size);
    if ((fg.size < 2) || (fg.size > (int)MAX_RANKS)) {
        if (fg.rank == 0) {
            fprintf(stderr, "%s: needs 2 to %llu processes, not %d\n",
                    prog_name, (unsigned long long)MAX_RANKS, fg.size);
        }
        MPI_Finalize();
        return 2;
    }
    find_hosts(&fg);
    if (fg.opt.remote_only && (fg.nhosts < 2)) {
        if (fg.rank == 0) {
            fprintf(stderr, "%s: --remote-only, but all %d processes run on "
                    "one host\n", prog_name, fg.size);
        }
        MPI_Finalize();
        return 2;
    }
    rng_seed(fg.rng, fg.opt.seed, fg.rank);
    ucp_setup(&fg);

    warm_up(&fg);
    run_flows(&fg);
    serve_until_all_arrive(&fg, 10);

    count_own_flows(&fg);
    if (fg.rx_active > 0) {
        fg.stat[ST_INCOMPLETE] += (double)fg.rx_active;
    }
    if (fg.opt.verbose) {
        fprintf(stderr, "%s: rank %d: %.0f flows, %.0f complete, %.0f "
                "received, %.0f late posts\n", prog_name, fg.rank,
                fg.stat[ST_FLOWS], fg.stat[ST_COMPLETE], fg.stat[ST_RX_FLOWS],
                fg.stat[ST_LATE_POSTS]);
    }
    if (fg.rank == 0) {
        all_stats = malloc((size_t)fg.size * ST_COUNT * sizeof(double));
        if (all_stats == NULL) {
            die(&fg, "out of memory for the results", UCS_ERR_NO_MEMORY);
        }
    }
    MPI_Gather(fg.stat, ST_COUNT, MPI_DOUBLE, all_stats, ST_COUNT, MPI_DOUBLE,
               0, MPI_COMM_WORLD);
    shorts = gather_fcts(&fg, CLASS_SHORT, &nshort);
    longs  = gather_fcts(&fg, CLASS_LONG, &nlong);
    if (fg.rank == 0) {
        errors = report(&fg, all_stats, shorts, nshort, longs, nlong);
    }
    free(all_stats);
    free(shorts);
    free(longs);
    fail = errors > 0;
    MPI_Bcast(&fail, 1, MPI_INT, 0, MPI_COMM_WORLD);

    /* With flows unfinished, requests still refer to our buffers: leave
     * without tearing UCP down. */
    if (!fail) {
        ucp_teardown(&fg);
        free(fg.flows);
    }
    free(fg.eps);
    free(fg.host_of);
    MPI_Finalize();
    return fail ? 1 : 0;
}
