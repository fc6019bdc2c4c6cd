/* test_kernels.c - the CPU kernels of src/kernels/cpu_ops.c and
 * cpu_attention.c, each run as a runtime task on random inputs of awkward
 * sizes and compared with a plain double-precision reference written here;
 * then real runs (src/exec/exec.c) of workloads that use them. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/kernels.h"
#include "synor/error.h"
#include "synor/exec.h"
#include "synor/runtime.h"
#include "synor/workload.h"
#include "test.h"

static const size_t COLS[] = {1, 7, 33, 257};
#define NCOLS (sizeof COLS / sizeof COLS[0])

/* ------------------------------------------------------------- harness */

static uint64_t rng = 0x1234567;

static float urand(void) /* [-1, 1) */
{
    uint64_t z = (rng += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    z ^= z >> 31;
    return (float)((double)(z >> 40) * 0x1.0p-23 - 1.0);
}

static float *rand_vec(size_t n, float amp)
{
    float *p = malloc((n ? n : 1) * sizeof *p);
    for (size_t i = 0; p && i < n; i++)
        p[i] = amp * urand();
    return p;
}

static synor_runtime *make(unsigned cpu)
{
    synor_runtime_config c;
    synor_runtime_config_init(&c);
    c.cpu_workers = cpu;
    c.pin_workers = 0;
    c.opencl = SYNOR_OPENCL_OFF;
    c.cuda = 0;
    synor_runtime *rt = NULL;
    if (synor_runtime_create(&c, &rt) < 0 || synor_runtime_start(rt) < 0) {
        synor_runtime_destroy(rt);
        return NULL;
    }
    return rt;
}

static char last_msg[1024];

/* Runs kernel k once, on a runtime of its own with 2 CPU workers, on n
 * buffers of elems[i] 32-bit elements (the last one written, the others
 * read), waits, unregisters. Returns wait_all's code;
 * its message is kept in last_msg. */
static int run_kernel(const synor_kernel *k, const void *args, size_t args_size, unsigned n,
                      void *const *bufs, const size_t *elems)
{
    synor_runtime *rt = make(2);
    if (!rt)
        return SYNOR_EIO;
    synor_task_spec t = {.kernel = k, .priority = SYNOR_PRIORITY_NORMAL, .ndata = n,
                         .args = args, .args_size = args_size};
    int rc = 0;
    for (unsigned i = 0; i < n && rc == 0; i++) {
        synor_handle_desc d = {.ptr = bufs[i], .dtype = SYNOR_DTYPE_FP32, .ndim = 1,
                               .shape = {elems[i]}};
        rc = synor_handle_register(rt, &d, &t.data[i]);
        t.mode[i] = i + 1 == n ? SYNOR_ACCESS_W : SYNOR_ACCESS_R;
    }
    if (rc == 0 && (rc = synor_task_submit(rt, &t)) == 0)
        rc = synor_runtime_wait_all(rt);
    snprintf(last_msg, sizeof last_msg, "%s", rc ? synor_errmsg() : "");
    for (unsigned i = 0; i < n; i++)
        if (t.data[i])
            (void)synor_handle_unregister(t.data[i]);
    synor_runtime_destroy(rt);
    return rc;
}

/* |got - want| <= atol + rtol |want| for all i; else the first index. */
static long mismatch(const float *got, const double *want, size_t n, double atol, double rtol)
{
    for (size_t i = 0; i < n; i++)
        if (!(fabs((double)got[i] - want[i]) <= atol + rtol * fabs(want[i])))
            return (long)i;
    return -1;
}

#define ASSERT_CLOSE(got, want, n, atol, rtol)                                                   \
    do {                                                                                         \
        long at_ = mismatch(got, want, n, atol, rtol);                                           \
        if (at_ >= 0)                                                                            \
            TEST__FAIL("element %ld: %.9g, expected %.9g", at_, (double)(got)[at_], (want)[at_]); \
    } while (0)

/* -------------------------------------------------------------- softmax */

static void softmax_ref(const float *x, double *y, size_t rows, size_t cols)
{
    for (size_t r = 0; r < rows; r++) {
        double m = -INFINITY, s = 0;
        for (size_t j = 0; j < cols; j++)
            m = fmax(m, x[r * cols + j]);
        for (size_t j = 0; j < cols; j++)
            s += exp(x[r * cols + j] - m);
        for (size_t j = 0; j < cols; j++)
            y[r * cols + j] = exp(x[r * cols + j] - m) / s;
    }
}

TEST(softmax_matches_reference_and_rows_sum_to_one)
{
    for (size_t ci = 0; ci < NCOLS; ci++) {
        size_t rows = 5, cols = COLS[ci], n = rows * cols;
        float *x = rand_vec(n, 8), *y = rand_vec(n, 0);
        double *ref = malloc(n * sizeof *ref);
        synor__rows_args a = {(int64_t)rows, (int64_t)cols, 0};
        void *bufs[] = {x, y};
        size_t el[] = {n, n};
        ASSERT_OK(run_kernel(&synor__kernel_softmax, &a, sizeof a, 2, bufs, el));
        softmax_ref(x, ref, rows, cols);
        ASSERT_CLOSE(y, ref, n, 1e-7, 2e-6);
        for (size_t r = 0; r < rows; r++) {
            double s = 0;
            for (size_t j = 0; j < cols; j++)
                s += y[r * cols + j];
            ASSERT_NEAR(s, 1.0, 2e-6);
        }
        free(x), free(y), free(ref);
    }
}

TEST(softmax_is_stable_under_a_large_offset)
{
    /* Row 1 = row 0 + 1000 and row 2 = row 0 - 1000, exactly (multiples of
     * 1/64): expf(1000) overflows, so only a kernel that subtracts the row
     * max gives the same result for all three. */
    size_t cols = 257;
    float x[3 * 257], y[3 * 257];
    for (size_t j = 0; j < cols; j++) {
        x[j] = (float)((int)(urand() * 256)) / 64.0f;
        x[cols + j] = x[j] + 1000.0f;
        x[2 * cols + j] = x[j] - 1000.0f;
    }
    synor__rows_args a = {3, (int64_t)cols, 0};
    void *bufs[] = {x, y};
    size_t el[] = {3 * cols, 3 * cols};
    ASSERT_OK(run_kernel(&synor__kernel_softmax, &a, sizeof a, 2, bufs, el));
    for (size_t j = 0; j < cols; j++) {
        ASSERT(isfinite(y[j]) && y[j] > 0);
        ASSERT(y[cols + j] == y[j]);
        ASSERT(y[2 * cols + j] == y[j]);
    }
}

TEST(kernels_refuse_operands_of_the_wrong_size)
{
    float x[12], y[11];
    memset(x, 0, sizeof x);
    synor__rows_args a = {3, 4, 0};
    void *bufs[] = {x, y};
    size_t el[] = {12, 11};
    ASSERT_EQ(run_kernel(&synor__kernel_softmax, &a, sizeof a, 2, bufs, el), SYNOR_EINVAL);
    ASSERT_CONTAINS(last_msg, "softmax: operand Y has 11 elements; the arguments need 12");
}

/* ---------------------------------------------------------------- norms */

TEST(layer_norm_and_rms_norm_match_reference)
{
    for (size_t ci = 0; ci < NCOLS; ci++) {
        size_t rows = 6, cols = COLS[ci], n = rows * cols;
        float *x = rand_vec(n, 3), *g = rand_vec(cols, 1), *b = rand_vec(cols, 1);
        float *y = rand_vec(n, 0), *z = rand_vec(n, 0);
        for (size_t i = 0; i < cols; i++) /* a row with a large common offset */
            x[i] += 100.0f;
        double *ref = malloc(n * sizeof *ref), *rref = malloc(n * sizeof *rref);
        for (size_t r = 0; r < rows; r++) {
            const float *xr = x + r * cols;
            double mean = 0, var = 0, ss = 0;
            for (size_t j = 0; j < cols; j++)
                mean += xr[j], ss += (double)xr[j] * xr[j];
            mean /= (double)cols;
            for (size_t j = 0; j < cols; j++)
                var += (xr[j] - mean) * (xr[j] - mean);
            var /= (double)cols;
            for (size_t j = 0; j < cols; j++) {
                ref[r * cols + j] = (xr[j] - mean) / sqrt(var + 1e-5) * g[j] + b[j];
                rref[r * cols + j] = xr[j] / sqrt(ss / (double)cols + 1e-6) * g[j];
            }
        }
        synor__rows_args a = {(int64_t)rows, (int64_t)cols, 1e-5f};
        void *lb[] = {x, g, b, y};
        size_t le[] = {n, cols, cols, n};
        ASSERT_OK(run_kernel(&synor__kernel_layer_norm, &a, sizeof a, 4, lb, le));
        ASSERT_CLOSE(y, ref, n, 2e-5, 2e-5);
        a.eps = 1e-6f;
        void *rb[] = {x, g, z};
        size_t re[] = {n, cols, n};
        ASSERT_OK(run_kernel(&synor__kernel_rms_norm, &a, sizeof a, 3, rb, re));
        ASSERT_CLOSE(z, rref, n, 1e-6, 2e-6);
        free(x), free(g), free(b), free(y), free(z), free(ref), free(rref);
    }
}

/* ----------------------------------------------------------- reductions */

TEST(row_reductions_match_reference)
{
    for (size_t ci = 0; ci < NCOLS; ci++) {
        size_t rows = 9, cols = COLS[ci], n = rows * cols;
        float *x = rand_vec(n, 10), *y = rand_vec(rows, 0);
        double *sum = malloc(rows * sizeof *sum), *mx = malloc(rows * sizeof *mx);
        double *mean = malloc(rows * sizeof *mean);
        for (size_t r = 0; r < rows; r++) {
            sum[r] = 0, mx[r] = -INFINITY;
            for (size_t j = 0; j < cols; j++)
                sum[r] += x[r * cols + j], mx[r] = fmax(mx[r], x[r * cols + j]);
            mean[r] = sum[r] / (double)cols;
        }
        synor__rows_args a = {(int64_t)rows, (int64_t)cols, 0};
        void *bufs[] = {x, y};
        size_t el[] = {n, rows};
        ASSERT_OK(run_kernel(&synor__kernel_row_sum, &a, sizeof a, 2, bufs, el));
        ASSERT_CLOSE(y, sum, rows, 1e-5, 1e-6);
        ASSERT_OK(run_kernel(&synor__kernel_row_mean, &a, sizeof a, 2, bufs, el));
        ASSERT_CLOSE(y, mean, rows, 1e-6, 1e-6);
        ASSERT_OK(run_kernel(&synor__kernel_row_max, &a, sizeof a, 2, bufs, el));
        ASSERT_CLOSE(y, mx, rows, 0, 0);
        free(x), free(y), free(sum), free(mx), free(mean);
    }
}

TEST(whole_tensor_sum_is_accurate)
{
    /* A float accumulator over a million values drifts by ~1e-4 of the sum
     * of magnitudes; double accumulation with pairwise blocks stays at the
     * final rounding. */
    static const size_t sizes[] = {1, 7, 4097, 1000003};
    for (size_t si = 0; si < sizeof sizes / sizeof sizes[0]; si++) {
        size_t n = sizes[si];
        float *x = rand_vec(n, 1), y = 0;
        double ref = 0, mag = 0;
        for (size_t i = 0; i < n; i++) {
            x[i] += 0.25f; /* a nonzero mean */
            ref += x[i], mag += fabs(x[i]);
        }
        synor__rows_args a = {1, (int64_t)n, 0};
        void *bufs[] = {x, &y};
        size_t el[] = {n, 1};
        ASSERT_OK(run_kernel(&synor__kernel_sum_all, &a, sizeof a, 2, bufs, el));
        ASSERT(fabs(y - ref) <= 1e-9 * mag + 1.2e-7 * fabs(ref));
        a.rows = (int64_t)n, a.cols = 1; /* the same elements seen as n rows of 1 */
        ASSERT_OK(run_kernel(&synor__kernel_sum_all, &a, sizeof a, 2, bufs, el));
        ASSERT(fabs(y - ref) <= 1e-9 * mag + 1.2e-7 * fabs(ref));
        free(x);
    }
}

/* ------------------------------------------------------------ transpose */

TEST(transpose_matches_and_round_trips)
{
    static const size_t shapes[][2] = {{1, 1}, {1, 257}, {7, 33}, {33, 7}, {64, 64}, {257, 65}};
    for (size_t si = 0; si < sizeof shapes / sizeof shapes[0]; si++) {
        size_t rows = shapes[si][0], cols = shapes[si][1], n = rows * cols;
        float *x = rand_vec(n, 1), *y = rand_vec(n, 0), *z = rand_vec(n, 0);
        synor__rows_args a = {(int64_t)rows, (int64_t)cols, 0};
        void *b1[] = {x, y}, *b2[] = {y, z};
        size_t el[] = {n, n};
        ASSERT_OK(run_kernel(&synor__kernel_transpose, &a, sizeof a, 2, b1, el));
        for (size_t i = 0; i < rows; i++)
            for (size_t j = 0; j < cols; j++)
                ASSERT(y[j * rows + i] == x[i * cols + j]);
        synor__rows_args back = {(int64_t)cols, (int64_t)rows, 0};
        ASSERT_OK(run_kernel(&synor__kernel_transpose, &back, sizeof back, 2, b2, el));
        ASSERT(memcmp(x, z, n * sizeof *x) == 0);
        free(x), free(y), free(z);
    }
}

/* ------------------------------------------------------------ embedding */

TEST(embedding_gathers_rows)
{
    for (size_t ci = 0; ci < NCOLS; ci++) {
        size_t vocab = 50, dim = COLS[ci], n = 13;
        float *table = rand_vec(vocab * dim, 1), *y = rand_vec(n * dim, 0);
        int32_t ids[13];
        for (size_t i = 0; i < n; i++)
            ids[i] = (int32_t)(i * 7 % vocab);
        ids[0] = 0, ids[1] = (int32_t)vocab - 1;
        synor__embedding_args a = {(int64_t)n, (int64_t)vocab, (int64_t)dim};
        void *bufs[] = {table, ids, y};
        size_t el[] = {vocab * dim, n, n * dim};
        ASSERT_OK(run_kernel(&synor__kernel_embedding, &a, sizeof a, 3, bufs, el));
        for (size_t i = 0; i < n; i++)
            ASSERT(memcmp(y + i * dim, table + (size_t)ids[i] * dim, dim * sizeof *y) == 0);
        free(table), free(y);
    }
}

TEST(embedding_with_an_id_out_of_range_fails_the_run)
{
    float table[10 * 4], y[5 * 4];
    memset(table, 0, sizeof table);
    int32_t ids[5] = {1, 2, 10, 3, 4};
    synor__embedding_args a = {5, 10, 4};
    void *bufs[] = {table, ids, y};
    size_t el[] = {40, 5, 20};
    ASSERT_EQ(run_kernel(&synor__kernel_embedding, &a, sizeof a, 3, bufs, el), SYNOR_ERANGE);
    ASSERT_CONTAINS(last_msg, "embedding: ");
    ASSERT_CONTAINS(last_msg, "token id 10 (position 2)");
    ASSERT_CONTAINS(last_msg, "vocabulary [0, 10)");
    ids[2] = -3;
    ASSERT_EQ(run_kernel(&synor__kernel_embedding, &a, sizeof a, 3, bufs, el), SYNOR_ERANGE);
    ASSERT_CONTAINS(last_msg, "token id -3");
    ids[2] = 9; /* the runtime keeps working */
    ASSERT_OK(run_kernel(&synor__kernel_embedding, &a, sizeof a, 3, bufs, el));
}

/* ------------------------------------------------------------ attention */

static size_t row_at(const synor__attention_args *a, size_t b, size_t h, size_t nh, size_t s,
                     size_t i)
{
    size_t d = (size_t)a->head_dim;
    return a->token_major ? ((b * s + i) * nh + h) * d : ((b * nh + h) * s + i) * d;
}

/* The textbook O(seq^2) attention, in double. */
static void attention_ref(const synor__attention_args *a, const float *q, const float *k,
                          const float *v, double *o)
{
    size_t H = (size_t)a->heads, G = (size_t)a->kv_heads, D = (size_t)a->head_dim;
    size_t sq = (size_t)a->seq_q, skv = (size_t)a->seq_kv;
    double scale = 1.0 / sqrt((double)D), *p = malloc(skv * sizeof *p);
    for (size_t b = 0; b < (size_t)a->batch; b++)
        for (size_t h = 0; h < H; h++)
            for (size_t i = 0; i < sq; i++) {
                const float *qi = q + row_at(a, b, h, H, sq, i);
                double *oi = o + row_at(a, b, h, H, sq, i);
                long see = a->causal ? (long)i + (long)skv - (long)sq + 1 : (long)skv;
                size_t n = see < 0 ? 0 : (size_t)see > skv ? skv : (size_t)see;
                double m = -INFINITY, s = 0;
                for (size_t j = 0; j < n; j++) {
                    const float *kj = k + row_at(a, b, h / (H / G), G, skv, j);
                    p[j] = 0;
                    for (size_t d = 0; d < D; d++)
                        p[j] += (double)qi[d] * kj[d];
                    p[j] *= scale;
                    m = fmax(m, p[j]);
                }
                for (size_t j = 0; j < n; j++)
                    s += (p[j] = exp(p[j] - m));
                for (size_t d = 0; d < D; d++) {
                    oi[d] = 0;
                    for (size_t j = 0; j < n; j++)
                        oi[d] += p[j] / s * v[row_at(a, b, h / (H / G), G, skv, j) + d];
                }
            }
    free(p);
}

static void check_attention(synor__attention_args a, float amp)
{
    size_t nq = (size_t)(a.batch * a.heads * a.seq_q * a.head_dim);
    size_t nkv = (size_t)(a.batch * a.kv_heads * a.seq_kv * a.head_dim);
    float *q = rand_vec(nq, amp), *k = rand_vec(nkv, amp), *v = rand_vec(nkv, 1);
    float *o = rand_vec(nq, 100); /* garbage: every element must be written */
    double *ref = malloc(nq * sizeof *ref);
    void *bufs[] = {q, k, v, o};
    size_t el[] = {nq, nkv, nkv, nq};
    ASSERT_OK(run_kernel(&synor__kernel_attention, &a, sizeof a, 4, bufs, el));
    attention_ref(&a, q, k, v, ref);
    ASSERT_CLOSE(o, ref, nq, 2e-5, 1e-4);
    free(q), free(k), free(v), free(o), free(ref);
}

#define ATT(b, h, g, sq, skv, d, causal, tm) \
    (synor__attention_args){b, h, g, sq, skv, d, causal, tm, 0}

TEST(attention_matches_naive_reference)
{
    check_attention(ATT(2, 4, 4, 33, 33, 16, 0, 0), 2);  /* plain, head-major */
    if (test__s.failed)
        return;
    check_attention(ATT(1, 3, 3, 70, 70, 7, 0, 1), 2);   /* two query blocks, token-major */
}

TEST(attention_causal_matches_naive_reference)
{
    check_attention(ATT(2, 2, 2, 70, 70, 7, 1, 0), 2);   /* crosses the 64-row block */
    if (test__s.failed)
        return;
    check_attention(ATT(1, 4, 1, 5, 37, 8, 1, 1), 2);    /* 5 new tokens after 32 cached */
    if (test__s.failed)
        return;
    check_attention(ATT(1, 2, 2, 9, 4, 4, 1, 0), 2);     /* 5 queries see no key: O = 0 */
}

TEST(attention_grouped_kv_matches_naive_reference)
{
    check_attention(ATT(2, 6, 2, 65, 65, 32, 1, 1), 1);
    if (test__s.failed)
        return;
    check_attention(ATT(1, 8, 4, 17, 17, 1, 0, 0), 3);
    if (test__s.failed)
        return;
    /* 40,000 keys: the score block shrinks below 64 rows (memory bound) */
    check_attention(ATT(1, 2, 1, 100, 40000, 4, 1, 1), 4);
}

TEST(attention_refuses_kv_heads_not_dividing_heads)
{
    float buf[64] = {0};
    synor__attention_args a = ATT(1, 3, 2, 1, 1, 1, 0, 0);
    void *bufs[] = {buf, buf + 16, buf + 32, buf + 48};
    size_t el[] = {3, 2, 2, 3};
    ASSERT_EQ(run_kernel(&synor__kernel_attention, &a, sizeof a, 4, bufs, el), SYNOR_EINVAL);
    ASSERT_CONTAINS(last_msg, "kv_heads must divide heads");
}

/* ------------------------------------------------------------ real runs */

static int run_workload(const char *text, unsigned workers, uint64_t seed, double *checksum)
{
    synor_workload *w = NULL;
    int rc = synor_workload_load_string(text, strlen(text), "w.json", &w);
    synor_runtime *rt = rc == 0 ? make(workers) : NULL;
    synor_exec_result r;
    if (rc == 0)
        rc = rt ? synor_exec_workload(rt, w, seed, NULL, &r) : SYNOR_EIO;
    if (rc == 0)
        *checksum = r.checksum;
    snprintf(last_msg, sizeof last_msg, "%s", rc ? synor_errmsg() : "");
    synor_runtime_destroy(rt);
    synor_workload_destroy(w);
    return rc;
}

#define WL(tasks) "{\"format\": \"synor-workload/1\", \"name\": \"t\", \"tasks\": [" tasks "]}"

TEST(real_run_of_row_operations_gives_known_sums)
{
    /* x: 7 rows of 33. p = softmax(x): every row sums to 1. Sinks: the
     * column sums of p through a transpose (total 7), its row means (7/33),
     * its whole-tensor sum (7), and the row maxima of softmax over rows of
     * 1 (all ones: 7). */
    const char *text = WL(
        "{\"id\": \"sm\", \"op\": \"softmax\", \"dims\": {\"elements\": 231, \"n\": 33},"
        " \"consumes\": [{\"name\": \"x\", \"bytes\": 924}], \"produces\": [{\"name\": \"p\", \"bytes\": 924}]},"
        "{\"id\": \"tr\", \"op\": \"transpose\", \"dims\": {\"elements\": 231, \"n\": 33},"
        " \"consumes\": [{\"name\": \"p\"}], \"produces\": [{\"name\": \"pt\", \"bytes\": 924}]},"
        "{\"id\": \"cs\", \"op\": \"sum\", \"dims\": {\"elements\": 231, \"n\": 7},"
        " \"consumes\": [{\"name\": \"pt\"}], \"produces\": [{\"name\": \"s\", \"bytes\": 132}]},"
        "{\"id\": \"mn\", \"op\": \"mean\", \"dims\": {\"elements\": 231, \"n\": 33},"
        " \"consumes\": [{\"name\": \"p\"}], \"produces\": [{\"name\": \"pm\", \"bytes\": 28}]},"
        "{\"id\": \"all\", \"op\": \"sum\", \"dims\": {\"elements\": 231},"
        " \"consumes\": [{\"name\": \"p\"}], \"produces\": [{\"name\": \"tot\", \"bytes\": 4}]},"
        "{\"id\": \"one\", \"op\": \"softmax\", \"dims\": {\"elements\": 231, \"n\": 1},"
        " \"consumes\": [{\"name\": \"x\"}], \"produces\": [{\"name\": \"o\", \"bytes\": 924}]},"
        "{\"id\": \"mx\", \"op\": \"max\", \"dims\": {\"elements\": 231, \"n\": 33},"
        " \"consumes\": [{\"name\": \"o\"}], \"produces\": [{\"name\": \"om\", \"bytes\": 28}]}");
    double cs = 0;
    ASSERT_OK(run_workload(text, 2, 1, &cs));
    ASSERT_NEAR(cs, 21.0 + 7.0 / 33.0, 1e-6);
}

TEST(real_run_of_the_attention_block_workload)
{
    synor_workload *w = NULL;
    ASSERT_OK(synor_workload_load_file(SYNOR_SOURCE_DIR "/workloads/attention-block-fp32.json",
                                       &w));
    ASSERT_OK(synor_exec_check(w));
    double cs[2] = {0, 0};
    for (unsigned workers = 1; workers <= 2; workers++) {
        synor_runtime *rt = make(workers);
        ASSERT(rt != NULL);
        synor_exec_result r;
        ASSERT_OK(synor_exec_workload(rt, w, 1, NULL, &r));
        ASSERT_EQ(r.tasks, 15);
        cs[workers - 1] = r.checksum;
        synor_runtime_destroy(rt);
    }
    /* sinks: the sum of the probabilities (128 rows of 1) and each row's
     * largest probability (in (1/1000, 1]) */
    ASSERT(cs[0] > 128.0 + 0.128 - 1e-3 && cs[0] <= 256.0 + 1e-3);
    ASSERT_NEAR(cs[0], cs[1], 1e-9);
    synor_workload_destroy(w);
}

TEST(real_run_fills_valid_token_ids)
{
    const char *text = WL(
        "{\"id\": \"e\", \"op\": \"embedding\", \"dims\": {\"batch\": 2, \"seq\": 500, \"hidden\": 3, \"vocab\": 5},"
        " \"consumes\": [{\"name\": \"tab\", \"bytes\": 60}, {\"name\": \"ids\", \"bytes\": 4000}],"
        " \"produces\": [{\"name\": \"y\", \"bytes\": 12000}]},"
        "{\"id\": \"s\", \"op\": \"sum\", \"dims\": {\"elements\": 3000},"
        " \"consumes\": [{\"name\": \"y\"}], \"produces\": [{\"name\": \"t\", \"bytes\": 4}]}");
    double a = 0, b = 0, c = 0;
    ASSERT_OK(run_workload(text, 2, 7, &a));
    ASSERT_OK(run_workload(text, 1, 7, &b));
    ASSERT_OK(run_workload(text, 2, 8, &c));
    ASSERT(fabs(a) <= 3000.0);
    ASSERT(a == b);
    ASSERT(a != c);
}

TEST(real_run_check_names_bad_operands)
{
    static const struct {
        const char *tasks, *msg;
    } cases[] = {
        {"{\"id\": \"sm\", \"op\": \"softmax\", \"dims\": {\"elements\": 100, \"n\": 33},"
         " \"consumes\": [{\"name\": \"x\", \"bytes\": 400}], \"produces\": [{\"name\": \"y\", \"bytes\": 400}]}",
         "task 'sm' (softmax): elements 100 is not a multiple of the row length n 33"},
        {"{\"id\": \"ln\", \"op\": \"layer_norm\", \"dims\": {\"elements\": 64, \"n\": 16},"
         " \"consumes\": [{\"name\": \"x\", \"bytes\": 256}, {\"name\": \"g\", \"bytes\": 64}, {\"name\": \"b\", \"bytes\": 60}],"
         " \"produces\": [{\"name\": \"y\", \"bytes\": 256}]}",
         "data 'b' has 60 bytes; operand beta (n) needs 64 (fp32)"},
        {"{\"id\": \"rn\", \"op\": \"rms_norm\", \"dims\": {\"elements\": 64, \"n\": 16},"
         " \"consumes\": [{\"name\": \"x\", \"bytes\": 256}], \"produces\": [{\"name\": \"y\", \"bytes\": 256}]}",
         "task 'rn' (rms_norm): consumes 1 and produces 1 data; a real run needs 2 and 1"},
        {"{\"id\": \"e\", \"op\": \"embedding\", \"dims\": {\"batch\": 1, \"seq\": 4, \"hidden\": 2},"
         " \"consumes\": [{\"name\": \"t\", \"bytes\": 8}, {\"name\": \"ids\", \"bytes\": 16}], \"produces\": [{\"name\": \"y\", \"bytes\": 32}]}",
         "task 'e' (embedding): a real run needs \"vocab\""},
        {"{\"id\": \"e\", \"op\": \"embedding\", \"dims\": {\"batch\": 1, \"seq\": 4, \"hidden\": 2, \"vocab\": 3},"
         " \"consumes\": [{\"name\": \"t\", \"bytes\": 24}, {\"name\": \"ids\", \"bytes\": 8}], \"produces\": [{\"name\": \"y\", \"bytes\": 32}]}",
         "data 'ids' has 8 bytes; operand ids (batch x seq, int32) needs 16 (int32)"},
        {"{\"id\": \"r\", \"op\": \"relu\", \"dims\": {\"elements\": 4},"
         " \"consumes\": [{\"name\": \"a\", \"bytes\": 16}], \"produces\": [{\"name\": \"ids\", \"bytes\": 16}]},"
         "{\"id\": \"e\", \"op\": \"embedding\", \"dims\": {\"batch\": 1, \"seq\": 4, \"hidden\": 2, \"vocab\": 3},"
         " \"consumes\": [{\"name\": \"t\", \"bytes\": 24}, {\"name\": \"ids\"}], \"produces\": [{\"name\": \"y\", \"bytes\": 32}]}",
         "the token ids 'ids' must be external data"},
        {"{\"id\": \"e\", \"op\": \"embedding\", \"dims\": {\"batch\": 1, \"seq\": 4, \"hidden\": 2, \"vocab\": 3},"
         " \"consumes\": [{\"name\": \"t\", \"bytes\": 24}, {\"name\": \"ids\", \"bytes\": 16}], \"produces\": [{\"name\": \"y\", \"bytes\": 32}]},"
         "{\"id\": \"r\", \"op\": \"relu\", \"dims\": {\"elements\": 4},"
         " \"consumes\": [{\"name\": \"ids\"}], \"produces\": [{\"name\": \"z\", \"bytes\": 16}]}",
         "task 'r' (relu): data 'ids' holds the token ids of task 'e'"},
        {"{\"id\": \"at\", \"op\": \"self_attention\", \"dims\": {\"batch\": 1, \"seq\": 2, \"heads\": 6, \"kv_heads\": 4, \"head_dim\": 2},"
         " \"consumes\": [{\"name\": \"q\", \"bytes\": 96}, {\"name\": \"k\", \"bytes\": 64}, {\"name\": \"v\", \"bytes\": 64}],"
         " \"produces\": [{\"name\": \"o\", \"bytes\": 96}]}",
         "task 'at' (self_attention): kv_heads 4 does not divide heads 6"},
        {"{\"id\": \"at\", \"op\": \"cross_attention\", \"dims\": {\"batch\": 1, \"seq\": 2, \"kv_len\": 5, \"heads\": 2, \"head_dim\": 2},"
         " \"consumes\": [{\"name\": \"q\", \"bytes\": 32}, {\"name\": \"k\", \"bytes\": 32}, {\"name\": \"v\", \"bytes\": 80}],"
         " \"produces\": [{\"name\": \"o\", \"bytes\": 32}]}",
         "data 'k' has 32 bytes; operand K (batch x kv_len x kv_heads x head_dim) needs 80"},
        {"{\"id\": \"c\", \"op\": \"argmax\", \"dims\": {\"elements\": 4},"
         " \"consumes\": [{\"name\": \"a\", \"bytes\": 16}], \"produces\": [{\"name\": \"b\", \"bytes\": 4}]}",
         "operation 'argmax' has no kernel for real runs"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char text[2048];
        snprintf(text, sizeof text, "{\"format\": \"synor-workload/1\", \"name\": \"t\", \"tasks\": [%s]}",
                 cases[i].tasks);
        synor_workload *w = NULL;
        ASSERT_OK(synor_workload_load_string(text, strlen(text), "w.json", &w));
        int rc = synor_exec_check(w);
        synor_workload_destroy(w);
        if (rc == 0 || !strstr(synor_errmsg(), cases[i].msg))
            TEST__FAIL("case %zu: rc %d, message \"%s\", expected \"%s\"", i, rc, synor_errmsg(),
                       cases[i].msg);
    }
}

TEST_MAIN(softmax_matches_reference_and_rows_sum_to_one, softmax_is_stable_under_a_large_offset,
          kernels_refuse_operands_of_the_wrong_size, layer_norm_and_rms_norm_match_reference,
          row_reductions_match_reference, whole_tensor_sum_is_accurate,
          transpose_matches_and_round_trips, embedding_gathers_rows,
          embedding_with_an_id_out_of_range_fails_the_run, attention_matches_naive_reference,
          attention_causal_matches_naive_reference, attention_grouped_kv_matches_naive_reference,
          attention_refuses_kv_heads_not_dividing_heads, real_run_of_row_operations_gives_known_sums,
          real_run_of_the_attention_block_workload, real_run_fills_valid_token_ids,
          real_run_check_names_bad_operands)
