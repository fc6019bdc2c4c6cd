/* json_check.c - reads JSON on stdin with the library's strict reader and
 * optionally checks that a top-level field equals a string, or prints the
 * value at a path:
 *   json_check [FIELD VALUE]   exit 0 valid (and equal), 1 otherwise;
 *   json_check -g PATH         prints the value at PATH (members and array
 *                              indexes joined by '.': "choices.0.text"):
 *                              a string's bytes as they are, a number as
 *                              %.17g, true/false/null; exit 1 if absent. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "json/json.h"

static const synor__jval *at(const synor__jval *v, const char *path)
{
    char seg[256];
    while (v && *path) {
        size_t n = strcspn(path, ".");
        if (n >= sizeof seg)
            return NULL;
        memcpy(seg, path, n);
        seg[n] = 0;
        path += n + (path[n] == '.');
        if (v->type == SYNOR__J_ARRAY) {
            char *end;
            unsigned long i = strtoul(seg, &end, 10);
            v = *end || i >= v->u.arr.n ? NULL : v->u.arr.items[i];
        } else {
            v = synor__json_get(v, seg);
        }
    }
    return v;
}

static void print(const synor__jval *v)
{
    switch (v->type) {
    case SYNOR__J_STRING: fwrite(v->u.str.s, 1, v->u.str.len, stdout); break;
    case SYNOR__J_NUMBER: printf("%.17g", v->u.n.num); break;
    case SYNOR__J_BOOL: fputs(v->u.boolean ? "true" : "false", stdout); break;
    case SYNOR__J_NULL: fputs("null", stdout); break;
    default: fputs(v->type == SYNOR__J_ARRAY ? "[array]" : "{object}", stdout);
    }
}

int main(int argc, char **argv)
{
    synor__buf b;
    synor__buf_init(&b);
    char chunk[65536];
    size_t n;
    while ((n = fread(chunk, 1, sizeof chunk, stdin)) > 0)
        synor__buf_append(&b, chunk, n);
    synor__jdoc *d;
    if (synor__json_parse(b.data ? b.data : "", b.len, "<stdin>", &d)) {
        fprintf(stderr, "%s\n", synor_errmsg());
        synor__buf_free(&b);
        return 1;
    }
    int rc = 0;
    if (argc == 3 && !strcmp(argv[1], "-g")) {
        const synor__jval *v = at(synor__jdoc_root(d), argv[2]);
        if (v)
            print(v);
        else {
            fprintf(stderr, "no value at %s\n", argv[2]);
            rc = 1;
        }
    } else if (argc == 3) {
        synor__jval *v = synor__json_get(synor__jdoc_root(d), argv[1]);
        if (!v || v->type != SYNOR__J_STRING || strcmp(v->u.str.s, argv[2]) != 0) {
            fprintf(stderr, "field %s is not \"%s\"\n", argv[1], argv[2]);
            rc = 1;
        }
    }
    synor__jdoc_free(d);
    synor__buf_free(&b);
    return rc;
}
