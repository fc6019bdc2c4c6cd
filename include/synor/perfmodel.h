/* synor/perfmodel.h - history-based performance models (issue 4 point 4):
 * how long an operation on data of a given shape takes on a given device,
 * calibrated from real runs and kept across runs in a file.
 *
 * An entry is keyed by (operation, footprint, device): the operation is a
 * kernel name ("gemm"), the footprint a 64-bit hash of the sizes and shapes
 * of the task's data (synor_perfmodel_footprint, StarPU's "footprint"), the
 * device a device name ("cpu", "opencl0"). The runtime records every task's
 * kernel time into its entry (synor_perfmodel_record) and, once the entry is
 * calibrated, places tasks by its estimate instead of the profile's roofline
 * figure (synor_runtime_config.perfmodel).
 *
 * The estimate is robust to outliers: it is the median of the entry's last
 * SYNOR_PERFMODEL_WINDOW samples (the mean of the two middle ones for an
 * even count). One slow run (a page fault storm, a preempted worker) does
 * not move it at all unless it outnumbers the good samples, so it cannot
 * send all later work to another device (the failure reported against
 * StarPU's mean-based models, starpu issue #50); a lasting change of speed
 * is followed once the new speed holds a majority of the window, that is
 * after at most SYNOR_PERFMODEL_WINDOW / 2 + 1 = 17 samples. An entry is
 * calibrated once its window holds at least min_samples samples (3 by
 * default, synor_perfmodel_set_min_samples). Each entry also keeps the
 * count, mean, standard deviation (Welford), minimum and maximum of all its
 * samples, for reports.
 *
 * Thread safety: every call may be made from any thread at the same time
 * as any other, except destroy. Entries live in a hash table split into
 * stripes, one mutex each, held only for a lookup and an O(window) update:
 * record costs well under a microsecond.
 *
 * Persistence: a JSON file (format "synor-perfmodel/1", docs/RUNTIME.md,
 * "Performance models"), by default $XDG_DATA_HOME/synor/perfmodel.json.
 * Each entry is saved with its window of samples, so a model loaded from a
 * file gives the same estimates as the one saved. */
#ifndef SYNOR_PERFMODEL_H
#define SYNOR_PERFMODEL_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Samples per entry that the estimate is computed from (the most recent). */
#define SYNOR_PERFMODEL_WINDOW 32
/* Default number of samples before an entry is calibrated. */
#define SYNOR_PERFMODEL_MIN_SAMPLES 3
/* The operation name of the runtime's dispatch entries: per device (at
 * footprint 0), the time from when a task could start there - its last
 * predecessor's kernel ended (or it was submitted), and the previous kernel
 * of the worker that ran it ended - to when its kernel started (finishing
 * that task, placing, waking a worker, dequeuing, acquiring data). Recorded with every task; its mean
 * (synor_perfmodel_foreach) is the per-task overhead a simulation of this
 * machine adds (synor_whatif_calibrate). No kernel has this name. */
#define SYNOR_PERFMODEL_DISPATCH "(dispatch)"
/* The submitting thread's own work, per call (issue 11, the fidelity of a
 * simulated run): entries of device SYNOR_PERFMODEL_HOST at footprint 0,
 * recorded by the runtime on the thread that makes the call -
 *   SYNOR_PERFMODEL_SUBMIT: one synor_task_submit, entry to return;
 *   SYNOR_PERFMODEL_REGISTER, _UNREGISTER: one synor_handle_register,
 *     one synor_handle_unregister of a handle no task still uses;
 *   SYNOR_PERFMODEL_WAIT: synor_runtime_wait_all, from the moment the last
 *     outstanding task finished to its return (waking the waiter), when it
 *     had to wait.
 * Their means are what synor_whatif_calibrate charges a simulated run for
 * the host side (synor_workload_set_host). No kernel has these names. */
#define SYNOR_PERFMODEL_HOST "host"
#define SYNOR_PERFMODEL_SUBMIT "(submit)"
#define SYNOR_PERFMODEL_REGISTER "(register)"
#define SYNOR_PERFMODEL_UNREGISTER "(unregister)"
#define SYNOR_PERFMODEL_WAIT "(wait)"
/* The file format tag. */
#define SYNOR_PERFMODEL_FORMAT "synor-perfmodel/1"

typedef struct synor_perfmodel synor_perfmodel;

/* Creates an empty model in memory. */
int synor_perfmodel_create(synor_perfmodel **out);

/* Frees the model. NULL is a no-op. No other call may be running on it. */
void synor_perfmodel_destroy(synor_perfmodel *pm);

/* The default file, per the XDG Base Directory specification:
 * $XDG_DATA_HOME/synor/perfmodel.json when XDG_DATA_HOME is set to an
 * absolute path (the specification says a relative one is ignored), else
 * $HOME/.local/share/synor/perfmodel.json. SYNOR_ENOENT when neither is
 * usable, SYNOR_ERANGE when buf (size bytes) is too small. */
int synor_perfmodel_default_path(char *buf, size_t size);

/* A stable hash of n values describing a task's data (the runtime passes
 * the number of data, then per datum its data type and shape). The
 * algorithm is fixed: 64-bit FNV-1a over each value as 8 little-endian
 * bytes, one more FNV-1a step with n as a whole word, then the splitmix64
 * finalizer. So a footprint depends on the values only: it is the same in
 * every run and on every machine, and saved files stay valid. Order
 * matters: {2, 3} and {3, 2} differ. */
uint64_t synor_perfmodel_footprint(const size_t *sizes, unsigned n);

/* Records that op on data of footprint fp took `seconds` on device. Called
 * by worker threads after each task. A sample that is negative or not
 * finite, or a NULL argument, is ignored; so is the sample when the new
 * entry it needs cannot be allocated (the model stays usable). The strings
 * are copied. */
void synor_perfmodel_record(synor_perfmodel *pm, const char *op, uint64_t footprint,
                            const char *device, double seconds);

/* The expected time of op on data of footprint fp on device: 0 and
 * *seconds = the median of the window when the entry is calibrated;
 * SYNOR_ENOENT otherwise (no entry, or fewer than min_samples samples),
 * *seconds untouched. *samples (may be NULL) gets the number of samples
 * recorded for the entry in all (0 without an entry), in both cases. This
 * is a query on the placement path: ENOENT sets no error message. */
int synor_perfmodel_estimate(const synor_perfmodel *pm, const char *op, uint64_t footprint,
                             const char *device, double *seconds, unsigned *samples);

/* Samples an entry needs in its window to be calibrated: n is clamped to
 * [1, SYNOR_PERFMODEL_WINDOW]. Default SYNOR_PERFMODEL_MIN_SAMPLES. */
void synor_perfmodel_set_min_samples(synor_perfmodel *pm, unsigned n);
unsigned synor_perfmodel_min_samples(const synor_perfmodel *pm);

/* Number of entries. */
size_t synor_perfmodel_count(const synor_perfmodel *pm);

/* Merges a model file into pm. A file that does not exist is not an error:
 * 0, nothing loaded. A malformed one is: SYNOR_EPARSE (not JSON),
 * SYNOR_ESCHEMA (a wrong format tag, a missing or unknown field, a wrong
 * type), SYNOR_ERANGE (a negative or non-finite figure) or SYNOR_EEXIST (an
 * entry twice), with a message naming the file, line:column and field;
 * SYNOR_EIO when it cannot be read. On any failure pm is unchanged.
 * Merging: an entry not in pm is added; for one already there, the file's
 * samples are taken as older than pm's (the window keeps the newest) and
 * the statistics are combined. */
int synor_perfmodel_load(synor_perfmodel *pm, const char *path);

/* As synor_perfmodel_load, from memory; name is used in messages. */
int synor_perfmodel_load_string(synor_perfmodel *pm, const char *text, size_t len,
                                const char *name);

/* Writes the model to path atomically: a temporary file in the same
 * directory, fsync, rename over path, fsync of the directory. Missing
 * directories are created (mode 0700, as XDG asks). Entries are written
 * sorted by operation, device and footprint, so equal models give equal
 * files. Records made during the save go in or not, entry by entry. */
int synor_perfmodel_save(const synor_perfmodel *pm, const char *path);

/* The model in its file format; free() the string. NULL on failure. */
char *synor_perfmodel_to_json(const synor_perfmodel *pm);

/* One entry, as seen by synor_perfmodel_foreach. Figures in seconds. */
typedef struct synor_perfmodel_entry {
    const char *op;
    uint64_t footprint;
    const char *device;
    uint64_t count;      /* samples ever recorded (and loaded) */
    double mean, stddev; /* of all of them (Welford); stddev 0 below 2 */
    double min, max;
    unsigned window;     /* samples in the window, <= SYNOR_PERFMODEL_WINDOW */
    double estimate;     /* median of the window */
    double window_mean;  /* mean of the window (an expected time: what a
                            simulation of a run sums; the median, robust,
                            is what placement uses) */
    int calibrated;      /* window >= min_samples */
} synor_perfmodel_entry;

/* Calls fn for each entry, in the order of the file (operation, device,
 * footprint), on a snapshot taken first: fn runs with no lock held and may
 * call into the model. The entry is valid during the call only. A nonzero
 * return from fn stops the walk and is returned. SYNOR_ENOMEM when the
 * snapshot cannot be made (fn is not called). */
int synor_perfmodel_foreach(const synor_perfmodel *pm,
                            int (*fn)(const synor_perfmodel_entry *e, void *user), void *user);

#ifdef __cplusplus
}
#endif
#endif
