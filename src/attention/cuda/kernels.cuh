// The small kernels PyTorch's math path and the hand-written path are made of:
// elementwise functors, softmax and row-all. Each functor is a named struct so a
// trace (and attnprof's classifier) shows what the kernel did.
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

// --- Maps (dense in, dense out) ---

template <typename Tsrc, typename Tdst>
struct UnaryMap {  // the pointers of a one-input map; the op adds apply()
  static constexpr int kInputs = 1;
  using In = Tsrc;
  using Out = Tdst;
  const Tsrc* in;
  Tdst* out;
};

// out = in * scale, converting the type: `q * sqrt(scale)`, `scores.mul_(scale)`.
template <typename Tsrc, typename Tdst>
struct Scale : UnaryMap<Tsrc, Tdst> {
  float scale;
  __device__ __forceinline__ Tdst apply(Tsrc x) const { return from_f<Tdst>(to_f(x) * scale); }
};

// out = in converted: `q.to(float)`, `attn.to(bf16)`, `out.to(bf16)`.
template <typename Tsrc, typename Tdst>
struct Convert : UnaryMap<Tsrc, Tdst> {
  __device__ __forceinline__ Tdst apply(Tsrc x) const { return from_f<Tdst>(to_f(x)); }
};

template <typename T>
struct EqNegInf : UnaryMap<T, bool> {  // self.eq(-inf)
  __device__ __forceinline__ bool apply(T x) const { return to_f(x) == -INFINITY; }
};

template <typename T>
struct Fill {  // at::ones / at::scalar_tensor
  static constexpr int kInputs = 0;
  using Out = T;
  T* out;
  T value;
  __device__ __forceinline__ T apply() const { return value; }
};

// --- Strided and broadcast ops (the unrolled loop) ---

// dst (dense) = src (strided) * scale, converting the type.
template <typename Tsrc, typename Tdst>
struct ToDenseScaled {
  const Tsrc* src;
  StridedIndex at;
  float scale;
  Tdst* dst;
  template <typename I>
  __device__ void operator()(I i) const {
    dst[i] = from_f<Tdst>(to_f(src[at(i)]) * scale);
  }
};

// dst (strided) = src (dense), converting the type: the final `out.to(bf16)`.
template <typename Tsrc, typename Tdst>
struct ToStrided {
  const Tsrc* src;
  StridedIndex at;
  Tdst* dst;
  template <typename I>
  __device__ void operator()(I i) const {
    dst[at(i)] = from_f<Tdst>(to_f(src[i]));
  }
};

struct Tril {  // bool [rows, cols]: keep where col - row <= diagonal
  const bool* src;
  bool* dst;
  int cols;
  int diagonal;
  template <typename I>
  __device__ void operator()(I i) const {
    const I r = i / cols, c = i % cols;
    dst[i] = c - r <= diagonal ? src[i] : false;
  }
};

template <typename T>
struct WhereScalars {  // at::where(cond, scalar_tensor a, scalar_tensor b)
  const bool* cond;
  const T* a;  // 0-dim tensors
  const T* b;
  T* dst;
  template <typename I>
  __device__ void operator()(I i) const {
    dst[i] = cond[i] ? *a : *b;
  }
};

template <typename T>
struct AddBroadcast {  // attn.add_(mask): mask [rows, cols] broadcast over batch and heads
  T* dst;
  const T* mask;
  std::int64_t mask_size;
  template <typename I>
  __device__ void operator()(I i) const {
    dst[i] = from_f<T>(to_f(dst[i]) + to_f(mask[i % static_cast<I>(mask_size)]));
  }
};

template <typename T>
struct WhereRowElse {  // at::where(masked_rows [rows, 1], zero, out)
  const bool* row_flag;
  const T* zero;
  const T* src;
  T* dst;
  int cols;
  template <typename I>
  __device__ void operator()(I i) const {
    dst[i] = row_flag[i / cols] ? *zero : src[i];
  }
};

// scores.masked_fill_(masked_out, -inf), mask broadcast over batch and heads. As
// ATen's masked_fill kernel, every element is written (out = mask ? value : self).
template <typename T>
struct MaskedFillNegInf {
  T* dst;
  const bool* masked_out;
  std::int64_t mask_size;
  template <typename I>
  __device__ void operator()(I i) const {
    const T x = dst[i];
    dst[i] = masked_out[i % static_cast<I>(mask_size)] ? from_f<T>(-INFINITY) : x;
  }
};

// ATen's vt for each broadcast op (elementwise_kernel<128, vt> in PyTorch 2.11's trace).
constexpr int kBroadcastVT = 2;   // add, where
constexpr int kMaskedFillVT = 4;  // masked_fill

template <int kWidth>
__device__ __forceinline__ float warp_max(float x) {
#pragma unroll
  for (int o = kWidth / 2; o > 0; o >>= 1) x = fmaxf(x, __shfl_xor_sync(0xffffffffu, x, o, kWidth));
  return x;
}
template <int kWidth>
__device__ __forceinline__ float warp_sum(float x) {
#pragma unroll
  for (int o = kWidth / 2; o > 0; o >>= 1) x += __shfl_xor_sync(0xffffffffu, x, o, kWidth);
  return x;
}

// Softmax over rows of `cols` elements, fp32 math. A row of all -inf gives zeros
// (what _safe_softmax returns; ATen's plain softmax would give NaN there).
//
// Rows up to 2048 elements and 8 KB: ATen's softmax_warp_forward (PyTorch 2.11's
// trace shows it with kLog2 = 11 on 2048-column fp32 and bf16 rows). One warp (or
// a power-of-two part of one) per row, the row held in registers: read once,
// written once; kLog2 = ceil(log2(cols)).
template <typename Tin, typename Tout, int kLog2>
__global__ void __launch_bounds__(kThreads)
    softmax_warp_kernel(const Tin* src, Tout* dst, std::int64_t rows, int cols) {
  constexpr int kPow2 = 1 << kLog2;
  constexpr int kWarp = kPow2 < 32 ? kPow2 : 32;
  constexpr int kIters = kPow2 / kWarp;
  constexpr int kBatch = kPow2 <= 128 ? 2 : 1;  // rows per warp
  const std::int64_t first = (static_cast<std::int64_t>(blockDim.y) * blockIdx.x + threadIdx.y) * kBatch;
  const int lane = threadIdx.x;
  float x[kBatch][kIters];
#pragma unroll
  for (int b = 0; b < kBatch; ++b) {
    const int count = first + b < rows ? cols : 0;
    const Tin* row = src + (first + b) * cols;
#pragma unroll
    for (int it = 0; it < kIters; ++it) {
      const int c = lane + it * kWarp;
      x[b][it] = c < count ? to_f(row[c]) : -INFINITY;
    }
  }
  float m[kBatch], s[kBatch];
#pragma unroll
  for (int b = 0; b < kBatch; ++b) {
    m[b] = x[b][0];
#pragma unroll
    for (int it = 1; it < kIters; ++it) m[b] = fmaxf(m[b], x[b][it]);
    m[b] = warp_max<kWarp>(m[b]);
    s[b] = 0.0f;
#pragma unroll
    for (int it = 0; it < kIters; ++it) {
      x[b][it] = m[b] == -INFINITY ? 0.0f : expf(x[b][it] - m[b]);  // NaN and +inf stay NaN, as in ATen
      s[b] += x[b][it];
    }
    s[b] = warp_sum<kWarp>(s[b]);
  }
#pragma unroll
  for (int b = 0; b < kBatch; ++b) {
    if (first + b >= rows) break;
    Tout* row = dst + (first + b) * cols;
#pragma unroll
    for (int it = 0; it < kIters; ++it) {
      const int c = lane + it * kWarp;
      if (c < cols) row[c] = from_f<Tout>(m[b] == -INFINITY ? 0.0f : x[b][it] / s[b]);
    }
  }
}

template <typename Tin, typename Tout, int kLog2>
void launch_softmax_warp(const Tin* in, Tout* out, std::int64_t rows, int cols, cudaStream_t stream) {
  constexpr int kPow2 = 1 << kLog2;
  constexpr int kWarp = kPow2 < 32 ? kPow2 : 32;
  constexpr int kBatch = kPow2 <= 128 ? 2 : 1;
  const dim3 block(kWarp, kThreads / kWarp);
  const std::int64_t rows_per_block = static_cast<std::int64_t>(kThreads / kWarp) * kBatch;
  softmax_warp_kernel<Tin, Tout, kLog2><<<blocks_for(rows, rows_per_block), block, 0, stream>>>(in, out, rows, cols);
  ATTNPROF_CUDA_CHECK_LAUNCH();
}

// Block-wide max / sum for the block softmax; `red` holds one float per warp.
template <bool kMax>
__device__ __forceinline__ float block_reduce(float v, float* red) {
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32, warps = (blockDim.x + 31) / 32;
  v = kMax ? warp_max<32>(v) : warp_sum<32>(v);
  __syncthreads();  // `red` may still be read from the previous reduction
  if (lane == 0) red[warp] = v;
  __syncthreads();
  v = lane < warps ? red[lane] : (kMax ? -INFINITY : 0.0f);
  return kMax ? warp_max<32>(v) : warp_sum<32>(v);
}

// Longer rows: ATen's cunn_SoftMaxForwardSmem. One block per row; the row is
// loaded once with 16-byte vectors into shared memory (when it fits), then max,
// sum of exp and the write each pass over it.
template <typename Tin, typename Tout>
__global__ void __launch_bounds__(1024) softmax_block_kernel(const Tin* src, Tout* dst, int cols, bool use_smem) {
  constexpr int kIlp = 16 / sizeof(Tin);
  extern __shared__ __align__(16) unsigned char softmax_smem[];
  __shared__ float red[32];
  Tin* cache = reinterpret_cast<Tin*>(softmax_smem);
  const Tin* x = src + static_cast<std::int64_t>(blockIdx.x) * cols;
  Tout* y = dst + static_cast<std::int64_t>(blockIdx.x) * cols;
  const bool vec = cols % kIlp == 0 && aligned_to(x, 16) && aligned_to(y, kIlp * sizeof(Tout));
  float m = -INFINITY;
  if (vec) {
    for (int v = threadIdx.x; v < cols / kIlp; v += blockDim.x) {
      const Vec<Tin, kIlp> t = reinterpret_cast<const Vec<Tin, kIlp>*>(x)[v];
      if (use_smem) reinterpret_cast<Vec<Tin, kIlp>*>(cache)[v] = t;
#pragma unroll
      for (int k = 0; k < kIlp; ++k) m = fmaxf(m, to_f(t.v[k]));
    }
  } else {
    for (int c = threadIdx.x; c < cols; c += blockDim.x) {
      const Tin t = x[c];
      if (use_smem) cache[c] = t;
      m = fmaxf(m, to_f(t));
    }
  }
  m = block_reduce<true>(m, red);  // its barriers also publish `cache`
  const Tin* in = use_smem ? cache : x;
  float s = 0.0f;
  if (m != -INFINITY)
    for (int c = threadIdx.x; c < cols; c += blockDim.x) s += expf(to_f(in[c]) - m);  // NaN stays NaN
  s = block_reduce<false>(s, red);
  const bool masked = m == -INFINITY;  // every score -inf: zeros (NaN or +inf rows give NaN)
  const float inv = 1.0f / s;
  if (vec) {
    for (int v = threadIdx.x; v < cols / kIlp; v += blockDim.x) {
      const Vec<Tin, kIlp> t = reinterpret_cast<const Vec<Tin, kIlp>*>(in)[v];
      Vec<Tout, kIlp> o;
#pragma unroll
      for (int k = 0; k < kIlp; ++k) o.v[k] = from_f<Tout>(masked ? 0.0f : expf(to_f(t.v[k]) - m) * inv);
      reinterpret_cast<Vec<Tout, kIlp>*>(y)[v] = o;
    }
  } else {
    for (int c = threadIdx.x; c < cols; c += blockDim.x)
      y[c] = from_f<Tout>(masked ? 0.0f : expf(to_f(in[c]) - m) * inv);
  }
}

// ATen's SoftMaxForward_getBlockSize: a power of two up to cols / ILP / 2, at least a warp.
inline int softmax_block_size(int cols, int elem_bytes) {
  const int ilp = 16 / elem_bytes;
  int max_block = std::min(cols / ilp, 1024);
  if (ilp > 1) max_block /= 2;
  int block = 1;
  while (block < max_block) block *= 2;
  return std::max(block, 32);
}

// In place (in == out) is allowed.
template <typename Tin, typename Tout>
void launch_softmax(const Tin* in, Tout* out, std::int64_t rows, int cols, cudaStream_t stream) {
  if (rows <= 0 || cols <= 0) return;
  if (cols <= 2048 && cols * sizeof(Tin) <= 8192) {
    int log2 = 0;
    while ((1 << log2) < cols) ++log2;
    switch (log2) {
      case 0:
        return launch_softmax_warp<Tin, Tout, 0>(in, out, rows, cols, stream);
      case 1:
        return launch_softmax_warp<Tin, Tout, 1>(in, out, rows, cols, stream);
      case 2:
        return launch_softmax_warp<Tin, Tout, 2>(in, out, rows, cols, stream);
      case 3:
        return launch_softmax_warp<Tin, Tout, 3>(in, out, rows, cols, stream);
      case 4:
        return launch_softmax_warp<Tin, Tout, 4>(in, out, rows, cols, stream);
      case 5:
        return launch_softmax_warp<Tin, Tout, 5>(in, out, rows, cols, stream);
      case 6:
        return launch_softmax_warp<Tin, Tout, 6>(in, out, rows, cols, stream);
      case 7:
        return launch_softmax_warp<Tin, Tout, 7>(in, out, rows, cols, stream);
      case 8:
        return launch_softmax_warp<Tin, Tout, 8>(in, out, rows, cols, stream);
      case 9:
        return launch_softmax_warp<Tin, Tout, 9>(in, out, rows, cols, stream);
      case 10:
        return launch_softmax_warp<Tin, Tout, 10>(in, out, rows, cols, stream);
      default:
        return launch_softmax_warp<Tin, Tout, 11>(in, out, rows, cols, stream);
    }
  }
  // Rows stay in shared memory up to 40 KB (under the 48 KB default, with the
  // reduction scratch); longer rows are read from global memory three times.
  const std::size_t row_bytes = static_cast<std::size_t>(cols) * sizeof(Tin);
  const bool use_smem = row_bytes <= 40 * 1024;
  const int block = softmax_block_size(cols, sizeof(Tin));
  // One block per row: a grid's x dimension holds 2^31-1 blocks.
  if (rows > INT32_MAX) throw std::runtime_error("softmax: more than 2^31-1 rows of more than 2048 columns");
  softmax_block_kernel<Tin, Tout>
      <<<static_cast<unsigned>(rows), block, use_smem ? row_bytes : 0, stream>>>(in, out, cols, use_smem);
  ATTNPROF_CUDA_CHECK_LAUNCH();
}

// masked.all(dim=-1, keepdim=True): one warp per row.
static __global__ void __launch_bounds__(kThreads)
    all_rows_kernel(const bool* in, bool* out, std::int64_t rows, int cols) {
  const std::int64_t row = static_cast<std::int64_t>(blockIdx.x) * (kThreads / 32) + threadIdx.x / 32;
  if (row >= rows) return;
  bool all = true;
  for (int c = threadIdx.x % 32; c < cols; c += 32) all = all && in[row * cols + c];
  all = __all_sync(0xffffffffu, all);
  if (threadIdx.x % 32 == 0) out[row] = all;
}

inline void launch_all_rows(const bool* in, bool* out, std::int64_t rows, int cols, cudaStream_t stream) {
  all_rows_kernel<<<blocks_for(rows, kThreads / 32), kThreads, 0, stream>>>(in, out, rows, cols);
  ATTNPROF_CUDA_CHECK_LAUNCH();
}

}  // namespace attnprof::attention::cuda
