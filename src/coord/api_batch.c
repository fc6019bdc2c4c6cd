/* api_batch.c - POST /v1/results: a provider reports several tasks'
 * results in one request (docs/NETWORK.md, "Batches").
 *
 * The body is one line of compact JSON, a newline, then the results' bytes
 * back to back in the order the line lists them:
 *
 *   {"results":[{"task":"t-5","lease":"L..","sha256":"..","bytes":8,
 *                "elapsed_ms":3}, ...]}\n<8 bytes of t-5><bytes of the next>...
 *
 * A malformed batch (bad JSON, a missing or mistyped field, byte counts
 * that do not add up to what follows the line) is refused whole with a 400
 * and changes nothing. A well-formed batch is answered 200 with one entry
 * per item; each item is checked and applied on its own (checksum, lease),
 * so one refused item changes nothing and leaves the others applied. The
 * answer comes after the commit that holds every applied item. */
#include <stdio.h>
#include <string.h>

#include "coord/api.h"

static int status_of(int code)
{
    switch (code) {
    case SYNOR_ENOENT: return 404;
    case SYNOR_ESTATE:
    case SYNOR_EEXIST: return 409;
    case SYNOR_EINVAL:
    case SYNOR_ESCHEMA:
    case SYNOR_EPARSE:
    case SYNOR_ERANGE: return 400;
    case SYNOR_EBUSY: return 503;
    default: return 500;
    }
}

/* Fills items[i] from the line's i-th entry; -1 with *err (400). */
static int item_of(const synor__jdoc *d, const synor__jval *v, size_t i,
                   synor_net_result_item *it, int64_t *bytes, coord_resp *err)
{
    static const char *const keys[] = {"task", "lease", "sha256", "bytes", "elapsed_ms", NULL};
    if (v->type != SYNOR__J_OBJECT) {
        *err = synor__coord_err(400, "field 'results[%zu]': expected an object", i);
        return -1;
    }
    if (synor__coord_check_keys(d, v, keys, err))
        return -1;
    const char *task = NULL;
    if (synor__coord_str(v, "task", 1, 32, &task, err) ||
        synor__coord_str(v, "lease", 1, 64, &it->lease, err) ||
        synor__coord_str(v, "sha256", 1, 64, &it->sha256, err))
        return -1;
    if (synor__coord_parse_id(task, "t-", &it->task)) {
        *err = synor__coord_err(400, "field 'results[%zu].task': value '%s': expected \"t-N\"", i,
                                task);
        return -1;
    }
    const synor__jval *b = synor__json_get(v, "bytes"), *ms = synor__json_get(v, "elapsed_ms");
    if (!b || b->type != SYNOR__J_NUMBER || !b->u.n.is_int || b->u.n.inum < 0) {
        *err = synor__coord_err(400, "field 'results[%zu].bytes': expected a byte count", i);
        return -1;
    }
    if (ms && (ms->type != SYNOR__J_NUMBER || !ms->u.n.is_int || ms->u.n.inum < 0)) {
        *err = synor__coord_err(400, "field 'results[%zu].elapsed_ms': expected milliseconds", i);
        return -1;
    }
    *bytes = b->u.n.inum;
    it->elapsed_ms = ms ? ms->u.n.inum : 0;
    return 0;
}

coord_resp synor__coord_results(coord_req *r)
{
    const char *nl = r->len ? memchr(r->body, '\n', r->len) : NULL;
    if (!nl)
        return synor__coord_err(400, "the body must start with a line of JSON ending in a newline");
    size_t head = (size_t)(nl - r->body);
    synor__jdoc *d;
    if (synor__json_parse(r->body, head, "body", &d))
        return synor__coord_err(400, "%s", synor_errmsg());
    const synor__jval *o = synor__jdoc_root(d), *arr = synor__json_get(o, "results");
    static const char *const keys[] = {"results", NULL};
    coord_resp err;
    if (o->type != SYNOR__J_OBJECT) {
        synor__jdoc_free(d);
        return synor__coord_err(400, "the body's first line must be a JSON object");
    }
    if (synor__coord_check_keys(d, o, keys, &err)) {
        synor__jdoc_free(d);
        return err;
    }
    if (!arr || arr->type != SYNOR__J_ARRAY || !arr->u.arr.n ||
        arr->u.arr.n > SYNOR_NET_RESULTS_MAX) {
        synor__jdoc_free(d);
        return synor__coord_err(400, "field 'results': expected an array of 1 to %d items",
                                SYNOR_NET_RESULTS_MAX);
    }
    size_t n = arr->u.arr.n;
    synor_net_result_item *it = synor__calloc(n, sizeof *it);
    if (!it) {
        synor__jdoc_free(d);
        return synor__coord_err(500, "out of memory");
    }
    const char *data = nl + 1;
    size_t left = r->len - head - 1;
    for (size_t i = 0; i < n; i++) {
        int64_t bytes;
        if (item_of(d, arr->u.arr.items[i], i, &it[i], &bytes, &err)) {
            synor__free(it);
            synor__jdoc_free(d);
            return err;
        }
        if ((uint64_t)bytes > left) {
            synor__free(it);
            synor__jdoc_free(d);
            return synor__coord_err(400, "field 'results[%zu].bytes': %lld bytes, only %zu follow",
                                    i, (long long)bytes, left);
        }
        it[i].data = data;
        it[i].n = (size_t)bytes;
        data += bytes;
        left -= (size_t)bytes;
    }
    if (left) {
        synor__free(it);
        synor__jdoc_free(d);
        return synor__coord_err(400, "the body has %zu bytes past the results it lists", left);
    }
    int e = synor_netstore_results(r->c->store, r->who.owner, it, n);
    if (e) {
        synor__free(it);
        synor__jdoc_free(d);
        return synor__coord_store_err(e);
    }
    synor__buf b;
    synor__buf_init(&b);
    synor__buf_puts(&b, "{\"results\":[");
    int rejected = 0;
    for (size_t i = 0; i < n; i++) {
        synor__buf_printf(&b, "%s{\"task\":\"t-%lld\",", i ? "," : "", (long long)it[i].task);
        if (it[i].rc) {
            synor__buf_printf(&b, "\"accepted\":false,\"status\":%d,\"error\":",
                              status_of(it[i].rc));
            synor__json_escape(&b, it[i].error);
            synor__buf_puts(&b, "}");
        } else {
            synor__buf_printf(&b, "\"accepted\":true,\"state\":\"%s\"}",
                              synor_net_verdict_name(it[i].verdict));
            rejected |= it[i].verdict == SYNOR_NET_REJECTED;
        }
    }
    synor__buf_puts(&b, "]}\n");
    if (!r->c->o.quiet || rejected) {
        char f[96];
        snprintf(f, sizeof f, "\"items\":%zu,\"rejected\":%s", n, rejected ? "true" : "false");
        synor__coord_log(r->c, "results", f);
    }
    synor__free(it);
    synor__jdoc_free(d);
    return synor__coord_json(200, synor__buf_take(&b));
}
