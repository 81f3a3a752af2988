/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * srm_alltoall_hold - every rank talks to every other rank, then keeps
 * doing so for a while, so that the connections of the job can be counted
 * from outside while it runs.
 *
 * Usage: srm_alltoall_hold [HOLD_SECONDS [BIG_BYTES [STOP_FILE]]]
 *   HOLD_SECONDS  how long to keep exchanging after the first round
 *                 (default 8)
 *   BIG_BYTES     size of the per-peer point-to-point message of each round
 *                 (default 65536: above srm's large threshold, so the bulk
 *                 channels come up as well as the small ones)
 *   STOP_FILE     hold quietly instead, until rank 0 sees this file (at
 *                 most HOLD_SECONDS), then do one more round: the counting
 *                 side says when it is done, however slowly the job runs
 *
 * Each round: MPI_Alltoall of one int64 per peer (verified), then one
 * BIG_BYTES MPI_Isend/MPI_Irecv with every peer (collective algorithms may
 * not touch every pair; this does), verified by a pattern, then a ~20 ms
 * pause. After the first round and a barrier rank 0 prints
 *     srm_alltoall_hold: N ranks connected, holding S s[ or until FILE]
 * and at the end
 *     srm_alltoall_hold: R rounds, E errors
 * The exit status is 1 when E > 0.
 */
#include <mpi.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static unsigned char pattern(int src, int dst, long round, size_t i)
{
    return (unsigned char)((src * 131 + dst * 31 + round * 7 + i * 13) & 0xff);
}

/*
 * Hold with every rank asleep but for MPI progress every 50 ms, until rank
 * 0 sees STOP or HOLD seconds from T0 passed; rank 0 tells the others with
 * a nonblocking broadcast. Ranks waiting in a collective would spin (or
 * yield, still runnable): on an emulated machine they starve whoever
 * counts the job's connections meanwhile.
 */
static void quiet_hold(const char *stop, double hold, double t0, int rank)
{
    MPI_Request req;
    int go = 0, done = 0, flag;

    if (rank == 0) {
        while ((MPI_Wtime() - t0 < hold) && (access(stop, F_OK) != 0)) {
            MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &flag,
                       MPI_STATUS_IGNORE);
            usleep(50000);
        }
    }
    MPI_Ibcast(&go, 1, MPI_INT, 0, MPI_COMM_WORLD, &req);
    for (;;) {
        MPI_Test(&req, &done, MPI_STATUS_IGNORE);
        if (done) {
            break;
        }
        usleep(50000);
    }
}

int main(int argc, char **argv)
{
    double hold = argc > 1 ? atof(argv[1]) : 8.0;
    size_t big = argc > 2 ? (size_t)strtoul(argv[2], NULL, 0) : 65536;
    const char *stop = argc > 3 ? argv[3] : NULL;
    int rank, size, p, go;
    long round = 0, errors = 0, total_errors = 0;
    int64_t *sbuf, *rbuf;
    unsigned char *bsend, *brecv;
    MPI_Request *reqs;
    double t0 = 0;
    size_t i;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);

    sbuf  = malloc(sizeof(*sbuf) * size);
    rbuf  = malloc(sizeof(*rbuf) * size);
    bsend = malloc(big * size + 1);
    brecv = malloc(big * size + 1);
    reqs  = malloc(sizeof(*reqs) * 2 * size);
    if (!sbuf || !rbuf || !bsend || !brecv || !reqs) {
        fprintf(stderr, "rank %d: out of memory\n", rank);
        MPI_Abort(MPI_COMM_WORLD, 2);
    }

    do {
        /* small: alltoall */
        for (p = 0; p < size; p++) {
            sbuf[p] = ((int64_t)rank << 40) | ((int64_t)p << 20) | round;
        }
        MPI_Alltoall(sbuf, 1, MPI_INT64_T, rbuf, 1, MPI_INT64_T,
                     MPI_COMM_WORLD);
        for (p = 0; p < size; p++) {
            int64_t want = ((int64_t)p << 40) | ((int64_t)rank << 20) | round;
            if (rbuf[p] != want) {
                if (errors < 5) {
                    fprintf(stderr, "rank %d round %ld: alltoall from %d: "
                            "got %#llx want %#llx\n", rank, round, p,
                            (unsigned long long)rbuf[p],
                            (unsigned long long)want);
                }
                errors++;
            }
        }

        /* big: point to point with every peer */
        if (big > 0) {
            int n = 0;
            for (p = 0; p < size; p++) {
                if (p == rank) {
                    continue;
                }
                for (i = 0; i < big; i++) {
                    bsend[p * big + i] = pattern(rank, p, round, i);
                }
                memset(brecv + p * big, 0, big);
                MPI_Irecv(brecv + p * big, (int)big, MPI_BYTE, p, 7,
                          MPI_COMM_WORLD, &reqs[n++]);
            }
            for (p = 0; p < size; p++) {
                if (p != rank) {
                    MPI_Isend(bsend + p * big, (int)big, MPI_BYTE, p, 7,
                              MPI_COMM_WORLD, &reqs[n++]);
                }
            }
            MPI_Waitall(n, reqs, MPI_STATUSES_IGNORE);
            for (p = 0; p < size; p++) {
                if (p == rank) {
                    continue;
                }
                for (i = 0; i < big; i++) {
                    if (brecv[p * big + i] != pattern(p, rank, round, i)) {
                        if (errors < 5) {
                            fprintf(stderr, "rank %d round %ld: %zu B from "
                                    "%d: byte %zu differs\n", rank, round,
                                    big, p, i);
                        }
                        errors++;
                        break;
                    }
                }
            }
        }

        if (round == 0) {
            MPI_Barrier(MPI_COMM_WORLD);
            if (rank == 0) {
                printf("srm_alltoall_hold: %d ranks connected, holding "
                       "%.1f s%s%s\n", size, hold, stop ? " or until " : "",
                       stop ? stop : "");
                fflush(stdout);
            }
            t0 = MPI_Wtime();
        }
        round++;
        if (stop != NULL) {
            quiet_hold(stop, hold, t0, rank);
            stop = NULL;
            hold = 0; /* one more round, and the end */
            go   = 1;
            continue;
        }
        usleep(20000);
        go = (rank == 0) ? (MPI_Wtime() - t0 < hold) : 0;
        MPI_Bcast(&go, 1, MPI_INT, 0, MPI_COMM_WORLD);
    } while (go);

    MPI_Allreduce(&errors, &total_errors, 1, MPI_LONG, MPI_SUM,
                  MPI_COMM_WORLD);
    if (rank == 0) {
        printf("srm_alltoall_hold: %ld rounds, %ld errors\n", round,
               total_errors);
        fflush(stdout);
    }
    free(sbuf);
    free(rbuf);
    free(bsend);
    free(brecv);
    free(reqs);
    MPI_Finalize();
    return total_errors ? 1 : 0;
}
