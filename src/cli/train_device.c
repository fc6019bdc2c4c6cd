/* train_device.c - where `synor train` runs its replicas' matrix products:
 * the CPU workers (OpenBLAS), a CUDA GPU, an OpenCL device, or the CPU
 * workers and an OpenCL device at once (heterogeneous data parallel, the
 * all-reduce summing both kinds of replica), with the batch split evenly
 * or by the replicas' measured speed (--balance). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "common/common.h"

int cli_train_rows_parse(const char *v, cli_train_device *d)
{
    const char *p = v;
    d->nrows = 0;
    while (*p) {
        char part[16];
        size_t n = strcspn(p, ",");
        if (n == 0 || n >= sizeof part || d->nrows == 6)
            return cli_usage_error("train", "--rows %s: 1 to 6 counts of rows, comma-separated", v);
        memcpy(part, p, n);
        part[n] = 0;
        unsigned long long x;
        int r = cli_parse_uint("train", "--rows", part, 1, 1u << 20, &x);
        if (r != CLI_OK)
            return r;
        d->rows[d->nrows++] = (int)x;
        p += n;
        if (*p == ',' && !*++p)
            return cli_usage_error("train", "--rows %s: a trailing comma", v);
    }
    return d->nrows ? CLI_OK : cli_usage_error("train", "--rows: empty");
}

int cli_train_device_parse(const char *v, cli_train_device *d)
{
    cli_train_device keep = *d;
    *d = (cli_train_device){.balance = keep.balance, .nrows = keep.nrows};
    memcpy(d->rows, keep.rows, sizeof d->rows);
    if (!strcmp(v, "cpu"))
        return CLI_OK;
    if (!strcmp(v, "cuda") || !strcmp(v, "cpu,cuda")) {
        d->cuda = v[0] == 'c' && v[1] == 'p' ? 2 : 1;
        return CLI_OK;
    }
    const char *cl = v;
    d->opencl = 1;
    if (!strncmp(v, "cpu,", 4)) {
        cl = v + 4;
        d->opencl = 2;
    }
    if (strncmp(cl, "opencl", 6) || (cl[6] && cl[6] != ':'))
        return cli_usage_error("train",
                               "--device %s: cpu, cuda, cpu,cuda, opencl[:K] or cpu,opencl[:K]",
                               v);
    if (cl[6] == ':') {
        unsigned long long k;
        int r = cli_parse_uint("train", "--device opencl:K", cl + 7, 0, 63, &k);
        if (r != CLI_OK)
            return r;
        d->cl_index = (unsigned)k;
    }
    return CLI_OK;
}

int cli_train_device_setup(const cli_train_device *d, unsigned gpu, synor_trainer *t,
                           const synor_train_data *data, uint64_t seed)
{
    int n = synor_trainer_replicas(t), e;
    if ((d->opencl == 2 || d->cuda == 2) && n < 2)
        return synor__error(SYNOR_EINVAL, "--device cpu,%s needs 2 replicas or more (one on "
                                          "the device, the others on the CPU); there is "
                                          "%d (--replicas, --batch)",
                            d->cuda ? "cuda" : "opencl", n);
    if (d->cuda && (e = synor_trainer_use_cuda_replicas(t, gpu, d->cuda == 2 ? 1 : 0)))
        return e;
    if (d->opencl && (e = synor_trainer_use_opencl(t, d->cl_index, d->opencl == 2 ? 1 : 0)))
        return e;
    if (d->cuda || d->opencl) {
        synor_train_gpu_stats gs;
        synor_trainer_gpu_stats(t, &gs);
        if (d->opencl == 2 || d->cuda == 2)
            fprintf(stderr,
                    "synor train: replica %d's matrix products on %s (%s), replicas 0-%d's on "
                    "the CPU workers\n",
                    n - 1, gs.device, gs.product, n - 2);
        else
            fprintf(stderr, "synor train: matrix products on %s (%s)\n", gs.device, gs.product);
    }
    if (d->nrows) {
        if (d->balance)
            return synor__error(SYNOR_EINVAL, "--rows and --balance: one or the other");
        if (d->nrows != n)
            return synor__error(SYNOR_EINVAL, "--rows gives %d counts for %d replicas", d->nrows,
                                n);
        if ((e = synor_trainer_set_rows(t, d->rows)))
            return e;
    }
    if (!d->balance || n < 2)
        return 0;
    const synor_train_config *c = synor_trainer_config(t);
    int batch = synor_trainer_batch(t);
    int32_t *tokens = synor__malloc((size_t)batch * (size_t)(c->seq_len + 1) * sizeof(int32_t));
    if (!tokens)
        return synor__error(SYNOR_ENOMEM, "--balance: out of memory");
    synor_train_data_batch(data, seed, 0, batch, c->seq_len, tokens);
    double spr[8] = {0};
    int rows[8];
    e = synor_trainer_balance(t, tokens, 2, spr);
    synor__free(tokens);
    if (e)
        return e;
    synor_trainer_get_rows(t, rows);
    fprintf(stderr, "synor train: batch split by measured speed (--balance):");
    for (int r = 0; r < n; r++)
        fprintf(stderr, "%s replica %d (%s) %d rows at %.1f ms/row", r ? "," : "", r,
                synor_trainer_replica_on_device(t, r) ? "device" : "cpu", rows[r],
                spr[r] * 1e3);
    fprintf(stderr, "; --rows ");
    for (int r = 0; r < n; r++)
        fprintf(stderr, "%s%d", r ? "," : "", rows[r]);
    fprintf(stderr, " repeats it\n");
    return 0;
}
