/* test_perfmodel.c - history-based performance models: calibration, the
 * robust estimate (outliers, lasting changes), separate entries, footprint
 * properties, files (round trip, atomic save, malformed input, merging,
 * allocation failures), the XDG default path, and concurrent recording. */
#include <dirent.h>
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "common/common.h"
#include "synor.h"
#include "synor/perfmodel.h"
#include "test.h"

static synor_perfmodel *model(void)
{
    synor_perfmodel *pm = NULL;
    if (synor_perfmodel_create(&pm) != 0)
        return NULL;
    return pm;
}

static double est(const synor_perfmodel *pm, const char *op, uint64_t fp, const char *dev)
{
    double s = -1;
    if (synor_perfmodel_estimate(pm, op, fp, dev, &s, NULL) != 0)
        return -1;
    return s;
}

static char *tmpdir(void)
{
    static char d[64];
    strcpy(d, "/tmp/synor-perfmodel-XXXXXX");
    return mkdtemp(d);
}

/* rm -r dir (files and directories the tests made). */
static void rm_rf(const char *dir)
{
    DIR *d = opendir(dir);
    if (d) {
        for (struct dirent *de; (de = readdir(d));) {
            if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
                continue;
            char p[512];
            snprintf(p, sizeof p, "%s/%s", dir, de->d_name);
            struct stat sb;
            if (lstat(p, &sb) == 0 && S_ISDIR(sb.st_mode))
                rm_rf(p);
            else
                unlink(p);
        }
        closedir(d);
    }
    rmdir(dir);
}

static int write_text(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    if (!f)
        return -1;
    fputs(text, f);
    return fclose(f);
}

/* ---------------------------------------------------------- calibration */

TEST(estimate_needs_min_samples)
{
    synor_perfmodel *pm = model();
    ASSERT(pm);
    double s = 42;
    unsigned n = 99;
    ASSERT_EQ(synor_perfmodel_estimate(pm, "gemm", 7, "cpu", &s, &n), SYNOR_ENOENT);
    ASSERT_EQ(n, 0);
    ASSERT(s == 42);
    ASSERT_EQ(synor_perfmodel_min_samples(pm), SYNOR_PERFMODEL_MIN_SAMPLES);
    ASSERT_EQ(SYNOR_PERFMODEL_MIN_SAMPLES, 3);
    synor_perfmodel_record(pm, "gemm", 7, "cpu", 1.0);
    synor_perfmodel_record(pm, "gemm", 7, "cpu", 3.0);
    ASSERT_EQ(synor_perfmodel_estimate(pm, "gemm", 7, "cpu", &s, &n), SYNOR_ENOENT);
    ASSERT_EQ(n, 2);
    ASSERT(s == 42);
    synor_perfmodel_record(pm, "gemm", 7, "cpu", 2.0);
    ASSERT_OK(synor_perfmodel_estimate(pm, "gemm", 7, "cpu", &s, &n));
    ASSERT_EQ(n, 3);
    ASSERT(s == 2.0);
    /* The threshold is adjustable and clamped to [1, window]. */
    synor_perfmodel_set_min_samples(pm, 4);
    ASSERT_EQ(synor_perfmodel_estimate(pm, "gemm", 7, "cpu", &s, &n), SYNOR_ENOENT);
    synor_perfmodel_set_min_samples(pm, 0);
    ASSERT_EQ(synor_perfmodel_min_samples(pm), 1);
    synor_perfmodel_set_min_samples(pm, 1000);
    ASSERT_EQ(synor_perfmodel_min_samples(pm), SYNOR_PERFMODEL_WINDOW);
    for (int i = 0; i < 40; i++)
        synor_perfmodel_record(pm, "gemm", 7, "cpu", 2.0);
    ASSERT_OK(synor_perfmodel_estimate(pm, "gemm", 7, "cpu", &s, &n));
    ASSERT_EQ(n, 43);
    /* Samples is optional. */
    ASSERT_OK(synor_perfmodel_estimate(pm, "gemm", 7, "cpu", &s, NULL));
    synor_perfmodel_destroy(pm);
    synor_perfmodel_destroy(NULL);
}

TEST(bad_samples_are_ignored)
{
    synor_perfmodel *pm = model();
    ASSERT(pm);
    synor_perfmodel_record(pm, "gemm", 1, "cpu", NAN);
    synor_perfmodel_record(pm, "gemm", 1, "cpu", INFINITY);
    synor_perfmodel_record(pm, "gemm", 1, "cpu", -INFINITY);
    synor_perfmodel_record(pm, "gemm", 1, "cpu", -1e-9);
    synor_perfmodel_record(pm, NULL, 1, "cpu", 1.0);
    synor_perfmodel_record(pm, "gemm", 1, NULL, 1.0);
    synor_perfmodel_record(NULL, "gemm", 1, "cpu", 1.0);
    ASSERT_EQ(synor_perfmodel_count(pm), 0);
    /* Zero is a valid duration (a no-op kernel under the clock's grain). */
    for (int i = 0; i < 3; i++)
        synor_perfmodel_record(pm, "nop", 1, "cpu", i == 1 ? -0.0 : 0.0);
    ASSERT_EQ(synor_perfmodel_count(pm), 1);
    double s = -1;
    ASSERT_OK(synor_perfmodel_estimate(pm, "nop", 1, "cpu", &s, NULL));
    ASSERT(s == 0 && !signbit(s));
    unsigned n = 9;
    ASSERT_EQ(synor_perfmodel_estimate(pm, NULL, 1, "cpu", &s, &n), SYNOR_ENOENT);
    ASSERT_EQ(n, 0);
    synor_perfmodel_destroy(pm);
}

/* ---------------------------------------------------------- robustness */

static double jitter(int i) { return 1e-3 * (1.0 + 0.01 * (double)((i * 7) % 5 - 2)); }

typedef struct stats_probe {
    const char *op, *dev;
    uint64_t fp;
    synor_perfmodel_entry got;
    int found;
} stats_probe;

static int probe_fn(const synor_perfmodel_entry *e, void *user)
{
    stats_probe *p = user;
    if (strcmp(e->op, p->op) == 0 && strcmp(e->device, p->dev) == 0 && e->footprint == p->fp) {
        p->got = *e;
        p->got.op = p->got.device = NULL; /* valid during the call only */
        p->found = 1;
    }
    return 0;
}

TEST(one_outlier_barely_moves_the_estimate)
{
    synor_perfmodel *pm = model();
    ASSERT(pm);
    for (int i = 0; i < 20; i++)
        synor_perfmodel_record(pm, "potrf", 5, "gpu", jitter(i));
    double before = est(pm, "potrf", 5, "gpu");
    ASSERT(before > 0);
    synor_perfmodel_record(pm, "potrf", 5, "gpu", 100 * before);
    double after = est(pm, "potrf", 5, "gpu");
    ASSERT(fabs(after - before) / before < 0.05);
    /* The mean, which a mean-based model would use, is ruined. */
    stats_probe p = {.op = "potrf", .dev = "gpu", .fp = 5};
    ASSERT_OK(synor_perfmodel_foreach(pm, probe_fn, &p));
    ASSERT(p.found);
    ASSERT_EQ(p.got.count, 21);
    ASSERT(p.got.mean > 5 * before);
    ASSERT(p.got.max == 100 * before);
    ASSERT(p.got.calibrated);
    ASSERT(p.got.estimate == after);
    /* Even right at calibration: two good samples and one slow one. */
    synor_perfmodel_record(pm, "trsm", 5, "gpu", 1e-3);
    synor_perfmodel_record(pm, "trsm", 5, "gpu", 0.1);
    synor_perfmodel_record(pm, "trsm", 5, "gpu", 1.1e-3);
    ASSERT(est(pm, "trsm", 5, "gpu") == 1.1e-3);
    /* Several outliers, as long as they are a minority of the window (here
     * 11 of 31). */
    for (int i = 0; i < 10; i++)
        synor_perfmodel_record(pm, "potrf", 5, "gpu", 50 * before);
    after = est(pm, "potrf", 5, "gpu");
    ASSERT(after < 1.05 * before);
    synor_perfmodel_destroy(pm);
}

TEST(a_lasting_change_is_followed_within_the_window)
{
    synor_perfmodel *pm = model();
    ASSERT(pm);
    for (int i = 0; i < 40; i++)
        synor_perfmodel_record(pm, "gemm", 9, "cpu", jitter(i));
    double base = est(pm, "gemm", 9, "cpu");
    ASSERT_NEAR(base, 1e-3, 0.03);
    /* The device becomes 2x slower for good. */
    int k = 0;
    while (est(pm, "gemm", 9, "cpu") < 1.9e-3 && k < 100)
        synor_perfmodel_record(pm, "gemm", 9, "cpu", 2 * jitter(k++));
    ASSERT(k <= SYNOR_PERFMODEL_WINDOW / 2 + 1);
    ASSERT(k >= SYNOR_PERFMODEL_WINDOW / 2 - 1); /* and not after a handful */
    for (; k < SYNOR_PERFMODEL_WINDOW; k++)
        synor_perfmodel_record(pm, "gemm", 9, "cpu", 2 * jitter(k));
    ASSERT_NEAR(est(pm, "gemm", 9, "cpu"), 2 * base, 0.03);
    /* And back. */
    for (k = 0; k < SYNOR_PERFMODEL_WINDOW; k++)
        synor_perfmodel_record(pm, "gemm", 9, "cpu", jitter(k));
    ASSERT_NEAR(est(pm, "gemm", 9, "cpu"), base, 0.03);
    synor_perfmodel_destroy(pm);
}

TEST(median_of_the_window)
{
    /* Against a brute-force median of the last W samples, over a
     * pseudo-random stream with ties. */
    synor_perfmodel *pm = model();
    ASSERT(pm);
    synor_perfmodel_set_min_samples(pm, 1);
    double hist[500];
    uint64_t r = 12345;
    for (int i = 0; i < 500; i++) {
        r = r * 6364136223846793005ull + 1442695040888963407ull;
        hist[i] = (double)((r >> 33) % 50) * 1e-4;
        synor_perfmodel_record(pm, "x", 0, "d", hist[i]);
        int lo = i + 1 > SYNOR_PERFMODEL_WINDOW ? i + 1 - SYNOR_PERFMODEL_WINDOW : 0;
        int n = i + 1 - lo;
        double w[SYNOR_PERFMODEL_WINDOW];
        for (int j = 0; j < n; j++)
            w[j] = hist[lo + j];
        for (int a = 1; a < n; a++) /* insertion sort */
            for (int b = a; b > 0 && w[b - 1] > w[b]; b--) {
                double t = w[b];
                w[b] = w[b - 1];
                w[b - 1] = t;
            }
        double want = n % 2 ? w[n / 2] : 0.5 * (w[n / 2 - 1] + w[n / 2]);
        double got = est(pm, "x", 0, "d");
        if (got != want)
            TEST__FAIL("after %d samples: median %.17g, want %.17g", i + 1, got, want);
    }
    synor_perfmodel_destroy(pm);
}

/* ------------------------------------------------------------- entries */

TEST(devices_ops_and_footprints_keep_separate_entries)
{
    synor_perfmodel *pm = model();
    ASSERT(pm);
    for (int i = 0; i < 5; i++) {
        synor_perfmodel_record(pm, "gemm", 1, "cpu", 4e-3);
        synor_perfmodel_record(pm, "gemm", 1, "opencl0", 1e-3);
        synor_perfmodel_record(pm, "gemm", 2, "cpu", 8e-3);
        synor_perfmodel_record(pm, "syrk", 1, "cpu", 2e-3);
    }
    ASSERT_EQ(synor_perfmodel_count(pm), 4);
    ASSERT(est(pm, "gemm", 1, "cpu") == 4e-3);
    ASSERT(est(pm, "gemm", 1, "opencl0") == 1e-3);
    ASSERT(est(pm, "gemm", 2, "cpu") == 8e-3);
    ASSERT(est(pm, "syrk", 1, "cpu") == 2e-3);
    ASSERT(est(pm, "syrk", 1, "opencl0") < 0);
    ASSERT(est(pm, "gemm", 3, "cpu") < 0);
    /* Keys are not confused by concatenation: "ab"+"c" vs "a"+"bc". */
    for (int i = 0; i < 3; i++) {
        synor_perfmodel_record(pm, "ab", 1, "c", 1.0);
        synor_perfmodel_record(pm, "a", 1, "bc", 2.0);
    }
    ASSERT(est(pm, "ab", 1, "c") == 1.0);
    ASSERT(est(pm, "a", 1, "bc") == 2.0);
    /* Many entries: the stripes' bucket arrays grow, nothing is lost. */
    for (uint64_t f = 0; f < 3000; f++)
        for (int i = 0; i < 3; i++)
            synor_perfmodel_record(pm, "many", f, "cpu", (double)f);
    ASSERT_EQ(synor_perfmodel_count(pm), 4 + 2 + 3000);
    for (uint64_t f = 0; f < 3000; f++)
        if (est(pm, "many", f, "cpu") != (double)f)
            TEST__FAIL("entry %llu lost", (unsigned long long)f);
    synor_perfmodel_destroy(pm);
}

/* ----------------------------------------------------------- footprints */

/* The documented algorithm, written independently: FNV-1a (64 bit) over
 * each value as 8 little-endian bytes, then one more FNV step with the
 * count as a whole word, then splitmix64's finalizer. */
static uint64_t ref_footprint(const uint64_t *v, unsigned n)
{
    uint64_t h = 14695981039346656037ull;
    for (unsigned i = 0; i < n; i++) {
        unsigned char bytes[8];
        for (int b = 0; b < 8; b++)
            bytes[b] = (unsigned char)(v[i] >> (8 * b));
        for (int b = 0; b < 8; b++)
            h = (h ^ bytes[b]) * 1099511628211ull;
    }
    h = (h ^ n) * 1099511628211ull;
    h = (h ^ (h >> 30)) * 0xbf58476d1ce4e5b9ull;
    h = (h ^ (h >> 27)) * 0x94d049bb133111ebull;
    return h ^ (h >> 31);
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

TEST(footprints_are_stable_and_tell_shapes_apart)
{
    size_t a[] = {2, 8, 64, 64, 1, 8, 64, 1};
    size_t *copy = malloc(sizeof a);
    ASSERT(copy);
    memcpy(copy, a, sizeof a);
    uint64_t fa = synor_perfmodel_footprint(a, 8);
    /* Depends on the values only (not on where they are, not on time). */
    ASSERT(fa == synor_perfmodel_footprint(copy, 8));
    ASSERT(fa == synor_perfmodel_footprint(a, 8));
    /* It is the documented algorithm, so files from other runs and
     * machines stay valid. */
    uint64_t v[8];
    for (int i = 0; i < 8; i++)
        v[i] = a[i];
    ASSERT(fa == ref_footprint(v, 8));
    ASSERT(synor_perfmodel_footprint(NULL, 0) == ref_footprint(NULL, 0));
    /* Order, each value, and the count matter. */
    copy[2] = 32;
    ASSERT(synor_perfmodel_footprint(copy, 8) != fa);
    size_t swapped[] = {2, 8, 64, 64, 1, 8, 1, 64};
    ASSERT(synor_perfmodel_footprint(swapped, 8) != fa);
    ASSERT(synor_perfmodel_footprint(a, 7) != fa);
    size_t zero = 0;
    ASSERT(synor_perfmodel_footprint(&zero, 1) != synor_perfmodel_footprint(NULL, 0));
    free(copy);
    /* No collisions over a grid of shapes like the runtime's: 3 data, a
     * data type each, m x k, k x n, m x n. */
    size_t cap = 4 * 40 * 40 * 4;
    uint64_t *fps = malloc(cap * sizeof *fps);
    ASSERT(fps);
    size_t n = 0;
    for (size_t dt = 0; dt < 4; dt++)
        for (size_t m = 1; m <= 40; m++)
            for (size_t k = 1; k <= 40; k++)
                for (size_t nn = 1; nn <= 4; nn++) {
                    size_t s[] = {3, dt, m, k, dt, k, nn * 16, dt, m, nn * 16};
                    fps[n++] = synor_perfmodel_footprint(s, 10);
                }
    qsort(fps, n, sizeof *fps, cmp_u64);
    size_t dups = 0;
    for (size_t i = 1; i < n; i++)
        dups += fps[i] == fps[i - 1];
    free(fps);
    ASSERT_EQ(dups, 0);
    /* Avalanche: flipping one bit of one value flips about half the bits. */
    size_t one[] = {1024, 1024};
    uint64_t f0 = synor_perfmodel_footprint(one, 2);
    one[1] = 1025;
    int bits = __builtin_popcountll(f0 ^ synor_perfmodel_footprint(one, 2));
    ASSERT(bits > 16 && bits < 48);
}

/* ---------------------------------------------------------------- files */

typedef struct listing {
    synor_perfmodel_entry e[64];
    char op[64][64], dev[64][64];
    size_t n;
} listing;

static int list_fn(const synor_perfmodel_entry *e, void *user)
{
    listing *l = user;
    if (l->n == 64)
        return 1;
    l->e[l->n] = *e;
    snprintf(l->op[l->n], sizeof l->op[0], "%s", e->op);
    snprintf(l->dev[l->n], sizeof l->dev[0], "%s", e->device);
    l->e[l->n].op = l->op[l->n];
    l->e[l->n].device = l->dev[l->n];
    l->n++;
    return 0;
}

static void fill(synor_perfmodel *pm)
{
    for (int i = 0; i < 50; i++) /* more than a window */
        synor_perfmodel_record(pm, "gemm", 0xfedcba9876543210ull, "cpu", jitter(i) / 3);
    for (int i = 0; i < 4; i++)
        synor_perfmodel_record(pm, "gemm", 1, "opencl0", 1e-3 * (i + 1));
    synor_perfmodel_record(pm, "potrf", 1, "cpu", 0.1 / 3); /* not calibrated */
    for (int i = 0; i < 3; i++)
        synor_perfmodel_record(pm, "op \"q\"\\\n\xc3\xa9", 0, "dev/1", 1e-9 * (i + 1));
}

TEST(save_and_load_give_identical_estimates)
{
    char *dir = tmpdir();
    ASSERT(dir);
    char path[256];
    snprintf(path, sizeof path, "%s/data/synor/perfmodel.json", dir);
    synor_perfmodel *a = model(), *b = model();
    ASSERT(a && b);
    fill(a);
    ASSERT_OK(synor_perfmodel_save(a, path)); /* creates data/synor/ */
    ASSERT_OK(synor_perfmodel_save(a, path)); /* replaces the file */
    struct stat sb;
    char sub[256];
    snprintf(sub, sizeof sub, "%s/data/synor", dir);
    ASSERT_EQ(stat(sub, &sb), 0);
    ASSERT_EQ(sb.st_mode & 0777, 0700);
    /* Only the file is left: no temporary file behind. */
    DIR *dd = opendir(sub);
    ASSERT(dd);
    int files = 0;
    for (struct dirent *de; (de = readdir(dd));)
        files += de->d_name[0] != '.';
    closedir(dd);
    ASSERT_EQ(files, 1);

    ASSERT_OK(synor_perfmodel_load(b, path));
    listing la = {.n = 0}, lb = {.n = 0};
    ASSERT_OK(synor_perfmodel_foreach(a, list_fn, &la));
    ASSERT_OK(synor_perfmodel_foreach(b, list_fn, &lb));
    ASSERT_EQ(la.n, 4);
    ASSERT_EQ(lb.n, la.n);
    for (size_t i = 0; i < la.n; i++) {
        const synor_perfmodel_entry *x = &la.e[i], *y = &lb.e[i];
        ASSERT_STREQ(x->op, y->op);
        ASSERT_STREQ(x->device, y->device);
        ASSERT(x->footprint == y->footprint);
        ASSERT_EQ(x->count, y->count);
        ASSERT_EQ(x->window, y->window);
        ASSERT(x->estimate == y->estimate);
        ASSERT(x->mean == y->mean);
        ASSERT(x->min == y->min && x->max == y->max);
        ASSERT(fabs(x->stddev - y->stddev) <= 1e-12 * x->stddev);
        ASSERT_EQ(x->calibrated, y->calibrated);
        double s1 = -1, s2 = -2;
        unsigned n1 = 0, n2 = 1;
        int r1 = synor_perfmodel_estimate(a, x->op, x->footprint, x->device, &s1, &n1);
        int r2 = synor_perfmodel_estimate(b, x->op, x->footprint, x->device, &s2, &n2);
        ASSERT_EQ(r1, r2);
        ASSERT_EQ(n1, n2);
        if (r1 == 0)
            ASSERT(s1 == s2);
    }
    /* Sorted by op, device, footprint; the big footprint survives. */
    ASSERT_STREQ(la.e[0].op, "gemm");
    ASSERT_STREQ(la.e[0].device, "cpu");
    ASSERT(la.e[0].footprint == 0xfedcba9876543210ull);
    ASSERT_EQ(la.e[0].count, 50);
    ASSERT_EQ(la.e[0].window, SYNOR_PERFMODEL_WINDOW);
    ASSERT_STREQ(la.e[1].device, "opencl0");
    /* Recording after a reload continues the same window in both. */
    for (int i = 0; i < 7; i++) {
        synor_perfmodel_record(a, "gemm", 0xfedcba9876543210ull, "cpu", 5e-3);
        synor_perfmodel_record(b, "gemm", 0xfedcba9876543210ull, "cpu", 5e-3);
        ASSERT(est(a, "gemm", 0xfedcba9876543210ull, "cpu") ==
               est(b, "gemm", 0xfedcba9876543210ull, "cpu"));
    }
    /* The same model writes the same text. */
    char *ta = synor_perfmodel_to_json(a), *tb = synor_perfmodel_to_json(b);
    ASSERT(ta && tb);
    ASSERT_STREQ(ta, tb);
    ASSERT_CONTAINS(ta, "\"format\": \"synor-perfmodel/1\"");
    ASSERT_CONTAINS(ta, "\"footprint\": \"fedcba9876543210\"");
    free(ta);
    free(tb);
    synor_perfmodel_destroy(a);
    synor_perfmodel_destroy(b);
    /* An empty model saves and loads too. */
    synor_perfmodel *c = model();
    ASSERT(c);
    ASSERT_OK(synor_perfmodel_save(c, path));
    ASSERT_OK(synor_perfmodel_load(c, path));
    ASSERT_EQ(synor_perfmodel_count(c), 0);
    synor_perfmodel_destroy(c);
    rm_rf(dir);
}

TEST(a_missing_file_loads_nothing)
{
    char *dir = tmpdir();
    ASSERT(dir);
    char path[256];
    snprintf(path, sizeof path, "%s/nope/perfmodel.json", dir);
    synor_perfmodel *pm = model();
    ASSERT(pm);
    ASSERT_OK(synor_perfmodel_load(pm, path));
    ASSERT_EQ(synor_perfmodel_count(pm), 0);
    /* A directory where the file should be is an error, not "missing". */
    ASSERT(synor_perfmodel_load(pm, dir) < 0);
    ASSERT_EQ(synor_perfmodel_count(pm), 0);
    /* Saving where a file blocks the directory fails, naming it. */
    char blocker[256], under[300];
    snprintf(blocker, sizeof blocker, "%s/file", dir);
    ASSERT_EQ(write_text(blocker, "x"), 0);
    snprintf(under, sizeof under, "%s/sub/perfmodel.json", blocker);
    ASSERT_EQ(synor_perfmodel_save(pm, under), SYNOR_EIO);
    ASSERT_CONTAINS(synor_errmsg(), blocker);
    synor_perfmodel_destroy(pm);
    rm_rf(dir);
}

#define ENTRY(samples)                                                                      \
    "{\"op\": \"gemm\", \"device\": \"cpu\", \"footprint\": \"00000000000000ff\",\n"         \
    " \"count\": 3, \"mean\": 1, \"stddev\": 0, \"min\": 1, \"max\": 1,\n"                    \
    " \"samples\": " samples "}"

TEST(malformed_files_are_rejected_and_change_nothing)
{
    static const struct {
        const char *text;
        int code;
        const char *where; /* expected "LINE:COL: FIELD" after "FILE:" */
        const char *why;
    } cases[] = {
        {"{\"format\": \"synor-perfmodel/1\", \"entries\": [}", SYNOR_EPARSE, ":1:", ""},
        {"{\"format\": \"synor-perfmodel/2\", \"entries\": []}", SYNOR_ESCHEMA, ":1:12: format",
         "unsupported format"},
        {"{\"entries\": []}", SYNOR_ESCHEMA, ":1:1: (root)", "missing required field \"format\""},
        {"{\"format\": \"synor-perfmodel/1\",\n \"entries\": [\n" ENTRY("[1, -1, 1]") "]}",
         SYNOR_ERANGE, ":5:17: entries[0].samples[1]", "below the minimum"},
        {"{\"format\": \"synor-perfmodel/1\",\n \"entries\": [\n" ENTRY("[1, NaN, 1]") "]}",
         SYNOR_EPARSE, ":5:17", ""},
        {"{\"format\": \"synor-perfmodel/1\",\n \"entries\": [\n" ENTRY("[1, 1e999, 1]") "]}",
         SYNOR_ERANGE, ":5:17", ""},
        {"{\"format\": \"synor-perfmodel/1\",\n \"entries\": [\n" ENTRY("[1, \"NaN\", 1]") "]}",
         SYNOR_ESCHEMA, ":5:17: entries[0].samples[1]", "expected number"},
        {"{\"format\": \"synor-perfmodel/1\",\n \"entries\": [\n"
         "{\"op\": \"gemm\", \"device\": \"cpu\", \"footprint\": \"ff\", \"median\": 1,\n"
         " \"count\": 1, \"mean\": 1, \"stddev\": 0, \"min\": 1, \"max\": 1, \"samples\": [1]}]}",
         SYNOR_ESCHEMA, ":3:52: entries[0]", "unknown field \"median\""},
        {"{\"format\": \"synor-perfmodel/1\", \"extra\": 1, \"entries\": []}", SYNOR_ESCHEMA,
         ":1:33: (root)", "unknown field \"extra\""},
        {"{\"format\": \"synor-perfmodel/1\",\n \"entries\": [\n" ENTRY("[1, 1, 1]") ",\n"
         ENTRY("[1, 1, 1]") "]}",
         SYNOR_EEXIST, ":6:1: entries[1]", "a second entry"},
        {"{\"format\": \"synor-perfmodel/1\",\n \"entries\": [\n" ENTRY("[1, 1, 1, 1]") "]}",
         SYNOR_ERANGE, ":4:11: entries[0].count", "outside"},
        {"{\"format\": \"synor-perfmodel/1\",\n \"entries\": [\n" ENTRY("[1, 2, 1]") "]}",
         SYNOR_ERANGE, ":5:17: entries[0].samples[1]", "outside [min, max]"},
        {"{\"format\": \"synor-perfmodel/1\",\n \"entries\": [\n" ENTRY("[]") "]}",
         SYNOR_ESCHEMA, ":5:13: entries[0].samples", "at least one sample"},
        {"{\"format\": \"synor-perfmodel/1\",\n \"entries\": [\n"
         "{\"op\": \"gemm\", \"device\": \"cpu\", \"footprint\": \"0x12\",\n"
         " \"count\": 1, \"mean\": 1, \"stddev\": 0, \"min\": 1, \"max\": 1, \"samples\": [1]}]}",
         SYNOR_ESCHEMA, ":3:46: entries[0].footprint", "hexadecimal"},
        {"{\"format\": \"synor-perfmodel/1\",\n \"entries\": [\n"
         "{\"op\": \"\", \"device\": \"cpu\", \"footprint\": \"12\",\n"
         " \"count\": 1, \"mean\": 1, \"stddev\": 0, \"min\": 1, \"max\": 1, \"samples\": [1]}]}",
         SYNOR_ESCHEMA, ":3:8: entries[0].op", "empty"},
        {"{\"format\": \"synor-perfmodel/1\",\n \"entries\": [\n"
         "{\"op\": \"gemm\", \"device\": \"cpu\", \"footprint\": \"12\",\n"
         " \"count\": 1, \"mean\": -1, \"stddev\": 0, \"min\": 1, \"max\": 1, \"samples\": [1]}]}",
         SYNOR_ERANGE, ":4:22: entries[0].mean", "below the minimum"},
        {"{\"format\": \"synor-perfmodel/1\",\n \"entries\": [\n"
         "{\"op\": \"gemm\", \"device\": \"cpu\", \"footprint\": \"12\",\n"
         " \"count\": 1, \"mean\": 1, \"stddev\": 0, \"min\": 1, \"samples\": [1]}]}",
         SYNOR_ESCHEMA, ":3:1: entries[0]", "missing required field \"max\""},
        {"[]", SYNOR_ESCHEMA, ":1:1: (root)", "expected object"},
    };
    char *dir = tmpdir();
    ASSERT(dir);
    char path[256];
    snprintf(path, sizeof path, "%s/bad.json", dir);
    synor_perfmodel *pm = model();
    ASSERT(pm);
    fill(pm);
    char *before = synor_perfmodel_to_json(pm);
    ASSERT(before);
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        ASSERT_EQ(write_text(path, cases[i].text), 0);
        int rc = synor_perfmodel_load(pm, path);
        if (rc != cases[i].code)
            TEST__FAIL("case %zu: rc %d (%s), want %d", i, rc, synor_errmsg(), cases[i].code);
        char want[512];
        snprintf(want, sizeof want, "%s%s", path, cases[i].where);
        if (!strstr(synor_errmsg(), want) || !strstr(synor_errmsg(), cases[i].why))
            TEST__FAIL("case %zu: message \"%s\" lacks \"%s\" / \"%s\"", i, synor_errmsg(), want,
                       cases[i].why);
        char *after = synor_perfmodel_to_json(pm);
        ASSERT(after);
        int same = strcmp(before, after) == 0;
        free(after);
        if (!same)
            TEST__FAIL("case %zu: the model changed", i);
    }
    free(before);
    synor_perfmodel_destroy(pm);
    rm_rf(dir);
}

TEST(loading_merges_file_samples_as_older)
{
    static const char *file =
        "{\"format\": \"synor-perfmodel/1\", \"entries\": [\n"
        "{\"op\": \"gemm\", \"device\": \"cpu\", \"footprint\": \"a\", \"count\": 10,\n"
        " \"mean\": 2, \"stddev\": 0, \"min\": 2, \"max\": 2, \"samples\": [2, 2, 2, 2]},\n"
        "{\"op\": \"syrk\", \"device\": \"cpu\", \"footprint\": \"A\", \"count\": 3,\n"
        " \"mean\": 1, \"stddev\": 0, \"min\": 1, \"max\": 1, \"samples\": [1, 1, 1]}]}\n";
    synor_perfmodel *pm = model();
    ASSERT(pm);
    for (int i = 0; i < 3; i++)
        synor_perfmodel_record(pm, "gemm", 0xa, "cpu", 4.0);
    ASSERT_OK(synor_perfmodel_load_string(pm, file, strlen(file), "m.json"));
    ASSERT_EQ(synor_perfmodel_count(pm), 2);
    stats_probe p = {.op = "gemm", .dev = "cpu", .fp = 0xa};
    ASSERT_OK(synor_perfmodel_foreach(pm, probe_fn, &p));
    ASSERT(p.found);
    ASSERT_EQ(p.got.count, 13);
    ASSERT_EQ(p.got.window, 7);
    ASSERT_NEAR(p.got.mean, (10 * 2.0 + 3 * 4.0) / 13, 1e-12);
    ASSERT(p.got.min == 2 && p.got.max == 4);
    ASSERT(p.got.estimate == 2); /* 2 2 2 2 4 4 4 */
    /* Newer samples push the file's out of the window first. */
    for (int i = 0; i < SYNOR_PERFMODEL_WINDOW - 7 + 4; i++)
        synor_perfmodel_record(pm, "gemm", 0xa, "cpu", 4.0);
    ASSERT(est(pm, "gemm", 0xa, "cpu") == 4.0);
    ASSERT(est(pm, "syrk", 0xa, "cpu") == 1.0);
    synor_perfmodel_destroy(pm);
}

TEST(huge_loaded_samples_give_a_finite_estimate)
{
    /* the median of an even window averaged its middle two as (a + b) / 2,
     * which overflows to infinity for samples near DBL_MAX that a file may
     * hold (found by fuzz/fuzz_perfmodel) */
    static const char *file =
        "{\"format\": \"synor-perfmodel/1\", \"entries\": [\n"
        "{\"op\": \"gemm\", \"device\": \"cpu\", \"footprint\": \"1\", \"count\": 2,\n"
        " \"mean\": 1e308, \"stddev\": 0, \"min\": 1e308, \"max\": 1.7e308,\n"
        " \"samples\": [1e308, 1.7e308]}]}\n";
    synor_perfmodel *pm = model();
    ASSERT(pm);
    ASSERT_OK(synor_perfmodel_load_string(pm, file, strlen(file), "m.json"));
    stats_probe p = {.op = "gemm", .dev = "cpu", .fp = 1};
    ASSERT_OK(synor_perfmodel_foreach(pm, probe_fn, &p));
    ASSERT(p.found);
    ASSERT(isfinite(p.got.estimate));
    ASSERT_NEAR(p.got.estimate, 1.35e308, 1e-12);
    synor_perfmodel_destroy(pm);
}

TEST(merged_counts_stay_within_what_a_file_holds)
{
    /* a file's count may be 2^53 (the largest a double holds exactly);
     * merged with recorded samples it went past, and the saved model no
     * longer loaded (found by fuzz/fuzz_perfmodel): counts saturate */
    static const char *file =
        "{\"format\": \"synor-perfmodel/1\", \"entries\": [\n"
        "{\"op\": \"gemm\", \"device\": \"cpu\", \"footprint\": \"1\", \"count\": 9007199254740992,\n"
        " \"mean\": 0.1, \"stddev\": 0.1, \"min\": 0, \"max\": 1, \"samples\": [0.3]}]}\n";
    synor_perfmodel *pm = model(), *again = model();
    ASSERT(pm && again);
    for (int i = 0; i < 3; i++)
        synor_perfmodel_record(pm, "gemm", 1, "cpu", 0.5);
    ASSERT_OK(synor_perfmodel_load_string(pm, file, strlen(file), "m.json"));
    synor_perfmodel_record(pm, "gemm", 1, "cpu", 0.5);
    char *s = synor_perfmodel_to_json(pm);
    ASSERT(s);
    ASSERT_OK(synor_perfmodel_load_string(again, s, strlen(s), "saved.json"));
    free(s);
    stats_probe p = {.op = "gemm", .dev = "cpu", .fp = 1};
    ASSERT_OK(synor_perfmodel_foreach(again, probe_fn, &p));
    ASSERT(p.found && p.got.count == (UINT64_C(1) << 53));
    ASSERT_EQ(p.got.window, 5);
    synor_perfmodel_destroy(again);
    synor_perfmodel_destroy(pm);
}

TEST(allocation_failures_leave_the_model_unchanged)
{
    char *dir = tmpdir();
    ASSERT(dir);
    char path[256];
    snprintf(path, sizeof path, "%s/perfmodel.json", dir);
    synor_perfmodel *src = model(), *pm = model();
    ASSERT(src && pm);
    fill(src);
    for (int i = 0; i < 3; i++)
        synor_perfmodel_record(src, "gemm", 0xfedcba9876543210ull, "cpu", 1.0);
    ASSERT_OK(synor_perfmodel_save(src, path));
    for (int i = 0; i < 3; i++)
        synor_perfmodel_record(pm, "gemm", 0xfedcba9876543210ull, "cpu", 7.0);
    char *before = synor_perfmodel_to_json(pm);
    ASSERT(before);
    int failures = 0;
    for (long k = 1; k < 200; k++) {
        synor__alloc_fail_after(k);
        int rc = synor_perfmodel_load(pm, path);
        synor__alloc_fail_after(0);
        if (rc == 0)
            break; /* k exceeded the number of allocations: success */
        ASSERT_EQ(rc, SYNOR_ENOMEM);
        char *after = synor_perfmodel_to_json(pm);
        ASSERT(after);
        int same = strcmp(before, after) == 0;
        free(after);
        if (!same)
            TEST__FAIL("allocation %ld failing changed the model", k);
        failures++;
    }
    ASSERT(failures >= 5);
    ASSERT_EQ(synor_perfmodel_count(pm), 4);
    /* Recording under allocation failure drops the sample, nothing else. */
    synor__alloc_fail_after(1);
    synor_perfmodel_record(pm, "new-op", 1, "cpu", 1.0);
    synor__alloc_fail_after(0);
    ASSERT_EQ(synor_perfmodel_count(pm), 4);
    /* Saving under allocation failure fails cleanly and leaves the file. */
    for (long k = 1; k < 20; k++) {
        synor__alloc_fail_after(k);
        int rc = synor_perfmodel_save(src, path);
        synor__alloc_fail_after(0);
        if (rc == 0)
            break;
        ASSERT_EQ(rc, SYNOR_ENOMEM);
    }
    synor_perfmodel *again = model();
    ASSERT(again);
    ASSERT_OK(synor_perfmodel_load(again, path));
    ASSERT_EQ(synor_perfmodel_count(again), 4);
    synor_perfmodel_destroy(again);
    free(before);
    synor_perfmodel_destroy(src);
    synor_perfmodel_destroy(pm);
    rm_rf(dir);
}

/* --------------------------------------------------------- default path */

static char *saved_env(const char *name)
{
    const char *v = getenv(name);
    return v ? strdup(v) : NULL;
}

static void restore_env(const char *name, char *v)
{
    if (v)
        setenv(name, v, 1);
    else
        unsetenv(name);
    free(v);
}

TEST(default_path_follows_xdg)
{
    char *xdg = saved_env("XDG_DATA_HOME"), *home = saved_env("HOME");
    char buf[256];
    int ok = 1;
    setenv("XDG_DATA_HOME", "/srv/data", 1);
    setenv("HOME", "/home/ann", 1);
    ok &= synor_perfmodel_default_path(buf, sizeof buf) == 0 &&
          strcmp(buf, "/srv/data/synor/perfmodel.json") == 0;
    /* Relative XDG_DATA_HOME is ignored (XDG spec), as is an empty one. */
    setenv("XDG_DATA_HOME", "rel/data", 1);
    ok &= synor_perfmodel_default_path(buf, sizeof buf) == 0 &&
          strcmp(buf, "/home/ann/.local/share/synor/perfmodel.json") == 0;
    setenv("XDG_DATA_HOME", "", 1);
    ok &= synor_perfmodel_default_path(buf, sizeof buf) == 0 &&
          strcmp(buf, "/home/ann/.local/share/synor/perfmodel.json") == 0;
    unsetenv("XDG_DATA_HOME");
    ok &= synor_perfmodel_default_path(buf, sizeof buf) == 0 &&
          strcmp(buf, "/home/ann/.local/share/synor/perfmodel.json") == 0;
    /* Too small a buffer: ERANGE, buffer untouched. */
    char small[8] = "keep";
    ok &= synor_perfmodel_default_path(small, sizeof small) == SYNOR_ERANGE &&
          strcmp(small, "keep") == 0;
    unsetenv("HOME");
    ok &= synor_perfmodel_default_path(buf, sizeof buf) == SYNOR_ENOENT;
    ok &= strstr(synor_errmsg(), "XDG_DATA_HOME") != NULL;
    restore_env("XDG_DATA_HOME", xdg);
    restore_env("HOME", home);
    ASSERT(ok);
}

/* ---------------------------------------------------------- concurrency */

#define THREADS 4
#define PER_THREAD 20000

typedef struct worker_arg {
    synor_perfmodel *pm;
    unsigned id;
} worker_arg;

static void *recorder(void *p)
{
    worker_arg *a = p;
    char own[16];
    snprintf(own, sizeof own, "own%u", a->id);
    for (unsigned i = 0; i < PER_THREAD; i++) {
        synor_perfmodel_record(a->pm, "shared", 1, "cpu", 1e-3 + 1e-6 * (i % 7));
        synor_perfmodel_record(a->pm, own, 1, "cpu", 2e-3);
        /* Entries created concurrently by every thread. */
        synor_perfmodel_record(a->pm, "fresh", i % 500, i % 2 ? "gpu" : "cpu", 3e-3);
        if (i % 64 == 0) {
            double s;
            unsigned n;
            synor_perfmodel_estimate(a->pm, "shared", 1, "cpu", &s, &n);
        }
    }
    return NULL;
}

static int sum_fn(const synor_perfmodel_entry *e, void *user)
{
    if (strcmp(e->op, "fresh") == 0)
        *(uint64_t *)user += e->count;
    return 0;
}

TEST(concurrent_records_add_up)
{
    synor_perfmodel *pm = model();
    ASSERT(pm);
    pthread_t th[THREADS];
    worker_arg args[THREADS];
    for (unsigned t = 0; t < THREADS; t++) {
        args[t] = (worker_arg){pm, t};
        ASSERT_EQ(pthread_create(&th[t], NULL, recorder, &args[t]), 0);
    }
    /* Readers while they write: estimates, listings, serialization. */
    for (int r = 0; r < 20; r++) {
        double s;
        synor_perfmodel_estimate(pm, "shared", 1, "cpu", &s, NULL);
        uint64_t sum = 0;
        synor_perfmodel_foreach(pm, sum_fn, &sum);
        free(synor_perfmodel_to_json(pm));
    }
    for (unsigned t = 0; t < THREADS; t++)
        pthread_join(th[t], NULL);
    unsigned n = 0;
    double s = 0;
    ASSERT_OK(synor_perfmodel_estimate(pm, "shared", 1, "cpu", &s, &n));
    ASSERT_EQ(n, THREADS * PER_THREAD);
    ASSERT(s >= 1e-3 && s <= 1.007e-3);
    for (unsigned t = 0; t < THREADS; t++) {
        char own[16];
        snprintf(own, sizeof own, "own%u", t);
        ASSERT_OK(synor_perfmodel_estimate(pm, own, 1, "cpu", &s, &n));
        ASSERT_EQ(n, PER_THREAD);
        ASSERT(s == 2e-3);
    }
    uint64_t fresh = 0;
    ASSERT_OK(synor_perfmodel_foreach(pm, sum_fn, &fresh));
    ASSERT_EQ(fresh, (uint64_t)THREADS * PER_THREAD);
    ASSERT_EQ(synor_perfmodel_count(pm), 1 + THREADS + 500);
    synor_perfmodel_destroy(pm);
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

TEST(record_and_estimate_are_cheap)
{
    /* Not a benchmark (sanitizer builds are slow, cores are shared): it
     * prints the cost, and fails only if it is absurd. */
    synor_perfmodel *pm = model();
    ASSERT(pm);
    const char *ops[] = {"gemm", "syrk", "trsm", "potrf"};
    for (int i = 0; i < 64; i++) /* warm: entries exist, windows full */
        for (int o = 0; o < 4; o++)
            synor_perfmodel_record(pm, ops[o], (uint64_t)o, "cpu", 1e-3);
    const int N = 400000;
    double t0 = now_s();
    for (int i = 0; i < N; i++)
        synor_perfmodel_record(pm, ops[i & 3], (uint64_t)(i & 3), "cpu",
                               1e-3 * (1 + 1e-3 * (i % 97)));
    double t1 = now_s();
    double acc = 0, s;
    for (int i = 0; i < N; i++)
        if (synor_perfmodel_estimate(pm, ops[i & 3], (uint64_t)(i & 3), "cpu", &s, NULL) == 0)
            acc += s;
    double t2 = now_s();
    double rec_ns = (t1 - t0) / N * 1e9, est_ns = (t2 - t1) / N * 1e9;
    printf("     record %.0f ns, estimate %.0f ns (window %d)\n", rec_ns, est_ns,
           SYNOR_PERFMODEL_WINDOW);
    ASSERT(acc > 0);
    ASSERT(rec_ns < 20000);
    synor_perfmodel_destroy(pm);
}

TEST_MAIN(estimate_needs_min_samples, huge_loaded_samples_give_a_finite_estimate,
          merged_counts_stay_within_what_a_file_holds, bad_samples_are_ignored,
          one_outlier_barely_moves_the_estimate, a_lasting_change_is_followed_within_the_window,
          median_of_the_window, devices_ops_and_footprints_keep_separate_entries,
          footprints_are_stable_and_tell_shapes_apart, save_and_load_give_identical_estimates,
          a_missing_file_loads_nothing, malformed_files_are_rejected_and_change_nothing,
          loading_merges_file_samples_as_older, allocation_failures_leave_the_model_unchanged,
          default_path_follows_xdg, concurrent_records_add_up, record_and_estimate_are_cheap)
