/* release.c - preemption in the netstore: a provider whose owner reclaims
 * the machine gives a leased task back with a checkpoint of the work done
 * so far (synor_netstore_release). The task is queued again in the same
 * commit (no wait for the lease timeout), its attempt is not counted, the
 * device keeps its reputation and the releasing provider is paid nothing
 * (the ledger pays a task's provider when its result is validated, and the
 * task no longer names this one). The checkpoint is a blob; the task row
 * keeps its SHA-256 and the next claim hands it out with the task, whose
 * holder may then read it like an input.
 *
 * The checkpoint's checksum is checked here: bytes that do not hash to
 * what the provider said are not stored (an event says so) and the task
 * keeps the checkpoint it had before, if any; the release itself still
 * happens, since the provider has stopped working on it either way. */
#include <stdio.h>
#include <string.h>

#include "json/json.h"
#include "netstore/db.h"

int synor__ns_checkpoint_json(const nsres *r, size_t row, size_t col, char **out)
{
    *out = NULL;
    if (synor__nsres_null(r, row, col) || synor__nsres_null(r, row, col + 1))
        return 0; /* none, or its blob is gone: the task starts over */
    synor__buf b;
    synor__buf_init(&b);
    synor__buf_printf(&b, "{\"sha256\":\"%s\",\"bytes\":%lld}", synor__nsres_text(r, row, col),
                      (long long)synor__nsres_int(r, row, col + 1));
    *out = synor__buf_take(&b);
    return *out ? 0 : synor__error(SYNOR_ENOMEM, "netstore: out of memory");
}

typedef struct release_args {
    const char *owner;
    int64_t task;
    const char *lease;
    const void *data;
    size_t n;
    const char *sha; /* the bytes' SHA-256 when they match; NULL: none kept */
    const char *why; /* why a checkpoint given was not kept, or NULL */
} release_args;

static int release_tx(synor_netstore *s, void *arg)
{
    release_args *a = arg;
    int64_t shard, job, attempts;
    int e = synor__ns_check_lease(s, a->owner, a->task, a->lease, &shard, &job, &attempts);
    if (e)
        return e;
    static const char put[] = "INSERT INTO blobs (sha, bytes, data) VALUES ($1, $2, $3) "
                              "ON CONFLICT (sha) DO NOTHING";
    /* queued again at once; the claim's attempt is given back (a release
     * is not a failure), and the checkpoint replaces the old one if any */
    static const char back[] =
        "UPDATE tasks SET state = 'queued', lease = NULL, provider = NULL, device_id = NULL,"
        " attempts = CASE WHEN attempts > 0 THEN attempts - 1 ELSE 0 END,"
        " releases = releases + 1, checkpoint_sha = COALESCE($1, checkpoint_sha) WHERE id = $2";
    if (a->sha) {
        nsparam pb[] = {NS_T(a->sha), NS_I(a->n), NS_B(a->data, a->n)};
        if ((e = synor__ns_exec(s, put, pb, 3, NULL, NULL)))
            return e;
    }
    nsparam pt[] = {NS_T(a->sha), NS_I(a->task)}; /* NULL: the old one stays */
    if ((e = synor__ns_exec(s, back, pt, 2, NULL, NULL)))
        return e;
    char subj[32], det[400];
    snprintf(subj, sizeof subj, "t-%lld", (long long)a->task);
    if (a->why) {
        snprintf(det, sizeof det, "%s: %.300s", a->owner, a->why);
        if ((e = synor__ns_event(s, "checkpoint-ignored", subj, det)))
            return e;
    }
    if (a->sha)
        snprintf(det, sizeof det, "%s released it with a checkpoint of %zu bytes (%.64s)",
                 a->owner, a->n, a->sha);
    else
        snprintf(det, sizeof det, "%s released it without a checkpoint", a->owner);
    return synor__ns_event(s, "task-released", subj, det);
}

int synor_netstore_release(synor_netstore *s, const char *owner, int64_t task, const char *lease,
                           const void *ckpt, size_t n, const char *sha256, int *stored)
{
    char sha[65], why[200];
    release_args a = {owner, task, lease, ckpt, n, NULL, NULL};
    if (ckpt && n) {
        synor__ns_sha256_hex(ckpt, n, sha);
        if (sha256 && !strcmp(sha, sha256)) {
            a.sha = sha;
        } else {
            snprintf(why, sizeof why, "checkpoint of %zu bytes: SHA-256 %.64s, not the '%.64s' "
                                      "given; ignored",
                     n, sha, sha256 ? sha256 : "");
            a.why = why;
        }
    }
    int e = synor__ns_tx(s, release_tx, &a);
    if (stored)
        *stored = e >= 0 && a.sha;
    return e < 0 ? e : 0;
}
