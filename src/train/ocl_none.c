/* ocl_none.c - the trainer without OpenCL (the library built without it):
 * no replica runs on an OpenCL device. */
#include "train/train_internal.h"

int synor__train_ocl_mm(const synor_trainer *t, int op, float *out, const float *p,
                        const float *q, int n, int in, int outw, float beta)
{
    (void)t, (void)op, (void)out, (void)p, (void)q, (void)n, (void)in, (void)outw, (void)beta;
    return synor__error(SYNOR_ENOTSUP, "trainer: built without OpenCL");
}

void synor__train_ocl_params_changed(synor_trainer *t) { (void)t; }
void synor__train_ocl_free(synor_trainer *t) { (void)t; }

void synor__train_ocl_stats(const synor_trainer *t, synor_train_gpu_stats *out)
{
    (void)t;
    (void)out;
}

int synor_trainer_use_opencl(synor_trainer *t, unsigned device, int replicas)
{
    (void)t;
    (void)device;
    (void)replicas;
    return synor__error(SYNOR_ENOTSUP, "synor_trainer_use_opencl: this build of the library has "
                                       "no OpenCL (the ICD loader and headers were not found)");
}
