/* predict.c - request-level speculation's predictor (seed 003 §2.2): from
 * each user's history of requests, the likely next requests and their
 * probabilities, so a server can compute them while it is idle and answer
 * from the cache when they come. A first-order model: counts of "request
 * B followed request A", per user and over all users; a user's own counts
 * decide when the user has been in state A before, the global ones
 * otherwise. See synor/cache.h. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "common/common.h"
#include "synor/cache.h"
#include "synor/error.h"

typedef struct succ {
    uint32_t to, count;
} succ;

/* Successors of one (scope, from) state; scope 0 = all users, else a
 * user id + 1. */
typedef struct state {
    struct state *next;
    uint32_t scope, from, n, cap, total;
    succ *s;
} state;

typedef struct str {
    struct str *next;
    uint64_t hash;
    uint32_t id;
    char *text;
} str;

struct synor_predictor {
    pthread_mutex_t mu;
    size_t max;
    str **strs;    /* intern table, 4096 buckets */
    char **texts;  /* by id */
    uint32_t nstr; /* requests */
    str **users;   /* interned user names (separate id space) */
    uint32_t nusers;
    uint32_t *last; /* by user id: last request id + 1, 0 = none */
    state **states; /* 4096 buckets */
};

#define NBUCKETS 4096u

static uint64_t hash_str(const char *s)
{
    uint64_t h = 0xcbf29ce484222325ull;
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 0x100000001b3ull;
    return h ^ (h >> 29);
}

int synor_predictor_create(size_t max_requests, synor_predictor **out)
{
    if (max_requests < 1 || max_requests > (1u << 24))
        return synor__error(SYNOR_EINVAL, "predictor: %zu requests (1..2^24)", max_requests);
    synor_predictor *p = synor__calloc(1, sizeof *p);
    if (!p)
        return SYNOR_ENOMEM;
    p->max = max_requests;
    p->strs = synor__calloc(NBUCKETS, sizeof *p->strs);
    p->users = synor__calloc(NBUCKETS, sizeof *p->users);
    p->states = synor__calloc(NBUCKETS, sizeof *p->states);
    p->texts = synor__calloc(max_requests, sizeof *p->texts);
    p->last = synor__calloc(max_requests, sizeof *p->last);
    if (!p->strs || !p->users || !p->states || !p->texts || !p->last) {
        synor_predictor_destroy(p);
        return SYNOR_ENOMEM;
    }
    pthread_mutex_init(&p->mu, NULL);
    *out = p;
    return 0;
}

static void free_strs(str **t)
{
    for (unsigned b = 0; t && b < NBUCKETS; b++)
        for (str *s = t[b], *nx; s; s = nx) {
            nx = s->next;
            synor__free(s->text);
            synor__free(s);
        }
    synor__free(t);
}

void synor_predictor_destroy(synor_predictor *p)
{
    if (!p)
        return;
    free_strs(p->strs);
    free_strs(p->users);
    for (unsigned b = 0; p->states && b < NBUCKETS; b++)
        for (state *s = p->states[b], *nx; s; s = nx) {
            nx = s->next;
            synor__free(s->s);
            synor__free(s);
        }
    if (p->texts)
        pthread_mutex_destroy(&p->mu);
    synor__free(p->states);
    synor__free(p->texts);
    synor__free(p->last);
    synor__free(p);
}

/* The id of text in table t (interned if add and there is room), or -1. */
static long intern(synor_predictor *p, str **t, uint32_t *count, const char *text, int add)
{
    uint64_t h = hash_str(text);
    for (str *s = t[h % NBUCKETS]; s; s = s->next)
        if (s->hash == h && !strcmp(s->text, text))
            return s->id;
    if (!add || *count >= p->max)
        return -1;
    str *s = synor__calloc(1, sizeof *s);
    char *copy = synor__strdup(text);
    if (!s || !copy) {
        synor__free(s);
        synor__free(copy);
        return -1;
    }
    *s = (str){t[h % NBUCKETS], h, *count, copy};
    t[h % NBUCKETS] = s;
    if (t == p->strs)
        p->texts[*count] = copy;
    return (*count)++;
}

static state *state_of(synor_predictor *p, uint32_t scope, uint32_t from, int add)
{
    uint32_t b = (scope * 2654435761u ^ from * 40503u) % NBUCKETS;
    for (state *s = p->states[b]; s; s = s->next)
        if (s->scope == scope && s->from == from)
            return s;
    if (!add)
        return NULL;
    state *s = synor__calloc(1, sizeof *s);
    if (!s)
        return NULL;
    s->scope = scope;
    s->from = from;
    s->next = p->states[b];
    p->states[b] = s;
    return s;
}

static int count_in(state *st, uint32_t to)
{
    for (uint32_t i = 0; i < st->n; i++)
        if (st->s[i].to == to) {
            st->s[i].count++;
            st->total++;
            return 0;
        }
    if (st->n == st->cap) {
        uint32_t cap = st->cap ? st->cap * 2 : 4;
        succ *ns = synor__realloc(st->s, cap * sizeof *ns);
        if (!ns)
            return SYNOR_ENOMEM;
        st->s = ns;
        st->cap = cap;
    }
    st->s[st->n++] = (succ){to, 1};
    st->total++;
    return 0;
}

int synor_predictor_observe(synor_predictor *p, const char *user, const char *request)
{
    if (!user || !request)
        return synor__error(SYNOR_EINVAL, "predictor: NULL user or request");
    pthread_mutex_lock(&p->mu);
    long u = intern(p, p->users, &p->nusers, user, 1);
    long r = intern(p, p->strs, &p->nstr, request, 1);
    int e = 0;
    if (u >= 0 && r >= 0) {
        uint32_t prev = p->last[u];
        if (prev) {
            state *g = state_of(p, 0, prev - 1, 1),
                  *own = state_of(p, (uint32_t)u + 1, prev - 1, 1);
            e = g && own ? count_in(g, (uint32_t)r) : SYNOR_ENOMEM;
            if (!e)
                e = count_in(own, (uint32_t)r);
        }
        p->last[u] = (uint32_t)r + 1;
    } else if (u >= 0) {
        p->last[u] = 0; /* an unremembered request breaks the chain */
    }
    pthread_mutex_unlock(&p->mu);
    return e;
}

int synor_predictor_predict(synor_predictor *p, const char *user, size_t n, const char **reqs,
                            float *probs)
{
    pthread_mutex_lock(&p->mu);
    long u = user ? intern(p, p->users, &p->nusers, user, 0) : -1;
    size_t out = 0;
    if (u >= 0 && p->last[u]) {
        uint32_t from = p->last[u] - 1;
        state *st = state_of(p, (uint32_t)u + 1, from, 0);
        if (!st || !st->total)
            st = state_of(p, 0, from, 0);
        if (st && st->total) {
            /* the n most frequent successors, selection by repeated max */
            uint8_t *taken = calloc(st->n, 1);
            for (; taken && out < n && out < st->n; out++) {
                uint32_t best = UINT32_MAX;
                for (uint32_t i = 0; i < st->n; i++)
                    if (!taken[i] && (best == UINT32_MAX || st->s[i].count > st->s[best].count))
                        best = i;
                taken[best] = 1;
                reqs[out] = p->texts[st->s[best].to];
                probs[out] = (float)st->s[best].count / (float)st->total;
            }
            free(taken);
        }
    }
    pthread_mutex_unlock(&p->mu);
    return (int)out;
}
