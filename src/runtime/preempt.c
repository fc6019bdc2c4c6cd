/* preempt.c - preemption notices (synor_runtime_preempt, synor/runtime.h):
 * a device whose interruptible capacity is being taken back gets a
 * warning, the job's callback checkpoints, and at the deadline the device
 * stops through the ordinary device-stop path - unless the notice was
 * withdrawn because replacement capacity was obtained.
 *
 * One deadline thread per runtime, started by the first notice, sleeps on
 * a condition variable on CLOCK_MONOTONIC until the earliest pending
 * deadline. Notices are a per-device deadline (0 = none) written under
 * pre_lock; the thread takes the lock, stops every device whose deadline
 * has passed (clearing it, so a cancel after that answers ENOENT), and
 * sleeps again. Callbacks run on the notifier's thread, outside the lock,
 * so a callback may cancel its own notice. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "runtime/runtime_internal.h"

void synor__preempt_init(synor_runtime *rt)
{
    pthread_mutex_init(&rt->pre_lock, NULL);
    pthread_condattr_t a;
    pthread_condattr_init(&a);
    pthread_condattr_setclock(&a, CLOCK_MONOTONIC);
    pthread_cond_init(&rt->pre_cond, &a);
    pthread_condattr_destroy(&a);
    for (unsigned i = 0; i < SYNOR__MAX_DEVICES; i++)
        atomic_init(&rt->pre_deadline[i], 0);
}

void synor__preempt_fini(synor_runtime *rt)
{
    pthread_mutex_lock(&rt->pre_lock);
    rt->pre_quit = 1;
    int on = rt->pre_thread_on;
    pthread_cond_broadcast(&rt->pre_cond);
    pthread_mutex_unlock(&rt->pre_lock);
    if (on)
        pthread_join(rt->pre_thread, NULL);
    pthread_mutex_destroy(&rt->pre_lock);
    pthread_cond_destroy(&rt->pre_cond);
}

static void *deadline_thread(void *arg)
{
    synor_runtime *rt = arg;
    pthread_mutex_lock(&rt->pre_lock);
    while (!rt->pre_quit) {
        uint64_t now = synor__now_ns(), next = 0;
        for (unsigned i = 1; i < rt->ndevices; i++) {
            uint64_t dl = atomic_load(&rt->pre_deadline[i]);
            if (!dl)
                continue;
            if (dl <= now) {
                atomic_store(&rt->pre_deadline[i], 0);
                (void)synor_runtime_device_stop(rt, i);
                synor__trace_mark_rec(rt, "device stopped", i, now, now,
                                      "preempted: the warning period ended");
            } else if (!next || dl < next) {
                next = dl;
            }
        }
        if (!next) {
            pthread_cond_wait(&rt->pre_cond, &rt->pre_lock);
            continue;
        }
        struct timespec ts = {(time_t)(next / 1000000000u), (long)(next % 1000000000u)};
        (void)pthread_cond_timedwait(&rt->pre_cond, &rt->pre_lock, &ts);
    }
    pthread_mutex_unlock(&rt->pre_lock);
    return NULL;
}

int synor_runtime_set_preempt_fn(synor_runtime *rt, synor_preempt_fn fn, void *user)
{
    if (!rt)
        return synor__error(SYNOR_EINVAL, "synor_runtime_set_preempt_fn: NULL runtime");
    pthread_mutex_lock(&rt->pre_lock);
    rt->pre_fn = fn;
    rt->pre_user = user;
    pthread_mutex_unlock(&rt->pre_lock);
    return 0;
}

int synor_runtime_preempt(synor_runtime *rt, unsigned device, uint64_t warning_ns)
{
    if (!rt || device == 0 || device >= rt->ndevices || warning_ns > SYNOR_PREEMPT_MAX_WARNING_NS)
        return synor__error(SYNOR_EINVAL,
                            "synor_runtime_preempt: device %u (1..%u; the host cannot be "
                            "preempted), warning %llu ns (at most one day)",
                            device, rt ? rt->ndevices - 1 : 0, (unsigned long long)warning_ns);
    synor__device *d = &rt->devices[device];
    pthread_mutex_lock(&rt->pre_lock);
    if (atomic_load(&d->stopped)) {
        pthread_mutex_unlock(&rt->pre_lock);
        return synor__error(SYNOR_ESTATE, "synor_runtime_preempt: device %u (%s) is stopped",
                            device, d->name);
    }
    if (atomic_load(&rt->pre_deadline[device])) {
        pthread_mutex_unlock(&rt->pre_lock);
        return synor__error(SYNOR_EBUSY,
                            "synor_runtime_preempt: device %u (%s) already has a pending "
                            "preemption notice",
                            device, d->name);
    }
    if (!rt->pre_thread_on) {
        if (pthread_create(&rt->pre_thread, NULL, deadline_thread, rt) != 0) {
            pthread_mutex_unlock(&rt->pre_lock);
            return synor__error(SYNOR_EIO, "synor_runtime_preempt: cannot start the deadline "
                                           "thread");
        }
        rt->pre_thread_on = 1;
    }
    uint64_t now = synor__now_ns(), deadline = now + (warning_ns ? warning_ns : 1);
    atomic_store(&rt->pre_deadline[device], deadline);
    synor_preempt_fn fn = rt->pre_fn;
    void *user = rt->pre_user;
    pthread_cond_broadcast(&rt->pre_cond);
    pthread_mutex_unlock(&rt->pre_lock);
    char detail[96];
    snprintf(detail, sizeof detail, "warning %.3f s: the device stops at the deadline",
             (double)warning_ns * 1e-9);
    synor__trace_mark_rec(rt, "preempted", device, now, now, detail);
    if (fn)
        fn(rt, device, deadline, user);
    return 0;
}

int synor_runtime_preempt_cancel(synor_runtime *rt, unsigned device)
{
    if (!rt || device >= rt->ndevices)
        return synor__error(SYNOR_EINVAL, "synor_runtime_preempt_cancel: no device %u", device);
    pthread_mutex_lock(&rt->pre_lock);
    uint64_t dl = device ? atomic_load(&rt->pre_deadline[device]) : 0;
    if (dl)
        atomic_store(&rt->pre_deadline[device], 0);
    pthread_cond_broadcast(&rt->pre_cond);
    pthread_mutex_unlock(&rt->pre_lock);
    if (!dl)
        return synor__error(SYNOR_ENOENT,
                            "synor_runtime_preempt_cancel: device %u (%s) has no pending "
                            "preemption notice (none was armed, or it has stopped)",
                            device, rt->devices[device].name);
    uint64_t now = synor__now_ns();
    synor__trace_mark_rec(rt, "replaced", device, now, now,
                          "replacement capacity: the preemption notice was withdrawn");
    return 0;
}
