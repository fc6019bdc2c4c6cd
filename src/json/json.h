/* json.h - a strict JSON (RFC 8259) reader that remembers where every value
 * and key came from, and a small streaming writer.
 *
 * Why not jansson: every input error this project reports must name the file,
 * line and column of the offending *value* (an unknown field, a negative
 * number), not only of syntax errors, and jansson does not keep positions of
 * values. The reader is one pass into an arena; the whole document is freed
 * at once. Never installed. */
#ifndef SYNOR_JSON_H
#define SYNOR_JSON_H

#include <stddef.h>
#include <stdint.h>

#include "common/common.h"

typedef enum synor__jtype {
    SYNOR__J_NULL,
    SYNOR__J_BOOL,
    SYNOR__J_NUMBER,
    SYNOR__J_STRING,
    SYNOR__J_ARRAY,
    SYNOR__J_OBJECT
} synor__jtype;

typedef struct synor__jval synor__jval;

typedef struct synor__jmember {
    const char *key;
    int line, col; /* of the key */
    synor__jval *val;
} synor__jmember;

struct synor__jval {
    synor__jtype type;
    int line, col; /* 1-based position of the value's first character */
    union {
        int boolean;
        struct {
            double num;
            int is_int;    /* no fraction or exponent, fits int64 */
            int64_t inum;  /* exact value when is_int */
        } n;
        struct {
            const char *s; /* NUL-terminated, UTF-8; may contain no NUL */
            size_t len;
        } str;
        struct {
            synor__jval **items;
            size_t n;
        } arr;
        struct {
            synor__jmember *m;
            size_t n;
        } obj;
    } u;
};

typedef struct synor__jdoc synor__jdoc;

/* Deepest nesting of arrays and objects the reader accepts and the writer
 * writes (hostile input must not exhaust the stack). */
#define SYNOR__JSON_MAX_DEPTH 256

/* Parses text (len bytes, need not be NUL-terminated). name is used in error
 * messages ("name:line:col: ..."). Duplicate keys in an object are an error.
 * On success *out holds the document; its root is synor__jdoc_root(). */
int synor__json_parse(const char *text, size_t len, const char *name, synor__jdoc **out);
/* As above, counting lines from first_line (a line of a JSON-lines file). */
int synor__json_parse_at(const char *text, size_t len, const char *name, int first_line,
                         synor__jdoc **out);
/* Streaming a large array: as synor__json_parse, but the elements of the
 * array that is the value of the root object's member `key` are not kept.
 * Each is parsed into memory given back after fn(ctx, doc, index, item)
 * returns (item and everything in it are valid only during the call); in
 * the document that array has u.arr.n elements and u.arr.items NULL. Once
 * fn returns non-zero it is not called again, and the rest of the text is
 * still read, so a syntax error anywhere is the error, as with
 * synor__json_parse. Any other value (the member's value not an array, the
 * root not an object) is kept as usual. */
typedef int (*synor__json_each_fn)(void *ctx, const synor__jdoc *d, size_t index,
                                   const synor__jval *item);
int synor__json_parse_each(const char *text, size_t len, const char *name, const char *key,
                           synor__json_each_fn fn, void *ctx, synor__jdoc **out);
synor__jval *synor__jdoc_root(const synor__jdoc *d);
const char *synor__jdoc_name(const synor__jdoc *d);
void synor__jdoc_free(synor__jdoc *d);

/* Member lookup; NULL when absent or when obj is not an object. */
synor__jval *synor__json_get(const synor__jval *obj, const char *key);

const char *synor__jtype_name(synor__jtype t);

/* ---- schema helpers: each sets the error message
 * "NAME:LINE:COL: FIELD: ..." and returns a negative code. ---- */

/* Fails on the first member of obj whose key is not in allowed (NULL-ended). */
int synor__json_check_keys(const synor__jdoc *d, const synor__jval *obj, const char *path,
                           const char *const *allowed);
/* Fails if v is not of type t (the message names the field and found type). */
int synor__json_expect(const synor__jdoc *d, const synor__jval *v, const char *path,
                       synor__jtype t);
/* A required/optional member of obj. `required` absent -> error naming it. */
int synor__json_member(const synor__jdoc *d, const synor__jval *obj, const char *path,
                       const char *key, synor__jtype t, int required, synor__jval **out);
/* A finite number in [min, max]; the message names the value on failure. */
int synor__json_number(const synor__jdoc *d, const synor__jval *v, const char *path,
                       double min, double max, double *out);
/* An integer in [min, max]. */
int synor__json_int(const synor__jdoc *d, const synor__jval *v, const char *path,
                    int64_t min, int64_t max, int64_t *out);
/* Formats the "NAME:LINE:COL: PATH: " prefix and message for value v. */
int synor__json_fail(const synor__jdoc *d, const synor__jval *v, int code, const char *path,
                     const char *fmt, ...) SYNOR__PRINTF(5, 6);

/* ---- writer ---- */
typedef struct synor__jw {
    synor__buf *b;
    int pretty;
    int depth;
    /* per depth: no member written yet. Deeper than the reader reads, the
     * writer fails the buffer (synor__buf_take returns NULL). */
    unsigned char first[SYNOR__JSON_MAX_DEPTH + 1];
    int after_key;
} synor__jw;

void synor__jw_init(synor__jw *w, synor__buf *b, int pretty);
void synor__jw_obj_begin(synor__jw *w);
void synor__jw_obj_end(synor__jw *w);
void synor__jw_arr_begin(synor__jw *w);
void synor__jw_arr_end(synor__jw *w);
void synor__jw_key(synor__jw *w, const char *k);
void synor__jw_str(synor__jw *w, const char *s);
void synor__jw_num(synor__jw *w, double v); /* non-finite written as null */
/* ---- numbers (json_number.c) ---- */
/* A finite v as "%.15g" writes it, into out (32 bytes); its length. */
size_t synor__json_num_g15(double v, char *out);
/* Whether synor__json_fast_number may be used in this thread now. */
int synor__json_fast_numbers_ok(void);
/* dig x 10^e10 (negative with neg) exactly as strtod reads it, into *out:
 * 0, or 1 when strtod must decide. */
int synor__json_fast_number(uint64_t dig, int e10, int neg, double *out);
void synor__jw_int(synor__jw *w, int64_t v);
void synor__jw_uint(synor__jw *w, uint64_t v);
void synor__jw_bool(synor__jw *w, int v);
void synor__jw_null(synor__jw *w);
/* Writes a parsed value again (numbers that are not integers as
 * synor__jw_num writes them). */
void synor__jw_value(synor__jw *w, const synor__jval *v);
/* Writes s as a JSON string literal (quotes and escapes) into b. */
void synor__json_escape(synor__buf *b, const char *s);
/* Code point cp (at most 0x10FFFF) as UTF-8 into o (room for 4 bytes); its
 * length. */
size_t synor__json_put_utf8(char *o, unsigned cp);

#endif
