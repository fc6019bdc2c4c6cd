/* ttype.c - tensor element types: names, block sizes, IEEE half and
 * bfloat16 conversions, and the Q8_0 / Q4_0 block quantizers. The
 * quantizers follow llama.cpp's reference rounding exactly (the same float
 * operations in the same order), so a block written here is the block
 * llama.cpp would write for the same input. */
#include <math.h>
#include <string.h>

#include "model/model_internal.h"
#include "synor/model.h"

static const struct {
    int type;
    const char *name;
    unsigned elems, bytes;
} types[] = {
    {SYNOR_TTYPE_F32, "F32", 1, 4},
    {SYNOR_TTYPE_F16, "F16", 1, 2},
    {SYNOR_TTYPE_Q4_0, "Q4_0", SYNOR_QK, 2 + SYNOR_QK / 2},
    {SYNOR_TTYPE_Q8_0, "Q8_0", SYNOR_QK, 2 + SYNOR_QK},
    {SYNOR_TTYPE_BF16, "BF16", 1, 2},
};

static int find_type(int type)
{
    for (size_t i = 0; i < SYNOR__ARRAY_LEN(types); i++)
        if (types[i].type == type)
            return (int)i;
    return -1;
}

const char *synor_ttype_name(int type)
{
    int i = find_type(type);
    return i < 0 ? NULL : types[i].name;
}

int synor_ttype_parse(const char *s)
{
    if (!s)
        return -1;
    for (size_t i = 0; i < SYNOR__ARRAY_LEN(types); i++)
        if (synor__strcaseeq(s, types[i].name))
            return types[i].type;
    return -1;
}

unsigned synor_ttype_block_elems(int type)
{
    int i = find_type(type);
    return i < 0 ? 0 : types[i].elems;
}

unsigned synor_ttype_block_bytes(int type)
{
    int i = find_type(type);
    return i < 0 ? 0 : types[i].bytes;
}

size_t synor_ttype_bytes(int type, uint64_t n)
{
    int i = find_type(type);
    uint64_t bytes;
    if (i < 0 || n % types[i].elems != 0 ||
        synor__mul_u64(n / types[i].elems, types[i].bytes, &bytes) || bytes > SIZE_MAX)
        return 0;
    return (size_t)bytes;
}

/* ------------------------------------------------------------ half, bf16 */

static uint32_t f32_bits(float f)
{
    uint32_t u;
    memcpy(&u, &f, 4);
    return u;
}

static float bits_f32(uint32_t u)
{
    float f;
    memcpy(&f, &u, 4);
    return f;
}

float synor_f16_to_f32(uint16_t h)
{
    uint32_t sign = (uint32_t)(h & 0x8000) << 16, exp = (h >> 10) & 0x1f, mant = h & 0x3ff;
    if (exp == 0) {
        /* zero or subnormal: mant * 2^-24, exact in float */
        float v = (float)mant * 0x1p-24f;
        return sign ? -v : v;
    }
    if (exp == 31)
        return bits_f32(sign | 0x7f800000u | mant << 13);
    return bits_f32(sign | (exp + 112) << 23 | mant << 13);
}

uint16_t synor_f32_to_f16(float f)
{
    uint32_t x = f32_bits(f), sign = (x >> 16) & 0x8000, ax = x & 0x7fffffffu;
    if (ax > 0x7f800000u) /* NaN: kept quiet, with the top of its payload */
        return (uint16_t)(sign | 0x7e00 | ((ax >> 13) & 0x3ff));
    if (ax >= 0x477ff000u) /* 65520 and above (the tie above 65504) round to inf */
        return (uint16_t)(sign | 0x7c00);
    if (ax >= 0x38800000u) { /* normal in half: rebias, round the 13 dropped bits */
        ax += 0xfff + ((ax >> 13) & 1);
        return (uint16_t)(sign | ((ax - 0x38000000u) >> 13));
    }
    if (ax <= 0x33000000u) /* at most half the smallest subnormal: zero (a tie: even) */
        return (uint16_t)sign;
    /* subnormal in half: round(m * 2^(e - 126)) to nearest even */
    uint32_t e = ax >> 23, m = (ax & 0x7fffff) | 0x800000, s = 126 - e;
    uint32_t h = m >> s, rem = m & ((1u << s) - 1), half = 1u << (s - 1);
    if (rem > half || (rem == half && (h & 1)))
        h++;
    return (uint16_t)(sign | h);
}

float synor_bf16_to_f32(uint16_t h)
{
    return bits_f32((uint32_t)h << 16);
}

uint16_t synor_f32_to_bf16(float f)
{
    uint32_t u = f32_bits(f);
    if ((u & 0x7fffffffu) > 0x7f800000u) /* NaN: forced quiet */
        return (uint16_t)((u >> 16) | 64);
    return (uint16_t)((u + 0x7fff + ((u >> 16) & 1)) >> 16);
}

/* ------------------------------------------------------------ quantizers */

static void st_u16(unsigned char *p, uint16_t v)
{
    memcpy(p, &v, 2);
}

static uint16_t ld_u16(const unsigned char *p)
{
    uint16_t v;
    memcpy(&v, p, 2);
    return v;
}

/* d as llama.cpp stores it; SYNOR_ERANGE when d overflows half. */
static int put_scale(unsigned char *p, float d, size_t block)
{
    uint16_t h = synor_f32_to_f16(d);
    if ((h & 0x7c00) == 0x7c00)
        return synor__error(SYNOR_ERANGE,
                            "block %zu: scale %g does not fit in F16 (values up to 65504 times "
                            "the largest quant)",
                            block, (double)d);
    st_u16(p, h);
    return 0;
}

/* The int8 of a scaled value: roundf, as llama.cpp; the clamp and the NaN
 * case only matter for a block so small (max below about 4e-37) that 1 / d
 * overflows, where llama.cpp's conversion is undefined; its scale is 0 in
 * F16 either way. */
static int8_t q8_of(float v)
{
    if (v != v)
        return 0;
    v = roundf(v);
    return (int8_t)(v > 127.0f ? 127.0f : v < -127.0f ? -127.0f : v);
}

/* The nibble of v = x / d + 8.5: truncation, at most 15 (llama.cpp's
 * MIN(15, (int8_t)v)), with the same guard as q8_of. */
static int q4_of(float v)
{
    if (v != v)
        return 8;
    return v >= 15.0f ? 15 : v <= 0.0f ? 0 : (int)v;
}

static int quantize_q8_0(const float *x, unsigned char *y, size_t nb)
{
    for (size_t i = 0; i < nb; i++, x += SYNOR_QK, y += 2 + SYNOR_QK) {
        float amax = 0.0f;
        for (int j = 0; j < SYNOR_QK; j++)
            amax = fmaxf(amax, fabsf(x[j]));
        const float d = amax / 127, id = d != 0.0f ? 1.0f / d : 0.0f;
        int rc = put_scale(y, d, i);
        if (rc)
            return rc;
        for (int j = 0; j < SYNOR_QK; j++)
            y[2 + j] = (unsigned char)q8_of(x[j] * id);
    }
    return 0;
}

static int quantize_q4_0(const float *x, unsigned char *y, size_t nb)
{
    for (size_t i = 0; i < nb; i++, x += SYNOR_QK, y += 2 + SYNOR_QK / 2) {
        /* the value of largest magnitude, the first one on a tie */
        float amax = 0.0f, max = 0.0f;
        for (int j = 0; j < SYNOR_QK; j++)
            if (amax < fabsf(x[j])) {
                amax = fabsf(x[j]);
                max = x[j];
            }
        const float d = max / -8, id = d != 0.0f ? 1.0f / d : 0.0f;
        int rc = put_scale(y, d, i);
        if (rc)
            return rc;
        for (int j = 0; j < SYNOR_QK / 2; j++) {
            /* + 8.5 then truncation: round half up, then the offset of 8 */
            int q0 = q4_of(x[j] * id + 8.5f), q1 = q4_of(x[j + SYNOR_QK / 2] * id + 8.5f);
            y[2 + j] = (unsigned char)(q0 | q1 << 4);
        }
    }
    return 0;
}

static int check_n(int type, size_t n, const void *a, const void *b)
{
    int i = find_type(type);
    if (i < 0)
        return synor__error(SYNOR_EINVAL, "unsupported tensor type %d", type);
    if (n % types[i].elems != 0)
        return synor__error(SYNOR_EINVAL, "%zu elements of %s: not a multiple of its block of %u",
                            n, types[i].name, types[i].elems);
    if (n && (!a || !b))
        return synor__error(SYNOR_EINVAL, "no buffer for %zu elements of %s", n, types[i].name);
    return 0;
}

int synor_ttype_quantize(int type, const float *src, void *dst, size_t n)
{
    int rc = check_n(type, n, src, dst);
    if (rc)
        return rc;
    unsigned char *y = dst;
    switch (type) {
    case SYNOR_TTYPE_F32:
        if (n)
            memcpy(dst, src, n * 4);
        return 0;
    case SYNOR_TTYPE_F16:
    case SYNOR_TTYPE_BF16:
        for (size_t i = 0; i < n; i++)
            st_u16(y + 2 * i, type == SYNOR_TTYPE_F16 ? synor_f32_to_f16(src[i])
                                                      : synor_f32_to_bf16(src[i]));
        return 0;
    default:
        break;
    }
    /* A NaN or inf would make the scale meaningless and the integer
     * conversions undefined. */
    for (size_t i = 0; i < n; i++)
        if (!isfinite(src[i]))
            return synor__error(SYNOR_EINVAL, "element %zu is %g: %s needs finite values", i,
                                (double)src[i], synor_ttype_name(type));
    return type == SYNOR_TTYPE_Q8_0 ? quantize_q8_0(src, y, n / SYNOR_QK)
                                    : quantize_q4_0(src, y, n / SYNOR_QK);
}

int synor_ttype_dequantize(int type, const void *src, float *dst, size_t n)
{
    int rc = check_n(type, n, src, dst);
    if (rc)
        return rc;
    const unsigned char *x = src;
    switch (type) {
    case SYNOR_TTYPE_F32:
        if (n)
            memcpy(dst, src, n * 4);
        break;
    case SYNOR_TTYPE_F16:
        for (size_t i = 0; i < n; i++)
            dst[i] = synor_f16_to_f32(ld_u16(x + 2 * i));
        break;
    case SYNOR_TTYPE_BF16:
        for (size_t i = 0; i < n; i++)
            dst[i] = synor_bf16_to_f32(ld_u16(x + 2 * i));
        break;
    case SYNOR_TTYPE_Q8_0:
        for (size_t b = 0; b < n / SYNOR_QK; b++, x += 2 + SYNOR_QK, dst += SYNOR_QK) {
            const float d = synor_f16_to_f32(ld_u16(x));
            for (int j = 0; j < SYNOR_QK; j++)
                dst[j] = (float)(int8_t)x[2 + j] * d;
        }
        break;
    case SYNOR_TTYPE_Q4_0:
        for (size_t b = 0; b < n / SYNOR_QK; b++, x += 2 + SYNOR_QK / 2, dst += SYNOR_QK) {
            const float d = synor_f16_to_f32(ld_u16(x));
            for (int j = 0; j < SYNOR_QK / 2; j++) {
                dst[j] = (float)((x[2 + j] & 0x0f) - 8) * d;
                dst[j + SYNOR_QK / 2] = (float)((x[2 + j] >> 4) - 8) * d;
            }
        }
        break;
    default:
        break;
    }
    return 0;
}
