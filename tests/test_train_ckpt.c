/* test_train_ckpt.c - training runs (synor_train_run): a run stopped and
 * resumed from its checkpoint continues bit for bit (the same losses, the
 * same parameters) as one that never stopped; a torn or corrupted
 * checkpoint is detected by its size or CRC and the previous one used;
 * only the newest checkpoints are kept; the model exports to llama2.c;
 * the log plots. */
#include <stdint.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "llm_fixture.h"
#include "synor/error.h"
#include "synor/tokenizer.h"
#include "synor/train.h"
#include "test.h"

static const synor_train_config cfg = {
    .dim = 16, .hidden_dim = 32, .n_layers = 2, .n_heads = 4, .n_kv_heads = 2, .seq_len = 12};

/* Sentences from a small vocabulary in a seeded order. */
static char *corpus(size_t *len)
{
    static const char *words[] = {"the", "cat",  "sat",  "on",   "a",     "mat",  "and",
                                  "dog", "ran",  "far",  "away", "from",  "home", "in",
                                  "sun", "rain", "with", "joy",  "under", "trees"};
    size_t cap = 20000, n = 0;
    char *t = malloc(cap);
    uint64_t s = 99;
    while (n < cap - 16) {
        s = s * 6364136223846793005ull + 1442695040888963407ull;
        const char *w = words[(s >> 33) % 20];
        n += (size_t)snprintf(t + n, cap - n, "%s%s", w, (s >> 40) % 7 ? " " : ". ");
    }
    *len = n;
    return t;
}

typedef struct log_t {
    double loss[64];
    long steps[64];
    int n;
} log_t;

static int record(const synor_train_progress *p, void *ctx)
{
    log_t *l = ctx;
    l->loss[l->n] = p->loss;
    l->steps[l->n++] = p->step;
    return 0;
}

static int stop_at_3(const synor_train_progress *p, void *ctx)
{
    record(p, ctx);
    return p->step == 3;
}

typedef struct fixture {
    synor_runtime *rt;
    synor_tokenizer *tok;
    synor_train_data data;
    synor_train_config cfg;
    char dir[64];
} fixture;

static int setup(fixture *f)
{
    memset(f, 0, sizeof *f);
    f->rt = llm_test_runtime(2);
    if (!f->rt)
        return -1;
    size_t len;
    char *text = corpus(&len);
    int e = synor_tokenizer_train(text, len, 300, &f->tok);
    if (!e)
        e = synor_train_data_from_text(f->tok, text, len, 0.1, cfg.seq_len, &f->data);
    free(text);
    f->cfg = cfg;
    f->cfg.vocab_size = (int)synor_tokenizer_size(f->tok);
    snprintf(f->dir, sizeof f->dir, "/tmp/synor-train-XXXXXX");
    if (!e && !mkdtemp(f->dir))
        e = -1;
    return e;
}

static void teardown(fixture *f)
{
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf %s", f->dir);
    if (f->dir[0] && system(cmd) != 0)
        fprintf(stderr, "  could not remove %s\n", f->dir);
    synor_train_data_free(&f->data);
    synor_tokenizer_destroy(f->tok);
    synor_runtime_destroy(f->rt);
}

static int run(fixture *f, const char *dir, int steps, int resume, synor_train_progress_fn fn,
               log_t *log, float **params)
{
    synor_trainer *t;
    int e = synor_trainer_create(f->rt, &f->cfg, 4, 2, &t);
    if (e)
        return e;
    synor_train_run_opts o = {.steps = steps,
                              .seed = 5,
                              .ckpt_every = 2,
                              .ckpt_dir = dir,
                              .ckpt_keep = 2,
                              .resume = resume,
                              .eval_every = 4,
                              .progress = fn,
                              .progress_ctx = log};
    synor_train_adamw_init(&o.opt, 8);
    e = synor_train_run(t, &f->data, &o);
    if (params) {
        size_t P = synor_train_param_count(&f->cfg);
        *params = malloc(P * sizeof(float));
        memcpy(*params, synor_trainer_params(t), P * sizeof(float));
    }
    synor_trainer_destroy(t);
    return e;
}

static int exists(const char *dir, const char *name)
{
    char p[256];
    snprintf(p, sizeof p, "%s/%s", dir, name);
    return access(p, F_OK) == 0;
}

TEST(a_resumed_run_continues_bit_for_bit)
{
    fixture f;
    if (setup(&f)) {
        teardown(&f);
        TEST_SKIP("no runtime or OpenBLAS (libopenblas0)");
    }
    size_t P = synor_train_param_count(&f.cfg);
    char a[128], b[128];
    snprintf(a, sizeof a, "%s/a", f.dir);
    snprintf(b, sizeof b, "%s/b", f.dir);
    mkdir(a, 0700);
    mkdir(b, 0700);
    log_t la = {0}, lb = {0};
    float *pa, *pb;
    ASSERT_OK(run(&f, a, 8, 0, record, &la, &pa));
    ASSERT_EQ(la.n, 8);
    ASSERT(la.loss[7] < la.loss[0]);
    /* only the two newest checkpoints are kept */
    ASSERT(exists(a, "ckpt-8.bin") && exists(a, "ckpt-6.bin") && !exists(a, "ckpt-4.bin"));

    /* stopped after step 3 (its checkpoint is step 2), then resumed */
    ASSERT_EQ(run(&f, b, 8, 0, stop_at_3, &lb, NULL), 1);
    ASSERT(exists(b, "ckpt-2.bin") && !exists(b, "ckpt-4.bin"));
    lb.n = 0;
    ASSERT_OK(run(&f, b, 8, 1, record, &lb, &pb));
    ASSERT_EQ(lb.n, 6);
    ASSERT_EQ(lb.steps[0], 3);
    for (int i = 0; i < 6; i++)
        if (lb.loss[i] != la.loss[i + 2])
            TEST__FAIL("step %ld: %.17g resumed, %.17g straight", lb.steps[i], lb.loss[i],
                       la.loss[i + 2]);
    ASSERT(memcmp(pa, pb, P * sizeof(float)) == 0);
    free(pa);
    free(pb);
    teardown(&f);
}

TEST(a_torn_checkpoint_is_detected_and_the_previous_one_used)
{
    fixture f;
    if (setup(&f)) {
        teardown(&f);
        TEST_SKIP("no runtime or OpenBLAS (libopenblas0)");
    }
    size_t P = synor_train_param_count(&f.cfg);
    log_t la = {0}, lb = {0};
    float *pa, *pb;
    ASSERT_OK(run(&f, f.dir, 6, 0, record, &la, &pa));
    char p6[160], p4[160], found[256];
    snprintf(p6, sizeof p6, "%s/ckpt-6.bin", f.dir);
    snprintf(p4, sizeof p4, "%s/ckpt-4.bin", f.dir);
    synor_train_config c;
    synor_train_state st;
    ASSERT_OK(synor_train_ckpt_peek(p6, &c, &st));
    ASSERT_EQ(st.step, 6);
    ASSERT_EQ(c.vocab_size, f.cfg.vocab_size);

    /* a flipped byte in the parameters: the CRC */
    FILE *fp = fopen(p6, "r+b");
    ASSERT(fp);
    fseek(fp, 1000, SEEK_SET);
    int ch = fgetc(fp);
    fseek(fp, 1000, SEEK_SET);
    fputc(ch ^ 0x10, fp);
    fclose(fp);
    ASSERT_EQ(synor_train_ckpt_peek(p6, &c, &st), SYNOR_EPARSE);
    ASSERT(strstr(synor_errmsg(), "checksum mismatch") && strstr(synor_errmsg(), "ckpt-6.bin"));
    ASSERT_OK(synor_train_ckpt_latest(f.dir, found, sizeof found, &c, &st));
    ASSERT(strcmp(found, p4) == 0);
    ASSERT_EQ(st.step, 4);

    /* cut short (a torn write) */
    ASSERT_EQ(truncate(p6, 4000), 0);
    ASSERT_EQ(synor_train_ckpt_peek(p6, &c, &st), SYNOR_EPARSE);
    ASSERT(strstr(synor_errmsg(), "torn or cut short"));

    /* resuming skips it: steps 5 and 6 again, the same bits */
    ASSERT_OK(run(&f, f.dir, 6, 1, record, &lb, &pb));
    ASSERT_EQ(lb.n, 2);
    ASSERT(lb.loss[0] == la.loss[4] && lb.loss[1] == la.loss[5]);
    ASSERT(memcmp(pa, pb, P * sizeof(float)) == 0);
    ASSERT_OK(synor_train_ckpt_peek(p6, &c, &st)); /* rewritten whole */

    /* not a checkpoint; another shape */
    ASSERT_EQ(synor_train_ckpt_peek("/nonexistent/ckpt-1.bin", &c, &st), SYNOR_EIO);
    synor_train_config other = f.cfg;
    other.dim = 32;
    synor_trainer *t;
    ASSERT_OK(synor_trainer_create(f.rt, &other, 4, 2, &t));
    ASSERT_EQ(synor_trainer_load(t, p4, &st), SYNOR_EINVAL);
    ASSERT(strstr(synor_errmsg(), "dim is 16, the trainer's is 32"));
    synor_trainer_destroy(t);
    free(pa);
    free(pb);
    teardown(&f);
}

TEST(the_model_exports_and_the_log_plots)
{
    fixture f;
    if (setup(&f)) {
        teardown(&f);
        TEST_SKIP("no runtime or OpenBLAS (libopenblas0)");
    }
    synor_trainer *t;
    ASSERT_OK(synor_trainer_create(f.rt, &f.cfg, 4, 2, &t));
    synor_trainer_init_params(t, 3);
    char path[160];
    snprintf(path, sizeof path, "%s/model.bin", f.dir);
    ASSERT_OK(synor_trainer_export_l2c(t, path));
    synor_l2c *m;
    ASSERT_OK(synor_l2c_open(path, &m));
    const synor_l2c_config *lc = synor_l2c_config_get(m);
    ASSERT_EQ(lc->dim, 16);
    ASSERT_EQ(lc->vocab_size, f.cfg.vocab_size);
    synor_l2c_tensor w;
    ASSERT_OK(synor_l2c_tensor_get(m, SYNOR_L2C_W2, 1, &w));
    const float *p = synor_trainer_params(t) + synor_train_param_offset(&f.cfg, SYNOR_L2C_W2, 1);
    ASSERT(memcmp(w.f32, p, w.n * sizeof(float)) == 0);
    synor_l2c_close(m);
    synor_trainer_destroy(t);

    /* unigram baseline: below ln(vocab), above 0 */
    double u = synor_train_data_unigram(&f.data, f.cfg.vocab_size);
    ASSERT(u > 0.5 && u < log((double)f.cfg.vocab_size));

    char log[160];
    snprintf(log, sizeof log, "%s/log.csv", f.dir);
    FILE *fp = fopen(log, "w");
    fputs("step,loss,val_loss,lr\n1,5.5,,0.001\n2,5.0,5.2,0.001\n3,4.0,,0.001\n", fp);
    fclose(fp);
    char *svg = synor_train_plot_svg(log, 4.5);
    ASSERT(svg && strstr(svg, "<svg") && strstr(svg, "<polyline") && strstr(svg, "4.500"));
    free(svg);
    fp = fopen(log, "w");
    fputs("step,loss\n1,5.5\n2,x\n", fp);
    fclose(fp);
    ASSERT(synor_train_plot_svg(log, 0) == NULL);
    ASSERT(strstr(synor_errmsg(), "line 3") && strstr(synor_errmsg(), "'2,x'"));
    teardown(&f);
}

TEST_MAIN(a_resumed_run_continues_bit_for_bit,
          a_torn_checkpoint_is_detected_and_the_previous_one_used,
          the_model_exports_and_the_log_plots)
