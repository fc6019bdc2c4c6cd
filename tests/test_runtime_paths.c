/* test_runtime_paths.c - the transfer paths of the memory manager (seed 001
 * §4.1): host, unified, peer-to-peer and CPU-mediated copies, each counted
 * in the stats and named in the trace, on real OpenCL devices.
 *
 * Two OpenCL devices in one context are needed for the peer path: PoCL
 * gives them with POCL_DEVICES="pthread pthread" (two CPU devices, each a
 * memory space of its own for the runtime). The variable is set here before
 * the first OpenCL call unless the caller set it. The CPU-mediated path
 * joins the synthetic test GPU (memory of its own, no peer path to anyone)
 * and an OpenCL device. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/kernels.h"
#include "synor/error.h"
#include "synor/runtime.h"
#include "synor/sim.h"
#include "test.h"

/* Up to 2 OpenCL devices (indices into the runtime's devices) and the test
 * GPU, if configured. */
typedef struct rig {
    synor_runtime *rt;
    unsigned cl[2], ncl, gpu;
} rig;

static int rig_make(rig *r, uint64_t opencl_memory, uint64_t test_gpu_memory, int prefetch)
{
    memset(r, 0, sizeof *r);
    synor_runtime_config c;
    synor_runtime_config_init(&c);
    c.cpu_workers = 1;
    c.pin_workers = 0;
    c.opencl = SYNOR_OPENCL_ALL;
    c.opencl_memory = opencl_memory;
    c.test_gpu_workers = test_gpu_memory ? 1 : 0;
    c.test_gpu_memory = test_gpu_memory;
    c.cuda = 0;
    c.trace = 1;
    c.prefetch = prefetch;
    if (synor_runtime_create(&c, &r->rt) < 0)
        return -1;
    for (unsigned i = 1; i < synor_runtime_device_count(r->rt); i++) {
        synor_runtime_device_info di;
        if (synor_runtime_device_get(r->rt, i, &di) < 0 || di.stopped)
            continue;
        if (!strcmp(di.backend, "opencl") && r->ncl < 2)
            r->cl[r->ncl++] = i;
        if (!strcmp(di.backend, "test"))
            r->gpu = i;
    }
    return synor_runtime_start(r->rt);
}

static synor_handle *vec(synor_runtime *rt, float *p, size_t n)
{
    synor_handle_desc d = {.ptr = p, .dtype = SYNOR_DTYPE_FP32, .ndim = 1, .shape = {n}};
    synor_handle *h = NULL;
    return synor_handle_register(rt, &d, &h) == 0 ? h : NULL;
}

static void submit(synor_runtime *rt, const synor_kernel *k, synor_handle *x, synor_handle *y,
                   unsigned device)
{
    synor_task_spec t = {.kernel = k, .priority = SYNOR_PRIORITY_NORMAL, .ndata = 2,
                         .data = {x, y}, .mode = {SYNOR_ACCESS_R, SYNOR_ACCESS_W},
                         .device = device + 1};
    ASSERT_OK(synor_task_submit(rt, &t));
}

static float relu(float v) { return v > 0 ? v : 0.0f; }
static float gelu(float v)
{
    return 0.5f * v * (1.0f + tanhf(0.7978845608f * (v + 0.044715f * v * v * v)));
}

static void fill(float *x, size_t n)
{
    for (size_t i = 0; i < n; i++)
        x[i] = (float)((i * 7919) % 2000) / 200.0f - 5.0f;
}

static int near(float a, float b) { return fabsf(a - b) <= 1e-5f * (1.0f + fabsf(b)); }

/* Transfers of the trace with this path (and link, unless NULL). */
static size_t traced(synor_runtime *rt, const char *path, const char *link)
{
    synor_trace *tr = NULL;
    if (synor_runtime_trace(rt, "paths", &tr) < 0)
        return (size_t)-1;
    size_t n = 0;
    for (size_t i = 0; i < tr->n_transfers; i++)
        n += tr->transfers[i].path && !strcmp(tr->transfers[i].path, path) &&
             (!link || !strcmp(tr->transfers[i].link, link));
    synor_trace_destroy(tr);
    return n;
}

static void pocl_two_devices(void)
{
    setenv("POCL_DEVICES", "pthread pthread", 0); /* before any OpenCL call */
}

/* Skips (after destroying the runtime) unless there are n OpenCL devices. */
#define NEED_OPENCL(r, n)                                                                    \
    do {                                                                                     \
        if (!SYNOR_HAVE_OPENCL || (r)->ncl < (n)) {                                          \
            synor_runtime_destroy((r)->rt);                                                  \
            TEST_SKIP("too few OpenCL devices (PoCL: POCL_DEVICES=\"pthread pthread\")");   \
        }                                                                                    \
    } while (0)

/* Three vectors x (filled), y, z (zero) and their handles. */
typedef struct xyz {
    float *x, *y, *z;
    synor_handle *hx, *hy, *hz;
} xyz;

static void xyz_make(synor_runtime *rt, xyz *v, size_t n)
{
    v->x = malloc(n * 4), v->y = calloc(n, 4), v->z = calloc(n, 4);
    ASSERT(v->x && v->y && v->z);
    fill(v->x, n);
    v->hx = vec(rt, v->x, n), v->hy = vec(rt, v->y, n), v->hz = vec(rt, v->z, n);
    ASSERT(v->hx && v->hy && v->hz);
}

/* Unregisters (host copies up to date) and frees nothing yet. */
static void xyz_unregister(xyz *v)
{
    ASSERT_OK(synor_handle_unregister(v->hx));
    ASSERT_OK(synor_handle_unregister(v->hy));
    ASSERT_OK(synor_handle_unregister(v->hz));
}

static void xyz_free(xyz *v) { free(v->x), free(v->y), free(v->z); }

/* relu on device A, then gelu of its result on device B: the intermediate
 * goes A -> B directly, and the host's inputs come in over the unified
 * path (PoCL's devices share the host's memory). */
TEST(a_datum_written_on_one_opencl_device_moves_to_another_by_the_peer_path)
{
    pocl_two_devices();
    rig r;
    ASSERT_OK(rig_make(&r, 0, 0, 1));
    NEED_OPENCL(&r, 2);
    enum { N = 50021 };
    xyz v;
    xyz_make(r.rt, &v, N);
    submit(r.rt, &synor__kernel_relu_x, v.hx, v.hy, r.cl[0]);
    submit(r.rt, &synor__kernel_gelu_x, v.hy, v.hz, r.cl[1]);
    ASSERT_OK(synor_runtime_wait_all(r.rt));

    synor_runtime_stats st;
    synor_runtime_get_stats(r.rt, &st);
    ASSERT_EQ(st.path_transfers[SYNOR_PATH_PEER], 1);
    ASSERT_EQ(st.path_bytes[SYNOR_PATH_PEER], (uint64_t)N * 4);
    ASSERT_EQ(st.path_transfers[SYNOR_PATH_MEDIATED], 0);
    /* x in; y and z back by wait_all: over the unified path on PoCL, or
     * the host path on a device that does not share host memory. */
    ASSERT_EQ(st.path_transfers[SYNOR_PATH_UNIFIED] + st.path_transfers[SYNOR_PATH_HOST], 3);
    uint64_t sum = 0;
    for (int p = 0; p < SYNOR_PATH_COUNT; p++)
        sum += st.path_transfers[p];
    ASSERT_EQ(sum, st.transfers);
    char link[64];
    synor_runtime_device_info a, b;
    ASSERT_OK(synor_runtime_device_get(r.rt, r.cl[0], &a));
    ASSERT_OK(synor_runtime_device_get(r.rt, r.cl[1], &b));
    snprintf(link, sizeof link, "%s->%s", a.name, b.name);
    ASSERT_EQ(traced(r.rt, "peer", link), 1);
    ASSERT_EQ(traced(r.rt, "cpu-mediated", NULL), 0);

    xyz_unregister(&v);
    for (size_t i = 0; i < N; i++) {
        ASSERT(near(v.y[i], relu(v.x[i])));
        ASSERT(near(v.z[i], gelu(relu(v.x[i]))));
    }
    synor_runtime_destroy(r.rt);
    xyz_free(&v);
}

/* A peer copy leaves two valid device copies and an Invalid host copy.
 * With room for two vectors per device, the next tasks evict both: each
 * must be written back (or the other still be valid) before it is freed,
 * or the datum is lost. Chain: x -relu@A-> y -gelu@B-> z -relu@A-> w
 * -relu@B-> v; every step after the first reads over the peer path. */
TEST(peer_copies_survive_eviction_on_both_devices)
{
    pocl_two_devices();
    enum { N = 1 << 18 };
    rig r;
    ASSERT_OK(rig_make(&r, 2ull * N * 4, 0, 1));
    NEED_OPENCL(&r, 2);
    float *x = malloc(N * 4), *y = calloc(N, 4), *z = calloc(N, 4), *w = calloc(N, 4),
          *v = calloc(N, 4);
    ASSERT(x && y && z && w && v);
    fill(x, N);
    synor_handle *hx = vec(r.rt, x, N), *hy = vec(r.rt, y, N), *hz = vec(r.rt, z, N),
                 *hw = vec(r.rt, w, N), *hv = vec(r.rt, v, N);
    ASSERT(hx && hy && hz && hw && hv);
    submit(r.rt, &synor__kernel_relu_x, hx, hy, r.cl[0]);
    submit(r.rt, &synor__kernel_gelu_x, hy, hz, r.cl[1]);
    submit(r.rt, &synor__kernel_relu_x, hz, hw, r.cl[0]);
    submit(r.rt, &synor__kernel_relu_x, hw, hv, r.cl[1]);
    ASSERT_OK(synor_runtime_wait_all(r.rt));
    synor_runtime_stats st;
    synor_runtime_get_stats(r.rt, &st);
    ASSERT_EQ(st.path_transfers[SYNOR_PATH_PEER], 3);
    ASSERT(st.evictions >= 3);
    ASSERT_OK(synor_handle_unregister(hx));
    ASSERT_OK(synor_handle_unregister(hy));
    ASSERT_OK(synor_handle_unregister(hz));
    ASSERT_OK(synor_handle_unregister(hw));
    ASSERT_OK(synor_handle_unregister(hv));
    for (size_t i = 0; i < N; i++) {
        float e = gelu(relu(x[i]));
        ASSERT(near(y[i], relu(x[i])));
        ASSERT(near(z[i], e));
        ASSERT(near(w[i], relu(e)));
        ASSERT(near(v[i], relu(e)));
    }
    synor_runtime_destroy(r.rt);
    free(x), free(y), free(z), free(w), free(v);
}

/* The test GPU's own memory has no peer path to an OpenCL device: its
 * result reaches the OpenCL device through the host, two hops. */
static int relu_host(const synor_task_ctx *c)
{
    const float *x = c->buffers[0];
    float *y = c->buffers[1];
    size_t n = synor_handle_dim(c->data[0], 0);
    for (size_t i = 0; i < n; i++)
        y[i] = relu(x[i]);
    return 0;
}

static const synor_kernel relu_everywhere = {
    .name = "relu",
    .op = SYNOR_OP_RELU,
    .fn = {[SYNOR_KIND_CPU] = relu_host, [SYNOR_KIND_GPU] = relu_host},
};

TEST(without_a_peer_path_data_goes_through_the_host_in_two_hops)
{
    pocl_two_devices();
    rig r;
    ASSERT_OK(rig_make(&r, 0, 64 << 20, 1));
    NEED_OPENCL(&r, 1);
    ASSERT(r.gpu);
    enum { N = 40009 };
    xyz v;
    xyz_make(r.rt, &v, N);
    submit(r.rt, &relu_everywhere, v.hx, v.hy, r.gpu);
    submit(r.rt, &synor__kernel_gelu_x, v.hy, v.hz, r.cl[0]);
    ASSERT_OK(synor_runtime_wait_all(r.rt));
    synor_runtime_stats st;
    synor_runtime_get_stats(r.rt, &st);
    ASSERT_EQ(st.path_transfers[SYNOR_PATH_MEDIATED], 2);
    ASSERT_EQ(st.path_bytes[SYNOR_PATH_MEDIATED], 2ull * N * 4);
    ASSERT_EQ(st.path_transfers[SYNOR_PATH_PEER], 0);
    ASSERT_EQ(traced(r.rt, "cpu-mediated", "test-gpu->host"), 1);
    synor_runtime_device_info a;
    ASSERT_OK(synor_runtime_device_get(r.rt, r.cl[0], &a));
    char link[64];
    snprintf(link, sizeof link, "host->%s", a.name);
    ASSERT_EQ(traced(r.rt, "cpu-mediated", link), 1);
    /* x went to the test GPU over the host path (its memory is not the
     * host's as far as the runtime knows). */
    ASSERT_EQ(traced(r.rt, "host", "host->test-gpu"), 1);
    xyz_unregister(&v);
    for (size_t i = 0; i < N; i++)
        ASSERT(near(v.z[i], gelu(relu(v.x[i]))));
    synor_runtime_destroy(r.rt);
    xyz_free(&v);
}

/* A read where the datum is already valid moves nothing: a local read. */
TEST(reads_of_valid_replicas_are_local)
{
    pocl_two_devices();
    rig r;
    ASSERT_OK(rig_make(&r, 0, 0, 0)); /* no prefetch: it would make reads local */
    NEED_OPENCL(&r, 1);
    xyz v;
    xyz_make(r.rt, &v, 1000);
    submit(r.rt, &synor__kernel_relu_x, v.hx, v.hy, r.cl[0]);
    submit(r.rt, &synor__kernel_gelu_x, v.hx, v.hz, r.cl[0]); /* x is there already */
    submit(r.rt, &synor__kernel_relu_x, v.hx, v.hz, 0);       /* the host's copy is valid */
    ASSERT_OK(synor_runtime_wait_all(r.rt));
    synor_runtime_stats st;
    synor_runtime_get_stats(r.rt, &st);
    ASSERT_EQ(st.local_reads, 2);
    xyz_unregister(&v);
    synor_runtime_destroy(r.rt);
    xyz_free(&v);
}

TEST_MAIN(a_datum_written_on_one_opencl_device_moves_to_another_by_the_peer_path,
          peer_copies_survive_eviction_on_both_devices,
          without_a_peer_path_data_goes_through_the_host_in_two_hops,
          reads_of_valid_replicas_are_local)
