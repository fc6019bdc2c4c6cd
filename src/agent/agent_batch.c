/* agent_batch.c - results going up: one request per result
 * (POST /v1/tasks/{task}/result), or several in one (POST /v1/results,
 * docs/NETWORK.md "Batches") when the coordinator offers batches and the
 * agent claimed several tasks (--claim-max). A batch's answer acknowledges
 * or refuses each result on its own, so each is counted, logged and
 * dropped from the state directory as if it went alone; a batch with no
 * answer is kept (saved in the state directory) and sent again, and a
 * coordinator that refuses the batch whole (404, 400: an older one) gets
 * the results one by one. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent/agent_int.h"

#define BATCH_BYTES ((size_t)1 << 20)
#define BATCH_ITEMS 64

static int batching(synor_agent *a)
{
    return a->cfg.claim_max > 1 && atomic_load(&a->batch);
}

int synor__agent_flush_due(synor_agent *a, const synor__agent_held *h, size_t n, double first,
                           int last)
{
    if (!batching(a) || last || n >= BATCH_ITEMS || h[n - 1].p.elapsed_ms >= 1000 ||
        synor_netclient_now() - first >= 1.0)
        return 1;
    size_t bytes = 0;
    for (size_t i = 0; i < n; i++)
        bytes += h[i].p.len;
    return bytes >= BATCH_BYTES;
}

/* Saves the results not yet in the state directory (no answer came). */
static void keep(synor_agent *a, synor__agent_held *h, size_t n)
{
    for (size_t i = 0; a->state_dir && i < n; i++)
        if (!h[i].saved)
            h[i].saved = synor__agent_state_save_pending(a->state_dir, &h[i].p) == 0;
}

/* An answered result: counted, and out of the state directory. */
static void answered(synor_agent *a, synor__agent_held *h, int accepted)
{
    atomic_fetch_add(accepted ? &a->s_done : &a->s_rejected, 1);
    if (h->saved)
        synor__agent_state_drop_pending(a->state_dir, h->p.task);
    h->saved = 0;
}

static int upload_one(synor__agent_loop *L, synor__agent_held *h)
{
    synor_agent *a = L->a;
    int acc = 0, r;
    double wait = 0.5;
    while ((r = synor__agent_upload(L, &h->p, &acc)) == SYNOR_EIO) {
        /* No answer: kept (in the state directory too); a stop leaves it
         * there for the next start. */
        keep(a, h, 1);
        if (atomic_load(&a->stop))
            break;
        synor__agent_logf(a, "task %s: upload: %s; retrying in %.1f s", h->p.task,
                          synor_errmsg(), wait);
        synor__agent_nap(a, wait);
        wait = wait * 2 > 5 ? 5 : wait * 2;
    }
    if (r)
        return r == SYNOR_EIO ? 0 : r;
    answered(a, h, acc);
    return 0;
}

/* The body of POST /v1/results: the line, a newline, the bytes. */
static char *batch_body(const synor__agent_held *h, size_t n, size_t *len)
{
    synor__buf b;
    synor__buf_init(&b);
    synor__jw w;
    synor__jw_init(&w, &b, 0);
    synor__jw_obj_begin(&w);
    synor__jw_key(&w, "results");
    synor__jw_arr_begin(&w);
    for (size_t i = 0; i < n; i++) {
        synor__jw_obj_begin(&w);
        synor__jw_key(&w, "task");
        synor__jw_str(&w, h[i].p.task);
        synor__jw_key(&w, "lease");
        synor__jw_str(&w, h[i].p.lease);
        synor__jw_key(&w, "sha256");
        synor__jw_str(&w, h[i].p.sha256);
        synor__jw_key(&w, "bytes");
        synor__jw_uint(&w, h[i].p.len);
        synor__jw_key(&w, "elapsed_ms");
        synor__jw_uint(&w, h[i].p.elapsed_ms);
        synor__jw_obj_end(&w);
    }
    synor__jw_arr_end(&w);
    synor__jw_obj_end(&w);
    synor__buf_append(&b, "\n", 1);
    for (size_t i = 0; i < n; i++)
        synor__buf_append(&b, h[i].p.data, h[i].p.len);
    *len = b.len;
    return synor__buf_take(&b);
}

/* Reads a batch's answer: each item counted and logged. -1 when the answer
 * does not say what became of every item. */
static int read_answer(synor_agent *a, synor__agent_held *h, size_t n,
                       const synor_net_response *ans)
{
    synor__jdoc *d = NULL;
    if (synor__json_parse(ans->body ? ans->body : "", ans->len, "POST /v1/results", &d))
        return -1;
    const synor__jval *arr = synor__json_get(synor__jdoc_root(d), "results");
    if (!arr || arr->type != SYNOR__J_ARRAY || arr->u.arr.n != n) {
        synor__jdoc_free(d);
        return -1;
    }
    for (size_t i = 0; i < n; i++) {
        const synor__jval *it = arr->u.arr.items[i];
        const synor__jval *acc = synor__json_get(it, "accepted");
        const synor__jval *st = synor__json_get(it, "state");
        const synor__jval *er = synor__json_get(it, "error");
        int ok = acc && acc->type == SYNOR__J_BOOL && acc->u.boolean;
        if (ok)
            synor__agent_logf(a, "task %s: result accepted (%s, in a batch of %zu)", h[i].p.task,
                              st && st->type == SYNOR__J_STRING ? st->u.str.s : "?", n);
        else
            synor__agent_logf(a, "task %s: result refused: %s", h[i].p.task,
                              er && er->type == SYNOR__J_STRING ? er->u.str.s : "?");
        answered(a, &h[i], ok);
    }
    synor__jdoc_free(d);
    return 0;
}

static int upload_batch(synor__agent_loop *L, synor__agent_held *h, size_t n)
{
    synor_agent *a = L->a;
    size_t len = 0;
    char *body = batch_body(h, n, &len);
    if (!body)
        return synor__error(SYNOR_ENOMEM, "agent: out of memory");
    synor_net_request rq = {.method = "POST", .path = "/v1/results", .body = body,
                            .body_len = len, .content_type = "application/octet-stream",
                            .idempotent = 1};
    synor_net_response ans;
    int r;
    double wait = 0.5;
    while ((r = synor_netclient_request(L->net, &rq, &ans)) == SYNOR_EIO) {
        keep(a, h, n);
        if (atomic_load(&a->stop))
            break;
        synor__agent_logf(a, "results of %zu tasks: upload: %s; retrying in %.1f s", n,
                          synor_errmsg(), wait);
        synor__agent_nap(a, wait);
        wait = wait * 2 > 5 ? 5 : wait * 2;
    }
    synor__free(body);
    if (r)
        return r == SYNOR_EIO ? 0 : r; /* a stop: kept for the next start */
    if (ans.status == 401 || ans.status == 403) {
        r = synor_net_response_check(&ans, "POST /v1/results");
        synor_net_response_free(&ans);
        return r;
    }
    int done = ans.status == 200 && read_answer(a, h, n, &ans) == 0;
    if (!done) {
        synor_net_response_check(&ans, "POST /v1/results");
        synor__agent_logf(a, "results of %zu tasks: the batch was not taken (%s); one by one", n,
                          synor_errmsg());
    }
    synor_net_response_free(&ans);
    for (size_t i = 0; !done && i < n && !r; i++)
        r = upload_one(L, &h[i]);
    return r;
}

int synor__agent_upload_held(synor__agent_loop *L, synor__agent_held *h, size_t n)
{
    int r = 0;
    if (n > 1 && batching(L->a))
        r = upload_batch(L, h, n);
    else
        for (size_t i = 0; i < n && !r; i++)
            r = upload_one(L, &h[i]);
    for (size_t i = 0; i < n; i++) {
        free(h[i].p.data);
        h[i].p.data = NULL;
    }
    return r;
}
