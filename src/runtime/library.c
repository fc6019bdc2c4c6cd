/* library.c - kernel libraries (synor/kernel.h) and the devices' native
 * handles.
 *
 * The runtime runs kernels it knows nothing about: what a set of kernels
 * must prepare per device (OpenCL programs, a cuBLAS handle, a CUDA module)
 * is a kernel library, set up on every device when it is added and freed
 * when the runtime is destroyed. Slots are only ever appended: a slot is
 * filled under lib_lock and published by raising nlibs with release, so a
 * submitter finds a library with an acquire load and no lock, and a task
 * that carries its slot (t->lib) reads the per-device state that was
 * published before the task was submitted. */
#include <stdio.h>
#include <string.h>

#include "runtime/runtime_internal.h"

int synor_runtime_device_native(const synor_runtime *rt, unsigned i, synor_device_native *out)
{
    if (!rt || !out || i >= rt->ndevices)
        return synor__error(SYNOR_EINVAL, "synor_runtime_device_native: device %u of %u", i,
                            rt ? rt->ndevices : 0);
    *out = rt->devices[i].native;
    return 0;
}

static int find(synor_runtime *rt, const synor_kernel_library *lib)
{
    unsigned n = atomic_load_explicit(&rt->nlibs, memory_order_acquire);
    for (unsigned i = 0; i < n; i++)
        if (rt->libs[i].lib == lib)
            return (int)i;
    return -1;
}

/* A device whose library could not be set up takes no more work: stopped
 * as synor_runtime_device_stop does; before start (no worker reads names
 * yet) its name also says why, as for a device its backend could not set
 * up. */
static void disable(synor_runtime *rt, synor__device *d)
{
    if (!atomic_load(&rt->started))
        synor__device_disable(d, "kernels did not build");
    atomic_store(&d->stopped, 1);
    synor__ec_notify(&d->ec, 1);
}

int synor_runtime_library_add(synor_runtime *rt, const synor_kernel_library *lib)
{
    if (!rt || !lib || !lib->device_init)
        return synor__error(SYNOR_EINVAL, "synor_runtime_library_add: runtime, library or its "
                                          "device_init is NULL");
    pthread_mutex_lock(&rt->lib_lock);
    int rc = find(rt, lib);
    if (rc >= 0) {
        pthread_mutex_unlock(&rt->lib_lock);
        return 0;
    }
    unsigned n = atomic_load_explicit(&rt->nlibs, memory_order_relaxed);
    if (n == SYNOR_RUNTIME_MAX_LIBRARIES) {
        pthread_mutex_unlock(&rt->lib_lock);
        return synor__error(SYNOR_ERANGE,
                            "synor_runtime_library_add: library '%s': the runtime has %d already",
                            lib->name ? lib->name : "?", SYNOR_RUNTIME_MAX_LIBRARIES);
    }
    synor__lib *s = &rt->libs[n];
    memset(s, 0, sizeof *s);
    s->lib = lib;
    for (unsigned i = 0; i < rt->ndevices; i++) {
        synor__device *d = &rt->devices[i];
        if (atomic_load(&d->stopped))
            continue;
        void *state = NULL;
        if (lib->device_init(&d->native, &state) < 0) {
            disable(rt, d);
            continue;
        }
        s->state[i] = state;
        s->ok[i] = 1;
    }
    /* A device that failed is stopped; the library works on the others. */
    (void)synor__error(0, "%s", "");
    atomic_store_explicit(&rt->nlibs, n + 1, memory_order_release);
    pthread_mutex_unlock(&rt->lib_lock);
    return 0;
}

int synor__library_slot(synor_runtime *rt, const synor_kernel_library *lib)
{
    int slot = find(rt, lib);
    if (slot >= 0)
        return slot;
    int rc = synor_runtime_library_add(rt, lib);
    if (rc < 0)
        return rc;
    return find(rt, lib);
}

void synor__libraries_fini(synor_runtime *rt)
{
    unsigned n = atomic_load(&rt->nlibs);
    for (unsigned k = n; k-- > 0;) {
        synor__lib *s = &rt->libs[k];
        for (unsigned i = 0; i < rt->ndevices; i++)
            if (s->ok[i] && s->lib->device_fini)
                s->lib->device_fini(&rt->devices[i].native, s->state[i]);
    }
    atomic_store(&rt->nlibs, 0);
}
