/* readyq.c - the simulator's ready queues (sim_internal.h): binary heaps
 * of task indexes ordered by priority, then by when the task became ready,
 * the order in which the runtime takes them (the dynamic strategy's per
 * device queues in sim.c, the runtime rules' per group queues in
 * rtrule.c). */
#include "sim/sim_internal.h"

static int q_before(const sim *s, size_t a, size_t b)
{
    int pa = synor_workload_task(s->w, a)->priority, pb = synor_workload_task(s->w, b)->priority;
    return pa < pb || (pa == pb && s->ready_seq[a] < s->ready_seq[b]);
}

int synor__sim_q_before(const sim *s, size_t a, size_t b) { return q_before(s, a, b); }

void synor__sim_heap_down(const sim *s, size_t *h, size_t n)
{
    for (size_t k = 0;;) {
        size_t l = 2 * k + 1, b = k;
        if (l < n && q_before(s, h[l], h[b]))
            b = l;
        if (l + 1 < n && q_before(s, h[l + 1], h[b]))
            b = l + 1;
        if (b == k)
            break;
        size_t t = h[k];
        h[k] = h[b];
        h[b] = t;
        k = b;
    }
}

void synor__sim_heap_up(const sim *s, size_t *h, size_t k)
{
    while (k && q_before(s, h[k], h[(k - 1) / 2])) {
        size_t t = h[k];
        h[k] = h[(k - 1) / 2];
        h[(k - 1) / 2] = t;
        k = (k - 1) / 2;
    }
}

