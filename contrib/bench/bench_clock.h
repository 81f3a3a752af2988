/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * bench_clock.h - the clock and the sort order that the timing programs of
 * contrib/bench (srm_hop_floor, srm_wake_cost) take their samples with.
 */
#ifndef SRM_BENCH_CLOCK_H
#define SRM_BENCH_CLOCK_H

#include <time.h>

/* Seconds on CLOCK_MONOTONIC (the same on every CPU). */
static inline double bench_now(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* qsort order of doubles, to read percentiles off sorted samples. */
static inline int bench_cmp_double(const void *a, const void *b)
{
    double x = *(const double*)a, y = *(const double*)b;

    return (x < y) ? -1 : (x > y);
}

#endif
