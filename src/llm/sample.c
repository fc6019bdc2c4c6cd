/* sample.c - drawing the next token from logits: greedy, or temperature
 * with optional top-k and top-p (nucleus) truncation, from a seeded
 * xorshift64* generator so a seed replays the same text.
 *
 * A draw is the Gumbel-max trick: one step of the generator gives 64 bits
 * x, every candidate token t gets the noise llm_gumbel(x, t), and the
 * token is the candidate with the largest logit / temperature + noise -
 * distributed as the softmax of the candidates' logits at that
 * temperature. The token is then a function of the draw and the logits
 * alone, which is what speculative rounds rely on (sched.c): a draft's
 * logits drawn with the draw a token will take propose that token
 * whenever the draft ranks it first under the same noise, and the target
 * decides with the same draw, so the text is the same with or without a
 * draft. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common/common.h"
#include "llm/llm_internal.h"

void synor_sampler_init(synor_sampler *s, float temperature, int top_k, float top_p, uint64_t seed)
{
    s->temperature = temperature < 0 ? 0 : temperature;
    s->top_k = top_k < 0 ? 0 : top_k;
    s->top_p = top_p <= 0 || top_p > 1 ? 1.0f : top_p;
    s->state = seed ? seed : 0x9E3779B97F4A7C15ull;
}

static uint64_t rand_u64(uint64_t *st)
{
    uint64_t x = *st;
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    *st = x;
    return x * 0x2545F4914F6CDD1Dull;
}

static float rand_f32(uint64_t *st) { return (float)(rand_u64(st) >> 40) / 16777216.0f; }

typedef struct cand {
    float p;
    int32_t id;
} cand;

static int cand_desc(const void *a, const void *b)
{
    const cand *x = a, *y = b;
    if (x->p != y->p)
        return x->p < y->p ? 1 : -1;
    return x->id < y->id ? -1 : x->id > y->id;
}

/* Min-heap of the k most probable candidates (sift down from i). */
static void heap_down(cand *h, int k, int i)
{
    for (;;) {
        int l = 2 * i + 1, m = i;
        if (l < k && cand_desc(&h[l], &h[m]) > 0)
            m = l;
        if (l + 1 < k && cand_desc(&h[l + 1], &h[m]) > 0)
            m = l + 1;
        if (m == i)
            return;
        cand t = h[i];
        h[i] = h[m];
        h[m] = t;
        i = m;
    }
}

/* The candidates the sampler draws from, by weight (unnormalised), in c
 * (n entries of room): temperature, then top-k, then top-p. Returns their
 * count and their total weight in *mass. Temperature 0: the argmax alone. */
static int candidates(const synor_sampler *s, const float *logits, int n, cand *c, float *mass)
{
    int32_t best = 0;
    for (int i = 1; i < n; i++)
        if (logits[i] > logits[best])
            best = i;
    if (s->temperature == 0 || n == 1) {
        c[0] = (cand){1.0f, best};
        *mass = 1.0f;
        return 1;
    }
    float mx = logits[best], sum = 0;
    for (int i = 0; i < n; i++) {
        c[i].p = expf((logits[i] - mx) / s->temperature);
        c[i].id = i;
        sum += c[i].p;
    }
    int m = n;
    if (s->top_k > 0 && s->top_k < n) {
        int k = s->top_k;
        for (int i = k / 2 - 1; i >= 0; i--)
            heap_down(c, k, i);
        for (int i = k; i < n; i++)
            if (cand_desc(&c[i], &c[0]) < 0) {
                c[0] = c[i];
                heap_down(c, k, 0);
            }
        m = k;
        sum = 0;
        for (int i = 0; i < m; i++)
            sum += c[i].p;
    }
    if (s->top_p < 1.0f) {
        /* Only candidates above (1 - p) / (m - 1) of the mass can be in the
         * nucleus (run.c's observation): sort just those. */
        float cut = (1.0f - s->top_p) / (float)(m > 1 ? m - 1 : 1) * sum;
        int j = 0;
        for (int i = 0; i < m; i++)
            if (c[i].p >= cut)
                c[j++] = c[i];
        m = j;
        qsort(c, (size_t)m, sizeof *c, cand_desc);
        float acc = 0;
        for (int i = 0; i < m; i++) {
            acc += c[i].p;
            if (acc >= s->top_p * sum) {
                m = i + 1;
                break;
            }
        }
    }
    float w = 0;
    for (int i = 0; i < m; i++)
        w += c[i].p;
    *mass = w;
    return m;
}

int32_t synor__llm_gumbel_argmax(const float *l, int n, float inv_t, uint64_t x)
{
    float kb = -INFINITY;
    int32_t out = 0;
    for (int32_t t = 0; t < n; t++) {
        float key = fmaf(l[t], inv_t, llm_gumbel(x, t));
        if (key > kb) {
            kb = key;
            out = t;
        }
    }
    return out;
}

int32_t synor_sampler_sample(synor_sampler *s, const float *logits, int n)
{
    if (s->temperature == 0 || n == 1) {
        int32_t best = 0;
        for (int i = 1; i < n; i++)
            if (logits[i] > logits[best])
                best = i;
        return best;
    }
    uint64_t x = rand_u64(&s->state);
    float it = 1.0f / s->temperature;
    if (s->top_k == 0 && s->top_p >= 1.0f) { /* every token a candidate */
        const llm_kernels *k = synor__llm_kernels();
        return (k->gumbel_argmax ? k->gumbel_argmax : synor__llm_gumbel_argmax)(logits, n, it, x);
    }
    cand *c = synor__malloc((size_t)n * sizeof *c);
    if (!c)
        return 0;
    float mass;
    int m = candidates(s, logits, n, c, &mass);
    float kb = -INFINITY;
    int32_t out = c[0].id;
    for (int i = 0; i < m; i++) {
        float key = fmaf(logits[c[i].id], it, llm_gumbel(x, c[i].id));
        if (key > kb || (key == kb && c[i].id < out)) {
            kb = key;
            out = c[i].id;
        }
    }
    synor__free(c);
    return out;
}

int synor__sampler_probs(const synor_sampler *s, const float *logits, int n, float *probs)
{
    cand *c = synor__malloc((size_t)n * sizeof *c);
    if (!c)
        return SYNOR_ENOMEM;
    float mass;
    int m = candidates(s, logits, n, c, &mass);
    memset(probs, 0, (size_t)n * sizeof *probs);
    for (int i = 0; i < m; i++)
        probs[c[i].id] = c[i].p / mass;
    synor__free(c);
    return 0;
}

int32_t synor__sampler_draw(synor_sampler *s, const float *probs, int n)
{
    float mass = 0;
    for (int i = 0; i < n; i++)
        mass += probs[i];
    float r = rand_f32(&s->state) * mass, acc = 0;
    int32_t last = 0;
    for (int i = 0; i < n; i++) {
        if (probs[i] <= 0)
            continue;
        last = i;
        acc += probs[i];
        if (r < acc)
            return i;
    }
    return last;
}
