/* test_runtime_cuda_mock.c - the runtime's CUDA backend against a test
 * double of the CUDA driver API and cuBLAS (tests/cuda_mock/: host memory,
 * no GPU), which CTest puts first on LD_LIBRARY_PATH. It checks the
 * backend's use of the API where no GPU is lent: symbols and their
 * versions, a current context on every thread that touches the device,
 * 2-D copies of strided tiles within their allocations, cuBLAS arguments,
 * kernel parameters, and that every device allocation is freed. What a real
 * GPU adds (the PTX compiled by the driver, real streams, real speed) is
 * tested by test_runtime_memory's cuda_kernels_match_the_cpu on a GPU. */
#include <cblas.h>
#include <dlfcn.h>
#include <math.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/kernels.h"
#include "synor/error.h"
#include "synor/runtime.h"
#include "synor/sim.h"
#include "test.h"

extern const char synor__cuda_ptx[];

/* The mock's counters. The test holds its own reference to the library,
 * so that it stays loaded (and counting) after a runtime unloads it. */
static void *mock_sym(const char *name)
{
    static void *lib;
    if (!lib)
        lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    return lib ? dlsym(lib, name) : NULL;
}

static _Atomic long *counter(const char *name)
{
    static _Atomic long none = -1;
    _Atomic long *p = mock_sym(name);
    return p ? p : &none;
}

static synor_runtime *make(uint64_t cuda_memory, unsigned *cu)
{
    synor_runtime_config c;
    synor_runtime_config_init(&c);
    c.cpu_workers = 1;
    c.pin_workers = 0;
    c.opencl = SYNOR_OPENCL_OFF;
    c.cuda = 1;
    c.cuda_memory = cuda_memory;
    c.trace = 1;
    synor_runtime *rt = NULL;
    if (synor_runtime_create(&c, &rt) < 0)
        return NULL;
    *cu = 0;
    for (unsigned i = 1; i < synor_runtime_device_count(rt) && !*cu; i++) {
        synor_runtime_device_info di;
        if (synor_runtime_device_get(rt, i, &di) == 0 && !strcmp(di.backend, "cuda"))
            *cu = i;
    }
    return rt;
}

static int mock_present(void)
{
    const char *p = getenv("LD_LIBRARY_PATH");
    return p && strstr(p, "cuda-mock");
}

TEST(the_mock_gpu_is_a_runtime_device)
{
    if (!mock_present())
        TEST_SKIP("run through ctest: LD_LIBRARY_PATH must name the CUDA mock");
    ASSERT_EQ(*counter("synor_mock_allocs"), 0);
    unsigned cu;
    synor_runtime *rt = make(0, &cu);
    ASSERT(rt);
    ASSERT(cu > 0);
    synor_runtime_device_info di;
    ASSERT_OK(synor_runtime_device_get(rt, cu, &di));
    ASSERT(strstr(di.product, "mock"));
    ASSERT_EQ(di.kind, SYNOR_KIND_GPU);
    ASSERT_EQ(di.memory_capacity, 64ull << 20);
    ASSERT(!di.stopped);
    ASSERT_STREQ(di.name, "cuda0");
    synor_runtime_destroy(rt);
    ASSERT_EQ(*counter("synor_mock_allocs"), 0);
}

/* Tiled SGEMM over the CPU and the mock GPU (strided tiles, 2-D copies,
 * cuBLAS), with 1 MiB of device memory so that replicas are evicted. */
static void tiled_gemm_case(uint64_t cuda_memory)
{
    if (!mock_present())
        TEST_SKIP("run through ctest: LD_LIBRARY_PATH must name the CUDA mock");
    unsigned cu;
    synor_runtime *rt = make(cuda_memory, &cu);
    ASSERT(rt && cu);
    ASSERT_OK(synor_runtime_start(rt));
    _Atomic long *copies = counter("synor_mock_copies"), *errors = counter("synor_mock_errors");
    ASSERT(copies && errors);
    _Atomic long *pinned = counter("synor_mock_pinned"), *pins = counter("synor_mock_pins_total");
    ASSERT(pinned && pins);
    long copies0 = *copies, errors0 = *errors, pins0 = *pins;
    size_t m = 1000, n = 700, k = 300;
    float *a = malloc(m * k * 4), *b = malloc(k * n * 4), *cm = calloc(m * n, 4),
          *ref = calloc(m * n, 4);
    ASSERT(a && b && cm && ref);
    for (size_t i = 0; i < m * k; i++)
        a[i] = (float)((i * 7919) % 1000) / 1000.0f - 0.5f;
    for (size_t i = 0; i < k * n; i++)
        b[i] = (float)((i * 104729) % 1000) / 1000.0f - 0.5f;
    cblas_sgemm(CblasColMajor, CblasNoTrans, CblasNoTrans, (int)m, (int)n, (int)k, 1.0f, a,
                (int)m, b, (int)k, 0.0f, ref, (int)m);
    ASSERT_OK(synor_tiled_sgemm(rt, m, n, k, 1.0f, a, m, b, k, 0.0f, cm, m, 128));
    double err = 0;
    for (size_t i = 0; i < m * n; i++)
        err = fmax(err, fabs(cm[i] - ref[i]));
    ASSERT(err < 1e-3);
    /* The GPU took part: tasks on its worker, copies through the mock. */
    synor_trace *tr = NULL;
    ASSERT_OK(synor_runtime_trace(rt, "gemm", &tr));
    size_t on_gpu = 0;
    for (size_t i = 0; i < tr->n_tasks; i++)
        on_gpu += !strcmp(tr->devices[tr->tasks[i].device].name, "cuda0");
    synor_trace_destroy(tr);
    ASSERT(on_gpu > 0);
    ASSERT(*copies > copies0);
    ASSERT_EQ(*errors, errors0); /* the backend never made a call the mock refused */
    /* A, B and C were page-locked for the copies and unlocked after. */
    ASSERT_EQ(*pins - pins0, 3);
    ASSERT_EQ(*pinned, 0);
    if (cuda_memory) {
        /* Placement decided where the tiles above ran (a loaded machine
         * may leave the GPU few of them): eight more GEMMs of their own
         * 64 KiB tiles, placed on the GPU, need 1.5 MiB there - more than
         * its 1 MiB, whatever the timing. */
        enum { T = 128, G = 8 };
        float *x = malloc((size_t)G * 3 * T * T * 4);
        ASSERT(x);
        synor_handle *h[G * 3];
        for (size_t i = 0; i < (size_t)G * 3 * T * T; i++)
            x[i] = (float)(i % 7) - 3.0f;
        for (int i = 0; i < G * 3; i++) {
            synor_handle_desc d = {.ptr = x + (size_t)i * T * T, .dtype = SYNOR_DTYPE_FP32,
                                   .ndim = 2, .shape = {T, T}, .ld = T};
            ASSERT_OK(synor_handle_register(rt, &d, &h[i]));
        }
        for (int g = 0; g < G; g++) {
            synor__gemm_args ga = {0, 0, 1.0, 0.0};
            synor_task_spec t = {.kernel = &synor__kernel_gemm, .ndata = 3,
                                 .data = {h[3 * g], h[3 * g + 1], h[3 * g + 2]},
                                 .mode = {SYNOR_ACCESS_R, SYNOR_ACCESS_R, SYNOR_ACCESS_W},
                                 .args = &ga, .args_size = sizeof ga, .device = cu + 1};
            ASSERT_OK(synor_task_submit(rt, &t));
        }
        ASSERT_OK(synor_runtime_wait_all(rt));
        for (int i = 0; i < G * 3; i++)
            ASSERT_OK(synor_handle_unregister(h[i]));
        float want[T * T];
        for (int g = 0; g < G; g++) {
            const float *ga = x + (size_t)3 * g * T * T, *gb = ga + T * T, *gc = gb + T * T;
            cblas_sgemm(CblasColMajor, CblasNoTrans, CblasNoTrans, T, T, T, 1.0f, ga, T, gb, T,
                        0.0f, want, T);
            for (int i = 0; i < T * T; i++)
                ASSERT(fabsf(gc[i] - want[i]) < 1e-3f);
        }
        free(x);
        synor_runtime_stats st;
        synor_runtime_get_stats(rt, &st);
        ASSERT(st.evictions > 0);
    }
    free(a);
    free(b);
    free(cm);
    free(ref);
    synor_runtime_destroy(rt);
    ASSERT_EQ(*counter("synor_mock_allocs"), 0); /* every device buffer freed */
}

TEST(tiled_sgemm_on_the_cpu_and_the_mock_gpu_matches_blas) { tiled_gemm_case(0); }

/* Tasks of the trace by op ("gemm", "potrf", ...; NULL = all) that ran on
 * the GPU, and in all. */
static void count_on_gpu(synor_runtime *rt, const char *op, size_t *on_gpu, size_t *all)
{
    synor_trace *tr = NULL;
    *on_gpu = *all = 0;
    if (synor_runtime_trace(rt, "on", &tr) < 0)
        return;
    for (size_t i = 0; i < tr->n_tasks; i++) {
        if (op && strcmp(tr->tasks[i].op, op))
            continue;
        (*all)++;
        *on_gpu += !strcmp(tr->devices[tr->tasks[i].device].name, "cuda0");
    }
    synor_trace_destroy(tr);
}

/* synor_tiled_sgemm_on / spotrf_on (what synor agent runs for a task
 * claimed for a GPU): GEMM tiles all on the device named, the Cholesky's
 * CPU-only kernels on the CPU, the results those of BLAS; on the host,
 * nothing on the GPU; a device that does not exist is refused. */
TEST(tiled_sgemm_and_spotrf_on_a_device_run_there)
{
    if (!mock_present())
        TEST_SKIP("run through ctest: LD_LIBRARY_PATH must name the CUDA mock");
    enum { M = 300, N = 200, K = 100, NB = 64, P = 256 };
    float *a = malloc(M * K * 4), *b = malloc(K * N * 4), *c = calloc(M * N, 4),
          *ref = calloc(M * N, 4), *s = malloc(P * P * 4), *l = malloc(P * P * 4);
    ASSERT(a && b && c && ref && s && l);
    for (size_t i = 0; i < (size_t)M * K; i++)
        a[i] = (float)((i * 7919) % 1000) / 1000.0f - 0.5f;
    for (size_t i = 0; i < (size_t)K * N; i++)
        b[i] = (float)((i * 104729) % 1000) / 1000.0f - 0.5f;
    cblas_sgemm(CblasColMajor, CblasNoTrans, CblasNoTrans, M, N, K, 1.0f, a, M, b, K, 0.0f, ref,
                M);
    for (int i = 0; i < P; i++) /* symmetric, diagonally dominant: positive definite */
        for (int j = 0; j < P; j++)
            s[i + j * P] = i == j ? (float)P : 1.0f / (float)(1 + (i + j) % 5);
    for (int dev_is_gpu = 1; dev_is_gpu >= 0; dev_is_gpu--) {
        unsigned cu;
        synor_runtime *rt = make(0, &cu);
        ASSERT(rt && cu);
        ASSERT_OK(synor_runtime_start(rt));
        unsigned dev = dev_is_gpu ? cu : 0;
        ASSERT_OK(synor_tiled_sgemm_on(rt, dev, M, N, K, 1.0f, a, M, b, K, 0.0f, c, M, NB));
        for (size_t i = 0; i < (size_t)M * N; i++)
            ASSERT(fabsf(c[i] - ref[i]) < 1e-3f);
        size_t on_gpu, all;
        count_on_gpu(rt, NULL, &on_gpu, &all);
        ASSERT_EQ(all, 5u * 4u * 2u); /* tiles of C x tiles along k */
        ASSERT_EQ(on_gpu, dev_is_gpu ? all : 0);
        synor_runtime_destroy(rt);

        rt = make(0, &cu);
        ASSERT(rt);
        ASSERT_OK(synor_runtime_start(rt));
        memcpy(l, s, (size_t)P * P * 4);
        ASSERT_OK(synor_tiled_spotrf_on(rt, dev, P, l, P, NB));
        /* L L^T = S on the lower triangle */
        for (int i = 0; i < P; i++)
            for (int j = 0; j <= i; j++) {
                double x = 0;
                for (int q = 0; q <= j; q++)
                    x += (double)l[i + q * P] * l[j + q * P];
                ASSERT(fabs(x - s[i + j * P]) < 1e-2);
            }
        size_t g_gpu, g_all, o_gpu, o_all;
        count_on_gpu(rt, "gemm", &g_gpu, &g_all);
        count_on_gpu(rt, NULL, &o_gpu, &o_all);
        ASSERT_EQ(g_all, 4u); /* 4 x 4 tiles: sum over k of C(nt-k-1, 2) = 3 + 1 */
        ASSERT_EQ(g_gpu, dev_is_gpu ? g_all : 0);
        ASSERT_EQ(o_gpu, g_gpu); /* potrf, trsm, syrk: on the CPU */
        ASSERT_EQ(synor_tiled_spotrf_on(rt, 99, P, l, P, NB), SYNOR_EINVAL);
        ASSERT(strstr(synor_errmsg(), "device 99"));
        synor_runtime_destroy(rt);
    }
    ASSERT_EQ(*counter("synor_mock_allocs"), 0);
    free(a), free(b), free(c), free(ref), free(s), free(l);
}
TEST(tiled_sgemm_with_a_small_device_memory_evicts_and_matches) { tiled_gemm_case(1 << 20); }

/* cfg.cuda_staging: every copy goes through the page-locked buffers, in
 * chunks (1000 bytes here: rows of 400 bytes are split across chunks),
 * none through cuMemcpy2D; strided tiles come back right. */
TEST(staged_copies_through_page_locked_buffers)
{
    if (!mock_present())
        TEST_SKIP("run through ctest: LD_LIBRARY_PATH must name the CUDA mock");
    synor_runtime_config c;
    synor_runtime_config_init(&c);
    c.cpu_workers = 1;
    c.pin_workers = 0;
    c.opencl = SYNOR_OPENCL_OFF;
    c.cuda = 1;
    c.cuda_staging = 1000;
    synor_runtime *rt = NULL;
    ASSERT_OK(synor_runtime_create(&c, &rt));
    unsigned cu = 0;
    for (unsigned i = 1; i < synor_runtime_device_count(rt) && !cu; i++) {
        synor_runtime_device_info di;
        if (synor_runtime_device_get(rt, i, &di) == 0 && !strcmp(di.backend, "cuda"))
            cu = i;
    }
    ASSERT(cu > 0);
    ASSERT_EQ(*counter("synor_mock_host_allocs"), 2);
    long copies0 = *counter("synor_mock_copies"), async0 = *counter("synor_mock_async_copies");
    long errors0 = *counter("synor_mock_errors");
    enum { T = 100, LD = 103, G = 3 };
    float *x = malloc((size_t)G * 3 * LD * T * 4);
    ASSERT(x);
    for (size_t i = 0; i < (size_t)G * 3 * LD * T; i++)
        x[i] = (float)(i % 11) - 5.0f;
    synor_handle *h[G * 3];
    for (int i = 0; i < G * 3; i++) {
        synor_handle_desc d = {.ptr = x + (size_t)i * LD * T, .dtype = SYNOR_DTYPE_FP32,
                               .ndim = 2, .shape = {T, T}, .ld = LD};
        ASSERT_OK(synor_handle_register(rt, &d, &h[i]));
    }
    ASSERT_OK(synor_runtime_start(rt));
    for (int g = 0; g < G; g++) {
        synor__gemm_args ga = {0, 0, 1.0, 0.0};
        synor_task_spec t = {.kernel = &synor__kernel_gemm, .ndata = 3,
                             .data = {h[3 * g], h[3 * g + 1], h[3 * g + 2]},
                             .mode = {SYNOR_ACCESS_R, SYNOR_ACCESS_R, SYNOR_ACCESS_W},
                             .args = &ga, .args_size = sizeof ga, .device = cu + 1};
        ASSERT_OK(synor_task_submit(rt, &t));
    }
    ASSERT_OK(synor_runtime_wait_all(rt));
    for (int i = 0; i < G * 3; i++)
        ASSERT_OK(synor_handle_unregister(h[i]));
    float *want = malloc((size_t)T * T * 4);
    ASSERT(want);
    for (int g = 0; g < G; g++) {
        const float *ga = x + (size_t)3 * g * LD * T, *gb = ga + LD * T;
        const float *gc = gb + LD * T;
        cblas_sgemm(CblasColMajor, CblasNoTrans, CblasNoTrans, T, T, T, 1.0f, ga, LD, gb, LD,
                    0.0f, want, T);
        for (int j = 0; j < T; j++)
            for (int i = 0; i < T; i++)
                ASSERT(fabsf(gc[(size_t)j * LD + i] - want[(size_t)j * T + i]) < 1e-3f);
    }
    /* 2 inputs up, 1 result down a GEMM, each of 40 000 bytes in 1000-byte chunks */
    ASSERT(*counter("synor_mock_async_copies") - async0 >= (long)G * 3 * 40);
    ASSERT_EQ(*counter("synor_mock_copies"), copies0);
    ASSERT_EQ(*counter("synor_mock_errors"), errors0);
    free(want);
    free(x);
    synor_runtime_destroy(rt);
    ASSERT_EQ(*counter("synor_mock_host_allocs"), 0);
    ASSERT_EQ(*counter("synor_mock_allocs"), 0);
}

static synor_handle *vec(synor_runtime *rt, float *p, size_t n)
{
    synor_handle_desc d = {.ptr = p, .dtype = SYNOR_DTYPE_FP32, .ndim = 1, .shape = {n}};
    synor_handle *h = NULL;
    return synor_handle_register(rt, &d, &h) == 0 ? h : NULL;
}

TEST(element_wise_kernels_on_the_mock_gpu_match_the_cpu)
{
    if (!mock_present())
        TEST_SKIP("run through ctest: LD_LIBRARY_PATH must name the CUDA mock");
    unsigned cu;
    synor_runtime *rt = make(0, &cu);
    ASSERT(rt && cu);
    ASSERT_OK(synor_runtime_start(rt));
    _Atomic long *launches = counter("synor_mock_launches"), *errors = counter("synor_mock_errors");
    long l0 = *launches, e0 = *errors;
    enum { N = 100003 };
    static float x[N], yg[N], yc[N];
    for (int i = 0; i < N; i++)
        x[i] = (float)(i % 2000) / 200.0f - 5.0f;
    const synor_kernel *ks[] = {&synor__kernel_relu_x, &synor__kernel_gelu_x,
                                &synor__kernel_silu_x};
    for (int k = 0; k < 3; k++) {
        synor_handle *hx = vec(rt, x, N), *hg = vec(rt, yg, N), *hc = vec(rt, yc, N);
        ASSERT(hx && hg && hc);
        synor_task_spec t = {.kernel = ks[k], .priority = SYNOR_PRIORITY_NORMAL, .ndata = 2,
                             .data = {hx, hg}, .mode = {SYNOR_ACCESS_R, SYNOR_ACCESS_W},
                             .device = cu + 1};
        ASSERT_OK(synor_task_submit(rt, &t));
        t.data[1] = hc;
        t.device = 1;
        ASSERT_OK(synor_task_submit(rt, &t));
        ASSERT_OK(synor_runtime_wait_all(rt));
        ASSERT_OK(synor_handle_unregister(hx));
        ASSERT_OK(synor_handle_unregister(hg));
        ASSERT_OK(synor_handle_unregister(hc));
        for (int i = 0; i < N; i++)
            ASSERT(fabsf(yg[i] - yc[i]) <= 1e-6f * (1.0f + fabsf(yc[i])));
    }
    /* With PTX (nvcc worked at build time) the kernels ran on the mock GPU;
     * without it, the tasks failed over to the CPU. */
    ASSERT_EQ(*launches - l0, synor__cuda_ptx[0] ? 3 : 0);
    ASSERT_EQ(*errors, e0);
    synor_runtime_destroy(rt);
    ASSERT_EQ(*counter("synor_mock_allocs"), 0);
}

static synor_handle *mat(synor_runtime *rt, float *p, size_t n)
{
    synor_handle_desc d = {.ptr = p, .dtype = SYNOR_DTYPE_FP32, .ndim = 2, .shape = {n, n}, .ld = n};
    synor_handle *h = NULL;
    return synor_handle_register(rt, &d, &h) == 0 ? h : NULL;
}

/* Two mock GPUs with peer access: C = A B on cuda0, then D = C B on cuda1;
 * C moves GPU to GPU with cuMemcpyPeer, which the mock refuses unless the
 * backend enabled peer access for cuda1's context. */
TEST(two_gpus_exchange_data_by_the_peer_path)
{
    if (!mock_present())
        TEST_SKIP("run through ctest: LD_LIBRARY_PATH must name the CUDA mock");
    int *ndev = mock_sym("synor_mock_devices");
    ASSERT(ndev && *ndev == 1);
    *ndev = 2;
    unsigned cu;
    synor_runtime *rt = make(0, &cu);
    ASSERT(rt && cu);
    ASSERT_EQ(synor_runtime_device_count(rt), cu + 2); /* cpu, cuda0, cuda1 */
    ASSERT_OK(synor_runtime_start(rt));
    _Atomic long *peer = counter("synor_mock_peer_copies"), *errors = counter("synor_mock_errors");
    long p0 = *peer, e0 = *errors;
    enum { N = 96 };
    static float a[N * N], b[N * N], c[N * N], d[N * N], ref1[N * N], ref2[N * N];
    for (size_t i = 0; i < N * N; i++) {
        a[i] = (float)((i * 7919) % 1000) / 1000.0f - 0.5f;
        b[i] = (float)((i * 104729) % 1000) / 1000.0f - 0.5f;
    }
    synor_handle *ha = mat(rt, a, N), *hb = mat(rt, b, N), *hc = mat(rt, c, N),
                 *hd = mat(rt, d, N);
    ASSERT(ha && hb && hc && hd);
    synor__gemm_args ga = {0, 0, 1.0, 0.0};
    synor_task_spec t = {.kernel = &synor__kernel_gemm, .priority = SYNOR_PRIORITY_NORMAL,
                         .ndata = 3, .data = {ha, hb, hc},
                         .mode = {SYNOR_ACCESS_R, SYNOR_ACCESS_R, SYNOR_ACCESS_W},
                         .args = &ga, .args_size = sizeof ga, .device = cu + 1};
    ASSERT_OK(synor_task_submit(rt, &t));
    t.data[0] = hc;
    t.data[2] = hd;
    t.device = cu + 2;
    ASSERT_OK(synor_task_submit(rt, &t));
    ASSERT_OK(synor_runtime_wait_all(rt));
    synor_runtime_stats st;
    synor_runtime_get_stats(rt, &st);
    ASSERT_EQ(st.path_transfers[SYNOR_PATH_PEER], 1);
    ASSERT_EQ(st.path_transfers[SYNOR_PATH_MEDIATED], 0);
    ASSERT_EQ(*peer - p0, 1);
    ASSERT_EQ(*errors, e0);
    synor_trace *tr = NULL;
    ASSERT_OK(synor_runtime_trace(rt, "peer", &tr));
    size_t peers = 0;
    for (size_t i = 0; i < tr->n_transfers; i++)
        peers += !strcmp(tr->transfers[i].path, "peer") &&
                 !strcmp(tr->transfers[i].link, "cuda0->cuda1");
    synor_trace_destroy(tr);
    ASSERT_EQ(peers, 1);
    ASSERT_OK(synor_handle_unregister(ha));
    ASSERT_OK(synor_handle_unregister(hb));
    ASSERT_OK(synor_handle_unregister(hc));
    ASSERT_OK(synor_handle_unregister(hd));
    cblas_sgemm(CblasColMajor, CblasNoTrans, CblasNoTrans, N, N, N, 1.0f, a, N, b, N, 0.0f, ref1, N);
    cblas_sgemm(CblasColMajor, CblasNoTrans, CblasNoTrans, N, N, N, 1.0f, ref1, N, b, N, 0.0f, ref2,
                N);
    for (size_t i = 0; i < N * N; i++)
        ASSERT(fabsf(d[i] - ref2[i]) < 1e-3f);
    synor_runtime_destroy(rt);
    *ndev = 1;
    ASSERT_EQ(*counter("synor_mock_allocs"), 0);
}

TEST_MAIN(the_mock_gpu_is_a_runtime_device, tiled_sgemm_on_the_cpu_and_the_mock_gpu_matches_blas,
          tiled_sgemm_and_spotrf_on_a_device_run_there,
          tiled_sgemm_with_a_small_device_memory_evicts_and_matches,
          staged_copies_through_page_locked_buffers,
          element_wise_kernels_on_the_mock_gpu_match_the_cpu, two_gpus_exchange_data_by_the_peer_path)
