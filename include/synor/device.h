/* synor/device.h - a processor the system can plan for and, where a backend
 * can drive it, run work on (seed 001, §1.1 "Processor").
 *
 * A device is an opaque, reference-counted object: a processor type, its
 * capabilities, and a small table of backend functions (synor_device_ops).
 * The generic functions here (can_execute, estimate_time, estimate_energy,
 * utilization, available_memory, submit) work on every device; the backend
 * supplies what only it can know, such as live free memory or how to run a
 * kernel.
 *
 * Backends shipped: "simulated" (a device built from a profile, present only
 * on paper: it is labelled simulated everywhere and cannot run work), "host"
 * (a CPU of this machine, runs host functions), "cuda" and "opencl"
 * (detected accelerators; running kernels on them arrives with the runtime).
 *
 * Thread safety: the getters and estimates may be called from any thread;
 * synor_device_set_utilization and reserve/release are atomic. */
#ifndef SYNOR_DEVICE_H
#define SYNOR_DEVICE_H

#include <stddef.h>
#include <stdint.h>

#include "synor/caps.h"
#include "synor/op.h"
#include "synor/processor.h"
#include "synor/profile.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct synor_device synor_device;

/* Where a device's capabilities came from. */
typedef enum synor_caps_origin {
    SYNOR_CAPS_FROM_PROFILE, /* a profile, unchanged (simulated devices) */
    SYNOR_CAPS_FROM_PROFILE_MATCH, /* a detected device whose name matched a
                                      profile; live figures (memory, cores)
                                      from detection override it */
    SYNOR_CAPS_DERIVED       /* derived from what detection measured */
} synor_caps_origin;

const char *synor_caps_origin_name(synor_caps_origin o);

/* A unit of work for synor_device_submit. */
typedef struct synor_work {
    synor_op_work op;         /* what it computes (for accounting) */
    int (*fn)(void *arg);     /* host function run by the "host" backend */
    void *arg;                /* passed to fn, never touched by the library */
} synor_work;

#define SYNOR_DEVICE_OPS_VERSION 1

/* Backend table. Any function may be NULL, meaning the generic behaviour
 * described on it. */
typedef struct synor_device_ops {
    int version;          /* SYNOR_DEVICE_OPS_VERSION */
    const char *backend;  /* "simulated", "host", "cuda", "opencl", ... */
    int simulated;        /* 1: not a processor of this machine */
    /* Runs work; NULL: the device cannot run work (SYNOR_ENOTSUP). */
    int (*submit)(synor_device *dev, const synor_work *work);
    /* Live utilization in [0, 1]; NULL: the last value set with
     * synor_device_set_utilization. */
    double (*utilization)(synor_device *dev);
    /* Live free memory in bytes; NULL: capacity minus reserved bytes. */
    uint64_t (*available_memory)(synor_device *dev);
    /* Frees backend state (impl); NULL: nothing to free. */
    void (*destroy)(void *impl);
} synor_device_ops;

/* Everything a device is created from. Strings are copied. */
typedef struct synor_device_desc {
    const char *name;          /* e.g. "NVIDIA H100 80GB HBM3" */
    synor_processor_type type;
    synor_caps caps;
    const char *profile_id;    /* the profile used, or NULL */
    synor_caps_origin origin;
    const char *location;      /* e.g. "pci 0000:01:00.0", "local"; or NULL */
} synor_device_desc;

/* Creates a device with the given backend. ops must outlive the device;
 * impl is owned by the device from success on (ops->destroy frees it). */
int synor_device_create(const synor_device_desc *desc, const synor_device_ops *ops, void *impl,
                        synor_device **out);

/* A simulated device from a profile. name may be NULL (the profile's name). */
int synor_device_create_simulated(const synor_profile *p, const char *name, synor_device **out);

/* Reference counting: a device starts with one reference; unref of the last
 * frees it. Both accept NULL. */
synor_device *synor_device_ref(synor_device *dev);
void synor_device_unref(synor_device *dev);

const char *synor_device_name(const synor_device *dev);
const synor_processor_type *synor_device_type(const synor_device *dev);
synor_kind synor_device_kind(const synor_device *dev);
const synor_caps *synor_device_caps(const synor_device *dev);
const char *synor_device_backend(const synor_device *dev);
int synor_device_is_simulated(const synor_device *dev);
const char *synor_device_profile_id(const synor_device *dev); /* NULL if none */
synor_caps_origin synor_device_caps_origin(const synor_device *dev);
const char *synor_device_location(const synor_device *dev); /* "" if unknown */
void *synor_device_impl(const synor_device *dev); /* backend state */

/* Descriptive key/value details recorded by detection (cores, caches, driver
 * version, ...). Keys and values are copied. */
int synor_device_add_detail(synor_device *dev, const char *key, const char *value);
size_t synor_device_detail_count(const synor_device *dev);
/* i < count; returns 0 and sets key/value, or SYNOR_ERANGE. */
int synor_device_detail(const synor_device *dev, size_t i, const char **key, const char **value);
/* The value of a key, or NULL. */
const char *synor_device_detail_get(const synor_device *dev, const char *key);

/* True if the device supports the operation type and data type. */
int synor_device_can_execute(const synor_device *dev, const synor_op_work *op);

/* Roofline estimate in seconds: launch latency + max(flops / (peak(dtype) x
 * efficiency), bytes / memory bandwidth). INFINITY if it cannot execute. */
double synor_device_estimate_time(const synor_device *dev, const synor_op_work *op);

/* Joules: busy time at peak power plus launch latency at idle power.
 * INFINITY if it cannot execute. */
double synor_device_estimate_energy(const synor_device *dev, const synor_op_work *op);

/* Utilization in [0, 1] (see synor_device_ops.utilization). */
double synor_device_utilization(synor_device *dev);
/* Sets the reported utilization (clamped to [0, 1]). */
void synor_device_set_utilization(synor_device *dev, double u);

/* Free memory in bytes (see synor_device_ops.available_memory). */
uint64_t synor_device_available_memory(synor_device *dev);
/* Accounts bytes as in use / no longer in use. Reserve fails with
 * SYNOR_ENOMEM (message naming device and sizes) if they do not fit. */
int synor_device_reserve(synor_device *dev, uint64_t bytes);
void synor_device_release(synor_device *dev, uint64_t bytes);
uint64_t synor_device_reserved(const synor_device *dev);

/* Runs work on the device; SYNOR_ENOTSUP for backends that cannot (and for
 * simulated devices), or the work's own negative result. */
int synor_device_submit(synor_device *dev, const synor_work *work);

#ifdef __cplusplus
}
#endif
#endif
