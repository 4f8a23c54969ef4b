// Softmax over rows (ATen's warp kernel for rows up to 2048 elements, its block
// kernel past that) and the row-wise all() of _safe_softmax, with fp32 math and
// zeros for a row of all -inf.
#pragma once

#include "attention/cuda/elementwise.cuh"

namespace attnprof::attention::cuda {

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

// The softmax's backward (_softmax_backward_data): dS = P * (dP - sum_j P_j dP_j) per row, fp32
// math, in the two kernels ATen launches for it (a PyTorch 2.11 trace, rows of 512 and 2048):
// a multiply pass dP *= P (vectorized_elementwise_kernel<4, BinaryFunctor<MulFunctor>>), then the
// row kernel (softmax_warp_backward, cunn_SoftMaxBackwardSmem past 1024) dS = dP - P * rowsum(dP);
// here one block per row for every length. dP is scratch (overwritten); dS may be dP (in place).
// P, dP and dS may each be 16-bit or fp32 (softmax(dtype=float32) keeps an fp32 P; fp16's
// half_to_float backward writes fp16 dS).
template <typename Tp, typename Tg, typename To>
__global__ void __launch_bounds__(1024)
    softmax_backward_kernel(const Tp* probs, const Tg* grad, To* out, int cols) {  // grad: dP * P
  __shared__ float red[32];
  const std::int64_t at = static_cast<std::int64_t>(blockIdx.x) * cols;
  const Tp* p = probs + at;
  const Tg* g = grad + at;
  To* o = out + at;
  float dot = 0.0f;
  for (int c = threadIdx.x; c < cols; c += blockDim.x) dot += to_f(g[c]);
  dot = block_reduce<false>(dot, red);
  for (int c = threadIdx.x; c < cols; c += blockDim.x) o[c] = from_f<To>(to_f(g[c]) - to_f(p[c]) * dot);
}

template <typename Tp, typename Tg>
struct MulByProbs {  // grad * output, in place into grad
  using Out = Tg;
  using In = Tp;
  Tg* out;
  const Tp* in;
  __device__ __forceinline__ Tg apply(Tg g, Tp p) const { return from_f<Tg>(to_f(g) * to_f(p)); }
};

template <typename Tp, typename Tg, typename To>
void launch_softmax_backward(const Tp* probs, Tg* grad, To* out, std::int64_t rows, int cols, cudaStream_t stream) {
  if (rows <= 0 || cols <= 0) return;
  if (rows > INT32_MAX) throw std::runtime_error("softmax backward: more than 2^31-1 rows");
  const int block = std::clamp((cols / 8 + 31) / 32 * 32, 32, 1024);  // ~8 elements a thread
  launch_update(rows * cols, MulByProbs<Tp, Tg>{grad, probs}, stream);
  softmax_backward_kernel<Tp, Tg, To><<<static_cast<unsigned>(rows), block, 0, stream>>>(probs, grad, out, cols);
  ATTNPROF_CUDA_CHECK_LAUNCH();
}

}  // namespace attnprof::attention::cuda
