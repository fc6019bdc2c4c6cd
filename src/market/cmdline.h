/* cmdline.h - the JSON-lines command front end's parts, shared by
 * cmdparse.c (text -> fields) and cmdline.c (fields -> a command, applied).
 * Never installed. */
#ifndef SYNOR_MARKET_CMDLINE_H
#define SYNOR_MARKET_CMDLINE_H

#include <stddef.h>

#include "market/market_internal.h"

struct synor__jdoc;

/* The fields of a command line. */
enum {
    F_CMD, F_ID, F_REF, F_OWNER, F_RESOURCE, F_SIDE, F_TYPE, F_TIF, F_PRICE, F_QTY, F_TIME,
    F_EXPIRES, F_DURATION, F_INTERRUPTIBLE, F_PRIORITY, F_MIN_REP, F_REP, F_ZONE, F_ZONES,
    F_ALSO, NF
};
enum { T_STR, T_INT, T_BOOL, T_STRS }; /* a field's JSON type */

extern const char *const synor__cmd_field_names[NF + 1]; /* NULL-ended */
extern const unsigned char synor__cmd_field_types[NF];

/* One string of a field or of an array: text (not NUL-terminated; decoded
 * when it had escapes), its column; is_str = 0 for an array item that is
 * not a string. */
typedef struct rstr {
    const char *s;
    size_t n;
    int col;
    int is_str;
} rstr;

#define HAS(r, f) (((r)->present >> (f)) & 1u)

#define RAW_MAX_ITEMS 65 /* zones: at most 63 zones exist; one more tells "too many" */

/* A field as found (when its bit is set in rawcmd.present): the column of
 * its value, and the value: a string (T_STR), the literal of a number
 * (T_INT: the integer grammar is checked when the value is converted), a
 * boolean, or a list of strings. */
typedef struct rfield {
    int col;
    rstr str; /* T_STR: the string; T_INT: the number's literal text */
    uint64_t num; /* T_INT: |value|, when num_ok (read by the fast path) */
    int num_ok, neg;
    int boolean;
    rstr *items; /* T_STRS */
    size_t n_items;
} rfield;

typedef struct rawcmd {
    uint32_t present; /* bit f: field f was given (nothing else is cleared) */
    rfield f[NF];
    int obj_col; /* the object's opening brace */
    rstr zones[RAW_MAX_ITEMS], also[RAW_MAX_ITEMS];
} rawcmd;

/* Parses one command line into r. The fast path reads the common form of a
 * valid line directly; anything else (escapes, bytes above 0x7f, other
 * whitespace, a syntax or type error, an unknown or repeated key) goes to
 * the JSON reader, whose messages name the line, column and field. *doc
 * receives that reader's document when it was used (its strings back r's;
 * free it after). Returns 0, SYNOR_REASON_MALFORMED with the message set
 * (synor_errmsg), or a negative SYNOR_E* (out of memory). */
int synor__cmdline_parse(const char *text, size_t len, const char *name, long line, rawcmd *r,
                         struct synor__jdoc **doc);

/* The fast path alone: 0 when it read the line, -1 when it leaves the line
 * to the reader (tests compare the two paths). */
int synor__cmdline_parse_fast(const char *text, size_t len, rawcmd *r);
int synor__cmdline_parse_slow(const char *text, size_t len, const char *name, long line,
                              rawcmd *r, struct synor__jdoc **doc);

/* A command line read ahead of its turn, on another thread than the one
 * applying commands: what synor_market_submit_json makes of the text
 * before it looks at the market. Its names point into the text, which must
 * stay as it is until the line is applied. */
typedef struct synor__parsed_line {
    synor_market_cmd c; /* names not yet resolved */
    rstr owner, resource, zone;
    uint8_t has_resource, has_zone;
} synor__parsed_line;

/* Reads a line as synor_market_submit_json would, without a market: 0 when
 * it was read; -1 when only synor_market_submit_json can say what it is
 * (not the common form, a field's value is wrong, or lists of zones or
 * resources): give it the text then, which it reads again and words the
 * error of. */
int synor__cmdline_preparse(const char *text, size_t len, synor__parsed_line *out);

/* Applies a line read by synor__cmdline_preparse exactly as
 * synor_market_submit_json applies its text (the same names, events,
 * journal records and messages). */
int synor__market_submit_parsed(synor_market *m, const synor_catalog *cat,
                                const synor__parsed_line *pl, const char *name, long line,
                                int *reason);

#endif
