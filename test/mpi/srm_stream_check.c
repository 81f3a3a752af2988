/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * srm_stream_check: every rank streams numbered, checksummed messages to
 * every other rank at once, in rounds of WINDOW messages per peer, while a
 * test breaks channels underneath. Each receiver checks that the messages
 * of each sender arrive exactly once, in order, intact, and prints the
 * counts (lost, duplicated, out of order, corrupt) and the longest time a
 * round took (what a failover costs the application).
 *
 * Usage: srm_stream_check [-n MESSAGES_PER_PEER] [-s MAX_BYTES] [-w WINDOW]
 *                         [-f STOP_FILE] [-g MS]
 * With -f the stream also ends soon after STOP_FILE appears (checked by
 * rank 0 every 32 rounds). With -g every rank prints "gap END_TIME MS" for
 * each round that took longer than MS (END_TIME: CLOCK_REALTIME seconds),
 * so that a benchmark can tell what each injected fault cost. Exit status 0 only if every count is 0 on every
 * rank.
 */
#include <mpi.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define CHECK_MAGIC 0x5354524du /* "STRM" */
#define CHECK_TAG   7

typedef struct {
    uint32_t magic;
    uint32_t src;
    uint32_t seq;
    uint32_t length;    /* of the whole message */
    uint64_t checksum;  /* of the bytes after the header */
} check_hdr_t;

static size_t message_length(int src, uint32_t seq, size_t max_bytes)
{
    uint64_t x = ((uint64_t)seq * 2654435761u) ^ ((uint64_t)src << 20);

    /* Mostly small, now and then large: both channels carry traffic. */
    if ((seq % 16) == 0) {
        return sizeof(check_hdr_t) + (size_t)(x % max_bytes);
    }
    return sizeof(check_hdr_t) + (size_t)(x % 256);
}

static uint64_t fill_and_sum(uint8_t *data, size_t len, int src, uint32_t seq,
                             int fill)
{
    uint64_t sum = 1469598103934665603ull;
    size_t i;

    for (i = 0; i < len; ++i) {
        if (fill) {
            data[i] = (uint8_t)((seq * 31u) + (uint32_t)src + (uint32_t)i * 7u);
        }
        sum = (sum ^ data[i]) * 1099511628211ull;
    }
    return sum;
}

int main(int argc, char **argv)
{
    unsigned long long lost = 0, dups = 0, reordered = 0, corrupt = 0;
    unsigned long long totals[4], global[4];
    uint32_t messages = 20000, window = 16, round, w, k, seq;
    size_t max_bytes = 65536, len;
    const char *stop_file = NULL;
    double gap_ms = 0;
    struct timespec now;
    int stop = 0;
    double round_start, round_time, max_round = 0, t0;
    MPI_Request *reqs;
    uint32_t *expected;
    uint8_t **sbuf, **rbuf;
    int rank, size, peer, nreq, count, opt, p, i;
    MPI_Status *stats;
    check_hdr_t hdr;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    while ((opt = getopt(argc, argv, "n:s:w:f:g:")) != -1) {
        switch (opt) {
        case 'n': messages  = (uint32_t)strtoul(optarg, NULL, 0); break;
        case 's': max_bytes = strtoul(optarg, NULL, 0); break;
        case 'w': window    = (uint32_t)strtoul(optarg, NULL, 0); break;
        case 'f': stop_file = optarg; break;
        case 'g': gap_ms    = atof(optarg); break;
        default:
            if (rank == 0) {
                fprintf(stderr, "usage: %s [-n MESSAGES_PER_PEER] "
                        "[-s MAX_BYTES] [-w WINDOW] [-f STOP_FILE] "
                        "[-g MS]\n",
                        argv[0]);
            }
            MPI_Abort(MPI_COMM_WORLD, 2);
        }
    }
    if ((size < 2) || (window == 0) || (max_bytes < 1)) {
        MPI_Abort(MPI_COMM_WORLD, 2);
    }

    reqs     = calloc(2 * (size_t)size * window, sizeof(*reqs));
    stats    = calloc(2 * (size_t)size * window, sizeof(*stats));
    sbuf     = calloc((size_t)size * window, sizeof(*sbuf));
    rbuf     = calloc((size_t)size * window, sizeof(*rbuf));
    expected = calloc((size_t)size, sizeof(*expected));
    for (i = 0; i < size * (int)window; ++i) {
        sbuf[i] = malloc(sizeof(check_hdr_t) + max_bytes);
        rbuf[i] = malloc(sizeof(check_hdr_t) + max_bytes);
    }

    MPI_Barrier(MPI_COMM_WORLD);
    t0 = MPI_Wtime();
    for (round = 0; (round * window < messages) && !stop; ++round) {
        round_start = MPI_Wtime();
        nreq        = 0;
        for (p = 1; p < size; ++p) {
            peer = (rank + p) % size;
            for (w = 0; w < window; ++w) {
                MPI_Irecv(rbuf[peer * window + w], (int)(sizeof(check_hdr_t) +
                          max_bytes), MPI_BYTE, peer, CHECK_TAG,
                          MPI_COMM_WORLD, &reqs[nreq++]);
            }
        }
        for (p = 1; p < size; ++p) {
            peer = (rank + size - p) % size;
            for (w = 0; w < window; ++w) {
                seq          = round * window + w;
                len          = message_length(rank, seq, max_bytes);
                hdr.magic    = CHECK_MAGIC;
                hdr.src      = (uint32_t)rank;
                hdr.seq      = seq;
                hdr.length   = (uint32_t)len;
                hdr.checksum = fill_and_sum(sbuf[peer * window + w] +
                                            sizeof(hdr), len - sizeof(hdr),
                                            rank, seq, 1);
                memcpy(sbuf[peer * window + w], &hdr, sizeof(hdr));
                MPI_Isend(sbuf[peer * window + w], (int)len, MPI_BYTE, peer,
                          CHECK_TAG, MPI_COMM_WORLD, &reqs[nreq++]);
            }
        }
        MPI_Waitall(nreq, reqs, stats);

        /* The receives of this round, per sender in posting order. */
        for (k = 0, p = 1; p < size; ++p) {
            peer = (rank + p) % size;
            for (w = 0; w < window; ++w, ++k) {
                MPI_Get_count(&stats[k], MPI_BYTE, &count);
                memcpy(&hdr, rbuf[peer * window + w], sizeof(hdr));
                if ((count < (int)sizeof(hdr)) || (hdr.magic != CHECK_MAGIC) ||
                    (hdr.src != (uint32_t)peer) ||
                    (hdr.length != (uint32_t)count) ||
                    (fill_and_sum(rbuf[peer * window + w] + sizeof(hdr),
                                  (size_t)count - sizeof(hdr), peer, 0, 0) !=
                     hdr.checksum)) {
                    corrupt++;
                    expected[peer]++;
                    continue;
                }
                if (hdr.seq == expected[peer]) {
                    expected[peer]++;
                } else if ((int32_t)(hdr.seq - expected[peer]) < 0) {
                    dups++;
                } else {
                    lost      += hdr.seq - expected[peer];
                    reordered++;
                    expected[peer] = hdr.seq + 1;
                }
            }
        }
        round_time = MPI_Wtime() - round_start;
        if (round_time > max_round) {
            max_round = round_time;
        }
        if ((gap_ms > 0) && (round_time * 1e3 > gap_ms)) {
            clock_gettime(CLOCK_REALTIME, &now);
            printf("gap %.6f %.3f\n",
                   (double)now.tv_sec + (double)now.tv_nsec * 1e-9,
                   round_time * 1e3);
            fflush(stdout);
        }
        if ((rank == 0) && (round % 500 == 0)) {
            printf("progress: round %u, %.1f s\n", round, MPI_Wtime() - t0);
            fflush(stdout);
        }
        if ((stop_file != NULL) && (round % 32 == 31)) {
            stop = (rank == 0) && (access(stop_file, F_OK) == 0);
            MPI_Bcast(&stop, 1, MPI_INT, 0, MPI_COMM_WORLD);
        }
    }

    totals[0] = lost;
    totals[1] = dups;
    totals[2] = reordered;
    totals[3] = corrupt;
    MPI_Reduce(totals, global, 4, MPI_UNSIGNED_LONG_LONG, MPI_SUM, 0,
               MPI_COMM_WORLD);
    MPI_Reduce(&max_round, &round_time, 1, MPI_DOUBLE, MPI_MAX, 0,
               MPI_COMM_WORLD);
    if (rank == 0) {
        printf("ranks %d messages %llu lost %llu duplicated %llu "
               "out_of_order %llu corrupt %llu max_round_ms %.1f "
               "seconds %.1f\n", size,
               (unsigned long long)round * window *
                       (unsigned long long)size * (unsigned long long)(size - 1),
               global[0], global[1], global[2], global[3], round_time * 1e3,
               MPI_Wtime() - t0);
    }
    MPI_Bcast(global, 4, MPI_UNSIGNED_LONG_LONG, 0, MPI_COMM_WORLD);
    MPI_Finalize();
    return (global[0] | global[1] | global[2] | global[3]) ? 1 : 0;
}
