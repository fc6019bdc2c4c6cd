/* split.c - how the batch's rows are split over the replicas: evenly by
 * default (trainer.c), or as the caller says, or in proportion to each
 * replica's measured speed when the replicas run on different devices
 * (the CPU workers and an OpenCL device or GPU: heterogeneous data
 * parallel). The loss of every row is scaled by the whole batch, so the
 * summed gradient does not depend on the split beyond fp32 rounding. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "train/train_internal.h"

int synor_trainer_replica_on_device(const synor_trainer *t, int r)
{
    if (!t || r < 0 || r >= t->nrep)
        return 0;
    return t->rep[r].ocl || t->rep[r].cuda;
}

void synor_trainer_get_rows(const synor_trainer *t, int *rows)
{
    for (int r = 0; r < t->nrep; r++)
        rows[r] = t->rep[r].nrows;
}

int synor_trainer_set_rows(synor_trainer *t, const int *rows)
{
    if (!t || !rows)
        return synor__error(SYNOR_EINVAL, "synor_trainer_set_rows: NULL argument");
    long sum = 0;
    for (int r = 0; r < t->nrep; r++) {
        if (rows[r] < 1 || rows[r] > t->batch)
            return synor__error(SYNOR_EINVAL,
                                "synor_trainer_set_rows: replica %d gets %d rows (1 to the batch, "
                                "%d)",
                                r, rows[r], t->batch);
        sum += rows[r];
    }
    if (sum != t->batch)
        return synor__error(SYNOR_EINVAL,
                            "synor_trainer_set_rows: the rows sum to %ld, not the batch (%d)", sum,
                            t->batch);
    /* grow the activations first, so that a failure changes nothing */
    for (int r = 0; r < t->nrep; r++) {
        train_replica *rp = &t->rep[r];
        if (rows[r] <= rp->a.rows)
            continue;
        train_acts a = {0};
        int e = synor__train_acts_alloc(t, &a, rows[r]);
        if (e)
            return e;
        synor__train_acts_free(&rp->a);
        rp->a = a;
    }
    for (int r = 0, at = 0; r < t->nrep; r++) {
        t->rep[r].row0 = at;
        t->rep[r].nrows = rows[r];
        at += rows[r];
    }
    return 0;
}

/* rows[r] proportional to w[r] (> 0), each at least 1, summing to batch:
 * the floors, then the largest remainders (the first replica on a tie). */
static void apportion(const double *w, int n, int batch, int *rows)
{
    double sum = 0, frac[TRAIN_MAX_REPLICAS];
    for (int r = 0; r < n; r++)
        sum += w[r];
    int left = batch - n; /* one each first */
    int given = 0;
    for (int r = 0; r < n; r++) {
        double share = left * w[r] / sum;
        rows[r] = 1 + (int)floor(share);
        frac[r] = share - floor(share);
        given += rows[r];
    }
    while (given < batch) {
        int best = 0;
        for (int r = 1; r < n; r++)
            if (frac[r] > frac[best])
                best = r;
        rows[best]++;
        frac[best] = -1;
        given++;
    }
}

int synor_trainer_balance(synor_trainer *t, const int32_t *tokens, int rounds,
                          double *seconds_per_row)
{
    if (!t || !tokens)
        return synor__error(SYNOR_EINVAL, "synor_trainer_balance: NULL argument");
    if (rounds < 1 || rounds > 100)
        return synor__error(SYNOR_EINVAL, "synor_trainer_balance: rounds is %d (1 to 100)",
                            rounds);
    if (t->nrep == 1 || t->batch == t->nrep)
        return 0; /* nothing to move */
    /* the gradients of the last step are kept: the caller may read them */
    size_t P = t->lay.total;
    float *keep = synor__malloc(P * sizeof(float));
    if (!keep)
        return synor__error(SYNOR_ENOMEM, "synor_trainer_balance: out of memory");
    memcpy(keep, t->grad, P * sizeof(float));
    double grad_norm = t->grad_norm;
    int e = 0;
    for (int k = 0; k <= rounds && !e; k++) {
        double loss;
        if ((e = synor__trainer_run_step(t, tokens, NULL, 1, 0, &loss)))
            break;
        if (k == 0)
            continue; /* warm-up: kernels built, buffers allocated */
        double w[TRAIN_MAX_REPLICAS];
        int rows[TRAIN_MAX_REPLICAS];
        for (int r = 0; r < t->nrep; r++) {
            double s = t->rep[r].pass_s / t->rep[r].nrows;
            if (seconds_per_row)
                seconds_per_row[r] = s;
            w[r] = 1.0 / (s > 1e-9 ? s : 1e-9);
        }
        apportion(w, t->nrep, t->batch, rows);
        e = synor_trainer_set_rows(t, rows);
    }
    memcpy(t->grad, keep, P * sizeof(float));
    t->grad_norm = grad_norm;
    synor__free(keep);
    return e;
}
