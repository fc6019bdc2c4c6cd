/* test_llm_json.c - constrained decoding to a JSON object: valid objects
 * (tokenized by the model's tokenizer) pass token by token and end where
 * EOS becomes allowed; invalid texts (and blanks beyond one space or a
 * newline and its indentation, numbers beyond 16 digits) are stopped at the token that breaks them; random walks over whatever the mask allows always end in text the
 * project's JSON reader parses as an object; and a sampled request through
 * the scheduler writes only such text, EOS only after the object. */
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "json/json.h"
#include "llm_fixture.h"
#include "synor/error.h"
#include "synor/llm.h"
#include "test.h"

static char dir[32], path[64];

static synor_llm *load(void)
{
    if (!dir[0]) {
        snprintf(dir, sizeof dir, "/tmp/synor-json-XXXXXX");
        if (!mkdtemp(dir))
            return NULL;
        snprintf(path, sizeof path, "%s/m.gguf", dir);
        synor_llm_synth s = llm_test_synth(1);
        s.cfg.seq_len = 256;
        static const char text[] =
            "{\"name\": \"ball\", \"tags\": [\"red\", \"big\"], \"n\": -12.5e3, \"ok\": true, "
            "\"none\": null, \"inner\": {\"a\": [1, 2, {\"b\": false}]}} Once upon a time "
            "there was a little girl who loved to play in the park. \\u00e9 \\n \\\" ";
        s.text = text;
        s.text_len = sizeof text - 1;
        if (synor_llm_synth_gguf(&s, SYNOR_TTYPE_Q8_0, path))
            return NULL;
    }
    synor_llm *m = NULL;
    return synor_llm_load(path, NULL, &m) ? NULL : m;
}

/* Feeds doc as byte pieces (<0xHH>: id 3 + the byte, each decoding to its
 * byte): the count accepted before one was refused (all: n), and in *done
 * whether the object was closed after them, EOS then allowed and nothing
 * else. (Random walks and the scheduler below take merged pieces.) */
static long run_doc(synor_llm *m, const char *doc, long *n, int *done)
{
    const synor_tokenizer *tok = synor_llm_tokenizer(m);
    int32_t ids[512];
    *n = (long)strlen(doc);
    for (long i = 0; i < *n && i < 512; i++)
        ids[i] = 3 + (unsigned char)doc[i];
    synor_llm_json *j;
    if (*n > 512 || synor_llm_json_create(m, &j))
        return -1;
    long i = 0;
    for (; i < *n; i++)
        if (synor_llm_json_accept(j, ids[i]))
            break;
    *done = synor_llm_json_done(j) &&
            synor_llm_json_allows(j, synor_tokenizer_eos(tok)) &&
            !synor_llm_json_allows(j, ids[0]);
    synor_llm_json_destroy(j);
    return i;
}

TEST(objects_pass_and_others_stop)
{
    synor_llm *m = load();
    ASSERT(m != NULL);
    static const char *const good[] = {
        "{}",
        "{\"a\": 1}",
        "{\"name\": \"ball\", \"tags\": [\"red\", \"big\"], \"n\": -12.5e3, \"ok\": true}",
        "{\"s\": \"\\u00e9 \\n \\\" \\\\\", \"e\": [], \"o\": {}, \"z\": 0, \"f\": 0.25E-2}",
        "{\"deep\": [[[[{\"x\": [null, false, true, 7]}]]]]}",
        "{\"u\": \"\\ud83d\\ude00 \xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80\"}",
        "{\n  \"a\": [\n\t\t1,\n    2\n  ]\n}",
        /* 16 digits before and after the point, 3 in the exponent */
        "{\"n\": -1234567890123456.1234567890123456e-308}",
    };
    for (size_t i = 0; i < sizeof good / sizeof *good; i++) {
        long n;
        int done;
        long got = run_doc(m, good[i], &n, &done);
        if (got != n || !done)
            fprintf(stderr, "  %s: %ld of %ld tokens, done %d\n", good[i], got, n, done);
        ASSERT(got == n && done);
    }
    /* stopped at a token, or never closed */
    static const char *const bad[] = {
        "[1, 2]", "{\"a\": 01}", "{\"a\" 1}", "{\"a\": tru}", "{\"a\": 1,}", "{a: 1}",
        "{\"a\": 1} {", "{\"a\": [1}", "{\"a\": \"\\x\"}", "{\"a\": -}", "{\"a\": 1.}",
        "{\"a\": 1", "{\"a\": \"open", "{\"a\": \"\xff\"}", "{\"a\": \"\xc3(\"}",
        "{\"a\": \"\xed\xa0\x80\"}", "{\"a\": \"\\udc00\"}", "{\"a\": \"\\ud800x\"}",
        "{\"a\": \"\\u0000\"}", "{\"a\": \"\x01\"}",
        "{\"a\": 12345678901234567}", "{\"a\": 0.12345678901234567}", "{\"a\": 1e1000}",
        /* whitespace: one space, or a newline and at most 20 of indentation;
         * none before the object */
        " {}", "{  \"a\": 1}", "{\t\"a\": 1}", "{\"a\":\n                     1}", "{\"a\": 1 \n}",
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        long n;
        int done;
        long got = run_doc(m, bad[i], &n, &done);
        if (got == n && done)
            fprintf(stderr, "  %s passed\n", bad[i]);
        ASSERT(got < n || !done);
    }
    synor_llm_destroy(m);
}

/* Random walks over the tokens the mask allows (those holding a closer or
 * a quote weighted up, so that walks end): every one that ends is an
 * object the JSON reader parses. */
TEST(whatever_the_mask_allows_is_json)
{
    synor_llm *m = load();
    ASSERT(m != NULL);
    const synor_tokenizer *tok = synor_llm_tokenizer(m);
    int V = synor_llm_hparams_get(m)->vocab_size;
    int32_t eos = synor_tokenizer_eos(tok);
    float row[512];
    double w[512];
    char text[8192], piece[64];
    uint64_t rng = 42;
    int ended = 0;
    for (int walk = 0; walk < 60; walk++) {
        synor_llm_json *j;
        ASSERT_OK(synor_llm_json_create(m, &j));
        size_t len = 0;
        int32_t prev = eos;
        for (int step = 0; step < 2000 && len + 64 < sizeof text; step++) {
            for (int t = 0; t < V; t++)
                row[t] = 0;
            synor_llm_json_mask(j, row);
            double total = 0;
            for (int t = 0; t < V; t++) {
                long k = synor_tokenizer_decode(tok, prev, t, piece, sizeof piece);
                int closer = k > 0 && memchr(piece, '}', (size_t)(k < 64 ? k : 64)) != NULL;
                closer |= k > 0 && (memchr(piece, ']', (size_t)(k < 64 ? k : 64)) != NULL ||
                                    memchr(piece, '"', (size_t)(k < 64 ? k : 64)) != NULL);
                w[t] = row[t] == 0 ? (closer ? 40.0 : 1.0) : 0;
                total += w[t];
            }
            ASSERT(total > 0); /* never a dead end */
            rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
            double u = (double)(rng >> 11) / 9007199254740992.0 * total;
            int32_t t = 0;
            for (; t < V - 1 && u >= w[t]; t++)
                u -= w[t];
            while (w[t] == 0)
                t--;
            ASSERT_OK(synor_llm_json_accept(j, t));
            if (t == eos) {
                ended++;
                synor__jdoc *d;
                if (synor__json_parse(text, len, "walk", &d)) {
                    fprintf(stderr, "  walk %d: %.*s: %s\n", walk, (int)len, text, synor_errmsg());
                    ASSERT(0);
                }
                ASSERT(synor__jdoc_root(d)->type == SYNOR__J_OBJECT);
                synor__jdoc_free(d);
                break;
            }
            long k = synor_tokenizer_decode(tok, prev, t, text + len, sizeof text - len);
            ASSERT(k >= 0);
            len += (size_t)k;
            prev = t;
        }
        synor_llm_json_destroy(j);
    }
    fprintf(stderr, "  %d of 60 walks ended (EOS after the object)\n", ended);
    ASSERT(ended >= 30);
    synor_llm_destroy(m);
}

static int32_t toks[256];
static int ntoks;

static int on_token(uint64_t id, int32_t t, void *user)
{
    (void)id;
    (void)user;
    if (ntoks < 256)
        toks[ntoks++] = t;
    return 0;
}

static int reason;
static void on_done(uint64_t id, int why, void *user)
{
    (void)id;
    (void)user;
    reason = why;
}

/* Through the scheduler, sampled: every token one a fresh constraint
 * allows in turn; EOS only after the object. */
TEST(a_constrained_request_writes_json)
{
    synor_llm *m = load();
    synor_runtime *rt = llm_test_runtime(1);
    ASSERT(m && rt);
    synor_llm_ctx *c;
    synor_llm_sched *s;
    ASSERT_OK(synor_llm_ctx_create(m, rt, NULL, &c));
    ASSERT_OK(synor_llm_sched_create(c, NULL, &s));
    int closed = 0;
    for (uint64_t seed = 1; seed <= 6; seed++) {
        synor_llm_json *j, *check;
        ASSERT_OK(synor_llm_json_create(m, &j));
        ASSERT_OK(synor_llm_json_create(m, &check));
        int32_t p[2] = {1, 20};
        synor_llm_request rq = {.prompt = p, .n_prompt = 2, .max_new = 120, .json = j,
                                .on_token = on_token, .on_done = on_done};
        synor_sampler_init(&rq.sampler, 1.0f, 0, 1, seed);
        ntoks = 0;
        reason = -1;
        ASSERT_OK(synor_llm_sched_submit(s, &rq, NULL));
        while (synor_llm_sched_step(s) > 0)
            ;
        for (int i = 0; i < ntoks; i++)
            ASSERT_OK(synor_llm_json_accept(check, toks[i]));
        if (reason == SYNOR_LLM_DONE_EOS) {
            ASSERT(synor_llm_json_done(check));
            closed++;
        } else {
            ASSERT_EQ(reason, SYNOR_LLM_DONE_LENGTH);
        }
        synor_llm_json_destroy(j);
        synor_llm_json_destroy(check);
    }
    fprintf(stderr, "  %d of 6 sampled requests closed their object within 120 tokens\n",
            closed);
    llm_test_teardown(s, c, m, rt);
}

TEST(cleanup)
{
    unlink(path);
    rmdir(dir);
}

TEST_MAIN(objects_pass_and_others_stop, whatever_the_mask_allows_is_json,
          a_constrained_request_writes_json, cleanup)
