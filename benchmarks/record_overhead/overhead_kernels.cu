// The overhead benchmark's kernels and their launch loops (the only CUDA unit of
// the benchmark; record_overhead.cpp holds the timing and the recorder).
#include "overhead_kernels.h"

#include "capture/nvtx_range.h"

namespace attnprof::overhead {
namespace {

__global__ void tiny_kernel(int* counter) {
  if (threadIdx.x == 0 && blockIdx.x == 0) atomicAdd(counter, 1);
}

__global__ void scale_kernel(float* x, int n, float a) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] = x[i] * a + 1.0f;
}

__global__ void sum_kernel(const float* x, int n, float* out) {
  __shared__ float part[256];
  float s = 0.f;
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) s += x[i];
  part[threadIdx.x] = s;
  __syncthreads();
  for (int w = blockDim.x / 2; w > 0; w /= 2) {
    if (threadIdx.x < w) part[threadIdx.x] += part[threadIdx.x + w];
    __syncthreads();
  }
  if (threadIdx.x == 0) atomicAdd(out, part[0]);
}

__global__ void matmul_kernel(const float* a, const float* b, float* c, int n) {
  int row = blockIdx.y * blockDim.y + threadIdx.y, col = blockIdx.x * blockDim.x + threadIdx.x;
  if (row >= n || col >= n) return;
  float s = 0.f;
  for (int k = 0; k < n; ++k) s += a[row * n + k] * b[k * n + col];
  c[row * n + col] = s;
}

}  // namespace

cudaError_t tiny_loop(const Buffers& buf, cudaStream_t s, int n) {
  for (int i = 0; i < n; ++i) tiny_kernel<<<1, 32, 0, s>>>(buf.counter);
  return cudaGetLastError();
}

cudaError_t mix_loop(const Buffers& buf, cudaStream_t s, int n) {
  for (int i = 0; i < n; ++i) {
    auto r = attnprof::capture::range("mix_step");
    if (auto e = cudaMemsetAsync(buf.sum, 0, sizeof(float), s); e != cudaSuccess) return e;
    scale_kernel<<<Buffers::kN / 256, 256, 0, s>>>(buf.x, Buffers::kN, 0.5f);
    sum_kernel<<<528, 256, 0, s>>>(buf.x, Buffers::kN, buf.sum);
    const auto copy = cudaMemcpyAsync(buf.y, buf.x, Buffers::kN * sizeof(float), cudaMemcpyDeviceToDevice, s);
    if (copy != cudaSuccess) return copy;
    matmul_kernel<<<dim3(Buffers::kM / 16, Buffers::kM / 16), dim3(16, 16), 0, s>>>(buf.a, buf.b, buf.c, Buffers::kM);
    tiny_kernel<<<1, 32, 0, s>>>(buf.counter);
  }
  return cudaGetLastError();
}

}  // namespace attnprof::overhead
