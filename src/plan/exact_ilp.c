/* exact_ilp.c - the exact planner's step for P|prec|Cmax (identical
 * devices, no communication, integral times: the STG sets), between its
 * deepening and its branch and bound.
 *
 * First a heuristic, the serial schedule generation scheme: each ready
 * task by priority at the earliest time from its inputs at which fewer
 * than m tasks run throughout its length (gaps are filled), with random
 * priorities (the bottom level stretched by up to 30%, a fixed seed); a
 * schedule at the proven bound is optimal. Then (with GLPK only) a
 * time-indexed integer program, asked makespan by makespan from the proven
 * bound upwards, so the first feasible makespan is the optimum and each
 * infeasible one raises the bound; at every node of GLPK's search the
 * heuristic runs again with the relaxation's start times as priorities.
 *
 * The program for a trial makespan C (the "step" form of the time-indexed
 * formulation): y[j][t] = 1 when task j has started by time t, for t in
 * [ES_j, LS_j) (ES_j: its longest path from the entry; LS_j = C - its
 * bottom level); y = 0 before ES_j and 1 from LS_j on. Its rows:
 *   y[j][t - 1] <= y[j][t]                     (a start is a step)
 *   y[j][t] <= y[i][t - p_i]   for each edge i -> j  (j starts after i ends)
 *   sum_j (y[j][t] - y[j][t - p_j]) <= m       (at most m tasks run at t)
 * Its LP relaxation is that of the aggregated precedence form (x[j][t] =
 * y[j][t] - y[j][t - 1]) with two entries per precedence row. Capacity rows
 * are written only where more than m tasks could run.
 *
 * A solution becomes a schedule by list scheduling in the order of its
 * starts (ties: zero-length tasks first, then topological order), each task
 * of positive length on the device free first, at the later of that and its
 * inputs: at most m - 1 others run at its start in the solution, so one
 * device is free by then and no task starts later than in the solution.
 * Zero-length tasks need no device in the program; they are then given one
 * free at their time, and if none is (every device busy across it), the
 * solution is not turned into a schedule and only the bound below C
 * stands. Programs above ILP_MAX_COLS columns or ILP_MAX_NZ entries are not
 * tried. */
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/common.h"
#include "plan/plan_internal.h"

#if SYNOR_HAVE_GLPK
#include <glpk.h>
#endif

#define ILP_MAX_COLS 300000
#define ILP_MAX_NZ 3000000
#define ILP_MAX_TIME 1e6
#define ILP_RANDOM_TRIES 4096

typedef struct ilp {
    size_t n, m;          /* tasks, devices */
    long *p, *es, *tail;  /* length, earliest start, bottom level */
    size_t *topo_pos;
    long c;               /* the trial makespan */
    int *ia, *ja;         /* 1-based triplets for glp_load_matrix */
    double *ar, *rhs;
    size_t nz, cap_nz, rows, cap_rows;
    size_t *base;         /* per task: its first column - 1 */
    size_t cols;
    /* the heuristic (list scheduling by the relaxation's starts) */
    const synor_sched_problem *pb;
    double *est, *hfin;
    size_t *use;          /* tasks running at each time below h */
    long h;               /* the incumbent's makespan - 1 */
    long *hs;             /* its starts */
    long *bs, bms;        /* the shortest schedule it found, its makespan */
    int found;            /* a schedule within c */
} ilp;

#if SYNOR_HAVE_GLPK /* the program */
static int grow(ilp *g, size_t nz, size_t rows)
{
    if (g->nz + nz + 1 > g->cap_nz) {
        size_t cap = 2 * (g->nz + nz + 1) + 1024;
        int *ia = synor__realloc(g->ia, cap * sizeof *ia);
        if (ia)
            g->ia = ia;
        int *ja = ia ? synor__realloc(g->ja, cap * sizeof *ja) : NULL;
        if (ja)
            g->ja = ja;
        double *ar = ja ? synor__realloc(g->ar, cap * sizeof *ar) : NULL;
        if (!ar)
            return -1;
        g->ar = ar;
        g->cap_nz = cap;
    }
    if (g->rows + rows + 1 > g->cap_rows) {
        size_t cap = 2 * (g->rows + rows + 1) + 256;
        double *r = synor__realloc(g->rhs, cap * sizeof *r);
        if (!r)
            return -1;
        g->rhs = r;
        g->cap_rows = cap;
    }
    return 0;
}

/* Adds coef * y[j][t] to the open row (row g->rows + 1): a column, or a
 * constant moved to the right-hand side. */
static void term(ilp *g, size_t j, long t, double coef)
{
    long ls = g->c - g->tail[j];
    if (t < g->es[j])
        return;
    if (t >= ls) {
        g->rhs[g->rows + 1] -= coef;
        return;
    }
    g->nz++;
    g->ia[g->nz] = (int)(g->rows + 1);
    g->ja[g->nz] = (int)(g->base[j] + (size_t)(t - g->es[j]) + 1);
    g->ar[g->nz] = coef;
}

/* Closes the open row: kept if it has columns; 1 if it has none and
 * cannot hold (the program is infeasible). */
static int close_row(ilp *g, size_t nz_before)
{
    if (g->nz > nz_before) {
        g->rows++;
        return 0;
    }
    return g->rhs[g->rows + 1] < -1e-9;
}

static int open_row(ilp *g, double rhs, size_t nz)
{
    if (grow(g, nz, 1))
        return -1;
    g->rhs[g->rows + 1] = rhs;
    return 0;
}

/* Builds the rows for makespan g->c: 0, 1 infeasible without a search, or
 * -1 out of memory / too large. */
static int build(ilp *g, const synor_sched_problem *pb)
{
    size_t n = g->n;
    g->nz = g->rows = g->cols = 0;
    for (size_t j = 0; j < n; j++) {
        long ls = g->c - g->tail[j];
        if (ls < g->es[j])
            return 1;
        g->base[j] = g->cols;
        g->cols += (size_t)(ls - g->es[j]);
    }
    if (g->cols > ILP_MAX_COLS || (double)n * (double)g->c > 5e7)
        return -1;
    for (size_t j = 0; j < n; j++) { /* steps */
        for (long t = g->es[j] + 1; t < g->c - g->tail[j]; t++) {
            if (open_row(g, 0, 2))
                return -1;
            size_t z = g->nz;
            term(g, j, t - 1, 1);
            term(g, j, t, -1);
            if (close_row(g, z))
                return 1;
        }
    }
    for (size_t j = 0; j < n; j++) /* precedence */
        for (size_t e = pb->pred_off[j]; e < pb->pred_off[j + 1]; e++) {
            size_t i = pb->pred[e];
            long lsj = g->c - g->tail[j], lsi = g->c - g->tail[i];
            for (long t = g->es[j]; t < lsj && t - g->p[i] < lsi; t++) {
                if (open_row(g, 0, 2))
                    return -1;
                size_t z = g->nz;
                term(g, j, t, 1);
                term(g, i, t - g->p[i], -1);
                if (close_row(g, z))
                    return 1;
            }
        }
    for (long t = 0; t < g->c; t++) { /* capacity */
        size_t could = 0;
        for (size_t j = 0; j < n; j++)
            could += g->p[j] > 0 && g->es[j] <= t && t < g->c - g->tail[j] + g->p[j];
        if (could <= g->m)
            continue;
        if (open_row(g, (double)g->m, 2 * could))
            return -1;
        size_t z = g->nz;
        for (size_t j = 0; j < n; j++)
            if (g->p[j] > 0 && g->es[j] <= t && t < g->c - g->tail[j] + g->p[j]) {
                term(g, j, t, 1);
                term(g, j, t - g->p[j], -1);
            }
        if (close_row(g, z))
            return 1;
    }
    return g->nz > ILP_MAX_NZ ? -1 : 0;
}

#endif

typedef struct okey {
    long s;
    int pos0;
    size_t topo, task;
} okey;

static int by_start(const void *a, const void *b)
{
    const okey *x = a, *y = b;
    if (x->s != y->s)
        return x->s < y->s ? -1 : 1;
    if (x->pos0 != y->pos0)
        return x->pos0 < y->pos0 ? -1 : 1;
    return x->topo < y->topo ? -1 : x->topo > y->topo;
}

/* The schedule of a solution's starts s (see the top): 0, 1 when a
 * zero-length task finds no device, -1 out of memory. */
static int realize(const ilp *g, const synor_sched_problem *pb, const long *s, size_t *dev,
                   double *st, double *ft)
{
    size_t n = g->n, m = g->m;
    okey *k = synor__malloc((n ? n : 1) * sizeof *k);
    double *avail = synor__calloc(m, sizeof *avail);
    if (!k || !avail) {
        synor__free(k);
        synor__free(avail);
        return -1;
    }
    for (size_t j = 0; j < n; j++)
        k[j] = (okey){s[j], g->p[j] > 0, g->topo_pos[j], j};
    qsort(k, n, sizeof *k, by_start);
    for (size_t x = 0; x < n; x++) { /* tasks of positive length */
        size_t j = k[x].task, q = 0;
        double r = 0;
        for (size_t e = pb->pred_off[j]; e < pb->pred_off[j + 1]; e++)
            r = ft[pb->pred[e]] > r ? ft[pb->pred[e]] : r;
        st[j] = ft[j] = r;
        dev[j] = SIZE_MAX;
        if (!g->p[j])
            continue;
        for (size_t p = 1; p < m; p++)
            if (avail[p] < avail[q])
                q = p;
        st[j] = r > avail[q] ? r : avail[q];
        ft[j] = st[j] + (double)g->p[j];
        dev[j] = q;
        avail[q] = ft[j];
    }
    int rc = 0;
    for (size_t j = 0; j < n && !rc; j++) { /* zero-length: a device free at st[j] */
        if (g->p[j])
            continue;
        rc = 1;
        for (size_t q = 0; q < m && rc; q++) {
            int ok = 1;
            for (size_t i = 0; i < n && ok; i++)
                if (g->p[i] && dev[i] == q &&
                    ((st[i] < st[j] && st[j] < ft[i]) || (st[i] == st[j] && i < j)))
                    ok = 0;
            if (ok) {
                dev[j] = q;
                rc = 0;
            }
        }
    }
    synor__free(k);
    synor__free(avail);
    return rc;
}

static double seconds_to(const struct timespec *t_end)
{
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    double left = (double)(t_end->tv_sec - now.tv_sec) +
                  1e-9 * (double)(t_end->tv_nsec - now.tv_nsec);
    return left > 1e6 ? 1e6 : left;
}

/* The serial schedule generation scheme with priority est (the
 * relaxation's starts, or random ones; ties: the longer tail): each ready
 * task, least est first, at the earliest time from its inputs' arrival at
 * which fewer than m tasks run throughout its length (gaps are filled).
 * Records a schedule within g->c (g->found, starts in g->hs) and the
 * shortest one seen within g->h (g->bs, g->bms). */
static void heuristic(ilp *g)
{
    const synor_sched_problem *pb = g->pb;
    size_t n = g->n;
    memset(g->use, 0, (size_t)g->h * sizeof *g->use);
    for (size_t j = 0; j < n; j++)
        g->hfin[j] = -1; /* not placed */
    long ms = 0;
    for (size_t k = 0; k < n; k++) {
        size_t pick = SIZE_MAX;
        long r = 0;
        for (size_t j = 0; j < n; j++) {
            if (g->hfin[j] >= 0)
                continue;
            int ready = 1;
            for (size_t e = pb->pred_off[j]; e < pb->pred_off[j + 1] && ready; e++)
                ready = g->hfin[pb->pred[e]] >= 0;
            if (ready && (pick == SIZE_MAX || g->est[j] < g->est[pick] - 1e-9 ||
                          (g->est[j] < g->est[pick] + 1e-9 && g->tail[j] > g->tail[pick])))
                pick = j;
        }
        if (pick == SIZE_MAX)
            return; /* a cycle: cannot happen after the topological sort */
        for (size_t e = pb->pred_off[pick]; e < pb->pred_off[pick + 1]; e++)
            r = (long)g->hfin[pb->pred[e]] > r ? (long)g->hfin[pb->pred[e]] : r;
        long p = g->p[pick];
        while (p) { /* the first gap of length p from r */
            if (r + p > g->h)
                return; /* no shorter than the incumbent */
            long t = r;
            while (t < r + p && g->use[t] < g->m)
                t++;
            if (t == r + p)
                break;
            r = t + 1; /* full at t: after it */
        }
        for (long t = r; t < r + p; t++)
            g->use[t]++;
        g->hs[pick] = r;
        g->hfin[pick] = (double)(r + p);
        ms = r + p > ms ? r + p : ms;
    }
    if (ms < g->bms) {
        g->bms = ms;
        memcpy(g->bs, g->hs, n * sizeof *g->bs);
    }
    if (ms <= g->c)
        g->found = 1;
}

#if SYNOR_HAVE_GLPK
/* At each node with a relaxation solved: the heuristic on its starts; a
 * schedule within c, found by it or by GLPK, ends the search. */
static void callback(glp_tree *tree, void *info)
{
    ilp *g = info;
    int why = glp_ios_reason(tree);
    if (why == GLP_IHEUR) {
        glp_prob *lp = glp_ios_get_prob(tree);
        for (size_t j = 0; j < g->n; j++) {
            g->est[j] = (double)g->es[j];
            for (long t = g->es[j]; t < g->c - g->tail[j]; t++)
                g->est[j] += 1 - glp_get_col_prim(lp, (int)(g->base[j] + (size_t)(t - g->es[j]) + 1));
        }
        heuristic(g);
    }
    if (why == GLP_IBINGO || g->found)
        glp_ios_terminate(tree);
}

/* Solves the program for makespan g->c within t_end: 1 feasible (s holds
 * the starts), 0 infeasible, 2 stopped (time, size, or GLPK gave up), -1
 * out of memory. */
static int decide(ilp *g, const synor_sched_problem *pb, const struct timespec *t_end, long *s)
{
    int b = build(g, pb);
    if (b == 1)
        return 0;
    if (b)
        return g->cols > ILP_MAX_COLS || g->nz > ILP_MAX_NZ ||
                       (double)g->n * (double)g->c > 5e7
                   ? 2
                   : -1;
    double left = seconds_to(t_end);
    if (left < 0.001)
        return 2;
    int res = 2;
    if (g->cols) {
        glp_prob *lp = glp_create_prob();
        glp_set_obj_dir(lp, GLP_MIN);
        glp_add_cols(lp, (int)g->cols);
        for (size_t j = 0; j < g->n; j++) /* guide: the longest tails start first */
            for (long t = g->es[j]; t < g->c - g->tail[j]; t++) {
                int c = (int)(g->base[j] + (size_t)(t - g->es[j]) + 1);
                glp_set_col_kind(lp, c, GLP_BV);
                glp_set_obj_coef(lp, c, -(double)(1 + g->tail[j]));
            }
        if (g->rows) {
            glp_add_rows(lp, (int)g->rows);
            for (size_t r = 1; r <= g->rows; r++)
                glp_set_row_bnds(lp, (int)r, GLP_UP, 0, g->rhs[r]);
            glp_load_matrix(lp, (int)g->nz, g->ia, g->ja, g->ar);
        }
        glp_smcp sm;
        glp_init_smcp(&sm);
        sm.msg_lev = GLP_MSG_OFF;
        sm.presolve = GLP_ON;
        sm.tm_lim = (int)(left * 1000);
        int rc = glp_simplex(lp, &sm), st = rc ? 0 : glp_get_status(lp);
        if (rc == GLP_ENOPFS || (!rc && (st == GLP_NOFEAS || st == GLP_INFEAS)))
            res = 0; /* not even the relaxation */
        else if (!rc && st == GLP_OPT && (left = seconds_to(t_end)) >= 0.001) {
            glp_iocp parm;
            glp_init_iocp(&parm);
            parm.msg_lev = GLP_MSG_OFF;
            parm.cb_func = callback;
            parm.cb_info = g;
            parm.bt_tech = GLP_BT_DFS; /* dive for a schedule */
            parm.tm_lim = (int)(left * 1000);
            g->found = 0;
            rc = glp_intopt(lp, &parm);
            st = glp_mip_status(lp);
            if (g->found) /* the heuristic's schedule */
                memcpy(s, g->hs, g->n * sizeof *s);
            if (g->found || st == GLP_OPT || st == GLP_FEAS)
                res = 1;
            else if (!rc && st == GLP_NOFEAS)
                res = 0;
        }
        for (size_t j = 0; res == 1 && !g->found && j < g->n; j++) {
            long ls = g->c - g->tail[j];
            s[j] = ls;
            for (long t = g->es[j]; t < ls; t++)
                if (glp_mip_col_val(lp, (int)(g->base[j] + (size_t)(t - g->es[j]) + 1)) > 0.5) {
                    s[j] = t;
                    break;
                }
        }
        glp_delete_prob(lp);
    } else { /* every start is fixed and every row held */
        res = 1;
        for (size_t j = 0; j < g->n; j++)
            s[j] = g->es[j];
    }
    return res;
}
#else /* without GLPK: the heuristic alone, no program */
static int decide(ilp *g, const synor_sched_problem *pb, const struct timespec *t_end, long *s)
{
    (void)g, (void)pb, (void)t_end, (void)s;
    return 2;
}
#endif

/* Whether the problem is P|prec|Cmax with integer times (see the top). */
static int applies(const synor_sched_problem *pb)
{
    size_t n = pb->n_tasks, d = pb->n_devices;
    if (!n || !d || pb->n_items || pb->mem || pb->task_mem || (pb->group && pb->n_groups))
        return 0;
    for (size_t i = 0; i < n; i++) {
        double w = pb->exec[i * d];
        if (!(w >= 0) || w > ILP_MAX_TIME || w != floor(w))
            return 0;
        for (size_t p = 1; p < d; p++)
            if (pb->exec[i * d + p] != w)
                return 0;
        for (size_t e = pb->pred_off[i]; e < pb->pred_off[i + 1]; e++)
            for (size_t p = 0; p < d; p++)
                for (size_t q = 0; q < d; q++)
                    if (synor__edge_comm(pb, e, p, q) != 0)
                        return 0;
    }
    return 1;
}

int synor__exact_ilp_applies(const synor_sched_problem *pb)
{
    return applies(pb);
}

int synor__exact_ilp(const synor_sched_problem *pb, const struct timespec *t_end, size_t *dev,
                     double *st, double *ft, double *best, double *bound)
{
    if (!applies(pb) || !isfinite(*best) || *best > ILP_MAX_TIME)
        return 0;
    size_t n = pb->n_tasks;
    ilp g;
    memset(&g, 0, sizeof g);
    g.n = n;
    g.m = pb->n_devices;
    g.p = synor__calloc(n, sizeof *g.p);
    g.es = synor__calloc(n, sizeof *g.es);
    g.tail = synor__calloc(n, sizeof *g.tail);
    g.topo_pos = synor__calloc(n, sizeof *g.topo_pos);
    g.base = synor__calloc(n, sizeof *g.base);
    g.pb = pb;
    g.est = synor__calloc(n, sizeof *g.est);
    g.hfin = synor__calloc(n, sizeof *g.hfin);
    g.h = (long)*best - 1;
    g.use = synor__calloc((size_t)(g.h > 0 ? g.h : 1), sizeof *g.use);
    g.hs = synor__calloc(n, sizeof *g.hs);
    g.bs = synor__calloc(n, sizeof *g.bs);
    g.bms = LONG_MAX;
    size_t *topo = synor__calloc(n, sizeof *topo), *ndev = synor__calloc(n, sizeof *ndev);
    long *s = synor__calloc(n, sizeof *s);
    double *nst = synor__calloc(n, sizeof *nst), *nft = synor__calloc(n, sizeof *nft);
    int rc = 0;
    if (!g.p || !g.es || !g.tail || !g.topo_pos || !g.base || !g.est || !g.hfin || !g.use ||
        !g.hs || !g.bs || !topo || !ndev || !s || !nst || !nft) {
        rc = synor__error(SYNOR_ENOMEM, "out of memory");
        goto out;
    }
    if ((rc = synor__problem_topo(pb, topo)))
        goto out;
    for (size_t k = 0; k < n; k++) {
        size_t j = topo[k];
        g.topo_pos[j] = k;
        g.p[j] = (long)pb->exec[j * g.m];
        for (size_t e = pb->pred_off[j]; e < pb->pred_off[j + 1]; e++) {
            size_t i = pb->pred[e];
            if (g.es[i] + g.p[i] > g.es[j])
                g.es[j] = g.es[i] + g.p[i];
        }
    }
    for (size_t k = n; k-- > 0;) {
        size_t j = topo[k];
        g.tail[j] += g.p[j];
        for (size_t e = pb->pred_off[j]; e < pb->pred_off[j + 1]; e++) {
            size_t i = pb->pred[e];
            if (g.tail[j] > g.tail[i])
                g.tail[i] = g.tail[j]; /* plus p_i when i's turn comes */
        }
    }
    /* first, for up to a third of the time and ILP_RANDOM_TRIES tries, the
     * heuristic with random priorities (the tail, stretched by up to 30%; a
     * fixed seed): a schedule at the bound is optimal without the program */
    g.c = (long)ceil(*bound - 1e-9);
    double third = seconds_to(t_end) / 3;
    struct timespec t_rand;
    clock_gettime(CLOCK_MONOTONIC, &t_rand);
    t_rand.tv_sec += (time_t)third;
    t_rand.tv_nsec += (long)((third - floor(third)) * 1e9);
    if (t_rand.tv_nsec >= 1000000000L) {
        t_rand.tv_sec++;
        t_rand.tv_nsec -= 1000000000L;
    }
    unsigned long long rng = 0x9e3779b97f4a7c15ull;
    for (unsigned k = 0; k < ILP_RANDOM_TRIES && !g.found && (k & 63 || seconds_to(&t_rand) > 0);
         k++) {
        double amp = 0.3 * (double)(k % 8) / 7;
        for (size_t j = 0; j < n; j++) {
            rng = rng * 6364136223846793005ull + 1442695040888963407ull;
            double u = (double)(rng >> 11) / 9007199254740992.0;
            g.est[j] = -(double)g.tail[j] * (1 + amp * u);
        }
        heuristic(&g);
    }
#if SYNOR_HAVE_GLPK
    /* GLPK's state (per thread) is freed after if this call made it */
    int own_env = !g.found && glp_init_env() == 0;
#endif
    for (long c = (long)ceil(*bound - 1e-9); !g.found && c < (long)*best; c++) {
        g.c = c;
        int r = decide(&g, pb, t_end, s);
        if (r < 0) {
            rc = synor__error(SYNOR_ENOMEM, "out of memory");
            break;
        }
        if (r == 2)
            break;
        if (r == 0) { /* none within c */
            *bound = (double)(c + 1);
            continue;
        }
        *bound = (double)c; /* c - 1 is below the bound or infeasible */
        int z = realize(&g, pb, s, ndev, nst, nft);
        if (z < 0) {
            rc = synor__error(SYNOR_ENOMEM, "out of memory");
            break;
        }
        double ms = 0;
        for (size_t j = 0; j < n; j++)
            ms = nft[j] > ms ? nft[j] : ms;
        if (!z && ms < *best) { /* at most c, and nothing shorter: the optimum */
            memcpy(dev, ndev, n * sizeof *dev);
            memcpy(st, nst, n * sizeof *st);
            memcpy(ft, nft, n * sizeof *ft);
            *best = ms;
        }
        break;
    }
#if SYNOR_HAVE_GLPK
    if (own_env)
        glp_free_env();
#endif
    if (!rc && g.bms < (long)*best) { /* the heuristic's best: shorter (optimal at the bound) */
        int z = realize(&g, pb, g.bs, ndev, nst, nft);
        double ms = 0;
        for (size_t j = 0; j < n; j++)
            ms = nft[j] > ms ? nft[j] : ms;
        if (z < 0)
            rc = synor__error(SYNOR_ENOMEM, "out of memory");
        else if (!z && ms < *best) {
            memcpy(dev, ndev, n * sizeof *dev);
            memcpy(st, nst, n * sizeof *st);
            memcpy(ft, nft, n * sizeof *ft);
            *best = ms;
        }
    }
out:
    synor__free(g.p);
    synor__free(g.es);
    synor__free(g.tail);
    synor__free(g.topo_pos);
    synor__free(g.base);
    synor__free(g.est);
    synor__free(g.hfin);
    synor__free(g.use);
    synor__free(g.hs);
    synor__free(g.bs);
    synor__free(g.ia);
    synor__free(g.ja);
    synor__free(g.ar);
    synor__free(g.rhs);
    synor__free(topo);
    synor__free(ndev);
    synor__free(s);
    synor__free(nst);
    synor__free(nft);
    return rc;
}
