/* route.c - the router: its snapshot's lifecycle, and a decision two ways,
 * by the index (synor_router_route) and by scanning every device
 * (synor_router_route_scan), which must agree exactly.
 *
 * The index decides in three steps (docs/ROUTER.md "Index"):
 *  1. per class, then per leaf, the filters and the counts filtered out
 *     per reason, with whole groups counted at once; the reputation floor
 *     is a binary search in the leaf. What passes are leaf prefixes, and
 *     the normalisation ranges over them;
 *  2. each candidate leaf's bound: its score with its best reputation and
 *     least utilization (score.c says why no device in it can beat it);
 *  3. leaves by bound, best first, each device scored into a top-K, until
 *     the K-th best beats the next leaf's bound.
 * Ties (equal totals) go to the device registered first (the lower index
 * in the snapshot, which is registration order), on both paths.
 *
 * Consistency: decisions read one immutable snapshot under a read lock; a
 * refresh builds the next snapshot without the lock and takes the write
 * lock only to swap the pointer. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "router/router_internal.h"

struct synor_router {
    synor_registry *reg;
    synor_router_config cfg;
    pthread_rwlock_t lock;      /* guards snap */
    pthread_mutex_t refreshing; /* one refresh at a time */
    synor__rsnap *snap;
    uint64_t generation;
};

int synor_router_create(synor_registry *reg, const synor_router_config *cfg, synor_router **out)
{
    if (!reg || !out)
        return synor__error(SYNOR_EINVAL, "synor_router_create: NULL argument");
    synor_router *r = synor__calloc(1, sizeof *r);
    if (!r)
        return synor__error(SYNOR_ENOMEM, "out of memory");
    r->reg = reg;
    if (cfg)
        r->cfg = *cfg;
    if (!r->cfg.price) {
        r->cfg.price = synor_route_table_price_fn;
        /* the built-in provider only reads the table */
        union {
            const synor_route_table *c;
            void *v;
        } u = {r->cfg.table};
        r->cfg.price_user = u.v;
    }
    pthread_rwlock_init(&r->lock, NULL);
    pthread_mutex_init(&r->refreshing, NULL);
    int rc = synor_router_refresh(r);
    if (rc) {
        synor_router_destroy(r);
        return rc;
    }
    *out = r;
    return 0;
}

void synor_router_destroy(synor_router *r)
{
    if (!r)
        return;
    synor__rsnap_free(r->snap);
    pthread_rwlock_destroy(&r->lock);
    pthread_mutex_destroy(&r->refreshing);
    synor__free(r);
}

int synor_router_refresh(synor_router *r)
{
    if (!r)
        return synor__error(SYNOR_EINVAL, "synor_router_refresh: NULL router");
    pthread_mutex_lock(&r->refreshing);
    synor__rsnap *s;
    int rc = synor__rsnap_build(r->reg, r->cfg.table, r->cfg.price, r->cfg.price_user,
                                r->generation + 1, &s);
    if (!rc) {
        pthread_rwlock_wrlock(&r->lock);
        synor__rsnap *old = r->snap;
        r->snap = s;
        r->generation++;
        pthread_rwlock_unlock(&r->lock);
        synor__rsnap_free(old);
    }
    pthread_mutex_unlock(&r->refreshing);
    return rc;
}

size_t synor_router_device_count(synor_router *r)
{
    if (!r)
        return 0;
    pthread_rwlock_rdlock(&r->lock);
    size_t n = r->snap->n;
    pthread_rwlock_unlock(&r->lock);
    return n;
}

uint64_t synor_router_generation(synor_router *r)
{
    if (!r)
        return 0;
    pthread_rwlock_rdlock(&r->lock);
    uint64_t g = r->snap->generation;
    pthread_rwlock_unlock(&r->lock);
    return g;
}

/* ---- the top K (of distinct keys, with a spread) ---- */

typedef struct cand {
    double total;
    uint32_t idx, key;
    int priced;
    int64_t cost;
    double lat_ms, time_s;
    double fixed[3];
} cand;

typedef struct topk {
    cand *c;
    size_t n, k;
    int distinct;
} topk;

static int better(const cand *a, const cand *b)
{
    return a->total > b->total || (a->total == b->total && a->idx < b->idx);
}

/* Keeps the K best of the best device per key (every device its own key
 * without a spread). */
static void topk_offer(topk *t, const cand *x)
{
    size_t at = t->n;
    if (t->distinct) {
        for (size_t i = 0; i < t->n; i++)
            if (t->c[i].key == x->key) {
                at = i;
                break;
            }
        if (at < t->n) {
            if (!better(x, &t->c[at]))
                return;
            /* x replaces its key's device and can only move up */
            while (at > 0 && better(x, &t->c[at - 1])) {
                t->c[at] = t->c[at - 1];
                at--;
            }
            t->c[at] = *x;
            return;
        }
    }
    if (t->n == t->k) {
        if (!better(x, &t->c[t->k - 1]))
            return;
        at = t->k - 1;
    } else {
        at = t->n++;
    }
    while (at > 0 && better(x, &t->c[at - 1])) {
        t->c[at] = t->c[at - 1];
        at--;
    }
    t->c[at] = *x;
}

static uint32_t spread_key(const synor__rsnap *s, const synor_route_request *q, uint32_t idx)
{
    if (q->spread == SYNOR_ROUTE_SPREAD_OWNER)
        return s->devs[idx].owner;
    if (q->spread == SYNOR_ROUTE_SPREAD_REGION)
        return s->devs[idx].region;
    return idx;
}

static void fill_choice(const synor__rsnap *s, const cand *c, synor_route_choice *o)
{
    const synor__rdev *d = &s->devs[c->idx];
    memset(o, 0, sizeof *o);
    memcpy(o->id, s->ids[c->idx], sizeof o->id);
    const char *prof = synor_device_profile_id(d->dev);
    synor__strlcpy(o->profile, prof ? prof : "", sizeof o->profile);
    synor__strlcpy(o->owner, s->owners[d->owner], sizeof o->owner);
    synor__strlcpy(o->region, s->regions[d->region].name, sizeof o->region);
    o->priced = c->priced;
    o->usd_micro_per_hour = c->priced ? d->price : 0;
    o->task_usd_micro = c->priced ? c->cost : 0;
    synor__strlcpy(o->price_source, c->priced ? s->sources[d->source] : "no price",
                   sizeof o->price_source);
    o->latency_known = c->lat_ms >= 0;
    o->latency_ms = c->lat_ms >= 0 ? c->lat_ms : 0;
    o->time_s = c->time_s;
    o->reputation = d->reputation;
    o->utilization = d->utilization;
    for (int i = 0; i < 3; i++)
        o->score[i] = c->fixed[i];
    o->score[SYNOR_ROUTE_REPUTATION] = d->reputation / 100.0;
    o->score[SYNOR_ROUTE_LOAD] = 1 - d->utilization;
    o->total = c->total;
}

/* The decision from the top K and the counts. */
static int finish(const synor__rsnap *s, const synor_route_request *q, const topk *t,
                  const synor__rnorm *nm, synor_route_decision *base, synor_route_decision **out)
{
    synor_route_decision *d = synor__calloc(1, sizeof *d);
    synor_route_choice *ch = synor__calloc(t->n + 1, sizeof *ch);
    if (!d || !ch) {
        synor__free(d);
        synor__free(ch);
        return synor__error(SYNOR_ENOMEM, "out of memory");
    }
    *d = *base;
    d->wanted = q->n_devices;
    d->considered = s->n;
    d->weights = q->weights;
    d->generation = s->generation;
    d->cost_min = nm->any_priced ? nm->cost_min : 0;
    d->cost_max = nm->any_priced ? nm->cost_max : 0;
    d->latency_min = nm->any_located ? nm->lat_min : 0;
    d->latency_max = nm->any_located ? nm->lat_max : 0;
    d->time_min = d->candidates ? nm->time_min : 0;
    d->time_max = d->candidates ? nm->time_max : 0;
    for (size_t i = 0; i < t->n; i++)
        fill_choice(s, &t->c[i], &ch[i]);
    d->n_chosen = t->n < q->n_devices ? t->n : q->n_devices;
    d->chosen = ch;
    d->n_runners_up = t->n - d->n_chosen;
    d->runners_up = d->n_runners_up ? ch + d->n_chosen : NULL;
    *out = d;
    return 0;
}

void synor_route_decision_free(synor_route_decision *d)
{
    if (!d)
        return;
    synor__free(d->chosen);
    synor__free(d);
}

/* ---- the index ---- */

typedef struct cleaf {
    uint32_t leaf;
    size_t k; /* devices above the reputation floor */
    int64_t cost;
    double lat_ms, time_s;
    double fixed[3];
    double bound;
} cleaf;

static int by_bound(const void *pa, const void *pb)
{
    const cleaf *a = pa, *b = pb;
    if (a->bound != b->bound)
        return a->bound > b->bound ? -1 : 1;
    return a->leaf < b->leaf ? -1 : a->leaf > b->leaf;
}

/* Devices of a leaf at or above the floor (reputations descending). */
static size_t above_floor(const synor__rleaf *l, int floor)
{
    size_t lo = 0, hi = l->n_online;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (l->rep[mid] >= floor)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

static int decide_index(const synor__rctx *c, synor_route_decision **out)
{
    const synor__rsnap *s = c->s;
    const synor_route_request *q = c->req;
    synor_route_decision base;
    memset(&base, 0, sizeof base);
    synor__rnorm nm;
    synor__rnorm_init(&nm);
    cleaf *cl = synor__malloc((s->n_leaves + 1) * sizeof *cl);
    topk t = {synor__malloc((q->n_devices + q->n_runners_up) * sizeof(cand)), 0,
              q->n_devices + q->n_runners_up, q->spread != SYNOR_ROUTE_SPREAD_NONE};
    if (!cl || !t.c) {
        synor__free(cl);
        synor__free(t.c);
        return synor__error(SYNOR_ENOMEM, "out of memory");
    }
    size_t n_cl = 0;
    for (size_t ci = 0; ci < s->n_classes; ci++) {
        const synor__rclass *k = &s->classes[ci];
        double time_s;
        if (!synor__route_capable(c, s->devs[k->rep].dev, &time_s)) {
            base.filtered[SYNOR_ROUTE_OUT_CAPABILITY] += k->n;
            continue;
        }
        if (!c->region_ok[k->region]) {
            base.filtered[SYNOR_ROUTE_OUT_REGION] += k->n;
            continue;
        }
        double lat = c->region_lat_ms[k->region];
        if (q->max_latency_ms > 0 && (lat < 0 || lat > q->max_latency_ms)) {
            base.filtered[SYNOR_ROUTE_OUT_LATENCY] += k->n;
            continue;
        }
        for (uint32_t li = k->first_leaf; li < k->first_leaf + k->n_leaves; li++) {
            const synor__rleaf *l = &s->leaves[li];
            base.filtered[SYNOR_ROUTE_OUT_STATUS] += l->n_bad_status;
            if (!c->sig_ok[l->sig]) {
                base.filtered[SYNOR_ROUTE_OUT_AVAILABILITY] += l->n_online;
                continue;
            }
            size_t m = above_floor(l, q->min_reputation);
            base.filtered[SYNOR_ROUTE_OUT_REPUTATION] += l->n_online - m;
            if (!m)
                continue;
            int64_t cost = l->priced ? synor__route_task_cost(l->price, time_s) : 0;
            if (q->budget_usd_micro > 0 && (!l->priced || cost > q->budget_usd_micro)) {
                base.filtered[SYNOR_ROUTE_OUT_BUDGET] += m;
                continue;
            }
            cl[n_cl++] = (cleaf){li, m, cost, lat, time_s, {0, 0, 0}, 0};
            base.candidates += m;
            synor__rnorm_add(&nm, l->priced, cost, lat, time_s);
        }
    }
    for (size_t i = 0; i < n_cl; i++) {
        const synor__rleaf *l = &s->leaves[cl[i].leaf];
        synor__route_fixed_scores(&nm, l->priced, cl[i].cost, cl[i].lat_ms, cl[i].time_s,
                                  cl[i].fixed);
        cl[i].bound =
            synor__route_total(&q->weights, cl[i].fixed, l->rep[0], l->min_util[cl[i].k - 1]);
    }
    qsort(cl, n_cl, sizeof *cl, by_bound);
    for (size_t i = 0; i < n_cl; i++) {
        if (t.n == t.k && cl[i].bound < t.c[t.k - 1].total)
            break;
        const synor__rleaf *l = &s->leaves[cl[i].leaf];
        double least_util = l->min_util[cl[i].k - 1];
        size_t j = 0;
        while (j < cl[i].k) {
            /* the devices from j on have reputation <= rep[j] and
             * utilization >= least_util: none beats this bound */
            int rep = l->rep[j];
            if (t.n == t.k &&
                synor__route_total(&q->weights, cl[i].fixed, rep, least_util) < t.c[t.k - 1].total)
                break;
            /* one reputation: utilization ascending, so scores never
             * rise; equal scores may come in any index order (a weight
             * of 0 on load), so only a lower score ends the run */
            for (; j < cl[i].k && l->rep[j] == rep; j++) {
                uint32_t idx = l->dev[j];
                cand x = {
                    synor__route_total(&q->weights, cl[i].fixed, rep, s->devs[idx].utilization),
                    idx,
                    spread_key(s, q, idx),
                    l->priced,
                    cl[i].cost,
                    cl[i].lat_ms,
                    cl[i].time_s,
                    {cl[i].fixed[0], cl[i].fixed[1], cl[i].fixed[2]}};
                base.scored++;
                if (t.n == t.k && x.total < t.c[t.k - 1].total) {
                    while (j < cl[i].k && l->rep[j] == rep)
                        j++;
                    break;
                }
                topk_offer(&t, &x);
            }
        }
    }
    int rc = finish(s, q, &t, &nm, &base, out);
    synor__free(cl);
    synor__free(t.c);
    return rc;
}

/* ---- the scan: every device on its own ---- */

static int decide_scan(const synor__rctx *c, synor_route_decision **out)
{
    const synor__rsnap *s = c->s;
    const synor_route_request *q = c->req;
    synor_route_decision base;
    memset(&base, 0, sizeof base);
    synor__rnorm nm;
    synor__rnorm_init(&nm);
    cand *all = synor__malloc((s->n + 1) * sizeof *all);
    topk t = {synor__malloc((q->n_devices + q->n_runners_up) * sizeof(cand)), 0,
              q->n_devices + q->n_runners_up, q->spread != SYNOR_ROUTE_SPREAD_NONE};
    if (!all || !t.c) {
        synor__free(all);
        synor__free(t.c);
        return synor__error(SYNOR_ENOMEM, "out of memory");
    }
    size_t n = 0;
    for (size_t i = 0; i < s->n; i++) {
        const synor__rdev *d = &s->devs[i];
        double time_s, lat = c->region_lat_ms[d->region];
        int reason = -1;
        if (!synor__route_capable(c, d->dev, &time_s))
            reason = SYNOR_ROUTE_OUT_CAPABILITY;
        else if (!c->region_ok[d->region])
            reason = SYNOR_ROUTE_OUT_REGION;
        else if (q->max_latency_ms > 0 && (lat < 0 || lat > q->max_latency_ms))
            reason = SYNOR_ROUTE_OUT_LATENCY;
        else if (d->status != SYNOR_STATUS_ONLINE)
            reason = SYNOR_ROUTE_OUT_STATUS;
        else if (q->available_in && !synor_availability_allows(&s->sigs[d->sig], q->available_in))
            reason = SYNOR_ROUTE_OUT_AVAILABILITY;
        else if (d->reputation < q->min_reputation)
            reason = SYNOR_ROUTE_OUT_REPUTATION;
        int64_t cost = 0;
        if (reason < 0) {
            cost = d->priced ? synor__route_task_cost(d->price, time_s) : 0;
            if (q->budget_usd_micro > 0 && (!d->priced || cost > q->budget_usd_micro))
                reason = SYNOR_ROUTE_OUT_BUDGET;
        }
        if (reason >= 0) {
            base.filtered[reason]++;
            continue;
        }
        all[n++] = (cand){0,      (uint32_t)i, spread_key(s, q, (uint32_t)i), d->priced, cost, lat,
                          time_s, {0, 0, 0}};
        synor__rnorm_add(&nm, d->priced, cost, lat, time_s);
    }
    base.candidates = n;
    for (size_t i = 0; i < n; i++) {
        const synor__rdev *d = &s->devs[all[i].idx];
        synor__route_fixed_scores(&nm, all[i].priced, all[i].cost, all[i].lat_ms, all[i].time_s,
                                  all[i].fixed);
        all[i].total = synor__route_total(&q->weights, all[i].fixed, d->reputation, d->utilization);
        topk_offer(&t, &all[i]);
    }
    base.scored = n;
    int rc = finish(s, q, &t, &nm, &base, out);
    synor__free(all);
    synor__free(t.c);
    return rc;
}

static int route(synor_router *r, const synor_route_request *req, synor_route_decision **out,
                 int scan)
{
    if (!r || !req || !out)
        return synor__error(SYNOR_EINVAL, "synor_router_route: NULL argument");
    pthread_rwlock_rdlock(&r->lock);
    synor__rctx c;
    int rc = synor__rctx_init(&c, r->snap, req);
    if (!rc) {
        rc = scan ? decide_scan(&c, out) : decide_index(&c, out);
        synor__rctx_free(&c);
    }
    pthread_rwlock_unlock(&r->lock);
    return rc;
}

int synor_router_route(synor_router *r, const synor_route_request *req, synor_route_decision **out)
{
    return route(r, req, out, 0);
}

int synor_router_route_scan(synor_router *r, const synor_route_request *req,
                            synor_route_decision **out)
{
    return route(r, req, out, 1);
}
