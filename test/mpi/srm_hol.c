/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * srm_hol - head-of-line blocking between nodes: does a bulk stream delay
 * small messages between other ranks of the same two nodes?
 *
 * Needs 4 ranks, 2 per host, placed host by host: ranks 0 and 1 on host A,
 * ranks 2 and 3 on host B (checked with MPI_Get_processor_name).
 *
 *   phase idle    rank 1 ping-pongs 8 B with rank 3 for IDLE seconds while
 *                 ranks 0 and 2 sleep; every round-trip time is recorded.
 *   phase loaded  rank 0 streams STREAM-byte messages to rank 2 (blocking
 *                 sends, one after the other) for LOAD + 1 s while rank 1
 *                 ping-pongs with rank 3 from +0.5 s for LOAD seconds.
 *
 * Rank 1 prints
 *     idle p50 X us p99 Y us (n N, max M us)
 *     loaded p50 X us p99 Y us (n N, max M us)
 *     stream: K messages of S B in T s, R MB/s
 * and rank 0 the last line "srm_hol: ok" or "srm_hol: FAILED (...)".
 * Data of both streams is verified (first and last bytes of each stream
 * message, the whole ping-pong payload).
 *
 * Usage: srm_hol [-i IDLE_SECONDS] [-t LOAD_SECONDS] [-s STREAM_BYTES]
 *        defaults: -i 3 -t 5 -s 4194304
 */
#include <mpi.h>

#include "srm_two_hosts.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define TAG_PING   1
#define TAG_STOP   2
#define TAG_DATA   3
#define TAG_END    4
#define MAX_RTT    (1u << 21)

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double*)a, y = *(const double*)b;
    return (x < y) ? -1 : (x > y);
}

/* nearest-rank percentile of sorted v[0..n) */
static double pct(const double *v, size_t n, double p)
{
    size_t k;

    if (n == 0) {
        return 0;
    }
    k = (size_t)(p / 100.0 * n + 0.999999);
    if (k < 1) {
        k = 1;
    }
    return v[(k > n ? n : k) - 1];
}

static void report(const char *name, double *rtt, size_t n)
{
    qsort(rtt, n, sizeof(*rtt), cmp_double);
    printf("%s p50 %.1f us p99 %.1f us (n %zu, max %.1f us)\n", name,
           pct(rtt, n, 50) * 1e6, pct(rtt, n, 99) * 1e6, n,
           n ? rtt[n - 1] * 1e6 : 0.0);
    fflush(stdout);
}

/* rank 1: ping-pong with rank 3 from start to end (MPI_Wtime), recording
 * round trips; returns how many, or -1 on a payload error. */
static long pinger(double start, double end, double *rtt)
{
    uint64_t out, in;
    double t;
    long n = 0;

    while (MPI_Wtime() < start) {
        usleep(1000);
    }
    while (((t = MPI_Wtime()) < end) && (n < (long)MAX_RTT)) {
        out = 0x5a5a000000000000ull | (uint64_t)n;
        MPI_Send(&out, 1, MPI_UINT64_T, 3, TAG_PING, MPI_COMM_WORLD);
        MPI_Recv(&in, 1, MPI_UINT64_T, 3, TAG_PING, MPI_COMM_WORLD,
                 MPI_STATUS_IGNORE);
        rtt[n] = MPI_Wtime() - t;
        if (in != ~out) {
            fprintf(stderr, "rank 1: pong %ld: got %#llx want %#llx\n", n,
                    (unsigned long long)in, (unsigned long long)~out);
            return -1;
        }
        ++n;
    }
    out = 0;
    MPI_Send(&out, 1, MPI_UINT64_T, 3, TAG_STOP, MPI_COMM_WORLD);
    return n;
}

/* rank 3: answers until the stop message */
static void ponger(void)
{
    uint64_t v;
    MPI_Status st;

    for (;;) {
        MPI_Recv(&v, 1, MPI_UINT64_T, 1, MPI_ANY_TAG, MPI_COMM_WORLD, &st);
        if (st.MPI_TAG == TAG_STOP) {
            return;
        }
        v = ~v;
        MPI_Send(&v, 1, MPI_UINT64_T, 1, TAG_PING, MPI_COMM_WORLD);
    }
}

static unsigned char fill(long msg, size_t i)
{
    return (unsigned char)((msg * 29 + i * 7 + 1) & 0xff);
}

int main(int argc, char **argv)
{
    double idle = 3, load = 5, t0, t1;
    size_t stream = 4u << 20;
    int rank, size, opt, i, bad = 0, any_bad = 0;
    char names[4][MPI_MAX_PROCESSOR_NAME];
    double *rtt = NULL;
    unsigned char *buf = NULL;
    long n, msgs = 0;
    double stream_secs = 0;
    MPI_Status st;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    while ((opt = getopt(argc, argv, "i:t:s:")) != -1) {
        switch (opt) {
        case 'i': idle = atof(optarg); break;
        case 't': load = atof(optarg); break;
        case 's': stream = (size_t)strtoul(optarg, NULL, 0); break;
        default:
            if (rank == 0) {
                fprintf(stderr, "usage: srm_hol [-i IDLE] [-t LOAD] [-s BYTES]\n");
            }
            MPI_Abort(MPI_COMM_WORLD, 2);
        }
    }
    if (size != 4) {
        if (rank == 0) {
            printf("srm_hol: FAILED (needs exactly 4 ranks, got %d)\n", size);
        }
        MPI_Finalize();
        return 1;
    }

    if (srm_two_hosts("srm_hol", rank, names) != 0) {
        MPI_Finalize();
        return 1;
    }
    if (rank == 0) {
        printf("srm_hol: host A %s (ranks 0 streamer, 1 pinger), host B %s "
               "(ranks 2 sink, 3 ponger); idle %.1f s, loaded %.1f s, "
               "stream %zu B messages\n", names[0], names[2], idle, load,
               stream);
        fflush(stdout);
    }

    if (rank == 1) {
        rtt = malloc(sizeof(*rtt) * MAX_RTT);
    } else if ((rank == 0) || (rank == 2)) {
        buf = malloc(stream ? stream : 1);
    }
    if (((rank == 1) && !rtt) || (((rank == 0) || (rank == 2)) && !buf)) {
        fprintf(stderr, "rank %d: out of memory\n", rank);
        MPI_Abort(MPI_COMM_WORLD, 2);
    }

    /* warm up every connection that will be used */
    if (rank == 1) {
        pinger(0, MPI_Wtime() + 0.2, rtt);
    } else if (rank == 3) {
        ponger();
    } else if (rank == 0) {
        memset(buf, 1, stream);
        MPI_Send(buf, (int)stream, MPI_BYTE, 2, TAG_DATA, MPI_COMM_WORLD);
    } else {
        MPI_Recv(buf, (int)stream, MPI_BYTE, 0, TAG_DATA, MPI_COMM_WORLD,
                 MPI_STATUS_IGNORE);
    }

    /* ---- idle ---- */
    MPI_Barrier(MPI_COMM_WORLD);
    t0 = MPI_Wtime();
    if (rank == 1) {
        n = pinger(t0, t0 + idle, rtt);
        if (n < 0) {
            bad = 1;
        } else {
            report("idle", rtt, (size_t)n);
        }
    } else if (rank == 3) {
        ponger();
    } else {
        while (MPI_Wtime() < t0 + idle) {
            usleep(10000);
        }
    }

    /* ---- loaded ---- */
    MPI_Barrier(MPI_COMM_WORLD);
    t0 = MPI_Wtime();
    if (rank == 1) {
        n = pinger(t0 + 0.5, t0 + 0.5 + load, rtt);
        if (n < 0) {
            bad = 1;
        } else {
            report("loaded", rtt, (size_t)n);
        }
    } else if (rank == 3) {
        ponger();
    } else if (rank == 0) {
        while (MPI_Wtime() < t0 + load + 1.0) {
            for (i = 0; i < 2; i++) {
                buf[i] = fill(msgs, i);
                buf[stream - 1 - i] = fill(msgs, stream - 1 - i);
            }
            MPI_Send(buf, (int)stream, MPI_BYTE, 2, TAG_DATA, MPI_COMM_WORLD);
            ++msgs;
        }
        MPI_Send(buf, 0, MPI_BYTE, 2, TAG_END, MPI_COMM_WORLD);
        stream_secs = MPI_Wtime() - t0;
    } else { /* rank 2 */
        for (;;) {
            MPI_Recv(buf, (int)stream, MPI_BYTE, 0, MPI_ANY_TAG,
                     MPI_COMM_WORLD, &st);
            if (st.MPI_TAG == TAG_END) {
                break;
            }
            for (i = 0; i < 2; i++) {
                if ((buf[i] != fill(msgs, i)) ||
                    (buf[stream - 1 - i] != fill(msgs, stream - 1 - i))) {
                    if (!bad) {
                        fprintf(stderr, "rank 2: stream message %ld: wrong "
                                "data\n", msgs);
                    }
                    bad = 1;
                }
            }
            ++msgs;
        }
    }
    if (rank == 0) {
        printf("stream: %ld messages of %zu B in %.2f s, %.1f MB/s\n", msgs,
               stream, stream_secs,
               stream_secs > 0 ? msgs * (double)stream / stream_secs / 1e6 : 0);
        fflush(stdout);
    }

    t1 = MPI_Wtime();
    MPI_Allreduce(&bad, &any_bad, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    if (rank == 0) {
        if (any_bad) {
            printf("srm_hol: FAILED (data errors, see stderr)\n");
        } else {
            printf("srm_hol: ok\n");
        }
        fflush(stdout);
    }
    (void)t1;
    free(rtt);
    free(buf);
    MPI_Finalize();
    return any_bad ? 1 : 0;
}
