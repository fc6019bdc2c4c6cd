/* agent_task.c - one claimed task on a device's loop: the owner's memory
 * share taken, the inputs downloaded (SHA-256 checked), the checkpoint of
 * a preempted run fetched, the kernel run (agent_exec.c) on the loop's
 * runtime; a failure reported, a preemption released (agent_preempt.c),
 * a result handed back to be uploaded (agent_batch.c), saved in the state
 * directory first when it took long to compute. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "agent/agent_int.h"

/* POST /v1/tasks/{task}/fail. Best effort: the lease expires anyway. */
static void report_fail(synor__agent_loop *L, const char *task, const char *lease,
                        const char *why)
{
    synor_agent *a = L->a;
    synor__buf path, body;
    synor__buf_init(&path);
    synor__buf_init(&body);
    synor__buf_puts(&path, "/v1/tasks/");
    synor__agent_url_escape(&path, task);
    synor__buf_puts(&path, "/fail?lease=");
    synor__agent_url_escape(&path, lease);
    synor__jw w;
    synor__jw_init(&w, &body, 0);
    synor__jw_obj_begin(&w);
    synor__jw_key(&w, "error");
    synor__jw_str(&w, why);
    synor__jw_obj_end(&w);
    char *ps = synor__buf_take(&path), *bs = synor__buf_take(&body);
    if (ps && bs) {
        synor_net_request rq = {.method = "POST", .path = ps, .body = bs, .body_len = strlen(bs),
                                .idempotent = 1};
        synor_net_response ans;
        if (synor_netclient_request(L->net, &rq, &ans) == 0)
            synor_net_response_free(&ans);
    }
    synor__free(ps);
    synor__free(bs);
    atomic_fetch_add(&a->s_failed, 1);
    synor__agent_logf(a, "task %s: failed: %s", task, why);
}


/* The owner's limits now: 1 if work may be taken. */
int synor__agent_within_limits(synor_agent *a)
{
    synor_host_state hs;
    if (a->cfg.availability.kind == SYNOR_AVAIL_ALWAYS)
        return 1;
    if (synor_host_state_read(&hs) != 0)
        return 1; /* unknown state: the schedule cannot be judged; the hours can */
    if (a->cfg.availability.kind == SYNOR_AVAIL_IDLE_ONLY)
        hs.host_idle = synor__agent_others_idle(a);
    return synor_availability_allows(&a->cfg.availability, &hs);
}

/* Downloads the inputs of task (its "inputs" member) into data/len. */
static int fetch_inputs(synor__agent_loop *L, const synor__jval *inputs, void **data,
                        size_t *len, size_t *n)
{
    synor_agent *a = L->a;
    *n = 0;
    if (!inputs)
        return 0;
    if (inputs->type != SYNOR__J_ARRAY || inputs->u.arr.n > 16)
        return synor__error(SYNOR_ESCHEMA, "task: inputs: expected an array of at most 16");
    uint64_t total = 0;
    for (size_t i = 0; i < inputs->u.arr.n; i++) {
        const synor__jval *it = inputs->u.arr.items[i], *sha = it, *by = NULL;
        if (it->type == SYNOR__J_OBJECT) {
            sha = synor__json_get(it, "sha256");
            by = synor__json_get(it, "bytes");
        }
        if (!sha || sha->type != SYNOR__J_STRING)
            return synor__error(SYNOR_ESCHEMA, "task: inputs[%zu]: no sha256", i);
        size_t want = SIZE_MAX;
        if (by && by->type == SYNOR__J_NUMBER && by->u.n.is_int && by->u.n.inum >= 0) {
            want = (size_t)by->u.n.inum;
            total += want;
            if (2 * total > a->mem_limit)
                return synor__error(SYNOR_ERANGE, "task: inputs of %llu bytes and more: beyond "
                                                  "the owner's memory share (%llu bytes)",
                                    (unsigned long long)total,
                                    (unsigned long long)a->mem_limit);
        }
        int r = synor_netclient_blob_get(L->net, sha->u.str.s, want, &data[i], &len[i]);
        if (r)
            return r;
        (*n)++;
    }
    return 0;
}

/* The bytes a task's inputs take, twice (the result and working copies):
 * what it holds of the owner's memory share while it runs. */
static uint64_t task_memory(const synor__jval *inputs)
{
    uint64_t total = 0;
    for (size_t i = 0; inputs && inputs->type == SYNOR__J_ARRAY && i < inputs->u.arr.n; i++) {
        const synor__jval *by = synor__json_get(inputs->u.arr.items[i], "bytes");
        if (by && by->type == SYNOR__J_NUMBER && by->u.n.is_int && by->u.n.inum > 0)
            total += (uint64_t)by->u.n.inum;
    }
    return 2 * total;
}

/* Takes need bytes of the memory share, waiting while the other devices'
 * tasks hold too much of it (a task alone may take it all; one larger is
 * refused by fetch_inputs). */
static void memory_take(synor_agent *a, uint64_t need)
{
    unsigned long long cur = atomic_load(&a->mem_used);
    while (!atomic_load(&a->stop)) {
        if (cur == 0 || cur + need <= a->mem_limit) {
            if (atomic_compare_exchange_weak(&a->mem_used, &cur, cur + need))
                return;
            continue;
        }
        synor__agent_nap(a, 0.05);
        cur = atomic_load(&a->mem_used);
    }
    atomic_fetch_add(&a->mem_used, need); /* a stop: the task runs to its end */
}

int synor__agent_run_task(synor__agent_loop *L, const synor__jdoc *d, const synor__jval *root,
                          const char *task, const char *lease, synor__agent_held *held,
                          int *have)
{
    synor_agent *a = L->a;
    unsigned dev = L->dev;
    *have = 0;
    const synor__jval *kv = synor__json_get(root, "kernel");
    const char *kernel = kv && kv->type == SYNOR__J_STRING ? kv->u.str.s : "";
    void *in[16] = {0};
    size_t len[16] = {0}, n = 0;
    synor__agent_logf(a, "task %s: %s for %s", task, kernel, a->cfg.devices[dev].name);
    uint64_t mem = task_memory(synor__json_get(root, "inputs"));
    memory_take(a, mem);
    int r = fetch_inputs(L, synor__json_get(root, "inputs"), in, len, &n);
    if (r == SYNOR_EIO) {
        for (size_t i = 0; i < n; i++)
            free(in[i]);
        atomic_fetch_sub(&a->mem_used, mem);
        return r; /* unreachable: the lease will lapse and the task go back */
    }
    void *out = NULL, *ckin = NULL;
    size_t out_len = 0, cklen = 0;
    if (!r)
        synor__agent_fetch_checkpoint(L, task, root, &ckin, &cklen);
    synor__agent_ckpt ck = {.in = ckin, .in_len = cklen, .stop = synor__agent_safe_point,
                            .user = L};
    double t0 = synor_netclient_now();
    char where[64] = "";
    if (!r)
        r = synor__agent_exec_run_ck(L->exec, &a->cfg.devices[dev], kernel, d,
                                     synor__json_get(root, "params"), n, (const void *const *)in,
                                     len, &out, &out_len, where, sizeof where, &ck);
    uint64_t ms = (uint64_t)((synor_netclient_now() - t0) * 1000 + 0.5);
    for (size_t i = 0; i < n; i++)
        free(in[i]);
    free(ckin);
    atomic_fetch_sub(&a->mem_used, mem); /* the result is out of the count */
    const char *unit = !strcmp(kernel, "sgemm")          ? "row strips"
                       : !strcmp(kernel, "spotrf")       ? "panels"
                       : !strcmp(kernel, "llm-generate") ? "tokens"
                                                         : "chunk groups";
    if (ck.ignored[0])
        synor__agent_logf(a, "task %s: checkpoint ignored (%s); started over", task, ck.ignored);
    if (ck.resumed) {
        atomic_fetch_add(&a->s_resumed, 1);
        synor__agent_logf(a, "task %s: resumed from a checkpoint: %u of %u %s were done", task,
                          ck.resumed, ck.total, unit);
    }
    if (r == SYNOR__AGENT_STOPPED) { /* preempted: give it back with its checkpoint */
        synor__agent_logf(a, "task %s: stopped at a safe point (%u of %u %s done) in %llu ms: %s",
                          task, ck.done, ck.total, unit, (unsigned long long)ms,
                          atomic_load(&a->reclaim) ? "the owner reclaims the machine"
                                                   : "outside the owner's limits");
        double wait = 0.5;
        for (int k = 0; k < 5 && (r = synor__agent_release(L, task, lease, ck.out,
                                                           ck.out_len)) == SYNOR_EIO;
             k++) {
            synor__agent_logf(a, "task %s: release: %s; retrying in %.1f s", task, synor_errmsg(),
                              wait);
            struct timespec ts = {(time_t)wait, (long)((wait - (double)(time_t)wait) * 1e9)};
            nanosleep(&ts, NULL); /* not nap: a reclaim is a stop */
            wait *= 2;
        }
        free(ck.out);
        return r == SYNOR_EIO ? 0 : r; /* no answer: the lease lapses */
    }
    if (r) {
        report_fail(L, task, lease, synor_errmsg());
        return 0;
    }
    if (a->cfg.fault == SYNOR_AGENT_FAULT_WRONG_RESULTS)
        synor__agent_corrupt(kernel, out, out_len);
    synor__agent_pending p;
    memset(&p, 0, sizeof p);
    synor__strlcpy(p.task, task, sizeof p.task);
    synor__strlcpy(p.lease, lease, sizeof p.lease);
    synor_netclient_sha256(out, out_len, p.sha256);
    p.elapsed_ms = ms;
    p.data = out;
    p.len = out_len;
    /* Kept before the upload when it cost more to compute than the two
     * synced files cost to write (a crash then loses nothing worth
     * keeping: the lease lapses and the task runs again); always kept when
     * the upload gets no answer (below). */
    int dying = a->cfg.fault == SYNOR_AGENT_FAULT_DIE_AFTER &&
                atomic_load(&a->done_here) >= a->cfg.fault_n;
    int saved = 0;
    if (a->state_dir && (ms >= SYNOR__AGENT_KEEP_MS || dying)) {
        if ((r = synor__agent_state_save_pending(a->state_dir, &p))) {
            free(out);
            report_fail(L, task, lease, synor_errmsg());
            return 0;
        }
        saved = 1;
    }
    if (dying) {
        synor__agent_logf(a, "task %s: --test-fault die-after %u: exiting with 137 before the "
                             "upload",
                          task, a->cfg.fault_n);
        _exit(137);
    }
    synor__agent_logf(a, "task %s: ran in %llu ms on %s, %zu bytes of result", task,
                      (unsigned long long)ms, where, out_len);
    atomic_fetch_add(&a->done_here, 1);
    held->p = p; /* uploaded by the caller (agent_batch.c), out with it */
    held->saved = saved;
    *have = 1;
    return 0;
}

