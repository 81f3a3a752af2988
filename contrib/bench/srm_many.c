/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * srm_many: many-to-many traffic among all ranks (contrib/bench/many.sh):
 * MPI_Alltoall and MPI_Allreduce at each size of a list; an exchange in
 * which every rank sends 8 B to every other rank (MPI_Isend/MPI_Irecv to
 * and from all, then MPI_Waitall); and, with -p, the same one-sided:
 * every rank puts 8 B into every other rank's window (MPI_Put between two
 * MPI_Win_fence).
 *
 * Each operation runs WARMUP times, then for SECONDS (at least 5 times);
 * an operation's time is the slowest rank's. Rank 0 prints one line per
 * operation and size:
 *
 *   many: op=alltoall size=8 ranks=R iters=N p50_us=.. p99_us=.. mean_us=..
 *
 * (size: bytes per peer for alltoall, exchange and put, of the vector for
 * allreduce). Every result is checked; a wrong one fails the job (exit 1).
 *
 * Usage: srm_many [-a SIZES] [-r SIZES] [-p] [-t SECONDS] [-w WARMUP]
 *   -a SIZES  alltoall sizes, commas (default 8,65536; "" for none)
 *   -r SIZES  allreduce sizes (default 8,65536)
 *   -p        also the one-sided 8 B exchange (Open MPI 4.1 with pml ucx
 *             creates no window over UCX_TLS=tcp or srm: MPI_ERR_WIN)
 */
#include "bench_stats.h"

#include <mpi.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MANY_MAX_SIZES 16
#define MANY_MAX_ITERS 200000

typedef struct {
    size_t alltoall[MANY_MAX_SIZES];
    int    num_alltoall;
    size_t allreduce[MANY_MAX_SIZES];
    int    num_allreduce;
    int    put;
    double seconds;
    int    warmup;
} many_opts_t;

typedef enum {
    MANY_ALLTOALL,
    MANY_ALLREDUCE,
    MANY_EXCHANGE,
    MANY_PUT
} many_op_t;

static const char *many_op_names[] = {"alltoall", "allreduce", "exchange",
                                      "put"};

static int parse_sizes(const char *list, size_t *sizes)
{
    char *copy = strdup(list), *tok, *save = NULL;
    int n = 0;

    for (tok = strtok_r(copy, ",", &save); tok != NULL;
         tok = strtok_r(NULL, ",", &save)) {
        if (n == MANY_MAX_SIZES) {
            n = -1;
            break;
        }
        sizes[n] = strtoul(tok, NULL, 0);
        if ((sizes[n] < 8) || (sizes[n] > (16u << 20)) ||
            ((sizes[n] % 8) != 0)) {
            n = -1;
            break;
        }
        ++n;
    }
    free(copy);
    return n;
}

static void parse(int argc, char **argv, int rank, many_opts_t *opts)
{
    int c;

    opts->num_alltoall  = parse_sizes("8,65536", opts->alltoall);
    opts->num_allreduce = parse_sizes("8,65536", opts->allreduce);
    opts->put           = 0;
    opts->seconds       = 1;
    opts->warmup        = 5;
    while ((c = getopt(argc, argv, "a:r:pt:w:h")) != -1) {
        switch (c) {
        case 'a':
            opts->num_alltoall = parse_sizes(optarg, opts->alltoall);
            break;
        case 'r':
            opts->num_allreduce = parse_sizes(optarg, opts->allreduce);
            break;
        case 'p': opts->put = 1; break;
        case 't': opts->seconds = atof(optarg); break;
        case 'w': opts->warmup = atoi(optarg); break;
        default:  opts->num_alltoall = -1; break;
        }
    }
    if ((opts->num_alltoall < 0) || (opts->num_allreduce < 0) ||
        (opts->seconds <= 0) || (opts->warmup < 0)) {
        if (rank == 0) {
            fprintf(stderr, "usage: %s [-a SIZES] [-r SIZES] [-p] "
                            "[-t SECONDS] [-w WARMUP] (sizes: multiples "
                            "of 8 B up to 16 MB, commas)\n", argv[0]);
        }
        MPI_Finalize();
        exit(2);
    }
}

static uint64_t word(int from, int to, int iter, size_t i)
{
    return ((uint64_t)from << 48) ^ ((uint64_t)to << 32) ^
           ((uint64_t)iter << 16) ^ i;
}

/* One run of the operation; the number of wrong words it received. */
static long run_once(many_op_t op, size_t size, int iter, int rank,
                     int nranks, uint64_t *send, uint64_t *recv, MPI_Win win,
                     MPI_Request *reqs)
{
    size_t words = size / 8, i;
    long bad = 0;
    int peer;

    switch (op) {
    case MANY_ALLTOALL:
        for (peer = 0; peer < nranks; ++peer) {
            for (i = 0; i < words; ++i) {
                send[peer * words + i] = word(rank, peer, iter, i);
            }
        }
        MPI_Alltoall(send, (int)size, MPI_BYTE, recv, (int)size, MPI_BYTE,
                     MPI_COMM_WORLD);
        for (peer = 0; peer < nranks; ++peer) {
            for (i = 0; i < words; ++i) {
                bad += recv[peer * words + i] != word(peer, rank, iter, i);
            }
        }
        break;
    case MANY_ALLREDUCE:
        for (i = 0; i < words; ++i) {
            send[i] = (uint64_t)(rank + 1) * (i + (size_t)iter + 1);
        }
        MPI_Allreduce(send, recv, (int)words, MPI_UINT64_T, MPI_SUM,
                      MPI_COMM_WORLD);
        for (i = 0; i < words; ++i) {
            bad += recv[i] != ((uint64_t)nranks * (nranks + 1) / 2) *
                                      (i + (size_t)iter + 1);
        }
        break;
    case MANY_EXCHANGE:
        for (peer = 0; peer < nranks; ++peer) {
            MPI_Irecv(&recv[peer], 1, MPI_UINT64_T, peer, 0, MPI_COMM_WORLD,
                      &reqs[peer]);
        }
        for (peer = 0; peer < nranks; ++peer) {
            send[peer] = word(rank, peer, iter, 0);
            MPI_Isend(&send[peer], 1, MPI_UINT64_T, peer, 0, MPI_COMM_WORLD,
                      &reqs[nranks + peer]);
        }
        MPI_Waitall(2 * nranks, reqs, MPI_STATUSES_IGNORE);
        for (peer = 0; peer < nranks; ++peer) {
            bad += recv[peer] != word(peer, rank, iter, 0);
        }
        break;
    case MANY_PUT:
        MPI_Win_fence(0, win);
        for (peer = 0; peer < nranks; ++peer) {
            send[peer] = word(rank, peer, iter, 0);
            MPI_Put(&send[peer], 1, MPI_UINT64_T, peer, rank, 1,
                    MPI_UINT64_T, win);
        }
        MPI_Win_fence(0, win);
        for (peer = 0; peer < nranks; ++peer) {
            bad += recv[peer] != word(peer, rank, iter, 0);
        }
        break;
    }
    return bad;
}

/* Runs one operation and size; rank 0 prints its line. The wrong words. */
static long measure(many_op_t op, size_t size, const many_opts_t *opts,
                    int rank, int nranks, uint64_t *send, uint64_t *recv,
                    MPI_Win win, MPI_Request *reqs, double *times)
{
    double t0, local, slowest, end = 0, sum = 0;
    long bad = 0, all_bad = 0;
    int iter, n = 0, stop = 0, k;

    MPI_Barrier(MPI_COMM_WORLD);
    for (iter = 0; !stop; ++iter) {
        t0     = MPI_Wtime();
        bad   += run_once(op, size, iter, rank, nranks, send, recv, win,
                          reqs);
        local  = MPI_Wtime() - t0;
        MPI_Allreduce(&local, &slowest, 1, MPI_DOUBLE, MPI_MAX,
                      MPI_COMM_WORLD);
        if (iter == opts->warmup) {
            end = MPI_Wtime() + opts->seconds;
        }
        if (iter >= opts->warmup) {
            times[n++] = slowest * 1e6;
        }
        if (rank == 0) {
            stop = (n >= MANY_MAX_ITERS) ||
                   ((n >= 5) && (MPI_Wtime() >= end));
        }
        MPI_Bcast(&stop, 1, MPI_INT, 0, MPI_COMM_WORLD);
    }
    MPI_Reduce(&bad, &all_bad, 1, MPI_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
    if (rank == 0) {
        bench_sort(times, n);
        for (k = 0; k < n; ++k) {
            sum += times[k];
        }
        printf("many: op=%s size=%zu ranks=%d iters=%d p50_us=%.1f "
               "p99_us=%.1f mean_us=%.1f bad=%ld\n", many_op_names[op],
               size, nranks, n, bench_median(times, n),
               times[bench_percentile_index(n, 0.99)], sum / n, all_bad);
        fflush(stdout);
    }
    return all_bad;
}

int main(int argc, char **argv)
{
    size_t largest = 8;
    uint64_t *send, *recv;
    MPI_Request *reqs;
    double *times;
    many_opts_t opts;
    int rank, nranks, i;
    long bad = 0;
    MPI_Win win = MPI_WIN_NULL;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nranks);
    parse(argc, argv, rank, &opts);
    for (i = 0; i < opts.num_alltoall; ++i) {
        largest = (opts.alltoall[i] * nranks > largest) ?
                          opts.alltoall[i] * nranks : largest;
    }
    for (i = 0; i < opts.num_allreduce; ++i) {
        largest = (opts.allreduce[i] > largest) ? opts.allreduce[i] : largest;
    }
    largest = (8 * (size_t)nranks > largest) ? 8 * (size_t)nranks : largest;
    send  = malloc(largest);
    recv  = malloc(largest);
    times = malloc(MANY_MAX_ITERS * sizeof(double));
    reqs  = malloc(2 * (size_t)nranks * sizeof(*reqs));
    if ((send == NULL) || (recv == NULL) || (times == NULL) ||
        (reqs == NULL)) {
        fprintf(stderr, "srm_many: out of memory\n");
        MPI_Abort(MPI_COMM_WORLD, 1);
    }

    for (i = 0; i < opts.num_alltoall; ++i) {
        bad += measure(MANY_ALLTOALL, opts.alltoall[i], &opts, rank, nranks,
                       send, recv, win, reqs, times);
    }
    for (i = 0; i < opts.num_allreduce; ++i) {
        bad += measure(MANY_ALLREDUCE, opts.allreduce[i], &opts, rank,
                       nranks, send, recv, win, reqs, times);
    }
    bad += measure(MANY_EXCHANGE, 8, &opts, rank, nranks, send, recv, win,
                   reqs, times);
    if (opts.put) {
        MPI_Win_create(recv, 8 * (MPI_Aint)nranks, 8, MPI_INFO_NULL,
                       MPI_COMM_WORLD, &win);
        bad += measure(MANY_PUT, 8, &opts, rank, nranks, send, recv, win,
                       reqs, times);
        MPI_Win_free(&win);
    }

    free(send);
    free(recv);
    free(times);
    free(reqs);
    MPI_Finalize();
    return bad != 0;
}
