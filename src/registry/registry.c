/* registry.c - the thread-safe device registry.
 *
 * Layout: entries in registration order (a vector of pointers) plus an
 * open-addressing hash index from id to entry, so add/get/update are O(1)
 * and queries scan in a stable order. One pthread rwlock guards both;
 * lookups copy what they return (with a device reference) while holding the
 * read lock, so no caller ever sees an entry change under it. Removal is
 * O(n) (the vector shifts and the index is rebuilt): devices come and go far
 * less often than they are looked up. */
#include <pthread.h>
#include <stdint.h>
#include <string.h>

#include "common/common.h"
#include "common/index.h"
#include "registry/registry_internal.h"
#include "synor/registry.h"

typedef struct entry {
    synor_registry_entry e;
} entry;

struct synor_registry {
    pthread_rwlock_t lock;
    entry **v;
    size_t n, cap;
    entry **index; /* open addressing, size index_cap (power of 2), NULL = empty */
    size_t index_cap;
};

static const char *const status_names[SYNOR_STATUS_COUNT] = {"online", "busy", "draining",
                                                             "offline"};

const char *synor_device_status_name(synor_device_status s)
{
    return (unsigned)s < SYNOR_STATUS_COUNT ? status_names[s] : "?";
}

int synor_device_status_from_name(const char *name, synor_device_status *out)
{
    for (int i = 0; i < SYNOR_STATUS_COUNT; i++)
        if (name && strcmp(name, status_names[i]) == 0) {
            *out = (synor_device_status)i;
            return 0;
        }
    return synor__error(SYNOR_EINVAL, "unknown device status \"%s\" (online, busy, draining, "
                                      "offline)", name ? name : "(null)");
}

void synor_registry_info_init(synor_registry_info *info)
{
    memset(info, 0, sizeof *info);
    info->status = SYNOR_STATUS_ONLINE;
    info->reputation = 50;
    info->availability.kind = SYNOR_AVAIL_ALWAYS;
}

void synor_registry_entry_release(synor_registry_entry *e)
{
    if (e && e->device) {
        synor_device_unref(e->device);
        e->device = NULL;
    }
}

void synor_registry_entries_free(synor_registry_entry *e, size_t n)
{
    if (!e)
        return;
    for (size_t i = 0; i < n; i++)
        synor_registry_entry_release(&e[i]);
    synor__free(e);
}

static entry **index_slot(entry **index, size_t cap, const char *id)
{
    size_t mask = cap - 1, i = (size_t)synor__hash_str(id) & mask;
    while (index[i] && strcmp(index[i]->e.id, id) != 0)
        i = (i + 1) & mask;
    return &index[i];
}

static entry *find(const synor_registry *r, const char *id)
{
    if (!r->index_cap)
        return NULL;
    return *index_slot(r->index, r->index_cap, id);
}

/* Builds a fresh index of capacity cap for the current entries. */
static int rebuild_index(synor_registry *r, size_t cap)
{
    entry **idx = synor__calloc(cap, sizeof *idx);
    if (!idx)
        return synor__error(SYNOR_ENOMEM, "out of memory");
    for (size_t i = 0; i < r->n; i++)
        *index_slot(idx, cap, r->v[i]->e.id) = r->v[i];
    synor__free(r->index);
    r->index = idx;
    r->index_cap = cap;
    return 0;
}

int synor_registry_create(synor_registry **out)
{
    if (!out)
        return synor__error(SYNOR_EINVAL, "synor_registry_create: out is NULL");
    synor_registry *r = synor__calloc(1, sizeof *r);
    if (!r)
        return synor__error(SYNOR_ENOMEM, "out of memory");
    if (pthread_rwlock_init(&r->lock, NULL) != 0) {
        synor__free(r);
        return synor__error(SYNOR_ENOMEM, "cannot create the registry lock");
    }
    *out = r;
    return 0;
}

void synor_registry_destroy(synor_registry *reg)
{
    if (!reg)
        return;
    for (size_t i = 0; i < reg->n; i++) {
        synor_registry_entry_release(&reg->v[i]->e);
        synor__free(reg->v[i]);
    }
    synor__free(reg->v);
    synor__free(reg->index);
    pthread_rwlock_destroy(&reg->lock);
    synor__free(reg);
}

static int validate_text(const char *what, const char *s)
{
    if (memchr(s, '\0', SYNOR_REGISTRY_TEXT_MAX) == NULL)
        return synor__error(SYNOR_EINVAL, "registry: %s is longer than %d characters", what,
                            SYNOR_REGISTRY_TEXT_MAX - 1);
    return 0;
}

static int validate_info(const synor_registry_info *info, unsigned fields)
{
    int rc;
    if ((fields & SYNOR_UPDATE_STATUS) && (unsigned)info->status >= SYNOR_STATUS_COUNT)
        return synor__error(SYNOR_EINVAL, "registry: status %d is not a device status",
                            (int)info->status);
    if ((fields & SYNOR_UPDATE_UTILIZATION) &&
        !(info->utilization >= 0 && info->utilization <= 1))
        return synor__error(SYNOR_EINVAL, "registry: utilization %g is outside [0, 1]",
                            info->utilization);
    if ((fields & SYNOR_UPDATE_REPUTATION) && (info->reputation < 0 || info->reputation > 100))
        return synor__error(SYNOR_EINVAL, "registry: reputation %d is outside 0..100",
                            info->reputation);
    if ((fields & SYNOR_UPDATE_AVAILABILITY) &&
        (rc = synor_availability_validate(&info->availability)))
        return rc;
    if (((fields & SYNOR_UPDATE_OWNER) && (rc = validate_text("owner", info->owner))) ||
        ((fields & SYNOR_UPDATE_REGION) && (rc = validate_text("region", info->region))) ||
        ((fields & SYNOR_UPDATE_LOCATION) && (rc = validate_text("location", info->location))))
        return rc;
    return 0;
}

#define ALL_FIELDS 0x7fu

static int validate_id(const char *id)
{
    if (!id || !id[0])
        return synor__error(SYNOR_EINVAL, "registry: empty device id");
    size_t n = strnlen(id, SYNOR_REGISTRY_ID_MAX);
    if (n >= SYNOR_REGISTRY_ID_MAX)
        return synor__error(SYNOR_EINVAL, "registry: device id \"%.20s...\" is longer than %d "
                                          "characters", id, SYNOR_REGISTRY_ID_MAX - 1);
    for (size_t i = 0; i < n; i++)
        if ((unsigned char)id[i] <= ' ' || (unsigned char)id[i] == 0x7f)
            return synor__error(SYNOR_EINVAL, "registry: device id \"%s\" contains a space or "
                                              "control character", id);
    return 0;
}

int synor_registry_add(synor_registry *reg, const char *id, synor_device *dev,
                       const synor_registry_info *info)
{
    int rc;
    if (!reg || !dev)
        return synor__error(SYNOR_EINVAL, "synor_registry_add: NULL registry or device");
    if ((rc = validate_id(id)))
        return rc;
    synor_registry_info defaults;
    if (!info) {
        synor_registry_info_init(&defaults);
        info = &defaults;
    }
    if ((rc = validate_info(info, ALL_FIELDS)))
        return rc;
    entry *en = synor__calloc(1, sizeof *en);
    if (!en)
        return synor__error(SYNOR_ENOMEM, "out of memory");
    synor__strlcpy(en->e.id, id, sizeof en->e.id);
    en->e.info = *info;
    en->e.version = 1;

    pthread_rwlock_wrlock(&reg->lock);
    if (find(reg, id)) {
        rc = synor__error(SYNOR_EEXIST, "registry: a device with id \"%s\" is already registered",
                          id);
        goto fail;
    }
    if (reg->n == reg->cap) {
        size_t cap = reg->cap ? reg->cap * 2 : 16;
        entry **v = synor__realloc(reg->v, cap * sizeof *v);
        if (!v) {
            rc = synor__error(SYNOR_ENOMEM, "out of memory");
            goto fail;
        }
        reg->v = v;
        reg->cap = cap;
    }
    /* Keep the index at most half full. */
    if ((reg->n + 1) * 2 > reg->index_cap) {
        if ((rc = rebuild_index(reg, reg->index_cap ? reg->index_cap * 2 : 32)))
            goto fail;
    }
    en->e.device = synor_device_ref(dev);
    reg->v[reg->n++] = en;
    *index_slot(reg->index, reg->index_cap, id) = en;
    pthread_rwlock_unlock(&reg->lock);
    return 0;
fail:
    pthread_rwlock_unlock(&reg->lock);
    synor__free(en);
    return rc;
}

int synor__registry_add_all(synor_registry *reg, const synor__registry_new *v, size_t n,
                            size_t *bad)
{
    int rc;
    *bad = n;
    if (!reg || (n && !v))
        return synor__error(SYNOR_EINVAL, "synor__registry_add_all: NULL argument");
    synor_registry_info defaults;
    synor_registry_info_init(&defaults);
    for (size_t i = 0; i < n; i++) {
        if (!v[i].dev)
            rc = synor__error(SYNOR_EINVAL, "synor__registry_add_all: NULL device");
        else if (!(rc = validate_id(v[i].id)))
            rc = validate_info(v[i].info ? v[i].info : &defaults, ALL_FIELDS);
        if (rc) {
            *bad = i;
            return rc;
        }
    }
    if (!n)
        return 0;
    entry **made = synor__calloc(n, sizeof *made);
    if (!made)
        return synor__error(SYNOR_ENOMEM, "out of memory");
    for (size_t i = 0; i < n; i++)
        if (!(made[i] = synor__calloc(1, sizeof **made))) {
            rc = synor__error(SYNOR_ENOMEM, "out of memory");
            goto free_made;
        }

    pthread_rwlock_wrlock(&reg->lock);
    /* A fresh index holding everything, at most half full: a taken id shows
     * as an occupied slot, whether registered before or earlier in v. */
    size_t cap = reg->index_cap ? reg->index_cap : 32;
    while ((reg->n + n) * 2 > cap)
        cap *= 2;
    entry **idx = synor__calloc(cap, sizeof *idx);
    if (!idx) {
        rc = synor__error(SYNOR_ENOMEM, "out of memory");
        goto unlock;
    }
    for (size_t i = 0; i < reg->n; i++)
        *index_slot(idx, cap, reg->v[i]->e.id) = reg->v[i];
    for (size_t i = 0; i < n; i++) {
        entry *en = made[i];
        synor__strlcpy(en->e.id, v[i].id, sizeof en->e.id);
        entry **slot = index_slot(idx, cap, en->e.id);
        if (*slot) {
            rc = synor__error(SYNOR_EEXIST,
                              "registry: a device with id \"%s\" is already registered",
                              v[i].id);
            *bad = i;
            synor__free(idx);
            goto unlock;
        }
        *slot = en;
    }
    if (reg->n + n > reg->cap) {
        size_t vcap = reg->cap ? reg->cap : 16;
        while (vcap < reg->n + n)
            vcap *= 2;
        entry **nv = synor__realloc(reg->v, vcap * sizeof *nv);
        if (!nv) {
            rc = synor__error(SYNOR_ENOMEM, "out of memory");
            synor__free(idx);
            goto unlock;
        }
        reg->v = nv;
        reg->cap = vcap;
    }
    /* Nothing below can fail. */
    for (size_t i = 0; i < n; i++) {
        entry *en = made[i];
        en->e.info = v[i].info ? *v[i].info : defaults;
        en->e.version = 1;
        en->e.device = synor_device_ref(v[i].dev);
        reg->v[reg->n++] = en;
        made[i] = NULL;
    }
    synor__free(reg->index);
    reg->index = idx;
    reg->index_cap = cap;
    rc = 0;
unlock:
    pthread_rwlock_unlock(&reg->lock);
free_made:
    for (size_t i = 0; i < n; i++)
        synor__free(made[i]);
    synor__free(made);
    return rc;
}

int synor_registry_update(synor_registry *reg, const char *id, unsigned fields,
                          const synor_registry_info *info)
{
    int rc;
    if (!reg || !id || !info)
        return synor__error(SYNOR_EINVAL, "synor_registry_update: NULL argument");
    if (fields & ~ALL_FIELDS)
        return synor__error(SYNOR_EINVAL, "registry: unknown update field bits 0x%x",
                            fields & ~ALL_FIELDS);
    if ((rc = validate_info(info, fields)))
        return rc;
    pthread_rwlock_wrlock(&reg->lock);
    entry *en = find(reg, id);
    if (!en) {
        pthread_rwlock_unlock(&reg->lock);
        return synor__error(SYNOR_ENOENT, "registry: no device with id \"%s\"", id);
    }
    synor_registry_info *d = &en->e.info;
    if (fields & SYNOR_UPDATE_STATUS)
        d->status = info->status;
    if (fields & SYNOR_UPDATE_UTILIZATION)
        d->utilization = info->utilization;
    if (fields & SYNOR_UPDATE_REPUTATION)
        d->reputation = info->reputation;
    if (fields & SYNOR_UPDATE_AVAILABILITY)
        d->availability = info->availability;
    if (fields & SYNOR_UPDATE_OWNER)
        memcpy(d->owner, info->owner, sizeof d->owner);
    if (fields & SYNOR_UPDATE_REGION)
        memcpy(d->region, info->region, sizeof d->region);
    if (fields & SYNOR_UPDATE_LOCATION)
        memcpy(d->location, info->location, sizeof d->location);
    en->e.version++;
    pthread_rwlock_unlock(&reg->lock);
    return 0;
}

int synor_registry_remove(synor_registry *reg, const char *id)
{
    if (!reg || !id)
        return synor__error(SYNOR_EINVAL, "synor_registry_remove: NULL argument");
    pthread_rwlock_wrlock(&reg->lock);
    entry *en = find(reg, id);
    if (!en) {
        pthread_rwlock_unlock(&reg->lock);
        return synor__error(SYNOR_ENOENT, "registry: no device with id \"%s\"", id);
    }
    /* Rebuild into a fresh index before touching anything, so an allocation
     * failure leaves the registry as it was. */
    entry **idx = synor__calloc(reg->index_cap, sizeof *idx);
    if (!idx) {
        pthread_rwlock_unlock(&reg->lock);
        return synor__error(SYNOR_ENOMEM, "out of memory");
    }
    size_t k = 0;
    for (size_t i = 0; i < reg->n; i++)
        if (reg->v[i] != en) {
            reg->v[k++] = reg->v[i];
            *index_slot(idx, reg->index_cap, reg->v[i]->e.id) = reg->v[i];
        }
    reg->n = k;
    synor__free(reg->index);
    reg->index = idx;
    pthread_rwlock_unlock(&reg->lock);
    synor_registry_entry_release(&en->e);
    synor__free(en);
    return 0;
}

static void snapshot(const entry *en, synor_registry_entry *out)
{
    *out = en->e;
    synor_device_ref(out->device);
}

int synor_registry_get(synor_registry *reg, const char *id, synor_registry_entry *out)
{
    if (!reg || !id || !out)
        return synor__error(SYNOR_EINVAL, "synor_registry_get: NULL argument");
    pthread_rwlock_rdlock(&reg->lock);
    entry *en = find(reg, id);
    if (en)
        snapshot(en, out);
    pthread_rwlock_unlock(&reg->lock);
    if (!en)
        return synor__error(SYNOR_ENOENT, "registry: no device with id \"%s\"", id);
    return 0;
}

size_t synor_registry_count(synor_registry *reg)
{
    pthread_rwlock_rdlock(&reg->lock);
    size_t n = reg->n;
    pthread_rwlock_unlock(&reg->lock);
    return n;
}

static int matches(const synor_registry_query *q, const synor_registry_entry *e)
{
    const synor_device *d = e->device;
    const synor_caps *c = synor_device_caps(d);
    if (q->by_kind && synor_device_kind(d) != q->kind)
        return 0;
    if (q->by_op) {
        synor_op_work w = {.type = q->op, .dtype = q->op_dtype};
        if (!synor_device_can_execute(d, &w))
            return 0;
    }
    if (c->mem_bytes < q->min_memory)
        return 0;
    if (q->by_throughput && synor_caps_peak(c, q->throughput_dtype, 0) < q->min_throughput)
        return 0;
    if (q->region && strcmp(q->region, e->info.region) != 0)
        return 0;
    if (q->owner && strcmp(q->owner, e->info.owner) != 0)
        return 0;
    if (q->status_mask && !(q->status_mask & (1u << e->info.status)))
        return 0;
    if (e->info.reputation < q->min_reputation)
        return 0;
    if (q->max_utilization > 0 && e->info.utilization > q->max_utilization)
        return 0;
    if (q->available_in && !synor_availability_allows(&e->info.availability, q->available_in))
        return 0;
    if (q->presence == 1 && synor_device_is_simulated(d))
        return 0;
    if (q->presence == 2 && !synor_device_is_simulated(d))
        return 0;
    return 1;
}

int synor_registry_query_run(synor_registry *reg, const synor_registry_query *q,
                             synor_registry_entry **out, size_t *n)
{
    if (!reg || !out || !n)
        return synor__error(SYNOR_EINVAL, "synor_registry_query_run: NULL argument");
    synor_registry_query all;
    if (!q) {
        memset(&all, 0, sizeof all);
        q = &all;
    }
    *out = NULL;
    *n = 0;
    pthread_rwlock_rdlock(&reg->lock);
    size_t count = 0;
    for (size_t i = 0; i < reg->n; i++)
        count += (size_t)matches(q, &reg->v[i]->e);
    synor_registry_entry *res = NULL;
    if (count) {
        res = synor__calloc(count, sizeof *res);
        if (!res) {
            pthread_rwlock_unlock(&reg->lock);
            return synor__error(SYNOR_ENOMEM, "out of memory");
        }
        size_t k = 0;
        for (size_t i = 0; i < reg->n; i++)
            if (matches(q, &reg->v[i]->e))
                snapshot(reg->v[i], &res[k++]);
    }
    pthread_rwlock_unlock(&reg->lock);
    *out = res;
    *n = count;
    return 0;
}
