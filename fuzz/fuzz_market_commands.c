/* fuzz_market_commands.c - market command lines (synor_market_submit_json),
 * the input a client gives `synor market batch`: the input is a JSON-lines
 * stream, applied line by line.
 *
 * Contract checked, after every line:
 *   - submit_json returns 0 (applied or rejected): a command is never an
 *     error of the library;
 *   - the book invariants hold (synor__market_invariants);
 *   - a rejected line changes nothing: one REJECTED event, the same state
 *     hash, sequence number and time as before it; an applied line takes
 *     a sequence number (and one per name it registers);
 *   - every event is one JSON object (synor_market_event_json) that reads
 *     back, and a rejection's message names the input with a position in
 *     the line;
 * and for the whole stream:
 *   - a durable market (a journal in a temporary directory) given the same
 *     lines reaches the same state hash; closed and reopened it recovers
 *     that hash; a snapshot taken and reopened keeps it;
 *   - an allocation that fails in the middle of one line (chosen by the
 *     input) is SYNOR_ENOMEM, never a rejection, and the reopened market is
 *     the state before that line: the journal holds exactly what was
 *     acknowledged. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fuzz.h"
#include "market_files.h"
#include "json/json.h"
#include "market/market_internal.h"
#include "synor/market.h"
#include "synor/profile.h"

#define MAX_LINES 64
#define MAX_LINE 4096

static synor_catalog *cat;
/* Set while allocations are counted or one is armed to fail: the events
 * are then only counted (the checks would allocate). */
static int quiet;

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    if (synor_catalog_create(&cat) || synor_catalog_load_builtin(cat))
        fuzz_fail("set-up: %s", synor_errmsg());
    return 0;
}

typedef struct sink {
    size_t events, rejected;
    const char *line;
    size_t line_len;
    long line_no;
} sink;

static void on_event(const synor_market_event *ev, void *user)
{
    sink *s = user;
    s->events++;
    if (quiet)
        return;
    char buf[2048];
    size_t n = synor_market_event_json(ev, s->line_no, buf, sizeof buf);
    FUZZ_CHECK(n > 0, "event %d has no JSON", (int)ev->kind);
    char *text = buf;
    if (n >= sizeof buf) {
        text = malloc(n + 1);
        FUZZ_CHECK(text, "out of memory");
        FUZZ_CHECK(synor_market_event_json(ev, s->line_no, text, n + 1) == n,
                   "the event's JSON changed length between two calls");
    }
    synor__jdoc *d;
    FUZZ_CHECK(synor__json_parse(text, n, "event.json", &d) == 0,
               "an event is not JSON: %s\n%.600s", synor_errmsg(), text);
    FUZZ_CHECK(synor__jdoc_root(d)->type == SYNOR__J_OBJECT, "an event is not an object");
    synor__jdoc_free(d);
    if (text != buf)
        free(text);
    if (ev->kind == SYNOR_EV_REJECTED) {
        s->rejected++;
        FUZZ_CHECK(ev->seq == 0, "a rejected command took sequence number %llu",
                   (unsigned long long)ev->seq);
        if (ev->message) {
            /* "fuzz-input.json:LINE:COL: ..." with the column inside the line */
            char want[64];
            snprintf(want, sizeof want, "%s:%ld:", FUZZ_NAME, s->line_no);
            FUZZ_CHECK(strncmp(ev->message, want, strlen(want)) == 0,
                       "a rejection's message does not name the line (%s): %s", want,
                       ev->message);
            long col = atol(ev->message + strlen(want));
            FUZZ_CHECK(col >= 1 && (size_t)col <= s->line_len + 1,
                       "a rejection names column %ld of a line of %zu bytes: %s", col,
                       s->line_len, ev->message);
        }
    }
}

static synor_market *open_market(const char *dir, sink *s, int must)
{
    synor_market_config cfg;
    synor_market_config_init(&cfg);
    cfg.dir = dir;
    cfg.fsync = SYNOR_FSYNC_NEVER;
    cfg.on_event = on_event;
    cfg.user_data = s;
    synor_market *m = NULL;
    int rc = synor_market_open(&cfg, &m);
    FUZZ_CHECK(!must || rc == 0, "opening %s: %s", dir ? dir : "a market in memory",
               synor_errmsg());
    if (m)
        FUZZ_CHECK(synor__market_invariants(m) == 0, "an opened market: %s", synor_errmsg());
    return m;
}

/* Applies one line, checking the per-line contract. */
static void apply(synor_market *m, sink *s, const char *line, size_t len, long no)
{
    uint64_t hash = synor_market_state_hash(m), seq = synor_market_seq(m),
             time = synor_market_time(m);
    s->line = line;
    s->line_len = len;
    s->line_no = no;
    size_t ev0 = s->events, rej0 = s->rejected;
    int reason = -1;
    int rc = synor_market_submit_json(m, cat, line, len, FUZZ_NAME, no, &reason);
    FUZZ_CHECK(rc == 0, "line %ld: submit_json failed (%s): %s", no, synor_err_name(rc),
               synor_errmsg());
    FUZZ_CHECK(synor__market_invariants(m) == 0, "line %ld: %s", no, synor_errmsg());
    if (reason) {
        FUZZ_CHECK(s->events - ev0 == 1 && s->rejected - rej0 == 1,
                   "line %ld: rejected (%s) with %zu events", no,
                   synor_market_reason_name(reason), s->events - ev0);
        FUZZ_CHECK(synor_market_state_hash(m) == hash && synor_market_seq(m) == seq &&
                       synor_market_time(m) == time,
                   "line %ld: a rejected command (%s) changed the market", no,
                   synor_market_reason_name(reason));
    } else {
        /* the command and any names it registered take a number each */
        FUZZ_CHECK(synor_market_seq(m) > seq && synor_market_seq(m) <= seq + 8,
                   "line %ld: applied, seq %llu -> %llu", no, (unsigned long long)seq,
                   (unsigned long long)synor_market_seq(m));
        FUZZ_CHECK(s->rejected == rej0, "line %ld: applied, yet a REJECTED event", no);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    /* the lines; the first byte chooses the line whose allocation fails */
    if (size < 1)
        return 0;
    unsigned fail_pick = data[0];
    const char *text = (const char *)data + 1;
    size--;
    const char *ls[MAX_LINES];
    size_t ll[MAX_LINES], n = 0;
    for (size_t i = 0; i <= size && n < MAX_LINES;) {
        size_t j = i;
        while (j < size && text[j] != '\n')
            j++;
        if (j > i && j - i <= MAX_LINE) {
            ls[n] = text + i;
            ll[n++] = j - i;
        }
        i = j + 1;
    }
    if (!n)
        return 0;

    /* in memory */
    sink s0 = {0};
    synor_market *mem = open_market(NULL, &s0, 1);
    for (size_t k = 0; k < n; k++)
        apply(mem, &s0, ls[k], ll[k], (long)k + 1);
    uint64_t want = synor_market_state_hash(mem);

    /* durable: the same hash, recovered on reopen, kept by a snapshot */
    char dir[] = "/tmp/synor-fuzz-market-XXXXXX";
    FUZZ_CHECK(mkdtemp(dir), "mkdtemp failed");
    sink s1 = {0};
    synor_market *m = open_market(dir, &s1, 1);
    for (size_t k = 0; k < n; k++)
        apply(m, &s1, ls[k], ll[k], (long)k + 1);
    FUZZ_CHECK(s1.events == s0.events, "durable and in-memory markets gave %zu and %zu events",
               s1.events, s0.events);
    FUZZ_CHECK(synor_market_state_hash(m) == want, "a durable market reached another state");
    FUZZ_CHECK(synor_market_commit(m) == 0, "commit: %s", synor_errmsg());
    synor_market_close(m);
    sink sr = {0};
    m = open_market(dir, &sr, 1);
    FUZZ_CHECK(synor_market_state_hash(m) == want, "the reopened market is another state (%s)",
               synor_market_recovery_note(m));
    FUZZ_CHECK(synor_market_snapshot(m) == 0, "snapshot: %s", synor_errmsg());
    synor_market_close(m);
    m = open_market(dir, &sr, 1);
    FUZZ_CHECK(synor_market_state_hash(m) == want, "the state reopened from its snapshot differs");
    synor_market_close(m);
    fuzz_remove_dir(dir);

    /* an allocation failing in the middle of line k: ENOMEM, and the
     * journal holds the state before line k */
    size_t k = fail_pick % n;
    FUZZ_CHECK(mkdtemp(strcpy(dir, "/tmp/synor-fuzz-market-XXXXXX")), "mkdtemp failed");
    sink s2 = {0};
    m = open_market(dir, &s2, 1);
    for (size_t i = 0; i < k; i++)
        apply(m, &s2, ls[i], ll[i], (long)i + 1);
    FUZZ_CHECK(synor_market_commit(m) == 0, "commit: %s", synor_errmsg());
    uint64_t before = synor_market_state_hash(m);
    s2.line = ls[k];
    s2.line_len = ll[k];
    s2.line_no = (long)k + 1;
    quiet = 1;
    fuzz_alloc_count_start();
    int reason = -1;
    int rc = synor_market_submit_json(m, cat, ls[k], ll[k], FUZZ_NAME, (long)k + 1, &reason);
    long allocs = fuzz_alloc_count_stop();
    quiet = 0;
    int reason0 = reason;
    uint64_t after = synor_market_state_hash(m);
    synor_market_close(m);
    if (rc == 0 && allocs > 0) {
        /* the same line again in a fresh copy, one allocation failing */
        fuzz_remove_dir(dir);
        FUZZ_CHECK(mkdtemp(strcpy(dir, "/tmp/synor-fuzz-market-XXXXXX")), "mkdtemp failed");
        sink s3 = {0};
        m = open_market(dir, &s3, 1);
        for (size_t i = 0; i < k; i++)
            apply(m, &s3, ls[i], ll[i], (long)i + 1);
        FUZZ_CHECK(synor_market_commit(m) == 0, "commit: %s", synor_errmsg());
        s3.line = ls[k];
        s3.line_len = ll[k];
        s3.line_no = (long)k + 1;
        quiet = 1;
        fuzz_alloc_fail_one(data, size + 1, allocs);
        rc = synor_market_submit_json(m, cat, ls[k], ll[k], FUZZ_NAME, (long)k + 1, &reason);
        int hit = fuzz_alloc_disarm();
        quiet = 0;
        /* a failed allocation is SYNOR_ENOMEM, or was recovered from: never
         * a rejection the undisturbed line did not get */
        FUZZ_CHECK(rc == 0 || (hit && rc == SYNOR_ENOMEM), "line %zu: %s after %s", k + 1,
                   synor_err_name(rc), hit ? "a failed allocation" : "no failure");
        FUZZ_CHECK(rc != 0 || reason == reason0,
                   "line %zu: %s with a failed allocation, %s without", k + 1,
                   reason ? synor_market_reason_name(reason) : "applied",
                   reason0 ? synor_market_reason_name(reason0) : "applied");
        int ok = rc == 0;
        if (ok)
            FUZZ_CHECK(synor_market_commit(m) == 0, "commit: %s", synor_errmsg());
        synor_market_close(m);
        sink s4 = {0};
        m = open_market(dir, &s4, 1);
        FUZZ_CHECK(synor_market_state_hash(m) == (ok ? after : before),
                   "line %zu: after %s the journal holds another state", k + 1,
                   ok ? "success" : "an allocation failure");
        synor_market_close(m);
    }
    fuzz_remove_dir(dir);
    synor_market_close(mem);
    return 0;
}
