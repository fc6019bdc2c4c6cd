/* test_llm_json.c - constrained decoding to a JSON object: valid objects
 * (tokenized by the model's tokenizer) pass token by token and end where
 * EOS becomes allowed; invalid texts (and blanks beyond one space or a
 * newline and its indentation, numbers beyond 16 digits) are stopped at
 * the token that breaks them; random walks over whatever the mask allows
 * always end in text the project's JSON reader parses as an object; and a
 * sampled request through the scheduler writes only such text, EOS only
 * after the object. */
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "json/json.h"
#include "json_fixture.h"
#include "synor/error.h"
#include "synor/llm.h"
#include "test.h"

static json_test_model model;

static synor_llm *load(void)
{
    static const char text[] =
        "{\"name\": \"ball\", \"tags\": [\"red\", \"big\"], \"n\": -12.5e3, \"ok\": true, "
        "\"none\": null, \"inner\": {\"a\": [1, 2, {\"b\": false}]}} Once upon a time "
        "there was a little girl who loved to play in the park. \\u00e9 \\n \\\" ";
    return json_test_load(&model, "synor-json", text, sizeof text - 1);
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
    ASSERT_OK(json_test_expect(m, NULL, good, sizeof good / sizeof *good, bad,
                               sizeof bad / sizeof *bad));
    synor_llm_destroy(m);
}

/* Random walks over the tokens the mask allows (those holding a closer or
 * a quote weighted up, so that walks end): every one that ends is an
 * object the JSON reader parses. */
TEST(whatever_the_mask_allows_is_json)
{
    synor_llm *m = load();
    ASSERT(m != NULL);
    char text[8192];
    uint64_t rng = 42;
    int ended = 0;
    for (int walk = 0; walk < 60; walk++) {
        size_t len;
        int r = json_test_walk(m, NULL, &rng, text, sizeof text, &len);
        ASSERT(r >= 0); /* never a dead end */
        if (r == 1) {
            ended++;
            synor__jdoc *d;
            if (synor__json_parse(text, len, "walk", &d)) {
                fprintf(stderr, "  walk %d: %.*s: %s\n", walk, (int)len, text, synor_errmsg());
                ASSERT(0);
            }
            ASSERT(synor__jdoc_root(d)->type == SYNOR__J_OBJECT);
            synor__jdoc_free(d);
        }
    }
    fprintf(stderr, "  %d of 60 walks ended (EOS after the object)\n", ended);
    ASSERT(ended >= 30);
    synor_llm_destroy(m);
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
        json_test_got got;
        ASSERT_OK(json_test_sample(s, j, seed, 120, &got));
        for (int i = 0; i < got.n; i++)
            ASSERT_OK(synor_llm_json_accept(check, got.t[i]));
        if (got.reason == SYNOR_LLM_DONE_EOS) {
            ASSERT(synor_llm_json_done(check));
            closed++;
        } else {
            ASSERT_EQ(got.reason, SYNOR_LLM_DONE_LENGTH);
        }
        synor_llm_json_destroy(j);
        synor_llm_json_destroy(check);
    }
    fprintf(stderr, "  %d of 6 sampled requests closed their object within 120 tokens\n",
            closed);
    llm_test_teardown(s, c, m, rt);
}

TEST(cleanup) { json_test_unlink(&model); }

TEST_MAIN(objects_pass_and_others_stop, whatever_the_mask_allows_is_json,
          a_constrained_request_writes_json, cleanup)
