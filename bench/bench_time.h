/* bench_time.h - what the benchmarks share to time things: the monotonic
 * clock in seconds, and doubles' order for qsort (medians). */
#ifndef SYNOR_BENCH_TIME_H
#define SYNOR_BENCH_TIME_H

#include <time.h>

static inline double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static inline int cmp_d(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

#endif
