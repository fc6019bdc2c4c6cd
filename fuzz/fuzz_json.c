/* fuzz_json.c - the strict JSON reader (src/json) under every input, and
 * the writer against it.
 *
 * Contract checked: a rejected document gives SYNOR_EPARSE or SYNOR_ERANGE,
 * leaves *out untouched and names the input with a line:column inside it;
 * an accepted one, written back with the library's writer (compact and
 * pretty), reads again and writes the same bytes (writer and reader agree
 * on every string, number and nesting the reader accepts); parsing is
 * deterministic; a failed allocation anywhere in a parse is SYNOR_ENOMEM
 * with nothing leaked (LeakSanitizer), or the same document. */
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "json/json.h"

static void write_val(synor__jw *w, const synor__jval *v)
{
    switch (v->type) {
    case SYNOR__J_NULL: synor__jw_null(w); break;
    case SYNOR__J_BOOL: synor__jw_bool(w, v->u.boolean); break;
    case SYNOR__J_NUMBER:
        /* -0 is written "0": "-0" would read back as the integer 0 */
        if (v->u.n.is_int || v->u.n.num == 0)
            synor__jw_int(w, v->u.n.is_int ? v->u.n.inum : 0);
        else
            synor__jw_num(w, v->u.n.num);
        break;
    case SYNOR__J_STRING: synor__jw_str(w, v->u.str.s); break;
    case SYNOR__J_ARRAY:
        synor__jw_arr_begin(w);
        for (size_t i = 0; i < v->u.arr.n; i++)
            write_val(w, v->u.arr.items[i]);
        synor__jw_arr_end(w);
        break;
    case SYNOR__J_OBJECT:
        synor__jw_obj_begin(w);
        for (size_t i = 0; i < v->u.obj.n; i++) {
            synor__jw_key(w, v->u.obj.m[i].key);
            write_val(w, v->u.obj.m[i].val);
        }
        synor__jw_obj_end(w);
        break;
    }
}

static char *write_doc(const synor__jdoc *d, int pretty)
{
    synor__buf b;
    synor__jw w;
    synor__buf_init(&b);
    synor__jw_init(&w, &b, pretty);
    write_val(&w, synor__jdoc_root(d));
    char *s = synor__buf_take(&b);
    FUZZ_CHECK(s, "the writer ran out of memory");
    return s;
}

/* Parses text that the writer produced: it must be accepted. */
static synor__jdoc *reparse(const char *text, const char *what)
{
    synor__jdoc *d;
    int rc = synor__json_parse(text, strlen(text), "written.json", &d);
    FUZZ_CHECK(rc == 0, "%s output does not read back (%s):\n%.300s", what, synor_err_name(rc),
               text);
    return d;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *text = (const char *)data;
    synor__jdoc *const untouched = FUZZ_UNTOUCHED(synor__jdoc);
    synor__jdoc *d = untouched;
    fuzz_alloc_count_start();
    int rc = synor__json_parse(text, size, FUZZ_NAME, &d);
    long allocs = fuzz_alloc_count_stop();
    if (rc) {
        fuzz_check_error(rc, 0, FUZZ_NAME, data, size);
        FUZZ_CHECK(rc == SYNOR_EPARSE || rc == SYNOR_ERANGE, "parse failed with %s",
                   synor_err_name(rc));
        FUZZ_CHECK(d == untouched, "a failed parse wrote *out");
        return 0;
    }
    for (int pretty = 0; pretty <= 1; pretty++) {
        const char *what = pretty ? "pretty" : "compact";
        char *w1 = write_doc(d, pretty);
        synor__jdoc *d1 = reparse(w1, what);
        char *w2 = write_doc(d1, pretty);
        synor__jdoc *d2 = reparse(w2, what);
        char *w3 = write_doc(d2, pretty);
        /* w1 may round numbers (15 digits); from there on it is a fixpoint */
        fuzz_check_same(w2, w3, "written, read and written again");
        if (!pretty) {
            synor__jdoc *again;
            FUZZ_CHECK(synor__json_parse(text, size, FUZZ_NAME, &again) == 0,
                       "the same bytes failed the second time");
            char *wa = write_doc(again, 0);
            fuzz_check_same(w1, wa, "two parses of the same bytes");
            free(wa);
            synor__jdoc_free(again);
        }
        free(w1);
        free(w2);
        free(w3);
        synor__jdoc_free(d1);
        synor__jdoc_free(d2);
    }
    char *ref = write_doc(d, 0);
    synor__jdoc_free(d);

    synor__jdoc *e = untouched;
    fuzz_alloc_fail_one(data, size, allocs);
    rc = synor__json_parse(text, size, FUZZ_NAME, &e);
    int hit = fuzz_alloc_disarm();
    if (rc) {
        FUZZ_CHECK(hit, "parse failed only the second time: %s", synor_err_name(rc));
        fuzz_check_error(rc, 1, FUZZ_NAME, data, size);
        FUZZ_CHECK(e == untouched, "a parse that ran out of memory wrote *out");
    } else {
        char *w = write_doc(e, 0);
        fuzz_check_same(ref, w, "a parse with a failed allocation and one without");
        free(w);
        synor__jdoc_free(e);
    }
    free(ref);
    return 0;
}
