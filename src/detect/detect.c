/* detect.c - runs the detection sources and collects their devices and
 * notes (see synor/detect.h). Each source lives in its own file. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "detect/detect_internal.h"

typedef struct found {
    synor_device *dev;
    char id[SYNOR_REGISTRY_ID_MAX];
} found;

struct synor_detection {
    found *devs;
    size_t n;
    char **notes;
    size_t n_notes;
};

int synor__detect_add(synor__detect_ctx *c, const char *prefix, synor_device *dev)
{
    synor_detection *d = c->out;
    found *nd = synor__realloc(d->devs, (d->n + 1) * sizeof *nd);
    if (!nd) {
        synor_device_unref(dev);
        return synor__error(SYNOR_ENOMEM, "out of memory");
    }
    d->devs = nd;
    size_t same = 0;
    for (size_t i = 0; i < d->n; i++)
        if (strncmp(d->devs[i].id + 6, prefix, strlen(prefix)) == 0)
            same++;
    nd[d->n].dev = dev;
    snprintf(nd[d->n].id, sizeof nd[d->n].id, "local-%s%zu", prefix, same);
    d->n++;
    return 0;
}

void synor__detect_note(synor__detect_ctx *c, const char *source, const char *fmt, ...)
{
    char text[600];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(text, sizeof text, fmt, ap);
    va_end(ap);
    synor__buf b;
    synor__buf_init(&b);
    synor__buf_printf(&b, "%s: %s", source, text);
    char *s = synor__buf_take(&b);
    if (!s)
        return;
    char **nn = synor__realloc(c->out->notes, (c->out->n_notes + 1) * sizeof *nn);
    if (!nn) {
        synor__free(s);
        return;
    }
    nn[c->out->n_notes++] = s;
    c->out->notes = nn;
}

void synor__caps_from_match(synor_caps *caps, const synor_profile *p, uint64_t live_mem)
{
    *caps = p->caps;
    if (live_mem)
        caps->mem_bytes = live_mem;
}

int synor_detect_run(const synor_catalog *catalog, unsigned sources, synor_detection **out)
{
    return synor_detect_run_cached(catalog, sources, NULL, out);
}

int synor_detect_default_cache_path(char *buf, size_t size)
{
    return synor__xdg_path(SYNOR__XDG_CACHE, "host-measure.json", buf, size);
}

int synor_detect_run_cached(const synor_catalog *catalog, unsigned sources,
                            const char *measure_cache, synor_detection **out)
{
    if (!out)
        return synor__error(SYNOR_EINVAL, "synor_detect_run: out is NULL");
    synor_detection *d = synor__calloc(1, sizeof *d);
    if (!d)
        return synor__error(SYNOR_ENOMEM, "out of memory");
    synor__detect_ctx c = {.out = d, .cat = catalog, .sources = sources,
                           .measure_cache = measure_cache};
    int rc = 0;
    if (sources & SYNOR_DETECT_HOST)
        rc = synor__detect_host(&c);
    if (!rc && (sources & SYNOR_DETECT_CUDA))
        rc = synor__detect_nvidia(&c);
    if (!rc && (sources & SYNOR_DETECT_OPENCL))
        rc = synor__detect_opencl(&c);
    if (rc) {
        synor_detection_destroy(d);
        return rc;
    }
    *out = d;
    return 0;
}

void synor_detection_destroy(synor_detection *d)
{
    if (!d)
        return;
    for (size_t i = 0; i < d->n; i++)
        synor_device_unref(d->devs[i].dev);
    for (size_t i = 0; i < d->n_notes; i++)
        synor__free(d->notes[i]);
    synor__free(d->devs);
    synor__free(d->notes);
    synor__free(d);
}

size_t synor_detection_count(const synor_detection *d) { return d ? d->n : 0; }

synor_device *synor_detection_device(const synor_detection *d, size_t i)
{
    return d && i < d->n ? d->devs[i].dev : NULL;
}

const char *synor_detection_device_id(const synor_detection *d, size_t i)
{
    return d && i < d->n ? d->devs[i].id : NULL;
}

size_t synor_detection_note_count(const synor_detection *d) { return d ? d->n_notes : 0; }

const char *synor_detection_note(const synor_detection *d, size_t i)
{
    return d && i < d->n_notes ? d->notes[i] : NULL;
}

int synor_detection_register(const synor_detection *d, synor_registry *reg, const char *region)
{
    if (!d || !reg)
        return synor__error(SYNOR_EINVAL, "synor_detection_register: NULL argument");
    synor_registry_info info;
    synor_registry_info_init(&info);
    synor__strlcpy(info.owner, "local", sizeof info.owner);
    synor__strlcpy(info.location, "this machine", sizeof info.location);
    if (region)
        synor__strlcpy(info.region, region, sizeof info.region);
    for (size_t i = 0; i < d->n; i++) {
        int rc = synor_registry_add(reg, d->devs[i].id, d->devs[i].dev, &info);
        if (rc) {
            char msg[1024];
            synor__strlcpy(msg, synor_errmsg(), sizeof msg);
            for (size_t j = 0; j < i; j++)
                synor_registry_remove(reg, d->devs[j].id);
            return synor__error(rc, "%s", msg);
        }
    }
    return 0;
}
