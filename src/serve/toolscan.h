/* toolscan.h - a tool-call answer read as its bytes come (toolscan.c), so
 * that synor serve streams a call as OpenAI does - its name, then its
 * arguments piece by piece - and "auto"'s text as content, and answers a
 * whole request from the same reading. Never installed.
 *
 * The answer is the JSON the constraint allows (tools.c, schema_calls.c):
 * a call {"name": ..., "arguments": {...}}; with "auto" {"tool_call": a
 * call} or {"response": "..."}; with several calls {"tool_calls": [call,
 * ...]} (or, with "auto", {"response": ...}). The scanner follows the
 * JSON's structure byte by byte and reports, in order: a call's name once
 * its string closes (the call's index k: 0, 1, ... in the answer; its
 * first "name" only, and only a named call's arguments), the
 * bytes of its arguments as they come - compact (the blanks outside
 * strings dropped; strings as written, escapes and all) - and the
 * response's text decoded from its JSON string (UTF-8; a code point's
 * bytes may end in a later piece). */
#ifndef SYNOR_SERVE_TOOLSCAN_H
#define SYNOR_SERVE_TOOLSCAN_H

#include <stddef.h>

/* The answer's form: the request's "auto" (a call or a text) and
 * parallel_tool_calls (a list of calls). */
enum { TOOL_FORM_TEXT = 1, TOOL_FORM_LIST = 2 };

#define TOOL_SCAN_DEPTH 34 /* the automaton's 32 levels, and room */

typedef struct tool_scan_cb {
    void (*on_call)(void *user, int k, const char *name, size_t n);
    void (*on_args)(void *user, int k, const char *bytes, size_t n);
    void (*on_text)(void *user, const char *bytes, size_t n);
    void *user;
} tool_scan_cb;

typedef struct tool_scan {
    int form;
    int depth;                      /* containers open */
    char kind[TOOL_SCAN_DEPTH];     /* per level (1..depth): 'o' or 'a' */
    char key[TOOL_SCAN_DEPTH][12];  /* per object level: the member's key (its first 11 bytes) */
    unsigned char want_key[TOOL_SCAN_DEPTH]; /* per object level: a key comes next */
    int in_str, esc, str_key;       /* inside a string; after '\'; the string is a key */
    char cur[12];                   /* a key being read: its first 11 bytes */
    int clen;
    int call_level;                 /* the level of the call being read (0: none) */
    int calls;                      /* calls whose name was read */
    int named;                      /* the call being read has its name */
    int texts;                      /* responses begun (0 or 1) */
    int args_level;                 /* the level the arguments' object opened at (0: none) */
    int in_name, in_text;           /* reading the call's name; the response's string */
    char name[72];                  /* the call's name (up to 64 bytes) */
    int nlen;
    unsigned u;                     /* a \u escape of the response: its value so far */
    int uhex;                       /* its hex digits read (0: none; -1: '\' of a low half) */
    unsigned hi;                    /* a high surrogate waiting for its low half */
} tool_scan;

void synor__tool_scan_init(tool_scan *t, int form);
/* Reads n more bytes of the answer; cb's functions (any may be NULL)
 * called in the order things appear. */
void synor__tool_scan_feed(tool_scan *t, const char *p, size_t n, const tool_scan_cb *cb);

#endif
