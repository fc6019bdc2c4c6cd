/* cmd_model.c - `synor model`: build a model with generated weights
 * (synth), or describe a model file (info). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "common/common.h"
#include "synor/llm.h"

static void help(void)
{
    printf("usage: synor model synth OUT [--format gguf|llama2c] [--type TYPE]\n"
           "                  [--preset tiny|stories15m|stories110m] [--dim N] [--hidden N]\n"
           "                  [--layers N] [--heads N] [--kv-heads N] [--vocab N]\n"
           "                  [--seq-len N] [--seed S] [--text FILE] [--tokenizer OUT]\n"
           "                  [--unshared] [--chat-template chatml|llama2|zephyr] [--fim]\n"
           "       synor model info MODEL [--tokenizer FILE]\n\n"
           "synth writes a Llama-architecture model with deterministic generated weights\n"
           "(the same weights for a given seed and shape, in every format), with a BPE\n"
           "vocabulary trained on --text (default: bytes only, padded to --vocab).\n"
           "  --format gguf (default) or llama2c (version 0, plus tokenizer.bin: --tokenizer,\n"
           "                default OUT's folder/tokenizer.bin)\n"
           "  --type   GGUF weight type: f32 (default), f16, bf16, q8_0, q4_0\n"
           "  --preset tiny (dim 64, 2 layers, vocab 512), stories15m (dim 288, 6 layers,\n"
           "           6 heads, hidden 768, vocab 32000, context 256), stories110m (dim 768,\n"
           "           12 layers, 12 heads, hidden 2048, vocab 32000, context 1024); the\n"
           "           other options change the preset's figures\n"
           "  --unshared  a classifier of its own instead of the token embedding\n"
           "  --chat-template  a chat model's template (GGUF tokenizer.chat_template) of\n"
           "           that family; chatml adds its <|im_start|> and <|im_end|> pieces\n"
           "  --fim    fill-in-the-middle's <PRE> <SUF> <MID> <EOT> pieces, named in the\n"
           "           metadata (synor serve's \"suffix\")\n"
           "info prints the configuration, format, weight type and sizes of a model.\n"
           "Exit status: 0 success, 1 failure, 2 usage error.\n");
}

static int info(int argc, char **argv)
{
    const char *path = NULL, *tok = NULL;
    for (int i = 2; i < argc; i++) {
        if (!strcmp(argv[i], "--tokenizer") && i + 1 < argc)
            tok = argv[++i];
        else if (argv[i][0] == '-' || path)
            return cli_usage_error("model", "unexpected argument '%s'", argv[i]);
        else
            path = argv[i];
    }
    if (!path)
        return cli_usage_error("model", "info needs a MODEL file");
    synor_llm_load_opts o = {.tokenizer = tok};
    synor_llm *m;
    if (synor_llm_load(path, &o, &m)) {
        cli_error("%s", synor_errmsg());
        return CLI_FAIL;
    }
    const synor_llm_hparams *c = synor_llm_hparams_get(m);
    char bytes[32];
    cli_fmt_bytes((double)synor_llm_weight_bytes(m), bytes, sizeof bytes);
    printf("model:       %s\nformat:      %s\nweights:     %s, %s\n", path, synor_llm_format(m),
           synor_llm_weight_type(m), bytes);
    printf("shape:       dim %d, hidden %d, %d layers, %d heads (%d KV heads, head dim %d)\n",
           c->dim, c->hidden_dim, c->n_layers, c->n_heads, c->n_kv_heads, c->head_dim);
    printf("vocabulary:  %d pieces (tokenizer: %zu)\ncontext:     %d positions\n", c->vocab_size,
           synor_tokenizer_size(synor_llm_tokenizer(m)), c->seq_len);
    printf("classifier:  %s\nrms eps:     %g\nrope base:   %g\nkernels:     %s\n",
           c->shared_classifier ? "the token embedding (tied)" : "its own", c->norm_eps,
           c->rope_base, synor_llm_isa());
    const char *tmpl = synor_llm_chat_template(m);
    if (tmpl)
        printf("chat template: %zu bytes (Jinja; synor serve --chat-template auto reads its "
               "family)\n",
               strlen(tmpl));
    else
        printf("chat template: none\n");
    int32_t fim[3];
    if (synor_llm_fim(m, fim))
        printf("fill in the middle: tokens %d, %d, %d (prefix, suffix, middle)\n", fim[0],
               fim[1], fim[2]);
    synor_llm_destroy(m);
    return CLI_OK;
}

static int synth(int argc, char **argv)
{
    const char *out = NULL, *format = "gguf", *type = "f32", *text_path = NULL, *tok = NULL;
    synor_llm_synth s = {.cfg = {.dim = 64,
                                 .hidden_dim = 160,
                                 .n_layers = 2,
                                 .n_heads = 4,
                                 .n_kv_heads = 4,
                                 .vocab_size = 512,
                                 .seq_len = 256,
                                 .shared_classifier = 1},
                         .seed = 1};
    for (int i = 2; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        unsigned long long x = 0;
        if (!strcmp(a, "--unshared")) {
            s.cfg.shared_classifier = 0;
            continue;
        }
        if (!strcmp(a, "--fim")) {
            s.fim = 1;
            continue;
        }
        if (a[0] != '-') {
            if (out)
                return cli_usage_error("model", "unexpected argument '%s'", a);
            out = a;
            continue;
        }
        if (!v)
            return cli_usage_error("model", "%s needs a value", a);
        i++;
        int *field = !strcmp(a, "--dim")        ? &s.cfg.dim
                     : !strcmp(a, "--hidden")   ? &s.cfg.hidden_dim
                     : !strcmp(a, "--layers")   ? &s.cfg.n_layers
                     : !strcmp(a, "--heads")    ? &s.cfg.n_heads
                     : !strcmp(a, "--kv-heads") ? &s.cfg.n_kv_heads
                     : !strcmp(a, "--vocab")    ? &s.cfg.vocab_size
                     : !strcmp(a, "--seq-len")  ? &s.cfg.seq_len
                                                : NULL;
        if (field) {
            int r = cli_parse_uint("model", a, v, 1, 1u << 20, &x);
            if (r != CLI_OK)
                return r;
            *field = (int)x;
            if (field == &s.cfg.n_heads)
                s.cfg.n_kv_heads = (int)x;
        } else if (!strcmp(a, "--seed")) {
            int r = cli_parse_uint("model", a, v, 0, UINT64_MAX, &x);
            if (r != CLI_OK)
                return r;
            s.seed = x;
        } else if (!strcmp(a, "--format")) {
            if (strcmp(v, "gguf") && strcmp(v, "llama2c"))
                return cli_usage_error("model", "--format '%s': gguf or llama2c", v);
            format = v;
        } else if (!strcmp(a, "--type")) {
            type = v;
        } else if (!strcmp(a, "--chat-template")) {
            if (strcmp(v, "chatml") && strcmp(v, "llama2") && strcmp(v, "zephyr"))
                return cli_usage_error("model", "--chat-template '%s': chatml, llama2 or zephyr",
                                       v);
            s.chat_template = v;
        } else if (!strcmp(a, "--text")) {
            text_path = v;
        } else if (!strcmp(a, "--tokenizer")) {
            tok = v;
        } else if (!strcmp(a, "--preset")) {
            int h = s.cfg.shared_classifier;
            if (!strcmp(v, "tiny"))
                s.cfg = (synor_llm_hparams){64, 160, 2, 4, 4, 512, 256, 0, 0, 0, h};
            else if (!strcmp(v, "stories15m"))
                s.cfg = (synor_llm_hparams){288, 768, 6, 6, 6, 32000, 256, 0, 0, 0, h};
            else if (!strcmp(v, "stories110m"))
                s.cfg = (synor_llm_hparams){768, 2048, 12, 12, 12, 32000, 1024, 0, 0, 0, h};
            else
                return cli_usage_error("model",
                                       "--preset '%s': tiny, stories15m or "
                                       "stories110m",
                                       v);
        } else {
            return cli_usage_error("model", "unexpected argument '%s'", a);
        }
    }
    if (!out)
        return cli_usage_error("model", "synth needs an OUT file");
    int t = synor_ttype_parse(type);
    if (t < 0 || !strcmp(type, "q8g"))
        return cli_usage_error("model", "--type '%s': f32, f16, bf16, q8_0 or q4_0", type);
    if (!strcmp(format, "llama2c") && (s.chat_template || s.fim))
        return cli_usage_error("model", "--%s: llama2c checkpoints hold no such metadata (gguf)",
                               s.fim ? "fim" : "chat-template");
    if (!strcmp(format, "llama2c") && t != SYNOR_TTYPE_F32)
        return cli_usage_error("model", "--type %s: llama2c checkpoints are written in f32", type);
    char *text = NULL;
    size_t len = 0;
    if (text_path && synor__read_file(text_path, &text, &len)) {
        cli_error("%s", synor_errmsg());
        return CLI_FAIL;
    }
    s.text = text;
    s.text_len = len;
    int e;
    if (!strcmp(format, "gguf")) {
        e = synor_llm_synth_gguf(&s, (synor_ttype)t, out);
    } else {
        char buf[4096];
        if (!tok) {
            const char *slash = strrchr(out, '/');
            snprintf(buf, sizeof buf, "%.*stokenizer.bin", slash ? (int)(slash - out + 1) : 0, out);
            tok = buf;
        }
        e = synor_llm_synth_llama2c(&s, out, tok);
    }
    synor__free(text);
    if (e) {
        cli_error("%s", synor_errmsg());
        return CLI_FAIL;
    }
    return CLI_OK;
}

static void quantize_help(void)
{
    printf("usage: synor quantize IN OUT --type TYPE [--tokenizer FILE]\n\n"
           "Writes the model IN (GGUF, or a llama2.c checkpoint with its tokenizer.bin) to OUT\n"
           "as GGUF with every matrix in TYPE: f32, f16, bf16, q8_0 or q4_0 (GGUF's block\n"
           "formats: llama.cpp loads the result). Norm weights stay f32. A GGUF source keeps\n"
           "its metadata. OUT is replaced atomically.\n"
           "  --tokenizer FILE  llama2.c: the tokenizer.bin (default: beside IN)\n"
           "Exit status: 0 success, 1 failure, 2 usage error.\n");
}

int cli_quantize(const cli_globals *g, int argc, char **argv)
{
    (void)g;
    const char *in = NULL, *out = NULL, *type = NULL, *tok = NULL;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            quantize_help();
            return CLI_OK;
        } else if (!strcmp(a, "--type") || !strcmp(a, "--tokenizer")) {
            if (i + 1 >= argc)
                return cli_usage_error("quantize", "%s needs a value", a);
            *(a[2] == 't' && a[3] == 'y' ? &type : &tok) = argv[++i];
        } else if (a[0] == '-' || (in && out)) {
            return cli_usage_error("quantize", "unexpected argument '%s'", a);
        } else {
            *(in ? &out : &in) = a;
        }
    }
    if (!in || !out)
        return cli_usage_error("quantize", "needs IN and OUT files");
    int t = type ? synor_ttype_parse(type) : -1;
    if (t < 0)
        return cli_usage_error("quantize", "--type '%s': f32, f16, bf16, q8_0 or q4_0",
                               type ? type : "");
    synor_llm_load_opts o = {.tokenizer = tok};
    if (synor_llm_quantize(in, &o, (synor_ttype)t, out)) {
        cli_error("%s", synor_errmsg());
        return CLI_FAIL;
    }
    return CLI_OK;
}

int cli_model(const cli_globals *g, int argc, char **argv)
{
    (void)g;
    if (argc < 2 || !strcmp(argv[1], "-h") || !strcmp(argv[1], "--help")) {
        help();
        return argc < 2 ? CLI_USAGE : CLI_OK;
    }
    if (!strcmp(argv[1], "synth"))
        return synth(argc, argv);
    if (!strcmp(argv[1], "info"))
        return info(argc, argv);
    return cli_usage_error("model", "unknown subcommand '%s' (synth, info)", argv[1]);
}
