/* crc32c.c - CRC-32C (common.h). */
#include <pthread.h>
#include <string.h>

#include "common/common.h"

static uint32_t crc_table[256];
static int use_hw;
static pthread_once_t once = PTHREAD_ONCE_INIT;

#if defined(__x86_64__) && defined(__GNUC__)
__attribute__((target("sse4.2"))) static uint32_t crc_hw(uint32_t crc, const unsigned char *p,
                                                         size_t n)
{
    uint64_t c = crc;
    while (n >= 8) {
        uint64_t v;
        memcpy(&v, p, 8);
        c = __builtin_ia32_crc32di(c, v);
        p += 8;
        n -= 8;
    }
    uint32_t c32 = (uint32_t)c;
    while (n--)
        c32 = __builtin_ia32_crc32qi(c32, *p++);
    return c32;
}
static int have_sse42(void) { return __builtin_cpu_supports("sse4.2"); }
#else
static uint32_t crc_hw(uint32_t crc, const unsigned char *p, size_t n)
{
    (void)p;
    (void)n;
    return crc;
}
static int have_sse42(void) { return 0; }
#endif

static void crc_init(void)
{
    for (uint32_t i = 0; i < 256; i++) {
        uint32_t c = i;
        for (int k = 0; k < 8; k++)
            c = c & 1 ? (c >> 1) ^ 0x82f63b78u : c >> 1; /* Castagnoli, reflected */
        crc_table[i] = c;
    }
    use_hw = have_sse42();
}

uint32_t synor__crc32c(uint32_t crc, const void *data, size_t n)
{
    const unsigned char *p = data;
    pthread_once(&once, crc_init);
    crc = ~crc;
    if (use_hw) {
        crc = crc_hw(crc, p, n);
    } else {
        while (n--)
            crc = crc_table[(crc ^ *p++) & 0xff] ^ (crc >> 8);
    }
    return ~crc;
}
