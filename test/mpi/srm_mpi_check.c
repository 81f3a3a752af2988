/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * srm_mpi_check - MPI correctness check for whatever transport UCX uses.
 *
 * Phases (each reported PASS/FAIL by rank 0):
 *   pingpong        rank pairs (0,1), (2,3), ...; with an odd rank count the
 *                   last rank then does a second round with rank 0.  With 4
 *                   or more ranks, again with pairs (r, r + size/2), which
 *                   span hosts when ranks are placed host by host.  Sizes
 *                   are the powers of two from 1 B to MAXSIZE plus a few odd
 *                   sizes; every message carries a pattern derived from
 *                   (sender, iteration, size) and is verified byte by byte.
 *   alltoall        MPI_Alltoall, 8 B and 64 KiB per peer, verified.
 *   alltoallv       MPI_Alltoallv, about 8 B and 64 KiB per peer with
 *                   per-pair sizes and gaps between the receive blocks;
 *                   blocks and gaps are verified.
 *   allreduce       MPI_Allreduce sums of doubles and of int64, checked
 *                   against the closed-form result.
 *   nonblocking     many small MPI_Isend/MPI_Irecv to/from all peers at once,
 *                   receives posted in an order different from the sends;
 *                   checks tag matching, the non-overtaking rule for equal
 *                   (source, tag), and MPI_ANY_SOURCE matching.
 *
 * Build: mpicc -O2 -Wall -o srm_mpi_check srm_mpi_check.c
 * The last line printed by rank 0 is "srm_mpi_check: N passed, M failed";
 * the exit code is non-zero when M > 0.
 */
#include <mpi.h>

#include <inttypes.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MAX_REPORTS   8     /* mismatch messages printed per rank and phase */
#define NB_MSGS       24    /* nonblocking messages to each peer */
#define NB_SEQ        4     /* of which this many share one tag (ordering) */
#define NB_MAX_BYTES  200
#define GAP_BYTES     24    /* gap between alltoallv receive blocks */
#define GAP_FILL      0xA5

static int g_rank, g_size;
static int g_iters = 3;
static size_t g_max_size = 4u << 20;
static const char *g_corrupt = NULL;   /* phase name or "all" */
static int g_reports;                  /* mismatch messages printed so far */
static int g_passed, g_failed;

/* ------------------------------------------------------------------------ */
/* Patterns                                                                 */

static uint64_t mix64(uint64_t z)
{
    z += 0x9e3779b97f4a7c15ull;
    z  = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z  = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/* Seed of a message's pattern; 'extra' distinguishes destinations etc. */
static uint64_t pattern_seed(int sender, int iter, size_t size, uint64_t extra)
{
    uint64_t s = mix64((uint64_t)(uint32_t)sender + 0x1000);
    s = mix64(s ^ ((uint64_t)(uint32_t)iter << 20));
    s = mix64(s ^ (uint64_t)size);
    return mix64(s ^ extra);
}

static void pattern_fill(unsigned char *buf, size_t len, uint64_t seed)
{
    size_t i, n;
    uint64_t w;

    for (i = 0; i < len; i += 8) {
        w = mix64(seed + i);
        n = (len - i < 8) ? len - i : 8;
        memcpy(buf + i, &w, n);
    }
}

/* Returns the offset of the first wrong byte, or (size_t)-1 if all match. */
static size_t pattern_check(const unsigned char *buf, size_t len, uint64_t seed)
{
    unsigned char exp[8];
    size_t i, j, n;
    uint64_t w;

    for (i = 0; i < len; i += 8) {
        w = mix64(seed + i);
        n = (len - i < 8) ? len - i : 8;
        memcpy(exp, &w, 8);
        if (memcmp(buf + i, exp, n) != 0) {
            for (j = 0; j < n; ++j) {
                if (buf[i + j] != exp[j]) {
                    return i + j;
                }
            }
        }
    }
    return (size_t)-1;
}

static unsigned char pattern_byte(size_t off, uint64_t seed)
{
    uint64_t w = mix64(seed + (off & ~(size_t)7));
    unsigned char b[8];

    memcpy(b, &w, 8);
    return b[off & 7];
}

/* ------------------------------------------------------------------------ */
/* Helpers                                                                  */

static void report(const char *phase, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static void report(const char *phase, const char *fmt, ...)
{
    char msg[512];
    va_list ap;

    if (g_reports >= MAX_REPORTS) {
        return;
    }
    ++g_reports;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    fprintf(stderr, "srm_mpi_check: rank %d: %s: %s\n", g_rank, phase, msg);
    fflush(stderr);
}

static int corrupt_phase(const char *phase)
{
    return g_corrupt != NULL &&
           (!strcmp(g_corrupt, "all") || !strcmp(g_corrupt, phase));
}

/* Which rank damages its outgoing data when corruption is requested. */
static int corrupt_rank(void)
{
    return g_size > 1 ? 1 : 0;
}

static void *xmalloc(size_t len)
{
    void *p = malloc(len ? len : 1);

    if (p == NULL) {
        fprintf(stderr, "srm_mpi_check: rank %d: out of memory (%zu bytes)\n",
                g_rank, len);
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    return p;
}

/* Combine the ranks' error counts and print the result line on rank 0. */
static void phase_end(const char *phase, long local_errors, double t0)
{
    long total = 0;
    double dt = MPI_Wtime() - t0, dtmax = 0;

    MPI_Allreduce(&local_errors, &total, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
    MPI_Reduce(&dt, &dtmax, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
    if (total == 0) {
        ++g_passed;
    } else {
        ++g_failed;
    }
    if (g_rank == 0) {
        printf("%s: %-34s %ld error(s)  %.3f s\n", total ? "FAIL" : "PASS",
               phase, total, dtmax);
        fflush(stdout);
    }
    g_reports = 0;
}

static int cmp_size(const void *a, const void *b)
{
    size_t x = *(const size_t*)a, y = *(const size_t*)b;
    return (x > y) - (x < y);
}

/* ------------------------------------------------------------------------ */
/* (a) ping-pong                                                            */

static long pingpong_one(int peer, int initiator, size_t size, int iter,
                         int tag, unsigned char *sbuf, unsigned char *rbuf)
{
    const char *phase = "pingpong";
    MPI_Status st;
    long errors = 0;
    int count, from_first;
    size_t bad;
    uint64_t sseed = pattern_seed(g_rank, iter, size, 0);
    uint64_t rseed = pattern_seed(peer, iter, size, 0);

    pattern_fill(sbuf, size, sseed);
    if (corrupt_phase(phase) && g_rank == corrupt_rank()) {
        sbuf[size / 2] ^= 0x40;
    }
    memset(rbuf, 0, size);

    for (from_first = 0; from_first < 2; ++from_first) {
        if ((from_first == 0) == (initiator != 0)) {
            MPI_Send(sbuf, (int)size, MPI_BYTE, peer, tag, MPI_COMM_WORLD);
        } else {
            MPI_Recv(rbuf, (int)size, MPI_BYTE, peer, tag, MPI_COMM_WORLD, &st);
            MPI_Get_count(&st, MPI_BYTE, &count);
            if ((size_t)count != size) {
                report(phase, "size %zu iter %d from %d: got %d bytes",
                       size, iter, peer, count);
                ++errors;
            }
            bad = pattern_check(rbuf, size, rseed);
            if (bad != (size_t)-1) {
                report(phase, "size %zu iter %d from %d: first bad byte at "
                       "offset %zu (got 0x%02x, expected 0x%02x)", size, iter,
                       peer, bad, rbuf[bad], pattern_byte(bad, rseed));
                ++errors;
            }
        }
    }
    return errors;
}

/*
 * Ping-pong partner of this rank in the given scheme and round, or -1.
 * scheme 0 ("adjacent"): round 0 pairs (0,1), (2,3), ...; round 1, with an
 *   odd rank count only, pairs (0, size-1).
 * scheme 1 ("halves"): round 0 pairs r with r + size/2 (for r < size/2), so
 *   that with block-wise placement of ranks the pairs span hosts; with an
 *   odd count the last rank sits out.  No round 1.
 */
static int pingpong_peer(int scheme, int round)
{
    int half = g_size / 2, peer;

    if (scheme == 0) {
        if (round == 0) {
            peer = g_rank ^ 1;
            return peer < g_size ? peer : -1;
        }
        if ((g_size % 2) && (g_size > 1)) {
            if (g_rank == 0) {
                return g_size - 1;
            }
            if (g_rank == g_size - 1) {
                return 0;
            }
        }
        return -1;
    }
    if (round != 0 || half == 0) {
        return -1;
    }
    if (g_rank < half) {
        return g_rank + half;
    }
    if (g_rank < 2 * half) {
        return g_rank - half;
    }
    return -1;
}

static void phase_pingpong(int scheme)
{
    static const size_t odd_sizes[] = {3, 1000, 8193, 65537};
    size_t sizes[64 + sizeof(odd_sizes) / sizeof(odd_sizes[0])];
    size_t nsizes = 0, s, i;
    unsigned char *sbuf, *rbuf;
    long errors = 0;
    double t0;
    int iter, round, peer, initiator;
    char name[64];

    for (s = 1; s <= g_max_size; s *= 2) {
        sizes[nsizes++] = s;
        if (s > ((size_t)-1) / 2) {
            break;
        }
    }
    for (i = 0; i < sizeof(odd_sizes) / sizeof(odd_sizes[0]); ++i) {
        if (odd_sizes[i] <= g_max_size) {
            sizes[nsizes++] = odd_sizes[i];
        }
    }
    qsort(sizes, nsizes, sizeof(sizes[0]), cmp_size);

    sbuf = xmalloc(g_max_size);
    rbuf = xmalloc(g_max_size);
    MPI_Barrier(MPI_COMM_WORLD);
    t0 = MPI_Wtime();

    for (round = 0; round < 2; ++round) {
        peer = pingpong_peer(scheme, round);
        if (peer < 0) {
            continue;
        }
        initiator = g_rank < peer;
        for (iter = 0; iter < g_iters; ++iter) {
            for (i = 0; i < nsizes; ++i) {
                errors += pingpong_one(peer, initiator, sizes[i], iter,
                                       100 + (int)i, sbuf, rbuf);
            }
        }
    }

    free(sbuf);
    free(rbuf);
    snprintf(name, sizeof(name), "pingpong %s 1..%zu B",
             scheme ? "halves" : "adjacent", g_max_size);
    phase_end(name, errors, t0);
}

/* ------------------------------------------------------------------------ */
/* (b) alltoall and alltoallv                                               */

static void phase_alltoall(size_t n)
{
    const char *phase = "alltoall";
    unsigned char *sbuf = xmalloc(n * g_size), *rbuf = xmalloc(n * g_size);
    long errors = 0;
    double t0;
    size_t bad;
    uint64_t seed;
    int iter, p;
    char name[64];

    MPI_Barrier(MPI_COMM_WORLD);
    t0 = MPI_Wtime();
    for (iter = 0; iter < g_iters; ++iter) {
        for (p = 0; p < g_size; ++p) {
            pattern_fill(sbuf + p * n, n, pattern_seed(g_rank, iter, n, 1000 + p));
        }
        if (corrupt_phase(phase) && g_rank == corrupt_rank()) {
            sbuf[n * g_size - 1] ^= 0x01;
        }
        memset(rbuf, 0, n * g_size);
        MPI_Alltoall(sbuf, (int)n, MPI_BYTE, rbuf, (int)n, MPI_BYTE,
                     MPI_COMM_WORLD);
        for (p = 0; p < g_size; ++p) {
            seed = pattern_seed(p, iter, n, 1000 + g_rank);
            bad  = pattern_check(rbuf + p * n, n, seed);
            if (bad != (size_t)-1) {
                report(phase, "%zu B iter %d block from %d: first bad byte at "
                       "offset %zu", n, iter, p, bad);
                ++errors;
            }
        }
    }
    free(sbuf);
    free(rbuf);
    snprintf(name, sizeof(name), "alltoall %zu B", n);
    phase_end(name, errors, t0);
}

/* Bytes rank 'from' sends to rank 'to' in alltoallv iteration 'iter'. */
static size_t a2av_len(size_t n, int from, int to, int iter)
{
    return n + (size_t)((from * 7 + to * 13 + iter * 5) % 17);
}

static void phase_alltoallv(size_t n)
{
    const char *phase = "alltoallv";
    int *scounts = xmalloc(sizeof(int) * g_size);
    int *sdispls = xmalloc(sizeof(int) * g_size);
    int *rcounts = xmalloc(sizeof(int) * g_size);
    int *rdispls = xmalloc(sizeof(int) * g_size);
    size_t cap = (n + 17 + GAP_BYTES) * g_size + GAP_BYTES;
    unsigned char *sbuf = xmalloc(cap), *rbuf = xmalloc(cap);
    long errors = 0;
    double t0;
    size_t off, bad, len, k, gap_end;
    int iter, p;
    char name[64];

    MPI_Barrier(MPI_COMM_WORLD);
    t0 = MPI_Wtime();
    for (iter = 0; iter < g_iters; ++iter) {
        /* send blocks in reverse peer order, packed */
        off = 0;
        for (p = g_size - 1; p >= 0; --p) {
            len        = a2av_len(n, g_rank, p, iter);
            scounts[p] = (int)len;
            sdispls[p] = (int)off;
            pattern_fill(sbuf + off, len, pattern_seed(g_rank, iter, len, 2000 + p));
            off += len;
        }
        if (corrupt_phase(phase) && g_rank == corrupt_rank()) {
            sbuf[0] ^= 0x80;
        }
        /* receive blocks in peer order with a gap before each one */
        off = 0;
        for (p = 0; p < g_size; ++p) {
            off       += GAP_BYTES;
            rcounts[p] = (int)a2av_len(n, p, g_rank, iter);
            rdispls[p] = (int)off;
            off       += rcounts[p];
        }
        gap_end = off + GAP_BYTES;
        memset(rbuf, GAP_FILL, gap_end);
        MPI_Alltoallv(sbuf, scounts, sdispls, MPI_BYTE, rbuf, rcounts, rdispls,
                      MPI_BYTE, MPI_COMM_WORLD);
        off = 0;
        for (p = 0; p < g_size; ++p) {
            for (k = off; k < (size_t)rdispls[p]; ++k) {
                if (rbuf[k] != GAP_FILL) {
                    report(phase, "%zu B iter %d: gap byte %zu before block of "
                           "%d overwritten", n, iter, k, p);
                    ++errors;
                    break;
                }
            }
            len = (size_t)rcounts[p];
            bad = pattern_check(rbuf + rdispls[p], len,
                                pattern_seed(p, iter, len, 2000 + g_rank));
            if (bad != (size_t)-1) {
                report(phase, "%zu B iter %d block from %d (%zu B): first bad "
                       "byte at offset %zu", n, iter, p, len, bad);
                ++errors;
            }
            off = rdispls[p] + len;
        }
        for (k = off; k < gap_end; ++k) {
            if (rbuf[k] != GAP_FILL) {
                report(phase, "%zu B iter %d: byte %zu after the last block "
                       "overwritten", n, iter, k);
                ++errors;
                break;
            }
        }
    }
    free(scounts);
    free(sdispls);
    free(rcounts);
    free(rdispls);
    free(sbuf);
    free(rbuf);
    snprintf(name, sizeof(name), "alltoallv ~%zu B", n);
    phase_end(name, errors, t0);
}

/* ------------------------------------------------------------------------ */
/* (c) allreduce                                                            */

/* Multiplier of element k: k % 1024 + 1, negative for every third one. */
static double allreduce_factor(size_t k, int iter)
{
    return (double)(k % 1024 + 1) * ((k + (size_t)iter) % 3 == 0 ? -1.0 : 1.0);
}

static void phase_allreduce(size_t count)
{
    const char *phase = "allreduce";
    double *dsend = xmalloc(sizeof(double) * count);
    double *drecv = xmalloc(sizeof(double) * count);
    int64_t *isend = xmalloc(sizeof(int64_t) * count);
    int64_t *irecv = xmalloc(sizeof(int64_t) * count);
    long derrors = 0, ierrors = 0;
    double t0, dexp;
    int64_t iexp, n = g_size, tri = (int64_t)g_size * (g_size + 1) / 2;
    int iter;
    size_t k;
    char name[64];

    /*
     * double: rank r contributes (r+1) * m_k * sign_k, m_k = k % 1024 + 1,
     * so the sum is exactly m_k * sign_k * N(N+1)/2 (small integers are exact).
     * int64: rank r contributes (r+1) * 2^33 + k * 3 + iter - r; the sum is
     * 2^33 * N(N+1)/2 + N*(3k + iter) - N(N-1)/2.
     */
    MPI_Barrier(MPI_COMM_WORLD);
    t0 = MPI_Wtime();
    for (iter = 0; iter < g_iters; ++iter) {
        for (k = 0; k < count; ++k) {
            dsend[k] = (double)(g_rank + 1) * allreduce_factor(k, iter);
        }
        if (corrupt_phase(phase) && g_rank == corrupt_rank()) {
            dsend[count - 1] += 1.0;
        }
        memset(drecv, 0, sizeof(double) * count);
        MPI_Allreduce(dsend, drecv, (int)count, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
        for (k = 0; k < count; ++k) {
            dexp = allreduce_factor(k, iter) * (double)tri;
            if (drecv[k] != dexp) {
                report(phase, "double count %zu iter %d: element %zu = %.17g, "
                       "expected %.17g", count, iter, k, drecv[k], dexp);
                ++derrors;
            }
        }
    }
    snprintf(name, sizeof(name), "allreduce double x%zu", count);
    phase_end(name, derrors, t0);

    MPI_Barrier(MPI_COMM_WORLD);
    t0 = MPI_Wtime();
    for (iter = 0; iter < g_iters; ++iter) {
        for (k = 0; k < count; ++k) {
            isend[k] = ((int64_t)(g_rank + 1) << 33) + (int64_t)k * 3 + iter - g_rank;
        }
        if (corrupt_phase(phase) && g_rank == corrupt_rank()) {
            isend[0] += 1;
        }
        memset(irecv, 0, sizeof(int64_t) * count);
        MPI_Allreduce(isend, irecv, (int)count, MPI_INT64_T, MPI_SUM, MPI_COMM_WORLD);
        for (k = 0; k < count; ++k) {
            iexp = ((int64_t)1 << 33) * tri + n * ((int64_t)k * 3 + iter) -
                   n * (n - 1) / 2;
            if (irecv[k] != iexp) {
                report(phase, "int64 count %zu iter %d: element %zu = %" PRId64
                       ", expected %" PRId64, count, iter, k, irecv[k], iexp);
                ++ierrors;
            }
        }
    }
    snprintf(name, sizeof(name), "allreduce int64 x%zu", count);
    phase_end(name, ierrors, t0);

    free(dsend);
    free(drecv);
    free(isend);
    free(irecv);
}

/* ------------------------------------------------------------------------ */
/* (d) many small nonblocking messages with tag matching                    */

/* Message j (0..NB_MSGS-1) from 'from' to 'to': tag, length and content. */
static int nb_tag(int j)
{
    /* the first NB_SEQ messages share one tag to test non-overtaking order */
    return j < NB_SEQ ? 7 : 1000 + j * 3;
}

static size_t nb_len(int from, int to, int j, int iter)
{
    return 8 + (size_t)((from * 31 + to * 17 + j * 11 + iter) % (NB_MAX_BYTES - 8));
}

/* The first 8 bytes hold (from, j); the rest is a pattern. */
static void nb_fill(unsigned char *buf, int from, int to, int j, int iter)
{
    size_t len = nb_len(from, to, j, iter);
    int32_t hdr[2] = {from, j};

    memcpy(buf, hdr, 8);
    pattern_fill(buf + 8, len - 8, pattern_seed(from, iter, len, 3000 + to * 64 + j));
}

static long nb_check(const unsigned char *buf, int count, int from, int j,
                     int iter, int tag, const MPI_Status *st, const char *what)
{
    const char *phase = "nonblocking";
    size_t len = nb_len(from, g_rank, j, iter);
    int32_t hdr[2];
    size_t bad;

    if (st->MPI_SOURCE != from || st->MPI_TAG != tag) {
        report(phase, "%s iter %d: status source/tag %d/%d, expected %d/%d",
               what, iter, st->MPI_SOURCE, st->MPI_TAG, from, tag);
        return 1;
    }
    if ((size_t)count != len) {
        report(phase, "%s iter %d from %d msg %d: %d bytes, expected %zu",
               what, iter, from, j, count, len);
        return 1;
    }
    memcpy(hdr, buf, 8);
    if (hdr[0] != from || hdr[1] != j) {
        report(phase, "%s iter %d: matched message (from %d, #%d), expected "
               "(from %d, #%d)%s", what, iter, hdr[0], hdr[1], from, j,
               hdr[0] == from && j < NB_SEQ ? " (order violated)" : "");
        return 1;
    }
    bad = pattern_check(buf + 8, len - 8,
                        pattern_seed(from, iter, len, 3000 + g_rank * 64 + j));
    if (bad != (size_t)-1) {
        report(phase, "%s iter %d from %d msg %d: first bad byte at offset %zu",
               what, iter, from, j, bad + 8);
        return 1;
    }
    return 0;
}

static void phase_nonblocking(void)
{
    const char *phase = "nonblocking";
    int nmsg = NB_MSGS * g_size;
    unsigned char *sbuf = xmalloc((size_t)nmsg * NB_MAX_BYTES);
    unsigned char *rbuf = xmalloc((size_t)nmsg * NB_MAX_BYTES);
    unsigned char *abuf = xmalloc((size_t)g_size * NB_MAX_BYTES);
    MPI_Request *reqs = xmalloc(sizeof(MPI_Request) * (2 * nmsg + 2 * g_size));
    MPI_Status *stats = xmalloc(sizeof(MPI_Status) * (2 * nmsg + 2 * g_size));
    int *any_seen = xmalloc(sizeof(int) * g_size);
    unsigned char any_send[64];
    long errors = 0;
    double t0;
    int iter, p, j, idx, nreq, count, src, jj;
    unsigned char *b;

    MPI_Barrier(MPI_COMM_WORLD);
    t0 = MPI_Wtime();
    for (iter = 0; iter < g_iters; ++iter) {
        nreq = 0;
        memset(rbuf, 0, (size_t)nmsg * NB_MAX_BYTES);
        memset(abuf, 0, (size_t)g_size * NB_MAX_BYTES);

        /*
         * Receives: tagged messages with descending j for the distinct tags
         * (so matching has to search), ascending j within the shared tag
         * (the order they must match in); peers in rotating order.
         * Plus one MPI_ANY_SOURCE receive per peer on a dedicated tag.
         */
        for (idx = 0; idx < g_size; ++idx) {
            p = (g_rank + g_size - idx) % g_size;
            for (j = NB_MSGS - 1; j >= NB_SEQ; --j) {
                b = rbuf + ((size_t)p * NB_MSGS + j) * NB_MAX_BYTES;
                MPI_Irecv(b, NB_MAX_BYTES, MPI_BYTE, p, nb_tag(j),
                          MPI_COMM_WORLD, &reqs[nreq++]);
            }
            for (j = 0; j < NB_SEQ; ++j) {
                b = rbuf + ((size_t)p * NB_MSGS + j) * NB_MAX_BYTES;
                MPI_Irecv(b, NB_MAX_BYTES, MPI_BYTE, p, nb_tag(j),
                          MPI_COMM_WORLD, &reqs[nreq++]);
            }
        }
        for (idx = 0; idx < g_size; ++idx) {
            MPI_Irecv(abuf + (size_t)idx * NB_MAX_BYTES, NB_MAX_BYTES, MPI_BYTE,
                      MPI_ANY_SOURCE, 999, MPI_COMM_WORLD, &reqs[nreq++]);
        }

        /* Sends: ascending j, peers in the other rotating order. */
        for (idx = 0; idx < g_size; ++idx) {
            p = (g_rank + idx) % g_size;
            for (j = 0; j < NB_MSGS; ++j) {
                b = sbuf + ((size_t)p * NB_MSGS + j) * NB_MAX_BYTES;
                nb_fill(b, g_rank, p, j, iter);
                if (corrupt_phase(phase) && g_rank == corrupt_rank() &&
                    j == NB_MSGS - 1 && p == 0) {
                    b[nb_len(g_rank, p, j, iter) - 1] ^= 0x10;
                }
                MPI_Isend(b, (int)nb_len(g_rank, p, j, iter), MPI_BYTE, p,
                          nb_tag(j), MPI_COMM_WORLD, &reqs[nreq++]);
            }
        }
        {
            /* ANY_SOURCE message, the same 64 bytes to every peer:
             * header (me, NB_MSGS) + pattern (send buffers may be shared) */
            int32_t hdr[2] = {g_rank, NB_MSGS};
            memcpy(any_send, hdr, 8);
            pattern_fill(any_send + 8, 56, pattern_seed(g_rank, iter, 64, 4000));
            for (idx = 0; idx < g_size; ++idx) {
                p = (g_rank + idx) % g_size;
                MPI_Isend(any_send, 64, MPI_BYTE, p, 999, MPI_COMM_WORLD,
                          &reqs[nreq++]);
            }
            MPI_Waitall(nreq, reqs, stats);
        }

        /* Check the tagged receives (the first g_size*NB_MSGS requests). */
        idx = 0;
        for (jj = 0; jj < g_size; ++jj) {
            p = (g_rank + g_size - jj) % g_size;
            for (j = NB_MSGS - 1; j >= NB_SEQ; --j, ++idx) {
                MPI_Get_count(&stats[idx], MPI_BYTE, &count);
                errors += nb_check(rbuf + ((size_t)p * NB_MSGS + j) * NB_MAX_BYTES,
                                   count, p, j, iter, nb_tag(j), &stats[idx],
                                   "tagged");
            }
            for (j = 0; j < NB_SEQ; ++j, ++idx) {
                MPI_Get_count(&stats[idx], MPI_BYTE, &count);
                errors += nb_check(rbuf + ((size_t)p * NB_MSGS + j) * NB_MAX_BYTES,
                                   count, p, j, iter, nb_tag(j), &stats[idx],
                                   "same-tag");
            }
        }
        /* ANY_SOURCE receives: one from each rank, content matches source */
        memset(any_seen, 0, sizeof(int) * g_size);
        for (jj = 0; jj < g_size; ++jj, ++idx) {
            int32_t hdr[2];
            b   = abuf + (size_t)jj * NB_MAX_BYTES;
            src = stats[idx].MPI_SOURCE;
            MPI_Get_count(&stats[idx], MPI_BYTE, &count);
            memcpy(hdr, b, 8);
            if (src < 0 || src >= g_size || count != 64 || hdr[0] != src ||
                hdr[1] != NB_MSGS || stats[idx].MPI_TAG != 999 ||
                pattern_check(b + 8, 56, pattern_seed(src, iter, 64, 4000)) !=
                        (size_t)-1) {
                report(phase, "any-source iter %d: receive %d: source %d, tag "
                       "%d, %d bytes, header (%d,%d) inconsistent", iter, jj,
                       src, stats[idx].MPI_TAG, count, hdr[0], hdr[1]);
                ++errors;
                continue;
            }
            if (any_seen[src]++) {
                report(phase, "any-source iter %d: two messages from %d",
                       iter, src);
                ++errors;
            }
        }
        /* all ANY_SOURCE messages must be in before the next iteration */
        MPI_Barrier(MPI_COMM_WORLD);
    }
    free(sbuf);
    free(rbuf);
    free(abuf);
    free(reqs);
    free(stats);
    free(any_seen);
    {
        char name[64];
        snprintf(name, sizeof(name), "nonblocking %dx%d msgs", g_size, NB_MSGS);
        phase_end(name, errors, t0);
    }
}

/* ------------------------------------------------------------------------ */

static void usage(FILE *f, const char *prog)
{
    fprintf(f,
"NAME\n"
"    %s - MPI data-correctness check of the transport under Open MPI/UCX\n"
"\n"
"SYNOPSIS\n"
"    mpirun [...] %s [-i ITER] [-m MAXSIZE] [-c PHASE] [-h]\n"
"\n"
"DESCRIPTION\n"
"    Runs, with every message verified byte by byte against a pattern\n"
"    derived from (sender rank, iteration, size):\n"
"      pingpong     MPI_Send/MPI_Recv between rank pairs (0,1), (2,3), ...\n"
"                   (odd rank count: the last rank also with rank 0), and\n"
"                   with 4 or more ranks also (r, r + size/2) for r < size/2,\n"
"                   for sizes 1 B .. MAXSIZE in powers of two plus 3, 1000,\n"
"                   8193 and 65537 B;\n"
"      alltoall     MPI_Alltoall with 8 B and 64 KiB per peer;\n"
"      alltoallv    MPI_Alltoallv with ~8 B and ~64 KiB per peer, per-pair\n"
"                   sizes and gaps between receive blocks;\n"
"      allreduce    MPI_Allreduce sum of doubles and of int64 against the\n"
"                   closed-form result;\n"
"      nonblocking  %d small MPI_Isend/MPI_Irecv per peer and iteration, all\n"
"                   outstanding at once, checking tag matching, MPI ordering\n"
"                   for equal (source, tag), and MPI_ANY_SOURCE.\n"
"    Rank 0 prints one PASS/FAIL line per phase and finally\n"
"    \"srm_mpi_check: N passed, M failed\". Mismatch details go to stderr\n"
"    from the rank that saw them.\n"
"\n"
"OPTIONS\n"
"    -i ITER     iterations of each phase (default 3)\n"
"    -m MAXSIZE  largest ping-pong size in bytes, K/M suffixes allowed\n"
"                (default 4M, at most 1G)\n"
"    -c PHASE    self-test: rank 1 deliberately damages what it sends in\n"
"                PHASE (pingpong, alltoall, alltoallv, allreduce,\n"
"                nonblocking or all), so those phases must FAIL\n"
"    -h          show this help and exit\n"
"\n"
"EXIT STATUS\n"
"    0 when every phase passed, 1 when any failed, 2 on a usage error.\n",
            prog, prog, NB_MSGS);
}

static int parse_size(const char *s, size_t *out)
{
    char *end;
    unsigned long long v = strtoull(s, &end, 10);

    if (end == s) {
        return -1;
    }
    if (*end == 'k' || *end == 'K') {
        v <<= 10;
        ++end;
    } else if (*end == 'm' || *end == 'M') {
        v <<= 20;
        ++end;
    } else if (*end == 'g' || *end == 'G') {
        v <<= 30;
        ++end;
    }
    if (*end != '\0' || v == 0 || v > (1ull << 30)) {
        return -1;
    }
    *out = (size_t)v;
    return 0;
}

int main(int argc, char **argv)
{
    const char *prog = strrchr(argv[0], '/') ? strrchr(argv[0], '/') + 1 : argv[0];
    int c, bad_args = 0, help = 0;
    char *end;
    long v;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
    MPI_Comm_size(MPI_COMM_WORLD, &g_size);

    opterr = 0;
    while ((c = getopt(argc, argv, "i:m:c:h")) != -1) {
        switch (c) {
        case 'i':
            v = strtol(optarg, &end, 10);
            if (*optarg == '\0' || *end != '\0' || v < 1 || v > 1000000) {
                if (g_rank == 0) {
                    fprintf(stderr, "%s: -i needs an integer 1..1000000, got '%s'\n",
                            prog, optarg);
                }
                bad_args = 1;
            } else {
                g_iters = (int)v;
            }
            break;
        case 'm':
            if (parse_size(optarg, &g_max_size) != 0) {
                if (g_rank == 0) {
                    fprintf(stderr, "%s: -m needs a size 1..1G, got '%s'\n",
                            prog, optarg);
                }
                bad_args = 1;
            }
            break;
        case 'c':
            if (strcmp(optarg, "pingpong") && strcmp(optarg, "alltoall") &&
                strcmp(optarg, "alltoallv") && strcmp(optarg, "allreduce") &&
                strcmp(optarg, "nonblocking") && strcmp(optarg, "all")) {
                if (g_rank == 0) {
                    fprintf(stderr, "%s: -c: unknown phase '%s'\n", prog, optarg);
                }
                bad_args = 1;
            } else {
                g_corrupt = optarg;
            }
            break;
        case 'h':
            help = 1;
            break;
        default:
            if (g_rank == 0) {
                fprintf(stderr, "%s: unknown option or missing argument: -%c "
                        "(see -h)\n", prog, optopt);
            }
            bad_args = 1;
            break;
        }
    }
    if (!bad_args && optind < argc) {
        if (g_rank == 0) {
            fprintf(stderr, "%s: unexpected argument '%s' (see -h)\n", prog,
                    argv[optind]);
        }
        bad_args = 1;
    }
    if (help || bad_args) {
        if (g_rank == 0 && help) {
            usage(stdout, prog);
        }
        MPI_Finalize();
        return bad_args ? 2 : 0;
    }

    if (g_rank == 0) {
        char host[256] = "";
        gethostname(host, sizeof(host) - 1);
        printf("srm_mpi_check: %d ranks, rank 0 on %s, %d iteration(s), "
               "max size %zu%s%s\n", g_size, host, g_iters, g_max_size,
               g_corrupt ? ", corrupting phase " : "", g_corrupt ? g_corrupt : "");
        fflush(stdout);
    }

    phase_pingpong(0);
    if (g_size >= 4) {
        phase_pingpong(1);
    }
    phase_alltoall(8);
    phase_alltoall(64 * 1024);
    phase_alltoallv(8);
    phase_alltoallv(64 * 1024);
    phase_allreduce(1);
    phase_allreduce(4099);
    phase_nonblocking();

    if (g_rank == 0) {
        printf("srm_mpi_check: %d passed, %d failed\n", g_passed, g_failed);
        fflush(stdout);
    }
    MPI_Finalize();
    return g_failed ? 1 : 0;
}
