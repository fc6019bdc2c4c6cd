/* json_check.c - reads JSON on stdin with the library's strict reader and
 * optionally checks that a top-level field equals a string:
 *   json_check [FIELD VALUE]   exit 0 valid (and equal), 1 otherwise. */
#include <stdio.h>
#include <string.h>

#include "json/json.h"

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
    if (argc == 3) {
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
