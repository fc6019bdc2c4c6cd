/* exec.c - real runs of workloads (synor/exec.h): each task becomes a
 * runtime task whose kernel computes its operation on its data.
 *
 * The operand rules (docs/RUNTIME.md, "Real runs"): a task's operands are
 * its consumed data followed by its produced data.
 *   matmul      consumes A (m x k), B (k x n); produces C (m x n)
 *   relu, gelu, silu
 *               consumes X; produces Y; both `elements` values
 * Sizes are checked against the dimensions before anything runs. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/common.h"
#include "kernels/kernels.h"
#include "synor/exec.h"

typedef struct op_rule {
    synor_op_type op;
    unsigned n_in, n_out;
    const synor_kernel *kernel;
} op_rule;

static const op_rule *rule_for(synor_op_type op)
{
    static const op_rule rules[] = {
        {SYNOR_OP_MATMUL, 2, 1, &synor__kernel_gemm_dims},
        {SYNOR_OP_RELU, 1, 1, &synor__kernel_relu_x},
        {SYNOR_OP_GELU, 1, 1, &synor__kernel_gelu_x},
        {SYNOR_OP_SILU, 1, 1, &synor__kernel_silu_x},
    };
    for (size_t i = 0; i < sizeof rules / sizeof rules[0]; i++)
        if (rules[i].op == op)
            return &rules[i];
    return NULL;
}

static unsigned elem_bytes(synor_dtype t) { return synor_dtype_bits(t) / 8; }

/* The bytes operand i (inputs first) must have. */
static uint64_t operand_bytes(const synor_task *t, unsigned i)
{
    const synor_op_dims *d = &t->op.dims;
    uint64_t e = elem_bytes(t->op.dtype);
    switch (t->op.type) {
    case SYNOR_OP_MATMUL:
        return (uint64_t)(i == 0 ? d->m * d->k : i == 1 ? d->k * d->n : d->m * d->n) * e;
    default:
        return (uint64_t)d->elements * e;
    }
}

static const char *operand_name(const synor_task *t, unsigned i)
{
    if (t->op.type == SYNOR_OP_MATMUL)
        return i == 0 ? "A (m x k)" : i == 1 ? "B (k x n)" : "C (m x n)";
    return i == 0 ? "X (elements)" : "Y (elements)";
}

int synor_exec_check(const synor_workload *w)
{
    for (size_t ti = 0; ti < synor_workload_count(w); ti++) {
        const synor_task *t = synor_workload_task(w, ti);
        const op_rule *r = t->op.backward ? NULL : rule_for(t->op.type);
        if (!r)
            return synor__error(SYNOR_ENOTSUP,
                                "task '%s': operation '%s%s' has no kernel for real runs (real "
                                "runs execute matmul, relu, gelu, silu)",
                                t->id, t->op.backward ? "backward of " : "",
                                synor_op_type_name(t->op.type));
        int f64ok = t->op.type == SYNOR_OP_MATMUL;
        if (t->op.dtype != SYNOR_DTYPE_FP32 && !(f64ok && t->op.dtype == SYNOR_DTYPE_FP64))
            return synor__error(SYNOR_ENOTSUP, "task '%s': data type %s (real runs compute in fp32%s)",
                                t->id, synor_dtype_name(t->op.dtype), f64ok ? " or fp64" : "");
        if (t->n_consumes != r->n_in || t->n_produces != r->n_out)
            return synor__error(SYNOR_EINVAL,
                                "task '%s' (%s): consumes %zu and produces %zu data; a real run "
                                "needs %u and %u",
                                t->id, synor_op_type_name(t->op.type), t->n_consumes,
                                t->n_produces, r->n_in, r->n_out);
        if (t->op.type == SYNOR_OP_MATMUL &&
            (t->op.dims.m > INT32_MAX || t->op.dims.n > INT32_MAX || t->op.dims.k > INT32_MAX))
            return synor__error(SYNOR_EINVAL, "task '%s': matmul dimensions above 2^31", t->id);
        for (unsigned i = 0; i < r->n_in + r->n_out; i++) {
            size_t di = i < r->n_in ? t->consumes[i] : t->produces[i - r->n_in];
            const synor_data *d = synor_workload_data(w, di);
            uint64_t need = operand_bytes(t, i);
            if (d->bytes != need || need == 0)
                return synor__error(SYNOR_EINVAL,
                                    "task '%s' (%s): data '%s' has %llu bytes; operand %s needs "
                                    "%llu (%s)",
                                    t->id, synor_op_type_name(t->op.type), d->name,
                                    (unsigned long long)d->bytes, operand_name(t, i),
                                    (unsigned long long)need, synor_dtype_name(t->op.dtype));
        }
    }
    return 0;
}

const char *synor_exec_task_id(const synor_workload *w, uint64_t tag)
{
    return tag >= 1 && tag <= synor_workload_count(w) ? synor_workload_task(w, tag - 1)->id : NULL;
}

/* The data type a datum is used with (its first user's). */
static synor_dtype data_dtype(const synor_workload *w, size_t di)
{
    for (size_t ti = 0; ti < synor_workload_count(w); ti++) {
        const synor_task *t = synor_workload_task(w, ti);
        for (size_t j = 0; j < t->n_consumes; j++)
            if (t->consumes[j] == di)
                return t->op.dtype;
        for (size_t j = 0; j < t->n_produces; j++)
            if (t->produces[j] == di)
                return t->op.dtype;
    }
    return SYNOR_DTYPE_FP32;
}

static uint64_t splitmix(uint64_t *s)
{
    uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

int synor_exec_workload(synor_runtime *rt, const synor_workload *w, uint64_t seed,
                        const unsigned *hints, synor_exec_result *out)
{
    memset(out, 0, sizeof *out);
    int rc = synor_exec_check(w);
    if (rc < 0)
        return rc;
    size_t nd = synor_workload_data_count(w), nt = synor_workload_count(w);
    void **mem = synor__calloc(nd ? nd : 1, sizeof *mem);
    synor_handle **h = synor__calloc(nd ? nd : 1, sizeof *h);
    unsigned char *sink = synor__calloc(nd ? nd : 1, 1);
    if (!mem || !h || !sink) {
        rc = synor__error(SYNOR_ENOMEM, "real run: out of memory");
        goto out;
    }
    for (size_t ti = 0; ti < nt; ti++) {
        const synor_task *t = synor_workload_task(w, ti);
        for (size_t j = 0; j < t->n_produces; j++)
            sink[t->produces[j]] = 1;
    }
    for (size_t ti = 0; ti < nt; ti++) {
        const synor_task *t = synor_workload_task(w, ti);
        for (size_t j = 0; j < t->n_consumes; j++)
            sink[t->consumes[j]] = 0;
    }
    for (size_t di = 0; di < nd; di++) {
        const synor_data *d = synor_workload_data(w, di);
        synor_dtype dt = data_dtype(w, di);
        size_t n = (size_t)(d->bytes / elem_bytes(dt));
        mem[di] = synor__malloc(d->bytes ? (size_t)d->bytes : 1);
        if (!mem[di]) {
            rc = synor__error(SYNOR_ENOMEM, "real run: cannot allocate %llu bytes for data '%s'",
                              (unsigned long long)d->bytes, d->name);
            goto out;
        }
        out->bytes += d->bytes;
        uint64_t s = seed ^ (0x51ed270b2705ull * (di + 1));
        for (size_t i = 0; i < n; i++) {
            double v = d->producer < 0 ? (double)(splitmix(&s) >> 11) * 0x1.0p-52 - 1.0 : 0.0;
            if (dt == SYNOR_DTYPE_FP64)
                ((double *)mem[di])[i] = v;
            else
                ((float *)mem[di])[i] = (float)v;
        }
        synor_handle_desc desc = {.ptr = mem[di], .dtype = dt, .ndim = 1, .shape = {n}};
        if ((rc = synor_handle_register(rt, &desc, &h[di])) < 0)
            goto out;
    }
    double t0 = now_s();
    const size_t *order = synor_workload_order(w);
    for (size_t oi = 0; oi < nt; oi++) {
        size_t ti = order[oi];
        const synor_task *t = synor_workload_task(w, ti);
        const op_rule *r = rule_for(t->op.type);
        synor_task_spec s = {.kernel = r->kernel, .priority = t->priority,
                             .ndata = r->n_in + r->n_out, .tag = ti + 1,
                             .device = hints ? hints[ti] : 0};
        for (unsigned i = 0; i < r->n_in; i++) {
            s.data[i] = h[t->consumes[i]];
            s.mode[i] = SYNOR_ACCESS_R;
        }
        for (unsigned i = 0; i < r->n_out; i++) {
            s.data[r->n_in + i] = h[t->produces[i]];
            s.mode[r->n_in + i] = SYNOR_ACCESS_W;
        }
        synor__gemm_dims_args ga = {(int)t->op.dims.m, (int)t->op.dims.n, (int)t->op.dims.k};
        if (t->op.type == SYNOR_OP_MATMUL) {
            s.args = &ga;
            s.args_size = sizeof ga;
        }
        if ((rc = synor_task_submit(rt, &s)) < 0) {
            (void)synor_runtime_wait_all(rt);
            goto out;
        }
        out->tasks++;
    }
    rc = synor_runtime_wait_all(rt);
    out->seconds = now_s() - t0;
    if (rc == 0)
        for (size_t di = 0; di < nd; di++) {
            if (!sink[di])
                continue;
            synor_dtype dt = data_dtype(w, di);
            size_t n = (size_t)(synor_workload_data(w, di)->bytes / elem_bytes(dt));
            for (size_t i = 0; i < n; i++)
                out->checksum += dt == SYNOR_DTYPE_FP64 ? ((double *)mem[di])[i]
                                                        : (double)((float *)mem[di])[i];
        }
out:
    for (size_t di = 0; h && mem && di < nd; di++) {
        if (h[di])
            (void)synor_handle_unregister(h[di]);
        synor__free(mem[di]);
    }
    synor__free(mem);
    synor__free(h);
    synor__free(sink);
    return rc;
}
