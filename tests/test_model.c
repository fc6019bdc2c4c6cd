/* test_model.c - tensor element types (half and bfloat16 rounding, the
 * Q8_0 / Q4_0 block formats against hand-computed blocks and error bounds)
 * and llama2.c checkpoints (every version written, reopened, compared with
 * the source and with llama2.c's own layout; corrupt files rejected). */
#include <dirent.h>
#include <stdint.h>
#include <sys/stat.h>
#include <unistd.h>

#include "synor/error.h"
#include "synor/model.h"
#include "test.h"

static uint64_t rng = 88172645463325252ull;
static uint32_t next_u32(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return (uint32_t)(rng >> 16);
}
/* uniform in [-1, 1) */
static float next_f(void)
{
    return (float)((double)next_u32() / 2147483648.0 - 1.0);
}

static float f_of(uint32_t u)
{
    float f;
    memcpy(&f, &u, 4);
    return f;
}

static uint32_t u_of(float f)
{
    uint32_t u;
    memcpy(&u, &f, 4);
    return u;
}

/* ------------------------------------------------------------ types */

TEST(type_table)
{
    ASSERT_STREQ(synor_ttype_name(SYNOR_TTYPE_Q4_0), "Q4_0");
    ASSERT_STREQ(synor_ttype_name(30), "BF16");
    ASSERT(synor_ttype_name(12) == NULL);
    ASSERT_EQ(synor_ttype_parse("q8_0"), SYNOR_TTYPE_Q8_0);
    ASSERT_EQ(synor_ttype_parse("f16"), SYNOR_TTYPE_F16);
    ASSERT_EQ(synor_ttype_parse("Q4_K"), -1);
    ASSERT_EQ(synor_ttype_block_elems(SYNOR_TTYPE_Q4_0), 32);
    ASSERT_EQ(synor_ttype_block_bytes(SYNOR_TTYPE_Q4_0), 18);
    ASSERT_EQ(synor_ttype_block_bytes(SYNOR_TTYPE_Q8_0), 34);
    ASSERT_EQ(synor_ttype_block_bytes(SYNOR_TTYPE_BF16), 2);
    ASSERT_EQ(synor_ttype_bytes(SYNOR_TTYPE_Q8_0, 64), 68);
    ASSERT_EQ(synor_ttype_bytes(SYNOR_TTYPE_Q8_0, 33), 0);
    ASSERT_EQ(synor_ttype_bytes(SYNOR_TTYPE_F32, 7), 28);
    ASSERT_EQ(synor_ttype_bytes(SYNOR_TTYPE_F32, UINT64_MAX / 2), 0); /* overflow */
    ASSERT_EQ(synor_ttype_bytes(5, 32), 0);
}

TEST(f16_known_values_and_rounding)
{
    ASSERT_EQ(synor_f32_to_f16(1.0f), 0x3c00);
    ASSERT_EQ(synor_f32_to_f16(-2.0f), 0xc000);
    ASSERT_EQ(synor_f32_to_f16(0.0f), 0x0000);
    ASSERT_EQ(synor_f32_to_f16(-0.0f), 0x8000);
    ASSERT_EQ(synor_f32_to_f16(65504.0f), 0x7bff);
    ASSERT_EQ(synor_f32_to_f16(65519.99f), 0x7bff);
    ASSERT_EQ(synor_f32_to_f16(65520.0f), 0x7c00); /* the tie rounds to even: inf */
    ASSERT_EQ(synor_f32_to_f16(INFINITY), 0x7c00);
    ASSERT_EQ(synor_f32_to_f16(-INFINITY), 0xfc00);
    uint16_t nan = synor_f32_to_f16(NAN);
    ASSERT((nan & 0x7c00) == 0x7c00 && (nan & 0x3ff) != 0);
    ASSERT(isnan(synor_f16_to_f32(nan)));
    ASSERT(synor_f32_to_f16(f_of(0x7f800001)) & 0x200); /* a signalling NaN comes out quiet */
    /* ties between neighbours go to the even mantissa */
    ASSERT_EQ(synor_f32_to_f16(1.0f + 0x1p-11f), 0x3c00);
    ASSERT_EQ(synor_f32_to_f16(1.0f + 3 * 0x1p-11f), 0x3c02);
    ASSERT_EQ(synor_f32_to_f16(1.0f + 0x1p-11f + 0x1p-20f), 0x3c01);
    /* subnormals: multiples of 2^-24 */
    ASSERT_EQ(synor_f32_to_f16(0x1p-24f), 0x0001);
    ASSERT_EQ(synor_f32_to_f16(0x1p-25f), 0x0000);        /* half of it: tie, even */
    ASSERT_EQ(synor_f32_to_f16(0x1.8p-25f), 0x0001);      /* 0.75 */
    ASSERT_EQ(synor_f32_to_f16(3 * 0x1p-25f), 0x0002);    /* 1.5: even */
    ASSERT_EQ(synor_f32_to_f16(5 * 0x1p-25f), 0x0002);    /* 2.5: even */
    ASSERT_EQ(synor_f32_to_f16(-1023 * 0x1p-24f), 0x83ff);
    ASSERT_EQ(synor_f32_to_f16(0x1p-14f), 0x0400);
    ASSERT_EQ(synor_f32_to_f16(2047 * 0x1p-25f), 0x0400); /* 1023.5 rounds up to normal */
    ASSERT(synor_f16_to_f32(0x0001) == 0x1p-24f);
    ASSERT(synor_f16_to_f32(0x83ff) == -1023 * 0x1p-24f);
    ASSERT(synor_f16_to_f32(0x7bff) == 65504.0f);
    ASSERT(synor_f16_to_f32(0xfc00) == -INFINITY);
    /* every half survives a trip through float */
    for (uint32_t h = 0; h < 0x10000; h++) {
        float f = synor_f16_to_f32((uint16_t)h);
        if ((h & 0x7c00) == 0x7c00 && (h & 0x3ff)) {
            ASSERT(isnan(f));
            continue;
        }
        if (synor_f32_to_f16(f) != h)
            TEST__FAIL("half 0x%04x -> %g -> 0x%04x", h, (double)f, synor_f32_to_f16(f));
    }
}

#ifdef __FLT16_MAX__
__extension__ typedef _Float16 half_t;
/* The compiler's own conversion (round to nearest even) as an independent
 * oracle over a sweep of every float exponent and many mantissas. */
TEST(f16_matches_the_compiler)
{
    for (uint64_t u = 0; u < 0x100000000ull; u += 997) {
        float f = f_of((uint32_t)u);
        if (isnan(f))
            continue;
        half_t h = (half_t)f;
        uint16_t want;
        memcpy(&want, &h, 2);
        if (synor_f32_to_f16(f) != want)
            TEST__FAIL("0x%08x (%g): 0x%04x, the compiler 0x%04x", (unsigned)u, (double)f,
                       synor_f32_to_f16(f), want);
    }
}
#else
TEST(f16_matches_the_compiler) { TEST_SKIP("no _Float16"); }
#endif

TEST(bf16_rounding)
{
    ASSERT_EQ(synor_f32_to_bf16(1.0f), 0x3f80);
    ASSERT_EQ(synor_f32_to_bf16(f_of(0x3f808000)), 0x3f80); /* tie, even stays */
    ASSERT_EQ(synor_f32_to_bf16(f_of(0x3f818000)), 0x3f82); /* tie, odd rounds up */
    ASSERT_EQ(synor_f32_to_bf16(f_of(0x3f808001)), 0x3f81);
    ASSERT_EQ(synor_f32_to_bf16(f_of(0x3f807fff)), 0x3f80);
    ASSERT_EQ(synor_f32_to_bf16(f_of(0x00008000)), 0x0000); /* subnormal tie: even */
    ASSERT_EQ(synor_f32_to_bf16(f_of(0x00018000)), 0x0002);
    ASSERT_EQ(synor_f32_to_bf16(f_of(0x7f7fffff)), 0x7f80); /* the largest float: inf */
    ASSERT_EQ(synor_f32_to_bf16(-INFINITY), 0xff80);
    ASSERT_EQ(synor_f32_to_bf16(f_of(0x7f800001)), 0x7fc0); /* signalling NaN made quiet */
    ASSERT_EQ(synor_f32_to_bf16(f_of(0xffc00001)), 0xffc0);
    ASSERT(u_of(synor_bf16_to_f32(0xbf80)) == 0xbf800000u);
    for (uint32_t h = 0; h < 0x10000; h++) {
        float f = synor_bf16_to_f32((uint16_t)h);
        uint16_t back = synor_f32_to_bf16(f);
        if (isnan(f) ? !isnan(synor_bf16_to_f32(back)) : back != h)
            TEST__FAIL("bf16 0x%04x -> 0x%04x", h, back);
    }
}

static uint16_t ld16(const unsigned char *p)
{
    uint16_t v;
    memcpy(&v, p, 2);
    return v;
}

/* Values 0..31: amax 31, d = 31/127 = 0.2440945 = 1.9527559 * 2^-3, so the
 * half has exponent 12 (0x3000) and mantissa round(0.9527559 * 1024) = 976
 * (0x3d0); q = round(j * 127 / 31). */
TEST(q8_0_known_block)
{
    float x[32];
    for (int j = 0; j < 32; j++)
        x[j] = (float)j;
    unsigned char b[34];
    ASSERT_OK(synor_ttype_quantize(SYNOR_TTYPE_Q8_0, x, b, 32));
    ASSERT_EQ(ld16(b), 0x33d0);
    static const int8_t want[32] = {0,  4,  8,  12, 16, 20, 25, 29,  33,  37,  41,
                                    45, 49, 53, 57, 61, 66, 70, 74,  78,  82,  86,
                                    90, 94, 98, 102, 107, 111, 115, 119, 123, 127};
    for (int j = 0; j < 32; j++)
        if ((int8_t)b[2 + j] != want[j])
            TEST__FAIL("q[%d] = %d, want %d", j, (int8_t)b[2 + j], want[j]);
    float y[32];
    ASSERT_OK(synor_ttype_dequantize(SYNOR_TTYPE_Q8_0, b, y, 32));
    ASSERT(y[31] == 127 * synor_f16_to_f32(0x33d0));
    ASSERT(y[6] == 25 * synor_f16_to_f32(0x33d0));
}

/* Values 0..31: the largest magnitude is 31, d = 31 / -8 = -3.875 exactly
 * (half 0xc3c0); nibble = trunc(j / -3.875 + 8.5): 8 8 7 7 7 7 6 6 6 6 5 5
 * 5 5 4 4 for j < 16 and 4 4 3 3 3 3 2 2 2 2 1 1 1 1 0 0 for the rest. */
TEST(q4_0_known_block)
{
    float x[32];
    for (int j = 0; j < 32; j++)
        x[j] = (float)j;
    unsigned char b[18];
    ASSERT_OK(synor_ttype_quantize(SYNOR_TTYPE_Q4_0, x, b, 32));
    ASSERT_EQ(ld16(b), 0xc3c0);
    static const unsigned char want[16] = {0x48, 0x48, 0x37, 0x37, 0x37, 0x37, 0x26, 0x26,
                                           0x26, 0x26, 0x15, 0x15, 0x15, 0x15, 0x04, 0x04};
    for (int j = 0; j < 16; j++)
        if (b[2 + j] != want[j])
            TEST__FAIL("byte %d = 0x%02x, want 0x%02x", j, b[2 + j], want[j]);
    float y[32];
    ASSERT_OK(synor_ttype_dequantize(SYNOR_TTYPE_Q4_0, b, y, 32));
    ASSERT(y[0] == 0.0f && y[31] == 31.0f && y[16] == 15.5f); /* (4-8) * -3.875 */
    /* a negative extreme: d positive, the extreme itself exact */
    x[5] = -40.0f;
    ASSERT_OK(synor_ttype_quantize(SYNOR_TTYPE_Q4_0, x, b, 32));
    ASSERT_EQ(ld16(b), synor_f32_to_f16(5.0f));
    ASSERT_EQ(b[2 + 5] & 0x0f, 0); /* q = -8 */
    /* all zero: d = 0 / -8 = -0 (half 0x8000, as llama.cpp stores it),
     * every nibble 8 */
    memset(x, 0, sizeof x);
    ASSERT_OK(synor_ttype_quantize(SYNOR_TTYPE_Q4_0, x, b, 32));
    ASSERT_EQ(ld16(b), 0x8000);
    for (int j = 0; j < 16; j++)
        ASSERT_EQ(b[2 + j], 0x88);
}

TEST(quantize_round_trip_error_bounds)
{
    enum { N = 32 * 64 };
    static float x[N], y[N];
    static unsigned char q[N * 2];
    for (int scale_i = 0; scale_i < 3; scale_i++) {
        float scale = scale_i == 0 ? 1.0f : scale_i == 1 ? 1e-3f : 300.0f;
        for (int i = 0; i < N; i++)
            x[i] = next_f() * scale * (i % 97 == 0 ? 4.0f : 1.0f);
        ASSERT_OK(synor_ttype_quantize(SYNOR_TTYPE_Q8_0, x, q, N));
        ASSERT_OK(synor_ttype_dequantize(SYNOR_TTYPE_Q8_0, q, y, N));
        for (int b = 0; b < N / 32; b++) {
            float amax = 0;
            for (int j = 0; j < 32; j++)
                amax = fmaxf(amax, fabsf(x[b * 32 + j]));
            double d = amax / 127.0f, dh = synor_f16_to_f32(ld16(q + 34 * b));
            /* round(x/d) is within d/2; the half scale moves each q * d by at
             * most 127 * |d - dh| */
            double bound = d / 2 + 127 * fabs(d - dh) + 1e-6 * d;
            for (int j = 0; j < 32; j++)
                if (fabs((double)x[b * 32 + j] - y[b * 32 + j]) > bound)
                    TEST__FAIL("Q8_0 block %d elem %d: %g -> %g (bound %g)", b, j,
                               (double)x[b * 32 + j], (double)y[b * 32 + j], bound);
        }
        ASSERT_OK(synor_ttype_quantize(SYNOR_TTYPE_Q4_0, x, q, N));
        ASSERT_OK(synor_ttype_dequantize(SYNOR_TTYPE_Q4_0, q, y, N));
        for (int b = 0; b < N / 32; b++) {
            float amax = 0, max = 0;
            for (int j = 0; j < 32; j++)
                if (amax < fabsf(x[b * 32 + j]))
                    amax = fabsf(x[b * 32 + j]), max = x[b * 32 + j];
            double d = fabs(max / -8.0f), dh = fabs(synor_f16_to_f32(ld16(q + 18 * b)));
            for (int j = 0; j < 32; j++) {
                /* values within 7.5 d of the opposite sign of the extreme
                 * round to the nearest step; beyond, q clamps at 7 */
                double v = x[b * 32 + j] / (max / -8.0f);
                double bound = (v <= 7.5 ? d / 2 : d) + 8 * fabs(d - dh) + 1e-6 * d;
                if (fabs((double)x[b * 32 + j] - y[b * 32 + j]) > bound)
                    TEST__FAIL("Q4_0 block %d elem %d: %g -> %g (bound %g)", b, j,
                               (double)x[b * 32 + j], (double)y[b * 32 + j], bound);
            }
        }
        for (int t = 0; t < 2; t++) {
            int type = t ? SYNOR_TTYPE_BF16 : SYNOR_TTYPE_F16;
            ASSERT_OK(synor_ttype_quantize(type, x, q, N));
            ASSERT_OK(synor_ttype_dequantize(type, q, y, N));
            for (int i = 0; i < N; i++) {
                uint16_t h;
                memcpy(&h, q + 2 * i, 2);
                ASSERT(h == (t ? synor_f32_to_bf16(x[i]) : synor_f32_to_f16(x[i])));
                ASSERT(y[i] == (t ? synor_bf16_to_f32(h) : synor_f16_to_f32(h)));
            }
        }
    }
}

TEST(quantize_rejects_bad_input)
{
    float x[64] = {0};
    unsigned char q[128];
    ASSERT_EQ(synor_ttype_quantize(SYNOR_TTYPE_Q8_0, x, q, 33), SYNOR_EINVAL);
    ASSERT_CONTAINS(synor_errmsg(), "not a multiple of its block of 32");
    ASSERT_EQ(synor_ttype_quantize(12, x, q, 32), SYNOR_EINVAL);
    ASSERT_CONTAINS(synor_errmsg(), "unsupported tensor type 12");
    ASSERT_EQ(synor_ttype_dequantize(3, q, x, 32), SYNOR_EINVAL);
    x[40] = NAN;
    ASSERT_EQ(synor_ttype_quantize(SYNOR_TTYPE_Q4_0, x, q, 64), SYNOR_EINVAL);
    ASSERT_CONTAINS(synor_errmsg(), "element 40 is nan");
    x[40] = INFINITY;
    ASSERT_EQ(synor_ttype_quantize(SYNOR_TTYPE_Q8_0, x, q, 64), SYNOR_EINVAL);
    x[40] = 1e9f; /* scale 1e9 / 127 is beyond half's 65504 */
    ASSERT_EQ(synor_ttype_quantize(SYNOR_TTYPE_Q8_0, x, q, 64), SYNOR_ERANGE);
    ASSERT_CONTAINS(synor_errmsg(), "block 1");
    /* F16 and BF16 carry inf and NaN */
    x[40] = INFINITY;
    ASSERT_OK(synor_ttype_quantize(SYNOR_TTYPE_F16, x, q, 64));
    ASSERT_OK(synor_ttype_quantize(SYNOR_TTYPE_F32, x, q, 0));
    ASSERT_OK(synor_ttype_quantize(SYNOR_TTYPE_F32, NULL, NULL, 0));
    /* a tiny block whose 1/d overflows stays defined: every value 0 */
    for (int i = 0; i < 32; i++)
        x[i] = 1e-38f * (float)(i - 16);
    ASSERT_OK(synor_ttype_quantize(SYNOR_TTYPE_Q8_0, x, q, 32));
    ASSERT_OK(synor_ttype_quantize(SYNOR_TTYPE_Q4_0, x, q, 32));
}

/* ------------------------------------------------------------ llama2.c */

static char dir[64];
static char *tmpfile_path(const char *leaf)
{
    static char p[128];
    if (!dir[0]) {
        strcpy(dir, "/tmp/synor-model-XXXXXX");
        if (!mkdtemp(dir))
            abort();
    }
    snprintf(p, sizeof p, "%s/%s", dir, leaf);
    return p;
}

static int dir_entries(void)
{
    DIR *d = opendir(dir);
    int n = 0;
    struct dirent *e;
    while (d && (e = readdir(d)))
        n += e->d_name[0] != '.';
    if (d)
        closedir(d);
    return n;
}

static void clean_dir(void)
{
    DIR *d = opendir(dir);
    struct dirent *e;
    char p[192];
    while (d && (e = readdir(d)))
        if (e->d_name[0] != '.') {
            snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
            unlink(p);
        }
    if (d)
        closedir(d);
}

static uint64_t weight_n(const synor_l2c_config *c, synor_l2c_weight w)
{
    uint64_t dim = (uint64_t)c->dim, kv = dim / (uint64_t)c->n_heads * (uint64_t)c->n_kv_heads;
    switch (w) {
    case SYNOR_L2C_TOKEN_EMBD:
    case SYNOR_L2C_WCLS: return (uint64_t)c->vocab_size * dim;
    case SYNOR_L2C_RMS_ATT:
    case SYNOR_L2C_RMS_FFN:
    case SYNOR_L2C_RMS_FINAL: return dim;
    case SYNOR_L2C_WQ:
    case SYNOR_L2C_WO: return dim * dim;
    case SYNOR_L2C_WK:
    case SYNOR_L2C_WV: return kv * dim;
    default: return (uint64_t)c->hidden_dim * dim;
    }
}

/* The deterministic value of element i of weight w of layer l. */
static float gen(synor_l2c_weight w, int l, uint64_t i)
{
    uint64_t h = (uint64_t)w * 0x9e3779b97f4a7c15ull ^ (uint64_t)l * 0xbf58476d1ce4e5b9ull ^
                 (i + 1) * 0x94d049bb133111ebull;
    h ^= h >> 31;
    h *= 0xd6e8feb86659fd39ull;
    h ^= h >> 29;
    float v = (float)((double)(h >> 11) / 9007199254740992.0 - 0.5);
    if (i % 64 == 7)
        v *= 0.0f; /* some exact zeros */
    return w == SYNOR_L2C_RMS_ATT || w == SYNOR_L2C_RMS_FFN ? 1.0f + v : v;
}

typedef struct src {
    synor_l2c_config cfg;
    float *buf;
    int calls, zero_group; /* zero_group: one all-zero group in wq */
} src;

static const float *source(synor_l2c_weight w, int layer, void *ctx)
{
    src *s = ctx;
    s->calls++;
    uint64_t n = weight_n(&s->cfg, w);
    free(s->buf);
    s->buf = malloc(n * sizeof(float));
    for (uint64_t i = 0; i < n; i++)
        s->buf[i] = gen(w, layer, i);
    if (s->zero_group && w == SYNOR_L2C_WQ)
        memset(s->buf, 0, (size_t)s->cfg.group_size * sizeof(float));
    return s->buf;
}

static synor_l2c_config small_cfg(int version, int shared)
{
    synor_l2c_config c = {.dim = 64, .hidden_dim = 96, .n_layers = 2, .n_heads = 4,
                          .n_kv_heads = 2, .vocab_size = 40, .seq_len = 16,
                          .shared_classifier = shared, .version = version,
                          .group_size = version == 2 ? 32 : 0};
    return c;
}

static int is_per_layer(int w)
{
    return w != SYNOR_L2C_TOKEN_EMBD && w != SYNOR_L2C_RMS_FINAL && w != SYNOR_L2C_WCLS;
}

/* Writes cfg, reopens it and compares every weight with the source. */
static void round_trip(synor_l2c_config cfg)
{
    src s = {.cfg = cfg, .zero_group = cfg.version == 2};
    const char *path = tmpfile_path("m.bin");
    ASSERT_OK(synor_l2c_write(path, &cfg, source, &s));
    free(s.buf);
    synor_l2c *m = NULL;
    ASSERT_OK(synor_l2c_open(path, &m));
    int pr = synor_l2c_populate(m); /* then every weight compared below */
    ASSERT(pr == 0 || pr == SYNOR_ENOTSUP);
    const synor_l2c_config *c = synor_l2c_config_get(m);
    ASSERT_EQ(c->version, cfg.version);
    ASSERT_EQ(c->dim, 64);
    ASSERT_EQ(c->hidden_dim, 96);
    ASSERT_EQ(c->n_kv_heads, 2);
    ASSERT_EQ(c->vocab_size, 40);
    ASSERT_EQ(c->seq_len, 16);
    ASSERT_EQ(c->shared_classifier, cfg.shared_classifier);
    ASSERT_EQ(c->group_size, cfg.version == 2 ? 32 : 0);
    for (int w = 0; w <= SYNOR_L2C_WCLS; w++)
        for (int l = 0; l < (is_per_layer(w) ? 2 : 1); l++) {
            synor_l2c_tensor t;
            ASSERT_OK(synor_l2c_tensor_get(m, (synor_l2c_weight)w, l, &t));
            uint64_t n = weight_n(&cfg, (synor_l2c_weight)w);
            ASSERT_EQ(t.n, n);
            int gw = w == SYNOR_L2C_WCLS && cfg.shared_classifier ? SYNOR_L2C_TOKEN_EMBD : w;
            int norm = w == SYNOR_L2C_RMS_ATT || w == SYNOR_L2C_RMS_FFN || w == SYNOR_L2C_RMS_FINAL;
            if (cfg.version < 2 || norm) {
                ASSERT(t.f32 && !t.q && !t.s);
                for (uint64_t i = 0; i < n; i++)
                    if (t.f32[i] != gen((synor_l2c_weight)gw, l, i))
                        TEST__FAIL("weight %d layer %d [%llu]: %g", w, l, (unsigned long long)i,
                                   (double)t.f32[i]);
                continue;
            }
            ASSERT(!t.f32 && t.q && t.s);
            for (uint64_t g = 0; g < n / 32; g++) {
                float x[32], amax = 0;
                for (int i = 0; i < 32; i++) {
                    x[i] = gen((synor_l2c_weight)gw, l, g * 32 + (uint64_t)i);
                    if (gw == SYNOR_L2C_WQ && g == 0)
                        x[i] = 0; /* the source's zero group */
                    amax = fmaxf(amax, fabsf(x[i]));
                }
                float scale = amax / 127.0f;
                if (t.s[g] != scale)
                    TEST__FAIL("weight %d layer %d group %llu: scale %g, want %g", w, l,
                               (unsigned long long)g, (double)t.s[g], (double)scale);
                for (int i = 0; i < 32; i++) {
                    int want = scale == 0 ? 0 : (int)rintf(x[i] / scale);
                    if (t.q[g * 32 + (uint64_t)i] != want)
                        TEST__FAIL("weight %d layer %d [%llu]: q %d, want %d", w, l,
                                   (unsigned long long)(g * 32 + (uint64_t)i),
                                   t.q[g * 32 + (uint64_t)i], want);
                    if (fabsf(t.q[g * 32 + (uint64_t)i] * scale - x[i]) > scale / 2 * 1.0001f)
                        TEST__FAIL("dequantized error beyond scale / 2");
                }
            }
        }
    synor_l2c_tensor t;
    ASSERT_EQ(synor_l2c_tensor_get(m, SYNOR_L2C_W2, 2, &t), SYNOR_ERANGE);
    ASSERT_CONTAINS(synor_errmsg(), "w2 of layer 2: the model has 2 layers");
    ASSERT_OK(synor_l2c_tensor_get(m, SYNOR_L2C_RMS_FINAL, 99, &t)); /* layer ignored */
    synor_l2c_close(m);
    ASSERT_EQ(dir_entries(), 1); /* no temporary left behind */
}

TEST(l2c_round_trips)
{
    for (int v = 0; v <= 2; v++)
        for (int shared = 0; shared < 2; shared++) {
            round_trip(small_cfg(v, shared));
            if (test__s.failed) {
                fprintf(stderr, "  (version %d, shared %d)\n", v, shared);
                return;
            }
        }
    clean_dir();
}

static unsigned char *slurp(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    fseek(f, 0, SEEK_END);
    *len = (size_t)ftell(f);
    fseek(f, 0, SEEK_SET);
    unsigned char *b = malloc(*len + 1);
    if (fread(b, 1, *len, f) != *len) {
        free(b);
        b = NULL;
    }
    fclose(f);
    return b;
}

static void spit(const char *path, const void *b, size_t len)
{
    FILE *f = fopen(path, "wb");
    fwrite(b, 1, len, f);
    fclose(f);
}

static float fl_at(const unsigned char *b, uint64_t off)
{
    float f;
    memcpy(&f, b + off, 4);
    return f;
}

/* The files against llama2.c's readers' own arithmetic (run.c for version
 * 0, runq.c for version 2), independent of the library's layout code. */
TEST(l2c_layout_matches_llama2c)
{
    synor_l2c_config c = small_cfg(0, 0);
    src s = {.cfg = c};
    const char *path = tmpfile_path("v0.bin");
    ASSERT_OK(synor_l2c_write(path, &c, source, &s));
    size_t len;
    unsigned char *b = slurp(path, &len);
    ASSERT(b);
    int32_t hdr[7];
    memcpy(hdr, b, 28);
    ASSERT_EQ(hdr[5], -40); /* unshared: negative vocabulary */
    /* run.c's memory_map_weights, in floats after the 7-int header */
    uint64_t L = 2, dim = 64, hid = 96, head = 16, kv = 32, voc = 40, seq = 16, p = 7;
    ASSERT(fl_at(b, 4 * p) == gen(SYNOR_L2C_TOKEN_EMBD, 0, 0));
    p += voc * dim;
    ASSERT(fl_at(b, 4 * (p + dim)) == gen(SYNOR_L2C_RMS_ATT, 1, 0));
    p += L * dim;
    p += L * dim * dim;                                     /* wq */
    ASSERT(fl_at(b, 4 * (p + kv * dim + 3)) == gen(SYNOR_L2C_WK, 1, 3));
    p += 2 * L * dim * kv + L * dim * dim + L * dim;        /* wk wv wo rms_ffn */
    ASSERT(fl_at(b, 4 * p) == gen(SYNOR_L2C_W1, 0, 0));
    p += 3 * L * dim * hid;                                 /* w1 w2 w3 */
    ASSERT(fl_at(b, 4 * p) == gen(SYNOR_L2C_RMS_FINAL, 0, 0));
    p += dim;
    ASSERT(fl_at(b, 4 * p) == 1.0f); /* cos(0) opens the first RoPE table */
    ASSERT(fabsf(fl_at(b, 4 * (p + 8 + 1)) - cosf(1.0f / powf(10000.0f, 2.0f / 16))) < 1e-6f);
    p += seq * head;                                        /* two tables of seq * head / 2 */
    ASSERT(fl_at(b, 4 * p) == gen(SYNOR_L2C_WCLS, 0, 0));
    ASSERT_EQ(len, 4 * (p + voc * dim));
    free(b);
    free(s.buf);

    /* version 2: header 256, norms, then q and s per tensor (runq.c) */
    c = small_cfg(2, 1);
    src s2 = {.cfg = c};
    ASSERT_OK(synor_l2c_write(path, &c, source, &s2));
    free(s2.buf);
    b = slurp(path, &len);
    ASSERT(b);
    uint32_t magic;
    int32_t version, gs;
    memcpy(&magic, b, 4);
    memcpy(&version, b + 4, 4);
    memcpy(&gs, b + 37, 4);
    ASSERT_EQ(magic, 0x616b3432);
    ASSERT_EQ(version, 2);
    ASSERT_EQ(b[36], 1);
    ASSERT_EQ(gs, 32);
    uint64_t at = 256;
    ASSERT(fl_at(b, at) == gen(SYNOR_L2C_RMS_ATT, 0, 0));
    at += 4 * (2 * L * dim);
    ASSERT(fl_at(b, at) == gen(SYNOR_L2C_RMS_FINAL, 0, 0));
    at += 4 * dim;
    uint64_t nt = voc * dim;
    ASSERT_EQ((int8_t)b[at + 1], (int)rintf(gen(SYNOR_L2C_TOKEN_EMBD, 0, 1) / fl_at(b, at + nt)));
    at += nt + nt / 32 * 4; /* then wq of layer 0 */
    at += dim * dim + dim * dim / 32 * 4; /* wq of layer 1 */
    float s0 = fl_at(b, at + dim * dim);
    ASSERT_EQ((int8_t)b[at + 2], (int)rintf(gen(SYNOR_L2C_WQ, 1, 2) / s0));
    uint64_t per_layer = 2 * (dim * dim + dim * dim / 32 * 4) + 2 * (kv * dim + kv * dim / 32 * 4) +
                         3 * (hid * dim + hid * dim / 32 * 4);
    ASSERT_EQ(len, 256 + 4 * (2 * L * dim + dim) + nt + nt / 32 * 4 + L * per_layer);
    free(b);
    clean_dir();
}

static const char *open_err(const char *path)
{
    synor_l2c *m = NULL;
    int rc = synor_l2c_open(path, &m);
    if (rc == 0) {
        synor_l2c_close(m);
        return "(opened)";
    }
    if (rc != SYNOR_EPARSE)
        return "(not SYNOR_EPARSE)";
    return synor_errmsg();
}

TEST(l2c_corrupt_files_are_rejected)
{
    const char *path = tmpfile_path("good.bin"), *bad = tmpfile_path("bad.bin");
    size_t len;
    synor_l2c_config c = small_cfg(2, 0);
    src s = {.cfg = c};
    ASSERT_OK(synor_l2c_write(path, &c, source, &s));
    free(s.buf);
    unsigned char *b = slurp(path, &len);
    ASSERT(b);
    /* truncated anywhere: rejected, naming where the file ends */
    for (size_t cut = 0; cut < len; cut += cut < 300 ? 1 : 997) {
        spit(bad, b, cut);
        const char *e = open_err(bad);
        if (!strstr(e, "truncated") || !strstr(e, bad))
            TEST__FAIL("cut at %zu: %s", cut, e);
    }
    spit(bad, b, len - 5);
    ASSERT_CONTAINS(open_err(bad), "in wcls");
    spit(bad, b, 256 + 4 * (2 * 2 * 64 + 64) + 2560 + 2560 / 32 * 4 + 10);
    ASSERT_CONTAINS(open_err(bad), "in wq of layer 0");
    unsigned char *big = malloc(len + 3);
    memcpy(big, b, len);
    memset(big + len, 0, 3);
    spit(bad, big, len + 3);
    ASSERT_CONTAINS(open_err(bad), "3 bytes after the weights");
    free(big);
    struct {
        size_t off;
        int32_t v;
        const char *msg;
    } flips[] = {
        {4, 3, "version 3 is not supported"},
        {8, -5, "dim is -5 (must be positive)"},
        {20, 5, "n_heads 5 does not divide dim 64"},
        {24, 3, "n_kv_heads 3 does not divide n_heads 4"},
        {28, 0, "vocab_size is 0"},
        {32, -1, "seq_len is -1"},
        {37, 0, "group_size is 0"},
        {37, 48, "group_size 48 does not divide the 2560 elements of token_embedding"},
    };
    for (size_t i = 0; i < sizeof flips / sizeof flips[0]; i++) {
        unsigned char save[4];
        memcpy(save, b + flips[i].off, 4);
        memcpy(b + flips[i].off, &flips[i].v, 4);
        spit(bad, b, len);
        const char *e = open_err(bad);
        if (!strstr(e, flips[i].msg) || strncmp(e, bad, strlen(bad)) != 0)
            TEST__FAIL("field at %zu = %d: \"%s\", want \"%s\"", flips[i].off, flips[i].v, e,
                       flips[i].msg);
        memcpy(b + flips[i].off, save, 4);
    }
    b[36] = 2;
    spit(bad, b, len);
    ASSERT_CONTAINS(open_err(bad), "shared_classifier is 2 (0 or 1)");
    b[36] = 1; /* now the classifier is extra bytes */
    spit(bad, b, len);
    ASSERT_CONTAINS(open_err(bad), "bytes after the weights");
    free(b);

    /* version 0: a shared file may end before its unused RoPE tables */
    c = small_cfg(0, 1);
    src s0 = {.cfg = c};
    ASSERT_OK(synor_l2c_write(path, &c, source, &s0));
    free(s0.buf);
    b = slurp(path, &len);
    ASSERT_EQ(len, 4 * (7 + 40 * 64 + 2 * 2 * 64 + 2 * 2 * 64 * 64 + 2 * 2 * 32 * 64 + 3 * 2 * 96 * 64 +
                        64 + 16 * 16));
    spit(bad, b, len - 4 * 16 * 16);
    synor_l2c *m = NULL;
    ASSERT_OK(synor_l2c_open(bad, &m));
    ASSERT_EQ(synor_l2c_config_get(m)->shared_classifier, 1);
    synor_l2c_close(m);
    spit(bad, b, len - 4 * 16 * 16 + 4);
    ASSERT_CONTAINS(open_err(bad), "in the RoPE tables");
    int32_t v = INT32_MIN;
    memcpy(b + 20, &v, 4);
    spit(bad, b, len);
    ASSERT_CONTAINS(open_err(bad), "vocab_size is -2147483648");
    v = 40;
    memcpy(b + 20, &v, 4);
    v = 3; /* n_heads 3 does not divide dim 64 */
    memcpy(b + 12, &v, 4);
    spit(bad, b, len);
    ASSERT_CONTAINS(open_err(bad), "n_heads 3 does not divide dim 64");
    free(b);
    synor_l2c *none = NULL;
    ASSERT_EQ(synor_l2c_open(tmpfile_path("missing.bin"), &none), SYNOR_EIO);
    ASSERT_CONTAINS(synor_errmsg(), "missing.bin: cannot open");
    clean_dir();
}

TEST(l2c_write_rejects_and_leaves_the_old_file)
{
    const char *path = tmpfile_path("m.bin");
    spit(path, "old", 3);
    synor_l2c_config c = small_cfg(2, 1);
    c.group_size = 24;
    src s = {.cfg = c};
    ASSERT_EQ(synor_l2c_write(path, &c, source, &s), SYNOR_EINVAL);
    ASSERT_CONTAINS(synor_errmsg(), "group_size 24 does not divide");
    ASSERT_EQ(s.calls, 0);
    c = small_cfg(3, 1);
    ASSERT_EQ(synor_l2c_write(path, &c, source, &s), SYNOR_EINVAL);
    c = small_cfg(0, 1);
    c.dim = 48;
    c.n_heads = 8;
    c.n_kv_heads = 3;
    ASSERT_EQ(synor_l2c_write(path, &c, source, &s), SYNOR_EINVAL);
    ASSERT_CONTAINS(synor_errmsg(), "n_kv_heads 3 does not divide n_heads 8");
    c = small_cfg(0, 1);
    c.n_heads = 64; /* head size 1: version 0's RoPE tables need pairs */
    c.n_kv_heads = 64;
    ASSERT_EQ(synor_l2c_write(path, &c, source, &s), SYNOR_EINVAL);
    ASSERT_CONTAINS(synor_errmsg(), "head size 1 (dim / n_heads) is odd");
    ASSERT_EQ(s.calls, 0);
    size_t len;
    unsigned char *b = slurp(path, &len);
    ASSERT(b && len == 3 && memcmp(b, "old", 3) == 0);
    free(b);
    ASSERT_EQ(dir_entries(), 1);
    ASSERT_EQ(synor_l2c_write(path, &c, (synor_l2c_source)NULL, &s), SYNOR_EINVAL);
    clean_dir();
}

static const float *nan_source(synor_l2c_weight w, int layer, void *ctx)
{
    const float *p = source(w, layer, ctx);
    src *s = ctx;
    if (w == SYNOR_L2C_W2 && layer == 1)
        s->buf[77] = NAN;
    if (w == SYNOR_L2C_W1 && layer == 1 && s->zero_group)
        return NULL;
    return p;
}

TEST(l2c_write_failures_are_atomic)
{
    const char *path = tmpfile_path("m.bin");
    synor_l2c_config c = small_cfg(2, 0);
    src s = {.cfg = c};
    spit(path, "old", 3);
    ASSERT_EQ(synor_l2c_write(path, &c, nan_source, &s), SYNOR_EINVAL);
    ASSERT_CONTAINS(synor_errmsg(), "w2 of layer 1: element 77 is nan");
    s.zero_group = 1;
    ASSERT_EQ(synor_l2c_write(path, &c, nan_source, &s), SYNOR_EINVAL);
    ASSERT_CONTAINS(synor_errmsg(), "no data for w1 of layer 1");
    free(s.buf);
    size_t len;
    unsigned char *b = slurp(path, &len);
    ASSERT(b && len == 3 && memcmp(b, "old", 3) == 0);
    free(b);
    ASSERT_EQ(dir_entries(), 1);
    clean_dir();
    rmdir(dir);
}

TEST_MAIN(type_table, f16_known_values_and_rounding, f16_matches_the_compiler, bf16_rounding,
          q8_0_known_block, q4_0_known_block, quantize_round_trip_error_bounds,
          quantize_rejects_bad_input, l2c_round_trips, l2c_layout_matches_llama2c,
          l2c_corrupt_files_are_rejected, l2c_write_rejects_and_leaves_the_old_file,
          l2c_write_failures_are_atomic)
