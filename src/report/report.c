/* report.c - the text report of a trace (synor/report.h): utilization per
 * processor, totals, the comparison with a baseline and a timeline in the
 * style of seed 001 §5.2.
 *
 * Timeline cells: each of W columns covers makespan / W seconds; a cell is
 * '#' when the device was busy at least half of it, '+' when busy some of
 * it, '.' when idle. ASCII so the report reads the same in every terminal
 * and diff. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/common.h"
#include "report/report_internal.h"
#include "synor/fabric.h"
#include "synor/report.h"

/* Column widths of the utilization table. A product name longer than its
 * column is shortened with "..." (synor__report_shorten); what ran the
 * device - simulated, or the backend of a real run - has a column of its
 * own, so no product name can push it out of view. */
enum { PRODUCT_W = 34, RUNS_ON_W = 14 };

void synor__report_shorten(const char *s, char *buf, size_t n)
{
    size_t len = strlen(s);
    if (len < n) {
        memcpy(buf, s, len + 1);
        return;
    }
    if (n < 4) {
        if (n)
            buf[0] = '\0';
        return;
    }
    /* cut before a UTF-8 continuation byte, never inside a character */
    size_t keep = n - 4;
    while (keep > 0 && ((unsigned char)s[keep] & 0xC0) == 0x80)
        keep--;
    memcpy(buf, s, keep);
    memcpy(buf + keep, "...", 4);
}

void synor__report_runs_on(const synor_trace_device *d, char *buf, size_t n)
{
    if (d->simulated)
        snprintf(buf, n, "simulated");
    else
        snprintf(buf, n, "%s, real", d->backend && *d->backend ? d->backend : "real");
}

typedef struct opcount {
    const char *op;
    size_t n;
} opcount;

static int by_count(const void *a, const void *b)
{
    const opcount *x = a, *y = b;
    if (x->n != y->n)
        return x->n > y->n ? -1 : 1;
    return strcmp(x->op, y->op);
}

int synor_report_usage(const synor_trace *t, size_t dev, synor_device_usage *out)
{
    memset(out, 0, sizeof *out);
    if (dev >= t->n_devices)
        return synor__error(SYNOR_ERANGE, "no device %zu in the trace", dev);
    opcount ops[64];
    size_t n_ops = 0, other = 0;
    for (size_t k = 0; k < t->n_tasks; k++) {
        const synor_trace_task *x = &t->tasks[k];
        if (x->device != dev)
            continue;
        out->busy += x->end - x->start;
        out->tasks++;
        size_t j = 0;
        while (j < n_ops && strcmp(ops[j].op, x->op) != 0)
            j++;
        if (j == n_ops) {
            if (n_ops == SYNOR__ARRAY_LEN(ops)) {
                other++;
                continue;
            }
            ops[n_ops++] = (opcount){x->op, 0};
        }
        ops[j].n++;
    }
    out->utilization = t->makespan > 0 ? out->busy / t->makespan : 0;
    qsort(ops, n_ops, sizeof *ops, by_count);
    size_t used = 0;
    for (size_t j = 0; j < n_ops && j < 3; j++) {
        int w = ops[j].n > 1 ? snprintf(out->ops + used, sizeof out->ops - used, "%s%s x%zu",
                                        j ? ", " : "", ops[j].op, ops[j].n)
                             : snprintf(out->ops + used, sizeof out->ops - used, "%s%s",
                                        j ? ", " : "", ops[j].op);
        if (w < 0 || (size_t)w >= sizeof out->ops - used)
            break;
        used += (size_t)w;
    }
    if (n_ops > 3 || other)
        snprintf(out->ops + used, sizeof out->ops - used, ", ...");
    return 0;
}

/* Seconds in a readable unit. */
static void fmt_time(double s, char *buf, size_t n)
{
    if (s >= 1)
        snprintf(buf, n, "%.3f s", s);
    else if (s >= 1e-3)
        snprintf(buf, n, "%.2f ms", s * 1e3);
    else
        snprintf(buf, n, "%.1f us", s * 1e6);
}

/* "1234.5 J (active 1000.0, idle 234.5)", or why there is no figure. */
static void fmt_energy(const synor_trace *t, char *buf, size_t n)
{
    double e = t->energy_active + t->energy_idle;
    switch (t->energy_basis) {
    case SYNOR_BASIS_NONE:
        snprintf(buf, n, "not measured");
        break;
    case SYNOR_BASIS_RATED:
        snprintf(buf, n, "%.1f J (configured watts x busy time)", e);
        break;
    case SYNOR_BASIS_MEASURED:
        snprintf(buf, n, "%.1f J (measured)", e);
        break;
    default: {
        int powered = 0; /* a device with a power figure */
        for (size_t i = 0; i < t->n_devices; i++)
            powered |= t->devices[i].idle_watts > 0;
        if (e == 0 && !powered)
            snprintf(buf, n, "not modelled (no power figure for these devices)");
        else
            snprintf(buf, n, "%.1f J (active %.1f, idle %.1f)", e, t->energy_active,
                     t->energy_idle);
    }
    }
}

static void totals(synor__buf *b, const synor_trace *t)
{
    char ms[32], money[32], energy[96];
    fmt_time(t->makespan, ms, sizeof ms);
    fmt_energy(t, energy, sizeof energy);
    synor__buf_printf(b, "  Makespan: %s   Energy: %s   Cost: ", ms, energy);
    if (t->money_basis == SYNOR_BASIS_NONE) {
        synor__buf_puts(b, "not measured\n");
        return;
    }
    synor_money_format(t->money_micro, money, sizeof money);
    synor__buf_printf(b, "%s %s%s\n", money, t->currency,
                      t->money_basis == SYNOR_BASIS_RATED ? " (configured prices)" : "");
}

/* "+12.3%" of a against b, or why there is no comparison. */
static void fmt_change(double a, double b, int a_known, int b_known, char *buf, size_t n)
{
    if (!a_known || !b_known)
        snprintf(buf, n, "n/a (not measured in the %s)",
                 !a_known && !b_known ? "run or the baseline" : !a_known ? "run" : "baseline");
    else if (b > 0)
        snprintf(buf, n, "%+.1f%%", (a / b - 1) * 100);
    else
        snprintf(buf, n, "n/a (the baseline's is 0)");
}

static void timeline(synor__buf *b, const synor_trace *t, int width)
{
    double span = t->makespan > 0 ? t->makespan : 1, col = span / width;
    double *busy = synor__calloc((size_t)width, sizeof *busy);
    if (!busy) {
        b->failed = 1;
        return;
    }
    synor__buf_printf(b, "  TIMELINE ('#' busy >= half the cell, '+' partly, '.' idle)\n");
    for (size_t p = 0; p < t->n_devices; p++) {
        memset(busy, 0, (size_t)width * sizeof *busy);
        for (size_t k = 0; k < t->n_tasks; k++) {
            const synor_trace_task *x = &t->tasks[k];
            if (x->device != p || x->end <= x->start)
                continue;
            int c0 = (int)(x->start / col), c1 = (int)(x->end / col);
            for (int c = c0 < 0 ? 0 : c0; c <= c1 && c < width; c++) {
                double lo = c * col > x->start ? c * col : x->start;
                double hi = (c + 1) * col < x->end ? (c + 1) * col : x->end;
                if (hi > lo)
                    busy[c] += hi - lo;
            }
        }
        synor__buf_printf(b, "  %-10.10s |", t->devices[p].name);
        for (int c = 0; c < width; c++)
            synor__buf_puts(b, busy[c] >= col / 2 ? "#" : busy[c] > 0 ? "+" : ".");
        synor__buf_puts(b, "|\n");
    }
    /* axis: 0 at the left, the middle and the end under their columns */
    char mid[32], hi[32], axis[512];
    fmt_time(span / 2, mid, sizeof mid);
    fmt_time(span, hi, sizeof hi);
    /* Signed positions: a label wider than the axis must not wrap around
     * (a width of 10 and a label of 11 characters once wrote past it). */
    long w = width < (long)sizeof axis - 1 ? width : (long)sizeof axis - 1;
    memset(axis, ' ', (size_t)w);
    axis[w] = '\0';
    axis[0] = '0';
    long lm = (long)strlen(mid), lh = (long)strlen(hi);
    int end_shown = w > lh + 2;
    if (end_shown)
        memcpy(axis + w - lh, hi, (size_t)lh);
    long m0 = w / 2 - lm / 2; /* the middle label, centred */
    if (end_shown && m0 > 2 && m0 + lm + 2 < w - lh)
        memcpy(axis + m0, mid, (size_t)lm);
    synor__buf_printf(b, "  %-10s  %s\n", "", axis);
    synor__free(busy);
}

/* Data movement per link (and, in real runs, per path: a device's link to
 * the host carries both plain copies and hops of CPU-mediated ones):
 * transfers, bytes, time the link was busy. Links are few; a linear table
 * of up to 32 distinct ones is enough. */
static int same_path(const char *a, const char *b)
{
    return a == b || (a && b && strcmp(a, b) == 0);
}

static void movement(synor__buf *b, const synor_trace *t)
{
    if (!t->n_transfers)
        return;
    enum { MAX_LINKS = 32 };
    const char *name[MAX_LINKS], *path[MAX_LINKS];
    size_t count[MAX_LINKS] = {0}, nl = 0, other = 0;
    double bytes[MAX_LINKS] = {0}, busy[MAX_LINKS] = {0};
    int paths = 0;
    for (size_t i = 0; i < t->n_transfers; i++) {
        const synor_trace_transfer *x = &t->transfers[i];
        size_t l = 0;
        while (l < nl && (strcmp(name[l], x->link) != 0 || !same_path(path[l], x->path)))
            l++;
        if (l == nl) {
            if (nl == MAX_LINKS) {
                other++;
                continue;
            }
            name[nl] = x->link;
            path[nl++] = x->path;
            paths |= x->path != NULL;
        }
        count[l]++;
        bytes[l] += (double)x->bytes;
        busy[l] += x->end - x->start;
    }
    int pw = paths ? 13 : 0; /* the path column, real runs only */
    synor__buf_printf(b, "\n  DATA MOVEMENT\n  %-28s %-*s%9s %12s %11s\n", "Link", pw,
                      paths ? "Path" : "", "Transfers", "Bytes", "Busy");
    for (size_t l = 0; l < nl; l++) {
        char tb[32];
        fmt_time(busy[l], tb, sizeof tb);
        synor__buf_printf(b, "  %-28.28s %-*.*s%9zu %12.0f %11s\n", name[l], pw, pw,
                          path[l] ? path[l] : "", count[l], bytes[l], tb);
    }
    if (other)
        synor__buf_printf(b, "  (%zu transfers on further links not listed)\n", other);
}

char *synor_report_text(const synor_trace *t, const synor_report_options *o)
{
    synor_report_options def;
    if (!o) {
        memset(&def, 0, sizeof def);
        o = &def;
    }
    int width = o->width > 0 ? o->width : 60;
    synor__buf b;
    synor__buf_init(&b);
    int any_sim = 0;
    for (size_t p = 0; p < t->n_devices; p++)
        any_sim |= t->devices[p].simulated;
    synor__buf_printf(&b, "%s%s\n", o->title ? o->title : "EXECUTION REPORT",
                      any_sim ? " (simulated devices: figures come from the cost model, not "
                                "from hardware)"
                              : "");
    synor__buf_printf(&b, "  Workload: %s\n  Fabric:   %s\n  Strategy: %s\n\n", t->workload,
                      t->fabric, t->strategy);
    synor__buf_printf(&b, "  PROCESSOR UTILIZATION\n  %-10s %-*s %-*s %11s %7s %7s  %s\n",
                      "Processor", PRODUCT_W, "Product", RUNS_ON_W, "Runs on", "Busy", "Util %",
                      "Tasks", "Operations");
    size_t idle = 0;
    for (size_t p = 0; p < t->n_devices; p++) {
        synor_device_usage u;
        synor_report_usage(t, p, &u);
        char busy[32], product[PRODUCT_W + 1], runs_on[64];
        fmt_time(u.busy, busy, sizeof busy);
        synor__report_shorten(t->devices[p].product, product, sizeof product);
        synor__report_runs_on(&t->devices[p], runs_on, sizeof runs_on);
        synor__buf_printf(&b, "  %-10.10s %-*s %-*s %11s %6.1f%% %7zu  %s\n", t->devices[p].name,
                          PRODUCT_W, product, RUNS_ON_W, runs_on, busy, u.utilization * 100,
                          u.tasks, u.tasks ? u.ops : "(idle)");
        idle += u.tasks == 0;
    }
    synor__buf_puts(&b, "\n");
    totals(&b, t);
    if (o->deadline > 0) {
        char dl[32], by[32];
        fmt_time(o->deadline, dl, sizeof dl);
        fmt_time(fabs(o->deadline - t->makespan), by, sizeof by);
        synor__buf_printf(&b, "  Deadline: %s, %s %s%s\n", dl,
                          t->makespan <= o->deadline ? "met with" : "MISSED by", by,
                          t->makespan <= o->deadline ? " to spare" : "");
    }
    if (idle) {
        synor__buf_printf(&b, "  Processors with no task (%zu of %zu):", idle, t->n_devices);
        for (size_t p = 0; p < t->n_devices; p++) {
            int used = 0;
            for (size_t k = 0; k < t->n_tasks && !used; k++)
                used = t->tasks[k].device == p;
            if (!used)
                synor__buf_printf(&b, " %s", t->devices[p].name);
        }
        synor__buf_puts(&b, "\n");
    } else
        synor__buf_printf(&b, "  Every processor ran at least one task.\n");
    if (o->baseline) {
        const synor_trace *g = o->baseline;
        synor__buf_printf(&b, "\n  BASELINE: %s on %s\n", g->strategy, g->fabric);
        totals(&b, g);
        double sp = t->makespan > 0 ? g->makespan / t->makespan : 0;
        char de[64], dm[64];
        fmt_change(t->energy_active + t->energy_idle, g->energy_active + g->energy_idle,
                   t->energy_basis != SYNOR_BASIS_NONE, g->energy_basis != SYNOR_BASIS_NONE, de,
                   sizeof de);
        fmt_change((double)t->money_micro, (double)g->money_micro,
                   t->money_basis != SYNOR_BASIS_NONE, g->money_basis != SYNOR_BASIS_NONE, dm,
                   sizeof dm);
        synor__buf_printf(&b, "  Speedup over the baseline: %.2fx   energy %s   cost %s\n", sp, de,
                          dm);
    }
    synor__buf_puts(&b, "\n");
    timeline(&b, t, width);
    movement(&b, t);
    if (t->n_marks) { /* preemptions: warnings, checkpoints, devices leaving or replaced */
        synor__buf_puts(&b, "\n  MARKS\n");
        for (size_t k = 0; k < t->n_marks; k++) {
            const synor_trace_mark *m = &t->marks[k];
            char ts[32], te[32];
            fmt_time(m->start, ts, sizeof ts);
            fmt_time(m->end, te, sizeof te);
            synor__buf_printf(&b, "  %11s %-15s %-10.10s %s%s%s%s\n", ts, m->name,
                              t->devices[m->device].name, m->end > m->start ? "until " : "",
                              m->end > m->start ? te : "", m->end > m->start ? ": " : "",
                              m->detail);
        }
    }
    if (o->n_assumptions) {
        synor__buf_puts(&b, "\n  ASSUMPTIONS\n");
        for (size_t k = 0; k < o->n_assumptions; k++)
            synor__buf_printf(&b, "  - %s\n", o->assumptions[k]);
    }
    char *s = synor__buf_take(&b);
    if (!s)
        synor__error(SYNOR_ENOMEM, "out of memory");
    return s;
}
