/* test_market_lines.c - the JSON-lines front end (synor_market_submit_json):
 * the fast parser reads exactly what the strict reader reads, a rejected
 * line registers and changes nothing, out of memory is never a rejection
 * and leaves the journal whole, every event written is valid JSON, and a
 * line read ahead on another thread is applied as its text is. */
#include "json/json.h"
#include "market/cmdline.h"
#include "market/event_keep.h"
#include "market_fixture.h"

static const char *const R = "gpu/nvidia-h100-sxm/eu-west";

/* ------------------------------------------------ the two parse paths */

static int rstr_eq(const rstr *a, const rstr *b)
{
    return a->n == b->n && a->col == b->col && a->is_str == b->is_str &&
           (a->n == 0 || memcmp(a->s, b->s, a->n) == 0);
}

static int raw_eq(const rawcmd *a, const rawcmd *b, char *why, size_t n)
{
    if (a->obj_col != b->obj_col)
        return snprintf(why, n, "object column %d / %d", a->obj_col, b->obj_col), 0;
    for (int f = 0; f < NF; f++) {
        const rfield *x = &a->f[f], *y = &b->f[f];
        int same = HAS(a, f) == HAS(b, f);
        int t = synor__cmd_field_types[f];
        if (same && HAS(a, f))
            same = x->col == y->col && (t != T_BOOL || x->boolean == y->boolean) &&
                   (t != T_STRS || x->n_items == y->n_items) &&
                   ((t != T_STR && t != T_INT) || rstr_eq(&x->str, &y->str));
        for (size_t i = 0; same && HAS(a, f) && t == T_STRS && i < x->n_items; i++)
            same = rstr_eq(&x->items[i], &y->items[i]);
        if (!same)
            return snprintf(why, n, "field %s", synor__cmd_field_names[f]), 0;
    }
    return 1;
}

static uint64_t prng = 88172645463325252ull;
static uint64_t next(void)
{
    prng ^= prng << 13;
    prng ^= prng >> 7;
    prng ^= prng << 17;
    return prng;
}

/* A valid line with some of the fields, in some order, with some spacing. */
static size_t valid_line(char *buf, size_t cap)
{
    static const char *const parts[] = {
        "\"cmd\":\"place\"",     "\"id\":17",          "\"owner\":\"alice\"",
        "\"resource\":\"gpu/nvidia-h100-sxm/eu-west\"", "\"side\":\"ask\"",
        "\"type\":\"limit\"",    "\"tif\":\"ioc\"",    "\"price\":-2490000",
        "\"qty\":0",             "\"time\":18446744073709551615",
        "\"expires\":1",         "\"interruptible\":true", "\"interruptible\":false",
        "\"priority\":255",      "\"min_reputation\":40", "\"duration\":36",
        "\"zone\":\"fra1\"",     "\"zones\":[\"fra1\", \"ams1\"]", "\"zones\":[]",
        "\"also\":[\"gpu/nvidia-h100-sxm/us-east\"]", "\"ref\":5", "\"reputation\":7"};
    size_t n = 0;
    int used[32] = {0};
    n += (size_t)snprintf(buf + n, cap - n, "%s{", next() % 4 ? "" : " ");
    int k = 1 + (int)(next() % 12), first = 1;
    for (int i = 0; i < k; i++) {
        int p = (int)(next() % SYNOR__ARRAY_LEN(parts));
        /* one of each key, as the reader insists */
        int key = p == 12 ? 11 : p == 18 ? 17 : p;
        if (used[key])
            continue;
        used[key] = 1;
        n += (size_t)snprintf(buf + n, cap - n, "%s%s%s", first ? "" : (next() % 3 ? "," : " , "),
                              next() % 5 ? "" : "\t", parts[p]);
        first = 0;
    }
    n += (size_t)snprintf(buf + n, cap - n, "}%s", next() % 4 ? "" : "  ");
    return n;
}

static void mutate(char *buf, size_t *n, size_t cap)
{
    static const char bytes[] = "{}[]\",:\\ -+.0123456789eEtfnuxabcz\x01\x7f\xc3\xa9\xff";
    int edits = 1 + (int)(next() % 3);
    for (int e = 0; e < edits && *n; e++) {
        size_t at = (size_t)(next() % *n);
        char c = bytes[next() % (sizeof bytes - 1)];
        switch (next() % 3) {
        case 0: buf[at] = c; break;
        case 1:
            if (*n + 1 < cap) {
                memmove(buf + at + 1, buf + at, *n - at);
                buf[at] = c;
                (*n)++;
            }
            break;
        default:
            memmove(buf + at, buf + at + 1, *n - at - 1);
            (*n)--;
            break;
        }
    }
}

/* The fast path never reads a line differently from the reader, and it
 * takes the usual lines (so that it is the path the batch runs). */
TEST(the_fast_parser_reads_what_the_reader_reads)
{
    char buf[1024], why[64];
    size_t fast = 0, agreed = 0;
    for (int i = 0; i < 60000; i++) {
        size_t n = valid_line(buf, sizeof buf);
        if (i % 3)
            mutate(buf, &n, sizeof buf);
        rawcmd a, b;
        memset(&a, 0, sizeof a);
        if (synor__cmdline_parse_fast(buf, n, &a) != 0)
            continue;
        fast++;
        synor__jdoc *doc = NULL;
        int rc = synor__cmdline_parse_slow(buf, n, "t", 1, &b, &doc);
        if (rc != 0)
            TEST__FAIL("the fast path took a line the reader refuses (%s): %.*s", synor_errmsg(),
                       (int)n, buf);
        if (!raw_eq(&a, &b, why, sizeof why))
            TEST__FAIL("the paths read %s differently: %.*s", why, (int)n, buf);
        agreed++;
        synor__jdoc_free(doc);
    }
    ASSERT(fast > 20000); /* every valid line and some mutants */
    ASSERT_EQ(agreed, fast);
}

/* ------------------------------------------------- all or nothing */

static int submit_line(fx *f, const char *line, int *reason)
{
    return synor_market_submit_json(f->m, f->cat, line, strlen(line), "t.jsonl", 7, reason);
}

/* Lines rejected for each reason the front end or the market gives; none
 * registers a name or changes anything. */
TEST(a_rejected_line_registers_nothing)
{
    fx f;
    ASSERT_OK(fx_open(&f, NULL));
    char line[512];
    snprintf(line, sizeof line, "{\"cmd\":\"place\",\"id\":1,\"owner\":\"alice\",\"resource\":\"%s\","
             "\"side\":\"ask\",\"price\":100,\"qty\":5,\"time\":5000}", R);
    int reason;
    ASSERT_OK(submit_line(&f, line, &reason));
    ASSERT_EQ(reason, 0);
    static const struct {
        const char *line;
        int reason;
        const char *msg; /* in the message, or NULL: the market's rejection */
    } bad[] = {
        {"{\"cmd\":\"place\",\"id\":2,\"owner\":\"new1\",\"resource\":\"gpu/nvidia-h100-sxm/mars\","
         "\"side\":\"bid\",\"price\":100,\"qty\":5,\"time\":10}", SYNOR_REASON_TIME_BACKWARDS, NULL},
        {"{\"cmd\":\"place\",\"id\":2,\"owner\":\"new2\",\"resource\":\"gpu/nvidia-h100-sxm/mars\","
         "\"side\":\"bid\",\"price\":0,\"qty\":5,\"time\":6000,\"zones\":[\"z9\"]}",
         SYNOR_REASON_BAD_PRICE, NULL},
        {"{\"cmd\":\"place\",\"id\":1,\"owner\":\"new3\",\"resource\":\"gpu/nvidia-h100-sxm/mars\","
         "\"side\":\"bid\",\"price\":1,\"qty\":5,\"time\":6000,\"zone\":\"z8\"}",
         SYNOR_REASON_DUPLICATE_ID, NULL},
        {"{\"cmd\":\"reputation\",\"owner\":\"new4\",\"reputation\":101,\"time\":6000}",
         SYNOR_REASON_BAD_FIELD, NULL},
        {"{\"cmd\":\"reputation\",\"owner\":\"new4\",\"reputation\":300,\"time\":6000}",
         SYNOR_REASON_BAD_FIELD, "t.jsonl:7:49: command.reputation: 300 is out of range"},
        {"{\"cmd\":\"reclaim\",\"owner\":\"alice\",\"resource\":\"gpu/nvidia-h100-sxm/mars\","
         "\"qty\":1,\"time\":6000}", SYNOR_REASON_NOTHING_LEASED, NULL},
        {"{\"cmd\":\"cancel\",\"id\":1,\"owner\":\"nobody\",\"time\":6000}",
         SYNOR_REASON_UNKNOWN_OWNER, "unknown owner \"nobody\""},
        {"{\"cmd\":\"place\",\"id\":3,\"owner\":\"has space\",\"resource\":\"gpu/nvidia-h100-sxm/"
         "mars\",\"side\":\"bid\",\"price\":1,\"qty\":1,\"time\":6000}", SYNOR_REASON_BAD_FIELD,
         "owner \"has space\" must be"},
        {"{\"cmd\":\"place\",\"id\":3,\"owner\":\"new5\",\"resource\":\"gpu/nope/eu\",\"side\":\"bid\","
         "\"price\":1,\"qty\":1,\"time\":6000}", SYNOR_REASON_UNKNOWN_RESOURCE, "no profile \"nope\""},
        {"{\"cmd\":\"place\",\"id\":3,\"owner\":\"new6\",\"resource\":\"gpu/nvidia-h100-sxm/mars\","
         "\"side\":\"bid\",\"price\":18446744073709551616,\"qty\":1,\"time\":6000}",
         SYNOR_REASON_BAD_PRICE, "command.price: 18446744073709551616 is out of range"},
        {"{\"cmd\":\"place\",\"id\":3,\"owner\":\"new7\",\"resource\":\"gpu/nvidia-h100-sxm/mars\","
         "\"side\":\"bid\",\"price\":1,\"qty\":1,\"time\":6000,\"zones\":[\"a\",7]}",
         SYNOR_REASON_BAD_FIELD, "t.jsonl:7:132: command.zones: zones must be strings"},
        {"{\"cmd\":\"cancel\",\"id\":1,\"owner\":\"alice\",\"time\":6000,\"price\":3}",
         SYNOR_REASON_MALFORMED, "t.jsonl:7:60: command.price: not a field of a cancel"},
        {"{\"cmd\":\"cancel\",\"id\":1,\"owner\":\"alice\"}", SYNOR_REASON_MALFORMED,
         "missing required field \"time\""},
        {"{\"cmd\":\"place\",\"id\":3,\"owner\":\"new8\",\"side\":\"sell\",\"resource\":\"x\","
         "\"time\":1}", SYNOR_REASON_MALFORMED, "command.side: must be \"bid\" or \"ask\", not \"sell\""},
        {"{\"cmd\":\"place\" \"id\":3}", SYNOR_REASON_MALFORMED, "t.jsonl:7:16: expected"},
        {"{\"cmd\":\"place\",\"id\":3,\"id\":4}", SYNOR_REASON_MALFORMED, "duplicate key \"id\""},
        {"{\"cmd\":\"place\",\"iid\":3}", SYNOR_REASON_MALFORMED, "unknown field \"iid\""},
        {"{\"cmd\":\"amend\",\"id\":1,\"owner\":\"alice\",\"price\":1e3,\"qty\":1,\"time\":6000}",
         SYNOR_REASON_MALFORMED, "command.price: expected an integer, found 1e3"},
        {"{\"cmd\":\"amend\",\"id\":-1,\"owner\":\"alice\",\"price\":1,\"qty\":1,\"time\":6000}",
         SYNOR_REASON_BAD_FIELD, "command.id: -1 is out of range"},
        {"[1,2]", SYNOR_REASON_MALFORMED, "command: expected object"},
    };
    for (size_t i = 0; i < SYNOR__ARRAY_LEN(bad); i++) {
        uint64_t h = synor_market_state_hash(f.m), seq = synor_market_seq(f.m);
        size_t mark = f.log.n;
        ASSERT_OK(submit_line(&f, bad[i].line, &reason));
        if (reason != bad[i].reason)
            TEST__FAIL("line %zu: reason %s, expected %s (%s)", i, synor_market_reason_name(reason),
                       synor_market_reason_name(bad[i].reason), synor_errmsg());
        ASSERT_EQ(f.log.n, mark + 1);
        ASSERT_EQ(f.log.ev[mark].kind, SYNOR_EV_REJECTED);
        ASSERT_EQ(f.log.ev[mark].reason, bad[i].reason);
        ASSERT_EQ(f.log.ev[mark].seq, 0);
        if (bad[i].msg)
            ASSERT_CONTAINS(synor_errmsg(), bad[i].msg);
        if (synor_market_state_hash(f.m) != h || synor_market_seq(f.m) != seq)
            TEST__FAIL("line %zu changed the market", i);
    }
    uint32_t id;
    ASSERT(synor_market_find_owner(f.m, "new1", &id) != 0);
    ASSERT(synor_market_find_owner(f.m, "new4", &id) != 0);
    ASSERT(synor_market_find_resource(f.m, "gpu/nvidia-h100-sxm/mars", &id) != 0);
    ASSERT(synor_market_zone_name(f.m, 1) == NULL);
    /* an applied line registers its names, in the journal too */
    snprintf(line, sizeof line, "{\"cmd\":\"place\",\"id\":9,\"owner\":\"new9\",\"resource\":"
             "\"gpu/nvidia-h100-sxm/mars\",\"side\":\"bid\",\"price\":1,\"qty\":1,\"time\":6000,"
             "\"zones\":[\"z1\",\"z2\"]}");
    ASSERT_OK(submit_line(&f, line, &reason));
    ASSERT_EQ(reason, 0);
    ASSERT_OK(synor_market_find_owner(f.m, "new9", &id));
    ASSERT_STREQ(synor_market_zone_name(f.m, 2), "z2");
    ASSERT_OK(synor__market_invariants(f.m));
    fx_close(&f);
}

/* ------------------------------------------------- out of memory */

static char *tmpdir(void)
{
    static char d[64];
    strcpy(d, "/tmp/synor-lines-XXXXXX");
    return mkdtemp(d);
}

/* Issue 10, item 16: at every allocation a line can make, a failure is
 * reported as out of memory - never as a rejection - and leaves nothing:
 * the market is as before (or, failed half-way, refuses work and reopens
 * from its journal to the state before the line). */
TEST(out_of_memory_is_not_a_rejection_and_leaves_the_journal_whole)
{
    static const char *const lines[] = {
        /* new owner, resource, zone, region set and a sweep */
        "{\"cmd\":\"place\",\"id\":100,\"owner\":\"o1\",\"resource\":\"gpu/nvidia-h100-sxm/r1\","
        "\"side\":\"bid\",\"price\":200,\"qty\":30,\"time\":9000,\"zones\":[\"zz\"],"
        "\"also\":[\"gpu/nvidia-h100-sxm/eu-west\",\"gpu/nvidia-h100-sxm/r2\"]}",
        /* an interruptible ask that a resting bid leases */
        "{\"cmd\":\"place\",\"id\":101,\"owner\":\"o2\",\"resource\":\"gpu/nvidia-h100-sxm/eu-west\","
        "\"side\":\"ask\",\"price\":10,\"qty\":40,\"time\":9001,\"interruptible\":true}",
        /* a reclaim */
        "{\"cmd\":\"reclaim\",\"owner\":\"o2\",\"resource\":\"gpu/nvidia-h100-sxm/eu-west\","
        "\"qty\":3,\"time\":9002,\"ref\":555}",
        /* escapes: the reader's path */
        "{\"cmd\" : \"place\",\"id\":102,\"owner\":\"\\u00e9l\\u00e8ne\",\"resource\":"
        "\"gpu/nvidia-h100-sxm/eu-west\",\"side\":\"bid\",\"price\":9,\"qty\":1,\"time\":9003}",
        /* malformed, and rejected by the market */
        "{\"cmd\":\"place\",\"id\":103,\"owner\":\"o3\" \"x\":1}",
        "{\"cmd\":\"cancel\",\"id\":99999,\"owner\":\"o2\",\"time\":9004}",
    };
    char *dir = tmpdir();
    ASSERT(dir);
    fx f;
    T = 1000;
    ASSERT_OK(fx_open(&f, dir));
    for (uint64_t i = 0; i < 40; i++) /* resting orders to trade with */
        ASSERT_OK(submit(&f, place(1 + i, i % 2 ? f.alice : f.bob, f.gpu,
                                   i % 3 ? SYNOR_ASK : SYNOR_BID, i % 3 ? 150 + (int64_t)i : 50,
                                   2, SYNOR_GTC)));
    ASSERT_OK(synor_market_commit(f.m));
    fx_close(&f);
    size_t failures = 0;
    char cmd[400], refdir[128];
    snprintf(refdir, sizeof refdir, "%s-ref", dir);
    for (size_t l = 0; l < SYNOR__ARRAY_LEN(lines); l++) {
        /* the outcome without a failure, on a copy of the market */
        snprintf(cmd, sizeof cmd, "rm -rf '%s' && cp -r '%s' '%s'", refdir, dir, refdir);
        ASSERT_EQ(system(cmd), 0);
        fx ref;
        ASSERT_OK(fx_open(&ref, refdir));
        int want;
        size_t ev0 = ref.log.n;
        ASSERT_OK(submit_line(&ref, lines[l], &want));
        size_t want_events = ref.log.n - ev0;
        fx_close(&ref);
        for (long n = 1;; n++) {
            ASSERT_OK(fx_open(&f, dir));
            uint64_t h = synor_market_state_hash(f.m), seq = synor_market_seq(f.m);
            size_t mark = f.log.n;
            int reason = -1;
            synor__alloc_fail_after(n);
            int rc = submit_line(&f, lines[l], &reason);
            synor__alloc_fail_after(0);
            if (rc == 0) { /* no allocation left to fail: this is the line applied */
                if (reason != want || f.log.n - mark != want_events)
                    TEST__FAIL("line %zu, failure at allocation %ld: reason %d, %zu events; "
                               "without it %d, %zu", l, n, reason, f.log.n - mark, want,
                               want_events);
                ASSERT_OK(synor_market_commit(f.m));
                ASSERT_OK(synor__market_invariants(f.m));
                fx_close(&f);
                break;
            }
            failures++;
            if (rc != SYNOR_ENOMEM)
                TEST__FAIL("line %zu, allocation %ld: returned %d (%s)", l, n, rc, synor_errmsg());
            ASSERT_EQ(reason, 0);
            for (size_t e = mark; e < f.log.n; e++)
                if (f.log.ev[e].kind == SYNOR_EV_REJECTED)
                    TEST__FAIL("line %zu, allocation %ld: a rejection for out of memory", l, n);
            if (!f.m->broken && (synor_market_seq(f.m) != seq || synor_market_state_hash(f.m) != h))
                TEST__FAIL("line %zu, allocation %ld: failed but changed the market", l, n);
            ASSERT_OK(synor_market_commit(f.m)); /* what came before is still committed */
            fx_close(&f);
            fx g;
            ASSERT_OK(fx_open(&g, dir));
            if (synor_market_state_hash(g.m) != h)
                TEST__FAIL("line %zu, allocation %ld: the journal holds more than before", l, n);
            fx_close(&g);
        }
    }
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", refdir);
    ASSERT_EQ(system(cmd), 0);
    ASSERT(failures >= 15); /* 20 allocation points in these lines when written */
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    ASSERT_EQ(system(cmd), 0);
}

/* ------------------------------------------------- read ahead */

/* Both markets' events as text: synor_market_event_json, and for an event
 * that can be kept, its kept form's text too (which must be the same). */
typedef struct twin {
    synor__buf text;
    int kept_differs;
} twin;

static void twin_collect(const synor_market_event *e, void *ud)
{
    twin *t = ud;
    char buf[4096], kbuf[SYNOR__KEPT_EVENT_MAX];
    size_t n = synor_market_event_json(e, 9, buf, sizeof buf);
    if (n < sizeof buf)
        synor__buf_append(&t->text, buf, n);
    synor__buf_puts(&t->text, "\n");
    synor__kept_event k;
    if (synor__event_keep(e, 9, &k) == 0) {
        size_t kn = (size_t)(synor__kept_event_json(&k, kbuf) - kbuf);
        if (kn != n + 1 || memcmp(kbuf, buf, n) != 0 || kbuf[n] != '\n')
            t->kept_differs = 1;
    } else if (e->kind != SYNOR_EV_REJECTED) {
        t->kept_differs = 1; /* only a rejection cannot be kept */
    }
}

/* A line read ahead (synor__cmdline_preparse, then
 * synor__market_submit_parsed; or as text when it is not taken) does to a
 * market exactly what synor_market_submit_json does with its text: the
 * same return, reason, message, events and state. */
TEST(a_line_read_ahead_is_applied_as_its_text)
{
    synor_catalog *cat;
    ASSERT_OK(synor_catalog_create(&cat));
    ASSERT_OK(synor_catalog_load_builtin(cat));
    synor_market *m[2];
    twin t[2];
    for (int i = 0; i < 2; i++) {
        memset(&t[i], 0, sizeof t[i]);
        synor__buf_init(&t[i].text);
        synor_market_config cfg;
        synor_market_config_init(&cfg);
        cfg.on_event = twin_collect;
        cfg.user_data = &t[i];
        ASSERT_OK(synor_market_open(&cfg, &m[i]));
    }
    static const char *const owners[] = {"alice", "bob", "carol"};
    char buf[1024], msg[2][600];
    size_t taken = 0;
    prng = 42;
    for (int i = 0; i < 30000; i++) {
        size_t n;
        if (i % 2 && next() % 4) { /* the usual lines: they trade */
            n = (size_t)snprintf(buf, sizeof buf,
                                 "{\"cmd\":\"place\",\"id\":%d,\"owner\":\"%s\",\"resource\":\"%s\","
                                 "\"side\":\"%s\",\"price\":%d,\"qty\":%d,\"time\":%d%s}",
                                 (int)(next() % 5000), owners[next() % 3], R,
                                 next() % 2 ? "bid" : "ask", 90 + (int)(next() % 20),
                                 (int)(next() % 5), i, next() % 9 ? "" : ",\"zone\":\"fra1\"");
            if (i % 7 == 0)
                mutate(buf, &n, sizeof buf);
        } else if (i % 2) {
            n = (size_t)snprintf(buf, sizeof buf,
                                 "{\"cmd\":\"%s\",\"id\":%d,\"owner\":\"%s\",\"price\":%d,"
                                 "\"qty\":%d,\"time\":%d}",
                                 next() % 2 ? "amend" : "cancel", (int)(next() % 5000),
                                 owners[next() % 3], 90 + (int)(next() % 20), (int)(next() % 5), i);
            if (i % 7 == 0)
                mutate(buf, &n, sizeof buf);
        } else {
            n = valid_line(buf, sizeof buf);
            if (i % 3)
                mutate(buf, &n, sizeof buf);
        }
        int rc[2], why[2];
        rc[0] = synor_market_submit_json(m[0], cat, buf, n, "t.jsonl", i + 1, &why[0]);
        synor__strlcpy(msg[0], synor_errmsg(), sizeof msg[0]);
        synor__parsed_line pl;
        if (synor__cmdline_preparse(buf, n, &pl) == 0) {
            taken++;
            rc[1] = synor__market_submit_parsed(m[1], cat, &pl, "t.jsonl", i + 1, &why[1]);
        } else {
            rc[1] = synor_market_submit_json(m[1], cat, buf, n, "t.jsonl", i + 1, &why[1]);
        }
        synor__strlcpy(msg[1], synor_errmsg(), sizeof msg[1]);
        if (rc[0] != rc[1] || why[0] != why[1] || (why[0] && strcmp(msg[0], msg[1]) != 0))
            TEST__FAIL("line %d: %d/%d, reason %d/%d, \"%s\" / \"%s\": %.*s", i + 1, rc[0], rc[1],
                       why[0], why[1], msg[0], msg[1], (int)n, buf);
    }
    ASSERT(taken > 8000);
    ASSERT(!t[0].text.failed && !t[1].text.failed);
    ASSERT_EQ(t[0].text.len, t[1].text.len);
    ASSERT(memcmp(t[0].text.data, t[1].text.data, t[0].text.len) == 0);
    ASSERT(strstr(t[0].text.data, "\"event\":\"trade\"") != NULL);
    ASSERT(!t[0].kept_differs && !t[1].kept_differs);
    ASSERT_EQ(synor_market_state_hash(m[0]), synor_market_state_hash(m[1]));
    for (int i = 0; i < 2; i++) {
        synor_market_close(m[i]);
        synor__buf_free(&t[i].text);
    }
    synor_catalog_destroy(cat);
}

/* ------------------------------------------------- output */

/* Every event of a random stream, and rejections whose messages carry
 * quotes, backslashes, control characters and invalid UTF-8 (from the
 * file name), is one valid JSON object. */
static synor__buf all_json;
static void collect(const synor_market_event *e, void *ud)
{
    (void)ud;
    char buf[4096];
    size_t n = synor_market_event_json(e, 3, buf, sizeof buf);
    if (n < sizeof buf)
        synor__buf_append(&all_json, buf, n);
    synor__buf_puts(&all_json, "\n");
}

TEST(every_event_is_valid_json)
{
    synor__buf_init(&all_json);
    fx f;
    memset(&f, 0, sizeof f);
    synor_market_config cfg;
    synor_market_config_init(&cfg);
    cfg.on_event = collect;
    ASSERT_OK(synor_catalog_create(&f.cat));
    ASSERT_OK(synor_catalog_load_builtin(f.cat));
    ASSERT_OK(synor_market_open(&cfg, &f.m));
    char line[512];
    rng_state = 5;
    uint64_t next_id = 1;
    T = 1000;
    static const char *const owners[] = {"alice", "b\xc3\xa9" "a", "carol", "d"};
    for (int i = 0; i < 3000; i++) {
        synor_market_cmd c = random_cmd(&next_id, 1, 4);
        if (c.kind == SYNOR_CMD_PLACE)
            snprintf(line, sizeof line, "{\"cmd\":\"place\",\"id\":%llu,\"owner\":\"%s\","
                     "\"resource\":\"%s\",\"side\":\"%s\",\"price\":%lld,\"qty\":%lld,\"time\":%llu,"
                     "\"type\":\"%s\",\"interruptible\":%s}",
                     (unsigned long long)c.order_id, owners[c.owner % 4], R,
                     c.side ? "ask" : "bid", (long long)c.price, (long long)c.qty,
                     (unsigned long long)c.time, c.type ? "market" : "limit",
                     i % 7 ? "false" : "true");
        else
            snprintf(line, sizeof line, "{\"cmd\":\"cancel\",\"id\":%llu,\"owner\":\"%s\","
                     "\"time\":%llu}", (unsigned long long)c.order_id, owners[c.owner % 4],
                     (unsigned long long)c.time);
        ASSERT(synor_market_submit_json(f.m, f.cat, line, strlen(line), "a\"b\\c\x01\xff.jsonl", i,
                                        NULL) == 0);
    }
    ASSERT_OK(synor_market_submit_json(f.m, f.cat, "{\"x\":\"\\u0001\"}", 15,
                                       "a\"b\\c\x01\xff.jsonl", 1, NULL));
    ASSERT(!all_json.failed);
    size_t lines = 0, kinds[16] = {0};
    for (char *p = all_json.data; p && *p;) {
        char *q = strchr(p, '\n');
        synor__jdoc *d;
        if (synor__json_parse(p, (size_t)(q - p), "event", &d))
            TEST__FAIL("not JSON (%s): %.*s", synor_errmsg(), (int)(q - p), p);
        const synor__jval *ev = synor__json_get(synor__jdoc_root(d), "event");
        ASSERT(ev && ev->type == SYNOR__J_STRING);
        kinds[strlen(ev->u.str.s) % 16]++;
        synor__jdoc_free(d);
        lines++;
        p = q + 1;
    }
    if (lines <= 4000) /* about 5,000 (random_cmd's draws differ between compilers) */
        TEST__FAIL("only %zu events", lines);
    synor__buf_free(&all_json);
    synor_market_close(f.m);
    synor_catalog_destroy(f.cat);
}

TEST_MAIN(the_fast_parser_reads_what_the_reader_reads, a_rejected_line_registers_nothing,
          out_of_memory_is_not_a_rejection_and_leaves_the_journal_whole, every_event_is_valid_json,
          a_line_read_ahead_is_applied_as_its_text)
