/* market_batch.c - `synor market batch`: JSON-lines commands in, JSON-lines
 * events out (docs/MARKET.md).
 *
 * Events are printed only after the commit that makes them durable. When
 * the input is a file, commands are committed in batches of BATCH_LINES,
 * and the disk's flush overlaps the work on the next batches (group
 * commit): at the end of batch k the journal records of k are written
 * (synor_market_commit_write) and a second thread flushes them
 * (synor_market_commit_sync, by the fsync policy) while this one applies
 * and writes the next batches; one flush makes every batch written before
 * it began durable, so a slow disk gets fewer, larger flushes. The events of
 * a batch are kept as the market gives them (synor__event_keep) and a
 * third thread writes them as JSON while the batch is flushed, and prints
 * them when the flush has returned - never before - in order.
 * When it is a pipe or a terminal, another program may be waiting for the
 * answer to the line it just wrote: whenever no further input is available
 * at once, what has been applied is committed and its events printed, so a
 * program can drive the market one command at a time, and a fast writer
 * still gets batches.
 *
 * Input is read in large blocks and split into lines in place; each line
 * goes to synor_market_submit_json. A line that is rejected or malformed
 * is answered and the batch goes on (exit status 1 at the end). Out of
 * memory or an I/O error is not the line's fault: the batch stops there;
 * the commands before it are committed and their events printed, the
 * failing one is not in the journal, and the exit status is 1. */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli/market_cli.h"

#define BATCH_LINES 4096
#define READ_BLOCK (1u << 20)

typedef struct inbuf {
    char *data;
    size_t cap, start, end; /* unread bytes are [start, end) */
} inbuf;

/* Is there input to read right now? */
static int readable_now(int fd)
{
    struct pollfd p = {fd, POLLIN, 0};
    int rc;
    do
        rc = poll(&p, 1, 0);
    while (rc < 0 && errno == EINTR);
    return rc != 0; /* an error: let read() report it */
}

/* Room for at least READ_BLOCK more bytes after end: the unread part moves
 * to the front, and the buffer grows when a line is longer than it. */
static int make_room(inbuf *b)
{
    if (b->start) {
        memmove(b->data, b->data + b->start, b->end - b->start);
        b->end -= b->start;
        b->start = 0;
    }
    if (b->cap - b->end >= READ_BLOCK)
        return 0;
    size_t cap = b->cap ? b->cap * 2 : 4 * (size_t)READ_BLOCK;
    char *d = realloc(b->data, cap);
    if (!d)
        return -1;
    b->data = d;
    b->cap = cap;
    return 0;
}

/* The group commit of a file: batch b is handed over once its journal
 * records are written; the flushing thread makes every batch handed over
 * before its flush began durable (one flush at a time, beside the writes
 * of the next batches: synor_market_commit_sync's rule), and the printing
 * thread writes batch b's events as text while b is being flushed and
 * prints them once it is durable, in order. */
#define SLOTS 8 /* batches handed over and not yet printed, at most */

typedef struct pipeline {
    pthread_t syncer, printer;
    int threads; /* started */
    pthread_mutex_t lock;
    pthread_cond_t cv;
    const synor_market *m;
    /* under lock: */
    long handed, synced, printed; /* batches so far */
    int quit;
    int rc;             /* the first failure: nothing after it is printed */
    char msg[600];      /* its message (the error slot is per thread) */
    int told;           /* the message was printed (main thread only) */
    mout events[SLOTS]; /* batch b's kept events in slot b % SLOTS, the
                           printer's from handed over until printed */
    mout text;          /* the printer's */
} pipeline;

/* 0, or -1 with errno set. */
static int write_out(const char *p, size_t n)
{
    for (size_t i = 0; i < n;) {
        ssize_t w = write(1, p + i, n - i);
        if (w < 0 && errno == EINTR)
            continue;
        if (w < 0)
            return -1;
        i += (size_t)w;
    }
    return 0;
}

/* The first failure is kept (under lock). */
static void pipeline_fail(pipeline *p, const char *msg)
{
    if (!p->rc) {
        p->rc = -1;
        snprintf(p->msg, sizeof p->msg, "%s", msg);
    }
    pthread_cond_broadcast(&p->cv);
}

static void *syncer_main(void *arg)
{
    pipeline *p = arg;
    pthread_mutex_lock(&p->lock);
    for (;;) {
        while (p->synced == p->handed && !p->quit && !p->rc)
            pthread_cond_wait(&p->cv, &p->lock);
        if (p->synced == p->handed || p->rc)
            break;
        long target = p->handed; /* written before this flush begins */
        pthread_mutex_unlock(&p->lock);
        int rc = synor_market_commit_sync(p->m);
        char msg[sizeof p->msg] = "";
        if (rc)
            snprintf(msg, sizeof msg, "%s", synor_errmsg());
        pthread_mutex_lock(&p->lock);
        if (rc) {
            pipeline_fail(p, msg);
            break;
        }
        p->synced = target;
        pthread_cond_broadcast(&p->cv);
    }
    pthread_mutex_unlock(&p->lock);
    return NULL;
}

/* Durable, then answered: the events are written as text and printed on
 * this thread, sparing the one that parses and applies the next batch. */
static void *printer_main(void *arg)
{
    pipeline *p = arg;
    pthread_mutex_lock(&p->lock);
    for (;;) {
        while (p->printed == p->handed && !p->quit && !p->rc)
            pthread_cond_wait(&p->cv, &p->lock);
        if (p->printed == p->handed || p->rc)
            break;
        mout *ev = &p->events[p->printed % SLOTS];
        pthread_mutex_unlock(&p->lock);
        p->text.len = 0;
        int oom = mcli_kept_text(ev, &p->text);
        pthread_mutex_lock(&p->lock);
        if (oom) {
            pipeline_fail(p, "out of memory writing the events");
            break;
        }
        while (p->synced <= p->printed && !p->rc)
            pthread_cond_wait(&p->cv, &p->lock);
        if (p->rc) /* a failed flush: these events are not acknowledged */
            break;
        pthread_mutex_unlock(&p->lock);
        int rc = write_out(p->text.data, p->text.len);
        char msg[sizeof p->msg] = "";
        if (rc)
            snprintf(msg, sizeof msg, "writing the events: %s", strerror(errno));
        pthread_mutex_lock(&p->lock);
        if (rc) {
            pipeline_fail(p, msg);
            break;
        }
        ev->len = 0;
        p->printed++;
        pthread_cond_broadcast(&p->cv);
    }
    pthread_mutex_unlock(&p->lock);
    return NULL;
}

static int pipeline_start(pipeline *p, const synor_market *m)
{
    memset(p, 0, sizeof *p);
    p->m = m;
    if (pthread_mutex_init(&p->lock, NULL))
        return -1;
    if (pthread_cond_init(&p->cv, NULL)) {
        pthread_mutex_destroy(&p->lock);
        return -1;
    }
    if (pthread_create(&p->syncer, NULL, syncer_main, p) == 0) {
        p->threads = 1;
        if (pthread_create(&p->printer, NULL, printer_main, p) == 0) {
            p->threads = 2;
            return 0;
        }
    }
    pthread_mutex_lock(&p->lock);
    p->quit = 1;
    pthread_cond_broadcast(&p->cv);
    pthread_mutex_unlock(&p->lock);
    if (p->threads)
        pthread_join(p->syncer, NULL);
    pthread_mutex_destroy(&p->lock);
    pthread_cond_destroy(&p->cv);
    return -1;
}

/* Waits until `done` (under lock) or a failure. 0 or -1 (the failure's
 * message printed: a failed flush - its events are not acknowledged - or
 * a failed write). */
static int pipeline_wait(pipeline *p, int (*done)(const pipeline *))
{
    pthread_mutex_lock(&p->lock);
    while (!done(p) && !p->rc)
        pthread_cond_wait(&p->cv, &p->lock);
    int rc = p->rc;
    pthread_mutex_unlock(&p->lock);
    if (rc) {
        if (!p->told)
            cli_error("%s", p->msg);
        p->told = 1;
        return -1;
    }
    return 0;
}

/* A slot free for the next batch's events. */
static int may_hand_over(const pipeline *p)
{
    return p->handed - p->printed < SLOTS;
}

static int all_printed(const pipeline *p)
{
    return p->printed == p->handed;
}

/* The end of a batch of a file: its records written and handed to the
 * flushing thread, its events to the printing one. 0 or -1 (message
 * printed). */
static int pipeline_commit(mctx *x, pipeline *p)
{
    if (pipeline_wait(p, may_hand_over))
        return -1;
    if (synor_market_commit_write(x->m)) {
        cli_error("%s", synor_errmsg());
        return -1;
    }
    pthread_mutex_lock(&p->lock);
    mout *slot = &p->events[p->handed % SLOTS];
    mout t = *slot; /* an empty buffer, kept for reuse */
    *slot = x->out;
    x->out = t;
    p->handed++;
    pthread_cond_broadcast(&p->cv);
    pthread_mutex_unlock(&p->lock);
    return 0;
}

/* Prints what was handed over, then stops the threads. 0 or -1 (message
 * printed). */
static int pipeline_end(pipeline *p)
{
    int rc = pipeline_wait(p, all_printed);
    pthread_mutex_lock(&p->lock);
    p->quit = 1;
    pthread_cond_broadcast(&p->cv);
    pthread_mutex_unlock(&p->lock);
    pthread_join(p->syncer, NULL);
    pthread_join(p->printer, NULL);
    pthread_mutex_destroy(&p->lock);
    pthread_cond_destroy(&p->cv);
    for (int i = 0; i < SLOTS; i++)
        free(p->events[i].data);
    free(p->text.data);
    return rc;
}

typedef struct bstate {
    mctx *x;
    const char *name;
    long line;
    long rejected;
    int fatal; /* the batch stopped (message printed) */
} bstate;

/* One line, its text or (pp) as read ahead. */
static void apply(bstate *s, const char *p, size_t n, const synor__parsed_line *pp)
{
    mctx *x = s->x;
    x->line = s->line;
    size_t mark = x->out.len;
    int reason = 0;
    int rc = pp ? synor__market_submit_parsed(x->m, x->cat, pp, s->name, s->line, &reason)
                : synor_market_submit_json(x->m, x->cat, p, n, s->name, s->line, &reason);
    if (rc < 0 || x->out.failed) {
        /* not this line's fault: stop here, without its events */
        cli_error("%s:%ld: %s; the batch stops here (this line is not applied%s)", s->name,
                  s->line, rc < 0 ? synor_errmsg() : "out of memory for its events",
                  rc < 0 ? "" : " but may be durable: resend it, a duplicate id says so");
        x->out.len = mark;
        x->out.failed = 0;
        s->fatal = 1;
        return;
    }
    if (reason) {
        s->rejected++;
        if (reason == SYNOR_REASON_MALFORMED)
            fprintf(stderr, "synor market: %s\n", synor_errmsg());
    }
}

static void one_line(bstate *s, const char *p, size_t n)
{
    while (n && p[n - 1] == '\r')
        n--;
    if (n)
        apply(s, p, n, NULL);
}

/* A file whose lines are read ahead (market_readahead.c), with group
 * commit: the same lines, events and commits as the loop of mcli_batch.
 * 0, or -1 when a commit failed (message printed). */
static int batch_read_ahead(bstate *s, mreader *rd, pipeline *y)
{
    long pending = 0;
    const mline *l;
    size_t n;
    int more;
    while (!s->fatal && (more = mcli_reader_next(rd, &l, &n)) != 0) {
        if (more < 0) {
            s->fatal = 1;
            break;
        }
        for (size_t i = 0; i < n && !s->fatal; i++) {
            s->line++;
            if (l[i].form != MLINE_EMPTY)
                apply(s, l[i].text, l[i].len, l[i].form == MLINE_PARSED ? &l[i].p : NULL);
            if (l[i].counts && ++pending >= BATCH_LINES) {
                if (pipeline_commit(s->x, y))
                    return -1;
                pending = 0;
            }
        }
    }
    return 0;
}

int mcli_batch(mctx *x, int fd, const char *name)
{
    struct stat st;
    int interactive = fstat(fd, &st) != 0 || !S_ISREG(st.st_mode);
    inbuf in = {NULL, 0, 0, 0};
    bstate s = {x, name, 0, 0, 0};
    long pending = 0; /* lines applied since the last commit */
    int eof = 0, failed = 0;
    pipeline y;
    /* a file: group commit (or commit in line when no thread starts) */
    int piped = !interactive && pipeline_start(&y, x->m) == 0;
    x->keep_events = piped;
    mreader *rd = piped ? mcli_reader_start(fd, name) : NULL;
    if (rd) {
        failed = batch_read_ahead(&s, rd, &y) != 0;
        mcli_reader_stop(rd);
    }
    while (!rd && !s.fatal && !failed) {
        /* every complete line read so far */
        char *nl;
        while (!s.fatal && !failed && in.end > in.start &&
               (nl = memchr(in.data + in.start, '\n', in.end - in.start))) {
            s.line++;
            one_line(&s, in.data + in.start, (size_t)(nl - (in.data + in.start)));
            in.start = (size_t)(nl - in.data) + 1;
            if (++pending >= BATCH_LINES) {
                failed = (piped ? pipeline_commit(x, &y) : mcli_flush(x)) != 0;
                pending = 0;
            }
        }
        if (s.fatal || failed)
            break;
        if (eof) { /* a last line without a newline */
            if (in.end > in.start) {
                s.line++;
                one_line(&s, in.data + in.start, in.end - in.start);
            }
            break;
        }
        /* about to wait for input: answer what was asked so far */
        if (interactive && pending && !readable_now(fd)) {
            failed = mcli_flush(x) != 0;
            pending = 0;
            if (failed)
                break;
        }
        if (make_room(&in)) {
            cli_error("%s: out of memory reading line %ld; the batch stops here", name,
                      s.line + 1);
            s.fatal = 1;
            break;
        }
        ssize_t r = read(fd, in.data + in.end, in.cap - in.end);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0) {
            cli_error("%s: read failed after line %ld: %s; the batch stops here", name, s.line,
                      strerror(errno));
            s.fatal = 1;
            break;
        }
        if (r == 0)
            eof = 1;
        in.end += (size_t)r;
    }
    free(in.data);
    /* the batches in flight first (their events before the later ones) */
    if (piped && pipeline_end(&y))
        failed = 1;
    /* what was applied before a stop is committed and answered */
    if (!failed && mcli_flush(x))
        failed = 1;
    x->keep_events = 0;
    return s.fatal || failed || s.rejected ? CLI_FAIL : CLI_OK;
}
