// The small kernels PyTorch's math path and the hand-written path are made of:
// elementwise functors run by one launcher (4 elements a thread, coalesced, as
// ATen's unrolled elementwise kernel), and warp-per-row softmax and row-all.
// Each functor is a named struct so a trace shows what the kernel did.
#pragma once

#include <cstdint>

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include "attention/cuda/cuda_check.h"
#include "attention/params.h"

namespace attnprof::attention::cuda {

template <typename T>
__host__ __device__ __forceinline__ float to_f(T x) {
  return static_cast<float>(x);
}
template <>
__host__ __device__ __forceinline__ float to_f(__nv_bfloat16 x) {
  return __bfloat162float(x);
}
template <>
__host__ __device__ __forceinline__ float to_f(__half x) {
  return __half2float(x);
}
template <typename T>
__host__ __device__ __forceinline__ T from_f(float x) {
  return static_cast<T>(x);
}
template <>
__host__ __device__ __forceinline__ __nv_bfloat16 from_f(float x) {
  return __float2bfloat16_rn(x);
}
template <>
__host__ __device__ __forceinline__ __half from_f(float x) {
  return __float2half_rn(x);
}

constexpr int kThreads = 256;
constexpr int kPerThread = 4;

template <typename F>
__global__ void __launch_bounds__(kThreads) elementwise_kernel(std::int64_t n, F f) {
  const std::int64_t base = static_cast<std::int64_t>(blockIdx.x) * kThreads * kPerThread + threadIdx.x;
#pragma unroll
  for (int k = 0; k < kPerThread; ++k) {
    const std::int64_t i = base + k * kThreads;
    if (i < n) f(i);
  }
}

template <typename F>
void launch_elementwise(std::int64_t n, F f, cudaStream_t stream) {
  if (n <= 0) return;
  const std::int64_t per_block = static_cast<std::int64_t>(kThreads) * kPerThread;
  const auto blocks = static_cast<unsigned>((n + per_block - 1) / per_block);
  elementwise_kernel<<<blocks, kThreads, 0, stream>>>(n, f);
  ATTNPROF_CUDA_CHECK_LAUNCH();
}

// Index of dense element i of a [batch, heads, rows, dim] tensor in strided storage.
// Dense BHSD storage (the common case) maps i to itself: no 64-bit divisions, the
// kernel is a plain copy as ATen's contiguous copy is.
struct StridedIndex {
  TensorStrides s;
  int heads, rows, dim;
  bool dense;
  StridedIndex(const TensorStrides& strides, int h, int r, int d)
      : s(strides),
        heads(h),
        rows(r),
        dim(d),
        dense(strides.row == d && strides.head == static_cast<std::int64_t>(r) * d &&
              strides.batch == static_cast<std::int64_t>(h) * r * d) {}
  __device__ __forceinline__ std::int64_t operator()(std::int64_t i) const {
    if (dense) return i;
    const std::int64_t d = i % dim, r = (i / dim) % rows, h = (i / (std::int64_t(dim) * rows)) % heads,
                       b = i / (std::int64_t(dim) * rows * heads);
    return b * s.batch + h * s.head + r * s.row + d;
  }
};

// dst (dense) = src (strided) * scale, converting the type: the upcast `q.to(float)`
// (scale 1) and `q * sqrt(scale)` are both this.
template <typename Tsrc, typename Tdst>
struct ToDenseScaled {
  const Tsrc* src;
  StridedIndex at;
  float scale;
  Tdst* dst;
  __device__ void operator()(std::int64_t i) const { dst[i] = from_f<Tdst>(to_f(src[at(i)]) * scale); }
};

// dst (strided) = src (dense), converting the type: the final `out.to(bf16)`.
template <typename Tsrc, typename Tdst>
struct ToStrided {
  const Tsrc* src;
  StridedIndex at;
  Tdst* dst;
  __device__ void operator()(std::int64_t i) const { dst[at(i)] = from_f<Tdst>(to_f(src[i])); }
};

// dst = src converted (dense to dense): the discarded `attn.to(bf16)`.
template <typename Tsrc, typename Tdst>
struct Convert {
  const Tsrc* src;
  Tdst* dst;
  __device__ void operator()(std::int64_t i) const { dst[i] = from_f<Tdst>(to_f(src[i])); }
};

template <typename T>
struct Fill {  // at::ones / at::scalar_tensor
  T* dst;
  T value;
  __device__ void operator()(std::int64_t i) const { dst[i] = value; }
};

struct Tril {  // bool [rows, cols]: keep where col - row <= diagonal
  const bool* src;
  bool* dst;
  int cols;
  int diagonal;
  __device__ void operator()(std::int64_t i) const {
    const std::int64_t r = i / cols, c = i % cols;
    dst[i] = c - r <= diagonal ? src[i] : false;
  }
};

template <typename T>
struct WhereScalars {  // at::where(cond, scalar_tensor a, scalar_tensor b)
  const bool* cond;
  const T* a;  // 0-dim tensors
  const T* b;
  T* dst;
  __device__ void operator()(std::int64_t i) const { dst[i] = cond[i] ? *a : *b; }
};

template <typename T>
struct AddBroadcast {  // attn.add_(mask): mask [rows, cols] broadcast over batch and heads
  T* dst;
  const T* mask;
  std::int64_t mask_size;
  __device__ void operator()(std::int64_t i) const { dst[i] = from_f<T>(to_f(dst[i]) + to_f(mask[i % mask_size])); }
};

template <typename T>
struct EqNegInf {  // self.eq(-inf)
  const T* src;
  bool* dst;
  __device__ void operator()(std::int64_t i) const { dst[i] = to_f(src[i]) == -INFINITY; }
};

template <typename T>
struct WhereRowElse {  // at::where(masked_rows [rows, 1], zero, out)
  const bool* row_flag;
  const T* zero;
  const T* src;
  T* dst;
  int cols;
  __device__ void operator()(std::int64_t i) const { dst[i] = row_flag[i / cols] ? *zero : src[i]; }
};

template <typename T>
struct ScaleInPlace {  // scores *= scale
  T* dst;
  float scale;
  __device__ void operator()(std::int64_t i) const { dst[i] = from_f<T>(to_f(dst[i]) * scale); }
};

template <typename T>
struct MaskedFillNegInf {  // scores.masked_fill_(masked_out, -inf), mask broadcast over batch, heads
  T* dst;
  const bool* masked_out;
  std::int64_t mask_size;
  __device__ void operator()(std::int64_t i) const {
    if (masked_out[i % mask_size]) dst[i] = from_f<T>(-INFINITY);
  }
};

__device__ __forceinline__ float warp_max(float x) {
  for (int o = 16; o > 0; o >>= 1) x = fmaxf(x, __shfl_xor_sync(0xffffffffu, x, o));
  return x;
}
__device__ __forceinline__ float warp_sum(float x) {
  for (int o = 16; o > 0; o >>= 1) x += __shfl_xor_sync(0xffffffffu, x, o);
  return x;
}

constexpr int kRowsPerBlock = kThreads / 32;

// One warp per row: max, sum of exp, write. In-place is allowed. A row of all
// -inf gives zeros.
template <typename Tin, typename Tout>
__global__ void __launch_bounds__(kThreads) softmax_rows_kernel(const Tin* in, Tout* out, std::int64_t rows, int cols) {
  const std::int64_t row = static_cast<std::int64_t>(blockIdx.x) * kRowsPerBlock + threadIdx.x / 32;
  const int lane = threadIdx.x % 32;
  if (row >= rows) return;
  const Tin* x = in + row * cols;
  Tout* y = out + row * cols;
  float m = -INFINITY;
  for (int c = lane; c < cols; c += 32) m = fmaxf(m, to_f(x[c]));
  m = warp_max(m);
  if (m == -INFINITY) {
    for (int c = lane; c < cols; c += 32) y[c] = from_f<Tout>(0.0f);
    return;
  }
  float s = 0.0f;
  for (int c = lane; c < cols; c += 32) s += __expf(to_f(x[c]) - m);
  const float inv = 1.0f / warp_sum(s);
  for (int c = lane; c < cols; c += 32) y[c] = from_f<Tout>(__expf(to_f(x[c]) - m) * inv);
}

template <typename Tin, typename Tout>
void launch_softmax(const Tin* in, Tout* out, std::int64_t rows, int cols, cudaStream_t stream) {
  const auto blocks = static_cast<unsigned>((rows + kRowsPerBlock - 1) / kRowsPerBlock);
  softmax_rows_kernel<<<blocks, kThreads, 0, stream>>>(in, out, rows, cols);
  ATTNPROF_CUDA_CHECK_LAUNCH();
}

// masked.all(dim=-1, keepdim=True): one warp per row.
static __global__ void __launch_bounds__(kThreads)
    all_rows_kernel(const bool* in, bool* out, std::int64_t rows, int cols) {
  const std::int64_t row = static_cast<std::int64_t>(blockIdx.x) * kRowsPerBlock + threadIdx.x / 32;
  if (row >= rows) return;
  bool all = true;
  for (int c = threadIdx.x % 32; c < cols; c += 32) all = all && in[row * cols + c];
  all = __all_sync(0xffffffffu, all);
  if (threadIdx.x % 32 == 0) out[row] = all;
}

inline void launch_all_rows(const bool* in, bool* out, std::int64_t rows, int cols, cudaStream_t stream) {
  const auto blocks = static_cast<unsigned>((rows + kRowsPerBlock - 1) / kRowsPerBlock);
  all_rows_kernel<<<blocks, kThreads, 0, stream>>>(in, out, rows, cols);
  ATTNPROF_CUDA_CHECK_LAUNCH();
}

}  // namespace attnprof::attention::cuda
