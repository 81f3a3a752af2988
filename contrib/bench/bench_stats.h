/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The statistics of the MPI benchmarks (srm_halo.c, srm_many.c), defined
 * as contrib/bench/srm-stats defines them for the reports.
 */
#ifndef BENCH_STATS_H
#define BENCH_STATS_H

#include <stddef.h>
#include <stdlib.h>

static inline int bench_cmp_double(const void *a, const void *b)
{
    double x = *(const double*)a, y = *(const double*)b;

    return (x > y) - (x < y);
}

static inline void bench_sort(double *values, int n)
{
    qsort(values, (size_t)n, sizeof(*values), bench_cmp_double);
}

/* The index of the q-quantile of n sorted values: the rank ceil(q n). */
static inline size_t bench_percentile_index(int n, double q)
{
    size_t rank = (size_t)(q * n);

    if ((double)rank < q * n) {
        ++rank; /* ceil without libm */
    }
    return (rank > 0) ? rank - 1 : 0;
}

/* The middle of n sorted values, the mean of the two middle ones for an
 * even n. */
static inline double bench_median(const double *sorted, int n)
{
    return (n % 2) ? sorted[n / 2] : (sorted[n / 2 - 1] + sorted[n / 2]) / 2;
}

#endif
