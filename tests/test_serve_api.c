/* test_serve_api.c - synor serve's request checking and text encoding
 * (src/serve/api.c), without HTTP: the CLI test (tests/cli/serve.sh) drives
 * the server itself. */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "json/json.h"
#include "serve/serve_api.h"
#include "serve/toolscan.h"
#include "synor/llm.h"
#include "test.h"

static int parse(const char *body, int chat, synor__serve_req *r)
{
    return synor__serve_req_parse(body, strlen(body), chat, r);
}

/* s[0..n) as serve writes it, parsed back by the strict reader: the
 * string it holds (static), or NULL if the JSON is invalid. */
static const char *round_trip(const char *s, size_t n)
{
    static char out[256];
    synor__buf b;
    synor__buf_init(&b);
    synor__serve_json_text(&b, s, n);
    synor__jdoc *d;
    const char *r = NULL;
    if (!synor__json_parse(b.data, b.len, "t", &d)) {
        synor__strlcpy(out, synor__jdoc_root(d)->u.str.s, sizeof out);
        r = out;
        synor__jdoc_free(d);
    }
    synor__buf_free(&b);
    return r;
}

TEST(completion_defaults_and_fields)
{
    synor__serve_req r;
    ASSERT_OK(parse("{\"prompt\":\"Hi\"}", 0, &r));
    ASSERT_STREQ(r.prompt, "Hi");
    ASSERT_EQ(r.max_tokens, 16);
    ASSERT(r.temperature == 1 && r.top_p == 1 && r.top_k == 0 && !r.stream && !r.has_seed);
    ASSERT(r.model == NULL && r.n == 1 && !r.echo);
    synor__serve_req_free(&r);
    ASSERT_OK(parse("{\"model\":\"m\",\"prompt\":\"a\\tb\",\"max_tokens\":3,\"temperature\":0,"
                    "\"top_p\":0.5,\"top_k\":7,\"seed\":9,\"stream\":true,\"user\":\"x\","
                    "\"stop\":null,\"n\":1,\"presence_penalty\":0}",
                    0, &r));
    ASSERT_STREQ(r.model, "m");
    ASSERT_STREQ(r.prompt, "a\tb");
    ASSERT_EQ(r.max_tokens, 3);
    ASSERT(r.temperature == 0 && r.top_p == 0.5 && r.top_k == 7 && r.stream);
    ASSERT(r.has_seed && r.seed == 9);
    ASSERT_STREQ(r.user, "x");
    ASSERT_EQ(r.n_stop, 0);
    ASSERT(r.presence_penalty == 0 && r.frequency_penalty == 0 && !synor__serve_req_extras(&r));
    synor__serve_req_free(&r);
    ASSERT(r.user == NULL);
    /* a prompt of token ids (read as they are), a list of one prompt, return_token_ids */
    ASSERT_OK(parse("{\"prompt\":[1,40,7],\"return_token_ids\":true}", 0, &r));
    ASSERT_STREQ(r.prompt, "");
    ASSERT(r.n_prompt_ids == 3 && r.prompt_ids[0] == 1 && r.prompt_ids[1] == 40 &&
           r.prompt_ids[2] == 7 && r.return_ids && synor__serve_req_extras(&r));
    synor__serve_req_free(&r);
    ASSERT(r.prompt_ids == NULL && r.n_prompt_ids == 0);
    /* fill in the middle: a suffix beside a text prompt (null: none) */
    ASSERT_OK(parse("{\"prompt\":\"def f(\",\"suffix\":\"):\\n\"}", 0, &r));
    ASSERT(r.suffix && !strcmp(r.suffix, "):\n") && synor__serve_req_extras(&r));
    synor__serve_req_free(&r);
    ASSERT(r.suffix == NULL);
    ASSERT_OK(parse("{\"prompt\":\"x\",\"suffix\":null}", 0, &r));
    ASSERT(r.suffix == NULL);
    synor__serve_req_free(&r);
    ASSERT_OK(parse("{\"prompt\":[\"Hi\"]}", 0, &r));
    ASSERT(!strcmp(r.prompt, "Hi") && r.n_prompt_ids == 0 && !r.return_ids);
    synor__serve_req_free(&r);
    ASSERT_OK(parse("{\"prompt\":\"x\",\"presence_penalty\":-2,\"frequency_penalty\":0.5}", 0, &r));
    ASSERT(r.presence_penalty == -2 && r.frequency_penalty == 0.5 && synor__serve_req_extras(&r));
    synor__serve_req_free(&r);
    /* logprobs: completions take a count, chat a flag and top_logprobs */
    ASSERT_OK(parse("{\"prompt\":\"x\",\"logprobs\":3}", 0, &r));
    ASSERT(r.has_logprobs && r.top_logprobs == 3 && synor__serve_req_extras(&r));
    synor__serve_req_free(&r);
    ASSERT_OK(parse("{\"prompt\":\"x\",\"logprobs\":null}", 0, &r));
    ASSERT(!r.has_logprobs);
    synor__serve_req_free(&r);
    ASSERT_OK(parse("{\"messages\":[{\"role\":\"user\",\"content\":\"x\"}],\"logprobs\":true,"
                    "\"top_logprobs\":20}", 1, &r));
    ASSERT(r.has_logprobs && r.top_logprobs == 20);
    synor__serve_req_free(&r);
    /* response_format: json_object or text */
    ASSERT_OK(parse("{\"prompt\":\"x\",\"response_format\":{\"type\":\"json_object\"}}", 0, &r));
    ASSERT(r.json_object && synor__serve_req_extras(&r));
    synor__serve_req_free(&r);
    ASSERT_OK(parse("{\"prompt\":\"x\",\"response_format\":{\"type\":\"text\"}}", 0, &r));
    ASSERT(!r.json_object && !synor__serve_req_extras(&r));
    synor__serve_req_free(&r);
    /* json_schema (OpenAI's) and json_object with a schema (llama.cpp's): compiled, and its
     * compact text kept for the exact-match cache's key */
    ASSERT_OK(parse("{\"prompt\":\"x\",\"response_format\":{\"type\":\"json_schema\","
                    "\"json_schema\":{\"name\":\"t\",\"strict\":true,\"schema\":{\"type\": "
                    "\"object\", \"properties\": {\"a\": {\"type\": \"integer\"}}}}}}",
                    0, &r));
    ASSERT(r.json_object && r.schema && synor__serve_req_extras(&r));
    ASSERT_STREQ(r.schema_text,
                 "{\"type\":\"object\",\"properties\":{\"a\":{\"type\":\"integer\"}}}");
    synor__serve_req_free(&r);
    ASSERT(!r.schema && !r.schema_text);
    ASSERT_OK(parse("{\"prompt\":\"x\",\"response_format\":{\"type\":\"json_object\",\"schema\":"
                    "{\"type\":\"object\"}}}", 0, &r));
    ASSERT(r.json_object && r.schema);
    synor__serve_req_free(&r);
    /* logit_bias: token ids to biases */
    ASSERT_OK(parse("{\"prompt\":\"x\",\"logit_bias\":{\"5\":-100,\"17\":2.5}}", 0, &r));
    ASSERT(r.n_bias == 2 && r.bias_tok[0] == 5 && r.bias_val[0] == -100 && r.bias_tok[1] == 17 &&
           r.bias_val[1] == 2.5f && synor__serve_req_extras(&r));
    synor__serve_req_free(&r);
    ASSERT(r.n_bias == 0 && r.bias_tok == NULL);
    ASSERT_OK(parse("{\"prompt\":\"x\",\"logit_bias\":{}}", 0, &r));
    ASSERT(r.n_bias == 0 && !synor__serve_req_extras(&r));
    synor__serve_req_free(&r);
    /* logprobs with stream, echo, n choices */
    ASSERT_OK(parse("{\"prompt\":\"x\",\"logprobs\":2,\"stream\":true,\"echo\":true,\"n\":16}", 0,
                    &r));
    ASSERT(r.has_logprobs && r.stream && r.echo && r.n == 16 && synor__serve_req_extras(&r));
    synor__serve_req_free(&r);
    ASSERT_OK(parse("{\"prompt\":\"x\",\"best_of\":4,\"n\":2}", 0, &r));
    ASSERT(r.best_of == 4 && r.n == 2 && synor__serve_req_extras(&r));
    synor__serve_req_free(&r);
    ASSERT_OK(parse("{\"prompt\":\"x\",\"echo\":false,\"n\":2}", 0, &r));
    ASSERT(!r.echo && r.n == 2 && synor__serve_req_extras(&r));
    synor__serve_req_free(&r);
    /* stop: a string, or up to four; an empty array is none */
    ASSERT_OK(parse("{\"prompt\":\"x\",\"stop\":\"\\n\"}", 0, &r));
    ASSERT(r.n_stop == 1 && !strcmp(r.stop[0], "\n"));
    synor__serve_req_free(&r);
    ASSERT(r.n_stop == 0 && r.stop[0] == NULL);
    ASSERT_OK(parse("{\"prompt\":\"x\",\"stop\":[\"a b\",\"\\nuser:\",\"c\",\"d\"]}", 0, &r));
    ASSERT(r.n_stop == 4 && !strcmp(r.stop[1], "\nuser:") && !strcmp(r.stop[3], "d"));
    synor__serve_req_free(&r);
    ASSERT_OK(parse("{\"prompt\":\"x\",\"stop\":[]}", 0, &r));
    ASSERT_EQ(r.n_stop, 0);
    synor__serve_req_free(&r);
}

/* Where an answer stops, and what a stream holds back. */
TEST(stop_sequences_in_text)
{
    char a[] = "user:", c[] = "ab", d[] = "xyz";
    char *stop[] = {a, c, d};
    const char *t = "hello\nuser: hi";
    size_t n = strlen(t);
    ASSERT_EQ(synor__serve_stop_find(stop, 1, t, n, 0), 6);
    ASSERT_EQ(synor__serve_stop_find(stop, 1, t, n, 10), 6);  /* a match ending at 10 */
    ASSERT_EQ(synor__serve_stop_find(stop, 1, t, n, 11), SIZE_MAX); /* none ends past 10 */
    ASSERT_EQ(synor__serve_stop_find(stop, 3, "zab user:", 9, 0), 1); /* the earliest of several */
    ASSERT_EQ(synor__serve_stop_find(stop, 3, "xy", 2, 0), SIZE_MAX);
    ASSERT_EQ(synor__serve_stop_tail(stop, 3, "hello us", 8), 2); /* "us" begins "user:" */
    ASSERT_EQ(synor__serve_stop_tail(stop, 3, "hello xy", 8), 2);
    ASSERT_EQ(synor__serve_stop_tail(stop, 3, "hello a", 7), 1);
    ASSERT_EQ(synor__serve_stop_tail(stop, 3, "hello", 5), 0);
    ASSERT_EQ(synor__serve_stop_tail(stop, 3, "", 0), 0);
}

/* A token's log-probability and its alternatives: the log-softmax, best
 * first. */
TEST(logprobs_of_a_row)
{
    const float l[5] = {1.0f, 3.0f, -2.0f, 3.0f, 0.5f};
    double z = 0;
    for (int i = 0; i < 5; i++)
        z += exp((double)l[i]);
    synor__serve_lp e;
    synor__serve_lp_compute(l, 5, 0, 3, &e);
    ASSERT(e.id == 0 && fabs(e.lp - (1.0 - log(z))) < 1e-5);
    ASSERT_EQ(e.ntop, 3);
    ASSERT(e.top_id[0] == 1 && e.top_id[1] == 3 && e.top_id[2] == 0); /* ties: lowest id first */
    ASSERT(fabs(e.top[0] - (3.0 - log(z))) < 1e-5 && e.top[2] == e.lp);
    synor__serve_lp_compute(l, 5, 2, 0, &e);
    ASSERT(e.ntop == 0 && fabs(e.lp - (-2.0 - log(z))) < 1e-5);
    synor__serve_lp_compute(l, 5, 4, 99, &e); /* more than the row: all of it */
    ASSERT(e.ntop == 5 && e.top_id[4] == 2);
}

TEST(chat_template)
{
    synor__serve_req r;
    ASSERT_OK(parse("{\"messages\":[{\"role\":\"system\",\"content\":\"Be brief.\"},"
                    "{\"role\":\"user\",\"content\":[{\"type\":\"text\",\"text\":\"Hi \"},"
                    "{\"type\":\"text\",\"text\":\"there\"}]},"
                    "{\"role\":\"assistant\",\"content\":null}],\"max_completion_tokens\":5}",
                    1, &r));
    ASSERT_STREQ(r.prompt, "system: Be brief.\nuser: Hi there\nassistant: \nassistant: ");
    ASSERT_EQ(r.max_tokens, 5);
    synor__serve_req_free(&r);
}

/* The families a model's Jinja text shows, and each one's rendering of one conversation. */
static const char *render(const char *jinja, const char *name, const char *body)
{
    static char out[2048];
    synor__serve_tmpl t;
    synor__serve_req r;
    if (synor__serve_tmpl_pick(name, jinja, "</s>", &t) ||
        synor__serve_req_parse_tmpl(body, strlen(body), 1, &t, &r))
        return synor_errmsg();
    snprintf(out, sizeof out, "%s|%s|%d", synor__serve_tmpl_name(&t), r.prompt, r.special);
    synor__serve_req_free(&r);
    return out;
}

TEST(chat_templates_by_family)
{
    const char *conv = "{\"messages\":[{\"role\":\"developer\",\"content\":\"Be brief.\"},"
                       "{\"role\":\"user\",\"content\":\" Hi \"},{\"role\":\"assistant\","
                       "\"content\":\"Hello\"},{\"role\":\"user\",\"content\":\"Bye\"}]}";
    ASSERT_STREQ(render(NULL, NULL, conv),
                 "plain|system: Be brief.\nuser:  Hi \nassistant: Hello\nuser: Bye\n"
                 "assistant: |0");
    ASSERT_STREQ(render("{{ '<|im_start|>' + m }}", NULL, conv),
                 "chatml|<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\n Hi "
                 "<|im_end|>\n<|im_start|>assistant\nHello<|im_end|>\n<|im_start|>user\nBye"
                 "<|im_end|>\n<|im_start|>assistant\n|1");
    /* Llama-2-chat's variants: a system block, spaces around answers, BOS before later turns */
    const char *l2 = "<<SYS>> ' ' + eos_token bos_token + '[INST] ' [INST]";
    ASSERT_STREQ(render(l2, NULL, conv),
                 "llama2|[INST] <<SYS>>\nBe brief.\n<</SYS>>\n\n Hi  [/INST] Hello </s><s>[INST] "
                 "Bye [/INST]|1");
    /* Mistral-Instruct's: none of them, contents stripped */
    ASSERT_STREQ(render("[INST] message['content'].strip()", NULL, conv),
                 "llama2|[INST] Be brief.\nHi [/INST]Hello</s>[INST] Bye [/INST]|1");
    ASSERT_STREQ(render("'<|user|>\\n' + message['content'] + eos_token", NULL, conv),
                 "zephyr|<|system|>\nBe brief.</s>\n<|user|>\n Hi </s>\n<|assistant|>\nHello</s>\n"
                 "<|user|>\nBye</s>\n<|assistant|>\n|1");
    const char *hi = "{\"messages\":[{\"role\":\"user\",\"content\":\"Hi\"}]}";
    ASSERT_STREQ(render("<|user|> <|endoftext|>", NULL, hi),
                 "zephyr|<|user|>\nHi<|endoftext|>\n<|assistant|>\n|1");
    /* a Jinja text of no known family: plain; a name overrides the model's */
    ASSERT_STREQ(render("{{ messages }}", NULL, hi), "plain|user: Hi\nassistant: |0");
    ASSERT_STREQ(render("<|im_start|>", "plain", hi), "plain|user: Hi\nassistant: |0");
    const char *tool = "{\"messages\":[{\"role\":\"tool\",\"content\":\"4\"}]}";
    ASSERT_STREQ(render(NULL, "chatml", tool),
                 "chatml|<|im_start|>tool\n4<|im_end|>\n<|im_start|>assistant\n|1");
    ASSERT_STREQ(render(NULL, "llama2", tool), "llama2|[INST] 4 [/INST]|1");
    ASSERT_CONTAINS(render(NULL, "jinja", "{}"), "chat template \"jinja\" is not one of");
    /* completions are text: no template, no special pieces */
    synor__serve_tmpl t;
    synor__serve_req r;
    ASSERT_OK(synor__serve_tmpl_pick("chatml", NULL, "</s>", &t));
    const char *cp = "{\"prompt\":\"<|im_start|>\"}";
    ASSERT_OK(synor__serve_req_parse_tmpl(cp, strlen(cp), 0, &t, &r));
    ASSERT(!r.special && !strcmp(r.prompt, "<|im_start|>"));
    synor__serve_req_free(&r);
    /* tools: the functions as a system message; an earlier call as the assistant's */
    const char *tl = "{\"messages\":[{\"role\":\"user\",\"content\":\"T?\"},"
                     "{\"role\":\"assistant\",\"tool_calls\":[{\"id\":\"c\",\"type\":"
                     "\"function\",\"function\":{\"name\":\"f\",\"arguments\":\"{}\"}}]},"
                     "{\"role\":\"tool\",\"content\":\"1\"}],\"tools\":[{\"type\":"
                     "\"function\",\"function\":{\"name\":\"f\"}}],\"tool_choice\":\"none\"}";
    ASSERT_STREQ(render(NULL, "chatml", tl),
                 "chatml|<|im_start|>system\ntools: [{\"name\":\"f\"}]<|im_end|>\n"
                 "<|im_start|>user\nT?<|im_end|>\n<|im_start|>assistant\n"
                 "{\"name\":\"f\",\"arguments\":{}}<|im_end|>\n<|im_start|>tool\n1<|im_end|>\n"
                 "<|im_start|>assistant\n|1");
}

#define TOOLS                                                                          \
    "\"tools\":[{\"type\":\"function\",\"function\":{\"name\":\"get_weather\","           \
    "\"parameters\":{\"type\":\"object\",\"properties\":{\"city\":{\"type\":\"string\"}}," \
    "\"required\":[\"city\"]}}},{\"type\":\"function\",\"function\":{\"name\":"        \
    "\"get_time\",\"description\":\"Now\"}}]"
#define USER "\"messages\":[{\"role\":\"user\",\"content\":\"Hi\"}]"

/* Function calling: the functions in the prompt's first line, a call asked for compiled to
 * its schema (name and arguments; "auto": or a text), earlier calls written as the model
 * writes one, and what would cut a call (stop) refused. */
TEST(tools_and_tool_calls)
{
    synor__serve_req r;
    ASSERT_OK(parse("{" USER "," TOOLS ",\"tool_choice\":\"required\",\"parallel_tool_calls\":"
                    "false}", 1, &r));
    ASSERT(r.tool_call == 1 && r.json_object && r.schema && synor__serve_req_extras(&r));
    ASSERT_STREQ(r.prompt,
                 "tools: [{\"name\":\"get_weather\",\"parameters\":{\"type\":\"object\","
                 "\"properties\":{\"city\":{\"type\":\"string\"}},\"required\":[\"city\"]}},"
                 "{\"name\":\"get_time\",\"description\":\"Now\"}]\nuser: Hi\nassistant: ");
    ASSERT(strncmp(r.schema_text, "tools:[", 7) == 0);
    synor__serve_req_free(&r);
    /* one function by name: the key holds that one only */
    ASSERT_OK(parse("{" USER "," TOOLS ",\"tool_choice\":{\"type\":\"function\",\"function\":"
                    "{\"name\":\"get_time\"}}}", 1, &r));
    ASSERT(r.tool_call && strstr(r.schema_text, "get_weather") == NULL);
    synor__serve_req_free(&r);
    /* auto (the default): a call or a text, its own key */
    ASSERT_OK(parse("{" USER "," TOOLS "}", 1, &r));
    ASSERT(r.tool_call == 2 && r.schema && strncmp(r.schema_text, "tools-auto:[", 12) == 0);
    synor__serve_req_free(&r);
    ASSERT_OK(parse("{" USER "," TOOLS ",\"tool_choice\":\"auto\"}", 1, &r));
    ASSERT(r.tool_call == 2);
    synor__serve_req_free(&r);
    /* parallel_tool_calls: several calls ({"tool_calls": [...]}), their own keys; a function
     * by name stays one call */
    ASSERT_OK(parse("{" USER "," TOOLS ",\"tool_choice\":\"required\",\"parallel_tool_calls\":"
                    "true}", 1, &r));
    ASSERT(r.tool_call == 1 && strncmp(r.schema_text, "tools-list:[", 12) == 0);
    synor__serve_req_free(&r);
    ASSERT_OK(parse("{" USER "," TOOLS ",\"parallel_tool_calls\":true}", 1, &r));
    ASSERT(r.tool_call == 2 && strncmp(r.schema_text, "tools-auto-list:[", 17) == 0);
    synor__serve_req_free(&r);
    ASSERT_OK(parse("{" USER "," TOOLS ",\"tool_choice\":{\"type\":\"function\",\"function\":"
                    "{\"name\":\"get_time\"}},\"parallel_tool_calls\":true}", 1, &r));
    ASSERT(r.tool_call == 1 && strncmp(r.schema_text, "tools:[", 7) == 0);
    synor__serve_req_free(&r);
    /* none: the functions listed, no call */
    ASSERT_OK(parse("{" USER "," TOOLS ",\"tool_choice\":\"none\"}", 1, &r));
    ASSERT(!r.tool_call && !r.schema && strncmp(r.prompt, "tools: [", 8) == 0);
    synor__serve_req_free(&r);
    /* an earlier call and its result */
    ASSERT_OK(parse("{\"messages\":[{\"role\":\"user\",\"content\":\"Time?\"},{\"role\":"
                    "\"assistant\",\"content\":null,\"tool_calls\":[{\"id\":\"c1\",\"type\":"
                    "\"function\",\"function\":{\"name\":\"get_time\",\"arguments\":\"{}\"}}]},"
                    "{\"role\":\"tool\",\"tool_call_id\":\"c1\",\"content\":\"12:00\"}]}", 1, &r));
    ASSERT_STREQ(r.prompt, "user: Time?\nassistant: {\"name\":\"get_time\",\"arguments\":{}}\n"
                           "tool: 12:00\nassistant: ");
    synor__serve_req_free(&r);
    /* earlier calls written in this request's form: "auto" wraps each, parallel lists them */
#define TWO_CALLS                                                                              \
    "{\"messages\":[{\"role\":\"assistant\",\"tool_calls\":[{\"id\":\"a\",\"type\":\"function\"," \
    "\"function\":{\"name\":\"get_time\",\"arguments\":\"{}\"}},{\"id\":\"b\",\"type\":"          \
    "\"function\",\"function\":{\"name\":\"get_time\",\"arguments\":\"{}\"}}]}]," TOOLS
    ASSERT_OK(parse(TWO_CALLS "}", 1, &r));
    ASSERT_CONTAINS(r.prompt,
                    "\nassistant: {\"tool_call\":{\"name\":\"get_time\",\"arguments\":{}}}\n"
                    "assistant: {\"tool_call\":{\"name\":\"get_time\"");
    synor__serve_req_free(&r);
    ASSERT_OK(parse(TWO_CALLS ",\"parallel_tool_calls\":true}", 1, &r));
    ASSERT_CONTAINS(r.prompt, "\nassistant: {\"tool_calls\":[{\"name\":\"get_time\",\"arguments\":"
                              "{}},{\"name\":\"get_time\",\"arguments\":{}}]}\nassistant: ");
    synor__serve_req_free(&r);
#undef TWO_CALLS
    static const struct {
        const char *body, *want;
    } bad[] = {
        {"{" USER ",\"tool_choice\":\"required\"}", "tool_choice: needs \"tools\""},
        {"{" USER "," TOOLS ",\"tool_choice\":{\"type\":\"function\",\"function\":{\"name\":"
         "\"nope\"}}}",
         "tool_choice.function.name: \"nope\" is not one of the tools"},
        {"{" USER "," TOOLS ",\"tool_choice\":\"sometimes\"}", "\"sometimes\" is not one of"},
        {"{" USER ",\"tools\":[{\"type\":\"function\",\"function\":{\"name\":\"a b\"}}],"
         "\"tool_choice\":\"required\"}",
         "tools[0].function: name \"a b\": 1 to 64 letters"},
        {"{" USER ",\"tools\":[{\"type\":\"retrieval\"}],\"tool_choice\":\"required\"}",
         "tools[0]: type \"retrieval\" is not supported"},
        {"{" USER ",\"tools\":[{\"type\":\"function\",\"function\":{\"name\":\"f\"}},{\"type\":"
         "\"function\",\"function\":{\"name\":\"f\"}}],\"tool_choice\":\"required\"}",
         "two functions named \"f\""},
        {"{" USER ",\"tools\":[{\"type\":\"function\",\"function\":{\"name\":\"f\",\"parameters\":"
         "{\"type\":\"object\",\"properties\":{\"x\":{\"pattern\":\"a\"}}}}}],\"tool_choice\":"
         "\"required\"}",
         "tools[0].function.parameters/properties/x: keyword \"pattern\" is not supported"},
        {"{" USER "," TOOLS ",\"tool_choice\":\"required\",\"stop\":\"}\"}",
         "stop: not with a tool call"},
        {"{" USER "," TOOLS ",\"tool_choice\":\"required\",\"response_format\":{\"type\":"
         "\"json_object\"}}",
         "a JSON answer and a tool call at once"},
        {"{" USER "," TOOLS ",\"tool_choice\":\"none\",\"parallel_tool_calls\":1}",
         "parallel_tool_calls: expected boolean"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        int e = parse(bad[i].body, 1, &r);
        if (!e || !strstr(synor_errmsg(), bad[i].want))
            fprintf(stderr, "  %s\n  -> %s (want %s)\n", bad[i].body, synor_errmsg(), bad[i].want);
        ASSERT(e < 0 && strstr(synor_errmsg(), bad[i].want) != NULL);
        ASSERT(r.prompt == NULL && r.schema == NULL);
    }
    ASSERT(parse("{\"prompt\":\"x\"," TOOLS "}", 0, &r) < 0);
    ASSERT_CONTAINS(synor_errmsg(), "tools: not supported in a completion");
    /* the answer: its calls' "tool_calls" (arguments a JSON string, as written, compact) */
    synor__buf b;
    synor__buf_init(&b);
    const char *call =
        "{\"name\": \"get_weather\", \"arguments\": { \"city\" : \"Paris \\u00e9\"}}";
    ASSERT_EQ(synor__serve_tool_answer(&b, call, strlen(call), "x", 0, 0), 1);
    char *got = synor__buf_take(&b);
    ASSERT(got != NULL);
    ASSERT_STREQ(got, "\"tool_calls\":[{\"id\":\"call_x_0\",\"type\":\"function\",\"function\":"
                      "{\"name\":\"get_weather\",\"arguments\":\"{\\\"city\\\":\\\"Paris "
                      "\\\\u00e9\\\"}\"}}]");
    synor__free(got);
    /* the tokens ran out: before the name closed nothing; after it, what was written */
    ASSERT(synor__serve_tool_answer(&b, call, 20, "x", 0, 0) == 0 && b.len == 0);
    ASSERT_EQ(synor__serve_tool_answer(&b, call, 45, "x", 0, 0), 1);
    got = synor__buf_take(&b);
    ASSERT(got != NULL);
    ASSERT_CONTAINS(got, "\"name\":\"get_weather\",\"arguments\":\"{\\\"city\\\"\"}}]");
    synor__free(got);
    /* "auto": a call inside "tool_call", or a text */
    const char *acall = "{\"tool_call\": {\"name\": \"get_time\", \"arguments\": {}}}";
    ASSERT_EQ(synor__serve_tool_answer(&b, acall, strlen(acall), "c", 1, TOOL_FORM_TEXT), 1);
    got = synor__buf_take(&b);
    ASSERT(got != NULL);
    ASSERT_STREQ(got, "\"tool_calls\":[{\"id\":\"call_c_1\",\"type\":\"function\","
                      "\"function\":{\"name\":\"get_time\",\"arguments\":\"{}\"}}]");
    synor__free(got);
    /* several calls: each its id (the request's, _k) */
    const char *calls = "{\"tool_calls\": [{\"name\": \"get_time\", \"arguments\": {}}, "
                        "{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Oslo\"}}]}";
    ASSERT_EQ(synor__serve_tool_answer(&b, calls, strlen(calls), "c", 0, TOOL_FORM_LIST), 1);
    got = synor__buf_take(&b);
    ASSERT(got != NULL);
    ASSERT_STREQ(got, "\"tool_calls\":[{\"id\":\"call_c_0_0\",\"type\":\"function\","
                      "\"function\":{\"name\":\"get_time\",\"arguments\":\"{}\"}},"
                      "{\"id\":\"call_c_0_1\",\"type\":\"function\",\"function\":"
                      "{\"name\":\"get_weather\",\"arguments\":\"{\\\"city\\\":\\\"Oslo\\\"}\"}}]");
    synor__free(got);
    /* a text, decoded from its JSON string (escapes, a surrogate pair) */
    const char *text = "{\"response\": \"It is \\\"noon\\\".\\n\\u00e9\\ud83d\\ude00/\\/\"}";
    ASSERT_EQ(synor__serve_tool_answer(&b, text, strlen(text), "c", 0,
                                       TOOL_FORM_TEXT | TOOL_FORM_LIST),
              2);
    got = synor__buf_take(&b);
    ASSERT(got != NULL);
    ASSERT_STREQ(got, "\"It is \\\"noon\\\".\\n\xc3\xa9\xf0\x9f\x98\x80//\"");
    synor__free(got);
    synor__buf_free(&b);
}

/* The tool-call scanner fed an answer in pieces of every size gives what it gives fed whole:
 * the calls' names once closed, their arguments compact, the text decoded - in order. */
typedef struct scan_log {
    char s[1024];
    size_t n;
    int last; /* the last event: -2 a call, -1 text, k call k's arguments */
} scan_log;

static void log_call(void *u, int k, const char *name, size_t n)
{
    scan_log *l = u;
    l->n += (size_t)snprintf(l->s + l->n, sizeof l->s - l->n, "[call %d %.*s]", k, (int)n, name);
    l->last = -2;
}

/* a call's arguments in a row: one marker, however many pieces they came in */
static void log_args(void *u, int k, const char *p, size_t n)
{
    scan_log *l = u;
    if (l->last != k)
        l->n += (size_t)snprintf(l->s + l->n, sizeof l->s - l->n, "[args %d]", k);
    l->n += (size_t)snprintf(l->s + l->n, sizeof l->s - l->n, "%.*s", (int)n, p);
    l->last = k;
}

static void log_text(void *u, const char *p, size_t n)
{
    scan_log *l = u;
    l->n += (size_t)snprintf(l->s + l->n, sizeof l->s - l->n, "%.*s", (int)n, p);
    l->last = -1;
}

static void scan_pieces(const char *text, int form, size_t piece, scan_log *l)
{
    tool_scan t;
    tool_scan_cb cb = {log_call, log_args, log_text, l};
    synor__tool_scan_init(&t, form);
    memset(l, 0, sizeof *l);
    l->last = -2;
    for (size_t i = 0; i < strlen(text); i += piece) {
        size_t n = strlen(text) - i < piece ? strlen(text) - i : piece;
        synor__tool_scan_feed(&t, text + i, n, &cb);
    }
}

TEST(tool_answers_scanned_in_pieces)
{
    static const struct {
        const char *text, *want;
        int form;
    } cases[] = {
        {"{\"name\" : \"get_weather\", \"arguments\":{ \"city\": \"a \\\"b\\\" c\",\n  \"n\": "
         "[1, 2.5e3, true, null], \"o\": {\"k\": {}}}}",
         "[call 0 get_weather][args 0]{\"city\":\"a \\\"b\\\" c\",\"n\":[1,2.5e3,true,null],"
         "\"o\":{\"k\":{}}}",
         0},
        {"{\"tool_call\": {\"name\": \"f\", \"arguments\": {\"x\": \"}\"}}}",
         "[call 0 f][args 0]{\"x\":\"}\"}", TOOL_FORM_TEXT},
        {"{\"tool_calls\": [ {\"name\": \"f\", \"arguments\": {}} ,{\"name\": \"g\", "
         "\"arguments\": {\"a\": [{}]}}]}",
         "[call 0 f][args 0]{}[call 1 g][args 1]{\"a\":[{}]}", TOOL_FORM_LIST},
        {"{\"response\": \"caf\xc3\xa9 \\u00e9\\ud83d\\ude00 \\\\ \\t.\"}",
         "caf\xc3\xa9 \xc3\xa9\xf0\x9f\x98\x80 \\ \t.", TOOL_FORM_TEXT | TOOL_FORM_LIST},
        {"{\"response\": \"\\ud83d.\"}", "\xef\xbf\xbd.", TOOL_FORM_TEXT},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++)
        for (size_t piece = 1; piece <= strlen(cases[i].text); piece++) {
            scan_log l;
            scan_pieces(cases[i].text, cases[i].form, piece, &l);
            if (strcmp(l.s, cases[i].want))
                fprintf(stderr, "  case %zu, pieces of %zu:\n  got  %s\n  want %s\n", i, piece,
                        l.s, cases[i].want);
            ASSERT_STREQ(l.s, cases[i].want);
        }
}

/* vLLM's guided decoding: guided_json a schema, guided_choice raw texts; one constraint a
 * request; what cannot be honoured refused by name. */
TEST(guided_decoding_fields)
{
    synor__serve_req r;
    ASSERT_OK(parse("{\"prompt\":\"x\",\"guided_choice\":[\"yes\",\"no\"]}", 0, &r));
    ASSERT(r.json_object && r.schema && synor__serve_req_extras(&r));
    ASSERT_STREQ(r.schema_text, "choice:[\"yes\",\"no\"]");
    synor__serve_req_free(&r);
    ASSERT_OK(parse("{" USER ",\"guided_json\":{\"type\":\"object\"}}", 1, &r));
    ASSERT(r.json_object && r.schema);
    ASSERT_STREQ(r.schema_text, "json:{\"type\":\"object\"}");
    synor__serve_req_free(&r);
    static const struct {
        const char *body, *want;
    } bad[] = {
        {"{\"prompt\":\"x\",\"guided_regex\":\"[a-z]+\"}", "guided_regex: not supported"},
        {"{\"prompt\":\"x\",\"guided_grammar\":\"root ::= x\"}", "guided_grammar: not supported"},
        {"{\"prompt\":\"x\",\"guided_choice\":[]}", "guided_choice: expected 1 to 64 texts"},
        {"{\"prompt\":\"x\",\"guided_choice\":[\"a\",\"\"]}", "guided_choice[1]: a text is 1 to"},
        {"{\"prompt\":\"x\",\"guided_choice\":[\"a\",\"a\"]}", "texts 0 and 1 are the same"},
        {"{\"prompt\":\"x\",\"guided_choice\":[\"a\",2]}", "guided_choice[1]: expected string"},
        {"{\"prompt\":\"x\",\"guided_json\":{\"type\":\"object\",\"minProperties\":1}}",
         "guided_json: keyword \"minProperties\" is not supported"},
        {"{\"prompt\":\"x\",\"guided_json\":{},\"guided_choice\":[\"a\"]}",
         "one constraint at a time"},
        {"{\"prompt\":\"x\",\"response_format\":{\"type\":\"json_object\"},\"guided_choice\":"
         "[\"a\"]}",
         "guided_choice: one constraint at a time"},
        {"{" USER "," TOOLS ",\"tool_choice\":\"required\",\"guided_json\":{}}",
         "guided_json: one constraint at a time"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        int e = parse(bad[i].body, strstr(bad[i].body, "messages") != NULL, &r);
        if (!e || !strstr(synor_errmsg(), bad[i].want))
            fprintf(stderr, "  %s\n  -> %s (want %s)\n", bad[i].body, synor_errmsg(), bad[i].want);
        ASSERT(e < 0 && strstr(synor_errmsg(), bad[i].want) != NULL);
        ASSERT(r.prompt == NULL && r.schema == NULL);
    }
}

TEST(errors_name_position_field_and_value)
{
    synor__serve_req r;
    ASSERT(parse("{\"prompt\": \"x\",\n \"max_tokens\": }", 0, &r) < 0);
    ASSERT_CONTAINS(synor_errmsg(), "request body:2:16");
    ASSERT(parse("{\"prompt\":\"x\",\"max_tokens\":0}", 0, &r) < 0);
    ASSERT_CONTAINS(synor_errmsg(), "max_tokens: value 0 is outside [1, 16777216]");
    ASSERT(parse("{\"prompt\":\"x\",\"max_tokens\":2.5}", 0, &r) < 0);
    ASSERT_CONTAINS(synor_errmsg(), "max_tokens: expected an integer, found 2.5");
    ASSERT(parse("{\"prompt\":\"x\",\"temperature\":-1}", 0, &r) < 0);
    ASSERT_CONTAINS(synor_errmsg(), "temperature: value -1 is below the minimum 0");
    ASSERT(parse("{\"prompt\":\"x\",\"top_p\":0}", 0, &r) < 0);
    ASSERT_CONTAINS(synor_errmsg(), "top_p: value 0 is below the minimum");
    ASSERT(parse("{\"prompt\":\"x\",\"user\":\"\"}", 0, &r) < 0);
    ASSERT_CONTAINS(synor_errmsg(), "user: expected 1 to 256 bytes without NUL, found 0 bytes");
    ASSERT(parse("{\"prompt\":\"x\",\"user\":7}", 0, &r) < 0);
    ASSERT_CONTAINS(synor_errmsg(), "user");
    ASSERT(parse("{\"prompt\":\"x\",\"seed\":-2}", 0, &r) < 0);
    ASSERT_CONTAINS(synor_errmsg(), "seed: value -2 is outside");
    ASSERT(parse("{\"prompt\":5}", 0, &r) < 0);
    ASSERT_CONTAINS(synor_errmsg(),
                    "prompt: expected a string or a non-empty array of token ids, found number");
    ASSERT(parse("{\"prompt\":[]}", 0, &r) < 0);
    ASSERT_CONTAINS(synor_errmsg(), "found array");
    ASSERT(parse("{\"prompt\":[\"a\",\"b\"]}", 0, &r) < 0);
    ASSERT_CONTAINS(synor_errmsg(), "found a list of prompts (one prompt a request)");
    ASSERT(parse("{\"prompt\":[1,-2]}", 0, &r) < 0);
    ASSERT_CONTAINS(synor_errmsg(), "1:14: prompt[1]: value -2 is outside");
    ASSERT(parse("{\"prompt\":[1,\"x\"]}", 0, &r) < 0);
    ASSERT_CONTAINS(synor_errmsg(), "prompt[1]: expected number, found string");
    ASSERT(parse("{\"prompt\":\"x\",\"suffix\":\"y\",\"echo\":true}", 0, &r) < 0);
    ASSERT_CONTAINS(synor_errmsg(), "suffix: not with \"echo\"");
    ASSERT(parse("{\"prompt\":[1,2],\"suffix\":\"y\"}", 0, &r) < 0);
    ASSERT_CONTAINS(synor_errmsg(), "suffix: not with a prompt of token ids");
    ASSERT(parse("{\"prompt\":\"x\",\"suffix\":3}", 0, &r) < 0);
    ASSERT_CONTAINS(synor_errmsg(), "suffix: expected string, found number");
    ASSERT(parse("{\"messages\":[{\"role\":\"user\",\"content\":\"x\"}],\"suffix\":\"y\"}", 1,
                 &r) < 0);
    ASSERT_CONTAINS(synor_errmsg(), "suffix: not supported by synor serve");
    ASSERT(parse("{\"prompt\":\"x\",\"return_token_ids\":1}", 0, &r) < 0);
    ASSERT_CONTAINS(synor_errmsg(), "return_token_ids: expected boolean");
    ASSERT(parse("{}", 0, &r) < 0);
    ASSERT_CONTAINS(synor_errmsg(), "missing required field \"prompt\"");
    ASSERT(parse("\"x\"", 0, &r) < 0);
    ASSERT_CONTAINS(synor_errmsg(), "request: expected object, found string");
    ASSERT(parse("{\"prompt\":\"x\",\"stop\":[\"a\",\"b\",\"c\",\"d\",\"e\"]}", 0, &r) < 0);
    ASSERT_CONTAINS(synor_errmsg(), "stop: at most 4 stop sequences, found 5");
    ASSERT(parse("{\"prompt\":\"x\",\"stop\":[\"a\",\"\"]}", 0, &r) < 0);
    ASSERT_CONTAINS(synor_errmsg(), "stop[1]: a stop sequence is 1 to 256 bytes");
    ASSERT(parse("{\"prompt\":\"x\",\"stop\":[\"a\",7]}", 0, &r) < 0);
    ASSERT_CONTAINS(synor_errmsg(), "stop[1]: expected string, found number");
    ASSERT(parse("{\"prompt\":\"x\",\"stop\":7}", 0, &r) < 0);
    ASSERT_CONTAINS(synor_errmsg(), "stop: expected string, found number");
    ASSERT(r.n_stop == 0 && r.stop[0] == NULL);
    ASSERT(parse("{\"messages\":[{\"role\":\"user\",\"content\":\"x\"}],\"echo\":true}", 1,
                 &r) < 0);
    ASSERT_CONTAINS(synor_errmsg(), "echo: not supported");
    ASSERT(parse("{\"prompt\":\"x\",\"echo\":1}", 0, &r) < 0);
    ASSERT_CONTAINS(synor_errmsg(), "echo: expected boolean");
    ASSERT(parse("{\"prompt\":\"x\",\"logprobs\":6}", 0, &r) < 0);
    ASSERT_CONTAINS(synor_errmsg(), "logprobs: value 6 is outside");
    ASSERT(parse("{\"messages\":[{\"role\":\"user\",\"content\":\"x\"}],\"top_logprobs\":2}", 1,
                 &r) < 0);
    ASSERT_CONTAINS(synor_errmsg(), "top_logprobs: needs \"logprobs\": true");
    ASSERT(parse("{\"prompt\":\"x\",\"n\":17}", 0, &r) < 0);
    ASSERT_CONTAINS(synor_errmsg(), "n: value 17 is outside");
    ASSERT(parse("{\"prompt\":\"x\",\"n\":0}", 0, &r) < 0);
    ASSERT_CONTAINS(synor_errmsg(), "n: value 0 is outside");
    ASSERT(parse("{\"prompt\":\"x\",\"n\":2.5}", 0, &r) < 0);
    ASSERT(parse("{\"prompt\":\"x\",\"n\":3,\"best_of\":2}", 0, &r) < 0);
    ASSERT_CONTAINS(synor_errmsg(), "best_of: must be at least n (3), found 2");
    ASSERT(parse("{\"prompt\":\"x\",\"best_of\":2,\"stream\":true}", 0, &r) < 0);
    ASSERT_CONTAINS(synor_errmsg(), "best_of: not with");
    ASSERT(parse("{\"messages\":[{\"role\":\"user\",\"content\":\"x\"}],\"best_of\":2}", 1,
                 &r) < 0);
    ASSERT_CONTAINS(synor_errmsg(), "best_of: not supported");
    ASSERT(parse("{\"prompt\":\"x\",\"response_format\":{\"type\":\"json_schema\"}}", 0, &r) < 0);
    ASSERT_CONTAINS(synor_errmsg(), "response_format: missing required field \"json_schema\"");
    ASSERT(parse("{\"prompt\":\"x\",\"response_format\":{\"type\":\"json_schema\",\"json_schema\":"
                 "{\"schema\":{\"type\":\"object\",\"properties\":{\"a\":{\"minimum\":1}}}}}}",
                 0, &r) < 0);
    ASSERT_CONTAINS(synor_errmsg(), "request body:1:125: response_format.json_schema.schema/"
                                    "properties/a: keyword \"minimum\" is not supported");
    ASSERT(parse("{\"prompt\":\"x\",\"response_format\":{\"type\":\"json_schema\",\"json_schema\":"
                 "{\"strict\":1}}}", 0, &r) < 0);
    ASSERT_CONTAINS(synor_errmsg(), "response_format.json_schema.strict: expected boolean");
    ASSERT(parse("{\"prompt\":\"x\",\"response_format\":{\"type\":\"yaml\"}}", 0, &r) < 0);
    ASSERT_CONTAINS(synor_errmsg(), "response_format.type: \"yaml\" is not supported");
    ASSERT(parse("{\"prompt\":\"x\",\"response_format\":\"json\"}", 0, &r) < 0);
    ASSERT_CONTAINS(synor_errmsg(), "response_format: expected object");
    ASSERT(parse("{\"prompt\":\"x\",\"logit_bias\":{\"a7\":1}}", 0, &r) < 0);
    ASSERT_CONTAINS(synor_errmsg(), "logit_bias[\"a7\"]: a key is a token id");
    ASSERT(parse("{\"prompt\":\"x\",\"logit_bias\":{\"-3\":1}}", 0, &r) < 0);
    ASSERT(parse("{\"prompt\":\"x\",\"logit_bias\":{\"7\":101}}", 0, &r) < 0);
    ASSERT_CONTAINS(synor_errmsg(), "logit_bias[\"7\"]: value 101 is above the maximum 100");
    ASSERT(parse("{\"prompt\":\"x\",\"logit_bias\":[1]}", 0, &r) < 0);
    ASSERT_CONTAINS(synor_errmsg(), "logit_bias: expected object");
    ASSERT(r.bias_tok == NULL && r.n_bias == 0);
    ASSERT(parse("{\"prompt\":\"x\",\"frequency_penalty\":2.5}", 0, &r) < 0);
    ASSERT_CONTAINS(synor_errmsg(), "frequency_penalty: value 2.5 is above the maximum 2");
    ASSERT(parse("{\"prompt\":\"x\",\"presence_penalty\":\"high\"}", 0, &r) < 0);
    ASSERT_CONTAINS(synor_errmsg(), "presence_penalty: expected number");
    ASSERT(parse("{\"messages\":[]}", 1, &r) < 0);
    ASSERT_CONTAINS(synor_errmsg(), "messages: needs at least one message");
    ASSERT(parse("{\"messages\":[{\"role\":\"user\"}]}", 1, &r) < 0);
    ASSERT_CONTAINS(synor_errmsg(), "messages[0]: missing required field \"content\"");
    ASSERT(parse("{\"messages\":[{\"role\":\"user\",\"content\":[{\"type\":\"image_url\"}]}]}", 1,
                 &r) < 0);
    ASSERT_CONTAINS(synor_errmsg(), "content part type \"image_url\" is not supported");
    ASSERT(parse("{\"prompt\":\"a\\u0000\"}", 0, &r) < 0);
    ASSERT_CONTAINS(synor_errmsg(), "request body:1:13");
    ASSERT(r.prompt == NULL && r.model == NULL);
}

TEST(text_is_always_valid_json)
{
    ASSERT_STREQ(round_trip("a\"b\\c\n\t", 7), "a\"b\\c\n\t");
    ASSERT_STREQ(round_trip("\xC3\xA9t\xC3\xA9", 5), "\xC3\xA9t\xC3\xA9");
    /* a lone continuation byte, a truncated 3-byte character, an overlong
     * form, a surrogate: each maximal subpart becomes one U+FFFD */
    ASSERT_STREQ(round_trip("a\x80" "b", 3), "a\xEF\xBF\xBD" "b");
    ASSERT_STREQ(round_trip("a\xE2\x82", 3), "a\xEF\xBF\xBD");
    ASSERT_STREQ(round_trip("\xC0\xAF", 2), "\xEF\xBF\xBD\xEF\xBF\xBD");
    ASSERT_STREQ(round_trip("\xED\xA0\x80", 3), "\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD");
    ASSERT_STREQ(round_trip("x\xF0\x9F\x98\x80y", 6), "x\xF0\x9F\x98\x80y");
    /* a NUL byte is escaped, not the end of the text */
    synor__buf b;
    synor__buf_init(&b);
    synor__serve_json_text(&b, "a\0b", 3);
    ASSERT_EQ(b.len, 10);
    ASSERT(memcmp(b.data, "\"a\\u0000b\"", 10) == 0);
    synor__buf_free(&b);
}

TEST(utf8_held_until_complete)
{
    ASSERT_EQ(synor__serve_utf8_ready("ab", 2), 2);
    ASSERT_EQ(synor__serve_utf8_ready("a\xE2\x82", 3), 1);  /* "€" not finished */
    ASSERT_EQ(synor__serve_utf8_ready("a\xE2\x82\xAC", 4), 4);
    ASSERT_EQ(synor__serve_utf8_ready("a\xF0", 2), 1);
    ASSERT_EQ(synor__serve_utf8_ready("a\xFF", 2), 2);      /* ill-formed: never completes */
    ASSERT_EQ(synor__serve_utf8_ready("\xE2\x28", 2), 2);   /* ill-formed, not incomplete */
}

TEST(error_json_and_finish_reasons)
{
    char *j = synor__serve_error_json(503, "overloaded: \"full\"");
    ASSERT_STREQ(j, "{\"error\":{\"message\":\"overloaded: \\\"full\\\"\",\"type\":\"overloaded\","
                    "\"code\":503}}\n");
    synor__free(j);
    ASSERT_STREQ(synor__serve_finish_reason(SYNOR_LLM_DONE_EOS), "stop");
    ASSERT_STREQ(synor__serve_finish_reason(SYNOR_LLM_DONE_STOPPED), "stop");
    ASSERT_STREQ(synor__serve_finish_reason(SYNOR_LLM_DONE_LENGTH), "length");
    ASSERT_STREQ(synor__serve_finish_reason(SYNOR_LLM_DONE_CONTEXT), "length");
    ASSERT_STREQ(synor__serve_finish_reason(SYNOR_LLM_DONE_CANCELLED), "cancelled");
}

TEST(allocation_failures_leave_nothing)
{
    const char *body = "{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":\"Hi\"}]}";
    for (long k = 1; k < 200; k++) {
        synor__serve_req r;
        synor__alloc_fail_after(k);
        int e = parse(body, 1, &r);
        long left = synor__alloc_fail_remaining();
        synor__alloc_fail_after(0);
        if (!e) {
            ASSERT_STREQ(r.prompt, "user: Hi\nassistant: ");
            synor__serve_req_free(&r);
            ASSERT(left > 0); /* succeeded without reaching the failure */
            return;
        }
        ASSERT(r.prompt == NULL && r.model == NULL);
    }
    ASSERT(!"never succeeded");
}

TEST_MAIN(completion_defaults_and_fields, chat_templates_by_family,
          tool_answers_scanned_in_pieces, stop_sequences_in_text, logprobs_of_a_row, chat_template,
          tools_and_tool_calls, guided_decoding_fields, errors_name_position_field_and_value,
          text_is_always_valid_json, utf8_held_until_complete, error_json_and_finish_reasons,
          allocation_failures_leave_nothing)
