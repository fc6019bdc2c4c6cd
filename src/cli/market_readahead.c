/* market_readahead.c - a file batch's lines read ahead of their turn.
 *
 * A thread reads the file in chunks of whole lines, splits them and reads
 * each line as far as it can without the market (synor__cmdline_preparse:
 * the command and its names as text), while the batch's own thread applies
 * the lines of an earlier chunk. What is handed over is that compact form
 * - the command struct and three names, about 200 bytes a line, written
 * and read in order - never the parser's fields: handing those over cost
 * more in cache misses than the parse saved. A line that is not of the
 * common form, or whose fields are wrong, is handed over as text and read
 * again by synor_market_submit_json, which words its error; so the batch
 * answers every line as it would reading the file itself. */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/market_cli.h"

#define CHUNK (1u << 18) /* bytes of input read at once */
#define NCHUNKS 4        /* chunks read and not yet applied, at most */

typedef struct rchunk {
    char *data;
    size_t cap;
    mline *lines;
    size_t n, cap_lines;
    int end;       /* after these lines: 0 more, 1 the end of the input, 2 a stop */
    char msg[600]; /* end 2: why */
} rchunk;

struct mreader {
    pthread_t thread;
    pthread_mutex_t lock;
    pthread_cond_t cv;
    int fd;
    const char *name;
    rchunk c[NCHUNKS];
    long filled, released; /* chunks, under lock */
    int held;              /* the batch's thread holds chunk `released` */
    int quit;              /* under lock */
    long lines;            /* the reading thread's: lines split so far */
};

static int add_line(mreader *r, rchunk *c, const char *p, size_t n, int counts)
{
    if (c->n == c->cap_lines) {
        size_t cap = c->cap_lines ? c->cap_lines * 2 : 4096;
        mline *l = realloc(c->lines, cap * sizeof *l);
        if (!l)
            return -1;
        c->lines = l;
        c->cap_lines = cap;
    }
    while (n && p[n - 1] == '\r')
        n--;
    mline *l = &c->lines[c->n++];
    l->text = p;
    l->len = n;
    l->counts = counts;
    l->form = !n ? MLINE_EMPTY : synor__cmdline_preparse(p, n, &l->p) == 0 ? MLINE_PARSED
                                                                           : MLINE_TEXT;
    r->lines++;
    return 0;
}

/* The batch stops after the lines of c: the reasons are the ones the
 * batch's thread gives reading the input itself. */
static void stop_oom(mreader *r, rchunk *c)
{
    c->end = 2;
    snprintf(c->msg, sizeof c->msg, "%s: out of memory reading line %ld; the batch stops here",
             r->name, r->lines + 1);
}

static void stop_read(mreader *r, rchunk *c, int err)
{
    c->end = 2;
    snprintf(c->msg, sizeof c->msg, "%s: read failed after line %ld: %s; the batch stops here",
             r->name, r->lines, strerror(err));
}

/* Fills chunk c with whole lines: those after `carry` (the unfinished line
 * of the chunk before, n_carry bytes) and what is read after it. The new
 * unfinished line is left in *carry. */
static void fill(mreader *r, rchunk *c, const char **carry, size_t *n_carry)
{
    c->n = 0;
    c->end = 0;
    size_t len = 0;
    for (;;) {
        size_t need = *n_carry + CHUNK;
        if (c->cap < need) {
            size_t cap = c->cap ? c->cap : 2 * (size_t)CHUNK;
            while (cap < need)
                cap *= 2;
            char *d = malloc(cap); /* not realloc: the carry may point into it */
            if (!d) {
                stop_oom(r, c);
                return;
            }
            if (*n_carry)
                memcpy(d, *carry, *n_carry);
            free(c->data);
            c->data = d;
            c->cap = cap;
        } else if (*n_carry) {
            memmove(c->data, *carry, *n_carry);
        }
        len = *n_carry;
        ssize_t got;
        do
            got = read(r->fd, c->data + len, c->cap - len);
        while (got < 0 && errno == EINTR);
        int err = got < 0 ? errno : 0;
        if (got > 0)
            len += (size_t)got;
        const char *p = c->data, *e = c->data + len, *nl;
        while (p < e && (nl = memchr(p, '\n', (size_t)(e - p)))) {
            if (add_line(r, c, p, (size_t)(nl - p), 1)) {
                stop_oom(r, c);
                return;
            }
            p = nl + 1;
        }
        *carry = p;
        *n_carry = (size_t)(e - p);
        if (err) {
            stop_read(r, c, err);
            return;
        }
        if (got == 0) { /* a last line without a newline */
            if (*n_carry && add_line(r, c, p, *n_carry, 0)) {
                stop_oom(r, c);
                return;
            }
            c->end = 1;
            return;
        }
        if (c->n)
            return;
        /* a line longer than the chunk: read on into a larger one */
    }
}

static void *reader_main(void *arg)
{
    mreader *r = arg;
    const char *carry = NULL;
    size_t n_carry = 0;
    for (long k = 0;; k++) {
        pthread_mutex_lock(&r->lock);
        while (k - r->released >= NCHUNKS && !r->quit)
            pthread_cond_wait(&r->cv, &r->lock);
        int quit = r->quit;
        pthread_mutex_unlock(&r->lock);
        if (quit)
            break;
        rchunk *c = &r->c[k % NCHUNKS];
        fill(r, c, &carry, &n_carry);
        pthread_mutex_lock(&r->lock);
        r->filled++;
        pthread_cond_broadcast(&r->cv);
        pthread_mutex_unlock(&r->lock);
        if (c->end)
            break;
    }
    return NULL;
}

mreader *mcli_reader_start(int fd, const char *name)
{
    mreader *r = calloc(1, sizeof *r);
    if (!r)
        return NULL;
    r->fd = fd;
    r->name = name;
    if (pthread_mutex_init(&r->lock, NULL)) {
        free(r);
        return NULL;
    }
    if (pthread_cond_init(&r->cv, NULL) ||
        pthread_create(&r->thread, NULL, reader_main, r) != 0) {
        pthread_cond_destroy(&r->cv);
        pthread_mutex_destroy(&r->lock);
        free(r);
        return NULL;
    }
    return r;
}

int mcli_reader_next(mreader *r, const mline **lines, size_t *n)
{
    pthread_mutex_lock(&r->lock);
    if (r->held) {
        const rchunk *c = &r->c[r->released % NCHUNKS];
        if (c->end) { /* the last chunk: nothing follows */
            pthread_mutex_unlock(&r->lock);
            if (c->end == 2) {
                cli_error("%s", c->msg);
                return -1;
            }
            return 0;
        }
        r->released++;
        r->held = 0;
        pthread_cond_broadcast(&r->cv);
    }
    while (r->filled == r->released)
        pthread_cond_wait(&r->cv, &r->lock);
    r->held = 1;
    const rchunk *c = &r->c[r->released % NCHUNKS];
    pthread_mutex_unlock(&r->lock);
    *lines = c->lines;
    *n = c->n;
    return 1;
}

void mcli_reader_stop(mreader *r)
{
    pthread_mutex_lock(&r->lock);
    r->quit = 1;
    pthread_cond_broadcast(&r->cv);
    pthread_mutex_unlock(&r->lock);
    pthread_join(r->thread, NULL);
    pthread_cond_destroy(&r->cv);
    pthread_mutex_destroy(&r->lock);
    for (int i = 0; i < NCHUNKS; i++) {
        free(r->c[i].data);
        free(r->c[i].lines);
    }
    free(r);
}
