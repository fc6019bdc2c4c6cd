/* fuzz_train.c - the trainer's input files: checkpoints and training logs.
 * The first byte chooses how the rest is read: even, as a checkpoint file
 * (synor_train_ckpt_peek); odd, as a log for the loss curve
 * (synor_train_plot_svg). A checkpoint input whose first byte is 2 mod 4
 * gets the right CRC-32C appended, so mutations reach the header's checks
 * and not only the checksum.
 *
 * Contract checked: a rejected checkpoint is SYNOR_EPARSE with a message
 * naming the file, and the configuration passed in untouched only where
 * it says so; an accepted one has a configuration that passes
 * synor_train_config_check, a parameter count matching its length, and
 * opens the same way twice. A log gives an SVG document or NULL with a
 * message naming the file; the same twice; an allocation failure injected
 * anywhere gives "out of memory" or the same SVG. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fuzz.h"
#include "synor/error.h"
#include "synor/train.h"

static char path[64];

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    snprintf(path, sizeof path, "/tmp/synor-fuzz-train-%ld.bin", (long)getpid());
    return 0;
}

static void spit(const uint8_t *data, size_t size, int crc)
{
    FILE *f = fopen(path, "wb");
    FUZZ_CHECK(f, "cannot write %s", path);
    FUZZ_CHECK(size == 0 || fwrite(data, 1, size, f) == size, "cannot write %s", path);
    if (crc) {
        uint32_t c = synor__crc32c(0, data, size);
        unsigned char b[4] = {(unsigned char)c, (unsigned char)(c >> 8), (unsigned char)(c >> 16),
                              (unsigned char)(c >> 24)};
        FUZZ_CHECK(fwrite(b, 1, 4, f) == 4, "cannot write %s", path);
    }
    fclose(f);
}

static void check_ckpt(size_t len)
{
    synor_train_config c[2];
    synor_train_state s[2];
    int rc[2];
    for (int k = 0; k < 2; k++) {
        memset(&c[k], 0, sizeof c[k]);
        memset(&s[k], 0, sizeof s[k]);
        rc[k] = synor_train_ckpt_peek(path, &c[k], &s[k]);
    }
    FUZZ_CHECK(rc[0] == rc[1], "peek gave %d then %d", rc[0], rc[1]);
    if (rc[0]) {
        FUZZ_CHECK(rc[0] == SYNOR_EPARSE, "peek: code %d (%s)", rc[0], synor_errmsg());
        FUZZ_CHECK(strncmp(synor_errmsg(), path, strlen(path)) == 0,
                   "message does not name the file: %s", synor_errmsg());
        return;
    }
    FUZZ_CHECK(memcmp(&c[0], &c[1], sizeof c[0]) == 0, "two peeks differ");
    synor_train_config chk = c[0];
    FUZZ_CHECK(synor_train_config_check(&chk) == 0, "accepted a bad configuration: %s",
               synor_errmsg());
    size_t P = synor_train_param_count(&c[0]);
    FUZZ_CHECK(len == 8 + 4 + 128 + 12 * P + 4, "accepted %zu bytes for %zu parameters", len, P);
}

static void check_log(const uint8_t *data, size_t size)
{
    char *a = synor_train_plot_svg(path, 3.0);
    if (!a)
        FUZZ_CHECK(strncmp(synor_errmsg(), path, strlen(path)) == 0,
                   "plot: message does not name the file: %s", synor_errmsg());
    else
        FUZZ_CHECK(strncmp(a, "<svg", 4) == 0, "not an SVG document");
    char *b = synor_train_plot_svg(path, 3.0);
    if (a)
        fuzz_check_same(a, b, "two plots of the same log");
    else
        FUZZ_CHECK(!b, "a log refused, then accepted");
    free(b);
    fuzz_alloc_count_start();
    b = synor_train_plot_svg(path, 3.0);
    long n = fuzz_alloc_count_stop();
    free(b);
    fuzz_alloc_fail_one(data, size, n);
    b = synor_train_plot_svg(path, 3.0);
    int injected = fuzz_alloc_disarm();
    if (!b && injected && a)
        FUZZ_CHECK(strstr(synor_errmsg(), "out of memory") != NULL,
                   "an injected failure gave: %s", synor_errmsg());
    else if (a)
        fuzz_check_same(a, b, "a plot with an allocation failure injected");
    else
        FUZZ_CHECK(!b, "a refused log accepted with an allocation failure injected");
    free(a);
    free(b);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (!size)
        return 0;
    int mode = data[0] & 3;
    spit(data + 1, size - 1, mode == 2);
    if (mode % 2 == 0)
        check_ckpt(size - 1 + (mode == 2 ? 4 : 0));
    else
        check_log(data + 1, size - 1);
    unlink(path);
    return 0;
}
