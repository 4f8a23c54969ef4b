// How the math and hand-written paths launch their elementwise work: type
// conversions, ATen's launch shapes (128-thread blocks, vectorized dense maps,
// unrolled loops for casts and broadcasts) and the strided index of a
// [batch, heads, rows, dim] tensor. The ops themselves: aten_ops.cuh.
#pragma once

#include <algorithm>
#include <cstdint>
#include <stdexcept>

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

// The launch shapes follow ATen's, so each kernel costs about what PyTorch's does
// (BENCHMARKS.md has the kernel-by-kernel comparison): 128-thread blocks; dense
// one-input maps load and store one aligned vector a thread (ATen's
// vectorized_elementwise_kernel: 8 elements when a 16-bit type is involved, 4
// otherwise); casting copies and ops with broadcast operands run an unrolled loop
// of VT elements a thread at stride 128 (ATen's unrolled_elementwise_kernel and
// elementwise_kernel<128, VT>), with 32-bit indices whenever the size allows.
constexpr int kThreads = 128;

// True when n elements can be addressed with 32-bit indices by a grid of `per_block`.
inline bool fits_int32(std::int64_t n, std::int64_t per_block) {
  return n + per_block <= static_cast<std::int64_t>(INT32_MAX);
}

inline unsigned blocks_for(std::int64_t n, std::int64_t per_block) {
  return static_cast<unsigned>((n + per_block - 1) / per_block);
}

template <int VT, typename Index, typename F>
__global__ void __launch_bounds__(kThreads) elementwise_kernel(Index n, F f) {
  const Index base = static_cast<Index>(blockIdx.x) * (kThreads * VT) + static_cast<Index>(threadIdx.x);
#pragma unroll
  for (int k = 0; k < VT; ++k) {
    const Index i = base + k * kThreads;
    if (i < n) f(i);
  }
}

// f(i) for i in [0, n): VT elements a thread. F::operator() is a template on the
// index type (int32_t or int64_t).
template <int VT = 4, typename F>
void launch_elementwise(std::int64_t n, F f, cudaStream_t stream) {
  if (n <= 0) return;
  constexpr std::int64_t per_block = static_cast<std::int64_t>(kThreads) * VT;
  if (fits_int32(n, per_block))
    elementwise_kernel<VT, std::int32_t>
        <<<blocks_for(n, per_block), kThreads, 0, stream>>>(static_cast<std::int32_t>(n), f);
  else
    elementwise_kernel<VT, std::int64_t><<<blocks_for(n, per_block), kThreads, 0, stream>>>(n, f);
  ATTNPROF_CUDA_CHECK_LAUNCH();
}

template <typename T, int N>
struct alignas(sizeof(T) * N) Vec {
  T v[N];
};

// Maps: out[i] = f.apply(in[i]) (kInputs 1) or out[i] = f.apply() (kInputs 0) on
// dense arrays. One definition serves the vectorized kernel and the unrolled one.
template <typename F, typename I>
__device__ __forceinline__ void map_at(const F& f, I i) {
  if constexpr (F::kInputs == 1)
    f.out[i] = f.apply(f.in[i]);
  else
    f.out[i] = f.apply();
}

template <typename F>
struct MapAt {  // a map run by the unrolled loop
  F f;
  template <typename I>
  __device__ void operator()(I i) const {
    map_at(f, i);
  }
};

template <int VEC, typename Index, typename F>
__global__ void __launch_bounds__(kThreads) vectorized_elementwise_kernel(Index n, F f) {
  using Out = typename F::Out;
  const Index base = (static_cast<Index>(blockIdx.x) * kThreads + static_cast<Index>(threadIdx.x)) * VEC;
  if (base + VEC <= n) {
    Vec<Out, VEC> y;
    if constexpr (F::kInputs == 1) {
      using In = typename F::In;
      const Vec<In, VEC> x = *reinterpret_cast<const Vec<In, VEC>*>(f.in + base);
#pragma unroll
      for (int k = 0; k < VEC; ++k) y.v[k] = f.apply(x.v[k]);
    } else {
#pragma unroll
      for (int k = 0; k < VEC; ++k) y.v[k] = f.apply();
    }
    *reinterpret_cast<Vec<Out, VEC>*>(f.out + base) = y;
  } else {
    for (Index i = base; i < n; ++i) map_at(f, i);
  }
}

template <typename F>
constexpr int map_vector_width() {
  if constexpr (F::kInputs == 1)
    return (sizeof(typename F::In) == 2 || sizeof(typename F::Out) == 2) ? 8 : 4;
  else
    return sizeof(typename F::Out) == 2 ? 8 : 4;
}

__host__ __device__ inline bool aligned_to(const void* p, std::size_t bytes) {
  return reinterpret_cast<std::uintptr_t>(p) % bytes == 0;
}

// A dense map, vectorized when every pointer is aligned to the vector (as ATen's
// can_vectorize_up_to), else the unrolled loop.
template <typename F>
void launch_map(std::int64_t n, F f, cudaStream_t stream) {
  if (n <= 0) return;
  constexpr int vec = map_vector_width<F>();
  bool aligned = aligned_to(f.out, vec * sizeof(typename F::Out));
  if constexpr (F::kInputs == 1) aligned = aligned && aligned_to(f.in, vec * sizeof(typename F::In));
  if (!aligned) {
    launch_elementwise<4>(n, MapAt<F>{f}, stream);
    return;
  }
  constexpr std::int64_t per_block = static_cast<std::int64_t>(kThreads) * vec;
  if (fits_int32(n, per_block))
    vectorized_elementwise_kernel<vec, std::int32_t>
        <<<blocks_for(n, per_block), kThreads, 0, stream>>>(static_cast<std::int32_t>(n), f);
  else
    vectorized_elementwise_kernel<vec, std::int64_t><<<blocks_for(n, per_block), kThreads, 0, stream>>>(n, f);
  ATTNPROF_CUDA_CHECK_LAUNCH();
}

// Index of dense element i of a [batch, heads, rows, dim] tensor in strided storage.
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
  template <typename I>
  __device__ __forceinline__ std::int64_t operator()(I i) const {
    const I d = i % dim, r = (i / dim) % rows, h = (i / (I(dim) * rows)) % heads, b = i / (I(dim) * rows * heads);
    return b * s.batch + h * s.head + r * s.row + d;
  }
};

// out[i] = f.apply(out[i], in[i]) on dense arrays, in place: a two-input map (a gradient times a
// saved tensor), VEC elements a thread when every pointer is aligned (ATen's
// vectorized_elementwise_kernel with two inputs: 8 when a 16-bit type is involved, else 4), else the
// unrolled loop. F has Out, In, `Out* out`, `const In* in` and `Out apply(Out, In) const`.
template <int VEC, typename Index, typename F>
__global__ void __launch_bounds__(kThreads) vectorized_update_kernel(Index n, F f) {
  using Out = typename F::Out;
  using In = typename F::In;
  const Index base = (static_cast<Index>(blockIdx.x) * kThreads + static_cast<Index>(threadIdx.x)) * VEC;
  if (base + VEC <= n) {
    Vec<Out, VEC> y = *reinterpret_cast<const Vec<Out, VEC>*>(f.out + base);
    const Vec<In, VEC> x = *reinterpret_cast<const Vec<In, VEC>*>(f.in + base);
#pragma unroll
    for (int k = 0; k < VEC; ++k) y.v[k] = f.apply(y.v[k], x.v[k]);
    *reinterpret_cast<Vec<Out, VEC>*>(f.out + base) = y;
  } else {
    for (Index i = base; i < n; ++i) f.out[i] = f.apply(f.out[i], f.in[i]);
  }
}

template <typename F>
struct UpdateAt {  // an update run by the unrolled loop
  F f;
  template <typename I>
  __device__ void operator()(I i) const {
    f.out[i] = f.apply(f.out[i], f.in[i]);
  }
};

template <typename F>
void launch_update(std::int64_t n, F f, cudaStream_t stream) {
  if (n <= 0) return;
  constexpr int vec = sizeof(typename F::Out) == 2 || sizeof(typename F::In) <= 2 ? 8 : 4;
  if (!aligned_to(f.out, vec * sizeof(typename F::Out)) || !aligned_to(f.in, vec * sizeof(typename F::In))) {
    launch_elementwise<4>(n, UpdateAt<F>{f}, stream);
    return;
  }
  constexpr std::int64_t per_block = static_cast<std::int64_t>(kThreads) * vec;
  if (fits_int32(n, per_block))
    vectorized_update_kernel<vec, std::int32_t>
        <<<blocks_for(n, per_block), kThreads, 0, stream>>>(static_cast<std::int32_t>(n), f);
  else
    vectorized_update_kernel<vec, std::int64_t><<<blocks_for(n, per_block), kThreads, 0, stream>>>(n, f);
  ATTNPROF_CUDA_CHECK_LAUNCH();
}

}  // namespace attnprof::attention::cuda
