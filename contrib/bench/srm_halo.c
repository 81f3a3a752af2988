/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * srm_halo: the halo exchange of a 3-D 7-point stencil, as a molecular
 * dynamics or CFD code does it every step (contrib/bench/halo.sh).
 *
 * The ranks form a periodic 3-D grid (MPI_Dims_create); every iteration
 * each rank computes for COMPUTE_US (a busy loop over its own data, as the
 * stencil's update would be), then posts non-blocking receives and sends
 * of one FACE_BYTES face to each of its six neighbours and waits for all
 * twelve. An iteration's time is the slowest rank's (a step ends when the
 * last rank has its halos); after WARMUP iterations the job runs for
 * SECONDS and rank 0 prints one line:
 *
 *   halo: ranks=R dims=AxBxC face=F compute_us=C iters=N
 *         p50_us=.. p99_us=.. mean_us=.. max_us=..
 *
 * Every received face is checked (its sender, iteration and a pattern):
 * a wrong one fails the job with exit status 1.
 *
 * Usage: srm_halo [-s FACE_BYTES] [-c COMPUTE_US] [-t SECONDS] [-w WARMUP]
 */
#include "bench_stats.h"

#include <mpi.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define HALO_MAX_ITERS 1000000

typedef struct {
    size_t face;       /* bytes per face */
    double compute_us; /* per iteration */
    double seconds;    /* measured */
    int    warmup;
} halo_opts_t;

static void usage_exit(const char *prog, int rank)
{
    if (rank == 0) {
        fprintf(stderr, "usage: %s [-s FACE_BYTES] [-c COMPUTE_US] "
                        "[-t SECONDS] [-w WARMUP] (FACE_BYTES: a multiple "
                        "of 8, 16 B to 64 MB)\n", prog);
    }
    MPI_Finalize();
    exit(2);
}

static void parse(int argc, char **argv, int rank, halo_opts_t *opts)
{
    int c;

    opts->face       = 16384;
    opts->compute_us = 0;
    opts->seconds    = 2;
    opts->warmup     = 50;
    while ((c = getopt(argc, argv, "s:c:t:w:h")) != -1) {
        switch (c) {
        case 's': opts->face = strtoul(optarg, NULL, 0); break;
        case 'c': opts->compute_us = atof(optarg); break;
        case 't': opts->seconds = atof(optarg); break;
        case 'w': opts->warmup = atoi(optarg); break;
        default:  usage_exit(argv[0], rank);
        }
    }
    if ((opts->face < 16) || (opts->face > (64u << 20)) ||
        ((opts->face % sizeof(uint64_t)) != 0) ||
        (opts->compute_us < 0) || (opts->seconds <= 0) ||
        (opts->warmup < 0)) {
        usage_exit(argv[0], rank);
    }
}

/* The word at `i` of the face `rank` sends in iteration `iter`. */
static uint64_t pattern(int rank, int iter, size_t i)
{
    return ((uint64_t)rank << 40) ^ ((uint64_t)iter << 20) ^ (i * 2654435761u);
}

static void fill(uint64_t *face, size_t words, int rank, int iter)
{
    size_t i;

    for (i = 0; i < words; ++i) {
        face[i] = pattern(rank, iter, i);
    }
}

static int check(const uint64_t *face, size_t words, int from, int iter)
{
    size_t i;

    for (i = 0; i < words; ++i) {
        if (face[i] != pattern(from, iter, i)) {
            return 0;
        }
    }
    return 1;
}

/* Busy work for `us` microseconds on the rank's own data. */
static double compute(double us, double *cells, size_t n)
{
    double end = MPI_Wtime() + us * 1e-6, sum = 0;
    size_t i;

    while (MPI_Wtime() < end) {
        for (i = 1; i + 1 < n; ++i) {
            cells[i] = (cells[i - 1] + cells[i] + cells[i + 1]) / 3.0;
        }
        sum += cells[n / 2];
    }
    return sum;
}

int main(int argc, char **argv)
{
    int rank, size, dims[3] = {0, 0, 0}, periods[3] = {1, 1, 1};
    int nbr[6], d, k, iter, n = 0, stop = 0, bad = 0, all_bad;
    uint64_t *send[6], *recv[6];
    double cells[1024], t0, t, local, slowest, end, sum, sink = 0;
    double *times;
    MPI_Request req[12];
    MPI_Comm grid;
    halo_opts_t opts;
    size_t words;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    parse(argc, argv, rank, &opts);
    words = opts.face / sizeof(uint64_t);

    MPI_Dims_create(size, 3, dims);
    MPI_Cart_create(MPI_COMM_WORLD, 3, dims, periods, 0, &grid);
    MPI_Comm_rank(grid, &rank);
    for (d = 0; d < 3; ++d) {
        MPI_Cart_shift(grid, d, 1, &nbr[2 * d], &nbr[2 * d + 1]);
    }
    for (k = 0; k < 6; ++k) {
        send[k] = malloc(words * sizeof(uint64_t));
        recv[k] = malloc(words * sizeof(uint64_t));
        if ((send[k] == NULL) || (recv[k] == NULL)) {
            fprintf(stderr, "srm_halo: out of memory\n");
            MPI_Abort(MPI_COMM_WORLD, 1);
        }
    }
    times = malloc(HALO_MAX_ITERS * sizeof(double));
    if (times == NULL) {
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    for (k = 0; k < 1024; ++k) {
        cells[k] = rank + k;
    }

    MPI_Barrier(grid);
    end = 0;
    for (iter = 0; !stop; ++iter) {
        t0 = MPI_Wtime();
        sink += compute(opts.compute_us, cells, 1024);
        for (k = 0; k < 6; ++k) {
            fill(send[k], words, rank, iter);
            /* Tag k ^ 1: the face a neighbour sends towards us arrives
             * on the side opposite to the one it left from. */
            MPI_Irecv(recv[k], (int)opts.face, MPI_BYTE, nbr[k], k ^ 1,
                      grid, &req[k]);
        }
        for (k = 0; k < 6; ++k) {
            MPI_Isend(send[k], (int)opts.face, MPI_BYTE, nbr[k], k, grid,
                      &req[6 + k]);
        }
        MPI_Waitall(12, req, MPI_STATUSES_IGNORE);
        local = MPI_Wtime() - t0;
        for (k = 0; k < 6; ++k) {
            bad += !check(recv[k], words, nbr[k], iter);
        }
        /* The step's time is the slowest rank's. The job ends after the
         * step in which the first rank saw its time was up (-1), which
         * is not counted. */
        if (iter == opts.warmup) {
            end = MPI_Wtime() + opts.seconds;
        }
        t = ((iter >= opts.warmup) && (MPI_Wtime() >= end)) ? -1.0 : local;
        MPI_Allreduce(&t, &slowest, 1, MPI_DOUBLE, MPI_MIN, grid);
        if (slowest < 0) {
            stop = 1;
        } else {
            MPI_Allreduce(&local, &slowest, 1, MPI_DOUBLE, MPI_MAX, grid);
            if ((iter >= opts.warmup) && (n < HALO_MAX_ITERS)) {
                times[n++] = slowest * 1e6;
            }
        }
        if (rank == 0) {
            stop = stop || (n >= HALO_MAX_ITERS);
        }
        MPI_Bcast(&stop, 1, MPI_INT, 0, grid);
    }

    MPI_Allreduce(&bad, &all_bad, 1, MPI_INT, MPI_SUM, grid);
    if (rank == 0) {
        if (n == 0) {
            fprintf(stderr, "srm_halo: no iteration measured\n");
            all_bad = all_bad ? all_bad : -1;
        } else {
            bench_sort(times, n);
            for (sum = 0, k = 0; k < n; ++k) {
                sum += times[k];
            }
            printf("halo: ranks=%d dims=%dx%dx%d face=%zu compute_us=%.0f "
                   "iters=%d p50_us=%.1f p99_us=%.1f mean_us=%.1f "
                   "max_us=%.1f bad_faces=%d\n", size, dims[0], dims[1],
                   dims[2], opts.face, opts.compute_us, n,
                   bench_median(times, n),
                   times[bench_percentile_index(n, 0.99)], sum / n,
                   times[n - 1], all_bad);
        }
        fflush(stdout);
    }
    for (k = 0; k < 6; ++k) {
        free(send[k]);
        free(recv[k]);
    }
    free(times);
    MPI_Comm_free(&grid);
    MPI_Finalize();
    return (all_bad != 0) || (sink < -1.0);
}
