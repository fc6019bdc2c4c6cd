/* agent_int.h - what the files of src/agent/ share: the executor (the
 * runtime and the models, agent_exec.c) and the state directory
 * (agent_state.c). */
#ifndef SYNOR_AGENT_INT_H
#define SYNOR_AGENT_INT_H

#include <stddef.h>
#include <stdint.h>

#include <pthread.h>
#include <stdatomic.h>

#include "common/common.h"
#include "json/json.h"
#include "synor/agent.h"
#include "synor/netclient.h"

#define SYNOR__AGENT_MAGIC 0x6167656eu /* "agen" */
/* A result whose task ran at least this long (ms) is saved in the state
 * directory before its upload; quicker ones only when the upload fails. */
#define SYNOR__AGENT_KEEP_MS 100

/* A result (agent_state.c keeps them in the state directory). */
typedef struct synor__agent_pending {
    char task[128], lease[256], sha256[65];
    uint64_t elapsed_ms;
    void *data; /* malloc'd */
    size_t len;
} synor__agent_pending;

/* A task's checkpoint (preemption): where it resumes, how it is asked to
 * stop, and what stopping leaves. sgemm checkpoints its finished row blocks,
 * sum-f32 its running sum after whole groups of chunks; the other kernels
 * have no safe point before their end (they finish). */
typedef struct synor__agent_ckpt {
    const void *in;       /* a checkpoint to resume from, or NULL */
    size_t in_len;
    int (*stop)(void *user); /* asked at every safe point: nonzero stops there */
    void *user;
    void *out;            /* when stopped: the checkpoint (malloc'd) */
    size_t out_len;
    unsigned total, done, resumed; /* safe-point units: all, done, given by in */
    char ignored[160];    /* why in was not used ("" when it was, or none) */
} synor__agent_ckpt;
/* synor__agent_exec_run's answer when ck->stop stopped the task. */
#define SYNOR__AGENT_STOPPED 1

/* ---- agent_exec.c: tasks run on one runtime, created at first use ---- */
typedef struct synor__agent_exec synor__agent_exec;

/* ---- agent.c: the agent (its threads: see agent.c) ---- */
/* A device's claim loop: it claims for that device only, on a connection
 * and a runtime of its own, so the devices work at the same time. */
typedef struct synor__agent_loop {
    synor_agent *a;
    unsigned dev;
    synor_netclient *net;
    synor__agent_exec *exec;
    int limits_closed; /* its task was released because the limits closed */
    double limits_at;  /* when the limits were last judged in its task */
    pthread_t th;
    int rc;
} synor__agent_loop;

struct synor_agent {
    synor_agent_config cfg;
    char *url, *token, *cacert, *state_dir, *price;
    int lock_fd;
    char ids[SYNOR_AGENT_MAX_DEVICES][64]; /* written under ids_mu (re-registration) */
    pthread_mutex_t ids_mu;
    pthread_mutex_t reg_mu; /* one registration at a time (the loops') */
    synor_netclient *net;  /* the main thread's */
    synor__agent_exec *exec;
    unsigned workers;
    uint64_t mem_limit;    /* bytes a task's data may take (mem_share) */
    atomic_ullong mem_used; /* of mem_limit, by the tasks running now */
    atomic_int stop;
    atomic_int busy, accepting;
    atomic_int hb_period_ms;
    atomic_int batch;      /* the coordinator offers batches (heartbeat) */
    atomic_int reclaim;    /* the owner reclaims the machine: release, return */
    atomic_uint safe_points; /* of this run's tasks (the reclaim-after fault) */
    pthread_t hb;
    int hb_started;
    atomic_uint done_here;   /* tasks completed by this run (die-after) */
    atomic_ullong reserved;  /* tasks claimed or being claimed (max_tasks) */
    /* one claim loop per device; loop 0 runs on run's thread with net and
     * exec above, the others on threads of their own */
    synor__agent_loop loops[SYNOR_AGENT_MAX_DEVICES];
    /* stats, updated by both threads */
    atomic_ullong s_done, s_failed, s_rejected, s_reup, s_hb, s_hb_err, s_empty, s_notacc;
    atomic_ullong s_released, s_resumed;
};

/* An event line through the config's log callback. */
void synor__agent_logf(synor_agent *a, const char *fmt, ...) SYNOR__PRINTF(2, 3);
/* Percent-encodes s (RFC 3986 unreserved characters kept) into b. */
void synor__agent_url_escape(synor__buf *b, const char *s);

/* Sleeps s seconds in short steps; returns early on stop. */
void synor__agent_nap(synor_agent *a, double s);
/* Uploads one result (POST /v1/tasks/{task}/result). 0: answered
 * (acknowledged or refused for good; the result is done with), SYNOR_EIO:
 * no answer (keep it), other: fatal. */
int synor__agent_upload(synor__agent_loop *L, const synor__agent_pending *p, int *accepted);

/* A finished result not yet acknowledged; saved: it is in the state
 * directory (to be dropped once answered). */
typedef struct synor__agent_held {
    synor__agent_pending p;
    int saved;
} synor__agent_held;

/* ---- agent_task.c: one claimed task ---- */
/* The owner's limits now: 1 if work may be taken. */
int synor__agent_within_limits(synor_agent *a);
/* Runs the claimed task root (of the claim's document d) on L's device:
 * 0 with *have and *held (its result, to be uploaded) when it ran, 0
 * without when it failed (reported) or was preempted (released),
 * SYNOR_EIO when the coordinator cannot be reached. */
int synor__agent_run_task(synor__agent_loop *L, const synor__jdoc *d, const synor__jval *root,
                          const char *task, const char *lease, synor__agent_held *held,
                          int *have);

/* ---- agent_batch.c: results going up ---- */
/* Whether the n results held (the first finished at first) should go up
 * now: always without batches, else when the claim's last task is done
 * (last), when they reach 1 MiB or 64 results, when the first waited a
 * second, or when a task took a second (the next may too). */
int synor__agent_flush_due(synor_agent *a, const synor__agent_held *h, size_t n, double first,
                           int last);
/* Uploads the results held: one POST /v1/results for several when the
 * coordinator offers batches (each item acknowledged or refused on its
 * own), else one request each; no answer: saved in the state directory and
 * retried until answered or stopped. Frees their data. 0 or fatal. */
int synor__agent_upload_held(synor__agent_loop *L, synor__agent_held *h, size_t n);

/* ---- agent_preempt.c: preemption ---- */
/* The running task's safe-point question (synor__agent_ckpt.stop; user is
 * its loop): nonzero when the owner reclaimed the machine, the
 * reclaim-after fault fires, or the owner's limits closed (judged at most
 * once a second; an idle-only machine counts as in use when the CPU time
 * of other processes is above cfg.idle_threshold; sets limits_closed). */
int synor__agent_safe_point(void *user);
/* 1 when the processes other than this one used at most
 * cfg.idle_threshold of the machine's CPU time over about 100 ms (from
 * /proc/stat); 1 too when it cannot be told. */
int synor__agent_others_idle(const synor_agent *a);
/* POST /v1/tasks/{task}/release with the checkpoint (n bytes, may be 0).
 * 0: answered (released, or refused for good: the lease is gone anyway),
 * SYNOR_EIO: no answer. */
int synor__agent_release(synor__agent_loop *L, const char *task, const char *lease,
                         const void *ck, size_t n);
/* The checkpoint a claim carries (its "checkpoint" member), downloaded
 * and checked against its SHA-256 into *data (NULL when none, or when it
 * cannot be had: then the task starts over, and the line says why). */
void synor__agent_fetch_checkpoint(synor__agent_loop *L, const char *task,
                                   const synor__jval *claim, void **data, size_t *len);

/* workers: runtime CPU workers (0 = one per core). cfg gives the models
 * (may be NULL). Nothing is started yet. */
int synor__agent_exec_create(unsigned workers, const synor_agent_config *cfg,
                             synor__agent_exec **out);
void synor__agent_exec_destroy(synor__agent_exec *x);
/* Runs kernel with params (an object of d, or NULL for {}), on inputs, for
 * the registered device dev (NULL: the runtime places it): sgemm and
 * spotrf claimed for a CUDA GPU ("local-cudaN") run their tiles on that
 * GPU (the runtime's "cudaN"), on the host CPU otherwise. The result is
 * malloc'd into *out; where (where_n bytes, may be 0) names the runtime
 * device ("cuda0", "cpu"). Errors name the kernel and the field. */
int synor__agent_exec_run(synor__agent_exec *x, const synor_agent_device *dev, const char *kernel,
                          const synor__jdoc *d, const synor__jval *params, size_t n_inputs,
                          const void *const *inputs, const size_t *len, void **out,
                          size_t *out_len, char *where, size_t where_n);
/* The same with a checkpoint (ck may be NULL): resumes from ck->in when it
 * fits the task (else says why in ck->ignored and starts over); returns
 * SYNOR__AGENT_STOPPED with ck->out filled when ck->stop asked. The result
 * is bit for bit the one of an uninterrupted run. */
int synor__agent_exec_run_ck(synor__agent_exec *x, const synor_agent_device *dev,
                             const char *kernel, const synor__jdoc *d, const synor__jval *params,
                             size_t n_inputs, const void *const *inputs, const size_t *len,
                             void **out, size_t *out_len, char *where, size_t where_n,
                             synor__agent_ckpt *ck);
/* The wrong-results fault: changes out in place so that it no longer
 * agrees with the right answer within the quorum tolerance. */
void synor__agent_corrupt(const char *kernel, void *out, size_t len);

/* ---- agent_state.c: the state directory ---- */

/* Creates dir (0700) if missing and takes its lock (fd in *lock_fd). */
int synor__agent_state_open(const char *dir, int *lock_fd);
/* devices.json: the device names and their ids. */
int synor__agent_state_save_ids(const char *dir, const char *url, unsigned n,
                                const synor_agent_device *devs, char ids[][64]);
/* Fills ids[i] for the names found (others left as they are). */
int synor__agent_state_load_ids(const char *dir, unsigned n, const synor_agent_device *devs,
                                char ids[][64]);
/* A result not yet acknowledged: bytes first, then its description. */
int synor__agent_state_save_pending(const char *dir, const synor__agent_pending *p);
int synor__agent_state_drop_pending(const char *dir, const char *task);
/* Every pending result (checksums verified; bad ones are dropped). *out is
 * an array of *n (free with synor__agent_pending_free_all). */
int synor__agent_state_load_pending(const char *dir, synor__agent_pending **out, size_t *n);
void synor__agent_pending_free_all(synor__agent_pending *p, size_t n);

#endif
