/* agent_int.h - what the files of src/agent/ share: the executor (the
 * runtime and the models, agent_exec.c) and the state directory
 * (agent_state.c). */
#ifndef SYNOR_AGENT_INT_H
#define SYNOR_AGENT_INT_H

#include <stddef.h>
#include <stdint.h>

#include "json/json.h"
#include "synor/agent.h"

#define SYNOR__AGENT_MAGIC 0x6167656eu /* "agen" */
/* A result whose task ran at least this long (ms) is saved in the state
 * directory before its upload; quicker ones only when the upload fails. */
#define SYNOR__AGENT_KEEP_MS 100

/* ---- agent_exec.c: tasks run on one runtime, created at first use ---- */
typedef struct synor__agent_exec synor__agent_exec;

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
/* The wrong-results fault: changes out in place so that it no longer
 * agrees with the right answer within the quorum tolerance. */
void synor__agent_corrupt(const char *kernel, void *out, size_t len);

/* ---- agent_state.c: the state directory ---- */
typedef struct synor__agent_pending {
    char task[128], lease[256], sha256[65];
    uint64_t elapsed_ms;
    void *data; /* malloc'd */
    size_t len;
} synor__agent_pending;

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
