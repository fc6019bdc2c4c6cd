/* bench_requests.h - the seeded requests of the serving benchmarks:
 * bench_serve sends them to synor serve, bench_sched runs them through the
 * scheduler in its own process. With the same seed and prompt file both
 * draw the same prompts (and the same arrival gaps), so their figures
 * compare the same work. One translation unit each: the state is static. */
#ifndef SYNOR_BENCH_REQUESTS_H
#define SYNOR_BENCH_REQUESTS_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "synor.h"

/* The longest prompt text, in characters. */
#define BENCH_PROMPT_MAX (64 * 16)

static uint64_t bench_rng = 0x9E3779B97F4A7C15ull;

static inline void bench_rng_seed(uint64_t seed) { bench_rng ^= seed * 0xD1B54A32D192ED03ull; }

/* xorshift64, uniform in [0, 1) */
static inline double bench_uniform(void)
{
    bench_rng ^= bench_rng << 13;
    bench_rng ^= bench_rng >> 7;
    bench_rng ^= bench_rng << 17;
    return (double)(bench_rng >> 11) * (1.0 / 9007199254740992.0);
}

/* The whole file, NUL-terminated (malloc'd), or NULL. */
static inline char *bench_read_all(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *s = n >= 0 ? malloc((size_t)n + 1) : NULL;
    if (s && fread(s, 1, (size_t)n, f) != (size_t)n) {
        free(s);
        s = NULL;
    } else if (s) {
        s[n] = 0;
    }
    fclose(f);
    return s;
}

/* A prompt of `words` words of text from the first word boundary after
 * off, at most BENCH_PROMPT_MAX characters, with the characters JSON would
 * need escaped (and non-ASCII bytes) made spaces (malloc'd). */
static inline char *bench_prompt_text(const char *text, size_t off, int words)
{
    size_t n = strlen(text);
    while (off < n && text[off] != ' ')
        off++;
    char *p = malloc(BENCH_PROMPT_MAX + 1);
    if (!p)
        return NULL;
    size_t o = 0;
    int w = 0;
    for (size_t i = off + 1; i < n && w < words && o < BENCH_PROMPT_MAX; i++) {
        char c = text[i];
        if (c == ' ')
            w++;
        if (c == '"' || c == '\\' || (unsigned char)c < 0x20 || (unsigned char)c >= 0x80)
            c = ' ';
        p[o++] = c;
    }
    p[o] = 0;
    return p;
}

/* The prompt file (at least 4 KiB, NUL-terminated in *text) and the model:
 * 0, or 1 with a message naming prog and what failed. */
static inline int bench_inputs(const char *prog, const char *prompts, const char *model,
                               char **text, synor_llm **m)
{
    *text = bench_read_all(prompts);
    if (!*text || strlen(*text) < 4096) {
        fprintf(stderr, "%s: %s: cannot read at least 4 KiB of prompt text\n", prog, prompts);
        return 1;
    }
    if (synor_llm_load(model, NULL, m)) {
        fprintf(stderr, "%s: %s\n", prog, synor_errmsg());
        return 1;
    }
    return 0;
}

#endif
