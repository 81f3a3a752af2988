/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * srm_slow_receiver - one receiving process stops polling for a while: the
 * traffic between the other process pairs of the same two hosts must keep
 * flowing, and nothing may be lost when the slow receiver resumes.
 *
 * Needs 4 ranks, 2 per host, placed host by host: ranks 0 and 1 on host A,
 * ranks 2 and 3 on host B (checked with MPI_Get_processor_name).
 *
 *   rank 0  streamer: MSG-byte messages to rank 2, each carrying its
 *           sequence number and a pattern derived from it, with a window of
 *           WINDOW outstanding MPI_Isend's so that the channel stays full;
 *           for WARM + STALL + AFTER seconds, then an END message with the
 *           number of messages sent.
 *   rank 2  sink: receives and verifies every byte and the order; after
 *           WARM seconds it makes no MPI call at all for STALL seconds
 *           (sleeps), then resumes and receives the rest until END.
 *   rank 1  pinger: 8 B ping-pong with rank 3 all along, recording the time
 *           every round trip completes, until rank 2 sends it the stall's
 *           start and end (after the stream is over).
 *   rank 3  ponger: answers rank 1 until told to stop.
 *
 * MSG must stay below UCX's rendezvous threshold (64 KB goes eagerly over
 * srm, 1 MB does not): a rendezvous sender waits for the stalled receiver,
 * and then nothing piles up in front of it.
 *
 * Times are CLOCK_MONOTONIC, one clock for all the simulated hosts of one
 * machine; a barrier checks that the ranks' clocks agree.
 *
 * Rank 0 prints
 *     pingpong during stall: N round trips (max gap X ms)
 *     stream: M messages, L lost, O out of order, C corrupted
 * and last "srm_slow_receiver: ok" or "srm_slow_receiver: FAILED (...)".
 * Exit status 1 when a stream message was lost, corrupted or out of order,
 * or no round trip completed during the stall; every wait has a deadline
 * (-T) past which the job is aborted (exit status not 0).
 *
 * Usage: srm_slow_receiver [-s MSG_BYTES] [-w WINDOW] [-W WARM] [-S STALL]
 *                          [-A AFTER] [-T DEADLINE]
 *        defaults: -s 65536 -w 64 -W 0.5 -S 2 -A 1 -T 60
 */
#include <mpi.h>

#include "srm_two_hosts.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define TAG_DATA   1
#define TAG_END    2
#define TAG_PING   3
#define TAG_STOP   4
#define TAG_TIMES  5
#define MAX_RTT    (1u << 21)

static double deadline;  /* absolute, now() clock: give up past this */
static int    my_rank;

static double now(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static void sleep_until(double t)
{
    struct timespec ts;
    double left;

    while ((left = t - now()) > 0) {
        ts.tv_sec  = (time_t)left;
        ts.tv_nsec = (long)((left - ts.tv_sec) * 1e9);
        if ((nanosleep(&ts, NULL) != 0) && (errno != EINTR)) {
            break;
        }
    }
}

static void give_up(const char *what)
{
    fprintf(stderr, "rank %d: srm_slow_receiver: FAILED (deadline passed "
            "waiting for %s)\n", my_rank, what);
    fflush(stderr);
    MPI_Abort(MPI_COMM_WORLD, 3);
}

/* MPI_Wait with the global deadline */
static void wait_req(MPI_Request *req, MPI_Status *st, const char *what)
{
    int done = 0;

    for (;;) {
        MPI_Test(req, &done, st);
        if (done) {
            return;
        }
        if (now() > deadline) {
            give_up(what);
        }
    }
}

/* ---------------------------------------------------------- the pattern -- */

static uint64_t word(uint64_t seq, size_t i)
{
    return (seq * 0x9e3779b97f4a7c15ull) ^
           ((uint64_t)i * 0xbf58476d1ce4e5b9ull);
}

static void fill(uint64_t *w, size_t nwords, uint64_t seq)
{
    size_t i;

    w[0] = seq;
    w[1] = ~seq;
    for (i = 2; i < nwords; ++i) {
        w[i] = word(seq, i);
    }
}

/* bytes that differ from message seq's pattern */
static size_t check(const uint64_t *w, size_t nwords, uint64_t seq)
{
    size_t i, bad = 0;
    uint64_t x;
    int b;

    for (i = 0; i < nwords; ++i) {
        x = (i == 0) ? seq : (i == 1) ? ~seq : word(seq, i);
        x ^= w[i];
        if (x) {
            for (b = 0; b < 8; ++b) {
                bad += ((x >> (8 * b)) & 0xff) != 0;
            }
        }
    }
    return bad;
}

/* ----------------------------------------------------------- the ranks -- */

typedef struct {
    double stall_start, stall_end;      /* rank 2 */
    double msgs, lost, disorder, corrupt, dup, bytes, end_count;
    double rtt_total, rtt_stall, max_gap, rtt_before, rtt_after;
    double covered;                     /* 1: ping-pong spans the stall */
    double stream_secs, sent;           /* rank 0 */
} result_t;

#define RESULT_DOUBLES (sizeof(result_t) / sizeof(double))

static void streamer(size_t msg, int window, double stop, result_t *res)
{
    MPI_Request *reqs = malloc(sizeof(*reqs) * window);
    uint64_t **bufs   = malloc(sizeof(*bufs) * window);
    size_t nwords     = msg / 8;
    uint64_t seq      = 0, count;
    double t0         = now();
    int i, idx, done;

    if (!reqs || !bufs) {
        give_up("memory");
    }
    for (i = 0; i < window; ++i) {
        bufs[i] = malloc(msg);
        if (!bufs[i]) {
            give_up("memory");
        }
        reqs[i] = MPI_REQUEST_NULL;
    }

    while (now() < stop) {
        if (seq < (uint64_t)window) {
            idx = (int)seq;
        } else {
            /* the oldest slot first keeps a simple round-robin over bufs */
            idx = (int)(seq % window);
            done = 0;
            while (!done) {
                MPI_Test(&reqs[idx], &done, MPI_STATUS_IGNORE);
                if (!done && (now() > deadline)) {
                    give_up("a stream send to complete");
                }
            }
        }
        fill(bufs[idx], nwords, seq);
        MPI_Isend(bufs[idx], (int)msg, MPI_BYTE, 2, TAG_DATA, MPI_COMM_WORLD,
                  &reqs[idx]);
        ++seq;
    }
    for (i = 0; i < window; ++i) {
        wait_req(&reqs[i], MPI_STATUS_IGNORE, "the last stream sends");
    }
    count = seq;
    MPI_Send(&count, (int)sizeof(count), MPI_BYTE, 2, TAG_END,
             MPI_COMM_WORLD);
    res->sent        = (double)seq;
    res->stream_secs = now() - t0;

    for (i = 0; i < window; ++i) {
        free(bufs[i]);
    }
    free(bufs);
    free(reqs);
}

static void sink(size_t msg, double warm_end, double stall, result_t *res)
{
    uint64_t *buf = malloc(msg);
    size_t nwords = msg / 8, bad;
    unsigned char *seen = NULL;
    size_t seen_size = 0;
    uint64_t expect = 0, seq, sent = 0, ndistinct = 0;
    int stalled = 0, count;
    MPI_Request req;
    MPI_Status st;

    if (!buf) {
        give_up("memory");
    }
    for (;;) {
        if (!stalled && (now() >= warm_end)) {
            /* no MPI call at all from here for `stall' seconds */
            res->stall_start = now();
            sleep_until(res->stall_start + stall);
            res->stall_end = now();
            stalled = 1;
        }
        MPI_Irecv(buf, (int)msg, MPI_BYTE, 0, MPI_ANY_TAG, MPI_COMM_WORLD,
                  &req);
        wait_req(&req, &st, "a stream message");
        if (st.MPI_TAG == TAG_END) {
            sent = buf[0];
            break;
        }
        MPI_Get_count(&st, MPI_BYTE, &count);
        res->msgs  += 1;
        res->bytes += count;
        if ((size_t)count != msg) {
            if (res->corrupt == 0) {
                fprintf(stderr, "rank 2: stream message #%.0f: %d bytes, want "
                        "%zu\n", res->msgs, count, msg);
            }
            res->corrupt += 1;
            continue;
        }
        seq = buf[0];
        bad = check(buf, nwords, seq);
        if (bad != 0) {
            /* the sequence number itself may be what is wrong */
            if (res->corrupt == 0) {
                fprintf(stderr, "rank 2: stream message #%.0f (seq %llu, "
                        "expected %llu): %zu of %zu bytes wrong\n", res->msgs,
                        (unsigned long long)seq, (unsigned long long)expect,
                        bad, msg);
            }
            res->corrupt += 1;
            continue;
        }
        if (seq != expect) {
            if (res->disorder == 0) {
                fprintf(stderr, "rank 2: stream message #%.0f has seq %llu, "
                        "expected %llu\n", res->msgs, (unsigned long long)seq,
                        (unsigned long long)expect);
            }
            res->disorder += 1;
        }
        expect = seq + 1;
        if (seq >= (uint64_t)seen_size * 8) {
            size_t n = seen_size ? seen_size : 4096;
            unsigned char *p;

            while (seq >= (uint64_t)n * 8) {
                n *= 2;
            }
            p = realloc(seen, n);
            if (!p) {
                give_up("memory");
            }
            memset(p + seen_size, 0, n - seen_size);
            seen      = p;
            seen_size = n;
        }
        if (seen[seq / 8] & (1u << (seq % 8))) {
            res->dup += 1;
        } else {
            seen[seq / 8] |= 1u << (seq % 8);
            ++ndistinct;
        }
    }
    if (!stalled) {
        fprintf(stderr, "rank 2: the stream ended before the stall began\n");
    }
    res->end_count = (double)sent;
    res->lost      = (sent > ndistinct) ? (double)(sent - ndistinct) : 0;
    if (ndistinct > sent) {
        /* sequence numbers the sender never used */
        res->disorder += (double)(ndistinct - sent);
    }
    free(seen);
    free(buf);
}

static void pinger(double *done_at, result_t *res)
{
    double times[2], t_first = now(), t, gap, prev;
    uint64_t out, in;
    MPI_Request times_req, req;
    long n = 0, i;
    int got = 0;

    MPI_Irecv(times, 2, MPI_DOUBLE, 2, TAG_TIMES, MPI_COMM_WORLD, &times_req);
    for (;;) {
        MPI_Test(&times_req, &got, MPI_STATUS_IGNORE);
        if (got) {
            break;
        }
        if (n >= (long)MAX_RTT) {
            /* no room for more: wait for the times without pinging */
            wait_req(&times_req, MPI_STATUS_IGNORE, "the stall times");
            break;
        }
        out = 0x5a5a000000000000ull | (uint64_t)n;
        MPI_Send(&out, 1, MPI_UINT64_T, 3, TAG_PING, MPI_COMM_WORLD);
        MPI_Irecv(&in, 1, MPI_UINT64_T, 3, TAG_PING, MPI_COMM_WORLD, &req);
        wait_req(&req, MPI_STATUS_IGNORE, "a pong from rank 3");
        if (in != ~out) {
            fprintf(stderr, "rank 1: pong %ld: got %#llx want %#llx\n", n,
                    (unsigned long long)in, (unsigned long long)~out);
            res->corrupt += 1;
        }
        done_at[n++] = now();
    }
    out = 0;
    MPI_Send(&out, 1, MPI_UINT64_T, 3, TAG_STOP, MPI_COMM_WORLD);

    res->stall_start = times[0];
    res->stall_end   = times[1];
    res->rtt_total   = (double)n;
    res->covered     = (t_first <= times[0]) && (n > 0) &&
                       (done_at[n - 1] >= times[1]);
    prev             = times[0];
    for (i = 0; i < n; ++i) {
        t = done_at[i];
        if (t < times[0]) {
            res->rtt_before += 1;
        } else if (t <= times[1]) {
            res->rtt_stall += 1;
            gap  = t - prev;
            prev = t;
            if (gap > res->max_gap) {
                res->max_gap = gap;
            }
        } else {
            res->rtt_after += 1;
        }
    }
    gap = times[1] - prev;
    if (gap > res->max_gap) {
        res->max_gap = gap;
    }
}

static void ponger(void)
{
    uint64_t v;
    MPI_Request req;
    MPI_Status st;

    for (;;) {
        MPI_Irecv(&v, 1, MPI_UINT64_T, 1, MPI_ANY_TAG, MPI_COMM_WORLD, &req);
        wait_req(&req, &st, "a ping from rank 1");
        if (st.MPI_TAG == TAG_STOP) {
            return;
        }
        v = ~v;
        MPI_Send(&v, 1, MPI_UINT64_T, 1, TAG_PING, MPI_COMM_WORLD);
    }
}

int main(int argc, char **argv)
{
    double warm = 0.5, stall = 2, after = 1, limit = 60, t0, skew, times[2];
    double clocks[4], *done_at = NULL, all[4][RESULT_DOUBLES];
    size_t msg = 65536;
    int window = 64, size, opt, i, fail;
    char names[4][MPI_MAX_PROCESSOR_NAME];
    char why[256];
    result_t res, *r0, *r1, *r2;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &my_rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    while ((opt = getopt(argc, argv, "s:w:W:S:A:T:")) != -1) {
        switch (opt) {
        case 's': msg = (size_t)strtoul(optarg, NULL, 0); break;
        case 'w': window = atoi(optarg); break;
        case 'W': warm = atof(optarg); break;
        case 'S': stall = atof(optarg); break;
        case 'A': after = atof(optarg); break;
        case 'T': limit = atof(optarg); break;
        default:
            if (my_rank == 0) {
                fprintf(stderr, "usage: srm_slow_receiver [-s MSG_BYTES] "
                        "[-w WINDOW] [-W WARM] [-S STALL] [-A AFTER] "
                        "[-T DEADLINE]\n");
            }
            MPI_Abort(MPI_COMM_WORLD, 2);
        }
    }
    if ((msg < 16) || (msg % 8) || (msg > (1u << 30)) || (window < 1) ||
        (stall <= 0) || (warm < 0) || (after < 0) || (limit <= 0)) {
        if (my_rank == 0) {
            fprintf(stderr, "srm_slow_receiver: bad arguments (MSG_BYTES a "
                    "multiple of 8, >= 16; WINDOW >= 1; STALL > 0)\n");
        }
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    if (size != 4) {
        if (my_rank == 0) {
            printf("srm_slow_receiver: FAILED (needs exactly 4 ranks, got "
                   "%d)\n", size);
        }
        MPI_Finalize();
        return 1;
    }

    if (srm_two_hosts("srm_slow_receiver", my_rank, names) != 0) {
        MPI_Finalize();
        return 1;
    }

    /* one clock for all: the stall times of rank 2 are compared with the
     * round-trip times of rank 1 */
    MPI_Barrier(MPI_COMM_WORLD);
    t0 = now();
    MPI_Gather(&t0, 1, MPI_DOUBLE, clocks, 1, MPI_DOUBLE, 0, MPI_COMM_WORLD);
    skew = 0;
    if (my_rank == 0) {
        for (i = 1; i < 4; ++i) {
            if (clocks[i] - clocks[0] > skew) {
                skew = clocks[i] - clocks[0];
            }
            if (clocks[0] - clocks[i] > skew) {
                skew = clocks[0] - clocks[i];
            }
        }
        printf("srm_slow_receiver: host A %s (ranks 0 streamer, 1 pinger), "
               "host B %s (ranks 2 slow receiver, 3 ponger); %zu B messages, "
               "window %d, warm-up %.1f s, stall %.1f s, after %.1f s; clock "
               "skew %.1f ms\n", names[0], names[2], msg, window, warm,
               stall, after, skew * 1e3);
        fflush(stdout);
    }
    MPI_Bcast(&skew, 1, MPI_DOUBLE, 0, MPI_COMM_WORLD);
    if (skew > 0.5) {
        if (my_rank == 0) {
            printf("srm_slow_receiver: FAILED (the ranks' clocks differ by "
                   "%.3f s: not one machine?)\n", skew);
        }
        MPI_Finalize();
        return 1;
    }

    if (my_rank == 1) {
        done_at = malloc(sizeof(*done_at) * MAX_RTT);
        if (!done_at) {
            give_up("memory");
        }
    }

    /* warm up both connections */
    deadline = now() + limit;
    if (my_rank == 0) {
        uint64_t *b = malloc(msg);
        if (!b) {
            give_up("memory");
        }
        fill(b, msg / 8, 12345);
        MPI_Send(b, (int)msg, MPI_BYTE, 2, TAG_PING, MPI_COMM_WORLD);
        free(b);
    } else if (my_rank == 2) {
        uint64_t *b = malloc(msg);
        MPI_Request req;
        if (!b) {
            give_up("memory");
        }
        MPI_Irecv(b, (int)msg, MPI_BYTE, 0, TAG_PING, MPI_COMM_WORLD, &req);
        wait_req(&req, MPI_STATUS_IGNORE, "the warm-up message");
        if (check(b, msg / 8, 12345)) {
            fprintf(stderr, "rank 2: warm-up message corrupted\n");
        }
        free(b);
    } else if (my_rank == 1) {
        uint64_t v = 1, w = 0;
        MPI_Request req;
        MPI_Send(&v, 1, MPI_UINT64_T, 3, TAG_PING, MPI_COMM_WORLD);
        MPI_Irecv(&w, 1, MPI_UINT64_T, 3, TAG_PING, MPI_COMM_WORLD, &req);
        wait_req(&req, MPI_STATUS_IGNORE, "the warm-up pong");
    } else {
        uint64_t v = 0;
        MPI_Request req;
        MPI_Irecv(&v, 1, MPI_UINT64_T, 1, TAG_PING, MPI_COMM_WORLD, &req);
        wait_req(&req, MPI_STATUS_IGNORE, "the warm-up ping");
        MPI_Send(&v, 1, MPI_UINT64_T, 1, TAG_PING, MPI_COMM_WORLD);
    }

    /* ---- the test ---- */
    memset(&res, 0, sizeof(res));
    MPI_Barrier(MPI_COMM_WORLD);
    t0       = now();
    deadline = t0 + limit;
    switch (my_rank) {
    case 0:
        streamer(msg, window, t0 + warm + stall + after, &res);
        break;
    case 1:
        pinger(done_at, &res);
        break;
    case 2:
        sink(msg, t0 + warm, stall, &res);
        /* the stream is over: rank 1 may stop pinging */
        times[0] = res.stall_start;
        times[1] = res.stall_end;
        MPI_Send(times, 2, MPI_DOUBLE, 1, TAG_TIMES, MPI_COMM_WORLD);
        break;
    default:
        ponger();
        break;
    }

    /* ---- the verdict, at rank 0 ---- */
    MPI_Gather(&res, (int)RESULT_DOUBLES, MPI_DOUBLE, all, (int)RESULT_DOUBLES,
               MPI_DOUBLE, 0, MPI_COMM_WORLD);
    fail = 0;
    if (my_rank == 0) {
        r0 = (result_t*)all[0];
        r1 = (result_t*)all[1];
        r2 = (result_t*)all[2];
        printf("stall: rank 2 made no MPI call from +%.3f s to +%.3f s "
               "(%.3f s)\n", r2->stall_start - t0, r2->stall_end - t0,
               r2->stall_end - r2->stall_start);
        printf("pingpong during stall: %.0f round trips (max gap %.1f ms)\n",
               r1->rtt_stall, r1->max_gap * 1e3);
        printf("pingpong: %.0f round trips before, %.0f during, %.0f after "
               "the stall (%.0f in all)\n", r1->rtt_before, r1->rtt_stall,
               r1->rtt_after, r1->rtt_total);
        printf("stream: %.0f messages, %.0f lost, %.0f out of order, %.0f "
               "corrupted (sent %.0f, %.1f MB in %.2f s, %.1f MB/s)\n",
               r2->msgs, r2->lost, r2->disorder, r2->corrupt, r0->sent,
               r2->bytes / 1e6, r0->stream_secs,
               r0->stream_secs > 0 ? r2->bytes / 1e6 / r0->stream_secs : 0);
        why[0] = '\0';
#define WHY(cond, ...) \
        if (cond) { \
            snprintf(why + strlen(why), sizeof(why) - strlen(why), \
                     __VA_ARGS__); \
            fail = 1; \
        }
        WHY(r2->lost > 0, "%.0f lost; ", r2->lost);
        WHY(r2->disorder > 0, "%.0f out of order; ", r2->disorder);
        WHY(r2->corrupt > 0, "%.0f corrupted; ", r2->corrupt);
        WHY(r2->dup > 0, "%.0f duplicated; ", r2->dup);
        WHY(r2->end_count != r0->sent, "END says %.0f sent, not %.0f; ",
            r2->end_count, r0->sent);
        WHY(r2->stall_end <= r2->stall_start, "no stall; ");
        WHY(r1->rtt_stall == 0, "no round trip during the stall; ");
        WHY(!r1->covered, "the ping-pong did not span the stall; ");
        WHY(r1->corrupt > 0, "%.0f wrong pongs; ", r1->corrupt);
#undef WHY
        if (fail) {
            why[strlen(why) - 2] = '\0';
            printf("srm_slow_receiver: FAILED (%s)\n", why);
        } else {
            printf("srm_slow_receiver: ok\n");
        }
        fflush(stdout);
    }
    MPI_Bcast(&fail, 1, MPI_INT, 0, MPI_COMM_WORLD);
    free(done_at);
    MPI_Finalize();
    return fail ? 1 : 0;
}
