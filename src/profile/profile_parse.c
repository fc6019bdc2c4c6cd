/* profile_parse.c - one profile object of a profile file into a
 * synor_profile, validating every field (docs/PROFILES.md is the contract).
 *
 * Each error names file:line:column and the field path. The profile is built
 * in a private allocation and handed over only when complete, so a failure
 * leaves nothing behind. Units: files use TFLOPS/TOPS, GB/s, Gbit/s, watts
 * and microseconds; synor_caps uses SI base units. */
#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "profile/profile_internal.h"

#define MAX_TFLOPS 1e9    /* anything above is a typo, not a processor */
#define MAX_GB_S 1e9
#define MAX_WATTS 1e6

typedef struct pctx {
    const synor__jdoc *d;
    const char *path; /* "profiles[3]" */
} pctx;

/* Field path "path.key" (truncated if absurdly long: it is only a message). */
static void sub(char *buf, size_t n, const char *path, const char *key)
{
    snprintf(buf, n, "%s.%s", path, key);
}

static int dup_string(const pctx *c, const synor__jval *v, const char *path, const char **out)
{
    char *s = synor__strdup(v->u.str.s);
    if (!s)
        return synor__json_fail(c->d, v, SYNOR_ENOMEM, path, "out of memory");
    *out = s;
    return 0;
}

/* A required or optional string member, copied. */
static int get_string(const pctx *c, const synor__jval *obj, const char *path, const char *key,
                      int required, const char **out)
{
    synor__jval *v;
    int rc = synor__json_member(c->d, obj, path, key, SYNOR__J_STRING, required, &v);
    if (rc || !v)
        return rc;
    char p[256];
    sub(p, sizeof p, path, key);
    if (v->u.str.len == 0)
        return synor__json_fail(c->d, v, SYNOR_ESCHEMA, p, "must not be empty");
    return dup_string(c, v, p, out);
}

static int get_number(const pctx *c, const synor__jval *obj, const char *path, const char *key,
                      double min, double max, double *out)
{
    synor__jval *v = synor__json_get(obj, key);
    if (!v)
        return 0;
    char p[256];
    sub(p, sizeof p, path, key);
    return synor__json_number(c->d, v, p, min, max, out);
}

static int get_int(const pctx *c, const synor__jval *obj, const char *path, const char *key,
                   int64_t min, int64_t max, int64_t *out)
{
    synor__jval *v = synor__json_get(obj, key);
    if (!v)
        return 0;
    char p[256];
    sub(p, sizeof p, path, key);
    return synor__json_int(c->d, v, p, min, max, out);
}

/* Looks up a name with one of the synor_*_from_name parsers, rewriting its
 * message to carry the position. */
#define PARSE_NAME(c, v, p, fn, out)                                                  \
    (fn((v)->u.str.s, (out)) ? synor__json_fail((c)->d, (v), SYNOR_ESCHEMA, (p), "%s", \
                                                synor_errmsg())                       \
                             : 0)

static int parse_type(const pctx *c, const synor__jval *t, const char *path,
                      synor_processor_type *pt)
{
    synor__jval *v;
    char p[256];
    int rc;
    if ((rc = synor__json_member(c->d, t, path, "kind", SYNOR__J_STRING, 1, &v)))
        return rc;
    sub(p, sizeof p, path, "kind");
    if ((rc = PARSE_NAME(c, v, p, synor_kind_from_name, &pt->kind)))
        return rc;

    static const char *const k_cpu[] = {"kind", "isa", "features", "cores", "threads", "base_ghz",
                                        NULL};
    static const char *const k_gpu[] = {"kind", "api", "compute_capability", "gfx", NULL};
    static const char *const k_tpu[] = {"kind", "version", NULL};
    static const char *const k_npu[] = {"kind", "variant", "cores", "version", "tops", NULL};
    static const char *const k_vendor[] = {"kind", "vendor", NULL};
    static const char *const k_lpu[] = {"kind", NULL};
    static const char *const k_custom[] = {"kind", "vendor", "model", NULL};
    const char *const *allowed = k_lpu;
    switch (pt->kind) {
    case SYNOR_KIND_CPU:
    case SYNOR_KIND_WASM: allowed = k_cpu; break;
    case SYNOR_KIND_GPU:
    case SYNOR_KIND_WEBGPU: allowed = k_gpu; break;
    case SYNOR_KIND_TPU: allowed = k_tpu; break;
    case SYNOR_KIND_NPU: allowed = k_npu; break;
    case SYNOR_KIND_FPGA:
    case SYNOR_KIND_DSP: allowed = k_vendor; break;
    case SYNOR_KIND_CUSTOM: allowed = k_custom; break;
    default: break;
    }
    if ((rc = synor__json_check_keys(c->d, t, path, allowed)))
        return rc;

    int64_t iv = 0;
    double dv = 0;
    switch (pt->kind) {
    case SYNOR_KIND_CPU:
    case SYNOR_KIND_WASM:
        if ((rc = synor__json_member(c->d, t, path, "isa", SYNOR__J_STRING, 1, &v)))
            return rc;
        sub(p, sizeof p, path, "isa");
        if ((rc = PARSE_NAME(c, v, p, synor_cpu_isa_from_name, &pt->isa)))
            return rc;
        if ((rc = synor__json_member(c->d, t, path, "features", SYNOR__J_ARRAY, 0, &v)))
            return rc;
        for (size_t i = 0; v && i < v->u.arr.n; i++) {
            synor__jval *f = v->u.arr.items[i];
            snprintf(p, sizeof p, "%s.features[%zu]", path, i);
            uint32_t bit;
            if ((rc = synor__json_expect(c->d, f, p, SYNOR__J_STRING)) ||
                (rc = PARSE_NAME(c, f, p, synor_cpu_feature_from_name, &bit)))
                return rc;
            pt->cpu_features |= bit;
        }
        if ((rc = get_int(c, t, path, "cores", 0, 1 << 20, &iv)))
            return rc;
        pt->cores = (uint32_t)iv;
        iv = 0;
        if ((rc = get_int(c, t, path, "threads", 0, 1 << 22, &iv)))
            return rc;
        pt->threads = (uint32_t)iv;
        if ((rc = get_number(c, t, path, "base_ghz", 0, 100, &pt->base_ghz)))
            return rc;
        break;
    case SYNOR_KIND_GPU:
    case SYNOR_KIND_WEBGPU:
        if ((rc = synor__json_member(c->d, t, path, "api", SYNOR__J_STRING, 1, &v)))
            return rc;
        sub(p, sizeof p, path, "api");
        if ((rc = PARSE_NAME(c, v, p, synor_gpu_api_from_name, &pt->gpu_api)))
            return rc;
        if ((rc = synor__json_member(c->d, t, path, "compute_capability", SYNOR__J_STRING, 0, &v)))
            return rc;
        if (v) {
            sub(p, sizeof p, path, "compute_capability");
            int ma, mi;
            char tail;
            if (sscanf(v->u.str.s, "%d.%d%c", &ma, &mi, &tail) != 2 || ma < 1 || ma > 99 ||
                mi < 0 || mi > 9)
                return synor__json_fail(c->d, v, SYNOR_ESCHEMA, p,
                                        "\"%s\" is not a compute capability like \"9.0\"",
                                        v->u.str.s);
            if (pt->gpu_api != SYNOR_GPU_CUDA)
                return synor__json_fail(c->d, v, SYNOR_ESCHEMA, p, "only applies to api \"cuda\"");
            pt->cc_major = ma;
            pt->cc_minor = mi;
        }
        if ((rc = get_int(c, t, path, "gfx", 0, 100000, &iv)))
            return rc;
        pt->gfx_version = (uint32_t)iv;
        break;
    case SYNOR_KIND_TPU:
        if ((rc = synor__json_member(c->d, t, path, "version", SYNOR__J_STRING, 1, &v)))
            return rc;
        sub(p, sizeof p, path, "version");
        if ((rc = PARSE_NAME(c, v, p, synor_tpu_version_from_name, &pt->tpu)))
            return rc;
        break;
    case SYNOR_KIND_NPU:
        if ((rc = synor__json_member(c->d, t, path, "variant", SYNOR__J_STRING, 1, &v)))
            return rc;
        sub(p, sizeof p, path, "variant");
        if ((rc = PARSE_NAME(c, v, p, synor_npu_variant_from_name, &pt->npu)))
            return rc;
        if ((rc = get_int(c, t, path, "cores", 0, 1 << 20, &iv)))
            return rc;
        pt->npu_cores = (uint32_t)iv;
        iv = 0;
        if ((rc = get_int(c, t, path, "version", 0, 1 << 20, &iv)))
            return rc;
        pt->npu_version = (uint32_t)iv;
        if ((rc = get_number(c, t, path, "tops", 0, MAX_TFLOPS, &dv)))
            return rc;
        pt->npu_tops = dv;
        break;
    case SYNOR_KIND_FPGA:
    case SYNOR_KIND_DSP:
        if ((rc = synor__json_member(c->d, t, path, "vendor", SYNOR__J_STRING, 1, &v)))
            return rc;
        sub(p, sizeof p, path, "vendor");
        if (pt->kind == SYNOR_KIND_FPGA)
            rc = PARSE_NAME(c, v, p, synor_fpga_vendor_from_name, &pt->fpga);
        else
            rc = PARSE_NAME(c, v, p, synor_dsp_vendor_from_name, &pt->dsp);
        if (rc)
            return rc;
        break;
    case SYNOR_KIND_CUSTOM:
        if ((rc = synor__json_member(c->d, t, path, "vendor", SYNOR__J_STRING, 1, &v)))
            return rc;
        synor__strlcpy(pt->vendor, v->u.str.s, sizeof pt->vendor);
        if ((rc = synor__json_member(c->d, t, path, "model", SYNOR__J_STRING, 1, &v)))
            return rc;
        synor__strlcpy(pt->model, v->u.str.s, sizeof pt->model);
        break;
    default:
        break;
    }
    return 0;
}

static int parse_compute(const pctx *c, const synor__jval *o, const char *path, synor_profile *pr)
{
    static const char *const keys[] = {"fp64", "fp32", "tf32", "fp16", "bf16",
                                       "fp8",  "int8", "int4", "source", NULL};
    int rc;
    char p[256];
    if ((rc = synor__json_check_keys(c->d, o, path, keys)))
        return rc;
    if ((rc = get_string(c, o, path, "source", 1, &pr->source_compute)))
        return rc;
    for (int t = 0; t < SYNOR_DTYPE_COUNT; t++) {
        const char *name = synor_dtype_name((synor_dtype)t);
        synor__jval *v = synor__json_get(o, name);
        if (!v)
            continue;
        sub(p, sizeof p, path, name);
        double dense = 0, sparse = 0;
        if (v->type == SYNOR__J_NUMBER) {
            if ((rc = synor__json_number(c->d, v, p, 0, MAX_TFLOPS, &dense)))
                return rc;
            sparse = dense;
        } else if (v->type == SYNOR__J_OBJECT) {
            static const char *const dk[] = {"dense", "sparse", NULL};
            synor__jval *dv, *sv;
            if ((rc = synor__json_check_keys(c->d, v, p, dk)) ||
                (rc = synor__json_member(c->d, v, p, "dense", SYNOR__J_NUMBER, 1, &dv)) ||
                (rc = synor__json_member(c->d, v, p, "sparse", SYNOR__J_NUMBER, 0, &sv)))
                return rc;
            char q[300];
            snprintf(q, sizeof q, "%s.dense", p);
            if ((rc = synor__json_number(c->d, dv, q, 0, MAX_TFLOPS, &dense)))
                return rc;
            sparse = dense;
            if (sv) {
                snprintf(q, sizeof q, "%s.sparse", p);
                if ((rc = synor__json_number(c->d, sv, q, 0, MAX_TFLOPS, &sparse)))
                    return rc;
                if (sparse < dense)
                    return synor__json_fail(c->d, sv, SYNOR_ERANGE, q,
                                            "sparse peak %g is below the dense peak %g", sparse,
                                            dense);
            }
        } else {
            return synor__json_fail(c->d, v, SYNOR_ESCHEMA, p,
                                    "expected a number or {\"dense\", \"sparse\"}, found %s",
                                    synor__jtype_name(v->type));
        }
        pr->caps.peak[t].dense = dense * 1e12;
        pr->caps.peak[t].sparse = sparse * 1e12;
    }
    return 0;
}

static int parse_memory(const pctx *c, const synor__jval *o, const char *path, synor_profile *pr)
{
    static const char *const keys[] = {"capacity", "bandwidth_gb_s", "type", "source", NULL};
    int rc;
    char p[256];
    synor__jval *v;
    if ((rc = synor__json_check_keys(c->d, o, path, keys)) ||
        (rc = get_string(c, o, path, "source", 1, &pr->source_memory)))
        return rc;
    if ((rc = synor__json_member(c->d, o, path, "capacity", SYNOR__J_STRING, 1, &v)))
        return rc;
    sub(p, sizeof p, path, "capacity");
    if (synor__parse_size(v->u.str.s, &pr->caps.mem_bytes))
        return synor__json_fail(c->d, v, SYNOR_ESCHEMA, p, "%s", synor_errmsg());
    if ((rc = synor__json_member(c->d, o, path, "bandwidth_gb_s", SYNOR__J_NUMBER, 1, &v)))
        return rc;
    sub(p, sizeof p, path, "bandwidth_gb_s");
    double bw;
    if ((rc = synor__json_number(c->d, v, p, 0, MAX_GB_S, &bw)))
        return rc;
    pr->caps.mem_bandwidth = bw * 1e9;
    if ((rc = synor__json_member(c->d, o, path, "type", SYNOR__J_STRING, 1, &v)))
        return rc;
    sub(p, sizeof p, path, "type");
    return PARSE_NAME(c, v, p, synor_mem_type_from_name, &pr->caps.mem_type);
}

static int parse_power(const pctx *c, const synor__jval *o, const char *path, synor_profile *pr)
{
    static const char *const keys[] = {"idle_w", "peak_w", "source", NULL};
    int rc;
    synor__jval *v;
    char p[256];
    if ((rc = synor__json_check_keys(c->d, o, path, keys)) ||
        (rc = get_string(c, o, path, "source", 1, &pr->source_power)) ||
        (rc = synor__json_member(c->d, o, path, "idle_w", SYNOR__J_NUMBER, 1, &v)) ||
        (rc = get_number(c, o, path, "idle_w", 0, MAX_WATTS, &pr->caps.idle_watts)) ||
        (rc = synor__json_member(c->d, o, path, "peak_w", SYNOR__J_NUMBER, 1, &v)) ||
        (rc = get_number(c, o, path, "peak_w", 0, MAX_WATTS, &pr->caps.peak_watts)))
        return rc;
    sub(p, sizeof p, path, "idle_w");
    if (pr->caps.idle_watts > pr->caps.peak_watts)
        return synor__json_fail(c->d, synor__json_get(o, "idle_w"), SYNOR_ERANGE, p,
                                "idle power %g W is above the peak power %g W",
                                pr->caps.idle_watts, pr->caps.peak_watts);
    return 0;
}

static int parse_links(const pctx *c, const synor__jval *o, const char *path, synor_profile *pr)
{
    static const char *const keys[] = {"pcie_gen",       "pcie_lanes", "nvlink_gb_s",
                                       "unified_memory", "network_gbit_s", "source", NULL};
    int rc;
    int64_t iv = 0;
    double dv = 0;
    synor__jval *v;
    if ((rc = synor__json_check_keys(c->d, o, path, keys)) ||
        (rc = get_string(c, o, path, "source", 1, &pr->source_links)))
        return rc;
    if ((rc = get_int(c, o, path, "pcie_gen", 0, 7, &iv)))
        return rc;
    pr->caps.pcie_gen = (int)iv;
    iv = 0;
    if ((rc = get_int(c, o, path, "pcie_lanes", 0, 128, &iv)))
        return rc;
    pr->caps.pcie_lanes = (int)iv;
    if ((rc = get_number(c, o, path, "nvlink_gb_s", 0, MAX_GB_S, &dv)))
        return rc;
    pr->caps.nvlink_bandwidth = dv * 1e9;
    dv = 0;
    if ((rc = get_number(c, o, path, "network_gbit_s", 0, MAX_GB_S, &dv)))
        return rc;
    pr->caps.network_bandwidth = dv * 1e9 / 8;
    if ((rc = synor__json_member(c->d, o, path, "unified_memory", SYNOR__J_BOOL, 0, &v)))
        return rc;
    pr->caps.unified_memory = v ? v->u.boolean : 0;
    return 0;
}

static int parse_latency(const pctx *c, const synor__jval *o, const char *path, synor_profile *pr)
{
    static const char *const keys[] = {"launch_us", "source", NULL};
    int rc;
    synor__jval *v;
    double us = 0;
    if ((rc = synor__json_check_keys(c->d, o, path, keys)) ||
        (rc = get_string(c, o, path, "source", 1, &pr->source_latency)) ||
        (rc = synor__json_member(c->d, o, path, "launch_us", SYNOR__J_NUMBER, 1, &v)) ||
        (rc = get_number(c, o, path, "launch_us", 0, 1e9, &us)))
        return rc;
    pr->caps.launch_latency = us * 1e-6;
    return 0;
}

/* An array of names parsed with fn into a bit set. */

static int parse_name_set(const pctx *c, const synor__jval *arr, const char *path,
                          int (*fn)(const char *, void *), uint64_t *set)
{
    int rc;
    char p[256];
    for (size_t i = 0; i < arr->u.arr.n; i++) {
        synor__jval *e = arr->u.arr.items[i];
        snprintf(p, sizeof p, "%s[%zu]", path, i);
        int idx = 0;
        if ((rc = synor__json_expect(c->d, e, p, SYNOR__J_STRING)))
            return rc;
        if (fn(e->u.str.s, &idx))
            return synor__json_fail(c->d, e, SYNOR_ESCHEMA, p, "%s", synor_errmsg());
        if (*set & ((uint64_t)1 << idx))
            return synor__json_fail(c->d, e, SYNOR_ESCHEMA, p, "\"%s\" is listed twice",
                                    e->u.str.s);
        *set |= (uint64_t)1 << idx;
    }
    return 0;
}

/* Adapters: the enum parsers write an enum; these write an int. */
static int op_fn(const char *n, void *o)
{
    synor_op_type t;
    int rc = synor_op_type_from_name(n, &t);
    *(int *)o = (int)t;
    return rc;
}
static int dtype_fn(const char *n, void *o)
{
    synor_dtype t;
    int rc = synor_dtype_from_name(n, &t);
    *(int *)o = (int)t;
    return rc;
}
static int trait_fn(const char *n, void *o)
{
    synor_trait t;
    int rc = synor_trait_from_name(n, &t);
    *(int *)o = (int)t;
    return rc;
}

static int parse_corrections(const pctx *c, const synor__jval *arr, const char *path,
                             synor_profile *pr)
{
    if (arr->u.arr.n == 0)
        return 0;
    synor_correction *cs = synor__calloc(arr->u.arr.n, sizeof *cs);
    if (!cs)
        return synor__json_fail(c->d, arr, SYNOR_ENOMEM, path, "out of memory");
    pr->corrections = cs;
    pr->n_corrections = arr->u.arr.n;
    static const char *const keys[] = {"field", "seed", "value", "note", NULL};
    char p[256];
    int rc;
    for (size_t i = 0; i < arr->u.arr.n; i++) {
        synor__jval *e = arr->u.arr.items[i], *v;
        snprintf(p, sizeof p, "%s[%zu]", path, i);
        if ((rc = synor__json_expect(c->d, e, p, SYNOR__J_OBJECT)) ||
            (rc = synor__json_check_keys(c->d, e, p, keys)) ||
            (rc = get_string(c, e, p, "field", 1, &cs[i].field)) ||
            (rc = get_string(c, e, p, "note", 1, &cs[i].note)) ||
            (rc = synor__json_member(c->d, e, p, "seed", SYNOR__J_NUMBER, 1, &v)) ||
            (rc = get_number(c, e, p, "seed", -1e300, 1e300, &cs[i].seed_value)) ||
            (rc = synor__json_member(c->d, e, p, "value", SYNOR__J_NUMBER, 1, &v)) ||
            (rc = get_number(c, e, p, "value", -1e300, 1e300, &cs[i].value)))
            return rc;
    }
    return 0;
}

static int valid_id(const char *s)
{
    size_t n = strlen(s);
    if (n == 0 || n > 47)
        return 0;
    for (; *s; s++)
        if (!((*s >= 'a' && *s <= 'z') || (*s >= '0' && *s <= '9') || *s == '-'))
            return 0;
    return 1;
}

static int parse_body(const pctx *c, const synor__jval *o, synor_profile *pr)
{
    static const char *const keys[] = {"id",         "name",        "vendor",      "type",
                                       "match",      "compute",     "memory",      "power",
                                       "links",      "latency",     "efficiency",  "operations",
                                       "data_types", "optimal_for", "corrections", "notes",
                                       NULL};
    const char *path = c->path;
    char p[256];
    int rc;
    synor__jval *v;
    if ((rc = synor__json_expect(c->d, o, path, SYNOR__J_OBJECT)) ||
        (rc = synor__json_check_keys(c->d, o, path, keys)) ||
        (rc = get_string(c, o, path, "id", 1, &pr->id)))
        return rc;
    if (!valid_id(pr->id)) {
        sub(p, sizeof p, path, "id");
        return synor__json_fail(c->d, synor__json_get(o, "id"), SYNOR_ESCHEMA, p,
                                "\"%s\" is not a valid id (lower-case letters, digits and '-', "
                                "at most 47 characters)",
                                pr->id);
    }
    if ((rc = get_string(c, o, path, "name", 1, &pr->name)) ||
        (rc = get_string(c, o, path, "vendor", 1, &pr->vendor)) ||
        (rc = get_string(c, o, path, "notes", 0, &pr->notes)))
        return rc;

    if ((rc = synor__json_member(c->d, o, path, "type", SYNOR__J_OBJECT, 1, &v)))
        return rc;
    sub(p, sizeof p, path, "type");
    if ((rc = parse_type(c, v, p, &pr->type)))
        return rc;

    if ((rc = synor__json_member(c->d, o, path, "match", SYNOR__J_ARRAY, 0, &v)))
        return rc;
    if (v && v->u.arr.n) {
        const char **m = synor__calloc(v->u.arr.n, sizeof *m);
        if (!m)
            return synor__error(SYNOR_ENOMEM, "out of memory");
        pr->match = m;
        pr->n_match = v->u.arr.n;
        for (size_t i = 0; i < v->u.arr.n; i++) {
            synor__jval *e = v->u.arr.items[i];
            snprintf(p, sizeof p, "%s.match[%zu]", path, i);
            if ((rc = synor__json_expect(c->d, e, p, SYNOR__J_STRING)))
                return rc;
            if (e->u.str.len < 3)
                return synor__json_fail(c->d, e, SYNOR_ESCHEMA, p,
                                        "match string \"%s\" is too short to be specific",
                                        e->u.str.s);
            if ((rc = dup_string(c, e, p, &m[i])))
                return rc;
        }
    }

    struct {
        const char *key;
        int required;
        int (*fn)(const pctx *, const synor__jval *, const char *, synor_profile *);
    } sections[] = {{"compute", 1, parse_compute},
                    {"memory", 1, parse_memory},
                    {"power", 1, parse_power},
                    {"links", 0, parse_links},
                    {"latency", 0, parse_latency}};
    for (size_t i = 0; i < SYNOR__ARRAY_LEN(sections); i++) {
        if ((rc = synor__json_member(c->d, o, path, sections[i].key, SYNOR__J_OBJECT,
                                     sections[i].required, &v)))
            return rc;
        sub(p, sizeof p, path, sections[i].key);
        if (v && (rc = sections[i].fn(c, v, p, pr)))
            return rc;
    }

    pr->caps.efficiency = SYNOR__DEFAULT_EFFICIENCY;
    if ((rc = get_number(c, o, path, "efficiency", 0, 1, &pr->caps.efficiency)))
        return rc;
    if (pr->caps.efficiency <= 0) {
        sub(p, sizeof p, path, "efficiency");
        return synor__json_fail(c->d, synor__json_get(o, "efficiency"), SYNOR_ERANGE, p,
                                "must be above 0");
    }

    v = synor__json_get(o, "operations");
    sub(p, sizeof p, path, "operations");
    if (!v)
        return synor__json_fail(c->d, o, SYNOR_ESCHEMA, path,
                                "missing required field \"operations\"");
    if (v->type == SYNOR__J_STRING && strcmp(v->u.str.s, "all") == 0) {
        pr->caps.ops = SYNOR_OP_SET_ALL;
    } else if (v->type == SYNOR__J_ARRAY) {
        uint64_t set = 0;
        if ((rc = parse_name_set(c, v, p, op_fn, &set)))
            return rc;
        pr->caps.ops = set;
    } else {
        return synor__json_fail(c->d, v, SYNOR_ESCHEMA, p,
                                "expected \"all\" or an array of operation names");
    }

    if ((rc = synor__json_member(c->d, o, path, "data_types", SYNOR__J_ARRAY, 0, &v)))
        return rc;
    if (v) {
        uint64_t set = 0;
        sub(p, sizeof p, path, "data_types");
        if ((rc = parse_name_set(c, v, p, dtype_fn, &set)))
            return rc;
        pr->caps.dtypes = (synor_dtype_set)set;
    } else {
        for (int t = 0; t < SYNOR_DTYPE_COUNT; t++)
            if (pr->caps.peak[t].dense > 0)
                pr->caps.dtypes |= SYNOR_DTYPE_BIT(t);
    }

    if ((rc = synor__json_member(c->d, o, path, "optimal_for", SYNOR__J_ARRAY, 0, &v)))
        return rc;
    if (v) {
        uint64_t set = 0;
        sub(p, sizeof p, path, "optimal_for");
        if ((rc = parse_name_set(c, v, p, trait_fn, &set)))
            return rc;
        pr->caps.optimal_for = (uint32_t)set;
    }

    if ((rc = synor__json_member(c->d, o, path, "corrections", SYNOR__J_ARRAY, 0, &v)))
        return rc;
    if (v) {
        sub(p, sizeof p, path, "corrections");
        if ((rc = parse_corrections(c, v, p, pr)))
            return rc;
    }
    return 0;
}

void synor__profile_free(synor_profile *p)
{
    if (!p)
        return;
    synor__free_const(p->id);
    synor__free_const(p->name);
    synor__free_const(p->vendor);
    for (size_t i = 0; i < p->n_match; i++)
        synor__free_const(p->match[i]);
    synor__free_const(p->match);
    synor__free_const(p->source_compute);
    synor__free_const(p->source_memory);
    synor__free_const(p->source_power);
    synor__free_const(p->source_links);
    synor__free_const(p->source_latency);
    for (size_t i = 0; i < p->n_corrections; i++) {
        synor__free_const(p->corrections[i].field);
        synor__free_const(p->corrections[i].note);
    }
    synor__free_const(p->corrections);
    synor__free_const(p->notes);
    synor__free_const(p->origin);
    synor__free(p);
}

int synor__profile_parse(const synor__jdoc *d, const synor__jval *v, const char *path,
                         const char *origin, synor_profile **out)
{
    synor_profile *pr = synor__calloc(1, sizeof *pr);
    if (!pr)
        return synor__error(SYNOR_ENOMEM, "out of memory");
    pctx c = {d, path};
    int rc = parse_body(&c, v, pr);
    if (!rc) {
        pr->origin = synor__strdup(origin);
        if (!pr->origin)
            rc = synor__error(SYNOR_ENOMEM, "out of memory");
    }
    if (rc) {
        synor__profile_free(pr);
        return rc;
    }
    *out = pr;
    return 0;
}
