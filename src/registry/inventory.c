/* inventory.c - inventory files: fleets of (remote) devices described by
 * profile, owner, region, status, reputation and availability, loaded into a
 * registry all or nothing.
 *
 * Every entry is validated and every device created before any is
 * registered, then all are registered at once (synor__registry_add_all):
 * an id that is taken, or memory that runs out, leaves the registry as it
 * began. */
#include <stdio.h>
#include <string.h>

#include "json/json.h"
#include "registry/registry_internal.h"
#include "synor/registry.h"

/* Devices one file may register, in one entry or in all together: a
 * count multiplies a few bytes of file into a simulated device each. */
#define MAX_COUNT 100000

typedef struct pending {
    char id[SYNOR_REGISTRY_ID_MAX];
    synor_device *dev;
    synor_registry_info info;
    const synor__jval *at; /* the entry's "id", for messages */
    size_t entry;          /* its index in "devices" */
} pending;

static int copy_text(const synor__jdoc *d, const synor__jval *obj, const char *path,
                     const char *key, char *dst, size_t n)
{
    synor__jval *v;
    int rc = synor__json_member(d, obj, path, key, SYNOR__J_STRING, 0, &v);
    if (rc || !v)
        return rc;
    if (v->u.str.len >= n) {
        char p[128];
        snprintf(p, sizeof p, "%s.%s", path, key);
        return synor__json_fail(d, v, SYNOR_ERANGE, p, "longer than %zu characters", n - 1);
    }
    memcpy(dst, v->u.str.s, v->u.str.len + 1);
    return 0;
}

/* Parses one entry into *out (count devices); `before` devices come from
 * the entries before it. */
static int parse_entry(const synor__jdoc *d, const synor__jval *e, const char *path,
                       const synor_catalog *cat, size_t before, pending **out, size_t *n_out)
{
    static const char *const keys[] = {"id",          "profile",    "count",       "owner",
                                       "region",      "location",   "status",      "utilization",
                                       "reputation",  "availability", NULL};
    int rc;
    synor__jval *v;
    char p[128];
    if ((rc = synor__json_expect(d, e, path, SYNOR__J_OBJECT)) ||
        (rc = synor__json_check_keys(d, e, path, keys)))
        return rc;
    synor_registry_info info;
    synor_registry_info_init(&info);
    char id[SYNOR_REGISTRY_ID_MAX] = "";
    synor__jval *idv;
    if ((rc = synor__json_member(d, e, path, "id", SYNOR__J_STRING, 1, &idv)) ||
        (rc = copy_text(d, e, path, "id", id, sizeof id - 8)) ||
        (rc = copy_text(d, e, path, "owner", info.owner, sizeof info.owner)) ||
        (rc = copy_text(d, e, path, "region", info.region, sizeof info.region)) ||
        (rc = copy_text(d, e, path, "location", info.location, sizeof info.location)))
        return rc;
    if ((rc = synor__json_member(d, e, path, "profile", SYNOR__J_STRING, 1, &v)))
        return rc;
    const synor_profile *prof = synor_catalog_find(cat, v->u.str.s);
    if (!prof) {
        snprintf(p, sizeof p, "%s.profile", path);
        return synor__json_fail(d, v, SYNOR_ENOENT, p, "no profile with id \"%s\"", v->u.str.s);
    }
    int64_t count = 1, rep = info.reputation;
    if ((v = synor__json_get(e, "count"))) {
        snprintf(p, sizeof p, "%s.count", path);
        if ((rc = synor__json_int(d, v, p, 1, MAX_COUNT, &count)))
            return rc;
    }
    if (before + (size_t)count > MAX_COUNT)
        return synor__json_fail(d, v ? v : e, SYNOR_ERANGE, v ? p : path,
                                "%lld more devices would make %zu in this file; at most %d",
                                (long long)count, before + (size_t)count, MAX_COUNT);
    if ((v = synor__json_get(e, "reputation"))) {
        snprintf(p, sizeof p, "%s.reputation", path);
        if ((rc = synor__json_int(d, v, p, 0, 100, &rep)))
            return rc;
        info.reputation = (int)rep;
    }
    if ((v = synor__json_get(e, "utilization"))) {
        snprintf(p, sizeof p, "%s.utilization", path);
        if ((rc = synor__json_number(d, v, p, 0, 1, &info.utilization)))
            return rc;
    }
    if ((rc = synor__json_member(d, e, path, "status", SYNOR__J_STRING, 0, &v)))
        return rc;
    if (v && synor_device_status_from_name(v->u.str.s, &info.status)) {
        snprintf(p, sizeof p, "%s.status", path);
        return synor__json_fail(d, v, SYNOR_ESCHEMA, p, "%s", synor_errmsg());
    }
    if ((rc = synor__json_member(d, e, path, "availability", SYNOR__J_STRING, 0, &v)))
        return rc;
    if (v && synor_availability_parse(v->u.str.s, &info.availability)) {
        snprintf(p, sizeof p, "%s.availability", path);
        return synor__json_fail(d, v, SYNOR_ESCHEMA, p, "%s", synor_errmsg());
    }
    pending *list = synor__calloc((size_t)count, sizeof *list);
    if (!list)
        return synor__error(SYNOR_ENOMEM, "out of memory");
    for (int64_t i = 0; i < count; i++) {
        if (count == 1)
            snprintf(list[i].id, sizeof list[i].id, "%s", id);
        else
            snprintf(list[i].id, sizeof list[i].id, "%s-%lld", id, (long long)i);
        list[i].info = info;
        list[i].at = idv;
        if ((rc = synor_device_create_simulated(prof, NULL, &list[i].dev))) {
            for (int64_t k = 0; k < i; k++)
                synor_device_unref(list[k].dev);
            synor__free(list);
            return rc;
        }
    }
    *out = list;
    *n_out = (size_t)count;
    return 0;
}

int synor_registry_load_inventory_string(synor_registry *reg, const synor_catalog *cat,
                                         const char *text, size_t len, const char *name)
{
    if (!reg || !cat || !text || !name)
        return synor__error(SYNOR_EINVAL, "synor_registry_load_inventory: NULL argument");
    synor__jdoc *d;
    int rc = synor__json_parse(text, len, name, &d);
    if (rc)
        return rc;
    const synor__jval *root = synor__jdoc_root(d);
    static const char *const keys[] = {"format", "devices", NULL};
    synor__jval *fmt, *arr;
    pending *all = NULL;
    synor__registry_new *adds = NULL;
    size_t n = 0, cap = 0;
    if ((rc = synor__json_expect(d, root, "(top level)", SYNOR__J_OBJECT)) ||
        (rc = synor__json_check_keys(d, root, "(top level)", keys)) ||
        (rc = synor__json_member(d, root, "(top level)", "format", SYNOR__J_STRING, 1, &fmt)) ||
        (rc = synor__json_member(d, root, "(top level)", "devices", SYNOR__J_ARRAY, 1, &arr)))
        goto out;
    if (strcmp(fmt->u.str.s, "synor-inventory/1") != 0) {
        rc = synor__json_fail(d, fmt, SYNOR_ESCHEMA, "format",
                              "unsupported format \"%s\" (expected \"synor-inventory/1\")",
                              fmt->u.str.s);
        goto out;
    }
    for (size_t i = 0; i < arr->u.arr.n; i++) {
        char path[48];
        snprintf(path, sizeof path, "devices[%zu]", i);
        pending *part = NULL;
        size_t np = 0;
        if ((rc = parse_entry(d, arr->u.arr.items[i], path, cat, n, &part, &np)))
            goto out;
        if (n + np > cap) {
            size_t nc = cap ? cap * 2 : 64;
            while (nc < n + np)
                nc *= 2;
            pending *na = synor__realloc(all, nc * sizeof *na);
            if (!na) {
                for (size_t k = 0; k < np; k++)
                    synor_device_unref(part[k].dev);
                synor__free(part);
                rc = synor__error(SYNOR_ENOMEM, "out of memory");
                goto out;
            }
            all = na;
            cap = nc;
        }
        for (size_t k = 0; k < np; k++)
            part[k].entry = i;
        memcpy(all + n, part, np * sizeof *part);
        n += np;
        synor__free(part);
    }
    adds = synor__calloc(n ? n : 1, sizeof *adds);
    if (!adds) {
        rc = synor__error(SYNOR_ENOMEM, "out of memory");
        goto out;
    }
    for (size_t i = 0; i < n; i++)
        adds[i] = (synor__registry_new){all[i].id, all[i].dev, &all[i].info};
    size_t bad;
    if ((rc = synor__registry_add_all(reg, adds, n, &bad)) && bad < n) {
        char msg[900], path[48];
        synor__strlcpy(msg, synor_errmsg(), sizeof msg);
        snprintf(path, sizeof path, "devices[%zu].id", all[bad].entry);
        rc = synor__json_fail(d, all[bad].at, rc, path, "%s", msg);
    }
out:
    for (size_t i = 0; i < n; i++)
        synor_device_unref(all[i].dev);
    synor__free(adds);
    synor__free(all);
    synor__jdoc_free(d);
    return rc;
}

int synor_registry_load_inventory(synor_registry *reg, const synor_catalog *cat,
                                  const char *path)
{
    if (!path)
        return synor__error(SYNOR_EINVAL, "synor_registry_load_inventory: path is NULL");
    char *text;
    size_t len;
    int rc = synor__read_file(path, &text, &len);
    if (rc)
        return rc;
    rc = synor_registry_load_inventory_string(reg, cat, text, len, path);
    synor__free(text);
    return rc;
}
