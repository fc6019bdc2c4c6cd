/* bench_json.c - what constrained decoding costs a step (docs/LLM.md, "JSON
 * answers", "JSON Schema"): the mask over a model's whole vocabulary in the
 * states an answer passes through, and making a constraint.
 *
 *   bench_json -m MODEL [--runs R]
 *
 * A json_object constraint is taken to: before the object, inside a string
 * value, after a value; a schema's ({"name": string <= 40, "tags": [enum],
 * "n": integer, "ok": boolean}, all required) to: before the object, at a
 * property's name, inside the bounded string, at an enum value, after a
 * value. Each state is reached by feeding the document's bytes as the
 * model's one-byte pieces; each mask is of a zeroed row. Prints, per
 * state, the median and the best of R masks (default 50) and how many
 * tokens the mask allows; and the time to make the model's first
 * constraint (its pieces are made then) and a later one (median of 100). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench_time.h"
#include "synor.h"

static int32_t byte_tok[256]; /* the token whose piece is that one byte, or -1 */

static void find_byte_tokens(const synor_llm *m)
{
    const synor_tokenizer *tok = synor_llm_tokenizer(m);
    int V = synor_llm_hparams_get(m)->vocab_size;
    int32_t eos = synor_tokenizer_eos(tok);
    for (int b = 0; b < 256; b++)
        byte_tok[b] = -1;
    for (int t = V - 1; t >= 0; t--) { /* (lowest id wins: byte-fallback pieces come first) */
        char p[16];
        if (t == eos)
            continue;
        if (synor_tokenizer_decode(tok, eos, t, p, sizeof p) == 1)
            byte_tok[(unsigned char)p[0]] = t;
    }
}

/* Feeds doc[from..to) a byte at a time: 0, or -1 if a byte has no piece or
 * is refused. */
static int feed(synor_llm_json *j, const char *doc, size_t from, size_t to)
{
    for (size_t i = from; i < to; i++) {
        int32_t t = byte_tok[(unsigned char)doc[i]];
        if (t < 0 || synor_llm_json_accept(j, t)) {
            fprintf(stderr, "bench_json: byte %zu ('%c') of %s: no piece or refused\n", i,
                    doc[i], doc);
            return -1;
        }
    }
    return 0;
}

static void measure(synor_llm_json *j, int V, int runs, const char *state)
{
    float *row = malloc((size_t)V * sizeof *row);
    double *t = malloc((size_t)runs * sizeof *t);
    int allowed = 0;
    for (int r = 0; r < runs; r++) {
        memset(row, 0, (size_t)V * sizeof *row);
        double a = now();
        synor_llm_json_mask(j, row);
        t[r] = now() - a;
    }
    for (int k = 0; k < V; k++)
        allowed += row[k] == 0;
    qsort(t, (size_t)runs, sizeof *t, cmp_d);
    printf("  %-22s median %.4f ms, best %.4f ms, %d tokens allowed\n", state,
           t[runs / 2] * 1e3, t[0] * 1e3, allowed);
    free(row);
    free(t);
}

/* Takes a constraint of g through doc's states (stops[i]: bytes fed before
 * state i is measured). */
static int walk(synor_llm *m, synor_llm_schema *g, const char *doc, const size_t *stops,
                const char *const *names, int n, int runs)
{
    synor_llm_json *j;
    if (synor_llm_json_create_schema(m, g, &j))
        return -1;
    size_t at = 0;
    int V = synor_llm_hparams_get(m)->vocab_size;
    for (int i = 0; i < n; i++) {
        if (feed(j, doc, at, stops[i])) {
            synor_llm_json_destroy(j);
            return -1;
        }
        at = stops[i];
        measure(j, V, runs, names[i]);
    }
    synor_llm_json_destroy(j);
    return 0;
}

int main(int argc, char **argv)
{
    const char *model = NULL;
    int runs = 50;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "-m") && i + 1 < argc)
            model = argv[++i];
        else if (!strcmp(argv[i], "--runs") && i + 1 < argc)
            runs = atoi(argv[++i]);
        else {
            fprintf(stderr, "usage: bench_json -m MODEL [--runs R]\n");
            return 2;
        }
    }
    if (!model || runs < 1) {
        fprintf(stderr, "usage: bench_json -m MODEL [--runs R]\n");
        return 2;
    }
    synor_llm *m;
    if (synor_llm_load(model, NULL, &m)) {
        fprintf(stderr, "bench_json: %s\n", synor_errmsg());
        return 1;
    }
    find_byte_tokens(m);
    int V = synor_llm_hparams_get(m)->vocab_size;
    printf("bench_json: %s, %d pieces, %s kernels\n", model, V, synor_llm_isa());

    /* making constraints: the model's first, then later ones */
    synor_llm_json *j;
    double a = now();
    if (synor_llm_json_create(m, &j))
        return 1;
    double first = now() - a;
    synor_llm_json_destroy(j);
    double later[100];
    for (int i = 0; i < 100; i++) {
        a = now();
        synor_llm_json_create(m, &j);
        later[i] = now() - a;
        synor_llm_json_destroy(j);
    }
    qsort(later, 100, sizeof *later, cmp_d);
    printf("making a constraint: the model's first %.3f ms (its pieces), later %.4f ms "
           "(median of 100)\n",
           first * 1e3, later[50] * 1e3);

    static const char obj[] = "{\"name\": \"ball\", \"tags\": [\"red\", \"big\"], \"n\": -12";
    static const size_t obj_stops[] = {0, 10, 38};
    static const char *const obj_names[] = {"before the object", "inside a string",
                                            "after a value"};
    printf("json_object masks:\n");
    if (walk(m, NULL, obj, obj_stops, obj_names, 3, runs))
        return 1;

    static const char sch[] =
        "{\"type\":\"object\",\"properties\":{\"name\":{\"type\":\"string\",\"maxLength\":40},"
        "\"tags\":{\"type\":\"array\",\"items\":{\"enum\":[\"red\",\"big\",\"small\"]}},"
        "\"n\":{\"type\":\"integer\"},\"ok\":{\"type\":\"boolean\"}},"
        "\"required\":[\"name\",\"tags\",\"n\",\"ok\"]}";
    static const size_t sch_stops[] = {0, 1, 10, 26, 38};
    static const char *const sch_names[] = {"before the object", "a property's name",
                                            "a bounded string", "an enum value",
                                            "after a value"};
    synor_llm_schema *g;
    if (synor_llm_schema_parse(sch, sizeof sch - 1, "schema", &g)) {
        fprintf(stderr, "bench_json: %s\n", synor_errmsg());
        return 1;
    }
    printf("json_schema masks:\n");
    int rc = walk(m, g, obj, sch_stops, sch_names, 5, runs);
    synor_llm_schema_free(g);
    synor_llm_destroy(m);
    return rc ? 1 : 0;
}
