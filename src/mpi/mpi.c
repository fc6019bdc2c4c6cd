/* mpi.c - the runtime across ranks (synor/mpi.h).
 *
 * Each insert is planned by the bookkeeping (track.c), identically on every
 * rank; this file turns the plan into this rank's share of the work:
 *   - a transfer from this rank: a send task on the local runtime, reading
 *     the datum (so it runs after the datum's writer and before its next
 *     one); its kernel packs the data into a buffer of its own and hands
 *     it to the progress thread, which posts MPI_Isend and frees the buffer
 *     when the send completes;
 *   - a transfer to this rank: MPI_Irecv into a buffer, posted at once, and
 *     an unpack task (writing the local handle) submitted once the message
 *     has arrived;
 *   - the task itself, when this rank runs it.
 * Local tasks go to the runtime in program order, which is how the runtime
 * infers dependencies; so a task waiting for a message is held back in the
 * deferred list, and so is every later entry sharing a datum with a held
 * one (transitively); unrelated later entries go ahead. Held entries wait
 * only for messages that earlier parts of the common program produce, so
 * holding them cannot deadlock; no worker ever blocks on a message.
 *
 * Lock order: m->lock, then whatever synor_task_submit takes. Kernels take
 * m->lock (the send kernel), never while the runtime holds one of its own
 * locks, so the order is never reversed. */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "common/common.h"
#include "mpi/comm.h"
#include "mpi/track.h"
#include "synor/mpi.h"

typedef struct recv_rec {
    void *buf;
    size_t bytes;
    int done;
} recv_rec;

typedef struct op {
    int send;
    void *buf;
    size_t bytes;
    int peer, tag;
    recv_rec *rr;         /* receive: the record its unpack task waits on */
    synor__comm_req *req; /* once posted */
    struct op *next;
} op;

enum { ENTRY_TASK, ENTRY_SEND, ENTRY_UNPACK };

typedef struct entry {
    int kind;
    synor_task_spec spec;
    unsigned char args[SYNOR_TASK_MAX_ARGS];
    synor_mpi_data *d[SYNOR_TASK_MAX_DATA];
    unsigned nd;
    recv_rec *rr; /* unpack */
    struct entry *next;
} entry;

struct synor_mpi_data {
    synor_mpi *m;
    size_t id;
    synor_handle *h;
    size_t bytes;
    uint64_t stamp; /* last scan of the deferred list that found it held */
};

struct synor_mpi {
    synor_runtime *rt;
    int rank, size;
    synor__mpi_track *track;
    synor_mpi_data **data;
    size_t ndata, cap;

    pthread_mutex_t lock;
    pthread_cond_t wake; /* progress thread: new operations, or stop */
    pthread_cond_t idle; /* wait_all: outstanding reached 0, or an error */
    pthread_t thread;
    int thread_started, stop;
    op *to_post, *to_post_tail, *active;
    entry *deferred, *deferred_tail;
    uint64_t outstanding; /* deferred entries + operations not yet completed */
    uint64_t submits;     /* entries submitted by the progress thread */
    uint64_t scan;
    int error;            /* first error of the progress thread (0: none) */
    char errmsg[256];
    synor_mpi_stats stats;
};

/* ------------------------------------------------------------ kernels */

typedef struct send_args {
    synor_mpi *m;
    int dest, tag;
} send_args;

/* Copies between a handle's buffer (2-D: column stride ld) and a packed one. */
static void copy_packed(const synor_handle *h, void *buf, size_t ld, void *packed, int pack)
{
    size_t es = synor_dtype_bits(synor_handle_dtype(h)) / 8;
    size_t rows = synor_handle_dim(h, 0), cols = 1;
    for (unsigned i = 1; i < synor_handle_ndim(h); i++)
        cols *= synor_handle_dim(h, i);
    if (synor_handle_ndim(h) != 2 || ld == 0 || ld == rows) {
        if (pack)
            memcpy(packed, buf, synor_handle_bytes(h));
        else
            memcpy(buf, packed, synor_handle_bytes(h));
        return;
    }
    for (size_t c = 0; c < cols; c++) {
        char *col = (char *)buf + c * ld * es, *p = (char *)packed + c * rows * es;
        if (pack)
            memcpy(p, col, rows * es);
        else
            memcpy(col, p, rows * es);
    }
}

static void push_op(synor_mpi *m, op *o)
{
    o->next = NULL;
    if (m->to_post_tail)
        m->to_post_tail->next = o;
    else
        m->to_post = o;
    m->to_post_tail = o;
    m->outstanding++;
    pthread_cond_signal(&m->wake);
}

static int send_kernel(const synor_task_ctx *ctx)
{
    send_args a;
    memcpy(&a, ctx->args, sizeof a);
    size_t bytes = synor_handle_bytes(ctx->data[0]);
    op *o = synor__calloc(1, sizeof *o);
    void *buf = synor__malloc(bytes ? bytes : 1);
    if (!o || !buf) {
        synor__free(o);
        synor__free(buf);
        return synor__error(SYNOR_ENOMEM, "mpi: no memory for a send of %zu bytes", bytes);
    }
    copy_packed(ctx->data[0], ctx->buffers[0], ctx->ld[0], buf, 1);
    *o = (op){.send = 1, .buf = buf, .bytes = bytes, .peer = a.dest, .tag = a.tag};
    pthread_mutex_lock(&a.m->lock);
    push_op(a.m, o);
    pthread_mutex_unlock(&a.m->lock);
    return 0;
}

static int unpack_kernel(const synor_task_ctx *ctx)
{
    recv_rec *rr;
    memcpy(&rr, ctx->args, sizeof rr);
    copy_packed(ctx->data[0], ctx->buffers[0], ctx->ld[0], rr->buf, 0);
    synor__free(rr->buf);
    synor__free(rr);
    return 0;
}

static int nop_kernel(const synor_task_ctx *ctx)
{
    (void)ctx;
    return 0;
}

static const synor_kernel k_send = {.name = "mpi_send", .op = SYNOR_OP_CUSTOM,
                                    .fn = {[SYNOR_KIND_CPU] = send_kernel},
                                    .flags = SYNOR_KERNEL_FAILS_BEFORE_WRITING};
static const synor_kernel k_unpack = {.name = "mpi_recv", .op = SYNOR_OP_CUSTOM,
                                      .fn = {[SYNOR_KIND_CPU] = unpack_kernel},
                                      .flags = SYNOR_KERNEL_FAILS_BEFORE_WRITING};
static const synor_kernel k_fetch = {.name = "mpi_fetch", .op = SYNOR_OP_CUSTOM,
                                     .fn = {[SYNOR_KIND_CPU] = nop_kernel},
                                     .flags = SYNOR_KERNEL_FAILS_BEFORE_WRITING};

/* ------------------------------------------------------- deferred list */

static void set_error(synor_mpi *m, int rc)
{
    if (m->error)
        return;
    m->error = rc;
    snprintf(m->errmsg, sizeof m->errmsg, "%s", synor_errmsg());
    pthread_cond_broadcast(&m->idle);
}

/* Submits, in order, every deferred entry that waits for no message and
 * shares no datum with an entry still held before it. m->lock held. */
static void scan_deferred(synor_mpi *m, int from_progress)
{
    uint64_t stamp = ++m->scan;
    entry **pp = &m->deferred, *prev = NULL;
    while (*pp) {
        entry *e = *pp;
        int held = e->kind == ENTRY_UNPACK && !e->rr->done;
        for (unsigned i = 0; i < e->nd && !held; i++)
            held = e->d[i]->stamp == stamp;
        if (held) {
            for (unsigned i = 0; i < e->nd; i++)
                e->d[i]->stamp = stamp;
            prev = e;
            pp = &e->next;
            continue;
        }
        *pp = e->next;
        if (m->deferred_tail == e)
            m->deferred_tail = prev;
        if (e->spec.args_size)
            e->spec.args = e->args;
        int rc = synor_task_submit(m->rt, &e->spec);
        if (rc < 0)
            set_error(m, rc);
        if (from_progress) {
            m->submits++;
            pthread_cond_broadcast(&m->idle);
        }
        m->outstanding--;
        synor__free(e);
    }
    if (m->outstanding == 0)
        pthread_cond_broadcast(&m->idle);
}

static void defer(synor_mpi *m, entry *e)
{
    e->next = NULL;
    if (m->deferred_tail)
        m->deferred_tail->next = e;
    else
        m->deferred = e;
    m->deferred_tail = e;
    m->outstanding++;
}

/* ------------------------------------------------------ progress thread */

static uint64_t mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void *progress_main(void *arg)
{
    synor_mpi *m = arg;
    uint64_t backoff_ns = 0;
    pthread_mutex_lock(&m->lock);
    for (;;) {
        while (m->to_post) {
            op *o = m->to_post;
            m->to_post = o->next;
            if (!m->to_post)
                m->to_post_tail = NULL;
            int rc = o->send ? synor__comm_isend(o->buf, o->bytes, o->peer, o->tag, &o->req)
                             : synor__comm_irecv(o->buf, o->bytes, o->peer, o->tag, &o->req);
            if (rc < 0) {
                set_error(m, rc);
                if (o->send)
                    synor__free(o->buf);
                m->outstanding--;
                synor__free(o);
                continue;
            }
            o->next = m->active;
            m->active = o;
        }
        int progressed = 0, arrived = 0;
        for (op **pp = &m->active; *pp;) {
            op *o = *pp;
            int done = 0, rc = synor__comm_test(o->req, &done);
            if (rc < 0) {
                set_error(m, rc);
                done = 0;
            }
            if (!done) {
                pp = &o->next;
                continue;
            }
            *pp = o->next;
            progressed = 1;
            if (o->send) {
                synor__free(o->buf);
                m->stats.messages_sent++;
                m->stats.bytes_sent += o->bytes;
            } else {
                o->rr->done = 1;
                arrived = 1;
                m->stats.messages_received++;
                m->stats.bytes_received += o->bytes;
            }
            m->outstanding--;
            synor__free(o);
        }
        if (arrived)
            scan_deferred(m, 1);
        if (m->outstanding == 0)
            pthread_cond_broadcast(&m->idle);
        /* after an error, messages may never complete (a peer's send was
         * cancelled): stop anyway; the job is ended by synor_mpi_abort */
        if (m->stop && (m->error || (!m->active && !m->to_post)))
            break;
        if (!m->active) {
            backoff_ns = 0;
            if (!m->to_post)
                pthread_cond_wait(&m->wake, &m->lock);
            continue;
        }
        /* in flight: poll again at once after progress (a large message
         * completes in several protocol steps, each needing a test on
         * both sides), else after a pause growing from 10 us to 500 us */
        if (progressed) {
            backoff_ns = 0;
            continue;
        }
        backoff_ns = backoff_ns ? (backoff_ns * 2 > 500000 ? 500000 : backoff_ns * 2) : 10000;
        uint64_t until = mono_ns() + backoff_ns;
        struct timespec ts = {.tv_sec = (time_t)(until / 1000000000ull),
                              .tv_nsec = (long)(until % 1000000000ull)};
        (void)pthread_cond_timedwait(&m->wake, &m->lock, &ts);
    }
    pthread_mutex_unlock(&m->lock);
    return NULL;
}

/* ------------------------------------------------------------------ API */

int synor_mpi_built(void) { return synor__comm_built(); }
int synor_mpi_init(int *argc, char ***argv) { return synor__comm_init(argc, argv); }
void synor_mpi_finalize(void) { synor__comm_finalize(); }
void synor_mpi_abort(int code) { synor__comm_abort(code); }
int synor_mpi_world_rank(void) { return synor__comm_rank(); }
int synor_mpi_world_size(void) { return synor__comm_size(); }
int synor_mpi_rank(const synor_mpi *m) { return m->rank; }
synor_runtime *synor_mpi_runtime(const synor_mpi *m) { return m->rt; }
int synor_mpi_size(const synor_mpi *m) { return m->size; }
size_t synor_mpi_data_id(const synor_mpi_data *d) { return d->id; }
int synor_mpi_data_owner(const synor_mpi_data *d) { return synor__mpi_track_owner(d->m->track, d->id); }

int synor_mpi_create(synor_runtime *rt, synor_mpi **out)
{
    *out = NULL;
    if (!rt)
        return synor__error(SYNOR_EINVAL, "mpi: no runtime");
    if (!synor__comm_initialized())
        return synor__error(SYNOR_ESTATE, "mpi: synor_mpi_init was not called");
    synor_mpi *m = synor__calloc(1, sizeof *m);
    if (!m)
        return synor__error(SYNOR_ENOMEM, "mpi: out of memory");
    m->rt = rt;
    m->rank = synor__comm_rank();
    m->size = synor__comm_size();
    int rc = synor__mpi_track_create(m->size, synor__comm_tag_ub(), &m->track);
    if (rc < 0) {
        synor__free(m);
        return rc;
    }
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_mutex_init(&m->lock, NULL);
    pthread_cond_init(&m->wake, &ca);
    pthread_cond_init(&m->idle, NULL);
    pthread_condattr_destroy(&ca);
    if (pthread_create(&m->thread, NULL, progress_main, m) != 0) {
        synor_mpi_destroy(m);
        return synor__error(SYNOR_EIO, "mpi: cannot start the progress thread");
    }
    m->thread_started = 1;
    *out = m;
    return 0;
}

void synor_mpi_destroy(synor_mpi *m)
{
    if (!m)
        return;
    if (m->thread_started) {
        (void)synor_mpi_wait_all(m);
        pthread_mutex_lock(&m->lock);
        m->stop = 1;
        pthread_cond_signal(&m->wake);
        pthread_mutex_unlock(&m->lock);
        pthread_join(m->thread, NULL);
    }
    /* after an error: what was never posted, and what never ran (requests
     * still in flight are left to the MPI library, which the caller ends
     * with synor_mpi_abort: freeing their buffers could let a late message
     * land in freed memory) */
    while (m->to_post) {
        op *o = m->to_post;
        m->to_post = o->next;
        if (o->send)
            synor__free(o->buf);
        synor__free(o);
    }
    while (m->deferred) {
        entry *e = m->deferred;
        m->deferred = e->next;
        if (e->rr) {
            synor__free(e->rr->buf);
            synor__free(e->rr);
        }
        synor__free(e);
    }
    for (size_t i = 0; i < m->ndata; i++)
        synor__free(m->data[i]);
    synor__free(m->data);
    synor__mpi_track_destroy(m->track);
    pthread_mutex_destroy(&m->lock);
    pthread_cond_destroy(&m->wake);
    pthread_cond_destroy(&m->idle);
    synor__free(m);
}

int synor_mpi_data_register(synor_mpi *m, synor_handle *h, int owner, synor_mpi_data **out)
{
    *out = NULL;
    if (!m || !h)
        return synor__error(SYNOR_EINVAL, "mpi: register: NULL %s", m ? "handle" : "context");
    if (m->ndata == m->cap) {
        size_t cap = m->cap ? 2 * m->cap : 64;
        synor_mpi_data **d = synor__realloc(m->data, cap * sizeof *d);
        if (!d)
            return synor__error(SYNOR_ENOMEM, "mpi: out of memory");
        m->data = d;
        m->cap = cap;
    }
    synor_mpi_data *d = synor__calloc(1, sizeof *d);
    if (!d)
        return synor__error(SYNOR_ENOMEM, "mpi: out of memory");
    size_t id;
    int rc = synor__mpi_track_add(m->track, owner, &id);
    if (rc < 0) {
        synor__free(d);
        return rc;
    }
    *d = (synor_mpi_data){.m = m, .id = id, .h = h, .bytes = synor_handle_bytes(h)};
    m->data[m->ndata++] = d;
    *out = d;
    return 0;
}

static entry *new_entry(int kind, const synor_kernel *k, synor_priority prio, uint64_t tag)
{
    entry *e = synor__calloc(1, sizeof *e);
    if (e) {
        e->kind = kind;
        e->spec.kernel = k;
        e->spec.priority = prio;
        e->spec.tag = tag;
    }
    return e;
}

static void entry_data(entry *e, synor_mpi_data *d, synor_access mode)
{
    e->spec.data[e->spec.ndata] = d->h;
    e->spec.mode[e->spec.ndata++] = mode;
    e->d[e->nd++] = d;
}

int synor_mpi_task_insert(synor_mpi *m, const synor_mpi_task *t)
{
    if (!m || !t || !t->kernel || t->ndata > SYNOR_TASK_MAX_DATA ||
        t->args_size > SYNOR_TASK_MAX_ARGS || (t->args_size && !t->args))
        return synor__error(SYNOR_EINVAL, "mpi: insert: a bad task");
    size_t ids[SYNOR_TASK_MAX_DATA];
    for (unsigned i = 0; i < t->ndata; i++) {
        if (!t->data[i] || t->data[i]->m != m)
            return synor__error(SYNOR_EINVAL, "mpi: insert: task '%s' operand %u is %s",
                                t->kernel->name, i,
                                t->data[i] ? "a datum of another context" : "NULL");
        ids[i] = t->data[i]->id;
    }
    if (t->rank >= m->size)
        return synor__error(SYNOR_EINVAL, "mpi: insert: task '%s' on rank %d of %d",
                            t->kernel->name, t->rank, m->size);
    pthread_mutex_lock(&m->lock);
    if (m->error) {
        int rc = synor__error(m->error, "%s", m->errmsg);
        pthread_mutex_unlock(&m->lock);
        return rc;
    }
    /* The bookkeeping changes first (it is what says what this rank must
     * do); a failed allocation after it fails the context (below). */
    synor__mpi_xfer xf[SYNOR_TASK_MAX_DATA];
    unsigned nx = 0, hits = 0;
    entry *es[2 * SYNOR_TASK_MAX_DATA + 1];
    op *ops[SYNOR_TASK_MAX_DATA];
    unsigned ne = 0, no = 0;
    int exec = synor__mpi_track_task(m->track, ids, t->mode, t->ndata, t->rank, xf, &nx, &hits);
    if (exec < 0) {
        pthread_mutex_unlock(&m->lock);
        return exec;
    }
    int rc = 0;
    for (unsigned i = 0; i < nx && rc == 0; i++) {
        synor_mpi_data *d = m->data[xf[i].datum];
        if (xf[i].from == m->rank) {
            /* sends first: another rank waits for them */
            entry *e = new_entry(ENTRY_SEND, &k_send, SYNOR_PRIORITY_HIGH, t->tag);
            if (!e) {
                rc = SYNOR_ENOMEM;
                break;
            }
            send_args a = {.m = m, .dest = xf[i].to, .tag = xf[i].tag};
            memcpy(e->args, &a, sizeof a);
            e->spec.args_size = sizeof a;
            entry_data(e, d, SYNOR_ACCESS_R);
            es[ne++] = e;
        }
        if (xf[i].to == m->rank) {
            entry *e = new_entry(ENTRY_UNPACK, &k_unpack, t->priority, t->tag);
            recv_rec *rr = synor__calloc(1, sizeof *rr);
            op *o = synor__calloc(1, sizeof *o);
            void *buf = synor__malloc(d->bytes ? d->bytes : 1);
            if (!e || !rr || !o || !buf) {
                synor__free(e), synor__free(rr), synor__free(o), synor__free(buf);
                rc = SYNOR_ENOMEM;
                break;
            }
            *rr = (recv_rec){.buf = buf, .bytes = d->bytes};
            *o = (op){.send = 0, .buf = buf, .bytes = d->bytes, .peer = xf[i].from,
                      .tag = xf[i].tag, .rr = rr};
            e->rr = rr;
            memcpy(e->args, &rr, sizeof rr);
            e->spec.args_size = sizeof rr;
            entry_data(e, d, SYNOR_ACCESS_W);
            es[ne++] = e;
            ops[no++] = o;
        }
    }
    if (rc == 0 && exec == m->rank) {
        entry *e = new_entry(ENTRY_TASK, t->kernel, t->priority, t->tag);
        if (!e)
            rc = SYNOR_ENOMEM;
        else {
            for (unsigned i = 0; i < t->ndata; i++)
                entry_data(e, t->data[i], t->mode[i]);
            if (t->args_size)
                memcpy(e->args, t->args, t->args_size);
            e->spec.args_size = t->args_size;
            e->spec.user = t->user;
            es[ne++] = e;
        }
    }
    if (rc < 0) {
        /* cannot be undone in the bookkeeping: this rank is now out of step
         * with the others, so the context is failed for good */
        for (unsigned i = 0; i < ne; i++) {
            if (es[i]->rr) {
                synor__free(es[i]->rr->buf);
                synor__free(es[i]->rr);
            }
            synor__free(es[i]);
        }
        for (unsigned i = 0; i < no; i++)
            synor__free(ops[i]);
        rc = synor__error(SYNOR_ENOMEM, "mpi: out of memory inserting task '%s'",
                          t->kernel->name);
        set_error(m, rc);
        pthread_mutex_unlock(&m->lock);
        return rc;
    }
    for (unsigned i = 0; i < no; i++)
        push_op(m, ops[i]);
    for (unsigned i = 0; i < ne; i++)
        defer(m, es[i]);
    m->stats.inserted++;
    if (exec == m->rank) {
        m->stats.executed_here++;
        m->stats.cache_hits += hits;
    }
    scan_deferred(m, 0);
    rc = m->error ? synor__error(m->error, "%s", m->errmsg) : exec;
    pthread_mutex_unlock(&m->lock);
    return rc;
}

int synor_mpi_data_fetch(synor_mpi *m, synor_mpi_data *d, int rank)
{
    synor_mpi_task t = {.kernel = &k_fetch, .priority = SYNOR_PRIORITY_NORMAL, .ndata = 1,
                        .data = {d}, .mode = {SYNOR_ACCESS_R}, .rank = rank};
    if (rank < 0)
        return synor__error(SYNOR_EINVAL, "mpi: fetch to rank %d", rank);
    int rc = synor_mpi_task_insert(m, &t);
    return rc < 0 ? rc : 0;
}

int synor_mpi_wait_all(synor_mpi *m)
{
    for (;;) {
        /* the tasks submitted so far, then whatever the progress thread
         * submits meanwhile (messages arriving release held tasks), until
         * nothing is held, in flight or newly submitted; a failed task
         * ends the wait at once (its cancelled sends would never come) */
        pthread_mutex_lock(&m->lock);
        uint64_t s0 = m->submits;
        pthread_mutex_unlock(&m->lock);
        int rc = synor_runtime_wait_all(m->rt);
        pthread_mutex_lock(&m->lock);
        if (rc < 0) {
            set_error(m, rc);
            pthread_mutex_unlock(&m->lock);
            return rc;
        }
        while (!m->error && m->outstanding > 0 && m->submits == s0)
            pthread_cond_wait(&m->idle, &m->lock);
        int err = m->error, done = m->outstanding == 0 && m->submits == s0;
        pthread_mutex_unlock(&m->lock);
        if (err)
            return synor__error(err, "%s", m->errmsg);
        if (done)
            return 0;
    }
}

void synor_mpi_get_stats(synor_mpi *m, synor_mpi_stats *out)
{
    pthread_mutex_lock(&m->lock);
    *out = m->stats;
    pthread_mutex_unlock(&m->lock);
}
