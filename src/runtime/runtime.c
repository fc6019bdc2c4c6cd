/* runtime.c - the runtime object and its workers: create/start/destroy,
 * the scheduling loop, idle sleeping, wait_all.
 *
 * Devices: device 0 is the host CPU (cfg.cpu_workers workers, one per core
 * by default, each bound to a core through hwloc); then, when
 * cfg.test_gpu_workers > 0, a synthetic device of kind GPU for tests (on
 * host memory, or on a memory node of its own with cfg.test_gpu_memory);
 * then one device per OpenCL device taken (cfg.opencl), each with one
 * worker thread feeding its command queue and a memory node of its own.
 *
 * Where a worker looks for work, in order (find_task):
 *   1. its device queue when it holds High or Critical tasks;
 *   2. its own deque (tasks it released at Normal priority: the data they
 *      read is hot in its cache);
 *   3. its device queue (Normal, Low);
 *   4. the deque of the most loaded worker of the same device (steal: every
 *      task there was placed on this device, so this worker can run it);
 *   5. the queue of another device, taking only tasks that have a kernel
 *      for this worker's kind.
 * Then it polls for cfg.spin_us and sleeps on its device's eventcount.
 *
 * wait_all sleeps on a condition variable. The last completion signals it
 * only when a waiter is registered: the completer decrements outstanding
 * and then reads waiters, the waiter increments waiters and then reads
 * outstanding, all seq_cst, so one of them sees the other (Dekker). */
#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "common/blas_api.h"
#include "runtime/runtime_internal.h"
#include "synor/perfmodel.h"

#define CONFIG_MAGIC 0x5e7c0a7u

void synor_runtime_config_init(synor_runtime_config *cfg)
{
    memset(cfg, 0, sizeof *cfg);
    cfg->magic = CONFIG_MAGIC;
    cfg->cpu_workers = 0;
    cfg->pin_workers = 1;
    cfg->max_attempts = 3;
    cfg->spin_us = 50;
    cfg->test_gpu_workers = 0;
    cfg->opencl = SYNOR_OPENCL_ACCELERATORS;
    cfg->cuda = 1;
    cfg->policy = SYNOR_PLACE_EARLIEST_FINISH;
    cfg->mix.alpha = 1;
    cfg->mix.beta = 1;
    cfg->mix.gamma = 0;
    cfg->rebalance_us = 1000;
    cfg->prefetch = 1;
}

uint64_t synor__now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static inline void cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    __asm__ __volatile__("yield");
#endif
}

/* ------------------------------------------------------------ scheduling */

static synor__task *steal_same_device(synor__worker *w)
{
    synor__device *d = w->dev;
    if (d->nworkers < 2)
        return NULL;
    for (int tries = 0; tries < 4; tries++) {
        /* The most loaded victim (sizes are hints). */
        synor__worker *victim = NULL;
        int64_t best = 0;
        for (unsigned i = 0; i < d->nworkers; i++) {
            synor__worker *v = &w->rt->workers[d->first_worker + i];
            if (v == w)
                continue;
            int64_t s = synor__deque_size(&v->dq);
            if (s > best) {
                best = s;
                victim = v;
            }
        }
        if (!victim)
            return NULL;
        void *x = synor__deque_steal(&victim->dq);
        if (x == SYNOR__DEQUE_ABORT)
            continue;
        if (x) {
            atomic_store_explicit(&w->stolen,
                                  atomic_load_explicit(&w->stolen, memory_order_relaxed) + 1,
                                  memory_order_relaxed);
            return x;
        }
    }
    return NULL;
}

static synor__task *steal_other_devices(synor__worker *w)
{
    synor_runtime *rt = w->rt;
    uint32_t bit = w->dev->impl_bit;
    synor__device *best = NULL;
    long most = 0;
    for (unsigned i = 0; i < rt->ndevices; i++) {
        synor__device *d = &rt->devices[i];
        long c = atomic_load_explicit(&d->q.count, memory_order_relaxed);
        /* Only from busier devices: a queue of one is about to be taken by
         * its own workers, and moving it would cost a transfer. */
        if (d != w->dev && c > most && c > (long)d->nworkers) {
            most = c;
            best = d;
        }
    }
    if (!best)
        return NULL;
    synor__task *t = synor__pq_pop(&best->q, bit, (int)w->id, 0, 1);
    if (t && !synor__place_steal_helps(rt, t, best, w->dev)) {
        /* Its own device finishes it sooner: back, and no other-device
         * steal for a while (the queue would only be churned). */
        synor__pq_push(&best->q, t);
        w->no_steal_until_ns = synor__now_ns() + 2000000u;
        return NULL;
    }
    return t;
}

static synor__task *find_task(synor__worker *w)
{
    synor__device *d = w->dev;
    uint32_t bit = d->impl_bit;
    int avoid = w->rt->nworkers > 1;
    synor__task *t;
    if (atomic_load_explicit(&d->q.count_hi, memory_order_relaxed) > 0 &&
        (t = synor__pq_pop(&d->q, bit, (int)w->id, avoid, 0)) != NULL)
        return t;
    if ((t = synor__deque_take(&w->dq)) != NULL)
        return t;
    if (atomic_load_explicit(&d->q.count, memory_order_relaxed) > 0 &&
        (t = synor__pq_pop(&d->q, bit, (int)w->id, avoid, 0)) != NULL)
        return t;
    if ((t = steal_same_device(w)) != NULL)
        return t;
    if (w->rt->ndevices > 1 &&
        (!w->no_steal_until_ns || synor__now_ns() >= w->no_steal_until_ns))
        return steal_other_devices(w);
    return NULL;
}

/* The re-check of the eventcount protocol: work this worker would find. */
static int work_visible(synor__worker *w)
{
    synor__device *d = w->dev;
    if (atomic_load_explicit(&d->q.count, memory_order_seq_cst) > 0)
        return 1;
    for (unsigned i = 0; i < d->nworkers; i++)
        if (synor__deque_size(&w->rt->workers[d->first_worker + i].dq) > 0)
            return 1;
    return atomic_load_explicit(&w->rt->stop, memory_order_seq_cst);
}

static void sleep_idle(synor__worker *w)
{
    synor__ec *ec = &w->dev->ec;
    atomic_fetch_add_explicit(&ec->sleepers, 1, memory_order_seq_cst);
    unsigned key = atomic_load_explicit(&ec->epoch, memory_order_seq_cst);
    if (!work_visible(w)) {
        pthread_mutex_lock(&ec->lock);
        while (atomic_load_explicit(&ec->epoch, memory_order_relaxed) == key)
            pthread_cond_wait(&ec->cond, &ec->lock);
        pthread_mutex_unlock(&ec->lock);
    }
    atomic_fetch_sub_explicit(&ec->sleepers, 1, memory_order_relaxed);
}

static void bind_to_core(synor__worker *w)
{
    synor_runtime *rt = w->rt;
    if (w->core < 0 || !rt->topo)
        return;
    hwloc_obj_t core = hwloc_get_obj_by_type(rt->topo, HWLOC_OBJ_CORE, (unsigned)w->core);
    if (!core)
        return;
    /* A failed bind (restricted cpuset, container) only costs locality. */
    (void)hwloc_set_cpubind(rt->topo, core->cpuset, HWLOC_CPUBIND_THREAD);
}

/* Every cfg.rebalance_us, the first worker to notice runs a round. */
static void maybe_rebalance(synor_runtime *rt)
{
    uint64_t now = synor__now_ns(),
             next = atomic_load_explicit(&rt->next_rebalance_ns, memory_order_relaxed);
    if (now < next || !atomic_compare_exchange_strong(&rt->next_rebalance_ns, &next,
                                                      now + (uint64_t)rt->cfg.rebalance_us * 1000u))
        return;
    (void)synor__place_rebalance(rt);
}

static _Thread_local synor__worker *tls_worker;

synor__worker *synor__current_worker(const synor_runtime *rt)
{
    synor__worker *w = tls_worker;
    return (w && w->rt == rt) ? w : NULL;
}

static void *worker_main(void *arg)
{
    synor__worker *w = arg;
    synor_runtime *rt = w->rt;
    tls_worker = w;
    bind_to_core(w);
    if (w->dev->backend == SYNOR__BACKEND_OPENCL)
        (void)synor__opencl_worker_begin(w);
    else if (w->dev->backend == SYNOR__BACKEND_CUDA)
        (void)synor__cuda_worker_begin(w);
    (void)synor__error(0, "%s", ""); /* kernels' failure messages start clean */
    uint64_t spin_ns = (uint64_t)rt->cfg.spin_us * 1000u;
    for (;;) {
        if (atomic_load_explicit(&w->dev->stopped, memory_order_relaxed)) {
            /* Hand over what is queued here; keep checking for tasks that
             * were placed while the stop was becoming visible. */
            synor__place_drain(w);
            if (atomic_load_explicit(&rt->stop, memory_order_acquire))
                break;
            struct timespec ts = {0, 1000000};
            nanosleep(&ts, NULL);
            continue;
        }
        if (rt->ndevices > 1 && rt->cfg.rebalance_us)
            maybe_rebalance(rt);
        synor__task *t = find_task(w);
        if (t) {
            synor__task_execute(w, t);
            continue;
        }
        if (atomic_load_explicit(&rt->stop, memory_order_acquire))
            break;
        /* Poll a while before sleeping: a producer that submits in bursts
         * then finds us awake, and a sleep/wake pair costs microseconds.
         * Yielding lets a submitter sharing our core run. */
        uint64_t t0 = synor__now_ns();
        unsigned n = 0;
        while (!(t = find_task(w))) {
            if (atomic_load_explicit(&rt->stop, memory_order_acquire))
                break;
            if (++n % 16 == 0) {
                if (synor__now_ns() - t0 >= spin_ns)
                    break;
                sched_yield();
            } else {
                for (int i = 0; i < 8; i++)
                    cpu_relax();
            }
        }
        if (t) {
            synor__task_execute(w, t);
            continue;
        }
        if (atomic_load_explicit(&rt->stop, memory_order_acquire))
            break;
        sleep_idle(w);
    }
    synor__pool_flush(&rt->task_pool, &w->task_cache);
    synor__pool_flush(&rt->edge_pool, &w->edge_cache);
    tls_worker = NULL;
    return NULL;
}

/* ---------------------------------------------------------------- lifecycle */

static int count_cores(synor_runtime *rt)
{
    if (hwloc_topology_init(&rt->topo) != 0)
        return synor__error(SYNOR_EIO, "runtime: hwloc_topology_init failed");
    if (hwloc_topology_load(rt->topo) != 0) {
        hwloc_topology_destroy(rt->topo);
        rt->topo = NULL;
        return synor__error(SYNOR_EIO, "runtime: hwloc_topology_load failed");
    }
    int n = hwloc_get_nbobjs_by_type(rt->topo, HWLOC_OBJ_CORE);
    rt->ncores = n > 0 ? (unsigned)n : 1;
    n = hwloc_get_nbobjs_by_type(rt->topo, HWLOC_OBJ_PU);
    rt->nthreads = n > 0 ? (unsigned)n : rt->ncores;
    return 0;
}

static void init_device(synor_runtime *rt, unsigned i, synor_kind kind, int backend,
                        const char *name, unsigned first, unsigned n, unsigned node)
{
    synor__device *d = &rt->devices[i];
    synor__pq_init(&d->q);
    synor__ec_init(&d->ec);
    atomic_init(&d->queued_ns, 0);
    atomic_init(&d->stopped, 0);
    d->kind = kind;
    d->backend = backend;
    d->impl_bit = backend == SYNOR__BACKEND_OPENCL ? SYNOR__IMPL_OPENCL
                  : backend == SYNOR__BACKEND_CUDA ? SYNOR__IMPL_CUDA
                                                   : 1u << kind;
    d->index = i;
    d->node = node;
    d->first_worker = first;
    d->nworkers = n;
    synor__strlcpy(d->name, name, sizeof d->name);
    rt->kinds_present |= d->impl_bit;
    /* The backends add their handles (and kind, and raw product name). */
    d->native.runtime = rt;
    d->native.index = i;
    d->native.backend = (synor_backend)backend;
    d->native.name = d->name;
    d->native.product = d->product;
}

int synor_runtime_create(const synor_runtime_config *cfg, synor_runtime **out)
{
    synor_runtime_config def;
    if (!out)
        return synor__error(SYNOR_EINVAL, "synor_runtime_create: out is NULL");
    *out = NULL;
    if (!cfg) {
        synor_runtime_config_init(&def);
        cfg = &def;
    }
    if (cfg->magic != CONFIG_MAGIC)
        return synor__error(SYNOR_EINVAL,
                            "synor_runtime_create: config not initialized with synor_runtime_config_init");
    if (!(cfg->mix.alpha >= 0) || !(cfg->mix.beta >= 0) || !(cfg->mix.gamma >= 0) ||
        cfg->mix.alpha > 1e9 || cfg->mix.beta > 1e9 || cfg->mix.gamma > 1e9 ||
        (unsigned)cfg->policy > SYNOR_PLACE_MIX)
        return synor__error(SYNOR_EINVAL,
                            "runtime config: policy %d, mix weights %g %g %g (finite, >= 0)",
                            (int)cfg->policy, cfg->mix.alpha, cfg->mix.beta, cfg->mix.gamma);
    if (cfg->max_attempts < 1 || cfg->max_attempts > 1000)
        return synor__error(SYNOR_EINVAL, "runtime config: max_attempts %u out of range 1..1000",
                            cfg->max_attempts);
    if (cfg->cpu_workers > 1024 || cfg->test_gpu_workers > 64)
        return synor__error(SYNOR_EINVAL, "runtime config: %u CPU and %u test GPU workers: too many",
                            cfg->cpu_workers, cfg->test_gpu_workers);

    synor_runtime *rt = NULL;
    if (posix_memalign((void **)&rt, SYNOR__CACHELINE, sizeof *rt) != 0)
        return synor__error(SYNOR_ENOMEM, "runtime: out of memory");
    memset(rt, 0, sizeof *rt);
    rt->cfg = *cfg;
    int rc = count_cores(rt);
    if (rc < 0) {
        free(rt);
        return rc;
    }
    unsigned ncpu = cfg->cpu_workers ? cfg->cpu_workers : rt->ncores;
    unsigned ncl = 0, ncu = 0;
    rc = synor__cuda_probe(rt, &ncu); /* CUDA GPUs (cfg.cuda) */
    if (rc == 0)
        rc = synor__opencl_probe(rt, &ncl); /* OpenCL devices to add (cfg.opencl) */
    if (rc < 0) {
        synor__cuda_destroy(rt);
        hwloc_topology_destroy(rt->topo);
        free(rt);
        return rc;
    }
    /* Devices and memory nodes are bounded: keep what fits. */
    unsigned room = SYNOR__MAX_NODES - 1 - (cfg->test_gpu_workers && cfg->test_gpu_memory ? 1 : 0);
    if (ncu > room)
        ncu = room;
    if (ncl > room - ncu)
        ncl = room - ncu;
    rt->nworkers = ncpu + cfg->test_gpu_workers + ncu + ncl;
    rt->ndevices = 1 + (cfg->test_gpu_workers ? 1 : 0) + ncu + ncl;
    rt->workers = NULL;
    rt->devices = NULL;
    if (posix_memalign((void **)&rt->workers, SYNOR__CACHELINE, rt->nworkers * sizeof *rt->workers) ||
        posix_memalign((void **)&rt->devices, SYNOR__CACHELINE, rt->ndevices * sizeof *rt->devices)) {
        free(rt->workers);
        synor__opencl_destroy(rt);
        synor__cuda_destroy(rt);
        hwloc_topology_destroy(rt->topo);
        free(rt);
        return synor__error(SYNOR_ENOMEM, "runtime: out of memory");
    }
    memset(rt->workers, 0, rt->nworkers * sizeof *rt->workers);
    memset(rt->devices, 0, rt->ndevices * sizeof *rt->devices);
    rt->nnodes = 1;
    (void)synor__node_init(&rt->nodes[0], "host", NULL, NULL, 0, 0, 1);
    init_device(rt, 0, SYNOR_KIND_CPU, SYNOR__BACKEND_HOST, "cpu", 0, ncpu, 0);
    hwloc_obj_t m = hwloc_get_obj_by_type(rt->topo, HWLOC_OBJ_PACKAGE, 0);
    const char *model = m ? hwloc_obj_get_info_by_name(m, "CPUModel") : NULL;
    synor__strlcpy(rt->devices[0].product, model ? model : "host CPU",
                   sizeof rt->devices[0].product);
    unsigned dev = 1, first = ncpu;
    if (cfg->test_gpu_workers) {
        unsigned node = 0;
        if (cfg->test_gpu_memory) {
            node = rt->nnodes++;
            (void)synor__test_node_init(&rt->nodes[node], cfg->test_gpu_memory);
        }
        init_device(rt, dev, SYNOR_KIND_GPU, SYNOR__BACKEND_TEST, "test-gpu", first,
                    cfg->test_gpu_workers, node);
        synor__strlcpy(rt->devices[dev].product,
                       node ? "synthetic test GPU (own memory)" : "synthetic test GPU (host memory)",
                       sizeof rt->devices[dev].product);
        for (unsigned i = 0; i < cfg->test_gpu_workers; i++)
            rt->workers[first + i].dev = &rt->devices[dev];
        first += cfg->test_gpu_workers;
        dev++;
    }
    for (unsigned k = 0; k < ncu; k++, dev++, first++) {
        unsigned node = rt->nnodes++;
        init_device(rt, dev, SYNOR_KIND_GPU, SYNOR__BACKEND_CUDA, "cuda", first, 1, node);
        synor__cuda_init_device(rt, k, &rt->devices[dev], &rt->nodes[node]);
        rt->workers[first].dev = &rt->devices[dev];
    }
    for (unsigned k = 0; k < ncl; k++, dev++, first++) {
        unsigned node = rt->nnodes++;
        init_device(rt, dev, SYNOR_KIND_GPU, SYNOR__BACKEND_OPENCL, "opencl", first, 1, node);
        synor__opencl_init_device(rt, k, &rt->devices[dev], &rt->nodes[node]);
        rt->workers[first].dev = &rt->devices[dev];
    }
    synor__nodes_link(rt);
    for (unsigned i = 0; i < rt->ndevices; i++)
        rt->devices[i].native.kind = rt->devices[i].kind; /* OpenCL sets it in its init */
    unsigned ok = 0;
    for (; ok < rt->nworkers; ok++) {
        synor__worker *w = &rt->workers[ok];
        if (synor__deque_init(&w->dq, 1024) < 0)
            break;
        w->rt = rt;
        w->id = ok;
        if (ok < ncpu)
            w->dev = &rt->devices[0];
        w->core = (ok < ncpu && cfg->pin_workers) ? (int)(ok % rt->ncores) : -1;
        w->rng = 2463534242u + ok;
    }
    atomic_init(&rt->started, 0);
    atomic_init(&rt->stop, 0);
    atomic_init(&rt->outstanding, 0);
    atomic_init(&rt->waiters, 0);
    atomic_init(&rt->next_id, 1);
    pthread_mutex_init(&rt->wait_lock, NULL);
    pthread_cond_init(&rt->wait_cond, NULL);
    pthread_mutex_init(&rt->ext_lock, NULL);
    pthread_mutex_init(&rt->err_lock, NULL);
    pthread_mutex_init(&rt->data_lock, NULL);
    pthread_mutex_init(&rt->trace_lock, NULL);
    synor__preempt_init(rt);
    pthread_mutex_init(&rt->rebalance_lock, NULL);
    pthread_mutex_init(&rt->lib_lock, NULL);
    atomic_init(&rt->nlibs, 0);
    atomic_init(&rt->n_rebalanced, 0);
    atomic_init(&rt->next_rebalance_ns, 0);
    atomic_init(&rt->n_moved, 0);
    synor__pool_init(&rt->task_pool, sizeof(synor__task), 512);
    synor__pool_init(&rt->edge_pool, sizeof(synor__edge), 1024);
    atomic_init(&rt->n_prefetched, 0);
    int pf = synor__prefetch_start(rt);
    if (ok < rt->nworkers || pf < 0) {
        rt->nworkers = ok; /* destroy the deques that exist */
        synor_runtime_destroy(rt);
        return pf < 0 ? pf : synor__error(SYNOR_ENOMEM, "runtime: out of memory for worker deques");
    }
    *out = rt;
    return 0;
}

int synor_runtime_start(synor_runtime *rt)
{
    if (!rt)
        return synor__error(SYNOR_EINVAL, "synor_runtime_start: runtime is NULL");
    if (atomic_load(&rt->started))
        return synor__error(SYNOR_ESTATE, "synor_runtime_start: already started");
    /* One kernel runs per worker thread: OpenBLAS (loaded by the first
     * kernel that needs it) gets no threads of its own, or they would fight
     * the workers for the cores. A process-wide setting, made again at
     * each start. */
    synor__blas_set_threads(1);
    rt->t0_ns = synor__now_ns();
    atomic_store(&rt->started, 1);
    for (unsigned i = 0; i < rt->nworkers; i++) {
        int e = pthread_create(&rt->workers[i].thread, NULL, worker_main, &rt->workers[i]);
        if (e != 0) {
            /* Stop the ones that run; tasks stay queued for the others. */
            atomic_store(&rt->stop, 1);
            for (unsigned d = 0; d < rt->ndevices; d++)
                synor__ec_notify(&rt->devices[d].ec, 1);
            for (unsigned j = 0; j < i; j++)
                pthread_join(rt->workers[j].thread, NULL);
            atomic_store(&rt->stop, 0);
            atomic_store(&rt->started, 0);
            return synor__error(SYNOR_EIO, "runtime: cannot create worker thread %u: %s", i,
                                strerror(e));
        }
        rt->threads_running = i + 1;
    }
    return 0;
}

void synor__runtime_task_done(synor_runtime *rt)
{
    int64_t left = atomic_fetch_sub_explicit(&rt->outstanding, 1, memory_order_seq_cst) - 1;
    if (left == 0 && rt->cfg.perfmodel) /* the start of SYNOR_PERFMODEL_WAIT */
        atomic_store_explicit(&rt->drained_ns, synor__now_ns(), memory_order_relaxed);
    if (left == 0 && atomic_load_explicit(&rt->waiters, memory_order_seq_cst) > 0) {
        pthread_mutex_lock(&rt->wait_lock);
        pthread_cond_broadcast(&rt->wait_cond);
        pthread_mutex_unlock(&rt->wait_lock);
    }
}

int synor_runtime_wait_all(synor_runtime *rt)
{
    if (!rt)
        return synor__error(SYNOR_EINVAL, "synor_runtime_wait_all: runtime is NULL");
    if (!atomic_load(&rt->started) && atomic_load(&rt->outstanding) > 0)
        return synor__error(SYNOR_ESTATE,
                            "synor_runtime_wait_all: %lld tasks pending and the runtime is not started",
                            (long long)atomic_load(&rt->outstanding));
    if (synor__current_worker(rt))
        return synor__error(SYNOR_ESTATE, "synor_runtime_wait_all: called from a kernel (deadlock)");
    pthread_mutex_lock(&rt->wait_lock);
    atomic_fetch_add_explicit(&rt->waiters, 1, memory_order_seq_cst);
    int waited = 0;
    while (atomic_load_explicit(&rt->outstanding, memory_order_seq_cst) != 0) {
        waited = 1;
        pthread_cond_wait(&rt->wait_cond, &rt->wait_lock);
    }
    atomic_fetch_sub_explicit(&rt->waiters, 1, memory_order_relaxed);
    pthread_mutex_unlock(&rt->wait_lock);

    /* Host memory up to date again (data written on other memory nodes). */
    if (rt->nnodes > 1) {
        pthread_mutex_lock(&rt->data_lock);
        for (synor_handle *d = rt->data_list; d; d = d->next) {
            int wb = synor__data_writeback(rt, d);
            if (wb < 0) {
                pthread_mutex_lock(&rt->err_lock);
                if (!rt->err_code) {
                    rt->err_code = wb;
                    snprintf(rt->err_msg, sizeof rt->err_msg,
                             "runtime: copying data %u back to host memory: %s", d->id,
                             synor_errmsg());
                }
                pthread_mutex_unlock(&rt->err_lock);
            }
        }
        pthread_mutex_unlock(&rt->data_lock);
    }
    pthread_mutex_lock(&rt->err_lock);
    int code = rt->err_code;
    char msg[sizeof rt->err_msg];
    memcpy(msg, rt->err_msg, sizeof msg);
    rt->err_code = 0;
    rt->err_msg[0] = 0;
    pthread_mutex_unlock(&rt->err_lock);
    /* The host side of a call (synor/perfmodel.h): the last task's end to
     * this return, when this call waited for it. */
    uint64_t drained = atomic_load_explicit(&rt->drained_ns, memory_order_relaxed);
    uint64_t now = rt->cfg.perfmodel && waited ? synor__now_ns() : 0;
    if (now && drained && now >= drained)
        synor_perfmodel_record(rt->cfg.perfmodel, SYNOR_PERFMODEL_WAIT, 0, SYNOR_PERFMODEL_HOST,
                               (double)(now - drained) * 1e-9);
    if (!code)
        return 0;
    synor__data_forget_failures(rt);
    return synor__error(code, "%s", msg);
}

void synor_runtime_destroy(synor_runtime *rt)
{
    if (!rt)
        return;
    if (rt->threads_running) {
        (void)synor_runtime_wait_all(rt);
        atomic_store(&rt->stop, 1);
        for (unsigned d = 0; d < rt->ndevices; d++)
            synor__ec_notify(&rt->devices[d].ec, 1);
        for (unsigned i = 0; i < rt->threads_running; i++)
            pthread_join(rt->workers[i].thread, NULL);
    }
    synor__prefetch_stop(rt);
    synor__preempt_fini(rt); /* pending notices are dropped */
    /* Handles still registered: their tasks are finished or were never
     * run; either way all task memory goes with the pools below. */
    while (rt->data_list) {
        synor_handle *d = rt->data_list;
        rt->data_list = d->next;
        synor__data_drop_replicas(rt, d);
        pthread_mutex_destroy(&d->lock);
        pthread_mutex_destroy(&d->coh);
        synor__free(d);
    }
    for (unsigned k = 0; k < rt->nnodes; k++)
        synor__node_destroy(&rt->nodes[k]);
    synor__libraries_fini(rt); /* before the devices' contexts go */
    synor__opencl_destroy(rt);
    synor__cuda_destroy(rt);
    synor__trace_free(rt);
    for (unsigned i = 0; i < rt->nworkers; i++)
        synor__deque_destroy(&rt->workers[i].dq);
    for (unsigned d = 0; d < rt->ndevices; d++) {
        synor__pq_destroy(&rt->devices[d].q);
        synor__ec_destroy(&rt->devices[d].ec);
    }
    synor__pool_destroy(&rt->task_pool);
    synor__pool_destroy(&rt->edge_pool);
    pthread_mutex_destroy(&rt->wait_lock);
    pthread_cond_destroy(&rt->wait_cond);
    pthread_mutex_destroy(&rt->ext_lock);
    pthread_mutex_destroy(&rt->err_lock);
    pthread_mutex_destroy(&rt->data_lock);
    pthread_mutex_destroy(&rt->trace_lock);
    pthread_mutex_destroy(&rt->rebalance_lock);
    pthread_mutex_destroy(&rt->lib_lock);
    if (rt->topo)
        hwloc_topology_destroy(rt->topo);
    free(rt->workers);
    free(rt->devices);
    free(rt);
}

unsigned synor_runtime_worker_count(const synor_runtime *rt) { return rt ? rt->nworkers : 0; }

void synor_runtime_get_stats(const synor_runtime *rt, synor_runtime_stats *out)
{
    memset(out, 0, sizeof *out);
    synor_runtime *m = (synor_runtime *)(uintptr_t)rt; /* atomics are read-only here */
    for (unsigned i = 0; i < rt->nworkers; i++) {
        out->executed += atomic_load_explicit(&m->workers[i].executed, memory_order_relaxed);
        out->stolen += atomic_load_explicit(&m->workers[i].stolen, memory_order_relaxed);
    }
    out->submitted = atomic_load_explicit(&m->next_id, memory_order_relaxed) - 1;
    out->failed = atomic_load_explicit(&m->n_failed, memory_order_relaxed);
    out->cancelled = atomic_load_explicit(&m->n_cancelled, memory_order_relaxed);
    out->retried = atomic_load_explicit(&m->n_retried, memory_order_relaxed);
    out->calibrating = atomic_load_explicit(&m->n_calibrating, memory_order_relaxed);
    out->moved = atomic_load_explicit(&m->n_moved, memory_order_relaxed);
    out->rebalanced = atomic_load_explicit(&m->n_rebalanced, memory_order_relaxed);
    out->prefetched = atomic_load_explicit(&m->n_prefetched, memory_order_relaxed);
    for (unsigned p = 0; p < SYNOR_PATH_COUNT; p++) {
        out->path_transfers[p] = atomic_load_explicit(&m->path_n[p], memory_order_relaxed);
        out->path_bytes[p] = atomic_load_explicit(&m->path_bytes[p], memory_order_relaxed);
    }
    for (unsigned k = 0; k < rt->nnodes; k++)
        out->local_reads += atomic_load_explicit(&m->nodes[k].local_reads, memory_order_relaxed);
    for (unsigned k = 1; k < rt->nnodes; k++) {
        out->transfers += atomic_load_explicit(&m->nodes[k].transfers, memory_order_relaxed);
        out->bytes_moved += atomic_load_explicit(&m->nodes[k].bytes, memory_order_relaxed);
        out->evictions += atomic_load_explicit(&m->nodes[k].evictions, memory_order_relaxed);
    }
}
