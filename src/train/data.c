/* data.c - a tokenized corpus: the training and validation parts, the
 * batch of a step, the unigram baseline. */
#include <math.h>
#include <string.h>

#include "synor/tokenizer.h"
#include "train/train_internal.h"

int synor_train_data_from_text(const synor_tokenizer *tok, const char *text, size_t len,
                               double val_fraction, int seq_len, synor_train_data *out)
{
    memset(out, 0, sizeof *out);
    if (!(val_fraction > 0 && val_fraction < 1))
        return synor__error(SYNOR_EINVAL, "train data: validation fraction %g (must be in (0, 1))",
                            val_fraction);
    long n = synor_tokenizer_encode(tok, text, len, 0, 0, NULL, 0);
    if (n < 0)
        return (int)n;
    int32_t *ids = synor__malloc((size_t)(n ? n : 1) * sizeof(int32_t));
    if (!ids)
        return synor__error(SYNOR_ENOMEM, "train data: cannot hold %ld token ids", n);
    long m = synor_tokenizer_encode(tok, text, len, 0, 0, ids, (size_t)n);
    if (m != n) {
        synor__free(ids);
        return m < 0 ? (int)m : synor__error(SYNOR_EINVAL, "train data: encoding changed size");
    }
    size_t n_val = (size_t)((double)n * val_fraction);
    size_t n_train = (size_t)n - n_val;
    if (n_train < (size_t)seq_len + 1 || n_val < (size_t)seq_len + 1) {
        synor__free(ids);
        return synor__error(SYNOR_EINVAL,
                            "train data: %ld tokens make %zu for training and %zu for validation; "
                            "each needs at least seq_len + 1 = %d",
                            n, n_train, n_val, seq_len + 1);
    }
    *out = (synor_train_data){.ids = ids, .n = (size_t)n, .n_train = n_train};
    return 0;
}

void synor_train_data_free(synor_train_data *d)
{
    if (!d)
        return;
    synor__free(d->ids);
    memset(d, 0, sizeof *d);
}

static uint64_t mix(uint64_t z)
{
    z += 0x9e3779b97f4a7c15ull;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

void synor_train_data_batch(const synor_train_data *d, uint64_t seed, long step, int rows,
                            int seq_len, int32_t *out)
{
    size_t span = d->n_train - (size_t)seq_len; /* window starts 0 .. span - 1 */
    uint64_t s = mix(seed ^ mix((uint64_t)step));
    for (int r = 0; r < rows; r++) {
        s = mix(s);
        size_t at = (size_t)(s % span);
        memcpy(out + (size_t)r * (seq_len + 1), d->ids + at,
               (size_t)(seq_len + 1) * sizeof(int32_t));
    }
}

int synor_train_data_val(const synor_train_data *d, int max_rows, int seq_len, int32_t *out)
{
    size_t W = (size_t)seq_len + 1, avail = (d->n - d->n_train) / W;
    int rows = avail < (size_t)max_rows ? (int)avail : max_rows;
    /* spread over the whole validation part */
    for (int r = 0; r < rows; r++) {
        size_t at = d->n_train + (size_t)r * (avail / (size_t)rows) * W;
        memcpy(out + (size_t)r * W, d->ids + at, W * sizeof(int32_t));
    }
    return rows;
}

double synor_train_data_unigram(const synor_train_data *d, int vocab_size)
{
    double *count = synor__calloc((size_t)vocab_size, sizeof(double));
    if (!count)
        return NAN;
    for (size_t i = 0; i < d->n_train; i++)
        if (d->ids[i] >= 0 && d->ids[i] < vocab_size)
            count[d->ids[i]] += 1;
    double total = (double)d->n_train + vocab_size, h = 0;
    for (size_t i = d->n_train; i < d->n; i++) {
        int32_t id = d->ids[i];
        double c = id >= 0 && id < vocab_size ? count[id] : 0;
        h -= log((c + 1) / total);
    }
    synor__free(count);
    return h / (double)(d->n - d->n_train);
}
