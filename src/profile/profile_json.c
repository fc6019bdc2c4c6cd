/* profile_json.c - writes a profile back in the profile file format, so
 * `synor profiles --json` output can be edited and loaded as a user file. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "profile/profile_internal.h"

static void name_array(synor__jw *w, uint64_t set, int count, const char *(*name)(int))
{
    synor__jw_arr_begin(w);
    for (int i = 0; i < count; i++)
        if (set & ((uint64_t)1 << i))
            synor__jw_str(w, name(i));
    synor__jw_arr_end(w);
}

static const char *op_name(int i) { return synor_op_type_name((synor_op_type)i); }
static const char *dtype_name(int i) { return synor_dtype_name((synor_dtype)i); }
static const char *trait_name(int i) { return synor_trait_name((synor_trait)i); }

static void write_type(synor__jw *w, const synor_processor_type *t)
{
    synor__jw_obj_begin(w);
    synor__jw_key(w, "kind");
    synor__jw_str(w, synor_kind_name(t->kind));
    switch (t->kind) {
    case SYNOR_KIND_CPU:
    case SYNOR_KIND_WASM:
        synor__jw_key(w, "isa");
        synor__jw_str(w, synor_cpu_isa_name(t->isa));
        synor__jw_key(w, "features");
        synor__jw_arr_begin(w);
        for (uint32_t bit = 1; bit; bit <<= 1)
            if ((t->cpu_features & bit) && synor_cpu_feature_name(bit))
                synor__jw_str(w, synor_cpu_feature_name(bit));
        synor__jw_arr_end(w);
        if (t->cores) {
            synor__jw_key(w, "cores");
            synor__jw_uint(w, t->cores);
        }
        if (t->threads) {
            synor__jw_key(w, "threads");
            synor__jw_uint(w, t->threads);
        }
        if (t->base_ghz > 0) {
            synor__jw_key(w, "base_ghz");
            synor__jw_num(w, t->base_ghz);
        }
        break;
    case SYNOR_KIND_GPU:
    case SYNOR_KIND_WEBGPU:
        synor__jw_key(w, "api");
        synor__jw_str(w, synor_gpu_api_name(t->gpu_api));
        if (t->cc_major) {
            char cc[16];
            snprintf(cc, sizeof cc, "%d.%d", t->cc_major, t->cc_minor);
            synor__jw_key(w, "compute_capability");
            synor__jw_str(w, cc);
        }
        if (t->gfx_version) {
            synor__jw_key(w, "gfx");
            synor__jw_uint(w, t->gfx_version);
        }
        break;
    case SYNOR_KIND_TPU:
        synor__jw_key(w, "version");
        synor__jw_str(w, synor_tpu_version_name(t->tpu));
        break;
    case SYNOR_KIND_NPU:
        synor__jw_key(w, "variant");
        synor__jw_str(w, synor_npu_variant_name(t->npu));
        if (t->npu_cores) {
            synor__jw_key(w, "cores");
            synor__jw_uint(w, t->npu_cores);
        }
        if (t->npu_version) {
            synor__jw_key(w, "version");
            synor__jw_uint(w, t->npu_version);
        }
        if (t->npu_tops > 0) {
            synor__jw_key(w, "tops");
            synor__jw_num(w, t->npu_tops);
        }
        break;
    case SYNOR_KIND_FPGA:
        synor__jw_key(w, "vendor");
        synor__jw_str(w, synor_fpga_vendor_name(t->fpga));
        break;
    case SYNOR_KIND_DSP:
        synor__jw_key(w, "vendor");
        synor__jw_str(w, synor_dsp_vendor_name(t->dsp));
        break;
    case SYNOR_KIND_CUSTOM:
        synor__jw_key(w, "vendor");
        synor__jw_str(w, t->vendor);
        synor__jw_key(w, "model");
        synor__jw_str(w, t->model);
        break;
    default:
        break;
    }
    synor__jw_obj_end(w);
}

void synor__profile_write(synor__jw *w, const synor_profile *p)
{
    const synor_caps *c = &p->caps;
    synor__jw_obj_begin(w);
    synor__jw_key(w, "id");
    synor__jw_str(w, p->id);
    synor__jw_key(w, "name");
    synor__jw_str(w, p->name);
    synor__jw_key(w, "vendor");
    synor__jw_str(w, p->vendor);
    synor__jw_key(w, "type");
    write_type(w, &p->type);
    synor__jw_key(w, "match");
    synor__jw_arr_begin(w);
    for (size_t i = 0; i < p->n_match; i++)
        synor__jw_str(w, p->match[i]);
    synor__jw_arr_end(w);

    synor__jw_key(w, "compute");
    synor__jw_obj_begin(w);
    for (int t = 0; t < SYNOR_DTYPE_COUNT; t++) {
        const synor_throughput *tp = &c->peak[t];
        if (tp->dense <= 0 && tp->sparse <= 0)
            continue;
        synor__jw_key(w, synor_dtype_name((synor_dtype)t));
        if (tp->sparse != tp->dense) {
            synor__jw_obj_begin(w);
            synor__jw_key(w, "dense");
            synor__jw_num(w, tp->dense / 1e12);
            synor__jw_key(w, "sparse");
            synor__jw_num(w, tp->sparse / 1e12);
            synor__jw_obj_end(w);
        } else {
            synor__jw_num(w, tp->dense / 1e12);
        }
    }
    synor__jw_key(w, "source");
    synor__jw_str(w, p->source_compute);
    synor__jw_obj_end(w);

    char size[48];
    synor__format_size(c->mem_bytes, 1, size, sizeof size);
    synor__jw_key(w, "memory");
    synor__jw_obj_begin(w);
    synor__jw_key(w, "capacity");
    synor__jw_str(w, size);
    synor__jw_key(w, "bandwidth_gb_s");
    synor__jw_num(w, c->mem_bandwidth / 1e9);
    synor__jw_key(w, "type");
    synor__jw_str(w, synor_mem_type_name(c->mem_type));
    synor__jw_key(w, "source");
    synor__jw_str(w, p->source_memory);
    synor__jw_obj_end(w);

    synor__jw_key(w, "power");
    synor__jw_obj_begin(w);
    synor__jw_key(w, "idle_w");
    synor__jw_num(w, c->idle_watts);
    synor__jw_key(w, "peak_w");
    synor__jw_num(w, c->peak_watts);
    synor__jw_key(w, "source");
    synor__jw_str(w, p->source_power);
    synor__jw_obj_end(w);

    if (p->source_links) {
        synor__jw_key(w, "links");
        synor__jw_obj_begin(w);
        synor__jw_key(w, "pcie_gen");
        synor__jw_int(w, c->pcie_gen);
        synor__jw_key(w, "pcie_lanes");
        synor__jw_int(w, c->pcie_lanes);
        synor__jw_key(w, "nvlink_gb_s");
        synor__jw_num(w, c->nvlink_bandwidth / 1e9);
        synor__jw_key(w, "unified_memory");
        synor__jw_bool(w, c->unified_memory);
        synor__jw_key(w, "network_gbit_s");
        synor__jw_num(w, c->network_bandwidth * 8 / 1e9);
        synor__jw_key(w, "source");
        synor__jw_str(w, p->source_links);
        synor__jw_obj_end(w);
    }
    if (p->source_latency) {
        synor__jw_key(w, "latency");
        synor__jw_obj_begin(w);
        synor__jw_key(w, "launch_us");
        synor__jw_num(w, c->launch_latency * 1e6);
        synor__jw_key(w, "source");
        synor__jw_str(w, p->source_latency);
        synor__jw_obj_end(w);
    }
    synor__jw_key(w, "efficiency");
    synor__jw_num(w, c->efficiency);
    synor__jw_key(w, "operations");
    if (c->ops == SYNOR_OP_SET_ALL)
        synor__jw_str(w, "all");
    else
        name_array(w, c->ops, SYNOR_OP_TYPE_COUNT, op_name);
    synor__jw_key(w, "data_types");
    name_array(w, c->dtypes, SYNOR_DTYPE_COUNT, dtype_name);
    synor__jw_key(w, "optimal_for");
    name_array(w, c->optimal_for, SYNOR_TRAIT_COUNT, trait_name);
    if (p->n_corrections) {
        synor__jw_key(w, "corrections");
        synor__jw_arr_begin(w);
        for (size_t i = 0; i < p->n_corrections; i++) {
            const synor_correction *k = &p->corrections[i];
            synor__jw_obj_begin(w);
            synor__jw_key(w, "field");
            synor__jw_str(w, k->field);
            synor__jw_key(w, "seed");
            synor__jw_num(w, k->seed_value);
            synor__jw_key(w, "value");
            synor__jw_num(w, k->value);
            synor__jw_key(w, "note");
            synor__jw_str(w, k->note);
            synor__jw_obj_end(w);
        }
        synor__jw_arr_end(w);
    }
    if (p->notes) {
        synor__jw_key(w, "notes");
        synor__jw_str(w, p->notes);
    }
    synor__jw_obj_end(w);
}

char *synor_profile_to_json(const synor_profile *p, int pretty)
{
    if (!p) {
        synor__error(SYNOR_EINVAL, "synor_profile_to_json: profile is NULL");
        return NULL;
    }
    synor__buf b;
    synor__jw w;
    synor__buf_init(&b);
    synor__jw_init(&w, &b, pretty);
    synor__profile_write(&w, p);
    char *s = synor__buf_take(&b);
    if (!s)
        synor__error(SYNOR_ENOMEM, "out of memory");
    return s;
}
