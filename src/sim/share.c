/* share.c - devices that share the host's cores (synor_fabric_set_host_sharing;
 * docs/PLANNING.md "Devices that share the host's cores").
 *
 * An OpenCL CPU device (PoCL) runs its kernels on the cores of the
 * runtime's CPU workers. Each running task has a remaining amount of work
 * (seconds at full speed: its cost-model time) and a speed: a CPU device
 * of a node runs at 1 / cpu_slowdown for each shared device of that node
 * that is busy; a shared device runs at 1 / (1 + (slowdown - 1) b / c),
 * b of the node's c CPU devices busy. Whenever a task starts or ends, the
 * speeds are worked out again; a running task whose speed changed has its
 * work done so far taken off and its end event pushed anew (the old one
 * goes stale through its version, s->tver, as a preemption's cut run). A
 * fabric without a shared device never gets here (s->share NULL): its
 * traces are the same as before. */
#include <math.h>
#include <string.h>

#include "common/common.h"
#include "sim/sim_internal.h"
#include "synor/device.h"

struct sim_share {
    size_t *node_cpus;   /* per device: the CPU devices of its node (for a shared one) */
    unsigned char *role; /* per device: 0 other, 1 a host CPU device, 2 shared */
    double *rem, *rate, *t0; /* per task, while it runs */
    int own_tver;        /* tver allocated here (no preemptions) */
};

int synor__sim_share_setup(sim *s)
{
    size_t d = s->d, shared = 0;
    for (size_t p = 0; p < d; p++)
        shared += synor_fabric_device_at(s->fab, p)->share_cpu_slowdown > 0;
    if (!shared)
        return 0;
    sim_share *h = synor__calloc(1, sizeof *h);
    if (!h)
        return synor__error(SYNOR_ENOMEM, "out of memory");
    s->share = h;
    h->node_cpus = synor__calloc(d, sizeof *h->node_cpus);
    h->role = synor__calloc(d, 1);
    h->rem = synor__calloc(s->n + 1, sizeof *h->rem);
    h->rate = synor__calloc(s->n + 1, sizeof *h->rate);
    h->t0 = synor__calloc(s->n + 1, sizeof *h->t0);
    if (!s->tver) {
        s->tver = synor__calloc(s->n + 1, sizeof *s->tver);
        h->own_tver = 1;
    }
    if (!h->node_cpus || !h->role || !h->rem || !h->rate || !h->t0 || !s->tver)
        return synor__error(SYNOR_ENOMEM, "out of memory");
    for (size_t p = 0; p < d; p++) {
        const synor_fabric_device *fd = synor_fabric_device_at(s->fab, p);
        if (fd->share_cpu_slowdown > 0)
            h->role[p] = 2;
        else if (synor_device_kind(fd->dev) == SYNOR_KIND_CPU)
            h->role[p] = 1;
    }
    for (size_t p = 0; p < d; p++) {
        size_t node = synor_fabric_device_at(s->fab, p)->node;
        for (size_t q = 0; h->role[p] == 2 && q < d; q++)
            h->node_cpus[p] += h->role[q] == 1 && synor_fabric_device_at(s->fab, q)->node == node;
    }
    return 0;
}

void synor__sim_share_teardown(sim *s)
{
    sim_share *h = s->share;
    if (!h)
        return;
    if (h->own_tver) {
        synor__free(s->tver);
        s->tver = NULL;
    }
    synor__free(h->node_cpus);
    synor__free(h->role);
    synor__free(h->rem);
    synor__free(h->rate);
    synor__free(h->t0);
    synor__free(h);
    s->share = NULL;
}

static int busy(const sim *s, size_t p) { return s->running[p] >= 0; }

/* Device p's speed now (1 = its cost-model time). */
static double speed(const sim *s, size_t p)
{
    const sim_share *h = s->share;
    const synor_fabric_device *fd = synor_fabric_device_at(s->fab, p);
    double slow = 1;
    if (h->role[p] == 1) {
        for (size_t q = 0; q < s->d; q++) {
            const synor_fabric_device *fq = synor_fabric_device_at(s->fab, q);
            if (h->role[q] == 2 && busy(s, q) && fq->node == fd->node)
                slow *= fq->share_cpu_slowdown;
        }
    } else if (h->role[p] == 2 && h->node_cpus[p]) {
        size_t b = 0;
        for (size_t q = 0; q < s->d; q++)
            b += h->role[q] == 1 && busy(s, q) &&
                 synor_fabric_device_at(s->fab, q)->node == fd->node;
        slow = 1 + (fd->share_slowdown - 1) * (double)b / (double)h->node_cpus[p];
    }
    return 1 / slow;
}

/* The running tasks' speeds again: a task whose speed changed (or that
 * has just started: rate 0) gets its end event anew. */
static void respeed(sim *s)
{
    sim_share *h = s->share;
    for (size_t p = 0; p < s->d; p++) {
        if (!busy(s, p))
            continue;
        size_t i = (size_t)s->running[p];
        double r = speed(s, p);
        if (r == h->rate[i])
            continue;
        if (h->rate[i] > 0) {
            h->rem[i] -= (s->now - h->t0[i]) * h->rate[i];
            if (h->rem[i] < 0)
                h->rem[i] = 0;
        }
        h->t0[i] = s->now;
        h->rate[i] = r;
        s->tver[i]++;
        synor__sim_push_end(s, s->now + h->rem[i] / r, i);
    }
}

void synor__sim_share_start(sim *s, size_t i, double work)
{
    sim_share *h = s->share;
    h->rem[i] = work;
    h->rate[i] = 0;
    h->t0[i] = s->now;
    respeed(s);
}

void synor__sim_share_changed(sim *s)
{
    if (s->share)
        respeed(s);
}
