/* exact_bound.c - one-machine rules of the exact planner's
 * allocation-first search (exact_comm.c): the jobs that must run one at a
 * time on a device, before or after a task. */
#include <stddef.h>

#include "plan/plan_internal.h"

/* Jackson's rule: jobs (w, q) on one machine from time 0, each followed by
 * its tail q; the least makespan is the largest prefix of times plus the
 * tail where the jobs go by tail, largest first. Sorts the jobs. */
double synor__jackson(double *w, double *q, size_t k)
{
    for (size_t x = 1; x < k; x++) {
        double vw = w[x], vq = q[x];
        size_t y = x;
        while (y > 0 && q[y - 1] < vq) {
            w[y] = w[y - 1];
            q[y] = q[y - 1];
            y--;
        }
        w[y] = vw;
        q[y] = vq;
    }
    double sum = 0, m = 0;
    for (size_t x = 0; x < k; x++) {
        sum += w[x];
        if (sum + q[x] > m)
            m = sum + q[x];
    }
    return m;
}

/* Local predecessors one at a time: from their heads (r) and times (w),
 * the earliest all are done on one machine. Sorts them. */
double synor__serial(double *r, double *w, size_t k)
{
    for (size_t x = 1; x < k; x++) {
        double vr = r[x], vw = w[x];
        size_t y = x;
        while (y > 0 && r[y - 1] > vr) {
            r[y] = r[y - 1];
            w[y] = w[y - 1];
            y--;
        }
        r[y] = vr;
        w[y] = vw;
    }
    double t = 0;
    for (size_t x = 0; x < k; x++)
        t = (t > r[x] ? t : r[x]) + w[x];
    return t;
}
