/* weights.c - where weights are while a plan is built (plan_internal.h).
 *
 * A weight (an item of the problem) is held by its home from the start and
 * by every device it has been copied to, from the end of that copy. A copy
 * onto device p goes through p's copy engine, one at a time, and comes from
 * the holder (or storage) that delivers it first: it starts when the
 * engine is free and the source has the weight, and lasts latency + bytes
 * x seconds-per-byte of the path (storage: bytes / storage bandwidth).
 * Every holder keeps the bytes for the whole run. The times are kept in
 * both modes: in load mode they delay the tasks, in preload mode they are
 * the setup clock (how long it takes to put the weights in place before
 * the run). Copies are logged so that a branch and bound undoes them by
 * truncating the log. */
#include <math.h>
#include <string.h>

#include "common/common.h"
#include "plan/plan_internal.h"

int synor__ws_init(synor__wstate *ws, const synor_sched_problem *pb, int timed, int single)
{
    memset(ws, 0, sizeof *ws);
    ws->pb = pb;
    ws->d = pb->n_devices;
    ws->k = pb->n_items;
    ws->timed = timed;
    ws->single = single;
    size_t d = ws->d, k = ws->k;
    ws->ready = synor__malloc((d && k ? d * k : 1) * sizeof *ws->ready);
    ws->held = synor__calloc(d ? d : 1, sizeof *ws->held);
    ws->chan = synor__calloc(d ? d : 1, sizeof *ws->chan);
    ws->holders = synor__calloc(k ? k : 1, sizeof *ws->holders);
    ws->maxtm = synor__calloc(d ? d : 1, sizeof *ws->maxtm);
    if (!ws->ready || !ws->held || !ws->chan || !ws->holders || !ws->maxtm) {
        synor__ws_free(ws);
        return synor__error(SYNOR_ENOMEM, "out of memory");
    }
    for (size_t i = 0; i < d * k; i++)
        ws->ready[i] = INFINITY;
    for (size_t j = 0; j < k; j++) {
        size_t h = pb->item_home ? pb->item_home[j] : SYNOR_HOME_STORAGE;
        if (h == SYNOR_HOME_STORAGE)
            continue;
        if (h >= d) {
            synor__ws_free(ws);
            return synor__error(SYNOR_EINVAL, "item %zu: home device %zu of %zu", j, h, d);
        }
        ws->ready[h * k + j] = 0;
        ws->held[h] += pb->item_bytes[j];
    }
    return 0;
}

void synor__ws_free(synor__wstate *ws)
{
    synor__free(ws->ready);
    synor__free(ws->held);
    synor__free(ws->chan);
    synor__free(ws->holders);
    synor__free(ws->maxtm);
    synor__free(ws->commits);
    synor__free(ws->log);
    synor__free(ws->log_chan);
    memset(ws, 0, sizeof *ws);
}

static double storage_bw(const synor_sched_problem *pb)
{
    return pb->storage_bw > 0 ? pb->storage_bw : SYNOR_STORAGE_BW_DEFAULT;
}

/* The best copy of item j onto p with the engine free at `chan`: the
 * finish time, the source and the start. */
static double copy_best(const synor__wstate *ws, size_t j, size_t p, double chan, size_t *src,
                        double *start)
{
    const synor_sched_problem *pb = ws->pb;
    double bytes = pb->item_bytes[j], best = INFINITY;
    *src = SYNOR_HOME_STORAGE;
    *start = chan;
    for (size_t q = 0; q < ws->d; q++) {
        double r = ws->ready[q * ws->k + j];
        if (q == p || !isfinite(r))
            continue;
        double s = r > chan ? r : chan, f = s + synor__comm(pb, bytes, q, p);
        if (f < best) {
            best = f;
            *src = q;
            *start = s;
        }
    }
    size_t home = pb->item_home ? pb->item_home[j] : SYNOR_HOME_STORAGE;
    if (home == SYNOR_HOME_STORAGE) {
        double f = chan + bytes / storage_bw(pb);
        if (f < best) {
            best = f;
            *src = SYNOR_HOME_STORAGE;
            *start = chan;
        }
    }
    return best;
}

int synor__ws_probe(const synor__wstate *ws, size_t i, size_t p, double *ready,
                    synor__nofit *nf)
{
    const synor_sched_problem *pb = ws->pb;
    double add = 0, r = 0, chan = ws->chan[p], big = -1;
    size_t big_item = SIZE_MAX;
    for (size_t u = pb->use_off ? pb->use_off[i] : 0; pb->use_off && u < pb->use_off[i + 1];
         u++) {
        size_t j = pb->use[u];
        double rj = ws->ready[p * ws->k + j];
        if (isfinite(rj)) {
            if (rj > r)
                r = rj;
            continue;
        }
        if (ws->single && ws->holders[j] > 0) {
            if (nf)
                *nf = (synor__nofit){i, p, j, 0, 0};
            return 0;
        }
        size_t src;
        double st, f = copy_best(ws, j, p, chan, &src, &st);
        chan = f;
        if (f > r)
            r = f;
        add += pb->item_bytes[j];
        if (pb->item_bytes[j] > big) {
            big = pb->item_bytes[j];
            big_item = j;
        }
    }
    /* weights stay for the whole run: they share the device with the
     * largest working memory of any task placed there */
    double tm = pb->task_mem ? pb->task_mem[i] : 0;
    tm = tm > ws->maxtm[p] ? tm : ws->maxtm[p];
    if (pb->mem && ws->held[p] + add + tm > pb->mem[p]) {
        if (nf)
            *nf = (synor__nofit){i, p, big_item, ws->held[p] + add + tm, pb->mem[p]};
        return 0;
    }
    *ready = ws->timed ? r : 0;
    return 1;
}

int synor__ws_commit(synor__wstate *ws, size_t i, size_t p)
{
    const synor_sched_problem *pb = ws->pb;
    if (ws->n_commits == ws->cap_commits) {
        size_t cap = ws->cap_commits ? ws->cap_commits * 2 : 64;
        struct synor__wcommit *c = synor__realloc(ws->commits, cap * sizeof *c);
        if (!c)
            return synor__error(SYNOR_ENOMEM, "out of memory");
        ws->commits = c;
        ws->cap_commits = cap;
    }
    ws->commits[ws->n_commits++] = (struct synor__wcommit){p, ws->n_log, ws->maxtm[p]};
    double tm = pb->task_mem ? pb->task_mem[i] : 0;
    if (tm > ws->maxtm[p])
        ws->maxtm[p] = tm;
    for (size_t u = pb->use_off ? pb->use_off[i] : 0; pb->use_off && u < pb->use_off[i + 1];
         u++) {
        size_t j = pb->use[u];
        if (isfinite(ws->ready[p * ws->k + j]))
            continue;
        if (ws->n_log == ws->cap_log) {
            size_t cap = ws->cap_log ? ws->cap_log * 2 : 64;
            synor_plan_load *l = synor__realloc(ws->log, cap * sizeof *l);
            if (!l)
                return synor__error(SYNOR_ENOMEM, "out of memory");
            ws->log = l;
            double *c = synor__realloc(ws->log_chan, cap * sizeof *c);
            if (!c)
                return synor__error(SYNOR_ENOMEM, "out of memory");
            ws->log_chan = c;
            ws->cap_log = cap;
        }
        size_t src;
        double st, f = copy_best(ws, j, p, ws->chan[p], &src, &st);
        ws->log[ws->n_log] = (synor_plan_load){j, p, src, st, f};
        ws->log_chan[ws->n_log++] = ws->chan[p];
        ws->chan[p] = f;
        ws->ready[p * ws->k + j] = f;
        ws->held[p] += pb->item_bytes[j];
        ws->holders[j]++;
    }
    return 0;
}

static void undo_copies(synor__wstate *ws, size_t mark)
{
    while (ws->n_log > mark) {
        const synor_plan_load *l = &ws->log[--ws->n_log];
        ws->ready[l->dev * ws->k + l->item] = INFINITY;
        ws->held[l->dev] -= ws->pb->item_bytes[l->item];
        ws->holders[l->item]--;
        ws->chan[l->dev] = ws->log_chan[ws->n_log];
    }
}

void synor__ws_undo(synor__wstate *ws, size_t mark)
{
    while (ws->n_commits > mark) {
        const struct synor__wcommit *c = &ws->commits[--ws->n_commits];
        undo_copies(ws, c->log_mark);
        ws->maxtm[c->dev] = c->maxtm;
    }
}

double synor__ws_setup(const synor__wstate *ws)
{
    double s = 0;
    for (size_t k = 0; k < ws->n_log; k++)
        if (ws->log[k].finish > s)
            s = ws->log[k].finish;
    return s;
}
