/* device.c - the generic device object: identity, capabilities, details,
 * reference counting, memory accounting, and the roofline estimates shared
 * by every backend. Backend-specific behaviour comes from synor_device_ops. */
#include <math.h>
#include <stdatomic.h>
#include <string.h>

#include "common/common.h"
#include "synor/device.h"

typedef struct detail {
    char *key, *value;
} detail;

struct synor_device {
    atomic_int refs;
    char *name;
    char *profile_id;
    char *location;
    synor_processor_type type;
    synor_caps caps;
    synor_caps_origin origin;
    const synor_device_ops *ops;
    void *impl;
    _Atomic double utilization;
    atomic_uint_fast64_t reserved;
    detail *details;
    size_t n_details;
};

const char *synor_caps_origin_name(synor_caps_origin o)
{
    switch (o) {
    case SYNOR_CAPS_FROM_PROFILE: return "profile";
    case SYNOR_CAPS_FROM_PROFILE_MATCH: return "profile-match";
    case SYNOR_CAPS_DERIVED: return "derived";
    }
    return "?";
}

static void device_free(synor_device *d)
{
    if (d->ops && d->ops->destroy && d->impl)
        d->ops->destroy(d->impl);
    for (size_t i = 0; i < d->n_details; i++) {
        synor__free(d->details[i].key);
        synor__free(d->details[i].value);
    }
    synor__free(d->details);
    synor__free(d->name);
    synor__free(d->profile_id);
    synor__free(d->location);
    synor__free(d);
}

int synor_device_create(const synor_device_desc *desc, const synor_device_ops *ops, void *impl,
                        synor_device **out)
{
    if (!desc || !ops || !out || !desc->name || !desc->name[0])
        return synor__error(SYNOR_EINVAL, "synor_device_create: missing descriptor, ops or name");
    if (ops->version != SYNOR_DEVICE_OPS_VERSION)
        return synor__error(SYNOR_EINVAL, "device \"%s\": backend ops version %d, expected %d",
                            desc->name, ops->version, SYNOR_DEVICE_OPS_VERSION);
    synor_device *d = synor__calloc(1, sizeof *d);
    if (!d)
        return synor__error(SYNOR_ENOMEM, "out of memory");
    d->name = synor__strdup(desc->name);
    d->profile_id = desc->profile_id ? synor__strdup(desc->profile_id) : NULL;
    d->location = synor__strdup(desc->location ? desc->location : "");
    if (!d->name || (desc->profile_id && !d->profile_id) || !d->location) {
        device_free(d);
        return synor__error(SYNOR_ENOMEM, "out of memory");
    }
    atomic_init(&d->refs, 1);
    atomic_init(&d->utilization, 0.0);
    atomic_init(&d->reserved, 0);
    d->type = desc->type;
    d->caps = desc->caps;
    d->origin = desc->origin;
    d->ops = ops;
    d->impl = impl;
    *out = d;
    return 0;
}

static const synor_device_ops simulated_ops = {
    .version = SYNOR_DEVICE_OPS_VERSION,
    .backend = "simulated",
    .simulated = 1,
};

int synor_device_create_simulated(const synor_profile *p, const char *name, synor_device **out)
{
    if (!p)
        return synor__error(SYNOR_EINVAL, "synor_device_create_simulated: profile is NULL");
    synor_device_desc desc = {
        .name = name ? name : p->name,
        .type = p->type,
        .caps = p->caps,
        .profile_id = p->id,
        .origin = SYNOR_CAPS_FROM_PROFILE,
        .location = "simulated",
    };
    return synor_device_create(&desc, &simulated_ops, NULL, out);
}

synor_device *synor_device_ref(synor_device *dev)
{
    if (dev)
        atomic_fetch_add_explicit(&dev->refs, 1, memory_order_relaxed);
    return dev;
}

void synor_device_unref(synor_device *dev)
{
    if (dev && atomic_fetch_sub_explicit(&dev->refs, 1, memory_order_acq_rel) == 1)
        device_free(dev);
}

const char *synor_device_name(const synor_device *dev) { return dev->name; }
const synor_processor_type *synor_device_type(const synor_device *dev) { return &dev->type; }
synor_kind synor_device_kind(const synor_device *dev) { return dev->type.kind; }
const synor_caps *synor_device_caps(const synor_device *dev) { return &dev->caps; }
const char *synor_device_backend(const synor_device *dev) { return dev->ops->backend; }
int synor_device_is_simulated(const synor_device *dev) { return dev->ops->simulated; }
const char *synor_device_profile_id(const synor_device *dev) { return dev->profile_id; }
synor_caps_origin synor_device_caps_origin(const synor_device *dev) { return dev->origin; }
const char *synor_device_location(const synor_device *dev) { return dev->location; }
void *synor_device_impl(const synor_device *dev) { return dev->impl; }

int synor_device_add_detail(synor_device *dev, const char *key, const char *value)
{
    if (!dev || !key || !value)
        return synor__error(SYNOR_EINVAL, "synor_device_add_detail: NULL argument");
    detail *nd = synor__realloc(dev->details, (dev->n_details + 1) * sizeof *nd);
    if (!nd)
        return synor__error(SYNOR_ENOMEM, "out of memory");
    dev->details = nd;
    char *k = synor__strdup(key), *v = synor__strdup(value);
    if (!k || !v) {
        synor__free(k);
        synor__free(v);
        return synor__error(SYNOR_ENOMEM, "out of memory");
    }
    nd[dev->n_details].key = k;
    nd[dev->n_details].value = v;
    dev->n_details++;
    return 0;
}

size_t synor_device_detail_count(const synor_device *dev) { return dev->n_details; }

int synor_device_detail(const synor_device *dev, size_t i, const char **key, const char **value)
{
    if (i >= dev->n_details)
        return synor__error(SYNOR_ERANGE, "detail index %zu out of range (%zu details)", i,
                            dev->n_details);
    *key = dev->details[i].key;
    *value = dev->details[i].value;
    return 0;
}

const char *synor_device_detail_get(const synor_device *dev, const char *key)
{
    for (size_t i = 0; i < dev->n_details; i++)
        if (strcmp(dev->details[i].key, key) == 0)
            return dev->details[i].value;
    return NULL;
}

int synor_device_can_execute(const synor_device *dev, const synor_op_work *op)
{
    if (!dev || !op || (unsigned)op->type >= SYNOR_OP_TYPE_COUNT ||
        (unsigned)op->dtype >= SYNOR_DTYPE_COUNT)
        return 0;
    if (!(dev->caps.ops & SYNOR_OP_BIT(op->type)))
        return 0;
    if (!(dev->caps.dtypes & SYNOR_DTYPE_BIT(op->dtype)))
        return 0;
    /* Work with FLOPs needs a non-zero peak in its data type. */
    if (op->flops > 0 && synor_caps_peak(&dev->caps, op->dtype, op->sparse) <= 0)
        return 0;
    return 1;
}

/* The roofline: the two lower bounds on time, compute and memory. */
static void roofline(const synor_device *dev, const synor_op_work *op, double *compute,
                     double *memory)
{
    const synor_caps *c = &dev->caps;
    double peak = synor_caps_peak(c, op->dtype, op->sparse);
    double eff = c->efficiency > 0 ? c->efficiency : 1.0;
    *compute = op->flops > 0 ? op->flops / (peak * eff) : 0;
    double bytes = op->bytes_read + op->bytes_written;
    *memory = bytes > 0 && c->mem_bandwidth > 0 ? bytes / c->mem_bandwidth : 0;
}

double synor_device_estimate_time(const synor_device *dev, const synor_op_work *op)
{
    if (!synor_device_can_execute(dev, op))
        return INFINITY;
    double comp, mem;
    roofline(dev, op, &comp, &mem);
    return dev->caps.launch_latency + (comp > mem ? comp : mem);
}

double synor_device_estimate_energy(const synor_device *dev, const synor_op_work *op)
{
    if (!synor_device_can_execute(dev, op))
        return INFINITY;
    double comp, mem;
    roofline(dev, op, &comp, &mem);
    double busy = comp > mem ? comp : mem;
    double t = dev->caps.launch_latency + busy;
    if (t <= 0)
        return 0;
    /* Busy time draws peak power, launch latency only idle power. A finer
     * model (memory-bound kernels drawing less) needs measurements first. */
    const synor_caps *c = &dev->caps;
    double watts = c->idle_watts + (c->peak_watts - c->idle_watts) * (busy / t);
    return watts * t;
}

double synor_device_utilization(synor_device *dev)
{
    if (dev->ops->utilization)
        return dev->ops->utilization(dev);
    return atomic_load_explicit(&dev->utilization, memory_order_relaxed);
}

void synor_device_set_utilization(synor_device *dev, double u)
{
    if (!(u >= 0)) /* also catches NaN */
        u = 0;
    if (u > 1)
        u = 1;
    atomic_store_explicit(&dev->utilization, u, memory_order_relaxed);
}

uint64_t synor_device_reserved(const synor_device *dev)
{
    return atomic_load_explicit(&dev->reserved, memory_order_relaxed);
}

uint64_t synor_device_available_memory(synor_device *dev)
{
    if (dev->ops->available_memory)
        return dev->ops->available_memory(dev);
    uint64_t r = synor_device_reserved(dev);
    return r >= dev->caps.mem_bytes ? 0 : dev->caps.mem_bytes - r;
}

int synor_device_reserve(synor_device *dev, uint64_t bytes)
{
    uint_fast64_t cur = atomic_load_explicit(&dev->reserved, memory_order_relaxed);
    do {
        if (bytes > dev->caps.mem_bytes || cur > dev->caps.mem_bytes - bytes)
            return synor__error(SYNOR_ENOMEM,
                                "device \"%s\": cannot reserve %llu bytes: %llu of %llu in use",
                                dev->name, (unsigned long long)bytes, (unsigned long long)cur,
                                (unsigned long long)dev->caps.mem_bytes);
    } while (!atomic_compare_exchange_weak_explicit(&dev->reserved, &cur, cur + bytes,
                                                    memory_order_relaxed, memory_order_relaxed));
    return 0;
}

void synor_device_release(synor_device *dev, uint64_t bytes)
{
    uint_fast64_t cur = atomic_load_explicit(&dev->reserved, memory_order_relaxed);
    uint_fast64_t next;
    do {
        next = SYNOR_NEVER(bytes > cur) ? 0 : cur - bytes;
    } while (!atomic_compare_exchange_weak_explicit(&dev->reserved, &cur, next,
                                                    memory_order_relaxed, memory_order_relaxed));
}

int synor_device_submit(synor_device *dev, const synor_work *work)
{
    if (!dev || !work)
        return synor__error(SYNOR_EINVAL, "synor_device_submit: NULL argument");
    if (!dev->ops->submit) {
        if (dev->ops->simulated)
            return synor__error(SYNOR_ENOTSUP,
                                "device \"%s\" is simulated: it exists only in plans and the "
                                "simulator, and cannot run work",
                                dev->name);
        return synor__error(SYNOR_ENOTSUP, "device \"%s\" (backend %s) cannot run work yet",
                            dev->name, dev->ops->backend);
    }
    if (!synor_device_can_execute(dev, &work->op))
        return synor__error(SYNOR_ENOTSUP, "device \"%s\" cannot execute %s in %s", dev->name,
                            synor_op_type_name(work->op.type), synor_dtype_name(work->op.dtype));
    return dev->ops->submit(dev, work);
}
