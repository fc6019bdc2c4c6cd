/* synor/model.h - model files: tensor element types and their block
 * formats, GGUF files (read and write), llama2.c checkpoints (read and
 * write), all memory-mapped (issue 12 point 1; seed 003 §2.3).
 *
 * Tensor element types are numbered as GGUF's (ggml_type), and the block
 * formats are byte-for-byte GGUF's, so a file this library writes loads in
 * llama.cpp and the other way round:
 *   F32   4 bytes per element.
 *   F16   IEEE half, 2 bytes per element.
 *   BF16  bfloat16 (the top half of an F32), 2 bytes per element.
 *   Q8_0  blocks of 32: an F16 scale d, then 32 int8 q; x = d * q.
 *         34 bytes per block.
 *   Q4_0  blocks of 32: an F16 scale d, then 16 bytes; byte j holds element
 *         j in its low nibble and element j + 16 in its high nibble, each
 *         stored as q + 8 (q in -8..7); x = d * q. 18 bytes per block.
 *
 * Tensor shapes are GGUF's: ne[0] is the fastest-varying dimension (the
 * length of a row), so a weight matrix that maps dim inputs to n outputs
 * has ne = {dim, n}: n rows of dim elements.
 *
 * Every file is validated when it is opened: header, every metadata key
 * and value, every tensor's name, type, shape, offset, alignment and size
 * against the file's length. A corrupt or truncated file is rejected with
 * SYNOR_EPARSE and a message naming the file, the tensor or key, and what
 * is wrong ("m.gguf: tensor 'blk.0.attn_q.weight': data at offset 4096 +
 * 73728 bytes runs past the end of the file (40960 bytes)"). */
#ifndef SYNOR_MODEL_H
#define SYNOR_MODEL_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---------------------------------------------------------- element types */

typedef enum synor_ttype {
    SYNOR_TTYPE_F32 = 0,
    SYNOR_TTYPE_F16 = 1,
    SYNOR_TTYPE_Q4_0 = 2,
    SYNOR_TTYPE_Q8_0 = 8,
    SYNOR_TTYPE_BF16 = 30
} synor_ttype;

#define SYNOR_QK 32 /* elements per Q8_0 / Q4_0 block */

/* "F32", "F16", "BF16", "Q8_0", "Q4_0"; NULL for a type this library does
 * not support. */
const char *synor_ttype_name(int type);
/* The type named s (case-insensitive), or -1. */
int synor_ttype_parse(const char *s);
/* Elements per block (1, or SYNOR_QK) and bytes per block; 0 for an
 * unsupported type. */
unsigned synor_ttype_block_elems(int type);
unsigned synor_ttype_block_bytes(int type);
/* Bytes of n elements; 0 if the type is unsupported or n is not a multiple
 * of its block. */
size_t synor_ttype_bytes(int type, uint64_t n);

/* Conversion of n elements (a multiple of the type's block), rounding as
 * llama.cpp's reference quantizers do (round to nearest; Q8_0: d = amax /
 * 127; Q4_0: d = (the value of largest magnitude) / -8). SYNOR_EINVAL for
 * an unsupported type or a bad n, and for a NaN or infinite input to Q8_0
 * or Q4_0 (naming the element); SYNOR_ERANGE when a block's scale d does
 * not fit in F16 (naming the block). F16 and BF16 carry inf and NaN. */
int synor_ttype_quantize(int type, const float *src, void *dst, size_t n);
int synor_ttype_dequantize(int type, const void *src, float *dst, size_t n);

float synor_f16_to_f32(uint16_t h);
uint16_t synor_f32_to_f16(float f); /* round to nearest even */
float synor_bf16_to_f32(uint16_t h);
uint16_t synor_f32_to_bf16(float f); /* round to nearest even */

/* ------------------------------------------------------------- GGUF files */

/* Metadata value types, numbered as GGUF's. */
typedef enum synor_gguf_vtype {
    SYNOR_GGUF_U8 = 0,
    SYNOR_GGUF_I8 = 1,
    SYNOR_GGUF_U16 = 2,
    SYNOR_GGUF_I16 = 3,
    SYNOR_GGUF_U32 = 4,
    SYNOR_GGUF_I32 = 5,
    SYNOR_GGUF_F32 = 6,
    SYNOR_GGUF_BOOL = 7,
    SYNOR_GGUF_STRING = 8,
    SYNOR_GGUF_ARRAY = 9,
    SYNOR_GGUF_U64 = 10,
    SYNOR_GGUF_I64 = 11,
    SYNOR_GGUF_F64 = 12
} synor_gguf_vtype;

typedef struct synor_gguf synor_gguf;

/* A tensor of an open file; data points into the mapping. */
typedef struct synor_gguf_tensor {
    const char *name;
    synor_ttype type;
    unsigned ndim;   /* 1..4 */
    uint64_t ne[4];  /* ne[i] = 1 for i >= ndim */
    const void *data;
    size_t bytes;
} synor_gguf_tensor;

/* Opens and validates a GGUF file (versions 2 and 3), mapping it read-only.
 * Rejected as corrupt: counts that cannot fit in the bytes left, strings
 * running past the end, empty keys, keys or tensor names holding a NUL,
 * tensor names over 63 bytes, duplicate keys or tensor names, unknown value
 * types, arrays of arrays, bools other than 0 and 1, a general.alignment
 * that is not a u32 power of 2, 0 or over 4 dimensions, a dimension of 0,
 * more than 2^63 elements, rows (ne[0]) not a multiple of the type's block,
 * a data offset not a multiple of the alignment, data past the end.
 * SYNOR_EIO (cannot open or map, naming the file and the system's reason),
 * SYNOR_EPARSE (corrupt: file, key or tensor, and what is wrong),
 * SYNOR_ENOTSUP (a tensor type this library does not support, named),
 * SYNOR_ENOMEM. */
int synor_gguf_open(const char *path, synor_gguf **out);
void synor_gguf_close(synor_gguf *g); /* accepts NULL */
/* Has the kernel map every page of the file now (Linux's
 * MADV_POPULATE_READ), so that the first pass over the weights does not
 * take a page fault for each page or group of pages: what an engine that
 * is about to read every weight calls once after opening (llama.cpp maps
 * its models with MAP_POPULATE for the same reason), and what a tool that
 * only inspects a file does not. The pages come from the page cache, or
 * are read from the file (all of it: the engine leaves weights over half
 * the machine's memory to be read on demand). 0; SYNOR_ENOTSUP where the system cannot (the
 * file is read on demand then, as before); SYNOR_EIO with the system's
 * reason. */
int synor_gguf_populate(const synor_gguf *g);
/* The opposite for a range of the file's bytes [p, p + n) (a tensor's
 * data: a synor_gguf_tensor's data and bytes): the process lets go of the
 * whole pages inside it, and its resident memory shrinks by them; touched
 * again, they are read back from the file (the page cache). What an engine
 * calls on weights it has copied into another layout and no longer reads.
 * 0; SYNOR_EINVAL for a range outside the file's mapping; SYNOR_EIO with
 * the system's reason. */
int synor_gguf_drop_pages(const synor_gguf *g, const void *p, size_t n);
const char *synor_gguf_path(const synor_gguf *g);
uint32_t synor_gguf_version(const synor_gguf *g);

/* Metadata. Lookups are by exact key. The getters convert between integer
 * types when the value fits, and from any float or integer to float; a
 * missing key is SYNOR_ENOENT, a value of another type or out of range
 * SYNOR_ESCHEMA, each with a message naming the file and the key. */
size_t synor_gguf_kv_count(const synor_gguf *g);
const char *synor_gguf_kv_key(const synor_gguf *g, size_t i);
synor_gguf_vtype synor_gguf_kv_type(const synor_gguf *g, size_t i);
int synor_gguf_find(const synor_gguf *g, const char *key); /* index or -1 */
int synor_gguf_get_u32(const synor_gguf *g, const char *key, uint32_t *out);
int synor_gguf_get_f32(const synor_gguf *g, const char *key, float *out);
/* A string value: s points into the mapping and is NOT NUL-terminated. */
int synor_gguf_get_str(const synor_gguf *g, const char *key, const char **s, size_t *len);
/* An array value: its element type and length. */
int synor_gguf_get_arr(const synor_gguf *g, const char *key, synor_gguf_vtype *elem, size_t *n);
/* Element i of an array of strings (not NUL-terminated), of numbers as
 * float, of integers as int64. SYNOR_ESCHEMA for another element type,
 * SYNOR_ERANGE for i out of range. */
int synor_gguf_arr_str(const synor_gguf *g, const char *key, size_t i, const char **s, size_t *len);
int synor_gguf_arr_f32(const synor_gguf *g, const char *key, size_t i, float *out);
int synor_gguf_arr_i64(const synor_gguf *g, const char *key, size_t i, int64_t *out);

size_t synor_gguf_tensor_count(const synor_gguf *g);
const synor_gguf_tensor *synor_gguf_tensor_at(const synor_gguf *g, size_t i);
const synor_gguf_tensor *synor_gguf_tensor_find(const synor_gguf *g, const char *name);

/* Writing: keys and tensors in the order added; tensor data aligned to
 * general.alignment (32 unless a u32 "general.alignment" key is added),
 * each tensor padded to it, as llama.cpp writes files. Tensor names are 1
 * to 63 bytes (llama.cpp's limit). The file is created with mode 0644.
 * The add calls copy their arguments. save writes GGUF version 3 to path
 * atomically (a temporary file renamed over it): a failed save leaves no
 * file or the old one. Adding a key or tensor name twice is SYNOR_EEXIST;
 * a tensor whose data size does not match its type and shape, SYNOR_EINVAL. */
typedef struct synor_gguf_writer synor_gguf_writer;
int synor_gguf_writer_create(synor_gguf_writer **out);
void synor_gguf_writer_destroy(synor_gguf_writer *w); /* accepts NULL */
int synor_gguf_writer_add_u32(synor_gguf_writer *w, const char *key, uint32_t v);
int synor_gguf_writer_add_f32(synor_gguf_writer *w, const char *key, float v);
int synor_gguf_writer_add_str(synor_gguf_writer *w, const char *key, const char *v);
int synor_gguf_writer_add_str_array(synor_gguf_writer *w, const char *key, size_t n,
                                    const char *const *v, const size_t *lens);
int synor_gguf_writer_add_f32_array(synor_gguf_writer *w, const char *key, size_t n,
                                    const float *v);
int synor_gguf_writer_add_i32_array(synor_gguf_writer *w, const char *key, size_t n,
                                    const int32_t *v);
/* Copies every key of g except those in skip (NULL-terminated, may be
 * NULL): what synor quantize uses to carry a model's metadata over. */
int synor_gguf_writer_copy_kv(synor_gguf_writer *w, const synor_gguf *g, const char *const *skip);
/* data holds synor_ttype_bytes(type, ne[0]*...*ne[ndim-1]) bytes of type. */
int synor_gguf_writer_add_tensor(synor_gguf_writer *w, const char *name, synor_ttype type,
                                 unsigned ndim, const uint64_t *ne, const void *data);
int synor_gguf_writer_save(synor_gguf_writer *w, const char *path);

/* ------------------------------------------------- llama2.c checkpoints */

/* A llama2.c checkpoint (karpathy/llama2.c): the legacy fp32 format
 * (version 0: a 7-int header, vocab_size < 0 meaning an unshared
 * classifier), and export.py's versions 1 (fp32) and 2 (int8: Q8 groups
 * of group_size with one fp32 scale each), with the "ak42" magic and a
 * 256-byte header. */
typedef struct synor_l2c synor_l2c;

typedef struct synor_l2c_config {
    int dim, hidden_dim, n_layers, n_heads, n_kv_heads, vocab_size, seq_len;
    int shared_classifier; /* 1: the classifier is the token embedding */
    int version;           /* 0, 1 or 2 */
    int group_size;        /* version 2: elements per scale */
} synor_l2c_config;

/* One weight of the checkpoint, as stored. f32 for versions 0 and 1 and for
 * the norms of version 2; q (n int8) and s (n / group_size scales) for the
 * quantized weights of version 2. Rows are contiguous (row-major, as
 * llama2.c's matmul reads them: out x in). */
typedef struct synor_l2c_tensor {
    const float *f32;
    const int8_t *q;
    const float *s;
    uint64_t n; /* elements */
} synor_l2c_tensor;

/* The weights, per layer where they are per layer (index l * stride). */
typedef enum synor_l2c_weight {
    SYNOR_L2C_TOKEN_EMBD, /* vocab x dim */
    SYNOR_L2C_RMS_ATT,    /* per layer: dim */
    SYNOR_L2C_WQ,         /* per layer: dim x dim */
    SYNOR_L2C_WK,         /* per layer: kv_dim x dim */
    SYNOR_L2C_WV,         /* per layer: kv_dim x dim */
    SYNOR_L2C_WO,         /* per layer: dim x dim */
    SYNOR_L2C_RMS_FFN,    /* per layer: dim */
    SYNOR_L2C_W1,         /* per layer: hidden x dim */
    SYNOR_L2C_W2,         /* per layer: dim x hidden */
    SYNOR_L2C_W3,         /* per layer: hidden x dim */
    SYNOR_L2C_RMS_FINAL,  /* dim */
    SYNOR_L2C_WCLS        /* vocab x dim (the embedding when shared) */
} synor_l2c_weight;

/* Opens and validates (header fields positive and consistent, n_heads
 * divides dim, n_kv_heads divides n_heads, the file exactly as long as the
 * header says; a version 0 file with a shared classifier may also end
 * before its unused RoPE tables). Version 0 needs an even head size (its
 * RoPE tables hold pairs); version 2 needs group_size to divide every
 * quantized weight and each weight's element count to be a multiple of 4
 * (its scales are read in place as floats). SYNOR_EIO, SYNOR_EPARSE (file,
 * field and value; for a short file, the weight and layer it ends in),
 * SYNOR_ENOMEM. */
int synor_l2c_open(const char *path, synor_l2c **out);
void synor_l2c_close(synor_l2c *m); /* accepts NULL */
/* As synor_gguf_populate, for a llama2.c checkpoint. */
int synor_l2c_populate(const synor_l2c *m);
/* As synor_gguf_drop_pages, for a llama2.c checkpoint. */
int synor_l2c_drop_pages(const synor_l2c *m, const void *p, size_t n);
const synor_l2c_config *synor_l2c_config_get(const synor_l2c *m);
/* layer is ignored for the weights that are not per layer; SYNOR_ERANGE
 * for a layer out of range, SYNOR_EINVAL for an unknown weight. */
int synor_l2c_tensor_get(const synor_l2c *m, synor_l2c_weight w, int layer,
                         synor_l2c_tensor *out);

/* Writes a checkpoint of cfg (version 0, 1 or 2) whose weights are read
 * from get(w, layer, ctx), which returns n fp32 values laid out as above (n
 * as the comments of synor_l2c_weight say; layer 0 for the weights that
 * are not per layer), valid until the next call. get is not called for
 * SYNOR_L2C_WCLS when the classifier is shared. Version 2 quantizes as
 * llama2.c's export.py: per group scale = max|w| / 127, q = w / scale
 * rounded half to even (an all-zero group: scale 0, q 0). Version 0 gets
 * the RoPE tables export.py writes. SYNOR_EINVAL for a bad cfg (as open
 * would reject it), a NULL from get, or a NaN or infinite weight (named,
 * with its layer and index). Atomic like synor_gguf_writer_save. */
typedef const float *(*synor_l2c_source)(synor_l2c_weight w, int layer, void *ctx);
int synor_l2c_write(const char *path, const synor_l2c_config *cfg, synor_l2c_source get,
                    void *ctx);

#ifdef __cplusplus
}
#endif
#endif
