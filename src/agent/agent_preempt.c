/* agent_preempt.c - preemption (docs/AGENT.md, "Preemption"): when the
 * owner takes the machine back, the task running stops at its next safe
 * point and is given back to the coordinator with a checkpoint of the work
 * done (POST /v1/tasks/{task}/release); the next claimant gets the
 * checkpoint with the task and resumes from it.
 *
 * What takes the machine back: synor_agent_reclaim (SIGUSR1 or `synor
 * agent --reclaim` in the CLI), the reclaim-after test fault, and the
 * owner's limits closing while a task runs (the hours are over, an
 * idle-only machine is being used). The limits are judged at safe points,
 * at most once a second, and before each claim; "idle" counts the CPU
 * time of the other processes only (the machine's busy time from
 * /proc/stat less this process's), since the agent's own work keeps the
 * machine busy, against the owner's threshold (--idle-threshold). */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "agent/agent_int.h"

/* Busy and total CPU ticks of the machine (/proc/stat's first line). */
static int proc_stat(unsigned long long *busy, unsigned long long *total)
{
    FILE *f = fopen("/proc/stat", "r");
    if (!f)
        return -1;
    unsigned long long v[10] = {0};
    int n = fscanf(f, "cpu %llu %llu %llu %llu %llu %llu %llu %llu %llu %llu", &v[0], &v[1],
                   &v[2], &v[3], &v[4], &v[5], &v[6], &v[7], &v[8], &v[9]);
    fclose(f);
    if (n < 4)
        return -1;
    *total = 0;
    for (int i = 0; i < 8; i++) /* guest time is inside user time already */
        *total += v[i];
    *busy = *total - v[3] - v[4]; /* less idle and iowait */
    return 0;
}

/* This process's CPU time in clock ticks. */
static double self_ticks(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    double s = (double)ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6 +
               (double)ru.ru_stime.tv_sec + ru.ru_stime.tv_usec / 1e6;
    return s * (double)sysconf(_SC_CLK_TCK);
}

int synor__agent_others_idle(const synor_agent *a)
{
    unsigned long long b0, t0, b1, t1;
    double s0 = self_ticks();
    if (proc_stat(&b0, &t0))
        return 1;
    struct timespec ts = {0, 100 * 1000 * 1000};
    nanosleep(&ts, NULL);
    double s1 = self_ticks();
    if (proc_stat(&b1, &t1) || t1 <= t0)
        return 1;
    double others = (double)(b1 - b0) - (s1 - s0);
    return others <= a->cfg.idle_threshold * (double)(t1 - t0);
}

/* The owner's limits during a task: 1 while they allow it to go on. */
static int limits_allow(synor_agent *a)
{
    if (a->cfg.availability.kind == SYNOR_AVAIL_ALWAYS)
        return 1;
    synor_host_state hs;
    if (synor_host_state_read(&hs) != 0)
        return 1;
    if (a->cfg.availability.kind == SYNOR_AVAIL_IDLE_ONLY)
        hs.host_idle = synor__agent_others_idle(a);
    return synor_availability_allows(&a->cfg.availability, &hs);
}

int synor__agent_safe_point(void *user)
{
    synor__agent_loop *L = user;
    synor_agent *a = L->a;
    if (atomic_load(&a->reclaim))
        return 1;
    if ((a->cfg.fault == SYNOR_AGENT_FAULT_RECLAIM_AFTER ||
         a->cfg.fault == SYNOR_AGENT_FAULT_RECLAIM_BAD_CHECKPOINT) &&
        atomic_fetch_add(&a->safe_points, 1) + 1 >= a->cfg.fault_n) {
        synor__agent_logf(a, "--test-fault reclaim-after %u: the owner reclaims the machine",
                          a->cfg.fault_n);
        synor_agent_reclaim(a);
        return 1;
    }
    int paused = 0;
    if (a->cfg.fault == SYNOR_AGENT_FAULT_PAUSE_AT &&
        atomic_fetch_add(&a->safe_points, 1) + 1 == a->cfg.fault_n) {
        synor__agent_logf(a, "--test-fault pause-at %u: stopping at a safe point (SIGSTOP)",
                          a->cfg.fault_n);
        raise(SIGSTOP);
        paused = 1;
    }
    double now = synor_netclient_now();
    if (!paused && now - L->limits_at < 1.0)
        return 0;
    L->limits_at = now;
    if (limits_allow(a))
        return 0;
    L->limits_closed = 1;
    return 1;
}

int synor__agent_release(synor__agent_loop *L, const char *task, const char *lease,
                         const void *ck, size_t n)
{
    synor_agent *a = L->a;
    synor__buf path;
    synor__buf_init(&path);
    synor__buf_puts(&path, "/v1/tasks/");
    synor__agent_url_escape(&path, task);
    synor__buf_puts(&path, "/release?lease=");
    synor__agent_url_escape(&path, lease);
    char *ps = synor__buf_take(&path);
    if (!ps)
        return synor__error(SYNOR_ENOMEM, "agent: out of memory");
    char h1[100] = "", sha[65];
    if (n) {
        synor_netclient_sha256(ck, n, sha);
        if (a->cfg.fault == SYNOR_AGENT_FAULT_RECLAIM_BAD_CHECKPOINT)
            sha[0] = sha[0] == '0' ? '1' : '0'; /* a checksum the bytes do not have */
        snprintf(h1, sizeof h1, "X-Synor-SHA256: %s", sha);
    }
    const char *hdrs[] = {h1, NULL};
    synor_net_request rq = {.method = "POST", .path = ps, .body = ck, .body_len = n,
                            .content_type = "application/octet-stream",
                            .headers = n ? hdrs : NULL, .idempotent = 1};
    synor_net_response ans;
    int r = synor_netclient_request(L->net, &rq, &ans);
    synor__free(ps);
    if (r)
        return r;
    atomic_fetch_add(&a->s_released, 1);
    if (ans.status == 200) {
        const char *what = "?";
        synor__jdoc *d = NULL;
        if (synor__json_parse(ans.body ? ans.body : "", ans.len, "release", &d) == 0) {
            synor__jval *c = synor__json_get(synor__jdoc_root(d), "checkpoint");
            if (c && c->type == SYNOR__J_STRING)
                what = c->u.str.s;
        }
        synor__agent_logf(a, "task %s: released (checkpoint of %zu bytes: %s)", task, n, what);
        synor__jdoc_free(d);
    } else {
        synor_net_response_check(&ans, "release");
        synor__agent_logf(a, "task %s: release refused (%s); its lease will lapse", task,
                          synor_errmsg());
    }
    synor_net_response_free(&ans);
    return 0;
}

void synor__agent_fetch_checkpoint(synor__agent_loop *L, const char *task,
                                   const synor__jval *claim, void **data, size_t *len)
{
    synor_agent *a = L->a;
    *data = NULL;
    *len = 0;
    const synor__jval *c = synor__json_get(claim, "checkpoint");
    if (!c)
        return;
    const synor__jval *sha = c->type == SYNOR__J_OBJECT ? synor__json_get(c, "sha256") : NULL;
    const synor__jval *by = c->type == SYNOR__J_OBJECT ? synor__json_get(c, "bytes") : NULL;
    if (!sha || sha->type != SYNOR__J_STRING || !by || by->type != SYNOR__J_NUMBER ||
        !by->u.n.is_int || by->u.n.inum < 0) {
        synor__agent_logf(a, "task %s: checkpoint ignored (no sha256 and bytes); starting over",
                          task);
        return;
    }
    if (synor_netclient_blob_get(L->net, sha->u.str.s, (size_t)by->u.n.inum, data, len)) {
        synor__agent_logf(a, "task %s: checkpoint ignored (%s); starting over", task,
                          synor_errmsg());
        free(*data);
        *data = NULL;
        *len = 0;
    }
}
