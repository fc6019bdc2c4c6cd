// cuda_ops.cu - the element-wise kernels of the runtime's CUDA devices,
// compiled to PTX by nvcc at build time when nvcc is found (CMakeLists.txt)
// and embedded in the library; the driver JIT-compiles the PTX for the GPU
// present. Contiguous fp32, X -> Y, grid-stride loops.
extern "C" __global__ void synor_relu(const float *x, float *y, long long n)
{
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n;
         i += (long long)gridDim.x * blockDim.x)
        y[i] = x[i] > 0.0f ? x[i] : 0.0f;
}

// GeLU, tanh approximation (as the CPU and OpenCL kernels).
extern "C" __global__ void synor_gelu(const float *x, float *y, long long n)
{
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n;
         i += (long long)gridDim.x * blockDim.x) {
        float v = x[i];
        y[i] = 0.5f * v * (1.0f + tanhf(0.7978845608f * (v + 0.044715f * v * v * v)));
    }
}

extern "C" __global__ void synor_silu(const float *x, float *y, long long n)
{
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n;
         i += (long long)gridDim.x * blockDim.x)
        y[i] = x[i] / (1.0f + expf(-x[i]));
}
