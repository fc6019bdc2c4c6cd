/* bench_train.c - training throughput of the trainer (synor/train.h): full
 * iterations (forward, loss, backward, all-reduce, clipping, AdamW) on
 * random tokens, timed one by one; prints one JSON line shaped like
 * bench/train_torch.py's, so the two are compared side by side
 * (bench/run_train_bench.sh, docs/BENCHMARKS.md "Training").
 *
 *   bench_train [--dim 288] [--hidden 768] [--layers 6] [--heads 6]
 *               [--kv-heads 6] [--vocab 512] [--seq 256] [--batch 8]
 *               [--threads 2] [--replicas 0] [--steps 20] [--warmup 3]
 *               [--shared 1] [--cuda 0|1] [--opencl 0|1|2] [--cl-device K]
 *               [--balance 0|1]
 *
 * --cuda 1: the products on the first CUDA GPU (synor_trainer_use_cuda);
 * the JSON line then has "device":"cuda". --opencl 1: every replica's
 * products on the first OpenCL device, CPU devices such as PoCL's included
 * (synor_trainer_use_opencl; "device":"opencl"); --opencl 2: the last
 * replica's there, the others on the CPU workers ("device":"cpu+opencl").
 * The runtime then has the device's worker beside --threads CPU workers,
 * so --replicas 0 means threads + 1. --balance 1: the batch split by the
 * replicas' measured speed (synor_trainer_balance, before the warm-up);
 * the split is printed on stderr.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench_time.h"
#include "synor.h"

int main(int argc, char **argv)
{
    synor_train_config c = {.dim = 288,
                            .hidden_dim = 768,
                            .n_layers = 6,
                            .n_heads = 6,
                            .n_kv_heads = 6,
                            .vocab_size = 512,
                            .seq_len = 256,
                            .shared_classifier = 1};
    int batch = 8, threads = 2, replicas = 0, steps = 20, warmup = 3, cuda = 0, opencl = 0,
        balance = 0, cl_device = 0;
    for (int i = 1; i + 1 < argc; i += 2) {
        const char *a = argv[i];
        int v = atoi(argv[i + 1]);
        int *f = !strcmp(a, "--dim")        ? &c.dim
                 : !strcmp(a, "--hidden")   ? &c.hidden_dim
                 : !strcmp(a, "--layers")   ? &c.n_layers
                 : !strcmp(a, "--heads")    ? &c.n_heads
                 : !strcmp(a, "--kv-heads") ? &c.n_kv_heads
                 : !strcmp(a, "--vocab")    ? &c.vocab_size
                 : !strcmp(a, "--seq")      ? &c.seq_len
                 : !strcmp(a, "--batch")    ? &batch
                 : !strcmp(a, "--threads")  ? &threads
                 : !strcmp(a, "--replicas") ? &replicas
                 : !strcmp(a, "--steps")    ? &steps
                 : !strcmp(a, "--warmup")   ? &warmup
                 : !strcmp(a, "--shared")   ? &c.shared_classifier
                 : !strcmp(a, "--cuda")     ? &cuda
                 : !strcmp(a, "--opencl")   ? &opencl
                 : !strcmp(a, "--balance")  ? &balance
                 : !strcmp(a, "--cl-device") ? &cl_device
                                            : NULL;
        if (!f || v < 0) {
            fprintf(stderr, "bench_train: bad option %s %s\n", a, argv[i + 1]);
            return 2;
        }
        *f = v;
    }
    synor_runtime_config rc;
    synor_runtime_config_init(&rc);
    rc.cpu_workers = (unsigned)threads;
    rc.opencl = opencl ? SYNOR_OPENCL_ALL : SYNOR_OPENCL_OFF;
    rc.cuda = cuda != 0;
    synor_runtime *rt = NULL;
    synor_trainer *t = NULL;
    if (synor_runtime_create(&rc, &rt) || synor_runtime_start(rt) ||
        synor_trainer_create(rt, &c, batch, replicas, &t) ||
        (cuda && synor_trainer_use_cuda(t, 0)) ||
        (opencl && synor_trainer_use_opencl(t, (unsigned)cl_device, opencl == 2 ? 1 : 0))) {
        fprintf(stderr, "bench_train: %s\n", synor_errmsg());
        return 1;
    }
    synor_trainer_init_params(t, 1);
    size_t W = (size_t)c.seq_len + 1;
    int32_t *tok = malloc((size_t)batch * W * sizeof(int32_t));
    double *dt = malloc((size_t)(steps > 0 ? steps : 1) * sizeof(double));
    uint64_t s = 42;
    synor_train_adamw o;
    synor_train_adamw_init(&o, steps + warmup);
    if (balance) {
        for (size_t i = 0; i < (size_t)batch * W; i++) {
            s = s * 6364136223846793005ull + 1442695040888963407ull;
            tok[i] = (int32_t)((s >> 33) % (uint64_t)c.vocab_size);
        }
        int rows[8];
        double spr[8];
        if (synor_trainer_balance(t, tok, 2, spr)) {
            fprintf(stderr, "bench_train: %s\n", synor_errmsg());
            return 1;
        }
        synor_trainer_get_rows(t, rows);
        fprintf(stderr, "bench_train: split");
        for (int r = 0; r < synor_trainer_replicas(t); r++)
            fprintf(stderr, " %d%s (%.2f ms/row)", rows[r],
                    synor_trainer_replica_on_device(t, r) ? "@dev" : "@cpu", spr[r] * 1e3);
        fprintf(stderr, "\n");
    }
    for (int k = 0; k < warmup + steps; k++) {
        for (size_t i = 0; i < (size_t)batch * W; i++) {
            s = s * 6364136223846793005ull + 1442695040888963407ull;
            tok[i] = (int32_t)((s >> 33) % (uint64_t)c.vocab_size);
        }
        double t0 = now();
        if (synor_trainer_step(t, tok, &o, NULL)) {
            fprintf(stderr, "bench_train: %s\n", synor_errmsg());
            return 1;
        }
        if (k >= warmup)
            dt[k - warmup] = now() - t0;
    }
    qsort(dt, (size_t)steps, sizeof *dt, cmp_d);
    double med = dt[steps / 2];
    printf("{\"peer\":\"synor\",\"device\":\"%s\",\"threads\":%d,\"replicas\":%d,\"tokens_per_step\":%d,"
           "\"step_s_median\":%.6f,\"step_s_min\":%.6f,\"step_s_max\":%.6f,"
           "\"tokens_per_s\":%.1f,\"params\":%zu}\n",
           cuda ? "cuda" : opencl == 1 ? "opencl" : opencl ? "cpu+opencl" : "cpu", threads,
           synor_trainer_replicas(t), batch * c.seq_len, med, dt[0], dt[steps - 1],
           batch * c.seq_len / med, synor_train_param_count(&c));
    if (cuda || opencl) {
        synor_train_gpu_stats g;
        synor_trainer_gpu_stats(t, &g);
        fprintf(stderr,
                "bench_train: device %s (%s): %llu SGEMM calls, %.1f MiB up, %.1f MiB down\n",
                g.device, g.product, (unsigned long long)g.products, (double)g.bytes_up / 1048576,
                (double)g.bytes_down / 1048576);
    }
    free(tok);
    free(dt);
    synor_trainer_destroy(t);
    synor_runtime_destroy(rt);
    return 0;
}
