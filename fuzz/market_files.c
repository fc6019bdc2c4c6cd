/* market_files.c - the recovery contract of the market harnesses (see
 * market_files.h). */
#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fuzz.h"
#include "market/market_internal.h"
#include "market_files.h"
#include "synor/market.h"
#include "synor/profile.h"

static void put_file(const char *dir, const char *name, const uint8_t *data, size_t len)
{
    char p[512];
    snprintf(p, sizeof p, "%s/%s", dir, name);
    FILE *f = fopen(p, "wb");
    FUZZ_CHECK(f && (len == 0 || fwrite(data, 1, len, f) == len) && fclose(f) == 0,
               "set-up: cannot write %s", p);
}

/* The directory's files and contents, to see that a read-only open
 * changed nothing. */
static char *dir_dump(const char *dir)
{
    fuzz_dump d;
    fuzz_dump_init(&d);
    DIR *dh = opendir(dir);
    FUZZ_CHECK(dh, "set-up: cannot list %s", dir);
    char *names[16];
    size_t n = 0;
    struct dirent *e;
    while ((e = readdir(dh)) && n < 16)
        if (strcmp(e->d_name, ".") && strcmp(e->d_name, ".."))
            names[n++] = strdup(e->d_name);
    closedir(dh);
    for (size_t i = 0; i + 1 < n; i++) /* a stable order */
        for (size_t j = i + 1; j < n; j++)
            if (strcmp(names[j], names[i]) < 0) {
                char *t = names[i];
                names[i] = names[j];
                names[j] = t;
            }
    for (size_t i = 0; i < n; i++) {
        char p[512];
        snprintf(p, sizeof p, "%s/%s", dir, names[i]);
        char *text = NULL;
        size_t len = 0;
        if (synor__read_file(p, &text, &len) == 0) {
            fuzz_dump_printf(&d, "%s %zu %08x\n", names[i], len, synor__crc32c(0, text, len));
            synor__free(text);
        } else {
            fuzz_dump_printf(&d, "%s unreadable\n", names[i]);
        }
        free(names[i]);
    }
    return fuzz_dump_take(&d);
}

void fuzz_remove_dir(const char *dir)
{
    DIR *d = opendir(dir);
    if (d) {
        struct dirent *e;
        char p[512];
        while ((e = readdir(d)))
            if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..")) {
                snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
                unlink(p);
            }
        closedir(d);
    }
    rmdir(dir);
}

static int open_at(const char *dir, int read_only, synor_market **m)
{
    synor_market_config cfg;
    synor_market_config_init(&cfg);
    cfg.dir = dir;
    cfg.fsync = SYNOR_FSYNC_NEVER;
    cfg.read_only = read_only;
    *m = NULL;
    int rc = synor_market_open(&cfg, m);
    if (rc == 0)
        FUZZ_CHECK(synor__market_invariants(*m) == 0, "a recovered market (%s): %s",
                   read_only ? "read-only" : "to write", synor_errmsg());
    return rc;
}

void fuzz_market_recovery(const uint8_t *journal, size_t journal_len, const uint8_t *snapshot,
                          size_t snapshot_len)
{
    static synor_catalog *cat;
    if (!cat && (synor_catalog_create(&cat) || synor_catalog_load_builtin(cat)))
        fuzz_fail("set-up: %s", synor_errmsg());
    char dir[] = "/tmp/synor-fuzz-recovery-XXXXXX";
    FUZZ_CHECK(mkdtemp(dir), "mkdtemp failed");
    if (journal)
        put_file(dir, "journal.log", journal, journal_len);
    if (snapshot)
        put_file(dir, "snapshot.bin", snapshot, snapshot_len);

    /* read-only: nothing changes */
    char *before = dir_dump(dir);
    synor_market *ro;
    int rc_ro = open_at(dir, 1, &ro);
    if (rc_ro)
        FUZZ_CHECK(rc_ro < 0 && synor_errmsg()[0], "a read-only open failed (%d) without a message",
                   rc_ro);
    uint64_t hash = rc_ro == 0 ? synor_market_state_hash(ro) : 0;
    if (ro)
        synor_market_close(ro);
    char *after = dir_dump(dir);
    fuzz_check_same(before, after, "the market directory before and after a read-only open");
    free(before);
    free(after);

    /* to write: the same verdict and the same state */
    synor_market *m;
    int rc = open_at(dir, 0, &m);
    FUZZ_CHECK((rc == 0) == (rc_ro == 0), "read-only open %s, open to write %s (%s)",
               rc_ro ? synor_err_name(rc_ro) : "succeeded", rc ? synor_err_name(rc) : "succeeded",
               synor_errmsg());
    if (rc) {
        FUZZ_CHECK(strstr(synor_errmsg(), dir) != NULL,
                   "a refused market directory is not named in the message: %s", synor_errmsg());
        fuzz_remove_dir(dir);
        return;
    }
    FUZZ_CHECK(synor_market_state_hash(m) == hash,
               "the read-only and the writable open recovered different states");
    synor_market_close(m);

    /* recovery leaves what it recovers from */
    FUZZ_CHECK(open_at(dir, 0, &m) == 0, "a recovered market does not reopen: %s",
               synor_errmsg());
    FUZZ_CHECK(synor_market_state_hash(m) == hash, "a recovered market reopened to another state");
    FUZZ_CHECK(synor_market_snapshot(m) == 0, "snapshot of a recovered market: %s",
               synor_errmsg());
    synor_market_close(m);
    FUZZ_CHECK(open_at(dir, 0, &m) == 0, "a market does not reopen from its snapshot: %s",
               synor_errmsg());
    FUZZ_CHECK(synor_market_state_hash(m) == hash, "a snapshot reopened to another state");

    /* it still works: a fresh id, after its time */
    char line[400];
    unsigned long long t = (unsigned long long)synor_market_time(m) + 1;
    snprintf(line, sizeof line,
             "{\"cmd\":\"place\",\"id\":18446744073709551000,\"owner\":\"fuzz-after\","
             "\"resource\":\"gpu/nvidia-h100-sxm/eu-west\",\"side\":\"bid\",\"price\":1,"
             "\"qty\":1,\"time\":%llu}",
             t);
    int reason = -1;
    FUZZ_CHECK(synor_market_submit_json(m, cat, line, strlen(line), "after.jsonl", 1, &reason) == 0,
               "a command after recovery failed: %s", synor_errmsg());
    FUZZ_CHECK(synor__market_invariants(m) == 0, "after a command: %s", synor_errmsg());
    uint64_t hash2 = synor_market_state_hash(m);
    FUZZ_CHECK(synor_market_commit(m) == 0, "commit: %s", synor_errmsg());
    synor_market_close(m);
    FUZZ_CHECK(open_at(dir, 0, &m) == 0, "reopen after a command: %s", synor_errmsg());
    FUZZ_CHECK(synor_market_state_hash(m) == hash2,
               "the command after recovery (%s) is not in the reopened market",
               reason ? synor_market_reason_name(reason) : "applied");
    synor_market_close(m);
    fuzz_remove_dir(dir);
}

static uint32_t get32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static void put32(uint8_t *p, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

void fuzz_market_fix_journal(uint8_t *j, size_t len)
{
    size_t off = 8; /* the header */
    while (off + 8 <= len) {
        uint32_t n = get32(j + off);
        if (n > len - off - 8)
            break;
        put32(j + off + 4, synor__crc32c(0, j + off + 8, n));
        off += 8 + (size_t)n;
    }
}

void fuzz_market_fix_snapshot(uint8_t *s, size_t len)
{
    if (len < 20)
        return;
    uint64_t n = len - 20;
    for (int i = 0; i < 8; i++)
        s[8 + i] = (uint8_t)(n >> (8 * i));
    put32(s + 16, synor__crc32c(0, s + 20, len - 20));
}
