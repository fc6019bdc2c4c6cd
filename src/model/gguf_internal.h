/* gguf_internal.h - an open GGUF file as the reader leaves it, shared by
 * the metadata getters and the writer (which copies metadata records
 * verbatim). Never installed. */
#ifndef SYNOR_GGUF_INTERNAL_H
#define SYNOR_GGUF_INTERNAL_H

#include "model/model_internal.h"
#include "synor/model.h"

#define SYNOR__GGUF_MAGIC "GGUF"
#define SYNOR__GGUF_ALIGNMENT 32
/* llama.cpp's GGML_MAX_NAME less its NUL: a longer tensor name would not
 * load there. */
#define SYNOR__GGUF_MAX_NAME 63

typedef struct synor__gguf_kv {
    char *key; /* a NUL-terminated copy */
    uint32_t type;
    uint32_t elem;        /* arrays: the element type */
    uint64_t n;           /* arrays: the element count */
    const uint8_t *val;   /* the value: a scalar, a string's length field, an array's first element */
    const uint8_t *raw;   /* the whole record, key length to the end of the value */
    size_t raw_len;
    uint64_t *soff;       /* arrays of strings: each element's offset from val */
} synor__gguf_kv;

struct synor_gguf {
    char *path;
    synor__mapping map;
    uint32_t version;
    size_t alignment;
    size_t data_off; /* where the data section starts */
    size_t n_kv;
    synor__gguf_kv *kv;
    size_t *kv_sorted; /* kv indices in key order */
    size_t n_tensors;
    synor_gguf_tensor *t;
    size_t *t_sorted; /* tensor indices in name order */
};

/* Bytes of one value of a fixed-size type; 0 for strings, arrays and
 * unknown types. */
size_t synor__gguf_vsize(uint32_t type);
const char *synor__gguf_vtype_name(uint32_t type);

#endif
