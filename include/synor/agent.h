/* synor/agent.h - the provider agent of the compute network (`synor
 * agent`, docs/AGENT.md): it registers this machine's devices with a
 * coordinator, heartbeats, takes tasks (long poll), downloads their inputs
 * (SHA-256 checked), runs them with the runtime and uploads the results
 * with their checksums, within its owner's limits.
 *
 *   synor_agent_config_init(&cfg); ...url, token, devices, limits...
 *   synor_agent_create(&cfg, &a);
 *   synor_agent_run(a);           until synor_agent_stop (any thread or a
 *                                 signal handler) or cfg.max_tasks
 *   synor_agent_destroy(a);
 *
 * Owner limits, checked at run time: the availability schedule before every
 * claim (outside it the agent heartbeats with accepting:false and takes
 * nothing; "idle" counts the machine busy while its CPU is used, the agent's
 * own work excepted since it checks between tasks), the CPU share (runtime
 * workers = share x cores, at least 1) and the memory share (a task whose
 * data exceed share x physical memory fails without running).
 *
 * Failures: the coordinator unreachable - heartbeats go on failing and
 * retrying, claims back off (up to 5 s) and resume when it answers. The
 * agent's own restart - with a state directory, the devices' ids and every
 * result not yet acknowledged are kept there (each file written to a
 * temporary name, synced and renamed); the next start uploads those results
 * again before taking work. Stop - the task running is finished and its
 * result uploaded, then run returns. */
#ifndef SYNOR_AGENT_H
#define SYNOR_AGENT_H

#include <stddef.h>
#include <stdint.h>

#include "synor/netclient.h"
#include "synor/registry.h"

#ifdef __cplusplus
extern "C" {
#endif

#define SYNOR_AGENT_MAX_DEVICES 16
#define SYNOR_AGENT_MAX_MODELS 8
#define SYNOR_AGENT_CLAIM_MAX 256 /* tasks per claim (the protocol's limit) */

/* One device as it is registered (POST /v1/devices). */
typedef struct synor_agent_device {
    char name[64];      /* unique per provider: "host-cpu0" */
    char kind[16];      /* "cpu", "gpu", ... (synor_kind_name) */
    char profile[64];   /* catalog profile id, or "" */
    double gflops;      /* fp32 peak */
    uint64_t mem_bytes; /* memory offered (the memory share already applied) */
} synor_agent_device;

/* Testing switches (docs/AGENT.md: for tests only, never in production). */
typedef enum synor_agent_fault {
    SYNOR_AGENT_FAULT_NONE = 0,
    /* Every result is corrupted before upload (a cheating provider): f32
     * outputs become 1.5x + 1, f64 + 1, token ids + 1. Its checksum is that
     * of the corrupted bytes. */
    SYNOR_AGENT_FAULT_WRONG_RESULTS,
    /* After fault_n tasks completed, the next one is run and its result
     * stored in the state directory, then the process exits with status
     * 137 (as if killed) before uploading it. */
    SYNOR_AGENT_FAULT_DIE_AFTER,
    /* At the fault_n-th safe point of a task (a finished sgemm row block,
     * sum-f32 chunk group, spotrf panel group or llm-generate segment), the
     * agent reclaims itself as on
     * synor_agent_reclaim: a deterministic preemption. */
    SYNOR_AGENT_FAULT_RECLAIM_AFTER,
    /* As RECLAIM_AFTER, and the checkpoint is sent with a wrong SHA-256
     * (the coordinator must ignore it). */
    SYNOR_AGENT_FAULT_RECLAIM_BAD_CHECKPOINT,
    /* At the fault_n-th safe point the process stops itself (SIGSTOP, after
     * a log line); once continued (SIGCONT) that safe point judges the
     * owner's limits at once: a test changes the machine's state in
     * between (tests/cli/net_idle.sh) without racing the task. */
    SYNOR_AGENT_FAULT_PAUSE_AT
} synor_agent_fault;

typedef void (*synor_agent_log_fn)(void *user, const char *line);

typedef struct synor_agent_config {
    unsigned magic;                 /* set by synor_agent_config_init */
    synor_netclient_config net;     /* coordinator URL, token, TLS, timeouts */
    const char *state_dir;          /* NULL: nothing kept across restarts */
    synor_availability availability; /* default always */
    double cpu_share;               /* (0, 1]; default 1 */
    double mem_share;               /* (0, 1]; default 1 */
    double idle_threshold;          /* availability idle: the machine is in
                                       use while other processes take more
                                       than this share of all its CPU time
                                       (over 100 ms); (0, 1]; default 0.10 */
    unsigned n_devices;             /* at least 1 */
    synor_agent_device devices[SYNOR_AGENT_MAX_DEVICES];
    unsigned n_models;              /* llm-generate's models: name -> file */
    struct {
        const char *name, *path;
    } models[SYNOR_AGENT_MAX_MODELS];
    const char *price;              /* credits per hour ("0.010000"), or NULL */
    double wait_s;                  /* long poll per claim; default 20 */
    double idle_poll_s;             /* recheck of the owner's limits when not
                                       accepting; default 5 */
    double heartbeat_s;             /* until the coordinator says; default 5 */
    unsigned max_tasks;             /* run returns after this many; 0 = never */
    unsigned claim_max;             /* tasks per claim when the coordinator
                                       offers batches, up to
                                       SYNOR_AGENT_CLAIM_MAX; 0 or 1: one */
    synor_agent_fault fault;
    unsigned fault_n;
    synor_agent_log_fn log;         /* one line per event; NULL: silent */
    void *log_user;
} synor_agent_config;

void synor_agent_config_init(synor_agent_config *cfg);

typedef struct synor_agent synor_agent;

/* Checks the config (SYNOR_EINVAL naming the field) and takes the state
 * directory (created 0700 if missing; SYNOR_EBUSY when another agent holds
 * it). Nothing is sent yet. */
int synor_agent_create(const synor_agent_config *cfg, synor_agent **out);
/* Registers, heartbeats and works until stopped or max_tasks: 0. A refused
 * token (401/403) or a configuration the coordinator rejects (400) ends it
 * with SYNOR_EINVAL; the coordinator unreachable never ends it. */
int synor_agent_run(synor_agent *a);
/* Asks run to return after the task in progress. Async-signal-safe. */
void synor_agent_stop(synor_agent *a);
/* The owner reclaims the machine (preemption; `synor agent` on SIGUSR1):
 * the task running stops at its next safe point, its checkpoint (sgemm's
 * finished row blocks, sum-f32's running sum, spotrf's partially factored
 * matrix, llm-generate's token ids and sampler state; docs/AGENT.md,
 * "Preemption") is sent with POST /v1/tasks/{task}/release, the tasks claimed but
 * not started are released too, and run returns 0. Async-signal-safe.
 * The owner's limits closing mid-task (hours over, an idle-only machine
 * in use) release the task the same way, and the agent waits. */
void synor_agent_reclaim(synor_agent *a);
void synor_agent_destroy(synor_agent *a); /* accepts NULL */

typedef struct synor_agent_stats {
    uint64_t tasks_done;        /* results acknowledged by the coordinator */
    uint64_t tasks_failed;      /* reported failed (bad input, kernel error) */
    uint64_t results_rejected;  /* answered 409/400: lease lost, checksum */
    uint64_t reuploaded;        /* results from the state directory sent again */
    uint64_t heartbeats;        /* acknowledged */
    uint64_t heartbeat_errors;  /* no answer or an error status */
    uint64_t claims_empty;      /* long polls that ended with nothing */
    uint64_t not_accepting;     /* claim rounds skipped by the owner's limits */
    uint64_t released;          /* tasks given back (reclaim, limits, stop) */
    uint64_t resumed;           /* tasks resumed from another's checkpoint */
    unsigned workers;           /* runtime CPU workers (from cpu_share) */
} synor_agent_stats;

void synor_agent_stats_get(const synor_agent *a, synor_agent_stats *out);
/* Device i's id from the coordinator ("dev-12"), or "" before registration.
 * Not while run is registering again (call it from run's log callback or
 * after run returned). */
const char *synor_agent_device_id(const synor_agent *a, unsigned i);

/* Runs one task's kernel locally, as the agent does (for tests and `synor
 * agent --run-local`): kernel and params_json as in a task, inputs[i] of
 * len[i] bytes; *out (malloc'd) and *out_len. workers: runtime CPU workers
 * (0: all cores). models may be NULL when the kernel is not llm-generate. */
int synor_agent_execute(const char *kernel, const char *params_json, size_t n_inputs,
                        const void *const *inputs, const size_t *len, unsigned workers,
                        const synor_agent_config *models, void **out, size_t *out_len);

#ifdef __cplusplus
}
#endif
#endif
