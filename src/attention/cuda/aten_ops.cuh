// The elementwise ops PyTorch's math path and the hand-written path are made
// of, one named functor each, so a trace (and attnprof's classifier) shows
// what the kernel did: maps (scale, convert, eq -inf, fill) and strided or
// broadcast ops (tril, where, add of the mask, masked_fill). Launched by
// elementwise.cuh's machinery.
#pragma once

#include "attention/cuda/elementwise.cuh"

namespace attnprof::attention::cuda {

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

// F.dropout(attn, p) as ATen's fused dropout kernel (fused_dropout_kernel_vec<..., 8, bool>)
// does it: 8 weights a thread, each kept with probability 1 - p and scaled by 1/(1-p), or zeroed,
// and the keep mask written beside (what backward reads). The random numbers are a 32-bit counter
// hash of (seed, index) (murmur3's finalizer): about the cost of PyTorch's Philox draws, not its
// stream. (A scalar loop with a 64-bit hash ran the pass at 1.6x ATen's time.)
__device__ __forceinline__ float dropout_uniform(unsigned seed, std::int64_t i) {
  unsigned z =
      static_cast<unsigned>(i) * 0x9E3779B1u ^ seed ^ static_cast<unsigned>(static_cast<std::uint64_t>(i) >> 32);
  z ^= z >> 16;
  z *= 0x85EBCA6Bu;
  z ^= z >> 13;
  z *= 0xC2B2AE35u;
  z ^= z >> 16;
  return static_cast<float>(z >> 8) * (1.0f / 16777216.0f);  // [0, 1)
}

template <typename T>
__global__ void __launch_bounds__(kThreads)
    dropout_kernel(const T* x, T* y, bool* keep, std::int64_t n, float p, unsigned seed) {
  constexpr int kVec = 8;
  const std::int64_t first = (static_cast<std::int64_t>(blockIdx.x) * kThreads + threadIdx.x) * kVec;
  if (first >= n) return;
  const float scale = 1.0f / (1.0f - p);
  if (first + kVec <= n) {
    Vec<T, kVec> v = *reinterpret_cast<const Vec<T, kVec>*>(x + first);
    Vec<bool, kVec> k;
#pragma unroll
    for (int j = 0; j < kVec; ++j) {
      k.v[j] = dropout_uniform(seed, first + j) >= p;
      v.v[j] = from_f<T>(k.v[j] ? to_f(v.v[j]) * scale : 0.0f);
    }
    *reinterpret_cast<Vec<T, kVec>*>(y + first) = v;
    *reinterpret_cast<Vec<bool, kVec>*>(keep + first) = k;
    return;
  }
  for (std::int64_t i = first; i < n; ++i) {
    keep[i] = dropout_uniform(seed, i) >= p;
    y[i] = from_f<T>(keep[i] ? to_f(x[i]) * scale : 0.0f);
  }
}

// y = dropout(x) (y == x: in place); x, y and keep hold n elements from 256-byte aligned
// (workspace) addresses.
template <typename T>
void launch_dropout(const T* x, T* y, bool* keep, std::int64_t n, float p, unsigned seed, cudaStream_t stream) {
  if (n <= 0) return;
  dropout_kernel<T>
      <<<blocks_for(n, static_cast<std::int64_t>(kThreads) * 8), kThreads, 0, stream>>>(x, y, keep, n, p, seed);
  ATTNPROF_CUDA_CHECK_LAUNCH();
}

// native_dropout_backward (masked_scale_kernel): grad * keep / (1 - p), in place.
template <typename T>
struct DropoutBackward {
  using Out = T;
  using In = bool;
  T* out;          // the gradient
  const bool* in;  // the keep mask
  float scale;     // 1 / (1 - p)
  __device__ __forceinline__ T apply(T g, bool keep) const { return from_f<T>(keep ? to_f(g) * scale : 0.0f); }
};

// The backward of repeat_kv (expand + reshape): dK of each kv head is the sum of its query
// heads' dK. src is dense [batch, kv_heads * group, rows, dim]; dst strided [batch, kv_heads,
// rows, dim]. One element of dst per index.
template <typename T>
struct SumHeadGroups {
  const T* src;
  T* dst;
  TensorStrides dst_strides;
  int kv_heads, group, rows, dim;
  template <typename I>
  __device__ void operator()(I i) const {
    const I c = i % dim, r = (i / dim) % rows, kvh = (i / dim / rows) % kv_heads, b = i / dim / rows / kv_heads;
    const std::int64_t head_elems = static_cast<std::int64_t>(rows) * dim;
    const T* s = src + ((static_cast<std::int64_t>(b) * kv_heads + kvh) * group) * head_elems +
                 static_cast<std::int64_t>(r) * dim + c;
    float sum = 0.0f;
    for (int g = 0; g < group; ++g) sum += to_f(s[g * head_elems]);
    dst[b * dst_strides.batch + kvh * dst_strides.head + r * dst_strides.row + c] = from_f<T>(sum);
  }
};

// ATen's vt for each broadcast op (elementwise_kernel<128, vt> in PyTorch 2.11's trace).
constexpr int kBroadcastVT = 2;   // add, where
constexpr int kMaskedFillVT = 4;  // masked_fill

}  // namespace attnprof::attention::cuda
