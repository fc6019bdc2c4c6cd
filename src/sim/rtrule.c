/* rtrule.c - the dynamic strategy as the runtime itself places tasks
 * (synor_simulate_runtime; src/runtime/runtime.c "Where a worker looks
 * for work", src/runtime/task.c "Placement of a ready task").
 *
 * The fabric's devices that share a profile and a node are the workers
 * of one runtime device (synor_whatif_fabric_workers makes the local CPU
 * that way: one fabric device per worker). Each such group has a ready
 * queue ordered by (priority, readiness), and each of its devices a deque
 * of its own:
 *   - a task that becomes ready when a task of device p ends, at Normal
 *     priority, and runs on p goes onto p's deque (the runtime keeps it on
 *     the releasing worker: its inputs are hot there);
 *   - any other ready task goes to the ready queue of the group holding
 *     the device that runs it fastest (the first such group).
 * An idle device takes, in order: the group queue's head when it is above
 * Normal; the newest task of its own deque; the group queue's head; the
 * oldest task of the fullest deque of another device of its group
 * (stealing). Nothing moves between groups. The task taken goes through
 * the simulator's own per-device queue (sim.c), which waits for its
 * inputs; the time each task takes is the cost model's, as in the other
 * strategies. */
#include <math.h>
#include <string.h>

#include "common/common.h"
#include "sim/sim_internal.h"

typedef struct vec {
    size_t *v;
    size_t n, head, cap; /* live: v[head .. n) */
} vec;

struct sim_rt {
    size_t *group; /* device -> group */
    size_t ngroups;
    vec *gq;       /* per group: a heap over v[0 .. n) (head unused) */
    vec *dq;       /* per device: a deque (owner at the end, thieves at head) */
};

static int vec_push(vec *q, size_t x)
{
    if (q->n == q->cap) {
        if (q->head > 0) { /* reuse the stolen front */
            memmove(q->v, q->v + q->head, (q->n - q->head) * sizeof *q->v);
            q->n -= q->head;
            q->head = 0;
        } else {
            size_t cap = q->cap ? 2 * q->cap : 16;
            size_t *v = synor__realloc(q->v, cap * sizeof *v);
            if (!v)
                return synor__error(SYNOR_ENOMEM, "out of memory");
            q->v = v;
            q->cap = cap;
        }
    }
    q->v[q->n++] = x;
    return 0;
}

static int heap_push(sim *s, vec *h, size_t x)
{
    int e = vec_push(h, x);
    if (!e)
        synor__sim_heap_up(s, h->v, h->n - 1);
    return e;
}

static void heap_pop(sim *s, vec *h)
{
    h->v[0] = h->v[--h->n];
    synor__sim_heap_down(s, h->v, h->n);
}

static int runs_on(const sim *s, size_t i, size_t p)
{
    double t = synor_cost_time(s->c, i, p);
    return isfinite(t) && !(s->n_pre && s->leaving[p]);
}

int synor__sim_rt_setup(sim *s)
{
    sim_rt *r = synor__calloc(1, sizeof *r);
    if (!r)
        return synor__error(SYNOR_ENOMEM, "out of memory");
    s->rt = r;
    r->group = synor__malloc(s->d * sizeof *r->group);
    r->gq = synor__calloc(s->d, sizeof *r->gq);
    r->dq = synor__calloc(s->d, sizeof *r->dq);
    if (!r->group || !r->gq || !r->dq)
        return synor__error(SYNOR_ENOMEM, "out of memory");
    for (size_t p = 0; p < s->d; p++) {
        const synor_fabric_device *fp = synor_fabric_device_at(s->fab, p);
        r->group[p] = r->ngroups;
        for (size_t q = 0; q < p; q++) {
            const synor_fabric_device *fq = synor_fabric_device_at(s->fab, q);
            if (fq->profile == fp->profile && fq->node == fp->node) {
                r->group[p] = r->group[q];
                break;
            }
        }
        if (r->group[p] == r->ngroups)
            r->ngroups++;
    }
    return 0;
}

void synor__sim_rt_teardown(sim *s)
{
    sim_rt *r = s->rt;
    if (!r)
        return;
    for (size_t p = 0; p < s->d; p++) {
        if (r->gq)
            synor__free(r->gq[p].v);
        if (r->dq)
            synor__free(r->dq[p].v);
    }
    synor__free(r->group);
    synor__free(r->gq);
    synor__free(r->dq);
    synor__free(r);
    s->rt = NULL;
}

void synor__sim_rt_ready(sim *s, size_t i, size_t from)
{
    sim_rt *r = s->rt;
    const synor_task *t = synor_workload_task(s->w, i);
    s->ready_seq[i] = s->ready_counter++;
    if (from != SIZE_MAX && t->priority == SYNOR_PRIORITY_NORMAL && runs_on(s, i, from)) {
        if (vec_push(&r->dq[from], i))
            s->rc = SYNOR_ENOMEM;
        return;
    }
    size_t best = SIZE_MAX;
    double bt = INFINITY;
    for (size_t p = 0; p < s->d; p++) {
        double e = synor_cost_time(s->c, i, p);
        if (runs_on(s, i, p) && e < bt) {
            bt = e;
            best = p;
        }
    }
    if (best == SIZE_MAX) {
        s->rc = synor__error(SYNOR_ENODEV, "task \"%s\" fits no device of fabric \"%s\"", t->id,
                             synor_fabric_name(s->fab));
        return;
    }
    if (heap_push(s, &r->gq[r->group[best]], i))
        s->rc = SYNOR_ENOMEM;
}

/* The task device p takes next by the runtime's rules, or SIZE_MAX. */
static size_t pick(sim *s, size_t p)
{
    sim_rt *r = s->rt;
    vec *g = &r->gq[r->group[p]], *own = &r->dq[p];
    if (g->n && synor_workload_task(s->w, g->v[0])->priority < SYNOR_PRIORITY_NORMAL &&
        runs_on(s, g->v[0], p)) {
        size_t i = g->v[0];
        heap_pop(s, g);
        return i;
    }
    if (own->n > own->head)
        return own->v[--own->n];
    if (g->n && runs_on(s, g->v[0], p)) {
        size_t i = g->v[0];
        heap_pop(s, g);
        return i;
    }
    size_t victim = SIZE_MAX, most = 0;
    for (size_t q = 0; q < s->d; q++) {
        size_t k = r->dq[q].n - r->dq[q].head;
        if (q != p && r->group[q] == r->group[p] && k > most) {
            most = k;
            victim = q;
        }
    }
    if (victim != SIZE_MAX && runs_on(s, r->dq[victim].v[r->dq[victim].head], p))
        return r->dq[victim].v[r->dq[victim].head++];
    return SIZE_MAX;
}

int synor__sim_rt_take(sim *s, size_t p)
{
    if (s->qn[p] > s->qhead[p]) /* a task taken before still waits for its inputs */
        return 0;
    size_t i = pick(s, p);
    if (i == SIZE_MAX)
        return 0;
    s->dev[i] = (long)p;
    synor__sim_rt_queue(s, p, i);
    return 1;
}
