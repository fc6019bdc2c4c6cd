/* market_batch.c - `synor market batch`: JSON-lines commands in, JSON-lines
 * events out (docs/MARKET.md).
 *
 * Events are printed only after the commit that makes them durable. When
 * the input is a file, commands are committed in batches of BATCH_LINES,
 * and the disk's flush of one batch overlaps the work on the next (group
 * commit): at the end of batch k the journal records of k are written
 * (synor_market_commit_write) and a second thread flushes them
 * (synor_market_commit_sync, by the fsync policy) while this one applies
 * batch k + 1; that thread prints the events of k when the flush has
 * returned - never before - and the next batch waits for it.
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

/* The flushing thread of a file batch: one job at a time. */
typedef struct syncer {
    pthread_t thread;
    pthread_mutex_t lock;
    pthread_cond_t cv;
    const synor_market *m;
    int job, busy, quit; /* under lock */
    int rc;              /* of the last job, under lock */
    char msg[600];       /* its message (the error slot is per thread) */
    mout events;         /* the events its job makes durable, printed by
                            it once they are */
} syncer;

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

static void *syncer_main(void *arg)
{
    syncer *y = arg;
    pthread_mutex_lock(&y->lock);
    for (;;) {
        while (!y->job && !y->quit)
            pthread_cond_wait(&y->cv, &y->lock);
        if (y->quit)
            break;
        y->job = 0;
        pthread_mutex_unlock(&y->lock);
        /* durable, then answered: the events go out from this thread too,
         * sparing the one that parses and applies the next batch */
        int rc = synor_market_commit_sync(y->m);
        char msg[sizeof y->msg] = "";
        if (rc)
            snprintf(msg, sizeof msg, "%s", synor_errmsg());
        else if (write_out(y->events.data, y->events.len)) {
            rc = -1;
            snprintf(msg, sizeof msg, "writing the events: %s", strerror(errno));
        }
        y->events.len = 0;
        pthread_mutex_lock(&y->lock);
        y->rc = rc;
        memcpy(y->msg, msg, sizeof msg);
        y->busy = 0;
        pthread_cond_broadcast(&y->cv);
    }
    pthread_mutex_unlock(&y->lock);
    return NULL;
}

/* Waits for the running flush and the printing of the events it made
 * durable. 0 or -1 (a failed flush: those events are not acknowledged; a
 * failed write; the message printed). */
static int syncer_wait(syncer *y)
{
    pthread_mutex_lock(&y->lock);
    while (y->busy)
        pthread_cond_wait(&y->cv, &y->lock);
    int rc = y->rc;
    pthread_mutex_unlock(&y->lock);
    if (rc) {
        cli_error("%s", y->msg);
        return -1;
    }
    return 0;
}

/* The end of a batch of a file: the previous batch's events out, this
 * batch's records written and handed to the flushing thread with its
 * events. 0 or -1 (message printed). */
static int pipeline_commit(mctx *x, syncer *y)
{
    if (syncer_wait(y))
        return -1;
    if (synor_market_commit_write(x->m)) {
        cli_error("%s", synor_errmsg());
        return -1;
    }
    mout t = y->events; /* an empty buffer, kept for reuse */
    y->events = x->out;
    x->out = t;
    pthread_mutex_lock(&y->lock);
    y->job = y->busy = 1;
    pthread_cond_signal(&y->cv);
    pthread_mutex_unlock(&y->lock);
    return 0;
}

typedef struct bstate {
    mctx *x;
    const char *name;
    long line;
    long rejected;
    int fatal; /* the batch stopped (message printed) */
} bstate;

static void one_line(bstate *s, char *p, size_t n)
{
    while (n && p[n - 1] == '\r')
        n--;
    if (!n)
        return;
    mctx *x = s->x;
    x->line = s->line;
    size_t mark = x->out.len;
    int reason = 0;
    int rc = synor_market_submit_json(x->m, x->cat, p, n, s->name, s->line, &reason);
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

int mcli_batch(mctx *x, int fd, const char *name)
{
    struct stat st;
    int interactive = fstat(fd, &st) != 0 || !S_ISREG(st.st_mode);
    inbuf in = {NULL, 0, 0, 0};
    bstate s = {x, name, 0, 0, 0};
    long pending = 0; /* lines applied since the last commit */
    int eof = 0, failed = 0;
    syncer y;
    memset(&y, 0, sizeof y);
    y.m = x->m;
    int piped = !interactive; /* a file: group commit */
    if (piped) {
        pthread_mutex_init(&y.lock, NULL);
        pthread_cond_init(&y.cv, NULL);
        if (pthread_create(&y.thread, NULL, syncer_main, &y) != 0) {
            pthread_mutex_destroy(&y.lock);
            pthread_cond_destroy(&y.cv);
            piped = 0; /* commit in line instead */
        }
    }
    while (!s.fatal && !failed) {
        /* every complete line read so far */
        char *nl;
        while (!s.fatal && in.end > in.start &&
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
    if (piped) {
        /* the batch in flight first (its events before the later ones) */
        if (syncer_wait(&y))
            failed = 1;
        pthread_mutex_lock(&y.lock);
        y.quit = 1;
        pthread_cond_signal(&y.cv);
        pthread_mutex_unlock(&y.lock);
        pthread_join(y.thread, NULL);
        pthread_mutex_destroy(&y.lock);
        pthread_cond_destroy(&y.cv);
        free(y.events.data);
    }
    /* what was applied before a stop is committed and answered */
    if (!failed && mcli_flush(x))
        failed = 1;
    return s.fatal || failed || s.rejected ? CLI_FAIL : CLI_OK;
}
