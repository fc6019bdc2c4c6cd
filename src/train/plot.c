/* plot.c - the loss curve of a training log as an SVG line chart. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "train/train_internal.h"

typedef struct series {
    double *x, *y;
    size_t n, cap;
} series;

static int push(series *s, double x, double y)
{
    if (s->n == s->cap) {
        size_t cap = s->cap ? 2 * s->cap : 256;
        double *nx = synor__realloc(s->x, cap * sizeof(double));
        if (!nx)
            return -1;
        s->x = nx;
        double *ny = synor__realloc(s->y, cap * sizeof(double));
        if (!ny)
            return -1;
        s->y = ny;
        s->cap = cap;
    }
    s->x[s->n] = x;
    s->y[s->n++] = y;
    return 0;
}

/* The column index of name in a CSV header line, or -1. */
static int column(const char *header, const char *name)
{
    int col = 0;
    size_t n = strlen(name);
    for (const char *p = header;; col++) {
        const char *e = p + strcspn(p, ",\n\r");
        if ((size_t)(e - p) == n && !strncmp(p, name, n))
            return col;
        if (*e != ',')
            return -1;
        p = e + 1;
    }
}

/* Field col of line as a number: 1 read, 0 empty, -1 not a number. */
static int field(const char *line, int col, double *v)
{
    const char *p = line;
    for (int c = 0; c < col; c++) {
        p = strchr(p, ',');
        if (!p)
            return 0;
        p++;
    }
    if (*p == ',' || *p == '\n' || *p == '\r' || !*p)
        return 0;
    char *end;
    *v = strtod(p, &end);
    return (end != p && (*end == ',' || *end == '\n' || *end == '\r' || !*end) && isfinite(*v))
               ? 1
               : -1;
}

static void polyline(synor__buf *b, const series *s, double x0, double x1, double y0, double y1,
                     const char *color)
{
    if (!s->n)
        return;
    synor__buf_printf(b, "<polyline fill=\"none\" stroke=\"%s\" stroke-width=\"1.5\" points=\"",
                      color);
    for (size_t i = 0; i < s->n; i++)
        synor__buf_printf(b, "%.1f,%.1f ", 70 + (s->x[i] - x0) / (x1 - x0) * 640,
                          30 + (y1 - s->y[i]) / (y1 - y0) * 340);
    synor__buf_puts(b, "\"/>\n");
}

char *synor_train_plot_svg(const char *log_path, double baseline)
{
    char *data;
    size_t len;
    if (synor__read_file(log_path, &data, &len))
        return NULL;
    series tr = {0}, va = {0};
    char *out = NULL;
    const char *nl = memchr(data, '\n', len);
    int cs = nl ? column(data, "step") : -1, cl = nl ? column(data, "loss") : -1;
    int cv = nl ? column(data, "val_loss") : -1;
    if (cs < 0 || cl < 0) {
        synor__error(SYNOR_EPARSE,
                     "%s: line 1: a header naming the columns step and loss is "
                     "expected",
                     log_path);
        goto done;
    }
    int lineno = 1;
    for (const char *p = nl + 1; p < data + len; lineno++) {
        const char *e = memchr(p, '\n', (size_t)(data + len - p));
        if (!e)
            e = data + len;
        if (e > p) {
            char line[512];
            size_t n = (size_t)(e - p) < sizeof line - 1 ? (size_t)(e - p) : sizeof line - 1;
            memcpy(line, p, n);
            line[n] = 0;
            double s, l, v;
            if (field(line, cs, &s) != 1 || field(line, cl, &l) != 1) {
                synor__error(SYNOR_EPARSE, "%s: line %d: step and loss must be numbers: '%s'",
                             log_path, lineno + 1, line);
                goto done;
            }
            int hv = cv >= 0 ? field(line, cv, &v) : 0;
            if (hv < 0) {
                synor__error(SYNOR_EPARSE, "%s: line %d: val_loss is not a number: '%s'", log_path,
                             lineno + 1, line);
                goto done;
            }
            if (push(&tr, s, l) || (hv == 1 && push(&va, s, v))) {
                synor__error(SYNOR_ENOMEM, "%s: out of memory", log_path);
                goto done;
            }
        }
        p = e + 1;
    }
    if (!tr.n) {
        synor__error(SYNOR_EPARSE, "%s: no rows after the header", log_path);
        goto done;
    }
    double x0 = tr.x[0], x1 = tr.x[tr.n - 1], y0 = INFINITY, y1 = -INFINITY;
    for (size_t i = 0; i < tr.n; i++)
        y0 = fmin(y0, tr.y[i]), y1 = fmax(y1, tr.y[i]);
    for (size_t i = 0; i < va.n; i++)
        y0 = fmin(y0, va.y[i]), y1 = fmax(y1, va.y[i]);
    if (isfinite(baseline) && baseline > 0)
        y1 = fmax(y1, baseline), y0 = fmin(y0, baseline);
    y0 = fmax(0, floor(y0 * 2) / 2);
    y1 = ceil(y1 * 2) / 2;
    if (x1 <= x0)
        x1 = x0 + 1;
    if (y1 <= y0)
        y1 = y0 + 1;
    synor__buf b;
    synor__buf_init(&b);
    synor__buf_puts(&b, "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"760\" height=\"430\" "
                        "font-family=\"sans-serif\" font-size=\"12\">\n"
                        "<rect width=\"760\" height=\"430\" fill=\"white\"/>\n");
    synor__buf_printf(&b, "<text x=\"380\" y=\"18\" text-anchor=\"middle\">training loss "
                          "(nats/token) against step</text>\n");
    for (int i = 0; i <= 5; i++) {
        double yv = y0 + (y1 - y0) * i / 5, py = 370 - 340.0 * i / 5;
        double xv = x0 + (x1 - x0) * i / 5, px = 70 + 640.0 * i / 5;
        synor__buf_printf(&b,
                          "<line x1=\"70\" x2=\"710\" y1=\"%.1f\" y2=\"%.1f\" stroke=\"#ddd\"/>"
                          "<text x=\"64\" y=\"%.1f\" text-anchor=\"end\">%.2f</text>\n",
                          py, py, py + 4, yv);
        synor__buf_printf(&b, "<text x=\"%.1f\" y=\"388\" text-anchor=\"middle\">%.0f</text>\n", px,
                          xv);
    }
    synor__buf_puts(&b, "<rect x=\"70\" y=\"30\" width=\"640\" height=\"340\" fill=\"none\" "
                        "stroke=\"black\"/>\n");
    if (isfinite(baseline) && baseline > 0) {
        double py = 30 + (y1 - baseline) / (y1 - y0) * 340;
        synor__buf_printf(&b,
                          "<line x1=\"70\" x2=\"710\" y1=\"%.1f\" y2=\"%.1f\" stroke=\"gray\" "
                          "stroke-dasharray=\"5,4\"/>\n",
                          py, py);
    }
    polyline(&b, &tr, x0, x1, y0, y1, "#1f77b4");
    polyline(&b, &va, x0, x1, y0, y1, "#d62728");
    for (size_t i = 0; i < va.n; i++)
        synor__buf_printf(&b, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"2.5\" fill=\"#d62728\"/>\n",
                          70 + (va.x[i] - x0) / (x1 - x0) * 640,
                          30 + (y1 - va.y[i]) / (y1 - y0) * 340);
    synor__buf_puts(&b, "<text x=\"80\" y=\"410\" fill=\"#1f77b4\">training</text>"
                        "<text x=\"160\" y=\"410\" fill=\"#d62728\">validation</text>");
    if (isfinite(baseline) && baseline > 0)
        synor__buf_printf(&b,
                          "<text x=\"250\" y=\"410\" fill=\"gray\">unigram baseline "
                          "%.3f</text>",
                          baseline);
    synor__buf_puts(&b, "\n</svg>\n");
    out = synor__buf_take(&b);
    if (!out)
        synor__error(SYNOR_ENOMEM, "%s: out of memory", log_path);
done:
    synor__free(tr.x), synor__free(tr.y), synor__free(va.x), synor__free(va.y);
    synor__free(data);
    return out;
}
