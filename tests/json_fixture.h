/* json_fixture.h - what the constrained-decoding tests share
 * (test_llm_json.c, test_llm_schema.c): a tiny model whose vocabulary is
 * trained on a text with JSON in it, documents fed byte piece by byte
 * piece, lists of texts that must pass and texts that must stop, and
 * random walks over whatever a constraint's mask allows. */
#ifndef SYNOR_TEST_JSON_FIXTURE_H
#define SYNOR_TEST_JSON_FIXTURE_H

#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "llm_fixture.h"
#include "synor/error.h"
#include "synor/llm.h"

typedef struct json_test_model {
    char dir[40], path[64];
} json_test_model;

/* The model (one layer, Q8_0, context 256, the vocabulary trained on
 * text), written once under /tmp/PREFIX-XXXXXX and loaded each call. */
static inline synor_llm *json_test_load(json_test_model *t, const char *prefix, const char *text,
                                        size_t len)
{
    if (!t->dir[0]) {
        snprintf(t->dir, sizeof t->dir, "/tmp/%s-XXXXXX", prefix);
        if (!mkdtemp(t->dir))
            return NULL;
        snprintf(t->path, sizeof t->path, "%s/m.gguf", t->dir);
        synor_llm_synth s = llm_test_synth(1);
        s.cfg.seq_len = 256;
        s.text = text;
        s.text_len = len;
        if (synor_llm_synth_gguf(&s, SYNOR_TTYPE_Q8_0, t->path))
            return NULL;
    }
    synor_llm *m = NULL;
    return synor_llm_load(t->path, NULL, &m) ? NULL : m;
}

static inline void json_test_unlink(json_test_model *t)
{
    unlink(t->path);
    rmdir(t->dir);
}

/* Feeds doc to a constraint of schema g (NULL: any object) as byte
 * pieces (<0xHH>: id 3 + the byte, each decoding to its byte): the count
 * accepted before one was refused (all: *n), and in *done whether the
 * text may then end: EOS allowed, and not the document's first byte. */
static inline long json_test_feed(synor_llm *m, synor_llm_schema *g, const char *doc, long *n,
                                  int *done)
{
    int32_t ids[512];
    *n = (long)strlen(doc);
    for (long i = 0; i < *n && i < 512; i++)
        ids[i] = 3 + (unsigned char)doc[i];
    synor_llm_json *j;
    if (*n > 512 || synor_llm_json_create_schema(m, g, &j))
        return -1;
    long i = 0;
    while (i < *n && synor_llm_json_accept(j, ids[i]) == 0)
        i++;
    *done = synor_llm_json_done(j) &&
            synor_llm_json_allows(j, synor_tokenizer_eos(synor_llm_tokenizer(m))) &&
            !synor_llm_json_allows(j, ids[0]);
    synor_llm_json_destroy(j);
    return i;
}

/* Every good text passes whole and may end there; every bad one is
 * stopped at a token or may not end. 0, or -1 (the text named). */
static inline int json_test_expect(synor_llm *m, synor_llm_schema *g, const char *const *good,
                                   size_t ngood, const char *const *bad, size_t nbad)
{
    int rc = 0;
    for (size_t i = 0; i < ngood + nbad; i++) {
        const char *doc = i < ngood ? good[i] : bad[i - ngood];
        long n;
        int done;
        long got = json_test_feed(m, g, doc, &n, &done);
        int passed = got == n && done;
        if (passed != (i < ngood)) {
            fprintf(stderr, "  %s: %ld of %ld bytes, may end %d (want %s)\n", doc, got, n, done,
                    i < ngood ? "to pass" : "to stop");
            rc = -1;
        }
    }
    return rc;
}

/* One random walk over the tokens a constraint of schema g allows (those
 * holding a closer or a quote weighted up, so that walks end), rng its
 * xorshift state: 1 when it ended (EOS drawn; its text in text[0..*len)),
 * 0 when 2,000 steps or the room ran out first, -1 at a dead end (no
 * token allowed) or a token the constraint then refused. */
static inline int json_test_walk(synor_llm *m, synor_llm_schema *g, uint64_t *rng, char *text,
                                 size_t cap, size_t *len)
{
    const synor_tokenizer *tok = synor_llm_tokenizer(m);
    int V = synor_llm_hparams_get(m)->vocab_size;
    int32_t eos = synor_tokenizer_eos(tok);
    float row[512];
    double w[512];
    char piece[64];
    synor_llm_json *j;
    if (V > 512 || synor_llm_json_create_schema(m, g, &j))
        return -1;
    int32_t prev = eos;
    int rc = 0;
    *len = 0;
    for (int step = 0; step < 2000 && *len + 64 < cap && rc == 0; step++) {
        for (int t = 0; t < V; t++)
            row[t] = 0;
        synor_llm_json_mask(j, row);
        double total = 0;
        for (int t = 0; t < V; t++) {
            long k = synor_tokenizer_decode(tok, prev, t, piece, sizeof piece);
            size_t kk = (size_t)(k > 0 ? (k < 64 ? k : 64) : 0);
            int closer = kk && (memchr(piece, '}', kk) || memchr(piece, ']', kk) ||
                                memchr(piece, '"', kk));
            w[t] = row[t] == 0 ? (closer ? 40.0 : 1.0) : 0;
            total += w[t];
        }
        if (total <= 0) { /* a dead end */
            rc = -1;
            break;
        }
        *rng ^= *rng << 13, *rng ^= *rng >> 7, *rng ^= *rng << 17;
        double u = (double)(*rng >> 11) / 9007199254740992.0 * total;
        int32_t t = 0;
        for (; t < V - 1 && u >= w[t]; t++)
            u -= w[t];
        while (w[t] == 0)
            t--;
        if (synor_llm_json_accept(j, t))
            rc = -1;
        else if (t == eos)
            rc = 1;
        else {
            long k = synor_tokenizer_decode(tok, prev, t, text + *len, cap - *len);
            rc = k < 0 ? -1 : 0;
            *len += k > 0 ? (size_t)k : 0;
            prev = t;
        }
    }
    synor_llm_json_destroy(j);
    return rc;
}

/* What one request through the scheduler gave: its tokens (EOS not
 * among them) and its SYNOR_LLM_DONE_* reason. */
typedef struct json_test_got {
    int32_t t[256];
    int n, reason;
} json_test_got;

static inline int json_test_on_token(uint64_t id, int32_t t, void *user)
{
    json_test_got *g = (json_test_got *)user;
    (void)id;
    if (g->n < 256)
        g->t[g->n++] = t;
    return 0;
}

static inline void json_test_on_done(uint64_t id, int why, void *user)
{
    (void)id;
    ((json_test_got *)user)->reason = why;
}

/* One request (prompt: ids 1, 20), sampled at temperature 1 with seed and
 * constrained by j, run through s to its end: 0, or the submit's error. */
static inline int json_test_sample(synor_llm_sched *s, synor_llm_json *j, uint64_t seed,
                                   int max_new, json_test_got *got)
{
    int32_t p[2] = {1, 20};
    synor_llm_request rq = {.prompt = p, .n_prompt = 2, .max_new = max_new, .json = j,
                            .on_token = json_test_on_token, .on_done = json_test_on_done,
                            .user = got};
    synor_sampler_init(&rq.sampler, 1.0f, 0, 1, seed);
    got->n = 0;
    got->reason = -1;
    int e = synor_llm_sched_submit(s, &rq, NULL);
    while (!e && synor_llm_sched_step(s) > 0)
        ;
    return e;
}

#endif
