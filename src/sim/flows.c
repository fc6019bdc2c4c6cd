/* flows.c - the simulator's transfers (sim.c's events EV_HOP_READY and
 * EV_FLOW_DONE): a datum moved to a memory space hop by hop along the
 * fabric's path, each hop after its link's latency, the flows on a link
 * direction sharing its bandwidth equally by virtual time (sim.c's header
 * says how). */
#include <string.h>

#include "common/common.h"
#include "sim/sim_internal.h"


/* Equal shares by virtual time: the channel's v grows at bw / n per
 * second, so a flow that joins at v0 with b bytes is done when v reaches
 * v0 + b. One completion event per channel, for the flow with the least
 * tag; a change of the flow set supersedes it (channel version). */
static void chan_advance(sim *s, channel *c)
{
    if (c->n)
        c->v += (s->now - c->vlast) * c->bw / (double)c->n;
    c->vlast = s->now;
}

static int flow_before(const sim *s, size_t a, size_t b)
{
    double ta = s->flows[a].tag, tb = s->flows[b].tag;
    return ta < tb || (ta == tb && a < b);
}

static void chan_push(sim *s, channel *c, size_t fi)
{
    size_t k = c->n++;
    c->f[k] = fi;
    while (k && flow_before(s, c->f[k], c->f[(k - 1) / 2])) {
        size_t p = (k - 1) / 2, t = c->f[p];
        c->f[p] = c->f[k];
        c->f[k] = t;
        k = p;
    }
}

static size_t chan_pop(sim *s, channel *c)
{
    size_t top = c->f[0];
    c->f[0] = c->f[--c->n];
    for (size_t k = 0;;) {
        size_t l = 2 * k + 1, b = k;
        if (l < c->n && flow_before(s, c->f[l], c->f[b]))
            b = l;
        if (l + 1 < c->n && flow_before(s, c->f[l + 1], c->f[b]))
            b = l + 1;
        if (b == k)
            break;
        size_t t = c->f[k];
        c->f[k] = c->f[b];
        c->f[b] = t;
        k = b;
    }
    return top;
}

static void chan_reshare(sim *s, size_t ci)
{
    channel *c = &s->ch[ci];
    c->ver++;
    if (!c->n)
        return;
    double left = s->flows[c->f[0]].tag - c->v;
    synor__sim_push_ver(s, s->now + (left > 0 ? left : 0) * (double)c->n / c->bw, EV_FLOW_DONE,
                        ci, c->ver);
}

static void hop_begin(sim *s, size_t fi)
{
    flow *f = &s->flows[fi];
    const synor_link *l = synor_fabric_link(s->fab, f->path.hops[f->hop]);
    f->hop_start = s->now;
    synor__sim_push_ver(s, s->now + l->latency, EV_HOP_READY, fi, 0);
}

void synor__sim_request(sim *s, size_t data, size_t to_dev)
{
    const synor_data *dd = synor_workload_data(s->w, data);
    size_t dst = synor__sim_space_of(s, to_dev);
    if (dd->producer < 0 || !dd->bytes || s->loc[data * s->S + dst] != LOC_ABSENT ||
        !s->finished[dd->producer])
        return;
    size_t from = (size_t)s->dev[dd->producer];
    s->loc[data * s->S + dst] = LOC_MOVING;
    if (s->n_flows == s->flow_cap) {
        size_t cap = s->flow_cap ? s->flow_cap * 2 : 256;
        flow *p = synor__realloc(s->flows, cap * sizeof *p);
        if (!p) {
            s->rc = synor__error(SYNOR_ENOMEM, "out of memory");
            return;
        }
        s->flows = p;
        s->flow_cap = cap;
    }
    flow *f = &s->flows[s->n_flows];
    memset(f, 0, sizeof *f);
    f->data = data;
    f->dst_space = dst;
    f->from_dev = from;
    f->to_dev = to_dev;
    f->path = synor_fabric_path(s->fab, from, to_dev);
    hop_begin(s, s->n_flows++);
}

void synor__sim_hop_ready(sim *s, size_t fi)
{
    flow *f = &s->flows[fi];
    size_t li = f->path.hops[f->hop];
    const synor_link *l = synor_fabric_link(s->fab, li);
    /* direction: a->b uses channel 2li, b->a channel 2li+1; a hop leaves the
     * space it is in, which is the link's a side when the path goes a->b */
    size_t here = f->hop == 0 ? synor__sim_space_of(s, f->from_dev) : 0;
    if (f->hop > 0) {
        const synor_link *prev = synor_fabric_link(s->fab, f->path.hops[f->hop - 1]);
        /* the space shared by the previous hop and this one */
        here = (prev->a == l->a || prev->b == l->a) ? l->a : l->b;
    }
    f->channel = 2 * li + (here == l->a ? 0 : 1);
    channel *c = &s->ch[f->channel];
    chan_advance(s, c);
    f->tag = c->v + (double)synor_workload_data(s->w, f->data)->bytes;
    if (c->n == c->cap) {
        size_t cap = c->cap ? c->cap * 2 : 4;
        size_t *p = synor__realloc(c->f, cap * sizeof *p);
        if (!p) {
            s->rc = synor__error(SYNOR_ENOMEM, "out of memory");
            return;
        }
        c->f = p;
        c->cap = cap;
    }
    chan_push(s, c, fi);
    chan_reshare(s, f->channel);
}

void synor__sim_flow_done(sim *s, size_t ci, uint64_t ver)
{
    channel *c = &s->ch[ci];
    if (ver != c->ver || !c->n)
        return; /* superseded by a change of the channel's flows */
    chan_advance(s, c);
    size_t fi = chan_pop(s, c);
    flow *f = &s->flows[fi];
    chan_reshare(s, ci);
    synor_trace_transfer *x = synor__trace_add_transfer(s->tr);
    if (!x) {
        s->rc = synor__error(SYNOR_ENOMEM, "out of memory");
        return;
    }
    x->data = synor_workload_data(s->w, f->data)->name; /* re-pointed to trace strings at the end */
    x->link = synor_fabric_link(s->fab, f->path.hops[f->hop])->name;
    x->from_dev = f->from_dev;
    x->to_dev = f->to_dev;
    x->bytes = synor_workload_data(s->w, f->data)->bytes;
    x->start = f->hop_start;
    x->end = s->now;
    if (++f->hop < f->path.n_hops) {
        hop_begin(s, fi);
        return;
    }
    /* try_start may start transfers and move s->flows: no f from here on */
    size_t dst = f->dst_space;
    s->loc[f->data * s->S + dst] = LOC_PRESENT;
    for (size_t p = 0; p < s->d; p++)
        if (synor__sim_space_of(s, p) == dst)
            synor__sim_try_start(s, p);
}
